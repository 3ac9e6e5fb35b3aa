//! Relational SQL through `Session::execute` (issue 20): tables without a primary key,
//! subqueries, joins and set operations, each as a user writes them, with its errors and
//! its survival of a reopen where it stores anything.

use crate::common::open;
use db::sql::QueryResult;
use db::{Database, DbError, Session, Value};

fn run(s: &mut Session, sql: &str) -> QueryResult {
    s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    run(s, sql).rows().to_vec()
}

fn fails(s: &mut Session, sql: &str) -> DbError {
    match s.execute(sql, &[]) {
        Ok(r) => panic!("{sql} succeeded: {r:?}"),
        Err(e) => e,
    }
}

fn i(v: i64) -> Value {
    Value::Int(v)
}

fn t(v: &str) -> Value {
    Value::Text(v.into())
}

const NULL: Value = Value::Null;

#[test]
fn a_table_without_a_primary_key_keeps_duplicates_under_a_hidden_row_id_across_reopens() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE log (a INTEGER, b TEXT)");
        run(&mut s, "INSERT INTO log VALUES (1, 'x'), (1, 'x'), (NULL, NULL)");
        run(&mut s, "INSERT INTO log (b) VALUES ('y')");
        // The row id is not a column a user sees, but it can be read by name.
        let all = run(&mut s, "SELECT * FROM log ORDER BY b, a");
        assert_eq!(all.columns().iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(
            all.rows(),
            [vec![i(1), t("x")], vec![i(1), t("x")], vec![NULL, t("y")], vec![NULL, NULL]]
        );
        assert_eq!(rows(&mut s, "SELECT rowid FROM log ORDER BY rowid"), [[i(1)], [i(2)], [i(3)], [i(4)]]);
        assert!(matches!(fails(&mut s, "INSERT INTO log VALUES (1, 'x', 9)"), DbError::Syntax { .. }));
        run(&mut s, "DELETE FROM log WHERE rowid = 2");
        run(&mut s, "UPDATE log SET a = 7 WHERE b = 'y'");
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        run(&mut s, "INSERT INTO log VALUES (5, 'after the image')");
        run(&mut s, "COMMIT");
        // Uncommitted at the close: rolled back.
        run(&mut s, "INSERT INTO log VALUES (6, 'rolled back')");
    }
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(
        rows(&mut s, "SELECT rowid, a, b FROM log ORDER BY rowid"),
        [
            vec![i(1), i(1), t("x")],
            vec![i(3), NULL, NULL],
            vec![i(4), i(7), t("y")],
            vec![i(5), i(5), t("after the image")]
        ]
    );
    // New rows get row ids above every committed one.
    run(&mut s, "INSERT INTO log VALUES (8, 'new')");
    assert_eq!(rows(&mut s, "SELECT rowid FROM log WHERE a = 8"), [[i(6)]]);
    // A table may not name a column as its hidden row id.
    assert_eq!(fails(&mut s, "CREATE TABLE bad (rowid INTEGER)").sqlstate(), "0A000");
}

/// Two small tables: departments and employees (one without a department, one
/// department without employees).
fn company(db: &Database) -> Session {
    let mut s = db.session();
    run(&mut s, "CREATE TABLE dept (id INT PRIMARY KEY, name TEXT)");
    run(&mut s, "CREATE TABLE emp (id INT PRIMARY KEY, name TEXT, dept_id INT, salary INT)");
    run(&mut s, "INSERT INTO dept VALUES (1, 'eng'), (2, 'ops'), (3, 'empty')");
    run(
        &mut s,
        "INSERT INTO emp VALUES (10, 'ann', 1, 100), (11, 'bob', 1, 80), (12, 'cid', 2, 90), (13, 'dan', NULL, 70)",
    );
    run(&mut s, "COMMIT");
    s
}

#[test]
fn joins_inner_outer_cross_using_natural_and_self() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = company(&db);
    let inner = [vec![t("ann"), t("eng")], vec![t("bob"), t("eng")], vec![t("cid"), t("ops")]];
    assert_eq!(
        rows(&mut s, "SELECT e.name, d.name FROM emp e JOIN dept d ON e.dept_id = d.id ORDER BY 1"),
        inner
    );
    assert_eq!(
        rows(&mut s, "SELECT e.name, d.name FROM emp e, dept d WHERE d.id = e.dept_id ORDER BY e.name"),
        inner
    );
    assert_eq!(
        rows(&mut s, "SELECT e.name, d.name FROM emp e LEFT JOIN dept d ON e.dept_id = d.id ORDER BY 1"),
        [vec![t("ann"), t("eng")], vec![t("bob"), t("eng")], vec![t("cid"), t("ops")], vec![t("dan"), NULL]]
    );
    assert_eq!(
        rows(&mut s, "SELECT d.name, count(e.id) FROM dept d LEFT JOIN emp e ON e.dept_id = d.id GROUP BY d.name ORDER BY 1"),
        [vec![t("empty"), i(0)], vec![t("eng"), i(2)], vec![t("ops"), i(1)]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT e.name, d.name FROM emp e RIGHT JOIN dept d ON e.dept_id = d.id WHERE e.id IS NULL"
        ),
        [vec![NULL, t("empty")]]
    );
    assert_eq!(
        rows(&mut s, "SELECT e.name, d.name FROM emp e FULL JOIN dept d ON e.dept_id = d.id WHERE e.id IS NULL OR d.id IS NULL ORDER BY 1"),
        [vec![t("dan"), NULL], vec![NULL, t("empty")]]
    );
    // An ON condition on the inner side of a LEFT JOIN keeps the outer rows.
    assert_eq!(
        rows(&mut s, "SELECT e.name, d.name FROM emp e LEFT JOIN dept d ON e.dept_id = d.id AND d.name = 'ops' ORDER BY 1"),
        [vec![t("ann"), NULL], vec![t("bob"), NULL], vec![t("cid"), t("ops")], vec![t("dan"), NULL]]
    );
    assert_eq!(rows(&mut s, "SELECT count(*) FROM emp CROSS JOIN dept"), [[i(12)]]);
    run(&mut s, "CREATE TABLE dept2 (dept_id INT PRIMARY KEY, city TEXT)");
    run(&mut s, "INSERT INTO dept2 VALUES (1, 'oslo'), (2, 'rome')");
    run(&mut s, "COMMIT");
    let using = run(&mut s, "SELECT * FROM emp JOIN dept2 USING (dept_id) ORDER BY id");
    assert_eq!(
        using.columns().iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["dept_id", "id", "name", "salary", "city"],
        "a USING column appears once, first"
    );
    assert_eq!(using.rows().len(), 3);
    assert_eq!(
        rows(&mut s, "SELECT dept_id, city FROM emp NATURAL JOIN dept2 WHERE name = 'cid'"),
        [vec![i(2), t("rome")]]
    );
    // A self join: who earns more than a colleague of the same department.
    assert_eq!(
        rows(
            &mut s,
            "SELECT a.name, b.name FROM emp a JOIN emp b ON a.dept_id = b.dept_id AND a.salary > b.salary"
        ),
        [vec![t("ann"), t("bob")]]
    );
    // Errors: an ambiguous column, a repeated alias, an unknown qualifier.
    assert_eq!(fails(&mut s, "SELECT id FROM emp, dept").sqlstate(), "42702");
    assert_eq!(fails(&mut s, "SELECT 1 FROM emp e, dept e").sqlstate(), "42712");
    assert_eq!(fails(&mut s, "SELECT x.id FROM emp, dept").sqlstate(), "42P01");
    // EXPLAIN shows the joins that run: an equality join is a hash join.
    let plan: Vec<String> =
        rows(&mut s, "EXPLAIN SELECT e.name FROM emp e JOIN dept d ON e.dept_id = d.id WHERE d.id = 1")
            .into_iter()
            .map(|r| r[0].to_string())
            .collect();
    assert!(plan.iter().any(|l| l.contains("Hash Join")), "{plan:#?}");
    assert!(
        plan.iter().any(|l| l.contains("Index Scan using dept_pkey on dept d")),
        "the key predicate is pushed down: {plan:#?}"
    );
}

