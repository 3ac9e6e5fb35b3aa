//! Temporary tables through `Session::execute` (issue 20), each expected result and
//! message checked against PostgreSQL 15: seen by their session only, before a permanent
//! table of the same name; gone with the session; never in the redo log or a checkpoint
//! image; transactional (ROLLBACK, savepoints, ON COMMIT DELETE ROWS / DROP); keys,
//! UNIQUE and indexes; the catalog's view of them; PostgreSQL's errors.

use crate::common::{fails, one, open, pipe_rows, run};
use db::{Session, Value};

fn redo_size(s: &mut Session) -> i64 {
    one(s, "SELECT value FROM v$sysstat WHERE name = 'redo size'").parse().unwrap()
}

#[test]
fn a_temporary_table_hides_the_permanent_one_for_its_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = db.session();
    let mut b = db.session();
    run(&mut a, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)");
    run(&mut a, "INSERT INTO t VALUES (1, 'permanent')");
    run(&mut a, "COMMIT");
    run(&mut a, "CREATE TEMP TABLE t (id INT PRIMARY KEY, v TEXT NOT NULL, UNIQUE (v))");
    run(&mut a, "INSERT INTO t VALUES (1, 'temp a')");
    run(&mut a, "COMMIT");
    assert_eq!(pipe_rows(&mut a, "SELECT * FROM t"), ["1|temp a"]);
    assert_eq!(pipe_rows(&mut a, "SELECT t.v FROM t WHERE t.id = 1"), ["temp a"]);
    assert_eq!(pipe_rows(&mut a, "SELECT * FROM public.t"), ["1|permanent"]);
    assert_eq!(pipe_rows(&mut a, "SELECT * FROM pg_temp.t"), ["1|temp a"]);
    // Another session sees the permanent table, and makes a temporary one of its own.
    assert_eq!(pipe_rows(&mut b, "SELECT * FROM t"), ["1|permanent"]);
    run(&mut b, "CREATE TEMPORARY TABLE t (id INT PRIMARY KEY, v TEXT NOT NULL, UNIQUE (v))");
    assert_eq!(pipe_rows(&mut b, "SELECT count(*) FROM t"), ["0"]);
    run(&mut b, "INSERT INTO t VALUES (1, 'temp a')");
    run(&mut b, "UPDATE t SET v = 'temp b' WHERE id = 1");
    run(&mut b, "COMMIT");
    assert_eq!(pipe_rows(&mut b, "SELECT * FROM t"), ["1|temp b"]);
    assert_eq!(pipe_rows(&mut a, "SELECT * FROM t"), ["1|temp a"]);
    // UPDATE, DELETE and a join go to the temporary table too.
    run(&mut a, "INSERT INTO t VALUES (2, 'two')");
    run(&mut a, "DELETE FROM t WHERE id = 1");
    run(&mut a, "COMMIT");
    assert_eq!(pipe_rows(&mut a, "SELECT t.v, p.v FROM t JOIN public.t p ON p.id < t.id"), ["two|permanent"]);
    // EXPLAIN names it, and its key, as written.
    let plan = pipe_rows(&mut a, "EXPLAIN SELECT * FROM t WHERE id = 2").join("\n");
    assert!(plan.contains("Index Scan using t_pkey on t") && !plan.contains("pg_temp"), "{plan}");
    // DROP TABLE drops the temporary one; the permanent one shows again.
    run(&mut a, "DROP TABLE t");
    assert_eq!(pipe_rows(&mut a, "SELECT * FROM t"), ["1|permanent"]);
    assert_eq!(pipe_rows(&mut b, "SELECT * FROM t"), ["1|temp b"]);
    // The session's end drops its temporary table.
    drop(b);
    let mut c = db.session();
    assert_eq!(pipe_rows(&mut c, "SELECT * FROM t"), ["1|permanent"]);
    let stored: Vec<String> = db.snapshot().schemas().map(|s| s.name.clone()).collect();
    assert_eq!(stored, ["t"], "no temporary table is left in the state");
}

