//! The soak's figures: what each server life did and recovered, the samples judged for
//! growth, errors by kind, and the verdict; written as JSON (`--json`) and printed as a
//! summary.
//!
//! Growth is judged after a warm-up (the first 20% of the run unless `--warm-up` says
//! otherwise), on the samples taken while the clients ran, and each restart starts a new
//! process, so it is judged two ways:
//! - within a life: the median of the last third of its settled samples against the
//!   median of the first third (settled: after the first quarter of the life, when the
//!   restarted process has loaded its state and its clients are back), the largest such
//!   growth over the lives;
//! - across lives: the median of the last life judged against the median of the first,
//!   and the highest median of any against that first one.
//!
//! Medians, because the resident size of an allocator that keeps freed pages for a while
//! swings by a tenth from one sample to the next under this load; a leak moves them all.
//! The headline growth is the largest of these.

use std::collections::BTreeMap;

use serde::Serialize;

use super::client::{ClientStats, ModeCounts, UnexpectedError};
use super::sample::{DirSizes, Sample};
use super::server::LogFindings;

#[derive(Clone, Debug, Serialize)]
pub struct Config {
    pub duration_s: f64,
    pub clients: u32,
    /// Mean seconds between kills (0: none).
    pub kill_every_s: f64,
    pub keys_per_client: i64,
    pub seed: u64,
    pub sample_every_s: f64,
    pub warm_up_s: f64,
    pub serve_args: Vec<String>,
    pub run_dir: String,
    /// `release` or `debug`: the build of this binary and of the server it starts.
    pub build: &'static str,
}

/// What a verification after a restart found, summed over the clients.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Verification {
    /// After a clean shutdown every acknowledged commit must be there, NOWAIT ones too.
    pub exact: bool,
    pub clients_passed: u32,
    pub clients_failed: u32,
    pub rows: u64,
    pub commits_recovered: u64,
    pub nowait_lost: u64,
    pub in_doubt_committed: u64,
    pub in_doubt_lost: u64,
    /// soak_locks all 0, soak_scan whole.
    pub other_tables_ok: bool,
    pub duration_ms: f64,
}

impl Verification {
    pub fn passed(&self) -> bool {
        self.clients_failed == 0 && self.other_tables_ok
    }
}

/// One server process.
#[derive(Clone, Debug, Serialize)]
pub struct LifeRecord {
    pub life: u32,
    pub pid: u32,
    pub started_s: f64,
    /// From spawn to the listening line (recovery included).
    pub startup_ms: f64,
    pub ended_s: f64,
    /// When its workload ended: the kill, or the stop at the end of the run (none for the
    /// life that only verifies). Samples after it do not count for growth.
    pub workload_ended_s: Option<f64>,
    /// `kill -9`, `SIGTERM`, `exited on its own`, ...
    pub ended_by: String,
    /// The check of what this life recovered (none for the first).
    pub verification: Option<Verification>,
    /// Commits acknowledged during this life.
    pub commits: ModeCounts,
}

/// The server's own commit counters over the last life against the clients' counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StatisticsCheck {
    pub life: u32,
    /// v$sysstat deltas: user commits, commit wait/nowait/batch/immediate requested.
    pub server: BTreeMap<String, u64>,
    /// The same, counted by the clients.
    pub clients: BTreeMap<String, u64>,
    pub equal: bool,
}

impl StatisticsCheck {
    pub fn client_counts(c: &ModeCounts) -> BTreeMap<String, u64> {
        BTreeMap::from([
            ("user commits".to_string(), c.total()),
            ("commit wait requested".to_string(), c.wait_immediate + c.wait_batch),
            ("commit nowait requested".to_string(), c.nowait_immediate + c.nowait_batch),
            ("commit batch requested".to_string(), c.wait_batch + c.nowait_batch),
            ("commit immediate requested".to_string(), c.wait_immediate + c.nowait_immediate),
        ])
    }
}

/// A figure (RSS, open files, threads) judged for growth.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Growth {
    /// Lives judged (workload lives with settled samples after the warm-up).
    pub lives: Vec<LifeGrowth>,
    /// The largest growth within a life, in %.
    pub within_life_max_pct: Option<f64>,
    /// The last judged life's median against the first's, in %.
    pub across_lives_pct: Option<f64>,
    /// The highest median of any judged life against the first's, in %.
    pub highest_life_pct: Option<f64>,
    /// The largest of the three: the run's growth after the warm-up.
    pub growth_pct: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LifeGrowth {
    pub life: u32,
    /// Settled samples.
    pub samples: usize,
    /// Medians of the first and the last third of the settled samples (the samples
    /// themselves when fewer than three).
    pub first: u64,
    pub last: u64,
    pub median: u64,
    pub peak: u64,
    /// `last` against `first`, in %.
    pub growth_pct: Option<f64>,
}

