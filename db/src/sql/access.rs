//! Access paths: how a statement finds the rows its WHERE may match, using the primary
//! key.
//!
//! [`plan`] looks at the conjuncts (ANDed parts) of a compiled WHERE that compare a key
//! column with a constant:
//! - every key column pinned with `=` (or `IN (...)`, or `= ANY(array)`): point lookups;
//! - the first key columns pinned with `=`, and the next one bounded (`<`, `<=`, `>`,
//!   `>=`, BETWEEN, or a set of `=` values): a range scan of the ordered map;
//! - otherwise a full scan.
//!
//! An access path only narrows: it may hand over rows the WHERE rejects (bounds are made
//! inclusive, a value of another type is widened to the key column's type), never miss
//! one, so the caller always evaluates the whole WHERE on every row it gets.
//!
//! Rows are read as the transaction sees them: its own changes over the committed
//! snapshot. The transaction's overlay is private to `database.rs`, so a transaction
//! that has changed something reads through `Session::get` (point lookups) and
//! `Session::scan` (ranges and full scans: the whole table, filtered); one that has not
//! reads the snapshot's ordered map directly. See `Session::own_changes`.
//!
//! Two more readers use the same merge of own changes over one snapshot: [`KeyReader`]
//! (repeated lookups by a key or index prefix: the inner side of an index nested loop
//! join) and `Session::visit_ordered` (every row in an index's order, read lazily: ORDER
//! BY ... LIMIT and min/max, which stop after a few rows).
//!
//! [`rows_visited`] counts, per thread, the rows handed to the statement (a diagnostic
//! that tests use to check that a point lookup does not scan).

use std::cell::Cell;
use std::ops::Bound;

use crate::database::Session;
use crate::error::DbResult;
use crate::numeric::RoundMode;
use crate::schema::{Key, Row, TableSchema};
use crate::sql::expr::{to_num, BinOp, Expr, Num};
use crate::value::{DataType, Value};

/// At most this many point lookups come out of IN lists; beyond, a range or full scan.
const MAX_POINTS: usize = 10_000;

thread_local! {
    static ROWS_VISITED: Cell<u64> = const { Cell::new(0) };
}

/// How many rows statements executed on this thread have read from tables (each row an
/// access path handed over, before the WHERE). A diagnostic for tests and benchmarks.
pub fn rows_visited() -> u64 {
    ROWS_VISITED.with(Cell::get)
}

pub(crate) fn count_visit() {
    ROWS_VISITED.with(|c| c.set(c.get() + 1));
}

/// How to find the candidate rows of a statement.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Access {
    /// The WHERE can match no row.
    Empty,
    /// These primary keys, in ascending order.
    Points(Vec<Key>),
    /// Keys starting with `prefix`, whose next component lies within `lo` and `hi`.
    Range {
        prefix: Key,
        lo: Option<Limit>,
        hi: Option<Limit>,
    },
    /// Through the table's `index`-th secondary index: `within` (`Points` or `Range`)
    /// over the index's columns (a point is a value of every index column, and may match
    /// several rows).
    Index {
        index: usize,
        within: Box<Access>,
    },
    Full,
}

impl Access {
    /// A short description, for diagnostics.
    pub(crate) fn describe(&self) -> String {
        match self {
            Access::Empty => "empty".into(),
            Access::Points(keys) => format!("{} point lookup(s)", keys.len()),
            Access::Range { prefix, lo, hi } => format!("range scan (prefix {prefix:?}, {lo:?}..={hi:?})"),
            Access::Index { index, within } => format!("index {index}: {}", within.describe()),
            Access::Full => "full scan".into(),
        }
    }
}

/// A bound of a range: a key component value, and whether it is itself in the range.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Limit {
    pub value: Value,
    pub inclusive: bool,
}

impl Limit {
    fn inclusive(value: Value) -> Limit {
        Limit { value, inclusive: true }
    }

    fn admits_above(&self, v: &Value) -> bool {
        if self.inclusive {
            *v >= self.value
        } else {
            *v > self.value
        }
    }

    fn admits_below(&self, v: &Value) -> bool {
        if self.inclusive {
            *v <= self.value
        } else {
            *v < self.value
        }
    }
}

/// What a constant means as a key column's value.
enum Conv {
    /// The key value, and whether it is exact (a bound keeps its exclusivity) or was
    /// rounded toward the range (the bound becomes inclusive).
    Value(Value, bool),
    /// No key value can satisfy the comparison (`int_key = 1.5`).
    Never,
    /// Not usable for the key (compared in another type's order): ignore the conjunct.
    Unknown,
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Equal,
    Lower,
    Upper,
}

