//! The catalog queries the server answers itself. Every other query on pg_catalog or
//! information_schema runs in the database, whose catalog (`db::catalog`) is planned like
//! any relation; this module keeps two families the database cannot answer yet:
//! - pg_cursors: the wire server's cursors, which the database does not know;
//! - psql's queries that need arrays or a set-returning function in FROM
//!   (`answered_here`): `\d+`'s table flags (`array_to_string(c.reloptions ...)`), `\l`
//!   (`datacl`), `\d`'s policies (`polroles`), triggers (`pg_partition_ancestors(...)
//!   WITH ORDINALITY`), extended statistics and publications, and `\df`. Their texts are
//!   fixed per psql version; each is recognised by its shape and answered from the
//!   database's schemas, with the database catalog's OIDs (`table_oid`).
//!
//! # How a query is answered
//! The query's select list is split into its items; each recognised family of queries
//! (relation list, relation lookup by name pattern, table details, columns, indexes,
//! databases, schemas, and the catalogs where a redodb table never has anything:
//! policies, triggers, inheritance, publications, ...) gives each item a value by what
//! the item reads (`a.attnotnull`, `pg_catalog.format_type(...)`, `as "Owner"`). So the
//! result has exactly the columns psql reads, in its order, and an item we do not know
//! is NULL (psql reads a NULL as an empty string). Name patterns (`'^(t.*)$'`, psql's
//! translation of `t*`) are matched as regular expressions.
//!
//! A query of these families that is not recognised goes to the database, whose error
//! names what it lacks.

use db::sql::ResultColumn;
use db::{DataType, IndexDef, TableSchema, Value};
use regex_lite::Regex;

use crate::protocol::SqlError;

/// What a query on the catalog is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// `\d`, `\dt`, `\di` (with `+`): schema, name, type, owner, ...
    RelationList,
    /// `\d NAME`, first step: the OIDs of the relations NAME matches.
    RelationLookup,
    /// `\d NAME`: the table's flags (relkind, relhasindex, ...).
    TableInfo,
    /// `\d NAME`: its columns.
    Columns,
    /// `\d NAME`: its indexes.
    Indexes,
    /// `\l`
    Databases,
    /// `\dn`
    Schemas,
    /// The session's open cursors (psycopg asks before closing one it did not declare).
    Cursors,
    /// A catalog where redodb's tables have nothing (policies, triggers, ...).
    Empty,
}

/// A recognised catalog query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogQuery {
    family: Family,
    /// The select list's items, lowercased, and the column name of each.
    items: Vec<(String, String)>,
    /// `relname ~ '...'` (or `datname`, `nspname` for `\l`, `\dn`).
    name_pattern: Option<String>,
    /// `n.nspname ~ '...'`.
    schema_pattern: Option<String>,
    /// The OID the query asks about (`c.oid = '16385'`).
    oid: Option<u32>,
    /// `c.relkind IN ('r', 'p', ...)`.
    relkinds: Vec<char>,
    /// `name = '...'` (pg_cursors).
    cursor_name: Option<String>,
}

/// Who is asking: the values of the Owner and database columns, and the session's open
/// cursors.
pub struct Asker<'a> {
    pub user: &'a str,
    pub database: &'a str,
    pub cursors: Vec<String>,
}

/// Whether the server answers catalog query `sql` itself rather than the database's
/// catalog (`db::catalog`), which answers every other: a query of pg_cursors (the wire
/// server's cursors, which the database does not know), and psql's queries that need
/// what the database's SQL does not have yet: an array built from a subquery
/// (`ARRAY(SELECT ...)`, `\d+`'s reloptions) and `WITH ORDINALITY`. Anything else with
/// arrays goes to the database (answering a client's own query here by its words gave
/// wrong answers: SQLAlchemy's reflection of a table found no table).
pub fn answered_here(sql: &str) -> bool {
    if !is_catalog_query(sql) {
        return false;
    }
    let code = without_literals(sql).to_ascii_lowercase();
    let code: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    code.contains("pg_cursors")
        || ["array(select", "array( select", "with ordinality"].iter().any(|needle| code.contains(needle))
}

