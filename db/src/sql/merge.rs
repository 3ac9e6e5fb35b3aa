//! `MERGE INTO target [AS t] USING source [AS s] ON condition WHEN [NOT] MATCHED [AND
//! condition] THEN UPDATE SET ... | DELETE | INSERT [(columns)] VALUES (...) | DO
//! NOTHING ...`: PostgreSQL 15's MERGE, and Oracle's (`UPDATE SET ... WHERE ...`,
//! `DELETE WHERE ...` after an update).
//!
//! The source is joined to the target with a LEFT JOIN on the condition, planned as any
//! join (`join.rs`: an index or hash join where the condition allows). For each joined
//! row the first WHEN clause of its kind whose condition holds acts: a source row that
//! matched a target row updates or deletes it; one that matched none inserts.
//!
//! A matched target row is locked, then read again: a row another transaction deleted
//! or changed so that the condition no longer holds is taken as not matched, as
//! PostgreSQL 15 does after its re-check. A target row that two source rows would change
//! is an error (21000), as in PostgreSQL and Oracle: the result would depend on the
//! order of the source.

use std::collections::BTreeSet;
use std::sync::Arc;

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::schema::{Key, Row, TableSchema};
use crate::sql::exec::{assignable, InsertTarget, QueryResult};
use crate::sql::expr::{Binder, Expr};
use crate::value::Value;

/// What a WHEN clause does.
enum Action {
    Update {
        /// (target column, value over the joined row)
        sets: Vec<(usize, Expr)>,
        /// Oracle's `UPDATE SET ... WHERE condition`: rows failing it are left alone.
        only_if: Option<Expr>,
        /// Oracle's `DELETE WHERE condition`, on the row as updated.
        delete_if: Option<Expr>,
    },
    Delete,
    Insert {
        target: Box<InsertTarget>,
        values: Vec<Expr>,
    },
    Nothing,
}

struct When {
    matched: bool,
    condition: Option<Expr>,
    action: Action,
}

/// Whether an optional condition (none: always) holds for the joined row.
fn holds(condition: &Option<Expr>, row: &[Value]) -> DbResult<bool> {
    condition.as_ref().map_or(Ok(true), |c| c.holds(row, &[]))
}

