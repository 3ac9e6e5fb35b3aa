//! The wait interface beside a running `redodb serve`: the directory is the server's, so
//! `redodb snapshot` (and a second server) are refused with an error that names the
//! directory, the server's pid and what to do instead, while `redodb report`, which only
//! reads the stored snapshots, works; and the fetch statistics count what the wire
//! protocol fetches (a simple query's result, each portal Execute with a row limit).

mod server_common;

use std::net::TcpStream;
use std::process::{Command, Output};

use server_common::protocol::{self, bind, data_rows, execute, kinds, parse, read_until_ready, sync};
use server_common::{require_tool, Server};

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