#[test]
fn a_temporary_table_is_never_logged_nor_in_an_image_nor_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE keep (id INT PRIMARY KEY)");
        let before = redo_size(&mut s);
        run(&mut s, "CREATE TEMP TABLE scratch (id INT PRIMARY KEY, v TEXT)");
        run(&mut s, "CREATE INDEX scratch_v ON scratch (v)");
        for i in 0..100 {
            run(&mut s, &format!("INSERT INTO scratch VALUES ({i}, 'row {i}')"));
        }
        run(&mut s, "COMMIT");
        run(&mut s, "UPDATE scratch SET v = 'changed' WHERE id < 50");
        run(&mut s, "DELETE FROM scratch WHERE id >= 90");
        run(&mut s, "COMMIT");
        // ALTER TABLE of it: a rewrite, a rename there and back.
        run(&mut s, "ALTER TABLE scratch ADD COLUMN w INT DEFAULT 7");
        run(&mut s, "ALTER TABLE scratch RENAME TO renamed");
        assert_eq!(
            pipe_rows(&mut s, "SELECT id, v, w FROM renamed WHERE id IN (0, 60) ORDER BY id"),
            ["0|changed|7", "60|row 60|7"]
        );
        run(&mut s, "ALTER TABLE renamed RENAME TO scratch");
        assert_eq!(redo_size(&mut s), before, "no redo for a temporary table's DDL and rows");
        assert_eq!(one(&mut s, "SELECT count(*) FROM scratch"), "90");
        // A transaction over both logs the permanent table's row only.
        run(&mut s, "INSERT INTO keep VALUES (1)");
        run(&mut s, "INSERT INTO scratch VALUES (1000, 'mixed')");
        run(&mut s, "COMMIT");
        assert!(redo_size(&mut s) > before);
        // An image of the state while the temporary table lives holds none of it.
        let snapshot = db.snapshot();
        assert!(snapshot.schemas().any(|t| db::temp_tables::is_temporary(&t.name)));
        let mut image = Vec::new();
        db::checkpoint::encode_image(&mut image, 7, &snapshot).unwrap();
        let (decoded, _) = db::checkpoint::decode_image(&image, std::path::Path::new("image"), 7).unwrap();
        let names: Vec<&str> = decoded.schemas().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["keep"]);
        db.checkpoint().unwrap();
        run(&mut s, "INSERT INTO scratch VALUES (1001, 'after the image')");
        run(&mut s, "COMMIT");
        // The database closes with the session still open (its table still there); the
        // session's end then writes nothing, so the files reopened below are those a
        // crash here would leave (the wire test kills a server with -9 too).
        std::mem::drop(db);
        let _still_open = s;
    }
    let db = open(dir.path());
    let names: Vec<String> = db.snapshot().schemas().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["keep"], "nothing of the temporary table after a restart");
    let mut s = db.session();
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM keep"), ["1"]);
    assert_eq!(fails(&mut s, "SELECT * FROM scratch").sqlstate(), "42P01");
}

#[test]
fn rollback_savepoints_and_failed_statements_undo_a_temporary_tables_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TEMP TABLE t (id INT PRIMARY KEY, v TEXT NOT NULL, UNIQUE (v))");
    run(&mut s, "INSERT INTO t VALUES (1, 'temp')");
    run(&mut s, "COMMIT");
    run(&mut s, "INSERT INTO t VALUES (2, 'two')");
    // The transaction reads its own rows of it, unlogged as they are.
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM t ORDER BY id"), ["1|temp", "2|two"]);
    run(&mut s, "ROLLBACK");
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM t"), ["1|temp"]);
    run(&mut s, "INSERT INTO t VALUES (2, 'two')");
    run(&mut s, "SAVEPOINT a");
    run(&mut s, "INSERT INTO t VALUES (3, 'three')");
    run(&mut s, "ROLLBACK TO SAVEPOINT a");
    // PostgreSQL 15's messages name the table and its constraints as written.
    let e = fails(&mut s, "INSERT INTO t VALUES (1, 'again')");
    assert_eq!(e.sqlstate(), "23505");
    assert!(e.to_string().starts_with("duplicate key value violates unique constraint \"t_pkey\""), "{e}");
    let e = fails(&mut s, "INSERT INTO t VALUES (4, 'temp')");
    assert!(e.to_string().starts_with("duplicate key value violates unique constraint \"t_v_key\""), "{e}");
    let e = fails(&mut s, "INSERT INTO t VALUES (3, NULL)");
    assert_eq!(e.to_string(), "null value in column \"v\" of relation \"t\" violates not-null constraint");
    run(&mut s, "COMMIT");
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM t ORDER BY id"), ["1|temp", "2|two"]);
}

