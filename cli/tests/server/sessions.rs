//! A connection's session over its life, through the raw protocol: a client gone in the
//! middle of a transaction leaves nothing behind; Flush sends what was asked before Sync,
//! and Close frees a statement; one message with several commits waits for the log once;
//! the network statistics count each round trip's bytes on the session that made it; and
//! a SIGINT in the middle of a lock wait is a clean shutdown, after which the restart
//! replays nothing.

use std::collections::HashMap;
use std::io::Read;
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::protocol::{self, cstring, data_rows, kinds, query, read_message, send, sqlstate};
use crate::common::{require_tool, Server};

/// This session's statistics (`v$mystat`), by name.
fn my_stats(stream: &mut TcpStream) -> HashMap<String, u64> {
    let replies = query(stream, "SELECT name, value FROM v$mystat");
    data_rows(&replies).into_iter().map(|row| (row[0].clone(), row[1].parse().unwrap())).collect()
}

fn delta(before: &HashMap<String, u64>, after: &HashMap<String, u64>, name: &str) -> u64 {
    let (Some(a), Some(b)) = (after.get(name), before.get(name)) else { panic!("no statistic {name:?}") };
    a - b
}

#[test]
fn a_client_gone_in_the_middle_of_a_transaction_is_rolled_back_and_its_locks_released() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE gone (k BIGINT PRIMARY KEY, v TEXT)");
    server.query("INSERT INTO gone VALUES (0, 'committed')");
    let mut leaver = server.connect();
    let replies = query(
        &mut leaver,
        "BEGIN; INSERT INTO gone VALUES (1, 'open'); UPDATE gone SET v = 'open' WHERE k = 0",
    );
    assert_eq!(kinds(&replies), "CCCZ");
    drop(leaver);

    // The row it locked is free (a lock still held would make this wait until the read
    // gives up), and nothing it did is there.
    let started = Instant::now();
    let mut other = server.connect();
    assert_eq!(kinds(&query(&mut other, "UPDATE gone SET v = 'next' WHERE k = 0")), "CZ");
    assert!(started.elapsed() < Duration::from_secs(10), "waited {:?} for the lock", started.elapsed());
    assert_eq!(server.query("SELECT k, v FROM gone ORDER BY k"), "0|next\n");
    assert_eq!(server.terminate().code(), Some(0));
}

#[test]
fn flush_sends_the_replies_so_far_and_close_frees_a_statement() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE f (k BIGINT PRIMARY KEY)");
    let mut stream = server.connect();
    protocol::parse(&mut stream, "by_key", "SELECT k FROM f WHERE k = $1");
    protocol::describe(&mut stream, b'S', "by_key");
    send(&mut stream, b'H', &[]);
    // Without a Sync: only the Flush makes these come (else the read gives up).
    let flushed: Vec<u8> = (0..3).map(|_| read_message(&mut stream).expect("flushed replies").0).collect();
    assert_eq!(flushed, b"1tT");

    let mut close = vec![b'S'];
    close.extend(cstring("by_key"));
    send(&mut stream, b'C', &close);
    send(&mut stream, b'H', &[]);
    assert_eq!(read_message(&mut stream).expect("CloseComplete").0, b'3');
    // The statement is gone: binding it is an error (26000), reported up to the Sync.
    protocol::bind(&mut stream, "", "by_key", &["1"], 0);
    protocol::execute(&mut stream, "", 0);
    protocol::sync(&mut stream);
    let replies = protocol::read_until_ready(&mut stream);
    assert_eq!(kinds(&replies), "EZ");
    assert_eq!(sqlstate(&replies[0].1), "26000");
    // Closing what does not exist is no error, as in PostgreSQL.
    send(&mut stream, b'C', &close);
    protocol::sync(&mut stream);
    assert_eq!(kinds(&protocol::read_until_ready(&mut stream)), "3Z");
    assert_eq!(server.terminate().code(), Some(0));
}

