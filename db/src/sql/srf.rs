//! Set-returning functions in FROM: `generate_series(start, stop [, step])` over
//! integers, numerics and timestamps (an interval step), `unnest(array [, ...])`
//! (several arrays zipped, the shorter padded with NULLs), `generate_subscripts` and
//! `information_schema._pg_expandarray(array)` (columns `x`, an element, and `n`, its
//! position from 1; in a select list one `record` of the two, as PostgreSQL's OUT
//! parameters give), each `WITH ORDINALITY` if asked. A call is a relation of the FROM clause (`Relation::function`), planned as a
//! Function Scan node of the joins (`join::Node::Function`); its arguments may read the
//! relations before it (`FROM t, unnest(t.tags)`, `CROSS JOIN LATERAL`), which makes
//! it run once per row of those.
//!
//! The rows are materialized, as every scan's are in this executor: a series longer
//! than `MAX_ROWS` is refused (54000) rather than exhausting memory.

use sqlparser::ast;

use crate::error::{DbError, DbResult};
use crate::record::{Record, RecordType};
use crate::sql::arrays;
use crate::sql::expr::{to_num, BinOp, Expr, Num};
use crate::value::{CatalogType, DataType, Value};

/// The most rows one call may give.
pub const MAX_ROWS: usize = 50_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SetFunction {
    GenerateSeries,
    Unnest,
    /// `generate_subscripts(array, dim [, reverse])`: the subscripts of the array's
    /// dimension `dim` (from 0 for an int2vector or oidvector).
    GenerateSubscripts,
    /// `pg_partition_ancestors(regclass)`: the partitioned tables above a partition and
    /// the partition itself. No table is partitioned here, so none, as PostgreSQL gives
    /// for a table that is not a partition (psql's `\d` reads it for foreign keys and
    /// triggers).
    PartitionAncestors,
    /// `information_schema._pg_expandarray(array)`: (x, n) for each element x at
    /// position n (from 1, whatever the array's first subscript: an int2vector's too).
    ExpandArray,
}

impl SetFunction {
    pub(crate) fn named(name: &str) -> Option<SetFunction> {
        match name {
            "generate_series" => Some(SetFunction::GenerateSeries),
            "unnest" => Some(SetFunction::Unnest),
            "generate_subscripts" => Some(SetFunction::GenerateSubscripts),
            "pg_partition_ancestors" => Some(SetFunction::PartitionAncestors),
            _ => None,
        }
    }

    /// The function a (possibly schema-qualified) name calls: the built-in ones bare or
    /// in `pg_catalog`, `_pg_expandarray` in `information_schema` only (where
    /// PostgreSQL keeps it, off the search path).
    pub(crate) fn named_in_schema(name: &ast::ObjectName) -> Option<SetFunction> {
        let ident = |p: &ast::ObjectNamePart| p.as_ident().map(crate::sql::expr::ident_name);
        match name.0.as_slice() {
            [part] => SetFunction::named(&ident(part)?),
            [schema, part] => match (ident(schema)?.as_str(), ident(part)?.as_str()) {
                ("information_schema", "_pg_expandarray") => Some(SetFunction::ExpandArray),
                ("pg_catalog", name) => SetFunction::named(name),
                _ => None,
            },
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            SetFunction::GenerateSeries => "generate_series",
            SetFunction::Unnest => "unnest",
            SetFunction::GenerateSubscripts => "generate_subscripts",
            SetFunction::PartitionAncestors => "pg_partition_ancestors",
            SetFunction::ExpandArray => "_pg_expandarray",
        }
    }

    /// The name of its result column in FROM: the function's own, or its OUT
    /// parameter's where it has one named.
    fn column_name(self) -> &'static str {
        match self {
            SetFunction::PartitionAncestors => "relid",
            other => other.name(),
        }
    }
}

/// The name of the FROM item that runs several set-returning calls in lockstep
/// (PostgreSQL's `ROWS FROM (f(..), g(..))`, which a select list of several calls
/// becomes): its arguments are the calls.
pub(crate) const ROWS_FROM: &str = "__rows_from";

/// One call of the calls a scan zips: its function, how many of the scan's arguments
/// and result columns are its, the first subscript of its array (generate_subscripts),
/// and the record its columns are given as (`FunctionScan::into_one_column`).
#[derive(Clone, Copy, Debug)]
struct Part {
    func: SetFunction,
    args: usize,
    columns: usize,
    lower: i64,
    record: Option<RecordType>,
}

