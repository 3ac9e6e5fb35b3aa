//! JSON and JSONB: validated JSON text, with PostgreSQL's operators and output.
//!
//! A JSON value is its text as given (whitespace, key order and duplicate keys kept, as
//! PostgreSQL's `json`); a JSONB value is the text PostgreSQL prints for it, made once on
//! the way in: keys sorted (shorter first, then by bytes) and unique (the last of
//! duplicates wins), numbers as NUMERIC prints them, strings with PostgreSQL's escapes,
//! one space after each `:` and `,` (`{"a": 1, "b": [1, 2]}`). Both are kept as that
//! text in a `Value`, so the redo, the images and the text wire format carry it as it
//! is; operators parse it again.
//!
//! The parser here is the product's rather than serde_json's: it keeps each value's span
//! in the source (`json -> 'k'` returns the text as written) and numbers as their
//! digits (a jsonb number is an exact NUMERIC, which serde_json keeps only under a feature
//! that changes how every user of serde_json in the process reads numbers). It takes
//! RFC 8259 JSON, as PostgreSQL does, nested at most `MAX_DEPTH` deep so no input can
//! exhaust a thread's stack. Invalid text is 22P02; `\u0000` in a JSONB is 22P05, as in
//! PostgreSQL.
//!
//! JSONB values compare as PostgreSQL's btree orders them: object > array > boolean >
//! number > string > null; objects by their number of pairs, then pair by pair in key
//! order; arrays by length, then element by element; numbers as numerics; strings by
//! bytes. `@>` is PostgreSQL's containment.

use std::cmp::Ordering;

use bigdecimal::{BigDecimal, Zero};

use crate::error::{DbError, DbResult};
use crate::numeric;

/// The deepest nesting of arrays and objects a JSON value may have.
pub const MAX_DEPTH: usize = 1000;

/// A parsed JSON value; `span` is its text in the source, byte offsets.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Json,
    pub span: (usize, usize),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// A number's text as written (valid JSON number syntax).
    Number(String),
    String(String),
    Array(Vec<Node>),
    /// Pairs in the order written, duplicates kept.
    Object(Vec<(String, Node)>),
}

/// A JSONB value: numbers exact, object keys sorted and unique.
#[derive(Clone, Debug, PartialEq)]
pub enum Jsonb {
    Null,
    Bool(bool),
    Number(BigDecimal),
    String(String),
    Array(Vec<Jsonb>),
    Object(Vec<(String, Jsonb)>),
}

