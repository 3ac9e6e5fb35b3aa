//! SQL values and types.
//!
//! `Value` has a total order (NULL first, then by type, numbers compared exactly across
//! INT, NUMERIC and FLOAT) so that values can be primary-key components in an ordered
//! index. SQL's three-valued comparisons (NULL compares unknown) live in the expression
//! evaluator, not here.
//!
//! A `Value` is 24 bytes: it is moved and cloned on every row of the commit path, so a
//! payload larger than a `String` is boxed (a NUMERIC's big integer).

use std::cmp::Ordering;
use std::fmt;

use bigdecimal::BigDecimal;

pub use crate::array::{Array, ElemType};
use crate::datetime::{self, Interval, ZoneId};
use crate::numeric::{self, NumericSpec};
pub use crate::record::{Record, RecordType};

/// A column type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DataType {
    /// BIGINT, INTEGER, INT, SMALLINT: 64-bit signed.
    Int,
    /// DOUBLE PRECISION, FLOAT, FLOAT8: 64-bit float.
    Float,
    /// REAL, FLOAT4: 32-bit float, PostgreSQL's float4 (its own arithmetic, text and
    /// wire forms; see `write_float4`).
    Float4,
    /// NUMERIC, DECIMAL, Oracle's NUMBER: an exact decimal, unconstrained or
    /// `NUMERIC(precision, scale)` (see `numeric`).
    Numeric(Option<NumericSpec>),
    /// VARCHAR(n), TEXT: UTF-8, with an optional maximum length in characters.
    Text {
        max_chars: Option<u32>,
    },
    /// CHAR(n), CHARACTER(n), Oracle's NCHAR(n) (PostgreSQL's bpchar; `len` None for a
    /// bare `bpchar`): text blank-padded to `len` characters. A value is kept without
    /// its trailing blanks, which are no part of it in comparisons, and is padded where
    /// it is shown (the wire's output, `db::value::blank_padded`).
    Char {
        len: Option<u32>,
    },
    Bool,
    /// DATE: days since 2000-01-01.
    Date,
    /// TIME (without time zone): microseconds since midnight.
    Time,
    /// TIMESTAMP (without time zone): a civil time, microseconds since 2000-01-01.
    Timestamp,
    /// TIMESTAMP WITH TIME ZONE: an instant, microseconds since 2000-01-01 UTC.
    TimestampTz,
    /// INTERVAL: months, days and microseconds.
    Interval,
    /// BYTEA (Oracle's RAW and BLOB): a byte string.
    Bytea,
    /// UUID: 16 bytes.
    Uuid,
    /// JSON: validated text, kept as given.
    Json,
    /// JSONB: validated text in PostgreSQL's normal form (see `json`).
    Jsonb,
    /// A one-dimensional array of elements of one type (see `array`). The element type
    /// carries no modifier, so that `DataType` stays `Copy` and no larger.
    Array(ElemType),
    /// One of PostgreSQL's catalog types (`oid`, `name`, `regclass`, ...): the types of
    /// the pg_catalog relations' columns and of the casts catalog queries write.
    Catalog(CatalogType),
    /// A composite value of a function with several output columns (`record`): only in
    /// queries, never a column of a table (see `record`).
    Record(RecordType),
}

/// PostgreSQL's catalog types. An object identifier (`oid` and the `reg*` aliases) is a
/// `Value::Int`; `name` and `"char"` are `Value::Text`. A `reg*` value compares as its
/// number and is shown as the object's name: a query's result names it (see
/// `catalog::name_objects`), as PostgreSQL's output function does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CatalogType {
    Oid,
    Name,
    /// `"char"`: one byte (`relkind`, `contype`).
    Char,
    RegClass,
    RegType,
    RegProc,
    RegNamespace,
    /// `int2vector` and `oidvector` (`pg_index.indkey`, `pg_proc.proargtypes`): arrays
    /// of integers (a `Value::Array` of `ElemType::Int`) subscripted from 0, printed
    /// with blanks between the numbers (`1 2`), as PostgreSQL's.
    Int2Vector,
    OidVector,
}

