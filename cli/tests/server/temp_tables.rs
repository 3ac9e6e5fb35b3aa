//! Temporary tables over the wire, driven by psql (issue 20): two connections each with
//! a temporary table of one name at the same time, before a permanent table of that
//! name; psql's `\dt` and `\d` show them in the connection's `pg_temp_N` schema as
//! PostgreSQL 15's psql does; no redo for them; gone once their connection ends, also
//! when it drops without a goodbye.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::common::{piped_psql, require_tool, Server};

/// Polls until `sql` answers `expected` (another connection's end is seen by the server
/// a moment after the client goes).
fn wait_for(server: &Server, sql: &str, expected: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = server.query(sql);
        if got == expected {
            return;
        }
        assert!(Instant::now() < deadline, "{sql}: {got:?}, waiting for {expected:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

const TEMP_CLASSES: &str = "SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND relkind = 'r'";

#[test]
fn two_connections_have_their_own_temporary_table_of_one_name_gone_after_reconnecting() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)");
    server.query("INSERT INTO t VALUES (1, 'permanent')");

    // Connection a makes its temporary t and stays connected.
    let (a, mut a_in) = piped_psql(&server, "a", &[]);
    writeln!(a_in, "CREATE TEMP TABLE t (k INT PRIMARY KEY, v TEXT);").unwrap();
    writeln!(a_in, "INSERT INTO t VALUES (1, 'a');").unwrap();
    a_in.flush().unwrap();
    wait_for(&server, TEMP_CLASSES, "1\n");

    // Connection b, meanwhile, makes its own of the same name; neither sees the other's.
    let redo = "SELECT value FROM v$sysstat WHERE name = 'redo size'";
    let redo_before = server.query(redo);
    let out = server.psql(&[
        "-At",
        "-c",
        "CREATE TEMP TABLE t (k INT PRIMARY KEY, v TEXT)",
        "-c",
        "INSERT INTO t SELECT g, 'b' FROM generate_series(1, 500) g",
        "-c",
        "SELECT count(*), min(v) FROM t",
        "-c",
        "SELECT v FROM public.t",
        "-c",
        TEMP_CLASSES,
        "-c",
        "\\dt",
        "-c",
        // \d's title and footers show only outside tuples-only mode.
        "\\pset tuples_only off",
        "-c",
        "\\d t",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[..4], ["CREATE TABLE", "INSERT 0 500", "500|b", "permanent"], "{stdout}");
    assert_eq!(lines[4], "2", "both connections' temporary tables are in pg_class: {stdout}");
    // psql's \dt: the temporary t in the connection's pg_temp_N, the permanent one
    // hidden behind it (as PostgreSQL 15 lists them).
    let listed: Vec<&str> = lines.iter().copied().filter(|l| l.ends_with("|table|test")).collect();
    assert_eq!(listed.len(), 1, "{stdout}");
    let schema = listed[0].split('|').next().unwrap();
    assert!(schema.starts_with("pg_temp_") && listed[0].starts_with(&format!("{schema}|t|")), "{stdout}");
    assert!(stdout.contains(&format!("Table \"{schema}.t\"")), "\\d names its schema: {stdout}");
    assert!(stdout.contains("\"t_pkey\" PRIMARY KEY, btree (k)"), "{stdout}");
    assert_eq!(server.query(redo), redo_before, "no redo for a temporary table's DDL and rows");

    // a's table is still its own, with its row; COPY FROM STDIN loads a's, whose
    // columns differ from the permanent t's.
    writeln!(a_in, "CREATE TEMP TABLE c (x INT, y INT, z INT);").unwrap();
    writeln!(a_in, "ALTER TABLE t RENAME TO t_a; ALTER TABLE c RENAME TO t;").unwrap();
    writeln!(a_in, "COPY t FROM STDIN;\n1\t2\t3\n\\.").unwrap();
    writeln!(a_in, "SELECT x + y + z FROM t;").unwrap();
    writeln!(a_in, "SELECT k, v FROM t_a;").unwrap();
    drop(a_in);
    let out = a.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.lines().any(|l| l == "1|a"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "COPY 1") && stdout.lines().any(|l| l == "6"), "{stdout}");

    // Reconnected: no temporary table is left, t is the permanent one again.
    wait_for(&server, TEMP_CLASSES, "0\n");
    assert_eq!(server.query("SELECT v FROM t"), "permanent\n");

    // A connection that drops without a goodbye takes its temporary table with it.
    let (mut dropped, mut dropped_in) = piped_psql(&server, "dropped", &[]);
    writeln!(dropped_in, "CREATE TEMP TABLE t (k INT);").unwrap();
    dropped_in.flush().unwrap();
    wait_for(&server, TEMP_CLASSES, "1\n");
    dropped.kill().unwrap();
    dropped.wait().unwrap();
    wait_for(&server, TEMP_CLASSES, "0\n");

    // In autocommit, ON COMMIT DROP drops the table as its statement ends (PostgreSQL's
    // implicit transaction), and ON COMMIT DELETE ROWS empties it after each statement.
    let out = server.psql(&[
        "-At",
        "-v",
        "ON_ERROR_STOP=0",
        "-c",
        "CREATE TEMP TABLE gone (k INT) ON COMMIT DROP",
        "-c",
        "SELECT * FROM gone",
        "-c",
        "CREATE TEMP TABLE emptied (k INT) ON COMMIT DELETE ROWS",
        "-c",
        "INSERT INTO emptied VALUES (1)",
        "-c",
        "SELECT count(*) FROM emptied",
        // DISCARD TEMP, and DISCARD ALL (which includes it), drop them, as a pool resets
        // a connection.
        "-c",
        "CREATE TEMP TABLE d1 (k INT)",
        "-c",
        "DISCARD TEMP",
        "-c",
        "SELECT * FROM d1",
        "-c",
        "CREATE TEMP TABLE d2 (k INT)",
        "-c",
        "DISCARD ALL",
        "-c",
        "SELECT * FROM d2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for gone in ["gone", "d1", "d2"] {
        assert!(stderr.contains(&format!("relation \"{gone}\" does not exist")), "{stderr}");
    }
    assert_eq!(
        stdout,
        "CREATE TABLE\nCREATE TABLE\nINSERT 0 1\n0\nCREATE TABLE\nDISCARD TEMP\nCREATE TABLE\nDISCARD ALL\n",
        "{stderr}"
    );
}

#[test]
fn nothing_of_a_temporary_table_survives_a_crash() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE keep (k INT PRIMARY KEY)");
    // A connection holds a temporary table, with rows committed in a transaction that
    // also commits a permanent row, when the server is killed.
    let (mut holder, mut holder_in) = piped_psql(&server, "holder", &[]);
    writeln!(holder_in, "CREATE TEMP TABLE scratch (k INT PRIMARY KEY, v TEXT);").unwrap();
    writeln!(holder_in, "BEGIN; INSERT INTO scratch SELECT g, 'x' FROM generate_series(1, 100) g;").unwrap();
    writeln!(holder_in, "INSERT INTO keep VALUES (1); COMMIT;").unwrap();
    holder_in.flush().unwrap();
    wait_for(&server, "SELECT count(*) FROM keep", "1\n");
    assert_eq!(server.query(TEMP_CLASSES), "1\n");
    server.kill9();
    let _ = holder.kill();
    let _ = holder.wait();
    // Recovery: the permanent row, and nothing of the temporary table.
    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.query("SELECT k FROM keep"), "1\n");
    assert_eq!(server.query(TEMP_CLASSES), "0\n");
    assert_eq!(server.query("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pg_temp%'"), "0\n");
}
