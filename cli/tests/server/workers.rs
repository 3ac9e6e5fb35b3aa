//! The server's workers serve many connections each, and nothing a session waits for holds
//! one: on a server with ONE worker thread, a WAIT commit's `log file sync` is awaited
//! while the worker serves the other connections (so their commits share log writes), and
//! a session sleeping in a row lock wait gives the worker away (so the lock's holder can
//! still commit), and a long query hands the worker's other connections to another
//! thread. With a blocking wait on the worker, the first test sees one commit per write
//! and the others time out.

use std::thread;
use std::time::{Duration, Instant};

use crate::common::protocol::{self, kinds, query, sqlstate};
use crate::common::{require_tool, Server};

/// The CommandComplete tag of a simple query's replies, or the error's SQLSTATE.
fn outcome(replies: &[(u8, Vec<u8>)]) -> String {
    match replies.iter().find(|m| m.0 == b'C' || m.0 == b'E') {
        Some((b'C', body)) => String::from_utf8_lossy(&body[..body.len() - 1]).into_owned(),
        Some((_, body)) => format!("error {}", sqlstate(body)),
        None => format!("no result: {}", kinds(replies)),
    }
}

fn sysstat(server: &Server, name: &str) -> u64 {
    server.query(&format!("SELECT value FROM v$sysstat WHERE name = '{name}'")).trim().parse().unwrap()
}

#[test]
fn wait_commits_of_many_connections_share_log_writes_on_one_worker() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--worker-threads", "1"]);
    server.query("CREATE TABLE w (id BIGINT PRIMARY KEY, client BIGINT)");
    let (commits_before, writes_before) = (sysstat(&server, "user commits"), sysstat(&server, "redo writes"));
    let clients = 8u64;
    let per_client = 150u64;
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let mut stream = server.connect();
            thread::spawn(move || {
                for i in 0..per_client {
                    // Autocommit, in the default mode: WAIT IMMEDIATE.
                    let replies =
                        query(&mut stream, &format!("INSERT INTO w VALUES ({}, {c})", c * 1000 + i));
                    assert_eq!(outcome(&replies), "INSERT 0 1");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let commits = sysstat(&server, "user commits") - commits_before;
    let writes = sysstat(&server, "redo writes") - writes_before;
    assert!(commits >= clients * per_client, "{commits} commits");
    let per_write = commits as f64 / writes.max(1) as f64;
    // A worker held by each wait would serve one commit at a time: at most one per
    // write. How many more share a write depends on the CPU time of a statement against
    // the time of a write: measured on the 2-vCPU VM (stop 30, 8 runs alone) from 1.18
    // to 1.93 per write, 1.26 beside the rest of the suite; earlier 2-5 alone. The bound
    // keeps a margin above the one-per-write of a held worker.
    assert!(
        per_write >= 1.1,
        "{commits} WAIT commits of {clients} connections took {writes} log writes ({per_write:.2} per write): \
         the worker did not serve others while a commit waited"
    );
    assert_eq!(server.query("SELECT count(*) FROM w").trim(), (clients * per_client).to_string());
    eprintln!("{commits} WAIT commits in {writes} log writes ({per_write:.2} per write)");
}

#[test]
fn a_row_lock_wait_gives_the_only_worker_to_the_lock_holder() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--worker-threads", "1"]);
    server.query("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)");
    server.query("INSERT INTO t VALUES (1, 0)");
    let mut holder = server.connect();
    assert_eq!(outcome(&query(&mut holder, "BEGIN")), "BEGIN");
    assert_eq!(outcome(&query(&mut holder, "UPDATE t SET v = 1 WHERE id = 1")), "UPDATE 1");
    let mut waiter = server.connect();
    let waiting = thread::spawn(move || {
        let started = Instant::now();
        let replies = query(&mut waiter, "UPDATE t SET v = 2 WHERE id = 1");
        (outcome(&replies), started.elapsed())
    });
    // The waiter is asleep in its lock wait, on the only worker.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.query("SELECT event FROM v$session").contains("row lock contention") {
        assert!(Instant::now() < deadline, "the second update never waited for the row lock");
        thread::sleep(Duration::from_millis(20));
    }
    // The holder is served meanwhile: it commits, which wakes the waiter.
    let committed = Instant::now();
    assert_eq!(outcome(&query(&mut holder, "COMMIT")), "COMMIT");
    assert!(committed.elapsed() < Duration::from_secs(5), "the COMMIT waited {:?}", committed.elapsed());
    let (updated, waited) = waiting.join().unwrap();
    assert_eq!(updated, "UPDATE 1");
    assert!(waited >= Duration::from_millis(20), "it did wait: {waited:?}");
    assert_eq!(server.query("SELECT v FROM t WHERE id = 1").trim(), "2");
}

