//! The load generator: N sessions of one target, each in one commit mode, running a
//! scenario's transaction in a loop; a warm-up, then a measured window between two reads
//! of the `v$` views.
//!
//! The window is exact: every session finishes its warm-up and waits at a gate; the views
//! are read; the gate opens; the sessions run until told to stop (or for a number of
//! transactions), and the views are read again only once every session has returned. So
//! the views' differences hold exactly the measured transactions (a WAIT run's
//! `log file sync` waits can be compared one to one with its commits).
//!
//! A run whose sessions stop making progress for [`STALL_AFTER`] is reported as stalled
//! and its threads are left behind (they hold their connections; the process ends anyway).
//! A Ctrl-C (`common::interrupt`) stops a run the same way a failing session does.
//!
//! On PostgreSQL the views are `pg_stat_wal`, whose counts include the warm-up (see
//! `vstats`): the run also reports the warm-up's commits, so that ratios can be taken
//! over both.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use hdrhistogram::Histogram;

use super::progress::Progress;
use super::target::{Connection, Target};
use super::vstats::{self, Delta, Moment};
use crate::common::interrupt;
use crate::engine_bench::workload::{new_histogram, Finished, Mode};

/// No transaction finishing anywhere for this long is a stall.
pub const STALL_AFTER: Duration = Duration::from_secs(20);

/// What one transaction did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Txn {
    pub rows: u64,
    pub commits: u64,
    /// How long the COMMIT call alone took, when the work timed it.
    pub commit_ns: Option<u64>,
}

/// A scenario's transaction, prepared on its session.
pub trait Work: Send {
    /// Runs transaction number `n` (from 0) of this session.
    fn transaction(&mut self, conn: &mut dyn Connection, n: u64) -> Result<Txn>;
}

/// Makes session `index`'s work, on its connection (prepares its statements).
pub type MakeWork = Arc<dyn Fn(usize, &mut dyn Connection) -> Result<Box<dyn Work>> + Send + Sync>;

/// How long a phase lasts.
#[derive(Clone, Copy, Debug)]
pub enum Length {
    Time(Duration),
    /// Transactions per session.
    Transactions(u64),
}

/// One configuration to run.
pub struct RunSpec {
    pub label: String,
    pub sessions: usize,
    pub mode: Mode,
    pub warmup: Length,
    pub measure: Length,
}

/// What one configuration measured.
pub struct Run {
    pub sessions: usize,
    pub mode: Mode,
    pub seconds: f64,
    pub transactions: u64,
    pub commits: u64,
    pub rows: u64,
    /// Commits of the warm-up before the window.
    pub warmup_commits: u64,
    /// Latency of each measured transaction (statements + COMMIT), ns.
    pub latency_ns: Histogram<u64>,
    /// Latency of each measured COMMIT call, ns (when the work timed it).
    pub commit_ns: Histogram<u64>,
    pub delta: Delta,
}

struct Shared {
    arrived: AtomicUsize,
    go: AtomicBool,
    stop: AtomicBool,
    abort: AtomicBool,
    finished: AtomicUsize,
    /// Transactions finished, warm-up included: the progress a stall check watches.
    done: AtomicU64,
    /// Commits in the measured window so far (the progress bar's rate).
    measured_commits: AtomicU64,
}

struct SessionResult {
    transactions: u64,
    commits: u64,
    warmup_commits: u64,
    rows: u64,
    latency_ns: Histogram<u64>,
    commit_ns: Histogram<u64>,
}

