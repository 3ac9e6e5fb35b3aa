//! Temporary tables (`CREATE TEMP TABLE`), as PostgreSQL 15 has them: seen only by the
//! session that made them, before a permanent table of the same name (PostgreSQL's
//! `pg_temp` is first in the search path), gone when the session ends.
//!
//! Where they live: in the committed state beside the permanent tables, under a stored
//! name no permanent table can have, `pg_temp_<sid>.<name>` (`stored_name`), so that
//! every part of the executor (scans, keys, indexes, the overlay of a transaction's own
//! rows, row locks, constraints) works on them unchanged. Only the session's name
//! resolution (`Session::relation_name`) turns a written `t` or `pg_temp.t` into that
//! name; the catalog shows it as `t` in schema `pg_temp_<sid>`.
//!
//! Why no redo: as PostgreSQL does not WAL-log them, nothing of a temporary table can
//! matter after a restart (its session is gone), so its changes are never logged
//! (`Session::log`, `ddl_call`), never in a checkpoint image (`checkpoint`), and a
//! transaction that changed only temporary tables commits without the log at all
//! (`DbShared::apply_unlogged`): no redo bytes, no `log file sync`. Its changes still go
//! through the transaction's overlay and change list, so ROLLBACK, savepoints and
//! statement-level atomicity hold for them as for any table.
//!
//! Must never: give a temporary relation's name to the redo log, or let a session see
//! another's (their stored names differ by sid, and sids are never reused).

use std::collections::BTreeMap;

use sqlparser::ast;

use crate::change::Change;
use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::state::ShardSet;

/// The start of every temporary relation's stored name.
const PREFIX: &str = "pg_temp_";

/// The schema of session `sid`'s temporary relations, as the catalog names it.
pub(crate) fn namespace(sid: u64) -> String {
    format!("{PREFIX}{sid}")
}

/// The name in the state of session `sid`'s temporary relation `name`.
pub(crate) fn stored_name(sid: u64, name: &str) -> String {
    format!("{PREFIX}{sid}.{name}")
}

/// The session and the written name of a temporary relation's stored name; None for a
/// permanent relation's.
pub fn split(stored: &str) -> Option<(u64, &str)> {
    let rest = stored.strip_prefix(PREFIX)?;
    let (digits, name) = rest.split_once('.')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, name))
}

/// Whether `stored` names a temporary relation (or an index of one).
#[inline]
pub fn is_temporary(stored: &str) -> bool {
    // The first byte rules out nearly every permanent name without the full parse.
    stored.as_bytes().first() == Some(&b'p') && split(stored).is_some()
}

/// A stored name as an error about a name as written shows it: a temporary relation's
/// without its session's schema, another schema's qualified (`relation "app.t" does not
/// exist`, as PostgreSQL says of a qualified name).
pub fn written_name(stored: &str) -> &str {
    split(stored).map_or(stored, |(_, name)| name)
}

/// The name a user wrote for a stored name, without its schema (a temporary relation's
/// `pg_temp_<sid>`, another schema's, see `namespaces`).
pub fn visible_name(stored: &str) -> &str {
    crate::namespaces::split(stored).1
}

/// What a temporary table's transactions do to it at their end (`ON COMMIT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnCommit {
    /// Emptied at each commit.
    DeleteRows,
    /// Dropped at the end of the transaction (its creating transaction, in PostgreSQL).
    Drop,
}

/// Refuses a permanent relation's name of the form of a temporary one's stored name: its
/// changes would not be logged.
pub(crate) fn check_permanent_name(name: &str) -> DbResult<()> {
    if is_temporary(name) {
        return Err(DbError::FeatureNotSupported(format!(
            "the relation name \"{name}\": it has the form of a temporary relation's stored name"
        )));
    }
    Ok(())
}

/// A temporary table being made: its ON COMMIT action (None: PRESERVE ROWS).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewTemporary {
    pub(crate) on_commit: Option<OnCommit>,
}

