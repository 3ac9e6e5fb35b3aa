//! Window functions: `f(args) OVER ([PARTITION BY ...] [ORDER BY ...] [frame])` in a
//! SELECT's list and ORDER BY, as PostgreSQL computes them.
//!
//! A query with window calls runs to its rows before the select list (after WHERE, and
//! after GROUP BY and HAVING in a grouped query, whose window arguments may read the
//! group's key and aggregates); then each call sorts those rows by its partition and
//! order keys, computes its value for every row, and the value is appended to the row:
//! the call compiles as `Expr::Window(i)` and the query turns that into the column it is
//! put in, so the select list, DISTINCT, ORDER BY and LIMIT read it like any column.
//!
//! Functions: `row_number`, `rank`, `dense_rank`, `percent_rank`, `cume_dist`, `ntile`,
//! `lag`/`lead` (offset, default), `first_value`, `last_value`, `nth_value`, and the
//! aggregates (but array_agg and LISTAGG, whose ORDER BY PostgreSQL does not take in a
//! window either) over a frame, with `FILTER (WHERE ...)`. Frames: PostgreSQL's
//! default (with ORDER BY, from the partition's start to the current row's last peer;
//! without, the whole partition), `ROWS` with `UNBOUNDED`/`n PRECEDING`/`CURRENT ROW`/
//! `n FOLLOWING` bounds, `GROUPS` (n peer groups before or after the current row's;
//! 42P20 without ORDER BY), `RANGE` with `UNBOUNDED` and `CURRENT ROW` bounds and with
//! offsets: the rows whose one ORDER BY key lies within the offset of the current row's
//! (`range_target`: integers, NUMERIC and FLOAT keys with numbers, date and time keys
//! with an INTERVAL, 0A000 for other pairs; a NULL key's frame is its NULL peers, and a
//! non-NULL key's never holds them). Offsets are checked as PostgreSQL checks them: NULL
//! is 22004, a negative one 22013. A frame that starts at the partition's start is
//! aggregated incrementally (a running total costs one step a row); another frame is
//! aggregated afresh for each row.
//!
//! Named windows (`WINDOW w AS (...)`, `OVER w`, `OVER (w ORDER BY ...)`) are resolved
//! to whole specifications before the calls compile, with PostgreSQL's rules and errors.
//! Frame exclusion (`EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS`, carried into the
//! frame's last bound by `frame_exclusion`) leaves rows out of each row's frame: such a
//! frame is aggregated afresh for each row. Not supported (0A000, as in PostgreSQL):
//! DISTINCT in a window aggregate.

use std::cmp::Ordering;

use sqlparser::ast;

use crate::error::{DbError, DbResult};
use crate::sql::expr::{ident_name, AggCall, AggFunc, Binder, Expr};
use crate::sql::frame_exclusion::Exclusion;
use crate::value::{DataType, Value};

/// A window function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    /// An aggregate over the frame, with the name it was called by.
    Aggregate(AggFunc, &'static str),
}

/// What a frame's offsets count: rows, a distance in the ORDER BY key's values, or peer
/// groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// A frame bound: rows before or after the current one (None: unbounded).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Bound {
    Preceding(Option<Expr>),
    CurrentRow,
    Following(Option<Expr>),
}

/// One window function call of a query.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WindowCall {
    pub func: WindowFunc,
    pub args: Vec<Expr>,
    pub partition: Vec<Expr>,
    /// ORDER BY: expression, descending, NULLs first.
    pub order: Vec<(Expr, bool, bool)>,
    /// The frame's units and bounds; None: PostgreSQL's default frame.
    pub frame: Option<(FrameUnits, Bound, Bound)>,
    /// An aggregate's `FILTER (WHERE ...)`.
    pub filter: Option<Expr>,
    /// The frame's `EXCLUDE ...`: rows of the frame left out of it.
    pub exclude: Exclusion,
}

impl WindowCall {
    /// Every expression of the call (for the query's rewrites: regrouping, subqueries).
    pub(crate) fn map_exprs(self, f: &mut dyn FnMut(Expr) -> DbResult<Expr>) -> DbResult<WindowCall> {
        let bound = |b: Bound, f: &mut dyn FnMut(Expr) -> DbResult<Expr>| -> DbResult<Bound> {
            Ok(match b {
                Bound::Preceding(Some(e)) => Bound::Preceding(Some(f(e)?)),
                Bound::Following(Some(e)) => Bound::Following(Some(f(e)?)),
                other => other,
            })
        };
        Ok(WindowCall {
            func: self.func,
            args: self.args.into_iter().map(&mut *f).collect::<DbResult<_>>()?,
            partition: self.partition.into_iter().map(&mut *f).collect::<DbResult<_>>()?,
            order: self
                .order
                .into_iter()
                .map(|(e, desc, nulls_first)| Ok((f(e)?, desc, nulls_first)))
                .collect::<DbResult<_>>()?,
            frame: match self.frame {
                None => None,
                Some((units, start, end)) => Some((units, bound(start, f)?, bound(end, f)?)),
            },
            filter: self.filter.map(&mut *f).transpose()?,
            exclude: self.exclude,
        })
    }

