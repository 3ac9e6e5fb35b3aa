//! The aggregates applications use, through `Session::execute` (issue 20): string_agg
//! (ORDER BY, DISTINCT, per-row separators), Oracle's LISTAGG ... WITHIN GROUP,
//! bool_and/bool_or/every, stddev and variance (numeric for integers and numerics,
//! double precision for floats), FILTER (WHERE ...), in grouped queries and as window
//! aggregates. Each expected result is what PostgreSQL 15 returns for the same query on
//! the same rows (its bigint for our INT).

use crate::common::{cells, fails, one, open, run, space_rows as rows};
use db::{DataType, Session};

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE m (id INT PRIMARY KEY, g TEXT, n INT, x NUMERIC, f FLOAT, b BOOLEAN, t TEXT)");
    run(
        s,
        "INSERT INTO m VALUES (1, 'a', 1, 1.5, 1.5, true, 'x'), (2, 'a', 2, 2.25, 2.25, true, 'y'), \
         (3, 'a', 4, NULL, 4.0, NULL, NULL), (4, 'b', 10, 10, 10, false, 'z'), \
         (5, 'b', NULL, 3.1, NULL, true, 'w'), (6, 'c', 7, 7, 7, NULL, 'v')",
    );
    run(s, "COMMIT");
}

#[test]
fn stddev_and_variance_of_integers_are_numerics_at_postgresql_scale() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let sql = "SELECT g, stddev(n), stddev_samp(n), stddev_pop(n), variance(n), var_samp(n), var_pop(n) \
               FROM m GROUP BY g ORDER BY g";
    assert_eq!(
        rows(&mut s, sql),
        [
            "a 1.5275252316519467 1.5275252316519467 1.2472191289246471 2.3333333333333333 2.3333333333333333 \
             1.5555555555555556",
            "b NULL NULL 0 NULL NULL 0",
            "c NULL NULL 0 NULL NULL 0",
        ]
    );
    let columns = run(&mut s, sql).columns().to_vec();
    assert!(columns[1..].iter().all(|c| matches!(c.ty, Some(DataType::Numeric(None)))), "{columns:?}");
    assert_eq!(
        rows(
            &mut s,
            "SELECT g, stddev(x), stddev_pop(x), variance(x), var_pop(x) FROM m GROUP BY g ORDER BY g"
        ),
        [
            "a 0.53033008588991064330 0.37500000000000000000 0.28125000000000000000 0.14062500000000000000",
            "b 4.8790367901871779 3.4500000000000000 23.8050000000000000 11.9025000000000000",
            "c NULL 0 NULL 0",
        ]
    );
    assert_eq!(
        one(&mut s, "SELECT variance(v) FROM (VALUES (1.000), (2.5), (3)) s(v)"),
        "1.08333333333333333333"
    );
    assert_eq!(rows(&mut s, "SELECT stddev(v), variance(v) FROM (VALUES (5), (5)) s(v)"), ["0 0"]);
    assert_eq!(rows(&mut s, "SELECT stddev_samp(v), var_pop(v) FROM (VALUES (5)) s(v)"), ["NULL 0"]);
}

#[test]
fn stddev_and_variance_of_floats_are_doubles_as_postgresql_computes_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let sql = "SELECT g, stddev(f), stddev_pop(f), variance(f), var_pop(f) FROM m GROUP BY g ORDER BY g";
    assert_eq!(
        rows(&mut s, sql),
        [
            "a 1.282900359861721 1.0474837574980445 1.6458333333333333 1.097222222222222",
            "b NULL 0 NULL 0",
            "c NULL 0 NULL 0"
        ]
    );
    let columns = run(&mut s, sql).columns().to_vec();
    assert!(columns[1..].iter().all(|c| c.ty == Some(DataType::Float)), "{columns:?}");
    assert_eq!(
        rows(&mut s, "SELECT stddev(n), variance(x), var_samp(f), stddev_pop(f) FROM m"),
        ["3.7013511046643495 13.0395000000000000 12.45 3.1559467676119"]
    );
}

#[test]
fn bool_and_bool_or_and_every_skip_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(&mut s, "SELECT g, bool_and(b), bool_or(b), every(b) FROM m GROUP BY g ORDER BY g"),
        ["a true true true", "b false true false", "c NULL NULL NULL"]
    );
    let e = fails(&mut s, "SELECT bool_and(n) FROM m");
    assert_eq!((e.sqlstate(), e.to_string().as_str()), ("42883", "function bool_and(bigint) does not exist"));
    let e = fails(&mut s, "SELECT stddev(t) FROM m");
    assert_eq!((e.sqlstate(), e.to_string().as_str()), ("42883", "function stddev(text) does not exist"));
}

