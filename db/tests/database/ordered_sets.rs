//! The ordered-set and hypothetical-set aggregates through `Session::execute` (issue
//! 20): `percentile_cont`, `percentile_disc` (one fraction or an array of them),
//! `mode()`, and `rank`, `dense_rank`, `percent_rank`, `cume_dist` WITHIN GROUP, in
//! grouped queries, with FILTER, DESC, NULLs, HAVING, ORDER BY, subqueries, ROLLUP and
//! beside other aggregates, and their errors. Each expected result is what PostgreSQL
//! 15 returns for the same query on the same rows (its bigint for our INT).

use crate::common::{fails, one, open, pipe_rows as rows, run};
use db::Session;

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE t (id INT PRIMARY KEY, g INT, x FLOAT, i INTERVAL, s TEXT, n NUMERIC)");
    run(
        s,
        "INSERT INTO t VALUES (1, 1, 1, '1 day', 'a', 1.5), (2, 1, 2, '2 days', 'b', 2.5), \
         (3, 1, 4, '1 month', 'b', NULL), (4, 2, 10, '1 hour', 'z', 10), \
         (5, 2, NULL, NULL, NULL, NULL), (6, 3, NULL, NULL, NULL, NULL)",
    );
    run(s, "COMMIT");
}

#[test]
fn percentiles_and_mode_per_group_skip_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY x), \
             percentile_disc(0.5) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY s) \
             FROM t GROUP BY g ORDER BY g"
        ),
        ["1|2|2|b", "2|10|10|z", "3|NULL|NULL|NULL"]
    );
    // The ends, and the interpolation between rows.
    assert_eq!(
        rows(
            &mut s,
            "SELECT percentile_disc(0) WITHIN GROUP (ORDER BY x), percentile_disc(1) WITHIN GROUP (ORDER BY x), \
             percentile_cont(0) WITHIN GROUP (ORDER BY x), percentile_cont(1) WITHIN GROUP (ORDER BY x) FROM t"
        ),
        ["1|10|1|10"]
    );
    assert_eq!(
        one(&mut s, "SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY v) FROM generate_series(1, 10) v"),
        "3.25"
    );
    // DESC reads the rows from the other end.
    assert_eq!(
        rows(
            &mut s,
            "SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY x DESC), \
             percentile_disc(0.3) WITHIN GROUP (ORDER BY x DESC) FROM t"
        ),
        ["4.6000000000000005|4"]
    );
    // A NULL fraction gives NULL.
    assert_eq!(one(&mut s, "SELECT percentile_cont(NULL) WITHIN GROUP (ORDER BY x) FROM t"), "NULL");
    // Ties: the first value in the sort order wins.
    assert_eq!(
        one(&mut s, "SELECT mode() WITHIN GROUP (ORDER BY v) FROM (VALUES (3), (1), (3), (1), (2)) s(v)"),
        "1"
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT mode() WITHIN GROUP (ORDER BY v DESC) FROM (VALUES (3), (1), (3), (1), (2)) s(v)"
        ),
        "3"
    );
    assert_eq!(one(&mut s, "SELECT mode() WITHIN GROUP (ORDER BY x DESC) FROM t"), "10");
}

#[test]
fn percentile_types_follow_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // percentile_cont of a number is a double precision; percentile_disc keeps the type.
    assert_eq!(
        rows(
            &mut s,
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY n), \
             pg_typeof(percentile_cont(0.5) WITHIN GROUP (ORDER BY n)), \
             percentile_disc(0.5) WITHIN GROUP (ORDER BY n), \
             pg_typeof(percentile_disc(0.5) WITHIN GROUP (ORDER BY n)) FROM t"
        ),
        ["2.5|double precision|2.5|numeric"]
    );
    assert_eq!(one(&mut s, "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY g) FROM t"), "1.5");
    // Intervals interpolate as intervals.
    assert_eq!(
        rows(
            &mut s,
            "SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY i), \
             percentile_cont(ARRAY[0, 0.3, 1]) WITHIN GROUP (ORDER BY i), \
             percentile_disc(0.5) WITHIN GROUP (ORDER BY i) FROM t"
        ),
        ["21:42:00|{01:00:00,21:42:00,\"1 mon\"}|1 day"]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY v) \
             FROM (VALUES (TIMESTAMP '2020-01-01'), (TIMESTAMP '2021-01-01')) s(v)"
        ),
        "2020-01-01 00:00:00"
    );
}

