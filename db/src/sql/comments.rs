//! `COMMENT ON TABLE | VIEW | SEQUENCE name IS 'text' | NULL` and `COMMENT ON COLUMN
//! table.column IS ...`: kept in the relation's schema (logged and recovered as any
//! schema change), read through pg_description, `obj_description` and `col_description`
//! (psql's `\d+` and `\dt+`, SQLAlchemy's and Alembic's table and column comments).

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::sql::exec::QueryResult;
use crate::sql::expr::ident_name;

impl Session {
    pub(crate) fn comment_statement(
        &mut self,
        object_type: &ast::CommentObject,
        object_name: &ast::ObjectName,
        comment: Option<&str>,
    ) -> DbResult<QueryResult> {
        use ast::CommentObject as O;
        let parts: Vec<String> = object_name
            .0
            .iter()
            .map(|p| p.as_ident().map(ident_name).unwrap_or_else(|| p.to_string()))
            .collect();
        // A name may carry the public schema, as PostgreSQL's may.
        let parts = match parts.split_first() {
            Some((schema, rest)) if schema == "public" && !rest.is_empty() => rest.to_vec(),
            _ => parts,
        };
        let comment = comment.filter(|c| !c.is_empty()).map(str::to_string);
        match object_type {
            O::Table | O::View | O::Sequence => {
                let [table] = parts.as_slice() else {
                    return Err(DbError::Unsupported(format!("COMMENT ON {object_type} {object_name}")));
                };
                let schema = self.schema_of(table)?;
                let kind = if schema.view.is_some() {
                    O::View
                } else if schema.sequence.is_some() {
                    O::Sequence
                } else {
                    O::Table
                };
                if kind != *object_type {
                    return Err(DbError::WrongObjectType(format!(
                        "\"{table}\" is not a {}",
                        object_type.to_string().to_lowercase()
                    )));
                }
                self.alter_schema(table, |schema| {
                    schema.comment = comment;
                    Ok(())
                })?;
            }
            O::Column => {
                let [table, column] = parts.as_slice() else {
                    return Err(DbError::Unsupported(format!(
                        "COMMENT ON COLUMN {object_name} (table.column)"
                    )));
                };
                self.alter_schema(table, |schema| {
                    let index =
                        schema.visible_columns().iter().position(|c| &c.name == column).ok_or_else(|| {
                            DbError::UnknownColumn(format!("{column}\" of relation \"{table}"))
                        })?;
                    schema.column_comments.retain(|(c, _)| *c != index);
                    if let Some(text) = comment {
                        schema.column_comments.push((index, text));
                        schema.column_comments.sort();
                    }
                    Ok(())
                })?;
            }
            other => return Err(DbError::Unsupported(format!("COMMENT ON {other}"))),
        }
        Ok(QueryResult::command("COMMENT", 0))
    }
}
