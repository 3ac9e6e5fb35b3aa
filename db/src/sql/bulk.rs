//! Bulk load: the rows of a PostgreSQL `COPY ... FROM STDIN`, which arrive in batches
//! over many calls, inserted as ONE statement. A row that fails (a type error, a NULL in
//! a NOT NULL column, a duplicate key) undoes every row of the load and only the load:
//! the transaction's earlier statements keep their effect, as with any failed statement.
//!
//! Rows go in through `Session::insert` (the same row check and row lock as INSERT),
//! without SQL: no parse, no expression evaluation per row.
//!
//! A load holds a statement savepoint across calls, so between `begin_bulk_load` and
//! `finish_bulk_load` / `abort_bulk_load` nothing else may run on the session; if the
//! transaction ended meanwhile (the session rolled back), abort has nothing to undo.

use std::sync::Arc;

use redo::TxnId;

use crate::database::{Session, StatementStart};
use crate::error::{DbError, DbResult};
use crate::schema::TableSchema;
use crate::value::Value;

/// A bulk load in progress.
pub struct BulkLoad {
    table: String,
    schema: Arc<TableSchema>,
    start: StatementStart,
    txn: Option<TxnId>,
    rows: u64,
}

impl BulkLoad {
    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }

    /// Rows inserted so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }
}

/// A row of a batch failed: its index in the batch, and why.
#[derive(Debug)]
pub struct BulkRowError {
    pub index: usize,
    pub error: DbError,
}

impl crate::database::CallResult for Result<(), BulkRowError> {
    fn terminated(error: DbError) -> Self {
        Err(BulkRowError { index: 0, error })
    }
}

impl Session {
    /// Starts loading rows into `table` (opening a transaction if none is open).
    pub fn begin_bulk_load(&mut self, table: &str) -> DbResult<BulkLoad> {
        // The session's temporary table of that name, if it has one.
        let stored = self.resolve_relation(table.to_string());
        let table = stored.as_str();
        if crate::views::is_view(table) {
            return Err(crate::views::read_only(table));
        }
        let schema = self.schema_of(table)?;
        if schema.sequence.is_some() {
            return Err(DbError::WrongObjectType(format!("cannot change sequence \"{table}\"")));
        }
        let start = self.statement_start();
        Ok(BulkLoad { table: table.to_string(), schema, start, txn: self.transaction_id(), rows: 0 })
    }

    /// Inserts a batch of rows (values in column order) as one user call. On an error the
    /// load is NOT undone yet: the caller ends it with `abort_bulk_load`.
    pub fn bulk_load(&mut self, load: &mut BulkLoad, rows: Vec<Vec<Value>>) -> Result<(), BulkRowError> {
        assert_eq!(self.transaction_id(), load.txn, "a bulk load stays in the transaction it began in");
        self.user_call(|s| {
            for (index, row) in rows.into_iter().enumerate() {
                s.insert(&load.table, row).map_err(|error| BulkRowError { index, error })?;
                load.rows += 1;
            }
            Ok(())
        })
    }

    /// Ends a load that succeeded; returns the rows it inserted.
    pub fn finish_bulk_load(&mut self, load: BulkLoad) -> u64 {
        load.rows
    }

    /// Ends a load that failed: undoes every row it inserted.
    pub fn abort_bulk_load(&mut self, load: BulkLoad) {
        if load.txn.is_some() && self.transaction_id() == load.txn {
            self.undo_statement(load.start);
        }
    }
}