fn syntax(ty: &str, detail: impl Into<String>) -> DbError {
    DbError::InvalidJson { ty: ty.into(), detail: detail.into() }
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> DbError {
        if self.at >= self.bytes.len() {
            return syntax("json", "The input string ended unexpectedly.");
        }
        let token: String = self.text[self.at..].chars().take(20).collect();
        syntax("json", format!("{what} at \"{token}\""))
    }

    fn skip_space(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, b: u8, what: &str) -> DbResult<()> {
        self.skip_space();
        if self.bytes.get(self.at) != Some(&b) {
            return Err(self.error(what));
        }
        self.at += 1;
        Ok(())
    }

    fn value(&mut self) -> DbResult<Node> {
        self.skip_space();
        let start = self.at;
        let value = match self.bytes.get(self.at) {
            None => return Err(self.error("Expected JSON value")),
            Some(b'{') => self.nested(|p| {
                p.at += 1;
                let mut pairs = Vec::new();
                p.skip_space();
                if p.bytes.get(p.at) == Some(&b'}') {
                    p.at += 1;
                    return Ok(Json::Object(pairs));
                }
                loop {
                    p.skip_space();
                    if p.bytes.get(p.at) != Some(&b'"') {
                        return Err(p.error("Expected string"));
                    }
                    let key = p.string()?;
                    p.expect(b':', "Expected \":\"")?;
                    let value = p.value()?;
                    pairs.push((key, value));
                    p.skip_space();
                    match p.bytes.get(p.at) {
                        Some(b',') => p.at += 1,
                        Some(b'}') => {
                            p.at += 1;
                            return Ok(Json::Object(pairs));
                        }
                        _ => return Err(p.error("Expected \",\" or \"}\"")),
                    }
                }
            })?,
            Some(b'[') => self.nested(|p| {
                p.at += 1;
                let mut items = Vec::new();
                p.skip_space();
                if p.bytes.get(p.at) == Some(&b']') {
                    p.at += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(p.value()?);
                    p.skip_space();
                    match p.bytes.get(p.at) {
                        Some(b',') => p.at += 1,
                        Some(b']') => {
                            p.at += 1;
                            return Ok(Json::Array(items));
                        }
                        _ => return Err(p.error("Expected \",\" or \"]\"")),
                    }
                }
            })?,
            Some(b'"') => Json::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(_) => {
                let rest = &self.bytes[self.at..];
                let (word, value) = if rest.starts_with(b"true") {
                    ("true", Json::Bool(true))
                } else if rest.starts_with(b"false") {
                    ("false", Json::Bool(false))
                } else if rest.starts_with(b"null") {
                    ("null", Json::Null)
                } else {
                    return Err(self.error("Token is invalid"));
                };
                self.at += word.len();
                if self.bytes.get(self.at).is_some_and(|b| b.is_ascii_alphanumeric()) {
                    return Err(self.error("Token is invalid"));
                }
                value
            }
        };
        Ok(Node { value, span: (start, self.at) })
    }

    fn nested(&mut self, parse: impl FnOnce(&mut Self) -> DbResult<Json>) -> DbResult<Json> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(syntax("json", format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let value = parse(self)?;
        self.depth -= 1;
        Ok(value)
    }

    fn number(&mut self) -> DbResult<Json> {
        let start = self.at;
        let digits = |p: &mut Self| {
            let from = p.at;
            while p.bytes.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at - from
        };
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let first = self.at;
        let n = digits(self);
        if n == 0 || (n > 1 && self.bytes[first] == b'0') {
            self.at = start;
            return Err(self.error("Token is invalid"));
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if digits(self) == 0 {
                self.at = start;
                return Err(self.error("Token is invalid"));
            }
        }
        if matches!(self.bytes.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                self.at = start;
                return Err(self.error("Token is invalid"));
            }
        }
        if self.bytes.get(self.at).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'.') {
            self.at = start;
            return Err(self.error("Token is invalid"));
        }
        Ok(Json::Number(self.text[start..self.at].to_string()))
    }

    /// A string at `"`; its value with the escapes decoded.
    fn string(&mut self) -> DbResult<String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let run_start = self.at;
            while self.bytes.get(self.at).is_some_and(|&b| b != b'"' && b != b'\\' && b >= 0x20) {
                self.at += 1;
            }
            out.push_str(&self.text[run_start..self.at]);
            match self.bytes.get(self.at) {
                None => return Err(self.error("Unterminated string")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(&b) if b < 0x20 => {
                    return Err(syntax("json", format!("Character with value 0x{b:02x} must be escaped.")))
                }
                _ => {}
            }
            // A backslash.
            self.at += 1;
            let escaped = self.bytes.get(self.at).copied();
            self.at += 1;
            match escaped {
                Some(b'"') => out.push('"'),
                Some(b'\\') => out.push('\\'),
                Some(b'/') => out.push('/'),
                Some(b'b') => out.push('\u{8}'),
                Some(b'f') => out.push('\u{c}'),
                Some(b'n') => out.push('\n'),
                Some(b'r') => out.push('\r'),
                Some(b't') => out.push('\t'),
                Some(b'u') => {
                    let high = self.hex4()?;
                    let code = if (0xD800..0xDC00).contains(&high) {
                        if self.bytes.get(self.at..self.at + 2) != Some(b"\\u") {
                            return Err(syntax(
                                "json",
                                "Unicode low surrogate must follow a high surrogate.",
                            ));
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return Err(syntax(
                                "json",
                                "Unicode low surrogate must follow a high surrogate.",
                            ));
                        }
                        0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..0xE000).contains(&high) {
                        return Err(syntax("json", "Unicode low surrogate must follow a high surrogate."));
                    } else {
                        high
                    };
                    out.push(char::from_u32(code).expect("a scalar value"));
                }
                _ => {
                    self.at -= 1;
                    return Err(self.error("Escape sequence is invalid"));
                }
            }
        }
    }

    fn hex4(&mut self) -> DbResult<u32> {
        let digits = self.bytes.get(self.at..self.at + 4).ok_or_else(|| self.error("Bad \\u escape"))?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return Err(syntax("json", "\"\\u\" must be followed by four hexadecimal digits."));
        }
        let text = std::str::from_utf8(digits).expect("hex digits are ASCII");
        let value = u32::from_str_radix(text, 16).expect("four hex digits");
        self.at += 4;
        Ok(value)
    }
}

