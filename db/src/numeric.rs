//! NUMERIC: exact decimals of arbitrary precision, as PostgreSQL keeps them (its
//! `numeric`, Oracle's `NUMBER`), over `bigdecimal`'s big integer and scale.
//!
//! A value is a `BigDecimal` whose scale is PostgreSQL's display scale: the number of
//! digits after the point it is printed with (`1.50` keeps its two), never negative (a
//! value read as `1e3` is `1000`, scale 0). Equal values of different scales are equal
//! (`1.5 = 1.50`) and hash alike ([`hash_parts`]).
//!
//! What is PostgreSQL's is here: the text form in (`numeric_in`: optional sign, digits
//! with an optional point, an optional exponent of at most 1000) and out (plain digits,
//! never an exponent), the type modifier (`NUMERIC(p, s)`: rounding half away from zero
//! to `s` digits, then 22003 "numeric field overflow" beyond `p - s` integer digits),
//! the scale of each operation's result (`+ - %`: the larger scale; `*`: their sum;
//! `/`: `select_div_scale`, at least 16 significant digits), the conversions from float8
//! (15 significant digits, `float8_numeric`) and to bigint (rounded), and the binary
//! wire form (base-10000 digits with a weight, a sign and the display scale).
//!
//! Limits are PostgreSQL's: 131072 digits before the point and 16383 after; a result
//! beyond them is 22003 "value overflows numeric format". They bound the memory a value
//! can take, so no input or operation can build a number of millions of digits. NaN and
//! the infinities (PostgreSQL 14's) are not kept: such input is refused.

use std::cmp::Ordering;

use bigdecimal::num_bigint::{BigInt, Sign};
use bigdecimal::{BigDecimal, RoundingMode, Signed, ToPrimitive, Zero};

use crate::error::{DbError, DbResult};

/// The largest precision `NUMERIC(p, s)` takes.
pub const MAX_PRECISION: u16 = 1000;
/// The range of the scale of `NUMERIC(p, s)` (PostgreSQL 15's: negative rounds to tens).
pub const MIN_SCALE: i16 = -1000;
pub const MAX_SCALE: i16 = 1000;
/// Digits a value may have before its point (PostgreSQL's NUMERIC_WEIGHT_MAX + 1 groups
/// of 4).
const MAX_INTEGER_DIGITS: i64 = 131_072;
/// Digits a value may have after its point (NUMERIC_DSCALE_MAX).
const MAX_DISPLAY_SCALE: i64 = 16_383;
/// The largest exponent a numeric literal may have (`1e1000`).
const MAX_EXPONENT: i64 = 1000;
/// The fewest significant digits a division gives (NUMERIC_MIN_SIG_DIGITS).
const MIN_SIG_DIGITS: i64 = 16;
/// The largest scale a division gives (NUMERIC_MAX_DISPLAY_SCALE).
const MAX_DIV_SCALE: i64 = 1000;

/// The modifier of `NUMERIC(precision, scale)`: at most `precision` significant digits,
/// `scale` of them after the point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct NumericSpec {
    pub precision: u16,
    pub scale: i16,
}

impl NumericSpec {
    /// A declared `NUMERIC(precision, scale)`, checked as PostgreSQL checks it.
    pub fn new(precision: i64, scale: i64) -> DbResult<NumericSpec> {
        if !(1..=MAX_PRECISION as i64).contains(&precision) {
            return Err(DbError::InvalidArgument(format!(
                "NUMERIC precision {precision} must be between 1 and {MAX_PRECISION}"
            )));
        }
        if !(MIN_SCALE as i64..=MAX_SCALE as i64).contains(&scale) {
            return Err(DbError::InvalidArgument(format!(
                "NUMERIC scale {scale} must be between {MIN_SCALE} and {MAX_SCALE}"
            )));
        }
        Ok(NumericSpec { precision: precision as u16, scale: scale as i16 })
    }

    /// Whether a spec read back from disk is one `new` accepts.
    pub fn is_valid(&self) -> bool {
        NumericSpec::new(self.precision as i64, self.scale as i64).is_ok()
    }

    /// PostgreSQL's `atttypmod` of the type: `((precision << 16) | (scale & 0x7ff)) + 4`.
    pub fn typmod(&self) -> i32 {
        (((self.precision as i32) << 16) | (self.scale as i32 & 0x7ff)) + 4
    }

    /// The spec a typmod stands for (its inverse), if valid.
    pub fn from_typmod(typmod: i32) -> Option<NumericSpec> {
        let raw = typmod.checked_sub(4)?;
        if raw < 0 {
            return None;
        }
        let precision = (raw >> 16) & 0xffff;
        // The scale is an 11-bit two's complement field.
        let scale = ((raw & 0x7ff) ^ 0x400) - 0x400;
        NumericSpec::new(precision as i64, scale as i64).ok()
    }
}

