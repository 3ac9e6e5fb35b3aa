//! PostgreSQL types on the wire: the OID of each db type, values written in text or
//! binary format, and bind parameters read from either.
//!
//! The db has one integer type (64-bit), so every integer column is int8 (OID 20);
//! parameters arrive as int2, int4 or int8 (psycopg picks the smallest that fits, JDBC
//! int4 for setInt) and are all widened to 64 bits. A numeric parameter (psycopg's
//! Decimal, JDBC's setBigDecimal, or an int beyond int8) is read in either format as the
//! type its place wants: an exact NUMERIC for a NUMERIC place or one of no known type.
//! NUMERIC values go out as PostgreSQL's numeric (OID 1700, the column's typmod in the
//! RowDescription): plain decimal text, or base-10000 digits in binary
//! (`db::numeric::write_binary`).

use bytes::{BufMut, BytesMut};
use db::value::ElemType;
use db::{numeric, CatalogType, DataType, DbError, Value};

pub const OID_UNSPECIFIED: u32 = 0;
pub const OID_BOOL: u32 = 16;
pub const OID_BYTEA: u32 = 17;
pub const OID_INT8: u32 = 20;
pub const OID_INT2: u32 = 21;
pub const OID_INT4: u32 = 23;
pub const OID_TEXT: u32 = 25;
pub const OID_JSON: u32 = 114;
pub const OID_FLOAT4: u32 = 700;
pub const OID_FLOAT8: u32 = 701;
pub const OID_UNKNOWN: u32 = 705;
pub const OID_BPCHAR: u32 = 1042;
pub const OID_VARCHAR: u32 = 1043;
pub const OID_DATE: u32 = 1082;
pub const OID_TIME: u32 = 1083;
pub const OID_TIMESTAMP: u32 = 1114;
pub const OID_TIMESTAMPTZ: u32 = 1184;
pub const OID_INTERVAL: u32 = 1186;
pub const OID_NUMERIC: u32 = 1700;
pub const OID_UUID: u32 = 2950;
pub const OID_JSONB: u32 = 3802;
pub const OID_CHAR: u32 = 18;
pub const OID_NAME: u32 = 19;
pub const OID_REGPROC: u32 = 24;
pub const OID_OID: u32 = 26;
pub const OID_REGCLASS: u32 = 2205;
pub const OID_REGTYPE: u32 = 2206;
pub const OID_REGNAMESPACE: u32 = 4089;

/// The array types' OIDs (PostgreSQL's `_int8` and the like).
pub const OID_BOOL_ARRAY: u32 = 1000;
pub const OID_BYTEA_ARRAY: u32 = 1001;
pub const OID_NAME_ARRAY: u32 = 1003;
pub const OID_INT2_ARRAY: u32 = 1005;
pub const OID_INT4_ARRAY: u32 = 1007;
pub const OID_TEXT_ARRAY: u32 = 1009;
pub const OID_BPCHAR_ARRAY: u32 = 1014;
pub const OID_VARCHAR_ARRAY: u32 = 1015;
pub const OID_INT8_ARRAY: u32 = 1016;
pub const OID_FLOAT4_ARRAY: u32 = 1021;
pub const OID_FLOAT8_ARRAY: u32 = 1022;
pub const OID_OID_ARRAY: u32 = 1028;
pub const OID_TIMESTAMP_ARRAY: u32 = 1115;
pub const OID_DATE_ARRAY: u32 = 1182;
pub const OID_TIME_ARRAY: u32 = 1183;
pub const OID_TIMESTAMPTZ_ARRAY: u32 = 1185;
pub const OID_INTERVAL_ARRAY: u32 = 1187;
pub const OID_NUMERIC_ARRAY: u32 = 1231;
pub const OID_JSON_ARRAY: u32 = 199;
pub const OID_UUID_ARRAY: u32 = 2951;
pub const OID_JSONB_ARRAY: u32 = 3807;
/// The anonymous composite type (`record`).
pub const OID_RECORD: u32 = 2249;

/// The most elements a binary array parameter may declare before any is read: what
/// a message of at most 1 GiB could hold at 4 bytes (a length) each.
const MAX_BINARY_ARRAY_ELEMENTS: usize = db::array::MAX_ELEMENTS;
/// The version byte before a jsonb's text in its binary form.
const JSONB_VERSION: u8 = 1;

pub const FORMAT_TEXT: i16 = 0;
pub const FORMAT_BINARY: i16 = 1;

/// The OID a column or parameter of type `ty` is described with (text when unknown).
pub fn oid_of(ty: Option<DataType>) -> u32 {
    match ty {
        Some(DataType::Int) => OID_INT8,
        Some(DataType::Float) => OID_FLOAT8,
        Some(DataType::Float4) => OID_FLOAT4,
        Some(DataType::Numeric(_)) => OID_NUMERIC,
        Some(DataType::Bool) => OID_BOOL,
        Some(DataType::Text { max_chars: Some(_) }) => OID_VARCHAR,
        Some(DataType::Text { max_chars: None }) | None => OID_TEXT,
        Some(DataType::Char { .. }) => OID_BPCHAR,
        Some(DataType::Date) => OID_DATE,
        Some(DataType::Time) => OID_TIME,
        Some(DataType::Timestamp) => OID_TIMESTAMP,
        Some(DataType::TimestampTz) => OID_TIMESTAMPTZ,
        Some(DataType::Interval) => OID_INTERVAL,
        Some(DataType::Bytea) => OID_BYTEA,
        Some(DataType::Uuid) => OID_UUID,
        Some(DataType::Json) => OID_JSON,
        Some(DataType::Jsonb) => OID_JSONB,
        // oid 26, name 19, "char" 18, regclass 2205, regtype 2206, regproc 24,
        // regnamespace 4089: the catalog's numbering.
        Some(ty @ DataType::Catalog(_)) => db::catalog::type_oid(ty) as u32,
        Some(DataType::Array(elem)) => array_oid(elem),
        Some(DataType::Record(_)) => OID_RECORD,
    }
}

/// The OID of an array of `elem` (an integer array is int8[], as an integer is int8).
pub fn array_oid(elem: ElemType) -> u32 {
    match elem {
        ElemType::Int => OID_INT8_ARRAY,
        ElemType::Float => OID_FLOAT8_ARRAY,
        ElemType::Float4 => OID_FLOAT4_ARRAY,
        ElemType::Numeric => OID_NUMERIC_ARRAY,
        ElemType::Text => OID_TEXT_ARRAY,
        ElemType::Bool => OID_BOOL_ARRAY,
        ElemType::Date => OID_DATE_ARRAY,
        ElemType::Time => OID_TIME_ARRAY,
        ElemType::Timestamp => OID_TIMESTAMP_ARRAY,
        ElemType::TimestampTz => OID_TIMESTAMPTZ_ARRAY,
        ElemType::Interval => OID_INTERVAL_ARRAY,
        ElemType::Bytea => OID_BYTEA_ARRAY,
        ElemType::Uuid => OID_UUID_ARRAY,
        ElemType::Json => OID_JSON_ARRAY,
        ElemType::Jsonb => OID_JSONB_ARRAY,
    }
}

