//! Sequences: `CREATE SEQUENCE` (PostgreSQL's and Oracle's options), `nextval`,
//! `currval`, `setval`, `lastval`, Oracle's `seq.NEXTVAL` / `seq.CURRVAL`, and the
//! sequences behind SERIAL and IDENTITY columns.
//!
//! A sequence is a relation of one row, as in PostgreSQL: `(last_value, log_cnt,
//! is_called)`, its definition in its schema (`SequenceDef`); `SELECT * FROM seq` reads
//! it. The row records how far values are *reserved*: values are handed out from memory
//! (`SequenceCache`), and before one beyond the reservation is handed out, a new
//! reservation `max(cache, LOG_AHEAD)` values on is committed with WAIT by a transaction
//! of its own (Oracle's recursive transaction on `seq$`). So a value is never handed out
//! twice, across a crash too: after one, the sequence goes on past the last durable
//! reservation, skipping the values of it nobody got. Sequence values are not
//! transactional: a rollback does not give them back.
//!
//! `currval` and `lastval` are per session: the values are kept by session ID, which the
//! session makes current on its thread at each call (`set_current_session`), since an
//! expression is evaluated without its session at hand.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::database::DbShared;
use crate::error::{DbError, DbResult};
use crate::schema::{Key, SequenceDef, TableSchema};
use crate::value::Value;

/// Values reserved by one logged reservation at least, as PostgreSQL logs 32 ahead.
pub const LOG_AHEAD: i64 = 32;

/// The sequence state columns, as PostgreSQL names them.
pub const COLUMNS: [&str; 3] = ["last_value", "log_cnt", "is_called"];

thread_local! {
    static CURRENT_SESSION: Cell<u64> = const { Cell::new(0) };
}

/// Makes `sid` the session whose `currval` values this thread's evaluations keep.
pub(crate) fn set_current_session(sid: u64) {
    CURRENT_SESSION.with(|c| c.set(sid));
}

fn current_session() -> u64 {
    CURRENT_SESSION.with(|c| c.get())
}

/// The in-memory side of one sequence: the next value, and how far values are reserved
/// in the log. In `i128`, so that stepping past `i64`'s ends is a comparison, not an
/// overflow.
struct SequenceCache {
    /// The schema it was loaded for: a sequence dropped and created again is new.
    schema: Arc<TableSchema>,
    next: i128,
    reserved: i128,
}

/// Every sequence's cache, and each session's last values.
#[derive(Default)]
pub(crate) struct Sequences {
    caches: Mutex<HashMap<String, SequenceCache>>,
    /// By session ID: its values (`currval`, `lastval`).
    sessions: Mutex<HashMap<u64, SessionValues>>,
}

/// A session's last value of each sequence it called nextval of, and the last value of
/// any (`lastval`).
type SessionValues = (HashMap<String, i64>, Option<i64>);

impl Sequences {
    /// Forgets a session's values (it closed).
    pub(crate) fn close_session(&self, sid: u64) {
        self.sessions.lock().expect("sequence sessions poisoned").remove(&sid);
    }

    fn remember(&self, name: &str, value: i64) {
        let mut sessions = self.sessions.lock().expect("sequence sessions poisoned");
        let (values, last) = sessions.entry(current_session()).or_default();
        values.insert(name.to_string(), value);
        *last = Some(value);
    }
}

/// What an expression asks of a sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SequenceOp {
    Next,
    Current,
    /// `setval(seq, value [, is_called])`: its arguments are the expression's.
    Set,
    /// `lastval()`: of no one sequence.
    Last,
}

/// A sequence call in a compiled expression: the database is held weakly (a plan in the
/// shared pool must not keep its database open).
#[derive(Clone)]
pub(crate) struct SequenceCall {
    pub op: SequenceOp,
    pub name: String,
    pub db: Weak<DbShared>,
}

impl std::fmt::Debug for SequenceCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}({})", self.op, self.name)
    }
}

impl PartialEq for SequenceCall {
    fn eq(&self, other: &SequenceCall) -> bool {
        self.op == other.op && self.name == other.name
    }
}

impl SequenceCall {
    /// Runs the call (`args`: setval's value and is_called, evaluated).
    pub(crate) fn call(&self, args: &[Value]) -> DbResult<Value> {
        let db = self
            .db
            .upgrade()
            .ok_or_else(|| DbError::Unsupported("a sequence of a closed database".into()))?;
        Ok(Value::Int(match self.op {
            SequenceOp::Next => db.nextval(&self.name)?,
            SequenceOp::Current => db.currval(&self.name)?,
            SequenceOp::Last => db.lastval()?,
            SequenceOp::Set => {
                let value = match args.first() {
                    Some(Value::Int(v)) => *v,
                    Some(Value::Null) | None => return Ok(Value::Null),
                    Some(other) => {
                        return Err(DbError::TypeMismatch {
                            expected: "bigint".into(),
                            value: other.to_string(),
                        })
                    }
                };
                let is_called = match args.get(1) {
                    None => true,
                    Some(Value::Bool(b)) => *b,
                    Some(other) => {
                        return Err(DbError::TypeMismatch {
                            expected: "boolean".into(),
                            value: other.to_string(),
                        })
                    }
                };
                db.setval(&self.name, value, is_called)?
            }
        }))
    }
}

