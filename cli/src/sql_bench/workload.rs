//! The SQL workloads: a fresh database per part, its tables, and N sessions running one
//! loop through the embedded SQL API with prepared statements until a deadline.
//!
//! Each session sets its commit mode with `ALTER SESSION SET commit_wait = ...` and
//! `ALTER SESSION SET commit_logging = ...`, prepares its statement and a `COMMIT` once,
//! then repeats: build the bind values (not timed), execute the statement, execute the
//! COMMIT; the pair is one commit's latency.
//!
//! As in the engine workload, a session that has not returned [`STALL_AFTER`] past the
//! deadline is a stall: the configuration is reported as stalled with the log's
//! positions and its database is left behind (the stuck threads keep it alive).

use crate::engine_bench::workload::{new_histogram, sleep_until, Finished};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use db::sql::PreparedStatement;
use db::{Database, DbConfig, Session, SqlStats, Value};
use hdrhistogram::Histogram;
use redo::sim::SimRng;
use redo::{LogConfig, Stat, StatsSnapshot, SyncMethod, WaitEvent};
use serde::Serialize;

use crate::engine_bench::workload::{Measured, Mode, STALL_AFTER};

/// Rows of `w2`, the table loop (b) updates and the SELECTs read.
pub const TABLE_ROWS: i64 = 30_000;
/// Characters of the `v` column: with the two BIGINTs a row holds 100 bytes of data.
pub const V_CHARS: usize = 84;
pub const ROW_BYTES: usize = 16 + V_CHARS;
/// Rows per `execute_many` call (and per commit) when loading `w2`.
const LOAD_BATCH: usize = 1_000;

const CREATE_W1: &str = "CREATE TABLE w1 (id BIGINT PRIMARY KEY, session BIGINT, v VARCHAR(200))";
const CREATE_W2: &str = "CREATE TABLE w2 (id BIGINT PRIMARY KEY, n BIGINT, v VARCHAR(200))";

/// One of the two commit loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// (a) insert one row into `w1`, then commit.
    Insert,
    /// (b) update one random row of `w2`, then commit.
    Update,
}

impl Work {
    pub const ALL: [Work; 2] = [Work::Insert, Work::Update];

    pub fn name(self) -> &'static str {
        match self {
            Work::Insert => "insert",
            Work::Update => "update",
        }
    }

    pub fn sql(self) -> &'static str {
        match self {
            Work::Insert => "INSERT INTO w1 (id, session, v) VALUES ($1, $2, $3)",
            Work::Update => "UPDATE w2 SET n = n + 1, v = $2 WHERE id = $1",
        }
    }
}

/// A `v` value of [`V_CHARS`] characters, different for every `tag`.
pub fn text_value(tag: u64) -> String {
    const FILLER: &str =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-abcdefghijklmnopqrstuvwxyz";
    let mut s = format!("{tag:016x}");
    s.push_str(&FILLER[..V_CHARS - 16]);
    s
}

/// Opens a fresh database in `dir` (removing what a previous run left there): the
/// engine's default log configuration with `method`, checkpoints only when the log asks
/// for one (or when the benchmark calls them).
pub fn open(dir: &Path, method: SyncMethod) -> Result<Arc<Database>> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let mut log = LogConfig::new(".");
    log.sync_method = method;
    let db = Database::open(
        dir,
        DbConfig { log, checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..DbConfig::default() },
    )
    .with_context(|| format!("opening a new database in {} ({})", dir.display(), method.name()))?;
    Ok(Arc::new(db))
}

/// Creates the table `work` needs (`w2` loaded with [`TABLE_ROWS`] rows).
pub fn create_tables(db: &Database, work: Work) -> Result<()> {
    match work {
        Work::Insert => {
            db.session().execute(CREATE_W1, &[]).context(CREATE_W1)?;
            Ok(())
        }
        Work::Update => load_w2(db),
    }
}

