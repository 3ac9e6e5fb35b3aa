//! Queries: `SELECT` on zero or one table and `VALUES`.
//!
//! A SELECT runs as: access path (see `access`) -> WHERE -> [GROUP BY and aggregates ->
//! HAVING] -> select list -> DISTINCT -> ORDER BY -> OFFSET/LIMIT, compiled first into a
//! `SelectPlan` (which EXPLAIN shows) and then executed. It reads the rows as
//! the transaction sees them (its own changes over the committed state, never another
//! transaction's uncommitted ones). `FOR UPDATE` locks the selected rows, re-reading each
//! after its lock and checking the WHERE again, like an UPDATE.
//!
//! When the rows come in the order asked for (no ORDER BY, or ORDER BY a prefix of the
//! primary key, ascending) and there is no grouping or DISTINCT, the scan stops as soon as
//! OFFSET + LIMIT rows are found.
//!
//! Not supported (0A000): joins and several tables in FROM, subqueries, WITH, set
//! operations (UNION ...), window functions, DISTINCT ON, GROUPING SETS.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::sql::access::plan as plan_access;
use crate::sql::exec::ResultColumn;
use crate::sql::expr::{
    compare, grouping_error, ident_name, object_name, to_num, AggCall, AggFunc, Binder, Expr, Num, Relation,
};
use crate::value::{DataType, Value};

/// The rows a query produced.
pub(crate) struct Output {
    pub columns: Vec<ResultColumn>,
    pub rows: Vec<Vec<Value>>,
}

enum SortKey {
    /// The i-th output column.
    Output(usize),
    Expr(Expr),
}

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
pub(crate) struct SelectPlan {
    pub relation: Option<Relation>,
    pub filter: Option<Expr>,
    items: Vec<Expr>,
    columns: Vec<ResultColumn>,
    groups: Vec<Expr>,
    aggs: Vec<AggCall>,
    having: Option<Expr>,
    sorts: Vec<Sort>,
    pub grouped: bool,
    pub distinct: bool,
    pub needs_sort: bool,
    pub for_update: bool,
    pub limit: Option<usize>,
    pub offset: usize,
    /// With no step between the access and the LIMIT that needs every row, the scan stops
    /// after this many.
    stop_after: Option<usize>,
}

impl SelectPlan {
    /// The result columns, with the types known before running (None where a value's
    /// type decides).
    pub(crate) fn columns(&self) -> &[ResultColumn] {
        &self.columns
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
}

impl QueryClauses {
    /// No LIMIT, OFFSET or FOR UPDATE.
    fn is_plain(&self) -> bool {
        self.limit.is_none() && self.offset == 0 && !self.for_update
    }
}

/// Checks the clauses around a query's body and evaluates LIMIT, OFFSET and FOR UPDATE.
fn query_clauses(query: &ast::Query, params: &[Value]) -> DbResult<QueryClauses> {
    if query.with.is_some() {
        return Err(DbError::Unsupported("WITH".into()));
    }
    if query.fetch.is_some() {
        return Err(DbError::Unsupported("FETCH FIRST (use LIMIT)".into()));
    }
    if query.for_clause.is_some() || query.settings.is_some() || query.format_clause.is_some() {
        return Err(DbError::Unsupported(format!("the query {query}")));
    }
    if !query.pipe_operators.is_empty() {
        return Err(DbError::Unsupported("the pipe operator".into()));
    }
    let (limit, offset) = limits(query, params)?;
    let mut for_update = false;
    for lock in &query.locks {
        if lock.nonblock.is_some() {
            return Err(DbError::Unsupported("FOR UPDATE NOWAIT or SKIP LOCKED".into()));
        }
        // FOR SHARE locks exclusively too: row locks have one mode.
        for_update = true;
    }
    Ok(QueryClauses { limit, offset, for_update })
}

fn syntax(message: String) -> DbError {
    DbError::Syntax { message, position: 0 }
}

impl Session {
    /// Runs a query (SELECT or VALUES), returning its columns and rows.
    pub(crate) fn run_query(&mut self, query: &ast::Query, params: &[Value]) -> DbResult<Output> {
        let clauses = query_clauses(query, params)?;
        match query.body.as_ref() {
            ast::SetExpr::Select(select) => {
                let plan = self.compile_select(select, query.order_by.as_ref(), clauses, params)?;
                let rows = self.execute_select(&plan, &mut SelectCounts::default())?;
                let mut columns = plan.columns;
                fill_types(&mut columns, &rows);
                Ok(Output { columns, rows })
            }
            ast::SetExpr::Values(values) => {
                if query.order_by.is_some() || clauses.for_update {
                    return Err(DbError::Unsupported("ORDER BY or FOR UPDATE on VALUES".into()));
                }
                let mut out = values_output(values, params, self)?;
                out.rows = out
                    .rows
                    .into_iter()
                    .skip(clauses.offset)
                    .take(clauses.limit.unwrap_or(usize::MAX))
                    .collect();
                Ok(out)
            }
            ast::SetExpr::Query(inner) if query.order_by.is_none() && clauses.is_plain() => {
                self.run_query(inner, params)
            }
            ast::SetExpr::SetOperation { .. } => {
                Err(DbError::Unsupported("UNION, INTERSECT or EXCEPT".into()))
            }
            other => Err(DbError::Unsupported(format!("the query {other}"))),
        }
    }