#[test]
fn on_commit_delete_rows_empties_the_table_and_on_commit_drop_drops_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TEMP TABLE d (a INT) ON COMMIT DELETE ROWS");
    run(&mut s, "INSERT INTO d VALUES (1)");
    assert_eq!(one(&mut s, "SELECT count(*) FROM d"), "1");
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT count(*) FROM d"), "0");
    run(&mut s, "CREATE TEMP TABLE p (a INT) ON COMMIT PRESERVE ROWS");
    run(&mut s, "INSERT INTO p VALUES (1)");
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT count(*) FROM p"), "1");
    // As PostgreSQL runs `BEGIN; CREATE TEMP TABLE dr ... ON COMMIT DROP; ...; COMMIT`:
    // the table lives until the transaction's end, DDL on it included.
    run(&mut s, "BEGIN");
    run(&mut s, "CREATE TEMP TABLE dr (a INT) ON COMMIT DROP");
    run(&mut s, "INSERT INTO dr VALUES (1)");
    run(&mut s, "CREATE INDEX ON dr (a)");
    assert_eq!(one(&mut s, "SELECT count(*) FROM dr"), "1");
    run(&mut s, "COMMIT");
    let e = fails(&mut s, "SELECT * FROM dr");
    assert_eq!((e.sqlstate(), e.to_string()), ("42P01", "relation \"dr\" does not exist".to_string()));
    // A rollback takes an ON COMMIT DROP table too (it never outlives its transaction).
    run(&mut s, "CREATE TEMP TABLE gone (a INT) ON COMMIT DROP");
    run(&mut s, "INSERT INTO gone VALUES (1)");
    run(&mut s, "ROLLBACK");
    assert_eq!(fails(&mut s, "SELECT * FROM gone").sqlstate(), "42P01");
    // A table named in pg_temp is temporary; TEMP in another schema is 42P16.
    run(&mut s, "CREATE TABLE pg_temp.q (a INT)");
    assert_eq!(one(&mut s, "SELECT relpersistence FROM pg_class WHERE relname = 'q'"), "t");
    let e = fails(&mut s, "CREATE TEMP TABLE public.q2 (a INT)");
    assert_eq!(
        (e.sqlstate(), e.to_string()),
        ("42P16", "cannot create temporary relation in non-temporary schema".into())
    );
    // ON COMMIT on a permanent table is PostgreSQL's 42P16.
    let e = fails(&mut s, "CREATE TABLE x (a INT) ON COMMIT DELETE ROWS");
    assert_eq!(
        (e.sqlstate(), e.to_string()),
        ("42P16", "ON COMMIT can only be used on temporary tables".into())
    );
}

#[test]
fn create_temp_table_as_and_indexes_of_one_name_in_two_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = db.session();
    let mut b = db.session();
    run(&mut a, "CREATE TEMP TABLE ca AS SELECT 1 AS a, 'x' AS b");
    assert_eq!(pipe_rows(&mut a, "SELECT * FROM ca"), ["1|x"]);
    assert_eq!(fails(&mut b, "SELECT * FROM ca").sqlstate(), "42P01");
    run(&mut b, "CREATE TEMP TABLE ca AS SELECT g AS a FROM generate_series(1, 3) g");
    assert_eq!(pipe_rows(&mut b, "SELECT sum(a) FROM ca"), ["6"]);
    // One index name in each session, and a unique one enforced.
    for s in [&mut a, &mut b] {
        run(s, "CREATE UNIQUE INDEX ca_a ON ca (a)");
        assert_eq!(fails(s, "INSERT INTO ca (a) VALUES (1)").sqlstate(), "23505");
        run(s, "INSERT INTO ca (a) VALUES (10)");
        run(s, "COMMIT");
        assert_eq!(one(s, "SELECT count(*) FROM ca WHERE a = 10"), "1");
    }
    run(&mut a, "DROP INDEX ca_a");
    run(&mut a, "INSERT INTO ca (a) VALUES (1)");
    run(&mut a, "COMMIT");
    assert_eq!(fails(&mut b, "INSERT INTO ca (a) VALUES (1)").sqlstate(), "23505", "b's index is its own");
}

