//! A wait for durability that does not hold a thread: [`DurableWait`].
//!
//! A thread that serves many clients (an async runtime's worker) must not sleep in `log
//! file sync`: the clients behind it would stall for the whole write. Such a caller
//! commits with [`LogSession::commit_deferring_wait`](crate::LogSession::commit_deferring_wait)
//! and gets the wait back as a future: it asks the log writer for the write at once, and
//! the write that makes its LSN durable wakes it (`DurableWaiters::register_future`), with
//! the other futures and sleepers that write covered. Nothing is acknowledged before it
//! resolves `Ok`; a failed log resolves it with the failure, never with success.
//!
//! The accounting is the synchronous wait's: `log file sync` (timed from the moment the
//! commit could wait, counted only if it had to), `redo synch writes` and `redo synch time`,
//! and for a commit, `commit wait performed` and its response time, all recorded when the
//! wait ends. "Had to" is decided when the wait is made: its redo was not durable then, so
//! it asked for a write. A future first polled after that write ended (its task ran late)
//! still waited for it, and counts: whether it does must not depend on when the runtime
//! got round to the task.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::clock::Stamp;
use crate::error::{RedoError, Result};
use crate::log::Shared;
use crate::stats::{Stat, StatsSet, WaitEvent};
use crate::types::Lsn;

/// A wait for everything below an LSN to be durable, for one session: a [`Future`], or a
/// blocking [`DurableWait::wait`]. Joined waits ([`DurableWait::join`]) are one wait, for
/// the highest LSN. Dropped unfinished, it counts nothing.
#[must_use = "a commit is not acknowledged until its durable wait ends"]
pub struct DurableWait {
    sh: Arc<Shared>,
    stats: Arc<StatsSet>,
    lsn: Lsn,
    /// When the wait could begin (None: untimed).
    since: Option<Stamp>,
    /// Whether `log file sync` is shown as the session's current wait.
    shown: bool,
    /// Whether the redo was not yet durable when the wait was made (it asked for a write):
    /// such a wait counts as a `log file sync` however soon it ends.
    asked_for_write: bool,
    /// The commits this wait acknowledges: each one's mode and start, for its response
    /// time.
    commits: Vec<(usize, Option<Stamp>)>,
    done: bool,
}

impl DurableWait {
    pub(crate) fn new(
        sh: Arc<Shared>,
        stats: Arc<StatsSet>,
        lsn: Lsn,
        since: Option<Stamp>,
        commit: Option<(usize, Option<Stamp>)>,
    ) -> DurableWait {
        let asked_for_write = sh.lsn_durable() < lsn;
        if asked_for_write {
            // The write is asked of the log writer now, not when the wait is first
            // polled: the caller may run other work first, and the writer can be writing
            // meanwhile. (A future never writes itself: its thread serves others.)
            sh.requested.fetch_max(lsn.0, SeqCst);
            sh.post_lgwr();
        }
        DurableWait {
            sh,
            stats,
            lsn,
            since,
            shown: false,
            asked_for_write,
            commits: commit.into_iter().collect(),
            done: false,
        }
    }

    /// The session waits from `at` on (it had other work to finish after the commit that
    /// made this wait): `log file sync` is timed from then, not from the commit, so the
    /// wait and the work never count the same time twice. Untimed waits stay untimed.
    pub fn waiting_from(&mut self, at: Stamp) {
        if let Some(since) = self.since.as_mut() {
            *since = at.max(*since);
        }
    }

    /// The LSN this wait needs durable.
    pub fn lsn(&self) -> Lsn {
        self.lsn
    }

    /// How many commits this wait acknowledges.
    pub fn commits(&self) -> usize {
        self.commits.len()
    }

