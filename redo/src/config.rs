//! Configuration of the redo log: one validated type with Oracle's defaults.
//!
//! Parameters are either static (fixed when the log is opened: sizes, counts, file
//! places, the sync method) or dynamic (the commit defaults and the background write
//! triggers, changeable at runtime through [`crate::RedoLog`]). Validation names the
//! parameter and the allowed range in every error.

use std::path::PathBuf;

use crate::format::BLOCK_BYTES;

/// `commit_wait`: whether a commit returns only once its redo is durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CommitWait {
    /// Return when the commit and every earlier commit are durable.
    Wait,
    /// Return once the redo is in the log buffer; a crash may lose it.
    NoWait,
    /// As `Wait`, and overrides NOWAIT asked for at lower levels (system > session >
    /// statement).
    ForceWait,
}

/// `commit_logging`: whether a commit posts the log writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CommitLogging {
    /// Post the log writer now.
    Immediate,
    /// Leave the redo buffered until someone else's write or a background trigger.
    Batch,
}

impl CommitWait {
    pub fn name(self) -> &'static str {
        match self {
            CommitWait::Wait => "WAIT",
            CommitWait::NoWait => "NOWAIT",
            CommitWait::ForceWait => "FORCE_WAIT",
        }
    }

    pub fn parse(text: &str) -> Option<CommitWait> {
        match text.trim().to_ascii_uppercase().as_str() {
            "WAIT" => Some(CommitWait::Wait),
            "NOWAIT" => Some(CommitWait::NoWait),
            "FORCE_WAIT" => Some(CommitWait::ForceWait),
            _ => None,
        }
    }
}

impl CommitLogging {
    pub fn name(self) -> &'static str {
        match self {
            CommitLogging::Immediate => "IMMEDIATE",
            CommitLogging::Batch => "BATCH",
        }
    }

    pub fn parse(text: &str) -> Option<CommitLogging> {
        match text.trim().to_ascii_uppercase().as_str() {
            "IMMEDIATE" => Some(CommitLogging::Immediate),
            "BATCH" => Some(CommitLogging::Batch),
            _ => None,
        }
    }
}

/// How the log writer makes a write durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncMethod {
    /// `pwritev` then `fdatasync`.
    Fdatasync,
    /// Files opened with `O_DSYNC`: each `pwritev` returns once durable.
    Dsync,
    /// `O_DIRECT | O_DSYNC` with block-aligned buffers: no page cache copy.
    DirectDsync,
}

impl SyncMethod {
    pub const ALL: [SyncMethod; 3] = [SyncMethod::Fdatasync, SyncMethod::Dsync, SyncMethod::DirectDsync];

    pub fn name(self) -> &'static str {
        match self {
            SyncMethod::Fdatasync => "fdatasync",
            SyncMethod::Dsync => "o_dsync",
            SyncMethod::DirectDsync => "o_direct",
        }
    }

    pub fn parse(text: &str) -> Option<SyncMethod> {
        SyncMethod::ALL.into_iter().find(|m| m.name().eq_ignore_ascii_case(text.trim()))
    }
}

/// What to do when the database directory holds no database yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    CreateIfMissing,
    MustExist,
}

#[derive(Clone, Debug)]
pub struct LogConfig {
    /// Directory of the control file and of the first member of every group.
    pub dir: PathBuf,
    /// Directories of the members 2..M of every group (mirrored copies); empty for M = 1.
    pub mirror_dirs: Vec<PathBuf>,
    pub open_mode: OpenMode,
    /// Number of log groups (static, fixed at creation).
    pub log_groups: u32,
    /// Size of each log file in bytes (static, fixed at creation).
    pub log_file_size: u64,
    /// Size of the log buffer in bytes (static).
    pub log_buffer: u64,
    /// Number of public strands sessions copy redo through concurrently (static).
    pub log_parallelism: u32,
    pub sync_method: SyncMethod,
    /// System default for `commit_wait` (dynamic).
    pub commit_wait: CommitWait,
    /// System default for `commit_logging` (dynamic).
    pub commit_logging: CommitLogging,
    /// Background write when the unwritten redo exceeds `log_buffer / divisor` (dynamic).
    pub batch_flush_buffer_divisor: u32,
    /// Background write when the unwritten redo exceeds this many bytes (dynamic).
    pub batch_flush_bytes: u64,
    /// Background write when this long has passed since the last write (dynamic). This
    /// bounds how long a NOWAIT commit can stay buffered: its loss window.
    pub batch_flush_timeout_ms: u64,
    /// System default for `timed_statistics` (dynamic): whether waits, commit response
    /// times and the log writer's time model are timed. Counts are kept either way (see
    /// `stats`).
    pub timed_statistics: bool,
    /// Who does the log's background work (static).
    pub scheduling: Scheduling,
}

/// Who does the log's background work: writing, opening the next log group, mirrored
/// members' writes, and (in the database) checkpoints and snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduling {
    /// Background threads (LGWR, one writer per mirrored member), woken when there is
    /// work: what a database runs with.
    Background,
    /// No background thread: the caller drives. `RedoLog::run_writer` does LGWR's work;
    /// a session that must wait for work nobody else will do does it itself (the write
    /// its WAIT commit needs, ring space, opening the next group, and the checkpoint the
    /// next group needs, through `RedoLog::set_checkpoint_hook`); mirrored members are
    /// written one after the other. One thread then gives one schedule: the deterministic
    /// simulation runs the database so, and a seed replays exactly.
    Driven,
}

