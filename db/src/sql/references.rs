//! FOREIGN KEY in DDL: declared in `CREATE TABLE` (a column's `REFERENCES`, a table's
//! `FOREIGN KEY`) and `ALTER TABLE ADD [CONSTRAINT]`, dropped by `DROP CONSTRAINT`, and
//! kept true by the DDL of the tables at either end: a referenced table is dropped or
//! truncated only with its children (or CASCADE), its referenced columns are not
//! dropped, and a rename of the table or of a referenced column follows into the
//! children's constraints, in the same DDL transaction. The row-level checks and
//! actions are `crate::foreign_keys`.

use sqlparser::ast;

use crate::change::Change;
use crate::database::{format_key, Session};
use crate::error::{DbError, DbResult};
use crate::foreign_keys::column_positions;
use crate::schema::{ForeignKeyDef, ReferentialAction, TableSchema};
use crate::sql::expr::{ident_name, object_name};
use crate::sql::stored_views::{cascade_to_views, Dropped};
use crate::state::DbState;
use crate::value::{DataType, Value};

/// A FOREIGN KEY as declared, before it is checked against its tables.
#[derive(Clone, Debug)]
pub(crate) struct ForeignKeySpec {
    pub name: Option<String>,
    pub columns: Vec<String>,
    pub parent: String,
    /// Empty: the parent's primary key.
    pub parent_columns: Vec<String>,
    pub on_delete: ReferentialAction,
    pub on_update: ReferentialAction,
}

fn action(a: Option<ast::ReferentialAction>) -> ReferentialAction {
    match a {
        None | Some(ast::ReferentialAction::NoAction) => ReferentialAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => ReferentialAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => ReferentialAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => ReferentialAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => ReferentialAction::SetDefault,
    }
}

/// Reads a FOREIGN KEY constraint; `columns` names the referencing columns when the
/// constraint is a column's (`col REFERENCES parent`).
pub(crate) fn foreign_key_spec(
    fk: &ast::ForeignKeyConstraint,
    column: Option<&str>,
    name: Option<String>,
) -> DbResult<ForeignKeySpec> {
    match fk.match_kind {
        None | Some(ast::ConstraintReferenceMatchKind::Simple) => {}
        Some(other) => return Err(DbError::Unsupported(format!("foreign keys with MATCH {other}"))),
    }
    if let Some(c) = &fk.characteristics {
        if c.initially == Some(ast::DeferrableInitial::Deferred) {
            return Err(DbError::Unsupported(
                "foreign keys checked at commit (INITIALLY DEFERRED): they are checked at each row".into(),
            ));
        }
        if c.enforced == Some(false) {
            return Err(DbError::Unsupported("NOT ENFORCED foreign keys".into()));
        }
    }
    let columns = match column {
        Some(c) => vec![c.to_string()],
        None => fk.columns.iter().map(ident_name).collect(),
    };
    Ok(ForeignKeySpec {
        name: fk.name.as_ref().map(ident_name).or(name),
        columns,
        parent: match fk.foreign_table.0.as_slice() {
            // Qualified: `schema.name`, resolved as such (`Session::foreign_key_parent`).
            [schema, _] => format!(
                "{}.{}",
                schema.as_ident().map(ident_name).unwrap_or_default(),
                object_name(&fk.foreign_table)?
            ),
            _ => object_name(&fk.foreign_table)?,
        },
        parent_columns: fk.referred_columns.iter().map(ident_name).collect(),
        on_delete: action(fk.on_delete),
        on_update: action(fk.on_update),
    })
}

/// Whether values of `a` and `b` compare as a key does (PostgreSQL's rule for a foreign
/// key: an equality operator of the referenced column's index).
fn comparable(a: DataType, b: DataType) -> bool {
    let class = |t: DataType| match t {
        DataType::Int | DataType::Float | DataType::Float4 | DataType::Numeric(_) => 0,
        DataType::Text { .. } | DataType::Char { .. } => 1,
        DataType::Bool => 2,
        DataType::Date | DataType::Timestamp | DataType::TimestampTz => 3,
        DataType::Time => 4,
        DataType::Interval => 5,
        DataType::Bytea => 6,
        DataType::Uuid => 7,
        // json has no equality in PostgreSQL, so no foreign key of it; jsonb has one.
        DataType::Json => 8,
        DataType::Jsonb => 9,
        DataType::Catalog(c) if c.is_oid() => 0,
        DataType::Catalog(_) => 1,
        DataType::Array(_) => 10,
        DataType::Record(_) => 11,
    };
    if a == DataType::Json || b == DataType::Json {
        return false;
    }
    class(a) == class(b)
}

