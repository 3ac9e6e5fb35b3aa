//! FOREIGN KEY through `Session::execute` (issue 20): declared in CREATE TABLE and ALTER
//! TABLE, checked on every row change with PostgreSQL's SQLSTATEs, the ON DELETE / ON
//! UPDATE actions, DDL at either end (DROP, TRUNCATE, renames), recovery after a reopen,
//! and the concurrency rules: a child insert against a parent being deleted waits, then
//! fails; a parent delete against an uncommitted child waits, then refuses; children of
//! one parent are inserted concurrently without waiting for each other. (A session
//! here never autocommits: a DDL commits what is open, as Oracle's does.)

use std::sync::mpsc;
use std::time::Duration;

use crate::common::{cells, fails, open, run};
use db::{Session, Value};

fn ints(s: &mut Session, sql: &str) -> Vec<Vec<Option<i64>>> {
    run(s, sql)
        .rows()
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| match v {
                    Value::Int(i) => Some(*i),
                    Value::Null => None,
                    other => panic!("{sql}: {other:?}"),
                })
                .collect()
        })
        .collect()
}

fn count(s: &mut Session, sql: &str) -> i64 {
    ints(s, sql)[0][0].unwrap()
}

fn schema(s: &mut Session) {
    run(s, "CREATE TABLE customers (id INT PRIMARY KEY, email TEXT UNIQUE, name TEXT)");
    run(
        s,
        "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL REFERENCES customers ON DELETE CASCADE, \
         note TEXT)",
    );
    run(
        s,
        "CREATE TABLE lines (order_id INT, n INT, product TEXT, PRIMARY KEY (order_id, n), \
         CONSTRAINT lines_order FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE CASCADE ON UPDATE CASCADE)",
    );
    run(
        s,
        "CREATE TABLE notes (id INT PRIMARY KEY, customer_email TEXT REFERENCES customers (email) ON DELETE SET NULL \
         ON UPDATE CASCADE, body TEXT)",
    );
}

#[test]
fn a_row_must_reference_an_existing_parent_and_a_referenced_parent_stays() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    schema(&mut s);
    run(&mut s, "INSERT INTO customers VALUES (1, 'a@x', 'Ann'), (2, 'b@x', 'Bob')");
    run(&mut s, "INSERT INTO orders VALUES (10, 1, 'first'), (11, 1, 'second'), (20, 2, 'bob')");

    let e = fails(&mut s, "INSERT INTO orders VALUES (30, 3, 'nobody')");
    assert_eq!(e.sqlstate(), "23503", "{e}");
    let text = e.to_string();
    assert!(text.contains("orders_customer_id_fkey") && text.contains("Key (customer_id)=(3)"), "{text}");
    assert_eq!(fails(&mut s, "UPDATE orders SET customer_id = 9 WHERE id = 10").sqlstate(), "23503");
    // NULL references nothing (MATCH SIMPLE): allowed where the column allows it.
    run(&mut s, "INSERT INTO notes VALUES (1, NULL, 'loose')");
    assert_eq!(fails(&mut s, "INSERT INTO notes VALUES (2, 'c@x', 'who?')").sqlstate(), "23503");
    run(&mut s, "INSERT INTO notes VALUES (2, 'b@x', 'about bob')");

    // NO ACTION (the default) refuses to take a referenced key away; a key nothing
    // references goes.
    run(&mut s, "CREATE TABLE audit (customer INT REFERENCES customers, at INT)");
    run(&mut s, "INSERT INTO audit VALUES (2, 1)");
    let e = fails(&mut s, "DELETE FROM customers WHERE id = 2");
    assert_eq!(e.sqlstate(), "23503");
    assert!(e.to_string().contains("is still referenced from table \"audit\""), "{e}");
    assert_eq!(fails(&mut s, "UPDATE customers SET id = 5 WHERE id = 2").sqlstate(), "23503");
    // An update that keeps the key is no change to the reference.
    run(&mut s, "UPDATE customers SET name = 'Robert' WHERE id = 2");
    // The failed statement left nothing behind.
    assert_eq!(count(&mut s, "SELECT count(*) FROM orders WHERE customer_id = 2"), 1);

    // Inside a transaction: a parent inserted then referenced, a child deleted and
    // then its parent.
    run(&mut s, "BEGIN");
    run(&mut s, "INSERT INTO customers VALUES (3, 'c@x', 'Cy')");
    run(&mut s, "INSERT INTO orders VALUES (30, 3, 'cy')");
    run(&mut s, "DELETE FROM audit WHERE customer = 2");
    run(&mut s, "DELETE FROM customers WHERE id = 2");
    run(&mut s, "COMMIT");
    assert_eq!(ints(&mut s, "SELECT id FROM orders ORDER BY id"), [[Some(10)], [Some(11)], [Some(30)]]);
    // ON DELETE SET NULL on the note about Bob.
    assert_eq!(ints(&mut s, "SELECT count(*) FROM notes WHERE customer_email IS NULL"), [[Some(2)]]);
}

