//! Dynamic performance views (Oracle's `v$` views), read with plain SELECT from any
//! client: `SELECT name, value FROM v$sysstat WHERE name LIKE 'redo%'`.
//!
//! A view has a fixed schema and no stored rows: each statement that reads one builds its
//! rows from the live counters at that moment (the redo log's statistics and wait events,
//! the SQL layer's counters, parameters, log groups and members). Views are read-only;
//! changing one is an error naming it.
//!
//! `v$mystat` shows the session that reads it; `v$session`, `v$sesstat`,
//! `v$session_event` and `v$sess_time_model` every open session, by SID.
//!
//! The time model (`v$sys_time_model`, `v$sess_time_model`) keeps Oracle's rule with the
//! events: DB time >= DB CPU + the non-idle foreground waits, as long as the events are
//! read before the time model (see `call_clock`): a session's open call counts in its DB
//! time up to the moment of reading.
//!
//! Column names are Oracle's, except that `#` (an operator in PostgreSQL's SQL, which the
//! clients speak) is spelled `_no`: `statistic_no`, `group_no`, `sequence_no`, `event_no`.
//!
//! Statistics are numbered the redo log's first ([`Stat`]), then the database layer's
//! ([`DbStat`]); events the redo log's first ([`WaitEvent`]), then the database layer's
//! ([`DbEvent`]).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use imbl::OrdMap;
use redo::stats::{histogram_bucket_limit_us, EventSnapshot, COMMIT_MODES, HISTOGRAM_BUCKETS};
use redo::{Stat, StatsSnapshot, WaitEvent};

use crate::counters::{system_events, CommitDurability, TimeModel};
use crate::database::{DbShared, Session};
use crate::error::{DbError, DbResult};
use crate::schema::{Column, Key, Row, TableSchema};
use crate::sessions::{AnyEvent, DbEvent, NetStat, SessionEntry, SqlStat, DB_EVENT_COUNT};
use crate::value::{DataType, Value};

/// Every view, by name (lowercase).
pub const VIEWS: [&str; 22] = [
    // Oracle's one-row table, for `SELECT expression FROM dual`.
    "dual",
    "v$checkpoint",
    "v$commit_durability",
    "v$commit_response",
    "v$commit_response_histogram_micro",
    "v$database",
    "v$event_histogram",
    "v$event_histogram_micro",
    "v$log",
    "v$log_history",
    "v$logfile",
    "v$mystat",
    "v$parameter",
    "v$session",
    "v$session_event",
    "v$sesstat",
    "v$sql",
    "v$sess_time_model",
    "v$sysstat",
    "v$sys_time_model",
    "v$system_event",
    "v$statname",
];

/// Whether `name` is a relation built from the database's state: a `v$` view or a
/// relation of the catalog (`crate::catalog`).
pub fn is_view(name: &str) -> bool {
    // Asked for every table a statement names: a user's table is told apart at its
    // first bytes, not by comparing it with every view's and catalog relation's name.
    if name.starts_with("v$") || name == "dual" {
        VIEWS.contains(&name)
    } else {
        (name.starts_with("pg_") || name.starts_with("information_schema."))
            && crate::catalog::is_relation(name)
    }
}

fn int(name: &str) -> Column {
    Column { name: name.into(), ty: DataType::Int, nullable: false }
}

fn float(name: &str) -> Column {
    Column { name: name.into(), ty: DataType::Float, nullable: false }
}

fn nullable_int(name: &str) -> Column {
    Column { name: name.into(), ty: DataType::Int, nullable: true }
}

fn text(name: &str) -> Column {
    Column { name: name.into(), ty: DataType::Text { max_chars: None }, nullable: true }
}

/// The columns of a wait event row (what `events` builds).
fn event_columns() -> Vec<Column> {
    vec![
        text("event"),
        text("wait_class"),
        int("total_waits"),
        int("time_waited_micro"),
        float("average_wait_micro"),
        int("max_wait_micro"),
    ]
}

