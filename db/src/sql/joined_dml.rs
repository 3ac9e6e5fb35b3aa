//! `UPDATE target SET ... FROM other, ... WHERE ...` and `DELETE FROM target USING other,
//! ... WHERE ...`: PostgreSQL's UPDATE and DELETE joined with other relations.
//!
//! The target and the other relations are one FROM clause (the target first), planned as
//! any join (`join.rs`: the WHERE pushed to the scans, hash or index joins). For each
//! joined row, the target row is locked and read again, and the WHERE checked again on
//! it: a row another transaction changed so that the WHERE no longer holds is left
//! alone, as PostgreSQL's re-check does. A target row that several joined rows reach is
//! changed once, by the first of them (PostgreSQL: by one of them, unspecified which).
//! RETURNING reads the whole joined row: the target's columns as stored (the new row of
//! an UPDATE, the old one of a DELETE) and the other relations'.

use std::collections::BTreeSet;

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::schema::{Key, Row};
use crate::sql::exec::{assignable, count_tag, QueryResult, ResultColumn};
use crate::sql::expr::{ident_name, object_name, Binder, Expr, Scope};
use crate::sql::query::column_name;
use crate::value::Value;

/// What is done to each target row the join reaches.
enum Change {
    /// (target column, value over the joined row)
    Update(Vec<(usize, Expr)>),
    Delete,
}

impl Session {
    /// UPDATE ... FROM.
    pub(crate) fn update_from_statement(
        &mut self,
        update: &ast::Update,
        params: &[Value],
    ) -> DbResult<QueryResult> {
        let others = match &update.from {
            Some(ast::UpdateTableFromKind::AfterSet(from)) => from,
            Some(ast::UpdateTableFromKind::BeforeSet(_)) => {
                return Err(DbError::Unsupported("UPDATE FROM ... SET (FROM before SET)".into()))
            }
            None => unreachable!("called for UPDATE ... FROM"),
        };
        if update.output.is_some()
            || update.or.is_some()
            || !update.order_by.is_empty()
            || update.limit.is_some()
        {
            return Err(DbError::Unsupported("this form of UPDATE ... FROM".into()));
        }
        self.joined_dml(
            &update.table,
            others,
            update.selection.as_ref(),
            update.returning.as_deref(),
            params,
            |binder, target| {
                let mut sets: Vec<(usize, Expr)> = Vec::new();
                for assignment in &update.assignments {
                    let ast::AssignmentTarget::ColumnName(column) = &assignment.target else {
                        return Err(DbError::Unsupported("an assignment to a tuple of columns".into()));
                    };
                    // `SET c = ...` (PostgreSQL refuses a qualified target column).
                    let [part] = column.0.as_slice() else {
                        return Err(DbError::Unsupported(format!(
                            "the assignment target {column} in UPDATE ... FROM"
                        )));
                    };
                    let name = part
                        .as_ident()
                        .map(ident_name)
                        .ok_or_else(|| DbError::Unsupported(format!("SET {column}")))?;
                    let index = target.column_index(&name)?;
                    if sets.iter().any(|(i, _)| *i == index) {
                        return Err(DbError::Syntax {
                            message: format!("multiple assignments to same column \"{name}\""),
                            position: 0,
                        });
                    }
                    sets.push((index, binder.scalar(&assignment.value, "UPDATE")?));
                }
                Ok(Change::Update(sets))
            },
        )
    }

