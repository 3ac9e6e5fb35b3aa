//! `WITH RECURSIVE` through `Session::execute` (issue 20): counting, walking a tree with
//! depth and path, a cyclic graph ended by UNION, several WITH queries, a recursive query
//! in a correlated subquery and read several times, the errors PostgreSQL gives, and an
//! endless recursion stopped by a cancel. Each expected result is what PostgreSQL 15.20
//! returns for the same statements.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{cells, fails, open, run};
use db::{DbError, Session};

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE emp (id BIGINT PRIMARY KEY, manager_id BIGINT, name TEXT)");
    run(
        s,
        "INSERT INTO emp VALUES (1, NULL, 'ada'), (2, 1, 'bob'), (3, 1, 'cy'), (4, 2, 'dee'), (5, 4, 'eve'), \
         (6, 3, 'fay')",
    );
    run(s, "CREATE TABLE edges (src BIGINT, dst BIGINT)");
    run(s, "INSERT INTO edges VALUES (1, 2), (2, 3), (3, 1), (3, 4)");
    run(s, "COMMIT");
}

/// The rows as lines of `|`-separated values.
fn lines(s: &mut Session, sql: &str) -> Vec<String> {
    cells(s, sql).into_iter().map(|row| row.join("|")).collect()
}

#[test]
fn a_recursive_query_repeats_its_recursive_term_over_the_rows_of_the_step_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        lines(
            &mut s,
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT n FROM t"
        ),
        ["1", "2", "3", "4", "5"]
    );
    // Two columns, each step reading both of the row before.
    assert_eq!(
        lines(
            &mut s,
            "WITH RECURSIVE fib(a, b) AS (SELECT 0::bigint, 1::bigint UNION ALL SELECT b, a + b FROM fib \
             WHERE b < 100) SELECT a FROM fib"
        )
        .join(","),
        "0,1,1,2,3,5,8,13,21,34,55,89"
    );
    // A tree walked from its root, joined to a table at each step.
    assert_eq!(
        lines(
            &mut s,
            "WITH RECURSIVE sub AS (SELECT id, name, 1 AS depth, name AS path FROM emp WHERE manager_id IS NULL \
             UNION ALL SELECT e.id, e.name, s.depth + 1, s.path || '/' || e.name FROM emp e JOIN sub s \
             ON e.manager_id = s.id) SELECT id, depth, path FROM sub ORDER BY path"
        ),
        ["1|1|ada", "2|2|ada/bob", "4|3|ada/bob/dee", "5|4|ada/bob/dee/eve", "3|2|ada/cy", "6|3|ada/cy/fay"]
    );
    // 1,000 steps.
    assert_eq!(
        lines(
            &mut s,
            "SELECT count(*) FROM (WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 1000) \
             SELECT n FROM t) AS x"
        ),
        ["1000"]
    );
}

#[test]
fn union_without_all_drops_rows_already_found_so_a_cycle_ends_the_recursion() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // 1 -> 2 -> 3 -> 1 is a cycle: UNION stops when a step finds nothing new.
    assert_eq!(
        lines(
            &mut s,
            "WITH RECURSIVE r(n) AS (SELECT 1::bigint UNION SELECT e.dst FROM edges e JOIN r ON e.src = r.n) \
             SELECT n FROM r ORDER BY n"
        ),
        ["1", "2", "3", "4"]
    );
}

#[test]
fn a_recursive_query_is_read_like_any_with_query() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // WITH RECURSIVE over queries that are not recursive: planned as plain WITH queries.
    assert_eq!(
        lines(&mut s, "WITH RECURSIVE a AS (SELECT 1 AS x), b AS (SELECT x FROM a UNION SELECT 2) SELECT x FROM b ORDER BY x"),
        ["1", "2"]
    );
    // Read three times by scalar subqueries, and twice in one join.
    assert_eq!(
        lines(
            &mut s,
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10) \
             SELECT (SELECT count(*) FROM t), (SELECT max(n) FROM t), (SELECT sum(n) FROM t)"
        ),
        ["10|10|55"]
    );
    assert_eq!(
        lines(
            &mut s,
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) \
             SELECT a.n, b.n FROM t a JOIN t b ON b.n = a.n + 1 ORDER BY 1"
        ),
        ["1|2", "2|3"]
    );
    // In a correlated subquery: run again for each outer row, with its value bound.
    assert_eq!(
        lines(
            &mut s,
            "SELECT id, (WITH RECURSIVE up(id, m) AS (SELECT id, manager_id FROM emp WHERE id = o.id \
             UNION ALL SELECT e.id, e.manager_id FROM emp e JOIN up ON e.id = up.m) SELECT count(*) FROM up) \
             AS chain FROM emp o ORDER BY id"
        ),
        ["1|1", "2|2", "3|2", "4|3", "5|4", "6|3"]
    );
}

#[test]
fn a_recursive_query_of_a_form_postgresql_refuses_fails_as_there() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let order_by = fails(
        &mut s,
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3 ORDER BY 1) SELECT n FROM t",
    );
    assert_eq!(order_by.sqlstate(), "0A000", "{order_by}");
    let limit = fails(
        &mut s,
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3 LIMIT 2) SELECT n FROM t",
    );
    assert_eq!(limit.sqlstate(), "0A000", "{limit}");
    let width = fails(
        &mut s,
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1, 2 FROM t WHERE n < 3) SELECT n FROM t",
    );
    assert_eq!(width.sqlstate(), "42601", "{width}");
    assert!(width.to_string().ends_with("each UNION query must have the same number of columns"), "{width}");
    // The session goes on.
    run(&mut s, "ROLLBACK");
    assert_eq!(lines(&mut s, "SELECT count(*) FROM emp"), ["6"]);
}

#[test]
fn an_endless_recursion_is_stopped_by_a_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let handle = s.cancel_handle();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        while !stopping.load(Ordering::Relaxed) {
            handle.cancel();
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    // UNION ALL over a cycle never runs out of rows.
    let error = s.execute(
        "WITH RECURSIVE r(n) AS (SELECT 1::bigint UNION ALL SELECT e.dst FROM edges e JOIN r ON e.src = r.n) \
         SELECT count(*) FROM r",
        &[],
    );
    stop.store(true, Ordering::Relaxed);
    canceller.join().unwrap();
    assert!(matches!(error, Err(DbError::Canceled)), "{error:?}");
    assert_eq!(lines(&mut s, "SELECT count(*) FROM edges"), ["4"]);
}
