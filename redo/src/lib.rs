//! redodb's redo log engine: private redo, a log buffer with public strands, a log writer
//! with group commit, Oracle's commit write facility, multiplexed log groups with switches
//! and checkpoints, and crash recovery. It knows nothing of SQL or the network.
//!
//! Start at [`RedoLog::open`] and [`LogSession::commit`]; the module docs of `buffer`,
//! `writer`, `format` and `recovery` give the invariants of each step.

pub mod blocking;
mod buffer;
pub mod clock;
pub mod config;
mod durable;
pub mod error;
pub mod fault;
pub mod format;
pub mod interrupt;
mod log;
pub mod recovery;
mod signal;
pub mod sim;
pub mod stats;
pub mod storage;
pub mod types;
mod writer;

pub use buffer::CommitBacklog;
pub use config::{CommitLogging, CommitWait, ConfigError, LogConfig, OpenMode, Scheduling, SyncMethod};
pub use durable::DurableWait;
pub use error::{LogFailure, RedoError, Result};
pub use interrupt::{Interrupt, InterruptCause};
pub use log::{
    CheckpointHook, CommitOptions, CommitReceipt, LogSession, LogStatus, LogSwitch, MemberInfo, MemberState,
    Recovered, RedoLog, RedoSavepoint,
};
pub use recovery::{RecoveredTxn, RecoveryReport, StopReason};
pub use stats::{Stat, StatsSnapshot, WaitClass, WaitEvent};
pub use types::{LogSeq, Lsn, Scn, TxnId};
