//! Transactions on the embedded database: recovery by replay, rollback, statement-level
//! atomicity, isolation (no dirty reads), row locks, deadlocks, early lock release.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::common::open;
use db::{Column, DataType, Database, DbError, TableSchema, Value};
use redo::{CommitLogging, CommitOptions, CommitWait};

const WAIT: CommitOptions =
    CommitOptions { wait: Some(CommitWait::Wait), logging: Some(CommitLogging::Immediate) };
const NOWAIT_BATCH: CommitOptions =
    CommitOptions { wait: Some(CommitWait::NoWait), logging: Some(CommitLogging::Batch) };

fn accounts() -> TableSchema {
    TableSchema::new(
        "accounts",
        vec![
            Column { name: "id".into(), ty: DataType::Int, nullable: false },
            Column { name: "name".into(), ty: DataType::Text { max_chars: Some(20) }, nullable: true },
            Column { name: "balance".into(), ty: DataType::Int, nullable: true },
        ],
        vec![0],
    )
    .unwrap()
}

fn row(id: i64, name: &str, balance: i64) -> Vec<Value> {
    vec![Value::Int(id), Value::Text(name.into()), Value::Int(balance)]
}

fn key(id: i64) -> db::Key {
    db::Key::from_elem(Value::Int(id), 1)
}

/// A database with the accounts table holding account 1 (balance 100), committed, and the
/// session that made it.
fn one_account(dir: &std::path::Path) -> (Arc<Database>, db::Session) {
    let db = Arc::new(open(dir));
    let mut a = db.session();
    a.create_table(accounts()).unwrap();
    a.insert("accounts", row(1, "a", 100)).unwrap();
    a.commit(WAIT).unwrap();
    (db, a)
}

/// Creates the accounts table with accounts 0..n, each with balance 0, committed.
fn zero_accounts(db: &Database, n: i64) {
    let mut s = db.session();
    s.create_table(accounts()).unwrap();
    for i in 0..n {
        s.insert("accounts", row(i, "x", 0)).unwrap();
    }
    s.commit(WAIT).unwrap();
}

fn balances(db: &Database) -> Vec<(i64, i64)> {
    let snap = db.snapshot();
    snap.table("accounts")
        .unwrap()
        .rows
        .values()
        .map(|r| match (&r[0], &r[2]) {
            (Value::Int(id), Value::Int(b)) => (*id, *b),
            other => panic!("unexpected row {other:?}"),
        })
        .collect()
}

/// Returns once some session waits for a row lock (`enq: TX - row lock contention` in
/// `v$session`): a thread started to wait may not have got there yet on a busy machine.
fn until_a_session_waits_for_a_row(db: &Database) {
    let mut observer = db.session();
    let waiting = "SELECT count(*) FROM v$session WHERE event = 'enq: TX - row lock contention'";
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while s_int(&mut observer, waiting) == 0 {
        assert!(std::time::Instant::now() < deadline, "no session started waiting for a row lock");
        thread::sleep(Duration::from_millis(5));
    }
}

fn s_int(s: &mut db::Session, sql: &str) -> i64 {
    match s.execute(sql, &[]).unwrap().rows() {
        [row] => match row[0] {
            Value::Int(n) => n,
            ref other => panic!("{other:?}"),
        },
        rows => panic!("{rows:?}"),
    }
}

#[test]
fn committed_rows_and_tables_survive_a_reopen_and_rolled_back_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        s.create_table(accounts()).unwrap();
        for i in 0..10 {
            s.insert("accounts", row(i, "a", i * 10)).unwrap();
        }
        s.commit(WAIT).unwrap();
        s.update("accounts", &key(3), row(3, "b", 999)).unwrap();
        s.delete("accounts", &key(4)).unwrap();
        s.commit(WAIT).unwrap();
        s.insert("accounts", row(100, "gone", 1)).unwrap();
        s.rollback();
    }
    let db = open(dir.path());
    let b = balances(&db);
    assert_eq!(b.len(), 9);
    assert!(b.contains(&(3, 999)));
    assert!(!b.iter().any(|(id, _)| *id == 4 || *id == 100));
    assert_eq!(db.recovery_report().transactions, 3, "create table, and two transactions");
}

