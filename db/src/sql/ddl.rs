//! Table definitions: the column definitions and storage parameters of `CREATE TABLE`
//! and `ALTER TABLE ADD COLUMN`, and `ALTER TABLE`.
//!
//! `ALTER TABLE`: each action a DDL transaction of its own (Oracle's implicit commit,
//! as every DDL here), checked under the table's lock against the rows as they are.
//!
//! Actions that keep the rows as they are (names, defaults, NOT NULL, indexes) log the
//! new schema (`Change::AlterTable`); actions that change the rows' shape or key (ADD
//! PRIMARY KEY on a table keyed by its hidden row id, ADD and DROP COLUMN, ALTER COLUMN
//! TYPE) log how each new row is made from the old one (`Change::RewriteTable`), which
//! the commit and recovery apply alike; RENAME TO logs the two names.

use std::collections::BTreeSet;

use sqlparser::ast;

use crate::change::{Change, ColumnSource};
use crate::database::{format_key, index_named, Session};
use crate::error::{DbError, DbResult, Notice, Severity};
use crate::schema::{coerce, Column, IndexDef, TableSchema};
use crate::sql::expr::{ident_name, object_name, sql_type, Binder, Expr};
use crate::sql::QueryResult;
use crate::value::Value;

/// A column as `CREATE TABLE` or `ALTER TABLE ADD COLUMN` declares it.
pub(crate) struct ColumnSpec {
    pub column: Column,
    pub primary_key: bool,
    /// UNIQUE, with the constraint's name if it has one.
    pub unique: Option<Option<String>>,
    /// DEFAULT: the expression's text, and the expression compiled (checked).
    pub default: Option<(String, Expr)>,
}

impl Session {
    /// Reads a column definition: its type, NULL / NOT NULL, PRIMARY KEY, UNIQUE and
    /// DEFAULT (checked now: names, functions, a constant against the column's type).
    pub(crate) fn column_spec(&self, def: &ast::ColumnDef) -> DbResult<ColumnSpec> {
        let name = ident_name(&def.name);
        let ty = sql_type(&def.data_type)?;
        let mut spec = ColumnSpec {
            column: Column { name: name.clone(), ty, nullable: true },
            primary_key: false,
            unique: None,
            default: None,
        };
        for option in &def.options {
            match &option.option {
                ast::ColumnOption::Null => spec.column.nullable = true,
                ast::ColumnOption::NotNull => spec.column.nullable = false,
                ast::ColumnOption::PrimaryKey(_) => spec.primary_key = true,
                ast::ColumnOption::Unique(_) => spec.unique = Some(option.name.as_ref().map(ident_name)),
                ast::ColumnOption::Default(expr) => {
                    let compiled =
                        Binder::new(None, &[]).in_session(self).scalar(expr, "DEFAULT expressions")?;
                    if let Expr::Literal(value) = &compiled {
                        if !value.is_null() {
                            coerce(value.clone(), ty)?;
                        }
                    }
                    spec.default = Some((expr.to_string(), compiled));
                }
                other => {
                    return Err(DbError::Unsupported(format!(
                        "the column option {other} (column \"{name}\")"
                    )))
                }
            }
        }
        Ok(spec)
    }

    pub(crate) fn alter_table_statement(&mut self, alter: &ast::AlterTable) -> DbResult<QueryResult> {
        if alter.location.is_some() || alter.on_cluster.is_some() {
            return Err(DbError::Unsupported(format!("this form of ALTER TABLE: {alter}")));
        }
        let mut table = object_name(&alter.name)?;
        if alter.if_exists && self.schema_of(&table).is_err() {
            self.notice("42P01", format!("relation \"{table}\" does not exist, skipping"));
            return Ok(QueryResult::command("ALTER TABLE", 0));
        }
        for operation in &alter.operations {
            if let Some(renamed) = self.alter_table_operation(&table, operation)? {
                table = renamed;
            }
        }
        Ok(QueryResult::command("ALTER TABLE", 0))
    }

