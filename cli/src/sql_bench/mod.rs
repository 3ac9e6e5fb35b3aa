//! `redodb sql-bench`: the commit path through the embedded SQL API, measured against the
//! raw redo engine on the same disk.
//!
//! In one directory (one file system), a fresh database per part, in order:
//! 1. the machine's facts and the raw disk (4 KiB write+sync, the engine benchmark's
//!    probe);
//! 2. the raw engine at 32 sessions, WAIT/IMMEDIATE and NOWAIT/IMMEDIATE (the engine
//!    benchmark's workload): the baseline of the ratios;
//! 3. the SQL loops with prepared statements, each session in its commit mode
//!    (`ALTER SESSION SET commit_wait / commit_logging`): (a) insert one row then commit,
//!    (b) update one random row of 30,000 then commit, at 1, 6 and 32 sessions in the
//!    four modes ([`workload`]);
//! 4. the ratios of the SQL loops to the raw engine (printed, never asserted), then the
//!    same four ratios from runs of the engine and the SQL loop back to back, in pairs
//!    ([`paired`]: the verdict least moved by the disk's drift);
//! 5. literal SQL vs bind variables vs a prepared statement, one session of point
//!    SELECTs, with the hard parses each costs;
//! 6. the checkpoint stall: 6 sessions of loop (b) WAIT/IMMEDIATE, first without then
//!    with `Database::checkpoint()` calls, comparing the longest commit;
//! 7. the instrumentation overhead: loop (b) (and in a full run the raw engine and loop
//!    (a)) with `timed_statistics` TRUE vs FALSE ([`overhead`]; alone: `--overhead-only`);
//! 8. joins: the same join queries on the same data in `redodb serve` and a throwaway
//!    PostgreSQL 15, time per query ([`joins`]; alone: `--joins-only`);
//! 9. the JSON document.

mod joins;
mod overhead;
mod paired;
mod report;
mod workload;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use redo::config::DEFAULT_SYNC_METHOD;
use redo::{LogConfig, SyncMethod};

use crate::engine_bench::report::{thousands, Row};
use crate::engine_bench::workload::{self as engine, Mode, Outcome};
use crate::engine_bench::{machine, probe};
use report::{BenchRow, Report, Settings};
use workload::{Finish, Work};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory for the probe file and the databases [default: a fresh temporary
    /// directory, removed at the end]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Where to write the results as JSON [default: target/sql-bench.json if ./target
    /// exists, else ./sql-bench.json]
    #[arg(long)]
    json: Option<PathBuf>,
    /// Measured seconds per configuration [default: 1.0, or 0.25 with --quick]
    #[arg(long)]
    seconds: Option<f64>,
    /// Smoke test: 0.25 s per configuration, sessions 1 and 32 only, fewer SELECTs and a
    /// shorter checkpoint run
    #[arg(long)]
    quick: bool,
    /// Only the instrumentation overhead part (timed_statistics TRUE vs FALSE), after the
    /// disk probe; JSON to target/sql-bench-overhead.json unless --json is given
    #[arg(long)]
    overhead_only: bool,
    /// Sessions of the instrumentation overhead runs [default: 32]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=512))]
    overhead_sessions: Option<u64>,
    /// Pairs of timed/untimed runs of the overhead part [default: 5; 3 with --quick]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100))]
    overhead_pairs: Option<u64>,
    /// Pairs of back-to-back engine and SQL runs for each target ratio [default: 3; 1
    /// with --quick]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100))]
    ratio_pairs: Option<u64>,
    /// Only the join part (redodb serve against a throwaway PostgreSQL 15, the same join
    /// queries on the same data); JSON to target/sql-bench-joins.json unless --json is given
    #[arg(long, conflicts_with = "overhead_only")]
    joins_only: bool,
}

/// Sessions of the raw engine baseline and of the ratios.
pub(crate) const RATIO_SESSIONS: usize = 32;
/// Sessions of the checkpoint run.
const CHECKPOINT_SESSIONS: usize = 6;
/// `Database::checkpoint` calls during the checkpoint run's second phase.
const CHECKPOINT_CALLS: usize = 6;

