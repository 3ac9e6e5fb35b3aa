//! PostgreSQL's system catalog: `pg_catalog` and `information_schema`, read with plain
//! SQL by the clients that introspect a database (psql's `\d`, PgJDBC's
//! DatabaseMetaData, SQLAlchemy's inspector).
//!
//! Like the `v$` views (`views`), a catalog relation has a fixed schema and no stored
//! rows: each statement that reads one builds its rows from the table schemas committed
//! at that moment (`relations`), and the planner treats it as any other relation (joins,
//! subqueries, WHERE, ORDER BY). The catalog is read-only.
//!
//! # Names
//! `pg_catalog.pg_class` and `pg_class` are the same relation: pg_catalog comes first in
//! the search path, before public, as in PostgreSQL. `information_schema.tables` must be
//! qualified (a user's table may be called `tables`). Internally an information_schema
//! relation is called `information_schema.<name>`, which no user table can be.
//!
//! # Object identifiers
//! The database keeps no numeric ids in its schemas, so a user object's OID is derived
//! from what identifies it: `object_oid(kind, name)` hashes the kind of object and its
//! full name (a table's name; an index's or constraint's table and name; a default's
//! table and column) with FNV-1a into PostgreSQL's range of user OIDs, 16384 up to
//! 2^31 - 1. An OID is thus the same in every query, after any DDL of other objects and
//! across restarts, and changes only when the object is renamed (or dropped and created
//! again under another name). Two objects of one kind could in principle hash alike
//! (about one chance in 2^31 per pair): `regclass` then finds the first by name order.
//! Built-in objects (namespaces, types, access methods, the catalog's own relations)
//! have PostgreSQL 15's OIDs.
//!
//! # Catalog types
//! OIDs are `DataType::Catalog(Oid)` (and the `reg*` aliases) holding integers; `name`
//! and `"char"` hold text. A `reg*` value is shown as the object's name: a statement's
//! result passes through `name_objects`, PostgreSQL's output function for them.
//!
//! # Arrays
//! The catalog's array columns have PostgreSQL's types (`relations::column_type`):
//! `conkey` a smallint[] (an int8 array here, as every integer), `indkey` and `indclass`
//! an int2vector / oidvector subscripted from 0 and printed `1 2`, `reloptions` and the
//! privilege lists text[] (NULL: nothing granted).
//!
//! # What the layer above tells it
//! pg_cursors lists the cursors a wire server keeps for its client (`OpenCursor`): the
//! database runs their queries but does not keep them.

mod deparse;
mod functions;
mod operators;
mod relations;

use std::sync::Arc;

pub(crate) use functions::{CatalogCall, CatalogFn};
pub(crate) use operators::CAST_FUNCTIONS;
pub use relations::{is_relation, relation_names, schema};

use crate::database::DbShared;
use crate::error::{DbError, DbResult};
use crate::schema::TableSchema;
use crate::value::{CatalogType, DataType, ElemType, Value};

/// A cursor the layer above keeps open for its client (the wire server's DECLAREd
/// cursors), as pg_cursors shows it. The database runs a cursor's query but does not
/// keep the cursor, so its keeper tells the session (`Session::set_open_cursors`)
/// whenever its set of cursors changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenCursor {
    pub name: String,
    /// The statement that declared it, as the client sent it.
    pub statement: String,
    /// WITH HOLD.
    pub holdable: bool,
    /// BINARY.
    pub binary: bool,
    /// SCROLL (forward-only cursors here: false).
    pub scrollable: bool,
    /// When it was declared (`datetime::now()`).
    pub created: i64,
}

impl crate::database::Session {
    /// Tells the session which cursors its client has open now (pg_cursors).
    pub fn set_open_cursors(&mut self, cursors: Vec<OpenCursor>) {
        self.open_cursors = cursors;
    }
}

