//! Data-modifying statements in WITH through `Session::execute`: moving rows, counting
//! RETURNING rows, several in one statement, each part run once to completion, every
//! part on the statement's snapshot, PostgreSQL 15's errors, the undo of the whole
//! statement, Describe without running it, and the changes replayed after a reopen.
//! Every expected result is PostgreSQL 15's for the same statements.

use crate::common::{fails, one, open, pipe_rows, run};
use db::sql::QueryResult;
use db::{Session, Value};

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE a (id INT PRIMARY KEY, v TEXT)");
    run(s, "CREATE TABLE b (id INT PRIMARY KEY, v TEXT)");
    run(s, "INSERT INTO a SELECT g, 'v' || g FROM generate_series(1, 5) g");
    run(s, "COMMIT");
}

fn rows_of(s: &mut Session, table: &str) -> Vec<String> {
    pipe_rows(s, &format!("SELECT id, v FROM {table} ORDER BY id"))
}

#[test]
fn data_modifying_with_queries_move_update_and_insert_rows_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let moved = run(
        &mut s,
        "WITH moved AS (DELETE FROM a WHERE id >= 3 RETURNING *) INSERT INTO b SELECT * FROM moved",
    );
    assert_eq!((moved.tag().as_ref(), moved.rows_affected()), ("INSERT 0 3", 3));
    assert_eq!(rows_of(&mut s, "a"), ["1|v1", "2|v2"]);
    assert_eq!(rows_of(&mut s, "b"), ["3|v3", "4|v4", "5|v5"]);
    assert_eq!(one(&mut s, "WITH u AS (UPDATE b SET v = v || '!' RETURNING id) SELECT count(*) FROM u"), "3");
    // The outer query reads the table as the statement began: not the rows inserted.
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH i AS (INSERT INTO a VALUES (10, 'n'), (11, 'm') RETURNING id) \
             SELECT id, (SELECT count(*) FROM a) AS seen FROM i ORDER BY id"
        ),
        ["10|2", "11|2"]
    );
    // Several in one statement, one reading another's RETURNING rows.
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH i AS (INSERT INTO a VALUES (20, 'p') RETURNING *), \
                  j AS (INSERT INTO b SELECT id, v || 'b' FROM i RETURNING *), \
                  k AS (UPDATE a SET v = 'q' WHERE id = 1 RETURNING *) \
             SELECT (SELECT count(*) FROM i) AS i, (SELECT count(*) FROM j) AS j, (SELECT v FROM k) AS k, \
                    (SELECT count(*) FROM b) AS b_seen"
        ),
        ["1|1|q|3"]
    );
    assert_eq!(rows_of(&mut s, "a"), ["1|q", "2|v2", "10|n", "11|m", "20|p"]);
    assert_eq!(rows_of(&mut s, "b"), ["3|v3!", "4|v4!", "5|v5!", "20|pb"]);
    // Run to completion though the outer query reads one row, or none.
    assert_eq!(
        pipe_rows(&mut s, "WITH d AS (DELETE FROM b RETURNING *) SELECT 1 AS one FROM d LIMIT 1"),
        ["1"]
    );
    assert_eq!(one(&mut s, "SELECT count(*) FROM b"), "0");
    assert_eq!(pipe_rows(&mut s, "WITH d AS (DELETE FROM a WHERE id = 11) SELECT 1 AS one"), ["1"]);
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH d AS (DELETE FROM a WHERE id = 20 RETURNING *) \
             SELECT d.v, (SELECT count(*) FROM a WHERE id = 20) AS seen FROM d"
        ),
        ["p|1"]
    );
    run(&mut s, "COMMIT");
    // The transaction's own earlier changes are part of the snapshot; the statement's
    // own are not, to any part of it.
    run(&mut s, "INSERT INTO a VALUES (50, 'own')");
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH d AS (DELETE FROM a WHERE id = 50 RETURNING v) \
             SELECT d.v, (SELECT count(*) FROM a WHERE id = 50) AS seen FROM d"
        ),
        ["own|1"]
    );
    assert_eq!(one(&mut s, "SELECT count(*) FROM a WHERE id = 50"), "0");
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH i AS (INSERT INTO a VALUES (60, 'new') RETURNING id), \
                  u AS (UPDATE a SET v = 'touched' WHERE id >= 50 RETURNING id) \
             SELECT (SELECT count(*) FROM i) AS i, (SELECT count(*) FROM u) AS u"
        ),
        ["1|0"]
    );
    // The same by key: the UPDATE does not find the row the INSERT added.
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH i AS (INSERT INTO a VALUES (70, 'r') RETURNING id) UPDATE a SET v = 'upd' WHERE id = 70 RETURNING *"
        ),
        Vec::<String>::new()
    );
    assert_eq!(rows_of(&mut s, "a"), ["1|q", "2|v2", "10|n", "60|new", "70|r"]);
    run(&mut s, "COMMIT");
    // WITH before the statement's own INSERT, UPDATE or DELETE.
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH x AS (SELECT 1 AS n) INSERT INTO a SELECT n + 100, 'w' FROM x RETURNING id, v"
        ),
        ["101|w"]
    );
    let updated = run(
        &mut s,
        "WITH x AS (SELECT 101 AS n) UPDATE a SET v = 'vv' WHERE id IN (SELECT n FROM x) RETURNING *",
    );
    assert_eq!(updated.tag(), "UPDATE 1");
    assert_eq!(updated.rows(), [vec![Value::Int(101), Value::Text("vv".into())]]);
    let deleted = run(&mut s, "WITH x AS (SELECT 101 AS n) DELETE FROM a WHERE id IN (SELECT n FROM x)");
    assert_eq!((deleted.tag().as_ref(), deleted.columns().len()), ("DELETE 1", 0));
    assert_eq!(
        one(&mut s, "WITH u AS (UPDATE a SET v = v || '+' RETURNING id, v) SELECT string_agg(v, ',' ORDER BY id) FROM u"),
        "q+,v2+,n+,new+,r+"
    );
    // A bind parameter in a data-modifying WITH query.
    let doubled = s
        .execute(
            "WITH i AS (INSERT INTO a VALUES ($1, $2) RETURNING id) SELECT id * 2 AS twice FROM i",
            &[Value::Int(80), Value::Text("bound".into())],
        )
        .unwrap();
    assert_eq!(doubled.rows(), [vec![Value::Int(160)]]);
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT v FROM a WHERE id = 80"), "bound");
}

