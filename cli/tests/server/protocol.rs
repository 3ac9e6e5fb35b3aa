//! `redodb serve` at the protocol level: the extended protocol's replies message by
//! message (NoData for an INSERT, array fetch with PortalSuspended, pipelined array
//! insert, skipping to Sync after an error, RETURNING described and fetched with its
//! command's tag, a FETCH portal honouring the row limit, ROLLBACK TO recovering a failed
//! block), startup options refused with their SQLSTATE, and bad input (garbage, an
//! oversized length) ending only the connection that sent it.

use std::io::Write;
use std::net::TcpStream;

use crate::common::protocol::{
    self, bind, describe, execute, expect_error, kinds, parse, query, read_until_ready, sqlstate, sync,
};
use crate::common::{require_tool, Server};

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

    // Oracle's placeholders over the wire: described as `$1..$n`, bound by position.
    parse(&mut c, "ora", "SELECT v || :suffix FROM a WHERE k = :key");
    describe(&mut c, b'S', "ora");
    bind(&mut c, "", "ora", &["!", "3"], 0);
    execute(&mut c, "", 0);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "1tT2DCZ");
    let parameters = &replies[1].1;
    assert_eq!(&parameters[..2], &2i16.to_be_bytes());
    assert_eq!(&parameters[6..10], &20u32.to_be_bytes(), ":key is compared with the BIGINT key: int8");
    assert!(replies[4].1.ends_with(b"row!"), "{:?}", replies[4]);

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

/// psycopg's server-side cursor: BEGIN, `DECLARE "c" CURSOR FOR ...` through the
/// extended protocol (with a parameter), Describe portal "c", then simple-query
/// `FETCH FORWARD n FROM "c"` and `CLOSE "c"`.
#[test]
fn a_declared_cursor_is_a_portal_described_and_fetched_as_psycopg_does() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = connect(&server);
    assert_eq!(kinds(&query(&mut c, "CREATE TABLE p (k BIGINT PRIMARY KEY, v TEXT)")), "CZ");
    assert_eq!(kinds(&query(&mut c, "INSERT INTO p VALUES (1, 'a'), (2, 'b')")), "CZ");
    for k in 3..=7 {
        query(&mut c, &format!("INSERT INTO p VALUES ({k}, 'v{k}')"));
    }
    assert_eq!(kinds(&query(&mut c, "BEGIN")), "CZ");

    parse(&mut c, "", "DECLARE \"c\" CURSOR FOR SELECT k, v FROM p WHERE k >= $1 ORDER BY k");
    bind(&mut c, "", "", &["2"], 0);
    describe(&mut c, b'P', "");
    execute(&mut c, "", 0);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "12nCZ");
    assert_eq!(replies[3].1, protocol::cstring("DECLARE CURSOR"));
    assert_eq!(replies[4].1, b"T", "inside the block");

    describe(&mut c, b'P', "c");
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "TZ");
    assert_eq!(&replies[0].1[..2], &2i16.to_be_bytes(), "two columns");

    let replies = query(&mut c, "FETCH FORWARD 4 FROM \"c\"");
    assert_eq!(kinds(&replies), "TDDDDCZ");
    assert!(replies[1].1.ends_with(b"2\x00\x00\x00\x01b"), "{:?}", replies[1].1);
    assert_eq!(replies[5].1, protocol::cstring("FETCH 4"));
    let replies = query(&mut c, "FETCH FORWARD 4 FROM \"c\"");
    assert_eq!(kinds(&replies), "TDDCZ");
    assert_eq!(replies[3].1, protocol::cstring("FETCH 2"));
    let replies = query(&mut c, "FETCH FORWARD 4 FROM \"c\"");
    assert_eq!(kinds(&replies), "TCZ");
    assert_eq!(replies[1].1, protocol::cstring("FETCH 0"));

    // FETCH through the extended protocol, in binary as asked in Bind.
    query(&mut c, "DECLARE d CURSOR FOR SELECT k FROM p ORDER BY k");
    parse(&mut c, "", "FETCH 2 FROM d");
    bind(&mut c, "", "", &[], 1);
    describe(&mut c, b'P', "");
    execute(&mut c, "", 0);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "12TDDCZ");
    assert_eq!(replies[3].1[6..], 1i64.to_be_bytes());

    let replies = query(&mut c, "CLOSE \"c\"");
    assert_eq!(replies[0].1, protocol::cstring("CLOSE CURSOR"));
    let replies = query(&mut c, "FETCH 1 FROM c");
    assert_eq!(kinds(&replies), "EZ");
    assert_eq!(sqlstate(&replies[0].1), "34000");
    query(&mut c, "ROLLBACK");

    // Outside a block the extended protocol's DECLARE fails as in PostgreSQL.
    parse(&mut c, "", "DECLARE e CURSOR FOR SELECT 1");
    bind(&mut c, "", "", &[], 0);
    execute(&mut c, "", 0);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "12EZ");
    assert_eq!(sqlstate(&replies[2].1), "25P01");
}

