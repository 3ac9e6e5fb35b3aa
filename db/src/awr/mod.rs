//! The workload repository: snapshots of the system-wide counters and AWR-style reports
//! between two of them, read the way Oracle performance specialists read AWR (Load
//! Profile, Top 5 Timed Foreground Events, `log file sync` against `log file parallel
//! write`, the unit-of-work table of seed 000), with findings that state their figures.
//!
//! - `sample`: [`Sample`], everything a report needs at one instant, counters kept by
//!   name so new statistics, events and time-model entries need no format change;
//! - `repository`: snapshots stored durably under `<database dir>/awr/`, listing that
//!   skips damaged files, retention, and the automatic snapshotter thread (started by
//!   `Database::open` from `DbConfig`'s snapshot interval and retention);
//! - `interval`: the activity between two samples and what it means (load profile, top
//!   events, unit of work, findings);
//! - `text`, `html`: the two report formats; `html::escape` also serves the other HTML
//!   pages built on this crate (the bench's);
//! - `sql`: `EXEC DBMS_WORKLOAD_REPOSITORY.CREATE_SNAPSHOT` and the report functions as
//!   statements of a session.
//!
//! Counters live in memory and start at zero when the database opens, so a report can
//! only cover snapshots of one instance (one open of the database); a range that spans a
//! reopen is refused, as Oracle refuses one that spans a shutdown.

pub(crate) mod clock;
pub mod html;
mod interval;
mod repository;
mod sample;
mod sql;
mod text;

use std::path::PathBuf;
use std::sync::Arc;

pub use html::report_html;
pub use interval::{Finding, Interval};
pub(crate) use repository::start_auto_snapshots;
pub use repository::{
    awr_dir, list_snapshots, load_range, load_snapshot, purge_snapshots, take_snapshot, take_snapshot_in,
    AwrSettings, DamagedSnapshot, Snapshot, SnapshotInfo, SnapshotList, SnapshotterHandle, DEFAULT_INTERVAL,
    DEFAULT_RETENTION,
};
pub use sample::{sample, EventSample, HostInfo, Sample, SAMPLE_FORMAT_VERSION};
pub use sql::{parse_awr_call, AwrCall};
pub use text::{report_text, REPORT_SECTIONS};

/// What went wrong in the workload repository.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AwrError {
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("snapshot {id} does not exist in {} (snapshots available: {available})", dir.display())]
    UnknownSnapshot { id: u64, dir: PathBuf, available: String },
    #[error("snapshot {id} in {} is damaged: {reason}", path.display())]
    DamagedSnapshot { id: u64, path: PathBuf, reason: String },
    #[error("a report needs two snapshots, and {} holds {found}{hint}", dir.display())]
    NotEnoughSnapshots { dir: PathBuf, found: usize, hint: String },
    #[error("the begin snapshot ({begin}) must be older than the end snapshot ({end})")]
    BadRange { begin: u64, end: u64 },
    #[error(
        "snapshots {begin} and {end} belong to different instances ({reason}): the counters restart at \
         zero when the database opens, so a report must lie between two snapshots of one instance"
    )]
    InstanceRestarted { begin: u64, end: u64, reason: String },
    #[error("snapshots {begin} and {end} belong to different databases ({begin_db} and {end_db})")]
    DifferentDatabases { begin: u64, end: u64, begin_db: String, end_db: String },
    #[error("serializing snapshot {id}: {message}")]
    Serialize { id: u64, message: String },
    #[error("{0}")]
    BadCall(String),
}

impl AwrError {
    fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> AwrError {
        AwrError::Io { action, path: path.into(), source: Arc::new(source) }
    }

    /// The PostgreSQL SQLSTATE for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            AwrError::Io { .. } => "58030",
            AwrError::DamagedSnapshot { .. } => "XX001",
            AwrError::UnknownSnapshot { .. } | AwrError::BadRange { .. } | AwrError::BadCall(_) => "22023",
            AwrError::NotEnoughSnapshots { .. }
            | AwrError::InstanceRestarted { .. }
            | AwrError::DifferentDatabases { .. } => "55000",
            AwrError::Serialize { .. } => "XX000",
        }
    }
}

/// A database for the repository's unit tests: 1 MiB log files, no checkpoints, and no
/// automatic snapshots, so that every snapshot is one a test took.
#[cfg(test)]
pub(crate) fn open_test_database(dir: &std::path::Path) -> crate::Database {
    let mut log = redo::LogConfig::new(".");
    log.log_file_size = 1 << 20;
    log.log_buffer = 256 << 10;
    log.sync_method = redo::SyncMethod::Fdatasync;
    crate::Database::open(
        dir,
        crate::DbConfig {
            log,
            checkpoint_interval_ms: 0,
            snapshot_interval_minutes: 0,
            ..Default::default()
        },
    )
    .expect("open")
}