/// The (size, modifier) of a RowDescription field of type `ty`.
pub fn size_and_modifier(ty: Option<DataType>) -> (i16, i32) {
    match ty {
        Some(DataType::Int | DataType::Float) => (8, -1),
        Some(DataType::Time | DataType::Timestamp | DataType::TimestampTz) => (8, -1),
        Some(DataType::Date | DataType::Float4) => (4, -1),
        Some(DataType::Interval) => (16, -1),
        Some(DataType::Bool) => (1, -1),
        Some(DataType::Numeric(spec)) => (-1, spec.map_or(-1, |s| s.typmod())),
        Some(DataType::Bytea) => (-1, -1),
        Some(DataType::Uuid) => (16, -1),
        Some(DataType::Json | DataType::Jsonb | DataType::Array(_) | DataType::Record(_)) => (-1, -1),
        Some(DataType::Catalog(CatalogType::Name)) => (64, -1),
        Some(DataType::Catalog(CatalogType::Char)) => (1, -1),
        Some(DataType::Catalog(CatalogType::Int2Vector | CatalogType::OidVector)) => (-1, -1),
        Some(DataType::Catalog(_)) => (4, -1),
        // PostgreSQL's varchar(n) modifier is n plus the 4-byte header.
        Some(DataType::Text { max_chars: Some(n) }) => (-1, n.saturating_add(4) as i32),
        Some(DataType::Text { max_chars: None }) | None => (-1, -1),
        // bpchar's too.
        Some(DataType::Char { len }) => (-1, len.map_or(-1, |n| n.saturating_add(4) as i32)),
    }
}

/// The db type a parameter declared with `oid` holds, if the OID is one we know.
pub fn type_of_oid(oid: u32) -> Option<DataType> {
    match oid {
        OID_INT2 | OID_INT4 | OID_INT8 => Some(DataType::Int),
        OID_FLOAT4 => Some(DataType::Float4),
        OID_FLOAT8 => Some(DataType::Float),
        OID_NUMERIC => Some(DataType::Numeric(None)),
        OID_BOOL => Some(DataType::Bool),
        OID_TEXT | OID_VARCHAR => Some(DataType::Text { max_chars: None }),
        OID_BPCHAR => Some(DataType::Char { len: None }),
        OID_DATE => Some(DataType::Date),
        OID_TIME => Some(DataType::Time),
        OID_TIMESTAMP => Some(DataType::Timestamp),
        OID_TIMESTAMPTZ => Some(DataType::TimestampTz),
        OID_INTERVAL => Some(DataType::Interval),
        OID_BYTEA => Some(DataType::Bytea),
        OID_UUID => Some(DataType::Uuid),
        OID_JSON => Some(DataType::Json),
        OID_JSONB => Some(DataType::Jsonb),
        OID_OID => Some(DataType::Catalog(CatalogType::Oid)),
        OID_NAME => Some(DataType::Catalog(CatalogType::Name)),
        OID_REGCLASS => Some(DataType::Catalog(CatalogType::RegClass)),
        OID_REGTYPE => Some(DataType::Catalog(CatalogType::RegType)),
        // Arrays of the types above; name[] and bpchar[] as text[], oid[] as int8[].
        OID_INT2_ARRAY | OID_INT4_ARRAY | OID_INT8_ARRAY | OID_OID_ARRAY => {
            Some(DataType::Array(ElemType::Int))
        }
        OID_FLOAT4_ARRAY => Some(DataType::Array(ElemType::Float4)),
        OID_FLOAT8_ARRAY => Some(DataType::Array(ElemType::Float)),
        OID_NUMERIC_ARRAY => Some(DataType::Array(ElemType::Numeric)),
        OID_TEXT_ARRAY | OID_VARCHAR_ARRAY | OID_NAME_ARRAY | OID_BPCHAR_ARRAY => {
            Some(DataType::Array(ElemType::Text))
        }
        OID_BOOL_ARRAY => Some(DataType::Array(ElemType::Bool)),
        OID_DATE_ARRAY => Some(DataType::Array(ElemType::Date)),
        OID_TIME_ARRAY => Some(DataType::Array(ElemType::Time)),
        OID_TIMESTAMP_ARRAY => Some(DataType::Array(ElemType::Timestamp)),
        OID_TIMESTAMPTZ_ARRAY => Some(DataType::Array(ElemType::TimestampTz)),
        OID_INTERVAL_ARRAY => Some(DataType::Array(ElemType::Interval)),
        OID_BYTEA_ARRAY => Some(DataType::Array(ElemType::Bytea)),
        OID_UUID_ARRAY => Some(DataType::Array(ElemType::Uuid)),
        OID_JSON_ARRAY => Some(DataType::Array(ElemType::Json)),
        OID_JSONB_ARRAY => Some(DataType::Array(ElemType::Jsonb)),
        _ => None,
    }
}

/// Writes a value in text format: what PostgreSQL's output functions print.
pub fn write_text(value: &Value, out: &mut Vec<u8>) {
    use std::io::Write;
    match value {
        Value::Null => {}
        Value::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Value::Float(v) => out.extend_from_slice(db::value::float_text(*v).as_bytes()),
        Value::Float4(v) => out.extend_from_slice(db::value::float4_text(*v).as_bytes()),
        Value::Numeric(n) => out.extend_from_slice(numeric::to_text(n).as_bytes()),
        Value::Bytea(b) => out.extend_from_slice(db::bytea::to_text(b).as_bytes()),
        Value::Uuid(u) => out.extend_from_slice(db::uuid::to_text(u).as_bytes()),
        Value::Json(t) | Value::Jsonb(t) => out.extend_from_slice(t.as_bytes()),
        Value::Text(s) => out.extend_from_slice(s.as_bytes()),
        Value::Bool(b) => out.push(if *b { b't' } else { b'f' }),
        Value::Array(a) => out.extend_from_slice(db::array::to_text(a).as_bytes()),
        Value::Record(r) => out.extend_from_slice(db::record::to_text(r).as_bytes()),
        // In the session's zone: the connection makes it current while it handles the
        // client's messages (`SessionState::handle_messages`).
        other => {
            let mut text = String::new();
            other.write_datetime(&mut text);
            out.extend_from_slice(text.as_bytes());
        }
    }
}