fn invalid_text(text: &str) -> DbError {
    DbError::TypeMismatch { expected: "numeric".into(), value: text.to_string() }
}

fn overflow() -> DbError {
    DbError::NumericOverflow("value overflows numeric format".into())
}

/// The digits of `n`'s unscaled integer (without sign) and its scale.
fn parts(n: &BigDecimal) -> (String, i64) {
    let (int, scale) = n.as_bigint_and_scale();
    (int.magnitude().to_string(), scale)
}

/// How many digits `n` has before its point (0 for a value below 1 in magnitude).
fn integer_digits(n: &BigDecimal) -> i64 {
    if n.is_zero() {
        return 0;
    }
    let (_, scale) = n.as_bigint_and_scale();
    (n.digits() as i64 - scale).max(0)
}

/// `n` checked against the limits of the type, its scale made non-negative.
pub fn checked(n: BigDecimal) -> DbResult<BigDecimal> {
    let (_, scale) = n.as_bigint_and_scale();
    if scale > MAX_DISPLAY_SCALE {
        return Err(overflow());
    }
    if scale < 0 {
        // Only whole tens: the digits before the point are the unscaled digits and the
        // zeros the scale stands for.
        if n.digits() as i64 - scale > MAX_INTEGER_DIGITS {
            return Err(overflow());
        }
        return Ok(n.with_scale(0));
    }
    if integer_digits(&n) > MAX_INTEGER_DIGITS {
        return Err(overflow());
    }
    Ok(n)
}

/// Reads PostgreSQL's text form of a numeric: surrounding spaces, an optional sign,
/// digits with an optional point (at least one digit), an optional exponent
/// (`e`/`E`, optional sign, digits, at most 1000 in magnitude). The scale is the digits
/// after the point less the exponent (never negative): `1.50` has 2, `1.5e3` 0.
pub fn parse(text: &str) -> DbResult<BigDecimal> {
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
    let bytes = t.as_bytes();
    let mut at = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            at = 1;
            true
        }
        Some(b'+') => {
            at = 1;
            false
        }
        _ => false,
    };
    let mut digits = String::new();
    let mut fraction = 0i64;
    let mut seen_point = false;
    while at < bytes.len() {
        match bytes[at] {
            b @ b'0'..=b'9' => {
                digits.push(b as char);
                if seen_point {
                    fraction += 1;
                }
            }
            b'.' if !seen_point => seen_point = true,
            _ => break,
        }
        at += 1;
    }
    if digits.is_empty() {
        return Err(invalid_text(text));
    }
    let mut exponent = 0i64;
    if at < bytes.len() && (bytes[at] == b'e' || bytes[at] == b'E') {
        at += 1;
        let exp_negative = match bytes.get(at) {
            Some(b'-') => {
                at += 1;
                true
            }
            Some(b'+') => {
                at += 1;
                false
            }
            _ => false,
        };
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            exponent = exponent.saturating_mul(10).saturating_add((bytes[at] - b'0') as i64);
            at += 1;
        }
        if at == start {
            return Err(invalid_text(text));
        }
        if exponent > MAX_EXPONENT {
            return Err(invalid_text(text));
        }
        if exp_negative {
            exponent = -exponent;
        }
    }
    if at != bytes.len() {
        return Err(invalid_text(text));
    }
    // Bound the digits before building the number: leading zeros count for nothing.
    let significant = digits.trim_start_matches('0');
    let scale = fraction - exponent;
    if significant.len() as i64 - scale > MAX_INTEGER_DIGITS || scale > MAX_DISPLAY_SCALE {
        return Err(overflow());
    }
    let magnitude = BigInt::parse_bytes(significant.as_bytes(), 10).unwrap_or_default();
    let int = if negative { -magnitude } else { magnitude };
    checked(BigDecimal::new(int, scale))
}

