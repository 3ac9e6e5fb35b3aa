//! Foreign keys: a referencing (child) row's key columns, when none is NULL (MATCH
//! SIMPLE), equal the referenced columns of a row of the parent table; a change of a
//! referenced key does its constraint's action to the rows referencing it.
//!
//! Checked under concurrency with locks on the referenced keys, never by looking for
//! other transactions' uncommitted rows (which no session sees). Each referenced column
//! set of a parent has a lock namespace of its own (`key_lock`), named after the
//! parent and the columns, whose keys are the referenced values:
//! - a child row given a reference locks the parent's key in share mode (PostgreSQL's
//!   `FOR KEY SHARE`), then looks for the parent row: many children of one parent are
//!   inserted concurrently; the lock, held to the transaction's end, keeps the parent
//!   key from going away until the child row is committed or gone;
//! - a parent row whose referenced key goes away (deleted, or updated to another key)
//!   locks that key exclusively, then looks for the rows referencing it. The lock waits
//!   for every transaction that gave a child row a reference to it and has not ended;
//!   once it has the lock every such child row is committed (and seen) or gone. A parent
//!   update that keeps the key (most updates) takes no key lock and so never waits for
//!   children, nor they for it.
//!
//! Either way round, the second transaction waits for the first and then sees what it
//! did (a lock is released only once the holder's commit is visible: `locks`): a child
//! insert against a parent being deleted waits, then fails with 23503 if the delete
//! committed; a parent delete against an uncommitted child waits, then fails (NO ACTION,
//! RESTRICT) or acts on it (CASCADE, SET NULL, SET DEFAULT). No orphan is ever committed.
//!
//! Checks run after the row change is in the transaction's overlay (as PostgreSQL's
//! constraint triggers run after the row): a row may reference itself, and a parent
//! update's ON UPDATE CASCADE finds the new parent key. The locks are taken at the row,
//! but as in PostgreSQL (not deferrable: at the statement's end) a child's reference and
//! a parent key taken away are checked when the statement ends
//! (`Session::check_pending_foreign_keys`): a statement may insert children before
//! their parent, or delete a parent before its children (`DELETE FROM tree` of a table
//! referencing itself). NO ACTION also accepts a key given back by the same statement;
//! RESTRICT does not (PostgreSQL's `ri_restrict`).
//! The actions' own row changes go through the same checks, from a work list (not by
//! recursion: a cascade along a long chain of rows needs no deep stack).

use std::collections::HashMap;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

use crate::database::{format_key, DbShared, Session};
use crate::error::{DbError, DbResult};
use crate::schema::{coerce, ForeignKeyDef, Key, ReferentialAction, Row, TableSchema};
use crate::value::Value;

/// A foreign key check left for the statement's end.
#[derive(Debug)]
pub(crate) enum PendingCheck {
    /// A child row's reference: `parent` must have a row with `values` in
    /// `parent_columns`.
    Parent { parent: String, parent_columns: Vec<usize>, values: Key, error: DbError },
    /// A key taken from `parent`: no row of `child` may reference it (unless, for NO
    /// ACTION, `key_may_return`, a row of `parent` has it again).
    Unreferenced {
        key_may_return: bool,
        parent: String,
        parent_columns: Vec<usize>,
        child: String,
        child_columns: Vec<usize>,
        values: Key,
        error: DbError,
    },
}

/// A foreign key as its parent sees it: the referencing table and the constraint.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    pub child: String,
    pub fk: ForeignKeyDef,
}

/// Every foreign key by referenced table, made from the schemas of one generation.
#[derive(Default)]
pub(crate) struct ReferenceGraph {
    generation: u64,
    by_parent: HashMap<String, Vec<Reference>>,
}

impl ReferenceGraph {
    fn of(db: &DbShared, generation: u64) -> ReferenceGraph {
        let mut by_parent: HashMap<String, Vec<Reference>> = HashMap::new();
        db.read_catalog(|st| {
            for schema in st.schemas() {
                for fk in &schema.foreign_keys {
                    by_parent
                        .entry(fk.parent.clone())
                        .or_default()
                        .push(Reference { child: schema.name.clone(), fk: fk.clone() });
                }
            }
        });
        ReferenceGraph { generation, by_parent }
    }
}

