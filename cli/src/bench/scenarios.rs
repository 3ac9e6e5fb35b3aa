//! The seeds' experiments as scenarios. Each starts the target over with the engine
//! settings it needs, creates its tables through SQL, runs its configurations through the
//! driver, and returns its measurements, the seed's tables, its findings and its charts.
//!
//! | scenario | seed | what it varies |
//! |----------|------|----------------|
//! | commit-time | 001 | the commit mode, 1 session, N insert+commit iterations |
//! | commit-modes | 000 | the commit mode, 6 sessions updating random rows of 30,000, IO-bound and CPU-bound |
//! | group-commit | 003 | sessions 1..64 inserting ~2,000-byte rows, commit each |
//! | strands | 002 | log_parallelism at 32 sessions |
//! | redo-size | 004 | the redo size of one transaction, then its commit |
//! | batch-dml | 000 | rows per commit, at 1 and 6 sessions |
//! | client-practices | 004 | literals vs binds, fetch size, array insert (wire targets; `client_practices.rs`) |
//!
//! A configuration the target cannot run (a BATCH commit mode on PostgreSQL, a
//! log_parallelism a running server was not started with) is kept as a row marked not
//! applicable, with the reason, and left out of findings and charts.
//!
//! Every table is named `bench_*`: a wire target's reset drops them ([`TABLES`]), so the
//! names must not meet a user's own tables.

use std::borrow::Borrow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use db::Value;
use redo::sim::SimRng;
use serde_json::json;

use super::charts::{Chart, Kind, Series};
use super::driver::{self, timed, Length, MakeWork, Run, RunSpec, Txn, Work};
use super::output::{Figures, Measurement, RawSync, ScenarioReport, Table};
use super::progress::Progress;
use super::target::{Connection, EngineSetup, Flavour, Stmt, Target};
use super::vstats::{self, Delta, Moment};
use crate::common::{bytes_text, interrupt, opt, thousands};
use crate::engine_bench::workload::{new_histogram, Mode};

/// Every table a scenario creates (a wire target's reset drops them all).
pub const TABLES: &[&str] = &[
    "bench_ct",
    "bench_cm",
    "bench_gc",
    "bench_st",
    "bench_rs",
    "bench_bd",
    super::client_practices::CUSTOMERS,
    super::client_practices::INSERTED,
];

/// Every scenario, in the order `--list` and `all` use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    CommitTime,
    CommitModes,
    GroupCommit,
    Strands,
    RedoSize,
    BatchDml,
    ClientPractices,
    /// Every scenario, one after the other.
    All,
}

impl Scenario {
    pub const LISTED: [Scenario; 7] = [
        Scenario::CommitTime,
        Scenario::CommitModes,
        Scenario::GroupCommit,
        Scenario::Strands,
        Scenario::RedoSize,
        Scenario::BatchDml,
        Scenario::ClientPractices,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::CommitTime => "commit-time",
            Scenario::CommitModes => "commit-modes",
            Scenario::GroupCommit => "group-commit",
            Scenario::Strands => "strands",
            Scenario::RedoSize => "redo-size",
            Scenario::BatchDml => "batch-dml",
            Scenario::ClientPractices => "client-practices",
            Scenario::All => "all",
        }
    }

    pub fn seed(self) -> &'static str {
        match self {
            Scenario::CommitTime => "seed 001",
            Scenario::CommitModes | Scenario::BatchDml => "seed 000",
            Scenario::GroupCommit => "seed 003",
            Scenario::Strands => "seed 002",
            Scenario::RedoSize | Scenario::ClientPractices => "seed 004",
            Scenario::All => "all seeds",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Scenario::CommitTime => "Commit time: one session, insert + commit, in each commit mode",
            Scenario::CommitModes => "Commit modes: 6 sessions updating random rows, IO-bound and CPU-bound",
            Scenario::GroupCommit => "Group commit: insert + commit of ~2,000-byte rows, 1 to 64 sessions",
            Scenario::Strands => "Strands: log_parallelism 1 to 8 at 32 sessions",
            Scenario::RedoSize => "Redo size: commit time of one transaction of growing redo",
            Scenario::BatchDml => "Batch DML: rows per commit, at 1 and 6 sessions",
            Scenario::ClientPractices => "Client practices: bind variables, fetch size, array insert",
            Scenario::All => "Every scenario",
        }
    }

    /// The line `--list` prints.
    pub fn summary(self) -> &'static str {
        match self {
            Scenario::CommitTime => "1 session, 10,000 insert+commit per commit mode: p50 and avg commit time, log file sync per commit, each over the raw sync's p50 and mean",
            Scenario::CommitModes => "6 sessions, random updates of 30,000 rows, 4 commit modes, IO- and CPU-bound: Commit/s, CPU %, L, CPUt, Wt, Rt (the default)",
            Scenario::GroupCommit => "insert+commit of ~2,000-byte rows at 1, 2, 7, 32, 64 sessions: commits/s, redo MB/s, write size, commits per write",
            Scenario::Strands => "log_parallelism 1, 2, 4, 8 at 32 sessions: commits/s, requests per write, log file sync / parallel write",
            Scenario::RedoSize => "one transaction of 1 KiB to 16 MiB of redo, then commit: commit time vs redo size",
            Scenario::BatchDml => "commit every 1, 2, 10, 100 rows at 1 and 6 sessions: rows/s",
            Scenario::ClientPractices => "literals vs binds, fetch size 1-1000, row-at-a-time vs array insert: elapsed, round trips, hard parses (over the wire: the embedded target starts redodb's server for it)",
            Scenario::All => "every scenario above, one after the other",
        }
    }

    /// The figure a comparison of targets puts side by side.
    pub fn headline(self) -> Headline {
        let commits_per_sec = Headline {
            figure: "commits/s",
            higher_is_better: true,
            value: |f: &Figures| Some(f.commits_per_sec),
        };
        let commit_us = Headline {
            figure: "avg COMMIT us",
            higher_is_better: false,
            value: |f: &Figures| f.commit_avg_us,
        };
        match self {
            Scenario::CommitTime | Scenario::RedoSize => commit_us,
            Scenario::CommitModes | Scenario::GroupCommit | Scenario::Strands | Scenario::All => {
                commits_per_sec
            }
            Scenario::BatchDml => Headline {
                figure: "rows/s",
                higher_is_better: true,
                value: |f: &Figures| Some(f.rows_per_sec),
            },
            Scenario::ClientPractices => Headline {
                figure: "elapsed ms",
                higher_is_better: false,
                value: |f: &Figures| Some(f.seconds * 1000.0),
            },
        }
    }

    /// The configuration a measurement stands for, as a comparison names its row.
    pub fn configuration(self, f: &Figures) -> String {
        match self {
            Scenario::CommitTime => f.mode.clone(),
            Scenario::CommitModes => format!("{} {}", f.variant, f.mode),
            Scenario::GroupCommit => sessions_label(f.sessions),
            Scenario::Strands => format!("log_parallelism {}", f.strands),
            Scenario::RedoSize => bytes_text(f.redo_bytes_target.unwrap_or(0)),
            Scenario::BatchDml => {
                format!("{}, {} rows/commit", sessions_label(f.sessions), f.rows_per_commit)
            }
            Scenario::ClientPractices | Scenario::All => f.variant.clone(),
        }
    }

    /// Whether the scenario measures what a network client pays, so needs a server.
    pub fn needs_wire(self) -> bool {
        self == Scenario::ClientPractices
    }
}

