//! `redodb serve` at the protocol level: the extended protocol's replies message by
//! message (NoData for an INSERT, array fetch with PortalSuspended, pipelined array
//! insert, skipping to Sync after an error), and bad input (garbage, an oversized
//! length) ending only the connection that sent it.

mod server_common;

use std::io::Write;
use std::net::TcpStream;

use server_common::protocol::{
    self, bind, describe, execute, kinds, parse, read_until_ready, sqlstate, sync,
};
use server_common::{require_tool, Server};

fn connect(server: &Server) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    protocol::startup(&mut stream);
    stream
}

#[test]
fn extended_protocol_describes_fetches_in_arrays_and_pipelines() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = connect(&server);
    protocol::send(&mut c, b'Q', &protocol::cstring("CREATE TABLE a (k BIGINT PRIMARY KEY, v TEXT)"));
    assert_eq!(kinds(&read_until_ready(&mut c)), "CZ");

    // Describe of a parameterised INSERT: its parameters, then NoData (not an empty
    // RowDescription).
    parse(&mut c, "ins", "INSERT INTO a VALUES ($1, $2)");
    describe(&mut c, b'S', "ins");
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "1tnZ");
    let parameters = &replies[1].1;
    assert_eq!(&parameters[..2], &2i16.to_be_bytes());
    assert_eq!(&parameters[2..6], &20u32.to_be_bytes(), "$1 is the BIGINT key: int8");
    assert_eq!(&parameters[6..10], &25u32.to_be_bytes(), "$2 is TEXT");

    // Array insert: many Bind/Execute, one Sync, one implicit transaction.
    for k in 1..=5 {
        bind(&mut c, "", "ins", &[&k.to_string(), "row"], 0);
        execute(&mut c, "", 0);
    }
    sync(&mut c);
    assert_eq!(kinds(&read_until_ready(&mut c)), "2C2C2C2C2CZ");

    // Array fetch: a named portal read two rows at a time inside a transaction.
    protocol::send(&mut c, b'Q', &protocol::cstring("BEGIN"));
    assert_eq!(kinds(&read_until_ready(&mut c)), "CZ");
    parse(&mut c, "sel", "SELECT k FROM a WHERE k >= $1 ORDER BY k");
    bind(&mut c, "cur", "sel", &["1"], 1);
    describe(&mut c, b'P', "cur");
    execute(&mut c, "cur", 2);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "12TDDsZ");
    assert_eq!(replies[3].1[6..], 1i64.to_be_bytes(), "binary int8 as asked in Bind");
    execute(&mut c, "cur", 2);
    execute(&mut c, "cur", 2);
    sync(&mut c);
    assert_eq!(kinds(&read_until_ready(&mut c)), "DDsDCZ");

    // After an error everything up to Sync is skipped; the block is then failed.
    bind(&mut c, "", "ins", &["1", "dup"], 0);
    execute(&mut c, "", 0);
    bind(&mut c, "", "ins", &["9", "skipped"], 0);
    execute(&mut c, "", 0);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "2EZ");
    assert_eq!(sqlstate(&replies[1].1), "23505");
    assert_eq!(replies[2].1, b"E", "ReadyForQuery says: failed transaction");
    protocol::send(&mut c, b'Q', &protocol::cstring("ROLLBACK"));
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "CZ");
    assert_eq!(replies[1].1, b"I");
    protocol::send(&mut c, b'Q', &protocol::cstring("SELECT count(*) FROM a"));
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "TDCZ");
    assert!(replies[1].1.ends_with(b"5"), "the five rows of the array insert stay");
}

#[test]
fn bad_input_ends_only_its_connection() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE s (k BIGINT PRIMARY KEY)");
    let mut healthy = connect(&server);

    // Garbage instead of a startup packet.
    let mut garbage = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    garbage.write_all(b"\xff\xff\xff\xffGARBAGE GARBAGE").unwrap();
    assert!(protocol::read_message(&mut garbage).is_none_or(|m| m.0 == b'E'));

    // An unknown message type after startup.
    let mut unknown = connect(&server);
    protocol::send(&mut unknown, b'!', b"nonsense");
    let reply = protocol::read_message(&mut unknown).expect("an error before the close");
    assert_eq!(reply.0, b'E');
    assert_eq!(sqlstate(&reply.1), "08P01");
    assert!(protocol::read_message(&mut unknown).is_none(), "then the connection ends");

    // A length over the limit: refused without reading the body.
    let mut oversized = connect(&server);
    oversized.write_all(b"Q\x7f\xff\xff\xff").unwrap();
    let reply = protocol::read_message(&mut oversized).expect("an error before the close");
    assert_eq!(sqlstate(&reply.1), "54000");

    // A Bind whose body is shorter than its own counts.
    let mut truncated = connect(&server);
    protocol::send(&mut truncated, b'B', b"\x00\x00\x00\x05");
    let reply = protocol::read_message(&mut truncated).expect("an error before the close");
    assert_eq!(sqlstate(&reply.1), "08P01");

    // The others are still served.
    protocol::send(&mut healthy, b'Q', &protocol::cstring("INSERT INTO s VALUES (1)"));
    assert_eq!(kinds(&read_until_ready(&mut healthy)), "CZ");
    assert_eq!(server.query("SELECT count(*) FROM s"), "1\n");
    assert_eq!(server.terminate().code(), Some(0));
}