pub fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    let seconds = args.seconds.unwrap_or(if args.quick { 0.25 } else { 1.0 });
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0) {
        bail!("--seconds must be more than 0 and at most 3600, got {seconds}");
    }
    let measure = Duration::from_secs_f64(seconds);
    let warmup = measure / 10;
    let probe_seconds = if args.quick { 0.5 } else { 1.5 };
    let literal_statements: u64 = if args.quick { 2_000 } else { 20_000 };
    let checkpoint_phase = Duration::from_secs_f64(if args.quick { 0.5 } else { 2.0 });
    let sql_sessions: Vec<usize> = if args.quick { vec![1, 32] } else { vec![1, 6, 32] };
    let ratio_pairs = args.ratio_pairs.map_or(if args.quick { 1 } else { 3 }, |n| n as usize);
    let json_given = args.json.is_some();
    let default_plan = crate::engine_bench::overhead::Plan::default_for(args.quick);
    let overhead_plan = crate::engine_bench::overhead::Plan {
        sessions: args.overhead_sessions.map_or(default_plan.sessions, |n| n as usize),
        pairs: args.overhead_pairs.map_or(default_plan.pairs, |n| n as usize),
    };
    let overhead_runs = overhead::Runs { quick: args.quick, plan: overhead_plan, warmup, measure };
    let json_path = match args.json {
        Some(p) => p,
        None => default_json_path()?,
    };
    let (dir, _temp) = crate::engine_bench::bench_dir(args.dir.as_deref(), "redodb-sql-bench-")?;
    let facts = machine::facts(&dir);
    if args.joins_only {
        let path = if json_given { json_path } else { json_path.with_file_name("sql-bench-joins.json") };
        return joins_alone(&dir, args.quick, facts, &path, started);
    }

    // 1. The machine's limit, and the sync method every database here uses.
    let raw = probe::run(&dir, probe_seconds)?;
    let raw_median_us = raw
        .iter()
        .find(|r| r.method == SyncMethod::Fdatasync.name())
        .and_then(|r| r.median_us)
        .context("no raw fdatasync figure")?;
    let (method, method_source) = if raw.iter().any(|r| r.method == DEFAULT_SYNC_METHOD.name() && r.supported)
    {
        (DEFAULT_SYNC_METHOD, "engine default".to_string())
    } else {
        (
            SyncMethod::Fdatasync,
            format!("the file system does not support the engine default {}", DEFAULT_SYNC_METHOD.name()),
        )
    };
    let defaults = LogConfig::new(".");
    let settings = Settings {
        quick: args.quick,
        seconds_per_configuration: seconds,
        warmup_seconds: warmup.as_secs_f64(),
        raw_probe_seconds: probe_seconds,
        sync_method: method.name(),
        sync_method_source: method_source,
        log_file_size: defaults.log_file_size,
        log_groups: defaults.log_groups,
        checkpoint_interval_ms: 0,
        engine_sessions: RATIO_SESSIONS,
        ratio_pairs,
        engine_payload_bytes: engine::PAYLOAD_BYTES,
        sql_sessions: sql_sessions.clone(),
        row_bytes: workload::ROW_BYTES,
        table_rows: workload::TABLE_ROWS,
        insert_sql: Work::Insert.sql(),
        update_sql: Work::Update.sql(),
        literal_statements,
        checkpoint_sessions: CHECKPOINT_SESSIONS,
        checkpoint_phase_seconds: checkpoint_phase.as_secs_f64(),
        checkpoints: CHECKPOINT_CALLS,
    };
    report::print_header(&facts, &settings);
    crate::engine_bench::report::print_raw(&raw);
    if args.overhead_only {
        let path = if json_given { json_path } else { json_path.with_file_name("sql-bench-overhead.json") };
        return overhead::run_alone(&dir, method, &facts, overhead_runs, &path);
    }

    let mut problems = Vec::new();
    let mut not_run = Vec::new();

    // 2. The raw engine.
    let engine_path = dir.join("sql-bench-engine");
    let (engine_rows, engine_stalled) =
        engine_baseline(&engine_path, method, warmup, measure, true, &mut problems)?;
    report::print_engine(&engine_rows, engine::PAYLOAD_BYTES, false);

    // 3. The SQL loops, then the raw engine again on the same files: the disk's speed
    // drifts, and the ratios take the engine's mean of before and after.
    let mut rows = Vec::new();
    for work in Work::ALL {
        sql_loop(&dir, method, work, &sql_sessions, warmup, measure, &mut rows, &mut not_run, &mut problems)?;
    }
    report::print_sql(&rows, &not_run);
    let engine_after = if engine_stalled {
        Vec::new()
    } else {
        engine_baseline(&engine_path, method, warmup, measure, false, &mut problems)?.0
    };
    report::print_engine(&engine_after, engine::PAYLOAD_BYTES, true);

    // 4. The ratios.
    let ratios = report::ratios(&engine_rows, &engine_after, &rows, RATIO_SESSIONS);
    crate::engine_bench::report::print_ratios(&ratios);
    let paired = paired::run_part(&dir, method, ratio_pairs, warmup, measure, &mut problems)?;
    paired::print(&paired, ratio_pairs, measure);

    // 5. Literal SQL vs bind variables.
    let parse = literal_vs_bind(&dir, method, literal_statements)?;
    report::print_parse(&parse);

    // 6. The checkpoint stall.
    let checkpoint = checkpoint_stall(&dir, method, warmup, checkpoint_phase, &mut problems)?;
    if let Some(c) = &checkpoint {
        report::print_checkpoint(c);
    }

    // 7. What timing costs.
    let overhead = overhead::run_part(&dir, method, overhead_runs, &mut problems)?;

    // 8. Joins, against PostgreSQL.
    let joins = joins::run_part(&dir, args.quick, &mut problems)?;
    joins::print(&joins);
    report::print_problems(&problems);

    // 9. JSON.
    let report = Report {
        machine: facts,
        settings,
        raw_disk: raw,
        raw_fdatasync_median_us: raw_median_us,
        engine: engine_rows,
        engine_after,
        rows,
        ratios,
        paired,
        parse,
        checkpoint,
        overhead,
        joins,
        not_run,
        problems,
        total_seconds: started.elapsed().as_secs_f64(),
    };
    write_json(&json_path, &report)?;
    println!("JSON: {}", json_path.display());
    println!("total time {:.1} s", report.total_seconds);
    if !report.problems.is_empty() {
        // Stuck session threads are abandoned; returning ends the process anyway.
        bail!(
            "{} problem(s) during the run, so the results are incomplete (see PROBLEMS above)",
            report.problems.len()
        );
    }
    Ok(())
}

