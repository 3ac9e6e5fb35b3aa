//! A session's wait for its commits to be durable, handed to the caller instead of
//! blocking the thread: [`DurabilityWait`].
//!
//! A session in deferred-durability mode (`Session::set_deferred_durability`, what the
//! wire server uses) does everything a WAIT commit does except sleep in `log file sync`:
//! the commit is in the log buffer, its changes are visible and its locks released, and
//! the wait is kept on the session (`Session::take_durability_wait`). The caller must end
//! it (await it, or `wait`) before it tells anyone the commit happened. The wait belongs
//! to the call that committed: it keeps that call open in the session's time model until
//! it ends (a nested call, see `call_clock`), so the session's `DB time` runs on through
//! the `log file sync` it records, as it does through the synchronous wait, and the
//! session shows as ACTIVE meanwhile. (The wire server's request is open around it
//! anyway.)

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use redo::clock::Stamp;

use crate::error::DbResult;
use crate::sessions::SessionEntry;

/// The durability wait of one or more commits of one session (see the module docs).
/// Whoever runs the session ends it (awaits, waits for or drops it), never another thread
/// while the session runs a call: it writes the session's time model, which has one
/// writer (plain loads and stores, no locked instruction on the commit path).
#[must_use = "a commit is not acknowledged until its durability wait ends"]
pub struct DurabilityWait {
    /// None once joined into another wait or ended.
    redo: Option<redo::DurableWait>,
    entry: Arc<SessionEntry>,
    /// Whether this wait still holds its call open in the session's time model.
    holds_call: bool,
}

impl DurabilityWait {
    /// The wait of a commit made inside a call (which is open now): the wait holds it
    /// open until the wait ends. No clock is read (the call's start is the DB time's).
    pub(crate) fn new(redo: redo::DurableWait, entry: Arc<SessionEntry>) -> DurabilityWait {
        assert!(entry.time.is_active(), "a commit's durability wait is made inside its call");
        entry.time.open(None);
        DurabilityWait { redo: Some(redo), entry, holds_call: true }
    }

    fn redo(&self) -> &redo::DurableWait {
        self.redo.as_ref().expect("a durability wait is used only until it ends")
    }

    /// The session stops working and starts waiting at `at` (the end of the call's work):
    /// `log file sync` is timed from then, so that it never overlaps the work's time.
    pub(crate) fn waiting_from(&mut self, at: Stamp) {
        if let Some(redo) = self.redo.as_mut() {
            redo.waiting_from(at);
        }
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
        // One wait holds the call open from here (this one does still).
        other.release_call();
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
        self.release_call();
    }

    /// Lets go of the call this wait holds open: if it is the last open one, the call's
    /// DB time ends now. The session's time model is written only by whoever runs the
    /// session, and that is the one ending (or dropping) this wait.
    fn release_call(&mut self) {
        if std::mem::take(&mut self.holds_call) {
            self.entry.time.close(|| Stamp::now().nanos());
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
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for DurabilityWait {
    fn drop(&mut self) {
        self.release_call();
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
