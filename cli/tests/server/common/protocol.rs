//! A minimal raw PostgreSQL protocol client, for what psql cannot send: malformed
//! messages, and the extended protocol's messages one by one.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A typed message as bytes: type, length, body.
pub fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut bytes = vec![kind];
    bytes.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    bytes.extend_from_slice(body);
    bytes
}

/// Sends a typed message.
pub fn send(stream: &mut TcpStream, kind: u8, body: &[u8]) {
    stream.write_all(&message(kind, body)).unwrap();
}

/// Parse (unnamed, no declared types), Bind (text parameters), Execute (no row limit) and
/// Sync of `sql`, as the bytes of one pipeline: one implicit transaction.
pub fn extended_pipeline(sql: &str, params: &[&str]) -> Vec<u8> {
    let mut execute = cstring("");
    execute.extend_from_slice(&0i32.to_be_bytes());
    [
        message(b'P', &parse_body("", sql)),
        message(b'B', &bind_body("", "", params, &[])),
        message(b'E', &execute),
        message(b'S', &[]),
    ]
    .concat()
}

/// The kinds of the messages up to ReadyForQuery ("CZ"), with the stream's read timeout
/// as it is; None if the connection ends first (the server closed it, or was killed).
pub fn kinds_until_ready_or_closed(stream: &mut TcpStream) -> Option<String> {
    let mut kinds = String::new();
    loop {
        let (kind, _) = read_message_as_set(stream)?;
        kinds.push(kind as char);
        if kind == b'Z' {
            return Some(kinds);
        }
    }
}

/// The columns of each DataRow among `replies`, as text (NULL as "").
pub fn data_rows(replies: &[(u8, Vec<u8>)]) -> Vec<Vec<String>> {
    replies
        .iter()
        .filter(|m| m.0 == b'D')
        .map(|(_, body)| {
            let columns = i16::from_be_bytes([body[0], body[1]]) as usize;
            let mut at = 2;
            (0..columns)
                .map(|_| {
                    let len = i32::from_be_bytes(body[at..at + 4].try_into().unwrap());
                    at += 4;
                    let Ok(len) = usize::try_from(len) else { return String::new() };
                    at += len;
                    String::from_utf8_lossy(&body[at - len..at]).into_owned()
                })
                .collect()
        })
        .collect()
}

/// Reads one message: (type, body). None when the server closed the connection (or
/// nothing came for 20 s).
pub fn read_message(stream: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    read_message_as_set(stream)
}

/// As `read_message`, with the stream's read timeout as it is; None also for a length
/// that is not one.
fn read_message_as_set(stream: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut header = [0u8; 5];
    stream.read_exact(&mut header).ok()?;
    let length = i32::from_be_bytes(header[1..5].try_into().unwrap());
    let mut body = vec![0u8; usize::try_from(length).ok()?.checked_sub(4)?];
    stream.read_exact(&mut body).ok()?;
    Some((header[0], body))
}

/// Reads messages up to and including ReadyForQuery; returns their types and bodies.
pub fn read_until_ready(stream: &mut TcpStream) -> Vec<(u8, Vec<u8>)> {
    let mut messages = Vec::new();
    loop {
        let message = read_message(stream).expect("the server answered up to ReadyForQuery");
        let ready = message.0 == b'Z';
        messages.push(message);
        if ready {
            return messages;
        }
    }
}

/// Reads messages up to and including ReadyForQuery, or until the server closes the
/// connection (after a FATAL error, say); returns what came.
pub fn read_until_ready_or_closed(stream: &mut TcpStream) -> Vec<(u8, Vec<u8>)> {
    let mut messages = Vec::new();
    while let Some(message) = read_message(stream) {
        let ready = message.0 == b'Z';
        messages.push(message);
        if ready {
            break;
        }
    }
    messages
}

/// The message types of `messages`, as a string ("1tnZ").
pub fn kinds(messages: &[(u8, Vec<u8>)]) -> String {
    messages.iter().map(|m| m.0 as char).collect()
}

