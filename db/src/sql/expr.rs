//! SQL expressions: compiled from `sqlparser`'s AST against one relation's columns
//! (names resolved to positions, `$n` bound to their values, constant parts folded),
//! then evaluated row by row.
//!
//! Semantics (PostgreSQL's unless noted):
//! - NULL propagates through operators and most functions; AND, OR and NOT follow
//!   three-valued logic; a WHERE keeps a row only when its condition is TRUE.
//! - INT op INT stays INT (division truncates toward zero, overflow is an error); with a
//!   NUMERIC operand (and no FLOAT) the result is an exact NUMERIC with PostgreSQL's
//!   result scale (see `numeric`); with a FLOAT operand the result is FLOAT. Division or
//!   modulo by zero is 22012.
//! - A number literal is INT when it is an integer that fits, else NUMERIC (`1.5`,
//!   `1e3`, `99999999999999999999`), as PostgreSQL types them.
//! - Text meeting a number is converted to a number, as Oracle's implicit conversion
//!   does (PostgreSQL would refuse the operator): `'5' = 5` is true, `'abc' = 5` is
//!   22P02; decimal text is read as a NUMERIC. Text meeting a boolean is read as one
//!   (`'t'`, `'yes'`, ...).
//! - Comparisons between INT and NUMERIC are exact; with a FLOAT, both sides as floats
//!   (PostgreSQL converts the numeric to float8).
//!
//! An expression is compiled once per statement; evaluation takes the row (`row`) and,
//! in a grouped query, the values of the aggregate calls (`aggs`). In a grouped query
//! the row is the group's key: `Column(i)` is the i-th GROUP BY expression.
//!
//! The functions about the server and the session (`version()`, `pg_backend_pid()`,
//! `current_setting()`) are worked out as the statement is compiled, from the session the
//! binder is given (`Binder::in_session`): their value is a literal by the time rows are
//! evaluated.

use std::cell::Cell;
use std::cmp::Ordering;

use sqlparser::ast;

use crate::database::Session;
use crate::datetime::{self, ZoneId};
use crate::error::{DbError, DbResult};
use crate::numeric::{self, NumericSpec, RoundMode};
use crate::record::{Record, RecordType, RowShape};
use crate::schema::{coerce, TableSchema};
use crate::sequences::{SequenceCall, SequenceOp};
use crate::sql::arrays;
use crate::sql::functions::{self, TrimWhere};
use crate::sql::{formatting, json_ops, temporal};
use crate::value::{CatalogType, DataType, ElemType, Value};
use bigdecimal::BigDecimal;

/// The largest string a function (repeat, rpad, lpad) builds, in characters.
const MAX_STRING_CHARS: usize = 64 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    /// `->`: a JSON value's field or element, as JSON.
    JsonGet,
    /// `->>`: the same as text.
    JsonGetText,
    /// `#>`: the value at a path, as JSON.
    JsonPath,
    /// `#>>`: the same as text.
    JsonPathText,
    /// `@>`: jsonb containment.
    Contains,
    /// `<@`: contained in.
    ContainedBy,
    /// `?`: a jsonb key (or string element) exists.
    HasKey,
    /// `&&`: two arrays have an element in common.
    Overlaps,
    /// `&`, `|`, `#`, `<<`, `>>`: the bitwise operators of the integers.
    BitAnd,
    BitOr,
    BitXor,
    ShiftLeft,
    ShiftRight,
}

impl BinOp {
    /// The operator with its operands swapped (`5 < x` is `x > 5`).
    pub(crate) fn flip(self) -> BinOp {
        match self {
            BinOp::Lt => BinOp::Gt,
            BinOp::LtEq => BinOp::GtEq,
            BinOp::Gt => BinOp::Lt,
            BinOp::GtEq => BinOp::LtEq,
            other => other,
        }
    }

    pub(crate) fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq)
    }
}

/// Scalar functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    Abs,
    Mod,
    Trunc,
    Round,
    Floor,
    Ceil,
    Sqrt,
    Power,
    Lower,
    Upper,
    Length,
    Random,
    Repeat,
    Rpad,
    Lpad,
    Concat,
    Substr,
    Coalesce,
    Nullif,
    Greatest,
    Least,
    /// `current_schema()`: always `public`, the one schema (PgJDBC's getSchema asks it).
    CurrentSchema,
    /// `date_part(field, value)` and `extract(field FROM value)`.
    DatePart,
    /// `date_trunc(field, value [, zone])`.
    DateTrunc,
    /// `value AT TIME ZONE zone`.
    AtTimeZone,
    /// `clock_timestamp()`: the clock as the call reads it (not the transaction's time).
    ClockTimestamp,
    MakeDate,
    /// `age(a [, b])`: the difference in years, months and days (b defaults to today).
    Age,
    /// `octet_length(text or bytea)`: bytes.
    OctetLength,
    /// `encode(bytea, format)`, `decode(text, format)`: hex, base64 or escape.
    Encode,
    Decode,
    /// `gen_random_uuid()`, `uuid_generate_v4()`: a new version 4 UUID each call.
    GenRandomUuid,
    /// `to_json(v)`, `to_jsonb(v)`.
    ToJson,
    ToJsonb,
    /// `json_build_object(k, v, ...)`, `jsonb_build_object(...)`.
    JsonBuildObject,
    JsonbBuildObject,
    /// `json_build_array(...)`, `jsonb_build_array(...)`.
    JsonBuildArray,
    JsonbBuildArray,
    /// `json_typeof(j)`, `jsonb_typeof(j)`.
    JsonTypeof,
    /// `json_array_length(j)`, `jsonb_array_length(j)`.
    JsonArrayLength,
    /// `btrim`, `ltrim`, `rtrim` and `TRIM([BOTH | LEADING | TRAILING] [chars] FROM s)`.
    Trim(TrimWhere),
    Replace,
    /// `strpos(s, sub)` and `POSITION(sub IN s)`.
    Strpos,
    /// Oracle's `INSTR(s, sub [, position [, occurrence]])`.
    Instr,
    ConcatWs,
    SplitPart,
    Left,
    Right,
    Initcap,
    Reverse,
    Sign,
    /// Oracle's `NVL2(value, if_not_null, if_null)` (NVL is COALESCE of two).
    Nvl2,
    /// Oracle's `DECODE(value, search, result, ... [, default])`: NULL matches NULL
    /// (PostgreSQL's two-argument `decode(text, format)` is `Decode`).
    OracleDecode,
    ToChar,
    ToDate,
    /// `to_timestamp(text, template)` and `to_timestamp(seconds since 1970)`.
    ToTimestamp,
    /// The array functions (see `arrays::call`).
    ArrayLength,
    ArrayUpper,
    ArrayLower,
    Cardinality,
    ArrayPosition,
    ArrayAppend,
    ArrayPrepend,
    ArrayCat,
    ArrayRemove,
    /// `UPDATE ... SET a[i] = x` rewritten (see `array_assign`): the array with its
    /// i-th element set.
    ArrayAssign,
    ArrayToString,
    StringToArray,
    /// `md5(text)`: the hex digest.
    Md5,
    /// `sha224(bytea)` ... `sha512(bytea)`: the digest, as a bytea.
    Sha(functions::ShaBits),
    /// `width_bucket(operand, low, high, count)`: the bucket of `count` equal ones
    /// between the bounds (0 below, count + 1 above).
    WidthBucket,
    /// A TABLESAMPLE clause's filter on its table's rows (see `tablesample`): the
    /// percentage, the seed (NULL without REPEATABLE), then the row's key columns.
    TableSample(crate::sql::tablesample::SampleMethod),
    /// `width_bucket(operand, thresholds)`: how many of the sorted thresholds are at or
    /// below the operand.
    WidthBucketThresholds,
    /// `regexp_replace(source, pattern, replacement [, flags])`.
    RegexpReplace,
    /// `similar_to_escape(pattern [, escape])`: a SQL regular expression (SIMILAR TO's)
    /// as the POSIX one that matches the same strings.
    SimilarToEscape,
    /// `format(formatstr, args...)`: `%s`, `%I`, `%L`, `%%`, positions and widths.
    Format,
}

/// The functions that read the transaction's time (see `Session::transaction_timestamp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    /// `now()`, `CURRENT_TIMESTAMP`, `transaction_timestamp()`, `statement_timestamp()`,
    /// Oracle's `SYSTIMESTAMP`: a TIMESTAMPTZ.
    Now,
    /// `LOCALTIMESTAMP`: a TIMESTAMP, the civil time in the session's zone.
    LocalTimestamp,
    /// `CURRENT_DATE`.
    CurrentDate,
    /// `CURRENT_TIME`, `LOCALTIME`: a TIME in the session's zone.
    LocalTime,
    /// Oracle's `SYSDATE`: the civil time to the second, as a TIMESTAMP.
    SysDate,
}

impl Clock {
    fn named(name: &str) -> Option<Clock> {
        Some(match name {
            "now"
            | "current_timestamp"
            | "transaction_timestamp"
            | "statement_timestamp"
            | "systimestamp" => Clock::Now,
            "localtimestamp" => Clock::LocalTimestamp,
            "current_date" => Clock::CurrentDate,
            "current_time" | "localtime" => Clock::LocalTime,
            "sysdate" => Clock::SysDate,
            _ => return None,
        })
    }

    /// The value at the transaction's time `now` (a TIMESTAMPTZ), in the session's zone.
    pub(crate) fn value(self, now: i64) -> DbResult<Value> {
        let zone = || ZoneId::current().zone();
        Ok(match self {
            Clock::Now => Value::TimestampTz(now),
            Clock::LocalTimestamp => Value::Timestamp(datetime::timestamptz_to_timestamp(now, &zone())?),
            Clock::CurrentDate => {
                Value::Date(datetime::timestamp_to_date(datetime::timestamptz_to_timestamp(now, &zone())?)?)
            }
            Clock::LocalTime => Value::Time(datetime::time_of_day(datetime::civil_in(now, &zone())?)),
            Clock::SysDate => {
                let local = datetime::timestamptz_to_timestamp(now, &zone())?;
                Value::Timestamp(local - local.rem_euclid(datetime::MICROS_PER_SECOND))
            }
        })
    }

    fn data_type(self) -> DataType {
        match self {
            Clock::Now => DataType::TimestampTz,
            Clock::LocalTimestamp | Clock::SysDate => DataType::Timestamp,
            Clock::CurrentDate => DataType::Date,
            Clock::LocalTime => DataType::Time,
        }
    }
}

impl Func {
    /// The function called `name` with `arguments` arguments (one name, two functions:
    /// `decode`), with its minimum and maximum number of arguments.
    fn lookup(name: &str, arguments: usize) -> Option<(Func, usize, usize)> {
        const MANY: usize = usize::MAX;
        Some(match name {
            "abs" => (Func::Abs, 1, 1),
            "mod" => (Func::Mod, 2, 2),
            "trunc" => (Func::Trunc, 1, 2),
            "round" => (Func::Round, 1, 2),
            "floor" => (Func::Floor, 1, 1),
            "ceil" | "ceiling" => (Func::Ceil, 1, 1),
            "sqrt" => (Func::Sqrt, 1, 1),
            "power" | "pow" => (Func::Power, 2, 2),
            "lower" => (Func::Lower, 1, 1),
            "upper" => (Func::Upper, 1, 1),
            "length" | "char_length" | "character_length" => (Func::Length, 1, 1),
            "random" => (Func::Random, 0, 0),
            "repeat" => (Func::Repeat, 2, 2),
            "rpad" => (Func::Rpad, 2, 3),
            "lpad" => (Func::Lpad, 2, 3),
            "concat" => (Func::Concat, 1, MANY),
            "substr" | "substring" => (Func::Substr, 2, 3),
            "coalesce" => (Func::Coalesce, 1, MANY),
            "nullif" => (Func::Nullif, 2, 2),
            "greatest" => (Func::Greatest, 1, MANY),
            "least" => (Func::Least, 1, MANY),
            "current_schema" => (Func::CurrentSchema, 0, 0),
            "date_part" => (Func::DatePart, 2, 2),
            "date_trunc" => (Func::DateTrunc, 2, 3),
            "clock_timestamp" => (Func::ClockTimestamp, 0, 0),
            "make_date" => (Func::MakeDate, 3, 3),
            "age" => (Func::Age, 1, 2),
            "octet_length" => (Func::OctetLength, 1, 1),
            "encode" => (Func::Encode, 2, 2),
            "decode" if arguments == 2 => (Func::Decode, 2, 2),
            "gen_random_uuid" | "uuid_generate_v4" => (Func::GenRandomUuid, 0, 0),
            "to_json" => (Func::ToJson, 1, 1),
            "to_jsonb" => (Func::ToJsonb, 1, 1),
            "json_build_object" => (Func::JsonBuildObject, 0, MANY),
            "jsonb_build_object" => (Func::JsonbBuildObject, 0, MANY),
            "json_build_array" => (Func::JsonBuildArray, 0, MANY),
            "jsonb_build_array" => (Func::JsonbBuildArray, 0, MANY),
            "json_typeof" | "jsonb_typeof" => (Func::JsonTypeof, 1, 1),
            "json_array_length" | "jsonb_array_length" => (Func::JsonArrayLength, 1, 1),
            "btrim" => (Func::Trim(TrimWhere::Both), 1, 2),
            "ltrim" => (Func::Trim(TrimWhere::Leading), 1, 2),
            "rtrim" => (Func::Trim(TrimWhere::Trailing), 1, 2),
            "replace" => (Func::Replace, 3, 3),
            "strpos" => (Func::Strpos, 2, 2),
            "instr" => (Func::Instr, 2, 4),
            "concat_ws" => (Func::ConcatWs, 1, MANY),
            "split_part" => (Func::SplitPart, 3, 3),
            "left" => (Func::Left, 2, 2),
            "right" => (Func::Right, 2, 2),
            "initcap" => (Func::Initcap, 1, 1),
            "reverse" => (Func::Reverse, 1, 1),
            "sign" => (Func::Sign, 1, 1),
            "nvl" => (Func::Coalesce, 2, 2),
            "nvl2" => (Func::Nvl2, 3, 3),
            "decode" => (Func::OracleDecode, 3, MANY),
            "to_char" => (Func::ToChar, 2, 2),
            "to_date" => (Func::ToDate, 2, 2),
            "to_timestamp" => (Func::ToTimestamp, 1, 2),
            "array_length" => (Func::ArrayLength, 2, 2),
            "array_upper" => (Func::ArrayUpper, 2, 2),
            "array_lower" => (Func::ArrayLower, 2, 2),
            "cardinality" => (Func::Cardinality, 1, 1),
            "array_position" => (Func::ArrayPosition, 2, 3),
            "array_append" => (Func::ArrayAppend, 2, 2),
            "array_prepend" => (Func::ArrayPrepend, 2, 2),
            "array_cat" => (Func::ArrayCat, 2, 2),
            "array_remove" => (Func::ArrayRemove, 2, 2),
            crate::sql::array_assign::FUNCTION => (Func::ArrayAssign, 3, 3),
            "array_to_string" => (Func::ArrayToString, 2, 3),
            "string_to_array" => (Func::StringToArray, 2, 3),
            "md5" => (Func::Md5, 1, 1),
            "sha224" => (Func::Sha(functions::ShaBits::Sha224), 1, 1),
            "sha256" => (Func::Sha(functions::ShaBits::Sha256), 1, 1),
            "sha384" => (Func::Sha(functions::ShaBits::Sha384), 1, 1),
            "sha512" => (Func::Sha(functions::ShaBits::Sha512), 1, 1),
            "width_bucket" if arguments == 2 => (Func::WidthBucketThresholds, 2, 2),
            "width_bucket" => (Func::WidthBucket, 4, 4),
            "regexp_replace" => (Func::RegexpReplace, 3, 4),
            "similar_to_escape" => (Func::SimilarToEscape, 1, 2),
            "format" => (Func::Format, 1, MANY),
            _ => return None,
        })
    }
}

/// Aggregate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// `array_agg(x [ORDER BY ...])`: the values, NULLs included, as an array.
    ArrayAgg,
    /// `string_agg(x, sep [ORDER BY ...])` and Oracle's `LISTAGG(x [, sep]) WITHIN
    /// GROUP (ORDER BY ...)`: the non-NULL texts joined, each after its own row's
    /// separator but the first.
    StringAgg,
    /// `bool_and` and its standard name `every`.
    BoolAnd,
    BoolOr,
    /// `stddev` and `stddev_samp`.
    StddevSamp,
    StddevPop,
    /// `variance` and `var_samp`.
    VarSamp,
    VarPop,
    /// `json_agg(x [ORDER BY ...])`: the values, NULLs as JSON null, as a json array in
    /// PostgreSQL's layout (`[1, 2]`, a line break before each array but the first).
    JsonAgg,
    /// `jsonb_agg(x [ORDER BY ...])`: the same as a jsonb array.
    JsonbAgg,
    /// `json_object_agg(k, v)`: a json object of the pairs, in PostgreSQL's layout
    /// (`{ "k" : v }`), every key kept; a NULL key is an error.
    JsonObjectAgg,
    /// `jsonb_object_agg(k, v)`: a jsonb object, the last value of each key kept.
    JsonbObjectAgg,
    /// An ordered-set or hypothetical-set aggregate, `name(direct) WITHIN GROUP (ORDER
    /// BY keys)`: the rows' keys kept, sorted in WITHIN GROUP's order when the group
    /// ends and read with the direct arguments (`AggCall::direct`), evaluated once per
    /// group as PostgreSQL's final functions take them.
    OrderedSet(OrderedSetFunc),
}

/// The ordered-set aggregates (PostgreSQL's `orderedsetaggs.c`): the first four skip
/// rows whose key is NULL; the hypothetical-set ones place a hypothetical row among
/// all the rows, NULLs sorted as WITHIN GROUP says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OrderedSetFunc {
    /// `percentile_cont(f)`: the value at fraction f of the rows, interpolated between
    /// the two rows around it (a double precision or an interval).
    PercentileCont(Fractions),
    /// `percentile_disc(f)`: the first row whose position reaches fraction f.
    PercentileDisc(Fractions),
    /// `mode()`: the most frequent value, the first in the sort order among equals.
    Mode,
    /// `rank(v, ...)`: 1 + the rows sorting before the hypothetical row.
    Rank,
    /// `dense_rank(v, ...)`: 1 + the distinct rows sorting before it.
    DenseRank,
    /// `percent_rank(v, ...)`: (rank - 1) / rows.
    PercentRank,
    /// `cume_dist(v, ...)`: (rows sorting before or with it + 1) / (rows + 1).
    CumeDist,
}

/// A percentile's direct argument: one fraction, or an array of them (the result an
/// array of as many values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fractions {
    One,
    Many,
}

impl OrderedSetFunc {
    /// The ordered-set aggregate called `name` (a percentile's fractions taken as one
    /// until its argument's type says otherwise), with the name as a `'static`.
    pub(crate) fn named(name: &str) -> Option<(OrderedSetFunc, &'static str)> {
        Some(match name {
            "percentile_cont" => (OrderedSetFunc::PercentileCont(Fractions::One), "percentile_cont"),
            "percentile_disc" => (OrderedSetFunc::PercentileDisc(Fractions::One), "percentile_disc"),
            "mode" => (OrderedSetFunc::Mode, "mode"),
            "rank" => (OrderedSetFunc::Rank, "rank"),
            "dense_rank" => (OrderedSetFunc::DenseRank, "dense_rank"),
            "percent_rank" => (OrderedSetFunc::PercentRank, "percent_rank"),
            "cume_dist" => (OrderedSetFunc::CumeDist, "cume_dist"),
            _ => return None,
        })
    }

    /// The hypothetical-set aggregates: as many direct arguments as keys, NULL keys kept.
    pub(crate) fn is_hypothetical(self) -> bool {
        matches!(
            self,
            OrderedSetFunc::Rank
                | OrderedSetFunc::DenseRank
                | OrderedSetFunc::PercentRank
                | OrderedSetFunc::CumeDist
        )
    }
}

impl AggFunc {
    /// The aggregate called `name` (PostgreSQL's names and Oracle's `listagg`), with
    /// the name as a `'static` (for its messages).
    pub(crate) fn named(name: &str) -> Option<(AggFunc, &'static str)> {
        const NAMES: [&str; 21] = [
            "count",
            "sum",
            "avg",
            "min",
            "max",
            "array_agg",
            "string_agg",
            "listagg",
            "bool_and",
            "every",
            "bool_or",
            "stddev",
            "stddev_samp",
            "stddev_pop",
            "variance",
            "var_samp",
            "var_pop",
            "json_agg",
            "jsonb_agg",
            "json_object_agg",
            "jsonb_object_agg",
        ];
        let name = NAMES.into_iter().find(|n| *n == name)?;
        let func = match name {
            "count" => AggFunc::Count,
            "sum" => AggFunc::Sum,
            "avg" => AggFunc::Avg,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "array_agg" => AggFunc::ArrayAgg,
            "string_agg" | "listagg" => AggFunc::StringAgg,
            "bool_and" | "every" => AggFunc::BoolAnd,
            "bool_or" => AggFunc::BoolOr,
            "stddev" | "stddev_samp" => AggFunc::StddevSamp,
            "stddev_pop" => AggFunc::StddevPop,
            "variance" | "var_samp" => AggFunc::VarSamp,
            "var_pop" => AggFunc::VarPop,
            "json_agg" => AggFunc::JsonAgg,
            "jsonb_agg" => AggFunc::JsonbAgg,
            "json_object_agg" => AggFunc::JsonObjectAgg,
            "jsonb_object_agg" => AggFunc::JsonbObjectAgg,
            _ => return None,
        };
        Some((func, name))
    }

    /// The statistics of the second moment.
    pub(crate) fn is_spread(self) -> bool {
        matches!(self, AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop)
    }

    /// The aggregates that keep their inputs and honour an `ORDER BY` in the call.
    pub(crate) fn is_collecting(self) -> bool {
        matches!(
            self,
            AggFunc::ArrayAgg
                | AggFunc::StringAgg
                | AggFunc::JsonAgg
                | AggFunc::JsonbAgg
                | AggFunc::JsonObjectAgg
                | AggFunc::JsonbObjectAgg
        )
    }
}

/// One aggregate call of a query; `Expr::Agg(i)` refers to the i-th.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AggCall {
    pub func: AggFunc,
    /// The name it was called by (`every` is bool_and's other name), for messages.
    pub name: &'static str,
    /// The argument, compiled against the input row (None for count(*)).
    pub arg: Option<Expr>,
    /// The second argument, compiled against the input row: string_agg's separator
    /// (None for LISTAGG without one) and json_object_agg's value; None for every other
    /// aggregate.
    pub second_arg: Option<Expr>,
    pub distinct: bool,
    /// `ORDER BY` inside the call (array_agg's, string_agg's), compiled against the
    /// input row.
    pub order: Vec<AggOrder>,
    /// `FILTER (WHERE ...)`: only the rows it holds for are aggregated.
    pub filter: Option<Expr>,
    /// An ordered-set aggregate's direct arguments (a percentile's fraction, a
    /// hypothetical row's values): compiled against the input row, then against the
    /// group row once the query knows its GROUP BY (`query.rs` regroups them), and
    /// evaluated on the group row as the group finishes. Empty for the other aggregates.
    pub direct: Vec<Expr>,
}

impl AggCall {
    /// Every expression of the call: over the input row the arguments, the ORDER BY
    /// keys and the FILTER; over the group row the direct arguments (a column they name
    /// is a group key's position, so a caller marking the input columns read marks at
    /// worst one too many, never too few).
    pub(crate) fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        self.arg
            .iter()
            .chain(&self.second_arg)
            .chain(self.order.iter().map(|o| &o.expr))
            .chain(&self.filter)
            .chain(&self.direct)
            .for_each(f);
    }

    /// The call with each of its expressions mapped by `f`.
    pub(crate) fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> DbResult<Expr>) -> DbResult<AggCall> {
        let mut call = self.clone();
        call.arg = self.arg.as_ref().map(&mut *f).transpose()?;
        call.second_arg = self.second_arg.as_ref().map(&mut *f).transpose()?;
        for order in &mut call.order {
            order.expr = f(&order.expr)?;
        }
        call.filter = self.filter.as_ref().map(&mut *f).transpose()?;
        call.direct = self.direct.iter().map(&mut *f).collect::<DbResult<_>>()?;
        Ok(call)
    }
}

/// One key of an aggregate's `ORDER BY`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AggOrder {
    pub expr: Expr,
    pub descending: bool,
    pub nulls_first: bool,
}