    pub(crate) fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        self.args
            .iter()
            .chain(&self.partition)
            .chain(self.order.iter().map(|(e, _, _)| e))
            .chain(&self.filter)
            .for_each(&mut *f);
        if let Some((_, start, end)) = &self.frame {
            for b in [start, end] {
                if let Bound::Preceding(Some(e)) | Bound::Following(Some(e)) = b {
                    f(e);
                }
            }
        }
    }

    /// The type of the call's values, given the types of the row it reads (and of the
    /// aggregates, in a grouped query).
    pub(crate) fn data_type(&self, row: &[Option<DataType>], aggs: &[Option<DataType>]) -> Option<DataType> {
        match self.func {
            WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank | WindowFunc::Ntile => {
                Some(DataType::Int)
            }
            WindowFunc::PercentRank | WindowFunc::CumeDist => Some(DataType::Float),
            WindowFunc::Lag
            | WindowFunc::Lead
            | WindowFunc::FirstValue
            | WindowFunc::LastValue
            | WindowFunc::NthValue => self.args.first().and_then(|a| a.static_type(row, aggs)),
            WindowFunc::Aggregate(func, name) => {
                let input = self.args.first().and_then(|a| a.static_type(row, aggs));
                crate::sql::query::aggregate_type(
                    &aggregate_call(func, name, self.args.len(), false),
                    &[input],
                )
            }
        }
    }
}

/// The aggregate a window call runs, over rows of its `arity` arguments' values (and
/// its filter's after them).
fn aggregate_call(func: AggFunc, name: &'static str, arity: usize, filtered: bool) -> AggCall {
    AggCall {
        func,
        name,
        arg: (func != AggFunc::CountStar).then_some(Expr::Column(0)),
        second_arg: (arity > 1).then_some(Expr::Column(1)),
        distinct: false,
        order: Vec::new(),
        filter: filtered.then_some(Expr::Column(arity)),
        direct: Vec::new(),
    }
}

fn window_error(message: String) -> DbError {
    DbError::WindowingError(message)
}