/// `--joins-only`: the machine's facts, the join part, its JSON document.
fn joins_alone(
    dir: &Path,
    quick: bool,
    machine: machine::MachineFacts,
    json_path: &Path,
    started: Instant,
) -> Result<()> {
    println!(
        "redodb sql-bench --joins-only{}: {} CPUs ({}), {} on {}, data in {}",
        if quick { " --quick" } else { "" },
        machine.cpus,
        machine.arch,
        machine.fs_type,
        machine.fs_device,
        machine.directory
    );
    println!();
    let mut problems = Vec::new();
    let joins = joins::run_part(dir, quick, &mut problems)?;
    joins::print(&joins);
    report::print_problems(&problems);
    let report = joins::Alone { machine, joins, problems, total_seconds: started.elapsed().as_secs_f64() };
    let mut text = serde_json::to_string_pretty(&report).context("encoding the JSON report")?;
    text.push('\n');
    std::fs::write(json_path, text).with_context(|| format!("writing {}", json_path.display()))?;
    println!("JSON: {}", json_path.display());
    println!("total time {:.1} s", report.total_seconds);
    if !report.problems.is_empty() {
        bail!("{} problem(s) during the run (see PROBLEMS above)", report.problems.len());
    }
    Ok(())
}

/// The raw engine at [`RATIO_SESSIONS`] sessions, WAIT/IMMEDIATE and NOWAIT/IMMEDIATE,
/// exactly as `engine-bench` runs it (1 strand, its checkpointer, ~100-byte changes), on
/// the database in `path`: a fresh one that is kept for the second time (`first`), then
/// the same files again, removed at the end. Returns the rows and whether it stalled.
fn engine_baseline(
    path: &Path,
    method: SyncMethod,
    warmup: Duration,
    measure: Duration,
    first: bool,
    problems: &mut Vec<String>,
) -> Result<(Vec<BenchRow>, bool)> {
    let database = engine::Database::open(path, 1, method, 1, first)?;
    let mut rows = Vec::new();
    for mode in [Mode::WAIT_IMMEDIATE, Mode::NOWAIT_IMMEDIATE] {
        let label = format!(
            "engine{}, {}, {RATIO_SESSIONS} sessions",
            if first { "" } else { " (again)" },
            mode.name()
        );
        eprintln!("{label}");
        match database.run_config(mode, RATIO_SESSIONS, warmup, measure, &label)? {
            Outcome::Measured(m) => {
                let figures = Row::new(1, mode, RATIO_SESSIONS, &m);
                eprintln!("{label}: {} commits/s", thousands(figures.commits_per_sec));
                rows.push(BenchRow {
                    workload: "engine",
                    redo_bytes_per_commit: workload::redo_bytes_per_commit(&m.delta),
                    figures,
                    sql: None,
                });
            }
            Outcome::Stalled(stall) => {
                eprintln!("{label}: STALL: {}", stall.summary());
                problems.push(format!("STALL {label}: {}", stall.summary()));
                database.abandon();
                return Ok((rows, true));
            }
        }
    }
    if first {
        database.shut()?;
    } else {
        database.close()?;
    }
    Ok((rows, false))
}

