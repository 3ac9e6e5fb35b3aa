//! Schemas (PostgreSQL's namespaces: `CREATE SCHEMA app`) and the search path that
//! resolves an unqualified name.
//!
//! Where a schema's relations live: in the committed state beside every other relation,
//! under a stored name. A relation of `public` is stored under its own name (`t`), as it
//! was before schemas, so every data directory written before them reads unchanged; a
//! relation of schema `app` under `app.t` (`stored_name`); a temporary one under
//! `pg_temp_<sid>.t` (`temp_tables`). An index, a primary key and a SERIAL column's
//! sequence are named after their table's stored name, so they land in its schema too.
//! No permanent relation of `public` may have a `.` in its name (it would read as a
//! schema's), and no schema either (`check_relation_name`, `check_new_schema`).
//!
//! The schemas themselves (`Namespace`: name and owner) are part of the state
//! (`DbState::namespaces`): `public` is there from the start and may be dropped as in
//! PostgreSQL; CREATE, DROP and ALTER SCHEMA ... RENAME log their own change records
//! (`Change::CreateSchema`, `DropSchema`, `RenameSchema`), applied at commit and at
//! recovery alike, and checkpoint images from version 3 list them before the tables.
//!
//! Resolution (`Session::relation_name`): a qualified name is its schema's; an
//! unqualified one is the session's temporary relation of that name if any (pg_temp is
//! first), else the relation in the first schema of the session's `search_path` that has
//! it (`$user` meaning the schema named as the session's user, schemas that do not
//! exist skipped). A CREATE of an unqualified name goes into the first existing schema
//! of the path. While the database has no schema but `public` and the path names it,
//! the written name is the stored one: the commonest case costs no lookup.
//!
//! Must never: let a name resolve differently in a compiled statement than it would be
//! compiled now. A change of the path or of the schemas bumps the schema generation, and
//! a compiled statement is kept only while its table is still what its name means
//! (`Session::resolves_elsewhere`).

use std::sync::atomic::Ordering::Relaxed;

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};

/// The schema every database starts with, whose relations keep their bare names.
pub const PUBLIC: &str = "public";

/// PostgreSQL's default `search_path`.
pub const DEFAULT_SEARCH_PATH: &str = "\"$user\", public";

/// The schemas of the system, which no statement creates, drops or renames.
const SYSTEM_SCHEMAS: [&str; 3] = ["pg_catalog", "information_schema", "pg_toast"];

/// A schema of the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Namespace {
    pub name: String,
    /// The role that owns it (the creating session's user, or its AUTHORIZATION).
    pub owner: String,
}

impl Namespace {
    /// `public` as a new database has it (PostgreSQL 15's owner: pg_database_owner).
    pub fn public() -> Namespace {
        Namespace { name: PUBLIC.into(), owner: "pg_database_owner".into() }
    }
}

/// The stored name of relation `name` of schema `schema`.
pub fn stored_name(schema: &str, name: &str) -> String {
    if schema == PUBLIC {
        name.to_string()
    } else {
        format!("{schema}.{name}")
    }
}

/// The schema and the name of a stored relation name (`app.t`: `app`, `t`; `t`:
/// `public`, `t`; a temporary `pg_temp_7.t`: `pg_temp_7`, `t`).
pub fn split(stored: &str) -> (&str, &str) {
    stored.split_once('.').unwrap_or((PUBLIC, stored))
}

/// Gives the indexes and the primary key constraint a new table's definition named
/// itself (`CONSTRAINT k UNIQUE`) stored names in the table's schema: relation names are
/// one namespace per schema, and another schema may have an index of the same name.
pub(crate) fn index_names_in_schema(table: &mut crate::schema::TableSchema) {
    let schema = split(&table.name).0.to_string();
    if schema == PUBLIC {
        return;
    }
    let in_schema = |name: &mut String| {
        if !name.contains('.') {
            *name = stored_name(&schema, name);
        }
    };
    table.indexes.iter_mut().for_each(|index| in_schema(&mut index.name));
    if let Some(name) = &mut table.primary_key_constraint {
        in_schema(name);
    }
}

/// Whether `name` is a schema of the system (pg_catalog, information_schema, pg_toast).
pub fn is_system(name: &str) -> bool {
    SYSTEM_SCHEMAS.contains(&name)
}

/// Refuses a new relation of `public` whose name has a `.`: it would be read back as a
/// relation of another schema.
pub(crate) fn check_relation_name(written: &str) -> DbResult<()> {
    if written.contains('.') {
        return Err(DbError::FeatureNotSupported(format!(
            "the relation name \"{written}\": a name with a \".\" in it"
        )));
    }
    Ok(())
}

/// Checks the name of a schema to create (or rename to), as PostgreSQL does.
pub(crate) fn check_new_schema(name: &str) -> DbResult<()> {
    if name.starts_with("pg_") {
        return Err(DbError::ReservedName {
            message: format!("unacceptable schema name \"{name}\""),
            detail: "The prefix \"pg_\" is reserved for system schemas.".into(),
        });
    }
    if name.contains('.') {
        return Err(DbError::FeatureNotSupported(format!(
            "the schema name \"{name}\": a name with a \".\" in it"
        )));
    }
    Ok(())
}

