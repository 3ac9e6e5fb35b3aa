//! Views (`CREATE [OR REPLACE] VIEW name [(columns)] AS query`, `DROP VIEW`): a relation
//! in the tables' namespace whose schema holds the query's text (`TableSchema::view`)
//! and the columns it gives, logged and recovered as a table's schema is. A FROM clause
//! that names a view plans its query there, as a subquery in FROM (`relation_named`),
//! so the view always reads the tables as they are now. Views are read-only: an INSERT,
//! UPDATE or DELETE on one gets 55000, as PostgreSQL's for a view it cannot update.
//!
//! Not tracked (unlike PostgreSQL): which tables a view reads. A table dropped under a
//! view makes the view's queries fail (42P01) rather than the DROP; a view is checked
//! when it is created and on every use.
//!
//! (The `v$` views of the database's state are another thing: `crate::views`.)

use std::cell::Cell;

use sqlparser::ast;

use crate::change::Change;
use crate::database::{index_named, Session};
use crate::error::{DbError, DbResult};
use crate::schema::{Column, TableSchema};
use crate::sql::expr::{ident_name, object_name};
use crate::sql::QueryResult;
use crate::value::DataType;

/// How deep views are being expanded on this thread (a view of a view ...): a cycle
/// made by `CREATE OR REPLACE` stops here instead of overflowing the stack.
const MAX_DEPTH: u32 = 32;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Parses a view's stored query text.
fn parse_query(name: &str, text: &str) -> DbResult<ast::Query> {
    sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_query())
        .map(|q| *q)
        .map_err(|e| DbError::CorruptChange(format!("the query of view \"{name}\": {e}")))
}

impl Session {
    /// The plan of view `schema`'s query, as a FROM clause that names it runs it.
    pub(crate) fn plan_view(&self, schema: &TableSchema) -> DbResult<crate::sql::query::QueryPlan> {
        let text = schema.view.as_deref().expect("a view");
        let query = parse_query(&schema.name, text)?;
        let depth = DEPTH.with(|d| d.get());
        if depth >= MAX_DEPTH {
            return Err(DbError::InvalidObjectDefinition(format!(
                "infinite recursion detected in the definition of view \"{}\"",
                schema.name
            )));
        }
        DEPTH.with(|d| d.set(depth + 1));
        // Places found in the view's text are no places in the statement's.
        let plan = self.plan_query_in(&query, &[], &[]).map_err(DbError::unplaced);
        DEPTH.with(|d| d.set(depth));
        plan
    }

