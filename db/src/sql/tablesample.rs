//! `FROM t TABLESAMPLE BERNOULLI (p) [REPEATABLE (seed)]` and `TABLESAMPLE SYSTEM (p)`:
//! each row of the table kept with probability p / 100, decided as the row is read.
//!
//! The decision is a filter on the table's own rows, so it runs before any other
//! condition or join: a query of one table ANDs it into its WHERE
//! (`Func::TableSample`, the access paths unchanged), and a sampled table among
//! several relations is first made a subquery of that one table (`isolate_samples`),
//! so an outer join never filters its null-extended rows with it. Without REPEATABLE
//! every row draws a fresh random number, as PostgreSQL draws a new seed per scan;
//! with it the row's key is hashed with the seed, so the same seed over the same rows
//! keeps the same rows (not PostgreSQL's rows: its generator walks pages and tuple
//! offsets, which redodb's ordered maps do not have). For the same reason SYSTEM, which
//! PostgreSQL samples page by page, samples row by row here: the pages it would save
//! reading do not exist.
//!
//! Errors are PostgreSQL's: 2202H for a percentage outside [0, 100] or NULL, 42704 for
//! an unknown method, 0A000 for a view or WITH query, 42601 for the other dialects'
//! forms (ROWS, BUCKET, OFFSET, SAMPLE).

use sqlparser::ast;

use crate::error::{DbError, DbResult};
use crate::sql::expr::{to_num, Expr, Func};
use crate::value::Value;

/// The sampling methods PostgreSQL has built in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SampleMethod {
    Bernoulli,
    System,
}

/// A TABLESAMPLE clause, checked: its method, its percentage (an expression of no
/// column: a constant, or a bind parameter in a template) and its seed.
pub(crate) struct TableSample<'a> {
    pub method: SampleMethod,
    pub percentage: &'a ast::Expr,
    pub seed: Option<u64>,
}

fn syntax(message: String) -> DbError {
    DbError::Syntax { message, position: 0 }
}

/// The sample clause of a FROM item, checked; None for an item without one.
pub(crate) fn sample_of(factor: &ast::TableFactor) -> DbResult<Option<TableSample<'_>>> {
    let sample = match factor {
        ast::TableFactor::Table { sample: Some(kind), .. } => kind,
        ast::TableFactor::Derived { sample: Some(_), .. } => {
            return Err(syntax(
                "syntax error at or near \"TABLESAMPLE\" (a subquery cannot be sampled)".into(),
            ))
        }
        _ => return Ok(None),
    };
    let (ast::TableSampleKind::BeforeTableAlias(sample) | ast::TableSampleKind::AfterTableAlias(sample)) =
        sample;
    if sample.modifier != ast::TableSampleModifier::TableSample
        || sample.bucket.is_some()
        || sample.offset.is_some()
        || sample.seed.as_ref().is_some_and(|s| s.modifier != ast::TableSampleSeedModifier::Repeatable)
    {
        return Err(syntax(format!("syntax error in {sample}")));
    }
    let Some(quantity) = &sample.quantity else { return Err(syntax(format!("syntax error in {sample}"))) };
    let method = match (&sample.name, &quantity.value) {
        (Some(ast::TableSampleMethod::Bernoulli), _) => SampleMethod::Bernoulli,
        (Some(ast::TableSampleMethod::System), _) => SampleMethod::System,
        (Some(other), _) => {
            return Err(DbError::UndefinedObject(format!(
                "tablesample method {} does not exist",
                other.to_string().to_lowercase()
            )))
        }
        // `TABLESAMPLE foo (10)`: sqlparser reads a name it does not know as a call.
        (None, ast::Expr::Function(f)) => {
            return Err(DbError::UndefinedObject(format!(
                "tablesample method {} does not exist",
                crate::sql::expr::object_name(&f.name)?
            )))
        }
        (None, _) => return Err(syntax(format!("syntax error in {sample}"))),
    };
    if !quantity.parenthesized || quantity.unit.is_some() {
        return Err(syntax(format!("syntax error in {sample}")));
    }
    let seed = match &sample.seed {
        None => None,
        Some(seed) => {
            let ast::Value::Number(n, _) = &seed.value.value else {
                return Err(syntax(format!("syntax error in {sample}")));
            };
            let n: f64 = n.parse().map_err(|_| syntax(format!("syntax error in {sample}")))?;
            // PostgreSQL's seed is a double precision: 1 and 1.0 are the same seed.
            Some(n.to_bits())
        }
    };
    Ok(Some(TableSample { method, percentage: &quantity.value, seed }))
}

/// A SELECT whose FROM clause samples a table among other relations, with each
/// sampled table made a subquery of it alone (`(SELECT * FROM t TABLESAMPLE ...) AS
/// t`), which samples its rows before any join; None when there is nothing to rewrite
/// (no sample, or one table alone, sampled through the WHERE).
pub(crate) fn isolate_samples(select: &ast::Select) -> DbResult<Option<ast::Select>> {
    let factors = || {
        select
            .from
            .iter()
            .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)))
    };
    let mut sampled = false;
    for factor in factors() {
        sampled |= sample_of(factor)?.is_some();
    }
    if !sampled || factors().count() == 1 {
        return Ok(None);
    }
    let mut rewritten = select.clone();
    for table in &mut rewritten.from {
        isolate(&mut table.relation)?;
        for join in &mut table.joins {
            isolate(&mut join.relation)?;
        }
    }
    Ok(Some(rewritten))
}