impl CatalogType {
    /// PostgreSQL's name of the type (as `format_type` prints it).
    pub fn sql_name(self) -> &'static str {
        match self {
            CatalogType::Oid => "oid",
            CatalogType::Name => "name",
            CatalogType::Char => "\"char\"",
            CatalogType::RegClass => "regclass",
            CatalogType::RegType => "regtype",
            CatalogType::RegProc => "regproc",
            CatalogType::RegNamespace => "regnamespace",
            CatalogType::Int2Vector => "int2vector",
            CatalogType::OidVector => "oidvector",
        }
    }

    /// Whether its values are object identifiers (integers), not text.
    pub fn is_oid(self) -> bool {
        !matches!(self, CatalogType::Name | CatalogType::Char) && !self.is_vector()
    }

    /// Whether it is `int2vector` or `oidvector`: an array subscripted from 0.
    pub fn is_vector(self) -> bool {
        matches!(self, CatalogType::Int2Vector | CatalogType::OidVector)
    }
}

impl DataType {
    pub fn name(&self) -> String {
        match self {
            DataType::Int => "BIGINT".into(),
            DataType::Float => "DOUBLE PRECISION".into(),
            DataType::Float4 => "REAL".into(),
            DataType::Numeric(None) => "NUMERIC".into(),
            DataType::Numeric(Some(spec)) => format!("NUMERIC({},{})", spec.precision, spec.scale),
            DataType::Text { max_chars: Some(n) } => format!("VARCHAR({n})"),
            DataType::Text { max_chars: None } => "TEXT".into(),
            DataType::Char { len: Some(n) } => format!("CHAR({n})"),
            DataType::Char { len: None } => "BPCHAR".into(),
            DataType::Bool => "BOOLEAN".into(),
            DataType::Date => "DATE".into(),
            DataType::Time => "TIME".into(),
            DataType::Timestamp => "TIMESTAMP".into(),
            DataType::TimestampTz => "TIMESTAMP WITH TIME ZONE".into(),
            DataType::Interval => "INTERVAL".into(),
            DataType::Bytea => "BYTEA".into(),
            DataType::Uuid => "UUID".into(),
            DataType::Json => "JSON".into(),
            DataType::Jsonb => "JSONB".into(),
            DataType::Catalog(c) => c.sql_name().to_ascii_uppercase(),
            DataType::Array(elem) => format!("{}[]", elem.data_type().name()),
            DataType::Record(_) => "RECORD".into(),
        }
    }

    /// DATE, TIMESTAMP or TIMESTAMPTZ: the types a timestamp converts between.
    pub fn is_datetime(&self) -> bool {
        matches!(self, DataType::Date | DataType::Timestamp | DataType::TimestampTz)
    }

    /// The type without its modifier: what an expression over a column of this type
    /// gives (`n + 1` of a NUMERIC(10,2) is an unconstrained NUMERIC).
    pub fn unconstrained(self) -> DataType {
        match self {
            DataType::Numeric(_) => DataType::Numeric(None),
            other => other,
        }
    }

    /// Whether a modifier read back from disk is one a declaration could have made.
    pub fn is_valid(&self) -> bool {
        match self {
            DataType::Numeric(Some(spec)) => spec.is_valid(),
            DataType::Char { len: Some(n) } | DataType::Text { max_chars: Some(n) } => *n > 0,
            _ => true,
        }
    }
}

/// One SQL value.
#[derive(Debug)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    /// REAL: a float4, kept as one so that every operation on it rounds as PostgreSQL's.
    Float4(f32),
    /// NUMERIC: its scale is its display scale (see `numeric`).
    Numeric(Box<BigDecimal>),
    Text(String),
    Bool(bool),
    /// The date and time types, in PostgreSQL's representation (see `datetime`).
    Date(i32),
    Time(i64),
    Timestamp(i64),
    TimestampTz(i64),
    Interval(Interval),
    /// BYTEA: boxed, not a `Vec`, so that a value stays 24 bytes.
    Bytea(Box<[u8]>),
    Uuid(crate::uuid::Bytes),
    /// JSON text as given, valid.
    Json(Box<str>),
    /// JSONB text in its normal form.
    Jsonb(Box<str>),
    /// An array: boxed, so that a value stays 24 bytes and the scalar variants' clones
    /// and drops cost what they did.
    Array(crate::array::ArrayBox),
    /// A composite value (see `record`): boxed, as an array is.
    Record(crate::record::RecordBox),
}

