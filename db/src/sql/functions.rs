//! The scalar functions applications call by name beyond the operators: the string
//! functions (PostgreSQL's and Oracle's INSTR), `sign`, `md5` and the SHA-2 digests of
//! a bytea, `width_bucket` (bounds and count, or thresholds), and the argument checks every
//! built-in function's call goes through. `expr.rs` compiles a call into `Func` and
//! dispatches here; `formatting.rs` holds `to_char`, `to_date` and `to_timestamp`.
//!
//! Semantics are PostgreSQL's: positions count characters from 1, not bytes; NULL in
//! gives NULL out unless the function says otherwise (`concat_ws` skips NULLs); a call
//! whose arguments have types no variant of the function takes fails as it is
//! compiled, with 42883 "function lower(bigint) does not exist". A quoted literal or a
//! bind parameter has no type of its own yet (PostgreSQL's `unknown`): it is taken as
//! the type the function wants, and converted when the call runs (`repeat('ab', '3')`).
//!
//! Never: build a string past `MAX_RESULT_BYTES` (54000 instead, before allocating), or
//! index a string by bytes where a character boundary is not certain.

use crate::error::{DbError, DbResult};
use crate::sql::expr::{Expr, Func};
use crate::value::{DataType, Value};
use bigdecimal::BigDecimal;

/// The largest string a function builds, in bytes: far beyond any value a row holds,
/// and small enough that a runaway `repeat` or `replace` cannot exhaust memory.
pub(crate) const MAX_RESULT_BYTES: usize = 256 << 20;

/// The error for a result over [`MAX_RESULT_BYTES`]: PostgreSQL's 54000.
pub(crate) fn too_long(bytes: usize) -> DbError {
    DbError::ProgramLimitExceeded(format!(
        "requested length too large: {bytes} bytes, over the limit of {MAX_RESULT_BYTES}"
    ))
}

// ---------------------------------------------------------------------------------------
// Argument types
// ---------------------------------------------------------------------------------------

/// What an argument position takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Param {
    Text,
    /// `length` and `octet_length`: text or a byte string.
    TextOrBytes,
    /// `encode`'s first: a byte string.
    Bytes,
    /// An integer (a count, a position).
    Int,
    /// Any number.
    Number,
    /// `to_char`'s first: a number, a date, a time, a timestamp or an interval.
    Formattable,
}

/// The parameters of `func` called with `n` arguments; None for the functions whose
/// arguments are not checked here (those of any type, and the conditional ones, which
/// take the type of their arguments).
fn params(func: Func, n: usize) -> Option<Vec<Param>> {
    use Param::*;
    Some(match func {
        Func::Lower | Func::Upper | Func::Initcap | Func::Reverse | Func::Md5 => vec![Text],
        Func::Sha(_) => vec![Bytes],
        Func::WidthBucket => vec![Number, Number, Number, Int],
        Func::RegexpReplace => vec![Text, Text, Text, Text],
        Func::SimilarToEscape => vec![Text, Text],
        Func::Format => vec![Text],
        Func::Length | Func::OctetLength => vec![TextOrBytes],
        Func::Repeat | Func::Left | Func::Right => vec![Text, Int],
        Func::Lpad | Func::Rpad => vec![Text, Int, Text],
        Func::Substr => vec![Text, Int, Int],
        Func::Trim(_) | Func::Strpos => vec![Text, Text],
        Func::Replace => vec![Text, Text, Text],
        Func::SplitPart => vec![Text, Text, Int],
        Func::Instr => vec![Text, Text, Int, Int],
        Func::ConcatWs => vec![Text],
        Func::Abs | Func::Sign | Func::Sqrt | Func::Floor | Func::Ceil => vec![Number],
        Func::Mod | Func::Power => vec![Number, Number],
        Func::Round | Func::Trunc => vec![Number, Int],
        Func::ToChar => vec![Formattable, Text],
        Func::ToDate => vec![Text, Text],
        Func::Encode => vec![Bytes, Text],
        Func::Decode => vec![Text, Text],
        Func::ToTimestamp if n == 1 => vec![Number],
        Func::ToTimestamp => vec![Text, Text],
        _ => return None,
    })
}