#[test]
fn a_failed_statement_is_undone_alone_and_the_transaction_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        s.create_table(accounts()).unwrap();
        s.insert("accounts", row(1, "a", 1)).unwrap();
        let e = s.insert("accounts", row(1, "dup", 2)).unwrap_err();
        assert!(matches!(e, DbError::DuplicateKey { .. }), "{e}");
        assert_eq!(e.sqlstate(), "23505");
        let e = s.insert("accounts", row(2, "a name that is far too long", 2)).unwrap_err();
        assert_eq!(e.sqlstate(), "22001");
        let e = s.insert("accounts", vec![Value::Int(3), Value::Null, Value::Text("x".into())]).unwrap_err();
        assert_eq!(e.sqlstate(), "22P02");
        assert!(s.in_transaction());
        s.insert("accounts", row(2, "b", 2)).unwrap();
        s.commit(WAIT).unwrap();
    }
    let db = open(dir.path());
    assert_eq!(balances(&db), vec![(1, 1), (2, 2)]);
}

#[test]
fn uncommitted_changes_are_invisible_to_other_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = db.session();
    let b = db.session();
    a.create_table(accounts()).unwrap();
    a.insert("accounts", row(1, "a", 1)).unwrap();
    assert!(a.get("accounts", &key(1)).unwrap().is_some(), "a session sees its own changes");
    assert!(b.get("accounts", &key(1)).unwrap().is_none(), "no dirty reads");
    assert!(b.scan("accounts").unwrap().is_empty());
    a.commit(NOWAIT_BATCH).unwrap();
    assert!(b.get("accounts", &key(1)).unwrap().is_some(), "visible once the commit is in the log buffer");
    a.insert("accounts", row(2, "closed", 2)).unwrap();
    a.close();
    assert!(b.get("accounts", &key(2)).unwrap().is_none(), "closing a session rolls back its transaction");
}

#[test]
fn a_second_writer_of_a_row_waits_for_the_first_and_sees_its_change() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut a) = one_account(dir.path());
    a.update("accounts", &key(1), row(1, "a", 150)).unwrap();
    let db2 = db.clone();
    let b = thread::spawn(move || {
        let mut b = db2.session();
        // Waits for a's lock; then reads a's committed balance and adds to it.
        let current = b.get("accounts", &key(1)).unwrap().unwrap()[2].clone();
        assert_eq!(current, Value::Int(100), "before the lock: the committed row");
        let t = std::time::Instant::now();
        b.update("accounts", &key(1), row(1, "b", 0)).unwrap();
        let waited = t.elapsed();
        let seen = b.get("accounts", &key(1)).unwrap().unwrap();
        b.commit(WAIT).unwrap();
        (waited, seen)
    });
    until_a_session_waits_for_a_row(&db);
    thread::sleep(Duration::from_millis(100));
    a.commit(WAIT).unwrap();
    let (waited, _) = b.join().unwrap();
    assert!(waited >= Duration::from_millis(50), "b waited for a's row lock ({waited:?})");
    let stats = db.sql_stats();
    assert_eq!(stats.row_lock_waits, 1, "one enq: TX - row lock contention wait");
    assert!(stats.row_lock_wait_us >= 50_000, "{stats:?}");
    assert_eq!(balances(&db), vec![(1, 0)]);
}

#[test]
fn an_update_that_waited_for_a_row_lock_computes_from_the_row_the_holder_committed() {
    // The UPDATE reads the row before locking it; the holder's commit changes it while the
    // UPDATE waits, so the row must be read again under the lock (not reused).
    let dir = tempfile::tempdir().unwrap();
    let (db, mut a) = one_account(dir.path());
    a.execute("UPDATE accounts SET balance = 150 WHERE id = 1", &[]).unwrap();
    let db2 = db.clone();
    let b = thread::spawn(move || {
        let mut b = db2.session();
        let update = b.prepare("UPDATE accounts SET balance = balance + 1 WHERE id = $1").unwrap();
        assert_eq!(b.execute_prepared(&update, &[Value::Int(1)]).unwrap().rows_affected(), 1);
        b.commit(WAIT).unwrap();
    });
    until_a_session_waits_for_a_row(&db);
    a.commit(WAIT).unwrap();
    b.join().unwrap();
    assert_eq!(balances(&db), vec![(1, 151)], "b added to a's committed balance");
}