/// Namespace OIDs, PostgreSQL's.
pub const PG_CATALOG_OID: i64 = 11;
pub const PG_TOAST_OID: i64 = 99;
pub const PUBLIC_OID: i64 = 2200;
pub const INFORMATION_SCHEMA_OID: i64 = 13207;
/// The role that owns everything (PostgreSQL's bootstrap superuser): the session's user.
pub const OWNER_OID: i64 = 10;
/// PostgreSQL's pg_database_owner role, which owns schema public.
pub const DATABASE_OWNER_OID: i64 = 6171;
/// The OIDs of the access methods an index and a table are.
pub const BTREE_AM_OID: i64 = 403;
pub const HEAP_AM_OID: i64 = 2;
/// The default collation.
pub const DEFAULT_COLLATION_OID: i64 = 100;
/// The one database's OID.
pub const DATABASE_OID: i64 = 5;
/// The first OID of a user object, PostgreSQL's FirstNormalObjectId.
pub const FIRST_USER_OID: i64 = 16384;

/// What an OID identifies, for `object_oid`: each kind hashes apart, so a table and a
/// constraint of one name do not share an OID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// A table, view or sequence, by name.
    Relation,
    /// An index, by `table.index`.
    Index,
    /// A constraint, by `table.constraint`.
    Constraint,
    /// A column default, by `table.column`.
    Default,
    /// A function, by name.
    Function,
    /// A view's rule (`_RETURN`, pg_rewrite), by the view's name.
    Rule,
    /// A table's or view's row type (what `pg_typeof(t)` of its whole row names), by
    /// the relation's name.
    RowType,
    /// A schema (a session's `pg_temp_<sid>`), by name.
    Namespace,
}

impl ObjectKind {
    fn tag(self) -> &'static str {
        match self {
            ObjectKind::Relation => "relation",
            ObjectKind::Index => "index",
            ObjectKind::Constraint => "constraint",
            ObjectKind::Default => "default",
            ObjectKind::Function => "function",
            ObjectKind::Rule => "rule",
            ObjectKind::RowType => "row type",
            ObjectKind::Namespace => "namespace",
        }
    }
}

/// The OID of a user object: FNV-1a of its kind and name, in 16384..2^31 (see the
/// module's documentation).
pub fn object_oid(kind: ObjectKind, name: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in kind.tag().bytes().chain([0u8]).chain(name.bytes()) {
        hash ^= byte as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let span = (1u64 << 31) - FIRST_USER_OID as u64;
    FIRST_USER_OID + (hash % span) as i64
}

/// A built-in type as pg_type shows it.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinType {
    pub oid: i64,
    /// pg_type.typname.
    pub name: &'static str,
    /// How `format_type` prints it without a modifier.
    pub sql_name: &'static str,
    pub len: i64,
    pub by_value: bool,
    pub category: char,
    pub preferred: bool,
    /// The OID of its array type (which the database does not have yet).
    pub array: i64,
    pub collation: i64,
    pub align: char,
    pub storage: char,
}

const fn builtin(
    oid: i64,
    name: &'static str,
    sql_name: &'static str,
    len: i64,
    category: char,
    array: i64,
    collation: i64,
) -> BuiltinType {
    let by_value = len > 0 && len <= 8 && oid != 19 && oid != 2950 && oid != 1186;
    let align = match len {
        1 => 'c',
        2 => 's',
        4 => 'i',
        8 | 16 => 'd',
        64 => 'c',
        _ => 'i',
    };
    let storage = if len == -1 { 'x' } else { 'p' };
    let preferred = matches!(oid, 16 | 25 | 26 | 701 | 1184 | 1186);
    BuiltinType { oid, name, sql_name, len, by_value, category, preferred, array, collation, align, storage }
}

