//! One-dimensional SQL arrays (`int[]`, `text[]`, ...): their element types, PostgreSQL's
//! text form both ways (`array_in` / `array_out`), and their order.
//!
//! An array holds values of one element type, any of which may be NULL, with lower
//! bound one. More dimensions (`{{1,2},{3,4}}`, `int[][]`) and explicit bounds (`[0:1]={1,2}`) are
//! refused as not supported (0A000) rather than flattened.
//!
//! The order is PostgreSQL's btree order for arrays (`array_cmp`): element by element,
//! a NULL element after every non-NULL one and equal to another NULL, then the shorter
//! array first. It is a total order, so an array can be a key; SQL's `=` on arrays uses
//! it too (PostgreSQL's `ARRAY[1,NULL] = ARRAY[1,NULL]` is true).
//!
//! Nothing here allocates per element beyond the elements themselves: an array is a
//! `Vec` of `Value`s behind the one box `Value::Array` holds.

use std::cmp::Ordering;

use crate::error::{DbError, DbResult};
use crate::out_of_line::OutOfLine;
use crate::value::{DataType, Value};

/// The most elements an array may hold, as PostgreSQL's MaxArraySize (about 134
/// million); a literal or a function that would build more fails with 54000.
pub const MAX_ELEMENTS: usize = (1 << 27) - 1;

/// The type of an array's elements: a scalar type without its modifier (an array of
/// VARCHAR(10) holds texts of any length, as PostgreSQL keeps no element typmod in a
/// value either).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ElemType {
    Int,
    Float,
    Float4,
    Numeric,
    Text,
    Bool,
    Date,
    Time,
    Timestamp,
    TimestampTz,
    Interval,
    Bytea,
    Uuid,
    Json,
    Jsonb,
}

impl ElemType {
    /// The scalar type of one element.
    pub fn data_type(self) -> DataType {
        match self {
            ElemType::Int => DataType::Int,
            ElemType::Float => DataType::Float,
            ElemType::Float4 => DataType::Float4,
            ElemType::Numeric => DataType::Numeric(None),
            ElemType::Text => DataType::Text { max_chars: None },
            ElemType::Bool => DataType::Bool,
            ElemType::Date => DataType::Date,
            ElemType::Time => DataType::Time,
            ElemType::Timestamp => DataType::Timestamp,
            ElemType::TimestampTz => DataType::TimestampTz,
            ElemType::Interval => DataType::Interval,
            ElemType::Bytea => DataType::Bytea,
            ElemType::Uuid => DataType::Uuid,
            ElemType::Json => DataType::Json,
            ElemType::Jsonb => DataType::Jsonb,
        }
    }

    /// The element type of an array of `ty`; None for a type no array is kept of (an
    /// array, CHAR(n)).
    pub fn of(ty: DataType) -> Option<ElemType> {
        Some(match ty {
            DataType::Int => ElemType::Int,
            DataType::Float => ElemType::Float,
            DataType::Float4 => ElemType::Float4,
            DataType::Numeric(_) => ElemType::Numeric,
            DataType::Text { .. } => ElemType::Text,
            DataType::Bool => ElemType::Bool,
            DataType::Date => ElemType::Date,
            DataType::Time => ElemType::Time,
            DataType::Timestamp => ElemType::Timestamp,
            DataType::TimestampTz => ElemType::TimestampTz,
            DataType::Interval => ElemType::Interval,
            DataType::Bytea => ElemType::Bytea,
            DataType::Uuid => ElemType::Uuid,
            DataType::Json => ElemType::Json,
            DataType::Jsonb => ElemType::Jsonb,
            // oid[] and the reg*[] as integer arrays, name[] and "char"[] as text[].
            DataType::Catalog(c) if c.is_vector() => return None,
            DataType::Catalog(c) if c.is_oid() => ElemType::Int,
            DataType::Catalog(_) => ElemType::Text,
            DataType::Char { .. } | DataType::Array(_) | DataType::Record(_) => return None,
        })
    }

