//! `SELECT DISTINCT ON (keys)`: the first row of each set of rows equal on the keys, in
//! the ORDER BY's order, whose first keys must be the DISTINCT ON keys (42P10). Every
//! expected result below is PostgreSQL 15's for the same data (`psql -At`).

use crate::common::{fails, open, pipe_rows as rows, run};

#[test]
fn distinct_on_keeps_the_first_row_of_each_key_in_the_order_by_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE o (id INT PRIMARY KEY, cust INT, amount NUMERIC, at DATE)");
    run(
        &mut s,
        "INSERT INTO o VALUES (1, 10, 5, '2026-01-03'), (2, 10, 7, '2026-01-01'), (3, 20, 1, '2026-01-02'), \
         (4, NULL, 2, '2026-01-05'), (5, NULL, 3, '2026-01-04'), (6, 20, 9, '2026-01-03')",
    );
    run(&mut s, "COMMIT");
    // The latest order of each customer (NULLs one group, last as in ORDER BY).
    assert_eq!(
        rows(&mut s, "SELECT DISTINCT ON (cust) cust, id, amount FROM o ORDER BY cust, at DESC"),
        ["10|1|5", "20|6|9", "NULL|4|2"]
    );
    assert_eq!(
        rows(&mut s, "SELECT DISTINCT ON (cust) cust, amount FROM o ORDER BY cust, amount DESC"),
        ["10|7", "20|9", "NULL|3"]
    );
    // Keys in another order than ORDER BY's first keys; a position; no ORDER BY (sorted
    // by the keys).
    assert_eq!(
        rows(&mut s, "SELECT DISTINCT ON (cust, at) cust, at FROM o ORDER BY at, cust"),
        [
            "10|2026-01-01",
            "20|2026-01-02",
            "10|2026-01-03",
            "20|2026-01-03",
            "NULL|2026-01-04",
            "NULL|2026-01-05"
        ]
    );
    assert_eq!(
        rows(&mut s, "SELECT DISTINCT ON (1) cust, id FROM o ORDER BY 1, 2 DESC"),
        ["10|2", "20|6", "NULL|5"]
    );
    assert_eq!(rows(&mut s, "SELECT DISTINCT ON (cust) cust FROM o"), ["10", "20", "NULL"]);
    // With LIMIT, over groups, and through a join.
    assert_eq!(
        rows(&mut s, "SELECT DISTINCT ON (cust) cust, id FROM o ORDER BY cust, id LIMIT 2"),
        ["10|1", "20|3"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT DISTINCT ON (cust) cust, at, count(*) FROM o GROUP BY cust, at ORDER BY cust, at DESC"
        ),
        ["10|2026-01-03|1", "20|2026-01-03|1", "NULL|2026-01-05|1"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT DISTINCT ON (a.cust) a.cust, b.id FROM o a JOIN o b ON a.cust = b.cust \
             ORDER BY a.cust, b.amount DESC"
        ),
        ["10|2", "20|6"]
    );
    let plan =
        rows(&mut s, "EXPLAIN SELECT DISTINCT ON (cust) cust, id FROM o ORDER BY cust, at DESC").join("\n");
    assert!(plan.contains("Unique") && plan.contains("Sort"), "{plan}");

    let error = fails(&mut s, "SELECT DISTINCT ON (cust) id FROM o ORDER BY id");
    assert_eq!(error.sqlstate(), "42P10", "{error}");
    assert!(error
        .to_string()
        .contains("SELECT DISTINCT ON expressions must match initial ORDER BY expressions"));
}