/// Writes a value of a column of type `ty` in text format: a CHAR(n)'s text
/// blank-padded to n characters, anything else as `write_text`.
pub fn write_text_as(value: &Value, ty: Option<DataType>, out: &mut Vec<u8>) {
    match (value, ty) {
        (Value::Text(t), Some(DataType::Char { len: Some(n) })) => {
            out.extend_from_slice(db::value::blank_padded(t, n).as_bytes())
        }
        _ => write_text(value, out),
    }
}

/// Writes a value in binary format for a column described with `oid`. A value whose type
/// differs from the column's (possible only for columns of unknown type, described as
/// text) is written as text, which is text's binary format.
pub fn write_binary(value: &Value, oid: u32, out: &mut Vec<u8>) {
    match (value, oid) {
        (Value::Int(v), OID_INT8) => out.extend_from_slice(&v.to_be_bytes()),
        (Value::Float(v), OID_FLOAT8) => out.extend_from_slice(&v.to_be_bytes()),
        (Value::Int(v), OID_FLOAT8) => out.extend_from_slice(&(*v as f64).to_be_bytes()),
        (Value::Float4(v), OID_FLOAT4) => out.extend_from_slice(&v.to_be_bytes()),
        (Value::Float4(v), OID_FLOAT8) => out.extend_from_slice(&f64::from(*v).to_be_bytes()),
        (Value::Int(v), OID_FLOAT4) => out.extend_from_slice(&(*v as f32).to_be_bytes()),
        // A REAL column's other numbers (a CASE of a REAL and a decimal): rounded to the
        // nearest float4, as the column's type would store them.
        (Value::Float(v), OID_FLOAT4) => out.extend_from_slice(&(*v as f32).to_be_bytes()),
        (Value::Numeric(n), OID_FLOAT4) => {
            let f = numeric::to_f64(n).unwrap_or(f64::NAN) as f32;
            out.extend_from_slice(&f.to_be_bytes())
        }
        (Value::Numeric(n), OID_NUMERIC) => numeric::write_binary(n, out),
        // bytea and uuid: the bytes as they are.
        (Value::Bytea(b), OID_BYTEA) => out.extend_from_slice(b),
        (Value::Uuid(u), OID_UUID) => out.extend_from_slice(u),
        // jsonb's binary form is a version byte and the text; json's is the text.
        (Value::Jsonb(t), OID_JSONB) => {
            out.push(JSONB_VERSION);
            out.extend_from_slice(t.as_bytes());
        }
        // A column of numbers of several types (a CASE of an integer and a decimal) is
        // described as their common type: each value written as that type.
        (Value::Int(v), OID_NUMERIC) => numeric::write_binary(&numeric::from_i64(*v), out),
        (Value::Numeric(n), OID_FLOAT8) => {
            let f = numeric::to_f64(n).unwrap_or(f64::NAN);
            out.extend_from_slice(&f.to_be_bytes())
        }
        (Value::Bool(b), OID_BOOL) => out.push(u8::from(*b)),
        // An OID is an unsigned 32-bit number (a `reg*` value still unnamed: a result
        // names them before they are sent, see `db::catalog::name_objects`).
        (Value::Int(v), OID_OID | OID_REGCLASS | OID_REGTYPE | OID_REGPROC | OID_REGNAMESPACE) => {
            out.extend_from_slice(&(*v as u32).to_be_bytes())
        }
        (Value::Array(a), oid) if oid == array_oid(a.elem) => write_binary_array(a, out),
        (Value::Record(r), OID_RECORD) => write_binary_record(r, out),
        // PostgreSQL's binary forms are the values as they are: days or microseconds
        // since 2000-01-01, microseconds since midnight.
        (Value::Date(d), OID_DATE) => out.extend_from_slice(&d.to_be_bytes()),
        (Value::Time(t), OID_TIME)
        | (Value::Timestamp(t), OID_TIMESTAMP)
        | (Value::TimestampTz(t), OID_TIMESTAMPTZ) => out.extend_from_slice(&t.to_be_bytes()),
        (Value::Interval(iv), OID_INTERVAL) => {
            out.extend_from_slice(&iv.micros.to_be_bytes());
            out.extend_from_slice(&iv.days.to_be_bytes());
            out.extend_from_slice(&iv.months.to_be_bytes());
        }
        (value, _) => write_text(value, out),
    }
}

