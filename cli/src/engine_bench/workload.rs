//! The engine workload: a fresh database with a checkpointer, and N sessions committing
//! ~100-byte transactions in one commit mode until a deadline.
//!
//! A commit that has not returned [`STALL_AFTER`] past the deadline is an engine stall:
//! the configuration is reported as stalled with the log's positions, and its database
//! is abandoned (its stuck threads are left asleep and the log is never shut down, since
//! shutting down under stuck sessions could wake them into a busy loop), so the rest of
//! the benchmark still runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use hdrhistogram::Histogram;
use redo::{CommitLogging, CommitOptions, CommitWait, LogConfig, RedoLog, Stat, StatsSnapshot, SyncMethod};
use serde::Serialize;

/// Bytes of the one change each transaction logs.
pub const PAYLOAD_BYTES: usize = 100;

/// Highest latency the histograms hold (ns); longer ones are clamped to it.
const HISTOGRAM_MAX_NS: u64 = 600_000_000_000;

/// How long past the deadline a commit (or the final NOWAIT flush) may take before the
/// configuration counts as stalled. Real commits take microseconds to milliseconds.
pub const STALL_AFTER: Duration = Duration::from_secs(5);

/// One COMMIT WRITE mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    pub wait: CommitWait,
    pub logging: CommitLogging,
}

impl Mode {
    pub const WAIT_IMMEDIATE: Mode = Mode::new(CommitWait::Wait, CommitLogging::Immediate);
    pub const WAIT_BATCH: Mode = Mode::new(CommitWait::Wait, CommitLogging::Batch);
    pub const NOWAIT_IMMEDIATE: Mode = Mode::new(CommitWait::NoWait, CommitLogging::Immediate);
    pub const NOWAIT_BATCH: Mode = Mode::new(CommitWait::NoWait, CommitLogging::Batch);
    pub const ALL: [Mode; 4] =
        [Mode::WAIT_IMMEDIATE, Mode::WAIT_BATCH, Mode::NOWAIT_IMMEDIATE, Mode::NOWAIT_BATCH];

    const fn new(wait: CommitWait, logging: CommitLogging) -> Mode {
        Mode { wait, logging }
    }

    pub fn name(self) -> String {
        format!("{}/{}", self.wait.name(), self.logging.name())
    }

    pub fn waits(self) -> bool {
        self.wait != CommitWait::NoWait
    }

    fn options(self) -> CommitOptions {
        CommitOptions::new(self.wait, self.logging)
    }
}

/// What one configuration measured.
pub struct Measured {
    /// Latency of every commit started in the measured window, in nanoseconds.
    pub latency_ns: Histogram<u64>,
    /// Length of the measured window: the histograms hold the commits started in it.
    pub seconds: f64,
    /// Time between the two statistics snapshots (the window, plus scheduling delays).
    pub stats_seconds: f64,
    /// Engine statistics between the two snapshots.
    pub delta: StatsSnapshot,
}

impl Measured {
    pub fn commits(&self) -> u64 {
        self.latency_ns.len()
    }

    pub fn commits_per_sec(&self) -> f64 {
        self.commits() as f64 / self.seconds
    }

    /// Latency at quantile `q`, in microseconds.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.latency_ns.is_empty() {
            return 0.0;
        }
        self.latency_ns.value_at_quantile(q) as f64 / 1000.0
    }
}

/// A configuration whose commits stopped returning.
#[derive(Clone, Debug, Serialize)]
pub struct Stall {
    pub configuration: String,
    pub strands: u32,
    pub mode: String,
    pub sessions: usize,
    /// Sessions still inside `commit` (or the final NOWAIT flush) when given up on.
    pub stuck_sessions: usize,
    /// What was stuck: "commit" or "final wait_durable".
    pub stuck_in: &'static str,
    pub durable_lsn: u64,
    pub reserved_end: u64,
    pub checkpoint_lsn: u64,
    /// `RedoLog::current_seq()`: (sequence being filled, highest sequence opened).
    pub current_seq: (u64, u64),
    pub log_file_size: u64,
    /// Engine statistics since the configuration started.
    pub stats: BTreeMap<&'static str, u64>,
}

impl Stall {
    pub fn summary(&self) -> String {
        format!(
            "{} of {} sessions stuck in {} for {:.0} s; durable {}, reserved end {}, checkpoint {}, \
             current_seq (filling {}, opened {}), log file {} bytes, redo log space requests {}",
            self.stuck_sessions,
            self.sessions,
            self.stuck_in,
            STALL_AFTER.as_secs_f64(),
            self.durable_lsn,
            self.reserved_end,
            self.checkpoint_lsn,
            self.current_seq.0,
            self.current_seq.1,
            self.log_file_size,
            self.stats.get(Stat::RedoLogSpaceRequests.name()).copied().unwrap_or(0),
        )
    }
}