#[test]
fn cascades_follow_deletes_and_key_updates_through_every_level() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    schema(&mut s);
    run(&mut s, "INSERT INTO customers VALUES (1, 'a@x', 'Ann'), (2, 'b@x', 'Bob')");
    run(&mut s, "INSERT INTO orders VALUES (10, 1, 'first'), (11, 1, 'second'), (20, 2, 'bob')");
    run(&mut s, "INSERT INTO lines VALUES (10, 1, 'tea'), (10, 2, 'milk'), (11, 1, 'jam'), (20, 1, 'ham')");
    run(&mut s, "INSERT INTO notes VALUES (1, 'a@x', 'vip'), (2, 'b@x', 'new')");

    // ON UPDATE CASCADE: the lines follow their order's new id; the note its
    // customer's new email.
    run(&mut s, "UPDATE orders SET id = 12 WHERE id = 11");
    assert_eq!(ints(&mut s, "SELECT order_id, n FROM lines WHERE product = 'jam'"), [[Some(12), Some(1)]]);
    run(&mut s, "UPDATE customers SET email = 'ann@x' WHERE id = 1");
    assert_eq!(count(&mut s, "SELECT count(*) FROM notes WHERE customer_email = 'ann@x'"), 1);

    // ON DELETE CASCADE two levels down; SET NULL beside it.
    run(&mut s, "DELETE FROM customers WHERE id = 1");
    assert_eq!(ints(&mut s, "SELECT id FROM orders"), [[Some(20)]]);
    assert_eq!(ints(&mut s, "SELECT order_id, n FROM lines"), [[Some(20), Some(1)]]);
    assert_eq!(count(&mut s, "SELECT count(*) FROM notes WHERE customer_email IS NULL"), 1);

    // A rollback takes the cascade back with the delete.
    run(&mut s, "COMMIT");
    run(&mut s, "BEGIN");
    run(&mut s, "DELETE FROM customers");
    assert_eq!(count(&mut s, "SELECT count(*) FROM lines"), 0);
    run(&mut s, "ROLLBACK");
    assert_eq!(count(&mut s, "SELECT count(*) FROM lines"), 1);

    // A self-reference: a long chain deleted by its head (no deep recursion), and a row
    // that references itself.
    run(&mut s, "CREATE TABLE staff (id INT PRIMARY KEY, boss INT REFERENCES staff (id) ON DELETE CASCADE)");
    run(&mut s, "INSERT INTO staff VALUES (0, 0)");
    for i in 1..=3000 {
        run(&mut s, &format!("INSERT INTO staff VALUES ({i}, {})", i - 1));
    }
    assert_eq!(fails(&mut s, "INSERT INTO staff VALUES (5000, 4999)").sqlstate(), "23503");
    run(&mut s, "DELETE FROM staff WHERE id = 1");
    assert_eq!(ints(&mut s, "SELECT id FROM staff"), [[Some(0)]]);
    run(&mut s, "DELETE FROM staff WHERE id = 0");
    assert_eq!(count(&mut s, "SELECT count(*) FROM staff"), 0);

    // SET DEFAULT: the default must itself be a parent.
    run(&mut s, "CREATE TABLE kinds (k INT PRIMARY KEY)");
    run(&mut s, "INSERT INTO kinds VALUES (0), (1)");
    run(
        &mut s,
        "CREATE TABLE things (id INT PRIMARY KEY, k INT DEFAULT 0 REFERENCES kinds ON DELETE SET DEFAULT)",
    );
    run(&mut s, "INSERT INTO things VALUES (1, 1), (2, 1)");
    run(&mut s, "DELETE FROM kinds WHERE k = 1");
    assert_eq!(ints(&mut s, "SELECT k FROM things ORDER BY id"), [[Some(0)], [Some(0)]]);
    assert_eq!(fails(&mut s, "DELETE FROM kinds WHERE k = 0").sqlstate(), "23503", "0 is still referenced");
}

