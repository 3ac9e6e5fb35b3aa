//! MERGE through `Session::execute` (issue 20): PostgreSQL 15's form with every action
//! and its errors (expected results are PostgreSQL 15.20's for the same statements),
//! Oracle's UPDATE ... WHERE / DELETE WHERE, a rollback, and two sessions merging into
//! one table.

use crate::common::{cells, fails, open, run};
use db::Session;

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE stock (item TEXT PRIMARY KEY, qty INT NOT NULL, note TEXT DEFAULT 'new')");
    run(s, "INSERT INTO stock VALUES ('apple', 10, 'x'), ('pear', 5, 'x'), ('plum', 0, 'x')");
    run(s, "CREATE TABLE delivery (item TEXT, qty INT)");
    run(s, "INSERT INTO delivery VALUES ('apple', 3), ('pear', -5), ('kiwi', 7), ('fig', 0)");
    run(s, "COMMIT");
}

fn stock(s: &mut Session) -> Vec<String> {
    cells(s, "SELECT item, qty, note FROM stock ORDER BY item").into_iter().map(|r| r.join("|")).collect()
}

fn merged(s: &mut Session, sql: &str) -> u64 {
    match run(s, sql) {
        db::sql::QueryResult::Command { tag, rows_affected } => {
            assert_eq!(tag, "MERGE");
            rows_affected
        }
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn merge_updates_deletes_and_inserts_by_the_first_clause_that_holds() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let n = merged(
        &mut s,
        "MERGE INTO stock s USING delivery d ON s.item = d.item \
         WHEN MATCHED AND s.qty + d.qty <= 0 THEN DELETE \
         WHEN MATCHED THEN UPDATE SET qty = s.qty + d.qty \
         WHEN NOT MATCHED AND d.qty > 0 THEN INSERT (item, qty) VALUES (d.item, d.qty) \
         WHEN NOT MATCHED THEN DO NOTHING",
    );
    assert_eq!(n, 3);
    assert_eq!(stock(&mut s), ["apple|13|x", "kiwi|7|new", "plum|0|x"]);
    // A subquery as the source, INSERT without a column list, and a target without an alias.
    let n = merged(
        &mut s,
        "MERGE INTO stock USING (SELECT 'apple' AS item, 100 AS qty UNION ALL SELECT 'plum', 1) AS src \
         ON stock.item = src.item \
         WHEN MATCHED THEN UPDATE SET qty = src.qty, note = 'upd' \
         WHEN NOT MATCHED THEN INSERT VALUES (src.item, src.qty)",
    );
    assert_eq!(n, 2);
    assert_eq!(stock(&mut s), ["apple|100|upd", "kiwi|7|new", "plum|1|upd"]);
    // In the transaction: a rollback undoes it all.
    run(&mut s, "COMMIT");
    merged(&mut s, "MERGE INTO stock s USING delivery d ON s.item = d.item WHEN MATCHED THEN DELETE");
    assert_eq!(stock(&mut s), ["plum|1|upd"]);
    run(&mut s, "ROLLBACK");
    assert_eq!(stock(&mut s), ["apple|100|upd", "kiwi|7|new", "plum|1|upd"]);
}

#[test]
fn merge_fails_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    run(&mut s, "INSERT INTO delivery VALUES ('apple', 1)");
    run(&mut s, "COMMIT");
    let twice = fails(
        &mut s,
        "MERGE INTO stock s USING delivery d ON s.item = d.item WHEN MATCHED THEN UPDATE SET qty = 0",
    );
    assert_eq!(
        (twice.sqlstate(), twice.to_string().as_str()),
        ("21000", "MERGE command cannot affect row a second time")
    );
    assert_eq!(
        fails(
            &mut s,
            "MERGE INTO stock s USING delivery d ON s.item = d.item WHEN MATCHED THEN INSERT VALUES ('a', 1)"
        )
        .sqlstate(),
        "42601"
    );
    let duplicate = fails(
        &mut s,
        "MERGE INTO stock s USING delivery d ON s.item = d.item WHEN NOT MATCHED THEN INSERT VALUES ('apple', 1)",
    );
    assert_eq!(duplicate.sqlstate(), "23505", "{duplicate}");
    // The failed statements changed nothing.
    run(&mut s, "COMMIT");
    assert_eq!(stock(&mut s), ["apple|10|x", "pear|5|x", "plum|0|x"]);
    assert_eq!(
        fails(&mut s, "MERGE INTO nope USING delivery d ON true WHEN MATCHED THEN DELETE").sqlstate(),
        "42P01"
    );
}

#[test]
fn oracle_s_update_where_and_delete_where_act_on_the_rows_they_select() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // apple: 10 + 3 = 13, kept; pear: -5 is not > 0, left alone; kiwi, fig: inserted.
    run(
        &mut s,
        "MERGE INTO stock s USING delivery d ON (s.item = d.item) \
         WHEN MATCHED THEN UPDATE SET s.qty = s.qty + d.qty WHERE d.qty > 0 DELETE WHERE s.qty > 12 \
         WHEN NOT MATCHED THEN INSERT (item, qty) VALUES (d.item, d.qty)",
    );
    // apple was updated to 13, then deleted by DELETE WHERE (13 > 12).
    assert_eq!(stock(&mut s), ["fig|0|new", "kiwi|7|new", "pear|5|x", "plum|0|x"]);
}

#[test]
fn two_sessions_merging_into_one_table_never_lose_or_repeat_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(open(dir.path()));
    let mut s = db.session();
    run(&mut s, "CREATE TABLE counts (k INT PRIMARY KEY, n INT NOT NULL)");
    run(&mut s, "COMMIT");
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = db.session();
                for round in 0..50 {
                    let sql = format!(
                        "MERGE INTO counts c USING (SELECT {k} AS k) src ON c.k = src.k \
                         WHEN MATCHED THEN UPDATE SET n = c.n + 1 WHEN NOT MATCHED THEN INSERT VALUES (src.k, 1)",
                        k = round % 5
                    );
                    // Two inserters of one new key: the second gets 23505, as in PostgreSQL;
                    // it tries again and finds the row.
                    loop {
                        match s.execute(&sql, &[]) {
                            Ok(_) => {
                                s.execute("COMMIT", &[]).unwrap();
                                break;
                            }
                            Err(e) if e.sqlstate() == "23505" => {
                                s.execute("ROLLBACK", &[]).unwrap();
                            }
                            Err(e) => panic!("{sql}: {e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(cells(&mut s, "SELECT count(*), sum(n) FROM counts"), [["5", "100"]]);
}
