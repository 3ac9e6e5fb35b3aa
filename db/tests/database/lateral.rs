//! LATERAL in FROM (`FROM t, LATERAL (SELECT ...) s`, `[LEFT|CROSS] JOIN LATERAL`), set-
//! returning functions in FROM reading the items before them (implicitly lateral), the
//! errors of a reference a FROM item cannot make, and row-valued `IN (SELECT ...)`. Every
//! expected row, SQLSTATE, HINT and DETAIL is PostgreSQL 15's answer to the same query on
//! the same data.

use db::error::DbError;
use db::Value;

use crate::common::{fails, open, pipe_rows as rows, run};

/// `t` (outer rows, one with no match in `u` and one with a NULL), `u` (several rows
/// per `x`, one with a NULL `x`) and `g`, committed.
fn tables(s: &mut db::Session) {
    run(s, "CREATE TABLE t (a int PRIMARY KEY, b int, n int, arr int[])");
    run(s, "INSERT INTO t VALUES (1, 10, 2, '{5,6}'), (2, 20, 0, '{}'), (3, NULL, 3, NULL), (4, 40, 1, '{7,NULL}')");
    run(s, "CREATE TABLE u (id int PRIMARY KEY, x int, y int, z text)");
    run(
        s,
        "INSERT INTO u VALUES (1, 1, 5, 'p'), (2, 1, 7, 'q'), (3, 1, 6, 'r'), (4, 2, 9, 's'), (5, NULL, 1, 'n'), (6, 4, 2, 'w')",
    );
    run(s, "CREATE TABLE g (k int PRIMARY KEY, v int)");
    run(s, "INSERT INTO g VALUES (1, 5), (2, 9)");
    run(s, "COMMIT");
}

#[test]
fn a_lateral_subquery_gives_the_top_rows_of_each_outer_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.y FROM t, LATERAL (SELECT y FROM u WHERE u.x = t.a ORDER BY y DESC LIMIT 2) s ORDER BY 1, 2"
        ),
        ["1|6", "1|7", "2|9", "4|2"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.y FROM t JOIN LATERAL (SELECT y FROM u WHERE u.x = t.a ORDER BY y LIMIT 1) s ON true ORDER BY 1"
        ),
        ["1|5", "2|9", "4|2"]
    );
    // An aggregate without GROUP BY gives a row for every outer row, 0 where none match.
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.c, s.m FROM t CROSS JOIN LATERAL (SELECT count(*) c, max(y) m FROM u WHERE u.x = t.a) s ORDER BY 1"
        ),
        ["1|3|7", "2|1|9", "3|0|NULL", "4|1|2"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.c FROM t, LATERAL (SELECT count(*) c FROM u WHERE u.x = t.a GROUP BY u.x HAVING count(*) > 1) s"
        ),
        ["1|3"]
    );
    // The join's condition and the WHERE clause read the lateral side's columns.
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.total FROM t JOIN LATERAL (SELECT sum(y) total FROM u WHERE u.x = t.a) s ON s.total > 5 ORDER BY 1"
        ),
        ["1|18", "2|9"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.y FROM t, LATERAL (SELECT y FROM u WHERE u.x = t.a) s WHERE s.y > 5 ORDER BY 1, 2"
        ),
        ["1|6", "1|7", "2|9"]
    );
    // Its select list reads the outer row too; `s.*` is its columns.
    assert_eq!(
        rows(&mut s, "SELECT t.a, s.* FROM t, LATERAL (SELECT t.a + 1 AS next, t.b) s ORDER BY 1"),
        ["1|2|10", "2|3|20", "3|4|NULL", "4|5|40"]
    );
    // First in FROM it reads nothing before it: an ordinary subquery.
    assert_eq!(rows(&mut s, "SELECT * FROM LATERAL (SELECT 1 AS one) s"), ["1"]);
}

#[test]
fn a_left_join_lateral_keeps_an_outer_row_the_subquery_gives_nothing_for() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.y, s.z FROM t LEFT JOIN LATERAL (SELECT y, z FROM u WHERE u.x = t.a ORDER BY y LIMIT 2) s ON true ORDER BY 1, 2"
        ),
        ["1|5|p", "1|6|r", "2|9|s", "3|NULL|NULL", "4|2|w"]
    );
    // The ON condition decides which subquery rows match; a row none match keeps NULLs.
    assert_eq!(
        rows(&mut s, "SELECT t.a, s.y FROM t LEFT JOIN LATERAL (SELECT y FROM u WHERE u.x = t.a) s ON s.y > 5 ORDER BY 1, 2"),
        ["1|6", "1|7", "2|9", "3|NULL", "4|NULL"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.k FROM t LEFT JOIN LATERAL (SELECT k FROM g WHERE g.k = t.a) s ON true WHERE s.k IS NULL ORDER BY 1"
        ),
        ["3|NULL", "4|NULL"]
    );
}