#[test]
fn ddl_keeps_references_true_at_both_ends_and_they_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        schema(&mut s);
        run(&mut s, "INSERT INTO customers VALUES (1, 'a@x', 'Ann')");
        run(&mut s, "INSERT INTO orders VALUES (10, 1, 'first')");

        // Declarations that cannot be.
        let bad = [
            ("CREATE TABLE x (a INT REFERENCES nowhere)", "42P01"),
            ("CREATE TABLE x (a INT REFERENCES customers (name))", "42830"),
            ("CREATE TABLE x (a TEXT REFERENCES customers)", "42804"),
            ("CREATE TABLE x (a INT REFERENCES customers (nope))", "42703"),
            ("CREATE TABLE x (a INT, b INT, FOREIGN KEY (a, b) REFERENCES customers)", "42830"),
            ("CREATE TABLE x (a INT REFERENCES customers DEFERRABLE INITIALLY DEFERRED)", "0A000"),
        ];
        for (sql, state) in bad {
            assert_eq!(fails(&mut s, sql).sqlstate(), state, "{sql}");
        }

        // DROP and TRUNCATE of a referenced table: refused alone, allowed with the
        // children or CASCADE.
        assert_eq!(fails(&mut s, "DROP TABLE customers").sqlstate(), "2BP01");
        assert_eq!(fails(&mut s, "TRUNCATE customers").sqlstate(), "0A000");
        run(&mut s, "CREATE TABLE scratch_parent (id INT PRIMARY KEY)");
        run(&mut s, "CREATE TABLE scratch_child (p INT REFERENCES scratch_parent)");
        run(&mut s, "INSERT INTO scratch_parent VALUES (1)");
        run(&mut s, "INSERT INTO scratch_child VALUES (1)");
        run(&mut s, "TRUNCATE scratch_parent, scratch_child");
        run(&mut s, "INSERT INTO scratch_parent VALUES (1)");
        run(&mut s, "INSERT INTO scratch_child VALUES (1)");
        run(&mut s, "TRUNCATE scratch_parent CASCADE");
        assert_eq!(count(&mut s, "SELECT count(*) FROM scratch_child"), 0);
        run(&mut s, "DROP TABLE scratch_parent CASCADE");
        // The child stays, without its constraint.
        run(&mut s, "INSERT INTO scratch_child VALUES (42)");

        // ALTER TABLE: a constraint added is checked against the rows there.
        run(&mut s, "CREATE TABLE payments (id INT PRIMARY KEY, order_id INT, amount INT)");
        run(&mut s, "INSERT INTO payments VALUES (1, 10, 5), (2, 99, 7)");
        let e = fails(
            &mut s,
            "ALTER TABLE payments ADD CONSTRAINT payments_order FOREIGN KEY (order_id) REFERENCES orders",
        );
        assert_eq!(e.sqlstate(), "23503", "{e}");
        run(&mut s, "DELETE FROM payments WHERE id = 2");
        run(
            &mut s,
            "ALTER TABLE payments ADD CONSTRAINT payments_order FOREIGN KEY (order_id) REFERENCES orders",
        );
        assert_eq!(fails(&mut s, "INSERT INTO payments VALUES (3, 98, 1)").sqlstate(), "23503");
        run(&mut s, "ALTER TABLE payments DROP CONSTRAINT payments_order");
        run(&mut s, "INSERT INTO payments VALUES (3, 98, 1)");
        run(&mut s, "DELETE FROM payments WHERE id = 3");
        run(&mut s, "ALTER TABLE payments ADD FOREIGN KEY (order_id) REFERENCES orders");
        run(&mut s, "ALTER TABLE payments ADD COLUMN refund_of INT REFERENCES payments");

        // Renames at the parent end follow into the children; its referenced column
        // cannot be dropped.
        run(&mut s, "ALTER TABLE customers RENAME TO clients");
        run(&mut s, "ALTER TABLE clients RENAME COLUMN id TO client_id");
        assert_eq!(fails(&mut s, "ALTER TABLE clients DROP COLUMN client_id").sqlstate(), "0A000");
        assert_eq!(fails(&mut s, "ALTER TABLE clients DROP COLUMN email").sqlstate(), "2BP01");
        assert_eq!(fails(&mut s, "INSERT INTO orders VALUES (11, 2, 'nobody')").sqlstate(), "23503");
        run(&mut s, "INSERT INTO clients VALUES (2, 'b@x', 'Bob')");
        run(&mut s, "INSERT INTO orders VALUES (11, 2, 'bob')");
        run(&mut s, "COMMIT");
    }
    // Reopened: the constraints (and the CHECK beside them) are there, from the redo.
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(fails(&mut s, "INSERT INTO orders VALUES (12, 7, 'nobody')").sqlstate(), "23503");
    assert_eq!(fails(&mut s, "INSERT INTO payments VALUES (9, 404, 1)").sqlstate(), "23503");
    run(&mut s, "DELETE FROM clients WHERE client_id = 2");
    assert_eq!(ints(&mut s, "SELECT id FROM orders"), [[Some(10)]], "the cascade is still declared");
    run(&mut s, "COMMIT");
    run(&mut s, "CREATE TABLE checked (id INT PRIMARY KEY, n INT CHECK (n > 0))");
    drop(s);
    drop(db);
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(
        fails(&mut s, "INSERT INTO checked VALUES (1, -1)").sqlstate(),
        "23514",
        "the CHECK is recovered"
    );
    // And from a checkpoint image.
    db.checkpoint().unwrap();
    drop(s);
    drop(db);
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(fails(&mut s, "INSERT INTO orders VALUES (12, 7, 'nobody')").sqlstate(), "23503");
    assert_eq!(fails(&mut s, "INSERT INTO checked VALUES (1, -1)").sqlstate(), "23514");
}