impl Binder<'_> {
    /// `name(args) OVER (...)`: the call recorded, `Expr::Window(i)` in its place.
    pub(crate) fn window_function(
        &mut self,
        name: &str,
        f: &ast::Function,
        over: &ast::WindowType,
    ) -> DbResult<Expr> {
        if self.in_aggregate {
            return Err(crate::sql::expr::grouping_error(
                "aggregate function calls cannot contain window function calls".into(),
            ));
        }
        if !self.windows_allowed {
            return Err(window_error(format!(
                "window functions are not allowed here ({name}() OVER: only in the select list and ORDER BY)"
            )));
        }
        let spec = match over {
            ast::WindowType::WindowSpec(spec) => self.window_spec(spec)?,
            ast::WindowType::NamedWindow(name) => self.named_window(&ident_name(name))?.clone(),
        };
        let spec = &spec;
        if !f.within_group.is_empty() && crate::sql::expr::OrderedSetFunc::named(name).is_some() {
            return Err(DbError::FeatureNotSupported(format!(
                "OVER is not supported for ordered-set aggregate {name}"
            )));
        }
        if !f.within_group.is_empty() || f.null_treatment.is_some() {
            return Err(DbError::Unsupported(format!("this form of {name}() OVER")));
        }
        let mut star = false;
        let arg_asts: Vec<&ast::Expr> = match &f.args {
            ast::FunctionArguments::None => Vec::new(),
            ast::FunctionArguments::List(list) => {
                if matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)) {
                    return Err(DbError::Unsupported("DISTINCT in a window function".into()));
                }
                let mut args = Vec::new();
                for arg in &list.args {
                    match arg {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) if name == "count" => {
                            star = true
                        }
                        other => {
                            return Err(DbError::Unsupported(format!("the argument {other} of {name}()")))
                        }
                    }
                }
                args
            }
            ast::FunctionArguments::Subquery(_) => return Err(DbError::Unsupported("a subquery".into())),
        };
        let (func, arity): (WindowFunc, std::ops::RangeInclusive<usize>) = match name {
            "row_number" => (WindowFunc::RowNumber, 0..=0),
            "rank" => (WindowFunc::Rank, 0..=0),
            "dense_rank" => (WindowFunc::DenseRank, 0..=0),
            "percent_rank" => (WindowFunc::PercentRank, 0..=0),
            "cume_dist" => (WindowFunc::CumeDist, 0..=0),
            "ntile" => (WindowFunc::Ntile, 1..=1),
            "lag" => (WindowFunc::Lag, 1..=3),
            "lead" => (WindowFunc::Lead, 1..=3),
            "first_value" => (WindowFunc::FirstValue, 1..=1),
            "last_value" => (WindowFunc::LastValue, 1..=1),
            "nth_value" => (WindowFunc::NthValue, 2..=2),
            "count" if star => (WindowFunc::Aggregate(AggFunc::CountStar, "count"), 0..=0),
            "string_agg" => (WindowFunc::Aggregate(AggFunc::StringAgg, "string_agg"), 2..=2),
            "array_agg" | "listagg" | "json_agg" | "jsonb_agg" | "json_object_agg" | "jsonb_object_agg" => {
                return Err(DbError::Unsupported(format!("{name}() as a window function")));
            }
            other => match AggFunc::named(other) {
                Some((func, name)) => (WindowFunc::Aggregate(func, name), 1..=1),
                None => {
                    return Err(DbError::WrongObjectType(format!(
                        "OVER specified, but {other} is not a window function nor an aggregate function"
                    )))
                }
            },
        };
        if f.filter.is_some() && !matches!(func, WindowFunc::Aggregate(..)) {
            return Err(DbError::WrongObjectType(format!(
                "FILTER specified, but {name} is not an aggregate function"
            )));
        }
        if !arity.contains(&arg_asts.len()) {
            return Err(DbError::UndefinedFunction(format!(
                "function {name} with {} arguments does not exist",
                arg_asts.len()
            )));
        }
        // Inside the call: aggregates (of a grouped query), no other window call.
        self.windows_allowed = false;
        let compiled = (|| -> DbResult<WindowCall> {
            let args = arg_asts.iter().map(|e| self.compile_window_part(e)).collect::<DbResult<Vec<_>>>()?;
            let partition = spec
                .partition_by
                .iter()
                .map(|e| self.compile_window_part(e))
                .collect::<DbResult<Vec<_>>>()?;
            let mut order = Vec::new();
            for o in &spec.order_by {
                let desc = match &o.options.sort {
                    None | Some(ast::OrderBySort::Asc) => false,
                    Some(ast::OrderBySort::Desc) => true,
                    Some(ast::OrderBySort::Using(_)) => {
                        return Err(DbError::Unsupported("ORDER BY ... USING in a window".into()))
                    }
                };
                order.push((self.compile_window_part(&o.expr)?, desc, o.options.nulls_first.unwrap_or(desc)));
            }
            let mut exclude = Exclusion::NoOthers;
            let frame = match &spec.window_frame {
                None => None,
                Some(frame) => {
                    let units = match frame.units {
                        ast::WindowFrameUnits::Rows => FrameUnits::Rows,
                        ast::WindowFrameUnits::Range => FrameUnits::Range,
                        ast::WindowFrameUnits::Groups => FrameUnits::Groups,
                    };
                    if units == FrameUnits::Groups && order.is_empty() {
                        return Err(window_error("GROUPS mode requires an ORDER BY clause".into()));
                    }
                    let mut bound = |b: &ast::WindowFrameBound| -> DbResult<Bound> {
                        let offset = |e: &Option<Box<ast::Expr>>,
                                      this: &mut Self|
                         -> DbResult<Option<Expr>> {
                            match e {
                                    None => Ok(None),
                                    // A distance in the key's values needs one key.
                                    Some(_) if units == FrameUnits::Range && order.len() != 1 => {
                                        Err(window_error(
                                            "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column"
                                                .into(),
                                        ))
                                    }
                                    Some(e) => this.compile_window_part(e).map(Some),
                                }
                        };
                        // A bound carrying the frame's exclusion (`frame_exclusion`).
                        let (preceding, written) = match b {
                            ast::WindowFrameBound::CurrentRow => return Ok(Bound::CurrentRow),
                            ast::WindowFrameBound::Preceding(e) => (true, e),
                            ast::WindowFrameBound::Following(e) => (false, e),
                        };
                        let written = match written.as_deref().and_then(exclusion_call) {
                            Some((exclusion, carried)) => {
                                exclude = exclusion;
                                match carried {
                                    CarriedBound::CurrentRow => return Ok(Bound::CurrentRow),
                                    CarriedBound::Unbounded => None,
                                    CarriedBound::Offset(e) => Some(Box::new(e.clone())),
                                }
                            }
                            None => written.clone(),
                        };
                        let offset = offset(&written, self)?;
                        Ok(if preceding { Bound::Preceding(offset) } else { Bound::Following(offset) })
                    };
                    let start = bound(&frame.start_bound)?;
                    let end = match &frame.end_bound {
                        Some(b) => bound(b)?,
                        None => Bound::CurrentRow,
                    };
                    if matches!(start, Bound::Following(None)) {
                        return Err(window_error("frame start cannot be UNBOUNDED FOLLOWING".into()));
                    }
                    if matches!(end, Bound::Preceding(None)) {
                        return Err(window_error("frame end cannot be UNBOUNDED PRECEDING".into()));
                    }
                    Some((units, start, end))
                }
            };
            let filter = match &f.filter {
                Some(condition) => Some(self.compile_window_part(condition)?),
                None => None,
            };
            Ok(WindowCall { func, args, partition, order, frame, filter, exclude })
        })();
        self.windows_allowed = true;
        self.windows.push(compiled?);
        Ok(Expr::Window(self.windows.len() - 1))
    }
}

