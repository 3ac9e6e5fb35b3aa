//! Cancel requests against `redodb serve`: psql's Ctrl-C (SIGINT to the psql process,
//! which sends a CancelRequest on a new connection) interrupts a statement waiting for a
//! row lock and a long-running SELECT; the statement fails with 57014 and leaves no
//! change, the session and the server go on. A raw client checks the key: a wrong one
//! does nothing, and a cancel while nothing runs does not cancel the next statement.

use std::io::Write;
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::protocol::{self, query};
use crate::common::{piped_psql, require_tool, wait_for_session, Server};

const CANCELED: &str = "canceling statement due to user request";

/// Ctrl-C to psql: SIGINT, which makes it send a CancelRequest.
fn interrupt(child: &Child) {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

/// Waits for `child` to exit (at most `limit`); returns its stderr.
fn finish(mut child: Child, limit: Duration) -> (std::process::ExitStatus, String) {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return (out.status, String::from_utf8_lossy(&out.stderr).into_owned());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("psql did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn table_with_one_row(server: &Server) {
    server.query("CREATE TABLE acct (k INT PRIMARY KEY, v INT)");
    server.query("INSERT INTO acct VALUES (1, 100)");
}

/// Session A (`holder`) updates row 1 in an open transaction and keeps it locked.
fn hold_row_lock(server: &Server) -> (Child, ChildStdin) {
    let (holder, mut stdin) = piped_psql(server, "holder", &[]);
    writeln!(stdin, "BEGIN;\nUPDATE acct SET v = 200 WHERE k = 1;").unwrap();
    stdin.flush().unwrap();
    wait_for_session(server, "holder", "status = 'INACTIVE' AND sql_text LIKE 'UPDATE%'");
    (holder, stdin)
}

#[test]
fn ctrl_c_in_psql_cancels_an_update_waiting_for_a_row_lock() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    table_with_one_row(&server);
    let (holder, mut holder_stdin) = hold_row_lock(&server);

    let waiter = Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "waiter", "-d", "redodb", "-X"])
        .args(["-c", "UPDATE acct SET v = 300 WHERE k = 1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_session(&server, "waiter", "event = 'enq: TX - row lock contention'");
    let interrupted = Instant::now();
    interrupt(&waiter);
    let (status, stderr) = finish(waiter, Duration::from_secs(20));
    assert!(!status.success());
    assert!(stderr.contains(CANCELED), "{stderr}");
    assert!(interrupted.elapsed() < Duration::from_secs(5), "{:?}", interrupted.elapsed());

    // The holder commits: its value stays, the cancelled update left nothing.
    writeln!(holder_stdin, "COMMIT;").unwrap();
    drop(holder_stdin);
    assert!(finish(holder, Duration::from_secs(20)).0.success());
    assert_eq!(server.query("SELECT v FROM acct WHERE k = 1"), "200\n");
    assert!(server.terminate().success());
}

#[test]
fn ctrl_c_in_psql_cancels_a_long_select() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE big (k INT PRIMARY KEY, v VARCHAR(20))");
    for chunk in 0..10 {
        let values: Vec<String> =
            (chunk * 2000..(chunk + 1) * 2000).map(|i| format!("({i}, 'abcdefghij')")).collect();
        server.query(&format!("INSERT INTO big VALUES {}", values.join(", ")));
    }
    // Builds a 4 MB string per row: about a minute for the whole table uncancelled.
    let select = "SELECT count(*) FROM big WHERE length(repeat(v, 400000)) > 0";
    let started = Instant::now();
    let psql = Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "scanner", "-d", "redodb", "-X"])
        .args(["-c", select])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_session(&server, "scanner", "status = 'ACTIVE' AND sql_text LIKE '%repeat%'");
    std::thread::sleep(Duration::from_millis(300));
    let interrupted = Instant::now();
    interrupt(&psql);
    let (status, stderr) = finish(psql, Duration::from_secs(120));
    assert!(!status.success());
    assert!(stderr.contains(CANCELED), "{stderr} (after {:?})", started.elapsed());
    assert!(interrupted.elapsed() < Duration::from_secs(10), "{:?}", interrupted.elapsed());
    assert_eq!(server.query("SELECT count(*) FROM big"), "20000\n", "the server goes on");
    assert!(server.terminate().success());
}

