//! The activity between two snapshots and what a performance specialist reads from it:
//! the Load Profile, the top timed events, the unit-of-work figures of seed 000 and the
//! findings. Both report formats print an [`Interval`]; nothing here formats text.

use std::collections::BTreeMap;

use super::repository::Snapshot;
use super::sample::{EventSample, HostInfo, SqlSample, IDLE_CLASS};
use super::text::count;
use super::AwrError;

/// Names of the time model, as `v$sys_time_model`, in the order reports print them.
pub const TIME_MODEL: [&str; 4] = ["DB time", "DB CPU", "background cpu time", "background elapsed time"];

/// `log file sync` "dominates" when it is at least this share of DB time (or of the
/// non-idle foreground wait time when DB time is not measured).
pub const LOG_FILE_SYNC_DOMINANT_SHARE: f64 = 0.5;
/// Seed 002: an average `log file sync` above 2.5 times the average `log file parallel
/// write` is the signature of serialized redo writes or of a log writer short of CPU.
pub const SYNC_TO_WRITE_RATIO_LIMIT: f64 = 2.5;
/// Hard parses above this share of all parses point at literals instead of bind
/// variables...
pub const HARD_PARSE_SHARE_LIMIT: f64 = 0.10;
/// ...once there are enough of them to matter (a few DDL statements are not a finding).
pub const HARD_PARSES_MIN: u64 = 100;
/// Fewer rows than this per fetch call means rows are fetched one by one...
pub const ROWS_PER_FETCH_LIMIT: f64 = 5.0;
/// ...once there are enough fetch calls to matter.
pub const FETCH_CALLS_MIN: u64 = 100;

/// Statistics that count fetch calls, the most exact first: rows per fetch is read
/// against the first one a sample has.
const FETCH_CALL_STATISTICS: [&str; 2] = ["fetch calls", "SQL*Net roundtrips to/from client"];

/// One wait event's activity in the interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventDelta {
    pub wait_class: String,
    pub background: bool,
    pub waits: u64,
    pub time_us: u64,
    /// Waits per power-of-two microsecond bucket (empty when the event keeps none).
    pub histogram: Vec<u64>,
}

impl EventDelta {
    /// Average wait in milliseconds (None without waits).
    pub fn avg_ms(&self) -> Option<f64> {
        (self.waits > 0).then(|| self.time_us as f64 / self.waits as f64 / 1000.0)
    }

    pub fn is_idle(&self) -> bool {
        self.wait_class == IDLE_CLASS
    }
}

/// A row of the Load Profile.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadProfileRow {
    pub name: &'static str,
    pub per_second: f64,
    /// None where per transaction means nothing (Transactions itself) or there was none.
    pub per_transaction: Option<f64>,
}

/// What the top events' percentages are of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareBasis {
    DbTime,
    /// DB time is not measured: the non-idle foreground wait time.
    WaitTime,
}

impl ShareBasis {
    pub fn heading(self) -> &'static str {
        match self {
            ShareBasis::DbTime => "% DB time",
            ShareBasis::WaitTime => "% Wait time",
        }
    }

    fn words(self) -> &'static str {
        match self {
            ShareBasis::DbTime => "DB time",
            ShareBasis::WaitTime => "the non-idle foreground wait time",
        }
    }
}

/// A row of Top 5 Timed Foreground Events: an event, or DB CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct TopEventRow {
    pub name: String,
    /// None for DB CPU.
    pub waits: Option<u64>,
    pub time_us: u64,
    pub avg_ms: Option<f64>,
    /// Percent of the basis.
    pub share_pct: Option<f64>,
    pub wait_class: String,
}

/// Seed 000's unit-of-work table: a commit is the unit of work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitOfWork {
    /// L: the arrival rate, commits per second.
    pub commits_per_second: f64,
    /// CPUt: CPU per commit (DB CPU plus background cpu time when measured), ms.
    pub cpu_ms_per_commit: Option<f64>,
    /// Wt: non-idle foreground wait time per commit, ms.
    pub wait_ms_per_commit: Option<f64>,
    /// Rt = CPUt + Wt, ms.
    pub response_ms_per_commit: Option<f64>,
    /// Whether CPUt includes the background's CPU.
    pub cpu_includes_background: bool,
}

/// What a finding is about (so callers and tests can tell findings apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindingKind {
    CheckpointIncomplete,
    LogFileSyncDominates,
    SyncFarAboveWrite,
    LogBufferSpace,
    HardParses,
    FewRowsPerFetch,
}

/// A diagnosis, with the figures behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub kind: FindingKind,
    pub title: &'static str,
    /// What the figures show, with the figures.
    pub evidence: String,
    /// What it usually means and what to do.
    pub advice: String,
}