#[test]
fn an_array_of_fractions_gives_an_array() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        one(&mut s, "SELECT percentile_cont(ARRAY[0.25, 0.5, NULL, 0.75]) WITHIN GROUP (ORDER BY x) FROM t"),
        "{1.75,3,NULL,5.5}"
    );
    assert_eq!(
        one(&mut s, "SELECT percentile_disc(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY s) FROM t"),
        "{a,z}"
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT g, percentile_cont(ARRAY[0.5]) WITHIN GROUP (ORDER BY x) FROM t GROUP BY g ORDER BY g"
        ),
        ["1|{2}", "2|{10}", "3|NULL"]
    );
}

#[test]
fn ordered_set_aggregates_work_in_every_clause() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // FILTER.
    assert_eq!(
        one(&mut s, "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FILTER (WHERE g = 1) FROM t"),
        "2"
    );
    // HAVING and ORDER BY.
    assert_eq!(
        rows(
            &mut s,
            "SELECT g FROM t GROUP BY g HAVING percentile_cont(0.5) WITHIN GROUP (ORDER BY x) > 1.5 \
             ORDER BY percentile_disc(0.5) WITHIN GROUP (ORDER BY x) DESC"
        ),
        ["2", "1"]
    );
    // A direct argument reading a grouped column, evaluated per group.
    assert_eq!(
        rows(
            &mut s,
            "SELECT g, percentile_cont(g / 10.0) WITHIN GROUP (ORDER BY x) FROM t GROUP BY g ORDER BY 1"
        ),
        ["1|1.2", "2|10", "3|NULL"]
    );
    // Beside other aggregates.
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*), percentile_disc(0.5) WITHIN GROUP (ORDER BY s), sum(x), \
             mode() WITHIN GROUP (ORDER BY g) FROM t"
        ),
        ["6|b|17|1"]
    );
    // In a correlated subquery, and in a derived table filtered outside.
    assert_eq!(
        rows(
            &mut s,
            "SELECT o.g, (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM t WHERE t.g = o.g) \
             FROM (VALUES (1), (2), (4)) o(g) ORDER BY 1"
        ),
        ["1|2", "2|10", "4|NULL"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT * FROM (SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY x DESC) p FROM t GROUP BY g) s \
             WHERE p IS NOT NULL ORDER BY p DESC"
        ),
        ["2|10", "1|2"]
    );
    // A direct argument from the query around: the outer row's value.
    assert_eq!(
        rows(
            &mut s,
            "SELECT o.f, (SELECT percentile_cont(o.f) WITHIN GROUP (ORDER BY x) FROM t) \
             FROM (VALUES (0.25), (0.75)) o(f) ORDER BY 1"
        ),
        ["0.25|1.75", "0.75|5.5"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT o.w, (SELECT rank(o.w) WITHIN GROUP (ORDER BY v) FROM (VALUES (1), (2), (3)) s(v)) \
             FROM (VALUES (2), (5)) o(w) ORDER BY 1"
        ),
        ["2|2", "5|4"]
    );
    // ROLLUP: the grand total's group too.
    assert_eq!(
        rows(
            &mut s,
            "SELECT g, percentile_disc(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.5) WITHIN GROUP (ORDER BY x) \
             FROM t GROUP BY ROLLUP (g) ORDER BY g"
        ),
        ["1|2|2", "2|10|10", "3|NULL|NULL", "NULL|2|3"]
    );
    // A bind parameter as the fraction.
    let r = s
        .execute("SELECT percentile_disc($1) WITHIN GROUP (ORDER BY x) FROM t", &[db::Value::Float(0.75)])
        .unwrap();
    assert_eq!(r.rows()[0][0].to_string(), "4");
}