/// Whether `sql` reads pg_catalog or information_schema (outside string literals). A
/// function merely qualified by the schema (`pg_catalog.version()`,
/// `pg_catalog.set_config(...)`) reads no catalog: such a query goes to the db.
pub fn is_catalog_query(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    let mentions = |word: &[u8]| bytes.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word));
    if !mentions(b"pg_catalog") && !mentions(b"information_schema") {
        return false;
    }
    let code = without_literals(sql).to_ascii_lowercase();
    code.contains("information_schema")
        || code.match_indices("pg_catalog").any(|(at, word)| !calls_a_function(&code[at + word.len()..]))
}

/// Whether `rest`, the text after a schema name, is `.name(`: a qualified function call.
fn calls_a_function(rest: &str) -> bool {
    let Some(rest) = rest.trim_start().strip_prefix('.') else { return false };
    let rest = rest.trim_start();
    let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    name_end > 0 && rest[name_end..].trim_start().starts_with('(')
}

/// `sql` with the contents of its string literals blanked.
fn without_literals(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut in_literal = false;
    for c in sql.chars() {
        if c == '\'' {
            in_literal = !in_literal;
            out.push(c);
        } else {
            // Blanked byte for byte, so that offsets stay those of `sql`.
            if in_literal {
                out.extend(std::iter::repeat_n(' ', c.len_utf8()));
            } else {
                out.push(c);
            }
        }
    }
    out
}

fn unsupported(what: &str) -> SqlError {
    SqlError::new(
        "0A000",
        format!(
            "{what} is not supported: redodb's pg_catalog answers only psql's \\d, \\dt, \\di, \\d NAME, \\l and \\dn"
        ),
    )
}

/// Recognises a catalog query (one for which `is_catalog_query` holds).
pub fn recognise(sql: &str) -> Result<CatalogQuery, SqlError> {
    let code = without_literals(sql).to_ascii_lowercase();
    if code.contains("information_schema") {
        return Err(unsupported("information_schema"));
    }
    let Some((items, from)) = select_list(sql) else {
        return Err(unsupported("this statement on pg_catalog"));
    };
    // pgbench's lookup of pgbench_accounts' partitioning (a LATERAL join): refused, which
    // pgbench reads as "no partitions", as it does of a server too old to answer it.
    if code.contains(" lateral ") {
        return Err(unsupported("LATERAL in a query on pg_catalog"));
    }
    let from_code = &code[from..];
    let catalog = from_code
        .trim_start()
        .strip_prefix("from")
        .map(str::trim_start)
        .and_then(|rest| rest.strip_prefix("pg_catalog."))
        .map(|rest| rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or(""))
        .unwrap_or("");
    let item_texts: Vec<&str> = items.iter().map(|(text, _)| text.as_str()).collect();
    let family = match catalog {
        "pg_class" if code.contains("c.relkind in (") && items.iter().any(|(_, name)| name == "Name") => {
            Family::RelationList
        }
        "pg_class" if item_texts == ["c.oid", "n.nspname", "c.relname"] => Family::RelationLookup,
        "pg_class" if item_texts.first().is_some_and(|t| t.starts_with("c.relchecks")) => Family::TableInfo,
        "pg_class"
            if item_texts.first() == Some(&"c2.relname") && from_code.contains("pg_catalog.pg_index i") =>
        {
            Family::Indexes
        }
        "pg_attribute" if code.contains("a.attrelid = '") => Family::Columns,
        "pg_database" => Family::Databases,
        "pg_cursors" => Family::Cursors,
        "pg_namespace" if !code.contains("join") => Family::Schemas,
        "pg_policy"
        | "pg_statistic_ext"
        | "pg_publication"
        | "pg_inherits"
        | "pg_trigger"
        | "pg_constraint"
        | "pg_rewrite"
        | "pg_foreign_table"
        | "pg_partitioned_table"
        | "pg_sequence"
        | "pg_description"
        | "pg_event_trigger"
        | "pg_extension"
        | "pg_subscription"
        | "pg_publication_rel" => Family::Empty,
        "pg_class"
            if from_code.contains("pg_catalog.pg_inherits")
                || from_code.contains("pg_catalog.pg_trigger") =>
        {
            Family::Empty
        }
        "" => return Err(unsupported("this query on pg_catalog")),
        other => return Err(unsupported(&format!("this query on pg_catalog.{other}"))),
    };
    let pattern = |column: &str| {
        let re = Regex::new(&format!(r"(?i){column}\s+OPERATOR\(pg_catalog\.~\)\s+'((?:[^']|'')*)'"))
            .expect("a valid pattern");
        re.captures(sql).map(|c| c[1].replace("''", "'"))
    };
    let name_pattern = match family {
        Family::Databases => pattern(r"d\.datname"),
        Family::Schemas => pattern(r"n\.nspname"),
        _ => pattern(r"c\.relname"),
    };
    let schema_pattern = if family == Family::Schemas { None } else { pattern(r"n\.nspname") };
    let oid = Regex::new(r"'(\d+)'")
        .expect("a valid pattern")
        .captures(&without_comparisons_to_names(sql))
        .and_then(|c| c[1].parse().ok());
    let relkinds = Regex::new(r"(?i)c\.relkind\s+IN\s*\(([^)]*)\)")
        .expect("a valid pattern")
        .captures(sql)
        .map(|c| c[1].chars().filter(|c| c.is_ascii_alphabetic()).collect())
        .unwrap_or_default();
    let cursor_name = Regex::new(r"(?i)\bname\s*=\s*'((?:[^']|'')*)'")
        .expect("a valid pattern")
        .captures(sql)
        .map(|c| c[1].replace("''", "'"));
    Ok(CatalogQuery { family, items, name_pattern, schema_pattern, oid, relkinds, cursor_name })
}

