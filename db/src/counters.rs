//! The instance's counters at one moment, as one typed value ([`SystemCounters`], from
//! [`Database::counters`]): what the `v$` views show of the whole instance (v$sysstat,
//! v$system_event with v$event_histogram_micro, v$sys_time_model, v$commit_response,
//! v$commit_durability, the log's positions of v$database and v$log), read from the same
//! live counters the views read, for a caller that exports them instead of running SQL
//! (the wire server's `/metrics`).
//!
//! Taking one reads each counter once and keeps nothing: the session sets are summed
//! under the registries' locks (as a view does), the log's status is read under the
//! control file's lock, and the commit backlog is one pass over the commits not yet
//! durable under the log buffer's allocation lock (what `v$commit_durability` costs). So
//! the commit path pays only when someone reads, at the reader's pace.
//!
//! A snapshot is not one atomic instant: each figure is read on its own, as the views
//! read them, so two figures may differ by the work done between their reads (an event's
//! waits may be one ahead of its histogram). Each figure alone never goes backwards while
//! the database is open: a closed session's counts move to the registries' totals under
//! the same lock the sums are taken under.
//!
//! [`Database::counters`]: crate::Database::counters

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use redo::stats::{EventSnapshot, COMMIT_MODES};
use redo::{LogStatus, Lsn, Scn, Stat, WaitEvent};

use crate::database::DbShared;
use crate::sessions::{AnyEvent, DbEvent};
use crate::views::DbStat;

/// A statistic of `v$sysstat`: the redo log's, or the database layer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statistic {
    Redo(Stat),
    Db(DbStat),
}

impl Statistic {
    /// Every statistic, in `v$sysstat` order (the redo log's first).
    pub fn all() -> impl Iterator<Item = Statistic> {
        Stat::ALL.into_iter().map(Statistic::Redo).chain(DbStat::ALL.into_iter().map(Statistic::Db))
    }

    /// Oracle's name (`v$sysstat.name`).
    pub fn name(self) -> &'static str {
        match self {
            Statistic::Redo(s) => s.name(),
            Statistic::Db(s) => s.name(),
        }
    }
}

/// The time model of the instance (`v$sys_time_model`), microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeModel {
    /// `DB time`: elapsed time inside user calls, waits included.
    pub db_time_us: u64,
    /// `DB CPU`: CPU time of the sessions' threads inside user calls.
    pub db_cpu_us: u64,
    /// `background cpu time`: the log writer's and the checkpointer's CPU time.
    pub background_cpu_us: u64,
    /// `background elapsed time`: the time they spent working (not idle).
    pub background_elapsed_us: u64,
}

impl TimeModel {
    pub(crate) fn of(db: &DbShared) -> TimeModel {
        let calls = db.call_times();
        let redo = db.log().stats();
        let counters = &db.sql_counters;
        TimeModel {
            db_time_us: calls.db_time_us,
            db_cpu_us: calls.db_cpu_us,
            background_cpu_us: redo.get(Stat::BackgroundCpuTimeUs) + counters.checkpoint_cpu_us.load(Relaxed),
            background_elapsed_us: redo.get(Stat::BackgroundElapsedTimeUs)
                + counters.checkpoint_elapsed_us.load(Relaxed),
        }
    }

    /// (`v$sys_time_model.stat_name`, microseconds) of each entry.
    pub fn entries(&self) -> [(&'static str, u64); 4] {
        [
            ("DB time", self.db_time_us),
            ("DB CPU", self.db_cpu_us),
            ("background cpu time", self.background_cpu_us),
            ("background elapsed time", self.background_elapsed_us),
        ]
    }
}

/// What a crash now would lose of the commits acknowledged, and where durability stands
/// (`v$commit_durability`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitDurability {
    /// Commits in the log buffer not yet durable (acknowledged ones only under NOWAIT).
    pub commits_not_durable: u64,
    /// Bytes of redo reserved but not yet durable.
    pub bytes_not_durable: u64,
    /// Age of the oldest of those commits; None when there is none, or when it was made
    /// with `timed_statistics` off.
    pub oldest_age: Option<Duration>,
    /// The newest commit durable with every one before it.
    pub durable_scn: Scn,
    /// The newest commit made (applied, or durable if recovery left it newer).
    pub last_scn: Scn,
    pub durable_lsn: Lsn,
    pub reserved_lsn: Lsn,
}