/// The schema of view `name` (lowercase), or None if it is not a view.
pub fn schema(name: &str) -> Option<Arc<TableSchema>> {
    if let Some(catalog) = crate::catalog::schema(name) {
        return Some(catalog);
    }
    let (columns, key): (Vec<Column>, Vec<usize>) = match name {
        "v$sysstat" => (vec![int("statistic_no"), text("name"), text("class"), int("value")], vec![0]),
        "v$mystat" | "v$sesstat" => {
            (vec![int("sid"), int("statistic_no"), text("name"), text("class"), int("value")], vec![0, 1])
        }
        "v$session" => (
            vec![
                int("sid"),
                text("username"),
                text("program"),
                text("machine"),
                text("status"),
                text("event"),
                Column { name: "seconds_in_wait".into(), ty: DataType::Float, nullable: true },
                text("sql_text"),
                int("logon_time_us"),
                text("wait_class"),
                // Beyond Oracle's P1..P3: what the wait is waiting for, in words.
                text("wait_detail"),
            ],
            vec![0],
        ),
        "v$statname" => (vec![int("statistic_no"), text("name"), text("class")], vec![0]),
        // The shared pool's statements (Oracle's v$sql): a literal statement shows one
        // parse call each, a bind variable's text one row with many.
        "v$sql" => (
            vec![
                text("sql_text"),
                int("executions"),
                int("parse_calls"),
                int("rows_processed"),
                int("elapsed_time"),
                text("first_load_time"),
                text("last_active_time"),
            ],
            vec![0],
        ),
        "v$session_event" => (std::iter::once(int("sid")).chain(event_columns()).collect(), vec![0, 1]),
        "v$system_event" => (event_columns(), vec![0]),
        "v$event_histogram_micro" => {
            (vec![text("event"), int("wait_time_micro"), int("wait_count"), text("wait_class")], vec![0, 1])
        }
        "v$event_histogram" => (
            vec![
                int("event_no"),
                text("event"),
                int("wait_time_milli"),
                int("wait_count"),
                text("wait_class"),
            ],
            vec![0, 2],
        ),
        "v$parameter" => (
            vec![
                int("num"),
                text("name"),
                text("type"),
                text("value"),
                text("modifiable"),
                text("description"),
            ],
            vec![0],
        ),
        "v$commit_durability" => (
            vec![
                int("commits_not_durable"),
                int("bytes_not_durable"),
                Column { name: "oldest_age_micro".into(), ty: DataType::Int, nullable: true },
                int("durable_scn"),
                int("last_scn"),
                int("durable_lsn"),
                int("reserved_lsn"),
            ],
            vec![0],
        ),
        "v$commit_response" => (
            vec![
                text("commit_mode"),
                int("commits"),
                int("time_micro"),
                float("average_micro"),
                int("max_micro"),
            ],
            vec![0],
        ),
        "v$commit_response_histogram_micro" => {
            (vec![text("commit_mode"), int("time_micro"), int("commit_count")], vec![0, 1])
        }
        "v$log" => (
            vec![
                int("group_no"),
                int("thread_no"),
                int("sequence_no"),
                int("bytes"),
                int("members"),
                text("archived"),
                text("status"),
                int("first_lsn"),
            ],
            vec![0],
        ),
        "v$sys_time_model" => (vec![text("stat_name"), int("value")], vec![0]),
        "v$sess_time_model" => (vec![int("sid"), text("stat_name"), int("value")], vec![0, 1]),
        "v$log_history" => (
            vec![
                int("recid"),
                int("thread_no"),
                int("sequence_no"),
                int("group_no"),
                int("first_lsn"),
                int("first_time_us"),
            ],
            vec![0],
        ),
        "v$logfile" => (
            vec![int("group_no"), int("member_no"), text("status"), text("type"), text("member")],
            vec![0, 1],
        ),
        // Beyond Oracle: how checkpoints are going (see `checkpointer`).
        "v$checkpoint" => (
            vec![
                text("status"),
                int("checkpoints_started"),
                int("checkpoints_completed"),
                int("checkpoints_failed"),
                int("consecutive_failures"),
                nullable_int("failing_since_us"),
                text("last_error"),
                text("last_error_sqlstate"),
                nullable_int("last_error_time_us"),
                int("retry_delay_ms"),
                nullable_int("next_retry_time_us"),
                nullable_int("last_completed_time_us"),
                nullable_int("last_image_scn"),
                int("log_checkpoint_scn"),
                int("sessions_waiting"),
            ],
            vec![0],
        ),
        "dual" => (vec![text("dummy")], vec![0]),
        "v$database" => (
            vec![
                text("dbid"),
                text("name"),
                text("log_mode"),
                int("current_scn"),
                int("checkpoint_scn"),
                int("durable_scn"),
                text("open_mode"),
            ],
            vec![0],
        ),
        _ => return None,
    };
    let schema = TableSchema::new(name, columns, key).expect("view schemas are valid");
    Some(Arc::new(schema))
}