    /// The element type of an array of `ty`, or 0A000 naming the type.
    pub fn of_checked(ty: DataType) -> DbResult<ElemType> {
        ElemType::of(ty)
            .ok_or_else(|| DbError::Unsupported(format!("arrays of {}", ty.name().to_lowercase())))
    }

    /// The tag of the element type in redo and checkpoint images (the column type tags
    /// of `change`).
    pub fn tag(self) -> u8 {
        match self {
            ElemType::Int => 1,
            ElemType::Float => 2,
            ElemType::Text => 3,
            ElemType::Bool => 4,
            ElemType::Date => 5,
            ElemType::Time => 6,
            ElemType::Timestamp => 7,
            ElemType::TimestampTz => 8,
            ElemType::Interval => 9,
            ElemType::Numeric => 10,
            ElemType::Bytea => 11,
            ElemType::Uuid => 12,
            ElemType::Json => 13,
            ElemType::Jsonb => 14,
            ElemType::Float4 => 17,
        }
    }

    pub fn from_tag(tag: u8) -> Option<ElemType> {
        Some(match tag {
            1 => ElemType::Int,
            2 => ElemType::Float,
            3 => ElemType::Text,
            4 => ElemType::Bool,
            5 => ElemType::Date,
            6 => ElemType::Time,
            7 => ElemType::Timestamp,
            8 => ElemType::TimestampTz,
            9 => ElemType::Interval,
            10 => ElemType::Numeric,
            11 => ElemType::Bytea,
            12 => ElemType::Uuid,
            13 => ElemType::Json,
            14 => ElemType::Jsonb,
            17 => ElemType::Float4,
            _ => return None,
        })
    }
}

/// An array value: its element type (an empty array has one too) and its elements, each
/// NULL or of that type.
#[derive(Clone, Debug)]
pub struct Array {
    pub elem: ElemType,
    pub items: Vec<Value>,
}

/// The box `Value::Array` holds (see `out_of_line`).
pub type ArrayBox = OutOfLine<Array>;

impl ArrayBox {
    /// The elements, taken out.
    pub fn into_items(self) -> Vec<Value> {
        self.into_inner().items
    }
}

impl Array {
    pub fn new(elem: ElemType, items: Vec<Value>) -> Array {
        debug_assert!(
            items.iter().all(|v| v.is_null() || v.has_type(elem.data_type())),
            "an element of another type than {elem:?} in {items:?}"
        );
        Array { elem, items }
    }

    /// The array as a value.
    pub fn into_value(self) -> Value {
        Value::Array(ArrayBox::new(self))
    }

    /// Whether every element is NULL or of the element type (what a row read back from
    /// disk must show before it is trusted).
    pub fn is_well_typed(&self) -> bool {
        let ty = self.elem.data_type();
        self.items.iter().all(|v| v.is_null() || v.has_type(ty))
    }
}

/// PostgreSQL's btree order of two arrays (see the module's doc).
pub fn cmp(a: &Array, b: &Array) -> Ordering {
    for (x, y) in a.items.iter().zip(&b.items) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.items.len().cmp(&b.items.len()).then(a.elem.tag().cmp(&b.elem.tag()))
}

/// 0A000 for what this database does not keep of arrays.
fn multidimensional() -> DbError {
    DbError::Unsupported("multidimensional arrays".into())
}

/// PostgreSQL's 22P02 for text that is no array.
fn malformed(text: &str) -> DbError {
    DbError::MalformedArray(text.to_string())
}

/// Reads an array's text form (`{1,2,NULL,"a b"}`) as an array of `elem`: each element's
/// text is read as that type reads text (so a bad element is that type's error).
pub fn parse(text: &str, elem: ElemType) -> DbResult<Array> {
    let items = split(text)?;
    let ty = elem.data_type();
    let items = items
        .into_iter()
        .map(|item| match item {
            None => Ok(Value::Null),
            Some(t) => crate::schema::coerce(Value::Text(t), ty),
        })
        .collect::<DbResult<Vec<_>>>()?;
    Ok(Array::new(elem, items))
}

