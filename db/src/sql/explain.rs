//! EXPLAIN: the access path a SELECT, UPDATE or DELETE takes to its rows, told without
//! running it, in PostgreSQL's layout (one column, `QUERY PLAN`, a line per row), so a
//! DBA can see that a point or range predicate on the primary key does not scan:
//!
//! ```text
//! Index Scan using t_pkey on t  (1 key)      a point lookup per key
//! Index Range Scan using t_pkey on t         keys within bounds, in order
//! Seq Scan on t                              every row
//! Result  (no row can match)                 the WHERE is never true: nothing is read
//!   Filter: <the WHERE>                      what each row read is checked against
//! ```
//!
//! The path is the one the statement would take: the same planner (`access::plan`) on
//! the same compiled WHERE, with the bind values given. An UPDATE, DELETE or INSERT is
//! compiled as it would run (unknown tables and columns are errors); a SELECT's WHERE is,
//! its select list is not looked at.

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::sql::access::{plan, Access};
use crate::sql::exec::{QueryResult, ResultColumn};
use crate::sql::expr::{Binder, Relation};
use crate::value::{DataType, Value};

impl Session {
    /// `EXPLAIN statement`: its plan as rows of text.
    pub(crate) fn explain(&mut self, statement: &ast::Statement, params: &[Value]) -> DbResult<QueryResult> {
        let unsupported = || DbError::Unsupported(format!("EXPLAIN of {}", first_words(statement)));
        let mut lines = Vec::new();
        match statement {
            ast::Statement::Query(query) => {
                let ast::SetExpr::Select(select) = query.body.as_ref() else { return Err(unsupported()) };
                match self.relation_of(&select.from)? {
                    Some(relation) => {
                        self.explain_access(&relation, select.selection.as_ref(), params, 0, &mut lines)?
                    }
                    None => lines.push("Result".to_string()),
                }
            }
            ast::Statement::Update(update) => {
                // Compiled as it would run: its table, columns and WHERE checked.
                let compiled = self.compile_update(update, Some(params))?;
                lines.push(format!("Update on {}", compiled.relation().name));
                self.explain_access(compiled.relation(), update.selection.as_ref(), params, 1, &mut lines)?;
            }
            ast::Statement::Delete(delete) => {
                let compiled = self.compile_delete(delete, Some(params))?;
                lines.push(format!("Delete on {}", compiled.relation().name));
                self.explain_access(compiled.relation(), delete.selection.as_ref(), params, 1, &mut lines)?;
            }
            ast::Statement::Insert(insert) => {
                // Its table and target columns checked.
                self.insert_target(insert)?;
                lines.push(format!("Insert on {}", insert.table));
                let source = match insert.source.as_ref().map(|s| s.body.as_ref()) {
                    Some(ast::SetExpr::Values(values)) => format!("Values  ({} rows)", values.rows.len()),
                    _ => "Query".to_string(),
                };
                lines.push(format!("  ->  {source}"));
            }
            _ => return Err(unsupported()),
        }
        let column = ResultColumn { name: "QUERY PLAN".into(), ty: Some(DataType::Text { max_chars: None }) };
        Ok(QueryResult::rows_of_query(
            vec![column],
            lines.into_iter().map(|l| vec![Value::Text(l)]).collect(),
        ))
    }

    /// The lines of the access to `relation` with `selection` as the WHERE, nested under
    /// `depth` plan nodes.
    fn explain_access(
        &self,
        relation: &Relation,
        selection: Option<&ast::Expr>,
        params: &[Value],
        depth: usize,
        lines: &mut Vec<String>,
    ) -> DbResult<()> {
        let name = &relation.name;
        let filter = selection
            .map(|e| Binder::new(Some(relation), params).in_session(self).scalar(e, "WHERE"))
            .transpose()?;
        let node = if crate::views::is_view(name) {
            format!("Seq Scan on {name}  (a v$ view, built for the statement)")
        } else {
            match plan(&relation.schema, filter.as_ref()) {
                Access::Points(keys) => format!(
                    "Index Scan using {name}_pkey on {name}  ({} key{})",
                    keys.len(),
                    if keys.len() == 1 { "" } else { "s" }
                ),
                Access::Range { .. } => format!("Index Range Scan using {name}_pkey on {name}"),
                Access::Full => format!("Seq Scan on {name}"),
                Access::Empty => "Result  (no row can match)".to_string(),
            }
        };
        let (node_indent, detail_indent) = match depth {
            0 => (String::new(), "  ".to_string()),
            d => (format!("{}->  ", " ".repeat(2 + 6 * (d - 1))), " ".repeat(8 + 6 * (d - 1))),
        };
        lines.push(format!("{node_indent}{node}"));
        if let Some(selection) = selection {
            lines.push(format!("{detail_indent}Filter: {selection}"));
        }
        Ok(())
    }
}

/// The statement's first two words, upper case (for "EXPLAIN of ... is not supported").
fn first_words(statement: &ast::Statement) -> String {
    let text = statement.to_string();
    text.split_whitespace().take(2).collect::<Vec<_>>().join(" ").to_uppercase()
}
