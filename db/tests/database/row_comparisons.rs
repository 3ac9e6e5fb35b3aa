//! Row-valued comparisons through `Session::execute`: row constructors compared pair by
//! pair (`(a, b) < (1, 2)`, `ROW(a, b) = ROW(...)`, `IN` a list of rows, `IS [NOT]
//! DISTINCT FROM`) with PostgreSQL's NULL rules; a whole row compared with a row
//! constructor as records are (record_eq: NULL fields equal, after any value) with its
//! type checks; and keyset pagination, `WHERE (a, b) > (x, y) ORDER BY a, b LIMIT n`,
//! read through the primary key's range from `a >= x`. Each expected result is
//! PostgreSQL 15's for the same query on the same rows.

use crate::common::{cells, fails, open, pipe_rows as rows, run};
use db::{DbError, Session, Value};

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE n (a INT, b INT)");
    run(s, "INSERT INTO n VALUES (1, 2), (1, NULL), (NULL, 2), (2, 1), (3, 4)");
    run(s, "CREATE TABLE tx (a INT, s TEXT, v VARCHAR(5), bi BIGINT)");
    run(s, "INSERT INTO tx VALUES (1, 'x', 'y', 2)");
    run(s, "COMMIT");
}

const ORDERED: &str = "FROM n ORDER BY a NULLS LAST, b NULLS LAST";

#[test]
fn row_constructors_compare_pair_by_pair_with_postgresqls_null_rules() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // `=` is every pair equal, `<>` some pair unequal, an ordering decided by the first
    // unequal pair; NULL where a pair that decides is NULL.
    assert_eq!(
        rows(
            &mut s,
            &format!(
                "SELECT a, b, ROW(a, b) = ROW(1, 2), (a, b) <> (1, 2), (a, b) < (1, 2), (a, b) <= (1, 2), \
                 (a, b) > (1, 2), (a, b) >= (1, 2) {ORDERED}"
            )
        ),
        [
            "1|2|true|false|false|true|false|true",
            "1|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
            "2|1|false|true|false|false|true|true",
            "3|4|false|true|false|false|true|true",
            "NULL|2|NULL|NULL|NULL|NULL|NULL|NULL",
        ]
    );
    assert_eq!(
        rows(
            &mut s,
            &format!(
                "SELECT a, b, (a, b) IN ((1, 2), (3, 4)), (a, b) NOT IN ((1, 2), (3, 4)), \
                 (a, b) IS DISTINCT FROM (1, NULL), (a, b) IS NOT DISTINCT FROM ROW(1, NULL) {ORDERED}"
            )
        ),
        [
            "1|2|true|false|true|false",
            "1|NULL|NULL|NULL|false|true",
            "2|1|false|true|true|false",
            "3|4|true|false|true|false",
            "NULL|2|NULL|NULL|true|false",
        ]
    );
    // A pair after the deciding one is not looked at, NULL or not.
    assert_eq!(
        rows(
            &mut s,
            "SELECT ROW(1, NULL) < ROW(2, NULL), ROW(2, NULL) < ROW(1, 5), ROW(1, NULL) <= ROW(1, 5), \
             (1, 2, 3) >= (1, 2, 3), ('a', 2) > ('a', 1)"
        ),
        ["true|false|NULL|true|true"]
    );
    // PostgreSQL: unequal number of entries in row expressions (42601).
    assert_eq!(fails(&mut s, "SELECT (1, 2) < (1, 2, 3)").sqlstate(), "42601");
}

