//! The database's figures, read the way a DBA reads them: plain SELECTs on `v$sysstat`,
//! `v$system_event`, `v$sys_time_model` and `v$event_histogram_micro` over a
//! [`Connection`], before and after a measured window, and their differences. Nothing
//! here reaches into the engine, so a wire target reads the same figures the same way.
//!
//! Beside them, the CPU: the machine's (from `/proc/stat`: what `sar`/`vmstat` show, the
//! seeds' "CPU %") and this process's (`getrusage`; for the embedded target that is the
//! database and the load generator together).
//!
//! PostgreSQL has no `v$` views; what it can say about the log is in `pg_stat_wal`
//! (records, bytes, writes, syncs, and their times with `track_wal_io_timing`). Its
//! counts are kept by each backend and flushed to the shared statistics when it goes
//! idle (at most once a second, else ten seconds later) or exits, so a window cannot be
//! cut exactly: the sample after a run waits until the run's sessions have disconnected
//! and the WAL writer has reported, and then holds the warm-up and the window together
//! ([`StatsSource::PgStatWal`]). Only ratios (bytes per commit, commits per sync, time
//! per sync) are taken from it, each over the commits of warm-up and window.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use db::Value;
use serde::Serialize;

use super::target::{Connection, Flavour};
use super::wire;

/// Where a sample's server figures come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StatsSource {
    /// The `v$` views, exactly over the window.
    #[default]
    VViews,
    /// PostgreSQL's `pg_stat_wal`, over the warm-up and the window together.
    PgStatWal,
    /// No server figures: PostgreSQL while the session that did the work is still
    /// connected (its counts are not flushed yet).
    Unavailable,
}

/// When a sample is taken: after a run, PostgreSQL's counts need the run's sessions gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    Before,
    After,
}

/// How long the WAL writer may take to report its writes after the last commit
/// (PostgreSQL flushes asynchronous commits within 3 x wal_writer_delay of 200 ms, and
/// the WAL writer reports its counts in the same loop).
const WAL_WRITER_REPORT: Duration = Duration::from_millis(700);

/// Totals of one wait event.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EventTotals {
    pub wait_class: String,
    pub waits: u64,
    pub time_us: u64,
}

/// The machine's and this process's CPU time so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuTimes {
    /// /proc/stat, all CPUs: busy and total jiffies.
    pub machine_busy: u64,
    pub machine_total: u64,
    /// User + system time of this process, microseconds.
    pub process_us: u64,
}

impl CpuTimes {
    pub fn now() -> CpuTimes {
        let (machine_busy, machine_total) = machine_jiffies().unwrap_or((0, 0));
        CpuTimes { machine_busy, machine_total, process_us: process_cpu_us() }
    }
}

/// `/proc/stat`'s first line: (busy, total) jiffies over all CPUs; idle and iowait are
/// not busy.
fn machine_jiffies() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?;
    let fields: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

fn process_cpu_us() -> u64 {
    // SAFETY: `usage` is a valid rusage for the kernel to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(usage.ru_utime) + us(usage.ru_stime)
}

/// Everything read at one moment.
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: Instant,
    pub stats: BTreeMap<String, u64>,
    pub events: BTreeMap<String, EventTotals>,
    pub time_model: BTreeMap<String, u64>,
    /// `log file sync` waits per histogram bucket (upper limit in us).
    pub log_file_sync_histogram: BTreeMap<u64, u64>,
    pub cpu: CpuTimes,
    pub source: StatsSource,
}

impl Sample {
    /// A sample of statistics alone: no wait events, time model or histogram (a server
    /// that publishes only counters, or a session's own counters).
    pub fn counters_only(
        at: Instant,
        stats: BTreeMap<String, u64>,
        cpu: CpuTimes,
        source: StatsSource,
    ) -> Sample {
        Sample {
            at,
            stats,
            events: BTreeMap::new(),
            time_model: BTreeMap::new(),
            log_file_sync_histogram: BTreeMap::new(),
            cpu,
            source,
        }
    }
}

