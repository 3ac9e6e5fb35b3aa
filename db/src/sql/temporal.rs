//! The SQL semantics of the date and time types: their comparisons and operators across
//! types (a DATE against a TIMESTAMP, a TIMESTAMP against a TIMESTAMPTZ in the session's
//! zone, text read as the other side's type), their arithmetic with intervals and
//! numbers, and the functions over them (`date_part`, `date_trunc`, `AT TIME ZONE`,
//! `age`, `make_date`). The values and their calendar are `crate::datetime`'s.

use std::cmp::Ordering;

use crate::datetime::{self, Field, Interval, ZoneId, MICROS_PER_DAY};
use crate::error::{DbError, DbResult};
use crate::schema::coerce;
use crate::sql::expr::{to_num, BinOp, Num};
use crate::value::{DataType, Value};

/// A value of a date or time type.
pub(crate) fn is_temporal(v: &Value) -> bool {
    matches!(
        v,
        Value::Date(_) | Value::Time(_) | Value::Timestamp(_) | Value::TimestampTz(_) | Value::Interval(_)
    )
}

fn type_name(v: &Value) -> String {
    v.data_type().map_or("unknown".into(), |t| t.name().to_lowercase())
}

fn no_operator(a: &Value, op: &str, b: &Value) -> DbError {
    DbError::DatatypeMismatch(format!("{} {op} {}", type_name(a), type_name(b)))
}

/// `a` and `b` on one scale when both are dates or timestamps: a DATE as its midnight,
/// a TIMESTAMP as the instant it is in the session's zone when the other is a
/// TIMESTAMPTZ (PostgreSQL's implicit casts).
fn common_instants(a: &Value, b: &Value) -> DbResult<Option<(i64, i64)>> {
    let zoned = matches!(a, Value::TimestampTz(_)) || matches!(b, Value::TimestampTz(_));
    let micros = |v: &Value| -> DbResult<Option<i64>> {
        let civil = match v {
            Value::Date(d) => datetime::date_to_timestamp(*d),
            Value::Timestamp(t) => *t,
            Value::TimestampTz(t) => return Ok(Some(*t)),
            _ => return Ok(None),
        };
        if zoned {
            datetime::timestamp_to_timestamptz(civil, &ZoneId::current().zone()).map(Some)
        } else {
            Ok(Some(civil))
        }
    };
    Ok(match (micros(a)?, micros(b)?) {
        (Some(x), Some(y)) => Some((x, y)),
        _ => None,
    })
}

/// Text meeting a date or time value, read as that value's type (`ts > '2024-01-01'`).
fn typed_text(text: &Value, like: &Value) -> DbResult<Value> {
    match like.data_type() {
        Some(ty) => coerce(text.clone(), ty),
        None => Ok(text.clone()),
    }
}

/// SQL comparison of two non-NULL values, one of them a date or time type.
pub(crate) fn compare(a: &Value, b: &Value) -> DbResult<Ordering> {
    if let Some((x, y)) = common_instants(a, b)? {
        return Ok(x.cmp(&y));
    }
    match (a, b) {
        (Value::Time(x), Value::Time(y)) => Ok(x.cmp(y)),
        (Value::Interval(x), Value::Interval(y)) => Ok(x.comparable().cmp(&y.comparable())),
        (Value::Text(_), other) => compare(&typed_text(a, other)?, other),
        (other, Value::Text(_)) => compare(other, &typed_text(b, other)?),
        _ => Err(no_operator(a, "=", b)),
    }
}

fn interval_of(v: &Value) -> DbResult<Option<Interval>> {
    Ok(match v {
        Value::Interval(iv) => Some(*iv),
        Value::Text(t) => Some(datetime::parse_interval(t)?),
        _ => None,
    })
}

fn days_arg(v: &Value) -> DbResult<Option<i32>> {
    Ok(match v {
        Value::Int(i) => Some(i32::try_from(*i).map_err(|_| date_out_of_range())?),
        _ => None,
    })
}

