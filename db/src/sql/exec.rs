//! The SQL executor: [`Session::execute`] runs one statement with `$n` bind values,
//! [`Session::execute_batch`] a string of several.
//!
//! A statement goes first to `oracle::parse_special` (COMMIT [WRITE ...], ROLLBACK,
//! BEGIN, ALTER SESSION/SYSTEM SET, SET/RESET/SHOW, SAVEPOINT, ROLLBACK TO, RELEASE),
//! then to `sqlparser` (PostgreSQL dialect): CREATE TABLE, DROP TABLE, TRUNCATE, INSERT,
//! UPDATE, DELETE, SELECT, VALUES.
//!
//! Every DML statement is atomic: it runs inside `Session::statement`, so a failure on
//! its third row undoes its first two and leaves the transaction's earlier statements
//! alone. Savepoints reuse that undo (`Session::savepoint`). UPDATE and DELETE find their
//! rows as the transaction sees them when the statement starts, then lock each
//! (`select_for_update`: it may wait for another transaction), re-read it and check the
//! WHERE again on the row as it is now: a row changed meanwhile so that it no longer
//! matches is skipped, a row deleted meanwhile is skipped, and the new values are
//! computed from the re-read row (PostgreSQL's READ COMMITTED and Oracle's restart-free
//! case). DDL commits the open transaction first and runs as its own (as in Oracle).
//!
//! INSERT, UPDATE and DELETE take `RETURNING` (expressions, `*`, `t.*`) and then return
//! rows, with their own command tag ("INSERT 0 2"): the new rows as stored for INSERT and
//! UPDATE, the old ones for DELETE. The list is compiled with the rest of the statement,
//! into a prepared statement's template too; a statement without one pays an `Option`
//! check.
//!
//! Transactions follow Oracle: one starts with the first change and lasts until COMMIT or
//! ROLLBACK (a session never autocommits); BEGIN only marks the start.
//!
//! Parameters go to `params`: `ALTER SESSION|SYSTEM SET name = value ...` (a session's
//! assignments apply all or none), `SHOW PARAMETER[S] [filter]` (rows name, type, value),
//! and PostgreSQL's `SET name = value` / `RESET name` / `RESET ALL` / `SHOW name` /
//! `SHOW ALL`, with `synchronous_commit` (`off` is commit_wait NOWAIT for the session, the
//! other values WAIT). `SET LOCAL` and `SCOPE = SPFILE` are not supported (0A000): a
//! wire server implements SET LOCAL (and undoes SETs at ROLLBACK) with
//! `Session::session_parameters` / `restore_session_parameters`, since only it knows
//! where a PostgreSQL client's transactions end.
//!
//! A multi-statement call (`execute_batch`) applies Oracle's call-level commit
//! optimisation when `call_commit_optimization` is on: its COMMITs do not wait for the
//! log writer one by one; the call waits once, at its end, for the last of them.

use std::borrow::Cow;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

use redo::{CommitOptions, CommitWait};
use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};

use crate::database::ReturnedRows;
use crate::database::{Session, SqlText};
use crate::error::{DbError, DbResult};
use crate::schema::{Column, Key, Row, TableSchema};
use crate::sql::access::{count_visit, plan, Access};
use crate::sql::cache::StatementStats;
use crate::sql::explain::ExplainOptions;
use crate::sql::expr::{
    float_to_int, ident_name, object_name, sql_type, truth, Binder, Expr, Relation, Template,
};
use crate::sql::oracle::{self, Piece, Scope, Special};
use crate::sql::point_select::PointSelect;
use crate::sql::query::{column_name, fill_types, values_output};
use crate::value::{DataType, Value};

/// One column of a query result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultColumn {
    pub name: String,
    /// The column's type; None when it cannot be told (every value NULL, or a bare
    /// parameter).
    pub ty: Option<DataType>,
}

/// What a statement returned.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryResult {
    /// A query's rows, or the rows of an INSERT, UPDATE or DELETE with RETURNING, whose
    /// `command` tag ("INSERT 0 2") replaces a query's "SELECT n".
    Rows { columns: Vec<ResultColumn>, rows: Vec<Vec<Value>>, command: Option<Tag> },
    /// Any other statement: its PostgreSQL command tag ("INSERT 0 3", "UPDATE 2",
    /// "CREATE TABLE", "COMMIT", ...; empty for an empty statement) and the number of rows
    /// it changed.
    Command { tag: Tag, rows_affected: u64 },
}

/// A command tag: the common ones ("COMMIT", "UPDATE 1") are static text, so a statement's
/// result does not allocate its tag, nor the server its copy of it.
pub type Tag = std::borrow::Cow<'static, str>;

impl QueryResult {
    pub(crate) fn command(tag: impl Into<Tag>, rows_affected: u64) -> QueryResult {
        QueryResult::Command { tag: tag.into(), rows_affected }
    }

    /// A query's rows.
    pub fn rows_of_query(columns: Vec<ResultColumn>, rows: Vec<Vec<Value>>) -> QueryResult {
        QueryResult::Rows { columns, rows, command: None }
    }

    /// The command tag PostgreSQL would send ("SELECT n" for a query's rows).
    pub fn tag(&self) -> Tag {
        match self {
            QueryResult::Rows { command: Some(tag), .. } => tag.clone(),
            QueryResult::Rows { rows, .. } => count_tag("SELECT", rows.len() as u64),
            QueryResult::Command { tag, .. } => tag.clone(),
        }
    }

    /// The rows of a query (none for a command).
    pub fn rows(&self) -> &[Vec<Value>] {
        match self {
            QueryResult::Rows { rows, .. } => rows,
            QueryResult::Command { .. } => &[],
        }
    }

    /// The columns of a query (none for a command).
    pub fn columns(&self) -> &[ResultColumn] {
        match self {
            QueryResult::Rows { columns, .. } => columns,
            QueryResult::Command { .. } => &[],
        }
    }

    /// Rows changed by a command, rows returned by a query.
    pub fn rows_affected(&self) -> u64 {
        match self {
            QueryResult::Rows { rows, .. } => rows.len() as u64,
            QueryResult::Command { rows_affected, .. } => *rows_affected,
        }
    }
}

/// An UPDATE or DELETE compiled against its table's schema: the table, the assignments
/// (column, value), the WHERE and the RETURNING list. In a template (`template`) the bind
/// parameters are still `$n`, given values by `with_params` at each execution.
pub(crate) struct CompiledDml {
    relation: Relation,
    /// The assignments, by column in ascending order.
    sets: Vec<(usize, Template)>,
    filter: Option<Template>,
    returning: Option<Returning>,
}

/// One row of a compiled INSERT's values, on the stack for up to 8 columns.
type InsertValues = smallvec::SmallVec<[Value; 8]>;

/// An UPDATE's assignments with its parameters given (on the stack for a few columns).
type Assignments<'a> = smallvec::SmallVec<[(usize, Assigned<'a>); 4]>;

/// The rows a DML statement's WHERE picks, with its parameters given.
pub(crate) enum Picked<'a> {
    /// `key = $n` on a one-column primary key, `$n` bound to a value of the key column's
    /// own type: that one key, and nothing to evaluate on its row (the key lookup is the
    /// condition). The WHERE is neither copied with its parameters nor planned.
    Key(Key),
    /// Any other WHERE (None: no WHERE), with its parameters substituted.
    Filter(Option<Cow<'a, Expr>>),
}

impl CompiledDml {
    /// The table it changes.
    pub(crate) fn relation(&self) -> &Relation {
        &self.relation
    }

    /// The assignments and the rows the WHERE picks, with the parameters given `params`.
    fn with_params<'a>(
        &'a self,
        params: &'a [Value],
        session: &Session,
    ) -> DbResult<(Assignments<'a>, Picked<'a>)> {
        let mut sets = Assignments::new();
        for (i, e) in &self.sets {
            sets.push((
                *i,
                match e.lone_param(params) {
                    Some(value) => Assigned::Bound(value?),
                    None => match e.with_params(params, &|| session.transaction_timestamp())? {
                        Cow::Borrowed(e) => Assigned::Expr(e),
                        Cow::Owned(e) => Assigned::Owned(Box::new(e)),
                    },
                },
            ));
        }
        let schema = &self.relation.schema;
        if let (Some(filter), &[key_column]) = (&self.filter, schema.primary_key.as_slice()) {
            if let Some(value) = filter.column_equals_param(key_column, params) {
                let value = value?;
                if value.has_type(schema.columns[key_column].ty) {
                    return Ok((sets, Picked::Key(Key::from_elem(value.clone(), 1))));
                }
            }
        }
        let filter = self
            .filter
            .as_ref()
            .map(|f| f.with_params(params, &|| session.transaction_timestamp()))
            .transpose()?;
        Ok((sets, Picked::Filter(filter)))
    }
}

/// What an UPDATE assigns to a column: an expression over the row, or a bound value as
/// is (`SET c = $n`: no literal expression is built around a copy of the value).
/// (Small: an owned expression, made only where a parameter is inside one, is boxed.)
enum Assigned<'a> {
    Expr(&'a Expr),
    Owned(Box<Expr>),
    Bound(&'a Value),
}

impl Assigned<'_> {
    fn eval(&self, row: &[Value]) -> DbResult<Value> {
        match self {
            Assigned::Expr(e) => e.eval(row, &[]),
            Assigned::Owned(e) => e.eval(row, &[]),
            Assigned::Bound(value) => Ok((*value).clone()),
        }
    }
}

/// A DML statement's RETURNING list compiled against its table's rows: the result
/// columns (names, and the types known before running) and one expression per column
/// (templates in a compiled plan).
pub(crate) struct Returning {
    columns: Vec<ResultColumn>,
    exprs: Vec<Template>,
}

impl Returning {
    /// Compiles `items` (`RETURNING *`, `t.*`, expressions with or without aliases)
    /// against `relation`, whose binder `binder` is.
    pub(crate) fn compile(
        relation: &Relation,
        items: &[ast::SelectItem],
        binder: &mut Binder,
    ) -> DbResult<Returning> {
        let types: Vec<Option<DataType>> = relation.schema.columns.iter().map(|c| Some(c.ty)).collect();
        let mut returning = Returning { columns: Vec::new(), exprs: Vec::new() };
        let mut push = |name: String, expr: Expr| {
            returning.columns.push(ResultColumn { name, ty: expr.static_type(&types, &[]) });
            returning.exprs.push(Template::new(expr));
        };
        for item in items {
            match item {
                ast::SelectItem::UnnamedExpr(e) => push(column_name(e), binder.scalar(e, "RETURNING")?),
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    push(ident_name(alias), binder.scalar(expr, "RETURNING")?)
                }
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    if let ast::SelectItem::QualifiedWildcard(kind, _) = item {
                        let ast::SelectItemQualifiedWildcardKind::ObjectName(q) = kind else {
                            return Err(DbError::Unsupported(format!("RETURNING {item}")));
                        };
                        relation.check_qualifier(&object_name(q)?)?;
                    }
                    for (i, column) in relation.schema.visible_columns().iter().enumerate() {
                        push(column.name.clone(), Expr::Column(i));
                    }
                }
                other => return Err(DbError::Unsupported(format!("RETURNING {other}"))),
            }
        }
        Ok(returning)
    }
}

impl Returning {
    /// The list's expressions, one per column.
    pub(crate) fn into_exprs(self) -> Vec<Template> {
        self.exprs
    }
}