impl Clone for Value {
    /// An integer or NULL (most keys and many columns) copied inline; the other variants
    /// through `clone_any`. A derived `clone` became an out-of-line call once the
    /// variants holding heap memory were five, ~30 instructions for an integer
    /// (callgrind, `commit_loop update`: ten clones per UPDATE and commit).
    #[inline]
    fn clone(&self) -> Self {
        match self {
            Value::Int(i) => Value::Int(*i),
            Value::Null => Value::Null,
            other => other.clone_any(),
        }
    }

    /// A text copied into a text keeps the destination's memory: a row buffer filled
    /// again for every row (a join's joined rows, a GROUP BY key) allocates no string
    /// per row.
    #[inline]
    fn clone_from(&mut self, source: &Self) {
        match (self, source) {
            (Value::Text(to), Value::Text(from)) => to.clone_from(from),
            (to, from) => *to = from.clone(),
        }
    }
}

impl Value {
    #[inline(never)]
    fn clone_any(&self) -> Value {
        match self {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Int(*i),
            Value::Float(f) => Value::Float(*f),
            Value::Float4(f) => Value::Float4(*f),
            Value::Numeric(n) => Value::Numeric(n.clone()),
            Value::Text(t) => Value::Text(t.clone()),
            Value::Bool(b) => Value::Bool(*b),
            Value::Date(d) => Value::Date(*d),
            Value::Time(t) => Value::Time(*t),
            Value::Timestamp(t) => Value::Timestamp(*t),
            Value::TimestampTz(t) => Value::TimestampTz(*t),
            Value::Interval(i) => Value::Interval(*i),
            Value::Bytea(b) => Value::Bytea(b.clone()),
            Value::Uuid(u) => Value::Uuid(*u),
            Value::Json(j) => Value::Json(j.clone()),
            Value::Jsonb(j) => Value::Jsonb(j.clone()),
            Value::Array(a) => Value::Array(a.clone()),
            Value::Record(r) => Value::Record(r.clone()),
        }
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Numeric(_) | Value::Float(_) | Value::Float4(_) => 2,
            Value::Text(_) => 3,
            Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) => 4,
            Value::Time(_) => 5,
            Value::Interval(_) => 6,
            Value::Bytea(_) => 7,
            Value::Uuid(_) => 8,
            Value::Json(_) => 9,
            Value::Jsonb(_) => 10,
            Value::Array(_) => 11,
            Value::Record(_) => 12,
        }
    }

    /// The type of a non-null value.
    pub fn data_type(&self) -> Option<DataType> {
        match self {
            Value::Null => None,
            Value::Int(_) => Some(DataType::Int),
            Value::Float(_) => Some(DataType::Float),
            Value::Float4(_) => Some(DataType::Float4),
            Value::Numeric(_) => Some(DataType::Numeric(None)),
            Value::Text(_) => Some(DataType::Text { max_chars: None }),
            Value::Bool(_) => Some(DataType::Bool),
            Value::Date(_) => Some(DataType::Date),
            Value::Time(_) => Some(DataType::Time),
            Value::Timestamp(_) => Some(DataType::Timestamp),
            Value::TimestampTz(_) => Some(DataType::TimestampTz),
            Value::Interval(_) => Some(DataType::Interval),
            Value::Bytea(_) => Some(DataType::Bytea),
            Value::Uuid(_) => Some(DataType::Uuid),
            Value::Json(_) => Some(DataType::Json),
            Value::Jsonb(_) => Some(DataType::Jsonb),
            Value::Array(a) => Some(DataType::Array(a.elem)),
            Value::Record(r) => Some(DataType::Record(r.ty)),
        }
    }

    /// A DATE, TIMESTAMP or TIMESTAMPTZ as microseconds since 2000-01-01 (a date at its
    /// midnight), the scale they are ordered on together.
    fn datetime_micros(&self) -> Option<i64> {
        match self {
            Value::Date(d) => Some(datetime::date_to_timestamp(*d)),
            Value::Timestamp(t) | Value::TimestampTz(t) => Some(*t),
            _ => None,
        }
    }
}