/// Every type a value of the database can have, and the catalog types, with PostgreSQL
/// 15's OIDs; then the arrays of them. int2 and int4 are here because clients send parameters of them, though
/// the database keeps every integer as an int8.
pub const BUILTIN_TYPES: [BuiltinType; 48] = [
    builtin(16, "bool", "boolean", 1, 'B', 1000, 0),
    builtin(17, "bytea", "bytea", -1, 'U', 1001, 0),
    builtin(18, "char", "\"char\"", 1, 'Z', 1002, 0),
    builtin(19, "name", "name", 64, 'S', 1003, 950),
    builtin(20, "int8", "bigint", 8, 'N', 1016, 0),
    builtin(21, "int2", "smallint", 2, 'N', 1005, 0),
    builtin(23, "int4", "integer", 4, 'N', 1007, 0),
    builtin(24, "regproc", "regproc", 4, 'N', 1008, 0),
    builtin(25, "text", "text", -1, 'S', 1009, 100),
    builtin(26, "oid", "oid", 4, 'N', 1028, 0),
    builtin(114, "json", "json", -1, 'U', 199, 0),
    builtin(700, "float4", "real", 4, 'N', 1021, 0),
    builtin(701, "float8", "double precision", 8, 'N', 1022, 0),
    builtin(1042, "bpchar", "bpchar", -1, 'S', 1014, 100),
    builtin(1043, "varchar", "character varying", -1, 'S', 1015, 100),
    builtin(1082, "date", "date", 4, 'D', 1182, 0),
    builtin(1083, "time", "time without time zone", 8, 'D', 1183, 0),
    builtin(1114, "timestamp", "timestamp without time zone", 8, 'D', 1115, 0),
    builtin(1184, "timestamptz", "timestamp with time zone", 8, 'D', 1185, 0),
    builtin(1186, "interval", "interval", 16, 'T', 1187, 0),
    builtin(1700, "numeric", "numeric", -1, 'N', 1231, 0),
    builtin(2205, "regclass", "regclass", 4, 'N', 2210, 0),
    builtin(2206, "regtype", "regtype", 4, 'N', 2211, 0),
    builtin(2950, "uuid", "uuid", 16, 'U', 2951, 0),
    builtin(3802, "jsonb", "jsonb", -1, 'U', 3807, 0),
    builtin(4089, "regnamespace", "regnamespace", 4, 'N', 4090, 0),
    // The catalog's vectors (pg_index.indkey, pg_proc.proargtypes): arrays from 0.
    builtin(22, "int2vector", "int2vector", -1, 'A', 1006, 0),
    builtin(30, "oidvector", "oidvector", -1, 'A', 1013, 0),
    // The array types of the element types a value may have (category 'A').
    builtin(1000, "_bool", "boolean[]", -1, 'A', 0, 0),
    builtin(1001, "_bytea", "bytea[]", -1, 'A', 0, 0),
    builtin(1003, "_name", "name[]", -1, 'A', 0, 0),
    builtin(1005, "_int2", "smallint[]", -1, 'A', 0, 0),
    builtin(1007, "_int4", "integer[]", -1, 'A', 0, 0),
    builtin(1009, "_text", "text[]", -1, 'A', 0, 100),
    builtin(1015, "_varchar", "character varying[]", -1, 'A', 0, 100),
    builtin(1016, "_int8", "bigint[]", -1, 'A', 0, 0),
    builtin(1021, "_float4", "real[]", -1, 'A', 0, 0),
    builtin(1022, "_float8", "double precision[]", -1, 'A', 0, 0),
    builtin(1028, "_oid", "oid[]", -1, 'A', 0, 0),
    builtin(1115, "_timestamp", "timestamp without time zone[]", -1, 'A', 0, 0),
    builtin(1182, "_date", "date[]", -1, 'A', 0, 0),
    builtin(1183, "_time", "time without time zone[]", -1, 'A', 0, 0),
    builtin(1185, "_timestamptz", "timestamp with time zone[]", -1, 'A', 0, 0),
    builtin(1187, "_interval", "interval[]", -1, 'A', 0, 0),
    builtin(1231, "_numeric", "numeric[]", -1, 'A', 0, 0),
    builtin(199, "_json", "json[]", -1, 'A', 0, 0),
    builtin(2951, "_uuid", "uuid[]", -1, 'A', 0, 0),
    builtin(3807, "_jsonb", "jsonb[]", -1, 'A', 0, 0),
];

/// Pseudo-types a value may be reported as by `pg_typeof` (an anonymous record, a quoted
/// literal not yet given a type), named by `regtype` but no rows of pg_type here.
pub const PSEUDO_TYPES: [(i64, &str); 2] = [(705, "unknown"), (2249, "record")];

/// The built-in type with OID `oid`.
pub fn builtin_type(oid: i64) -> Option<&'static BuiltinType> {
    BUILTIN_TYPES.iter().find(|t| t.oid == oid)
}