/// A count from a view: an integer, a float, or text holding either (a simple query over
/// the wire returns text).
fn int(v: &Value) -> Result<u64> {
    match v {
        Value::Int(n) => Ok((*n).max(0) as u64),
        Value::Float(f) => Ok(f.max(0.0) as u64),
        Value::Text(t) => {
            let t = t.trim();
            t.parse::<u64>()
                .ok()
                .or_else(|| t.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| f.max(0.0) as u64))
                .ok_or_else(|| anyhow!("{t:?} is not a number"))
        }
        other => Err(anyhow!("{other:?} is not a number")),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Text(t) => t.clone(),
        Value::Null => String::new(),
        other => format!("{other:?}"),
    }
}

fn pairs(conn: &mut dyn Connection, sql: &str) -> Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    for row in conn.query(sql)? {
        if let [name, value] = row.as_slice() {
            out.insert(text(name), int(value)?);
        } else {
            return Err(anyhow!("{sql}: expected 2 columns, got {}", row.len()));
        }
    }
    Ok(out)
}

/// Reads the server's figures now: the `v$` views of redodb, `pg_stat_wal` of PostgreSQL
/// (after a run, once its sessions are gone and their counts flushed).
pub fn sample(conn: &mut dyn Connection, flavour: Flavour, moment: Moment) -> Result<Sample> {
    if flavour.has_v_views() {
        return sample_views(conn);
    }
    if moment == Moment::After {
        wire::wait_for_other_sessions(conn)?;
        std::thread::sleep(WAL_WRITER_REPORT);
    }
    // This connection's own counts (its DDL, say) go out when it next goes idle; the
    // function is PostgreSQL 15's and may be refused to a plain user, which only leaves
    // those few counts for later.
    let _ = conn.execute("SELECT pg_stat_force_next_flush()", &[]);
    let cpu = CpuTimes::now();
    let at = Instant::now();
    let names = [
        "wal_records",
        "wal_fpi",
        "wal_bytes",
        "wal_buffers_full",
        "wal_write",
        "wal_sync",
        "wal_write_time_us",
        "wal_sync_time_us",
    ];
    let rows = conn.query(
        "SELECT wal_records, wal_fpi, wal_bytes::bigint, wal_buffers_full, wal_write, wal_sync, \
         (wal_write_time * 1000)::bigint, (wal_sync_time * 1000)::bigint FROM pg_stat_wal",
    )?;
    let row = rows.first().ok_or_else(|| anyhow!("pg_stat_wal returned no row"))?;
    if row.len() != names.len() {
        return Err(anyhow!("pg_stat_wal: expected {} columns, got {}", names.len(), row.len()));
    }
    let stats = names.iter().zip(row).map(|(n, v)| Ok((n.to_string(), int(v)?))).collect::<Result<_>>()?;
    Ok(Sample::counters_only(at, stats, cpu, StatsSource::PgStatWal))
}

/// Reads the `v$` views now.
fn sample_views(conn: &mut dyn Connection) -> Result<Sample> {
    let cpu = CpuTimes::now();
    let at = Instant::now();
    let stats = pairs(conn, "SELECT name, value FROM v$sysstat")?;
    let mut events = BTreeMap::new();
    for row in conn.query("SELECT event, wait_class, total_waits, time_waited_micro FROM v$system_event")? {
        if let [event, class, waits, time] = row.as_slice() {
            events.insert(
                text(event),
                EventTotals { wait_class: text(class), waits: int(waits)?, time_us: int(time)? },
            );
        }
    }
    let time_model = pairs(conn, "SELECT stat_name, value FROM v$sys_time_model")?;
    let log_file_sync_histogram = conn
        .query(
            "SELECT wait_time_micro, wait_count FROM v$event_histogram_micro WHERE event = 'log file sync'",
        )?
        .iter()
        .filter_map(|row| match row.as_slice() {
            [limit, count] => Some((int(limit).ok()?, int(count).ok()?)),
            _ => None,
        })
        .collect();
    Ok(Sample { at, stats, events, time_model, log_file_sync_histogram, cpu, source: StatsSource::VViews })
}