fn isolate(factor: &mut ast::TableFactor) -> DbResult<()> {
    let ast::TableFactor::Table { name, alias, sample: Some(_), .. } = factor else { return Ok(()) };
    // The subquery takes the table's name (or its alias, column names too).
    let alias = alias.take().unwrap_or_else(|| ast::TableAlias {
        explicit: true,
        name: name.0.last().and_then(|p| p.as_ident()).cloned().unwrap_or_else(|| ast::Ident::new("sample")),
        columns: Vec::new(),
        at: None,
    });
    let inner = factor.clone();
    let mut query = match sqlparser::parser::Parser::parse_sql(
        &sqlparser::dialect::PostgreSqlDialect {},
        "SELECT * FROM t",
    )
    .ok()
    .and_then(|mut statements| statements.pop())
    {
        Some(ast::Statement::Query(query)) => query,
        _ => unreachable!("a constant query parses"),
    };
    let ast::SetExpr::Select(select) = query.body.as_mut() else {
        unreachable!("a constant query is a SELECT")
    };
    select.from[0].relation = inner;
    *factor = ast::TableFactor::Derived { lateral: false, subquery: query, alias: Some(alias), sample: None };
    Ok(())
}

/// The percentage a sample keeps, as a fraction of 1; 2202H outside [0, 100] or NULL.
fn fraction_of(percentage: &Value) -> DbResult<f64> {
    let p = match percentage {
        Value::Null => {
            return Err(DbError::TablesampleArgument("TABLESAMPLE parameter cannot be null".into()))
        }
        Value::Text(t) => t
            .trim()
            .parse::<f64>()
            .map_err(|_| DbError::TypeMismatch { expected: "real".into(), value: t.clone() })?,
        other => to_num(other)?.as_f64(),
    };
    if !(0.0..=100.0).contains(&p) {
        return Err(DbError::TablesampleArgument("sample percentage must be between 0 and 100".into()));
    }
    Ok(p / 100.0)
}

/// Checks a constant percentage as the statement is compiled, so that a wrong one
/// fails even over no rows, as PostgreSQL's does.
pub(crate) fn check_percentage(percentage: &Expr) -> DbResult<()> {
    match percentage {
        Expr::Literal(v) => fraction_of(v).map(|_| ()),
        _ => Ok(()),
    }
}

/// The predicate that keeps a row of the sampled table: `Func::TableSample` of the
/// percentage, the seed (NULL without REPEATABLE) and the table's key columns.
pub(crate) fn predicate(
    sample: &TableSample<'_>,
    percentage: Expr,
    key_columns: impl Iterator<Item = usize>,
) -> Expr {
    let seed = sample.seed.map_or(Value::Null, |s| Value::Int(s as i64));
    let args = [percentage, Expr::Literal(seed)].into_iter().chain(key_columns.map(Expr::Column)).collect();
    Expr::Func(Func::TableSample(sample.method), args)
}

/// Whether the row whose key is `key` is kept, with `percentage` and `seed` (see
/// `predicate`).
pub(crate) fn keeps(
    method: SampleMethod,
    percentage: &Value,
    seed: &Value,
    key: &[Value],
    draw: impl FnOnce() -> f64,
) -> DbResult<bool> {
    let fraction = fraction_of(percentage)?;
    // The two methods draw apart: one seed picks different rows through each.
    let salt = match method {
        SampleMethod::Bernoulli => 0,
        SampleMethod::System => 0x5157_4E4D,
    };
    let coin = match seed {
        Value::Int(seed) => unit_interval(key_hash(*seed as u64 ^ salt, key)),
        _ => draw(),
    };
    Ok(coin < fraction)
}

/// A hash of the seed and the row's key, mixed so that nearby keys land far apart.
fn key_hash(seed: u64, key: &[Value]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    seed.hash(&mut h);
    for v in key {
        match v {
            Value::Int(i) => (1u8, i).hash(&mut h),
            Value::Text(t) => (2u8, t).hash(&mut h),
            Value::Uuid(u) => (3u8, u).hash(&mut h),
            Value::Bytea(b) => (4u8, b).hash(&mut h),
            // Other key types by their text: the same value, the same text.
            other => (5u8, other.to_string()).hash(&mut h),
        }
    }
    splitmix64(h.finish() ^ seed)
}

/// SplitMix64's finalizer: every input bit reaches every output bit.
fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The top 53 bits of `x` as a number in [0, 1).
fn unit_interval(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeatable_keeps_depend_on_the_seed_and_the_key_only() {
        let key = [Value::Int(42)];
        let first: Vec<bool> = (0..64)
            .map(|seed| {
                keeps(SampleMethod::Bernoulli, &Value::Int(50), &Value::Int(seed), &key, || 0.0).unwrap()
            })
            .collect();
        let again: Vec<bool> = (0..64)
            .map(|seed| {
                keeps(SampleMethod::Bernoulli, &Value::Int(50), &Value::Int(seed), &key, || 0.0).unwrap()
            })
            .collect();
        assert_eq!(first, again);
        // Half the seeds keep the row, give or take.
        let kept = first.iter().filter(|k| **k).count();
        assert!((16..=48).contains(&kept), "{kept} of 64");
    }

    #[test]
    fn percentages_outside_0_to_100_fail_with_2202h() {
        for p in [Value::Float(-0.5), Value::Int(101), Value::Float(f64::NAN), Value::Null] {
            let e = keeps(SampleMethod::System, &p, &Value::Null, &[], || 0.5).unwrap_err();
            assert_eq!(e.sqlstate(), "2202H", "{p:?}");
        }
        assert!(keeps(SampleMethod::Bernoulli, &Value::Int(100), &Value::Null, &[], || 0.999_999).unwrap());
        assert!(!keeps(SampleMethod::Bernoulli, &Value::Int(0), &Value::Null, &[], || 0.0).unwrap());
    }
}
