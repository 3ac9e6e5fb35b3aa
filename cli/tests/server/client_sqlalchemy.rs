//! `redodb serve` judged by SQLAlchemy 2 and Alembic over psycopg 3 (PyPI, unmodified, at
//! the versions pinned in `cli/tests/clients/requirements.txt`, installed by
//! `scripts/test.sh`): issue 20's ORM judge, `cli/tests/clients/sqlalchemy_judge.py`.
//! Its five checks are `metadata.create_all` (identity keys, foreign keys, indexes,
//! unique constraints, server defaults, enforced with their SQLSTATEs), an ORM session
//! (inserts, joins, eager loading, unit-of-work updates, cascading deletes), `lateral()`
//! (the top books of each author, inner and outer joined; a row-valued IN), the
//! inspector reflecting the schema from pg_catalog (columns, primary key, foreign keys,
//! indexes, unique constraints, `MetaData.reflect`) and Alembic (an upgrade adding a
//! column, an index and a foreign key, `compare_metadata` finding nothing left, and the
//! downgrade). The script runs every check even after one fails and prints each failure
//! with its traceback; the test fails unless every `check_*` function of the script ran
//! and passed.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{assert_client_checks_passed, run_client, Server};

/// Fails (never skips) when SQLAlchemy, Alembic or psycopg is missing.
fn require_sqlalchemy() {
    let found = Command::new("python3").args(["-c", "import sqlalchemy, alembic, psycopg"]).output();
    assert!(
        found.as_ref().is_ok_and(|o| o.status.success()),
        "SQLAlchemy, Alembic and psycopg 3 are needed by this test: python3 -m pip install -r \
         cli/tests/clients/requirements.txt ({:?})",
        found.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
    );
}

#[test]
fn sqlalchemy_creates_maps_and_reflects_the_schema_and_alembic_upgrades_and_downgrades_it() {
    require_sqlalchemy();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/sqlalchemy_judge.py");
    let output = run_client(
        Command::new("python3").arg(&script).args(["--port", &server.port.to_string()]),
        Duration::from_secs(120),
    );
    let (run, defined) = assert_client_checks_passed("sqlalchemy_judge.py", &output);
    // Every check_* function of the script ran, as counted here from its source.
    let source = std::fs::read_to_string(&script).unwrap();
    let in_source = source.lines().filter(|l| l.starts_with("def check_")).count() as u64;
    assert!(in_source > 0, "no check_ functions in {}", script.display());
    assert_eq!((run, defined), (in_source, in_source), "every check of the script ran");
    assert!(server.terminate().success(), "clean shutdown after the SQLAlchemy checks");
}

/// Issue 20's schema judge, `cli/tests/clients/sqlalchemy_schemas.py`: `MetaData(schema=
/// "app")` and `Table(..., schema="audit")` created, written and read by the ORM across
/// the schemas, reflected by the inspector (a foreign key's referred schema),
/// `search_path` resolving an unqualified name, and Alembic keeping its version table in
/// a schema (`version_table_schema`).
#[test]
fn sqlalchemy_creates_writes_and_reflects_tables_in_schemas_of_their_own() {
    require_sqlalchemy();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/sqlalchemy_schemas.py");
    let output = run_client(
        Command::new("python3").arg(&script).args(["--port", &server.port.to_string()]),
        Duration::from_secs(120),
    );
    let (run, defined) = assert_client_checks_passed("sqlalchemy_schemas.py", &output);
    let source = std::fs::read_to_string(&script).unwrap();
    let in_source = source.lines().filter(|l| l.starts_with("def check_")).count() as u64;
    assert!(in_source > 0, "no check_ functions in {}", script.display());
    assert_eq!((run, defined), (in_source, in_source), "every check of the script ran");
    assert!(server.terminate().success(), "clean shutdown after the SQLAlchemy checks");
}
