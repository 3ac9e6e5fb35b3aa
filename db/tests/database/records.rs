//! Records (`db::record`): `information_schema._pg_expandarray` in FROM (columns x and n)
//! and in a select list (one `record` per row, several calls in lockstep), a record's
//! fields read with `(expr).field` from the call itself and from a subquery's column,
//! and the errors of a field that is not there or of a value that is no record. The
//! expected rows are PostgreSQL 15's answers to the same queries.

use db::error::DbError;

use crate::common::{fails, open, pipe_rows as rows, run};

#[test]
fn pg_expandarray_in_from_gives_each_element_and_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(
        rows(&mut s, "SELECT * FROM information_schema._pg_expandarray(ARRAY['a','b',NULL])"),
        ["a|1", "b|2", "NULL|3"]
    );
    assert_eq!(
        rows(&mut s, "SELECT e.n FROM information_schema._pg_expandarray('{7,8}'::int[]) e"),
        ["1", "2"]
    );
    // Unqualified, it is no function (PostgreSQL keeps it in information_schema, off
    // the search path).
    assert_eq!(fails(&mut s, "SELECT * FROM _pg_expandarray(ARRAY[1])").sqlstate(), "0A000");
}

#[test]
fn a_select_list_call_of_pg_expandarray_is_a_record_whose_fields_are_read_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    // One record a row, in PostgreSQL's text form (record_out's quoting).
    assert_eq!(rows(&mut s, "SELECT information_schema._pg_expandarray(ARRAY[10,20])"), ["(10,1)", "(20,2)"]);
    assert_eq!(
        rows(&mut s, "SELECT information_schema._pg_expandarray(ARRAY['a b','',NULL,'q\"'])"),
        ["(\"a b\",1)", "(\"\",2)", "(,3)", "(\"q\"\"\",4)"]
    );
    // Fields of the call, the calls run in lockstep (not a cross product), each output
    // column named after its field.
    let result = s
        .execute(
            "SELECT (information_schema._pg_expandarray(ARRAY[10,20])).n, \
             (information_schema._pg_expandarray(ARRAY[10,20])).x",
            &[],
        )
        .unwrap();
    let names: Vec<&str> = result.columns().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["n", "x"]);
    let values: Vec<String> = result.rows().iter().map(|r| format!("{}|{}", r[0], r[1])).collect();
    assert_eq!(values, ["1|10", "2|20"]);
    // A record column of a subquery, its fields read outside it.
    assert_eq!(
        rows(
            &mut s,
            "SELECT r.k, (r.e).x FROM (SELECT 1 AS k, information_schema._pg_expandarray(ARRAY[5,6]) AS e) r \
             WHERE (r.e).n = 2"
        ),
        ["1|6"]
    );
}

#[test]
fn a_missing_field_and_a_field_of_a_scalar_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    // PostgreSQL: could not identify column "z" in record data type (42703).
    let e = fails(&mut s, "SELECT (information_schema._pg_expandarray(ARRAY[1])).z");
    assert!(matches!(e.kind(), DbError::UnknownColumn(_)), "{e}");
    // PostgreSQL: column notation .x applied to type integer, which is not a composite
    // type (42809).
    let e = fails(&mut s, "SELECT (r.k).x FROM (SELECT 1 AS k) r");
    assert_eq!(e.sqlstate(), "42809", "{e}");
    // No table or view keeps a record.
    let e = fails(&mut s, "CREATE VIEW expanded AS SELECT information_schema._pg_expandarray(ARRAY[1]) AS e");
    assert_eq!(e.sqlstate(), "0A000", "{e}");
}

#[test]
fn pg_proc_lists_pg_expandarray_in_information_schema_as_set_returning() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    // PostgreSQL 15 (which lists generate_series once per overload).
    assert_eq!(
        rows(
            &mut s,
            "SELECT DISTINCT n.nspname, p.proname, p.proretset FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE p.proname IN ('_pg_expandarray', 'generate_series') ORDER BY 2"
        ),
        ["information_schema|_pg_expandarray|true", "pg_catalog|generate_series|true"]
    );
}

#[test]
fn a_record_star_expands_into_its_fields_in_a_select_list() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE n (a INT, b INT)");
    run(&mut s, "INSERT INTO n VALUES (1, 2), (1, NULL), (2, 1), (3, 4)");
    run(&mut s, "COMMIT");
    // A whole row, beside other items and twice; the columns named after the fields.
    let result = run(&mut s, "SELECT (n).*, 1 AS x, (n) . * FROM n WHERE a = 1 ORDER BY b");
    let names: Vec<&str> = result.columns().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "x", "a", "b"]);
    let values: Vec<String> =
        result.rows().iter().map(|r| r.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|")).collect();
    assert_eq!(values, ["1|2|1|1|2", "1|NULL|1|1|NULL"]);
    // A row constructor, a record column of a subquery, `t.*` as a record, and a
    // function's record (the call run once per row of its set).
    assert_eq!(
        rows(&mut s, "SELECT (ROW(1, 'x'::text)).*, (ROW(a, b)).f2, (ROW(a, b)).* FROM n WHERE a = 2"),
        ["1|x|1|2|1"]
    );
    assert_eq!(
        rows(&mut s, "SELECT (q.s).*, (s).a FROM (SELECT n AS s FROM n) q WHERE (s).a = 2"),
        ["2|1|2"]
    );
    assert_eq!(rows(&mut s, "SELECT (n.*).* FROM n WHERE a = 3"), ["3|4"]);
    assert_eq!(rows(&mut s, "SELECT (information_schema._pg_expandarray(ARRAY[10,20])).*"), ["10|1", "20|2"]);
    // Through a prepared statement's parameter and a view.
    assert_eq!(
        s.execute("SELECT (n).* FROM n WHERE a = $1", &[db::Value::Int(3)]).unwrap().rows().to_vec(),
        [[db::Value::Int(3), db::Value::Int(4)]]
    );
    run(&mut s, "CREATE VIEW vs AS SELECT (n).*, 1 AS one FROM n");
    assert_eq!(rows(&mut s, "SELECT * FROM vs WHERE a = 3"), ["3|4|1"]);
    // PostgreSQL: type integer is not composite (42809); row expansion via "*" is not
    // supported here (0A000); the fields of an ungrouped row (42803).
    let e = fails(&mut s, "SELECT (1).*");
    assert_eq!(e.sqlstate(), "42809", "{e}");
    assert!(e.to_string().contains("type integer is not composite"), "{e}");
    let e = fails(&mut s, "SELECT row_to_json((n).*) FROM n");
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    let e = fails(&mut s, "SELECT count(*), (n).* FROM n GROUP BY n");
    assert_eq!(e.sqlstate(), "42803", "{e}");
}