impl CommitDurability {
    pub(crate) fn of(db: &DbShared) -> CommitDurability {
        let log = db.log();
        let backlog = log.commit_backlog();
        let status = log.status();
        let durable_scn = status.durable_commit.0;
        CommitDurability {
            commits_not_durable: backlog.commits,
            bytes_not_durable: backlog.bytes,
            oldest_age: backlog.oldest,
            durable_scn,
            last_scn: db.applied_scn().max(durable_scn),
            durable_lsn: status.durable,
            reserved_lsn: status.reserved_end,
        }
    }
}

/// Open sessions by `v$session.status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionCounts {
    /// Inside a user call.
    pub active: u64,
    /// Waiting for their client's next call.
    pub inactive: u64,
}

/// The instance's counters at one moment (see the module docs).
#[derive(Clone, Debug)]
pub struct SystemCounters {
    /// Every statistic with its value, in `v$sysstat` order.
    pub statistics: Vec<(Statistic, u64)>,
    /// Every wait event with its waits, time, maximum and microsecond histogram, in
    /// `v$system_event` order (the redo log's first).
    pub events: Vec<(AnyEvent, EventSnapshot)>,
    /// Commit response time per commit mode (`v$commit_response`, by its
    /// `commit_mode` names: "WAIT/IMMEDIATE", ...).
    pub commit_response: Vec<(&'static str, EventSnapshot)>,
    pub time_model: TimeModel,
    pub durability: CommitDurability,
    /// The log's positions (LSNs, sequences, checkpoint) and whether it latched failed.
    pub log: LogStatus,
    /// The newest commit applied with every one before it (`v$database.current_scn`).
    pub applied_scn: Scn,
    pub sessions: SessionCounts,
    /// Statements in the shared pool.
    pub cached_statements: u64,
}

impl SystemCounters {
    pub(crate) fn of(db: &DbShared) -> SystemCounters {
        let redo = db.log().stats();
        let redo_statistics = Stat::ALL.into_iter().map(|s| (Statistic::Redo(s), redo.get(s)));
        let db_statistics =
            DbStat::ALL.into_iter().zip(DbStat::system_values(db)).map(|(s, v)| (Statistic::Db(s), v));
        let live = db.sessions.live();
        let active = live.iter().filter(|e| e.is_active()).count() as u64;
        SystemCounters {
            statistics: redo_statistics.chain(db_statistics).collect(),
            events: system_events(db),
            commit_response: COMMIT_MODES.into_iter().zip(redo.commit_response).collect(),
            time_model: TimeModel::of(db),
            durability: CommitDurability::of(db),
            log: db.log().status(),
            applied_scn: db.applied_scn(),
            sessions: SessionCounts { active, inactive: live.len() as u64 - active },
            cached_statements: db.statements.stats().entries,
        }
    }

    /// The figures of `event` (by its Oracle name), if there is such an event.
    pub fn event(&self, name: &str) -> Option<&EventSnapshot> {
        self.events.iter().find(|(e, _)| e.name() == name).map(|(_, s)| s)
    }

    /// The value of statistic `name` (its `v$sysstat` name), if there is one.
    pub fn statistic(&self, name: &str) -> Option<u64> {
        self.statistics.iter().find(|(s, _)| s.name() == name).map(|&(_, v)| v)
    }
}

/// Every wait event of the instance with its totals (background work, closed sessions and
/// open ones), in `v$system_event` order: the redo log's events, then the database
/// layer's.
pub(crate) fn system_events(db: &DbShared) -> Vec<(AnyEvent, EventSnapshot)> {
    let redo = db.log().stats();
    let db_totals = db.sessions.event_totals();
    let redo_events = WaitEvent::ALL.into_iter().map(|e| (AnyEvent::Redo(e), *redo.event(e)));
    let db_events = DbEvent::ALL.into_iter().map(|e| (AnyEvent::Db(e), db_totals[e as usize]));
    redo_events.chain(db_events).collect()
}