    /// The plan of a query that is a SELECT (in parentheses or not), as `run_query`
    /// would run it; None for any other query (VALUES, set operations).
    pub(crate) fn plan_query(&self, query: &ast::Query, params: &[Value]) -> DbResult<Option<SelectPlan>> {
        let clauses = query_clauses(query, params)?;
        match query.body.as_ref() {
            ast::SetExpr::Select(select) => {
                self.compile_select(select, query.order_by.as_ref(), clauses, params).map(Some)
            }
            ast::SetExpr::Query(inner) if query.order_by.is_none() && clauses.is_plain() => {
                self.plan_query(inner, params)
            }
            _ => Ok(None),
        }
    }

    /// The table of a FROM clause (none for `SELECT 1`), or of UPDATE or DELETE.
    pub(crate) fn relation_of(&self, from: &[ast::TableWithJoins]) -> DbResult<Option<Relation>> {
        match from {
            [] => Ok(None),
            [ast::TableWithJoins { relation, joins }] if joins.is_empty() => match relation {
                ast::TableFactor::Table { name, alias, args: None, .. } => {
                    let name = object_name(name)?;
                    let schema = match crate::views::schema(&name) {
                        Some(view) => view,
                        None => {
                            self.db.read_catalog(|st| Ok::<_, DbError>(st.table(&name)?.schema.clone()))?
                        }
                    };
                    let alias = match alias {
                        None => None,
                        Some(a) if a.columns.is_empty() => Some(ident_name(&a.name)),
                        Some(_) => return Err(DbError::Unsupported("a column alias list on a table".into())),
                    };
                    Ok(Some(Relation { name, alias, schema }))
                }
                ast::TableFactor::Derived { .. } => Err(DbError::Unsupported("a subquery in FROM".into())),
                other => Err(DbError::Unsupported(format!("FROM {other}"))),
            },
            _ => Err(DbError::Unsupported("a join (one table per statement)".into())),
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
    ) -> DbResult<SelectPlan> {
        let QueryClauses { limit, offset, for_update } = clauses;
        let distinct = match &select.distinct {
            None | Some(ast::Distinct::All) => false,
            Some(ast::Distinct::Distinct) => true,
            Some(_) => return Err(DbError::Unsupported("DISTINCT ON".into())),
        };
        if select.top.is_some()
            || select.into.is_some()
            || !select.lateral_views.is_empty()
            || select.prewhere.is_some()
            || !select.connect_by.is_empty()
            || !select.cluster_by.is_empty()
            || !select.distribute_by.is_empty()
            || !select.sort_by.is_empty()
            || !select.named_window.is_empty()
            || select.qualify.is_some()
            || select.exclude.is_some()
        {
            return Err(DbError::Unsupported(format!("the query {select}")));
        }
        let relation = self.relation_of(&select.from)?;
        let input_names: Vec<String> = relation
            .as_ref()
            .map_or(Vec::new(), |r| r.schema.columns.iter().map(|c| c.name.clone()).collect());
        let input_types: Vec<Option<DataType>> =
            relation.as_ref().map_or(Vec::new(), |r| r.schema.columns.iter().map(|c| Some(c.ty)).collect());
        let mut binder = Binder::new(relation.as_ref(), params).in_session(self);
        let filter = select.selection.as_ref().map(|e| binder.scalar(e, "WHERE")).transpose()?;

        // The select list.
        let mut items = Vec::new();
        let mut names = Vec::new();
        let expand = |qualifier: Option<String>, items: &mut Vec<Expr>, names: &mut Vec<String>| {
            let relation = relation
                .as_ref()
                .ok_or_else(|| syntax("SELECT * with no tables specified is not valid".into()))?;
            if let Some(q) = qualifier {
                relation.check_qualifier(&q)?;
            }
            for (i, name) in input_names.iter().enumerate() {
                items.push(Expr::Column(i));
                names.push(name.clone());
            }
            Ok::<(), DbError>(())
        };
        for item in &select.projection {
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
                ) => expand(Some(object_name(q)?), &mut items, &mut names)?,
                other => return Err(DbError::Unsupported(format!("the select item {other}"))),
            }
        }