/// Parses JSON text (22P02 for anything that is not exactly one JSON value).
pub fn parse(text: &str) -> DbResult<Node> {
    let mut p = Parser { text, bytes: text.as_bytes(), at: 0, depth: 0 };
    let node = p.value()?;
    p.skip_space();
    if p.at != p.bytes.len() {
        return Err(p.error("Expected end of input"));
    }
    Ok(node)
}

/// Validates JSON text for a `json` value (kept as given).
pub fn validate(text: &str) -> DbResult<()> {
    parse(text).map(|_| ())
}

impl Node {
    /// The JSONB form: numbers as numerics (22P02 beyond the type), keys sorted and
    /// unique, `\u0000` refused (22P05).
    pub fn to_jsonb(&self) -> DbResult<Jsonb> {
        Ok(match &self.value {
            Json::Null => Jsonb::Null,
            Json::Bool(b) => Jsonb::Bool(*b),
            Json::Number(text) => Jsonb::Number(numeric::parse(text)?),
            Json::String(s) => Jsonb::String(checked_string(s)?),
            Json::Array(items) => Jsonb::Array(items.iter().map(Node::to_jsonb).collect::<DbResult<_>>()?),
            Json::Object(pairs) => {
                let mut out: Vec<(String, Jsonb)> = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    out.push((checked_string(k)?, v.to_jsonb()?));
                }
                Jsonb::object(out)
            }
        })
    }
}

fn checked_string(s: &str) -> DbResult<String> {
    if s.contains('\0') {
        return Err(DbError::UntranslatableCharacter(
            "unsupported Unicode escape sequence: \\u0000 cannot be converted to text".into(),
        ));
    }
    Ok(s.to_string())
}

/// PostgreSQL's key order in a jsonb object: shorter keys first, then by bytes.
fn key_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

impl Jsonb {
    /// An object of `pairs`: sorted by key, the last of equal keys kept.
    pub fn object(pairs: Vec<(String, Jsonb)>) -> Jsonb {
        let mut pairs: Vec<(usize, (String, Jsonb))> = pairs.into_iter().enumerate().collect();
        // Stable by key, then the last written of each key kept.
        pairs.sort_by(|(i, (a, _)), (j, (b, _))| key_order(a, b).then(i.cmp(j)));
        let mut out: Vec<(String, Jsonb)> = Vec::with_capacity(pairs.len());
        for (_, (k, v)) in pairs {
            match out.last_mut() {
                Some((last, slot)) if *last == k => *slot = v,
                _ => out.push((k, v)),
            }
        }
        Jsonb::Object(out)
    }

