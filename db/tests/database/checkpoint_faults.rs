//! A checkpoint image that cannot be written (ENOSPC injected through the storage layer)
//! hangs nobody: the log fills, committing sessions wait in `log file switch (checkpoint
//! incomplete)` and `v$session` says why; a cancel or `statement_timeout` ends such a
//! wait with 57014 and leaves the transaction open, whole; the failures are in
//! `v$checkpoint` and `v$sysstat`; the checkpointer retries, and once the disk takes
//! images again the checkpoint completes and every waiting session goes on. Nothing
//! acknowledged is lost across a reopen.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use db::checkpointer::RetryPolicy;
use db::{Database, DbConfig, DbError, Session, Value};
use redo::fault::{Fault, FaultOp, FaultyStorage};
use redo::storage::FileStorage;
use redo::{LogConfig, SyncMethod};

const INCOMPLETE: &str = "log file switch (checkpoint incomplete)";

/// Three log groups of 64 KiB (some thirty commits each), checkpoints only when the log
/// asks, and quick retries so that the test does not wait for the 5 s cap.
fn config() -> DbConfig {
    let mut log = LogConfig::new(".");
    log.log_file_size = 64 << 10;
    log.log_buffer = 64 << 10;
    log.sync_method = SyncMethod::Fdatasync;
    DbConfig {
        log,
        checkpoint_interval_ms: 0,
        snapshot_interval_minutes: 0,
        checkpoint_retry: RetryPolicy { first: Duration::from_millis(20), max: Duration::from_millis(200) },
        ..DbConfig::default()
    }
}

fn no_space_for_images() -> Fault {
    Fault { op: FaultOp::Create, path_contains: "image-".into(), skip: 0, errno: libc::ENOSPC }
}

fn int(s: &mut Session, sql: &str) -> i64 {
    match s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).rows() {
        [row] => match row[0] {
            Value::Int(n) => n,
            ref other => panic!("{sql}: {other:?}"),
        },
        rows => panic!("{sql}: {rows:?}"),
    }
}

fn text(s: &mut Session, sql: &str) -> Option<String> {
    match s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).rows() {
        [row] => match &row[0] {
            Value::Text(t) => Some(t.clone()),
            Value::Null => None,
            other => panic!("{sql}: {other:?}"),
        },
        rows => panic!("{sql}: {rows:?}"),
    }
}

/// The pad of most rows: some thirty commits fill a log file.
const PAD: usize = 2000;

fn insert(s: &mut Session, id: i64, pad: usize) {
    s.execute("INSERT INTO t VALUES ($1, $2)", &[Value::Int(id), Value::Text("x".repeat(pad))])
        .unwrap_or_else(|e| panic!("insert {id}: {e}"));
}

/// Waits until `n` sessions wait for the checkpoint (30 s at most).
fn until_waiting(observer: &mut Session, n: i64) {
    let sql = format!("SELECT count(*) FROM v$session WHERE event = '{INCOMPLETE}'");
    let deadline = Instant::now() + Duration::from_secs(30);
    while int(observer, &sql) < n {
        assert!(Instant::now() < deadline, "{n} sessions never waited for the checkpoint");
        thread::sleep(Duration::from_millis(5));
    }
}