/// A compiled expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expr {
    Literal(Value),
    /// The i-th value of the row.
    Column(usize),
    /// The value of the i-th aggregate call (grouped queries).
    Agg(usize),
    /// The value of the i-th window function call of the query (`window`): a
    /// placeholder the query's compilation replaces by the row column the call's
    /// values are put in.
    Window(usize),
    /// The value of the i-th `GROUPING(...)` call of the query (`Binder::groupings`): a
    /// placeholder the query's compilation replaces by the group row's column that holds
    /// the call's bit mask for the grouping set the row belongs to.
    Grouping(usize),
    /// Bind parameter `$n` (1-based) of a compiled template, replaced by its value in
    /// `with_params` before the expression runs.
    Param(usize),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    /// `IS [NOT] TRUE/FALSE`.
    IsBool(Box<Expr>, bool, bool),
    /// `IS [NOT] DISTINCT FROM` (the flag: NOT).
    IsDistinct(Box<Expr>, Box<Expr>, bool),
    InList(Box<Expr>, Vec<Expr>, bool),
    Between(Box<Expr>, Box<Expr>, Box<Expr>, bool),
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        escape: Option<char>,
        negated: bool,
        case_insensitive: bool,
    },
    /// `~`, `~*`, `!~`, `!~*`: a POSIX regular expression match (the `regex` crate's
    /// syntax, which agrees with PostgreSQL's on the patterns clients send).
    Regex {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    Cast(Box<Expr>, DataType),
    Func(Func, Vec<Expr>),
    /// `now()`, `CURRENT_DATE` and the like in a compiled template: the transaction's
    /// time, given at each execution with the parameters (`Template::with_params`).
    /// Compiled with a session, they are literals at once.
    Clock(Clock),
    /// `nextval`, `currval`, `setval` (with its arguments): run at each evaluation, so
    /// each row gets its own value.
    Sequence(Box<SequenceCall>, Vec<Expr>),
    /// A catalog function or `reg*` cast (with its arguments): run at each evaluation
    /// against the schemas committed then (see `catalog::functions`).
    Catalog(Box<crate::catalog::CatalogCall>, Vec<Expr>),
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    /// A column of the row of an enclosing query (a correlated subquery's reference):
    /// `depth` 0 is the query the subquery is in, 1 the one around that, and so on.
    /// Replaced by the outer row's value before the subquery runs for it. `ty` is the
    /// column's type, so that what the subquery makes of it is typed where it is
    /// compiled (a LATERAL subquery's columns, a client's description of them).
    Outer {
        depth: usize,
        index: usize,
        ty: Option<DataType>,
    },
    /// A subquery; replaced by its result (a literal, a list) before the expression is
    /// evaluated, once for an uncorrelated one, for every outer row for a correlated one
    /// (see `query::Subqueries`).
    Subquery(Box<Subquery>),
    /// `lhs op ANY/ALL (values)`, a quantified comparison with its subquery's values.
    Quantified {
        lhs: Box<Expr>,
        op: BinOp,
        all: bool,
        values: Vec<Value>,
    },
    /// `(a, b, ...) = ANY (rows)`, a row constructor compared with its subquery's rows as
    /// PostgreSQL compares rows: a row equal when every pair is, unequal when some pair
    /// is, else unknown; true when some row is equal, NULL when none is but some is
    /// unknown, false otherwise (over no rows too).
    RowsAny {
        lhs: Vec<Expr>,
        rows: Vec<Vec<Value>>,
    },
    /// `lhs op ANY/ALL (array)`: the array an expression (a column, `$1`, `ARRAY[...]`).
    AnyArray {
        lhs: Box<Expr>,
        op: BinOp,
        all: bool,
        array: Box<Expr>,
    },
    /// `lhs [NOT] LIKE | ILIKE ANY | ALL (array)`: each element a LIKE pattern (with
    /// LIKE's default escape `\`), quantified as `AnyArray` is.
    LikeArray {
        lhs: Box<Expr>,
        array: Box<Expr>,
        all: bool,
        negated: bool,
        case_insensitive: bool,
    },
    /// `ARRAY[e, ...]`: its elements converted to the element type chosen at compile
    /// time (`arrays::element_type`).
    Array(ElemType, Vec<Expr>),
    /// `a[i]`.
    Subscript(Box<Expr>, Box<Expr>),
    /// `a[lo:hi]`, either bound omitted.
    Slice(Box<Expr>, Option<Box<Expr>>, Option<Box<Expr>>),
    /// `(r).field`: the field at this position of a record (see `record`), resolved by
    /// name when the query is compiled.
    Field(Box<Expr>, usize),
    /// A record made of its fields' values: a row constructor (`ROW(a, b)`, `(a, b)`) or
    /// a whole-row reference (`t` for the row of the FROM item `t`).
    Row(Box<RowExpr>),
}

/// A record's fields, and what tells a whole row that is there from none: the row of
/// the inner side of an outer join that matched nothing is NULL, not a record of NULLs
/// (PostgreSQL's whole-row reference of a NULL-extended relation).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RowExpr {
    pub ty: RecordType,
    pub fields: Vec<Expr>,
    pub present: Presence,
}

/// How a whole row beside other relations tells that it is missing.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Presence {
    /// Always there: a row constructor, a relation alone in its FROM clause.
    Always,
    /// A column that no row of the relation has NULL (a stored table's primary key's
    /// first column, or its hidden row id): NULL there means no row.
    KeyColumn(Expr),
    /// A subquery's or function's row, which has no such column: missing when every
    /// field is NULL. A row of its own whose every column is NULL reads as NULL too (it
    /// would be `(,)` in PostgreSQL, and is NULL by `IS NULL` in both).
    AnyField,
}

/// A subquery in an expression: what it is asked, and its plan.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Subquery {
    pub kind: SubqueryKind,
    pub plan: SubPlan,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SubqueryKind {
    /// `(SELECT ...)`: its one value, NULL without a row, an error with more.
    Scalar,
    /// `[NOT] EXISTS (SELECT ...)`.
    Exists { negated: bool },
    /// `lhs [NOT] IN (SELECT ...)`.
    In { lhs: Box<Expr>, negated: bool },
    /// `(a, b, ...) [NOT] IN (SELECT x, y, ...)`: a row constructor's values against
    /// each row of the subquery (as many columns as the row has).
    InRows { lhs: Vec<Expr>, negated: bool },
    /// `lhs op ANY|SOME|ALL (SELECT ...)`.
    Quantified { lhs: Box<Expr>, op: BinOp, all: bool },
    /// `ARRAY(SELECT ...)`: the one column's values in the subquery's order, as an array
    /// of the column's type (empty, not NULL, without a row).
    Array(ElemType),
}

/// A subquery's compiled plan, shared by the copies of its expression. Two are equal
/// only when they are the same plan.
#[derive(Clone)]
pub(crate) struct SubPlan(pub std::sync::Arc<crate::sql::query::QueryPlan>);

impl std::fmt::Debug for SubPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(subquery)")
    }
}

impl PartialEq for SubPlan {
    fn eq(&self, other: &SubPlan) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

// ---------------------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------------------

/// The table a statement reads: its name, its alias, its schema.
#[derive(Clone, Debug)]
pub(crate) struct Relation {
    pub name: String,
    pub alias: Option<String>,
    pub schema: std::sync::Arc<TableSchema>,
    /// A subquery in FROM or a WITH query: its plan gives the rows (`schema` describes
    /// them); None for a table.
    pub derived: Option<std::sync::Arc<crate::sql::query::QueryPlan>>,
    /// A set-returning function in FROM (`generate_series`, `unnest`): its call gives
    /// the rows; None otherwise.
    pub function: Option<std::sync::Arc<crate::sql::srf::FunctionScan>>,
}

impl Relation {
    /// Whether `qualifier` names this relation (once aliased, only the alias does).
    pub(crate) fn answers_to(&self, qualifier: &str) -> bool {
        match &self.alias {
            Some(alias) => alias == qualifier,
            // A relation of another schema answers to its name without the schema
            // (`INSERT INTO app.t ... RETURNING app.t.id`: the qualifier here is `t`).
            None => self.name == qualifier || crate::temp_tables::visible_name(&self.name) == qualifier,
        }
    }

    /// The name a query refers to it by: its alias, or its name.
    pub(crate) fn reference_name(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.name)
    }

    /// Checks the qualifier of `qualifier.*` or `qualifier.column`.
    pub(crate) fn check_qualifier(&self, qualifier: &str) -> DbResult<()> {
        if self.answers_to(qualifier) {
            Ok(())
        } else {
            Err(DbError::UnknownTable(qualifier.to_string()))
        }
    }
}

/// The relations a query's FROM clause brings into scope, their columns side by side in
/// one row: each relation's columns start at its offset. One relation (the common case)
/// sits at offset 0, so its rows are the rows the storage holds.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope {
    pub entries: Vec<ScopeEntry>,
}

#[derive(Clone, Debug)]
pub(crate) struct ScopeEntry {
    pub relation: Relation,
    pub offset: usize,
    /// Column names merged by `JOIN ... USING` / `NATURAL JOIN` on this relation's side:
    /// an unqualified reference to one of them is not ambiguous (it means this one).
    pub merged: Vec<String>,
    /// Column names merged into another relation's by `USING` / `NATURAL`: left out of
    /// `SELECT *` and of unqualified references.
    pub merged_away: Vec<String>,
    /// A LATERAL subquery (`relation.derived`): its plan reads the row of the relations
    /// before it as the outer row at depth 0 (the queries around this one at depth 1 and
    /// on), so it runs again for each row of what it is joined to.
    pub lateral: bool,
}

impl Scope {
    /// The scope of one relation, or of none (`SELECT 1`).
    pub(crate) fn of(relation: Option<&Relation>) -> Scope {
        let mut scope = Scope::default();
        if let Some(relation) = relation {
            scope.push(relation.clone());
        }
        scope
    }

    /// Adds a relation after those in scope; returns its offset.
    pub(crate) fn push(&mut self, relation: Relation) -> usize {
        let offset = self.width();
        self.entries.push(ScopeEntry {
            relation,
            offset,
            merged: Vec::new(),
            merged_away: Vec::new(),
            lateral: false,
        });
        offset
    }

    /// How many columns a row of the scope has.
    pub(crate) fn width(&self) -> usize {
        self.entries.last().map_or(0, |e| e.offset + e.relation.schema.columns.len())
    }

    /// The one relation in scope, if there is exactly one.
    pub(crate) fn single(&self) -> Option<&Relation> {
        match self.entries.as_slice() {
            [one] => Some(&one.relation),
            _ => None,
        }
    }

    /// The entries `qualifier` names (at most one: aliases are unique in a FROM clause).
    pub(crate) fn entry_named(&self, qualifier: &str) -> Option<&ScopeEntry> {
        self.entries.iter().find(|e| e.relation.answers_to(qualifier))
    }

    /// The row position of `qualifier.column` or of an unqualified `column`: Ok(None)
    /// when nothing in scope has it (an outer query may), an error when it is ambiguous
    /// or the qualifier names something else.
    pub(crate) fn resolve(&self, qualifier: Option<&str>, column: &str) -> DbResult<Option<usize>> {
        if let Some(q) = qualifier {
            let Some(entry) = self.entry_named(q) else { return Ok(None) };
            return match entry.relation.schema.column_index(column) {
                Ok(i) => {
                    crate::sql::stored_views::note_column(&entry.relation, column);
                    Ok(Some(entry.offset + i))
                }
                Err(DbError::UnknownColumn(_)) => Err(DbError::UnknownQualifiedColumn {
                    qualifier: q.to_string(),
                    column: column.to_string(),
                }),
                Err(e) => Err(e),
            };
        }
        let mut found = None;
        for entry in &self.entries {
            if entry.merged_away.iter().any(|m| m == column) {
                continue;
            }
            if let Ok(i) = entry.relation.schema.column_index(column) {
                if entry.merged.iter().any(|m| m == column) {
                    crate::sql::stored_views::note_column(&entry.relation, column);
                    return Ok(Some(entry.offset + i));
                }
                if found.is_some() {
                    return Err(DbError::AmbiguousColumn(column.to_string()));
                }
                found = Some((entry, i));
            }
        }
        Ok(found.map(|(entry, i)| {
            // A name a view's query resolves is a column the view depends on.
            crate::sql::stored_views::note_column(&entry.relation, column);
            entry.offset + i
        }))
    }

    /// The columns `SELECT *` (qualifier None) or `q.*` expands to: (name, row position).
    pub(crate) fn star(&self, qualifier: Option<&str>) -> DbResult<Vec<(String, usize)>> {
        let entries: Vec<&ScopeEntry> = match qualifier {
            Some(q) => vec![self.entry_named(q).ok_or_else(|| DbError::MissingFromEntry(q.to_string()))?],
            None => self.entries.iter().collect(),
        };
        // Columns merged by USING come first, once each (PostgreSQL's order), then the
        // others.
        let mut merged = Vec::new();
        let mut out = Vec::new();
        for entry in entries {
            // The select list's own set-returning functions (`srf`) are no part of `*`.
            if entry.relation.alias.as_deref() == Some(crate::sql::srf::SELECT_LIST_ALIAS) {
                continue;
            }
            for (i, column) in entry.relation.schema.visible_columns().iter().enumerate() {
                if qualifier.is_none() && entry.merged_away.contains(&column.name) {
                    continue;
                }
                if crate::sql::stored_views::is_unread_column(&column.name) {
                    continue;
                }
                crate::sql::stored_views::note_column(&entry.relation, &column.name);
                if qualifier.is_none() && entry.merged.contains(&column.name) {
                    merged.push((column.name.clone(), entry.offset + i));
                } else {
                    out.push((column.name.clone(), entry.offset + i));
                }
            }
        }
        merged.extend(out);
        Ok(merged)
    }

    /// The column types of a row of the scope, by position.
    pub(crate) fn types(&self) -> Vec<Option<DataType>> {
        self.entries.iter().flat_map(|e| e.relation.schema.columns.iter().map(|c| Some(c.ty))).collect()
    }

    /// The type of the column at row position `i`.
    pub(crate) fn type_at(&self, i: usize) -> Option<DataType> {
        let entry = self.entries.iter().rev().find(|e| e.offset <= i)?;
        entry.relation.schema.columns.get(i - entry.offset).map(|c| c.ty)
    }

    /// The column names of a row of the scope, by position.
    pub(crate) fn names(&self) -> Vec<String> {
        self.entries.iter().flat_map(|e| e.relation.schema.columns.iter().map(|c| c.name.clone())).collect()
    }
}

/// The n of a `$n` placeholder (1-based).
fn placeholder_index(placeholder: &str) -> DbResult<usize> {
    placeholder.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()).filter(|&n| n >= 1).ok_or_else(|| {
        DbError::Unsupported(format!("the placeholder {placeholder} (use $1, $2, ... or :name)"))
    })
}

/// The value bound to `$index`.
fn bound_value(params: &[Value], index: usize) -> DbResult<Value> {
    bound_ref(params, index).cloned()
}

fn bound_ref(params: &[Value], index: usize) -> DbResult<&Value> {
    params.get(index - 1).ok_or_else(|| DbError::BindParameter {
        index,
        problem: format!("missing ({} value(s) bound)", params.len()),
    })
}

/// An identifier as PostgreSQL folds it: unquoted lowercased, quoted kept.
pub(crate) fn ident_name(ident: &ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The last part of a (possibly schema-qualified) name.
pub(crate) fn object_name(name: &ast::ObjectName) -> DbResult<String> {
    match name.0.last().and_then(|part| part.as_ident()) {
        Some(ident) if name.0.len() <= 2 => Ok(ident_name(ident)),
        _ => Err(DbError::Unsupported(format!("the name {name}"))),
    }
}

/// Compiles AST expressions against a relation (or none: `SELECT 1`, `VALUES`), binding
/// `$n` to `params`, and collects the aggregate calls it meets when they are allowed.
pub(crate) struct Binder<'a> {
    scope: Scope,
    /// The scopes of the queries this one is a subquery of, innermost first: a name not
    /// in `scope` is looked up there, as a reference to the outer row (`Expr::Outer`).
    outer: Vec<Scope>,
    /// The session running the statement, for the functions that read it
    /// (`pg_backend_pid()`, `current_setting()`); None where there is none to ask.
    session: Option<&'a Session>,
    /// None: compiling a template, where `$n` stays `Expr::Param(n)`.
    params: Option<&'a [Value]>,
    /// The clause being compiled, when aggregates are not allowed there (for the error).
    no_aggs_in: Option<&'static str>,
    pub(crate) in_aggregate: bool,
    pub aggs: Vec<AggCall>,
    /// The arguments of each `GROUPING(...)` call met (where aggregates are allowed),
    /// compiled against the input row; the query checks each is a GROUP BY expression.
    pub groupings: Vec<Vec<Expr>>,
    /// Where window functions may be called (the select list and ORDER BY), and those
    /// met there.
    pub windows_allowed: bool,
    pub windows: Vec<crate::sql::window::WindowCall>,
    /// The SELECT's WINDOW clause, resolved (`window::named_windows`).
    pub(crate) named_windows: Vec<(String, ast::WindowSpec)>,
}

impl<'a> Binder<'a> {
    /// An expression inside an aggregate call (its arguments, ORDER BY keys, FILTER):
    /// the input row's columns, no aggregate, no window call.
    fn aggregate_argument(&mut self, e: &ast::Expr) -> DbResult<Expr> {
        self.in_aggregate = true;
        let windows_allowed = std::mem::replace(&mut self.windows_allowed, false);
        let compiled = self.compile(e).and_then(Expr::fold);
        self.in_aggregate = false;
        self.windows_allowed = windows_allowed;
        compiled
    }