/// PostgreSQL's 42P16 for a foreign key between a temporary and a permanent table.
pub(crate) fn check_reference(child_is_temporary: bool, parent: &str) -> DbResult<()> {
    match (child_is_temporary, is_temporary(parent)) {
        (true, false) => Err(DbError::InvalidTableDefinition(
            "constraints on temporary tables may reference only temporary tables".into(),
        )),
        (false, true) => Err(DbError::InvalidTableDefinition(
            "constraints on permanent tables may reference only permanent tables".into(),
        )),
        _ => Ok(()),
    }
}

/// A session's temporary relations: whether it has made any (only then does a name
/// look among them), and the ON COMMIT actions other than PRESERVE ROWS.
#[derive(Default)]
pub(crate) struct TempTables {
    pub(crate) made_any: bool,
    pub(crate) on_commit: BTreeMap<String, OnCommit>,
}

impl TempTables {
    pub(crate) fn has_on_commit(&self) -> bool {
        !self.on_commit.is_empty()
    }
}

impl Session {
    /// The schema of this session's temporary relations (`pg_temp_<sid>`).
    pub(crate) fn temp_namespace(&self) -> String {
        namespace(self.entry.sid)
    }

    /// The stored name of this session's temporary relation `name`.
    pub(crate) fn temp_name(&self, name: &str) -> String {
        stored_name(self.entry.sid, name)
    }

    /// Whether `name` is qualified by this session's temporary schema (`pg_temp.t`,
    /// `pg_temp_<sid>.t`); another session's fails with PostgreSQL's 0A000.
    pub(crate) fn qualified_temporary(&self, name: &ast::ObjectName) -> DbResult<bool> {
        let [schema, _] = name.0.as_slice() else { return Ok(false) };
        let Some(schema) = schema.as_ident().map(crate::sql::expr::ident_name) else { return Ok(false) };
        if schema == "pg_temp" || schema == self.temp_namespace() {
            return Ok(true);
        }
        if split(&format!("{schema}.x")).is_some() {
            return Err(DbError::FeatureNotSupported(
                "cannot access temporary tables of other sessions".into(),
            ));
        }
        Ok(false)
    }

    /// The stored name of a qualified `name` (`written` its folded relation name):
    /// `pg_temp.t` this session's temporary one, `app.t` schema app's; None unqualified.
    fn qualified_stored_name(&self, name: &ast::ObjectName, written: &str) -> DbResult<Option<String>> {
        if self.qualified_temporary(name)? {
            return Ok(Some(self.temp_name(written)));
        }
        if let [schema, _] = name.0.as_slice() {
            let schema = schema.as_ident().map(crate::sql::expr::ident_name).unwrap_or_default();
            return Ok(Some(crate::namespaces::stored_name(&schema, written)));
        }
        Ok(None)
    }

    /// The stored name of the relation `name` means in this session: its temporary
    /// relation of that name if it has one (pg_temp is first in the search path), else
    /// the permanent one the search path finds (`namespaces`). `pg_temp.t` is only the
    /// temporary one, `app.t` only schema app's.
    pub(crate) fn relation_name(&self, name: &ast::ObjectName) -> DbResult<String> {
        let written = crate::sql::expr::object_name(name)?;
        if let Some(stored) = self.qualified_stored_name(name, &written)? {
            return Ok(stored);
        }
        Ok(self.resolve_relation(written))
    }

    /// As `relation_name`, for an unqualified name already folded.
    pub(crate) fn resolve_relation(&self, written: String) -> String {
        if self.temp.made_any {
            let stored = self.temp_name(&written);
            if self.db.read_catalog(|st| st.has_table(&stored)) {
                return stored;
            }
        }
        self.resolve_in_path(&written, |stored| self.db.read_catalog(|st| st.has_table(stored)))
    }

    /// The stored name of the index `name` means in this session: its temporary
    /// table's index of that name if it has one, else the one the search path finds.
    pub(crate) fn index_name(&self, name: &ast::ObjectName) -> DbResult<String> {
        let written = crate::sql::expr::object_name(name)?;
        if let Some(stored) = self.qualified_stored_name(name, &written)? {
            return Ok(stored);
        }
        let index_exists = |stored: &str| {
            self.db.read_catalog(|st| st.schemas().any(|s| s.indexes.iter().any(|i| i.name == stored)))
        };
        if self.temp.made_any {
            let stored = self.temp_name(&written);
            if index_exists(&stored) {
                return Ok(stored);
            }
        }
        Ok(self.resolve_in_path(&written, index_exists))
    }