/// What changed between two samples.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Delta {
    pub seconds: f64,
    pub stats: BTreeMap<String, u64>,
    pub events: BTreeMap<String, EventTotals>,
    pub time_model: BTreeMap<String, u64>,
    pub log_file_sync_histogram: BTreeMap<u64, u64>,
    /// Busy share of all the machine's CPUs over the window, percent.
    pub machine_cpu_pct: Option<f64>,
    /// This process's CPU time over the window as a share of all CPUs, percent.
    pub process_cpu_pct: f64,
    pub process_cpu_us: u64,
    pub source: StatsSource,
}

fn minus(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after.iter().map(|(k, v)| (k.clone(), v.saturating_sub(before.get(k).copied().unwrap_or(0)))).collect()
}

impl Delta {
    pub fn between(before: &Sample, after: &Sample, cpus: usize) -> Delta {
        let seconds = (after.at - before.at).as_secs_f64();
        let events = after
            .events
            .iter()
            .map(|(k, a)| {
                let b = before.events.get(k).cloned().unwrap_or_default();
                let d = EventTotals {
                    wait_class: a.wait_class.clone(),
                    waits: a.waits.saturating_sub(b.waits),
                    time_us: a.time_us.saturating_sub(b.time_us),
                };
                (k.clone(), d)
            })
            .collect();
        let histogram = after
            .log_file_sync_histogram
            .iter()
            .map(|(k, v)| (*k, v.saturating_sub(before.log_file_sync_histogram.get(k).copied().unwrap_or(0))))
            .filter(|(_, v)| *v > 0)
            .collect();
        let total = after.cpu.machine_total.saturating_sub(before.cpu.machine_total);
        let busy = after.cpu.machine_busy.saturating_sub(before.cpu.machine_busy);
        let process_cpu_us = after.cpu.process_us.saturating_sub(before.cpu.process_us);
        Delta {
            seconds,
            stats: minus(&after.stats, &before.stats),
            events,
            time_model: minus(&after.time_model, &before.time_model),
            log_file_sync_histogram: histogram,
            machine_cpu_pct: (total > 0).then(|| busy as f64 * 100.0 / total as f64),
            process_cpu_pct: process_cpu_us as f64 / 1e4 / seconds.max(1e-9) / cpus.max(1) as f64,
            process_cpu_us,
            source: if before.source == after.source { after.source } else { StatsSource::Unavailable },
        }
    }

    /// A window with no server figures (only the CPU and its length).
    pub fn unavailable(seconds: f64) -> Delta {
        Delta { seconds, source: StatsSource::Unavailable, ..Delta::default() }
    }