fn date_out_of_range() -> DbError {
    DbError::DatetimeOverflow("date out of range".into())
}

fn add_days(date: i32, days: i32) -> DbResult<Value> {
    let result = date.checked_add(days).ok_or_else(date_out_of_range)?;
    datetime::valid_date(result.into()).map(Value::Date)
}

/// `+`, `-`, `*` and `/` with a date or time operand (None: neither is one).
pub(crate) fn arithmetic(op: BinOp, a: &Value, b: &Value) -> Option<DbResult<Value>> {
    if !is_temporal(a) && !is_temporal(b) {
        return None;
    }
    Some(arithmetic_of(op, a, b))
}

fn arithmetic_of(op: BinOp, a: &Value, b: &Value) -> DbResult<Value> {
    let symbol = match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        _ => "%",
    };
    let zone = || ZoneId::current().zone();
    match (op, a, b) {
        // Dates and days.
        (BinOp::Add, Value::Date(d), n) | (BinOp::Add, n, Value::Date(d)) if days_arg(n)?.is_some() => {
            add_days(*d, days_arg(n)?.expect("checked"))
        }
        (BinOp::Sub, Value::Date(d), n) if days_arg(n)?.is_some() => {
            add_days(*d, days_arg(n)?.expect("checked").checked_neg().ok_or_else(date_out_of_range)?)
        }
        (BinOp::Sub, Value::Date(x), Value::Date(y)) => Ok(Value::Int(*x as i64 - *y as i64)),
        // A date and a time of day make a timestamp.
        (BinOp::Add, Value::Date(d), Value::Time(t)) | (BinOp::Add, Value::Time(t), Value::Date(d)) => {
            Ok(Value::Timestamp(datetime::date_to_timestamp(*d) + t))
        }
        // Timestamps and intervals.
        (BinOp::Add | BinOp::Sub, Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_), other)
            if !matches!(other, Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_)) =>
        {
            let Some(mut iv) = interval_of(other)? else { return Err(no_operator(a, symbol, b)) };
            if op == BinOp::Sub {
                iv = iv.checked_neg()?;
            }
            match a {
                Value::Date(d) => datetime::add_interval(datetime::date_to_valid_timestamp(*d)?, iv, None)
                    .map(Value::Timestamp),
                Value::Timestamp(t) => datetime::add_interval(*t, iv, None).map(Value::Timestamp),
                Value::TimestampTz(t) => {
                    datetime::add_interval(*t, iv, Some(&zone())).map(Value::TimestampTz)
                }
                _ => unreachable!("matched above"),
            }
        }
        (
            BinOp::Add,
            Value::Interval(_) | Value::Text(_),
            Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_),
        ) => arithmetic_of(op, b, a),
        (BinOp::Sub, _, _) if common_instants(a, b)?.is_some() => {
            let (x, y) = common_instants(a, b)?.expect("checked");
            datetime::difference(x, y).map(Value::Interval)
        }
        (BinOp::Sub, Value::Timestamp(_) | Value::TimestampTz(_), Value::Text(_)) => {
            arithmetic_of(op, a, &typed_text(b, a)?)
        }
        // Times of day.
        (BinOp::Sub, Value::Time(x), Value::Time(y)) => {
            Ok(Value::Interval(Interval { months: 0, days: 0, micros: x - y }))
        }
        (BinOp::Add | BinOp::Sub, Value::Time(t), other) => {
            let Some(iv) = interval_of(other)? else { return Err(no_operator(a, symbol, b)) };
            let delta = if op == BinOp::Sub { -iv.micros } else { iv.micros };
            Ok(Value::Time((t + delta.rem_euclid(MICROS_PER_DAY)).rem_euclid(MICROS_PER_DAY)))
        }
        (BinOp::Add, Value::Interval(_), Value::Time(_)) => arithmetic_of(op, b, a),
        // Intervals.
        (BinOp::Add | BinOp::Sub, Value::Interval(x), other)
        | (BinOp::Add | BinOp::Sub, other @ Value::Text(_), Value::Interval(x))
            if matches!(other, Value::Interval(_) | Value::Text(_)) =>
        {
            let (left, right) = match (a, b) {
                (Value::Interval(_), _) => (*x, interval_of(other)?.expect("interval or text")),
                _ => (interval_of(other)?.expect("interval or text"), *x),
            };
            let right = if op == BinOp::Sub { right.checked_neg()? } else { right };
            left.checked_add(right).map(Value::Interval)
        }
        (BinOp::Mul, Value::Interval(iv), n) | (BinOp::Mul, n, Value::Interval(iv)) if is_number(n) => {
            iv.times(number(n)?).map(Value::Interval)
        }
        (BinOp::Div, Value::Interval(iv), n) if is_number(n) => {
            let divisor = number(n)?;
            if divisor == 0.0 {
                return Err(DbError::DivisionByZero);
            }
            iv.times(1.0 / divisor).map(Value::Interval)
        }
        _ => Err(no_operator(a, symbol, b)),
    }
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_) | Value::Float4(_) | Value::Numeric(_))
}