fn stat_class(stat: Stat) -> &'static str {
    match stat {
        Stat::UserCommits | Stat::UserRollbacks => "User",
        Stat::CommitWaitRequested
        | Stat::CommitNowaitRequested
        | Stat::CommitBatchRequested
        | Stat::CommitImmediateRequested
        | Stat::CommitWaitPerformed
        | Stat::CommitNowaitPerformed => "Commit",
        _ => "Redo",
    }
}

/// The statistics the database layer (and the wire server through it) counts, numbered
/// after the redo log's. Oracle's names where Oracle has the statistic; `rows fetched` and
/// `fetch calls` are v$sql's ROWS_PROCESSED (of queries) and FETCHES summed per session,
/// which Oracle's v$sysstat does not keep under one name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbStat {
    ParseCountTotal,
    ParseCountHard,
    SessionCursorCacheHits,
    ExecuteCount,
    CommitsDeferredByCall,
    SqlNetRoundtrips,
    BytesSentViaSqlNet,
    BytesReceivedViaSqlNet,
    UserCalls,
    /// Rows returned to the caller by queries: whole results, and cursor fetches.
    RowsFetched,
    /// Calls that returned rows: a query's whole result, or one cursor fetch (a wire
    /// portal Execute with a row limit).
    FetchCalls,
    /// Data-file blocks written (checkpoint images), in blocks of
    /// `checkpoint::DATA_BLOCK_BYTES`.
    PhysicalWrites,
    PhysicalWriteBytes,
    /// Attempts to write a checkpoint image (by the checkpointer or on request), those
    /// that wrote one, and those that failed (see `checkpointer`).
    CheckpointsStarted,
    CheckpointsCompleted,
    CheckpointsFailed,
}

pub const DB_STAT_COUNT: usize = 16;