    /// One wait for both: the higher LSN, every commit of both, timed from the earlier.
    /// Both must be waits of the same session.
    pub fn join(mut self, mut other: DurableWait) -> DurableWait {
        assert!(Arc::ptr_eq(&self.stats, &other.stats), "joined durable waits belong to one session");
        self.lsn = self.lsn.max(other.lsn);
        self.since = match (self.since, other.since) {
            (Some(a), Some(b)) => Some(if a.micros() <= b.micros() { a } else { b }),
            (a, b) => a.or(b),
        };
        self.shown |= other.shown;
        self.asked_for_write |= other.asked_for_write;
        self.commits.append(&mut other.commits);
        other.done = true;
        other.shown = false;
        self
    }

    /// Blocks the thread until the wait ends (through the thread's blocking hook: see
    /// `blocking`); the log writer or this thread writes.
    pub fn wait(mut self) -> Result<()> {
        if let Some(Err(e)) = self.check() {
            return self.finish(Err(e), false);
        }
        if self.sh.lsn_durable() < self.lsn && !self.shown {
            self.stats.begin_wait(WaitEvent::LogFileSync, self.since);
            self.shown = true;
        }
        match self.sh.wait_durable(self.lsn) {
            Ok(outcome) => {
                if outcome.early_wakeups > 0 {
                    self.stats.add(Stat::RedoSynchEarlyWakeups, outcome.early_wakeups);
                }
                self.finish(Ok(()), outcome.waited || self.shown || self.asked_for_write)
            }
            Err(e) => self.finish(Err(e), false),
        }
    }

    /// Ok once durable, the log's failure once failed, None while neither.
    fn check(&self) -> Option<Result<()>> {
        if self.sh.lsn_durable() >= self.lsn {
            return Some(Ok(()));
        }
        if self.sh.is_failed() {
            return Some(Err(self.sh.failure_error()));
        }
        let reserved = self.sh.buffer.reserved_end();
        if self.lsn > reserved {
            return Some(Err(RedoError::NotIssued(format!(
                "{} lies beyond the redo handed out so far ({reserved})",
                self.lsn
            ))));
        }
        None
    }

    /// Records the wait's end and returns `outcome`: an `Ok` counts the commits, and
    /// `log file sync` if the session `waited`; a failure counts nothing.
    fn finish(&mut self, outcome: Result<()>, waited: bool) -> Result<()> {
        assert!(!self.done, "a durable wait ends once");
        self.done = true;
        if outcome.is_err() {
            if self.shown {
                self.stats.cancel_wait();
            }
            return outcome;
        }
        if waited {
            let elapsed = self.since.map(|t| t.elapsed());
            self.stats.record_wait(WaitEvent::LogFileSync, elapsed);
            self.stats.add(Stat::RedoSynchWrites, 1);
            self.stats.add(Stat::RedoSynchTimeUs, elapsed.map_or(0, |e| e.as_micros() as u64));
        } else if self.shown {
            self.stats.cancel_wait();
        }
        for (mode, called_at) in &self.commits {
            self.stats.add(Stat::CommitWaitPerformed, 1);
            self.stats.record_commit_response(*mode, called_at.map(Stamp::elapsed_us));
        }
        outcome
    }
}

impl Future for DurableWait {
    type Output = Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if let Some(outcome) = self.check() {
            let waited = self.shown || self.asked_for_write;
            return Poll::Ready(self.finish(outcome, waited));
        }
        if self.sh.shutdown.load(SeqCst) {
            // The log writer may be gone: write here, as a blocking waiter would.
            let outcome = self.sh.wait_durable(self.lsn).map(|_| ());
            return Poll::Ready(self.finish(outcome, true));
        }
        if !self.shown {
            self.stats.begin_wait(WaitEvent::LogFileSync, self.since);
            self.shown = true;
        }
        self.sh.waiters.register_future(self.lsn, cx.waker());
        match self.check() {
            Some(outcome) => Poll::Ready(self.finish(outcome, true)),
            None => Poll::Pending,
        }
    }
}

impl Drop for DurableWait {
    fn drop(&mut self) {
        if !self.done && self.shown {
            self.stats.cancel_wait();
        }
    }
}

impl std::fmt::Debug for DurableWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableWait").field("lsn", &self.lsn).field("commits", &self.commits.len()).finish()
    }
}