#[test]
fn eight_tables_joined_by_equalities_run_as_a_chain_not_a_cross_product() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    for n in 1..=8 {
        run(&mut s, &format!("CREATE TABLE t{n} (a{n} INT, b{n} INT)"));
        let values: Vec<String> = (1..=30).map(|v| format!("({v}, {})", 31 - v)).collect();
        run(&mut s, &format!("INSERT INTO t{n} VALUES {}", values.join(", ")));
    }
    run(&mut s, "COMMIT");
    let before = db::sql::rows_visited();
    let started = std::time::Instant::now();
    let sql = "SELECT count(*) FROM t1, t2, t3, t4, t5, t6, t7, t8 \
               WHERE a1 = b2 AND a2 = b3 AND a3 = b4 AND a4 = b5 AND a5 = b6 AND a6 = b7 AND a7 = b8 AND a8 < 4";
    assert_eq!(rows(&mut s, sql), [[i(3)]]);
    // 30^8 rows as a cross product; each table read once here.
    assert!(db::sql::rows_visited() - before <= 8 * 30, "{} rows read", db::sql::rows_visited() - before);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn subqueries_scalar_exists_in_any_all_correlated_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = company(&db);
    assert_eq!(
        rows(&mut s, "SELECT name FROM emp WHERE salary > (SELECT avg(salary) FROM emp) ORDER BY 1"),
        [[t("ann"),], [t("cid")]]
    );
    // Correlated: the top earner of each department.
    assert_eq!(
        rows(&mut s, "SELECT name FROM emp e WHERE salary = (SELECT max(salary) FROM emp x WHERE x.dept_id = e.dept_id) ORDER BY 1"),
        [[t("ann")], [t("cid")]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT name, (SELECT count(*) FROM emp e WHERE e.dept_id = d.id) FROM dept d ORDER BY 1"
        ),
        [vec![t("empty"), i(0)], vec![t("eng"), i(2)], vec![t("ops"), i(1)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT name FROM dept d WHERE NOT EXISTS (SELECT 1 FROM emp WHERE dept_id = d.id)"),
        [[t("empty")]]
    );
    assert_eq!(
        rows(&mut s, "SELECT name FROM dept WHERE id IN (SELECT dept_id FROM emp) ORDER BY 1"),
        [[t("eng")], [t("ops")]]
    );
    // NOT IN over a list holding NULL is never true (PostgreSQL's semantics).
    assert!(rows(&mut s, "SELECT name FROM dept WHERE id NOT IN (SELECT dept_id FROM emp)").is_empty());
    assert_eq!(
        rows(
            &mut s,
            "SELECT name FROM dept WHERE id NOT IN (SELECT dept_id FROM emp WHERE dept_id IS NOT NULL)"
        ),
        [[t("empty")]]
    );
    // Over no rows: IN is false and NOT IN true, even for NULL.
    assert_eq!(rows(&mut s, "SELECT NULL IN (SELECT id FROM dept WHERE id > 9), NULL NOT IN (SELECT id FROM dept WHERE id > 9)"), [[Value::Bool(false), Value::Bool(true)]]);
    assert_eq!(
        rows(&mut s, "SELECT name FROM emp WHERE salary >= ALL (SELECT salary FROM emp)"),
        [[t("ann")]]
    );
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM emp WHERE salary < ANY (SELECT salary FROM emp)"),
        [[i(3)]]
    );
    assert_eq!(rows(&mut s, "SELECT (SELECT name FROM dept WHERE id = 9)"), [[NULL]]);
    assert_eq!(fails(&mut s, "SELECT (SELECT id FROM dept)").sqlstate(), "21000");
    assert_eq!(fails(&mut s, "SELECT 1 WHERE 1 IN (SELECT id, name FROM dept)").sqlstate(), "42601");
    // A subquery in UPDATE and DELETE.
    run(
        &mut s,
        "UPDATE emp SET salary = salary + 1 WHERE dept_id IN (SELECT id FROM dept WHERE name = 'ops')",
    );
    assert_eq!(rows(&mut s, "SELECT salary FROM emp WHERE name = 'cid'"), [[i(91)]]);
    run(&mut s, "DELETE FROM emp WHERE NOT EXISTS (SELECT 1 FROM dept WHERE dept.id = emp.dept_id)");
    assert_eq!(rows(&mut s, "SELECT count(*) FROM emp"), [[i(3)]]);
}