    /// The stored name of the table an unqualified, folded `name` means in this session
    /// (its temporary table of that name first), for a client's COPY.
    pub fn resolve_table_name(&self, name: &str) -> String {
        self.resolve_relation(name.to_string())
    }

    /// The stored name of the table a client's COPY names `schema.name`.
    pub fn qualified_table_name(&self, schema: &str, name: &str) -> String {
        if schema == "pg_temp" {
            return self.temp_name(name);
        }
        crate::namespaces::stored_name(schema, name)
    }

    /// Whether a plan compiled against the permanent table `table` is now wrong for this
    /// session because another relation of that name comes first (a temporary table
    /// hides it, the search path changed).
    pub(crate) fn hidden_by_temporary(&self, table: &str) -> bool {
        self.resolves_elsewhere(table)
    }

    /// This session's temporary relations now, by stored name (views first: they read
    /// the tables).
    fn own_temporary_relations(&self) -> Vec<String> {
        let sid = self.entry.sid;
        let mut relations: Vec<(bool, String)> = self.db.read_catalog(|st| {
            st.schemas()
                .filter(|s| split(&s.name).is_some_and(|(of, _)| of == sid))
                .map(|s| (s.view.is_none(), s.name.clone()))
                .collect()
        });
        relations.sort();
        relations.into_iter().map(|(_, name)| name).collect()
    }

    /// Applies `changes` to this session's temporary relations at once, outside any
    /// transaction: nobody else sees them, and nothing of them is logged.
    fn apply_to_temporary(&self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        debug_assert!(
            changes.iter().all(|c| is_temporary(c.table())),
            "only temporary relations: {changes:?}"
        );
        // Not a panic: this runs as a session is dropped, and what a failure leaves is
        // unreachable (no later session has its sid) and gone at the next restart.
        if let Err(e) = self.db.apply_unlogged(&changes, ShardSet::ALL) {
            log::warn!("session {}: its temporary relations not removed: {e}", self.entry.sid);
        }
    }

    /// Whether a temporary table of the session has an ON COMMIT action (DELETE ROWS,
    /// DROP): a client's implicit transaction then ends with a commit even if it changed
    /// nothing (`CREATE TEMP TABLE t ... ON COMMIT DROP` alone drops t at once, as in
    /// PostgreSQL).
    pub fn has_on_commit_actions(&self) -> bool {
        self.temp.has_on_commit()
    }

    /// The ON COMMIT actions at the end of a committed transaction: DELETE ROWS empties
    /// its tables, DROP drops its.
    pub(crate) fn temp_tables_at_commit(&mut self) {
        self.temp_tables_at_end(true);
    }

    /// At a rollback: the ON COMMIT DROP tables go (in PostgreSQL they never outlive the
    /// transaction that made them); the others' rows were rolled back already.
    pub(crate) fn temp_tables_at_rollback(&mut self) {
        self.temp_tables_at_end(false);
    }

    fn temp_tables_at_end(&mut self, committed: bool) {
        let existing = self.own_temporary_relations();
        self.temp.on_commit.retain(|name, _| existing.contains(name));
        let mut changes = Vec::new();
        let mut dropped = Vec::new();
        for (name, action) in &self.temp.on_commit {
            match action {
                OnCommit::DeleteRows if committed => changes.push(Change::Truncate { table: name.clone() }),
                OnCommit::DeleteRows => {}
                OnCommit::Drop => {
                    // A temporary view over it goes with it, as the session's end takes
                    // both.
                    for view in self.views_depending(crate::sql::stored_views::Dropped::Relation(name)) {
                        if !dropped.contains(&view) {
                            changes.push(Change::DropTable { table: view.clone() });
                            dropped.push(view);
                        }
                    }
                    changes.push(Change::DropTable { table: name.clone() });
                    dropped.push(name.clone());
                }
            }
        }
        self.temp.on_commit.retain(|name, _| !dropped.contains(name));
        self.apply_to_temporary(changes);
    }

