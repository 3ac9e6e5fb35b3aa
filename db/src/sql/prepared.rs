//! Prepared statements and cursors: the embedded API's bind variables, array fetch and
//! array insert (seed 004's three practices).
//!
//! `Session::prepare` parses once (through the shared statement cache); the statement then
//! runs any number of times with new bind values and no parse at all. A query opens a
//! `Cursor` from which rows are fetched in arrays of the caller's size; `close` (or drop)
//! releases it. `Session::execute_many` runs one prepared statement for many rows of bind
//! values as one atomic statement (array insert).
//!
//! Fetch statistics: each `Cursor::fetch` is one `fetch calls` and adds its rows to
//! `rows fetched` (a wire portal's Execute with a row limit is one such fetch); opening
//! the cursor counts nothing. `execute_prepared` returns a whole result at once, one fetch
//! call (counted by `Session::user_call_sql`).
//!
//! The time model: `prepare`, `execute_prepared`, `query` and `execute_many` are user calls
//! (DB time, DB CPU). `Cursor::fetch` is not: the query's call produced the rows, and the
//! cursor hands them over from memory without the session, as Oracle's client hands over
//! the rows it prefetched without a call. (A wire client's fetch, an Execute of a portal
//! or a FETCH from a SQL cursor, is part of its request's call.)

use std::collections::VecDeque;
use std::sync::Arc;

use crate::database::{FetchCounters, ReturnedRows, Session, SqlText};
use crate::error::DbResult;
use crate::sql::cache::StatementStats;
use crate::sql::exec::{CompiledSlot, Prepared, QueryResult, ResultColumn};
use crate::value::Value;

/// A parsed statement, ready to execute with bind values.
#[derive(Clone)]
pub struct PreparedStatement {
    pub(crate) parsed: Arc<Prepared>,
    text: Arc<str>,
    /// Its text's counters in the statement cache (`v$sql`): each execution adds to them.
    stats: Arc<StatementStats>,
    /// The compiled form of an UPDATE or DELETE (the statement's execution plan), made at
    /// its first execution and checked against the table's schema at each.
    pub(crate) compiled: Arc<CompiledSlot>,
}

impl PreparedStatement {
    pub fn sql(&self) -> &str {
        &self.text
    }
}

/// The rows of a query (or of a DML statement's RETURNING), fetched in arrays.
pub struct Cursor {
    columns: Vec<ResultColumn>,
    rows: VecDeque<Vec<Value>>,
    /// The command tag of a DML statement with RETURNING ("UPDATE 3"); None for a query.
    command: Option<super::exec::Tag>,
    fetched: u64,
    /// The session's fetch statistics (a cursor outliving its session counts into
    /// nothing the views show).
    fetches: Arc<FetchCounters>,
    /// The rows its statement processed (`v$sql`): the rows it holds, or those a DML
    /// statement without RETURNING changed.
    processed: u64,
}

impl Cursor {
    pub fn columns(&self) -> &[ResultColumn] {
        &self.columns
    }

    /// The tag of the statement once its rows are all fetched: a DML statement's
    /// ("INSERT 0 2", for all its rows), else "SELECT n" for the `fetched_now` rows of the
    /// last fetch (as PostgreSQL tags a portal's last Execute).
    pub fn completion_tag(&self, fetched_now: usize) -> super::exec::Tag {
        self.command.clone().unwrap_or_else(|| super::exec::count_tag("SELECT", fetched_now as u64))
    }

    /// Up to `array_size` next rows (fewer at the end; none once exhausted). One fetch
    /// call, whatever it returns.
    pub fn fetch(&mut self, array_size: usize) -> Vec<Vec<Value>> {
        let n = array_size.max(1).min(self.rows.len());
        self.fetched += n as u64;
        self.fetches.record(n);
        self.rows.drain(..n).collect()
    }

    pub fn is_exhausted(&self) -> bool {
        self.rows.is_empty()
    }

    /// Rows fetched so far.
    pub fn rows_fetched(&self) -> u64 {
        self.fetched
    }

    /// Releases the cursor (dropping it does the same).
    pub fn close(self) {}
}

impl Session {
    /// Parses `sql` once (a soft parse when the statement cache has it): one user call (a
    /// parse call), its time in DB time.
    pub fn prepare(&mut self, sql: &str) -> DbResult<PreparedStatement> {
        self.user_call(|s| {
            let (parsed, stats) = s.prepare_cached(sql).map_err(|e| e.located_in(sql))?;
            Ok(PreparedStatement { parsed, text: Arc::from(sql), stats, compiled: Arc::default() })
        })
    }

    /// Executes a prepared statement with bind values: no parse.
    pub fn execute_prepared(
        &mut self,
        statement: &PreparedStatement,
        params: &[Value],
    ) -> DbResult<QueryResult> {
        self.user_call_sql(SqlText::Prepared(&statement.text, &statement.stats), |s| {
            s.run_prepared(&statement.parsed, &statement.compiled, params)
                .map_err(|e| e.located_in(&statement.text))
        })
    }

    /// Runs a prepared query (or INSERT, UPDATE or DELETE with RETURNING) and opens a
    /// cursor on its rows. A statement that returns no rows gives an empty cursor.
    pub fn query(&mut self, statement: &PreparedStatement, params: &[Value]) -> DbResult<Cursor> {
        let fetches = self.fetches.clone();
        self.user_call_sql(SqlText::Prepared(&statement.text, &statement.stats), |s| {
            let (columns, rows, command, processed) = match s
                .run_prepared(&statement.parsed, &statement.compiled, params)
                .map_err(|e| e.located_in(&statement.text))?
            {
                QueryResult::Rows { columns, rows, command } => {
                    let n = rows.len() as u64;
                    (columns, rows.into(), command, n)
                }
                QueryResult::Command { rows_affected, .. } => {
                    (Vec::new(), VecDeque::new(), None, rows_affected)
                }
            };
            Ok(Cursor { columns, rows, command, fetched: 0, fetches, processed })
        })
    }

    /// Executes a prepared statement once per row of bind values, as ONE statement: if
    /// any row fails, none of them takes effect (array insert). Returns the rows affected.
    pub fn execute_many(&mut self, statement: &PreparedStatement, rows: &[Vec<Value>]) -> DbResult<u64> {
        self.user_call_sql(SqlText::Prepared(&statement.text, &statement.stats), |s| {
            s.execute_many_call(statement, rows)
        })
    }

    fn execute_many_call(&mut self, statement: &PreparedStatement, rows: &[Vec<Value>]) -> DbResult<u64> {
        self.statement(|s| {
            let mut affected = 0;
            for params in rows {
                affected += s.execute_prepared(statement, params)?.rows_affected();
            }
            Ok(affected)
        })
    }
}

/// Opening a cursor returns no rows: its fetches are counted as they happen.
impl ReturnedRows for Cursor {
    fn returned_rows(&self, _fetch: &mut dyn FnMut(usize)) {}

    fn processed_rows(&self) -> u64 {
        self.processed
    }
}