fn not_a_sequence(name: &str) -> DbError {
    DbError::WrongObjectType(format!("\"{name}\" is not a sequence"))
}

fn def_of(schema: &TableSchema) -> DbResult<&SequenceDef> {
    schema.sequence.as_ref().ok_or_else(|| not_a_sequence(&schema.name))
}

impl DbShared {
    /// The schema of sequence `name`.
    pub(crate) fn sequence_schema(&self, name: &str) -> DbResult<Arc<TableSchema>> {
        let schema = self.read_catalog(|st| st.table(name).map(|t| t.schema.clone()))?;
        def_of(&schema)?;
        Ok(schema)
    }

    /// The sequence's state row: (last_value, is_called); a sequence never used has none.
    fn sequence_row(&self, name: &str) -> DbResult<Option<(i64, bool)>> {
        let key = Key::from_elem(Value::Int(1), 1);
        let row = self.read_key(&key, |shard| -> DbResult<Option<crate::schema::Row>> {
            Ok(shard.table(name)?.rows.get(&key).cloned())
        })?;
        Ok(row.map(|row| match (&row[0], &row[2]) {
            (Value::Int(last), Value::Bool(called)) => (*last, *called),
            _ => (0, false),
        }))
    }

    /// Writes the state row and commits it with WAIT, in a transaction of its own.
    fn record_sequence(self: &Arc<Self>, name: &str, last_value: i64, is_called: bool) -> DbResult<()> {
        // The recursive session's calls make their own session and zone current: put
        // back the caller's.
        let (sid, zone) = (current_session(), crate::datetime::ZoneId::current());
        let result = (|| {
            let mut recursive = self.session();
            // A temporary sequence's state is never logged, as its table's rows are not
            // (`temp_tables`): the recursive session keeps it unlogged too.
            recursive.temp.made_any = crate::temp_tables::is_temporary(name);
            let key = Key::from_elem(Value::Int(1), 1);
            let row = vec![Value::Int(last_value), Value::Int(0), Value::Bool(is_called), Value::Int(1)];
            if recursive.get(name, &key)?.is_some() {
                recursive.update(name, &key, row)?;
            } else {
                recursive.insert(name, row[..3].to_vec())?;
            }
            let wait = redo::CommitOptions {
                wait: Some(redo::CommitWait::Wait),
                logging: Some(redo::CommitLogging::Immediate),
            };
            recursive.commit(wait).map(|_| ())
        })();
        set_current_session(sid);
        zone.make_current();
        result
    }

    fn load_cache(&self, name: &str, schema: &Arc<TableSchema>) -> DbResult<SequenceCache> {
        let def = def_of(schema)?;
        let inc = def.increment as i128;
        let (next, reserved) = match self.sequence_row(name)? {
            Some((last, true)) => (last as i128 + inc, last as i128),
            Some((last, false)) => (last as i128, last as i128 - inc),
            None => (def.start as i128, def.start as i128 - inc),
        };
        Ok(SequenceCache { schema: schema.clone(), next, reserved })
    }

    /// `nextval(name)`.
    pub(crate) fn nextval(self: &Arc<Self>, name: &str) -> DbResult<i64> {
        let schema = self.sequence_schema(name)?;
        let def = def_of(&schema)?.clone();
        let (inc, min, max) = (def.increment as i128, def.min as i128, def.max as i128);
        let mut caches = self.sequences.caches.lock().expect("sequences poisoned");
        let fresh = caches.get(name).is_none_or(|c| !Arc::ptr_eq(&c.schema, &schema));
        if fresh {
            let mut cache = self.load_cache(name, &schema)?;
            // A definition changed by ALTER SEQUENCE (the state row is still there): go on
            // after the last value handed out, by the new increment, as PostgreSQL does,
            // not after the whole reservation. The reservation stays the durable one, so a
            // value is still never handed out twice.
            let altered = caches.get(name).filter(|_| self.sequence_row(name).is_ok_and(|row| row.is_some()));
            if let Some(old) = altered {
                let old_increment = def_of(&old.schema).map_or(def.increment, |d| d.increment) as i128;
                cache.next = old.next - old_increment + inc;
            }
            caches.insert(name.to_string(), cache);
        }
        let cache = caches.get_mut(name).expect("loaded above");
        if cache.next > max || cache.next < min {
            if !def.cycle {
                let (end, limit) = if inc > 0 { ("maximum", def.max) } else { ("minimum", def.min) };
                return Err(DbError::SequenceLimit(format!(
                    "nextval: reached {end} value of sequence \"{name}\" ({limit})"
                )));
            }
            // Over the end: the other end, not covered by the reservation made going up.
            cache.next = if inc > 0 { min } else { max };
            cache.reserved = cache.next - inc;
        }
        let covered = if inc > 0 { cache.next <= cache.reserved } else { cache.next >= cache.reserved };
        if !covered {
            let ahead = def.cache.max(LOG_AHEAD) as i128;
            let reserve = (cache.next + inc * (ahead - 1)).clamp(min, max);
            self.record_sequence(name, reserve as i64, true)?;
            cache.reserved = reserve;
        }
        let value = cache.next as i64;
        cache.next += inc;
        drop(caches);
        self.sequences.remember(name, value);
        Ok(value)
    }