pub const DEFAULT_SYNC_METHOD: SyncMethod = SyncMethod::DirectDsync;

impl LogConfig {
    /// Oracle's defaults, in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> LogConfig {
        LogConfig {
            dir: dir.into(),
            mirror_dirs: Vec::new(),
            open_mode: OpenMode::CreateIfMissing,
            log_groups: 3,
            log_file_size: 64 << 20,
            log_buffer: 16 << 20,
            log_parallelism: 1,
            sync_method: DEFAULT_SYNC_METHOD,
            commit_wait: CommitWait::Wait,
            commit_logging: CommitLogging::Immediate,
            batch_flush_buffer_divisor: 3,
            batch_flush_bytes: 1 << 20,
            batch_flush_timeout_ms: 3000,
            timed_statistics: true,
            scheduling: Scheduling::Background,
        }
    }

    /// Members per group.
    pub fn members(&self) -> u32 {
        1 + self.mirror_dirs.len() as u32
    }

    pub fn member_dir(&self, member: u32) -> &PathBuf {
        if member == 0 {
            &self.dir
        } else {
            &self.mirror_dirs[member as usize - 1]
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        check_range("log_groups", self.log_groups as u64, 2, 64)?;
        check_range("log_file_size", self.log_file_size, 64 << 10, 64 << 30)?;
        check_multiple("log_file_size", self.log_file_size, BLOCK_BYTES)?;
        check_range("log_buffer", self.log_buffer, 64 << 10, 1 << 30)?;
        check_multiple("log_buffer", self.log_buffer, BLOCK_BYTES)?;
        check_range("log_parallelism", self.log_parallelism as u64, 1, 64)?;
        check_range("log_members", self.members() as u64, 1, 8)?;
        check_range("batch_flush_buffer_divisor", self.batch_flush_buffer_divisor as u64, 2, 100)?;
        check_range("batch_flush_bytes", self.batch_flush_bytes, 4096, 1 << 30)?;
        check_range("batch_flush_timeout_ms", self.batch_flush_timeout_ms, 1, 600_000)?;
        if self.log_buffer > self.log_file_size {
            return Err(ConfigError {
                parameter: "log_buffer",
                value: self.log_buffer.to_string(),
                allowed: format!("at most log_file_size ({})", self.log_file_size),
            });
        }
        let mut dirs: Vec<&PathBuf> = vec![&self.dir];
        for d in &self.mirror_dirs {
            if dirs.contains(&d) {
                return Err(ConfigError {
                    parameter: "mirror_dirs",
                    value: d.display().to_string(),
                    allowed: "distinct directories, one per member".into(),
                });
            }
            dirs.push(d);
        }
        Ok(())
    }
}

fn check_range(parameter: &'static str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if value < min || value > max {
        return Err(ConfigError { parameter, value: value.to_string(), allowed: format!("{min} to {max}") });
    }
    Ok(())
}

fn check_multiple(parameter: &'static str, value: u64, unit: u64) -> Result<(), ConfigError> {
    if !value.is_multiple_of(unit) {
        return Err(ConfigError {
            parameter,
            value: value.to_string(),
            allowed: format!("a multiple of {unit}"),
        });
    }
    Ok(())
}

/// A parameter with a value outside what it allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value {value} for parameter {parameter}: allowed {allowed}")]
pub struct ConfigError {
    pub parameter: &'static str,
    pub value: String,
    pub allowed: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        LogConfig::new("/tmp/x").validate().unwrap();
    }

    #[test]
    fn bad_values_name_the_parameter_and_range() {
        let mut c = LogConfig::new("/tmp/x");
        c.log_groups = 1;
        let e = c.validate().unwrap_err();
        assert_eq!(e.parameter, "log_groups");
        assert!(e.to_string().contains("2 to 64"), "{e}");

        let mut c = LogConfig::new("/tmp/x");
        c.log_buffer = 100_000;
        assert_eq!(c.validate().unwrap_err().parameter, "log_buffer");

        let mut c = LogConfig::new("/tmp/x");
        c.log_parallelism = 0;
        assert_eq!(c.validate().unwrap_err().parameter, "log_parallelism");

        let mut c = LogConfig::new("/tmp/x");
        c.mirror_dirs = vec!["/tmp/x".into()];
        assert_eq!(c.validate().unwrap_err().parameter, "mirror_dirs");
    }

    #[test]
    fn names_parse_back() {
        for m in SyncMethod::ALL {
            assert_eq!(SyncMethod::parse(m.name()), Some(m));
        }
        assert_eq!(CommitWait::parse("nowait"), Some(CommitWait::NoWait));
        assert_eq!(CommitWait::parse("force_wait"), Some(CommitWait::ForceWait));
        assert_eq!(CommitLogging::parse("Batch"), Some(CommitLogging::Batch));
        assert_eq!(CommitLogging::parse("later"), None);
    }
}