fn number(v: &Value) -> DbResult<f64> {
    Ok(match to_num(v)? {
        Num::I(i) => i as f64,
        Num::F(f) => f,
        Num::N(n) => crate::numeric::to_f64(&n)?,
    })
}

/// `-interval`.
pub(crate) fn negate(v: &Value) -> Option<DbResult<Value>> {
    match v {
        Value::Interval(iv) => Some(iv.checked_neg().map(Value::Interval)),
        v if is_temporal(v) => Some(Err(DbError::DatatypeMismatch(format!("- {}", type_name(v))))),
        _ => None,
    }
}

/// The type of `a op b` when one side is a date or time type (None: not known before
/// running it).
pub(crate) fn result_type(op: BinOp, a: Option<DataType>, b: Option<DataType>) -> Option<DataType> {
    use DataType as T;
    let temporal =
        |t: Option<DataType>| t.is_some_and(|t| t.is_datetime() || matches!(t, T::Time | T::Interval));
    if !temporal(a) && !temporal(b) {
        return None;
    }
    Some(match (op, a?, b?) {
        (BinOp::Add | BinOp::Sub, T::Date, T::Int) | (BinOp::Add, T::Int, T::Date) => T::Date,
        (BinOp::Sub, T::Date, T::Date) => T::Int,
        (BinOp::Add, T::Date, T::Time) | (BinOp::Add, T::Time, T::Date) => T::Timestamp,
        (BinOp::Add | BinOp::Sub, T::Date | T::Timestamp, T::Interval)
        | (BinOp::Add, T::Interval, T::Date | T::Timestamp) => T::Timestamp,
        (BinOp::Add | BinOp::Sub, T::TimestampTz, T::Interval)
        | (BinOp::Add, T::Interval, T::TimestampTz) => T::TimestampTz,
        (BinOp::Sub, x, y) if x.is_datetime() && y.is_datetime() => T::Interval,
        (BinOp::Sub, T::Time, T::Time) => T::Interval,
        (BinOp::Add | BinOp::Sub, T::Time, T::Interval) | (BinOp::Add, T::Interval, T::Time) => T::Time,
        (_, T::Interval, _) | (_, _, T::Interval) => T::Interval,
        _ => return None,
    })
}

fn field_arg(v: &Value) -> DbResult<Field> {
    match v {
        Value::Text(t) => Field::named(t),
        other => Field::named(&other.to_string()),
    }
}

