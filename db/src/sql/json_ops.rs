//! The SQL semantics of JSON and JSONB: the operators (`->`, `->>`, `#>`, `#>>`, `@>`,
//! `<@`, `?`, jsonb `||` and `-`), jsonb's comparisons, the functions (`to_json`,
//! `json_build_object`, `json_typeof`, `json_array_length` and their jsonb twins) and
//! the results of the aggregates (`json_agg`, `json_object_agg` and their jsonb twins,
//! whose rows `query::Accumulator` collects). The values and their text are
//! `crate::json`'s.
//!
//! `->` and `#>` give a json from a json (the text as written) and a jsonb from a jsonb;
//! `->>` and `#>>` give text (a string's contents, NULL for a JSON null). A step that
//! leads nowhere is NULL. Text meeting these operators is read as JSON (PostgreSQL would
//! want a cast), as the database reads text meeting numbers and dates.

use std::cmp::Ordering;

use crate::error::{DbError, DbResult};
use crate::json::{self, Jsonb, Step};
use crate::sql::expr::BinOp;
use crate::value::{DataType, Value};

fn type_name(v: &Value) -> String {
    v.data_type().map_or("unknown".into(), |t| t.name().to_lowercase())
}

fn no_operator(a: &Value, op: &str, b: &Value) -> DbError {
    DbError::DatatypeMismatch(format!("{} {op} {}", type_name(a), type_name(b)))
}

/// A JSON operand as (its text, whether a jsonb): text is read as json.
fn json_text(v: &Value) -> Option<(&str, bool)> {
    match v {
        Value::Json(t) => Some((t, false)),
        Value::Jsonb(t) => Some((t, true)),
        Value::Text(t) => Some((t, false)),
        _ => None,
    }
}

fn jsonb_of(v: &Value) -> DbResult<Jsonb> {
    match v {
        Value::Jsonb(t) | Value::Json(t) => json::parse_jsonb(t),
        Value::Text(t) => json::parse_jsonb(t),
        other => Err(DbError::DatatypeMismatch(format!("jsonb and {}", type_name(other)))),
    }
}

/// The step an operand of `->` names: an index for an integer, else a key.
fn step_of(v: &Value) -> DbResult<Step> {
    Ok(match v {
        Value::Int(i) => Step::Index(*i),
        Value::Text(t) => Step::Key(t.clone()),
        other => return Err(DbError::DatatypeMismatch(format!("json -> {}", type_name(other)))),
    })
}

/// The steps of a `#>` path: PostgreSQL's text array literal, `'{a,0}'`.
fn path_of(v: &Value) -> DbResult<Vec<Step>> {
    match v {
        Value::Text(t) => Ok(json::parse_path(t)?.into_iter().map(Step::Key).collect()),
        other => Err(DbError::DatatypeMismatch(format!("json #> {}", type_name(other)))),
    }
}

/// The value at `steps` in JSON text: as json (`as_text` false) or as `->>` gives it.
fn follow(text: &str, jsonb: bool, steps: &[Step], as_text: bool) -> DbResult<Value> {
    if jsonb {
        let root = json::parse_jsonb(text)?;
        let mut at = &root;
        for step in steps {
            match at.step(step) {
                Some(next) => at = next,
                None => return Ok(Value::Null),
            }
        }
        return Ok(if as_text {
            json::text_of_jsonb(at).map_or(Value::Null, Value::Text)
        } else {
            Value::Jsonb(at.to_text().into())
        });
    }
    let root = json::parse(text)?;
    let mut at = &root;
    for step in steps {
        match at.step(step) {
            Some(next) => at = next,
            None => return Ok(Value::Null),
        }
    }
    Ok(if as_text {
        json::text_of_node(at, text).map_or(Value::Null, |t| Value::Text(t.into_owned()))
    } else {
        Value::Json(text[at.span.0..at.span.1].into())
    })
}

