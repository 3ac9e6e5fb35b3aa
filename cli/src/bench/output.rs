//! What a bench run produces: one [`Measurement`] per configuration (the figures the
//! scenarios derive, flat, plus every `v$` difference), the scenarios' tables for the
//! terminal and the HTML page, and the JSON and CSV files.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::charts::Chart;
use super::driver::Run;
use super::target::Flavour;
use super::vstats::{Delta, StatsSource};
use crate::common::machine::MachineFacts;
use crate::engine_bench::probe::RawDisk;

/// The figures of one configuration: flat, so that each is one CSV column. A figure the
/// target cannot give is None (`-` in the tables, null in the JSON): PostgreSQL has no
/// wait events, and its WAL counts are read over the warm-up and the window together
/// (see `vstats`), so only their ratios are kept.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    /// The target's label (the column name of a comparison).
    pub target: String,
    pub scenario: String,
    /// "io-bound" / "cpu-bound" in commit-modes, the test in client-practices; empty
    /// elsewhere.
    pub variant: String,
    pub mode: String,
    /// Why the target cannot run this configuration (the row is kept, marked, without
    /// figures); None when it ran.
    pub not_applicable: Option<String>,
    pub sessions: usize,
    /// log_parallelism of the database.
    pub strands: u32,
    /// Rows each transaction changes before its COMMIT.
    pub rows_per_commit: u64,
    /// redo-size: the redo a transaction was built to generate.
    pub redo_bytes_target: Option<u64>,
    pub seconds: f64,
    pub transactions: u64,
    pub commits: u64,
    pub rows: u64,
    pub commits_per_sec: f64,
    pub rows_per_sec: f64,
    /// Latency of a whole transaction (its statements and its COMMIT), us.
    pub txn_avg_us: f64,
    pub txn_p50_us: f64,
    pub txn_p99_us: f64,
    pub txn_max_us: f64,
    /// Latency of the COMMIT call alone, us (when the scenario times it).
    pub commit_avg_us: Option<f64>,
    pub commit_p50_us: Option<f64>,
    pub commit_p99_us: Option<f64>,
    /// Busy share of all the machine's CPUs (/proc/stat), percent.
    pub machine_cpu_pct: Option<f64>,
    /// This process's share of all CPUs, percent.
    pub process_cpu_pct: f64,
    /// Where the server figures below come from.
    pub server_figures: StatsSource,
    /// From v$sysstat over the window.
    pub user_commits: Option<u64>,
    pub redo_size_bytes: Option<u64>,
    /// v$sysstat redo size, or PostgreSQL's WAL bytes, per commit.
    pub redo_bytes_per_commit: Option<f64>,
    pub redo_mb_per_sec: Option<f64>,
    pub redo_writes: Option<u64>,
    pub redo_write_bytes: Option<u64>,
    /// Bytes per redo write (PostgreSQL: per WAL write call).
    pub avg_write_bytes: Option<f64>,
    /// Commits per redo write (PostgreSQL: per WAL sync).
    pub commits_per_write: Option<f64>,
    pub requests_per_write: Option<f64>,
    /// From v$system_event over the window.
    pub log_file_sync_waits: Option<u64>,
    pub log_file_sync_avg_us: Option<f64>,
    /// Share of all non-idle wait time, percent.
    pub log_file_sync_pct: Option<f64>,
    pub log_file_parallel_write_waits: Option<u64>,
    /// PostgreSQL: WAL write + sync time per WAL sync (`track_wal_io_timing`).
    pub log_file_parallel_write_avg_us: Option<f64>,
    pub log_file_parallel_write_pct: Option<f64>,
    /// avg log file sync / avg log file parallel write (seed 002's diagnosis).
    pub sync_to_write_ratio: Option<f64>,
    /// From v$sys_time_model over the window.
    pub db_cpu_us: Option<u64>,
    pub background_cpu_us: Option<u64>,
    pub non_idle_wait_us: Option<u64>,
    /// Non-idle waits of the sessions (the System I/O class left out).
    pub foreground_wait_us: Option<u64>,
    /// Seed 000's unit-of-work figures: L (user commits/s), CPUt (instance CPU per
    /// commit), Wt (foreground non-idle wait per commit), Rt = CPUt + Wt, in ms.
    pub l_commits_per_sec: Option<f64>,
    pub cpu_t_ms: Option<f64>,
    pub w_t_ms: Option<f64>,
    pub r_t_ms: Option<f64>,
    /// client-practices: rows per call (fetch size, array size), statements or rows
    /// handled, the client's own count of round trips, and the server's (`SQL*Net
    /// roundtrips to/from client`), parses and hard parses of the session (v$sesstat).
    pub batch_size: Option<u64>,
    pub calls: Option<u64>,
    pub client_round_trips: Option<u64>,
    pub server_round_trips: Option<u64>,
    pub parse_count_total: Option<u64>,
    pub parse_count_hard: Option<u64>,
}

