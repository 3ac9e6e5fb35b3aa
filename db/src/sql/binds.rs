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
//! Only a colon immediately followed by a name (`:"quoted"` too) or a run of digits,
//! outside brackets, is a placeholder: `::` (a cast), `:=`, and colons inside strings,
//! quoted names and comments are the tokenizer's other tokens and stay as they are. A
//! placeholder right after a name (`LIKE:p`) is written ` $1`, not joined to the name.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{DbError, DbResult};

/// A statement's text with its `:name` placeholders numbered.
#[derive(Debug)]
pub(crate) struct Numbered {
    /// The text to parse: every placeholder `$i`.
    pub(crate) text: String,
    /// The placeholders, in order (the i-th is `$i`).
    placed: Vec<Placed>,
}

/// Where a placeholder was and what was written for it.
#[derive(Debug)]
struct Placed {
    /// As written (`:custId`), for messages.
    original: String,
    /// Its first character in the original text, and its width in characters.
    start: usize,
    width: usize,
    /// Its first character in the numbered text, and the width of what replaced it
    /// (wider than the original for `$10` in place of `:a`, or ` $1` after a name).
    numbered_start: usize,
    written: usize,
}

impl Numbered {
    /// A 1-based character position in `text` as one in the original statement (a
    /// position inside a placeholder's replacement is the placeholder's).
    pub(crate) fn original_position(&self, position: usize) -> usize {
        let at = position.saturating_sub(1);
        let mut added = 0isize;
        for p in &self.placed {
            if at < p.numbered_start {
                break;
            }
            if at < p.numbered_start + p.written {
                return p.start + 1;
            }
            added = (p.numbered_start + p.written) as isize - (p.start + p.width) as isize;
        }
        (at as isize - added) as usize + 1
    }

    /// A syntax error found in `text`, with its position in the original statement and
    /// the placeholders it quotes as written.
    pub(crate) fn locate(&self, error: DbError) -> DbError {
        match error {
            DbError::Syntax { message, position } if position > 0 => {
                let mut message = message;
                // sqlparser quotes the token it stopped at: "found: $2".
                for (i, p) in self.placed.iter().enumerate().rev() {
                    message =
                        message.replace(&format!("found: ${}", i + 1), &format!("found: {}", p.original));
                }
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
    // column, both counted in characters from 1; a line ends at '\n' only).
    let chars: Vec<char> = sql.chars().collect();
    let mut line_starts = vec![0usize];
    for (offset, c) in chars.iter().enumerate() {
        if *c == '\n' {
            line_starts.push(offset + 1);
        }
    }
    let offset_of =
        |at: sqlparser::tokenizer::Location| line_starts[at.line as usize - 1] + at.column as usize - 1;

    // Each placeholder as (first character, characters it spans, up to the end of its
    // name: `:"a b"` is a name too).
    let mut placeholders: Vec<(usize, usize)> = Vec::new();
    let mut dollar: Option<usize> = None;
    let mut brackets = 0usize;
    for (i, token) in tokens.iter().enumerate() {
        match &token.token {
            Token::LBracket => brackets += 1,
            Token::RBracket => brackets = brackets.saturating_sub(1),
            Token::Placeholder(p) if p.starts_with('$') => {
                dollar.get_or_insert(offset_of(token.span.start));
            }
            Token::Colon if brackets == 0 => {
                let Some(next) = tokens.get(i + 1) else { continue };
                match &next.token {
                    Token::Word(_) => {}
                    Token::Number(n, false) if n.bytes().all(|b| b.is_ascii_digit()) => {}
                    // (`: name` is no placeholder: the whitespace is a token of its own.)
                    _ => continue,
                }
                let start = offset_of(token.span.start);
                placeholders.push((start, offset_of(next.span.end) - start));
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

    let mut text = String::with_capacity(sql.len() + placeholders.len() * 2);
    let mut placed = Vec::with_capacity(placeholders.len());
    let (mut offset, mut numbered_offset) = (0usize, 0usize);
    for (i, &(start, width)) in placeholders.iter().enumerate() {
        for &c in &chars[offset..start] {
            text.push(c);
        }
        numbered_offset += start - offset;
        // After a character of a name, `$1` would join the name (`LIKE$1`): a space first.
        let joins =
            start > 0 && (chars[start - 1].is_alphanumeric() || matches!(chars[start - 1], '_' | '$'));
        let number = format!("{}${}", if joins { " " } else { "" }, i + 1);
        let written = number.len().max(width);
        text.push_str(&format!("{number:<written$}"));
        placed.push(Placed {
            original: chars[start..start + width].iter().collect(),
            start,
            width,
            numbered_start: numbered_offset,
            written,
        });
        numbered_offset += written;
        offset = start + width;
    }
    for &c in &chars[offset..] {
        text.push(c);
    }
    Ok(Some(Numbered { text, placed }))
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
    fn a_placeholder_after_a_name_stays_apart_from_it_and_quoted_names_count() {
        assert_eq!(numbered("SELECT id FROM t WHERE name LIKE:p"), "SELECT id FROM t WHERE name LIKE $1");
        assert_eq!(
            numbered("SELECT CASE WHEN a THEN:x ELSE:y END"),
            "SELECT CASE WHEN a THEN $1 ELSE $2 END"
        );
        assert_eq!(numbered("SELECT :\"my name\", (:b)"), "SELECT $1        , ($2)");
        // "x:y" is no alias with a placeholder in it: the parser sees `x $1` and says so.
        assert_eq!(numbered("SELECT 1 AS x:y"), "SELECT 1 AS x $1");
    }

    #[test]
    fn errors_quote_and_place_the_placeholders_as_written() {
        let n = number_placeholders("SELECT :a :bb").unwrap().unwrap();
        assert_eq!(n.text, "SELECT $1 $2 ");
        let error = n.locate(DbError::Syntax {
            message: "Expected: end of statement, found: $2".into(),
            position: 11,
        });
        let DbError::Syntax { message, position } = error else { panic!() };
        assert_eq!(message, "Expected: end of statement, found: :bb");
        assert_eq!(position, 11);
        // Inside a replacement wider than its placeholder: the placeholder's position.
        let n = number_placeholders("SELECT x:a FROM").unwrap().unwrap();
        assert_eq!(n.text, "SELECT x $1 FROM");
        assert_eq!(n.original_position(10), 9, "the $ of ` $1` is the placeholder at :a");
        assert_eq!(n.original_position(13), 12, "FROM, one character further in the numbered text");
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