/// PostgreSQL's binary record (`record_send`): i32 number of fields, then each field as
/// its type's OID, an i32 length (-1 for NULL) and its binary form.
fn write_binary_record(r: &db::record::Record, out: &mut Vec<u8>) {
    out.extend_from_slice(&(r.fields.len() as i32).to_be_bytes());
    for (value, ty) in r.fields.iter().zip(r.ty.field_types()) {
        // A field whose type the query could not tell goes as its value's type.
        let oid = oid_of(ty.or_else(|| value.data_type()));
        out.extend_from_slice(&oid.to_be_bytes());
        if value.is_null() {
            out.extend_from_slice(&(-1i32).to_be_bytes());
            continue;
        }
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        write_binary(value, oid, out);
        let len = (out.len() - at - 4) as i32;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
}

/// PostgreSQL's binary array (`array_send`): i32 ndim (0 for an empty array), i32
/// has-NULL flag, i32 element OID, then per dimension i32 length and i32 lower bound
/// (1), then each element as an i32 length (-1 for NULL) and its binary form.
fn write_binary_array(a: &db::array::Array, out: &mut Vec<u8>) {
    let elem_oid = oid_of(Some(a.elem.data_type()));
    let ndim: i32 = if a.items.is_empty() { 0 } else { 1 };
    out.extend_from_slice(&ndim.to_be_bytes());
    out.extend_from_slice(&i32::from(a.items.iter().any(Value::is_null)).to_be_bytes());
    out.extend_from_slice(&elem_oid.to_be_bytes());
    if ndim == 1 {
        out.extend_from_slice(&(a.items.len() as i32).to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
    }
    for item in &a.items {
        if item.is_null() {
            out.extend_from_slice(&(-1i32).to_be_bytes());
            continue;
        }
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        write_binary(item, elem_oid, out);
        let len = (out.len() - at - 4) as i32;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
}

/// An int2vector's or oidvector's text (`int2vectorout`): the numbers with a blank
/// between them, `1 2`.
fn write_vector_text(a: &db::array::Array, out: &mut Vec<u8>) {
    use std::io::Write;
    for (n, item) in a.items.iter().enumerate() {
        if n > 0 {
            out.push(b' ');
        }
        if let Value::Int(v) = item {
            let _ = write!(out, "{v}");
        }
    }
}

/// An int2vector's or oidvector's binary form (`int2vectorsend`, `oidvectorsend`): an
/// array of int2 or oid (see `write_binary_array`) with lower bound 0.
fn write_binary_vector(a: &db::array::Array, ty: CatalogType, out: &mut Vec<u8>) {
    let (elem_oid, width) = match ty {
        CatalogType::Int2Vector => (OID_INT2, 2i32),
        _ => (OID_OID, 4i32),
    };
    let ndim: i32 = if a.items.is_empty() { 0 } else { 1 };
    out.extend_from_slice(&ndim.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&elem_oid.to_be_bytes());
    if ndim == 1 {
        out.extend_from_slice(&(a.items.len() as i32).to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
    }
    for item in &a.items {
        let v = match item {
            Value::Int(v) => *v,
            _ => 0,
        };
        out.extend_from_slice(&width.to_be_bytes());
        match width {
            2 => out.extend_from_slice(&(v as i16).to_be_bytes()),
            _ => out.extend_from_slice(&(v as u32).to_be_bytes()),
        }
    }
}

/// Reads PostgreSQL's binary array (see `write_binary_array`) as an array of `elem`
/// (the type the parameter's place wants; else the element OID's type): each element
/// read by its own OID's binary form, then converted as an assignment would.
fn read_binary_array(bytes: &[u8], elem: Option<ElemType>) -> Result<Value, DbError> {
    let bad = |what: &str| invalid("binary array", what.to_string());
    let mut at = 0;
    let i32_at = |at: &mut usize| -> Result<i32, DbError> {
        let b = bytes.get(*at..*at + 4).ok_or_else(|| bad("a header cut short"))?;
        *at += 4;
        Ok(i32::from_be_bytes(b.try_into().expect("4 bytes")))
    };
    let ndim = i32_at(&mut at)?;
    let _has_null = i32_at(&mut at)?;
    let elem_oid = i32_at(&mut at)? as u32;
    let elem_ty = type_of_oid(elem_oid);
    let target = elem
        .or_else(|| elem_ty.and_then(ElemType::of))
        .ok_or_else(|| invalid("binary array", format!("elements of OID {elem_oid}")))?;
    let count = match ndim {
        0 => 0,
        1 => {
            let len = i32_at(&mut at)?;
            let _lower_bound = i32_at(&mut at)?;
            usize::try_from(len).map_err(|_| bad("a negative length"))?
        }
        n if n > 1 => return Err(DbError::Unsupported("multidimensional arrays".into())),
        _ => return Err(bad("a negative number of dimensions")),
    };
    // Every element takes at least its 4-byte length: a count the bytes cannot hold is
    // refused before anything is allocated for it.
    if count > MAX_BINARY_ARRAY_ELEMENTS || count > (bytes.len() - at) / 4 {
        return Err(bad("more elements than bytes"));
    }
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        let len = i32_at(&mut at)?;
        if len == -1 {
            items.push(Value::Null);
            continue;
        }
        let len = usize::try_from(len).map_err(|_| bad("a negative element length"))?;
        let element = bytes.get(at..at + len).ok_or_else(|| bad("an element cut short"))?;
        at += len;
        let value = if elem_oid == OID_NUMERIC {
            read_numeric(element, FORMAT_BINARY, Some(target.data_type()))?
        } else {
            read_binary(element, elem_oid, elem_ty.or(Some(target.data_type())))?
        };
        items.push(db::schema::coerce(value, target.data_type())?);
    }
    if at != bytes.len() {
        return Err(bad("bytes after the last element"));
    }
    Ok(db::array::Array::new(target, items).into_value())
}

/// Appends one DataRow field of a column of type `ty`: its length (-1 for NULL) and
/// bytes.
pub fn put_field(
    value: &Value,
    ty: Option<DataType>,
    format: i16,
    scratch: &mut Vec<u8>,
    row: &mut BytesMut,
) {
    if value.is_null() {
        row.put_i32(-1);
        return;
    }
    scratch.clear();
    match (value, ty) {
        // A CHAR(n)'s binary form is its padded text, as its text form.
        (_, Some(DataType::Char { .. })) => write_text_as(value, ty, scratch),
        (Value::Array(a), Some(DataType::Catalog(c))) if c.is_vector() => match format {
            FORMAT_BINARY => write_binary_vector(a, c, scratch),
            _ => write_vector_text(a, scratch),
        },
        _ if format == FORMAT_BINARY => write_binary(value, oid_of(ty), scratch),
        _ => write_text(value, scratch),
    }
    row.put_i32(scratch.len() as i32);
    row.put_slice(scratch);
}

/// The format of column `index` from a Bind's result format codes: none means text,
/// one applies to every column, else one per column.
pub fn format_of(formats: &[i16], index: usize) -> i16 {
    match formats {
        [] => FORMAT_TEXT,
        [one] => *one,
        many => many.get(index).copied().unwrap_or(FORMAT_TEXT),
    }
}

fn invalid(ty: &str, value: impl Into<String>) -> DbError {
    DbError::TypeMismatch { expected: ty.into(), value: value.into() }
}

/// Reads one bind parameter. `declared` is the OID the client gave in Parse (0 when it
/// left the type to the server), `inferred` the type the statement gives the parameter.
pub fn read_parameter(
    bytes: Option<&[u8]>,
    format: i16,
    declared: u32,
    inferred: Option<DataType>,
) -> Result<Value, DbError> {
    let Some(bytes) = bytes else { return Ok(Value::Null) };
    if declared == OID_NUMERIC {
        return read_numeric(bytes, format, inferred);
    }
    let ty = type_of_oid(declared).or(inferred);
    if format == FORMAT_BINARY {
        return read_binary(bytes, declared, ty);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("text", "bytes that are not UTF-8"))?;
    read_text(text, ty)
}

/// A numeric parameter (psycopg sends a Decimal, and a Python int beyond int8, as
/// numeric; PgJDBC a BigDecimal), as the type its place wants: an integral value that
/// fits stays an exact integer for an integer place, a float place takes the nearest
/// float (NaN and the infinities included), a text place the digits as given; any other
/// place, or none known, an exact NUMERIC (an integer column rounds it on assignment, or
/// refuses it as out of range).
fn read_numeric(bytes: &[u8], format: i16, inferred: Option<DataType>) -> Result<Value, DbError> {
    let text = if format == FORMAT_BINARY {
        // NaN and the infinities have signs of their own and no digits.
        match bytes.get(4..6).map(|b| u16::from_be_bytes([b[0], b[1]])) {
            Some(0xC000) => Some("NaN"),
            Some(0xD000) => Some("Infinity"),
            Some(0xF000) => Some("-Infinity"),
            _ => None,
        }
        .map(str::to_string)
    } else {
        Some(
            std::str::from_utf8(bytes)
                .map_err(|_| invalid("numeric", "bytes that are not UTF-8"))?
                .trim()
                .to_string(),
        )
    };
    if let (Some(ty @ (DataType::Float | DataType::Float4)), Some(t)) = (inferred, &text) {
        if let Ok(v) = read_text(t, Some(ty)) {
            return Ok(v);
        }
    }
    let n = match &text {
        Some(t) if format != FORMAT_BINARY => numeric::parse(t)?,
        Some(t) => return Err(invalid("numeric", t.clone())),
        None => numeric::read_binary(bytes)?,
    };
    Ok(match inferred {
        Some(DataType::Int) => match numeric::as_exact_i64(&n) {
            Some(i) => Value::Int(i),
            None => Value::numeric(n),
        },
        Some(DataType::Float) => Value::Float(numeric::to_f64(&n)?),
        Some(DataType::Float4) => db::schema::coerce(Value::numeric(n), DataType::Float4)?,
        Some(DataType::Text { .. }) => Value::Text(text.unwrap_or_else(|| numeric::to_text(&n))),
        _ => Value::numeric(n),
    })
}

fn read_text(text: &str, ty: Option<DataType>) -> Result<Value, DbError> {
    match ty {
        Some(DataType::Int) => {
            text.trim().parse::<i64>().map(Value::Int).map_err(|_| invalid("bigint", text))
        }
        Some(DataType::Float) => {
            let t = text.trim();
            match t.to_ascii_lowercase().as_str() {
                "nan" => Ok(Value::Float(f64::NAN)),
                "infinity" | "inf" | "+infinity" => Ok(Value::Float(f64::INFINITY)),
                "-infinity" | "-inf" => Ok(Value::Float(f64::NEG_INFINITY)),
                _ => t.parse::<f64>().map(Value::Float).map_err(|_| invalid("double precision", text)),
            }
        }
        Some(DataType::Bool) => match text.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => Ok(Value::Bool(true)),
            "f" | "false" | "n" | "no" | "off" | "0" => Ok(Value::Bool(false)),
            _ => Err(invalid("boolean", text)),
        },
        Some(DataType::Text { .. }) | None => Ok(Value::Text(text.to_string())),
        Some(ty) => db::schema::coerce(Value::Text(text.to_string()), ty),
    }
}

fn read_binary(bytes: &[u8], declared: u32, ty: Option<DataType>) -> Result<Value, DbError> {
    let wrong_size = || {
        invalid(
            &format!("binary {}", ty.map(|t| t.name()).unwrap_or("text".into())),
            format!("{} bytes", bytes.len()),
        )
    };
    match (declared, ty) {
        // A float4 stays one (a double place widens it exactly on assignment).
        (OID_FLOAT4, _) => {
            let b: [u8; 4] = bytes.try_into().map_err(|_| wrong_size())?;
            Ok(Value::Float4(f32::from_be_bytes(b)))
        }
        (_, Some(DataType::Float4)) => match bytes.len() {
            4 => Ok(Value::Float4(f32::from_be_bytes(bytes.try_into().expect("4 bytes")))),
            8 => db::float4::from_f64(f64::from_be_bytes(bytes.try_into().expect("8 bytes")))
                .map(Value::Float4),
            _ => Err(wrong_size()),
        },
        (_, Some(DataType::Int)) => match bytes.len() {
            2 => Ok(Value::Int(i16::from_be_bytes([bytes[0], bytes[1]]) as i64)),
            4 => Ok(Value::Int(i32::from_be_bytes(bytes.try_into().expect("4 bytes")) as i64)),
            8 => Ok(Value::Int(i64::from_be_bytes(bytes.try_into().expect("8 bytes")))),
            _ => Err(wrong_size()),
        },
        (_, Some(DataType::Float)) => match bytes.len() {
            4 => Ok(Value::Float(f32::from_be_bytes(bytes.try_into().expect("4 bytes")) as f64)),
            8 => Ok(Value::Float(f64::from_be_bytes(bytes.try_into().expect("8 bytes")))),
            _ => Err(wrong_size()),
        },
        (_, Some(DataType::Bool)) => match bytes {
            [b] => Ok(Value::Bool(*b != 0)),
            _ => Err(wrong_size()),
        },
        (_, Some(ty @ DataType::Numeric(_))) => {
            db::schema::coerce(Value::numeric(numeric::read_binary(bytes)?), ty)
        }
        // bytea and uuid: the bytes as they are.
        (_, Some(DataType::Bytea)) => Ok(Value::Bytea(bytes.into())),
        (_, Some(DataType::Uuid)) => {
            let b: [u8; 16] = bytes.try_into().map_err(|_| wrong_size())?;
            Ok(Value::Uuid(b))
        }
        (_, Some(ty @ (DataType::Json | DataType::Jsonb))) => {
            let text = match (ty, bytes) {
                (DataType::Jsonb, [JSONB_VERSION, text @ ..]) => text,
                (DataType::Jsonb, _) => return Err(invalid("binary jsonb", "an unsupported jsonb version")),
                (_, text) => text,
            };
            let text = std::str::from_utf8(text).map_err(|_| invalid("json", "bytes that are not UTF-8"))?;
            db::schema::coerce(Value::Text(text.to_string()), ty)
        }
        (_, Some(DataType::Date)) => {
            let b: [u8; 4] = bytes.try_into().map_err(|_| wrong_size())?;
            Ok(Value::Date(i32::from_be_bytes(b)))
        }
        // An OID: an unsigned 32-bit number. A name or "char": its text.
        (_, Some(DataType::Catalog(c))) if c.is_oid() => {
            let b: [u8; 4] = bytes.try_into().map_err(|_| wrong_size())?;
            Ok(Value::Int(u32::from_be_bytes(b) as i64))
        }
        (_, Some(DataType::Catalog(_))) => {
            let text = std::str::from_utf8(bytes).map_err(|_| invalid("name", "bytes that are not UTF-8"))?;
            Ok(Value::Text(text.to_string()))
        }
        (_, Some(ty @ (DataType::Time | DataType::Timestamp | DataType::TimestampTz))) => {
            let b: [u8; 8] = bytes.try_into().map_err(|_| wrong_size())?;
            let micros = i64::from_be_bytes(b);
            Ok(match ty {
                DataType::Time => Value::Time(micros),
                DataType::Timestamp => Value::Timestamp(micros),
                _ => Value::TimestampTz(micros),
            })
        }
        (_, Some(DataType::Interval)) => {
            let b: [u8; 16] = bytes.try_into().map_err(|_| wrong_size())?;
            Ok(Value::Interval(db::datetime::Interval {
                micros: i64::from_be_bytes(b[0..8].try_into().expect("8 bytes")),
                days: i32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
                months: i32::from_be_bytes(b[12..16].try_into().expect("4 bytes")),
            }))
        }
        (_, Some(ty @ DataType::Char { .. })) => {
            let text =
                std::str::from_utf8(bytes).map_err(|_| invalid("character", "bytes that are not UTF-8"))?;
            db::schema::coerce(Value::Text(text.to_string()), ty)
        }
        (_, Some(DataType::Array(elem))) => read_binary_array(bytes, Some(elem)),
        (_, Some(DataType::Record(_))) => {
            Err(DbError::Unsupported("binary input of anonymous composite types".into()))
        }
        (_, Some(DataType::Text { .. }) | None) => std::str::from_utf8(bytes)
            .map(|s| Value::Text(s.to_string()))
            .map_err(|_| invalid("text", "bytes that are not UTF-8")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_goes_out_as_record_send_and_record_out_write_it() {
        let record = db::record::Record::new(
            db::record::RecordType::ExpandArray(ElemType::Text),
            vec![Value::Null, Value::Int(2)],
        )
        .into_value();
        assert_eq!(oid_of(record.data_type()), OID_RECORD);
        let mut out = Vec::new();
        write_binary(&record, OID_RECORD, &mut out);
        // Two fields: a NULL text, then an int8 of 8 bytes.
        let mut want = Vec::new();
        for word in [2i32, OID_TEXT as i32, -1, OID_INT8 as i32, 8] {
            want.extend_from_slice(&word.to_be_bytes());
        }
        want.extend_from_slice(&2i64.to_be_bytes());
        assert_eq!(out, want);
        let mut text = Vec::new();
        write_text(&record, &mut text);
        assert_eq!(text, b"(,2)");
        // PostgreSQL has no input of an anonymous record in binary.
        assert!(read_parameter(Some(&out), FORMAT_BINARY, OID_RECORD, record.data_type()).is_err());
    }

    #[test]
    fn binary_arrays_follow_array_send_and_read_back() {
        let a = db::array::Array::new(ElemType::Int, vec![Value::Int(7), Value::Null, Value::Int(-1)])
            .into_value();
        let mut out = Vec::new();
        write_binary(&a, OID_INT8_ARRAY, &mut out);
        let mut want = Vec::new();
        for word in [1i32, 1, OID_INT8 as i32, 3, 1, 8] {
            want.extend_from_slice(&word.to_be_bytes());
        }
        want.extend_from_slice(&7i64.to_be_bytes());
        want.extend_from_slice(&(-1i32).to_be_bytes());
        want.extend_from_slice(&8i32.to_be_bytes());
        want.extend_from_slice(&(-1i64).to_be_bytes());
        assert_eq!(out, want);
        assert_eq!(read_parameter(Some(&out), FORMAT_BINARY, OID_INT8_ARRAY, None).unwrap(), a);
        // The empty array: no dimensions.
        let empty = db::array::Array::new(ElemType::Text, Vec::new()).into_value();
        let mut out = Vec::new();
        write_binary(&empty, OID_TEXT_ARRAY, &mut out);
        assert_eq!(out.len(), 12);
        assert_eq!(read_parameter(Some(&out), FORMAT_BINARY, OID_TEXT_ARRAY, None).unwrap(), empty);
        // int4 elements (PgJDBC's int4[]) widen; a text parameter is read as an array.
        let mut int4 = Vec::new();
        for word in [1i32, 0, OID_INT4 as i32, 1, 1, 4, 42] {
            int4.extend_from_slice(&word.to_be_bytes());
        }
        let got = read_parameter(Some(&int4), FORMAT_BINARY, OID_INT4_ARRAY, None).unwrap();
        assert_eq!(got.to_string(), "{42}");
        let got = read_parameter(Some(b"{1,NULL}"), FORMAT_TEXT, OID_INT2_ARRAY, None).unwrap();
        assert_eq!(got.to_string(), "{1,NULL}");
    }

    #[test]
    fn bad_binary_arrays_are_refused_before_allocating() {
        let header = |words: &[i32]| words.iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>();
        // A billion elements declared, none sent.
        let huge = header(&[1, 0, OID_INT8 as i32, 1_000_000_000, 1]);
        assert!(read_parameter(Some(&huge), FORMAT_BINARY, OID_INT8_ARRAY, None).is_err());
        // An element longer than the bytes left, a cut header, two dimensions.
        let cut = header(&[1, 0, OID_INT8 as i32, 1, 1, 8]);
        assert!(read_parameter(Some(&cut), FORMAT_BINARY, OID_INT8_ARRAY, None).is_err());
        assert!(read_parameter(Some(&[0, 0, 0]), FORMAT_BINARY, OID_INT8_ARRAY, None).is_err());
        let two = header(&[2, 0, OID_INT8 as i32, 1, 1, 1, 1]);
        let e = read_parameter(Some(&two), FORMAT_BINARY, OID_INT8_ARRAY, None).unwrap_err();
        assert_eq!(e.sqlstate(), "0A000");
    }

    #[test]
    fn integers_of_every_width_widen_to_int8() {
        let int = Some(DataType::Int);
        assert_eq!(read_parameter(Some(&7i16.to_be_bytes()), 1, OID_INT2, None).unwrap(), Value::Int(7));
        assert_eq!(read_parameter(Some(&(-7i32).to_be_bytes()), 1, OID_INT4, None).unwrap(), Value::Int(-7));
        assert_eq!(
            read_parameter(Some(&(1i64 << 40).to_be_bytes()), 1, 0, int).unwrap(),
            Value::Int(1 << 40)
        );
        assert_eq!(read_parameter(Some(b"42"), 0, 0, int).unwrap(), Value::Int(42));
        assert!(read_parameter(Some(b"4x"), 0, 0, int).is_err());
        assert!(read_parameter(Some(&[1, 2, 3]), 1, OID_INT8, None).is_err());
    }

    /// A numeric in binary format, as psycopg sends a Decimal or a very large int.
    fn numeric(weight: i16, sign: u16, digits: &[u16]) -> Vec<u8> {
        numeric_scaled(weight, sign, 0, digits)
    }

    /// The same with a display scale.
    fn numeric_scaled(weight: i16, sign: u16, scale: u16, digits: &[u16]) -> Vec<u8> {
        let mut b = Vec::new();
        for word in [digits.len() as u16, weight as u16, sign, scale] {
            b.extend_from_slice(&word.to_be_bytes());
        }
        for d in digits {
            b.extend_from_slice(&d.to_be_bytes());
        }
        b
    }

    #[test]
    fn numeric_parameters_are_read_in_both_formats() {
        let read = |bytes: &[u8], ty: Option<DataType>| read_parameter(Some(bytes), 1, OID_NUMERIC, ty);
        let dec = |t: &str| Value::numeric(numeric::parse(t).unwrap());
        let shown = |v: Value| format!("{v:?} {v}");
        let int = Some(DataType::Int);
        let float = Some(DataType::Float);
        let exact = Some(DataType::Numeric(None));
        // 12345678 = 1234|5678, weight 1.
        assert_eq!(read(&numeric(1, 0, &[1234, 5678]), int).unwrap(), Value::Int(12_345_678));
        // -1.5 = 1|5000 with weight 0, negative, display scale 1.
        assert_eq!(read(&numeric_scaled(0, 0x4000, 1, &[1, 5000]), float).unwrap(), Value::Float(-1.5));
        // 0.000123 = 0001|2300 with weight -1: the first group is 10^-4 units. The display
        // scale (0 here) is the client's: digits beyond it are dropped, as PostgreSQL.
        assert_eq!(read(&numeric(-2, 0, &[1, 2300]), float).unwrap(), Value::Float(0.0));
        assert_eq!(read(&numeric_scaled(-2, 0, 12, &[1, 2300]), float).unwrap(), Value::Float(0.00000001_23));
        assert_eq!(
            shown(read(&numeric_scaled(-1, 0, 6, &[1, 2300]), exact).unwrap()),
            shown(dec("0.000123"))
        );
        // 10^20 = 1 with weight 5: too large for an integer, a numeric the column refuses.
        assert_eq!(shown(read(&numeric(5, 0, &[1]), int).unwrap()), shown(dec("100000000000000000000")));
        assert_eq!(
            read(&numeric(2, 0, &[9, 2233, 7203]), Some(DataType::Text { max_chars: None })).unwrap(),
            Value::Text("922337203".into())
        );
        // NaN is NaN for a float, never eight bytes taken for a float8; for an exact
        // place it is refused.
        assert!(matches!(read(&numeric(0, 0xC000, &[]), float).unwrap(), Value::Float(v) if v.is_nan()));
        assert_eq!(read(&numeric(0, 0xC000, &[]), exact).unwrap_err().sqlstate(), "22P02");
        assert_eq!(read(&numeric(0, 0, &[]), int).unwrap(), Value::Int(0));
        assert!(read(&numeric(0, 0, &[10000]), float).is_err());
        assert!(read(&numeric(0, 0, &[1])[..9], float).is_err());
        // Text format: exact integers stay exact, decimals exact in their scale.
        assert_eq!(
            read_parameter(Some(b"9007199254740993"), 0, OID_NUMERIC, int).unwrap(),
            Value::Int(9_007_199_254_740_993)
        );
        assert_eq!(shown(read_parameter(Some(b"1.25"), 0, OID_NUMERIC, int).unwrap()), shown(dec("1.25")));
        assert_eq!(
            shown(read_parameter(Some(b" 1.250 "), 0, OID_NUMERIC, None).unwrap()),
            shown(dec("1.250"))
        );
        assert!(read_parameter(Some(b"x"), 0, OID_NUMERIC, float).is_err());
        // A parameter of a NUMERIC(p, s) place declared by the server, in binary: read as
        // numeric and fitted to the place's modifier.
        let money = Some(DataType::Numeric(Some(db::NumericSpec::new(10, 2).unwrap())));
        let v = read_parameter(Some(&numeric_scaled(0, 0, 3, &[1, 2355])), 1, 0, money).unwrap();
        assert_eq!(shown(v), shown(dec("1.24")));
        assert_eq!(shown(read_parameter(Some(b"7"), 0, 0, money).unwrap()), shown(dec("7.00")));
    }

    #[test]
    fn numerics_are_written_as_postgresql_does() {
        let dec = |t: &str| Value::numeric(numeric::parse(t).unwrap());
        let mut out = Vec::new();
        write_text(&dec("1.50"), &mut out);
        assert_eq!(out, b"1.50");
        out.clear();
        write_binary(&dec("-1.50"), OID_NUMERIC, &mut out);
        assert_eq!(out, numeric_scaled(0, 0x4000, 2, &[1, 5000]));
        out.clear();
        write_binary(&Value::Int(12_345_678), OID_NUMERIC, &mut out);
        assert_eq!(out, numeric(1, 0, &[1234, 5678]));
        let spec = db::NumericSpec::new(10, 2).unwrap();
        assert_eq!(oid_of(Some(DataType::Numeric(Some(spec)))), OID_NUMERIC);
        assert_eq!(size_and_modifier(Some(DataType::Numeric(Some(spec)))), (-1, (10 << 16 | 2) + 4));
        assert_eq!(size_and_modifier(Some(DataType::Numeric(None))), (-1, -1));
        assert_eq!(type_of_oid(OID_NUMERIC), Some(DataType::Numeric(None)));
    }

    #[test]
    fn bytea_and_uuid_go_as_their_bytes_in_binary_and_postgresqls_text_otherwise() {
        let uuid = db::uuid::parse("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
        let text = |v: &Value| {
            let mut out = Vec::new();
            write_text(v, &mut out);
            String::from_utf8(out).unwrap()
        };
        let binary = |v: &Value, oid| {
            let mut out = Vec::new();
            write_binary(v, oid, &mut out);
            out
        };
        let bytes = Value::Bytea(vec![0, 1, 0xff].into());
        assert_eq!(text(&bytes), "\\x0001ff");
        assert_eq!(binary(&bytes, OID_BYTEA), [0, 1, 0xff]);
        assert_eq!(text(&Value::Uuid(uuid)), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        assert_eq!(binary(&Value::Uuid(uuid), OID_UUID), uuid);
        // Parameters: declared by the client, or given their place's type.
        assert_eq!(read_parameter(Some(&[0, 1, 0xff]), 1, OID_BYTEA, None).unwrap(), bytes);
        assert_eq!(read_parameter(Some(b"\\x0001FF"), 0, 0, Some(DataType::Bytea)).unwrap(), bytes);
        assert_eq!(read_parameter(Some(b"\\x0001FF"), 0, OID_BYTEA, None).unwrap(), bytes);
        assert_eq!(read_parameter(Some(&uuid), 1, OID_UUID, None).unwrap(), Value::Uuid(uuid));
        assert_eq!(read_parameter(Some(&uuid), 1, 0, Some(DataType::Uuid)).unwrap(), Value::Uuid(uuid));
        assert_eq!(
            read_parameter(Some(b"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"), 0, OID_UUID, None).unwrap(),
            Value::Uuid(uuid)
        );
        assert!(read_parameter(Some(&uuid[..15]), 1, OID_UUID, None).is_err());
        assert_eq!(read_parameter(Some(b"nope"), 0, OID_UUID, None).unwrap_err().sqlstate(), "22P02");
        assert_eq!((oid_of(Some(DataType::Bytea)), oid_of(Some(DataType::Uuid))), (17, 2950));
    }

    #[test]
    fn json_goes_as_its_text_and_jsonb_with_its_version_byte_in_binary() {
        let jsonb = Value::Jsonb(r#"{"a": 1}"#.into());
        let mut out = Vec::new();
        write_binary(&jsonb, OID_JSONB, &mut out);
        assert_eq!(out, b"\x01{\"a\": 1}");
        out.clear();
        write_binary(&Value::Json(r#"{"a":1}"#.into()), OID_JSON, &mut out);
        assert_eq!(out, br#"{"a":1}"#);
        // Read back: a jsonb in normal form, a json as given, bad text 22P02.
        assert_eq!(read_parameter(Some(b"\x01{\"a\":1}"), 1, OID_JSONB, None).unwrap(), jsonb);
        assert_eq!(read_parameter(Some(br#"{"a":1}"#), 0, OID_JSONB, None).unwrap(), jsonb);
        assert_eq!(
            read_parameter(Some(br#"{"a":1}"#), 0, 0, Some(DataType::Json)).unwrap(),
            Value::Json(r#"{"a":1}"#.into())
        );
        assert_eq!(read_parameter(Some(b"\x02{}"), 1, OID_JSONB, None).unwrap_err().sqlstate(), "22P02");
        assert_eq!(read_parameter(Some(b"{"), 0, OID_JSON, None).unwrap_err().sqlstate(), "22P02");
        assert_eq!((oid_of(Some(DataType::Json)), oid_of(Some(DataType::Jsonb))), (114, 3802));
    }

    #[test]
    fn char_n_goes_blank_padded_in_both_formats_and_comes_in_without_its_blanks() {
        let ty = Some(DataType::Char { len: Some(5) });
        for format in [FORMAT_TEXT, FORMAT_BINARY] {
            let mut row = BytesMut::new();
            put_field(&Value::Text("ab".into()), ty, format, &mut Vec::new(), &mut row);
            assert_eq!(&row[..], b"\0\0\0\x05ab   ", "format {format}");
        }
        let mut out = Vec::new();
        write_text_as(&Value::Text("é".into()), Some(DataType::Char { len: Some(3) }), &mut out);
        assert_eq!(out, "é  ".as_bytes(), "padded to characters, not bytes");
        assert_eq!(read_parameter(Some(b"ab   "), 0, 0, ty).unwrap(), Value::Text("ab".into()));
        assert_eq!(read_parameter(Some(b"ab "), 1, OID_BPCHAR, None).unwrap(), Value::Text("ab".into()));
        assert_eq!(read_parameter(Some(b"abcdef"), 0, 0, ty).unwrap_err().sqlstate(), "22001");
        assert_eq!(oid_of(ty), OID_BPCHAR);
        assert_eq!(size_and_modifier(ty), (-1, 9));
    }

    /// REAL on the wire: OID 700 (real[] 1021), 4 bytes in binary both ways, float4out's
    /// text; a float8 parameter for a REAL place rounded, with float4's range errors.
    #[test]
    fn reals_are_float4_on_the_wire() {
        let real = Some(DataType::Float4);
        assert_eq!((oid_of(real), size_and_modifier(real)), (OID_FLOAT4, (4, -1)));
        assert_eq!(oid_of(Some(DataType::Array(ElemType::Float4))), OID_FLOAT4_ARRAY);
        assert_eq!(type_of_oid(OID_FLOAT4), real);
        let binary = |v: &Value| {
            let mut out = Vec::new();
            write_binary(v, OID_FLOAT4, &mut out);
            out
        };
        assert_eq!(binary(&Value::Float4(0.1)), 0.1f32.to_be_bytes());
        assert_eq!(binary(&Value::Int(3)), 3f32.to_be_bytes());
        assert_eq!(binary(&Value::Float(0.1)), 0.1f32.to_be_bytes());
        let mut text = Vec::new();
        write_text(&Value::Float4(1234567.0), &mut text);
        assert_eq!(text, b"1.234567e+06");
        let bytes = 0.1f32.to_be_bytes();
        assert_eq!(read_parameter(Some(&bytes), 1, OID_FLOAT4, None).unwrap(), Value::Float4(0.1));
        assert_eq!(read_parameter(Some(&bytes), 1, 0, real).unwrap(), Value::Float4(0.1));
        let wide = 0.1f64.to_be_bytes();
        assert_eq!(read_parameter(Some(&wide), 1, 0, real).unwrap(), Value::Float4(0.1));
        assert_eq!(read_parameter(Some(b" 0.1 "), 0, 0, real).unwrap(), Value::Float4(0.1));
        assert_eq!(read_parameter(Some(b"1e39"), 0, OID_FLOAT4, None).unwrap_err().sqlstate(), "22003");
        let huge = 1e39f64.to_be_bytes();
        assert_eq!(read_parameter(Some(&huge), 1, 0, real).unwrap_err().sqlstate(), "22003");
    }

    #[test]
    fn parameters_without_a_type_stay_text() {
        assert_eq!(read_parameter(Some(b"abc"), 0, 0, None).unwrap(), Value::Text("abc".into()));
        assert_eq!(read_parameter(None, 0, OID_INT8, None).unwrap(), Value::Null);
        assert_eq!(read_parameter(Some(b"on"), 0, OID_BOOL, None).unwrap(), Value::Bool(true));
        assert_eq!(
            read_parameter(Some(&2.5f64.to_be_bytes()), 1, OID_FLOAT8, None).unwrap(),
            Value::Float(2.5)
        );
    }

    #[test]
    fn values_print_as_postgresql_does() {
        let text = |v: Value| {
            let mut out = Vec::new();
            write_text(&v, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(text(Value::Bool(true)), "t");
        assert_eq!(text(Value::Float(0.1)), "0.1");
        assert_eq!(text(Value::Float(f64::NEG_INFINITY)), "-Infinity");
        assert_eq!(text(Value::Int(-3)), "-3");
        let mut out = Vec::new();
        write_binary(&Value::Int(1), OID_INT8, &mut out);
        assert_eq!(out, 1i64.to_be_bytes());
    }
}
