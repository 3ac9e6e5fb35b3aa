//! `UPDATE t SET a[i] = x`: an assignment to one element of an array column.
//! sqlparser reads only column names as assignment targets, so the statement's text is
//! rewritten before it is parsed: `a[i] = x` becomes `a = redodb_array_assign(a, (i),
//! (x))`, an ordinary assignment whose value is the array with its i-th element set
//! (see `arrays::call`). The rewrite works on sqlparser's own tokens, so strings,
//! quoted names and comments are never taken for brackets, and every other token is
//! kept as written (a syntax error's position after a rewritten assignment is one in
//! the rewritten text).
//!
//! Only UPDATE statements whose text holds a `[` are tokenized here; every other
//! statement costs one prefix test. A prepared statement is rewritten once, when it is
//! parsed. Slices (`a[i:j] = ...`) and more than one subscript are refused (0A000):
//! arrays here have one dimension.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{DbError, DbResult};

/// The function an element assignment becomes.
pub(crate) const FUNCTION: &str = "redodb_array_assign";

/// The statement with its element assignments rewritten, None when it has none (or is
/// not an UPDATE, or does not tokenize: the parser then reports it as it is).
pub(crate) fn rewrite(sql: &str) -> Option<DbResult<String>> {
    let start = sql.trim_start();
    if !start.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("update")) || !sql.contains('[') {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let keyword =
        |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let ends_set = |t: &Token| {
        [Keyword::WHERE, Keyword::FROM, Keyword::RETURNING].iter().any(|&k| keyword(t, k))
            || matches!(t, Token::SemiColon | Token::EOF)
    };
    let significant =
        |from: usize| (from..tokens.len()).find(|&j| !matches!(tokens[j], Token::Whitespace(_)));
    let mut out = String::with_capacity(sql.len() + 64);
    let mut rewritten = false;
    let mut depth = 0usize;
    let mut i = 0;
    // Up to SET at the top level, as written.
    while i < tokens.len() {
        let t = &tokens[i];
        out.push_str(&t.to_string());
        i += 1;
        match t {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth = depth.saturating_sub(1),
            _ if depth == 0 && keyword(t, Keyword::SET) => break,
            _ => {}
        }
    }
    // Each assignment: a target, `=`, a value up to a comma at the top level.
    let mut at_target = true;
    while i < tokens.len() {
        if depth == 0 && ends_set(&tokens[i]) {
            break;
        }
        if at_target {
            if let Some(name_at) = significant(i) {
                if let (Token::Word(name), Some(open)) = (&tokens[name_at], significant(name_at + 1)) {
                    if tokens[open] == Token::LBracket {
                        // The subscript, to its closing bracket.
                        let mut level = 0usize;
                        let mut close = None;
                        for (j, t) in tokens.iter().enumerate().skip(open) {
                            match t {
                                Token::LBracket | Token::LParen => level += 1,
                                Token::RBracket | Token::RParen => {
                                    level -= 1;
                                    if level == 0 {
                                        close = Some(j);
                                        break;
                                    }
                                }
                                Token::Colon if level == 1 => {
                                    return Some(Err(DbError::Unsupported(
                                        "assigning a slice of an array (a[i:j] = ...)".into(),
                                    )))
                                }
                                _ => {}
                            }
                        }
                        let close = close?;
                        let eq = significant(close + 1)?;
                        if tokens[eq] == Token::LBracket {
                            return Some(Err(DbError::Unsupported(
                                "assigning an element of a multidimensional array".into(),
                            )));
                        }
                        if tokens[eq] != Token::Eq {
                            return None;
                        }
                        // The value: to a comma or the end of SET, at this level.
                        let mut level = 0usize;
                        let mut end = eq + 1;
                        while end < tokens.len() {
                            let t = &tokens[end];
                            match t {
                                Token::LParen | Token::LBracket => level += 1,
                                Token::RParen | Token::RBracket => level = level.saturating_sub(1),
                                Token::Comma if level == 0 => break,
                                _ if level == 0 && ends_set(t) => break,
                                _ => {}
                            }
                            end += 1;
                        }
                        // Whitespace before what follows stays outside the call.
                        while end > eq + 1 && matches!(tokens[end - 1], Token::Whitespace(_)) {
                            end -= 1;
                        }
                        let text = |range: std::ops::Range<usize>| {
                            tokens[range].iter().map(Token::to_string).collect::<String>()
                        };
                        let column = name.to_string();
                        out.push_str(&text(i..name_at));
                        out.push_str(&format!(
                            "{column} = {FUNCTION}({column}, ({}), ({}))",
                            text(open + 1..close),
                            text(eq + 1..end)
                        ));
                        rewritten = true;
                        at_target = false;
                        i = end;
                        continue;
                    }
                }
            }
            at_target = false;
        }
        let t = &tokens[i];
        match t {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth = depth.saturating_sub(1),
            Token::Comma if depth == 0 => at_target = true,
            _ => {}
        }
        out.push_str(&t.to_string());
        i += 1;
    }
    for t in &tokens[i..] {
        out.push_str(&t.to_string());
    }
    rewritten.then_some(Ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_assignments_become_calls_and_the_rest_is_kept() {
        let sql = "UPDATE t SET a[i + 1] = 'x,y', b = '[1]', c[2] = f(1, 2) WHERE id = 1";
        assert_eq!(
            rewrite(sql).unwrap().unwrap(),
            "UPDATE t SET a = redodb_array_assign(a, (i + 1), ( 'x,y')), b = '[1]', \
             c = redodb_array_assign(c, (2), ( f(1, 2))) WHERE id = 1"
        );
        assert!(rewrite("UPDATE t SET b = '[1]' WHERE a[1] = 2").is_none());
        assert!(rewrite("SELECT a[1] FROM t").is_none());
        assert!(matches!(rewrite("UPDATE t SET a[1:2] = '{1,2}'"), Some(Err(DbError::Unsupported(_)))));
    }
}
