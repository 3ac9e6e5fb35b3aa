//! Window functions through `Session::execute` (issue 20): ranking, offsets, values of a
//! frame and aggregates over frames, partitioned and ordered, in plain and grouped
//! queries; each expected result is what PostgreSQL 15 returns for the same query.

use crate::common::{fails, open, run};
use db::{Session, Value};

/// The rows as text, NULL as "NULL", floats to 4 places.
fn texts(s: &mut Session, sql: &str) -> Vec<String> {
    run(s, sql)
        .rows()
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| match v {
                    Value::Null => "NULL".to_string(),
                    Value::Float(f) => format!("{f:.4}"),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE emp (id INT PRIMARY KEY, dept TEXT, salary INT)");
    run(
        s,
        "INSERT INTO emp VALUES (1, 'a', 100), (2, 'a', 200), (3, 'a', 200), (4, 'b', 50), (5, 'b', 80), \
         (6, 'c', 300), (7, 'a', NULL)",
    );
    run(s, "COMMIT");
}

#[test]
fn ranking_functions_number_rows_within_partitions_and_peers() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, row_number() OVER (PARTITION BY dept ORDER BY salary, id), \
             rank() OVER (PARTITION BY dept ORDER BY salary), dense_rank() OVER (PARTITION BY dept ORDER BY salary), \
             percent_rank() OVER (PARTITION BY dept ORDER BY salary), cume_dist() OVER (PARTITION BY dept ORDER BY salary) \
             FROM emp ORDER BY id"
        ),
        [
            "1 1 1 1 0.0000 0.2500",
            "2 2 2 2 0.3333 0.7500",
            "3 3 2 2 0.3333 0.7500",
            "4 1 1 1 0.0000 0.5000",
            "5 2 2 2 1.0000 1.0000",
            "6 1 1 1 0.0000 1.0000",
            // NULLs sort last in ascending order.
            "7 4 4 3 1.0000 1.0000",
        ]
    );
    // Without PARTITION BY: the whole result; DESC puts NULLs first.
    assert_eq!(
        texts(&mut s, "SELECT id, rank() OVER (ORDER BY salary DESC) AS r FROM emp ORDER BY r, id"),
        ["7 1", "6 2", "2 3", "3 3", "1 5", "5 6", "4 7"]
    );
    // ntile spreads 7 rows over 3 buckets as 3, 2, 2.
    assert_eq!(
        texts(&mut s, "SELECT id, ntile(3) OVER (ORDER BY id) FROM emp"),
        ["1 1", "2 1", "3 1", "4 2", "5 2", "6 3", "7 3"]
    );
    // A window value in ORDER BY and under LIMIT (the windows see every row first).
    assert_eq!(
        texts(&mut s, "SELECT id FROM emp ORDER BY row_number() OVER (ORDER BY id DESC) LIMIT 2"),
        ["7", "6"]
    );
}

#[test]
fn offsets_and_frame_values_read_other_rows_of_the_partition() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, lag(salary) OVER w, lead(salary, 2, -1) OVER w, first_value(id) OVER w, \
             last_value(id) OVER w, nth_value(id, 2) OVER w FROM emp WHERE dept = 'a' ORDER BY id"
                .replace("OVER w", "OVER (ORDER BY id)")
                .as_str()
        ),
        ["1 NULL 200 1 1 NULL", "2 100 NULL 1 2 2", "3 200 -1 1 3 2", "7 200 -1 1 7 2"]
    );
    // last_value over the whole partition, by an explicit frame.
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, last_value(id) OVER (PARTITION BY dept ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND \
             UNBOUNDED FOLLOWING) FROM emp ORDER BY id"
        ),
        ["1 7", "2 7", "3 7", "4 5", "5 5", "6 6", "7 7"]
    );
}

#[test]
fn aggregates_over_frames_run_totals_and_sliding_windows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // Without ORDER BY: the whole partition; with it: up to the current row's peers.
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, sum(salary) OVER (PARTITION BY dept), sum(salary) OVER (PARTITION BY dept ORDER BY salary), \
             count(*) OVER (PARTITION BY dept ORDER BY salary), avg(salary) OVER (PARTITION BY dept) \
             FROM emp ORDER BY id"
        ),
        [
            "1 500 100 1 166.6666666666666667",
            "2 500 500 3 166.6666666666666667",
            "3 500 500 3 166.6666666666666667",
            "4 130 50 1 65.0000000000000000",
            "5 130 130 2 65.0000000000000000",
            "6 300 300 1 300.0000000000000000",
            "7 500 500 4 166.6666666666666667",
        ]
    );
    // ROWS frames: a sliding sum of three and a moving minimum.
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, sum(salary) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
             min(salary) OVER (ORDER BY id ROWS 2 PRECEDING), max(salary) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW \
             AND UNBOUNDED FOLLOWING) FROM emp ORDER BY id"
        ),
        [
            "1 300 100 300",
            "2 500 100 300",
            "3 450 100 300",
            "4 330 50 300",
            "5 430 50 300",
            "6 380 50 300",
            "7 300 80 NULL",
        ]
    );
}