/// A server whose one row (k = 1) a raw connection, the returned `holder`, has set to 2
/// in a transaction left open.
fn server_with_row_held(dir: &std::path::Path) -> (Server, TcpStream) {
    let server = Server::start(dir, &[]);
    table_with_one_row(&server);
    let (mut holder, _, _) = raw_connection(&server, "holder");
    assert_eq!(protocol::kinds(&query(&mut holder, "BEGIN; UPDATE acct SET v = 2 WHERE k = 1")), "CCZ");
    (server, holder)
}

/// The holder (`server_with_row_held`) commits: the row is its 2, whatever a waiter
/// tried; the server stops cleanly.
fn holder_commits(server: Server, holder: &mut TcpStream) {
    assert_eq!(protocol::kinds(&query(holder, "COMMIT")), "CZ");
    assert_eq!(server.query("SELECT v FROM acct"), "2\n", "only the holder's update is in");
    assert!(server.terminate().success());
}

/// A raw connection: startup as `user`; returns the stream and its (process id, secret).
fn raw_connection(server: &Server, user: &str) -> (TcpStream, i32, i32) {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    protocol::send_startup(&mut stream, user);
    let messages = protocol::read_until_ready(&mut stream);
    let key = messages.iter().find(|m| m.0 == b'K').expect("BackendKeyData");
    let pid = i32::from_be_bytes(key.1[..4].try_into().unwrap());
    let secret = i32::from_be_bytes(key.1[4..8].try_into().unwrap());
    (stream, pid, secret)
}

/// A CancelRequest on a connection of its own, which the server then closes.
fn cancel_request(server: &Server, pid: i32, secret: i32) {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let mut packet = 16i32.to_be_bytes().to_vec();
    packet.extend(80877102i32.to_be_bytes());
    packet.extend(pid.to_be_bytes());
    packet.extend(secret.to_be_bytes());
    stream.write_all(&packet).unwrap();
    assert!(protocol::read_message(&mut stream).is_none(), "no answer: the connection just closes");
}

#[test]
fn a_cancel_needs_the_right_key_and_only_hits_a_running_statement() {
    let dir = tempfile::tempdir().unwrap();
    let (server, mut holder) = server_with_row_held(dir.path());

    let (mut waiter, pid, secret) = raw_connection(&server, "waiter");
    assert_ne!(secret, 0);
    // A cancel while nothing runs is for no statement: the next one runs.
    cancel_request(&server, pid, secret);
    assert_eq!(protocol::kinds(&query(&mut waiter, "SELECT 1")), "TDCZ");

    protocol::send(&mut waiter, b'Q', &protocol::cstring("UPDATE acct SET v = 3 WHERE k = 1"));
    wait_for_session(&server, "waiter", "event = 'enq: TX - row lock contention'");
    cancel_request(&server, pid, secret ^ 1);
    cancel_request(&server, pid + 1000, secret);
    std::thread::sleep(Duration::from_millis(300));
    wait_for_session(&server, "waiter", "event = 'enq: TX - row lock contention'");
    cancel_request(&server, pid, secret);
    let reply = protocol::expect_error(&mut waiter, "57014");
    assert!(String::from_utf8_lossy(&reply[0].1).contains(CANCELED));

    // The session goes on; the holder's transaction is untouched and commits.
    assert_eq!(protocol::kinds(&query(&mut waiter, "SELECT v FROM acct")), "TDCZ");
    holder_commits(server, &mut holder);
}

