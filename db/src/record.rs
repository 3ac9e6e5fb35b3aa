//! Composite values (PostgreSQL's anonymous `record`): what a function with several
//! output columns gives where one value is wanted, as `information_schema._pg_expandarray`
//! gives `(x, n)` in a select list, read a field at a time with `(expr).field`.
//!
//! A record's type (`RecordType`) is known where the query is compiled, from the
//! function that makes it, so a field reference is resolved to a position then; the
//! value holds its type too, so that it can describe itself (`Value::data_type`).
//! Records live in queries only: no table column, redo record or checkpoint image holds
//! one (`DataType::is_valid` refuses the type read back from disk, and a column
//! definition cannot name it).
//!
//! The text form is PostgreSQL's `record_out`: `(f1,f2)`, a NULL field empty, a field
//! quoted (with `"` and `\` doubled) when it is empty or holds a blank, a quote, a
//! backslash, a parenthesis or a comma. The order is field by field, as `record_cmp`'s.

use std::cmp::Ordering;
use std::mem::ManuallyDrop;

use crate::array::ElemType;
use crate::value::{DataType, Value};

/// The composite types a query can meet: the output columns of the functions that return
/// records. `Copy`, so that `DataType` stays `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum RecordType {
    /// `_pg_expandarray(anyarray, OUT x anyelement, OUT n int)`: an element of the array
    /// and its position from 1.
    ExpandArray(ElemType),
}

impl RecordType {
    /// The fields' names, in order.
    pub fn field_names(self) -> &'static [&'static str] {
        match self {
            RecordType::ExpandArray(_) => &["x", "n"],
        }
    }

    /// The fields' types, in order.
    pub fn field_types(self) -> Vec<DataType> {
        match self {
            RecordType::ExpandArray(elem) => vec![elem.data_type(), DataType::Int],
        }
    }

    /// The position of the field `name`.
    pub fn field_index(self, name: &str) -> Option<usize> {
        self.field_names().iter().position(|f| *f == name)
    }
}

/// A composite value: its type and one value per field (NULL or of the field's type).
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub ty: RecordType,
    pub fields: Vec<Value>,
}

impl Record {
    pub fn new(ty: RecordType, fields: Vec<Value>) -> Record {
        debug_assert_eq!(fields.len(), ty.field_names().len(), "the fields of a {ty:?}");
        Record { ty, fields }
    }

    pub fn into_value(self) -> Value {
        Value::Record(RecordBox(ManuallyDrop::new(Box::new(self))))
    }
}

/// The box `Value::Record` holds: a `Record` whose drop is one call out of line, for the
/// reason `ArrayBox` gives (a plain box would make `Value`'s drop glue recursive, which
/// costs every dropped integer of the commit path).
pub struct RecordBox(ManuallyDrop<Box<Record>>);

impl Drop for RecordBox {
    #[inline]
    fn drop(&mut self) {
        drop_record(self);
    }
}

#[inline(never)]
#[cold]
fn drop_record(record: &mut RecordBox) {
    // SAFETY: called once, from `RecordBox::drop`; the box is not used after it.
    unsafe { ManuallyDrop::drop(&mut record.0) }
}

impl Clone for RecordBox {
    fn clone(&self) -> RecordBox {
        RecordBox(ManuallyDrop::new(Box::new(Record::clone(self))))
    }
}

impl std::fmt::Debug for RecordBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Record::fmt(self, f)
    }
}

impl std::ops::Deref for RecordBox {
    type Target = Record;
    fn deref(&self) -> &Record {
        &self.0
    }
}

/// `record_cmp`'s order: field by field (a NULL field after every other value, as in
/// an array), then the shorter record first.
pub fn cmp(a: &Record, b: &Record) -> Ordering {
    for (x, y) in a.fields.iter().zip(&b.fields) {
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
    a.fields.len().cmp(&b.fields.len())
}

/// PostgreSQL's text form of a record (`record_out`).
pub fn to_text(record: &Record) -> String {
    let mut out = String::from("(");
    for (i, field) in record.fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if field.is_null() {
            continue;
        }
        let text = field.to_string();
        let quote = text.is_empty()
            || text.chars().any(|c| matches!(c, '"' | '\\' | '(' | ')' | ',') || c.is_ascii_whitespace());
        if !quote {
            out.push_str(&text);
            continue;
        }
        out.push('"');
        for c in text.chars() {
            if matches!(c, '"' | '\\') {
                out.push(c);
            }
            out.push(c);
        }
        out.push('"');
    }
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(x: Value, n: i64) -> Record {
        Record::new(RecordType::ExpandArray(ElemType::Text), vec![x, Value::Int(n)])
    }

    #[test]
    fn text_form_quotes_what_record_out_quotes() {
        assert_eq!(to_text(&expanded(Value::Text("a".into()), 1)), "(a,1)");
        assert_eq!(to_text(&expanded(Value::Null, 2)), "(,2)");
        assert_eq!(to_text(&expanded(Value::Text(String::new()), 3)), "(\"\",3)");
        assert_eq!(to_text(&expanded(Value::Text("a \"b\", c\\".into()), 4)), "(\"a \"\"b\"\", c\\\\\",4)");
    }

    #[test]
    fn records_order_field_by_field_with_null_last() {
        let a = expanded(Value::Text("a".into()), 2);
        let b = expanded(Value::Text("b".into()), 1);
        let null = expanded(Value::Null, 0);
        assert_eq!(cmp(&a, &b), Ordering::Less);
        assert_eq!(cmp(&b, &null), Ordering::Less);
        assert_eq!(cmp(&a, &a.clone()), Ordering::Equal);
    }

    #[test]
    fn a_record_value_stays_24_bytes() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
    }
}