/// A scenario's headline figure for comparisons: its name, which way is better, and how
/// to read it from a measurement.
pub struct Headline {
    pub figure: &'static str,
    pub higher_is_better: bool,
    pub value: fn(&Figures) -> Option<f64>,
}

/// The sizes and durations of a run (resolved from the flags).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Options {
    pub quick: bool,
    /// Measured seconds per configuration; None: each scenario's default.
    pub seconds: Option<f64>,
    pub warmup: Option<f64>,
    pub iterations: u64,
    pub sessions: usize,
    pub table_rows: u64,
    pub scan_rows: u64,
    pub session_counts: Vec<usize>,
    pub value_bytes: usize,
    pub strands: Vec<u32>,
    pub strand_sessions: usize,
    pub redo_sizes: Vec<usize>,
    pub repeats: u64,
    pub batch_rows: Vec<u64>,
    pub batch_sessions: Vec<usize>,
    /// client-practices: statements per bind test, rows per fetch and insert test.
    pub client_rows: u64,
}

impl Options {
    /// Measured window of a configuration: `--seconds`, else the scenario's default.
    fn window(&self, default_s: f64) -> Duration {
        Duration::from_secs_f64(self.seconds.unwrap_or(if self.quick { 0.3 } else { default_s }))
    }

    fn warmup(&self, window: Duration) -> Duration {
        match self.warmup {
            Some(w) => Duration::from_secs_f64(w),
            None if self.quick => Duration::from_millis(100),
            None => (window / 5).min(Duration::from_secs(1)),
        }
    }

    /// The window and warm-up of each timed configuration, `default_s` unless the flags
    /// say otherwise.
    fn timing(&self, default_s: f64) -> Timing {
        let window = self.window(default_s);
        Timing { window, warmup: self.warmup(window) }
    }
}

/// The measured window of a timed configuration and the warm-up before it.
#[derive(Clone, Copy)]
struct Timing {
    window: Duration,
    warmup: Duration,
}

impl Timing {
    /// `settings` (a JSON object) with the window and warm-up added.
    fn settings(self, mut settings: serde_json::Value) -> serde_json::Value {
        settings["seconds_per_configuration"] = json!(self.window.as_secs_f64());
        settings["warmup_seconds"] = json!(self.warmup.as_secs_f64());
        settings
    }

    fn spec(self, label: String, sessions: usize, mode: Mode) -> RunSpec {
        RunSpec {
            label,
            sessions,
            mode,
            warmup: Length::Time(self.warmup),
            measure: Length::Time(self.window),
        }
    }
}

/// What every scenario needs.
pub struct Ctx<'a> {
    pub target: &'a mut dyn Target,
    pub options: &'a Options,
    pub progress: &'a Progress,
    pub cpus: usize,
    /// The raw disk under the target's own sync method; None when redodb has no
    /// equivalent of it (PostgreSQL's fsync or open_sync).
    pub raw: Option<&'a RawSync>,
    pub base: EngineSetup,
}

impl Ctx<'_> {
    /// Starts the target over with `strands` and returns a monitor connection.
    pub(super) fn fresh(&mut self, strands: u32) -> Result<Box<dyn Connection>> {
        interrupt::check()?;
        let what = match self.target.flavour() {
            Flavour::Embedded => format!("creating a fresh database (log_parallelism {strands})"),
            _ => "dropping the scenarios' tables".to_string(),
        };
        self.progress.start_config(&what);
        self.target.reset(self.setup(strands))?;
        self.target.connect()
    }

    fn setup(&self, strands: u32) -> EngineSetup {
        EngineSetup { log_parallelism: strands, ..self.base }
    }

    /// Whether the target can run `mode` at `strands`; if not, adds the configuration to
    /// `rep` as not applicable (counted on the progress bar) and returns false.
    fn applicable(
        &self,
        rep: &mut ScenarioReport,
        variant: &str,
        mode: Mode,
        sessions: usize,
        strands: u32,
    ) -> bool {
        match self.target.not_applicable(mode, self.setup(strands)) {
            None => true,
            Some(why) => {
                let mode_name = mode.name();
                let what: Vec<&str> =
                    [rep.name, variant, &mode_name].into_iter().filter(|w| !w.is_empty()).collect();
                self.progress.finish_config(&format!(
                    "{}, log_parallelism {strands}: not applicable: {why}",
                    what.join(" ")
                ));
                rep.measurements.push(Measurement::not_applicable(
                    rep.name,
                    variant,
                    &mode.name(),
                    sessions,
                    strands,
                    why,
                ));
                false
            }
        }
    }

    fn run(&self, monitor: &mut dyn Connection, spec: &RunSpec, make: MakeWork) -> Result<Run> {
        let run = driver::run(&*self.target, monitor, spec, &make, self.progress, self.cpus)?;
        let line = format!(
            "{}: {} commits/s, {} rows/s, transaction p50 {:.0} us",
            spec.label,
            thousands(run.commits as f64 / run.seconds),
            thousands(run.rows as f64 / run.seconds),
            if run.latency_ns.is_empty() {
                0.0
            } else {
                run.latency_ns.value_at_quantile(0.5) as f64 / 1000.0
            }
        );
        self.progress.finish_config(&line);
        Ok(run)
    }

    /// Runs one configuration and adds its measurement to `rep`.
    fn measure(
        &self,
        rep: &mut ScenarioReport,
        monitor: &mut dyn Connection,
        spec: &RunSpec,
        make: MakeWork,
        variant: &str,
        rows_per_commit: u64,
    ) -> Result<()> {
        interrupt::check()?;
        let run = self.run(monitor, spec, make)?;
        rep.measurements.push(Measurement::from_run(rep.name, variant, run, self.strands(), rows_per_commit));
        Ok(())
    }

    fn strands(&self) -> u32 {
        self.target.log_parallelism()
    }

    /// The raw sync's mean as a chart's reference line, for charts of averages (a mean is
    /// drawn against a mean, never against a median).
    pub(super) fn raw_mean_reference(&self) -> Option<(String, f64)> {
        self.raw.map(|raw| (format!("raw 4 KiB sync mean ({})", raw.method), raw.mean_us))
    }
}

