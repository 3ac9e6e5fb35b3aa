//! What the wait interface's timing costs: the same NOWAIT/IMMEDIATE commit loop with
//! `timed_statistics` TRUE (the default: every wait, commit and call timed) and FALSE
//! (counted only, no clock read for the wait interface), against the target of under 5%
//! of commit throughput.
//!
//! A busy or virtual machine drifts by more than the effect measured, so the runs
//! alternate in pairs, the order flipping every pair (TRUE FALSE, FALSE TRUE, ...: a
//! steady drift favours neither setting), and the figures compared are the medians of
//! each setting's runs. Each pair's own overhead is kept too, to show how far they agree.
//! Beside the throughput, each run's process CPU per commit (every thread: sessions, log
//! writer, checkpointer; over the whole run) is compared the same way: it moves much less
//! than the throughput when other work shares the machine.
//! `engine-bench` measures the raw engine this way, `sql-bench` the SQL loops (its
//! `overhead` module), both with [`alternate`].

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use redo::{Stat, SyncMethod};
use serde::Serialize;

use super::report::thousands;
use super::workload::{self, Mode, Outcome, Stall};

/// The most throughput timing may cost, in percent.
pub const TARGET_PCT: f64 = 5.0;

/// Sessions of the overhead loops by default: many sessions on few CPUs, where the CPU
/// each commit costs decides the throughput. Fewer sessions (`sql-bench
/// --overhead-sessions`) give steadier figures on a noisy machine: with 32 runnable threads
/// on 2 CPUs a run's throughput moves by tens of percent with the scheduler alone.
pub const DEFAULT_SESSIONS: usize = 32;

/// The commit mode of the overhead loops: no disk wait to hide the CPU cost in.
pub const MODE: Mode = Mode::NOWAIT_IMMEDIATE;

/// How the overhead is measured: sessions per run and pairs of runs.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub sessions: usize,
    pub pairs: usize,
}

impl Plan {
    /// [`DEFAULT_SESSIONS`] sessions; 3 pairs for a quick run, 5 for a full one.
    pub fn default_for(quick: bool) -> Plan {
        Plan { sessions: DEFAULT_SESSIONS, pairs: if quick { 3 } else { 5 } }
    }
}

/// What one run measured.
#[derive(Clone, Copy, Debug)]
pub struct RunFigures {
    pub commits_per_sec: f64,
    /// Process CPU time per user commit over the whole run (None: no commit counted).
    pub cpu_us_per_commit: Option<f64>,
}

/// One run of a pair.
#[derive(Clone, Debug, Serialize)]
pub struct OverheadRun {
    pub pair: usize,
    pub timed_statistics: bool,
    pub commits_per_sec: f64,
    pub cpu_us_per_commit: Option<f64>,
}

/// CPU time this process has used (all threads), from `getrusage`.
pub fn process_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value for the kernel to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_SELF always exists.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Process CPU per user commit over a run: `(cpu, commits)` read before and after it.
pub fn cpu_per_commit(before: (Duration, u64), after: (Duration, u64)) -> Option<f64> {
    let commits = after.1.saturating_sub(before.1);
    (commits > 0).then(|| after.0.saturating_sub(before.0).as_secs_f64() * 1e6 / commits as f64)
}

/// One loop measured with timing on and off.
#[derive(Clone, Debug, Serialize)]
pub struct Overhead {
    /// "engine", "SQL (b) update", "SQL (a) insert".
    pub workload: String,
    pub mode: String,
    pub sessions: usize,
    pub pairs: usize,
    pub seconds_per_run: f64,
    /// Every run in the order it ran.
    pub runs: Vec<OverheadRun>,
    pub timed_median_commits_per_sec: f64,
    pub untimed_median_commits_per_sec: f64,
    /// Throughput timing costs: (untimed - timed) / untimed of the medians, in percent
    /// (negative: the timed runs were faster, i.e. the cost is below the noise). The
    /// verdict is on this figure.
    pub overhead_pct: f64,
    /// The same per pair.
    pub pair_overheads_pct: Vec<f64>,
    pub timed_median_cpu_us_per_commit: Option<f64>,
    pub untimed_median_cpu_us_per_commit: Option<f64>,
    /// CPU per commit timing adds: (timed - untimed) / untimed of the medians, in percent.
    pub cpu_overhead_pct: Option<f64>,
    pub target_pct: f64,
    pub pass: bool,
}

/// Median of a non-empty sample.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "median of no runs");
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn overhead_pct(timed: f64, untimed: f64) -> f64 {
    if untimed > 0.0 {
        (untimed - timed) / untimed * 100.0
    } else {
        0.0
    }
}

