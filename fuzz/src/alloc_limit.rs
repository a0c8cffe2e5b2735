//! A global allocator that aborts on any single allocation above [`limit`], as libFuzzer's
//! `-malloc_limit_mb` does: on Linux an untouched 4 GiB `Vec::with_capacity` costs no resident
//! memory, so without it a decoder that trusts a size field would pass.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static INPUT_LEN: AtomicUsize = AtomicUsize::new(0);

/// Declares the length of the input about to run (each binary calls it first).
pub fn set_input_len(len: usize) {
    INPUT_LEN.store(len, Ordering::Relaxed);
}

/// The largest single allocation allowed for the current input.
pub fn limit() -> usize {
    let len = INPUT_LEN.load(Ordering::Relaxed);
    crate::MAX_ALLOCATION.max(len.saturating_mul(crate::MAX_EXPANSION))
}

/// The limiting allocator; install it with `#[global_allocator]` in each binary.
pub struct Limited;

fn check(size: usize) {
    if size > limit() {
        // No allocation (and so no formatting) may happen here.
        let msg = b"fuzz: single allocation above the limit for this input\n";
        // SAFETY: writing a static buffer to stderr.
        unsafe {
            libc_write(2, msg.as_ptr(), msg.len());
        }
        std::process::abort();
    }
}

extern "C" {
    #[link_name = "write"]
    fn libc_write(fd: i32, buf: *const u8, count: usize) -> isize;
}

// SAFETY: delegates to `System` after a size check that allocates nothing.
unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