    pub(crate) fn new(relation: Option<&'a Relation>, params: &'a [Value]) -> Binder<'a> {
        Binder {
            scope: Scope::of(relation),
            outer: Vec::new(),
            session: None,
            params: Some(params),
            no_aggs_in: Some("this context"),
            in_aggregate: false,
            aggs: Vec::new(),
            groupings: Vec::new(),
            windows_allowed: false,
            windows: Vec::new(),
            named_windows: Vec::new(),
        }
    }

    /// A binder that leaves `$n` as `Expr::Param(n)`: the expressions it compiles are
    /// templates for a prepared statement, given values by `Expr::with_params` at each
    /// execution (no name resolution or parse-tree walk per execution).
    pub(crate) fn template(relation: Option<&'a Relation>) -> Binder<'a> {
        Binder {
            scope: Scope::of(relation),
            outer: Vec::new(),
            session: None,
            params: None,
            no_aggs_in: Some("this context"),
            in_aggregate: false,
            aggs: Vec::new(),
            groupings: Vec::new(),
            windows_allowed: false,
            windows: Vec::new(),
            named_windows: Vec::new(),
        }
    }

    /// `new` with values, `template` without.
    pub(crate) fn for_params(relation: Option<&'a Relation>, params: Option<&'a [Value]>) -> Binder<'a> {
        match params {
            Some(params) => Binder::new(relation, params),
            None => Binder::template(relation),
        }
    }

    /// A binder over the relations of `scope`, inside queries whose scopes are `outer`
    /// (innermost first), binding `$n` to `params`.
    pub(crate) fn over(scope: Scope, outer: Vec<Scope>, params: &'a [Value]) -> Binder<'a> {
        Binder { scope, outer, ..Binder::new(None, params) }
    }

    /// The scopes a subquery of this query sees, innermost first.
    pub(crate) fn scopes_for_subquery(&self) -> Vec<Scope> {
        std::iter::once(self.scope.clone()).chain(self.outer.iter().cloned()).collect()
    }

    /// This binder, answering the session functions for `session`.
    pub(crate) fn in_session(self, session: &'a Session) -> Binder<'a> {
        Binder { session: Some(session), ..self }
    }

    /// Compiles an expression where aggregates are not allowed (`clause` names the place
    /// for the error), folding its constant parts.
    pub(crate) fn scalar(&mut self, expr: &ast::Expr, clause: &'static str) -> DbResult<Expr> {
        let saved = self.no_aggs_in.replace(clause);
        let result = self.compile(expr);
        self.no_aggs_in = saved;
        result?.fold()
    }

    /// Compiles a part of a window call (an argument, a partition or order key, a frame
    /// offset) as the clause around it allows, folding its constant parts.
    pub(crate) fn compile_window_part(&mut self, expr: &ast::Expr) -> DbResult<Expr> {
        self.compile(expr)?.fold()
    }

    /// Compiles an expression that may call aggregates, folding its constant parts.
    pub(crate) fn with_aggregates(&mut self, expr: &ast::Expr) -> DbResult<Expr> {
        let saved = self.no_aggs_in.take();
        let result = self.compile(expr);
        self.no_aggs_in = saved;
        result?.fold()
    }

    /// `(record).*` in a select list: each field of the record as an output column,
    /// named after the field (42809 for a value that is no record).
    pub(crate) fn record_fields(&mut self, record: &ast::Expr) -> DbResult<Vec<(String, Expr)>> {
        let base = self.with_aggregates(record)?;
        let base_type = self.type_of(&base);
        let Some(DataType::Record(ty)) = base_type else {
            let name = self.pg_type_oid(&base).map_or_else(|| "unknown".into(), type_oid_name);
            return Err(DbError::WrongObjectType(format!("type {name} is not composite")));
        };
        ty.field_names()
            .into_iter()
            .map(|name| {
                let field = ast::Expr::Identifier(ast::Ident::with_quote('"', name));
                Ok((name.to_string(), self.field(base.clone(), base_type, &field)?.fold()?))
            })
            .collect()
    }

    fn compile_box(&mut self, expr: &ast::Expr) -> DbResult<Box<Expr>> {
        self.compile(expr).map(Box::new)
    }

    fn compile(&mut self, expr: &ast::Expr) -> DbResult<Expr> {
        use ast::Expr as E;
        Ok(match expr {
            E::Identifier(ident) => self.column(None, ident)?,
            E::CompoundIdentifier(parts) => match parts.as_slice() {
                [qualifier, column] => self.column(Some(qualifier), column)?,
                [_schema, qualifier, column] => self.column(Some(qualifier), column)?,
                _ => return Err(DbError::Unsupported(format!("the column reference {expr}"))),
            },
            E::Value(value) => match (&value.value, self.params) {
                (ast::Value::Placeholder(p), None) => Expr::Param(placeholder_index(p)?),
                (v, _) => Expr::Literal(self.literal(v)?),
            },
            E::Nested(inner) => self.compile(inner)?,
            // `(a, b, c)`: an anonymous record (compared with another row, it is taken
            // pair by pair above).
            E::Tuple(items) => self.row_constructor(items.iter())?,
            // `t.*` where a value is wanted (`row_to_json(t.*)`, `(t.*).a`): t's whole row.
            E::QualifiedWildcard(name, _) => {
                let Some(ast::ObjectNamePart::Identifier(ident)) = name.0.last() else {
                    return Err(DbError::Unsupported(format!("the reference {name}.*")));
                };
                let qualifier = ident_name(ident);
                self.whole_row(&qualifier)?.ok_or(DbError::MissingFromEntry(qualifier))?
            }
            E::IsNull(e) => Expr::IsNull(self.compile_box(e)?, false),
            E::IsNotNull(e) => Expr::IsNull(self.compile_box(e)?, true),
            E::IsTrue(e) => Expr::IsBool(self.compile_box(e)?, true, false),
            E::IsNotTrue(e) => Expr::IsBool(self.compile_box(e)?, true, true),
            E::IsFalse(e) => Expr::IsBool(self.compile_box(e)?, false, false),
            E::IsNotFalse(e) => Expr::IsBool(self.compile_box(e)?, false, true),
            E::IsUnknown(e) => Expr::IsNull(self.compile_box(e)?, false),
            E::IsNotUnknown(e) => Expr::IsNull(self.compile_box(e)?, true),
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let (left, right) = (self.compile(a)?, self.compile(b)?);
                // A row constructor beside a record that is not one: record_eq's rules.
                if row_items(a).is_some() != row_items(b).is_some() {
                    self.check_record_operands((a, &left), (b, &right), "=")?;
                }
                Expr::IsDistinct(Box::new(left), Box::new(right), matches!(expr, E::IsNotDistinctFrom(..)))
            }
            E::InList { expr, list, negated } if row_items(expr).is_some() => {
                // `(a, b) IN ((1, 2), (3, 4))`: row equalities, OR-ed (NOT IN: negated).
                let equalities = list
                    .iter()
                    .map(|item| row_comparison(expr, &ast::BinaryOperator::Eq, item))
                    .collect::<DbResult<Vec<_>>>()?;
                let any = equalities
                    .into_iter()
                    .reduce(|a, b| binary_ast(a, ast::BinaryOperator::Or, b))
                    .ok_or_else(|| DbError::Syntax { message: "an empty IN list".into(), position: 0 })?;
                let any = self.compile(&any)?;
                if *negated {
                    Expr::Not(Box::new(any))
                } else {
                    any
                }
            }
            E::BinaryOp { left, op, right } if row_items(left).is_some() && row_items(right).is_some() => {
                let compared = self.compile(&row_comparison(left, op, right)?)?;
                match self.compile(&row_leading_bound(left, op, right))? {
                    // `(a, b) > (10, 20)` implies `a >= 10`, which is equal in every
                    // row where it is not true; as its own conjunct it lets the access
                    // planner start a key or index range there (keyset pagination).
                    Expr::Literal(Value::Bool(true)) => compared,
                    bound => Expr::Binary(BinOp::And, Box::new(bound), Box::new(compared)),
                }
            }
            // One side a row constructor, the other a record of another kind (`t =
            // ROW(1, 'x')`): PostgreSQL compares two records (record_eq, record_lt),
            // NULL fields equal and after any value, not pair by pair.
            E::BinaryOp { left, op, right } if row_items(left).is_some() || row_items(right).is_some() => {
                let (a, b) = (self.compile(left)?, self.compile(right)?);
                let compared = binary_operator(op)?;
                if !compared.is_comparison() {
                    let (l, r) = (self.operand_type_name(&a), self.operand_type_name(&b));
                    return Err(DbError::UndefinedOperator(format!("{l} {op} {r}")));
                }
                self.check_record_operands((left, &a), (right, &b), &op.to_string())?;
                Expr::Binary(compared, Box::new(a), Box::new(b))
            }
            E::InList { expr, list, negated } => {
                let compiled = list.iter().map(|e| self.compile(e)).collect::<DbResult<Vec<_>>>()?;
                let operand = self.compile(expr)?;
                // `t IN (ROW(1, 2), ...)`: each item compared with t as records are.
                for (item, compiled_item) in list.iter().zip(&compiled) {
                    if row_items(item).is_some() {
                        self.check_record_operands((expr, &operand), (item, compiled_item), "=")?;
                    }
                }
                let (list, expr) = (compiled, operand);
                let list = match self.char_type(&expr) {
                    Some(_) => list.into_iter().map(as_char_operand).collect(),
                    None => list,
                };
                // A REAL's list of integer and decimal constants has REAL as its common
                // type (PostgreSQL's select_common_type): `r IN (0.1, 0.2)` compares
                // REALs, where `r = 0.1` compares doubles.
                let real_constants = |list: &[Expr]| {
                    list.iter().all(|e| {
                        matches!(
                            e,
                            Expr::Literal(Value::Null | Value::Int(_) | Value::Numeric(_) | Value::Float4(_))
                        )
                    })
                };
                let list = match &expr {
                    Expr::Column(i)
                        if self.scope.type_at(*i) == Some(DataType::Float4) && real_constants(&list) =>
                    {
                        list.into_iter().map(|e| Expr::Cast(Box::new(e), DataType::Float4)).collect()
                    }
                    Expr::Cast(_, DataType::Float4) if real_constants(&list) => {
                        list.into_iter().map(|e| Expr::Cast(Box::new(e), DataType::Float4)).collect()
                    }
                    _ => list,
                };
                Expr::InList(Box::new(expr), list, *negated)
            }
            E::Between { expr, negated, low, high } => Expr::Between(
                self.compile_box(expr)?,
                self.compile_box(low)?,
                self.compile_box(high)?,
                *negated,
            ),
            E::BinaryOp { left, op, right } if regex_operator(op).is_some() => {
                let (negated, case_insensitive) = regex_operator(op).expect("a regex operator");
                Expr::Regex {
                    expr: self.compile_box(left)?,
                    pattern: self.compile_box(right)?,
                    negated,
                    case_insensitive,
                }
            }
            // PostgreSQL's own spelling of LIKE and ILIKE (what pg_operator lists them as).
            E::BinaryOp { left, op, right } if like_operator(op).is_some() => {
                let (negated, case_insensitive) = like_operator(op).expect("a LIKE operator");
                self.like(left, right, None, negated, case_insensitive)?
            }
            // `x COLLATE "C"`: the database compares text by its bytes, which is the C
            // collation and the default one; no other is known.
            E::Collate { expr, collation } => {
                let name = collation.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_default();
                if !matches!(name.as_str(), "default" | "C" | "POSIX" | "c" | "posix") {
                    return Err(DbError::Unsupported(format!("the collation {collation}")));
                }
                self.compile(expr)?
            }
            E::BinaryOp { left, op, right } => {
                let op = binary_operator(op)?;
                let (mut a, mut b) = (self.compile(left)?, self.compile(right)?);
                if op.is_comparison() {
                    // A CHAR(n) compared with a literal or a parameter: the literal is a
                    // CHAR too, its trailing blanks no part of it (PostgreSQL's
                    // `c = 'ab  '` is true for 'ab').
                    if self.char_type(&a).is_some() {
                        b = as_char_operand(b);
                    } else if self.char_type(&b).is_some() {
                        a = as_char_operand(a);
                    }
                }
                if op == BinOp::Concat {
                    if let Some(call) = self.array_concat(a.clone(), b.clone()) {
                        return Ok(call);
                    }
                }
                Expr::Binary(op, Box::new(a), Box::new(b))
            }
            // PostgreSQL's rewrite: `x ~ similar_to_escape(pattern, escape)`. Its regular
            // expressions let `.` match a newline; the regex crate's needs `(?s)` for that.
            E::SimilarTo { negated, expr, pattern, escape_char } => {
                let mut args = vec![self.compile(pattern)?];
                if let Some(escape) = escape_char {
                    args.push(self.compile(escape)?);
                }
                let translated = self.checked_call("similar_to_escape", Func::SimilarToEscape, args)?;
                Expr::Regex {
                    expr: self.compile_box(expr)?,
                    pattern: Box::new(Expr::Binary(
                        BinOp::Concat,
                        Box::new(Expr::Literal(Value::Text("(?s)".into()))),
                        Box::new(translated),
                    )),
                    negated: *negated,
                    case_insensitive: false,
                }
            }
            E::Like { negated, any, expr: operand, pattern, escape_char }
            | E::ILike { negated, any, expr: operand, pattern, escape_char } => {
                let case_insensitive = matches!(expr, E::ILike { .. });
                match quantified_patterns(*any, pattern) {
                    Some((all, array)) => {
                        // PostgreSQL's grammar has no ESCAPE after ANY/ALL (...).
                        if let Some(escape) = escape_char {
                            return Err(DbError::Syntax {
                                message: format!("syntax error at or near \"{escape}\""),
                                position: 0,
                            });
                        }
                        self.like_array(operand, array, all, *negated, case_insensitive)?
                    }
                    None => {
                        self.like(operand, pattern, escape_char.as_deref(), *negated, case_insensitive)?
                    }
                }
            }
            E::UnaryOp { op, expr: operand } => match op {
                ast::UnaryOperator::Minus => match operand.as_ref() {
                    E::Value(ast::ValueWithSpan { value: ast::Value::Number(digits, _), .. }) => {
                        Expr::Literal(parse_number(&format!("-{digits}"))?)
                    }
                    _ => Expr::Neg(self.compile_box(operand)?),
                },
                ast::UnaryOperator::Plus => self.compile(operand)?,
                ast::UnaryOperator::Not => Expr::Not(self.compile_box(operand)?),
                other => return Err(DbError::Unsupported(format!("the operator {other}"))),
            },
            E::Cast {
                kind: ast::CastKind::Cast | ast::CastKind::DoubleColon,
                expr,
                data_type,
                format: None,
            } => {
                let operand = self.compile(expr)?;
                self.cast_to(operand, sql_type(data_type)?)?
            }
            E::Function(function) => self.function(function)?,
            E::TypedString(typed) => {
                let ty = sql_type(&typed.data_type)?;
                let text = match &typed.value.value {
                    ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => s.clone(),
                    other => {
                        return Err(DbError::Unsupported(format!("the literal {} {other}", typed.data_type)))
                    }
                };
                Expr::Literal(coerce(Value::Text(text), ty)?)
            }
            E::Interval(interval) => self.interval_literal(interval)?,
            E::Extract { field, expr: operand, .. } => {
                let field = field.to_string().to_ascii_lowercase();
                datetime::Field::named(&field)?;
                Expr::Func(Func::DatePart, vec![Expr::Literal(Value::Text(field)), self.compile(operand)?])
            }
            E::AtTimeZone { timestamp, time_zone } => {
                Expr::Func(Func::AtTimeZone, vec![self.compile(timestamp)?, self.compile(time_zone)?])
            }
            E::Case { operand, conditions, else_result, .. } => {
                let operand = operand.as_deref().map(|e| self.compile_box(e)).transpose()?;
                let whens = conditions
                    .iter()
                    .map(|w| Ok((self.compile(&w.condition)?, self.compile(&w.result)?)))
                    .collect::<DbResult<Vec<_>>>()?;
                let otherwise = else_result.as_deref().map(|e| self.compile_box(e)).transpose()?;
                Expr::Case { operand, whens, otherwise }
            }
            E::Ceil { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) } => {
                Expr::Func(Func::Ceil, vec![self.compile(expr)?])
            }
            E::Floor { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) } => {
                Expr::Func(Func::Floor, vec![self.compile(expr)?])
            }
            E::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![self.compile(expr)?];
                args.push(match substring_from {
                    Some(from) => self.compile(from)?,
                    None => Expr::Literal(Value::Int(1)),
                });
                if let Some(count) = substring_for {
                    args.push(self.compile(count)?);
                }
                self.checked_call("substring", Func::Substr, args)?
            }
            E::Trim { expr, trim_where, trim_what, trim_characters: None } => {
                let (kind, name) = match trim_where {
                    Some(ast::TrimWhereField::Leading) => (TrimWhere::Leading, "ltrim"),
                    Some(ast::TrimWhereField::Trailing) => (TrimWhere::Trailing, "rtrim"),
                    Some(ast::TrimWhereField::Both) | None => (TrimWhere::Both, "btrim"),
                };
                let mut args = vec![self.compile(expr)?];
                if let Some(what) = trim_what {
                    args.push(self.compile(what)?);
                }
                self.checked_call(name, Func::Trim(kind), args)?
            }
            E::Position { expr, r#in } => {
                let args = vec![self.compile(r#in)?, self.compile(expr)?];
                self.checked_call("position", Func::Strpos, args)?
            }
            E::Subquery(query) => self.subquery(query, SubqueryKind::Scalar)?,
            E::Exists { subquery, negated } => {
                self.subquery(subquery, SubqueryKind::Exists { negated: *negated })?
            }
            E::InSubquery { expr, subquery, negated } if row_items(expr).is_some() => {
                let items = row_items(expr).expect("a row constructor");
                let lhs = items.iter().map(|e| self.compile(e)).collect::<DbResult<Vec<_>>>()?;
                self.subquery(subquery, SubqueryKind::InRows { lhs, negated: *negated })?
            }
            E::InSubquery { expr, subquery, negated } => {
                let lhs = self.compile_box(expr)?;
                self.subquery(subquery, SubqueryKind::In { lhs, negated: *negated })?
            }
            E::AnyOp { left, compare_op, right, .. } | E::AllOp { left, compare_op, right }
                if row_items(left).is_some() && matches!(right.as_ref(), E::Subquery(_)) =>
            {
                // `(a, b) = ANY (SELECT ...)` is IN, `(a, b) <> ALL (SELECT ...)` NOT IN.
                let all = matches!(expr, E::AllOp { .. });
                let negated = match (binary_operator(compare_op)?, all) {
                    (BinOp::Eq, false) => false,
                    (BinOp::NotEq, true) => true,
                    _ => {
                        return Err(DbError::Unsupported(format!("a row compared with {compare_op} ANY/ALL")))
                    }
                };
                let items = row_items(left).expect("a row constructor");
                let lhs = items.iter().map(|e| self.compile(e)).collect::<DbResult<Vec<_>>>()?;
                let E::Subquery(query) = right.as_ref() else { unreachable!("matched as a subquery") };
                self.subquery(query, SubqueryKind::InRows { lhs, negated })?
            }
            E::AnyOp { left, compare_op, right, .. } | E::AllOp { left, compare_op, right } => {
                let all = matches!(expr, E::AllOp { .. });
                let op = binary_operator(compare_op)?;
                if !op.is_comparison() {
                    return Err(DbError::Unsupported(format!("ANY/ALL with the operator {compare_op}")));
                }
                let lhs = self.compile_box(left)?;
                match right.as_ref() {
                    E::Subquery(query) => self.subquery(query, SubqueryKind::Quantified { lhs, op, all })?,
                    other => {
                        let array = self.compile(other)?;
                        match self.type_of(&array) {
                            Some(DataType::Array(_) | DataType::Text { .. }) | None => {}
                            Some(DataType::Catalog(c)) if c.is_vector() => {}
                            Some(_) => return Err(arrays::any_of_non_array()),
                        }
                        Expr::AnyArray { lhs, op, all, array: Box::new(array) }
                    }
                }
            }
            E::Array(ast::Array { elem, .. }) => {
                let elems = elem.iter().map(|e| self.compile(e)).collect::<DbResult<Vec<_>>>()?;
                let types: Vec<(Option<DataType>, bool)> = elems
                    .iter()
                    .map(|e| (self.type_of(e), matches!(e, Expr::Literal(Value::Text(_)))))
                    .collect();
                Expr::Array(arrays::element_type(&types)?, elems)
            }
            E::CompoundFieldAccess { root, access_chain } => {
                let (mut base, access_chain) = self.access_root(root, access_chain)?;
                for access in access_chain {
                    let base_type = self.type_of(&base);
                    if let ast::AccessExpr::Dot(field) = access {
                        base = self.field(base, base_type, field)?;
                        continue;
                    }
                    if let Some(ty) = base_type.filter(|t| !arrays::is_subscriptable(*t)) {
                        return Err(arrays::not_subscriptable(ty));
                    }
                    if matches!(base, Expr::Subscript(..) | Expr::Slice(..)) {
                        return Err(DbError::Unsupported("multidimensional arrays".into()));
                    }
                    // int2vector and oidvector count from 0: their subscripts are moved
                    // onto the arrays' count from 1.
                    let from_zero = matches!(base_type, Some(DataType::Catalog(c)) if c.is_vector());
                    let mut index = |e: &ast::Expr| -> DbResult<Box<Expr>> {
                        let i = self.compile_box(e)?;
                        Ok(match from_zero {
                            true => {
                                Box::new(Expr::Binary(BinOp::Add, i, Box::new(Expr::Literal(Value::Int(1)))))
                            }
                            false => i,
                        })
                    };
                    base = match access {
                        ast::AccessExpr::Subscript(ast::Subscript::Index { index: i }) => {
                            Expr::Subscript(Box::new(base), index(i)?)
                        }
                        ast::AccessExpr::Subscript(ast::Subscript::Slice {
                            lower_bound,
                            upper_bound,
                            stride: None,
                        }) => Expr::Slice(
                            Box::new(base),
                            lower_bound.as_ref().map(&mut index).transpose()?,
                            upper_bound.as_ref().map(&mut index).transpose()?,
                        ),
                        other => return Err(DbError::Unsupported(format!("the access {other}"))),
                    };
                }
                base
            }
            other => return Err(DbError::Unsupported(format!("the expression {other}"))),
        })
    }

    /// The start of `root.a.b[i]...`: PostgreSQL reads `t.c[i]` and `s.t.c[i]` as a
    /// subscript of the column `c` of the relation `t` (sqlparser gives the names after
    /// the first as field accesses), so leading names after an identifier that names a
    /// relation are the column reference. What is left of the chain (subscripts, and
    /// fields of a record: `(r).f`) applies to it.
    fn access_root<'c>(
        &mut self,
        root: &ast::Expr,
        chain: &'c [ast::AccessExpr],
    ) -> DbResult<(Expr, &'c [ast::AccessExpr])> {
        let dotted = |a: &ast::AccessExpr| match a {
            ast::AccessExpr::Dot(ast::Expr::Identifier(ident)) => Some(ident.clone()),
            _ => None,
        };
        if let ast::Expr::Identifier(first) = root {
            let names: Vec<ast::Ident> = chain.iter().map_while(dotted).take(2).collect();
            let relation_named = |binder: &Self, q: &ast::Ident| {
                let q = ident_name(q);
                binder.scope.entry_named(&q).is_some()
                    || binder.outer.iter().any(|s| s.entry_named(&q).is_some())
            };
            match names.as_slice() {
                // schema.table.column
                [table, column] if !relation_named(self, first) && relation_named(self, table) => {
                    return Ok((self.column(Some(table), column)?, &chain[2..]));
                }
                [column, ..] if relation_named(self, first) => {
                    return Ok((self.column(Some(first), column)?, &chain[1..]));
                }
                // Neither a relation nor a column (of a record): PostgreSQL's missing
                // FROM-clause entry.
                [column, ..] if self.column(None, first).is_err() => {
                    return Err(self
                        .column(Some(first), column)
                        .err()
                        .unwrap_or_else(|| DbError::MissingFromEntry(ident_name(first))));
                }
                _ => {}
            }
        }
        Ok((self.compile(root)?, chain))
    }

    /// `(base).field`: the field of a record, found by name in its type.
    fn field(&self, base: Expr, base_type: Option<DataType>, field: &ast::Expr) -> DbResult<Expr> {
        let ast::Expr::Identifier(ident) = field else {
            return Err(DbError::Unsupported(format!("the field access .{field}")));
        };
        // `(expr).*` anywhere but a select list's item (see `record_star`).
        if crate::sql::record_star::is_marker(ident) {
            return Err(DbError::Unsupported("row expansion via \"*\" here".into()));
        }
        let name = ident_name(ident);
        // In a view's query, a table's row has its fields' names now; the text may read
        // one by the name it had (see `whole_row`).
        let index = |ty: RecordType| {
            ty.field_index(&name).or_else(|| {
                let now = crate::sql::stored_views::column_name_now(ty.table_name()?, &name)?;
                ty.field_index(&now)
            })
        };
        match base_type {
            Some(DataType::Record(ty)) => match (index(ty), base) {
                // `(t).a` of a whole row or a row constructor: the field's own expression
                // (which reads one column, not the row).
                // A missing row's columns are NULL: its field is too.
                (Some(i), Expr::Row(row)) => Ok(row.fields[i].clone()),
                (Some(i), base) => Ok(Expr::Field(Box::new(base), i)),
                (None, _) => Err(DbError::UnknownColumn(name)),
            },
            other => Err(not_composite(other)),
        }
    }

    /// `a || b` with an array on a side whose other side's type is known: the array
    /// function it means, so that a NULL of an element type is appended as an element
    /// (`ARRAY[1] || NULL::int` is `{1,NULL}`) and one of the array type is no change.
    /// A text literal beside an array is an array literal (`ARRAY[1] || '{2,3}'`), as
    /// PostgreSQL reads it. None when no side is known to be an array.
    fn array_concat(&self, a: Expr, b: Expr) -> Option<Expr> {
        let (ta, tb) = (self.type_of(&a), self.type_of(&b));
        let as_array_literal = |e: Expr, ty: DataType| match e {
            e @ Expr::Literal(Value::Text(_)) => Expr::Cast(Box::new(e), ty),
            other => other,
        };
        Some(match (ta, tb) {
            (Some(DataType::Array(_)), Some(DataType::Array(_))) => Expr::Func(Func::ArrayCat, vec![a, b]),
            (Some(t @ DataType::Array(_)), _) if matches!(b, Expr::Literal(Value::Text(_))) => {
                Expr::Func(Func::ArrayCat, vec![a, as_array_literal(b, t)])
            }
            (_, Some(t @ DataType::Array(_))) if matches!(a, Expr::Literal(Value::Text(_))) => {
                Expr::Func(Func::ArrayCat, vec![as_array_literal(a, t), b])
            }
            (Some(DataType::Array(_)), Some(_)) => Expr::Func(Func::ArrayAppend, vec![a, b]),
            (Some(_), Some(DataType::Array(_))) => Expr::Func(Func::ArrayPrepend, vec![a, b]),
            _ => return None,
        })
    }

    /// The static type of an expression compiled in this scope.
    fn type_of(&self, e: &Expr) -> Option<DataType> {
        e.static_type(&self.scope.types(), &[])
    }

    /// The CHAR(n) type of a column or a cast that is one.
    fn char_type(&self, e: &Expr) -> Option<DataType> {
        let ty = match e {
            Expr::Column(i) => self.scope.type_at(*i),
            Expr::Cast(_, ty) => Some(*ty),
            _ => None,
        };
        ty.filter(|t| matches!(t, DataType::Char { .. }))
    }

    /// A call of catalog function `func` (or a `reg*` cast) on `args`.
    fn catalog_call(&self, func: crate::catalog::CatalogFn, args: Vec<Expr>) -> DbResult<Expr> {
        let session = self.session.ok_or_else(|| DbError::Unsupported(format!("{func:?} here")))?;
        let call = crate::catalog::CatalogCall {
            func,
            db: std::sync::Arc::downgrade(&session.db),
            user: session.entry.client().username,
            database: session.database_name(),
            settings: None,
            sid: session.entry.sid,
            path: session.path_schemas(),
        };
        Ok(Expr::Catalog(Box::new(call), args))
    }

    /// `operand::ty`. A cast to a `reg*` type looks the name up (`'t'::regclass`), and
    /// one from a `reg*` type to text prints the object's name, both in the catalog.
    fn cast_to(&self, operand: Expr, ty: DataType) -> DbResult<Expr> {
        use crate::catalog::CatalogFn;
        let from = self.type_of(&operand);
        match (from, ty) {
            (_, DataType::Catalog(c)) if c.is_oid() && c != CatalogType::Oid => {
                // A bind value typed by this cast (`CAST($1 AS regclass)`) arrives as the
                // name the client sent: looked up here, as PostgreSQL's regclassin does.
                if from == Some(ty) && !matches!(operand, Expr::Param(_)) {
                    return Ok(operand);
                }
                let call = self.catalog_call(CatalogFn::RegIn(c), vec![operand])?;
                Ok(Expr::Cast(Box::new(call), ty))
            }
            (Some(DataType::Catalog(c)), DataType::Text { .. } | DataType::Catalog(CatalogType::Name))
                if c.is_oid() && c != CatalogType::Oid =>
            {
                let call = self.catalog_call(CatalogFn::RegOut(c), vec![operand])?;
                Ok(Expr::Cast(Box::new(call), ty))
            }
            _ => Ok(Expr::Cast(Box::new(operand), ty)),
        }
    }

    /// A call of sequence `name` (as nextval's text names it: lowercased unless quoted).
    fn sequence_call(&self, op: SequenceOp, name: &str, args: Vec<Expr>) -> DbResult<Expr> {
        let session = self.session.ok_or_else(|| DbError::Unsupported("a sequence function here".into()))?;
        let name = match crate::catalog::name_parts(name).as_slice() {
            [schema, name] => session.qualified_table_name(schema, name),
            [name] => session.resolve_relation(name.clone()),
            _ => return Err(DbError::UnknownTable(name.to_string())),
        };
        session.db.sequence_schema(&name)?;
        let call = SequenceCall { op, name, db: std::sync::Arc::downgrade(&session.db) };
        Ok(Expr::Sequence(Box::new(call), args))
    }

    /// `INTERVAL '1 day'`, `INTERVAL '3' HOUR`: a constant interval.
    fn interval_literal(&mut self, interval: &ast::Interval) -> DbResult<Expr> {
        let text = match self.compile(&interval.value)?.fold()? {
            Expr::Literal(Value::Text(t)) => t,
            Expr::Literal(Value::Int(i)) => i.to_string(),
            Expr::Literal(Value::Float(f)) => f.to_string(),
            Expr::Literal(Value::Numeric(n)) => crate::numeric::to_text(&n),
            _ => return Err(DbError::Unsupported(format!("the interval {interval} (a constant only)"))),
        };
        let text = match &interval.leading_field {
            // A bare number takes the unit that follows it (`INTERVAL '3' HOUR`).
            Some(field) if text.trim().parse::<f64>().is_ok() => {
                format!("{text} {field}").to_ascii_lowercase()
            }
            _ => text,
        };
        Ok(Expr::Literal(Value::Interval(datetime::parse_interval(&text)?)))
    }

    /// A subquery of the expression being compiled, planned inside this binder's scopes.
    fn subquery(&mut self, query: &ast::Query, kind: SubqueryKind) -> DbResult<Expr> {
        let (Some(session), Some(params)) = (self.session, self.params) else {
            return Err(DbError::Unsupported(
                "a subquery here (only in queries, and in UPDATE and DELETE)".into(),
            ));
        };
        session.plan_subquery(query, params, self.scopes_for_subquery(), kind)
    }

    /// `ARRAY(SELECT ...)`: planned as any subquery, then typed by its one column (an
    /// element type arrays hold, else 0A000; a column of unknown type makes text[]).
    fn array_subquery(&mut self, query: &ast::Query) -> DbResult<Expr> {
        let planned = self.subquery(query, SubqueryKind::Array(ElemType::Text))?;
        let Expr::Subquery(mut sub) = planned else { unreachable!("a subquery plans to Expr::Subquery") };
        let column_type = sub.plan.0.columns().first().and_then(|c| c.ty);
        let elem = arrays::element_type(&[(column_type, false)])?;
        sub.kind = SubqueryKind::Array(elem);
        Ok(Expr::Subquery(sub))
    }

    /// The system column `tableoid` of the stored table or catalog relation `qualifier`
    /// names (or of the only relation in FROM): the relation's OID, as every row of it
    /// gives in PostgreSQL (psql joins pg_description on it). None where the name is a
    /// column of its own, or the relation a subquery or a function.
    fn table_oid(&self, qualifier: Option<&str>) -> DbResult<Option<i64>> {
        let entry = match qualifier {
            Some(q) => self.scope.entry_named(q),
            None => match self.scope.entries.as_slice() {
                [only] => Some(only),
                _ => None,
            },
        };
        let Some(entry) = entry else { return Ok(None) };
        let relation = &entry.relation;
        if relation.derived.is_some()
            || relation.function.is_some()
            || relation.schema.column_index("tableoid").is_ok()
        {
            return Ok(None);
        }
        let Some(session) = self.session else { return Ok(None) };
        crate::catalog::relation_oid(&session.db, &relation.name)
    }

    /// A column reference; an error names its place in the text (the qualifier's, as
    /// PostgreSQL points at the start of the reference).
    fn column(&self, qualifier: Option<&ast::Ident>, column: &ast::Ident) -> DbResult<Expr> {
        let start = qualifier.unwrap_or(column).span.start;
        self.column_unplaced(qualifier, column).map_err(|e| e.at(start.line, start.column))
    }

    fn column_unplaced(&self, qualifier: Option<&ast::Ident>, column: &ast::Ident) -> DbResult<Expr> {
        let name = ident_name(column);
        let qualifier = qualifier.map(ident_name);
        if name == "tableoid" {
            if let Some(oid) = self.table_oid(qualifier.as_deref())? {
                return Ok(Expr::Cast(
                    Box::new(Expr::Literal(Value::Int(oid))),
                    DataType::Catalog(CatalogType::Oid),
                ));
            }
        }
        if let Some(i) = self.scope.resolve(qualifier.as_deref(), &name)? {
            return Ok(Expr::Column(i));
        }
        for (depth, scope) in self.outer.iter().enumerate() {
            if let Some(index) = scope.resolve(qualifier.as_deref(), &name)? {
                return Ok(Expr::Outer { depth, index, ty: scope.type_at(index) });
            }
        }
        // Oracle's `seq.NEXTVAL` and `seq.CURRVAL`.
        if let (Some(sequence), Some(session)) = (&qualifier, self.session) {
            let op = match name.as_str() {
                "nextval" => Some(SequenceOp::Next),
                "currval" => Some(SequenceOp::Current),
                _ => None,
            };
            if let Some(op) = op.filter(|_| session.db.sequence_schema(sequence).is_ok()) {
                return self.sequence_call(op, &format!("\"{}\"", sequence.replace('"', "\"\"")), Vec::new());
            }
        }
        let known = |q: &str| {
            self.scope.entry_named(q).is_some()
                || self.outer.iter().any(|scope| scope.entry_named(q).is_some())
        };
        Err(match qualifier {
            Some(q) if !known(&q) => DbError::MissingFromEntry(q),
            Some(qualifier) => DbError::UnknownQualifiedColumn { qualifier, column: name },
            None => match self.whole_row(&name)? {
                Some(row) => return Ok(row),
                None => DbError::UnknownColumn(name),
            },
        })
    }

    /// The whole row of the FROM item `name` (in this query or an enclosing one) as a
    /// record of its visible columns, as PostgreSQL reads a FROM item's name where a
    /// value is wanted; None when no FROM item is so named.
    fn whole_row(&self, name: &str) -> DbResult<Option<Expr>> {
        let (scope, depth) = match self.scope.entry_named(name) {
            Some(_) => (&self.scope, None),
            None => match self.outer.iter().enumerate().find(|(_, s)| s.entry_named(name).is_some()) {
                Some((depth, scope)) => (scope, Some(depth)),
                None => return Ok(None),
            },
        };
        let entry = scope.entry_named(name).expect("found above");
        let place = |index: usize| match depth {
            None => Expr::Column(index),
            Some(depth) => Expr::Outer { depth, index, ty: scope.type_at(index) },
        };
        let columns = scope.star(Some(name))?;
        let types = columns.iter().map(|(_, i)| scope.type_at(*i)).collect();
        let fields = columns.iter().map(|(_, i)| place(*i)).collect();
        let relation = &entry.relation;
        let stored = relation.derived.is_none() && relation.function.is_none();
        // A stored table's or a view's row is of the type named after it; a subquery's,
        // a WITH query's or a function's is an anonymous record.
        let table = (stored || relation.schema.view.is_some()).then(|| relation.name.clone());
        // In a view's query, a renamed column is known by the name the text wrote, but
        // the row's field has the name it has now, as the row type of PostgreSQL's.
        let names = columns
            .into_iter()
            .map(|(n, _)| crate::sql::stored_views::column_name_now(&relation.name, &n).unwrap_or(n))
            .collect();
        let shape = RowShape::intern(names, types, table)?;
        // Beside another relation, the row may be the NULL extension of an outer join:
        // a stored row's key column is never NULL otherwise.
        let present = match (scope.entries.len() > 1, stored) {
            (false, _) => Presence::Always,
            (true, true) => match relation.schema.primary_key.first() {
                Some(&key) => Presence::KeyColumn(place(entry.offset + key)),
                None => Presence::AnyField,
            },
            (true, false) => Presence::AnyField,
        };
        Ok(Some(Expr::Row(Box::new(RowExpr { ty: RecordType::Row(shape), fields, present }))))
    }

    /// `pg_typeof(e)`: the type of its argument as a `regtype`, known when the query is
    /// compiled. A quoted literal or NULL has no type yet (PostgreSQL's `unknown`); a
    /// cast names its type as written (`1::int` is an integer though the database keeps
    /// every integer as a bigint); an integer is an integer while it fits 4 bytes, as
    /// PostgreSQL types a literal and a column declared INTEGER.
    fn pg_typeof(&mut self, args: &[Option<&ast::Expr>]) -> DbResult<Expr> {
        let [Some(arg)] = args else { return Err(wrong_arguments("pg_typeof", args.len())) };
        let oid = self.written_type_oid(arg)?;
        Ok(Expr::Cast(Box::new(Expr::Literal(Value::Int(oid))), DataType::Catalog(CatalogType::RegType)))
    }

    /// The OID of the PostgreSQL type of the expression as written (see `pg_typeof`).
    fn written_type_oid(&mut self, mut arg: &ast::Expr) -> DbResult<i64> {
        while let ast::Expr::Nested(inner) = arg {
            arg = inner;
        }
        let unknown = 705;
        let oid = match arg {
            ast::Expr::Value(v) if !matches!(v.value, ast::Value::Number(..) | ast::Value::Boolean(_)) => {
                match v.value {
                    ast::Value::Placeholder(_) => {
                        crate::catalog::type_oid(DataType::Text { max_chars: None })
                    }
                    _ => unknown,
                }
            }
            ast::Expr::Cast { data_type, .. } => {
                self.compile(arg)?;
                match crate::catalog::type_named(&data_type.to_string()) {
                    // `float(p)` is named as float8 whatever p, but a REAL up to 24.
                    Some(oid) if sql_type(data_type).ok() != Some(DataType::Float4) => oid,
                    _ => crate::catalog::type_oid(sql_type(data_type)?),
                }
            }
            _ => {
                let e = self.compile(arg)?;
                self.pg_type_oid(&e).unwrap_or(unknown)
            }
        };
        Ok(oid)
    }

    /// The PostgreSQL types of a record operand's fields, as record_eq reads them: a row
    /// constructor's items as written (a quoted literal or NULL is `unknown`), a whole
    /// row's columns as declared; None when the operand is no record. The flag says
    /// whether the types are exact: a record of another kind knows its fields' types
    /// only as the database keeps them (every integer a bigint).
    fn record_field_oids(
        &mut self,
        written: &ast::Expr,
        compiled: &Expr,
    ) -> DbResult<Option<(Vec<i64>, bool)>> {
        if let Some(items) = row_items(written) {
            let oids = items.into_iter().map(|item| self.written_type_oid(item)).collect::<DbResult<_>>()?;
            return Ok(Some((oids, true)));
        }
        Ok(match compiled {
            Expr::Row(row) => {
                let unknown = 705;
                Some((row.fields.iter().map(|f| self.pg_type_oid(f).unwrap_or(unknown)).collect(), true))
            }
            other => match self.type_of(other) {
                Some(DataType::Record(ty)) => Some((
                    ty.field_types().into_iter().map(|t| t.map_or(705, crate::catalog::type_oid)).collect(),
                    false,
                )),
                _ => None,
            },
        })
    }

    /// The type of an operand as PostgreSQL's `operator does not exist` names it: a
    /// table's row by the table's name, another record as `record`.
    fn operand_type_name(&self, e: &Expr) -> String {
        match self.type_of(e) {
            Some(DataType::Record(ty)) => ty.table_name().unwrap_or("record").to_string(),
            _ => self.pg_type_oid(e).map_or_else(|| "unknown".into(), type_oid_name),
        }
    }

    /// The checks of two records compared as wholes (record_eq and record_cmp): both are
    /// records (else 42883, no such operator), of as many fields (42804), each pair of
    /// one type (42804, PostgreSQL's `cannot compare dissimilar column types`).
    /// PostgreSQL makes the last two checks as it compares a pair of rows, so a query
    /// that compares none does not fail there; here they fail as the query is compiled.
    fn check_record_operands(
        &mut self,
        (left, a): (&ast::Expr, &Expr),
        (right, b): (&ast::Expr, &Expr),
        op: &str,
    ) -> DbResult<()> {
        let (l, r) = (self.record_field_oids(left, a)?, self.record_field_oids(right, b)?);
        let ((l, l_exact), (r, r_exact)) = match (l, r) {
            (Some(l), Some(r)) => (l, r),
            _ => {
                let (l, r) = (self.operand_type_name(a), self.operand_type_name(b));
                return Err(DbError::UndefinedOperator(format!("{l} {op} {r}")));
            }
        };
        if l.len() != r.len() {
            return Err(DbError::TypeConflict(
                "cannot compare record types with different numbers of columns".into(),
            ));
        }
        let integer = |oid: i64| matches!(oid, 20 | 21 | 23);
        for (i, (&x, &y)) in l.iter().zip(&r).enumerate() {
            let alike = x == y || (!(l_exact && r_exact) && integer(x) && integer(y));
            if !alike {
                return Err(DbError::TypeConflict(format!(
                    "cannot compare dissimilar column types {} and {} at record column {}",
                    type_oid_name(x),
                    type_oid_name(y),
                    i + 1
                )));
            }
        }
        Ok(())
    }

    /// The OID of the PostgreSQL type of `e`'s values, when it can be told.
    fn pg_type_oid(&self, e: &Expr) -> Option<i64> {
        let ty = match e {
            Expr::Agg(i) => crate::sql::query::aggregate_type(self.aggs.get(*i)?, &self.scope.types()),
            other => self.type_of(other),
        }?;
        Some(match ty {
            // ARRAY[1, 2] is an integer[] as its elements are integers.
            DataType::Array(ElemType::Int) => match e {
                Expr::Array(_, items) if items.iter().all(|i| self.int_width(i) == 4) => 1007,
                _ => 1016,
            },
            DataType::Int => match self.int_width(e) {
                2 => 21,
                4 => 23,
                _ => 20,
            },
            DataType::Record(ty) => match ty.table_name() {
                Some(table) => crate::catalog::object_oid(crate::catalog::ObjectKind::RowType, table),
                None => crate::catalog::type_oid(DataType::Record(ty)),
            },
            other => crate::catalog::type_oid(other),
        })
    }

    /// The width in bytes PostgreSQL gives an integer expression: a literal's that fits
    /// 4 bytes and a column's declared so is 4 (2 for SMALLINT), and arithmetic on them
    /// keeps the wider operand's; anything else (an aggregate, a function) is a bigint.
    fn int_width(&self, e: &Expr) -> u8 {
        let column_width = |scope: &Scope, i: usize| {
            let entry = scope.entries.iter().rev().find(|entry| entry.offset <= i);
            entry.map_or(8, |entry| entry.relation.schema.int_width(i - entry.offset))
        };
        match e {
            Expr::Literal(Value::Int(i)) => match i32::try_from(*i) {
                Ok(_) => 4,
                Err(_) => 8,
            },
            Expr::Column(i) => column_width(&self.scope, *i),
            Expr::Outer { depth, index, .. } => {
                self.outer.get(*depth).map_or(8, |scope| column_width(scope, *index))
            }
            Expr::Neg(a) => self.int_width(a),
            Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod, a, b) => {
                // PostgreSQL's smallint arithmetic gives a smallint; a literal beside it
                // is an integer.
                self.int_width(a).max(self.int_width(b))
            }
            _ => 8,
        }
    }

    /// `ROW(a, b)` or `(a, b)`: an anonymous record, its fields named f1, f2, ... (as
    /// `row_to_json` shows them).
    fn row_constructor<'e>(&mut self, items: impl Iterator<Item = &'e ast::Expr>) -> DbResult<Expr> {
        let fields = items.map(|e| self.compile(e)).collect::<DbResult<Vec<_>>>()?;
        let names = (1..=fields.len()).map(|i| format!("f{i}")).collect();
        let types = fields.iter().map(|e| self.type_of(e)).collect();
        let shape = RowShape::intern(names, types, None)?;
        Ok(Expr::Row(Box::new(RowExpr { ty: RecordType::Row(shape), fields, present: Presence::Always })))
    }

    fn literal(&self, value: &ast::Value) -> DbResult<Value> {
        use ast::Value as V;
        Ok(match value {
            V::Number(digits, _) => parse_number(digits)?,
            V::SingleQuotedString(s)
            | V::EscapedStringLiteral(s)
            | V::UnicodeStringLiteral(s)
            | V::NationalStringLiteral(s) => Value::Text(s.clone()),
            V::DollarQuotedString(s) => Value::Text(s.value.clone()),
            V::Boolean(b) => Value::Bool(*b),
            V::Null => Value::Null,
            V::Placeholder(p) => self.parameter(p)?,
            other => return Err(DbError::Unsupported(format!("the literal {other}"))),
        })
    }

    fn parameter(&self, placeholder: &str) -> DbResult<Value> {
        let index = placeholder_index(placeholder)?;
        let Some(params) = self.params else {
            // Only where a template needs a value at compile time (a LIKE escape): the
            // caller compiles with the values instead.
            return Err(DbError::Unsupported(format!("the placeholder {placeholder} in a template")));
        };
        bound_value(params, index)
    }

    fn like(
        &mut self,
        expr: &ast::Expr,
        pattern: &ast::Expr,
        escape: Option<&ast::Expr>,
        negated: bool,
        case_insensitive: bool,
    ) -> DbResult<Expr> {
        let escape = match escape {
            None => Some('\\'),
            Some(e) => match self.compile(e)?.fold()? {
                Expr::Literal(Value::Text(t)) => {
                    let mut chars = t.chars();
                    match (chars.next(), chars.next()) {
                        (None, _) => None,
                        (Some(c), None) => Some(c),
                        _ => {
                            return Err(DbError::Syntax {
                                message: "invalid escape string: it must be empty or one character".into(),
                                position: 0,
                            })
                        }
                    }
                }
                _ => return Err(DbError::Unsupported("a LIKE escape that is not a string literal".into())),
            },
        };
        Ok(Expr::Like {
            expr: self.compile_box(expr)?,
            pattern: self.compile_box(pattern)?,
            escape,
            negated,
            case_insensitive,
        })
    }

    /// `expr [NOT] [I]LIKE ANY | ALL (array)`: the array an expression or a subquery
    /// of one column (as `ARRAY(subquery)`), checked to be an array as `= ANY` checks it.
    fn like_array(
        &mut self,
        expr: &ast::Expr,
        array: QuantifiedPatterns,
        all: bool,
        negated: bool,
        case_insensitive: bool,
    ) -> DbResult<Expr> {
        let lhs = self.compile_box(expr)?;
        let array = match array {
            QuantifiedPatterns::Subquery(query) => self.array_subquery(query)?,
            QuantifiedPatterns::Array(e) => {
                let array = self.compile(e)?;
                match self.type_of(&array) {
                    Some(DataType::Array(_) | DataType::Text { .. }) | None => array,
                    Some(_) => return Err(arrays::any_of_non_array()),
                }
            }
        };
        Ok(Expr::LikeArray { lhs, array: Box::new(array), all, negated, case_insensitive })
    }

    /// A call's arguments compiled, after its count is checked against `min..=max`
    /// (`name(*)` is only COUNT's).
    fn call_arguments(
        &mut self,
        name: &str,
        args: Vec<Option<&ast::Expr>>,
        min: usize,
        max: usize,
    ) -> DbResult<Vec<Expr>> {
        if args.len() < min || args.len() > max {
            return Err(wrong_arguments(name, args.len()));
        }
        args.into_iter()
            .map(|arg| match arg {
                Some(e) => self.compile(e),
                None => Err(DbError::Syntax { message: format!("{name}(*) is not valid"), position: 0 }),
            })
            .collect()
    }

    /// `GROUPING(e, ...)`: allowed where aggregates are (the select list, HAVING, ORDER
    /// BY of a grouped query), its arguments recorded for the query to match against its
    /// GROUP BY; `Expr::Grouping(i)` in its place.
    fn grouping_call(&mut self, f: &ast::Function) -> DbResult<Expr> {
        if let Some(clause) = self.no_aggs_in {
            return Err(grouping_error(format!("grouping operations are not allowed in {clause}")));
        }
        if self.in_aggregate {
            return Err(grouping_error("aggregate function calls cannot be nested".into()));
        }
        let ast::FunctionArguments::List(list) = &f.args else {
            return Err(DbError::Unsupported(format!("this form of {}", f.name)));
        };
        if !list.clauses.is_empty()
            || list.duplicate_treatment.is_some()
            || f.filter.is_some()
            || f.null_treatment.is_some()
            || !f.within_group.is_empty()
            || list.args.is_empty()
        {
            return Err(DbError::Unsupported(format!("this form of {}", f.name)));
        }
        // The mask is an int4 in PostgreSQL: one bit per argument.
        if list.args.len() >= 32 {
            return Err(DbError::TooManyColumns("GROUPING must have fewer than 32 arguments".into()));
        }
        let mut args = Vec::with_capacity(list.args.len());
        for arg in &list.args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = arg else {
                return Err(DbError::Unsupported(format!("the argument {arg} of GROUPING")));
            };
            // An argument is a GROUP BY expression, read from the input row: no
            // aggregate or window call inside it.
            self.in_aggregate = true;
            let windows_allowed = std::mem::replace(&mut self.windows_allowed, false);
            let compiled = self.compile(e).and_then(Expr::fold);
            self.in_aggregate = false;
            self.windows_allowed = windows_allowed;
            args.push(compiled?);
        }
        self.groupings.push(args);
        Ok(Expr::Grouping(self.groupings.len() - 1))
    }

    /// `name(direct...) WITHIN GROUP (ORDER BY keys)`: an ordered-set or
    /// hypothetical-set aggregate, recorded as an aggregate call (`Expr::Agg(i)` in its
    /// place) whose keys are collected per group and whose direct arguments are read
    /// once the group is complete. The argument checks are PostgreSQL's: 42883 for a
    /// call no variant takes, 42804 for a hypothetical value of another type than its key.
    fn ordered_set_call(
        &mut self,
        mut func: OrderedSetFunc,
        name: &'static str,
        f: &ast::Function,
    ) -> DbResult<Expr> {
        if let Some(clause) = self.no_aggs_in {
            return Err(grouping_error(format!("aggregate functions are not allowed in {clause}")));
        }
        if self.in_aggregate {
            return Err(grouping_error("aggregate function calls cannot be nested".into()));
        }
        let direct_asts: Vec<&ast::Expr> = match &f.args {
            ast::FunctionArguments::None => Vec::new(),
            ast::FunctionArguments::List(list)
                if list.clauses.is_empty()
                    && list.duplicate_treatment.is_none()
                    && f.null_treatment.is_none() =>
            {
                list.args
                    .iter()
                    .map(|arg| match arg {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                        other => Err(DbError::Unsupported(format!("the argument {other} of {name}()"))),
                    })
                    .collect::<DbResult<_>>()?
            }
            _ => return Err(DbError::Unsupported(format!("this form of {name}() WITHIN GROUP"))),
        };
        // Both kinds of argument are compiled as an aggregate's are; the direct ones are
        // regrouped by the query.
        let mut direct = Vec::with_capacity(direct_asts.len());
        for e in direct_asts {
            direct.push(self.aggregate_argument(e)?);
        }
        let mut order = Vec::with_capacity(f.within_group.len());
        for key in &f.within_group {
            let (descending, nulls_first) = aggregate_key_direction(key, name)?;
            let expr = self.aggregate_argument(&key.expr)?;
            order.push(AggOrder { expr, descending, nulls_first });
        }
        let direct_types: Vec<Option<DataType>> = direct.iter().map(|e| self.unknown_or_type(e)).collect();
        let key_types: Vec<Option<DataType>> = order.iter().map(|o| self.unknown_or_type(&o.expr)).collect();
        let no_such_function = || {
            let shown: Vec<String> = direct_types
                .iter()
                .chain(&key_types)
                .map(|t| t.map_or_else(|| "unknown".to_string(), crate::sql::arrays::pg_name))
                .collect();
            DbError::UndefinedFunction(format!("{name}({})", shown.join(", ")))
        };
        let number = |t: &Option<DataType>| {
            matches!(t, None | Some(DataType::Int | DataType::Float | DataType::Numeric(_)))
        };
        match func {
            OrderedSetFunc::PercentileCont(_) | OrderedSetFunc::PercentileDisc(_) => {
                if direct.len() != 1 || order.len() != 1 {
                    return Err(no_such_function());
                }
                let fractions = match direct_types[0] {
                    Some(DataType::Array(
                        crate::array::ElemType::Int
                        | crate::array::ElemType::Float
                        | crate::array::ElemType::Numeric,
                    )) => Fractions::Many,
                    ref t if number(t) => Fractions::One,
                    _ => return Err(no_such_function()),
                };
                func = match func {
                    OrderedSetFunc::PercentileCont(_) => {
                        // Interpolation needs a number or an interval.
                        if !number(&key_types[0]) && key_types[0] != Some(DataType::Interval) {
                            return Err(no_such_function());
                        }
                        OrderedSetFunc::PercentileCont(fractions)
                    }
                    _ => OrderedSetFunc::PercentileDisc(fractions),
                };
            }
            OrderedSetFunc::Mode => {
                if !direct.is_empty() || order.len() != 1 {
                    return Err(no_such_function());
                }
            }
            _ => {
                if direct.len() != order.len() {
                    return Err(no_such_function());
                }
                for (i, (d, k)) in direct_types.iter().zip(&key_types).enumerate() {
                    match (d, k) {
                        (Some(d), Some(k)) => {
                            let same = match (d, k) {
                                (
                                    DataType::Text { .. } | DataType::Char { .. },
                                    DataType::Text { .. } | DataType::Char { .. },
                                ) => true,
                                _ => d.unconstrained() == k.unconstrained(),
                            };
                            let both_numbers = number(&Some(*d)) && number(&Some(*k));
                            if !(same || both_numbers) {
                                return Err(DbError::TypeConflict(format!(
                                    "WITHIN GROUP types {} and {} cannot be matched",
                                    crate::sql::arrays::pg_name(*k),
                                    crate::sql::arrays::pg_name(*d)
                                )));
                            }
                        }
                        // A quoted literal, NULL or parameter takes its key's type, as
                        // PostgreSQL resolves `unknown`.
                        (None, Some(k)) => {
                            let value = std::mem::replace(&mut direct[i], Expr::Literal(Value::Null));
                            direct[i] = self.cast_to(value, *k)?.fold()?;
                        }
                        _ => {}
                    }
                }
            }
        }
        // A percentile's fraction is a double precision (or an array of them), as
        // PostgreSQL casts it.
        if let OrderedSetFunc::PercentileCont(Fractions::One)
        | OrderedSetFunc::PercentileDisc(Fractions::One) = func
        {
            let value = std::mem::replace(&mut direct[0], Expr::Literal(Value::Null));
            direct[0] = self.cast_to(value, DataType::Float)?.fold()?;
        }
        let filter = match &f.filter {
            Some(condition) => Some(self.aggregate_argument(condition)?),
            None => None,
        };
        // A percentile's or mode's result has its key's type (`aggregate_type` reads it
        // from `arg`); a hypothetical rank's is a number whatever the keys.
        let arg = (!func.is_hypothetical()).then(|| order[0].expr.clone());
        self.aggs.push(AggCall {
            func: AggFunc::OrderedSet(func),
            name,
            arg,
            second_arg: None,
            distinct: false,
            order,
            filter,
            direct,
        });
        Ok(Expr::Agg(self.aggs.len() - 1))
    }

    /// The type an argument is known to have: None for a quoted literal, NULL or a
    /// parameter (PostgreSQL's `unknown`).
    fn unknown_or_type(&self, e: &Expr) -> Option<DataType> {
        match e {
            Expr::Literal(Value::Text(_) | Value::Null) | Expr::Param(_) => None,
            other => self.type_of(other),
        }
    }

    fn function(&mut self, f: &ast::Function) -> DbResult<Expr> {
        if crate::sql::srf::SetFunction::named_in_schema(&f.name).is_some() {
            return Err(DbError::Unsupported(format!(
                "{}() here: a set-returning function is taken in FROM or as a whole select-list item",
                f.name
            )));
        }
        let name = match f.name.0.as_slice() {
            [part] => part.as_ident().map(ident_name),
            [schema, part] if schema.as_ident().is_some_and(|s| ident_name(s) == "pg_catalog") => {
                part.as_ident().map(ident_name)
            }
            _ => None,
        }
        .ok_or_else(|| DbError::Unsupported(format!("the function {}", f.name)))?;
        if let Some(over) = &f.over {
            return self.window_function(&name, f, over);
        }
        if name == "grouping" {
            return self.grouping_call(f);
        }
        if !f.within_group.is_empty() {
            if let Some((func, name)) = OrderedSetFunc::named(&name) {
                return self.ordered_set_call(func, name, f);
            }
        }
        let named = AggFunc::named(&name);
        let aggregate = named.map(|(func, _)| func);
        let ordered_within_group = name == "listagg";
        if aggregate.is_none() && f.filter.is_some() {
            return Err(DbError::WrongObjectType(format!(
                "FILTER specified, but {name} is not an aggregate function"
            )));
        }
        if f.null_treatment.is_some() || (!ordered_within_group && !f.within_group.is_empty()) {
            return Err(DbError::Unsupported(format!("this form of {name}()")));
        }
        // `t.*` as an argument (`row_to_json(t.*)`): t's whole row, read as the
        // expression `t.*` (see `compile`).
        let star_args: Vec<ast::Expr> = match &f.args {
            ast::FunctionArguments::List(list) => list
                .args
                .iter()
                .filter_map(|arg| match arg {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::QualifiedWildcard(name)) => {
                        Some(ast::Expr::QualifiedWildcard(
                            name.clone(),
                            ast::helpers::attached_token::AttachedToken::empty(),
                        ))
                    }
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let mut star_args = star_args.iter();
        let (args, distinct) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false),
            ast::FunctionArguments::List(list) => {
                let only_order_by =
                    list.clauses.iter().all(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)));
                let ordered = aggregate.is_some_and(AggFunc::is_collecting);
                let allowed = list.clauses.is_empty() || (ordered && only_order_by);
                if !allowed {
                    return Err(DbError::Unsupported(format!("clauses in the arguments of {name}()")));
                }
                let args = list
                    .args
                    .iter()
                    .map(|arg| match arg {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(Some(e)),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => Ok(None),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::QualifiedWildcard(_)) => {
                            Ok(star_args.next())
                        }
                        other => Err(DbError::Unsupported(format!("the argument {other} of {name}()"))),
                    })
                    .collect::<DbResult<Vec<_>>>()?;
                (args, matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)))
            }
            ast::FunctionArguments::Subquery(query) if name == "array" => return self.array_subquery(query),
            ast::FunctionArguments::Subquery(_) => return Err(DbError::Unsupported("a subquery".into())),
        };
        if let Some(mut func) = aggregate {
            if let Some(clause) = self.no_aggs_in {
                return Err(grouping_error(format!("aggregate functions are not allowed in {clause}")));
            }
            if self.in_aggregate {
                return Err(grouping_error("aggregate function calls cannot be nested".into()));
            }
            let (arg, second_arg) = match (func, args.as_slice()) {
                (AggFunc::Count, [None]) if !distinct => {
                    func = AggFunc::CountStar;
                    (None, None)
                }
                (AggFunc::StringAgg, [Some(e), Some(sep)]) => {
                    (Some(self.aggregate_argument(e)?), Some(self.aggregate_argument(sep)?))
                }
                // Oracle's LISTAGG without a separator joins with none.
                (AggFunc::StringAgg, [Some(e)]) if ordered_within_group => {
                    (Some(self.aggregate_argument(e)?), None)
                }
                (AggFunc::StringAgg, _) => return Err(wrong_arguments(&name, args.len())),
                (AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg, [Some(key), Some(value)]) => {
                    (Some(self.aggregate_argument(key)?), Some(self.aggregate_argument(value)?))
                }
                (AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg, _) => {
                    return Err(wrong_arguments(&name, args.len()))
                }
                (_, [Some(e)]) => (Some(self.aggregate_argument(e)?), None),
                _ => return Err(wrong_arguments(&name, args.len())),
            };
            let mut keys: Vec<&ast::OrderByExpr> = f.within_group.iter().collect();
            if let ast::FunctionArguments::List(list) = &f.args {
                for clause in &list.clauses {
                    if let ast::FunctionArgumentClause::OrderBy(k) = clause {
                        keys.extend(k);
                    }
                }
            }
            let mut order = Vec::new();
            for key in keys {
                let (descending, nulls_first) = aggregate_key_direction(key, &name)?;
                let expr = self.aggregate_argument(&key.expr)?;
                order.push(AggOrder { expr, descending, nulls_first });
            }
            // DISTINCT keeps one of each set of arguments, so an ORDER BY key that is not
            // an argument would have no single value to sort by (PostgreSQL's rule).
            if distinct
                && order.iter().any(|o| Some(&o.expr) != arg.as_ref() && Some(&o.expr) != second_arg.as_ref())
            {
                return Err(DbError::InvalidColumnReference(
                    "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list".into(),
                ));
            }
            let filter = match &f.filter {
                Some(condition) => Some(self.aggregate_argument(condition)?),
                None => None,
            };
            let name = named.map_or("count", |(_, name)| name);
            self.aggs.push(AggCall {
                func,
                name,
                arg,
                second_arg,
                distinct,
                order,
                filter,
                direct: Vec::new(),
            });
            return Ok(Expr::Agg(self.aggs.len() - 1));
        }
        if distinct {
            return Err(DbError::Unsupported(format!("DISTINCT in {name}()")));
        }
        if let Some(value) = self.session_function(&name, &args)? {
            return Ok(value);
        }
        if let Some(op) = match name.as_str() {
            "nextval" => Some(SequenceOp::Next),
            "currval" => Some(SequenceOp::Current),
            "setval" => Some(SequenceOp::Set),
            _ => None,
        } {
            let (min, max) = if op == SequenceOp::Set { (2, 3) } else { (1, 1) };
            if args.len() < min || args.len() > max {
                return Err(wrong_arguments(&name, args.len()));
            }
            // `nextval('s'::regclass)`, as PostgreSQL prints a SERIAL's default: the name.
            let named = match args[0] {
                Some(ast::Expr::Cast { expr, data_type: ast::DataType::Regclass, .. }) => Some(expr.as_ref()),
                Some(ast::Expr::Cast { expr, data_type: ast::DataType::Custom(n, _), .. })
                    if object_name(n).is_ok_and(|n| n == "regclass") =>
                {
                    Some(expr.as_ref())
                }
                other => other,
            };
            let sequence = match named.map(|e| self.compile(e)).transpose()?.map(Expr::fold).transpose()? {
                Some(Expr::Literal(Value::Text(t))) => t,
                _ => {
                    return Err(DbError::Unsupported(format!(
                        "{name}() of a sequence not named by a constant"
                    )))
                }
            };
            let rest = args[1..]
                .iter()
                .map(|a| match a {
                    Some(e) => self.compile(e),
                    None => Err(wrong_arguments(&name, args.len())),
                })
                .collect::<DbResult<Vec<_>>>()?;
            return self.sequence_call(op, &sequence, rest);
        }
        if name == "lastval" {
            if !args.is_empty() {
                return Err(wrong_arguments(&name, args.len()));
            }
            let session = self.session.ok_or_else(|| DbError::Unsupported("lastval() here".into()))?;
            let call = SequenceCall {
                op: SequenceOp::Last,
                name: String::new(),
                db: std::sync::Arc::downgrade(&session.db),
            };
            return Ok(Expr::Sequence(Box::new(call), Vec::new()));
        }
        if let Some(clock) = Clock::named(&name) {
            // `CURRENT_TIMESTAMP(3)`, `now()`: a precision is accepted (microseconds kept).
            if args.len() > 1 || (args.len() == 1 && clock == Clock::Now && name == "now") {
                return Err(wrong_arguments(&name, args.len()));
            }
            return Ok(match (self.session, self.params) {
                (Some(session), Some(_)) => Expr::Literal(clock.value(session.transaction_timestamp())?),
                _ => Expr::Clock(clock),
            });
        }
        if let Some((func, min, max)) = crate::catalog::CatalogFn::named(&name) {
            let args = self.call_arguments(&name, args, min, max)?;
            return self.catalog_call(func, args);
        }
        if name == "row" {
            let items = args
                .iter()
                .map(|a| a.ok_or_else(|| DbError::Unsupported("* in ROW()".into())))
                .collect::<DbResult<Vec<_>>>()?;
            return self.row_constructor(items.into_iter());
        }
        if name == "row_to_json" {
            // `row_to_json(record)`: to_json of a record is the same object.
            let args = self.call_arguments(&name, args, 1, 1)?;
            return match self.type_of(&args[0]) {
                Some(DataType::Record(_)) | None => Ok(Expr::Func(Func::ToJson, args)),
                Some(_) => Err(DbError::UndefinedFunction(format!(
                    "row_to_json({})",
                    crate::catalog::format_type(self.pg_type_oid(&args[0]).unwrap_or(705), None)
                ))),
            };
        }
        if name == "pg_typeof" {
            return self.pg_typeof(&args);
        }
        // A function-style cast (`int4(x)`): the functions pg_cast names are the casts.
        if crate::catalog::CAST_FUNCTIONS.contains(&name.as_str()) {
            let mut args = self.call_arguments(&name, args, 1, 1)?;
            let type_name = ast::ObjectName::from(vec![ast::Ident::new(name.as_str())]);
            let ty = sql_type(&ast::DataType::Custom(type_name, Vec::new()))?;
            return self.cast_to(args.remove(0), ty);
        }
        let (func, min, max) =
            Func::lookup(&name, args.len()).ok_or_else(|| DbError::UndefinedFunction(format!("{name}()")))?;
        let args = self.call_arguments(&name, args, min, max)?;
        self.checked_call(&name, func, args)
    }

    /// A call of `func` (written `name`) once its arguments' types are checked (see
    /// `functions::check_arguments`).
    fn checked_call(&self, name: &str, func: Func, args: Vec<Expr>) -> DbResult<Expr> {
        let columns: Vec<Option<DataType>> = self
            .scope
            .entries
            .iter()
            .flat_map(|e| e.relation.schema.columns.iter().map(|c| Some(c.ty)))
            .collect();
        functions::check_arguments(name, func, &args, &columns)?;
        Ok(Expr::Func(func, args))
    }
}

