//! Window frame exclusion: `EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS` after a
//! frame's bounds. sqlparser reads no frame exclusion, so the statement's text is
//! rewritten before it is parsed: the clause moves into the frame's last bound, which
//! becomes an offset bound whose expression is `redodb_frame_exclusion('ties', bound)`
//! (`bound` the offset as written, or the words `'current row'` / `'unbounded'`), and
//! `window.rs` takes the bound and the exclusion back out of that call as it compiles
//! the frame. `EXCLUDE NO OTHERS`, the default, is dropped.
//!
//! The rewrite works on sqlparser's own tokens, so strings, quoted names and comments are
//! never taken for the words, and every other token is kept as written (a syntax error's
//! position after a rewritten frame is one in the rewritten text). Only a text holding `exclude` (any case) is tokenized here:
//! every other statement costs one scan of its bytes, once when it is prepared.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// The function a bound carrying an exclusion becomes.
pub(crate) const FUNCTION: &str = "redodb_frame_exclusion";

/// A frame's exclusion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exclusion {
    NoOthers,
    CurrentRow,
    Group,
    Ties,
}

impl Exclusion {
    /// The exclusion named in a rewritten bound.
    pub(crate) fn named(name: &str) -> Option<Exclusion> {
        match name {
            "current row" => Some(Exclusion::CurrentRow),
            "group" => Some(Exclusion::Group),
            "ties" => Some(Exclusion::Ties),
            _ => None,
        }
    }
}

/// The statement with its frame exclusions moved into their frames' last bounds, None
/// when it has none (or does not tokenize: the parser then reports it as it is).
pub(crate) fn rewrite(sql: &str) -> Option<String> {
    if !sql.as_bytes().windows(7).any(|w| w.eq_ignore_ascii_case(b"exclude")) {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let word = |i: usize| match &tokens[i] {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_lowercase()),
        _ => None,
    };
    let significant: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    // Replacements: token range (first..last inclusive) and its new text.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for (k, &at) in significant.iter().enumerate() {
        if word(at).as_deref() != Some("exclude") || k < 2 {
            continue;
        }
        let next = |n: usize| significant.get(k + n).and_then(|&i| word(i));
        let (name, words) = match (next(1).as_deref(), next(2).as_deref()) {
            (Some("current"), Some("row")) => ("current row", 2),
            (Some("group"), _) => ("group", 1),
            (Some("ties"), _) => ("ties", 1),
            (Some("no"), Some("others")) => ("no others", 2),
            _ => continue,
        };
        let clause_end = significant[k + words];
        // The clause itself goes.
        let clause = (significant[k - 1] + 1, clause_end, String::new());
        if name == "no others" {
            edits.push(clause);
            continue;
        }
        let last = significant[k - 1];
        let before = significant[k - 2];
        let bound = match (word(before).as_deref(), word(last).as_deref()) {
            (Some("current"), Some("row")) => {
                (before, last, format!("{FUNCTION}('{name}', 'current row') FOLLOWING"))
            }
            (Some("unbounded"), Some(direction @ ("preceding" | "following"))) => {
                (before, last, format!("{FUNCTION}('{name}', 'unbounded') {direction}"))
            }
            (_, Some(direction @ ("preceding" | "following"))) => {
                // The offset: back to the frame's AND, BETWEEN or units word at its depth.
                let mut depth = 0i32;
                let mut start = None;
                for &j in significant[..k - 1].iter().rev() {
                    match &tokens[j] {
                        Token::RParen => depth += 1,
                        Token::LParen if depth == 0 => break,
                        Token::LParen => depth -= 1,
                        _ if depth == 0
                            && matches!(
                                word(j).as_deref(),
                                Some("and" | "between" | "rows" | "range" | "groups")
                            ) =>
                        {
                            start = Some(j + 1);
                            break;
                        }
                        _ => {}
                    }
                }
                let Some(start) = start else { continue };
                let text: String = tokens[start..last].iter().map(|t| t.to_string()).collect();
                let offset = match &tokens[significant.iter().copied().find(|&j| j >= start)?] {
                    // A quoted offset is an interval, as the parser reads one there.
                    Token::SingleQuotedString(_) if text.trim().starts_with('\'') => {
                        format!("INTERVAL {}", text.trim())
                    }
                    _ => format!("({})", text.trim()),
                };
                (start, last, format!(" {FUNCTION}('{name}', {offset}) {direction}"))
            }
            _ => continue,
        };
        edits.push(bound);
        edits.push(clause);
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 64);
    let mut i = 0;
    for (first, last, text) in edits {
        while i < first {
            out.push_str(&tokens[i].to_string());
            i += 1;
        }
        out.push_str(&text);
        i = last + 1;
    }
    for token in &tokens[i..] {
        out.push_str(&token.to_string());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exclusion_moves_into_the_frame_s_last_bound() {
        let rewritten = |sql: &str| rewrite(sql).unwrap_or_else(|| sql.to_string());
        assert_eq!(
            rewritten("SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE TIES) FROM t"),
            "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND redodb_frame_exclusion('ties', (1)) following) FROM t"
        );
        assert_eq!(
            rewritten("SELECT sum(x) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW exclude current row) FROM t"),
            "SELECT sum(x) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND redodb_frame_exclusion('current row', 'current row') FOLLOWING) FROM t"
        );
        assert_eq!(
            rewritten("SELECT 1 OVER (ORDER BY d RANGE '2 days' PRECEDING EXCLUDE GROUP)"),
            "SELECT 1 OVER (ORDER BY d RANGE redodb_frame_exclusion('group', INTERVAL '2 days') preceding)"
        );
        assert_eq!(
            rewritten("SELECT 1 OVER (ROWS UNBOUNDED PRECEDING EXCLUDE NO OTHERS)"),
            "SELECT 1 OVER (ROWS UNBOUNDED PRECEDING)"
        );
        // Not a frame's: a string, a quoted name, another EXCLUDE.
        assert_eq!(rewrite("SELECT 'exclude ties'"), None);
        assert_eq!(rewrite("SELECT \"exclude\" FROM t"), None);
    }
}