#[test]
fn data_modifying_with_fails_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let top_level = "WITH clause containing a data-modifying statement must be at the top level";
    for (sql, position) in [
        ("SELECT * FROM (WITH d AS (DELETE FROM a RETURNING *) SELECT * FROM d) s", 21),
        ("SELECT (WITH d AS (DELETE FROM a RETURNING id) SELECT count(*) FROM d)", 14),
        ("WITH x AS (WITH d AS (DELETE FROM a RETURNING *) SELECT * FROM d) SELECT * FROM x", 17),
        ("INSERT INTO b WITH d AS (DELETE FROM a RETURNING *) SELECT * FROM d", 20),
    ] {
        let e = fails(&mut s, sql);
        assert_eq!(
            (e.sqlstate(), e.to_string().as_str(), e.position()),
            ("0A000", top_level, Some(position)),
            "{sql}"
        );
    }
    let e = fails(&mut s, "WITH d AS (DELETE FROM a WHERE id = 1) SELECT * FROM d");
    assert_eq!(
        (e.sqlstate(), e.to_string().as_str(), e.position()),
        ("0A000", "WITH query \"d\" does not have a RETURNING clause", Some(54))
    );
    let e = fails(&mut s, "CREATE VIEW gone AS WITH d AS (DELETE FROM a RETURNING *) SELECT * FROM d");
    assert_eq!(
        (e.sqlstate(), e.to_string().as_str()),
        ("0A000", "views must not contain data-modifying statements in WITH")
    );
    let e = fails(&mut s, "CREATE TABLE gone AS WITH d AS (DELETE FROM a RETURNING *) SELECT * FROM d");
    assert_eq!(e.sqlstate(), "0A000");
    assert_eq!(one(&mut s, "SELECT count(*) FROM a"), "5", "nothing ran");
    let e = fails(&mut s, "EXPLAIN WITH d AS (DELETE FROM a RETURNING *) SELECT * FROM d");
    assert_eq!(e.sqlstate(), "0A000");
}

