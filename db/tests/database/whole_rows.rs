//! Whole-row references and row constructors through `Session::execute`: a FROM item's
//! name as a value (`SELECT t FROM t`, `row_to_json(t)`, `t.*` in a call, a subquery's
//! or WITH query's alias, both sides of a join, the NULL row of an outer join's inner
//! side, an outer query's row in a correlated subquery), `ROW(a, b)` and `(a, b)`,
//! record comparisons and `IS [NOT] NULL`, `(t).a`, `pg_typeof`, and records kept out
//! of tables. Each expected result is what PostgreSQL 15 returns for the same query on
//! the same rows (psql's `-A` output; a boolean column shows as its value's text,
//! `true`/`false`, a boolean inside a record as record_out writes it, `t`/`f`).

use crate::common::{fails, one, open, pipe_rows as rows, run};
use db::{DbError, Session};

fn setup(s: &mut Session) {
    run(s, "SET TIME ZONE 'UTC'");
    run(
        s,
        "CREATE TABLE t (id INT PRIMARY KEY, name TEXT, price NUMERIC(10,2), at TIMESTAMPTZ, \
         flag BOOLEAN, tags TEXT[])",
    );
    run(
        s,
        "INSERT INTO t VALUES (1, 'abc', 1.50, '2024-01-02 03:04:05+00', true, '{a,b}'), \
         (2, 'a,b \"q\"', NULL, NULL, NULL, NULL), (3, '', 0, '2024-06-01 00:00:00.123+00', false, '{}')",
    );
    // No primary key: a hidden row id tells its rows from an outer join's NULL row.
    run(s, "CREATE TABLE u (uid INT, tid INT, note VARCHAR(10))");
    run(s, "INSERT INTO u VALUES (10, 1, 'x'), (11, 2, NULL)");
    run(s, "COMMIT");
}