/// A compiled call of a set-returning function in FROM, or several zipped (ROWS FROM).
#[derive(Clone, Debug)]
pub struct FunctionScan {
    /// Every call's arguments one after the other, compiled against the FROM clause's
    /// wide row (the relations before this one).
    pub(crate) args: Vec<Expr>,
    pub(crate) ordinality: bool,
    /// The result columns' types (before the ordinality).
    pub(crate) types: Vec<DataType>,
    parts: Vec<Part>,
}

impl FunctionScan {
    /// Checks the call and works out its columns' types from its arguments' static
    /// types (`arg_types`).
    pub(crate) fn new(
        func: SetFunction,
        args: Vec<Expr>,
        arg_types: &[Option<DataType>],
        ordinality: bool,
    ) -> DbResult<FunctionScan> {
        let mut lower = 1;
        let types = match func {
            SetFunction::GenerateSeries => {
                if !(2..=3).contains(&args.len()) {
                    return Err(DbError::UndefinedFunction(format!(
                        "generate_series() with {} argument(s)",
                        args.len()
                    )));
                }
                vec![series_type(arg_types)]
            }
            SetFunction::Unnest => {
                if args.is_empty() {
                    return Err(DbError::UndefinedFunction("unnest() with 0 argument(s)".into()));
                }
                arg_types
                    .iter()
                    .map(|t| match t {
                        Some(DataType::Array(elem)) => Ok(elem.data_type()),
                        Some(DataType::Catalog(c)) if c.is_vector() => Ok(DataType::Int),
                        Some(DataType::Text { .. }) | None => Ok(DataType::Text { max_chars: None }),
                        Some(other) => {
                            Err(DbError::UndefinedFunction(format!("unnest({})", arrays::pg_name(*other))))
                        }
                    })
                    .collect::<DbResult<Vec<_>>>()?
            }
            SetFunction::GenerateSubscripts => {
                if !(2..=3).contains(&args.len()) {
                    return Err(DbError::UndefinedFunction(format!(
                        "generate_subscripts() with {} argument(s)",
                        args.len()
                    )));
                }
                match arg_types[0] {
                    Some(DataType::Catalog(c)) if c.is_vector() => lower = 0,
                    Some(DataType::Array(_) | DataType::Text { .. }) | None => {}
                    Some(other) => {
                        return Err(DbError::UndefinedFunction(format!(
                            "generate_subscripts({}, integer)",
                            arrays::pg_name(other)
                        )))
                    }
                }
                vec![DataType::Int]
            }
            SetFunction::PartitionAncestors => {
                if args.len() != 1 {
                    return Err(DbError::UndefinedFunction(format!(
                        "pg_partition_ancestors() with {} argument(s)",
                        args.len()
                    )));
                }
                vec![DataType::Catalog(CatalogType::RegClass)]
            }
            SetFunction::ExpandArray => {
                if args.len() != 1 {
                    return Err(DbError::UndefinedFunction(format!(
                        "information_schema._pg_expandarray() with {} argument(s)",
                        args.len()
                    )));
                }
                let elem = match arg_types[0] {
                    Some(DataType::Array(elem)) => elem.data_type(),
                    Some(DataType::Catalog(c)) if c.is_vector() => DataType::Int,
                    Some(DataType::Text { .. }) | None => DataType::Text { max_chars: None },
                    Some(other) => {
                        return Err(DbError::UndefinedFunction(format!(
                            "information_schema._pg_expandarray({})",
                            arrays::pg_name(other)
                        )))
                    }
                };
                vec![elem, DataType::Int]
            }
        };
        let part = Part { func, args: args.len(), columns: types.len(), lower, record: None };
        Ok(FunctionScan { args, ordinality, types, parts: vec![part] })
    }

    /// Several calls run in lockstep (`ROWS FROM`): row i holds each call's row i, NULLs
    /// for a call that has fewer rows.
    pub(crate) fn zip(scans: Vec<FunctionScan>, ordinality: bool) -> FunctionScan {
        let mut out = FunctionScan { args: Vec::new(), ordinality, types: Vec::new(), parts: Vec::new() };
        for scan in scans {
            out.args.extend(scan.args);
            out.types.extend(scan.types);
            out.parts.extend(scan.parts);
        }
        out
    }

