//! Index nested loop joins (issue 20): a join whose inner side has an equality on a
//! prefix of its primary key or of a secondary index runs as one lookup per outer row
//! when the outer side is small. Each query here is checked against the same join made
//! unusable for a lookup (`x + 0 = y + 0`, which the planner can only hash): the rows are
//! the same, and EXPLAIN shows which method ran.

use crate::common::{cells, open, run};
use db::Session;

/// customers 2000 rows; orders 4000 (every tenth without a customer, some of a customer
/// that does not exist, several per customer) with an index on customer_id and one on
/// (customer_id, amount); lines keyed by (order_id, line_no); picks, 30 small rows
/// pointing at orders (some NULL, some at nothing, one a fraction).
fn shop(s: &mut Session) {
    run(s, "CREATE TABLE customers (id INT PRIMARY KEY, name TEXT, region INT)");
    run(s, "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, amount INT)");
    run(s, "CREATE TABLE lines (order_id INT, line_no INT, qty INT, PRIMARY KEY (order_id, line_no))");
    run(s, "CREATE TABLE picks (id INT PRIMARY KEY, order_ref INT, ref_f FLOAT)");
    // Each in a transaction of its own: the redo of one is limited to half a log file.
    run(s, "INSERT INTO customers SELECT g, 'c' || g, g % 7 FROM generate_series(1, 2000) g");
    run(s, "COMMIT");
    run(
        s,
        "INSERT INTO orders SELECT g, CASE WHEN g % 10 = 0 THEN NULL ELSE (g * 7) % 2500 END, g % 7 \
         FROM generate_series(1, 4000) g",
    );
    run(s, "COMMIT");
    run(s, "INSERT INTO lines SELECT g / 3 + 1, g % 3, g FROM generate_series(0, 5999) g");
    run(s, "COMMIT");
    run(
        s,
        "INSERT INTO picks SELECT g, CASE WHEN g % 5 = 0 THEN NULL ELSE g * 131 END, g * 131 + (g % 2) * 0.5 \
         FROM generate_series(1, 30) g",
    );
    run(s, "CREATE INDEX orders_customer_idx ON orders (customer_id)");
    run(s, "CREATE INDEX orders_customer_amount ON orders (customer_id, amount)");
    run(s, "COMMIT");
}

fn explain(s: &mut Session, sql: &str) -> Vec<String> {
    cells(s, &format!("EXPLAIN {sql}")).into_iter().map(|r| r[0].clone()).collect()
}

/// Runs `lookup_sql` (which must plan a nested loop showing each of `shows`) and
/// `hash_sql` (which must plan a hash join), asserting the same rows, which it returns.
fn same_rows(s: &mut Session, lookup_sql: &str, hash_sql: &str, shows: &[&str]) -> Vec<Vec<String>> {
    let plan = explain(s, lookup_sql);
    assert!(plan.iter().any(|l| l.contains("Nested Loop")), "{lookup_sql}: {plan:#?}");
    for wanted in shows {
        assert!(plan.iter().any(|l| l.contains(wanted)), "{lookup_sql}: no {wanted:?} in {plan:#?}");
    }
    let hashed = explain(s, hash_sql);
    assert!(hashed.iter().any(|l| l.contains("Hash Cond")), "{hash_sql}: {hashed:#?}");
    assert!(!hashed.iter().any(|l| l.contains("Index Cond")), "{hash_sql}: {hashed:#?}");
    let rows = cells(s, lookup_sql);
    assert_eq!(rows, cells(s, hash_sql), "{lookup_sql}");
    rows
}

#[test]
fn a_join_from_one_order_to_its_customer_looks_the_customer_up_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    shop(&mut s);
    let before = db::sql::rows_visited();
    let rows = same_rows(
        &mut s,
        "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id = 42",
        "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id + 0 = o.customer_id + 0 WHERE o.id = 42",
        &["Index Scan using orders_pkey on orders o", "Index Scan using customers_pkey on customers c"],
    );
    assert_eq!(rows, [["42", "c294"]]);
    let plan =
        explain(&mut s, "SELECT 1 FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id = 42");
    assert_eq!(
        plan,
        [
            "Nested Loop",
            "    -> Index Scan using orders_pkey on orders o (filtered)",
            "    -> Index Scan using customers_pkey on customers c",
            "         Index Cond: (c.id = o.customer_id)",
            "  Filter: o.id = 42",
        ]
    );
    // The nested loop read two rows; the hash join read every customer.
    run(&mut s, "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id = 42");
    let visited = db::sql::rows_visited();
    run(&mut s, "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id = 42");
    assert_eq!(db::sql::rows_visited() - visited, 2);
    assert!(visited - before > 2000, "the hash join read {} rows", visited - before);
}

