//! Schemas and the search path through `Session::execute` (issue 20), each expected
//! result and message checked against PostgreSQL 15: qualified names everywhere a
//! relation is named, resolution in the path's order, CREATE into the path's first
//! schema, DROP SCHEMA RESTRICT and CASCADE, the catalog's view, and schemas surviving a
//! restart (redo replay) and a checkpoint image.

use crate::common::{fails, one, open, pipe_rows, run};
use db::{Session, Value};

/// The notices the last statements left, as `message` or `message / detail`.
fn notices(s: &mut Session) -> Vec<String> {
    s.take_notices()
        .into_iter()
        .map(|n| match &n.detail {
            Some(detail) => format!("{} / {detail}", n.message),
            None => n.message.clone(),
        })
        .collect()
}

#[test]
fn a_name_resolves_in_the_first_schema_of_the_search_path_that_has_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE SCHEMA app");
    run(&mut s, "CREATE TABLE app.t (id SERIAL PRIMARY KEY, v TEXT)");
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)");
    run(&mut s, "INSERT INTO app.t (v) VALUES ('app one')");
    run(&mut s, "INSERT INTO t VALUES (1, 'public one')");
    run(&mut s, "COMMIT");
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM t"), ["1|public one"]);
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM app.t"), ["1|app one"]);
    assert_eq!(
        pipe_rows(&mut s, "SELECT a.v, p.v FROM app.t a JOIN public.t p ON p.id = a.id"),
        ["app one|public one"]
    );
    assert_eq!(one(&mut s, "SHOW search_path"), "\"$user\", public");
    assert_eq!(
        pipe_rows(&mut s, "SELECT current_schema(), current_schemas(false), current_schemas(true)"),
        ["public|{public}|{pg_catalog,public}"]
    );

    run(&mut s, "SET search_path = app, public");
    assert_eq!(one(&mut s, "SHOW search_path"), "app, public");
    assert_eq!(
        pipe_rows(&mut s, "SELECT current_schema(), current_schemas(false), current_schemas(true)"),
        ["app|{app,public}|{pg_catalog,app,public}"]
    );
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM t"), ["1|app one"]);
    // DML and a sequence of the schema by the path too.
    run(&mut s, "INSERT INTO t (v) VALUES ('app two')");
    run(&mut s, "UPDATE t SET v = v || '!' WHERE id = 2");
    run(&mut s, "COMMIT");
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM app.t ORDER BY id"), ["1|app one", "2|app two!"]);
    assert_eq!(one(&mut s, "SELECT nextval('t_id_seq')"), "3");
    assert_eq!(one(&mut s, "SELECT nextval('app.t_id_seq')"), "4");
    // A column qualified by schema and table (SQLAlchemy's RETURNING app.t.id).
    assert_eq!(one(&mut s, "INSERT INTO app.t (v) VALUES ('five') RETURNING app.t.id"), "5");
    assert_eq!(one(&mut s, "SELECT app.t.v FROM app.t WHERE app.t.id = 5"), "five");
    run(&mut s, "ROLLBACK");
    // A CREATE of an unqualified name goes into the first schema of the path.
    run(&mut s, "CREATE TABLE u (x INT)");
    assert_eq!(
        pipe_rows(
            &mut s,
            "SELECT schemaname, tablename FROM pg_tables WHERE tablename IN ('t', 'u') ORDER BY 1, 2"
        ),
        ["app|t", "app|u", "public|t"]
    );
    // A name found only further along the path.
    run(&mut s, "CREATE TABLE public.only_public (x INT)");
    run(&mut s, "INSERT INTO only_public VALUES (5)");
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT x FROM public.only_public"), "5");

    run(&mut s, "SET search_path = \"$user\", public");
    assert_eq!(pipe_rows(&mut s, "SELECT 'app.t'::regclass, 't'::regclass"), ["app.t|t"]);
    assert_eq!(
        pipe_rows(&mut s, "SELECT nspname FROM pg_namespace WHERE nspname IN ('app', 'public') ORDER BY 1"),
        ["app", "public"]
    );
    assert_eq!(
        pipe_rows(&mut s, "SELECT schema_name FROM information_schema.schemata ORDER BY 1"),
        ["app", "information_schema", "pg_catalog", "pg_toast", "public"]
    );
    assert_eq!(
        pipe_rows(
            &mut s,
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relname IN ('t', 'u', 't_pkey') ORDER BY 1, 2"
        ),
        ["app|t", "app|t_pkey", "app|u", "public|t", "public|t_pkey"]
    );
    assert_eq!(
        pipe_rows(
            &mut s,
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_name IN ('t', 'u') ORDER BY 1, 2"
        ),
        ["app|t", "app|u", "public|t"]
    );
    // An index is in its table's schema.
    run(&mut s, "CREATE INDEX ti ON app.t (v)");
    assert_eq!(
        pipe_rows(
            &mut s,
            "SELECT schemaname, indexname, indexdef FROM pg_indexes WHERE schemaname = 'app' ORDER BY 2"
        ),
        [
            "app|t_pkey|CREATE UNIQUE INDEX t_pkey ON app.t USING btree (id)",
            "app|ti|CREATE INDEX ti ON app.t USING btree (v)"
        ]
    );
    assert_eq!(
        one(&mut s, "SELECT pg_get_indexdef('app.ti'::regclass)"),
        "CREATE INDEX ti ON app.t USING btree (v)"
    );
    // A foreign key across schemas.
    run(&mut s, "CREATE TABLE child (id INT, t_id INT REFERENCES app.t(id))");
    assert_eq!(
        one(&mut s, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'child_t_id_fkey'"),
        "FOREIGN KEY (t_id) REFERENCES app.t(id)"
    );
    run(&mut s, "INSERT INTO child VALUES (1, 1)");
    run(&mut s, "COMMIT");
    assert_eq!(fails(&mut s, "INSERT INTO child VALUES (2, 99)").sqlstate(), "23503");
    run(&mut s, "ROLLBACK");
    // A view reads the relation it named when it was made, whatever the path now.
    run(&mut s, "CREATE VIEW app.v AS SELECT v FROM app.t WHERE id = 1");
    run(&mut s, "SET search_path = app");
    assert_eq!(one(&mut s, "SELECT v FROM v"), "app one");
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM public.t"), ["1|public one"]);
}