fn copy_data(stream: &mut TcpStream, data: &[u8]) {
    protocol::send(stream, b'd', data);
}

/// Sends `sql`, a COPY FROM STDIN, as a simple Query; the server answers CopyInResponse.
fn start_copy_in(stream: &mut TcpStream, sql: &str) {
    protocol::send(stream, b'Q', &protocol::cstring(sql));
    assert_eq!(protocol::read_message(stream).unwrap().0, b'G');
}

/// COPY FROM STDIN at the protocol level: rows cut across CopyData messages (and
/// across reads), Flush and Sync ignored in copy-in mode, CopyFail, and a COPY in the
/// middle of a Query message whose remaining statements run after it.
#[test]
fn copy_in_takes_data_cut_anywhere_and_fails_as_a_whole() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = connect(&server);
    query(&mut c, "CREATE TABLE l (k BIGINT PRIMARY KEY, v TEXT)");

    protocol::send(&mut c, b'Q', &protocol::cstring("COPY l FROM STDIN WITH (FORMAT csv)"));
    let reply = protocol::read_message(&mut c).unwrap();
    assert_eq!(reply.0, b'G', "CopyInResponse");
    assert_eq!(reply.1, [0, 0, 2, 0, 0, 0, 0], "text, two columns in text");
    let data = b"1,one\n2,\"two\nlines\"\n3,three\n4,\"four, with comma\"\n5,last-without-newline";
    for (i, piece) in data.chunks(3).enumerate() {
        copy_data(&mut c, piece);
        if i % 5 == 0 {
            protocol::send(&mut c, b'H', &[]); // Flush: ignored
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    protocol::send(&mut c, b'c', &[]);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "CZ");
    assert_eq!(replies[0].1, protocol::cstring("COPY 5"));
    let replies = query(&mut c, "SELECT v FROM l WHERE k = 2");
    assert!(replies[1].1.ends_with(b"two\nlines"));

    // CopyFail: 57014 with the client's message; nothing loaded.
    start_copy_in(&mut c, "COPY l FROM STDIN");
    copy_data(&mut c, b"10\tten\n");
    protocol::send(&mut c, b'f', &protocol::cstring("client gave up"));
    let replies = expect_error(&mut c, "57014");
    assert!(String::from_utf8_lossy(&replies[0].1).contains("client gave up"));

    // A bad row: the error (with its line) when the copy ends; data after it dropped.
    start_copy_in(&mut c, "COPY l FROM STDIN");
    copy_data(&mut c, b"20\ttwenty\n21\ttwenty-one\n1\tdup\n");
    copy_data(&mut c, b"22\tdropped\n");
    protocol::send(&mut c, b'c', &[]);
    let replies = expect_error(&mut c, "23505");
    assert!(String::from_utf8_lossy(&replies[0].1).contains("COPY l, line 3"));
    // Copy messages after a failed copy are dropped silently.
    copy_data(&mut c, b"23\tlate\n");
    protocol::send(&mut c, b'c', &[]);
    let replies = query(&mut c, "SELECT count(*) FROM l");
    assert_eq!(kinds(&replies), "TDCZ");
    assert!(replies[1].1.ends_with(b"5"), "only the first COPY's rows");

    // COPY in the middle of a Query message: the statements after it run when it ends.
    protocol::send(
        &mut c,
        b'Q',
        &protocol::cstring("INSERT INTO l VALUES (30, 'x'); COPY l FROM STDIN; SELECT count(*) FROM l"),
    );
    let first = protocol::read_message(&mut c).unwrap();
    assert_eq!(first.0, b'C');
    assert_eq!(protocol::read_message(&mut c).unwrap().0, b'G');
    copy_data(&mut c, b"31\tthirty-one\n");
    protocol::send(&mut c, b'c', &[]);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "CTDCZ");
    assert!(replies[2].1.ends_with(b"7"));

    // Through the extended protocol: the Sync sent right after Execute is ignored in
    // copy-in mode; the one after CopyDone ends the implicit transaction.
    parse(&mut c, "", "COPY l (k) FROM STDIN");
    bind(&mut c, "", "", &[], 0);
    execute(&mut c, "", 0);
    sync(&mut c);
    let replies: Vec<_> = (0..3).map(|_| protocol::read_message(&mut c).unwrap()).collect();
    assert_eq!(kinds(&replies), "12G");
    copy_data(&mut c, b"40\n41\n");
    protocol::send(&mut c, b'c', &[]);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "CZ");
    assert_eq!(replies[0].1, protocol::cstring("COPY 2"));
    assert_eq!(replies[1].1, b"I");
    let replies = query(&mut c, "SELECT count(*) FROM l WHERE v IS NULL");
    assert!(replies[1].1.ends_with(b"2"));

    // Another message in copy-in mode aborts the copy.
    start_copy_in(&mut c, "COPY l FROM STDIN");
    copy_data(&mut c, b"50\tfifty\n");
    protocol::send(&mut c, b'Q', &protocol::cstring("SELECT 1"));
    expect_error(&mut c, "08P01");
    let replies = query(&mut c, "SELECT count(*) FROM l");
    assert!(replies[1].1.ends_with(b"9"));
}