        // GROUP BY: expressions, select-list positions or output names.
        let group_asts = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs,
            other => return Err(DbError::Unsupported(format!("{other}"))),
        };
        let mut groups = Vec::new();
        for g in group_asts {
            let e = match output_reference(g, &names, relation.as_ref())? {
                Some(i) => items[i].clone(),
                None => binder.scalar(g, "GROUP BY")?,
            };
            if e.contains_aggregate() {
                return Err(grouping_error("aggregate functions are not allowed in GROUP BY".into()));
            }
            groups.push(e);
        }
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
                let key = match output_reference(&o.expr, &names, relation.as_ref())? {
                    Some(i) => SortKey::Output(i),
                    None => SortKey::Expr(binder.with_aggregates(&o.expr)?),
                };
                sorts.push(Sort { key, desc, nulls_first: o.options.nulls_first.unwrap_or(desc) });
            }
        }

        let aggs = std::mem::take(&mut binder.aggs);
        let grouped = !groups.is_empty() || !aggs.is_empty() || having.is_some();
        let (items, having, sorts) = if grouped {
            let items =
                items.into_iter().map(|e| e.regroup(&groups, &input_names)).collect::<DbResult<Vec<_>>>()?;
            let having = having.map(|e| e.regroup(&groups, &input_names)).transpose()?;
            let sorts = sorts
                .into_iter()
                .map(|s| {
                    Ok(Sort {
                        key: match s.key {
                            SortKey::Expr(e) => SortKey::Expr(e.regroup(&groups, &input_names)?),
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
        if for_update && (grouped || distinct || relation.is_none()) {
            return Err(DbError::Unsupported(
                "FOR UPDATE with GROUP BY, aggregates, DISTINCT or no table".into(),
            ));
        }

        // Result column types, known before running when possible.
        let row_types: Vec<Option<DataType>> = if grouped {
            groups.iter().map(|g| g.static_type(&input_types, &[])).collect()
        } else {
            input_types.clone()
        };
        let agg_types: Vec<Option<DataType>> = aggs.iter().map(|a| aggregate_type(a, &input_types)).collect();
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
        let needs_sort = !sorts.is_empty() && !follows_key;
        let stop_after = match limit {
            Some(limit) if !needs_sort && !distinct && !grouped => Some(offset.saturating_add(limit)),
            _ => None,
        };
        Ok(SelectPlan {
            relation,
            filter,
            items,
            columns,
            groups,
            aggs,
            having,
            sorts,
            grouped,
            distinct,
            needs_sort,
            for_update,
            limit,
            offset,
            stop_after,
        })
    }

    /// Runs a compiled SELECT, counting in `counts` what each step handed on. Returns its
    /// rows (the plan has their columns).
    pub(crate) fn execute_select(
        &mut self,
        plan: &SelectPlan,
        counts: &mut SelectCounts,
    ) -> DbResult<Vec<Vec<Value>>> {
        let SelectPlan {
            relation,
            filter,
            items,
            groups,
            aggs,
            having,
            sorts,
            grouped,
            distinct,
            needs_sort,
            for_update,
            limit,
            offset,
            stop_after,
            ..
        } = plan;
        let project = |row: &[Value], agg_values: &[Value]| -> DbResult<(Vec<Value>, Vec<Value>)> {
            let out = items.iter().map(|e| e.eval(row, agg_values)).collect::<DbResult<Vec<_>>>()?;
            let keys = sorts
                .iter()
                .map(|s| match &s.key {
                    SortKey::Output(i) => Ok(out[*i].clone()),
                    SortKey::Expr(e) => e.eval(row, agg_values),
                })
                .collect::<DbResult<Vec<_>>>()?;
            Ok((out, keys))
        };
        let matches = |row: &[Value]| filter.as_ref().map_or(Ok(true), |f| f.holds(row, &[]));

        let mut results: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
        if !grouped {
            match relation {
                None => {
                    counts.read += 1;
                    if matches(&[])? {
                        counts.matched += 1;
                        results.push(project(&[], &[])?);
                    }
                }
                Some(rel) => {
                    let access = plan_access(&rel.schema, filter.as_ref());
                    log::trace!("SELECT from {}: {}", rel.name, access.describe());
                    if *for_update {
                        if crate::views::is_view(&rel.name) {
                            return Err(crate::views::read_only(&rel.name));
                        }
                        let mut candidates = Vec::new();
                        self.visit_rows(&rel.name, &access, &mut |row| {
                            counts.read += 1;
                            if matches(row)? {
                                candidates.push(row.clone());
                            }
                            Ok(true)
                        })?;
                        counts.matched = candidates.len() as u64;
                        for old in candidates {
                            if stop_after.is_some_and(|n| results.len() >= n) {
                                break;
                            }
                            let key = rel.schema.key_of(&old);
                            let Some(row) = self.select_for_update(&rel.name, &key)? else { continue };
                            if Arc::ptr_eq(&row, &old) || matches(&row)? {
                                results.push(project(&row, &[])?);
                            }
                        }
                        counts.locked = results.len() as u64;
                    } else {
                        self.visit_rows(&rel.name, &access, &mut |row| {
                            counts.read += 1;
                            if matches(row)? {
                                counts.matched += 1;
                                results.push(project(row, &[])?);
                            }
                            Ok(stop_after.is_none_or(|n| results.len() < n))
                        })?;
                    }
                }
            }
        } else {
            let mut by_group: BTreeMap<Vec<Value>, Vec<Accumulator>> = BTreeMap::new();
            let new_accumulators = || aggs.iter().map(Accumulator::new).collect::<Vec<_>>();
            let mut feed = |row: &[Value]| -> DbResult<bool> {
                counts.read += 1;
                if matches(row)? {
                    counts.matched += 1;
                    let key = groups.iter().map(|g| g.eval(row, &[])).collect::<DbResult<Vec<_>>>()?;
                    let accumulators = by_group.entry(key).or_insert_with(new_accumulators);
                    for (acc, call) in accumulators.iter_mut().zip(aggs) {
                        acc.feed(call, row)?;
                    }
                }
                Ok(true)
            };
            match relation {
                None => {
                    feed(&[])?;
                }
                Some(rel) => {
                    let access = plan_access(&rel.schema, filter.as_ref());
                    log::trace!("SELECT from {}: {}", rel.name, access.describe());
                    self.visit_rows(&rel.name, &access, &mut |row| feed(row))?;
                }
            }
            if by_group.is_empty() && groups.is_empty() {
                by_group.insert(Vec::new(), new_accumulators());
            }
            counts.groups = by_group.len() as u64;
            for (key, accumulators) in by_group {
                let values: Vec<Value> = accumulators.iter().zip(aggs).map(|(a, c)| a.finish(c)).collect();
                if let Some(h) = having {
                    if !h.holds(&key, &values)? {
                        continue;
                    }
                }
                results.push(project(&key, &values)?);
            }
            counts.grouped_out = results.len() as u64;
        }

        if *distinct {
            let mut seen = BTreeSet::new();
            results.retain(|(out, _)| seen.insert(out.clone()));
            counts.distinct = results.len() as u64;
        }
        if *needs_sort {
            results.sort_by(|(_, a), (_, b)| {
                for (s, (x, y)) in sorts.iter().zip(a.iter().zip(b)) {
                    let o = match (x.is_null(), y.is_null()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) if s.nulls_first => std::cmp::Ordering::Less,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) if s.nulls_first => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        (false, false) if s.desc => y.cmp(x),
                        (false, false) => x.cmp(y),
                    };
                    if o != std::cmp::Ordering::Equal {
                        return o;
                    }
                }
                std::cmp::Ordering::Equal
            });
        }
        counts.sorted = results.len() as u64;
        let rows: Vec<Vec<Value>> =
            results.into_iter().skip(*offset).take(limit.unwrap_or(usize::MAX)).map(|(out, _)| out).collect();
        counts.returned = rows.len() as u64;
        Ok(rows)
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
    match &query.limit_clause {
        None => Ok((None, 0)),
        Some(ast::LimitClause::LimitOffset { limit, offset, limit_by }) => {
            if !limit_by.is_empty() {
                return Err(DbError::Unsupported("LIMIT BY".into()));
            }
            let limit = limit.as_ref().map(|e| count(e, "LIMIT")).transpose()?.flatten();
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
fn output_reference(e: &ast::Expr, names: &[String], relation: Option<&Relation>) -> DbResult<Option<usize>> {
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
            let is_input = relation.is_some_and(|r| r.schema.column_index(&name).is_ok());
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

fn aggregate_type(call: &AggCall, input: &[Option<DataType>]) -> Option<DataType> {
    match call.func {
        AggFunc::CountStar | AggFunc::Count => Some(DataType::Int),
        AggFunc::Avg => Some(DataType::Float),
        AggFunc::Sum => match call.arg.as_ref().and_then(|a| a.static_type(input, &[])) {
            Some(DataType::Int) => Some(DataType::Int),
            _ => Some(DataType::Float),
        },
        AggFunc::Min | AggFunc::Max => call.arg.as_ref().and_then(|a| a.static_type(input, &[])),
    }
}

/// The running state of one aggregate call for one group.
struct Accumulator {
    count: i64,
    sum: Option<Num>,
    best: Option<Value>,
    seen: Option<BTreeSet<Value>>,
}

impl Accumulator {
    fn new(call: &AggCall) -> Accumulator {
        Accumulator { count: 0, sum: None, best: None, seen: call.distinct.then(BTreeSet::new) }
    }

    fn feed(&mut self, call: &AggCall, row: &[Value]) -> DbResult<()> {
        let Some(arg) = &call.arg else {
            self.count += 1;
            return Ok(());
        };
        let v = arg.eval(row, &[])?;
        if v.is_null() {
            return Ok(());
        }
        if let Some(seen) = &mut self.seen {
            if !seen.insert(v.clone()) {
                return Ok(());
            }
        }
        self.count += 1;
        match call.func {
            AggFunc::Sum | AggFunc::Avg => {
                let n = to_num(&v)?;
                self.sum = Some(match self.sum {
                    None => n,
                    Some(Num::I(a)) => match n {
                        Num::I(b) => a.checked_add(b).map_or(Num::F(a as f64 + b as f64), Num::I),
                        Num::F(b) => Num::F(a as f64 + b),
                    },
                    Some(Num::F(a)) => Num::F(a + n.as_f64()),
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
            AggFunc::Count | AggFunc::CountStar => {}
        }
        Ok(())
    }

    fn finish(&self, call: &AggCall) -> Value {
        match call.func {
            AggFunc::CountStar | AggFunc::Count => Value::Int(self.count),
            AggFunc::Sum => self.sum.map_or(Value::Null, Num::value),
            AggFunc::Avg => self.sum.map_or(Value::Null, |s| Value::Float(s.as_f64() / self.count as f64)),
            AggFunc::Min | AggFunc::Max => self.best.clone().unwrap_or(Value::Null),
        }
    }
}