/// The rows a RETURNING list gives, gathered while its statement changes rows.
struct ReturningOutput<'a> {
    exprs: Vec<Cow<'a, Expr>>,
    rows: Vec<Vec<Value>>,
}

impl<'a> ReturningOutput<'a> {
    fn new(returning: &'a Returning, params: &[Value], session: &Session) -> DbResult<ReturningOutput<'a>> {
        let exprs = returning
            .exprs
            .iter()
            .map(|e| e.with_params(params, &|| session.transaction_timestamp()))
            .collect::<DbResult<_>>()?;
        Ok(ReturningOutput { exprs, rows: Vec::new() })
    }

    /// The RETURNING values of one row (as stored: the new row of an INSERT or UPDATE,
    /// the old row of a DELETE).
    fn add(&mut self, row: &[Value]) -> DbResult<()> {
        let values = self.exprs.iter().map(|e| e.eval(row, &[])).collect::<DbResult<Vec<_>>>()?;
        self.rows.push(values);
        Ok(())
    }
}

/// The tags of the counts a one-row statement gives, as static text.
const ONE_ROW_TAGS: [(&str, [&str; 2]); 4] = [
    ("INSERT 0", ["INSERT 0 0", "INSERT 0 1"]),
    ("UPDATE", ["UPDATE 0", "UPDATE 1"]),
    ("DELETE", ["DELETE 0", "DELETE 1"]),
    ("SELECT", ["SELECT 0", "SELECT 1"]),
];

/// A command tag that ends in a count ("UPDATE 1"), made without `format!`'s machinery
/// (a prepared UPDATE + COMMIT went from 12,373 to 12,082 instructions, callgrind), and
/// for a count of 0 or 1 not made at all.
pub(crate) fn count_tag(verb: &str, count: u64) -> Tag {
    if count <= 1 {
        if let Some((_, tags)) = ONE_ROW_TAGS.iter().find(|(v, _)| *v == verb) {
            return Tag::Borrowed(tags[count as usize]);
        }
    }
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(count);
    let mut tag = String::with_capacity(verb.len() + 1 + digits.len());
    tag.push_str(verb);
    tag.push(' ');
    tag.push_str(digits);
    Tag::Owned(tag)
}

/// A DML statement's result: its tag and count, with its RETURNING rows if it has the
/// list.
fn dml_result(tag: Tag, count: u64, returning: Option<(&Returning, ReturningOutput)>) -> QueryResult {
    match returning {
        None => QueryResult::command(tag, count),
        Some((returning, output)) => {
            let mut columns = returning.columns.clone();
            fill_types(&mut columns, &output.rows);
            QueryResult::Rows { columns, rows: output.rows, command: Some(tag) }
        }
    }
}

/// A prepared statement's compiled form (its execution plan), valid while its table's
/// schema is the one it was compiled against.
pub(crate) enum Compiled {
    Dml(CompiledDml),
    /// INSERT ... VALUES: the rows, one template per target column, and the RETURNING.
    InsertValues {
        /// The table and target columns, resolved once.
        target: InsertTarget,
        rows: Vec<Vec<Template>>,
        returning: Option<Returning>,
    },
    /// A SELECT of one row by its primary key (`point_select`).
    PointSelect(PointSelect),
    /// A SELECT that is planned at each execution (not a point SELECT).
    PlannedEachTime,
}

impl Compiled {
    /// The table it was compiled against (None: it depends on no table's schema as
    /// such, and is compiled again after any DDL).
    fn table(&self) -> Option<(&str, &Arc<TableSchema>)> {
        match self {
            Compiled::Dml(dml) => Some((&dml.relation.name, &dml.relation.schema)),
            Compiled::InsertValues { target, .. } => Some((&target.table, &target.schema)),
            Compiled::PointSelect(point) => Some((&point.relation.name, &point.relation.schema)),
            Compiled::PlannedEachTime => None,
        }
    }
}

/// INSERT's table (with its alias, for RETURNING) and the columns its values go to.
pub(crate) struct InsertTarget {
    table: String,
    alias: Option<String>,
    schema: Arc<TableSchema>,
    targets: Vec<usize>,
    /// `ON CONFLICT ...`: what a row that would repeat a key does instead.
    on_conflict: Option<OnConflict>,
    /// The defaults of the columns the INSERT gives no value: (column, expression), with
    /// `now()` and the like read at each row's insert (`Template::with_params`).
    defaults: Vec<(usize, Template)>,
}

/// A compiled `ON CONFLICT [target] DO NOTHING | DO UPDATE SET ... [WHERE ...]`.
pub(crate) struct OnConflict {
    /// The constraint whose conflicts it takes: None, any (DO NOTHING without a target);
    /// Some(None) the primary key; Some(Some(name)) a unique index.
    target: Option<Option<String>>,
    /// DO UPDATE's assignments and WHERE, over the existing row followed by the proposed
    /// one (`excluded`); None for DO NOTHING.
    update: Option<ConflictUpdate>,
}

/// DO UPDATE's assignments (column, expression) and WHERE.
type ConflictUpdate = (Vec<(usize, Expr)>, Option<Expr>);

impl OnConflict {
    /// Whether it takes a conflict on the primary key (`index` None) or on a unique index.
    fn takes(&self, index: Option<&str>) -> bool {
        match &self.target {
            None => true,
            Some(target) => target.as_deref() == index,
        }
    }
}

impl InsertTarget {
    /// The table as RETURNING's expressions see it.
    fn relation(&self) -> Relation {
        Relation {
            name: self.table.clone(),
            alias: self.alias.clone(),
            schema: self.schema.clone(),
            derived: None,
            function: None,
        }
    }

    /// Compiles INSERT's RETURNING list, if it has one (a template without `params`).
    fn returning(
        &self,
        insert: &ast::Insert,
        params: Option<&[Value]>,
        session: &Session,
    ) -> DbResult<Option<Returning>> {
        let Some(items) = &insert.returning else { return Ok(None) };
        let relation = self.relation();
        let mut binder = Binder::for_params(Some(&relation), params).in_session(session);
        Returning::compile(&relation, items, &mut binder).map(Some)
    }
}

/// Where a prepared statement keeps its compiled form (per statement handle, so that
/// sessions do not share the lock).
pub(crate) type CompiledSlot = std::sync::Mutex<Option<(u64, Arc<Compiled>)>>;

/// A statement parsed, ready to run (any number of times, with different bind values:
/// what a statement cache would keep).
pub(crate) enum Prepared {
    Special(Special),
    Sql(Box<ast::Statement>),
    /// A snapshot or report call of the workload repository (`EXEC snapshot`).
    Awr(crate::awr::AwrCall),
    /// `ALTER SEQUENCE`, which sqlparser does not read (see `alter_sequence`).
    AlterSequence(Box<crate::sql::alter_sequence::AlterSequence>),
    Empty,
}

impl Prepared {
    /// Whether the statement only reads or changes rows (no transaction control, no DDL,
    /// no settings), so that several can run as one atomic call.
    fn is_dml(&self) -> bool {
        fn dml(statement: &ast::Statement) -> bool {
            match statement {
                ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_)
                | ast::Statement::Query(_) => true,
                // EXPLAIN [ANALYZE] of DML or a query: it reads, or runs, what it explains.
                ast::Statement::Explain { statement, .. } => dml(statement),
                _ => false,
            }
        }
        matches!(self, Prepared::Sql(s) if dml(s))
    }
}

/// Parses one statement.
pub(crate) fn prepare(sql: &str) -> DbResult<Prepared> {
    if let Some(call) = crate::awr::parse_awr_call(sql) {
        return call.map(Prepared::Awr);
    }
    if let Some(special) = oracle::parse_special(sql) {
        return special.map(Prepared::Special);
    }
    if let Some(alter) = crate::sql::alter_sequence::parse(sql) {
        return alter.map(|a| Prepared::AlterSequence(Box::new(a)));
    }
    // `UPDATE t SET a[i] = x`, which sqlparser does not read, as an assignment of `a`.
    let element_assigned = match crate::sql::array_assign::rewrite(sql) {
        Some(rewritten) => Some(rewritten?),
        None => None,
    };
    let sql = element_assigned.as_deref().unwrap_or(sql);
    // A window frame's `EXCLUDE ...`, which sqlparser does not read, inside its last bound.
    let exclusion_moved = crate::sql::frame_exclusion::rewrite(sql);
    let sql = exclusion_moved.as_deref().unwrap_or(sql);
    // `LIKE ALL (subquery)`, whose subquery sqlparser does not read, as `ALL (ARRAY(...))`.
    let like_all_arrayed = crate::sql::like_all::rewrite(sql);
    let sql = like_all_arrayed.as_deref().unwrap_or(sql);
    // `(expr).*`, which sqlparser does not read, as a field access to a marker name.
    let record_stars_marked = crate::sql::record_star::rewrite(sql);
    let sql = record_stars_marked.as_deref().unwrap_or(sql);
    // `GROUP BY DISTINCT | ALL`, which sqlparser does not read, as a marked GROUP BY.
    let group_by_marked = crate::sql::group_by_distinct::rewrite(sql);
    let sql = group_by_marked.as_deref().unwrap_or(sql);
    // Sequence options in the words and the order sqlparser reads (Oracle's words,
    // PostgreSQL's any order).
    let oracle_sequence = oracle::standard_sequence_options(sql);
    let sql = oracle_sequence.as_deref().unwrap_or(sql);
    // `:name` placeholders are numbered `$1..$n` first (positions kept: see `binds`).
    let numbered = super::binds::number_placeholders(sql)?;
    let text = numbered.as_ref().map_or(sql, |n| n.text.as_str());
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, text).map_err(|e| {
        let error = syntax_error(text, e);
        match &numbered {
            Some(numbered) => numbered.locate(error),
            None => error,
        }
    })?;
    match statements.len() {
        0 => Ok(Prepared::Empty),
        1 => Ok(Prepared::Sql(Box::new(statements.remove(0)))),
        n => Err(DbError::Syntax {
            message: format!("{n} statements given where one was expected (use execute_batch)"),
            position: 1,
        }),
    }
}

/// A `sqlparser` error as a syntax error with PostgreSQL's position: the 1-based character
/// offset in `sql` (sqlparser reports "at Line: l, Column: c"; the end of the text for
/// errors at its end).
fn syntax_error(sql: &str, error: ParserError) -> DbError {
    let text = match error {
        ParserError::TokenizerError(s) | ParserError::ParserError(s) => s,
        ParserError::RecursionLimitExceeded => "the statement is nested too deeply".to_string(),
    };
    let located = text.rfind(" at Line: ").and_then(|at| {
        let (line, column) = text[at + " at Line: ".len()..].split_once(", Column: ")?;
        Some((at, line.trim().parse::<usize>().ok()?, column.trim().parse::<usize>().ok()?))
    });
    match located {
        Some((at, line, column)) => {
            let before: usize =
                sql.split('\n').take(line.saturating_sub(1)).map(|l| l.chars().count() + 1).sum();
            DbError::Syntax { message: text[..at].to_string(), position: before + column.max(1) }
        }
        None => DbError::Syntax { message: text, position: sql.chars().count() + 1 },
    }
}