/// `date_part(field, value)` / `extract(field FROM value)`.
pub(crate) fn date_part(field_value: &Value, v: &Value) -> DbResult<Value> {
    let field = field_arg(field_value)?;
    let zone = ZoneId::current().zone();
    let value = match v {
        Value::Interval(iv) => datetime::extract_interval(field, iv)?,
        Value::Time(t) => {
            let dt = datetime::civil(*t)?;
            match field {
                Field::Hour | Field::Minute | Field::Second | Field::Milliseconds | Field::Microseconds => {
                    datetime::extract(field, dt, *t, 0)?
                }
                Field::Epoch => *t as f64 / 1e6,
                other => return Err(unit_error(other, "time")),
            }
        }
        Value::TimestampTz(t) if matches!(*t, datetime::INFINITY | datetime::NEG_INFINITY) => infinite(*t),
        Value::Timestamp(t) if matches!(*t, datetime::INFINITY | datetime::NEG_INFINITY) => infinite(*t),
        Value::Date(d) if matches!(*d, datetime::DATE_INFINITY | datetime::DATE_NEG_INFINITY) => {
            infinite(datetime::date_to_timestamp(*d))
        }
        Value::TimestampTz(t) => {
            let local = datetime::timestamptz_to_timestamp(*t, &zone)?;
            datetime::extract_at(field, local, *t, datetime::offset_at(*t, &zone))?
        }
        Value::Timestamp(t) => datetime::extract_at(field, *t, *t, 0)?,
        Value::Date(d) => {
            if matches!(
                field,
                Field::Hour | Field::Minute | Field::Second | Field::Milliseconds | Field::Microseconds
            ) {
                return Err(unit_error(field, "date"));
            }
            datetime::extract_date(field, *d)?
        }
        Value::Text(t) => {
            return date_part(field_value, &coerce(Value::Text(t.clone()), DataType::TimestampTz)?)
        }
        other => return Err(DbError::UndefinedFunction(format!("date_part(text, {})", type_name(other)))),
    };
    Ok(Value::Float(value))
}

fn infinite(t: i64) -> f64 {
    if t == datetime::INFINITY {
        f64::INFINITY
    } else {
        f64::NEG_INFINITY
    }
}

fn unit_error(field: Field, ty: &str) -> DbError {
    DbError::InvalidParameterValue {
        parameter: format!("unit of type {ty}"),
        value: format!("{field:?}").to_lowercase(),
        allowed: "a unit the type has".into(),
    }
}

/// `date_trunc(field, value [, zone])`.
pub(crate) fn date_trunc(field_value: &Value, v: &Value, zone_name: Option<&Value>) -> DbResult<Value> {
    let field = field_arg(field_value)?;
    let zone = match zone_name {
        Some(name) => ZoneId::named(&name.to_string())?.zone(),
        None => ZoneId::current().zone(),
    };
    Ok(match v {
        Value::Interval(iv) => Value::Interval(datetime::trunc_interval(field, *iv)?),
        Value::Timestamp(t) if matches!(*t, datetime::INFINITY | datetime::NEG_INFINITY) => v.clone(),
        Value::TimestampTz(t) if matches!(*t, datetime::INFINITY | datetime::NEG_INFINITY) => v.clone(),
        Value::Timestamp(t) => Value::Timestamp(datetime::trunc_at(field, *t)?),
        Value::Date(d) => {
            let midnight = datetime::date_to_valid_timestamp(*d)?;
            Value::TimestampTz(datetime::timestamp_to_timestamptz(
                datetime::trunc_at(field, midnight)?,
                &zone,
            )?)
        }
        Value::TimestampTz(t) => {
            let local = datetime::timestamptz_to_timestamp(*t, &zone)?;
            Value::TimestampTz(datetime::timestamp_to_timestamptz(datetime::trunc_at(field, local)?, &zone)?)
        }
        Value::Text(t) => {
            date_trunc(field_value, &coerce(Value::Text(t.clone()), DataType::TimestampTz)?, zone_name)?
        }
        other => return Err(DbError::UndefinedFunction(format!("date_trunc(text, {})", type_name(other)))),
    })
}