impl Binder<'_> {
    /// The value of a call to a function about the server or the session (`version()`,
    /// `pg_backend_pid()`, `current_setting(name [, missing_ok])`), worked out once as the
    /// statement is compiled: they are stable within a statement, as in PostgreSQL. None
    /// for another function.
    ///
    /// A prepared statement's template (compiled once for many executions) refuses
    /// `current_setting()`, whose value may change between them: the statement is then
    /// compiled at each execution instead (see `Session::compiled`). `set_config()`
    /// changes a setting, which an expression cannot: the wire server runs `SELECT
    /// set_config(...)` as a statement of its own; elsewhere it is refused.
    fn session_function(&mut self, name: &str, args: &[Option<&ast::Expr>]) -> DbResult<Option<Expr>> {
        let arity = |min: usize, max: usize| {
            if args.len() < min || args.len() > max {
                Err(wrong_arguments(name, args.len()))
            } else {
                Ok(())
            }
        };
        let unavailable = || DbError::Unsupported(format!("{name}() in this statement"));
        match name {
            "version" => {
                arity(0, 0)?;
                Ok(Some(Expr::Literal(Value::Text(crate::params::version()))))
            }
            // The session's user: it owns everything (see `catalog`).
            "current_user" | "session_user" | "user" | "current_role" => {
                arity(0, 0)?;
                let session = self.session.ok_or_else(unavailable)?;
                Ok(Some(Expr::Literal(Value::Text(session.entry.client().username))))
            }
            "current_database" | "current_catalog" => {
                arity(0, 0)?;
                let session = self.session.ok_or_else(unavailable)?;
                Ok(Some(Expr::Literal(Value::Text(session.database_name()))))
            }
            // The database has no standby mode: it is never recovering while it serves.
            "pg_is_in_recovery" => {
                arity(0, 0)?;
                Ok(Some(Expr::Literal(Value::Bool(false))))
            }
            // The search path as the session has it now (`namespaces`).
            // Not in a template: the path may change between its executions.
            "current_schema" | "current_schemas" if self.params.is_none() => {
                Err(DbError::Unsupported(format!("{name}() in a compiled template")))
            }
            "current_schema" => {
                arity(0, 0)?;
                let session = self.session.ok_or_else(unavailable)?;
                let first = session.current_schemas(false).into_iter().next();
                Ok(Some(Expr::Literal(first.map_or(Value::Null, Value::Text))))
            }
            "current_schemas" => {
                arity(1, 1)?;
                let session = self.session.ok_or_else(unavailable)?;
                let implicit = match args[0].map(|a| self.compile(a)).transpose()?.map(Expr::fold).transpose()? {
                    Some(Expr::Literal(v)) => truth(&v)?,
                    _ => {
                        return Err(DbError::Unsupported(
                            "current_schemas() with an argument that is not a constant".into(),
                        ))
                    }
                };
                let Some(implicit) = implicit else { return Ok(Some(Expr::Literal(Value::Null))) };
                let names = session.current_schemas(implicit).into_iter().map(Value::Text).collect();
                Ok(Some(Expr::Literal(crate::array::Array::new(ElemType::Text, names).into_value())))
            }
            "pg_backend_pid" => {
                arity(0, 0)?;
                let session = self.session.ok_or_else(unavailable)?;
                Ok(Some(Expr::Literal(Value::Int(session.sid() as i64))))
            }
            "current_setting" => {
                arity(1, 2)?;
                if self.params.is_none() {
                    return Err(DbError::Unsupported(format!("{name}() in a compiled template")));
                }
                let session = self.session.ok_or_else(unavailable)?;
                let mut compiled = |arg: Option<&ast::Expr>| match arg {
                    Some(e) => self.compile(e)?.fold(),
                    None => Err(DbError::Syntax { message: format!("{name}(*) is not valid"), position: 0 }),
                };
                let setting = compiled(args[0])?;
                let missing_ok = match args.get(1) {
                    Some(arg) => match compiled(*arg)? {
                        Expr::Literal(v) => truth(&v)?.unwrap_or(false),
                        _ => {
                            return Err(DbError::Unsupported(format!(
                                "{name}() with a missing_ok that is not a constant"
                            )))
                        }
                    },
                    None => false,
                };
                let setting = match setting {
                    Expr::Literal(Value::Null) => return Ok(Some(Expr::Literal(Value::Null))),
                    Expr::Literal(v) => v.to_string(),
                    // A name from each row (`current_setting(s.name)` over pg_settings):
                    // looked up in the settings as they are now.
                    by_row => {
                        let mut call = self.catalog_call(crate::catalog::CatalogFn::Setting { missing_ok }, vec![by_row])?;
                        if let Expr::Catalog(call, _) = &mut call {
                            call.settings = Some(std::sync::Arc::new(session.all_settings()));
                        }
                        return Ok(Some(call));
                    }
                };
                match session.current_setting(&setting) {
                    Ok(value) => Ok(Some(Expr::Literal(Value::Text(value)))),
                    Err(DbError::UnknownParameter(_)) if missing_ok => Ok(Some(Expr::Literal(Value::Null))),
                    Err(e) => Err(e),
                }
            }
            "set_config" => Err(DbError::Unsupported(
                "set_config() inside another statement: run it alone, as SELECT set_config(name, value, is_local)"
                    .into(),
            )),
            _ => Ok(None),
        }
    }
}

