//! What the SQL benchmark reports: its rows, the ratios to the raw engine, the printed
//! tables and the JSON document. Figures per commit come from the engine benchmark's
//! [`Row`], so both benchmarks compute them the same way.

use serde::Serialize;

use super::workload::{CheckpointStall, ParseRow, SqlDelta, Work};
use crate::engine_bench::machine::MachineFacts;
use crate::engine_bench::probe::RawDisk;
use crate::engine_bench::report::{opt, thousands, Ratio, Row};
use crate::engine_bench::workload::Mode;

/// How the run was set up.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    pub quick: bool,
    pub seconds_per_configuration: f64,
    pub warmup_seconds: f64,
    pub raw_probe_seconds: f64,
    pub sync_method: &'static str,
    /// "engine default", or why another method was used.
    pub sync_method_source: String,
    pub log_file_size: u64,
    pub log_groups: u32,
    pub checkpoint_interval_ms: u64,
    pub engine_sessions: usize,
    /// Pairs of back-to-back engine and SQL runs behind each paired ratio.
    pub ratio_pairs: usize,
    pub engine_payload_bytes: usize,
    pub sql_sessions: Vec<usize>,
    pub row_bytes: usize,
    pub table_rows: i64,
    pub insert_sql: &'static str,
    pub update_sql: &'static str,
    pub literal_statements: u64,
    pub checkpoint_sessions: usize,
    pub checkpoint_phase_seconds: f64,
    pub checkpoints: usize,
}

/// One configuration: the raw engine or one SQL loop.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// "engine", "insert" (loop a) or "update" (loop b).
    pub workload: &'static str,
    /// The engine benchmark's figures (`strands` is always 1).
    #[serde(flatten)]
    pub figures: Row,
    /// `redo size` / `user commits` over the window.
    pub redo_bytes_per_commit: Option<f64>,
    /// The SQL layer's counters over the window (None for the raw engine).
    pub sql: Option<SqlDelta>,
}

/// The whole JSON document.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub machine: MachineFacts,
    pub settings: Settings,
    pub raw_disk: Vec<RawDisk>,
    /// Median of one 4 KiB pwrite + fdatasync, for reference: no ratio uses it (they are
    /// SQL over engine), and the databases here sync with `settings.sync_method`, whose
    /// raw row is in `raw_disk`.
    pub raw_fdatasync_median_us: f64,
    /// The raw engine at 32 sessions before the SQL loops, and again after them on the
    /// same files: the ratios' baseline is the mean of the two.
    pub engine: Vec<BenchRow>,
    pub engine_after: Vec<BenchRow>,
    /// The SQL loops.
    pub rows: Vec<BenchRow>,
    pub ratios: Vec<Ratio>,
    /// The same four ratios from runs of the engine and the SQL loop back to back.
    pub paired: Vec<super::paired::PairedRatio>,
    /// Literal SQL vs bind variables.
    pub parse: Vec<ParseRow>,
    pub checkpoint: Option<CheckpointStall>,
    /// Commit throughput with timed_statistics TRUE vs FALSE, per loop.
    pub overhead: Vec<crate::engine_bench::overhead::Overhead>,
    /// The join queries on redodb serve and PostgreSQL.
    pub joins: super::joins::JoinReport,
    /// Configurations not run because their database had stalled.
    pub not_run: Vec<String>,
    /// Errors and stalls met during the run, one line each.
    pub problems: Vec<String>,
    pub total_seconds: f64,
}

fn find<'a>(rows: &'a [BenchRow], workload: &str, mode: Mode, sessions: usize) -> Option<&'a BenchRow> {
    let name = mode.name();
    rows.iter().find(|r| r.workload == workload && r.figures.mode == name && r.figures.sessions == sessions)
}

/// Name of a ratio of SQL loop `work` to the raw engine.
pub fn ratio_name(work: Work, mode: Mode, sessions: usize) -> String {
    let letter = if work == Work::Insert { "a" } else { "b" };
    format!("SQL ({letter}) {} {sessions} sessions {} / engine", work.name(), mode.name())
}

