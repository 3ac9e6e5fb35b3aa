//! BYTEA: byte strings, in PostgreSQL's text forms.
//!
//! Input takes both of PostgreSQL's forms: hex (`\x` then pairs of hex digits, spaces
//! between pairs ignored) and escape (bytes as they are, `\\` a backslash, `\ooo` an
//! octal byte). Output is hex (`bytea_output = hex`, PostgreSQL's default), lowercase.
//! The binary wire form is the bytes as they are. Values order byte by byte, a prefix
//! first, as PostgreSQL's `byteacmp`.
//!
//! `encode`/`decode` convert between bytes and text in the `hex`, `base64` and `escape`
//! formats, as PostgreSQL's functions of those names.

use base64::Engine;

use crate::error::{DbError, DbResult};

fn invalid(text: &str) -> DbError {
    DbError::TypeMismatch { expected: "bytea".into(), value: text.to_string() }
}

fn invalid_hex(what: String) -> DbError {
    DbError::InvalidArgument(what)
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Hex digits to bytes: pairs, with spaces, tabs and newlines between them ignored
/// (PostgreSQL's `hex_decode`). 22023 for an odd count or a character that is no digit.
pub fn parse_hex(hex: &str) -> DbResult<Vec<u8>> {
    let bytes = hex.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 2);
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
            continue;
        }
        let high = hex_value(c)
            .ok_or_else(|| invalid_hex(format!("invalid hexadecimal digit: \"{}\"", c as char)))?;
        let low = match bytes.get(i + 1) {
            None => return Err(invalid_hex("invalid hexadecimal data: odd number of digits".into())),
            Some(&d) => hex_value(d)
                .ok_or_else(|| invalid_hex(format!("invalid hexadecimal digit: \"{}\"", d as char)))?,
        };
        out.push(high << 4 | low);
        i += 2;
    }
    Ok(out)
}

/// PostgreSQL's text input of a bytea: hex after `\x`, else the escape form.
pub fn parse(text: &str) -> DbResult<Vec<u8>> {
    if let Some(hex) = text.strip_prefix("\\x").or_else(|| text.strip_prefix("\\X")) {
        return parse_hex(hex);
    }
    parse_escape(text)
}

/// The escape form: bytes as they are, `\\` one backslash, `\ooo` (three octal digits,
/// the first 0-3) one byte; any other backslash is 22P02.
pub fn parse_escape(text: &str) -> DbResult<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1..i + 4) {
            _ if bytes.get(i + 1) == Some(&b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some([a @ b'0'..=b'3', b @ b'0'..=b'7', c @ b'0'..=b'7']) => {
                out.push((a - b'0') << 6 | (b - b'0') << 3 | (c - b'0'));
                i += 4;
            }
            _ => return Err(invalid(text)),
        }
    }
    Ok(out)
}

/// The hex output form: `\x` and two lowercase digits a byte.
pub fn write(bytes: &[u8], out: &mut String) {
    out.reserve(2 + 2 * bytes.len());
    out.push_str("\\x");
    write_hex(bytes, out);
}

fn write_hex(bytes: &[u8], out: &mut String) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
}

pub fn to_text(bytes: &[u8]) -> String {
    let mut out = String::new();
    write(bytes, &mut out);
    out
}

/// The escape output form (`encode(b, 'escape')`): printable ASCII as it is, a backslash
/// doubled, other bytes as `\ooo`.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out
}

/// A format of `encode` and `decode`.
fn format_named(name: &str) -> DbResult<&'static str> {
    match name.to_ascii_lowercase().as_str() {
        "hex" => Ok("hex"),
        "base64" => Ok("base64"),
        "escape" => Ok("escape"),
        other => Err(DbError::InvalidArgument(format!("unrecognized encoding: \"{other}\""))),
    }
}

/// `encode(bytes, format)`.
pub fn encode(bytes: &[u8], format: &str) -> DbResult<String> {
    Ok(match format_named(format)? {
        "hex" => {
            let mut out = String::new();
            write_hex(bytes, &mut out);
            out
        }
        "base64" => {
            // PostgreSQL breaks base64 lines at 76 characters.
            let text = base64::engine::general_purpose::STANDARD.encode(bytes);
            let lines: Vec<&str> = text
                .as_bytes()
                .chunks(76)
                .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
                .collect();
            lines.join("\n")
        }
        _ => escape(bytes),
    })
}

/// `decode(text, format)`.
pub fn decode(text: &str, format: &str) -> DbResult<Vec<u8>> {
    match format_named(format)? {
        "hex" => parse_hex(text),
        "base64" => {
            let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map_err(|e| DbError::InvalidArgument(format!("invalid base64 data: {e}")))
        }
        _ => parse_escape(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_input_forms_and_the_hex_output() {
        assert_eq!(parse("\\x0102ff").unwrap(), [1, 2, 255]);
        assert_eq!(parse("\\XDEAD beef").unwrap(), [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(parse("\\x").unwrap(), Vec::<u8>::new());
        assert_eq!(parse("abc").unwrap(), b"abc");
        assert_eq!(parse("a\\\\b\\000\\377").unwrap(), [b'a', b'\\', b'b', 0, 255]);
        assert_eq!(parse("").unwrap(), Vec::<u8>::new());
        assert_eq!(parse("\\x123").unwrap_err().sqlstate(), "22023");
        assert_eq!(parse("\\x12zz").unwrap_err().sqlstate(), "22023");
        assert_eq!(parse("a\\b").unwrap_err().sqlstate(), "22P02");
        assert_eq!(parse("\\400").unwrap_err().sqlstate(), "22P02");
        assert_eq!(parse("\\12").unwrap_err().sqlstate(), "22P02");
        assert_eq!(to_text(&[0, 1, 0xab, 0xff]), "\\x0001abff");
        assert_eq!(to_text(&[]), "\\x");
    }

    #[test]
    fn encode_and_decode_in_every_format() {
        let bytes = b"a\\b\x00\xff hello";
        for format in ["hex", "base64", "escape", "HEX"] {
            let text = encode(bytes, format).unwrap();
            assert_eq!(decode(&text, format).unwrap(), bytes, "{format}: {text}");
        }
        assert_eq!(encode(b"\x01\xab", "hex").unwrap(), "01ab");
        assert_eq!(encode(b"hello", "base64").unwrap(), "aGVsbG8=");
        assert_eq!(encode(b"a\\\x01", "escape").unwrap(), "a\\\\\\001");
        assert_eq!(encode(&[0u8; 60], "base64").unwrap().lines().map(str::len).collect::<Vec<_>>(), [76, 4]);
        assert_eq!(encode(b"x", "rot13").unwrap_err().sqlstate(), "22023");
        assert_eq!(decode("!!", "base64").unwrap_err().sqlstate(), "22023");
    }
}
