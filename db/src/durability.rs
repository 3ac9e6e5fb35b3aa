//! A session's wait for its commits to be durable, handed to the caller instead of
//! blocking the thread: [`DurabilityWait`].
//!
//! A session in deferred-durability mode (`Session::set_deferred_durability`, what the
//! wire server uses) does everything a WAIT commit does except sleep in `log file sync`:
//! the commit is in the log buffer, its changes are visible and its locks released, and
//! the wait is kept on the session (`Session::take_durability_wait`). The caller must end
//! it (await it, or `wait`) before it tells anyone the commit happened. The wait belongs
//! to the call that committed: its time is added to the session's `DB time`, as the
//! synchronous wait's is, and the session shows as ACTIVE while it lasts.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::error::DbResult;
use crate::sessions::SessionEntry;

/// The durability wait of one or more commits of one session (see the module docs).
#[must_use = "a commit is not acknowledged until its durability wait ends"]
pub struct DurabilityWait {
    /// None once joined into another wait or ended.
    redo: Option<redo::DurableWait>,
    entry: Arc<SessionEntry>,
    /// When the wait could begin, if the session times its calls.
    since: Option<Instant>,
    /// Whether the session is marked ACTIVE for the wait.
    shown_active: bool,
}

impl DurabilityWait {
    pub(crate) fn new(redo: redo::DurableWait, entry: Arc<SessionEntry>, timed: bool) -> DurabilityWait {
        DurabilityWait { redo: Some(redo), entry, since: timed.then(Instant::now), shown_active: false }
    }

    fn redo(&self) -> &redo::DurableWait {
        self.redo.as_ref().expect("a durability wait is used only until it ends")
    }

    /// The log position that must be durable.
    pub fn lsn(&self) -> redo::Lsn {
        self.redo().lsn()
    }

    /// How many commits this wait acknowledges (0 for the end of a call whose commits
    /// were counted as NOWAIT: see `call_commit_optimization`).
    pub fn commits(&self) -> usize {
        self.redo().commits()
    }

    /// One wait for both (the later LSN).
    pub(crate) fn join(mut self, mut other: DurabilityWait) -> DurabilityWait {
        let (mine, theirs) = (self.redo.take(), other.redo.take());
        self.redo = Some(mine.expect("not ended").join(theirs.expect("not ended")));
        self.since = match (self.since, other.since) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.shown_active |= std::mem::take(&mut other.shown_active);
        self
    }

    /// Blocks the thread until the commits are durable (through the thread's blocking
    /// hook, see `redo::blocking`).
    pub fn wait(mut self) -> DbResult<()> {
        let outcome = self.redo.take().expect("not ended").wait();
        self.ended();
        Ok(outcome?)
    }

    fn ended(&mut self) {
        if let Some(since) = self.since.take() {
            // The session's counters are written only by whoever runs the session, and
            // that is the one ending this wait.
            let t = &self.entry.db_time_us;
            t.store(t.load(Relaxed) + since.elapsed().as_micros() as u64, Relaxed);
        }
        if std::mem::take(&mut self.shown_active) {
            self.entry.set_active(false);
        }
    }
}

impl Future for DurabilityWait {
    type Output = DbResult<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<DbResult<()>> {
        let this = &mut *self;
        let redo = this.redo.as_mut().expect("a durability wait is not polled after it ended");
        match Pin::new(redo).poll(cx) {
            Poll::Ready(outcome) => {
                this.redo = None;
                this.ended();
                Poll::Ready(outcome.map_err(Into::into))
            }
            Poll::Pending => {
                if !this.shown_active {
                    this.entry.set_active(true);
                    this.shown_active = true;
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for DurabilityWait {
    fn drop(&mut self) {
        if self.shown_active {
            self.entry.set_active(false);
        }
    }
}

impl std::fmt::Debug for DurabilityWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("DurabilityWait");
        match &self.redo {
            Some(redo) => d.field("lsn", &redo.lsn()).field("commits", &redo.commits()),
            None => d.field("ended", &true),
        }
        .finish()
    }
}