    /// The call as a select list reads it: one value per row, a function of several
    /// output columns giving them as one record (PostgreSQL's `SELECT
    /// information_schema._pg_expandarray(a)` is a column of `record`).
    pub(crate) fn into_one_column(mut self) -> FunctionScan {
        if let [part] = self.parts.as_mut_slice() {
            if part.func == SetFunction::ExpandArray {
                let elem = crate::array::ElemType::of(self.types[0]).unwrap_or(crate::array::ElemType::Text);
                let ty = RecordType::ExpandArray(elem);
                part.record = Some(ty);
                part.columns = 1;
                self.types = vec![DataType::Record(ty)];
            }
        }
        self
    }

    /// Whether the arguments read a row of the relations before this one (LATERAL).
    pub(crate) fn is_lateral(&self) -> bool {
        let mut columns = Vec::new();
        self.args.iter().for_each(|a| a.columns(&mut columns));
        !columns.is_empty()
    }

    /// The column names as PostgreSQL gives them: the function's name for each value
    /// column, `ordinality` for the counter.
    pub(crate) fn column_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .parts
            .iter()
            .flat_map(|p| match (p.func, p.record) {
                (SetFunction::ExpandArray, None) => vec!["x".to_string(), "n".to_string()],
                _ => vec![p.func.column_name().to_string(); p.columns],
            })
            .collect();
        if self.ordinality {
            names.push("ordinality".into());
        }
        names
    }

    /// The column types, the ordinality's included.
    pub(crate) fn column_types(&self) -> Vec<DataType> {
        let mut types = self.types.clone();
        if self.ordinality {
            types.push(DataType::Int);
        }
        types
    }

    /// The rows of the call, its arguments evaluated on `row`.
    pub(crate) fn rows(&self, row: &[Value]) -> DbResult<Vec<Vec<Value>>> {
        let values = self.args.iter().map(|a| a.eval(row, &[])).collect::<DbResult<Vec<_>>>()?;
        let mut rows = match self.parts.as_slice() {
            [part] => self.part_rows(part, 0, values)?,
            parts => {
                let mut values = values.into_iter();
                let mut each = Vec::with_capacity(parts.len());
                let mut column = 0;
                for part in parts {
                    let args: Vec<Value> = values.by_ref().take(part.args).collect();
                    each.push((part.columns, self.part_rows(part, column, args)?.into_iter()));
                    column += part.columns;
                }
                let n = each.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
                (0..n)
                    .map(|_| {
                        let mut out = Vec::with_capacity(self.types.len() + 1);
                        for (width, rows) in &mut each {
                            match rows.next() {
                                Some(r) => out.extend(r),
                                None => out.extend(std::iter::repeat_n(Value::Null, *width)),
                            }
                        }
                        out
                    })
                    .collect()
            }
        };
        if self.ordinality {
            for (i, r) in rows.iter_mut().enumerate() {
                r.push(Value::Int(i as i64 + 1));
            }
        }
        Ok(rows)
    }

    /// The rows of one call (whose first result column is `column`).
    fn part_rows(&self, part: &Part, column: usize, values: Vec<Value>) -> DbResult<Vec<Vec<Value>>> {
        let rows = match part.func {
            SetFunction::GenerateSeries => series(&values, self.types[column]),
            SetFunction::Unnest => unnest(values),
            SetFunction::GenerateSubscripts => subscripts(values, part.lower),
            SetFunction::PartitionAncestors => Ok(Vec::new()),
            SetFunction::ExpandArray => expand_array(values),
        }?;
        Ok(match part.record {
            None => rows,
            Some(ty) => rows.into_iter().map(|fields| vec![Record::new(ty, fields).into_value()]).collect(),
        })
    }

    /// The call as EXPLAIN shows it.
    pub(crate) fn explain_name(&self) -> &'static str {
        match self.parts.as_slice() {
            [part] => part.func.name(),
            _ => "ROWS FROM",
        }
    }

    pub(crate) fn map_args(&self, f: &mut dyn FnMut(&Expr) -> DbResult<Expr>) -> DbResult<FunctionScan> {
        Ok(FunctionScan { args: self.args.iter().map(&mut *f).collect::<DbResult<_>>()?, ..self.clone() })
    }
}