/// PostgreSQL's text of a numeric: the digits with exactly its scale's digits after the
/// point, never an exponent.
pub fn write(n: &BigDecimal, out: &mut String) {
    let (digits, scale) = parts(n);
    if n.is_negative() {
        out.push('-');
    }
    if scale <= 0 {
        out.push_str(&digits);
        if digits != "0" {
            out.extend(std::iter::repeat_n('0', (-scale) as usize));
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() > scale {
        let (int, frac) = digits.split_at(digits.len() - scale);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', scale - digits.len()));
        out.push_str(&digits);
    }
}

pub fn to_text(n: &BigDecimal) -> String {
    let mut out = String::new();
    write(n, &mut out);
    out
}

pub fn from_i64(i: i64) -> BigDecimal {
    BigDecimal::from(i)
}

/// A float8 as PostgreSQL converts it (`float8_numeric`): its 15 significant digits,
/// trailing zeros dropped (`0.1` is 0.1, `1/3` is 0.333333333333333).
pub fn from_f64(f: f64) -> DbResult<BigDecimal> {
    from_float_digits(f, 15)
}

/// A float4 as PostgreSQL converts it (`float4_numeric`): its 6 significant digits,
/// trailing zeros dropped (`0.1::real` is 0.1, `1234567::real` is 1234570).
pub fn from_f32(f: f32) -> DbResult<BigDecimal> {
    from_float_digits(f64::from(f), 6)
}

/// A float's `digits` significant digits (PostgreSQL's `%.*g` with DBL_DIG or FLT_DIG)
/// as a NUMERIC.
fn from_float_digits(f: f64, digits: usize) -> DbResult<BigDecimal> {
    if !f.is_finite() {
        return Err(DbError::Unsupported(format!("converting {f} to numeric")));
    }
    let text = format!("{:.*e}", digits - 1, f.abs());
    let (mantissa, exponent) = text.split_once('e').expect("exponent notation");
    let exponent: i64 = exponent.parse().expect("an exponent");
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let frac = frac.trim_end_matches('0');
    let digits = format!("{int}{frac}");
    let magnitude = BigInt::parse_bytes(digits.as_bytes(), 10).expect("decimal digits");
    let int = if f < 0.0 { -magnitude } else { magnitude };
    // An integral value keeps scale 0 (`1234567::real` is 1234570, not 1.23457E+6).
    let scale = (frac.len() as i64 - exponent).max(0);
    checked(BigDecimal::new(int, frac.len() as i64 - exponent).with_scale(scale))
}

/// The float8 nearest to `n` (22003 beyond float8's range, as PostgreSQL).
pub fn to_f64(n: &BigDecimal) -> DbResult<f64> {
    let (int, scale) = n.as_bigint_and_scale();
    let f: f64 = format!("{int}e{}", -scale).parse().expect("a float's text");
    if f.is_infinite() {
        return Err(DbError::NumericOverflow("value out of range: overflow".into()));
    }
    Ok(f)
}

/// `n` rounded to an integer (half away from zero), as bigint (22003 out of range).
pub fn to_i64(n: &BigDecimal) -> DbResult<i64> {
    n.with_scale_round(0, RoundingMode::HalfUp)
        .to_i64()
        .ok_or_else(|| DbError::NumericOutOfRange("bigint".into()))
}

/// `n` as it would be stored in a `NUMERIC(p, s)` column: rounded half away from zero
/// to `s` digits after the point, and 22003 if more than `p - s` digits remain before it.
pub fn apply_spec(n: &BigDecimal, spec: NumericSpec) -> DbResult<BigDecimal> {
    let scale = spec.scale as i64;
    let rounded = n.with_scale_round(scale, RoundingMode::HalfUp).with_scale(scale.max(0));
    let max_digits = spec.precision as i64 - scale;
    let too_large = if max_digits <= 0 {
        !rounded.is_zero() && (integer_digits(&rounded) > 0 || leading_zeros(&rounded) < -max_digits)
    } else {
        integer_digits(&rounded) > max_digits
    };
    if too_large {
        return Err(DbError::NumericOverflow(format!(
            "numeric field overflow: a field with precision {}, scale {} must round to an absolute \
             value less than {}",
            spec.precision,
            spec.scale,
            if max_digits > 0 { format!("10^{max_digits}") } else { format!("10^-{}", -max_digits) }
        )));
    }
    Ok(rounded)
}

/// For a value below 1 in magnitude: how many zeros follow its point before the first
/// other digit.
fn leading_zeros(n: &BigDecimal) -> i64 {
    let (_, scale) = n.as_bigint_and_scale();
    scale - n.digits() as i64
}

/// Whether `n` is already a value of `NUMERIC(p, s)`: of its scale, within its precision.
pub fn fits(n: &BigDecimal, spec: NumericSpec) -> bool {
    let (_, scale) = n.as_bigint_and_scale();
    scale == (spec.scale as i64).max(0) && apply_spec(n, spec).is_ok_and(|r| r == *n)
}

/// `a + b`, `a - b`: scale the larger of theirs.
pub fn add(a: &BigDecimal, b: &BigDecimal) -> DbResult<BigDecimal> {
    let scale = a.as_bigint_and_scale().1.max(b.as_bigint_and_scale().1);
    checked((a + b).with_scale(scale))
}

pub fn sub(a: &BigDecimal, b: &BigDecimal) -> DbResult<BigDecimal> {
    let scale = a.as_bigint_and_scale().1.max(b.as_bigint_and_scale().1);
    checked((a - b).with_scale(scale))
}

/// `a * b`: scale the sum of theirs.
pub fn mul(a: &BigDecimal, b: &BigDecimal) -> DbResult<BigDecimal> {
    let scale = a.as_bigint_and_scale().1 + b.as_bigint_and_scale().1;
    if scale > MAX_DISPLAY_SCALE {
        return Err(overflow());
    }
    // Bound the product's size before computing it.
    if integer_digits(a) + integer_digits(b) > MAX_INTEGER_DIGITS + 1 {
        return Err(overflow());
    }
    checked((a * b).with_scale(scale))
}

/// PostgreSQL's base-10000 weight and first digit of a nonzero `n`: n is in
/// [first * 10000^weight, (first + 1) * 10000^weight).
fn weight_and_first_digit(n: &BigDecimal) -> (i64, i64) {
    if n.is_zero() {
        return (0, 0);
    }
    let (digits, scale) = parts(n);
    // The power of ten of the leading digit.
    let e10 = digits.len() as i64 - 1 - scale;
    let weight = e10.div_euclid(4);
    // The leading digits down to the power 4 * weight.
    let count = (e10 - 4 * weight + 1) as usize;
    let first = digits.chars().take(count).collect::<String>();
    let first = format!("{first:0<count$}").parse::<i64>().expect("at most 4 digits");
    (weight, first)
}

/// The scale of `a / b` (PostgreSQL's `select_div_scale`): at least 16 significant
/// digits, at least either operand's scale, at most 1000.
fn div_scale(a: &BigDecimal, b: &BigDecimal) -> i64 {
    let (w1, f1) = weight_and_first_digit(a);
    let (w2, f2) = weight_and_first_digit(b);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    let scale = MIN_SIG_DIGITS - qweight * 4;
    scale.max(a.as_bigint_and_scale().1).max(b.as_bigint_and_scale().1).clamp(0, MAX_DIV_SCALE)
}

/// `a / b` rounded half away from zero at `scale` digits.
fn div_rounded(a: &BigDecimal, b: &BigDecimal, scale: i64) -> BigDecimal {
    let (ai, sa) = a.as_bigint_and_scale();
    let (bi, sb) = b.as_bigint_and_scale();
    // a / b = (ai / bi) * 10^(sb - sa); scaled by 10^scale.
    let shift = scale + sb - sa;
    let (mut num, mut den) = (ai.into_owned(), bi.into_owned());
    if shift >= 0 {
        num *= BigInt::from(10).pow(shift as u32);
    } else {
        den *= BigInt::from(10).pow((-shift) as u32);
    }
    let negative = num.sign() != den.sign() && !num.is_zero();
    let (n, d) = (num.magnitude().clone(), den.magnitude().clone());
    let (mut q, r) = (&n / &d, &n % &d);
    if r * 2u32 >= d {
        q += 1u32;
    }
    BigDecimal::new(BigInt::from_biguint(if negative { Sign::Minus } else { Sign::Plus }, q), scale)
}

/// `a / b` (22012 when b is zero).
pub fn div(a: &BigDecimal, b: &BigDecimal) -> DbResult<BigDecimal> {
    if b.is_zero() {
        return Err(DbError::DivisionByZero);
    }
    if integer_digits(a) - integer_digits(b) > MAX_INTEGER_DIGITS {
        return Err(overflow());
    }
    checked(div_rounded(a, b, div_scale(a, b)))
}

/// `a % b`: the remainder of the division truncated toward zero (the sign of `a`), with
/// the larger scale (22012 when b is zero).
pub fn rem(a: &BigDecimal, b: &BigDecimal) -> DbResult<BigDecimal> {
    if b.is_zero() {
        return Err(DbError::DivisionByZero);
    }
    let scale = a.as_bigint_and_scale().1.max(b.as_bigint_and_scale().1);
    let (ai, bi) = (a.with_scale(scale), b.with_scale(scale));
    let (ai, _) = ai.as_bigint_and_scale();
    let (bi, _) = bi.as_bigint_and_scale();
    // BigInt's `%` truncates toward zero, as PostgreSQL's mod.
    checked(BigDecimal::new(ai.as_ref() % bi.as_ref(), scale))
}

/// The average of `count` values summing to `sum` (the scale of a division).
pub fn avg(sum: &BigDecimal, count: i64) -> DbResult<BigDecimal> {
    div(sum, &from_i64(count))
}

/// The square root of `n` (not negative) at `n`'s scale, rounded to the nearest, as
/// PostgreSQL's stddev takes it from the variance.
pub fn sqrt(n: &BigDecimal) -> DbResult<BigDecimal> {
    let (digits, scale) = n.as_bigint_and_scale();
    if digits.is_negative() {
        return Err(DbError::InvalidPowerArgument("cannot take square root of a negative number".into()));
    }
    // sqrt(d / 10^s) * 10^s = sqrt(d * 10^s); rounded as floor(sqrt(4x)) + 1, halved.
    let shift = u32::try_from(scale.max(0)).map_err(|_| overflow())?;
    let radicand = digits.as_ref() * BigInt::from(10u32).pow(shift) * BigInt::from(4u32);
    let root = (radicand.sqrt() + BigInt::from(1u32)) / BigInt::from(2u32);
    checked(BigDecimal::new(root, scale.max(0)))
}

/// `round(n, digits)` (half away from zero) or `trunc(n, digits)`: scale `digits` when
/// positive, else 0 with the digits from the `-digits`-th before the point zeroed.
pub fn round(n: &BigDecimal, digits: i64, mode: RoundMode) -> DbResult<BigDecimal> {
    let digits = digits.clamp(-MAX_INTEGER_DIGITS, MAX_DISPLAY_SCALE);
    let rounding = match mode {
        RoundMode::HalfAwayFromZero => RoundingMode::HalfUp,
        RoundMode::TowardZero => RoundingMode::Down,
        RoundMode::Floor => RoundingMode::Floor,
        RoundMode::Ceiling => RoundingMode::Ceiling,
    };
    checked(n.with_scale_round(digits, rounding).with_scale(digits.max(0)))
}

/// How `round` drops digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundMode {
    /// `round`.
    HalfAwayFromZero,
    /// `trunc`.
    TowardZero,
    /// `floor`.
    Floor,
    /// `ceil`.
    Ceiling,
}

/// Compares a numeric with a float8 exactly (the float's binary value, not its
/// conversion to either type): the total order of values needs it transitive. NaN is
/// above every number and -NaN below, as `f64::total_cmp` orders them.
pub fn cmp_f64(n: &BigDecimal, f: f64) -> Ordering {
    if f.is_nan() {
        return if f.is_sign_negative() { Ordering::Greater } else { Ordering::Less };
    }
    if f.is_infinite() {
        return if f > 0.0 { Ordering::Less } else { Ordering::Greater };
    }
    n.cmp(&exact_f64(f))
}

/// The exact decimal value of a finite float: mantissa * 2^exponent, a power of two
/// below one being a power of five over a power of ten.
fn exact_f64(f: f64) -> BigDecimal {
    let bits = f.to_bits();
    let negative = bits >> 63 == 1;
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, power) =
        if exponent == 0 { (fraction, -1074) } else { (fraction | (1 << 52), exponent - 1075) };
    let mut int = BigInt::from(mantissa);
    if negative {
        int = -int;
    }
    if power >= 0 {
        BigDecimal::new(int << power as usize, 0)
    } else {
        BigDecimal::new(int * BigInt::from(5).pow((-power) as u32), -power)
    }
}

