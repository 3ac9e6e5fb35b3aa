//! `WITH RECURSIVE`: a WITH query of the form `non-recursive term UNION [ALL] recursive
//! term`, where the recursive term reads the query's own name.
//!
//! As PostgreSQL evaluates it: the non-recursive term's rows are the first working table
//! and the start of the result; the recursive term then runs again and again, each time
//! reading (under the query's name) only the rows the previous run produced, and its new
//! rows are added to the result, until a run produces none. With UNION (not ALL) a row
//! already in the result is discarded, so a cycle in the data ends the recursion.
//!
//! The working table is a plan of its own (`QueryPlan::WorkTable`) whose rows are handed
//! over at run time through the session's `WorkTables`, by an id the planning gave the
//! recursive query: plans are shared and bound (`bind_outer`) as values, so the rows
//! cannot live in them.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::sql::expr::ident_name;
use crate::sql::expr::Scope;
use crate::sql::query::QueryPlan;
use crate::sql::ResultColumn;
use crate::value::Value;

/// The working tables of the recursive queries a session runs, by id.
#[derive(Default)]
pub(crate) struct WorkTables {
    /// The next id to give a recursive query being planned.
    next: Cell<usize>,
    /// The rows of each working table while its recursive query runs.
    rows: RefCell<HashMap<usize, Arc<Vec<Vec<Value>>>>>,
    /// How many times a FROM clause has named a working table (planning): tells a
    /// recursive term from a plain UNION inside `WITH RECURSIVE`.
    reads: Cell<usize>,
}

impl WorkTables {
    /// Counts a FROM clause naming a working table.
    pub(crate) fn note_read(&self) {
        self.reads.set(self.reads.get() + 1);
    }
}

/// A recursive WITH query, planned.
#[derive(Clone)]
pub(crate) struct RecursivePlan {
    pub(crate) non_recursive: QueryPlan,
    pub(crate) recursive: QueryPlan,
    /// UNION ALL: every row kept (else a row already produced is dropped).
    pub(crate) all: bool,
    pub(crate) columns: Vec<ResultColumn>,
    /// The id of its working table in the session's `WorkTables`.
    pub(crate) work_table: usize,
}

/// The working table of a recursive query: under the query's name, its recursive term
/// reads the rows the previous step produced.
#[derive(Clone)]
pub(crate) struct WorkTablePlan {
    pub(crate) columns: Vec<ResultColumn>,
    pub(crate) id: usize,
}

impl Session {
    /// The plan of the WITH query `cte` of a `WITH RECURSIVE`: a recursive query if its
    /// body is `A UNION [ALL] B` and B reads its name; else planned as any WITH query.
    pub(crate) fn plan_recursive_cte(
        &self,
        cte: &ast::Cte,
        params: &[Value],
        outer: &[Scope],
    ) -> DbResult<QueryPlan> {
        let name = ident_name(&cte.alias.name);
        let ast::SetExpr::SetOperation { op: ast::SetOperator::Union, set_quantifier, left, right } =
            cte.query.body.as_ref()
        else {
            return self.plan_query_in(&cte.query, params, outer);
        };
        let all = match set_quantifier {
            ast::SetQuantifier::All => true,
            ast::SetQuantifier::None | ast::SetQuantifier::Distinct => false,
            other => return Err(DbError::Unsupported(format!("UNION {other} in a recursive query"))),
        };
        let non_recursive = self.plan_set_expr(left, params, outer)?;
        let columns = crate::sql::query::renamed_columns(&non_recursive, &name, Some(&cte.alias))?;
        let id = self.work_tables.next.get();
        self.work_tables.next.set(id + 1);
        let work_table = QueryPlan::WorkTable(Box::new(WorkTablePlan { columns: columns.clone(), id }));
        let reads_before = self.work_tables.reads.get();
        let depth = self.ctes.borrow().len();
        self.ctes.borrow_mut().push((name.clone(), Some(Arc::new(work_table))));
        let recursive = self.plan_set_expr(right, params, outer);
        self.ctes.borrow_mut().truncate(depth);
        let recursive = recursive?;
        if self.work_tables.reads.get() == reads_before {
            // Not recursive after all: a plain UNION.
            return self.plan_query_in(&cte.query, params, outer);
        }
        if cte.query.order_by.is_some() {
            return Err(DbError::Unsupported("ORDER BY in a recursive query".into()));
        }
        if cte.query.limit_clause.is_some() || cte.query.fetch.is_some() {
            return Err(DbError::Unsupported("OFFSET, LIMIT or FETCH in a recursive query".into()));
        }
        if recursive.columns().len() != columns.len() {
            return Err(DbError::Syntax {
                message: "each UNION query must have the same number of columns".into(),
                position: 0,
            });
        }
        Ok(QueryPlan::Recursive(Box::new(RecursivePlan {
            non_recursive,
            recursive,
            all,
            columns,
            work_table: id,
        })))
    }

    /// The rows of a recursive query: the non-recursive term's, then the recursive
    /// term's over the rows of the step before, until a step adds none.
    pub(crate) fn run_recursive(&self, plan: &RecursivePlan) -> DbResult<Vec<Vec<Value>>> {
        let mut seen: BTreeSet<Vec<Value>> = BTreeSet::new();
        let mut keep_new = |rows: &mut Vec<Vec<Value>>, all: bool| {
            if !all {
                rows.retain(|row| seen.insert(row.clone()));
            }
        };
        let mut result = self.run_plan(&plan.non_recursive)?;
        keep_new(&mut result, plan.all);
        let mut working = result.clone();
        let outcome = (|| {
            while !working.is_empty() {
                // A recursion that never ends (UNION ALL over a cycle) is stopped by a
                // cancel or a statement timeout, as in PostgreSQL.
                self.check_cancel()?;
                self.work_tables
                    .rows
                    .borrow_mut()
                    .insert(plan.work_table, Arc::new(std::mem::take(&mut working)));
                let mut produced = self.run_plan(&plan.recursive)?;
                keep_new(&mut produced, plan.all);
                result.extend(produced.iter().cloned());
                working = produced;
            }
            Ok(())
        })();
        self.work_tables.rows.borrow_mut().remove(&plan.work_table);
        outcome.map(|()| result)
    }

    /// The rows of a working table: those the running recursive query's last step
    /// produced.
    pub(crate) fn run_work_table(&self, plan: &WorkTablePlan) -> DbResult<Vec<Vec<Value>>> {
        let rows = self.work_tables.rows.borrow().get(&plan.id).cloned();
        match rows {
            Some(rows) => Ok(rows.as_ref().clone()),
            None => Err(DbError::InvalidRecursion(
                "a recursive query's own name read outside its recursive term".into(),
            )),
        }
    }
}
