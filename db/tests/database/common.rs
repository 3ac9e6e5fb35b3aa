//! Helpers shared by the database's integration tests.

use db::{Database, DbConfig};
use redo::{LogConfig, SyncMethod};

/// Small log files, fdatasync, checkpoints only when the log asks, and no automatic
/// snapshots.
pub fn config() -> DbConfig {
    let mut log = LogConfig::new(".");
    log.log_file_size = 1 << 20;
    log.log_buffer = 256 << 10;
    log.sync_method = SyncMethod::Fdatasync;
    DbConfig { log, checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..DbConfig::default() }
}

/// A database with [`config`].
pub fn open(dir: &std::path::Path) -> Database {
    Database::open(dir, config()).unwrap_or_else(|e| panic!("open: {e}"))
}

/// Runs `sql`, panicking with the statement and its error if it fails.
pub fn run(s: &mut db::Session, sql: &str) -> db::sql::QueryResult {
    s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The error `sql` fails with, panicking if it succeeds.
pub fn fails(s: &mut db::Session, sql: &str) -> db::DbError {
    match s.execute(sql, &[]) {
        Ok(r) => panic!("{sql} succeeded: {r:?}"),
        Err(e) => e,
    }
}

/// The rows `sql` returns, each value as its text.
pub fn cells(s: &mut db::Session, sql: &str) -> Vec<Vec<String>> {
    run(s, sql).rows().iter().map(|row| row.iter().map(|v| v.to_string()).collect()).collect()
}

/// The rows `sql` returns, each as its values' text joined by `|` (psql's `-A` form).
pub fn pipe_rows(s: &mut db::Session, sql: &str) -> Vec<String> {
    cells(s, sql).into_iter().map(|row| row.join("|")).collect()
}

/// The rows `sql` returns, each as its values' text joined by a space.
pub fn space_rows(s: &mut db::Session, sql: &str) -> Vec<String> {
    cells(s, sql).into_iter().map(|row| row.join(" ")).collect()
}

/// The one value `sql` returns, as its text.
pub fn one(s: &mut db::Session, sql: &str) -> String {
    let rows = cells(s, sql);
    assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
    rows[0][0].clone()
}