/// The items of a row constructor `(a, b, ...)` (two or more items).
fn row_items(e: &ast::Expr) -> Option<Vec<&ast::Expr>> {
    match e {
        ast::Expr::Tuple(items) => Some(items.iter().collect()),
        ast::Expr::Nested(inner) => row_items(inner),
        // `ROW(a, b)`, the constructor's keyword form.
        ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("row") => match &f.args {
            ast::FunctionArguments::List(list)
                if list.clauses.is_empty() && list.duplicate_treatment.is_none() =>
            {
                list.args
                    .iter()
                    .map(|arg| match arg {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                        _ => None,
                    })
                    .collect()
            }
            _ => None,
        },
        _ => None,
    }
}

fn binary_ast(left: ast::Expr, op: ast::BinaryOperator, right: ast::Expr) -> ast::Expr {
    ast::Expr::BinaryOp { left: Box::new(left), op, right: Box::new(right) }
}

/// A comparison of two row constructors as PostgreSQL evaluates it, pair by pair:
/// `=` all pairs equal, `<>` some pair unequal, and `<`, `<=`, `>`, `>=` ordered by the
/// first unequal pair (`(a, b) < (c, d)` is `a < c OR (a = c AND b < d)`), NULL where a
/// pair decides on a NULL. 42601 for rows of other lengths.
fn row_comparison(left: &ast::Expr, op: &ast::BinaryOperator, right: &ast::Expr) -> DbResult<ast::Expr> {
    use ast::BinaryOperator as B;
    let (Some(l), Some(r)) = (row_items(left), row_items(right)) else {
        return Err(DbError::Unsupported(format!(
            "a row compared with a value that is not a row ({left} {op} {right})"
        )));
    };
    if l.len() != r.len() {
        return Err(DbError::Syntax {
            message: "unequal number of entries in row expressions".into(),
            position: 0,
        });
    }
    let pairs = l.into_iter().cloned().zip(r.into_iter().cloned());
    let join =
        |parts: Vec<ast::Expr>, with: B| parts.into_iter().reduce(|a, b| binary_ast(a, with.clone(), b));
    let combined = match op {
        B::Eq => join(pairs.map(|(a, b)| binary_ast(a, B::Eq, b)).collect(), B::And),
        B::NotEq => join(pairs.map(|(a, b)| binary_ast(a, B::NotEq, b)).collect(), B::Or),
        B::Lt | B::LtEq | B::Gt | B::GtEq => {
            let strict = match op {
                B::Lt | B::LtEq => B::Lt,
                _ => B::Gt,
            };
            let pairs: Vec<(ast::Expr, ast::Expr)> = pairs.collect();
            let last = pairs.len() - 1;
            // For each position i: the pairs before it equal, and pair i ordered (the
            // last pair by the operator itself, so `<=` admits equal rows).
            let terms = (0..pairs.len())
                .map(|i| {
                    let decisive = if i == last { op.clone() } else { strict.clone() };
                    let mut term = binary_ast(pairs[i].0.clone(), decisive, pairs[i].1.clone());
                    for (a, b) in pairs[..i].iter().rev() {
                        term = binary_ast(binary_ast(a.clone(), B::Eq, b.clone()), B::And, term);
                    }
                    ast::Expr::Nested(Box::new(term))
                })
                .collect();
            join(terms, B::Or)
        }
        other => return Err(DbError::Unsupported(format!("the operator {other} between rows"))),
    };
    Ok(ast::Expr::Nested(Box::new(combined.expect("a row has entries"))))
}

/// What a row ordering implies of its first pair: `(a, b) > (c, d)` and `>=` imply
/// `a >= c`, `<` and `<=` imply `a <= c`; `=` and `<>` nothing (`TRUE`). Where the
/// implication is not true the row comparison is false or NULL as the bound is, so
/// the two ANDed are the comparison itself.
fn row_leading_bound(left: &ast::Expr, op: &ast::BinaryOperator, right: &ast::Expr) -> ast::Expr {
    use ast::BinaryOperator as B;
    let first = |e: &ast::Expr| row_items(e).and_then(|items| items.first().map(|&item| item.clone()));
    let bound = match op {
        B::Lt | B::LtEq => B::LtEq,
        B::Gt | B::GtEq => B::GtEq,
        _ => return ast::Expr::Value(ast::Value::Boolean(true).into()),
    };
    match (first(left), first(right)) {
        (Some(a), Some(b)) => {
            binary_ast(ast::Expr::Nested(Box::new(a)), bound, ast::Expr::Nested(Box::new(b)))
        }
        _ => ast::Expr::Value(ast::Value::Boolean(true).into()),
    }
}

/// An operand compared with a CHAR(n) column: a text literal or a parameter read as a
/// CHAR (its trailing blanks dropped); anything else as it is.
fn as_char_operand(e: Expr) -> Expr {
    match e {
        Expr::Literal(Value::Text(_)) | Expr::Param(_) => {
            Expr::Cast(Box::new(e), DataType::Char { len: None })
        }
        other => other,
    }
}

/// PostgreSQL's name of the type with this OID, as its error messages print it.
fn type_oid_name(oid: i64) -> String {
    match crate::catalog::PSEUDO_TYPES.iter().find(|(o, _)| *o == oid) {
        Some((_, name)) => name.to_string(),
        None => crate::catalog::format_type(oid, None),
    }
}

fn wrong_arguments(name: &str, n: usize) -> DbError {
    DbError::UndefinedFunction(format!("{name}() with {n} argument(s)"))
}

/// A misuse of aggregates or GROUP BY (PostgreSQL's 42803).
pub(crate) fn grouping_error(message: String) -> DbError {
    DbError::Grouping(message)
}

/// Whether `op` is a regular expression match, and if so (negated, case-insensitive).
/// `OPERATOR(pg_catalog.~)`, as psql writes it, is `~`.
/// `~~` (LIKE), `~~*` (ILIKE) and their negations `!~~`, `!~~*`: (negated, case
/// insensitive).
fn like_operator(op: &ast::BinaryOperator) -> Option<(bool, bool)> {
    use ast::BinaryOperator as B;
    match op {
        B::PGLikeMatch => Some((false, false)),
        B::PGILikeMatch => Some((false, true)),
        B::PGNotLikeMatch => Some((true, false)),
        B::PGNotILikeMatch => Some((true, true)),
        _ => None,
    }
}