/// The lock namespace of `parent`'s key `columns` (see the module's doc): not a table
/// name (a NUL cannot be in one).
fn key_lock(parent: &str, columns: &[String]) -> String {
    format!("{parent}\u{0}references\u{0}{}", columns.join("\u{0}"))
}

/// The positions of `names` in `schema`.
pub(crate) fn column_positions(schema: &TableSchema, names: &[String]) -> DbResult<Vec<usize>> {
    names.iter().map(|n| schema.column_index(n)).collect()
}

/// `Key (a, b)=(1, 2)`, PostgreSQL's DETAIL of a key.
fn key_text(schema: &TableSchema, columns: &[usize], values: &[Value]) -> String {
    let names: Vec<&str> = columns.iter().map(|&c| schema.columns[c].name.as_str()).collect();
    format!("Key ({})=({})", names.join(", "), format_key(values))
}

impl DbShared {
    /// Whether any table has a foreign key: while none has, row changes skip every look
    /// here.
    pub(crate) fn has_foreign_keys(&self) -> bool {
        self.any_foreign_keys.load(SeqCst)
    }

    /// Recomputes `has_foreign_keys` from the committed schemas (after a DDL is applied).
    pub(crate) fn note_foreign_keys(&self) {
        let any = self.read_catalog(|st| st.schemas().any(|s| !s.foreign_keys.is_empty()));
        self.any_foreign_keys.store(any, SeqCst);
        let only_public = self
            .read_catalog(|st| st.namespaces().count() == 1 && st.has_namespace(crate::namespaces::PUBLIC));
        self.has_schemas.store(!only_public, SeqCst);
    }

    /// The foreign keys that reference `parent`, from the current schemas.
    pub(crate) fn references_to(&self, parent: &str) -> Vec<Reference> {
        let generation = self.schema_generation.load(SeqCst);
        let mut graph = self.reference_graph.lock().expect("reference graph poisoned");
        if graph.generation != generation || graph.by_parent.is_empty() {
            *graph = ReferenceGraph::of(self, generation);
        }
        graph.by_parent.get(parent).cloned().unwrap_or_default()
    }
}

/// One row change whose foreign keys are still to check: `old` is the row before (None
/// for an insert), `new` after (None for a delete).
pub(crate) struct RowChange {
    pub table: String,
    pub schema: Arc<TableSchema>,
    pub old: Option<Row>,
    pub new: Option<Row>,
    /// Check every reference of `new`, also those `old` had (ON DELETE SET DEFAULT may
    /// set the key just deleted).
    pub recheck: bool,
}

impl RowChange {
    pub(crate) fn new(
        table: &str,
        schema: Arc<TableSchema>,
        old: Option<Row>,
        new: Option<Row>,
    ) -> RowChange {
        RowChange { table: table.to_string(), schema, old, new, recheck: false }
    }
}

impl Session {
    /// Checks the foreign keys a row change concerns, and does the actions of those it
    /// changes a referenced key of, with the changes those actions make in turn. Runs
    /// after `change` is in the transaction (inside the caller's statement, which an
    /// error undoes whole).
    pub(crate) fn enforce_foreign_keys(&mut self, change: RowChange) -> DbResult<()> {
        let mut work = vec![change];
        while let Some(change) = work.pop() {
            if let Some(new) = &change.new {
                let old = if change.recheck { None } else { change.old.as_deref() };
                self.check_references_of(&change.table, &change.schema, new, old)?;
            }
            if let Some(old) = &change.old {
                self.act_on_referencing_rows(&change, old, &mut work)?;
            }
        }
        Ok(())
    }