#[test]
fn hypothetical_set_aggregates_place_a_row_among_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT rank(2) WITHIN GROUP (ORDER BY x), dense_rank(2) WITHIN GROUP (ORDER BY x), \
             percent_rank(2) WITHIN GROUP (ORDER BY x), cume_dist(2) WITHIN GROUP (ORDER BY x) FROM t"
        ),
        ["2|2|0.16666666666666666|0.42857142857142855"]
    );
    // NULLs are rows too, sorted last by default.
    assert_eq!(
        rows(
            &mut s,
            "SELECT rank(NULL::float) WITHIN GROUP (ORDER BY x), dense_rank(NULL) WITHIN GROUP (ORDER BY x), \
             percent_rank(NULL) WITHIN GROUP (ORDER BY x), cume_dist(NULL) WITHIN GROUP (ORDER BY x) FROM t"
        ),
        ["5|5|0.6666666666666666|1"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT dense_rank(3) WITHIN GROUP (ORDER BY v), rank(3) WITHIN GROUP (ORDER BY v), \
             cume_dist(3) WITHIN GROUP (ORDER BY v), percent_rank(3) WITHIN GROUP (ORDER BY v) \
             FROM (VALUES (3), (1), (3), (1), (2)) s(v)"
        ),
        ["3|4|1|0.6"]
    );
    // Over no rows.
    assert_eq!(
        rows(
            &mut s,
            "SELECT rank(3) WITHIN GROUP (ORDER BY v), percent_rank(3) WITHIN GROUP (ORDER BY v), \
             cume_dist(3) WITHIN GROUP (ORDER BY v), dense_rank(3) WITHIN GROUP (ORDER BY v) \
             FROM (VALUES (1)) s(v) WHERE false"
        ),
        ["1|0|1|1"]
    );
    // Several keys, DESC and NULLS LAST, per group, and a quoted literal taking its key's type.
    assert_eq!(one(&mut s, "SELECT rank(2, 'b') WITHIN GROUP (ORDER BY x, s) FROM t"), "2");
    assert_eq!(
        rows(
            &mut s,
            "SELECT g, rank(2) WITHIN GROUP (ORDER BY x DESC NULLS LAST), cume_dist(2) WITHIN GROUP (ORDER BY x DESC) \
             FROM t GROUP BY g ORDER BY g"
        ),
        ["1|2|0.75", "2|2|1", "3|1|1"]
    );
    assert_eq!(one(&mut s, "SELECT rank('b') WITHIN GROUP (ORDER BY s) FROM t"), "2");
    assert_eq!(
        rows(
            &mut s,
            "SELECT pg_typeof(rank(2) WITHIN GROUP (ORDER BY x)), pg_typeof(cume_dist(2) WITHIN GROUP (ORDER BY x)) \
             FROM t"
        ),
        ["bigint|double precision"]
    );
}

#[test]
fn ordered_set_aggregates_fail_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let cases = [
        // A fraction outside [0, 1], even over no rows (a single fraction is checked first).
        (
            "SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY x) FROM t WHERE false",
            "22003",
            "percentile value 1.5 is not between 0 and 1",
        ),
        (
            "SELECT percentile_cont(-0.1) WITHIN GROUP (ORDER BY x) FROM t",
            "22003",
            "percentile value -0.1 is not between 0 and 1",
        ),
        (
            "SELECT percentile_disc(ARRAY[0.5, 2]) WITHIN GROUP (ORDER BY x) FROM t",
            "22003",
            "percentile value 2 is not between 0 and 1",
        ),
        (
            "SELECT percentile_cont('nan') WITHIN GROUP (ORDER BY x) FROM t",
            "22003",
            "percentile value NaN is not between 0 and 1",
        ),
        (
            "SELECT percentile_cont(avg(x)) WITHIN GROUP (ORDER BY x) FROM t",
            "42803",
            "aggregate function calls cannot be nested",
        ),
        (
            "SELECT percentile_cont(x) WITHIN GROUP (ORDER BY x) FROM t",
            "42803",
            "must appear in the GROUP BY clause",
        ),
        (
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s) FROM t",
            "42883",
            "function percentile_cont(numeric, text) does not exist",
        ),
        (
            "SELECT percentile_cont(0.5, 0.2) WITHIN GROUP (ORDER BY x) FROM t",
            "42883",
            "percentile_cont(numeric, numeric, double precision)",
        ),
        ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x, g) FROM t", "42883", "does not exist"),
        ("SELECT mode(1) WITHIN GROUP (ORDER BY x) FROM t", "42883", "function mode("),
        ("SELECT rank(1, 2) WITHIN GROUP (ORDER BY x) FROM t", "42883", "function rank("),
        ("SELECT rank(1) WITHIN GROUP (ORDER BY s) FROM t", "42804", "WITHIN GROUP types text and "),
        (
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) OVER () FROM t",
            "0A000",
            "OVER is not supported for ordered-set aggregate percentile_cont",
        ),
        (
            "SELECT id FROM t WHERE percentile_cont(0.5) WITHIN GROUP (ORDER BY x) > 1",
            "42803",
            "aggregate functions are not allowed in WHERE",
        ),
    ];
    for (sql, state, message) in cases {
        let e = fails(&mut s, sql);
        assert_eq!(e.sqlstate(), state, "{sql}: {e}");
        assert!(e.to_string().contains(message), "{sql}: {e}");
    }
}