/// The OID of a column or expression of type `ty` (as the wire describes it too).
pub fn type_oid(ty: DataType) -> i64 {
    match ty {
        DataType::Int => 20,
        DataType::Float => 701,
        DataType::Float4 => 700,
        DataType::Numeric(_) => 1700,
        DataType::Text { max_chars: Some(_) } => 1043,
        DataType::Text { max_chars: None } => 25,
        DataType::Char { .. } => 1042,
        DataType::Bool => 16,
        DataType::Date => 1082,
        DataType::Time => 1083,
        DataType::Timestamp => 1114,
        DataType::TimestampTz => 1184,
        DataType::Interval => 1186,
        DataType::Bytea => 17,
        DataType::Uuid => 2950,
        DataType::Json => 114,
        DataType::Jsonb => 3802,
        // PostgreSQL's array types (an integer array is int8[], as an integer is int8).
        DataType::Array(elem) => match elem {
            ElemType::Int => 1016,
            ElemType::Float => 1022,
            ElemType::Float4 => 1021,
            ElemType::Numeric => 1231,
            ElemType::Text => 1009,
            ElemType::Bool => 1000,
            ElemType::Date => 1182,
            ElemType::Time => 1183,
            ElemType::Timestamp => 1115,
            ElemType::TimestampTz => 1185,
            ElemType::Interval => 1187,
            ElemType::Bytea => 1001,
            ElemType::Uuid => 2951,
            ElemType::Json => 199,
            ElemType::Jsonb => 3807,
        },
        DataType::Catalog(c) => match c {
            CatalogType::Oid => 26,
            CatalogType::Name => 19,
            CatalogType::Char => 18,
            CatalogType::RegClass => 2205,
            CatalogType::RegType => 2206,
            CatalogType::RegProc => 24,
            CatalogType::RegNamespace => 4089,
            CatalogType::Int2Vector => 22,
            CatalogType::OidVector => 30,
        },
        DataType::Record(_) => 2249,
    }
}

/// PostgreSQL's type modifier of `ty` (pg_attribute.atttypmod): -1 for none.
pub fn type_modifier(ty: DataType) -> i64 {
    match ty {
        DataType::Text { max_chars: Some(n) } | DataType::Char { len: Some(n) } => n as i64 + 4,
        DataType::Numeric(Some(spec)) => spec.typmod() as i64,
        _ => -1,
    }
}

/// `format_type(oid, typmod)`: the SQL name of a type with its modifier, `???` for an
/// OID that is no type (as PostgreSQL prints it).
pub fn format_type(oid: i64, typmod: Option<i64>) -> String {
    let Some(ty) = builtin_type(oid) else { return "???".into() };
    // PostgreSQL's rule for a bare bpchar: `bpchar` when a modifier was given and is
    // none (-1: a column of type bpchar), `character` when none was asked about
    // (`format_type(oid, NULL)`, `regtype`).
    if oid == 1042 && typmod.is_some_and(|m| m < 0) {
        return "bpchar".into();
    }
    let typmod = typmod.filter(|&m| m >= 0);
    match (oid, typmod) {
        (1043, Some(m)) => format!("character varying({})", m - 4),
        (1042, Some(m)) => format!("character({})", m - 4),
        (1042, None) => "character".into(),
        (1700, Some(m)) => {
            let m = m - 4;
            format!("numeric({},{})", (m >> 16) & 0xffff, m & 0x7ff)
        }
        _ => ty.sql_name.into(),
    }
}

/// The type named `text` as a cast or `to_regtype` reads it (`integer`, `int4`,
/// `character varying`, `pg_catalog.text`, `"char"`), or None.
pub fn type_named(text: &str) -> Option<i64> {
    let text = text.trim();
    let text = text.strip_prefix("pg_catalog.").unwrap_or(text);
    // A modifier names the same type (`varchar(10)`).
    let base = text.split('(').next().unwrap_or(text).trim().to_ascii_lowercase();
    if base == "\"char\"" {
        return Some(18);
    }
    let base = base.trim_matches('"');
    let oid = match base {
        "boolean" => 16,
        "smallint" => 21,
        "integer" | "int" => 23,
        "bigint" => 20,
        "real" => 700,
        "double precision" | "float" => 701,
        "character varying" => 1043,
        "character" => 1042,
        "decimal" => 1700,
        "time" | "time without time zone" => 1083,
        "timestamp" | "timestamp without time zone" => 1114,
        "timestamp with time zone" => 1184,
        other => return BUILTIN_TYPES.iter().find(|t| t.name == other && t.oid != 18).map(|t| t.oid),
    };
    Some(oid)
}