impl Session {
    pub(crate) fn merge_statement(&mut self, merge: &ast::Merge, params: &[Value]) -> DbResult<QueryResult> {
        if merge.output.is_some() || !merge.optimizer_hints.is_empty() {
            return Err(DbError::Unsupported("MERGE with OUTPUT or hints".into()));
        }
        let ast::TableFactor::Table { name, .. } = &merge.table else {
            return Err(DbError::Unsupported("MERGE into anything but a table".into()));
        };
        let table = self.relation_name(name)?;
        let from = vec![ast::TableWithJoins {
            relation: merge.source.clone(),
            joins: vec![ast::Join {
                relation: merge.table.clone(),
                global: false,
                join_operator: ast::JoinOperator::LeftOuter(ast::JoinConstraint::On((*merge.on).clone())),
            }],
        }];
        let (scope, written) = self.scope_of_from(&from, params, &[])?;
        let target_entry = scope.entries.last().expect("the target is in the scope").clone();
        let schema: Arc<TableSchema> = target_entry.relation.schema.clone();
        if target_entry.relation.derived.is_some() || crate::views::is_view(&table) || schema.view.is_some() {
            return Err(DbError::ObjectNotInPrerequisiteState(format!(
                "cannot execute MERGE on relation \"{table}\": it is not a table"
            )));
        }
        if schema.sequence.is_some() {
            return Err(DbError::WrongObjectType(format!("\"{table}\" is not a table")));
        }
        let offset = target_entry.offset;
        let width = schema.columns.len();
        let mut binder = Binder::over(scope.clone(), Vec::new(), params).in_session(self);
        let on = binder.scalar(&merge.on, "MERGE ... ON")?;
        let mut whens = Vec::new();
        for clause in &merge.clauses {
            let matched = match clause.clause_kind {
                ast::MergeClauseKind::Matched => true,
                ast::MergeClauseKind::NotMatched | ast::MergeClauseKind::NotMatchedByTarget => false,
                ast::MergeClauseKind::NotMatchedBySource => {
                    return Err(DbError::Unsupported("WHEN NOT MATCHED BY SOURCE".into()))
                }
            };
            let condition = clause.predicate.as_ref().map(|p| binder.scalar(p, "WHEN")).transpose()?;
            let action = match &clause.action {
                ast::MergeAction::Update(update) => {
                    if !matched {
                        return Err(syntax("UPDATE is not allowed in a WHEN NOT MATCHED clause"));
                    }
                    let ast::MergeUpdateKind::Set(assignments) = &update.kind else {
                        return Err(DbError::Unsupported("UPDATE SET * in MERGE".into()));
                    };
                    let mut sets: Vec<(usize, Expr)> = Vec::new();
                    for a in assignments {
                        let ast::AssignmentTarget::ColumnName(column) = &a.target else {
                            return Err(DbError::Unsupported("a tuple assignment in MERGE".into()));
                        };
                        // `SET t.c = ...` or `SET c = ...`: a column of the target.
                        let parts = &column.0;
                        let column_name = match parts.last().and_then(|p| p.as_ident()) {
                            Some(ident) => crate::sql::expr::ident_name(ident),
                            None => return Err(syntax("a column name in SET")),
                        };
                        let index = schema.column_index(&column_name)?;
                        if sets.iter().any(|(i, _)| *i == index) {
                            return Err(syntax(&format!(
                                "multiple assignments to same column \"{column_name}\""
                            )));
                        }
                        sets.push((index, binder.scalar(&a.value, "UPDATE SET")?));
                    }
                    let only_if = update
                        .update_predicate
                        .as_ref()
                        .map(|p| binder.scalar(p, "UPDATE WHERE"))
                        .transpose()?;
                    let delete_if = update
                        .delete_predicate
                        .as_ref()
                        .map(|p| binder.scalar(p, "DELETE WHERE"))
                        .transpose()?;
                    Action::Update { sets, only_if, delete_if }
                }
                ast::MergeAction::Delete { .. } => {
                    if !matched {
                        return Err(syntax("DELETE is not allowed in a WHEN NOT MATCHED clause"));
                    }
                    Action::Delete
                }
                ast::MergeAction::Insert(insert) => {
                    if matched {
                        return Err(syntax("INSERT is not allowed in a WHEN MATCHED clause"));
                    }
                    if insert.insert_predicate.is_some() {
                        return Err(DbError::Unsupported("INSERT ... WHERE in MERGE".into()));
                    }
                    let values: Vec<&ast::Expr> = match &insert.kind {
                        ast::MergeInsertKind::Values(values) if values.rows.len() == 1 => {
                            values.rows[0].content.iter().collect()
                        }
                        ast::MergeInsertKind::Values(_) => {
                            return Err(syntax("MERGE's INSERT takes one row of VALUES"))
                        }
                        _ => return Err(DbError::Unsupported("INSERT ROW in MERGE".into())),
                    };
                    let target =
                        self.insert_target_of(table.clone(), &insert.columns, Some(values.len()), None)?;
                    let values =
                        values.iter().map(|e| binder.scalar(e, "VALUES")).collect::<DbResult<Vec<_>>>()?;
                    Action::Insert { target: Box::new(target), values }
                }
                ast::MergeAction::DoNothing { .. } => Action::Nothing,
            };
            whens.push(When { matched, condition, action });
        }
        let plan = self.plan_joins(scope, written, None, &mut binder)?;
        let residual = plan.residual.clone();
        let joined = self.run_joins(&plan, &|f, row| f.holds(row, &[]))?;
        let key_column =
            schema.primary_key.first().copied().or(schema.rowid_index()).expect("a table has a key");

        let changed = self.statement(|s| {
            let mut changed = 0u64;
            let mut touched: BTreeSet<Key> = BTreeSet::new();
            for mut row in joined {
                if !holds(&residual, &row)? {
                    continue;
                }
                let mut matched = !row[offset + key_column].is_null();
                let mut key = None;
                if matched {
                    // The target row as it is now, under its lock.
                    let k = schema.key_of(&row[offset..offset + width]);
                    let (current, _) = s.lock_then_read(&table, &k)?;
                    match current {
                        Some(current) => {
                            row[offset..offset + width].clone_from_slice(&current);
                            matched = on.holds(&row, &[])?;
                        }
                        None => matched = false,
                    }
                    if matched {
                        key = Some(k);
                    } else {
                        row[offset..offset + width].fill(Value::Null);
                    }
                }
                // The first clause of its kind whose condition holds (an error in a
                // condition is the statement's, not a false).
                let mut chosen = None;
                for w in whens.iter().filter(|w| w.matched == matched) {
                    if holds(&w.condition, &row)? {
                        chosen = Some(w);
                        break;
                    }
                }
                let Some(when) = chosen else { continue };
                if let Some(key) = &key {
                    if !matches!(when.action, Action::Nothing) && !touched.insert(key.clone()) {
                        return Err(DbError::MergeRowTwice);
                    }
                }
                match &when.action {
                    Action::Nothing => {}
                    Action::Delete => {
                        s.delete_locked(&table, key.as_ref().expect("a matched row"))?;
                        changed += 1;
                    }
                    Action::Update { sets, only_if, delete_if } => {
                        if !holds(only_if, &row)? {
                            continue;
                        }
                        let key = key.as_ref().expect("a matched row");
                        let mut new_row: Vec<Value> = row[offset..offset + width].to_vec();
                        for (column, e) in sets {
                            new_row[*column] = assignable(e.eval(&row, &[])?, &schema.columns[*column])?;
                        }
                        let stored = s.update_locked(&table, &schema, key, Row::from(new_row))?;
                        changed += 1;
                        if delete_if.is_some() {
                            row[offset..offset + width].clone_from_slice(&stored);
                            if holds(delete_if, &row)? {
                                s.delete_locked(&table, &schema.key_of(&stored))?;
                            }
                        }
                    }
                    Action::Insert { target, values } => {
                        let values =
                            values.iter().map(|e| e.eval(&row, &[])).collect::<DbResult<Vec<_>>>()?;
                        s.insert_rows(target, &mut [values], None, params)?;
                        changed += 1;
                    }
                }
            }
            Ok(changed)
        })?;
        Ok(QueryResult::command("MERGE", changed))
    }
}

fn syntax(message: &str) -> DbError {
    DbError::Syntax { message: message.to_string(), position: 0 }
}