/// A spec made a constraint of `child`, checked against `parent` (which is `child`
/// itself for a self-reference): the columns exist, agree in number and type, and the
/// referenced ones are the parent's primary key or a unique constraint's columns.
pub(crate) fn resolve_foreign_key(
    child: &TableSchema,
    parent: &TableSchema,
    spec: &ForeignKeySpec,
) -> DbResult<ForeignKeyDef> {
    let mut columns = Vec::new();
    for name in &spec.columns {
        let c = visible(child, name).map_err(|_| {
            DbError::UnknownColumn(format!(
                "{name}\" referenced in foreign key constraint does not exist (\"{name}"
            ))
        })?;
        if columns.contains(&c) {
            return Err(DbError::DuplicateColumn(name.clone(), child.name.clone()));
        }
        columns.push(c);
    }
    let parent_columns: Vec<usize> = if spec.parent_columns.is_empty() {
        if parent.rowid {
            return Err(DbError::InvalidForeignKey(format!(
                "there is no primary key for referenced table \"{}\"",
                parent.name
            )));
        }
        parent.primary_key.clone()
    } else {
        spec.parent_columns
            .iter()
            .map(|name| {
                visible(parent, name).map_err(|_| {
                    DbError::UnknownColumn(format!(
                        "{name}\" referenced in foreign key constraint does not exist (\"{name}"
                    ))
                })
            })
            .collect::<DbResult<_>>()?
    };
    if columns.len() != parent_columns.len() {
        return Err(DbError::InvalidForeignKey(
            "number of referencing and referenced columns for foreign key disagree".into(),
        ));
    }
    let same_set =
        |key: &[usize]| key.len() == parent_columns.len() && key.iter().all(|c| parent_columns.contains(c));
    let is_primary_key = !parent.rowid && same_set(&parent.primary_key);
    if !is_primary_key && !parent.indexes.iter().any(|i| i.unique && same_set(&i.columns)) {
        return Err(DbError::InvalidForeignKey(format!(
            "there is no unique constraint matching given keys for referenced table \"{}\"",
            parent.name
        )));
    }
    let name = spec.name.clone().unwrap_or_else(|| {
        let names: Vec<&str> = columns.iter().map(|&c| child.columns[c].name.as_str()).collect();
        let base = format!("{}_{}_fkey", crate::temp_tables::visible_name(&child.name), names.join("_"));
        let taken = |n: &str| child.foreign_keys.iter().any(|f| f.name == n);
        if !taken(&base) {
            return base;
        }
        (1..).map(|i| format!("{base}{i}")).find(|n| !taken(n)).expect("a free name")
    });
    if child.foreign_keys.iter().any(|f| f.name == name) {
        return Err(DbError::TableExists(name));
    }
    for (&c, &p) in columns.iter().zip(&parent_columns) {
        let (ct, pt) = (child.columns[c].ty, parent.columns[p].ty);
        if !comparable(ct, pt) {
            return Err(DbError::DatatypeMismatch(format!(
                "foreign key constraint \"{name}\" cannot be implemented: key columns \"{}\" and \"{}\" are of incompatible types: {} and {}",
                child.columns[c].name,
                parent.columns[p].name,
                ct.name().to_lowercase(),
                pt.name().to_lowercase()
            )));
        }
    }
    let on_set_default_or_null = [spec.on_delete, spec.on_update];
    if on_set_default_or_null.contains(&ReferentialAction::SetNull) {
        if let Some(&c) = columns.iter().find(|&&c| !child.columns[c].nullable) {
            // PostgreSQL accepts it and fails at the action; said at once here.
            return Err(DbError::InvalidTableDefinition(format!(
                "column \"{}\" is NOT NULL: ON ... SET NULL could not set it",
                child.columns[c].name
            )));
        }
    }
    Ok(ForeignKeyDef {
        name,
        columns,
        parent: parent.name.clone(),
        parent_columns: parent_columns.iter().map(|&p| parent.columns[p].name.clone()).collect(),
        on_delete: spec.on_delete,
        on_update: spec.on_update,
    })
}