/// The key value of column type `ty` to look for, given a constant compared with it.
fn convert(v: &Value, ty: DataType, role: Role) -> Conv {
    match (ty, v) {
        (_, Value::Null) => Conv::Never,
        // JSON keys compare by value in SQL (1.0 = 1.00 in a jsonb), by text in the
        // tree: no key value stands for a JSON constant.
        (DataType::Json | DataType::Jsonb, _) => Conv::Unknown,
        // Text compared with a CHAR(n) key: without its trailing blanks.
        (DataType::Char { .. }, Value::Text(t)) => {
            Conv::Value(Value::Text(t.trim_end_matches(' ').to_string()), true)
        }
        _ if v.has_type(ty) => Conv::Value(v.clone(), true),
        (DataType::Int, Value::Float(f)) => {
            let exact = f.fract() == 0.0;
            let f = match role {
                Role::Equal if !exact => return Conv::Never,
                Role::Equal => *f,
                Role::Lower => f.ceil(),
                Role::Upper => f.floor(),
            };
            if f.is_finite() && f.abs() < 9.2e18 {
                Conv::Value(Value::Int(f as i64), exact)
            } else {
                Conv::Unknown
            }
        }
        (DataType::Float, Value::Int(i)) => Conv::Value(Value::Float(*i as f64), true),
        (DataType::Float, Value::Float4(f)) => Conv::Value(Value::Float(f64::from(*f)), true),
        // A REAL key compared with text: the text read as a REAL, as SQL compares them.
        (DataType::Float4, Value::Text(t)) => match crate::float4::parse(t) {
            Ok(f) => Conv::Value(Value::Float4(f), true),
            Err(_) => Conv::Unknown,
        },
        // A REAL key compared with another number is compared as a double: the key value
        // that is that double exactly, else none equals it (and a bound between two
        // float4s is left to the filter).
        (DataType::Float4, Value::Int(_) | Value::Float(_) | Value::Numeric(_)) => {
            let Ok(wide) = to_num(v).map(|n| n.as_f64()) else { return Conv::Unknown };
            let narrow = wide as f32;
            match (f64::from(narrow) == wide || wide.is_nan(), role) {
                (true, _) => Conv::Value(Value::Float4(narrow), true),
                (false, Role::Equal) => Conv::Never,
                (false, _) => Conv::Unknown,
            }
        }
        // INT and NUMERIC compare exactly: a fraction never equals an integer key, and
        // bounds round toward the range.
        (DataType::Int, Value::Numeric(n)) => {
            let exact = n.is_integer();
            let mode = match role {
                Role::Equal if !exact => return Conv::Never,
                Role::Equal | Role::Upper => RoundMode::Floor,
                Role::Lower => RoundMode::Ceiling,
            };
            match crate::numeric::round(n, 0, mode).ok().and_then(|r| crate::numeric::as_exact_i64(&r)) {
                Some(i) => Conv::Value(Value::Int(i), exact),
                None => Conv::Unknown,
            }
        }
        (DataType::Numeric(_), Value::Int(i)) => {
            Conv::Value(Value::numeric(crate::numeric::from_i64(*i)), true)
        }
        // A FLOAT key compared with a NUMERIC: the numeric as a float, as SQL compares
        // them. (A NUMERIC key compared with a FLOAT is compared as a float, which many
        // keys may equal: no key value stands for it.)
        (DataType::Float, Value::Numeric(n)) => match crate::numeric::to_f64(n) {
            Ok(f) => Conv::Value(Value::Float(f), true),
            Err(_) => Conv::Unknown,
        },
        (DataType::Int | DataType::Float | DataType::Numeric(_), Value::Text(_)) => match to_num(v) {
            Ok(Num::I(i)) => convert(&Value::Int(i), ty, role),
            Ok(Num::F(f)) => convert(&Value::Float(f), ty, role),
            Ok(Num::N(n)) => convert(&Value::numeric(n), ty, role),
            Err(_) => Conv::Unknown,
        },
        // Text compared with a BYTEA or UUID key is read as one (`id = 'a0ee...'`).
        (DataType::Bytea | DataType::Uuid, Value::Text(_)) => match crate::schema::coerce(v.clone(), ty) {
            Ok(key) => Conv::Value(key, true),
            Err(_) => Conv::Unknown,
        },
        (DataType::Bool, Value::Text(_)) => match crate::schema::coerce(v.clone(), DataType::Bool) {
            Ok(b) => Conv::Value(b, true),
            Err(_) => Conv::Unknown,
        },
        _ => Conv::Unknown,
    }
}

fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Binary(BinOp::And, a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other),
    }
}

/// Per key column: the values `=` allows (None: any), and inclusive bounds.
#[derive(Clone, Default)]
struct KeyConstraint {
    equal: Option<Vec<Value>>,
    lo: Option<Limit>,
    hi: Option<Limit>,
}

impl KeyConstraint {
    fn restrict_equal(&mut self, mut values: Vec<Value>) {
        values.sort();
        values.dedup();
        self.equal = Some(match self.equal.take() {
            None => values,
            Some(old) => old.into_iter().filter(|v| values.binary_search(v).is_ok()).collect(),
        });
    }

    fn raise_lo(&mut self, new: Limit) {
        match &mut self.lo {
            Some(lo) if new.value < lo.value => {}
            Some(lo) if new.value == lo.value => lo.inclusive &= new.inclusive,
            _ => self.lo = Some(new),
        }
    }

    fn lower_hi(&mut self, new: Limit) {
        match &mut self.hi {
            Some(hi) if new.value > hi.value => {}
            Some(hi) if new.value == hi.value => hi.inclusive &= new.inclusive,
            _ => self.hi = Some(new),
        }
    }