#[test]
fn a_cancelled_statement_in_a_transaction_block_fails_the_block_and_the_session_goes_on() {
    // A raw client: psql reading a script leaves after a Ctrl-C, so it cannot show what
    // the session does next.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    table_with_one_row(&server);
    server.query("INSERT INTO acct VALUES (2, 20)");
    let (mut holder, _, _) = raw_connection(&server, "holder");
    assert_eq!(protocol::kinds(&query(&mut holder, "BEGIN; UPDATE acct SET v = 200 WHERE k = 1")), "CCZ");

    let (mut waiter, pid, secret) = raw_connection(&server, "waiter");
    assert_eq!(protocol::kinds(&query(&mut waiter, "BEGIN")), "CZ");
    assert_eq!(protocol::kinds(&query(&mut waiter, "UPDATE acct SET v = 21 WHERE k = 2")), "CZ");
    protocol::send(&mut waiter, b'Q', &protocol::cstring("UPDATE acct SET v = 300 WHERE k = 1"));
    wait_for_session(&server, "waiter", "event = 'enq: TX - row lock contention'");
    cancel_request(&server, pid, secret);
    let reply = protocol::expect_error(&mut waiter, "57014");
    assert_eq!(reply[1].1, b"E", "the block is failed");
    // Failed until ROLLBACK (25P02), as PostgreSQL leaves it; then the session works.
    let reply = query(&mut waiter, "SELECT 1");
    assert_eq!(protocol::sqlstate(&reply[0].1), "25P02");
    assert_eq!(protocol::kinds(&query(&mut waiter, "ROLLBACK")), "CZ");
    let reply = query(&mut waiter, "SELECT v FROM acct WHERE k = 2");
    assert_eq!(protocol::kinds(&reply), "TDCZ");
    assert!(reply[1].1.ends_with(b"20"), "the block's earlier update is rolled back: {:?}", reply[1].1);

    // The holder was not disturbed.
    assert_eq!(protocol::kinds(&query(&mut holder, "COMMIT")), "CZ");
    assert_eq!(server.query("SELECT k, v FROM acct ORDER BY k"), "1|200\n2|20\n");
    assert!(server.terminate().success());
}

/// An Execute waiting for a row lock (the extended protocol: its wait is awaited by the
/// connection, not slept on a thread) is cancelled as a simple query's wait is: 57014,
/// its implicit transaction rolled back, the session goes on.
#[test]
fn a_cancel_ends_an_execute_waiting_for_a_row_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (server, mut holder) = server_with_row_held(dir.path());

    let (mut waiter, pid, secret) = raw_connection(&server, "waiter");
    waiter.write_all(&protocol::extended_pipeline("UPDATE acct SET v = v + $1 WHERE k = 1", &["5"])).unwrap();
    wait_for_session(&server, "waiter", "event = 'enq: TX - row lock contention'");
    // Still waiting a few rechecks later (100 ms each): its retries found the lock held.
    std::thread::sleep(Duration::from_millis(350));
    wait_for_session(&server, "waiter", "event = 'enq: TX - row lock contention'");
    cancel_request(&server, pid, secret);
    let error = pipeline_error(&mut waiter, "57014");
    assert!(error.contains(CANCELED), "{error}");

    assert_eq!(protocol::kinds(&query(&mut waiter, "SELECT v FROM acct")), "TDCZ");
    holder_commits(server, &mut holder);
}

/// `statement_timeout` ends an Execute waiting for a row lock at the statement's
/// deadline: the runs of the statement after each look at the lock keep its first
/// start's deadline (a clock started again at each would never run out).
#[test]
fn statement_timeout_ends_an_execute_waiting_for_a_row_lock_at_its_first_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (server, mut holder) = server_with_row_held(dir.path());

    let (mut waiter, _, _) = raw_connection(&server, "waiter");
    assert_eq!(protocol::kinds(&query(&mut waiter, "SET statement_timeout = 450")), "CZ");
    let started = Instant::now();
    waiter.write_all(&protocol::extended_pipeline("UPDATE acct SET v = v + $1 WHERE k = 1", &["5"])).unwrap();
    let error = pipeline_error(&mut waiter, "57014");
    let waited = started.elapsed();
    assert!(error.contains("statement timeout"), "{error}");
    assert!(waited >= Duration::from_millis(440), "timed out early: {waited:?}");
    assert!(waited < Duration::from_secs(3), "the timeout ran late: {waited:?}");

    holder_commits(server, &mut holder);
}

/// Reads an extended pipeline's replies (`protocol::extended_pipeline`) up to
/// ReadyForQuery: ParseComplete, BindComplete, then the Execute's error with SQLSTATE
/// `code`; returns the error's text.
fn pipeline_error(stream: &mut TcpStream, code: &str) -> String {
    let replies = protocol::read_until_ready(stream);
    assert_eq!(protocol::kinds(&replies), "12EZ");
    assert_eq!(protocol::sqlstate(&replies[2].1), code);
    String::from_utf8_lossy(&replies[2].1).into_owned()
}
