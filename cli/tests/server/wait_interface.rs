//! The wait interface beside a running `redodb serve`: the directory is the server's, so
//! `redodb snapshot` (and a second server) are refused with an error that names the
//! directory, the server's pid and what to do instead, while `redodb report`, which only
//! reads the stored snapshots, works; the fetch statistics count what the wire protocol
//! fetches (a simple query's result, each portal Execute with a row limit); and the time
//! model adds up over the wire, Oracle's rule DB time >= DB CPU + non-idle waits, for
//! every kind of request (pgbench's prepared UPDATE matching no row and its committing
//! ones, read-only, failed, cancelled, described, a pipeline sent in parts, cursors and
//! portals, COPY in and out), in `v$sess_time_model` against `v$session_event`, in
//! `v$sys_time_model` against `v$system_event`, and in `redodb report`, where no share of
//! DB time is above 100%.

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::protocol::{
    self, bind, cstring, data_rows, describe, execute, extended_pipeline, kinds, parse, query,
    read_until_ready, sync,
};
use crate::common::{require_tool, Server};

fn redodb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redodb")).args(args).output().expect("run redodb")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn snapshot_beside_a_running_server_is_refused_but_report_works() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    // The server's first automatic snapshot (1) is taken as it opens the database.
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE r (k BIGINT PRIMARY KEY)");
    server.query("INSERT INTO r VALUES (1), (2)");

    let refused = redodb(&["snapshot", "--data", data, "--sync-method", "fdatasync"]);
    assert!(
        !refused.status.success(),
        "redodb snapshot succeeded beside a server: {}",
        text(&refused.stdout)
    );
    let message = text(&refused.stderr);
    assert!(
        message.contains(&format!("the database directory {data} is in use by another process")),
        "{message}"
    );
    assert!(message.contains(&format!("(pid {})", server.pid())), "names the server's pid: {message}");
    assert!(message.contains("EXEC snapshot"), "says what to do instead: {message}");
    assert!(refused.stdout.is_empty(), "no snapshot id printed");

    // A second server on the same directory is refused the same way, before listening.
    let second = Command::new(env!("CARGO_BIN_EXE_redodb"))
        .args(["serve", "--port", "0", "--sync-method", "fdatasync", "--log-level", "warn", "--data", data])
        .output()
        .unwrap();
    assert!(!second.status.success());
    assert!(text(&second.stderr).contains("is in use by another process"), "{}", text(&second.stderr));

    // What works instead: a snapshot through the server, and a report from the stored
    // snapshots while the server runs.
    assert_eq!(server.query("EXEC snapshot"), "2\n");
    let report = redodb(&["report", "--data", data]);
    assert!(report.status.success(), "redodb report beside the server: {}", text(&report.stderr));
    assert!(text(&report.stdout).contains("Load Profile"), "{}", text(&report.stdout));

    // Once the server is gone, the command line takes its snapshot.
    assert_eq!(server.terminate().code(), Some(0));
    let after = redodb(&["snapshot", "--data", data, "--sync-method", "fdatasync"]);
    assert!(after.status.success(), "redodb snapshot after the server: {}", text(&after.stderr));
    assert_eq!(text(&after.stdout), "3\n");
}

/// This connection's (rows fetched, fetch calls) before the statement reading them (which
/// fetches 2 rows in one call itself).
fn my_fetch_stats(c: &mut TcpStream) -> (u64, u64) {
    let sql = "SELECT name, value FROM v$mystat WHERE name IN ('rows fetched', 'fetch calls') ORDER BY name";
    protocol::send(c, b'Q', &protocol::cstring(sql));
    let rows = data_rows(&read_until_ready(c));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!((rows[0][0].as_str(), rows[1][0].as_str()), ("fetch calls", "rows fetched"));
    (rows[1][1].parse().unwrap(), rows[0][1].parse().unwrap())
}

