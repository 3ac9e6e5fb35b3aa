//! The committed state of the database: every table's rows in an ordered map keyed by
//! primary key. Persistent maps (`imbl`) make a snapshot an O(1) clone, so readers and
//! checkpoints never hold up commits, and a commit changes only the paths it touches.
//!
//! Invariant: `scn` is the SCN of the last commit applied, and every commit up to it (and
//! none after) is reflected; commits are applied in SCN order (see `Database`).

use std::sync::Arc;

use imbl::OrdMap;
use redo::{Lsn, Scn};

use crate::change::Change;
use crate::error::{DbError, DbResult};
use crate::schema::{Key, Row, TableSchema};

#[derive(Clone, Debug)]
pub struct Table {
    pub schema: Arc<TableSchema>,
    pub rows: OrdMap<Key, Row>,
}

#[derive(Clone, Debug, Default)]
pub struct DbState {
    pub tables: OrdMap<String, Table>,
    pub scn: Scn,
    /// End of the unit of commit `scn` in the redo stream (what a checkpoint records).
    pub lsn: Lsn,
}

impl DbState {
    pub fn table(&self, name: &str) -> DbResult<&Table> {
        self.tables.get(name).ok_or_else(|| DbError::UnknownTable(name.to_string()))
    }

    fn table_mut(&mut self, name: &str) -> DbResult<&mut Table> {
        self.tables.get_mut(name).ok_or_else(|| DbError::UnknownTable(name.to_string()))
    }

    /// Applies one change. A change that does not fit the state (a duplicate key, a
    /// missing row or table) is an error: on the commit path that is a bug (changes are
    /// validated under row locks), in recovery it means the redo is corrupt.
    pub fn apply(&mut self, change: &Change) -> DbResult<()> {
        match change {
            Change::CreateTable(schema) => {
                if self.tables.contains_key(&schema.name) {
                    return Err(DbError::TableExists(schema.name.clone()));
                }
                self.tables.insert(
                    schema.name.clone(),
                    Table { schema: Arc::new(schema.clone()), rows: OrdMap::new() },
                );
            }
            Change::DropTable { table } => {
                self.tables.remove(table).ok_or_else(|| DbError::UnknownTable(table.clone()))?;
            }
            Change::Truncate { table } => self.table_mut(table)?.rows = OrdMap::new(),
            Change::Insert { table, row } => {
                let t = self.table_mut(table)?;
                let key = t.schema.key_of(row);
                if t.rows.contains_key(&key) {
                    return Err(DbError::DuplicateKey { table: table.clone(), key: format!("{key:?}") });
                }
                t.rows.insert(key, Arc::new(row.clone()));
            }
            Change::Update { table, key, row } => {
                let t = self.table_mut(table)?;
                if t.rows.remove(key).is_none() {
                    return Err(DbError::CorruptChange(format!(
                        "update of a missing row {key:?} in \"{table}\""
                    )));
                }
                let new_key = t.schema.key_of(row);
                if t.rows.contains_key(&new_key) {
                    return Err(DbError::DuplicateKey { table: table.clone(), key: format!("{new_key:?}") });
                }
                t.rows.insert(new_key, Arc::new(row.clone()));
            }
            Change::Delete { table, key } => {
                if self.table_mut(table)?.rows.remove(key).is_none() {
                    return Err(DbError::CorruptChange(format!(
                        "delete of a missing row {key:?} in \"{table}\""
                    )));
                }
            }
        }
        Ok(())
    }
}