    /// DELETE ... USING.
    pub(crate) fn delete_using_statement(
        &mut self,
        delete: &ast::Delete,
        params: &[Value],
    ) -> DbResult<QueryResult> {
        if !delete.tables.is_empty()
            || !delete.order_by.is_empty()
            || delete.limit.is_some()
            || delete.output.is_some()
        {
            return Err(DbError::Unsupported("this form of DELETE ... USING".into()));
        }
        let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) = &delete.from;
        let [target] = from.as_slice() else {
            return Err(DbError::Unsupported("DELETE from several tables".into()));
        };
        let others = delete.using.as_deref().expect("called for DELETE ... USING");
        self.joined_dml(
            target,
            others,
            delete.selection.as_ref(),
            delete.returning.as_deref(),
            params,
            |_, _| Ok(Change::Delete),
        )
    }

    /// The statement's target joined with `others` under `condition`, and `change` (made
    /// by `compile_change` with the joined scope's binder) done to each target row it
    /// reaches.
    fn joined_dml(
        &mut self,
        target: &ast::TableWithJoins,
        others: &[ast::TableWithJoins],
        condition: Option<&ast::Expr>,
        returning: Option<&[ast::SelectItem]>,
        params: &[Value],
        compile_change: impl FnOnce(&mut Binder, &crate::schema::TableSchema) -> DbResult<Change>,
    ) -> DbResult<QueryResult> {
        if !target.joins.is_empty() {
            return Err(DbError::Unsupported("a join in the target of UPDATE or DELETE".into()));
        }
        let ast::TableFactor::Table { name, args: None, .. } = &target.relation else {
            return Err(DbError::Unsupported(format!("UPDATE or DELETE of {}", target.relation)));
        };
        let table = self.relation_name(name)?;
        let from: Vec<ast::TableWithJoins> =
            std::iter::once(target.clone()).chain(others.iter().cloned()).collect();
        let (scope, written) = self.scope_of_from(&from, params, &[])?;
        let target_entry = scope.entries.first().expect("the target is in the scope").clone();
        let schema = target_entry.relation.schema.clone();
        if target_entry.relation.derived.is_some() || crate::views::is_view(&table) || schema.view.is_some() {
            return Err(crate::views::read_only(&table));
        }
        if schema.sequence.is_some() {
            return Err(DbError::WrongObjectType(format!("cannot change sequence \"{table}\"")));
        }
        debug_assert_eq!(target_entry.offset, 0, "the target's columns lead the joined row");
        let width = schema.columns.len();
        let mut binder = Binder::over(scope.clone(), Vec::new(), params).in_session(self);
        let change = compile_change(&mut binder, &schema)?;
        let filter = condition.map(|c| binder.scalar(c, "WHERE")).transpose()?;
        let returning = returning.map(|items| compile_returning(items, &scope, &mut binder)).transpose()?;
        // Uncorrelated subqueries run once, here; a correlated one is not supported.
        let resolve = |s: &Session, e: &Expr| -> DbResult<Expr> {
            let resolved = s.resolve_subqueries(e, None)?;
            if resolved.has_subquery() {
                return Err(DbError::Unsupported(
                    "a correlated subquery in UPDATE ... FROM or DELETE ... USING".into(),
                ));
            }
            Ok(resolved)
        };
        let filter = filter.map(|f| resolve(self, &f)).transpose()?;
        let change = match change {
            Change::Update(sets) => Change::Update(
                sets.into_iter().map(|(i, e)| Ok((i, resolve(self, &e)?))).collect::<DbResult<_>>()?,
            ),
            Change::Delete => Change::Delete,
        };
        let returning = returning
            .map(|(columns, exprs)| {
                Ok::<_, DbError>((
                    columns,
                    exprs.iter().map(|e| resolve(self, e)).collect::<DbResult<Vec<_>>>()?,
                ))
            })
            .transpose()?;

        let plan = self.plan_joins(scope, written, filter.clone(), &mut binder)?;
        let residual = plan.residual.clone();
        let joined = self.run_joins(&plan, &|f, row| f.holds(row, &[]))?;
        let mut output = Vec::new();
        let changed = self.statement(|s| {
            let mut touched: BTreeSet<Key> = BTreeSet::new();
            let mut changed = 0u64;
            for mut row in joined {
                if !residual.as_ref().map_or(Ok(true), |r| r.holds(&row, &[]))? {
                    continue;
                }
                let key = schema.key_of(&row[..width]);
                if touched.contains(&key) {
                    continue;
                }
                // The target row as it is now, under its lock, and the WHERE on it.
                let (current, _) = s.lock_then_read(&table, &key)?;
                let Some(current) = current else { continue };
                row[..width].clone_from_slice(&current);
                if !filter.as_ref().map_or(Ok(true), |f| f.holds(&row, &[]))? {
                    continue;
                }
                touched.insert(key.clone());
                match &change {
                    Change::Update(sets) => {
                        let mut new_row: Vec<Value> = row[..width].to_vec();
                        for (column, e) in sets {
                            new_row[*column] = assignable(e.eval(&row, &[])?, &schema.columns[*column])?;
                        }
                        let stored = s.update_locked(&table, &schema, &key, Row::from(new_row))?;
                        row[..width].clone_from_slice(&stored);
                    }
                    Change::Delete => s.delete_locked(&table, &key)?,
                }
                changed += 1;
                if let Some((_, exprs)) = &returning {
                    output.push(exprs.iter().map(|e| e.eval(&row, &[])).collect::<DbResult<Vec<_>>>()?);
                }
            }
            Ok(changed)
        })?;
        let verb = if matches!(change, Change::Delete) { "DELETE" } else { "UPDATE" };
        let tag = count_tag(verb, changed);
        Ok(match returning {
            None => QueryResult::command(tag, changed),
            Some((columns, _)) => QueryResult::Rows { columns, rows: output, command: Some(tag) },
        })
    }
}

