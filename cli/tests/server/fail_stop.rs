//! Fail-stop over the wire: `redodb serve` with a sync failure injected into its redo log
//! (`REDODB_FAULTS`). Once the log fails, no read returns data, every connection (busy or
//! idle) gets a FATAL error with SQLSTATE 58030 naming the failed log file and errno, the
//! alert is in the server's log, and the process exits with code 3 on its own. Restarted
//! without the fault, it recovers a dense prefix of the commits holding every
//! acknowledged WAIT commit.

use std::fs::File;
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::common::protocol::{data_rows, kinds, query, read_message, read_until_ready_or_closed, sqlstate};
use crate::common::Server;

/// The syncs of log files the server makes before the injected failure: enough for the
/// start and a few hundred commits.
const SYNCS_BEFORE_FAILURE: u64 = 300;

fn connect(port: u16) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    crate::common::protocol::startup(&mut stream);
    stream
}

/// The fields of an ErrorResponse body: (severity, SQLSTATE, message).
fn error_fields(body: &[u8]) -> (String, String, String) {
    let field = |code: u8| {
        body.split(|b| *b == 0)
            .find(|f| f.first() == Some(&code))
            .map(|f| String::from_utf8_lossy(&f[1..]).into_owned())
            .unwrap_or_default()
    };
    (field(b'V'), sqlstate(body), field(b'M'))
}

#[test]
fn a_failed_log_sync_stops_the_server_and_a_restart_recovers_every_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let faults = format!("sync:.log:{SYNCS_BEFORE_FAILURE}:EIO");
    let data = dir.path().join("db");
    let log = Stdio::from(File::create(&log_path).unwrap());
    let mut server = Server::start_with_env(&data, &[], "warn", log, &[("REDODB_FAULTS", &faults)]);
    let port = server.port;
    let mut setup = connect(port);
    assert_eq!(kinds(&query(&mut setup, "CREATE TABLE t (id BIGINT PRIMARY KEY)")), "CZ");
    let mut idle = connect(port);

    // The reader reads until the server goes; after the writer saw its commit fail, no
    // read may return a row.
    let failed = Arc::new(AtomicBool::new(false));
    let reader = {
        let failed = failed.clone();
        thread::spawn(move || {
            let mut stream = connect(port);
            let (mut reads, mut refused) = (0u64, None);
            loop {
                let failure_seen = failed.load(SeqCst);
                crate::common::protocol::send(
                    &mut stream,
                    b'Q',
                    &crate::common::protocol::cstring("SELECT count(*) FROM t"),
                );
                let replies = read_until_ready_or_closed(&mut stream);
                let rows = data_rows(&replies);
                if let Some((_, body)) = replies.iter().find(|(k, _)| *k == b'E') {
                    refused = Some(error_fields(body));
                    break;
                }
                assert!(!failure_seen || rows.is_empty(), "a read after the failure returned {rows:?}");
                if replies.is_empty() {
                    break;
                }
                reads += 1;
            }
            (reads, refused)
        })
    };

    // The writer commits (WAIT, autocommit) until a commit fails.
    let mut writer = connect(port);
    let mut acknowledged = Vec::new();
    let writer_error = loop {
        let id = acknowledged.len();
        let sql = crate::common::protocol::cstring(&format!("INSERT INTO t VALUES ({id})"));
        crate::common::protocol::send(&mut writer, b'Q', &sql);
        let replies = read_until_ready_or_closed(&mut writer);
        if let Some((_, body)) = replies.iter().find(|(k, _)| *k == b'E') {
            break error_fields(body);
        }
        assert_eq!(kinds(&replies), "CZ");
        acknowledged.push(id as i64);
        assert!(acknowledged.len() < 100_000, "the injected sync failure never came");
    };
    failed.store(true, SeqCst);
    let (severity, code, message) = &writer_error;
    assert_eq!((severity.as_str(), code.as_str()), ("FATAL", "58030"), "{writer_error:?}");
    assert!(
        message.contains(".log") && message.contains("os error 5"),
        "names the file and errno: {message}"
    );
    assert!(read_message(&mut writer).is_none(), "the connection is closed after the FATAL error");

    // The idle connection is told too, and closed.
    let (kind, body) = read_message(&mut idle).expect("the idle connection gets an error");
    assert_eq!(kind, b'E');
    let (severity, code, _) = error_fields(&body);
    assert_eq!((severity.as_str(), code.as_str()), ("FATAL", "58030"));
    assert!(read_message(&mut idle).is_none());

    let (reads, refused) = reader.join().expect("reader");
    assert!(reads > 0, "the reader read before the failure");
    if let Some((severity, code, _)) = refused {
        assert_eq!((severity.as_str(), code.as_str()), ("FATAL", "58030"));
    }

    let status = server.wait_exit(Duration::from_secs(20)).expect("the server exits on its own");
    assert_eq!(status.code(), Some(3), "exit code of a terminated instance");
    let said = std::fs::read_to_string(&log_path).unwrap();
    assert!(said.contains("ALERT: instance terminated"), "the alert is in the log:\n{said}");
    assert!(said.contains("Input/output error"), "{said}");
    assert!(connect_fails(port), "nothing listens any more");

    let server = Server::start(&data, &[]);
    let rows: Vec<i64> =
        server.query("SELECT id FROM t ORDER BY id").lines().map(|l| l.parse().unwrap()).collect();
    assert!(
        rows.len() >= acknowledged.len(),
        "an acknowledged commit was lost: {} < {}",
        rows.len(),
        acknowledged.len()
    );
    assert!(rows.iter().enumerate().all(|(i, id)| *id == i as i64), "not a dense prefix: {rows:?}");
    assert!(rows.len() <= acknowledged.len() + 1, "only the failed commit may be there unacknowledged");
    server.terminate();
}

fn connect_fails(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_err()
}
