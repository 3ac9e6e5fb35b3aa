//! A row lock wait handed to the caller instead of blocking the thread: the wire
//! server's sessions run as tasks on a few worker threads, and a statement that finds its
//! row locked would otherwise hold its worker while it sleeps (or hand the worker's
//! other connections to a new thread first, tokio's `block_in_place`, at the price of two
//! thread switches per wait: pgbench's tpcb-like at 32 clients on the 2-CPU machine waits
//! for a branch row 0.7 times per transaction).
//!
//! A call that allows it (`Session::set_lock_wait_deferral`: the server's Execute of a
//! prepared statement that has produced nothing yet) does not sleep where its lock is
//! taken: the lock manager registers the wait (the wait-for graph sees it, so deadlocks
//! are found as for a sleeping waiter), the statement fails with
//! `DbError::LockWaitDeferred` and is undone as any failed statement is (its row locks
//! stay, as they would through a sleep), and the wait is kept on the session. The
//! caller awaits [`RowLockWait`] (woken by the holder's release, by a cancel, or after
//! `RowLockWait::recheck_after`), ends the wait (`Session::end_lock_wait`: the
//! registration goes, the wait is counted, and a cancel or a passed statement timeout
//! fails the statement there), then runs the statement again from its start, as Oracle
//! restarts a statement whose rows changed under it. The statement's timeout runs on from
//! its first start.
//!
//! The session shows `enq: TX - row lock contention` from the first try's wait until the
//! wait ends; the attempt that stopped counts no user call and no execution (`v$sql`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use redo::clock::Stamp;
use redo::TxnId;

use crate::database::Session;
use crate::error::DbResult;
use crate::sessions::DbEvent;

/// What wakes a waiting transaction: the thread asleep in its lock wait, or the signal a
/// task awaits.
#[derive(Clone)]
pub(crate) enum Sleeper {
    Thread(Thread),
    Signal(Arc<LockWaitSignal>),
}

impl Sleeper {
    pub(crate) fn wake(&self) {
        match self {
            Sleeper::Thread(thread) => thread.unpark(),
            Sleeper::Signal(signal) => signal.wake(),
        }
    }
}

