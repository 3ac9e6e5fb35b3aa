//! Queries: `SELECT`, `VALUES`, and set operations of them (`UNION [ALL]`, `INTERSECT
//! [ALL]`, `EXCEPT [ALL]`), compiled into a [`QueryPlan`] and then run.
//!
//! A SELECT runs as: rows in (no table; one table's access path, see `access`; or the
//! joins of several, see `join`) -> WHERE -> [GROUP BY and aggregates -> HAVING] ->
//! select list -> DISTINCT -> ORDER BY -> OFFSET/LIMIT, compiled first into a
//! `SelectPlan` (which EXPLAIN shows) and then executed. It reads the rows as
//! the transaction sees them (its own changes over the committed state, never another
//! transaction's uncommitted ones). `FOR UPDATE` locks the selected rows, re-reading each
//! after its lock and checking the WHERE again, like an UPDATE.
//!
//! Subqueries in expressions (scalar, `[NOT] EXISTS`, `[NOT] IN`, `op ANY/ALL`) are
//! compiled with the query, their references to the enclosing queries' rows as
//! `Expr::Outer`. When the query runs, an uncorrelated one is run once and replaced by its
//! result; a correlated one is run for each row it is evaluated on, with that row's values
//! bound into its plan (so a correlated equality on a key becomes a point lookup).
//!
//! When the rows come in the order asked for (no ORDER BY, or ORDER BY a prefix of the
//! primary key, ascending) and there is no grouping or DISTINCT, the scan stops as soon as
//! OFFSET + LIMIT rows are found.
//!
//! Window functions (`window`) run after grouping and HAVING, before the select list:
//! each call's values are appended to the rows, as columns the select list reads.
//!
//! GROUP BY takes GROUPING SETS, ROLLUP, CUBE and `()` beside plain keys, as PostgreSQL:
//! the sets of its items multiplied out (`GROUP BY x, ROLLUP (a, b)` is the sets (x, a,
//! b), (x, a), (x)). Each input row is aggregated once per set in one pass; in a set's
//! rows the keys outside it are NULL, and `GROUPING(e, ...)` (a bit per argument, 1 where
//! the set leaves it out) tells such a NULL from a NULL of the data.
//!
//! A ROLLUP or CUBE inside GROUPING SETS adds its sets to the list.
//!
//! Not supported (0A000): a correlated subquery in a grouped query.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::numeric;
use crate::schema::coerce;
use crate::sql::access::{plan as plan_access, Access};
use crate::sql::exec::ResultColumn;
use crate::sql::expr::{
    arithmetic, compare, grouping_error, ident_name, to_num, AggCall, AggFunc, BinOp, Binder, Expr,
    Fractions, Num, OrderedSetFunc, Relation, Scope, SubPlan, Subquery, SubqueryKind,
};
use crate::sql::join::JoinPlan;
use crate::sql::json_ops;
use crate::sql::recursive::{RecursivePlan, WorkTablePlan};
use crate::value::{DataType, ElemType, Value};
use bigdecimal::BigDecimal;

/// The rows a query produced.
pub(crate) struct Output {
    pub columns: Vec<ResultColumn>,
    pub rows: Vec<Vec<Value>>,
}

#[derive(Clone)]
enum SortKey {
    /// The i-th output column.
    Output(usize),
    Expr(Expr),
}

#[derive(Clone)]
struct Sort {
    key: SortKey,
    desc: bool,
    nulls_first: bool,
}

/// A SELECT compiled against its table: what `execute_select` runs and EXPLAIN shows, so
/// the plan shown is the plan run. Its steps, in the order they run: the access path with
/// the WHERE (`filter`), GROUP BY and aggregates with HAVING (`grouped`), the select list,
/// DISTINCT, ORDER BY (`needs_sort`: not when the rows already come in that order),
/// OFFSET and LIMIT; FOR UPDATE locks the rows the WHERE selected.
#[derive(Clone)]
pub(crate) struct SelectPlan {
    /// The one table of the FROM clause (None: none, or several: `joins`).
    pub relation: Option<Relation>,
    /// The FROM clause of several relations, planned.
    pub joins: Option<JoinPlan>,
    pub filter: Option<Expr>,
    items: Vec<Expr>,
    columns: Vec<ResultColumn>,
    /// The distinct GROUP BY expressions: a group row's first columns.
    groups: Vec<Expr>,
    /// With GROUPING SETS, ROLLUP, CUBE or `()`: each set, as positions in `groups`
    /// (duplicates kept, as PostgreSQL keeps them). None: one set of every key.
    pub grouping_sets: Option<Vec<Vec<usize>>>,
    /// Each GROUPING() call's arguments as positions in `groups`; the i-th call's value
    /// is the group row's column `groups.len() + i`.
    groupings: Vec<Vec<usize>>,
    /// The text of each of `groups` as written, for EXPLAIN's key lines.
    pub group_texts: Vec<String>,
    aggs: Vec<AggCall>,
    having: Option<Expr>,
    /// Window function calls, over the rows before the select list (the input rows, or
    /// the groups); the i-th call's values are the row's column `window_base + i`.
    pub windows: Vec<crate::sql::window::WindowCall>,
    sorts: Vec<Sort>,
    pub grouped: bool,
    pub distinct: bool,
    /// DISTINCT ON: how many of the first sort keys are its keys (the rows after
    /// sorting keep the first of each run equal on them).
    pub distinct_on: Option<usize>,
    pub needs_sort: bool,
    pub for_update: bool,
    /// FOR UPDATE's NOWAIT or SKIP LOCKED.
    pub if_locked: IfLocked,
    pub limit: Option<usize>,
    pub offset: usize,
    /// With no step between the access and the LIMIT that needs every row, the scan stops
    /// after this many.
    stop_after: Option<usize>,
    /// Some: the rows are read in the order of an index (or the primary key), so that
    /// an ORDER BY on its first columns sorts nothing and its LIMIT stops the read, and a
    /// lone min() or max() of its first column reads one end (`read_select` stops at
    /// the first row the WHERE keeps).
    pub ordered: Option<OrderedScan>,
    /// The GROUP BY keys are all of types `group_hash` hashes exactly (see `GroupTable`).
    group_keys_hashed: bool,
}

/// An access in index order (see `SelectPlan::ordered`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OrderedScan {
    /// None: the primary key; Some(i): the table's i-th secondary index.
    pub index: Option<usize>,
    pub backward: bool,
    pub nulls: crate::sql::access::NullRows,
    /// For min/max: the first row the WHERE keeps is the answer.
    pub first_only: bool,
}

/// Whether values of a column of type `ty` sort in the index as ORDER BY sorts them.
fn orders_as_sql(ty: DataType) -> bool {
    !matches!(ty, DataType::Json | DataType::Jsonb | DataType::Array(_) | DataType::Float | DataType::Float4)
}

/// The ordered access of a SELECT from one stored table (see `SelectPlan::ordered`):
/// (a) ORDER BY the first columns of the primary key or of an index, all ascending with
/// NULLs last or all descending with NULLs first (PostgreSQL's defaults), with a LIMIT;
/// or (b) a lone `min(c)` / `max(c)` without GROUP BY, c the first column of one.
#[allow(clippy::too_many_arguments)]
fn ordered_scan(
    relation: &Relation,
    sorts: &[Sort],
    items: &[Expr],
    aggs: &[AggCall],
    grouped_by: usize,
    limit: Option<usize>,
    plain: bool,
) -> Option<OrderedScan> {
    if relation.derived.is_some() || relation.function.is_some() || crate::views::is_view(&relation.name) {
        return None;
    }
    let schema = &relation.schema;
    let keys = std::iter::once((None, &schema.primary_key))
        .chain(schema.indexes.iter().enumerate().map(|(i, ix)| (Some(i), &ix.columns)));
    if let [call] = aggs {
        let (Some(Expr::Column(c)), false, true, true) =
            (&call.arg, call.distinct, call.order.is_empty(), grouped_by == 0 && sorts.is_empty())
        else {
            return None;
        };
        if !matches!(call.func, AggFunc::Min | AggFunc::Max) || !orders_as_sql(schema.columns[*c].ty) {
            return None;
        }
        let index = keys.clone().find(|(_, columns)| columns.first() == Some(c))?.0;
        return Some(OrderedScan {
            index,
            backward: call.func == AggFunc::Max,
            nulls: crate::sql::access::NullRows::Skip,
            first_only: true,
        });
    }
    if !plain || limit.is_none() || sorts.is_empty() || !aggs.is_empty() {
        return None;
    }
    let backward = sorts[0].desc;
    let mut columns = Vec::with_capacity(sorts.len());
    for (i, sort) in sorts.iter().enumerate() {
        let key = match &sort.key {
            SortKey::Output(i) => &items[*i],
            SortKey::Expr(e) => e,
        };
        let Expr::Column(c) = key else { return None };
        // NULLs sort where PostgreSQL's default puts them, and only a first column
        // may hold them (the scan places the rows whose first value is NULL).
        if sort.desc != backward || sort.nulls_first != backward || !orders_as_sql(schema.columns[*c].ty) {
            return None;
        }
        if i > 0 && schema.columns[*c].nullable {
            return None;
        }
        columns.push(*c);
    }
    let (index, _) = keys.into_iter().find(|(_, key)| key.starts_with(&columns))?;
    Some(OrderedScan { index, backward, nulls: crate::sql::access::NullRows::Include, first_only: false })
}

impl SelectPlan {
    /// The result columns, with the types known before running (None where a value's
    /// type decides).
    pub(crate) fn columns(&self) -> &[ResultColumn] {
        &self.columns
    }

    /// When the plan reads in index order but its WHERE (with this execution's values)
    /// pins keys (point lookups, or a key prefix), the plan that reads those few rows
    /// and sorts them instead: an ordered read would pass every row before the ones the
    /// WHERE wants. None when the plan stands.
    pub(crate) fn without_order_if_narrow(&self) -> Option<SelectPlan> {
        let (Some(_), Some(rel)) = (self.ordered, &self.relation) else { return None };
        let narrow = match plan_access(&rel.schema, self.filter.as_ref()) {
            Access::Empty | Access::Points(_) => true,
            Access::Range { prefix, .. } => !prefix.is_empty(),
            Access::Index { within, .. } => matches!(*within, Access::Points(_)),
            Access::Full => false,
        };
        narrow.then(|| SelectPlan {
            ordered: None,
            needs_sort: !self.sorts.is_empty(),
            stop_after: None,
            ..self.clone()
        })
    }
}

/// How many rows each step of a SELECT handed on, for EXPLAIN ANALYZE.
#[derive(Default, Debug)]
pub(crate) struct SelectCounts {
    /// Rows the access path read.
    pub read: u64,
    /// Of those, the rows the WHERE kept.
    pub matched: u64,
    /// FOR UPDATE: the rows locked that still matched once locked.
    pub locked: u64,
    /// Groups formed (the one row of an aggregate without GROUP BY), before HAVING.
    pub groups: u64,
    /// Groups HAVING kept.
    pub grouped_out: u64,
    /// Rows after DISTINCT.
    pub distinct: u64,
    /// Rows before OFFSET and LIMIT.
    pub sorted: u64,
    /// Rows returned.
    pub returned: u64,
}

/// A query's LIMIT, OFFSET and FOR UPDATE.
#[derive(Clone, Copy)]
pub(crate) struct QueryClauses {
    limit: Option<usize>,
    offset: usize,
    for_update: bool,
    /// FOR UPDATE's NOWAIT or SKIP LOCKED.
    if_locked: IfLocked,
}

/// What `SELECT ... FOR UPDATE` does with a row another transaction has locked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum IfLocked {
    /// Waits for it (and then reads it again).
    #[default]
    Wait,
    /// `NOWAIT`: fails with 55P03.
    Fail,
    /// `SKIP LOCKED`: leaves it out, as if the WHERE had not kept it.
    Skip,
}

impl QueryClauses {
    /// No LIMIT, OFFSET or FOR UPDATE.
    fn is_plain(&self) -> bool {
        self.limit.is_none() && self.offset == 0 && !self.for_update
    }
}

/// Checks the clauses around a query's body and evaluates LIMIT, OFFSET and FOR UPDATE.
fn query_clauses(query: &ast::Query, params: &[Value]) -> DbResult<QueryClauses> {
    if query.for_clause.is_some() || query.settings.is_some() || query.format_clause.is_some() {
        return Err(DbError::Unsupported(format!("the query {query}")));
    }
    if !query.pipe_operators.is_empty() {
        return Err(DbError::Unsupported("the pipe operator".into()));
    }
    let (limit, offset) = limits(query, params)?;
    let mut for_update = false;
    let mut if_locked = IfLocked::Wait;
    for lock in &query.locks {
        // Several clauses: the strictest (PostgreSQL's rule: NOWAIT over SKIP LOCKED).
        if_locked = match (lock.nonblock, if_locked) {
            (Some(ast::NonBlock::Nowait), _) | (_, IfLocked::Fail) => IfLocked::Fail,
            (Some(ast::NonBlock::SkipLocked), _) | (_, IfLocked::Skip) => IfLocked::Skip,
            (None, IfLocked::Wait) => IfLocked::Wait,
        };
        // FOR SHARE locks exclusively too: row locks have one mode.
        for_update = true;
    }
    Ok(QueryClauses { limit, offset, for_update, if_locked })
}

fn syntax(message: String) -> DbError {
    DbError::Syntax { message, position: 0 }
}