fn cmp_f64(a: f64, b: f64) -> Ordering {
    a.total_cmp(&b)
}

/// An integer against a float, exactly (no rounding of the integer to a float, which
/// would make the order of INT, NUMERIC and FLOAT values intransitive).
fn cmp_i64_f64(i: i64, f: f64) -> Ordering {
    if f.is_nan() {
        return if f.is_sign_negative() { Ordering::Greater } else { Ordering::Less };
    }
    // 2^63 and beyond, or below -2^63: outside every i64.
    if f >= 9_223_372_036_854_775_808.0 {
        return Ordering::Less;
    }
    if f < -9_223_372_036_854_775_808.0 {
        return Ordering::Greater;
    }
    let whole = f.trunc();
    // Exact: |whole| < 2^63.
    match i.cmp(&(whole as i64)) {
        Ordering::Equal => 0.0.partial_cmp(&(f - whole)).expect("finite"),
        other => other,
    }
}

/// A CHAR(n) value's text as shown: blank-padded to `len` characters.
pub fn blank_padded(text: &str, len: u32) -> std::borrow::Cow<'_, str> {
    // No more characters than bytes: most texts need no count.
    let chars = if text.len() >= len as usize { len as usize } else { text.chars().count() };
    if chars >= len as usize {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut padded = String::with_capacity(text.len() + len as usize - chars);
    padded.push_str(text);
    padded.extend(std::iter::repeat_n(' ', len as usize - chars));
    std::borrow::Cow::Owned(padded)
}

impl Value {
    /// A NUMERIC value.
    pub fn numeric(n: BigDecimal) -> Value {
        Value::Numeric(Box::new(n))
    }
}

impl Value {
    /// Whether this is a non-NULL value of type `ty` as it is (no conversion).
    pub fn has_type(&self, ty: DataType) -> bool {
        matches!(
            (self, ty),
            (Value::Int(_), DataType::Int)
                | (Value::Float(_), DataType::Float)
                | (Value::Float4(_), DataType::Float4)
                | (Value::Numeric(_), DataType::Numeric(_))
                | (Value::Text(_), DataType::Text { .. } | DataType::Char { .. })
                | (Value::Bool(_), DataType::Bool)
                | (Value::Date(_), DataType::Date)
                | (Value::Time(_), DataType::Time)
                | (Value::Timestamp(_), DataType::Timestamp)
                | (Value::TimestampTz(_), DataType::TimestampTz)
                | (Value::Interval(_), DataType::Interval)
                | (Value::Bytea(_), DataType::Bytea)
                | (Value::Uuid(_), DataType::Uuid)
                | (Value::Json(_), DataType::Json)
                | (Value::Jsonb(_), DataType::Jsonb)
        ) || matches!((self, ty), (Value::Array(a), DataType::Array(elem)) if a.elem == elem && a.is_well_typed())
            || matches!((self, ty), (Value::Array(a), DataType::Catalog(c))
                if c.is_vector() && a.elem == ElemType::Int && a.is_well_typed())
            || matches!((self, ty), (Value::Record(r), DataType::Record(t)) if r.ty == t)
    }
}

impl Ord for Value {
    // Inline for two integers: the B-tree searches and the lock tables compare keys
    // through it, mostly integers. The whole match is too large to be inlined (with the
    // NUMERIC, BYTEA, UUID and JSON variants, a call of ~44 instructions for two
    // integers, measured with callgrind on `commit_loop update`).
    #[inline]
    fn cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            _ => self.cmp_any(other),
        }
    }
}