#[test]
fn windows_in_a_grouped_query_read_the_groups_and_their_aggregates() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        texts(
            &mut s,
            "SELECT dept, sum(salary) AS total, rank() OVER (ORDER BY sum(salary) DESC), \
             sum(sum(salary)) OVER () FROM emp GROUP BY dept ORDER BY dept"
        ),
        ["a 500 1 930", "b 130 3 930", "c 300 2 930"]
    );
    // DISTINCT after the window values.
    assert_eq!(
        texts(&mut s, "SELECT DISTINCT dept, count(*) OVER (PARTITION BY dept) FROM emp ORDER BY dept"),
        ["a 4", "b 2", "c 1"]
    );
    // Where a window function may not be: 42P20, as PostgreSQL; forms not supported: 0A000.
    for sql in [
        "SELECT id FROM emp WHERE row_number() OVER () > 1",
        "SELECT dept FROM emp GROUP BY dept HAVING rank() OVER () = 1",
        "SELECT sum(row_number() OVER ()) FROM emp",
    ] {
        let e = fails(&mut s, sql);
        assert!(["42P20", "42803"].contains(&e.sqlstate()), "{sql}: {e}");
    }
    assert_eq!(fails(&mut s, "SELECT upper(dept) OVER () FROM emp").sqlstate(), "42809");
    assert_eq!(
        fails(
            &mut s,
            "SELECT sum(id) OVER (ORDER BY id, dept RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM emp"
        )
        .sqlstate(),
        "42P20"
    );
    // EXPLAIN shows the step.
    let plan = texts(&mut s, "EXPLAIN SELECT rank() OVER (ORDER BY id) FROM emp").join("\n");
    assert!(plan.contains("WindowAgg"), "{plan}");
}

#[test]
fn named_windows_are_shared_by_calls_and_refined_as_postgresql_allows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE w (id INT PRIMARY KEY, dept TEXT, salary INT)");
    run(
        &mut s,
        "INSERT INTO w VALUES (1, 'a', 100), (2, 'a', 200), (3, 'b', 50), (4, 'b', 80), (5, 'a', 150)",
    );
    run(&mut s, "COMMIT");
    // One window for several calls, one refined with an ORDER BY of its own.
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, rank() OVER w, sum(salary) OVER w, row_number() OVER (w ORDER BY id DESC) FROM w \
             WINDOW w AS (PARTITION BY dept) ORDER BY id"
        ),
        ["1 1 450 3", "2 1 450 2", "3 1 130 2", "4 1 130 1", "5 1 450 1"]
    );
    // A window based on another, then a frame added at the call.
    assert_eq!(
        texts(&mut s, "SELECT id, sum(salary) OVER (p ORDER BY id), count(*) OVER p FROM w WINDOW p AS (PARTITION BY dept) ORDER BY id"),
        ["1 100 3", "2 300 3", "3 50 2", "4 130 2", "5 450 3"]
    );
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, sum(salary) OVER (q ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w \
             WINDOW p AS (PARTITION BY dept), q AS (p ORDER BY id) ORDER BY id"
        ),
        ["1 100", "2 300", "3 50", "4 130", "5 350"]
    );
    // A window with a frame, used as it is.
    assert_eq!(
        texts(&mut s, "SELECT id, count(*) OVER w FROM w WINDOW w AS (ORDER BY id ROWS UNBOUNDED PRECEDING) ORDER BY id"),
        ["1 1", "2 2", "3 3", "4 4", "5 5"]
    );
    // PostgreSQL's errors, word for word.
    for (sql, state, message) in [
        ("SELECT rank() OVER x FROM w WINDOW w AS (ORDER BY id)", "42704", "window \"x\" does not exist"),
        (
            "SELECT rank() OVER (w PARTITION BY id) FROM w WINDOW w AS (ORDER BY id)",
            "42P20",
            "cannot override PARTITION BY clause of window \"w\"",
        ),
        (
            "SELECT rank() OVER (w ORDER BY id) FROM w WINDOW w AS (ORDER BY id)",
            "42P20",
            "cannot override ORDER BY clause of window \"w\"",
        ),
        (
            "SELECT rank() OVER (w) FROM w WINDOW w AS (ORDER BY id ROWS UNBOUNDED PRECEDING)",
            "42P20",
            "cannot copy window \"w\" because it has a frame clause",
        ),
        (
            "SELECT 1 FROM w WINDOW w AS (ORDER BY id), w AS (ORDER BY dept)",
            "42P20",
            "window \"w\" is already defined",
        ),
        ("SELECT rank() OVER w FROM w", "42704", "window \"w\" does not exist"),
    ] {
        let e = fails(&mut s, sql);
        assert_eq!((e.sqlstate(), e.to_string()), (state, message.to_string()), "{sql}");
    }
}