    /// `DISCARD TEMP` (and DISCARD ALL): every temporary relation of the session goes.
    /// Refused while the open transaction has changes (they could be to one of them).
    pub fn discard_temporary_tables(&mut self) -> DbResult<()> {
        if self.has_changes() {
            return Err(DbError::FeatureNotSupported(
                "DISCARD TEMP in a transaction that has changed rows".into(),
            ));
        }
        if self.temp.made_any {
            self.drop_temp_tables();
        }
        Ok(())
    }

    /// At the session's end: every temporary relation of the session goes.
    pub(crate) fn drop_temp_tables(&mut self) {
        let relations = self.own_temporary_relations();
        let changes = relations.iter().map(|name| Change::DropTable { table: name.clone() }).collect();
        self.apply_to_temporary(changes);
        self.temp.on_commit.clear();
        let mut rowids = self.db.rowids.lock().expect("row ids poisoned");
        rowids.retain(|table, _| !relations.contains(table));
    }
}

impl Session {
    /// Whether CREATE TABLE `create` makes a temporary table (TEMP, TEMPORARY, or a name
    /// in `pg_temp`) and with what ON COMMIT action, and the name to store it under.
    pub(crate) fn table_to_create(
        &mut self,
        create: &ast::CreateTable,
    ) -> DbResult<(Option<NewTemporary>, String)> {
        let written = crate::sql::expr::object_name(&create.name)?;
        let in_temp_schema = self.qualified_temporary(&create.name)?;
        if create.temporary && create.name.0.len() == 2 && !in_temp_schema {
            return Err(DbError::InvalidTableDefinition(
                "cannot create temporary relation in non-temporary schema".into(),
            ));
        }
        let temporary = create.temporary || in_temp_schema;
        if !temporary {
            if create.on_commit.is_some() {
                return Err(DbError::InvalidTableDefinition(
                    "ON COMMIT can only be used on temporary tables".into(),
                ));
            }
            check_permanent_name(&written)?;
            return Ok((None, self.creation_name(&create.name)?));
        }
        let on_commit = match create.on_commit {
            None | Some(ast::OnCommit::PreserveRows) => None,
            Some(ast::OnCommit::DeleteRows) => Some(OnCommit::DeleteRows),
            Some(ast::OnCommit::Drop) => Some(OnCommit::Drop),
        };
        // From here on a row change looks at whether its table is temporary (`log`).
        self.temp.made_any = true;
        Ok((Some(NewTemporary { on_commit }), self.temp_name(&written)))
    }

    /// Gives a new temporary table's indexes stored names of the session's own: index
    /// names share one namespace with the tables, and another session's temporary
    /// table, or a permanent one, may have an index of the same name.
    pub(crate) fn temporary_index_names(&self, schema: &mut crate::schema::TableSchema) {
        for index in &mut schema.indexes {
            if !is_temporary(&index.name) {
                index.name = self.temp_name(&index.name);
            }
        }
        if let Some(name) = &mut schema.primary_key_constraint {
            if !is_temporary(name) {
                *name = self.temp_name(name);
            }
        }
    }

    /// Notes a table made by CREATE TABLE: a temporary one's ON COMMIT action.
    pub(crate) fn temporary_table_made(&mut self, name: &str, temporary: Option<NewTemporary>) {
        if let Some(NewTemporary { on_commit: Some(action) }) = temporary {
            self.temp.on_commit.insert(name.to_string(), action);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_name_splits_into_its_session_and_written_name() {
        assert_eq!(split(&stored_name(7, "t")), Some((7, "t")));
        assert_eq!(split("pg_temp_7.a.b"), Some((7, "a.b")));
        assert_eq!(visible_name("pg_temp_12.t_pkey"), "t_pkey");
        assert_eq!(written_name("pg_temp_12.t_pkey"), "t_pkey");
        for permanent in ["t", "pg_temp_", "pg_temp_.t", "pg_temp_x.t", "pg_temp_7", "pg_class"] {
            assert_eq!(split(permanent), None, "{permanent}");
            assert!(!is_temporary(permanent), "{permanent}");
            // An error names a permanent relation as its stored name says it.
            assert_eq!(written_name(permanent), permanent);
        }
        // The name as written, without any schema (`namespaces`): a schema's relation's too.
        assert_eq!(visible_name("app.t"), "t");
        assert_eq!(visible_name("t"), "t");
    }
}
