//! A column default as PostgreSQL's `pg_get_expr` prints it (pg_attrdef.adbin,
//! information_schema.columns.column_default): the database keeps a default as the text
//! it was written with, and clients compare that text with their own (Alembic's
//! autogenerate, SQLAlchemy's reflection), so it is printed here as PostgreSQL's deparser
//! (`ruleutils.c`, `get_const_expr`) prints the parsed expression:
//!
//! - an integer constant that fits an int4 prints bare (`0`), a negative one quoted and
//!   cast (`'-1'::integer`), a bigger one as a bigint (`'9999999999'::bigint`); a
//!   decimal prints bare (`1.5`), a negative one as `'-1.5'::numeric`;
//! - a string literal takes the column's type and prints quoted and cast to it
//!   (`'abc'::text`, `'x'::character varying`), except as a number or a boolean, which
//!   print bare (`0`, `true`); an argument of a function call is a text
//!   (`lower('X'::text)`), nextval's a regclass (`nextval('t_id_seq'::regclass)`);
//! - an implicit conversion to the column's type does not show; parentheses go around
//!   every operator (`(1 + 2)`) and nowhere else; function names print in lower case,
//!   CURRENT_TIMESTAMP and its kin as SQL writes them.
//!
//! The database keeps every integer as a bigint, so a string literal for an integer
//! column prints as a bigint's (`'0'::bigint`) where PostgreSQL's int4 column shows `0`.
//! An expression this does not know how to print keeps its text as written.

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::catalog::{format_type, type_oid};
use crate::value::{DataType, Value};

/// `text`, the default of a column of type `ty` (an integer declared `width` bytes wide:
/// see `TableSchema::int_widths`), as pg_get_expr prints it.
pub(crate) fn default_expr(text: &str, ty: DataType, width: u8) -> String {
    let parsed = Parser::new(&PostgreSqlDialect {}).try_with_sql(text).and_then(|mut p| p.parse_expr());
    let target = Target { ty, width };
    parsed.ok().and_then(|e| deparse(&e, Some(target))).unwrap_or_else(|| text.to_string())
}

/// The type a literal takes: the column's, with an integer's declared width.
#[derive(Clone, Copy)]
struct Target {
    ty: DataType,
    width: u8,
}

