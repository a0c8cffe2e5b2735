//! `cargo run -p pulsar-rs-proto-codegen`: writes the generated Rust of every protobuf file of
//! the repository into its crate's `src/generated/` (after a `.proto` file changed).

use pulsar_rs_proto_codegen::{repository_root, ETCD, PULSAR};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = repository_root();
    for generated in [PULSAR, ETCD] {
        let dir = generated
            .committed(&root)
            .parent()
            .map(std::path::Path::to_path_buf)
            .ok_or("no parent directory")?;
        std::fs::create_dir_all(&dir)?;
        let written = generated.generate(&root, &dir)?;
        println!("{}", written.display());
    }
    Ok(())
}