#[test]
fn a_prepared_statement_follows_a_change_of_the_search_path() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE SCHEMA app");
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, n INT)");
    run(&mut s, "CREATE TABLE app.t (id INT PRIMARY KEY, n INT)");
    let insert = s.prepare("INSERT INTO t VALUES ($1, 0)").unwrap();
    let update = s.prepare("UPDATE t SET n = n + 1 WHERE id = $1").unwrap();
    s.execute_prepared(&insert, &[Value::Int(1)]).unwrap();
    s.execute_prepared(&update, &[Value::Int(1)]).unwrap();
    run(&mut s, "COMMIT");
    run(&mut s, "SET search_path = app, public");
    s.execute_prepared(&insert, &[Value::Int(1)]).unwrap();
    s.execute_prepared(&update, &[Value::Int(1)]).unwrap();
    s.execute_prepared(&update, &[Value::Int(1)]).unwrap();
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT n FROM public.t WHERE id = 1"), "1");
    assert_eq!(one(&mut s, "SELECT n FROM app.t WHERE id = 1"), "2");
    // A value of the path in a prepared statement is the path's at each execution.
    run(&mut s, "CREATE TABLE public.seen (n INT PRIMARY KEY, schema TEXT)");
    let seen = s.prepare("INSERT INTO public.seen VALUES ($1, current_schema())").unwrap();
    s.execute_prepared(&seen, &[Value::Int(1)]).unwrap();
    run(&mut s, "SET search_path = public");
    s.execute_prepared(&seen, &[Value::Int(2)]).unwrap();
    run(&mut s, "COMMIT");
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM public.seen ORDER BY n"), ["1|app", "2|public"]);
    // A table that appears earlier in the path takes the name over.
    run(&mut s, "SET search_path = public");
    run(&mut s, "CREATE TABLE app.only (x INT)");
    let count = s.prepare("INSERT INTO only VALUES ($1)").unwrap();
    assert_eq!(s.execute_prepared(&count, &[Value::Int(1)]).unwrap_err().sqlstate(), "42P01");
    run(&mut s, "ROLLBACK");
    run(&mut s, "SET search_path = app, public");
    s.execute_prepared(&count, &[Value::Int(7)]).unwrap();
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT x FROM app.only"), "7");
}

