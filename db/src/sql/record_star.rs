//! `(expr).*`: a record expanded into its fields as select-list columns (`SELECT (t).*`,
//! `(f(x)).*`, `(q.r).*`). sqlparser reads no `*` after a parenthesis and a dot, so the
//! statement's text is rewritten before it is parsed: the `*` becomes the quoted name
//! `"*"` (`FIELDS_MARKER`), a field access sqlparser reads, which the select list
//! expands (`query.rs`) and any other place refuses as PostgreSQL does (0A000, row
//! expansion via "*" is not supported here).
//!
//! The rewrite works on sqlparser's own tokens, so strings, quoted names and comments are
//! never taken for the pattern; every other token is kept as written. Only a text with
//! `)` then `.` then `*` (blanks between allowed) is tokenized.

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer, Word};

/// The name the `*` of `(expr).*` is read as.
pub(crate) const FIELDS_MARKER: &str = "*";

/// The statement with each `(expr).*` as `(expr)."*"`, None when it has none (or does
/// not tokenize: the parser then reports it as it is).
pub(crate) fn rewrite(sql: &str) -> Option<String> {
    if !may_hold_pattern(sql) {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let significant: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    let stars: Vec<usize> = significant
        .windows(3)
        .filter(|w| {
            tokens[w[0]] == Token::RParen && tokens[w[1]] == Token::Period && tokens[w[2]] == Token::Mul
        })
        .map(|w| w[2])
        .collect();
    if stars.is_empty() {
        return None;
    }
    let marker = Token::Word(Word {
        value: FIELDS_MARKER.into(),
        quote_style: Some('"'),
        keyword: sqlparser::keywords::Keyword::NoKeyword,
    });
    let mut out = String::with_capacity(sql.len() + 2 * stars.len());
    for (i, token) in tokens.iter().enumerate() {
        match stars.contains(&i) {
            true => out.push_str(&marker.to_string()),
            false => out.push_str(&token.to_string()),
        }
    }
    Some(out)
}

/// Whether the text has `)`, `.`, `*` in a row, blanks between: a cheap test that keeps
/// every other statement from being tokenized twice.
fn may_hold_pattern(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    let next = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        bytes.get(i).map(|&b| (i, b))
    };
    bytes.iter().enumerate().any(|(i, &b)| {
        b == b')' && matches!(next(i + 1), Some((dot, b'.')) if matches!(next(dot + 1), Some((_, b'*'))))
    })
}

/// The record `(expr).*` expands, when `e` is one (the field access to the marker).
pub(crate) fn expanded_record(e: &ast::Expr) -> Option<ast::Expr> {
    let ast::Expr::CompoundFieldAccess { root, access_chain } = e else { return None };
    let (last, before) = access_chain.split_last()?;
    if !is_marker_access(last) {
        return None;
    }
    Some(match before.is_empty() {
        true => root.as_ref().clone(),
        false => ast::Expr::CompoundFieldAccess { root: root.clone(), access_chain: before.to_vec() },
    })
}

/// Whether `field` is the marker a rewritten `.*` left.
pub(crate) fn is_marker(field: &ast::Ident) -> bool {
    field.value == FIELDS_MARKER && field.quote_style == Some('"')
}

fn is_marker_access(access: &ast::AccessExpr) -> bool {
    matches!(access, ast::AccessExpr::Dot(ast::Expr::Identifier(ident)) if is_marker(ident))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_after_a_parenthesis_and_a_dot_becomes_the_quoted_marker() {
        assert_eq!(
            rewrite("SELECT (t).*, (f(x)) . * FROM t").as_deref(),
            Some("SELECT (t).\"*\", (f(x)) . \"*\" FROM t")
        );
        // A qualified star, a count, a product and text are no record expansion.
        assert_eq!(rewrite("SELECT t.*, count(*), (a) * 2 FROM t"), None);
        assert_eq!(rewrite("SELECT ').*' FROM t"), None);
        assert_eq!(rewrite("SELECT 1 /* (t).* */"), None);
    }
}