#[test]
fn string_agg_joins_in_its_order_with_each_rows_separator() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        cells(
            &mut s,
            "SELECT g, string_agg(t, ',' ORDER BY t DESC), string_agg(t, '-') FILTER (WHERE id > 1) \
             FROM m GROUP BY g ORDER BY g"
        ),
        [["a", "y,x", "y"], ["b", "z,w", "z-w"], ["c", "v", "v"]]
    );
    assert_eq!(
        cells(
            &mut s,
            "SELECT string_agg(DISTINCT g, ', '), string_agg(DISTINCT g, '|' ORDER BY g DESC), \
             string_agg(t, g ORDER BY id) FROM m"
        ),
        [["a, b, c", "c|b|a", "xaybzbwcv"]]
    );
    assert_eq!(one(&mut s, "SELECT string_agg(t, ',') FROM m WHERE false"), "NULL");
    let e = fails(&mut s, "SELECT string_agg(DISTINCT t, ',' ORDER BY id) FROM m");
    assert_eq!(
        (e.sqlstate(), e.to_string().as_str()),
        ("42P10", "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
    );
    let e = fails(&mut s, "SELECT string_agg(n, ',') FROM m");
    assert_eq!(
        (e.sqlstate(), e.to_string().as_str()),
        ("42883", "function string_agg(bigint, unknown) does not exist")
    );
    let columns = run(&mut s, "SELECT string_agg(t, ',') FROM m").columns().to_vec();
    assert_eq!(columns[0].ty, Some(DataType::Text { max_chars: None }));
}

#[test]
fn listagg_within_group_orders_as_oracle_does() {
    // Oracle's LISTAGG is string_agg with its ORDER BY after WITHIN GROUP and an
    // optional separator: the values of group a are x, y and NULL (skipped).
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        cells(
            &mut s,
            "SELECT g, LISTAGG(t, '; ') WITHIN GROUP (ORDER BY id DESC), LISTAGG(t) WITHIN GROUP (ORDER BY t) \
             FROM m GROUP BY g ORDER BY g"
        ),
        [["a", "y; x", "xy"], ["b", "w; z", "wz"], ["c", "v", "v"]]
    );
}

#[test]
fn filter_applies_to_any_aggregate_and_rejects_other_functions() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*) FILTER (WHERE n > 2), count(DISTINCT g), sum(n) FILTER (WHERE b), \
             avg(x) FILTER (WHERE g = 'a') FROM m"
        ),
        ["3 3 3 1.8750000000000000"]
    );
    let e = fails(&mut s, "SELECT lower(t) FILTER (WHERE true) FROM m");
    assert_eq!(
        (e.sqlstate(), e.to_string().as_str()),
        ("42809", "FILTER specified, but lower is not an aggregate function")
    );
}

#[test]
fn the_new_aggregates_run_as_window_aggregates() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "SELECT id, string_agg(t, ',') OVER (ORDER BY id), bool_or(b) OVER (PARTITION BY g), \
             stddev_samp(n) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), \
             count(*) FILTER (WHERE b) OVER (ORDER BY id) FROM m ORDER BY id"
        ),
        [
            "1 x true NULL 1",
            "2 x,y true 0.70710678118654752440 2",
            "3 x,y true 1.4142135623730950 2",
            "4 x,y,z true 4.2426406871192851 2",
            "5 x,y,z,w true NULL 3",
            "6 x,y,z,w,v NULL NULL 3",
        ]
    );
}

/// Groups found through the hashed index (integer and text keys, NULLs among them) come
/// out in key order as the B-tree's did, each with all its rows; keys of a type hashed
/// inexactly (NUMERIC: 1.0 equals 1.00) go through the B-tree and still meet in one group.
#[test]
fn groups_by_hashed_and_ordered_keys_come_out_in_key_order_with_all_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE h (id INT PRIMARY KEY, k INT, t TEXT, n NUMERIC)");
    let key = |id: i64| (id % 50 != 0).then_some(id % 37);
    let text = |id: i64| format!("w{}", id % 23);
    let values: Vec<String> = (1..=600)
        .map(|id| {
            let k = key(id).map_or("NULL".to_string(), |k| k.to_string());
            let n = ["1.0", "1.00", "2", "2.000"][(id % 4) as usize];
            format!("({id}, {k}, '{}', {n})", text(id))
        })
        .collect();
    run(&mut s, &format!("INSERT INTO h VALUES {}", values.join(", ")));
    run(&mut s, "COMMIT");
    let mut expected: std::collections::BTreeMap<(Option<i64>, String), (i64, i64)> = Default::default();
    for id in 1..=600 {
        let group = expected.entry((key(id), text(id))).or_default();
        group.0 += 1;
        group.1 += id;
    }
    let expected: Vec<String> = expected
        .into_iter()
        .map(|((k, t), (n, sum))| {
            format!("{} {t} {n} {sum}", k.map_or("NULL".to_string(), |k| k.to_string()))
        })
        .collect();
    assert!(expected.len() > 400, "{} groups", expected.len());
    // No ORDER BY: the groups in key order, NULL first.
    assert_eq!(rows(&mut s, "SELECT k, t, count(*), sum(id) FROM h GROUP BY k, t"), expected);
    // (A group shows its first row's key: row 1's 1.00, row 2's 2.)
    assert_eq!(rows(&mut s, "SELECT n, count(*) FROM h GROUP BY n ORDER BY 1"), ["1.00 300", "2 300"]);
}