#[test]
fn a_customers_orders_come_through_a_non_unique_index_duplicates_and_all() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    shop(&mut s);
    let rows = same_rows(
        &mut s,
        "SELECT c.id, o.id, o.amount FROM customers c JOIN orders o ON o.customer_id = c.id \
         WHERE c.id IN (7, 14, 1999) ORDER BY 1, 2",
        "SELECT c.id, o.id, o.amount FROM customers c JOIN orders o ON o.customer_id + 0 = c.id + 0 \
         WHERE c.id IN (7, 14, 1999) ORDER BY 1, 2",
        &["Index Scan using orders_customer_idx on orders o", "Index Cond: (o.customer_id = c.id)"],
    );
    // (g * 7) % 2500 = 7 for g = 1 and 2501 only (7 is invertible mod 2500).
    let of_7: Vec<&str> = rows.iter().filter(|r| r[0] == "7").map(|r| r[1].as_str()).collect();
    assert_eq!(of_7, ["1", "2501"], "{rows:?}");
    // Both columns of a two-column index pinned: that index, not the one-column one.
    same_rows(
        &mut s,
        "SELECT c.id, o.id FROM customers c JOIN orders o ON o.customer_id = c.id AND o.amount = c.region \
         WHERE c.id IN (7, 8, 9, 10, 11, 12) ORDER BY 1, 2",
        "SELECT c.id, o.id FROM customers c JOIN orders o ON o.customer_id + 0 = c.id + 0 \
         AND o.amount + 0 = c.region + 0 WHERE c.id IN (7, 8, 9, 10, 11, 12) ORDER BY 1, 2",
        &[
            "Index Scan using orders_customer_amount on orders o",
            "Index Cond: (o.customer_id = c.id AND o.amount = c.region)",
        ],
    );
    // A prefix of a two-column primary key.
    let lines = same_rows(
        &mut s,
        "SELECT o.id, l.line_no, l.qty FROM orders o JOIN lines l ON l.order_id = o.id \
         WHERE o.id IN (1, 2, 3000) ORDER BY 1, 2",
        "SELECT o.id, l.line_no, l.qty FROM orders o JOIN lines l ON l.order_id + 0 = o.id + 0 \
         WHERE o.id IN (1, 2, 3000) ORDER BY 1, 2",
        &["Index Scan using lines_pkey on lines l", "Index Cond: (l.order_id = o.id)"],
    );
    assert_eq!(lines.len(), 6, "three lines each of orders 1 and 2, none of 3000: {lines:?}");
}