#[test]
fn sessions_incrementing_rows_with_sql_lose_no_update() {
    // UPDATE's row loop reuses a row read before its lock only if nothing was applied
    // since: many sessions incrementing few rows check that it never reuses a stale one.
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    zero_accounts(&db, 4);
    thread::scope(|scope| {
        for t in 0..8i64 {
            let db = db.clone();
            scope.spawn(move || {
                let mut s = db.session();
                let update = s.prepare("UPDATE accounts SET balance = balance + 1 WHERE id = $1").unwrap();
                let range = s
                    .prepare("UPDATE accounts SET balance = balance + 1 WHERE id >= $1 AND id < $2")
                    .unwrap();
                for i in 0..300i64 {
                    if i % 10 == 0 {
                        // A range: several rows locked in one statement.
                        s.execute_prepared(&range, &[Value::Int(1), Value::Int(3)]).unwrap();
                    } else {
                        s.execute_prepared(&update, &[Value::Int((i + t) % 4)]).unwrap();
                    }
                    s.commit(NOWAIT_BATCH).unwrap();
                }
            });
        }
    });
    let total: i64 = balances(&db).iter().map(|(_, b)| b).sum();
    assert_eq!(total, 8 * (270 + 30 * 2), "no lost update");
}

#[test]
fn two_transactions_waiting_on_each_other_get_a_deadlock_error_for_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    let mut a = db.session();
    a.create_table(accounts()).unwrap();
    a.insert("accounts", row(1, "a", 1)).unwrap();
    a.insert("accounts", row(2, "b", 2)).unwrap();
    a.commit(WAIT).unwrap();
    let mut b = db.session();
    a.update("accounts", &key(1), row(1, "a", 10)).unwrap();
    b.update("accounts", &key(2), row(2, "b", 20)).unwrap();
    let t = thread::spawn(move || a.update("accounts", &key(2), row(2, "a", 11)).map(|_| a));
    until_a_session_waits_for_a_row(&db);
    let e = b.update("accounts", &key(1), row(1, "b", 21)).unwrap_err();
    assert!(matches!(e, DbError::Deadlock(_)), "{e}");
    assert_eq!(e.sqlstate(), "40P01");
    b.rollback();
    let mut a = t.join().unwrap().expect("the other transaction goes on");
    a.commit(WAIT).unwrap();
    assert_eq!(balances(&db), vec![(1, 10), (2, 11)]);
}

#[test]
fn inserting_a_key_another_transaction_inserted_waits_then_is_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    let mut a = db.session();
    a.create_table(accounts()).unwrap();
    a.insert("accounts", row(7, "a", 1)).unwrap();
    let db2 = db.clone();
    let b = thread::spawn(move || db2.session().insert("accounts", row(7, "b", 2)));
    until_a_session_waits_for_a_row(&db);
    a.commit(WAIT).unwrap();
    let e = b.join().unwrap().unwrap_err();
    assert!(matches!(e, DbError::DuplicateKey { .. }), "{e}");
}

#[test]
fn a_row_changed_after_an_undurable_commit_recovers_only_with_it() {
    // Early lock release: b updates the row a committed NOWAIT BATCH (not yet durable);
    // b's WAIT commit makes a's durable too, because commits are durable in order.
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut a = db.session();
        let mut b = db.session();
        a.create_table(accounts()).unwrap();
        a.insert("accounts", row(1, "a", 1)).unwrap();
        let ra = a.commit(NOWAIT_BATCH).unwrap().unwrap();
        assert!(db.log().durable_lsn() < ra.lsn, "a's commit is not durable yet");
        b.update("accounts", &key(1), row(1, "b", 2)).unwrap();
        let rb = b.commit(WAIT).unwrap().unwrap();
        assert!(rb.scn > ra.scn);
        assert!(db.log().durable_lsn() >= ra.lsn, "b's durability covers a");
    }
    let db = open(dir.path());
    assert_eq!(balances(&db), vec![(1, 2)]);
}

