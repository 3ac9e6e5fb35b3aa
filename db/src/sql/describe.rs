//! Describing a prepared statement without running it for effect: how many `$n` bind
//! parameters it takes, the type each one is compared with or assigned to (when the
//! statement tells), and the columns it returns (None for a statement that returns no
//! rows). A wire server answers a client's Describe with this (PostgreSQL's
//! ParameterDescription and RowDescription or NoData).

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::database::Session;
use crate::error::DbResult;
use crate::schema::TableSchema;
use crate::sql::exec::{Prepared, ResultColumn};
use crate::sql::expr::{ident_name, object_name, sql_type};
use crate::sql::oracle::Special;
use crate::sql::prepared::PreparedStatement;
use crate::value::{DataType, Value};

/// What a prepared statement takes and returns.
#[derive(Clone, Debug, PartialEq)]
pub struct StatementDescription {
    /// One entry per bind parameter `$1..$n`: the type the statement gives it (the column
    /// it is assigned to or compared with, or an explicit cast), None when it does not tell.
    pub parameters: Vec<Option<DataType>>,
    /// The result columns of a statement that returns rows; None for one that does not
    /// (INSERT, UPDATE, DELETE without RETURNING, DDL, transaction control, SET).
    pub columns: Option<Vec<ResultColumn>>,
}

impl PreparedStatement {
    /// Whether the statement returns rows (a query, SHOW, SHOW PARAMETER, a DML statement
    /// with RETURNING), told without running it.
    pub fn returns_rows(&self) -> bool {
        match self.parsed.as_ref() {
            Prepared::Sql(sql) => match sql.as_ref() {
                ast::Statement::Query(query) => crate::sql::dml_with::query_returns_rows(query),
                ast::Statement::Explain { .. } => true,
                ast::Statement::Insert(insert) => insert.returning.is_some(),
                ast::Statement::Update(update) => update.returning.is_some(),
                ast::Statement::Delete(delete) => delete.returning.is_some(),
                _ => false,
            },
            Prepared::Special(special) => matches!(special, Special::ShowParameter(_) | Special::PgShow(_)),
            Prepared::Awr(_) => true,
            Prepared::AlterSequence(_) | Prepared::Empty => false,
        }
    }
}

impl PreparedStatement {
    /// Whether the statement is a query with data-modifying WITH queries (which no
    /// cursor may hold: PostgreSQL's 0A000).
    pub fn has_data_modifying_with(&self) -> bool {
        matches!(self.parsed.as_ref(), Prepared::Sql(sql)
            if matches!(sql.as_ref(), ast::Statement::Query(q) if crate::sql::dml_with::modifies_data(q)))
    }

    /// Whether the statement is a query: it returns rows and changes none (a DECLAREd
    /// cursor's must be one).
    pub fn is_query(&self) -> bool {
        self.returns_rows() && !matches!(self.parsed.as_ref(), Prepared::Sql(sql) if changes_rows(sql))
    }
}

/// Whether running `statement` changes rows: DML, or EXPLAIN ANALYZE of DML.
fn changes_rows(statement: &ast::Statement) -> bool {
    match statement {
        ast::Statement::Insert(_) | ast::Statement::Update(_) | ast::Statement::Delete(_) => true,
        ast::Statement::Query(query) => crate::sql::dml_with::modifies_data(query),
        ast::Statement::Explain { statement, analyze, options, .. } => {
            let analyze = *analyze
                || options.iter().flatten().any(|o| {
                    o.name.value.eq_ignore_ascii_case("analyze")
                        && o.arg.as_ref().is_none_or(|a| {
                            !matches!(
                                a.to_string().to_ascii_uppercase().as_str(),
                                "FALSE" | "OFF" | "0" | "NO"
                            )
                        })
                });
            analyze && changes_rows(statement)
        }
        _ => false,
    }
}

impl Session {
    /// The bind parameters of `statement`: one entry per `$1..$n`, with the type the
    /// statement gives it when it tells. Runs nothing.
    pub fn describe_parameters(&self, statement: &PreparedStatement) -> Vec<Option<DataType>> {
        let mut parameters = vec![None; parameter_count(statement.sql())];
        if let Prepared::Sql(sql) = statement.parsed.as_ref() {
            self.infer_parameter_types(sql, &mut parameters);
        }
        parameters
    }

