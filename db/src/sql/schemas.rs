//! CREATE SCHEMA and DROP SCHEMA, as PostgreSQL 15 has them (see `namespaces` for where
//! a schema's relations live and how names resolve).
//!
//! A schema is created and dropped by a DDL transaction of its own, logged as
//! `Change::CreateSchema` / `Change::DropSchema`. DROP SCHEMA ... CASCADE drops the
//! schema's views, tables and sequences first, each as DROP ... CASCADE does (views and
//! foreign keys of other schemas that depend on them go too), then the schema.

use sqlparser::ast;

use crate::catalog::quote_ident;
use crate::change::Change;
use crate::database::Session;
use crate::error::{DbError, DbResult, Notice};
use crate::namespaces::{self, Namespace};
use crate::sql::exec::QueryResult;
use crate::sql::expr::ident_name;

/// What a relation of a schema is, as PostgreSQL's messages name it.
fn kind_of(schema: &crate::schema::TableSchema) -> &'static str {
    if schema.view.is_some() {
        "view"
    } else if schema.sequence.is_some() {
        "sequence"
    } else {
        "table"
    }
}

/// One name of a schema statement: a single identifier.
fn schema_name(name: &ast::ObjectName) -> DbResult<String> {
    match name.0.as_slice() {
        [part] => part
            .as_ident()
            .map(ident_name)
            .ok_or_else(|| DbError::Unsupported(format!("the schema name {name}"))),
        _ => Err(DbError::Syntax {
            message: format!("improper qualified name (too many dotted names): {name}"),
            position: 0,
        }),
    }
}

impl Session {
    /// `CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role]` and `CREATE SCHEMA
    /// AUTHORIZATION role` (the schema named as the role).
    pub(crate) fn create_schema_statement(
        &mut self,
        name: &ast::SchemaName,
        if_not_exists: bool,
    ) -> DbResult<QueryResult> {
        let user = self.entry.client().username;
        let (name, owner) = match name {
            ast::SchemaName::Simple(name) => (schema_name(name)?, user),
            ast::SchemaName::UnnamedAuthorization(role) => (ident_name(role), ident_name(role)),
            ast::SchemaName::NamedAuthorization(name, role) => (schema_name(name)?, ident_name(role)),
        };
        let exists = self.db.read_catalog(|st| st.has_namespace(&name));
        if exists && if_not_exists {
            self.notices
                .push(Notice::with_state("42P06", format!("schema \"{name}\" already exists, skipping")));
            return Ok(QueryResult::command("CREATE SCHEMA", 0));
        }
        if exists || namespaces::is_system(&name) {
            return Err(DbError::DuplicateSchema(name));
        }
        namespaces::check_new_schema(&name)?;
        let lock = schema_lock(&name);
        self.ddl_tables(&[&lock], |st| {
            if st.has_namespace(&name) {
                return Err(DbError::DuplicateSchema(name.clone()));
            }
            Ok(vec![Change::CreateSchema(Namespace { name: name.clone(), owner: owner.clone() })])
        })?;
        Ok(QueryResult::command("CREATE SCHEMA", 0))
    }