/// The catalog relation a FROM clause's `name` is, by its internal name: `pg_class` and
/// `pg_catalog.pg_class` are `pg_class` (pg_catalog is first in the search path),
/// `information_schema.tables` is `information_schema.tables`. None: a user's relation.
/// A name qualified by a catalog schema that has no such relation does not exist.
pub(crate) fn relation_named(name: &sqlparser::ast::ObjectName) -> DbResult<Option<String>> {
    let parts: Vec<String> =
        name.0.iter().map(|p| p.as_ident().map(crate::sql::expr::ident_name).unwrap_or_default()).collect();
    match parts.as_slice() {
        [one] => Ok(relations::is_relation(one).then(|| one.clone()).filter(|n| !n.contains('.'))),
        [schema, one] if schema == "pg_catalog" => match relations::is_relation(one) && !one.contains('.') {
            true => Ok(Some(one.clone())),
            false => Err(DbError::UnknownTable(format!("pg_catalog.{one}"))),
        },
        [schema, one] if schema == "information_schema" => {
            let internal = format!("information_schema.{one}");
            match relations::is_relation(&internal) {
                true => Ok(Some(internal)),
                false => Err(DbError::UnknownTable(internal)),
            }
        }
        _ => Ok(None),
    }
}

/// A relation of pg_class.
#[derive(Clone, Debug)]
pub(crate) struct Relation {
    pub oid: i64,
    pub name: String,
    pub namespace: i64,
    /// pg_class.relkind: r, v, S, i.
    pub kind: char,
    pub table: Option<Arc<TableSchema>>,
    /// For an index: which of its table's (None: the primary key's).
    pub index: Option<Option<usize>>,
    /// The session whose temporary relation (or index of one) this is.
    pub temp_of: Option<u64>,
}

impl Relation {
    /// A relation of the user's, permanent or temporary (not the catalog's).
    pub fn is_user(&self) -> bool {
        !matches!(self.namespace, PG_CATALOG_OID | INFORMATION_SCHEMA_OID | PG_TOAST_OID)
    }

    /// Its schema's name (`pg_temp_<sid>` for a temporary relation).
    pub fn schema_name(&self) -> String {
        match self.temp_of {
            Some(sid) => crate::temp_tables::namespace(sid),
            None if self.is_user() => {
                let table = self.table.as_ref().map_or("", |t| t.name.as_str());
                crate::namespaces::split(table).0.to_string()
            }
            None => {
                NAMESPACES.iter().find(|(o, _)| *o == self.namespace).map_or("public", |(_, n)| n).to_string()
            }
        }
    }

    /// An index's columns (into its table's) and whether it is unique and primary.
    pub fn index_shape(&self) -> Option<(Vec<usize>, bool, bool)> {
        let table = self.table.as_ref()?;
        match self.index? {
            None => Some((table.primary_key.clone(), true, true)),
            Some(i) => table.indexes.get(i).map(|ix| (ix.columns.clone(), ix.unique, false)),
        }
    }
}

/// The name of a table's primary key (its index and constraint), PostgreSQL's.
pub fn primary_key_name(table: &TableSchema) -> String {
    table.primary_key_name()
}

/// The user's schemas committed now, by name.
pub(crate) struct Objects {
    pub tables: Vec<Arc<TableSchema>>,
    /// The schemas of the database (`namespaces`), public among them unless dropped.
    pub namespaces: Vec<Arc<crate::namespaces::Namespace>>,
    /// The session looking, whose temporary relations a name finds first.
    pub sid: Option<u64>,
    /// The schemas of its search path that exist, in order (None: public alone).
    pub path: Option<Vec<String>>,
}