/// A JSON operator applied to two non-NULL values; None for an operator and operands
/// that are not JSON's (so the caller goes on: `||` of texts, `-` of numbers).
pub(crate) fn binary(op: BinOp, a: &Value, b: &Value) -> Option<DbResult<Value>> {
    Some(match op {
        BinOp::JsonGet | BinOp::JsonGetText => match json_text(a) {
            Some((text, jsonb)) => {
                step_of(b).and_then(|s| follow(text, jsonb, &[s], op == BinOp::JsonGetText))
            }
            None => Err(no_operator(a, "->", b)),
        },
        BinOp::JsonPath | BinOp::JsonPathText => match json_text(a) {
            Some((text, jsonb)) => {
                path_of(b).and_then(|p| follow(text, jsonb, &p, op == BinOp::JsonPathText))
            }
            None => Err(no_operator(a, "#>", b)),
        },
        BinOp::Contains => contains(a, b),
        BinOp::ContainedBy => contains(b, a),
        BinOp::HasKey => match (a, b) {
            (Value::Jsonb(_) | Value::Text(_), Value::Text(key)) => {
                jsonb_of(a).map(|j| Value::Bool(j.has_key(key)))
            }
            _ => Err(no_operator(a, "?", b)),
        },
        BinOp::Concat => match (a, b) {
            (Value::Jsonb(_), Value::Jsonb(_) | Value::Text(_)) | (Value::Text(_), Value::Jsonb(_)) => {
                jsonb_of(a).and_then(|x| Ok(Value::Jsonb(x.concat(jsonb_of(b)?).to_text().into())))
            }
            _ => return None,
        },
        BinOp::Sub => match (a, b) {
            (Value::Jsonb(_), Value::Text(key)) => {
                jsonb_of(a).and_then(|j| Ok(Value::Jsonb(j.remove_key(key)?.to_text().into())))
            }
            (Value::Jsonb(_), Value::Int(i)) => {
                jsonb_of(a).and_then(|j| Ok(Value::Jsonb(j.remove_index(*i)?.to_text().into())))
            }
            (Value::Jsonb(_) | Value::Json(_), _) => Err(no_operator(a, "-", b)),
            _ => return None,
        },
        // Arithmetic has no JSON operand.
        BinOp::Add | BinOp::Mul | BinOp::Div | BinOp::Mod
            if matches!(a, Value::Json(_) | Value::Jsonb(_))
                || matches!(b, Value::Json(_) | Value::Jsonb(_)) =>
        {
            Err(no_operator(a, op_symbol(op), b))
        }
        _ => return None,
    })
}

fn op_symbol(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        _ => "%",
    }
}

fn contains(a: &Value, b: &Value) -> DbResult<Value> {
    match (a, b) {
        (Value::Jsonb(_) | Value::Text(_), Value::Jsonb(_) | Value::Text(_)) => {
            Ok(Value::Bool(jsonb_of(a)?.contains(&jsonb_of(b)?)))
        }
        _ => Err(no_operator(a, "@>", b)),
    }
}

/// SQL comparison of two non-NULL values, one a jsonb (text read as jsonb): by
/// PostgreSQL's jsonb order. None when neither is a jsonb.
pub(crate) fn compare(a: &Value, b: &Value) -> Option<DbResult<Ordering>> {
    match (a, b) {
        (Value::Jsonb(_), Value::Jsonb(_) | Value::Text(_)) | (Value::Text(_), Value::Jsonb(_)) => {
            Some(jsonb_of(a).and_then(|x| Ok(x.compare(&jsonb_of(b)?))))
        }
        _ => None,
    }
}

/// The type of `a op b` for the JSON operators (None for the others).
pub(crate) fn result_type(op: BinOp, a: Option<DataType>, b: Option<DataType>) -> Option<DataType> {
    match op {
        BinOp::JsonGet | BinOp::JsonPath => Some(match a {
            Some(DataType::Jsonb) => DataType::Jsonb,
            _ => DataType::Json,
        }),
        BinOp::JsonGetText | BinOp::JsonPathText => Some(DataType::Text { max_chars: None }),
        BinOp::Contains | BinOp::ContainedBy | BinOp::HasKey => Some(DataType::Bool),
        BinOp::Concat | BinOp::Sub
            if a == Some(DataType::Jsonb) || (op == BinOp::Concat && b == Some(DataType::Jsonb)) =>
        {
            Some(DataType::Jsonb)
        }
        _ => None,
    }
}

