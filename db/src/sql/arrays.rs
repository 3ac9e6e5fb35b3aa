//! SQL over arrays: the operators (`||`, `@>`, `<@`, `&&`, comparisons), subscripts and
//! slices, `= ANY (array)`, and the array functions, with PostgreSQL's semantics.
//!
//! NULL rules, as PostgreSQL's:
//! - a subscript out of range, or a NULL subscript, is NULL; a slice's bounds are
//!   clamped to the array, and a slice with nothing in it is the empty array;
//! - `||` with a NULL array gives the other side (a NULL element is appended as one);
//! - `@>`, `<@` and `&&` compare elements by equality, and a NULL element equals
//!   nothing;
//! - `x op ANY (a)` is NULL when no element makes it true and some comparison is NULL,
//!   false over the empty array; `ALL` the reverse;
//! - comparisons of whole arrays (`=`, `<`, ...) treat NULL elements as equal to each
//!   other and greater than any value (`array::cmp`), so they are never NULL unless an
//!   array is.

use std::cmp::Ordering;

use crate::array::{self, Array, ArrayBox, ElemType};
use crate::error::{DbError, DbResult};
use crate::schema::coerce;
use crate::sql::expr::{compare, BinOp, Func};
use crate::value::{DataType, Value};

/// PostgreSQL's error for a subscript of something that is not an array (42804).
pub(crate) fn not_subscriptable(ty: DataType) -> DbError {
    DbError::TypeConflict(format!(
        "cannot subscript type {} because it does not support subscripting",
        pg_name(ty)
    ))
}

/// Whether a value of type `ty` takes subscripts: an array, an int2vector, an oidvector.
pub(crate) fn is_subscriptable(ty: DataType) -> bool {
    matches!(ty, DataType::Array(_)) || matches!(ty, DataType::Catalog(c) if c.is_vector())
}

/// PostgreSQL's error for `op ANY/ALL (x)` with x no array (42809).
pub(crate) fn any_of_non_array() -> DbError {
    DbError::WrongObjectType("op ANY/ALL (array) requires array on right side".into())
}

/// A type's name as PostgreSQL's messages print it (`integer[]`, `text`).
pub(crate) fn pg_name(ty: DataType) -> String {
    match ty {
        DataType::Int => "bigint".into(),
        DataType::Float => "double precision".into(),
        DataType::Float4 => "real".into(),
        DataType::Numeric(_) => "numeric".into(),
        DataType::Text { .. } => "text".into(),
        DataType::Bool => "boolean".into(),
        DataType::Array(elem) => format!("{}[]", pg_name(elem.data_type())),
        other => other.name().to_lowercase(),
    }
}

/// The value as an array of `elem` (text is read as an array's text form: a parameter
/// sent as text, a literal); an error if it is neither.
pub(crate) fn as_array(v: Value, elem: Option<ElemType>) -> DbResult<ArrayBox> {
    match v {
        Value::Array(a) => Ok(a),
        Value::Text(t) => Ok(ArrayBox::new(array::parse(&t, elem.unwrap_or(ElemType::Text))?)),
        other => Err(any_of_non_array_value(&other)),
    }
}

fn any_of_non_array_value(v: &Value) -> DbError {
    match v.data_type() {
        Some(ty) => DbError::TypeConflict(format!("{} is not an array", pg_name(ty))),
        None => any_of_non_array(),
    }
}

/// SQL comparison of two arrays: element by element with SQL's comparison of the
/// elements (an int[] meets a numeric[] exactly), NULL elements as `array::cmp` orders
/// them, then by length.
pub(crate) fn compare_arrays(a: &Array, b: &Array) -> DbResult<Ordering> {
    for (x, y) in a.items.iter().zip(&b.items) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => compare(x, y)?.expect("neither is NULL"),
        };
        if o != Ordering::Equal {
            return Ok(o);
        }
    }
    Ok(a.items.len().cmp(&b.items.len()))
}