#[test]
fn a_lateral_subquery_reads_several_items_before_it_and_nests() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, g.k, s.w FROM t, g, LATERAL (SELECT t.b + g.v + u.y w FROM u WHERE u.x = t.a AND u.y > g.v) s ORDER BY 1, 2, 3"
        ),
        ["1|1|21", "1|1|22", "2|1|34"]
    );
    // After a comma, a LEFT JOIN's lateral side still sees the items before the comma.
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, g.k, s.y FROM t, g LEFT JOIN LATERAL (SELECT y FROM u WHERE u.x = t.a AND u.y > g.v) s ON true ORDER BY 1, 2, 3"
        ),
        ["1|1|6", "1|1|7", "1|2|NULL", "2|1|9", "2|2|NULL", "3|1|NULL", "3|2|NULL", "4|1|NULL", "4|2|NULL"]
    );
    // The right side of a LEFT JOIN before it, NULL where that join found nothing.
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.y FROM t LEFT JOIN u ON u.x = t.a, LATERAL (SELECT u.y * 2 AS y) s ORDER BY 1, 2"
        ),
        ["1|10", "1|12", "1|14", "2|18", "3|NULL", "4|4"]
    );
    // A correlated subquery inside the lateral one, reading the lateral one's row.
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.a2, s.q FROM t, LATERAL (SELECT t2.a a2, (SELECT max(y) FROM u WHERE u.x = t2.a) q FROM t t2 WHERE t2.a > t.a) s ORDER BY 1, 2"
        ),
        ["1|2|9", "1|3|NULL", "1|4|2", "2|3|NULL", "2|4|2", "3|4|2"]
    );
    // A lateral subquery in a lateral subquery, both reading the outermost row.
    assert_eq!(
        rows(&mut s, "SELECT t.a, s.v FROM t, LATERAL (SELECT v FROM LATERAL (SELECT t.a * 10 AS v) i WHERE v > 15) s ORDER BY 1"),
        ["2|20", "3|30", "4|40"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, s.x FROM t, LATERAL (SELECT g.k x FROM g WHERE g.k = t.a UNION ALL SELECT 99) s ORDER BY 1, 2"
        ),
        ["1|1", "1|99", "2|2", "2|99", "3|99", "4|99"]
    );
}

#[test]
fn a_lateral_subquery_inside_a_correlated_subquery_reads_both_outer_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT (SELECT string_agg(s.y::text, ',') FROM LATERAL (SELECT y FROM u WHERE u.x = t.a ORDER BY y) s) FROM t ORDER BY a"
        ),
        ["5,6,7", "9", "NULL", "2"]
    );
    assert_eq!(
        rows(&mut s, "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM g, LATERAL (SELECT g.v + t.a w) s WHERE s.w > 8) ORDER BY 1"),
        ["1", "2", "3", "4"]
    );
    assert_eq!(
        rows(&mut s, "SELECT t.a FROM t WHERE EXISTS (SELECT 1 FROM g, LATERAL (SELECT g.v + t.a w) s WHERE s.w > 11) ORDER BY 1"),
        ["3", "4"]
    );
}

#[test]
fn set_returning_functions_in_from_read_the_items_before_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    assert_eq!(
        rows(&mut s, "SELECT a, g FROM t, generate_series(1, t.n) g ORDER BY 1, 2"),
        ["1|1", "1|2", "3|1", "3|2", "3|3", "4|1"]
    );
    assert_eq!(
        rows(&mut s, "SELECT a, u FROM t CROSS JOIN LATERAL unnest(t.arr) u ORDER BY 1, 2"),
        ["1|5", "1|6", "4|7", "4|NULL"]
    );
    assert_eq!(
        rows(&mut s, "SELECT a, u.v, u.i FROM t, unnest(t.arr) WITH ORDINALITY u(v, i) ORDER BY 1, 3"),
        ["1|5|1", "1|6|2", "4|7|1", "4|NULL|2"]
    );
    // After a comma, as the right side of a join of the next item.
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a, g.k, u FROM t, g CROSS JOIN LATERAL unnest(t.arr) u WHERE g.k = 1 ORDER BY 1, 3"
        ),
        ["1|1|5", "1|1|6", "4|1|7", "4|1|NULL"]
    );
}

