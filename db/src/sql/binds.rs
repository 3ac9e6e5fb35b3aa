//! Oracle-style bind placeholders: `:name` and `:n` (`WHERE cust_id = :custId`,
//! `VALUES (:1, :2, :3, :4)`), bound by position as Oracle binds a SQL statement's
//! placeholders positionally: the i-th placeholder in the text takes the i-th value,
//! whatever its name or number, and a name written twice takes two values (PL/SQL would
//! coalesce it; a SQL statement does not).
//!
//! They are numbered before the statement is parsed: each `:name` becomes `$i`, padded
//! with spaces to the placeholder's own width, so the rest of the database (planning,
//! compiled templates, describing the parameters) only ever sees `$n`, and a syntax
//! error's position in the numbered text is its position in the text the user wrote.
//! A `$n` and a `:name` in one statement are refused: which value each would take is
//! anybody's guess.
//!
//! Only a colon immediately followed by a word or a run of digits, outside brackets, is a
//! placeholder: `::` (a cast), `:=`, and colons inside strings, quoted names and comments
//! are the tokenizer's other tokens and stay as they are.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{DbError, DbResult};

/// A statement's text with its `:name` placeholders numbered.
#[derive(Debug)]
pub(crate) struct Numbered {
    /// The text to parse: every placeholder `$i`.
    pub(crate) text: String,
    /// Where the numbered text is longer than the original (a `$i` wider than its
    /// placeholder, as `$10` for `:a`): the character offset in `text` just past each
    /// such placeholder, and the characters added up to there.
    shifts: Vec<(usize, usize)>,
}

impl Numbered {
    /// A 1-based character position in `text` as one in the original statement.
    pub(crate) fn original_position(&self, position: usize) -> usize {
        let added = self.shifts.iter().rev().find(|(end, _)| position > *end).map_or(0, |(_, n)| *n);
        position - added
    }

    /// A syntax error found in `text`, with its position in the original statement.
    pub(crate) fn locate(&self, error: DbError) -> DbError {
        match error {
            DbError::Syntax { message, position } if position > 0 => {
                DbError::Syntax { message, position: self.original_position(position) }
            }
            other => other,
        }
    }
}

