//! `GROUP BY DISTINCT ...` and `GROUP BY ALL ...` (PostgreSQL 14+): DISTINCT drops the
//! duplicate grouping sets left once ROLLUP, CUBE and GROUPING SETS are multiplied out;
//! ALL, the default, keeps them. sqlparser reads neither word there, so the statement's
//! text is rewritten before it is parsed: DISTINCT becomes a first GROUP BY item
//! `redodb_group_by_distinct()`, which `query.rs` takes back out as the flag; ALL goes.
//!
//! The rewrite works on sqlparser's own tokens, so strings, quoted names and comments are
//! never taken for the words; every other token is kept as written. Only a text holding
//! `group` and `distinct` or `all` (any case) is tokenized.

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// The GROUP BY item DISTINCT becomes.
const MARKER: &str = "redodb_group_by_distinct";

/// The statement with each `GROUP BY DISTINCT` as `GROUP BY redodb_group_by_distinct(),`
/// and each `GROUP BY ALL` as `GROUP BY`; None when it has neither (or does not
/// tokenize: the parser then reports it as it is).
pub(crate) fn rewrite(sql: &str) -> Option<String> {
    let holds = |word: &[u8]| sql.as_bytes().windows(word.len()).any(|w| w.eq_ignore_ascii_case(word));
    if !holds(b"group") || !(holds(b"distinct") || holds(b"all")) {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let word = |i: usize| match &tokens[i] {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_lowercase()),
        _ => None,
    };
    let significant: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i], Token::Whitespace(_))).collect();
    let mut edits: Vec<(usize, &str)> = Vec::new();
    for k in 0..significant.len().saturating_sub(2) {
        let at = |n: usize| significant[k + n];
        if word(at(0)).as_deref() != Some("group") || word(at(1)).as_deref() != Some("by") {
            continue;
        }
        match word(at(2)).as_deref() {
            Some("distinct") => edits.push((at(2), "redodb_group_by_distinct(),")),
            Some("all") => edits.push((at(2), "")),
            _ => {}
        }
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 32 * edits.len());
    for (i, token) in tokens.iter().enumerate() {
        match edits.iter().find(|(at, _)| *at == i) {
            Some((_, text)) => out.push_str(text),
            None => out.push_str(&token.to_string()),
        }
    }
    Some(out)
}

/// Whether a GROUP BY item is the mark of DISTINCT (see the module's doc).
pub(crate) fn is_marker(item: &ast::Expr) -> bool {
    match item {
        ast::Expr::Function(f) => {
            matches!(f.name.0.as_slice(), [ast::ObjectNamePart::Identifier(name)]
                if name.quote_style.is_none() && name.value.eq_ignore_ascii_case(MARKER))
                && matches!(&f.args, ast::FunctionArguments::List(list) if list.args.is_empty())
        }
        _ => false,
    }
}

/// The grouping sets with the repeated ones dropped, the first of each kept (each key in
/// it once, in the order written, as EXPLAIN shows it): two sets are the same when they
/// hold the same keys, in whatever order and however often.
pub(crate) fn distinct_sets(sets: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    let mut seen: Vec<Vec<usize>> = Vec::with_capacity(sets.len());
    let mut kept = Vec::with_capacity(sets.len());
    for set in sets {
        let mut keys = set.clone();
        keys.sort_unstable();
        keys.dedup();
        if !seen.contains(&keys) {
            seen.push(keys);
            let mut once = Vec::with_capacity(set.len());
            for key in set {
                if !once.contains(&key) {
                    once.push(key);
                }
            }
            kept.push(once);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_after_group_by_becomes_a_first_item_and_all_goes() {
        assert_eq!(
            rewrite("SELECT a FROM t GROUP BY DISTINCT ROLLUP (a, b), ROLLUP (a)").as_deref(),
            Some("SELECT a FROM t GROUP BY redodb_group_by_distinct(), ROLLUP (a, b), ROLLUP (a)")
        );
        assert_eq!(rewrite("select a from t group by all a").as_deref(), Some("select a from t group by  a"));
        // DISTINCT elsewhere, or the words in a string: unchanged.
        assert_eq!(rewrite("SELECT DISTINCT a FROM t GROUP BY a"), None);
        assert_eq!(rewrite("SELECT 'group by distinct' FROM t"), None);
    }

    #[test]
    fn distinct_sets_keep_the_first_of_each_set_of_keys() {
        assert_eq!(
            distinct_sets(vec![
                vec![0, 1, 0],
                vec![0, 1],
                vec![0],
                vec![0, 0],
                vec![1, 0],
                vec![],
                vec![0],
                vec![]
            ]),
            [vec![0, 1], vec![0], vec![]]
        );
    }
}