impl DbStat {
    pub const ALL: [DbStat; DB_STAT_COUNT] = [
        DbStat::ParseCountTotal,
        DbStat::ParseCountHard,
        DbStat::SessionCursorCacheHits,
        DbStat::ExecuteCount,
        DbStat::CommitsDeferredByCall,
        DbStat::SqlNetRoundtrips,
        DbStat::BytesSentViaSqlNet,
        DbStat::BytesReceivedViaSqlNet,
        DbStat::UserCalls,
        DbStat::RowsFetched,
        DbStat::FetchCalls,
        DbStat::PhysicalWrites,
        DbStat::PhysicalWriteBytes,
        DbStat::CheckpointsStarted,
        DbStat::CheckpointsCompleted,
        DbStat::CheckpointsFailed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DbStat::ParseCountTotal => "parse count (total)",
            DbStat::ParseCountHard => "parse count (hard)",
            DbStat::SessionCursorCacheHits => "session cursor cache hits",
            DbStat::ExecuteCount => "execute count",
            DbStat::CommitsDeferredByCall => "commits deferred by call",
            DbStat::SqlNetRoundtrips => NetStat::Roundtrips.name(),
            DbStat::BytesSentViaSqlNet => NetStat::BytesSent.name(),
            DbStat::BytesReceivedViaSqlNet => NetStat::BytesReceived.name(),
            DbStat::UserCalls => "user calls",
            DbStat::RowsFetched => "rows fetched",
            DbStat::FetchCalls => "fetch calls",
            DbStat::PhysicalWrites => "physical writes",
            DbStat::PhysicalWriteBytes => "physical write bytes",
            DbStat::CheckpointsStarted => "checkpoints started",
            DbStat::CheckpointsCompleted => "checkpoints completed",
            DbStat::CheckpointsFailed => "checkpoints failed",
        }
    }

    /// Oracle's class of the statistic (v$statname.class, by name).
    pub fn class(self) -> &'static str {
        match self {
            DbStat::PhysicalWrites
            | DbStat::PhysicalWriteBytes
            | DbStat::CheckpointsStarted
            | DbStat::CheckpointsCompleted
            | DbStat::CheckpointsFailed => "Cache",
            _ => "SQL",
        }
    }

    /// The system's values now, in the order of [`DbStat::ALL`]: open sessions, closed
    /// ones and background work.
    pub(crate) fn system_values(db: &DbShared) -> [u64; DB_STAT_COUNT] {
        let sql = db.sql_stats_now();
        let net = db.sessions.net_totals();
        let counters = &db.sql_counters;
        let [started, completed, failed] = db.checkpoints.counts();
        DbStat::ALL.map(|stat| match stat {
            DbStat::ParseCountTotal => sql.parse_count_total,
            DbStat::ParseCountHard => sql.parse_count_hard,
            DbStat::SessionCursorCacheHits => sql.cache_hits,
            DbStat::ExecuteCount => sql.execute_count,
            DbStat::CommitsDeferredByCall => sql.commits_deferred_by_call,
            DbStat::SqlNetRoundtrips => net[NetStat::Roundtrips as usize],
            DbStat::BytesSentViaSqlNet => net[NetStat::BytesSent as usize],
            DbStat::BytesReceivedViaSqlNet => net[NetStat::BytesReceived as usize],
            DbStat::UserCalls => db.call_times().user_calls,
            DbStat::RowsFetched => sql.rows_fetched,
            DbStat::FetchCalls => sql.fetch_calls,
            DbStat::PhysicalWrites => counters.physical_writes.load(Relaxed),
            DbStat::PhysicalWriteBytes => counters.physical_write_bytes.load(Relaxed),
            DbStat::CheckpointsStarted => started,
            DbStat::CheckpointsCompleted => completed,
            DbStat::CheckpointsFailed => failed,
        })
    }

    /// One session's values: those counted per session (client traffic, user calls,
    /// fetches, parses and executions); the others (physical writes, the background's)
    /// are counted only for the system and show 0.
    fn session_values(db: &DbShared, entry: &SessionEntry) -> [u64; DB_STAT_COUNT] {
        let net = entry.net();
        let (rows_fetched, fetch_calls) = db.fetches.of(entry.sid);
        DbStat::ALL.map(|stat| match stat {
            DbStat::SqlNetRoundtrips => net[NetStat::Roundtrips as usize],
            DbStat::BytesSentViaSqlNet => net[NetStat::BytesSent as usize],
            DbStat::BytesReceivedViaSqlNet => net[NetStat::BytesReceived as usize],
            DbStat::UserCalls => entry.user_calls.load(Relaxed),
            DbStat::RowsFetched => rows_fetched,
            DbStat::FetchCalls => fetch_calls,
            DbStat::ParseCountTotal => entry.sql_stat(SqlStat::ParseTotal),
            DbStat::ParseCountHard => entry.sql_stat(SqlStat::ParseHard),
            DbStat::SessionCursorCacheHits => entry.sql_stat(SqlStat::CacheHits),
            DbStat::ExecuteCount => entry.sql_stat(SqlStat::Execute),
            DbStat::CommitsDeferredByCall => entry.sql_stat(SqlStat::CommitsDeferred),
            _ => 0,
        })
    }
}

/// (statistic#, name, class, value) of every statistic, `redo` giving the redo log's
/// counters and `db` the database layer's (None for a view without values).
fn statistics(redo: Option<&StatsSnapshot>, db: Option<[u64; DB_STAT_COUNT]>) -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, stat) in Stat::ALL.iter().enumerate() {
        let mut row = vec![Value::Int(i as i64), Value::Text(stat.name().into()), stat_class(*stat).into()];
        if let Some(r) = redo {
            row.push(Value::Int(r.get(*stat) as i64));
        }
        rows.push(Row::from(row));
    }
    for (j, stat) in DbStat::ALL.iter().enumerate() {
        let mut row = vec![
            Value::Int((Stat::ALL.len() + j) as i64),
            Value::Text(stat.name().into()),
            stat.class().into(),
        ];
        if let Some(values) = db {
            row.push(Value::Int(values[j] as i64));
        }
        rows.push(Row::from(row));
    }
    rows
}