/// The elements' texts of an array literal, None for an unquoted NULL.
pub fn split(text: &str) -> DbResult<Vec<Option<String>>> {
    let trimmed = text.trim_matches(is_array_space);
    if trimmed.starts_with('[') {
        return Err(DbError::Unsupported("array bounds other than 1 (dimension decorations)".into()));
    }
    let Some(body) = trimmed.strip_prefix('{') else { return Err(malformed(text)) };
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let skip_blanks = |i: &mut usize| {
        while chars.get(*i).is_some_and(|&c| is_array_space(c)) {
            *i += 1;
        }
    };
    let mut items = Vec::new();
    skip_blanks(&mut i);
    if chars.get(i) == Some(&'}') {
        i += 1;
    } else {
        loop {
            skip_blanks(&mut i);
            if chars.get(i) == Some(&'{') {
                return Err(multidimensional());
            }
            // One element: unquoted text, quoted parts and backslash escapes, in any
            // mix; blanks after the last significant character are no part of it.
            let mut item = String::new();
            let mut significant = 0;
            // Quoted or escaped: never NULL, and may be empty.
            let mut literal = false;
            loop {
                match chars.get(i) {
                    None => return Err(malformed(text)),
                    Some('"') => {
                        literal = true;
                        i += 1;
                        loop {
                            match chars.get(i) {
                                None => return Err(malformed(text)),
                                Some('"') => break,
                                Some('\\') => {
                                    i += 1;
                                    item.push(*chars.get(i).ok_or_else(|| malformed(text))?);
                                }
                                Some(&c) => item.push(c),
                            }
                            i += 1;
                        }
                        i += 1;
                        significant = item.len();
                    }
                    Some('\\') => {
                        literal = true;
                        i += 1;
                        item.push(*chars.get(i).ok_or_else(|| malformed(text))?);
                        i += 1;
                        significant = item.len();
                    }
                    Some(',' | '}') => break,
                    Some('{') => return Err(malformed(text)),
                    Some(&c) => {
                        item.push(c);
                        if !is_array_space(c) {
                            significant = item.len();
                        }
                        i += 1;
                    }
                }
            }
            item.truncate(significant);
            if item.is_empty() && !literal {
                return Err(malformed(text));
            }
            let is_null = !literal && item.eq_ignore_ascii_case("NULL");
            items.push(if is_null { None } else { Some(item) });
            if items.len() > MAX_ELEMENTS {
                return Err(too_many());
            }
            let closing = chars[i] == '}';
            i += 1;
            if closing {
                break;
            }
        }
    }
    // Nothing but blanks may follow the closing brace.
    if chars[i..].iter().any(|&c| !is_array_space(c)) {
        return Err(malformed(text));
    }
    Ok(items)
}

/// PostgreSQL's blanks in array text (`array_isspace`).
fn is_array_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

/// 54000 for an array past `MAX_ELEMENTS`.
pub fn too_many() -> DbError {
    DbError::ProgramLimitExceeded(format!("array size exceeds the maximum allowed ({MAX_ELEMENTS})"))
}

/// PostgreSQL's text of an array (`array_out`): `{1,2,NULL,"a b"}`, an element quoted
/// when it is empty, spells NULL, or holds a blank, a quote, a backslash, a brace or a
/// comma, with `"` and `\` escaped by a backslash inside the quotes.
pub fn to_text(a: &Array) -> String {
    let mut out = String::with_capacity(2 + 4 * a.items.len());
    out.push('{');
    let mut element = String::new();
    for (n, v) in a.items.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        if v.is_null() {
            out.push_str("NULL");
            continue;
        }
        element.clear();
        write_element(v, &mut element);
        let needs_quotes = element.is_empty()
            || element.eq_ignore_ascii_case("NULL")
            || element.chars().any(|c| matches!(c, '"' | '\\' | '{' | '}' | ',') || is_array_space(c));
        if needs_quotes {
            out.push('"');
            for c in element.chars() {
                if c == '"' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        } else {
            out.push_str(&element);
        }
    }
    out.push('}');
    out
}

