//! A connection's session, run on the connection's own thread (Oracle's dedicated server
//! process). The listener gives each connection a thread of its own with a single-threaded
//! runtime for its socket (`listener`), so a call runs right there, between reading the
//! request and writing the reply: a round trip wakes one thread, as with a PostgreSQL
//! backend. (The first design sent each call to a session thread over a channel and
//! awaited the reply on the shared runtime: two more thread wake-ups per round trip, 60 us
//! of a 107 us NOWAIT round trip on the 2-CPU machine measured.) A session that blocks
//! (`log file sync`, a row lock wait) blocks its own connection's thread and runtime,
//! nothing shared.
//!
//! A call that panics poisons the worker: that call and every later one return
//! [`WorkerGone`], and the connection ends with an error. Dropping the [`SessionWorker`]
//! drops the session, which rolls back its open transaction.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Counts the sessions still open, so that shutdown can wait for every session to be
/// dropped (rolled back) before the final checkpoint.
#[derive(Default)]
pub struct LiveThreads {
    count: AtomicUsize,
    all_gone: Notify,
}

impl LiveThreads {
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Waits until no session is open.
    pub async fn wait_all_gone(&self) {
        loop {
            let notified = self.all_gone.notified();
            if self.count() == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// Decrements the live count when the session is dropped, however that happens.
struct LiveGuard(Arc<LiveThreads>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.all_gone.notify_waiters();
        }
    }
}

/// The session is gone: a call on it panicked.
#[derive(Debug, thiserror::Error)]
#[error("the session failed in an earlier call and has ended")]
pub struct WorkerGone;

/// A connection's session (any state `S`), called on the connection's thread.
pub struct SessionWorker<S> {
    /// None once a call has panicked.
    state: RefCell<Option<S>>,
    /// Declared after `state`, so the session is dropped (rolled back) before the live
    /// count goes down.
    _live: LiveGuard,
}

impl<S: 'static> SessionWorker<S> {
    /// Makes the state (the session) on this thread, the connection's; `name` is for the
    /// logs.
    pub fn spawn(
        name: String,
        live: Arc<LiveThreads>,
        make_state: impl FnOnce() -> S,
    ) -> std::io::Result<SessionWorker<S>> {
        live.count.fetch_add(1, Ordering::SeqCst);
        let guard = LiveGuard(live);
        log::trace!("{name}: session open on thread {:?}", std::thread::current().name());
        Ok(SessionWorker { state: RefCell::new(Some(make_state())), _live: guard })
    }

    /// Runs `call` on the session, now, on this thread. Async so that callers read as
    /// they would with a session elsewhere; it never suspends.
    pub async fn call<R>(&self, call: impl FnOnce(&mut S) -> R) -> Result<R, WorkerGone> {
        let mut slot = self.state.borrow_mut();
        let state = slot.as_mut().ok_or(WorkerGone)?;
        match catch_unwind(AssertUnwindSafe(|| call(state))) {
            Ok(r) => Ok(r),
            Err(_) => {
                log::error!("a call panicked: its session is dropped (rolled back)");
                *slot = None;
                Err(WorkerGone)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_run_in_order_on_the_callers_thread_and_dropping_ends_the_session() {
        let live = Arc::new(LiveThreads::default());
        let worker = SessionWorker::spawn("test-session".into(), live.clone(), Vec::<u32>::new).unwrap();
        let here = std::thread::current().id();
        assert_eq!(worker.call(|_| std::thread::current().id()).await.unwrap(), here);
        worker.call(|v| v.push(1)).await.unwrap();
        worker.call(|v| v.push(2)).await.unwrap();
        assert_eq!(worker.call(|v| v.clone()).await.unwrap(), vec![1, 2]);
        assert_eq!(live.count(), 1);
        drop(worker);
        tokio::time::timeout(std::time::Duration::from_secs(5), live.wait_all_gone()).await.unwrap();
    }

    #[tokio::test]
    async fn a_call_that_panics_ends_the_session_and_later_calls_fail() {
        let live = Arc::new(LiveThreads::default());
        let worker = SessionWorker::spawn("test-session".into(), live.clone(), || 7u32).unwrap();
        assert!(worker.call(|_: &mut u32| -> u32 { panic!("a bug in a call") }).await.is_err());
        assert_eq!(live.count(), 1, "the guard lives as long as the worker");
        assert!(worker.call(|v| *v).await.is_err(), "the session is gone");
        drop(worker);
        assert_eq!(live.count(), 0);
    }
}