/// Raised once by the release (or cancel) that ends a deferred wait; wakes the task that
/// awaits it.
#[derive(Default)]
pub struct LockWaitSignal {
    raised: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl LockWaitSignal {
    pub(crate) fn wake(&self) {
        self.raised.store(true, Ordering::Release);
        let waker = self.waker.lock().expect("lock wait waker poisoned").take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    pub(crate) fn is_raised(&self) -> bool {
        self.raised.load(Ordering::Acquire)
    }
}

/// The wait a deferred statement left (see the module docs): ready once a holder released
/// a lock the transaction waits for, or the session was cancelled. The caller also stops
/// awaiting it after `recheck_after`, and ends it with `Session::end_lock_wait` either
/// way.
#[must_use = "a deferred lock wait ends with Session::end_lock_wait"]
pub struct RowLockWait {
    signal: Arc<LockWaitSignal>,
    recheck_after: Duration,
}

impl RowLockWait {
    /// How long to await before looking again anyway: the lock manager's safety-net
    /// interval, or less if the statement's timeout comes first.
    pub fn recheck_after(&self) -> Duration {
        self.recheck_after
    }
}

impl Future for RowLockWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.signal.is_raised() {
            return Poll::Ready(());
        }
        *self.signal.waker.lock().expect("lock wait waker poisoned") = Some(cx.waker().clone());
        // A wake between the look above and the store found no waker: look again.
        if self.signal.is_raised() {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

/// A deferred wait as the session keeps it until `end_lock_wait`.
pub(crate) struct PendingLockWait {
    txn: TxnId,
    signal: Arc<LockWaitSignal>,
    /// When the wait began (None when the session does not time its waits).
    started: Option<Stamp>,
    /// The statement's deadline at its first start: its retry keeps it.
    deadline: Option<Instant>,
}

impl PendingLockWait {
    pub(crate) fn new(txn: TxnId, signal: Arc<LockWaitSignal>, started: Option<Stamp>) -> PendingLockWait {
        PendingLockWait { txn, signal, started, deadline: None }
    }

    /// The session stops working at `at` (the end of the work that stopped at the lock):
    /// the wait is timed from then, so that it never overlaps the work's time.
    pub(crate) fn waiting_from(&mut self, at: Stamp) {
        if self.started.is_some() {
            self.started = Some(at);
        }
    }
}

impl Session {
    /// Lets the next calls leave a row lock wait to the caller instead of sleeping (see
    /// the module docs), until turned off. Only for a call the caller can run again from
    /// its start, having sent nothing of it.
    pub fn set_lock_wait_deferral(&mut self, on: bool) {
        self.defer_lock_waits = on;
    }

    /// Whether the last call stopped at a row lock (`DbError::LockWaitDeferred`) and left
    /// its wait, which the caller must end (`end_lock_wait`) before the next call.
    pub fn has_lock_wait(&self) -> bool {
        self.lock_wait.is_some()
    }

    /// The wait the last call left, to await.
    pub fn lock_wait(&self) -> Option<RowLockWait> {
        let pending = self.lock_wait.as_ref()?;
        let recheck = match pending.deadline {
            Some(deadline) => {
                crate::locks::LOCK_RECHECK.min(deadline.saturating_duration_since(Instant::now()))
            }
            None => crate::locks::LOCK_RECHECK,
        };
        Some(RowLockWait { signal: pending.signal.clone(), recheck_after: recheck })
    }

    /// Ends the wait the last call left (awaited or not): the transaction no longer
    /// waits in the lock manager's graph, and the wait is counted. Fails with the
    /// statement's cancel or timeout if either came meanwhile: the statement has failed
    /// then, and is not to be run again. Call it outside the server's work on a request
    /// (the wait is not work).
    pub fn end_lock_wait(&mut self) -> DbResult<()> {
        let pending = self.lock_wait.take().expect("a deferred lock wait to end");
        self.db.locks.end_wait(pending.txn);
        self.entry.cancel.set_sleeper(None);
        let timed = self.redo.timed_statistics();
        let waited = Some(pending.started.map_or(Duration::ZERO, Stamp::elapsed));
        self.entry.end_wait(DbEvent::RowLockContention, waited, timed);
        self.db.sql_counters.record_row_lock_wait(waited, timed);
        self.entry.cancel.check()?;
        // The statement runs again under its first start's deadline.
        self.carried_deadline = Some(pending.deadline);
        Ok(())
    }

    /// Keeps the wait a lock attempt deferred (its graph registration done), with the
    /// statement's deadline as it stands. A cancel raised before the signal was installed
    /// raises it now.
    pub(crate) fn keep_lock_wait(&mut self, mut pending: PendingLockWait) {
        debug_assert!(self.lock_wait.is_none(), "one deferred lock wait at a time");
        pending.deadline = self.entry.cancel.deadline();
        self.entry.cancel.set_sleeper(Some(Sleeper::Signal(pending.signal.clone())));
        if self.entry.cancel.is_requested() {
            pending.signal.wake();
        }
        self.lock_wait = Some(pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Wake;

    struct Counter(std::sync::atomic::AtomicUsize);
    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_wait_is_ready_once_signalled_and_wakes_its_task_once() {
        let signal = Arc::new(LockWaitSignal::default());
        let mut wait = RowLockWait { signal: signal.clone(), recheck_after: Duration::from_millis(1) };
        let counter = Arc::new(Counter(Default::default()));
        let waker = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&waker);
        assert_eq!(Pin::new(&mut wait).poll(&mut cx), Poll::Pending);
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
        signal.wake();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert_eq!(Pin::new(&mut wait).poll(&mut cx), Poll::Ready(()));
        // A signal raised before the first poll is seen without a waker.
        let early = Arc::new(LockWaitSignal::default());
        early.wake();
        let mut wait = RowLockWait { signal: early, recheck_after: Duration::ZERO };
        assert_eq!(Pin::new(&mut wait).poll(&mut cx), Poll::Ready(()));
    }
}