#[test]
fn union_intersect_except_with_and_without_all() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = company(&db);
    let ids = |s: &mut Session, sql: &str| -> Vec<i64> {
        rows(s, sql)
            .into_iter()
            .map(|r| match r[0] {
                Value::Int(v) => v,
                ref o => panic!("{o:?}"),
            })
            .collect()
    };
    assert_eq!(
        ids(&mut s, "SELECT dept_id FROM emp WHERE dept_id IS NOT NULL UNION SELECT id FROM dept ORDER BY 1"),
        [1, 2, 3]
    );
    assert_eq!(
        ids(
            &mut s,
            "SELECT dept_id FROM emp WHERE dept_id IS NOT NULL UNION ALL SELECT id FROM dept ORDER BY 1"
        ),
        [1, 1, 1, 2, 2, 3]
    );
    assert_eq!(ids(&mut s, "SELECT id FROM dept INTERSECT SELECT dept_id FROM emp ORDER BY 1"), [1, 2]);
    assert_eq!(
        ids(&mut s, "SELECT dept_id FROM emp INTERSECT ALL SELECT 1 UNION ALL SELECT 1 ORDER BY 1"),
        [1, 1]
    );
    assert_eq!(ids(&mut s, "SELECT id FROM dept EXCEPT SELECT dept_id FROM emp"), [3]);
    assert_eq!(ids(&mut s, "SELECT dept_id FROM emp WHERE dept_id = 1 EXCEPT ALL SELECT 1"), [1]);
    assert_eq!(ids(&mut s, "SELECT 3 UNION SELECT 1 UNION SELECT 2 ORDER BY 1 DESC LIMIT 2"), [3, 2]);
    assert_eq!(
        rows(&mut s, "VALUES (2, 'b'), (1, 'a') ORDER BY 1"),
        [vec![i(1), t("a")], vec![i(2), t("b")]]
    );
    assert_eq!(fails(&mut s, "SELECT 1 UNION SELECT 1, 2").sqlstate(), "42601");
    // A set operation as a subquery.
    assert_eq!(rows(&mut s, "SELECT count(*) FROM dept WHERE id IN (SELECT 1 UNION SELECT 3)"), [[i(2)]]);
}

#[test]
fn subqueries_in_from_and_with_queries() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = company(&db);
    assert_eq!(
        rows(&mut s, "SELECT d, n FROM (SELECT dept_id, count(*) FROM emp GROUP BY dept_id) AS c (d, n) WHERE d IS NOT NULL ORDER BY d"),
        [vec![i(1), i(2)], vec![i(2), i(1)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT dept.name, c.total FROM dept JOIN (SELECT dept_id, sum(salary) AS total FROM emp GROUP BY dept_id) c ON c.dept_id = dept.id ORDER BY 1"),
        [vec![t("eng"), i(180)], vec![t("ops"), i(90)]]
    );
    assert_eq!(
        rows(&mut s, "WITH rich AS (SELECT * FROM emp WHERE salary >= 90), names (n) AS (SELECT name FROM rich) SELECT n FROM names ORDER BY n"),
        [[t("ann")], [t("cid")]]
    );
    // A WITH query referenced twice, and inside a subquery.
    assert_eq!(
        rows(&mut s, "WITH d AS (SELECT id FROM dept WHERE id < 3) SELECT count(*) FROM d a, d b WHERE a.id <= b.id AND EXISTS (SELECT 1 FROM d WHERE d.id = a.id)"),
        [[i(3)]]
    );
    // A correlated subquery reading an outer row from inside its own FROM subquery.
    assert_eq!(
        rows(&mut s, "SELECT name, (SELECT count(*) FROM (SELECT * FROM emp WHERE emp.dept_id = d.id) x) FROM dept d ORDER BY 1"),
        [vec![t("empty"), i(0)], vec![t("eng"), i(2)], vec![t("ops"), i(1)]]
    );
    // The WITH query's name leaves scope with its query.
    assert_eq!(fails(&mut s, "SELECT (WITH x AS (SELECT 1) SELECT 2), * FROM x").sqlstate(), "42P01");
    assert_eq!(fails(&mut s, "SELECT * FROM (SELECT 1)").sqlstate(), "42601");
    // WITH RECURSIVE over a query that does not read itself: a plain WITH query.
    assert_eq!(rows(&mut s, "WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r"), [vec![i(1)]]);
}

fn plan_of(s: &mut Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN {sql}")).into_iter().map(|r| r[0].to_string()).collect::<Vec<_>>().join("\n")
}

#[test]
fn secondary_indexes_are_built_used_maintained_and_recovered() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE item (id INT PRIMARY KEY, kind TEXT, price INT)");
        let values: Vec<String> = (1..=2000).map(|k| format!("({k}, 'k{}', {})", k % 50, k % 97)).collect();
        run(&mut s, &format!("INSERT INTO item VALUES {}", values.join(", ")));
        run(&mut s, "COMMIT");
        // Built on a populated table.
        run(&mut s, "CREATE INDEX item_kind ON item (kind, price)");
        run(&mut s, "CREATE INDEX IF NOT EXISTS item_kind ON item (price)");
        assert_eq!(s.take_notices().len(), 1, "IF NOT EXISTS: a notice, no error");
        assert_eq!(fails(&mut s, "CREATE INDEX item_kind ON item (price)").sqlstate(), "42P07");
        assert!(plan_of(&mut s, "SELECT id FROM item WHERE kind = 'k7'")
            .contains("Index Range Scan using item_kind on item"));
        assert!(plan_of(&mut s, "SELECT id FROM item WHERE kind = 'k7' AND price = 7")
            .contains("Index Scan using item_kind on item"));
        let before = db::sql::rows_visited();
        assert_eq!(rows(&mut s, "SELECT count(*) FROM item WHERE kind = 'k7'"), [[i(40)]]);
        assert_eq!(db::sql::rows_visited() - before, 40, "only the index's rows are read");
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM item WHERE kind = 'k7' AND price BETWEEN 10 AND 40"),
            rows(&mut s, "SELECT count(*) FROM item WHERE kind || '' = 'k7' AND price BETWEEN 10 AND 40")
        );
        // Maintained with the rows, in the transaction, visible to it before its commit.
        run(&mut s, "INSERT INTO item VALUES (5000, 'new', 1)");
        run(&mut s, "UPDATE item SET kind = 'new' WHERE id = 1");
        run(&mut s, "DELETE FROM item WHERE id = 7");
        assert_eq!(rows(&mut s, "SELECT id FROM item WHERE kind = 'new' ORDER BY id"), [[i(1)], [i(5000)]]);
        assert_eq!(rows(&mut s, "SELECT count(*) FROM item WHERE kind = 'k7'"), [[i(39)]]);
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        run(&mut s, "CREATE INDEX item_price ON item (price)");
        run(&mut s, "UPDATE item SET price = 1000 WHERE id = 2");
        run(&mut s, "COMMIT");
    }
    // Recovered: the first index from the image, the second from the redo after it.
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(rows(&mut s, "SELECT id FROM item WHERE kind = 'new' ORDER BY id"), [[i(1)], [i(5000)]]);
    assert!(plan_of(&mut s, "SELECT id FROM item WHERE price = 1000").contains("item_price"));
    assert_eq!(rows(&mut s, "SELECT id FROM item WHERE price = 1000"), [[i(2)]]);
    // Each index equals a rebuild from the table: every row found through it.
    for k in 0..50 {
        let through_index = rows(&mut s, &format!("SELECT id FROM item WHERE kind = 'k{k}' ORDER BY id"));
        let scanned = rows(&mut s, &format!("SELECT id FROM item WHERE kind || '' = 'k{k}' ORDER BY id"));
        assert_eq!(through_index, scanned, "k{k}");
    }
    run(&mut s, "DROP INDEX item_price");
    assert!(!plan_of(&mut s, "SELECT id FROM item WHERE price = 1000").contains("item_price"));
    assert_eq!(fails(&mut s, "DROP INDEX item_price").sqlstate(), "42704");
    run(&mut s, "DROP INDEX IF EXISTS item_price");
}