/// An UPDATE ... FROM or a DELETE ... USING: its verb, its target, the other relations
/// and its WHERE. None for another statement.
pub(crate) fn joined_parts(
    statement: &ast::Statement,
) -> Option<(&'static str, &ast::TableWithJoins, &[ast::TableWithJoins], Option<&ast::Expr>)> {
    match statement {
        ast::Statement::Update(ast::Update { table, from: Some(from), selection, .. }) => {
            let (ast::UpdateTableFromKind::AfterSet(others) | ast::UpdateTableFromKind::BeforeSet(others)) =
                from;
            Some(("Update", table, others, selection.as_ref()))
        }
        ast::Statement::Delete(ast::Delete { from, using: Some(using), selection, .. }) => {
            let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) = from;
            Some(("Delete", from.first()?, using, selection.as_ref()))
        }
        _ => None,
    }
}

/// The query EXPLAIN shows the join of an UPDATE ... FROM or DELETE ... USING by: a
/// SELECT of the same FROM clause (the target first) and WHERE, planned as the
/// statement's join is.
pub(crate) fn joined_query(
    target: &ast::TableWithJoins,
    others: &[ast::TableWithJoins],
    condition: Option<&ast::Expr>,
) -> DbResult<ast::Query> {
    let from: Vec<String> = std::iter::once(target).chain(others).map(|t| t.to_string()).collect();
    let mut sql = format!("SELECT * FROM {}", from.join(", "));
    if let Some(condition) = condition {
        sql.push_str(&format!(" WHERE {condition}"));
    }
    let statements = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &sql)
        .map_err(|e| DbError::Unsupported(format!("EXPLAIN of this join (as the query {sql}: {e})")))?;
    match statements.into_iter().next() {
        Some(ast::Statement::Query(query)) => Ok(*query),
        _ => Err(DbError::Unsupported(format!("EXPLAIN of this join (as the query {sql})"))),
    }
}

/// RETURNING over the joined row: `*` is every relation's columns, `t.*` one's.
fn compile_returning(
    items: &[ast::SelectItem],
    scope: &Scope,
    binder: &mut Binder,
) -> DbResult<(Vec<ResultColumn>, Vec<Expr>)> {
    let types = scope.types();
    let mut columns = Vec::new();
    let mut exprs = Vec::new();
    let mut push = |name: String, expr: Expr| {
        columns.push(ResultColumn { name, ty: expr.static_type(&types, &[]) });
        exprs.push(expr);
    };
    for item in items {
        match item {
            ast::SelectItem::UnnamedExpr(e) => push(column_name(e), binder.scalar(e, "RETURNING")?),
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                push(ident_name(alias), binder.scalar(expr, "RETURNING")?)
            }
            ast::SelectItem::Wildcard(_) => {
                for (name, i) in scope.star(None)? {
                    push(name, Expr::Column(i));
                }
            }
            ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(q), _) => {
                for (name, i) in scope.star(Some(&object_name(q)?))? {
                    push(name, Expr::Column(i));
                }
            }
            other => return Err(DbError::Unsupported(format!("RETURNING {other}"))),
        }
    }
    Ok((columns, exprs))
}