/// Runs `sql` on its own session in a thread, reporting its result (Ok(()) or the
/// SQLSTATE) on the channel.
fn spawn(
    db: &std::sync::Arc<db::Database>,
    sql: &'static [&'static str],
) -> mpsc::Receiver<Result<(), String>> {
    let (tx, rx) = mpsc::channel();
    let db = db.clone();
    std::thread::spawn(move || {
        let mut s = db.session();
        let mut result = Ok(());
        for stmt in sql {
            if let Err(e) = s.execute(stmt, &[]) {
                result = Err(e.sqlstate().to_string());
                let _ = s.execute("ROLLBACK", &[]);
                break;
            }
        }
        let _ = tx.send(result);
    });
    rx
}

#[test]
fn concurrent_parents_and_children_wait_for_each_other_and_never_leave_an_orphan() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(open(dir.path()));
    let mut s = db.session();
    run(&mut s, "CREATE TABLE p (id INT PRIMARY KEY, v INT)");
    run(&mut s, "CREATE TABLE c (id INT PRIMARY KEY, p INT REFERENCES p)");
    run(&mut s, "INSERT INTO p VALUES (1, 0), (2, 0)");
    run(&mut s, "COMMIT");

    // A child insert against a parent being deleted waits, and fails once the delete
    // commits.
    run(&mut s, "BEGIN");
    run(&mut s, "DELETE FROM p WHERE id = 1");
    let child = spawn(&db, &["BEGIN", "INSERT INTO c VALUES (1, 1)", "COMMIT"]);
    assert!(child.recv_timeout(Duration::from_millis(200)).is_err(), "the child waits for the delete");
    run(&mut s, "COMMIT");
    assert_eq!(child.recv_timeout(Duration::from_secs(10)).unwrap(), Err("23503".into()));

    // A parent delete against an uncommitted child waits, and refuses once the child
    // commits (or goes on if it rolls back).
    run(&mut s, "BEGIN");
    run(&mut s, "INSERT INTO c VALUES (2, 2)");
    let parent = spawn(&db, &["DELETE FROM p WHERE id = 2"]);
    assert!(parent.recv_timeout(Duration::from_millis(200)).is_err(), "the delete waits for the child");
    run(&mut s, "COMMIT");
    assert_eq!(parent.recv_timeout(Duration::from_secs(10)).unwrap(), Err("23503".into()));
    run(&mut s, "INSERT INTO p VALUES (3, 0)");
    run(&mut s, "COMMIT");
    run(&mut s, "BEGIN");
    run(&mut s, "INSERT INTO c VALUES (3, 3)");
    let parent = spawn(&db, &["DELETE FROM p WHERE id = 3", "COMMIT"]);
    assert!(parent.recv_timeout(Duration::from_millis(200)).is_err());
    run(&mut s, "ROLLBACK");
    assert_eq!(parent.recv_timeout(Duration::from_secs(10)).unwrap(), Ok(()));

    // Children of one parent do not wait for each other, nor for an update of the
    // parent that keeps its key.
    run(&mut s, "BEGIN");
    run(&mut s, "INSERT INTO c VALUES (10, 2)");
    let sibling = spawn(&db, &["BEGIN", "INSERT INTO c VALUES (11, 2)", "COMMIT"]);
    assert_eq!(sibling.recv_timeout(Duration::from_secs(10)).unwrap(), Ok(()));
    let update = spawn(&db, &["UPDATE p SET v = v + 1 WHERE id = 2", "COMMIT"]);
    assert_eq!(update.recv_timeout(Duration::from_secs(10)).unwrap(), Ok(()));
    run(&mut s, "COMMIT");

    // Many sessions inserting children while others delete parents: no orphan, ever.
    run(&mut s, "DELETE FROM c");
    run(&mut s, "DELETE FROM p");
    for i in 0..200 {
        run(&mut s, &format!("INSERT INTO p VALUES ({i}, 0)"));
    }
    run(&mut s, "COMMIT");
    let mut workers = Vec::new();
    for w in 0..4i64 {
        let db = db.clone();
        workers.push(std::thread::spawn(move || {
            let mut s = db.session();
            for i in 0..200i64 {
                let sql = if w % 2 == 0 {
                    format!("INSERT INTO c VALUES ({}, {})", w * 1000 + i, (i * 7 + w) % 200)
                } else {
                    format!("DELETE FROM p WHERE id = {}", (i * 13 + w) % 200)
                };
                match s.execute(&sql, &[]).and_then(|_| s.execute("COMMIT", &[])) {
                    Ok(_) => {}
                    Err(e) if ["23503", "40P01"].contains(&e.sqlstate()) => {
                        s.execute("ROLLBACK", &[]).unwrap();
                    }
                    Err(e) => panic!("{sql}: {e}"),
                }
            }
        }));
    }
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(count(&mut s, "SELECT count(*) FROM c WHERE p NOT IN (SELECT id FROM p)"), 0);
    assert!(count(&mut s, "SELECT count(*) FROM c") > 0);
}

