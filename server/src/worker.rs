//! A connection's session, run inside the connection's task on the server's runtime (a
//! few worker threads, one per CPU, serve every connection: a worker finds the next
//! connection with a request by polling, not by a thread switch). A call runs right
//! there, between reading the request and writing the reply.
//!
//! Nothing a call does may hold the worker: a WAIT commit leaves its `log file sync` to
//! the connection, which awaits it as a future (`db::DurabilityWait`, woken by the log
//! writer) before it replies, and an Execute's row lock wait likewise (`db::RowLockWait`:
//! the Execute runs again once it ends); the rarer sleeps inside a call (a row lock wait
//! of a simple query, log buffer space, a log switch, an explicit COMMIT WRITE WAIT
//! inside a multi-statement call) go
//! through the blocking hook installed for the call ([`redo::blocking`]), tokio's
//! `block_in_place`, which hands the worker's other connections to another thread before
//! the session sleeps. A long call (a scan over many rows) does the same once it has run
//! for 10 ms: its row loop tells the hook every 256 rows (`redo::blocking::lengthy`).
//!
//! Designs measured and left (pgbench, 32 clients, insert one row per transaction, on the
//! 2-CPU machine): each call sent to a session thread over a channel from a shared
//! runtime (two more thread wake-ups per round trip: 60 us of a 107 us NOWAIT round
//! trip); a thread of its own per connection, with a single-threaded runtime (one thread
//! wake-up per round trip: 76-87k transactions/s NOWAIT IMMEDIATE against 91-100k here,
//! where the log writer's constant writes preempted 32 runnable threads); a WAIT commit of
//! a request alone in the server (no other connection with a request in progress)
//! writing the log itself on its worker when the log writer was idle (no post, no
//! wake-up: `versus-postgres`, WAIT, two alternating runs each, insert at 1 client
//! +8-10%, but insert at 8 clients -5 to -10% and tpcb-like at 8 clients -2 to -19%: a
//! worker held in a sync delays the requests that arrive on it). Kept for the server's
//! only connection (`ServerContext::with_foreground_log_writes`).
//!
//! A call that panics poisons the worker: that call and every later one return
//! [`WorkerGone`], and the connection ends with an error. Dropping the [`SessionWorker`]
//! drops the session, which rolls back its open transaction.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Counts the sessions still open, so that shutdown can wait for every session to be
/// dropped (rolled back) before the final checkpoint.
#[derive(Default)]
pub struct LiveSessions {
    count: AtomicUsize,
    all_gone: Notify,
}

impl LiveSessions {
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
struct LiveGuard(Arc<LiveSessions>);

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
    state: Option<S>,
    /// Declared after `state`, so the session is dropped (rolled back) before the live
    /// count goes down.
    _live: LiveGuard,
}

impl<S: 'static> SessionWorker<S> {
    /// Makes the state (the session); `name` is for the logs.
    pub fn open(name: String, live: Arc<LiveSessions>, make_state: impl FnOnce() -> S) -> SessionWorker<S> {
        live.count.fetch_add(1, Ordering::SeqCst);
        let guard = LiveGuard(live);
        log::trace!("{name}: session open on thread {:?}", std::thread::current().name());
        SessionWorker { state: Some(make_state()), _live: guard }
    }

    /// Runs `call` on the session, now, on this thread, with the blocking hook installed
    /// (see the module docs). Async so that callers read as they would with a session
    /// elsewhere; it never suspends.
    pub async fn call<R>(&mut self, call: impl FnOnce(&mut S) -> R) -> Result<R, WorkerGone> {
        let state = self.state.as_mut().ok_or(WorkerGone)?;
        redo::blocking::set_thread_hook(Some(HOOK));
        CALL.with(|c| c.set(LongCall { started: Instant::now(), next_handoff: FIRST_HANDOFF }));
        let outcome = catch_unwind(AssertUnwindSafe(|| call(state)));
        redo::blocking::set_thread_hook(None);
        match outcome {
            Ok(r) => Ok(r),
            Err(_) => {
                log::error!("a call panicked: its session is dropped (rolled back)");
                self.state = None;
                Err(WorkerGone)
            }
        }
    }
}

