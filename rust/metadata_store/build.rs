//! Compiles `proto/etcd.proto` (the part of etcd's v3 API the metadata store uses) into a
//! tonic client with `protox` (pure Rust: no `protoc` needed, as for the Pulsar protocol).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/etcd.proto");
    let fds = protox::compile(["etcd.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}