    /// PostgreSQL's text of a jsonb.
    pub fn write(&self, out: &mut String) {
        match self {
            Jsonb::Null => out.push_str("null"),
            Jsonb::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Jsonb::Number(n) => numeric::write(n, out),
            Jsonb::String(s) => write_string(s, out),
            Jsonb::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Jsonb::Object(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_string(k, out);
                    out.push_str(": ");
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn rank(&self) -> u8 {
        match self {
            Jsonb::Null => 0,
            Jsonb::String(_) => 1,
            Jsonb::Number(_) => 2,
            Jsonb::Bool(_) => 3,
            Jsonb::Array(_) => 4,
            Jsonb::Object(_) => 5,
        }
    }

    /// PostgreSQL's jsonb btree order (see the module doc).
    pub fn compare(&self, other: &Jsonb) -> Ordering {
        match (self, other) {
            (Jsonb::Null, Jsonb::Null) => Ordering::Equal,
            (Jsonb::Bool(a), Jsonb::Bool(b)) => a.cmp(b),
            (Jsonb::Number(a), Jsonb::Number(b)) => a.cmp(b),
            (Jsonb::String(a), Jsonb::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Jsonb::Array(a), Jsonb::Array(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter().zip(b).map(|(x, y)| x.compare(y)).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
            }),
            (Jsonb::Object(a), Jsonb::Object(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|((ka, va), (kb, vb))| key_order(ka, kb).then_with(|| va.compare(vb)))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            }),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }

    /// `self @> other`: PostgreSQL's containment.
    pub fn contains(&self, other: &Jsonb) -> bool {
        self.contains_at(other, true)
    }

    fn contains_at(&self, other: &Jsonb, top: bool) -> bool {
        match (self, other) {
            (Jsonb::Object(a), Jsonb::Object(b)) => b.iter().all(|(k, vb)| {
                a.binary_search_by(|(ka, _)| key_order(ka, k)).is_ok_and(|i| a[i].1.contains_at(vb, false))
            }),
            (Jsonb::Array(a), Jsonb::Array(b)) => {
                b.iter().all(|vb| a.iter().any(|va| va.contains_at(vb, false)))
            }
            // At the top level an array contains a scalar it has as an element.
            (Jsonb::Array(a), scalar) if top && !matches!(scalar, Jsonb::Object(_)) => {
                a.iter().any(|va| va.compare(scalar).is_eq())
            }
            (Jsonb::Object(_) | Jsonb::Array(_), _) | (_, Jsonb::Object(_) | Jsonb::Array(_)) => false,
            (a, b) => a.compare(b).is_eq(),
        }
    }

    /// `self ? key`: a key of an object, a string element of an array, or the string.
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Jsonb::Object(pairs) => pairs.binary_search_by(|(k, _)| key_order(k, key)).is_ok(),
            Jsonb::Array(items) => items.iter().any(|v| matches!(v, Jsonb::String(s) if s == key)),
            Jsonb::String(s) => s == key,
            _ => false,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Jsonb::Null => "null",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Number(_) => "number",
            Jsonb::String(_) => "string",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        }
    }
}

/// Parses and normalizes JSONB text.
pub fn parse_jsonb(text: &str) -> DbResult<Jsonb> {
    parse(text).map_err(|e| e.for_type("jsonb"))?.to_jsonb()
}

/// The normalized text of a JSONB value given as JSON text.
pub fn normalize(text: &str) -> DbResult<String> {
    Ok(parse_jsonb(text)?.to_text())
}

/// A text equal for equal JSONB values (numbers without their trailing zeros: `1.0`
/// and `1.00` are equal jsonb), for hashing.
pub fn equality_key(text: &str) -> DbResult<String> {
    fn strip(v: Jsonb) -> Jsonb {
        match v {
            Jsonb::Number(n) => Jsonb::Number(if n.is_zero() { BigDecimal::from(0) } else { n.normalized() }),
            Jsonb::Array(items) => Jsonb::Array(items.into_iter().map(strip).collect()),
            Jsonb::Object(pairs) => Jsonb::Object(pairs.into_iter().map(|(k, v)| (k, strip(v))).collect()),
            other => other,
        }
    }
    Ok(strip(parse_jsonb(text)?).to_text())
}

/// A JSON string literal with PostgreSQL's escapes (`escape_json`).
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A step of a path into a JSON value: an object's key, or an array's index (negative
/// from the end).
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Key(String),
    Index(i64),
}

fn array_index(len: usize, i: i64) -> Option<usize> {
    let i = if i < 0 { len as i64 + i } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

impl Node {
    /// The value a step leads to (the last of duplicate keys, as PostgreSQL's json).
    pub fn step(&self, step: &Step) -> Option<&Node> {
        match (&self.value, step) {
            (Json::Object(pairs), Step::Key(k)) => {
                pairs.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v)
            }
            (Json::Array(items), Step::Index(i)) => array_index(items.len(), *i).map(|i| &items[i]),
            (Json::Array(items), Step::Key(k)) => {
                k.parse::<i64>().ok().and_then(|i| array_index(items.len(), i)).map(|i| &items[i])
            }
            _ => None,
        }
    }
}

impl Jsonb {
    pub fn step(&self, step: &Step) -> Option<&Jsonb> {
        match (self, step) {
            (Jsonb::Object(pairs), Step::Key(k)) => {
                pairs.binary_search_by(|(key, _)| key_order(key, k)).ok().map(|i| &pairs[i].1)
            }
            (Jsonb::Array(items), Step::Index(i)) => array_index(items.len(), *i).map(|i| &items[i]),
            (Jsonb::Array(items), Step::Key(k)) => {
                k.parse::<i64>().ok().and_then(|i| array_index(items.len(), i)).map(|i| &items[i])
            }
            _ => None,
        }
    }