#[test]
fn unique_indexes_refuse_a_second_row_with_the_same_values_also_across_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(open(dir.path()));
    let mut s = db.session();
    run(&mut s, "CREATE TABLE person (id INT PRIMARY KEY, email TEXT, nick TEXT)");
    run(
        &mut s,
        "INSERT INTO person VALUES (1, 'a@x', 'a'), (2, 'b@x', 'a'), (3, NULL, NULL), (4, NULL, NULL)",
    );
    run(&mut s, "COMMIT");
    assert_eq!(fails(&mut s, "CREATE UNIQUE INDEX person_nick ON person (nick)").sqlstate(), "23505");
    run(&mut s, "CREATE UNIQUE INDEX person_email ON person (email)");
    let e = fails(&mut s, "INSERT INTO person VALUES (5, 'a@x', 'e')");
    assert_eq!(e.sqlstate(), "23505");
    assert!(e.to_string().contains("person_email"), "{e}");
    assert_eq!(fails(&mut s, "UPDATE person SET email = 'b@x' WHERE id = 1").sqlstate(), "23505");
    run(&mut s, "INSERT INTO person VALUES (5, NULL, 'e')"); // NULLs are distinct
    run(&mut s, "UPDATE person SET email = 'a@x', nick = 'z' WHERE id = 1"); // its own value
                                                                             // Freed in the same transaction, then taken.
    run(&mut s, "DELETE FROM person WHERE id = 2");
    run(&mut s, "INSERT INTO person VALUES (6, 'b@x', 'f')");
    run(&mut s, "COMMIT");
    // Across transactions: the second waits for the first, then fails if it committed.
    run(&mut s, "INSERT INTO person VALUES (7, 'c@x', 'g')");
    let db2 = db.clone();
    let other = std::thread::spawn(move || {
        let mut s2 = db2.session();
        let result = s2.execute("INSERT INTO person VALUES (8, 'c@x', 'h')", &[]).map(|_| ());
        s2.execute("ROLLBACK", &[]).unwrap();
        result
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    run(&mut s, "COMMIT");
    let result = other.join().unwrap();
    assert_eq!(result.map_err(|e| e.sqlstate()), Err("23505"));
    // And succeeds if the first rolled back.
    run(&mut s, "INSERT INTO person VALUES (9, 'd@x', 'i')");
    let db2 = db.clone();
    let other = std::thread::spawn(move || {
        let mut s2 = db2.session();
        s2.execute("INSERT INTO person VALUES (10, 'd@x', 'j')", &[]).map(|_| ())?;
        s2.execute("COMMIT", &[]).map(|_| ())
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    run(&mut s, "ROLLBACK");
    other.join().unwrap().unwrap();
    assert_eq!(rows(&mut s, "SELECT id FROM person WHERE email = 'd@x'"), [[i(10)]]);
}

#[test]
fn upserts_with_on_conflict_do_nothing_and_do_update() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INT, label TEXT)");
    run(&mut s, "CREATE UNIQUE INDEX stock_label ON stock (label)");
    run(&mut s, "INSERT INTO stock VALUES ('a', 1, 'A'), ('b', 2, 'B')");
    assert_eq!(
        run(&mut s, "INSERT INTO stock VALUES ('a', 5, 'x'), ('c', 3, 'C') ON CONFLICT DO NOTHING").tag(),
        "INSERT 0 1"
    );
    // A unique index's conflict, taken by a target naming it or by none.
    assert_eq!(
        run(&mut s, "INSERT INTO stock VALUES ('d', 4, 'A') ON CONFLICT (label) DO NOTHING").tag(),
        "INSERT 0 0"
    );
    assert_eq!(
        fails(&mut s, "INSERT INTO stock VALUES ('d', 4, 'A') ON CONFLICT (sku) DO NOTHING").sqlstate(),
        "23505"
    );
    // DO UPDATE on the primary key, with EXCLUDED and the existing row, and a WHERE.
    let r = run(
        &mut s,
        "INSERT INTO stock AS st VALUES ('a', 10, 'A'), ('e', 7, 'E') \
         ON CONFLICT (sku) DO UPDATE SET qty = st.qty + excluded.qty RETURNING sku, qty",
    );
    assert_eq!(r.rows(), [vec![t("a"), i(11)], vec![t("e"), i(7)]]);
    assert_eq!(run(&mut s, "INSERT INTO stock VALUES ('b', 100, 'B') ON CONFLICT ON CONSTRAINT stock_pkey DO UPDATE SET qty = excluded.qty WHERE stock.qty > 50").tag(), "INSERT 0 0");
    assert_eq!(
        rows(&mut s, "SELECT sku, qty FROM stock ORDER BY sku"),
        [vec![t("a"), i(11)], vec![t("b"), i(2)], vec![t("c"), i(3)], vec![t("e"), i(7)]]
    );
    // A target that is no key, and DO UPDATE without one.
    assert_eq!(
        fails(&mut s, "INSERT INTO stock VALUES ('z', 1, 'Z') ON CONFLICT (qty) DO NOTHING").sqlstate(),
        "42P10"
    );
    assert_eq!(
        fails(&mut s, "INSERT INTO stock VALUES ('z', 1, 'Z') ON CONFLICT DO UPDATE SET qty = 1").sqlstate(),
        "42601"
    );
    // A prepared upsert, run twice.
    let upsert = s
        .prepare("INSERT INTO stock VALUES ($1, $2, $3) ON CONFLICT (sku) DO UPDATE SET qty = stock.qty + excluded.qty")
        .unwrap();
    for _ in 0..2 {
        s.execute_prepared(&upsert, &[t("p"), i(5), t("P")]).unwrap();
    }
    assert_eq!(rows(&mut s, "SELECT qty FROM stock WHERE sku = 'p'"), [[i(10)]]);
}

#[test]
fn unique_constraints_declared_with_the_table_are_unique_indexes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(
            &mut s,
            "CREATE TABLE account (id INT PRIMARY KEY, email TEXT UNIQUE, org INT, login TEXT, \
             CONSTRAINT account_login UNIQUE (org, login))",
        );
        run(
            &mut s,
            "INSERT INTO account VALUES (1, 'a@x', 1, 'ann'), (2, 'b@x', 1, 'bob'), (3, 'c@x', 2, 'ann')",
        );
        let e = fails(&mut s, "INSERT INTO account VALUES (4, 'a@x', 3, 'zed')");
        assert_eq!(e.sqlstate(), "23505");
        assert!(e.to_string().contains("account_email_key"), "{e}");
        let e = fails(&mut s, "INSERT INTO account VALUES (4, 'd@x', 1, 'ann')");
        assert!(e.to_string().contains("account_login"), "{e}");
        assert_eq!(
            run(&mut s, "INSERT INTO account VALUES (4, 'a@x', 3, 'zed') ON CONFLICT (email) DO NOTHING")
                .tag(),
            "INSERT 0 0"
        );
        run(&mut s, "COMMIT");
        // The index names are taken, as relation names.
        assert_eq!(fails(&mut s, "CREATE TABLE account_email_key (a INT)").sqlstate(), "42P07");
        assert_eq!(
            fails(&mut s, "CREATE TABLE other (a INT UNIQUE, CONSTRAINT account_login UNIQUE (a))")
                .sqlstate(),
            "42P07"
        );
    }
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(fails(&mut s, "UPDATE account SET email = 'b@x' WHERE id = 1").sqlstate(), "23505");
    assert!(plan_of(&mut s, "SELECT id FROM account WHERE email = 'c@x'").contains("account_email_key"));
    assert_eq!(rows(&mut s, "SELECT id FROM account WHERE email = 'c@x'"), [[i(3)]]);
}