/// A syntax error unless `parser` has read all of `text`.
fn expect_end(parser: &mut Parser, text: &str, what: &str) -> DbResult<()> {
    let next = parser.peek_token();
    if next.token == sqlparser::tokenizer::Token::EOF {
        return Ok(());
    }
    let column = next.span.start.column as usize;
    let before: usize = text
        .split('\n')
        .take(next.span.start.line.saturating_sub(1) as usize)
        .map(|l| l.chars().count() + 1)
        .sum();
    Err(DbError::Syntax {
        message: format!("unexpected \"{}\" after {what}", next.token),
        position: before + column,
    })
}

fn syntax(message: String) -> DbError {
    DbError::Syntax { message, position: 0 }
}

/// A value assigned to a column: a FLOAT for an INT column is rounded, as PostgreSQL's
/// assignment cast does (the row check does the rest of the conversions).
pub(crate) fn assignable(v: Value, column: &Column) -> DbResult<Value> {
    match (column.ty, v) {
        (DataType::Int, Value::Float(f)) => float_to_int(f),
        (DataType::Int, Value::Float4(f)) => float_to_int(f64::from(f)),
        (_, v) => Ok(v),
    }
}

/// One call from the client (`execute`, or all of `execute_batch`): with Oracle's
/// call-level commit optimisation (`call_commit_optimization`, on by default), a COMMIT
/// inside a multi-statement call that would wait for durability does not: the call waits
/// once, at its end, for the last of them.
struct Call {
    optimize: bool,
    /// End of the last commit whose durability wait was deferred to the end of the call.
    pending: Option<redo::Lsn>,
    /// A commit that must wait leaves its wait to the session's caller (deferred
    /// durability, for a call of one statement: nothing in the call runs after it).
    defer: bool,
}

impl Session {
    /// Executes one statement with `$1`-style bind values (`params[0]` is `$1`).
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> DbResult<QueryResult> {
        // One statement: the call's own elapsed time is the execution's (no more clock
        // reads than the call's).
        let mut executed = None;
        let nested = self.call_depth > 0;
        let result = self.user_call_sql(SqlText::Borrowed(sql), |s| {
            let (prepared, stats) = s.prepare_cached(sql).map_err(|e| e.located_in(sql))?;
            let defer = s.defer_durability;
            let result = s
                .run(&prepared, params, &mut Call { optimize: false, pending: None, defer })
                .map_err(|e| e.located_in(sql));
            executed = Some(stats);
            result
        });
        if let Some(stats) = executed {
            let elapsed_ns = if nested { 0 } else { self.last_call_ns };
            stats.record(self.entry.sid, result.processed_rows(), elapsed_ns);
        }
        result
    }

    /// The values of a comma-separated list of constant expressions (`1, 'a', 2 * 3`), as
    /// a client's EXECUTE gives them: parsed and evaluated now, not cached as a statement
    /// (each call's values would fill the statement cache as literal SQL does).
    pub fn evaluate_list(&mut self, list: &str) -> DbResult<Vec<Value>> {
        let dialect = PostgreSqlDialect {};
        let mut parser = Parser::new(&dialect).try_with_sql(list).map_err(|e| syntax_error(list, e))?;
        let exprs = parser.parse_comma_separated(Parser::parse_expr).map_err(|e| syntax_error(list, e))?;
        expect_end(&mut parser, list, "the values")?;
        let mut binder = Binder::new(None, &[]).in_session(self);
        exprs.iter().map(|e| binder.scalar(e, "EXECUTE")?.eval(&[], &[])).collect()
    }

    /// The type a type name stands for (`bigint`, `varchar(20)`), as CAST reads it.
    pub fn type_named(&self, name: &str) -> DbResult<DataType> {
        let dialect = PostgreSqlDialect {};
        let mut parser = Parser::new(&dialect).try_with_sql(name).map_err(|e| syntax_error(name, e))?;
        let ty = parser.parse_data_type().map_err(|e| syntax_error(name, e))?;
        expect_end(&mut parser, name, "the type")?;
        sql_type(&ty)
    }

    /// Counts an execution, for the system and the session.
    #[inline]
    fn count_execute(&self) {
        self.entry.count_sql(crate::sessions::SqlStat::Execute);
    }

    /// The parsed statement for `sql`, from the shared statement cache when the same text
    /// was parsed before (a soft parse), else parsed now (a hard parse) and cached.
    /// With the counters its executions add to (`v$sql`).
    pub(crate) fn prepare_cached(&self, sql: &str) -> DbResult<(Arc<Prepared>, Arc<StatementStats>)> {
        use crate::sessions::SqlStat;
        let parsed = self.db.statements.get_or_parse(sql, prepare);
        self.entry.count_sql(SqlStat::ParseTotal);
        // Only a hard parse can fail: the cache holds parsed statements only.
        let hit = matches!(parsed, Ok((_, _, true)));
        self.entry.count_sql(if hit { SqlStat::CacheHits } else { SqlStat::ParseHard });
        parsed.map(|(p, stats, _hit)| (p, stats))
    }

    /// Runs one statement of a call of SQL text as `run` does, counted as one execution of
    /// its text in `stats`, with its rows and (when timed) its elapsed time.
    fn run_counted(
        &mut self,
        prepared: &Prepared,
        stats: &StatementStats,
        params: &[Value],
        call: &mut Call,
    ) -> DbResult<QueryResult> {
        // Each statement of a call has its own statement_timeout (PostgreSQL's rule).
        self.start_statement_clock();
        let started = self.timed_statistics().then(redo::clock::Stamp::now);
        let result = self.run(prepared, params, call);
        if !crate::database::CallResult::lock_wait_deferred(&result) {
            // (A run stopped at a row lock is no execution: it runs again.)
            let elapsed_ns = started.map_or(0, |t| t.elapsed().as_nanos() as u64);
            stats.record(self.entry.sid, result.processed_rows(), elapsed_ns);
        }
        result
    }

    /// Executes a string of statements separated by `;` as one call, returning each
    /// statement's result; stops at the first error (the statements before it keep their
    /// effect). Error positions are relative to `sql`.
    ///
    /// Oracle's anonymous block `BEGIN ...; ...; END;` holding only DML and queries is
    /// atomic (a failure undoes the whole block); a block with other statements runs them
    /// one by one. COMMITs that would wait for durability wait once, when the call ends
    /// (see `call_commit_optimization`), also when it ends with an error.
    pub fn execute_batch(&mut self, sql: &str) -> DbResult<Vec<QueryResult>> {
        let (results, error) = self.execute_batch_until_error(sql);
        match error {
            Some(e) => Err(e),
            None => Ok(results),
        }
    }

    /// As `execute_batch`, but also returns the results of the statements that ran before
    /// the one that failed (a wire server sends them ahead of the error, and needs to know
    /// whether a BEGIN or COMMIT among them ran). A failed wait for the deferred commits
    /// at the end of the call replaces any earlier error: it is the more serious one.
    pub fn execute_batch_until_error(&mut self, sql: &str) -> (Vec<QueryResult>, Option<DbError>) {
        self.user_call_sql(SqlText::Borrowed(sql), |s| s.batch_call(sql))
    }

    fn batch_call(&mut self, sql: &str) -> (Vec<QueryResult>, Option<DbError>) {
        let mut call = Call { optimize: self.call_commit_optimization(), pending: None, defer: false };
        let mut results = Vec::new();
        let mut error = self.run_batch(sql, &mut call, &mut results).err();
        if let Some(lsn) = call.pending {
            if self.defer_durability {
                let wait = self.redo.durable_wait(lsn);
                self.defer_wait(wait);
            } else if let Err(e) = self.redo.wait_durable(lsn) {
                error = Some(e.into());
            }
        }
        (results, error)
    }

