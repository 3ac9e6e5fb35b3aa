//! [`Sample`]: the system-wide counters at one instant, with what a report prints beside
//! them (host, database, settings).
//!
//! Every counter is stored by its name in a map, never by position: a statistic, wait
//! event or time-model entry added to the engine later appears in new samples and in
//! their reports with no change of format, and a sample written before it still reads (a
//! name absent from a sample counts as zero).

use std::collections::BTreeMap;

use redo::stats::{EventSnapshot, COMMIT_MODES};

use redo::{Stat, WaitEvent};
use serde::{Deserialize, Serialize};

use crate::database::{Database, DbShared};
use crate::sessions::DbEvent;
use crate::sql::cache::StatementActivity;
use crate::views::DbStat;

/// Version of the sample's layout. Readers accept this version and older ones; fields
/// added later carry `#[serde(default)]`.
pub const SAMPLE_FORMAT_VERSION: u32 = 1;

/// The wait class of the events that are not waits for the database (a session waiting
/// for its client): left out of the top events and of the non-idle wait time.
pub const IDLE_CLASS: &str = "Idle";

/// Events waited on by background processes (the log writer, the checkpointer), which
/// Oracle reports apart from the foreground ones under "Background Wait Events".
pub const BACKGROUND_EVENTS: [&str; 3] =
    ["log file parallel write", "db file parallel write", "checkpoint write"];

/// Everything a report needs at one instant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub format_version: u32,
    /// When the sample was taken, in microseconds since the Unix epoch.
    pub taken_at_unix_us: u64,
    /// The database's id (hexadecimal, as `v$database.dbid`).
    pub db_id: String,
    /// The redodb release that took the sample.
    pub release: String,
    /// Newest commit applied, newest durable commit, and the log's checkpoint, as SCNs.
    pub current_scn: u64,
    pub durable_scn: u64,
    pub checkpoint_scn: u64,
    /// The process the database ran in: with the counters it tells one instance (an open
    /// of the database) from the next.
    pub process_id: u32,
    pub host: HostInfo,
    /// Cumulative counters since the database opened (`v$sysstat` names): the redo log's
    /// and the SQL layer's.
    pub statistics: BTreeMap<String, u64>,
    /// Cumulative wait events since the database opened (`v$system_event` names).
    pub events: BTreeMap<String, EventSample>,
    /// Commit response time per commit mode ("WAIT/IMMEDIATE", ...), as `v$commit_response`.
    pub commit_response: BTreeMap<String, EventSample>,
    /// Cumulative time model in microseconds (`v$sys_time_model` names: "DB time",
    /// "DB CPU", "background cpu time", "background elapsed time"); reports also look for
    /// these names among the statistics, with or without a " (usec)" suffix.
    #[serde(default)]
    pub time_model: BTreeMap<String, u64>,
    /// Values that are states, not counters (their deltas mean nothing): statements in
    /// the shared pool, commits acknowledged but not yet durable, the log sequence.
    #[serde(default)]
    pub gauges: BTreeMap<String, u64>,
    /// The settings that explain the figures (log_buffer, sync_method, commit_wait, ...).
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// A snapshot's statements: what each did since the previous snapshot (Oracle's
    /// `DBA_HIST_SQLSTAT` deltas), at most [`TOP_SQL`], those with the most elapsed time,
    /// then executions, then parse calls. Empty in a sample that is no snapshot.
    #[serde(default)]
    pub sql: Vec<SqlSample>,
    /// Statements that did something since the previous snapshot and were not kept.
    #[serde(default)]
    pub sql_not_kept: u64,
}

/// How many statements a snapshot keeps.
pub const TOP_SQL: usize = 100;

/// Characters of a statement's text a snapshot keeps.
pub const SQL_TEXT_CHARS: usize = 1000;

/// One statement's activity between two snapshots.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqlSample {
    /// Its text (the first [`SQL_TEXT_CHARS`] characters).
    pub text: String,
    pub executions: u64,
    pub parse_calls: u64,
    pub rows_processed: u64,
    pub elapsed_us: u64,
}

/// One wait event's cumulative figures.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventSample {
    pub wait_class: String,
    /// Waited on by a background process (reported under "Background Wait Events").
    #[serde(default)]
    pub background: bool,
    pub waits: u64,
    pub time_us: u64,
    /// Longest single wait since the database opened; None when it is not measured.
    pub max_us: Option<u64>,
    /// Waits per power-of-two microsecond bucket: bucket 0 counts waits under 1 us,
    /// bucket `i` waits in `[2^(i-1), 2^i)` us. Empty when the event keeps no histogram.
    pub histogram: Vec<u64>,
    /// The time so far of the waits in progress as the sample was taken (us), which
    /// `time_us` counts only once they end: an interval takes its begin's off and adds its
    /// end's, so a wait running across a snapshot is split between the intervals as its
    /// DB time is (see `call_clock`).
    #[serde(default)]
    pub in_progress_us: u64,
}