/// The activity between two snapshots of one instance.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    pub begin_id: u64,
    pub end_id: u64,
    pub begin_at_unix_us: u64,
    pub end_at_unix_us: u64,
    pub db_id: String,
    pub release: String,
    pub host: HostInfo,
    pub begin_scn: u64,
    pub end_scn: u64,
    pub statistics: BTreeMap<String, u64>,
    pub events: BTreeMap<String, EventDelta>,
    /// Time model entries the samples measure, in microseconds.
    pub time_model: BTreeMap<String, u64>,
    pub commit_response: BTreeMap<String, EventDelta>,
    /// The end snapshot's settings and gauges.
    pub settings: BTreeMap<String, String>,
    pub gauges: BTreeMap<String, u64>,
    /// What each statement did in the interval (summed over the snapshots after the
    /// first: each holds what happened since the one before), most elapsed time first;
    /// empty from [`Interval::between`], which sees two snapshots only.
    pub sql: Vec<SqlSample>,
    /// Statement activities the snapshots left out (a statement counted once per snapshot
    /// that left it out).
    pub sql_not_kept: u64,
    /// Ids between the first and the last snapshot that are not in the range (damaged or
    /// removed): the statements' activity they held is not counted.
    pub sql_missing_snapshots: Vec<u64>,
}

/// `end - begin` of a cumulative counter; an error if it went down (the database was
/// reopened in between, so the counters started again).
/// `what` names the counter in the error ("user commits" with its quotes).
fn delta(what: &str, begin: u64, end: u64, ids: (u64, u64)) -> Result<u64, AwrError> {
    end.checked_sub(begin).ok_or_else(|| AwrError::InstanceRestarted {
        begin: ids.0,
        end: ids.1,
        reason: format!("{what} went down from {begin} to {end}"),
    })
}

fn event_delta(
    name: &str,
    begin: Option<&EventSample>,
    end: &EventSample,
    ids: (u64, u64),
) -> Result<EventDelta, AwrError> {
    let zero = EventSample::default();
    let begin = begin.unwrap_or(&zero);
    let mut histogram = Vec::with_capacity(end.histogram.len());
    for (i, &count) in end.histogram.iter().enumerate() {
        let before = begin.histogram.get(i).copied().unwrap_or(0);
        histogram.push(delta(&format!("the waits of \"{name}\" in bucket {i}"), before, count, ids)?);
    }
    let ended_us = delta(&format!("the time of \"{name}\""), begin.time_us, end.time_us, ids)?;
    Ok(EventDelta {
        wait_class: end.wait_class.clone(),
        background: end.background,
        waits: delta(&format!("the waits of \"{name}\""), begin.waits, end.waits, ids)?,
        // The waits in progress at the begin ended here (their time so far belongs to the
        // interval before), those in progress at the end count their time so far. (A wait
        // in progress at the begin that then ended unrecorded, a failed one, takes nothing
        // below zero.)
        time_us: (ended_us + end.in_progress_us).saturating_sub(begin.in_progress_us),
        histogram,
    })
}

impl Interval {
    /// The activity from `begin` to `end`, which must be snapshots of the same instance,
    /// `begin` the older.
    pub fn between(begin: &Snapshot, end: &Snapshot) -> Result<Interval, AwrError> {
        let ids = (begin.id, end.id);
        if begin.id >= end.id {
            return Err(AwrError::BadRange { begin: begin.id, end: end.id });
        }
        let (b, e) = (&begin.sample, &end.sample);
        if b.db_id != e.db_id {
            return Err(AwrError::DifferentDatabases {
                begin: begin.id,
                end: end.id,
                begin_db: b.db_id.clone(),
                end_db: e.db_id.clone(),
            });
        }
        if b.process_id != e.process_id {
            return Err(AwrError::InstanceRestarted {
                begin: begin.id,
                end: end.id,
                reason: format!("taken in processes {} and {}", b.process_id, e.process_id),
            });
        }
        let mut statistics = BTreeMap::new();
        for (name, &value) in &e.statistics {
            statistics.insert(name.clone(), delta(&format!("\"{name}\""), b.statistic(name), value, ids)?);
        }
        let mut events = BTreeMap::new();
        for (name, event) in &e.events {
            events.insert(name.clone(), event_delta(name, b.events.get(name), event, ids)?);
        }
        let mut commit_response = BTreeMap::new();
        for (mode, event) in &e.commit_response {
            commit_response.insert(mode.clone(), event_delta(mode, b.commit_response.get(mode), event, ids)?);
        }
        let mut time_model = BTreeMap::new();
        for name in TIME_MODEL {
            if let Some(end_us) = e.time_model_us(name) {
                let begin_us = b.time_model_us(name).unwrap_or(0);
                time_model.insert(name.to_string(), delta(&format!("\"{name}\""), begin_us, end_us, ids)?);
            }
        }
        Ok(Interval {
            begin_id: begin.id,
            end_id: end.id,
            begin_at_unix_us: b.taken_at_unix_us,
            end_at_unix_us: e.taken_at_unix_us,
            db_id: e.db_id.clone(),
            release: e.release.clone(),
            host: e.host.clone(),
            begin_scn: b.current_scn,
            end_scn: e.current_scn,
            statistics,
            events,
            time_model,
            commit_response,
            settings: e.settings.clone(),
            gauges: e.gauges.clone(),
            sql: Vec::new(),
            sql_not_kept: 0,
            sql_missing_snapshots: Vec::new(),
        })
    }

