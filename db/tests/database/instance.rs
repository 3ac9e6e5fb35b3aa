//! One instance per database directory: `Database::open` locks the directory, a second
//! open fails with a typed error naming it, and the lock goes with the last user of the
//! log. And the automatic workload repository snapshots an embedded database takes on
//! its own, as `DbConfig` says.

use std::path::Path;
use std::time::Duration;

use crate::common::config;
use db::{awr, Database, DbConfig, DbError, Value};

fn snapshots(dir: &Path) -> Vec<u64> {
    awr::list_snapshots(dir).expect("list snapshots").snapshots.iter().map(|s| s.id).collect()
}

#[test]
fn a_second_open_of_an_open_directory_is_refused_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), config()).expect("first open");
    let mut s = db.session();
    s.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)", &[]).unwrap();
    drop(s);

    let Err(e) = Database::open(dir.path(), config()) else { panic!("a second open succeeded") };
    match &e {
        DbError::DirectoryInUse { dir: locked, holder_pid } => {
            assert_eq!(locked, dir.path());
            assert_eq!(*holder_pid, Some(std::process::id()), "the holder wrote its pid");
        }
        other => panic!("expected DirectoryInUse, got {other:?}"),
    }
    let message = e.to_string();
    assert!(message.contains(&dir.path().display().to_string()), "{message}");
    assert!(message.contains("in use by another process"), "{message}");
    assert!(message.contains(&format!("pid {}", std::process::id())), "{message}");
    assert!(message.contains("EXEC snapshot"), "says what to do instead: {message}");
    assert_eq!(e.sqlstate(), "55006");
    // The refused open changed nothing: the first instance goes on.
    let mut s = db.session();
    s.execute("INSERT INTO t VALUES (1)", &[]).unwrap();
    s.execute("COMMIT", &[]).unwrap();
    drop(s);

    // Dropping the database releases the lock; the next open sees the commits.
    drop(db);
    let db = Database::open(dir.path(), config()).expect("reopen after drop");
    let mut s = db.session();
    assert_eq!(s.execute("SELECT id FROM t", &[]).unwrap().rows(), &[vec![Value::Int(1)]]);
    let pid = std::fs::read_to_string(dir.path().join(db::database::LOCK_FILE)).unwrap();
    assert_eq!(pid.trim(), std::process::id().to_string());
}

#[test]
fn the_lock_lasts_until_the_last_session_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), config()).expect("open");
    let session = db.session();
    drop(db);
    // The session can still write the log: the directory is still in use.
    assert!(matches!(Database::open(dir.path(), config()), Err(DbError::DirectoryInUse { .. })));
    drop(session);
    Database::open(dir.path(), config()).expect("open once the session is gone");
}

#[test]
fn a_missing_directory_that_must_exist_is_refused_without_creating_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    let mut config = config();
    config.log.open_mode = redo::OpenMode::MustExist;
    assert!(Database::open(&missing, config).is_err());
    assert!(!missing.exists(), "no directory and no lock file were created");
}

#[test]
fn an_embedded_database_takes_automatic_snapshots_until_dropped() {
    let dir = tempfile::tempdir().unwrap();
    // The defaults are Oracle's: every 15 minutes, kept 8 days.
    let defaults = DbConfig::default().snapshot_settings();
    assert_eq!((defaults.interval, defaults.retention), (awr::DEFAULT_INTERVAL, awr::DEFAULT_RETENTION));
    assert_eq!(DbConfig::default().snapshot_interval_minutes, 15);
    assert_eq!(DbConfig::default().snapshot_retention_days, 8);

    // A snapshot older than the retention, left by an earlier instance.
    {
        let db = Database::open(dir.path(), config()).expect("open without snapshots");
        assert!(!db.auto_snapshots_running());
        let mut old = awr::sample(&db);
        old.taken_at_unix_us -= 10 * 86_400 * 1_000_000;
        awr::take_snapshot_in(dir.path(), old).expect("store an old snapshot");
    }
    assert_eq!(snapshots(dir.path()), [1]);

    let config = DbConfig {
        snapshot_interval_override: Some(Duration::from_millis(100)),
        snapshot_retention_days: 8,
        ..config()
    };
    let db = Database::open(dir.path(), config).expect("open with snapshots");
    assert!(db.auto_snapshots_running());
    // The first is taken by the open, and the retention removed the old one.
    assert_eq!(snapshots(dir.path()), [2]);
    let mut s = db.session();
    s.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)", &[]).unwrap();
    for i in 0..5 {
        s.execute("INSERT INTO t VALUES ($1)", &[Value::Int(i)]).unwrap();
        s.execute("COMMIT", &[]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(350));
    drop(s);
    drop(db);
    let taken = snapshots(dir.path());
    assert!((2..=6).contains(&taken.len()), "{taken:?} in 350 ms at a 100 ms interval");
    // They are snapshots of one instance: a report between the first and the last works.
    let range = awr::load_range(dir.path(), Some(taken[0]), taken.last().copied()).expect("range");
    let report = awr::report_text(&range).expect("report");
    assert!(report.contains("Load Profile"), "{report}");
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(snapshots(dir.path()), taken, "no snapshot after the drop");
}