/// A compiled query.
#[derive(Clone)]
pub(crate) enum QueryPlan {
    Select(Box<SelectPlan>),
    /// A set operation of two queries, then its ORDER BY, OFFSET and LIMIT.
    SetOp(Box<SetOpPlan>),
    /// VALUES rows, then its ORDER BY, OFFSET and LIMIT.
    Values(Box<ValuesPlan>),
    /// A recursive WITH query (see `recursive`).
    Recursive(Box<RecursivePlan>),
    /// A recursive WITH query's own name, read in its recursive term.
    WorkTable(Box<WorkTablePlan>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SetOp {
    Union,
    Intersect,
    Except,
}

#[derive(Clone)]
pub(crate) struct SetOpPlan {
    pub op: SetOp,
    pub all: bool,
    pub left: QueryPlan,
    pub right: QueryPlan,
    columns: Vec<ResultColumn>,
    order: OutputOrder,
}

#[derive(Clone)]
pub(crate) struct ValuesPlan {
    rows: Vec<Vec<Expr>>,
    columns: Vec<ResultColumn>,
    order: OutputOrder,
}

/// ORDER BY output columns, OFFSET and LIMIT, applied to a result.
#[derive(Clone, Default)]
struct OutputOrder {
    /// (output column, descending, NULLs first)
    sorts: Vec<(usize, bool, bool)>,
    limit: Option<usize>,
    offset: usize,
}

impl OutputOrder {
    fn apply(&self, mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
        if !self.sorts.is_empty() {
            rows.sort_by(|a, b| {
                for &(i, desc, nulls_first) in &self.sorts {
                    let o = order_values(&a[i], &b[i], desc, nulls_first);
                    if o != std::cmp::Ordering::Equal {
                        return o;
                    }
                }
                std::cmp::Ordering::Equal
            });
        }
        rows.into_iter().skip(self.offset).take(self.limit.unwrap_or(usize::MAX)).collect()
    }
}

/// Two values in an ORDER BY's order.
pub(crate) fn order_values(x: &Value, y: &Value, desc: bool, nulls_first: bool) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (x.is_null(), y.is_null()) {
        (true, true) => Equal,
        (true, false) if nulls_first => Less,
        (true, false) => Greater,
        (false, true) if nulls_first => Greater,
        (false, true) => Less,
        (false, false) => {
            let o = compare(x, y).ok().flatten().unwrap_or_else(|| x.cmp(y));
            if desc {
                o.reverse()
            } else {
                o
            }
        }
    }
}

impl QueryPlan {
    /// Rows already produced (a data-modifying WITH query's RETURNING rows), read as a
    /// VALUES list of them.
    pub(crate) fn materialized(columns: Vec<ResultColumn>, rows: Vec<Vec<Value>>) -> QueryPlan {
        let rows = rows.into_iter().map(|row| row.into_iter().map(Expr::Literal).collect()).collect();
        QueryPlan::Values(Box::new(ValuesPlan { rows, columns, order: OutputOrder::default() }))
    }

    pub(crate) fn columns(&self) -> &[ResultColumn] {
        match self {
            QueryPlan::Select(p) => &p.columns,
            QueryPlan::SetOp(p) => &p.columns,
            QueryPlan::Values(p) => &p.columns,
            QueryPlan::Recursive(p) => &p.columns,
            QueryPlan::WorkTable(p) => &p.columns,
        }
    }

    /// Every expression of the plan (not those of its subqueries' plans).
    fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        match self {
            QueryPlan::Select(p) => p.for_each_expr(f),
            QueryPlan::SetOp(p) => {
                p.left.for_each_expr(f);
                p.right.for_each_expr(f);
            }
            QueryPlan::Values(p) => p.rows.iter().flatten().for_each(f),
            QueryPlan::Recursive(p) => {
                p.non_recursive.for_each_expr(f);
                p.recursive.for_each_expr(f);
            }
            QueryPlan::WorkTable(_) => {}
        }
    }

    /// The plan with every expression replaced by `f` of it.
    fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> DbResult<Expr>) -> DbResult<QueryPlan> {
        Ok(match self {
            QueryPlan::Select(p) => QueryPlan::Select(Box::new(p.map_exprs(f)?)),
            QueryPlan::SetOp(p) => QueryPlan::SetOp(Box::new(SetOpPlan {
                left: p.left.map_exprs(f)?,
                right: p.right.map_exprs(f)?,
                ..(**p).clone()
            })),
            QueryPlan::Values(p) => QueryPlan::Values(Box::new(ValuesPlan {
                rows: p.rows.iter().map(|r| r.iter().map(&mut *f).collect()).collect::<DbResult<_>>()?,
                ..(**p).clone()
            })),
            QueryPlan::Recursive(p) => QueryPlan::Recursive(Box::new(RecursivePlan {
                non_recursive: p.non_recursive.map_exprs(f)?,
                recursive: p.recursive.map_exprs(f)?,
                ..(**p).clone()
            })),
            QueryPlan::WorkTable(p) => QueryPlan::WorkTable(p.clone()),
        })
    }

    /// Whether the plan reads the row of the query `depth` levels out (see `Expr::Outer`).
    pub(crate) fn reads_outer(&self, depth: usize) -> bool {
        let mut found = false;
        self.for_each_expr(&mut |e| found |= e.reads_outer(depth));
        // Subqueries in FROM see the same outer rows as the query they are in; a LATERAL
        // one sees them one level further out (its depth 0 is the FROM clause's row).
        found || self.derived().iter().any(|&(d, lateral)| d.reads_outer(depth + usize::from(lateral)))
    }

    /// The columns of the row of the query `depth` levels out that the plan reads.
    pub(crate) fn outer_columns(&self, depth: usize, out: &mut Vec<usize>) {
        self.for_each_expr(&mut |e| e.outer_columns(depth, out));
        for (d, lateral) in self.derived() {
            d.outer_columns(depth + usize::from(lateral), out);
        }
    }

    /// The plan with the outer row `depth` levels out bound to `row`.
    pub(crate) fn bind_outer(&self, depth: usize, row: &[Value]) -> QueryPlan {
        let mut plan = self.map_exprs(&mut |e| Ok(e.bind_outer(depth, row))).expect("binding never fails");
        plan.bind_derived(depth, row);
        plan
    }

    /// The plans of the subqueries in FROM of this plan's SELECTs, each with whether it
    /// is LATERAL.
    fn derived(&self) -> Vec<(&QueryPlan, bool)> {
        match self {
            QueryPlan::Select(p) => p
                .joins
                .iter()
                .flat_map(|j| {
                    j.scope.entries.iter().filter_map(|e| Some((e.relation.derived.as_deref()?, e.lateral)))
                })
                .collect(),
            QueryPlan::SetOp(p) => p.left.derived().into_iter().chain(p.right.derived()).collect(),
            QueryPlan::Recursive(p) => {
                p.non_recursive.derived().into_iter().chain(p.recursive.derived()).collect()
            }
            QueryPlan::Values(_) | QueryPlan::WorkTable(_) => Vec::new(),
        }
    }

    fn bind_derived(&mut self, depth: usize, row: &[Value]) {
        match self {
            QueryPlan::Select(p) => {
                if let Some(joins) = &mut p.joins {
                    for entry in &mut joins.scope.entries {
                        if let Some(plan) = &entry.relation.derived {
                            let depth = depth + usize::from(entry.lateral);
                            if plan.reads_outer(depth) {
                                entry.relation.derived = Some(Arc::new(plan.bind_outer(depth, row)));
                            }
                        }
                    }
                }
            }
            QueryPlan::SetOp(p) => {
                p.left.bind_derived(depth, row);
                p.right.bind_derived(depth, row);
            }
            QueryPlan::Recursive(p) => {
                p.non_recursive.bind_derived(depth, row);
                p.recursive.bind_derived(depth, row);
            }
            QueryPlan::Values(_) | QueryPlan::WorkTable(_) => {}
        }
    }
}

impl SelectPlan {
    fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        self.filter.iter().for_each(&mut *f);
        self.items.iter().for_each(&mut *f);
        self.groups.iter().for_each(&mut *f);
        for a in &self.aggs {
            a.for_each_expr(f);
        }
        self.having.iter().for_each(&mut *f);
        for w in &self.windows {
            w.for_each_expr(f);
        }
        for s in &self.sorts {
            if let SortKey::Expr(e) = &s.key {
                f(e);
            }
        }
        if let Some(joins) = &self.joins {
            joins.for_each_expr(f);
        }
    }

    fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> DbResult<Expr>) -> DbResult<SelectPlan> {
        let mut plan = self.clone();
        plan.filter = self.filter.as_ref().map(&mut *f).transpose()?;
        plan.items = self.items.iter().map(&mut *f).collect::<DbResult<_>>()?;
        plan.groups = self.groups.iter().map(&mut *f).collect::<DbResult<_>>()?;
        plan.aggs = self.aggs.iter().map(|a| a.map_exprs(&mut *f)).collect::<DbResult<_>>()?;
        plan.having = self.having.as_ref().map(&mut *f).transpose()?;
        plan.windows =
            self.windows.iter().map(|w| w.clone().map_exprs(&mut |e| f(&e))).collect::<DbResult<_>>()?;
        for s in &mut plan.sorts {
            if let SortKey::Expr(e) = &s.key {
                s.key = SortKey::Expr(f(e)?);
            }
        }
        if let Some(joins) = &self.joins {
            plan.joins = Some(joins.map_exprs(f)?);
        }
        Ok(plan)
    }

    fn has_subquery(&self) -> bool {
        let mut found = false;
        self.for_each_expr(&mut |e| found |= e.has_subquery());
        found
    }

    /// Whether it reads one table and gives each row it keeps as the select list of that
    /// row alone: no join, grouping, aggregate, window, DISTINCT, sort, LIMIT, OFFSET,
    /// FOR UPDATE or subquery (`point_select` compiles such a SELECT once).
    pub(crate) fn is_plain_projection(&self) -> bool {
        self.relation.is_some()
            && self.joins.is_none()
            && !self.grouped
            && self.groups.is_empty()
            && self.grouping_sets.is_none()
            && self.aggs.is_empty()
            && self.having.is_none()
            && self.windows.is_empty()
            && !self.distinct
            && self.distinct_on.is_none()
            && self.sorts.is_empty()
            && !self.needs_sort
            && !self.for_update
            && self.limit.is_none()
            && self.offset == 0
            && !self.has_subquery()
    }

    /// Marks the columns of the joined rows that the query reads (`JoinPlan::needed`),
    /// so that the joins copy no others: a column no expression of the plan names (a
    /// scan's filter, in its relation's own numbering, marks some columns needlessly,
    /// never too few) is never read. Not with a subquery (a correlated one is given the
    /// row's values as it runs) or a function in FROM (its arguments read the row).
    fn prune_join_columns(&mut self) {
        let Some(joins) = &self.joins else { return };
        // Nor with a LATERAL subquery (it reads the row as its outer row).
        if self.has_subquery()
            || joins.scope.entries.iter().any(|e| e.relation.function.is_some() || e.lateral)
        {
            return;
        }
        let width = joins.scope.width();
        let mut columns = Vec::new();
        self.for_each_expr(&mut |e| e.columns(&mut columns));
        let mut needed = vec![false; width];
        for c in columns.into_iter().filter(|&c| c < width) {
            needed[c] = true;
        }
        if let Some(joins) = &mut self.joins {
            joins.needed = Some(needed);
        }
    }
}

impl Session {
    /// Runs a query (SELECT, VALUES, set operations), returning its columns and rows.
    pub(crate) fn run_query(&mut self, query: &ast::Query, params: &[Value]) -> DbResult<Output> {
        let plan = self.plan_query_in(query, params, &[])?;
        self.run_query_plan(&plan)
    }

    /// Runs a statement's compiled query, returning its columns and rows.
    pub(crate) fn run_query_plan(&mut self, plan: &QueryPlan) -> DbResult<Output> {
        let rows = match plan {
            QueryPlan::Select(select) => self.execute_select(select, &mut SelectCounts::default())?,
            other => self.run_plan(other)?,
        };
        Ok(self.query_output(plan.columns().to_vec(), rows))
    }

    /// A query's result: the types its plan left open taken from its rows, and object
    /// identifiers of the name types (`regclass`) as names.
    pub(crate) fn query_output(&self, mut columns: Vec<ResultColumn>, mut rows: Vec<Vec<Value>>) -> Output {
        fill_types(&mut columns, &rows);
        let types: Vec<Option<DataType>> = columns.iter().map(|c| c.ty).collect();
        crate::catalog::name_objects(&self.db, &types, &mut rows);
        Output { columns, rows }
    }

    /// The plan of a query that is a SELECT (in parentheses or not), as `run_query`
    /// would run it; None for any other query (VALUES, set operations).
    pub(crate) fn plan_query(&self, query: &ast::Query, params: &[Value]) -> DbResult<Option<SelectPlan>> {
        match self.plan_query_in(query, params, &[])? {
            QueryPlan::Select(select) => Ok(Some(*select)),
            _ => Ok(None),
        }
    }

    /// Compiles a query inside the queries whose scopes are `outer` (innermost first; none
    /// for a statement's own query).
    pub(crate) fn plan_query_in(
        &self,
        query: &ast::Query,
        params: &[Value],
        outer: &[Scope],
    ) -> DbResult<QueryPlan> {
        let Some(with) = &query.with else { return self.plan_query_body(query, params, outer) };
        // Each WITH query is in scope for the ones after it and for the body; they leave
        // scope with this query, whatever happens.
        let depth = self.ctes.borrow().len();
        let planned = (|| {
            for cte in &with.cte_tables {
                if cte.from.is_some() {
                    return Err(DbError::Unsupported(format!("the WITH query {cte}")));
                }
                // Only a statement's own WITH may change rows (`dml_with` runs those).
                if crate::sql::dml_with::is_data_modifying(&cte.query) {
                    return Err(crate::sql::dml_with::not_at_top_level(cte));
                }
                let plan = match with.recursive {
                    true => self.plan_recursive_cte(cte, params, outer)?,
                    false => self.plan_query_in(&cte.query, params, outer)?,
                };
                self.push_cte(cte, plan)?;
            }
            self.plan_query_body(query, params, outer)
        })();
        self.ctes.borrow_mut().truncate(depth);
        planned
    }

    /// Puts the WITH query `cte`, planned as `plan`, in scope (under its name, its
    /// columns renamed by its alias) for the WITH queries after it and the query's body.
    pub(crate) fn push_cte(&self, cte: &ast::Cte, plan: QueryPlan) -> DbResult<()> {
        let name = ident_name(&cte.alias.name);
        let plan = Arc::new(plan);
        let relation = crate::sql::join::derived_relation(name.clone(), Some(&cte.alias), plan.clone())?;
        self.ctes.borrow_mut().push((name, Some(Arc::new(rename_columns(&plan, &relation)))));
        Ok(())
    }

