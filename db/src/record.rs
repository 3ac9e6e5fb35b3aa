//! Composite values (PostgreSQL's `record` and a table's row type): what a function with
//! several output columns gives where one value is wanted, as
//! `information_schema._pg_expandarray` gives `(x, n)` in a select list; a whole-row
//! reference (`SELECT t FROM t`, `row_to_json(t)`); a row constructor (`ROW(a, b)`,
//! `(a, b, c)`). Read a field at a time with `(expr).field`.
//!
//! A record's type (`RecordType`) is known where the query is compiled, from the
//! function, the FROM item or the constructor that makes it, so a field reference is
//! resolved to a position then; the value holds its type too, so that it can describe
//! itself (`Value::data_type`) and name its fields (`row_to_json`).
//!
//! A row's shape (`RowShape`: its field names and types) is interned for the life of the
//! process and named by a 4-byte number, so that `RecordType`, and with it `DataType`,
//! stays `Copy`, no larger (12 bytes) and compared by one number. A process meets as many
//! shapes as its queries name distinct column lists (a few per table and query text);
//! `MAX_ROW_SHAPES` bounds the memory they can take. Reading a shape takes no lock.
//! Records live in queries only: no table column, redo record or checkpoint image holds
//! one (`DataType::is_valid` refuses the type read back from disk, and a column
//! definition cannot name it).
//!
//! The text form is PostgreSQL's `record_out`: `(f1,f2)`, a NULL field empty, a field
//! quoted (with `"` and `\` doubled) when it is empty or holds a blank, a quote, a
//! backslash, a parenthesis or a comma. The order is field by field, as `record_cmp`'s.

use std::cmp::Ordering;
use std::sync::{LazyLock, Mutex, OnceLock};

use crate::array::ElemType;
use crate::error::{DbError, DbResult};
use crate::value::{DataType, Value};

/// The composite types a query can meet. `Copy`, so that `DataType` stays `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum RecordType {
    /// `_pg_expandarray(anyarray, OUT x anyelement, OUT n int)`: an element of the array
    /// and its position from 1.
    ExpandArray(ElemType),
    /// A row: a FROM item's whole row, or a row constructor's fields (`f1`, `f2`, ...).
    Row(RowShape),
}

impl RecordType {
    /// The fields' names, in order.
    pub fn field_names(self) -> Vec<&'static str> {
        match self {
            RecordType::ExpandArray(_) => vec!["x", "n"],
            RecordType::Row(shape) => shape.data().names.iter().map(String::as_str).collect(),
        }
    }

    /// The fields' types, in order (None where the query could not tell it, as for a
    /// bind parameter's field), with their modifiers: a CHAR(n) field is shown padded.
    pub fn field_types(self) -> Vec<Option<DataType>> {
        match self {
            RecordType::ExpandArray(elem) => vec![Some(elem.data_type()), Some(DataType::Int)],
            RecordType::Row(shape) => shape.data().types.to_vec(),
        }
    }

    /// The position of the field `name`.
    pub fn field_index(self, name: &str) -> Option<usize> {
        self.field_names().iter().position(|f| *f == name)
    }

    /// The stored table whose row type this is, as `pg_typeof` names it; None for an
    /// anonymous `record`.
    pub fn table_name(self) -> Option<&'static str> {
        match self {
            RecordType::ExpandArray(_) => None,
            RecordType::Row(shape) => shape.data().table.as_deref(),
        }
    }
}

/// The most distinct row shapes a process keeps (each some hundred bytes): past it a
/// query that makes a new one fails with 54000 rather than the memory growing for good.
pub const MAX_ROW_SHAPES: usize = SEGMENTS * SEGMENT_SHAPES;
const SEGMENTS: usize = 1024;
const SEGMENT_SHAPES: usize = 1024;

/// The field names and types of a row, interned: its number in `SHAPES`. Two shapes are
/// equal when they are the same number, which is when their contents are equal.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowShape(u32);

#[derive(PartialEq, Eq, Hash)]
struct RowShapeData {
    names: Box<[String]>,
    types: Box<[Option<DataType>]>,
    /// The stored table whose whole row this is (PostgreSQL's composite type of the
    /// table, as `pg_typeof(t)` prints it).
    table: Option<String>,
}