    /// `a || b`: two objects merged (b's keys win), else the elements of both as one
    /// array (a value that is no array as an array of it).
    pub fn concat(self, other: Jsonb) -> Jsonb {
        match (self, other) {
            (Jsonb::Object(mut a), Jsonb::Object(b)) => {
                a.extend(b);
                Jsonb::object(a)
            }
            (a, b) => {
                let items = |v: Jsonb| match v {
                    Jsonb::Array(items) => items,
                    other => vec![other],
                };
                let mut out = items(a);
                out.extend(items(b));
                Jsonb::Array(out)
            }
        }
    }

    /// `a - key`: the object without the key, or the array without its string elements
    /// equal to it (22023 for a scalar).
    pub fn remove_key(self, key: &str) -> DbResult<Jsonb> {
        Ok(match self {
            Jsonb::Object(pairs) => Jsonb::Object(pairs.into_iter().filter(|(k, _)| k != key).collect()),
            Jsonb::Array(items) => Jsonb::Array(
                items.into_iter().filter(|v| !matches!(v, Jsonb::String(s) if s == key)).collect(),
            ),
            _ => return Err(DbError::InvalidArgument("cannot delete from scalar".into())),
        })
    }

    /// `a - index`: the array without that element (22023 for anything but an array).
    pub fn remove_index(self, index: i64) -> DbResult<Jsonb> {
        match self {
            Jsonb::Array(mut items) => {
                if let Some(i) = array_index(items.len(), index) {
                    items.remove(i);
                }
                Ok(Jsonb::Array(items))
            }
            Jsonb::Object(_) => {
                Err(DbError::InvalidArgument("cannot delete from object using integer index".into()))
            }
            _ => Err(DbError::InvalidArgument("cannot delete from scalar".into())),
        }
    }
}

/// What `->>` gives for a value: a string's contents, NULL for null, else its text.
pub fn text_of_node<'a>(node: &Node, source: &'a str) -> Option<std::borrow::Cow<'a, str>> {
    match &node.value {
        Json::Null => None,
        Json::String(s) => Some(std::borrow::Cow::Owned(s.clone())),
        _ => Some(std::borrow::Cow::Borrowed(&source[node.span.0..node.span.1])),
    }
}