impl Objects {
    pub fn load(db: &DbShared) -> Objects {
        let (tables, namespaces) =
            db.read_catalog(|st| (st.schemas().cloned().collect(), st.namespaces().cloned().collect()));
        Objects { tables, namespaces, sid: None, path: None }
    }

    /// As `load`, for session `sid`.
    pub fn load_for(db: &DbShared, sid: u64) -> Objects {
        Objects { sid: Some(sid), ..Objects::load(db) }
    }

    /// Every relation of pg_class: the user's (tables, views, sequences and their
    /// indexes) in name order, then the catalog's own.
    pub fn relations(&self) -> Vec<Relation> {
        let mut out = Vec::new();
        for table in &self.tables {
            let kind = if table.view.is_some() {
                'v'
            } else if table.sequence.is_some() {
                'S'
            } else {
                'r'
            };
            // A temporary relation is shown by its written name in its session's schema.
            let temp_of = crate::temp_tables::split(&table.name).map(|(sid, _)| sid);
            let namespace = namespace_oid(crate::namespaces::split(&table.name).0);
            out.push(Relation {
                oid: object_oid(ObjectKind::Relation, &table.name),
                name: crate::temp_tables::visible_name(&table.name).to_string(),
                namespace,
                kind,
                table: Some(table.clone()),
                index: None,
                temp_of,
            });
            if kind != 'r' {
                continue;
            }
            let indexes = (!table.rowid)
                .then(|| (None, primary_key_name(table)))
                .into_iter()
                .chain(table.indexes.iter().enumerate().map(|(i, ix)| (Some(i), ix.name.clone())));
            for (index, name) in indexes {
                out.push(Relation {
                    oid: index_oid(&table.name, &name),
                    name: crate::temp_tables::visible_name(&name).to_string(),
                    namespace,
                    kind: 'i',
                    table: Some(table.clone()),
                    index: Some(index),
                    temp_of,
                });
            }
        }
        out.extend(relations::catalog_relations());
        out
    }

    pub fn relation_by_oid(&self, oid: i64) -> Option<Relation> {
        self.relations().into_iter().find(|r| r.oid == oid)
    }

    pub fn table(&self, name: &str) -> Option<&Arc<TableSchema>> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The OIDs of the search path's schemas, in order.
    pub fn path_oids(&self) -> Vec<i64> {
        match &self.path {
            Some(path) => path.iter().map(|s| namespace_oid(s)).collect(),
            None => vec![PUBLIC_OID],
        }
    }

    /// Every schema: (oid, name), the system's, the database's, then the sessions'
    /// temporary ones.
    pub fn all_namespaces(&self) -> Vec<(i64, String)> {
        let system =
            NAMESPACES.iter().filter(|(oid, _)| *oid != PUBLIC_OID).map(|(o, n)| (*o, n.to_string()));
        let own = self.namespaces.iter().map(|n| (namespace_oid(&n.name), n.name.clone()));
        system.chain(own).chain(self.temp_namespaces()).collect()
    }

    /// The schemas of the sessions' temporary relations: (oid, name), each once.
    pub fn temp_namespaces(&self) -> Vec<(i64, String)> {
        let mut sids: Vec<u64> = self
            .tables
            .iter()
            .filter_map(|t| crate::temp_tables::split(&t.name).map(|(sid, _)| sid))
            .collect();
        sids.sort_unstable();
        sids.dedup();
        sids.into_iter().map(|sid| (temp_namespace_oid(sid), crate::temp_tables::namespace(sid))).collect()
    }
}

/// A user relation's stored name as PostgreSQL shows a relation outside the search
/// path: `app.t` (each part quoted if it must be); a relation of public or a temporary
/// one by its name alone.
pub fn qualified_name(stored: &str) -> String {
    match crate::namespaces::split(stored) {
        (schema, name) if schema == crate::namespaces::PUBLIC || crate::temp_tables::is_temporary(stored) => {
            quote_ident(name)
        }
        (schema, name) => format!("{}.{}", quote_ident(schema), quote_ident(name)),
    }
}

/// The OID of schema `name`: PostgreSQL's for its own (public's too), else made from
/// the name as every user object's is (a temporary schema's included).
pub fn namespace_oid(name: &str) -> i64 {
    match NAMESPACES.iter().find(|(_, n)| *n == name) {
        Some((oid, _)) => *oid,
        None => object_oid(ObjectKind::Namespace, name),
    }
}