    /// Describes `statement`. A query's columns are found by running it once with every
    /// parameter NULL (which changes nothing); no other statement runs.
    pub fn describe_prepared(&mut self, statement: &PreparedStatement) -> DbResult<StatementDescription> {
        let parameters = self.describe_parameters(statement);
        let columns = match statement.parsed.as_ref() {
            Prepared::Special(Special::ShowParameter(_) | Special::PgShow(_)) => {
                // Run outside a user call: describing is no execution of it (v$sql).
                Some(self.run_prepared(&statement.parsed, &statement.compiled, &[])?.columns().to_vec())
            }
            Prepared::Sql(sql) => match sql.as_ref() {
                // Never run: it would change rows.
                ast::Statement::Query(query) if crate::sql::dml_with::modifies_data(query) => {
                    self.describe_data_modifying_with(query, &vec![Value::Null; parameters.len()])?
                }
                ast::Statement::Query(query) => {
                    let nulls = vec![Value::Null; parameters.len()];
                    // The compiled plan tells the columns when it knows every type;
                    // otherwise a run with NULL parameters shows the values' types. A FOR
                    // UPDATE query is never run: it would lock rows.
                    match self.plan_query(query, &nulls)? {
                        Some(plan) if plan.for_update || plan.columns().iter().all(|c| c.ty.is_some()) => {
                            Some(plan.columns().to_vec())
                        }
                        _ => Some(self.run_query(query, &nulls)?.columns),
                    }
                }
                // Its one text column. The statement is explained, not run (EXPLAIN
                // ANALYZE would run it), so its errors show here as they will at Execute.
                ast::Statement::Explain { statement, analyze, options, .. } => {
                    crate::sql::explain::ExplainOptions::parse(*analyze, options.as_deref())?;
                    let nulls = vec![Value::Null; parameters.len()];
                    self.explain(statement, &nulls, crate::sql::explain::ExplainOptions::default())?;
                    Some(vec![crate::sql::explain::plan_column()])
                }
                // RETURNING's columns, from the table's schema (the statement does not run).
                other => self.returning_columns(other, &vec![Value::Null; parameters.len()])?,
            },
            Prepared::Awr(call) => Some(call.result_columns()),
            Prepared::Special(_) | Prepared::AlterSequence(_) | Prepared::Empty => None,
        };
        Ok(StatementDescription { parameters, columns })
    }

    fn table_schema(&self, name: &ast::ObjectName) -> Option<std::sync::Arc<TableSchema>> {
        let name = self.relation_name(name).ok()?;
        self.db.read_catalog(|st| st.table(&name).ok().map(|t| t.schema.clone()))
    }