/// A value as JSON (`to_json`, `to_jsonb`, `json_build_object`'s values): text as a
/// string, numbers and booleans as themselves, JSON as it is, dates and times as strings
/// of their ISO text.
pub(crate) fn to_jsonb(v: &Value) -> DbResult<Jsonb> {
    Ok(match v {
        Value::Null => Jsonb::Null,
        Value::Bool(b) => Jsonb::Bool(*b),
        Value::Int(i) => Jsonb::Number(crate::numeric::from_i64(*i)),
        Value::Numeric(n) => Jsonb::Number(n.as_ref().clone()),
        // A float is a number as float8 prints it; NaN and the infinities as strings.
        Value::Float(f) if f.is_finite() => Jsonb::Number(crate::numeric::parse(&format!("{f}"))?),
        Value::Float4(f) if f.is_finite() => Jsonb::Number(crate::numeric::parse(&format!("{f}"))?),
        Value::Json(t) | Value::Jsonb(t) => json::parse_jsonb(t)?,
        // An array is a JSON array of its elements, as PostgreSQL's to_json gives it.
        Value::Array(a) => Jsonb::Array(a.items.iter().map(to_jsonb).collect::<DbResult<_>>()?),
        // A record is an object of its fields by name (jsonb's normal form: a repeated
        // name keeps its last value).
        Value::Record(r) => {
            let mut pairs = Vec::with_capacity(r.fields.len());
            for ((name, value), ty) in r.ty.field_names().into_iter().zip(&r.fields).zip(r.ty.field_types()) {
                pairs.push((name.to_string(), field_jsonb(value, ty)?));
            }
            Jsonb::object(pairs)
        }
        Value::Timestamp(_) | Value::TimestampTz(_) => {
            let text = v.to_string();
            Jsonb::String(iso_timestamp(&text))
        }
        other => Jsonb::String(match other {
            Value::Text(t) => t.clone(),
            Value::Float(f) if f.is_nan() => "NaN".into(),
            Value::Float(f) if *f > 0.0 => "Infinity".into(),
            Value::Float(_) => "-Infinity".into(),
            other => other.to_string(),
        }),
    })
}

/// A record's field as JSON: a CHAR(n) field's text blank-padded, as PostgreSQL's
/// composite_to_json gives it (its output function's text).
fn field_jsonb(value: &Value, ty: Option<DataType>) -> DbResult<Jsonb> {
    match (value, ty) {
        (Value::Text(t), Some(DataType::Char { len: Some(n) })) => {
            Ok(Jsonb::String(crate::value::blank_padded(t, n).into_owned()))
        }
        _ => to_jsonb(value),
    }
}

/// A timestamp's text as JSON has it: `T` between date and time, a zone as `+hh:mm`.
fn iso_timestamp(text: &str) -> String {
    let mut out = text.replacen(' ', "T", 1);
    // `+02` or `-05:30` after the seconds: PostgreSQL's JSON writes `+02:00`.
    if let Some(at) = out.rfind(['+', '-']).filter(|&i| i > 10) {
        if out.len() - at == 3 {
            out.push_str(":00");
        }
    }
    out
}

/// The JSON text of `v` for a `json` result (`to_json`): as jsonb writes it.
pub(crate) fn to_json_text(v: &Value) -> DbResult<String> {
    Ok(match v {
        Value::Json(t) => t.to_string(),
        // json keeps a float as float8 prints it (`1e+20`); jsonb makes it a numeric.
        Value::Float(f) if f.is_finite() => crate::value::float_text(*f),
        Value::Float4(f) if f.is_finite() => crate::value::float4_text(*f),
        // PostgreSQL's to_json of an array: its elements' JSON, comma-separated, no blanks.
        Value::Array(a) => {
            let items = a.items.iter().map(to_json_text).collect::<DbResult<Vec<_>>>()?;
            format!("[{}]", items.join(","))
        }
        // PostgreSQL's composite_to_json: `{"name":value,...}` in field order, no blanks,
        // every field kept (a repeated name too).
        Value::Record(r) => {
            let mut out = String::from("{");
            let fields = r.ty.field_names().into_iter().zip(&r.fields).zip(r.ty.field_types());
            for (i, ((name, value), ty)) in fields.enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json::write_string(name, &mut out);
                out.push(':');
                match ty {
                    Some(DataType::Char { len: Some(_) }) => out.push_str(&field_jsonb(value, ty)?.to_text()),
                    _ => out.push_str(&to_json_text(value)?),
                }
            }
            out.push('}');
            out
        }
        other => to_jsonb(other)?.to_text(),
    })
}

/// `json_build_object(k1, v1, ...)` (json, PostgreSQL's `"k" : v` spacing, keys as
/// given) or `jsonb_build_object` (a jsonb object).
pub(crate) fn build_object(args: &[Value], jsonb: bool) -> DbResult<Value> {
    if !args.len().is_multiple_of(2) {
        return Err(DbError::InvalidArgument(
            "argument list must have even number of elements: the arguments of json_build_object() must consist of alternating keys and values".into(),
        ));
    }
    let mut pairs = Vec::with_capacity(args.len() / 2);
    for pair in args.chunks(2) {
        let key = match &pair[0] {
            Value::Null => {
                return Err(DbError::InvalidArgument("null value not allowed for object key".into()))
            }
            Value::Text(t) => t.clone(),
            other => other.to_string(),
        };
        pairs.push((key, &pair[1]));
    }
    if jsonb {
        let pairs = pairs.into_iter().map(|(k, v)| Ok((k, to_jsonb(v)?))).collect::<DbResult<Vec<_>>>()?;
        return Ok(Value::Jsonb(Jsonb::object(pairs).to_text().into()));
    }
    let mut out = String::from("{");
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        json::write_string(k, &mut out);
        out.push_str(" : ");
        out.push_str(&to_json_text(v)?);
    }
    out.push('}');
    Ok(Value::Json(out.into()))
}

