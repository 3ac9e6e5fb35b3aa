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
use crate::error::{DbError, DbResult, Notice};
use crate::schema::{coerce, Column, IndexDef, TableSchema};
use crate::schema::{CheckDef, ForeignKeyDef, SequenceDef};
use crate::sql::expr::{ident_name, object_name, sql_type, Binder, Expr};
use crate::sql::references::{
    children_in_catalog, children_renamed, column_referenced, follow_rename, Rename,
};
use crate::sql::stored_views::{
    cascade_to_views, follow_rename_in_views, refuse_type_change, Dropped, Renamed,
};
use crate::sql::QueryResult;
use crate::value::Value;

/// A column as `CREATE TABLE` or `ALTER TABLE ADD COLUMN` declares it.
pub(crate) struct ColumnSpec {
    pub column: Column,
    pub primary_key: bool,
    /// `CONSTRAINT name PRIMARY KEY` on the column: the name.
    pub primary_key_name: Option<String>,
    /// UNIQUE, with the constraint's name if it has one.
    pub unique: Option<Option<String>>,
    /// DEFAULT: the expression's text, and the expression compiled (checked).
    pub default: Option<(String, Expr)>,
    /// SERIAL or `GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY`: whether ALWAYS, and the
    /// definition of the sequence that gives its values.
    pub identity: Option<(bool, SequenceDef)>,
    /// Declared `GENERATED ... AS IDENTITY` (not SERIAL).
    pub generated_identity: bool,
    /// CHECK conditions on the column: (constraint name if given, condition text).
    pub checks: Vec<(Option<String>, String)>,
    /// `REFERENCES parent [(column)]` on the column.
    pub references: Vec<crate::sql::references::ForeignKeySpec>,
    /// The declared width of an INTEGER (4) or SMALLINT (2) column (`TableSchema::int_widths`).
    pub int_width: Option<u8>,
}