#[test]
fn column_defaults_fill_the_columns_an_insert_leaves_out_across_reopens() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE task (id INT PRIMARY KEY, state TEXT DEFAULT 'new', prio INT NOT NULL DEFAULT 2 + 3, note TEXT)");
        run(&mut s, "INSERT INTO task (id) VALUES (1)");
        run(&mut s, "INSERT INTO task (id, state, note) VALUES (2, 'done', 'x')");
        run(&mut s, "INSERT INTO task VALUES (3, NULL, 7, NULL)");
        run(&mut s, "COMMIT");
        assert_eq!(fails(&mut s, "CREATE TABLE bad (a INT DEFAULT nosuch)").sqlstate(), "42703");
        assert_eq!(fails(&mut s, "CREATE TABLE bad (a INT DEFAULT 'text')").sqlstate(), "22P02");
    }
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "INSERT INTO task (id, note) VALUES (4, 'after a reopen')");
    assert_eq!(
        rows(&mut s, "SELECT id, state, prio FROM task ORDER BY id"),
        [
            vec![i(1), t("new"), i(5)],
            vec![i(2), t("done"), i(5)],
            vec![i(3), NULL, i(7)],
            vec![i(4), t("new"), i(5)]
        ]
    );
}

/// A name that does not resolve is placed in the statement's text as PostgreSQL places
/// it (psql's `LINE 1: ... ^`): positions checked against PostgreSQL 15.20.
#[test]
fn an_unknown_or_ambiguous_name_carries_its_position_in_the_statement() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    run(&mut s, "CREATE TABLE u (id INT PRIMARY KEY, w INT)");
    run(&mut s, "CREATE VIEW vv AS SELECT v FROM t");
    let cases: [(&str, &str, usize); 7] = [
        ("SELECT nosuch FROM t", "42703", 8),
        ("SELECT t.nosuch FROM t", "42703", 8),
        ("SELECT x.v FROM t", "42P01", 8),
        ("SELECT v FROM nosuch", "42P01", 15),
        ("SELECT id FROM t, u", "42702", 8),
        ("SELECT v\n  FROM t WHERE   zzz = 1", "42703", 27),
        ("SELECT * FROM vv JOIN u ON u.nosuch = 1", "42703", 28),
    ];
    for (sql, sqlstate, position) in cases {
        let e = fails(&mut s, sql);
        assert_eq!((e.sqlstate(), e.position()), (sqlstate, Some(position)), "{sql}: {e}");
        // Prepared (the extended protocol's Parse, Bind, Execute), the same place.
        let e = match s.prepare(sql) {
            Ok(statement) => s.query(&statement, &[]).err().expect("fails"),
            Err(e) => e,
        };
        assert_eq!(e.position(), Some(position), "prepared {sql}: {e}");
    }
    // PostgreSQL's words for a qualified name.
    assert_eq!(fails(&mut s, "SELECT t.nosuch FROM t").to_string(), "column t.nosuch does not exist");
    assert_eq!(fails(&mut s, "SELECT x.v FROM t").to_string(), "missing FROM-clause entry for table \"x\"");
    // In a string of several statements, the place is in the whole string.
    let e = s.execute_batch("SELECT 1; SELECT nosuch FROM t").expect_err("fails");
    assert_eq!((e.sqlstate(), e.position()), ("42703", Some(18)), "{e}");
    // A view's query is bound to the columns it read: a rename keeps it working (as in
    // PostgreSQL), and a name the statement gets wrong is placed in the statement.
    run(&mut s, "ALTER TABLE t RENAME COLUMN v TO v2");
    assert!(rows(&mut s, "SELECT * FROM vv").is_empty());
    let e = fails(&mut s, "SELECT v2 FROM vv");
    assert_eq!((e.kind().sqlstate(), e.position()), ("42703", Some(8)), "{e}");
    // The error itself is what it was.
    assert!(matches!(fails(&mut s, "SELECT nosuch FROM t").kind(), DbError::UnknownColumn(_)));
}

