//! Prepared statements and cursors: the embedded API's bind variables, array fetch and
//! array insert (seed 004's three practices).
//!
//! `Session::prepare` parses once (through the shared statement cache); the statement then
//! runs any number of times with new bind values and no parse at all. A query opens a
//! `Cursor` from which rows are fetched in arrays of the caller's size; `close` (or drop)
//! releases it. `Session::execute_many` runs one prepared statement for many rows of bind
//! values as one atomic statement (array insert).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::database::Session;
use crate::error::DbResult;
use crate::sql::exec::{Prepared, QueryResult, ResultColumn};
use crate::value::Value;

/// A parsed statement, ready to execute with bind values.
#[derive(Clone)]
pub struct PreparedStatement {
    pub(crate) parsed: Arc<Prepared>,
    text: Arc<str>,
}

impl PreparedStatement {
    pub fn sql(&self) -> &str {
        &self.text
    }
}

/// The rows of a query, fetched in arrays.
pub struct Cursor {
    columns: Vec<ResultColumn>,
    rows: VecDeque<Vec<Value>>,
    fetched: u64,
}

impl Cursor {
    pub fn columns(&self) -> &[ResultColumn] {
        &self.columns
    }

    /// Up to `array_size` next rows (fewer at the end; none once exhausted).
    pub fn fetch(&mut self, array_size: usize) -> Vec<Vec<Value>> {
        let n = array_size.max(1).min(self.rows.len());
        self.fetched += n as u64;
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
    /// Parses `sql` once (a soft parse when the statement cache has it).
    pub fn prepare(&mut self, sql: &str) -> DbResult<PreparedStatement> {
        let parsed = self.prepare_cached(sql)?;
        Ok(PreparedStatement { parsed, text: Arc::from(sql) })
    }

    /// Executes a prepared statement with bind values: no parse.
    pub fn execute_prepared(
        &mut self,
        statement: &PreparedStatement,
        params: &[Value],
    ) -> DbResult<QueryResult> {
        self.user_call_sql(statement.sql(), |s| s.run_single(&statement.parsed, params))
    }

    /// Runs a prepared query and opens a cursor on its rows. A statement that returns no
    /// rows gives an empty cursor.
    pub fn query(&mut self, statement: &PreparedStatement, params: &[Value]) -> DbResult<Cursor> {
        match self.execute_prepared(statement, params)? {
            QueryResult::Rows { columns, rows } => Ok(Cursor { columns, rows: rows.into(), fetched: 0 }),
            QueryResult::Command { .. } => {
                Ok(Cursor { columns: Vec::new(), rows: VecDeque::new(), fetched: 0 })
            }
        }
    }

    /// Executes a prepared statement once per row of bind values, as ONE statement: if
    /// any row fails, none of them takes effect (array insert). Returns the rows affected.
    pub fn execute_many(&mut self, statement: &PreparedStatement, rows: &[Vec<Value>]) -> DbResult<u64> {
        self.user_call_sql(statement.sql(), |s| s.execute_many_call(statement, rows))
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
