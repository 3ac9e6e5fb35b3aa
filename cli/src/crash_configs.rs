//! The database configurations of the crash-test workloads. The child processes
//! (`crash-workload`, `db-crash-workload`) and the tests that kill them and reopen their
//! files both use these: the tests include this file with `#[path]`, so the two sides can
//! never disagree.

use std::path::PathBuf;

use db::DbConfig;
use redo::{LogConfig, SyncMethod};

/// The redo engine's: small files so that log switches and checkpoints happen.
pub fn crash_config(
    dir: PathBuf,
    mirror: Option<PathBuf>,
    strands: u32,
    sync_method: SyncMethod,
) -> LogConfig {
    let mut c = LogConfig::new(dir);
    c.log_groups = 3;
    c.log_file_size = 1 << 20;
    c.log_buffer = 256 << 10;
    c.log_parallelism = strands;
    c.sync_method = sync_method;
    c.batch_flush_timeout_ms = 50;
    c.mirror_dirs = mirror.into_iter().collect();
    c
}

/// The database's: small files and checkpoint images every 100 ms, so kills land during
/// checkpoints too.
pub fn db_crash_config() -> DbConfig {
    let mut log = LogConfig::new(".");
    log.log_groups = 3;
    log.log_file_size = 256 << 10;
    log.log_buffer = 64 << 10;
    log.sync_method = SyncMethod::Fdatasync;
    log.batch_flush_timeout_ms = 50;
    DbConfig { log, checkpoint_interval_ms: 100, snapshot_interval_minutes: 0, ..DbConfig::default() }
}