/// The type an argument is known to have before the call runs: None for what has none
/// yet (a quoted literal, NULL, a bind parameter) or cannot be told.
fn known_type(arg: &Expr, columns: &[Option<DataType>]) -> Option<DataType> {
    match arg {
        Expr::Literal(Value::Text(_) | Value::Null) | Expr::Param(_) => None,
        other => other.static_type(columns, &[]),
    }
}

fn accepts(param: Param, ty: DataType) -> bool {
    match param {
        // CHAR(n) reads as text (PostgreSQL's implicit bpchar -> text cast).
        Param::Text => matches!(ty, DataType::Text { .. } | DataType::Char { .. }),
        Param::TextOrBytes => matches!(ty, DataType::Text { .. } | DataType::Char { .. } | DataType::Bytea),
        Param::Bytes => ty == DataType::Bytea,
        Param::Int => ty == DataType::Int,
        Param::Number => {
            matches!(ty, DataType::Int | DataType::Float | DataType::Float4 | DataType::Numeric(_))
        }
        Param::Formattable => matches!(
            ty,
            DataType::Int
                | DataType::Float
                | DataType::Float4
                | DataType::Numeric(_)
                | DataType::Date
                | DataType::Time
                | DataType::Timestamp
                | DataType::TimestampTz
                | DataType::Interval
        ),
    }
}

/// PostgreSQL's name of a type, as its error messages write it.
fn pg_type_name(ty: Option<DataType>) -> String {
    match ty {
        None => "unknown".into(),
        Some(DataType::Int) => "bigint".into(),
        Some(DataType::Float) => "double precision".into(),
        Some(DataType::Float4) => "real".into(),
        Some(DataType::Text { max_chars: None }) => "text".into(),
        Some(DataType::Text { max_chars: Some(_) }) => "character varying".into(),
        Some(DataType::Bool) => "boolean".into(),
        Some(DataType::Time) => "time without time zone".into(),
        Some(DataType::Timestamp) => "timestamp without time zone".into(),
        Some(DataType::TimestampTz) => "timestamp with time zone".into(),
        Some(other) => other.name().to_lowercase(),
    }
}

/// Fails with PostgreSQL's 42883 when an argument of `name(args)` has a type the
/// function has no variant for (`lower(5)`, `abs('x'::text)`, `repeat('x', 2.5)`).
/// `columns` are the types of the row the arguments read.
pub(crate) fn check_arguments(
    name: &str,
    func: Func,
    args: &[Expr],
    columns: &[Option<DataType>],
) -> DbResult<()> {
    let Some(params) = params(func, args.len()) else { return Ok(()) };
    let types: Vec<Option<DataType>> = args.iter().map(|a| known_type(a, columns)).collect();
    let fits = types.iter().enumerate().all(|(i, ty)| match (params.get(i), ty) {
        (_, None) | (None, _) => true,
        (Some(param), Some(ty)) => accepts(*param, *ty),
    });
    if fits {
        return Ok(());
    }
    let shown: Vec<String> = types.into_iter().map(pg_type_name).collect();
    Err(DbError::UndefinedFunction(format!("{name}({})", shown.join(", "))))
}

// ---------------------------------------------------------------------------------------
// Strings
// ---------------------------------------------------------------------------------------

/// Which ends `trim` works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrimWhere {
    Both,
    Leading,
    Trailing,
}

/// Removes the longest run of characters in `chars` from the ends `kind` says.
pub(crate) fn trim(kind: TrimWhere, s: &str, chars: &str) -> String {
    let in_set = |c: char| chars.contains(c);
    match kind {
        TrimWhere::Both => s.trim_matches(in_set),
        TrimWhere::Leading => s.trim_start_matches(in_set),
        TrimWhere::Trailing => s.trim_end_matches(in_set),
    }
    .to_string()
}

/// Every occurrence of `from` in `s` replaced by `to` (an empty `from` replaces
/// nothing, as in PostgreSQL).
pub(crate) fn replace(s: &str, from: &str, to: &str) -> DbResult<String> {
    if from.is_empty() {
        return Ok(s.to_string());
    }
    if to.len() > from.len() {
        let count = s.matches(from).count();
        let bytes = s.len().saturating_add(count.saturating_mul(to.len() - from.len()));
        if bytes > MAX_RESULT_BYTES {
            return Err(too_long(bytes));
        }
    }
    Ok(s.replace(from, to))
}

