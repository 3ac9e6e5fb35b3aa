//! GROUP BY GROUPING SETS, ROLLUP, CUBE and `()`, beside plain keys, and GROUPING(), through
//! `Session::execute`. Each expected result is what PostgreSQL 15 returns for the same
//! query on the same rows (its bigint for our INT); the rows hold real NULLs in both
//! grouped columns, so that a NULL of the data and the NULL of a key a set leaves out
//! appear side by side, told apart by GROUPING().

use crate::common::{fails, open, run, space_rows as rows};
use db::{DbError, Session};

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE sales (id INT PRIMARY KEY, region TEXT, product TEXT, qty INT)");
    run(
        s,
        "INSERT INTO sales VALUES (1, 'east', 'apple', 3), (2, 'east', 'pear', 5), (3, 'west', 'apple', 2), \
         (4, 'west', NULL, 4), (5, NULL, 'apple', 1), (6, 'east', 'apple', NULL)",
    );
    run(s, "COMMIT");
}

#[test]
fn rollup_adds_subtotals_and_a_total_with_grouping_masks() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, product, sum(qty), count(*), GROUPING(region, product) FROM sales \
             GROUP BY ROLLUP (region, product) ORDER BY 5, region, product"
        ),
        [
            "east apple 3 2 0",
            "east pear 5 1 0",
            "west apple 2 1 0",
            "west NULL 4 1 0",
            "NULL apple 1 1 0",
            "east NULL 8 3 1",
            "west NULL 6 2 1",
            "NULL NULL 1 1 1",
            "NULL NULL 15 6 3",
        ]
    );
    // A composite element rolls up as one: (region, product), then ().
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, product, sum(qty) FROM sales GROUP BY ROLLUP ((region, product)) ORDER BY 1, 2"
        ),
        ["east apple 3", "east pear 5", "west apple 2", "west NULL 4", "NULL apple 1", "NULL NULL 15"]
    );
    // Select-list positions name the keys inside ROLLUP as in a plain GROUP BY.
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, product, sum(qty) FROM sales GROUP BY ROLLUP (1, 2) \
             ORDER BY 1, 2, GROUPING(region, product)"
        ),
        [
            "east apple 3",
            "east pear 5",
            "east NULL 8",
            "west apple 2",
            "west NULL 4",
            "west NULL 6",
            "NULL apple 1",
            "NULL NULL 1",
            "NULL NULL 15",
        ]
    );
    // An expression as the key.
    assert_eq!(
        rows(
            &mut s,
            "SELECT upper(region), sum(qty) FROM sales GROUP BY ROLLUP (upper(region)) ORDER BY 1, 2"
        ),
        ["EAST 8", "WEST 6", "NULL 1", "NULL 15"]
    );
}

#[test]
fn cube_and_grouping_sets_group_by_each_set() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, product, sum(qty), GROUPING(region), GROUPING(product) FROM sales \
             GROUP BY CUBE (region, product) ORDER BY 4, 5, region, product"
        ),
        [
            "east apple 3 0 0",
            "east pear 5 0 0",
            "west apple 2 0 0",
            "west NULL 4 0 0",
            "NULL apple 1 0 0",
            "east NULL 8 0 1",
            "west NULL 6 0 1",
            "NULL NULL 1 0 1",
            "NULL apple 6 1 0",
            "NULL pear 5 1 0",
            "NULL NULL 4 1 0",
            "NULL NULL 15 1 1",
        ]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, product, count(qty) FROM sales GROUP BY GROUPING SETS ((region), (product), ()) \
             ORDER BY GROUPING(region, product), region, product"
        ),
        [
            "east NULL 2",
            "west NULL 2",
            "NULL NULL 1",
            "NULL apple 3",
            "NULL pear 1",
            "NULL NULL 1",
            "NULL NULL 5"
        ]
    );
    // Plain keys beside ROLLUP: the product of the sets, (region, product) and (region).
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, product, sum(qty) FROM sales GROUP BY region, ROLLUP (product) \
             ORDER BY region, product, GROUPING(product)"
        ),
        [
            "east apple 3",
            "east pear 5",
            "east NULL 8",
            "west apple 2",
            "west NULL 4",
            "west NULL 6",
            "NULL apple 1",
            "NULL NULL 1"
        ]
    );
    // Repeated sets give repeated groups, as PostgreSQL's (a), (a), (a), ().
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, count(*) FROM sales GROUP BY ROLLUP (region), ROLLUP (region) ORDER BY 1, 2"
        ),
        ["east 3", "east 3", "east 3", "west 2", "west 2", "west 2", "NULL 1", "NULL 1", "NULL 1", "NULL 6"]
    );
    assert_eq!(rows(&mut s, "SELECT count(*) FROM sales GROUP BY ()"), ["6"]);
    // ROLLUP and CUBE inside GROUPING SETS add their sets to its list.
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, product, sum(qty) FROM sales \
             GROUP BY GROUPING SETS ((region), ROLLUP (region, product), CUBE ((product))) \
             ORDER BY GROUPING(region, product), 1, 2, 3"
        ),
        [
            "east apple 3",
            "east pear 5",
            "west apple 2",
            "west NULL 4",
            "NULL apple 1",
            "east NULL 8",
            "east NULL 8",
            "west NULL 6",
            "west NULL 6",
            "NULL NULL 1",
            "NULL NULL 1",
            "NULL apple 6",
            "NULL pear 5",
            "NULL NULL 4",
            "NULL NULL 15",
            "NULL NULL 15",
        ]
    );
}