/// What a numeric is hashed by, equal for equal values of any scale: its digits without
/// trailing zeros and the scale left.
pub fn hash_parts(n: &BigDecimal) -> (BigInt, i64) {
    if n.is_zero() {
        return (BigInt::zero(), 0);
    }
    n.normalized().into_bigint_and_scale()
}

/// Whether `n` is an integer that fits an i64 (then its value).
pub fn as_exact_i64(n: &BigDecimal) -> Option<i64> {
    if n.is_integer() {
        n.to_i64()
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------------
// The binary wire form
// ---------------------------------------------------------------------------------------

const SIGN_POSITIVE: u16 = 0x0000;
const SIGN_NEGATIVE: u16 = 0x4000;
const SIGN_NAN: u16 = 0xC000;
const SIGN_PINF: u16 = 0xD000;
const SIGN_NINF: u16 = 0xF000;

/// PostgreSQL's binary form: ndigits, weight, sign, display scale (each i16/u16 big
/// endian), then ndigits base-10000 digits, the first worth 10000^weight, with no
/// leading or trailing zero digit.
pub fn write_binary(n: &BigDecimal, out: &mut Vec<u8>) {
    let (digits, scale) = parts(n);
    let scale = scale.max(0);
    // Decimal digits padded so that the point falls between groups of four.
    let int_len = digits.len() as i64 - scale;
    let lead = (4 - int_len.rem_euclid(4)) % 4;
    let trail = (4 - scale.rem_euclid(4)) % 4;
    let mut padded = "0".repeat(lead as usize);
    padded.push_str(&digits);
    padded.push_str(&"0".repeat(trail as usize));
    let mut groups: Vec<u16> = padded
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).expect("digits").parse().expect("4 digits"))
        .collect();
    let mut weight = (int_len + lead) / 4 - 1;
    while groups.first() == Some(&0) {
        groups.remove(0);
        weight -= 1;
    }
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let sign = if n.is_negative() { SIGN_NEGATIVE } else { SIGN_POSITIVE };
    out.extend_from_slice(&(groups.len() as u16).to_be_bytes());
    out.extend_from_slice(&(weight as i16).to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for g in groups {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

/// Reads the binary form (see `write_binary`); its display scale is kept, the digits
/// beyond it dropped as PostgreSQL's `numeric_recv` truncates them. NaN and the
/// infinities are refused (22P02, their own message).
pub fn read_binary(bytes: &[u8]) -> DbResult<BigDecimal> {
    let bad = || DbError::TypeMismatch {
        expected: "binary numeric".into(),
        value: format!("{} malformed bytes", bytes.len()),
    };
    let word = |i: usize| -> DbResult<u16> {
        bytes.get(i * 2..i * 2 + 2).map(|b| u16::from_be_bytes([b[0], b[1]])).ok_or_else(bad)
    };
    let ndigits = word(0)? as usize;
    let weight = word(1)? as i16 as i64;
    let sign = word(2)?;
    let dscale = word(3)? as i64;
    if bytes.len() != 8 + 2 * ndigits {
        return Err(bad());
    }
    match sign {
        SIGN_POSITIVE | SIGN_NEGATIVE => {}
        SIGN_NAN | SIGN_PINF | SIGN_NINF => {
            return Err(DbError::TypeMismatch {
                expected: "numeric".into(),
                value: match sign {
                    SIGN_NAN => "NaN",
                    SIGN_PINF => "Infinity",
                    _ => "-Infinity",
                }
                .into(),
            })
        }
        _ => return Err(bad()),
    }
    if dscale > MAX_DISPLAY_SCALE {
        return Err(bad());
    }
    // The last digit is worth 10000^(weight - ndigits + 1): bounded before the number
    // is built, so no message makes a number beyond the type's limits.
    let last_power = weight - ndigits as i64 + 1;
    if (weight + 1) * 4 > MAX_INTEGER_DIGITS || -last_power * 4 > MAX_DISPLAY_SCALE + 4 {
        return Err(overflow());
    }
    let mut digits = String::with_capacity(ndigits * 4);
    for i in 0..ndigits {
        let d = word(4 + i)?;
        if d >= 10000 {
            return Err(bad());
        }
        digits.push_str(&format!("{d:04}"));
    }
    let mut int = BigInt::parse_bytes(digits.as_bytes(), 10).unwrap_or_default();
    if sign == SIGN_NEGATIVE {
        int = -int;
    }
    let exact = BigDecimal::new(int, -last_power * 4);
    checked(exact.with_scale_round(dscale, RoundingMode::Down))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> BigDecimal {
        parse(text).unwrap()
    }

    fn text(v: &BigDecimal) -> String {
        to_text(v)
    }

    #[test]
    fn text_in_and_out_keeps_the_display_scale() {
        for (input, output) in [
            ("0", "0"),
            ("1.50", "1.50"),
            ("-1.50", "-1.50"),
            ("  +12.  ", "12"),
            (".5", "0.5"),
            ("-.005", "-0.005"),
            ("1e3", "1000"),
            ("1.5e3", "1500"),
            ("1.50e1", "15.0"),
            ("1.5E-3", "0.0015"),
            ("-0.00", "0.00"),
            ("000123.4500", "123.4500"),
            ("12345678901234567890123456789.123456789", "12345678901234567890123456789.123456789"),
        ] {
            assert_eq!(text(&n(input)), output, "{input}");
        }
        for bad in
            ["", "-", ".", "abc", "1.2.3", "1e", "1e+", "1 2", "e5", "1e1001", "NaN", "Infinity", "0x10"]
        {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.sqlstate(), "22P02", "{bad}: {e}");
        }
        assert_eq!(parse("1e1000").unwrap().digits(), 1001);
        assert_eq!(parse(&format!("1{}", "0".repeat(140_000))).unwrap_err().sqlstate(), "22003");
    }

    #[test]
    fn type_modifiers_round_half_away_from_zero_and_overflow_past_the_precision() {
        let spec = NumericSpec::new(5, 2).unwrap();
        assert_eq!(text(&apply_spec(&n("1.005"), spec).unwrap()), "1.01");
        assert_eq!(text(&apply_spec(&n("-1.005"), spec).unwrap()), "-1.01");
        assert_eq!(text(&apply_spec(&n("1.004"), spec).unwrap()), "1.00");
        assert_eq!(text(&apply_spec(&n("7"), spec).unwrap()), "7.00");
        assert_eq!(text(&apply_spec(&n("999.994"), spec).unwrap()), "999.99");
        let e = apply_spec(&n("999.995"), spec).unwrap_err();
        assert_eq!(e.sqlstate(), "22003");
        assert!(e.to_string().contains("numeric field overflow"), "{e}");
        assert!(e.to_string().contains("less than 10^3"), "{e}");
        // NUMERIC(3, 0) and a negative scale: rounded to tens.
        let whole = NumericSpec::new(3, 0).unwrap();
        assert_eq!(text(&apply_spec(&n("998.5"), whole).unwrap_or_else(|e| panic!("{e}"))), "999");
        assert!(apply_spec(&n("999.5"), whole).is_err());
        let tens = NumericSpec::new(2, -1).unwrap();
        assert_eq!(text(&apply_spec(&n("125"), tens).unwrap()), "130");
        assert!(apply_spec(&n("995"), tens).is_err());
        // Scale above precision: only small values.
        let small = NumericSpec::new(2, 3).unwrap();
        assert_eq!(text(&apply_spec(&n("0.012"), small).unwrap()), "0.012");
        assert!(apply_spec(&n("0.1"), small).is_err());
        assert!(fits(&n("1.25"), spec) && !fits(&n("1.2"), spec) && !fits(&n("1000.00"), spec));
        assert_eq!(spec.typmod(), (5 << 16 | 2) + 4);
        assert_eq!(NumericSpec::from_typmod(spec.typmod()), Some(spec));
        assert_eq!(NumericSpec::from_typmod(tens.typmod()), Some(tens));
        assert!(NumericSpec::new(0, 0).is_err() && NumericSpec::new(1001, 0).is_err());
    }

    #[test]
    fn operators_give_postgresqls_result_scales() {
        let op = |f: fn(&BigDecimal, &BigDecimal) -> DbResult<BigDecimal>, a: &str, b: &str| {
            text(&f(&n(a), &n(b)).unwrap())
        };
        assert_eq!(op(add, "1.5", "2.25"), "3.75");
        assert_eq!(op(add, "1.50", "2.50"), "4.00");
        assert_eq!(op(sub, "1", "0.001"), "0.999");
        assert_eq!(op(mul, "1.5", "2.25"), "3.375");
        assert_eq!(op(mul, "0.10", "10"), "1.00");
        // select_div_scale: 16 significant digits, more for small quotients.
        assert_eq!(op(div, "1", "3"), "0.33333333333333333333");
        assert_eq!(op(div, "10", "4.0"), "2.5000000000000000");
        assert_eq!(op(div, "2", "3"), "0.66666666666666666667");
        assert_eq!(op(div, "-2", "3"), "-0.66666666666666666667");
        assert_eq!(op(div, "100000", "3"), "33333.333333333333");
        assert_eq!(op(div, "1.000000000000000000001", "1"), "1.000000000000000000001");
        assert_eq!(op(div, "7", "7"), "1.00000000000000000000");
        assert_eq!(op(rem, "7.5", "2"), "1.5");
        assert_eq!(op(rem, "-7", "2.50"), "-2.00");
        assert_eq!(div(&n("1"), &n("0.00")).unwrap_err().sqlstate(), "22012");
        assert_eq!(rem(&n("1"), &n("0")).unwrap_err().sqlstate(), "22012");
        assert_eq!(text(&avg(&n("4.00"), 2).unwrap()), "2.0000000000000000");
        let r = |v: &str, d: i64, m: RoundMode| text(&round(&n(v), d, m).unwrap());
        assert_eq!(r("2.5", 0, RoundMode::HalfAwayFromZero), "3");
        assert_eq!(r("-2.5", 0, RoundMode::HalfAwayFromZero), "-3");
        assert_eq!(r("1.2345", 2, RoundMode::HalfAwayFromZero), "1.23");
        assert_eq!(r("1.2", 3, RoundMode::HalfAwayFromZero), "1.200");
        assert_eq!(r("1250", -2, RoundMode::HalfAwayFromZero), "1300");
        assert_eq!(r("-1.99", 0, RoundMode::TowardZero), "-1");
        assert_eq!(r("-1.01", 0, RoundMode::Floor), "-2");
        assert_eq!(r("1.01", 0, RoundMode::Ceiling), "2");
        // No number of millions of digits.
        let big = n("1e1000");
        let mut x = big.clone();
        let mut failed = false;
        for _ in 0..200 {
            match mul(&x, &big) {
                Ok(y) => x = y,
                Err(e) => {
                    assert_eq!(e.sqlstate(), "22003");
                    failed = true;
                    break;
                }
            }
        }
        assert!(failed, "the product grew past the limit");
    }

    #[test]
    fn conversions_with_floats_and_integers() {
        assert_eq!(text(&from_f64(0.1).unwrap()), "0.1");
        assert_eq!(text(&from_f64(1.0 / 3.0).unwrap()), "0.333333333333333");
        assert_eq!(text(&from_f64(2.5).unwrap()), "2.5");
        assert_eq!(text(&from_f64(1e20).unwrap()), "100000000000000000000");
        assert_eq!(text(&from_f64(-1.5e-7).unwrap()), "-0.00000015");
        assert_eq!(text(&from_f64(0.0).unwrap()), "0");
        assert!(from_f64(f64::NAN).is_err());
        assert_eq!(to_f64(&n("0.1")).unwrap(), 0.1);
        assert_eq!(to_f64(&n("-2.50")).unwrap(), -2.5);
        assert_eq!(to_f64(&n("1e400")).unwrap_err().sqlstate(), "22003");
        assert_eq!(to_i64(&n("2.5")).unwrap(), 3);
        assert_eq!(to_i64(&n("-2.5")).unwrap(), -3);
        assert_eq!(to_i64(&n("9223372036854775808")).unwrap_err().sqlstate(), "22003");
        assert_eq!(as_exact_i64(&n("12.000")), Some(12));
        assert_eq!(as_exact_i64(&n("12.5")), None);
    }

    #[test]
    fn numerics_and_floats_compare_exactly() {
        assert_eq!(cmp_f64(&n("0.1"), 0.1), Ordering::Less, "0.1 as a float is slightly above 0.1");
        assert_eq!(cmp_f64(&n("0.5"), 0.5), Ordering::Equal);
        assert_eq!(cmp_f64(&n("-3"), -3.0), Ordering::Equal);
        assert_eq!(cmp_f64(&n("1e300"), f64::INFINITY), Ordering::Less);
        assert_eq!(cmp_f64(&n("1e300"), f64::NAN), Ordering::Less);
        assert_eq!(cmp_f64(&n("-1e300"), f64::NEG_INFINITY), Ordering::Greater);
        assert_eq!(cmp_f64(&n("5e-324"), f64::from_bits(1)), Ordering::Greater);
        assert_eq!(exact_f64(f64::from_bits(1)), BigDecimal::new(BigInt::from(5).pow(1074u32), 1074));
        assert_eq!(hash_parts(&n("1.50")), hash_parts(&n("1.5")));
        assert_eq!(hash_parts(&n("0.00")), hash_parts(&n("0")));
        assert_eq!(hash_parts(&n("100")), hash_parts(&n("1e2")));
    }

    #[test]
    fn the_binary_form_round_trips_with_postgresqls_digits() {
        let bin = |v: &str| {
            let mut out = Vec::new();
            write_binary(&n(v), &mut out);
            out
        };
        let words = |ws: &[u16]| ws.iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>();
        // 12345678 = 1234|5678, weight 1.
        assert_eq!(bin("12345678"), words(&[2, 1, 0, 0, 1234, 5678]));
        // -1.50: digits 1|5000, weight 0, scale 2.
        assert_eq!(bin("-1.50"), words(&[2, 0, 0x4000, 2, 1, 5000]));
        // 0.000123 = 0.0001|2300: weight -1.
        assert_eq!(bin("0.000123"), words(&[2, (-1i16) as u16, 0, 6, 1, 2300]));
        assert_eq!(bin("0"), words(&[0, 0, 0, 0]));
        assert_eq!(bin("0.00"), words(&[0, 0, 0, 2]));
        assert_eq!(bin("10000"), words(&[1, 1, 0, 0, 1]));
        for v in ["0", "1.50", "-1.50", "0.000123", "12345678.9", "1e40", "-0.00000001", "99999999.99990000"]
        {
            assert_eq!(text(&read_binary(&bin(v)).unwrap()), text(&n(v)), "{v}");
        }
        // A display scale below the digits truncates them, as numeric_recv.
        assert_eq!(text(&read_binary(&words(&[2, 0, 0, 1, 1, 5900])).unwrap()), "1.5");
        assert!(read_binary(&words(&[1, 0, 0, 0, 10000])).is_err());
        assert!(read_binary(&words(&[2, 0, 0, 0, 1])).is_err());
        assert_eq!(read_binary(&words(&[0, 0, SIGN_NAN, 0])).unwrap_err().sqlstate(), "22P02");
        assert_eq!(read_binary(&words(&[1, 0x8000, 0, 0, 1])).unwrap_err().sqlstate(), "22003");
        assert_eq!(text(&read_binary(&words(&[1, 32767, 0, 0, 1])).unwrap()).len(), 131_069);
    }
}