/// A statement's notice comes before its CommandComplete, also in a message of several
/// statements.
#[test]
fn notices_come_right_after_their_statement() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = connect(&server);
    protocol::send(
        &mut c,
        b'Q',
        &protocol::cstring("SELECT 1; ALTER SESSION SET commit_write = 'BATCH,NOWAIT'; SELECT 2"),
    );
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "TDCNCTDCZ");
    let warning = String::from_utf8_lossy(&replies[3].1);
    assert!(warning.contains("COMMIT_WRITE is deprecated"), "{warning}");
    assert!(warning.contains("SWARNING\0") && warning.contains("C01P01\0"), "{warning}");

    // PostgreSQL's NOTICE for a statement that skipped what it was asked.
    let replies = query(
        &mut c,
        "CREATE TABLE IF NOT EXISTS n (k INT PRIMARY KEY); CREATE TABLE IF NOT EXISTS n (k INT PRIMARY KEY)",
    );
    assert_eq!(kinds(&replies), "CNCZ");
    let notice = String::from_utf8_lossy(&replies[1].1);
    assert!(notice.contains("SNOTICE\0") && notice.contains("C42P07\0"), "{notice}");
    assert!(notice.contains("relation \"n\" already exists, skipping"), "{notice}");

    // client_min_messages: a NOTICE is held back from `warning` up, a WARNING at `error`.
    assert_eq!(kinds(&query(&mut c, "SET client_min_messages = WARNING")), "CZ");
    assert_eq!(kinds(&query(&mut c, "CREATE TABLE IF NOT EXISTS n (k INT PRIMARY KEY)")), "CZ");
    assert_eq!(kinds(&query(&mut c, "ALTER SESSION SET commit_write = 'BATCH,NOWAIT'")), "NCZ");
    let shown = query(&mut c, "SHOW client_min_messages");
    assert!(shown[1].1.ends_with(b"warning"), "{shown:?}");
    assert_eq!(kinds(&query(&mut c, "SET client_min_messages = error")), "CZ");
    assert_eq!(kinds(&query(&mut c, "ALTER SESSION SET commit_write = 'BATCH,NOWAIT'")), "CZ");
    protocol::send(&mut c, b'Q', &protocol::cstring("SET client_min_messages = loud"));
    expect_error(&mut c, "22023");
    assert_eq!(kinds(&query(&mut c, "RESET client_min_messages")), "CZ");
    assert_eq!(kinds(&query(&mut c, "CREATE TABLE IF NOT EXISTS n (k INT PRIMARY KEY)")), "NCZ");
}

/// The reply's CommandComplete tag.
fn tag_of(reply: &(u8, Vec<u8>)) -> String {
    assert_eq!(reply.0, b'C', "a CommandComplete");
    String::from_utf8_lossy(reply.1.strip_suffix(b"\0").unwrap_or(&reply.1)).into_owned()
}

