//! `redodb engine-bench`: the redo engine measured against the machine's own disk.
//!
//! In one directory (one file system), in order:
//! 1. the machine's facts;
//! 2. the raw disk: 4 KiB write+sync with each sync method ([`probe`]);
//! 3. each supported sync method in the engine, 1 session WAIT/IMMEDIATE, against the
//!    raw figure of that same method;
//! 4. the main table: strands 1 and 2 x the four COMMIT WRITE modes x 1-64 sessions
//!    ([`workload`]), plus 2 sessions for the NOWAIT modes; the two strand counts run
//!    side by side (each configuration on 1 strand, then at once on 2 strands);
//! 5. the ratios to their targets (printed, never asserted), and the JSON document;
//!    before them, what timing the wait interface costs ([`overhead`]).
//!
//! The machine limit the ratios use ([`RawLimit`]) is the raw row of the main table's
//! sync method, never another method's: each engine figure is divided by the raw figure
//! of the same statistic (p50 by the raw median, commits/s by the raw writes/s the probe
//! counted), so a ratio holds only what the engine adds.

pub(crate) use crate::common::machine;
pub(crate) mod overhead;
pub(crate) mod probe;
pub(crate) mod report;
pub(crate) mod workload;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use redo::config::DEFAULT_SYNC_METHOD;
use redo::SyncMethod;

use report::{RawLimit, Report, Row, Settings, SyncMethodRow};
use workload::{Mode, Outcome, Stall};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory for the probe file and the databases [default: a fresh temporary
    /// directory, removed at the end]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Where to write the results as JSON [default: target/engine-bench.json if ./target
    /// exists, else ./engine-bench.json]
    #[arg(long)]
    json: Option<PathBuf>,
    /// Measured seconds per configuration [default: 1.0, or 0.25 with --quick]
    #[arg(long)]
    seconds: Option<f64>,
    /// Smoke test: 0.25 s per configuration, sessions 1 and 32 only
    #[arg(long)]
    quick: bool,
    /// Sync method of the main table [default: the engine's default]
    #[arg(long, value_parser = sync_method_parser())]
    sync_method: Option<SyncMethod>,
}

fn sync_method_parser() -> impl clap::builder::TypedValueParser<Value = SyncMethod> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(SyncMethod::ALL.map(|m| m.name()))
        .map(|name| SyncMethod::parse(&name).expect("a possible value"))
}

/// What the main table runs.
struct Plan {
    strands: Vec<u32>,
    wait_sessions: Vec<usize>,
    nowait_sessions: Vec<usize>,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        let wait_sessions = if quick { vec![1, 32] } else { vec![1, 6, 32, 64] };
        // NOWAIT also runs 2 sessions, for the 1,000,000 commits/s check.
        let mut nowait_sessions = wait_sessions.clone();
        nowait_sessions.push(2);
        nowait_sessions.sort_unstable();
        Plan { strands: vec![1, 2], wait_sessions, nowait_sessions }
    }

    fn sessions(&self, mode: Mode) -> &[usize] {
        if mode.waits() {
            &self.wait_sessions
        } else {
            &self.nowait_sessions
        }
    }

    fn configurations(&self) -> usize {
        self.strands.len() * Mode::ALL.iter().map(|m| self.sessions(*m).len()).sum::<usize>()
    }
}