/// Every shape by number, in segments allocated as they fill: written once each, under
/// `INTERNED`'s lock, and read without one.
type Segment = [OnceLock<&'static RowShapeData>; SEGMENT_SHAPES];
static SHAPES: [OnceLock<Box<Segment>>; SEGMENTS] = [const { OnceLock::new() }; SEGMENTS];

/// The shapes by content, for interning.
static INTERNED: LazyLock<Mutex<std::collections::HashMap<&'static RowShapeData, u32>>> =
    LazyLock::new(Default::default);

impl RowShape {
    /// The shape of these fields, interned (54000 past `MAX_ROW_SHAPES`).
    pub fn intern(
        names: Vec<String>,
        types: Vec<Option<DataType>>,
        table: Option<String>,
    ) -> DbResult<RowShape> {
        assert_eq!(names.len(), types.len(), "a row shape's names and types");
        let data = RowShapeData { names: names.into(), types: types.into(), table };
        let mut interned = INTERNED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&number) = interned.get(&data) {
            return Ok(RowShape(number));
        }
        let number = interned.len();
        if number >= MAX_ROW_SHAPES {
            return Err(DbError::ProgramLimitExceeded(format!(
                "more than {MAX_ROW_SHAPES} distinct row types in this process"
            )));
        }
        let leaked: &'static RowShapeData = Box::leak(Box::new(data));
        let segment = SHAPES[number / SEGMENT_SHAPES]
            .get_or_init(|| Box::new([const { OnceLock::new() }; SEGMENT_SHAPES]));
        assert!(segment[number % SEGMENT_SHAPES].set(leaked).is_ok(), "row shape {number} set twice");
        interned.insert(leaked, number as u32);
        Ok(RowShape(number as u32))
    }

    fn data(self) -> &'static RowShapeData {
        let number = self.0 as usize;
        SHAPES[number / SEGMENT_SHAPES]
            .get()
            .and_then(|segment| segment[number % SEGMENT_SHAPES].get())
            .expect("a RowShape is made only by intern, after its shape is stored")
    }
}

impl std::fmt::Debug for RowShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Row({:?} of {:?})", self.data().names, self.data().table)
    }
}

// A row shape lives in queries only: no schema written to disk holds one (a record
// column is refused before a schema is made), so it has no stored form.
impl serde::Serialize for RowShape {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("a row type is never stored"))
    }
}

impl<'de> serde::Deserialize<'de> for RowShape {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<RowShape, D::Error> {
        Err(serde::de::Error::custom("a row type is never stored"))
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
        Value::Record(RecordBox::new(self))
    }
}

/// The box `Value::Record` holds (see `out_of_line`).
pub type RecordBox = crate::out_of_line::OutOfLine<Record>;

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
    let types = record.ty.field_types();
    for (i, field) in record.fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if field.is_null() {
            continue;
        }
        // Each field as its type's output function prints it (`t` for true).
        let mut text = String::new();
        match (field, types.get(i).copied().flatten()) {
            // A CHAR(n) field blank-padded, as its output function shows it.
            (Value::Text(t), Some(DataType::Char { len: Some(n) })) => {
                text = crate::value::blank_padded(t, n).into_owned()
            }
            _ => crate::array::write_element(field, &mut text),
        }
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

    #[test]
    fn equal_row_shapes_are_one_number_and_read_back_their_fields() {
        let shape = |names: &[&str], table: Option<&str>| {
            let types = vec![Some(DataType::Int); names.len()];
            let names = names.iter().map(|n| n.to_string()).collect();
            RecordType::Row(RowShape::intern(names, types, table.map(str::to_string)).unwrap())
        };
        let a = shape(&["id", "name"], Some("t"));
        assert_eq!(a, shape(&["id", "name"], Some("t")));
        assert_ne!(a, shape(&["id", "name"], None));
        assert_ne!(a, shape(&["id"], Some("t")));
        assert_eq!(a.field_names(), ["id", "name"]);
        assert_eq!(a.field_index("name"), Some(1));
        assert_eq!(a.table_name(), Some("t"));
        // A record's type adds nothing to a column type's 12 bytes.
        assert_eq!(std::mem::size_of::<DataType>(), 12);
    }

    #[test]
    fn a_row_record_writes_its_fields_as_their_output_functions_do() {
        let ty = RecordType::Row(
            RowShape::intern(
                vec!["f1".into(), "f2".into()],
                vec![Some(DataType::Bool), Some(DataType::Float)],
                None,
            )
            .unwrap(),
        );
        let r = Record::new(ty, vec![Value::Bool(true), Value::Float(f64::INFINITY)]);
        assert_eq!(to_text(&r), "(t,Infinity)");
    }
}
