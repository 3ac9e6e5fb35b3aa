//! Fail-stop: once the redo log fails (no member took a write or sync), commits whose
//! durability is unknown were already visible, so the instance stops serving: every
//! session's next call fails with SQLSTATE 58030 naming the failed file and errno, nothing
//! more is read, no checkpoint is taken; reopening recovers a commit-order prefix that
//! holds every acknowledged WAIT commit.

use std::sync::Arc;

use crate::common::config;
use db::{Database, DbError, Termination, Value};
use redo::fault::{Fault, FaultOp, FaultyStorage};
use redo::storage::FileStorage;

fn ids(db: &Database) -> Vec<i64> {
    let result = db.session().execute("SELECT id FROM t ORDER BY id", &[]).expect("read");
    result.rows().iter().map(|r| if let Value::Int(i) = r[0] { i } else { panic!("{r:?}") }).collect()
}

#[test]
fn after_a_failed_log_sync_every_call_fails_and_reopening_recovers_every_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), config()).unwrap();
        db.session().execute("CREATE TABLE t (id BIGINT PRIMARY KEY)", &[]).unwrap();
    }
    let storage = FaultyStorage::default();
    let db = Database::open_with(dir.path(), config(), Arc::new(storage.clone())).unwrap();
    let mut writer = db.session();
    let mut reader = db.session();
    let mut acknowledged = Vec::new();
    for id in 0..20 {
        writer.execute("INSERT INTO t VALUES ($1)", &[Value::Int(id)]).unwrap();
        writer.execute("COMMIT WRITE WAIT", &[]).unwrap();
        acknowledged.push(id);
    }
    assert_eq!(reader.execute("SELECT count(*) FROM t", &[]).unwrap().rows()[0][0], Value::Int(20));
    // Every sync of the log fails from now on.
    storage.inject(Fault { op: FaultOp::Sync, path_contains: "redo".into(), skip: 0, errno: libc::EIO });
    writer.execute("INSERT INTO t VALUES (100)", &[]).unwrap();
    let e = writer.execute("COMMIT WRITE WAIT", &[]).expect_err("the commit's sync failed");
    assert_eq!(e.sqlstate(), "58030", "{e}");

    let Some(Termination::LogFailed(failure)) = db.termination() else {
        panic!("the instance goes on after the log failed: {:?}", db.termination())
    };
    assert_eq!(failure.source.raw_os_error(), Some(libc::EIO));
    for session in [&mut reader, &mut writer] {
        let e = session.execute("SELECT count(*) FROM t", &[]).expect_err("no read after the failure");
        assert!(matches!(e, DbError::InstanceTerminated(_)), "{e:?}");
        assert_eq!(e.sqlstate(), "58030");
        let message = e.to_string();
        assert!(message.contains("redo01_1.log"), "names the failed member: {message}");
        assert!(message.contains("os error 5"), "names the errno: {message}");
        assert!(message.contains("restart"), "says what to do: {message}");
    }
    let e = db.session().execute("SELECT 1", &[]).expect_err("a new session is refused too");
    assert!(matches!(e, DbError::InstanceTerminated(_)), "{e:?}");
    assert!(
        matches!(db.checkpoint(), Err(DbError::InstanceTerminated(_))),
        "no checkpoint after the failure"
    );
    drop((writer, reader));
    drop(db);

    storage.clear_faults();
    let db = Database::open_with(dir.path(), config(), Arc::new(FileStorage)).unwrap();
    let recovered = ids(&db);
    assert!(db.termination().is_none());
    // A prefix of the commits in commit order, holding every acknowledged one; the
    // unacknowledged commit may or may not be there (its bytes reached the page cache).
    assert!(recovered == acknowledged || recovered == [&acknowledged[..], &[100]].concat(), "{recovered:?}");
}