/// The span of a workload life, for judging its samples.
pub struct Span {
    pub life: u32,
    pub start_s: f64,
    pub end_s: f64,
}

/// Growth of `figure` over `samples` (see the module doc).
pub fn growth(samples: &[Sample], spans: &[Span], warm_up_s: f64, figure: impl Fn(&Sample) -> u64) -> Growth {
    let mut lives = Vec::new();
    for span in spans {
        let settled_from = (span.start_s + (span.end_s - span.start_s) / 4.0).max(warm_up_s);
        let values: Vec<u64> = samples
            .iter()
            .filter(|s| s.life == span.life && s.t_s >= settled_from && s.t_s <= span.end_s)
            .map(&figure)
            .collect();
        if values.is_empty() {
            continue;
        }
        let third = (values.len() / 3).max(1);
        let first = median(&values[..third]);
        let last = median(&values[values.len() - third..]);
        lives.push(LifeGrowth {
            life: span.life,
            samples: values.len(),
            first,
            last,
            median: median(&values),
            peak: values.iter().copied().max().unwrap_or(first),
            growth_pct: (values.len() >= 2).then(|| pct(last, first)),
        });
    }
    let within_life_max_pct = lives.iter().filter_map(|l| l.growth_pct).reduce(f64::max);
    let (across_lives_pct, highest_life_pct) = match (lives.first(), lives.last()) {
        (Some(first), Some(last)) if lives.len() >= 2 => {
            let highest = lives.iter().map(|l| l.median).max().unwrap_or(first.median);
            (Some(pct(last.median, first.median)), Some(pct(highest, first.median)))
        }
        _ => (None, None),
    };
    let growth_pct =
        [within_life_max_pct, across_lives_pct, highest_life_pct].into_iter().flatten().reduce(f64::max);
    Growth { lives, within_life_max_pct, across_lives_pct, highest_life_pct, growth_pct }
}

/// The median of `values` (the lower middle one of an even count).
fn median(values: &[u64]) -> u64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted[(sorted.len() - 1) / 2]
}

fn pct(now: u64, then: u64) -> f64 {
    if then == 0 {
        0.0
    } else {
        (now as f64 - then as f64) / then as f64 * 100.0
    }
}

/// Errors by kind.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Errors {
    /// Injected: the kills, the calls they cut off, the cancels.
    pub kills: u64,
    pub connections_lost_at_kill: u64,
    pub cancels: u64,
    /// Everything else: each fails the run.
    pub unexpected_by_kind: BTreeMap<String, u64>,
    pub unexpected: Vec<UnexpectedError>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Directory {
    pub last: DirSizes,
    pub max: DirSizes,
}

#[derive(Clone, Debug, Serialize)]
pub struct SoakReport {
    pub passed: bool,
    pub failures: Vec<String>,
    pub config: Config,
    pub elapsed_s: f64,
    pub kills: u64,
    pub restarts_verified: u64,
    pub verifications_failed: u64,
    pub commits: ModeCounts,
    pub commits_total: u64,
    pub clients: ClientStats,
    pub recovery: Verification,
    pub statistics_check: Option<StatisticsCheck>,
    pub errors: Errors,
    pub server_log: LogFindings,
    pub rss_kib: Growth,
    pub fds: Growth,
    pub threads: Growth,
    pub directory: Option<Directory>,
    pub lives: Vec<LifeRecord>,
    pub samples: Vec<Sample>,
}