/// A session committing rows `from..` one by one until a commit fails or `stop` is
/// raised; returns the session (its last transaction left open by a failure), the error
/// and the id whose commit failed. Acknowledged ids go into `acked`.
fn committer(
    mut s: Session,
    from: i64,
    pad: usize,
    acked: Arc<Mutex<Vec<i64>>>,
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<(Session, Option<DbError>, i64)> {
    thread::spawn(move || {
        for id in from.. {
            if stop.load(SeqCst) {
                return (s, None, id);
            }
            insert(&mut s, id, pad);
            match s.execute("COMMIT", &[]) {
                Ok(_) => acked.lock().unwrap().push(id),
                Err(e) => return (s, Some(e), id),
            }
        }
        unreachable!()
    })
}

fn ids(db: &Database) -> Vec<i64> {
    let rows = db.session().execute("SELECT id FROM t ORDER BY id", &[]).unwrap();
    rows.rows().iter().map(|r| if let Value::Int(i) = r[0] { i } else { panic!("{r:?}") }).collect()
}

#[test]
fn sessions_blocked_by_a_checkpoint_that_cannot_be_written_can_be_cancelled_and_go_on_when_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let storage = FaultyStorage::default();
    let db = Database::open_with(dir.path(), config(), Arc::new(storage.clone())).unwrap();
    let mut observer = db.session();
    observer.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, pad TEXT)", &[]).unwrap();
    let acked = Arc::new(Mutex::new(Vec::new()));
    // Two good images first, so the log has a checkpoint to go back to.
    let mut s = db.session();
    for id in 0..20 {
        insert(&mut s, id, PAD);
        s.execute("COMMIT", &[]).unwrap();
        acked.lock().unwrap().push(id);
        if id % 10 == 9 {
            db.checkpoint().unwrap().expect("an image");
        }
    }

    storage.inject(no_space_for_images());
    // A session commits until the log is full and its commit waits for the checkpoint.
    let cancel = s.cancel_handle();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = committer(s, 1_000, PAD, acked.clone(), stop.clone());
    until_waiting(&mut observer, 1);
    let waiting_sid = int(&mut observer, &format!("SELECT sid FROM v$session WHERE event = '{INCOMPLETE}'"));
    assert_eq!(waiting_sid as u64, cancel.sid());
    let detail = text(&mut observer, &format!("SELECT wait_detail FROM v$session WHERE sid = {waiting_sid}"))
        .expect("the wait says why");
    assert!(detail.contains("checkpoint failed"), "{detail}");
    assert!(detail.contains("No space left on device"), "{detail}");
    assert!(detail.contains("53100"), "{detail}");
    assert!(detail.contains("log group"), "{detail}");
    assert_eq!(
        text(&mut observer, &format!("SELECT wait_class FROM v$session WHERE sid = {waiting_sid}"))
            .as_deref(),
        Some("Configuration")
    );
    // The failure is in the views.
    assert_eq!(text(&mut observer, "SELECT status FROM v$checkpoint").as_deref(), Some("FAILED"));
    assert!(int(&mut observer, "SELECT consecutive_failures FROM v$checkpoint") >= 1);
    assert_eq!(text(&mut observer, "SELECT last_error_sqlstate FROM v$checkpoint").as_deref(), Some("53100"));
    let last_error = text(&mut observer, "SELECT last_error FROM v$checkpoint").expect("an error");
    assert!(last_error.contains("os error 28"), "{last_error}");
    assert!(int(&mut observer, "SELECT retry_delay_ms FROM v$checkpoint") >= 20);
    assert_eq!(int(&mut observer, "SELECT sessions_waiting FROM v$checkpoint"), 1);
    assert!(int(&mut observer, "SELECT value FROM v$sysstat WHERE name = 'checkpoints failed'") >= 1);
    let completed = "SELECT value FROM v$sysstat WHERE name = 'checkpoints completed'";
    assert_eq!(int(&mut observer, completed), 2, "the two images before the fault");

    // A second session's commit waits as well (beside the first, not behind it), and its
    // statement_timeout ends the wait with 57014.
    let timed = thread::spawn({
        let mut timed = db.session();
        move || {
            timed.execute("SET statement_timeout = 300", &[]).unwrap();
            assert_eq!(text(&mut timed, "SHOW statement_timeout").as_deref(), Some("300ms"));
            insert(&mut timed, 5_000, PAD);
            let started = Instant::now();
            let e = timed.execute("COMMIT", &[]).expect_err("the commit waits past its timeout");
            (timed, e, started.elapsed())
        }
    });
    until_waiting(&mut observer, 2);
    assert_eq!(int(&mut observer, "SELECT sessions_waiting FROM v$checkpoint"), 2);
    let (mut timed, e, waited) = timed.join().unwrap();
    assert!(matches!(e, DbError::StatementTimeout), "{e:?}");
    assert_eq!(e.sqlstate(), "57014");
    assert_eq!(e.to_string(), "canceling statement due to statement timeout");
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    assert!(timed.in_transaction());
    // Rolled back, its row is gone for good.
    timed.execute("ROLLBACK", &[]).unwrap();
    assert!(!timed.in_transaction());
    assert_eq!(int(&mut timed, "SELECT count(*) FROM t WHERE id = 5000"), 0);

    // A cancel ends the first session's wait with 57014; its transaction stays open, whole.
    cancel.cancel();
    let (mut cancelled, e, cancelled_id) = writer.join().unwrap();
    let e = e.expect("the commit failed");
    assert!(matches!(e, DbError::Canceled), "{e:?}");
    assert_eq!(e.sqlstate(), "57014");
    assert_eq!(e.to_string(), "canceling statement due to user request");
    assert!(cancelled.in_transaction(), "the commit that was cancelled leaves its transaction open");
    assert_eq!(int(&mut cancelled, &format!("SELECT count(*) FROM t WHERE id = {cancelled_id}")), 1);
    assert_eq!(int(&mut observer, &format!("SELECT count(*) FROM t WHERE id = {cancelled_id}")), 0);
    let waits = format!(
        "SELECT total_waits FROM v$session_event WHERE sid = {waiting_sid} AND event = '{INCOMPLETE}'"
    );
    assert!(int(&mut observer, &waits) >= 1, "the wait is counted");
    assert_eq!(int(&mut observer, "SELECT sessions_waiting FROM v$checkpoint"), 0);

    // Another session blocks; then the disk takes images again.
    let blocked = committer(db.session(), 10_000, PAD, acked.clone(), stop.clone());
    until_waiting(&mut observer, 1);
    storage.clear_faults();
    // The waiting session goes on by itself (it commits until the test ends it).
    let deadline = Instant::now() + Duration::from_secs(30);
    while !acked.lock().unwrap().iter().any(|&id| id >= 10_000) {
        assert!(Instant::now() < deadline, "the blocked session never went on after the fault was cleared");
        thread::sleep(Duration::from_millis(10));
    }
    // The cancelled transaction commits now, as it was.
    cancelled.execute("COMMIT", &[]).unwrap();
    acked.lock().unwrap().push(cancelled_id);
    // IDLE or WRITING (the committing session keeps the log switching), not FAILED.
    assert_ne!(text(&mut observer, "SELECT status FROM v$checkpoint").as_deref(), Some("FAILED"));
    assert_eq!(int(&mut observer, "SELECT consecutive_failures FROM v$checkpoint"), 0);
    assert!(int(&mut observer, completed) > 2);
    // Keep the log switching for a while: the groups are reused again.
    let switches = "SELECT value FROM v$sysstat WHERE name = 'redo log switches'";
    let before = int(&mut observer, switches);
    while int(&mut observer, switches) < before + 3 {
        assert!(Instant::now() < deadline, "the log does not go on switching");
        thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, SeqCst);
    let (_, e, _) = blocked.join().unwrap();
    assert!(e.is_none(), "{e:?}");
    drop((cancelled, timed, observer));
    drop(db);

    // Nothing acknowledged is lost.
    let db = Database::open_with(dir.path(), config(), Arc::new(FileStorage)).unwrap();
    let recovered = ids(&db);
    let mut acked = acked.lock().unwrap().clone();
    acked.sort();
    let missing: Vec<i64> = acked.iter().copied().filter(|id| recovered.binary_search(id).is_err()).collect();
    assert!(missing.is_empty(), "acknowledged commits lost: {missing:?}");
    assert!(recovered.binary_search(&5_000).is_err(), "the rolled-back row stays out");
}