pub fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    let seconds = args.seconds.unwrap_or(if args.quick { 0.25 } else { 1.0 });
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0) {
        bail!("--seconds must be more than 0 and at most 3600, got {seconds}");
    }
    let measure = Duration::from_secs_f64(seconds);
    let warmup = measure / 10;
    let probe_seconds = if args.quick { 0.5 } else { 1.5 };
    let json_path = match args.json {
        Some(p) => p,
        None => default_json_path()?,
    };

    // Everything happens in one directory: the caller's, or a temporary one removed at
    // the end (when `_temp` drops).
    let (dir, _temp) = bench_dir(args.dir.as_deref(), "redodb-engine-bench-")?;
    let plan = Plan::new(args.quick);
    let facts = machine::facts(&dir);
    let mut settings = Settings {
        quick: args.quick,
        seconds_per_configuration: seconds,
        warmup_seconds: warmup.as_secs_f64(),
        raw_probe_seconds: probe_seconds,
        sync_method: DEFAULT_SYNC_METHOD.name(),
        sync_method_source: String::new(),
        engine_default_sync_method: DEFAULT_SYNC_METHOD.name(),
        payload_bytes: workload::PAYLOAD_BYTES,
        strands: plan.strands.clone(),
        wait_sessions: plan.wait_sessions.clone(),
        nowait_sessions: plan.nowait_sessions.clone(),
    };
    report::print_header(&facts, &settings);

    // 2. The machine's limit.
    let raw = probe::run(&dir, probe_seconds)?;
    report::print_raw(&raw);
    let supported: Vec<SyncMethod> = SyncMethod::ALL
        .into_iter()
        .filter(|m| raw.iter().any(|r| r.method == m.name() && r.supported))
        .collect();

    // 3. The sync methods in the engine.
    let mut findings = Findings::default();
    let sync_rows = sync_method_table(&dir, &raw, &supported, warmup, measure, &mut findings)?;
    report::print_sync_methods(&sync_rows);

    // 4. The main table.
    let (method, source) = choose_sync_method(args.sync_method, &supported, &sync_rows, &dir, &facts)?;
    settings.sync_method = method.name();
    settings.sync_method_source = source;
    // The engine's figures are compared with the raw disk's under the same sync method:
    // an O_DIRECT|O_DSYNC log against a raw fdatasync would measure the method, not the
    // engine.
    let raw_limit = RawLimit::of(&raw, method)?;
    let table = main_table(&dir, &plan, method, warmup, measure)?;
    report::print_main_table(&table.rows, method.name(), &table.stalls, &table.not_run);
    findings.stalls.extend(table.stalls);

    // 4b. Multiplexing: what a second member costs.
    let multiplexing = multiplexing_table(&dir, method, &plan, warmup, measure, &mut findings)?;
    report::print_multiplexing(&multiplexing, method.name());

    // 4c. What timing costs: timed_statistics TRUE vs FALSE.
    let overhead_db = dir.join("engine-bench-overhead");
    let overhead = match overhead::engine(
        &overhead_db,
        method,
        overhead::Plan::default_for(args.quick),
        warmup,
        measure,
    )? {
        Ok(o) => Some(o),
        Err(stall) => {
            findings.stalls.push(stall);
            None
        }
    };
    let not_measured = if overhead.is_none() { vec!["engine".to_string()] } else { Vec::new() };
    overhead::print(overhead.as_slice(), &not_measured);

    // 5. The ratios, and what went wrong in the engine.
    let ratios = report::ratios(&table.rows, &raw_limit);
    report::print_ratios_to(&ratios, &raw_limit);
    let mut problems = findings.errors;
    problems.extend(findings.stalls.iter().map(|s| format!("STALL {}: {}", s.configuration, s.summary())));
    report::print_problems(&problems);

    // 6. JSON.
    let report = Report {
        machine: facts,
        settings,
        raw_disk: raw,
        raw_limit,
        sync_methods: sync_rows,
        rows: table.rows,
        multiplexing,
        overhead,
        ratios,
        stalls: findings.stalls,
        not_run: table.not_run,
        engine_problems: problems,
        total_seconds: started.elapsed().as_secs_f64(),
    };
    write_json(&json_path, &report)?;
    println!("JSON: {}", json_path.display());
    println!("total time {:.1} s", report.total_seconds);
    if !report.stalls.is_empty() {
        // The stuck session threads are abandoned; returning ends the process anyway.
        bail!(
            "the engine stalled in {} configuration(s), so the results are incomplete (see ENGINE PROBLEMS above)",
            report.stalls.len()
        );
    }
    Ok(())
}

