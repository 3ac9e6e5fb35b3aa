//! The server's workers serve many connections each, and nothing a session waits for holds
//! one: on a server with ONE worker thread, a WAIT commit's `log file sync` is awaited
//! while the worker serves the other connections (so their commits share log writes: a
//! stalled log write holds the first commit while the others are served and queue behind
//! it), a session sleeping in a row lock wait gives the worker away (so the lock's holder
//! can still commit), and a long query hands the worker's other connections to another
//! thread. With a blocking wait on the worker, each of these tests times out.

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

/// On ONE worker thread, a commit held in `log file sync` by a stalled log write (`sync:.log:0:STALL`, armed while a file exists) leaves
/// the worker to the others: a query is answered, six more connections reach their own
/// commits' wait (counted in v$session by a query answered meanwhile), and once the
/// disk answers, the six share the next log write. A worker held by the wait would
/// answer nothing until the stall ends.
#[test]
fn a_commit_held_in_log_file_sync_leaves_the_only_worker_to_the_other_connections() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let slow_disk = dir.path().join("slow-disk");
    let env = [("REDODB_FAULTS", "sync:.log:0:STALL"), ("REDODB_FAULTS_WHILE", slow_disk.to_str().unwrap())];
    let server = Server::start_with_env(
        &dir.path().join("db"),
        &["--worker-threads", "1"],
        "warn",
        std::process::Stdio::inherit(),
        &env,
    );
    server.query("CREATE TABLE w (id BIGINT PRIMARY KEY)");
    let mut asker = server.connect();
    let mut ask = |sql: &str| -> String {
        let replies = query(&mut asker, sql);
        let rows = protocol::data_rows(&replies);
        rows.first().and_then(|r| r.first()).cloned().unwrap_or_else(|| panic!("{sql}: {}", kinds(&replies)))
    };
    let writes_before: u64 = ask("SELECT value FROM v$sysstat WHERE name = 'redo writes'").parse().unwrap();

    std::fs::write(&slow_disk, b"").unwrap();
    let insert = |id: u64| {
        let mut stream = server.connect();
        thread::spawn(move || outcome(&query(&mut stream, &format!("INSERT INTO w VALUES ({id})"))))
    };
    let held = insert(0);
    let waiting_in_sync = |ask: &mut dyn FnMut(&str) -> String| -> u64 {
        ask("SELECT count(*) FROM v$session WHERE event = 'log file sync'").parse().unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while waiting_in_sync(&mut ask) < 1 {
        assert!(Instant::now() < deadline, "the first commit never reached log file sync");
        thread::sleep(Duration::from_millis(10));
    }
    let asked = Instant::now();
    assert_eq!(ask("SELECT 40 + 2"), "42");
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "a query waited {:?} behind a held commit",
        asked.elapsed()
    );
    let others: Vec<_> = (1..=6).map(insert).collect();
    while waiting_in_sync(&mut ask) < 7 {
        assert!(Instant::now() < deadline, "the other commits never all reached log file sync");
        thread::sleep(Duration::from_millis(10));
    }
    assert!(!held.is_finished(), "the held commit was acknowledged while its log write stalled");

    std::fs::remove_file(&slow_disk).unwrap();
    assert_eq!(held.join().unwrap(), "INSERT 0 1");
    for other in others {
        assert_eq!(other.join().unwrap(), "INSERT 0 1");
    }
    let writes: u64 = ask("SELECT value FROM v$sysstat WHERE name = 'redo writes'").parse().unwrap();
    // The held commit's write, then one write for the six that waited behind it (at
    // most one more, should the writer have taken one of them alone first).
    assert!(writes - writes_before <= 3, "7 commits took {} log writes", writes - writes_before);
    assert_eq!(ask("SELECT count(*) FROM w"), "7");
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
        let replies = query(&mut waiter, "UPDATE t SET v = 2 WHERE id = 1");
        (outcome(&replies), Instant::now())
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
    let (updated, finished) = waiting.join().unwrap();
    assert_eq!(updated, "UPDATE 1");
    // It did wait: its UPDATE ended only once the holder's COMMIT had been sent (a fixed
    // minimum time was wrong: the wait is seen and ended within ~20 ms on a quick machine).
    assert!(finished >= committed, "the second update ended before the holder committed");
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
    // (Queries of two statements: one that stopped at the lock could not run again from
    // its start, so it sleeps; a Query of one statement awaits its wait, see below.)
    let sleepers = 16;
    let mut holder = server.connect();
    assert_eq!(outcome(&query(&mut holder, "BEGIN")), "BEGIN");
    assert_eq!(outcome(&query(&mut holder, "UPDATE t SET v = v + 1 WHERE id = 1")), "UPDATE 1");
    let waiting: Vec<_> = (0..sleepers)
        .map(|_| {
            let mut stream = server.connect();
            thread::spawn(move || {
                outcome(&query(&mut stream, "UPDATE t SET v = v + 1 WHERE id = 1; SELECT 1"))
            })
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
            let replies = query(&mut waiter, "UPDATE t SET v = v + 1 WHERE id = 2; SELECT 1");
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

/// Reads a request's replies up to ReadyForQuery: its statement's tag, or "error
/// SQLSTATE".
fn pipeline_outcome(stream: &mut std::net::TcpStream) -> String {
    outcome(&protocol::read_until_ready(stream))
}

/// Statements waiting for one row lock, Executes of a prepared UPDATE and Queries of one
/// UPDATE, hold no thread (the connection awaits the wait; the burst of two-statement
/// Queries above borrows a thread per sleeper), and each runs to completion exactly once
/// after the lock is free: every increment lands once, and `v$sql` counts one execution
/// per statement, not one per look at the lock.
#[test]
fn statements_waiting_for_a_row_lock_hold_no_thread_and_each_runs_exactly_once() {
    use std::io::Write;
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--worker-threads", "1"]);
    server.query("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)");
    server.query("INSERT INTO t VALUES (1, 0), (2, 0)");
    let before = threads_of(&server);
    let per_protocol = 8;
    let mut holder = server.connect();
    assert_eq!(outcome(&query(&mut holder, "BEGIN")), "BEGIN");
    assert_eq!(outcome(&query(&mut holder, "UPDATE t SET v = v + 1 WHERE id = 1")), "UPDATE 1");
    let prepared = "UPDATE t SET v = v + $1 WHERE id = $2";
    let literal = "UPDATE t SET v = v + 100 WHERE id = 1";
    let mut extended: Vec<_> = (0..per_protocol).map(|_| server.connect()).collect();
    let mut simple: Vec<_> = (0..per_protocol).map(|_| server.connect()).collect();
    for stream in &mut extended {
        stream.write_all(&protocol::extended_pipeline(prepared, &["10", "1"])).unwrap();
    }
    for stream in &mut simple {
        protocol::send(stream, b'Q', &protocol::cstring(literal));
    }
    let waiters = 2 * per_protocol;
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.query("SELECT count(*) FROM v$session WHERE event = 'enq: TX - row lock contention'").trim()
        != waiters.to_string()
    {
        assert!(Instant::now() < deadline, "the waiters never all waited");
        thread::sleep(Duration::from_millis(20));
    }
    let in_waits = threads_of(&server);
    assert!(
        in_waits <= before + 2,
        "{waiters} waiting statements took threads: {before} before, {in_waits} while they wait"
    );
    // The only worker serves the holder meanwhile, and the other row is free.
    assert_eq!(outcome(&query(&mut holder, "UPDATE t SET v = v + 1 WHERE id = 2")), "UPDATE 1");
    assert_eq!(outcome(&query(&mut holder, "COMMIT")), "COMMIT");
    for stream in extended.iter_mut().chain(simple.iter_mut()) {
        assert_eq!(pipeline_outcome(stream), "UPDATE 1");
    }
    let expected = 1 + (10 + 100) * per_protocol;
    assert_eq!(server.query("SELECT v FROM t ORDER BY id"), format!("{expected}\n1\n"));
    for text in [prepared, literal] {
        assert_eq!(
            server.query(&format!("SELECT executions FROM v$sql WHERE sql_text = '{text}'")),
            format!("{per_protocol}\n"),
            "{}",
            server.query("SELECT sql_text, executions FROM v$sql")
        );
    }
}

/// A transaction whose Execute waits for a row lock (its wait left to the connection) is
/// in the wait-for graph as a sleeping waiter is: closing the cycle is a deadlock for the
/// transaction that closes it, and the other goes on once it rolls back.
#[test]
fn a_deadlock_through_an_execute_waiting_for_a_row_lock_is_found() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--worker-threads", "1"]);
    server.query("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)");
    server.query("INSERT INTO t VALUES (1, 0), (2, 0)");
    let (mut a, mut b) = (server.connect(), server.connect());
    assert_eq!(outcome(&query(&mut a, "BEGIN")), "BEGIN");
    assert_eq!(outcome(&query(&mut a, "UPDATE t SET v = 1 WHERE id = 1")), "UPDATE 1");
    assert_eq!(outcome(&query(&mut b, "BEGIN")), "BEGIN");
    assert_eq!(outcome(&query(&mut b, "UPDATE t SET v = 2 WHERE id = 2")), "UPDATE 1");
    {
        use std::io::Write;
        b.write_all(&protocol::extended_pipeline("UPDATE t SET v = $1 WHERE id = 1", &["2"])).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while !server.query("SELECT event FROM v$session").contains("row lock contention") {
        assert!(Instant::now() < deadline, "b never waited for row 1");
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(outcome(&query(&mut a, "UPDATE t SET v = 1 WHERE id = 2")), "error 40P01");
    assert_eq!(outcome(&query(&mut a, "ROLLBACK")), "ROLLBACK");
    assert_eq!(pipeline_outcome(&mut b), "UPDATE 1");
    assert_eq!(outcome(&query(&mut b, "COMMIT")), "COMMIT");
    assert_eq!(server.query("SELECT v FROM t ORDER BY id"), "2\n2\n");
}

/// An UPDATE that stops at its second row's lock has its first row's change undone
/// before it runs again: each row changes once.
#[test]
fn an_execute_stopped_at_its_second_row_runs_again_from_its_start_changing_each_row_once() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--worker-threads", "1"]);
    server.query("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)");
    server.query("INSERT INTO t VALUES (1, 0), (2, 0)");
    let (mut holder, mut waiter) = (server.connect(), server.connect());
    assert_eq!(outcome(&query(&mut holder, "BEGIN")), "BEGIN");
    assert_eq!(outcome(&query(&mut holder, "UPDATE t SET v = v + 100 WHERE id = 2")), "UPDATE 1");
    {
        use std::io::Write;
        waiter
            .write_all(&protocol::extended_pipeline("UPDATE t SET v = v + $1 WHERE id IN (1, 2)", &["1"]))
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while !server.query("SELECT event FROM v$session").contains("row lock contention") {
        assert!(Instant::now() < deadline, "the update never waited for row 2");
        thread::sleep(Duration::from_millis(20));
    }
    // Several looks at the lock (one each 100 ms), each a run stopped at row 2.
    thread::sleep(Duration::from_millis(350));
    assert_eq!(outcome(&query(&mut holder, "COMMIT")), "COMMIT");
    assert_eq!(pipeline_outcome(&mut waiter), "UPDATE 2");
    assert_eq!(server.query("SELECT v FROM t ORDER BY id"), "1\n101\n");
}

/// With one client connected (two worker threads) a WAIT commit writes the log itself
/// (`redo writes by foreground`) instead of posting the log writer and awaiting its
/// wake-up; while a second connection is open, even idle, the commits leave their writes
/// to the log writer, so that no worker is held by a sync another client's request could
/// arrive during; once it has closed, the lone client's commits write again.
#[test]
fn the_only_connections_wait_commit_writes_the_log_itself_but_not_beside_another() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--worker-threads", "2"]);
    server.query("CREATE TABLE w (id BIGINT PRIMARY KEY)");
    // Read through psql, a connection of its own, between the commits.
    let foreground = || -> u64 {
        let text = server.query("SELECT value FROM v$sysstat WHERE name = 'redo writes by foreground'");
        text.trim().parse().unwrap_or_else(|e| panic!("{text:?}: {e}"))
    };
    let mut committer = server.connect();
    let mut insert = |from: u64, n: u64| {
        for id in from..from + n {
            assert_eq!(
                outcome(&query(&mut committer, &format!("INSERT INTO w VALUES ({id})"))),
                "INSERT 0 1"
            );
        }
    };
    let before = foreground();
    insert(0, 20);
    // (psql's connection may still be counted at the first commits, and a periodic
    // wake-up of the log writer may hold the token at a commit's moment.)
    let alone = foreground() - before;
    assert!(alone >= 15, "20 WAIT commits of the only connection made {alone} foreground writes");

    let mut other = server.connect();
    let before = foreground();
    insert(100, 10);
    assert_eq!(foreground() - before, 0, "commits beside another connection wrote the log themselves");
    assert_eq!(outcome(&query(&mut other, "SELECT 1")), "SELECT 1");
    drop(other);
    let before = foreground();
    insert(200, 20);
    let again = foreground() - before;
    assert!(again >= 15, "the only connection's commits write again: {again} of 20");
    assert_eq!(server.query("SELECT count(*) FROM w").trim(), "50");
}

/// A queue's workers over the wire: `FOR UPDATE SKIP LOCKED` skips the row another
/// connection holds and `NOWAIT` fails on it at once (55P03), also where a row lock
/// wait would be left to the connection (a one-statement Query).
#[test]
fn skip_locked_and_nowait_do_not_wait_over_the_wire() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--worker-threads", "1"]);
    server.query("CREATE TABLE jobs (id BIGINT PRIMARY KEY, due INTEGER)");
    server.query("INSERT INTO jobs VALUES (1, 20), (2, 10), (3, 30)");
    let take = "SELECT id FROM jobs ORDER BY due LIMIT 1 FOR UPDATE SKIP LOCKED";
    let taken =
        |stream: &mut std::net::TcpStream| -> Vec<Vec<String>> { protocol::data_rows(&query(stream, take)) };
    let mut first = server.connect();
    assert_eq!(outcome(&query(&mut first, "BEGIN")), "BEGIN");
    assert_eq!(taken(&mut first), [["2"]]);
    let mut second = server.connect();
    assert_eq!(outcome(&query(&mut second, "BEGIN")), "BEGIN");
    assert_eq!(taken(&mut second), [["1"]]);
    let mut third = server.connect();
    let started = Instant::now();
    assert_eq!(
        outcome(&query(&mut third, "SELECT * FROM jobs WHERE id = 2 FOR UPDATE NOWAIT")),
        "error 55P03"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "NOWAIT waited {:?}", started.elapsed());
    assert_eq!(taken(&mut third), [["3"]]);
    assert_eq!(outcome(&query(&mut first, "COMMIT")), "COMMIT");
    assert_eq!(outcome(&query(&mut second, "ROLLBACK")), "ROLLBACK");
}