    fn notice(&mut self, sqlstate: &'static str, message: String) {
        self.notices.push(Notice { severity: Severity::Notice, sqlstate, message });
    }

    /// One action of an ALTER TABLE; the table's new name after a RENAME TO.
    fn alter_table_operation(
        &mut self,
        table: &str,
        operation: &ast::AlterTableOperation,
    ) -> DbResult<Option<String>> {
        use ast::AlterTableOperation as Op;
        match operation {
            Op::AddConstraint { constraint, not_valid: false } => match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    let schema = self.schema_of(table)?;
                    let columns = constraint_columns(&schema, pk.columns.iter().map(|c| &c.column.expr))?;
                    self.add_primary_key(table, columns)?;
                }
                ast::TableConstraint::Unique(unique) => {
                    let schema = self.schema_of(table)?;
                    let columns = constraint_columns(&schema, unique.columns.iter().map(|c| &c.column.expr))?;
                    let name = unique
                        .name
                        .as_ref()
                        .map(ident_name)
                        .unwrap_or_else(|| unique_name(&schema, &columns));
                    self.create_index(table, IndexDef { name, columns, unique: true })?;
                }
                other => return Err(DbError::Unsupported(format!("the constraint {other}"))),
            },
            Op::AddColumn { if_not_exists, column_def, column_position: None, .. } => {
                let name = ident_name(&column_def.name);
                if *if_not_exists && self.schema_of(table)?.column_index(&name).is_ok() {
                    self.notice(
                        "42701",
                        format!("column \"{name}\" of relation \"{table}\" already exists, skipping"),
                    );
                } else {
                    let spec = self.column_spec(column_def)?;
                    self.add_column(table, spec)?;
                }
            }
            Op::DropColumn { column_names, if_exists, .. } => {
                for column in column_names {
                    let name = ident_name(column);
                    if *if_exists && self.schema_of(table)?.column_index(&name).is_err() {
                        self.notice(
                            "42703",
                            format!("column \"{name}\" of relation \"{table}\" does not exist, skipping"),
                        );
                        continue;
                    }
                    self.drop_column(table, &name)?;
                }
            }
            Op::DropConstraint { if_exists, name, .. } => {
                let name = ident_name(name);
                let schema = self.schema_of(table)?;
                if schema.indexes.iter().any(|i| i.name == name && i.unique) {
                    self.drop_index(&name)?;
                } else if name == format!("{table}_pkey") && !schema.rowid {
                    return Err(DbError::Unsupported("dropping a primary key".into()));
                } else if *if_exists {
                    self.notice(
                        "42704",
                        format!("constraint \"{name}\" of relation \"{table}\" does not exist, skipping"),
                    );
                } else {
                    return Err(DbError::UnknownIndex(format!("{name}\" of relation \"{table}")));
                }
            }
            Op::RenameColumn { old_column_name, new_column_name } => {
                let (old, new) = (ident_name(old_column_name), ident_name(new_column_name));
                self.alter_schema(table, |schema| {
                    let i = visible_column(schema, &old)?;
                    if schema.column_index(&new).is_ok() {
                        return Err(DbError::DuplicateColumn(new.clone(), schema.name.clone()));
                    }
                    schema.columns[i].name = new.clone();
                    Ok(())
                })?;
            }
            Op::RenameTable {
                table_name: ast::RenameTableNameKind::To(name) | ast::RenameTableNameKind::As(name),
            } => {
                let to = object_name(name)?;
                self.rename_table(table, &to)?;
                return Ok(Some(to));
            }
            Op::AlterColumn { column_name, op } => {
                let column = ident_name(column_name);
                self.alter_column(table, &column, op)?;
            }
            other => return Err(DbError::Unsupported(format!("ALTER TABLE ... {other}"))),
        }
        Ok(None)
    }

    fn alter_column(&mut self, table: &str, column: &str, op: &ast::AlterColumnOperation) -> DbResult<()> {
        use ast::AlterColumnOperation as Op;
        match op {
            Op::SetNotNull => {
                let column = column.to_string();
                self.ddl(table, |st| {
                    let t = st.table(table)?;
                    let mut schema = TableSchema::clone(t.schema);
                    let i = visible_column(&schema, &column)?;
                    if t.rows.values().any(|row| row[i].is_null()) {
                        return Err(DbError::NotNull { table: table.to_string(), column: column.clone() });
                    }
                    schema.columns[i].nullable = false;
                    Ok(Change::AlterTable(schema))
                })
            }
            Op::DropNotNull => self.alter_schema(table, |schema| {
                let i = visible_column(schema, column)?;
                if schema.primary_key.contains(&i) {
                    return Err(DbError::InvalidTableDefinition(format!(
                        "column \"{column}\" is in a primary key"
                    )));
                }
                schema.columns[i].nullable = true;
                Ok(())
            }),
            Op::SetDefault { value } => {
                let ty = visible_column(&*self.schema_of(table)?, column)
                    .map(|i| self.schema_of(table).map(|s| s.columns[i].ty))??;
                let compiled =
                    Binder::new(None, &[]).in_session(self).scalar(value, "DEFAULT expressions")?;
                if let Expr::Literal(v) = compiled {
                    if !v.is_null() {
                        coerce(v, ty)?;
                    }
                }
                let text = value.to_string();
                self.alter_schema(table, |schema| {
                    let i = visible_column(schema, column)?;
                    schema.defaults.retain(|(c, _)| *c != i);
                    schema.defaults.push((i, text.clone()));
                    Ok(())
                })
            }
            Op::DropDefault => self.alter_schema(table, |schema| {
                let i = visible_column(schema, column)?;
                schema.defaults.retain(|(c, _)| *c != i);
                Ok(())
            }),
            Op::SetDataType { data_type, using: None, .. } => {
                let ty = sql_type(data_type)?;
                let column = column.to_string();
                let zone = self.zone_name();
                self.ddl(table, |st| {
                    let t = st.table(table)?;
                    let mut schema = TableSchema::clone(t.schema);
                    let i = visible_column(&schema, &column)?;
                    // Every value must convert, as the apply will convert it.
                    for row in t.rows.values() {
                        coerce(row[i].clone(), ty)?;
                    }
                    schema.columns[i].ty = ty;
                    let sources = (0..schema.columns.len())
                        .map(|c| if c == i { ColumnSource::Converted(c) } else { ColumnSource::Old(c) })
                        .collect();
                    Ok(Change::RewriteTable { schema, sources, zone })
                })
            }
            other => Err(DbError::Unsupported(format!("ALTER COLUMN ... {other}"))),
        }
    }

    /// A schema change that keeps the rows as they are.
    fn alter_schema(
        &mut self,
        table: &str,
        change: impl FnOnce(&mut TableSchema) -> DbResult<()>,
    ) -> DbResult<()> {
        self.ddl(table, |st| {
            let mut schema = TableSchema::clone(st.table(table)?.schema);
            change(&mut schema)?;
            Ok(Change::AlterTable(schema.validated()?))
        })
    }

    fn zone_name(&self) -> String {
        self.client_settings.get("timezone").cloned().unwrap_or_else(|| "UTC".into())
    }

    /// `ADD PRIMARY KEY (columns)` of a table keyed by its hidden row id: checked
    /// (no NULL, no value twice), then its rows keyed by the new key, without the row id.
    pub fn add_primary_key(&mut self, table: &str, columns: Vec<usize>) -> DbResult<()> {
        self.ddl(table, |st| {
            let t = st.table(table)?;
            if !t.schema.rowid {
                return Err(DbError::InvalidTableDefinition(format!(
                    "multiple primary keys for table \"{table}\" are not allowed"
                )));
            }
            let mut seen = BTreeSet::new();
            for row in t.rows.values() {
                let key: Vec<Value> = columns.iter().map(|&c| row[c].clone()).collect();
                if let Some(i) = columns.iter().position(|&c| row[c].is_null()) {
                    return Err(DbError::NotNull {
                        table: table.to_string(),
                        column: t.schema.columns[columns[i]].name.clone(),
                    });
                }
                if !seen.insert(key.clone()) {
                    return Err(DbError::DuplicateValue {
                        index: format!("{table}_pkey"),
                        values: format_key(&key),
                    });
                }
            }
            let old = TableSchema::clone(t.schema);
            let mut visible = old.visible_columns().to_vec();
            for &c in &columns {
                visible[c].nullable = false;
            }
            let mut schema = TableSchema::new(table, visible, columns.clone())?;
            schema.indexes = old.indexes.clone();
            schema.defaults = old.defaults.clone();
            let sources = (0..schema.columns.len()).map(ColumnSource::Old).collect();
            Ok(Change::RewriteTable { schema: schema.validated()?, sources, zone: "UTC".into() })
        })
    }

    /// `ADD COLUMN`: the new column last (before a hidden row id), every row given its
    /// default (evaluated once, as PostgreSQL does for a default that is not volatile) or
    /// NULL; NOT NULL without a default on a table with rows fails as PostgreSQL's does.
    fn add_column(&mut self, table: &str, spec: ColumnSpec) -> DbResult<()> {
        if spec.primary_key {
            return Err(DbError::Unsupported(
                "ADD COLUMN ... PRIMARY KEY (add the column, then the key)".into(),
            ));
        }
        let value = match &spec.default {
            Some((_, expr)) => coerce(expr.eval(&[], &[])?, spec.column.ty)?,
            None => Value::Null,
        };
        let ColumnSpec { column, unique, default, .. } = spec;
        let name = column.name.clone();
        self.ddl(table, |st| {
            let t = st.table(table)?;
            let old = t.schema;
            if old.column_index(&name).is_ok() {
                return Err(DbError::DuplicateColumn(name.clone(), table.to_string()));
            }
            if value.is_null() && !column.nullable && !t.rows.is_empty() {
                return Err(DbError::NotNull { table: table.to_string(), column: name.clone() });
            }
            let mut schema = TableSchema::clone(old);
            let at = old.visible_columns().len();
            schema.columns.insert(at, column.clone());
            if schema.rowid {
                schema.primary_key = vec![schema.columns.len() - 1];
            }
            if let Some((text, _)) = &default {
                schema.defaults.push((at, text.clone()));
            }
            let mut sources: Vec<ColumnSource> = (0..at).map(ColumnSource::Old).collect();
            sources.push(ColumnSource::Constant(value.clone()));
            if old.rowid {
                sources.push(ColumnSource::Old(at));
            }
            Ok(Change::RewriteTable { schema: schema.validated()?, sources, zone: "UTC".into() })
        })?;
        if let Some(index_name) = unique {
            let schema = self.schema_of(table)?;
            let at = schema.column_index(&name)?;
            let index_name = index_name.unwrap_or_else(|| unique_name(&schema, &[at]));
            self.create_index(table, IndexDef { name: index_name, columns: vec![at], unique: true })?;
        }
        Ok(())
    }

    /// `DROP COLUMN`: the indexes on it go with it, as in PostgreSQL; a primary key
    /// column is refused.
    fn drop_column(&mut self, table: &str, column: &str) -> DbResult<()> {
        self.ddl(table, |st| {
            let old = st.table(table)?.schema;
            let dropped = visible_column(old, column)?;
            if old.primary_key.contains(&dropped) {
                return Err(DbError::Unsupported(format!(
                    "dropping column \"{column}\", part of the primary key"
                )));
            }
            if old.visible_columns().len() == 1 {
                return Err(DbError::Unsupported(format!("dropping the last column of \"{table}\"")));
            }
            let shift = |c: usize| if c > dropped { c - 1 } else { c };
            let mut schema = TableSchema::clone(old);
            schema.columns.remove(dropped);
            schema.primary_key = old.primary_key.iter().map(|&c| shift(c)).collect();
            schema.indexes = old
                .indexes
                .iter()
                .filter(|i| !i.columns.contains(&dropped))
                .map(|i| IndexDef { columns: i.columns.iter().map(|&c| shift(c)).collect(), ..i.clone() })
                .collect();
            schema.defaults = old
                .defaults
                .iter()
                .filter(|(c, _)| *c != dropped)
                .map(|(c, text)| (shift(*c), text.clone()))
                .collect();
            let sources = (0..old.columns.len()).filter(|&c| c != dropped).map(ColumnSource::Old).collect();
            Ok(Change::RewriteTable { schema: schema.validated()?, sources, zone: "UTC".into() })
        })
    }

    fn rename_table(&mut self, table: &str, to: &str) -> DbResult<()> {
        if crate::views::is_view(to) {
            return Err(DbError::TableExists(to.to_string()));
        }
        self.ddl(table, |st| {
            st.table(table)?;
            if st.has_table(to) || index_named(st, to).is_some() {
                return Err(DbError::TableExists(to.to_string()));
            }
            Ok(Change::RenameTable { from: table.to_string(), to: to.to_string() })
        })
    }
}