impl EventSample {
    fn from_snapshot(e: &EventSnapshot, wait_class: &str, background: bool) -> EventSample {
        EventSample {
            wait_class: wait_class.to_string(),
            background,
            waits: e.waits,
            time_us: e.time_us,
            max_us: Some(e.max_us),
            histogram: e.histogram.to_vec(),
            in_progress_us: 0,
        }
    }
}

/// The machine the database runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub cpus: u32,
    /// Operating system and architecture, e.g. "linux x86_64".
    pub os: String,
    /// Kernel release, when the system tells it.
    pub kernel: String,
}

impl HostInfo {
    /// The operating system with its kernel release, when known: "linux x86_64 (6.1.0)".
    pub fn platform(&self) -> String {
        if self.kernel.is_empty() {
            self.os.clone()
        } else {
            format!("{} ({})", self.os, self.kernel)
        }
    }

    pub fn current() -> HostInfo {
        let read = |path: &str| std::fs::read_to_string(path).ok().map(|s| s.trim().to_string());
        let hostname = read("/proc/sys/kernel/hostname")
            .or_else(|| read("/etc/hostname"))
            .or_else(|| std::env::var("HOSTNAME").ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown".to_string());
        HostInfo {
            hostname,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
        }
    }
}

/// The counters of `db` now.
pub fn sample(db: &Database) -> Sample {
    sample_of(db.shared())
}

/// A sample from the parts a `Database` and a `Session` both reach: the redo log, the SQL
/// layer's counters and the SCN of the committed state.
pub(crate) fn sample_of(db: &DbShared) -> Sample {
    let (log, sql, applied_scn) = (db.log(), db.sql_stats_now(), db.applied_scn());
    // The waits first (those ended, then those in progress), then the time model: the DB
    // time read then covers every wait read (see `call_clock`), so a sample never holds
    // more wait than DB time.
    let redo = log.stats();
    let db_events = db.sessions.event_totals();
    let in_progress = db.sessions.waits_in_progress();
    let time_model = crate::counters::TimeModel::of(db);
    let status = log.status();
    let backlog = log.commit_backlog();

    let mut statistics: BTreeMap<String, u64> =
        Stat::ALL.iter().map(|&stat| (stat.name().to_string(), redo.get(stat))).collect();
    // The database layer's counters, as in v$sysstat.
    for (stat, value) in DbStat::ALL.iter().zip(DbStat::system_values(db)) {
        statistics.insert(stat.name().to_string(), value);
    }

    let mut events: BTreeMap<String, EventSample> = WaitEvent::ALL
        .iter()
        .map(|&event| {
            let background = BACKGROUND_EVENTS.contains(&event.name());
            let e = EventSample::from_snapshot(redo.event(event), event.class().name(), background);
            (event.name().to_string(), e)
        })
        .collect();
    // The database layer's events (row locks, client round trips, checkpoint writes).
    for event in DbEvent::ALL {
        let background = event == DbEvent::CheckpointWrite;
        let e = EventSample::from_snapshot(&db_events[event as usize], event.class(), background);
        events.insert(event.name().to_string(), e);
    }

    for (name, us) in in_progress {
        if let Some(e) = events.get_mut(name) {
            e.in_progress_us = us;
        }
    }

    let commit_response = COMMIT_MODES
        .iter()
        .zip(&redo.commit_response)
        .map(|(mode, e)| (mode.to_string(), EventSample::from_snapshot(e, "Commit", false)))
        .collect();

    let gauges = BTreeMap::from([
        ("cached statements".to_string(), sql.cached_statements),
        ("commits not durable".to_string(), backlog.commits),
        ("bytes not durable".to_string(), backlog.bytes),
        ("current log sequence".to_string(), status.current_seq.0),
    ]);

    let config = log.config();
    let settings = BTreeMap::from([
        ("log_buffer".to_string(), config.log_buffer.to_string()),
        ("log_file_size".to_string(), config.log_file_size.to_string()),
        ("log_groups".to_string(), config.log_groups.to_string()),
        ("log members".to_string(), config.members().to_string()),
        ("log_parallelism".to_string(), config.log_parallelism.to_string()),
        ("sync_method".to_string(), config.sync_method.name().to_string()),
        ("commit_wait".to_string(), log.commit_wait().name().to_string()),
        ("commit_logging".to_string(), log.commit_logging().name().to_string()),
    ]);

    Sample {
        format_version: SAMPLE_FORMAT_VERSION,
        taken_at_unix_us: super::clock::now_unix_us(),
        db_id: format!("{:016x}", log.db_id()),
        release: env!("CARGO_PKG_VERSION").to_string(),
        current_scn: applied_scn.0.max(status.durable_commit.0 .0),
        durable_scn: status.durable_commit.0 .0,
        checkpoint_scn: status.checkpoint_scn.0,
        process_id: std::process::id(),
        host: HostInfo::current(),
        statistics,
        events,
        commit_response,
        time_model: BTreeMap::from(time_model.entries().map(|(name, us)| (name.to_string(), us))),
        gauges,
        settings,
        sql: Vec::new(),
        sql_not_kept: 0,
    }
}

/// A sample to store as a snapshot: [`sample_of`] with the statements' activity since the
/// previous snapshot, which it takes (the next snapshot's starts from here), and that
/// activity as taken, to give back if the snapshot is not written.
pub(crate) fn snapshot_sample(db: &DbShared) -> (Sample, Vec<StatementActivity>) {
    let mut sample = sample_of(db);
    let activity = db.statements.take_activity();
    let mut active: Vec<SqlSample> = activity
        .iter()
        .map(|a| SqlSample {
            text: a.text.chars().take(SQL_TEXT_CHARS).collect(),
            executions: a.totals.executions,
            parse_calls: a.parse_calls,
            rows_processed: a.totals.rows_processed,
            elapsed_us: a.totals.elapsed_ns / 1000,
        })
        .collect();
    active.sort_by(|a, b| {
        (b.elapsed_us, b.executions, b.parse_calls)
            .cmp(&(a.elapsed_us, a.executions, a.parse_calls))
            .then_with(|| a.text.cmp(&b.text))
    });
    sample.sql_not_kept = active.len().saturating_sub(TOP_SQL) as u64;
    active.truncate(TOP_SQL);
    sample.sql = active;
    (sample, activity)
}

impl Sample {
    /// A statistic's value; 0 when the sample does not have it.
    pub fn statistic(&self, name: &str) -> u64 {
        self.statistics.get(name).copied().unwrap_or(0)
    }