/// Creates `w2` and loads its rows with an array insert per [`LOAD_BATCH`] rows.
pub fn load_w2(db: &Database) -> Result<()> {
    let mut s = db.session();
    s.execute(CREATE_W2, &[]).context(CREATE_W2)?;
    let sql = "INSERT INTO w2 (id, n, v) VALUES ($1, $2, $3)";
    let insert = s.prepare(sql).context(sql)?;
    let commit = s.prepare("COMMIT").context("COMMIT")?;
    let mut id = 0i64;
    while id < TABLE_ROWS {
        let rows: Vec<Vec<Value>> = (id + 1..=(id + LOAD_BATCH as i64).min(TABLE_ROWS))
            .map(|i| vec![Value::Int(i), Value::Int(0), Value::Text(text_value(i as u64))])
            .collect();
        id += rows.len() as i64;
        s.execute_many(&insert, &rows).with_context(|| format!("loading w2: {sql}"))?;
        s.execute_prepared(&commit, &[]).context("loading w2: COMMIT")?;
    }
    let count = s.execute("SELECT count(*) FROM w2", &[]).context("counting w2")?;
    match count.rows().first().and_then(|r| r.first()) {
        Some(Value::Int(n)) if *n == TABLE_ROWS => Ok(()),
        other => bail!("w2 holds {other:?} rows after loading {TABLE_ROWS}"),
    }
}

/// Empties `w1` between configurations, so every configuration of loop (a) starts with
/// the same (empty) table and checkpoint images stay small.
pub fn truncate_w1(db: &Database) -> Result<()> {
    db.session().execute("TRUNCATE w1", &[]).context("TRUNCATE w1")?;
    Ok(())
}

/// Counters of the SQL layer over a window.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SqlDelta {
    pub parse_count_total: u64,
    pub parse_count_hard: u64,
    pub cache_hits: u64,
    pub execute_count: u64,
}

impl SqlDelta {
    pub fn between(before: &SqlStats, after: &SqlStats) -> SqlDelta {
        SqlDelta {
            parse_count_total: after.parse_count_total - before.parse_count_total,
            parse_count_hard: after.parse_count_hard - before.parse_count_hard,
            cache_hits: after.cache_hits - before.cache_hits,
            execute_count: after.execute_count - before.execute_count,
        }
    }
}

/// What one session brings back.
pub struct SessionResult {
    /// Latency of every commit started in the measured window (statement + COMMIT), ns.
    latency_ns: Histogram<u64>,
    /// Every commit after the start: (start, latency) in ns since the common start.
    timeline: Vec<(u64, u64)>,
}

/// How a run of sessions ended.
pub enum Finish<T> {
    Done(T),
    /// Sessions failed with these errors (the others ran to the deadline).
    Failed(Vec<String>),
    /// Commits stopped returning: what the log looked like.
    Stalled(String),
}

/// Sessions running one loop, started together.
pub struct Running {
    handles: Vec<JoinHandle<Result<SessionResult, String>>>,
    finished: Arc<AtomicUsize>,
    mode: Mode,
    pub start: Instant,
    pub measure_from: Instant,
    pub deadline: Instant,
}

/// What every session of a run does.
#[derive(Clone, Copy)]
struct SessionSpec {
    work: Work,
    mode: Mode,
    /// Added to every inserted id, so each configuration inserts new keys.
    id_base: i64,
    /// Keep every commit's (start, latency).
    timeline: bool,
    warmup: Duration,
    measure: Duration,
}

/// Starts `sessions` threads running `work` in `mode` for `warmup` (not counted) then
/// `measure`, and returns once they have all set up and started.
fn start(db: &Arc<Database>, sessions: usize, spec: SessionSpec) -> Result<Running> {
    let barrier = Arc::new(Barrier::new(sessions + 1));
    let start = Arc::new(OnceLock::<Instant>::new());
    let finished = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::with_capacity(sessions);
    for index in 0..sessions {
        let (db, barrier, start, finished) = (db.clone(), barrier.clone(), start.clone(), finished.clone());
        let handle = thread::Builder::new().name(format!("sql-bench-s{index}")).spawn(move || {
            let _done = Finished(&finished);
            session_main(&db, index, spec, &barrier, &start)
        });
        match handle {
            Ok(h) => handles.push(h),
            // The started threads wait at the barrier for ever: give up on them.
            Err(e) => return Err(e).context("spawning a session thread"),
        }
    }
    barrier.wait();
    let t = *start.get_or_init(Instant::now);
    Ok(Running {
        handles,
        finished,
        mode: spec.mode,
        start: t,
        measure_from: t + spec.warmup,
        deadline: t + spec.warmup + spec.measure,
    })
}