/// Sends a protocol 3.0 StartupMessage for `user` and database redodb; reads nothing.
pub fn send_startup(stream: &mut TcpStream, user: &str) {
    send_startup_with(stream, user, &[]);
}

/// As `send_startup`, with more startup parameters (`options`, `application_name`).
pub fn send_startup_with(stream: &mut TcpStream, user: &str, parameters: &[(&str, &str)]) {
    let mut body = 196608i32.to_be_bytes().to_vec();
    for field in ["user", user, "database", "redodb"] {
        body.extend(cstring(field));
    }
    for (name, value) in parameters {
        body.extend(cstring(name));
        body.extend(cstring(value));
    }
    body.extend(cstring(""));
    let mut message = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    message.extend(body);
    stream.write_all(&message).unwrap();
}

/// Protocol 3.0 startup as user "test"; reads up to the first ReadyForQuery.
pub fn startup(stream: &mut TcpStream) {
    send_startup(stream, "test");
    let messages = read_until_ready(stream);
    assert_eq!(messages.first().map(|m| m.0), Some(b'R'), "authentication first");
}

pub fn cstring(text: &str) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    bytes
}

/// A Parse body: statement name, query, no declared types.
fn parse_body(name: &str, query: &str) -> Vec<u8> {
    let mut body = cstring(name);
    body.extend(cstring(query));
    body.extend_from_slice(&0i16.to_be_bytes());
    body
}

/// Parse: statement name, query, no declared types.
pub fn parse(stream: &mut TcpStream, name: &str, query: &str) {
    send(stream, b'P', &parse_body(name, query));
}

/// A Bind body: portal, statement, text parameters, and the result formats.
fn bind_body(portal: &str, statement: &str, params: &[&str], result_formats: &[i16]) -> Vec<u8> {
    let mut body = cstring(portal);
    body.extend(cstring(statement));
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&(params.len() as i16).to_be_bytes());
    for p in params {
        body.extend_from_slice(&(p.len() as i32).to_be_bytes());
        body.extend_from_slice(p.as_bytes());
    }
    body.extend_from_slice(&(result_formats.len() as i16).to_be_bytes());
    for format in result_formats {
        body.extend_from_slice(&format.to_be_bytes());
    }
    body
}

/// Bind: portal, statement, text parameters, all results in `result_format`.
pub fn bind(stream: &mut TcpStream, portal: &str, statement: &str, params: &[&str], result_format: i16) {
    send(stream, b'B', &bind_body(portal, statement, params, &[result_format]));
}

pub fn describe(stream: &mut TcpStream, target: u8, name: &str) {
    let mut body = vec![target];
    body.extend(cstring(name));
    send(stream, b'D', &body);
}

pub fn execute(stream: &mut TcpStream, portal: &str, max_rows: i32) {
    let mut body = cstring(portal);
    body.extend_from_slice(&max_rows.to_be_bytes());
    send(stream, b'E', &body);
}

pub fn sync(stream: &mut TcpStream) {
    send(stream, b'S', &[]);
}

/// The SQLSTATE of an ErrorResponse body.
pub fn sqlstate(body: &[u8]) -> String {
    body.split(|b| *b == 0)
        .find(|field| field.first() == Some(&b'C'))
        .map(|field| String::from_utf8_lossy(&field[1..]).into_owned())
        .unwrap_or_default()
}

/// Sends `sql` as a simple Query; returns the replies up to ReadyForQuery.
pub fn query(stream: &mut TcpStream, sql: &str) -> Vec<(u8, Vec<u8>)> {
    send(stream, b'Q', &cstring(sql));
    read_until_ready(stream)
}

/// Reads replies up to ReadyForQuery, which must be one ErrorResponse with SQLSTATE `code`
/// and the ReadyForQuery; returns both.
pub fn expect_error(stream: &mut TcpStream, code: &str) -> Vec<(u8, Vec<u8>)> {
    let replies = read_until_ready(stream);
    assert_eq!(kinds(&replies), "EZ");
    assert_eq!(sqlstate(&replies[0].1), code);
    replies
}