    /// The child side: each foreign key of `row` whose values are new (or changed from
    /// `old`) and not NULL must find its parent row.
    fn check_references_of(
        &mut self,
        table: &str,
        schema: &TableSchema,
        row: &[Value],
        old: Option<&[Value]>,
    ) -> DbResult<()> {
        for fk in &schema.foreign_keys {
            let values: Key = fk.columns.iter().map(|&c| row[c].clone()).collect();
            if values.iter().any(Value::is_null) {
                continue;
            }
            if old.is_some_and(|old| fk.columns.iter().all(|&c| old[c] == row[c])) {
                continue;
            }
            let parent = self.schema_of(&fk.parent)?;
            let parent_columns = column_positions(&parent, &fk.parent_columns)?;
            self.lock_key_shared(&key_lock(&fk.parent, &fk.parent_columns), &values)?;
            let detail = format!(
                "{} is not present in table \"{}\"",
                key_text(schema, &fk.columns, &values),
                crate::temp_tables::visible_name(&fk.parent)
            );
            self.pending_foreign_keys.push(PendingCheck::Parent {
                parent: fk.parent.clone(),
                parent_columns,
                values,
                error: DbError::ForeignKeyViolation {
                    table: table.to_string(),
                    constraint: fk.name.clone(),
                    detail,
                },
            });
        }
        Ok(())
    }

    /// The foreign key checks a statement left for its end (see the module's doc): each
    /// parent key a child row references exists, and each NO ACTION key taken away is
    /// back or referenced by nothing. Called as the outermost statement ends well; an
    /// error undoes the statement whole.
    pub(crate) fn check_pending_foreign_keys(&mut self) -> DbResult<()> {
        let pending = std::mem::take(&mut self.pending_foreign_keys);
        for check in pending {
            match check {
                PendingCheck::Parent { parent, parent_columns, values, error } => {
                    let schema = self.schema_of(&parent)?;
                    if self.rows_matching(&parent, &schema, &parent_columns, &values)?.is_empty() {
                        return Err(error);
                    }
                }
                PendingCheck::Unreferenced {
                    key_may_return,
                    parent,
                    parent_columns,
                    child,
                    child_columns,
                    values,
                    error,
                } => {
                    let parent_schema = self.schema_of(&parent)?;
                    if key_may_return
                        && !self.rows_matching(&parent, &parent_schema, &parent_columns, &values)?.is_empty()
                    {
                        continue; // the key is back (keys moved along by one UPDATE)
                    }
                    let child_schema = self.schema_of(&child)?;
                    if !self.rows_matching(&child, &child_schema, &child_columns, &values)?.is_empty() {
                        return Err(error);
                    }
                }
            }
        }
        Ok(())
    }

