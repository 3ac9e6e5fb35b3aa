//! What the benchmark reports: the rows, the ratios to the disk's limit, the printed
//! tables and the JSON document.

use std::collections::BTreeMap;

use serde::Serialize;

use super::machine::MachineFacts;
use super::probe::RawDisk;
use super::workload::{Measured, Mode, Stall};
use redo::{Stat, WaitEvent};

/// How the run was set up.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    pub quick: bool,
    pub seconds_per_configuration: f64,
    pub warmup_seconds: f64,
    pub raw_probe_seconds: f64,
    /// Sync method of the main table.
    pub sync_method: &'static str,
    /// Where it came from: "--sync-method", "engine default", or "fallback".
    pub sync_method_source: String,
    pub engine_default_sync_method: &'static str,
    pub payload_bytes: usize,
    pub strands: Vec<u32>,
    pub wait_sessions: Vec<usize>,
    pub nowait_sessions: Vec<usize>,
}

/// One engine configuration's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub strands: u32,
    pub mode: String,
    pub wait: &'static str,
    pub logging: &'static str,
    pub sessions: usize,
    pub commits: u64,
    pub seconds: f64,
    pub commits_per_sec: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
    pub redo_writes: u64,
    /// `user commits` / `redo writes` over the window (None: no write in the window).
    pub commits_per_write: Option<f64>,
    /// `redo write requests` / `redo writes`.
    pub requests_per_write: Option<f64>,
    /// Average `log file sync` wait (us), None when no session waited.
    pub log_file_sync_avg_us: Option<f64>,
    /// Average `log file parallel write` (us), None without writes.
    pub log_file_parallel_write_avg_us: Option<f64>,
    /// `log file sync` avg / `log file parallel write` avg.
    pub sync_to_write_ratio: Option<f64>,
    /// `redo synch early wakeups` / `log file sync` waits: how often a waiting session
    /// was woken by a write that did not make its commit durable (a write wakes only the
    /// waiters it covers, so this stays near zero). None when no session waited.
    pub early_wakeups_per_sync: Option<f64>,
    /// Every engine statistic over the window (deltas).
    pub stats: BTreeMap<&'static str, u64>,
    /// Every wait event over the window (deltas).
    pub events: BTreeMap<&'static str, EventDelta>,
    pub stats_seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct EventDelta {
    pub waits: u64,
    pub time_us: u64,
    pub avg_us: f64,
}