/// Runs one scenario.
pub fn run(ctx: &mut Ctx, scenario: Scenario) -> Result<ScenarioReport> {
    let started = Instant::now();
    let mut report = match scenario {
        Scenario::CommitTime => commit_time(ctx),
        Scenario::CommitModes => commit_modes(ctx),
        Scenario::GroupCommit => group_commit(ctx),
        Scenario::Strands => strands(ctx),
        Scenario::RedoSize => redo_size(ctx),
        Scenario::BatchDml => batch_dml(ctx),
        Scenario::ClientPractices => super::client_practices::run(ctx),
        Scenario::All => bail!("`all` is a list of scenarios, not one"),
    }
    .with_context(|| format!("scenario {}", scenario.name()))?;
    report.charts.retain(|c| c.has_data());
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

pub(super) fn report(scenario: Scenario, settings: serde_json::Value) -> ScenarioReport {
    ScenarioReport {
        name: scenario.name(),
        ran_on: None,
        title: scenario.title(),
        seed: scenario.seed(),
        settings,
        tables: Vec::new(),
        findings: Vec::new(),
        charts: Vec::new(),
        chart_files: Vec::new(),
        measurements: Vec::new(),
        seconds: 0.0,
    }
}

/// A row of `t` per measurement, its cells from the measurement's figures; a
/// configuration the target could not run keeps its first cell and reads `n/a`.
pub(super) fn figure_rows<M: Borrow<Measurement>>(
    t: &mut Table,
    ms: &[M],
    cells: impl Fn(&Figures) -> Vec<String>,
) {
    let mut noted = false;
    for m in ms {
        let m = m.borrow();
        let mut row = cells(&m.figures);
        if let Some(why) = &m.figures.not_applicable {
            for c in row.iter_mut().skip(1) {
                *c = "n/a".into();
            }
            if !noted {
                t.note(format!("n/a: {why}"));
                noted = true;
            }
        }
        t.row(row);
    }
}

/// The measurements the target ran (not the ones marked not applicable).
pub(super) fn ran(ms: &[Measurement]) -> Vec<&Measurement> {
    ms.iter().filter(|m| m.ran()).collect()
}

/// One value per measurement, for a chart's series.
fn per_measurement<M: Borrow<Measurement>>(ms: &[M], value: impl Fn(&Figures) -> f64) -> Vec<f64> {
    ms.iter().map(|m| value(&m.borrow().figures)).collect()
}

/// A count, or `-` when the target cannot give it.
pub(super) fn count(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |n| thousands(n as f64))
}

pub(super) fn chart(file: &str, title: &str, x: &str, y: &str, kind: Kind) -> Chart {
    Chart {
        file: file.into(),
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        kind,
        reference: None,
        caption: String::new(),
    }
}

/// A text value of `len` characters, different for every `tag`.
pub(super) fn value(tag: u64, len: usize) -> String {
    const FILLER: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut s = format!("{tag:016x}");
    s.truncate(len);
    let mut i = 0;
    while s.len() < len {
        s.push(FILLER[i % FILLER.len()] as char);
        i += 1;
    }
    s
}

pub(super) fn int(v: u64) -> Value {
    Value::Int(v as i64)
}

/// Runs `sql` on `conn` with no binds.
pub(super) fn sql(conn: &mut dyn Connection, text: &str) -> Result<()> {
    conn.execute(text, &[]).map(|_| ())
}

/// Loads `rows` rows `(id, 0, value)` into `table` with array inserts of 1,000 rows.
fn load(conn: &mut dyn Connection, table: &str, rows: u64, value_len: usize) -> Result<()> {
    let insert = conn.prepare(&format!("INSERT INTO {table} (id, n, v) VALUES ($1, $2, $3)"))?;
    let mut id = 1u64;
    while id <= rows {
        interrupt::check()?;
        let batch: Vec<Vec<Value>> = (id..=(id + 999).min(rows))
            .map(|i| vec![int(i), int(0), Value::Text(value(i, value_len))])
            .collect();
        id += batch.len() as u64;
        conn.execute_many(insert, &batch)?;
        sql(conn, "COMMIT")?;
    }
    Ok(())
}

/// A session's insert-then-commit loop: `rows_per_commit` inserts of `(id, session, v)`,
/// then COMMIT (timed on its own). Ids: `base` + session << 32 + a counter.
struct InsertWork {
    insert: Stmt,
    commit: Stmt,
    session: u64,
    base: u64,
    rows_per_commit: u64,
    value_len: usize,
}

impl Work for InsertWork {
    fn transaction(&mut self, conn: &mut dyn Connection, n: u64) -> Result<Txn> {
        for j in 0..self.rows_per_commit {
            let id = self.base + (self.session << 32) + n * self.rows_per_commit + j;
            let v = Value::Text(value(id, self.value_len));
            let r = conn.execute_prepared(self.insert, &[int(id), int(self.session), v])?;
            if r.rows_affected != 1 {
                bail!("insert of id {id} changed {} rows", r.rows_affected);
            }
        }
        let (_, commit_ns) = timed(|| conn.execute_prepared(self.commit, &[]))?;
        Ok(Txn { rows: self.rows_per_commit, commits: 1, commit_ns: Some(commit_ns) })
    }
}

/// Creates `table` for [`InsertWork`], its value of up to `v_chars` characters.
fn create_insert_table(conn: &mut dyn Connection, table: &str, v_chars: usize) -> Result<()> {
    sql(conn, &format!("CREATE TABLE {table} (id BIGINT PRIMARY KEY, session BIGINT, v VARCHAR({v_chars}))"))
}

fn insert_work(table: &'static str, base: u64, rows_per_commit: u64, value_len: usize) -> MakeWork {
    Arc::new(move |session, conn| {
        let insert = conn.prepare(&format!("INSERT INTO {table} (id, session, v) VALUES ($1, $2, $3)"))?;
        let commit = conn.prepare("COMMIT")?;
        Ok(Box::new(InsertWork { insert, commit, session: session as u64, base, rows_per_commit, value_len })
            as Box<dyn Work>)
    })
}

pub(super) fn sessions_label(n: usize) -> String {
    format!("{n} session{}", if n == 1 { "" } else { "s" })
}

// ---------------------------------------------------------------------------------------
// commit-time (seed 001)
// ---------------------------------------------------------------------------------------