impl Session {
    /// Reads a column definition: its type, NULL / NOT NULL, PRIMARY KEY, UNIQUE and
    /// DEFAULT (checked now: names, functions, a constant against the column's type).
    pub(crate) fn column_spec(&self, def: &ast::ColumnDef) -> DbResult<ColumnSpec> {
        let name = ident_name(&def.name);
        // SERIAL and its sizes: an integer column with a sequence of its own.
        let serial_max = match &def.data_type {
            ast::DataType::Custom(type_name, _) => match object_name(type_name)?.as_str() {
                "serial" | "serial4" => Some(i32::MAX as i64),
                "bigserial" | "serial8" => Some(i64::MAX),
                "smallserial" | "serial2" => Some(i16::MAX as i64),
                _ => None,
            },
            _ => None,
        };
        let ty = match serial_max {
            Some(_) => crate::value::DataType::Int,
            None => sql_type(&def.data_type)?,
        };
        let type_max = serial_max.unwrap_or(match &def.data_type {
            ast::DataType::SmallInt(_) | ast::DataType::Int2(_) => i16::MAX as i64,
            ast::DataType::Int(_) | ast::DataType::Integer(_) | ast::DataType::Int4(_) => i32::MAX as i64,
            _ => i64::MAX,
        });
        let mut spec = ColumnSpec {
            column: Column { name: name.clone(), ty, nullable: serial_max.is_none() },
            primary_key: false,
            primary_key_name: None,
            generated_identity: false,
            unique: None,
            default: None,
            identity: None,
            checks: Vec::new(),
            references: Vec::new(),
            int_width: match (ty, type_max) {
                (crate::value::DataType::Int, m) if m == i16::MAX as i64 => Some(2),
                (crate::value::DataType::Int, m) if m == i32::MAX as i64 => Some(4),
                _ => None,
            },
        };
        if let Some(max) = serial_max {
            spec.identity =
                Some((false, crate::sequences::definition(max, None, None, None, None, None, false)?));
        }
        for option in &def.options {
            match &option.option {
                ast::ColumnOption::Null => spec.column.nullable = true,
                ast::ColumnOption::NotNull => spec.column.nullable = false,
                ast::ColumnOption::PrimaryKey(pk) => {
                    spec.primary_key = true;
                    spec.primary_key_name = pk.name.as_ref().or(option.name.as_ref()).map(ident_name);
                }
                ast::ColumnOption::Unique(_) => spec.unique = Some(option.name.as_ref().map(ident_name)),
                ast::ColumnOption::Check(check) => {
                    let name = check.name.as_ref().or(option.name.as_ref()).map(ident_name);
                    spec.checks.push((name, check.expr.to_string()));
                }
                ast::ColumnOption::ForeignKey(fk) => {
                    let constraint = option.name.as_ref().map(ident_name);
                    spec.references.push(crate::sql::references::foreign_key_spec(
                        fk,
                        Some(&name),
                        constraint,
                    )?);
                }
                ast::ColumnOption::Generated {
                    generated_as: generated @ (ast::GeneratedAs::Always | ast::GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } => {
                    if ty != crate::value::DataType::Int {
                        return Err(DbError::InvalidTableDefinition(format!(
                            "identity column type must be smallint, integer, or bigint (column \"{name}\")"
                        )));
                    }
                    let options = sequence_options.as_deref().unwrap_or(&[]);
                    let def = sequence_definition(Some(&def.data_type), options, |e| self.constant_int(e))
                        .or_else(|_| sequence_definition(None, options, |e| self.constant_int(e)))?;
                    let def = crate::schema::SequenceDef { max: def.max.min(type_max), ..def };
                    spec.identity = Some((matches!(generated, ast::GeneratedAs::Always), def));
                    spec.generated_identity = true;
                    spec.column.nullable = false;
                }
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
        let mut table = self.relation_name(&alter.name)?;
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

    pub(crate) fn notice(&mut self, sqlstate: &'static str, message: String) {
        self.notices.push(Notice::with_state(sqlstate, message));
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
                    self.add_primary_key(table, columns, pk.name.as_ref().map(ident_name))?;
                }
                ast::TableConstraint::Unique(unique) => {
                    let schema = self.schema_of(table)?;
                    let columns = constraint_columns(&schema, unique.columns.iter().map(|c| &c.column.expr))?;
                    let name = unique
                        .name
                        .as_ref()
                        .map(|name| {
                            crate::namespaces::stored_name(
                                crate::namespaces::split(table).0,
                                &ident_name(name),
                            )
                        })
                        .unwrap_or_else(|| unique_name(&schema, &columns));
                    self.create_index(table, IndexDef { name, columns, unique: true, constraint: true })?;
                }
                ast::TableConstraint::Check(check) => {
                    let schema = self.schema_of(table)?;
                    let name = check.name.as_ref().map(ident_name);
                    let check = named_check(&schema, name, check.expr.to_string(), None);
                    self.add_check(table, check)?;
                }
                ast::TableConstraint::ForeignKey(fk) => {
                    let spec = crate::sql::references::foreign_key_spec(fk, None, None)?;
                    self.add_foreign_key(table, spec)?;
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
            Op::DropColumn { column_names, if_exists, drop_behavior, .. } => {
                let cascade = matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
                for column in column_names {
                    let name = ident_name(column);
                    if *if_exists && self.schema_of(table)?.column_index(&name).is_err() {
                        self.notice(
                            "42703",
                            format!("column \"{name}\" of relation \"{table}\" does not exist, skipping"),
                        );
                        continue;
                    }
                    self.drop_column(table, &name, cascade)?;
                }
            }
            Op::DropConstraint { if_exists, name, .. } => {
                let name = ident_name(name);
                let schema = self.schema_of(table)?;
                if schema.indexes.iter().any(|i| i.name == name && i.unique) {
                    self.drop_index(&name)?;
                } else if schema.checks.iter().any(|c| c.name == name) {
                    self.alter_schema(table, |schema| {
                        schema.checks.retain(|c| c.name != name);
                        Ok(())
                    })?;
                } else if schema.foreign_keys.iter().any(|f| f.name == name) {
                    self.alter_schema(table, |schema| {
                        schema.foreign_keys.retain(|f| f.name != name);
                        Ok(())
                    })?;
                } else if name == schema.primary_key_name() && !schema.rowid {
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
                // The constraints referencing the column follow it, in the same DDL.
                // The views reading it follow too.
                let children = children_in_catalog(self, table);
                let views = self.views_depending(Dropped::Relation(table));
                let mut tables = vec![table];
                tables.extend(children.iter().map(String::as_str));
                tables.extend(views.iter().map(String::as_str));
                self.ddl_tables(&tables, |st| {
                    let mut schema = TableSchema::clone(st.table(table)?.schema);
                    let i = visible_column(&schema, &old)?;
                    if schema.column_index(&new).is_ok() {
                        return Err(DbError::DuplicateColumn(new.clone(), schema.name.clone()));
                    }
                    schema.columns[i].name = new.clone();
                    let rename = Rename::Column(&old, &new);
                    follow_rename(&mut schema, table, &rename);
                    let mut changes = vec![Change::AlterTable(schema.validated()?)];
                    changes.extend(children_renamed(st, table, &rename)?);
                    let renamed = Renamed::Column { from: &old, to: &new };
                    changes.extend(follow_rename_in_views(st.schemas(), table, renamed)?);
                    Ok(changes)
                })?;
            }
            Op::RenameTable {
                table_name: ast::RenameTableNameKind::To(name) | ast::RenameTableNameKind::As(name),
            } => {
                let mut to = object_name(name)?;
                if crate::temp_tables::is_temporary(table) {
                    // A temporary table keeps its schema: its new name is stored as its own.
                    to = self.temp_name(&to);
                } else {
                    crate::temp_tables::check_permanent_name(&to)?;
                    // A table keeps its schema (ALTER TABLE ... SET SCHEMA moves it).
                    let schema = crate::namespaces::split(table).0;
                    if schema == crate::namespaces::PUBLIC {
                        crate::namespaces::check_relation_name(&to)?;
                    }
                    to = crate::namespaces::stored_name(schema, &to);
                }
                self.rename_table(table, &to)?;
                if let Some(action) = self.temp.on_commit.remove(table) {
                    self.temp.on_commit.insert(to.clone(), action);
                }
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
                    refuse_type_change(st.schemas(), table, &column)?;
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
    pub(crate) fn alter_schema(
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
    pub fn add_primary_key(
        &mut self,
        table: &str,
        columns: Vec<usize>,
        name: Option<String>,
    ) -> DbResult<()> {
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
                        index: name.clone().unwrap_or_else(|| format!("{table}_pkey")),
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
            schema.primary_key_constraint = name.clone();
            schema.indexes = old.indexes.clone();
            schema.defaults = old.defaults.clone();
            schema.always_generated = old.always_generated.clone();
            schema.identity_by_default = old.identity_by_default.clone();
            schema.int_widths = old.int_widths.clone();
            schema.checks = old.checks.clone();
            schema.foreign_keys = old.foreign_keys.clone();
            schema.comment = old.comment.clone();
            schema.column_comments = old.column_comments.clone();
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
        let ColumnSpec { column, unique, default, references, int_width, .. } = spec;
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
            if let Some(width) = int_width {
                schema.int_widths.push((at, width));
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
            let index = IndexDef { name: index_name, columns: vec![at], unique: true, constraint: true };
            self.create_index(table, index)?;
        }
        for reference in references {
            self.add_foreign_key(table, reference)?;
        }
        Ok(())
    }

    /// `DROP COLUMN`: the indexes on it go with it, as in PostgreSQL; a primary key
    /// column is refused.
    fn drop_column(&mut self, table: &str, column: &str, cascade: bool) -> DbResult<()> {
        let dropped_column = Dropped::Column { table, column };
        let views = self.views_depending(dropped_column);
        let mut tables = vec![table];
        tables.extend(views.iter().map(String::as_str));
        let mut cascaded = Vec::new();
        self.ddl_tables(&tables, |st| {
            let old = st.table(table)?.schema;
            let dropped = visible_column(old, column)?;
            // The views reading it first, as PostgreSQL's dependency check comes first.
            let what = format!("column {column} of table {table}");
            let mut changes = cascade_to_views(st.schemas(), dropped_column, &what, &[], cascade, &mut cascaded)?;
            if old.primary_key.contains(&dropped) {
                return Err(DbError::Unsupported(format!(
                    "dropping column \"{column}\", part of the primary key"
                )));
            }
            if old.visible_columns().len() == 1 {
                return Err(DbError::Unsupported(format!("dropping the last column of \"{table}\"")));
            }
            if let Some((constraint, child)) = column_referenced(st, table, column) {
                return Err(DbError::DependentObjects {
                    message: format!(
                        "cannot drop column {column} of table {table} because other objects depend on it"
                    ),
                    detail: format!("constraint {constraint} on table {child} depends on column {column} of table {table}"),
                    hint: Some("Drop the constraint first.".into()),
                });
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
            // A foreign key on the column goes with it, as PostgreSQL's does.
            schema.foreign_keys = old
                .foreign_keys
                .iter()
                .filter(|f| !f.columns.contains(&dropped))
                .map(|f| ForeignKeyDef { columns: f.columns.iter().map(|&c| shift(c)).collect(), ..f.clone() })
                .collect();
            schema.always_generated = old
                .always_generated
                .iter()
                .filter(|&&c| c != dropped)
                .map(|&c| shift(c))
                .collect();
            schema.identity_by_default =
                old.identity_by_default.iter().filter(|&&c| c != dropped).map(|&c| shift(c)).collect();
            schema.int_widths =
                old.int_widths.iter().filter(|(c, _)| *c != dropped).map(|&(c, w)| (shift(c), w)).collect();
            schema.column_comments = old
                .column_comments
                .iter()
                .filter(|(c, _)| *c != dropped)
                .map(|(c, text)| (shift(*c), text.clone()))
                .collect();
            let sources = (0..old.columns.len()).filter(|&c| c != dropped).map(ColumnSource::Old).collect();
            changes.push(Change::RewriteTable { schema: schema.validated()?, sources, zone: "UTC".into() });
            Ok(changes)
        })?;
        self.notice_cascade(&cascaded);
        Ok(())
    }

    pub(crate) fn rename_table(&mut self, table: &str, to: &str) -> DbResult<()> {
        if crate::views::is_view(to) {
            return Err(DbError::TableExists(to.to_string()));
        }
        let children = children_in_catalog(self, table);
        let views = self.views_depending(Dropped::Relation(table));
        let mut tables = vec![table];
        tables.extend(children.iter().map(String::as_str));
        tables.extend(views.iter().map(String::as_str));
        self.ddl_tables(&tables, |st| {
            let own = st.table(table)?.schema;
            if st.has_table(to) || index_named(st, to).is_some() {
                return Err(DbError::TableExists(to.to_string()));
            }
            let rename = Rename::Table(to);
            let mut changes = vec![Change::RenameTable { from: table.to_string(), to: to.to_string() }];
            if own.foreign_keys.iter().any(|f| f.parent == table) {
                // A self-reference follows too, on the table under its new name.
                let mut schema = TableSchema::clone(own);
                schema.name = to.to_string();
                follow_rename(&mut schema, table, &rename);
                changes.push(Change::AlterTable(schema.validated()?));
            }
            changes.extend(children_renamed(st, table, &rename)?);
            changes.extend(follow_rename_in_views(st.schemas(), table, Renamed::Relation { to })?);
            Ok(changes)
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

impl Session {
    /// `CREATE SEQUENCE name [AS type] [INCREMENT [BY] n] [MINVALUE n | NO MINVALUE]
    /// [MAXVALUE n | NO MAXVALUE] [START [WITH] n] [CACHE n] [[NO] CYCLE]`.
    pub(crate) fn create_sequence_statement(
        &mut self,
        name: &ast::ObjectName,
        temporary: bool,
        if_not_exists: bool,
        data_type: Option<&ast::DataType>,
        options: &[ast::SequenceOptions],
    ) -> DbResult<QueryResult> {
        let name = if temporary {
            if name.0.len() == 2 && !self.qualified_temporary(name)? {
                return Err(DbError::InvalidTableDefinition(
                    "cannot create temporary relation in non-temporary schema".into(),
                ));
            }
            // From here on the session's changes to it are kept unlogged (`temp_tables`).
            self.temp.made_any = true;
            self.temp_name(&object_name(name)?)
        } else {
            crate::temp_tables::check_permanent_name(&object_name(name)?)?;
            self.creation_name(name)?
        };
        let def = sequence_definition(data_type, options, |e| self.constant_int(e))?;
        if if_not_exists && self.schema_of(&name).is_ok() {
            self.notice(
                "42P07",
                format!("relation \"{}\" already exists, skipping", crate::temp_tables::visible_name(&name)),
            );
            return Ok(QueryResult::command("CREATE SEQUENCE", 0));
        }
        self.create_sequence(&name, def)?;
        Ok(QueryResult::command("CREATE SEQUENCE", 0))
    }

    /// Creates sequence `name`: a relation of one row (`sequences`), none yet.
    pub fn create_sequence(&mut self, name: &str, def: SequenceDef) -> DbResult<()> {
        let columns = vec![
            Column { name: "last_value".into(), ty: crate::value::DataType::Int, nullable: false },
            Column { name: "log_cnt".into(), ty: crate::value::DataType::Int, nullable: false },
            Column { name: "is_called".into(), ty: crate::value::DataType::Bool, nullable: false },
        ];
        let mut schema = TableSchema::new(name, columns, Vec::new())?;
        schema.sequence = Some(def);
        self.create_table(schema.validated()?)
    }

    pub(crate) fn drop_sequence_statement(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> DbResult<QueryResult> {
        for name in names {
            let name = self.relation_name(name)?;
            match self.schema_of(&name) {
                // A view reading it is refused or, with CASCADE, dropped with it.
                Ok(schema) if schema.sequence.is_some() => {
                    self.drop_table_checked(&name, std::slice::from_ref(&name), cascade)?
                }
                Ok(_) => return Err(DbError::WrongObjectType(format!("\"{name}\" is not a sequence"))),
                Err(DbError::UnknownTable(_)) if if_exists => self.notice(
                    "00000",
                    format!(
                        "sequence \"{}\" does not exist, skipping",
                        crate::temp_tables::visible_name(&name)
                    ),
                ),
                Err(DbError::UnknownTable(_)) => {
                    return Err(DbError::UnknownTable(name));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(QueryResult::command("DROP SEQUENCE", 0))
    }

    /// The sequences of `table`'s SERIAL and IDENTITY columns.
    pub(crate) fn sequences_owned_by(&self, table: &str) -> Vec<String> {
        self.table_schemas()
            .into_iter()
            .filter(|s| {
                s.sequence.as_ref().and_then(|d| d.owned_by.as_ref()).is_some_and(|(t, _)| t == table)
            })
            .map(|s| s.name.clone())
            .collect()
    }

    /// An integer constant of a DDL statement (a sequence option).
    pub(crate) fn constant_int(&self, e: &ast::Expr) -> DbResult<i64> {
        match Binder::new(None, &[]).in_session(self).scalar(e, "sequence options")? {
            Expr::Literal(Value::Int(v)) => Ok(v),
            other => {
                Err(DbError::TypeMismatch { expected: "an integer".into(), value: format!("{other:?}") })
            }
        }
    }
}

/// The largest value of a sequence's type (`AS smallint | integer | bigint`).
pub(crate) fn sequence_type_max(data_type: Option<&ast::DataType>) -> DbResult<i64> {
    use ast::DataType as T;
    Ok(match data_type {
        None => i64::MAX,
        Some(T::SmallInt(_) | T::Int2(_)) => i16::MAX as i64,
        Some(T::Int(_) | T::Integer(_) | T::Int4(_)) => i32::MAX as i64,
        Some(T::BigInt(_) | T::Int8(_)) => i64::MAX,
        Some(other) => {
            return Err(DbError::InvalidParameterValue {
                parameter: "sequence type".into(),
                value: other.to_string(),
                allowed: "smallint, integer or bigint".into(),
            })
        }
    })
}

/// A sequence's definition from its options (`CREATE SEQUENCE`, `GENERATED ... AS
/// IDENTITY (options)`).
pub(crate) fn sequence_definition(
    data_type: Option<&ast::DataType>,
    options: &[ast::SequenceOptions],
    int: impl Fn(&ast::Expr) -> DbResult<i64>,
) -> DbResult<SequenceDef> {
    use ast::SequenceOptions as O;
    let (mut increment, mut min, mut max, mut start, mut cache, mut cycle) =
        (None, None, None, None, None, false);
    for option in options {
        match option {
            O::IncrementBy(e, _) => increment = Some(int(e)?),
            O::MinValue(e) => min = e.as_ref().map(&int).transpose()?,
            O::MaxValue(e) => max = e.as_ref().map(&int).transpose()?,
            O::StartWith(e, _) => start = Some(int(e)?),
            O::Cache(e) => cache = Some(int(e)?),
            O::Cycle(no) => cycle = !*no,
        }
    }
    crate::sequences::definition(sequence_type_max(data_type)?, increment, min, max, start, cache, cycle)
}

impl Session {
    /// `ADD CONSTRAINT ... CHECK (condition)`: every row there must pass it.
    fn add_check(&mut self, table: &str, check: CheckDef) -> DbResult<()> {
        self.ddl(table, |st| {
            let t = st.table(table)?;
            let mut schema = TableSchema::clone(t.schema);
            if schema.checks.iter().any(|c| c.name == check.name) {
                return Err(DbError::TableExists(check.name.clone()));
            }
            schema.checks.push(check.clone());
            let compiled = compile_checks(&std::sync::Arc::new(schema.clone()))?;
            let (name, condition) = compiled.last().expect("the check just added");
            for row in t.rows.values() {
                if crate::sql::expr::truth(&condition.eval(row, &[])?)? == Some(false) {
                    return Err(DbError::CheckViolatedByRow {
                        table: table.to_string(),
                        constraint: name.clone(),
                    });
                }
            }
            Ok(Change::AlterTable(schema.validated()?))
        })
    }
}

/// A CHECK constraint with PostgreSQL's name for it when it has none: `table_column_check`
/// on a column, `table_check` for the table (a number added while the name is taken).
pub(crate) fn named_check(
    schema: &TableSchema,
    name: Option<String>,
    expr: String,
    column: Option<&str>,
) -> CheckDef {
    let name = name.unwrap_or_else(|| {
        let base = match column {
            Some(c) => format!("{}_{c}_check", crate::temp_tables::visible_name(&schema.name)),
            None => format!("{}_check", crate::temp_tables::visible_name(&schema.name)),
        };
        let taken = |n: &str| schema.checks.iter().any(|c| c.name == n);
        if !taken(&base) {
            return base;
        }
        (1..).map(|i| format!("{base}{i}")).find(|n| !taken(n)).expect("a free name")
    });
    CheckDef { name, expr }
}

/// The table's CHECK conditions compiled against its columns: (name, condition). A
/// condition may not hold a subquery or an aggregate, nor call a sequence.
pub(crate) fn compile_checks(schema: &std::sync::Arc<TableSchema>) -> DbResult<Vec<(String, Expr)>> {
    let relation = crate::sql::expr::Relation {
        name: schema.name.clone(),
        alias: None,
        schema: schema.clone(),
        derived: None,
        function: None,
    };
    schema
        .checks
        .iter()
        .map(|check| {
            let ast = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
                .try_with_sql(&check.expr)
                .and_then(|mut p| p.parse_expr())
                .map_err(|e| DbError::Syntax {
                    message: format!("CHECK ({}): {e}", check.expr),
                    position: 0,
                })?;
            let expr = Binder::new(Some(&relation), &[]).scalar(&ast, "check constraints")?;
            Ok((check.name.clone(), expr))
        })
        .collect()
}
