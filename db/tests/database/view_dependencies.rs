//! What views depend on (issue 20), through `Session::execute`: a DROP TABLE, DROP VIEW
//! or DROP COLUMN of something a view reads is refused (2BP01) or, with CASCADE, takes
//! the views with it; ALTER COLUMN TYPE of a column a view reads is refused (0A000);
//! renames keep the views reading what they read; pg_depend and pg_rewrite show it; and
//! all of it survives a reopen from the redo (the close writes no checkpoint, so this is
//! crash recovery's replay) and from a checkpoint image. Every message, DETAIL, HINT and
//! result here is PostgreSQL 15's for the same statements.

use crate::common::{cells, fails, open, run};
use db::{DbError, Session};

/// The error `sql` fails with: SQLSTATE, message, DETAIL and HINT.
fn refused(s: &mut Session, sql: &str) -> (String, String, Option<String>, Option<String>) {
    let e: DbError = fails(s, sql);
    (e.sqlstate().to_string(), e.kind().to_string(), e.detail(), e.hint().map(str::to_string))
}

const HINT: &str = "Use DROP ... CASCADE to drop the dependent objects too.";

/// A 2BP01 error as PostgreSQL gives it, its DETAIL one line per dependent object.
fn dependents(message: &str, detail: &[&str]) -> (String, String, Option<String>, Option<String>) {
    ("2BP01".into(), message.into(), Some(detail.join("\n")), Some(HINT.into()))
}

/// The session's notices since the last call: message and DETAIL.
fn notices(s: &mut Session) -> Vec<(String, Option<String>)> {
    s.take_notices().into_iter().map(|n| (n.message, n.detail)).collect()
}

fn relations(s: &mut Session) -> Vec<String> {
    cells(s, "SELECT relname FROM pg_class WHERE relnamespace = 2200 AND relkind IN ('r', 'v') ORDER BY 1")
        .into_iter()
        .map(|row| row[0].clone())
        .collect()
}

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE t (a INT, b INT, c INT)");
    run(s, "CREATE TABLE s (a INT, d INT)");
    run(s, "CREATE VIEW v AS SELECT a, b FROM t");
    run(s, "CREATE VIEW w AS SELECT v.a, s.d FROM v JOIN s USING (a)");
    run(s, "CREATE VIEW x AS SELECT * FROM t");
    run(s, "CREATE VIEW cnt AS SELECT count(*) FROM s");
}

/// The refusals of `setup`'s objects, as PostgreSQL 15 words them.
fn check_refusals(s: &mut Session) {
    assert_eq!(
        refused(s, "DROP TABLE t"),
        dependents(
            "cannot drop table t because other objects depend on it",
            &["view v depends on table t", "view w depends on view v", "view x depends on table t"]
        )
    );
    assert_eq!(
        refused(s, "DROP VIEW v"),
        dependents("cannot drop view v because other objects depend on it", &["view w depends on view v"])
    );
    assert_eq!(
        refused(s, "ALTER TABLE t DROP COLUMN b"),
        dependents(
            "cannot drop column b of table t because other objects depend on it",
            &[
                "view v depends on column b of table t",
                "view w depends on view v",
                "view x depends on column b of table t"
            ]
        )
    );
    assert_eq!(
        refused(s, "ALTER TABLE t DROP COLUMN c"),
        dependents(
            "cannot drop column c of table t because other objects depend on it",
            &["view x depends on column c of table t"]
        )
    );
    assert_eq!(
        refused(s, "ALTER TABLE s DROP COLUMN d"),
        dependents(
            "cannot drop column d of table s because other objects depend on it",
            &["view w depends on column d of table s"]
        )
    );
    // A column of USING is read on both sides.
    assert_eq!(
        refused(s, "ALTER TABLE s DROP COLUMN a"),
        dependents(
            "cannot drop column a of table s because other objects depend on it",
            &["view w depends on column a of table s"]
        )
    );
    // count(*) reads no column: a dependency on the whole table.
    assert_eq!(
        refused(s, "DROP TABLE s"),
        dependents(
            "cannot drop table s because other objects depend on it",
            &["view w depends on table s", "view cnt depends on table s"]
        )
    );
    assert_eq!(
        refused(s, "ALTER TABLE t ALTER COLUMN b TYPE BIGINT"),
        (
            "0A000".into(),
            "cannot alter type of a column used by a view or rule".into(),
            Some("rule _RETURN on view v depends on column \"b\"".into()),
            None
        )
    );
    // Nothing was dropped or changed by the refusals.
    assert_eq!(relations(s), ["cnt", "s", "t", "v", "w", "x"]);
}

