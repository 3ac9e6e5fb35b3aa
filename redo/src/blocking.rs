//! Telling the embedding program that this thread is about to sleep.
//!
//! The engine and the database block threads: a session sleeps for a row lock, for log
//! buffer space, for a log switch, for a synchronous `log file sync`. That is right for a
//! thread of its own, and wrong for a thread that serves many clients (an async runtime's
//! worker), whose other clients would stall behind the sleep. Such a program installs a
//! hook on those threads ([`set_thread_hook`]; the wire server's hook is tokio's
//! `block_in_place`, which hands the worker's other tasks to another thread first), and
//! every sleep of the engine and the database runs inside [`region`], which calls the hook
//! around it. Threads without a hook (the embedded API's callers, the log writer) sleep as
//! they always did.
//!
//! Long work that cannot sleep or yield (a scan's row loop) calls [`lengthy`] every so
//! often, so that the hook can hand the thread's other clients elsewhere too.
//!
//! Only real sleeps go through the hook: a wait whose condition already holds returns
//! without calling it, so the hook's cost (a thread hand-off) is paid only when the thread
//! would have slept anyway.

use std::cell::Cell;

/// What a thread that serves many clients does when its work would hold it.
#[derive(Clone, Copy, Debug)]
pub struct BlockingHook {
    /// Runs its argument, a sleep, having first made it safe for this thread to block.
    pub sleep: fn(&mut dyn FnMut()),
    /// Told every so often by long work (a scan's row loop), which cannot sleep or yield
    /// but may run for long: the hook may hand the thread's other clients elsewhere.
    pub lengthy: fn(),
}

thread_local! {
    static HOOK: Cell<Option<BlockingHook>> = const { Cell::new(None) };
}

/// Installs `hook` for the calling thread (None removes it).
pub fn set_thread_hook(hook: Option<BlockingHook>) {
    HOOK.with(|h| h.set(hook));
}

/// Runs `sleep`, which may block the thread, through the thread's hook if it has one.
/// Regions nest: an inner one runs plainly (the outer already made blocking safe).
pub fn region<R>(sleep: impl FnOnce() -> R) -> R {
    let Some(hook) = HOOK.with(Cell::take) else { return sleep() };
    // Put back even if `sleep` panics, so the thread's later sleeps still go through it.
    struct Restore(BlockingHook);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOOK.with(|h| h.set(Some(self.0)));
        }
    }
    let _restore = Restore(hook);
    let mut sleep = Some(sleep);
    let mut out = None;
    (hook.sleep)(&mut || out = Some((sleep.take().expect("the hook runs its argument once"))()));
    out.expect("a blocking hook must run its argument")
}

/// Says that the current work may be long (see [`BlockingHook::lengthy`]); nothing on a
/// thread without a hook.
pub fn lengthy() {
    if let Some(hook) = HOOK.with(Cell::get) {
        (hook.lengthy)();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    static HOOKED: AtomicUsize = AtomicUsize::new(0);
    static LENGTHY: AtomicUsize = AtomicUsize::new(0);

    fn counting_sleep(f: &mut dyn FnMut()) {
        HOOKED.fetch_add(1, SeqCst);
        f();
    }

    fn counting_lengthy() {
        LENGTHY.fetch_add(1, SeqCst);
    }

    const COUNTING: BlockingHook = BlockingHook { sleep: counting_sleep, lengthy: counting_lengthy };

    #[test]
    fn regions_call_the_threads_hook_once_even_when_nested_and_after_a_panic() {
        // Without a hook: runs plainly.
        assert_eq!(region(|| 1), 1);
        lengthy();
        assert_eq!((HOOKED.load(SeqCst), LENGTHY.load(SeqCst)), (0, 0));
        set_thread_hook(Some(COUNTING));
        lengthy();
        assert_eq!(LENGTHY.load(SeqCst), 1);
        assert_eq!(region(|| region(|| 2) + 1), 3);
        assert_eq!(HOOKED.load(SeqCst), 1, "the inner region runs inside the outer's hook");
        let panicked = std::panic::catch_unwind(|| region(|| panic!("a sleep that panics")));
        assert!(panicked.is_err());
        assert_eq!(region(|| 4), 4);
        assert_eq!(HOOKED.load(SeqCst), 3, "the hook is still installed after the panic");
        // Another thread has no hook.
        std::thread::spawn(|| region(|| ())).join().unwrap();
        assert_eq!(HOOKED.load(SeqCst), 3);
        set_thread_hook(None);
        region(|| ());
        lengthy();
        assert_eq!((HOOKED.load(SeqCst), LENGTHY.load(SeqCst)), (3, 1));
    }
}