    /// The `=` values within the bounds.
    fn equal_values(&self) -> Option<Vec<Value>> {
        self.equal.as_ref().map(|values| {
            values
                .iter()
                .filter(|v| {
                    self.lo.as_ref().is_none_or(|lo| lo.admits_above(v))
                        && self.hi.as_ref().is_none_or(|hi| hi.admits_below(v))
                })
                .cloned()
                .collect()
        })
    }
}

/// Chooses the access path for a WHERE (already compiled and constant-folded): primary
/// key lookups, else the secondary index the WHERE pins most (every column of it by
/// `=`/`IN`, else a prefix and a range), else a primary key range, else a full scan.
pub(crate) fn plan(schema: &TableSchema, filter: Option<&Expr>) -> Access {
    let Some(filter) = filter else { return Access::Full };
    if let Some(point) = single_key_point(schema, filter) {
        return point;
    }
    let by_key = plan_conjuncts(schema, &schema.primary_key, filter);
    if matches!(by_key, Access::Points(_) | Access::Empty) || schema.indexes.is_empty() {
        return by_key;
    }
    // How much of its key an access pins: points, a prefix and a range, a range, nothing.
    let rank = |a: &Access| match a {
        Access::Empty => 4,
        Access::Points(_) => 3,
        Access::Range { prefix, .. } if !prefix.is_empty() => 2,
        Access::Range { .. } => 1,
        _ => 0,
    };
    let mut best = by_key;
    for (i, index) in schema.indexes.iter().enumerate() {
        let access = plan_conjuncts(schema, &index.columns, filter);
        if rank(&access) > rank(&best) {
            best = match access {
                Access::Empty => return Access::Empty,
                within => Access::Index { index: i, within: Box::new(within) },
            };
        }
    }
    best
}

/// The commonest WHERE of OLTP, `key = value` on a one-column primary key, without the
/// general planner's bookkeeping: the same answer `plan_conjuncts` gives (see the test
/// `the_point_shortcut_agrees_with_the_general_planner`), or None for anything else.
fn single_key_point(schema: &TableSchema, filter: &Expr) -> Option<Access> {
    let &[key_column] = schema.primary_key.as_slice() else { return None };
    let Expr::Binary(BinOp::Eq, a, b) = filter else { return None };
    let value = match (a.as_ref(), b.as_ref()) {
        (Expr::Column(c), Expr::Literal(v)) | (Expr::Literal(v), Expr::Column(c)) if *c == key_column => v,
        _ => return None,
    };
    match convert(value, schema.columns[key_column].ty, Role::Equal) {
        Conv::Value(v, _) => Some(Access::Points(vec![Key::from_elem(v, 1)])),
        Conv::Never => Some(Access::Empty),
        Conv::Unknown => None,
    }
}

