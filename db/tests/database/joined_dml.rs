//! UPDATE ... FROM and DELETE ... USING through `Session::execute`: the target joined
//! with other relations, each target row changed once, RETURNING of the joined row, the
//! errors PostgreSQL gives (expected results are PostgreSQL 15.20's for the same
//! statements), and two sessions incrementing through a join without losing an update.

use crate::common::{fails, open, pipe_rows as rows, run};
use db::Session;

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE acc (id INT PRIMARY KEY, owner TEXT, balance NUMERIC(10,2))");
    run(s, "CREATE TABLE pay (id INT PRIMARY KEY, acc_id INT, amount NUMERIC(10,2), ok BOOLEAN)");
    run(s, "INSERT INTO acc VALUES (1, 'ann', 100), (2, 'bob', 50), (3, 'cy', 0)");
    run(s, "INSERT INTO pay VALUES (1, 1, 10, true), (2, 1, 5, true), (3, 2, 7, false), (4, 3, 1, true)");
    run(s, "COMMIT");
}

fn affected(s: &mut Session, sql: &str) -> u64 {
    match run(s, sql) {
        db::sql::QueryResult::Command { rows_affected, .. } => rows_affected,
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn update_from_and_delete_using_change_the_rows_the_join_reaches() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    assert_eq!(
        rows(
            &mut s,
            "UPDATE acc a SET balance = a.balance + p.amount FROM pay p \
             WHERE p.acc_id = a.id AND p.ok AND p.id IN (1, 4) RETURNING a.id, a.balance, p.id AS pay_id"
        ),
        ["1|110.00|1", "3|1.00|4"]
    );
    assert_eq!(rows(&mut s, "SELECT * FROM acc ORDER BY id"), ["1|ann|110.00", "2|bob|50.00", "3|cy|1.00"]);
    assert_eq!(
        affected(
            &mut s,
            "UPDATE acc SET owner = upper(owner) FROM pay WHERE pay.acc_id = acc.id AND NOT pay.ok"
        ),
        1
    );
    assert_eq!(
        affected(&mut s, "UPDATE acc SET balance = 0 FROM pay p WHERE p.acc_id = acc.id AND p.amount > 100"),
        0
    );
    // Account 1 is reached by two payments: changed once.
    assert_eq!(
        affected(
            &mut s,
            "UPDATE acc SET balance = balance + 1 FROM pay WHERE pay.acc_id = acc.id AND acc.id = 1"
        ),
        1
    );
    assert_eq!(rows(&mut s, "SELECT balance FROM acc WHERE id = 1"), ["111.00"]);
    assert_eq!(
        rows(&mut s, "DELETE FROM pay USING acc WHERE acc.id = pay.acc_id AND acc.owner = 'BOB' RETURNING pay.*, acc.owner"),
        ["3|2|7.00|false|BOB"]
    );
    assert_eq!(rows(&mut s, "SELECT id FROM pay ORDER BY id"), ["1", "2", "4"]);
    // Several relations in USING, the target aliased.
    assert_eq!(
        rows(&mut s, "DELETE FROM pay p USING acc a, pay q WHERE a.id = p.acc_id AND q.id = p.id AND a.balance > 105 RETURNING p.id"),
        ["1", "2"]
    );
    assert_eq!(rows(&mut s, "SELECT count(*) FROM pay"), ["1"]);
    // Through a prepared statement with a bind value, and undone by ROLLBACK.
    let update =
        "UPDATE acc SET balance = balance * 2 FROM pay WHERE pay.acc_id = acc.id AND pay.amount >= $1";
    let prepared = s.prepare(update).unwrap();
    let result = s.execute_prepared(&prepared, &[db::Value::Int(1)]).unwrap();
    assert_eq!(result.rows_affected(), 1);
    assert_eq!(rows(&mut s, "SELECT balance FROM acc WHERE id = 3"), ["2.00"]);
    run(&mut s, "ROLLBACK");
    assert_eq!(rows(&mut s, "SELECT count(*) FROM pay"), ["4"]);
    assert_eq!(rows(&mut s, "SELECT balance FROM acc ORDER BY id"), ["100.00", "50.00", "0.00"]);

    let plan =
        rows(&mut s, "EXPLAIN UPDATE acc SET balance = 0 FROM pay WHERE pay.acc_id = acc.id").join("\n");
    assert!(plan.starts_with("Update on acc") && plan.contains("Hash Join"), "{plan}");
    let plan = rows(&mut s, "EXPLAIN DELETE FROM pay USING acc WHERE acc.id = pay.acc_id").join("\n");
    assert!(plan.starts_with("Delete on pay") && plan.contains("Join"), "{plan}");

    assert_eq!(fails(&mut s, "UPDATE acc SET x = 1 FROM pay").sqlstate(), "42703");
    assert_eq!(fails(&mut s, "UPDATE acc SET balance = 1 FROM nope").sqlstate(), "42P01");
    assert_eq!(fails(&mut s, "UPDATE acc SET balance = 1 FROM pay WHERE id = 1").sqlstate(), "42702");
}

/// Two sessions adding to the same accounts through a join: each locks the account row
/// and reads it again before changing it, so no addition is lost.
#[test]
fn concurrent_updates_through_a_join_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(open(dir.path()));
    let mut s = db.session();
    setup(&mut s);
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = db.session();
                for _ in 0..50 {
                    run(&mut s, "UPDATE acc SET balance = balance + pay.amount FROM pay WHERE pay.acc_id = acc.id AND pay.id IN (1, 3)");
                    run(&mut s, "COMMIT");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(rows(&mut s, "SELECT balance FROM acc ORDER BY id"), ["1100.00", "750.00", "0.00"]);
}
