//! The JSON aggregates through `Session::execute`: json_agg and jsonb_agg (ORDER BY,
//! DISTINCT, NULL rows as JSON null, no rows as NULL, PostgreSQL's text layout),
//! json_object_agg and jsonb_object_agg (duplicate keys, the refused keys), FILTER and
//! GROUP BY. Each expected result is what PostgreSQL 15 returns for the same query on
//! the same rows.

use crate::common::{fails, one, open, run, space_rows as rows};
use db::{DataType, DbError, Session};

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE jt (id INT PRIMARY KEY, g TEXT, v INT, s TEXT, n NUMERIC, b BOOLEAN)");
    run(
        s,
        "INSERT INTO jt VALUES (1, 'a', 10, 'x', 1.50, true), (2, 'a', NULL, 'y', 2, false), \
         (3, 'b', 30, NULL, NULL, NULL), (4, 'b', 5, 'w\"q', 3.0, true)",
    );
    run(s, "COMMIT");
}

#[test]
fn json_agg_keeps_null_rows_and_postgresql_layout() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(one(&mut s, "SELECT json_agg(v ORDER BY id) FROM jt"), "[10, null, 30, 5]");
    assert_eq!(one(&mut s, "SELECT jsonb_agg(v ORDER BY id) FROM jt"), "[10, null, 30, 5]");
    // NULLs sort last ascending, first descending, as PostgreSQL's default.
    assert_eq!(one(&mut s, "SELECT json_agg(v ORDER BY v DESC) FROM jt"), "[null, 30, 10, 5]");
    assert_eq!(one(&mut s, "SELECT json_agg(v ORDER BY v NULLS FIRST) FROM jt"), "[null, 5, 10, 30]");
    assert_eq!(one(&mut s, "SELECT jsonb_agg(s ORDER BY id DESC) FROM jt"), r#"["w\"q", null, "y", "x"]"#);
    assert_eq!(
        rows(
            &mut s,
            "SELECT json_agg(n ORDER BY id), jsonb_agg(n ORDER BY id), json_agg(b ORDER BY id), \
             jsonb_agg(b ORDER BY id) FROM jt"
        ),
        ["[1.50, 2, null, 3.0] [1.50, 2, null, 3.0] [true, false, null, true] [true, false, null, true]"]
    );
    assert_eq!(one(&mut s, "SELECT json_agg(DISTINCT g) FROM jt"), r#"["a", "b"]"#);
    assert_eq!(
        one(&mut s, "SELECT json_agg(DISTINCT x) FROM (VALUES (3), (NULL), (1), (3)) v(x)"),
        "[1, 3, null]"
    );
    // No row: NULL, not an empty array.
    assert_eq!(rows(&mut s, "SELECT json_agg(v), jsonb_agg(v) FROM jt WHERE false"), ["NULL NULL"]);
    let columns = run(&mut s, "SELECT json_agg(v), jsonb_agg(v) FROM jt").columns().to_vec();
    assert_eq!(columns[0].ty, Some(DataType::Json), "{columns:?}");
    assert_eq!(columns[1].ty, Some(DataType::Jsonb), "{columns:?}");
}

#[test]
fn json_agg_of_json_arrays_and_objects_lays_them_out_as_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // json values go in as written; a jsonb aggregate normalises them.
    let object = r#"(VALUES ('{"b":1,  "a":2}'::json)) v(x)"#;
    assert_eq!(one(&mut s, &format!("SELECT json_agg(x) FROM {object}")), r#"[{"b":1,  "a":2}]"#);
    assert_eq!(one(&mut s, &format!("SELECT jsonb_agg(x) FROM {object}")), r#"[{"a": 2, "b": 1}]"#);
    assert_eq!(
        one(&mut s, "SELECT json_agg(json_build_object('id', id) ORDER BY id) FROM jt"),
        r#"[{"id" : 1}, {"id" : 2}, {"id" : 3}, {"id" : 4}]"#
    );
    assert_eq!(
        one(&mut s, "SELECT jsonb_agg(jsonb_build_object('id', id) ORDER BY id) FROM jt"),
        r#"[{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]"#
    );
    // PostgreSQL breaks the line before every array element but the first.
    assert_eq!(
        one(&mut s, "SELECT json_agg(ARRAY[id, v] ORDER BY id) FROM jt"),
        "[[1,10], \n [2,null], \n [3,30], \n [4,5]]"
    );
    assert_eq!(
        one(&mut s, "SELECT json_agg(x) FROM (VALUES (NULL::int[]), (ARRAY[1,2]), (ARRAY[3])) v(x)"),
        "[null, \n [1,2], \n [3]]"
    );
}

#[test]
fn json_object_agg_keeps_every_pair_and_jsonb_the_last_of_each_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        one(&mut s, "SELECT json_object_agg(s, v ORDER BY id) FROM jt WHERE s IS NOT NULL"),
        r#"{ "x" : 10, "y" : null, "w\"q" : 5 }"#
    );
    assert_eq!(
        one(&mut s, "SELECT jsonb_object_agg(s, v) FROM jt WHERE s IS NOT NULL"),
        r#"{"x": 10, "y": null, "w\"q": 5}"#
    );
    // Keys are the text of any scalar.
    assert_eq!(
        one(&mut s, "SELECT json_object_agg(id, s ORDER BY id) FROM jt"),
        r#"{ "1" : "x", "2" : "y", "3" : null, "4" : "w\"q" }"#
    );
    assert_eq!(
        rows(&mut s, "SELECT json_object_agg(true, 1.50), jsonb_object_agg(2.50, 'x')"),
        [r#"{ "true" : 1.50 } {"2.50": "x"}"#]
    );
    assert_eq!(
        one(&mut s, "SELECT json_object_agg(g, v ORDER BY id) FROM jt"),
        r#"{ "a" : 10, "a" : null, "b" : 30, "b" : 5 }"#
    );
    assert_eq!(
        one(&mut s, "SELECT json_object_agg(g, v ORDER BY v) FROM jt"),
        r#"{ "b" : 5, "a" : 10, "b" : 30, "a" : null }"#
    );
    assert_eq!(one(&mut s, "SELECT jsonb_object_agg(g, v ORDER BY id) FROM jt"), r#"{"a": null, "b": 5}"#);
    assert_eq!(
        one(&mut s, "SELECT jsonb_object_agg(k, v ORDER BY v DESC) FROM (VALUES ('a', 1), ('a', 2)) t(k, v)"),
        r#"{"a": 1}"#
    );
    assert_eq!(
        one(&mut s, r#"SELECT json_object_agg(k, x) FROM (VALUES ('k', '{"b":1,  "a":2}'::json)) v(k, x)"#),
        r#"{ "k" : {"b":1,  "a":2} }"#
    );
    assert_eq!(
        rows(&mut s, "SELECT json_object_agg(s, v), jsonb_object_agg(s, v) FROM jt WHERE false"),
        ["NULL NULL"]
    );
    let columns =
        run(&mut s, "SELECT json_object_agg(g, v), jsonb_object_agg(g, v) FROM jt").columns().to_vec();
    assert_eq!(columns[0].ty, Some(DataType::Json), "{columns:?}");
    assert_eq!(columns[1].ty, Some(DataType::Jsonb), "{columns:?}");
}

#[test]
fn json_object_agg_refuses_null_and_structured_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    for sql in ["SELECT json_object_agg(s, v) FROM jt", "SELECT jsonb_object_agg(s, v) FROM jt"] {
        let e = fails(&mut s, sql);
        assert!(matches!(e.kind(), DbError::InvalidArgument(_)), "{sql}: {e:?}");
        assert_eq!(e.sqlstate(), "22023");
        assert_eq!(e.to_string(), "field name must not be null");
    }
    for sql in [
        "SELECT json_object_agg(ARRAY[1], 1)",
        "SELECT jsonb_object_agg(ARRAY[1], 1)",
        r#"SELECT json_object_agg('{"a":1}'::json, 1)"#,
        r#"SELECT jsonb_object_agg('{"a":1}'::jsonb, 1)"#,
    ] {
        let e = fails(&mut s, sql);
        assert_eq!(e.sqlstate(), "22023", "{sql}: {e:?}");
        assert_eq!(e.to_string(), "key value must be scalar, not array, composite, or json", "{sql}");
    }
    for sql in ["SELECT json_agg(v, s) FROM jt", "SELECT json_object_agg(v) FROM jt"] {
        assert_eq!(fails(&mut s, sql).sqlstate(), "42883", "{sql}");
    }
}

#[test]
fn json_aggregates_filter_and_group() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(&mut s, "SELECT g, json_agg(v) FILTER (WHERE v > 6) FROM jt GROUP BY g ORDER BY g"),
        ["a [10]", "b [30]"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT g, jsonb_agg(s ORDER BY id DESC) FILTER (WHERE s IS NOT NULL), \
             json_object_agg(id, v ORDER BY id) FILTER (WHERE b), \
             jsonb_object_agg(id, n) FILTER (WHERE id > 1) \
             FROM jt GROUP BY g ORDER BY g"
        ),
        [r#"a ["y", "x"] { "1" : 10 } {"2": 2}"#, r#"b ["w\"q"] { "4" : 5 } {"3": null, "4": 3.0}"#,]
    );
    // A group whose every row is filtered out aggregates to NULL.
    assert_eq!(
        rows(&mut s, "SELECT g, json_agg(id) FILTER (WHERE v > 20) FROM jt GROUP BY g ORDER BY g"),
        ["a NULL", "b [3]"]
    );
}

#[test]
fn whole_row_references_aggregate_as_objects_of_their_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // PostgreSQL 15: json keeps the columns' order, jsonb its normal form's.
    assert_eq!(
        one(&mut s, "SELECT json_agg(jt) FROM jt WHERE id < 3"),
        "[{\"id\":1,\"g\":\"a\",\"v\":10,\"s\":\"x\",\"n\":1.50,\"b\":true}, \n \
         {\"id\":2,\"g\":\"a\",\"v\":null,\"s\":\"y\",\"n\":2,\"b\":false}]"
    );
    assert_eq!(
        one(&mut s, "SELECT jsonb_agg(jt ORDER BY jt.id DESC) FROM jt WHERE id > 2"),
        r#"[{"b": true, "g": "b", "n": 3.0, "s": "w\"q", "v": 5, "id": 4}, {"b": null, "g": "b", "n": null, "s": null, "v": 30, "id": 3}]"#
    );
    assert_eq!(
        rows(&mut s, "SELECT to_json(jt), to_jsonb(jt) FROM jt WHERE id = 4"),
        [
            r#"{"id":4,"g":"b","v":5,"s":"w\"q","n":3.0,"b":true} {"b": true, "g": "b", "n": 3.0, "s": "w\"q", "v": 5, "id": 4}"#
        ]
    );
    assert_eq!(
        one(&mut s, "SELECT row_to_json(jt) FROM jt WHERE id = 3"),
        r#"{"id":3,"g":"b","v":30,"s":null,"n":null,"b":null}"#
    );
    assert_eq!(
        rows(&mut s, "SELECT g, json_agg(jt.* ORDER BY id) FROM jt GROUP BY g ORDER BY g"),
        [
            "a [{\"id\":1,\"g\":\"a\",\"v\":10,\"s\":\"x\",\"n\":1.50,\"b\":true}, \n \
             {\"id\":2,\"g\":\"a\",\"v\":null,\"s\":\"y\",\"n\":2,\"b\":false}]",
            "b [{\"id\":3,\"g\":\"b\",\"v\":30,\"s\":null,\"n\":null,\"b\":null}, \n \
             {\"id\":4,\"g\":\"b\",\"v\":5,\"s\":\"w\\\"q\",\"n\":3.0,\"b\":true}]",
        ]
    );
    // A name that is neither a column nor a FROM item stays 42703.
    let e = fails(&mut s, "SELECT json_agg(nothing) FROM jt");
    assert!(matches!(e.kind(), DbError::UnknownColumn(_)), "{e:?}");
}

#[test]
fn json_aggregates_as_window_functions_are_refused_as_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    for sql in [
        "SELECT json_agg(v) OVER () FROM jt",
        "SELECT jsonb_agg(v) OVER (PARTITION BY g) FROM jt",
        "SELECT json_object_agg(g, v) OVER () FROM jt",
        "SELECT jsonb_object_agg(g, v) OVER () FROM jt",
    ] {
        let e = fails(&mut s, sql);
        assert!(matches!(e.kind(), DbError::Unsupported(_)), "{sql}: {e:?}");
    }
}