#[test]
fn explain_shows_a_nested_loop_over_the_lateral_side() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "EXPLAIN SELECT t.a, s.y FROM t LEFT JOIN LATERAL (SELECT y FROM u WHERE u.x = t.a ORDER BY y LIMIT 2) s ON true"
        ),
        ["Nested Loop Left Join", "    -> Seq Scan on t", "    -> Subquery Scan on s"]
    );
    // An equality with the lateral side does not make it a hash join: it runs per row.
    assert_eq!(
        rows(
            &mut s,
            "EXPLAIN SELECT t.a FROM t JOIN LATERAL (SELECT x FROM u WHERE u.y > t.a) s ON s.x = t.a"
        ),
        ["Nested Loop", "    -> Seq Scan on t", "    -> Subquery Scan on s"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT t.a FROM t JOIN LATERAL (SELECT x FROM u WHERE u.y > t.a) s ON s.x = t.a ORDER BY 1"
        ),
        ["1", "1", "1", "2"]
    );
    assert_eq!(
        rows(&mut s, "EXPLAIN SELECT a, g FROM t, generate_series(1, t.n) g"),
        ["Nested Loop", "    -> Seq Scan on t", "    -> Function Scan on generate_series g"]
    );
}

/// The SQLSTATE, message, DETAIL and HINT of the error `sql` fails with.
fn error_of(s: &mut db::Session, sql: &str) -> (String, String, Option<String>, Option<String>) {
    let e = fails(s, sql);
    (e.sqlstate().to_string(), e.kind().to_string(), e.detail(), e.hint().map(str::to_string))
}

#[test]
fn a_reference_a_from_item_cannot_make_is_postgresql_s_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    // Without LATERAL, a subquery in FROM sees no item beside it.
    assert_eq!(
        error_of(&mut s, "SELECT * FROM t, (SELECT x FROM u WHERE x = t.a) s"),
        (
            "42P01".into(),
            "invalid reference to FROM-clause entry for table \"t\"".into(),
            None,
            Some(
                "There is an entry for table \"t\", but it cannot be referenced from this part of the query."
                    .into()
            )
        )
    );
    let e = fails(&mut s, "SELECT * FROM t, (SELECT x FROM u WHERE x = t.a) s");
    assert!(matches!(e.kind(), DbError::InvalidFromReference { .. }), "{e:?}");
    assert_eq!(
        error_of(&mut s, "SELECT * FROM t, (SELECT b) s"),
        (
            "42703".into(),
            "column \"b\" does not exist".into(),
            None,
            Some("There is a column named \"b\" in table \"t\", but it cannot be referenced from this part of the query.".into())
        )
    );
    // An item after it is missing, LATERAL or not.
    for sql in ["SELECT * FROM (SELECT t.a) s, t", "SELECT * FROM LATERAL (SELECT t.a) s, t"] {
        assert_eq!(
            error_of(&mut s, sql),
            ("42P01".into(), "missing FROM-clause entry for table \"t\"".into(), None, None),
            "{sql}"
        );
    }
    // The left side of a LEFT JOIN does not see its right side.
    let e = fails(&mut s, "SELECT * FROM LATERAL (SELECT u.x) s LEFT JOIN u ON true");
    assert!(matches!(e.kind(), DbError::MissingFromEntry(q) if q == "u"), "{e:?}");
    // A RIGHT or FULL join must have every right row apart from the left rows.
    for sql in [
        "SELECT * FROM t RIGHT JOIN LATERAL (SELECT t.a) s ON true",
        "SELECT * FROM t FULL JOIN LATERAL (SELECT t.b) s ON true",
        "SELECT * FROM t RIGHT JOIN LATERAL unnest(t.arr) s ON true",
    ] {
        assert_eq!(
            error_of(&mut s, sql),
            (
                "42P10".into(),
                "invalid reference to FROM-clause entry for table \"t\"".into(),
                Some("The combining JOIN type must be INNER or LEFT for a LATERAL reference.".into()),
                None
            ),
            "{sql}"
        );
    }
    // One that reads nothing of the left side is an ordinary subquery there.
    assert_eq!(
        rows(&mut s, "SELECT t.a FROM t RIGHT JOIN LATERAL (SELECT 1 AS one) s ON true ORDER BY 1"),
        ["1", "2", "3", "4"]
    );
    // A comma item read across a RIGHT join: PostgreSQL runs it, this database says so.
    let e = fails(&mut s, "SELECT * FROM t, g RIGHT JOIN LATERAL (SELECT t.a) s ON true");
    assert_eq!(e.sqlstate(), "0A000", "{e}");
}