fn frames_setup(s: &mut Session) {
    run(s, "CREATE TABLE w (id INT PRIMARY KEY, g INT, x INT, d DATE, n NUMERIC)");
    run(
        s,
        "INSERT INTO w VALUES (1, 1, 1, '2024-01-01', 1.5), (2, 1, 2, '2024-01-03', 2.5), \
         (3, 1, 2, '2024-01-04', 2.5), (4, 1, 5, '2024-01-10', 7), (5, 1, NULL, NULL, NULL), \
         (6, 2, 3, '2024-02-01', 0), (7, 2, 3, '2024-02-01', 0), (8, 2, 4, '2024-02-05', -1), \
         (9, 1, 3, '2024-01-05', 3.25)",
    );
    run(s, "COMMIT");
}

/// GROUPS frames count peer groups; RANGE frames with an offset take the rows whose
/// ORDER BY key is within the offset of the current row's (integers, NUMERIC, dates and
/// timestamps with an interval; descending; NULL keys their own peers), each with its
/// values and errors as PostgreSQL 15 gives them.
#[test]
fn groups_and_range_offset_frames_are_postgresql_s() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    frames_setup(&mut s);
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, sum(id) OVER (ORDER BY x GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW), \
             sum(id) OVER (ORDER BY x GROUPS BETWEEN CURRENT ROW AND 1 FOLLOWING), \
             sum(id) OVER (ORDER BY x GROUPS BETWEEN 1 FOLLOWING AND 2 FOLLOWING), \
             last_value(id) OVER (ORDER BY x, id GROUPS BETWEEN 1 PRECEDING AND 1 PRECEDING), \
             count(*) OVER (PARTITION BY g ORDER BY x DESC GROUPS 1 PRECEDING) FROM w ORDER BY id"
        ),
        [
            "1 1 6 27 NULL 3",
            "2 6 27 30 1 3",
            "3 6 27 30 2 3",
            "4 12 9 5 8 2",
            "5 9 5 NULL 4 1",
            "6 27 30 12 3 3",
            "7 27 30 12 6 3",
            "8 30 12 9 9 1",
            "9 27 30 12 7 2",
        ]
    );
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, sum(id) OVER (PARTITION BY g ORDER BY x RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
             sum(id) OVER (ORDER BY x DESC RANGE BETWEEN 1 PRECEDING AND CURRENT ROW), \
             sum(id) OVER (ORDER BY x NULLS FIRST RANGE BETWEEN 2 PRECEDING AND CURRENT ROW), \
             sum(id) OVER (ORDER BY x RANGE BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING), \
             first_value(id) OVER (ORDER BY x RANGE BETWEEN 10 PRECEDING AND 2 PRECEDING) FROM w ORDER BY id"
        ),
        [
            "1 6 6 1 44 NULL",
            "2 15 27 6 39 NULL",
            "3 15 27 6 39 NULL",
            "4 4 4 34 5 1",
            "5 5 5 5 5 5",
            "6 21 30 28 17 1",
            "7 21 30 28 17 1",
            "8 21 12 35 9 1",
            "9 14 30 28 17 1",
        ]
    );
    assert_eq!(
        texts(
            &mut s,
            "SELECT id, sum(id) OVER (ORDER BY n RANGE BETWEEN 1 PRECEDING AND 1.5 FOLLOWING), \
             sum(id) OVER (ORDER BY d RANGE BETWEEN '2 days' PRECEDING AND CURRENT ROW), \
             sum(id) OVER (ORDER BY d::timestamp DESC \
             RANGE BETWEEN INTERVAL '3 days' PRECEDING AND INTERVAL '1 day' FOLLOWING) FROM w ORDER BY id"
        ),
        [
            "1 6 1 6",
            "2 15 3 14",
            "3 15 5 14",
            "4 4 4 4",
            "5 5 5 5",
            "6 22 13 13",
            "7 22 13 13",
            "8 21 8 8",
            "9 14 14 12"
        ]
    );
    // PostgreSQL's errors, SQLSTATE and message.
    for (sql, sqlstate, message) in [
        (
            "SELECT sum(id) OVER (GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
            "42P20",
            "GROUPS mode requires an ORDER BY clause",
        ),
        (
            "SELECT sum(id) OVER (ORDER BY x, id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
            "42P20",
            "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
        ),
        (
            "SELECT sum(id) OVER (ORDER BY x RANGE BETWEEN -1 PRECEDING AND CURRENT ROW) FROM w",
            "22013",
            "invalid preceding or following size in window function",
        ),
        (
            "SELECT sum(id) OVER (ORDER BY x ROWS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM w",
            "22013",
            "frame starting offset must not be negative",
        ),
        (
            "SELECT sum(id) OVER (ORDER BY x GROUPS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM w",
            "22013",
            "frame starting offset must not be negative",
        ),
        (
            "SELECT sum(id) OVER (ORDER BY x ROWS BETWEEN NULL PRECEDING AND CURRENT ROW) FROM w",
            "22004",
            "frame starting offset must not be null",
        ),
        (
            "SELECT sum(id) OVER (ORDER BY x RANGE BETWEEN NULL PRECEDING AND CURRENT ROW) FROM w",
            "22004",
            "frame starting offset must not be null",
        ),
        (
            "SELECT sum(id) OVER (ORDER BY x GROUPS BETWEEN CURRENT ROW AND NULL FOLLOWING) FROM w",
            "22004",
            "frame ending offset must not be null",
        ),
        (
            "SELECT sum(id) OVER (ORDER BY id::text RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
            "0A000",
            "RANGE with offset PRECEDING/FOLLOWING is not supported for column type text",
        ),
    ] {
        let e = fails(&mut s, sql);
        assert_eq!((e.sqlstate(), e.kind().to_string().as_str()), (sqlstate, message), "{sql}");
    }
    // A key and an offset of types that do not go together (PostgreSQL names the
    // integer types by their declared widths; the database keeps every one as bigint).
    for sql in [
        "SELECT sum(id) OVER (ORDER BY x RANGE BETWEEN 1.5 PRECEDING AND CURRENT ROW) FROM w",
        "SELECT sum(id) OVER (ORDER BY d RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",
        "SELECT sum(id) OVER (ORDER BY x RANGE BETWEEN INTERVAL '1 day' PRECEDING AND CURRENT ROW) FROM w",
    ] {
        let e = fails(&mut s, sql);
        assert_eq!(e.sqlstate(), "0A000", "{sql}: {e}");
        assert_eq!(e.hint(), Some("Cast the offset value to an appropriate type."), "{sql}");
    }
}