/// A primary key declared with a name (what ORMs' naming conventions write) keeps it: in
/// the catalog, in its duplicate-key error, in EXPLAIN, and across a reopen; one without
/// a name is PostgreSQL's `{table}_pkey`.
#[test]
fn a_named_primary_key_keeps_its_name_in_the_catalog_errors_and_across_reopens() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE tags (a INT, b INT, CONSTRAINT pk_tags PRIMARY KEY (a, b))");
        run(&mut s, "CREATE TABLE one (id INT CONSTRAINT pk_one PRIMARY KEY)");
        run(&mut s, "CREATE TABLE plain (id INT PRIMARY KEY)");
        run(&mut s, "CREATE TABLE later (id INT NOT NULL)");
        run(&mut s, "ALTER TABLE later ADD CONSTRAINT pk_later PRIMARY KEY (id)");
        run(&mut s, "INSERT INTO tags VALUES (1, 2)");
        run(&mut s, "COMMIT");
        let e = fails(&mut s, "INSERT INTO tags VALUES (1, 2)");
        assert_eq!(e.sqlstate(), "23505");
        assert!(e.to_string().contains("\"pk_tags\""), "{e}");
        run(&mut s, "ROLLBACK");
    }
    let db = open(dir.path());
    let mut s = db.session();
    let names = rows(
        &mut s,
        "SELECT c.conname, i.relname FROM pg_constraint c JOIN pg_class i ON i.oid = c.conindid \
         WHERE c.contype = 'p' ORDER BY 1",
    );
    let pair = |a: &str| vec![t(a), t(a)];
    assert_eq!(names, vec![pair("pk_later"), pair("pk_one"), pair("pk_tags"), pair("plain_pkey")]);
    let plan = rows(&mut s, "EXPLAIN SELECT * FROM tags WHERE a = 1 AND b = 2");
    assert!(format!("{plan:?}").contains("using pk_tags on tags"), "{plan:?}");
    let e = fails(&mut s, "INSERT INTO one VALUES (NULL)");
    assert_eq!(e.sqlstate(), "23502", "{e}");
    assert_eq!(fails(&mut s, "ALTER TABLE tags DROP CONSTRAINT pk_tags").sqlstate(), "0A000");
}

#[test]
fn hash_joins_build_on_either_side_and_match_as_sql_compares() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    // Keys of several types that compare equal across types (2 = 2.0 = 2.00), repeated
    // on both sides, and NULLs (which match nothing).
    run(&mut s, "CREATE TABLE few (id INT PRIMARY KEY, k INT, n NUMERIC(6,2), f FLOAT, w TEXT)");
    run(&mut s, "CREATE TABLE many (id INT PRIMARY KEY, k INT, n NUMERIC(6,2), f FLOAT, w TEXT)");
    run(
        &mut s,
        "INSERT INTO few VALUES (1, 2, 2.5, 2, 'c'), (2, 2, 2, 3.5, 'a'), (3, NULL, NULL, NULL, NULL), (4, 7, 7, 7, 'zz')",
    );
    let many: Vec<String> = (1..=60)
        .map(|i| {
            let k = if i % 13 == 0 { "NULL".to_string() } else { (i % 9).to_string() };
            let w = if i % 11 == 0 { "NULL".to_string() } else { format!("'{}'", ["a", "b", "c"][i % 3]) };
            let n = format!("{}.{}", i % 4, if i % 2 == 0 { "0" } else { "5" });
            let f = format!("{}.{}", i % 5, if i % 3 == 0 { "0" } else { "5" });
            format!("({i}, {k}, {n}, {f}, {w})")
        })
        .collect();
    run(&mut s, &format!("INSERT INTO many VALUES {}", many.join(", ")));
    run(&mut s, "COMMIT");
    // Each equality join against the same join written without an equality (a nested
    // loop over every pair): the same rows, whichever side the hash table is built on.
    for (equal, between) in [
        ("x.k = y.k", "x.k <= y.k AND x.k >= y.k"),
        ("x.k = y.n", "x.k <= y.n AND x.k >= y.n"),
        ("x.n = y.f", "x.n <= y.f AND x.n >= y.f"),
        ("x.f = y.k", "x.f <= y.k AND x.f >= y.k"),
        ("x.w = y.w AND x.k = y.k", "x.w <= y.w AND x.w >= y.w AND x.k <= y.k AND x.k >= y.k"),
    ] {
        // Inner joins build on the smaller side; outer joins keep the order written.
        let sides = [("few", "many"), ("many", "few")];
        for ((a, b), join) in
            sides.into_iter().flat_map(|s| ["JOIN", "LEFT JOIN", "FULL JOIN"].map(|j| (s, j)))
        {
            let mut query = |on: &str| {
                let sql = format!("SELECT x.id, y.id FROM {a} x {join} {b} y ON {on} ORDER BY 1, 2");
                (rows(&mut s, &format!("EXPLAIN {sql}")), rows(&mut s, &sql))
            };
            let (hash_plan, hashed) = query(equal);
            let (loop_plan, looped) = query(between);
            let shown =
                |plan: &[Vec<Value>]| plan.iter().map(|r| r[0].to_string()).collect::<Vec<_>>().join("\n");
            assert!(shown(&hash_plan).contains("Hash Cond"), "{}", shown(&hash_plan));
            assert!(!shown(&loop_plan).contains("Hash"), "{}", shown(&loop_plan));
            assert!(
                looped.iter().any(|r| r[0] != NULL && r[1] != NULL),
                "{a} {join} {b} on {equal}: some rows match"
            );
            assert_eq!(hashed, looped, "{a} {join} {b} on {equal}");
        }
    }
}