/// The entries of a `search_path` value, as PostgreSQL's SplitIdentifierString reads
/// them: separated by commas, a quoted entry as written (`""` a quote), an unquoted one
/// folded to lower case; blanks around entries ignored.
pub fn parse_search_path(value: &str) -> DbResult<Vec<String>> {
    let invalid = || DbError::InvalidParameterValue {
        parameter: "search_path".into(),
        value: value.into(),
        allowed: "a comma-separated list of schema names".into(),
    };
    let mut entries = Vec::new();
    let mut chars = value.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            if entries.is_empty() {
                return Ok(entries);
            }
            return Err(invalid());
        }
        let mut entry = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(invalid()),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        entry.push('"');
                    }
                    Some('"') => break,
                    Some(c) => entry.push(c),
                }
            }
            if entry.is_empty() {
                return Err(invalid());
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' || c.is_whitespace() {
                    break;
                }
                entry.extend(c.to_lowercase());
                chars.next();
            }
            if entry.is_empty() {
                return Err(invalid());
            }
        }
        entries.push(entry);
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => return Ok(entries),
            Some(',') => {}
            Some(_) => return Err(invalid()),
        }
    }
}

/// The text of a list of schema names as PostgreSQL shows a `search_path` set by SET:
/// each name quoted where an unquoted one would read differently.
pub fn render_search_path(entries: &[String]) -> String {
    entries.iter().map(|e| crate::catalog::quote_ident(e)).collect::<Vec<_>>().join(", ")
}

/// A session's search path, parsed, and what the fast path needs to know of it.
#[derive(Clone, Debug)]
pub(crate) struct SearchPath {
    /// The entries as the setting names them (`$user`, `public`, `pg_temp`, ...).
    pub(crate) entries: Vec<String>,
    /// Whether `public` is among them (with no other schema in the database, every
    /// unqualified name is then public's).
    names_public: bool,
}

impl Default for SearchPath {
    fn default() -> SearchPath {
        SearchPath::parse(DEFAULT_SEARCH_PATH).expect("the default search path parses")
    }
}

impl SearchPath {
    pub(crate) fn parse(value: &str) -> DbResult<SearchPath> {
        let entries = parse_search_path(value)?;
        let names_public = entries.iter().any(|e| e == PUBLIC);
        Ok(SearchPath { entries, names_public })
    }
}