/// One configuration: its figures and every server-side difference behind them.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    #[serde(flatten)]
    pub figures: Figures,
    pub views: Delta,
}

fn div(a: f64, b: u64) -> Option<f64> {
    (b > 0).then(|| a / b as f64)
}

impl Measurement {
    pub fn from_run(
        scenario: &str,
        variant: &str,
        run: Run,
        strands: u32,
        rows_per_commit: u64,
    ) -> Measurement {
        let d = &run.delta;
        let us = |ns: u64| ns as f64 / 1000.0;
        let q = |h: &hdrhistogram::Histogram<u64>, q: f64| {
            if h.is_empty() {
                0.0
            } else {
                us(h.value_at_quantile(q))
            }
        };
        let timed = !run.commit_ns.is_empty();
        let mut figures = Figures {
            scenario: scenario.to_string(),
            variant: variant.to_string(),
            mode: run.mode.name(),
            sessions: run.sessions,
            strands,
            rows_per_commit,
            seconds: run.seconds,
            transactions: run.transactions,
            commits: run.commits,
            rows: run.rows,
            commits_per_sec: run.commits as f64 / run.seconds,
            rows_per_sec: run.rows as f64 / run.seconds,
            txn_avg_us: run.latency_ns.mean() / 1000.0,
            txn_p50_us: q(&run.latency_ns, 0.5),
            txn_p99_us: q(&run.latency_ns, 0.99),
            txn_max_us: us(run.latency_ns.max()),
            commit_avg_us: timed.then(|| run.commit_ns.mean() / 1000.0),
            commit_p50_us: timed.then(|| q(&run.commit_ns, 0.5)),
            commit_p99_us: timed.then(|| q(&run.commit_ns, 0.99)),
            machine_cpu_pct: d.machine_cpu_pct,
            process_cpu_pct: d.process_cpu_pct,
            server_figures: d.source,
            ..Figures::default()
        };
        match d.source {
            StatsSource::VViews => v_view_figures(&mut figures, d),
            StatsSource::PgStatWal => wal_figures(&mut figures, d, run.commits + run.warmup_commits),
            StatsSource::Unavailable => {}
        }
        Measurement { figures, views: run.delta }
    }

    /// A configuration the target cannot run: the row is kept, with the reason.
    pub fn not_applicable(
        scenario: &str,
        variant: &str,
        mode: &str,
        sessions: usize,
        strands: u32,
        why: String,
    ) -> Measurement {
        Measurement {
            figures: Figures {
                scenario: scenario.to_string(),
                variant: variant.to_string(),
                mode: mode.to_string(),
                sessions,
                strands,
                not_applicable: Some(why),
                server_figures: StatsSource::Unavailable,
                ..Figures::default()
            },
            views: Delta::unavailable(0.0),
        }
    }

    pub fn ran(&self) -> bool {
        self.figures.not_applicable.is_none()
    }
}

