//! An event count: threads sleep until a condition they check becomes true; whoever makes
//! it true calls [`Signal::notify_all`]. One futex word, and the notify costs one atomic
//! increment when nobody sleeps, so it is cheap to call on every state change.
//!
//! Protocol (no lost wake-ups): a waiter reads the sequence, announces itself as a
//! sleeper, checks its condition, and sleeps only while the sequence is unchanged. A
//! waiter that first decides, under some lock, WHICH signal to wait on reads the sequence
//! under that lock too ([`Signal::key`], then [`Signal::wait_once_from`]): a notify between
//! the decision and the read would otherwise be lost. A
//! notifier changes the state first, then bumps the sequence, then wakes if anyone
//! announced itself. All of it is SeqCst so the two orders interlock.

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

#[derive(Default)]
pub struct Signal {
    seq: AtomicU32,
    sleepers: AtomicU32,
}

impl Signal {
    /// Sleeps once (until notified, or spuriously); the caller re-checks its condition.
    /// Use when the condition is checked by the caller in its own loop.
    pub fn wait_once(&self, ready: impl Fn() -> bool) {
        self.wait_once_from(self.key(), ready);
    }

    /// The count's current value: a later [`Signal::wait_once_from`] with it sleeps only
    /// if no notify happened since this read. Read it while holding whatever lock decided
    /// that this signal is the one to wait on, so that a notify after the decision is
    /// never missed.
    pub fn key(&self) -> u32 {
        self.seq.load(SeqCst)
    }

    /// Sleeps once, unless notified since `key` was read (or `ready` holds).
    pub fn wait_once_from(&self, key: u32, ready: impl Fn() -> bool) {
        self.sleepers.fetch_add(1, SeqCst);
        if !ready() {
            crate::blocking::region(|| atomic_wait::wait(&self.seq, key));
        }
        self.sleepers.fetch_sub(1, SeqCst);
    }

    pub fn notify_all(&self) {
        self.seq.fetch_add(1, SeqCst);
        if self.sleepers.load(SeqCst) > 0 {
            atomic_wait::wake_all(&self.seq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn waiter_wakes_after_state_change() {
        for _ in 0..200 {
            let sig = Arc::new(Signal::default());
            let flag = Arc::new(AtomicBool::new(false));
            let (s2, f2) = (sig.clone(), flag.clone());
            let t = std::thread::spawn(move || {
                while !f2.load(SeqCst) {
                    s2.wait_once(|| f2.load(SeqCst));
                }
            });
            flag.store(true, SeqCst);
            sig.notify_all();
            t.join().unwrap();
        }
    }
}
