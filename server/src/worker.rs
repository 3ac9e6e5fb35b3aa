//! The dedicated server thread of a connection (Oracle's dedicated server process): it
//! owns the connection's database session and runs every call on it, so a session that
//! blocks (`log file sync`, a row lock wait) blocks its own thread, never a tokio worker.
//!
//! The async protocol handler sends each call as a closure over a channel and awaits a
//! oneshot reply. Dropping the [`SessionWorker`] closes the channel: the thread finishes
//! the call in hand, then drops the session, which rolls back its open transaction.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use tokio::sync::{oneshot, Notify};

type Job<S> = Box<dyn FnOnce(&mut S) + Send>;

/// Counts the dedicated threads still running, so that shutdown can wait for every
/// session to be dropped (rolled back) before the final checkpoint.
#[derive(Default)]
pub struct LiveThreads {
    count: AtomicUsize,
    all_gone: Notify,
}

impl LiveThreads {
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Waits until no dedicated thread is running.
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

/// Decrements the live count when the thread ends, however it ends.
struct LiveGuard(Arc<LiveThreads>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.all_gone.notify_waiters();
        }
    }
}

/// The thread went away (it panicked while running a call).
#[derive(Debug, thiserror::Error)]
#[error("the session's server thread has ended")]
pub struct WorkerGone;

/// Handle to a dedicated thread owning a state `S` (the session).
pub struct SessionWorker<S> {
    jobs: mpsc::Sender<Job<S>>,
}

impl<S: 'static> SessionWorker<S> {
    /// Starts the thread; `make_state` runs on it (the session is created and dropped
    /// on its own thread).
    pub fn spawn(
        name: String,
        live: Arc<LiveThreads>,
        make_state: impl FnOnce() -> S + Send + 'static,
    ) -> std::io::Result<SessionWorker<S>> {
        let (jobs, receiver) = mpsc::channel::<Job<S>>();
        live.count.fetch_add(1, Ordering::SeqCst);
        let guard = LiveGuard(live);
        std::thread::Builder::new().name(name).spawn(move || {
            let _guard = guard;
            let mut state = make_state();
            while let Ok(job) = receiver.recv() {
                job(&mut state);
            }
        })?;
        Ok(SessionWorker { jobs })
    }

    /// Runs `call` on the thread and waits (asynchronously) for its result.
    pub async fn call<R: Send + 'static>(
        &self,
        call: impl FnOnce(&mut S) -> R + Send + 'static,
    ) -> Result<R, WorkerGone> {
        let (reply, result) = oneshot::channel();
        self.jobs
            .send(Box::new(move |state| {
                let _ = reply.send(call(state));
            }))
            .map_err(|_| WorkerGone)?;
        result.await.map_err(|_| WorkerGone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_run_in_order_on_one_thread_and_dropping_ends_it() {
        let live = Arc::new(LiveThreads::default());
        let worker = SessionWorker::spawn("test-session".into(), live.clone(), Vec::<u32>::new).unwrap();
        let thread = worker.call(|_| std::thread::current().name().map(str::to_string)).await.unwrap();
        assert_eq!(thread.as_deref(), Some("test-session"));
        worker.call(|v| v.push(1)).await.unwrap();
        worker.call(|v| v.push(2)).await.unwrap();
        assert_eq!(worker.call(|v| v.clone()).await.unwrap(), vec![1, 2]);
        assert_eq!(live.count(), 1);
        drop(worker);
        tokio::time::timeout(std::time::Duration::from_secs(5), live.wait_all_gone()).await.unwrap();
    }
}
