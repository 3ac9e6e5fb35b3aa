//! The shared pool and call-level behaviour through SQL: bind variables parse once,
//! literals parse every time (seed 004), as the counters and v$sql show; commits inside one multi-statement call wait
//! once (seed 001), counted; the deprecated commit_write comes back as a notice.

use crate::common::open;
use db::Value;
use redo::Stat;

#[test]
fn bind_variables_are_parsed_once_and_literals_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)", &[]).unwrap();
    let before = db.sql_stats();
    for i in 0..100i64 {
        s.execute("INSERT INTO t VALUES ($1, $2)", &[Value::Int(i), Value::Text("x".into())]).unwrap();
    }
    let bound = db.sql_stats();
    assert_eq!(bound.parse_count_total - before.parse_count_total, 100);
    assert_eq!(bound.parse_count_hard - before.parse_count_hard, 1, "one hard parse for 100 executions");
    assert_eq!(bound.cache_hits - before.cache_hits, 99);
    for i in 100..200i64 {
        s.execute(&format!("INSERT INTO t VALUES ({i}, 'x')"), &[]).unwrap();
    }
    let literal = db.sql_stats();
    assert_eq!(
        literal.parse_count_hard - bound.parse_count_hard,
        100,
        "every literal statement is a hard parse"
    );
    assert_eq!(literal.execute_count - before.execute_count, 200);
    s.execute("COMMIT", &[]).unwrap();

    // v$sql shows the shared pool as a DBA reads it: the bind text once, with its 100
    // parse calls; the literal texts one row each, with one.
    let pool = s
        .execute(
            "SELECT sql_text, parse_calls, first_load_time, last_active_time FROM v$sql \
             WHERE sql_text LIKE 'INSERT INTO t VALUES%' ORDER BY parse_calls DESC, sql_text",
            &[],
        )
        .unwrap();
    let rows = pool.rows();
    assert_eq!(rows.len(), 101);
    assert_eq!(rows[0][..2], [Value::Text("INSERT INTO t VALUES ($1, $2)".into()), Value::Int(100)]);
    assert!(rows[1..].iter().all(|r| r[1] == Value::Int(1)), "{:?}", &rows[1..3]);
    let Value::Text(loaded) = &rows[0][2] else { panic!("{:?}", rows[0]) };
    assert_eq!(loaded.len(), "2026-11-26 10:29:23".len(), "{loaded}");
    assert!(rows[0][3] >= rows[0][2], "last active at or after the load");
}

/// v$sql's executions: the lesson of seed 004 read from one row. A statement prepared
/// once and run many times shows one parse call per prepare and all its executions, from
/// every session; an array insert is one execution of many rows; each statement of a
/// multi-statement call is an execution of its own text.
#[test]
fn v_sql_counts_the_executions_rows_and_time_of_each_statement() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let mut other = db.session();
    s.execute("CREATE TABLE e (id BIGINT PRIMARY KEY, v TEXT)", &[]).unwrap();
    let insert = "INSERT INTO e VALUES ($1, 'x')";
    let (mine, theirs) = (s.prepare(insert).unwrap(), other.prepare(insert).unwrap());
    for i in 0..30i64 {
        s.execute_prepared(&mine, &[Value::Int(i)]).unwrap();
        other.execute_prepared(&theirs, &[Value::Int(100 + i)]).unwrap();
    }
    let rows: Vec<Vec<Value>> = (200..210i64).map(|i| vec![Value::Int(i)]).collect();
    assert_eq!(s.execute_many(&mine, &rows).unwrap(), 10);
    // A failing execution is an execution that processed nothing.
    assert!(s.execute_prepared(&mine, &[Value::Int(0)]).is_err());
    s.execute_batch("COMMIT; SELECT v FROM e WHERE id < 5; COMMIT").unwrap();
    other.execute("COMMIT", &[]).unwrap();
    let select = s.prepare("SELECT id FROM e WHERE id >= $1").unwrap();
    let mut cursor = s.query(&select, &[Value::Int(205)]).unwrap();
    assert_eq!(cursor.fetch(100).len(), 5);

    let sql = "SELECT executions, parse_calls, rows_processed, elapsed_time FROM v$sql WHERE sql_text = $1";
    let stats = |s: &mut db::Session, text: &str| -> Vec<i64> {
        let r = s.execute(sql, &[Value::Text(text.into())]).unwrap();
        assert_eq!(r.rows().len(), 1, "{text}: {:?}", r.rows());
        r.rows()[0].iter().map(|v| if let Value::Int(n) = v { *n } else { panic!("{v:?}") }).collect()
    };
    let inserted = stats(&mut s, insert);
    assert_eq!(inserted[..3], [30 + 30 + 1 + 1, 2, 30 + 30 + 10], "executions, parse calls, rows");
    assert!(inserted[3] > 0, "timed: elapsed time adds up");
    assert_eq!(stats(&mut s, "COMMIT")[..3], [3, 3, 0]);
    assert_eq!(stats(&mut s, "SELECT v FROM e WHERE id < 5")[..3], [1, 1, 5]);
    assert_eq!(stats(&mut s, "SELECT id FROM e WHERE id >= $1")[..3], [1, 1, 5]);
    // Describing is no execution.
    let show = s.prepare("SHOW PARAMETER commit_wait").unwrap();
    s.describe_prepared(&show).unwrap();
    assert_eq!(stats(&mut s, "SHOW PARAMETER commit_wait")[..2], [0, 1]);
    // An UPDATE opened as a cursor processed the rows it changed.
    let update = s.prepare("UPDATE e SET v = 'y' WHERE id < $1").unwrap();
    s.query(&update, &[Value::Int(3)]).unwrap();
    assert_eq!(stats(&mut s, "UPDATE e SET v = 'y' WHERE id < $1")[..3], [1, 1, 3]);
    // Untimed executions are counted, without time.
    s.execute("ALTER SESSION SET timed_statistics = FALSE", &[]).unwrap();
    s.execute("SELECT 42", &[]).unwrap();
    assert_eq!(stats(&mut s, "SELECT 42"), [1, 1, 1, 0]);
}

