//! The catalog's functions (`pg_get_constraintdef`, `format_type`, `to_regclass`, ...)
//! and the `reg*` casts: evaluated row by row against the schemas committed at the
//! moment of the call, as `nextval` reads its sequence (the call holds the database
//! weakly, so a compiled statement does not keep a closed database alive).

use std::sync::Weak;

use crate::catalog::operators::{CAST_FUNCTIONS, OPERATORS};
use crate::catalog::relations::{self, constraints_of};
use crate::catalog::{
    builtin_type, format_type, lookup, not_found, object_name, object_oid, quote_ident, ObjectKind, Objects,
    OWNER_OID,
};
use crate::database::DbShared;
use crate::error::{DbError, DbResult};
use crate::value::{CatalogType, DataType, Value};

/// A catalog function, or a `reg*` cast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CatalogFn {
    /// `text::regclass` (and the other `reg*`): the OID of the named object, an error if
    /// there is none.
    RegIn(CatalogType),
    /// `to_regclass(text)` (...): the same, NULL if there is none.
    ToReg(CatalogType),
    /// `regclass::text`: the object's name.
    RegOut(CatalogType),
    TableIsVisible,
    TypeIsVisible,
    CollationIsVisible,
    FormatType,
    GetExpr,
    GetConstraintDef,
    GetIndexDef,
    GetViewDef,
    GetSerialSequence,
    GetUserById,
    /// obj_description(oid [, catalog]): a relation's comment (`COMMENT ON TABLE`).
    ObjDescription,
    /// col_description(table oid, attnum): a column's comment.
    ColDescription,
    /// shobj_description: no shared object (database, role) has a comment here: NULL.
    Description,
    /// has_table_privilege, has_schema_privilege: every session's user owns every
    /// object.
    HasPrivilege,
    EncodingToChar,
    QuoteIdent,
    /// pg_get_triggerdef, pg_get_statisticsobjdef_columns, pg_get_ruledef: the
    /// database has no triggers, extended statistics or rules, so no OID names one
    /// (NULL, as PostgreSQL answers for an OID that names nothing).
    NoSuchObject,
    /// pg_relation_is_publishable: there is no logical replication to publish to.
    IsPublishable,
    /// pg_table_size, pg_relation_size, pg_total_relation_size, pg_indexes_size: NULL.
    /// A table's rows live in memory and its image in the checkpoint files with every
    /// other table's; no size per relation is kept.
    RelationSize,
    /// pg_size_pretty(bigint): bytes in PostgreSQL's units (`8192 bytes`, `16 kB`).
    SizePretty,
    FunctionIsVisible,
    /// pg_operator_is_visible: a built-in operator (`operators::OPERATORS`) is.
    OperatorIsVisible,
    /// pg_opclass_is_visible: a built-in operator class (pg_opclass) is.
    OpclassIsVisible,
    /// pg_opfamily_is_visible, pg_conversion_is_visible, pg_ts_*_is_visible: the
    /// database has no operator families, conversions or text search objects, so no OID
    /// names one (NULL, as PostgreSQL answers for an OID that names nothing).
    NothingIsVisible,
    /// pg_get_function_arguments, pg_get_function_result: pg_proc keeps no signatures
    /// yet (they are arrays of types), so NULL.
    FunctionSignature,
    /// pg_get_function_sqlbody: no function has a SQL-standard body (there is no CREATE
    /// FUNCTION), so NULL.
    FunctionBody,
    /// pg_tablespace_location: the built-in tablespaces are in the data directory, which
    /// PostgreSQL shows as an empty location.
    TablespaceLocation,
    /// pg_database_size(name | oid): the bytes of the data directory (every file of the
    /// one database: control file, redo logs, checkpoint images), NULL for another
    /// database.
    DatabaseSize,
    /// `current_setting(name [, missing_ok])` with a name that is not a constant: looked
    /// up in the session's settings as the statement was compiled (`settings`), as
    /// PostgreSQL's is stable within a statement.
    Setting {
        missing_ok: bool,
    },
}

