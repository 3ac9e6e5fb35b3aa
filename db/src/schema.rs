//! Table schemas: columns, types, NOT NULL, and the primary key every table has: its own,
//! or for a table declared without one a hidden row id (Oracle's ROWID, PostgreSQL's
//! ctid): a last column `rowid`, BIGINT, given a new number by every insert, left out of
//! `SELECT *`, of `INSERT` without a column list and of the catalog, and readable by name.
//!
//! `TableSchema::check_row` is where every row is validated and coerced before it enters
//! a table (type mismatch, NOT NULL, value too long), so the table layer can assume rows
//! are well formed.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::error::{DbError, DbResult};
use crate::value::{DataType, Value};

/// A row's values in column order. Shared, because the same row lives in the committed
/// state, in snapshots and in query results. One allocation (the counts and the values
/// together), not an `Arc` of a `Vec`: a row replaced by an UPDATE is usually freed by
/// another session's thread than the one that built it, and each block freed across
/// threads costs the allocator a shared-line handoff (from 1 to 32 sessions, mimalloc's
/// allocation and page-collection paths grew by 0.65 us per commit_loop NOWAIT update).
pub type Row = Arc<[Value]>;

/// The primary-key values of a row, in key-column order. Inline for single-column keys
/// (a composite key lives on the heap): an entry of the committed state's B-tree is then
/// 48 bytes instead of 80, so a lookup's binary search in a node of 64 entries touches
/// fewer cache lines (pgbench inserting random keys into a growing table: +5-15% TPS).
/// Copies of keys are few since commits stopped copying B-tree paths (see `DbShared::read_key`).
///
/// Its order is the values' order, column by column, with one shortcut: two one-column
/// integer keys, the common primary key, compare as two integers. The B-tree searches of a
/// point read and of an apply compare keys many times; with the generic slice comparison a
/// prepared UPDATE + COMMIT took 12,082 instructions, with the shortcut 11,875 (callgrind).
#[derive(Default, PartialEq, Eq)]
pub struct Key(smallvec::SmallVec<[Value; 1]>);

/// A key is cloned for its row lock, for the transaction's list of held locks, for its
/// own-rows overlay and for its change: SmallVec's clone goes through a generic `extend`
/// (36-89 instructions a key); a one-value key is copied as one value. A prepared UPDATE
/// + COMMIT went from 10,932 to 10,561 instructions (callgrind).
impl Clone for Key {
    #[inline]
    fn clone(&self) -> Key {
        match self.0.as_slice() {
            [value] => Key::from_buf([value.clone()]),
            values => Key(values.iter().cloned().collect()),
        }
    }
}

/// As the values' list (`[Int(1)]`): lock waits and errors show keys this way.
impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.as_slice().fmt(f)
    }
}

impl Key {
    pub fn new() -> Key {
        Key(smallvec::SmallVec::new())
    }

    pub fn from_elem(value: Value, n: usize) -> Key {
        if n == 1 {
            return Key::from_buf([value]);
        }
        Key(smallvec::SmallVec::from_elem(value, n))
    }

    pub fn from_buf(values: [Value; 1]) -> Key {
        Key(smallvec::SmallVec::from_buf(values))
    }
}

/// Consistent with `Eq`: two keys are equal only value by value within one variant
/// (`Value`'s order never equates an integer with a float), a float by its bits
/// (`total_cmp` equates exactly the identical bit patterns), a text by its bytes, a
/// numeric by its value whatever its scale.
impl std::hash::Hash for Key {
    /// One integer (the commonest key: the row lock tables hash it at each lock and
    /// release) inline; any other key through `hash_any`, the same bytes either way.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self.0.as_slice() {
            [Value::Int(i)] => state.write_i64(*i),
            _ => self.hash_any(state),
        }
    }
}

impl Key {
    #[inline(never)]
    fn hash_any<H: std::hash::Hasher>(&self, state: &mut H) {
        use std::hash::Hash;
        for value in &self.0 {
            match value {
                Value::Null => state.write_u8(0),
                Value::Int(i) => state.write_i64(*i),
                Value::Float(f) => {
                    state.write_u8(1);
                    state.write_u64(f.to_bits());
                }
                Value::Float4(f) => {
                    state.write_u8(16);
                    state.write_u32(f.to_bits());
                }
                Value::Bool(b) => state.write_u8(2 + *b as u8),
                Value::Date(d) => {
                    state.write_u8(5);
                    state.write_i32(*d);
                }
                Value::Timestamp(t) | Value::TimestampTz(t) => {
                    state.write_u8(6);
                    state.write_i64(*t);
                }
                Value::Time(t) => {
                    state.write_u8(7);
                    state.write_i64(*t);
                }
                Value::Interval(iv) => {
                    state.write_u8(8);
                    state.write_i128(iv.comparable());
                }
                Value::Text(t) => {
                    state.write_u8(4);
                    t.hash(state);
                }
                // By the value, not the scale it is shown with: 1.5 and 1.50 are equal.
                Value::Numeric(n) => {
                    state.write_u8(9);
                    crate::numeric::hash_parts(n).hash(state);
                }
                Value::Bytea(b) => {
                    state.write_u8(10);
                    b.hash(state);
                }
                Value::Uuid(u) => {
                    state.write_u8(11);
                    u.hash(state);
                }
                Value::Json(t) => {
                    state.write_u8(12);
                    t.hash(state);
                }
                Value::Jsonb(t) => {
                    state.write_u8(13);
                    t.hash(state);
                }
                // Element by element, as arrays compare (a key of an array is rare:
                // the copy is no concern).
                Value::Array(a) => {
                    state.write_u8(14);
                    state.write_usize(a.items.len());
                    Key(a.items.iter().cloned().collect()).hash(state);
                }
                // A query's DISTINCT or GROUP BY may key rows by a record.
                Value::Record(r) => {
                    state.write_u8(15);
                    Key(r.fields.iter().cloned().collect()).hash(state);
                }
            }
        }
    }
}