#[test]
fn a_new_database_whose_first_images_fail_goes_on_once_one_can_be_written() {
    let dir = tempfile::tempdir().unwrap();
    // Not one image can be written from the start: the log has no checkpoint at all.
    let storage = FaultyStorage::new(vec![no_space_for_images()]);
    let db = Database::open_with(dir.path(), config(), Arc::new(storage.clone())).unwrap();
    let mut observer = db.session();
    observer.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, pad TEXT)", &[]).unwrap();
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = committer(db.session(), 0, PAD, acked.clone(), stop.clone());
    until_waiting(&mut observer, 1);
    // Smaller commits still fit in what is left of the last open file: fill it.
    let small = committer(db.session(), 100_000, 0, acked.clone(), stop.clone());
    until_waiting(&mut observer, 2);

    // DDL commits as a transaction of its own: timed out in its wait, it is undone whole.
    observer.execute("SET statement_timeout = '200ms'", &[]).unwrap();
    let e = observer.execute("CREATE TABLE u (id BIGINT PRIMARY KEY)", &[]).expect_err("it waits");
    assert!(matches!(e, DbError::StatementTimeout), "{e:?}");
    assert!(!observer.in_transaction());
    observer.execute("RESET statement_timeout", &[]).unwrap();
    assert_eq!(text(&mut observer, "SHOW statement_timeout").as_deref(), Some("0"));
    let e = observer.execute("SELECT count(*) FROM u", &[]).expect_err("no such table");
    assert_eq!(e.sqlstate(), "42P01", "{e}");
    assert_eq!(int(&mut observer, "SELECT count(*) FROM v$checkpoint WHERE last_image_scn IS NULL"), 1);

    storage.clear_faults();
    let deadline = Instant::now() + Duration::from_secs(30);
    let before = acked.lock().unwrap().len();
    while acked.lock().unwrap().len() < before + 100 {
        assert!(Instant::now() < deadline, "the session never went on after the fault was cleared");
        thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, SeqCst);
    for session in [writer, small] {
        let (_, e, _) = session.join().unwrap();
        assert!(e.is_none(), "{e:?}");
    }
    assert!(int(&mut observer, "SELECT log_checkpoint_scn FROM v$checkpoint") > 0);
    drop(observer);
    drop(db);

    let db = Database::open_with(dir.path(), config(), Arc::new(FileStorage)).unwrap();
    let recovered = ids(&db);
    let acked = acked.lock().unwrap().clone();
    assert!(acked.iter().all(|id| recovered.binary_search(id).is_ok()), "acknowledged commits lost");
}