#[test]
fn commits_inside_one_call_wait_once_at_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)", &[]).unwrap();
    let script: String = (0..50).map(|i| format!("INSERT INTO t VALUES ({i}); COMMIT;")).collect();
    let syncs_before = s.redo().stats().get(Stat::RedoSynchWrites);
    let deferred_before = db.sql_stats().commits_deferred_by_call;
    s.execute_batch(&script).unwrap();
    assert_eq!(db.sql_stats().commits_deferred_by_call - deferred_before, 50);
    assert!(
        s.redo().stats().get(Stat::RedoSynchWrites) - syncs_before <= 1,
        "50 commits, at most one wait for durability"
    );
    assert!(db.log().durable_lsn() >= db.log().reserved_end(), "the call returns with everything durable");
    // Switched off, every commit waits.
    s.execute("ALTER SESSION SET call_commit_optimization = FALSE", &[]).unwrap();
    let script: String = (50..60).map(|i| format!("INSERT INTO t VALUES ({i}); COMMIT;")).collect();
    let syncs_before = s.redo().stats().get(Stat::RedoSynchWrites);
    s.execute_batch(&script).unwrap();
    assert_eq!(s.redo().stats().get(Stat::RedoSynchWrites) - syncs_before, 10);
}

#[test]
fn the_deprecated_commit_write_comes_back_as_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("ALTER SESSION SET commit_write = 'batch,nowait'", &[]).unwrap();
    let notices = s.take_notices();
    assert_eq!(notices.len(), 1);
    assert!(notices[0]
        .message
        .contains("COMMIT_WRITE is deprecated, use COMMIT_LOGGING and COMMIT_WAIT instead"));
    assert_eq!((notices[0].severity, notices[0].sqlstate), (db::Severity::Warning, "01P01"));
    assert!(s.take_notices().is_empty());
    let show = s.execute("SHOW PARAMETER commit_wait", &[]).unwrap();
    assert_eq!(show.rows()[0][2], Value::Text("NOWAIT".into()));
}

#[test]
fn a_prepared_statement_runs_many_times_without_parsing_and_fetches_in_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE p (id BIGINT PRIMARY KEY, v TEXT)", &[]).unwrap();
    let insert = s.prepare("INSERT INTO p VALUES ($1, $2)").unwrap();
    let parses = db.sql_stats().parse_count_total;
    for i in 0..100i64 {
        s.execute_prepared(&insert, &[Value::Int(i), Value::Text(format!("v{i}"))]).unwrap();
    }
    assert_eq!(db.sql_stats().parse_count_total, parses, "executing a prepared statement parses nothing");
    s.execute("COMMIT", &[]).unwrap();

    let select = s.prepare("SELECT id, v FROM p WHERE id >= $1 ORDER BY id").unwrap();
    let mut cursor = s.query(&select, &[Value::Int(50)]).unwrap();
    assert_eq!(cursor.columns().len(), 2);
    let mut sizes = Vec::new();
    while !cursor.is_exhausted() {
        sizes.push(cursor.fetch(15).len());
    }
    assert_eq!(sizes, vec![15, 15, 15, 5]);
    assert_eq!(cursor.rows_fetched(), 50);
    assert!(cursor.fetch(15).is_empty());
    cursor.close();
}

#[test]
fn execute_many_inserts_an_array_of_rows_as_one_statement() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE a (id BIGINT PRIMARY KEY, v TEXT NOT NULL)", &[]).unwrap();
    let insert = s.prepare("INSERT INTO a VALUES ($1, $2)").unwrap();
    let rows: Vec<Vec<Value>> = (0..500i64).map(|i| vec![Value::Int(i), Value::Text("x".into())]).collect();
    assert_eq!(s.execute_many(&insert, &rows).unwrap(), 500);
    // One bad row (NULL into NOT NULL) and none of the array takes effect.
    let mut bad: Vec<Vec<Value>> =
        (500..510i64).map(|i| vec![Value::Int(i), Value::Text("y".into())]).collect();
    bad[7][1] = Value::Null;
    assert_eq!(s.execute_many(&insert, &bad).unwrap_err().sqlstate(), "23502");
    s.execute("COMMIT", &[]).unwrap();
    let count = s.execute("SELECT count(*) FROM a", &[]).unwrap();
    assert_eq!(count.rows()[0][0], Value::Int(500));
}
