//! Sequences through `Session::execute` (issue 20): CREATE SEQUENCE in PostgreSQL's and
//! Oracle's words, nextval/currval/setval/lastval and Oracle's seq.NEXTVAL, SERIAL and
//! IDENTITY columns; values never handed out twice, across sessions, rollbacks, reopens
//! and a crash (values may be skipped), as the user would see them.

use std::collections::BTreeSet;

use crate::common::{fails, open, run};
use db::{Session, Value};

fn int(s: &mut Session, sql: &str) -> i64 {
    match run(s, sql).rows() {
        [row] => match row[0] {
            Value::Int(v) => v,
            ref other => panic!("{sql}: {other:?}"),
        },
        rows => panic!("{sql}: {rows:?}"),
    }
}

#[test]
fn sequences_count_as_declared_in_postgres_and_oracle_words() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE SEQUENCE s");
    assert_eq!(int(&mut s, "SELECT nextval('s')"), 1);
    assert_eq!(int(&mut s, "SELECT nextval('s')"), 2);
    assert_eq!(int(&mut s, "SELECT currval('s')"), 2);
    assert_eq!(int(&mut s, "SELECT lastval()"), 2);
    // Not transactional: a rollback gives nothing back.
    run(&mut s, "SELECT nextval('s')");
    run(&mut s, "ROLLBACK");
    assert_eq!(int(&mut s, "SELECT nextval('s')"), 4);

    run(&mut s, "CREATE SEQUENCE down INCREMENT BY -5 START WITH 100 MINVALUE 90 MAXVALUE 100 CYCLE");
    let values: Vec<i64> = (0..4).map(|_| int(&mut s, "SELECT nextval('down')")).collect();
    assert_eq!(values, [100, 95, 90, 100], "CYCLE starts over at the other end");
    run(&mut s, "CREATE SEQUENCE small AS smallint START 32766");
    assert_eq!(int(&mut s, "SELECT nextval('small')"), 32766);
    assert_eq!(int(&mut s, "SELECT nextval('small')"), 32767);
    assert_eq!(fails(&mut s, "SELECT nextval('small')").sqlstate(), "2200H");

    // Oracle's words and calls.
    run(&mut s, "CREATE SEQUENCE ora START WITH 10 INCREMENT BY 10 NOCACHE NOCYCLE NOMAXVALUE NOORDER");
    assert_eq!(int(&mut s, "SELECT ora.NEXTVAL FROM dual"), 10);
    assert_eq!(int(&mut s, "SELECT ora.nextval"), 20);
    assert_eq!(int(&mut s, "SELECT ora.CURRVAL"), 20);

    // setval: the next value follows it, or is it when not called.
    assert_eq!(int(&mut s, "SELECT setval('s', 100)"), 100);
    assert_eq!(int(&mut s, "SELECT nextval('s')"), 101);
    run(&mut s, "SELECT setval('s', 500, false)");
    assert_eq!(int(&mut s, "SELECT nextval('s')"), 500);
    assert_eq!(fails(&mut s, "SELECT setval('small', 40000)").sqlstate(), "22003");

    // Each row gets its own value; the sequence's row says how far values are reserved.
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    run(&mut s, "CREATE SEQUENCE ids");
    run(&mut s, "INSERT INTO t VALUES (nextval('ids'), 'a'), (nextval('ids'), 'b'), (nextval('ids'), 'c')");
    run(&mut s, "INSERT INTO t SELECT nextval('ids'), v || '2' FROM t");
    run(&mut s, "COMMIT");
    assert_eq!(int(&mut s, "SELECT count(DISTINCT id) FROM t"), 6);
    assert_eq!(int(&mut s, "SELECT max(id) FROM t"), 6);
    assert!(int(&mut s, "SELECT last_value FROM ids") >= 6);

    // Another session has its own currval.
    let mut other = db.session();
    assert_eq!(fails(&mut other, "SELECT currval('ids')").sqlstate(), "55000");
    assert_eq!(int(&mut other, "SELECT nextval('ids')"), 7);
    assert_eq!(int(&mut s, "SELECT currval('ids')"), 6);

    let errors = [
        ("SELECT nextval('nothing')", "42P01"),
        ("SELECT nextval('t')", "42809"),
        ("INSERT INTO ids VALUES (1, 0, true)", "42809"),
        ("UPDATE ids SET last_value = 0", "42809"),
        ("DROP TABLE ids", "42809"),
        ("DROP SEQUENCE t", "42809"),
        ("CREATE SEQUENCE bad INCREMENT 0", "22023"),
        ("CREATE SEQUENCE bad START 5 MAXVALUE 3", "22023"),
        ("CREATE SEQUENCE s", "42P07"),
    ];
    for (sql, sqlstate) in errors {
        assert_eq!(fails(&mut s, sql).sqlstate(), sqlstate, "{sql}");
        let _ = s.execute("ROLLBACK", &[]);
    }
    run(&mut s, "CREATE SEQUENCE IF NOT EXISTS s");
    run(&mut s, "DROP SEQUENCE s, down");
    run(&mut s, "DROP SEQUENCE IF EXISTS s");
    assert_eq!(fails(&mut s, "SELECT nextval('s')").sqlstate(), "42P01");
}