#[test]
fn foreign_keys_views_and_serials_between_temporary_and_permanent_tables_are_postgresqls() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE perm (id INT PRIMARY KEY)");
    run(&mut s, "CREATE TEMP TABLE tmp (id INT PRIMARY KEY)");
    let e = fails(&mut s, "CREATE TABLE child (id INT REFERENCES tmp (id))");
    assert_eq!(
        (e.sqlstate(), e.to_string()),
        ("42P16", "constraints on permanent tables may reference only permanent tables".into())
    );
    let e = fails(&mut s, "CREATE TEMP TABLE tchild (id INT REFERENCES perm (id))");
    assert_eq!(
        (e.sqlstate(), e.to_string()),
        ("42P16", "constraints on temporary tables may reference only temporary tables".into())
    );
    // Between temporary tables a foreign key holds as any other.
    run(&mut s, "CREATE TEMP TABLE tchild (id INT REFERENCES tmp (id))");
    let e = fails(&mut s, "INSERT INTO tchild VALUES (1)");
    assert_eq!(e.sqlstate(), "23503");
    assert!(
        e.to_string().starts_with(
            "insert or update on table \"tchild\" violates foreign key constraint \"tchild_id_fkey\": \
             Key (id)=(1) is not present in table \"tmp\""
        ),
        "{e}"
    );
    run(&mut s, "INSERT INTO tmp VALUES (1)");
    run(&mut s, "INSERT INTO tchild VALUES (1)");
    run(&mut s, "INSERT INTO tmp VALUES (1) ON CONFLICT ON CONSTRAINT tmp_pkey DO NOTHING");
    run(&mut s, "COMMIT");
    // A view over a temporary table is temporary itself, with PostgreSQL's NOTICE.
    s.take_notices();
    run(&mut s, "CREATE VIEW v AS SELECT id FROM tmp");
    let notices: Vec<String> = s.take_notices().into_iter().map(|n| n.message).collect();
    assert_eq!(notices, ["view \"v\" will be a temporary view"]);
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM v"), ["1"]);
    let mut other = db.session();
    assert_eq!(fails(&mut other, "SELECT * FROM v").sqlstate(), "42P01");
    let e = fails(&mut s, "DROP TABLE tmp");
    assert_eq!(e.sqlstate(), "2BP01");
    assert_eq!(e.to_string(), "cannot drop table tmp because other objects depend on it");
    // A SERIAL column of a temporary table: its sequence is the session's too.
    run(&mut s, "CREATE TEMP TABLE s (id SERIAL, v TEXT)");
    run(&mut s, "INSERT INTO s (v) VALUES ('a'), ('b')");
    run(&mut s, "COMMIT");
    assert_eq!(pipe_rows(&mut s, "SELECT id, v FROM s ORDER BY id"), ["1|a", "2|b"]);
    // A permanent relation may not take the form of a temporary one's stored name (its
    // changes would go unlogged).
    for sql in [
        "CREATE TABLE \"pg_temp_1.x\" (a INT)",
        "CREATE VIEW \"pg_temp_1.x\" AS SELECT 1 AS a",
        "CREATE SEQUENCE \"pg_temp_1.x\"",
        "ALTER TABLE perm RENAME TO \"pg_temp_1.x\"",
    ] {
        assert_eq!(fails(&mut s, sql).sqlstate(), "0A000", "{sql}");
    }
    // The session's end takes the view, the tables and the sequence.
    drop(s);
    assert_eq!(db.snapshot().schemas().map(|t| t.name.clone()).collect::<Vec<_>>(), ["perm"]);
}

#[test]
fn a_prepared_statement_follows_a_temporary_table_made_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    let insert = s.prepare("INSERT INTO t VALUES ($1, $2)").unwrap();
    let update = s.prepare("UPDATE t SET v = v + 1 WHERE id = $1").unwrap();
    let select = s.prepare("SELECT v FROM t WHERE id = $1").unwrap();
    let read = |s: &mut Session| s.execute_prepared(&select, &[Value::Int(1)]).unwrap().rows().to_vec();
    s.execute_prepared(&insert, &[Value::Int(1), Value::Int(10)]).unwrap();
    s.execute_prepared(&update, &[Value::Int(1)]).unwrap();
    run(&mut s, "COMMIT");
    assert_eq!(read(&mut s), [[Value::Int(11)]]);
    run(&mut s, "CREATE TEMP TABLE t (id INT PRIMARY KEY, v INT)");
    s.execute_prepared(&insert, &[Value::Int(1), Value::Int(100)]).unwrap();
    s.execute_prepared(&update, &[Value::Int(1)]).unwrap();
    run(&mut s, "COMMIT");
    assert_eq!(read(&mut s), [[Value::Int(101)]]);
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM t"), ["1|101"]);
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM public.t"), ["1|11"]);
}