#[test]
fn dropping_what_a_view_reads_is_refused_unless_cascade_drops_the_views_too() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        setup(&mut s);
        check_refusals(&mut s);
        // A column added after `SELECT *` is no part of the view: it goes freely.
        run(&mut s, "ALTER TABLE t ADD COLUMN e INT");
        run(&mut s, "ALTER TABLE t DROP COLUMN e");
        // A dependent view dropped by the same statement is no obstacle.
        run(&mut s, "CREATE VIEW p AS SELECT a FROM t");
        run(&mut s, "CREATE VIEW p2 AS SELECT a FROM p");
        run(&mut s, "DROP VIEW p, p2");
        assert!(notices(&mut s).is_empty());
    }
    // Reopened from the redo (as after a crash), then from a checkpoint image: the
    // dependencies are there, then CASCADE drops the views.
    for checkpoint in [false, true] {
        let db = open(dir.path());
        let mut s = db.session();
        check_refusals(&mut s);
        if checkpoint {
            db.checkpoint().unwrap();
        }
    }
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "DROP VIEW v CASCADE");
    assert_eq!(notices(&mut s), [("drop cascades to view w".to_string(), None)]);
    run(&mut s, "ALTER TABLE t DROP COLUMN c CASCADE");
    assert_eq!(notices(&mut s), [("drop cascades to view x".to_string(), None)]);
    run(&mut s, "DROP TABLE s CASCADE");
    assert_eq!(notices(&mut s), [("drop cascades to view cnt".to_string(), None)]);
    assert_eq!(relations(&mut s), ["t"]);
    // Transitively, with PostgreSQL's notice of several objects.
    run(&mut s, "CREATE VIEW v AS SELECT a, b FROM t");
    run(&mut s, "CREATE VIEW v2 AS SELECT a FROM v");
    run(&mut s, "DROP TABLE t CASCADE");
    assert_eq!(
        notices(&mut s),
        [(
            "drop cascades to 2 other objects".to_string(),
            Some("drop cascades to view v\ndrop cascades to view v2".to_string())
        )]
    );
    assert!(relations(&mut s).is_empty());
    drop(s);
    drop(db);
    let db = open(dir.path());
    let mut s = db.session();
    assert!(relations(&mut s).is_empty(), "the cascaded drops are recovered too");
}

/// pg_depend's rows of the views' rules, as PostgreSQL's query below shows them.
fn rule_dependencies(s: &mut Session) -> Vec<String> {
    cells(
        s,
        "SELECT v.relname, c.relname, d.refobjsubid, d.deptype FROM pg_depend d \
         JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class v ON v.oid = r.ev_class \
         JOIN pg_class c ON c.oid = d.refobjid WHERE d.classid = 2618 ORDER BY 1, 2, 3, 4",
    )
    .into_iter()
    .map(|row| row.join(" "))
    .collect()
}

