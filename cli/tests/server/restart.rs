//! `redodb serve` restarts: after SIGTERM (exit 0, clean shutdown with a checkpoint) and
//! after kill -9 (recovery from the redo log), the committed rows are there.

use crate::common::{require_tool, Server};

#[test]
fn committed_rows_survive_sigterm_and_kill_9() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE r (k BIGINT PRIMARY KEY, v TEXT)");
    server.query("INSERT INTO r VALUES (1, 'a'), (2, 'b')");
    // An open transaction at shutdown is rolled back.
    let mut open = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    crate::common::protocol::startup(&mut open);
    crate::common::protocol::send(
        &mut open,
        b'Q',
        &crate::common::protocol::cstring("BEGIN; INSERT INTO r VALUES (99, 'open')"),
    );
    assert_eq!(crate::common::protocol::kinds(&crate::common::protocol::read_until_ready(&mut open)), "CCZ");
    assert_eq!(server.terminate().code(), Some(0), "SIGTERM is a clean exit");

    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.query("SELECT k, v FROM r ORDER BY k"), "1|a\n2|b\n");
    server.query("INSERT INTO r VALUES (3, 'c')");
    server.query("BEGIN; INSERT INTO r VALUES (4, 'd'); COMMIT");
    server.kill9();

    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.query("SELECT k FROM r ORDER BY k"), "1\n2\n3\n4\n");
    assert_eq!(server.terminate().code(), Some(0));
}

/// The server takes workload repository snapshots on its own (one at start, then every
/// interval), and a report can be made from them while it runs.
#[test]
fn the_server_takes_awr_snapshots_automatically() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--snapshot-interval-minutes", "15"]);
    server.query("CREATE TABLE r (k BIGINT PRIMARY KEY)");
    server.query("INSERT INTO r VALUES (1)");
    // A second snapshot on demand, through SQL.
    assert_eq!(server.query("EXEC snapshot"), "2\n");
    let report = server.query("EXEC DBMS_WORKLOAD_REPOSITORY.AWR_REPORT_TEXT(1, 2)");
    assert!(report.contains("Load Profile") && report.contains("user commits"), "{report}");
    let snapshots = std::fs::read_dir(dir.path().join("awr"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".json"))
        .count();
    assert_eq!(snapshots, 2);
    assert_eq!(server.terminate().code(), Some(0));

    // Bad values are refused by name before anything opens.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_redodb"))
        .args(["serve", "--port", "0", "--snapshot-interval-minutes", "99999999", "--data"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("snapshot_interval_minutes"), "{out:?}");
}