/// The SQL loops' commits/s at 32 sessions over the raw engine's (the mean of its runs
/// before and after the SQL loops): at least half under NOWAIT/IMMEDIATE (where the SQL
/// layer's CPU shows), 90% under WAIT/IMMEDIATE (where the disk should dominate).
pub fn ratios(before: &[BenchRow], after: &[BenchRow], sql: &[BenchRow], sessions: usize) -> Vec<Ratio> {
    let mut out = Vec::new();
    for work in Work::ALL {
        for (mode, target) in [(Mode::NOWAIT_IMMEDIATE, 0.5), (Mode::WAIT_IMMEDIATE, 0.9)] {
            let mut r = Ratio::new(ratio_name(work, mode, sessions), ">=", target);
            let engine: Vec<f64> = [before, after]
                .iter()
                .filter_map(|rows| find(rows, "engine", mode, sessions))
                .map(|e| e.figures.commits_per_sec)
                .collect();
            let mean = engine.iter().sum::<f64>() / engine.len().max(1) as f64;
            if let (Some(s), true) = (find(sql, work.name(), mode, sessions), mean > 0.0) {
                let runs: Vec<String> = engine.iter().map(|e| thousands(*e)).collect();
                r = r.measured(
                    s.figures.commits_per_sec / mean,
                    format!(
                        "{} / {} commits/s; engine before and after: {}",
                        thousands(s.figures.commits_per_sec),
                        thousands(mean),
                        runs.join(", ")
                    ),
                );
            }
            out.push(r);
        }
    }
    out
}

pub fn print_header(m: &MachineFacts, s: &Settings) {
    println!("redodb {} sql-bench", m.redodb_version);
    crate::engine_bench::report::print_machine(m);
    println!(
        "  run           {:.2} s per configuration after {:.2} s warm-up{}; sync method {} ({})",
        s.seconds_per_configuration,
        s.warmup_seconds,
        if s.quick { " (quick)" } else { "" },
        s.sync_method,
        s.sync_method_source,
    );
    println!(
        "  database      {} MiB log files x {} groups, checkpoints only when the log asks or the bench calls them",
        s.log_file_size >> 20,
        s.log_groups
    );
    println!();
}

/// The two header lines of the commit tables, on the columns of [`row_line`].
pub fn header() -> [String; 2] {
    [
        format!(
            "  {:<8} {:<16}{:>8} {:>11} {:^26} {:>8} {:>8} {:>9}",
            "", "", "", "commits", "latency per commit", "commits", "redo B", "log file"
        ),
        format!(
            "  {:<8} {:<16}{:>8} {:>11} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
            "workload",
            "mode",
            "sessions",
            "per sec",
            "p50 us",
            "p99 us",
            "max us",
            "/ write",
            "/ commit",
            "sync us"
        ),
    ]
}

pub fn row_line(r: &BenchRow) -> String {
    let f = &r.figures;
    format!(
        "  {:<8} {:<16}{:>8} {:>11} {:>8.1} {:>8.1} {:>8.0} {:>8} {:>8} {:>9}",
        r.workload,
        f.mode,
        f.sessions,
        thousands(f.commits_per_sec),
        f.p50_us,
        f.p99_us,
        f.max_us,
        opt(f.commits_per_write, 1),
        opt(r.redo_bytes_per_commit, 0),
        opt(f.log_file_sync_avg_us, 1),
    )
}

fn print_rows(rows: &[BenchRow]) {
    for h in header() {
        println!("{h}");
    }
    let mut previous: Option<(&str, &str)> = None;
    for r in rows {
        let group = (r.workload, r.figures.mode.as_str());
        if previous.is_some_and(|p| p != group) {
            println!();
        }
        previous = Some(group);
        println!("{}", row_line(r));
    }
}

pub fn print_engine(rows: &[BenchRow], payload_bytes: usize, again: bool) {
    if again {
        println!(
            "ENGINE BASELINE AGAIN, after the SQL loops, same files (the ratios use the mean of both runs)"
        );
    } else {
        println!(
            "ENGINE BASELINE: {payload_bytes}-byte changes straight through redo::RedoLog sessions, one per transaction"
        );
    }
    if rows.is_empty() {
        println!("  not run (the engine stalled before)");
    } else {
        print_rows(rows);
    }
    println!();
}

pub fn print_sql(rows: &[BenchRow], not_run: &[String]) {
    println!("SQL: embedded API, prepared statements, one row (~100 bytes) per transaction, then a prepared COMMIT");
    println!("  (a) insert: {}", Work::Insert.sql());
    println!("  (b) update: {}  (random row of 30,000)", Work::Update.sql());
    print_rows(rows);
    if !not_run.is_empty() {
        println!("  not run ({} configurations) because their database had stalled", not_run.len());
    }
    println!("  latency = the INSERT/UPDATE and the COMMIT, timed together; commits / write = user commits / redo writes;");
    println!("  redo B / commit = redo size / user commits; log file sync: average wait (NOWAIT commits do not wait: '-')");
    println!();
}