fn regex_operator(op: &ast::BinaryOperator) -> Option<(bool, bool)> {
    use ast::BinaryOperator as B;
    match op {
        B::PGRegexMatch => Some((false, false)),
        B::PGRegexIMatch => Some((false, true)),
        B::PGRegexNotMatch => Some((true, false)),
        B::PGRegexNotIMatch => Some((true, true)),
        B::PGCustomBinaryOperator(parts) => match parts.as_slice() {
            [schema, op] if schema == "pg_catalog" => match op.as_str() {
                "~" => Some((false, false)),
                "~*" => Some((false, true)),
                "!~" => Some((true, false)),
                "!~*" => Some((true, true)),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

fn binary_operator(op: &ast::BinaryOperator) -> DbResult<BinOp> {
    use ast::BinaryOperator as B;
    if let B::PGCustomBinaryOperator(parts) = op {
        // `OPERATOR(pg_catalog.=)` and the like: the operator itself.
        if let [schema, name] = parts.as_slice() {
            if schema == "pg_catalog" {
                let plain = match name.as_str() {
                    "=" => B::Eq,
                    "<>" | "!=" => B::NotEq,
                    "<" => B::Lt,
                    "<=" => B::LtEq,
                    ">" => B::Gt,
                    ">=" => B::GtEq,
                    "+" => B::Plus,
                    "-" => B::Minus,
                    "*" => B::Multiply,
                    "/" => B::Divide,
                    "||" => B::StringConcat,
                    _ => return Err(DbError::Unsupported(format!("the operator {op}"))),
                };
                return binary_operator(&plain);
            }
        }
    }
    Ok(match op {
        B::Plus => BinOp::Add,
        B::Minus => BinOp::Sub,
        B::Multiply => BinOp::Mul,
        B::Divide => BinOp::Div,
        B::Modulo => BinOp::Mod,
        B::StringConcat => BinOp::Concat,
        B::Eq => BinOp::Eq,
        B::NotEq => BinOp::NotEq,
        B::Lt => BinOp::Lt,
        B::LtEq => BinOp::LtEq,
        B::Gt => BinOp::Gt,
        B::GtEq => BinOp::GtEq,
        B::And => BinOp::And,
        B::Or => BinOp::Or,
        B::Arrow => BinOp::JsonGet,
        B::LongArrow => BinOp::JsonGetText,
        B::HashArrow => BinOp::JsonPath,
        B::HashLongArrow => BinOp::JsonPathText,
        B::AtArrow => BinOp::Contains,
        B::ArrowAt => BinOp::ContainedBy,
        B::Question => BinOp::HasKey,
        B::PGOverlap => BinOp::Overlaps,
        B::BitwiseAnd => BinOp::BitAnd,
        B::BitwiseOr => BinOp::BitOr,
        B::PGBitwiseXor => BinOp::BitXor,
        B::PGBitwiseShiftLeft => BinOp::ShiftLeft,
        B::PGBitwiseShiftRight => BinOp::ShiftRight,
        other => return Err(DbError::Unsupported(format!("the operator {other}"))),
    })
}

/// A number literal: INT if it is an integer that fits, NUMERIC otherwise (PostgreSQL's
/// typing of `1.5`, `1e3` and `99999999999999999999`).
pub(crate) fn parse_number(digits: &str) -> DbResult<Value> {
    if !digits.contains(['.', 'e', 'E']) {
        if let Ok(i) = digits.parse::<i64>() {
            return Ok(Value::Int(i));
        }
    }
    crate::numeric::parse(digits).map(Value::numeric)
}

/// Type names PostgreSQL, Oracle or a common extension knows and this database does not
/// keep: a feature not supported (0A000), where any other name is no type (42704).
const KNOWN_UNSUPPORTED_TYPES: &[&str] = &[
    // PostgreSQL's own.
    "timetz",
    "money",
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
    "xml",
    "bit",
    "varbit",
    "serial",
    "serial2",
    "serial4",
    "serial8",
    "smallserial",
    "bigserial",
    "tsvector",
    "tsquery",
    "point",
    "line",
    "lseg",
    "box",
    "path",
    "polygon",
    "circle",
    "int4range",
    "int8range",
    "numrange",
    "tsrange",
    "tstzrange",
    "daterange",
    "regclass",
    "regproc",
    "regtype",
    "pg_lsn",
    "txid_snapshot",
    "jsonpath",
    "record",
    "void",
    // Oracle's.
    "long",
    "binary_double",
    "binary_float",
    "blob",
    "clob",
    "nclob",
    "bfile",
    "rowid",
    "urowid",
    "xmltype",
    // Common extensions'.
    "citext",
    "hstore",
    "ltree",
    "geometry",
    "geography",
    "vector",
];

/// The column type a SQL type name stands for.
pub(crate) fn sql_type(ty: &ast::DataType) -> DbResult<DataType> {
    use ast::DataType as T;
    let length = |len: &Option<ast::CharacterLength>, default: Option<u32>| -> DbResult<Option<u32>> {
        match len {
            None => Ok(default),
            Some(ast::CharacterLength::Max) => Ok(None),
            Some(ast::CharacterLength::IntegerLength { length, .. }) => match u32::try_from(*length) {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(DbError::Syntax {
                    message: format!("invalid length {length} for type {ty}"),
                    position: 0,
                }),
            },
        }
    };
    Ok(match ty {
        T::BigInt(_)
        | T::Int8(_)
        | T::Integer(_)
        | T::Int(_)
        | T::Int4(_)
        | T::SmallInt(_)
        | T::Int2(_)
        | T::TinyInt(_)
        | T::Int16
        | T::Int32
        | T::Int64 => DataType::Int,
        // FLOAT(p) is a REAL up to 24 binary digits of precision, as in PostgreSQL.
        T::Float(ast::ExactNumberInfo::Precision(p)) if *p <= 24 => DataType::Float4,
        T::Float4 | T::Float32 | T::Real => DataType::Float4,
        T::DoublePrecision | T::Double(_) | T::Float(_) | T::Float8 | T::Float64 => DataType::Float,
        T::Numeric(info) | T::Decimal(info) | T::Dec(info) => DataType::Numeric(numeric_spec(info)?),
        T::Varchar(len) | T::CharacterVarying(len) | T::CharVarying(len) | T::Nvarchar(len) => {
            DataType::Text { max_chars: length(len, None)? }
        }
        T::Char(len) | T::Character(len) => DataType::Char { len: length(len, Some(1))? },
        T::Text | T::String(None) => DataType::Text { max_chars: None },
        T::Bool | T::Boolean => DataType::Bool,
        T::Bytea | T::Blob(_) => DataType::Bytea,
        T::Uuid => DataType::Uuid,
        T::JSON => DataType::Json,
        T::JSONB => DataType::Jsonb,
        T::Date => DataType::Date,
        T::Time(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => DataType::Time,
        T::Timestamp(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) | T::Datetime(_) => {
            DataType::Timestamp
        }
        T::Timestamp(_, ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz) => DataType::TimestampTz,
        T::Interval { .. } => DataType::Interval,
        T::Regclass => DataType::Catalog(CatalogType::RegClass),
        // `int[]`, `int[3]` and `int ARRAY` (a declared size is not enforced, as in
        // PostgreSQL); `int[][]` is more than one dimension.
        T::Array(
            ast::ArrayElemTypeDef::SquareBracket(inner, _) | ast::ArrayElemTypeDef::Qualified(inner, _),
        ) => {
            if let T::Array(_) = inner.as_ref() {
                return Err(DbError::Unsupported("multidimensional arrays".into()));
            }
            DataType::Array(ElemType::of_checked(sql_type(inner)?)?)
        }
        T::Custom(name, args) => {
            let name = object_name(name)?;
            match name.as_str() {
                "varchar2" | "nvarchar2" => {
                    let max = match args.first() {
                        None => None,
                        Some(n) => {
                            Some(n.split_whitespace().next().unwrap_or("").parse::<u32>().map_err(|_| {
                                DbError::Syntax {
                                    message: format!("invalid length for type {ty}"),
                                    position: 0,
                                }
                            })?)
                        }
                    };
                    DataType::Text { max_chars: max }
                }
                // Oracle's NUMBER is a decimal: NUMBER(p, s), NUMBER(p) with scale 0,
                // NUMBER(*, s) with Oracle's largest precision, 38, and NUMBER alone
                // unconstrained.
                "number" => DataType::Numeric(oracle_number_spec(args)?),
                "numeric" | "decimal" => DataType::Numeric(match args.as_slice() {
                    [] => None,
                    [p] => Some(NumericSpec::new(type_argument(p, ty)?, 0)?),
                    [p, s] => Some(NumericSpec::new(type_argument(p, ty)?, type_argument(s, ty)?)?),
                    _ => return Err(type_arguments_error(ty)),
                }),
                "float8" => DataType::Float,
                "float4" | "real" => DataType::Float4,
                "int8" | "int4" | "int2" | "bigint" | "integer" | "int" | "smallint" => DataType::Int,
                "bool" | "boolean" => DataType::Bool,
                // Qualified (`pg_catalog.text`), a type name parses as a custom one.
                "text" => DataType::Text { max_chars: None },
                "varchar" => DataType::Text { max_chars: None },
                "bytea" | "raw" | "blob" => DataType::Bytea,
                "uuid" => DataType::Uuid,
                // PostgreSQL's bpchar (unbounded bare, as `bpchar(n)` CHAR(n)) and
                // Oracle's NCHAR(n) (CHAR(1) bare).
                "bpchar" | "nchar" => {
                    let len = match args.first() {
                        None if name == "nchar" => Some(1),
                        None => None,
                        Some(n) => {
                            Some(n.trim().parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                                DbError::Syntax {
                                    message: format!("invalid length for type {ty}"),
                                    position: 0,
                                }
                            })?)
                        }
                    };
                    DataType::Char { len }
                }
                "json" => DataType::Json,
                "jsonb" => DataType::Jsonb,
                // The catalog's types (`"char"` is only ever quoted: bare, it is CHAR).
                "oid" => DataType::Catalog(CatalogType::Oid),
                "name" => DataType::Catalog(CatalogType::Name),
                "char" => DataType::Catalog(CatalogType::Char),
                "regclass" => DataType::Catalog(CatalogType::RegClass),
                "regtype" => DataType::Catalog(CatalogType::RegType),
                "regproc" => DataType::Catalog(CatalogType::RegProc),
                "regnamespace" => DataType::Catalog(CatalogType::RegNamespace),
                "date" => DataType::Date,
                "time" => DataType::Time,
                "timestamp" => DataType::Timestamp,
                "timestamptz" => DataType::TimestampTz,
                "interval" => DataType::Interval,
                // A name PostgreSQL knows but this database does not keep is a feature
                // not supported; any other is no type at all.
                name if KNOWN_UNSUPPORTED_TYPES.contains(&name) => {
                    return Err(DbError::Unsupported(format!("the type {ty}")))
                }
                _ => return Err(DbError::UndefinedType(name)),
            }
        }
        other => return Err(DbError::Unsupported(format!("the type {other}"))),
    })
}

/// The modifier of `NUMERIC`, `NUMERIC(p)` (scale 0) or `NUMERIC(p, s)`.
fn numeric_spec(info: &ast::ExactNumberInfo) -> DbResult<Option<NumericSpec>> {
    Ok(match info {
        ast::ExactNumberInfo::None => None,
        ast::ExactNumberInfo::Precision(p) => Some(NumericSpec::new(*p as i64, 0)?),
        ast::ExactNumberInfo::PrecisionAndScale(p, s) => Some(NumericSpec::new(*p as i64, *s)?),
    })
}

fn type_arguments_error(ty: &ast::DataType) -> DbError {
    DbError::Syntax { message: format!("invalid type modifier in {ty}"), position: 0 }
}

/// An integer argument of a type name (`NUMBER(10, 2)`'s 10 and 2).
fn type_argument(arg: &str, ty: &ast::DataType) -> DbResult<i64> {
    arg.trim().parse::<i64>().map_err(|_| type_arguments_error(ty))
}

/// Oracle's `NUMBER`, `NUMBER(p)`, `NUMBER(p, s)`, `NUMBER(*, s)`.
fn oracle_number_spec(args: &[String]) -> DbResult<Option<NumericSpec>> {
    const ORACLE_MAX_PRECISION: i64 = 38;
    let ty = ast::DataType::Custom(ast::ObjectName::from(vec![ast::Ident::new("NUMBER")]), args.to_vec());
    let precision = |p: &str| if p.trim() == "*" { Ok(ORACLE_MAX_PRECISION) } else { type_argument(p, &ty) };
    Ok(match args {
        [] => None,
        [p] if p.trim() == "*" => None,
        [p] => Some(NumericSpec::new(precision(p)?, 0)?),
        [p, s] => Some(NumericSpec::new(precision(p)?, type_argument(s, &ty)?)?),
        _ => return Err(type_arguments_error(&ty)),
    })
}

// ---------------------------------------------------------------------------------------
// Rewriting
// ---------------------------------------------------------------------------------------

impl Expr {
    /// Rebuilds the expression with `f` applied to each direct child.
    pub(crate) fn map_children(self, f: &mut impl FnMut(Expr) -> DbResult<Expr>) -> DbResult<Expr> {
        #[allow(clippy::boxed_local)]
        fn boxed(f: &mut impl FnMut(Expr) -> DbResult<Expr>, e: Box<Expr>) -> DbResult<Box<Expr>> {
            f(*e).map(Box::new)
        }
        Ok(match self {
            e @ (Expr::Literal(_)
            | Expr::Column(_)
            | Expr::Agg(_)
            | Expr::Window(_)
            | Expr::Grouping(_)
            | Expr::Param(_)
            | Expr::Outer { .. }
            | Expr::Clock(_)) => e,
            Expr::Subquery(sub) => {
                let Subquery { kind, plan } = *sub;
                let kind = match kind {
                    SubqueryKind::In { lhs, negated } => SubqueryKind::In { lhs: boxed(f, lhs)?, negated },
                    SubqueryKind::InRows { lhs, negated } => SubqueryKind::InRows {
                        lhs: lhs.into_iter().map(&mut *f).collect::<DbResult<_>>()?,
                        negated,
                    },
                    SubqueryKind::Quantified { lhs, op, all } => {
                        SubqueryKind::Quantified { lhs: boxed(f, lhs)?, op, all }
                    }
                    other => other,
                };
                Expr::Subquery(Box::new(Subquery { kind, plan }))
            }
            Expr::Quantified { lhs, op, all, values } => {
                Expr::Quantified { lhs: boxed(f, lhs)?, op, all, values }
            }
            Expr::RowsAny { lhs, rows } => {
                Expr::RowsAny { lhs: lhs.into_iter().map(&mut *f).collect::<DbResult<_>>()?, rows }
            }
            Expr::AnyArray { lhs, op, all, array } => {
                Expr::AnyArray { lhs: boxed(f, lhs)?, op, all, array: boxed(f, array)? }
            }
            Expr::LikeArray { lhs, array, all, negated, case_insensitive } => Expr::LikeArray {
                lhs: boxed(f, lhs)?,
                array: boxed(f, array)?,
                all,
                negated,
                case_insensitive,
            },
            Expr::Array(elem, items) => {
                Expr::Array(elem, items.into_iter().map(&mut *f).collect::<DbResult<_>>()?)
            }
            Expr::Subscript(a, i) => Expr::Subscript(boxed(f, a)?, boxed(f, i)?),
            Expr::Field(a, i) => Expr::Field(boxed(f, a)?, i),
            Expr::Row(row) => {
                let RowExpr { ty, fields, present } = *row;
                let fields = fields.into_iter().map(&mut *f).collect::<DbResult<_>>()?;
                let present = match present {
                    Presence::KeyColumn(key) => Presence::KeyColumn(f(key)?),
                    other => other,
                };
                Expr::Row(Box::new(RowExpr { ty, fields, present }))
            }
            Expr::Slice(a, lo, hi) => Expr::Slice(
                boxed(f, a)?,
                lo.map(|e| boxed(f, e)).transpose()?,
                hi.map(|e| boxed(f, e)).transpose()?,
            ),
            Expr::Neg(e) => Expr::Neg(boxed(f, e)?),
            Expr::Not(e) => Expr::Not(boxed(f, e)?),
            Expr::Binary(op, a, b) => Expr::Binary(op, boxed(f, a)?, boxed(f, b)?),
            Expr::IsNull(e, n) => Expr::IsNull(boxed(f, e)?, n),
            Expr::IsBool(e, v, n) => Expr::IsBool(boxed(f, e)?, v, n),
            Expr::IsDistinct(a, b, n) => Expr::IsDistinct(boxed(f, a)?, boxed(f, b)?, n),
            Expr::InList(e, list, n) => {
                let e = boxed(f, e)?;
                Expr::InList(e, list.into_iter().map(&mut *f).collect::<DbResult<_>>()?, n)
            }
            Expr::Between(e, lo, hi, n) => Expr::Between(boxed(f, e)?, boxed(f, lo)?, boxed(f, hi)?, n),
            Expr::Like { expr, pattern, escape, negated, case_insensitive } => Expr::Like {
                expr: boxed(f, expr)?,
                pattern: boxed(f, pattern)?,
                escape,
                negated,
                case_insensitive,
            },
            Expr::Regex { expr, pattern, negated, case_insensitive } => {
                Expr::Regex { expr: boxed(f, expr)?, pattern: boxed(f, pattern)?, negated, case_insensitive }
            }
            Expr::Cast(e, ty) => Expr::Cast(boxed(f, e)?, ty),
            Expr::Func(func, args) => {
                Expr::Func(func, args.into_iter().map(&mut *f).collect::<DbResult<_>>()?)
            }
            Expr::Sequence(call, args) => {
                Expr::Sequence(call, args.into_iter().map(&mut *f).collect::<DbResult<_>>()?)
            }
            Expr::Catalog(call, args) => {
                Expr::Catalog(call, args.into_iter().map(&mut *f).collect::<DbResult<_>>()?)
            }
            Expr::Case { operand, whens, otherwise } => {
                let operand = operand.map(|o| boxed(f, o)).transpose()?;
                let mut new_whens = Vec::with_capacity(whens.len());
                for (w, r) in whens {
                    new_whens.push((f(w)?, f(r)?));
                }
                let otherwise = otherwise.map(|o| boxed(f, o)).transpose()?;
                Expr::Case { operand, whens: new_whens, otherwise }
            }
        })
    }

    fn for_each_child(&self, f: &mut impl FnMut(&Expr)) {
        match self {
            Expr::Literal(_)
            | Expr::Column(_)
            | Expr::Agg(_)
            | Expr::Window(_)
            | Expr::Grouping(_)
            | Expr::Param(_)
            | Expr::Outer { .. }
            | Expr::Clock(_) => {}
            Expr::Subquery(sub) => match &sub.kind {
                SubqueryKind::In { lhs, .. } | SubqueryKind::Quantified { lhs, .. } => f(lhs),
                SubqueryKind::InRows { lhs, .. } => lhs.iter().for_each(f),
                SubqueryKind::Scalar | SubqueryKind::Exists { .. } | SubqueryKind::Array(_) => {}
            },
            Expr::Quantified { lhs, .. } => f(lhs),
            Expr::RowsAny { lhs, .. } => lhs.iter().for_each(f),
            Expr::AnyArray { lhs, array, .. } | Expr::LikeArray { lhs, array, .. } => {
                f(lhs);
                f(array);
            }
            Expr::Array(_, items) => items.iter().for_each(f),
            Expr::Subscript(a, i) => {
                f(a);
                f(i);
            }
            Expr::Field(a, _) => f(a),
            Expr::Row(row) => {
                row.fields.iter().for_each(&mut *f);
                if let Presence::KeyColumn(key) = &row.present {
                    f(key);
                }
            }
            Expr::Slice(a, lo, hi) => {
                f(a);
                if let Some(lo) = lo {
                    f(lo);
                }
                if let Some(hi) = hi {
                    f(hi);
                }
            }
            Expr::Neg(e) | Expr::Not(e) | Expr::IsNull(e, _) | Expr::IsBool(e, _, _) | Expr::Cast(e, _) => {
                f(e)
            }
            Expr::Binary(_, a, b) | Expr::IsDistinct(a, b, _) => {
                f(a);
                f(b);
            }
            Expr::InList(e, list, _) => {
                f(e);
                list.iter().for_each(f);
            }
            Expr::Between(e, lo, hi, _) => {
                f(e);
                f(lo);
                f(hi);
            }
            Expr::Like { expr, pattern, .. } | Expr::Regex { expr, pattern, .. } => {
                f(expr);
                f(pattern);
            }
            Expr::Func(_, args) | Expr::Sequence(_, args) | Expr::Catalog(_, args) => args.iter().for_each(f),
            Expr::Case { operand, whens, otherwise } => {
                if let Some(o) = operand {
                    f(o);
                }
                for (w, r) in whens {
                    f(w);
                    f(r);
                }
                if let Some(o) = otherwise {
                    f(o);
                }
            }
        }
    }

    /// Whether the expression reads nothing of a row and is the same on every evaluation.
    fn is_constant(&self) -> bool {
        match self {
            Expr::Column(_)
            | Expr::Agg(_)
            | Expr::Window(_)
            | Expr::Grouping(_)
            | Expr::Param(_)
            | Expr::Clock(_)
            | Expr::Sequence(..)
            | Expr::Catalog(..)
            | Expr::Func(
                Func::Random | Func::TableSample(_) | Func::ClockTimestamp | Func::GenRandomUuid,
                _,
            )
            | Expr::Outer { .. }
            | Expr::Subquery(_) => false,
            Expr::Literal(_) => true,
            other => {
                let mut constant = true;
                other.for_each_child(&mut |c| constant &= c.is_constant());
                constant
            }
        }
    }

    /// The row positions the expression reads (not those of its subqueries' own rows).
    pub(crate) fn columns(&self, out: &mut Vec<usize>) {
        match self {
            Expr::Column(i) => out.push(*i),
            other => other.for_each_child(&mut |c| c.columns(out)),
        }
    }

    /// The expression with each `Column(i)` read from `f(i)` instead.
    pub(crate) fn map_columns(self, f: &mut impl FnMut(usize) -> usize) -> Expr {
        match self {
            Expr::Column(i) => Expr::Column(f(i)),
            other => other.map_children(&mut |c| Ok(c.map_columns(f))).expect("infallible"),
        }
    }

    /// Whether a subquery is part of the expression.
    pub(crate) fn has_subquery(&self) -> bool {
        match self {
            Expr::Subquery(_) => true,
            other => {
                let mut found = false;
                other.for_each_child(&mut |c| found |= c.has_subquery());
                found
            }
        }
    }

    /// Whether the expression reads an outer query's row at subquery depth `depth`
    /// (looking into its own subqueries, one level deeper each).
    pub(crate) fn reads_outer(&self, depth: usize) -> bool {
        match self {
            Expr::Outer { depth: d, .. } => *d == depth,
            Expr::Subquery(sub) => {
                let mut found = sub.plan.0.reads_outer(depth + 1);
                self.for_each_child(&mut |c| found |= c.reads_outer(depth));
                found
            }
            other => {
                let mut found = false;
                other.for_each_child(&mut |c| found |= c.reads_outer(depth));
                found
            }
        }
    }

    /// The columns of the outer row at subquery depth `depth` the expression reads
    /// (looking into its own subqueries, one level deeper each), appended to `out`.
    pub(crate) fn outer_columns(&self, depth: usize, out: &mut Vec<usize>) {
        match self {
            Expr::Outer { depth: d, index, .. } if *d == depth => out.push(*index),
            Expr::Subquery(sub) => {
                sub.plan.0.outer_columns(depth + 1, out);
                self.for_each_child(&mut |c| c.outer_columns(depth, out));
            }
            other => other.for_each_child(&mut |c| c.outer_columns(depth, out)),
        }
    }

    /// The expression with the outer references at `depth` replaced by the values of
    /// `row` (and so in its subqueries, one level deeper each).
    pub(crate) fn bind_outer(&self, depth: usize, row: &[Value]) -> Expr {
        match self {
            Expr::Outer { depth: d, index, .. } if *d == depth => Expr::Literal(row[*index].clone()),
            Expr::Subquery(sub) => {
                let plan = SubPlan(std::sync::Arc::new(sub.plan.0.bind_outer(depth + 1, row)));
                let inner = Expr::Subquery(Box::new(Subquery { kind: sub.kind.clone(), plan }));
                inner.map_children(&mut |c| Ok(c.bind_outer(depth, row))).expect("infallible")
            }
            other => other.clone().map_children(&mut |c| Ok(c.bind_outer(depth, row))).expect("infallible"),
        }
    }

    pub(crate) fn contains_aggregate(&self) -> bool {
        match self {
            Expr::Agg(_) => true,
            other => {
                let mut found = false;
                other.for_each_child(&mut |c| found |= c.contains_aggregate());
                found
            }
        }
    }

    /// The template with `$n` replaced by the values in `params` and the transaction's
    /// time for the clock functions (not folded).
    fn substitute(&self, params: &[Value], txn_time: &dyn Fn() -> i64) -> DbResult<Expr> {
        Ok(match self {
            Expr::Param(index) => Expr::Literal(bound_value(params, *index)?),
            Expr::Clock(clock) => Expr::Literal(clock.value(txn_time())?),
            e @ (Expr::Literal(_) | Expr::Column(_) | Expr::Agg(_)) => e.clone(),
            // The shape of `column = $1`, built directly rather than cloned then rebuilt.
            Expr::Binary(op, a, b) => Expr::Binary(
                *op,
                Box::new(a.substitute(params, txn_time)?),
                Box::new(b.substitute(params, txn_time)?),
            ),
            other => other.clone().map_children(&mut |child| child.substitute(params, txn_time))?,
        })
    }

    fn has_params(&self) -> bool {
        match self {
            Expr::Param(_) | Expr::Clock(_) => true,
            other => {
                let mut found = false;
                other.for_each_child(&mut |c| found |= c.has_params());
                found
            }
        }
    }

    /// Whether giving the parameters values makes a part of the expression other than a
    /// lone `$n` constant (so that `with_params` must fold it again, as in `$1 + 1`).
    fn folds_with_params(&self) -> bool {
        fn constant_given_params(e: &Expr) -> bool {
            match e {
                Expr::Column(_)
                | Expr::Agg(_)
                | Expr::Window(_)
                | Expr::Grouping(_)
                | Expr::Func(
                    Func::Random | Func::TableSample(_) | Func::ClockTimestamp | Func::GenRandomUuid,
                    _,
                )
                | Expr::Sequence(..)
                | Expr::Catalog(..)
                | Expr::Outer { .. }
                | Expr::Subquery(_) => false,
                Expr::Literal(_) | Expr::Param(_) | Expr::Clock(_) => true,
                other => {
                    let mut constant = true;
                    other.for_each_child(&mut |c| constant &= constant_given_params(c));
                    constant
                }
            }
        }
        match self {
            Expr::Param(_) | Expr::Literal(_) | Expr::Column(_) | Expr::Agg(_) => false,
            other if other.has_params() && constant_given_params(other) => true,
            other => {
                let mut folds = false;
                other.for_each_child(&mut |c| folds |= c.folds_with_params());
                folds
            }
        }
    }
}

/// A compiled expression of a prepared statement, with its bind parameters still `$n`,
/// and what giving them values takes (most templates need no clone or no fold).
#[derive(Debug)]
pub(crate) struct Template {
    expr: Expr,
    has_params: bool,
    folds_with_params: bool,
    /// Known once, not walked for at each execution (giving parameters values adds
    /// no subquery).
    has_subquery: bool,
}

impl Template {
    /// Wraps an expression compiled (and folded) by `Binder::template`.
    pub(crate) fn new(expr: Expr) -> Template {
        Template {
            has_params: expr.has_params(),
            folds_with_params: expr.folds_with_params(),
            has_subquery: expr.has_subquery(),
            expr,
        }
    }

    /// Whether the expression holds a subquery (which runs before or during the
    /// statement, see `Session::resolve_subqueries`).
    pub(crate) fn has_subquery(&self) -> bool {
        self.has_subquery
    }

    /// The expression with its parameters given `params`: the same expression
    /// `Binder::new` with `params` would have compiled.
    /// The value bound to the template when it is a lone `$n` (an assignment `SET c = $n`
    /// then takes the value as is, without building an expression around it).
    pub(crate) fn lone_param<'p>(&self, params: &'p [Value]) -> Option<DbResult<&'p Value>> {
        match self.expr {
            Expr::Param(index) => Some(bound_ref(params, index)),
            _ => None,
        }
    }

    /// The bound value `v` if this template is exactly `column = $n` (either way round),
    /// with `v` the value of `$n`.
    pub(crate) fn column_equals_param<'p>(
        &self,
        column: usize,
        params: &'p [Value],
    ) -> Option<DbResult<&'p Value>> {
        let Expr::Binary(BinOp::Eq, a, b) = &self.expr else { return None };
        match (a.as_ref(), b.as_ref()) {
            (Expr::Column(c), Expr::Param(index)) | (Expr::Param(index), Expr::Column(c)) if *c == column => {
                Some(bound_ref(params, *index))
            }
            _ => None,
        }
    }

    ///
    /// `txn_time` gives the transaction's time for the clock functions
    /// (`Session::transaction_timestamp`), read only if the template calls one.
    pub(crate) fn with_params(
        &self,
        params: &[Value],
        txn_time: &dyn Fn() -> i64,
    ) -> DbResult<std::borrow::Cow<'_, Expr>> {
        if !self.has_params {
            return Ok(std::borrow::Cow::Borrowed(&self.expr));
        }
        let expr = self.expr.substitute(params, txn_time)?;
        Ok(std::borrow::Cow::Owned(if self.folds_with_params { expr.fold()? } else { expr }))
    }
}

impl Expr {
    /// Evaluates the largest constant parts once (so `id = $1 + 1` becomes a comparison
    /// with a literal, which the access path planner can use).
    pub(crate) fn fold(self) -> DbResult<Expr> {
        if matches!(self, Expr::Literal(_)) {
            return Ok(self);
        }
        if self.is_constant() {
            // A constant `reg*` value keeps its type, which shows it as the object's name
            // (`pg_typeof(1)` is the regtype `integer`, a number only inside).
            if let Expr::Cast(_, ty @ DataType::Catalog(c)) = self {
                if c.is_oid() && c != CatalogType::Oid {
                    return Ok(Expr::Cast(Box::new(Expr::Literal(self.eval(&[], &[])?)), ty));
                }
            }
            return self.eval(&[], &[]).map(Expr::Literal);
        }
        self.map_children(&mut Expr::fold)
    }

    /// Rewrites an expression of a grouped query so that it reads the group key: a part
    /// equal to the i-th GROUP BY expression becomes `Column(i)`; a column used outside
    /// an aggregate and not grouped is an error (`names`: the input column names).
    pub(crate) fn regroup(self, groups: &[Expr], names: &[String]) -> DbResult<Expr> {
        if let Some(i) = groups.iter().position(|g| *g == self) {
            return Ok(Expr::Column(i));
        }
        match self {
            Expr::Column(c) => Err(grouping_error(format!(
                "column \"{}\" must appear in the GROUP BY clause or be used in an aggregate function",
                names.get(c).map_or("?", |n| n.as_str())
            ))),
            other => other.map_children(&mut |child| child.regroup(groups, names)),
        }
    }