#[test]
fn a_whole_row_compared_with_a_row_constructor_is_compared_as_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // record_eq and record_cmp: a NULL field equals a NULL one and sorts after any
    // value, so the answer is never NULL for rows that are there.
    assert_eq!(
        rows(
            &mut s,
            &format!(
                "SELECT a, b, n = ROW(1, 2), n <> ROW(1, 2), n < ROW(2, 0), n >= (1, 2), ROW(1, 2) = n, \
                 n IS DISTINCT FROM ROW(1, 2), n IS NOT DISTINCT FROM (1, 2), n IN (ROW(1, 2), ROW(3, 4)), \
                 n = ROW(1, NULL::int) {ORDERED}"
            )
        ),
        [
            "1|2|true|false|true|true|true|false|true|true|false",
            "1|NULL|false|true|true|true|false|true|false|false|true",
            "2|1|false|true|false|true|false|true|false|false|false",
            "3|4|false|true|false|true|false|true|false|true|false",
            "NULL|2|false|true|false|true|false|true|false|false|false",
        ]
    );
    assert_eq!(
        rows(&mut s, "SELECT tx = ROW(1, 'x'::text, 'y'::varchar, 2::bigint), tx < ROW(1, 'x'::text, 'z'::varchar, 0::bigint) FROM tx"),
        ["true|true"]
    );
    // The fields must be of one type each, pair by pair, and as many (42804).
    for (sql, message) in [
        (
            "SELECT n = ROW(1, NULL) FROM n",
            "cannot compare dissimilar column types integer and unknown at record column 2",
        ),
        (
            "SELECT n IN (ROW(1, 'x')) FROM n",
            "cannot compare dissimilar column types integer and unknown at record column 2",
        ),
        (
            "SELECT tx = ROW(1, 'x'::text, 'y'::text, 2::bigint) FROM tx",
            "cannot compare dissimilar column types character varying and text at record column 3",
        ),
        (
            "SELECT tx = ROW(1, 'x'::text, 'y'::varchar, 2) FROM tx",
            "cannot compare dissimilar column types bigint and integer at record column 4",
        ),
        (
            "SELECT n IS DISTINCT FROM (1, 2, 3) FROM n",
            "cannot compare record types with different numbers of columns",
        ),
    ] {
        let e = fails(&mut s, sql);
        assert!(matches!(e.kind(), DbError::TypeConflict(_)), "{sql}: {e:?}");
        assert_eq!(e.sqlstate(), "42804", "{sql}");
        assert!(e.to_string().contains(message), "{sql}: {e}");
    }
    // A row constructor beside a value that is no record has no operator (42883).
    for (sql, message) in [
        ("SELECT (1, 2) = 1", "record = integer"),
        ("SELECT 1 = (1, 2)", "integer = record"),
        ("SELECT (1, 2) + n FROM n", "record + n"),
    ] {
        let e = fails(&mut s, sql);
        assert_eq!(e.sqlstate(), "42883", "{sql}: {e}");
        assert!(e.to_string().contains(message), "{sql}: {e}");
    }
}

/// The plan's lines of `sql`.
fn plan(s: &mut Session, sql: &str) -> Vec<String> {
    cells(s, &format!("EXPLAIN {sql}")).into_iter().map(|r| r[0].clone()).collect()
}

#[test]
fn keyset_pagination_reads_the_primary_key_from_the_last_row_seen() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE k (a INT, b INT, c TEXT, PRIMARY KEY (a, b))");
    run(&mut s, "INSERT INTO k SELECT g / 10, g % 10, 'x' || g FROM generate_series(0, 299) g");
    run(&mut s, "COMMIT");
    assert_eq!(
        rows(&mut s, "SELECT * FROM k WHERE (a, b) > (10, 5) ORDER BY a, b LIMIT 3"),
        ["10|6|x106", "10|7|x107", "10|8|x108"]
    );
    let keyset = "SELECT * FROM k WHERE (a, b) > (10, 5) ORDER BY a, b LIMIT 3";
    let lines = plan(&mut s, keyset);
    assert!(lines.iter().any(|l| l.contains("Index Range Scan using k_pkey on k")), "{lines:#?}");
    assert!(!lines.iter().any(|l| l.contains("Sort")), "{lines:#?}");
    // The page reads from the start of a = 10, not the 106 rows before it.
    let before = db::sql::rows_visited();
    run(&mut s, keyset);
    let read = db::sql::rows_visited() - before;
    assert!(read <= 10, "read {read} rows for a page of 3");
    // Page by page with bind parameters, from the last row of each page: every row
    // once, in order, as one ordered read gives them.
    let all = cells(&mut s, "SELECT a, b FROM k ORDER BY a, b");
    let mut paged: Vec<Vec<String>> = Vec::new();
    let mut last = (Value::Int(-1), Value::Int(-1));
    loop {
        let result = s
            .execute(
                "SELECT a, b FROM k WHERE (a, b) > ($1, $2) ORDER BY a, b LIMIT 7",
                &[last.0.clone(), last.1.clone()],
            )
            .unwrap();
        let page: Vec<Vec<Value>> = result.rows().to_vec();
        let Some(end) = page.last() else { break };
        last = (end[0].clone(), end[1].clone());
        paged.extend(page.iter().map(|r| r.iter().map(Value::to_string).collect()));
    }
    assert_eq!(paged, all);
    // Backwards, `<`: the last three rows before (1, 2), highest first.
    assert_eq!(
        rows(&mut s, "SELECT a, b FROM k WHERE (a, b) < (1, 2) ORDER BY a DESC, b DESC LIMIT 3"),
        ["1|1", "1|0", "0|9"]
    );
}