/// The windows a SELECT's WINDOW clause names, each resolved to a whole specification
/// (one based on another copies its partitioning and ordering).
pub(crate) fn named_windows(
    definitions: &[ast::NamedWindowDefinition],
) -> DbResult<Vec<(String, ast::WindowSpec)>> {
    let mut named: Vec<(String, ast::WindowSpec)> = Vec::new();
    for ast::NamedWindowDefinition(name, definition) in definitions {
        let name = ident_name(name);
        if named.iter().any(|(n, _)| *n == name) {
            return Err(window_error(format!("window \"{name}\" is already defined")));
        }
        // A window may be based on one defined before it (PostgreSQL's rule).
        let spec = match definition {
            ast::NamedWindowExpr::NamedWindow(base) => based_on(&named, &ident_name(base), None)?,
            ast::NamedWindowExpr::WindowSpec(spec) => match &spec.window_name {
                Some(base) => based_on(&named, &ident_name(base), Some(spec))?,
                None => spec.clone(),
            },
        };
        named.push((name, spec));
    }
    Ok(named)
}

/// The window `base` (one of `named`) refined by `refinement` (`OVER (w ORDER BY x)`):
/// PostgreSQL's rules: the partitioning is the base's and cannot be given again, an
/// ordering only where the base has none, a frame only here (a base with a frame is
/// not copied: `OVER w` reads it as is).
fn based_on(
    named: &[(String, ast::WindowSpec)],
    base: &str,
    refinement: Option<&ast::WindowSpec>,
) -> DbResult<ast::WindowSpec> {
    let Some((_, spec)) = named.iter().find(|(n, _)| n == base) else {
        return Err(DbError::UndefinedObject(format!("window \"{base}\" does not exist")));
    };
    let Some(refinement) = refinement else {
        return Ok(spec.clone());
    };
    if !refinement.partition_by.is_empty() {
        return Err(window_error(format!("cannot override PARTITION BY clause of window \"{base}\"")));
    }
    if !refinement.order_by.is_empty() && !spec.order_by.is_empty() {
        return Err(window_error(format!("cannot override ORDER BY clause of window \"{base}\"")));
    }
    if spec.window_frame.is_some() {
        return Err(window_error(format!("cannot copy window \"{base}\" because it has a frame clause")));
    }
    Ok(ast::WindowSpec {
        window_name: None,
        partition_by: spec.partition_by.clone(),
        order_by: if refinement.order_by.is_empty() {
            spec.order_by.clone()
        } else {
            refinement.order_by.clone()
        },
        window_frame: refinement.window_frame.clone(),
    })
}

impl Binder<'_> {
    /// The named window `name` of the SELECT being compiled.
    fn named_window(&self, name: &str) -> DbResult<&ast::WindowSpec> {
        self.named_windows
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, spec)| spec)
            .ok_or_else(|| DbError::UndefinedObject(format!("window \"{name}\" does not exist")))
    }

    /// An OVER clause's specification, whole: `OVER (w ORDER BY x)` resolved against the
    /// named window `w`.
    fn window_spec(&self, spec: &ast::WindowSpec) -> DbResult<ast::WindowSpec> {
        match &spec.window_name {
            None => Ok(spec.clone()),
            Some(base) => based_on(&self.named_windows, &ident_name(base), Some(spec)),
        }
    }
}

/// Evaluates an expression on a row (and its group's aggregate values).
pub(crate) type Eval<'a> = dyn Fn(&Expr, &[Value], &[Value]) -> DbResult<Value> + 'a;

/// Computes every window call over `rows` (each a row and its aggregate values) and
/// appends the calls' values to each row, in call order.
pub(crate) fn compute(
    windows: &[WindowCall],
    rows: &mut [(Vec<Value>, Vec<Value>)],
    eval: &Eval,
) -> DbResult<()> {
    for call in windows {
        let values = compute_one(call, rows, eval)?;
        for ((row, _), v) in rows.iter_mut().zip(values) {
            row.push(v);
        }
    }
    Ok(())
}

