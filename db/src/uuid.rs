//! UUID: 16 bytes, in PostgreSQL's text forms.
//!
//! Input as PostgreSQL's `uuid_in` takes it: 32 hex digits of either case, optionally in
//! braces, with a hyphen allowed after any group of four digits (so the standard
//! 8-4-4-4-12 form, the bare 32 digits and `{...}` all read). Output is the standard
//! form in lowercase. The binary wire form is the 16 bytes; values order byte by byte,
//! as PostgreSQL's. `gen_random_uuid()` makes version 4 (random) UUIDs with the `uuid`
//! crate.

use crate::error::{DbError, DbResult};

pub type Bytes = [u8; 16];

fn invalid(text: &str) -> DbError {
    DbError::TypeMismatch { expected: "uuid".into(), value: text.to_string() }
}

/// PostgreSQL's text input of a uuid (22P02 for anything else).
pub fn parse(text: &str) -> DbResult<Bytes> {
    let bytes = text.as_bytes();
    let (body, braces) = match bytes {
        [b'{', rest @ ..] => (rest, true),
        _ => (bytes, false),
    };
    let digit = |c: u8| -> DbResult<u8> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(invalid(text)),
        }
    };
    let mut out = [0u8; 16];
    let mut at = 0;
    for (i, byte) in out.iter_mut().enumerate() {
        let (Some(&high), Some(&low)) = (body.get(at), body.get(at + 1)) else { return Err(invalid(text)) };
        *byte = digit(high)? << 4 | digit(low)?;
        at += 2;
        if body.get(at) == Some(&b'-') && i % 2 == 1 && i < 15 {
            at += 1;
        }
    }
    if braces {
        if body.get(at) != Some(&b'}') {
            return Err(invalid(text));
        }
        at += 1;
    }
    if at != body.len() {
        return Err(invalid(text));
    }
    Ok(out)
}

/// The standard form: 8-4-4-4-12 lowercase hex digits.
pub fn write(bytes: &Bytes, out: &mut String) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
}

pub fn to_text(bytes: &Bytes) -> String {
    let mut out = String::with_capacity(36);
    write(bytes, &mut out);
    out
}

/// A new random (version 4) UUID.
pub fn random() -> Bytes {
    ::uuid::Uuid::new_v4().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_postgresql_accepts_read_alike() {
        let standard = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        let expected = parse(standard).unwrap();
        for form in [
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            assert_eq!(parse(form).unwrap(), expected, "{form}");
        }
        assert_eq!(to_text(&expected), standard);
        for bad in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0e-ebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            assert_eq!(parse(bad).unwrap_err().sqlstate(), "22P02", "{bad:?}");
        }
    }

    #[test]
    fn random_uuids_are_version_4_and_distinct() {
        let (a, b) = (random(), random());
        assert_ne!(a, b);
        for u in [a, b] {
            assert_eq!(u[6] >> 4, 4, "version 4");
            assert_eq!(u[8] >> 6, 0b10, "RFC 4122 variant");
            assert_eq!(parse(&to_text(&u)).unwrap(), u);
        }
    }
}