impl Ord for Key {
    #[inline]
    fn cmp(&self, other: &Key) -> Ordering {
        if let ([Value::Int(a)], [Value::Int(b)]) = (self.0.as_slice(), other.0.as_slice()) {
            return a.cmp(b);
        }
        self.0.as_slice().cmp(other.0.as_slice())
    }
}

impl PartialOrd for Key {
    #[inline]
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::ops::Deref for Key {
    type Target = smallvec::SmallVec<[Value; 1]>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Key {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl FromIterator<Value> for Key {
    fn from_iter<I: IntoIterator<Item = Value>>(values: I) -> Key {
        Key(values.into_iter().collect())
    }
}

impl From<smallvec::SmallVec<[Value; 1]>> for Key {
    fn from(values: smallvec::SmallVec<[Value; 1]>) -> Key {
        Key(values)
    }
}

impl From<Vec<Value>> for Key {
    fn from(values: Vec<Value>) -> Key {
        Key(values.into())
    }
}

impl<'a> IntoIterator for &'a Key {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl std::borrow::Borrow<[Value]> for Key {
    fn borrow(&self) -> &[Value] {
        &self.0
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Column {
    pub name: String,
    pub ty: DataType,
    pub nullable: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableSchema {
    pub name: String,
    pub columns: Vec<Column>,
    /// Indexes into `columns` of the primary key, in key order. Never empty.
    pub primary_key: Vec<usize>,
    /// Declared without a primary key: the last column is the hidden row id, the key.
    #[serde(default)]
    pub rowid: bool,
    /// The primary key's constraint (and index) name when declared with one
    /// (`CONSTRAINT pk_t PRIMARY KEY (...)`, what ORMs' naming conventions write); else
    /// PostgreSQL's `{table}_pkey`. See `primary_key_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_key_constraint: Option<String>,
    /// Secondary indexes (`CREATE [UNIQUE] INDEX`), kept with the rows (see `state`).
    #[serde(default)]
    pub indexes: Vec<IndexDef>,
    /// Column defaults (`DEFAULT expr`): the column, and the expression as SQL text,
    /// compiled by the statements that insert.
    #[serde(default)]
    pub defaults: Vec<(usize, String)>,
    /// `GENERATED ALWAYS AS IDENTITY` columns: an INSERT may not give them a value.
    #[serde(default)]
    pub always_generated: Vec<usize>,
    /// `GENERATED BY DEFAULT AS IDENTITY` columns: as a SERIAL's (a default from their
    /// sequence), but an identity in the catalog (attidentity 'd', no default shown),
    /// as clients reflecting a schema tell the two apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub identity_by_default: Vec<usize>,
    /// Integer columns declared narrower than the bigint the database keeps every
    /// integer as (`INTEGER`, `SMALLINT`, `SERIAL`): the column and its declared width in
    /// bytes (4 or 2). The catalog shows the declared type (pg_attribute.atttypid int4,
    /// information_schema's `integer`), as clients reflecting a schema expect.
    #[serde(default)]
    pub int_widths: Vec<(usize, u8)>,
    /// Set when this relation is a sequence (`CREATE SEQUENCE`, a SERIAL or IDENTITY
    /// column's): its one row is its state (see `sequences`).
    #[serde(default)]
    pub sequence: Option<SequenceDef>,
    /// CHECK constraints: every row stored makes each condition true or unknown.
    #[serde(default)]
    pub checks: Vec<CheckDef>,
    /// FOREIGN KEY constraints of this (the referencing) table.
    #[serde(default)]
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// Set when this relation is a view (`CREATE VIEW`): the text of its query, planned
    /// where a FROM clause names it; it has no rows of its own.
    #[serde(default)]
    pub view: Option<String>,
    /// A view's dependencies: the relations (and their columns) its query reads, as
    /// PostgreSQL's `pg_depend` rows of the view's rule. They refuse a DROP of what the
    /// view reads (without CASCADE), and they bind the names written in the view's text
    /// to the objects they named when it was created (see `stored_views`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub view_reads: Vec<ViewRead>,
    /// A view's place in the order views were created (one more than the highest when
    /// it was; kept by OR REPLACE and renames), as PostgreSQL's OIDs order them: a DROP's
    /// DETAIL lists dependent views in that order.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub view_number: u64,
    /// `COMMENT ON TABLE` (or VIEW, SEQUENCE): pg_description's row for the relation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// `COMMENT ON COLUMN`: (column, text), by the column's place (kept in step by DROP
    /// COLUMN, as the other per-column lists).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub column_comments: Vec<(usize, String)>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A relation a view reads, found when the view was created (`CREATE VIEW`).
///
/// The view's query is kept as the text written, so a relation or column renamed since
/// is still called by its old name there: `written` is that name, `relation` the
/// relation's name now (RENAME TO follows it), and each column keeps both names too
/// (RENAME COLUMN follows it). Planning the view reads `relation` under the written
/// names, which is how PostgreSQL's views, bound to objects rather than names, behave.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ViewRead {
    /// The relation's name now.
    pub relation: String,
    /// The name the view's query calls it by.
    pub written: String,
    /// The columns the query reads (all of them for a `*`); none when it reads only the
    /// rows (`SELECT count(*) FROM t`), a dependency on the whole relation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<ViewColumn>,
}

/// A column a view reads: its name now and the name the view's query calls it by.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ViewColumn {
    pub name: String,
    pub written: String,
}

impl ViewRead {
    /// Whether the view reads column `name` (its name now) of the relation.
    pub fn reads_column(&self, name: &str) -> bool {
        self.columns.iter().any(|c| c.name == name)
    }
}

/// A FOREIGN KEY constraint, kept with the referencing (child) table, as PostgreSQL's
/// `pg_constraint` row: each row's `columns`, when none is NULL (MATCH SIMPLE), equal
/// the `parent_columns` of a row of `parent`, which are its primary key or a unique
/// constraint's columns.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ForeignKeyDef {
    pub name: String,
    /// Indexes into this table's columns.
    pub columns: Vec<usize>,
    pub parent: String,
    /// The referenced columns by name (the parent's shape may change under other DDL:
    /// a name stays; an ALTER of the parent that renames one updates it here).
    pub parent_columns: Vec<String>,
    pub on_delete: ReferentialAction,
    pub on_update: ReferentialAction,
}

/// What a change of a referenced key does to the rows that reference it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ReferentialAction {
    /// Refused while referencing rows exist (checked at once here, as RESTRICT is: see
    /// `foreign_keys`).
    NoAction,
    Restrict,
    /// The referencing rows are deleted (ON DELETE) or follow the new key (ON UPDATE).
    Cascade,
    SetNull,
    SetDefault,
}

impl ReferentialAction {
    /// PostgreSQL's letter for it (`pg_constraint.confdeltype`).
    pub fn code(self) -> char {
        match self {
            ReferentialAction::NoAction => 'a',
            ReferentialAction::Restrict => 'r',
            ReferentialAction::Cascade => 'c',
            ReferentialAction::SetNull => 'n',
            ReferentialAction::SetDefault => 'd',
        }
    }

    pub fn sql(self) -> &'static str {
        match self {
            ReferentialAction::NoAction => "NO ACTION",
            ReferentialAction::Restrict => "RESTRICT",
            ReferentialAction::Cascade => "CASCADE",
            ReferentialAction::SetNull => "SET NULL",
            ReferentialAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A CHECK constraint: its name and its condition as SQL text over the table's columns,
/// compiled by the sessions that store rows (`Session::check_constraints`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckDef {
    pub name: String,
    pub expr: String,
}

/// A sequence's definition: the values it hands out are `start`, `start + increment`,
/// ... within `min..=max`, starting over at the other end if `cycle`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SequenceDef {
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    /// Values handed out per reservation in the log (at least `sequences::LOG_AHEAD`).
    pub cache: i64,
    pub cycle: bool,
    /// The table and column whose default it is (SERIAL, IDENTITY): it goes with them.
    pub owned_by: Option<(String, String)>,
}

/// A secondary index: an ordered tree of the indexed columns' values followed by the
/// primary key (so every entry is distinct and leads to its row).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexDef {
    pub name: String,
    /// Indexes into the table's columns, in index order.
    pub columns: Vec<usize>,
    /// No two rows with the same values, none of them NULL, in `columns`.
    pub unique: bool,
    /// Made by a UNIQUE constraint (not CREATE UNIQUE INDEX): the catalog shows the
    /// constraint too (pg_constraint, `\d`'s "UNIQUE CONSTRAINT").
    #[serde(default)]
    pub constraint: bool,
}

/// The name of the hidden row id column of a table without a primary key.
pub const ROWID: &str = "rowid";

impl TableSchema {
    /// The name of the primary key's constraint and index: as declared, else
    /// PostgreSQL's `{table}_pkey`.
    pub fn primary_key_name(&self) -> String {
        match &self.primary_key_constraint {
            Some(name) => name.clone(),
            None => format!("{}_pkey", self.name),
        }
    }

    /// Column `column`'s identity as pg_attribute.attidentity shows it: 'a' (GENERATED
    /// ALWAYS), 'd' (GENERATED BY DEFAULT), or none (a SERIAL's is a plain default).
    pub fn identity_of(&self, column: usize) -> Option<char> {
        if self.always_generated.contains(&column) {
            Some('a')
        } else if self.identity_by_default.contains(&column) {
            Some('d')
        } else {
            None
        }
    }

    /// The declared width in bytes of integer column `column`: 2, 4, or 8 (BIGINT, and
    /// any column not declared narrower).
    pub fn int_width(&self, column: usize) -> u8 {
        self.int_widths.iter().find(|(c, _)| *c == column).map_or(8, |(_, w)| *w)
    }

    /// Builds a schema, checking that names are unique and the key is valid. Key columns
    /// become NOT NULL.
    pub fn new(name: &str, mut columns: Vec<Column>, primary_key: Vec<usize>) -> DbResult<TableSchema> {
        if columns.is_empty() {
            return Err(DbError::Unsupported(format!("table \"{name}\" without columns")));
        }
        for (i, c) in columns.iter().enumerate() {
            if !c.ty.is_valid() {
                return Err(DbError::InvalidArgument(format!(
                    "column \"{}\" has an invalid type modifier",
                    c.name
                )));
            }
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(DbError::Syntax {
                    message: format!("column \"{}\" specified more than once", c.name),
                    position: 0,
                });
            }
        }
        if primary_key.is_empty() {
            if columns.iter().any(|c| c.name == ROWID) {
                return Err(DbError::Unsupported(format!(
                    "a column named \"{ROWID}\" in table \"{name}\" without a primary key (the name of its hidden row id)"
                )));
            }
            columns.push(Column { name: ROWID.into(), ty: DataType::Int, nullable: false });
            let key = vec![columns.len() - 1];
            return Ok(TableSchema {
                name: name.to_string(),
                columns,
                primary_key: key,
                rowid: true,
                primary_key_constraint: None,
                indexes: Vec::new(),
                defaults: Vec::new(),
                always_generated: Vec::new(),
                identity_by_default: Vec::new(),
                int_widths: Vec::new(),
                sequence: None,
                checks: Vec::new(),
                foreign_keys: Vec::new(),
                view: None,
                view_reads: Vec::new(),
                view_number: 0,
                comment: None,
                column_comments: Vec::new(),
            });
        }
        for (i, &k) in primary_key.iter().enumerate() {
            if k >= columns.len() || primary_key[..i].contains(&k) {
                return Err(DbError::Syntax {
                    message: format!("invalid primary key for table \"{name}\""),
                    position: 0,
                });
            }
            columns[k].nullable = false;
        }
        Ok(TableSchema {
            name: name.to_string(),
            columns,
            primary_key,
            rowid: false,
            primary_key_constraint: None,
            indexes: Vec::new(),
            defaults: Vec::new(),
            always_generated: Vec::new(),
            identity_by_default: Vec::new(),
            int_widths: Vec::new(),
            sequence: None,
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            view: None,
            view_reads: Vec::new(),
            view_number: 0,
            comment: None,
            column_comments: Vec::new(),
        })
    }

    /// The entry of index `index` for `row`: its columns' values, then the primary key.
    pub fn index_key(&self, index: &IndexDef, row: &[Value]) -> Key {
        index.columns.iter().chain(&self.primary_key).map(|&i| row[i].clone()).collect()
    }

    /// The schema with `index` added, checked: a new name, existing distinct columns.
    pub fn with_index(&self, index: IndexDef) -> DbResult<TableSchema> {
        if index.columns.is_empty() || index.columns.iter().any(|&c| c >= self.columns.len()) {
            return Err(DbError::Syntax {
                message: format!("invalid columns for index \"{}\"", index.name),
                position: 0,
            });
        }
        if self.indexes.iter().any(|i| i.name == index.name) {
            return Err(DbError::TableExists(index.name));
        }
        let mut schema = self.clone();
        schema.indexes.push(index);
        Ok(schema)
    }

    /// Checks a schema read back from disk as `new` checks a declared one.
    pub fn validated(self) -> DbResult<TableSchema> {
        let base = if !self.rowid {
            TableSchema::new(&self.name, self.columns, self.primary_key)?
        } else {
            let mut columns = self.columns;
            let rowid = columns.pop();
            let expected = Column { name: ROWID.into(), ty: DataType::Int, nullable: false };
            if rowid.as_ref() != Some(&expected) || self.primary_key != [columns.len()] {
                return Err(DbError::Unsupported(format!("a malformed row id in table \"{}\"", self.name)));
            }
            TableSchema::new(&self.name, columns, Vec::new())?
        };
        let mut schema = self.indexes.into_iter().try_fold(base, |schema, index| schema.with_index(index))?;
        if self.defaults.iter().any(|(c, _)| *c >= schema.visible_columns().len()) {
            return Err(DbError::Unsupported(format!(
                "a default of a missing column in \"{}\"",
                schema.name
            )));
        }
        if self.always_generated.iter().any(|&c| c >= schema.visible_columns().len()) {
            return Err(DbError::Unsupported(format!(
                "an identity of a missing column in \"{}\"",
                schema.name
            )));
        }
        if let Some(def) = &self.sequence {
            if def.increment == 0
                || def.min > def.max
                || !(def.min..=def.max).contains(&def.start)
                || def.cache < 1
            {
                return Err(DbError::Unsupported(format!("a malformed sequence \"{}\"", schema.name)));
            }
        }
        schema.defaults = self.defaults;
        schema.always_generated = self.always_generated;
        let visible = schema.visible_columns().len();
        schema.identity_by_default = self.identity_by_default.into_iter().filter(|&c| c < visible).collect();
        // A row id's table has no declared key to name.
        schema.primary_key_constraint = self.primary_key_constraint.filter(|_| !self.rowid);
        // A width of a missing column or another than 2 or 4 is dropped: the column is
        // then shown as the bigint it is kept as.
        let columns = schema.visible_columns().len();
        schema.int_widths =
            self.int_widths.into_iter().filter(|&(c, w)| c < columns && matches!(w, 2 | 4)).collect();
        schema.sequence = self.sequence;
        schema.checks = self.checks;
        for fk in &self.foreign_keys {
            let columns = schema.visible_columns().len();
            if fk.columns.is_empty()
                || fk.columns.len() != fk.parent_columns.len()
                || fk.columns.iter().any(|&c| c >= columns)
            {
                return Err(DbError::Unsupported(format!(
                    "a malformed foreign key \"{}\" in \"{}\"",
                    fk.name, schema.name
                )));
            }
        }
        schema.foreign_keys = self.foreign_keys;
        schema.view = self.view;
        schema.view_reads = self.view_reads;
        schema.view_number = self.view_number;
        schema.comment = self.comment;
        let columns = schema.visible_columns().len();
        schema.column_comments = self.column_comments.into_iter().filter(|(c, _)| *c < columns).collect();
        Ok(schema)
    }

    /// The columns a user sees (`SELECT *`, INSERT without a column list, the catalog):
    /// all but the hidden row id.
    pub fn visible_columns(&self) -> &[Column] {
        &self.columns[..self.columns.len() - self.rowid as usize]
    }

    /// The hidden row id's column, for a table without a primary key.
    pub fn rowid_index(&self) -> Option<usize> {
        self.rowid.then(|| self.columns.len() - 1)
    }

    pub fn column_index(&self, name: &str) -> DbResult<usize> {
        self.columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| DbError::UnknownColumn(name.to_string()))
    }

    pub fn key_of(&self, row: &[Value]) -> Key {
        match self.primary_key[..] {
            // The common one-column key, inline without the iterator's bookkeeping.
            [i] => Key::from_buf([row[i].clone()]),
            _ => self.primary_key.iter().map(|&i| row[i].clone()).collect(),
        }
    }

    /// Validates and coerces a full row (one value per column), in place: building a new
    /// row cost an allocation and a copy per row.
    pub fn check_row(&self, row: &mut [Value]) -> DbResult<()> {
        if row.len() != self.columns.len() {
            return Err(DbError::Syntax {
                message: format!(
                    "table \"{}\" has {} columns but {} values were supplied",
                    self.name,
                    self.columns.len(),
                    row.len()
                ),
                position: 0,
            });
        }
        for (value, column) in row.iter_mut().zip(&self.columns) {
            // Most values are already of their column's type: left where they are (moving
            // each out and back cost a prepared UPDATE + COMMIT ~100 instructions).
            if !fits_as_is(value, column.ty) {
                *value = self.check_value(column, std::mem::replace(value, Value::Null))?;
            }
        }
        Ok(())
    }

    fn check_value(&self, column: &Column, value: Value) -> DbResult<Value> {
        if value.is_null() {
            if !column.nullable {
                return Err(DbError::NotNull { table: self.name.clone(), column: column.name.clone() });
            }
            return Ok(Value::Null);
        }
        coerce(value, column.ty)
    }
}

impl TableSchema {
    /// Checks a row read back from disk (a checkpoint image, redo being replayed): one
    /// value per column, each of its column's type as it is (no conversion: what was
    /// stored had been converted), NULL only where allowed, no text over its length. Bytes
    /// from disk are never trusted to hold what the table can take: a row that does not
    /// fit is [`DbError::CorruptChange`], saying how.
    pub fn check_stored_row(&self, row: &[Value]) -> DbResult<()> {
        let corrupt =
            |what: String| DbError::CorruptChange(format!("a row of table \"{}\" {what}", self.name));
        if row.len() != self.columns.len() {
            return Err(corrupt(format!("has {} values for its {} columns", row.len(), self.columns.len())));
        }
        for (value, column) in row.iter().zip(&self.columns) {
            if value.is_null() {
                if !column.nullable {
                    return Err(corrupt(format!("has NULL in NOT NULL column \"{}\"", column.name)));
                }
            } else if !value.has_type(column.ty) {
                return Err(corrupt(format!(
                    "has {value:?} in column \"{}\" of type {}",
                    column.name,
                    column.ty.name()
                )));
            } else if let Value::Array(a) = value {
                // Elements are of the element type (`has_type`); JSON ones must be JSON
                // too, as a column's are.
                for item in &a.items {
                    let bad = match item {
                        Value::Json(text) => crate::json::validate(text).is_err(),
                        Value::Jsonb(text) => crate::json::normalize(text).ok().as_deref() != Some(&**text),
                        _ => false,
                    };
                    if bad {
                        return Err(corrupt(format!(
                            "has an invalid JSON element in column \"{}\"",
                            column.name
                        )));
                    }
                }
            } else if let Value::Json(text) = value {
                if let Err(e) = crate::json::validate(text) {
                    return Err(corrupt(format!("has invalid JSON in column \"{}\": {e}", column.name)));
                }
            } else if let Value::Jsonb(text) = value {
                if crate::json::normalize(text).ok().as_deref() != Some(&**text) {
                    return Err(corrupt(format!(
                        "has a JSONB not in its normal form in column \"{}\"",
                        column.name
                    )));
                }
            } else if let (Value::Numeric(n), DataType::Numeric(Some(spec))) = (value, column.ty) {
                if !crate::numeric::fits(n, spec) {
                    return Err(corrupt(format!(
                        "has {} in column \"{}\" of type {}",
                        crate::numeric::to_text(n),
                        column.name,
                        column.ty.name()
                    )));
                }
            } else if let (Value::Text(text), DataType::Char { .. }) = (value, column.ty) {
                if !fits_as_is(value, column.ty) {
                    let chars = text.chars().count();
                    return Err(corrupt(format!(
                        "has a text of {chars} characters (or trailing blanks) in column \"{}\" of type {}",
                        column.name,
                        column.ty.name()
                    )));
                }
            } else if let (Value::Text(text), DataType::Text { max_chars: Some(max) }) = (value, column.ty) {
                // No more characters than bytes: most texts need no count.
                let chars = if text.len() > max as usize { text.chars().count() } else { 0 };
                if chars > max as usize {
                    return Err(corrupt(format!(
                        "has a text of {chars} characters in column \"{}\" of type {}",
                        column.name,
                        column.ty.name()
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Whether `value` is already a valid value of type `ty` (not NULL: whether a NULL fits
/// depends on the column): of that type, and a text no longer than its limit (a text has
/// no more characters than bytes, so most need no count).
#[inline]
fn fits_as_is(value: &Value, ty: DataType) -> bool {
    match (value, ty) {
        // The commonest columns answered inline (this runs for every column of every
        // row written).
        (Value::Int(_), DataType::Int) | (Value::Text(_), DataType::Text { max_chars: None }) => true,
        (Value::Text(text), DataType::Text { max_chars: Some(max) }) => text.len() <= max as usize,
        _ => fits_as_is_any(value, ty),
    }
}

/// `fits_as_is` for the other types.
#[inline(never)]
fn fits_as_is_any(value: &Value, ty: DataType) -> bool {
    match (value, ty) {
        (Value::Numeric(n), DataType::Numeric(Some(spec))) => crate::numeric::fits(n, spec),
        (Value::Text(text), DataType::Char { len }) => {
            !text.ends_with(' ')
                && len.is_none_or(|n| text.len() <= n as usize || text.chars().count() <= n as usize)
        }
        _ => value.has_type(ty),
    }
}

/// Converts a value to a column type, as an assignment would (text that spells a number
/// becomes one, integers widen to floats, integral floats narrow to integers, a NUMERIC
/// is rounded to its column's scale and must fit its precision, and to an integer).
pub fn coerce(value: Value, ty: DataType) -> DbResult<Value> {
    let mismatch = |v: &Value| match v {
        // PostgreSQL has no assignment of a record to a scalar (42804); as text, a
        // record is its text form (the arms for text take it).
        Value::Record(_) => DbError::DatatypeMismatch(format!(
            "expression is of type record where type {} is wanted",
            ty.name().to_lowercase()
        )),
        _ => DbError::TypeMismatch { expected: ty.name(), value: v.to_string() },
    };
    match (ty, value) {
        (_, Value::Null) => Ok(Value::Null),
        (DataType::Array(elem), Value::Array(a)) if a.elem == elem => Ok(Value::Array(a)),
        // Element by element, each as an assignment converts it (an int[] to a
        // numeric[], a text[] of digits to an int[]).
        (DataType::Array(elem), Value::Array(a)) => {
            let ty = elem.data_type();
            let items = a.into_items().into_iter().map(|v| coerce(v, ty)).collect::<DbResult<Vec<_>>>()?;
            Ok(crate::array::Array::new(elem, items).into_value())
        }
        (DataType::Array(elem), Value::Text(t)) => Ok(crate::array::parse(&t, elem)?.into_value()),
        (DataType::Array(_), v) => Err(mismatch(&v)),
        (DataType::Numeric(spec), v) => {
            let n = match v {
                Value::Numeric(n) => *n,
                Value::Int(i) => crate::numeric::from_i64(i),
                Value::Float(f) => crate::numeric::from_f64(f)?,
                Value::Float4(f) => crate::numeric::from_f32(f)?,
                Value::Text(t) => crate::numeric::parse(&t)?,
                other => return Err(mismatch(&other)),
            };
            Ok(Value::numeric(match spec {
                Some(spec) => crate::numeric::apply_spec(&n, spec)?,
                None => n,
            }))
        }
        (DataType::Bytea, Value::Bytea(b)) => Ok(Value::Bytea(b)),
        (DataType::Bytea, Value::Text(t)) => Ok(Value::Bytea(crate::bytea::parse(&t)?.into())),
        (DataType::Uuid, Value::Uuid(u)) => Ok(Value::Uuid(u)),
        (DataType::Uuid, Value::Text(t)) => Ok(Value::Uuid(crate::uuid::parse(&t)?)),
        (DataType::Json, Value::Json(t) | Value::Jsonb(t)) => Ok(Value::Json(t)),
        (DataType::Json, Value::Text(t)) => {
            crate::json::validate(&t)?;
            Ok(Value::Json(t.into()))
        }
        (DataType::Jsonb, Value::Jsonb(t)) => Ok(Value::Jsonb(t)),
        (DataType::Jsonb, Value::Text(t)) => Ok(Value::Jsonb(crate::json::normalize(&t)?.into())),
        (DataType::Jsonb, Value::Json(t)) => Ok(Value::Jsonb(crate::json::normalize(&t)?.into())),
        (DataType::Int, Value::Numeric(n)) => crate::numeric::to_i64(&n).map(Value::Int),
        (DataType::Float, Value::Numeric(n)) => crate::numeric::to_f64(&n).map(Value::Float),
        (DataType::Int, Value::Int(v)) => Ok(Value::Int(v)),
        (DataType::Int, Value::Float(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(Value::Int(f as i64)),
        (DataType::Int, Value::Text(t)) => {
            t.trim().parse::<i64>().map(Value::Int).map_err(|_| mismatch(&Value::Text(t)))
        }
        (DataType::Float, Value::Float(v)) => Ok(Value::Float(v)),
        (DataType::Float, Value::Float4(v)) => Ok(Value::Float(f64::from(v))),
        (DataType::Float, Value::Int(v)) => Ok(Value::Float(v as f64)),
        // A REAL is rounded to single precision wherever it is assigned (PostgreSQL's
        // casts to float4, with their range errors).
        (DataType::Float4, Value::Float4(v)) => Ok(Value::Float4(v)),
        (DataType::Float4, Value::Float(v)) => crate::float4::from_f64(v).map(Value::Float4),
        (DataType::Float4, Value::Int(v)) => Ok(Value::Float4(crate::float4::from_i64(v))),
        // Through the decimal's text, as PostgreSQL's `numeric_float4` (one rounding).
        (DataType::Float4, Value::Numeric(n)) => {
            crate::float4::parse(&crate::numeric::to_text(&n)).map(Value::Float4)
        }
        (DataType::Float4, Value::Text(t)) => crate::float4::parse(&t).map(Value::Float4),
        (DataType::Int, Value::Float4(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(Value::Int(f as i64)),
        (DataType::Float, Value::Text(t)) => {
            t.trim().parse::<f64>().map(Value::Float).map_err(|_| mismatch(&Value::Text(t)))
        }
        (DataType::Bool, Value::Bool(b)) => Ok(Value::Bool(b)),
        (DataType::Bool, Value::Text(t)) => match t.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => Ok(Value::Bool(true)),
            "f" | "false" | "n" | "no" | "off" | "0" => Ok(Value::Bool(false)),
            _ => Err(mismatch(&Value::Text(t))),
        },
        (DataType::Char { len }, v) => {
            let mut text = match v {
                Value::Text(t) => t,
                other => other.to_string(),
            };
            // Trailing blanks are no part of a CHAR(n) value: a longer text whose excess
            // is blanks fits (PostgreSQL's rule).
            text.truncate(text.trim_end_matches(' ').len());
            if let Some(n) = len.filter(|&n| text.len() > n as usize) {
                let chars = text.chars().count();
                if chars > n as usize {
                    return Err(DbError::ValueTooLong { ty: format!("character({n})"), len: chars });
                }
            }
            Ok(Value::Text(text))
        }
        (DataType::Text { max_chars }, v) => {
            let text = match v {
                Value::Text(t) => t,
                other => other.to_string(),
            };
            // A text has no more characters than bytes: most values need no count.
            if let Some(max) = max_chars.filter(|&max| text.len() > max as usize) {
                let len = text.chars().count();
                if len > max as usize {
                    return Err(DbError::ValueTooLong { ty: ty.name(), len });
                }
            }
            Ok(Value::Text(text))
        }
        (ty, v) if ty.is_datetime() || matches!(ty, DataType::Time | DataType::Interval) => {
            coerce_temporal(v, ty)
        }
        // An OID is an unsigned 32-bit number; a negative one wraps, as PostgreSQL reads
        // `'-1'::oid` (4294967295).
        // A name bound to a `reg*` parameter (`CAST($1 AS regclass)` with $1 'my_seq'):
        // kept as text for the cast's lookup in the catalog, which `coerce` cannot see.
        (DataType::Catalog(c), Value::Text(t))
            if c.is_oid() && c != crate::value::CatalogType::Oid && t.trim().parse::<i64>().is_err() =>
        {
            Ok(Value::Text(t))
        }
        (DataType::Catalog(c), v) if c.is_oid() => {
            let number = match &v {
                Value::Int(i) => Some(*i),
                Value::Text(t) => t.trim().parse::<i64>().ok(),
                _ => None,
            };
            match number {
                Some(n) if (i32::MIN as i64..=u32::MAX as i64).contains(&n) => {
                    Ok(Value::Int(n as u32 as i64))
                }
                _ => Err(mismatch(&v)),
            }
        }
        (DataType::Catalog(c), v) => {
            let mut text = match v {
                Value::Text(t) => t,
                other => other.to_string(),
            };
            // A name holds 63 bytes, a "char" one.
            let max = if c == crate::value::CatalogType::Char { 1 } else { 63 };
            if text.len() > max {
                let mut end = max;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
            }
            Ok(Value::Text(text))
        }
        (_, v) => Err(mismatch(&v)),
    }
}

/// Converts a value to a date or time type: text is read as PostgreSQL reads it, a date
/// and the timestamps convert between each other (through the session's zone where one
/// is a TIMESTAMPTZ), a timestamp's time of day is a TIME, a TIME an INTERVAL.
fn coerce_temporal(value: Value, ty: DataType) -> DbResult<Value> {
    use crate::datetime as dt;
    let zone = || dt::ZoneId::current().zone();
    Ok(match (ty, value) {
        (ty, v) if v.has_type(ty) => v,
        (DataType::Date, Value::Text(t)) => Value::Date(dt::parse_date(&t)?),
        (DataType::Time, Value::Text(t)) => Value::Time(dt::parse_time(&t)?),
        (DataType::Timestamp, Value::Text(t)) => Value::Timestamp(dt::parse_timestamp(&t)?),
        (DataType::TimestampTz, Value::Text(t)) => Value::TimestampTz(dt::parse_timestamptz(&t)?),
        (DataType::Interval, Value::Text(t)) => Value::Interval(dt::parse_interval(&t)?),
        (DataType::Date, Value::Timestamp(t)) => Value::Date(dt::timestamp_to_date(t)?),
        (DataType::Date, Value::TimestampTz(t)) => {
            Value::Date(dt::timestamp_to_date(dt::timestamptz_to_timestamp(t, &zone())?)?)
        }
        (DataType::Timestamp, Value::Date(d)) => Value::Timestamp(dt::date_to_valid_timestamp(d)?),
        (DataType::Timestamp, Value::TimestampTz(t)) => {
            Value::Timestamp(dt::timestamptz_to_timestamp(t, &zone())?)
        }
        (DataType::TimestampTz, Value::Date(d)) => {
            Value::TimestampTz(dt::timestamp_to_timestamptz(dt::date_to_valid_timestamp(d)?, &zone())?)
        }
        (DataType::TimestampTz, Value::Timestamp(t)) => {
            Value::TimestampTz(dt::timestamp_to_timestamptz(t, &zone())?)
        }
        (DataType::Time, Value::Timestamp(t)) => Value::Time(t.rem_euclid(dt::MICROS_PER_DAY)),
        (DataType::Time, Value::TimestampTz(t)) => Value::Time(dt::time_of_day(dt::civil_in(t, &zone())?)),
        (DataType::Time, Value::Interval(iv)) => Value::Time(iv.micros.rem_euclid(dt::MICROS_PER_DAY)),
        (DataType::Interval, Value::Time(t)) => {
            Value::Interval(dt::Interval { months: 0, days: 0, micros: t })
        }
        (ty, v) => {
            return Err(DbError::CannotCoerce(format!(
                "cannot cast type {} to {}",
                v.data_type().map_or("unknown".into(), |t| t.name().to_lowercase()),
                ty.name().to_lowercase()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts() -> TableSchema {
        TableSchema::new(
            "accounts",
            vec![
                Column { name: "id".into(), ty: DataType::Int, nullable: true },
                Column { name: "name".into(), ty: DataType::Text { max_chars: Some(5) }, nullable: false },
                Column { name: "balance".into(), ty: DataType::Float, nullable: true },
            ],
            vec![0],
        )
        .unwrap()
    }

    fn checked(schema: &TableSchema, mut row: Vec<Value>) -> DbResult<Vec<Value>> {
        schema.check_row(&mut row).map(|()| row)
    }

    #[test]
    fn a_stored_array_must_hold_its_element_type_and_valid_json() {
        use crate::array::{Array, ElemType};
        let schema = |elem| {
            TableSchema::new(
                "t",
                vec![
                    Column { name: "id".into(), ty: DataType::Int, nullable: false },
                    Column { name: "a".into(), ty: DataType::Array(elem), nullable: true },
                ],
                vec![0],
            )
            .unwrap()
        };
        let ints = schema(ElemType::Int);
        let row = |items: Vec<Value>, elem| vec![Value::Int(1), Array { elem, items }.into_value()];
        assert!(ints.check_stored_row(&row(vec![Value::Int(2), Value::Null], ElemType::Int)).is_ok());
        for bad in
            [row(vec![Value::Text("2".into())], ElemType::Int), row(vec![Value::Int(2)], ElemType::Text)]
        {
            assert!(matches!(ints.check_stored_row(&bad), Err(DbError::CorruptChange(_))), "{bad:?}");
        }
        let docs = schema(ElemType::Jsonb);
        assert!(docs
            .check_stored_row(&row(vec![Value::Jsonb("{\"a\": 1}".into())], ElemType::Jsonb))
            .is_ok());
        let bad = row(vec![Value::Jsonb("{\"a\":1}".into())], ElemType::Jsonb);
        assert!(matches!(docs.check_stored_row(&bad), Err(DbError::CorruptChange(_))));
    }

    #[test]
    fn rows_are_checked_and_coerced() {
        let s = accounts();
        assert!(!s.columns[0].nullable, "key columns are NOT NULL");
        let row =
            checked(&s, vec![Value::Text("7".into()), Value::Text("bob".into()), Value::Int(3)]).unwrap();
        assert_eq!(row, vec![Value::Int(7), Value::Text("bob".into()), Value::Float(3.0)]);
        assert!(matches!(
            checked(&s, vec![Value::Null, Value::Text("a".into()), Value::Null]),
            Err(DbError::NotNull { .. })
        ));
        assert!(matches!(
            checked(&s, vec![Value::Int(1), Value::Text("toolong".into()), Value::Null]),
            Err(DbError::ValueTooLong { len: 7, .. })
        ));
        assert!(matches!(
            checked(&s, vec![Value::Text("x".into()), Value::Text("a".into()), Value::Null]),
            Err(DbError::TypeMismatch { .. })
        ));
        assert_eq!(s.key_of(&row), Key::from_elem(Value::Int(7), 1));
    }

    /// VARCHAR(n) counts characters, not bytes, on both sides of the byte-length shortcut.
    #[test]
    fn varchar_limits_count_characters() {
        let ty = DataType::Text { max_chars: Some(5) };
        for (text, fits) in
            [("abcde", true), ("abcdef", false), ("ééééé", true), ("éééééé", false), ("", true)]
        {
            let result = coerce(Value::Text(text.into()), ty);
            match (fits, result) {
                (true, Ok(v)) => assert_eq!(v, Value::Text(text.into())),
                (false, Err(DbError::ValueTooLong { len, .. })) => assert_eq!(len, text.chars().count()),
                (fits, other) => panic!("{text:?} (fits: {fits}): {other:?}"),
            }
        }
    }

    /// The integer shortcut orders keys exactly as comparing their values column by column.
    #[test]
    fn key_order_is_the_values_order() {
        use proptest::prelude::*;
        let value = prop_oneof![
            any::<i64>().prop_map(Value::Int),
            (-3i64..3).prop_map(Value::Int),
            (-3.0f64..3.0).prop_map(Value::Float),
            prop_oneof![Just(0.0), Just(-0.0), Just(1.0), Just(f64::NAN)].prop_map(Value::Float),
            "[a-c]{0,2}".prop_map(Value::Text),
            Just(Value::Null),
        ];
        // Shown as the list of values, as messages and lock waits always showed keys.
        assert_eq!(
            format!("{:?}", Key::from(vec![Value::Int(1), Value::Text("a".into())])),
            r#"[Int(1), Text("a")]"#
        );
        let key = proptest::collection::vec(value, 0..3);
        proptest!(|(a in key.clone(), b in key)| {
            let (ka, kb) = (Key::from(a.clone()), Key::from(b.clone()));
            prop_assert_eq!(ka.cmp(&kb), a.as_slice().cmp(b.as_slice()));
            prop_assert_eq!(ka == kb, a == b);
            // Equal keys hash alike (the lock table is a hash map), and a clone is equal.
            if ka == kb {
                prop_assert_eq!(hash_of(&ka), hash_of(&kb));
            }
            prop_assert!(ka.clone() == ka && ka.clone().cmp(&ka) == std::cmp::Ordering::Equal);
        });
        // The values that compare equal across a representation: none but identical bits.
        let zero = Key::from(vec![Value::Float(0.0)]);
        assert_ne!(zero, Key::from(vec![Value::Float(-0.0)]));
        assert_ne!(Key::from(vec![Value::Int(1)]), Key::from(vec![Value::Float(1.0)]));
        assert_eq!(hash_of(&zero), hash_of(&Key::from(vec![Value::Float(0.0)])));
    }

    fn hash_of(key: &Key) -> u64 {
        use std::hash::BuildHasher;
        rustc_hash::FxBuildHasher.hash_one(key)
    }

    #[test]
    fn schemas_need_a_valid_primary_key_or_get_a_hidden_row_id() {
        let cols = accounts().columns;
        assert!(TableSchema::new("t", cols.clone(), vec![3]).is_err());
        assert!(TableSchema::new("t", cols.clone(), vec![0, 0]).is_err());
        let keyless = TableSchema::new("t", cols.clone(), vec![]).unwrap();
        assert!(keyless.rowid);
        assert_eq!(keyless.rowid_index(), Some(cols.len()));
        assert_eq!(keyless.primary_key, [cols.len()]);
        assert_eq!(keyless.visible_columns(), &cols[..]);
        assert_eq!(keyless.clone().validated().unwrap(), keyless);
        let mut forged = keyless.clone();
        forged.columns[cols.len()].nullable = true;
        assert!(forged.validated().is_err(), "a row id as a file may not hold it");
    }
}