/// A session set up for its loop: commit mode, the statement, the COMMIT.
fn set_up(
    db: &Database,
    index: usize,
    spec: &SessionSpec,
) -> Result<(Session, PreparedStatement, PreparedStatement), String> {
    let mut s = db.session();
    let fail = |what: &str, e: db::DbError| format!("session {index}: {what}: {e}");
    for sql in [
        format!("ALTER SESSION SET commit_wait = {}", spec.mode.wait.name()),
        format!("ALTER SESSION SET commit_logging = {}", spec.mode.logging.name()),
    ] {
        s.execute(&sql, &[]).map_err(|e| fail(&sql, e))?;
    }
    let statement = s.prepare(spec.work.sql()).map_err(|e| fail(spec.work.sql(), e))?;
    let commit = s.prepare("COMMIT").map_err(|e| fail("COMMIT", e))?;
    Ok((s, statement, commit))
}

fn session_main(
    db: &Database,
    index: usize,
    spec: SessionSpec,
    barrier: &Barrier,
    start: &OnceLock<Instant>,
) -> Result<SessionResult, String> {
    let ready = set_up(db, index, &spec);
    // Everyone meets at the barrier, set up or not, so the run starts (and a failed set-up
    // is reported) instead of hanging.
    barrier.wait();
    let (mut s, statement, commit) = ready?;
    let start = *start.get_or_init(Instant::now);
    let (measure_from, deadline) = (start + spec.warmup, start + spec.warmup + spec.measure);
    let mut latency_ns = new_histogram();
    let mut timeline = Vec::new();
    let mut rng = SimRng::new(0x5eed_0000 + index as u64);
    let session_tag = (index as u64) << 40;
    let mut n = 0u64;
    let mut now = Instant::now();
    while now < deadline {
        n += 1;
        let params = match spec.work {
            Work::Insert => vec![
                Value::Int(spec.id_base + ((index as i64) << 32) + n as i64),
                Value::Int(index as i64),
                Value::Text(text_value(session_tag | n)),
            ],
            Work::Update => vec![
                Value::Int(1 + rng.upto(TABLE_ROWS as u64 - 1) as i64),
                Value::Text(text_value(session_tag | n)),
            ],
        };
        let t = Instant::now();
        let done = s
            .execute_prepared(&statement, &params)
            .map_err(|e| format!("session {index}: {} {params:?}: {e}", spec.work.sql()))?;
        if done.rows_affected() != 1 {
            return Err(format!(
                "session {index}: {} {params:?} changed {} rows, not 1",
                spec.work.sql(),
                done.rows_affected()
            ));
        }
        s.execute_prepared(&commit, &[]).map_err(|e| format!("session {index}: COMMIT: {e}"))?;
        now = Instant::now();
        if t >= measure_from {
            latency_ns.saturating_record((now - t).as_nanos() as u64);
        }
        if spec.timeline {
            timeline.push(((t - start).as_nanos() as u64, (now - t).as_nanos() as u64));
        }
    }
    Ok(SessionResult { latency_ns, timeline })
}