#[test]
fn a_whole_row_is_a_record_in_record_out_text_and_an_object_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(&mut s, "SELECT t FROM t ORDER BY id"),
        [
            r#"(1,abc,1.50,"2024-01-02 03:04:05+00",t,"{a,b}")"#,
            r#"(2,"a,b ""q""",,,,)"#,
            r#"(3,"",0.00,"2024-06-01 00:00:00.123+00",f,{})"#,
        ]
    );
    assert_eq!(
        rows(&mut s, "SELECT row_to_json(t) FROM t ORDER BY id"),
        [
            r#"{"id":1,"name":"abc","price":1.50,"at":"2024-01-02T03:04:05+00:00","flag":true,"tags":["a","b"]}"#,
            r#"{"id":2,"name":"a,b \"q\"","price":null,"at":null,"flag":null,"tags":null}"#,
            r#"{"id":3,"name":"","price":0.00,"at":"2024-06-01T00:00:00.123+00:00","flag":false,"tags":[]}"#,
        ]
    );
    assert_eq!(
        one(&mut s, "SELECT row_to_json(t.*) FROM t WHERE id = 1"),
        r#"{"id":1,"name":"abc","price":1.50,"at":"2024-01-02T03:04:05+00:00","flag":true,"tags":["a","b"]}"#
    );
    assert_eq!(
        one(&mut s, "SELECT json_agg(s) FROM (SELECT id, name FROM t) s"),
        "[{\"id\":1,\"name\":\"abc\"}, \n {\"id\":2,\"name\":\"a,b \\\"q\\\"\"}, \n {\"id\":3,\"name\":\"\"}]"
    );
    assert_eq!(
        one(&mut s, "WITH c AS (SELECT id, flag FROM t) SELECT json_agg(c ORDER BY id) FROM c"),
        "[{\"id\":1,\"flag\":true}, \n {\"id\":2,\"flag\":null}, \n {\"id\":3,\"flag\":false}]"
    );
    // A CHAR(n) field is blank-padded in the text and the JSON, as its output function
    // shows it.
    run(&mut s, "CREATE TABLE cc (k INT PRIMARY KEY, c CHAR(4), v VARCHAR(5))");
    run(&mut s, "INSERT INTO cc VALUES (1, 'ab', 'x y'), (2, NULL, '')");
    assert_eq!(
        rows(&mut s, "SELECT cc, row_to_json(cc), to_jsonb(cc) FROM cc ORDER BY k"),
        [
            r#"(1,"ab  ","x y")|{"k":1,"c":"ab  ","v":"x y"}|{"c": "ab  ", "k": 1, "v": "x y"}"#,
            r#"(2,,"")|{"k":2,"c":null,"v":""}|{"c": null, "k": 2, "v": ""}"#,
        ]
    );
    assert_eq!(
        one(&mut s, "SELECT json_agg(s) FROM (SELECT c FROM cc) s"),
        "[{\"c\":\"ab  \"}, \n {\"c\":null}]"
    );
    // A column named as its table is the column, as in PostgreSQL.
    run(&mut s, "CREATE TABLE w (w INT, x TEXT)");
    run(&mut s, "INSERT INTO w VALUES (1, 'a')");
    assert_eq!(rows(&mut s, "SELECT w, row_to_json(w.*) FROM w"), [r#"1|{"w":1,"x":"a"}"#]);
}

#[test]
fn whole_rows_of_joined_relations_and_of_an_outer_joins_missing_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT t, u, row_to_json(u), (t).name, (u.*).note FROM t JOIN u ON u.tid = t.id ORDER BY t.id"
        ),
        [
            r#"(1,abc,1.50,"2024-01-02 03:04:05+00",t,"{a,b}")|(10,1,x)|{"uid":10,"tid":1,"note":"x"}|abc|x"#,
            r#"(2,"a,b ""q""",,,,)|(11,2,)|{"uid":11,"tid":2,"note":null}|a,b "q"|NULL"#,
        ]
    );
    // The inner side's row that matched nothing is NULL, not a record of NULLs.
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.id, u, row_to_json(u), u IS NULL FROM t LEFT JOIN u ON u.tid = t.id ORDER BY t.id"
        ),
        [
            r#"1|(10,1,x)|{"uid":10,"tid":1,"note":"x"}|false"#,
            r#"2|(11,2,)|{"uid":11,"tid":2,"note":null}|false"#,
            "3|NULL|NULL|true",
        ]
    );
    // A subquery's row has no key: missing, every field is NULL.
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.id, row_to_json(x), x IS NULL, (x).uid FROM t LEFT JOIN (SELECT uid, tid FROM u) x \
             ON x.tid = t.id ORDER BY t.id"
        ),
        [r#"1|{"uid":10,"tid":1}|false|10"#, r#"2|{"uid":11,"tid":2}|false|11"#, "3|NULL|true|NULL"]
    );
    // A correlated subquery's own FROM item, aggregated per outer row.
    assert_eq!(
        rows(&mut s, "SELECT (SELECT json_agg(u) FROM u WHERE u.tid = t.id) FROM t ORDER BY id"),
        [r#"[{"uid":10,"tid":1,"note":"x"}]"#, r#"[{"uid":11,"tid":2,"note":null}]"#, "NULL"]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT json_agg(x ORDER BY id) FROM (SELECT t.id, u.note FROM t JOIN u ON u.tid = t.id) x"
        ),
        "[{\"id\":1,\"note\":\"x\"}, \n {\"id\":2,\"note\":null}]"
    );
    // The column a field access reads is named after the field.
    let result = run(&mut s, "SELECT (t).id, (t.*).name FROM t WHERE id = 2");
    let names: Vec<&str> = result.columns().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["id", "name"]);
}

#[test]
fn row_constructors_compare_field_by_field_and_are_null_by_postgresqls_rule() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT ROW(1, 'x'), (1, 'a b', NULL), row_to_json(ROW(1, 'x')), row_to_json((1, NULL, 'z')), \
             ROW(1, ROW(2, 'a b')), row_to_json(ROW(1, ROW(2, 'a b'), ARRAY[1, 2]))"
        ),
        [
            r#"(1,x)|(1,"a b",)|{"f1":1,"f2":"x"}|{"f1":1,"f2":null,"f3":"z"}|(1,"(2,""a b"")")|{"f1":1,"f2":{"f1":2,"f2":"a b"},"f3":[1,2]}"#
        ]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT ROW(1, 2) = ROW(1, 2), ROW(1, 2) < ROW(1, 3), ROW(1, NULL) = ROW(1, NULL), \
             ROW(1, 2) IS NULL, ROW(NULL, NULL) IS NULL, ROW(1, NULL) IS NULL, ROW(1, NULL) IS NOT NULL, \
             ROW(1, 2) IS NOT NULL"
        ),
        ["true|true|NULL|false|true|false|false|true"]
    );
    // A whole row is NULL when every column is, NOT NULL when none is; it equals itself
    // even with NULL columns (record_eq).
    assert_eq!(
        rows(&mut s, "SELECT id, t IS NULL, t IS NOT NULL, t = t FROM t ORDER BY id"),
        ["1|false|true|true", "2|false|false|true", "3|false|true|true"]
    );
    let e = fails(&mut s, "SELECT (t).nope FROM t");
    assert!(matches!(e.kind(), DbError::UnknownColumn(_)), "{e:?}");
    // PostgreSQL: function row_to_json(integer) does not exist (42883).
    let e = fails(&mut s, "SELECT row_to_json(1)");
    assert_eq!(e.sqlstate(), "42883", "{e}");
    assert!(e.to_string().contains("row_to_json(integer)"), "{e}");
}

