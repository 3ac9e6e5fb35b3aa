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

/// Settles the allocator's behaviour before the process gets going; called first in `main`.
///
/// The server's RSS should be what it holds, not what its allocator and the kernel keep
/// around it (`redodb soak` judges its growth). Two defaults got in the way, each measured
/// with the soak (debug build, 6 clients, kill -9 every ~600 s):
/// - mimalloc holds freed spans for a second before it returns them
///   (`MIMALLOC_PURGE_DELAY=1000`), so RSS followed the throughput: one life's level rose
///   from 87 to 118 MiB when the machine got less busy, and in side-by-side runs life
///   medians were 75-84 MiB against 65-68 MiB when purged at once. Returning a free span
///   is one `madvise`; the commit path's allocations reuse the pages each thread keeps
///   and never reach the arena (engine-bench NOWAIT unchanged).
/// - mimalloc asks for transparent huge pages on its arena (`MADV_HUGEPAGE`), and
///   khugepaged slowly folds the arena's 4 KiB pages into 2 MiB ones, used or not: after
///   11 minutes of a flat 70-74 MiB, RSS climbed to 93 MiB with 30 MiB of it in
///   `AnonHugePages`. The `no_thp` build feature drops the `madvise`, and the process
///   opts out of THP altogether (`PR_SET_THP_DISABLE`, kept across exec) for machines
///   whose THP mode is `always`.
///
/// An explicit `MIMALLOC_PURGE_DELAY` (or its old name `MIMALLOC_RESET_DELAY`), or
/// `MIMALLOC_ALLOW_THP`, in the environment still wins.
pub fn configure() {
    let set_by_user = |names: &[&str]| names.iter().any(|v| std::env::var_os(v).is_some());
    if !set_by_user(&["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]) {
        // SAFETY: sets an option by its index; mimalloc reads options with atomics.
        unsafe { ffi::mi_option_set(PURGE_DELAY, 0) };
    }
    if !set_by_user(&["MIMALLOC_ALLOW_THP"]) {
        // SAFETY: prctl with integer arguments only. A kernel without it refuses, and
        // then huge pages stay as they were: nothing to do about that but carry on.
        let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
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
    fn configure_purges_at_once_and_turns_huge_pages_off_unless_the_environment_says_otherwise() {
        // The index is mimalloc's purge delay: its default is 1000 ms, unlike its neighbours'.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none()
            && std::env::var_os("MIMALLOC_RESET_DELAY").is_none()
        {
            assert_eq!(unsafe { ffi::mi_option_get(PURGE_DELAY) }, 1000, "mimalloc's default purge delay");
            configure();
            assert_eq!(unsafe { ffi::mi_option_get(PURGE_DELAY) }, 0);
        }
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            configure();
            assert_eq!(
                unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) },
                1,
                "THP off for the process"
            );
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