#[test]
fn references_are_checked_at_the_statement_s_end_as_postgresql_checks_them() {
    // Each statement and answer as PostgreSQL 15.20 gives them.
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE tree (id INT PRIMARY KEY, up INT REFERENCES tree)");
    // A child before its parent, in one statement.
    run(&mut s, "INSERT INTO tree VALUES (2, 1), (1, NULL), (3, 2)");
    run(&mut s, "COMMIT");
    // A whole self-referencing table deleted in one statement, parents first or not.
    run(&mut s, "DELETE FROM tree");
    run(&mut s, "COMMIT");
    assert_eq!(cells(&mut s, "SELECT count(*) FROM tree"), [["0"]]);
    // A child whose parent never comes: the statement fails whole.
    let orphan = fails(&mut s, "INSERT INTO tree VALUES (1, NULL), (2, 9)");
    assert_eq!(orphan.sqlstate(), "23503", "{orphan}");
    run(&mut s, "COMMIT");
    assert_eq!(cells(&mut s, "SELECT count(*) FROM tree"), [["0"]]);

    // NO ACTION: a key moved away and given back by the same statement is no violation;
    // RESTRICT refuses it.
    run(&mut s, "CREATE TABLE p (id INT PRIMARY KEY)");
    run(&mut s, "CREATE TABLE c (id INT PRIMARY KEY, p INT REFERENCES p)");
    run(&mut s, "CREATE TABLE pr (id INT PRIMARY KEY)");
    run(&mut s, "CREATE TABLE cr (id INT PRIMARY KEY, p INT REFERENCES pr ON UPDATE RESTRICT)");
    run(&mut s, "INSERT INTO p VALUES (1), (2), (3)");
    run(&mut s, "INSERT INTO c VALUES (10, 2)");
    run(&mut s, "INSERT INTO pr VALUES (1), (2), (3)");
    run(&mut s, "INSERT INTO cr VALUES (10, 2)");
    run(&mut s, "COMMIT");
    run(&mut s, "UPDATE p SET id = id - 1");
    assert_eq!(cells(&mut s, "SELECT id FROM p ORDER BY id"), [["0"], ["1"], ["2"]]);
    let restrict = fails(&mut s, "UPDATE pr SET id = id - 1");
    assert_eq!(restrict.sqlstate(), "23503");
    assert!(restrict.to_string().contains("is still referenced from table \"cr\""), "{restrict}");
    // A parent whose child stays, RESTRICT or not.
    run(&mut s, "CREATE TABLE rtree (id INT PRIMARY KEY, up INT REFERENCES rtree ON DELETE RESTRICT)");
    run(&mut s, "INSERT INTO rtree VALUES (1, NULL), (2, 1)");
    assert_eq!(fails(&mut s, "DELETE FROM rtree WHERE id = 1").sqlstate(), "23503");
    run(&mut s, "DELETE FROM rtree");
    run(&mut s, "COMMIT");
    assert_eq!(cells(&mut s, "SELECT count(*) FROM rtree"), [["0"]]);
}