/// The general planner: constraints on the key `key_columns` (the primary key's, or a
/// secondary index's) from the WHERE's conjuncts.
fn plan_conjuncts(schema: &TableSchema, key_columns: &[usize], filter: &Expr) -> Access {
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    let mut keys = vec![KeyConstraint::default(); key_columns.len()];
    let key_position = |column: usize| key_columns.iter().position(|&k| k == column);
    for part in parts {
        match part {
            Expr::Literal(Value::Bool(false) | Value::Null) => return Access::Empty,
            Expr::Binary(op, a, b) => {
                let (column, op, value) = match (a.as_ref(), b.as_ref()) {
                    (Expr::Column(c), Expr::Literal(v)) => (*c, *op, v),
                    (Expr::Literal(v), Expr::Column(c)) => (*c, op.flip(), v),
                    _ => continue,
                };
                let Some(k) = key_position(column) else { continue };
                let ty = schema.columns[column].ty;
                let role = match op {
                    BinOp::Eq => Role::Equal,
                    BinOp::Gt | BinOp::GtEq => Role::Lower,
                    BinOp::Lt | BinOp::LtEq => Role::Upper,
                    _ => continue,
                };
                let strict = matches!(op, BinOp::Gt | BinOp::Lt);
                match (convert(value, ty, role), role) {
                    (Conv::Never, _) => return Access::Empty,
                    (Conv::Unknown, _) => {}
                    (Conv::Value(v, _), Role::Equal) => keys[k].restrict_equal(vec![v]),
                    (Conv::Value(value, exact), Role::Lower) => {
                        keys[k].raise_lo(Limit { value, inclusive: !(strict && exact) })
                    }
                    (Conv::Value(value, exact), Role::Upper) => {
                        keys[k].lower_hi(Limit { value, inclusive: !(strict && exact) })
                    }
                }
            }
            Expr::Between(e, lo, hi, false) => {
                let (Expr::Column(column), Expr::Literal(lo), Expr::Literal(hi)) =
                    (e.as_ref(), lo.as_ref(), hi.as_ref())
                else {
                    continue;
                };
                let Some(k) = key_position(*column) else { continue };
                let ty = schema.columns[*column].ty;
                match convert(lo, ty, Role::Lower) {
                    Conv::Never => return Access::Empty,
                    Conv::Value(v, _) => keys[k].raise_lo(Limit::inclusive(v)),
                    Conv::Unknown => {}
                }
                match convert(hi, ty, Role::Upper) {
                    Conv::Never => return Access::Empty,
                    Conv::Value(v, _) => keys[k].lower_hi(Limit::inclusive(v)),
                    Conv::Unknown => {}
                }
            }
            Expr::InList(e, list, false) => {
                let Expr::Column(column) = e.as_ref() else { continue };
                let Some(k) = key_position(*column) else { continue };
                let items: Option<Vec<&Value>> = list
                    .iter()
                    .map(|item| match item {
                        Expr::Literal(v) => Some(v),
                        _ => None,
                    })
                    .collect();
                if let Some(values) = items.and_then(|items| equal_values(items, schema.columns[*column].ty))
                {
                    keys[k].restrict_equal(values);
                }
            }
            // `key = ANY(array)`, what drivers send for an IN list (`= ANY($1)`): as IN.
            Expr::AnyArray { lhs, op: BinOp::Eq, all: false, array } => {
                let Expr::Column(column) = lhs.as_ref() else { continue };
                let Some(k) = key_position(*column) else { continue };
                let items: Option<Vec<&Value>> = match array.as_ref() {
                    Expr::Literal(Value::Array(a)) => Some(a.items.iter().collect()),
                    Expr::Literal(Value::Null) => return Access::Empty,
                    Expr::Array(_, elements) => elements
                        .iter()
                        .map(|item| match item {
                            Expr::Literal(v) => Some(v),
                            _ => None,
                        })
                        .collect(),
                    _ => None,
                };
                if let Some(values) = items.and_then(|items| equal_values(items, schema.columns[*column].ty))
                {
                    keys[k].restrict_equal(values);
                }
            }
            _ => {}
        }
    }
    // Every key column pinned: point lookups.
    let equal: Vec<Option<Vec<Value>>> = keys.iter().map(KeyConstraint::equal_values).collect();
    if equal.iter().any(|e| e.as_ref().is_some_and(Vec::is_empty)) {
        return Access::Empty;
    }
    if equal.iter().all(Option::is_some) {
        let combinations = equal.iter().flatten().try_fold(1usize, |n, values| n.checked_mul(values.len()));
        if combinations.is_some_and(|n| n <= MAX_POINTS) {
            let mut points: Vec<Key> = vec![Key::new()];
            for values in equal.iter().flatten() {
                points = points
                    .into_iter()
                    .flat_map(|prefix| {
                        values.iter().map(move |v| {
                            let mut key = prefix.clone();
                            key.push(v.clone());
                            key
                        })
                    })
                    .collect();
            }
            points.sort();
            return Access::Points(points);
        }
    }
    // A prefix pinned to single values, then bounds on the next key column.
    let mut prefix = Vec::new();
    for e in &equal {
        match e {
            Some(values) if values.len() == 1 => prefix.push(values[0].clone()),
            _ => break,
        }
    }
    let (lo, hi) = match keys.get(prefix.len()) {
        None => (None, None),
        Some(next) => match &equal[prefix.len()] {
            Some(values) => {
                (values.first().cloned().map(Limit::inclusive), values.last().cloned().map(Limit::inclusive))
            }
            None => (next.lo.clone(), next.hi.clone()),
        },
    };
    if prefix.is_empty() && lo.is_none() && hi.is_none() {
        return Access::Full;
    }
    Access::Range { prefix: prefix.into(), lo, hi }
}

/// The key values of column type `ty` that `= v` for some `v` of `items` may find (a
/// NULL or a value no key equals finds none), or None if one is compared in another
/// type's order (the list cannot narrow the access).
fn equal_values(items: Vec<&Value>, ty: DataType) -> Option<Vec<Value>> {
    let mut values = Vec::with_capacity(items.len());
    for v in items {
        match convert(v, ty, Role::Equal) {
            Conv::Value(v, _) => values.push(v),
            Conv::Never => {}
            Conv::Unknown => return None,
        }
    }
    Some(values)
}

fn in_range(key: &[Value], prefix: &[Value], lo: &Option<Limit>, hi: &Option<Limit>) -> bool {
    if key.len() < prefix.len() || key[..prefix.len()] != *prefix {
        return false;
    }
    match key.get(prefix.len()) {
        None => true,
        Some(next) => {
            lo.as_ref().is_none_or(|lo| lo.admits_above(next))
                && hi.as_ref().is_none_or(|hi| hi.admits_below(next))
        }
    }
}