/// A hash join whose probing rows stream from a larger table builds on the joined rows
/// so far packed (only the columns read, see `join::PackedRows`): rows of two relations,
/// keys repeated on both sides and NULL, a text column read only after the join. Each
/// result against the same join computed here from the rows inserted.
#[test]
fn a_streaming_hash_join_over_a_packed_build_side_gives_every_match() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE region (id INT PRIMARY KEY, name TEXT, unread TEXT)");
    run(&mut s, "CREATE TABLE cust (id INT PRIMARY KEY, region_id INT, grp INT, tag TEXT)");
    run(&mut s, "CREATE TABLE sale (id INT PRIMARY KEY, grp INT, amount INT)");
    let regions = [(1, "north"), (2, "south"), (3, "east")];
    // (id, region, group): groups 1 and 3 twice, a NULL group, a group no sale has.
    let customers =
        [(1, 1, Some(1)), (2, 2, Some(1)), (3, 3, Some(3)), (4, 1, Some(3)), (5, 2, None), (6, 3, Some(50))];
    for (id, name) in regions {
        run(&mut s, &format!("INSERT INTO region VALUES ({id}, '{name}', 'x{id}')"));
    }
    for (id, region, grp) in customers {
        let grp = grp.map_or("NULL".to_string(), |g| g.to_string());
        run(&mut s, &format!("INSERT INTO cust VALUES ({id}, {region}, {grp}, 'tag{id}')"));
    }
    // Every 11th sale has a NULL group; groups 0..6 otherwise.
    let sales: Vec<(i64, Option<i64>, i64)> =
        (1..=300).map(|id| (id, (id % 11 != 0).then_some(id % 7), id * 3 % 101)).collect();
    let values: Vec<String> = sales
        .iter()
        .map(|(id, grp, amount)| {
            format!("({id}, {}, {amount})", grp.map_or("NULL".to_string(), |g| g.to_string()))
        })
        .collect();
    run(&mut s, &format!("INSERT INTO sale VALUES {}", values.join(", ")));
    run(&mut s, "COMMIT");
    let region_name = |id: i64| regions.iter().find(|r| r.0 == id).unwrap().1;
    let mut expected: Vec<(i64, i64, &str, String, i64)> = Vec::new();
    for (sale, grp, amount) in &sales {
        for (cust, region, cust_grp) in customers {
            if grp.is_some() && *grp == cust_grp {
                expected.push((*sale, cust, region_name(region), format!("tag{cust}"), *amount));
            }
        }
    }
    expected.sort();
    assert!(expected.len() > 100, "{} joined rows", expected.len());
    let joined = rows(
        &mut s,
        "SELECT s.id, c.id, r.name, c.tag, s.amount FROM region r JOIN cust c ON c.region_id = r.id \
         JOIN sale s ON s.grp = c.grp ORDER BY s.id, c.id",
    );
    let expected_rows: Vec<Vec<Value>> = expected
        .iter()
        .map(|(sale, cust, name, tag, amount)| vec![i(*sale), i(*cust), t(name), t(tag), i(*amount)])
        .collect();
    assert_eq!(joined, expected_rows);
    // Grouped by a text column of the build side, read only after the join.
    let mut by_region: std::collections::BTreeMap<&str, (i64, i64)> = Default::default();
    for (_, _, name, _, amount) in &expected {
        let e = by_region.entry(name).or_default();
        e.0 += 1;
        e.1 += amount;
    }
    let grouped = rows(
        &mut s,
        "SELECT r.name, count(*), sum(s.amount) FROM sale s JOIN cust c ON s.grp = c.grp \
         JOIN region r ON c.region_id = r.id GROUP BY r.name ORDER BY 1",
    );
    let expected_groups: Vec<Vec<Value>> =
        by_region.iter().map(|(name, (n, sum))| vec![t(name), i(*n), i(*sum)]).collect();
    assert_eq!(grouped, expected_groups);
    let plan = rows(&mut s, "EXPLAIN SELECT r.name, count(*) FROM sale s JOIN cust c ON s.grp = c.grp JOIN region r ON c.region_id = r.id GROUP BY r.name");
    let plan: Vec<String> = plan.iter().map(|r| r[0].to_string()).collect();
    assert!(plan.iter().filter(|l| l.contains("Hash Join")).count() == 2, "{plan:#?}");
}