fn compare_keys(a: &[Value], b: &[Value], order: &[(Expr, bool, bool)]) -> Ordering {
    for ((x, y), (_, desc, nulls_first)) in a.iter().zip(b).zip(order) {
        let o = crate::sql::query::order_values(x, y, *desc, *nulls_first);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A non-negative integer argument (an offset, a count) evaluated on a row.
fn count_arg(e: &Expr, row: &[Value], aggs: &[Value], eval: &Eval, what: &str) -> DbResult<Option<i64>> {
    match eval(e, row, aggs)? {
        Value::Null => Ok(None),
        Value::Int(n) if n >= 0 => Ok(Some(n)),
        Value::Int(_) => Err(DbError::InvalidParameterValue {
            parameter: what.into(),
            value: "a negative number".into(),
            allowed: "zero or more".into(),
        }),
        other => match crate::sql::expr::cast(other, DataType::Int)? {
            Value::Int(n) if n >= 0 => Ok(Some(n)),
            _ => Err(DbError::InvalidParameterValue {
                parameter: what.into(),
                value: "a negative number".into(),
                allowed: "zero or more".into(),
            }),
        },
    }
}

fn compute_one(call: &WindowCall, rows: &[(Vec<Value>, Vec<Value>)], eval: &Eval) -> DbResult<Vec<Value>> {
    let n = rows.len();
    let partition_keys: Vec<Vec<Value>> = rows
        .iter()
        .map(|(r, a)| call.partition.iter().map(|e| eval(e, r, a)).collect())
        .collect::<DbResult<_>>()?;
    let order_keys: Vec<Vec<Value>> = rows
        .iter()
        .map(|(r, a)| call.order.iter().map(|(e, _, _)| eval(e, r, a)).collect())
        .collect::<DbResult<_>>()?;
    let mut sorted: Vec<usize> = (0..n).collect();
    // Stable: rows equal in both keys keep the order they came in.
    sorted.sort_by(|&x, &y| {
        partition_keys[x]
            .cmp(&partition_keys[y])
            .then_with(|| compare_keys(&order_keys[x], &order_keys[y], &call.order))
    });
    let mut out = vec![Value::Null; n];
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && partition_keys[sorted[end]] == partition_keys[sorted[start]] {
            end += 1;
        }
        partition(call, &sorted[start..end], &order_keys, rows, eval, &mut out)?;
        start = end;
    }
    Ok(out)
}

/// The values of one partition's rows (`members`, in the window's order).
fn partition(
    call: &WindowCall,
    members: &[usize],
    order_keys: &[Vec<Value>],
    rows: &[(Vec<Value>, Vec<Value>)],
    eval: &Eval,
    out: &mut [Value],
) -> DbResult<()> {
    let m = members.len();
    // Peer groups: rows equal in the ORDER BY keys (all rows, without one).
    let mut first_peer = vec![0usize; m];
    let mut last_peer = vec![0usize; m];
    let mut group_number = vec![0i64; m];
    let mut g = 0;
    let mut i = 0;
    while i < m {
        let mut j = i + 1;
        while j < m
            && compare_keys(&order_keys[members[i]], &order_keys[members[j]], &call.order) == Ordering::Equal
        {
            j += 1;
        }
        g += 1;
        for k in i..j {
            first_peer[k] = i;
            last_peer[k] = j - 1;
            group_number[k] = g;
        }
        i = j;
    }
    let arg = |k: usize, pos: usize| -> DbResult<Value> {
        let (r, a) = &rows[members[pos]];
        eval(&call.args[k], r, a)
    };
    match call.func {
        WindowFunc::RowNumber => (0..m).for_each(|p| out[members[p]] = Value::Int(p as i64 + 1)),
        WindowFunc::Rank => (0..m).for_each(|p| out[members[p]] = Value::Int(first_peer[p] as i64 + 1)),
        WindowFunc::DenseRank => (0..m).for_each(|p| out[members[p]] = Value::Int(group_number[p])),
        WindowFunc::PercentRank => (0..m).for_each(|p| {
            let v = if m > 1 { first_peer[p] as f64 / (m - 1) as f64 } else { 0.0 };
            out[members[p]] = Value::Float(v)
        }),
        WindowFunc::CumeDist => {
            (0..m).for_each(|p| out[members[p]] = Value::Float((last_peer[p] + 1) as f64 / m as f64))
        }
        WindowFunc::Ntile => {
            for p in 0..m {
                let (r, a) = &rows[members[p]];
                let Some(buckets) = count_arg(&call.args[0], r, a, eval, "ntile's argument")? else {
                    continue;
                };
                if buckets == 0 {
                    return Err(DbError::InvalidParameterValue {
                        parameter: "ntile's argument".into(),
                        value: "0".into(),
                        allowed: "greater than zero".into(),
                    });
                }
                // PostgreSQL's buckets: the first (m mod k) hold one row more.
                let k = buckets as usize;
                let (size, bigger) = (m / k, m % k);
                let bucket = if p < bigger * (size + 1) {
                    p / (size + 1)
                } else {
                    bigger + (p - bigger * (size + 1)) / size.max(1)
                };
                out[members[p]] = Value::Int(bucket as i64 + 1);
            }
        }
        WindowFunc::Lag | WindowFunc::Lead => {
            for p in 0..m {
                let (r, a) = &rows[members[p]];
                let offset = match call.args.get(1) {
                    Some(e) => match count_arg(e, r, a, eval, "the offset")? {
                        Some(o) => o as usize,
                        None => {
                            out[members[p]] = Value::Null;
                            continue;
                        }
                    },
                    None => 1,
                };
                let at =
                    if call.func == WindowFunc::Lag { p.checked_sub(offset) } else { p.checked_add(offset) };
                out[members[p]] = match at.filter(|&q| q < m) {
                    Some(q) => arg(0, q)?,
                    None => match call.args.get(2) {
                        Some(default) => eval(default, r, a)?,
                        None => Value::Null,
                    },
                };
            }
        }
        WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
            for p in 0..m {
                let (lo, hi) =
                    frame_of(call, p, m, &first_peer, &last_peer, order_keys, rows, members, eval)?;
                // The frame's rows less those its exclusion leaves out.
                let kept = |q: &usize| !excluded(call.exclude, p, *q, &first_peer);
                let at = match call.func {
                    WindowFunc::FirstValue => (lo..hi).find(kept),
                    WindowFunc::LastValue => (lo..hi).rev().find(kept),
                    _ => {
                        let (r, a) = &rows[members[p]];
                        match count_arg(&call.args[1], r, a, eval, "nth_value's position")? {
                            Some(0) => {
                                return Err(DbError::InvalidParameterValue {
                                    parameter: "nth_value's position".into(),
                                    value: "0".into(),
                                    allowed: "greater than zero".into(),
                                })
                            }
                            Some(k) => (lo..hi).filter(kept).nth(k as usize - 1),
                            None => None,
                        }
                    }
                };
                out[members[p]] = match at.filter(|&q| q >= lo && q < hi) {
                    Some(q) => arg(0, q)?,
                    None => Value::Null,
                };
            }
        }
        WindowFunc::Aggregate(func, name) => {
            let agg = aggregate_call(func, name, call.args.len(), call.filter.is_some());
            // Each row's arguments, then its filter's value.
            let inputs: Vec<Vec<Value>> = (0..m)
                .map(|p| {
                    let mut input = (0..call.args.len()).map(|k| arg(k, p)).collect::<DbResult<Vec<_>>>()?;
                    if let Some(filter) = &call.filter {
                        let (r, a) = &rows[members[p]];
                        input.push(eval(filter, r, a)?);
                    }
                    Ok(input)
                })
                .collect::<DbResult<_>>()?;
            let mut frames = Vec::with_capacity(m);
            for p in 0..m {
                frames.push(frame_of(call, p, m, &first_peer, &last_peer, order_keys, rows, members, eval)?);
            }
            if call.exclude == Exclusion::NoOthers
                && frames.iter().all(|&(lo, _)| lo == 0)
                && frames.windows(2).all(|w| w[0].1 <= w[1].1)
            {
                // From the partition's start: one running accumulator.
                let mut acc = crate::sql::query::Accumulator::new(&agg);
                let mut fed = 0;
                for p in 0..m {
                    while fed < frames[p].1 {
                        acc.feed(&agg, &inputs[fed])?;
                        fed += 1;
                    }
                    out[members[p]] = acc.finish(&agg, &[])?;
                }
            } else {
                for p in 0..m {
                    let mut acc = crate::sql::query::Accumulator::new(&agg);
                    let (lo, hi) = (frames[p].0, frames[p].1.max(frames[p].0));
                    for (q, input) in inputs.iter().enumerate().take(hi).skip(lo) {
                        if !excluded(call.exclude, p, q, &first_peer) {
                            acc.feed(&agg, input)?;
                        }
                    }
                    out[members[p]] = acc.finish(&agg, &[])?;
                }
            }
        }
    }
    Ok(())
}