#[test]
fn grouping_tells_a_null_of_the_data_from_a_total_in_having_order_by_and_windows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT coalesce(region, CASE WHEN GROUPING(region) = 1 THEN 'all regions' ELSE 'no region' END), \
             count(*) FROM sales GROUP BY ROLLUP (region) ORDER BY 1"
        ),
        ["all regions 6", "east 3", "no region 1", "west 2"]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, sum(qty) FROM sales GROUP BY ROLLUP (region) \
             HAVING GROUPING(region) = 1 OR sum(qty) > 5 ORDER BY GROUPING(region) DESC, region"
        ),
        ["NULL 15", "east 8", "west 6"]
    );
    // Window calls read the group rows, GROUPING() among their columns.
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, sum(qty), GROUPING(region), \
             rank() OVER (PARTITION BY GROUPING(region) ORDER BY sum(qty) DESC) \
             FROM sales GROUP BY ROLLUP (region) ORDER BY 3, 4"
        ),
        ["east 8 0 1", "west 6 0 2", "NULL 1 0 3", "NULL 15 1 1"]
    );
    // With a plain GROUP BY every key is grouped: 0.
    assert_eq!(
        rows(&mut s, "SELECT region, GROUPING(region) FROM sales GROUP BY region ORDER BY 1"),
        ["east 0", "west 0", "NULL 0"]
    );
}

#[test]
fn an_empty_set_has_its_group_even_over_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(rows(&mut s, "SELECT count(*) FROM sales WHERE qty > 100 GROUP BY ROLLUP (region)"), ["0"]);
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*), GROUPING(region) FROM sales WHERE qty > 100 GROUP BY GROUPING SETS ((), (region), ())"
        ),
        ["0 1", "0 1"]
    );
}

#[test]
fn explain_shows_a_key_line_per_grouping_set() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let plan =
        rows(&mut s, "EXPLAIN SELECT region, product, sum(qty) FROM sales GROUP BY ROLLUP (region, product)");
    assert_eq!(
        plan,
        [
            "MixedAggregate",
            "  Hash Key: region, product",
            "  Hash Key: region",
            "  Group Key: ()",
            "  ->  Seq Scan on sales"
        ]
    );
    let plan = rows(
        &mut s,
        "EXPLAIN SELECT region, product, sum(qty) FROM sales GROUP BY region, CUBE (product) HAVING sum(qty) > 1",
    );
    assert_eq!(
        plan,
        [
            "HashAggregate",
            "  Hash Key: region, product",
            "  Hash Key: region",
            "  Filter: sum(qty) > 1",
            "  ->  Seq Scan on sales"
        ]
    );
}