#[test]
fn the_catalog_shows_a_temporary_table_in_its_sessions_pg_temp_schema() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut a = db.session();
    let mut b = db.session();
    run(&mut a, "CREATE TABLE t (id INT PRIMARY KEY)");
    run(&mut a, "CREATE TEMP TABLE t (id INT PRIMARY KEY)");
    let classes =
        "SELECT c.relname, c.relkind, c.relpersistence, pg_table_is_visible(c.oid) FROM pg_class c \
                   WHERE relname IN ('t', 't_pkey') ORDER BY 1, 3";
    // PostgreSQL 15's rows: the temporary table and its key are visible, the permanent
    // ones hidden behind them.
    assert_eq!(
        pipe_rows(&mut a, classes),
        ["t|r|p|false", "t|r|t|true", "t_pkey|i|p|false", "t_pkey|i|t|true"]
    );
    // Another session sees the permanent ones, and not the temporary ones.
    assert_eq!(
        pipe_rows(&mut b, classes),
        ["t|r|p|true", "t|r|t|false", "t_pkey|i|p|true", "t_pkey|i|t|false"]
    );
    let schema = format!("pg_temp_{}", a.sid());
    assert_eq!(
        pipe_rows(
            &mut a,
            "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relname = 't' ORDER BY c.relpersistence"
        ),
        ["public".to_string(), schema.clone()]
    );
    assert_eq!(
        pipe_rows(
            &mut a,
            "SELECT table_schema, table_name, table_type FROM information_schema.tables WHERE table_name = 't' \
             ORDER BY 3"
        ),
        ["public|t|BASE TABLE".to_string(), format!("{schema}|t|LOCAL TEMPORARY")]
    );
    let temp_oid = "(SELECT oid FROM pg_class WHERE relname = 't' AND relpersistence = 't')";
    assert_eq!(one(&mut a, &format!("SELECT 't'::regclass::oid = {temp_oid}")), "true");
    assert_eq!(one(&mut a, &format!("SELECT 'pg_temp.t'::regclass::oid = {temp_oid}")), "true");
    assert_eq!(one(&mut b, &format!("SELECT 't'::regclass::oid = {temp_oid}")), "false");
    // The session's end takes its schema from pg_namespace.
    drop(a);
    assert_eq!(one(&mut b, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pg_temp%'"), "0");
}

#[test]
fn a_temporary_tables_serial_and_identity_columns_and_temporary_sequences_are_never_logged() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE keep (id INT PRIMARY KEY)");
        let before = redo_size(&mut s);
        run(
            &mut s,
            "CREATE TEMP TABLE t (id BIGSERIAL PRIMARY KEY, n INT GENERATED ALWAYS AS IDENTITY, v TEXT)",
        );
        run(&mut s, "CREATE TEMP SEQUENCE ts START 10");
        for i in 0..40 {
            run(&mut s, &format!("INSERT INTO t (v) VALUES ('row {i}')"));
        }
        run(&mut s, "COMMIT");
        assert_eq!(pipe_rows(&mut s, "SELECT min(id), max(id), min(n), max(n) FROM t"), ["1|40|1|40"]);
        assert_eq!(pipe_rows(&mut s, "SELECT nextval('ts'), nextval('pg_temp.ts')"), ["10|11"]);
        assert_eq!(
            one(&mut s, "SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relpersistence = 't'"),
            "3"
        );
        assert_eq!(redo_size(&mut s), before, "no redo for a temporary table's sequences");
        // Another session sees none of them.
        let mut other = db.session();
        assert_eq!(fails(&mut other, "SELECT nextval('ts')").sqlstate(), "42P01");
        // DROP TABLE takes its sequences, not the free-standing one.
        run(&mut s, "DROP TABLE t");
        assert_eq!(one(&mut s, "SELECT count(*) FROM pg_class WHERE relkind = 'S'"), "1");
        assert_eq!(fails(&mut s, "CREATE TEMP SEQUENCE app.x").sqlstate(), "42P16");
        std::mem::drop(db);
        let _still_open = s;
    }
    let db = open(dir.path());
    let names: Vec<String> = db.snapshot().schemas().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["keep"], "nothing temporary after a restart");
}