impl Running {
    /// Waits for every session (a stall after [`STALL_AFTER`] past the deadline), and for
    /// NOWAIT runs makes everything durable so the next run starts clean.
    fn finish(self, db: &Arc<Database>) -> Result<Finish<Vec<SessionResult>>> {
        let sessions = self.handles.len();
        while self.finished.load(SeqCst) < sessions {
            if self.deadline.elapsed() >= STALL_AFTER {
                let stuck = sessions - self.finished.load(SeqCst);
                return Ok(Finish::Stalled(stall_text(db, stuck, sessions, "commit")));
            }
            thread::sleep(Duration::from_millis(1));
        }
        let mut results = Vec::with_capacity(sessions);
        let mut errors = Vec::new();
        for h in self.handles {
            match h.join() {
                Ok(Ok(r)) => results.push(r),
                Ok(Err(e)) => errors.push(e),
                Err(_) => errors.push("a session thread panicked".into()),
            }
        }
        if !self.mode.waits() {
            // On a helper thread, so a stall shows.
            let (tx, rx) = mpsc::channel();
            let flusher = db.clone();
            thread::Builder::new()
                .name("sql-bench-flush".into())
                .spawn(move || {
                    let log = flusher.log();
                    let _ = tx.send(log.wait_durable(log.reserved_end()));
                })
                .context("spawning the final flush")?;
            match rx.recv_timeout(STALL_AFTER) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errors.push(format!("making the NOWAIT commits durable: {e}")),
                Err(_) => return Ok(Finish::Stalled(stall_text(db, 1, sessions, "final wait_durable"))),
            }
        }
        if !errors.is_empty() {
            return Ok(Finish::Failed(errors));
        }
        Ok(Finish::Done(results))
    }
}

fn stall_text(db: &Database, stuck: usize, sessions: usize, stuck_in: &str) -> String {
    let log = db.log();
    let (filling, opened) = log.current_seq();
    let stats = log.stats();
    format!(
        "{stuck} of {sessions} sessions stuck in {stuck_in} for {:.0} s; durable {}, reserved end {}, \
         checkpoint {}, current_seq (filling {}, opened {}), redo log space requests {}, \
         log file switch (checkpoint incomplete) waits {}",
        STALL_AFTER.as_secs_f64(),
        log.durable_lsn().0,
        log.reserved_end().0,
        log.last_checkpoint().1 .0,
        filling.0,
        opened.0,
        stats.get(Stat::RedoLogSpaceRequests),
        stats.event(WaitEvent::LogFileSwitchCheckpointIncomplete).waits,
    )
}

/// One configuration of a commit loop: the engine's figures over the measured window
/// and the SQL layer's counters over the same window.
pub struct ConfigMeasured {
    pub measured: Measured,
    pub sql: SqlDelta,
}

/// Runs `sessions` sessions of `work` in `mode` and measures them.
pub fn run_config(
    db: &Arc<Database>,
    work: Work,
    mode: Mode,
    sessions: usize,
    warmup: Duration,
    measure: Duration,
    id_base: i64,
) -> Result<Finish<ConfigMeasured>> {
    let spec = SessionSpec { work, mode, id_base, timeline: false, warmup, measure };
    let run = start(db, sessions, spec)?;
    sleep_until(run.measure_from);
    let (before, sql_before) = (db.log().stats(), db.sql_stats());
    let t0 = Instant::now();
    sleep_until(run.deadline);
    let (after, sql_after) = (db.log().stats(), db.sql_stats());
    let stats_seconds = t0.elapsed().as_secs_f64();
    Ok(match run.finish(db)? {
        Finish::Done(results) => {
            let mut latency_ns = new_histogram();
            for r in &results {
                latency_ns.add(&r.latency_ns).map_err(|e| anyhow!("merging histograms: {e:?}"))?;
            }
            Finish::Done(ConfigMeasured {
                measured: Measured {
                    latency_ns,
                    seconds: measure.as_secs_f64(),
                    stats_seconds,
                    delta: after.since(&before),
                },
                sql: SqlDelta::between(&sql_before, &sql_after),
            })
        }
        Finish::Failed(e) => Finish::Failed(e),
        Finish::Stalled(s) => Finish::Stalled(s),
    })
}

/// `redo size` per `user commit` over a window.
pub fn redo_bytes_per_commit(delta: &StatsSnapshot) -> Option<f64> {
    let commits = delta.get(Stat::UserCommits);
    (commits > 0).then(|| delta.get(Stat::RedoSize) as f64 / commits as f64)
}

// ---------------------------------------------------------------------------------------
// Literal SQL vs bind variables
// ---------------------------------------------------------------------------------------

/// One way of running the point SELECTs.
#[derive(Clone, Debug, Serialize)]
pub struct ParseRow {
    pub variant: &'static str,
    pub text: String,
    pub statements: u64,
    pub seconds: f64,
    pub statements_per_sec: f64,
    pub us_per_statement: f64,
    /// SQL-layer counters over the variant (the prepared variant's one `prepare` included).
    pub sql: SqlDelta,
    /// SELECTs that did not return exactly one row.
    pub wrong_results: u64,
}

