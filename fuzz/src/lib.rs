//! Fuzz targets over the decoders that the broker runs on bytes it receives (`decode_frame` on
//! every socket read, the metadata of each SEND, stored entries read back for dispatch,
//! compaction and the admin API's peek, the payload codecs and the batch splitter).
//!
//! Each target is a plain function of `&[u8]` so that the AFL binaries (`src/bin/*`), the seed
//! corpus and the replay test share it. A target may return early on any error; it fails only by
//! panicking, overflowing the stack, or asking for one allocation above
//! [`alloc_limit::limit`]: a decoder may allocate in proportion to its input, never from a
//! number written in it.

pub mod alloc_limit;
pub mod seeds;
pub mod targets;

/// The largest single allocation a target may make whatever its input's size.
pub const MAX_ALLOCATION: usize = 64 << 20;

/// How much larger than its input one allocation may be beyond [`MAX_ALLOCATION`]: zstd's
/// largest honest expansion (a 4-byte RLE block decodes to 128 KiB) with some slack.
pub const MAX_EXPANSION: usize = 33 * 1024;