#[test]
fn a_failure_in_any_part_undoes_the_whole_statement() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    run(&mut s, "INSERT INTO b VALUES (3, 'taken')");
    run(&mut s, "COMMIT");
    // The outer INSERT fails: the DELETE before it is undone.
    let e = fails(&mut s, "WITH d AS (DELETE FROM a RETURNING *) INSERT INTO b SELECT * FROM d");
    assert_eq!(e.sqlstate(), "23505");
    assert_eq!(one(&mut s, "SELECT count(*) FROM a"), "5");
    // A later WITH query fails: the earlier one is undone.
    let e = fails(
        &mut s,
        "WITH d AS (DELETE FROM a WHERE id = 1 RETURNING *), x AS (INSERT INTO b VALUES (3, 'dup') RETURNING *) SELECT 1",
    );
    assert_eq!(e.sqlstate(), "23505");
    // The outer query fails on the rows of the change.
    let e = fails(&mut s, "WITH d AS (DELETE FROM a WHERE id = 1 RETURNING *) SELECT 1 / 0 FROM d");
    assert_eq!(e.sqlstate(), "22012");
    assert_eq!(one(&mut s, "SELECT count(*) FROM a"), "5");
    assert_eq!(rows_of(&mut s, "b"), ["3|taken"]);
    // The transaction goes on, and its ROLLBACK takes back a statement that succeeded.
    run(&mut s, "WITH d AS (DELETE FROM a WHERE id <= 2 RETURNING *) INSERT INTO b SELECT * FROM d");
    assert_eq!(rows_of(&mut s, "b"), ["1|v1", "2|v2", "3|taken"]);
    run(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, "SELECT count(*) FROM a"), "5");
    assert_eq!(rows_of(&mut s, "b"), ["3|taken"]);
}

#[test]
fn describe_tells_the_columns_of_a_data_modifying_with_without_running_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let query =
        s.prepare("WITH d AS (DELETE FROM a WHERE id > $1 RETURNING id, v) SELECT v, id FROM d").unwrap();
    assert!(query.returns_rows());
    assert!(!query.is_query(), "it changes rows: no cursor may hold it");
    let d = s.describe_prepared(&query).unwrap();
    let columns: Vec<(String, Option<db::DataType>)> =
        d.columns.unwrap().into_iter().map(|c| (c.name, c.ty)).collect();
    assert_eq!(
        columns,
        [
            ("v".to_string(), Some(db::DataType::Text { max_chars: None })),
            ("id".to_string(), Some(db::DataType::Int))
        ]
    );
    let insert = s.prepare("WITH d AS (DELETE FROM a RETURNING *) INSERT INTO b SELECT * FROM d").unwrap();
    assert!(!insert.returns_rows());
    assert_eq!(s.describe_prepared(&insert).unwrap().columns, None);
    assert_eq!(one(&mut s, "SELECT count(*) FROM a"), "5", "describing deleted nothing");
    match s.execute_prepared(&query, &[Value::Int(3)]).unwrap() {
        QueryResult::Rows { rows, .. } => assert_eq!(rows.len(), 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_changes_of_a_data_modifying_with_are_logged_and_replayed_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        setup(&mut s);
        run(
            &mut s,
            "WITH moved AS (DELETE FROM a WHERE id >= 3 RETURNING *) INSERT INTO b SELECT * FROM moved",
        );
        run(
            &mut s,
            "WITH u AS (UPDATE a SET v = 'kept' RETURNING *), i AS (INSERT INTO b SELECT id + 10, v FROM u RETURNING id) \
             SELECT count(*) FROM i",
        );
        run(&mut s, "COMMIT");
        // Rolled back: not replayed.
        run(&mut s, "WITH d AS (DELETE FROM b RETURNING *) INSERT INTO a SELECT id + 100, v FROM d");
        run(&mut s, "ROLLBACK");
    }
    let db = open(dir.path());
    assert!(db.recovery_report().transactions >= 2, "replayed from the redo: {:?}", db.recovery_report());
    let mut s = db.session();
    assert_eq!(rows_of(&mut s, "a"), ["1|kept", "2|kept"]);
    assert_eq!(rows_of(&mut s, "b"), ["3|v3", "4|v4", "5|v5", "11|kept", "12|kept"]);
}

