//! `pulsar-rs-powerfs --backing DIR MOUNTPOINT`: mounts powerfs (through `fusermount3`) and
//! serves it until it is unmounted (`fusermount3 -u MOUNTPOINT`). Prints `MOUNTED` on stdout
//! once the mount is up.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use fuser::MountOption;
use pulsar_rs_powerfs::{Model, PowerFs, CONTROL_NAME};

/// A FUSE file system that keeps unsynced writes in memory and drops them on a power cut
/// (`echo cut > MOUNTPOINT/.powerfs`).
#[derive(Parser)]
#[command(name = "pulsar-rs-powerfs")]
struct Args {
    /// Directory holding the durable image (what survives a power cut).
    #[arg(long)]
    backing: PathBuf,
    /// Where to mount.
    mountpoint: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let model = match Model::open(&args.backing) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("pulsar-rs-powerfs: {e}");
            return ExitCode::from(2);
        }
    };
    let options = [
        MountOption::FSName("powerfs".into()),
        MountOption::Subtype("powerfs".into()),
        MountOption::RW,
    ];
    let session = match fuser::Session::new(PowerFs::new(model), &args.mountpoint, &options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "pulsar-rs-powerfs: mounting {}: {e}",
                args.mountpoint.display()
            );
            return ExitCode::from(1);
        }
    };
    println!(
        "MOUNTED {} control={}",
        args.mountpoint.display(),
        args.mountpoint.join(CONTROL_NAME).display()
    );
    let mut session = session;
    match session.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pulsar-rs-powerfs: {e}");
            ExitCode::from(1)
        }
    }
}