#[test]
fn schema_statements_fail_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE SCHEMA app");
    let e = fails(&mut s, "CREATE SCHEMA app");
    assert_eq!((e.sqlstate(), e.to_string()), ("42P06", "schema \"app\" already exists".into()));
    run(&mut s, "CREATE SCHEMA IF NOT EXISTS app");
    assert_eq!(notices(&mut s), ["schema \"app\" already exists, skipping"]);
    let e = fails(&mut s, "CREATE SCHEMA pg_x");
    assert_eq!((e.sqlstate(), e.to_string()), ("42939", "unacceptable schema name \"pg_x\"".into()));
    assert_eq!(e.detail().as_deref(), Some("The prefix \"pg_\" is reserved for system schemas."));
    assert_eq!(fails(&mut s, "CREATE SCHEMA public").sqlstate(), "42P06");
    let e = fails(&mut s, "SELECT * FROM nope.t");
    assert_eq!((e.sqlstate(), e.to_string()), ("42P01", "relation \"nope.t\" does not exist".into()));
    let e = fails(&mut s, "CREATE TABLE nope.t (x INT)");
    assert_eq!((e.sqlstate(), e.to_string()), ("3F000", "schema \"nope\" does not exist".into()));
    let e = fails(&mut s, "DROP SCHEMA nope");
    assert_eq!((e.sqlstate(), e.to_string()), ("3F000", "schema \"nope\" does not exist".into()));
    run(&mut s, "DROP SCHEMA IF EXISTS nope");
    assert_eq!(notices(&mut s), ["schema \"nope\" does not exist, skipping"]);
    let e = fails(&mut s, "DROP SCHEMA pg_catalog");
    assert_eq!(
        (e.sqlstate(), e.to_string()),
        ("2BP01", "cannot drop schema pg_catalog because it is required by the database system".into())
    );
    // A path none of whose schemas exists: nothing to create in, nothing found (public's
    // table neither).
    run(&mut s, "CREATE TABLE public.p (x INT)");
    run(&mut s, "SET search_path = nope");
    assert_eq!(fails(&mut s, "SELECT * FROM p").sqlstate(), "42P01");
    assert_eq!(fails(&mut s, "INSERT INTO p VALUES (1)").sqlstate(), "42P01");
    run(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, "SELECT count(*) > 0 FROM v$sysstat"), "true");
    let e = fails(&mut s, "CREATE TABLE z (x INT)");
    assert_eq!((e.sqlstate(), e.to_string()), ("3F000", "no schema has been selected to create in".into()));
    assert_eq!(
        pipe_rows(&mut s, "SELECT current_schema() IS NULL, current_schemas(true)"),
        ["true|{pg_catalog}"]
    );
    // The path as PostgreSQL keeps and shows it.
    run(&mut s, "SET search_path = 'a b', \"X\"");
    assert_eq!(one(&mut s, "SHOW search_path"), "\"a b\", \"X\"");
    run(&mut s, "SET search_path = App, \"App\"");
    assert_eq!(one(&mut s, "SHOW search_path"), "app, \"App\"");
    run(&mut s, "RESET search_path");
    assert_eq!(one(&mut s, "SHOW search_path"), "\"$user\", public");
    // CREATE SCHEMA AUTHORIZATION names the schema after the role, which owns it.
    run(&mut s, "CREATE SCHEMA AUTHORIZATION alice");
    run(&mut s, "CREATE SCHEMA owned AUTHORIZATION bob");
    assert_eq!(
        pipe_rows(&mut s, "SELECT schema_name FROM information_schema.schemata WHERE schema_name IN ('alice', 'owned') ORDER BY 1"),
        ["alice", "owned"]
    );
}