/// One SQL loop in every mode and session count, on a fresh database.
#[allow(clippy::too_many_arguments)]
fn sql_loop(
    dir: &Path,
    method: SyncMethod,
    work: Work,
    sessions: &[usize],
    warmup: Duration,
    measure: Duration,
    rows: &mut Vec<BenchRow>,
    not_run: &mut Vec<String>,
    problems: &mut Vec<String>,
) -> Result<()> {
    let path = dir.join(format!("sql-bench-{}", work.name()));
    let db = workload::open(&path, method)?;
    workload::create_tables(&db, work)?;
    let total = Mode::ALL.len() * sessions.len();
    let mut stalled = false;
    let mut n = 0;
    for mode in Mode::ALL {
        for &count in sessions {
            n += 1;
            let label = format!(
                "[{n:>2}/{total}] SQL {}, {}, {count} session{}",
                work.name(),
                mode.name(),
                if count == 1 { "" } else { "s" }
            );
            if stalled {
                eprintln!("{label}: not run (the database stalled)");
                not_run.push(label);
                continue;
            }
            let id_base = (n as i64) << 40;
            match workload::run_config(&db, work, mode, count, warmup, measure, id_base)? {
                Finish::Done(c) => {
                    let figures = Row::new(1, mode, count, &c.measured);
                    eprintln!(
                        "{label}: {} commits/s, p50 {:.1} us",
                        thousands(figures.commits_per_sec),
                        figures.p50_us
                    );
                    rows.push(BenchRow {
                        workload: work.name(),
                        redo_bytes_per_commit: workload::redo_bytes_per_commit(&c.measured.delta),
                        figures,
                        sql: Some(c.sql),
                    });
                }
                Finish::Failed(errors) => {
                    eprintln!("{label}: FAILED: {}", errors.join("; "));
                    problems.extend(errors.into_iter().map(|e| format!("{label}: {e}")));
                }
                Finish::Stalled(text) => {
                    eprintln!("{label}: STALL: {text}");
                    problems.push(format!("STALL {label}: {text}"));
                    stalled = true;
                    continue;
                }
            }
            if work == Work::Insert {
                workload::truncate_w1(&db)?;
            }
        }
    }
    close(db, &path, stalled)
}

/// Drops a part's database and removes its directory, unless it stalled: then its stuck
/// threads keep it alive and its files stay until the run's directory goes.
fn close(db: Arc<db::Database>, path: &Path, stalled: bool) -> Result<()> {
    drop(db);
    if !stalled {
        std::fs::remove_dir_all(path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(())
}

fn literal_vs_bind(dir: &Path, method: SyncMethod, n: u64) -> Result<Vec<workload::ParseRow>> {
    let path = dir.join("sql-bench-parse");
    let db = workload::open(&path, method)?;
    workload::load_w2(&db)?;
    let rows = workload::literal_vs_bind(&db, n)?;
    close(db, &path, false)?;
    Ok(rows)
}

fn checkpoint_stall(
    dir: &Path,
    method: SyncMethod,
    warmup: Duration,
    phase: Duration,
    problems: &mut Vec<String>,
) -> Result<Option<workload::CheckpointStall>> {
    let path = dir.join("sql-bench-checkpoint");
    let db = workload::open(&path, method)?;
    workload::load_w2(&db)?;
    let label = format!("checkpoint stall: {CHECKPOINT_SESSIONS} sessions, update, WAIT/IMMEDIATE");
    eprintln!("{label}");
    let (result, stalled) = match workload::checkpoint_stall(
        &db,
        CHECKPOINT_SESSIONS,
        warmup.max(Duration::from_millis(200)),
        phase,
        CHECKPOINT_CALLS,
    )? {
        Finish::Done(c) => (Some(c), false),
        Finish::Failed(errors) => {
            problems.extend(errors.into_iter().map(|e| format!("{label}: {e}")));
            (None, false)
        }
        Finish::Stalled(text) => {
            problems.push(format!("STALL {label}: {text}"));
            (None, true)
        }
    };
    if let Some(c) = &result {
        for k in c.checkpoints.iter().filter(|k| k.image_bytes.is_none()) {
            problems.push(format!(
                "{label}: checkpoint at {:.0} ms wrote no image: {}",
                k.at_ms,
                k.error.as_deref().unwrap_or("?")
            ));
        }
    }
    close(db, &path, stalled)?;
    Ok(result)
}

fn default_json_path() -> Result<PathBuf> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let target = cwd.join("target");
    Ok(if target.is_dir() { target.join("sql-bench.json") } else { cwd.join("sql-bench.json") })
}

fn write_json(path: &Path, report: &Report) -> Result<()> {
    let mut text = serde_json::to_string_pretty(report).context("encoding the JSON report")?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