/// Runs one configuration on `target`, reading the views through `monitor`.
pub fn run(
    target: &dyn Target,
    monitor: &mut dyn Connection,
    spec: &RunSpec,
    make: &MakeWork,
    progress: &Progress,
    cpus: usize,
) -> Result<Run> {
    let shared = Arc::new(Shared {
        arrived: AtomicUsize::new(0),
        go: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        finished: AtomicUsize::new(0),
        done: AtomicU64::new(0),
        measured_commits: AtomicU64::new(0),
    });
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut handles: Vec<JoinHandle<Option<SessionResult>>> = Vec::with_capacity(spec.sessions);
    for index in 0..spec.sessions {
        let conn = target.connect().with_context(|| format!("{}: connecting session {index}", spec.label))?;
        let (shared2, errors2, make2) = (shared.clone(), errors.clone(), make.clone());
        let (mode, warmup, measure) = (spec.mode, spec.warmup, spec.measure);
        let h = thread::Builder::new()
            .name(format!("bench-s{index}"))
            .spawn(move || {
                let _done = Finished(&shared2.finished);
                match session(conn, index, mode, warmup, measure, &make2, &shared2) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        errors2.lock().expect("errors poisoned").push(format!("session {index}: {e:#}"));
                        // Let the others through the gate and stop them.
                        shared2.arrived.fetch_add(1, SeqCst);
                        shared2.abort.store(true, SeqCst);
                        None
                    }
                }
            })
            .context("spawning a session thread")?;
        handles.push(h);
    }
    let fail = |what: &str| -> anyhow::Error {
        shared.abort.store(true, SeqCst);
        if interrupt::requested() {
            return anyhow!("{}: interrupted (Ctrl-C)", spec.label);
        }
        let errs = errors.lock().expect("errors poisoned");
        match errs.first() {
            Some(e) => anyhow!("{}: {e}", spec.label),
            None => anyhow!("{}: {what}", spec.label),
        }
    };

    // Warm-up: wait at the gate for everyone.
    watch(&shared, || shared.arrived.load(SeqCst) >= spec.sessions || shared.abort.load(SeqCst))
        .map_err(|stall| fail(&format!("stalled in the warm-up: {stall}")))?;
    if shared.abort.load(SeqCst) {
        return Err(fail("a session failed"));
    }
    let flavour = target.flavour();
    let before = vstats::sample(monitor, flavour, Moment::Before)
        .inspect_err(|_| shared.abort.store(true, SeqCst))
        .context("reading the server's figures before the window")?;
    let t0 = Instant::now();
    shared.go.store(true, SeqCst);
    progress.start_config(&spec.label);
    if let Length::Time(d) = spec.measure {
        let deadline = t0 + d;
        while Instant::now() < deadline && !shared.abort.load(SeqCst) {
            if interrupt::requested() {
                shared.abort.store(true, SeqCst);
            }
            thread::sleep(Duration::from_millis(50).min(deadline.saturating_duration_since(Instant::now())));
            progress.tick(shared.measured_commits.load(SeqCst), t0.elapsed());
        }
        shared.stop.store(true, SeqCst);
    }
    watch(&shared, || {
        progress.tick(shared.measured_commits.load(SeqCst), t0.elapsed());
        shared.finished.load(SeqCst) >= spec.sessions
    })
    .map_err(|stall| fail(&format!("stalled: {stall}")))?;
    let seconds = t0.elapsed().as_secs_f64();
    if shared.abort.load(SeqCst) {
        return Err(fail("a session failed"));
    }
    let after = vstats::sample(monitor, flavour, Moment::After)
        .context("reading the server's figures after the window")?;
    let mut run = Run {
        sessions: spec.sessions,
        mode: spec.mode,
        seconds,
        transactions: 0,
        commits: 0,
        rows: 0,
        warmup_commits: 0,
        latency_ns: new_histogram(),
        commit_ns: new_histogram(),
        delta: Delta::between(&before, &after, cpus),
    };
    for h in handles {
        match h.join() {
            Ok(Some(r)) => {
                run.transactions += r.transactions;
                run.commits += r.commits;
                run.rows += r.rows;
                run.warmup_commits += r.warmup_commits;
                run.latency_ns.add(&r.latency_ns).map_err(|e| anyhow!("merging histograms: {e:?}"))?;
                run.commit_ns.add(&r.commit_ns).map_err(|e| anyhow!("merging histograms: {e:?}"))?;
            }
            Ok(None) => {}
            Err(_) => errors.lock().expect("errors poisoned").push("a session thread panicked".into()),
        }
    }
    if let Some(e) = errors.lock().expect("errors poisoned").first() {
        bail!("{}: {e}", spec.label);
    }
    if !spec.mode.waits() {
        target.settle()?;
    }
    Ok(run)
}

/// Waits until `ready`, or fails when no transaction has finished for [`STALL_AFTER`] or
/// on Ctrl-C.
fn watch(shared: &Shared, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let mut last = (shared.done.load(SeqCst), Instant::now());
    while !ready() {
        if interrupt::requested() {
            shared.abort.store(true, SeqCst);
            return Err("interrupted (Ctrl-C)".into());
        }
        thread::sleep(Duration::from_millis(5));
        let done = shared.done.load(SeqCst);
        if done != last.0 {
            last = (done, Instant::now());
        } else if last.1.elapsed() >= STALL_AFTER {
            return Err(format!(
                "no transaction finished for {:.0} s ({} of the sessions returned)",
                STALL_AFTER.as_secs_f64(),
                shared.finished.load(SeqCst)
            ));
        }
    }
    Ok(())
}

fn session(
    mut conn: Box<dyn Connection>,
    index: usize,
    mode: Mode,
    warmup: Length,
    measure: Length,
    make: &MakeWork,
    shared: &Shared,
) -> Result<SessionResult> {
    conn.set_commit_mode(mode).context("setting the commit mode")?;
    let mut work = make(index, &mut *conn).context("setting up")?;
    let mut n = 0u64;
    let mut warmup_commits = 0u64;
    let started = Instant::now();
    loop {
        let more = match warmup {
            Length::Time(d) => started.elapsed() < d,
            Length::Transactions(k) => n < k,
        };
        if !more || shared.abort.load(SeqCst) {
            break;
        }
        warmup_commits += work.transaction(&mut *conn, n)?.commits;
        shared.done.fetch_add(1, SeqCst);
        n += 1;
    }
    shared.arrived.fetch_add(1, SeqCst);
    while !shared.go.load(SeqCst) {
        if shared.abort.load(SeqCst) {
            bail!("stopped: another session failed");
        }
        thread::sleep(Duration::from_micros(200));
    }
    let mut r = SessionResult {
        transactions: 0,
        commits: 0,
        warmup_commits,
        rows: 0,
        latency_ns: new_histogram(),
        commit_ns: new_histogram(),
    };
    loop {
        let more = match measure {
            Length::Time(_) => !shared.stop.load(SeqCst),
            Length::Transactions(k) => r.transactions < k,
        };
        if !more || shared.abort.load(SeqCst) {
            break;
        }
        let t = Instant::now();
        let txn = work.transaction(&mut *conn, n)?;
        r.latency_ns.saturating_record(t.elapsed().as_nanos() as u64);
        if let Some(c) = txn.commit_ns {
            r.commit_ns.saturating_record(c);
        }
        r.transactions += 1;
        r.commits += txn.commits;
        r.rows += txn.rows;
        n += 1;
        shared.done.fetch_add(1, SeqCst);
        shared.measured_commits.fetch_add(txn.commits, SeqCst);
    }
    Ok(r)
}

/// Runs `f` and returns how long it took in ns: for timing a COMMIT inside a transaction.
pub fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, u64)> {
    let t = Instant::now();
    let v = f()?;
    Ok((v, t.elapsed().as_nanos() as u64))
}
