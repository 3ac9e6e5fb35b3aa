//! Helpers shared by the database's integration tests.

use db::{Database, DbConfig};
use redo::{LogConfig, SyncMethod};

/// A database with small log files, fdatasync, and checkpoints only when the log asks.
pub fn open(dir: &std::path::Path) -> Database {
    let mut log = LogConfig::new(".");
    log.log_file_size = 1 << 20;
    log.log_buffer = 256 << 10;
    log.sync_method = SyncMethod::Fdatasync;
    Database::open(
        dir,
        DbConfig { log, checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..DbConfig::default() },
    )
    .unwrap_or_else(|e| panic!("open: {e}"))
}