pub fn print_parse(rows: &[ParseRow]) {
    let Some(first) = rows.first() else { return };
    println!(
        "LITERAL SQL vs BIND VARIABLES: {} point SELECTs by primary key per variant, one session, in rounds taking turns",
        thousands(first.statements as f64)
    );
    println!(
        "  {:<34} {:>12} {:>9} {:>9} {:>11} {:>10} {:>9}",
        "variant", "statements/s", "us/stmt", "parses", "hard parses", "cache hits", "executes"
    );
    for r in rows {
        println!(
            "  {:<34} {:>12} {:>9.2} {:>9} {:>11} {:>10} {:>9}",
            r.variant,
            thousands(r.statements_per_sec),
            r.us_per_statement,
            r.sql.parse_count_total,
            r.sql.parse_count_hard,
            r.sql.cache_hits,
            r.sql.execute_count
        );
    }
    if let [literal, bind, prepared] = rows {
        println!(
            "  statements/s over literal SQL: bind {:.2}x, prepared {:.2}x; prepared over bind {:.2}x",
            bind.statements_per_sec / literal.statements_per_sec,
            prepared.statements_per_sec / literal.statements_per_sec,
            prepared.statements_per_sec / bind.statements_per_sec
        );
    }
    if let Some(bind) = rows.iter().find(|r| r.variant.starts_with("bind")) {
        if bind.sql.parse_count_hard > 1 {
            println!(
                "  the bind text was hard-parsed {} times: the literal SELECTs run between its rounds pushed it out of the",
                bind.sql.parse_count_hard
            );
            println!("  shared statement cache (literal SQL costs the other sessions too; a prepared statement is immune)");
        }
    }
    let wrong: u64 = rows.iter().map(|r| r.wrong_results).sum();
    if wrong > 0 {
        println!("  WRONG RESULTS: {wrong} SELECTs did not return exactly one row");
    }
    println!();
}

pub fn print_checkpoint(c: &CheckpointStall) {
    println!(
        "CHECKPOINT STALL: {} sessions, loop (b) {}, {:.1} s without checkpoints then {:.1} s with {} Database::checkpoint() calls",
        c.sessions,
        c.mode,
        c.phase_seconds,
        c.phase_seconds * 2.0,
        c.checkpoints.len()
    );
    println!(
        "  {:<20} {:>8} {:>10} {:>8} {:>8} {:>9} {:>10} {:>13}",
        "phase", "commits", "commits/s", "p50 us", "p99 us", "max us", "max at ms", "longest gap us"
    );
    for p in [&c.without, &c.with] {
        println!(
            "  {:<20} {:>8} {:>10} {:>8.1} {:>8.1} {:>9.0} {:>10.0} {:>13.0}",
            p.phase,
            p.commits,
            thousands(p.commits_per_sec),
            p.p50_us,
            p.p99_us,
            p.max_us,
            p.max_at_ms,
            p.longest_gap_us
        );
    }
    let durations: Vec<String> = c
        .checkpoints
        .iter()
        .map(|k| match &k.error {
            None => format!("{:.1}", k.duration_ms),
            Some(e) => format!("{:.1} ({e})", k.duration_ms),
        })
        .collect();
    println!("  checkpoint durations ms: {}", durations.join(", "));
    if let Some(bytes) = c.checkpoints.iter().filter_map(|k| k.image_bytes).max() {
        println!(
            "  image size {} bytes; log file switches during the run: {}",
            thousands(bytes as f64),
            c.log_file_switches
        );
    }
    println!(
        "  longest commit running during a checkpoint: {} us",
        opt(c.longest_commit_overlapping_a_checkpoint_us, 0)
    );
    println!(
        "  longest commit with checkpoints - longest without: {:.2} ms  target <= {:.1} ms  {}",
        c.excess_ms,
        c.target_excess_ms,
        if c.pass { "PASS" } else { "MISS" }
    );
    println!("  (a checkpoint must not stop commits for more than a few milliseconds; longest gap = longest time no session finished a commit)");
    println!();
}

pub fn print_problems(problems: &[String]) {
    if problems.is_empty() {
        return;
    }
    println!("PROBLEMS");
    for p in problems {
        println!("  - {p}");
    }
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine_bench::workload::Measured;

    #[test]
    fn headers_line_up_with_the_rows() {
        let [h1, h2] = header();
        assert_eq!(h1.len(), h2.len());
        let m = Measured {
            latency_ns: hdrhistogram::Histogram::new(3).unwrap(),
            seconds: 1.0,
            stats_seconds: 1.0,
            delta: Default::default(),
        };
        let row = BenchRow {
            workload: "insert",
            figures: Row::new(1, Mode::NOWAIT_IMMEDIATE, 32, &m),
            redo_bytes_per_commit: None,
            sql: None,
        };
        assert_eq!(row_line(&row).len(), h2.len());
        assert!(h2.starts_with("  workload mode            sessions     per sec   p50 us   p99 us"));
    }
}