    /// A query's body with its ORDER BY, LIMIT and OFFSET, its WITH queries (if any)
    /// already in scope.
    pub(crate) fn plan_query_body(
        &self,
        query: &ast::Query,
        params: &[Value],
        outer: &[Scope],
    ) -> DbResult<QueryPlan> {
        let clauses = query_clauses(query, params)?;
        match query.body.as_ref() {
            ast::SetExpr::Select(select) => Ok(QueryPlan::Select(Box::new(self.compile_select(
                select,
                query.order_by.as_ref(),
                clauses,
                params,
                outer,
            )?))),
            ast::SetExpr::Query(inner) if query.order_by.is_none() && clauses.is_plain() => {
                self.plan_query_in(inner, params, outer)
            }
            body => {
                if clauses.for_update {
                    return Err(DbError::Unsupported(
                        "FOR UPDATE with UNION, INTERSECT, EXCEPT or VALUES".into(),
                    ));
                }
                let mut plan = self.plan_set_expr(body, params, outer)?;
                let order = OutputOrder {
                    sorts: output_sorts(query.order_by.as_ref(), plan.columns())?,
                    limit: clauses.limit,
                    offset: clauses.offset,
                };
                match &mut plan {
                    QueryPlan::SetOp(p) => p.order = order,
                    QueryPlan::Values(p) => p.order = order,
                    QueryPlan::Select(_) | QueryPlan::Recursive(_) | QueryPlan::WorkTable(_) => {
                        // A parenthesized query with its own ORDER BY or LIMIT, ordered or
                        // limited again: as a set operation of one.
                        let columns = plan.columns().to_vec();
                        return Ok(QueryPlan::SetOp(Box::new(SetOpPlan {
                            op: SetOp::Union,
                            all: true,
                            right: QueryPlan::Values(Box::new(ValuesPlan {
                                rows: Vec::new(),
                                columns: columns.clone(),
                                order: OutputOrder::default(),
                            })),
                            left: plan,
                            columns,
                            order,
                        })));
                    }
                }
                Ok(plan)
            }
        }
    }

    /// A query body: a SELECT (without ORDER BY), VALUES, a set operation, or a query in
    /// parentheses.
    pub(crate) fn plan_set_expr(
        &self,
        body: &ast::SetExpr,
        params: &[Value],
        outer: &[Scope],
    ) -> DbResult<QueryPlan> {
        match body {
            ast::SetExpr::Select(select) => Ok(QueryPlan::Select(Box::new(self.compile_select(
                select,
                None,
                QueryClauses { limit: None, offset: 0, for_update: false, if_locked: IfLocked::Wait },
                params,
                outer,
            )?))),
            ast::SetExpr::Query(inner) => self.plan_query_in(inner, params, outer),
            ast::SetExpr::Values(values) => {
                let mut binder = Binder::over(Scope::default(), outer.to_vec(), params).in_session(self);
                let mut rows: Vec<Vec<Expr>> = Vec::with_capacity(values.rows.len());
                for row in &values.rows {
                    let row = row
                        .content
                        .iter()
                        .map(|e| binder.scalar(e, "VALUES"))
                        .collect::<DbResult<Vec<_>>>()?;
                    if rows.first().is_some_and(|first| first.len() != row.len()) {
                        return Err(syntax("VALUES lists must all be the same length".into()));
                    }
                    rows.push(row);
                }
                let width = rows.first().map_or(0, Vec::len);
                let columns = (0..width)
                    .map(|i| ResultColumn {
                        name: format!("column{}", i + 1),
                        ty: rows.iter().find_map(|r| r[i].static_type(&[], &[])),
                    })
                    .collect();
                Ok(QueryPlan::Values(Box::new(ValuesPlan { rows, columns, order: OutputOrder::default() })))
            }
            ast::SetExpr::SetOperation { op, set_quantifier, left, right } => {
                let op = match op {
                    ast::SetOperator::Union => SetOp::Union,
                    ast::SetOperator::Intersect => SetOp::Intersect,
                    ast::SetOperator::Except | ast::SetOperator::Minus => SetOp::Except,
                };
                let all = match set_quantifier {
                    ast::SetQuantifier::All => true,
                    ast::SetQuantifier::None | ast::SetQuantifier::Distinct => false,
                    other => return Err(DbError::Unsupported(format!("{op:?} {other}"))),
                };
                let left = self.plan_set_expr(left, params, outer)?;
                let right = self.plan_set_expr(right, params, outer)?;
                if left.columns().len() != right.columns().len() {
                    let name = match op {
                        SetOp::Union => "UNION",
                        SetOp::Intersect => "INTERSECT",
                        SetOp::Except => "EXCEPT",
                    };
                    return Err(syntax(format!("each {name} query must have the same number of columns")));
                }
                let columns = left
                    .columns()
                    .iter()
                    .zip(right.columns())
                    .map(|(l, r)| ResultColumn {
                        name: l.name.clone(),
                        ty: crate::sql::expr::common_type([l.ty, r.ty].into_iter()),
                    })
                    .collect();
                Ok(QueryPlan::SetOp(Box::new(SetOpPlan {
                    op,
                    all,
                    left,
                    right,
                    columns,
                    order: OutputOrder::default(),
                })))
            }
            other => Err(DbError::Unsupported(format!("the query {other}"))),
        }
    }

    /// Runs a plan that locks nothing (any query but a SELECT ... FOR UPDATE).
    pub(crate) fn run_plan(&self, plan: &QueryPlan) -> DbResult<Vec<Vec<Value>>> {
        match plan {
            QueryPlan::Select(select) => {
                if select.for_update {
                    return Err(DbError::Unsupported("FOR UPDATE in a subquery".into()));
                }
                self.read_select(select, &mut SelectCounts::default())
            }
            QueryPlan::Recursive(recursive) => self.run_recursive(recursive),
            QueryPlan::WorkTable(work_table) => self.run_work_table(work_table),
            QueryPlan::Values(values) => {
                let resolved;
                let values = if values.rows.iter().flatten().any(Expr::has_subquery) {
                    resolved = QueryPlan::Values(values.clone())
                        .map_exprs(&mut |e| self.resolve_subqueries(e, None))?;
                    match &resolved {
                        QueryPlan::Values(v) => v,
                        _ => unreachable!(),
                    }
                } else {
                    values
                };
                let rows = values
                    .rows
                    .iter()
                    .map(|row| row.iter().map(|e| e.eval(&[], &[])).collect::<DbResult<Vec<_>>>())
                    .collect::<DbResult<Vec<_>>>()?;
                Ok(values.order.apply(rows))
            }
            QueryPlan::SetOp(set) => {
                let mut left = self.run_plan(&set.left)?;
                let mut right = self.run_plan(&set.right)?;
                // Numbers of several kinds in one column: all of the column's type
                // (PostgreSQL gives the column one type), FLOAT or NUMERIC.
                for (i, c) in set.columns.iter().enumerate() {
                    if matches!(c.ty, Some(DataType::Float | DataType::Float4 | DataType::Numeric(_))) {
                        for row in left.iter_mut().chain(right.iter_mut()) {
                            if matches!(
                                row[i],
                                Value::Int(_) | Value::Float(_) | Value::Float4(_) | Value::Numeric(_)
                            ) && !row[i].has_type(c.ty.expect("a number type"))
                            {
                                let v = std::mem::replace(&mut row[i], Value::Null);
                                row[i] = coerce(v, c.ty.expect("a number type").unconstrained())?;
                            }
                        }
                    }
                }
                let rows = match (set.op, set.all) {
                    (SetOp::Union, true) => {
                        left.extend(right);
                        left
                    }
                    (SetOp::Union, false) => {
                        let mut seen = BTreeSet::new();
                        left.into_iter().chain(right).filter(|r| seen.insert(r.clone())).collect()
                    }
                    (SetOp::Intersect, all) => {
                        let mut counts: BTreeMap<Vec<Value>, usize> = BTreeMap::new();
                        for r in right {
                            *counts.entry(r).or_default() += 1;
                        }
                        let mut out = Vec::new();
                        for r in left {
                            if let Some(n) = counts.get_mut(&r) {
                                if *n > 0 {
                                    *n = if all { *n - 1 } else { 0 };
                                    out.push(r);
                                }
                            }
                        }
                        out
                    }
                    (SetOp::Except, all) => {
                        let mut counts: BTreeMap<Vec<Value>, usize> = BTreeMap::new();
                        for r in right {
                            *counts.entry(r).or_default() += 1;
                        }
                        let mut seen = BTreeSet::new();
                        let mut out = Vec::new();
                        for r in left {
                            match counts.get_mut(&r) {
                                Some(n) if *n > 0 => {
                                    if all {
                                        *n -= 1;
                                    }
                                }
                                _ => {
                                    if all || seen.insert(r.clone()) {
                                        out.push(r);
                                    }
                                }
                            }
                        }
                        out
                    }
                };
                Ok(set.order.apply(rows))
            }
        }
    }

    /// `e` with its subqueries replaced by their results: with `row`, every subquery,
    /// correlated ones run with `row` as their outer row; without, only the uncorrelated
    /// ones (the correlated stay for each row).
    pub(crate) fn resolve_subqueries(&self, e: &Expr, row: Option<&[Value]>) -> DbResult<Expr> {
        match e {
            Expr::Subquery(sub) => {
                let correlated = sub.plan.0.reads_outer(0);
                if correlated && row.is_none() {
                    let lhs_resolved = e.clone().map_children(&mut |c| self.resolve_subqueries(&c, None))?;
                    return Ok(lhs_resolved);
                }
                let bound;
                let plan = match (correlated, row) {
                    (true, Some(row)) => {
                        bound = sub.plan.0.bind_outer(0, row);
                        &bound
                    }
                    _ => &*sub.plan.0,
                };
                let rows = self.run_plan(plan)?;
                let single_column = || -> DbResult<Vec<Value>> {
                    if plan.columns().len() != 1 {
                        return Err(syntax("subquery has too many columns".into()));
                    }
                    Ok(rows.iter().map(|r| r[0].clone()).collect())
                };
                Ok(match &sub.kind {
                    SubqueryKind::Scalar => {
                        let mut values = single_column()?;
                        if values.len() > 1 {
                            return Err(DbError::CardinalityViolation);
                        }
                        Expr::Literal(values.pop().unwrap_or(Value::Null))
                    }
                    SubqueryKind::Array(elem) => {
                        let values = single_column()?;
                        if values.len() > crate::array::MAX_ELEMENTS {
                            return Err(crate::array::too_many());
                        }
                        let ty = elem.data_type();
                        let values = values
                            .into_iter()
                            .map(|v| crate::schema::coerce(v, ty))
                            .collect::<DbResult<Vec<_>>>()?;
                        Expr::Literal(crate::array::Array::new(*elem, values).into_value())
                    }
                    SubqueryKind::Exists { negated } => {
                        Expr::Literal(Value::Bool(rows.is_empty() == *negated))
                    }
                    SubqueryKind::In { lhs, negated } => {
                        let lhs = Box::new(self.resolve_subqueries(lhs, row)?);
                        let any = Expr::Quantified {
                            lhs,
                            op: crate::sql::expr::BinOp::Eq,
                            all: false,
                            values: single_column()?,
                        };
                        if *negated {
                            Expr::Not(Box::new(any))
                        } else {
                            any
                        }
                    }
                    SubqueryKind::InRows { lhs, negated } => {
                        let lhs = lhs
                            .iter()
                            .map(|e| self.resolve_subqueries(e, row))
                            .collect::<DbResult<Vec<_>>>()?;
                        let any = Expr::RowsAny { lhs, rows };
                        if *negated {
                            Expr::Not(Box::new(any))
                        } else {
                            any
                        }
                    }
                    SubqueryKind::Quantified { lhs, op, all } => Expr::Quantified {
                        lhs: Box::new(self.resolve_subqueries(lhs, row)?),
                        op: *op,
                        all: *all,
                        values: single_column()?,
                    },
                })
            }
            other if other.has_subquery() => {
                other.clone().map_children(&mut |c| self.resolve_subqueries(&c, row))
            }
            other => Ok(other.clone()),
        }
    }

    /// Compiles a subquery of an expression compiled by a binder whose scopes (its own,
    /// then its outer ones) are `scopes`.
    pub(crate) fn plan_subquery(
        &self,
        query: &ast::Query,
        params: &[Value],
        scopes: Vec<Scope>,
        kind: SubqueryKind,
    ) -> DbResult<Expr> {
        let plan = self.plan_query_in(query, params, &scopes)?;
        // PostgreSQL's words: an IN or ANY/ALL subquery is matched against its left
        // side's values, anything else must give one value.
        let wanted = match &kind {
            SubqueryKind::Exists { .. } => None,
            SubqueryKind::InRows { lhs, .. } => Some(lhs.len()),
            SubqueryKind::In { .. } | SubqueryKind::Quantified { .. } => Some(1),
            SubqueryKind::Scalar | SubqueryKind::Array(_) => {
                if plan.columns().len() != 1 {
                    return Err(syntax("subquery must return only one column".into()));
                }
                None
            }
        };
        match wanted {
            Some(n) if plan.columns().len() > n => {
                return Err(syntax("subquery has too many columns".into()))
            }
            Some(n) if plan.columns().len() < n => return Err(syntax("subquery has too few columns".into())),
            _ => {}
        }
        Ok(Expr::Subquery(Box::new(Subquery { kind, plan: SubPlan(Arc::new(plan)) })))
    }

    /// The table of a FROM clause (none for `SELECT 1`), or of UPDATE or DELETE.
    pub(crate) fn relation_of(&self, from: &[ast::TableWithJoins]) -> DbResult<Option<Relation>> {
        match from {
            [] => Ok(None),
            [ast::TableWithJoins { relation, joins }] if joins.is_empty() => match relation {
                ast::TableFactor::Table { sample: Some(_), .. } => Err(DbError::Syntax {
                    message: "syntax error at or near \"TABLESAMPLE\": UPDATE and DELETE take no sample"
                        .into(),
                    position: 0,
                }),
                ast::TableFactor::Table { name, alias, args: None, .. } => {
                    let relation = self.relation_named(name, alias.as_ref())?;
                    if relation.derived.is_some() {
                        // A view or a WITH query: rows of no table of their own.
                        return Err(DbError::ObjectNotInPrerequisiteState(format!(
                            "cannot update or delete from \"{}\": it is a view or a WITH query, not a table",
                            relation.name
                        )));
                    }
                    Ok(Some(relation))
                }
                ast::TableFactor::Derived { .. } => Err(DbError::Unsupported("a subquery in FROM".into())),
                other => Err(DbError::Unsupported(format!("FROM {other}"))),
            },
            _ => Err(DbError::Unsupported("a join in UPDATE or DELETE".into())),
        }
    }