/// The frame of the row at `p` of a partition of `m` rows: positions `lo..hi`.
#[allow(clippy::too_many_arguments)]
fn frame_of(
    call: &WindowCall,
    p: usize,
    m: usize,
    first_peer: &[usize],
    last_peer: &[usize],
    order_keys: &[Vec<Value>],
    rows: &[(Vec<Value>, Vec<Value>)],
    members: &[usize],
    eval: &Eval,
) -> DbResult<(usize, usize)> {
    let Some((units, start, end)) = &call.frame else {
        // PostgreSQL's default: RANGE UNBOUNDED PRECEDING to the current row's last peer
        // (every row is a peer without an ORDER BY).
        return Ok((0, last_peer[p] + 1));
    };
    let (r, a) = &rows[members[p]];
    // An offset's value, checked as PostgreSQL checks it: not NULL (22004), and for ROWS
    // and GROUPS a count of rows or groups, not negative (22013).
    let offset_value = |e: &Expr, starting: bool| -> DbResult<Value> {
        let which = if starting { "starting" } else { "ending" };
        let v = eval(e, r, a)?;
        if v.is_null() {
            return Err(DbError::NullValueNotAllowed(format!("frame {which} offset must not be null")));
        }
        Ok(v)
    };
    let count = |e: &Expr, starting: bool| -> DbResult<usize> {
        let which = if starting { "starting" } else { "ending" };
        let n = match offset_value(e, starting)? {
            Value::Int(n) => n,
            other => match crate::sql::expr::cast(other, DataType::Int)? {
                Value::Int(n) => n,
                _ => unreachable!("a cast to INT gives an INT"),
            },
        };
        if n < 0 {
            return Err(DbError::InvalidFrameOffset(format!("frame {which} offset must not be negative")));
        }
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    };
    match units {
        FrameUnits::Range if has_offset(start) || has_offset(end) => {
            let keys: Vec<&Value> = members.iter().map(|&q| &order_keys[q][0]).collect();
            range_frame(call, p, first_peer, last_peer, &keys, &offset_value)
        }
        FrameUnits::Rows | FrameUnits::Range => {
            let rows_mode = *units == FrameUnits::Rows;
            let lo = match start {
                Bound::Preceding(None) => 0,
                Bound::Preceding(Some(e)) => p.saturating_sub(count(e, true)?),
                Bound::CurrentRow if rows_mode => p,
                Bound::CurrentRow => first_peer[p],
                Bound::Following(Some(e)) => p.saturating_add(count(e, true)?).min(m),
                Bound::Following(None) => m,
            };
            let hi = match end {
                Bound::Following(None) => m,
                Bound::Following(Some(e)) => p.saturating_add(count(e, false)?).saturating_add(1).min(m),
                Bound::CurrentRow if rows_mode => p + 1,
                Bound::CurrentRow => last_peer[p] + 1,
                Bound::Preceding(Some(e)) => (p + 1).saturating_sub(count(e, false)?),
                Bound::Preceding(None) => 0,
            };
            Ok((lo, hi.max(lo)))
        }
        FrameUnits::Groups => {
            // Peer groups n before or after the current row's: the first row of the
            // group a start bound names, the last of the group an end bound names.
            let group_start = |q: usize| first_peer[q];
            // The first row of the group `n` groups after (or before) row q's.
            let groups_after = |q: usize, n: usize| -> usize {
                let mut at = first_peer[q];
                for _ in 0..n {
                    at = last_peer[at] + 1;
                    if at >= m {
                        return m;
                    }
                }
                at
            };
            let groups_before = |q: usize, n: usize| -> Option<usize> {
                let mut at = first_peer[q];
                for _ in 0..n {
                    at = first_peer[at.checked_sub(1)?];
                }
                Some(at)
            };
            let lo = match start {
                Bound::Preceding(None) => 0,
                Bound::Preceding(Some(e)) => groups_before(p, count(e, true)?).unwrap_or(0),
                Bound::CurrentRow => group_start(p),
                Bound::Following(Some(e)) => groups_after(p, count(e, true)?),
                Bound::Following(None) => m,
            };
            let hi = match end {
                Bound::Following(None) => m,
                Bound::Following(Some(e)) => match groups_after(p, count(e, false)?) {
                    at if at >= m => m,
                    at => last_peer[at] + 1,
                },
                Bound::CurrentRow => last_peer[p] + 1,
                Bound::Preceding(Some(e)) => match groups_before(p, count(e, false)?) {
                    Some(at) => last_peer[at] + 1,
                    None => 0,
                },
                Bound::Preceding(None) => 0,
            };
            Ok((lo, hi.max(lo)))
        }
    }
}

