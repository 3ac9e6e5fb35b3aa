//! `TABLESAMPLE BERNOULLI (p) [REPEATABLE (seed)]` and `TABLESAMPLE SYSTEM (p)` through
//! `Session::execute` (issue 20): the proportion of rows kept, checked with wide
//! statistical bounds (10,000 rows at 10%: a standard deviation of 30 rows, the bounds
//! more than six away), REPEATABLE's repeatability, the sample taken before the WHERE
//! and the joins (an outer join keeps its null-extended rows), and PostgreSQL 15's
//! errors.

use crate::common::{fails, one, open, run};
use db::{Session, Value};

fn setup(s: &mut Session) {
    run(s, "CREATE TABLE big (id INT PRIMARY KEY, k INT)");
    // A table without a primary key: sampled by its hidden row id.
    run(s, "CREATE TABLE keyless (v INT)");
    // In transactions of 2,000 rows: the tests' log files are small.
    for from in (1..=10000).step_by(2000) {
        let to = from + 1999;
        run(s, &format!("INSERT INTO big SELECT g, g % 7 FROM generate_series({from}, {to}) g"));
        run(s, "COMMIT");
        run(s, &format!("INSERT INTO keyless SELECT 1 FROM generate_series({from}, {to}) g"));
        run(s, "COMMIT");
    }
    run(s, "CREATE TABLE small (id INT PRIMARY KEY)");
    run(s, "INSERT INTO small VALUES (1), (2), (3)");
    run(s, "COMMIT");
}

fn count(s: &mut Session, sql: &str) -> i64 {
    one(s, sql).parse().unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn ids(s: &mut Session, sql: &str) -> Vec<Value> {
    run(s, sql).rows().iter().map(|row| row[0].clone()).collect()
}

#[test]
fn bernoulli_and_system_keep_about_the_percentage_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    for sql in [
        "SELECT count(*) FROM big TABLESAMPLE BERNOULLI (10)",
        "SELECT count(*) FROM big TABLESAMPLE SYSTEM (10)",
        "SELECT count(*) FROM big TABLESAMPLE BERNOULLI (10) REPEATABLE (42)",
        "SELECT count(*) FROM big AS b TABLESAMPLE SYSTEM (10) REPEATABLE (7)",
        "SELECT count(*) FROM keyless TABLESAMPLE BERNOULLI (10)",
        "SELECT count(*) FROM keyless TABLESAMPLE BERNOULLI (10) REPEATABLE (1)",
    ] {
        let n = count(&mut s, sql);
        assert!((800..=1200).contains(&n), "{sql}: {n} of 10000 rows");
    }
    let half = count(&mut s, "SELECT count(*) FROM big TABLESAMPLE BERNOULLI (50) REPEATABLE (5)");
    assert!((4700..=5300).contains(&half), "50%: {half}");
    assert_eq!(count(&mut s, "SELECT count(*) FROM big TABLESAMPLE BERNOULLI (100)"), 10000);
    assert_eq!(count(&mut s, "SELECT count(*) FROM big TABLESAMPLE SYSTEM (0)"), 0);
    assert_eq!(count(&mut s, "SELECT count(*) FROM big TABLESAMPLE BERNOULLI (0) REPEATABLE (3)"), 0);
    // The sample is of the table; the WHERE then filters it (1,428 rows have k = 0).
    let n = count(&mut s, "SELECT count(*) FROM big TABLESAMPLE BERNOULLI (10) WHERE k = 0");
    assert!((70..=220).contains(&n), "k = 0 at 10%: {n}");
    assert_eq!(count(&mut s, "SELECT count(*) FROM big b TABLESAMPLE BERNOULLI (100) WHERE b.id = 5"), 1);
    // A bind parameter as the percentage.
    let r = s.execute("SELECT count(*) FROM big TABLESAMPLE BERNOULLI ($1)", &[Value::Int(100)]).unwrap();
    assert_eq!(r.rows()[0][0], Value::Int(10000));
    let e = s.execute("SELECT count(*) FROM big TABLESAMPLE BERNOULLI ($1)", &[Value::Int(200)]).unwrap_err();
    assert_eq!(e.sqlstate(), "2202H", "{e}");
}

