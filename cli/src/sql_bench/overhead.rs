//! What the wait interface's timing costs through SQL: loop (b) (and (a) in a full run)
//! at 32 sessions NOWAIT/IMMEDIATE with `ALTER SYSTEM SET timed_statistics = TRUE` and
//! `= FALSE` in alternating pairs, on one database per loop; a full run measures the raw
//! engine's loop the same way first. The pairs, medians, verdict and printing are
//! `engine_bench::overhead`'s, so both benchmarks judge the 5% target alike.
//!
//! Through SQL, timing is more than the engine's: every user call reads the clock and the
//! thread's CPU clock twice (`DB time`, `DB CPU`), every changed row stamps a possible
//! lock wait, every commit its response time and its place in the backlog.
//! `--overhead-only` runs this part alone (after the disk probe that picks the sync
//! method) and writes its own JSON document.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use redo::{Stat, SyncMethod};
use serde::Serialize;

use super::workload::{self, Finish, Work};
use crate::engine_bench::machine::MachineFacts;
use crate::engine_bench::overhead::{self, Overhead, Plan, RunFigures, MODE};

/// Name of a SQL loop in the overhead table.
fn loop_name(work: Work) -> String {
    let letter = if work == Work::Insert { "a" } else { "b" };
    format!("SQL ({letter}) {}", work.name())
}

/// One SQL loop with timing on and off, on a fresh database in `dir`. None if a run did
/// not complete (why is in `problems`).
fn sql(
    dir: &Path,
    method: SyncMethod,
    work: Work,
    plan: Plan,
    warmup: Duration,
    measure: Duration,
    problems: &mut Vec<String>,
) -> Result<Option<Overhead>> {
    let path = dir.join(format!("sql-bench-overhead-{}", work.name()));
    let db = workload::open(&path, method)?;
    workload::create_tables(&db, work)?;
    let mut admin = db.session();
    let mut stalled = false;
    let mut n = 0i64;
    let name = loop_name(work);
    let result = overhead::alternate(&name, plan, measure.as_secs_f64(), |timed, label| {
        let alter = format!("ALTER SYSTEM SET timed_statistics = {}", if timed { "TRUE" } else { "FALSE" });
        admin.execute(&alter, &[]).with_context(|| alter.clone())?;
        n += 1;
        let reading = || (overhead::process_cpu(), db.log().stats().get(Stat::UserCommits));
        let before = reading();
        Ok(match workload::run_config(&db, work, MODE, plan.sessions, warmup, measure, n << 40)? {
            Finish::Done(c) => {
                let cpu_us_per_commit = overhead::cpu_per_commit(before, reading());
                if work == Work::Insert {
                    workload::truncate_w1(&db)?;
                }
                Some(RunFigures { commits_per_sec: c.measured.commits_per_sec(), cpu_us_per_commit })
            }
            Finish::Failed(errors) => {
                eprintln!("{label}: FAILED: {}", errors.join("; "));
                problems.extend(errors.into_iter().map(|e| format!("{label}: {e}")));
                None
            }
            Finish::Stalled(text) => {
                eprintln!("{label}: STALL: {text}");
                problems.push(format!("STALL {label}: {text}"));
                stalled = true;
                None
            }
        })
    })?;
    if !stalled {
        admin.execute("ALTER SYSTEM SET timed_statistics = TRUE", &[]).context("timed_statistics back on")?;
        drop(admin);
        drop(db);
        std::fs::remove_dir_all(&path).with_context(|| format!("removing {}", path.display()))?;
    }
    // A stalled database's stuck threads keep it alive; its files go with the run's directory.
    Ok(result)
}

/// The overhead part of `sql-bench`: the raw engine (full runs only), loop (b), and loop
/// (a) (full runs only), printed as one table. Returns the loops measured.
pub fn run_part(
    dir: &Path,
    method: SyncMethod,
    runs: Runs,
    problems: &mut Vec<String>,
) -> Result<Vec<Overhead>> {
    let Runs { quick, plan, warmup, measure } = runs;
    let mut rows = Vec::new();
    let mut not_measured = Vec::new();
    if !quick {
        match overhead::engine(&dir.join("sql-bench-overhead-engine"), method, plan, warmup, measure)? {
            Ok(o) => rows.push(o),
            Err(stall) => {
                problems.push(format!("STALL {}: {}", stall.configuration, stall.summary()));
                not_measured.push("engine".to_string());
            }
        }
    }
    let works: &[Work] = if quick { &[Work::Update] } else { &[Work::Update, Work::Insert] };
    for &work in works {
        match sql(dir, method, work, plan, warmup, measure, problems)? {
            Some(o) => rows.push(o),
            None => not_measured.push(loop_name(work)),
        }
    }
    overhead::print(&rows, &not_measured);
    Ok(rows)
}

/// What the overhead part runs: a quick run measures loop (b) only.
#[derive(Clone, Copy, Debug)]
pub struct Runs {
    pub quick: bool,
    pub plan: Plan,
    pub warmup: Duration,
    pub measure: Duration,
}

/// The JSON document of `sql-bench --overhead-only`.
#[derive(Serialize)]
struct OverheadReport<'a> {
    machine: &'a MachineFacts,
    quick: bool,
    seconds_per_run: f64,
    warmup_seconds: f64,
    sync_method: &'static str,
    overhead: Vec<Overhead>,
    problems: Vec<String>,
    total_seconds: f64,
}

/// `sql-bench --overhead-only`: the overhead part alone, printed and written as JSON to
/// `json_path`.
pub fn run_alone(
    dir: &Path,
    method: SyncMethod,
    facts: &MachineFacts,
    runs: Runs,
    json_path: &Path,
) -> Result<()> {
    let Runs { quick, warmup, measure, .. } = runs;
    let started = Instant::now();
    let mut problems = Vec::new();
    let rows = run_part(dir, method, runs, &mut problems)?;
    super::report::print_problems(&problems);
    let report = OverheadReport {
        machine: facts,
        quick,
        seconds_per_run: measure.as_secs_f64(),
        warmup_seconds: warmup.as_secs_f64(),
        sync_method: method.name(),
        overhead: rows,
        problems,
        total_seconds: started.elapsed().as_secs_f64(),
    };
    let mut text = serde_json::to_string_pretty(&report).context("encoding the JSON report")?;
    text.push('\n');
    std::fs::write(json_path, text).with_context(|| format!("writing {}", json_path.display()))?;
    println!("JSON: {}", json_path.display());
    if !report.problems.is_empty() {
        anyhow::bail!("{} problem(s) during the run (see PROBLEMS above)", report.problems.len());
    }
    Ok(())
}