/// The figures the `v$` views give, exactly over the window.
fn v_view_figures(f: &mut Figures, d: &Delta) {
    let commits = d.stat("user commits");
    let writes = d.stat("redo writes");
    let redo = d.stat("redo size");
    let sync = d.event("log file sync");
    let write = d.event("log file parallel write");
    let non_idle = d.non_idle_wait_us();
    let pct = |t: u64| (non_idle > 0).then(|| t as f64 * 100.0 / non_idle as f64);
    let sync_avg = d.avg_us("log file sync");
    let write_avg = d.avg_us("log file parallel write");
    let db_cpu = d.time("DB CPU");
    let bg_cpu = d.time("background cpu time");
    let fg_wait = d.foreground_wait_us();
    let cpu_t = div((db_cpu + bg_cpu) as f64 / 1000.0, commits);
    let w_t = div(fg_wait as f64 / 1000.0, commits);
    f.user_commits = Some(commits);
    f.redo_size_bytes = Some(redo);
    f.redo_bytes_per_commit = div(redo as f64, commits);
    f.redo_mb_per_sec = Some(redo as f64 / 1e6 / f.seconds);
    f.redo_writes = Some(writes);
    f.redo_write_bytes = Some(d.stat("redo write bytes"));
    f.avg_write_bytes = div(d.stat("redo write bytes") as f64, writes);
    f.commits_per_write = div(commits as f64, writes);
    f.requests_per_write = div(d.stat("redo write requests") as f64, writes);
    f.log_file_sync_waits = Some(sync.waits);
    f.log_file_sync_avg_us = sync_avg;
    f.log_file_sync_pct = pct(sync.time_us);
    f.log_file_parallel_write_waits = Some(write.waits);
    f.log_file_parallel_write_avg_us = write_avg;
    f.log_file_parallel_write_pct = pct(write.time_us);
    f.sync_to_write_ratio = sync_avg.zip(write_avg).map(|(s, w)| s / w);
    f.db_cpu_us = Some(db_cpu);
    f.background_cpu_us = Some(bg_cpu);
    f.non_idle_wait_us = Some(non_idle);
    f.foreground_wait_us = Some(fg_wait);
    f.l_commits_per_sec = Some(commits as f64 / f.seconds);
    f.cpu_t_ms = cpu_t;
    f.w_t_ms = w_t;
    f.r_t_ms = cpu_t.zip(w_t).map(|(c, w)| c + w);
}

/// PostgreSQL's ratios from `pg_stat_wal`, over the `commits` of warm-up and window.
fn wal_figures(f: &mut Figures, d: &Delta, commits: u64) {
    let bytes = d.stat("wal_bytes");
    let syncs = d.stat("wal_sync");
    let io_us = d.stat("wal_write_time_us") + d.stat("wal_sync_time_us");
    f.redo_bytes_per_commit = div(bytes as f64, commits);
    f.redo_mb_per_sec = f.redo_bytes_per_commit.map(|b| b * f.commits_per_sec / 1e6);
    f.avg_write_bytes = div(bytes as f64, d.stat("wal_write"));
    f.commits_per_write = div(commits as f64, syncs);
    // Zero time with syncs means track_wal_io_timing is off: no figure rather than 0.
    f.log_file_parallel_write_avg_us = if io_us > 0 { div(io_us as f64, syncs) } else { None };
}

/// A table of a scenario, for the terminal and the HTML page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
}

impl Table {
    pub fn new(title: impl Into<String>, columns: &[&str]) -> Table {
        Table {
            title: title.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            ..Table::default()
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.columns.len(), "table {}: row width", self.title);
        self.rows.push(cells);
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The table as text: the first column left-aligned, the others right-aligned.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|i| {
                std::iter::once(&self.columns[i])
                    .chain(self.rows.iter().map(|r| &r[i]))
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut s = String::from(" ");
            for (i, c) in cells.iter().enumerate() {
                let pad = widths[i] - c.chars().count();
                s.push(' ');
                if i == 0 {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str(&" ".repeat(pad + 1));
                    s.push_str(c);
                }
            }
            s.trim_end().to_string()
        };
        let mut out = format!("{}\n", self.title);
        out.push_str(&line(&self.columns));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        for n in &self.notes {
            out.push_str("  ");
            out.push_str(n);
            out.push('\n');
        }
        out
    }
}