/// After the renames: the views read what they read, under its new names.
fn check_renamed(s: &mut Session) {
    assert_eq!(
        cells(s, "SELECT * FROM v2 ORDER BY a"),
        [["2", "TWO"], ["3", "THREE"], ["4", "FOUR"], ["5", "FIVE"], ["6", "SIX"], ["7", "SEVEN"]]
    );
    assert_eq!(
        cells(s, "SELECT * FROM vv WHERE a < 5 ORDER BY a"),
        [["2", "two"], ["3", "three"], ["4", "four"]]
    );
    assert_eq!(cells(s, "SELECT n FROM v3"), [["7"]]);
    assert_eq!(
        refused(s, "ALTER TABLE t2 DROP COLUMN id"),
        dependents(
            "cannot drop column id of table t2 because other objects depend on it",
            &["view vv depends on column id of table t2", "view v2 depends on view vv"]
        )
    );
    assert_eq!(
        refused(s, "ALTER TABLE t2 ALTER COLUMN name TYPE VARCHAR(10)"),
        (
            "0A000".into(),
            "cannot alter type of a column used by a view or rule".into(),
            Some("rule _RETURN on view vv depends on column \"name\"".into()),
            None
        )
    );
    assert_eq!(
        refused(s, "DROP VIEW vv"),
        dependents("cannot drop view vv because other objects depend on it", &["view v2 depends on view vv"])
    );
    assert_eq!(
        rule_dependencies(s),
        [
            "v2 v2 0 i",
            "v2 v2 0 n",
            "v2 vv 1 n",
            "v2 vv 2 n",
            "v3 t2 0 n",
            "v3 v3 0 i",
            "v3 v3 0 n",
            "vv t2 1 n",
            "vv t2 2 n",
            "vv vv 0 i",
            "vv vv 0 n",
        ]
    );
}

#[test]
fn renamed_tables_and_columns_keep_the_views_that_read_them() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE t (a INT PRIMARY KEY, b TEXT, c INT)");
        run(&mut s, "INSERT INTO t VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', 30)");
        run(&mut s, "COMMIT");
        run(&mut s, "CREATE VIEW v AS SELECT t.a, b FROM t WHERE a > 1");
        run(&mut s, "CREATE VIEW v2 AS SELECT a, upper(b) AS ub FROM v");
        run(&mut s, "CREATE VIEW v3 AS SELECT count(*) AS n FROM t");
        assert_eq!(
            rule_dependencies(&mut s),
            [
                "v t 1 n",
                "v t 2 n",
                "v v 0 i",
                "v v 0 n",
                "v2 v 1 n",
                "v2 v 2 n",
                "v2 v2 0 i",
                "v2 v2 0 n",
                "v3 t 0 n",
                "v3 v3 0 i",
                "v3 v3 0 n",
            ]
        );
        assert_eq!(
            cells(
                &mut s,
                "SELECT r.rulename, r.is_instead, r.ev_type FROM pg_rewrite r \
                 JOIN pg_class c ON c.oid = r.ev_class WHERE c.relname = 'v'"
            ),
            [["_RETURN", "true", "1"]]
        );
        run(&mut s, "ALTER TABLE t RENAME TO t2");
        run(&mut s, "ALTER TABLE t2 RENAME COLUMN a TO id");
        run(&mut s, "ALTER TABLE t2 RENAME COLUMN b TO name");
        // Rows of the renamed table, in whichever shard they fall, are the views' rows.
        run(
            &mut s,
            "INSERT INTO t2 VALUES (4, 'four', 40), (5, 'five', 50), (6, 'six', 60), (7, 'seven', 70)",
        );
        run(&mut s, "COMMIT");
        // A new table of the old name is not what the views read.
        run(&mut s, "CREATE TABLE t (a INT, b TEXT)");
        run(&mut s, "INSERT INTO t VALUES (9, 'nine')");
        run(&mut s, "COMMIT");
        // A view renamed is still what reads it read.
        run(&mut s, "ALTER TABLE v RENAME TO vv");
        // A column no view reads changes type; a table no view reads goes.
        run(&mut s, "ALTER TABLE t2 ALTER COLUMN c TYPE BIGINT");
        run(&mut s, "DROP TABLE t");
        check_renamed(&mut s);
    }
    for checkpoint in [false, true] {
        let db = open(dir.path());
        let mut s = db.session();
        check_renamed(&mut s);
        if checkpoint {
            db.checkpoint().unwrap();
        }
    }
}

/// After columns are added to what they read and a view's column is renamed: the views
/// give what they gave.
fn check_added_columns(s: &mut Session) {
    assert_eq!(cells(s, "SELECT * FROM x"), [["1", "2", "3"]]);
    assert_eq!(cells(s, "SELECT * FROM y"), [["1", "7"]]);
    assert_eq!(cells(s, "SELECT * FROM x2"), [["1", "2", "3"]]);
    assert_eq!(cells(s, "SELECT bee FROM x"), [["2"]]);
    let columns: Vec<String> = run(s, "SELECT * FROM x").columns().iter().map(|c| c.name.clone()).collect();
    assert_eq!(columns, ["a", "bee", "c"]);
    let columns: Vec<String> = run(s, "SELECT * FROM x2").columns().iter().map(|c| c.name.clone()).collect();
    assert_eq!(columns, ["a", "b", "c"]);
}