/// A visible column's position (the hidden row id is not one).
fn visible_column(schema: &TableSchema, name: &str) -> DbResult<usize> {
    match schema.column_index(name) {
        Ok(i) if schema.rowid_index() != Some(i) => Ok(i),
        _ => Err(DbError::UnknownColumn(format!("{name}\" of relation \"{}", schema.name))),
    }
}

/// The columns a PRIMARY KEY or UNIQUE constraint names.
fn constraint_columns<'e>(
    schema: &TableSchema,
    exprs: impl Iterator<Item = &'e ast::Expr>,
) -> DbResult<Vec<usize>> {
    let mut columns = Vec::new();
    for expr in exprs {
        let ast::Expr::Identifier(ident) = expr else {
            return Err(DbError::Unsupported(format!("the key part {expr}")));
        };
        let name = ident_name(ident);
        let i = visible_column(schema, &name)
            .map_err(|_| DbError::UnknownColumn(format!("{name}\" named in key does not exist (\"{name}")))?;
        if columns.contains(&i) {
            return Err(DbError::InvalidTableDefinition(format!(
                "column \"{name}\" appears twice in the key"
            )));
        }
        columns.push(i);
    }
    Ok(columns)
}

/// PostgreSQL's name for a unique constraint: table_column(s)_key.
pub(crate) fn unique_name(schema: &TableSchema, columns: &[usize]) -> String {
    let names: Vec<&str> = columns.iter().map(|&c| schema.columns[c].name.as_str()).collect();
    format!("{}_{}_key", schema.name, names.join("_"))
}