#[test]
fn drop_schema_refuses_a_schema_with_relations_unless_cascade() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE SCHEMA app");
    run(&mut s, "CREATE TABLE app.t (id SERIAL PRIMARY KEY, v TEXT)");
    run(&mut s, "CREATE TABLE app.u (x INT)");
    run(&mut s, "CREATE VIEW app.v AS SELECT v FROM app.t");
    run(&mut s, "CREATE SEQUENCE app.w");
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY)");
    run(&mut s, "CREATE TABLE child (id INT, t_id INT REFERENCES app.t(id))");
    run(&mut s, "CREATE VIEW outside AS SELECT x FROM app.u");
    for sql in ["DROP SCHEMA app", "DROP SCHEMA app RESTRICT"] {
        let e = fails(&mut s, sql);
        assert_eq!(
            (e.sqlstate(), e.to_string()),
            ("2BP01", "cannot drop schema app because other objects depend on it".into())
        );
        assert_eq!(
            e.detail().as_deref(),
            Some(
                "table app.t depends on schema app\n\
                 constraint child_t_id_fkey on table child depends on table app.t\n\
                 table app.u depends on schema app\nview outside depends on table app.u\n\
                 view app.v depends on schema app\nsequence app.w depends on schema app"
            )
        );
        assert_eq!(e.hint(), Some("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    run(&mut s, "DROP SCHEMA app CASCADE");
    assert_eq!(
        notices(&mut s),
        ["drop cascades to 6 other objects / drop cascades to table app.t\n\
          drop cascades to constraint child_t_id_fkey on table child\ndrop cascades to table app.u\n\
          drop cascades to view outside\ndrop cascades to view app.v\ndrop cascades to sequence app.w"]
    );
    let left: Vec<String> = db.snapshot().schemas().map(|t| t.name.clone()).collect();
    assert_eq!(left, ["child", "t"]);
    run(&mut s, "INSERT INTO child VALUES (1, 99)");
    run(&mut s, "COMMIT");
    run(&mut s, "DROP TABLE child");
    assert_eq!(fails(&mut s, "SELECT * FROM app.t").sqlstate(), "42P01");
    assert_eq!(one(&mut s, "SELECT count(*) FROM pg_namespace WHERE nspname = 'app'"), "0");
    // Empty, it goes without CASCADE; public with a table in it does not.
    run(&mut s, "CREATE SCHEMA empty");
    run(&mut s, "DROP SCHEMA empty");
    let e = fails(&mut s, "DROP SCHEMA public");
    assert_eq!(e.detail().as_deref(), Some("table t depends on schema public"));
    // Without public, an unqualified CREATE has nowhere to go.
    run(&mut s, "DROP SCHEMA public CASCADE");
    assert_eq!(fails(&mut s, "CREATE TABLE z (x INT)").sqlstate(), "3F000");
    run(&mut s, "CREATE SCHEMA public");
    run(&mut s, "CREATE TABLE z (x INT)");
    assert_eq!(one(&mut s, "SELECT schemaname FROM pg_tables WHERE tablename = 'z'"), "public");
}

#[test]
fn schemas_survive_a_restart_and_a_checkpoint_image() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE SCHEMA app AUTHORIZATION alice");
        run(&mut s, "CREATE TABLE app.t (id SERIAL PRIMARY KEY, v TEXT)");
        run(&mut s, "CREATE INDEX tv ON app.t (v)");
        run(&mut s, "INSERT INTO app.t (v) VALUES ('before the image')");
        run(&mut s, "CREATE SCHEMA gone");
        run(&mut s, "COMMIT");
    }
    {
        // Replayed from the redo alone.
        let db = open(dir.path());
        let mut s = db.session();
        assert_eq!(pipe_rows(&mut s, "SELECT * FROM app.t"), ["1|before the image"]);
        assert_eq!(
            pipe_rows(
                &mut s,
                "SELECT nspname FROM pg_namespace WHERE nspname IN ('app', 'gone', 'public') ORDER BY 1"
            ),
            ["app", "gone", "public"]
        );
        db.checkpoint().unwrap();
        run(&mut s, "DROP SCHEMA gone");
        run(&mut s, "CREATE SCHEMA after");
        run(&mut s, "CREATE TABLE after.x (k INT PRIMARY KEY)");
        run(&mut s, "INSERT INTO after.x VALUES (1)");
        run(&mut s, "INSERT INTO app.t (v) VALUES ('after the image')");
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        run(&mut s, "DROP SCHEMA public CASCADE");
    }
    // The newest image and the redo after it.
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(
        pipe_rows(
            &mut s,
            "SELECT nspname FROM pg_namespace WHERE nspname IN ('after', 'app', 'gone', 'public') ORDER BY 1"
        ),
        ["after", "app"]
    );
    // (A sequence's values after a restart go on past its last reservation.)
    assert_eq!(pipe_rows(&mut s, "SELECT v FROM app.t ORDER BY id"), ["before the image", "after the image"]);
    assert_eq!(one(&mut s, "SELECT k FROM after.x"), "1");
    assert_eq!(
        pipe_rows(&mut s, "SELECT indexname FROM pg_indexes WHERE schemaname = 'app' ORDER BY 1"),
        ["t_pkey", "tv"]
    );
    assert_eq!(fails(&mut s, "CREATE TABLE z (x INT)").sqlstate(), "3F000");
    run(&mut s, "SET search_path = app");
    run(&mut s, "INSERT INTO t (v) VALUES ('by the path')");
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT count(*) FROM app.t WHERE v = 'by the path'"), "1");
}

