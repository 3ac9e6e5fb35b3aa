//! Interrupting a session's blocking waits: the layer above raises a session's
//! [`Interrupt`] (a user's cancel) or gives it a deadline (a statement timeout), and the
//! session's waits that may safely end early end with [`RedoError::Interrupted`].
//!
//! Which waits those are: only waits before anything of the session's reached the shared
//! log, so that an interrupted wait leaves nothing behind. Today that is the wait of a
//! commit for its log file (`log file switch completion` and `log file switch (checkpoint
//! incomplete)`, before the unit is reserved): the commit fails and its transaction stays
//! open, private redo and all, to be committed again or rolled back. Waits after the
//! reservation (`log buffer space`, `log file sync`) are never interrupted: the commit
//! has its place in the stream and will be written whatever the caller says.
//!
//! Waking: [`Interrupt::raise`] sets the flag, then notifies the log's switch signal
//! (the signal protocol of `signal`: state first, then the notify), so a session asleep
//! in a switch wait sees it at once. A deadline needs no waker: the switch wait sleeps at
//! most until it ([`crate::signal::Signal::wait_once_until`]).
//!
//! The interrupt knows nothing of SQL: what a cancel or a deadline means to a client
//! (PostgreSQL's 57014, "canceling statement due to ...") is the layer above's to say.
//!
//! [`RedoError::Interrupted`]: crate::RedoError::Interrupted

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Weak;
use std::time::{Duration, Instant};

use crate::log::Shared;

/// Why a wait was interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterruptCause {
    /// [`Interrupt::raise`]: someone asked the session to stop what it waits for.
    #[error("the wait was cancelled")]
    Cancelled,
    /// The deadline given with [`Interrupt::set_deadline`] passed.
    #[error("the wait passed its deadline")]
    DeadlinePassed,
}

/// One session's interrupt: a flag and a deadline, shared by the session (which waits)
/// and whoever may interrupt it (another thread). Cheap to look at: one load, and a
/// clock read only while a deadline is set.
#[derive(Debug)]
pub struct Interrupt {
    raised: AtomicBool,
    /// The deadline as nanoseconds after `epoch`, plus one; 0 for none.
    deadline_ns: AtomicU64,
    epoch: Instant,
    /// The log whose sleepers a raise wakes (weak: a handle kept by a canceller must not
    /// keep a closed log's memory alive).
    log: Weak<Shared>,
}

/// An interrupt of no log: its raise wakes nobody (for a waiter that sleeps elsewhere).
impl Default for Interrupt {
    fn default() -> Interrupt {
        Interrupt::new(Weak::new())
    }
}

impl Interrupt {
    pub(crate) fn new(log: Weak<Shared>) -> Interrupt {
        Interrupt {
            raised: AtomicBool::new(false),
            deadline_ns: AtomicU64::new(0),
            epoch: Instant::now(),
            log,
        }
    }

    /// Interrupts the session's interruptible wait in progress, and any it begins until
    /// [`Interrupt::clear`]: each ends with `InterruptCause::Cancelled`.
    pub fn raise(&self) {
        self.raised.store(true, SeqCst);
        if let Some(log) = self.log.upgrade() {
            log.switch_signal.notify_all();
        }
    }

    /// Forgets a raise (the layer above starts a new call).
    pub fn clear(&self) {
        // A swap, not a store: when it clears a raise it reads it, so whatever the raiser
        // did before raising is visible after the clear (the layer above relies on it:
        // a raise that follows a shutdown of its own is never lost without a trace).
        self.raised.swap(false, SeqCst);
    }

    /// Whether [`Interrupt::raise`] was called since the last clear.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.raised.load(Acquire)
    }

    /// Sets (or, with None, removes) the moment after which the session's interruptible
    /// waits end with `InterruptCause::DeadlinePassed`.
    #[inline]
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        let ns = deadline.map_or(0, |d| {
            let after = d.saturating_duration_since(self.epoch).as_nanos();
            u64::try_from(after).unwrap_or(u64::MAX - 1) + 1
        });
        self.deadline_ns.store(ns, Release);
    }

    /// The deadline set, if any.
    pub fn deadline(&self) -> Option<Instant> {
        match self.deadline_ns.load(Acquire) {
            0 => None,
            ns => Some(self.epoch + Duration::from_nanos(ns - 1)),
        }
    }

    /// Ok while the session may go on waiting; else why not (a raise wins over a deadline).
    #[inline]
    pub fn check(&self) -> Result<(), InterruptCause> {
        if self.is_raised() {
            return Err(InterruptCause::Cancelled);
        }
        let deadline_ns = self.deadline_ns.load(Acquire);
        if deadline_ns != 0 && self.epoch.elapsed().as_nanos() as u64 + 1 >= deadline_ns {
            return Err(InterruptCause::DeadlinePassed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raise_wins_over_a_deadline_and_a_clear_forgets_it() {
        let i = Interrupt::default();
        assert_eq!(i.check(), Ok(()));
        i.set_deadline(Some(Instant::now()));
        assert_eq!(i.check(), Err(InterruptCause::DeadlinePassed));
        i.raise();
        assert_eq!(i.check(), Err(InterruptCause::Cancelled));
        i.clear();
        i.set_deadline(None);
        assert_eq!(i.check(), Ok(()));
        assert_eq!(i.deadline(), None);
    }

    #[test]
    fn a_deadline_in_the_future_has_not_passed_and_reads_back() {
        let i = Interrupt::default();
        let at = Instant::now() + Duration::from_secs(3600);
        i.set_deadline(Some(at));
        assert_eq!(i.check(), Ok(()));
        let back = i.deadline().expect("a deadline is set");
        assert!(back <= at && at.duration_since(back) < Duration::from_micros(1), "{back:?} vs {at:?}");
    }
}