#[test]
fn fetch_statistics_count_simple_queries_and_each_portal_execute() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--snapshot-interval-minutes", "0"]);
    let mut c = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    protocol::startup(&mut c);
    protocol::send(&mut c, b'Q', &protocol::cstring("CREATE TABLE f (k BIGINT PRIMARY KEY)"));
    assert_eq!(kinds(&read_until_ready(&mut c)), "CZ");
    protocol::send(&mut c, b'Q', &protocol::cstring("INSERT INTO f VALUES (1), (2), (3), (4), (5)"));
    assert_eq!(kinds(&read_until_ready(&mut c)), "CZ");
    let (rows_before, calls_before) = my_fetch_stats(&mut c);
    assert_eq!((rows_before, calls_before), (0, 0), "DDL and DML fetch nothing");

    // A simple query SELECT: one fetch call with all its rows.
    protocol::send(&mut c, b'Q', &protocol::cstring("SELECT k FROM f"));
    assert_eq!(kinds(&read_until_ready(&mut c)), "TDDDDDCZ");
    // The stats read: 2 rows in 1 call; the SELECT: 5 rows in 1 call.
    assert_eq!(my_fetch_stats(&mut c), (2 + 5, 2));

    // A portal read two rows per Execute: three fetch calls for five rows.
    parse(&mut c, "sel", "SELECT k FROM f ORDER BY k");
    bind(&mut c, "cur", "sel", &[], 0);
    for _ in 0..3 {
        execute(&mut c, "cur", 2);
    }
    sync(&mut c);
    assert_eq!(kinds(&read_until_ready(&mut c)), "12DDsDDsDCZ");
    assert_eq!(my_fetch_stats(&mut c), (7 + 2 + 5, 2 + 1 + 3));

    // The system's figures hold this session's.
    let system = server
        .query("SELECT value FROM v$sysstat WHERE name IN ('rows fetched', 'fetch calls') ORDER BY name");
    let values: Vec<u64> = system.lines().map(|v| v.parse().unwrap()).collect();
    assert!(values[0] > 2 + 1 + 3 && values[1] >= 14 + 2, "{system}");
    drop(c);
    assert_eq!(server.terminate().code(), Some(0));
}

/// One row of `sql`'s first column, as an integer.
fn int(c: &mut TcpStream, sql: &str) -> i64 {
    let rows = data_rows(&query(c, sql));
    assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
    rows[0][0].parse().unwrap_or_else(|e| panic!("{sql}: {rows:?}: {e}"))
}

/// A session's figures as the views show them: its non-idle waits, DB time and DB CPU (us).
#[derive(Clone, Copy, Debug)]
struct Times {
    waits_us: i64,
    db_time_us: i64,
    db_cpu_us: i64,
}

/// Session `sid`'s figures, read by `observer` once the session has no request open (its
/// last reply sent and counted): the waits (`v$session_event`) first, then the time model
/// (`v$sess_time_model`), in one request.
fn times_of(observer: &mut TcpStream, sid: i64) -> Times {
    let deadline = Instant::now() + Duration::from_secs(10);
    while int(observer, &format!("SELECT count(*) FROM v$session WHERE sid = {sid} AND status = 'INACTIVE'"))
        != 1
    {
        assert!(Instant::now() < deadline, "session {sid} stays ACTIVE");
        std::thread::sleep(Duration::from_millis(2));
    }
    let rows = data_rows(&query(
        observer,
        &format!(
            "SELECT coalesce(sum(time_waited_micro), 0) FROM v$session_event WHERE sid = {sid} \
             AND wait_class <> 'Idle'; \
             SELECT value FROM v$sess_time_model WHERE sid = {sid} ORDER BY stat_name"
        ),
    ));
    assert_eq!(rows.len(), 3, "{rows:?}");
    let n = |i: usize| rows[i][0].parse::<i64>().unwrap();
    // Ordered by name: "DB CPU", then "DB time".
    Times { waits_us: n(0), db_cpu_us: n(1), db_time_us: n(2) }
}

/// What happened between two readings, checked against the rule; returns it.
fn adds_up(before: Times, after: Times, what: &str) -> Times {
    let d = Times {
        waits_us: after.waits_us - before.waits_us,
        db_time_us: after.db_time_us - before.db_time_us,
        db_cpu_us: after.db_cpu_us - before.db_cpu_us,
    };
    assert!(d.waits_us >= 0 && d.db_cpu_us >= 0 && d.db_time_us > 0, "{what}: {d:?}");
    assert!(
        d.db_time_us >= d.db_cpu_us + d.waits_us,
        "{what}: DB time {} us < DB CPU {} us + non-idle waits {} us",
        d.db_time_us,
        d.db_cpu_us,
        d.waits_us
    );
    d
}