/// The millisecond bucket (`v$event_histogram.wait_time_milli`, Oracle's 1, 2, 4, 8 ...
/// ms: bucket `b` counts the waits shorter than `b` ms and, from 2 on, at least `b / 2`)
/// of microsecond bucket `i` (waits in `[2^(i-1), 2^i)` us).
///
/// The microsecond buckets' bounds are powers of two microseconds and do not fall on
/// millisecond bounds: `[512, 1024)` us straddles 1 ms, `[1024, 2048)` us straddles 2 ms,
/// and so on. Each is mapped whole to the millisecond bucket that holds most of it, the
/// one its lower bound falls in: buckets below 1024 us to "< 1 ms", `[1024, 2048)` us to
/// "< 2 ms", `[2^(10+k), 2^(11+k))` us to "< 2^(k+1) ms". So the bounds are read in binary
/// milliseconds (1 ms = 1024 us), as the AWR report's histograms are: a wait counted
/// under `b` took less than `1.024 * b` ms (not `b`), and at least `0.512 * b` ms. Mapping
/// by the upper bound instead would keep "less than `b` ms" exact but move the ~95% of a
/// straddling bucket that lies below the millisecond bound one bucket too high.
pub fn millisecond_bucket(micro_bucket: usize) -> u64 {
    1u64 << micro_bucket.saturating_sub(10)
}

/// The rows of `v$event_histogram` from the microsecond histograms of the events in
/// `events` (numbered in that order): each event's non-empty millisecond buckets.
fn millisecond_histogram(events: Vec<(AnyEvent, EventSnapshot)>) -> Vec<Row> {
    let mut rows = Vec::new();
    for (event_no, (event, e)) in events.into_iter().enumerate() {
        let mut buckets = std::collections::BTreeMap::<u64, u64>::new();
        for (micro, &count) in e.histogram.iter().enumerate().take(HISTOGRAM_BUCKETS) {
            if count > 0 {
                *buckets.entry(millisecond_bucket(micro)).or_default() += count;
            }
        }
        for (milli, count) in buckets {
            rows.push(Row::from(vec![
                Value::Int(event_no as i64),
                Value::Text(event.name().into()),
                Value::Int(milli as i64),
                Value::Int(count as i64),
                Value::Text(event.class().into()),
            ]));
        }
    }
    rows
}

/// A session's wait events, the redo log's then the database layer's.
fn session_events(
    redo: &StatsSnapshot,
    db: &[EventSnapshot; DB_EVENT_COUNT],
) -> Vec<(AnyEvent, EventSnapshot)> {
    let redo_events = WaitEvent::ALL.iter().map(|&e| (AnyEvent::Redo(e), *redo.event(e)));
    let db_events = DbEvent::ALL.iter().map(|&e| (AnyEvent::Db(e), db[e as usize]));
    redo_events.chain(db_events).collect()
}

/// One row per wait event: (event, class, waits, time, average, max).
fn events(events: Vec<(AnyEvent, EventSnapshot)>) -> Vec<Vec<Value>> {
    events
        .into_iter()
        .map(|(event, e)| {
            vec![
                Value::Text(event.name().into()),
                Value::Text(event.class().into()),
                Value::Int(e.waits as i64),
                Value::Int(e.time_us as i64),
                Value::Float(e.avg_us()),
                Value::Int(e.max_us as i64),
            ]
        })
        .collect()
}