pub fn text_of_jsonb(value: &Jsonb) -> Option<String> {
    match value {
        Jsonb::Null => None,
        Jsonb::String(s) => Some(s.clone()),
        other => Some(other.to_text()),
    }
}

/// PostgreSQL's text array literal as a path (`'{a,0,"b c"}'`): its elements.
pub fn parse_path(text: &str) -> DbResult<Vec<String>> {
    let bad = || DbError::TypeMismatch { expected: "text[]".into(), value: text.to_string() };
    let inner = text.trim().strip_prefix('{').and_then(|t| t.strip_suffix('}')).ok_or_else(bad)?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(bad()),
                    Some('"') => break,
                    Some('\\') => item.push(chars.next().ok_or_else(bad)?),
                    Some(c) => item.push(c),
                }
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                item.push(c);
                chars.next();
            }
            item = item.trim().to_string();
            if item.is_empty() || item.contains(['"', '{', '}']) {
                return Err(bad());
            }
        }
        out.push(item);
        match chars.next() {
            None => return Ok(out),
            Some(',') => {}
            Some(_) => return Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_json_is_kept_and_invalid_json_refused() {
        for text in [
            "null",
            "true",
            " false ",
            "0",
            "-0.5e+10",
            "1E3",
            "\"\"",
            "\"a\\u00e9\\ud83d\\ude00\\n\\\"\"",
            "[]",
            "{}",
            "[1, [2, {\"a\": null}]]",
            "{\"a\": 1, \"a\": 2}",
            "1e1001",
        ] {
            validate(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
        for text in [
            "",
            " ",
            "nul",
            "nulls",
            "01",
            "1.",
            ".5",
            "-",
            "+1",
            "1e",
            "[1,]",
            "[1 2]",
            "{\"a\"}",
            "{a: 1}",
            "{\"a\": 1,}",
            "\"unterminated",
            "\"a\nb\"",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "[1] 2",
            "{\"a\": 1} }",
            "NaN",
            "'a'",
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.sqlstate(), "22P02", "{text:?}: {e}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(parse(&deep).unwrap_err().sqlstate(), "22P02");
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        parse(&ok).unwrap();
    }

    /// The deepest document fits in half the stack of a server's worker thread (tokio's
    /// 2 MiB): parsed, normalized, printed, compared, searched and dropped.
    #[test]
    fn the_deepest_document_needs_less_than_a_mebibyte_of_stack() {
        let worker = std::thread::Builder::new().stack_size(1 << 20).spawn(|| {
            let text = "[{\"a\": ".repeat(MAX_DEPTH / 2) + "1" + &"}]".repeat(MAX_DEPTH / 2);
            let node = parse(&text).unwrap();
            let jsonb = node.to_jsonb().unwrap();
            let printed = jsonb.to_text();
            assert_eq!(parse_jsonb(&printed).unwrap().compare(&jsonb), Ordering::Equal);
            assert!(jsonb.contains(&jsonb));
            assert!(equality_key(&printed).is_ok());
            drop((node, jsonb));
        });
        worker.unwrap().join().expect("no stack overflow");
    }

    #[test]
    fn jsonb_is_printed_as_postgresql_prints_it() {
        for (input, output) in [
            ("{\"b\": [1,2], \"a\":1}", "{\"a\": 1, \"b\": [1, 2]}"),
            ("{\"aa\": 1, \"b\": 2, \"a\": 3}", "{\"a\": 3, \"b\": 2, \"aa\": 1}"),
            ("{\"a\": 1, \"a\": 2}", "{\"a\": 2}"),
            ("[1.50, 1e3, -0, 2E-2]", "[1.50, 1000, 0, 0.02]"),
            ("\"\\u00e9\\t\\u0001/\\/\"", "\"é\\t\\u0001//\""),
            ("  {\"x\" : {\"z\":true, \"y\":null}}  ", "{\"x\": {\"y\": null, \"z\": true}}"),
            ("[]", "[]"),
            ("{}", "{}"),
        ] {
            assert_eq!(normalize(input).unwrap(), output, "{input}");
        }
        assert_eq!(normalize("\"\\u0000\"").unwrap_err().sqlstate(), "22P05");
        assert_eq!(normalize("1e1001").unwrap_err().sqlstate(), "22P02");
    }

    #[test]
    fn jsonb_orders_contains_and_steps_as_postgresql() {
        let j = |t: &str| parse_jsonb(t).unwrap();
        let ordered = [
            "null",
            "\"a\"",
            "\"b\"",
            "1",
            "2.5",
            "false",
            "true",
            "[]",
            "[3]",
            "[1, 2]",
            "{}",
            "{\"b\": 1}",
            "{\"a\": 1, \"b\": 1}",
        ];
        for w in ordered.windows(2) {
            assert_eq!(j(w[0]).compare(&j(w[1])), Ordering::Less, "{} < {}", w[0], w[1]);
        }
        assert_eq!(j("{\"a\": 1.0}").compare(&j("{\"a\": 1.00}")), Ordering::Equal);
        assert!(j("{\"a\": 1, \"b\": [1, 2, {\"c\": 3}]}").contains(&j("{\"b\": [{\"c\": 3}, 1]}")));
        assert!(!j("{\"a\": 1}").contains(&j("{\"a\": 2}")));
        assert!(j("[1, 2, 3]").contains(&j("[3, 1]")));
        assert!(j("[1, 2, 3]").contains(&j("2")));
        assert!(!j("[[1, 2]]").contains(&j("1")));
        assert!(j("[[1, 2]]").contains(&j("[[1]]")));
        assert!(!j("{\"a\": [1]}").contains(&j("{\"a\": 1}")));
        assert!(j("{\"a\": 1}").has_key("a") && !j("{\"a\": 1}").has_key("b"));
        assert!(j("[\"a\", 1]").has_key("a") && !j("[1]").has_key("1"));
        let v = j("{\"a\": [10, 20, {\"b\": \"x\"}]}");
        let a = v.step(&Step::Key("a".into())).unwrap();
        assert_eq!(
            a.step(&Step::Index(-1)).unwrap().step(&Step::Key("b".into())),
            Some(&Jsonb::String("x".into()))
        );
        assert_eq!(a.step(&Step::Key("1".into())), Some(&j("20")));
        assert_eq!(a.step(&Step::Index(3)), None);
        assert_eq!(j("{\"a\": 1}").concat(j("{\"b\": 2, \"a\": 3}")).to_text(), "{\"a\": 3, \"b\": 2}");
        assert_eq!(j("[1]").concat(j("2")).to_text(), "[1, 2]");
        assert_eq!(j("{\"a\": 1, \"b\": 2}").remove_key("a").unwrap().to_text(), "{\"b\": 2}");
        assert_eq!(j("[1, 2, 3]").remove_index(-1).unwrap().to_text(), "[1, 2]");
        assert_eq!(j("1").remove_key("a").unwrap_err().sqlstate(), "22023");
    }

    #[test]
    fn json_steps_return_the_text_as_written() {
        let source = "{\"a\": [1,  2], \"a\": {\"k\" : \"v\"}, \"n\": null}";
        let node = parse(source).unwrap();
        let a = node.step(&Step::Key("a".into())).unwrap();
        assert_eq!(&source[a.span.0..a.span.1], "{\"k\" : \"v\"}", "the last duplicate");
        let k = a.step(&Step::Key("k".into())).unwrap();
        assert_eq!(text_of_node(k, source).as_deref(), Some("v"));
        assert_eq!(text_of_node(node.step(&Step::Key("n".into())).unwrap(), source), None);
        assert_eq!(parse_path("{a, 0,\"b c\"}").unwrap(), ["a", "0", "b c"]);
        assert_eq!(parse_path("{}").unwrap(), Vec::<String>::new());
        assert!(parse_path("a,b").is_err());
    }
}