impl<S: 'static> SessionWorker<S> {
    /// Runs `note`, a few stores of bookkeeping (the time model, the network statistics),
    /// on the session: as `call` does, but without the blocking hook and the long-call
    /// timer (it neither sleeps nor runs long), which would cost a clock read.
    pub fn account<R>(&mut self, note: impl FnOnce(&mut S) -> R) -> Result<R, WorkerGone> {
        let state = self.state.as_mut().ok_or(WorkerGone)?;
        match catch_unwind(AssertUnwindSafe(|| note(state))) {
            Ok(r) => Ok(r),
            Err(_) => {
                log::error!("a call panicked: its session is dropped (rolled back)");
                self.state = None;
                Err(WorkerGone)
            }
        }
    }
}

/// The blocking hook of a call (see `redo::blocking`).
const HOOK: redo::blocking::BlockingHook =
    redo::blocking::BlockingHook { sleep: block_in_place, lengthy: long_call };

/// A call running this long (a scan) hands its worker's other tasks to another thread:
/// tokio polls the sockets from an idle worker, and an idle worker that parked while the
/// busy one held the socket poller sleeps until woken, so a call that never returns to
/// the runtime would leave every connection's input unread.
const FIRST_HANDOFF: Duration = Duration::from_millis(10);

/// The running call's start, and the age at which it next tries to hand the worker away
/// (each try is 10 times later than the one before: a try that the runtime undid, by
/// giving this thread its worker back, costs a millisecond).
#[derive(Clone, Copy)]
struct LongCall {
    started: Instant,
    next_handoff: Duration,
}

thread_local! {
    static CALL: Cell<LongCall> =
        Cell::new(LongCall { started: Instant::now(), next_handoff: FIRST_HANDOFF });
}

/// On a worker of a multi-threaded runtime, hands the worker's other tasks to another
/// thread, then runs `sleep`; elsewhere (a test's runtime of one thread) just runs it.
fn block_in_place(sleep: &mut dyn FnMut()) {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(sleep),
        _ => sleep(),
    }
}

/// Told every 256 rows of a row loop: once the call is old enough, hands the worker's
/// other tasks to another thread, waiting a millisecond inside `block_in_place` so that
/// the new thread has taken them before this one could take them back.
fn long_call() {
    let call = CALL.with(Cell::get);
    if call.started.elapsed() < call.next_handoff {
        return;
    }
    CALL.with(|c| c.set(LongCall { next_handoff: call.next_handoff * 10, ..call }));
    block_in_place(&mut || std::thread::sleep(Duration::from_millis(1)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_run_in_order_on_the_callers_thread_and_dropping_ends_the_session() {
        let live = Arc::new(LiveSessions::default());
        let mut worker = SessionWorker::open("test-session".into(), live.clone(), Vec::<u32>::new);
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
        let live = Arc::new(LiveSessions::default());
        let mut worker = SessionWorker::open("test-session".into(), live.clone(), || 7u32);
        assert!(worker.call(|_: &mut u32| -> u32 { panic!("a bug in a call") }).await.is_err());
        assert_eq!(live.count(), 1, "the guard lives as long as the worker");
        assert!(worker.call(|v| *v).await.is_err(), "the session is gone");
        drop(worker);
        assert_eq!(live.count(), 0);
    }

    /// A call that sleeps (through `redo::blocking`, as the engine's and the database's
    /// sleeps do) on the only worker of the runtime does not stop the other connections:
    /// the task that wakes it runs meanwhile. Without the hook this test hangs until its
    /// deadline.
    #[test]
    fn a_sleeping_call_hands_the_worker_to_the_other_tasks() {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
            let got = runtime.block_on(async {
                let live = Arc::new(LiveSessions::default());
                let (tx, rx) = std::sync::mpsc::channel::<u32>();
                let sleeper = tokio::spawn(async move {
                    // Queued on this worker; it runs only if the sleeper gives the worker
                    // away.
                    let waker = tokio::spawn(async move { tx.send(42).unwrap() });
                    let mut worker = SessionWorker::open("sleeper".into(), live, || rx);
                    let got = worker.call(|rx| redo::blocking::region(|| rx.recv().unwrap())).await.unwrap();
                    waker.await.unwrap();
                    got
                });
                sleeper.await.unwrap()
            });
            let _ = done.send(got);
        });
        let got = finished.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(got.expect("the sleeping call held the only worker"), 42);
    }
}