/// The expression printed, a literal in it taking type `target` if it has none of its
/// own; None for what this does not print.
fn deparse(e: &ast::Expr, target: Option<Target>) -> Option<String> {
    use ast::Expr as E;
    Some(match e {
        E::Value(v) => match &v.value {
            ast::Value::Number(n, _) => number(n, false),
            ast::Value::SingleQuotedString(s) => {
                string(s, target.unwrap_or(Target { ty: DataType::Text { max_chars: None }, width: 8 }))
            }
            ast::Value::Boolean(b) => b.to_string(),
            ast::Value::Null => "NULL".into(),
            _ => return None,
        },
        E::UnaryOp { op: ast::UnaryOperator::Minus, expr } => match expr.as_ref() {
            E::Value(ast::ValueWithSpan { value: ast::Value::Number(n, _), .. }) => number(n, true),
            other => format!("(- {})", deparse(other, None)?),
        },
        E::Nested(inner) => deparse(inner, target)?,
        E::BinaryOp { left, op, right } => {
            format!("({} {op} {})", deparse(left, None)?, deparse(right, None)?)
        }
        E::Cast { expr, data_type, kind: ast::CastKind::DoubleColon | ast::CastKind::Cast, .. } => {
            let ty = crate::sql::expr::sql_type(data_type).ok()?;
            match expr.as_ref() {
                E::Value(ast::ValueWithSpan { value: ast::Value::SingleQuotedString(s), .. }) => {
                    format!("'{}'::{}", s.replace('\'', "''"), type_name(ty))
                }
                other => format!("({})::{}", deparse(other, None)?, type_name(ty)),
            }
        }
        E::Function(f) => {
            let name = crate::sql::expr::object_name(&f.name).ok()?.to_ascii_lowercase();
            let keyword = matches!(
                name.as_str(),
                "current_timestamp" | "current_date" | "current_time" | "localtimestamp" | "localtime"
            );
            match &f.args {
                ast::FunctionArguments::None if keyword => name.to_ascii_uppercase(),
                ast::FunctionArguments::None => return None,
                ast::FunctionArguments::List(list) if list.clauses.is_empty() && f.over.is_none() => {
                    let args = list
                        .args
                        .iter()
                        .map(|a| match a {
                            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => match e {
                                E::Value(ast::ValueWithSpan {
                                    value: ast::Value::SingleQuotedString(s),
                                    ..
                                }) if name == "nextval" => {
                                    Some(format!("'{}'::regclass", s.replace('\'', "''")))
                                }
                                e => deparse(e, None),
                            },
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>()?;
                    format!("{name}({})", args.join(", "))
                }
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// A number constant: an int4 bare, a bigint cast; a decimal bare; a negative one
/// quoted and cast (`'-1'::integer`).
fn number(digits: &str, negative: bool) -> String {
    let signed = if negative { format!("-{digits}") } else { digits.to_string() };
    let ty = match signed.parse::<i64>() {
        Ok(v) if i32::try_from(v).is_ok() => "integer",
        Ok(_) => "bigint",
        Err(_) => "numeric",
    };
    match (ty, negative) {
        ("integer" | "numeric", false) => signed,
        _ => format!("'{signed}'::{ty}"),
    }
}

/// A string literal of type `ty`: a number or a boolean bare as its type prints it, any
/// other quoted and cast.
fn string(s: &str, target: Target) -> String {
    let trimmed = s.trim();
    let ty = target.ty;
    match ty {
        // An int4 constant prints bare when it is not negative (an int2's or int8's is
        // cast).
        DataType::Int if target.width == 4 && trimmed.parse::<i32>().is_ok_and(|v| v >= 0) => {
            return trimmed.parse::<i32>().map_or_else(|_| trimmed.to_string(), |v| v.to_string())
        }
        DataType::Bool => {
            if let Ok(Value::Bool(b)) = crate::schema::coerce(Value::Text(s.into()), DataType::Bool) {
                return b.to_string();
            }
        }
        DataType::Numeric(_)
            if !trimmed.starts_with('-')
                && trimmed.parse::<f64>().is_ok_and(f64::is_finite)
                && trimmed.chars().all(|c| c.is_ascii_digit() || c == '.') =>
        {
            return trimmed.to_string()
        }
        _ => {}
    }
    let name = match (ty, target.width) {
        (DataType::Int, 4) => "integer".to_string(),
        (DataType::Int, 2) => "smallint".to_string(),
        _ => type_name(ty),
    };
    format!("'{}'::{name}", s.replace('\'', "''"))
}

/// A type as a cast in deparsed text names it: without its modifier
/// (`character varying`, `numeric`), `bpchar` for a CHAR(n).
fn type_name(ty: DataType) -> String {
    match ty {
        DataType::Char { .. } => "bpchar".into(),
        ty => format_type(type_oid(ty), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text() -> DataType {
        DataType::Text { max_chars: None }
    }

    #[test]
    fn defaults_print_as_postgresql_deparses_them() {
        let cases = [
            ("0", DataType::Int, "0"),
            ("-1", DataType::Int, "'-1'::integer"),
            ("9999999999", DataType::Int, "'9999999999'::bigint"),
            ("1.5", DataType::Float, "1.5"),
            ("-1.5", DataType::Numeric(None), "'-1.5'::numeric"),
            ("'abc'", text(), "'abc'::text"),
            ("'o''k'", text(), "'o''k'::text"),
            ("'x'", DataType::Text { max_chars: Some(10) }, "'x'::character varying"),
            ("'0'", DataType::Numeric(None), "0"),
            ("'0'", DataType::Int, "'0'::bigint"),
            ("'f'", DataType::Bool, "false"),
            ("true", DataType::Bool, "true"),
            ("now()", DataType::TimestampTz, "now()"),
            ("NOW()", DataType::TimestampTz, "now()"),
            ("CURRENT_TIMESTAMP", DataType::TimestampTz, "CURRENT_TIMESTAMP"),
            ("'2020-01-01'", DataType::Date, "'2020-01-01'::date"),
            ("1+2", DataType::Int, "(1 + 2)"),
            ("(1)", DataType::Int, "1"),
            ("lower('X')", text(), "lower('X'::text)"),
            ("nextval('t_id_seq')", DataType::Int, "nextval('t_id_seq'::regclass)"),
            ("nextval('t_id_seq'::regclass)", DataType::Int, "nextval('t_id_seq'::regclass)"),
        ];
        for (written, ty, printed) in cases {
            assert_eq!(default_expr(written, ty, 8), printed, "the default {written} of a {ty:?}");
        }
        // Integer columns declared INTEGER and SMALLINT, as PostgreSQL's int4 and int2.
        assert_eq!(default_expr("'0'", DataType::Int, 4), "0");
        assert_eq!(default_expr("'-3'", DataType::Int, 4), "'-3'::integer");
        assert_eq!(default_expr("'7'", DataType::Int, 2), "'7'::smallint");
        assert_eq!(default_expr("0", DataType::Int, 2), "0");
    }
}
