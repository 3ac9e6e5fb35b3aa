//! Set-returning functions in FROM: `generate_series(start, stop [, step])` over
//! integers, numerics and timestamps (an interval step), and `unnest(array [, ...])`
//! (several arrays zipped, the shorter padded with NULLs), each `WITH ORDINALITY` if
//! asked. A call is a relation of the FROM clause (`Relation::function`), planned as a
//! Function Scan node of the joins (`join::Node::Function`); its arguments may read the
//! relations before it (`FROM t, unnest(t.tags)`, `CROSS JOIN LATERAL`), which makes
//! it run once per row of those.
//!
//! The rows are materialized, as every scan's are in this executor: a series longer
//! than `MAX_ROWS` is refused (54000) rather than exhausting memory.

use crate::error::{DbError, DbResult};
use crate::sql::arrays;
use crate::sql::expr::{to_num, BinOp, Expr, Num};
use crate::value::{DataType, Value};

/// The most rows one call may give.
pub const MAX_ROWS: usize = 50_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SetFunction {
    GenerateSeries,
    Unnest,
}

impl SetFunction {
    pub(crate) fn named(name: &str) -> Option<SetFunction> {
        match name {
            "generate_series" => Some(SetFunction::GenerateSeries),
            "unnest" => Some(SetFunction::Unnest),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            SetFunction::GenerateSeries => "generate_series",
            SetFunction::Unnest => "unnest",
        }
    }
}

/// A compiled call of a set-returning function in FROM.
#[derive(Clone, Debug)]
pub struct FunctionScan {
    pub(crate) func: SetFunction,
    /// Compiled against the FROM clause's wide row (the relations before this one).
    pub(crate) args: Vec<Expr>,
    pub(crate) ordinality: bool,
    /// The result columns' types (before the ordinality).
    pub(crate) types: Vec<DataType>,
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
                        Some(DataType::Text { .. }) | None => Ok(DataType::Text { max_chars: None }),
                        Some(other) => {
                            Err(DbError::UndefinedFunction(format!("unnest({})", arrays::pg_name(*other))))
                        }
                    })
                    .collect::<DbResult<Vec<_>>>()?
            }
        };
        Ok(FunctionScan { func, args, ordinality, types })
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
        let mut names = vec![self.func.name().to_string(); self.types.len()];
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
        let mut rows = match self.func {
            SetFunction::GenerateSeries => series(&values, self.types[0])?,
            SetFunction::Unnest => unnest(values)?,
        };
        if self.ordinality {
            for (i, r) in rows.iter_mut().enumerate() {
                r.push(Value::Int(i as i64 + 1));
            }
        }
        Ok(rows)
    }

    /// The call as EXPLAIN shows it.
    pub(crate) fn explain_name(&self) -> &'static str {
        self.func.name()
    }

    pub(crate) fn map_args(&self, f: &mut dyn FnMut(&Expr) -> DbResult<Expr>) -> DbResult<FunctionScan> {
        Ok(FunctionScan { args: self.args.iter().map(&mut *f).collect::<DbResult<_>>()?, ..self.clone() })
    }
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
    } else if args.iter().any(|t| matches!(t, Some(DataType::Numeric(_) | DataType::Float))) {
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
            v => arrays::as_array(v, None).map(|a| a.items),
        })
        .collect::<DbResult<Vec<_>>>()?;
    let n = arrays.iter().map(Vec::len).max().unwrap_or(0);
    let mut iters: Vec<_> = arrays.into_iter().map(Vec::into_iter).collect();
    Ok((0..n).map(|_| iters.iter_mut().map(|it| it.next().unwrap_or(Value::Null)).collect()).collect())
}