/// generate_subscripts(array, dim [, reverse]): the subscripts of an array's dimension,
/// the first `lower`; none for a NULL array or another dimension than the one arrays
/// have here (1), as PostgreSQL gives none for a dimension an array lacks.
fn subscripts(values: Vec<Value>, lower: i64) -> DbResult<Vec<Vec<Value>>> {
    let mut values = values.into_iter();
    let (array, dim) = (values.next().unwrap_or(Value::Null), values.next().unwrap_or(Value::Null));
    let reverse = values.next().unwrap_or(Value::Bool(false));
    if array.is_null() || dim.is_null() || reverse.is_null() {
        return Ok(Vec::new());
    }
    let dim = match to_num(&dim)? {
        Num::I(i) => i,
        _ => return Err(DbError::TypeMismatch { expected: "integer".into(), value: dim.to_string() }),
    };
    let Value::Bool(reverse) = crate::schema::coerce(reverse, DataType::Bool)? else {
        unreachable!("coerced to a boolean")
    };
    let len = arrays::as_array(array, None)?.items.len() as i64;
    if dim != 1 {
        return Ok(Vec::new());
    }
    let mut out: Vec<Vec<Value>> = (lower..lower + len).map(|i| vec![Value::Int(i)]).collect();
    if reverse {
        out.reverse();
    }
    Ok(out)
}

/// `_pg_expandarray(array)`: (element, position from 1) for each element; none for a
/// NULL array.
fn expand_array(values: Vec<Value>) -> DbResult<Vec<Vec<Value>>> {
    let array = values.into_iter().next().unwrap_or(Value::Null);
    if array.is_null() {
        return Ok(Vec::new());
    }
    let items = arrays::as_array(array, None)?.into_items();
    Ok(items.into_iter().zip(1..).map(|(x, n)| vec![x, Value::Int(n)]).collect())
}

/// generate_series's result type: a timestamp's kind with timestamps (a date's series is
/// a TIMESTAMPTZ's, as PostgreSQL resolves it), NUMERIC with a NUMERIC or a FLOAT
/// argument, else BIGINT.
fn series_type(args: &[Option<DataType>]) -> DataType {
    let start_and_stop = &args[..args.len().min(2)];
    if start_and_stop.iter().any(|t| matches!(t, Some(DataType::Timestamp))) {
        DataType::Timestamp
    } else if start_and_stop.iter().any(|t| matches!(t, Some(DataType::TimestampTz | DataType::Date))) {
        DataType::TimestampTz
    } else if args
        .iter()
        .any(|t| matches!(t, Some(DataType::Numeric(_) | DataType::Float | DataType::Float4)))
    {
        DataType::Numeric(None)
    } else {
        DataType::Int
    }
}

fn step_zero() -> DbError {
    DbError::InvalidArgument("step size cannot equal zero".into())
}

fn too_many_rows() -> DbError {
    DbError::ProgramLimitExceeded(format!("generate_series of more than {MAX_ROWS} rows"))
}

