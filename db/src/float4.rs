//! REAL (PostgreSQL's float4): its input, conversions and arithmetic, each as
//! PostgreSQL 15's `float.c` does it, so that a value rounds where PostgreSQL's does.
//!
//! A float4 is computed in single precision only with another float4 (`float4pl`,
//! `float4mul`, ...): with a double, an integer or a NUMERIC PostgreSQL's operators are
//! float8's, and the caller widens the float4 (exactly) to a double. Every operation
//! here errs as PostgreSQL's does: 22003 "value out of range: overflow" when a finite
//! computation gives an infinity, "... underflow" when nonzero operands give zero.

use crate::error::{DbError, DbResult};
use crate::sql::expr::BinOp;

fn overflow() -> DbError {
    DbError::NumericOverflow("value out of range: overflow".into())
}

fn underflow() -> DbError {
    DbError::NumericOverflow("value out of range: underflow".into())
}

/// `float4in`: a number, or NaN, Infinity or -Infinity (any case, `inf` too), blanks
/// around it allowed. 22P02 for text that is no number; 22003 for a finite number beyond
/// float4's range or a nonzero one that rounds to zero (a subnormal is kept).
pub fn parse(text: &str) -> DbResult<f32> {
    let trimmed = text.trim();
    let invalid = || DbError::TypeMismatch { expected: "REAL".into(), value: text.to_string() };
    // Rust reads the special values as PostgreSQL does: `NaN`, `Infinity` and `inf`, in
    // any case, with an optional sign.
    let v: f32 = trimmed.parse().map_err(|_| invalid())?;
    let out_of_range = || DbError::NumericOverflow(format!("\"{trimmed}\" is out of range for type real"));
    let mantissa = trimmed.split(['e', 'E']).next().unwrap_or("");
    let spelled_infinite = trimmed.trim_start_matches(['+', '-']).to_ascii_lowercase().starts_with("inf");
    if v.is_infinite() && !spelled_infinite {
        return Err(out_of_range());
    }
    if v == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return Err(out_of_range());
    }
    Ok(v)
}

/// `dtof`: a double rounded to the nearest float4, 22003 when a finite double is beyond
/// float4's range or a nonzero one rounds to zero.
pub fn from_f64(v: f64) -> DbResult<f32> {
    let rounded = v as f32;
    if rounded.is_infinite() && !v.is_infinite() {
        return Err(overflow());
    }
    if rounded == 0.0 && v != 0.0 {
        return Err(underflow());
    }
    Ok(rounded)
}

/// An integer rounded to the nearest float4 (`i8tof`: no range to leave).
pub fn from_i64(v: i64) -> f32 {
    v as f32
}

/// `a op b` for two float4s, in single precision (`float4pl`, `float4mi`, `float4mul`,
/// `float4div`). PostgreSQL has no float4 `%`: the caller computes it as a double's.
pub(crate) fn arithmetic(op: BinOp, a: f32, b: f32) -> DbResult<f32> {
    let result = match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => {
            if b == 0.0 && !a.is_nan() {
                return Err(DbError::DivisionByZero);
            }
            a / b
        }
        _ => unreachable!("{op:?} is no float4 arithmetic"),
    };
    let infinite_operand = match op {
        BinOp::Div => a.is_infinite(),
        _ => a.is_infinite() || b.is_infinite(),
    };
    if result.is_infinite() && !infinite_operand {
        return Err(overflow());
    }
    let underflowed = match op {
        BinOp::Mul => result == 0.0 && a != 0.0 && b != 0.0,
        BinOp::Div => result == 0.0 && a != 0.0 && !b.is_infinite(),
        _ => false,
    };
    if underflowed {
        return Err(underflow());
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_rounds_to_single_precision_and_refuses_what_leaves_its_range() {
        assert_eq!(parse(" 0.1 ").unwrap(), 0.1f32);
        assert_eq!(parse("-Infinity").unwrap(), f32::NEG_INFINITY);
        assert_eq!(parse("inf").unwrap(), f32::INFINITY);
        assert!(parse("NaN").unwrap().is_nan());
        assert_eq!(parse("0e5").unwrap(), 0.0);
        // A subnormal is a float4 still (PostgreSQL keeps 1.17549435e-39).
        assert!(parse("1.17549435e-39").unwrap() > 0.0);
        for text in ["1e39", "-1e39", "1e-46"] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.to_string(), format!("\"{text}\" is out of range for type real"));
        }
        assert!(matches!(parse("abc"), Err(DbError::TypeMismatch { .. })));
    }

    #[test]
    fn arithmetic_is_single_precision_with_postgresqls_range_errors() {
        assert_eq!(arithmetic(BinOp::Add, 0.1, 0.2).unwrap(), 0.3f32);
        assert_eq!(arithmetic(BinOp::Mul, 0.1, 3.0).unwrap(), 0.3f32);
        let message = |r: DbResult<f32>| r.unwrap_err().to_string();
        assert_eq!(message(arithmetic(BinOp::Add, 3e38, 3e38)), "value out of range: overflow");
        assert_eq!(message(arithmetic(BinOp::Div, 1e-38, 1e10)), "value out of range: underflow");
        assert_eq!(message(arithmetic(BinOp::Mul, 1e-30, 1e-30)), "value out of range: underflow");
        assert!(matches!(arithmetic(BinOp::Div, 1.0, 0.0), Err(DbError::DivisionByZero)));
        assert!(arithmetic(BinOp::Div, f32::NAN, 0.0).unwrap().is_nan());
        assert_eq!(arithmetic(BinOp::Add, f32::INFINITY, 1.0).unwrap(), f32::INFINITY);
        assert_eq!(from_f64(0.1).unwrap(), 0.1f32);
        assert_eq!(message(from_f64(1e39).map(|_| 0.0)), "value out of range: overflow");
        assert_eq!(message(from_f64(1e-46).map(|_| 0.0)), "value out of range: underflow");
        assert_eq!(from_f64(f64::INFINITY).unwrap(), f32::INFINITY);
    }
}