#[test]
fn null_keys_fractions_and_left_joins_match_what_the_hash_join_matches() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    shop(&mut s);
    // Orders without a customer (every tenth) and of customers that do not exist.
    let inner = same_rows(
        &mut s,
        "SELECT o.id, o.customer_id, c.id FROM orders o JOIN customers c ON c.id = o.customer_id \
         WHERE o.id IN (5, 10, 15, 20, 300, 305, 310, 357) ORDER BY 1",
        "SELECT o.id, o.customer_id, c.id FROM orders o JOIN customers c ON c.id + 0 = o.customer_id + 0 \
         WHERE o.id IN (5, 10, 15, 20, 300, 305, 310, 357) ORDER BY 1",
        &["Index Cond: (c.id = o.customer_id)"],
    );
    assert!(inner.iter().all(|r| r[0] != "10" && r[0] != "20"), "NULL matches nothing: {inner:?}");
    assert!(inner.iter().all(|r| r[0] != "357"), "order 357's customer 2499 does not exist: {inner:?}");
    // LEFT joins keep the picks that find nothing: a NULL, a key past the end, and a
    // fraction no integer key equals.
    let left = same_rows(
        &mut s,
        "SELECT p.id, o.id, o.customer_id FROM picks p LEFT JOIN orders o ON o.id = p.order_ref ORDER BY 1",
        "SELECT p.id, o.id, o.customer_id FROM picks p LEFT JOIN orders o ON o.id + 0 = p.order_ref + 0 \
         ORDER BY 1",
        &["Nested Loop Left Join", "Index Cond: (o.id = p.order_ref)"],
    );
    assert_eq!(left.len(), 30);
    assert_eq!(left[4], ["5", "NULL", "NULL"]);
    assert_eq!(left[29], ["30", "NULL", "NULL"], "{left:?}");
    let fractions = same_rows(
        &mut s,
        "SELECT p.id, o.id FROM picks p LEFT JOIN orders o ON o.id = p.ref_f ORDER BY 1",
        "SELECT p.id, o.id FROM picks p LEFT JOIN orders o ON o.id + 0 = p.ref_f + 0 ORDER BY 1",
        &["Index Cond: (o.id = p.ref_f)"],
    );
    assert_eq!(fractions[0], ["1", "NULL"], "131.5 equals no integer key");
    assert_eq!(fractions[1], ["2", "262"]);
    // A LEFT join with a condition on the inner side's other columns, through the index.
    let rows = same_rows(
        &mut s,
        "SELECT p.id, o.id FROM picks p LEFT JOIN orders o ON o.customer_id = p.order_ref AND o.amount > 3 \
         ORDER BY 1, 2",
        "SELECT p.id, o.id FROM picks p LEFT JOIN orders o ON o.customer_id + 0 = p.order_ref + 0 \
         AND o.amount > 3 ORDER BY 1, 2",
        &["Index Scan using orders_customer_idx on orders o", "Nested Loop Left Join (filtered)"],
    );
    assert!(rows.len() >= 30, "{rows:?}");
}

#[test]
fn lookups_see_the_transactions_own_uncommitted_changes_and_no_one_elses() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    shop(&mut s);
    let lookup = "SELECT c.id, o.id, o.amount FROM customers c JOIN orders o ON o.customer_id = c.id \
                  WHERE c.id IN (7, 2001) ORDER BY 1, 2";
    let hash = "SELECT c.id, o.id, o.amount FROM customers c JOIN orders o ON o.customer_id + 0 = c.id + 0 \
                WHERE c.id IN (7, 2001) ORDER BY 1, 2";
    let committed = cells(&mut s, lookup);
    let first = committed[0][1].clone();
    let second = committed[1][1].clone();
    run(&mut s, "BEGIN");
    run(&mut s, "INSERT INTO orders VALUES (5000, 7, 99)");
    run(&mut s, &format!("DELETE FROM orders WHERE id = {first}"));
    run(&mut s, &format!("UPDATE orders SET amount = 55 WHERE id = {second}"));
    run(&mut s, "UPDATE orders SET customer_id = 7 WHERE id = 2");
    run(&mut s, "INSERT INTO customers VALUES (2001, 'new', 0)");
    run(&mut s, "INSERT INTO orders VALUES (5001, 2001, 1)");
    let mine = same_rows(&mut s, lookup, hash, &["Index Scan using orders_customer_idx on orders o"]);
    let ids: Vec<&str> = mine.iter().map(|r| r[1].as_str()).collect();
    assert!(ids.contains(&"5000") && ids.contains(&"5001") && ids.contains(&"2"), "{mine:?}");
    // Orders 643 and 3143 were of a customer that did not exist until now.
    assert!(ids.contains(&"643") && ids.contains(&"3143"), "{mine:?}");
    assert!(!ids.contains(&first.as_str()), "the deleted order {first} is gone: {mine:?}");
    assert!(mine.iter().any(|r| r[1] == second && r[2] == "55"), "{mine:?}");
    // The primary key path too: the new customer found by key from its new order.
    let by_key = same_rows(
        &mut s,
        "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id IN (5000, 5001) \
         ORDER BY 1",
        "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id + 0 = o.customer_id + 0 \
         WHERE o.id IN (5000, 5001) ORDER BY 1",
        &["Index Scan using customers_pkey on customers c"],
    );
    assert_eq!(by_key, [["5000", "c7"], ["5001", "new"]]);
    // Another session sees none of it.
    let mut other = db.session();
    assert_eq!(cells(&mut other, lookup), committed);
    run(&mut s, "COMMIT");
    assert_eq!(cells(&mut other, lookup), mine);
}