    /// Compiles a SELECT against its table: every name resolved, every expression bound
    /// (with the bind values), the access path's inputs and the steps decided.
    fn compile_select(
        &self,
        select: &ast::Select,
        order_by: Option<&ast::OrderBy>,
        clauses: QueryClauses,
        params: &[Value],
        outer: &[Scope],
    ) -> DbResult<SelectPlan> {
        let rewritten;
        let select = match crate::sql::srf::select_list_functions(select)? {
            Some(s) => {
                rewritten = s;
                &rewritten
            }
            None => select,
        };
        let isolated;
        let select = match crate::sql::tablesample::isolate_samples(select)? {
            Some(s) => {
                isolated = s;
                &isolated
            }
            None => select,
        };
        let QueryClauses { limit, offset, for_update, if_locked } = clauses;
        let (distinct, distinct_on) = match &select.distinct {
            None | Some(ast::Distinct::All) => (false, None),
            Some(ast::Distinct::Distinct) => (true, None),
            Some(ast::Distinct::On(exprs)) => (false, Some(exprs)),
        };
        if select.top.is_some()
            || select.into.is_some()
            || !select.lateral_views.is_empty()
            || select.prewhere.is_some()
            || !select.connect_by.is_empty()
            || !select.cluster_by.is_empty()
            || !select.distribute_by.is_empty()
            || !select.sort_by.is_empty()
            || select.qualify.is_some()
            || select.exclude.is_some()
        {
            return Err(DbError::Unsupported(format!("the query {select}")));
        }
        let (scope, written) = self.scope_of_from(&select.from, params, outer)?;
        // Several relations, or a subquery's rows: through the joins' scans.
        let several = scope.entries.len() > 1
            || scope.entries.iter().any(|e| e.relation.derived.is_some() || e.relation.function.is_some());
        let relation = if several { None } else { scope.single().cloned() };
        let input_names = scope.names();
        let input_types = scope.types();
        let mut binder = Binder::over(scope.clone(), outer.to_vec(), params).in_session(self);
        let filter = select.selection.as_ref().map(|e| binder.scalar(e, "WHERE")).transpose()?;
        // TABLESAMPLE on the one table (several relations' samples are subqueries by
        // now): a filter of its rows before the WHERE's.
        let sample = match select.from.as_slice() {
            [only] if only.joins.is_empty() => crate::sql::tablesample::sample_of(&only.relation)?,
            _ => None,
        };
        let filter = match sample {
            None => filter,
            Some(sample) => {
                let entry = &scope.entries[0];
                if entry.relation.derived.is_some() || entry.relation.function.is_some() {
                    return Err(DbError::FeatureNotSupported(
                        "TABLESAMPLE clause can only be applied to tables and materialized views".into(),
                    ));
                }
                // The percentage reads no column of the table, as PostgreSQL's.
                let mut constants = Binder::over(Scope::default(), outer.to_vec(), params).in_session(self);
                let percentage = constants.scalar(sample.percentage, "TABLESAMPLE")?.fold()?;
                crate::sql::tablesample::check_percentage(&percentage)?;
                let keys = entry.relation.schema.primary_key.iter().map(|k| entry.offset + k);
                let keep = crate::sql::tablesample::predicate(&sample, percentage, keys);
                Some(match filter {
                    None => keep,
                    Some(f) => Expr::Binary(BinOp::And, Box::new(keep), Box::new(f)),
                })
            }
        };
        let (joins, filter) = if several {
            let plan = self.plan_joins(scope.clone(), written, filter, &mut binder)?;
            let residual = plan.residual.clone();
            (Some(plan), residual)
        } else {
            (None, filter)
        };

        // The select list.
        let mut items = Vec::new();
        let mut names = Vec::new();
        let expand = |qualifier: Option<String>, items: &mut Vec<Expr>, names: &mut Vec<String>| {
            if scope.entries.is_empty() {
                return Err(syntax("SELECT * with no tables specified is not valid".into()));
            }
            for (name, i) in scope.star(qualifier.as_deref())? {
                items.push(Expr::Column(i));
                names.push(name);
            }
            Ok::<(), DbError>(())
        };
        binder.named_windows = crate::sql::window::named_windows(&select.named_window)?;
        binder.windows_allowed = true;
        for item in &select.projection {
            // `(expr).*`: a column per field of the record (an alias is no name here).
            if let ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } = item {
                if let Some(record) = crate::sql::record_star::expanded_record(e) {
                    for (name, field) in binder.record_fields(&record)? {
                        items.push(field);
                        names.push(name);
                    }
                    continue;
                }
            }
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    items.push(binder.with_aggregates(e)?);
                    names.push(column_name(e));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    items.push(binder.with_aggregates(expr)?);
                    names.push(ident_name(alias));
                }
                ast::SelectItem::Wildcard(_) => expand(None, &mut items, &mut names)?,
                ast::SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(q),
                    _,
                ) => expand(Some(crate::sql::expr::object_name(q)?), &mut items, &mut names)?,
                other => return Err(DbError::Unsupported(format!("the select item {other}"))),
            }
        }

        binder.windows_allowed = false;
        // GROUP BY: expressions, select-list positions or output names.
        let group_asts = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs.as_slice(),
            other => return Err(DbError::Unsupported(format!("{other}"))),
        };
        // GROUP BY DISTINCT: its mark, the first item (`group_by_distinct`).
        let (distinct_sets, group_asts) = match group_asts {
            [first, rest @ ..] if crate::sql::group_by_distinct::is_marker(first) => (true, rest),
            all => (false, all),
        };
        let mut groups = Vec::new();
        let mut group_texts = Vec::new();
        let mut key_of = |g: &ast::Expr, binder: &mut Binder| -> DbResult<usize> {
            let e = match output_reference(g, &names, &scope)? {
                Some(i) => items[i].clone(),
                None => binder.scalar(g, "GROUP BY")?,
            };
            if e.contains_aggregate() {
                return Err(grouping_error("aggregate functions are not allowed in GROUP BY".into()));
            }
            Ok(match groups.iter().position(|known| *known == e) {
                Some(i) => i,
                None => {
                    groups.push(e);
                    group_texts.push(g.to_string());
                    groups.len() - 1
                }
            })
        };
        let mut item_sets: Vec<Vec<Vec<usize>>> = Vec::with_capacity(group_asts.len());
        let mut explicit_sets = false;
        for g in group_asts {
            let mut keys_of = |list: &[ast::Expr], binder: &mut Binder| -> DbResult<Vec<usize>> {
                list.iter().map(|e| key_of(e, binder)).collect()
            };
            let mut elements_of = |lists: &[Vec<ast::Expr>], binder: &mut Binder| {
                lists.iter().map(|l| keys_of(l, binder)).collect::<DbResult<Vec<_>>>()
            };
            let sets = match g {
                ast::Expr::Rollup(lists) => SetsOf::Rollup.sets(&elements_of(lists, &mut binder)?)?,
                ast::Expr::Cube(lists) => SetsOf::Cube.sets(&elements_of(lists, &mut binder)?)?,
                ast::Expr::GroupingSets(lists) => {
                    // A ROLLUP or CUBE among them adds its sets to the list.
                    let mut sets = Vec::new();
                    for list in lists {
                        match list.as_slice() {
                            [ast::Expr::Function(f)] if SetsOf::named(f).is_some() => {
                                let (kind, nested) = nested_sets(f)?;
                                sets.extend(kind.sets(&elements_of(&nested, &mut binder)?)?);
                            }
                            _ => sets.extend(elements_of(std::slice::from_ref(list), &mut binder)?),
                        }
                    }
                    sets
                }
                ast::Expr::Tuple(list) if list.is_empty() => vec![Vec::new()],
                plain => {
                    item_sets.push(vec![vec![key_of(plain, &mut binder)?]]);
                    continue;
                }
            };
            explicit_sets = true;
            item_sets.push(sets);
        }
        let grouping_sets = match (explicit_sets, distinct_sets) {
            (false, _) => None,
            (true, false) => Some(multiply_sets(&item_sets)?),
            (true, true) => Some(crate::sql::group_by_distinct::distinct_sets(multiply_sets(&item_sets)?)),
        };
        let having = select.having.as_ref().map(|e| binder.with_aggregates(e)).transpose()?;

        // ORDER BY: positions, output names, or expressions.
        let mut sorts = Vec::new();
        if let Some(order_by) = order_by {
            if order_by.interpolate.is_some() {
                return Err(DbError::Unsupported("INTERPOLATE".into()));
            }
            let ast::OrderByKind::Expressions(exprs) = &order_by.kind else {
                return Err(DbError::Unsupported("ORDER BY ALL".into()));
            };
            for o in exprs {
                if o.with_fill.is_some() {
                    return Err(DbError::Unsupported("WITH FILL".into()));
                }
                let desc = match &o.options.sort {
                    None | Some(ast::OrderBySort::Asc) => false,
                    Some(ast::OrderBySort::Desc) => true,
                    Some(ast::OrderBySort::Using(_)) => {
                        return Err(DbError::Unsupported("ORDER BY ... USING".into()))
                    }
                };
                let key = match output_reference(&o.expr, &names, &scope)? {
                    Some(i) => SortKey::Output(i),
                    None => {
                        binder.windows_allowed = true;
                        let e = binder.with_aggregates(&o.expr);
                        binder.windows_allowed = false;
                        SortKey::Expr(e?)
                    }
                };
                sorts.push(Sort { key, desc, nulls_first: o.options.nulls_first.unwrap_or(desc) });
            }
        }

        // DISTINCT ON (e, ...): the first row of each run of equal values of its keys,
        // which lead the sort (ORDER BY's first keys, in any order, then those it left
        // out), so that a run is the rows sorted together.
        let distinct_on = match distinct_on {
            None => None,
            Some(exprs) => {
                let mut on = Vec::with_capacity(exprs.len());
                for e in exprs {
                    let key = match output_reference(e, &names, &scope)? {
                        Some(i) => items[i].clone(),
                        None => binder.with_aggregates(e)?,
                    };
                    if !on.contains(&key) {
                        on.push(key);
                    }
                }
                let resolved = |key: &SortKey| match key {
                    SortKey::Output(i) => items[*i].clone(),
                    SortKey::Expr(e) => e.clone(),
                };
                let mut unmatched = on.clone();
                for sort in &sorts {
                    if unmatched.is_empty() {
                        break;
                    }
                    let key = resolved(&sort.key);
                    match unmatched.iter().position(|u| *u == key) {
                        Some(i) => {
                            unmatched.remove(i);
                        }
                        None if on.contains(&key) => {}
                        None => {
                            return Err(DbError::InvalidColumnReference(
                                "SELECT DISTINCT ON expressions must match initial ORDER BY expressions"
                                    .into(),
                            ))
                        }
                    }
                }
                sorts.extend(unmatched.into_iter().map(|e| Sort {
                    key: SortKey::Expr(e),
                    desc: false,
                    nulls_first: false,
                }));
                Some(on.len())
            }
        };

        let aggs = std::mem::take(&mut binder.aggs);
        let windows = std::mem::take(&mut binder.windows);
        // Each GROUPING() argument must be one of the GROUP BY expressions (none without
        // a GROUP BY).
        let groupings = std::mem::take(&mut binder.groupings)
            .into_iter()
            .map(|args| {
                args.iter()
                    .map(|arg| {
                        groups.iter().position(|g| g == arg).ok_or_else(|| {
                            grouping_error(
                                "arguments to GROUPING must be grouping expressions of the associated query level"
                                    .into(),
                            )
                        })
                    })
                    .collect::<DbResult<Vec<usize>>>()
            })
            .collect::<DbResult<Vec<_>>>()?;
        let grouped = !groups.is_empty() || !aggs.is_empty() || having.is_some() || grouping_sets.is_some();
        // In a group row, the group's key then the GROUPING() calls' values.
        let grouping_base = groups.len();
        let regroup = |e: Expr| -> DbResult<Expr> {
            groupings_as_columns(e.regroup(&groups, &input_names)?, grouping_base)
        };
        // An ordered-set aggregate's direct arguments are read once per group, from
        // its row (PostgreSQL's rule: they may use only grouped columns).
        let aggs = aggs
            .into_iter()
            .map(|mut call| {
                call.direct =
                    std::mem::take(&mut call.direct).into_iter().map(&regroup).collect::<DbResult<_>>()?;
                Ok(call)
            })
            .collect::<DbResult<Vec<AggCall>>>()?;
        let windows = if grouped {
            windows.into_iter().map(|w| w.map_exprs(&mut |e| regroup(e))).collect::<DbResult<Vec<_>>>()?
        } else {
            windows
        };
        let (items, having, sorts) = if grouped {
            let items = items.into_iter().map(regroup).collect::<DbResult<Vec<_>>>()?;
            let having = having.map(regroup).transpose()?;
            let sorts = sorts
                .into_iter()
                .map(|s| {
                    Ok(Sort {
                        key: match s.key {
                            SortKey::Expr(e) => SortKey::Expr(regroup(e)?),
                            output => output,
                        },
                        ..s
                    })
                })
                .collect::<DbResult<Vec<_>>>()?;
            (items, having, sorts)
        } else {
            (items, having, sorts)
        };
        if for_update
            && (grouped || distinct || distinct_on.is_some() || relation.is_none() || !windows.is_empty())
        {
            return Err(DbError::Unsupported(
                "FOR UPDATE with GROUP BY, aggregates, DISTINCT, window functions, a join or no table".into(),
            ));
        }

        // Result column types, known before running when possible.
        let mut row_types: Vec<Option<DataType>> = if grouped {
            let keys = groups.iter().map(|g| g.static_type(&input_types, &[]));
            keys.chain(groupings.iter().map(|_| Some(DataType::Int))).collect()
        } else {
            input_types.clone()
        };
        for call in &aggs {
            check_aggregate_arguments(call, &input_types)?;
        }
        let agg_types: Vec<Option<DataType>> = aggs.iter().map(|a| aggregate_type(a, &input_types)).collect();
        // A window call's values are the row's columns after the input's (or the
        // group key's).
        let window_base = row_types.len();
        let window_types: Vec<Option<DataType>> =
            windows.iter().map(|w| w.data_type(&row_types, &agg_types)).collect();
        row_types.extend(window_types);
        let to_column = |e: Expr| -> DbResult<Expr> { windows_as_columns(e, window_base) };
        let items = items.into_iter().map(to_column).collect::<DbResult<Vec<_>>>()?;
        let sorts = sorts
            .into_iter()
            .map(|s| {
                Ok(Sort {
                    key: match s.key {
                        SortKey::Expr(e) => SortKey::Expr(to_column(e)?),
                        output => output,
                    },
                    ..s
                })
            })
            .collect::<DbResult<Vec<_>>>()?;
        let columns: Vec<ResultColumn> = items
            .iter()
            .zip(names)
            .map(|(e, name)| ResultColumn { name, ty: e.static_type(&row_types, &agg_types) })
            .collect();

        let follows_key = relation.as_ref().is_some_and(|r| {
            !grouped
                && sorts.len() <= r.schema.primary_key.len()
                && sorts.iter().zip(&r.schema.primary_key).all(|(s, &k)| {
                    let column = match &s.key {
                        SortKey::Output(i) => &items[*i],
                        SortKey::Expr(e) => e,
                    };
                    !s.desc && *column == Expr::Column(k)
                })
        });
        let plain = !grouped && !distinct && distinct_on.is_none() && windows.is_empty() && !for_update;
        let ordered = match &relation {
            Some(r)
                if !follows_key
                    && !for_update
                    && windows.is_empty()
                    && having.is_none()
                    && grouping_sets.is_none() =>
            {
                ordered_scan(r, &sorts, &items, &aggs, groups.len(), limit, plain)
            }
            _ => None,
        };
        let needs_sort = !sorts.is_empty() && !follows_key && ordered.is_none();
        let group_keys_hashed = groups.iter().all(|g| hashed_exactly(g.static_type(&input_types, &[])));
        let stop_after = match limit {
            Some(limit)
                if !needs_sort && !distinct && distinct_on.is_none() && !grouped && windows.is_empty() =>
            {
                Some(offset.saturating_add(limit))
            }
            _ => None,
        };
        let mut plan = SelectPlan {
            relation,
            joins,
            filter,
            items,
            columns,
            groups,
            grouping_sets,
            groupings,
            group_texts,
            aggs,
            having,
            windows,
            sorts,
            grouped,
            distinct,
            distinct_on,
            needs_sort,
            for_update,
            if_locked,
            limit,
            offset,
            stop_after,
            ordered,
            group_keys_hashed,
        };
        plan.prune_join_columns();
        Ok(plan)
    }

    /// Runs a compiled SELECT, counting in `counts` what each step handed on. Returns its
    /// rows (the plan has their columns).
    pub(crate) fn execute_select(
        &mut self,
        plan: &SelectPlan,
        counts: &mut SelectCounts,
    ) -> DbResult<Vec<Vec<Value>>> {
        if !plan.for_update {
            return self.read_select(plan, counts);
        }
        // FOR UPDATE: one table, no grouping or DISTINCT (checked when compiled).
        let resolved;
        let plan = if plan.has_subquery() {
            resolved = self.resolve_uncorrelated(plan)?;
            if resolved.has_subquery() {
                return Err(DbError::Unsupported("a correlated subquery with FOR UPDATE".into()));
            }
            &resolved
        } else {
            plan
        };
        let rel = plan.relation.as_ref().expect("FOR UPDATE reads one table");
        if crate::views::is_view(&rel.name) {
            return Err(crate::views::read_only(&rel.name));
        }
        let matches = |row: &[Value]| plan.filter.as_ref().map_or(Ok(true), |f| f.holds(row, &[]));
        let access = plan_access(&rel.schema, plan.filter.as_ref());
        log::trace!("SELECT from {} FOR UPDATE: {}", rel.name, access.describe());
        let mut candidates = Vec::new();
        self.visit_rows(&rel.name, &access, &mut |row| {
            counts.read += 1;
            if matches(row)? {
                candidates.push(row.clone());
            }
            Ok(true)
        })?;
        counts.matched = candidates.len() as u64;
        let eval = |e: &Expr, r: &[Value], a: &[Value]| e.eval(r, a);
        // With an ORDER BY the rows are locked in its order, and with a LIMIT only as many
        // as it keeps, as PostgreSQL's LockRows sits between its Sort and its Limit: a
        // queue's `ORDER BY due LIMIT 1 FOR UPDATE SKIP LOCKED` locks one row.
        if plan.needs_sort {
            let mut keyed = candidates
                .into_iter()
                .map(|row| Ok((project(plan, &row, &[], &eval)?.1, row)))
                .collect::<DbResult<Vec<_>>>()?;
            keyed.sort_by(|(a, _), (b, _)| sort_order(plan, a, b));
            candidates = keyed.into_iter().map(|(_, row)| row).collect();
        }
        let lock_at_most = plan.stop_after.or(plan.limit.map(|n| n.saturating_add(plan.offset)));
        self.row_locks_fail_when_taken = plan.if_locked != IfLocked::Wait;
        let locked = (|| {
            let mut results = Vec::new();
            for old in candidates {
                if lock_at_most.is_some_and(|n| results.len() >= n) {
                    break;
                }
                let key = rel.schema.key_of(&old);
                let row = match self.select_for_update(&rel.name, &key) {
                    Ok(Some(row)) => row,
                    Ok(None) => continue,
                    Err(DbError::LockNotAvailable(_)) if plan.if_locked == IfLocked::Skip => continue,
                    Err(DbError::LockNotAvailable(_)) => {
                        return Err(DbError::LockNotAvailable(format!("row in relation \"{}\"", rel.name)))
                    }
                    Err(e) => return Err(e),
                };
                if Arc::ptr_eq(&row, &old) || matches(&row)? {
                    results.push(project(plan, &row, &[], &eval)?);
                }
            }
            Ok(results)
        })();
        self.row_locks_fail_when_taken = false;
        let results = locked?;
        counts.locked = results.len() as u64;
        Ok(finish(plan, results, counts))
    }

    /// The plan with its uncorrelated subqueries run and replaced by their results.
    fn resolve_uncorrelated(&self, plan: &SelectPlan) -> DbResult<SelectPlan> {
        plan.map_exprs(&mut |e| {
            if e.has_subquery() {
                self.resolve_subqueries(e, None)
            } else {
                Ok(e.clone())
            }
        })
    }

    /// Runs a compiled SELECT that locks nothing.
    pub(crate) fn read_select(
        &self,
        plan: &SelectPlan,
        counts: &mut SelectCounts,
    ) -> DbResult<Vec<Vec<Value>>> {
        let resolved;
        let plan = if plan.has_subquery() {
            resolved = self.resolve_uncorrelated(plan)?;
            &resolved
        } else {
            plan
        };
        let unordered;
        let plan = match plan.without_order_if_narrow() {
            Some(p) => {
                unordered = p;
                &unordered
            }
            None => plan,
        };
        // What is left are correlated subqueries: run for each row they meet.
        let correlated = plan.has_subquery();
        // (The WHERE runs on the rows read, before grouping: it may hold them.)
        let after_grouping =
            plan.items.iter().chain(&plan.groups).chain(&plan.having).any(Expr::has_subquery)
                || plan.aggs.iter().any(|a| {
                    let mut found = false;
                    a.for_each_expr(&mut |e| found |= e.has_subquery());
                    found
                })
                || plan.sorts.iter().any(|s| matches!(&s.key, SortKey::Expr(e) if e.has_subquery()));
        if plan.grouped && after_grouping {
            return Err(DbError::Unsupported(
                "a correlated subquery in a query with GROUP BY or aggregates".into(),
            ));
        }
        let eval = |e: &Expr, row: &[Value], aggs: &[Value]| -> DbResult<Value> {
            if correlated && e.has_subquery() {
                self.resolve_subqueries(e, Some(row))?.eval(row, aggs)
            } else {
                e.eval(row, aggs)
            }
        };
        let holds = |e: &Expr, row: &[Value]| -> DbResult<bool> {
            Ok(crate::sql::expr::truth(&eval(e, row, &[])?)? == Some(true))
        };
        let matches = |row: &[Value]| plan.filter.as_ref().map_or(Ok(true), |f| holds(f, row));

        let mut results: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
        if !plan.windows.is_empty() {
            // Every row (or group) first, each call's values appended, then the list.
            let mut rows: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
            if !plan.grouped {
                self.visit_input(plan, &mut |row| {
                    counts.read += 1;
                    if matches(row)? {
                        counts.matched += 1;
                        rows.push((row.to_vec(), Vec::new()));
                    }
                    Ok(true)
                })?;
            } else {
                rows = self.groups_of(plan, counts, &matches)?;
            }
            crate::sql::window::compute(&plan.windows, &mut rows, &eval)?;
            for (row, aggs) in &rows {
                results.push(project(plan, row, aggs, &eval)?);
            }
            return Ok(finish(plan, results, counts));
        }
        if !plan.grouped {
            let mut take = |row: &[Value], counts: &mut SelectCounts| -> DbResult<bool> {
                counts.read += 1;
                if matches(row)? {
                    counts.matched += 1;
                    results.push(project(plan, row, &[], &eval)?);
                }
                Ok(plan.stop_after.is_none_or(|n| results.len() < n))
            };
            self.visit_input(plan, &mut |row| take(row, counts))?;
        } else {
            for (key, values) in self.groups_of(plan, counts, &matches)? {
                results.push(project(plan, &key, &values, &eval)?);
            }
        }
        Ok(finish(plan, results, counts))
    }

    /// The groups of a grouped query that pass its HAVING: each group's key and its
    /// aggregates' values.
    fn groups_of(
        &self,
        plan: &SelectPlan,
        counts: &mut SelectCounts,
        matches: &dyn Fn(&[Value]) -> DbResult<bool>,
    ) -> DbResult<Vec<(Vec<Value>, Vec<Value>)>> {
        // Which keys each set groups by (a plain GROUP BY: one set of all of them).
        let all_keys = [(0..plan.groups.len()).collect::<Vec<_>>()];
        let sets: &[Vec<usize>] = plan.grouping_sets.as_deref().unwrap_or(&all_keys);
        let in_set: Vec<Vec<bool>> =
            sets.iter().map(|set| (0..plan.groups.len()).map(|key| set.contains(&key)).collect()).collect();
        let several_sets = plan.grouping_sets.is_some();
        // Keyed by the set's position, then its key (the keys outside the set NULL), so
        // that two sets' groups with equal keys stay apart. The key of each row is built
        // in one buffer and looked up by slice: a new key is copied into the table once,
        // when its group starts, not once per row.
        let mut by_group: GroupTable<Vec<Accumulator>> = GroupTable::new(plan.group_keys_hashed);
        let new_accumulators = || plan.aggs.iter().map(Accumulator::new).collect::<Vec<_>>();
        let mut key: Vec<Value> = Vec::with_capacity(plan.groups.len() + 1);
        // The row's key values, shared by its sets (several sets only).
        let mut values: Vec<Value> = Vec::with_capacity(plan.groups.len());
        self.visit_input(plan, &mut |row| {
            counts.read += 1;
            if matches(row)? {
                counts.matched += 1;
                let feed = |accumulators: &mut Vec<Accumulator>| -> DbResult<()> {
                    for (acc, call) in accumulators.iter_mut().zip(&plan.aggs) {
                        acc.feed(call, row)?;
                    }
                    Ok(())
                };
                if several_sets {
                    values.clear();
                    for g in &plan.groups {
                        values.push(g.eval(row, &[])?);
                    }
                }
                for (set, keys_in) in in_set.iter().enumerate() {
                    if several_sets {
                        key.clear();
                        key.push(Value::Int(set as i64));
                        key.extend(values.iter().zip(keys_in).map(|(v, &kept)| {
                            if kept {
                                v.clone()
                            } else {
                                Value::Null
                            }
                        }));
                    } else {
                        // One set: the key is filled in place, a column's value copied
                        // into the previous row's (its text's memory kept: no
                        // allocation per row).
                        key.resize(1 + plan.groups.len(), Value::Null);
                        key[0] = Value::Int(0);
                        for (slot, g) in key[1..].iter_mut().zip(&plan.groups) {
                            match g {
                                Expr::Column(c) => slot.clone_from(&row[*c]),
                                other => *slot = other.eval(row, &[])?,
                            }
                        }
                    }
                    feed(by_group.entry(&key, new_accumulators))?;
                }
                // min/max read in their column's order: the first row kept is the answer.
                if plan.ordered.is_some_and(|o| o.first_only) {
                    return Ok(false);
                }
            }
            Ok(true)
        })?;
        // A set of no keys has its one group even over no rows, as an aggregate without
        // GROUP BY has.
        for (set, keys) in sets.iter().enumerate() {
            if keys.is_empty() {
                let mut no_keys = vec![Value::Int(set as i64)];
                no_keys.extend(std::iter::repeat_n(Value::Null, plan.groups.len()));
                by_group.entry(&no_keys, new_accumulators);
            }
        }
        counts.groups = by_group.len() as u64;
        let mut out = Vec::new();
        for (mut key, accumulators) in by_group.into_sorted() {
            let Value::Int(set) = key.remove(0) else { unreachable!("a group's key starts with its set") };
            let set = set as usize;
            key.extend(plan.groupings.iter().map(|args| grouping_mask(args, &in_set[set])));
            let values: Vec<Value> = accumulators
                .iter()
                .zip(&plan.aggs)
                .map(|(a, c)| a.finish(c, &key))
                .collect::<DbResult<_>>()?;
            if let Some(h) = &plan.having {
                if !h.holds(&key, &values)? {
                    continue;
                }
            }
            out.push((key, values));
        }
        counts.grouped_out = out.len() as u64;
        Ok(out)
    }

    /// Hands each input row of the plan's FROM clause to `visit` until it returns false:
    /// one empty row without a FROM clause, the table's rows by the access path its WHERE
    /// chooses, or the joined rows of several relations.
    fn visit_input(
        &self,
        plan: &SelectPlan,
        visit: &mut dyn FnMut(&[Value]) -> DbResult<bool>,
    ) -> DbResult<()> {
        if let Some(joins) = &plan.joins {
            return self.visit_joins(joins, &|f, row| f.holds(row, &[]), visit);
        }
        match &plan.relation {
            None => {
                visit(&[])?;
            }
            Some(rel) => match plan.ordered {
                Some(o) => {
                    self.visit_ordered(&rel.name, o.index, o.backward, o.nulls, &mut |row| visit(row))?
                }
                None => {
                    let access = plan_access(&rel.schema, plan.filter.as_ref());
                    log::trace!("SELECT from {}: {}", rel.name, access.describe());
                    self.visit_rows(&rel.name, &access, &mut |row| visit(row))?;
                }
            },
        }
        Ok(())
    }
}