/// A RANGE frame with an offset bound: the rows whose key (`keys`, the partition's in
/// the window's order) lies within the offset's distance of the current row's (NULL
/// keys: the NULL peers only).
fn range_frame(
    call: &WindowCall,
    p: usize,
    first_peer: &[usize],
    last_peer: &[usize],
    keys: &[&Value],
    offset_value: &dyn Fn(&Expr, bool) -> DbResult<Value>,
) -> DbResult<(usize, usize)> {
    let Some((_, start, end)) = &call.frame else { unreachable!("a RANGE frame") };
    let m = keys.len();
    let (_, desc, nulls_first) = &call.order[0];
    let current = keys[p];
    // The rows with a non-NULL key: NULLs sort together at one end.
    let null_count = keys.iter().filter(|k| k.is_null()).count();
    let (values_lo, values_hi) = if *nulls_first { (null_count, m) } else { (0, m - null_count) };
    // A bound `offset` from the current key toward the partition's start (`preceding`)
    // or its end: for a start, the first row not before the bound's value in the
    // window's order; for an end, the first row after it.
    let bound_at = |offset: &Expr, preceding: bool, starting: bool| -> DbResult<usize> {
        let distance = offset_value(offset, starting)?;
        if current.is_null() {
            // NULL keys are one peer group: the frame of a NULL row is its peers.
            return Ok(if starting { first_peer[p] } else { last_peer[p] + 1 });
        }
        let target = range_target(current, &distance, preceding != *desc)?;
        // The keys are sorted: binary search for the first that passes the bound.
        let passes = |k: &Value| -> DbResult<bool> {
            let o = crate::sql::expr::compare(k, &target)?.unwrap_or(Ordering::Equal);
            let o = if *desc { o.reverse() } else { o };
            Ok(if starting { o != Ordering::Less } else { o == Ordering::Greater })
        };
        let (mut lo, mut hi) = (values_lo, values_hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if passes(keys[mid])? {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(lo)
    };
    let lo = match start {
        Bound::Preceding(None) => 0,
        Bound::Preceding(Some(e)) => bound_at(e, true, true)?,
        Bound::CurrentRow => first_peer[p],
        Bound::Following(Some(e)) => bound_at(e, false, true)?,
        Bound::Following(None) => m,
    };
    let hi = match end {
        Bound::Following(None) => m,
        Bound::Following(Some(e)) => bound_at(e, false, false)?,
        Bound::CurrentRow => last_peer[p] + 1,
        Bound::Preceding(Some(e)) => bound_at(e, true, false)?,
        Bound::Preceding(None) => 0,
    };
    Ok((lo, hi.max(lo)))
}

/// Whether the row at `q` is left out of the frame of the row at `p` by `exclusion`.
fn excluded(exclusion: Exclusion, p: usize, q: usize, first_peer: &[usize]) -> bool {
    let peer = first_peer[q] == first_peer[p];
    match exclusion {
        Exclusion::NoOthers => false,
        Exclusion::CurrentRow => q == p,
        Exclusion::Group => peer,
        Exclusion::Ties => peer && q != p,
    }
}

fn has_offset(bound: &Bound) -> bool {
    matches!(bound, Bound::Preceding(Some(_)) | Bound::Following(Some(_)))
}

/// The key value `distance` below (`down`) or above the current row's `key`, for a
/// RANGE frame's offset: the pairs of key and offset types PostgreSQL has an in_range
/// function for (integers, NUMERIC and FLOAT with numbers, date and time types with an
/// INTERVAL), with its errors for others (0A000) and a negative distance (22013).
fn range_target(key: &Value, distance: &Value, down: bool) -> DbResult<Value> {
    let type_name = |v: &Value| v.data_type().map_or("unknown".to_string(), |t| t.name().to_lowercase());
    let fits = match (key, distance) {
        (Value::Int(_), Value::Int(_)) => Some(true),
        (Value::Numeric(_), Value::Int(_) | Value::Numeric(_)) => Some(true),
        // PostgreSQL's in_range for float4 takes a float8 offset (and so any number).
        (
            Value::Float(_) | Value::Float4(_),
            Value::Int(_) | Value::Float(_) | Value::Float4(_) | Value::Numeric(_),
        ) => Some(true),
        (
            Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) | Value::Time(_),
            Value::Interval(_),
        ) => Some(true),
        (Value::Interval(_), Value::Interval(_)) => Some(true),
        // A key some offset type fits, with another.
        (Value::Int(_) | Value::Numeric(_) | Value::Float(_) | Value::Float4(_), _)
        | (Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) | Value::Time(_), _)
        | (Value::Interval(_), _) => Some(false),
        _ => None,
    };
    match fits {
        Some(true) => {}
        Some(false) => {
            return Err(DbError::RangeOffsetType { key: type_name(key), offset: Some(type_name(distance)) })
        }
        None => return Err(DbError::RangeOffsetType { key: type_name(key), offset: None }),
    }
    let zero = match distance {
        Value::Interval(_) => Value::Interval(crate::datetime::Interval::default()),
        _ => Value::Int(0),
    };
    if crate::sql::expr::compare(distance, &zero)? == Some(Ordering::Less) {
        return Err(DbError::InvalidFrameOffset(
            "invalid preceding or following size in window function".into(),
        ));
    }
    let op = if down { crate::sql::expr::BinOp::Sub } else { crate::sql::expr::BinOp::Add };
    crate::sql::expr::binary(op, key.clone(), distance.clone())
}

/// What a rewritten bound (`frame_exclusion`) carries besides its exclusion.
enum CarriedBound<'a> {
    CurrentRow,
    Unbounded,
    Offset(&'a ast::Expr),
}

/// The exclusion and the bound of `redodb_frame_exclusion('ties', bound)`, when `e` is
/// that call.
fn exclusion_call(e: &ast::Expr) -> Option<(Exclusion, CarriedBound<'_>)> {
    let ast::Expr::Function(f) = e else { return None };
    if f.name.to_string() != crate::sql::frame_exclusion::FUNCTION {
        return None;
    }
    let ast::FunctionArguments::List(list) = &f.args else { return None };
    let args: Vec<&ast::Expr> = list
        .args
        .iter()
        .filter_map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect();
    let text = |e: &ast::Expr| match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    let [name, bound] = args.as_slice() else { return None };
    let exclusion = Exclusion::named(&text(name)?)?;
    let carried = match text(bound).as_deref() {
        Some("current row") => CarriedBound::CurrentRow,
        Some("unbounded") => CarriedBound::Unbounded,
        _ => CarriedBound::Offset(match bound {
            ast::Expr::Nested(inner) => inner,
            other => other,
        }),
    };
    Some((exclusion, carried))
}