/// The character position (from 1) of the first `needle` in `s`, 0 if none; an empty
/// needle is found at 1.
pub(crate) fn strpos(s: &str, needle: &str) -> i64 {
    match s.find(needle) {
        Some(byte) => s[..byte].chars().count() as i64 + 1,
        None => 0,
    }
}

/// Oracle's INSTR(s, needle, position, occurrence): the character position of the
/// `occurrence`-th `needle` found searching from `position` (from the end, backwards,
/// when it is negative); 0 if there are not that many, or `position` is 0 or past the
/// end. Occurrences may overlap. An occurrence below 1 is an error, as in Oracle.
pub(crate) fn instr(s: &str, needle: &str, position: i64, occurrence: i64) -> DbResult<i64> {
    if occurrence < 1 {
        return Err(DbError::InvalidFunctionArgument(format!(
            "argument '{occurrence}' is out of range: INSTR's occurrence must be 1 or more"
        )));
    }
    let chars: Vec<char> = s.chars().collect();
    let needle: Vec<char> = needle.chars().collect();
    let len = chars.len() as i64;
    let matches_at = |start: usize| chars.get(start..start + needle.len()) == Some(needle.as_slice());
    let mut left = occurrence;
    if position > 0 {
        let mut start = position - 1;
        while start + needle.len() as i64 <= len {
            if matches_at(start as usize) {
                left -= 1;
                if left == 0 {
                    return Ok(start + 1);
                }
            }
            start += 1;
        }
    } else if position < 0 {
        // The search starts at the position counted from the end (-1: the last
        // character) and goes towards the start.
        let mut start = len + position;
        start = start.min(len - needle.len() as i64);
        while start >= 0 {
            if matches_at(start as usize) {
                left -= 1;
                if left == 0 {
                    return Ok(start + 1);
                }
            }
            start -= 1;
        }
    }
    Ok(0)
}

/// The `n`-th field of `s` split at `delimiter` (from the end when `n` is negative);
/// empty when there is no such field. `n` = 0 is an error (22023), as in PostgreSQL.
pub(crate) fn split_part(s: &str, delimiter: &str, n: i64) -> DbResult<String> {
    if n == 0 {
        return Err(DbError::InvalidFunctionArgument("field position must not be zero".into()));
    }
    if delimiter.is_empty() {
        // The whole string is the one field.
        return Ok(if n == 1 || n == -1 { s.to_string() } else { String::new() });
    }
    let fields: Vec<&str> = s.split(delimiter).collect();
    let index = if n > 0 { n - 1 } else { fields.len() as i64 + n };
    Ok(usize::try_from(index).ok().and_then(|i| fields.get(i)).map_or(String::new(), |f| f.to_string()))
}

/// The first `n` characters (all but the last `-n` when negative).
pub(crate) fn left(s: &str, n: i64) -> String {
    let count = s.chars().count() as i64;
    let take = if n >= 0 { n.min(count) } else { (count + n).max(0) };
    s.chars().take(take as usize).collect()
}

/// The last `n` characters (all but the first `-n` when negative).
pub(crate) fn right(s: &str, n: i64) -> String {
    let count = s.chars().count() as i64;
    let skip = if n >= 0 { (count - n).max(0) } else { (-n).min(count) };
    s.chars().skip(skip as usize).collect()
}

/// Each word's first letter upper case, the rest lower case; words are runs of letters
/// and digits.
pub(crate) fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if in_word {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric();
    }
    out
}

pub(crate) fn reverse(s: &str) -> String {
    s.chars().rev().collect()
}

