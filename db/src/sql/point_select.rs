//! A prepared point SELECT, compiled once: `SELECT <list> FROM t WHERE pk = $n`.
//!
//! pgbench's select-only statement, and the read half of most OLTP applications, asks one
//! table for one row by its primary key. Planned at every execution, such a statement
//! spent about 60% of its instructions in the planner (callgrind, `commit_loop select`:
//! 8,600 of 14,500 per SELECT + COMMIT) to arrive at the same plan each time. As for a
//! prepared INSERT, UPDATE or DELETE, the statement's slot now keeps its compiled form:
//! the table, the key column, the select list as templates. An execution reads the one
//! key and evaluates the list on its row; no name is resolved, nothing is planned.
//!
//! What qualifies is decided by planning the statement once with its first bind values
//! and looking at the plan: one stored table (no view, catalog relation, WITH query or
//! function), a WHERE of exactly `key = $n` on a one-column primary key, and nothing
//! that needs the rows together (no aggregate, GROUP BY, HAVING, window, DISTINCT,
//! ORDER BY, LIMIT, OFFSET, FOR UPDATE or subquery). Any other SELECT is marked as such
//! in its slot and planned at each execution as before. An execution whose bound key is
//! not of the key column's own type (a text `$1` for an integer key) takes the general
//! path too: there the planner converts it as PostgreSQL would.

use std::sync::Arc;

use sqlparser::ast;

use crate::database::Session;
use crate::error::DbResult;
use crate::schema::Key;
use crate::sql::access::count_visit;
use crate::sql::exec::{QueryResult, ResultColumn, Returning};
use crate::sql::expr::{Binder, Relation, Template};
use crate::sql::query::QueryPlan;
use crate::value::Value;

/// The compiled form of a prepared point SELECT (see the module's doc).
pub(crate) struct PointSelect {
    pub(crate) relation: Relation,
    /// The primary key's one column.
    key_column: usize,
    /// The WHERE, `key = $n` (either way round).
    filter: Template,
    /// The select list, one template per output column.
    items: Vec<Template>,
    /// The output columns, as the planner describes them.
    columns: Vec<ResultColumn>,
}

impl Session {
    /// The compiled form of `query` if it is a point SELECT (see the module's doc), found
    /// by planning it with `params`; None for any other query.
    pub(crate) fn compile_point_select(
        &self,
        query: &ast::Query,
        params: &[Value],
    ) -> DbResult<Option<PointSelect>> {
        let ast::SetExpr::Select(select) = query.body.as_ref() else { return Ok(None) };
        if query.with.is_some()
            || query.order_by.is_some()
            || query.limit_clause.is_some()
            || query.fetch.is_some()
        {
            return Ok(None);
        }
        let (Some(selection), [ast::TableWithJoins { joins, .. }]) =
            (&select.selection, select.from.as_slice())
        else {
            return Ok(None);
        };
        if !joins.is_empty() {
            return Ok(None);
        }
        let QueryPlan::Select(plan) = self.plan_query_in(query, params, &[])? else { return Ok(None) };
        if !plan.is_plain_projection() {
            return Ok(None);
        }
        let Some(relation) = plan.relation.clone() else { return Ok(None) };
        // A stored table's rows: not a view's, a catalog's, or a WITH query's.
        let stored = relation.derived.is_none()
            && relation.function.is_none()
            && !crate::views::is_view(&relation.name)
            && self.db.read_catalog(|st| {
                st.table(&relation.name).is_ok_and(|t| Arc::ptr_eq(&t.schema, &relation.schema))
            });
        let &[key_column] = relation.schema.primary_key.as_slice() else { return Ok(None) };
        if !stored || relation.schema.rowid {
            return Ok(None);
        }
        let mut binder = Binder::template(Some(&relation)).in_session(self);
        let filter = Template::new(binder.scalar(selection, "WHERE")?);
        if filter.column_equals_param(key_column, params).is_none() {
            return Ok(None);
        }
        // The select list on one table's row follows RETURNING's rules.
        let list = Returning::compile(&relation, &select.projection, &mut binder)?;
        let columns = plan.columns().to_vec();
        let items = list.into_exprs();
        if items.len() != columns.len() || items.iter().any(|e| e.has_subquery()) {
            return Ok(None);
        }
        Ok(Some(PointSelect { relation, key_column, filter, items, columns }))
    }

    /// Runs a compiled point SELECT with `params`; None when the bound key is not of the
    /// key column's own type (the caller plans the statement instead).
    pub(crate) fn run_point_select(
        &self,
        point: &PointSelect,
        params: &[Value],
    ) -> DbResult<Option<QueryResult>> {
        let Some(bound) = point.filter.column_equals_param(point.key_column, params) else {
            unreachable!("a point SELECT's WHERE is `key = $n`")
        };
        let bound = bound?;
        if !bound.has_type(point.relation.schema.columns[point.key_column].ty) {
            return Ok(None);
        }
        // The table is a stored one (no view's rows to build): its row read directly.
        let key = Key::from_elem(bound.clone(), 1);
        let found = self.read_points(&point.relation.name, std::slice::from_ref(&key), self.own_changes())?;
        let txn_time = || self.transaction_timestamp();
        let mut rows = Vec::with_capacity(found.len());
        for row in &found {
            count_visit();
            let values = point
                .items
                .iter()
                .map(|e| e.with_params(params, &txn_time)?.eval(row, &[]))
                .collect::<DbResult<Vec<_>>>()?;
            rows.push(values);
        }
        let output = self.query_output(point.columns.clone(), rows);
        Ok(Some(QueryResult::rows_of_query(output.columns, output.rows)))
    }
}
