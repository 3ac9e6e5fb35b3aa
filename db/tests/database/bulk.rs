//! Bulk load (the server's COPY FROM): batches over many calls as one statement.

use db::{Database, DbConfig, DbError, Value};
use redo::{LogConfig, SyncMethod};

fn open(dir: &std::path::Path) -> Database {
    let mut log = LogConfig::new(".");
    log.log_file_size = 1 << 20;
    log.log_buffer = 256 << 10;
    log.sync_method = SyncMethod::Fdatasync;
    Database::open(dir, DbConfig { log, ..DbConfig::default() }).unwrap_or_else(|e| panic!("open: {e}"))
}

#[test]
fn a_failed_bulk_load_undoes_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE b (k BIGINT PRIMARY KEY, v TEXT)", &[]).unwrap();
    s.execute("INSERT INTO b VALUES (100, 'before')", &[]).unwrap();
    let mut load = s.begin_bulk_load("b").unwrap();
    let row = |k: &str| vec![Value::Text(k.into()), Value::Text("x".into())];
    s.bulk_load(&mut load, vec![row("1"), row("2")]).unwrap();
    s.bulk_load(&mut load, vec![row("3")]).unwrap();
    let failed = s.bulk_load(&mut load, vec![row("4"), row("1")]).unwrap_err();
    assert_eq!(failed.index, 1);
    assert!(matches!(failed.error, DbError::DuplicateKey { .. }), "{:?}", failed.error);
    s.abort_bulk_load(load);
    assert_eq!(s.scan("b").unwrap().len(), 1, "only the row inserted before the load");

    let mut load = s.begin_bulk_load("b").unwrap();
    s.bulk_load(&mut load, vec![row("1"), row("2")]).unwrap();
    let failed = s.bulk_load(&mut load, vec![row("x")]).unwrap_err();
    assert!(matches!(failed.error, DbError::TypeMismatch { .. }), "{:?}", failed.error);
    s.abort_bulk_load(load);
    let mut load = s.begin_bulk_load("b").unwrap();
    s.bulk_load(&mut load, vec![row("1"), row("2")]).unwrap();
    assert_eq!(s.finish_bulk_load(load), 2);
    s.execute("COMMIT", &[]).unwrap();
    assert_eq!(db.session().scan("b").unwrap().len(), 3);

    // A load whose transaction was rolled back meanwhile has nothing left to undo.
    let mut load = s.begin_bulk_load("b").unwrap();
    s.bulk_load(&mut load, vec![row("7")]).unwrap();
    s.rollback();
    s.abort_bulk_load(load);
    assert_eq!(db.session().scan("b").unwrap().len(), 3);

    assert!(s.begin_bulk_load("v$session").is_err(), "views are read-only");
    assert!(matches!(s.begin_bulk_load("nosuch"), Err(DbError::UnknownTable(_))));
    let names: Vec<String> = s.table_schemas().iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["b"]);
}