/// md5's digest of `bytes` as 32 lowercase hex digits.
pub(crate) fn md5_hex(bytes: &[u8]) -> String {
    use md5::Digest;
    let digest = md5::Md5::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a bytea argument (a quoted literal read as a bytea's text form).
pub(crate) fn bytes_of(function: &str, v: &Value) -> DbResult<Vec<u8>> {
    match v {
        Value::Bytea(b) => Ok(b.to_vec()),
        Value::Text(t) => crate::bytea::parse(t),
        other => Err(DbError::UndefinedFunction(format!("{function}({})", pg_type_name(other.data_type())))),
    }
}

/// The SHA-2 digests PostgreSQL 11 and on have as functions of a bytea.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShaBits {
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl ShaBits {
    pub(crate) fn function_name(self) -> &'static str {
        match self {
            ShaBits::Sha224 => "sha224",
            ShaBits::Sha256 => "sha256",
            ShaBits::Sha384 => "sha384",
            ShaBits::Sha512 => "sha512",
        }
    }
}

/// The SHA-2 digest of `bytes`.
pub(crate) fn sha(bits: ShaBits, bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    match bits {
        ShaBits::Sha224 => sha2::Sha224::digest(bytes).to_vec(),
        ShaBits::Sha256 => sha2::Sha256::digest(bytes).to_vec(),
        ShaBits::Sha384 => sha2::Sha384::digest(bytes).to_vec(),
        ShaBits::Sha512 => sha2::Sha512::digest(bytes).to_vec(),
    }
}

// ---------------------------------------------------------------------------------------
// width_bucket
// ---------------------------------------------------------------------------------------

fn width_bucket_error(message: &str) -> DbError {
    DbError::WidthBucketArgument(message.into())
}

/// `width_bucket(operand, low, high, count)`: 0 for an operand before `low`, count + 1
/// at or past `high`, else the bucket it falls in (from 1), bounds in either order. In
/// double precision when any argument is one (as PostgreSQL resolves a float among
/// numbers), else in NUMERIC, each computed as PostgreSQL 15's `width_bucket_float8`
/// and `compute_bucket` compute it (the numeric division rounded at its display scale).
pub(crate) fn width_bucket(operand: &Value, low: &Value, high: &Value, count: &Value) -> DbResult<Value> {
    use crate::sql::expr::{to_num, Num};
    let count = match count {
        Value::Int(c) => *c,
        other => to_num(other)?.as_f64() as i64,
    };
    if count <= 0 {
        return Err(width_bucket_error("count must be greater than zero"));
    }
    // The count is an int4 in PostgreSQL: its last bucket + 1 must be one too.
    let out_of_range = || DbError::NumericOutOfRange("integer".into());
    if count >= i64::from(i32::MAX) {
        return Err(out_of_range());
    }
    let (operand, low, high) = (to_num(operand)?, to_num(low)?, to_num(high)?);
    let floats = [&operand, &low, &high].iter().any(|n| matches!(n, Num::F(_))) ||
        // Integers alone resolve to the double precision variant too (float8 is the
        // preferred numeric type); their results are the same either way.
        [&operand, &low, &high].iter().all(|n| matches!(n, Num::I(_)));
    if floats {
        let (x, lo, hi) = (operand.as_f64(), low.as_f64(), high.as_f64());
        if x.is_nan() || lo.is_nan() || hi.is_nan() {
            return Err(width_bucket_error("operand, lower bound, and upper bound cannot be NaN"));
        }
        if lo.is_infinite() || hi.is_infinite() {
            return Err(width_bucket_error("lower and upper bounds must be finite"));
        }
        let count_f = count as f64;
        let bucket = if lo < hi {
            if x < lo {
                0
            } else if x >= hi {
                count + 1
            } else {
                (count_f * (x - lo) / (hi - lo) + 1.0) as i64
            }
        } else if lo > hi {
            if x > lo {
                0
            } else if x <= hi {
                count + 1
            } else {
                (count_f * (lo - x) / (lo - hi) + 1.0) as i64
            }
        } else {
            return Err(width_bucket_error("lower bound cannot equal upper bound"));
        };
        return Ok(Value::Int(bucket));
    }
    let exact = |n: Num| -> DbResult<BigDecimal> {
        Ok(match n {
            Num::I(i) => crate::numeric::from_i64(i),
            Num::N(n) => n,
            Num::F(f) => crate::numeric::from_f64(f)?,
        })
    };
    let (x, lo, hi) = (exact(operand)?, exact(low)?, exact(high)?);
    let bucket = |offset: BigDecimal, width: BigDecimal| -> DbResult<i64> {
        // offset * count / width + 1, floored, the division rounded at PostgreSQL's
        // select_div_scale (its compute_bucket).
        let scaled = offset * crate::numeric::from_i64(count);
        let quotient = crate::numeric::div(&scaled, &width)? + BigDecimal::from(1);
        let floored = crate::numeric::round(&quotient, 0, crate::numeric::RoundMode::Floor)?;
        floored.to_string().parse::<i64>().map_err(|_| out_of_range())
    };
    let bucket = match lo.cmp(&hi) {
        std::cmp::Ordering::Less if x < lo => 0,
        std::cmp::Ordering::Less if x >= hi => count + 1,
        std::cmp::Ordering::Less => bucket(&x - &lo, &hi - &lo)?,
        std::cmp::Ordering::Greater if x > lo => 0,
        std::cmp::Ordering::Greater if x <= hi => count + 1,
        std::cmp::Ordering::Greater => bucket(&lo - &x, &lo - &hi)?,
        std::cmp::Ordering::Equal => return Err(width_bucket_error("lower bound cannot equal upper bound")),
    };
    Ok(Value::Int(bucket))
}

/// `width_bucket(operand, thresholds)`: PostgreSQL's binary search of the thresholds
/// (taken as sorted ascending, not checked): the number of them the operand is at or past.
pub(crate) fn width_bucket_thresholds(operand: &Value, thresholds: &Value) -> DbResult<Value> {
    let Value::Array(thresholds) = thresholds else {
        return Err(DbError::UndefinedFunction(format!(
            "width_bucket({}, {})",
            pg_type_name(operand.data_type()),
            pg_type_name(thresholds.data_type())
        )));
    };
    let items = &thresholds.items;
    if items.iter().any(Value::is_null) {
        return Err(DbError::NullValueNotAllowed("thresholds array must not contain NULLs".into()));
    }
    let (mut left, mut right) = (0, items.len());
    while left < right {
        let mid = (left + right) / 2;
        match crate::sql::expr::compare(operand, &items[mid])? {
            Some(std::cmp::Ordering::Less) => right = mid,
            _ => left = mid + 1,
        }
    }
    Ok(Value::Int(left as i64))
}

/// regexp_replace's flags: (`g`: every match, `i`: case-insensitive); `c` (case
/// sensitive, the default) is accepted, others are 22023 as in PostgreSQL.
pub(crate) fn regexp_flags(flags: &str) -> DbResult<(bool, bool)> {
    let (mut global, mut case_insensitive) = (false, false);
    for c in flags.chars() {
        match c {
            'g' => global = true,
            'i' => case_insensitive = true,
            'c' => case_insensitive = false,
            other => {
                return Err(DbError::InvalidArgument(format!(
                    "invalid regular expression option: \"{other}\""
                )))
            }
        }
    }
    Ok((global, case_insensitive))
}

/// A PostgreSQL replacement text (`\1`..`\9` the groups, `\&` the match, `\\` a
/// backslash) in the regex crate's syntax (`${1}`, `${0}`, `$$` for a dollar).
pub(crate) fn regexp_replacement(replacement: &str) -> String {
    let mut out = String::with_capacity(replacement.len());
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d @ '1'..='9') => {
                    chars.next();
                    out.push_str(&format!("${{{d}}}"));
                }
                Some('&') => {
                    chars.next();
                    out.push_str("${0}");
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

/// PostgreSQL's `format()`: `%s` a value as text (NULL as nothing), `%I` an identifier
/// quoted as needed (NULL is 22004), `%L` a literal quoted (NULL as `NULL`), `%%` a
/// percent; `%n$` takes argument n, `%-w` / `%w` pad to width w (left-aligned with `-`).
pub(crate) fn format(format: &str, args: &[Value]) -> DbResult<String> {
    let bad = |m: &str| DbError::InvalidArgument(m.to_string());
    let mut out = String::with_capacity(format.len());
    let mut chars = format.chars().peekable();
    let mut next_arg = 0usize;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // [position$][-][width]type
        let mut digits = String::new();
        while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
            digits.push(d);
            chars.next();
        }
        let mut position = None;
        if !digits.is_empty() && chars.peek() == Some(&'$') {
            chars.next();
            let n: usize = digits.parse().map_err(|_| bad("argument number is out of range"))?;
            if n == 0 {
                return Err(bad("format specifies argument 0, but arguments are numbered from 1"));
            }
            position = Some(n - 1);
            digits.clear();
        }
        let left = chars.peek() == Some(&'-');
        if left {
            chars.next();
        }
        while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
            digits.push(d);
            chars.next();
        }
        let width: usize =
            if digits.is_empty() { 0 } else { digits.parse().map_err(|_| bad("number is out of range"))? };
        let kind = chars.next().ok_or_else(|| bad("unterminated format() type specifier"))?;
        let index = position.unwrap_or(next_arg);
        next_arg = index + 1;
        let value = args.get(index).ok_or_else(|| bad("too few arguments for format()"))?;
        let text = match (kind, value) {
            ('s', Value::Null) => String::new(),
            ('s', v) => output_text(v.clone()),
            ('I', Value::Null) => {
                return Err(DbError::NullValueNotAllowed(
                    "null values cannot be formatted as an SQL identifier".into(),
                ))
            }
            ('I', v) => crate::catalog::quote_ident(&output_text(v.clone())),
            ('L', Value::Null) => "NULL".to_string(),
            ('L', v) => quote_literal(&output_text(v.clone())),
            (other, _) => return Err(bad(&format!("unrecognized format() type specifier \"{other}\""))),
        };
        let pad = width.saturating_sub(text.chars().count());
        if left {
            out.push_str(&text);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&text);
        }
    }
    Ok(out)
}