fn commit_time(ctx: &mut Ctx) -> Result<ScenarioReport> {
    let o = ctx.options;
    let iterations = o.iterations;
    let warmup = (iterations / 20).max(20);
    let value_len = 100;
    let mut rep = report(
        Scenario::CommitTime,
        json!({ "sessions": 1, "iterations": iterations, "warmup_iterations": warmup, "value_chars": value_len,
                "statement": "INSERT INTO bench_ct (id, session, v) VALUES ($1, $2, $3); COMMIT",
                "raw_sync": ctx.raw }),
    );
    ctx.progress.scenario(rep.name, Mode::ALL.len() as u64);
    let mut monitor = ctx.fresh(1)?;
    create_insert_table(&mut *monitor, "bench_ct", 200)?;
    for (k, mode) in Mode::ALL.into_iter().enumerate() {
        if !ctx.applicable(&mut rep, "", mode, 1, 1) {
            continue;
        }
        let spec = RunSpec {
            label: format!("commit-time {}", mode.name()),
            sessions: 1,
            mode,
            warmup: Length::Transactions(warmup),
            measure: Length::Transactions(iterations),
        };
        let work = insert_work("bench_ct", (k as u64 + 1) << 44, 1, value_len);
        ctx.measure(&mut rep, &mut *monitor, &spec, work, "", 1)?;
    }
    // Each ratio to the raw sync divides a statistic by the same statistic of the raw
    // sync (p50 by p50, mean by mean): a mean commit, pulled up by its slow tail, over a
    // raw median would overstate what the commit path adds.
    let raw = ctx.raw;
    let mut t = Table::new(
        format!(
            "COMMIT TIME: 1 session, {} x (insert one row; COMMIT) per mode",
            thousands(iterations as f64)
        ),
        &[
            "Setting",
            "Commits",
            "p50 commit us",
            "Avg commit us",
            "p99 commit us",
            "log file sync waits",
            "Waits/commit",
            "Avg log file sync us",
            "p50 / raw p50",
            "Avg / raw avg",
        ],
    );
    figure_rows(&mut t, &rep.measurements, |f| {
        vec![
            f.mode.clone(),
            count(f.user_commits),
            opt(f.commit_p50_us, 1),
            opt(f.commit_avg_us, 1),
            opt(f.commit_p99_us, 1),
            count(f.log_file_sync_waits),
            opt(waits_per_commit(f), 2),
            opt(f.log_file_sync_avg_us, 1),
            opt(raw.and_then(|r| Some(f.commit_p50_us? / r.p50_us)), 2),
            opt(raw.and_then(|r| Some(f.commit_avg_us? / r.mean_us)), 2),
        ]
    });
    t.note(match raw {
        Some(raw) => format!(
            "raw sync = 4 KiB write+sync with {} (the target's log sync method), p50 {:.1} us, mean {:.1} us, measured in this run; seed 001: ~0.46 ms per sync on its SAN",
            raw.method, raw.p50_us, raw.mean_us
        ),
        None => format!(
            "no raw sync to compare with: redodb's probe has no equivalent of how {} syncs its log",
            ctx.target.label()
        ),
    });
    rep.tables.push(t);
    let done = ran(&rep.measurements);
    for m in &done {
        let f = &m.figures;
        let (Some(p50), Some(avg)) = (f.commit_p50_us, f.commit_avg_us) else { continue };
        let waits = match (f.log_file_sync_waits, f.user_commits) {
            (Some(w), Some(c)) => {
                format!("{} log file sync waits for {} commits, ", thousands(w as f64), thousands(c as f64))
            }
            _ => format!("{} commits, ", thousands(f.commits as f64)),
        };
        rep.findings.push(match raw {
            Some(raw) => format!(
                "{}: {waits}commit p50 {p50:.1} us = {:.2}x the raw sync's p50, mean {avg:.1} us = {:.2}x its mean.",
                f.mode,
                p50 / raw.p50_us,
                avg / raw.mean_us
            ),
            None => format!("{}: {waits}commit p50 {p50:.1} us, mean {avg:.1} us.", f.mode),
        });
    }
    let modes: Vec<String> = done.iter().map(|m| m.figures.mode.clone()).collect();
    let mut c = chart(
        "commit-time",
        "Average COMMIT time by commit mode (1 session)",
        "commit mode",
        "microseconds",
        Kind::Bars {
            categories: modes,
            series: vec![Series::new(
                "avg COMMIT us",
                per_measurement(&done, |f| f.commit_avg_us.unwrap_or(0.0)),
            )],
        },
    );
    c.reference = ctx.raw_mean_reference();
    rep.charts.push(c);
    rep.charts.push(sync_histogram(
        "commit-time-log-file-sync",
        "log file sync histogram (1 session)",
        &rep.measurements,
    ));
    Ok(rep)
}

/// `log file sync` waits per user commit, when the target has both.
fn waits_per_commit(f: &Figures) -> Option<f64> {
    Some(f.log_file_sync_waits? as f64 / f.user_commits?.max(1) as f64)
}

/// Bars of the `log file sync` waits per histogram bucket, one series per measurement
/// that waited.
fn sync_histogram(file: &str, title: &str, ms: &[Measurement]) -> Chart {
    let waited: Vec<&Measurement> =
        ms.iter().filter(|m| !m.views.log_file_sync_histogram.is_empty()).collect();
    let mut buckets: Vec<u64> =
        waited.iter().flat_map(|m| m.views.log_file_sync_histogram.keys().copied()).collect();
    buckets.sort_unstable();
    buckets.dedup();
    let categories = buckets.iter().map(|b| format!("<{}", us_text(*b))).collect();
    let series = waited
        .iter()
        .map(|m| {
            let name = if m.figures.variant.is_empty() {
                m.figures.mode.clone()
            } else {
                format!("{} {}", m.figures.variant, m.figures.mode)
            };
            let values = buckets
                .iter()
                .map(|b| m.views.log_file_sync_histogram.get(b).copied().unwrap_or(0) as f64)
                .collect();
            Series::new(name, values)
        })
        .collect();
    chart(file, title, "wait time (bucket upper limit)", "waits", Kind::Bars { categories, series })
}

