//! AFL++ entry point of the `decompress` target (see `pulsar_rs_fuzz::targets::decompress`).

#[global_allocator]
static ALLOC: pulsar_rs_fuzz::alloc_limit::Limited = pulsar_rs_fuzz::alloc_limit::Limited;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        pulsar_rs_fuzz::alloc_limit::set_input_len(data.len());
        pulsar_rs_fuzz::targets::decompress(data);
    });
}