#[test]
fn serial_and_identity_columns_number_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE items (id SERIAL PRIMARY KEY, name TEXT)");
    run(&mut s, "INSERT INTO items (name) VALUES ('a'), ('b')");
    run(&mut s, "INSERT INTO items (id, name) VALUES (100, 'given')");
    run(&mut s, "INSERT INTO items (name) VALUES ('c') RETURNING id");
    run(&mut s, "COMMIT");
    let ids: Vec<i64> = run(&mut s, "SELECT id FROM items ORDER BY id")
        .rows()
        .iter()
        .map(|r| match r[0] {
            Value::Int(v) => v,
            _ => panic!(),
        })
        .collect();
    assert_eq!(ids, [1, 2, 3, 100]);
    assert_eq!(int(&mut s, "SELECT currval('items_id_seq')"), 3);

    run(&mut s, "CREATE TABLE orders (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 1000 INCREMENT BY 10), item INTEGER)");
    run(&mut s, "INSERT INTO orders (item) VALUES (1), (2)");
    assert_eq!(int(&mut s, "SELECT max(id) FROM orders"), 1010);
    assert_eq!(fails(&mut s, "INSERT INTO orders (id, item) VALUES (5, 3)").sqlstate(), "428C9");
    run(&mut s, "ROLLBACK");
    run(&mut s, "CREATE TABLE notes (id INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, body TEXT)");
    run(&mut s, "INSERT INTO notes (id, body) VALUES (50, 'mine')");
    run(&mut s, "INSERT INTO notes (body) VALUES ('next')");
    assert_eq!(int(&mut s, "SELECT min(id) FROM notes"), 1);
    run(&mut s, "COMMIT");
    // The table's sequences go with it.
    run(&mut s, "DROP TABLE items");
    assert_eq!(fails(&mut s, "SELECT nextval('items_id_seq')").sqlstate(), "42P01");
    assert_eq!(
        fails(&mut s, "CREATE TABLE bad (id SERIAL DEFAULT 5)").sqlstate(),
        "42601",
        "a default and an identity at once"
    );
}

#[test]
fn no_value_is_handed_out_twice_across_reopens_and_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = BTreeSet::new();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE SEQUENCE s CACHE 5");
        run(&mut s, "CREATE TABLE t (id SERIAL PRIMARY KEY, n INTEGER)");
        for _ in 0..10 {
            assert!(seen.insert(int(&mut s, "SELECT nextval('s')")));
        }
        run(&mut s, "INSERT INTO t (n) VALUES (1), (2), (3)");
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        for _ in 0..3 {
            assert!(seen.insert(int(&mut s, "SELECT nextval('s')")));
        }
        // The values left in memory go with the database, as in a crash: lost, never
        // reused (what is durable is the reservation in the sequence's row).
    }
    for round in 0..2 {
        let db = open(dir.path());
        db.snapshot().verify_indexes().unwrap();
        let mut s = db.session();
        for _ in 0..40 {
            let v = int(&mut s, "SELECT nextval('s')");
            assert!(seen.insert(v), "round {round}: {v} handed out twice ({seen:?})");
        }
        run(&mut s, "INSERT INTO t (n) VALUES (4)");
        run(&mut s, "COMMIT");
        assert_eq!(int(&mut s, "SELECT count(DISTINCT id) FROM t"), 4 + round);
    }
}

#[test]
fn alter_sequence_changes_the_options_given_and_restarts_where_told() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        // The same statements as PostgreSQL 15.20, with its answers.
        run(&mut s, "CREATE SEQUENCE s");
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 1);
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 2);
        run(&mut s, "ALTER SEQUENCE s INCREMENT BY 10");
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 12);
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 22);
        run(&mut s, "ALTER SEQUENCE s RESTART WITH 100");
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 100);
        run(&mut s, "ALTER SEQUENCE s RESTART");
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 1, "RESTART alone goes back to START");
        run(&mut s, "ALTER SEQUENCE s START WITH 50 RESTART");
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 50);
        run(&mut s, "ALTER SEQUENCE s MAXVALUE 75");
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 60);
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 70);
        assert_eq!(fails(&mut s, "SELECT nextval('s')").sqlstate(), "2200H");
        // Oracle's words, in any order.
        run(&mut s, "ALTER SEQUENCE s MINVALUE 5 CYCLE");
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 5);
        run(&mut s, "ALTER SEQUENCE s NOCACHE INCREMENT BY 1");
        assert_eq!(int(&mut s, "SELECT nextval('s')"), 6);
        // Other sessions see the new definition at their next call.
        let mut other = db.session();
        assert_eq!(int(&mut other, "SELECT nextval('s')"), 7);

        for (sql, state) in [
            ("ALTER SEQUENCE s RESTART WITH 1", "22023"),
            ("ALTER SEQUENCE s MINVALUE 80", "22023"),
            ("ALTER SEQUENCE s INCREMENT BY 0", "22023"),
            ("ALTER SEQUENCE nope RESTART", "42P01"),
            ("ALTER SEQUENCE s RENAME TO t", "0A000"),
            ("ALTER SEQUENCE s INCREMENT BY", "42601"),
        ] {
            assert_eq!(fails(&mut s, sql).sqlstate(), state, "{sql}");
        }
        run(&mut s, "ALTER SEQUENCE IF EXISTS nope RESTART");
        assert_eq!(s.take_notices().len(), 1, "a notice that nope does not exist");
        // A table is not a sequence.
        run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY)");
        assert_eq!(fails(&mut s, "ALTER SEQUENCE t RESTART").sqlstate(), "42809");
        run(&mut s, "ALTER SEQUENCE s RESTART WITH 40");
    }
    // The altered definition and the restart are durable.
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(int(&mut s, "SELECT nextval('s')"), 40);
    assert_eq!(int(&mut s, "SELECT nextval('s')"), 41);
    run(&mut s, "SELECT setval('s', 75)");
    assert_eq!(int(&mut s, "SELECT nextval('s')"), 5, "MAXVALUE 75 MINVALUE 5 CYCLE kept");
}