pub enum Outcome {
    Measured(Box<Measured>),
    Stalled(Stall),
}

/// A fresh database for one part of the benchmark, with its checkpointer running.
pub struct Database {
    log: Arc<RedoLog>,
    dir: PathBuf,
    mirrors: Vec<PathBuf>,
    strands: u32,
    stop: Arc<AtomicBool>,
    checkpointer: Option<JoinHandle<Result<()>>>,
}

impl Database {
    /// Creates a fresh database in `dir`, removing what a previous run left there.
    pub fn create(dir: &Path, strands: u32, method: SyncMethod) -> Result<Database> {
        Database::open(dir, strands, method, 1, true)
    }

    /// Opens the database in `dir` (a fresh one if `fresh`, removing what was there) with
    /// `members` members per log group (the mirrors in `dir-mirrorN`). Reopening the same
    /// files with another strand count compares strands without the noise of different
    /// file placement on the disk.
    pub fn open(dir: &Path, strands: u32, method: SyncMethod, members: u32, fresh: bool) -> Result<Database> {
        let mirrors: Vec<PathBuf> =
            (2..=members).map(|m| PathBuf::from(format!("{}-mirror{m}", dir.display()))).collect();
        for d in std::iter::once(&dir.to_path_buf()).chain(&mirrors) {
            if fresh && d.exists() {
                std::fs::remove_dir_all(d).with_context(|| format!("removing {}", d.display()))?;
            }
        }
        let mut config = LogConfig::new(dir);
        config.log_parallelism = strands;
        config.sync_method = method;
        config.mirror_dirs = mirrors.clone();
        let log = match RedoLog::open(config) {
            Ok((log, _recovered)) => Arc::new(log),
            Err(e) => {
                let _ = std::fs::remove_dir_all(dir);
                return Err(e).with_context(|| {
                    format!(
                        "opening a new database in {} ({strands} strands, {})",
                        dir.display(),
                        method.name()
                    )
                });
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let checkpointer = {
            let (log, stop) = (log.clone(), stop.clone());
            thread::Builder::new()
                .name("bench-ckpt".into())
                .spawn(move || checkpointer(&log, &stop))
                .context("spawning the checkpointer")?
        };
        Ok(Database { log, dir: dir.to_path_buf(), mirrors, strands, stop, checkpointer: Some(checkpointer) })
    }

    /// The redo log, to change its parameters between runs.
    pub fn log(&self) -> &RedoLog {
        &self.log
    }

    /// Stops the checkpointer and shuts the database down, keeping its files.
    pub fn shut(mut self) -> Result<()> {
        self.stop.store(true, SeqCst);
        let checkpoints = match self.checkpointer.take() {
            Some(h) => h.join().map_err(|_| anyhow!("the checkpointer panicked"))?,
            None => Ok(()),
        };
        let shutdown = self.log.shutdown().context("shutting the database down");
        checkpoints?;
        shutdown
    }

    /// Stops the checkpointer, shuts the database down and removes it.
    pub fn close(mut self) -> Result<()> {
        self.stop.store(true, SeqCst);
        let checkpoints = match self.checkpointer.take() {
            Some(h) => h.join().map_err(|_| anyhow!("the checkpointer panicked"))?,
            None => Ok(()),
        };
        let shutdown = self.log.shutdown().context("shutting the database down");
        let removed =
            std::fs::remove_dir_all(&self.dir).with_context(|| format!("removing {}", self.dir.display()));
        for m in &self.mirrors {
            let _ = std::fs::remove_dir_all(m);
        }
        checkpoints?;
        shutdown?;
        removed
    }

    /// Leaves a stalled database behind: its stuck threads stay asleep, the log is never
    /// shut down (nor dropped), and its files are unlinked.
    pub fn abandon(mut self) {
        self.stop.store(true, SeqCst);
        drop(self.checkpointer.take());
        std::mem::forget(self.log.clone());
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// Runs `sessions` threads committing in `mode` for `warmup` (not counted) then
    /// `measure`. NOWAIT runs end by making everything durable, so the next one starts
    /// clean.
    pub fn run_config(
        &self,
        mode: Mode,
        sessions: usize,
        warmup: Duration,
        measure: Duration,
        label: &str,
    ) -> Result<Outcome> {
        let log = &self.log;
        let barrier = Arc::new(Barrier::new(sessions + 1));
        let start = Arc::new(OnceLock::<Instant>::new());
        let finished = Arc::new(AtomicUsize::new(0));
        let window = move |start: Instant| (start + warmup, start + warmup + measure);

        let mut handles = Vec::with_capacity(sessions);
        for i in 0..sessions {
            let (log, barrier, start, finished) =
                (log.clone(), barrier.clone(), start.clone(), finished.clone());
            let handle = thread::Builder::new().name(format!("bench-s{i}")).spawn(move || {
                let _done = Finished(&finished);
                let mut session = log.session();
                let mut hist = new_histogram();
                let mut payload = [0u8; PAYLOAD_BYTES];
                for (j, b) in payload.iter_mut().enumerate() {
                    *b = j as u8;
                }
                let opts = mode.options();
                barrier.wait();
                let (measure_from, deadline) = window(*start.get_or_init(Instant::now));
                let mut n = 0u64;
                let mut now = Instant::now();
                while now < deadline {
                    n += 1;
                    payload[..8].copy_from_slice(&n.to_le_bytes());
                    session.log_change(&payload)?;
                    let t = Instant::now();
                    session.commit(opts)?;
                    now = Instant::now();
                    if t >= measure_from {
                        hist.saturating_record((now - t).as_nanos() as u64);
                    }
                }
                Ok::<_, redo::RedoError>(hist)
            });
            match handle {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The started threads wait at the barrier for ever: give up on them.
                    return Err(e).context("spawning a session thread");
                }
            }
        }
        let at_start = log.stats();
        barrier.wait();
        let (measure_from, deadline) = window(*start.get_or_init(Instant::now));
        sleep_until(measure_from);
        let before = log.stats();
        let t0 = Instant::now();
        sleep_until(deadline);
        let after = log.stats();
        let stats_seconds = t0.elapsed().as_secs_f64();

        let stall = |stuck: usize, stuck_in: &'static str| {
            let (filling, opened) = log.current_seq();
            let delta = log.stats().since(&at_start);
            Stall {
                configuration: label.to_string(),
                strands: self.strands,
                mode: mode.name(),
                sessions,
                stuck_sessions: stuck,
                stuck_in,
                durable_lsn: log.durable_lsn().0,
                reserved_end: log.reserved_end().0,
                checkpoint_lsn: log.last_checkpoint().1 .0,
                current_seq: (filling.0, opened.0),
                log_file_size: log.config().log_file_size,
                stats: Stat::ALL.iter().map(|s| (s.name(), delta.get(*s))).collect(),
            }
        };

        // Wait for the last commits, watching for a stall.
        while finished.load(SeqCst) < sessions {
            if deadline.elapsed() >= STALL_AFTER {
                let stuck = sessions - finished.load(SeqCst);
                return Ok(Outcome::Stalled(stall(stuck, "commit")));
            }
            thread::sleep(Duration::from_millis(1));
        }
        let mut latency_ns = new_histogram();
        for h in handles {
            let hist = h
                .join()
                .map_err(|_| anyhow!("a session thread panicked"))?
                .with_context(|| format!("{label}: commit"))?;
            latency_ns.add(&hist).map_err(|e| anyhow!("merging histograms: {e:?}"))?;
        }
        if !mode.waits() {
            // Make the NOWAIT commits durable, on a helper thread so a stall shows.
            let (tx, rx) = mpsc::channel();
            let flusher = log.clone();
            thread::Builder::new()
                .name("bench-flush".into())
                .spawn(move || {
                    let _ = tx.send(flusher.wait_durable(flusher.reserved_end()));
                })
                .context("spawning the final flush")?;
            match rx.recv_timeout(STALL_AFTER) {
                Ok(result) => {
                    result.with_context(|| format!("{label}: making the NOWAIT commits durable"))?
                }
                Err(_) => return Ok(Outcome::Stalled(stall(1, "final wait_durable"))),
            }
        }
        Ok(Outcome::Measured(Box::new(Measured {
            latency_ns,
            seconds: measure.as_secs_f64(),
            stats_seconds,
            delta: after.since(&before),
        })))
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
    }
}

/// Checkpoints at every request of the log (log switch, or sessions waiting for a group)
/// and every ~200 ms, so log groups can be reused.
fn checkpointer(log: &RedoLog, stop: &AtomicBool) -> Result<()> {
    let mut last = Instant::now();
    while !stop.load(SeqCst) {
        if log.wait_checkpoint_request(Duration::from_millis(20))
            || last.elapsed() >= Duration::from_millis(200)
        {
            let (scn, lsn) = log.durable_commit();
            log.checkpoint(scn, lsn).context("checkpoint")?;
            last = Instant::now();
        }
    }
    Ok(())
}

pub(crate) fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, 3).expect("valid histogram bounds")
}

pub(crate) fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        thread::sleep(t - now);
    }
}

/// Counts a session thread as finished however it ends (error or panic included).
pub(crate) struct Finished<'a>(pub(crate) &'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}