impl CatalogFn {
    /// The function `name` called with `arguments` arguments, with its minimum and
    /// maximum number of arguments; None if it is no catalog function.
    pub(crate) fn named(name: &str) -> Option<(CatalogFn, usize, usize)> {
        Some(match name {
            "to_regclass" => (CatalogFn::ToReg(CatalogType::RegClass), 1, 1),
            "to_regtype" => (CatalogFn::ToReg(CatalogType::RegType), 1, 1),
            "to_regnamespace" => (CatalogFn::ToReg(CatalogType::RegNamespace), 1, 1),
            "to_regproc" => (CatalogFn::ToReg(CatalogType::RegProc), 1, 1),
            "pg_table_is_visible" => (CatalogFn::TableIsVisible, 1, 1),
            "pg_type_is_visible" => (CatalogFn::TypeIsVisible, 1, 1),
            "pg_collation_is_visible" => (CatalogFn::CollationIsVisible, 1, 1),
            "format_type" => (CatalogFn::FormatType, 2, 2),
            "pg_get_expr" => (CatalogFn::GetExpr, 2, 3),
            "pg_get_constraintdef" => (CatalogFn::GetConstraintDef, 1, 2),
            "pg_get_indexdef" => (CatalogFn::GetIndexDef, 1, 3),
            "pg_get_viewdef" => (CatalogFn::GetViewDef, 1, 2),
            "pg_get_serial_sequence" => (CatalogFn::GetSerialSequence, 2, 2),
            "pg_get_userbyid" => (CatalogFn::GetUserById, 1, 1),
            "obj_description" => (CatalogFn::ObjDescription, 1, 2),
            "col_description" => (CatalogFn::ColDescription, 2, 2),
            "shobj_description" => (CatalogFn::Description, 2, 2),
            "has_table_privilege"
            | "has_schema_privilege"
            | "has_database_privilege"
            | "has_sequence_privilege"
            | "has_function_privilege" => (CatalogFn::HasPrivilege, 2, 3),
            "pg_get_function_sqlbody" => (CatalogFn::FunctionBody, 1, 1),
            "pg_tablespace_location" => (CatalogFn::TablespaceLocation, 1, 1),
            "pg_database_size" => (CatalogFn::DatabaseSize, 1, 1),
            "pg_encoding_to_char" => (CatalogFn::EncodingToChar, 1, 1),
            "quote_ident" => (CatalogFn::QuoteIdent, 1, 1),
            "pg_get_triggerdef" | "pg_get_ruledef" => (CatalogFn::NoSuchObject, 1, 2),
            "pg_get_statisticsobjdef_columns" => (CatalogFn::NoSuchObject, 1, 1),
            "pg_relation_is_publishable" => (CatalogFn::IsPublishable, 1, 1),
            "pg_table_size" | "pg_relation_size" | "pg_total_relation_size" | "pg_indexes_size" => {
                (CatalogFn::RelationSize, 1, 2)
            }
            "pg_size_pretty" => (CatalogFn::SizePretty, 1, 1),
            "pg_function_is_visible" => (CatalogFn::FunctionIsVisible, 1, 1),
            "pg_operator_is_visible" => (CatalogFn::OperatorIsVisible, 1, 1),
            "pg_opclass_is_visible" => (CatalogFn::OpclassIsVisible, 1, 1),
            "pg_opfamily_is_visible"
            | "pg_conversion_is_visible"
            | "pg_ts_config_is_visible"
            | "pg_ts_dict_is_visible"
            | "pg_ts_parser_is_visible"
            | "pg_ts_template_is_visible" => (CatalogFn::NothingIsVisible, 1, 1),
            "pg_get_function_arguments" | "pg_get_function_result" => (CatalogFn::FunctionSignature, 1, 1),
            _ => return None,
        })
    }

    /// The type of its values.
    pub(crate) fn data_type(self) -> DataType {
        let text = DataType::Text { max_chars: None };
        match self {
            CatalogFn::RegIn(t) | CatalogFn::ToReg(t) => DataType::Catalog(t),
            CatalogFn::TableIsVisible
            | CatalogFn::TypeIsVisible
            | CatalogFn::CollationIsVisible
            | CatalogFn::HasPrivilege
            | CatalogFn::IsPublishable
            | CatalogFn::FunctionIsVisible
            | CatalogFn::OperatorIsVisible
            | CatalogFn::OpclassIsVisible
            | CatalogFn::NothingIsVisible => DataType::Bool,
            CatalogFn::RelationSize | CatalogFn::DatabaseSize => DataType::Int,
            CatalogFn::GetUserById | CatalogFn::EncodingToChar => DataType::Catalog(CatalogType::Name),
            _ => text,
        }
    }
}