    /// The activity from the first snapshot of `range` to its last, which must be every
    /// stored snapshot between them, of one instance, in id order: [`Interval::between`]
    /// the two, with the statements' activity of every snapshot after the first.
    pub fn over(range: &[Snapshot]) -> Result<Interval, AwrError> {
        let [begin, .., end] = range else {
            return Err(AwrError::BadCall(format!("a report needs two snapshots, {} given", range.len())));
        };
        let mut interval = Interval::between(begin, end)?;
        let mut by_text: BTreeMap<&str, SqlSample> = BTreeMap::new();
        for pair in range.windows(2) {
            interval.sql_missing_snapshots.extend(pair[0].id + 1..pair[1].id);
        }
        for snapshot in &range[1..] {
            for s in &snapshot.sample.sql {
                let sum = by_text
                    .entry(&s.text)
                    .or_insert_with(|| SqlSample { text: s.text.clone(), ..SqlSample::default() });
                sum.executions += s.executions;
                sum.parse_calls += s.parse_calls;
                sum.rows_processed += s.rows_processed;
                sum.elapsed_us += s.elapsed_us;
            }
            interval.sql_not_kept += snapshot.sample.sql_not_kept;
        }
        let mut sql: Vec<SqlSample> = by_text.into_values().collect();
        sql.sort_by(|a, b| b.elapsed_us.cmp(&a.elapsed_us).then_with(|| b.executions.cmp(&a.executions)));
        interval.sql = sql;
        Ok(interval)
    }