fn visible(schema: &TableSchema, name: &str) -> DbResult<usize> {
    match schema.column_index(name) {
        Ok(i) if schema.rowid_index() != Some(i) => Ok(i),
        _ => Err(DbError::UnknownColumn(name.to_string())),
    }
}

/// Every row of `child` already there must reference a row of `parent` (`ADD
/// CONSTRAINT ... FOREIGN KEY` on a table with rows).
fn validate_existing_rows(st: &DbState, child: &TableSchema, fk: &ForeignKeyDef) -> DbResult<()> {
    let parent = st.table(&fk.parent)?;
    let parent_columns = column_positions(parent.schema, &fk.parent_columns)?;
    let keys: std::collections::BTreeSet<Vec<Value>> =
        parent.rows.values().map(|row| parent_columns.iter().map(|&c| row[c].clone()).collect()).collect();
    for row in st.table(&child.name)?.rows.values() {
        let values: Vec<Value> = fk.columns.iter().map(|&c| row[c].clone()).collect();
        if !values.iter().any(Value::is_null) && !keys.contains(&values) {
            let names: Vec<&str> = fk.columns.iter().map(|&c| child.columns[c].name.as_str()).collect();
            return Err(DbError::ForeignKeyViolation {
                table: child.name.clone(),
                constraint: fk.name.clone(),
                detail: format!(
                    "Key ({})=({}) is not present in table \"{}\"",
                    names.join(", "),
                    format_key(&values),
                    fk.parent
                ),
            });
        }
    }
    Ok(())
}

/// The tables with a foreign key referencing `table`, other than itself.
pub(crate) fn children_of(st: &DbState, table: &str) -> Vec<String> {
    st.schemas()
        .filter(|s| s.name != table && s.foreign_keys.iter().any(|f| f.parent == table))
        .map(|s| s.name.clone())
        .collect()
}

impl Session {
    /// `ALTER TABLE table ADD [CONSTRAINT name] FOREIGN KEY ...`: checked against the
    /// rows there, under the locks of both tables (no row of either changes meanwhile).
    pub(crate) fn add_foreign_key(&mut self, table: &str, spec: ForeignKeySpec) -> DbResult<()> {
        let mut spec = spec;
        spec.parent = self.foreign_key_parent(std::mem::take(&mut spec.parent));
        let parent = spec.parent.clone();
        self.ddl_tables(&[table, &parent], |st| {
            let child = st.table(table)?.schema;
            let parent_schema = if parent == table { child } else { st.table(&parent)?.schema };
            let fk = resolve_foreign_key(child, parent_schema, &spec)?;
            validate_existing_rows(st, child, &fk)?;
            let mut schema = TableSchema::clone(child);
            schema.foreign_keys.push(fk);
            Ok(vec![Change::AlterTable(schema.validated()?)])
        })
    }

    /// `DROP TABLE name [CASCADE]` of one of `dropping` (the statement's tables): a table
    /// other tables reference goes only with them or with CASCADE, which drops their
    /// constraints. One DDL transaction.
    pub(crate) fn drop_table_checked(
        &mut self,
        table: &str,
        dropping: &[String],
        cascade: bool,
    ) -> DbResult<()> {
        let children = self.db.read_catalog(|st| children_of_shard(st, table));
        let views = self.views_depending(Dropped::Relation(table));
        let mut tables: Vec<&str> = vec![table];
        tables.extend(children.iter().map(String::as_str));
        tables.extend(views.iter().map(String::as_str));
        let mut cascaded = Vec::new();
        self.ddl_tables(&tables, |st| {
            let kind = if st.table(table)?.schema.sequence.is_some() { "sequence" } else { "table" };
            let what = format!("{kind} {}", crate::temp_tables::visible_name(table));
            let mut changes = cascade_to_views(
                st.schemas(),
                Dropped::Relation(table),
                &what,
                dropping,
                cascade,
                &mut cascaded,
            )?;
            for child in children_of(st, table) {
                if !cascade && !dropping.contains(&child) {
                    let fk =
                        st.table(&child)?.schema.foreign_keys.iter().find(|f| f.parent == table).cloned();
                    return Err(DbError::DependentObjects {
                        message: format!("cannot drop table {table} because other objects depend on it"),
                        detail: format!(
                            "constraint {} on table {child} depends on table {table}",
                            fk.map(|f| f.name).unwrap_or_default()
                        ),
                        hint: Some(crate::sql::stored_views::CASCADE_HINT.into()),
                    });
                }
                let mut schema = TableSchema::clone(st.table(&child)?.schema);
                schema.foreign_keys.retain(|f| f.parent != table);
                changes.push(Change::AlterTable(schema.validated()?));
            }
            changes.push(Change::DropTable { table: table.to_string() });
            Ok(changes)
        })?;
        self.notice_cascade(&cascaded);
        Ok(())
    }