#[test]
fn grouping_outside_a_grouped_query_or_past_the_limits_fails_as_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let cases = [
        ("SELECT GROUPING(region) FROM sales", "42803", "arguments to GROUPING must be grouping expressions"),
        (
            "SELECT GROUPING(qty) FROM sales GROUP BY ROLLUP (region)",
            "42803",
            "arguments to GROUPING must be grouping expressions",
        ),
        (
            "SELECT region FROM sales WHERE GROUPING(region) = 0 GROUP BY region",
            "42803",
            "grouping operations are not allowed in WHERE",
        ),
        (
            "SELECT region FROM sales GROUP BY GROUPING(region)",
            "42803",
            "grouping operations are not allowed in GROUP BY",
        ),
        ("SELECT sum(GROUPING(region)) FROM sales GROUP BY region", "42803", "aggregate function calls cannot be nested"),
        (
            "SELECT count(*) FROM sales GROUP BY CUBE (id, id, id, id, id, id, id, id, id, id, id, id, id)",
            "54011",
            "CUBE is limited to 12 elements",
        ),
        (
            "SELECT count(*) FROM sales GROUP BY CUBE (id, id, id, id, id, id, id), CUBE (id, id, id, id, id, id)",
            "54001",
            "too many grouping sets present (maximum 4096)",
        ),
        // Inside parentheses or another ROLLUP, PostgreSQL's grammar reads a function call.
        (
            "SELECT sum(qty) FROM sales GROUP BY GROUPING SETS ((region, ROLLUP (product)))",
            "42883",
            "function rollup",
        ),
    ];
    for (sql, sqlstate, message) in cases {
        let e = fails(&mut s, sql);
        assert_eq!(e.sqlstate(), sqlstate, "{sql}: {e}");
        assert!(e.to_string().contains(message), "{sql}: {e}");
    }
    // The arguments' limit: an int4 holds the mask.
    let args = vec!["region"; 32].join(", ");
    let e = fails(&mut s, &format!("SELECT GROUPING({args}) FROM sales GROUP BY region"));
    assert!(matches!(e.kind(), DbError::TooManyColumns(_)), "{e}");
}

#[test]
fn group_by_distinct_drops_the_repeated_grouping_sets_and_all_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // ROLLUP (region, product), ROLLUP (region) multiplies out to six sets, of which
    // (region, product) and (region) come twice: DISTINCT keeps four.
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, product, sum(qty), GROUPING(region, product) FROM sales \
             GROUP BY DISTINCT ROLLUP (region, product), ROLLUP (region) ORDER BY 4, region, product"
        ),
        [
            "east apple 3 0",
            "east pear 5 0",
            "west apple 2 0",
            "west NULL 4 0",
            "NULL apple 1 0",
            "east NULL 8 1",
            "west NULL 6 1",
            "NULL NULL 1 1",
            "NULL NULL 15 3",
        ]
    );
    // EXPLAIN shows the sets kept, each key once (PostgreSQL 15's plan of the same query).
    assert_eq!(
        rows(
            &mut s,
            "EXPLAIN SELECT region, product, sum(qty) FROM sales GROUP BY DISTINCT ROLLUP (region, product), ROLLUP (region)"
        ),
        [
            "MixedAggregate",
            "  Hash Key: region, product",
            "  Hash Key: region",
            "  Group Key: ()",
            "  ->  Seq Scan on sales"
        ]
    );
    let count = |s: &mut Session, group_by: &str| {
        rows(s, &format!("SELECT count(*) FROM (SELECT region, product FROM sales GROUP BY {group_by}) s"))
    };
    assert_eq!(count(&mut s, "ROLLUP (region, product), ROLLUP (region)"), ["20"]);
    assert_eq!(count(&mut s, "ALL ROLLUP (region, product), ROLLUP (region)"), ["20"], "ALL is the default");
    assert_eq!(count(&mut s, "CUBE (region, product), GROUPING SETS ((region), (product), ())"), ["44"]);
    assert_eq!(
        count(&mut s, "DISTINCT CUBE (region, product), GROUPING SETS ((region), (product), ())"),
        ["12"]
    );
    // Sets are the same whatever the order of their keys, or a key written twice.
    assert_eq!(
        rows(
            &mut s,
            "SELECT region, product, count(*) FROM sales GROUP BY DISTINCT \
             GROUPING SETS ((region, product), (product, region), (region), (region, region)) ORDER BY region, product"
        ),
        [
            "east apple 2",
            "east pear 1",
            "east NULL 3",
            "west apple 1",
            "west NULL 1",
            "west NULL 2",
            "NULL apple 1",
            "NULL NULL 1",
        ]
    );
    assert_eq!(
        rows(&mut s, "SELECT region, count(*) FROM sales GROUP BY DISTINCT region ORDER BY region"),
        ["east 3", "west 2", "NULL 1"]
    );
}
