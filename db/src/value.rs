//! SQL values and types.
//!
//! `Value` has a total order (NULL first, then by type, numbers compared across INT and
//! FLOAT) so that values can be primary-key components in an ordered index. SQL's
//! three-valued comparisons (NULL compares unknown) live in the expression evaluator, not
//! here.

use std::cmp::Ordering;
use std::fmt;

use crate::datetime::{self, Interval, ZoneId};

/// A column type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DataType {
    /// BIGINT, INTEGER, INT, SMALLINT: 64-bit signed.
    Int,
    /// DOUBLE PRECISION, FLOAT, REAL, NUMBER, NUMERIC, DECIMAL: 64-bit float.
    Float,
    /// VARCHAR(n), CHAR(n), TEXT: UTF-8, with an optional maximum length in characters.
    Text {
        max_chars: Option<u32>,
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
}

impl DataType {
    pub fn name(&self) -> String {
        match self {
            DataType::Int => "BIGINT".into(),
            DataType::Float => "DOUBLE PRECISION".into(),
            DataType::Text { max_chars: Some(n) } => format!("VARCHAR({n})"),
            DataType::Text { max_chars: None } => "TEXT".into(),
            DataType::Bool => "BOOLEAN".into(),
            DataType::Date => "DATE".into(),
            DataType::Time => "TIME".into(),
            DataType::Timestamp => "TIMESTAMP".into(),
            DataType::TimestampTz => "TIMESTAMP WITH TIME ZONE".into(),
            DataType::Interval => "INTERVAL".into(),
        }
    }

    /// DATE, TIMESTAMP or TIMESTAMPTZ: the types a timestamp converts between.
    pub fn is_datetime(&self) -> bool {
        matches!(self, DataType::Date | DataType::Timestamp | DataType::TimestampTz)
    }
}

/// One SQL value.
#[derive(Clone, Debug)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
    /// The date and time types, in PostgreSQL's representation (see `datetime`).
    Date(i32),
    Time(i64),
    Timestamp(i64),
    TimestampTz(i64),
    Interval(Interval),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) => 2,
            Value::Text(_) => 3,
            Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) => 4,
            Value::Time(_) => 5,
            Value::Interval(_) => 6,
        }
    }

    /// The type of a non-null value.
    pub fn data_type(&self) -> Option<DataType> {
        match self {
            Value::Null => None,
            Value::Int(_) => Some(DataType::Int),
            Value::Float(_) => Some(DataType::Float),
            Value::Text(_) => Some(DataType::Text { max_chars: None }),
            Value::Bool(_) => Some(DataType::Bool),
            Value::Date(_) => Some(DataType::Date),
            Value::Time(_) => Some(DataType::Time),
            Value::Timestamp(_) => Some(DataType::Timestamp),
            Value::TimestampTz(_) => Some(DataType::TimestampTz),
            Value::Interval(_) => Some(DataType::Interval),
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

impl Value {
    /// Whether this is a non-NULL value of type `ty` as it is (no conversion).
    pub fn has_type(&self, ty: DataType) -> bool {
        matches!(
            (self, ty),
            (Value::Int(_), DataType::Int)
                | (Value::Float(_), DataType::Float)
                | (Value::Text(_), DataType::Text { .. })
                | (Value::Bool(_), DataType::Bool)
                | (Value::Date(_), DataType::Date)
                | (Value::Time(_), DataType::Time)
                | (Value::Timestamp(_), DataType::Timestamp)
                | (Value::TimestampTz(_), DataType::TimestampTz)
                | (Value::Interval(_), DataType::Interval)
        )
    }
}

impl Ord for Value {
    // Inline: the B-tree searches compare keys through it, mostly two integers.
    #[inline]
    fn cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => cmp_f64(*a, *b),
            (Value::Int(a), Value::Float(b)) => cmp_f64(*a as f64, *b).then(Ordering::Less),
            (Value::Float(a), Value::Int(b)) => cmp_f64(*a, *b as f64).then(Ordering::Greater),
            (Value::Text(a), Value::Text(b)) => a.cmp(b),
            (Value::Time(a), Value::Time(b)) => a.cmp(b),
            (Value::Interval(a), Value::Interval(b)) => a.comparable().cmp(&b.comparable()),
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
    fn partial_cmp(&self, other: &Value) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Text(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{}", if *v { "true" } else { "false" }),
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
    }
}