/// What a session's wait in progress waits for, in words (`v$session.wait_detail`), for
/// the waits whose cause lies elsewhere than the session: a log switch, and above all a
/// checkpoint that cannot be written.
fn wait_detail(db: &DbShared, event: AnyEvent) -> Option<String> {
    let AnyEvent::Redo(event) = event else { return None };
    let config = db.log().config();
    let geometry = redo::format::Geometry::new(config.log_file_size, config.log_groups);
    // The sequence the waiting sessions need: the one after the last opened.
    let seq = redo::LogSeq(db.log().status().activated_seq.0 + 1);
    let group = geometry.group_of(seq) + 1;
    match event {
        WaitEvent::LogFileSwitchCompletion => {
            Some(format!("the log writer is opening log group {group} for sequence {}", seq.0))
        }
        WaitEvent::LogFileSwitchCheckpointIncomplete => {
            let needs = format!(
                "log group {group} (for sequence {}) still holds redo that recovery needs until a checkpoint",
                seq.0
            );
            let c = db.checkpoints.status();
            Some(match (&c.last_error, c.consecutive_failures) {
                (Some(error), failures) if failures > 0 => {
                    let since = c.failing_since_us.map_or(String::new(), |us| {
                        format!(" since {} UTC", crate::awr::clock::format_utc(us))
                    });
                    let retry = c.next_retry_us.map_or(String::new(), |at| {
                        let now = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| d.as_micros() as u64);
                        format!("; next attempt in {} ms", at.saturating_sub(now) / 1000)
                    });
                    format!(
                        "checkpoint failed ({failures} attempts{since}): {} [SQLSTATE {}]{retry}; {needs}",
                        error.message, error.sqlstate
                    )
                }
                _ if c.writing => format!("checkpoint in progress; {needs}"),
                _ => format!("checkpoint requested; {needs}"),
            })
        }
        _ => None,
    }
}

/// `row` with the session's SID in front.
fn with_sid(sid: u64, row: &[Value]) -> Row {
    let mut out = Vec::with_capacity(row.len() + 1);
    out.push(Value::Int(sid as i64));
    out.extend_from_slice(row);
    Row::from(out)
}

/// A session's statistics (`v$mystat`, `v$sesstat`): its redo counters and the database
/// layer's it counts per session.
fn session_statistics(db: &DbShared, entry: &SessionEntry) -> Vec<Row> {
    let values = DbStat::session_values(db, entry);
    statistics(Some(&entry.redo.snapshot()), Some(values))
        .iter()
        .map(|row| with_sid(entry.sid, row))
        .collect()
}

/// Rows of a time model view: (name, microseconds).
fn time_model(entries: &[(&str, u64)]) -> Vec<Row> {
    entries.iter().map(|&(name, us)| Row::from(vec![name.into(), Value::Int(us as i64)])).collect()
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_string())
    }
}

