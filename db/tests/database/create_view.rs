//! Views through `Session::execute` (issue 20): CREATE [OR REPLACE] VIEW with and without
//! a column list, queried like a table (joined, filtered, aggregated, a view of a view),
//! always reading the tables as they are; read-only; DROP VIEW; recovered after a reopen.

use crate::common::{fails, open, run};
use db::{Session, Value};

fn texts(s: &mut Session, sql: &str) -> Vec<String> {
    run(s, sql)
        .rows()
        .iter()
        .map(|row| row.iter().map(Value::to_string).collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn a_view_is_its_query_over_the_tables_as_they_are_now() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(&mut s, "CREATE TABLE emp (id INT PRIMARY KEY, dept INT, name TEXT, salary INT)");
        run(&mut s, "CREATE TABLE dept (id INT PRIMARY KEY, title TEXT)");
        run(&mut s, "INSERT INTO dept VALUES (1, 'ops'), (2, 'dev')");
        run(&mut s, "INSERT INTO emp VALUES (1, 1, 'ann', 100), (2, 2, 'bob', 200), (3, 2, 'cy', 300)");
        run(&mut s, "COMMIT");
        run(
            &mut s,
            "CREATE VIEW staff AS SELECT e.name, d.title, e.salary FROM emp e JOIN dept d ON d.id = e.dept",
        );
        run(
            &mut s,
            "CREATE VIEW payroll (title, total) AS SELECT title, sum(salary) FROM staff GROUP BY title",
        );
        assert_eq!(texts(&mut s, "SELECT * FROM payroll ORDER BY title"), ["dev 500", "ops 100"]);
        assert_eq!(texts(&mut s, "SELECT name FROM staff WHERE salary > 150 ORDER BY name"), ["bob", "cy"]);
        // Joined with a table; and it sees the rows as they are (its own transaction's too).
        run(&mut s, "INSERT INTO emp VALUES (4, 1, 'di', 50)");
        assert_eq!(
            texts(
                &mut s,
                "SELECT p.total, d.id FROM payroll p JOIN dept d ON d.title = p.title ORDER BY d.id"
            ),
            ["150 1", "500 2"]
        );
        run(&mut s, "COMMIT");

        // Read-only; not a table for table DDL; names taken.
        assert_eq!(fails(&mut s, "INSERT INTO staff VALUES ('x', 'y', 1)").sqlstate(), "55000");
        assert_eq!(fails(&mut s, "UPDATE staff SET salary = 0").sqlstate(), "55000");
        assert_eq!(fails(&mut s, "DELETE FROM payroll").sqlstate(), "55000");
        assert_eq!(fails(&mut s, "DROP TABLE staff").sqlstate(), "42809");
        assert_eq!(fails(&mut s, "DROP VIEW emp").sqlstate(), "42809");
        assert_eq!(fails(&mut s, "TRUNCATE staff").sqlstate(), "42809");
        assert_eq!(fails(&mut s, "CREATE VIEW staff AS SELECT 1").sqlstate(), "42P07");
        assert_eq!(fails(&mut s, "CREATE VIEW bad AS SELECT nope FROM emp").sqlstate(), "42703");
        assert_eq!(fails(&mut s, "CREATE VIEW two (a, b) AS SELECT 1").sqlstate(), "42601");
        run(&mut s, "CREATE VIEW IF NOT EXISTS staff AS SELECT 1");

        // OR REPLACE keeps the columns (PostgreSQL's rule); a cycle made by replacing is
        // caught when the view is used.
        let e = fails(&mut s, "CREATE OR REPLACE VIEW staff AS SELECT name, salary FROM emp");
        assert_eq!(e.sqlstate(), "42P16", "{e}");
        run(
            &mut s,
            "CREATE OR REPLACE VIEW staff AS SELECT e.name, d.title, e.salary, e.id FROM emp e \
             JOIN dept d ON d.id = e.dept WHERE e.dept = 2",
        );
        assert_eq!(texts(&mut s, "SELECT count(*) FROM staff"), ["2"]);
        run(&mut s, "CREATE VIEW loop_a AS SELECT 1 AS x");
        run(&mut s, "CREATE VIEW loop_b AS SELECT x FROM loop_a");
        run(&mut s, "CREATE OR REPLACE VIEW loop_a AS SELECT x FROM loop_b");
        assert_eq!(fails(&mut s, "SELECT * FROM loop_a").sqlstate(), "42P17");
        run(&mut s, "DROP VIEW loop_b, loop_a");
        run(&mut s, "DROP VIEW IF EXISTS loop_a");
    }
    // Recovered from the redo, then from a checkpoint image.
    for checkpoint in [false, true] {
        let db = open(dir.path());
        let mut s = db.session();
        assert_eq!(texts(&mut s, "SELECT name FROM staff ORDER BY name"), ["bob", "cy"]);
        assert_eq!(texts(&mut s, "SELECT * FROM payroll"), ["dev 500"], "over the replaced staff");
        assert_eq!(fails(&mut s, "SELECT * FROM loop_a").sqlstate(), "42P01");
        if checkpoint {
            db.checkpoint().unwrap();
        }
    }
}
