//! Change records: what the database writes as redo, and applies on commit and on
//! recovery. One `Change` is one redo record payload (kind "change" in the engine).
//!
//! ```text
//! change   := tag u8, body
//!   1 create table : schema
//!   2 drop table   : str name
//!   3 truncate     : str name
//!   4 insert       : str table, values row
//!   5 update       : str table, values key, values new_row
//!   6 delete       : str table, values key
//!   7 create table : str schema as JSON (a schema tag 1 cannot hold: a hidden row id,
//!                    indexes)
//!   8 alter table  : str schema as JSON (the table's new schema; its rows stay: index
//!                    definitions, names, defaults, NOT NULL)
//!   9 rewrite table: str schema as JSON, u32 ncols, source*, str zone (every row rebuilt
//!                    in the new shape and keyed by the new key)
//!  10 rename table : str from, str to
//!  11 create schema: str name, str owner
//!  12 drop schema  : str name (its relations dropped before it, in the same commit)
//! source   := 0 u32 old column | 1 values (one constant) | 2 u32 old column converted to
//!             the new column's type (in time zone `zone`)
//! str      := u32 LE byte length, UTF-8 bytes
//! values   := u32 LE count, value*
//! value    := 0 (NULL) | 1 i64 LE | 2 f64 LE bits | 3 str | 4 u8 (bool) | 5 i32 LE (date)
//!             | 6 i64 LE (time) | 7 i64 LE (timestamp) | 8 i64 LE (timestamptz)
//!             | 9 i32 LE months, i32 LE days, i64 LE microseconds (interval)
//!             | 10 u32 LE scale, u8 sign (0 positive or zero, 1 negative), u32 LE byte
//!               length, magnitude LE bytes (numeric: no high zero byte, zero has none)
//!             | 11 u32 LE length, bytes (bytea) | 12 16 bytes (uuid) | 13 str (json)
//!             | 14 str (jsonb, in its normal form)
//!             | 15 u8 element type (a column type tag, 1-14 or 17), values (array: its
//!               elements, each NULL or of the element type; no array inside)
//!             | 16 f32 LE bits (real)
//! schema   := str name, u32 ncols, (str name, u8 type, u32 modifier, u8 nullable)*,
//!             u32 nkey, u32 column index*
//!             type: 1 BIGINT, 2 DOUBLE PRECISION, 3 text, 4 BOOLEAN, 5 DATE, 6 TIME,
//!             7 TIMESTAMP, 8 TIMESTAMPTZ, 9 INTERVAL, 10 NUMERIC, 11 BYTEA, 12 UUID,
//!             13 JSON, 14 JSONB, 15 CHAR, 16 ARRAY, 17 REAL (before it, a REAL column
//!             was a DOUBLE PRECISION one and stays one)
//!             modifier: u32::MAX for none; text's max_chars; NUMERIC's typmod; CHAR's
//!             length; an ARRAY's element type tag
//! ```
//! Decoding never trusts a length or tag from disk: bad bytes are an error.

use crate::error::{DbError, DbResult};
use crate::schema::{Column, Key, Row, TableSchema};
use crate::value::{DataType, Value};

#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    CreateTable(TableSchema),
    /// A table's schema replaced, its rows kept (an index added or dropped).
    AlterTable(TableSchema),
    DropTable {
        table: String,
    },
    Truncate {
        table: String,
    },
    /// The row is the one the transaction's overlay shows and the committed state will
    /// hold: one allocation from the statement to the table.
    Insert {
        table: String,
        row: Row,
    },
    Update {
        table: String,
        key: Key,
        row: Row,
    },
    Delete {
        table: String,
        key: Key,
    },
    /// A table rebuilt in a new shape (`ALTER TABLE` ADD PRIMARY KEY, ADD/DROP COLUMN,
    /// ALTER COLUMN TYPE): each row made from the old one column by column, keyed by the
    /// new schema's key. A conversion runs in time zone `zone`, the DDL session's, so
    /// that recovery converts as the statement did.
    RewriteTable {
        schema: TableSchema,
        sources: Vec<ColumnSource>,
        zone: String,
    },
    /// `ALTER TABLE from RENAME TO to`: the rows stay.
    RenameTable {
        from: String,
        to: String,
    },
    /// `CREATE SCHEMA` (see `namespaces`).
    CreateSchema(crate::namespaces::Namespace),
    /// `DROP SCHEMA`, once nothing is left in it.
    DropSchema {
        name: String,
    },
}