/// The groups of a grouped query as its rows are fed, each with its state `A`, handed out
/// at the end in key order (the order the groups come out in without an ORDER BY). Keys
/// of types `group_hash` hashes exactly are found by their hash and compared with the
/// keys of that hash only; others through a B-tree. A B-tree lookup compared each row's
/// key with several keys, a text comparison out of line each time: a third of a GROUP BY
/// text's cost per row (join_bench, 1,000,000 joined rows into 10 regions).
struct GroupTable<A> {
    /// The groups in the order they started.
    groups: Vec<(Vec<Value>, A)>,
    index: GroupIndex,
}

enum GroupIndex {
    /// Per key hash, the groups with it.
    Hashed(rustc_hash::FxHashMap<u64, smallvec::SmallVec<[usize; 1]>>),
    Ordered(BTreeMap<Vec<Value>, usize>),
}

impl<A> GroupTable<A> {
    /// `hashed`: every key is of a type `group_hash` hashes exactly.
    fn new(hashed: bool) -> GroupTable<A> {
        GroupTable {
            groups: Vec::new(),
            index: if hashed {
                GroupIndex::Hashed(Default::default())
            } else {
                GroupIndex::Ordered(BTreeMap::new())
            },
        }
    }

    /// The state of the group of `key`, started with `start` if it is new.
    fn entry(&mut self, key: &[Value], start: impl FnOnce() -> A) -> &mut A {
        let groups = &mut self.groups;
        let found = match &mut self.index {
            GroupIndex::Hashed(by_hash) => {
                let same_hash = by_hash.entry(group_hash(key)).or_default();
                match same_hash.iter().copied().find(|&g| groups[g].0.as_slice() == key) {
                    Some(g) => g,
                    None => {
                        same_hash.push(groups.len());
                        groups.push((key.to_vec(), start()));
                        groups.len() - 1
                    }
                }
            }
            GroupIndex::Ordered(by_key) => match by_key.get(key) {
                Some(&g) => g,
                None => {
                    by_key.insert(key.to_vec(), groups.len());
                    groups.push((key.to_vec(), start()));
                    groups.len() - 1
                }
            },
        };
        &mut groups[found].1
    }

