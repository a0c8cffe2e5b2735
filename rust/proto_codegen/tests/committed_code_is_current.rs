//! Each committed generated file equals what its `.proto` files generate now: a `.proto` changed
//! without `cargo run -p pulsar-rs-proto-codegen`, or a hand edit of a generated file, fails here.

use pulsar_rs_proto_codegen::{repository_root, ETCD, PULSAR};

#[test]
fn the_committed_generated_files_are_what_the_proto_files_generate() {
    let root = repository_root();
    for generated in [PULSAR, ETCD] {
        let out = tempfile::tempdir().expect("temporary directory");
        let fresh = generated.generate(&root, out.path()).expect("generated");
        let fresh = std::fs::read_to_string(fresh).expect("generated file");
        let committed =
            std::fs::read_to_string(generated.committed(&root)).expect("committed file");
        assert!(
            fresh == committed,
            "{} differs from what {}/proto generates: run `cargo run -p pulsar-rs-proto-codegen`",
            generated.committed(&root).display(),
            generated.crate_dir
        );
    }
}