    /// The parent side: for each foreign key referencing `change.table` whose referenced
    /// key `old` had and no longer has, the constraint's action on the rows referencing
    /// it; their own changes are added to `work`.
    fn act_on_referencing_rows(
        &mut self,
        change: &RowChange,
        old: &[Value],
        work: &mut Vec<RowChange>,
    ) -> DbResult<()> {
        if !self.db.has_foreign_keys() {
            return Ok(());
        }
        let parent = &change.schema;
        for reference in self.db.references_to(&change.table) {
            let fk = &reference.fk;
            let parent_columns = column_positions(parent, &fk.parent_columns)?;
            let values: Key = parent_columns.iter().map(|&c| old[c].clone()).collect();
            if values.iter().any(Value::is_null) {
                continue;
            }
            let new_values: Option<Key> =
                change.new.as_ref().map(|new| parent_columns.iter().map(|&c| new[c].clone()).collect());
            if new_values.as_ref() == Some(&values) {
                continue; // the key stays: nothing references anything else
            }
            self.lock_key_exclusive(&key_lock(&change.table, &fk.parent_columns), &values)?;
            let child = self.schema_of(&reference.child)?;
            let mut referencing = self.rows_matching(&reference.child, &child, &fk.columns, &values)?;
            if reference.child == change.table {
                // A row referencing itself goes with itself.
                let own_key = parent.key_of(old);
                referencing.retain(|r| child.key_of(r) != own_key);
            }
            if referencing.is_empty() {
                continue;
            }
            let action = if new_values.is_some() { fk.on_update } else { fk.on_delete };
            let referenced = || DbError::ForeignKeyReferenced {
                table: change.table.clone(),
                constraint: fk.name.clone(),
                child: reference.child.clone(),
                detail: format!(
                    "{} is still referenced from table \"{}\"",
                    key_text(parent, &parent_columns, &values),
                    crate::temp_tables::visible_name(&reference.child)
                ),
            };
            match action {
                ReferentialAction::NoAction | ReferentialAction::Restrict => {
                    let error = referenced();
                    self.pending_foreign_keys.push(PendingCheck::Unreferenced {
                        key_may_return: action == ReferentialAction::NoAction,
                        parent: change.table.clone(),
                        parent_columns: parent_columns.clone(),
                        child: reference.child.clone(),
                        child_columns: fk.columns.clone(),
                        values,
                        error,
                    });
                }
                ReferentialAction::Cascade if new_values.is_none() => {
                    for row in referencing {
                        let key = child.key_of(&row);
                        if let Some(current) = self.lock_then_read(&reference.child, &key)?.0 {
                            self.log_delete(&reference.child, &key)?;
                            work.push(RowChange::new(&reference.child, child.clone(), Some(current), None));
                        }
                    }
                }
                action => {
                    let replacement: Vec<Value> = match action {
                        ReferentialAction::Cascade => new_values.clone().expect("an update").to_vec(),
                        ReferentialAction::SetNull => vec![Value::Null; fk.columns.len()],
                        _ => self.column_defaults(&child, &fk.columns)?,
                    };
                    for row in referencing {
                        let key = child.key_of(&row);
                        let Some(current) = self.lock_then_read(&reference.child, &key)?.0 else {
                            continue;
                        };
                        let mut new_row = current.to_vec();
                        for (&c, v) in fk.columns.iter().zip(&replacement) {
                            new_row[c] = v.clone();
                        }
                        let stored = self.update_row(&reference.child, &child, &key, Row::from(new_row))?;
                        work.push(RowChange {
                            recheck: action == ReferentialAction::SetDefault,
                            ..RowChange::new(&reference.child, child.clone(), Some(current), Some(stored))
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The values of `columns`' defaults (NULL without one), for ON ... SET DEFAULT.
    fn column_defaults(&self, schema: &TableSchema, columns: &[usize]) -> DbResult<Vec<Value>> {
        columns
            .iter()
            .map(|&c| match schema.defaults.iter().find(|(d, _)| *d == c) {
                None => Ok(Value::Null),
                Some((_, text)) => {
                    let expr = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
                        .try_with_sql(text)
                        .and_then(|mut p| p.parse_expr())
                        .map_err(|e| {
                            DbError::CorruptChange(format!(
                                "the default {text:?} of \"{}\": {e}",
                                schema.name
                            ))
                        })?;
                    let value = crate::sql::expr::Binder::new(None, &[])
                        .in_session(self)
                        .scalar(&expr, "DEFAULT expressions")?
                        .eval(&[], &[])?;
                    coerce(value, schema.columns[c].ty)
                }
            })
            .collect()
    }

    /// The rows of `table` whose `columns` equal `values`, as this transaction sees them:
    /// by the primary key or an index that starts with the columns, else by a scan (as
    /// PostgreSQL's check of a referencing table without an index on its key).
    fn rows_matching(
        &self,
        table: &str,
        schema: &TableSchema,
        columns: &[usize],
        values: &[Value],
    ) -> DbResult<Vec<Row>> {
        if columns == schema.primary_key.as_slice() {
            return Ok(self.get(table, &values.iter().cloned().collect())?.into_iter().collect());
        }
        let matches = |row: &[Value]| columns.iter().zip(values).all(|(&c, v)| row[c] == *v);
        let snap = self.db.snapshot();
        let committed: Vec<Row> = match schema.indexes.iter().position(|i| i.columns.starts_with(columns)) {
            Some(index) => snap.index_rows(table, index, values)?,
            None => snap.table(table)?.rows.values().filter(|r| matches(r)).cloned().collect(),
        };
        let own = self.own_rows(table);
        if own.is_empty() {
            return Ok(committed);
        }
        let own_keys: std::collections::HashSet<&Key> = own.iter().map(|(k, _)| k).collect();
        let mut rows: Vec<Row> =
            committed.into_iter().filter(|r| !own_keys.contains(&schema.key_of(r))).collect();
        rows.extend(own.iter().filter_map(|(_, r)| r.clone()).filter(|r| matches(r)));
        Ok(rows)
    }
}
