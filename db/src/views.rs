//! Dynamic performance views (Oracle's `v$` views), read with plain SELECT from any
//! client: `SELECT name, value FROM v$sysstat WHERE name LIKE 'redo%'`.
//!
//! A view has a fixed schema and no stored rows: each statement that reads one builds its
//! rows from the live counters at that moment (the redo log's statistics and wait events,
//! the SQL layer's counters, parameters, log groups and members). Views are read-only;
//! changing one is an error naming it.
//!
//! Session-level views (`v$mystat`, `v$session_event`) show the session that reads them.
//!
//! Column names are Oracle's, except that `#` (an operator in PostgreSQL's SQL, which the
//! clients speak) is spelled `_no`: `statistic_no`, `group_no`, `sequence_no`.

use std::sync::Arc;

use imbl::OrdMap;
use redo::stats::{histogram_bucket_limit_us, COMMIT_MODES, HISTOGRAM_BUCKETS};
use redo::{Stat, StatsSnapshot, WaitEvent};

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::schema::{Column, Key, Row, TableSchema};
use crate::value::{DataType, Value};

/// Every view, by name (lowercase).
pub const VIEWS: [&str; 14] = [
    "v$commit_durability",
    "v$commit_response",
    "v$commit_response_histogram_micro",
    "v$database",
    "v$event_histogram_micro",
    "v$log",
    "v$log_history",
    "v$logfile",
    "v$mystat",
    "v$parameter",
    "v$session_event",
    "v$sysstat",
    "v$system_event",
    "v$statname",
];

/// The row lock wait, counted by the database layer (the others are the redo log's).
const ROW_LOCK_EVENT: &str = "enq: TX - row lock contention";
const ROW_LOCK_CLASS: &str = "Application";

pub fn is_view(name: &str) -> bool {
    VIEWS.contains(&name)
}

fn int(name: &str) -> Column {
    Column { name: name.into(), ty: DataType::Int, nullable: false }
}

fn float(name: &str) -> Column {
    Column { name: name.into(), ty: DataType::Float, nullable: false }
}

fn text(name: &str) -> Column {
    Column { name: name.into(), ty: DataType::Text { max_chars: None }, nullable: true }
}

/// The schema of view `name` (lowercase), or None if it is not a view.
pub fn schema(name: &str) -> Option<Arc<TableSchema>> {
    let (columns, key): (Vec<Column>, Vec<usize>) = match name {
        "v$sysstat" | "v$mystat" => {
            (vec![int("statistic_no"), text("name"), text("class"), int("value")], vec![0])
        }
        "v$statname" => (vec![int("statistic_no"), text("name"), text("class")], vec![0]),
        "v$system_event" | "v$session_event" => (
            vec![
                text("event"),
                text("wait_class"),
                int("total_waits"),
                int("time_waited_micro"),
                float("average_wait_micro"),
                int("max_wait_micro"),
            ],
            vec![0],
        ),
        "v$event_histogram_micro" => {
            (vec![text("event"), int("wait_time_micro"), int("wait_count"), text("wait_class")], vec![0, 1])
        }
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

/// The statistics of the SQL layer, numbered after the redo log's.
const SQL_STATS: [&str; 5] = [
    "parse count (total)",
    "parse count (hard)",
    "session cursor cache hits",
    "execute count",
    "commits deferred by call",
];

/// (statistic#, name, class, value) of every statistic, `redo` giving the redo log's
/// counters and `sql` the SQL layer's (None for a view without values).
fn statistics(redo: Option<&StatsSnapshot>, sql: Option<[u64; 5]>) -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, stat) in Stat::ALL.iter().enumerate() {
        let mut row = vec![Value::Int(i as i64), Value::Text(stat.name().into()), stat_class(*stat).into()];
        if let Some(r) = redo {
            row.push(Value::Int(r.get(*stat) as i64));
        }
        rows.push(Arc::new(row));
    }
    for (j, name) in SQL_STATS.iter().enumerate() {
        let mut row =
            vec![Value::Int((Stat::ALL.len() + j) as i64), Value::Text((*name).into()), "SQL".into()];
        if let Some(values) = sql {
            row.push(Value::Int(values[j] as i64));
        }
        rows.push(Arc::new(row));
    }
    rows
}