/// `sql` without the pattern literals (so that an all-digit name pattern is not taken
/// for an OID).
fn without_comparisons_to_names(sql: &str) -> String {
    Regex::new(r"(?i)OPERATOR\(pg_catalog\.~\)\s+'(?:[^']|'')*'")
        .expect("a valid pattern")
        .replace_all(sql, "")
        .into_owned()
}

/// The select list of `sql`'s outermost SELECT: each item (lowercased, whitespace
/// collapsed) with its column name; and the byte offset of the FROM after it.
fn select_list(sql: &str) -> Option<(Vec<(String, String)>, usize)> {
    let bytes = sql.as_bytes();
    let word_at = |i: usize, word: &str| {
        bytes.len() >= i + word.len()
            && bytes[i..i + word.len()].eq_ignore_ascii_case(word.as_bytes())
            && (i == 0 || !is_word_byte(bytes[i - 1]))
            && bytes.get(i + word.len()).is_none_or(|&b| !is_word_byte(b))
    };
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    let mut start = None;
    let mut item_start = 0;
    let mut items = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if let Some(q) = quote {
            if b == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match b {
            b'\'' | b'"' => quote = Some(b),
            b'(' => depth += 1,
            b')' => depth -= 1,
            b',' if depth == 0 && start.is_some() => {
                items.push(&sql[item_start..i]);
                item_start = i + 1;
            }
            _ if depth == 0 && start.is_none() && word_at(i, "select") => {
                start = Some(i + "select".len());
                item_start = i + "select".len();
                i += "select".len();
                continue;
            }
            _ if depth == 0 && start.is_some() && word_at(i, "from") => {
                items.push(&sql[item_start..i]);
                let items = items.into_iter().map(|text| (normalise(text), column_name(text))).collect();
                return Some((items, i));
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Lowercased, whitespace runs collapsed to one space, trimmed.
fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase()
}

/// The name PostgreSQL gives the column of a select-list item: its alias, else the
/// column or function it reads.
fn column_name(item: &str) -> String {
    let item = item.trim();
    let alias = Regex::new(r#"(?is)\s+as\s+("(?:[^"]|"")*"|[a-z_][a-z0-9_]*)$"#).expect("a valid pattern");
    if let Some(c) = alias.captures(item) {
        let alias = &c[1];
        return match alias.strip_prefix('"').and_then(|a| a.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => alias.to_lowercase(),
        };
    }
    let plain =
        Regex::new(r"(?i)^(?:[a-z_][a-z0-9_]*\.)*([a-z_][a-z0-9_]*)\s*(\(|$)").expect("a valid pattern");
    match plain.captures(item) {
        Some(c) => c[1].to_lowercase(),
        None => "?column?".to_string(),
    }
}

/// A table's OID: the database catalog's (`db::catalog::object_oid`).
pub fn table_oid(name: &str) -> u32 {
    db::catalog::object_oid(db::catalog::ObjectKind::Relation, name) as u32
}

/// PostgreSQL's name of a column type (`format_type`).
fn type_name(ty: DataType) -> String {
    match ty {
        DataType::Int => "bigint".into(),
        DataType::Float => "double precision".into(),
        DataType::Numeric(None) => "numeric".into(),
        DataType::Numeric(Some(spec)) => format!("numeric({},{})", spec.precision, spec.scale),
        DataType::Bool => "boolean".into(),
        DataType::Text { max_chars: Some(n) } => format!("character varying({n})"),
        DataType::Text { max_chars: None } => "text".into(),
        DataType::Char { len: Some(n) } => format!("character({n})"),
        DataType::Char { len: None } => "bpchar".into(),
        DataType::Date => "date".into(),
        DataType::Time => "time without time zone".into(),
        DataType::Timestamp => "timestamp without time zone".into(),
        DataType::TimestampTz => "timestamp with time zone".into(),
        DataType::Interval => "interval".into(),
        DataType::Bytea => "bytea".into(),
        DataType::Uuid => "uuid".into(),
        DataType::Json => "json".into(),
        DataType::Jsonb => "jsonb".into(),
        DataType::Catalog(c) => c.sql_name().into(),
        DataType::Array(elem) => format!("{}[]", type_name(elem.data_type())),
    }
}

/// An identifier as PostgreSQL prints it: quoted unless lowercase and plain.
fn quote_ident(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

fn primary_key_name(table: &TableSchema) -> String {
    format!("{}_pkey", table.name)
}

fn key_columns(table: &TableSchema) -> String {
    table.primary_key.iter().map(|&i| quote_ident(&table.columns[i].name)).collect::<Vec<_>>().join(", ")
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn flag(b: bool) -> Value {
    text(if b { "t" } else { "f" })
}

fn matches(pattern: &Option<String>, name: &str) -> bool {
    match pattern {
        // psql writes PostgreSQL regular expressions; the common subset reads the same.
        Some(p) => Regex::new(p).map(|re| re.is_match(name)).unwrap_or(false),
        None => true,
    }
}

/// A relation of the catalog: a table, or one of its indexes (None: its primary key's).
enum Relation<'a> {
    Table(&'a TableSchema),
    Index(&'a TableSchema, Option<&'a IndexDef>),
}

/// The indexes of a table as the catalog lists them: its primary key's (unless it has a
/// hidden row id), then its secondary ones.
fn indexes_of(table: &TableSchema) -> impl Iterator<Item = Option<&IndexDef>> {
    (!table.rowid).then_some(None).into_iter().chain(table.indexes.iter().map(Some))
}

fn index_name(table: &TableSchema, index: Option<&IndexDef>) -> String {
    index.map_or_else(|| primary_key_name(table), |i| i.name.clone())
}

impl CatalogQuery {
    /// Answers the query: its columns (all text) and rows.
    pub fn answer(
        &self,
        tables: &[std::sync::Arc<TableSchema>],
        asker: &Asker,
    ) -> (Vec<ResultColumn>, Vec<Vec<Value>>) {
        let columns = self
            .items
            .iter()
            .map(|(_, name)| ResultColumn {
                name: name.clone(),
                ty: Some(DataType::Text { max_chars: None }),
            })
            .collect();
        let mut tables: Vec<&TableSchema> = tables.iter().map(|t| t.as_ref()).collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        let in_public = matches(&self.schema_pattern, "public");
        let by_oid = || tables.iter().copied().find(|t| Some(table_oid(&t.name)) == self.oid);
        let rows = match self.family {
            Family::RelationList if in_public => {
                let mut relations = Vec::new();
                for t in &tables {
                    if self.relkinds.contains(&'r') && matches(&self.name_pattern, &t.name) {
                        relations.push(Relation::Table(t));
                    }
                    if self.relkinds.contains(&'i') {
                        for index in indexes_of(t) {
                            if matches(&self.name_pattern, &index_name(t, index)) {
                                relations.push(Relation::Index(t, index));
                            }
                        }
                    }
                }
                relations.sort_by_key(|r| match r {
                    Relation::Table(t) => t.name.clone(),
                    Relation::Index(t, index) => index_name(t, *index),
                });
                relations
                    .iter()
                    .map(|r| self.row(|item, name| relation_value(r, item, name, asker)))
                    .collect()
            }
            Family::RelationLookup if in_public => tables
                .iter()
                .filter(|t| matches(&self.name_pattern, &t.name))
                .map(|t| vec![text(table_oid(&t.name).to_string()), text("public"), text(t.name.clone())])
                .collect(),
            Family::TableInfo => {
                by_oid().map(|t| vec![self.row(|item, _| table_info_value(t, item))]).unwrap_or_default()
            }
            Family::Columns => match by_oid() {
                Some(t) => (0..t.visible_columns().len())
                    .map(|i| self.row(|item, _| column_value(t, i, item)))
                    .collect(),
                None => Vec::new(),
            },
            Family::Indexes => match by_oid() {
                Some(t) => {
                    indexes_of(t).map(|index| self.row(|item, _| index_value(t, index, item))).collect()
                }
                None => Vec::new(),
            },
            Family::Databases if matches(&self.name_pattern, asker.database) => {
                vec![self.row(|_, name| database_value(name, asker))]
            }
            Family::Cursors => asker
                .cursors
                .iter()
                .filter(|c| self.cursor_name.as_ref().is_none_or(|n| n == *c))
                .map(|c| {
                    self.row(|item, _| match item {
                        "name" => text(c.clone()),
                        number if number.parse::<i64>().is_ok() => text(number),
                        _ => Value::Null,
                    })
                })
                .collect(),
            Family::Schemas if matches(&self.name_pattern, "public") => {
                vec![self.row(|_, name| match name {
                    "Name" => text("public"),
                    "Owner" => text(asker.user),
                    _ => Value::Null,
                })]
            }
            _ => Vec::new(),
        };
        (columns, rows)
    }

    fn row(&self, mut value: impl FnMut(&str, &str) -> Value) -> Vec<Value> {
        self.items.iter().map(|(item, name)| value(item, name)).collect()
    }
}

fn relation_value(relation: &Relation, _item: &str, name: &str, asker: &Asker) -> Value {
    let (table, index, is_index) = match relation {
        Relation::Table(t) => (t, None, false),
        Relation::Index(t, index) => (t, *index, true),
    };
    match name {
        "Schema" => text("public"),
        "Name" if is_index => text(index_name(table, index)),
        "Name" => text(table.name.clone()),
        "Type" => text(if is_index { "index" } else { "table" }),
        "Owner" => text(asker.user),
        "Persistence" => text("permanent"),
        "Access method" => text(if is_index { "btree" } else { "heap" }),
        "Table" if is_index => text(table.name.clone()),
        _ => Value::Null,
    }
}

/// psql's `\d NAME` header query of `table`: a view (relkind v, a rule, no index, no
/// access method) is told from a table, so psql titles and lays it out as one.
fn table_info_value(table: &TableSchema, item: &str) -> Value {
    let is = |word: &str| item.contains(word);
    let kind = if table.view.is_some() {
        "v"
    } else if table.sequence.is_some() {
        "S"
    } else {
        "r"
    };
    if is("relchecks") {
        text("0")
    } else if is("relkind") {
        text(kind)
    } else if is("relhasindex") {
        flag(kind == "r")
    } else if is("relhasrules") {
        flag(kind == "v")
    } else if is("relhastriggers")
        || is("relrowsecurity")
        || is("relforcerowsecurity")
        || is("relhasoids")
        || is("relispartition")
    {
        flag(false)
    } else if is("reloptions") || is("reloftype") {
        text("")
    } else if is("reltablespace") {
        text("0")
    } else if is("relpersistence") {
        text("p")
    } else if is("relreplident") {
        text(if kind == "r" { "d" } else { "n" })
    } else if is("amname") {
        if kind == "r" {
            text("heap")
        } else {
            Value::Null
        }
    } else {
        Value::Null
    }
}

fn column_value(table: &TableSchema, index: usize, item: &str) -> Value {
    let column = &table.columns[index];
    let is = |word: &str| item.contains(word);
    if item.starts_with("(select") && is("pg_get_expr") {
        // The column's default, as written.
        table.defaults.iter().find(|(c, _)| *c == index).map_or(Value::Null, |(_, sql)| text(sql.clone()))
    } else if item.starts_with("(select") || is("col_description") {
        // Its collation when not the type's, its comment: none.
        Value::Null
    } else if is("format_type") {
        text(type_name(column.ty))
    } else if is("atttypmod") {
        text(crate::types::size_and_modifier(Some(column.ty)).1.to_string())
    } else if is("atttypid") {
        text(crate::types::oid_of(Some(column.ty)).to_string())
    } else if is("attname") {
        text(column.name.clone())
    } else if is("attnotnull") {
        flag(!column.nullable)
    } else if is("attidentity") || is("attgenerated") || is("attcompression") {
        text("")
    } else if is("attstorage") {
        text(match column.ty {
            DataType::Text { .. }
            | DataType::Char { .. }
            | DataType::Bytea
            | DataType::Json
            | DataType::Jsonb => "x",
            DataType::Numeric(_) => "m",
            _ => "p",
        })
    } else if item == "a.attnum" {
        text((index + 1).to_string())
    } else {
        Value::Null
    }
}

fn index_value(table: &TableSchema, index: Option<&IndexDef>, item: &str) -> Value {
    let is = |word: &str| item.contains(word);
    if let Some(index) = index {
        let columns: Vec<String> =
            index.columns.iter().map(|&c| quote_ident(&table.columns[c].name)).collect();
        return if is("pg_get_indexdef") {
            text(format!(
                "CREATE {}INDEX {} ON public.{} USING btree ({})",
                if index.unique { "UNIQUE " } else { "" },
                quote_ident(&index.name),
                quote_ident(&table.name),
                columns.join(", ")
            ))
        } else if is("c2.relname") {
            text(index.name.clone())
        } else if is("indisunique") {
            flag(index.unique)
        } else if is("indisvalid") {
            flag(true)
        } else if is("indisprimary")
            || is("indisclustered")
            || is("indisreplident")
            || is("condeferrable")
            || is("condeferred")
        {
            flag(false)
        } else if is("reltablespace") {
            text("0")
        } else {
            Value::Null
        };
    }
    let name = primary_key_name(table);
    if is("pg_get_indexdef") {
        text(format!(
            "CREATE UNIQUE INDEX {} ON public.{} USING btree ({})",
            quote_ident(&name),
            quote_ident(&table.name),
            key_columns(table)
        ))
    } else if is("pg_get_constraintdef") {
        text(format!("PRIMARY KEY ({})", key_columns(table)))
    } else if is("c2.relname") {
        text(name)
    } else if is("indisprimary") || is("indisunique") || is("indisvalid") {
        flag(true)
    } else if is("indisclustered") || is("indisreplident") || is("condeferrable") || is("condeferred") {
        flag(false)
    } else if is("contype") {
        text("p")
    } else if is("reltablespace") {
        text("0")
    } else {
        Value::Null
    }
}

fn database_value(name: &str, asker: &Asker) -> Value {
    match name {
        "Name" => text(asker.database),
        "Owner" => text(asker.user),
        "Encoding" => text("UTF8"),
        "Collate" | "Ctype" => text("C"),
        "Locale Provider" => text("libc"),
        "Tablespace" => text("pg_default"),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use db::Column;

    const LIST: &str = r#"SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'i' THEN 'index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND c.relname OPERATOR(pg_catalog.~) '^(a.*)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;"#;

    fn tables() -> Vec<std::sync::Arc<TableSchema>> {
        let column = |name: &str, ty| Column { name: name.into(), ty, nullable: true };
        vec![
            std::sync::Arc::new(
                TableSchema::new(
                    "accounts",
                    vec![column("id", DataType::Int), column("Name", DataType::Text { max_chars: Some(20) })],
                    vec![0, 1],
                )
                .unwrap(),
            ),
            std::sync::Arc::new(TableSchema::new("b", vec![column("k", DataType::Float)], vec![0]).unwrap()),
        ]
    }

    const ASKER: Asker = Asker { user: "alice", database: "redodb", cursors: Vec::new() };

    #[test]
    fn psql_lists_tables_matching_its_pattern() {
        assert!(is_catalog_query(LIST));
        assert!(!is_catalog_query("SELECT 'pg_catalog.x' FROM t"));
        assert!(!is_catalog_query("SELECT pg_catalog.version(), pg_catalog . pg_backend_pid ()"));
        assert!(is_catalog_query("SELECT pg_catalog.format_type(1, 2) FROM pg_catalog.pg_type"));
        let query = recognise(LIST).unwrap();
        assert_eq!(query.family, Family::RelationList);
        let (columns, rows) = query.answer(&tables(), &ASKER);
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Schema", "Name", "Type", "Owner"]);
        assert_eq!(rows, vec![vec![text("public"), text("accounts"), text("table"), text("alice")]]);
    }

    #[test]
    fn describe_steps_find_the_table_its_columns_and_key() {
        let lookup = "SELECT c.oid,\n  n.nspname,\n  c.relname\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\nWHERE c.relname OPERATOR(pg_catalog.~) '^(accounts)$' COLLATE pg_catalog.default\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 2, 3;";
        let (_, rows) = recognise(lookup).unwrap().answer(&tables(), &ASKER);
        let oid = table_oid("accounts");
        assert_eq!(rows, vec![vec![text(oid.to_string()), text("public"), text("accounts")]]);

        let columns = format!("SELECT a.attname,\n  pg_catalog.format_type(a.atttypid, a.atttypmod),\n  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)\n   FROM pg_catalog.pg_attrdef d\n   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),\n  a.attnotnull,\n  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t\n   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,\n  a.attidentity,\n  a.attgenerated\nFROM pg_catalog.pg_attribute a\nWHERE a.attrelid = '{oid}' AND a.attnum > 0 AND NOT a.attisdropped\nORDER BY a.attnum;");
        let (names, rows) = recognise(&columns).unwrap().answer(&tables(), &ASKER);
        assert_eq!(names.len(), 7);
        assert_eq!(names[0].name, "attname");
        assert_eq!(names[1].name, "format_type");
        assert_eq!(names[4].name, "attcollation");
        assert_eq!(rows[1][0], text("Name"));
        assert_eq!(rows[1][1], text("character varying(20)"));
        assert_eq!(rows[1][2], Value::Null);
        assert_eq!(rows[1][3], text("t"), "key columns are NOT NULL");

        let indexes = format!("SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),\n  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace\nFROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i\n  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))\nWHERE c.oid = '{oid}' AND c.oid = i.indrelid AND i.indexrelid = c2.oid\nORDER BY i.indisprimary DESC, c2.relname;");
        let (_, rows) = recognise(&indexes).unwrap().answer(&tables(), &ASKER);
        assert_eq!(rows[0][0], text("accounts_pkey"));
        assert_eq!(
            rows[0][5],
            text("CREATE UNIQUE INDEX accounts_pkey ON public.accounts USING btree (id, \"Name\")")
        );
        assert_eq!(rows[0][6], text("PRIMARY KEY (id, \"Name\")"));

        let policies = format!("SELECT pol.polname, pol.polpermissive\nFROM pg_catalog.pg_policy pol\nWHERE pol.polrelid = '{oid}' ORDER BY 1;");
        let (columns, rows) = recognise(&policies).unwrap().answer(&tables(), &ASKER);
        assert_eq!((columns.len(), rows.len()), (2, 0));
    }

    #[test]
    fn open_cursors_are_listed() {
        let query = recognise("SELECT 1 FROM pg_catalog.pg_cursors WHERE name = 'c2'").unwrap();
        let asker = Asker { user: "u", database: "d", cursors: vec!["c1".into(), "c2".into()] };
        assert_eq!(query.answer(&[], &asker).1, vec![vec![text("1")]]);
        let asker = Asker { user: "u", database: "d", cursors: vec!["c1".into()] };
        assert!(query.answer(&[], &asker).1.is_empty());
    }

    #[test]
    fn other_catalog_queries_are_refused_cleanly() {
        let error = recognise("SELECT typname FROM pg_catalog.pg_type WHERE oid = 23").unwrap_err();
        assert_eq!(error.sqlstate, "0A000");
        assert!(error.message.contains("pg_catalog.pg_type"), "{}", error.message);
        assert_eq!(recognise("SELECT * FROM information_schema.tables").unwrap_err().sqlstate, "0A000");
        assert_eq!(recognise("SELECT pg_catalog.version()").unwrap_err().sqlstate, "0A000");
        assert_eq!(column_name("pg_catalog.pg_get_userbyid(d.datdba) as \"Owner\""), "Owner");
        assert_eq!(column_name("false AS relhasoids"), "relhasoids");
        assert_eq!(column_name("c.oid"), "oid");
        assert_eq!(column_name("CASE WHEN x THEN 1 END"), "?column?");
    }
}
