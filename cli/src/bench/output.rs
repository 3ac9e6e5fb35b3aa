//! What a bench run produces: one [`Measurement`] per configuration (the figures the
//! scenarios derive, flat, plus every `v$` difference), the scenarios' tables for the
//! terminal and the HTML page, and the JSON and CSV files.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::charts::Chart;
use super::driver::Run;
use super::vstats::Delta;
use crate::common::machine::MachineFacts;
use crate::engine_bench::probe::RawDisk;

/// The figures of one configuration: flat, so that each is one CSV column.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    pub scenario: String,
    /// "io-bound" / "cpu-bound" in commit-modes; empty elsewhere.
    pub variant: String,
    pub mode: String,
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
    /// From v$sysstat over the window.
    pub user_commits: u64,
    pub redo_size_bytes: u64,
    pub redo_bytes_per_commit: Option<f64>,
    pub redo_mb_per_sec: f64,
    pub redo_writes: u64,
    pub redo_write_bytes: u64,
    pub avg_write_bytes: Option<f64>,
    pub commits_per_write: Option<f64>,
    pub requests_per_write: Option<f64>,
    /// From v$system_event over the window.
    pub log_file_sync_waits: u64,
    pub log_file_sync_avg_us: Option<f64>,
    /// Share of all non-idle wait time, percent.
    pub log_file_sync_pct: Option<f64>,
    pub log_file_parallel_write_waits: u64,
    pub log_file_parallel_write_avg_us: Option<f64>,
    pub log_file_parallel_write_pct: Option<f64>,
    /// avg log file sync / avg log file parallel write (seed 002's diagnosis).
    pub sync_to_write_ratio: Option<f64>,
    /// From v$sys_time_model over the window.
    pub db_cpu_us: u64,
    pub background_cpu_us: u64,
    pub non_idle_wait_us: u64,
    /// Non-idle waits of the sessions (the System I/O class left out).
    pub foreground_wait_us: u64,
    /// Seed 000's unit-of-work figures: L (user commits/s), CPUt (instance CPU per
    /// commit), Wt (foreground non-idle wait per commit), Rt = CPUt + Wt, in ms.
    pub l_commits_per_sec: f64,
    pub cpu_t_ms: Option<f64>,
    pub w_t_ms: Option<f64>,
    pub r_t_ms: Option<f64>,
}

/// One configuration: its figures and every `v$` difference behind them.
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
        let timed = !run.commit_ns.is_empty();
        let figures = Figures {
            scenario: scenario.to_string(),
            variant: variant.to_string(),
            mode: run.mode.name(),
            sessions: run.sessions,
            strands,
            rows_per_commit,
            redo_bytes_target: None,
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
            user_commits: commits,
            redo_size_bytes: redo,
            redo_bytes_per_commit: div(redo as f64, commits),
            redo_mb_per_sec: redo as f64 / 1e6 / run.seconds,
            redo_writes: writes,
            redo_write_bytes: d.stat("redo write bytes"),
            avg_write_bytes: div(d.stat("redo write bytes") as f64, writes),
            commits_per_write: div(commits as f64, writes),
            requests_per_write: div(d.stat("redo write requests") as f64, writes),
            log_file_sync_waits: sync.waits,
            log_file_sync_avg_us: sync_avg,
            log_file_sync_pct: pct(sync.time_us),
            log_file_parallel_write_waits: write.waits,
            log_file_parallel_write_avg_us: write_avg,
            log_file_parallel_write_pct: pct(write.time_us),
            sync_to_write_ratio: sync_avg.zip(write_avg).map(|(s, w)| s / w),
            db_cpu_us: db_cpu,
            background_cpu_us: bg_cpu,
            non_idle_wait_us: non_idle,
            foreground_wait_us: fg_wait,
            l_commits_per_sec: commits as f64 / run.seconds,
            cpu_t_ms: cpu_t,
            w_t_ms: w_t,
            r_t_ms: cpu_t.zip(w_t).map(|(c, w)| c + w),
        };
        Measurement { figures, views: run.delta }
    }
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

/// The raw disk figure every report carries: 4 KiB write+sync with the run's method.
#[derive(Clone, Debug, Serialize)]
pub struct RawSync {
    pub method: &'static str,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// The whole JSON document.
#[derive(Serialize)]
pub struct BenchReport<'a> {
    pub redodb_version: &'static str,
    pub target: String,
    pub target_kind: &'static str,
    pub quick: bool,
    pub machine: &'a MachineFacts,
    pub raw_sync: &'a RawSync,
    pub raw_disk: &'a [RawDisk],
    pub scenarios: &'a [ScenarioReport],
    pub total_seconds: f64,
}

pub fn write_json(path: &Path, report: &BenchReport) -> Result<()> {
    let mut text = serde_json::to_string_pretty(report).context("encoding the JSON report")?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Every measurement's figures, one row each.
pub fn write_csv(path: &Path, scenarios: &[ScenarioReport]) -> Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    for s in scenarios {
        for m in &s.measurements {
            w.serialize(&m.figures).with_context(|| format!("writing {}", path.display()))?;
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