    pub(crate) fn create_view_statement(&mut self, create: &ast::CreateView) -> DbResult<QueryResult> {
        if create.materialized || create.temporary || create.or_alter || create.secure {
            return Err(DbError::Unsupported("MATERIALIZED, TEMPORARY or SECURE views".into()));
        }
        if !matches!(create.options, ast::CreateTableOptions::None) || !create.cluster_by.is_empty() {
            return Err(DbError::Unsupported(format!("the view options of {}", create.name)));
        }
        let name = object_name(&create.name)?;
        if crate::views::is_view(&name) {
            return Err(DbError::TableExists(name));
        }
        let existing = self.schema_of(&name).ok();
        match &existing {
            Some(s) if s.view.is_none() => {
                if create.if_not_exists {
                    return Ok(self.skipped(&name));
                }
                return Err(DbError::TableExists(name));
            }
            Some(_) if create.if_not_exists => return Ok(self.skipped(&name)),
            Some(_) if !create.or_replace => return Err(DbError::TableExists(name)),
            _ => {}
        }
        // Planned now: names and types checked, the columns known.
        let plan = self.plan_query_in(&create.query, &[], &[])?;
        let mut columns: Vec<Column> = plan
            .columns()
            .iter()
            .map(|c| Column {
                name: c.name.clone(),
                ty: c.ty.unwrap_or(DataType::Text { max_chars: None }),
                nullable: true,
            })
            .collect();
        if create.columns.len() > columns.len() {
            return Err(DbError::Syntax {
                message: "CREATE VIEW specifies more column names than columns".into(),
                position: 0,
            });
        }
        for (column, named) in columns.iter_mut().zip(&create.columns) {
            column.name = ident_name(&named.name);
        }
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(DbError::DuplicateColumn(c.name.clone(), name.clone()));
            }
        }
        // With a column list, the view's query is stored with the names given.
        let mut query = create.query.as_ref().clone();
        if !create.columns.is_empty() {
            let names: Vec<String> = columns.iter().map(|c| quote(&c.name)).collect();
            query = parse_query(&name, &format!("SELECT * FROM ({query}) AS v ({})", names.join(", ")))?;
        }
        if let Some(old) = &existing {
            // PostgreSQL's rule: a replacement keeps the view's columns (it may add some
            // after them), so what reads the view still finds them.
            let old_columns = old.visible_columns();
            if columns.len() < old_columns.len() {
                return Err(DbError::InvalidTableDefinition("cannot drop columns from view".into()));
            }
            for (new, old) in columns.iter().zip(old_columns) {
                if new.name != old.name || new.ty != old.ty {
                    return Err(DbError::InvalidTableDefinition(format!(
                        "cannot change view column \"{}\" (to \"{}\" of type {})",
                        old.name,
                        new.name,
                        new.ty.name().to_lowercase()
                    )));
                }
            }
        }
        // A view's schema is logged with its columns' types, and no record is stored.
        if let Some(c) = columns.iter().find(|c| matches!(c.ty, DataType::Record(_))) {
            return Err(DbError::Unsupported(format!("the view column \"{}\" of type record", c.name)));
        }
        let mut schema = TableSchema::new(&name, columns, Vec::new())?;
        schema.view = Some(query.to_string());
        let replacing = existing.is_some();
        self.ddl_tables(&[&name], |st| {
            if st.has_table(&name) != replacing || index_named(st, &name).is_some() {
                return Err(DbError::TableExists(name.clone()));
            }
            let mut changes = Vec::new();
            if replacing {
                if st.table(&name)?.schema.view.is_none() {
                    return Err(DbError::TableExists(name.clone()));
                }
                changes.push(Change::DropTable { table: name.clone() });
            }
            changes.push(Change::CreateTable(schema.clone()));
            Ok(changes)
        })?;
        Ok(QueryResult::command("CREATE VIEW", 0))
    }

    fn skipped(&mut self, name: &str) -> QueryResult {
        self.notices.push(crate::error::Notice::with_state(
            "42P07",
            format!("relation \"{name}\" already exists, skipping"),
        ));
        QueryResult::command("CREATE VIEW", 0)
    }

    pub(crate) fn drop_view_statement(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
    ) -> DbResult<QueryResult> {
        let names = names.iter().map(object_name).collect::<DbResult<Vec<_>>>()?;
        for name in &names {
            match self.schema_of(name) {
                Ok(s) if s.view.is_some() => {}
                Ok(_) => return Err(DbError::WrongObjectType(format!("\"{name}\" is not a view"))),
                Err(DbError::UnknownTable(_)) if if_exists => {}
                Err(e) => return Err(e),
            }
        }
        for name in &names {
            if self.schema_of(name).is_err() {
                self.notices
                    .push(crate::error::Notice::plain(format!("view \"{name}\" does not exist, skipping")));
                continue;
            }
            let name = name.clone();
            self.ddl_tables(&[&name], |st| {
                st.table(&name)?;
                Ok(vec![Change::DropTable { table: name.clone() }])
            })?;
        }
        Ok(QueryResult::command("DROP VIEW", 0))
    }
}

/// A name as SQL text: quoted unless it is a plain lowercase identifier.
fn quote(name: &str) -> String {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Refuses a change of a view's rows (it has none).
pub(crate) fn refuse_view(schema: &TableSchema, verb: &str) -> DbResult<()> {
    match schema.view {
        Some(_) => Err(DbError::ObjectNotInPrerequisiteState(format!(
            "cannot {verb} view \"{}\": views are read-only (change the tables it reads)",
            schema.name
        ))),
        None => Ok(()),
    }
}