/// Startup options are SETs of the new session; a bad one ends the connection with
/// FATAL and PostgreSQL's SQLSTATE, after AuthenticationOk (as PostgreSQL orders them).
#[test]
fn startup_options_are_set_or_refused_with_their_sqlstate() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    for (options, sqlstate_expected) in [
        ("-c no_such_setting=1", "42704"),
        ("-c commit_wait=sometimes", "22023"),
        ("--client-encoding=latin1", "22023"),
        ("-c server_version=9", "55P02"),
        ("-B 100", "42601"),
        ("-c commit_wait", "42601"),
    ] {
        let mut c = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        protocol::send_startup_with(&mut c, "test", &[("options", options)]);
        let mut fatal = None;
        while let Some((kind, body)) = protocol::read_message(&mut c) {
            assert_ne!(kind, b'Z', "{options}: the session must not start");
            if kind == b'E' {
                fatal = Some(body);
            }
        }
        let fatal = fatal.unwrap_or_else(|| panic!("{options}: no error"));
        assert_eq!(sqlstate(&fatal), sqlstate_expected, "{options}: {}", String::from_utf8_lossy(&fatal));
        assert!(fatal.windows(7).any(|w| w == b"SFATAL\0"), "{options}: FATAL");
    }
    let mut c = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    protocol::send_startup_with(
        &mut c,
        "test",
        &[(
            "options",
            "-c synchronous_commit=off --call-commit-optimization=false -capplication_name=from\\ options",
        )],
    );
    let started = read_until_ready(&mut c);
    let statuses: Vec<String> =
        started.iter().filter(|m| m.0 == b'S').map(|m| String::from_utf8_lossy(&m.1).into_owned()).collect();
    assert!(
        statuses.iter().any(|s| s == "application_name\0from options\0"),
        "the options' values are the ones reported: {statuses:?}"
    );
    let replies = query(
        &mut c,
        "SELECT current_setting('synchronous_commit'), current_setting('call_commit_optimization')",
    );
    assert_eq!(kinds(&replies), "TDCZ");
    assert!(replies[1].1.ends_with(b"off\0\0\0\x05FALSE"), "{:?}", replies[1].1);

    // set_config() through the extended protocol: described as the row it returns, and
    // the reported setting's change goes out as a ParameterStatus.
    parse(&mut c, "", "SELECT pg_catalog.set_config('application_name', 'by set_config', false) AS \"Now\"");
    bind(&mut c, "", "", &[], 0);
    describe(&mut c, b'P', "");
    execute(&mut c, "", 0);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "12TSDCZ");
    assert!(replies[2].1.windows(4).any(|w| w == b"Now\0"), "{:?}", replies[2].1);
    assert_eq!(replies[3].1, b"application_name\0by set_config\0");
    assert!(replies[4].1.ends_with(b"by set_config"));
}

/// RETURNING through the extended protocol: Describe of the statement gives its
/// parameters and the RETURNING columns, the rows come with the DML's own tag, also when
/// an Execute row limit hands them out in portions.
#[test]
fn returning_rows_are_described_and_fetched_with_the_commands_tag() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = connect(&server);
    assert_eq!(kinds(&query(&mut c, "CREATE TABLE a (k BIGINT PRIMARY KEY, v TEXT)")), "CZ");

    parse(&mut c, "ins", "INSERT INTO a VALUES ($1, $2) RETURNING k, v || '!' AS loud");
    describe(&mut c, b'S', "ins");
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "1tTZ");
    let row_description = &replies[2].1;
    assert_eq!(&row_description[..2], &2i16.to_be_bytes(), "two columns");
    assert!(row_description.windows(5).any(|w| w == b"loud\0"), "{row_description:?}");
    for k in 1..=3 {
        bind(&mut c, "", "ins", &[&k.to_string(), "x"], 0);
        execute(&mut c, "", 0);
    }
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "2DC2DC2DCZ");
    assert!(replies[1].1.ends_with(b"x!"), "{:?}", replies[1].1);
    assert_eq!(tag_of(&replies[2]), "INSERT 0 1");

    // An UPDATE's RETURNING read two rows at a time from a described portal.
    query(&mut c, "BEGIN");
    parse(&mut c, "upd", "UPDATE a SET v = 'y' WHERE k >= $1 RETURNING k");
    bind(&mut c, "p", "upd", &["1"], 1);
    describe(&mut c, b'P', "p");
    execute(&mut c, "p", 2);
    sync(&mut c);
    assert_eq!(kinds(&read_until_ready(&mut c)), "12TDDsZ");
    execute(&mut c, "p", 2);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "DCZ");
    assert_eq!(replies[0].1[6..], 3i64.to_be_bytes(), "binary int8 as asked");
    assert_eq!(tag_of(&replies[1]), "UPDATE 3");
    query(&mut c, "COMMIT");
    let replies = query(&mut c, "SELECT count(*) FROM a WHERE v = 'y'");
    assert!(replies[1].1.ends_with(b"3"));

    // Without RETURNING a DML statement still answers NoData.
    parse(&mut c, "del", "DELETE FROM a WHERE k = $1");
    describe(&mut c, b'S', "del");
    sync(&mut c);
    assert_eq!(kinds(&read_until_ready(&mut c)), "1tnZ");
}

