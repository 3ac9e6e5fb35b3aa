//! Data-modifying statements in WITH: `WITH moved AS (DELETE FROM a ... RETURNING *)
//! INSERT INTO b SELECT * FROM moved`, `WITH u AS (UPDATE ... RETURNING id) SELECT
//! count(*) FROM u`, and a statement's own INSERT, UPDATE or DELETE after a WITH.
//!
//! PostgreSQL's semantics, which this module keeps:
//! - each data-modifying WITH query runs exactly once and to completion, whether or not
//!   the rest of the statement reads its rows: here each runs, in the order written,
//!   before the statement's body, and its RETURNING rows are kept (materialised) and read
//!   as a VALUES list of them under the query's name (`QueryPlan::materialized`);
//! - every part of the statement reads the same snapshot: no part sees another's changes
//!   in the tables, only through its RETURNING rows. The transaction's own rows as they
//!   were when the statement began are what its queries read
//!   (`Session::read_own_rows_at_start`); the changes go on into the transaction's overlay,
//!   whose current rows the row locks, unique keys and foreign keys go by. An UPDATE or
//!   DELETE picks its rows as the snapshot shows them, so a row another part inserted is
//!   not among them, and one another part changed or deleted is left alone (PostgreSQL:
//!   "already modified by the current command"; which part gets to a row first is, in
//!   PostgreSQL's words, unpredictable: it runs the main query first and the WITH
//!   queries it never read last, here they run in the order written);
//! - a data-modifying WITH query is allowed only in the statement's own WITH (0A000
//!   "WITH clause containing a data-modifying statement must be at the top level"); one
//!   without RETURNING runs, but no FROM may read it;
//! - the changes are logged as any DML's, in the statement's transaction, and the whole
//!   statement is one statement: a failure in any part undoes every part.
//!
//! MERGE after a WITH runs as any MERGE; MERGE as a WITH query is refused with 0A000, as
//! PostgreSQL 15 refuses it.

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::sql::exec::{QueryResult, ResultColumn};
use crate::sql::expr::ident_name;
use crate::sql::query::QueryPlan;
use crate::value::Value;

/// Whether a WITH query (or a statement's body) is INSERT, UPDATE, DELETE or MERGE.
pub(crate) fn is_data_modifying(query: &ast::Query) -> bool {
    matches!(
        query.body.as_ref(),
        ast::SetExpr::Insert(_) | ast::SetExpr::Update(_) | ast::SetExpr::Delete(_) | ast::SetExpr::Merge(_)
    )
}

/// Whether a statement that parsed as a query changes rows: its body is INSERT, UPDATE,
/// DELETE or MERGE (after a WITH), or one of its own WITH queries is.
pub(crate) fn modifies_data(query: &ast::Query) -> bool {
    is_data_modifying(query)
        || query
            .with
            .as_ref()
            .is_some_and(|with| with.cte_tables.iter().any(|cte| is_data_modifying(&cte.query)))
}

/// PostgreSQL's error for a data-modifying WITH query inside another query.
pub(crate) fn not_at_top_level(cte: &ast::Cte) -> DbError {
    let start = cte.alias.name.span.start;
    DbError::FeatureNotSupported(
        "WITH clause containing a data-modifying statement must be at the top level".into(),
    )
    .at(start.line, start.column)
}

/// The INSERT, UPDATE, DELETE or MERGE statement of a data-modifying query's body.
fn statement_of(query: &ast::Query) -> &ast::Statement {
    match query.body.as_ref() {
        ast::SetExpr::Insert(s)
        | ast::SetExpr::Update(s)
        | ast::SetExpr::Delete(s)
        | ast::SetExpr::Merge(s) => s,
        other => unreachable!("not a data-modifying query: {other}"),
    }
}

/// The statement of a data-modifying WITH query: not MERGE (PostgreSQL 15's 0A000).
fn cte_statement_of(query: &ast::Query) -> DbResult<&ast::Statement> {
    match statement_of(query) {
        ast::Statement::Merge(_) => {
            Err(DbError::FeatureNotSupported("MERGE not supported in WITH query".into()))
        }
        statement => Ok(statement),
    }
}

impl Session {
    /// Runs a statement whose WITH holds a data-modifying query or whose body is INSERT,
    /// UPDATE or DELETE (see the module's doc): one statement, undone as a whole if any
    /// part fails.
    pub(crate) fn run_data_modifying_with(
        &mut self,
        query: &ast::Query,
        params: &[Value],
    ) -> DbResult<QueryResult> {
        self.statement(|s| {
            let depth = s.ctes.borrow().len();
            let before = s.read_own_rows_at_start();
            let result = s.run_with_parts(query, params);
            s.end_read_at_start(before);
            s.ctes.borrow_mut().truncate(depth);
            result
        })
    }