/// Runs `pairs` pairs of `run(timed_statistics, label)`, which returns the figures of one
/// run, or None if the run did not complete (the caller has recorded why): then the
/// measurement stops and None is returned.
pub fn alternate(
    workload: &str,
    plan: Plan,
    seconds_per_run: f64,
    mut run: impl FnMut(bool, &str) -> Result<Option<RunFigures>>,
) -> Result<Option<Overhead>> {
    let Plan { sessions, pairs } = plan;
    assert!(pairs >= 1, "at least one pair");
    let mut runs = Vec::with_capacity(2 * pairs);
    for pair in 0..pairs {
        let order = if pair % 2 == 0 { [true, false] } else { [false, true] };
        for timed in order {
            let label = format!(
                "overhead {workload}, {}, {sessions} sessions, timed_statistics {}, pair {}/{pairs}",
                MODE.name(),
                if timed { "TRUE" } else { "FALSE" },
                pair + 1
            );
            eprintln!("{label}");
            let Some(f) = run(timed, &label)? else { return Ok(None) };
            eprintln!(
                "{label}: {} commits/s, {} us CPU per commit",
                thousands(f.commits_per_sec),
                f.cpu_us_per_commit.map_or("-".into(), |c| format!("{c:.2}"))
            );
            runs.push(OverheadRun {
                pair,
                timed_statistics: timed,
                commits_per_sec: f.commits_per_sec,
                cpu_us_per_commit: f.cpu_us_per_commit,
            });
        }
    }
    Ok(Some(summarize(workload, plan, seconds_per_run, runs)))
}

fn summarize(workload: &str, plan: Plan, seconds_per_run: f64, runs: Vec<OverheadRun>) -> Overhead {
    let Plan { sessions, pairs } = plan;
    let of = |timed: bool| -> Vec<f64> {
        runs.iter().filter(|r| r.timed_statistics == timed).map(|r| r.commits_per_sec).collect()
    };
    let (timed, untimed) = (median(of(true)), median(of(false)));
    let pair_overheads_pct = (0..pairs)
        .map(|p| {
            let get = |t: bool| {
                runs.iter()
                    .find(|r| r.pair == p && r.timed_statistics == t)
                    .map_or(0.0, |r| r.commits_per_sec)
            };
            overhead_pct(get(true), get(false))
        })
        .collect();
    let overhead = overhead_pct(timed, untimed);
    let cpu_of = |timed: bool| -> Option<f64> {
        let v: Option<Vec<f64>> =
            runs.iter().filter(|r| r.timed_statistics == timed).map(|r| r.cpu_us_per_commit).collect();
        v.map(median)
    };
    let (cpu_timed, cpu_untimed) = (cpu_of(true), cpu_of(false));
    let cpu_overhead_pct = cpu_timed.zip(cpu_untimed).map(|(t, u)| -overhead_pct(t, u));
    Overhead {
        workload: workload.to_string(),
        mode: MODE.name(),
        sessions,
        pairs,
        seconds_per_run,
        runs,
        timed_median_commits_per_sec: timed,
        untimed_median_commits_per_sec: untimed,
        overhead_pct: overhead,
        pair_overheads_pct,
        timed_median_cpu_us_per_commit: cpu_timed,
        untimed_median_cpu_us_per_commit: cpu_untimed,
        cpu_overhead_pct,
        target_pct: TARGET_PCT,
        pass: overhead <= TARGET_PCT,
    }
}

/// The raw engine's NOWAIT/IMMEDIATE loop at `plan.sessions` sessions (1 strand, its
/// checkpointer, ~100-byte changes, as the main table runs it) on one fresh database in
/// `path`, switching `RedoLog::set_timed_statistics` between runs. Returns the figures,
/// or the stall that ended the measurement.
pub fn engine(
    path: &Path,
    method: SyncMethod,
    plan: Plan,
    warmup: Duration,
    measure: Duration,
) -> Result<Result<Overhead, Stall>> {
    let database = workload::Database::open(path, 1, method, 1, true)?;
    let mut stall = None;
    let overhead = alternate("engine", plan, measure.as_secs_f64(), |timed, label| {
        let log = database.log();
        log.set_timed_statistics(timed);
        let reading = || (process_cpu(), log.stats().get(Stat::UserCommits));
        let before = reading();
        Ok(match database.run_config(MODE, plan.sessions, warmup, measure, label)? {
            Outcome::Measured(m) => Some(RunFigures {
                commits_per_sec: m.commits_per_sec(),
                cpu_us_per_commit: cpu_per_commit(before, reading()),
            }),
            Outcome::Stalled(s) => {
                eprintln!("{label}: STALL: {}", s.summary());
                stall = Some(s);
                None
            }
        })
    })?;
    match (overhead, stall) {
        (Some(o), _) => {
            database.close()?;
            Ok(Ok(o))
        }
        (None, Some(s)) => {
            database.abandon();
            Ok(Err(s))
        }
        (None, None) => unreachable!("a run returns None only after a stall"),
    }
}