    /// `setval(name, value, is_called)`: the sequence goes on after `value` (or from it,
    /// if not `is_called`); durable before it returns.
    pub(crate) fn setval(self: &Arc<Self>, name: &str, value: i64, is_called: bool) -> DbResult<i64> {
        let schema = self.sequence_schema(name)?;
        let def = def_of(&schema)?;
        if value < def.min || value > def.max {
            return Err(DbError::NumericOutOfRange(format!(
                "setval: value {value} is out of bounds for sequence \"{name}\" ({}..{}): value",
                def.min, def.max
            )));
        }
        let inc = def.increment as i128;
        let mut caches = self.sequences.caches.lock().expect("sequences poisoned");
        self.record_sequence(name, value, is_called)?;
        let (next, reserved) = if is_called {
            (value as i128 + inc, value as i128)
        } else {
            (value as i128, value as i128 - inc)
        };
        caches.insert(name.to_string(), SequenceCache { schema, next, reserved });
        drop(caches);
        if is_called {
            self.sequences.remember(name, value);
        }
        Ok(value)
    }

    /// `currval(name)`: the value this session's last nextval of it gave.
    pub(crate) fn currval(&self, name: &str) -> DbResult<i64> {
        self.sequence_schema(name)?;
        let sessions = self.sequences.sessions.lock().expect("sequence sessions poisoned");
        sessions.get(&current_session()).and_then(|(values, _)| values.get(name).copied()).ok_or_else(|| {
            DbError::ObjectNotInPrerequisiteState(format!(
                "currval of sequence \"{name}\" is not yet defined in this session"
            ))
        })
    }

    /// `lastval()`: the value this session's last nextval of any sequence gave.
    pub(crate) fn lastval(&self) -> DbResult<i64> {
        let sessions = self.sequences.sessions.lock().expect("sequence sessions poisoned");
        sessions.get(&current_session()).and_then(|(_, last)| *last).ok_or_else(|| {
            DbError::ObjectNotInPrerequisiteState("lastval is not yet defined in this session".into())
        })
    }
}

/// A sequence's definition from `CREATE SEQUENCE`'s options (and SERIAL's, IDENTITY's),
/// with PostgreSQL's defaults: ascending from 1 up to the type's largest value,
/// descending from -1 down to its smallest.
pub(crate) fn definition(
    type_max: i64,
    increment: Option<i64>,
    min: Option<i64>,
    max: Option<i64>,
    start: Option<i64>,
    cache: Option<i64>,
    cycle: bool,
) -> DbResult<SequenceDef> {
    let invalid = |message: String| DbError::InvalidParameterValue {
        parameter: "sequence".into(),
        value: message,
        allowed: "a sequence whose START lies within MINVALUE..MAXVALUE, INCREMENT not 0, CACHE at least 1"
            .into(),
    };
    let increment = increment.unwrap_or(1);
    if increment == 0 {
        return Err(invalid("INCREMENT must not be zero".into()));
    }
    let min = min.unwrap_or(if increment > 0 { 1 } else { -type_max - 1 });
    let max = max.unwrap_or(if increment > 0 { type_max } else { -1 });
    if min >= max {
        return Err(invalid(format!("MINVALUE ({min}) must be less than MAXVALUE ({max})")));
    }
    let start = start.unwrap_or(if increment > 0 { min } else { max });
    if start < min || start > max {
        return Err(invalid(format!(
            "START value ({start}) cannot be outside MINVALUE ({min}) .. MAXVALUE ({max})"
        )));
    }
    let cache = cache.unwrap_or(1);
    if cache < 1 {
        return Err(invalid(format!("CACHE ({cache}) must be greater than zero")));
    }
    Ok(SequenceDef { start, increment, min, max, cache, cycle, owned_by: None })
}