    /// A time-model entry in microseconds: from `time_model`, else from the statistics
    /// under the same name or the name with " (usec)" (how the redo log names its times).
    /// None when the sample does not measure it.
    pub fn time_model_us(&self, name: &str) -> Option<u64> {
        self.time_model
            .get(name)
            .or_else(|| self.statistics.get(name))
            .or_else(|| self.statistics.get(&format!("{name} (usec)")))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::awr::open_test_database;

    #[test]
    fn a_sample_counts_commits_and_log_file_syncs_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open_test_database(dir.path());
        let before = sample(&db);
        let mut session = db.session();
        session.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", &[]).expect("create");
        for i in 0..5 {
            session.execute("INSERT INTO t VALUES ($1, 'x')", &[crate::Value::Int(i)]).expect("insert");
            session.execute("COMMIT WRITE WAIT", &[]).expect("commit");
        }
        let after = sample(&db);
        // CREATE TABLE commits as a transaction of its own, then five commits.
        assert_eq!(after.statistic("user commits") - before.statistic("user commits"), 6);
        assert!(after.statistic("redo size") > before.statistic("redo size"));
        assert!(after.statistic("execute count") >= before.statistic("execute count") + 11);
        let sync = &after.events["log file sync"];
        assert_eq!(sync.wait_class, "Commit");
        assert!(!sync.background);
        assert_eq!(sync.histogram.iter().sum::<u64>(), sync.waits);
        assert!(after.events["log file parallel write"].background);
        assert_eq!(after.events["enq: TX - row lock contention"].wait_class, "Application");
        assert_eq!(after.db_id.len(), 16);
        assert!(after.current_scn >= 6);
        assert!(after.host.cpus >= 1);
        assert_eq!(after.settings["sync_method"], "fdatasync");
        assert!(after.taken_at_unix_us >= before.taken_at_unix_us);
    }

    #[test]
    fn a_sample_round_trips_through_json_and_reads_without_later_fields() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open_test_database(dir.path());
        let s = sample(&db);
        let json = serde_json::to_string(&s).expect("serialize");
        assert_eq!(serde_json::from_str::<Sample>(&json).expect("parse"), s);

        // A sample written before time_model, gauges and settings existed still reads.
        let mut value: serde_json::Value = serde_json::from_str(&json).expect("parse value");
        let object = value.as_object_mut().expect("object");
        for later in ["time_model", "gauges", "settings"] {
            object.remove(later);
        }
        let old: Sample = serde_json::from_value(value).expect("parse old layout");
        assert!(old.time_model.is_empty() && old.settings.is_empty());
        assert_eq!(old.statistics, s.statistics);
    }

    #[test]
    fn time_model_entries_are_found_in_the_map_or_among_statistics() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open_test_database(dir.path());
        let mut s = sample(&db);
        s.time_model.clear();
        s.statistics.retain(|name, _| !name.starts_with("background"));
        assert_eq!(s.time_model_us("DB time"), None);
        s.time_model.insert("DB time".into(), 7);
        s.statistics.insert("background cpu time (usec)".into(), 9);
        assert_eq!(s.time_model_us("DB time"), Some(7));
        assert_eq!(s.time_model_us("background cpu time"), Some(9));
    }
}