/// `lhs op ANY/ALL (array)`, the array evaluated already.
pub(crate) fn quantified(op: BinOp, all: bool, lhs: &Value, array: Value) -> DbResult<Value> {
    if array.is_null() {
        return Ok(Value::Null);
    }
    let array = as_array(array, lhs.data_type().and_then(ElemType::of))?;
    if array.items.is_empty() {
        return Ok(Value::Bool(all));
    }
    if lhs.is_null() {
        return Ok(Value::Null);
    }
    let mut unknown = false;
    for item in &array.items {
        let holds = compare(lhs, item)?.map(|o| match op {
            BinOp::Eq => o == Ordering::Equal,
            BinOp::NotEq => o != Ordering::Equal,
            BinOp::Lt => o == Ordering::Less,
            BinOp::LtEq => o != Ordering::Greater,
            BinOp::Gt => o == Ordering::Greater,
            BinOp::GtEq => o != Ordering::Less,
            other => unreachable!("ANY/ALL with the operator {other:?} is refused at compile time"),
        });
        match holds {
            Some(true) if !all => return Ok(Value::Bool(true)),
            Some(false) if all => return Ok(Value::Bool(false)),
            None => unknown = true,
            Some(_) => {}
        }
    }
    Ok(if unknown { Value::Null } else { Value::Bool(all) })
}

/// `a[i]`: the i-th element (from 1), NULL out of range.
pub(crate) fn subscript(a: Value, i: Value) -> DbResult<Value> {
    if a.is_null() || i.is_null() {
        return Ok(Value::Null);
    }
    let Value::Array(a) = a else { return Err(not_subscriptable(a.data_type().expect("not NULL"))) };
    let i = index_of(&i)?;
    Ok(usize::try_from(i)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| a.items.get(i))
        .cloned()
        .unwrap_or(Value::Null))
}

/// `a[lo:hi]`, either bound omitted: the elements between, clamped to the array.
pub(crate) fn slice(a: Value, lo: Option<Value>, hi: Option<Value>) -> DbResult<Value> {
    if a.is_null() || lo.as_ref().is_some_and(Value::is_null) || hi.as_ref().is_some_and(Value::is_null) {
        return Ok(Value::Null);
    }
    let Value::Array(mut a) = a else { return Err(not_subscriptable(a.data_type().expect("not NULL"))) };
    let len = a.items.len() as i64;
    let lo = lo.map(|v| index_of(&v)).transpose()?.unwrap_or(1).max(1);
    let hi = hi.map(|v| index_of(&v)).transpose()?.unwrap_or(len).min(len);
    if lo > hi {
        a.items.clear();
    } else {
        a.items.truncate(hi as usize);
        a.items.drain(..(lo - 1) as usize);
    }
    Ok(Value::Array(a))
}

/// A subscript's value as an integer (PostgreSQL's subscripts are int4; a bigger one is
/// out of every array, which is fine as an i64).
fn index_of(v: &Value) -> DbResult<i64> {
    match crate::sql::expr::to_num(v)? {
        crate::sql::expr::Num::I(i) => Ok(i),
        _ => Err(DbError::TypeConflict(format!(
            "array subscript must have type integer, not {}",
            v.data_type().map_or("unknown".into(), pg_name)
        ))),
    }
}

/// `||` when a side is an array (None otherwise): array || array, array || element,
/// element || array.
pub(crate) fn concat(a: &Value, b: &Value) -> Option<DbResult<Value>> {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => Some(cat(x, y)),
        (Value::Array(x), Value::Null) | (Value::Null, Value::Array(x)) => Some(Ok(Value::Array(x.clone()))),
        (Value::Array(x), elem) => Some(element_of(x.elem, elem.clone()).map(|e| {
            let mut items = Vec::with_capacity(x.items.len() + 1);
            items.extend(x.items.iter().cloned());
            items.push(e);
            Array::new(x.elem, items).into_value()
        })),
        (elem, Value::Array(y)) => Some(element_of(y.elem, elem.clone()).map(|e| {
            let mut items = Vec::with_capacity(y.items.len() + 1);
            items.push(e);
            items.extend(y.items.iter().cloned());
            Array::new(y.elem, items).into_value()
        })),
        _ => None,
    }
}

/// A value as an element of an array of `elem` (NULL stays NULL).
fn element_of(elem: ElemType, v: Value) -> DbResult<Value> {
    if let Value::Array(_) = v {
        return Err(DbError::Unsupported("multidimensional arrays".into()));
    }
    coerce(v, elem.data_type())
}

/// The concatenation of two arrays, in the first's element type (or the second's when
/// the first is empty, as `'{}' || ARRAY[1.5]`).
fn cat(x: &Array, y: &Array) -> DbResult<Value> {
    let elem = if x.items.is_empty() { y.elem } else { x.elem };
    if x.items.len() + y.items.len() > array::MAX_ELEMENTS {
        return Err(array::too_many());
    }
    let items =
        x.items.iter().chain(&y.items).map(|v| element_of(elem, v.clone())).collect::<DbResult<Vec<_>>>()?;
    Ok(Array::new(elem, items).into_value())
}

