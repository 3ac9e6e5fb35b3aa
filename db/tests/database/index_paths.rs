//! Access paths through keys and indexes beyond a plain `=` (issue 20): `= ANY(array)`
//! and IN lists of parameters, as drivers send them, become point lookups.

use crate::common::{cells, open, run};
use db::value::{Array, ElemType};
use db::{Session, Value};

fn ints(values: &[Option<i64>]) -> Value {
    Array::new(ElemType::Int, values.iter().map(|v| v.map_or(Value::Null, Value::Int)).collect()).into_value()
}

fn query(s: &mut Session, sql: &str, params: &[Value]) -> Vec<Vec<String>> {
    let result = s.execute(sql, params).unwrap_or_else(|e| panic!("{sql}: {e}"));
    result.rows().iter().map(|row| row.iter().map(|v| v.to_string()).collect()).collect()
}

/// The rows `sql` returns with `params`, and how many rows it read to find them.
fn visited(s: &mut Session, sql: &str, params: &[Value]) -> (Vec<Vec<String>>, u64) {
    let before = db::sql::rows_visited();
    let rows = query(s, sql, params);
    (rows, db::sql::rows_visited() - before)
}

fn items(s: &mut Session) {
    run(s, "CREATE TABLE item (id INT PRIMARY KEY, kind INT, name TEXT)");
    run(s, "INSERT INTO item SELECT g, g % 50, 'i' || g FROM generate_series(1, 1000) g");
    run(s, "CREATE INDEX item_kind ON item (kind)");
    run(s, "COMMIT");
}

#[test]
fn equal_any_of_an_array_parameter_looks_up_each_key_as_in_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    items(&mut s);
    let sql = "SELECT id, name FROM item WHERE id = ANY($1) ORDER BY id";
    let (rows, read) = visited(&mut s, sql, &[ints(&[Some(7), Some(3), None, Some(5000), Some(3)])]);
    assert_eq!(rows, [["3", "i3"], ["7", "i7"]], "NULL and a missing key find nothing, a repeat once");
    assert_eq!(read, 2, "two point lookups, not a scan of 1000 rows");
    // The same through an IN list of parameters and an ARRAY constructor of them.
    let (rows, read) = visited(
        &mut s,
        "SELECT id FROM item WHERE id IN ($1, $2) ORDER BY id",
        &[Value::Int(9), Value::Int(4)],
    );
    assert_eq!((rows, read), (vec![vec!["4".to_string()], vec!["9".to_string()]], 2));
    let (rows, read) = visited(
        &mut s,
        "SELECT id FROM item WHERE id = ANY(ARRAY[$1, $2]) ORDER BY id",
        &[Value::Int(9), Value::Int(4)],
    );
    assert_eq!((rows, read), (vec![vec!["4".to_string()], vec!["9".to_string()]], 2));
    // An empty array or a NULL one matches nothing and reads nothing.
    assert_eq!(visited(&mut s, "SELECT id FROM item WHERE id = ANY($1)", &[ints(&[])]), (vec![], 0));
    assert_eq!(visited(&mut s, "SELECT id FROM item WHERE id = ANY($1::int[])", &[Value::Null]), (vec![], 0));
    // Through a secondary index: the rows of two kinds (20 each), not all 1000.
    let (rows, read) =
        visited(&mut s, "SELECT count(*) FROM item WHERE kind = ANY($1)", &[ints(&[Some(1), Some(2)])]);
    assert_eq!(rows, [["40"]]);
    assert_eq!(read, 40);
    let plan: Vec<String> = cells(&mut s, "EXPLAIN SELECT name FROM item WHERE kind = ANY(ARRAY[1, 2, 3])")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(plan[0], "Index Scan using item_kind on item  (3 keys)", "{plan:#?}");
    // `<> ANY` and `= ALL` are filters, and still right.
    assert_eq!(
        query(&mut s, "SELECT count(*) FROM item WHERE id <> ALL($1)", &[ints(&[Some(1), Some(2)])]),
        [["998"]]
    );
}

/// events: 2000 rows, `at` distinct or NULL (every 50th), indexed.
fn events(s: &mut Session) {
    run(s, "CREATE TABLE events (id INT PRIMARY KEY, at INT, kind INT)");
    run(
        s,
        "INSERT INTO events SELECT g, CASE WHEN g % 50 = 0 THEN NULL ELSE (g * 37) % 2003 END, g % 10 \
         FROM generate_series(1, 2000) g",
    );
    run(s, "CREATE INDEX events_at ON events (at)");
    run(s, "COMMIT");
}

fn plan_of(s: &mut Session, sql: &str) -> Vec<String> {
    cells(s, &format!("EXPLAIN {sql}")).into_iter().map(|r| r[0].clone()).collect()
}

/// `sql` read through an index (EXPLAIN shows `shows` and no Sort), its rows those of
/// `sorted` (the same query made to sort), reading at most `read_max` rows.
fn through_index(s: &mut Session, sql: &str, sorted: &str, shows: &str, read_max: u64) -> Vec<Vec<String>> {
    let plan = plan_of(s, sql);
    assert!(plan.iter().any(|l| l.contains(shows)), "{sql}: {plan:#?}");
    assert!(!plan.iter().any(|l| l.contains("Sort")), "{sql}: {plan:#?}");
    let (rows, read) = visited(s, sql, &[]);
    assert_eq!(rows, query(s, sorted, &[]), "{sql}");
    assert!(read <= read_max, "{sql} read {read} rows");
    rows
}