/// `json_build_array(...)` or `jsonb_build_array(...)`.
pub(crate) fn build_array(args: &[Value], jsonb: bool) -> DbResult<Value> {
    if jsonb {
        let items = args.iter().map(to_jsonb).collect::<DbResult<Vec<_>>>()?;
        return Ok(Value::Jsonb(Jsonb::Array(items).to_text().into()));
    }
    let items = args.iter().map(to_json_text).collect::<DbResult<Vec<_>>>()?;
    Ok(Value::Json(format!("[{}]", items.join(", ")).into()))
}

/// `json_typeof` / `jsonb_typeof`.
pub(crate) fn type_of(v: &Value) -> DbResult<Value> {
    Ok(Value::Text(jsonb_of(v)?.type_name().into()))
}

/// `json_array_length` / `jsonb_array_length` (22023 for anything but an array).
pub(crate) fn array_length(v: &Value) -> DbResult<Value> {
    match jsonb_of(v)? {
        Jsonb::Array(items) => Ok(Value::Int(items.len() as i64)),
        Jsonb::Object(_) => Err(DbError::InvalidArgument("cannot get array length of a non-array".into())),
        _ => Err(DbError::InvalidArgument("cannot get array length of a scalar".into())),
    }
}

/// The refusal of a NULL, array or JSON key of `json_object_agg` (PostgreSQL's 22023s):
/// an object's key is the text of a scalar.
pub(crate) fn check_object_key(key: &Value) -> DbResult<()> {
    match key {
        Value::Null => Err(DbError::InvalidArgument("field name must not be null".into())),
        Value::Array(_) | Value::Record(_) | Value::Json(_) | Value::Jsonb(_) => {
            Err(DbError::InvalidArgument("key value must be scalar, not array, composite, or json".into()))
        }
        _ => Ok(()),
    }
}

/// The text of an object key already checked by `check_object_key`.
fn key_text(key: &Value) -> String {
    match key {
        Value::Text(t) => t.clone(),
        other => other.to_string(),
    }
}

/// `json_agg`'s result: the values' JSON, `, ` between them, and PostgreSQL's line
/// break before every array but the first element (its `json_agg_transfn` does so for
/// arrays and composites, not for JSON values).
pub(crate) fn json_array_of<'a>(values: impl Iterator<Item = &'a Value>) -> DbResult<Value> {
    let mut out = String::from("[");
    for (i, value) in values.enumerate() {
        if i > 0 {
            out.push_str(", ");
            if matches!(value, Value::Array(_) | Value::Record(_)) {
                out.push_str("\n ");
            }
        }
        out.push_str(&to_json_text(value)?);
        if out.len() > crate::sql::functions::MAX_RESULT_BYTES {
            return Err(crate::sql::functions::too_long(out.len()));
        }
    }
    out.push(']');
    Ok(Value::Json(out.into()))
}

/// `jsonb_agg`'s result: a jsonb array of the values.
pub(crate) fn jsonb_array_of<'a>(values: impl Iterator<Item = &'a Value>) -> DbResult<Value> {
    let items = values.map(to_jsonb).collect::<DbResult<Vec<_>>>()?;
    Ok(Value::Jsonb(Jsonb::Array(items).to_text().into()))
}

/// `json_object_agg`'s result: every pair in order, duplicate keys kept, in
/// PostgreSQL's layout `{ "k" : v, "k2" : v2 }`.
pub(crate) fn json_object_of<'a>(pairs: impl Iterator<Item = (&'a Value, &'a Value)>) -> DbResult<Value> {
    let mut out = String::from("{ ");
    for (i, (key, value)) in pairs.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        json::write_string(&key_text(key), &mut out);
        out.push_str(" : ");
        out.push_str(&to_json_text(value)?);
        if out.len() > crate::sql::functions::MAX_RESULT_BYTES {
            return Err(crate::sql::functions::too_long(out.len()));
        }
    }
    out.push_str(" }");
    Ok(Value::Json(out.into()))
}

/// `jsonb_object_agg`'s result: a jsonb object, the last value of a repeated key kept.
pub(crate) fn jsonb_object_of<'a>(pairs: impl Iterator<Item = (&'a Value, &'a Value)>) -> DbResult<Value> {
    let pairs =
        pairs.map(|(key, value)| Ok((key_text(key), to_jsonb(value)?))).collect::<DbResult<Vec<_>>>()?;
    Ok(Value::Jsonb(Jsonb::object(pairs).to_text().into()))
}