impl Value {
    /// `cmp` for any two values.
    #[inline(never)]
    fn cmp_any(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => cmp_f64(*a, *b),
            (Value::Float4(a), Value::Float4(b)) => a.total_cmp(b),
            // A float4 is ordered as the double it widens to exactly, after the equal
            // numbers of the other types.
            (Value::Float4(a), b) if b.rank() == 2 => {
                Value::Float(f64::from(*a)).cmp_any(b).then(Ordering::Greater)
            }
            (a, Value::Float4(b)) if a.rank() == 2 => {
                a.cmp_any(&Value::Float(f64::from(*b))).then(Ordering::Less)
            }
            (Value::Numeric(a), Value::Numeric(b)) => a.cmp(b),
            // Equal numbers of different types stay distinct keys: INT, then NUMERIC,
            // then FLOAT.
            (Value::Int(a), Value::Float(b)) => cmp_i64_f64(*a, *b).then(Ordering::Less),
            (Value::Float(a), Value::Int(b)) => cmp_i64_f64(*b, *a).reverse().then(Ordering::Greater),
            (Value::Int(a), Value::Numeric(b)) => numeric::from_i64(*a).cmp(b).then(Ordering::Less),
            (Value::Numeric(a), Value::Int(b)) => {
                a.as_ref().cmp(&numeric::from_i64(*b)).then(Ordering::Greater)
            }
            (Value::Numeric(a), Value::Float(b)) => numeric::cmp_f64(a, *b).then(Ordering::Less),
            (Value::Float(a), Value::Numeric(b)) => numeric::cmp_f64(b, *a).reverse().then(Ordering::Greater),
            (Value::Text(a), Value::Text(b)) => a.cmp(b),
            (Value::Time(a), Value::Time(b)) => a.cmp(b),
            (Value::Interval(a), Value::Interval(b)) => a.comparable().cmp(&b.comparable()),
            (Value::Bytea(a), Value::Bytea(b)) => a.cmp(b),
            (Value::Uuid(a), Value::Uuid(b)) => a.cmp(b),
            // By their text: a total order for keys. (SQL compares jsonb by value, where
            // 1.0 and 1.00 are equal: `json::Jsonb::compare`.)
            (Value::Json(a), Value::Json(b)) | (Value::Jsonb(a), Value::Jsonb(b)) => a.cmp(b),
            (Value::Array(a), Value::Array(b)) => crate::array::cmp(a, b),
            (Value::Record(a), Value::Record(b)) => crate::record::cmp(a, b),
            // Dates and timestamps on one scale; a date before a timestamp of its
            // midnight, so that equal instants of different types stay distinct keys.
            (a, b) if a.rank() == 4 && b.rank() == 4 => {
                let kind = |v: &Value| matches!(v, Value::Timestamp(_) | Value::TimestampTz(_)) as u8;
                a.datetime_micros().cmp(&b.datetime_micros()).then(kind(a).cmp(&kind(b)))
            }
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

impl PartialOrd for Value {
    #[inline]
    fn partial_cmp(&self, other: &Value) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    #[inline]
    fn eq(&self, other: &Value) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

/// float8's text as PostgreSQL 12+ writes it (`extra_float_digits` >= 1, the default):
/// the shortest digits that read back as the same value, in exponent notation when the
/// decimal exponent is below -4 or at least 15 (`1e+20`, `-2.5e-07`, `1.234567890123456e+15`),
/// plain otherwise (`0.0001`, `123456789012345`), and PostgreSQL's names for the special
/// values.
pub fn write_float(out: &mut impl fmt::Write, v: f64) -> fmt::Result {
    if !v.is_finite() || v == 0.0 {
        return write_special(out, v);
    }
    write_shortest(out, ryu::Buffer::new().format_finite(v), 15)
}

/// float4's text as PostgreSQL 12+ writes it: as `write_float`, with the shortest digits
/// that read back as the same float4 and exponent notation from a decimal exponent of 6
/// (`1.234567e+06`, `123456`, `1e-05`).
pub fn write_float4(out: &mut impl fmt::Write, v: f32) -> fmt::Result {
    if !v.is_finite() || v == 0.0 {
        return write_special(out, f64::from(v));
    }
    if v < 0.0 {
        out.write_char('-')?;
    }
    let magnitude = v.abs();
    let mut ryu = ryu::Buffer::new();
    let shortest = ryu.format_finite(magnitude);
    if !on_a_rounding_bound(shortest, magnitude) {
        return write_shortest(out, shortest, 6);
    }
    // PostgreSQL's Ryu takes the interval that reads back as `v` without its bounds
    // (f2s.c's `acceptBounds` is false); the ryu crate takes them for an even mantissa,
    // so its digits can be a halfway point between two float4s (50331648 as 5.033165e7).
    // Then the shortest digits strictly inside: the value correctly rounded to more.
    for digits in 1..=9 {
        let longer = format!("{magnitude:.digits$e}", digits = digits - 1);
        if longer.parse::<f32>() == Ok(magnitude) && !on_a_rounding_bound(&longer, magnitude) {
            return write_shortest(out, &longer, 6);
        }
    }
    unreachable!("9 significant digits identify every float4 ({magnitude:e})")
}

/// Whether the decimal `text` is the halfway point between the float4 `v` (positive)
/// and a neighbour: the midpoints are exact in a double, and so is the double nearest a
/// decimal of at most 9 digits that equals one.
fn on_a_rounding_bound(text: &str, v: f32) -> bool {
    let Ok(wide) = text.parse::<f64>() else { return false };
    let below = f32::from_bits(v.to_bits() - 1);
    let above = f32::from_bits(v.to_bits() + 1);
    let midpoint = |neighbour: f32| (f64::from(v) + f64::from(neighbour)) / 2.0;
    wide == midpoint(below) || wide == midpoint(above)
}

/// NaN, the infinities and the zeros, as PostgreSQL names them.
fn write_special(out: &mut impl fmt::Write, v: f64) -> fmt::Result {
    out.write_str(if v.is_nan() {
        "NaN"
    } else if v.is_infinite() {
        if v > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
    } else if v.is_sign_negative() {
        "-0"
    } else {
        "0"
    })
}

/// The writer of both float types: `shortest` is Ryu's text of a finite nonzero value
/// (`-1.5e-7`, `0.0001`, `123456.0`, `1e20`), laid out again as PostgreSQL's
/// `float_to_shortest_decimal` lays it out: plain for a decimal exponent from -4 to below
/// `exponent_max` (its DBL_DIG or FLT_DIG), else `d.ddde±XX`.
fn write_shortest(out: &mut impl fmt::Write, shortest: &str, exponent_max: i32) -> fmt::Result {
    let (sign, unsigned) = match shortest.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", shortest),
    };
    let (mantissa, exponent) = match unsigned.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().expect("Ryu writes a decimal exponent")),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // All the digits, and the decimal exponent of the first significant one.
    let all: String = [whole, fraction].concat();
    let leading_zeros = all.len() - all.trim_start_matches('0').len();
    let digits = all[leading_zeros..].trim_end_matches('0');
    assert!(!digits.is_empty(), "a nonzero value has a significant digit: {shortest}");
    let point = exponent + whole.len() as i32 - 1 - leading_zeros as i32;
    out.write_str(sign)?;
    if !(-4..exponent_max).contains(&point) {
        let (first, rest) = digits.split_at(1);
        let exponent_sign = if point < 0 { '-' } else { '+' };
        let dot = if rest.is_empty() { "" } else { "." };
        return write!(out, "{first}{dot}{rest}e{exponent_sign}{:02}", point.unsigned_abs());
    }
    if point < 0 {
        out.write_str("0.")?;
        for _ in 0..(-point - 1) {
            out.write_char('0')?;
        }
        return out.write_str(digits);
    }
    let whole_digits = point as usize + 1;
    if digits.len() <= whole_digits {
        out.write_str(digits)?;
        for _ in digits.len()..whole_digits {
            out.write_char('0')?;
        }
        Ok(())
    } else {
        write!(out, "{}.{}", &digits[..whole_digits], &digits[whole_digits..])
    }
}

/// `write_float` into a new string.
pub fn float_text(v: f64) -> String {
    let mut text = String::new();
    write_float(&mut text, v).expect("a String takes any text");
    text
}

/// `write_float4` into a new string.
pub fn float4_text(v: f32) -> String {
    let mut text = String::new();
    write_float4(&mut text, v).expect("a String takes any text");
    text
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write_float(f, *v),
            Value::Float4(v) => write_float4(f, *v),
            Value::Numeric(n) => f.write_str(&numeric::to_text(n)),
            Value::Text(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{}", if *v { "true" } else { "false" }),
            Value::Bytea(b) => f.write_str(&crate::bytea::to_text(b)),
            Value::Uuid(u) => f.write_str(&crate::uuid::to_text(u)),
            Value::Json(t) | Value::Jsonb(t) => f.write_str(t),
            Value::Array(a) => f.write_str(&crate::array::to_text(a)),
            Value::Record(r) => f.write_str(&crate::record::to_text(r)),
            other => {
                let mut text = String::new();
                other.write_datetime(&mut text);
                f.write_str(&text)
            }
        }
    }
}