    /// The `n` statements with the most of `key`, those with none of it left out.
    pub fn top_sql(&self, n: usize, key: impl Fn(&SqlSample) -> u64) -> Vec<&SqlSample> {
        let mut sql: Vec<&SqlSample> = self.sql.iter().filter(|s| key(s) > 0).collect();
        sql.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| b.elapsed_us.cmp(&a.elapsed_us)));
        sql.truncate(n);
        sql
    }

    /// Wall-clock seconds between the snapshots (0 if the clock went back).
    pub fn elapsed_s(&self) -> f64 {
        self.end_at_unix_us.saturating_sub(self.begin_at_unix_us) as f64 / 1e6
    }

    pub fn statistic(&self, name: &str) -> u64 {
        self.statistics.get(name).copied().unwrap_or(0)
    }

    /// Transactions, as Oracle counts them: commits plus rollbacks.
    pub fn transactions(&self) -> u64 {
        self.statistic("user commits") + self.statistic("user rollbacks")
    }

    pub fn time_model_us(&self, name: &str) -> Option<u64> {
        self.time_model.get(name).copied()
    }

    pub fn db_time_us(&self) -> Option<u64> {
        self.time_model_us("DB time")
    }

    pub fn per_second(&self, value: f64) -> f64 {
        let elapsed = self.elapsed_s();
        if elapsed > 0.0 {
            value / elapsed
        } else {
            0.0
        }
    }

    pub fn per_transaction(&self, value: f64) -> Option<f64> {
        let transactions = self.transactions();
        (transactions > 0).then(|| value / transactions as f64)
    }

    pub fn event(&self, name: &str) -> Option<&EventDelta> {
        self.events.get(name)
    }

    /// Non-idle foreground events that waited, longest total time first.
    pub fn foreground_events(&self) -> Vec<(&str, &EventDelta)> {
        self.waited_events(false)
    }

    /// Background events that waited, longest total time first.
    pub fn background_events(&self) -> Vec<(&str, &EventDelta)> {
        self.waited_events(true)
    }

    fn waited_events(&self, background: bool) -> Vec<(&str, &EventDelta)> {
        let mut events: Vec<(&str, &EventDelta)> = self
            .events
            .iter()
            .filter(|(_, e)| e.background == background && !e.is_idle() && (e.waits > 0 || e.time_us > 0))
            .map(|(name, e)| (name.as_str(), e))
            .collect();
        events.sort_by(|a, b| b.1.time_us.cmp(&a.1.time_us).then(a.0.cmp(b.0)));
        events
    }

    /// Total non-idle foreground wait time, microseconds.
    pub fn foreground_wait_us(&self) -> u64 {
        self.foreground_events().iter().map(|(_, e)| e.time_us).sum()
    }

    /// What shares of time are shares of, and its size in microseconds.
    pub fn share_basis(&self) -> (ShareBasis, u64) {
        match self.db_time_us() {
            Some(db_time) => (ShareBasis::DbTime, db_time),
            None => (ShareBasis::WaitTime, self.foreground_wait_us()),
        }
    }

    fn share_pct(&self, time_us: u64) -> Option<f64> {
        let (_, basis) = self.share_basis();
        (basis > 0).then(|| 100.0 * time_us as f64 / basis as f64)
    }

    /// The Load Profile: rows whose statistic the samples have.
    pub fn load_profile(&self) -> Vec<LoadProfileRow> {
        let mut rows = Vec::new();
        let mut push = |name: &'static str, value: Option<f64>| {
            if let Some(v) = value {
                rows.push(LoadProfileRow {
                    name,
                    per_second: self.per_second(v),
                    per_transaction: self.per_transaction(v),
                });
            }
        };
        let seconds = |us: Option<u64>| us.map(|us| us as f64 / 1e6);
        let stat = |name: &str| self.statistics.get(name).map(|&v| v as f64);
        push("DB Time(s)", seconds(self.db_time_us()));
        push("DB CPU(s)", seconds(self.time_model_us("DB CPU")));
        push("Background CPU(s)", seconds(self.time_model_us("background cpu time")));
        push("Redo size (bytes)", stat("redo size"));
        push("Redo writes", stat("redo writes"));
        push("User calls", stat("user calls"));
        push("Parses (SQL)", stat("parse count (total)"));
        push("Hard parses (SQL)", stat("parse count (hard)"));
        push("Executes (SQL)", stat("execute count"));
        push("Rows fetched", stat("rows fetched"));
        push("User commits", stat("user commits"));
        push("Rollbacks", stat("user rollbacks"));
        rows.push(LoadProfileRow {
            name: "Transactions",
            per_second: self.per_second(self.transactions() as f64),
            per_transaction: None,
        });
        rows
    }

    /// Top `n` timed foreground events, DB CPU among them when DB time is the basis.
    pub fn top_events(&self, n: usize) -> Vec<TopEventRow> {
        let mut rows: Vec<TopEventRow> = self
            .foreground_events()
            .into_iter()
            .map(|(name, e)| TopEventRow {
                name: name.to_string(),
                waits: Some(e.waits),
                time_us: e.time_us,
                avg_ms: e.avg_ms(),
                share_pct: self.share_pct(e.time_us),
                wait_class: e.wait_class.clone(),
            })
            .collect();
        if let (ShareBasis::DbTime, Some(cpu)) = (self.share_basis().0, self.time_model_us("DB CPU")) {
            rows.push(TopEventRow {
                name: "DB CPU".to_string(),
                waits: None,
                time_us: cpu,
                avg_ms: None,
                share_pct: self.share_pct(cpu),
                wait_class: String::new(),
            });
        }
        rows.sort_by(|a, b| b.time_us.cmp(&a.time_us).then(a.name.cmp(&b.name)));
        rows.truncate(n);
        rows
    }

    /// Seed 000's L, CPUt, Wt and Rt.
    pub fn unit_of_work(&self) -> UnitOfWork {
        let commits = self.statistic("user commits");
        let per_commit_ms = |us: u64| (commits > 0).then(|| us as f64 / commits as f64 / 1000.0);
        let background_cpu = self.time_model_us("background cpu time");
        let cpu_us = self.time_model_us("DB CPU").map(|db_cpu| db_cpu + background_cpu.unwrap_or(0));
        let cpu = cpu_us.and_then(per_commit_ms);
        let wait = per_commit_ms(self.foreground_wait_us());
        UnitOfWork {
            commits_per_second: self.per_second(commits as f64),
            cpu_ms_per_commit: cpu,
            wait_ms_per_commit: wait,
            response_ms_per_commit: cpu.zip(wait).map(|(c, w)| c + w),
            cpu_includes_background: cpu_us.is_some() && background_cpu.is_some(),
        }
    }

    /// The time model's entries the samples measure: (name, microseconds, % of DB time).
    pub fn time_model_rows(&self) -> Vec<(&'static str, u64, Option<f64>)> {
        let db_time = self.db_time_us();
        TIME_MODEL
            .iter()
            .filter_map(|&name| {
                let us = self.time_model_us(name)?;
                let pct = db_time
                    .filter(|&d| d > 0 && !name.starts_with("background"))
                    .map(|d| 100.0 * us as f64 / d as f64);
                Some((name, us, pct))
            })
            .collect()
    }

    /// The findings, most important first.
    pub fn findings(&self) -> Vec<Finding> {
        let mut findings = Vec::new();
        let sync = self.event("log file sync").filter(|e| e.waits > 0);
        let write = self.event("log file parallel write").filter(|e| e.waits > 0);
        let (basis, basis_us) = self.share_basis();

        // First: while the log cannot reuse a group, no commit goes on at all.
        let incomplete = self.event("log file switch (checkpoint incomplete)").filter(|e| e.waits > 0);
        let failed = self.statistic("checkpoints failed");
        if incomplete.is_some() || failed > 0 {
            let waits = incomplete.map_or("no waits for log file switch (checkpoint incomplete)".to_string(), |e| {
                let share = self.share_pct(e.time_us).map_or("n/a".to_string(), |p| format!("{p:.1}%"));
                format!(
                    "{} waits for log file switch (checkpoint incomplete), {} s in all (avg {} ms, {share} of {})",
                    count(e.waits),
                    fmt_seconds(e.time_us),
                    fmt_ms(e.avg_ms()),
                    basis.words()
                )
            });
            let advice = if failed > 0 {
                "Checkpoint images could not be written (v$checkpoint.last_error and the log say why: a full \
                 file system, an I/O error): the log cannot reuse a group until one is, and commits that \
                 need the next group wait. Give the data directory room; the checkpointer retries with a \
                 growing delay (at most 5 s) and everyone goes on once an image is written. Waiting sessions \
                 show the error in v$session.wait_detail; a cancel or statement_timeout ends their wait"
            } else {
                "The log filled before a checkpoint freed its oldest group: make log files larger or more \
                 numerous (log_file_size, log_groups), or checkpoints more frequent (checkpoint_interval_ms)"
            };
            findings.push(Finding {
                kind: FindingKind::CheckpointIncomplete,
                title: if failed > 0 { "checkpoints failed" } else { "checkpoint incomplete" },
                evidence: format!(
                    "{} of {} checkpoints failed ({} completed); {waits}",
                    count(failed),
                    count(self.statistic("checkpoints started")),
                    count(self.statistic("checkpoints completed")),
                ),
                advice: advice.to_string(),
            });
        }

        if let (Some(sync), true) = (sync, basis_us > 0) {
            let share = sync.time_us as f64 / basis_us as f64;
            if share >= LOG_FILE_SYNC_DOMINANT_SHARE {
                findings.push(Finding {
                    kind: FindingKind::LogFileSyncDominates,
                    title: "log file sync dominates",
                    evidence: format!(
                        "log file sync is {:.1}% of {}{}: {} s of {} s; {} waits, avg {} ms, {} per commit",
                        100.0 * share,
                        basis.words(),
                        if basis == ShareBasis::WaitTime { " (DB time is not measured)" } else { "" },
                        fmt_seconds(sync.time_us),
                        fmt_seconds(basis_us),
                        count(sync.waits),
                        fmt_ms(sync.avg_ms()),
                        ratio_text(sync.waits, self.statistic("user commits")),
                    ),
                    advice: "Sessions spend their time waiting for their commits to become durable. Commit less \
                             often (group DML before a commit), use COMMIT WRITE NOWAIT or BATCH where losing the \
                             last commits in a crash is acceptable (seed 000), or make redo writes faster; the \
                             ratio of log file sync to log file parallel write tells slow writes from waits \
                             around them"
                        .to_string(),
                });
            }
        }

        if let (Some(sync), Some(write)) = (sync, write) {
            let (sync_ms, write_ms) = (sync.avg_ms().unwrap_or(0.0), write.avg_ms().unwrap_or(0.0));
            if write_ms > 0.0 && sync_ms / write_ms > SYNC_TO_WRITE_RATIO_LIMIT {
                let writes = self.statistic("redo writes");
                let requests = self.statistic("redo write requests");
                findings.push(Finding {
                    kind: FindingKind::SyncFarAboveWrite,
                    title: "log file sync far above log file parallel write",
                    evidence: format!(
                        "avg log file sync {} ms is {:.1}x avg log file parallel write {} ms (limit {}); \
                         {} I/O requests per redo write; {} CPUs",
                        fmt_ms(Some(sync_ms)),
                        sync_ms / write_ms,
                        fmt_ms(Some(write_ms)),
                        SYNC_TO_WRITE_RATIO_LIMIT,
                        if writes > 0 { format!("{:.2}", requests as f64 / writes as f64) } else { "n/a".into() },
                        self.host.cpus,
                    ),
                    advice: "A commit waits much longer than the write that makes it durable: the redo writes are \
                             serialized (several I/O requests per write, seed 002's log parallelism penalty) or the \
                             log writer is starved of CPU (more runnable threads than CPUs delay its wake-ups and \
                             the sessions' wake-ups after the write)"
                        .to_string(),
                });
            }
        }

        if let Some(space) = self.event("log buffer space").filter(|e| e.waits > 0) {
            let share = self.share_pct(space.time_us).map_or("n/a".to_string(), |p| format!("{p:.1}%"));
            let log_buffer =
                self.settings.get("log_buffer").map_or("unknown".to_string(), |b| format!("{b} bytes"));
            findings.push(Finding {
                kind: FindingKind::LogBufferSpace,
                title: "log buffer space waits",
                evidence: format!(
                    "{} waits for log buffer space, {} s in all (avg {} ms, {share} of {}); log_buffer is {log_buffer}",
                    count(space.waits),
                    fmt_seconds(space.time_us),
                    fmt_ms(space.avg_ms()),
                    basis.words(),
                ),
                advice: "Sessions waited for room to copy their redo: the log writer does not empty the buffer as \
                         fast as it fills. Make redo writes faster (disk, sync_method) or the log buffer larger"
                    .to_string(),
            });
        }

        let (parses, hard) = (self.statistic("parse count (total)"), self.statistic("parse count (hard)"));
        if parses > 0 && hard >= HARD_PARSES_MIN && hard as f64 / parses as f64 > HARD_PARSE_SHARE_LIMIT {
            findings.push(Finding {
                kind: FindingKind::HardParses,
                title: "hard parses",
                evidence: format!(
                    "{} of {} parses were hard ({:.1}%, limit {:.0}%; {:.1} hard parses/s)",
                    count(hard),
                    count(parses),
                    100.0 * hard as f64 / parses as f64,
                    100.0 * HARD_PARSE_SHARE_LIMIT,
                    self.per_second(hard as f64),
                ),
                advice:
                    "Statements differ only in their literals, so each text is parsed anew instead of found \
                         in the shared pool: use bind variables ($1, $2, ...) or prepared statements"
                        .to_string(),
            });
        }

        let rows = self.statistics.get("rows fetched").copied();
        let calls =
            FETCH_CALL_STATISTICS.iter().find_map(|&name| self.statistics.get(name).map(|&v| (name, v)));
        if let (Some(rows), Some((calls_name, calls))) = (rows, calls) {
            let per_call = if calls > 0 { rows as f64 / calls as f64 } else { 0.0 };
            if calls >= FETCH_CALLS_MIN && rows > 0 && per_call < ROWS_PER_FETCH_LIMIT {
                findings.push(Finding {
                    kind: FindingKind::FewRowsPerFetch,
                    title: "few rows per fetch",
                    evidence: format!(
                        "{} rows fetched in {} {calls_name} ({per_call:.1} rows each, limit {ROWS_PER_FETCH_LIMIT})",
                        count(rows),
                        count(calls),
                    ),
                    advice: "Rows come back one or a few per round trip: fetch arrays (a larger fetch size in the \
                             client) so one round trip carries many rows"
                        .to_string(),
                });
            }
        }
        findings
    }
}