/// The system's figures, the waits first: DB time >= DB CPU + the non-idle foreground
/// waits of `v$system_event`. Returns (DB time, DB CPU, waits).
fn system_adds_up(server: &Server) -> (i64, i64, i64) {
    let out = server.query(
        "SELECT coalesce(sum(time_waited_micro), 0) FROM v$system_event WHERE wait_class <> 'Idle' \
         AND event NOT IN ('log file parallel write', 'checkpoint write'); \
         SELECT value FROM v$sys_time_model WHERE stat_name IN ('DB time', 'DB CPU') ORDER BY stat_name",
    );
    let values: Vec<i64> = out.lines().map(|l| l.parse().unwrap()).collect();
    let (waits, db_cpu, db_time) = (values[0], values[1], values[2]);
    assert!(
        db_time >= db_cpu + waits,
        "v$sys_time_model: DB time {db_time} us < DB CPU {db_cpu} us + non-idle foreground waits {waits} us"
    );
    (db_time, db_cpu, waits)
}

/// `redodb report` between the newest two snapshots of `dir`: no share of DB time in its
/// Top 5 Timed Foreground Events or its Time Model Statistics is above 100%, nor is their
/// sum, and DB CPU per second is at most DB time per second. Returns the report.
fn report_adds_up(dir: &std::path::Path) -> String {
    let out = redodb(&["report", "--data", dir.to_str().unwrap()]);
    assert!(out.status.success(), "redodb report: {}", text(&out.stderr));
    let report = text(&out.stdout);
    let shares = column(&report, "Top 5 Timed Foreground Events", 4);
    assert!(!shares.is_empty(), "{report}");
    let mut total = 0.0;
    for (name, share) in &shares {
        assert!(*share <= 100.0, "{name} is {share}% of DB time:\n{report}");
        total += share;
    }
    // Each share is rounded to 0.1.
    assert!(total <= 100.0 + 0.05 * shares.len() as f64, "the top events add up to {total}%:\n{report}");
    for (name, share) in column(&report, "Time Model Statistics", 2) {
        assert!(share <= 100.0, "{name} is {share}% of DB time:\n{report}");
    }
    let per_second = |name: &str| -> f64 {
        let line = report.lines().find(|l| l.trim_start().starts_with(name)).expect(name);
        line.split_whitespace().nth(2).unwrap().replace(',', "").parse().unwrap()
    };
    assert!(per_second("DB CPU(s):") <= per_second("DB Time(s):"), "{report}");
    report
}

/// The rows of a report section's table: each row's first column and its numeric column
/// `index` (columns as the section's rule of dashes draws them; rows without a number
/// there are left out).
fn column(report: &str, section: &str, index: usize) -> Vec<(String, f64)> {
    let body = report.split(section).nth(1).expect("the section");
    let mut lines = body.lines().skip_while(|l| !l.starts_with("----"));
    let rule = lines.next().expect("the column rule");
    let spans = rule.match_indices('-').fold(Vec::<(usize, usize)>::new(), |mut spans, (i, _)| {
        match spans.last_mut() {
            Some((_, end)) if *end == i => *end = i + 1,
            _ => spans.push((i, i + 1)),
        }
        spans
    });
    let cell = |line: &str, (from, to): (usize, usize)| {
        line.get(from..to.min(line.len())).unwrap_or("").trim().to_string()
    };
    lines
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| Some((cell(l, spans[0]), cell(l, spans[index]).replace(',', "").parse().ok()?)))
        .collect()
}