#[test]
fn one_message_with_several_commits_waits_for_the_log_once() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE calls (k BIGINT PRIMARY KEY)");
    let mut stream = server.connect();

    let before = my_stats(&mut stream);
    // (Without BEGIN and COMMIT, the statements of one message are one implicit
    // transaction, as in PostgreSQL.)
    let one_call =
        (1..=3).map(|k| format!("BEGIN; INSERT INTO calls VALUES ({k}); COMMIT; ")).collect::<String>();
    assert_eq!(kinds(&query(&mut stream, &one_call)), "CCCCCCCCCZ");
    let after = my_stats(&mut stream);
    assert_eq!(delta(&before, &after, "user commits"), 3);
    // Each commits as NOWAIT, and the call waits once, at its end, for all three
    // (`redo synch writes` counts that wait if the log was not durable yet when it began:
    // at most one).
    assert_eq!(delta(&before, &after, "commits deferred by call"), 3);
    assert_eq!(delta(&before, &after, "commit nowait performed"), 3);
    assert_eq!(delta(&before, &after, "commit wait performed"), 0);
    assert!(delta(&before, &after, "redo synch writes") <= 1, "the call waits once, at its end");

    // The same three commits in three messages wait three times.
    for k in 4..=6 {
        assert_eq!(kinds(&query(&mut stream, &format!("INSERT INTO calls VALUES ({k})"))), "CZ");
    }
    let last = my_stats(&mut stream);
    assert_eq!(delta(&after, &last, "user commits"), 3);
    assert_eq!(delta(&after, &last, "commits deferred by call"), 0);
    assert_eq!(delta(&after, &last, "commit nowait performed"), 0);
    assert_eq!(delta(&after, &last, "commit wait performed"), 3);
    assert_eq!(server.query("SELECT count(*) FROM calls"), "6\n");
    assert_eq!(server.terminate().code(), Some(0));
}

#[test]
fn network_statistics_count_each_round_trip_on_its_session() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut stream = server.connect();
    let mut bystander = server.connect();
    let bystander_before = my_stats(&mut bystander);

    let before = my_stats(&mut stream);
    // The client thinks for a while: an idle wait of the session.
    std::thread::sleep(Duration::from_millis(300));
    let big = "SELECT repeat('x', 20000)";
    assert_eq!(kinds(&query(&mut stream, big)), "TDCZ");
    let after = my_stats(&mut stream);
    // A round trip is counted as its reply goes, after the statements it answers ran:
    // the two between the reads are the first read's own and the big SELECT's.
    assert_eq!(delta(&before, &after, "SQL*Net roundtrips to/from client"), 2);
    assert!(delta(&before, &after, "bytes sent via SQL*Net to client") > 20000);
    let received = delta(&before, &after, "bytes received via SQL*Net from client");
    let sent_by_client = (big.len() + 6) + ("SELECT name, value FROM v$mystat".len() + 6);
    assert_eq!(received, sent_by_client as u64, "the SELECT's message and the second read's");

    let idle = query(
        &mut stream,
        "SELECT s.total_waits, s.time_waited_micro FROM v$session_event s WHERE s.event = 'SQL*Net message from client' \
         AND s.sid = pg_backend_pid()",
    );
    let idle = &data_rows(&idle)[0];
    assert!(idle[1].parse::<u64>().unwrap() >= 300_000, "the client's think time is an idle wait: {idle:?}");

    // The other session counted only its own.
    let bystander_after = my_stats(&mut bystander);
    assert_eq!(delta(&bystander_before, &bystander_after, "SQL*Net roundtrips to/from client"), 1);
    assert!(delta(&bystander_before, &bystander_after, "bytes sent via SQL*Net to client") < 20000);
    assert_eq!(server.terminate().code(), Some(0));
}

#[test]
fn sigint_during_a_lock_wait_is_a_clean_shutdown_and_the_restart_replays_nothing() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    server.query("CREATE TABLE shut (k BIGINT PRIMARY KEY, v TEXT)");
    server.query("INSERT INTO shut VALUES (0, 'committed'), (1, 'committed')");
    // One session holds row 0 in an open transaction; another waits for it.
    let mut holder = server.connect();
    assert_eq!(kinds(&query(&mut holder, "BEGIN; UPDATE shut SET v = 'held' WHERE k = 0")), "CCZ");
    let mut waiter = server.connect();
    send(&mut waiter, b'Q', &cstring("UPDATE shut SET v = 'waited' WHERE k = 0"));
    std::thread::sleep(Duration::from_millis(300));

    let started = Instant::now();
    assert_eq!(server.interrupt().code(), Some(0), "SIGINT is a clean exit");
    assert!(started.elapsed() < Duration::from_secs(15), "shutdown took {:?}", started.elapsed());
    // Both connections were ended (the waiter's statement may have run once the holder's
    // transaction was rolled back; either way it got an answer or a FATAL, then EOF).
    for mut stream in [holder, waiter] {
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).expect("the server closed the connection");
    }

    let log = std::fs::File::create(&log_path).unwrap();
    let server = Server::start_logging(&data, &[], "info", Stdio::from(log));
    let value = server.query("SELECT v FROM shut WHERE k = 0");
    assert!(value == "committed\n" || value == "waited\n", "the held update was rolled back: {value:?}");
    assert_eq!(server.query("SELECT v FROM shut WHERE k = 1"), "committed\n");
    let said = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        said.contains(" 0 commits replayed after the checkpoint image"),
        "a clean shutdown leaves nothing to replay: {said}"
    );
    assert_eq!(server.terminate().code(), Some(0));
}