/// The `i`th id of the point SELECTs: a permutation of 1..=TABLE_ROWS (7919 is prime and
/// does not divide 30,000), so up to TABLE_ROWS statements never repeat a literal.
fn select_id(i: u64) -> i64 {
    1 + ((i * 7919) % TABLE_ROWS as u64) as i64
}

/// Rounds the point SELECTs are split into, the variants taking turns in each, so that a
/// machine getting faster or slower during the part does not favour one variant.
const PARSE_ROUNDS: u64 = 4;

/// One session runs `n` point SELECTs on `w2` with the id as a literal in the text, `n`
/// with `$1` through `execute`, and `n` through a prepared statement (prepared once, in
/// its first round), in [`PARSE_ROUNDS`] rounds of turns.
pub fn literal_vs_bind(db: &Database, n: u64) -> Result<Vec<ParseRow>> {
    let mut s = db.session();
    // Warm up the executor with a text none of the variants uses.
    let warm = s.prepare("SELECT n FROM w2 WHERE id = $1").context("warm-up prepare")?;
    for i in 0..n.min(2_000) {
        s.execute_prepared(&warm, &[Value::Int(select_id(i))]).context("warm-up SELECT")?;
    }
    drop(warm);

    let bind_sql = "SELECT v FROM w2 WHERE id = $1";
    type Variant = fn(&mut Session, &mut Option<PreparedStatement>, i64) -> db::DbResult<usize>;
    let variants: [(&'static str, String, Variant); 3] = [
        ("literal (execute, id in the text)", "SELECT v FROM w2 WHERE id = <id>".into(), |s, _, id| {
            Ok(s.execute(&format!("SELECT v FROM w2 WHERE id = {id}"), &[])?.rows().len())
        }),
        ("bind (execute, $1)", bind_sql.into(), |s, _, id| {
            Ok(s.execute("SELECT v FROM w2 WHERE id = $1", &[Value::Int(id)])?.rows().len())
        }),
        ("prepared (execute_prepared, $1)", bind_sql.into(), |s, prepared, id| {
            if prepared.is_none() {
                *prepared = Some(s.prepare("SELECT v FROM w2 WHERE id = $1")?);
            }
            let statement = prepared.as_ref().expect("prepared above");
            Ok(s.execute_prepared(statement, &[Value::Int(id)])?.rows().len())
        }),
    ];
    let mut rows: Vec<ParseRow> = variants
        .iter()
        .map(|(variant, text, _)| ParseRow {
            variant,
            text: text.clone(),
            statements: 0,
            seconds: 0.0,
            statements_per_sec: 0.0,
            us_per_statement: 0.0,
            sql: SqlDelta::default(),
            wrong_results: 0,
        })
        .collect();
    let mut prepared: [Option<PreparedStatement>; 3] = Default::default();
    eprintln!("literal vs bind: {n} SELECTs per variant, in {PARSE_ROUNDS} rounds");
    for round in 0..PARSE_ROUNDS {
        // Every id of the part once per variant: literal texts never repeat.
        let ids = round * n / PARSE_ROUNDS..(round + 1) * n / PARSE_ROUNDS;
        for (k, (variant, text, run)) in variants.iter().enumerate() {
            let row = &mut rows[k];
            let before = db.sql_stats();
            let t0 = Instant::now();
            for i in ids.clone() {
                let got = run(&mut s, &mut prepared[k], select_id(i))
                    .with_context(|| format!("{variant}: {text}"))?;
                if got != 1 {
                    row.wrong_results += 1;
                }
            }
            row.seconds += t0.elapsed().as_secs_f64();
            let d = SqlDelta::between(&before, &db.sql_stats());
            row.statements += ids.end - ids.start;
            row.sql.parse_count_total += d.parse_count_total;
            row.sql.parse_count_hard += d.parse_count_hard;
            row.sql.cache_hits += d.cache_hits;
            row.sql.execute_count += d.execute_count;
        }
    }
    for row in &mut rows {
        row.statements_per_sec = row.statements as f64 / row.seconds;
        row.us_per_statement = row.seconds * 1e6 / row.statements as f64;
    }
    Ok(rows)
}

// ---------------------------------------------------------------------------------------
// Checkpoint stall
// ---------------------------------------------------------------------------------------

/// Figures of one phase of the checkpoint run.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseFigures {
    pub phase: &'static str,
    pub from_ms: f64,
    pub to_ms: f64,
    /// Commits started in the phase.
    pub commits: u64,
    pub commits_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// The longest single commit (statement + COMMIT) started in the phase.
    pub max_us: f64,
    /// Start of that commit, ms since the run started.
    pub max_at_ms: f64,
    /// The longest time in the phase in which no session finished a commit.
    pub longest_gap_us: f64,
}