/// Seconds with two decimals, from microseconds.
pub(crate) fn fmt_seconds(us: u64) -> String {
    format!("{:.2}", us as f64 / 1e6)
}

/// Milliseconds with three decimals, or n/a.
pub(crate) fn fmt_ms(ms: Option<f64>) -> String {
    ms.map_or("n/a".to_string(), |ms| format!("{ms:.3}"))
}

fn ratio_text(waits: u64, commits: u64) -> String {
    if commits == 0 {
        "no commits".to_string()
    } else {
        format!("{:.2}", waits as f64 / commits as f64)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::sample::Sample;
    use super::*;

    /// A sample with the given cumulative statistics and events (name, class, waits,
    /// time us, background), histograms putting every wait in the bucket of its average.
    pub(crate) fn crafted(
        at_s: u64,
        stats: &[(&str, u64)],
        events: &[(&str, &str, u64, u64, bool)],
    ) -> Sample {
        let events = events
            .iter()
            .map(|&(name, class, waits, time_us, background)| {
                let mut histogram = vec![0; 32];
                if waits > 0 {
                    histogram[redo::stats::histogram_bucket(time_us / waits)] = waits;
                }
                let e = EventSample {
                    wait_class: class.into(),
                    background,
                    waits,
                    time_us,
                    max_us: None,
                    histogram,
                    in_progress_us: 0,
                };
                (name.to_string(), e)
            })
            .collect();
        Sample {
            format_version: super::super::SAMPLE_FORMAT_VERSION,
            taken_at_unix_us: 1_700_000_000_000_000 + at_s * 1_000_000,
            db_id: "00000000000000ab".into(),
            release: "0.1.0".into(),
            current_scn: at_s,
            durable_scn: at_s,
            checkpoint_scn: 0,
            process_id: 42,
            host: HostInfo {
                hostname: "testhost".into(),
                cpus: 2,
                os: "linux x86_64".into(),
                kernel: "6.1".into(),
            },
            statistics: stats.iter().map(|&(n, v)| (n.to_string(), v)).collect(),
            events,
            commit_response: BTreeMap::new(),
            time_model: BTreeMap::new(),
            gauges: BTreeMap::new(),
            settings: BTreeMap::from([("log_buffer".to_string(), "16777216".to_string())]),
            sql: Vec::new(),
            sql_not_kept: 0,
        }
    }

    /// A statement's activity in a crafted sample.
    pub(crate) fn statement(
        text: &str,
        executions: u64,
        parse_calls: u64,
        rows: u64,
        elapsed_us: u64,
    ) -> SqlSample {
        SqlSample { text: text.into(), executions, parse_calls, rows_processed: rows, elapsed_us }
    }

    /// Each snapshot holds what its statements did since the one before: a report over
    /// three snapshots adds the last two, and leaves out the first's (before the range).
    #[test]
    fn a_range_adds_the_statements_of_every_snapshot_after_the_first() {
        let mut first = crafted(0, &[], &[]);
        first.sql = vec![statement("before", 1_000, 1, 0, 9_000_000)];
        let mut second = crafted(60, &[], &[]);
        second.sql = vec![statement("SELECT $1", 10, 1, 10, 500), statement("COMMIT", 4, 4, 0, 100)];
        let mut third = crafted(120, &[], &[]);
        third.sql = vec![statement("SELECT $1", 5, 0, 5, 250)];
        third.sql_not_kept = 3;
        let range = [snap(1, first), snap(2, second), snap(3, third)];
        let i = Interval::over(&range).expect("interval");
        assert_eq!(i.sql, [statement("SELECT $1", 15, 1, 15, 750), statement("COMMIT", 4, 4, 0, 100)]);
        assert_eq!(i.sql_not_kept, 3);
        assert_eq!(i.top_sql(1, |s| s.parse_calls), [&statement("COMMIT", 4, 4, 0, 100)]);
        assert!(
            i.top_sql(10, |s| s.rows_processed).iter().all(|s| s.text != "COMMIT"),
            "none of it: left out"
        );
        assert!(Interval::between(&range[0], &range[2]).expect("interval").sql.is_empty());
        assert!(i.sql_missing_snapshots.is_empty());
        // A snapshot missing from the range (damaged, skipped) is named.
        let gap = Interval::over(&[range[0].clone(), snap(4, range[2].sample.clone())]).expect("interval");
        assert_eq!(gap.sql_missing_snapshots, [2, 3]);
        assert!(Interval::over(&range[..1]).is_err());
    }

    pub(crate) fn snap(id: u64, sample: Sample) -> Snapshot {
        Snapshot { id, sample }
    }

    /// 100 s with 10,000 commits, log file sync averaging `sync_avg_us` and log file
    /// parallel write `write_avg_us`.
    pub(crate) fn sync_and_write(sync_avg_us: u64, write_avg_us: u64) -> (Snapshot, Snapshot) {
        let begin = crafted(
            0,
            &[("user commits", 0), ("redo writes", 0), ("redo write requests", 0)],
            &[
                ("log file sync", "Commit", 0, 0, false),
                ("log file parallel write", "System I/O", 0, 0, true),
            ],
        );
        let end = crafted(
            100,
            &[("user commits", 10_000), ("redo writes", 4_000), ("redo write requests", 4_000)],
            &[
                ("log file sync", "Commit", 10_000, 10_000 * sync_avg_us, false),
                ("log file parallel write", "System I/O", 4_000, 4_000 * write_avg_us, true),
            ],
        );
        (snap(1, begin), snap(2, end))
    }

    fn kinds(i: &Interval) -> Vec<FindingKind> {
        i.findings().iter().map(|f| f.kind).collect()
    }

    #[test]
    fn failed_checkpoints_and_the_waits_for_them_are_the_first_finding() {
        let stats = |failed, started, completed| {
            [
                ("checkpoints failed", failed),
                ("checkpoints started", started),
                ("checkpoints completed", completed),
            ]
        };
        let begin = crafted(0, &stats(0, 2, 2), &[(INCOMPLETE, "Configuration", 0, 0, false)]);
        let end = crafted(100, &stats(9, 12, 3), &[(INCOMPLETE, "Configuration", 3, 30_000_000, false)]);
        let i = Interval::between(&snap(1, begin.clone()), &snap(2, end)).expect("interval");
        let findings = i.findings();
        let first = &findings[0];
        assert_eq!((first.kind, first.title), (FindingKind::CheckpointIncomplete, "checkpoints failed"));
        assert!(
            first.evidence.starts_with("9 of 10 checkpoints failed (1 completed); 3 waits"),
            "{}",
            first.evidence
        );
        assert!(first.advice.contains("v$checkpoint.last_error"), "{}", first.advice);
        // Waits without failures: the log is too small for the load.
        let end = crafted(100, &stats(0, 3, 3), &[(INCOMPLETE, "Configuration", 2, 1_000, false)]);
        let i = Interval::between(&snap(1, begin.clone()), &snap(2, end)).expect("interval");
        let finding =
            i.findings().into_iter().find(|f| f.kind == FindingKind::CheckpointIncomplete).expect("one");
        assert_eq!(finding.title, "checkpoint incomplete");
        assert!(finding.advice.contains("log_file_size"), "{}", finding.advice);
        // Neither: no finding.
        let end = crafted(100, &stats(0, 3, 3), &[(INCOMPLETE, "Configuration", 0, 0, false)]);
        let i = Interval::between(&snap(1, begin), &snap(2, end)).expect("interval");
        assert!(!kinds(&i).contains(&FindingKind::CheckpointIncomplete));
    }

    const INCOMPLETE: &str = "log file switch (checkpoint incomplete)";

    #[test]
    fn sync_four_times_the_write_is_a_finding_with_its_figures() {
        let (b, e) = sync_and_write(4_000, 1_000);
        let interval = Interval::between(&b, &e).expect("interval");
        let findings = interval.findings();
        let finding =
            findings.iter().find(|f| f.kind == FindingKind::SyncFarAboveWrite).expect("ratio finding");
        assert!(
            finding
                .evidence
                .contains("avg log file sync 4.000 ms is 4.0x avg log file parallel write 1.000 ms"),
            "{}",
            finding.evidence
        );
        assert!(finding.evidence.contains("1.00 I/O requests per redo write"), "{}", finding.evidence);
        // Without DB time, log file sync is all of the foreground wait time.
        let dominant =
            findings.iter().find(|f| f.kind == FindingKind::LogFileSyncDominates).expect("dominates");
        assert!(
            dominant.evidence.starts_with(
                "log file sync is 100.0% of the non-idle foreground wait time (DB time is not measured): \
                 40.00 s of 40.00 s; 10,000 waits, avg 4.000 ms, 1.00 per commit"
            ),
            "{}",
            dominant.evidence
        );
    }

    #[test]
    fn sync_close_to_the_write_is_not_a_ratio_finding() {
        let (b, e) = sync_and_write(1_200, 1_000);
        let interval = Interval::between(&b, &e).expect("interval");
        assert!(!kinds(&interval).contains(&FindingKind::SyncFarAboveWrite), "{:?}", interval.findings());
        // Exactly at the limit is not above it.
        let (b, e) = sync_and_write(2_500, 1_000);
        assert!(
            !kinds(&Interval::between(&b, &e).expect("interval")).contains(&FindingKind::SyncFarAboveWrite)
        );
    }

    #[test]
    fn log_file_sync_does_not_dominate_a_db_time_mostly_on_cpu() {
        let (b, mut e) = sync_and_write(1_000, 900);
        // 10 s of log file sync in 100 s of DB time.
        e.sample.time_model.insert("DB time".into(), 100_000_000);
        e.sample.time_model.insert("DB CPU".into(), 85_000_000);
        let interval = Interval::between(&b, &e).expect("interval");
        assert!(kinds(&interval).is_empty(), "{:?}", interval.findings());
        let top = interval.top_events(5);
        assert_eq!(top[0].name, "DB CPU");
        assert_eq!(top[0].share_pct, Some(85.0));
        assert_eq!(top[1].name, "log file sync");
        assert_eq!(top[1].share_pct, Some(10.0));
        let uow = interval.unit_of_work();
        assert_eq!(uow.commits_per_second, 100.0);
        assert_eq!(uow.cpu_ms_per_commit, Some(8.5));
        assert_eq!(uow.wait_ms_per_commit, Some(1.0));
        assert_eq!(uow.response_ms_per_commit, Some(9.5));
    }

    #[test]
    fn many_hard_parses_are_a_finding_and_few_are_not() {
        let parses = |hard: u64| {
            let b = crafted(0, &[("parse count (total)", 0), ("parse count (hard)", 0)], &[]);
            let e = crafted(10, &[("parse count (total)", 1_000), ("parse count (hard)", hard)], &[]);
            Interval::between(&snap(1, b), &snap(2, e)).expect("interval")
        };
        let literal = parses(600);
        let finding =
            literal.findings().into_iter().find(|f| f.kind == FindingKind::HardParses).expect("hard parses");
        assert!(
            finding.evidence.contains("600 of 1,000 parses were hard (60.0%, limit 10%; 60.0 hard parses/s)"),
            "{}",
            finding.evidence
        );
        assert!(finding.advice.contains("bind variables"));
        assert!(!kinds(&parses(50)).contains(&FindingKind::HardParses), "5% hard parses");
    }

    #[test]
    fn log_buffer_space_and_few_rows_per_fetch_are_findings_when_measured() {
        let b = crafted(
            0,
            &[("rows fetched", 0), ("fetch calls", 0)],
            &[("log buffer space", "Configuration", 0, 0, false)],
        );
        let e = crafted(
            10,
            &[("rows fetched", 1_200), ("fetch calls", 1_000)],
            &[("log buffer space", "Configuration", 7, 70_000, false)],
        );
        let interval = Interval::between(&snap(1, b), &snap(2, e)).expect("interval");
        let findings = interval.findings();
        let space =
            findings.iter().find(|f| f.kind == FindingKind::LogBufferSpace).expect("log buffer space");
        assert!(
            space.evidence.starts_with("7 waits for log buffer space, 0.07 s in all (avg 10.000 ms"),
            "{}",
            space.evidence
        );
        assert!(space.evidence.contains("log_buffer is 16777216 bytes"), "{}", space.evidence);
        let fetch = findings.iter().find(|f| f.kind == FindingKind::FewRowsPerFetch).expect("rows per fetch");
        assert!(
            fetch.evidence.contains("1,200 rows fetched in 1,000 fetch calls (1.2 rows each"),
            "{}",
            fetch.evidence
        );
        // Without the statistics there is nothing to say about fetches.
        let (b, e) = sync_and_write(1_000, 1_000);
        assert!(!kinds(&Interval::between(&b, &e).expect("interval")).contains(&FindingKind::FewRowsPerFetch));
    }

    #[test]
    fn ranges_across_a_restart_or_another_database_are_refused() {
        let b = crafted(0, &[("user commits", 500)], &[]);
        let mut e = crafted(10, &[("user commits", 20)], &[]);
        match Interval::between(&snap(1, b.clone()), &snap(2, e.clone())) {
            Err(AwrError::InstanceRestarted { reason, .. }) => {
                assert!(reason.contains("\"user commits\" went down from 500 to 20"), "{reason}")
            }
            other => panic!("expected a restart, got {other:?}"),
        }
        e.statistics.insert("user commits".into(), 600);
        e.process_id = 43;
        assert!(matches!(
            Interval::between(&snap(1, b.clone()), &snap(2, e.clone())),
            Err(AwrError::InstanceRestarted { .. })
        ));
        e.process_id = 42;
        e.db_id = "00000000000000cd".into();
        assert!(matches!(
            Interval::between(&snap(1, b.clone()), &snap(2, e.clone())),
            Err(AwrError::DifferentDatabases { .. })
        ));
        assert!(matches!(Interval::between(&snap(2, b), &snap(2, e)), Err(AwrError::BadRange { .. })));
    }

    #[test]
    fn deltas_and_load_profile_are_per_second_and_per_transaction() {
        let b = crafted(0, &[("user commits", 100), ("user rollbacks", 0), ("redo size", 1_000)], &[]);
        let e = crafted(
            20,
            &[("user commits", 300), ("user rollbacks", 200), ("redo size", 201_000), ("new statistic", 5)],
            &[],
        );
        let interval = Interval::between(&snap(1, b), &snap(2, e)).expect("interval");
        assert_eq!(interval.elapsed_s(), 20.0);
        assert_eq!(interval.transactions(), 400);
        // A statistic the begin sample did not have counts from zero.
        assert_eq!(interval.statistic("new statistic"), 5);
        let profile = interval.load_profile();
        let redo = profile.iter().find(|r| r.name == "Redo size (bytes)").expect("redo size");
        assert_eq!((redo.per_second, redo.per_transaction), (10_000.0, Some(500.0)));
        let transactions = profile.last().expect("transactions");
        assert_eq!(
            (transactions.name, transactions.per_second, transactions.per_transaction),
            ("Transactions", 20.0, None)
        );
        assert!(profile.iter().all(|r| r.name != "DB Time(s)"), "DB time is not measured");
    }
}
