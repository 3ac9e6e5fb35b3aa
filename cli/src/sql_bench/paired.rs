//! The four target ratios measured in pairs: for each SQL loop and commit mode at
//! [`RATIO_SESSIONS`](super::RATIO_SESSIONS) sessions, a run of the raw engine and a run of
//! the SQL loop back to back, the order flipping every pair; each pair gives one ratio
//! (SQL / engine), and the verdict takes their median.
//!
//! Why, beside the RATIOS section: there the engine runs before and after all 24 SQL
//! configurations, a minute apart, and this VM's disk drifts within a minute (the same
//! WAIT engine run gave 55k and 83k commits/s before and after in one run). Runs seconds
//! apart see the same disk, so the pairs' ratios say what the SQL layer costs, not when
//! it ran.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use redo::SyncMethod;
use serde::Serialize;

use super::workload::{self, Finish, Work};
use super::RATIO_SESSIONS;
use crate::engine_bench::overhead::median;
use crate::engine_bench::report::{thousands, Ratio};
use crate::engine_bench::workload::{self as engine, Mode, Outcome};

/// One pair: both runs' commits/s, in the order they ran.
#[derive(Clone, Debug, Serialize)]
pub struct Pair {
    pub engine_first: bool,
    pub engine_commits_per_sec: f64,
    pub sql_commits_per_sec: f64,
    pub ratio: f64,
}

/// The pairs of one loop and mode, and the ratio the verdict uses (their median).
#[derive(Clone, Debug, Serialize)]
pub struct PairedRatio {
    pub workload: &'static str,
    pub mode: String,
    pub sessions: usize,
    pub pairs: Vec<Pair>,
    pub median_ratio: Option<f64>,
    pub target: f64,
}

impl PairedRatio {
    /// Sets the verdict's ratio, the median of the pairs, once all `wanted` pairs ran; a
    /// line short of pairs has none.
    fn settle(&mut self, wanted: usize) {
        self.median_ratio =
            (self.pairs.len() == wanted).then(|| median(self.pairs.iter().map(|p| p.ratio).collect()));
    }
}

/// The target of each mode (the issue's: the SQL layer should cost little).
pub fn target_of(mode: Mode) -> f64 {
    if mode == Mode::WAIT_IMMEDIATE {
        0.9
    } else {
        0.5
    }
}

/// Runs the pairs of every loop and mode: `pairs` pairs each, on one raw engine database
/// and one SQL database per loop, all in `dir`. A run that fails or stalls ends the part
/// (why is in `problems`); what was measured before it is kept.
pub fn run_part(
    dir: &Path,
    method: SyncMethod,
    pairs: usize,
    warmup: Duration,
    measure: Duration,
    problems: &mut Vec<String>,
) -> Result<Vec<PairedRatio>> {
    assert!(pairs >= 1, "at least one pair");
    let engine_path = dir.join("sql-bench-paired-engine");
    let engine_db = engine::Database::open(&engine_path, 1, method, 1, true)?;
    let mut out = Vec::new();
    let mut engine_stalled = false;
    'works: for work in Work::ALL {
        let path = dir.join(format!("sql-bench-paired-{}", work.name()));
        let db = workload::open(&path, method)?;
        workload::create_tables(&db, work)?;
        let mut sql_stalled = false;
        for mode in [Mode::NOWAIT_IMMEDIATE, Mode::WAIT_IMMEDIATE] {
            let mut measured = PairedRatio {
                workload: work.name(),
                mode: mode.name(),
                sessions: RATIO_SESSIONS,
                pairs: Vec::new(),
                median_ratio: None,
                target: target_of(mode),
            };
            for pair in 0..pairs {
                let engine_first = pair % 2 == 0;
                let label = format!("paired {} {}, pair {}/{pairs}", work.name(), mode.name(), pair + 1);
                let mut engine_cps = None;
                let mut sql_cps = None;
                for engine_turn in [engine_first, !engine_first] {
                    if engine_turn {
                        let run_label = format!("{label}: engine");
                        eprintln!("{run_label}");
                        match engine_db.run_config(mode, RATIO_SESSIONS, warmup, measure, &run_label)? {
                            Outcome::Measured(m) => engine_cps = Some(m.commits_per_sec()),
                            Outcome::Stalled(stall) => {
                                problems.push(format!("STALL {run_label}: {}", stall.summary()));
                                engine_stalled = true;
                            }
                        }
                    } else {
                        let run_label = format!("{label}: SQL");
                        eprintln!("{run_label}");
                        let id_base = ((out.len() * pairs + pair + 1) as i64) << 40;
                        match workload::run_config(&db, work, mode, RATIO_SESSIONS, warmup, measure, id_base)?
                        {
                            Finish::Done(c) => sql_cps = Some(c.measured.commits_per_sec()),
                            Finish::Failed(errors) => {
                                problems.extend(errors.into_iter().map(|e| format!("{run_label}: {e}")))
                            }
                            Finish::Stalled(text) => {
                                problems.push(format!("STALL {run_label}: {text}"));
                                sql_stalled = true;
                            }
                        }
                        if work == Work::Insert && !sql_stalled {
                            workload::truncate_w1(&db)?;
                        }
                    }
                    if engine_stalled || sql_stalled {
                        break;
                    }
                }
                match (engine_cps, sql_cps) {
                    (Some(e), Some(s)) if e > 0.0 => {
                        eprintln!(
                            "{label}: engine {} SQL {} commits/s, ratio {:.2}",
                            thousands(e),
                            thousands(s),
                            s / e
                        );
                        measured.pairs.push(Pair {
                            engine_first,
                            engine_commits_per_sec: e,
                            sql_commits_per_sec: s,
                            ratio: s / e,
                        })
                    }
                    _ => break,
                }
            }
            measured.settle(pairs);
            out.push(measured);
            if engine_stalled || sql_stalled {
                finish_sql(db, &path, sql_stalled)?;
                break 'works;
            }
        }
        finish_sql(db, &path, sql_stalled)?;
    }
    if engine_stalled {
        engine_db.abandon();
    } else {
        engine_db.close()?;
    }
    Ok(out)
}