/// A call of a catalog function, with what it reads.
#[derive(Clone)]
pub(crate) struct CatalogCall {
    pub func: CatalogFn,
    pub db: Weak<DbShared>,
    /// The session's user: the owner of everything (role OID 10).
    pub user: String,
    /// The name the session's client connected to the database by.
    pub database: String,
    /// `CatalogFn::Setting`'s settings, by lowercase name.
    pub settings: Option<std::sync::Arc<std::collections::BTreeMap<String, String>>>,
    /// The calling session (whose temporary relations are visible to it).
    pub sid: u64,
    /// The schemas of the session's search path that exist, in order (`namespaces`).
    pub path: Vec<String>,
}

impl std::fmt::Debug for CatalogCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.func)
    }
}

impl PartialEq for CatalogCall {
    fn eq(&self, other: &CatalogCall) -> bool {
        self.func == other.func && self.user == other.user
    }
}

fn int_arg(args: &[Value], i: usize) -> DbResult<Option<i64>> {
    match args.get(i) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Int(v)) => Ok(Some(*v)),
        Some(Value::Text(t)) => t
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| DbError::TypeMismatch { expected: "oid".into(), value: t.clone() }),
        Some(other) => Err(DbError::TypeMismatch { expected: "oid".into(), value: other.to_string() }),
    }
}

impl CatalogCall {
    fn objects(&self) -> DbResult<Objects> {
        let db = self
            .db
            .upgrade()
            .ok_or_else(|| DbError::Unsupported("the catalog of a closed database".into()))?;
        Ok(Objects { path: Some(self.path.clone()), ..Objects::load_for(&db, self.sid) })
    }