fn series(values: &[Value], ty: DataType) -> DbResult<Vec<Vec<Value>>> {
    if values.iter().any(Value::is_null) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    match ty {
        DataType::Int => {
            let int = |v: &Value| match to_num(v)? {
                Num::I(i) => Ok(i),
                _ => Err(DbError::TypeMismatch { expected: "bigint".into(), value: v.to_string() }),
            };
            let (start, stop) = (int(&values[0])?, int(&values[1])?);
            let step = values.get(2).map(int).transpose()?.unwrap_or(1);
            if step == 0 {
                return Err(step_zero());
            }
            let mut i = start;
            while (step > 0 && i <= stop) || (step < 0 && i >= stop) {
                if out.len() >= MAX_ROWS {
                    return Err(too_many_rows());
                }
                out.push(vec![Value::Int(i)]);
                match i.checked_add(step) {
                    Some(next) => i = next,
                    None => break,
                }
            }
        }
        DataType::Numeric(_) => {
            let dec = |v: &Value| crate::schema::coerce(v.clone(), DataType::Numeric(None));
            let (start, stop) = (dec(&values[0])?, dec(&values[1])?);
            let step = values.get(2).map(dec).transpose()?.unwrap_or(Value::Int(1));
            let zero = Value::Int(0);
            let sign = crate::sql::expr::compare(&step, &zero)?.expect("not NULL");
            if sign == std::cmp::Ordering::Equal {
                return Err(step_zero());
            }
            let mut i = start;
            loop {
                let past = crate::sql::expr::compare(&i, &stop)?.expect("not NULL");
                if past == sign {
                    break;
                }
                if out.len() >= MAX_ROWS {
                    return Err(too_many_rows());
                }
                let next = crate::sql::expr::arithmetic(BinOp::Add, to_num(&i)?, to_num(&step)?)?.value();
                out.push(vec![crate::schema::coerce(i, DataType::Numeric(None))?]);
                i = next;
            }
        }
        ty => {
            let Some(step) = values.get(2) else {
                return Err(DbError::UndefinedFunction(format!(
                    "generate_series({0}, {0})",
                    arrays::pg_name(ty)
                )));
            };
            let step = crate::schema::coerce(step.clone(), DataType::Interval)?;
            let Value::Interval(iv) = &step else { unreachable!("coerced to an interval") };
            if iv.comparable() == 0 {
                return Err(step_zero());
            }
            let forward = iv.comparable() > 0;
            let start = crate::schema::coerce(values[0].clone(), ty)?;
            let stop = crate::schema::coerce(values[1].clone(), ty)?;
            let mut i = start;
            loop {
                let o = crate::sql::expr::compare(&i, &stop)?.expect("not NULL");
                if (forward && o == std::cmp::Ordering::Greater)
                    || (!forward && o == std::cmp::Ordering::Less)
                {
                    break;
                }
                if out.len() >= MAX_ROWS {
                    return Err(too_many_rows());
                }
                let next = crate::sql::temporal::arithmetic(BinOp::Add, &i, &step)
                    .expect("a timestamp plus an interval")?;
                out.push(vec![i]);
                i = next;
            }
        }
    }
    Ok(out)
}

/// unnest of one or more arrays: row i holds element i of each (NULL past an array's
/// end); a NULL array has no elements.
fn unnest(values: Vec<Value>) -> DbResult<Vec<Vec<Value>>> {
    let arrays = values
        .into_iter()
        .map(|v| match v {
            Value::Null => Ok(Vec::new()),
            v => arrays::as_array(v, None).map(|a| a.into_items()),
        })
        .collect::<DbResult<Vec<_>>>()?;
    let n = arrays.iter().map(Vec::len).max().unwrap_or(0);
    let mut iters: Vec<_> = arrays.into_iter().map(Vec::into_iter).collect();
    Ok((0..n).map(|_| iters.iter_mut().map(|it| it.next().unwrap_or(Value::Null)).collect()).collect())
}

/// The set-returning function `e` calls with its arguments, if it is such a call (not
/// a window, no ORDER BY inside).
pub(crate) fn call_of(e: &ast::Expr) -> Option<(SetFunction, Vec<ast::Expr>)> {
    let ast::Expr::Function(f) = e else { return None };
    let func = SetFunction::named_in_schema(&f.name)?;
    let ast::FunctionArguments::List(list) = &f.args else { return None };
    let args = list
        .args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    (f.over.is_none() && list.clauses.is_empty()).then_some((func, args))
}

/// A select item `(f(..)).field` of a set-returning call `f` whose rows are records:
/// the call and the field's name.
fn field_of_call(e: &ast::Expr) -> Option<(ast::Expr, ast::Ident)> {
    let ast::Expr::CompoundFieldAccess { root, access_chain } = e else { return None };
    let [ast::AccessExpr::Dot(ast::Expr::Identifier(field))] = access_chain.as_slice() else { return None };
    let mut call = root.as_ref();
    while let ast::Expr::Nested(inner) = call {
        call = inner;
    }
    call_of(call).map(|_| (call.clone(), field.clone()))
}

/// The alias of the FROM item a select list's set-returning functions become.
pub(crate) const SELECT_LIST_ALIAS: &str = "__select_list_srf";

