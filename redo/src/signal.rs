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
use std::time::{Duration, Instant};

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

    /// As [`Signal::wait_once`], sleeping at most until `deadline` (None: no limit). For a
    /// wait that must end at a deadline of its own (a statement timeout) even if nobody
    /// notifies.
    pub fn wait_once_until(&self, ready: impl Fn() -> bool, deadline: Option<Instant>) {
        let Some(deadline) = deadline else { return self.wait_once(ready) };
        let key = self.key();
        self.sleepers.fetch_add(1, SeqCst);
        if !ready() {
            let left = deadline.saturating_duration_since(Instant::now());
            if !left.is_zero() {
                crate::blocking::region(|| wait_with_timeout(&self.seq, key, left));
            }
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

/// Sleeps while `word` holds `expected`, at most `timeout` (or spuriously less): the
/// futex wait atomic-wait makes, with a timeout. atomic-wait's wakes are private futex
/// wakes on the same word, so they end this sleep too.
#[cfg(target_os = "linux")]
fn wait_with_timeout(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT only reads the word, which `word` keeps alive for the call, and
    // the timeout, a valid relative timespec on this stack frame.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word as *const AtomicU32,
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Elsewhere atomic-wait has no timed wait: nap in short slices, looking at the word
/// between them.
#[cfg(not(target_os = "linux"))]
fn wait_with_timeout(word: &AtomicU32, expected: u32, timeout: Duration) {
    let until = Instant::now() + timeout;
    while word.load(SeqCst) == expected {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(1)));
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

    #[test]
    fn a_wait_with_a_deadline_ends_at_it_without_a_notify() {
        let sig = Signal::default();
        let started = Instant::now();
        let deadline = started + Duration::from_millis(30);
        while Instant::now() < deadline {
            sig.wait_once_until(|| false, Some(deadline));
        }
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(30), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "the sleep overran its deadline: {waited:?}");
    }

    #[test]
    fn a_notify_ends_a_wait_with_a_far_deadline() {
        let sig = Arc::new(Signal::default());
        let flag = Arc::new(AtomicBool::new(false));
        let (s2, f2) = (sig.clone(), flag.clone());
        let far = Instant::now() + Duration::from_secs(3600);
        let t = std::thread::spawn(move || {
            while !f2.load(SeqCst) {
                s2.wait_once_until(|| f2.load(SeqCst), Some(far));
            }
        });
        std::thread::sleep(Duration::from_millis(10));
        flag.store(true, SeqCst);
        sig.notify_all();
        t.join().unwrap();
    }
}