    fn run_batch(&mut self, sql: &str, call: &mut Call, results: &mut Vec<QueryResult>) -> DbResult<()> {
        let pieces = oracle::split_statements(sql)?;
        // A call of one statement (a wire client's lone COMMIT) has nothing to overlap a
        // deferred wait with: it commits as asked, and is counted so, as `execute` does.
        if let [Piece::Statement(_)] = pieces.as_slice() {
            call.optimize = false;
            call.defer = self.defer_durability;
        }
        for piece in pieces {
            match piece {
                Piece::Statement(text) => {
                    let (prepared, stats) =
                        self.prepare_cached(&text.text).map_err(|e| text.relocate(sql, e))?;
                    results.push(
                        self.run_counted(&prepared, &stats, &[], call).map_err(|e| text.relocate(sql, e))?,
                    );
                }
                Piece::Block { statements, .. } => {
                    let prepared = statements
                        .iter()
                        .map(|t| self.prepare_cached(&t.text).map_err(|e| t.relocate(sql, e)))
                        .collect::<DbResult<Vec<_>>>()?;
                    let atomic = prepared.iter().all(|(p, _)| p.is_dml());
                    let run_all = |s: &mut Session, call: &mut Call, results: &mut Vec<QueryResult>| {
                        for ((p, stats), text) in prepared.iter().zip(&statements) {
                            results
                                .push(s.run_counted(p, stats, &[], call).map_err(|e| text.relocate(sql, e))?);
                        }
                        Ok(())
                    };
                    if atomic {
                        let mut block_results = Vec::new();
                        self.statement(|s| run_all(s, call, &mut block_results))?;
                        results.extend(block_results);
                    } else {
                        run_all(self, call, results)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs one parsed statement as a call of its own.
    pub(crate) fn run_single(&mut self, prepared: &Prepared, params: &[Value]) -> DbResult<QueryResult> {
        let defer = self.defer_durability;
        self.run(prepared, params, &mut Call { optimize: false, pending: None, defer })
    }

    /// As `run_single`, for a prepared statement: an UPDATE, DELETE or INSERT ... VALUES
    /// runs from the compiled form kept in `slot` (compiled at its first execution).
    pub(crate) fn run_prepared(
        &mut self,
        prepared: &Prepared,
        slot: &CompiledSlot,
        params: &[Value],
    ) -> DbResult<QueryResult> {
        if let Prepared::Sql(statement) = prepared {
            match statement.as_ref() {
                ast::Statement::Update(update) => {
                    self.count_execute();
                    return self.update_statement(update, params, Some(slot));
                }
                ast::Statement::Delete(delete) => {
                    self.count_execute();
                    return self.delete_statement(delete, params, Some(slot));
                }
                ast::Statement::Insert(insert) => {
                    self.count_execute();
                    return self.insert_statement(insert, params, Some(slot));
                }
                ast::Statement::Query(query) => {
                    let compiled = self.compiled(Some(slot), params, |s, template| match template {
                        None => Ok(s
                            .compile_point_select(query, params)?
                            .map_or(Compiled::PlannedEachTime, Compiled::PointSelect)),
                        // (Its template failed: the general path reports the error.)
                        Some(_) => Ok(Compiled::PlannedEachTime),
                    })?;
                    if let Compiled::PointSelect(point) = compiled.as_ref() {
                        if let Some(result) = self.run_point_select(point, params)? {
                            self.count_execute();
                            return Ok(result);
                        }
                    }
                }
                _ => {}
            }
        }
        self.run_single(prepared, params)
    }

    fn run(&mut self, prepared: &Prepared, params: &[Value], call: &mut Call) -> DbResult<QueryResult> {
        self.count_execute();
        match prepared {
            Prepared::Empty => Ok(QueryResult::command("", 0)),
            Prepared::Special(special) => self.run_special(special.clone(), call),
            Prepared::Sql(statement) => self.run_statement(statement, params, call),
            Prepared::Awr(awr) => self.run_awr_call(awr),
            Prepared::AlterSequence(alter) => self.alter_sequence_statement(alter),
        }
    }

    fn run_statement(
        &mut self,
        statement: &ast::Statement,
        params: &[Value],
        call: &mut Call,
    ) -> DbResult<QueryResult> {
        use ast::Statement as S;
        match statement {
            S::Query(query) if crate::sql::dml_with::modifies_data(query) => {
                self.run_data_modifying_with(query, params)
            }
            S::Query(query) => {
                let out = self.run_query(query, params)?;
                Ok(QueryResult::rows_of_query(out.columns, out.rows))
            }
            S::Insert(insert) => self.insert_statement(insert, params, None),
            S::Update(update) => self.update_statement(update, params, None),
            S::Merge(merge) => self.merge_statement(merge, params),
            S::Delete(delete) => self.delete_statement(delete, params, None),
            S::CreateTable(create) => self.create_table_statement(create),
            S::Comment { object_type, object_name, comment, if_exists: false } => {
                self.comment_statement(object_type, object_name, comment.as_deref())
            }
            S::Drop { object_type: ast::ObjectType::Table, if_exists, names, cascade, .. } => {
                self.drop_table_statement(names, *if_exists, *cascade)
            }
            S::CreateIndex(create) => self.create_index_statement(create),
            S::CreateView(create) => self.create_view_statement(create),
            S::Drop { object_type: ast::ObjectType::View, if_exists, names, cascade, .. } => {
                self.drop_view_statement(names, *if_exists, *cascade)
            }
            S::CreateSequence { temporary, if_not_exists, name, data_type, sequence_options, owned_by } => {
                if owned_by.is_some() {
                    return Err(DbError::Unsupported("CREATE SEQUENCE ... OWNED BY".into()));
                }
                let temporary = *temporary || self.qualified_temporary(name)?;
                self.create_sequence_statement(name, temporary, *if_not_exists, data_type.as_ref(), sequence_options)
            }
            S::Drop { object_type: ast::ObjectType::Sequence, if_exists, names, cascade, .. } => {
                self.drop_sequence_statement(names, *if_exists, *cascade)
            }
            S::Drop { object_type: ast::ObjectType::Index, if_exists, names, .. } => {
                for name in names {
                    let name = self.index_name(name)?;
                    match self.drop_index(&name) {
                        Err(DbError::UnknownIndex(_)) if *if_exists => self.notices.push(
                            crate::error::Notice::plain(format!("index \"{name}\" does not exist, skipping")),
                        ),
                        other => other?,
                    }
                }
                Ok(QueryResult::command("DROP INDEX", 0))
            }
            S::CreateSchema { schema_name, if_not_exists, or_replace: false, with: None, options: None, .. } => {
                self.create_schema_statement(schema_name, *if_not_exists)
            }
            S::Drop { object_type: ast::ObjectType::Schema, if_exists, names, cascade, .. } => {
                self.drop_schema_statement(names, *if_exists, *cascade)
            }
            S::Truncate(truncate) => self.truncate_statement(truncate),
            S::AlterTable(alter) => self.alter_table_statement(alter),
            S::Explain {
                analyze,
                verbose: false,
                statement,
                format: None | Some(ast::AnalyzeFormatKind::Keyword(ast::AnalyzeFormat::TEXT)),
                options,
                query_plan: false,
                estimate: false,
                ..
            } => {
                let options = ExplainOptions::parse(*analyze, options.as_deref())?;
                self.explain(statement, params, options)
            }
            S::Explain { .. } => Err(DbError::Unsupported(
                "this form of EXPLAIN (EXPLAIN [ANALYZE] or EXPLAIN (ANALYZE, COSTS, TIMING, SUMMARY, FORMAT TEXT))"
                    .into(),
            )),
            S::StartTransaction { statements, .. } if statements.is_empty() => {
                Ok(QueryResult::command("BEGIN", 0))
            }
            S::Commit { chain: false, .. } => {
                self.run_special(Special::Commit { wait: None, logging: None }, call)
            }
            S::Rollback { chain: false, savepoint: None } => self.run_special(Special::Rollback, call),
            S::Rollback { .. } | S::Commit { .. } => Err(DbError::Unsupported("AND CHAIN".into())),
            other => {
                let text = other.to_string();
                let words: Vec<&str> = text.split_whitespace().take(2).collect();
                Err(DbError::Unsupported(format!("the statement {}", words.join(" ").to_uppercase())))
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Transaction control and settings
    // -----------------------------------------------------------------------------------

    fn run_special(&mut self, special: Special, call: &mut Call) -> DbResult<QueryResult> {
        match special {
            Special::Begin => Ok(QueryResult::command("BEGIN", 0)),
            Special::Commit { wait, logging } => {
                let options = CommitOptions { wait, logging };
                let nowait = CommitOptions { wait: Some(CommitWait::NoWait), logging };
                // Deferred only when the wait comes from the session or system setting (an
                // explicit WRITE WAIT is honoured) and FORCE_WAIT does not forbid NOWAIT.
                let defer = call.optimize
                    && wait.is_none()
                    && self.redo.resolve(options).0
                    && !self.redo.resolve(nowait).0;
                if defer {
                    if let Some(receipt) = self.commit(nowait)? {
                        call.pending = call.pending.max(Some(receipt.lsn));
                        self.entry.count_sql(crate::sessions::SqlStat::CommitsDeferred);
                    }
                } else {
                    let defer = call.defer;
                    self.user_call(|s| s.commit_call(options, defer))?;
                    if self.temp.has_on_commit() {
                        self.temp_tables_at_commit();
                    }
                }
                Ok(QueryResult::command("COMMIT", 0))
            }
            Special::Rollback => {
                self.rollback();
                Ok(QueryResult::command("ROLLBACK", 0))
            }
            Special::Savepoint(name) => {
                self.savepoint(&name);
                Ok(QueryResult::command("SAVEPOINT", 0))
            }
            Special::RollbackToSavepoint(name) => {
                self.rollback_to_savepoint(&name)?;
                Ok(QueryResult::command("ROLLBACK", 0))
            }
            Special::ReleaseSavepoint(name) => {
                self.release_savepoint(&name)?;
                Ok(QueryResult::command("RELEASE", 0))
            }
            Special::Maintenance { command, tables } => {
                // The rows are kept in persistent trees: a version no snapshot holds is
                // freed when the last reference to it goes, so there is nothing for
                // VACUUM to reclaim, and the planner's estimates read the tables' row
                // counts as they are. Both check the tables they name.
                for table in &tables {
                    self.schema_of(table)?;
                }
                Ok(QueryResult::command(
                    match command {
                        oracle::Maintenance::Vacuum => "VACUUM",
                        oracle::Maintenance::Analyze => "ANALYZE",
                    },
                    0,
                ))
            }
            Special::AlterSet { scope, assignments, persistence } => {
                if persistence == Some(oracle::Persistence::Spfile) {
                    return Err(DbError::Unsupported(
                        "SCOPE = SPFILE (there is no server parameter file)".into(),
                    ));
                }
                // A session's settings change all together or not at all.
                let saved = self.session_parameters();
                for (name, value) in &assignments {
                    let outcome = self.set_parameter(scope, name, value);
                    if let Ok(Some(warning)) = &outcome {
                        self.notices.push(crate::error::Notice::deprecated(warning.clone()));
                    }
                    if let Err(e) = outcome {
                        if scope == Scope::Session {
                            self.restore_session_parameters(saved);
                        }
                        return Err(e);
                    }
                }
                Ok(QueryResult::command("SET", 0))
            }
            Special::SetSchema { kind, if_exists, schema, name, new_schema } => {
                self.set_schema_statement(kind, if_exists, schema.as_deref(), &name, &new_schema)
            }
            Special::ShowParameter(filter) => {
                let text = Some(DataType::Text { max_chars: None });
                let columns = ["name", "type", "value"]
                    .into_iter()
                    .map(|name| ResultColumn { name: name.into(), ty: text })
                    .collect();
                let rows = self
                    .show_parameters(filter.as_deref())
                    .into_iter()
                    .map(|p| vec![Value::Text(p.name), Value::Text(p.type_name.into()), Value::Text(p.value)])
                    .collect();
                Ok(QueryResult::rows_of_query(columns, rows))
            }
            Special::PgSet { name, local: true, .. } => {
                Err(DbError::Unsupported(format!("SET LOCAL {name}")))
            }
            Special::PgSet { name, value, local: false } => {
                self.set_setting(&name, &value)?;
                Ok(QueryResult::command("SET", 0))
            }
            Special::PgReset(Some(name)) => {
                self.reset_setting(&name)?;
                Ok(QueryResult::command("RESET", 0))
            }
            Special::PgReset(None) => {
                self.redo.set_commit_wait(None);
                self.redo.set_commit_logging(None);
                self.call_commit_optimization = None;
                self.statement_timeout_ms = None;
                self.reset_setting("search_path")?;
                Ok(QueryResult::command("RESET", 0))
            }
            Special::PgShow(name) => {
                let text = Some(DataType::Text { max_chars: None });
                match name {
                    Some(name) => {
                        let value = self.current_setting(&name)?;
                        Ok(QueryResult::rows_of_query(
                            vec![ResultColumn { name, ty: text }],
                            vec![vec![Value::Text(value)]],
                        ))
                    }
                    None => {
                        let mut rows: Vec<Vec<Value>> = self
                            .show_parameters(None)
                            .into_iter()
                            .map(|p| {
                                vec![
                                    Value::Text(p.name),
                                    Value::Text(p.value),
                                    Value::Text(p.description.into()),
                                ]
                            })
                            .collect();
                        rows.push(vec![
                            Value::Text("synchronous_commit".into()),
                            Value::Text(self.synchronous_commit().into()),
                            Value::Text("commit_wait WAIT (on) or NOWAIT (off) for this session".into()),
                        ]);
                        rows.sort_by(|a, b| a[0].cmp(&b[0]));
                        let columns = ["name", "setting", "description"]
                            .into_iter()
                            .map(|name| ResultColumn { name: name.into(), ty: text })
                            .collect();
                        Ok(QueryResult::rows_of_query(columns, rows))
                    }
                }
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // DDL
    // -----------------------------------------------------------------------------------

    fn create_table_statement(&mut self, create: &ast::CreateTable) -> DbResult<QueryResult> {
        if let Some(query) = &create.query {
            return self.create_table_as(create, query);
        }
        if create.or_replace || create.external || create.query.is_some() || create.like.is_some() {
            return Err(DbError::Unsupported("this form of CREATE TABLE".into()));
        }
        let (temporary, name) = self.table_to_create(create)?;
        let mut columns = Vec::new();
        let mut primary_key: Option<Vec<usize>> = None;
        let set_key = |key: Vec<usize>, primary_key: &mut Option<Vec<usize>>| {
            if primary_key.replace(key).is_some() {
                return Err(syntax(format!("multiple primary keys for table \"{name}\" are not allowed")));
            }
            Ok(())
        };
        // UNIQUE constraints: (name, columns), each a unique index of the table.
        let mut uniques: Vec<(Option<String>, Vec<usize>)> = Vec::new();
        let mut defaults: Vec<(usize, String)> = Vec::new();
        let mut always_generated = Vec::new();
        let mut identity_by_default = Vec::new();
        let mut int_widths = Vec::new();
        // CHECK constraints: (name if given, condition, the column it was declared on).
        let mut checks: Vec<(Option<String>, String, Option<String>)> = Vec::new();
        // The sequences of SERIAL and IDENTITY columns: (name, definition).
        let mut identities: Vec<(String, crate::schema::SequenceDef)> = Vec::new();
        let mut references: Vec<crate::sql::references::ForeignKeySpec> = Vec::new();
        let mut primary_key_name = None;
        for (i, def) in create.columns.iter().enumerate() {
            let mut spec = self.column_spec(def)?;
            references.append(&mut spec.references);
            if spec.primary_key {
                set_key(vec![i], &mut primary_key)?;
                primary_key_name = spec.primary_key_name.take();
            }
            if let Some(name) = spec.unique {
                uniques.push((name, vec![i]));
            }
            if let Some((text, _)) = spec.default {
                defaults.push((i, text));
            }
            if let Some(width) = spec.int_width {
                int_widths.push((i, width));
            }
            for (check_name, text) in spec.checks.drain(..) {
                checks.push((check_name, text, Some(spec.column.name.clone())));
            }
            if let Some((always, def)) = spec.identity {
                // A temporary table's sequence is temporary too: its stored name is in
                // the session's temporary schema (`pg_temp_<sid>.t_id_seq`), never logged.
                if defaults.iter().any(|(c, _)| *c == i) {
                    return Err(syntax(format!(
                        "both default and identity specified for column \"{}\" of table \"{name}\"",
                        spec.column.name
                    )));
                }
                let sequence = format!("{name}_{}_seq", spec.column.name);
                let def = crate::schema::SequenceDef {
                    owned_by: Some((name.clone(), spec.column.name.clone())),
                    ..def
                };
                // PostgreSQL's text for it (what psql's \d shows): the name quoted only if
                // it must be.
                let quoted = match crate::namespaces::split(&sequence) {
                    (crate::namespaces::PUBLIC, plain) => crate::catalog::quote_ident(plain),
                    (schema, plain) => {
                        format!(
                            "{}.{}",
                            crate::catalog::quote_ident(schema),
                            crate::catalog::quote_ident(plain)
                        )
                    }
                };
                defaults.push((i, format!("nextval('{}'::regclass)", quoted.replace('\'', "''"))));
                if always {
                    always_generated.push(i);
                } else if spec.generated_identity {
                    identity_by_default.push(i);
                }
                identities.push((sequence, def));
            }
            columns.push(spec.column);
        }
        crate::sql::ddl::check_storage_parameters(&create.table_options)?;
        for constraint in &create.constraints {
            match constraint {
                ast::TableConstraint::PrimaryKey(pk) => {
                    let mut key = Vec::new();
                    for c in &pk.columns {
                        let ast::Expr::Identifier(ident) = &c.column.expr else {
                            return Err(DbError::Unsupported(format!(
                                "the primary key part {}",
                                c.column.expr
                            )));
                        };
                        let column = ident_name(ident);
                        let index = columns.iter().position(|c| c.name == column).ok_or_else(|| {
                            DbError::UnknownColumn(format!(
                                "{column}\" named in key does not exist (\"{column}"
                            ))
                        })?;
                        key.push(index);
                    }
                    set_key(key, &mut primary_key)?;
                    primary_key_name = pk.name.as_ref().map(ident_name);
                }
                ast::TableConstraint::Unique(unique) => {
                    let mut key = Vec::new();
                    for c in &unique.columns {
                        let ast::Expr::Identifier(ident) = &c.column.expr else {
                            return Err(DbError::Unsupported(format!(
                                "the unique key part {}",
                                c.column.expr
                            )));
                        };
                        let column = ident_name(ident);
                        let index = columns
                            .iter()
                            .position(|c| c.name == column)
                            .ok_or_else(|| DbError::UnknownColumn(column.clone()))?;
                        key.push(index);
                    }
                    uniques.push((unique.name.as_ref().map(ident_name), key));
                }
                ast::TableConstraint::Check(check) => {
                    checks.push((check.name.as_ref().map(ident_name), check.expr.to_string(), None));
                }
                ast::TableConstraint::ForeignKey(fk) => {
                    references.push(crate::sql::references::foreign_key_spec(fk, None, None)?);
                }
                other => return Err(DbError::Unsupported(format!("the constraint {other}"))),
            }
        }
        // Without one, the table is keyed by a hidden row id (see `schema`).
        let primary_key = primary_key.unwrap_or_default();
        let exists = |s: &mut Session| {
            // PostgreSQL's: a NOTICE with the duplicate-table SQLSTATE.
            s.notices.push(crate::error::Notice::with_state(
                "42P07",
                format!("relation \"{}\" already exists, skipping", crate::temp_tables::visible_name(&name)),
            ));
            Ok(QueryResult::command("CREATE TABLE", 0))
        };
        if create.if_not_exists && self.db.read_catalog(|st| st.has_table(&name)) {
            return exists(self);
        }
        let mut schema = TableSchema::new(&name, columns, primary_key)?;
        schema.primary_key_constraint = primary_key_name;
        schema.defaults = defaults;
        schema.always_generated = always_generated;
        schema.identity_by_default = identity_by_default;
        schema.int_widths = int_widths;
        for (check_name, text, column) in checks {
            let check = crate::sql::ddl::named_check(&schema, check_name, text, column.as_deref());
            if schema.checks.iter().any(|c| c.name == check.name) {
                return Err(DbError::TableExists(check.name));
            }
            schema.checks.push(check);
        }
        // Checked now: names and types in the conditions.
        crate::sql::ddl::compile_checks(&std::sync::Arc::new(schema.clone()))?;
        for (index_name, key) in uniques {
            let index_name = index_name.unwrap_or_else(|| crate::sql::ddl::unique_name(&schema, &key));
            schema = schema.with_index(crate::schema::IndexDef {
                name: index_name,
                columns: key,
                unique: true,
                constraint: true,
            })?;
        }
        for reference in &mut references {
            let parent = std::mem::take(&mut reference.parent);
            // A temporary table referencing itself by the name it was written with.
            reference.parent = if temporary.is_some() && parent == crate::temp_tables::visible_name(&name) {
                name.clone()
            } else {
                self.foreign_key_parent(parent)
            };
            crate::temp_tables::check_reference(temporary.is_some(), &reference.parent)?;
            let fk = if reference.parent == name {
                crate::sql::references::resolve_foreign_key(&schema, &schema, reference)?
            } else {
                let parent = self.schema_of(&reference.parent)?;
                crate::sql::references::resolve_foreign_key(&schema, &parent, reference)?
            };
            schema.foreign_keys.push(fk);
        }
        // The sequences first (each DDL commits on its own): taken back if the table
        // cannot be made.
        let mut created = Vec::new();
        let mut made = Ok(());
        for (sequence, def) in identities {
            made = self.create_sequence(&sequence, def);
            if made.is_err() {
                break;
            }
            created.push(sequence);
        }
        if temporary.is_some() {
            self.temporary_index_names(&mut schema);
        } else {
            crate::namespaces::index_names_in_schema(&mut schema);
        }
        let made = made.and_then(|()| self.create_table(schema));
        if made.is_ok() {
            self.temporary_table_made(&name, temporary);
        }
        if made.is_err() {
            for sequence in &created {
                let _ = self.drop_table(sequence);
            }
        }
        match made {
            Err(DbError::TableExists(_)) if create.if_not_exists => return exists(self),
            other => other?,
        }
        Ok(QueryResult::command("CREATE TABLE", 0))
    }

    /// `CREATE [UNIQUE] INDEX [IF NOT EXISTS] [name] ON table (column [ASC|DESC], ...)`.
    fn create_index_statement(&mut self, create: &ast::CreateIndex) -> DbResult<QueryResult> {
        if create.using.is_some()
            || !create.include.is_empty()
            || create.nulls_distinct == Some(false)
            || !create.with.is_empty()
            || create.predicate.is_some()
            || !create.index_options.is_empty()
            || !create.alter_options.is_empty()
        {
            return Err(DbError::Unsupported(format!("this form of CREATE INDEX: {create}")));
        }
        let table = self.relation_name(&create.table_name)?;
        let schema = self.schema_of(&table)?;
        let mut columns = Vec::new();
        for column in &create.columns {
            if column.operator_class.is_some() {
                return Err(DbError::Unsupported("an operator class in an index".into()));
            }
            // (ASC/DESC and NULLS FIRST/LAST are accepted: a tree serves both directions.)
            let ast::Expr::Identifier(ident) = &column.column.expr else {
                return Err(DbError::Unsupported(format!(
                    "an index on the expression {}",
                    column.column.expr
                )));
            };
            let index = schema.column_index(&ident_name(ident))?;
            if schema.rowid_index() == Some(index) {
                return Err(DbError::UnknownColumn(ident_name(ident)));
            }
            columns.push(index);
        }
        let name = match &create.name {
            // A temporary table's index is in the session's temporary schema too.
            Some(name) if crate::temp_tables::is_temporary(&table) => self.temp_name(&object_name(name)?),
            // An index is in its table's schema.
            Some(name) => {
                crate::namespaces::stored_name(crate::namespaces::split(&table).0, &object_name(name)?)
            }
            // PostgreSQL's default: table_column(s)_idx.
            None => {
                let names: Vec<&str> = columns.iter().map(|&c| schema.columns[c].name.as_str()).collect();
                format!("{table}_{}_{}", names.join("_"), if create.unique { "key" } else { "idx" })
            }
        };
        let index =
            crate::schema::IndexDef { name: name.clone(), columns, unique: create.unique, constraint: false };
        match self.create_index(&table, index) {
            Err(DbError::TableExists(_)) if create.if_not_exists => {
                self.notices.push(crate::error::Notice::with_state(
                    "42P07",
                    format!("relation \"{name}\" already exists, skipping"),
                ));
                Ok(QueryResult::command("CREATE INDEX", 0))
            }
            other => other.map(|()| QueryResult::command("CREATE INDEX", 0)),
        }
    }

    fn drop_table_statement(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> DbResult<QueryResult> {
        let names = names.iter().map(|n| self.relation_name(n)).collect::<DbResult<Vec<_>>>()?;
        if let Some(view) = names.iter().find(|n| crate::views::is_view(n)) {
            return Err(crate::views::read_only(view));
        }
        if !if_exists {
            // All or nothing for the usual mistake: check them all first.
            self.db.read_catalog(|st| names.iter().try_for_each(|name| st.table(name).map(|_| ())))?;
        }
        for name in &names {
            if self.schema_of(name).is_ok_and(|s| s.sequence.is_some()) {
                return Err(DbError::WrongObjectType(format!(
                    "\"{name}\" is not a table (use DROP SEQUENCE)"
                )));
            }
            if self.schema_of(name).is_ok_and(|s| s.view.is_some()) {
                return Err(DbError::WrongObjectType(format!("\"{name}\" is not a table (use DROP VIEW)")));
            }
        }
        for name in &names {
            match self.drop_table_checked(name, &names, cascade) {
                Err(DbError::UnknownTable(_)) if if_exists => self.notices.push(crate::error::Notice::plain(
                    format!("table \"{}\" does not exist, skipping", crate::temp_tables::visible_name(name)),
                )),
                other => other?,
            }
            // The sequences of its SERIAL and IDENTITY columns go with it.
            for sequence in self.sequences_owned_by(name) {
                self.drop_table(&sequence)?;
            }
        }
        Ok(QueryResult::command("DROP TABLE", 0))
    }

    fn truncate_statement(&mut self, truncate: &ast::Truncate) -> DbResult<QueryResult> {
        if truncate.partitions.is_some() {
            return Err(DbError::Unsupported("TRUNCATE ... PARTITION".into()));
        }
        let names =
            truncate.table_names.iter().map(|t| self.relation_name(&t.name)).collect::<DbResult<Vec<_>>>()?;
        if let Some(view) = names.iter().find(|n| crate::views::is_view(n)) {
            return Err(crate::views::read_only(view));
        }
        self.db.read_catalog(|st| {
            names
                .iter()
                .filter(|name| !truncate.if_exists || st.has_table(name))
                .try_for_each(|name| st.table(name).map(|_| ()))
        })?;
        let names: Vec<String> = if truncate.if_exists {
            names.into_iter().filter(|n| self.db.read_catalog(|st| st.has_table(n))).collect()
        } else {
            names
        };
        for name in &names {
            if self.schema_of(name).is_ok_and(|s| s.view.is_some() || s.sequence.is_some()) {
                return Err(DbError::WrongObjectType(format!("\"{name}\" is not a table")));
            }
        }
        let cascade = matches!(truncate.cascade, Some(ast::CascadeOption::Cascade));
        self.truncate_tables(&names, cascade)?;
        Ok(QueryResult::command("TRUNCATE TABLE", 0))
    }

    // -----------------------------------------------------------------------------------
    // DML
    // -----------------------------------------------------------------------------------

    pub(crate) fn insert_statement(
        &mut self,
        insert: &ast::Insert,
        params: &[Value],
        slot: Option<&CompiledSlot>,
    ) -> DbResult<QueryResult> {
        let source = insert
            .source
            .as_ref()
            .ok_or_else(|| DbError::Unsupported("INSERT without VALUES or a query".into()))?;
        let values = match source.body.as_ref() {
            ast::SetExpr::Values(values) if source.order_by.is_none() && source.limit_clause.is_none() => {
                Some(values)
            }
            _ => None,
        };
        // INSERT ... VALUES of a prepared statement: its rows compiled once, as templates.
        if let (Some(values), Some(slot)) = (values, slot) {
            // (The rows are templates either way: they are given the values below.)
            // The table and columns are resolved at compile time only: a compiled plan is
            // used while its table's schema is the one it was compiled against.
            let compiled = self.compiled(Some(slot), params, |s, params| {
                let mut target = s.insert_target(insert)?;
                target.on_conflict = s.compile_on_conflict(insert, &target, params)?;
                let returning = target.returning(insert, params, s)?;
                s.compile_insert_values(target, values, returning)
            });
            if let Ok(compiled) = compiled {
                let Compiled::InsertValues { target, rows, returning } = compiled.as_ref() else {
                    unreachable!("an INSERT's slot holds its VALUES")
                };
                // A lone `$n` is its bound value as is (cloned once), not a literal
                // expression built around a copy of it and then evaluated.
                let value = |e: &Template| match e.lone_param(params) {
                    Some(bound) => bound.cloned(),
                    None => e.with_params(params, &|| self.transaction_timestamp())?.eval(&[], &[]),
                };
                // Every row's values first (an error in any comes before any row is locked),
                // a single row's on the stack for up to 8 columns: its one allocation is
                // the row as stored.
                let evaluate = |row: &[Template]| -> DbResult<InsertValues> {
                    let mut values = InsertValues::with_capacity(row.len());
                    for e in row {
                        values.push(value(e)?);
                    }
                    Ok(values)
                };
                if let [row] = rows.as_slice() {
                    let mut values = evaluate(row)?;
                    return self.insert_rows(
                        target,
                        std::slice::from_mut(&mut values),
                        returning.as_ref(),
                        params,
                    );
                }
                let mut built = rows.iter().map(|row| evaluate(row)).collect::<DbResult<Vec<_>>>()?;
                return self.insert_rows(target, &mut built, returning.as_ref(), params);
            }
        }
        let mut target = self.insert_target(insert)?;
        target.on_conflict = self.compile_on_conflict(insert, &target, Some(params))?;
        let mut rows = match values {
            Some(values) => values_output(values, params, self)?.rows,
            None => self.statement(|s| Ok(s.run_query(source, params)?.rows))?,
        };
        let returning = target.returning(insert, Some(params), self)?;
        self.insert_rows(&target, &mut rows, returning.as_ref(), params)
    }

    /// INSERT's `ON CONFLICT` clause, checked against the table's keys and compiled (with
    /// `params`; a template has none, so a prepared statement compiles it with its values).
    fn compile_on_conflict(
        &self,
        insert: &ast::Insert,
        target: &InsertTarget,
        params: Option<&[Value]>,
    ) -> DbResult<Option<OnConflict>> {
        let Some(ast::OnInsert::OnConflict(on)) = &insert.on else { return Ok(None) };
        let schema = &target.schema;
        let pk_name = schema.primary_key_name();
        let constraint = match &on.conflict_target {
            None => None,
            Some(ast::ConflictTarget::Columns(columns)) => {
                let mut columns = columns
                    .iter()
                    .map(|c| schema.column_index(&ident_name(c)))
                    .collect::<DbResult<Vec<_>>>()?;
                columns.sort_unstable();
                let same = |of: &[usize]| {
                    let mut of = of.to_vec();
                    of.sort_unstable();
                    of == columns
                };
                if !schema.rowid && same(&schema.primary_key) {
                    Some(None)
                } else {
                    let index = schema.indexes.iter().find(|i| i.unique && same(&i.columns));
                    Some(Some(index.ok_or(DbError::NoConflictTarget)?.name.clone()))
                }
            }
            Some(ast::ConflictTarget::OnConstraint(name)) => {
                let name = object_name(name)?;
                // A temporary table's constraints by the names its user wrote.
                let named = |stored: &str| crate::temp_tables::visible_name(stored) == name;
                if named(&pk_name) && !schema.rowid {
                    Some(None)
                } else if let Some(index) = schema.indexes.iter().find(|i| i.unique && named(&i.name)) {
                    Some(Some(index.name.clone()))
                } else {
                    return Err(DbError::Syntax {
                        message: format!(
                            "constraint \"{name}\" for table \"{}\" does not exist",
                            target.table
                        ),
                        position: 0,
                    });
                }
            }
        };
        let update = match &on.action {
            ast::OnConflictAction::DoNothing => None,
            ast::OnConflictAction::DoUpdate(update) => {
                if constraint.is_none() {
                    return Err(syntax(
                        "ON CONFLICT DO UPDATE requires inference specification or constraint name".into(),
                    ));
                }
                if matches!(constraint, Some(Some(_))) {
                    return Err(DbError::Unsupported(
                        "ON CONFLICT DO UPDATE on a unique index (on the primary key only)".into(),
                    ));
                }
                let Some(params) = params else {
                    return Err(DbError::Unsupported("ON CONFLICT DO UPDATE in a template".into()));
                };
                let mut scope = crate::sql::expr::Scope::default();
                scope.push(target.relation());
                scope.push(Relation {
                    name: "excluded".into(),
                    alias: None,
                    schema: schema.clone(),
                    derived: None,
                    function: None,
                });
                let mut binder = Binder::over(scope, Vec::new(), params).in_session(self);
                let mut sets = Vec::new();
                for assignment in &update.assignments {
                    let ast::AssignmentTarget::ColumnName(column) = &assignment.target else {
                        return Err(DbError::Unsupported("an assignment to a tuple of columns".into()));
                    };
                    let column = schema.column_index(&object_name(column)?)?;
                    if sets.iter().any(|(c, _)| *c == column) {
                        return Err(syntax(format!(
                            "multiple assignments to same column \"{}\"",
                            schema.columns[column].name
                        )));
                    }
                    sets.push((column, binder.scalar(&assignment.value, "ON CONFLICT DO UPDATE")?));
                }
                let filter = update.selection.as_ref().map(|e| binder.scalar(e, "WHERE")).transpose()?;
                Some((sets, filter))
            }
        };
        Ok(Some(OnConflict { target: constraint, update }))
    }

    /// INSERT's table and target columns.
    pub(crate) fn insert_target(&self, insert: &ast::Insert) -> DbResult<InsertTarget> {
        if insert.or.is_some()
            || insert.ignore
            || insert.overwrite
            || insert.partitioned.is_some()
            || !insert.after_columns.is_empty()
            || insert.replace_into
            || !insert.assignments.is_empty()
            || insert.insert_alias.is_some()
            || insert.output.is_some()
        {
            return Err(DbError::Unsupported("this form of INSERT".into()));
        }
        if matches!(insert.on, Some(ast::OnInsert::DuplicateKeyUpdate(_))) {
            return Err(DbError::Unsupported("ON DUPLICATE KEY UPDATE (use ON CONFLICT)".into()));
        }
        let ast::TableObject::TableName(table) = &insert.table else {
            return Err(DbError::Unsupported("INSERT into a table function".into()));
        };
        // PostgreSQL's rule: VALUES of N < all columns fill the first N; the rest get
        // their defaults.
        let supplied = insert.source.as_ref().and_then(|q| match q.body.as_ref() {
            ast::SetExpr::Values(values) => values.rows.first().map(|row| row.len()),
            _ => None,
        });
        let alias = insert.table_alias.as_ref().map(|a| ident_name(&a.alias));
        self.insert_target_of(self.relation_name(table)?, &insert.columns, supplied, alias)
    }

    /// The target of an INSERT into `table` of `columns` (all, or the first `supplied`,
    /// when none are named): INSERT's, and MERGE's `WHEN NOT MATCHED THEN INSERT`.
    pub(crate) fn insert_target_of(
        &self,
        table: String,
        columns: &[ast::ObjectName],
        supplied: Option<usize>,
        alias: Option<String>,
    ) -> DbResult<InsertTarget> {
        if crate::views::is_view(&table) {
            return Err(crate::views::read_only(&table));
        }
        let schema = self.schema_of(&table)?;
        refuse_sequence(&schema)?;
        crate::sql::stored_views::refuse_view(&schema, "insert into")?;
        let targets: Vec<usize> = if columns.is_empty() {
            let width = schema.visible_columns().len();
            (0..supplied.filter(|&n| n < width).unwrap_or(width)).collect()
        } else {
            let mut targets = Vec::new();
            for c in columns {
                let index = schema.column_index(&object_name(c)?)?;
                if targets.contains(&index) {
                    return Err(syntax(format!(
                        "column \"{}\" specified more than once",
                        schema.columns[index].name
                    )));
                }
                targets.push(index);
            }
            targets
        };
        // GENERATED ALWAYS: the sequence gives the value, never the statement.
        if let Some(&c) = targets.iter().find(|c| schema.always_generated.contains(c)) {
            return Err(DbError::GeneratedAlways(format!(
                "cannot insert a non-DEFAULT value into column \"{}\": it is GENERATED ALWAYS AS IDENTITY",
                schema.columns[c].name
            )));
        }
        let mut defaults = Vec::new();
        for (column, text) in &schema.defaults {
            if targets.contains(column) {
                continue;
            }
            let expr = sqlparser::parser::Parser::new(&PostgreSqlDialect {})
                .try_with_sql(text)
                .and_then(|mut p| p.parse_expr())
                .map_err(|e| DbError::CorruptChange(format!("the default {text:?} of \"{table}\": {e}")))?;
            defaults.push((
                *column,
                Template::new(Binder::template(None).in_session(self).scalar(&expr, "DEFAULT expressions")?),
            ));
        }
        Ok(InsertTarget { table, alias, schema, targets, on_conflict: None, defaults })
    }

    /// The rows of INSERT ... VALUES compiled as templates, with the statement's RETURNING.
    fn compile_insert_values(
        &self,
        target: InsertTarget,
        values: &ast::Values,
        returning: Option<Returning>,
    ) -> DbResult<Compiled> {
        let mut binder = Binder::template(None).in_session(self);
        let mut rows: Vec<Vec<Template>> = Vec::with_capacity(values.rows.len());
        for row in &values.rows {
            let row = row
                .content
                .iter()
                .map(|e| binder.scalar(e, "VALUES").map(Template::new))
                .collect::<DbResult<Vec<_>>>()?;
            if rows.first().is_some_and(|first| first.len() != row.len()) {
                return Err(syntax("VALUES lists must all be the same length".into()));
            }
            rows.push(row);
        }
        Ok(Compiled::InsertValues { target, rows, returning })
    }

    /// Inserts `rows` (values for the target columns) as one statement, with the
    /// RETURNING rows if `returning` is given.
    /// Inserts `rows` (the values of `target`'s columns) as one statement.
    pub(crate) fn insert_rows<V: AsMut<[Value]>>(
        &mut self,
        target: &InsertTarget,
        rows: &mut [V],
        returning: Option<&Returning>,
        params: &[Value],
    ) -> DbResult<QueryResult> {
        let InsertTarget { table, schema, targets, .. } = target;
        let mut output = returning.map(|r| ReturningOutput::new(r, params, self)).transpose()?;
        let inserted = self.statement(|s| {
            let mut inserted = 0u64;
            for values in rows {
                let values = values.as_mut();
                if values.len() != targets.len() {
                    return Err(syntax(if values.len() > targets.len() {
                        "INSERT has more expressions than target columns".into()
                    } else {
                        "INSERT has more target columns than expressions".into()
                    }));
                }
                for (v, &i) in values.iter_mut().zip(targets) {
                    *v = assignable(std::mem::replace(v, Value::Null), &schema.columns[i])?;
                }
                let take = |v: &mut Value| std::mem::replace(v, Value::Null);
                let row: Row = if targets.iter().copied().eq(0..schema.columns.len()) {
                    // Every column in table order: the values move into the row as stored,
                    // allocated once (a map over a range has an exact length).
                    (0..values.len()).map(|c| take(&mut values[c])).collect()
                } else {
                    let mut row = vec![Value::Null; schema.columns.len()];
                    for (v, &i) in values.iter_mut().zip(targets) {
                        row[i] = take(v);
                    }
                    for (i, default) in &target.defaults {
                        let value =
                            default.with_params(&[], &|| s.transaction_timestamp())?.eval(&[], &[])?;
                        row[*i] = assignable(value, &schema.columns[*i])?;
                    }
                    Row::from(row)
                };
                let Some(on_conflict) = &target.on_conflict else {
                    let stored = s.insert_with_schema(table, schema, row)?;
                    if let Some(output) = &mut output {
                        output.add(&stored)?;
                    }
                    inserted += 1;
                    continue;
                };
                let proposed: Vec<Value> = row.to_vec();
                let stored = match s.insert_with_schema(table, schema, row) {
                    Ok(stored) => Some(stored),
                    Err(DbError::DuplicateKey { .. }) if on_conflict.takes(None) => {
                        s.on_conflict_update(table, schema, on_conflict, proposed)?
                    }
                    Err(DbError::DuplicateValue { index, .. }) if on_conflict.takes(Some(&index)) => None,
                    Err(e) => return Err(e),
                };
                if let Some(stored) = stored {
                    if let Some(output) = &mut output {
                        output.add(&stored)?;
                    }
                    inserted += 1;
                }
            }
            Ok(inserted)
        })?;
        Ok(dml_result(count_tag("INSERT 0", inserted), inserted, returning.zip(output)))
    }

    /// The proposed row `proposed` repeats an existing row's primary key: ON CONFLICT DO
    /// UPDATE changes that row (locked, read as it is now; its WHERE may leave it), DO
    /// NOTHING leaves it. Returns the row stored, if any.
    fn on_conflict_update(
        &mut self,
        table: &str,
        schema: &Arc<TableSchema>,
        on_conflict: &OnConflict,
        mut proposed: Vec<Value>,
    ) -> DbResult<Option<Row>> {
        let Some((sets, filter)) = &on_conflict.update else { return Ok(None) };
        schema.check_row(&mut proposed)?;
        let key = schema.key_of(&proposed);
        let (existing, _) = self.lock_then_read(table, &key)?;
        let Some(existing) = existing else {
            // Gone since the insert met it (deleted and committed meanwhile): insert.
            return self.insert_with_schema(table, schema, Row::from(proposed)).map(Some);
        };
        let wide: Vec<Value> = existing.iter().chain(&proposed).cloned().collect();
        if let Some(filter) = filter {
            if !filter.holds(&wide, &[])? {
                return Ok(None);
            }
        }
        let mut new_row = existing.to_vec();
        for (column, e) in sets {
            new_row[*column] = assignable(e.eval(&wide, &[])?, &schema.columns[*column])?;
        }
        self.update_locked(table, schema, &key, Row::from(new_row)).map(Some)
    }

    pub(crate) fn update_statement(
        &mut self,
        update: &ast::Update,
        params: &[Value],
        slot: Option<&CompiledSlot>,
    ) -> DbResult<QueryResult> {
        if update.from.is_some() {
            // Joined: planned at each execution (`joined_dml`).
            return self.update_from_statement(update, params);
        }
        let compiled =
            self.compiled(slot, params, |s, params| s.compile_update(update, params).map(Compiled::Dml))?;
        let Compiled::Dml(compiled) = compiled.as_ref() else {
            unreachable!("an UPDATE's slot holds an UPDATE")
        };
        let (relation, schema) = (&compiled.relation, &compiled.relation.schema);
        let (mut sets, picked) = compiled.with_params(params, self)?;
        let picked = self.resolve_picked(picked)?;
        for ((_, template), (_, assigned)) in compiled.sets.iter().zip(sets.iter_mut()) {
            if !template.has_subquery() {
                continue;
            }
            let expr = match assigned {
                Assigned::Expr(e) => *e,
                Assigned::Owned(e) => &**e,
                Assigned::Bound(_) => continue,
            };
            let resolved = self.resolve_subqueries(expr, None)?;
            if resolved.has_subquery() {
                return Err(DbError::Unsupported("a correlated subquery in UPDATE's SET".into()));
            }
            *assigned = Assigned::Owned(Box::new(resolved));
        }
        let table = relation.name.as_str();
        let returning = compiled.returning.as_ref();
        let mut output = returning.map(|r| ReturningOutput::new(r, params, self)).transpose()?;
        // An UPDATE that sets no key column cannot move a row onto a key it has yet to
        // visit, so its rows may be found one key at a time as it goes.
        let keys_stay = sets.iter().all(|(i, _)| !schema.primary_key.contains(i));
        let updated = self.statement(|s| {
            s.for_each_locked_row(relation, &picked, keys_stay, &mut |s, key, row| {
                // The assigned columns from their expressions over the old row (in column
                // order: the compile sorted them; a column is assigned once: it refuses
                // two), then each column once, the others copied (not copied and then
                // replaced: a text column would be allocated twice), straight into the row
                // as stored: one allocation.
                let mut assigned: smallvec::SmallVec<[Option<Value>; 8]> =
                    smallvec::smallvec![None; row.len()];
                for (i, e) in &sets {
                    assigned[*i] = Some(assignable(e.eval(row)?, &schema.columns[*i])?);
                }
                let new_row: Row =
                    (0..row.len()).map(|c| assigned[c].take().unwrap_or_else(|| row[c].clone())).collect();
                let stored = s.update_locked(table, schema, key, new_row)?;
                if let Some(output) = &mut output {
                    output.add(&stored)?;
                }
                Ok(true)
            })
        })?;
        Ok(dml_result(count_tag("UPDATE", updated), updated, returning.zip(output)))
    }

    /// UPDATE's table, assignments and WHERE, compiled with `params` (None: a template).
    pub(crate) fn compile_update(
        &self,
        update: &ast::Update,
        params: Option<&[Value]>,
    ) -> DbResult<CompiledDml> {
        if update.from.is_some() {
            return Err(DbError::Unsupported("UPDATE ... FROM".into()));
        }
        if update.output.is_some() {
            return Err(DbError::Unsupported("OUTPUT (use RETURNING)".into()));
        }
        if update.or.is_some() || !update.order_by.is_empty() || update.limit.is_some() {
            return Err(DbError::Unsupported("this form of UPDATE".into()));
        }
        let relation = self.relation_of(std::slice::from_ref(&update.table))?.expect("UPDATE names a table");
        if crate::views::is_view(&relation.name) {
            return Err(crate::views::read_only(&relation.name));
        }
        refuse_sequence(&relation.schema)?;
        let schema = relation.schema.clone();
        let mut binder = Binder::for_params(Some(&relation), params).in_session(self);
        let mut sets: Vec<(usize, Expr)> = Vec::new();
        for assignment in &update.assignments {
            let ast::AssignmentTarget::ColumnName(target) = &assignment.target else {
                return Err(DbError::Unsupported("an assignment to a tuple of columns".into()));
            };
            let column = target
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(ident_name)
                .ok_or_else(|| DbError::Unsupported(format!("the assignment target {target}")))?;
            let index = schema.column_index(&column)?;
            if sets.iter().any(|(i, _)| *i == index) {
                return Err(syntax(format!("multiple assignments to same column \"{column}\"")));
            }
            sets.push((index, binder.scalar(&assignment.value, "UPDATE")?));
        }
        let filter = update.selection.as_ref().map(|e| binder.scalar(e, "WHERE")).transpose()?;
        let returning = update
            .returning
            .as_deref()
            .map(|items| Returning::compile(&relation, items, &mut binder))
            .transpose()?;
        Ok(CompiledDml {
            // In column order: the order PostgreSQL evaluates them in (which error a row
            // with two failing assignments reports), whatever the SET list's.
            sets: {
                sets.sort_by_key(|(i, _)| *i);
                sets.into_iter().map(|(i, e)| (i, Template::new(e))).collect()
            },
            filter: filter.map(Template::new),
            returning,
            relation,
        })
    }

    pub(crate) fn delete_statement(
        &mut self,
        delete: &ast::Delete,
        params: &[Value],
        slot: Option<&CompiledSlot>,
    ) -> DbResult<QueryResult> {
        if delete.using.is_some() {
            // Joined: planned at each execution (`joined_dml`).
            return self.delete_using_statement(delete, params);
        }
        let compiled =
            self.compiled(slot, params, |s, params| s.compile_delete(delete, params).map(Compiled::Dml))?;
        let Compiled::Dml(compiled) = compiled.as_ref() else {
            unreachable!("a DELETE's slot holds a DELETE")
        };
        let relation = &compiled.relation;
        let (_, picked) = compiled.with_params(params, self)?;
        let picked = self.resolve_picked(picked)?;
        let table = relation.name.as_str();
        let returning = compiled.returning.as_ref();
        let mut output = returning.map(|r| ReturningOutput::new(r, params, self)).transpose()?;
        let deleted = self.statement(|s| {
            s.for_each_locked_row(relation, &picked, true, &mut |s, key, row| {
                if let Some(output) = &mut output {
                    output.add(row)?;
                }
                s.delete_locked(table, key)?;
                Ok(true)
            })
        })?;
        Ok(dml_result(count_tag("DELETE", deleted), deleted, returning.zip(output)))
    }

    /// DELETE's table and WHERE, compiled with `params` (None: a template).
    pub(crate) fn compile_delete(
        &self,
        delete: &ast::Delete,
        params: Option<&[Value]>,
    ) -> DbResult<CompiledDml> {
        if !delete.tables.is_empty()
            || delete.using.is_some()
            || !delete.order_by.is_empty()
            || delete.limit.is_some()
        {
            return Err(DbError::Unsupported("this form of DELETE".into()));
        }
        if delete.output.is_some() {
            return Err(DbError::Unsupported("OUTPUT (use RETURNING)".into()));
        }
        let from = match &delete.from {
            ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => from,
        };
        let relation =
            self.relation_of(from)?.ok_or_else(|| syntax("DELETE needs the table to delete from".into()))?;
        if crate::views::is_view(&relation.name) {
            return Err(crate::views::read_only(&relation.name));
        }
        refuse_sequence(&relation.schema)?;
        let mut binder = Binder::for_params(Some(&relation), params).in_session(self);
        let filter = delete.selection.as_ref().map(|e| binder.scalar(e, "WHERE")).transpose()?;
        let returning = delete
            .returning
            .as_deref()
            .map(|items| Returning::compile(&relation, items, &mut binder))
            .transpose()?;
        Ok(CompiledDml { relation, sets: Vec::new(), filter: filter.map(Template::new), returning })
    }

    /// The result columns of an INSERT, UPDATE or DELETE with RETURNING (None without),
    /// told without running it: its RETURNING list compiled with `params`.
    pub(crate) fn returning_columns(
        &self,
        statement: &ast::Statement,
        params: &[Value],
    ) -> DbResult<Option<Vec<ResultColumn>>> {
        let (relation, items) = match statement {
            ast::Statement::Insert(insert) => {
                let Some(items) = &insert.returning else { return Ok(None) };
                (self.insert_target(insert)?.relation(), items)
            }
            ast::Statement::Update(update) => {
                let Some(items) = &update.returning else { return Ok(None) };
                let relation = self.relation_of(std::slice::from_ref(&update.table))?;
                (relation.expect("UPDATE names a table"), items)
            }
            ast::Statement::Delete(delete) => {
                let Some(items) = &delete.returning else { return Ok(None) };
                let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                    &delete.from;
                let relation = self.relation_of(from)?;
                (relation.ok_or_else(|| syntax("DELETE needs the table to delete from".into()))?, items)
            }
            _ => return Ok(None),
        };
        let mut binder = Binder::new(Some(&relation), params).in_session(self);
        Ok(Some(Returning::compile(&relation, items, &mut binder)?.columns))
    }

    /// The compiled form of an UPDATE or DELETE: from a prepared statement's slot while
    /// its table's schema is the one it was compiled against, else compiled now (as a
    /// template kept in the slot for the next executions; with the values directly for
    /// a statement run once, or when a template cannot be compiled).
    /// The rows UPDATE or DELETE picks with the WHERE's uncorrelated subqueries run (its
    /// correlated ones run for each row, in `for_each_locked_row`).
    fn resolve_picked<'a>(&self, picked: Picked<'a>) -> DbResult<Picked<'a>> {
        Ok(match picked {
            Picked::Filter(Some(filter)) if filter.has_subquery() => {
                Picked::Filter(Some(Cow::Owned(self.resolve_subqueries(&filter, None)?)))
            }
            other => other,
        })
    }

    fn compiled(
        &self,
        slot: Option<&CompiledSlot>,
        params: &[Value],
        compile: impl Fn(&Session, Option<&[Value]>) -> DbResult<Compiled>,
    ) -> DbResult<Arc<Compiled>> {
        let Some(slot) = slot else { return compile(self, Some(params)).map(Arc::new) };
        // Read before compiling: a DDL after this makes the plan's generation stale.
        let generation = self.db.schema_generation.load(SeqCst);
        let cached = slot.lock().expect("compiled slot poisoned").clone();
        if let Some((compiled_at, compiled)) = cached {
            if compiled_at == generation {
                return Ok(compiled);
            }
            // Also recompiled when a temporary table of the session now hides the table.
            let unchanged = compiled.table().is_some_and(|(table, schema)| {
                self.db.read_catalog(|st| st.table(table).is_ok_and(|t| Arc::ptr_eq(&t.schema, schema)))
                    && !self.hidden_by_temporary(table)
            });
            if unchanged {
                *slot.lock().expect("compiled slot poisoned") = Some((generation, compiled.clone()));
                return Ok(compiled);
            }
        }
        match compile(self, None) {
            Ok(template) => {
                let template = Arc::new(template);
                *slot.lock().expect("compiled slot poisoned") = Some((generation, template.clone()));
                Ok(template)
            }
            // A template can fail where values succeed (a LIKE escape given as $n), and
            // a real error is reported the same either way.
            Err(_) => compile(self, Some(params)).map(Arc::new),
        }
    }

    /// The row loop of UPDATE and DELETE: finds the rows matching `filter` as the
    /// transaction sees them now, then for each locks it, re-reads it, checks `filter`
    /// again on the re-read row and calls `change` with its key and current values (the
    /// row is locked and current: `change` may use `update_locked` / `delete_locked`).
    /// Returns how many rows `change` reported changed.
    ///
    /// When the WHERE names exact keys and `keys_stay` (the change moves no row to another
    /// key), each key is locked first and its row read once, under the lock, instead of
    /// read, locked, and read again: one walk down the committed state's tree fewer per
    /// row. A key with no matching row is unlocked again, unless the transaction held it
    /// before.
    fn for_each_locked_row(
        &mut self,
        relation: &Relation,
        picked: &Picked<'_>,
        keys_stay: bool,
        change: &mut RowChange,
    ) -> DbResult<u64> {
        let (filter, planned) = match picked {
            Picked::Key(_) => (None, None),
            Picked::Filter(filter) => (filter.as_deref(), Some(plan(&relation.schema, filter.as_deref()))),
        };
        // A correlated subquery left in the WHERE runs for each row, with it bound.
        let correlated = filter.is_some_and(Expr::has_subquery);
        let matches = |s: &Session, row: &[Value]| -> DbResult<bool> {
            match filter {
                None => Ok(true),
                Some(f) if correlated => {
                    Ok(truth(&s.resolve_subqueries(f, Some(row))?.eval(row, &[])?)? == Some(true))
                }
                Some(f) => f.holds(row, &[]),
            }
        };
        let points: Option<&[Key]> = match (picked, &planned) {
            (Picked::Key(key), _) => Some(std::slice::from_ref(key)),
            (_, Some(Access::Points(keys))) => Some(keys),
            _ => None,
        };
        if let Some(keys) = points {
            // Not in a statement with data-modifying WITH queries: its rows are picked as
            // the statement's start showed them (`dml_with`), not as they are now.
            if keys_stay && !crate::views::is_view(&relation.name) && !self.reads_at_start() {
                log::trace!("UPDATE/DELETE on {}: {} key(s), locked then read", relation.name, keys.len());
                let mut changed = 0;
                for key in keys {
                    let (row, acquired) = self.lock_then_read(&relation.name, key)?;
                    let matching = match row {
                        Some(row) => {
                            count_visit();
                            match matches(self, &row) {
                                Ok(matched) => matched.then_some(row),
                                Err(e) => {
                                    if acquired {
                                        self.unlock_row(&relation.name, key);
                                    }
                                    return Err(e);
                                }
                            }
                        }
                        None => None,
                    };
                    match matching {
                        Some(row) => changed += change(self, key, &row)? as u64,
                        None if acquired => self.unlock_row(&relation.name, key),
                        None => {}
                    }
                }
                return Ok(changed);
            }
        }
        // Before the reads: a candidate still current when locked is not read again.
        let point = self.read_point();
        let mut candidates = Vec::new();
        let access = match (planned, picked) {
            (Some(access), _) => access,
            (None, Picked::Key(key)) => Access::Points(vec![key.clone()]),
            (None, Picked::Filter(_)) => unreachable!("a filter is planned"),
        };
        log::trace!("UPDATE/DELETE on {}: {}", relation.name, access.describe());
        self.visit_rows(&relation.name, &access, &mut |row| {
            if matches(self, row)? {
                candidates.push(row.clone());
            }
            Ok(true)
        })?;
        let mut changed = 0;
        for old in candidates {
            let key = relation.schema.key_of(&old);
            if self.changed_since_statement_start(&relation.name, &key) {
                // Changed by another part of the statement (`dml_with`): PostgreSQL's
                // UPDATE and DELETE leave it alone.
                continue;
            }
            let Some(current) = self.select_for_update_read_at(&relation.name, &key, &old, point)? else {
                continue;
            };
            if !Arc::ptr_eq(&current, &old) && !matches(self, &current)? {
                continue;
            }
            if change(self, &key, &current)? {
                changed += 1;
            }
        }
        Ok(changed)
    }
}

/// What UPDATE or DELETE does to one locked row (its key and current values): whether
/// the row was changed.
type RowChange<'a> = dyn FnMut(&mut Session, &crate::schema::Key, &[Value]) -> DbResult<bool> + 'a;

/// A sequence's row changes by nextval and setval only.
fn refuse_sequence(schema: &TableSchema) -> DbResult<()> {
    match schema.sequence {
        Some(_) => Err(DbError::WrongObjectType(format!("cannot change sequence \"{}\"", schema.name))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_positions_are_character_offsets() {
        let sql = "SELECT a FROM t WHERE b > 1\n  AND c IN (1,,2)";
        let Err(DbError::Syntax { position, .. }) = prepare(sql) else { panic!("not a syntax error") };
        assert_eq!(sql.chars().nth(position - 1), Some(','), "{position}");
        let Err(DbError::Syntax { position, .. }) = prepare("SELECT * FORM t") else { panic!() };
        assert_eq!(position, 15);
        let Err(DbError::Syntax { position, .. }) = prepare("SELECT * FROM t WHERE") else { panic!() };
        assert_eq!(position, 22);
        let sql = "SELECT 'héé' FORM t";
        let Err(DbError::Syntax { position, .. }) = prepare(sql) else { panic!() };
        assert_eq!(sql.chars().nth(position - 1), Some('t'), "a character offset, not a byte offset");
    }

    #[test]
    fn count_tags_carry_every_digit() {
        assert_eq!(count_tag("UPDATE", 0), "UPDATE 0");
        assert_eq!(count_tag("INSERT 0", 1_234_567), "INSERT 0 1234567");
        assert_eq!(count_tag("SELECT", u64::MAX), format!("SELECT {}", u64::MAX));
        // The static tags of a count of 0 or 1 are the ones a count builds.
        for verb in ["INSERT 0", "UPDATE", "DELETE", "SELECT", "MOVE"] {
            for count in 0..3 {
                let tag = count_tag(verb, count);
                assert_eq!(tag, format!("{verb} {count}"));
                let listed = verb != "MOVE" && count <= 1;
                assert_eq!(matches!(tag, Tag::Borrowed(_)), listed, "{tag}");
            }
        }
    }
}