    /// Adds `other` (a later window) to this one: counts add up, the CPU shares are
    /// weighted by time.
    pub fn add(&mut self, other: &Delta) {
        if self.seconds == 0.0 && self.stats.is_empty() {
            self.source = other.source;
        } else if self.source != other.source {
            self.source = StatsSource::Unavailable;
        }
        let total = self.seconds + other.seconds;
        let weigh =
            |a: f64, b: f64| if total > 0.0 { (a * self.seconds + b * other.seconds) / total } else { 0.0 };
        self.machine_cpu_pct = match (self.machine_cpu_pct, other.machine_cpu_pct) {
            (Some(a), Some(b)) => Some(weigh(a, b)),
            (a, b) => a.or(b),
        };
        self.process_cpu_pct = weigh(self.process_cpu_pct, other.process_cpu_pct);
        self.process_cpu_us += other.process_cpu_us;
        self.seconds = total;
        for (k, v) in &other.stats {
            *self.stats.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.time_model {
            *self.time_model.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.log_file_sync_histogram {
            *self.log_file_sync_histogram.entry(*k).or_default() += v;
        }
        for (k, e) in &other.events {
            let mine = self.events.entry(k.clone()).or_insert_with(|| EventTotals {
                wait_class: e.wait_class.clone(),
                ..EventTotals::default()
            });
            mine.waits += e.waits;
            mine.time_us += e.time_us;
        }
    }

    pub fn stat(&self, name: &str) -> u64 {
        self.stats.get(name).copied().unwrap_or(0)
    }

    pub fn event(&self, name: &str) -> EventTotals {
        self.events.get(name).cloned().unwrap_or_default()
    }

    pub fn time(&self, name: &str) -> u64 {
        self.time_model.get(name).copied().unwrap_or(0)
    }

    /// Average wait of `event` in us, None without waits.
    pub fn avg_us(&self, name: &str) -> Option<f64> {
        let e = self.event(name);
        (e.waits > 0).then(|| e.time_us as f64 / e.waits as f64)
    }

    /// Time in every event that is not Idle (the seeds' "non-idle wait time").
    pub fn non_idle_wait_us(&self) -> u64 {
        self.events.values().filter(|e| e.wait_class != "Idle").map(|e| e.time_us).sum()
    }

    /// Non-idle waits of the sessions themselves: without the System I/O class, which the
    /// log writer's own `log file parallel write` belongs to (a foreground that writes for
    /// itself is inside its `log file sync` already).
    pub fn foreground_wait_us(&self) -> u64 {
        self.events
            .values()
            .filter(|e| e.wait_class != "Idle" && e.wait_class != "System I/O")
            .map(|e| e.time_us)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_subtract_and_classify_waits() {
        let at = Instant::now();
        let ev = |class: &str, waits, time_us| EventTotals { wait_class: class.into(), waits, time_us };
        let before = Sample {
            at,
            stats: [("user commits".to_string(), 10)].into(),
            events: [("log file sync".to_string(), ev("Commit", 5, 500))].into(),
            time_model: [("DB CPU".to_string(), 100)].into(),
            log_file_sync_histogram: [(128, 5)].into(),
            cpu: CpuTimes { machine_busy: 10, machine_total: 100, process_us: 0 },
            source: StatsSource::VViews,
        };
        let after = Sample {
            at: at + std::time::Duration::from_secs(1),
            stats: [("user commits".to_string(), 30)].into(),
            events: [
                ("log file sync".to_string(), ev("Commit", 25, 2500)),
                ("log file parallel write".to_string(), ev("System I/O", 20, 1000)),
                ("SQL*Net message from client".to_string(), ev("Idle", 3, 9000)),
            ]
            .into(),
            time_model: [("DB CPU".to_string(), 400)].into(),
            log_file_sync_histogram: [(128, 5), (256, 20)].into(),
            cpu: CpuTimes { machine_busy: 60, machine_total: 200, process_us: 1_000_000 },
            source: StatsSource::VViews,
        };
        let d = Delta::between(&before, &after, 2);
        assert_eq!(d.stat("user commits"), 20);
        assert_eq!(d.event("log file sync").waits, 20);
        assert_eq!(d.avg_us("log file sync"), Some(100.0));
        assert_eq!(d.non_idle_wait_us(), 3000);
        assert_eq!(d.foreground_wait_us(), 2000);
        assert_eq!(d.time("DB CPU"), 300);
        assert_eq!(d.log_file_sync_histogram, [(256, 20)].into());
        assert_eq!(d.machine_cpu_pct, Some(50.0));
        assert_eq!(d.process_cpu_pct, 50.0);
        assert_eq!(d.source, StatsSource::VViews);
    }

    #[test]
    fn counts_read_from_text_and_floats() {
        assert_eq!(int(&Value::Text(" 42 ".into())).unwrap(), 42);
        assert_eq!(int(&Value::Text("12.7".into())).unwrap(), 12);
        assert_eq!(int(&Value::Float(3.9)).unwrap(), 3);
        assert!(int(&Value::Text("many".into())).is_err());
    }
}