/// `FETCH n FROM c` run through the extended protocol honours the Execute's row limit:
/// the portal keeps the rest for the next Execute, as PostgreSQL does.
#[test]
fn a_fetch_portal_honours_the_execute_row_limit() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = connect(&server);
    query(&mut c, "CREATE TABLE f (k BIGINT PRIMARY KEY)");
    query(&mut c, "INSERT INTO f VALUES (1), (2), (3), (4), (5), (6)");
    query(&mut c, "BEGIN");
    query(&mut c, "DECLARE c CURSOR FOR SELECT k FROM f ORDER BY k");
    parse(&mut c, "", "FETCH 5 FROM c");
    bind(&mut c, "", "", &[], 0);
    execute(&mut c, "", 2);
    execute(&mut c, "", 2);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "12DDsDDsZ");
    execute(&mut c, "", 2);
    sync(&mut c);
    let replies = read_until_ready(&mut c);
    assert_eq!(kinds(&replies), "DCZ");
    assert_eq!(replies[0].1[6..], *b"5");
    assert_eq!(tag_of(&replies[1]), "FETCH 5");
    // The cursor moved by the FETCH's five rows, not by what was handed out so far.
    let replies = query(&mut c, "FETCH ALL FROM c");
    assert_eq!(kinds(&replies), "TDCZ");
    assert!(replies[1].1.ends_with(b"6"));
    // With a limit the FETCH fits in, it completes at once.
    query(&mut c, "DECLARE d CURSOR FOR SELECT k FROM f ORDER BY k");
    parse(&mut c, "", "FETCH 2 FROM d");
    bind(&mut c, "", "", &[], 0);
    execute(&mut c, "", 5);
    sync(&mut c);
    assert_eq!(kinds(&read_until_ready(&mut c)), "12DDCZ");
    query(&mut c, "ROLLBACK");
}

/// ROLLBACK TO SAVEPOINT through the extended protocol is accepted in a failed block
/// and makes it usable again (PgJDBC's rollback(savepoint), and its autosave).
#[test]
fn rollback_to_a_savepoint_recovers_a_failed_block_through_the_extended_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = connect(&server);
    query(&mut c, "CREATE TABLE s (k BIGINT PRIMARY KEY)");
    query(&mut c, "BEGIN");
    query(&mut c, "INSERT INTO s VALUES (1)");
    let run = |c: &mut TcpStream, sql: &str| {
        parse(c, "", sql);
        bind(c, "", "", &[], 0);
        execute(c, "", 0);
        sync(c);
        read_until_ready(c)
    };
    assert_eq!(kinds(&run(&mut c, "SAVEPOINT sp")), "12CZ");
    let replies = run(&mut c, "INSERT INTO s VALUES (1)");
    assert_eq!(kinds(&replies), "12EZ");
    assert_eq!(replies.last().unwrap().1, b"E", "the block failed");
    let replies = run(&mut c, "SELECT 1");
    assert_eq!(sqlstate(&replies[0].1), "25P02");
    let replies = run(&mut c, "ROLLBACK TO SAVEPOINT sp");
    assert_eq!(kinds(&replies), "12CZ");
    assert_eq!(tag_of(&replies[2]), "ROLLBACK");
    assert_eq!(replies[3].1, b"T", "usable again, still in the block");
    assert_eq!(kinds(&run(&mut c, "INSERT INTO s VALUES (2)")), "12CZ");
    assert_eq!(kinds(&run(&mut c, "RELEASE SAVEPOINT sp")), "12CZ");
    let replies = run(&mut c, "ROLLBACK TO sp");
    assert_eq!(sqlstate(&replies[2].1), "3B001", "released");
    query(&mut c, "ROLLBACK");
    let replies = query(&mut c, "SAVEPOINT outside");
    assert_eq!(sqlstate(&replies[0].1), "25P01");
}