#[test]
fn a_long_query_on_the_only_worker_leaves_the_other_connections_served() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--worker-threads", "1"]);
    server.query("CREATE TABLE big (k INT PRIMARY KEY, v VARCHAR(20))");
    for chunk in 0..10 {
        let values: Vec<String> =
            (chunk * 2000..(chunk + 1) * 2000).map(|i| format!("({i}, 'abcdefghij')")).collect();
        server.query(&format!("INSERT INTO big VALUES {}", values.join(", ")));
    }
    // About a minute of work (a 4 MB string per row), sent and not read.
    let mut scanner = server.connect();
    protocol::send(
        &mut scanner,
        b'Q',
        &protocol::cstring("SELECT count(*) FROM big WHERE length(repeat(v, 400000)) > 0"),
    );
    let started = Instant::now();
    let deadline = started + Duration::from_secs(20);
    while !server.query("SELECT sql_text FROM v$session WHERE status = 'ACTIVE'").contains("repeat") {
        assert!(Instant::now() < deadline, "the long query never showed as running");
        thread::sleep(Duration::from_millis(20));
    }
    // It is running; others are served meanwhile, several times over.
    for i in 0..5 {
        let asked = Instant::now();
        assert_eq!(server.query(&format!("SELECT count(*) FROM big WHERE k < {i}")).trim(), i.to_string());
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "a query waited {:?} behind the long one",
            asked.elapsed()
        );
    }
    assert!(
        server.query("SELECT sql_text FROM v$session WHERE status = 'ACTIVE'").contains("repeat"),
        "the long query was still running ({:?}): the test showed nothing",
        started.elapsed()
    );
}

/// The server's thread count, from /proc.
fn threads_of(server: &Server) -> usize {
    std::fs::read_dir(format!("/proc/{}/task", server.pid())).expect("/proc of the server").count()
}

#[test]
fn threads_lent_to_a_burst_of_lock_sleepers_go_once_the_burst_is_over_though_sleeps_go_on() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--worker-threads", "2"]);
    server.query("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)");
    server.query("INSERT INTO t VALUES (1, 0), (2, 0)");
    let before = threads_of(&server);
    // A burst: 16 sessions asleep on one row lock at once, each on a thread of its own.
    let sleepers = 16;
    let mut holder = server.connect();
    assert_eq!(outcome(&query(&mut holder, "BEGIN")), "BEGIN");
    assert_eq!(outcome(&query(&mut holder, "UPDATE t SET v = v + 1 WHERE id = 1")), "UPDATE 1");
    let waiting: Vec<_> = (0..sleepers)
        .map(|_| {
            let mut stream = server.connect();
            thread::spawn(move || outcome(&query(&mut stream, "UPDATE t SET v = v + 1 WHERE id = 1")))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.query("SELECT count(*) FROM v$session WHERE event = 'enq: TX - row lock contention'").trim()
        != sleepers.to_string()
    {
        assert!(Instant::now() < deadline, "the burst never slept at once");
        thread::sleep(Duration::from_millis(20));
    }
    let in_burst = threads_of(&server);
    // (Spare threads counted before may be among those lent, hence not all 16.)
    assert!(
        in_burst >= before + sleepers / 2,
        "the burst borrowed no threads: {before} threads before, {in_burst} in the burst of {sleepers} sleepers"
    );
    assert_eq!(outcome(&query(&mut holder, "COMMIT")), "COMMIT");
    for w in waiting {
        assert_eq!(w.join().unwrap(), "UPDATE 1");
    }
    // Then a trickle: a short lock wait every 300 ms for 6 s. Each wakes an idle thread
    // of the pool; with threads kept 10 s after their last use, the trickle would keep
    // the whole burst's pool alive for as long as it lasts.
    let (mut holder, mut waiter) = (server.connect(), server.connect());
    let trickle_started = Instant::now();
    while trickle_started.elapsed() < Duration::from_secs(6) {
        assert_eq!(outcome(&query(&mut holder, "BEGIN")), "BEGIN");
        assert_eq!(outcome(&query(&mut holder, "UPDATE t SET v = v + 1 WHERE id = 2")), "UPDATE 1");
        let sleeper = thread::spawn(move || {
            let replies = query(&mut waiter, "UPDATE t SET v = v + 1 WHERE id = 2");
            (outcome(&replies), waiter)
        });
        thread::sleep(Duration::from_millis(50));
        assert_eq!(outcome(&query(&mut holder, "COMMIT")), "COMMIT");
        let (updated, stream) = sleeper.join().unwrap();
        assert_eq!(updated, "UPDATE 1");
        waiter = stream;
        thread::sleep(Duration::from_millis(250));
    }
    let after = threads_of(&server);
    assert!(
        after <= before + 3,
        "{before} threads before the burst, {in_burst} in it, {after} after 6 s of a trickle of lock waits"
    );
    let expected = 1 + sleepers as i64;
    assert_eq!(server.query("SELECT v FROM t WHERE id = 1").trim(), expected.to_string());
}