#[test]
fn alter_table_set_schema_moves_a_relation_and_what_refers_to_it_follows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE SCHEMA app");
    run(&mut s, "CREATE TABLE m (id INT PRIMARY KEY, v TEXT)");
    run(&mut s, "INSERT INTO m VALUES (1, 'moved')");
    run(&mut s, "CREATE TABLE c (id INT, m_id INT REFERENCES m(id))");
    run(&mut s, "CREATE VIEW mv AS SELECT v FROM m");
    run(&mut s, "COMMIT");
    assert_eq!(run(&mut s, "ALTER TABLE m SET SCHEMA app").tag(), "ALTER TABLE");
    assert_eq!(pipe_rows(&mut s, "SELECT * FROM app.m"), ["1|moved"]);
    assert_eq!(fails(&mut s, "SELECT * FROM m").to_string(), "relation \"m\" does not exist");
    assert_eq!(one(&mut s, "SELECT * FROM mv"), "moved");
    assert_eq!(
        one(&mut s, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'c_m_id_fkey'"),
        "FOREIGN KEY (m_id) REFERENCES app.m(id)"
    );
    assert_eq!(fails(&mut s, "INSERT INTO c VALUES (1, 2)").sqlstate(), "23503");
    run(&mut s, "ROLLBACK");
    run(&mut s, "CREATE TABLE app.x (a INT)");
    run(&mut s, "CREATE TABLE x (a INT)");
    let e = fails(&mut s, "ALTER TABLE x SET SCHEMA app");
    assert_eq!(
        (e.sqlstate(), e.to_string()),
        ("42P07", "relation \"x\" already exists in schema \"app\"".into())
    );
    run(&mut s, "ALTER TABLE IF EXISTS nope SET SCHEMA app");
    assert_eq!(notices(&mut s), ["relation \"nope\" does not exist, skipping"]);
    let e = fails(&mut s, "ALTER TABLE app.m SET SCHEMA nope");
    assert_eq!((e.sqlstate(), e.to_string()), ("3F000", "schema \"nope\" does not exist".into()));
    run(&mut s, "CREATE TEMP TABLE tt (a INT)");
    let e = fails(&mut s, "ALTER TABLE tt SET SCHEMA app");
    assert_eq!(
        (e.sqlstate(), e.to_string()),
        ("0A000", "cannot move objects into or out of temporary schemas".into())
    );
    assert_eq!(run(&mut s, "ALTER VIEW mv SET SCHEMA app").tag(), "ALTER VIEW");
    assert_eq!(
        pipe_rows(&mut s, "SELECT schemaname, viewname FROM pg_views WHERE viewname = 'mv'"),
        ["app|mv"]
    );
    // Logged: after a restart the relations are where they were moved.
    std::mem::drop(s);
    std::mem::drop(db);
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(one(&mut s, "SELECT v FROM app.mv"), "moved");
    assert_eq!(fails(&mut s, "SELECT * FROM m").sqlstate(), "42P01");
}