#[test]
fn order_by_an_index_with_a_limit_reads_the_index_in_order_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    events(&mut s);
    let first = through_index(
        &mut s,
        "SELECT id, at FROM events ORDER BY at LIMIT 5",
        "SELECT id, at FROM events ORDER BY at + 0 LIMIT 5",
        "Index Scan using events_at on events",
        5,
    );
    assert_eq!(first[0][1], "1");
    assert_eq!(plan_of(&mut s, "SELECT id FROM events ORDER BY at LIMIT 5")[0], "Limit");
    // Descending: NULLs first, as PostgreSQL sorts them.
    let last = through_index(
        &mut s,
        "SELECT at FROM events ORDER BY at DESC LIMIT 45",
        "SELECT at FROM events ORDER BY at + 0 DESC LIMIT 45",
        "Index Scan Backward using events_at on events",
        45,
    );
    assert_eq!(last[39], ["NULL"]);
    assert_eq!(last[40], ["2002"]);
    // With a WHERE on another column and an OFFSET.
    through_index(
        &mut s,
        "SELECT id, at FROM events WHERE kind = 3 ORDER BY at DESC NULLS FIRST LIMIT 4 OFFSET 2",
        "SELECT id, at FROM events WHERE kind = 3 ORDER BY at + 0 DESC LIMIT 4 OFFSET 2",
        "Index Scan Backward using events_at on events",
        200,
    );
    // The primary key backwards.
    let newest = through_index(
        &mut s,
        "SELECT id FROM events ORDER BY id DESC LIMIT 3",
        "SELECT id FROM events ORDER BY id + 0 DESC LIMIT 3",
        "Index Scan Backward using events_pkey on events",
        3,
    );
    assert_eq!(newest, [["2000"], ["1999"], ["1998"]]);
    // NULLs placed otherwise than the index holds them: a sort.
    let plan = plan_of(&mut s, "SELECT id FROM events ORDER BY at NULLS FIRST LIMIT 3");
    assert!(plan.iter().any(|l| l.contains("Sort")), "{plan:#?}");
    assert_eq!(query(&mut s, "SELECT at FROM events ORDER BY at NULLS FIRST LIMIT 1", &[]), [["NULL"]]);
}

#[test]
fn min_and_max_of_an_indexed_column_read_one_end_of_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    events(&mut s);
    let plan = plan_of(&mut s, "SELECT max(at) FROM events");
    assert_eq!(
        plan,
        [
            "Aggregate",
            "  ->  Limit  (first row: min/max through the index)",
            "        ->  Index Scan Backward using events_at on events"
        ]
    );
    assert_eq!(visited(&mut s, "SELECT max(at) FROM events", &[]), (vec![vec!["2002".to_string()]], 1));
    assert_eq!(visited(&mut s, "SELECT min(at) FROM events", &[]), (vec![vec!["1".to_string()]], 1));
    assert_eq!(visited(&mut s, "SELECT max(id) FROM events", &[]), (vec![vec!["2000".to_string()]], 1));
    // With a WHERE: the first row it keeps.
    assert_eq!(
        query(&mut s, "SELECT min(at) FROM events WHERE kind = 3", &[]),
        query(&mut s, "SELECT min(at + 0) FROM events WHERE kind = 3", &[])
    );
    assert_eq!(query(&mut s, "SELECT max(at) FROM events WHERE kind = 11", &[]), [["NULL"]]);
    // The transaction's own rows count; a deleted one does not.
    run(&mut s, "BEGIN");
    run(&mut s, "INSERT INTO events VALUES (3000, 5000, 1)");
    run(&mut s, "DELETE FROM events WHERE at = (SELECT min(at + 0) FROM events)");
    run(&mut s, "UPDATE events SET at = NULL WHERE id = 1");
    assert_eq!(query(&mut s, "SELECT max(at) FROM events", &[]), [["5000"]]);
    assert_eq!(
        query(&mut s, "SELECT min(at) FROM events", &[]),
        query(&mut s, "SELECT min(at + 0) FROM events", &[])
    );
    through_index(
        &mut s,
        "SELECT id, at FROM events ORDER BY at LIMIT 3",
        "SELECT id, at FROM events ORDER BY at + 0 LIMIT 3",
        "Index Scan using events_at on events",
        3,
    );
    through_index(
        &mut s,
        "SELECT at FROM events ORDER BY at DESC LIMIT 42",
        "SELECT at FROM events ORDER BY at + 0 DESC LIMIT 42",
        "Index Scan Backward using events_at on events",
        42,
    );
    let mut other = db.session();
    assert_eq!(query(&mut other, "SELECT max(at) FROM events", &[]), [["2002"]]);
    run(&mut s, "ROLLBACK");
    run(&mut s, "DELETE FROM events");
    assert_eq!(query(&mut s, "SELECT max(at) FROM events", &[]), [["NULL"]]);
}

#[test]
fn a_where_that_pins_keys_is_read_by_key_and_sorted_not_read_in_index_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    events(&mut s);
    let sql = "SELECT id, at FROM events WHERE id IN (7, 3, 1500) ORDER BY at LIMIT 2";
    let plan = plan_of(&mut s, sql);
    assert!(plan.iter().any(|l| l.contains("Sort")), "{plan:#?}");
    assert!(plan.iter().any(|l| l.contains("Index Scan using events_pkey on events  (3 keys)")), "{plan:#?}");
    let (rows, read) = visited(&mut s, sql, &[]);
    assert_eq!(
        rows,
        query(&mut s, "SELECT id, at FROM events WHERE id IN (7, 3, 1500) ORDER BY at + 0 LIMIT 2", &[])
    );
    assert_eq!(read, 3);
    // A bind value pins it too, decided at each execution.
    let (rows, read) = visited(&mut s, "SELECT max(at) FROM events WHERE id = $1", &[Value::Int(3)]);
    assert_eq!((rows, read), (vec![vec!["111".to_string()]], 1));
}
