//! The final step of the ordered-set and hypothetical-set aggregates
//! (`percentile_cont(f) WITHIN GROUP (ORDER BY x)` and kin, `expr::OrderedSetFunc`):
//! given a group's rows' keys sorted in WITHIN GROUP's order (`query::Accumulator`
//! collects and sorts them) and the direct arguments evaluated on the group row, the
//! aggregate's value, computed as PostgreSQL 15's `orderedsetaggs.c` computes it.
//!
//! Invariants: the percentiles' and mode's rows never hold a NULL key (the
//! accumulator skips them); a fraction is checked before the rows are looked at, as
//! PostgreSQL's single-fraction final functions check it (an array of fractions over
//! no rows is NULL unchecked, as theirs is). Never reads a key beyond the first but
//! for the hypothetical-set aggregates, whose rows and hypothetical row have one value
//! per WITHIN GROUP key.

use std::cmp::Ordering;

use crate::array::{Array, ElemType};
use crate::error::{DbError, DbResult};
use crate::sql::expr::{binary, compare, to_num, AggOrder, BinOp, Fractions, OrderedSetFunc};
use crate::value::{DataType, Value};

/// The value of `func` over `sorted` (each row's WITHIN GROUP keys, in that order)
/// with the group's `direct` arguments.
pub(crate) fn finish(
    func: OrderedSetFunc,
    order: &[AggOrder],
    sorted: &[&[Value]],
    direct: &[Value],
) -> DbResult<Value> {
    match func {
        OrderedSetFunc::PercentileCont(fractions) | OrderedSetFunc::PercentileDisc(fractions) => {
            let continuous = matches!(func, OrderedSetFunc::PercentileCont(_));
            let at = |fraction: f64| -> DbResult<Value> {
                if continuous {
                    percentile_cont(sorted, fraction)
                } else {
                    Ok(percentile_disc(sorted, fraction))
                }
            };
            match fractions {
                Fractions::One => {
                    let Some(fraction) = fraction_of(&direct[0])? else { return Ok(Value::Null) };
                    check_fraction(fraction)?;
                    if sorted.is_empty() {
                        return Ok(Value::Null);
                    }
                    at(fraction)
                }
                Fractions::Many => {
                    if sorted.is_empty() {
                        return Ok(Value::Null);
                    }
                    let Value::Array(fractions) = &direct[0] else { return Ok(Value::Null) };
                    // Every fraction checked before any is computed.
                    let fractions = fractions
                        .items
                        .iter()
                        .map(|f| {
                            let fraction = fraction_of(f)?;
                            fraction.map(check_fraction).transpose()?;
                            Ok(fraction)
                        })
                        .collect::<DbResult<Vec<Option<f64>>>>()?;
                    let values = fractions
                        .into_iter()
                        .map(|f| f.map_or(Ok(Value::Null), at))
                        .collect::<DbResult<Vec<Value>>>()?;
                    let elem = values
                        .iter()
                        .find_map(Value::data_type)
                        .or_else(|| {
                            sorted[0][0].data_type().map(|t| {
                                if continuous && t != DataType::Interval {
                                    DataType::Float
                                } else {
                                    t
                                }
                            })
                        })
                        .and_then(ElemType::of)
                        .ok_or_else(|| {
                            DbError::Unsupported(format!("an array of {} values", func_name(func)))
                        })?;
                    Ok(Array::new(elem, values).into_value())
                }
            }
        }
        OrderedSetFunc::Mode => Ok(mode(sorted)?),
        OrderedSetFunc::Rank
        | OrderedSetFunc::DenseRank
        | OrderedSetFunc::PercentRank
        | OrderedSetFunc::CumeDist => hypothetical(func, order, sorted, direct),
    }
}

fn func_name(func: OrderedSetFunc) -> &'static str {
    match func {
        OrderedSetFunc::PercentileCont(_) => "percentile_cont",
        OrderedSetFunc::PercentileDisc(_) => "percentile_disc",
        OrderedSetFunc::Mode => "mode",
        OrderedSetFunc::Rank => "rank",
        OrderedSetFunc::DenseRank => "dense_rank",
        OrderedSetFunc::PercentRank => "percent_rank",
        OrderedSetFunc::CumeDist => "cume_dist",
    }
}

/// A fraction as the double precision PostgreSQL takes it; None for NULL.
fn fraction_of(v: &Value) -> DbResult<Option<f64>> {
    if v.is_null() {
        return Ok(None);
    }
    Ok(Some(to_num(v)?.as_f64()))
}

/// PostgreSQL's 22003 for a fraction outside [0, 1] (NaN too), written as its `%g`
/// writes the usual ones.
fn check_fraction(fraction: f64) -> DbResult<()> {
    if (0.0..=1.0).contains(&fraction) {
        return Ok(());
    }
    let shown = if fraction.is_nan() { "NaN".to_string() } else { fraction.to_string() };
    Err(DbError::NumericOverflow(format!("percentile value {shown} is not between 0 and 1")))
}