fn pgbench(server: &Server, mode: &str, script: &std::path::Path, transactions: u32) {
    let out = Command::new("pgbench")
        .args(["-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "test", "-n"])
        .args(["-M", mode, "-c", "8", "-j", "2", "-t", &transactions.to_string(), "-f"])
        .arg(script)
        .arg("redodb")
        .output()
        .expect("run pgbench");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "pgbench -M {mode}: {stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("number of failed transactions: 0 "), "{stdout}");
}

/// Issue 19's case: 8 pgbench clients running a prepared UPDATE that matches no row (so
/// nothing commits), then committing updates, each between two snapshots.
#[test]
fn pgbench_requests_add_up_in_the_views_and_the_report() {
    require_tool("psql");
    require_tool("pgbench");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--snapshot-interval-minutes", "0"]);
    server.query("CREATE TABLE accounts (aid BIGINT PRIMARY KEY, abalance BIGINT NOT NULL)");
    server.query("INSERT INTO accounts VALUES (1, 0), (2, 0), (3, 0), (4, 0)");
    let script = dir.path().join("script.sql");
    for (mode, statement, events) in [
        (
            "prepared",
            "\\set aid random(1000, 100000)\nUPDATE accounts SET abalance = abalance + 1 WHERE aid = :aid;\n",
            &["SQL*Net message to client"][..],
        ),
        (
            "extended",
            "\\set aid random(1, 4)\nBEGIN;\nUPDATE accounts SET abalance = abalance + 1 WHERE aid = :aid;\nCOMMIT;\n",
            &["SQL*Net message to client", "log file sync"][..],
        ),
    ] {
        std::fs::write(&script, statement).unwrap();
        server.query("EXEC snapshot");
        pgbench(&server, mode, &script, 300);
        server.query("EXEC snapshot");
        let (db_time, db_cpu, waits) = system_adds_up(&server);
        assert!(db_time > 0 && db_cpu > 0 && waits > 0, "{db_time} {db_cpu} {waits}");
        let report = report_adds_up(dir.path());
        let top = column(&report, "Top 5 Timed Foreground Events", 4);
        for event in events {
            assert!(top.iter().any(|(name, _)| name == event), "-M {mode}: {event} in the top events:\n{report}");
        }
    }
    assert_eq!(server.terminate().code(), Some(0));
}

/// The BackendKeyData of a new connection (process id, secret key), for a CancelRequest.
fn connect_with_key(server: &Server) -> (TcpStream, i32, i32) {
    let mut c = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    protocol::send_startup(&mut c, "test");
    let messages = read_until_ready(&mut c);
    let key = messages.iter().find(|m| m.0 == b'K').expect("BackendKeyData");
    let pid = i32::from_be_bytes(key.1[0..4].try_into().unwrap());
    let secret = i32::from_be_bytes(key.1[4..8].try_into().unwrap());
    (c, pid, secret)
}

fn cancel(server: &Server, pid: i32, secret: i32) {
    let mut c = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let mut request = 16i32.to_be_bytes().to_vec();
    request.extend_from_slice(&80877102i32.to_be_bytes());
    request.extend_from_slice(&pid.to_be_bytes());
    request.extend_from_slice(&secret.to_be_bytes());
    c.write_all(&request).unwrap();
}

/// Each kind of request of one session, its figures read around each: its DB time holds
/// its CPU and its waits, also the waits for the rest of a request sent in parts.
#[test]
fn every_kind_of_request_keeps_db_time_above_db_cpu_and_waits() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--snapshot-interval-minutes", "0"]);
    server.query("CREATE TABLE t (k BIGINT PRIMARY KEY, n BIGINT NOT NULL)");
    server.query(&format!(
        "INSERT INTO t VALUES {}",
        (1..=200).map(|k| format!("({k}, 0)")).collect::<Vec<_>>().join(", ")
    ));
    let (mut c, pid, secret) = connect_with_key(&server);
    let mut observer = server.connect();
    let sid = int(&mut c, "SELECT pg_backend_pid()");
    server.query("EXEC snapshot");
    let more_data_us = |observer: &mut TcpStream| {
        int(
            observer,
            &format!(
                "SELECT coalesce(sum(time_waited_micro), 0) FROM v$session_event WHERE sid = {sid} \
                 AND event = 'SQL*Net more data from client'"
            ),
        )
    };

    type Request = Box<dyn Fn(&mut TcpStream)>;
    let requests: Vec<(&str, Request)> = vec![
        (
            "a read-only simple query",
            Box::new(|c| assert_eq!(kinds(&query(c, "SELECT count(*) FROM t")), "TDCZ")),
        ),
        ("a failed simple query", Box::new(|c| assert_eq!(kinds(&query(c, "SELEC 1")), "EZ"))),
        (
            "an extended-protocol UPDATE matching no row",
            Box::new(|c| {
                c.write_all(&extended_pipeline("UPDATE t SET n = n + 1 WHERE k = $1", &["99999"])).unwrap();
                assert_eq!(kinds(&read_until_ready(c)), "12CZ");
            }),
        ),
        (
            "Parse and Describe of a statement, no execution",
            Box::new(|c| {
                parse(c, "d", "SELECT k, n FROM t WHERE k = $1");
                describe(c, b'S', "d");
                protocol::send(c, b'C', &[&[b'S'][..], &cstring("d")].concat());
                sync(c);
                assert_eq!(kinds(&read_until_ready(c)), "1tT3Z");
            }),
        ),
        (
            "a transaction committed with WAIT (log file sync)",
            Box::new(|c| {
                assert_eq!(kinds(&query(c, "BEGIN; UPDATE t SET n = n + 1 WHERE k = 7; COMMIT")), "CCCZ")
            }),
        ),
        (
            "a cursor fetched in portions, and a portal",
            Box::new(|c| {
                let replies = query(
                    c,
                    "BEGIN; DECLARE cur CURSOR FOR SELECT k FROM t; FETCH 50 FROM cur; FETCH 50 FROM cur",
                );
                assert_eq!(data_rows(&replies).len(), 100);
                assert_eq!(kinds(&query(c, "CLOSE cur; COMMIT")), "CCZ");
                parse(c, "", "SELECT k FROM t ORDER BY k");
                bind(c, "", "", &[], 0);
                execute(c, "", 120);
                execute(c, "", 120);
                sync(c);
                assert_eq!(data_rows(&read_until_ready(c)).len(), 200);
            }),
        ),
        (
            "COPY out",
            Box::new(|c| {
                let replies = query(c, "COPY t TO STDOUT");
                assert_eq!(replies.iter().filter(|m| m.0 == b'd').count(), 200);
            }),
        ),
    ];
    let mut before = times_of(&mut observer, sid);
    for (what, request) in &requests {
        for _ in 0..20 {
            request(&mut c);
        }
        let after = times_of(&mut observer, sid);
        adds_up(before, after, what);
        before = after;
    }

    // A pipeline sent in two parts: the server waits for its Sync inside the request.
    let more_before = more_data_us(&mut observer);
    parse(&mut c, "", "UPDATE t SET n = n + 1 WHERE k = $1");
    bind(&mut c, "", "", &["99999"], 0);
    execute(&mut c, "", 0);
    std::thread::sleep(Duration::from_millis(200));
    sync(&mut c);
    assert_eq!(kinds(&read_until_ready(&mut c)), "12CZ");
    let after = times_of(&mut observer, sid);
    let d = adds_up(before, after, "a pipeline sent in two parts");
    let more = more_data_us(&mut observer) - more_before;
    assert!(more >= 190_000 && d.db_time_us >= more, "waiting for the Sync is in the call: {more} us, {d:?}");
    before = after;

    // COPY FROM STDIN whose data comes in parts: the request lasts until its end.
    let more_before = more_data_us(&mut observer);
    protocol::send(&mut c, b'Q', &cstring("COPY t FROM STDIN"));
    assert_eq!(protocol::read_message(&mut c).map(|m| m.0), Some(b'G'), "CopyInResponse");
    for part in 0..3 {
        std::thread::sleep(Duration::from_millis(70));
        let rows: String = (0..10).map(|i| format!("{}\t{part}\n", 1000 + part * 10 + i)).collect();
        protocol::send(&mut c, b'd', rows.as_bytes());
    }
    protocol::send(&mut c, b'c', &[]);
    assert_eq!(kinds(&read_until_ready(&mut c)), "CZ");
    let after = times_of(&mut observer, sid);
    let d = adds_up(before, after, "COPY FROM STDIN in parts");
    let more = more_data_us(&mut observer) - more_before;
    assert!(
        more >= 200_000 && d.db_time_us >= more,
        "the COPY's data is waited for in its call: {more} us, {d:?}"
    );
    before = after;

    // A statement waiting for a row lock, cancelled: its wait is counted, inside its call.
    let mut holder = server.connect();
    assert_eq!(kinds(&query(&mut holder, "BEGIN; UPDATE t SET n = 1 WHERE k = 1")), "CCZ");
    protocol::send(&mut c, b'Q', &cstring("UPDATE t SET n = 2 WHERE k = 1"));
    std::thread::sleep(Duration::from_millis(150));
    cancel(&server, pid, secret);
    let replies = read_until_ready(&mut c);
    assert_eq!(protocol::sqlstate(&replies[0].1), "57014", "{:?}", kinds(&replies));
    let after = times_of(&mut observer, sid);
    let d = adds_up(before, after, "a cancelled lock wait");
    assert!(d.waits_us >= 100_000, "the cancelled wait is counted: {d:?}");
    assert_eq!(kinds(&query(&mut holder, "ROLLBACK")), "CZ");

    server.query("EXEC snapshot");
    system_adds_up(&server);
    report_adds_up(dir.path());
    drop((c, observer, holder));
    assert_eq!(server.terminate().code(), Some(0));
}