impl Session {
    /// The rows of view `name` now, keyed like a table, or None if it is not a view.
    pub(crate) fn view_rows(&self, name: &str) -> DbResult<Option<OrdMap<Key, Row>>> {
        let Some(schema) = schema(name) else { return Ok(None) };
        if let Some(rows) = self.catalog_rows(name)? {
            return Ok(Some(rows.into_iter().map(|r| (schema.key_of(&r), r)).collect()));
        }
        let rows: Vec<Row> = match name {
            "v$statname" => statistics(None, None),
            "v$sql" => self
                .db
                .statements
                .statements()
                .into_iter()
                .map(|s| {
                    Row::from(vec![
                        Value::Text(s.text),
                        Value::Int(s.totals.executions as i64),
                        Value::Int(s.parse_calls as i64),
                        Value::Int(s.totals.rows_processed as i64),
                        // Microseconds, as Oracle's.
                        Value::Int((s.totals.elapsed_ns / 1000) as i64),
                        Value::Text(crate::awr::clock::format_utc(s.first_load_us)),
                        Value::Text(crate::awr::clock::format_utc(s.last_active_us)),
                    ])
                })
                .collect(),
            "v$sysstat" => statistics(Some(&self.db.log().stats()), Some(DbStat::system_values(&self.db))),
            "v$mystat" => session_statistics(&self.db, &self.entry),
            "v$sesstat" => {
                self.db.sessions.live().iter().flat_map(|e| session_statistics(&self.db, e)).collect()
            }
            "v$system_event" => events(system_events(&self.db)).into_iter().map(Row::from).collect(),
            "v$session_event" => self
                .db
                .sessions
                .live()
                .iter()
                .flat_map(|e| {
                    let sid = e.sid;
                    events(session_events(&e.redo.snapshot(), &e.events()))
                        .into_iter()
                        .map(move |row| with_sid(sid, &row))
                })
                .collect(),
            "v$session" => self
                .db
                .sessions
                .live()
                .iter()
                .map(|e| {
                    let client = e.client();
                    let wait = e.current_wait();
                    Row::from(vec![
                        Value::Int(e.sid as i64),
                        Value::Text(client.username),
                        Value::Text(client.program),
                        Value::Text(client.machine),
                        if e.is_active() { "ACTIVE" } else { "INACTIVE" }.into(),
                        wait.map_or(Value::Null, |(event, _)| event.name().into()),
                        wait.map_or(Value::Null, |(_, lasted)| Value::Float(lasted.as_secs_f64())),
                        Value::Text(e.sql().to_string()),
                        Value::Int(e.logon_unix_us as i64),
                        wait.map_or(Value::Null, |(event, _)| event.class().into()),
                        wait.and_then(|(event, _)| wait_detail(&self.db, event))
                            .map_or(Value::Null, Value::Text),
                    ])
                })
                .collect(),
            "v$event_histogram" => millisecond_histogram(system_events(&self.db)),
            "v$event_histogram_micro" => {
                let mut rows = Vec::new();
                for (event, e) in system_events(&self.db) {
                    for (bucket, &count) in e.histogram.iter().enumerate().take(HISTOGRAM_BUCKETS) {
                        if count > 0 {
                            rows.push(Row::from(vec![
                                Value::Text(event.name().into()),
                                Value::Int(histogram_bucket_limit_us(bucket) as i64),
                                Value::Int(count as i64),
                                Value::Text(event.class().into()),
                            ]));
                        }
                    }
                }
                rows
            }
            "v$parameter" => self
                .show_parameters(None)
                .into_iter()
                .enumerate()
                .map(|(i, p)| {
                    Row::from(vec![
                        Value::Int(i as i64 + 1),
                        Value::Text(p.name),
                        p.type_name.into(),
                        Value::Text(p.value),
                        p.modifiable.into(),
                        p.description.into(),
                    ])
                })
                .collect(),
            "v$log" => self.db.log_groups(),
            "v$sys_time_model" => time_model(&TimeModel::of(&self.db).entries()),
            "v$sess_time_model" => self
                .db
                .sessions
                .live()
                .iter()
                .flat_map(|e| {
                    let [_, db_time_us, db_cpu_us] = e.call_counts();
                    time_model(&[("DB time", db_time_us), ("DB CPU", db_cpu_us)])
                        .into_iter()
                        .map(|row| with_sid(e.sid, &row))
                        .collect::<Vec<_>>()
                })
                .collect(),
            "v$log_history" => self
                .db
                .log()
                .log_history()
                .iter()
                .enumerate()
                .map(|(i, switch)| {
                    Row::from(vec![
                        Value::Int(i as i64 + 1),
                        Value::Int(1),
                        Value::Int(switch.seq.0 as i64),
                        Value::Int(switch.group as i64 + 1),
                        Value::Int(switch.first_lsn.0 as i64),
                        Value::Int(switch.at_unix_us as i64),
                    ])
                })
                .collect(),
            "v$commit_durability" => {
                let d = CommitDurability::of(&self.db);
                vec![Row::from(vec![
                    Value::Int(d.commits_not_durable as i64),
                    Value::Int(d.bytes_not_durable as i64),
                    d.oldest_age.map_or(Value::Null, |age| Value::Int(age.as_micros() as i64)),
                    Value::Int(d.durable_scn.0 as i64),
                    Value::Int(d.last_scn.0 as i64),
                    Value::Int(d.durable_lsn.0 as i64),
                    Value::Int(d.reserved_lsn.0 as i64),
                ])]
            }
            "v$commit_response" => {
                let stats = self.db.log().stats();
                COMMIT_MODES
                    .iter()
                    .zip(&stats.commit_response)
                    .map(|(mode, e)| {
                        Row::from(vec![
                            (*mode).into(),
                            Value::Int(e.waits as i64),
                            Value::Int(e.time_us as i64),
                            Value::Float(e.avg_us()),
                            Value::Int(e.max_us as i64),
                        ])
                    })
                    .collect()
            }
            "v$commit_response_histogram_micro" => {
                let stats = self.db.log().stats();
                let mut rows = Vec::new();
                for (mode, e) in COMMIT_MODES.iter().zip(&stats.commit_response) {
                    for (bucket, &count) in e.histogram.iter().enumerate() {
                        if count > 0 {
                            rows.push(Row::from(vec![
                                (*mode).into(),
                                Value::Int(histogram_bucket_limit_us(bucket) as i64),
                                Value::Int(count as i64),
                            ]));
                        }
                    }
                }
                rows
            }
            "v$logfile" => self
                .db
                .log()
                .members()
                .into_iter()
                .map(|m| {
                    Row::from(vec![
                        Value::Int(m.group as i64 + 1),
                        Value::Int(m.member as i64 + 1),
                        m.state.name().into(),
                        "ONLINE".into(),
                        Value::Text(m.path.display().to_string()),
                    ])
                })
                .collect(),
            "v$checkpoint" => {
                let c = self.db.checkpoints.status();
                let opt = |v: Option<u64>| v.map_or(Value::Null, |v| Value::Int(v as i64));
                let status = if c.writing {
                    "WRITING"
                } else if c.consecutive_failures > 0 {
                    "FAILED"
                } else {
                    "IDLE"
                };
                vec![Row::from(vec![
                    status.into(),
                    Value::Int(c.started as i64),
                    Value::Int(c.completed as i64),
                    Value::Int(c.failed as i64),
                    Value::Int(c.consecutive_failures as i64),
                    opt(c.failing_since_us),
                    c.last_error.as_ref().map_or(Value::Null, |e| Value::Text(e.message.clone())),
                    c.last_error.as_ref().map_or(Value::Null, |e| e.sqlstate.into()),
                    opt(c.last_error.as_ref().map(|e| e.at_us)),
                    Value::Int(c.retry_delay.as_millis() as i64),
                    opt(c.next_retry_us),
                    opt(c.last_completed_us),
                    opt(c.last_image_scn.map(|s| s.0)),
                    Value::Int(self.db.log().last_checkpoint().2 .0 as i64),
                    Value::Int(self.db.sessions_waiting_for_checkpoint() as i64),
                ])]
            }
            "dual" => vec![Row::from(vec![Value::Text("X".into())])],
            "v$database" => {
                let log = self.db.log();
                let status = log.status();
                let applied = self.db.applied_scn();
                vec![Row::from(vec![
                    Value::Text(format!("{:016x}", log.db_id())),
                    "REDODB".into(),
                    "NOARCHIVELOG".into(),
                    Value::Int(applied.0 as i64),
                    Value::Int(status.checkpoint_scn.0 as i64),
                    Value::Int(status.durable_commit.0 .0 as i64),
                    if status.failed { "FAILED (reopen to recover)" } else { "READ WRITE" }.into(),
                ])]
            }
            other => unreachable!("view {other} has a schema but no rows"),
        };
        Ok(Some(rows.into_iter().map(|r| (schema.key_of(&r), r)).collect()))
    }
}