#[test]
fn a_row_in_a_subquery_compares_rows_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    let cases = [
        ("SELECT (1, 2) IN (SELECT 1, 2)", "true"),
        // A NULL pair makes an otherwise equal row unknown, and IN with it NULL...
        ("SELECT (1, NULL) IN (SELECT 1, 2)", "NULL"),
        // ...but a row with an unequal pair is unequal whatever the NULL.
        ("SELECT (1, NULL) IN (SELECT 2, 2)", "false"),
        ("SELECT (1, NULL) NOT IN (SELECT 1, 2)", "NULL"),
        ("SELECT (1, 2) NOT IN (SELECT 1, 3)", "true"),
        ("SELECT (1, 2) IN (SELECT 1, 2 WHERE false)", "false"),
        ("SELECT (NULL::int, NULL::int) NOT IN (SELECT 1, 2 WHERE false)", "true"),
        ("SELECT (1, 2) = ANY (SELECT 1, 2)", "true"),
        ("SELECT (1, 2) <> ALL (SELECT 1, 2)", "false"),
    ];
    for (sql, expected) in cases {
        assert_eq!(rows(&mut s, sql), [expected], "{sql}");
    }
    assert_eq!(
        rows(&mut s, "SELECT a, b FROM t WHERE (a, b) IN (SELECT x, y * 2 FROM u) ORDER BY 1"),
        ["1|10"]
    );
    assert_eq!(rows(&mut s, "SELECT id FROM u WHERE (x, y) IN (SELECT a, n + 3 FROM t) ORDER BY 1"), ["1"]);
    assert_eq!(
        rows(
            &mut s,
            "SELECT id FROM u WHERE (x, y) NOT IN (SELECT a, n FROM t WHERE n IS NOT NULL) ORDER BY 1"
        ),
        ["1", "2", "3", "4", "6"]
    );
    // Correlated, and NOT IN meeting NULLs on either side.
    assert_eq!(
        rows(&mut s, "SELECT a, (a, n) IN (SELECT x, y FROM u WHERE u.x = t.a) FROM t ORDER BY 1"),
        ["1|false", "2|false", "3|false", "4|false"]
    );
    assert_eq!(
        rows(&mut s, "SELECT a, (a, a) NOT IN (SELECT x, y - 4 FROM u) FROM t ORDER BY 1"),
        ["1|false", "2|true", "3|true", "4|true"]
    );
    assert_eq!(
        rows(&mut s, "SELECT a, (b, n) NOT IN (SELECT v * 2, k + 1 FROM g) FROM t ORDER BY 1"),
        ["1|false", "2|true", "3|NULL", "4|true"]
    );
    for (sql, message) in [
        ("SELECT (1, 2) IN (SELECT 1)", "subquery has too few columns"),
        ("SELECT (1, 2) IN (SELECT 1, 2, 3)", "subquery has too many columns"),
        ("SELECT 1 IN (SELECT 1, 2)", "subquery has too many columns"),
    ] {
        let e = fails(&mut s, sql);
        assert_eq!(e.sqlstate(), "42601", "{sql}: {e}");
        assert!(e.to_string().contains(message), "{sql}: {e}");
    }
}

#[test]
fn a_prepared_lateral_query_takes_bind_values_and_describes_its_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    let top = s
        .prepare("SELECT t.a, s.y FROM t CROSS JOIN LATERAL (SELECT y FROM u WHERE u.x = t.a AND u.y > $1 ORDER BY y LIMIT $2) s ORDER BY 1, 2")
        .unwrap();
    let names: Vec<String> =
        s.describe_prepared(&top).unwrap().columns.unwrap().iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, ["a", "y"]);
    let text = |r: db::sql::QueryResult| -> Vec<String> {
        r.rows().iter().map(|row| row.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|")).collect()
    };
    assert_eq!(text(s.execute_prepared(&top, &[Value::Int(5), Value::Int(1)]).unwrap()), ["1|6", "2|9"]);
    assert_eq!(
        text(s.execute_prepared(&top, &[Value::Int(0), Value::Int(2)]).unwrap()),
        ["1|5", "1|6", "2|9", "4|2"]
    );
}

#[test]
fn a_lateral_column_made_of_the_outer_row_has_the_type_of_what_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    tables(&mut s);
    let mut types_of = |sql: &str| {
        let statement = s.prepare(sql).unwrap();
        let columns = s.describe_prepared(&statement).unwrap().columns.unwrap();
        columns.iter().map(|c| c.ty).collect::<Vec<_>>()
    };
    let direct = types_of("SELECT t.a + 1 AS next, t.b, t.arr FROM t");
    assert!(direct.iter().all(Option::is_some), "{direct:?}");
    assert_eq!(types_of("SELECT s.* FROM t, LATERAL (SELECT t.a + 1 AS next, t.b, t.arr) s"), direct);
    // The same in a correlated scalar subquery.
    assert_eq!(types_of("SELECT (SELECT t.a + 1), (SELECT t.b), (SELECT t.arr) FROM t"), direct);
}