#[test]
fn repeatable_gives_the_same_rows_for_the_same_seed() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let sample = "SELECT id FROM big TABLESAMPLE BERNOULLI (10) REPEATABLE (42) ORDER BY id";
    let first = ids(&mut s, sample);
    assert_eq!(ids(&mut s, sample), first);
    assert_eq!(
        ids(&mut s, "SELECT id FROM big TABLESAMPLE BERNOULLI (10) REPEATABLE (42.0) ORDER BY id"),
        first
    );
    // Another seed, or none, picks other rows (two equal samples of ~1,000 rows out of
    // 10,000 by chance are beyond any test's lifetime).
    assert_ne!(
        ids(&mut s, "SELECT id FROM big TABLESAMPLE BERNOULLI (10) REPEATABLE (43) ORDER BY id"),
        first
    );
    let unseeded = "SELECT id FROM big TABLESAMPLE BERNOULLI (10) ORDER BY id";
    assert_ne!(ids(&mut s, unseeded), ids(&mut s, unseeded));
    // The same rows whatever the query does with them: a WHERE, a join.
    let filtered = ids(
        &mut s,
        "SELECT id FROM big TABLESAMPLE BERNOULLI (10) REPEATABLE (42) WHERE id > 5000 ORDER BY id",
    );
    let expected: Vec<Value> =
        first.iter().filter(|v| matches!(v, Value::Int(id) if *id > 5000)).cloned().collect();
    assert_eq!(filtered, expected);
    let joined = ids(
        &mut s,
        "SELECT b.id FROM big b TABLESAMPLE BERNOULLI (10) REPEATABLE (42) JOIN (VALUES (1)) v(x) ON true ORDER BY b.id",
    );
    assert_eq!(joined, first);
    // A row added changes nothing for the others.
    run(&mut s, "INSERT INTO big VALUES (10001, 0)");
    run(&mut s, "COMMIT");
    let after: Vec<Value> = ids(&mut s, sample).into_iter().filter(|v| *v != Value::Int(10001)).collect();
    assert_eq!(after, first);
}

#[test]
fn a_sampled_table_in_a_join_is_sampled_before_joining() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    // The outer join keeps every row of its left side, null-extended where the sample
    // left nothing to join (PostgreSQL gives 3 rows, b.id NULL).
    assert_eq!(
        count(
            &mut s,
            "SELECT count(*) FROM small s LEFT JOIN big b TABLESAMPLE BERNOULLI (0) ON b.id = s.id"
        ),
        3
    );
    assert_eq!(
        count(
            &mut s,
            "SELECT count(b.id) FROM small s LEFT JOIN big b TABLESAMPLE BERNOULLI (0) ON b.id = s.id"
        ),
        0
    );
    assert_eq!(
        count(&mut s, "SELECT count(*) FROM small s JOIN big b TABLESAMPLE BERNOULLI (100) ON b.id = s.id"),
        3
    );
    let n = count(&mut s, "SELECT count(*) FROM big a TABLESAMPLE SYSTEM (10), small WHERE small.id = 1");
    assert!((800..=1200).contains(&n), "{n}");
    // Column aliases carry over.
    assert_eq!(one(&mut s, "SELECT max(x) FROM big AS b (x, y) TABLESAMPLE BERNOULLI (100), small"), "10000");
}

#[test]
fn tablesample_fails_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    run(&mut s, "CREATE VIEW v AS SELECT * FROM big");
    let cases = [
        (
            "SELECT count(*) FROM big TABLESAMPLE BERNOULLI (150)",
            "2202H",
            "sample percentage must be between 0 and 100",
        ),
        (
            "SELECT count(*) FROM big TABLESAMPLE BERNOULLI (-1)",
            "2202H",
            "sample percentage must be between 0 and 100",
        ),
        (
            "SELECT count(*) FROM big TABLESAMPLE SYSTEM (101)",
            "2202H",
            "sample percentage must be between 0 and 100",
        ),
        // Checked as the statement starts, even when no row is read.
        ("SELECT count(*) FROM big TABLESAMPLE SYSTEM (101) WHERE false", "2202H", "between 0 and 100"),
        (
            "SELECT count(*) FROM big TABLESAMPLE BERNOULLI (NULL)",
            "2202H",
            "TABLESAMPLE parameter cannot be null",
        ),
        ("SELECT count(*) FROM big TABLESAMPLE foo (10)", "42704", "tablesample method foo does not exist"),
        ("SELECT count(*) FROM big TABLESAMPLE BERNOULLI (id)", "42703", "id"),
        (
            "SELECT count(*) FROM v TABLESAMPLE BERNOULLI (10)",
            "0A000",
            "TABLESAMPLE clause can only be applied to tables",
        ),
        ("SELECT count(*) FROM small, big TABLESAMPLE BERNOULLI (120)", "2202H", "between 0 and 100"),
        // Not a sample of what a DML statement changes (PostgreSQL's syntax error).
        ("DELETE FROM big TABLESAMPLE BERNOULLI (10)", "42601", "TABLESAMPLE"),
    ];
    for (sql, state, message) in cases {
        let e = fails(&mut s, sql);
        assert_eq!(e.sqlstate(), state, "{sql}: {e}");
        assert!(e.to_string().contains(message), "{sql}: {e}");
    }
}