    /// Runs the call on its evaluated arguments.
    pub(crate) fn call(&self, args: &[Value]) -> DbResult<Value> {
        // Strict, as PostgreSQL's are: a NULL argument gives NULL (the optional `pretty`
        // flags aside).
        let required = match self.func {
            CatalogFn::GetExpr
            | CatalogFn::GetIndexDef
            | CatalogFn::GetConstraintDef
            | CatalogFn::GetViewDef => 1,
            CatalogFn::FormatType => 1,
            _ => args.len(),
        };
        if args.iter().take(required).any(Value::is_null) {
            return Ok(Value::Null);
        }
        let text = |s: String| Ok(Value::Text(s));
        match self.func {
            CatalogFn::RegIn(ty) | CatalogFn::ToReg(ty) => {
                let name = match &args[0] {
                    Value::Int(oid) => return Ok(Value::Int(*oid)),
                    other => other.to_string(),
                };
                match lookup(&self.objects()?, ty, &name)? {
                    Some(oid) => Ok(Value::Int(oid)),
                    None if matches!(self.func, CatalogFn::ToReg(_)) => Ok(Value::Null),
                    None => Err(not_found(ty, &name)),
                }
            }
            CatalogFn::RegOut(ty) => match &args[0] {
                Value::Int(oid) => text(object_name(&self.objects()?, ty, *oid)),
                other => text(other.to_string()),
            },
            CatalogFn::TableIsVisible => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                let objects = self.objects()?;
                let relations = objects.relations();
                let Some(r) = relations.iter().find(|r| r.oid == oid) else { return Ok(Value::Null) };
                // The search path is the session's pg_temp, pg_catalog, public: another
                // session's temporary relations are not in it, and a temporary relation
                // hides a permanent one of its name.
                let hidden_by_temporary =
                    || relations.iter().any(|o| o.temp_of == Some(self.sid) && o.name == r.name);
                let visible = match r.temp_of {
                    Some(owner) => owner == self.sid,
                    None if !r.is_user() => {
                        r.namespace == crate::catalog::PG_CATALOG_OID || !hidden_by_temporary()
                    }
                    // A user's relation: its schema on the path, no relation of its name in
                    // a schema before it (`namespaces`).
                    None => {
                        let path = objects.path_oids();
                        match path.iter().position(|&p| p == r.namespace) {
                            None => false,
                            Some(at) => {
                                !hidden_by_temporary()
                                    && !relations.iter().any(|o| {
                                        o.temp_of.is_none()
                                            && o.name == r.name
                                            && path[..at].contains(&o.namespace)
                                    })
                            }
                        }
                    }
                };
                Ok(Value::Bool(visible))
            }
            CatalogFn::TypeIsVisible => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                Ok(builtin_type(oid).map_or(Value::Null, |_| Value::Bool(true)))
            }
            CatalogFn::CollationIsVisible => Ok(Value::Bool(true)),
            CatalogFn::FormatType => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                text(format_type(oid, int_arg(args, 1)?))
            }
            // pg_attrdef.adbin and pg_constraint.conbin hold the expression's SQL text
            // (the database keeps no parse trees), which is what pg_get_expr prints.
            CatalogFn::GetExpr => text(args[0].to_string()),
            CatalogFn::GetConstraintDef => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                let objects = self.objects()?;
                let found = objects
                    .tables
                    .iter()
                    .flat_map(|t| constraints_of(&objects, t))
                    .find(|c| c.oid == oid)
                    .map(|c| match (&c.check, args.get(1)) {
                        // Pretty-printed, a condition loses its own parentheses.
                        (Some(check), Some(Value::Bool(true))) => format!("CHECK ({check})"),
                        _ => c.definition,
                    });
                Ok(found.map_or(Value::Null, Value::Text))
            }
            CatalogFn::GetIndexDef => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                let column = int_arg(args, 1)?.unwrap_or(0);
                let objects = self.objects()?;
                let Some(relation) = objects.relation_by_oid(oid) else { return Ok(Value::Null) };
                let (Some(table), Some((columns, _, _))) =
                    (relation.table.as_deref(), relation.index_shape())
                else {
                    return Ok(Value::Null);
                };
                if column > 0 {
                    let name = columns.get(column as usize - 1).map(|&c| quote_ident(&table.columns[c].name));
                    return text(name.unwrap_or_default());
                }
                Ok(crate::catalog::relations::index_definition(&relation).map_or(Value::Null, Value::Text))
            }
            CatalogFn::GetViewDef => {
                let objects = self.objects()?;
                let table = match &args[0] {
                    Value::Int(oid) => objects.relation_by_oid(*oid).and_then(|r| r.table),
                    other => objects.table(&other.to_string()).cloned(),
                };
                // The text with the names it reads as they are now (RENAME TO, RENAME COLUMN).
                let definition =
                    table.filter(|t| t.view.is_some()).map(|t| crate::sql::stored_views::definition_now(&t));
                Ok(definition.map_or(Value::Null, |q| Value::Text(format!(" {q};"))))
            }
            CatalogFn::GetSerialSequence => {
                let (table, column) = (args[0].to_string(), args[1].to_string());
                let table = table.rsplit('.').next().unwrap_or(&table).trim_matches('"').to_string();
                let objects = self.objects()?;
                if objects.table(&table).is_none() {
                    return Err(DbError::UnknownTable(table));
                }
                let owned = objects.tables.iter().find(|t| {
                    t.sequence
                        .as_ref()
                        .and_then(|s| s.owned_by.as_ref())
                        .is_some_and(|(t, c)| *t == table && *c == column)
                });
                Ok(owned.map_or(Value::Null, |s| {
                    let (schema, name) = crate::namespaces::split(&s.name);
                    Value::Text(format!("{}.{}", quote_ident(schema), quote_ident(name)))
                }))
            }
            CatalogFn::GetUserById => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                text(match oid {
                    OWNER_OID => self.user.clone(),
                    crate::catalog::DATABASE_OWNER_OID => "pg_database_owner".into(),
                    _ => format!("unknown (OID={oid})"),
                })
            }
            CatalogFn::Description => Ok(Value::Null),
            CatalogFn::ObjDescription | CatalogFn::ColDescription => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                // obj_description(oid, catalog): pg_class's objects have the comments
                // of COMMENT ON, and the built-in operators PostgreSQL's descriptions.
                let catalog =
                    args.get(1).filter(|_| self.func == CatalogFn::ObjDescription).map(|c| c.to_string());
                match catalog.as_deref().map(|c| c.trim_start_matches("pg_catalog.")) {
                    None | Some("pg_class") => {}
                    Some("pg_operator") => {
                        let operator = OPERATORS.iter().find(|o| o.oid == oid);
                        return Ok(operator.map_or(Value::Null, |o| Value::Text(o.description.into())));
                    }
                    Some(_) => return Ok(Value::Null),
                }
                // A table, view or sequence (an index's comment is none: not kept).
                let relation = self.objects()?.relation_by_oid(oid).filter(|r| r.index.is_none());
                let Some(table) = relation.and_then(|r| r.table) else {
                    return Ok(Value::Null);
                };
                let comment = match self.func {
                    CatalogFn::ObjDescription => table.comment.clone(),
                    _ => {
                        let attnum = int_arg(args, 1)?.unwrap_or(0);
                        table
                            .column_comments
                            .iter()
                            .find(|(c, _)| *c as i64 + 1 == attnum)
                            .map(|(_, text)| text.clone())
                    }
                };
                Ok(comment.map_or(Value::Null, Value::Text))
            }
            CatalogFn::HasPrivilege => Ok(Value::Bool(true)),
            CatalogFn::EncodingToChar => {
                let encoding = int_arg(args, 0)?.unwrap_or(-1);
                text(if encoding == 6 { "UTF8".into() } else { String::new() })
            }
            CatalogFn::QuoteIdent => text(quote_ident(&args[0].to_string())),
            CatalogFn::NoSuchObject => Ok(Value::Null),
            CatalogFn::IsPublishable => Ok(Value::Bool(false)),
            CatalogFn::RelationSize | CatalogFn::FunctionSignature | CatalogFn::FunctionBody => {
                Ok(Value::Null)
            }
            CatalogFn::TablespaceLocation => text(String::new()),
            CatalogFn::DatabaseSize => {
                let db = self
                    .db
                    .upgrade()
                    .ok_or_else(|| DbError::Unsupported("the catalog of a closed database".into()))?;
                let this_database = match &args[0] {
                    Value::Int(oid) => *oid == crate::catalog::DATABASE_OID,
                    name => name.to_string() == self.database,
                };
                if !this_database {
                    return Ok(Value::Null);
                }
                Ok(Value::Int(i64::try_from(directory_bytes(&db.dir)?).unwrap_or(i64::MAX)))
            }
            CatalogFn::Setting { missing_ok } => {
                let name = args[0].to_string().to_ascii_lowercase();
                match self.settings.as_ref().and_then(|s| s.get(&name)) {
                    Some(value) => text(value.clone()),
                    None if missing_ok => Ok(Value::Null),
                    None => Err(DbError::UnknownParameter(args[0].to_string())),
                }
            }
            CatalogFn::FunctionIsVisible => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                let known = relations::function_names()
                    .iter()
                    .chain(CAST_FUNCTIONS.iter())
                    .any(|n| object_oid(ObjectKind::Function, n) == oid);
                Ok(if known { Value::Bool(true) } else { Value::Null })
            }
            CatalogFn::OperatorIsVisible => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                Ok(if OPERATORS.iter().any(|o| o.oid == oid) { Value::Bool(true) } else { Value::Null })
            }
            CatalogFn::OpclassIsVisible => {
                let oid = int_arg(args, 0)?.unwrap_or(0);
                Ok(if relations::is_opclass(oid) { Value::Bool(true) } else { Value::Null })
            }
            CatalogFn::NothingIsVisible => Ok(Value::Null),
            CatalogFn::SizePretty => {
                let bytes = int_arg(args, 0)?.unwrap_or(0);
                text(size_pretty(bytes))
            }
        }
    }
}

