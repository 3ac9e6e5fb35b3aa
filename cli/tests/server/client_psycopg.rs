//! `redodb serve` driven by psycopg 3 (PyPI, unmodified): parameters of every type (ints
//! as binary int2/int4/int8, floats, text, bool, NULL, Decimal and ints beyond int8 as
//! numeric), NUMERIC(p,s) columns as Decimal, bytes as bytea, uuid.UUID, Json/Jsonb
//! and CHAR(n), each in text and binary both ways, row_to_json and json_agg of whole rows
//! as dicts, a record's text, Python lists as int[] and text[]
//! (`= ANY(%s)` with a list), executemany in pipeline mode with its row counts, server-side cursors
//! fetching itersize rows at a time, transactions and isolation levels, errors with
//! their SQLSTATE and recovery, `SET synchronous_commit`, COMMIT WRITE and ALTER SESSION
//! with psycopg's prepared statements (`_pg3_N`) kept, COPY FROM STDIN / TO STDOUT, the
//! `v$` views, a cancel, nested transactions (savepoints, with an error inside), RETURNING
//! (executemany with returning=True), pg_backend_pid(), set_config(), transactional SET
//! and libpq's `options`, data-modifying WITH prepared by name (described without
//! running) and LIKE ANY / SIMILAR TO with bound values. The checks are `cli/tests/clients/psycopg_test.py`, which
//! reports how many it ran: the test fails unless every one of its `check_*` functions
//! ran and passed. The packages are pinned in `cli/tests/clients/requirements.txt`
//! (installed by `scripts/test.sh`).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{assert_client_checks_passed, run_client, Server};

/// Fails (never skips) when psycopg is missing.
fn require_psycopg() {
    let found = Command::new("python3").args(["-c", "import psycopg"]).output();
    assert!(
        found.as_ref().is_ok_and(|o| o.status.success()),
        "psycopg 3 is needed by this test: python3 -m pip install -r cli/tests/clients/requirements.txt ({:?})",
        found.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
    );
}

#[test]
fn psycopg_runs_parameters_batches_cursors_transactions_errors_copy_and_views() {
    require_psycopg();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/psycopg_test.py");
    let output = run_client(
        Command::new("python3").arg(&script).args(["--port", &server.port.to_string()]),
        Duration::from_secs(120),
    );
    let (run, defined) = assert_client_checks_passed("psycopg_test.py", &output);
    // Every check_* function of the script ran, as counted here from its source.
    let source = std::fs::read_to_string(&script).unwrap();
    let in_source = source.lines().filter(|l| l.starts_with("def check_")).count() as u64;
    assert!(in_source > 0, "no check_ functions in {}", script.display());
    assert_eq!((run, defined), (in_source, in_source), "every check of the script ran");
    assert!(server.terminate().success(), "clean shutdown after the psycopg checks");
}