fn us_text(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{}s", us / 1_000_000)
    } else if us >= 1000 {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

// ---------------------------------------------------------------------------------------
// commit-modes (seed 000)
// ---------------------------------------------------------------------------------------

/// One session of seed 000's load: a random row of its own slice of the table updated,
/// after a range scan in the CPU-bound variant, then COMMIT.
struct UpdateWork {
    update: Stmt,
    scan: Option<Stmt>,
    commit: Stmt,
    rng: SimRng,
    first: u64,
    slice: u64,
    table_rows: u64,
    scan_rows: u64,
    session: u64,
}

impl Work for UpdateWork {
    fn transaction(&mut self, conn: &mut dyn Connection, n: u64) -> Result<Txn> {
        if let Some(scan) = self.scan {
            let from = 1 + self.rng.upto(self.table_rows - self.scan_rows);
            let rows = conn.execute_prepared(scan, &[int(from), int(from + self.scan_rows - 1)])?.rows;
            if rows.len() != 1 {
                bail!("the range scan returned {} rows, not 1", rows.len());
            }
        }
        let id = self.first + self.rng.upto(self.slice - 1);
        let v = Value::Text(value((self.session << 40) | n, 80));
        let r = conn.execute_prepared(self.update, &[int(id), v])?;
        if r.rows_affected != 1 {
            bail!("update of id {id} changed {} rows", r.rows_affected);
        }
        let (_, commit_ns) = timed(|| conn.execute_prepared(self.commit, &[]))?;
        Ok(Txn { rows: 1, commits: 1, commit_ns: Some(commit_ns) })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    Io,
    Cpu,
}

impl Bound {
    fn name(self) -> &'static str {
        match self {
            Bound::Io => "io-bound",
            Bound::Cpu => "cpu-bound",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Bound::Io => "IO-bound",
            Bound::Cpu => "CPU-bound",
        }
    }
}

fn commit_modes(ctx: &mut Ctx) -> Result<ScenarioReport> {
    let o = ctx.options;
    let (sessions, rows, scan_rows) = (o.sessions, o.table_rows, o.scan_rows);
    let timing = o.timing(5.0);
    let mut rep = report(
        Scenario::CommitModes,
        timing.settings(json!({ "sessions": sessions, "table_rows": rows, "scan_rows": scan_rows,
                "io_bound": "UPDATE bench_cm SET n = n + 1, v = $2 WHERE id = $1; COMMIT",
                "cpu_bound": "SELECT sum(n) FROM bench_cm WHERE id BETWEEN $1 AND $2; UPDATE ...; COMMIT" })),
    );
    ctx.progress.scenario(rep.name, 2 * Mode::ALL.len() as u64);
    let mut monitor = ctx.fresh(1)?;
    ctx.progress.start_config(&format!("commit-modes: loading {} rows", thousands(rows as f64)));
    sql(&mut *monitor, "CREATE TABLE bench_cm (id BIGINT PRIMARY KEY, n BIGINT, v VARCHAR(100))")?;
    load(&mut *monitor, "bench_cm", rows, 80)?;
    let slice = rows / sessions as u64;
    for bound in [Bound::Io, Bound::Cpu] {
        for mode in Mode::ALL {
            if !ctx.applicable(&mut rep, bound.name(), mode, sessions, 1) {
                continue;
            }
            let label =
                format!("commit-modes {} {}, {}", bound.name(), mode.name(), sessions_label(sessions));
            let spec = timing.spec(label, sessions, mode);
            let make: MakeWork = Arc::new(move |session, conn| {
                let update = conn.prepare("UPDATE bench_cm SET n = n + 1, v = $2 WHERE id = $1")?;
                let scan = match bound {
                    Bound::Io => None,
                    Bound::Cpu => {
                        Some(conn.prepare("SELECT sum(n) FROM bench_cm WHERE id BETWEEN $1 AND $2")?)
                    }
                };
                let commit = conn.prepare("COMMIT")?;
                Ok(Box::new(UpdateWork {
                    update,
                    scan,
                    commit,
                    rng: SimRng::new(0x5eed_0000 + session as u64),
                    first: 1 + session as u64 * slice,
                    slice,
                    table_rows: rows,
                    scan_rows,
                    session: session as u64,
                }) as Box<dyn Work>)
            });
            ctx.measure(&mut rep, &mut *monitor, &spec, make, bound.name(), 1)?;
        }
    }
    for bound in [Bound::Io, Bound::Cpu] {
        let ms: Vec<&Measurement> =
            rep.measurements.iter().filter(|m| m.figures.variant == bound.name()).collect();
        let mut a = Table::new(
            format!(
                "COMMIT MODES, {}: {} sessions, commit per update (seed 000's first table)",
                bound.title(),
                sessions
            ),
            &["Setting", "Commit/s", "CPU %", "log file sync %", "log file parallel write %"],
        );
        let mut b = Table::new(
            format!("COMMIT MODES, {}: unit of work per commit (seed 000's second table)", bound.title()),
            &["Setting", "L (commits/s)", "CPUt ms", "Wt ms", "Rt ms"],
        );
        figure_rows(&mut a, &ms, |f| {
            vec![
                f.mode.clone(),
                thousands(f.commits_per_sec),
                opt(f.machine_cpu_pct, 1),
                opt(f.log_file_sync_pct, 1),
                opt(f.log_file_parallel_write_pct, 1),
            ]
        });
        figure_rows(&mut b, &ms, |f| {
            vec![
                f.mode.clone(),
                f.l_commits_per_sec.map_or_else(|| "-".into(), thousands),
                opt(f.cpu_t_ms, 4),
                opt(f.w_t_ms, 4),
                opt(f.r_t_ms, 4),
            ]
        });
        a.note("CPU % = busy share of all CPUs (/proc/stat); wait % = share of all non-idle wait time (v$system_event)");
        b.note("L = user commits/s; CPUt = (DB CPU + background cpu time) / commit; Wt = sessions' non-idle waits / commit; Rt = CPUt + Wt");
        rep.tables.push(a);
        rep.tables.push(b);
        let ms: Vec<&Measurement> = ms.into_iter().filter(|m| m.ran()).collect();
        let rate = |name: &str| ms.iter().find(|m| m.figures.mode == name).map(|m| m.figures.commits_per_sec);
        if let (Some(wait), Some(nowait)) = (rate("WAIT/IMMEDIATE"), rate("NOWAIT/IMMEDIATE")) {
            let best = ms.iter().map(|m| m.figures.commits_per_sec).fold(0.0, f64::max);
            rep.findings.push(format!(
                "{}: NOWAIT/IMMEDIATE commits {:.2}x as fast as WAIT/IMMEDIATE ({} vs {} commits/s; best mode {:.2}x). Seed 000: {}.",
                bound.title(),
                nowait / wait,
                thousands(nowait),
                thousands(wait),
                best / wait,
                match bound {
                    Bound::Io => "about 25x when IO-bound",
                    Bound::Cpu => "about 2% when CPU-bound",
                }
            ));
        }
        let modes: Vec<String> = ms.iter().map(|m| m.figures.mode.clone()).collect();
        rep.charts.push(chart(
            &format!("commit-modes-{}-commits", bound.name()),
            &format!("{}: commits/s by commit mode ({} sessions)", bound.title(), sessions),
            "commit mode",
            "commits/s",
            Kind::Bars {
                categories: modes.clone(),
                series: vec![Series::new("commits/s", per_measurement(&ms, |f| f.commits_per_sec))],
            },
        ));
        rep.charts.push(chart(
            &format!("commit-modes-{}-rt", bound.name()),
            &format!("{}: response time per commit, Rt = CPUt + Wt", bound.title()),
            "commit mode",
            "milliseconds per commit",
            Kind::Bars {
                categories: modes,
                series: vec![
                    Series::new("CPUt", per_measurement(&ms, |f| f.cpu_t_ms.unwrap_or(f64::NAN))),
                    Series::new("Wt", per_measurement(&ms, |f| f.w_t_ms.unwrap_or(f64::NAN))),
                    Series::new("Rt", per_measurement(&ms, |f| f.r_t_ms.unwrap_or(f64::NAN))),
                ],
            },
        ));
    }
    let io: Vec<Measurement> =
        rep.measurements.iter().filter(|m| m.figures.variant == "io-bound" && m.ran()).cloned().collect();
    rep.charts.push(sync_histogram(
        "commit-modes-log-file-sync",
        &format!("IO-bound: log file sync histogram ({sessions} sessions)"),
        &io,
    ));
    Ok(rep)
}

// ---------------------------------------------------------------------------------------
// group-commit (seed 003)
// ---------------------------------------------------------------------------------------

fn group_commit(ctx: &mut Ctx) -> Result<ScenarioReport> {
    let o = ctx.options;
    let counts = o.session_counts.clone();
    let value_len = o.value_bytes;
    let timing = o.timing(3.0);
    let mut rep = report(
        Scenario::GroupCommit,
        timing.settings(json!({ "sessions": counts, "value_bytes": value_len, "mode": "WAIT/IMMEDIATE",
                "statement": "INSERT INTO bench_gc (id, session, v) VALUES ($1, $2, $3); COMMIT" })),
    );
    ctx.progress.scenario(rep.name, counts.len() as u64);
    let mut monitor = ctx.fresh(1)?;
    create_insert_table(&mut *monitor, "bench_gc", value_len)?;
    for (k, &sessions) in counts.iter().enumerate() {
        let spec =
            timing.spec(format!("group-commit {}", sessions_label(sessions)), sessions, Mode::WAIT_IMMEDIATE);
        let work = insert_work("bench_gc", (k as u64 + 1) << 44, 1, value_len);
        ctx.measure(&mut rep, &mut *monitor, &spec, work, "", 1)?;
        // Each configuration starts with an empty table, as seed 003's loop truncates.
        sql(&mut *monitor, "TRUNCATE bench_gc")?;
    }
    let mut t = Table::new(
        format!("GROUP COMMIT: insert one {value_len}-byte row + COMMIT, WAIT/IMMEDIATE (seed 003's iostat and AWR view)"),
        &["Sessions", "Commits/s", "Redo MB/s", "Avg write KiB", "Commits/write", "Avg log file sync us", "Avg log file parallel write us", "CPU %"],
    );
    figure_rows(&mut t, &rep.measurements, |f| {
        vec![
            f.sessions.to_string(),
            thousands(f.commits_per_sec),
            opt(f.redo_mb_per_sec, 1),
            opt(f.avg_write_bytes.map(|b| b / 1024.0), 1),
            opt(f.commits_per_write, 1),
            opt(f.log_file_sync_avg_us, 1),
            opt(f.log_file_parallel_write_avg_us, 1),
            opt(f.machine_cpu_pct, 1),
        ]
    });
    t.note("seed 003: from 2 to 7 sessions the average write request grew ~10x (avgrq-sz 64 -> 650 sectors) and redo MB/s doubled");
    rep.tables.push(t);
    let by = |s: usize| rep.measurements.iter().find(|m| m.figures.sessions == s).map(|m| &m.figures);
    let first = rep.measurements.first().map(|m| &m.figures);
    let last = rep.measurements.last().map(|m| &m.figures);
    if let (Some(a), Some(b)) = (by(2).or(first), by(7).or(last)) {
        if a.sessions != b.sessions {
            rep.findings.push(format!(
                "From {} to {} sessions the average write grew {}x ({} -> {} commits per write) and redo MB/s {}x.",
                a.sessions,
                b.sessions,
                opt(b.avg_write_bytes.zip(a.avg_write_bytes).map(|(b, a)| b / a), 1),
                opt(a.commits_per_write, 1),
                opt(b.commits_per_write, 1),
                opt(b.redo_mb_per_sec.zip(a.redo_mb_per_sec).map(|(b, a)| b / a), 1)
            ));
        }
    }
    if let Some(best) = rep
        .measurements
        .iter()
        .map(|m| &m.figures)
        .max_by(|a, b| a.commits_per_sec.total_cmp(&b.commits_per_sec))
    {
        rep.findings.push(format!(
            "Most commits/s at {} sessions: {} ({} MB/s of redo, {} commits per write).",
            best.sessions,
            thousands(best.commits_per_sec),
            opt(best.redo_mb_per_sec, 1),
            opt(best.commits_per_write, 1)
        ));
    }
    let points = |f: &dyn Fn(&Measurement) -> Option<f64>| -> Vec<(f64, f64)> {
        rep.measurements.iter().filter_map(|m| f(m).map(|v| (m.figures.sessions as f64, v))).collect()
    };
    let log_x = counts.len() > 2;
    rep.charts.push(chart(
        "group-commit-commits",
        "Group commit: commits/s by sessions",
        "sessions",
        "commits/s",
        Kind::Lines {
            series: vec![Series::new("commits/s", points(&|m| Some(m.figures.commits_per_sec)))],
            log_x,
            log_y: false,
        },
    ));
    rep.charts.push(chart(
        "group-commit-writes",
        "Group commit: what one write carries",
        "sessions",
        "per write",
        Kind::Lines {
            series: vec![
                Series::new("commits per write", points(&|m| m.figures.commits_per_write)),
                Series::new("KiB per write", points(&|m| m.figures.avg_write_bytes.map(|b| b / 1024.0))),
            ],
            log_x,
            log_y: false,
        },
    ));
    let mut waits = chart(
        "group-commit-waits",
        "Group commit: average log file sync and log file parallel write",
        "sessions",
        "microseconds",
        Kind::Lines {
            series: vec![
                Series::new("log file sync", points(&|m| m.figures.log_file_sync_avg_us)),
                Series::new("log file parallel write", points(&|m| m.figures.log_file_parallel_write_avg_us)),
            ],
            log_x,
            log_y: false,
        },
    );
    waits.reference = ctx.raw_mean_reference();
    rep.charts.push(waits);
    Ok(rep)
}

// ---------------------------------------------------------------------------------------
// strands (seed 002)
// ---------------------------------------------------------------------------------------

fn strands(ctx: &mut Ctx) -> Result<ScenarioReport> {
    let o = ctx.options;
    let list = o.strands.clone();
    let sessions = o.strand_sessions;
    let timing = o.timing(3.0);
    let mut rep = report(
        Scenario::Strands,
        timing.settings(
            json!({ "log_parallelism": list, "sessions": sessions, "mode": "WAIT/IMMEDIATE", "value_chars": 100 }),
        ),
    );
    ctx.progress.scenario(rep.name, list.len() as u64);
    for &strands in &list {
        if !ctx.applicable(&mut rep, "", Mode::WAIT_IMMEDIATE, sessions, strands) {
            continue;
        }
        let mut monitor = ctx.fresh(strands)?;
        create_insert_table(&mut *monitor, "bench_st", 200)?;
        let label = format!("strands: log_parallelism {strands}, {}", sessions_label(sessions));
        let spec = timing.spec(label, sessions, Mode::WAIT_IMMEDIATE);
        // The fresh database runs with `strands`, which the measurement records.
        ctx.measure(&mut rep, &mut *monitor, &spec, insert_work("bench_st", 1 << 44, 1, 100), "", 1)?;
    }
    let mut t = Table::new(
        format!(
            "STRANDS: {sessions} sessions, insert + COMMIT, WAIT/IMMEDIATE, one database per log_parallelism"
        ),
        &[
            "Strands",
            "Commits/s",
            "Requests/write",
            "Avg log file sync us",
            "Avg log file parallel write us",
            "Sync / write",
            "CPU %",
        ],
    );
    figure_rows(&mut t, &rep.measurements, |f| {
        vec![
            f.strands.to_string(),
            thousands(f.commits_per_sec),
            opt(f.requests_per_write, 2),
            opt(f.log_file_sync_avg_us, 1),
            opt(f.log_file_parallel_write_avg_us, 1),
            opt(f.sync_to_write_ratio, 2),
            opt(f.machine_cpu_pct, 1),
        ]
    });
    t.note("seed 002: Oracle writes each strand separately (members x strands requests per write); 3x slower commits, and avg log file sync / avg log file parallel write of 2.5-3 or more");
    rep.tables.push(t);
    let done = ran(&rep.measurements);
    if let (Some(one), Some(most)) = (done.first(), done.last()) {
        let (a, b) = (&one.figures, &most.figures);
        rep.findings.push(format!(
            "log_parallelism {} vs {}: {:.2}x the commits/s; {} vs {} write requests per write (redodb writes all strands in one request per member).",
            b.strands,
            a.strands,
            b.commits_per_sec / a.commits_per_sec,
            opt(b.requests_per_write, 2),
            opt(a.requests_per_write, 2)
        ));
    }
    let categories: Vec<String> = done.iter().map(|m| format!("{} strands", m.figures.strands)).collect();
    rep.charts.push(chart(
        "strands-commits",
        &format!("Strands: commits/s by log_parallelism ({sessions} sessions)"),
        "log_parallelism",
        "commits/s",
        Kind::Bars {
            categories: categories.clone(),
            series: vec![Series::new("commits/s", per_measurement(&done, |f| f.commits_per_sec))],
        },
    ));
    rep.charts.push(chart(
        "strands-diagnosis",
        "Strands: seed 002's diagnosis (requests per write; sync / write)",
        "log_parallelism",
        "ratio",
        Kind::Bars {
            categories,
            series: vec![
                Series::new(
                    "requests per write",
                    per_measurement(&done, |f| f.requests_per_write.unwrap_or(f64::NAN)),
                ),
                Series::new(
                    "avg log file sync / avg log file parallel write",
                    per_measurement(&done, |f| f.sync_to_write_ratio.unwrap_or(f64::NAN)),
                ),
            ],
        },
    ));
    Ok(rep)
}

// ---------------------------------------------------------------------------------------
// redo-size (seed 004)
// ---------------------------------------------------------------------------------------

/// Redo writes per commit, when the target counts them.
fn writes_per_commit(f: &Figures) -> Option<f64> {
    Some(f.redo_writes? as f64 / f.commits.max(1) as f64)
}

/// Characters of a row's value in the redo-size transactions.
const REDO_ROW_CHARS: usize = 2000;

fn redo_size(ctx: &mut Ctx) -> Result<ScenarioReport> {
    let o = ctx.options;
    let sizes = o.redo_sizes.clone();
    let repeats = o.repeats;
    let mut rep = report(
        Scenario::RedoSize,
        json!({ "redo_sizes": sizes, "repeats": repeats, "row_chars": REDO_ROW_CHARS, "mode": "WAIT/IMMEDIATE",
                "transaction": "array insert of rows up to the size, then COMMIT (timed alone), then TRUNCATE" }),
    );
    ctx.progress.scenario(rep.name, sizes.len() as u64);
    let mut monitor = ctx.fresh(1)?;
    sql(
        &mut *monitor,
        &format!("CREATE TABLE bench_rs (id BIGINT PRIMARY KEY, n BIGINT, v VARCHAR({REDO_ROW_CHARS}))"),
    )?;
    // PostgreSQL's WAL counts of a session are flushed when it goes idle (at most once a
    // second) or disconnects, so they cannot be read around one commit of a session that
    // stays connected: only the commit times are measured there.
    let flavour = ctx.target.flavour();
    let mut conn = ctx.target.connect()?;
    conn.set_commit_mode(Mode::WAIT_IMMEDIATE)?;
    let insert = conn.prepare("INSERT INTO bench_rs (id, n, v) VALUES ($1, $2, $3)")?;
    let commit = conn.prepare("COMMIT")?;
    // Redo bytes of a row beyond its value: record header, keys, encoding (measured below
    // from the first transaction would be circular; an estimate is enough to size rows).
    let overhead = 64usize;
    let mut id = 0u64;
    for &size in &sizes {
        let label = format!("redo-size {}", bytes_text(size as u64));
        ctx.progress.start_config(&label);
        let row_chars = REDO_ROW_CHARS.min(size.saturating_sub(overhead).max(1));
        let rows = (size / (row_chars + overhead)).max(1) as u64;
        let mut latency_ns = new_histogram();
        let mut delta = Delta::default();
        let mut spent = Duration::ZERO;
        for r in 0..repeats {
            let batch: Vec<Vec<Value>> = (0..rows)
                .map(|_| {
                    id += 1;
                    vec![int(id), int(r), Value::Text(value(id, row_chars))]
                })
                .collect();
            for chunk in batch.chunks(1000) {
                conn.execute_many(insert, chunk)?;
            }
            interrupt::check()?;
            let before =
                flavour.has_v_views().then(|| vstats::sample(&mut *monitor, flavour, Moment::Before));
            let (_, ns) = timed(|| conn.execute_prepared(commit, &[]))?;
            let window = match before {
                Some(before) => Delta::between(
                    &before?,
                    &vstats::sample(&mut *monitor, flavour, Moment::After)?,
                    ctx.cpus,
                ),
                None => Delta::unavailable(ns as f64 / 1e9),
            };
            latency_ns.saturating_record(ns);
            spent += Duration::from_nanos(ns);
            delta.add(&window);
            sql(&mut *conn, "TRUNCATE bench_rs")?;
        }
        let run = Run {
            sessions: 1,
            mode: Mode::WAIT_IMMEDIATE,
            seconds: spent.as_secs_f64(),
            transactions: repeats,
            commits: repeats,
            rows: rows * repeats,
            warmup_commits: 0,
            commit_ns: latency_ns.clone(),
            latency_ns,
            delta,
        };
        let mut m = Measurement::from_run(rep.name, "", run, ctx.strands(), rows);
        m.figures.redo_bytes_target = Some(size as u64);
        ctx.progress.finish_config(&format!(
            "{label}: commit avg {:.0} us, {} redo writes per commit",
            m.figures.commit_avg_us.unwrap_or(0.0),
            opt(writes_per_commit(&m.figures), 1)
        ));
        rep.measurements.push(m);
    }
    let mut t = Table::new(
        format!("REDO SIZE: one transaction then COMMIT (WAIT/IMMEDIATE), {repeats} times per size"),
        &[
            "Redo size",
            "Redo/commit (v$)",
            "Avg commit us",
            "p50 commit us",
            "Max commit us",
            "Redo writes/commit",
            "Avg write KiB",
            "Avg log file parallel write us",
        ],
    );
    figure_rows(&mut t, &rep.measurements, |f| {
        vec![
            bytes_text(f.redo_bytes_target.unwrap_or(0)),
            opt(f.redo_bytes_per_commit, 0),
            opt(f.commit_avg_us, 0),
            opt(f.commit_p50_us, 0),
            format!("{:.0}", f.txn_max_us),
            opt(writes_per_commit(f), 1),
            opt(f.avg_write_bytes.map(|b| b / 1024.0), 1),
            opt(f.log_file_parallel_write_avg_us, 0),
        ]
    });
    t.note("seed 004: sync time grows with redo size, with a break near 1 MB, the size at which the log buffer is flushed in the background anyway");
    t.note("redodb copies a transaction's private redo at its commit and writes at most 1 MiB per request, so past 1 MiB a commit takes several writes");
    rep.tables.push(t);
    let small = rep.measurements.first().map(|m| &m.figures);
    let large = rep.measurements.last().map(|m| &m.figures);
    if let (Some(a), Some(b)) = (small, large) {
        rep.findings.push(format!(
            "From {} to {} of redo the commit time grows {:.1}x ({:.0} us -> {:.0} us); redo writes per commit {} -> {}.",
            bytes_text(a.redo_bytes_target.unwrap_or(0)),
            bytes_text(b.redo_bytes_target.unwrap_or(0)),
            b.commit_avg_us.unwrap_or(0.0) / a.commit_avg_us.unwrap_or(f64::NAN),
            a.commit_avg_us.unwrap_or(0.0),
            b.commit_avg_us.unwrap_or(0.0),
            opt(writes_per_commit(a), 1),
            opt(writes_per_commit(b), 1),
        ));
    }
    let mut c = chart(
        "redo-size",
        "Redo size vs commit time (1 session, WAIT/IMMEDIATE)",
        "redo bytes per transaction",
        "microseconds",
        Kind::Lines {
            series: vec![
                Series::new(
                    "avg COMMIT",
                    rep.measurements
                        .iter()
                        .filter_map(|m| {
                            let redo = m
                                .figures
                                .redo_bytes_per_commit
                                .or(m.figures.redo_bytes_target.map(|b| b as f64));
                            Some((redo?, m.figures.commit_avg_us?))
                        })
                        .collect(),
                ),
                Series::new(
                    "avg log file sync",
                    rep.measurements
                        .iter()
                        .filter_map(|m| {
                            Some((m.figures.redo_bytes_per_commit?, m.figures.log_file_sync_avg_us?))
                        })
                        .collect(),
                ),
            ],
            log_x: true,
            log_y: true,
        },
    );
    c.reference = ctx.raw_mean_reference();
    rep.charts.push(c);
    Ok(rep)
}

// ---------------------------------------------------------------------------------------
// batch-dml (seed 000's first advice)
// ---------------------------------------------------------------------------------------

fn batch_dml(ctx: &mut Ctx) -> Result<ScenarioReport> {
    let o = ctx.options;
    let (rows_list, sessions_list) = (o.batch_rows.clone(), o.batch_sessions.clone());
    let timing = o.timing(2.0);
    let mut rep = report(
        Scenario::BatchDml,
        timing.settings(
            json!({ "rows_per_commit": rows_list, "sessions": sessions_list, "mode": "WAIT/IMMEDIATE",
                "value_chars": 100 }),
        ),
    );
    ctx.progress.scenario(rep.name, (rows_list.len() * sessions_list.len()) as u64);
    let mut monitor = ctx.fresh(1)?;
    create_insert_table(&mut *monitor, "bench_bd", 200)?;
    let mut k = 0u64;
    for &sessions in &sessions_list {
        for &rows in &rows_list {
            k += 1;
            let label = format!("batch-dml {rows} rows per commit, {}", sessions_label(sessions));
            let spec = timing.spec(label, sessions, Mode::WAIT_IMMEDIATE);
            ctx.measure(
                &mut rep,
                &mut *monitor,
                &spec,
                insert_work("bench_bd", k << 44, rows, 100),
                "",
                rows,
            )?;
            sql(&mut *monitor, "TRUNCATE bench_bd")?;
        }
    }
    let mut t = Table::new(
        "BATCH DML: insert N rows, then COMMIT (WAIT/IMMEDIATE)",
        &[
            "Sessions",
            "Rows/commit",
            "Rows/s",
            "Commits/s",
            "Avg log file sync us",
            "Rows/s vs 1 row/commit",
            "CPU %",
        ],
    );
    figure_rows(&mut t, &rep.measurements, |f| {
        let base = rep
            .measurements
            .iter()
            .find(|b| b.figures.sessions == f.sessions && b.figures.rows_per_commit == rows_list[0])
            .map(|b| b.figures.rows_per_sec);
        vec![
            f.sessions.to_string(),
            f.rows_per_commit.to_string(),
            thousands(f.rows_per_sec),
            thousands(f.commits_per_sec),
            opt(f.log_file_sync_avg_us, 1),
            opt(base.map(|b| f.rows_per_sec / b), 2),
            opt(f.machine_cpu_pct, 1),
        ]
    });
    t.note("seed 000: \"99% of the log file sync issues are the result of a commit after each DML statement ... batching (even a batch of two!) makes a massive difference\"");
    rep.tables.push(t);
    for &sessions in &sessions_list {
        let ms: Vec<&Measurement> =
            rep.measurements.iter().filter(|m| m.figures.sessions == sessions).collect();
        if let (Some(a), Some(b)) = (ms.first(), ms.last()) {
            rep.findings.push(format!(
                "{}: {} rows per commit move {:.1}x the rows/s of {} ({} vs {}).",
                sessions_label(sessions),
                b.figures.rows_per_commit,
                b.figures.rows_per_sec / a.figures.rows_per_sec,
                a.figures.rows_per_commit,
                thousands(b.figures.rows_per_sec),
                thousands(a.figures.rows_per_sec)
            ));
        }
    }
    let series = sessions_list
        .iter()
        .map(|&s| {
            Series::new(
                sessions_label(s),
                rep.measurements
                    .iter()
                    .filter(|m| m.figures.sessions == s)
                    .map(|m| (m.figures.rows_per_commit as f64, m.figures.rows_per_sec))
                    .collect(),
            )
        })
        .collect();
    rep.charts.push(chart(
        "batch-dml",
        "Batch DML: rows/s by rows per commit",
        "rows per commit",
        "rows/s",
        Kind::Lines { series, log_x: rows_list.len() > 2, log_y: false },
    ));
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_have_their_length_and_differ() {
        assert_eq!(value(1, 100).len(), 100);
        assert_eq!(value(1, 4).len(), 4);
        assert_eq!(value(7, 2000).len(), 2000);
        assert_ne!(value(1, 100), value(2, 100));
    }

    #[test]
    fn every_listed_scenario_has_a_line() {
        for s in Scenario::LISTED {
            assert!(!s.summary().is_empty());
            assert!(s.name().chars().all(|c| c.is_ascii_lowercase() || c == '-'));
        }
        assert!(Scenario::ClientPractices.needs_wire());
        assert!(!Scenario::CommitTime.needs_wire());
    }
}