    /// `TRUNCATE a, b [CASCADE]`: one DDL transaction; a referenced table only with every
    /// table referencing it (added by CASCADE), as PostgreSQL requires.
    pub(crate) fn truncate_tables(&mut self, names: &[String], cascade: bool) -> DbResult<()> {
        let mut all: Vec<String> = names.to_vec();
        let mut i = 0;
        while i < all.len() {
            let children = self.db.read_catalog(|st| children_of_shard(st, &all[i]));
            for child in children {
                if !all.contains(&child) {
                    if !cascade {
                        return Err(DbError::Unsupported(format!(
                            "cannot truncate a table referenced in a foreign key constraint: table \"{child}\" references \"{}\" (truncate it too, or use TRUNCATE ... CASCADE)",
                            all[i]
                        )));
                    }
                    self.notices
                        .push(crate::error::Notice::plain(format!("truncate cascades to table \"{child}\"")));
                    all.push(child);
                }
            }
            i += 1;
        }
        let tables: Vec<&str> = all.iter().map(String::as_str).collect();
        self.ddl_tables(&tables, |st| {
            for t in &all {
                let grown: Vec<String> =
                    children_of(st, t).into_iter().filter(|c| !all.contains(c)).collect();
                if let Some(child) = grown.first() {
                    return Err(DbError::Unsupported(format!(
                        "cannot truncate a table referenced in a foreign key constraint: table \"{child}\" references \"{t}\""
                    )));
                }
            }
            all.iter()
                .map(|t| st.table(t).map(|_| Change::Truncate { table: t.clone() }))
                .collect()
        })
    }
}

/// What a rename renames.
pub(crate) enum Rename<'a> {
    /// The table, to this name.
    Table(&'a str),
    /// A column of the table, from one name to another.
    Column(&'a str, &'a str),
}

/// Makes the foreign keys of `schema` that reference `table` follow a rename of it.
pub(crate) fn follow_rename(schema: &mut TableSchema, table: &str, rename: &Rename<'_>) {
    for fk in schema.foreign_keys.iter_mut().filter(|f| f.parent == table) {
        match rename {
            Rename::Table(to) => fk.parent = to.to_string(),
            Rename::Column(from, to) => {
                for c in fk.parent_columns.iter_mut().filter(|c| c == from) {
                    *c = to.to_string();
                }
            }
        }
    }
}

/// The schemas of the other tables referencing `table`, their constraints made to follow
/// a rename of it or of one of its columns.
pub(crate) fn children_renamed(st: &DbState, table: &str, rename: &Rename<'_>) -> DbResult<Vec<Change>> {
    children_of(st, table)
        .into_iter()
        .map(|child| {
            let mut schema = TableSchema::clone(st.table(&child)?.schema);
            follow_rename(&mut schema, table, rename);
            Ok(Change::AlterTable(schema.validated()?))
        })
        .collect()
}

/// `children_of` over the catalog (a live read, to know which tables to lock).
pub(crate) fn children_in_catalog(session: &Session, table: &str) -> Vec<String> {
    session.db.read_catalog(|st| children_of_shard(st, table))
}

/// `children_of` over the catalog shard (a live read, before the DDL's locks).
pub(crate) fn children_of_shard(st: &crate::state::Shard, table: &str) -> Vec<String> {
    st.schemas()
        .filter(|s| s.name != table && s.foreign_keys.iter().any(|f| f.parent == table))
        .map(|s| s.name.clone())
        .collect()
}

/// The foreign keys of other tables that reference `column` of `table` (a DROP COLUMN
/// refuses it).
pub(crate) fn column_referenced(st: &DbState, table: &str, column: &str) -> Option<(String, String)> {
    st.schemas().find_map(|s| {
        s.foreign_keys
            .iter()
            .find(|f| f.parent == table && f.parent_columns.iter().any(|c| c == column))
            .map(|f| (f.name.clone(), s.name.clone()))
    })
}
