//! How checkpoints are going: every attempt to write a checkpoint image is counted here
//! (started, completed, failed), the last failure is kept with its time, and failed
//! attempts are retried with a growing delay. What a DBA reads of it: `v$checkpoint`,
//! the statistics `checkpoints started` / `completed` / `failed` in `v$sysstat`, the
//! detail of a session waiting in `log file switch (checkpoint incomplete)` in
//! `v$session.wait_detail`, and the database's log.
//!
//! Why it matters: the log reuses a group only after a checkpoint; while images cannot
//! be written (a full disk, EIO) the log fills and every committing session waits in
//! `log file switch (checkpoint incomplete)`. Those waits can be cancelled or timed out
//! (`statement_timeout`), and must say why they last; the checkpointer keeps trying, so
//! that when space returns the checkpoint completes and the sessions go on.
//!
//! Retries: after a failure the next attempt waits `first` (100 ms by default), doubling
//! after each further failure up to `max` (5 s); a success resets it. Requests from the
//! log in between do not shorten the delay (sessions that need a group ask again at every
//! wait, which would otherwise retry a full disk in a tight loop).
//!
//! The log: a failure is logged when its error is new (another operation or errno than
//! the last one logged), when the retry delay has grown since the last log line of it,
//! and at most once a minute while it repeats at the longest delay; so a disk full for an
//! hour writes a few dozen lines, not thousands. A success after failures is logged once,
//! with how many attempts failed and for how long.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redo::Scn;

use crate::error::DbError;

/// The delays between failed checkpoint attempts (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The delay after the first failure.
    pub first: Duration,
    /// The longest delay: the doubling stops here.
    pub max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy { first: Duration::from_millis(100), max: Duration::from_secs(5) }
    }
}

impl RetryPolicy {
    /// The delay after a failure, given the delay after the one before (None: the first).
    pub fn next_delay(&self, previous: Option<Duration>) -> Duration {
        match previous {
            None => self.first.min(self.max),
            Some(d) => d.saturating_mul(2).clamp(self.first.min(self.max), self.max),
        }
    }
}

/// A failure repeated at the longest delay is logged again at most this often.
const REMINDER_INTERVAL: Duration = Duration::from_secs(60);

/// What the checkpointer shows of itself (`v$checkpoint`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointStatus {
    /// An image is being written now.
    pub writing: bool,
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// Failed attempts since the last success.
    pub consecutive_failures: u64,
    /// When the first of those failed (microseconds since the Unix epoch).
    pub failing_since_us: Option<u64>,
    /// The last failure (kept after a success, for the record).
    pub last_error: Option<CheckpointFailure>,
    /// When the next attempt may start, while failing.
    pub next_retry_us: Option<u64>,
    /// The current delay between attempts (zero while healthy).
    pub retry_delay: Duration,
    /// The last image written: when, and the SCN it holds.
    pub last_completed_us: Option<u64>,
    pub last_image_scn: Option<Scn>,
}

/// One failed checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointFailure {
    /// The error as a client would read it.
    pub message: String,
    pub sqlstate: &'static str,
    pub at_us: u64,
}

/// What to write to the log about a failure that was just recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailureLog {
    /// Nothing: the same error was logged at this delay already.
    Quiet,
    /// A new error, or the first failure after a success.
    New,
    /// The same error again, now retried less often.
    Slower,
    /// The same error, still, at the longest delay.
    Reminder,
}

/// A failure as recorded, for the caller to log.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FailureNote {
    pub log: FailureLog,
    /// Failed attempts since the last success, this one included.
    pub attempts: u64,
    /// How long until the next attempt.
    pub retry_in: Duration,
}

/// A success after failures, for the caller to log.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Recovery {
    pub failed_attempts: u64,
    pub failing_for: Duration,
}

#[derive(Default)]
struct State {
    writing: bool,
    consecutive_failures: u64,
    failing_since: Option<(Instant, u64)>,
    last_error: Option<CheckpointFailure>,
    delay: Option<Duration>,
    next_retry: Option<(Instant, u64)>,
    last_completed_us: Option<u64>,
    last_image_scn: Option<Scn>,
    /// The failure last logged: its error's signature, the delay then, and when.
    logged: Option<(String, Duration, Instant)>,
}