    fn len(&self) -> usize {
        self.groups.len()
    }

    /// The groups in key order.
    fn into_sorted(self) -> Vec<(Vec<Value>, A)> {
        let mut groups = self.groups;
        groups.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        groups
    }
}

/// Whether `group_hash` hashes values of type `ty` exactly: equal (as `Value` orders
/// them) only when identical in what it hashes.
fn hashed_exactly(ty: Option<DataType>) -> bool {
    matches!(
        ty,
        Some(
            DataType::Int
                | DataType::Float
                | DataType::Float4
                | DataType::Text { .. }
                | DataType::Char { .. }
                | DataType::Bool
                | DataType::Date
                | DataType::Time
                | DataType::Timestamp
                | DataType::TimestampTz
                | DataType::Interval
                | DataType::Bytea
                | DataType::Uuid
        )
    )
}

/// A hash of a group key consistent with `Value`'s order: keys it calls equal hash
/// equal. Values of different variants are never equal there but for a timestamp with
/// and without time zone at the same instant (hashed alike); floats are equal only when
/// their bits are (`total_cmp`), intervals when their comparable forms are. A NUMERIC,
/// array or record hashes as its kind only (1.0 and 1.00 are equal): `hashed_exactly`
/// keeps such keys out of the hashed index, NULLs hash alike.
fn group_hash(key: &[Value]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    for v in key {
        match v {
            Value::Int(i) => (1u8, i).hash(&mut h),
            Value::Float(f) => (2u8, f.to_bits()).hash(&mut h),
            Value::Float4(f) => (16u8, f.to_bits()).hash(&mut h),
            Value::Text(t) => (3u8, t).hash(&mut h),
            Value::Bool(b) => (4u8, b).hash(&mut h),
            Value::Date(d) => (5u8, d).hash(&mut h),
            Value::Timestamp(t) | Value::TimestampTz(t) => (6u8, t).hash(&mut h),
            Value::Time(t) => (7u8, t).hash(&mut h),
            Value::Interval(iv) => (8u8, iv.comparable()).hash(&mut h),
            Value::Bytea(b) => (9u8, b).hash(&mut h),
            Value::Uuid(u) => (10u8, u).hash(&mut h),
            _ => 0u8.hash(&mut h),
        }
    }
    h.finish()
}

/// PostgreSQL's limit on CUBE's elements (its 2^n sets).
const MAX_CUBE_ELEMENTS: usize = 12;
/// PostgreSQL's limit on the grouping sets of a query, after multiplying out.
const MAX_GROUPING_SETS: usize = 4096;

/// The two shorthands for lists of grouping sets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SetsOf {
    Rollup,
    Cube,
}

impl SetsOf {
    /// The shorthand a call in a grouping set is: the parser reads a ROLLUP or CUBE
    /// nested in GROUPING SETS as a function call.
    fn named(f: &ast::Function) -> Option<SetsOf> {
        match f.name.to_string().to_lowercase().as_str() {
            "rollup" => Some(SetsOf::Rollup),
            "cube" => Some(SetsOf::Cube),
            _ => None,
        }
    }

    /// The sets the shorthand of these elements (each a list of key positions) stands for.
    fn sets(self, elements: &[Vec<usize>]) -> DbResult<Vec<Vec<usize>>> {
        match self {
            SetsOf::Rollup => Ok(rollup_sets(elements)),
            SetsOf::Cube if elements.len() > MAX_CUBE_ELEMENTS => {
                Err(DbError::TooManyColumns(format!("CUBE is limited to {MAX_CUBE_ELEMENTS} elements")))
            }
            SetsOf::Cube => Ok(cube_sets(elements)),
        }
    }
}

/// The elements of a ROLLUP or CUBE read as a function call (`GROUPING SETS (a,
/// ROLLUP (b, (c, d)))`): each argument, a parenthesized list of several as one element.
fn nested_sets(f: &ast::Function) -> DbResult<(SetsOf, Vec<Vec<ast::Expr>>)> {
    let kind = SetsOf::named(f).expect("called on a ROLLUP or CUBE");
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(syntax(format!("syntax error at or near \"{}\"", f.name)));
    };
    let elements = list
        .args
        .iter()
        .map(|arg| match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Tuple(items))) => {
                Ok(items.clone())
            }
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(vec![e.clone()]),
            other => Err(syntax(format!("syntax error at or near \"{other}\""))),
        })
        .collect::<DbResult<Vec<_>>>()?;
    Ok((kind, elements))
}

/// `ROLLUP (e1, ..., en)`: the sets (e1..en), (e1..en-1), ..., (e1), ().
fn rollup_sets(elements: &[Vec<usize>]) -> Vec<Vec<usize>> {
    (0..=elements.len()).rev().map(|n| elements[..n].concat()).collect()
}

/// `CUBE (e1, ..., en)`: every subset of the elements, in their order within each set
/// (the first, all of them; the last, none).
fn cube_sets(elements: &[Vec<usize>]) -> Vec<Vec<usize>> {
    assert!(elements.len() <= MAX_CUBE_ELEMENTS, "CUBE of {} elements", elements.len());
    let all = (1usize << elements.len()) - 1;
    (0..=all)
        .rev()
        .map(|mask| {
            let chosen =
                elements.iter().enumerate().filter(|(i, _)| mask & (1 << (elements.len() - 1 - i)) != 0);
            chosen.flat_map(|(_, keys)| keys.iter().copied()).collect()
        })
        .collect()
}

/// The grouping sets of a GROUP BY whose items give `item_sets` (a plain key, the one
/// set of itself): every combination of one set of each item, concatenated.
fn multiply_sets(item_sets: &[Vec<Vec<usize>>]) -> DbResult<Vec<Vec<usize>>> {
    let mut product: Vec<Vec<usize>> = vec![Vec::new()];
    for sets in item_sets {
        if product.len().saturating_mul(sets.len()) > MAX_GROUPING_SETS {
            return Err(DbError::StatementTooComplex(format!(
                "too many grouping sets present (maximum {MAX_GROUPING_SETS})"
            )));
        }
        product = product
            .iter()
            .flat_map(|left| sets.iter().map(move |right| [left.as_slice(), right].concat()))
            .collect();
    }
    Ok(product)
}

/// The value of a GROUPING() call whose arguments are the keys `args` in the rows of a
/// grouping set: a bit per argument, the first the highest, 1 where the set leaves the
/// key out.
fn grouping_mask(args: &[usize], in_set: &[bool]) -> Value {
    Value::Int(args.iter().fold(0, |mask, &key| (mask << 1) | i64::from(!in_set[key])))
}

/// `e` with each GROUPING() call `Expr::Grouping(i)` as the group row's column that holds
/// its value (after the `base` key columns).
fn groupings_as_columns(e: Expr, base: usize) -> DbResult<Expr> {
    match e {
        Expr::Grouping(i) => Ok(Expr::Column(base + i)),
        other => other.map_children(&mut |c| groupings_as_columns(c, base)),
    }
}

/// `e` with each window call `Expr::Window(i)` as the row column its values are put in.
fn windows_as_columns(e: Expr, base: usize) -> DbResult<Expr> {
    match e {
        Expr::Window(i) => Ok(Expr::Column(base + i)),
        other => other.map_children(&mut |c| windows_as_columns(c, base)),
    }
}

/// Evaluates an expression on a row and aggregate values (resolving what subqueries are
/// left in it).
type EvalFn<'a> = dyn Fn(&Expr, &[Value], &[Value]) -> DbResult<Value> + 'a;

/// The select list and the ORDER BY keys of one row (a group's key and aggregate values,
/// in a grouped query).
fn project(
    plan: &SelectPlan,
    row: &[Value],
    agg_values: &[Value],
    eval: &EvalFn,
) -> DbResult<(Vec<Value>, Vec<Value>)> {
    let out = plan.items.iter().map(|e| eval(e, row, agg_values)).collect::<DbResult<Vec<_>>>()?;
    let keys = plan
        .sorts
        .iter()
        .map(|s| match &s.key {
            SortKey::Output(i) => Ok(out[*i].clone()),
            SortKey::Expr(e) => eval(e, row, agg_values),
        })
        .collect::<DbResult<Vec<_>>>()?;
    Ok((out, keys))
}

/// How two rows' ORDER BY keys (as `project` gives them) sort.
fn sort_order(plan: &SelectPlan, a: &[Value], b: &[Value]) -> std::cmp::Ordering {
    for (s, (x, y)) in plan.sorts.iter().zip(a.iter().zip(b)) {
        let o = order_values(x, y, s.desc, s.nulls_first);
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    std::cmp::Ordering::Equal
}

/// DISTINCT, ORDER BY, OFFSET and LIMIT on the projected rows.
fn finish(
    plan: &SelectPlan,
    mut results: Vec<(Vec<Value>, Vec<Value>)>,
    counts: &mut SelectCounts,
) -> Vec<Vec<Value>> {
    if plan.distinct {
        let mut seen = BTreeSet::new();
        results.retain(|(out, _)| seen.insert(out.clone()));
        counts.distinct = results.len() as u64;
    }
    if plan.needs_sort {
        results.sort_by(|(_, a), (_, b)| sort_order(plan, a, b));
    }
    counts.sorted = results.len() as u64;
    if let Some(keys) = plan.distinct_on {
        // NULLs are not distinct from each other here, as in DISTINCT.
        results.dedup_by(|(_, later), (_, first)| {
            later[..keys].iter().zip(&first[..keys]).all(|(x, y)| order_values(x, y, false, false).is_eq())
        });
        counts.distinct = results.len() as u64;
    }
    let rows: Vec<Vec<Value>> = results
        .into_iter()
        .skip(plan.offset)
        .take(plan.limit.unwrap_or(usize::MAX))
        .map(|(out, _)| out)
        .collect();
    counts.returned = rows.len() as u64;
    rows
}

/// ORDER BY of a set operation or VALUES: output columns, by position or name.
fn output_sorts(
    order_by: Option<&ast::OrderBy>,
    columns: &[ResultColumn],
) -> DbResult<Vec<(usize, bool, bool)>> {
    let Some(order_by) = order_by else { return Ok(Vec::new()) };
    let ast::OrderByKind::Expressions(exprs) = &order_by.kind else {
        return Err(DbError::Unsupported("ORDER BY ALL".into()));
    };
    let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    exprs
        .iter()
        .map(|o| {
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            let i = match output_reference(&o.expr, &names, &Scope::default())? {
                Some(i) => i,
                None => {
                    return Err(DbError::Unsupported(format!(
                        "ORDER BY {} on a UNION, INTERSECT, EXCEPT or VALUES (only result column names or positions)",
                        o.expr
                    )))
                }
            };
            Ok((i, desc, o.options.nulls_first.unwrap_or(desc)))
        })
        .collect()
}

/// The result columns of `plan` under the name and column list a FROM clause or a
/// WITH query gives it.
pub(crate) fn renamed_columns(
    plan: &QueryPlan,
    name: &str,
    alias: Option<&ast::TableAlias>,
) -> DbResult<Vec<ResultColumn>> {
    let relation = crate::sql::join::derived_relation(name.to_string(), alias, Arc::new(plan.clone()))?;
    Ok(rename_columns(plan, &relation).columns().to_vec())
}

/// `plan` with its result columns named as `relation`'s (a WITH query's column list).
fn rename_columns(plan: &QueryPlan, relation: &Relation) -> QueryPlan {
    let mut plan = plan.clone();
    let columns = match &mut plan {
        QueryPlan::Select(p) => &mut p.columns,
        QueryPlan::SetOp(p) => &mut p.columns,
        QueryPlan::Values(p) => &mut p.columns,
        QueryPlan::Recursive(p) => &mut p.columns,
        QueryPlan::WorkTable(p) => &mut p.columns,
    };
    for (c, named) in columns.iter_mut().zip(relation.schema.visible_columns()) {
        c.name = named.name.clone();
    }
    plan
}

impl std::fmt::Debug for QueryPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(query plan)")
    }
}