/// Where a column of a rewritten table's rows comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnSource {
    /// The old row's column, as it is.
    Old(usize),
    /// One value for every row (an added column's default).
    Constant(Value),
    /// The old row's column converted to the new column's type.
    Converted(usize),
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

/// Whether tag 1 (columns and primary key) holds all of `schema`: anything more
/// (constraints, defaults, indexes, a row id, a sequence) needs tag 7.
fn fits_tag_1(schema: &TableSchema) -> bool {
    // Tag 1 predates the catalog types: a table with one is written as JSON (tag 7).
    if schema.columns.iter().any(|c| matches!(c.ty, DataType::Catalog(_))) {
        return false;
    }
    TableSchema::new(&schema.name, schema.columns.clone(), schema.primary_key.clone())
        .is_ok_and(|plain| plain == *schema)
}

/// Where a value is read: a row's (or key's) value, or an array's element.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Nesting {
    Row,
    Element,
}

fn put_values(out: &mut Vec<u8>, values: &[Value]) {
    put_u32(out, values.len() as u32);
    for v in values {
        match v {
            Value::Null => out.push(0),
            Value::Record(_) => {
                unreachable!("no table keeps a record (stored_views refuses a record column)")
            }
            Value::Int(i) => {
                out.push(1);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Value::Float(f) => {
                out.push(2);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            Value::Float4(f) => {
                out.push(16);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            Value::Text(t) => {
                out.push(3);
                put_str(out, t);
            }
            Value::Bool(b) => {
                out.push(4);
                out.push(*b as u8);
            }
            Value::Date(d) => {
                out.push(5);
                out.extend_from_slice(&d.to_le_bytes());
            }
            Value::Time(t) => {
                out.push(6);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::Timestamp(t) => {
                out.push(7);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::TimestampTz(t) => {
                out.push(8);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::Interval(iv) => {
                out.push(9);
                out.extend_from_slice(&iv.months.to_le_bytes());
                out.extend_from_slice(&iv.days.to_le_bytes());
                out.extend_from_slice(&iv.micros.to_le_bytes());
            }
            Value::Numeric(n) => {
                out.push(10);
                let (int, scale) = n.as_bigint_and_scale();
                // Values keep a scale within the type's limits (`numeric::checked`).
                out.extend_from_slice(&(scale as u32).to_le_bytes());
                out.push((int.sign() == bigdecimal::num_bigint::Sign::Minus) as u8);
                let magnitude =
                    if int.magnitude().bits() == 0 { Vec::new() } else { int.magnitude().to_bytes_le() };
                put_u32(out, magnitude.len() as u32);
                out.extend_from_slice(&magnitude);
            }
            Value::Bytea(b) => {
                out.push(11);
                put_u32(out, b.len() as u32);
                out.extend_from_slice(b);
            }
            Value::Uuid(u) => {
                out.push(12);
                out.extend_from_slice(u);
            }
            Value::Json(t) => {
                out.push(13);
                put_str(out, t);
            }
            Value::Jsonb(t) => {
                out.push(14);
                put_str(out, t);
            }
            Value::Array(a) => {
                out.push(15);
                out.push(a.elem.tag());
                put_values(out, &a.items);
            }
        }
    }
}

impl Change {
    /// The relation the change is to (a rename: its old name).
    pub fn table(&self) -> &str {
        match self {
            Change::CreateTable(schema) | Change::AlterTable(schema) => &schema.name,
            Change::RewriteTable { schema, .. } => &schema.name,
            Change::DropTable { table }
            | Change::Truncate { table }
            | Change::Insert { table, .. }
            | Change::Update { table, .. }
            | Change::Delete { table, .. } => table,
            Change::RenameTable { from, .. } => from,
            // A schema is no relation; its name is never a temporary relation's.
            Change::CreateSchema(namespace) => &namespace.name,
            Change::DropSchema { name } => name,
        }
    }

    /// The encoding of `Change::Insert { table, row }`, from borrowed parts: a checkpoint
    /// image writes every row of a table this way, with no copy of the name or the row.
    pub fn encode_insert(table: &str, row: &[Value], out: &mut Vec<u8>) {
        out.push(4);
        put_str(out, table);
        put_values(out, row);
    }

    /// Encodes the change (see the module's doc for the format).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Change::CreateTable(schema) if !fits_tag_1(schema) => {
                out.push(7);
                put_str(out, &serde_json::to_string(schema).expect("a schema serializes"));
            }
            Change::AlterTable(schema) => {
                out.push(8);
                put_str(out, &serde_json::to_string(schema).expect("a schema serializes"));
            }
            Change::CreateTable(schema) => {
                out.push(1);
                put_str(out, &schema.name);
                put_u32(out, schema.columns.len() as u32);
                for c in &schema.columns {
                    put_str(out, &c.name);
                    let (tag, max) = match c.ty {
                        DataType::Int => (1, u32::MAX),
                        DataType::Float => (2, u32::MAX),
                        DataType::Float4 => (17, u32::MAX),
                        DataType::Text { max_chars } => (3, max_chars.unwrap_or(u32::MAX)),
                        DataType::Bool => (4, u32::MAX),
                        DataType::Date => (5, u32::MAX),
                        DataType::Time => (6, u32::MAX),
                        DataType::Timestamp => (7, u32::MAX),
                        DataType::TimestampTz => (8, u32::MAX),
                        DataType::Interval => (9, u32::MAX),
                        DataType::Numeric(spec) => (10, spec.map_or(u32::MAX, |s| s.typmod() as u32)),
                        DataType::Bytea => (11, u32::MAX),
                        DataType::Uuid => (12, u32::MAX),
                        DataType::Json => (13, u32::MAX),
                        DataType::Jsonb => (14, u32::MAX),
                        DataType::Char { len } => (15, len.unwrap_or(u32::MAX)),
                        DataType::Catalog(_) => unreachable!("fits_tag_1 sends catalog types to tag 7"),
                        DataType::Array(elem) => (16, elem.tag() as u32),
                        DataType::Record(_) => {
                            unreachable!("no table keeps a record (stored_views refuses a record column)")
                        }
                    };
                    out.push(tag);
                    put_u32(out, max);
                    out.push(c.nullable as u8);
                }
                put_u32(out, schema.primary_key.len() as u32);
                for &k in &schema.primary_key {
                    put_u32(out, k as u32);
                }
            }
            Change::DropTable { table } => {
                out.push(2);
                put_str(out, table);
            }
            Change::Truncate { table } => {
                out.push(3);
                put_str(out, table);
            }
            Change::Insert { table, row } => Change::encode_insert(table, row, out),
            Change::Update { table, key, row } => {
                out.push(5);
                put_str(out, table);
                put_values(out, key);
                put_values(out, row);
            }
            Change::Delete { table, key } => {
                out.push(6);
                put_str(out, table);
                put_values(out, key);
            }
            Change::RewriteTable { schema, sources, zone } => {
                out.push(9);
                put_str(out, &serde_json::to_string(schema).expect("a schema serializes"));
                put_u32(out, sources.len() as u32);
                for source in sources {
                    match source {
                        ColumnSource::Old(i) => {
                            out.push(0);
                            put_u32(out, *i as u32);
                        }
                        ColumnSource::Constant(v) => {
                            out.push(1);
                            put_values(out, std::slice::from_ref(v));
                        }
                        ColumnSource::Converted(i) => {
                            out.push(2);
                            put_u32(out, *i as u32);
                        }
                    }
                }
                put_str(out, zone);
            }
            Change::RenameTable { from, to } => {
                out.push(10);
                put_str(out, from);
                put_str(out, to);
            }
            Change::CreateSchema(namespace) => {
                out.push(11);
                put_str(out, &namespace.name);
                put_str(out, &namespace.owner);
            }
            Change::DropSchema { name } => {
                out.push(12);
                put_str(out, name);
            }
        }
    }

    pub fn decode(bytes: &[u8]) -> DbResult<Change> {
        let mut r = Reader { bytes, at: 0 };
        let change = match r.u8()? {
            1 => {
                let name = r.str()?;
                let ncols = r.count(6)?;
                let mut columns = Vec::with_capacity(ncols);
                for _ in 0..ncols {
                    let name = r.str()?;
                    let tag = r.u8()?;
                    let max = r.u32()?;
                    let ty = match tag {
                        1 => DataType::Int,
                        2 => DataType::Float,
                        3 => DataType::Text { max_chars: (max != u32::MAX).then_some(max) },
                        4 => DataType::Bool,
                        5 => DataType::Date,
                        6 => DataType::Time,
                        7 => DataType::Timestamp,
                        8 => DataType::TimestampTz,
                        9 => DataType::Interval,
                        10 if max == u32::MAX => DataType::Numeric(None),
                        10 => DataType::Numeric(Some(
                            crate::numeric::NumericSpec::from_typmod(max as i32)
                                .ok_or_else(|| corrupt(format!("NUMERIC modifier {max}")))?,
                        )),
                        11 => DataType::Bytea,
                        12 => DataType::Uuid,
                        13 => DataType::Json,
                        14 => DataType::Jsonb,
                        15 => DataType::Char { len: (max != u32::MAX).then_some(max) },
                        16 => DataType::Array(
                            u8::try_from(max)
                                .ok()
                                .and_then(crate::array::ElemType::from_tag)
                                .ok_or_else(|| corrupt(format!("array element type tag {max}")))?,
                        ),
                        17 => DataType::Float4,
                        t => return Err(corrupt(format!("column type tag {t}"))),
                    };
                    let nullable = r.bool()?;
                    columns.push(Column { name, ty, nullable });
                }
                let nkey = r.count(4)?;
                let mut key = Vec::with_capacity(nkey);
                for _ in 0..nkey {
                    key.push(r.u32()? as usize);
                }
                Change::CreateTable(
                    TableSchema::new(&name, columns, key).map_err(|e| corrupt(format!("schema: {e}")))?,
                )
            }
            tag @ (7 | 8) => {
                let json = r.str()?;
                let schema: TableSchema =
                    serde_json::from_str(&json).map_err(|e| corrupt(format!("schema JSON: {e}")))?;
                let schema = schema.validated().map_err(|e| corrupt(format!("schema: {e}")))?;
                if tag == 7 {
                    Change::CreateTable(schema)
                } else {
                    Change::AlterTable(schema)
                }
            }
            2 => Change::DropTable { table: r.str()? },
            3 => Change::Truncate { table: r.str()? },
            4 => Change::Insert { table: r.str()?, row: Row::from(r.values()?) },
            5 => Change::Update { table: r.str()?, key: r.values()?.into(), row: Row::from(r.values()?) },
            6 => Change::Delete { table: r.str()?, key: r.values()?.into() },
            9 => {
                let json = r.str()?;
                let schema: TableSchema =
                    serde_json::from_str(&json).map_err(|e| corrupt(format!("schema JSON: {e}")))?;
                let schema = schema.validated().map_err(|e| corrupt(format!("schema: {e}")))?;
                let n = r.count(5)?;
                if n != schema.columns.len() {
                    return Err(corrupt(format!("{n} column sources for {} columns", schema.columns.len())));
                }
                let mut sources = Vec::with_capacity(n);
                for _ in 0..n {
                    sources.push(match r.u8()? {
                        0 => ColumnSource::Old(r.u32()? as usize),
                        1 => match <[Value; 1]>::try_from(r.values()?) {
                            Ok([v]) => ColumnSource::Constant(v),
                            Err(_) => return Err(corrupt("a constant of other than one value".into())),
                        },
                        2 => ColumnSource::Converted(r.u32()? as usize),
                        t => return Err(corrupt(format!("column source tag {t}"))),
                    });
                }
                Change::RewriteTable { schema, sources, zone: r.str()? }
            }
            10 => Change::RenameTable { from: r.str()?, to: r.str()? },
            11 => Change::CreateSchema(crate::namespaces::Namespace { name: r.str()?, owner: r.str()? }),
            12 => Change::DropSchema { name: r.str()? },
            t => return Err(corrupt(format!("change tag {t}"))),
        };
        if r.at != bytes.len() {
            return Err(corrupt(format!("{} bytes after the change", bytes.len() - r.at)));
        }
        Ok(change)
    }
}

fn corrupt(what: String) -> DbError {
    DbError::CorruptChange(what)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> DbResult<&[u8]> {
        if self.bytes.len() - self.at < n {
            return Err(corrupt(format!("truncated at byte {}", self.at)));
        }
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> DbResult<u8> {
        Ok(self.take(1)?[0])
    }
    fn bool(&mut self) -> DbResult<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(corrupt(format!("boolean byte {b}"))),
        }
    }
    fn u32(&mut self) -> DbResult<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> DbResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// A count of items each at least `min_bytes` long: bounded by what is left.
    fn count(&mut self, min_bytes: usize) -> DbResult<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_bytes) > self.bytes.len() - self.at {
            return Err(corrupt(format!("count {n} exceeds the bytes left")));
        }
        Ok(n)
    }
    fn str(&mut self) -> DbResult<String> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| corrupt("invalid UTF-8".into()))
    }
    /// A numeric's scale, sign and magnitude, in the one encoding `put_values` writes
    /// (so what decodes encodes back to the same bytes) and within the type's limits.
    fn numeric(&mut self) -> DbResult<Value> {
        use bigdecimal::num_bigint::{BigInt, BigUint, Sign};
        let scale = self.u32()?;
        let negative = self.bool()?;
        let n = self.count(1)?;
        let bytes = self.take(n)?;
        if bytes.last() == Some(&0) {
            return Err(corrupt("a numeric with a high zero byte".into()));
        }
        if bytes.is_empty() && negative {
            return Err(corrupt("a negative numeric zero".into()));
        }
        let magnitude = BigUint::from_bytes_le(bytes);
        let int = BigInt::from_biguint(if negative { Sign::Minus } else { Sign::Plus }, magnitude);
        let n = bigdecimal::BigDecimal::new(int, scale as i64);
        match crate::numeric::checked(n.clone()) {
            Ok(checked) if checked.as_bigint_and_scale().1 == scale as i64 => Ok(Value::numeric(n)),
            _ => Err(corrupt(format!("a numeric beyond the type's limits (scale {scale})"))),
        }
    }

    fn values(&mut self) -> DbResult<Vec<Value>> {
        let n = self.count(1)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.value(Nesting::Row)?);
        }
        Ok(out)
    }

    /// One value; an array's elements are read with `Nesting::Element`, where another
    /// array is corrupt (arrays have one dimension), so a crafted image cannot recurse.
    fn value(&mut self, nesting: Nesting) -> DbResult<Value> {
        Ok(match self.u8()? {
            0 => Value::Null,
            1 => Value::Int(self.u64()? as i64),
            2 => Value::Float(f64::from_bits(self.u64()?)),
            16 => Value::Float4(f32::from_bits(self.u32()?)),
            3 => Value::Text(self.str()?),
            4 => Value::Bool(self.bool()?),
            5 => Value::Date(self.u32()? as i32),
            6 => Value::Time(self.u64()? as i64),
            7 => Value::Timestamp(self.u64()? as i64),
            8 => Value::TimestampTz(self.u64()? as i64),
            9 => Value::Interval(crate::datetime::Interval {
                months: self.u32()? as i32,
                days: self.u32()? as i32,
                micros: self.u64()? as i64,
            }),
            10 => self.numeric()?,
            11 => {
                let n = self.count(1)?;
                Value::Bytea(self.take(n)?.into())
            }
            12 => Value::Uuid(self.take(16)?.try_into().expect("16 bytes")),
            // The text is checked to be JSON (and normal) where rows are checked
            // against their table (`TableSchema::check_stored_row`).
            13 => Value::Json(self.str()?.into()),
            14 => Value::Jsonb(self.str()?.into()),
            // Elements are checked to be of the element type where rows are checked
            // against their table (`Value::has_type`).
            15 if nesting == Nesting::Row => {
                let tag = self.u8()?;
                let elem = crate::array::ElemType::from_tag(tag)
                    .ok_or_else(|| corrupt(format!("array element type tag {tag}")))?;
                let n = self.count(1)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(Nesting::Element)?);
                }
                Value::Array(crate::array::ArrayBox::new(crate::array::Array { elem, items }))
            }
            t => return Err(corrupt(format!("value tag {t}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Int),
            any::<f64>()
                .prop_filter("NaN compares equal only by bits", |f| !f.is_nan())
                .prop_map(Value::Float),
            any::<f32>()
                .prop_filter("NaN compares equal only by bits", |f| !f.is_nan())
                .prop_map(Value::Float4),
            ".{0,20}".prop_map(Value::Text),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::Date),
            any::<i64>().prop_map(Value::Time),
            any::<i64>().prop_map(Value::Timestamp),
            any::<i64>().prop_map(Value::TimestampTz),
            (any::<i32>(), any::<i32>(), any::<i64>()).prop_map(|(months, days, micros)| Value::Interval(
                crate::datetime::Interval { months, days, micros }
            )),
            ("-?[0-9]{1,40}(\\.[0-9]{0,30})?")
                .prop_map(|t| Value::numeric(crate::numeric::parse(&t).unwrap())),
            proptest::collection::vec(proptest::option::of(any::<i64>()), 0..5).prop_map(|items| {
                crate::array::Array::new(
                    crate::array::ElemType::Int,
                    items.into_iter().map(|i| i.map_or(Value::Null, Value::Int)).collect(),
                )
                .into_value()
            }),
            proptest::collection::vec(proptest::option::of(".{0,6}"), 0..5).prop_map(|items| {
                crate::array::Array::new(
                    crate::array::ElemType::Text,
                    items.into_iter().map(|t| t.map_or(Value::Null, Value::Text)).collect(),
                )
                .into_value()
            }),
        ]
    }

    #[test]
    fn an_array_inside_an_array_is_corrupt() {
        // A row of one value: an int[] whose element is (tag 15) another array.
        let mut bytes = vec![4];
        put_str(&mut bytes, "t");
        put_u32(&mut bytes, 1);
        bytes.extend_from_slice(&[15, 1]);
        put_u32(&mut bytes, 1);
        bytes.extend_from_slice(&[15, 1]);
        put_u32(&mut bytes, 0);
        assert!(matches!(Change::decode(&bytes), Err(DbError::CorruptChange(_))));
        // The same with an integer element decodes.
        let mut bytes = vec![4];
        put_str(&mut bytes, "t");
        put_u32(&mut bytes, 1);
        bytes.extend_from_slice(&[15, 1]);
        put_u32(&mut bytes, 1);
        bytes.push(1);
        bytes.extend_from_slice(&5i64.to_le_bytes());
        assert!(Change::decode(&bytes).is_ok());
    }

    /// A REAL column (type tag 17) and value (tag 16) round-trip as single precision; a
    /// REAL column logged before them (type tag 2) reads back as the DOUBLE PRECISION it
    /// was then, its values as the doubles they were.
    #[test]
    fn real_columns_and_values_round_trip_and_older_real_columns_stay_double() {
        let columns = vec![
            Column { name: "id".into(), ty: DataType::Int, nullable: false },
            Column { name: "r".into(), ty: DataType::Float4, nullable: true },
            Column { name: "rs".into(), ty: DataType::Array(crate::array::ElemType::Float4), nullable: true },
        ];
        let schema = TableSchema::new("m", columns, vec![0]).unwrap();
        let reals =
            crate::array::Array::new(crate::array::ElemType::Float4, vec![Value::Float4(2.5), Value::Null]);
        for change in [
            Change::CreateTable(schema),
            Change::Insert {
                table: "m".into(),
                row: Row::from(vec![Value::Int(1), Value::Float4(0.1), reals.into_value()]),
            },
        ] {
            let mut bytes = Vec::new();
            change.encode(&mut bytes);
            assert_eq!(Change::decode(&bytes).unwrap(), change);
        }
        let mut bytes = vec![1];
        put_str(&mut bytes, "old");
        put_u32(&mut bytes, 1);
        put_str(&mut bytes, "r");
        bytes.push(2);
        put_u32(&mut bytes, u32::MAX);
        bytes.push(0);
        put_u32(&mut bytes, 1);
        put_u32(&mut bytes, 0);
        let Change::CreateTable(old) = Change::decode(&bytes).unwrap() else { panic!("a create table") };
        assert_eq!(old.columns[0].ty, DataType::Float);
    }

    fn arb_change() -> impl Strategy<Value = Change> {
        let name = "[a-z_]{1,12}";
        prop_oneof![
            name.prop_map(|table| Change::DropTable { table }),
            name.prop_map(|table| Change::Truncate { table }),
            (name, proptest::collection::vec(arb_value(), 0..8))
                .prop_map(|(table, row)| Change::Insert { table, row: Row::from(row) }),
            (
                name,
                proptest::collection::vec(arb_value(), 1..3),
                proptest::collection::vec(arb_value(), 0..8)
            )
                .prop_map(|(table, key, row)| Change::Update {
                    table,
                    key: key.into(),
                    row: Row::from(row)
                }),
            (name, proptest::collection::vec(arb_value(), 1..3))
                .prop_map(|(table, key)| Change::Delete { table, key: key.into() }),
            (name, 1usize..8, any::<bool>()).prop_map(|(table, n, text)| {
                let columns = (0..n)
                    .map(|i| Column {
                        name: format!("c{i}"),
                        ty: match (text, i) {
                            (_, 0) => DataType::Int,
                            (true, 1) => {
                                DataType::Numeric(Some(crate::numeric::NumericSpec::new(12, 3).unwrap()))
                            }
                            (true, 2) => DataType::Numeric(None),
                            (true, 3) => DataType::Bytea,
                            (true, 4) => DataType::Uuid,
                            (true, 5) => DataType::Json,
                            (true, 6) => DataType::Char { len: Some(4) },
                            (true, _) => DataType::Text { max_chars: Some(10) },
                            (false, _) => DataType::Int,
                        },
                        nullable: i > 0,
                    })
                    .collect();
                Change::CreateTable(TableSchema::new(&table, columns, vec![0]).unwrap())
            }),
            (name, name).prop_map(|(from, to)| Change::RenameTable { from, to }),
            (name, name)
                .prop_map(|(name, owner)| Change::CreateSchema(crate::namespaces::Namespace { name, owner })),
            name.prop_map(|name| Change::DropSchema { name }),
            (name, proptest::collection::vec((0u8..3, 0usize..4, arb_value()), 1..5), "[A-Za-z/_]{0,20}")
                .prop_map(|(table, picks, zone)| {
                    let columns = (0..picks.len())
                        .map(|i| Column { name: format!("c{i}"), ty: DataType::Int, nullable: i > 0 })
                        .collect();
                    let sources = picks
                        .into_iter()
                        .map(|(kind, i, v)| match kind {
                            0 => ColumnSource::Old(i),
                            1 => ColumnSource::Constant(v),
                            _ => ColumnSource::Converted(i),
                        })
                        .collect();
                    Change::RewriteTable {
                        schema: TableSchema::new(&table, columns, vec![0]).unwrap(),
                        sources,
                        zone,
                    }
                }),
        ]
    }

    proptest! {
        #[test]
        fn changes_round_trip(change in arb_change()) {
            let mut buf = Vec::new();
            change.encode(&mut buf);
            let decoded = Change::decode(&buf).unwrap();
            prop_assert_eq!(&decoded, &change);
            // Byte for byte: values equal by their order (1.5 = 1.50) keep their form.
            let mut again = Vec::new();
            decoded.encode(&mut again);
            prop_assert_eq!(again, buf);
        }

        #[test]
        fn decoding_random_or_truncated_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), change in arb_change(), cut in any::<prop::sample::Index>()) {
            let _ = Change::decode(&bytes);
            let mut buf = Vec::new();
            change.encode(&mut buf);
            let cut = cut.index(buf.len());
            prop_assert!(Change::decode(&buf[..cut]).is_err());
        }
    }
}