/// Drops a loop's database and removes its files, unless it stalled (its stuck threads
/// keep it alive; the files go with the run's directory).
fn finish_sql(db: Arc<db::Database>, path: &Path, stalled: bool) -> Result<()> {
    drop(db);
    if !stalled {
        std::fs::remove_dir_all(path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(())
}

/// The verdict lines, in the RATIOS layout.
pub fn ratios(paired: &[PairedRatio]) -> Vec<Ratio> {
    paired
        .iter()
        .map(|p| {
            let letter = if p.workload == "insert" { "a" } else { "b" };
            let name = format!("SQL ({letter}) {} {} sessions {} / engine", p.workload, p.sessions, p.mode);
            let r = Ratio::new(name, ">=", p.target);
            match p.median_ratio {
                Some(m) => {
                    let each: Vec<String> = p.pairs.iter().map(|q| format!("{:.2}", q.ratio)).collect();
                    r.measured(m, format!("median of {} pairs: {}", p.pairs.len(), each.join(", ")))
                }
                None => r,
            }
        })
        .collect()
}

/// The section: how it was measured, then the verdicts.
pub fn print(paired: &[PairedRatio], pairs: usize, measure: Duration) {
    println!(
        "PAIRED RATIOS: {RATIO_SESSIONS} sessions, {pairs} pair(s) of {:.2} s runs per line, the raw engine and the SQL \
         loop back to back (the order flipping every pair); the verdict takes the median of the pairs' SQL / engine",
        measure.as_secs_f64()
    );
    crate::engine_bench::report::print_ratio_lines(&ratios(paired));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(engine: f64, sql: f64) -> Pair {
        Pair {
            engine_first: true,
            engine_commits_per_sec: engine,
            sql_commits_per_sec: sql,
            ratio: sql / engine,
        }
    }

    #[test]
    fn the_verdict_is_the_median_of_the_pairs_and_missing_pairs_measure_nothing() {
        let mut full = PairedRatio {
            workload: "update",
            mode: Mode::WAIT_IMMEDIATE.name(),
            sessions: 32,
            pairs: vec![pair(100.0, 95.0), pair(100.0, 50.0), pair(200.0, 182.0)],
            median_ratio: None,
            target: target_of(Mode::WAIT_IMMEDIATE),
        };
        let mut short = PairedRatio { pairs: vec![pair(100.0, 95.0)], ..full.clone() };
        full.settle(3);
        short.settle(3);
        let r = ratios(&[full, short]);
        assert_eq!(r[0].name, "SQL (b) update 32 sessions WAIT/IMMEDIATE / engine");
        assert_eq!(r[0].value, Some(0.91));
        assert!(r[0].pass, "0.91 >= 0.9");
        assert!(r[0].detail.contains("median of 3 pairs: 0.95, 0.50, 0.91"), "{}", r[0].detail);
        assert_eq!(r[1].value, None, "a line whose pairs did not all run has no verdict");
        assert_eq!(target_of(Mode::NOWAIT_IMMEDIATE), 0.5);
    }
}