    fn run_with_parts(&mut self, query: &ast::Query, params: &[Value]) -> DbResult<QueryResult> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                if cte.from.is_some() {
                    return Err(DbError::Unsupported(format!("the WITH query {cte}")));
                }
                if is_data_modifying(&cte.query) {
                    // Run now, once, to completion; its RETURNING rows are what the rest
                    // of the statement reads under its name.
                    match self.run_modifying_query(&cte.query, params)? {
                        QueryResult::Rows { columns, rows, .. } => {
                            self.push_cte(cte, QueryPlan::materialized(columns, rows))?
                        }
                        QueryResult::Command { .. } => {
                            self.ctes.borrow_mut().push((ident_name(&cte.alias.name), None));
                        }
                    }
                    continue;
                }
                let plan = match with.recursive {
                    true => self.plan_recursive_cte(cte, params, &[])?,
                    false => self.plan_query_in(&cte.query, params, &[])?,
                };
                self.push_cte(cte, plan)?;
            }
        }
        if is_data_modifying(query) {
            return self.run_modifying_statement(statement_of(query), params);
        }
        let plan = self.plan_query_body(query, params, &[])?;
        let out = self.run_query_plan(&plan)?;
        Ok(QueryResult::rows_of_query(out.columns, out.rows))
    }

    /// Runs a data-modifying WITH query: its own WITH queries (which may only read) in
    /// scope, then its INSERT, UPDATE or DELETE.
    fn run_modifying_query(&mut self, query: &ast::Query, params: &[Value]) -> DbResult<QueryResult> {
        let statement = cte_statement_of(query)?;
        let Some(with) = &query.with else { return self.run_modifying_statement(statement, params) };
        let depth = self.ctes.borrow().len();
        let result = (|| {
            for cte in &with.cte_tables {
                if cte.from.is_some() {
                    return Err(DbError::Unsupported(format!("the WITH query {cte}")));
                }
                if is_data_modifying(&cte.query) {
                    return Err(not_at_top_level(cte));
                }
                let plan = match with.recursive {
                    true => self.plan_recursive_cte(cte, params, &[])?,
                    false => self.plan_query_in(&cte.query, params, &[])?,
                };
                self.push_cte(cte, plan)?;
            }
            self.run_modifying_statement(statement, params)
        })();
        self.ctes.borrow_mut().truncate(depth);
        result
    }

    /// Runs INSERT, UPDATE, DELETE or MERGE with the WITH queries in scope.
    fn run_modifying_statement(
        &mut self,
        statement: &ast::Statement,
        params: &[Value],
    ) -> DbResult<QueryResult> {
        // PostgreSQL looks a data-modifying statement's target up among the tables only;
        // here a WITH query of the same name would be found first, so the case is refused.
        let table_name = |factor: &ast::TableFactor| match factor {
            ast::TableFactor::Table { name, .. } => crate::sql::expr::object_name(name).ok(),
            _ => None,
        };
        let target = match statement {
            ast::Statement::Insert(insert) => match &insert.table {
                ast::TableObject::TableName(name) => crate::sql::expr::object_name(name).ok(),
                _ => None,
            },
            ast::Statement::Update(update) => table_name(&update.table.relation),
            ast::Statement::Merge(merge) => table_name(&merge.table),
            ast::Statement::Delete(delete) => match &delete.from {
                ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => {
                    from.first().and_then(|t| table_name(&t.relation))
                }
            },
            other => unreachable!("not INSERT, UPDATE, DELETE or MERGE: {other}"),
        };
        if let Some(target) = target.filter(|t| self.ctes.borrow().iter().any(|(name, _)| name == t)) {
            return Err(DbError::Unsupported(format!(
                "a WITH query named as the target table \"{target}\" of INSERT, UPDATE or DELETE"
            )));
        }
        match statement {
            ast::Statement::Insert(insert) => self.insert_statement(insert, params, None),
            ast::Statement::Update(update) => self.update_statement(update, params, None),
            ast::Statement::Delete(delete) => self.delete_statement(delete, params, None),
            ast::Statement::Merge(merge) => self.merge_statement(merge, params),
            other => unreachable!("not INSERT, UPDATE, DELETE or MERGE: {other}"),
        }
    }
}

impl Session {
    /// The result columns of a statement with data-modifying WITH queries (None: its
    /// body is INSERT, UPDATE or DELETE without RETURNING), told without running it:
    /// each data-modifying WITH query stands for its RETURNING columns and no rows.
    pub(crate) fn describe_data_modifying_with(
        &self,
        query: &ast::Query,
        params: &[Value],
    ) -> DbResult<Option<Vec<ResultColumn>>> {
        let depth = self.ctes.borrow().len();
        let described = (|| {
            for cte in query.with.iter().flat_map(|with| with.cte_tables.iter().map(move |cte| (with, cte))) {
                let (with, cte) = cte;
                if is_data_modifying(&cte.query) {
                    let statement = cte_statement_of(&cte.query)?;
                    match self.returning_columns(statement, params)? {
                        Some(columns) => self.push_cte(cte, QueryPlan::materialized(columns, Vec::new()))?,
                        None => self.ctes.borrow_mut().push((ident_name(&cte.alias.name), None)),
                    }
                    continue;
                }
                let plan = match with.recursive {
                    true => self.plan_recursive_cte(cte, params, &[])?,
                    false => self.plan_query_in(&cte.query, params, &[])?,
                };
                self.push_cte(cte, plan)?;
            }
            if is_data_modifying(query) {
                return self.returning_columns(statement_of(query), params);
            }
            Ok(Some(self.plan_query_body(query, params, &[])?.columns().to_vec()))
        })();
        self.ctes.borrow_mut().truncate(depth);
        described
    }
}

/// Whether a statement that parsed as a query returns rows: not when its body is
/// INSERT, UPDATE or DELETE without RETURNING, or MERGE.
pub(crate) fn query_returns_rows(query: &ast::Query) -> bool {
    match query.body.as_ref() {
        ast::SetExpr::Insert(ast::Statement::Insert(insert)) => insert.returning.is_some(),
        ast::SetExpr::Update(ast::Statement::Update(update)) => update.returning.is_some(),
        ast::SetExpr::Delete(ast::Statement::Delete(delete)) => delete.returning.is_some(),
        ast::SetExpr::Merge(_) => false,
        _ => true,
    }
}