/// Numbers the `:name` placeholders of `sql`; None when it has none (the statement is
/// parsed as written). A text the tokenizer refuses is left to the parser's error.
pub(crate) fn number_placeholders(sql: &str) -> DbResult<Option<Numbered>> {
    if !sql.contains(':') {
        return Ok(None);
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location() else {
        return Ok(None);
    };
    // Character offset of each line's start (the tokenizer's locations are line and
    // column, both counted in characters from 1).
    let mut line_starts = vec![0usize];
    for (offset, c) in sql.chars().enumerate() {
        if c == '\n' {
            line_starts.push(offset + 1);
        }
    }
    let offset_of = |line: u64, column: u64| line_starts[line as usize - 1] + column as usize - 1;

    // Each placeholder as (first character, characters it spans).
    let mut placeholders: Vec<(usize, usize)> = Vec::new();
    let mut dollar: Option<usize> = None;
    let mut brackets = 0usize;
    for (i, token) in tokens.iter().enumerate() {
        match &token.token {
            Token::LBracket => brackets += 1,
            Token::RBracket => brackets = brackets.saturating_sub(1),
            Token::Placeholder(p) if p.starts_with('$') => {
                dollar.get_or_insert(offset_of(token.span.start.line, token.span.start.column));
            }
            Token::Colon if brackets == 0 => {
                let Some(next) = tokens.get(i + 1) else { continue };
                let name_chars = match &next.token {
                    Token::Word(w) if w.quote_style.is_none() => w.value.chars().count(),
                    Token::Number(n, false) if n.bytes().all(|b| b.is_ascii_digit()) => n.len(),
                    _ => continue,
                };
                // (`: name` is no placeholder: the whitespace is a token of its own.)
                placeholders
                    .push((offset_of(token.span.start.line, token.span.start.column), 1 + name_chars));
            }
            _ => {}
        }
    }
    let Some(&(first, _)) = placeholders.first() else { return Ok(None) };
    if let Some(at) = dollar {
        return Err(DbError::Syntax {
            message: "bind placeholders of two kinds in one statement: $n and :name (use one kind)".into(),
            position: at.max(first) + 1,
        });
    }

    let mut text = String::with_capacity(sql.len() + placeholders.len());
    let mut shifts = Vec::new();
    let (mut added, mut next) = (0usize, 0usize);
    let mut chars = sql.chars().enumerate().peekable();
    while let Some((offset, c)) = chars.next() {
        match placeholders.get(next) {
            Some(&(start, width)) if start == offset => {
                next += 1;
                let number = format!("${next}");
                let written = number.len().max(width);
                text.push_str(&format!("{number:<written$}"));
                // The placeholder's other characters are replaced.
                for _ in 1..width {
                    chars.next();
                }
                if written > width {
                    added += written - width;
                    shifts.push((offset + added + width, added));
                }
            }
            _ => text.push(c),
        }
    }
    Ok(Some(Numbered { text, shifts }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(sql: &str) -> String {
        number_placeholders(sql).unwrap().map_or_else(|| sql.to_string(), |n| n.text)
    }

    #[test]
    fn placeholders_are_numbered_by_position_at_their_own_width() {
        assert_eq!(
            numbered("UPDATE customers SET cust_valid = 'Y' WHERE cust_id = :custId"),
            "UPDATE customers SET cust_valid = 'Y' WHERE cust_id = $1     "
        );
        assert_eq!(numbered("INSERT INTO t VALUES(:1,:2,:3,:4)"), "INSERT INTO t VALUES($1,$2,$3,$4)");
        // A name written twice takes two positions, and a number is only a name.
        assert_eq!(numbered("SELECT :b, :a, :b, :2"), "SELECT $1, $2, $3, $4");
        // Over several lines, with multi-byte characters before them.
        assert_eq!(numbered("SELECT 'é' AS x,\n  :first\nFROM t"), "SELECT 'é' AS x,\n  $1    \nFROM t");
    }

    #[test]
    fn other_colons_stay_as_written() {
        for sql in [
            "SELECT 1::bigint",
            "SELECT ':a' AS x",
            "SELECT 1 AS \":a\"",
            "SELECT 1 -- :a\n",
            "SELECT 1 /* :a */",
            "SELECT a[1:2] FROM t",
            "SELECT $1",
            "SELECT : a",
            "SELECT 'unterminated :a",
        ] {
            assert_eq!(numbered(sql), sql);
        }
        assert_eq!(numbered("SELECT :a::bigint"), "SELECT $1::bigint");
    }

    #[test]
    fn both_kinds_in_one_statement_are_refused_where_the_second_kind_starts() {
        let Err(DbError::Syntax { message, position }) = number_placeholders("SELECT $1, :a") else {
            panic!("accepted")
        };
        assert!(message.contains("two kinds"), "{message}");
        assert_eq!(position, 12);
        let Err(DbError::Syntax { position, .. }) = number_placeholders("SELECT :a, $1") else { panic!() };
        assert_eq!(position, 12);
    }

    #[test]
    fn positions_in_a_numbered_text_longer_than_the_original_map_back() {
        let sql = format!("SELECT {} FROM", (0..12).map(|_| ":a").collect::<Vec<_>>().join(","));
        let n = number_placeholders(&sql).unwrap().unwrap();
        assert_eq!(n.text.chars().count(), sql.chars().count() + 3, "$10, $11, $12: one more each");
        // "FROM" starts at the same place in both, after the shifts.
        let original = sql.find("FROM").unwrap() + 1;
        let rewritten = n.text.find("FROM").unwrap() + 1;
        assert_eq!(n.original_position(rewritten), original);
        assert_eq!(n.original_position(1), 1);
        // The end of the text (a parser's "unexpected end") maps to the original's end.
        assert_eq!(n.original_position(n.text.chars().count() + 1), sql.chars().count() + 1);
    }
}