/// A SELECT whose select list calls set-returning functions (`SELECT generate_series(1,
/// 3)`, `SELECT id, unnest(tags) FROM t`), rewritten as PostgreSQL 10+ runs it: one
/// row per value the function gives for each input row (none for an empty array), as
/// if the call were a lateral function in FROM whose column the item reads. Several
/// `unnest` items run in lockstep, the shorter padded with NULLs (one zipped unnest).
/// None when the select list calls none.
///
/// Only a call that is the whole select item is taken; a call inside an expression,
/// or beside GROUP BY or HAVING (where PostgreSQL runs it after grouping), is 0A000.
pub(crate) fn select_list_functions(select: &ast::Select) -> DbResult<Option<ast::Select>> {
    let mut calls = Vec::new();
    let mut call_items = Vec::new();
    for item in &select.projection {
        let expr = match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => continue,
        };
        if let Some(call) = call_of(expr) {
            calls.push(call);
            call_items.push(expr.clone());
        } else if let Some((call, _)) = field_of_call(expr) {
            calls.push(call_of(&call).expect("a set-returning call"));
            call_items.push(call);
        }
    }
    if calls.is_empty() {
        return Ok(None);
    }
    let grouped = !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        || select.having.is_some();
    if grouped {
        return Err(DbError::Unsupported(
            "a set-returning function in the select list with GROUP BY or HAVING".into(),
        ));
    }
    // One FROM item for all: a lone call, a zipped unnest, or the calls in lockstep
    // (ROWS FROM), each giving one column.
    // A function of several output columns (`_pg_expandarray`) gives one record per row
    // here: it goes through ROWS FROM, whose calls give one column each.
    let (name, args, outputs) = match calls.as_slice() {
        [(func, args)] if *func != SetFunction::ExpandArray => {
            let outputs = if *func == SetFunction::Unnest { args.len() } else { 1 };
            (func.name(), args.clone(), outputs)
        }
        many if many.iter().all(|(f, args)| *f == SetFunction::Unnest && args.len() == 1) => {
            let args: Vec<ast::Expr> = many.iter().map(|(_, args)| args[0].clone()).collect();
            let n = args.len();
            (SetFunction::Unnest.name(), args, n)
        }
        many if many.iter().all(|(f, args)| *f != SetFunction::Unnest || args.len() == 1) => {
            (ROWS_FROM, call_items.clone(), many.len())
        }
        _ => {
            return Err(DbError::Unsupported(
                "unnest of several arrays beside other set-returning functions in a select list".into(),
            ))
        }
    };
    let columns: Vec<String> = (1..=outputs).map(|i| format!("c{i}")).collect();
    let factor = ast::TableFactor::Function {
        lateral: true,
        name: ast::ObjectName::from(vec![ast::Ident::new(name)]),
        args: args.into_iter().map(|e| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))).collect(),
        with_ordinality: false,
        alias: Some(ast::TableAlias {
            explicit: true,
            name: ast::Ident::new(SELECT_LIST_ALIAS),
            columns: columns.iter().map(|c| ast::TableAliasColumnDef::from_name(c.as_str())).collect(),
            at: None,
        }),
    };
    let mut out = select.clone();
    out.from.push(ast::TableWithJoins { relation: factor, joins: Vec::new() });
    let mut next = 0;
    for item in &mut out.projection {
        let (expr, alias) = match item {
            ast::SelectItem::UnnamedExpr(e) => (e.clone(), None),
            ast::SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), Some(alias.clone())),
            _ => continue,
        };
        let field = field_of_call(&expr).map(|(_, field)| field);
        if call_of(&expr).is_none() && field.is_none() {
            continue;
        }
        let mut column = ast::Expr::CompoundIdentifier(vec![
            ast::Ident::new(SELECT_LIST_ALIAS),
            ast::Ident::new(columns[next].as_str()),
        ]);
        next += 1;
        if let Some(field) = field {
            // `(f(..)).n`: the field of the call's record, a column named after the field.
            column = ast::Expr::CompoundFieldAccess {
                root: Box::new(ast::Expr::Nested(Box::new(column))),
                access_chain: vec![ast::AccessExpr::Dot(ast::Expr::Identifier(field.clone()))],
            };
            let alias = alias.unwrap_or(field);
            *item = ast::SelectItem::ExprWithAlias { expr: column, alias };
            continue;
        }
        // The output column keeps the call's name (`generate_series`), as PostgreSQL's.
        let alias = alias.unwrap_or_else(|| ast::Ident::new(call_of(&expr).map_or("", |(f, _)| f.name())));
        *item = ast::SelectItem::ExprWithAlias { expr: column, alias };
    }
    Ok(Some(out))
}