fn div(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

impl Row {
    pub fn new(strands: u32, mode: Mode, sessions: usize, m: &Measured) -> Row {
        let d = &m.delta;
        let writes = d.get(Stat::RedoWrites);
        let sync = d.event(WaitEvent::LogFileSync);
        let write = d.event(WaitEvent::LogFileParallelWrite);
        let sync_avg = (sync.waits > 0).then(|| sync.avg_us());
        let write_avg = (write.waits > 0).then(|| write.avg_us());
        let h = &m.latency_ns;
        let us = |ns: u64| ns as f64 / 1000.0;
        Row {
            strands,
            mode: mode.name(),
            wait: mode.wait.name(),
            logging: mode.logging.name(),
            sessions,
            commits: m.commits(),
            seconds: m.seconds,
            commits_per_sec: m.commits_per_sec(),
            p50_us: m.quantile_us(0.50),
            p90_us: m.quantile_us(0.90),
            p99_us: m.quantile_us(0.99),
            p999_us: m.quantile_us(0.999),
            max_us: us(h.max()),
            mean_us: h.mean() / 1000.0,
            redo_writes: writes,
            commits_per_write: div(d.get(Stat::UserCommits), writes),
            requests_per_write: div(d.get(Stat::RedoWriteRequests), writes),
            log_file_sync_avg_us: sync_avg,
            log_file_parallel_write_avg_us: write_avg,
            sync_to_write_ratio: sync_avg.zip(write_avg).map(|(s, w)| s / w),
            early_wakeups_per_sync: div(d.get(Stat::RedoSynchEarlyWakeups), sync.waits),
            stats: Stat::ALL.iter().map(|s| (s.name(), d.get(*s))).collect(),
            events: WaitEvent::ALL
                .iter()
                .map(|e| {
                    let x = d.event(*e);
                    (e.name(), EventDelta { waits: x.waits, time_us: x.time_us, avg_us: x.avg_us() })
                })
                .collect(),
            stats_seconds: m.stats_seconds,
        }
    }
}

/// The machine's limit the ratios divide by: the raw disk's row for the main table's sync
/// method. Every figure here was measured, none derived from another: `ops_per_sec` is
/// the writes the probe completed divided by its seconds (one writer), not 1 / median.
#[derive(Clone, Debug, Serialize)]
pub struct RawLimit {
    pub method: &'static str,
    pub median_us: f64,
    pub mean_us: f64,
    pub p99_us: f64,
    pub ops_per_sec: f64,
    pub samples: u64,
    pub seconds: f64,
}

impl RawLimit {
    /// The raw row of `method`, which must have run.
    pub fn of(raw: &[RawDisk], method: redo::SyncMethod) -> anyhow::Result<RawLimit> {
        let r = raw
            .iter()
            .find(|r| r.method == method.name() && r.supported)
            .ok_or_else(|| anyhow::anyhow!("no raw disk figure for the sync method {}", method.name()))?;
        match (r.median_us, r.mean_us, r.p99_us, r.ops_per_sec) {
            (Some(median_us), Some(mean_us), Some(p99_us), Some(ops_per_sec)) => Ok(RawLimit {
                method: r.method,
                median_us,
                mean_us,
                p99_us,
                ops_per_sec,
                samples: r.samples,
                seconds: r.seconds,
            }),
            _ => anyhow::bail!("the raw disk row of {} has no figures", method.name()),
        }
    }
}

/// One line of the sync method table.
#[derive(Clone, Debug, Serialize)]
pub struct SyncMethodRow {
    pub method: &'static str,
    pub engine_default: bool,
    pub raw_median_us: f64,
    pub raw_p99_us: f64,
    /// Why the engine could not run with this method (None: it ran).
    pub engine_error: Option<String>,
    pub engine_p50_us: Option<f64>,
    pub engine_p99_us: Option<f64>,
    pub commits_per_sec: Option<f64>,
    pub commits_per_write: Option<f64>,
}

/// A figure compared with its target.
#[derive(Clone, Debug, Serialize)]
pub struct Ratio {
    pub name: String,
    /// None when a configuration it needs did not complete.
    pub value: Option<f64>,
    /// "<=" or ">=".
    pub comparison: &'static str,
    pub target: f64,
    pub pass: bool,
    /// The figures the ratio comes from.
    pub detail: String,
}

impl Ratio {
    pub(crate) fn new(name: String, comparison: &'static str, target: f64) -> Ratio {
        Ratio {
            name,
            value: None,
            comparison,
            target,
            pass: false,
            detail: "not measured: a configuration it needs did not complete".into(),
        }
    }

    pub(crate) fn measured(mut self, value: f64, detail: String) -> Ratio {
        self.pass = match self.comparison {
            "<=" => value <= self.target,
            _ => value >= self.target,
        };
        self.value = Some(value);
        self.detail = detail;
        self
    }
}

/// The whole JSON document.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub machine: MachineFacts,
    pub settings: Settings,
    pub raw_disk: Vec<RawDisk>,
    /// The machine limit the ratios use: the raw figures of the main table's sync method.
    pub raw_limit: RawLimit,
    pub sync_methods: Vec<SyncMethodRow>,
    pub rows: Vec<Row>,
    /// WAIT/IMMEDIATE with 1 and 2 members per group (`strands` holds the member count).
    pub multiplexing: Vec<Row>,
    /// The raw engine's NOWAIT loop with timed_statistics TRUE and FALSE (None: stalled).
    pub overhead: Option<super::overhead::Overhead>,
    pub ratios: Vec<Ratio>,
    /// Configurations whose commits stopped returning (their databases were abandoned).
    pub stalls: Vec<Stall>,
    /// Configurations not run because their database had stalled.
    pub not_run: Vec<String>,
    /// Everything the engine got wrong during the run, one line each.
    pub engine_problems: Vec<String>,
    pub total_seconds: f64,
}

fn find(rows: &[Row], strands: u32, mode: Mode, sessions: usize) -> Option<&Row> {
    let name = mode.name();
    rows.iter().find(|r| r.strands == strands && r.mode == name && r.sessions == sessions)
}

