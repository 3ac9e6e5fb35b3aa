//! Typed errors of the redo layer.
//!
//! Three kinds, as the style guide asks: the caller's mistake ([`RedoError::Config`],
//! [`RedoError::TransactionTooLarge`], [`RedoError::TooLarge`]), the environment
//! ([`RedoError::Io`], [`RedoError::LogFailed`]) and bad files ([`RedoError::Foreign`],
//! [`RedoError::Corruption`]). Once a write or sync of the log fails the log is latched as
//! failed: every later commit gets [`RedoError::LogFailed`] and nothing is acknowledged
//! until the database is reopened, which runs recovery. Apart from those,
//! [`RedoError::Interrupted`]: the session's own interrupt (a cancel or a deadline, see
//! `interrupt`) ended a wait that nothing depended on yet.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use crate::config::ConfigError;
use crate::interrupt::InterruptCause;
use crate::types::Lsn;

#[derive(Debug, Clone, thiserror::Error)]
pub enum RedoError {
    #[error(transparent)]
    Config(#[from] ConfigError),

    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: Arc<io::Error>,
    },

    #[error("the redo log has failed and accepts no more commits (reopen to recover): {0}")]
    LogFailed(Arc<LogFailure>),

    #[error("{path}: {detail}")]
    Foreign { path: PathBuf, detail: String },

    #[error("redo log corruption at {lsn} in {path}: {detail}")]
    Corruption { lsn: Lsn, path: PathBuf, detail: String },

    #[error("the parameter {parameter} is static: it is {current} in this database and cannot be changed to {requested}")]
    StaticParameter { parameter: &'static str, current: String, requested: String },

    #[error("transaction redo of {bytes} bytes exceeds the limit of {max} bytes (half a log file): commit in smaller transactions or enlarge log_file_size")]
    TransactionTooLarge { bytes: u64, max: u64 },

    #[error("record payload of {0} bytes exceeds the limit of {max} bytes", max = crate::format::RECORD_PAYLOAD_MAX)]
    TooLarge(usize),

    #[error("nothing to wait for: {0}")]
    NotIssued(String),

    #[error("the redo log is shut down")]
    Shutdown,

    /// The session's interrupt ended its wait before its commit reached the log buffer
    /// (see `interrupt`): the transaction is still open.
    #[error("{0}")]
    Interrupted(InterruptCause),

    /// Under `Scheduling::Driven`: the next log group still holds redo the last
    /// checkpoint needs, and the checkpoint hook could not free it (its image could not
    /// be written, for instance). The commit did not happen.
    #[error(
        "the next log group still holds redo the last checkpoint needs, and no checkpoint could free it"
    )]
    CheckpointIncomplete,
}

/// What made the log fail: the first failed write or sync, kept for every later error.
#[derive(Debug, thiserror::Error)]
#[error("{op} of {path} failed: {source}")]
pub struct LogFailure {
    pub op: &'static str,
    pub path: PathBuf,
    pub source: io::Error,
}

impl RedoError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> RedoError {
        RedoError::Io { op, path: path.into(), source: Arc::new(source) }
    }
}

pub type Result<T, E = RedoError> = std::result::Result<T, E>;