/// Column types not known statically: the type of the first non-null value.
pub(crate) fn fill_types(columns: &mut [ResultColumn], rows: &[Vec<Value>]) {
    for (i, c) in columns.iter_mut().enumerate() {
        if c.ty.is_none() {
            c.ty = rows.iter().find_map(|r| r.get(i).and_then(Value::data_type));
        }
    }
}

/// `VALUES (...), (...)`: columns `column1`, `column2`, ... (`session`: whose session
/// functions the values may call).
pub(crate) fn values_output(values: &ast::Values, params: &[Value], session: &Session) -> DbResult<Output> {
    let mut binder = Binder::new(None, params).in_session(session);
    let mut rows = Vec::with_capacity(values.rows.len());
    for row in &values.rows {
        let row = row
            .content
            .iter()
            .map(|e| binder.scalar(e, "VALUES")?.eval(&[], &[]))
            .collect::<DbResult<Vec<_>>>()?;
        if let Some(first) = rows.first() {
            if Vec::len(first) != row.len() {
                return Err(syntax("VALUES lists must all be the same length".into()));
            }
        }
        rows.push(row);
    }
    let width = rows.first().map_or(0, Vec::len);
    let mut columns: Vec<ResultColumn> =
        (1..=width).map(|i| ResultColumn { name: format!("column{i}"), ty: None }).collect();
    fill_types(&mut columns, &rows);
    Ok(Output { columns, rows })
}

/// LIMIT and OFFSET, which must be constants (parameters allowed).
fn limits(query: &ast::Query, params: &[Value]) -> DbResult<(Option<usize>, usize)> {
    let mut binder = Binder::new(None, params);
    let mut count = |e: &ast::Expr, what: &'static str| -> DbResult<Option<usize>> {
        match binder.scalar(e, what)? {
            Expr::Literal(Value::Null) => Ok(None),
            Expr::Literal(v) => match to_num(&v) {
                Ok(Num::I(n)) if n >= 0 => Ok(Some(n as usize)),
                _ => Err(DbError::InvalidRowCount(format!("{what} must not be negative, not {v}"))),
            },
            _ => Err(syntax(format!("{what} must be a constant"))),
        }
    };
    // The standard's `FETCH FIRST [n] ROW[S] ONLY`: LIMIT n (one row when n is left out).
    let fetch = match &query.fetch {
        None => None,
        Some(ast::Fetch { with_ties: true, .. }) => {
            return Err(DbError::Unsupported("FETCH ... WITH TIES".into()))
        }
        Some(ast::Fetch { percent: true, .. }) => {
            return Err(DbError::Unsupported("FETCH ... PERCENT".into()))
        }
        Some(ast::Fetch { quantity: None, .. }) => Some(Some(1)),
        Some(ast::Fetch { quantity: Some(n), .. }) => Some(count(n, "FETCH FIRST")?),
    };
    match &query.limit_clause {
        None => Ok((fetch.flatten(), 0)),
        Some(ast::LimitClause::LimitOffset { limit, offset, limit_by }) => {
            if !limit_by.is_empty() {
                return Err(DbError::Unsupported("LIMIT BY".into()));
            }
            if limit.is_some() && fetch.is_some() {
                return Err(syntax("multiple LIMIT clauses not allowed".into()));
            }
            let limit = match fetch {
                Some(fetch) => fetch,
                None => limit.as_ref().map(|e| count(e, "LIMIT")).transpose()?.flatten(),
            };
            let offset = offset.as_ref().map(|o| count(&o.value, "OFFSET")).transpose()?.flatten();
            Ok((limit, offset.unwrap_or(0)))
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
            Ok((count(limit, "LIMIT")?, count(offset, "OFFSET")?.unwrap_or(0)))
        }
    }
}

/// A GROUP BY or ORDER BY item that refers to an output column: by position (`1`), or by
/// a name that is an output column's (for ORDER BY) and not an input column (GROUP BY
/// prefers input columns, ORDER BY output ones; both checked the PostgreSQL way for
/// plain names).
fn output_reference(e: &ast::Expr, names: &[String], scope: &Scope) -> DbResult<Option<usize>> {
    match e {
        ast::Expr::Value(ast::ValueWithSpan { value: ast::Value::Number(n, _), .. }) => {
            match n.parse::<usize>() {
                Ok(i) if i >= 1 && i <= names.len() => Ok(Some(i - 1)),
                _ => Err(syntax(format!("position {n} is not in select list"))),
            }
        }
        ast::Expr::Identifier(ident) => {
            let name = ident_name(ident);
            let Some(i) = names.iter().position(|n| *n == name) else { return Ok(None) };
            let is_input = matches!(scope.resolve(None, &name), Ok(Some(_)) | Err(_));
            // An output name that is also an input column: the input column (the same
            // thing unless the name was given to another expression as an alias).
            Ok(if is_input { None } else { Some(i) })
        }
        _ => Ok(None),
    }
}

/// The name PostgreSQL gives a select-list item without an alias.
pub(crate) fn column_name(e: &ast::Expr) -> String {
    figure_name(e).unwrap_or_else(|| "?column?".into())
}

fn figure_name(e: &ast::Expr) -> Option<String> {
    use ast::Expr as E;
    match e {
        E::Identifier(ident) => Some(ident_name(ident)),
        E::CompoundIdentifier(parts) => parts.last().map(ident_name),
        E::Function(f) => f.name.0.last().and_then(|p| p.as_ident()).map(ident_name),
        E::Nested(inner) => figure_name(inner),
        E::Cast { expr, data_type, .. } => figure_name(expr).or_else(|| pg_type_name(data_type)),
        E::Case { .. } => Some("case".into()),
        // `(a, b)` is PostgreSQL's ROW(a, b).
        E::Tuple(_) => Some("row".into()),
        // `(t).a` and `t.c[1]`: the last field's name.
        E::CompoundFieldAccess { root, access_chain } => match access_chain.last() {
            Some(ast::AccessExpr::Dot(field)) => figure_name(field),
            Some(ast::AccessExpr::Subscript(_)) => match access_chain.len() {
                1 => figure_name(root),
                n => match &access_chain[n - 2] {
                    ast::AccessExpr::Dot(field) => figure_name(field),
                    ast::AccessExpr::Subscript(_) => None,
                },
            },
            None => figure_name(root),
        },
        E::Ceil { .. } => Some("ceil".into()),
        E::Floor { .. } => Some("floor".into()),
        E::Substring { .. } => Some("substring".into()),
        E::Value(ast::ValueWithSpan { value: ast::Value::Boolean(_), .. }) => Some("bool".into()),
        _ => None,
    }
}

fn pg_type_name(ty: &ast::DataType) -> Option<String> {
    use ast::DataType as T;
    Some(
        match ty {
            T::Int(_) | T::Integer(_) | T::Int4(_) => "int4",
            T::BigInt(_) | T::Int8(_) => "int8",
            T::SmallInt(_) | T::Int2(_) => "int2",
            T::Float(ast::ExactNumberInfo::Precision(p)) if *p <= 24 => "float4",
            T::DoublePrecision | T::Float8 | T::Double(_) | T::Float(_) => "float8",
            T::Real | T::Float4 => "float4",
            T::Numeric(_) | T::Decimal(_) | T::Dec(_) => "numeric",
            T::Text => "text",
            T::Varchar(_) | T::CharacterVarying(_) | T::CharVarying(_) => "varchar",
            T::Char(_) | T::Character(_) => "bpchar",
            T::Bool | T::Boolean => "bool",
            _ => return None,
        }
        .to_string(),
    )
}

/// The type of an aggregate's result: sum of INTs an INT, of NUMERICs a NUMERIC, of REALs
/// a REAL, of anything else a FLOAT; avg, stddev and variance of INTs or NUMERICs a NUMERIC, of
/// anything else a FLOAT (PostgreSQL's, whose avg of integers is a NUMERIC).
pub(crate) fn aggregate_type(call: &AggCall, input: &[Option<DataType>]) -> Option<DataType> {
    let arg = || call.arg.as_ref().and_then(|a| a.static_type(input, &[]));
    match call.func {
        AggFunc::CountStar | AggFunc::Count => Some(DataType::Int),
        // PostgreSQL's: the average and spread of integers or numerics are numerics.
        AggFunc::Avg | AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop => {
            match arg() {
                Some(DataType::Numeric(_) | DataType::Int) => Some(DataType::Numeric(None)),
                None => None,
                _ => Some(DataType::Float),
            }
        }
        AggFunc::Sum => match arg() {
            Some(DataType::Int) => Some(DataType::Int),
            Some(DataType::Float4) => Some(DataType::Float4),
            Some(DataType::Numeric(_)) => Some(DataType::Numeric(None)),
            _ => Some(DataType::Float),
        },
        AggFunc::Min | AggFunc::Max => arg(),
        AggFunc::ArrayAgg => Some(DataType::Array(arg().and_then(ElemType::of).unwrap_or(ElemType::Text))),
        AggFunc::StringAgg => Some(DataType::Text { max_chars: None }),
        AggFunc::BoolAnd | AggFunc::BoolOr => Some(DataType::Bool),
        AggFunc::JsonAgg | AggFunc::JsonObjectAgg => Some(DataType::Json),
        AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg => Some(DataType::Jsonb),
        AggFunc::OrderedSet(func) => {
            let of = |fractions: Fractions, ty: Option<DataType>| match fractions {
                Fractions::One => ty,
                Fractions::Many => ty.and_then(ElemType::of).map(DataType::Array),
            };
            match func {
                OrderedSetFunc::PercentileCont(fractions) => of(
                    fractions,
                    Some(match arg() {
                        Some(DataType::Interval) => DataType::Interval,
                        _ => DataType::Float,
                    }),
                ),
                OrderedSetFunc::PercentileDisc(fractions) => of(fractions, arg()),
                OrderedSetFunc::Mode => arg(),
                OrderedSetFunc::Rank | OrderedSetFunc::DenseRank => Some(DataType::Int),
                OrderedSetFunc::PercentRank | OrderedSetFunc::CumeDist => Some(DataType::Float),
            }
        }
    }
}

/// The error for an aggregate given an argument of a type it has no version for
/// (PostgreSQL's 42883, which it raises before running; here where the type is known
/// before running, else at the first such value).
pub(crate) fn check_aggregate_arguments(call: &AggCall, input: &[Option<DataType>]) -> DbResult<()> {
    let ty = |e: &Option<Expr>| e.as_ref().and_then(|a| a.static_type(input, &[]));
    let (arg, mut separator) = (ty(&call.arg), ty(&call.second_arg));
    // `name` and `"char"` (catalog columns) cast to text implicitly, as PostgreSQL's.
    let textual = |t: &Option<DataType>| {
        matches!(
            t,
            None | Some(
                DataType::Text { .. }
                    | DataType::Char { .. }
                    | DataType::Catalog(crate::value::CatalogType::Name | crate::value::CatalogType::Char)
            )
        )
    };
    let fits = match call.func {
        AggFunc::StringAgg => textual(&arg) && textual(&separator),
        AggFunc::BoolAnd | AggFunc::BoolOr => matches!(arg, None | Some(DataType::Bool)),
        f if f.is_spread() => {
            matches!(
                arg,
                None | Some(DataType::Int | DataType::Float | DataType::Float4 | DataType::Numeric(_))
            )
        }
        _ => true,
    };
    if fits {
        return Ok(());
    }
    // A string literal has no type of its own yet where PostgreSQL resolves the call.
    if let Some(Expr::Literal(Value::Text(_))) = call.second_arg {
        separator = None;
    }
    Err(no_such_aggregate(call, arg, separator))
}

fn no_such_aggregate(call: &AggCall, arg: Option<DataType>, separator: Option<DataType>) -> DbError {
    let name = |t: Option<DataType>| t.map_or_else(|| "unknown".to_string(), crate::sql::arrays::pg_name);
    let func = call.name;
    let args = match call.second_arg {
        Some(_) => format!("{}, {}", name(arg), name(separator)),
        None => name(arg),
    };
    DbError::UndefinedFunction(format!("{func}({args})"))
}

/// The running second moment of stddev's and variance's inputs: exact sums for
/// integers and numerics (PostgreSQL's numeric state), Youngs-Cramer's running sum of
/// squared deviations for floats (PostgreSQL's `float8_accum`, so that the results are
/// the same to the last bit).
enum Moments {
    Exact { sum: BigDecimal, sum_squares: BigDecimal },
    Float { sum: f64, deviations: f64 },
}

/// The running state of one aggregate call for one group.
pub(crate) struct Accumulator {
    count: i64,
    sum: Option<Num>,
    /// sum's total of REALs, added in single precision as PostgreSQL's `float4pl` adds
    /// them (avg of REALs adds them as doubles, in `sum`).
    float4_sum: Option<f32>,
    best: Option<Value>,
    /// bool_and's or bool_or's value so far.
    truth: Option<bool>,
    moments: Option<Moments>,
    /// The argument sets seen, with DISTINCT (the second is string_agg's separator or
    /// json_object_agg's value; NULL else).
    seen: Option<BTreeSet<(Value, Value)>>,
    /// The inputs of the aggregates that keep them, each with its ORDER BY keys: the
    /// value and string_agg's separator (NULL for array_agg and json_agg), or
    /// json_object_agg's key and value.
    collected: Vec<(Vec<Value>, Value, Value)>,
}

impl Accumulator {
    pub(crate) fn new(call: &AggCall) -> Accumulator {
        Accumulator {
            count: 0,
            sum: None,
            float4_sum: None,
            best: None,
            truth: None,
            moments: None,
            seen: call.distinct.then(BTreeSet::new),
            collected: Vec::new(),
        }
    }

