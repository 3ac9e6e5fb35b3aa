//! `redodb serve` driven by PgJDBC (Debian's libpostgresql-jdbc-java, unmodified), in
//! each preferQueryMode: extended, extendedForPrepared, extendedCacheEverything and
//! simple. PreparedStatement with every setter (setLong, setInt, setString, setDouble,
//! setBoolean, setNull, ...) past prepareThreshold, executeBatch with its update counts
//! with and without reWriteBatchedInserts, setFetchSize inside a transaction (the rows
//! arrive in portions, counted by the server's `fetch calls`), autocommit off with
//! commit and rollback, isolation levels, and Statement.cancel of an UPDATE waiting for
//! a row lock (57014), savepoints (setSavepoint, rollback to one after an error,
//! autosave=always), generated keys (RETURNING), the `options` connection property,
//! pg_backend_pid() and a FETCH read with a fetch size, and the exact and structured
//! types: NUMERIC(p,s) as BigDecimal (precision and scale in the metadata), byte[] as
//! bytea and java.util.UUID as uuid (binary results past prepareThreshold), JSON/JSONB
//! through casts, CHAR(n) blank-padded, arrays (createArrayOf + setArray, `= ANY(?)`,
//! getArray, binary both ways). The checks are
//! `cli/tests/clients/JdbcTest.java`, compiled here; it reports how many it ran, and the
//! test fails unless all of them ran (at least one) and passed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{assert_client_checks_passed, assert_client_passed, run_client, Server};

/// The driver's jar: Debian's package puts it here (`dpkg -L libpostgresql-jdbc-java`).
const JAR: &str = "/usr/share/java/postgresql.jar";

/// Fails (never skips) when the JDK or the driver is missing.
pub(crate) fn require_jdbc() -> PathBuf {
    for tool in ["javac", "java"] {
        let found = Command::new(tool).arg("-version").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "`{tool}` is needed by this test: apt-get install default-jdk-headless"
        );
    }
    let jar = PathBuf::from(JAR);
    assert!(jar.exists(), "PgJDBC is needed by this test: apt-get install libpostgresql-jdbc-java ({JAR})");
    jar
}

#[test]
fn pgjdbc_runs_prepared_statements_batches_fetch_sizes_transactions_and_cancel_in_every_query_mode() {
    let jar = require_jdbc();
    let classes = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/JdbcTest.java");
    let compiled = run_client(
        Command::new("javac").arg("-d").arg(classes.path()).arg("-cp").arg(&jar).arg(&source),
        Duration::from_secs(120),
    );
    assert_client_passed("javac JdbcTest.java", &compiled);

    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let classpath = format!("{}:{}", classes.path().display(), jar.display());
    let output = run_client(
        Command::new("java").args(["-cp", &classpath, "JdbcTest", &server.port.to_string()]),
        Duration::from_secs(120),
    );
    let (run, defined) = assert_client_checks_passed("JdbcTest", &output);
    // Every check of the program ran: the per-mode checks in each of the 4 query modes.
    assert_eq!(run, defined, "every check of JdbcTest ran");
    let modes = ["[extended]", "[extendedForPrepared]", "[extendedCacheEverything]", "[simple]"];
    let stdout = String::from_utf8_lossy(&output.stdout);
    for mode in modes {
        assert!(
            stdout.lines().any(|l| l.starts_with("ok ") && l.contains(mode)),
            "no check ran in {mode}:\n{stdout}"
        );
    }
    assert!(server.terminate().success(), "clean shutdown after the JDBC checks");
}
