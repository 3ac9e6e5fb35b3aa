//! The process allocator: mimalloc, called the way its fast path wants.
//!
//! The `mimalloc` crate's allocator calls `mi_malloc_aligned` for every layout. When the
//! size class's local free list is empty, that call cannot take mimalloc's ordinary path
//! for a size that is not a power of two: it over-allocates from a larger size class and
//! returns an interior pointer. A prepared UPDATE + COMMIT makes 27 allocations, and 6.8
//! of them took that path at ~97 instructions each (callgrind, `commit_loop update 1
//! nowait`). Every mimalloc block is word-aligned (block sizes are whole words), so a
//! layout asking for no more than a word needs no aligned call; only larger alignments
//! take mimalloc's aligned functions.
//!
//! Shared by the `redodb` binary and the `commit_loop` profiling example (`#[path]`).

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

use libmimalloc_sys as ffi;

/// Alignment every mimalloc block has.
const WORD: usize = core::mem::size_of::<usize>();

pub struct MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_e`; the crate names only
/// some options).
const PURGE_DELAY: ffi::mi_option_t = 15;

/// Settles mimalloc's options before the process gets going; called first in `main`.
///
/// Memory freed back to mimalloc's arena is returned to the OS at once, not a second
/// later (mimalloc's default, `MIMALLOC_PURGE_DELAY=1000`). With the delay, the server's
/// RSS held whatever the last second's calls had freed: it rose and fell with the
/// throughput, and one server life settled 10-40% above another under the same workload
/// (`redodb soak`, 7 minutes, 4 lives of 100 s: 75-84 MiB with the delay, 65-68 MiB
/// without). Returning a whole free span costs one `madvise`; the allocations of the
/// commit path reuse the pages each thread keeps and never reach the arena. An explicit
/// `MIMALLOC_PURGE_DELAY` (or its old name `MIMALLOC_RESET_DELAY`) in the environment
/// still wins.
pub fn configure() {
    let set_by_user =
        ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"].iter().any(|v| std::env::var_os(v).is_some());
    if !set_by_user {
        // SAFETY: sets an option by its index; mimalloc reads options with atomics.
        unsafe { ffi::mi_option_set(PURGE_DELAY, 0) };
    }
}

// SAFETY: every call forwards to mimalloc, which returns memory of at least the size asked
// for, aligned as the layout asks (word alignment comes with every block; larger
// alignments are asked for explicitly), or null; `mi_free` takes any of its pointers.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            ffi::mi_malloc(layout.size()) as *mut u8
        } else {
            ffi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            ffi::mi_zalloc(layout.size()) as *mut u8
        } else {
            ffi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        ffi::mi_free(ptr as *mut c_void);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            ffi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
        } else {
            ffi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configure_purges_at_once_unless_the_environment_says_otherwise() {
        // The index is mimalloc's purge delay: its default is 1000 ms, unlike its neighbours'.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none()
            && std::env::var_os("MIMALLOC_RESET_DELAY").is_none()
        {
            assert_eq!(unsafe { ffi::mi_option_get(PURGE_DELAY) }, 1000, "mimalloc's default purge delay");
            configure();
            assert_eq!(unsafe { ffi::mi_option_get(PURGE_DELAY) }, 0);
        }
    }

    /// Every alignment up to a page, every size class boundary nearby: the memory is
    /// aligned as asked, writable over its whole size, and survives growing.
    #[test]
    fn blocks_are_aligned_as_the_layout_asks() {
        let a = MiMalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [1usize, 7, 8, 9, 24, 40, 48, 100, 1000, 5000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xab, size);
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0, "zeroed size {size} align {align}");
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    let q = a.realloc(p, layout, size * 3);
                    assert_eq!(q as usize % align, 0, "realloc size {size} align {align}");
                    assert!((0..size).all(|i| *q.add(i) == 0xab), "realloc kept the bytes");
                    a.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