/// `value AT TIME ZONE zone`: a TIMESTAMPTZ as the civil time it is there, a TIMESTAMP
/// read as a civil time of there.
pub(crate) fn at_time_zone(v: &Value, zone_name: &Value) -> DbResult<Value> {
    let zone = ZoneId::named(&zone_name.to_string())?.zone();
    Ok(match v {
        Value::TimestampTz(t) => Value::Timestamp(datetime::timestamptz_to_timestamp(*t, &zone)?),
        Value::Timestamp(t) => Value::TimestampTz(datetime::timestamp_to_timestamptz(*t, &zone)?),
        Value::Date(d) => {
            Value::TimestampTz(datetime::timestamp_to_timestamptz(datetime::date_to_timestamp(*d), &zone)?)
        }
        Value::Text(t) => at_time_zone(&coerce(Value::Text(t.clone()), DataType::TimestampTz)?, zone_name)?,
        other => return Err(DbError::UndefinedFunction(format!("timezone(text, {})", type_name(other)))),
    })
}

/// `make_date(year, month, day)`.
pub(crate) fn make_date(year: &Value, month: &Value, day: &Value) -> DbResult<Value> {
    let part = |v: &Value| -> DbResult<i64> {
        match to_num(v)? {
            Num::I(i) => Ok(i),
            Num::F(f) => Ok(f as i64),
            Num::N(n) => crate::numeric::to_i64(&n),
        }
    };
    let (y, m, d) = (part(year)?, part(month)?, part(day)?);
    let bad = || DbError::DatetimeOverflow(format!("date field value out of range: {y}-{m:02}-{d:02}"));
    let year = if y < 0 { y + 1 } else { y };
    if y == 0 {
        return Err(bad());
    }
    let date = jiff::civil::Date::new(
        i16::try_from(year).map_err(|_| bad())?,
        i8::try_from(m).map_err(|_| bad())?,
        i8::try_from(d).map_err(|_| bad())?,
    )
    .map_err(|_| bad())?;
    Ok(Value::Date(datetime::days_of_date(date)?))
}

/// `age(a, b)`: `a - b` in years, months and days (PostgreSQL's symbolic result);
/// `age(a)` is from `a` to today's midnight.
pub(crate) fn age(a: &Value, b: Option<&Value>, today: i64) -> DbResult<Value> {
    let civil = |v: &Value| -> DbResult<jiff::civil::DateTime> {
        match v {
            Value::Timestamp(t) => datetime::civil(*t),
            Value::TimestampTz(t) => datetime::civil_in(*t, &ZoneId::current().zone()),
            Value::Date(d) => datetime::civil(datetime::date_to_timestamp(*d)),
            Value::Text(t) => datetime::civil(datetime::parse_timestamp(t)?),
            other => Err(DbError::UndefinedFunction(format!("age({})", type_name(other)))),
        }
    };
    let to = civil(a)?;
    let from = match b {
        Some(b) => civil(b)?,
        None => datetime::civil_in(today, &ZoneId::current().zone())?
            .date()
            .to_datetime(jiff::civil::Time::midnight()),
    };
    let (later, earlier, negative) = if to >= from { (to, from, false) } else { (from, to, true) };
    let span = later
        .since((jiff::Unit::Year, earlier))
        .map_err(|_| DbError::DatetimeOverflow("interval out of range".into()))?;
    let micros = span.get_hours() as i64 * datetime::MICROS_PER_HOUR
        + span.get_minutes() * datetime::MICROS_PER_MINUTE
        + span.get_seconds() * datetime::MICROS_PER_SECOND
        + span.get_milliseconds() * 1000
        + span.get_microseconds();
    let iv =
        Interval { months: span.get_years() as i32 * 12 + span.get_months(), days: span.get_days(), micros };
    Ok(Value::Interval(if negative { iv.checked_neg()? } else { iv }))
}