/// WAIT/IMMEDIATE with 1 and then 2 members per group (the second in a sibling
/// directory of the same file system), at 1 session and at the most WAIT sessions of the
/// plan: each member is written concurrently, so a second member should cost little.
fn multiplexing_table(
    dir: &Path,
    method: SyncMethod,
    plan: &Plan,
    warmup: Duration,
    measure: Duration,
    findings: &mut Findings,
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let many = plan.wait_sessions.iter().copied().filter(|&s| s <= 32).max().unwrap_or(1);
    for members in [1u32, 2] {
        let db = dir.join(format!("engine-bench-members-{members}"));
        let database = workload::Database::open(&db, 1, method, members, true)?;
        for sessions in [1usize, many] {
            let label = format!("members {members}, WAIT/IMMEDIATE, {sessions} sessions");
            eprintln!("{label}");
            match database.run_config(Mode::WAIT_IMMEDIATE, sessions, warmup, measure, &label)? {
                Outcome::Measured(m) => rows.push(Row::new(members, Mode::WAIT_IMMEDIATE, sessions, &m)),
                Outcome::Stalled(stall) => {
                    eprintln!("{label}: STALL: {}", stall.summary());
                    findings.stalls.push(stall);
                    database.abandon();
                    return Ok(rows);
                }
            }
        }
        database.close()?;
    }
    Ok(rows)
}

pub(crate) use crate::common::bench_dir;

/// What went wrong in the engine without ending the run.
#[derive(Default)]
struct Findings {
    /// Engine errors reported in the tables (a sync method it cannot open a database with).
    errors: Vec<String>,
    stalls: Vec<Stall>,
}

/// Each sync method the file system supports, in the engine: 1 session WAIT/IMMEDIATE on
/// a fresh database. A method the engine fails with is reported in its row, not fatal:
/// comparing the methods is what this table is for.
fn sync_method_table(
    dir: &Path,
    raw: &[probe::RawDisk],
    supported: &[SyncMethod],
    warmup: Duration,
    measure: Duration,
    findings: &mut Findings,
) -> Result<Vec<SyncMethodRow>> {
    let mut rows = Vec::new();
    for method in supported {
        let label = format!("sync method {}: 1 session WAIT/IMMEDIATE", method.name());
        eprintln!("{label}");
        let r = raw.iter().find(|r| r.method == method.name()).expect("supported methods have raw figures");
        let mut row = SyncMethodRow {
            method: method.name(),
            engine_default: *method == DEFAULT_SYNC_METHOD,
            raw_median_us: r.median_us.unwrap_or(0.0),
            raw_p99_us: r.p99_us.unwrap_or(0.0),
            engine_error: None,
            engine_p50_us: None,
            engine_p99_us: None,
            commits_per_sec: None,
            commits_per_write: None,
        };
        let db = dir.join(format!("engine-bench-sync-{}", method.name()));
        match workload::Database::create(&db, 1, *method) {
            Err(e) => {
                let text = error_text(&e);
                eprintln!("{label}: ENGINE ERROR: {text}");
                findings.errors.push(format!("sync method {}: {text}", method.name()));
                row.engine_error = Some(text);
            }
            Ok(database) => match database.run_config(Mode::WAIT_IMMEDIATE, 1, warmup, measure, &label)? {
                Outcome::Measured(m) => {
                    database.close()?;
                    let measured = Row::new(1, Mode::WAIT_IMMEDIATE, 1, &m);
                    row.engine_p50_us = Some(measured.p50_us);
                    row.engine_p99_us = Some(measured.p99_us);
                    row.commits_per_sec = Some(measured.commits_per_sec);
                    row.commits_per_write = measured.commits_per_write;
                }
                Outcome::Stalled(stall) => {
                    database.abandon();
                    eprintln!("{label}: STALL: {}", stall.summary());
                    row.engine_error = Some(format!("stalled: {}", stall.summary()));
                    findings.stalls.push(stall);
                }
            },
        }
        rows.push(row);
    }
    Ok(rows)
}