#[test]
fn pg_typeof_names_types_as_postgresql_prints_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT pg_typeof(1), pg_typeof(1::bigint), pg_typeof(3000000000), pg_typeof(1.5), pg_typeof('x'), \
             pg_typeof('x'::text), pg_typeof('x'::varchar(3)), pg_typeof(NULL), pg_typeof(now()), \
             pg_typeof(ROW(1, 2)), pg_typeof(t), pg_typeof(s) FROM t, (SELECT 1 AS a) s WHERE id = 1"
        ),
        [
            "integer|bigint|bigint|numeric|unknown|text|character varying|unknown|timestamp with time zone|record|t|record"
        ]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT pg_typeof(id), pg_typeof(id + 1), pg_typeof(price), pg_typeof(name), pg_typeof(at), \
             pg_typeof(flag), pg_typeof(tags) FROM t WHERE id = 1"
        ),
        ["integer|integer|numeric|text|timestamp with time zone|boolean|text[]"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT pg_typeof(count(*)), pg_typeof(avg(id)), pg_typeof(ARRAY[1, 2]), pg_typeof(1.5::float8), \
             pg_typeof(CURRENT_DATE), pg_typeof(LOCALTIMESTAMP), pg_typeof('{}'::jsonb), pg_typeof(pg_typeof(1)) FROM t"
        ),
        ["bigint|numeric|integer[]|double precision|date|timestamp without time zone|jsonb|regtype"]
    );
    // A view's row is of the type named after it, as a table's is.
    run(&mut s, "CREATE VIEW vv AS SELECT id, name FROM t");
    assert_eq!(rows(&mut s, "SELECT vv, pg_typeof(vv) FROM vv WHERE id = 1"), ["(1,abc)|vv"]);
    // Its result is a regtype, which compares with one and casts to its name.
    assert_eq!(
        rows(&mut s, "SELECT pg_typeof(1) = 'integer'::regtype, pg_typeof(1)::text, pg_typeof(x) FROM (SELECT 'x' AS x) s"),
        ["true|integer|text"]
    );
    let result = run(&mut s, "SELECT pg_typeof(1)");
    assert_eq!(result.columns()[0].ty, Some(db::DataType::Catalog(db::value::CatalogType::RegType)));
}

#[test]
fn records_never_reach_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let e = fails(&mut s, "CREATE TABLE r1 AS SELECT t FROM t");
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    let e = fails(&mut s, "CREATE VIEW r1 AS SELECT t, 1 AS one FROM t");
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    run(&mut s, "CREATE TABLE r2 (a INT, j JSON, s TEXT)");
    // Into a text column a record goes as its text, as PostgreSQL's assignment does.
    run(&mut s, "INSERT INTO r2 (s) SELECT t FROM t WHERE id = 2");
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT s FROM r2"), r#"(2,"a,b ""q""",,,,)"#);
    // PostgreSQL: column "a" is of type integer but expression is of type record (42804).
    for sql in [
        "INSERT INTO r2 (a) SELECT ROW(1, 2)",
        "INSERT INTO r2 (j) SELECT t FROM t",
        "UPDATE r2 SET a = ROW(1)",
    ] {
        let e = fails(&mut s, sql);
        assert!(matches!(e.kind(), DbError::DatatypeMismatch(_)), "{sql}: {e:?}");
        assert_eq!(e.sqlstate(), "42804", "{sql}");
    }
    run(&mut s, "ROLLBACK");
    assert_eq!(rows(&mut s, "SELECT a, j, s FROM r2"), [r#"NULL|NULL|(2,"a,b ""q""",,,,)"#]);
}