/// The checkpoints' counters and state, shared by whoever writes an image (the
/// checkpointer thread, an explicit `Database::checkpoint`) and the views.
pub(crate) struct CheckpointHealth {
    retry: RetryPolicy,
    started: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    state: Mutex<State>,
}

fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// What makes two failures "the same error" for the log: the operation and the OS error,
/// not the path (an image's name holds its SCN, which moves while NOWAIT commits go on).
fn signature(error: &DbError) -> String {
    match error {
        DbError::Storage { op, source, .. } => format!("{op}: {source}"),
        other => other.to_string(),
    }
}

/// Whether a failure with `signature`, now retried after `delay`, is worth a log line,
/// given the one logged last.
fn log_verdict(
    logged: Option<&(String, Duration, Instant)>,
    signature: &str,
    delay: Duration,
    now: Instant,
) -> FailureLog {
    match logged {
        None => FailureLog::New,
        Some((last, _, _)) if last != signature => FailureLog::New,
        Some((_, last_delay, _)) if delay > *last_delay => FailureLog::Slower,
        Some((_, _, at)) if now.duration_since(*at) >= REMINDER_INTERVAL => FailureLog::Reminder,
        Some(_) => FailureLog::Quiet,
    }
}

impl CheckpointHealth {
    pub(crate) fn new(retry: RetryPolicy) -> CheckpointHealth {
        CheckpointHealth {
            retry,
            started: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An attempt to write an image begins.
    pub(crate) fn begin(&self) {
        self.started.fetch_add(1, Relaxed);
        self.state().writing = true;
    }

    /// The attempt wrote the image of `scn`. Returns the failures it ends, if any.
    pub(crate) fn succeeded(&self, scn: Scn) -> Option<Recovery> {
        self.completed.fetch_add(1, Relaxed);
        let mut st = self.state();
        st.writing = false;
        st.last_completed_us = Some(unix_us());
        st.last_image_scn = Some(scn);
        let recovery = st.failing_since.map(|(since, _)| Recovery {
            failed_attempts: st.consecutive_failures,
            failing_for: since.elapsed(),
        });
        st.consecutive_failures = 0;
        st.failing_since = None;
        st.delay = None;
        st.next_retry = None;
        st.logged = None;
        recovery
    }

    /// The attempt failed with `error`: the next one waits (see the module docs).
    pub(crate) fn failed(&self, error: &DbError) -> FailureNote {
        self.failed.fetch_add(1, Relaxed);
        let now = Instant::now();
        let now_us = unix_us();
        let mut st = self.state();
        st.writing = false;
        st.consecutive_failures += 1;
        st.failing_since.get_or_insert((now, now_us));
        st.last_error =
            Some(CheckpointFailure { message: error.to_string(), sqlstate: error.sqlstate(), at_us: now_us });
        let delay = self.retry.next_delay(st.delay);
        st.delay = Some(delay);
        st.next_retry = Some((now + delay, now_us + delay.as_micros() as u64));
        let signature = signature(error);
        let log = log_verdict(st.logged.as_ref(), &signature, delay, now);
        if log != FailureLog::Quiet {
            st.logged = Some((signature, delay, now));
        }
        FailureNote { log, attempts: st.consecutive_failures, retry_in: delay }
    }

    /// Whether an attempt may start now: always while healthy; after a failure, once its
    /// retry delay has passed.
    pub(crate) fn attempt_allowed(&self, now: Instant) -> bool {
        self.state().next_retry.is_none_or(|(at, _)| now >= at)
    }

    pub(crate) fn counts(&self) -> [u64; 3] {
        [self.started.load(Relaxed), self.completed.load(Relaxed), self.failed.load(Relaxed)]
    }

    pub(crate) fn status(&self) -> CheckpointStatus {
        let [started, completed, failed] = self.counts();
        let st = self.state();
        CheckpointStatus {
            writing: st.writing,
            started,
            completed,
            failed,
            consecutive_failures: st.consecutive_failures,
            failing_since_us: st.failing_since.map(|(_, us)| us),
            last_error: st.last_error.clone(),
            next_retry_us: st.next_retry.map(|(_, us)| us),
            retry_delay: st.delay.unwrap_or_default(),
            last_completed_us: st.last_completed_us,
            last_image_scn: st.last_image_scn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn enospc(path: &str) -> DbError {
        DbError::Storage {
            op: "creating",
            path: path.into(),
            source: Arc::new(std::io::Error::from_raw_os_error(libc::ENOSPC)),
        }
    }

    #[test]
    fn retry_delays_double_from_the_first_up_to_the_cap() {
        let policy = RetryPolicy::default();
        let mut delay = None;
        let mut seen = Vec::new();
        for _ in 0..9 {
            let d = policy.next_delay(delay);
            seen.push(d.as_millis());
            delay = Some(d);
        }
        assert_eq!(seen, [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
    }

    #[test]
    fn a_success_resets_the_delay_and_reports_the_failures_it_ends() {
        let health = CheckpointHealth::new(RetryPolicy::default());
        assert!(health.attempt_allowed(Instant::now()));
        for expected in [100, 200, 400] {
            health.begin();
            let note = health.failed(&enospc("/d/image-1.img.tmp"));
            assert_eq!(note.retry_in.as_millis(), expected);
        }
        assert!(!health.attempt_allowed(Instant::now()), "the retry waits for its delay");
        assert!(health.attempt_allowed(Instant::now() + Duration::from_millis(400)));
        let status = health.status();
        assert_eq!((status.started, status.completed, status.failed), (3, 0, 3));
        assert_eq!(status.consecutive_failures, 3);
        assert_eq!(status.last_error.as_ref().map(|e| e.sqlstate), Some("53100"));
        assert!(status.next_retry_us.is_some() && status.failing_since_us.is_some());

        health.begin();
        let recovery = health.succeeded(Scn(7)).expect("it ends failures");
        assert_eq!(recovery.failed_attempts, 3);
        let status = health.status();
        assert_eq!((status.consecutive_failures, status.retry_delay), (0, Duration::ZERO));
        assert_eq!((status.next_retry_us, status.failing_since_us), (None, None));
        assert_eq!(status.last_image_scn, Some(Scn(7)));
        assert!(status.last_error.is_some(), "the last failure stays on record");
        assert!(health.attempt_allowed(Instant::now()));
        // The next failure starts again at the first delay, and is logged again.
        let note = health.failed(&enospc("/d/image-9.img.tmp"));
        assert_eq!((note.retry_in.as_millis(), note.log), (100, FailureLog::New));
        assert!(health.succeeded(Scn(9)).is_some());
        assert!(health.succeeded(Scn(10)).is_none(), "nothing to recover from");
    }

    #[test]
    fn a_repeated_failure_is_logged_once_per_delay_step_then_once_a_minute() {
        let health = CheckpointHealth::new(RetryPolicy::default());
        let mut logged = Vec::new();
        for i in 0..40 {
            // The image's name moves with its SCN: still the same error.
            logged.push(health.failed(&enospc(&format!("/d/image-{i}.img.tmp"))).log);
        }
        let lines = logged.iter().filter(|l| **l != FailureLog::Quiet).count();
        // 100 ms (new), then 200, 400, 800, 1600, 3200 and 5000 ms: one line each.
        assert_eq!(lines, 7, "{logged:?}");
        assert_eq!(logged[0], FailureLog::New);
        assert!(logged[1..7].iter().all(|l| *l == FailureLog::Slower), "{logged:?}");
        // Another error is news at once.
        let eio = DbError::Storage {
            op: "syncing",
            path: "/d/image-1.img.tmp".into(),
            source: Arc::new(std::io::Error::from_raw_os_error(libc::EIO)),
        };
        assert_eq!(health.failed(&eio).log, FailureLog::New);
        assert_eq!(health.failed(&eio).log, FailureLog::Quiet);
    }

    #[test]
    fn the_same_error_at_the_longest_delay_is_logged_again_after_a_minute() {
        let sig = "creating: No space left on device (os error 28)".to_string();
        let max = RetryPolicy::default().max;
        let then = Instant::now();
        let logged = (sig.clone(), max, then);
        assert_eq!(log_verdict(Some(&logged), &sig, max, then + Duration::from_secs(59)), FailureLog::Quiet);
        assert_eq!(log_verdict(Some(&logged), &sig, max, then + REMINDER_INTERVAL), FailureLog::Reminder);
    }
}