/// The main table's sync method and where the choice came from: `--sync-method`, else the
/// engine default, else (when the default does not work here) the method with the lowest
/// engine commit latency, with a note.
fn choose_sync_method(
    asked: Option<SyncMethod>,
    supported: &[SyncMethod],
    sync_rows: &[SyncMethodRow],
    dir: &Path,
    facts: &machine::MachineFacts,
) -> Result<(SyncMethod, String)> {
    if let Some(m) = asked {
        if !supported.contains(&m) {
            bail!("--sync-method {} is not supported in {} ({})", m.name(), dir.display(), facts.fs_type);
        }
        return Ok((m, "--sync-method".into()));
    }
    let works = |r: &&SyncMethodRow| r.engine_error.is_none();
    if sync_rows.iter().filter(works).any(|r| r.method == DEFAULT_SYNC_METHOD.name()) {
        return Ok((DEFAULT_SYNC_METHOD, "engine default".into()));
    }
    let best = sync_rows
        .iter()
        .filter(works)
        .min_by(|a, b| {
            let p50 = |r: &SyncMethodRow| r.engine_p50_us.unwrap_or(f64::INFINITY);
            p50(a).total_cmp(&p50(b))
        })
        .and_then(|r| SyncMethod::parse(r.method))
        .context("the engine works with no sync method here")?;
    let why = if sync_rows.iter().any(|r| r.engine_default) {
        "the engine failed with it (see ENGINE PROBLEMS)"
    } else {
        "the file system does not support it"
    };
    println!(
        "NOTE: the main table uses {} (lowest engine latency above) instead of the engine default {}: {why}",
        best.name(),
        DEFAULT_SYNC_METHOD.name(),
    );
    println!();
    Ok((best, format!("fallback from the engine default {}: {why}", DEFAULT_SYNC_METHOD.name())))
}

/// The main table's rows, and what did not complete.
struct MainTable {
    rows: Vec<Row>,
    stalls: Vec<Stall>,
    /// Configurations skipped because their database had stalled.
    not_run: Vec<String>,
}

/// Runs the main table. Both strand counts have their database open for the whole table
/// and each configuration runs on one right after the other, so the 2-strands / 1-strand
/// comparison is not skewed by the disk drifting over the run.
fn main_table(
    dir: &Path,
    plan: &Plan,
    method: SyncMethod,
    warmup: Duration,
    measure: Duration,
) -> Result<MainTable> {
    let total = plan.configurations();
    let mut table = MainTable { rows: Vec::with_capacity(total), stalls: Vec::new(), not_run: Vec::new() };
    // One database, reopened with each strand count in turn: both strand counts write the
    // same files, so the comparison is not skewed by where the files lie on the disk.
    let db = dir.join("engine-bench-strands");
    workload::Database::create(&db, plan.strands[0], method)?.shut()?;
    let mut stalled = false;
    let mut n = 0;
    for mode in Mode::ALL {
        for &sessions in plan.sessions(mode) {
            for &strands in &plan.strands {
                n += 1;
                let label = format!(
                    "[{n:>2}/{total}] strands {strands}, {}, {sessions} session{}",
                    mode.name(),
                    if sessions == 1 { "" } else { "s" }
                );
                if stalled {
                    eprintln!("{label}: not run (the database stalled)");
                    table.not_run.push(label);
                    continue;
                }
                let d = workload::Database::open(&db, strands, method, 1, false)?;
                match d.run_config(mode, sessions, warmup, measure, &label)? {
                    Outcome::Measured(m) => {
                        d.shut()?;
                        let row = Row::new(strands, mode, sessions, &m);
                        eprintln!(
                            "{label}: {} commits/s, p50 {:.1} us",
                            report::thousands(row.commits_per_sec),
                            row.p50_us
                        );
                        table.rows.push(row);
                    }
                    Outcome::Stalled(stall) => {
                        eprintln!("{label}: STALL: {}", stall.summary());
                        table.stalls.push(stall);
                        d.abandon();
                        stalled = true;
                    }
                }
            }
        }
    }
    if !stalled {
        std::fs::remove_dir_all(&db).with_context(|| format!("removing {}", db.display()))?;
    }
    // Rows by strands, then mode, then sessions, as the table prints them.
    let mode_index = |name: &str| Mode::ALL.iter().position(|m| m.name() == name);
    table.rows.sort_by_key(|r| (r.strands, mode_index(&r.mode), r.sessions));
    Ok(table)
}

/// An error and its causes on one line, without repeating a cause that the message
/// before it already ends with (some errors print their source in their own message).
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if !text.ends_with(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    text
}

fn default_json_path() -> Result<PathBuf> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let target = cwd.join("target");
    Ok(if target.is_dir() { target.join("engine-bench.json") } else { cwd.join("engine-bench.json") })
}

fn write_json(path: &Path, report: &Report) -> Result<()> {
    let mut text = serde_json::to_string_pretty(report).context("encoding the JSON report")?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