    /// Fills in the types the statement gives its parameters: the target column of an
    /// INSERT value or UPDATE assignment, the column a parameter is compared with, a cast.
    fn infer_parameter_types(&self, statement: &ast::Statement, types: &mut [Option<DataType>]) {
        use ast::Statement as S;
        match statement {
            // EXPLAIN's parameters are its statement's.
            S::Explain { statement, .. } => self.infer_parameter_types(statement, types),
            S::Insert(insert) => {
                let ast::TableObject::TableName(table) = &insert.table else { return };
                let Some(schema) = self.table_schema(table) else { return };
                let targets: Vec<Option<DataType>> = if insert.columns.is_empty() {
                    schema.visible_columns().iter().map(|c| Some(c.ty)).collect()
                } else {
                    insert
                        .columns
                        .iter()
                        .map(|c| {
                            let name = object_name(c).ok()?;
                            schema.columns.iter().find(|col| col.name == name).map(|col| col.ty)
                        })
                        .collect()
                };
                let Some(source) = &insert.source else { return };
                if let ast::SetExpr::Values(values) = source.body.as_ref() {
                    for row in &values.rows {
                        for (expr, target) in row.iter().zip(&targets) {
                            assign(expr, *target, types);
                            infer_expr(expr, Some(&schema), types);
                        }
                    }
                }
            }
            S::Update(update) => {
                let ast::TableFactor::Table { name, .. } = &update.table.relation else { return };
                let schema = self.table_schema(name);
                for assignment in &update.assignments {
                    if let (ast::AssignmentTarget::ColumnName(target), Some(schema)) =
                        (&assignment.target, &schema)
                    {
                        let column = target.0.last().and_then(|p| p.as_ident()).map(ident_name);
                        let ty = column.and_then(|c| schema.columns.iter().find(|col| col.name == c));
                        assign(&assignment.value, ty.map(|c| c.ty), types);
                    }
                    infer_expr(&assignment.value, schema.as_deref(), types);
                }
                if let Some(selection) = &update.selection {
                    infer_expr(selection, schema.as_deref(), types);
                }
            }
            S::Delete(delete) => {
                let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                    &delete.from;
                let schema = from.first().and_then(|t| match &t.relation {
                    ast::TableFactor::Table { name, .. } => self.table_schema(name),
                    _ => None,
                });
                if let Some(selection) = &delete.selection {
                    infer_expr(selection, schema.as_deref(), types);
                }
            }
            S::Query(query) => {
                if let ast::SetExpr::Select(select) = query.body.as_ref() {
                    let schema = select.from.first().and_then(|t| match &t.relation {
                        ast::TableFactor::Table { name, .. } => self.table_schema(name),
                        _ => None,
                    });
                    for item in &select.projection {
                        if let ast::SelectItem::UnnamedExpr(e)
                        | ast::SelectItem::ExprWithAlias { expr: e, .. } = item
                        {
                            infer_expr(e, schema.as_deref(), types);
                        }
                    }
                    if let Some(selection) = &select.selection {
                        infer_expr(selection, schema.as_deref(), types);
                    }
                }
                if let Some(ast::LimitClause::LimitOffset { limit, offset, .. }) = &query.limit_clause {
                    if let Some(limit) = limit {
                        assign(limit, Some(DataType::Int), types);
                    }
                    if let Some(offset) = offset {
                        assign(&offset.value, Some(DataType::Int), types);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The number of bind parameters: the highest `$n` in the text (`:name` placeholders
/// numbered as the statement was: one each).
fn parameter_count(sql: &str) -> usize {
    let numbered = crate::sql::binds::number_placeholders(sql).ok().flatten();
    let sql = numbered.as_ref().map_or(sql, |n| n.text.as_str());
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else { return 0 };
    tokens
        .iter()
        .filter_map(|t| match t {
            Token::Placeholder(p) => p.strip_prefix('$')?.parse::<usize>().ok(),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// The index (0-based) of a bare `$n` parameter.
fn parameter_index(expr: &ast::Expr) -> Option<usize> {
    match expr {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Placeholder(p) => p.strip_prefix('$')?.parse::<usize>().ok()?.checked_sub(1),
            _ => None,
        },
        ast::Expr::Nested(inner) => parameter_index(inner),
        _ => None,
    }
}

/// Gives a bare parameter `expr` the type `ty`, unless it already has one.
fn assign(expr: &ast::Expr, ty: Option<DataType>, types: &mut [Option<DataType>]) {
    if let (Some(i), Some(ty)) = (parameter_index(expr), ty) {
        if let Some(slot) = types.get_mut(i) {
            slot.get_or_insert(ty);
        }
    }
}

/// The type of a column reference to `schema`.
fn column_type(expr: &ast::Expr, schema: Option<&TableSchema>) -> Option<DataType> {
    let name = match expr {
        ast::Expr::Identifier(ident) => ident_name(ident),
        ast::Expr::CompoundIdentifier(parts) => ident_name(parts.last()?),
        ast::Expr::Nested(inner) => return column_type(inner, schema),
        _ => return None,
    };
    schema?.columns.iter().find(|c| c.name == name).map(|c| c.ty)
}

/// Walks an expression: a parameter compared with a column takes its type, a cast
/// parameter the cast's type.
fn infer_expr(expr: &ast::Expr, schema: Option<&TableSchema>, types: &mut [Option<DataType>]) {
    use ast::Expr as E;
    match expr {
        E::BinaryOp { left, op, right } => {
            // An operand of the column's own type: not the key or path of a JSON
            // operator (`doc ->> $1`, `doc ? $1`, `doc - $1` take text or an integer).
            let other_side = |ty: Option<DataType>| match (op, ty) {
                (
                    ast::BinaryOperator::Arrow
                    | ast::BinaryOperator::LongArrow
                    | ast::BinaryOperator::HashArrow
                    | ast::BinaryOperator::HashLongArrow
                    | ast::BinaryOperator::Question,
                    _,
                ) => None,
                (ast::BinaryOperator::Minus, Some(DataType::Json | DataType::Jsonb)) => None,
                (_, ty) => ty,
            };
            assign(right, other_side(column_type(left, schema)), types);
            assign(left, other_side(column_type(right, schema)), types);
            infer_expr(left, schema, types);
            infer_expr(right, schema, types);
        }
        E::Between { expr, low, high, .. } => {
            let ty = column_type(expr, schema);
            assign(low, ty, types);
            assign(high, ty, types);
            for e in [expr, low, high] {
                infer_expr(e, schema, types);
            }
        }
        E::InList { expr, list, .. } => {
            let ty = column_type(expr, schema);
            for e in list {
                assign(e, ty, types);
                infer_expr(e, schema, types);
            }
        }
        E::Cast { expr, data_type, .. } => {
            assign(expr, sql_type(data_type).ok(), types);
            infer_expr(expr, schema, types);
        }
        E::Nested(inner) | E::UnaryOp { expr: inner, .. } | E::IsNull(inner) | E::IsNotNull(inner) => {
            infer_expr(inner, schema, types)
        }
        _ => {}
    }
}