/// `@>`, `<@` and `&&` when both sides are arrays (or one is and the other is text to
/// read as one); None otherwise.
pub(crate) fn set_operator(op: BinOp, a: &Value, b: &Value) -> Option<DbResult<Value>> {
    if !matches!(op, BinOp::Contains | BinOp::ContainedBy | BinOp::Overlaps) {
        return None;
    }
    let (a, b) = match (a, b) {
        (Value::Array(x), Value::Array(y)) => (x.clone(), y.clone()),
        (Value::Array(x), Value::Text(_)) => match as_array(b.clone(), Some(x.elem)) {
            Ok(y) => (x.clone(), y),
            Err(e) => return Some(Err(e)),
        },
        (Value::Text(_), Value::Array(y)) => match as_array(a.clone(), Some(y.elem)) {
            Ok(x) => (x, y.clone()),
            Err(e) => return Some(Err(e)),
        },
        _ if op == BinOp::Overlaps => {
            return Some(Err(DbError::DatatypeMismatch(format!(
                "{} && {}",
                a.data_type().map_or("unknown".into(), pg_name),
                b.data_type().map_or("unknown".into(), pg_name)
            ))))
        }
        _ => return None,
    };
    let has = |set: &Array, v: &Value| -> DbResult<bool> {
        for item in &set.items {
            if compare(item, v)? == Some(Ordering::Equal) {
                return Ok(true);
            }
        }
        Ok(false)
    };
    // Every non-NULL element of `inner` is in `outer`, and `inner` has no NULL.
    let contains = |outer: &Array, inner: &Array| -> DbResult<bool> {
        for v in &inner.items {
            if v.is_null() || !has(outer, v)? {
                return Ok(false);
            }
        }
        Ok(true)
    };
    Some(
        match op {
            BinOp::Contains => contains(&a, &b),
            BinOp::ContainedBy => contains(&b, &a),
            _ => (|| {
                for v in &a.items {
                    if !v.is_null() && has(&b, v)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            })(),
        }
        .map(Value::Bool),
    )
}

/// Whether `func` is one of the array functions `call` answers.
pub(crate) fn is_array_function(func: Func) -> bool {
    matches!(
        func,
        Func::ArrayLength
            | Func::ArrayUpper
            | Func::ArrayLower
            | Func::Cardinality
            | Func::ArrayPosition
            | Func::ArrayAppend
            | Func::ArrayPrepend
            | Func::ArrayCat
            | Func::ArrayRemove
            | Func::ArrayAssign
            | Func::ArrayToString
            | Func::StringToArray
    )
}

/// The result type of an array function, from its arguments' types.
pub(crate) fn result_type(func: Func, args: &[Option<DataType>]) -> Option<DataType> {
    let arg = |i: usize| args.get(i).copied().flatten();
    let array_of = |i: usize| arg(i).and_then(ElemType::of).map(DataType::Array);
    match func {
        Func::ArrayLength | Func::ArrayUpper | Func::ArrayLower | Func::Cardinality | Func::ArrayPosition => {
            Some(DataType::Int)
        }
        Func::ArrayAppend | Func::ArrayRemove | Func::ArrayAssign => {
            arg(0).filter(|t| matches!(t, DataType::Array(_))).or(array_of(1))
        }
        Func::ArrayPrepend => arg(1).filter(|t| matches!(t, DataType::Array(_))).or(array_of(0)),
        Func::ArrayCat => arg(0).or(arg(1)),
        Func::ArrayToString => Some(DataType::Text { max_chars: None }),
        Func::StringToArray => Some(DataType::Array(ElemType::Text)),
        _ => None,
    }
}

/// An array argument: NULL is None, text is read as an array, anything else is 42804.
fn array_arg(name: &str, v: &Value) -> DbResult<Option<ArrayBox>> {
    match v {
        Value::Null => Ok(None),
        Value::Array(a) => Ok(Some(a.clone())),
        Value::Text(_) => as_array(v.clone(), None).map(Some),
        other => Err(DbError::UndefinedFunction(format!(
            "{name}({})",
            other.data_type().map_or("unknown".into(), pg_name)
        ))),
    }
}

/// An array function's value from its arguments' values (NULLs included: each function
/// has its own rule for them, as in PostgreSQL).
pub(crate) fn call(func: Func, values: &[Value]) -> DbResult<Value> {
    let int = |i: usize| {
        crate::sql::expr::to_num(&values[i]).map(|n| match n {
            crate::sql::expr::Num::I(i) => i,
            _ => i64::MIN,
        })
    };
    Ok(match func {
        Func::ArrayLength | Func::ArrayUpper | Func::ArrayLower => {
            let Some(a) = array_arg("array_length", &values[0])? else { return Ok(Value::Null) };
            if values[1].is_null() || int(1)? != 1 || a.items.is_empty() {
                return Ok(Value::Null);
            }
            Value::Int(match func {
                Func::ArrayLower => 1,
                _ => a.items.len() as i64,
            })
        }
        Func::Cardinality => match array_arg("cardinality", &values[0])? {
            Some(a) => Value::Int(a.items.len() as i64),
            None => Value::Null,
        },
        Func::ArrayPosition => {
            let Some(a) = array_arg("array_position", &values[0])? else { return Ok(Value::Null) };
            let start = match values.get(2) {
                None => 1,
                Some(Value::Null) => {
                    return Err(DbError::InvalidArgument("initial position must not be null".into()))
                }
                Some(_) => int(2)?.max(1),
            };
            let wanted = &values[1];
            for (i, item) in a.items.iter().enumerate().skip(start as usize - 1) {
                // IS NOT DISTINCT FROM: a NULL finds a NULL.
                let same = match (item.is_null(), wanted.is_null()) {
                    (true, true) => true,
                    (false, false) => compare(item, wanted)? == Some(Ordering::Equal),
                    _ => false,
                };
                if same {
                    return Ok(Value::Int(i as i64 + 1));
                }
            }
            Value::Null
        }
        Func::ArrayAppend | Func::ArrayPrepend => {
            let (array, elem) =
                if func == Func::ArrayAppend { (&values[0], &values[1]) } else { (&values[1], &values[0]) };
            let a = match array_arg(
                if func == Func::ArrayAppend { "array_append" } else { "array_prepend" },
                array,
            )? {
                Some(a) => a,
                None => match elem.data_type().and_then(ElemType::of) {
                    Some(e) => ArrayBox::new(Array::new(e, Vec::new())),
                    None => return Ok(Value::Null),
                },
            };
            let a = Value::Array(a);
            let joined = if func == Func::ArrayAppend { concat(&a, elem) } else { concat(elem, &a) };
            match elem {
                // A NULL element is appended as one (`concat` would take it for a NULL
                // array).
                Value::Null => {
                    let Value::Array(mut a) = a else { unreachable!("built as an array") };
                    if func == Func::ArrayAppend {
                        a.items.push(Value::Null);
                    } else {
                        a.items.insert(0, Value::Null);
                    }
                    Value::Array(a)
                }
                _ => joined.expect("one side is an array")?,
            }
        }
        Func::ArrayCat => match (array_arg("array_cat", &values[0])?, array_arg("array_cat", &values[1])?) {
            (Some(x), Some(y)) => cat(&x, &y)?,
            (Some(x), None) | (None, Some(x)) => Value::Array(x),
            (None, None) => Value::Null,
        },
        Func::ArrayAssign => {
            let index = match &values[1] {
                Value::Null => {
                    return Err(DbError::NullValueNotAllowed(
                        "array subscript in assignment must not be null".into(),
                    ))
                }
                _ => int(1)?,
            };
            let element = values[2].clone();
            let mut a = match array_arg("array assignment", &values[0])? {
                Some(a) => a,
                // PostgreSQL's: a NULL array assigned an element is an array of it.
                None => ArrayBox::new(Array::new(
                    element.data_type().and_then(ElemType::of).unwrap_or(ElemType::Text),
                    Vec::new(),
                )),
            };
            // Arrays here always start at 1 (see crate::array): PostgreSQL's
            // assignment below the lower bound, or past the end of a NULL or empty
            // array, would give another lower bound, which no array here can have.
            if index < 1 || (a.items.is_empty() && index != 1) {
                return Err(DbError::Unsupported(format!(
                    "assigning element {index} of {} (arrays here start at 1: it would change the lower bound)",
                    if a.items.is_empty() { "an empty or NULL array" } else { "an array" }
                )));
            }
            let at = usize::try_from(index - 1).map_err(|_| crate::array::too_many())?;
            if at >= crate::array::MAX_ELEMENTS {
                return Err(crate::array::too_many());
            }
            let element = crate::schema::coerce(element, a.elem.data_type())?;
            // Past the end: the elements between are NULLs, as in PostgreSQL.
            if at >= a.items.len() {
                a.items.resize(at + 1, Value::Null);
            }
            a.items[at] = element;
            Value::Array(a)
        }
        Func::ArrayRemove => {
            let Some(mut a) = array_arg("array_remove", &values[0])? else { return Ok(Value::Null) };
            let wanted = &values[1];
            let mut kept = Vec::with_capacity(a.items.len());
            for item in a.items.drain(..) {
                let same = match (item.is_null(), wanted.is_null()) {
                    (true, true) => true,
                    (false, false) => compare(&item, wanted)? == Some(Ordering::Equal),
                    _ => false,
                };
                if !same {
                    kept.push(item);
                }
            }
            a.items = kept;
            Value::Array(a)
        }
        Func::ArrayToString => {
            let Some(a) = array_arg("array_to_string", &values[0])? else { return Ok(Value::Null) };
            if values[1].is_null() {
                return Ok(Value::Null);
            }
            let delimiter = values[1].to_string();
            let null_text = values.get(2).filter(|v| !v.is_null()).map(Value::to_string);
            let mut out = String::new();
            let mut first = true;
            for item in &a.items {
                let text = match (item, &null_text) {
                    (Value::Null, None) => continue,
                    (Value::Null, Some(t)) => t.clone(),
                    (v, _) => {
                        let mut t = String::new();
                        array::write_element(v, &mut t);
                        t
                    }
                };
                if !first {
                    out.push_str(&delimiter);
                }
                first = false;
                out.push_str(&text);
            }
            Value::Text(out)
        }
        Func::StringToArray => {
            let Value::Text(s) = &values[0] else {
                return Ok(if values[0].is_null() {
                    Value::Null
                } else {
                    call(func, &[Value::Text(values[0].to_string()), values[1].clone()])?
                });
            };
            let null_text = values.get(2).filter(|v| !v.is_null()).map(Value::to_string);
            let parts: Vec<String> = if s.is_empty() {
                Vec::new()
            } else {
                match &values[1] {
                    Value::Null => s.chars().map(String::from).collect(),
                    d => {
                        let d = d.to_string();
                        if d.is_empty() {
                            vec![s.clone()]
                        } else {
                            s.split(d.as_str()).map(String::from).collect()
                        }
                    }
                }
            };
            let items = parts
                .into_iter()
                .map(|p| if null_text.as_deref() == Some(p.as_str()) { Value::Null } else { Value::Text(p) })
                .collect();
            Array::new(ElemType::Text, items).into_value()
        }
        other => unreachable!("{other:?} is no array function"),
    })
}

/// The element type `ARRAY[...]` of elements of these static types takes, as
/// PostgreSQL's `select_common_type`: text literals (`literal_text`) take the others'
/// type; numbers widen (INT, NUMERIC, FLOAT); types that cannot meet are 42804. Text
/// when nothing is known (`ARRAY[NULL]`).
pub(crate) fn element_type(types: &[(Option<DataType>, bool)]) -> DbResult<ElemType> {
    let mut chosen: Option<DataType> = None;
    for &(ty, literal_text) in types {
        let Some(ty) = ty else { continue };
        if let DataType::Array(_) = ty {
            return Err(DbError::Unsupported("multidimensional arrays".into()));
        }
        if literal_text {
            continue;
        }
        chosen = Some(match chosen {
            None => ty,
            Some(c) => match (c, ty) {
                (a, b) if ElemType::of(a) == ElemType::of(b) => a,
                (DataType::Float, DataType::Int | DataType::Numeric(_) | DataType::Float4)
                | (DataType::Int | DataType::Numeric(_) | DataType::Float4, DataType::Float) => {
                    DataType::Float
                }
                (DataType::Float4, DataType::Int | DataType::Numeric(_))
                | (DataType::Int | DataType::Numeric(_), DataType::Float4) => DataType::Float4,
                (DataType::Numeric(_), DataType::Int) | (DataType::Int, DataType::Numeric(_)) => {
                    DataType::Numeric(None)
                }
                (DataType::Timestamp, DataType::TimestampTz)
                | (DataType::TimestampTz, DataType::Timestamp) => DataType::TimestampTz,
                (DataType::Date, t @ (DataType::Timestamp | DataType::TimestampTz))
                | (t @ (DataType::Timestamp | DataType::TimestampTz), DataType::Date) => t,
                (a, b) => {
                    return Err(DbError::TypeConflict(format!(
                        "ARRAY types {} and {} cannot be matched",
                        pg_name(a),
                        pg_name(b)
                    )))
                }
            },
        });
    }
    match chosen {
        Some(ty) => ElemType::of_checked(ty),
        None => Ok(ElemType::Text),
    }
}