/// The OID of session `sid`'s temporary schema, `pg_temp_<sid>`.
pub fn temp_namespace_oid(sid: u64) -> i64 {
    object_oid(ObjectKind::Namespace, &crate::temp_tables::namespace(sid))
}

pub fn index_oid(table: &str, index: &str) -> i64 {
    object_oid(ObjectKind::Index, &format!("{table}.{index}"))
}

pub fn constraint_oid(table: &str, constraint: &str) -> i64 {
    object_oid(ObjectKind::Constraint, &format!("{table}.{constraint}"))
}

/// The namespaces: (oid, name).
pub const NAMESPACES: [(i64, &str); 4] = [
    (PG_CATALOG_OID, "pg_catalog"),
    (PG_TOAST_OID, "pg_toast"),
    (PUBLIC_OID, "public"),
    (INFORMATION_SCHEMA_OID, "information_schema"),
];

/// An identifier as text names it (`"My Table"` keeps its case, `T` is `t`), and the
/// parts of a qualified name.
pub(crate) fn name_parts(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = text.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                current.push('"');
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut current)),
            c if quoted => current.push(c),
            c => current.extend(c.to_lowercase()),
        }
    }
    parts.push(current);
    parts
}

/// What a `reg*` cast or `to_reg*` finds for `text`.
/// The OID of the relation a FROM clause names `name` (a table, view or sequence, or a
/// catalog relation: `pg_class`, `information_schema.tables`).
pub(crate) fn relation_oid(db: &DbShared, name: &str) -> DbResult<Option<i64>> {
    if crate::temp_tables::is_temporary(name) {
        return Ok(Some(object_oid(ObjectKind::Relation, name)));
    }
    let written = match name.strip_prefix("information_schema.") {
        Some(relation) => format!("information_schema.{}", quote_ident(relation)),
        None => quote_ident(name),
    };
    lookup(&Objects::load(db), CatalogType::RegClass, &written)
}

pub(crate) fn lookup(objects: &Objects, ty: CatalogType, text: &str) -> DbResult<Option<i64>> {
    let trimmed = text.trim();
    if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
        // A number is the OID itself, as PostgreSQL reads it.
        return trimmed
            .parse::<i64>()
            .map(Some)
            .map_err(|_| DbError::TypeMismatch { expected: ty.sql_name().into(), value: text.into() });
    }
    Ok(match ty {
        CatalogType::RegClass => {
            let parts = name_parts(text);
            let (schema, name) = match parts.as_slice() {
                [name] => (None, name.as_str()),
                [schema, name] => (Some(schema.as_str()), name.as_str()),
                _ => return Ok(None),
            };
            let own_temp = objects.sid.map(temp_namespace_oid);
            let namespace = match schema {
                None => None,
                Some("pg_temp") => Some(own_temp.unwrap_or(0)),
                Some(s) => match objects.all_namespaces().into_iter().find(|(_, n)| n == s) {
                    Some((oid, _)) => Some(oid),
                    None => return Ok(None),
                },
            };
            // The search path: the session's pg_temp, pg_catalog, then public; another
            // session's temporary relations only by their schema's name.
            let mut found = objects
                .relations()
                .into_iter()
                .filter(|r| r.name == name)
                .filter(|r| r.temp_of.is_none() || namespace.is_some() || r.temp_of == objects.sid)
                .collect::<Vec<_>>();
            if namespace.is_none() {
                // Unqualified: pg_temp, pg_catalog, then the path's schemas in order; a
                // relation of a schema off the path is not found.
                let path = objects.path_oids();
                found
                    .retain(|r| Some(r.namespace) == own_temp || !r.is_user() || path.contains(&r.namespace));
                found.sort_by_key(|r| {
                    (
                        Some(r.namespace) != own_temp,
                        r.namespace != PG_CATALOG_OID,
                        path.iter().position(|&p| p == r.namespace),
                    )
                });
            }
            found.into_iter().find(|r| namespace.is_none_or(|n| n == r.namespace)).map(|r| r.oid)
        }
        CatalogType::RegType => type_named(text),
        CatalogType::RegNamespace => {
            let parts = name_parts(text);
            objects
                .all_namespaces()
                .into_iter()
                .find(|(_, n)| parts.len() == 1 && *n == parts[0])
                .map(|(oid, _)| oid)
        }
        CatalogType::RegProc => {
            let parts = name_parts(text);
            let name = parts.last().map(String::as_str).unwrap_or("");
            relations::function_names().contains(&name).then(|| object_oid(ObjectKind::Function, name))
        }
        CatalogType::Oid
        | CatalogType::Name
        | CatalogType::Char
        | CatalogType::Int2Vector
        | CatalogType::OidVector => None,
    })
}