#[test]
fn ddl_creates_drops_and_truncates_tables_and_checks_names() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        s.create_table(accounts()).unwrap();
        assert_eq!(s.create_table(accounts()).unwrap_err().sqlstate(), "42P07");
        s.insert("accounts", row(1, "a", 1)).unwrap();
        s.truncate("accounts").unwrap();
        assert!(s.scan("accounts").unwrap().is_empty());
        s.insert("accounts", row(2, "b", 2)).unwrap();
        s.commit(WAIT).unwrap();
        let mut other = TableSchema::new(
            "other",
            vec![Column { name: "k".into(), ty: DataType::Text { max_chars: None }, nullable: false }],
            vec![0],
        )
        .unwrap();
        other.name = "other".into();
        s.create_table(other).unwrap();
        s.drop_table("other").unwrap();
        assert_eq!(s.drop_table("other").unwrap_err().sqlstate(), "42P01");
        assert_eq!(s.insert("nope", row(1, "a", 1)).unwrap_err().sqlstate(), "42P01");
    }
    let db = open(dir.path());
    assert_eq!(balances(&db), vec![(2, 2)]);
    assert!(db.snapshot().table("other").is_err());
}

#[test]
fn many_sessions_updating_random_rows_in_every_mode_keep_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let total: i64;
    {
        let db = Arc::new(open(dir.path()));
        zero_accounts(&db, 20);
        let modes = [
            WAIT,
            NOWAIT_BATCH,
            CommitOptions::new(CommitWait::NoWait, CommitLogging::Immediate),
            CommitOptions::new(CommitWait::Wait, CommitLogging::Batch),
        ];
        thread::scope(|scope| {
            for t in 0..6i64 {
                let db = db.clone();
                scope.spawn(move || {
                    let mut s = db.session();
                    for i in 0..200i64 {
                        let id = (i * 7 + t * 3) % 20;
                        let current = s.select_for_update("accounts", &key(id)).unwrap().expect("row exists");
                        let Value::Int(before) = current[2] else { panic!("balance {:?}", current[2]) };
                        s.update("accounts", &key(id), row(id, "x", before + 1)).unwrap();
                        s.commit(modes[(i % 4) as usize]).unwrap();
                    }
                });
            }
        });
        total = balances(&db).iter().map(|(_, b)| b).sum();
        assert_eq!(total, 6 * 200, "no lost update");
    }
    let db = open(dir.path());
    assert_eq!(balances(&db).iter().map(|(_, b)| b).sum::<i64>(), total, "recovered the same state");
}