/// PostgreSQL's pg_size_pretty: bytes under 10 kB, then kB, MB, GB, TB, each kept
/// under 20 units with one extra bit for rounding half away from zero (PostgreSQL's
/// algorithm, so the text is the same).
fn size_pretty(bytes: i64) -> String {
    const LIMIT: i64 = 10 * 1024;
    const LIMIT2: i64 = LIMIT * 2 - 1;
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    if bytes.abs() < LIMIT {
        return format!("{bytes} bytes");
    }
    let mut size = bytes >> 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < LIMIT2 || unit == "TB" {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    unreachable!("the loop returns at TB")
}

/// The bytes of the files under `dir`, its subdirectories' included.
fn directory_bytes(dir: &std::path::Path) -> DbResult<u64> {
    let mut total = 0;
    let read = |e: std::io::Error| DbError::storage("read the size of", dir, e);
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        let kind = entry.file_type().map_err(read)?;
        if kind.is_dir() {
            total += directory_bytes(&entry.path())?;
        } else if kind.is_file() {
            total += entry.metadata().map_err(read)?.len();
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::size_pretty;

    #[test]
    fn sizes_print_in_postgresqls_units() {
        assert_eq!(size_pretty(0), "0 bytes");
        assert_eq!(size_pretty(10239), "10239 bytes");
        assert_eq!(size_pretty(10240), "10 kB");
        assert_eq!(size_pretty(1 << 20), "1024 kB");
        assert_eq!(size_pretty(10 << 20), "10 MB");
        assert_eq!(size_pretty(20_447_232), "20 MB");
        assert_eq!(size_pretty(20_971_520), "20 MB");
    }
}