/// The overhead table, with a verdict line per loop.
pub fn print(rows: &[Overhead], not_measured: &[String]) {
    let Some(first) = rows.first() else {
        for n in not_measured {
            println!("INSTRUMENTATION OVERHEAD: {n}: not measured");
        }
        return;
    };
    println!(
        "INSTRUMENTATION OVERHEAD: timed_statistics TRUE vs FALSE, {} sessions {}, {} pairs of {:.2} s runs",
        first.sessions, first.mode, first.pairs, first.seconds_per_run
    );
    println!(
        "  (each pair runs both settings, the order flipping every pair; medians of each setting's runs)"
    );
    println!(
        "  {:<16} {:>15} {:>17} {:>9}   {:>20} {:>8}",
        "workload", "timed commits/s", "untimed commits/s", "overhead", "CPU us/commit T / U", "CPU +"
    );
    for r in rows {
        let cpu = match (r.timed_median_cpu_us_per_commit, r.untimed_median_cpu_us_per_commit) {
            (Some(t), Some(u)) => format!("{t:.2} / {u:.2}"),
            _ => "-".into(),
        };
        println!(
            "  {:<16} {:>15} {:>17} {:>8.2}%   {:>20} {:>8}  target <= {:.1} %  {}",
            r.workload,
            thousands(r.timed_median_commits_per_sec),
            thousands(r.untimed_median_commits_per_sec),
            r.overhead_pct,
            cpu,
            r.cpu_overhead_pct.map_or("-".into(), |c| format!("{c:.2}%")),
            r.target_pct,
            if r.pass { "PASS" } else { "MISS" }
        );
        let runs: Vec<String> = r
            .runs
            .iter()
            .map(|x| {
                format!("{} {}", if x.timed_statistics { "T" } else { "U" }, thousands(x.commits_per_sec))
            })
            .collect();
        let pairs: Vec<String> = r.pair_overheads_pct.iter().map(|p| format!("{p:.1}%")).collect();
        println!("    runs (T timed, U untimed): {}", runs.join("  "));
        println!("    throughput overhead per pair: {}", pairs.join(", "));
    }
    for n in not_measured {
        println!("  {n}: not measured (see the problems)");
    }
    println!("  overhead = (untimed - timed) / untimed commits/s, the verdict's figure; CPU + = (timed - untimed) / untimed");
    println!("  process CPU per commit (all threads, whole run), steadier when other work shares the machine. FALSE still");
    println!("  counts every wait, commit and call; it reads no clock for them");
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(commits_per_sec: f64, cpu_us_per_commit: f64) -> RunFigures {
        RunFigures { commits_per_sec, cpu_us_per_commit: Some(cpu_us_per_commit) }
    }

    #[test]
    fn medians_of_odd_and_even_samples() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn the_process_cpu_clock_moves_and_divides_by_commits() {
        // Other tests' threads count too, so the clock may move at once; it must move
        // within a second of this thread spinning.
        let before = process_cpu();
        let spin_until = std::time::Instant::now() + Duration::from_secs(1);
        while process_cpu() == before && std::time::Instant::now() < spin_until {
            std::hint::black_box(0u64);
        }
        assert!(process_cpu() > before, "a second of spinning did not move the process CPU clock");
        let ms = Duration::from_millis;
        assert_eq!(cpu_per_commit((ms(10), 100), (ms(20), 1100)), Some(10.0));
        assert_eq!(cpu_per_commit((ms(10), 100), (ms(20), 100)), None);
    }

    #[test]
    fn pairs_alternate_their_order_and_the_overhead_compares_medians() {
        // Untimed runs 100 commits/s at 10 us CPU each, timed 96 at 10.4: 4% both ways.
        let mut order = Vec::new();
        let o = alternate("test", Plan { sessions: 32, pairs: 3 }, 0.1, |timed, _| {
            order.push(timed);
            Ok(Some(if timed { figures(96.0, 10.4) } else { figures(100.0, 10.0) }))
        })
        .unwrap()
        .expect("all runs completed");
        assert_eq!(order, [true, false, false, true, true, false]);
        assert_eq!(o.runs.len(), 6);
        assert!((o.overhead_pct - 4.0).abs() < 1e-9, "{o:?}");
        assert!(o.pair_overheads_pct.iter().all(|p| (p - 4.0).abs() < 1e-9), "{o:?}");
        assert!((o.cpu_overhead_pct.unwrap() - 4.0).abs() < 1e-9, "{o:?}");
        assert!(o.pass);
        let o = alternate("test", Plan { sessions: 32, pairs: 3 }, 0.1, |timed, _| {
            Ok(Some(figures(if timed { 90.0 } else { 100.0 }, 1.0)))
        })
        .unwrap()
        .unwrap();
        assert!(!o.pass, "10% is over the target");
    }

    #[test]
    fn a_run_that_does_not_complete_ends_the_measurement() {
        let mut n = 0;
        let o = alternate("test", Plan { sessions: 32, pairs: 3 }, 0.1, |_, _| {
            n += 1;
            Ok((n < 3).then_some(figures(1.0, 1.0)))
        })
        .unwrap();
        assert!(o.is_none());
        assert_eq!(n, 3);
    }
}