/// The first row whose position reaches `fraction` of the rows (the first row for 0).
fn percentile_disc(sorted: &[&[Value]], fraction: f64) -> Value {
    let n = sorted.len();
    let row = (fraction * n as f64).ceil() as usize;
    sorted[row.clamp(1, n) - 1][0].clone()
}

/// The value at `fraction` of the way from the first row to the last, interpolated
/// linearly between the two rows around it (PostgreSQL's `float8_lerp` and
/// `interval_lerp`: lo + (hi - lo) * proportion).
fn percentile_cont(sorted: &[&[Value]], fraction: f64) -> DbResult<Value> {
    let last = (sorted.len() - 1) as f64;
    let (first_row, second_row) = ((fraction * last).floor(), (fraction * last).ceil());
    let lo = continuous(&sorted[first_row as usize][0])?;
    if first_row == second_row {
        return Ok(lo);
    }
    let hi = continuous(&sorted[second_row as usize][0])?;
    let proportion = fraction * last - first_row;
    match (lo, hi) {
        (Value::Float(lo), Value::Float(hi)) => Ok(Value::Float(lo + (hi - lo) * proportion)),
        (lo, hi) => {
            let step = binary(BinOp::Mul, binary(BinOp::Sub, hi, lo.clone())?, Value::Float(proportion))?;
            binary(BinOp::Add, step, lo)
        }
    }
}

/// percentile_cont's view of a key: a number as a double precision, an interval as is.
fn continuous(v: &Value) -> DbResult<Value> {
    match v {
        Value::Interval(_) => Ok(v.clone()),
        other => Ok(Value::Float(to_num(other)?.as_f64())),
    }
}

/// The most frequent key; among keys as frequent, the first in the sort order
/// (PostgreSQL's `mode_final` keeps a run only when it is strictly longer).
fn mode(sorted: &[&[Value]]) -> DbResult<Value> {
    let mut best: Option<(&Value, usize)> = None;
    let mut run: Option<(&Value, usize)> = None;
    for row in sorted {
        let v = &row[0];
        run = match run {
            Some((start, count)) if compare(start, v)? == Some(Ordering::Equal) => Some((start, count + 1)),
            _ => Some((v, 1)),
        };
        if let Some((start, count)) = run {
            if best.is_none_or(|(_, most)| count > most) {
                best = Some((start, count));
            }
        }
    }
    Ok(best.map_or(Value::Null, |(v, _)| v.clone()))
}

/// How a row's keys compare with another's in WITHIN GROUP's order (each key's
/// direction and NULLs' place).
fn compare_keys(order: &[AggOrder], a: &[Value], b: &[Value]) -> DbResult<Ordering> {
    for (key, (x, y)) in order.iter().zip(a.iter().zip(b)) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if key.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if key.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let o = compare(x, y)?.unwrap_or(Ordering::Equal);
                if key.descending {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if o != Ordering::Equal {
            return Ok(o);
        }
    }
    Ok(Ordering::Equal)
}

/// The hypothetical-set aggregates: where the row of `direct` values would fall among
/// the sorted rows. Before its peers for rank, dense_rank and percent_rank, after them
/// for cume_dist, as PostgreSQL's flag column places it.
fn hypothetical(
    func: OrderedSetFunc,
    order: &[AggOrder],
    sorted: &[&[Value]],
    direct: &[Value],
) -> DbResult<Value> {
    let rows = sorted.len();
    let mut before = 0usize;
    let mut peers = 0usize;
    let mut distinct_before = 0usize;
    let mut previous: Option<&[Value]> = None;
    for row in sorted {
        match compare_keys(order, row, direct)? {
            Ordering::Less => {
                before += 1;
                let new_peer_group = match previous {
                    None => true,
                    Some(p) => compare_keys(order, p, row)? != Ordering::Equal,
                };
                if new_peer_group {
                    distinct_before += 1;
                }
                previous = Some(row);
            }
            Ordering::Equal => peers += 1,
            // The rows are sorted: none after this one sorts before the hypothetical row.
            Ordering::Greater => break,
        }
    }
    Ok(match func {
        OrderedSetFunc::Rank => Value::Int(before as i64 + 1),
        OrderedSetFunc::DenseRank => Value::Int(distinct_before as i64 + 1),
        OrderedSetFunc::PercentRank if rows == 0 => Value::Float(0.0),
        OrderedSetFunc::PercentRank => Value::Float(before as f64 / rows as f64),
        _ => Value::Float((before + peers + 1) as f64 / (rows + 1) as f64),
    })
}