impl SoakReport {
    /// The summary printed at the end of a run.
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        const MIB: f64 = 1024.0 * 1024.0;
        let mut out = String::new();
        let opt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:+.1}%"));
        let _ = writeln!(out, "\nlives:");
        let _ = writeln!(
            out,
            "{:>4} {:>8} {:>9} {:>9} {:>10} {:>9} {:>10} {:>8} {:>8}  ended by",
            "life", "pid", "start ms", "length s", "commits", "verified", "recovered", "NOWAIT", "in doubt"
        );
        for l in &self.lives {
            let (verified, recovered, lost, doubt) = match &l.verification {
                Some(v) => (
                    if v.passed() { "yes" } else { "FAILED" }.to_string(),
                    v.commits_recovered.to_string(),
                    format!("-{}", v.nowait_lost),
                    format!("{}/{}", v.in_doubt_committed, v.in_doubt_committed + v.in_doubt_lost),
                ),
                None => ("-".into(), "-".into(), "-".into(), "-".into()),
            };
            let _ = writeln!(
                out,
                "{:>4} {:>8} {:>9.0} {:>9.1} {:>10} {:>9} {:>10} {:>8} {:>8}  {}",
                l.life,
                l.pid,
                l.startup_ms,
                l.ended_s - l.started_s,
                l.commits.total(),
                verified,
                recovered,
                lost,
                doubt,
                l.ended_by
            );
        }
        let c = &self.commits;
        let _ = writeln!(
            out,
            "\ncommits: {} (WAIT IMMEDIATE {}, WAIT BATCH {}, NOWAIT IMMEDIATE {}, NOWAIT BATCH {}); {} acknowledged durable",
            self.commits_total,
            c.wait_immediate,
            c.wait_batch,
            c.nowait_immediate,
            c.nowait_batch,
            self.clients.durable_acks
        );
        let paths: Vec<String> =
            self.clients.commits_by_path.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "  by how the mode was chosen: {}", paths.join(", "));
        let ops: Vec<String> = self.clients.operations.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "operations: {}", ops.join(", "));
        let _ = writeln!(
            out,
            "kills: {}; restarts verified: {} ({} failed); recovered {} commits, {} acknowledged NOWAIT commits lost (allowed), \
             in-doubt commits {} found / {} not",
            self.kills,
            self.restarts_verified,
            self.verifications_failed,
            self.recovery.commits_recovered,
            self.recovery.nowait_lost,
            self.recovery.in_doubt_committed,
            self.recovery.in_doubt_lost
        );
        if let Some(check) = &self.statistics_check {
            let _ = writeln!(
                out,
                "server's commit statistics over life {} {} the clients' counts (user commits {} vs {})",
                check.life,
                if check.equal { "equal" } else { "DIFFER FROM" },
                check.server.get("user commits").copied().unwrap_or(0),
                check.clients.get("user commits").copied().unwrap_or(0)
            );
        }
        let _ = writeln!(
            out,
            "errors: injected {} kills, {} calls cut off by them, {} cancels ({} lock waits, {} long SELECTs; {} SELECTs ended first); \
             unexpected {}",
            self.errors.kills,
            self.errors.connections_lost_at_kill,
            self.errors.cancels,
            self.clients.cancels_lock_wait,
            self.clients.cancels_long_select,
            self.clients.long_select_finished_first,
            self.errors.unexpected.len()
        );
        for (kind, n) in &self.errors.unexpected_by_kind {
            let _ = writeln!(out, "  {kind}: {n}");
        }
        for e in self.errors.unexpected.iter().take(10) {
            let who = e.client.map_or("soak".to_string(), |c| format!("client {c}"));
            let _ = writeln!(out, "  at {:.1} s, {who}, {}: {}: {}", e.t_s, e.doing, e.kind, e.message);
        }
        let log = &self.server_log;
        let _ = writeln!(
            out,
            "server log: {} ERROR, {} WARN, {} panic lines",
            log.error_lines, log.warn_lines, log.panic_lines
        );
        for line in &log.examples {
            let _ = writeln!(out, "  {line}");
        }
        let growth_line = |name: &str, g: &Growth, unit: &str, scale: f64| {
            let first = g.lives.first().map_or("-".into(), |l| format!("{:.1}", l.median as f64 / scale));
            let last = g.lives.last().map_or("-".into(), |l| format!("{:.1}", l.median as f64 / scale));
            let peak = g
                .lives
                .iter()
                .map(|l| l.peak)
                .max()
                .map_or("-".into(), |p| format!("{:.1}", p as f64 / scale));
            format!(
                "{name} after the warm-up ({:.0} s, {} lives judged): median {first}{unit} in the first life, {last} in the \
                 last, peak {peak}; growth within a life (max) {}, across lives {}, highest life {}: growth {}",
                self.config.warm_up_s,
                g.lives.len(),
                opt(g.within_life_max_pct),
                opt(g.across_lives_pct),
                opt(g.highest_life_pct),
                opt(g.growth_pct)
            )
        };
        let _ = writeln!(out, "{}", growth_line("RSS", &self.rss_kib, " MiB", 1024.0));
        let _ = writeln!(out, "{}", growth_line("open files", &self.fds, "", 1.0));
        let _ = writeln!(out, "{}", growth_line("threads", &self.threads, "", 1.0));
        if let Some(d) = &self.directory {
            let _ = writeln!(
                out,
                "database directory at the end: {:.1} MiB: log files {:.1} MiB, checkpoint images {:.2} MiB, AWR {:.1} KiB, \
                 other {:.1} KiB (largest seen: images {:.2} MiB, AWR {:.1} KiB)",
                d.last.total() as f64 / MIB,
                d.last.log_bytes as f64 / MIB,
                d.last.data_bytes as f64 / MIB,
                d.last.awr_bytes as f64 / 1024.0,
                d.last.other_bytes as f64 / 1024.0,
                d.max.data_bytes as f64 / MIB,
                d.max.awr_bytes as f64 / 1024.0
            );
        }
        if self.passed {
            let _ = writeln!(out, "PASSED ({:.0} s, {} build)", self.elapsed_s, self.config.build);
        } else {
            let _ = writeln!(out, "FAILED:");
            for f in &self.failures {
                let _ = writeln!(out, "  - {f}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_s: f64, life: u32, rss_kib: u64) -> Sample {
        Sample {
            t_s,
            life,
            pid: life,
            rss_kib,
            fds: 10,
            threads: 4,
            dir: DirSizes::default(),
            commits: 0,
            commits_per_s: 0.0,
        }
    }

    #[test]
    fn growth_is_judged_within_lives_and_across_them_after_the_warm_up() {
        // Life 1 (0-40 s) is in the warm-up (20 s) only for its first half; life 2 grows
        // by 10% within (a swing to 300 in the middle moves no median); its median is
        // 21% over life 1's.
        let samples = vec![
            sample(5.0, 1, 50),
            sample(25.0, 1, 100),
            sample(30.0, 1, 100),
            sample(35.0, 1, 100),
            sample(42.0, 2, 60),
            sample(51.0, 2, 110),
            sample(54.0, 2, 110),
            sample(57.0, 2, 110),
            sample(60.0, 2, 300),
            sample(63.0, 2, 121),
            sample(66.0, 2, 121),
            sample(69.0, 2, 121),
            sample(85.0, 2, 999),
        ];
        let spans =
            [Span { life: 1, start_s: 0.0, end_s: 40.0 }, Span { life: 2, start_s: 40.0, end_s: 80.0 }];
        let g = growth(&samples, &spans, 20.0, |s| s.rss_kib);
        assert_eq!(g.lives.len(), 2);
        assert_eq!(
            (g.lives[0].first, g.lives[0].median),
            (100, 100),
            "the warm-up and the first quarter are skipped"
        );
        assert_eq!(
            (g.lives[1].samples, g.lives[1].first, g.lives[1].last),
            (7, 110, 121),
            "after the end: skipped"
        );
        assert_eq!((g.lives[1].median, g.lives[1].peak), (121, 300));
        assert!((g.within_life_max_pct.unwrap() - 10.0).abs() < 1e-9);
        assert!((g.across_lives_pct.unwrap() - 21.0).abs() < 1e-9);
        assert!((g.growth_pct.unwrap() - 21.0).abs() < 1e-9);
    }

    #[test]
    fn one_sample_judges_no_growth() {
        let g = growth(&[sample(30.0, 1, 100)], &[Span { life: 1, start_s: 0.0, end_s: 40.0 }], 20.0, |s| {
            s.rss_kib
        });
        assert_eq!(g.within_life_max_pct, None);
        assert_eq!(g.growth_pct, None);
    }

    #[test]
    fn client_counts_split_by_wait_and_by_logging() {
        let c = ModeCounts { wait_immediate: 1, wait_batch: 2, nowait_immediate: 4, nowait_batch: 8 };
        let counts = StatisticsCheck::client_counts(&c);
        assert_eq!(counts["user commits"], 15);
        assert_eq!(counts["commit wait requested"], 3);
        assert_eq!(counts["commit nowait requested"], 12);
        assert_eq!(counts["commit batch requested"], 10);
        assert_eq!(counts["commit immediate requested"], 5);
    }
}
