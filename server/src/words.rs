//! A small lexer for the statements the server parses itself (DECLARE, FETCH, MOVE,
//! CLOSE, COPY): words, quoted identifiers, string literals, numbers and punctuation,
//! each with its byte range in the statement, comments skipped.
//!
//! It never fails on odd input: an unterminated quote runs to the end of the text, and a
//! character it does not know is punctuation; the parsers then reject what they do not
//! expect with a syntax error.

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A bare word, as written (keywords and unquoted identifiers).
    Word(String),
    /// A `"quoted"` identifier, unquoted (case kept).
    Quoted(String),
    /// A `'string'` (or `E'string'`) literal's value.
    Str(String),
    /// Digits.
    Number(String),
    Punct(char),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    /// Byte offset of the token's first character.
    pub start: usize,
}

impl Token {
    /// Whether the token is the keyword `keyword` (any case).
    pub fn is(&self, keyword: &str) -> bool {
        matches!(&self.kind, Kind::Word(w) if w.eq_ignore_ascii_case(keyword))
    }

    pub fn is_punct(&self, c: char) -> bool {
        self.kind == Kind::Punct(c)
    }

    /// The token as an identifier: a bare word lowercased, a quoted one as written.
    pub fn ident(&self) -> Option<String> {
        match &self.kind {
            Kind::Word(w) => Some(w.to_lowercase()),
            Kind::Quoted(q) => Some(q.clone()),
            _ => None,
        }
    }
}

/// Splits `sql` into tokens.
pub fn tokenize(sql: &str) -> Vec<Token> {
    let bytes = sql.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'-' && bytes.get(i + 1) == Some(&b'-') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            // Block comments nest, as PostgreSQL's do: `/* a /* b */ c */` is one.
            i += 2;
            let mut depth = 1;
            while i < bytes.len() && depth > 0 {
                if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
        } else if (c == b'E' || c == b'e') && bytes.get(i + 1) == Some(&b'\'') {
            let (value, end) = quoted(sql, i + 1, b'\'', true);
            tokens.push(Token { kind: Kind::Str(value), start });
            i = end;
        } else if c == b'\'' {
            let (value, end) = quoted(sql, i, b'\'', false);
            tokens.push(Token { kind: Kind::Str(value), start });
            i = end;
        } else if c == b'"' {
            let (value, end) = quoted(sql, i, b'"', false);
            tokens.push(Token { kind: Kind::Quoted(value), start });
            i = end;
        } else if c.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            tokens.push(Token { kind: Kind::Number(sql[start..i].to_string()), start });
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'$') || bytes[i] >= 0x80)
            {
                i += 1;
            }
            tokens.push(Token { kind: Kind::Word(sql[start..i].to_string()), start });
        } else {
            let ch = sql[i..].chars().next().expect("a character starts here");
            tokens.push(Token { kind: Kind::Punct(ch), start });
            i += ch.len_utf8();
        }
    }
    tokens
}

/// The value of the quoted text starting at `open` (the quote), with doubled quotes
/// undoubled and, for `E'...'`, backslash escapes applied; and the offset after it.
fn quoted(sql: &str, open: usize, quote: u8, backslash_escapes: bool) -> (String, usize) {
    let bytes = sql.as_bytes();
    let mut value = Vec::new();
    let mut i = open + 1;
    while i < bytes.len() {
        let c = bytes[i];
        if c == quote {
            if bytes.get(i + 1) == Some(&quote) {
                value.push(quote);
                i += 2;
                continue;
            }
            return (String::from_utf8_lossy(&value).into_owned(), i + 1);
        }
        if backslash_escapes && c == b'\\' && i + 1 < bytes.len() {
            let escaped = bytes[i + 1];
            value.push(match escaped {
                b'n' => b'\n',
                b't' => b'\t',
                b'r' => b'\r',
                b'b' => 8,
                b'f' => 12,
                other => other,
            });
            i += 2;
            continue;
        }
        value.push(c);
        i += 1;
    }
    (String::from_utf8_lossy(&value).into_owned(), bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_their_offsets_and_values() {
        let tokens = tokenize("COPY \"My\"\"T\" (a) FROM stdin WITH (DELIMITER E'\\t', NULL '') -- x");
        let kinds: Vec<&Kind> = tokens.iter().map(|t| &t.kind).collect();
        assert_eq!(kinds[0], &Kind::Word("COPY".into()));
        assert_eq!(kinds[1], &Kind::Quoted("My\"T".into()));
        assert_eq!(tokens[1].start, 5);
        assert_eq!(tokens[1].ident().as_deref(), Some("My\"T"));
        assert!(tokens[2].is_punct('('));
        assert_eq!(tokens[3].ident().as_deref(), Some("a"));
        assert!(tokens[6].is("stdin"));
        assert!(kinds.contains(&&Kind::Str("\t".into())));
        assert!(kinds.contains(&&Kind::Str("".into())));
        assert!(tokens.last().unwrap().is_punct(')'), "the comment is skipped");
        assert_eq!(tokenize("FETCH 10 FROM c")[1].kind, Kind::Number("10".into()));
    }

    /// Block comments nest, as in PostgreSQL; an unclosed one runs to the end.
    #[test]
    fn block_comments_nest() {
        let tokens = tokenize("/* a /* b */ still c */ SELECT 1");
        assert!(tokens[0].is("SELECT"), "{tokens:?}");
        assert_eq!(tokens[0].start, 24);
        assert_eq!(tokenize("/* a /* b */ c").len(), 0);
        assert!(tokenize("/**/x")[0].is("x"));
    }
}