/// One row per wait event: (event, class, waits, time, average, max).
fn events(redo: &StatsSnapshot, row_lock: (u64, u64)) -> Vec<Row> {
    let mut rows: Vec<Row> = WaitEvent::ALL
        .iter()
        .map(|&event| {
            let e = redo.event(event);
            Arc::new(vec![
                Value::Text(event.name().into()),
                Value::Text(event.class().name().into()),
                Value::Int(e.waits as i64),
                Value::Int(e.time_us as i64),
                Value::Float(e.avg_us()),
                Value::Int(e.max_us as i64),
            ])
        })
        .collect();
    let (waits, time_us) = row_lock;
    let average = if waits == 0 { 0.0 } else { time_us as f64 / waits as f64 };
    rows.push(Arc::new(vec![
        Value::Text(ROW_LOCK_EVENT.into()),
        Value::Text(ROW_LOCK_CLASS.into()),
        Value::Int(waits as i64),
        Value::Int(time_us as i64),
        Value::Float(average),
        Value::Null,
    ]));
    rows
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
        let rows: Vec<Row> = match name {
            "v$statname" => statistics(None, None),
            "v$sysstat" => {
                let s = self.db.sql_stats_now();
                let sql = [
                    s.parse_count_total,
                    s.parse_count_hard,
                    s.cache_hits,
                    s.execute_count,
                    s.commits_deferred_by_call,
                ];
                statistics(Some(&self.db.log().stats()), Some(sql))
            }
            "v$mystat" => statistics(Some(&self.redo.stats()), Some([0; 5])),
            "v$system_event" => {
                let s = self.db.sql_stats_now();
                events(&self.db.log().stats(), (s.row_lock_waits, s.row_lock_wait_us))
            }
            "v$session_event" => events(&self.redo.stats(), (0, 0)),
            "v$event_histogram_micro" => {
                let stats = self.db.log().stats();
                let mut rows = Vec::new();
                for event in WaitEvent::ALL {
                    let e = stats.event(event);
                    for (bucket, &count) in e.histogram.iter().enumerate().take(HISTOGRAM_BUCKETS) {
                        if count > 0 {
                            rows.push(Arc::new(vec![
                                Value::Text(event.name().into()),
                                Value::Int(histogram_bucket_limit_us(bucket) as i64),
                                Value::Int(count as i64),
                                Value::Text(event.class().name().into()),
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
                    Arc::new(vec![
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
            "v$log_history" => self
                .db
                .log()
                .log_history()
                .iter()
                .enumerate()
                .map(|(i, switch)| {
                    Arc::new(vec![
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
                let log = self.db.log();
                let backlog = log.commit_backlog();
                let status = log.status();
                vec![Arc::new(vec![
                    Value::Int(backlog.commits as i64),
                    Value::Int(backlog.bytes as i64),
                    backlog.oldest.map_or(Value::Null, |age| Value::Int(age.as_micros() as i64)),
                    Value::Int(status.durable_commit.0 .0 as i64),
                    Value::Int(self.db.snapshot().scn.0.max(status.durable_commit.0 .0) as i64),
                    Value::Int(status.durable.0 as i64),
                    Value::Int(status.reserved_end.0 as i64),
                ])]
            }
            "v$commit_response" => {
                let stats = self.db.log().stats();
                COMMIT_MODES
                    .iter()
                    .zip(&stats.commit_response)
                    .map(|(mode, e)| {
                        Arc::new(vec![
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
                            rows.push(Arc::new(vec![
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
                    Arc::new(vec![
                        Value::Int(m.group as i64 + 1),
                        Value::Int(m.member as i64 + 1),
                        m.state.name().into(),
                        "ONLINE".into(),
                        Value::Text(m.path.display().to_string()),
                    ])
                })
                .collect(),
            "v$database" => {
                let log = self.db.log();
                let status = log.status();
                let snap = self.db.snapshot();
                vec![Arc::new(vec![
                    Value::Text(format!("{:016x}", log.db_id())),
                    "REDODB".into(),
                    "NOARCHIVELOG".into(),
                    Value::Int(snap.scn.0 as i64),
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