impl Value {
    /// A date or time value's PostgreSQL text (a TIMESTAMPTZ in the session's zone);
    /// nothing for other values.
    pub fn write_datetime(&self, out: &mut String) {
        match self {
            Value::Date(d) => datetime::write_date(*d, out),
            Value::Time(t) => datetime::write_time(*t, out),
            Value::Timestamp(t) => datetime::write_timestamp(*t, out),
            Value::TimestampTz(t) => datetime::write_timestamptz(*t, &ZoneId::current().zone(), out),
            Value::Interval(iv) => datetime::write_interval(iv, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_order_null_first_and_numbers_across_types() {
        let mut v = vec![
            Value::Text("b".into()),
            Value::Int(3),
            Value::Null,
            Value::Float(2.5),
            Value::Bool(true),
            Value::Text("a".into()),
            Value::Int(-1),
        ];
        v.sort();
        assert_eq!(
            v,
            vec![
                Value::Null,
                Value::Bool(true),
                Value::Int(-1),
                Value::Float(2.5),
                Value::Int(3),
                Value::Text("a".into()),
                Value::Text("b".into()),
            ]
        );
        // Equal numbers of different types stay distinct keys, in a fixed order.
        assert!(Value::Int(2) < Value::Float(2.0));
        let n = |t: &str| Value::numeric(numeric::parse(t).unwrap());
        assert!(Value::Int(2) < n("2.00") && n("2.00") < Value::Float(2.0));
        assert_eq!(n("1.5"), n("1.50"));
        assert!(n("0.1") < Value::Float(0.1), "a float's exact value");
        assert!(Value::Int(9_007_199_254_740_993) > Value::Float(9_007_199_254_740_992.0));
    }

    /// The order is total across the numeric types: sorting agrees with every pairwise
    /// comparison, however close the values (integers beyond 2^53, floats near them,
    /// decimals between).
    #[test]
    fn numbers_of_the_three_types_order_transitively() {
        use proptest::prelude::*;
        let big = 1i64 << 53;
        let number = prop_oneof![
            (-4i64..4).prop_map(move |d| Value::Int(big + d)),
            (-4i64..4).prop_map(move |d| Value::Float((big + d) as f64)),
            (-8i64..8).prop_map(move |d| Value::numeric(
                numeric::parse(&format!("{big}.5")).unwrap() + bigdecimal::BigDecimal::from(d)
            )),
            (-3i64..3).prop_map(Value::Int),
            (-6i64..6).prop_map(|d| Value::Float(d as f64 / 2.0)),
            (-6i64..6).prop_map(|d| Value::numeric(bigdecimal::BigDecimal::new(d.into(), 1))),
            Just(Value::Float(f64::NAN)),
            Just(Value::Float(f64::NEG_INFINITY)),
            // REALs: equal to the doubles they widen to, and between them.
            (-6i64..6).prop_map(|d| Value::Float4(d as f32 / 2.0)),
            (-4i64..4).prop_map(move |d| Value::Float4((big + d) as f32)),
            Just(Value::Float4(0.1)),
            Just(Value::Float(0.1)),
            Just(Value::Float(f64::from(0.1f32))),
            Just(Value::Float4(f32::NAN)),
        ];
        proptest!(|(mut values in proptest::collection::vec(number, 0..12))| {
            values.sort();
            for i in 0..values.len() {
                for j in i..values.len() {
                    prop_assert!(values[i] <= values[j], "{:?} > {:?}", values[i], values[j]);
                    prop_assert_eq!(values[i].cmp(&values[j]), values[j].cmp(&values[i]).reverse());
                }
            }
        });
    }

    #[test]
    fn a_value_stays_24_bytes_and_a_type_12() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        // A NUMERIC's modifier's size: an array's element type adds nothing.
        assert_eq!(std::mem::size_of::<DataType>(), 12);
    }
}

#[cfg(test)]
mod float_text_tests {
    use super::{float4_text, float_text};

    /// PostgreSQL 15's float4out for each value (`SELECT 'v'::float4`).
    #[test]
    fn float4_text_is_postgresqls() {
        let cases: &[(f32, &str)] = &[
            (0.1, "0.1"),
            (0.3, "0.3"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (16777216.0, "1.6777216e+07"),
            // Ryu's upper bound is exclusive: not 5.033165e+07, which reads back too.
            (50331648.0, "5.0331648e+07"),
            (1.0, "1"),
            (100.0, "100"),
            (0.001, "0.001"),
            (-0.00012, "-0.00012"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.00012345679, "0.00012345679"),
            (3.4028235e38, "3.4028235e+38"),
            (1e-45, "1e-45"),
            (1.175495e-39, "1.175495e-39"),
            (-1.5, "-1.5"),
            (-0.0, "-0"),
            (f32::NAN, "NaN"),
            (f32::INFINITY, "Infinity"),
            (f32::NEG_INFINITY, "-Infinity"),
        ];
        for (v, text) in cases {
            assert_eq!(float4_text(*v), *text, "{v:e}");
            if v.is_finite() {
                assert_eq!(text.parse::<f32>().unwrap(), *v, "{text} reads back");
            }
        }
    }

    /// Any finite float's text reads back as the same value, of either width.
    #[test]
    fn float_texts_read_back_as_the_same_value() {
        use proptest::prelude::*;
        proptest!(|(wide in any::<f64>(), narrow in any::<f32>())| {
            prop_assume!(wide.is_finite() && narrow.is_finite());
            prop_assert_eq!(float_text(wide).parse::<f64>().unwrap(), wide);
            prop_assert_eq!(float4_text(narrow).parse::<f32>().unwrap(), narrow);
        });
    }

    /// PostgreSQL 15's float8out for each value (`SELECT v::float8`, extra_float_digits 1).
    #[test]
    fn float8_text_is_postgresqls() {
        let cases: &[(f64, &str)] = &[
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1e15, "1e+15"),
            (1e16, "1e+16"),
            (123456789012345.0, "123456789012345"),
            (1234567890123456.0, "1.234567890123456e+15"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e300, "1.5e+300"),
            (-2.5e-7, "-2.5e-07"),
            (5e-324, "5e-324"),
            (3.0, "3"),
            (-1.25, "-1.25"),
            (0.0, "0"),
            (-0.0, "-0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (v, text) in cases {
            assert_eq!(float_text(*v), *text, "{v:e}");
            if v.is_finite() {
                assert_eq!(text.parse::<f64>().unwrap(), *v, "{text} reads back");
            }
        }
    }
}