/// A table's storage parameters (`WITH (fillfactor = 90)`): PostgreSQL's that have a
/// meaning for its heap are accepted (rows here live in ordered trees, which fill their
/// nodes as they split: no parameter changes them); any other is refused.
pub(crate) fn check_storage_parameters(options: &ast::CreateTableOptions) -> DbResult<()> {
    let list = match options {
        ast::CreateTableOptions::None => return Ok(()),
        ast::CreateTableOptions::With(list) => list,
        other => return Err(DbError::Unsupported(format!("the table options {other}"))),
    };
    for option in list {
        let ast::SqlOption::KeyValue { key, value } = option else {
            return Err(DbError::Unsupported(format!("the storage parameter {option}")));
        };
        let name = ident_name(key);
        let invalid = |allowed: &str| DbError::InvalidParameterValue {
            parameter: name.clone(),
            value: value.to_string(),
            allowed: allowed.into(),
        };
        match name.as_str() {
            "fillfactor" => match value.to_string().parse::<i64>() {
                Ok(10..=100) => {}
                _ => return Err(invalid("an integer from 10 to 100")),
            },
            n if n.starts_with("autovacuum_") || n.starts_with("toast_") || n == "parallel_workers" => {}
            _ => {
                return Err(DbError::InvalidParameterValue {
                    parameter: "storage parameter".into(),
                    value: name.clone(),
                    allowed: "fillfactor, parallel_workers, autovacuum_*".into(),
                })
            }
        }
    }
    Ok(())
}