/// One `Database::checkpoint` call.
#[derive(Clone, Debug, Serialize)]
pub struct CheckpointCall {
    /// When it started, ms since the run started.
    pub at_ms: f64,
    pub duration_ms: f64,
    pub image_bytes: Option<u64>,
    pub image_scn: Option<u64>,
    pub error: Option<String>,
}

/// The whole checkpoint run.
#[derive(Clone, Debug, Serialize)]
pub struct CheckpointStall {
    pub sessions: usize,
    pub mode: String,
    pub warmup_seconds: f64,
    /// The window without checkpoints; the one with them is twice as long.
    pub phase_seconds: f64,
    pub without: PhaseFigures,
    pub with: PhaseFigures,
    pub checkpoints: Vec<CheckpointCall>,
    /// The longest commit that was running while a checkpoint ran.
    pub longest_commit_overlapping_a_checkpoint_us: Option<f64>,
    /// Longest commit with checkpoints minus longest without, in ms.
    pub excess_ms: f64,
    /// The requirement: a checkpoint must not stop commits for more than this (ms).
    pub target_excess_ms: f64,
    pub pass: bool,
    /// Engine statistics over the whole run.
    pub log_file_switches: u64,
}

/// Most a checkpoint may add to the longest commit: "a few milliseconds".
pub const CHECKPOINT_EXCESS_TARGET_MS: f64 = 5.0;

/// `sessions` sessions run loop (b) WAIT/IMMEDIATE: `warmup`, then `phase` without
/// checkpoints, then `phase` during which the benchmark calls `db.checkpoint()`
/// `checkpoints` times, evenly spaced.
pub fn checkpoint_stall(
    db: &Arc<Database>,
    sessions: usize,
    warmup: Duration,
    phase: Duration,
    checkpoints: usize,
) -> Result<Finish<CheckpointStall>> {
    let mode = Mode::WAIT_IMMEDIATE;
    let spec =
        // `phase` without checkpoints, then two with: the calls are spread over the first
        // of them, the second leaves room for checkpoints slower than planned (a loaded
        // machine) to run while the sessions still commit.
        SessionSpec { work: Work::Update, mode, id_base: 0, timeline: true, warmup, measure: phase * 3 };
    let before = db.log().stats();
    let run = start(db, sessions, spec)?;
    let with_from = run.measure_from + phase;
    let ms = |t: Instant| (t - run.start).as_secs_f64() * 1e3;
    let mut calls = Vec::with_capacity(checkpoints);
    for k in 0..checkpoints {
        sleep_until(with_from + phase.mul_f64((k as f64 + 0.5) / checkpoints as f64));
        // A call that would come after the sessions stop (nothing committed to write)
        // is not made: the report and the JSON show how many were.
        if Instant::now() >= run.deadline {
            break;
        }
        let t = Instant::now();
        let result = db.checkpoint();
        let duration_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut call =
            CheckpointCall { at_ms: ms(t), duration_ms, image_bytes: None, image_scn: None, error: None };
        match result {
            Ok(Some(image)) => {
                call.image_bytes = Some(image.bytes);
                call.image_scn = Some(image.scn.0);
            }
            Ok(None) => call.error = Some("nothing committed since the last image".into()),
            Err(e) => call.error = Some(e.to_string()),
        }
        calls.push(call);
    }
    let (start_at, measure_from, deadline) = (run.start, run.measure_from, run.deadline);
    let results = match run.finish(db)? {
        Finish::Done(r) => r,
        Finish::Failed(e) => return Ok(Finish::Failed(e)),
        Finish::Stalled(s) => return Ok(Finish::Stalled(s)),
    };
    let switches = db.log().stats().since(&before).get(Stat::RedoLogSwitches);
    let timeline: Vec<(u64, u64)> = results.into_iter().flat_map(|r| r.timeline).collect();
    let ns = |t: Instant| (t - start_at).as_nanos() as u64;
    let (a, b, c) = (ns(measure_from), ns(with_from), ns(deadline));
    let without = phase_figures("without checkpoints", &timeline, a, b);
    let with = phase_figures("with checkpoints", &timeline, b, c);
    let overlapping = timeline
        .iter()
        .filter(|(s, l)| {
            calls.iter().any(|c| {
                let (c0, c1) = ((c.at_ms * 1e6) as u64, ((c.at_ms + c.duration_ms) * 1e6) as u64);
                *s < c1 && s + l > c0
            })
        })
        .map(|(_, l)| *l as f64 / 1e3)
        .max_by(f64::total_cmp);
    let excess_ms = (with.max_us - without.max_us) / 1e3;
    Ok(Finish::Done(CheckpointStall {
        sessions,
        mode: mode.name(),
        warmup_seconds: warmup.as_secs_f64(),
        phase_seconds: phase.as_secs_f64(),
        without,
        with,
        checkpoints: calls,
        longest_commit_overlapping_a_checkpoint_us: overlapping,
        excess_ms,
        target_excess_ms: CHECKPOINT_EXCESS_TARGET_MS,
        pass: excess_ms <= CHECKPOINT_EXCESS_TARGET_MS,
        log_file_switches: switches,
    }))
}