/// Visits the committed rows (in key order) with this transaction's own versions merged in
/// (`mine`, in key order: a Some replaces or adds a row, a None hides one), until `hand`
/// returns false.
fn merge_visit<'a>(
    committed: impl Iterator<Item = (&'a Key, &'a Row)>,
    mine: &[(Key, Option<Row>)],
    hand: &mut impl FnMut(&Row) -> DbResult<bool>,
) -> DbResult<()> {
    let mut mine = mine.iter().peekable();
    for (key, row) in committed {
        while let Some((k, own)) = mine.peek() {
            if k >= key {
                break;
            }
            if let Some(own) = own {
                if !hand(own)? {
                    return Ok(());
                }
            }
            mine.next();
        }
        if let Some((k, own)) = mine.peek() {
            if k == key {
                let own = own.clone();
                mine.next();
                if let Some(own) = own {
                    if !hand(&own)? {
                        return Ok(());
                    }
                }
                continue;
            }
        }
        if !hand(row)? {
            return Ok(());
        }
    }
    for (_, own) in mine {
        if let Some(own) = own {
            if !hand(own)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Repeated reads of one table by a prefix of its primary key or of one of its secondary
/// indexes: the inner side of an index nested loop join, one lookup per outer row. All
/// the lookups see one snapshot (taken when the reader is made), with the transaction's
/// own changes merged in as `Session::visit_rows` merges them: a committed row the
/// transaction changed or deleted is replaced by its own version, and its own rows are
/// found by their values of the same columns.
pub(crate) struct KeyReader {
    snapshot: std::sync::Arc<crate::state::DbState>,
    table: String,
    schema: std::sync::Arc<TableSchema>,
    /// None: the primary key; Some(i): the table's i-th secondary index.
    index: Option<usize>,
    /// The transaction's own versions of the table's rows, in key order (None: deleted).
    own: Vec<(Key, Option<Row>)>,
    /// The own rows present, by their values of the looked-up columns, sorted.
    own_by_columns: Vec<(Vec<Value>, Row)>,
}

impl KeyReader {
    /// The columns a lookup's prefix gives values of, in order.
    fn columns(&self) -> &[usize] {
        match self.index {
            None => &self.schema.primary_key,
            Some(i) => &self.schema.indexes[i].columns,
        }
    }

    /// Hands each row whose first `prefix.len()` looked-up columns equal `prefix` (values
    /// already of the columns' types: see [`key_value`]) to `hand`.
    pub(crate) fn lookup(
        &self,
        prefix: &[Value],
        hand: &mut dyn FnMut(&Row) -> DbResult<()>,
    ) -> DbResult<()> {
        assert!(
            !prefix.is_empty() && prefix.len() <= self.columns().len(),
            "a lookup of {} values on {} columns",
            prefix.len(),
            self.columns().len()
        );
        let mut hand_committed = |key: &Key, row: &Row| -> DbResult<()> {
            // A row this transaction changed is handed in its own version below.
            if !self.own.is_empty() && self.own.binary_search_by(|(k, _)| k.cmp(key)).is_ok() {
                return Ok(());
            }
            count_visit();
            hand(row)
        };
        let view = self.snapshot.table(&self.table)?;
        match self.index {
            None if prefix.len() == self.schema.primary_key.len() => {
                let key: Key = prefix.iter().cloned().collect();
                if let Some(row) = view.rows.get(&key) {
                    hand_committed(&key, row)?;
                }
            }
            None => {
                let start: Key = prefix.iter().cloned().collect();
                for (key, row) in view
                    .rows
                    .range((Bound::Included(start), Bound::Unbounded))
                    .take_while(|(key, _)| key.starts_with(prefix))
                {
                    hand_committed(key, row)?;
                }
            }
            Some(index) => {
                for row in self.snapshot.index_rows(&self.table, index, prefix)? {
                    hand_committed(&self.schema.key_of(&row), &row)?;
                }
            }
        }
        if !self.own_by_columns.is_empty() {
            let first = self.own_by_columns.partition_point(|(values, _)| values[..prefix.len()] < *prefix);
            for (values, row) in &self.own_by_columns[first..] {
                if values[..prefix.len()] != *prefix {
                    break;
                }
                count_visit();
                hand(row)?;
            }
        }
        Ok(())
    }
}

/// The value to look up in a key column of type `ty` for a value an equality compares
/// with it: Ok(Some) the key value, Ok(None) when no key value can equal it (NULL, or
/// `int_key = 1.5`), Err(()) when the column's order cannot find it (the caller reads
/// otherwise).
#[allow(clippy::result_unit_err)]
pub(crate) fn key_value(v: &Value, ty: DataType) -> Result<Option<Value>, ()> {
    match convert(v, ty, Role::Equal) {
        Conv::Value(v, _) => Ok(Some(v)),
        Conv::Never => Ok(None),
        Conv::Unknown => Err(()),
    }
}

/// How an ordered scan treats rows whose first ordering column is NULL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NullRows {
    /// Where PostgreSQL sorts them by default: last ascending, first descending.
    Include,
    /// Not handed at all (min and max ignore NULLs).
    Skip,
}

impl Session {
    /// Hands the rows of `table` to `visit` in the order of its primary key (`index`
    /// None) or of its `index`-th secondary index, descending when `backward`, until
    /// `visit` returns false: the access of an `ORDER BY <index prefix> LIMIT n` and of
    /// min/max, which stop after a few rows. The transaction's own changes are merged in
    /// (its own rows in their places, the committed versions of rows it changed left
    /// out), as `visit_rows` merges them.
    pub(crate) fn visit_ordered(
        &self,
        table: &str,
        index: Option<usize>,
        backward: bool,
        nulls: NullRows,
        visit: &mut dyn FnMut(&Row) -> DbResult<bool>,
    ) -> DbResult<()> {
        let snapshot = self.db.snapshot();
        let schema = snapshot.table(table)?.schema.clone();
        let own = if self.own_changes() { self.own_rows_read(table) } else { Vec::new() };
        let entry_of = |row: &Row| -> Key {
            match index {
                None => schema.key_of(row),
                Some(i) => schema.index_key(&schema.indexes[i], row),
            }
        };
        let mut mine: Vec<(Key, &Row)> =
            own.iter().filter_map(|(_, row)| row.as_ref()).map(|row| (entry_of(row), row)).collect();
        mine.sort_by(|a, b| if backward { b.0.cmp(&a.0) } else { a.0.cmp(&b.0) });
        let changed = |entry: &Key| -> bool {
            if own.is_empty() {
                return false;
            }
            let key: Key = match index {
                None => entry.clone(),
                Some(i) => entry[schema.indexes[i].columns.len()..].iter().cloned().collect(),
            };
            own.binary_search_by(|(k, _)| k.cmp(&key)).is_ok()
        };
        let mut handed = 0u32;
        // One pass over the entries whose first value is (`null_pass`) or is not NULL.
        let mut pass = |null_pass: bool, visit: &mut dyn FnMut(&Row) -> DbResult<bool>| -> DbResult<bool> {
            // The NULLs lead the ascending order: read forward whichever way the pass
            // goes (a descending read would pass every other entry first).
            let entries: Box<dyn Iterator<Item = (Key, &Row)>> = match (null_pass, backward) {
                (true, false) => Box::new(
                    snapshot.ordered_entries(table, index, false)?.take_while(|(e, _)| e[0].is_null()),
                ),
                (true, true) => {
                    let mut nulls: Vec<(Key, &Row)> = snapshot
                        .ordered_entries(table, index, false)?
                        .take_while(|(e, _)| e[0].is_null())
                        .collect();
                    nulls.reverse();
                    Box::new(nulls.into_iter())
                }
                (false, false) => Box::new(
                    snapshot.ordered_entries(table, index, false)?.skip_while(|(e, _)| e[0].is_null()),
                ),
                (false, true) => Box::new(
                    snapshot.ordered_entries(table, index, true)?.take_while(|(e, _)| !e[0].is_null()),
                ),
            };
            let committed = entries.filter(|(entry, _)| !changed(entry));
            let mut mine = mine.iter().filter(|(entry, _)| entry[0].is_null() == null_pass).peekable();
            let mut committed = committed.peekable();
            loop {
                let take_mine = match (committed.peek(), mine.peek()) {
                    (None, None) => return Ok(true),
                    (Some(_), None) => false,
                    (None, Some(_)) => true,
                    (Some((c, _)), Some((m, _))) => {
                        if backward {
                            m > c
                        } else {
                            m < c
                        }
                    }
                };
                let row: &Row = if take_mine {
                    mine.next().expect("peeked").1
                } else {
                    committed.next().expect("peeked").1
                };
                count_visit();
                handed = handed.wrapping_add(1);
                if handed.is_multiple_of(crate::database::CANCEL_CHECK_ROWS) {
                    self.check_cancel()?;
                }
                if !visit(row)? {
                    return Ok(false);
                }
            }
        };
        // NULL is the lowest value of the entries' order; PostgreSQL's default puts NULLs
        // after the other values ascending and before them descending.
        match (nulls, backward) {
            (NullRows::Skip, _) => {
                pass(false, visit)?;
            }
            (NullRows::Include, false) => {
                if pass(false, visit)? {
                    pass(true, visit)?;
                }
            }
            (NullRows::Include, true) => {
                if pass(true, visit)? {
                    pass(false, visit)?;
                }
            }
        }
        Ok(())
    }
}

impl Session {
    /// A reader of `table` by a prefix of its primary key (`index` None) or of its
    /// `index`-th secondary index, for many lookups (see [`KeyReader`]).
    pub(crate) fn key_reader(&self, table: &str, index: Option<usize>) -> DbResult<KeyReader> {
        let snapshot = self.db.snapshot();
        let schema = snapshot.table(table)?.schema.clone();
        let own = if self.own_changes() { self.own_rows_read(table) } else { Vec::new() };
        let mut reader =
            KeyReader { snapshot, table: table.to_string(), schema, index, own, own_by_columns: Vec::new() };
        let columns = reader.columns().to_vec();
        let mut own_by_columns: Vec<(Vec<Value>, Row)> = reader
            .own
            .iter()
            .filter_map(|(_, row)| row.as_ref())
            .map(|row| (columns.iter().map(|&c| row[c].clone()).collect(), row.clone()))
            .collect();
        own_by_columns.sort_by(|a, b| a.0.cmp(&b.0));
        reader.own_by_columns = own_by_columns;
        Ok(reader)
    }

    /// Whether the open transaction may have changed rows (so reads must go through its
    /// overlay). Conservative: true from its first logged change to its end.
    pub(crate) fn own_changes(&self) -> bool {
        // A temporary table's changes are in the transaction but not in its redo.
        self.redo.transaction().is_some() || (self.temp.made_any && self.has_changes())
    }

    /// The rows of `keys` in the stored table `table`, as the statement sees them (with
    /// the transaction's own changes if `own`): a few keys, read under their shards'
    /// locks, no snapshot (see `read_key`), and handed back with the locks released.
    pub(crate) fn read_points(&self, table: &str, keys: &[Key], own: bool) -> DbResult<Vec<Row>> {
        self.db.read_keys(keys, |shards| -> DbResult<Vec<Row>> {
            let mut found = Vec::with_capacity(keys.len());
            for key in keys {
                let st = shards.of(key);
                let row = if own {
                    self.get_read_in(st, table, key)?
                } else {
                    st.table(table)?.rows.get(key).cloned()
                };
                found.extend(row);
            }
            Ok(found)
        })
    }

    /// Hands every row of `table` the access path selects, as this transaction sees it,
    /// to `visit`, in primary-key order, until `visit` returns false.
    /// `visit`, counting each row handed to it and looking at a cancel request every
    /// `CANCEL_CHECK_ROWS` rows (not per row).
    fn handing<'v>(
        &'v self,
        visit: &'v mut dyn FnMut(&Row) -> DbResult<bool>,
    ) -> impl FnMut(&Row) -> DbResult<bool> + 'v {
        let mut handed = 0u32;
        move |row: &Row| {
            count_visit();
            handed = handed.wrapping_add(1);
            if handed.is_multiple_of(crate::database::CANCEL_CHECK_ROWS) {
                self.check_cancel()?;
            }
            visit(row)
        }
    }

    pub(crate) fn visit_rows(
        &self,
        table: &str,
        access: &Access,
        visit: &mut dyn FnMut(&Row) -> DbResult<bool>,
    ) -> DbResult<()> {
        if let Some(view) = self.view_rows(table)? {
            // A view is built whole for each statement; the caller filters its rows.
            for row in view.values() {
                count_visit();
                if !visit(row)? {
                    break;
                }
            }
            return Ok(());
        }
        let own = self.own_changes();
        if own && matches!(access, Access::Index { .. }) {
            // The committed index does not hold the transaction's own changes: every
            // row as the transaction sees it (the caller's WHERE picks them).
            return self.visit_rows(table, &Access::Full, visit);
        }
        let mut hand = self.handing(visit);
        match access {
            Access::Empty => self.db.read_catalog(|st| st.table(table).map(|_| ()))?,
            Access::Points(keys) => {
                let found = self.read_points(table, keys, own)?;
                for row in &found {
                    if !hand(row)? {
                        break;
                    }
                }
            }
            Access::Range { prefix, lo, hi } => {
                let snapshot = self.db.snapshot();
                let rows = &snapshot.table(table)?.rows;
                let mut start = prefix.clone();
                if let Some(lo) = lo {
                    start.push(lo.value.clone());
                }
                let committed = rows
                    .range((Bound::Included(start), Bound::Unbounded))
                    .take_while(|(key, _)| {
                        key[..prefix.len()] == prefix[..]
                            && hi.as_ref().is_none_or(|hi| hi.admits_below(&key[prefix.len()]))
                    })
                    .filter(|(key, _)| lo.as_ref().is_none_or(|lo| lo.admits_above(&key[prefix.len()])));
                let mine: Vec<(Key, Option<Row>)> = if own {
                    self.own_rows_read(table)
                        .into_iter()
                        .filter(|(k, _)| in_range(k, prefix, lo, hi))
                        .collect()
                } else {
                    Vec::new()
                };
                merge_visit(committed, &mine, &mut hand)?;
            }
            Access::Index { index, within } => {
                let snapshot = self.db.snapshot();
                let rows = match within.as_ref() {
                    Access::Points(points) => {
                        let mut rows = Vec::new();
                        for point in points {
                            rows.extend(snapshot.index_rows(table, *index, point)?);
                        }
                        rows
                    }
                    Access::Range { prefix, lo, hi } => {
                        let mut start = prefix.clone();
                        if let Some(lo) = lo {
                            start.push(lo.value.clone());
                        }
                        let n = prefix.len();
                        // (A bound's exclusiveness is left to the caller's WHERE.)
                        snapshot.index_scan(table, *index, &start, &mut |entry| {
                            entry[..n] == prefix[..]
                                && hi.as_ref().is_none_or(|hi| hi.admits_below(&entry[n]))
                        })?
                    }
                    other => unreachable!("an index access is points or a range, not {other:?}"),
                };
                // Handed in primary-key order, as every access path hands its rows (a
                // plan relies on it: ORDER BY the key needs no sort).
                let schema = &snapshot.table(table)?.schema.clone();
                let mut rows: Vec<(Key, Row)> = rows.into_iter().map(|r| (schema.key_of(&r), r)).collect();
                rows.sort_by(|a, b| a.0.cmp(&b.0));
                for (_, row) in &rows {
                    if !hand(row)? {
                        break;
                    }
                }
            }
            Access::Full => {
                let snapshot = self.db.snapshot();
                let rows = &snapshot.table(table)?.rows;
                let mine = if own { self.own_rows_read(table) } else { Vec::new() };
                merge_visit(rows.iter(), &mine, &mut hand)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Column;

    fn schema() -> TableSchema {
        TableSchema::new(
            "t",
            vec![
                Column { name: "a".into(), ty: DataType::Int, nullable: false },
                Column { name: "b".into(), ty: DataType::Text { max_chars: None }, nullable: false },
                Column { name: "c".into(), ty: DataType::Float, nullable: true },
            ],
            vec![0, 1],
        )
        .unwrap()
    }

    fn cmp(op: BinOp, column: usize, v: Value) -> Expr {
        Expr::Binary(op, Box::new(Expr::Column(column)), Box::new(Expr::Literal(v)))
    }

    fn and(a: Expr, b: Expr) -> Expr {
        Expr::Binary(BinOp::And, Box::new(a), Box::new(b))
    }

    #[test]
    fn the_point_shortcut_agrees_with_the_general_planner() {
        let one_key = |ty: DataType| {
            TableSchema::new(
                "p",
                vec![
                    Column { name: "k".into(), ty, nullable: false },
                    Column { name: "v".into(), ty: DataType::Int, nullable: true },
                ],
                vec![0],
            )
            .unwrap()
        };
        let values = [
            Value::Int(7),
            Value::Int(-1),
            Value::Float(7.0),
            Value::Float(7.5),
            Value::Float(f64::NAN),
            Value::Text("7".into()),
            Value::Text("x".into()),
            Value::Bool(true),
            Value::Null,
        ];
        let mut shortcuts = 0;
        for ty in [DataType::Int, DataType::Float, DataType::Text { max_chars: Some(3) }, DataType::Bool] {
            let s = one_key(ty);
            for v in &values {
                for (column, flipped) in [(0, false), (0, true), (1, false)] {
                    let filter = if flipped {
                        Expr::Binary(
                            BinOp::Eq,
                            Box::new(Expr::Literal(v.clone())),
                            Box::new(Expr::Column(column)),
                        )
                    } else {
                        cmp(BinOp::Eq, column, v.clone())
                    };
                    if let Some(shortcut) = single_key_point(&s, &filter) {
                        shortcuts += 1;
                        assert_eq!(
                            shortcut,
                            plan_conjuncts(&s, &s.primary_key, &filter),
                            "{ty:?} {filter:?}"
                        );
                    }
                }
            }
        }
        assert!(shortcuts >= 30, "the shortcut answered only {shortcuts} cases");
        // A two-column key never takes the shortcut.
        assert_eq!(single_key_point(&schema(), &cmp(BinOp::Eq, 0, Value::Int(1))), None);
    }

    #[test]
    fn plans() {
        let s = schema();
        let t = |x: &str| Value::Text(x.into());
        let both = and(cmp(BinOp::Eq, 0, Value::Int(1)), cmp(BinOp::Eq, 1, t("x")));
        assert_eq!(
            plan(&s, Some(&both)),
            Access::Points(vec![smallvec::smallvec![Value::Int(1), t("x")].into()])
        );
        let first = and(cmp(BinOp::Eq, 0, Value::Float(1.0)), cmp(BinOp::Gt, 2, Value::Int(1)));
        assert_eq!(
            plan(&s, Some(&first)),
            Access::Range { prefix: smallvec::smallvec![Value::Int(1)].into(), lo: None, hi: None }
        );
        let range = and(cmp(BinOp::Gt, 0, Value::Float(1.5)), cmp(BinOp::LtEq, 0, Value::Text("9".into())));
        assert_eq!(
            plan(&s, Some(&range)),
            Access::Range {
                prefix: Key::new(),
                lo: Some(Limit::inclusive(Value::Int(2))),
                hi: Some(Limit::inclusive(Value::Int(9)))
            }
        );
        let strict = and(cmp(BinOp::Gt, 0, Value::Int(2)), cmp(BinOp::Lt, 0, Value::Float(9.0)));
        let strict = and(strict, cmp(BinOp::GtEq, 0, Value::Int(2)));
        assert_eq!(
            plan(&s, Some(&strict)),
            Access::Range {
                prefix: Key::new(),
                lo: Some(Limit { value: Value::Int(2), inclusive: false }),
                hi: Some(Limit { value: Value::Int(9), inclusive: false })
            }
        );
        assert_eq!(plan(&s, Some(&cmp(BinOp::Eq, 0, Value::Float(1.5)))), Access::Empty);
        assert_eq!(plan(&s, Some(&cmp(BinOp::Eq, 0, Value::Null))), Access::Empty);
        assert_eq!(plan(&s, Some(&cmp(BinOp::Eq, 1, t("x")))), Access::Full);
        assert_eq!(plan(&s, Some(&cmp(BinOp::NotEq, 0, Value::Int(1)))), Access::Full);
        let contradiction = and(cmp(BinOp::Eq, 0, Value::Int(1)), cmp(BinOp::Eq, 0, Value::Int(2)));
        let contradiction = and(contradiction, cmp(BinOp::Eq, 1, t("x")));
        assert_eq!(plan(&s, Some(&contradiction)), Access::Empty);
    }
}