#[test]
fn rollback_to_a_savepoint_undoes_only_what_followed_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let run =
        |s: &mut db::Session, sql: &str| s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).tag();
    run(&mut s, "CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)");
    run(&mut s, "BEGIN");
    run(&mut s, "INSERT INTO t VALUES (1, 'before')");
    assert_eq!(run(&mut s, "SAVEPOINT a"), "SAVEPOINT");
    run(&mut s, "INSERT INTO t VALUES (2, 'after a')");
    run(&mut s, "UPDATE t SET v = 'changed' WHERE k = 1");
    run(&mut s, "SAVEPOINT b");
    run(&mut s, "DELETE FROM t");
    assert_eq!(run(&mut s, "ROLLBACK TO SAVEPOINT b"), "ROLLBACK");
    let keys = |s: &mut db::Session| {
        s.execute("SELECT k, v FROM t ORDER BY k", &[])
            .unwrap()
            .rows()
            .iter()
            .map(|r| r[1].to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&mut s), ["changed", "after a"]);
    assert_eq!(run(&mut s, "ROLLBACK TO a"), "ROLLBACK");
    assert_eq!(keys(&mut s), ["before"]);
    // The savepoint stays: roll back to it again; b went with the first rollback to a.
    run(&mut s, "INSERT INTO t VALUES (3, 'again')");
    run(&mut s, "ROLLBACK TO SAVEPOINT a");
    assert_eq!(keys(&mut s), ["before"]);
    assert_eq!(s.execute("ROLLBACK TO b", &[]).unwrap_err().sqlstate(), "3B001");
    // RELEASE keeps the changes and forgets the savepoint.
    run(&mut s, "INSERT INTO t VALUES (4, 'kept')");
    assert_eq!(run(&mut s, "RELEASE SAVEPOINT a"), "RELEASE");
    assert_eq!(s.execute("ROLLBACK TO a", &[]).unwrap_err().sqlstate(), "3B001");
    assert_eq!(s.execute("RELEASE a", &[]).unwrap_err().sqlstate(), "3B001");
    // A failed statement after a savepoint leaves it usable.
    run(&mut s, "SAVEPOINT c");
    assert_eq!(s.execute("INSERT INTO t VALUES (4, 'dup')", &[]).unwrap_err().sqlstate(), "23505");
    run(&mut s, "INSERT INTO t VALUES (5, 'rolled back')");
    run(&mut s, "ROLLBACK TO c");
    run(&mut s, "COMMIT");
    drop(s);
    let mut other = db.session();
    assert_eq!(keys(&mut other), ["before", "kept"]);
    assert_eq!(other.execute("ROLLBACK TO c", &[]).unwrap_err().sqlstate(), "3B001", "gone with the commit");

    // The redo of the undone changes is gone too: a reopen finds the committed rows only.
    drop(other);
    drop(db);
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(keys(&mut s), ["before", "kept"]);
}

#[test]
fn a_name_used_twice_names_the_newer_savepoint_until_it_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (k BIGINT PRIMARY KEY)", &[]).unwrap();
    s.savepoint("x");
    s.insert("t", vec![Value::Int(1)]).unwrap();
    s.savepoint("x");
    s.insert("t", vec![Value::Int(2)]).unwrap();
    s.rollback_to_savepoint("x").unwrap();
    assert_eq!(s.scan("t").unwrap().len(), 1, "back to the newer x");
    s.release_savepoint("x").unwrap();
    s.rollback_to_savepoint("x").unwrap();
    assert!(s.scan("t").unwrap().is_empty(), "then to the older one");
    s.rollback();
}

/// Whether another session can run `sql` at once (true), or has to wait for a row lock
/// (false: then `release` is called, to end the transaction holding it). Either way `sql`
/// ends up run.
fn runs_without_waiting(db: &Arc<Database>, sql: &'static str, release: impl FnOnce()) -> bool {
    let db2 = db.clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let b = thread::spawn(move || {
        let mut b = db2.session();
        b.execute(sql, &[]).unwrap();
        b.commit(WAIT).unwrap();
        done_tx.send(()).unwrap();
    });
    let at_once = done_rx.recv_timeout(Duration::from_millis(300)).is_ok();
    if !at_once {
        release();
    }
    b.join().unwrap();
    at_once
}

#[test]
fn an_update_or_delete_by_key_that_changes_nothing_leaves_no_row_locked() {
    // Exact keys are locked before their rows are read; a key without a row, or whose row
    // fails the rest of the WHERE, is unlocked again at once.
    let dir = tempfile::tempdir().unwrap();
    let (db, mut a) = one_account(dir.path());
    let tag = |a: &mut db::Session, sql: &str| a.execute(sql, &[]).unwrap().tag();
    assert_eq!(tag(&mut a, "UPDATE accounts SET balance = 1 WHERE id = 7"), "UPDATE 0");
    assert_eq!(tag(&mut a, "DELETE FROM accounts WHERE id IN (8, 9)"), "DELETE 0");
    assert_eq!(tag(&mut a, "UPDATE accounts SET balance = 1 WHERE id = 1 AND balance = -5"), "UPDATE 0");
    // A wait would be ended by rolling `a` back (the check has failed by then).
    let a = std::sync::Mutex::new(a);
    let release = || a.lock().unwrap().rollback();
    assert!(
        runs_without_waiting(&db, "INSERT INTO accounts VALUES (7, 'g', 0)", release),
        "key 7 stayed locked"
    );
    assert!(
        runs_without_waiting(&db, "INSERT INTO accounts VALUES (9, 'i', 0)", release),
        "key 9 stayed locked"
    );
    assert!(
        runs_without_waiting(&db, "UPDATE accounts SET balance = 2 WHERE id = 1", release),
        "row 1 stayed locked"
    );
}