/// The commits started in `[from, to)` (ns since the start) of `timeline`.
fn phase_figures(phase: &'static str, timeline: &[(u64, u64)], from: u64, to: u64) -> PhaseFigures {
    let mut hist = new_histogram();
    let mut max = (0u64, 0u64);
    let mut ends = Vec::new();
    for &(s, l) in timeline {
        if (from..to).contains(&s) {
            hist.saturating_record(l);
            if l > max.1 {
                max = (s, l);
            }
        }
        if (from..to).contains(&(s + l)) {
            ends.push(s + l);
        }
    }
    ends.sort_unstable();
    let longest_gap = ends.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let seconds = (to - from) as f64 / 1e9;
    let q = |q: f64| if hist.is_empty() { 0.0 } else { hist.value_at_quantile(q) as f64 / 1e3 };
    PhaseFigures {
        phase,
        from_ms: from as f64 / 1e6,
        to_ms: to as f64 / 1e6,
        commits: hist.len(),
        commits_per_sec: hist.len() as f64 / seconds,
        p50_us: q(0.5),
        p99_us: q(0.99),
        max_us: max.1 as f64 / 1e3,
        max_at_ms: max.0 as f64 / 1e6,
        longest_gap_us: longest_gap as f64 / 1e3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_have_the_row_size_and_differ() {
        assert_eq!(text_value(1).len(), V_CHARS);
        assert_ne!(text_value(1), text_value(2));
        assert_eq!(ROW_BYTES, 100);
    }

    #[test]
    fn select_ids_do_not_repeat_within_the_table() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..TABLE_ROWS as u64 {
            let id = select_id(i);
            assert!((1..=TABLE_ROWS).contains(&id));
            assert!(seen.insert(id), "{id} repeated at {i}");
        }
    }

    #[test]
    fn phase_figures_find_the_longest_commit_and_gap() {
        // (start, latency) in ns: commits end at 10, 30, 90 (the gap of 60 ns) and 95.
        let timeline = [(0, 10), (20, 10), (40, 50), (85, 10), (200, 5)];
        let f = phase_figures("p", &timeline, 0, 100);
        assert_eq!(f.commits, 4);
        assert_eq!(f.max_us, 0.05);
        assert_eq!(f.max_at_ms, 40.0 / 1e6);
        assert_eq!(f.longest_gap_us, 0.06);
    }
}
