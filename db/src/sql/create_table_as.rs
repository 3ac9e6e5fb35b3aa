//! `CREATE TABLE name AS query`: a table of the query's result columns (their names;
//! their types, or the values' where the query does not say), filled with its rows: a
//! table without a primary key (keyed by a hidden row id), as PostgreSQL's CTAS makes.
//! Like any DDL here it commits, the table and its rows at once; if the rows cannot be
//! stored the table is dropped again.

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::schema::{Column, TableSchema};
use crate::sql::exec::QueryResult;
use crate::value::DataType;

impl Session {
    pub(crate) fn create_table_as(
        &mut self,
        create: &ast::CreateTable,
        query: &ast::Query,
    ) -> DbResult<QueryResult> {
        if create.or_replace || create.external || create.like.is_some() {
            return Err(DbError::Unsupported("this form of CREATE TABLE ... AS".into()));
        }
        if !create.constraints.is_empty() {
            return Err(DbError::Unsupported("constraints in CREATE TABLE ... AS".into()));
        }
        let (temporary, name) = self.table_to_create(create)?;
        if create.if_not_exists && self.db.read_catalog(|st| st.has_table(&name)) {
            self.notices.push(crate::error::Notice::with_state(
                "42P07",
                format!("relation \"{}\" already exists, skipping", crate::temp_tables::visible_name(&name)),
            ));
            return Ok(QueryResult::command("CREATE TABLE AS", 0));
        }
        if crate::sql::dml_with::modifies_data(query) {
            // Its changes would be committed by the DDL apart from the table's creation.
            return Err(DbError::Unsupported("CREATE TABLE ... AS with a data-modifying WITH query".into()));
        }
        let out = self.run_query(query, &[])?;
        let mut rows = out.rows;
        if !create.columns.is_empty() {
            return Err(DbError::Unsupported("column definitions in CREATE TABLE ... AS".into()));
        }
        let mut columns: Vec<Column> = Vec::with_capacity(out.columns.len());
        for (i, result) in out.columns.iter().enumerate() {
            let name = result.name.clone();
            // The query's type; else the first value's; else text (PostgreSQL's unknown
            // literals become text too).
            let ty = result
                .ty
                .or_else(|| rows.iter().find_map(|r| r[i].data_type()))
                .unwrap_or(DataType::Text { max_chars: None });
            columns.push(Column { name, ty, nullable: true });
        }
        // No record is stored (records are values of queries only).
        if let Some(c) = columns.iter().find(|c| matches!(c.ty, DataType::Record(_))) {
            return Err(DbError::Unsupported(format!("the column \"{}\" of type record in a table", c.name)));
        }
        let schema = TableSchema::new(&name, columns, Vec::new())?;
        self.create_table(schema)?;
        let filled = self.insert_target_of(name.clone(), &[], None, None).and_then(|target| {
            let count = rows.len() as u64;
            self.insert_rows(&target, &mut rows, None, &[])?;
            self.commit(redo::CommitOptions::DEFAULT)?;
            Ok(count)
        });
        match filled {
            Ok(count) => {
                // Its ON COMMIT action from the next commit on: this one made it.
                self.temporary_table_made(&name, temporary);
                Ok(QueryResult::command(crate::sql::exec::count_tag("SELECT", count), count))
            }
            Err(e) => {
                self.rollback();
                let _ = self.drop_table(&name);
                Err(e)
            }
        }
    }
}