/// What one scenario produced.
#[derive(Debug, Serialize)]
pub struct ScenarioReport {
    pub name: &'static str,
    pub title: &'static str,
    pub seed: &'static str,
    /// When the scenario ran somewhere else than its target: client-practices on the
    /// embedded target runs on redodb's server started for it.
    pub ran_on: Option<String>,
    /// The scenario's settings (durations, sizes, sessions).
    pub settings: serde_json::Value,
    pub tables: Vec<Table>,
    /// What the figures say, one sentence each.
    pub findings: Vec<String>,
    #[serde(skip)]
    pub charts: Vec<Chart>,
    /// File names (without extension) of the charts in the output directory.
    pub chart_files: Vec<String>,
    pub measurements: Vec<Measurement>,
    pub seconds: f64,
}

/// The raw disk figure every report carries: 4 KiB write+sync with the run's method (the
/// method its databases use). Its p50 is compared with p50s and its mean with means.
#[derive(Clone, Debug, Serialize)]
pub struct RawSync {
    pub method: &'static str,
    pub p50_us: f64,
    pub mean_us: f64,
    pub p99_us: f64,
    /// Writes completed per second by the probe's one writer (counted, not 1 / p50).
    pub ops_per_sec: f64,
}

impl RawSync {
    /// The raw disk's figures for `method`, if it ran here.
    pub fn of(raw_disk: &[crate::engine_bench::probe::RawDisk], method: redo::SyncMethod) -> Option<RawSync> {
        let r = raw_disk.iter().find(|r| r.method == method.name() && r.supported)?;
        Some(RawSync {
            method: r.method,
            p50_us: r.median_us?,
            mean_us: r.mean_us?,
            p99_us: r.p99_us?,
            ops_per_sec: r.ops_per_sec?,
        })
    }
}

/// Everything one target ran.
#[derive(Debug, Serialize)]
pub struct TargetReport {
    /// The short name of the target's column in comparisons.
    pub label: String,
    pub flavour: Flavour,
    pub description: String,
    pub url: Option<String>,
    pub server_version: Option<String>,
    pub scenarios: Vec<ScenarioReport>,
}

/// One configuration of a comparison: a figure on every target, and each target's value
/// divided by the first target's.
#[derive(Clone, Debug, Serialize)]
pub struct ComparisonRow {
    pub configuration: String,
    pub values: Vec<Option<f64>>,
    pub ratios_to_first: Vec<Option<f64>>,
}

/// A scenario on several targets: its tables with every target's rows side by side, and
/// its headline figure with ratios to the first target.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub scenario: &'static str,
    pub targets: Vec<String>,
    /// The headline figure, e.g. "avg COMMIT us".
    pub figure: &'static str,
    pub higher_is_better: bool,
    pub rows: Vec<ComparisonRow>,
    /// The headline as a table (what the terminal shows).
    pub headline: Table,
    /// The scenario's own tables, each target's rows one under the other.
    pub tables: Vec<Table>,
    #[serde(skip)]
    pub chart: Option<Chart>,
    pub chart_file: Option<String>,
}

/// The whole JSON document.
#[derive(Serialize)]
pub struct BenchReport<'a> {
    pub redodb_version: &'static str,
    pub quick: bool,
    pub machine: &'a MachineFacts,
    pub raw_sync: &'a RawSync,
    pub raw_disk: &'a [RawDisk],
    /// Every target in the order given (the first is the base of the ratios).
    pub targets: &'a [TargetReport],
    /// One per scenario when there are several targets.
    pub comparisons: &'a [Comparison],
    pub total_seconds: f64,
}

pub fn write_json(path: &Path, report: &BenchReport) -> Result<()> {
    let mut text = serde_json::to_string_pretty(report).context("encoding the JSON report")?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Every measurement's figures, one row each, every target's.
pub fn write_csv(path: &Path, targets: &[TargetReport]) -> Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    for t in targets {
        for s in &t.scenarios {
            for m in &s.measurements {
                w.serialize(&m.figures).with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    w.flush().with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_their_columns() {
        let mut t = Table::new("T", &["Setting", "Commit/s"]);
        t.row(vec!["WAIT/IMMEDIATE".into(), "12,345".into()]);
        t.row(vec!["NOWAIT/BATCH".into(), "7".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "T");
        assert_eq!(lines[1], "  Setting         Commit/s");
        assert_eq!(lines[2], "  WAIT/IMMEDIATE    12,345");
        assert_eq!(lines[3], "  NOWAIT/BATCH           7");
    }
}
