//! Cancelling a session's statement through `Session::cancel_handle` (what the wire
//! server's cancel request does): a scan and a row lock wait end with 57014, the
//! statement is undone alone, and a cancel between calls cancels nothing.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use db::{DbError, Value};

const ROWS: i64 = 20_000;

fn table(session: &mut db::Session) {
    session.execute("CREATE TABLE t (k BIGINT PRIMARY KEY, v VARCHAR(20))", &[]).unwrap();
    let insert = session.prepare("INSERT INTO t VALUES ($1, 'abcdefghij')").unwrap();
    // In several transactions: the test log's buffer bounds a transaction's redo.
    for chunk in (0..ROWS).collect::<Vec<_>>().chunks(2000) {
        let rows: Vec<Vec<Value>> = chunk.iter().map(|&k| vec![Value::Int(k)]).collect();
        session.execute_many(&insert, &rows).unwrap();
        session.execute("COMMIT", &[]).unwrap();
    }
}

/// Calls `cancel` over and over on another thread until the returned flag is set.
fn keep_cancelling(handle: db::sessions::CancelHandle) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            handle.cancel();
            std::thread::sleep(Duration::from_micros(200));
        }
    });
    (stop, thread)
}

#[test]
fn a_cancelled_scan_fails_with_57014_and_the_next_call_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut session = db.session();
    table(&mut session);
    let slow = "SELECT count(*) FROM t WHERE length(repeat(v, 20000)) > 0";

    // A cancel that came while nothing ran is forgotten when the next call starts.
    session.cancel_handle().cancel();
    let counted = session.execute("SELECT count(*) FROM t", &[]).unwrap();
    assert_eq!(counted.rows()[0][0], Value::Int(ROWS));

    let (stop, canceller) = keep_cancelling(session.cancel_handle());
    let started = Instant::now();
    let error = session.execute(slow, &[]).unwrap_err();
    stop.store(true, Ordering::Relaxed);
    canceller.join().unwrap();
    assert!(matches!(error, DbError::Canceled), "{error}");
    assert_eq!(error.sqlstate(), "57014");
    assert_eq!(error.to_string(), "canceling statement due to user request");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // The session goes on: the same statement runs to its end.
    assert_eq!(session.execute(slow, &[]).unwrap().rows()[0][0], Value::Int(ROWS));
}

#[test]
fn a_cancelled_update_is_undone_alone_and_its_transaction_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut session = db.session();
    table(&mut session);
    session.execute("BEGIN", &[]).unwrap();
    session.execute("UPDATE t SET v = 'first' WHERE k = 1", &[]).unwrap();
    // Each row of a whole-table update is locked, then changed: cancelled midway.
    let (stop, canceller) = keep_cancelling(session.cancel_handle());
    let error = session.execute("UPDATE t SET v = repeat('x', 20) WHERE length(repeat(v, 20000)) > 0", &[]);
    stop.store(true, Ordering::Relaxed);
    canceller.join().unwrap();
    assert!(matches!(error, Err(DbError::Canceled)), "{error:?}");
    // Statement-level atomicity: the earlier statement of the transaction stays.
    session.execute("COMMIT", &[]).unwrap();
    let check = db.session().execute("SELECT count(*) FROM t WHERE v = 'xxxxxxxxxxxxxxxxxxxx'", &[]).unwrap();
    assert_eq!(check.rows()[0][0], Value::Int(0));
    let first = db.session().execute("SELECT v FROM t WHERE k = 1", &[]).unwrap();
    assert_eq!(first.rows()[0][0], Value::Text("first".into()));
}

#[test]
fn a_cancel_ends_a_row_lock_wait() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut holder = db.session();
    table(&mut holder);
    holder.execute("BEGIN", &[]).unwrap();
    holder.execute("UPDATE t SET v = 'held' WHERE k = 7", &[]).unwrap();
    let mut waiter = db.session();
    let handle = waiter.cancel_handle();
    let waiting = std::thread::spawn(move || {
        let result = waiter.execute("UPDATE t SET v = 'waiter' WHERE k = 7", &[]);
        (result, waiter)
    });
    std::thread::sleep(Duration::from_millis(200));
    handle.cancel();
    let (result, mut waiter) = waiting.join().unwrap();
    assert!(matches!(result, Err(DbError::Canceled)), "{result:?}");
    holder.execute("COMMIT", &[]).unwrap();
    // The waiter's session goes on, and its cancelled update changed nothing.
    let row = waiter.execute("SELECT v FROM t WHERE k = 7", &[]).unwrap();
    assert_eq!(row.rows()[0][0], Value::Text("held".into()));
}

#[test]
fn statement_timeout_ends_a_row_lock_wait_and_a_long_scan_with_57014_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut holder = db.session();
    table(&mut holder);
    holder.execute("BEGIN", &[]).unwrap();
    holder.execute("UPDATE t SET v = 'held' WHERE k = 7", &[]).unwrap();

    let mut waiter = db.session();
    waiter.execute("SET statement_timeout = '150ms'", &[]).unwrap();
    let started = Instant::now();
    let error = waiter.execute("UPDATE t SET v = 'waiter' WHERE k = 7", &[]).unwrap_err();
    let waited = started.elapsed();
    assert!(matches!(error, DbError::StatementTimeout), "{error:?}");
    assert_eq!(error.sqlstate(), "57014");
    assert_eq!(error.to_string(), "canceling statement due to statement timeout");
    assert!(waited >= Duration::from_millis(150) && waited < Duration::from_secs(5), "{waited:?}");
    // A statement within its time runs; the timed-out one changed nothing.
    let row = waiter.execute("SELECT v FROM t WHERE k = 7", &[]).unwrap();
    assert_eq!(row.rows()[0][0], Value::Text("abcdefghij".into()));
    // A long scan is stopped too (its row loop looks at the deadline).
    let started = Instant::now();
    let error = waiter.execute("SELECT count(*) FROM t WHERE length(repeat(v, 20000)) > 0", &[]).unwrap_err();
    assert!(matches!(error, DbError::StatementTimeout), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    holder.execute("COMMIT", &[]).unwrap();

    // Oracle's spelling and views, and the system's value for sessions without their own.
    let shown = waiter.execute("SHOW PARAMETER statement_timeout", &[]).unwrap();
    assert_eq!(shown.rows()[0][2], Value::Text("150".into()));
    holder.execute("ALTER SYSTEM SET statement_timeout = 100", &[]).unwrap();
    let mut fresh = db.session();
    let value = fresh.execute("SELECT value FROM v$parameter WHERE name = 'statement_timeout'", &[]).unwrap();
    assert_eq!(value.rows()[0][0], Value::Text("100".into()));
    let error = fresh.execute("SELECT count(*) FROM t WHERE length(repeat(v, 20000)) > 0", &[]).unwrap_err();
    assert!(matches!(error, DbError::StatementTimeout), "{error:?}");
    assert_eq!(fresh.current_setting("statement_timeout").unwrap(), "100ms");
    waiter.execute("ALTER SESSION SET statement_timeout = 0", &[]).unwrap();
    assert_eq!(waiter.current_setting("statement_timeout").unwrap(), "0", "the session's own 0 wins");
    holder.execute("ALTER SYSTEM SET statement_timeout = DEFAULT", &[]).unwrap();
    assert_eq!(fresh.current_setting("statement_timeout").unwrap(), "0");

    for bad in ["-5", "5 parsecs", "1e3", "3000000000"] {
        let error = waiter.execute(&format!("SET statement_timeout = '{bad}'"), &[]).unwrap_err();
        assert_eq!(error.sqlstate(), "22023", "{bad}: {error}");
    }
}
