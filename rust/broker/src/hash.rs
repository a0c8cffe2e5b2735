//! Murmur3 x86 32-bit, seed 0: the hash Pulsar uses for Key_Shared routing
//! (`Murmur3_x86_32(key) & 0x7fffffff`) and Failover consistent hashing.

/// Murmur3_x86_32 of `data` with `seed`.
#[must_use]
pub fn murmur3_32(data: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h = seed;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = chunks.remainder();
    let mut k = 0u32;
    for (i, b) in tail.iter().enumerate() {
        k ^= u32::from(*b) << (8 * i);
    }
    if !tail.is_empty() {
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
    }
    // The length is folded in modulo 2^32, as in the reference implementation.
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// Pulsar's Key_Shared key hash: `Murmur3_x86_32(key) & 0x7fffffff`.
#[must_use]
pub fn key_hash(key: &[u8]) -> u32 {
    murmur3_32(key, 0) & 0x7fff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_vectors() {
        // Published test vectors of MurmurHash3_x86_32.
        assert_eq!(murmur3_32(b"", 0), 0);
        assert_eq!(murmur3_32(b"", 1), 0x514E_28B7);
        assert_eq!(murmur3_32(b"hello", 0), 0x248B_FA47);
        assert_eq!(murmur3_32(b"Hello, world!", 1234), 0xFAF6_CDB3);
        assert_eq!(
            murmur3_32(b"The quick brown fox jumps over the lazy dog", 0),
            0x2E4F_F723
        );
    }
}