    /// `DROP SCHEMA [IF EXISTS] a, b [CASCADE | RESTRICT]`.
    pub(crate) fn drop_schema_statement(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> DbResult<QueryResult> {
        let names = names.iter().map(schema_name).collect::<DbResult<Vec<_>>>()?;
        // All or nothing for the usual mistakes: every name checked first.
        let mut dropping = Vec::new();
        for name in &names {
            if namespaces::is_system(name) {
                return Err(DbError::DependentObjects {
                    message: format!(
                        "cannot drop schema {name} because it is required by the database system"
                    ),
                    detail: String::new(),
                    hint: None,
                });
            }
            if self.db.read_catalog(|st| st.has_namespace(name)) {
                if !dropping.contains(name) {
                    dropping.push(name.clone());
                }
            } else if if_exists {
                self.notices.push(Notice::plain(format!("schema \"{name}\" does not exist, skipping")));
            } else {
                return Err(DbError::UndefinedSchema(name.clone()));
            }
        }
        let mut contents: Vec<(String, &'static str)> = Vec::new();
        for name in &dropping {
            contents.extend(self.schema_contents(name));
        }
        let relations: Vec<String> = contents.iter().map(|(r, _)| r.clone()).collect();
        // Every object that goes, in PostgreSQL's order: each relation of the schemas,
        // then what depends on it from elsewhere (other schemas' foreign keys referencing
        // it, views reading it). (What it is, what it depends on.)
        let mut dependents: Vec<(String, String)> = Vec::new();
        for (relation, kind) in &contents {
            let schema = quote_ident(namespaces::split(relation).0);
            dependents.push((format!("{kind} {}", shown(relation)), format!("schema {schema}")));
            let on = format!("{kind} {}", shown(relation));
            let outside = |name: &String| !relations.contains(name);
            let children = self.db.read_catalog(|st| {
                crate::sql::references::children_of_shard(st, relation)
                    .into_iter()
                    .filter(outside)
                    .filter_map(|child| {
                        let fk = st
                            .table(&child)
                            .ok()?
                            .schema
                            .foreign_keys
                            .iter()
                            .find(|f| f.parent == *relation)?;
                        Some(format!("constraint {} on table {}", fk.name, shown(&child)))
                    })
                    .collect::<Vec<_>>()
            });
            dependents.extend(children.into_iter().map(|what| (what, on.clone())));
            for view in self.views_depending(crate::sql::stored_views::Dropped::Relation(relation)) {
                if outside(&view) {
                    dependents.push((format!("view {}", shown(&view)), on.clone()));
                }
            }
        }
        if !cascade {
            if let Some(name) =
                dropping.iter().find(|n| contents.iter().any(|(r, _)| namespaces::split(r).0 == *n))
            {
                let lines: Vec<String> =
                    dependents.iter().map(|(what, on)| format!("{what} depends on {on}")).collect();
                return Err(DbError::DependentObjects {
                    message: format!(
                        "cannot drop schema {} because other objects depend on it",
                        quote_ident(name)
                    ),
                    detail: lines.join("\n"),
                    hint: Some(crate::sql::stored_views::CASCADE_HINT.into()),
                });
            }
        }
        let lines: Vec<String> =
            dependents.iter().map(|(what, _)| format!("drop cascades to {what}")).collect();
        // The contents go first, each as its own DROP ... CASCADE would: views, tables
        // (with their SERIAL sequences), then the other sequences. Their notices are
        // replaced by the one PostgreSQL gives for the schema.
        let notices_before = self.notices.len();
        for kind in ["view", "table", "sequence"] {
            for (relation, _) in contents.iter().filter(|(_, k)| *k == kind) {
                if !self.db.read_catalog(|st| st.has_table(relation)) {
                    continue; // gone with one dropped before it
                }
                self.drop_table_checked(relation, &relations, true)?;
                if kind == "table" {
                    for sequence in self.sequences_owned_by(relation) {
                        self.drop_table(&sequence)?;
                    }
                }
            }
        }
        self.notices.truncate(notices_before);
        match lines.as_slice() {
            [] => {}
            [one] => self.notices.push(Notice::plain(one.clone())),
            many => self.notices.push(Notice::with_detail(
                format!("drop cascades to {} other objects", many.len()),
                many.join("\n"),
            )),
        }
        for name in &dropping {
            let lock = schema_lock(name);
            self.ddl_tables(&[&lock], |st| {
                if let Some(left) = st.schemas().find(|s| namespaces::split(&s.name).0 == name) {
                    // Created meanwhile by another session.
                    return Err(DbError::DependentObjects {
                        message: format!(
                            "cannot drop schema {} because other objects depend on it",
                            quote_ident(name)
                        ),
                        detail: format!(
                            "{} {} depends on schema {}",
                            kind_of(left),
                            shown(&left.name),
                            quote_ident(name)
                        ),
                        hint: Some(crate::sql::stored_views::CASCADE_HINT.into()),
                    });
                }
                if !st.has_namespace(name) {
                    return Err(DbError::UndefinedSchema(name.clone()));
                }
                Ok(vec![Change::DropSchema { name: name.clone() }])
            })?;
        }
        Ok(QueryResult::command("DROP SCHEMA", 0))
    }

    /// `ALTER {TABLE|SEQUENCE|VIEW} [IF EXISTS] name SET SCHEMA new_schema`: the relation
    /// renamed into the other schema (`rename_table`: foreign keys and views follow).
    /// Its indexes and its SERIAL columns' sequences keep their stored names (they show
    /// in the table's schema all the same).
    pub(crate) fn set_schema_statement(
        &mut self,
        kind: &'static str,
        if_exists: bool,
        schema: Option<&str>,
        name: &str,
        new_schema: &str,
    ) -> DbResult<QueryResult> {
        let tag = match kind {
            "SEQUENCE" => "ALTER SEQUENCE",
            "VIEW" => "ALTER VIEW",
            _ => "ALTER TABLE",
        };
        let stored = match schema {
            Some(schema) => self.qualified_table_name(schema, name),
            None => self.resolve_relation(name.to_string()),
        };
        if !self.db.read_catalog(|st| st.has_table(&stored)) {
            if if_exists {
                self.notices.push(Notice::plain(format!("relation \"{name}\" does not exist, skipping")));
                return Ok(QueryResult::command(tag, 0));
            }
            return Err(DbError::UnknownTable(stored));
        }
        if crate::temp_tables::is_temporary(&stored)
            || new_schema == "pg_temp"
            || new_schema.starts_with("pg_temp_")
        {
            return Err(DbError::FeatureNotSupported(
                "cannot move objects into or out of temporary schemas".into(),
            ));
        }
        if namespaces::is_system(new_schema) {
            return Err(DbError::FeatureNotSupported(format!("moving a relation into schema {new_schema}")));
        }
        if !self.db.read_catalog(|st| st.has_namespace(new_schema)) {
            return Err(DbError::UndefinedSchema(new_schema.to_string()));
        }
        let (_, written) = namespaces::split(&stored);
        let target = namespaces::stored_name(new_schema, written);
        if target == stored {
            return Ok(QueryResult::command(tag, 0));
        }
        if new_schema == namespaces::PUBLIC {
            namespaces::check_relation_name(written)?;
        }
        if self.db.read_catalog(|st| st.has_table(&target)) {
            return Err(DbError::DuplicateRelationInSchema {
                name: written.to_string(),
                schema: new_schema.to_string(),
            });
        }
        self.rename_table(&stored, &target)?;
        Ok(QueryResult::command(tag, 0))
    }

    /// The relations of schema `name` that depend on it directly (its tables, views and
    /// sequences, not those a SERIAL column owns: they go with their table), by name.
    fn schema_contents(&self, name: &str) -> Vec<(String, &'static str)> {
        self.db.read_catalog(|st| {
            st.schemas()
                .filter(|s| namespaces::split(&s.name).0 == name)
                .filter(|s| s.sequence.as_ref().is_none_or(|def| def.owned_by.is_none()))
                .map(|s| (s.name.clone(), kind_of(s)))
                .collect()
        })
    }
}

/// A stored relation name as PostgreSQL's messages show it: `app.t`, or `t` in public.
fn shown(stored: &str) -> String {
    crate::catalog::qualified_name(stored)
}

/// The name of the lock a schema's DDL takes: no relation can have it (a space and a
/// prefix no table name is given by a statement that also makes it a schema's).
fn schema_lock(name: &str) -> String {
    format!("schema {name}")
}