#[test]
fn data_modifying_with_meets_recursion_joins_upserts_keys_sequences_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE a (id INT PRIMARY KEY, v TEXT)");
    run(&mut s, "CREATE TABLE b (id INT PRIMARY KEY, v TEXT)");
    run(&mut s, "INSERT INTO a VALUES (1, 'x'), (2, 'y'), (3, 'z')");
    run(&mut s, "INSERT INTO b VALUES (1, 'bx'), (2, 'by')");
    assert_eq!(
        one(
            &mut s,
            "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3), \
                            i AS (INSERT INTO a SELECT n + 200, 'r' FROM r RETURNING id) SELECT count(*) AS c FROM i"
        ),
        "3"
    );
    // UPDATE ... FROM the RETURNING rows of a DELETE.
    let updated = run(
        &mut s,
        "WITH x AS (DELETE FROM b RETURNING *) UPDATE a SET v = x.v FROM x WHERE a.id = x.id RETURNING a.*",
    );
    assert_eq!(updated.tag(), "UPDATE 2");
    assert_eq!(rows_of(&mut s, "a"), ["1|bx", "2|by", "3|z", "201|r", "202|r", "203|r"]);
    assert_eq!(rows_of(&mut s, "b"), Vec::<String>::new());
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH i AS (INSERT INTO a VALUES (1, 'conf'), (300, 'new') ON CONFLICT (id) DO UPDATE SET v = excluded.v \
             RETURNING *) SELECT * FROM i ORDER BY id"
        ),
        ["1|conf", "300|new"]
    );
    // Foreign keys are checked against the rows as the statement leaves them.
    run(&mut s, "CREATE TABLE parent (id INT PRIMARY KEY)");
    run(&mut s, "CREATE TABLE child (id INT PRIMARY KEY, p INT REFERENCES parent (id))");
    run(
        &mut s,
        "WITH p AS (INSERT INTO parent VALUES (7) RETURNING id) INSERT INTO child SELECT 1, id FROM p",
    );
    run(&mut s, "WITH c AS (DELETE FROM child RETURNING p) DELETE FROM parent WHERE id IN (SELECT p FROM c)");
    assert_eq!(one(&mut s, "SELECT count(*) FROM parent"), "0");
    run(&mut s, "CREATE TABLE s (id SERIAL PRIMARY KEY, v TEXT)");
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH i AS (INSERT INTO s (v) VALUES ('x'), ('y') RETURNING id, v) SELECT * FROM i ORDER BY id"
        ),
        ["1|x", "2|y"]
    );
    // A row two parts change: the later one finds it changed and leaves it alone.
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH d AS (DELETE FROM a WHERE id = 300 RETURNING *), d2 AS (DELETE FROM a WHERE id = 300 RETURNING *) \
             SELECT (SELECT count(*) FROM d) AS d, (SELECT count(*) FROM d2) AS d2"
        ),
        ["1|0"]
    );
    // Read twice, run once.
    assert_eq!(
        pipe_rows(
            &mut s,
            "WITH d AS (UPDATE a SET v = 'once' WHERE id = 2 RETURNING *) SELECT * FROM d, d AS e"
        ),
        ["2|once|2|once"]
    );
    // MERGE after a WITH runs; MERGE as a WITH query is PostgreSQL 15's 0A000.
    run(
        &mut s,
        "WITH x AS (SELECT 1 AS id) MERGE INTO a USING x ON a.id = x.id WHEN MATCHED THEN UPDATE SET v = 'm'",
    );
    assert_eq!(
        pipe_rows(&mut s, "WITH d AS (DELETE FROM a WHERE id = 1 RETURNING *) SELECT * FROM a WHERE id IN (SELECT id FROM d)"),
        ["1|m"]
    );
    let e = fails(
        &mut s,
        "WITH m AS (MERGE INTO a USING (SELECT 2 AS id) x ON a.id = x.id WHEN MATCHED THEN DELETE) SELECT 1",
    );
    assert_eq!((e.sqlstate(), e.to_string().as_str()), ("0A000", "MERGE not supported in WITH query"));
    run(&mut s, "COMMIT");
    assert_eq!(rows_of(&mut s, "a"), ["2|once", "3|z", "201|r", "202|r", "203|r"]);
}