/// One element's text as its type's output function prints it (what the wire's text
/// format sends for a value of that type).
pub fn write_element(v: &Value, out: &mut String) {
    use std::fmt::Write;
    match v {
        Value::Bool(b) => out.push(if *b { 't' } else { 'f' }),
        Value::Float(f) => out.push_str(&crate::value::float_text(*f)),
        Value::Float4(f) => out.push_str(&crate::value::float4_text(*f)),
        Value::Date(_)
        | Value::Time(_)
        | Value::Timestamp(_)
        | Value::TimestampTz(_)
        | Value::Interval(_) => v.write_datetime(out),
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(t: &str) -> Vec<Option<String>> {
        split(t).unwrap()
    }

    #[test]
    fn array_text_reads_quotes_escapes_blanks_and_nulls_as_postgresql_does() {
        let s = |t: &str| Some(t.to_string());
        assert_eq!(texts("{}"), Vec::<Option<String>>::new());
        assert_eq!(texts(" { } "), Vec::<Option<String>>::new());
        assert_eq!(texts("{1,2,3}"), vec![s("1"), s("2"), s("3")]);
        assert_eq!(texts("{ a b , c }"), vec![s("a b"), s("c")]);
        assert_eq!(
            texts(r#"{"a,b","",NULL,"NULL",null,\NULL}"#),
            vec![s("a,b"), s(""), None, s("NULL"), None, s("NULL")]
        );
        assert_eq!(texts(r#"{"a\"b\\c",x\,y}"#), vec![s("a\"b\\c"), s("x,y")]);
        for bad in ["", "1,2", "{1,2", "{1,,2}", "{,1}", "{1,}", "{1}x", "{\"a}", "{a{b}"] {
            assert!(matches!(split(bad), Err(DbError::MalformedArray(_))), "{bad:?}: {:?}", split(bad));
        }
        assert!(matches!(split("{{1,2},{3,4}}"), Err(DbError::Unsupported(_))));
        assert!(matches!(split("[0:1]={1,2}"), Err(DbError::Unsupported(_))));
    }

    #[test]
    fn array_text_is_written_with_postgresqls_quoting_and_reads_back() {
        let a = Array::new(
            ElemType::Text,
            vec![
                Value::Text("a".into()),
                Value::Null,
                Value::Text("a b".into()),
                Value::Text("".into()),
                Value::Text("null".into()),
                Value::Text("q\"\\{},".into()),
            ],
        );
        let text = to_text(&a);
        assert_eq!(text, r#"{a,NULL,"a b","","null","q\"\\{},"}"#);
        let back = parse(&text, ElemType::Text).unwrap();
        assert_eq!(cmp(&a, &back), Ordering::Equal);
        let b = Array::new(ElemType::Bool, vec![Value::Bool(true), Value::Bool(false)]);
        assert_eq!(to_text(&b), "{t,f}");
        let f = Array::new(ElemType::Float, vec![Value::Float(1.5), Value::Float(f64::NAN)]);
        assert_eq!(to_text(&f), "{1.5,NaN}");
    }

    #[test]
    fn arrays_order_element_by_element_nulls_last_then_by_length() {
        let ints = |v: &[Option<i64>]| {
            Array::new(ElemType::Int, v.iter().map(|x| x.map_or(Value::Null, Value::Int)).collect())
        };
        assert_eq!(cmp(&ints(&[Some(1), Some(2)]), &ints(&[Some(1), Some(3)])), Ordering::Less);
        assert_eq!(cmp(&ints(&[Some(1)]), &ints(&[Some(1), Some(0)])), Ordering::Less);
        assert_eq!(cmp(&ints(&[Some(1), None]), &ints(&[Some(1), Some(9)])), Ordering::Greater);
        assert_eq!(cmp(&ints(&[None]), &ints(&[None])), Ordering::Equal);
        assert_eq!(cmp(&ints(&[Some(2)]), &ints(&[Some(1), Some(5)])), Ordering::Greater);
    }
}
