//! What a wire server asks of a session besides running SQL: describing a prepared
//! statement without running it for effect, and a multi-statement call's results up to
//! the statement that failed.

use crate::common;

use db::sql::ResultColumn;
use db::{DataType, Value};

#[test]
fn describe_tells_parameters_and_columns_without_side_effects() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (k BIGINT PRIMARY KEY, v VARCHAR(10), f DOUBLE PRECISION, b BOOLEAN)", &[])
        .unwrap();

    let insert = s.prepare("INSERT INTO t (k, v) VALUES ($1, $2)").unwrap();
    assert!(!insert.returns_rows());
    let d = s.describe_prepared(&insert).unwrap();
    assert_eq!(d.parameters, vec![Some(DataType::Int), Some(DataType::Text { max_chars: Some(10) })]);
    assert_eq!(d.columns, None);
    assert!(s.scan("t").unwrap().is_empty(), "describing an INSERT inserts nothing");

    let select = s.prepare("SELECT v, f + 1 AS g FROM t WHERE k = $1 AND b = $2 LIMIT $3").unwrap();
    assert!(select.returns_rows());
    let d = s.describe_prepared(&select).unwrap();
    assert_eq!(d.parameters, vec![Some(DataType::Int), Some(DataType::Bool), Some(DataType::Int)]);
    let names: Vec<&str> =
        d.columns.as_deref().unwrap().iter().map(|c: &ResultColumn| c.name.as_str()).collect();
    assert_eq!(names, ["v", "g"]);
    assert_eq!(d.columns.unwrap()[0].ty, Some(DataType::Text { max_chars: Some(10) }));

    let update = s.prepare("UPDATE t SET f = $1 WHERE k BETWEEN $2 AND $3::bigint").unwrap();
    assert_eq!(
        s.describe_parameters(&update),
        vec![Some(DataType::Float), Some(DataType::Int), Some(DataType::Int)]
    );
    let untyped = s.prepare("SELECT $1").unwrap();
    assert_eq!(s.describe_parameters(&untyped), vec![None]);
    // A JSON operator's key, path or removed key is no value of the column's type; what
    // is compared with the column, or contained in it, is.
    s.execute("CREATE TABLE docs (k BIGINT PRIMARY KEY, doc JSONB, amount NUMERIC(8,2))", &[]).unwrap();
    let json = s
        .prepare(
            "SELECT doc ->> $1, doc #> $2, doc - $3 FROM docs WHERE doc ? $4 AND doc @> $5 AND amount > $6",
        )
        .unwrap();
    assert_eq!(
        s.describe_parameters(&json),
        vec![
            None,
            None,
            None,
            None,
            Some(DataType::Jsonb),
            Some(DataType::Numeric(Some(db::NumericSpec::new(8, 2).unwrap())))
        ]
    );
    let show = s.prepare("SHOW PARAMETER commit_wait").unwrap();
    assert!(show.returns_rows());
    assert_eq!(s.describe_prepared(&show).unwrap().columns.unwrap().len(), 3);
    let commit = s.prepare("COMMIT").unwrap();
    assert_eq!(s.describe_prepared(&commit).unwrap().columns, None);

    // A query whose plan knows every column's type is compiled, not run: describing a
    // SELECT ... FOR UPDATE locks no row and opens no transaction.
    s.execute("INSERT INTO t VALUES (1, 'a', 1.0, true)", &[]).unwrap();
    s.execute("COMMIT", &[]).unwrap();
    let lock = s.prepare("SELECT k FROM t FOR UPDATE").unwrap();
    assert_eq!(s.describe_prepared(&lock).unwrap().columns.unwrap()[0].ty, Some(DataType::Int));
    assert!(!s.in_transaction(), "describing locked no row");
    // Nor when a column's type is left to its values: a FOR UPDATE query never runs.
    let untyped_lock = s.prepare("SELECT k, NULL AS n, $1 AS p FROM t FOR UPDATE").unwrap();
    let columns = s.describe_prepared(&untyped_lock).unwrap().columns.unwrap();
    assert_eq!((columns[0].ty, columns[1].ty), (Some(DataType::Int), None));
    assert!(!s.in_transaction(), "describing locked no row");
    // One whose type a value decides runs with NULL parameters, as before.
    let untyped = s.prepare("SELECT $1 AS x FROM t").unwrap();
    assert_eq!(s.describe_prepared(&untyped).unwrap().columns.unwrap()[0].name, "x");
}

#[test]
fn batch_until_error_keeps_the_results_before_the_failure() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (k BIGINT PRIMARY KEY)", &[]).unwrap();
    let (results, error) =
        s.execute_batch_until_error("BEGIN; INSERT INTO t VALUES (1); INSERT INTO t VALUES (1); SELECT 1");
    let tags: Vec<String> = results.iter().map(|r| r.tag().into_owned()).collect();
    assert_eq!(tags, ["BEGIN", "INSERT 0 1"]);
    assert_eq!(error.expect("the duplicate fails").sqlstate(), "23505");
    // The statements before the failure keep their effect, as with execute_batch.
    assert_eq!(s.scan("t").unwrap().len(), 1);
    let (results, error) = s.execute_batch_until_error("COMMIT; SELECT k FROM t");
    assert!(error.is_none());
    assert_eq!(results[1].rows(), [vec![Value::Int(1)]]);
}