/// Chains of hash joins built on their right sides, the left rows probing as they are
/// made (`join::run_hash_join_probing_with_left`): a left row's last match is made in the
/// row itself, so a later row of the chain must never show an earlier row's values.
/// Left rows matching several rows, none, or only some under an extra ON condition,
/// NULL keys, every join kind at each of two places: each result against the same join
/// written without an equality (a nested loop over every pair).
#[test]
fn pipelined_hash_join_chains_give_the_rows_of_nested_loops() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE a (id INT PRIMARY KEY, k INT, label TEXT)");
    run(&mut s, "CREATE TABLE b (id INT PRIMARY KEY, k INT, j INT, note TEXT)");
    run(&mut s, "CREATE TABLE c (id INT PRIMARY KEY, j INT, word TEXT)");
    let a: Vec<String> = (1..=40)
        .map(|i| {
            let k = if i % 9 == 0 { "NULL".into() } else { (i % 6).to_string() };
            format!("({i}, {k}, 'a{i}')")
        })
        .collect();
    // Keys 0..3 of a's 0..5: some a rows match three b rows, some none.
    let b: Vec<String> = (1..=12)
        .map(|i| {
            let j = if i % 5 == 0 { "NULL".into() } else { (i % 4).to_string() };
            format!("({i}, {}, {j}, 'b{i}')", i % 4)
        })
        .collect();
    let c: Vec<String> = (1..=5).map(|i| format!("({i}, {}, 'c{i}')", i % 3)).collect();
    run(&mut s, &format!("INSERT INTO a VALUES {}", a.join(", ")));
    run(&mut s, &format!("INSERT INTO b VALUES {}", b.join(", ")));
    run(&mut s, &format!("INSERT INTO c VALUES {}", c.join(", ")));
    run(&mut s, "COMMIT");
    let kinds = ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"];
    let mut compared = 0;
    for first in kinds {
        for second in kinds {
            let query = |ab: &str, bc: &str| {
                format!(
                    "SELECT a.id, a.label, b.id, b.note, c.id, c.word FROM a {first} b ON {ab} \
                     {second} c ON {bc} ORDER BY 1, 3, 5"
                )
            };
            // An extra condition that fails on some matches (also the last of a row's).
            let hashed = query("a.k = b.k AND (a.id + b.id) % 3 <> 0", "b.j = c.j");
            let looped =
                query("a.k <= b.k AND a.k >= b.k AND (a.id + b.id) % 3 <> 0", "b.j <= c.j AND b.j >= c.j");
            let plan: Vec<String> =
                rows(&mut s, &format!("EXPLAIN {hashed}")).iter().map(|r| r[0].to_string()).collect();
            // (PostgreSQL's names: "Hash Join", "Hash Left Join", "Hash Full Join", ...)
            let hash_joins = plan.iter().filter(|l| l.contains("Hash") && l.contains("Join")).count();
            assert_eq!(hash_joins, 2, "{first}/{second}: {plan:#?}");
            assert!(
                plan.iter().any(|l| l.trim_start() == "Hash Cond: (b.j = c.j)"),
                "{first}/{second}: {plan:#?}"
            );
            let expected = rows(&mut s, &looped);
            assert!(expected.iter().any(|r| r[4] != NULL), "{first}/{second}: some rows join all three");
            assert_eq!(rows(&mut s, &hashed), expected, "{first} then {second}");
            compared += 1;
        }
    }
    assert_eq!(compared, 16);
    // The same chain without an ORDER BY, aggregated: every row counted once.
    let count = |sql: &str, s: &mut Session| rows(s, sql)[0][0].clone();
    assert_eq!(
        count("SELECT count(*) FROM a LEFT JOIN b ON a.k = b.k LEFT JOIN c ON b.j = c.j", &mut s),
        count(
            "SELECT count(*) FROM a LEFT JOIN b ON a.k <= b.k AND a.k >= b.k \
             LEFT JOIN c ON b.j <= c.j AND b.j >= c.j",
            &mut s
        )
    );
}

#[test]
fn joins_copy_only_the_columns_a_query_reads_and_give_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = company(&db);
    run(&mut s, "CREATE TABLE city (dept_id INT PRIMARY KEY, city TEXT, size INT)");
    run(&mut s, "INSERT INTO city VALUES (1, 'oslo', 5), (2, 'rome', 9), (3, 'lima', 1)");
    run(&mut s, "COMMIT");
    // Each query reads its columns through another route (select list, ORDER BY,
    // GROUP BY, HAVING, an aggregate's argument, a window, the WHERE above an outer join,
    // a derived table, USING, *). A subquery in the WHERE (`{w}`) turns the pruning off:
    // both forms must give the same rows.
    for sql in [
        "SELECT e.name FROM emp e JOIN dept d ON e.dept_id = d.id WHERE {w} ORDER BY d.name DESC, e.salary",
        "SELECT d.name, sum(e.salary) FROM emp e JOIN dept d ON e.dept_id = d.id WHERE {w} \
         GROUP BY d.name HAVING max(e.id) > 10 ORDER BY 1",
        "SELECT e.name, rank() OVER (PARTITION BY d.name ORDER BY e.salary) FROM emp e \
         JOIN dept d ON e.dept_id = d.id WHERE {w} ORDER BY 1",
        "SELECT e.name FROM emp e LEFT JOIN dept d ON e.dept_id = d.id LEFT JOIN city c ON c.dept_id = d.id \
         WHERE (d.name IS NULL OR c.size > 4) AND {w} ORDER BY 1",
        "SELECT x.n, c.city FROM (SELECT name AS n, dept_id FROM emp WHERE salary > 75) x \
         JOIN city c USING (dept_id) WHERE {w} ORDER BY 1",
        "SELECT * FROM emp JOIN city USING (dept_id) WHERE {w} ORDER BY id",
        "SELECT count(*) FROM emp e, dept d, city c \
         WHERE e.dept_id = d.id AND c.dept_id = d.id AND c.size + e.salary > 95 AND {w}",
    ] {
        let pruned = rows(&mut s, &sql.replace("{w}", "TRUE"));
        let whole = rows(&mut s, &sql.replace("{w}", "(SELECT 1) = 1"));
        assert!(!pruned.is_empty(), "{sql}");
        assert_eq!(pruned, whole, "{sql}");
    }
}

/// A column read only by an aggregate's second argument, ORDER BY or FILTER is copied
/// through the joins like any other (the joins copy only the columns a query reads).
#[test]
fn columns_read_only_inside_an_aggregate_reach_it_through_a_join() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE p (id INT PRIMARY KEY, label TEXT)");
    run(&mut s, "CREATE TABLE q (id INT PRIMARY KEY, p_id INT, rank INT, keep BOOLEAN, sep TEXT)");
    run(&mut s, "INSERT INTO p VALUES (1, 'a'), (2, 'b')");
    run(&mut s, "INSERT INTO q VALUES (1, 1, 3, true, '-'), (2, 1, 1, true, '-'), (3, 2, 2, false, '-'), (4, 1, 2, false, '-')");
    let rows: Vec<String> = crate::common::cells(
        &mut s,
        "SELECT p.label, array_agg(q.id ORDER BY q.rank), count(*) FILTER (WHERE q.keep), string_agg(p.label, q.sep) \
         FROM p JOIN q ON q.p_id = p.id GROUP BY p.label ORDER BY p.label",
    )
    .into_iter()
    .map(|r| r.join("|"))
    .collect();
    // PostgreSQL 15: a|{2,4,1}|2|a-a-a, b|{3}|0|b.
    assert_eq!(rows, ["a|{2,4,1}|2|a-a-a", "b|{3}|0|b"]);
}
