//! `x [NOT] LIKE | ILIKE ALL (subquery)`. sqlparser reads `LIKE ALL (...)` as a call of a
//! function `all` (which `expr.rs` takes back as the quantifier), and a call's argument
//! cannot be a subquery there, so the statement's text is rewritten before it is parsed:
//! the subquery becomes `ARRAY(subquery)`, which is what ALL over a subquery's rows
//! means (its one column's values, in order).
//!
//! The rewrite works on sqlparser's own tokens, so strings, quoted names and comments are
//! never taken for the words; every other token is kept as written. Only a text holding
//! both `like` and `all` (any case) is tokenized.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// The statement with each `LIKE ALL (subquery)` / `ILIKE ALL (subquery)` as `... ALL
/// (ARRAY(subquery))`, None when it has none (or does not tokenize: the parser then
/// reports it as it is).
pub(crate) fn rewrite(sql: &str) -> Option<String> {
    let holds = |word: &[u8]| sql.as_bytes().windows(word.len()).any(|w| w.eq_ignore_ascii_case(word));
    if !holds(b"like") || !holds(b"all") {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let word = |i: usize| match &tokens[i] {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_lowercase()),
        _ => None,
    };
    let significant: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    // Token positions after which `ARRAY(` and before which `)` go.
    let mut opens = Vec::new();
    let mut closes = Vec::new();
    for k in 0..significant.len().saturating_sub(3) {
        let at = |n: usize| significant[k + n];
        if !matches!(word(at(0)).as_deref(), Some("like" | "ilike")) || word(at(1)).as_deref() != Some("all")
        {
            continue;
        }
        if tokens[at(2)] != Token::LParen
            || !matches!(word(at(3)).as_deref(), Some("select" | "with" | "values"))
        {
            continue;
        }
        // The `)` closing the parenthesis after ALL.
        let mut depth = 0usize;
        let close = significant[k + 2..].iter().copied().find(|&j| {
            match tokens[j] {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            depth == 0
        })?;
        opens.push(at(2));
        closes.push(close);
    }
    if opens.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 16 * opens.len());
    for (i, token) in tokens.iter().enumerate() {
        for _ in closes.iter().filter(|&&c| c == i) {
            out.push(')');
        }
        out.push_str(&token.to_string());
        if opens.contains(&i) {
            out.push_str("ARRAY(");
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subquery_after_like_all_becomes_an_array_of_its_rows() {
        assert_eq!(
            rewrite("SELECT 'a' LIKE ALL (SELECT p FROM t WHERE (x)) AND b not ilike all ( values ('x') )").as_deref(),
            Some("SELECT 'a' LIKE ALL (ARRAY(SELECT p FROM t WHERE (x))) AND b not ilike all (ARRAY( values ('x') ))")
        );
        // An array after ALL, the words in a string or a quoted name: unchanged.
        assert_eq!(rewrite("SELECT 'a' LIKE ALL (ARRAY['a%'])"), None);
        assert_eq!(rewrite("SELECT 'like all (select 1)'"), None);
        assert_eq!(rewrite("SELECT x FROM t UNION ALL SELECT y FROM u"), None);
    }
}