    pub(crate) fn feed(&mut self, call: &AggCall, row: &[Value]) -> DbResult<()> {
        if let Some(filter) = &call.filter {
            if !matches!(filter.eval(row, &[])?, Value::Bool(true)) {
                return Ok(());
            }
        }
        if let AggFunc::OrderedSet(func) = call.func {
            let keys = call.order.iter().map(|o| o.expr.eval(row, &[])).collect::<DbResult<Vec<_>>>()?;
            // The percentiles and mode skip NULLs; a hypothetical row is placed among
            // every row.
            if !func.is_hypothetical() && keys[0].is_null() {
                return Ok(());
            }
            self.collected.push((keys, Value::Null, Value::Null));
            return Ok(());
        }
        let Some(arg) = &call.arg else {
            self.count += 1;
            return Ok(());
        };
        let v = arg.eval(row, &[])?;
        match call.func {
            AggFunc::ArrayAgg | AggFunc::JsonAgg | AggFunc::JsonbAgg => {
                return self.collect(call, row, v, Value::Null)
            }
            // The key kept as the value, the value where string_agg keeps its
            // separator: DISTINCT then sorts by key first, as PostgreSQL's.
            AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg => {
                json_ops::check_object_key(&v)?;
                let value = match &call.second_arg {
                    Some(e) => e.eval(row, &[])?,
                    None => Value::Null,
                };
                return self.collect(call, row, v, value);
            }
            AggFunc::StringAgg => {
                let separator = match &call.second_arg {
                    Some(e) => e.eval(row, &[])?,
                    None => Value::Null,
                };
                let textual = |v: &Value| matches!(v, Value::Null | Value::Text(_));
                if !textual(&v) || !textual(&separator) {
                    return Err(no_such_aggregate(call, v.data_type(), separator.data_type()));
                }
                // NULL values are skipped, their separators with them.
                if v.is_null() {
                    return Ok(());
                }
                return self.collect(call, row, v, separator);
            }
            _ => {}
        }
        if v.is_null() {
            return Ok(());
        }
        if let Some(seen) = &mut self.seen {
            if !seen.insert((v.clone(), Value::Null)) {
                return Ok(());
            }
        }
        self.count += 1;
        match call.func {
            AggFunc::Sum if self.sum.is_none() && matches!(v, Value::Float4(_)) => {
                let Value::Float4(x) = v else { unreachable!("matched a float4") };
                self.float4_sum = Some(match self.float4_sum {
                    None => x,
                    Some(sum) => crate::float4::arithmetic(BinOp::Add, sum, x)?,
                });
            }
            AggFunc::Sum | AggFunc::Avg => {
                let n = to_num(&v)?;
                self.sum = Some(match self.sum.take() {
                    None => n,
                    // An integer sum beyond bigint's range goes on exactly.
                    Some(Num::I(a)) if matches!(n, Num::I(b) if a.checked_add(b).is_none()) => {
                        arithmetic(BinOp::Add, Num::N(numeric::from_i64(a)), n)?
                    }
                    Some(sum) => arithmetic(BinOp::Add, sum, n)?,
                });
            }
            AggFunc::Min | AggFunc::Max => {
                let better = match &self.best {
                    None => true,
                    Some(best) => {
                        let o = compare(&v, best)?;
                        if call.func == AggFunc::Min {
                            o == Some(std::cmp::Ordering::Less)
                        } else {
                            o == Some(std::cmp::Ordering::Greater)
                        }
                    }
                };
                if better {
                    self.best = Some(v);
                }
            }
            AggFunc::BoolAnd | AggFunc::BoolOr => {
                let Value::Bool(b) = v else {
                    return Err(no_such_aggregate(call, v.data_type(), None));
                };
                self.truth = Some(match (self.truth, call.func) {
                    (None, _) => b,
                    (Some(t), AggFunc::BoolAnd) => t && b,
                    (Some(t), _) => t || b,
                });
            }
            AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop => {
                let x = match to_num(&v) {
                    Ok(x) => x,
                    Err(_) => return Err(no_such_aggregate(call, v.data_type(), None)),
                };
                self.moments = Some(match (self.moments.take(), x) {
                    (None, Num::F(x)) => {
                        // PostgreSQL's: a first input that is not finite makes the result NaN.
                        Moments::Float { sum: x, deviations: if x.is_finite() { 0.0 } else { f64::NAN } }
                    }
                    (None, x) => {
                        let x = exact(x)?;
                        Moments::Exact { sum_squares: &x * &x, sum: x }
                    }
                    (Some(Moments::Float { sum, deviations }), x) => {
                        let (x, n_before, n) = (x.as_f64(), (self.count - 1) as f64, self.count as f64);
                        let sum = sum + x;
                        let deviation = x * n - sum;
                        Moments::Float {
                            sum,
                            deviations: deviations + deviation * deviation / (n * n_before),
                        }
                    }
                    (Some(Moments::Exact { sum, sum_squares }), x) => {
                        let x = exact(x)?;
                        Moments::Exact { sum_squares: sum_squares + &x * &x, sum: sum + x }
                    }
                });
            }
            AggFunc::Count
            | AggFunc::CountStar
            | AggFunc::ArrayAgg
            | AggFunc::StringAgg
            | AggFunc::JsonAgg
            | AggFunc::JsonbAgg
            | AggFunc::JsonObjectAgg
            | AggFunc::JsonbObjectAgg
            | AggFunc::OrderedSet(_) => {}
        }
        Ok(())
    }

    /// The step of the aggregates that keep their inputs: array_agg and json_agg keep
    /// every value, NULL too, string_agg every non-NULL one, json_object_agg every
    /// pair (once each set of arguments with DISTINCT).
    fn collect(&mut self, call: &AggCall, row: &[Value], v: Value, separator: Value) -> DbResult<()> {
        if let (AggFunc::ArrayAgg, Value::Array(_)) = (call.func, &v) {
            return Err(DbError::Unsupported("array_agg of arrays (multidimensional arrays)".into()));
        }
        if let Some(seen) = &mut self.seen {
            if !seen.insert((v.clone(), separator.clone())) {
                return Ok(());
            }
        }
        if self.collected.len() >= crate::array::MAX_ELEMENTS {
            return Err(crate::array::too_many());
        }
        let keys = call.order.iter().map(|o| o.expr.eval(row, &[])).collect::<DbResult<Vec<_>>>()?;
        self.collected.push((keys, v, separator));
        Ok(())
    }

    /// The positions of the collected values in their ORDER BY's order (else as they
    /// came; sorted with DISTINCT, as PostgreSQL's sort-based DISTINCT gives them).
    fn collected_order(&self, call: &AggCall) -> DbResult<Vec<usize>> {
        let mut order: Vec<usize> = (0..self.collected.len()).collect();
        if call.distinct && call.order.is_empty() {
            // NULL last, as PostgreSQL's sort.
            order.sort_by(|&a, &b| {
                let (x, y) = (&self.collected[a], &self.collected[b]);
                let key = |v: &Value| v.is_null();
                key(&x.1)
                    .cmp(&key(&y.1))
                    .then_with(|| x.1.cmp(&y.1))
                    .then_with(|| key(&x.2).cmp(&key(&y.2)).then_with(|| x.2.cmp(&y.2)))
            });
        }
        if !call.order.is_empty() {
            let mut failure = None;
            // A stable sort: rows equal on every key keep their input order.
            order.sort_by(|&a, &b| {
                for (i, key) in call.order.iter().enumerate() {
                    let (x, y) = (&self.collected[a].0[i], &self.collected[b].0[i]);
                    let o = match (x.is_null(), y.is_null()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) if key.nulls_first => std::cmp::Ordering::Less,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) if key.nulls_first => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        (false, false) => {
                            let o = compare(x, y).unwrap_or_else(|e| {
                                failure.get_or_insert(e);
                                None
                            });
                            let o = o.unwrap_or(std::cmp::Ordering::Equal);
                            if key.descending {
                                o.reverse()
                            } else {
                                o
                            }
                        }
                    };
                    if o != std::cmp::Ordering::Equal {
                        return o;
                    }
                }
                std::cmp::Ordering::Equal
            });
            if let Some(e) = failure {
                return Err(e);
            }
        }
        Ok(order)
    }

    /// array_agg's result: the values in order, NULL for no row.
    fn array(&self, call: &AggCall) -> DbResult<Value> {
        if self.collected.is_empty() {
            return Ok(Value::Null);
        }
        let order = self.collected_order(call)?;
        let elem = self
            .collected
            .iter()
            .find_map(|(_, v, _)| v.data_type())
            .and_then(ElemType::of)
            .or_else(|| {
                aggregate_type(call, &[]).and_then(|t| match t {
                    DataType::Array(e) => Some(e),
                    _ => None,
                })
            })
            .unwrap_or(ElemType::Text);
        let ty = elem.data_type();
        let items = order
            .into_iter()
            .map(|i| crate::schema::coerce(self.collected[i].1.clone(), ty))
            .collect::<DbResult<Vec<_>>>()?;
        Ok(crate::array::Array::new(elem, items).into_value())
    }

    /// string_agg's result: the texts in order, each but the first after its own
    /// separator (a NULL separator as none), NULL for no text.
    fn joined(&self, call: &AggCall) -> DbResult<Value> {
        if self.collected.is_empty() {
            return Ok(Value::Null);
        }
        let mut out = String::new();
        for (n, i) in self.collected_order(call)?.into_iter().enumerate() {
            let (_, value, separator) = &self.collected[i];
            if let (true, Value::Text(sep)) = (n > 0, separator) {
                out.push_str(sep);
            }
            if let Value::Text(t) = value {
                out.push_str(t);
            }
            if out.len() > crate::sql::functions::MAX_RESULT_BYTES {
                return Err(crate::sql::functions::too_long(out.len()));
            }
        }
        Ok(Value::Text(out))
    }

    /// stddev's and variance's result (PostgreSQL's `numeric_stddev_internal` and
    /// `float8_var_samp` and kin): NULL for no row, and for one row when sampled.
    fn spread(&self, func: AggFunc) -> DbResult<Value> {
        let sampled = matches!(func, AggFunc::StddevSamp | AggFunc::VarSamp);
        let root = matches!(func, AggFunc::StddevSamp | AggFunc::StddevPop);
        let n = self.count;
        if n == 0 || (sampled && n == 1) {
            return Ok(Value::Null);
        }
        Ok(match &self.moments {
            None => Value::Null,
            Some(Moments::Float { deviations, .. }) => {
                let variance = deviations / if sampled { (n - 1) as f64 } else { n as f64 };
                Value::Float(if root { variance.sqrt() } else { variance })
            }
            Some(Moments::Exact { sum, sum_squares }) => {
                // n * sum(x^2) - sum(x)^2 at twice the inputs' scale, over n(n-1) or n^2.
                let scale = sum.as_bigint_and_scale().1 * 2;
                let n_big = numeric::from_i64(n);
                let numerator = ((&n_big * sum_squares).with_scale(scale) - (sum * sum).with_scale(scale))
                    .with_scale(scale);
                if numerator.sign() != bigdecimal::num_bigint::Sign::Plus {
                    // Rounding cannot make it negative here, but PostgreSQL's guard
                    // answers 0 (scale 0) for no spread, and so do we.
                    return Ok(Value::numeric(BigDecimal::from(0)));
                }
                let denominator = if sampled { &n_big * numeric::from_i64(n - 1) } else { &n_big * &n_big };
                let variance = numeric::div(&numerator, &denominator)?;
                Value::numeric(if root { numeric::sqrt(&variance)? } else { variance })
            }
        })
    }

    /// The aggregate's value for its group, whose row (the key, then the GROUPING()
    /// values) an ordered-set aggregate's direct arguments read.
    pub(crate) fn finish(&self, call: &AggCall, group_row: &[Value]) -> DbResult<Value> {
        Ok(match call.func {
            AggFunc::OrderedSet(func) => {
                let direct =
                    call.direct.iter().map(|e| e.eval(group_row, &[])).collect::<DbResult<Vec<_>>>()?;
                let order = self.collected_order(call)?;
                let sorted: Vec<&[Value]> =
                    order.into_iter().map(|i| self.collected[i].0.as_slice()).collect();
                crate::sql::ordered_set::finish(func, &call.order, &sorted, &direct)?
            }
            AggFunc::CountStar | AggFunc::Count => Value::Int(self.count),
            AggFunc::Sum => match (self.float4_sum, &self.sum) {
                (Some(float4_sum), None) => Value::Float4(float4_sum),
                // REALs mixed with other numbers (a column of no one type): a double.
                (Some(float4_sum), Some(sum)) => {
                    arithmetic(BinOp::Add, Num::F(f64::from(float4_sum)), sum.clone())?.value()
                }
                (None, sum) => sum.clone().map_or(Value::Null, Num::value),
            },
            AggFunc::Avg => match &self.sum {
                None => Value::Null,
                Some(Num::N(sum)) => Value::numeric(numeric::avg(sum, self.count)?),
                Some(Num::I(sum)) => Value::numeric(numeric::avg(&numeric::from_i64(*sum), self.count)?),
                Some(sum) => Value::Float(sum.as_f64() / self.count as f64),
            },
            AggFunc::Min | AggFunc::Max => self.best.clone().unwrap_or(Value::Null),
            AggFunc::ArrayAgg => self.array(call)?,
            AggFunc::StringAgg => self.joined(call)?,
            AggFunc::JsonAgg | AggFunc::JsonbAgg | AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg => {
                if self.collected.is_empty() {
                    return Ok(Value::Null);
                }
                let order = self.collected_order(call)?;
                let in_order = order.into_iter().map(|i| (&self.collected[i].1, &self.collected[i].2));
                match call.func {
                    AggFunc::JsonAgg => json_ops::json_array_of(in_order.map(|(value, _)| value))?,
                    AggFunc::JsonbAgg => json_ops::jsonb_array_of(in_order.map(|(value, _)| value))?,
                    AggFunc::JsonObjectAgg => json_ops::json_object_of(in_order)?,
                    _ => json_ops::jsonb_object_of(in_order)?,
                }
            }
            AggFunc::BoolAnd | AggFunc::BoolOr => self.truth.map_or(Value::Null, Value::Bool),
            AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop => {
                self.spread(call.func)?
            }
        })
    }
}

/// An integer or numeric input of stddev or variance as an exact decimal.
fn exact(x: Num) -> DbResult<BigDecimal> {
    Ok(match x {
        Num::I(i) => numeric::from_i64(i),
        Num::N(n) => n,
        Num::F(f) => numeric::from_f64(f)?,
    })
}