#[test]
fn a_prepared_insert_whose_later_row_fails_to_evaluate_locks_no_key() {
    // Every row's values are computed before any row is locked: a division by zero in the
    // second row leaves the first row's key free for others.
    let dir = tempfile::tempdir().unwrap();
    let (db, mut a) = one_account(dir.path());
    let insert = a.prepare("INSERT INTO accounts VALUES (5, 'x', 1), (6, 'y', 1 / $1)").unwrap();
    let e = a.execute_prepared(&insert, &[Value::Int(0)]).unwrap_err();
    assert!(matches!(e, DbError::DivisionByZero), "{e}");
    let a = std::sync::Mutex::new(a);
    let release = || a.lock().unwrap().rollback();
    assert!(
        runs_without_waiting(&db, "INSERT INTO accounts VALUES (5, 'z', 0)", release),
        "key 5 stayed locked"
    );
}

#[test]
fn a_key_locked_before_stays_locked_when_a_later_statement_changes_nothing_there() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut a) = one_account(dir.path());
    a.execute("UPDATE accounts SET balance = 5 WHERE id = 1", &[]).unwrap();
    let tag = a.execute("DELETE FROM accounts WHERE id = 1 AND balance = -5", &[]).unwrap().tag();
    assert_eq!(tag, "DELETE 0");
    let a = std::sync::Mutex::new(a);
    let waited = !runs_without_waiting(&db, "UPDATE accounts SET balance = balance + 1 WHERE id = 1", || {
        a.lock().unwrap().commit(WAIT).unwrap();
    });
    assert!(waited, "the first UPDATE's lock on row 1 was kept until its commit");
    assert_eq!(balances(&db), vec![(1, 6)]);
}

#[test]
fn a_sessions_next_transaction_starts_clean_after_a_rollback_or_a_commit() {
    // A session's transactions reuse one another's allocations: nothing of one may show
    // in the next (rows, savepoints, locks).
    let dir = tempfile::tempdir().unwrap();
    let (db, mut a) = one_account(dir.path());
    let count =
        |s: &mut db::Session| match s.execute("SELECT count(*) FROM accounts", &[]).unwrap().rows()[0][0] {
            Value::Int(n) => n,
            ref other => panic!("{other:?}"),
        };
    a.execute("INSERT INTO accounts VALUES (5, 'e', 0)", &[]).unwrap();
    a.execute("SAVEPOINT s1", &[]).unwrap();
    a.execute("DELETE FROM accounts WHERE id = 1", &[]).unwrap();
    assert_eq!(count(&mut a), 1, "its own insert and delete");
    a.rollback();
    assert_eq!(count(&mut a), 1, "only the committed row");
    assert!(a.get("accounts", &key(5)).unwrap().is_none(), "the rolled-back insert is gone");
    assert!(a.get("accounts", &key(1)).unwrap().is_some(), "the rolled-back delete is gone");
    assert!(a.execute("ROLLBACK TO SAVEPOINT s1", &[]).is_err(), "the savepoint ended with its transaction");
    a.rollback();
    a.execute("UPDATE accounts SET balance = 7 WHERE id = 1", &[]).unwrap();
    a.commit(WAIT).unwrap();
    // Its locks went with the commit: another session changes the row at once.
    let stuck = || panic!("row 1 stayed locked after the commit");
    assert!(runs_without_waiting(&db, "UPDATE accounts SET balance = 8 WHERE id = 1", stuck));
    a.execute("INSERT INTO accounts VALUES (6, 'f', 0)", &[]).unwrap();
    a.commit(WAIT).unwrap();
    assert_eq!(balances(&db), vec![(1, 8), (6, 0)]);
}