/// A view's columns are fixed when it is created: a column added later to a table it
/// reads joins no `SELECT *` and makes no name of its query ambiguous.
#[test]
fn columns_added_later_change_no_view() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE t (a INT, b INT, c INT)");
        run(&mut s, "CREATE TABLE u (id INT)");
        run(&mut s, "INSERT INTO t VALUES (1, 2, 3)");
        run(&mut s, "INSERT INTO u VALUES (7)");
        run(&mut s, "COMMIT");
        run(&mut s, "CREATE VIEW x AS SELECT * FROM t");
        run(&mut s, "CREATE VIEW y AS SELECT a, id FROM t, u");
        run(&mut s, "CREATE VIEW x2 AS SELECT * FROM x");
        run(&mut s, "ALTER TABLE t ADD COLUMN e INT");
        run(&mut s, "ALTER TABLE u ADD COLUMN a INT");
        run(&mut s, "ALTER TABLE x RENAME COLUMN b TO bee");
        check_added_columns(&mut s);
    }
    let db = open(dir.path());
    let mut s = db.session();
    check_added_columns(&mut s);
}

/// A view reading a sequence depends on it as on a table.
#[test]
fn a_sequence_a_view_reads_is_dropped_only_with_cascade() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE SEQUENCE sq");
    run(&mut s, "CREATE VIEW sv AS SELECT last_value FROM sq");
    assert_eq!(
        refused(&mut s, "DROP SEQUENCE sq"),
        dependents(
            "cannot drop sequence sq because other objects depend on it",
            &["view sv depends on sequence sq"]
        )
    );
    run(&mut s, "DROP SEQUENCE sq CASCADE");
    assert_eq!(notices(&mut s), [("drop cascades to view sv".to_string(), None)]);
    assert!(relations(&mut s).is_empty());
}

/// `pg_get_viewdef` of each view, and what running that text as a query gives against
/// what the view gives: the definition shown is the view, under today's names.
fn definitions(s: &mut Session, views: &[&str]) -> Vec<String> {
    views
        .iter()
        .map(|view| {
            let definition = cells(s, &format!("SELECT pg_get_viewdef('{view}')"))[0][0].clone();
            let query = definition.trim().trim_end_matches(';');
            let sorted = |mut rows: Vec<Vec<String>>| {
                rows.sort();
                rows
            };
            let (by_definition, by_view) = (cells(s, query), cells(s, &format!("SELECT * FROM {view}")));
            assert_eq!(sorted(by_definition), sorted(by_view), "{view}: {definition}");
            definition
        })
        .collect()
}