/// The ratios to the disk's limit (`raw`: the same sync method as `rows`) and between
/// strand counts. Each ratio divides like by like: a p50 by the raw median, a measured
/// rate by the raw probe's measured rate.
pub fn ratios(rows: &[Row], raw: &RawLimit) -> Vec<Ratio> {
    let mut out = Vec::new();
    let wi = Mode::WAIT_IMMEDIATE;
    let m = raw.method;

    let mut r = Ratio::new(format!("1 session WAIT/IMMEDIATE p50 / raw {m} p50"), "<=", 1.2);
    if let Some(row) = find(rows, 1, wi, 1) {
        r = r.measured(row.p50_us / raw.median_us, format!("{:.1} us / {:.1} us", row.p50_us, raw.median_us));
    }
    out.push(r);

    let mut r = Ratio::new(format!("32 sessions WAIT/IMMEDIATE commits/s / raw {m} writes/s"), ">=", 8.0);
    if let Some(row) = find(rows, 1, wi, 32) {
        r = r.measured(
            row.commits_per_sec / raw.ops_per_sec,
            format!(
                "{} commits/s / {} writes/s ({} writes in {:.2} s, one writer)",
                thousands(row.commits_per_sec),
                thousands(raw.ops_per_sec),
                thousands(raw.samples as f64),
                raw.seconds
            ),
        );
    }
    out.push(r);

    for mode in [Mode::NOWAIT_IMMEDIATE, Mode::NOWAIT_BATCH] {
        for strands in [1, 2] {
            let mut r = Ratio::new(
                format!("2 sessions {} commits/s, {strands} strand{}", mode.name(), plural(strands)),
                ">=",
                1e6,
            );
            if let Some(row) = find(rows, strands, mode, 2) {
                r = r.measured(row.commits_per_sec, format!("p50 {:.2} us", row.p50_us));
            }
            out.push(r);
        }
    }

    let mut r =
        Ratio::new("WAIT p50, 2 strands / 1 strand, worst (10% allowed for noise)".into(), "<=", 1.10);
    let mut worst: Option<(f64, String)> = None;
    let mut all = Vec::new();
    for r2 in rows.iter().filter(|r| r.strands == 2 && r.wait != "NOWAIT") {
        let Some(r1) = rows.iter().find(|r| r.strands == 1 && r.mode == r2.mode && r.sessions == r2.sessions)
        else {
            continue;
        };
        if r1.p50_us <= 0.0 {
            continue;
        }
        let ratio = r2.p50_us / r1.p50_us;
        all.push(ratio);
        if worst.as_ref().is_none_or(|(w, _)| ratio > *w) {
            worst = Some((
                ratio,
                format!("{} {} sessions: {:.1} us / {:.1} us", r2.mode, r2.sessions, r2.p50_us, r1.p50_us),
            ));
        }
    }
    if let Some((ratio, detail)) = worst {
        all.sort_by(f64::total_cmp);
        let median = all[all.len() / 2];
        r = r.measured(ratio, format!("{detail}; median of {} pairs {median:.2}", all.len()));
    }
    out.push(r);
    out
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub(crate) use crate::common::opt;
pub use crate::common::thousands;

pub fn print_header(m: &MachineFacts, s: &Settings) {
    println!("redodb {} engine-bench", m.redodb_version);
    print_machine(m);
    println!(
        "  run           {:.2} s per configuration after {:.2} s warm-up{}; {}-byte changes, one per transaction",
        s.seconds_per_configuration,
        s.warmup_seconds,
        if s.quick { " (quick)" } else { "" },
        s.payload_bytes
    );
    println!();
}

/// The machine's facts, one per line (the header's lines before the run settings).
pub(crate) fn print_machine(m: &MachineFacts) {
    println!("  cpus          {} ({})", m.cpus, m.arch);
    println!("  kernel        {}", m.kernel);
    if let Some([l1, l5, l15]) = m.load_average {
        println!("  load average  {l1:.2} {l5:.2} {l15:.2} (1, 5, 15 min) at the start");
    }
    println!("  directory     {}", m.directory);
    println!("  file system   {} on {}, mounted at {}", m.fs_type, m.fs_device, m.mount_point);
}

pub fn print_raw(raw: &[RawDisk]) {
    println!("RAW DISK: 4 KiB writes at sequential offsets of a preallocated 64 MiB file, each made durable");
    println!(
        "  {:<12} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "method", "median us", "p99 us", "mean us", "ops/s", "samples"
    );
    for r in raw {
        if r.supported {
            println!(
                "  {:<12} {:>10} {:>10} {:>10} {:>10} {:>9}",
                r.method,
                opt(r.median_us, 1),
                opt(r.p99_us, 1),
                opt(r.mean_us, 1),
                thousands(r.ops_per_sec.unwrap_or(0.0)),
                r.samples
            );
        } else {
            println!("  {:<12} unsupported here: {}", r.method, r.note.as_deref().unwrap_or(""));
        }
    }
    println!("  (ops/s = writes completed / seconds, one writer, as measured)");
    println!();
}

pub fn print_multiplexing(rows: &[Row], method: &str) {
    println!(
        "MULTIPLEXING: WAIT/IMMEDIATE with 1 and 2 members per log group, 1 strand, sync method {method}"
    );
    println!(
        "  {:>7} {:>8} {:>11} {:>8} {:>8} {:>9} {:>9} {:>11}",
        "members", "sessions", "commits/s", "p50 us", "p99 us", "commits", "requests", "par.write"
    );
    println!(
        "  {:>7} {:>8} {:>11} {:>8} {:>8} {:>9} {:>9} {:>11}",
        "", "", "", "", "", "/ write", "/ write", "avg us"
    );
    for r in rows {
        println!(
            "  {:>7} {:>8} {:>11} {:>8.1} {:>8.1} {:>9} {:>9} {:>11}",
            r.strands,
            r.sessions,
            thousands(r.commits_per_sec),
            r.p50_us,
            r.p99_us,
            opt(r.commits_per_write, 1),
            opt(r.requests_per_write, 2),
            opt(r.log_file_parallel_write_avg_us, 1)
        );
    }
    let p50 = |m: u32| rows.iter().find(|r| r.strands == m && r.sessions == 1).map(|r| r.p50_us);
    if let (Some(one), Some(two)) = (p50(1), p50(2)) {
        println!("  1-session p50 with 2 members / with 1 member: {:.2}", two / one);
    }
    println!();
}

pub fn print_sync_methods(rows: &[SyncMethodRow]) {
    println!("SYNC METHOD: raw 4 KiB write+sync vs the engine, 1 session WAIT/IMMEDIATE, 1 strand");
    println!(
        "  {:<20} {:>10} {:>10}   {:>10} {:>10} {:>10} {:>10}",
        "method", "raw med us", "raw p99 us", "p50 us", "p99 us", "commits/s", "p50 / raw"
    );
    for r in rows {
        let name = if r.engine_default { format!("{} (default)", r.method) } else { r.method.to_string() };
        let raw = format!("  {:<20} {:>10.1} {:>10.1}   ", name, r.raw_median_us, r.raw_p99_us);
        match (&r.engine_error, r.engine_p50_us) {
            (None, Some(p50)) => println!(
                "{raw}{:>10.1} {:>10} {:>10} {:>10.2}",
                p50,
                opt(r.engine_p99_us, 1),
                thousands(r.commits_per_sec.unwrap_or(0.0)),
                p50 / r.raw_median_us
            ),
            _ => println!("{raw}ENGINE ERROR (see ENGINE PROBLEMS below)"),
        }
    }
    let best =
        rows.iter().filter_map(|r| r.engine_p50_us.map(|p| (p, r.method))).min_by(|a, b| a.0.total_cmp(&b.0));
    let default = rows.iter().find(|r| r.engine_default).map_or("unsupported here", |r| r.method);
    println!(
        "  lowest engine commit latency here: {}; engine default (redo::config::DEFAULT_SYNC_METHOD): {}",
        best.map_or("none", |b| b.1),
        default
    );
    println!();
}

/// The two header lines of the main table, on the columns of [`row_line`].
fn main_header() -> [String; 2] {
    [
        format!(
            "{:>7}  {:<16}{:>8} {:>11} {:^17} {:>8} {:>9} {:^20} {:>9} {:>9}",
            "",
            "",
            "",
            "commits",
            "commit latency",
            "commits",
            "requests",
            "avg log file (us)",
            "sync /",
            "early"
        ),
        format!(
            "{:>7}  {:<16}{:>8} {:>11} {:>8} {:>8} {:>8} {:>9} {:>9} {:>10} {:>9} {:>9}",
            "strands",
            "mode",
            "sessions",
            "per sec",
            "p50 us",
            "p99 us",
            "/ write",
            "/ write",
            "sync",
            "par.write",
            "write",
            "wake/sync"
        ),
    ]
}

fn row_line(r: &Row) -> String {
    format!(
        "{:>7}  {:<16}{:>8} {:>11} {:>8.1} {:>8.1} {:>8} {:>9} {:>9} {:>10} {:>9} {:>9}",
        r.strands,
        r.mode,
        r.sessions,
        thousands(r.commits_per_sec),
        r.p50_us,
        r.p99_us,
        opt(r.commits_per_write, 1),
        opt(r.requests_per_write, 2),
        opt(r.log_file_sync_avg_us, 1),
        opt(r.log_file_parallel_write_avg_us, 1),
        opt(r.sync_to_write_ratio, 2),
        opt(r.early_wakeups_per_sync, 3),
    )
}

pub fn print_main_table(rows: &[Row], sync_method: &str, stalls: &[Stall], not_run: &[String]) {
    println!("ENGINE: ~100-byte transactions, sync method {sync_method}");
    for h in main_header() {
        println!("{h}");
    }
    // Rows and stalls in the order they ran.
    let mode_index = |name: &str| Mode::ALL.iter().position(|m| m.name() == name);
    type Entry<'a> = (u32, Option<usize>, usize, Result<&'a Row, &'a Stall>);
    let mut entries: Vec<Entry> = rows
        .iter()
        .map(|r| (r.strands, mode_index(&r.mode), r.sessions, Ok(r)))
        .chain(stalls.iter().map(|s| (s.strands, mode_index(&s.mode), s.sessions, Err(s))))
        .collect();
    entries.sort_by_key(|e| (e.0, e.1, e.2));
    let mut previous: Option<(u32, Option<usize>)> = None;
    for (strands, mode, _, entry) in entries {
        if previous.is_some_and(|p| p != (strands, mode)) {
            println!();
        }
        previous = Some((strands, mode));
        let r = match entry {
            Ok(r) => r,
            Err(s) => {
                println!(
                    "{:>7}  {:<16}{:>8}  STALLED: commits stopped returning (see ENGINE PROBLEMS)",
                    s.strands, s.mode, s.sessions
                );
                continue;
            }
        };
        println!("{}", row_line(r));
    }
    if !not_run.is_empty() {
        println!("  not run ({} configurations) because their database had stalled", not_run.len());
    }
    println!(
        "  commits / write = user commits / redo writes; requests / write = redo write requests / redo writes;"
    );
    println!(
        "  sync / write = avg log file sync / avg log file parallel write (NOWAIT commits do not wait: '-')"
    );
    println!();
}

pub fn print_ratios(ratios: &[Ratio]) {
    println!("RATIOS (measured against targets; printed, never asserted: machines are noisy)");
    print_ratio_lines(ratios);
}

/// engine-bench's ratios, after the machine limit they divide by.
pub fn print_ratios_to(ratios: &[Ratio], raw: &RawLimit) {
    println!("RATIOS (measured against targets; printed, never asserted: machines are noisy)");
    println!(
        "  machine limit: raw 4 KiB write+sync with {}, the main table's sync method: p50 {:.1} us, mean {:.1} us, {} writes/s",
        raw.method,
        raw.median_us,
        raw.mean_us,
        thousands(raw.ops_per_sec)
    );
    print_ratio_lines(ratios);
}

/// One line per ratio: name, value, target and verdict, and the figures behind it; then a
/// blank line.
pub fn print_ratio_lines(ratios: &[Ratio]) {
    for r in ratios {
        let big = r.target >= 1000.0;
        let fmt = |v: f64| {
            if big {
                thousands(v)
            } else {
                format!("{v:.2}")
            }
        };
        let (value, verdict) = match r.value {
            Some(v) => (fmt(v), if r.pass { "PASS" } else { "MISS" }),
            None => ("-".into(), "NOT MEASURED"),
        };
        println!(
            "  {:<62} {:>10}  target {} {:<9}  {}  ({})",
            r.name,
            value,
            r.comparison,
            fmt(r.target),
            verdict,
            r.detail
        );
    }
    println!();
}

pub fn print_problems(problems: &[String]) {
    if problems.is_empty() {
        return;
    }
    println!("ENGINE PROBLEMS");
    for p in problems {
        println!("  - {p}");
    }
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_line_up_with_the_rows() {
        let [h1, h2] = main_header();
        assert_eq!(h1.len(), h2.len());
        let m = Measured {
            latency_ns: hdrhistogram::Histogram::new(3).unwrap(),
            seconds: 1.0,
            stats_seconds: 1.0,
            delta: Default::default(),
        };
        let row = Row::new(1, Mode::NOWAIT_IMMEDIATE, 64, &m);
        assert_eq!(row_line(&row).len(), h2.len());
        assert!(h2.starts_with("strands  mode            sessions     per sec   p50 us   p99 us"));
    }
}