    /// The type of the expression's values, when it can be told before running it.
    pub(crate) fn static_type(
        &self,
        columns: &[Option<DataType>],
        aggs: &[Option<DataType>],
    ) -> Option<DataType> {
        let text = Some(DataType::Text { max_chars: None });
        match self {
            Expr::Literal(v) => v.data_type(),
            Expr::Column(i) => columns.get(*i).copied().flatten(),
            Expr::Agg(i) => aggs.get(*i).copied().flatten(),
            Expr::Outer { ty, .. } => *ty,
            Expr::Param(_) | Expr::Window(_) => None,
            Expr::Grouping(_) => Some(DataType::Int),
            Expr::Clock(clock) => Some(clock.data_type()),
            Expr::Sequence(..) => Some(DataType::Int),
            Expr::Catalog(call, _) => Some(call.func.data_type()),
            Expr::Subquery(sub) => match sub.kind {
                SubqueryKind::Scalar => sub.plan.0.columns().first().and_then(|c| c.ty),
                SubqueryKind::Array(elem) => Some(DataType::Array(elem)),
                _ => Some(DataType::Bool),
            },
            Expr::Quantified { .. }
            | Expr::RowsAny { .. }
            | Expr::AnyArray { .. }
            | Expr::LikeArray { .. } => Some(DataType::Bool),
            Expr::Array(elem, _) => Some(DataType::Array(*elem)),
            Expr::Subscript(a, _) => match a.static_type(columns, aggs) {
                Some(DataType::Array(elem)) => Some(elem.data_type()),
                Some(DataType::Catalog(c)) if c.is_vector() => Some(DataType::Int),
                _ => None,
            },
            Expr::Field(a, i) => match a.static_type(columns, aggs) {
                Some(DataType::Record(ty)) => ty.field_types().get(*i).copied().flatten(),
                _ => None,
            },
            Expr::Row(row) => Some(DataType::Record(row.ty)),
            Expr::Slice(a, _, _) => match a.static_type(columns, aggs) {
                // A slice of a vector is an array from 1 (int2[] in PostgreSQL).
                Some(DataType::Catalog(c)) if c.is_vector() => Some(DataType::Array(ElemType::Int)),
                other => other,
            },
            Expr::Neg(e) => e.static_type(columns, aggs).map(DataType::unconstrained),
            Expr::Binary(op, a, b) => match op {
                op if json_ops::result_type(
                    *op,
                    a.static_type(columns, aggs),
                    b.static_type(columns, aggs),
                )
                .is_some() =>
                {
                    json_ops::result_type(*op, a.static_type(columns, aggs), b.static_type(columns, aggs))
                }
                BinOp::Overlaps => Some(DataType::Bool),
                BinOp::Concat => match (a.static_type(columns, aggs), b.static_type(columns, aggs)) {
                    (Some(DataType::Bytea), Some(DataType::Bytea)) => Some(DataType::Bytea),
                    (Some(t @ DataType::Array(_)), _) | (_, Some(t @ DataType::Array(_))) => Some(t),
                    _ => text,
                },
                op if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) => Some(DataType::Bool),
                _ => match (a.static_type(columns, aggs), b.static_type(columns, aggs)) {
                    (x, y) if temporal::result_type(*op, x, y).is_some() => temporal::result_type(*op, x, y),
                    (x, y) => arithmetic_type(x, y),
                },
            },
            Expr::Not(_)
            | Expr::IsNull(..)
            | Expr::IsBool(..)
            | Expr::IsDistinct(..)
            | Expr::InList(..)
            | Expr::Between(..)
            | Expr::Like { .. }
            | Expr::Regex { .. } => Some(DataType::Bool),
            Expr::Cast(_, ty) => Some(*ty),
            Expr::Func(func, args) => match func {
                Func::Lower
                | Func::Upper
                | Func::Repeat
                | Func::Rpad
                | Func::Lpad
                | Func::Concat
                | Func::Substr
                | Func::CurrentSchema => text,
                Func::Length | Func::OctetLength => Some(DataType::Int),
                Func::Encode => text,
                Func::Decode => Some(DataType::Bytea),
                Func::GenRandomUuid => Some(DataType::Uuid),
                Func::ToJson | Func::JsonBuildObject | Func::JsonBuildArray => Some(DataType::Json),
                Func::ToJsonb | Func::JsonbBuildObject | Func::JsonbBuildArray => Some(DataType::Jsonb),
                Func::JsonTypeof => text,
                Func::JsonArrayLength => Some(DataType::Int),
                Func::DatePart => Some(DataType::Float),
                Func::ClockTimestamp => Some(DataType::TimestampTz),
                Func::MakeDate => Some(DataType::Date),
                Func::Age => Some(DataType::Interval),
                Func::DateTrunc => match args.get(1).and_then(|a| a.static_type(columns, aggs)) {
                    Some(DataType::Date) => Some(DataType::TimestampTz),
                    other => other,
                },
                Func::AtTimeZone => match args.first().and_then(|a| a.static_type(columns, aggs)) {
                    Some(DataType::TimestampTz) => Some(DataType::Timestamp),
                    Some(_) => Some(DataType::TimestampTz),
                    None => None,
                },
                Func::Random | Func::Sqrt | Func::Power => Some(DataType::Float),
                Func::Abs => {
                    args.first().and_then(|a| a.static_type(columns, aggs)).map(DataType::unconstrained)
                }
                // PostgreSQL has these for float8, not float4: a REAL's is a double.
                Func::Trunc | Func::Round | Func::Floor | Func::Ceil => {
                    match args.first().and_then(|a| a.static_type(columns, aggs)).map(DataType::unconstrained)
                    {
                        Some(DataType::Float4) => Some(DataType::Float),
                        other => other,
                    }
                }
                Func::Mod => arithmetic_type(
                    args.first().and_then(|a| a.static_type(columns, aggs)),
                    args.get(1).and_then(|a| a.static_type(columns, aggs)),
                ),
                Func::Nullif => args.first().and_then(|a| a.static_type(columns, aggs)),
                Func::Coalesce | Func::Greatest | Func::Least => {
                    common_type(args.iter().map(|a| a.static_type(columns, aggs)))
                }
                Func::Trim(_)
                | Func::Replace
                | Func::ConcatWs
                | Func::SplitPart
                | Func::Left
                | Func::Right
                | Func::Initcap
                | Func::Reverse
                | Func::Md5
                | Func::RegexpReplace
                | Func::SimilarToEscape
                | Func::Format
                | Func::ToChar => text,
                Func::Strpos | Func::Instr | Func::WidthBucket | Func::WidthBucketThresholds => {
                    Some(DataType::Int)
                }
                Func::Sha(_) => Some(DataType::Bytea),
                Func::TableSample(_) => Some(DataType::Bool),
                // PostgreSQL's sign has no float4 version: a REAL's is a double.
                Func::Sign => match args.first().and_then(|a| a.static_type(columns, aggs)) {
                    Some(DataType::Float4) => Some(DataType::Float),
                    other => other,
                },
                Func::Nvl2 => args.iter().skip(1).find_map(|a| a.static_type(columns, aggs)),
                // The results: every second argument after the value, and the default.
                Func::OracleDecode => args
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i >= 2 && (i % 2 == 0 || *i == args.len() - 1))
                    .find_map(|(_, a)| a.static_type(columns, aggs)),
                Func::ToDate => Some(DataType::Date),
                Func::ToTimestamp => Some(DataType::TimestampTz),
                _ if arrays::is_array_function(*func) => arrays::result_type(
                    *func,
                    &args.iter().map(|a| a.static_type(columns, aggs)).collect::<Vec<_>>(),
                ),
                _ => None,
            },
            Expr::Case { whens, otherwise, .. } => common_type(
                whens
                    .iter()
                    .map(|(_, r)| r)
                    .chain(otherwise.as_deref())
                    .map(|r| r.static_type(columns, aggs)),
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------

impl Expr {
    /// Evaluates the expression on `row` (and the aggregate values `aggs`).
    pub(crate) fn eval(&self, row: &[Value], aggs: &[Value]) -> DbResult<Value> {
        Ok(match self {
            Expr::Literal(v) => v.clone(),
            Expr::Column(i) => row[*i].clone(),
            Expr::Agg(i) => aggs[*i].clone(),
            Expr::Window(_) => {
                return Err(DbError::CorruptChange(
                    "a window function's value read before it was computed".into(),
                ))
            }
            Expr::Grouping(_) => {
                return Err(DbError::CorruptChange("a GROUPING() value read outside its group row".into()))
            }
            Expr::Param(index) => {
                return Err(DbError::BindParameter { index: *index, problem: "not bound to a value".into() })
            }
            // Outside a template run by a session (where it is a literal already): the
            // clock as it reads now.
            Expr::Clock(clock) => clock.value(datetime::now())?,
            Expr::Outer { .. } | Expr::Subquery(_) => {
                unreachable!("subqueries and outer references are replaced before evaluation: {self:?}")
            }
            Expr::Quantified { lhs, op, all, values } => {
                // Over no values: ANY is false and ALL true, whatever the left side.
                if values.is_empty() {
                    return Ok(Value::Bool(*all));
                }
                let v = lhs.eval(row, aggs)?;
                let mut unknown = false;
                for item in values {
                    match truth(&binary(*op, v.clone(), item.clone())?)? {
                        Some(true) if !*all => return Ok(Value::Bool(true)),
                        Some(false) if *all => return Ok(Value::Bool(false)),
                        None => unknown = true,
                        Some(_) => {}
                    }
                }
                if unknown {
                    Value::Null
                } else {
                    Value::Bool(*all)
                }
            }
            Expr::RowsAny { lhs, rows } => {
                let values = lhs.iter().map(|e| e.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
                let mut unknown = false;
                for candidate in rows {
                    // A row is unequal on its first unequal pair, whatever the others.
                    let mut row_unknown = false;
                    let mut unequal = false;
                    for (v, c) in values.iter().zip(candidate) {
                        match truth(&binary(BinOp::Eq, v.clone(), c.clone())?)? {
                            Some(false) => {
                                unequal = true;
                                break;
                            }
                            None => row_unknown = true,
                            Some(true) => {}
                        }
                    }
                    if unequal {
                        continue;
                    }
                    if !row_unknown {
                        return Ok(Value::Bool(true));
                    }
                    unknown = true;
                }
                if unknown {
                    Value::Null
                } else {
                    Value::Bool(false)
                }
            }
            Expr::AnyArray { lhs, op, all, array } => {
                arrays::quantified(*op, *all, &lhs.eval(row, aggs)?, array.eval(row, aggs)?)?
            }
            Expr::LikeArray { lhs, array, all, negated, case_insensitive } => like_quantified(
                &lhs.eval(row, aggs)?,
                array.eval(row, aggs)?,
                *all,
                *negated,
                *case_insensitive,
            )?,
            Expr::Array(elem, items) => {
                let ty = elem.data_type();
                let values =
                    items.iter().map(|e| coerce(e.eval(row, aggs)?, ty)).collect::<DbResult<Vec<_>>>()?;
                crate::array::Array::new(*elem, values).into_value()
            }
            Expr::Subscript(a, i) => arrays::subscript(a.eval(row, aggs)?, i.eval(row, aggs)?)?,
            Expr::Field(a, i) => match a.eval(row, aggs)? {
                Value::Null => Value::Null,
                Value::Record(r) => r.fields.get(*i).cloned().unwrap_or(Value::Null),
                other => return Err(not_composite(other.data_type())),
            },
            Expr::Row(r) => {
                if let Presence::KeyColumn(key) = &r.present {
                    if key.eval(row, aggs)?.is_null() {
                        return Ok(Value::Null);
                    }
                }
                let fields = r.fields.iter().map(|e| e.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
                if r.present == Presence::AnyField && fields.iter().all(Value::is_null) {
                    return Ok(Value::Null);
                }
                Record::new(r.ty, fields).into_value()
            }
            Expr::Slice(a, lo, hi) => arrays::slice(
                a.eval(row, aggs)?,
                lo.as_ref().map(|e| e.eval(row, aggs)).transpose()?,
                hi.as_ref().map(|e| e.eval(row, aggs)).transpose()?,
            )?,
            Expr::Neg(e) => match e.eval(row, aggs)? {
                Value::Null => Value::Null,
                v if temporal::is_temporal(&v) => return temporal::negate(&v).expect("a temporal value"),
                Value::Float4(f) => Value::Float4(-f),
                v => match to_num(&v)? {
                    Num::I(i) => Value::Int(i.checked_neg().ok_or_else(out_of_range)?),
                    Num::F(f) => Value::Float(-f),
                    Num::N(n) => Value::numeric(-n),
                },
            },
            Expr::Not(e) => match truth(&e.eval(row, aggs)?)? {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Expr::Binary(BinOp::And, a, b) => {
                let left = truth(&a.eval(row, aggs)?)?;
                if left == Some(false) {
                    return Ok(Value::Bool(false));
                }
                match (left, truth(&b.eval(row, aggs)?)?) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                }
            }
            Expr::Binary(BinOp::Or, a, b) => {
                let left = truth(&a.eval(row, aggs)?)?;
                if left == Some(true) {
                    return Ok(Value::Bool(true));
                }
                match (left, truth(&b.eval(row, aggs)?)?) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (a.eval(row, aggs)?, b.eval(row, aggs)?);
                // `||` with an array keeps a NULL side (as an element, or as no array).
                if *op == BinOp::Concat {
                    if let Some(result) = arrays::concat(&a, &b) {
                        return result;
                    }
                }
                binary(*op, a, b)?
            }
            Expr::IsNull(e, negated) => match e.eval(row, aggs)? {
                // PostgreSQL's rule for a record: IS NULL when every field is NULL, IS NOT
                // NULL when none is (so `ROW(1, NULL)` is neither).
                Value::Record(r) => Value::Bool(match negated {
                    false => r.fields.iter().all(Value::is_null),
                    true => !r.fields.iter().any(Value::is_null),
                }),
                v => Value::Bool(v.is_null() != *negated),
            },
            Expr::IsBool(e, value, negated) => {
                Value::Bool((truth(&e.eval(row, aggs)?)? == Some(*value)) != *negated)
            }
            Expr::IsDistinct(a, b, negated) => {
                let (a, b) = (a.eval(row, aggs)?, b.eval(row, aggs)?);
                let distinct = match (a.is_null(), b.is_null()) {
                    (true, true) => false,
                    (true, false) | (false, true) => true,
                    (false, false) => compare(&a, &b)? != Some(Ordering::Equal),
                };
                Value::Bool(distinct != *negated)
            }
            Expr::InList(e, list, negated) => {
                let v = e.eval(row, aggs)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut unknown = false;
                for item in list {
                    match compare(&v, &item.eval(row, aggs)?)? {
                        Some(Ordering::Equal) => return Ok(Value::Bool(!*negated)),
                        None => unknown = true,
                        Some(_) => {}
                    }
                }
                if unknown {
                    Value::Null
                } else {
                    Value::Bool(*negated)
                }
            }
            Expr::Between(e, lo, hi, negated) => {
                let v = e.eval(row, aggs)?;
                let above = compare(&v, &lo.eval(row, aggs)?)?.map(|o| o != Ordering::Less);
                let below = compare(&v, &hi.eval(row, aggs)?)?.map(|o| o != Ordering::Greater);
                let inside = match (above, below) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                match inside {
                    Some(b) => Value::Bool(b != *negated),
                    None => Value::Null,
                }
            }
            Expr::Like { expr, pattern, escape, negated, case_insensitive } => {
                match (expr.eval(row, aggs)?, pattern.eval(row, aggs)?) {
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    (text, pattern) => {
                        let (mut text, mut pattern) = (text.to_string(), pattern.to_string());
                        if *case_insensitive {
                            text = text.to_lowercase();
                            pattern = pattern.to_lowercase();
                        }
                        Value::Bool(like(&text, &pattern, *escape) != *negated)
                    }
                }
            }
            Expr::Regex { expr, pattern, negated, case_insensitive } => {
                match (expr.eval(row, aggs)?, pattern.eval(row, aggs)?) {
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    (text, pattern) => {
                        let found =
                            regex_matches(&text.to_string(), &pattern.to_string(), *case_insensitive)?;
                        Value::Bool(found != *negated)
                    }
                }
            }
            Expr::Cast(e, ty) => cast(e.eval(row, aggs)?, *ty)?,
            Expr::Func(func, args) => call(*func, args, row, aggs)?,
            Expr::Sequence(call, args) => {
                let values = args.iter().map(|a| a.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
                call.call(&values)?
            }
            Expr::Catalog(call, args) => {
                let values = args.iter().map(|a| a.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
                call.call(&values)?
            }
            Expr::Case { operand, whens, otherwise } => {
                let operand = operand.as_ref().map(|o| o.eval(row, aggs)).transpose()?;
                for (when, result) in whens {
                    let w = when.eval(row, aggs)?;
                    let hit = match &operand {
                        Some(o) => compare(o, &w)? == Some(Ordering::Equal),
                        None => truth(&w)? == Some(true),
                    };
                    if hit {
                        return result.eval(row, aggs);
                    }
                }
                match otherwise {
                    Some(o) => o.eval(row, aggs)?,
                    None => Value::Null,
                }
            }
        })
    }

    /// Whether a condition holds (is TRUE) for the row.
    pub(crate) fn holds(&self, row: &[Value], aggs: &[Value]) -> DbResult<bool> {
        Ok(truth(&self.eval(row, aggs)?)? == Some(true))
    }
}

/// A condition's value: NULL is unknown.
pub(crate) fn truth(v: &Value) -> DbResult<Option<bool>> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        Value::Text(_) => match coerce(v.clone(), DataType::Bool)? {
            Value::Bool(b) => Ok(Some(b)),
            _ => Ok(None),
        },
        other => Err(DbError::TypeMismatch { expected: "BOOLEAN".into(), value: other.to_string() }),
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Num {
    I(i64),
    F(f64),
    N(BigDecimal),
}

impl Num {
    pub(crate) fn value(self) -> Value {
        match self {
            Num::I(i) => Value::Int(i),
            Num::F(f) => Value::Float(f),
            Num::N(n) => Value::numeric(n),
        }
    }

    /// As a float; a NUMERIC beyond float8's range as an infinity (for comparisons and
    /// the float functions: a conversion that must fail instead is `numeric::to_f64`).
    pub(crate) fn as_f64(&self) -> f64 {
        match self {
            Num::I(i) => *i as f64,
            Num::F(f) => *f,
            Num::N(n) => numeric::to_f64(n).unwrap_or(if n.sign() == bigdecimal::num_bigint::Sign::Minus {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }),
        }
    }

    /// An INT or NUMERIC as a NUMERIC (never called with a FLOAT).
    fn into_decimal(self) -> BigDecimal {
        match self {
            Num::I(i) => numeric::from_i64(i),
            Num::N(n) => n,
            Num::F(f) => unreachable!("a float {f} in numeric arithmetic"),
        }
    }
}

fn out_of_range() -> DbError {
    DbError::NumericOutOfRange("bigint".into())
}

/// A non-null value as a number (text is parsed: an integer that fits, else a decimal,
/// else a float's special values).
pub(crate) fn to_num(v: &Value) -> DbResult<Num> {
    match v {
        Value::Int(i) => Ok(Num::I(*i)),
        Value::Float(f) => Ok(Num::F(*f)),
        // A float4 meeting any other number is widened: PostgreSQL's operators between
        // float4 and another type are float8's (`float48pl`, ...).
        Value::Float4(f) => Ok(Num::F(f64::from(*f))),
        Value::Numeric(n) => Ok(Num::N(BigDecimal::clone(n))),
        Value::Text(t) => {
            let t = t.trim();
            if let Ok(i) = t.parse::<i64>() {
                Ok(Num::I(i))
            } else if let Ok(n) = numeric::parse(t) {
                Ok(Num::N(n))
            } else {
                t.parse::<f64>()
                    .map(Num::F)
                    .map_err(|_| DbError::TypeMismatch { expected: "numeric".into(), value: t.to_string() })
            }
        }
        other => Err(DbError::TypeMismatch { expected: "numeric".into(), value: other.to_string() }),
    }
}

/// SQL comparison: None when either side is NULL.
pub(crate) fn compare(a: &Value, b: &Value) -> DbResult<Option<Ordering>> {
    Ok(Some(match (a, b) {
        (Value::Null, _) | (_, Value::Null) => return Ok(None),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Numeric(x), Value::Numeric(y)) => x.cmp(y),
        // Text meeting a REAL is read as one, as PostgreSQL reads a literal.
        (Value::Float4(_), Value::Text(t)) => return compare(a, &Value::Float4(crate::float4::parse(t)?)),
        (Value::Text(t), Value::Float4(_)) => return compare(&Value::Float4(crate::float4::parse(t)?), b),
        (
            Value::Int(_) | Value::Float(_) | Value::Float4(_) | Value::Numeric(_) | Value::Text(_),
            Value::Int(_) | Value::Float(_) | Value::Float4(_) | Value::Numeric(_) | Value::Text(_),
        ) => match (to_num(a)?, to_num(b)?) {
            (Num::I(x), Num::I(y)) => x.cmp(&y),
            (Num::N(x), Num::N(y)) => x.cmp(&y),
            (Num::I(x), Num::N(y)) => numeric::from_i64(x).cmp(&y),
            (Num::N(x), Num::I(y)) => x.cmp(&numeric::from_i64(y)),
            (x, y) => float_order(x.as_f64(), y.as_f64()),
        },
        (Value::Bool(_), Value::Text(_)) => return compare(a, &coerce(b.clone(), DataType::Bool)?),
        (Value::Text(_), Value::Bool(_)) => return compare(&coerce(a.clone(), DataType::Bool)?, b),
        (Value::Bytea(x), Value::Bytea(y)) => x.cmp(y),
        (Value::Uuid(x), Value::Uuid(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => arrays::compare_arrays(x, y)?,
        // Two whole rows compare as PostgreSQL's record_cmp: field by field, a NULL field
        // equal to a NULL one and after any value (a row constructor's `ROW(a, b) = ROW(c,
        // d)` is compiled field by field instead, NULL where a field is).
        (Value::Record(x), Value::Record(y)) => crate::record::cmp(x, y),
        // Text meeting an array is read as one of its element type.
        (Value::Array(x), Value::Text(_)) => return compare(a, &coerce(b.clone(), DataType::Array(x.elem))?),
        (Value::Text(_), Value::Array(y)) => return compare(&coerce(a.clone(), DataType::Array(y.elem))?, b),
        (Value::Jsonb(_), _) | (_, Value::Jsonb(_)) if json_ops::compare(a, b).is_some() => {
            json_ops::compare(a, b).expect("checked")?
        }
        // Text meeting a BYTEA or UUID is read as one, as PostgreSQL reads a literal.
        (Value::Bytea(_) | Value::Uuid(_), Value::Text(_)) => {
            return compare(a, &coerce(b.clone(), a.data_type().expect("not NULL"))?)
        }
        (Value::Text(_), Value::Bytea(_) | Value::Uuid(_)) => {
            return compare(&coerce(a.clone(), b.data_type().expect("not NULL"))?, b)
        }
        (x, y) if temporal::is_temporal(x) || temporal::is_temporal(y) => temporal::compare(x, y)?,
        (x, y) => {
            let name = |v: &Value| v.data_type().map_or("unknown".into(), |t| t.name().to_lowercase());
            return Err(DbError::DatatypeMismatch(format!("{} = {}", name(x), name(y))));
        }
    }))
}

/// Two floats in SQL's order, PostgreSQL's `float8_cmp_internal`: every NaN equal to
/// every other and above any number, -0 equal to 0.
fn float_order(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => x.partial_cmp(&y).expect("no NaN"),
    }
}

pub(crate) fn binary(op: BinOp, a: Value, b: Value) -> DbResult<Value> {
    // Two integers, the commonest operands (`SET n = n + 1`, `WHERE id < $1`), answered
    // here: the general path below asks the JSON and date operators first and goes
    // through `Num`, ~100 instructions more per operation (callgrind, `commit_loop`).
    if let (Value::Int(x), Value::Int(y)) = (&a, &b) {
        let (x, y) = (*x, *y);
        match op {
            BinOp::Add => return x.checked_add(y).map(Value::Int).ok_or_else(out_of_range),
            BinOp::Sub => return x.checked_sub(y).map(Value::Int).ok_or_else(out_of_range),
            BinOp::Mul => return x.checked_mul(y).map(Value::Int).ok_or_else(out_of_range),
            BinOp::Eq => return Ok(Value::Bool(x == y)),
            BinOp::NotEq => return Ok(Value::Bool(x != y)),
            BinOp::Lt => return Ok(Value::Bool(x < y)),
            BinOp::LtEq => return Ok(Value::Bool(x <= y)),
            BinOp::Gt => return Ok(Value::Bool(x > y)),
            BinOp::GtEq => return Ok(Value::Bool(x >= y)),
            _ => {}
        }
    }
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let cmp = |want: fn(Ordering) -> bool| -> DbResult<Value> {
        Ok(compare(&a, &b)?.map_or(Value::Null, |o| Value::Bool(want(o))))
    };
    if let Some(result) = arrays::set_operator(op, &a, &b) {
        return result;
    }
    if let Some(result) = json_ops::binary(op, &a, &b) {
        return result;
    }
    match op {
        BinOp::Concat => Ok(match (a, b) {
            (Value::Bytea(x), Value::Bytea(y)) => Value::Bytea([&x[..], &y[..]].concat().into()),
            (a, b) => Value::Text(format!("{a}{b}")),
        }),
        BinOp::Eq => cmp(|o| o == Ordering::Equal),
        BinOp::NotEq => cmp(|o| o != Ordering::Equal),
        BinOp::Lt => cmp(|o| o == Ordering::Less),
        BinOp::LtEq => cmp(|o| o != Ordering::Greater),
        BinOp::Gt => cmp(|o| o == Ordering::Greater),
        BinOp::GtEq => cmp(|o| o != Ordering::Less),
        BinOp::And | BinOp::Or => unreachable!("evaluated lazily"),
        BinOp::JsonGet
        | BinOp::JsonGetText
        | BinOp::JsonPath
        | BinOp::JsonPathText
        | BinOp::Contains
        | BinOp::ContainedBy
        | BinOp::HasKey => unreachable!("json_ops answers its operators"),
        BinOp::Overlaps => unreachable!("arrays answers &&"),
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::ShiftLeft | BinOp::ShiftRight => {
            bitwise(op, &a, &b)
        }
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => {
            if let Some(result) = temporal::arithmetic(op, &a, &b) {
                return result;
            }
            if let Some(result) = float4_arithmetic(op, &a, &b) {
                return result;
            }
            arithmetic(op, to_num(&a)?, to_num(&b)?).map(Num::value)
        }
    }
}

/// `a op b` in single precision when it is PostgreSQL's float4 operator: two REALs, or
/// a REAL and text read as one (an untyped literal takes the other side's type). None
/// for anything else, including `%` (PostgreSQL has none for float4; ours is float8's).
fn float4_arithmetic(op: BinOp, a: &Value, b: &Value) -> Option<DbResult<Value>> {
    if op == BinOp::Mod {
        return None;
    }
    let (x, y) = match (a, b) {
        (Value::Float4(x), Value::Float4(y)) => (*x, *y),
        (Value::Float4(x), Value::Text(t)) => match crate::float4::parse(t) {
            Ok(y) => (*x, y),
            Err(e) => return Some(Err(e)),
        },
        (Value::Text(t), Value::Float4(y)) => match crate::float4::parse(t) {
            Ok(x) => (x, *y),
            Err(e) => return Some(Err(e)),
        },
        _ => return None,
    };
    Some(crate::float4::arithmetic(op, x, y).map(Value::Float4))
}

/// PostgreSQL's 42809 for `.field` of a value that is no record.
fn not_composite(ty: Option<DataType>) -> DbError {
    let name = ty.map_or("unknown".into(), |t| t.name().to_lowercase());
    DbError::WrongObjectType(format!(
        "column notation .field applied to type {name}, which is not a composite type"
    ))
}

/// The bitwise operators on two integers (PostgreSQL has them for the integer types and
/// bit strings only; a shift by 64 or more, or by a negative count, follows its C: the
/// count taken modulo 64).
fn bitwise(op: BinOp, a: &Value, b: &Value) -> DbResult<Value> {
    let (Value::Int(x), Value::Int(y)) = (a, b) else {
        let name = |v: &Value| v.data_type().map_or("unknown".into(), |t| t.name().to_lowercase());
        let symbol = match op {
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "#",
            BinOp::ShiftLeft => "<<",
            _ => ">>",
        };
        return Err(DbError::UndefinedOperator(format!("{} {symbol} {}", name(a), name(b))));
    };
    Ok(Value::Int(match op {
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::ShiftLeft => x.wrapping_shl(*y as u32),
        BinOp::ShiftRight => x.wrapping_shr(*y as u32),
        _ => unreachable!("not a bitwise operator"),
    }))
}

pub(crate) fn arithmetic(op: BinOp, a: Num, b: Num) -> DbResult<Num> {
    match (a, b) {
        (Num::I(x), Num::I(y)) => {
            let r = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div | BinOp::Mod if y == 0 => return Err(DbError::DivisionByZero),
                BinOp::Div => x.checked_div(y),
                BinOp::Mod => Some(x.checked_rem(y).unwrap_or(0)),
                _ => unreachable!("not arithmetic"),
            };
            r.map(Num::I).ok_or_else(out_of_range)
        }
        (x @ Num::F(_), y) | (x, y @ Num::F(_)) => {
            let (x, y) = (x.as_f64(), y.as_f64());
            Ok(Num::F(match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div | BinOp::Mod if y == 0.0 => return Err(DbError::DivisionByZero),
                BinOp::Div => x / y,
                BinOp::Mod => x % y,
                _ => unreachable!("not arithmetic"),
            }))
        }
        (x, y) => {
            let (x, y) = (x.into_decimal(), y.into_decimal());
            Ok(Num::N(match op {
                BinOp::Add => numeric::add(&x, &y)?,
                BinOp::Sub => numeric::sub(&x, &y)?,
                BinOp::Mul => numeric::mul(&x, &y)?,
                BinOp::Div => numeric::div(&x, &y)?,
                BinOp::Mod => numeric::rem(&x, &y)?,
                _ => unreachable!("not arithmetic"),
            }))
        }
    }
}

/// The type of `a op b` for an arithmetic operator, from its operands' types: INT for
/// two INTs, FLOAT with a FLOAT, else an unconstrained NUMERIC with a NUMERIC.
pub(crate) fn arithmetic_type(a: Option<DataType>, b: Option<DataType>) -> Option<DataType> {
    match (a, b) {
        (Some(DataType::Int), Some(DataType::Int)) => Some(DataType::Int),
        (Some(DataType::Float4), Some(DataType::Float4)) => Some(DataType::Float4),
        (Some(DataType::Float | DataType::Float4), _) | (_, Some(DataType::Float | DataType::Float4)) => {
            Some(DataType::Float)
        }
        (Some(DataType::Numeric(_)), Some(DataType::Int | DataType::Numeric(_)))
        | (Some(DataType::Int), Some(DataType::Numeric(_))) => Some(DataType::Numeric(None)),
        _ => None,
    }
}

/// The one type of several values (a CASE's results, COALESCE's arguments): their type
/// when they agree; for numbers of different types FLOAT if one is, else NUMERIC if one
/// is; else the first known.
pub(crate) fn common_type(types: impl Iterator<Item = Option<DataType>>) -> Option<DataType> {
    let mut first: Option<DataType> = None;
    let mut numbers = None;
    for ty in types.flatten() {
        match first {
            None => first = Some(ty),
            Some(f) if f == ty => {}
            Some(_) => {}
        }
        numbers = match (numbers, ty) {
            (Some(DataType::Float), _) | (_, DataType::Float) => Some(DataType::Float),
            (Some(a), b) if a == b => Some(a),
            // REAL is preferred to the exact types, as PostgreSQL resolves `VALUES (1::real),
            // (2.5)` as real (a NUMERIC converts to float4 implicitly).
            (Some(DataType::Float4), DataType::Int | DataType::Numeric(_))
            | (Some(DataType::Int | DataType::Numeric(_)) | None, DataType::Float4) => Some(DataType::Float4),
            (Some(DataType::Numeric(_)), DataType::Int | DataType::Numeric(_))
            | (Some(DataType::Int), DataType::Numeric(_))
            | (None, DataType::Numeric(_)) => Some(DataType::Numeric(None)),
            (None, DataType::Int) => Some(DataType::Int),
            (_, _) => return first,
        };
    }
    match (first, numbers) {
        (Some(f), Some(n)) if f != n => Some(n),
        _ => first,
    }
}

/// An explicit conversion (CAST, `::`): as an assignment would, and also FLOAT to INT by
/// rounding, BOOLEAN to and from INT, and truncation to a VARCHAR(n)'s length.
pub(crate) fn cast(v: Value, ty: DataType) -> DbResult<Value> {
    match (ty, v) {
        (_, Value::Null) => Ok(Value::Null),
        (DataType::Int, Value::Float(f)) => float_to_int(f),
        (DataType::Int, Value::Float4(f)) => float_to_int(f64::from(f)),
        (DataType::Int, Value::Bool(b)) => Ok(Value::Int(b as i64)),
        (DataType::Bool, Value::Int(i)) => Ok(Value::Bool(i != 0)),
        (DataType::Text { max_chars }, v) => {
            let text = match v {
                Value::Text(t) => t,
                other => other.to_string(),
            };
            Ok(Value::Text(match max_chars {
                Some(max) if text.chars().count() > max as usize => text.chars().take(max as usize).collect(),
                _ => text,
            }))
        }
        // An explicit CHAR(n) cuts a longer text to n characters, then drops trailing
        // blanks.
        (DataType::Char { len: Some(n) }, v) => {
            let text = match v {
                Value::Text(t) => t,
                other => other.to_string(),
            };
            let text: String = text.chars().take(n as usize).collect();
            coerce(Value::Text(text), ty)
        }
        (ty, v) => coerce(v, ty),
    }
}

/// Whether `pattern` (a regular expression) matches somewhere in `text`. The last
/// pattern compiled on the thread is kept: a WHERE compares every row with one pattern.
fn regex_matches(text: &str, pattern: &str, case_insensitive: bool) -> DbResult<bool> {
    with_regex(pattern, case_insensitive, |regex| regex.is_match(text))
}

/// `f` of `pattern` compiled (the last pattern compiled on the thread is kept).
fn with_regex<T>(
    pattern: &str,
    case_insensitive: bool,
    f: impl FnOnce(&regex_lite::Regex) -> T,
) -> DbResult<T> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(String, bool, regex_lite::Regex)>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        let fresh = !matches!(&*last, Some((p, ci, _)) if p == pattern && *ci == case_insensitive);
        if fresh {
            let regex = regex_lite::RegexBuilder::new(pattern)
                .case_insensitive(case_insensitive)
                .build()
                .map_err(|e| DbError::InvalidRegex(format!("invalid regular expression: {e}")))?;
            *last = Some((pattern.to_string(), case_insensitive, regex));
        }
        let (_, _, regex) = last.as_ref().expect("a compiled pattern");
        Ok(f(regex))
    })
}

/// A float rounded to an integer as PostgreSQL's float-to-integer casts round (`rint`:
/// half to even, 2.5 -> 2, 3.5 -> 4; a NUMERIC's cast rounds half away from zero), or an
/// error out of range.
pub(crate) fn float_to_int(f: f64) -> DbResult<Value> {
    let r = f.round_ties_even();
    if (-9.223_372_036_854_775e18..=9.223_372_036_854_775e18).contains(&r) {
        Ok(Value::Int(r as i64))
    } else {
        Err(out_of_range())
    }
}

fn text_of(v: Value) -> String {
    match v {
        Value::Text(t) => t,
        other => other.to_string(),
    }
}

fn int_arg(v: &Value) -> DbResult<i64> {
    match to_num(v)? {
        Num::I(i) => Ok(i),
        Num::F(f) => match float_to_int(f)? {
            Value::Int(i) => Ok(i),
            _ => unreachable!("float_to_int gives an INT"),
        },
        Num::N(n) => numeric::to_i64(&n),
    }
}

fn call(func: Func, args: &[Expr], row: &[Value], aggs: &[Value]) -> DbResult<Value> {
    // Functions that do not simply return NULL on a NULL argument.
    match func {
        Func::Coalesce => {
            for a in args {
                let v = a.eval(row, aggs)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            return Ok(Value::Null);
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for a in args {
                let v = a.eval(row, aggs)?;
                if v.is_null() {
                    continue;
                }
                let better = match &best {
                    None => true,
                    Some(b) => {
                        let o = compare(&v, b)?;
                        if func == Func::Greatest {
                            o == Some(Ordering::Greater)
                        } else {
                            o == Some(Ordering::Less)
                        }
                    }
                };
                if better {
                    best = Some(v);
                }
            }
            return Ok(best.unwrap_or(Value::Null));
        }
        Func::Nullif => {
            let a = args[0].eval(row, aggs)?;
            let b = args[1].eval(row, aggs)?;
            return Ok(if compare(&a, &b)? == Some(Ordering::Equal) { Value::Null } else { a });
        }
        Func::Concat => {
            let mut out = String::new();
            for a in args {
                let v = a.eval(row, aggs)?;
                if !v.is_null() {
                    out.push_str(&functions::output_text(v));
                }
            }
            return Ok(Value::Text(out));
        }
        Func::ConcatWs => {
            let values = args.iter().map(|a| a.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
            return functions::concat_ws(&values[0], &values[1..]);
        }
        Func::Format => {
            let values = args.iter().map(|a| a.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
            return match &values[0] {
                Value::Null => Ok(Value::Null),
                format => Ok(Value::Text(functions::format(&text_of(format.clone()), &values[1..])?)),
            };
        }
        Func::Nvl2 => {
            let chosen = if args[0].eval(row, aggs)?.is_null() { &args[2] } else { &args[1] };
            return chosen.eval(row, aggs);
        }
        Func::OracleDecode => {
            // Only what is needed is evaluated, as Oracle does: the searches up to the
            // first match, then its result.
            let value = args[0].eval(row, aggs)?;
            let mut pairs = args[1..].chunks_exact(2);
            for pair in pairs.by_ref() {
                let search = pair[0].eval(row, aggs)?;
                let hit = match (value.is_null(), search.is_null()) {
                    (true, true) => true,
                    (false, false) => compare(&value, &search)? == Some(Ordering::Equal),
                    _ => false,
                };
                if hit {
                    return pair[1].eval(row, aggs);
                }
            }
            return match pairs.remainder() {
                [default] => default.eval(row, aggs),
                _ => Ok(Value::Null),
            };
        }
        Func::Random => return Ok(Value::Float(random())),
        Func::TableSample(method) => {
            let values = args.iter().map(|a| a.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
            let kept = crate::sql::tablesample::keeps(method, &values[0], &values[1], &values[2..], random)?;
            return Ok(Value::Bool(kept));
        }
        Func::CurrentSchema => return Ok(Value::Text("public".into())),
        Func::ClockTimestamp => return Ok(Value::TimestampTz(datetime::now())),
        Func::GenRandomUuid => return Ok(Value::Uuid(crate::uuid::random())),
        _ if arrays::is_array_function(func) => {
            let values = args.iter().map(|a| a.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
            return arrays::call(func, &values);
        }
        // NULLs are values of these (a JSON null), not a NULL result.
        Func::JsonBuildObject | Func::JsonbBuildObject | Func::JsonBuildArray | Func::JsonbBuildArray => {
            let values = args.iter().map(|a| a.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
            return match func {
                Func::JsonBuildObject => json_ops::build_object(&values, false),
                Func::JsonbBuildObject => json_ops::build_object(&values, true),
                Func::JsonBuildArray => json_ops::build_array(&values, false),
                _ => json_ops::build_array(&values, true),
            };
        }
        _ => {}
    }
    let values = args.iter().map(|a| a.eval(row, aggs)).collect::<DbResult<Vec<_>>>()?;
    if values.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let num = |i: usize| to_num(&values[i]);
    Ok(match func {
        Func::Abs => match (&values[0], num(0)?) {
            (Value::Float4(f), _) => Value::Float4(f.abs()),
            (_, Num::I(i)) => Value::Int(i.checked_abs().ok_or_else(out_of_range)?),
            (_, Num::F(f)) => Value::Float(f.abs()),
            (_, Num::N(n)) => Value::numeric(n.abs()),
        },
        Func::Mod => arithmetic(BinOp::Mod, num(0)?, num(1)?)?.value(),
        Func::Trunc | Func::Round => {
            let digits = if values.len() > 1 { int_arg(&values[1])? } else { 0 };
            round_or_trunc(num(0)?, digits, func == Func::Round)?
        }
        Func::Floor => match num(0)? {
            Num::I(i) => Value::Int(i),
            Num::F(f) => Value::Float(f.floor()),
            Num::N(n) => Value::numeric(numeric::round(&n, 0, RoundMode::Floor)?),
        },
        Func::Ceil => match num(0)? {
            Num::I(i) => Value::Int(i),
            Num::F(f) => Value::Float(f.ceil()),
            Num::N(n) => Value::numeric(numeric::round(&n, 0, RoundMode::Ceiling)?),
        },
        Func::Sqrt => Value::Float(functions::sqrt(num(0)?.as_f64())?),
        Func::Power => Value::Float(functions::power(num(0)?.as_f64(), num(1)?.as_f64())?),
        Func::Lower => Value::Text(text_of(values[0].clone()).to_lowercase()),
        Func::Upper => Value::Text(text_of(values[0].clone()).to_uppercase()),
        // A bytea's length is its bytes, a text's its characters.
        Func::Length => match &values[0] {
            Value::Bytea(b) => Value::Int(b.len() as i64),
            v => Value::Int(text_of(v.clone()).chars().count() as i64),
        },
        Func::OctetLength => match &values[0] {
            Value::Bytea(b) => Value::Int(b.len() as i64),
            v => Value::Int(text_of(v.clone()).len() as i64),
        },
        Func::Encode => match &values[0] {
            Value::Bytea(b) => Value::Text(crate::bytea::encode(b, &text_of(values[1].clone()))?),
            Value::Text(t) => {
                Value::Text(crate::bytea::encode(&crate::bytea::parse(t)?, &text_of(values[1].clone()))?)
            }
            other => {
                return Err(DbError::UndefinedFunction(format!(
                    "encode({}, text)",
                    other.data_type().map_or("unknown".into(), |t| t.name().to_lowercase())
                )))
            }
        },
        Func::ToJson => Value::Json(json_ops::to_json_text(&values[0])?.into()),
        Func::ToJsonb => Value::Jsonb(json_ops::to_jsonb(&values[0])?.to_text().into()),
        Func::JsonTypeof => json_ops::type_of(&values[0])?,
        Func::JsonArrayLength => json_ops::array_length(&values[0])?,
        Func::Decode => Value::Bytea(
            crate::bytea::decode(&text_of(values[0].clone()), &text_of(values[1].clone()))?.into(),
        ),
        Func::Repeat => {
            let s = text_of(values[0].clone());
            let n = int_arg(&values[1])?.max(0) as usize;
            check_length(s.chars().count().saturating_mul(n))?;
            Value::Text(s.repeat(n))
        }
        Func::Rpad | Func::Lpad => {
            let s = text_of(values[0].clone());
            let n = int_arg(&values[1])?.max(0) as usize;
            check_length(n)?;
            let fill = if values.len() > 2 { text_of(values[2].clone()) } else { " ".into() };
            Value::Text(pad(&s, n, &fill, func == Func::Lpad))
        }
        Func::Substr => {
            let s = text_of(values[0].clone());
            let start = int_arg(&values[1])?;
            let end = if values.len() > 2 {
                let count = int_arg(&values[2])?;
                if count < 0 {
                    return Err(DbError::SubstringError("negative substring length not allowed".into()));
                }
                start.saturating_add(count)
            } else {
                i64::MAX
            };
            let from = start.max(1);
            Value::Text(
                s.chars()
                    .enumerate()
                    .filter(|(i, _)| {
                        let pos = *i as i64 + 1;
                        pos >= from && pos < end
                    })
                    .map(|(_, c)| c)
                    .collect(),
            )
        }
        Func::DatePart => temporal::date_part(&values[0], &values[1])?,
        Func::DateTrunc => temporal::date_trunc(&values[0], &values[1], values.get(2))?,
        Func::AtTimeZone => temporal::at_time_zone(&values[0], &values[1])?,
        Func::MakeDate => temporal::make_date(&values[0], &values[1], &values[2])?,
        Func::Age => temporal::age(&values[0], values.get(1), datetime::now())?,
        Func::Trim(kind) => {
            let chars = if values.len() > 1 { text_of(values[1].clone()) } else { " ".into() };
            Value::Text(functions::trim(kind, &text_of(values[0].clone()), &chars))
        }
        Func::Replace => Value::Text(functions::replace(
            &text_of(values[0].clone()),
            &text_of(values[1].clone()),
            &text_of(values[2].clone()),
        )?),
        Func::Strpos => {
            Value::Int(functions::strpos(&text_of(values[0].clone()), &text_of(values[1].clone())))
        }
        Func::Instr => {
            let position = if values.len() > 2 { int_arg(&values[2])? } else { 1 };
            let occurrence = if values.len() > 3 { int_arg(&values[3])? } else { 1 };
            let (s, needle) = (text_of(values[0].clone()), text_of(values[1].clone()));
            Value::Int(functions::instr(&s, &needle, position, occurrence)?)
        }
        Func::SplitPart => Value::Text(functions::split_part(
            &text_of(values[0].clone()),
            &text_of(values[1].clone()),
            int_arg(&values[2])?,
        )?),
        Func::Left => Value::Text(functions::left(&text_of(values[0].clone()), int_arg(&values[1])?)),
        Func::Right => Value::Text(functions::right(&text_of(values[0].clone()), int_arg(&values[1])?)),
        Func::Initcap => Value::Text(functions::initcap(&text_of(values[0].clone()))),
        Func::Reverse => Value::Text(functions::reverse(&text_of(values[0].clone()))),
        Func::Md5 => Value::Text(functions::md5_hex(text_of(values[0].clone()).as_bytes())),
        Func::Sha(bits) => {
            Value::Bytea(functions::sha(bits, &functions::bytes_of(bits.function_name(), &values[0])?).into())
        }
        Func::WidthBucket => functions::width_bucket(&values[0], &values[1], &values[2], &values[3])?,
        Func::WidthBucketThresholds => functions::width_bucket_thresholds(&values[0], &values[1])?,
        Func::SimilarToEscape => {
            let escape = values.get(1).map(|e| text_of(e.clone()));
            Value::Text(functions::similar_to_escape(&text_of(values[0].clone()), escape.as_deref())?)
        }
        Func::RegexpReplace => {
            let flags = values.get(3).map(|f| text_of(f.clone())).unwrap_or_default();
            let (source, pattern) = (text_of(values[0].clone()), text_of(values[1].clone()));
            let (global, case_insensitive) = functions::regexp_flags(&flags)?;
            let replacement = functions::regexp_replacement(&text_of(values[2].clone()));
            with_regex(&pattern, case_insensitive, |regex| {
                Value::Text(if global {
                    regex.replace_all(&source, replacement.as_str()).into_owned()
                } else {
                    regex.replace(&source, replacement.as_str()).into_owned()
                })
            })?
        }
        Func::Sign => functions::sign(&num(0)?.value())?,
        Func::ToChar => {
            if formatting::to_char_is_null(&values[0]) {
                Value::Null
            } else {
                Value::Text(formatting::to_char(&values[0], &text_of(values[1].clone()))?)
            }
        }
        Func::ToDate => formatting::to_date(&text_of(values[0].clone()), &text_of(values[1].clone()))?,
        Func::ToTimestamp => match values.len() {
            1 => formatting::to_timestamp_epoch(num(0)?.as_f64())?,
            _ => formatting::to_timestamp(&text_of(values[0].clone()), &text_of(values[1].clone()))?,
        },
        Func::ConcatWs | Func::Format | Func::Nvl2 | Func::OracleDecode => unreachable!("handled above"),
        Func::Coalesce
        | Func::Greatest
        | Func::Least
        | Func::Nullif
        | Func::Concat
        | Func::Random
        | Func::TableSample(_)
        | Func::ClockTimestamp
        | Func::GenRandomUuid
        | Func::JsonBuildObject
        | Func::JsonbBuildObject
        | Func::JsonBuildArray
        | Func::JsonbBuildArray
        | Func::CurrentSchema
        | Func::ArrayLength
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
        | Func::StringToArray => unreachable!("handled above"),
    })
}

/// PostgreSQL's 54000 for a string a function would build too long, refused before it
/// is built.
fn check_length(chars: usize) -> DbResult<()> {
    if chars > MAX_STRING_CHARS {
        return Err(DbError::ProgramLimitExceeded(format!(
            "requested length too large: {chars} characters, over the limit of {MAX_STRING_CHARS}"
        )));
    }
    Ok(())
}

/// PostgreSQL's rpad/lpad: pads `s` to `n` characters with `fill` repeated, or cuts it to
/// `n` characters (keeping its start) when it is longer.
fn pad(s: &str, n: usize, fill: &str, left: bool) -> String {
    let len = s.chars().count();
    if len >= n || fill.is_empty() {
        return s.chars().take(n).collect();
    }
    let padding: String = fill.chars().cycle().take(n - len).collect();
    if left {
        padding + s
    } else {
        s.to_string() + &padding
    }
}

/// round(x, digits) (half away from zero) or trunc(x, digits).
fn round_or_trunc(x: Num, digits: i64, round: bool) -> DbResult<Value> {
    match x {
        Num::I(i) if digits >= 0 => Ok(Value::Int(i)),
        Num::I(i) => {
            let Some(p) = 10i64.checked_pow((-digits).min(19) as u32) else { return Ok(Value::Int(0)) };
            let r = i % p;
            let mut out = i - r;
            if round && r.unsigned_abs() * 2 >= p.unsigned_abs() {
                out = out.checked_add(p * i.signum()).ok_or_else(out_of_range)?;
            }
            Ok(Value::Int(out))
        }
        Num::F(f) => {
            let p = 10f64.powi(digits.clamp(-300, 300) as i32);
            let scaled = f * p;
            // round(double precision) is PostgreSQL's rint (half to even); with digits,
            // which PostgreSQL has for NUMERIC only, half away from zero as NUMERIC's.
            let done = match (round, digits) {
                (true, 0) => scaled.round_ties_even(),
                (true, _) => scaled.round(),
                (false, _) => scaled.trunc(),
            };
            Ok(Value::Float(if digits == 0 { done } else { done / p }))
        }
        Num::N(n) => {
            let mode = if round { RoundMode::HalfAwayFromZero } else { RoundMode::TowardZero };
            Ok(Value::numeric(numeric::round(&n, digits, mode)?))
        }
    }
}

thread_local! {
    static RANDOM_STATE: Cell<u64> = Cell::new({
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let local = 0u8;
        (nanos ^ (&local as *const u8 as u64).rotate_left(32)) | 1
    });
}

/// A pseudo-random float in [0, 1) (xorshift64*, one state per thread).
fn random() -> f64 {
    RANDOM_STATE.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// LIKE: `%` any run of characters, `_` one character, `escape` makes the next character
/// literal.
/// The right side of `LIKE ANY (...)` / `LIKE ALL (...)`.
enum QuantifiedPatterns<'a> {
    Array(&'a ast::Expr),
    Subquery(&'a ast::Query),
}

/// Whether a LIKE's pattern is quantified, and how: sqlparser reads `LIKE ANY (p)` with
/// its `any` flag and `p` the pattern, and `LIKE ALL (p)` as a call of a function `all`
/// (a reserved word in PostgreSQL, so no function of that name can be meant). Returns
/// (ALL, the parenthesized array or subquery).
fn quantified_patterns(any: bool, pattern: &ast::Expr) -> Option<(bool, QuantifiedPatterns<'_>)> {
    fn of(e: &ast::Expr) -> QuantifiedPatterns<'_> {
        match e {
            ast::Expr::Subquery(query) => QuantifiedPatterns::Subquery(query),
            ast::Expr::Nested(inner) => of(inner),
            other => QuantifiedPatterns::Array(other),
        }
    }
    if any {
        return Some((false, of(pattern)));
    }
    let ast::Expr::Function(f) = pattern else { return None };
    let [ast::ObjectNamePart::Identifier(name)] = f.name.0.as_slice() else { return None };
    if name.quote_style.is_some() || !name.value.eq_ignore_ascii_case("all") {
        return None;
    }
    match &f.args {
        ast::FunctionArguments::Subquery(query) => Some((true, QuantifiedPatterns::Subquery(query))),
        ast::FunctionArguments::List(list)
            if list.duplicate_treatment.is_none() && list.clauses.is_empty() =>
        {
            match list.args.as_slice() {
                [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))] => Some((true, of(e))),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `lhs [NOT] [I]LIKE ANY | ALL (array)`: PostgreSQL's ANY/ALL of LIKE over the array's
/// patterns: an empty array gives false (ANY) or true (ALL) whatever `lhs`; else a NULL
/// `lhs` or a NULL pattern that could decide gives NULL.
fn like_quantified(
    lhs: &Value,
    array: Value,
    all: bool,
    negated: bool,
    case_insensitive: bool,
) -> DbResult<Value> {
    if array.is_null() {
        return Ok(Value::Null);
    }
    let array = arrays::as_array(array, Some(ElemType::Text))?;
    if array.items.is_empty() {
        return Ok(Value::Bool(all));
    }
    if lhs.is_null() {
        return Ok(Value::Null);
    }
    let fold = |v: &Value| if case_insensitive { v.to_string().to_lowercase() } else { v.to_string() };
    let text = fold(lhs);
    let mut unknown = false;
    for pattern in &array.items {
        if pattern.is_null() {
            unknown = true;
            continue;
        }
        let holds = like(&text, &fold(pattern), Some('\\')) != negated;
        if holds != all {
            return Ok(Value::Bool(holds));
        }
    }
    Ok(if unknown { Value::Null } else { Value::Bool(all) })
}

fn like(text: &str, pattern: &str, escape: Option<char>) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum P {
        Lit(char),
        One,
        Many,
    }
    let mut tokens = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        tokens.push(match c {
            c if Some(c) == escape => P::Lit(chars.next().unwrap_or(c)),
            '%' => P::Many,
            '_' => P::One,
            c => P::Lit(c),
        });
    }
    let text: Vec<char> = text.chars().collect();
    let (mut t, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match tokens.get(p) {
            Some(P::One) => {
                t += 1;
                p += 1;
            }
            Some(P::Lit(c)) if *c == text[t] => {
                t += 1;
                p += 1;
            }
            Some(P::Many) => {
                star = Some((p, t));
                p += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    tokens[p..].iter().all(|tok| *tok == P::Many)
}

/// An aggregate's ORDER BY key's direction: (descending, NULLs first), NULLs by default
/// sorting as the largest value (PostgreSQL's default); `USING` is refused.
fn aggregate_key_direction(key: &ast::OrderByExpr, name: &str) -> DbResult<(bool, bool)> {
    let descending = match &key.options.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(ast::OrderBySort::Using(_)) => {
            return Err(DbError::Unsupported(format!("ORDER BY ... USING in {name}()")))
        }
    };
    Ok((descending, key.options.nulls_first.unwrap_or(descending)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template given its values is the expression compiled with the values: same
    /// tree, same result on a row, same error.
    #[test]
    fn a_template_given_values_is_the_expression_compiled_with_them() {
        use crate::schema::{Column, TableSchema};
        use sqlparser::dialect::PostgreSqlDialect;
        use sqlparser::parser::Parser;
        let schema = TableSchema::new(
            "t",
            vec![
                Column { name: "id".into(), ty: DataType::Int, nullable: false },
                Column { name: "n".into(), ty: DataType::Int, nullable: true },
                Column { name: "v".into(), ty: DataType::Text { max_chars: None }, nullable: true },
            ],
            vec![0],
        )
        .unwrap();
        let relation = Relation {
            name: "t".into(),
            alias: None,
            schema: std::sync::Arc::new(schema),
            derived: None,
            function: None,
        };
        let row = [Value::Int(3), Value::Int(10), Value::Text("abc".into())];
        let params = [Value::Int(3), Value::Text("x".into()), Value::Int(0)];
        let cases = [
            "id = $1",
            "$1 = id",
            "v = $2",
            "$2",
            "n + 1",
            "n + $1 * 2",
            "$1 + 1",
            "id = $1 + 1 AND n > $3",
            "id IN ($1, $3, 5)",
            "id BETWEEN $3 AND $1",
            "v || $2",
            "v LIKE $2 || '%'",
            "CASE WHEN n > $1 THEN $2 ELSE v END",
            "mod($1, 2) = 1",
            "n / $3",
            "$1 / $3",
            "id = $4",
            "CAST($1 AS TEXT)",
            "$2 IS NULL",
        ];
        for sql in cases {
            let ast = Parser::new(&PostgreSqlDialect {}).try_with_sql(sql).unwrap().parse_expr().unwrap();
            let direct = Binder::new(Some(&relation), &params).scalar(&ast, "WHERE");
            let given = Binder::template(Some(&relation))
                .scalar(&ast, "WHERE")
                .map(Template::new)
                .and_then(|t| t.with_params(&params, &|| 0).map(|e| e.into_owned()));
            match (&direct, &given) {
                (Ok(d), Ok(g)) => {
                    assert_eq!(d, g, "{sql}");
                    assert_eq!(
                        format!("{:?}", d.eval(&row, &[])),
                        format!("{:?}", g.eval(&row, &[])),
                        "{sql}"
                    );
                }
                (Err(d), Err(g)) => assert_eq!(d.to_string(), g.to_string(), "{sql}"),
                _ => panic!("{sql}: compiled with values {direct:?}, template given values {given:?}"),
            }
        }
    }

    #[test]
    fn like_patterns() {
        assert!(like("hello", "h%o", Some('\\')));
        assert!(like("hello", "h_llo", Some('\\')));
        assert!(like("hello", "%", Some('\\')));
        assert!(!like("hello", "h_lo", Some('\\')));
        assert!(like("a%b", "a\\%b", Some('\\')));
        assert!(!like("axb", "a\\%b", Some('\\')));
        assert!(like("abcabc", "%abc", Some('\\')));
        assert!(like("", "%%", None));
        assert!(!like("", "_", None));
    }

    #[test]
    fn arithmetic_and_comparisons() {
        let i = |v| Value::Int(v);
        assert_eq!(binary(BinOp::Div, i(7), i(2)).unwrap(), i(3));
        assert_eq!(binary(BinOp::Div, i(-7), i(2)).unwrap(), i(-3));
        assert_eq!(binary(BinOp::Mod, i(-7), i(3)).unwrap(), i(-1));
        assert_eq!(binary(BinOp::Add, i(1), Value::Float(0.5)).unwrap(), Value::Float(1.5));
        assert!(matches!(binary(BinOp::Div, i(1), i(0)), Err(DbError::DivisionByZero)));
        assert!(matches!(binary(BinOp::Mod, Value::Float(1.0), i(0)), Err(DbError::DivisionByZero)));
        assert_eq!(binary(BinOp::Eq, Value::Text("5".into()), i(5)).unwrap(), Value::Bool(true));
        assert_eq!(binary(BinOp::Lt, i(2), Value::Float(2.5)).unwrap(), Value::Bool(true));
        assert_eq!(binary(BinOp::Eq, Value::Null, i(5)).unwrap(), Value::Null);
        assert_eq!(binary(BinOp::Eq, Value::Text("abc".into()), i(5)).unwrap_err().sqlstate(), "22P02");
        assert!(binary(BinOp::Add, i(i64::MAX), i(1)).is_err());
    }

    #[test]
    fn rounding() {
        // round(double precision) is PostgreSQL's rint: half to even.
        assert_eq!(round_or_trunc(Num::F(2.5), 0, true).unwrap(), Value::Float(2.0));
        assert_eq!(round_or_trunc(Num::F(3.5), 0, true).unwrap(), Value::Float(4.0));
        assert_eq!(float_to_int(-2.5).unwrap(), Value::Int(-2));
        assert_eq!(round_or_trunc(Num::F(-2.567), 2, true).unwrap(), Value::Float(-2.57));
        assert_eq!(round_or_trunc(Num::F(-2.567), 2, false).unwrap(), Value::Float(-2.56));
        assert_eq!(round_or_trunc(Num::I(1250), -2, true).unwrap(), Value::Int(1300));
        assert_eq!(round_or_trunc(Num::I(-1250), -2, true).unwrap(), Value::Int(-1300));
        assert_eq!(round_or_trunc(Num::I(1249), -2, false).unwrap(), Value::Int(1200));
    }

    #[test]
    fn padding_and_random() {
        assert_eq!(pad("ab", 5, "xy", false), "abxyx");
        assert_eq!(pad("ab", 5, "xy", true), "xyxab");
        assert_eq!(pad("abcdef", 3, " ", true), "abc");
        for _ in 0..1000 {
            let r = random();
            assert!((0.0..1.0).contains(&r));
        }
    }
}