#[test]
fn a_view_definition_shows_the_names_of_renamed_tables_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE o (id INT PRIMARY KEY, name TEXT, amt INT)");
    run(&mut s, "CREATE TABLE l (oid INT, name TEXT, n INT)");
    run(&mut s, "INSERT INTO o VALUES (1, 'a', 5), (2, 'b', 1), (3, 'c', 7)");
    run(&mut s, "INSERT INTO l VALUES (1, 'x', 10), (1, 'y', 20), (3, 'z', 30)");
    run(&mut s, "COMMIT");
    // An unqualified column, a correlated subquery's, an ORDER BY of an output name and
    // of a column, an alias, a view of a view, a WITH query named as a table, `(o).*`.
    run(
        &mut s,
        "CREATE VIEW ov AS SELECT o.id, name, (SELECT sum(n) FROM l WHERE l.oid = o.id) AS total \
         FROM o WHERE amt > 1 ORDER BY name",
    );
    run(&mut s, "CREATE VIEW ov2 AS SELECT amt AS name, id FROM o ORDER BY name, amt");
    run(&mut s, "CREATE VIEW ov3 AS SELECT ov.name, ov.total FROM ov JOIN l ON l.oid = ov.id ORDER BY 1, 2");
    run(&mut s, "CREATE VIEW ov4 AS WITH l AS (SELECT 1 AS n) SELECT b.name, l.n FROM o b, l WHERE b.id = 1");
    run(
        &mut s,
        "CREATE VIEW ov5 AS SELECT (o).*, l.name AS item FROM o JOIN l ON l.oid = o.id ORDER BY 1, 4",
    );
    run(&mut s, "CREATE VIEW ov6 AS SELECT o.*, row_to_json(o.*) AS j, (o).amt AS r, row_to_json(o) FROM o WHERE o.id = 3");
    let views = ["ov", "ov2", "ov3", "ov4", "ov5", "ov6"];
    let before = definitions(&mut s, &views);
    assert_eq!(
        before,
        [
            " SELECT o.id, name, (SELECT sum(n) FROM l WHERE l.oid = o.id) AS total FROM o WHERE amt > 1 ORDER BY name;",
            " SELECT amt AS name, id FROM o ORDER BY name, amt;",
            " SELECT ov.name, ov.total FROM ov JOIN l ON l.oid = ov.id ORDER BY 1, 2;",
            " WITH l AS (SELECT 1 AS n) SELECT b.name, l.n FROM o b, l WHERE b.id = 1;",
            " SELECT (o).*, l.name AS item FROM o JOIN l ON l.oid = o.id ORDER BY 1, 4;",
            " SELECT o.*, row_to_json(o.*) AS j, (o).amt AS r, row_to_json(o) FROM o WHERE o.id = 3;",
        ]
    );
    let json_before = cells(&mut s, "SELECT row_to_json(ov) FROM ov");
    run(&mut s, "ALTER TABLE o RENAME COLUMN name TO \"Title\"");
    run(&mut s, "ALTER TABLE o RENAME COLUMN amt TO amount");
    run(&mut s, "ALTER TABLE o RENAME COLUMN amount TO amt2");
    run(&mut s, "ALTER TABLE l RENAME COLUMN n TO qty");
    run(&mut s, "ALTER TABLE o RENAME TO orders");
    run(&mut s, "ALTER TABLE ov RENAME TO ov_renamed");
    // PostgreSQL 15 names the same objects (its layout differs: it qualifies every
    // column and breaks lines); a renamed column alone in a select item keeps its
    // output name as an alias, and `(o).*` stays the row of the table now called
    // orders.
    assert_eq!(
        definitions(&mut s, &["ov_renamed", "ov2", "ov3", "ov4", "ov5", "ov6"]),
        [
            " SELECT orders.id, \"Title\" AS name, (SELECT sum(qty) FROM l WHERE l.oid = orders.id) AS total \
             FROM orders WHERE amt2 > 1 ORDER BY name;",
            " SELECT amt2 AS name, id FROM orders ORDER BY name, amt2;",
            " SELECT ov_renamed.name, ov_renamed.total FROM ov_renamed JOIN l ON l.oid = ov_renamed.id ORDER BY 1, 2;",
            " WITH l AS (SELECT 1 AS n) SELECT b.\"Title\" AS name, l.n FROM orders b, l WHERE b.id = 1;",
            " SELECT (orders).*, l.name AS item FROM orders JOIN l ON l.oid = orders.id ORDER BY 1, 4;",
            " SELECT orders.*, row_to_json(orders.*) AS j, (orders).amt2 AS r, row_to_json(orders) FROM orders WHERE orders.id = 3;",
        ]
    );
    // information_schema.views shows the same text, as PostgreSQL's (pg_get_viewdef's).
    assert_eq!(
        cells(&mut s, "SELECT view_definition FROM information_schema.views WHERE table_name = 'ov2'"),
        [[" SELECT amt2 AS name, id FROM orders ORDER BY name, amt2;"]]
    );
    // The view's rows keep their column names, in JSON too.
    assert_eq!(cells(&mut s, "SELECT row_to_json(ov_renamed) FROM ov_renamed"), json_before);
    assert_eq!(json_before, [[r#"{"id":1,"name":"a","total":30}"#], [r#"{"id":3,"name":"c","total":30}"#]]);
}
