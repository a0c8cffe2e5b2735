//! Writes the seed corpus: `seeds <dir>` creates `<dir>/<target>/<name>` for each target.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "corpus".into()));
    for (target, seeds) in [
        ("frames", pulsar_rs_fuzz::seeds::frames()),
        ("stored_entry", pulsar_rs_fuzz::seeds::stored_entries()),
        ("decompress", pulsar_rs_fuzz::seeds::compressed()),
    ] {
        let sub = dir.join(target);
        std::fs::create_dir_all(&sub)?;
        for (name, bytes) in seeds {
            std::fs::write(sub.join(name), bytes)?;
        }
    }
    Ok(())
}
