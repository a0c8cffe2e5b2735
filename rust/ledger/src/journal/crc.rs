//! Combining CRC32C checksums in O(log n) word operations: the checksum of `A ++ B` from the
//! checksums of `A` and `B` and the length of `B` (the method of zlib's `crc32_combine`, with
//! the CRC32C polynomial). The `crc32c` crate's own combine squares 32×32 bit matrices, which
//! for a 100 KiB entry costs more than reading the bytes again.

/// The CRC32C polynomial, bit-reflected.
const POLY: u32 = 0x82F6_3B78;

/// `x^(2^k)` modulo the polynomial, for k = 0..32 (reflected).
const X2N: [u32; 32] = x2n_table();

/// `a * b` modulo the polynomial (both reflected).
const fn mult_mod_p(a: u32, mut b: u32) -> u32 {
    let mut m = 1u32 << 31;
    let mut p = 0u32;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                return p;
            }
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
}

const fn x2n_table() -> [u32; 32] {
    let mut table = [0u32; 32];
    let mut p = 1u32 << 30; // x^1
    table[0] = p;
    let mut n = 1;
    while n < 32 {
        p = mult_mod_p(p, p);
        table[n] = p;
        n += 1;
    }
    table
}

/// `x^(8 * bytes)` modulo the polynomial: the operator that appends `bytes` zero bytes.
fn x8n_mod_p(mut bytes: u64) -> u32 {
    let mut p = 1u32 << 31; // x^0
    let mut k = 3; // 2^3 bits a byte
    while bytes != 0 {
        if bytes & 1 != 0 {
            p = mult_mod_p(X2N[k & 31], p);
        }
        bytes >>= 1;
        k += 1;
    }
    p
}

/// The CRC32C of `A ++ B`, given `crc32c(A)`, `crc32c(B)` and `B`'s length.
pub(crate) fn combine(crc_a: u32, crc_b: u32, len_b: usize) -> u32 {
    mult_mod_p(x8n_mod_p(len_b as u64), crc_a) ^ crc_b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_reading_the_bytes_and_with_the_crates_combine() {
        let data: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for split in [0, 1, 6, 30, 4095, 4096, 65_537, 69_999, 70_000] {
            let (a, b) = data.split_at(split);
            let (ca, cb) = (crc32c::crc32c(a), crc32c::crc32c(b));
            assert_eq!(
                combine(ca, cb, b.len()),
                crc32c::crc32c(&data),
                "split {split}"
            );
            assert_eq!(
                combine(ca, cb, b.len()),
                crc32c::crc32c_combine(ca, cb, b.len())
            );
        }
    }
}