/// The error for a `reg*` cast of a name that names nothing.
pub(crate) fn not_found(ty: CatalogType, text: &str) -> DbError {
    match ty {
        CatalogType::RegType => DbError::UndefinedType(text.to_string()),
        CatalogType::RegNamespace => DbError::UndefinedSchema(text.to_string()),
        CatalogType::RegProc => DbError::UndefinedFunction(text.to_string()),
        _ => DbError::UnknownTable(text.to_string()),
    }
}

/// The name a `reg*` value shows (PostgreSQL's output functions): the object's name,
/// qualified when it is not visible in the search path (never, here), the number when
/// it names nothing, `-` for 0.
pub(crate) fn object_name(objects: &Objects, ty: CatalogType, oid: i64) -> String {
    if oid == 0 && matches!(ty, CatalogType::RegClass | CatalogType::RegProc | CatalogType::RegType) {
        return "-".into();
    }
    let name = match ty {
        CatalogType::RegClass => objects.relation_by_oid(oid).map(|r| match r.table.as_ref() {
            // A relation of another schema than public shown qualified (PostgreSQL
            // qualifies one outside the search path).
            Some(t) if r.is_user() && r.kind != 'i' && !objects.path_oids().contains(&r.namespace) => {
                qualified_name(&t.name)
            }
            _ => quote_ident(&r.name),
        }),
        // regtypeout prints a bare bpchar as `character`.
        CatalogType::RegType if oid == 1042 => Some("character".into()),
        CatalogType::RegType => builtin_type(oid)
            .map(|t| format_type(t.oid, None))
            .or_else(|| PSEUDO_TYPES.iter().find(|(o, _)| *o == oid).map(|(_, name)| name.to_string()))
            .or_else(|| {
                objects
                    .tables
                    .iter()
                    .find(|t| object_oid(ObjectKind::RowType, &t.name) == oid)
                    .map(|t| quote_ident(&t.name))
            }),
        CatalogType::RegNamespace => {
            objects.all_namespaces().into_iter().find(|(o, _)| *o == oid).map(|(_, n)| quote_ident(&n))
        }
        CatalogType::RegProc => relations::function_names()
            .iter()
            .find(|n| object_oid(ObjectKind::Function, n) == oid)
            .map(|n| n.to_string()),
        CatalogType::Oid
        | CatalogType::Name
        | CatalogType::Char
        | CatalogType::Int2Vector
        | CatalogType::OidVector => None,
    };
    name.unwrap_or_else(|| oid.to_string())
}

/// An identifier as SQL writes it: quoted when it must be.
pub fn quote_ident(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Replaces the `reg*` values of a statement's result by their names, as PostgreSQL's
/// output functions show them; the other values stay.
pub(crate) fn name_objects(db: &DbShared, columns: &[Option<DataType>], rows: &mut [Vec<Value>]) {
    let named: Vec<(usize, CatalogType)> = columns
        .iter()
        .enumerate()
        .filter_map(|(i, ty)| match ty {
            Some(DataType::Catalog(c)) if c.is_oid() && *c != CatalogType::Oid => Some((i, *c)),
            _ => None,
        })
        .collect();
    if named.is_empty() || rows.is_empty() {
        return;
    }
    let objects = Objects::load(db);
    for row in rows {
        for &(i, ty) in &named {
            if let Some(Value::Int(oid)) = row.get(i) {
                row[i] = Value::Text(object_name(&objects, ty, *oid));
            }
        }
    }
}