impl Session {
    /// Sets the session's `search_path` (from SET, set_config or the server's setting),
    /// checking its syntax only, as PostgreSQL does (schemas that do not exist are
    /// skipped when names are resolved).
    pub(crate) fn set_search_path(&mut self, value: &str) -> DbResult<()> {
        let path = SearchPath::parse(value)?;
        if path.entries != self.search_path.entries {
            // Compiled statements resolved their names under the old path: each is
            // checked again (`resolves_elsewhere`) before its next use.
            self.db.schema_generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.search_path = path;
        Ok(())
    }

    /// The schemas of the search path that exist, in order (`$user` as the session's
    /// user's schema; pg_temp and pg_catalog, which are searched apart, left out).
    pub(crate) fn path_schemas(&self) -> Vec<String> {
        let user = self.entry.client().username;
        self.db.read_catalog(|st| {
            let mut schemas: Vec<String> = Vec::new();
            for entry in &self.search_path.entries {
                let name = if entry == "$user" { user.as_str() } else { entry.as_str() };
                if name == "pg_temp" || is_system(name) || schemas.iter().any(|s| s == name) {
                    continue;
                }
                if st.has_namespace(name) {
                    schemas.push(name.to_string());
                }
            }
            schemas
        })
    }

    /// `current_schemas(include_implicit)`: the schemas of the path that exist, in its
    /// order; with the implicit ones, the session's temporary schema (if it has one) and
    /// pg_catalog first, where the path does not place them itself.
    pub(crate) fn current_schemas(&self, include_implicit: bool) -> Vec<String> {
        let entries = &self.search_path.entries;
        let listed = |name: &str| entries.iter().any(|e| e == name);
        let mut schemas = Vec::new();
        if include_implicit {
            if self.temp.made_any && !listed("pg_temp") {
                schemas.push(self.temp_namespace());
            }
            if !listed("pg_catalog") {
                schemas.push("pg_catalog".to_string());
            }
        }
        let existing = self.path_schemas();
        let user = self.entry.client().username;
        for entry in entries {
            let name = if entry == "$user" { user.as_str() } else { entry.as_str() };
            let shown = match name {
                "pg_temp" if include_implicit && self.temp.made_any => Some(self.temp_namespace()),
                "pg_catalog" => Some(name.to_string()),
                _ if existing.iter().any(|s| s == name) => Some(name.to_string()),
                _ => None,
            };
            if let Some(shown) = shown.filter(|s| !schemas.contains(s)) {
                schemas.push(shown);
            }
        }
        schemas
    }

    /// Whether schema `name` exists for this session (pg_temp and the system's always).
    pub fn schema_exists(&self, name: &str) -> bool {
        name == "pg_temp" || is_system(name) || self.db.read_catalog(|st| st.has_namespace(name))
    }

    /// Whether every unqualified name is public's (no schema but public exists and the
    /// path names it): no lookup needed.
    #[inline]
    fn only_public(&self) -> bool {
        self.search_path.names_public && !self.db.has_schemas.load(Relaxed)
    }

    /// The stored name an unqualified permanent relation name means: the first schema of
    /// the path that has it; if none has it, the name in public when the path has public,
    /// else in the first schema of the path, else in pg_catalog (where no user relation
    /// is): a name that finds nothing, as the path found nothing.
    pub(crate) fn resolve_in_path(&self, written: &str, exists: impl Fn(&str) -> bool) -> String {
        // The v$ views are the instance's, found whatever the path (as pg_catalog's are).
        if self.only_public() || crate::views::is_view(written) {
            return written.to_string();
        }
        let schemas = self.path_schemas();
        for schema in &schemas {
            let stored = stored_name(schema, written);
            if exists(&stored) {
                return stored;
            }
        }
        if schemas.iter().any(|s| s == PUBLIC) {
            return written.to_string();
        }
        stored_name(schemas.first().map_or("pg_catalog", String::as_str), written)
    }

    /// The stored name for a new permanent relation `name` (CREATE TABLE, VIEW,
    /// SEQUENCE): in its schema if qualified (which must exist), else in the first
    /// existing schema of the path.
    pub(crate) fn creation_name(&self, name: &ast::ObjectName) -> DbResult<String> {
        let written = crate::sql::expr::object_name(name)?;
        match name.0.as_slice() {
            [schema, _] => {
                let schema = schema.as_ident().map(crate::sql::expr::ident_name).unwrap_or_default();
                self.schema_to_create_in(&schema, &written)?;
                if schema == PUBLIC {
                    check_relation_name(&written)?;
                }
                Ok(stored_name(&schema, &written))
            }
            _ => {
                if self.only_public() {
                    check_relation_name(&written)?;
                    return Ok(written);
                }
                let schema = self.path_schemas().into_iter().next().ok_or(DbError::NoSchemaSelected)?;
                if schema == PUBLIC {
                    check_relation_name(&written)?;
                }
                Ok(stored_name(&schema, &written))
            }
        }
    }

    /// The stored name of a foreign key's parent as `references::foreign_key_spec` wrote
    /// it: `schema.name` if qualified, else a name the search path resolves.
    pub(crate) fn foreign_key_parent(&self, written: String) -> String {
        match written.split_once('.') {
            Some(("pg_temp", name)) => self.temp_name(name),
            Some((schema, name)) => stored_name(schema, name),
            None => self.resolve_relation(written),
        }
    }

    /// Checks that a relation may be created in schema `schema`.
    fn schema_to_create_in(&self, schema: &str, written: &str) -> DbResult<()> {
        if is_system(schema) {
            return Err(DbError::FeatureNotSupported(format!(
                "creating relation \"{schema}.{written}\" in a system schema"
            )));
        }
        if !self.db.read_catalog(|st| st.has_namespace(schema)) {
            return Err(DbError::UndefinedSchema(schema.to_string()));
        }
        Ok(())
    }

    /// Whether a statement compiled against the permanent relation `table` would now
    /// find another one under the name it was written with (a path changed, a schema or
    /// a table created earlier in the path, a temporary table hiding it). A statement
    /// written with a qualified name is compiled again too: cheap, and only after DDL or
    /// a change of path.
    pub(crate) fn resolves_elsewhere(&self, table: &str) -> bool {
        if crate::temp_tables::is_temporary(table) {
            return false;
        }
        let (_, written) = split(table);
        self.resolve_relation(written.to_string()) != table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_path_splits_as_postgresql_reads_it() {
        assert_eq!(parse_search_path("\"$user\", public").unwrap(), ["$user", "public"]);
        assert_eq!(parse_search_path("App ,  \"App\",x").unwrap(), ["app", "App", "x"]);
        assert_eq!(parse_search_path("\"a\"\"b\"").unwrap(), ["a\"b"]);
        assert_eq!(parse_search_path("").unwrap(), Vec::<String>::new());
        for bad in ["a,", ",a", "a b", "\"\"", "\"open"] {
            assert!(parse_search_path(bad).is_err(), "{bad}");
        }
        assert_eq!(
            render_search_path(&["$user".into(), "public".into(), "App".into()]),
            "\"$user\", public, \"App\""
        );
    }

    #[test]
    fn a_stored_name_splits_into_its_schema_and_name() {
        assert_eq!(split("t"), ("public", "t"));
        assert_eq!(split(&stored_name("app", "t")), ("app", "t"));
        assert_eq!(stored_name("public", "t"), "t");
        assert_eq!(split("pg_temp_3.t"), ("pg_temp_3", "t"));
    }
}