/// The error for a statement that would change a view.
pub fn read_only(name: &str) -> DbError {
    DbError::ReadOnlyView(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use redo::stats::histogram_bucket;

    #[test]
    fn microsecond_buckets_map_to_binary_millisecond_buckets() {
        // Under 1024 us: "< 1 ms"; [1024, 2048) us: "< 2 ms"; [2048, 4096) us: "< 4 ms".
        for (us, ms) in [(0, 1), (1, 1), (999, 1), (1000, 1), (1023, 1), (1024, 2), (2047, 2), (2048, 4)] {
            assert_eq!(millisecond_bucket(histogram_bucket(us)), ms, "{us} us");
        }
        // Every wait in millisecond bucket b took less than 1.024 b ms and, from b = 2 on,
        // at least 0.512 b ms.
        for i in 0..HISTOGRAM_BUCKETS - 1 {
            let b = millisecond_bucket(i);
            assert!(histogram_bucket_limit_us(i) <= 1024 * b, "bucket {i}");
            assert!(i == 0 || b == 1 || histogram_bucket_limit_us(i - 1) >= 512 * b, "bucket {i}");
        }
        assert_eq!(DbStat::ALL.len(), DB_STAT_COUNT);
        assert!(DbStat::ALL.iter().enumerate().all(|(i, s)| *s as usize == i));
    }
}