/// A text as a SQL literal: single quotes doubled; with a backslash, PostgreSQL's `E'...'`
/// form with the backslashes doubled.
fn quote_literal(text: &str) -> String {
    let quoted = text.replace('\'', "''");
    if text.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

/// A value as `concat` and `concat_ws` write it: its output form, as a client reads it
/// (a boolean is `t` or `f`, where `||` casts it to `true`).
pub(crate) fn output_text(v: Value) -> String {
    match v {
        Value::Text(t) => t,
        Value::Bool(b) => (if b { "t" } else { "f" }).into(),
        other => other.to_string(),
    }
}

/// `concat_ws(separator, values...)`: the non-NULL values joined; NULL if the separator
/// is.
pub(crate) fn concat_ws(separator: &Value, values: &[Value]) -> DbResult<Value> {
    if separator.is_null() {
        return Ok(Value::Null);
    }
    let separator = output_text(separator.clone());
    let mut out = String::new();
    let mut first = true;
    for v in values {
        if v.is_null() {
            continue;
        }
        let text = output_text(v.clone());
        if !first {
            out.push_str(&separator);
        }
        out.push_str(&text);
        first = false;
        if out.len() > MAX_RESULT_BYTES {
            return Err(too_long(out.len()));
        }
    }
    Ok(Value::Text(out))
}

// ---------------------------------------------------------------------------------------
// Numbers
// ---------------------------------------------------------------------------------------

/// -1, 0 or 1 as the number's sign (a float's NaN stays NaN).
pub(crate) fn sign(v: &Value) -> DbResult<Value> {
    Ok(match v {
        Value::Int(i) => Value::Int(i.signum()),
        Value::Float(f) if f.is_nan() => Value::Float(*f),
        Value::Float(f) => Value::Float(if *f > 0.0 {
            1.0
        } else if *f < 0.0 {
            -1.0
        } else {
            0.0
        }),
        Value::Numeric(n) => Value::numeric(match n.sign() {
            bigdecimal::num_bigint::Sign::Minus => BigDecimal::from(-1),
            bigdecimal::num_bigint::Sign::NoSign => BigDecimal::from(0),
            bigdecimal::num_bigint::Sign::Plus => BigDecimal::from(1),
        }),
        other => {
            return Err(DbError::UndefinedFunction(format!("sign({})", pg_type_name(other.data_type()))))
        }
    })
}

/// PostgreSQL's 2201F for the arguments a power or root has no real value for.
pub(crate) fn power(base: f64, exponent: f64) -> DbResult<f64> {
    if base == 0.0 && exponent < 0.0 {
        return Err(DbError::InvalidPowerArgument("zero raised to a negative power is undefined".into()));
    }
    if base < 0.0 && exponent.fract() != 0.0 && exponent.is_finite() {
        return Err(DbError::InvalidPowerArgument(
            "a negative number raised to a non-integer power yields a complex result".into(),
        ));
    }
    let result = base.powf(exponent);
    if result.is_infinite() && base.is_finite() && exponent.is_finite() {
        return Err(DbError::NumericOutOfRange("value".into()));
    }
    Ok(result)
}

pub(crate) fn sqrt(x: f64) -> DbResult<f64> {
    if x < 0.0 {
        return Err(DbError::InvalidPowerArgument("cannot take square root of a negative number".into()));
    }
    Ok(x.sqrt())
}

/// `similar_to_escape(pattern, escape)`: the SQL regular expression `pattern` (SIMILAR
/// TO's) as the POSIX one matching the same whole strings, as PostgreSQL's
/// `similar_escape_internal` writes it: `^(?:...)$` around it, `%` as `.*`, `_` as `.`,
/// `(` as a non-capturing `(?:`, the POSIX-only `\ . ^ $` escaped, a bracket expression
/// copied (a `]` first in it, or after its `^`, is a member), the escape character
/// (`\` when None; none when empty) taking the next character literally, and its
/// escape-double-quote separators (at most two) as the parts `substring` would split.
pub(crate) fn similar_to_escape(pattern: &str, escape: Option<&str>) -> DbResult<String> {
    let escape = match escape {
        None => Some('\\'),
        Some(e) => {
            let mut chars = e.chars();
            match (chars.next(), chars.next()) {
                (None, _) => None,
                (Some(c), None) => Some(c),
                _ => return Err(DbError::InvalidEscapeString("invalid escape string".into())),
            }
        }
    };
    let mut out = String::with_capacity(pattern.len() + 16);
    out.push_str("^(?:");
    let (mut after_escape, mut in_class) = (false, false);
    // In a bracket expression: 1 at its start, 2 after a leading `^`, 3 after that.
    let mut class_position = 0;
    let mut quotes = 0;
    for c in pattern.chars() {
        if after_escape {
            if c == '"' && !in_class {
                match quotes {
                    0 => out.push_str("){1,1}?("),
                    1 => out.push_str("){1,1}(?:"),
                    _ => return Err(DbError::InvalidUseOfEscape(
                        "SQL regular expression may not contain more than two escape-double-quote separators"
                            .into(),
                    )),
                }
                quotes += 1;
            } else {
                out.push('\\');
                out.push(c);
            }
            after_escape = false;
        } else if Some(c) == escape {
            after_escape = true;
        } else if in_class {
            if c == '\\' {
                out.push('\\');
            }
            out.push(c);
            if c == ']' && class_position > 2 {
                in_class = false;
            } else if c == '^' && class_position == 1 {
                class_position = 2;
            } else {
                class_position = 3;
            }
        } else {
            match c {
                '[' => {
                    out.push('[');
                    in_class = true;
                    class_position = 1;
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '\\' | '.' | '^' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
    }
    out.push_str(")$");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instr_searches_forwards_and_backwards_as_oracle_does() {
        // Oracle's documented examples.
        assert_eq!(instr("CORPORATE FLOOR", "OR", 3, 2).unwrap(), 14);
        assert_eq!(instr("CORPORATE FLOOR", "OR", -3, 2).unwrap(), 2);
        assert_eq!(instr("CORPORATE FLOOR", "OR", 1, 1).unwrap(), 2);
        assert_eq!(instr("aaa", "aa", 1, 2).unwrap(), 2, "occurrences overlap");
        assert_eq!(instr("abc", "z", 1, 1).unwrap(), 0);
        assert_eq!(instr("abc", "a", 0, 1).unwrap(), 0);
        assert_eq!(instr("abc", "a", 9, 1).unwrap(), 0);
        assert_eq!(instr("héllo", "l", -1, 1).unwrap(), 4);
        assert_eq!(instr("abc", "a", 1, 0).unwrap_err().sqlstate(), "22023");
    }

    #[test]
    fn split_part_counts_fields_from_either_end() {
        assert_eq!(split_part("a,b,c", ",", 2).unwrap(), "b");
        assert_eq!(split_part("a,b,c", ",", -1).unwrap(), "c");
        assert_eq!(split_part("a,b,c", ",", 4).unwrap(), "");
        assert_eq!(split_part("a,b,c", ",", -4).unwrap(), "");
        assert_eq!(split_part("abc", "", 1).unwrap(), "abc");
        assert_eq!(split_part("abc", "", 2).unwrap(), "");
        assert_eq!(split_part("a,b", ",", 0).unwrap_err().sqlstate(), "22023");
    }

    #[test]
    fn replace_refuses_a_result_over_the_limit_before_building_it() {
        let big = "x".repeat(1 << 20);
        let err = replace(&big, "x", &"y".repeat(512)).unwrap_err();
        assert_eq!(err.sqlstate(), "54000", "{err}");
        assert_eq!(replace("abcabc", "b", "XY").unwrap(), "aXYcaXYc");
    }
}