/// `EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS` leaves rows out of each row's frame
/// in every frame mode, for aggregates and the frame's values, as PostgreSQL 15 does.
#[test]
fn frame_exclusion_leaves_the_current_row_its_group_or_its_ties_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    frames_setup(&mut s);
    let sql = "SELECT id, \
        sum(id) OVER (ORDER BY x, id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW), \
        sum(id) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE GROUP), \
        sum(id) OVER (ORDER BY x GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE TIES), \
        first_value(id) OVER (ORDER BY x, id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE CURRENT ROW), \
        last_value(id) OVER (ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE GROUP), \
        nth_value(id, 2) OVER (ORDER BY x, id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW), \
        count(*) OVER (ORDER BY x, id ROWS UNBOUNDED PRECEDING EXCLUDE NO OTHERS), \
        sum(id) OVER (ORDER BY d RANGE BETWEEN '2 days' PRECEDING AND '2 days' FOLLOWING EXCLUDE CURRENT ROW) \
        FROM w ORDER BY id";
    let expected = [
        "1 2 NULL 6 2 5 3 1 2",
        "2 4 1 25 3 5 3 2 13",
        "3 8 1 26 6 5 2 3 11",
        "4 13 36 17 5 5 8 8 NULL",
        "5 4 40 9 NULL 4 4 9 NULL",
        "6 10 6 19 7 5 3 4 7",
        "7 15 6 20 9 5 6 5 6",
        "8 13 28 34 4 5 9 7 NULL",
        "9 15 6 22 8 5 7 6 5",
    ];
    assert_eq!(texts(&mut s, sql), expected);
    // Prepared, the same.
    let statement = s.prepare(sql).unwrap();
    let rows: Vec<String> = s
        .query(&statement, &[])
        .unwrap()
        .fetch(100)
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| if v.is_null() { "NULL".to_string() } else { v.to_string() })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(rows, expected);
    // A frame of the current row alone, less the current row: empty.
    assert_eq!(
        texts(&mut s, "SELECT id, sum(id) OVER (ORDER BY x, id ROWS CURRENT ROW EXCLUDE CURRENT ROW) FROM w WHERE id < 3 ORDER BY id"),
        ["1 NULL", "2 NULL"]
    );
}
