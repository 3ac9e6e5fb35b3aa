//! Parameters: Oracle's `SHOW PARAMETER` / `ALTER SESSION|SYSTEM SET` over the engine's
//! and the database's settings, plus PostgreSQL's `synchronous_commit`.
//!
//! Each parameter is static (fixed while the database is open), system-modifiable, or
//! session-and-system modifiable. A session sees its own value where it set one, else the
//! system's (so `SHOW PARAMETER` shows what this session's commits will do). Every bad
//! name, bad value or wrong scope is a clear error naming the parameter.

use std::sync::atomic::Ordering::SeqCst;

use redo::{CommitLogging, CommitWait};

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::sql::oracle::{parse_commit_write, ParamValue, Scope};

/// A parameter's type, as Oracle's SHOW PARAMETER names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    BigInteger,
    Boolean,
}

impl ParamType {
    pub fn name(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::BigInteger => "big integer",
            ParamType::Boolean => "boolean",
        }
    }
}

/// Who may change a parameter while the database is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutability {
    Static,
    SystemOnly,
    SessionAndSystem,
}

#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    pub name: &'static str,
    pub ty: ParamType,
    pub mutability: Mutability,
    pub description: &'static str,
}

use Mutability::*;

pub const PARAMETERS: &[ParamDef] = &[
    ParamDef {
        name: "batch_flush_buffer_divisor",
        ty: ParamType::Integer,
        mutability: SystemOnly,
        description: "background log write when unwritten redo exceeds log_buffer / this",
    },
    ParamDef {
        name: "batch_flush_bytes",
        ty: ParamType::BigInteger,
        mutability: SystemOnly,
        description: "background log write when unwritten redo exceeds this many bytes",
    },
    ParamDef {
        name: "batch_flush_timeout_ms",
        ty: ParamType::Integer,
        mutability: SystemOnly,
        description: "background log write this long after the last write (bounds the NOWAIT loss window)",
    },
    ParamDef {
        name: "call_commit_optimization",
        ty: ParamType::Boolean,
        mutability: SessionAndSystem,
        description: "commits inside one call wait once, at the end of the call",
    },
    ParamDef {
        name: "checkpoint_interval_ms",
        ty: ParamType::Integer,
        mutability: SystemOnly,
        description: "checkpoint image at least this often (0: only when the log needs a group)",
    },
    ParamDef {
        name: "commit_logging",
        ty: ParamType::String,
        mutability: SessionAndSystem,
        description: "IMMEDIATE or BATCH",
    },
    ParamDef {
        name: "commit_wait",
        ty: ParamType::String,
        mutability: SessionAndSystem,
        description: "WAIT, NOWAIT or FORCE_WAIT",
    },
    ParamDef {
        name: "commit_write",
        ty: ParamType::String,
        mutability: SessionAndSystem,
        description: "deprecated: use commit_logging and commit_wait",
    },
    ParamDef {
        name: "log_buffer",
        ty: ParamType::BigInteger,
        mutability: Static,
        description: "bytes of the redo log buffer",
    },
    ParamDef {
        name: "log_file_size",
        ty: ParamType::BigInteger,
        mutability: Static,
        description: "bytes of each online redo log file",
    },
    ParamDef {
        name: "log_groups",
        ty: ParamType::Integer,
        mutability: Static,
        description: "number of online redo log groups",
    },
    ParamDef {
        name: "log_members",
        ty: ParamType::Integer,
        mutability: Static,
        description: "members (mirrored copies) per log group",
    },
    ParamDef {
        name: "log_parallelism",
        ty: ParamType::Integer,
        mutability: Static,
        description: "public redo strands",
    },
    ParamDef {
        name: "log_sync_method",
        ty: ParamType::String,
        mutability: Static,
        description: "fdatasync, o_dsync or o_direct",
    },
    ParamDef {
        name: "statement_timeout",
        ty: ParamType::Integer,
        mutability: SessionAndSystem,
        description: "milliseconds a statement may run or wait before it is cancelled (57014); 0: no limit",
    },
    ParamDef {
        name: "timed_statistics",
        ty: ParamType::Boolean,
        mutability: SessionAndSystem,
        description: "time waits, commits and calls (FALSE: counted only, times 0, no clock reads)",
    },
];

/// The PostgreSQL version redodb answers as (`server_version`, and the start of
/// `version()`): clients choose their queries and protocol features by it.
pub const SERVER_VERSION: &str = "16.0";
/// `server_version_num`, the same version as a number.
pub const SERVER_VERSION_NUM: &str = "160000";

/// PostgreSQL's preset options that describe the server's build and that clients read
/// (PgJDBC's DatabaseMetaData reads `max_index_keys` from pg_settings; SQLAlchemy's
/// inspector compares a table's access method with `default_table_access_method`):
/// (name, value, description), fixed, as PostgreSQL's are for a build (redodb has one
/// table access method, `heap` in pg_am).
pub const PRESETS: [(&str, &str, &str); 6] = [
    ("block_size", "8192", "Shows the size of a disk block."),
    ("default_table_access_method", "heap", "Sets the default table access method for new tables."),
    ("integer_datetimes", "on", "Shows whether datetimes are integer based."),
    ("max_function_args", "100", "Shows the maximum number of function arguments."),
    ("max_identifier_length", "63", "Shows the maximum identifier length."),
    ("max_index_keys", "32", "Shows the maximum number of index keys."),
];

/// `version()`: in PostgreSQL's form ("PostgreSQL 16.0 ... on x86_64-..."), which tools
/// parse for the version, saying that redodb answers.
pub fn version() -> String {
    format!(
        "PostgreSQL {SERVER_VERSION} (redodb {}) on {}-{}, 64-bit",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

/// One of the parameters a session may set for itself (SET, ALTER SESSION).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SessionParameter {
    CommitWait,
    CommitLogging,
    CallCommitOptimization,
    TimedStatistics,
    StatementTimeout,
}

impl SessionParameter {
    pub const ALL: [SessionParameter; 5] = [
        SessionParameter::CommitWait,
        SessionParameter::CommitLogging,
        SessionParameter::CallCommitOptimization,
        SessionParameter::TimedStatistics,
        SessionParameter::StatementTimeout,
    ];

    /// The session parameters that `SET name` changes: `synchronous_commit` is
    /// commit_wait, the deprecated `commit_write` both commit settings; none for a name
    /// that is not a session parameter.
    pub fn set_by(name: &str) -> &'static [SessionParameter] {
        use SessionParameter::*;
        match name.to_ascii_lowercase().as_str() {
            "commit_wait" | "synchronous_commit" => &[CommitWait],
            "commit_logging" => &[CommitLogging],
            "commit_write" => &[CommitWait, CommitLogging],
            "call_commit_optimization" => &[CallCommitOptimization],
            "timed_statistics" => &[TimedStatistics],
            "statement_timeout" => &[StatementTimeout],
            _ => &[],
        }
    }
}

/// A session's own values of the parameters it may set, each None while the session
/// follows the system's value: taken and put back by a caller that undoes settings (a
/// wire server's transactional SET).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionParameters {
    pub commit_wait: Option<CommitWait>,
    pub commit_logging: Option<CommitLogging>,
    pub call_commit_optimization: Option<bool>,
    pub timed_statistics: Option<bool>,
    /// `statement_timeout` in milliseconds (0: none).
    pub statement_timeout_ms: Option<u64>,
}

impl SessionParameters {
    /// These values with `parameter`'s taken from `other`.
    pub fn with(mut self, parameter: SessionParameter, other: &SessionParameters) -> SessionParameters {
        match parameter {
            SessionParameter::CommitWait => self.commit_wait = other.commit_wait,
            SessionParameter::CommitLogging => self.commit_logging = other.commit_logging,
            SessionParameter::CallCommitOptimization => {
                self.call_commit_optimization = other.call_commit_optimization
            }
            SessionParameter::TimedStatistics => self.timed_statistics = other.timed_statistics,
            SessionParameter::StatementTimeout => self.statement_timeout_ms = other.statement_timeout_ms,
        }
        self
    }
}

pub const COMMIT_WRITE_DEPRECATED: &str =
    "COMMIT_WRITE is deprecated, use COMMIT_LOGGING and COMMIT_WAIT instead";

/// One row of SHOW PARAMETER / v$parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamRow {
    pub name: String,
    pub type_name: &'static str,
    pub value: String,
    pub modifiable: &'static str,
    pub description: &'static str,
}

fn definition(name: &str) -> DbResult<&'static ParamDef> {
    PARAMETERS.iter().find(|p| p.name == name).ok_or_else(|| DbError::UnknownParameter(name.to_string()))
}

fn invalid(parameter: &str, value: &str, allowed: &str) -> DbError {
    DbError::InvalidParameterValue {
        parameter: parameter.into(),
        value: value.into(),
        allowed: allowed.into(),
    }
}

fn parse_bool(parameter: &str, value: &str) -> DbResult<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err(invalid(parameter, value, "TRUE or FALSE")),
    }
}

/// The longest `statement_timeout` PostgreSQL takes (its `int` settings' limit).
const TIMEOUT_MAX_MS: u64 = i32::MAX as u64;

/// A time in PostgreSQL's form for a setting in milliseconds (`statement_timeout`): a
/// number, in milliseconds, or with a unit (`us`, `ms`, `s`, `min`, `h`, `d`; case
/// matters, as in PostgreSQL), fractions rounded to the nearest millisecond. 0 is off.
pub fn parse_timeout_ms(parameter: &str, value: &str) -> DbResult<u64> {
    const UNITS: [(&str, f64); 6] =
        [("us", 0.001), ("ms", 1.0), ("s", 1e3), ("min", 60e3), ("h", 3_600e3), ("d", 86_400e3)];
    let bad = || {
        invalid(
            parameter,
            value,
            "a number of milliseconds from 0 (off) to 2147483647, or with a unit: us, ms, s, min, h, d",
        )
    };
    let text = value.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let number: f64 = number.parse().map_err(|_| bad())?;
    let scale = if unit.is_empty() {
        1.0
    } else {
        UNITS.iter().find(|(name, _)| *name == unit).map(|(_, scale)| *scale).ok_or_else(bad)?
    };
    let ms = (number * scale).round();
    if !(0.0..=TIMEOUT_MAX_MS as f64).contains(&ms) {
        return Err(bad());
    }
    Ok(ms as u64)
}

/// A setting in milliseconds as PostgreSQL's SHOW prints it: in the largest unit that
/// holds it whole (`5s`, `1500ms`, `1min`), 0 without one.
pub fn format_timeout_ms(ms: u64) -> String {
    if ms == 0 {
        return "0".into();
    }
    let units = [("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000)];
    match units.iter().find(|(_, size)| ms.is_multiple_of(*size)) {
        Some((unit, size)) => format!("{}{unit}", ms / size),
        None => format!("{ms}ms"),
    }
}

fn parse_u64(parameter: &str, value: &str, min: u64, max: u64) -> DbResult<u64> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| invalid(parameter, value, &format!("an integer from {min} to {max}")))
}

impl Session {
    fn effective_wait(&self) -> CommitWait {
        let system = self.db.log().commit_wait();
        if system == CommitWait::ForceWait {
            return system;
        }
        self.redo.commit_settings().0.unwrap_or(system)
    }

    fn effective_logging(&self) -> CommitLogging {
        self.redo.commit_settings().1.unwrap_or_else(|| self.db.log().commit_logging())
    }

    /// Whether commits inside one call wait once at its end (session, else system).
    pub fn call_commit_optimization(&self) -> bool {
        self.call_commit_optimization.unwrap_or_else(|| self.db.call_commit_optimization.load(SeqCst))
    }

    /// The value of a parameter as this session sees it.
    pub fn parameter_value(&self, name: &str) -> DbResult<String> {
        let def = definition(&name.to_ascii_lowercase())?;
        let log = self.db.log();
        let config = log.config();
        let (divisor, bytes, timeout) = log.batch_triggers();
        Ok(match def.name {
            "batch_flush_buffer_divisor" => divisor.to_string(),
            "batch_flush_bytes" => bytes.to_string(),
            "batch_flush_timeout_ms" => timeout.to_string(),
            "call_commit_optimization" => {
                if self.call_commit_optimization() { "TRUE" } else { "FALSE" }.into()
            }
            "checkpoint_interval_ms" => self.db.checkpoint_interval_ms.load(SeqCst).to_string(),
            "commit_logging" => self.effective_logging().name().into(),
            "commit_wait" => self.effective_wait().name().into(),
            "commit_write" => format!("{},{}", self.effective_logging().name(), self.effective_wait().name()),
            "log_buffer" => config.log_buffer.to_string(),
            "log_file_size" => config.log_file_size.to_string(),
            "log_groups" => config.log_groups.to_string(),
            "log_members" => config.members().to_string(),
            "log_parallelism" => config.log_parallelism.to_string(),
            "log_sync_method" => config.sync_method.name().into(),
            "timed_statistics" => if self.redo.timed_statistics() { "TRUE" } else { "FALSE" }.into(),
            "statement_timeout" => self.statement_timeout_ms().to_string(),
            other => unreachable!("parameter {other} has a definition but no value"),
        })
    }

    /// SHOW PARAMETER [filter]: every parameter whose name contains `filter`
    /// (case-insensitive), by name.
    pub fn show_parameters(&self, filter: Option<&str>) -> Vec<ParamRow> {
        let filter = filter.map(|f| f.to_ascii_lowercase());
        PARAMETERS
            .iter()
            .filter(|p| filter.as_deref().is_none_or(|f| p.name.contains(f)))
            .map(|p| ParamRow {
                name: p.name.into(),
                type_name: p.ty.name(),
                value: self.parameter_value(p.name).expect("defined parameters have values"),
                modifiable: match p.mutability {
                    Static => "FALSE",
                    SystemOnly => "IMMEDIATE",
                    SessionAndSystem => "TRUE",
                },
                description: p.description,
            })
            .collect()
    }

    /// ALTER SESSION|SYSTEM SET name = value. Returns a warning for the client, if any
    /// (the deprecated commit_write).
    pub fn set_parameter(
        &mut self,
        scope: Scope,
        name: &str,
        value: &ParamValue,
    ) -> DbResult<Option<String>> {
        let name = name.to_ascii_lowercase();
        let def = definition(&name)?;
        match (def.mutability, scope) {
            (Static, _) => return Err(DbError::StaticParameter(name)),
            (SystemOnly, Scope::Session) => {
                return Err(DbError::InvalidParameterValue {
                    parameter: name,
                    value: value.text().into(),
                    allowed: "ALTER SYSTEM only (not ALTER SESSION)".into(),
                })
            }
            _ => {}
        }
        let text = value.text().trim().to_string();
        let default = matches!(value, ParamValue::Default);
        let log = self.db.log();
        match def.name {
            "commit_wait" => {
                let wait = if default {
                    None
                } else {
                    Some(
                        CommitWait::parse(&text)
                            .ok_or_else(|| invalid(&name, &text, "WAIT, NOWAIT or FORCE_WAIT"))?,
                    )
                };
                match scope {
                    Scope::Session => self.redo.set_commit_wait(wait),
                    Scope::System => log.set_commit_wait(wait.unwrap_or(CommitWait::Wait)),
                }
            }
            "commit_logging" => {
                let logging = if default {
                    None
                } else {
                    Some(
                        CommitLogging::parse(&text)
                            .ok_or_else(|| invalid(&name, &text, "IMMEDIATE or BATCH"))?,
                    )
                };
                match scope {
                    Scope::Session => self.redo.set_commit_logging(logging),
                    Scope::System => log.set_commit_logging(logging.unwrap_or(CommitLogging::Immediate)),
                }
            }
            "commit_write" => {
                let (wait, logging) = if default { (None, None) } else { parse_commit_write(&text)? };
                match scope {
                    Scope::Session => {
                        if wait.is_some() || default {
                            self.redo.set_commit_wait(wait);
                        }
                        if logging.is_some() || default {
                            self.redo.set_commit_logging(logging);
                        }
                    }
                    Scope::System => {
                        log.set_commit_wait(wait.unwrap_or(CommitWait::Wait));
                        log.set_commit_logging(logging.unwrap_or(CommitLogging::Immediate));
                    }
                }
                log::warn!("{COMMIT_WRITE_DEPRECATED} (commit_write = '{text}')");
                return Ok(Some(COMMIT_WRITE_DEPRECATED.to_string()));
            }
            "call_commit_optimization" => {
                let on = if default { None } else { Some(parse_bool(&name, &text)?) };
                match scope {
                    Scope::Session => self.call_commit_optimization = on,
                    Scope::System => self.db.call_commit_optimization.store(on.unwrap_or(true), SeqCst),
                }
            }
            "timed_statistics" => {
                let on = if default { None } else { Some(parse_bool(&name, &text)?) };
                match scope {
                    Scope::Session => self.redo.set_timed_statistics(on),
                    Scope::System => log.set_timed_statistics(on.unwrap_or(true)),
                }
            }
            "statement_timeout" => {
                let ms = if default { None } else { Some(parse_timeout_ms(&name, &text)?) };
                match scope {
                    Scope::Session => self.statement_timeout_ms = ms,
                    Scope::System => self.db.statement_timeout_ms.store(ms.unwrap_or(0), SeqCst),
                }
            }
            "checkpoint_interval_ms" => {
                let ms = if default { 60_000 } else { parse_u64(&name, &text, 0, 86_400_000)? };
                self.db.checkpoint_interval_ms.store(ms, SeqCst);
            }
            "batch_flush_buffer_divisor" | "batch_flush_bytes" | "batch_flush_timeout_ms" => {
                let (mut divisor, mut bytes, mut timeout) = log.batch_triggers();
                let defaults = redo::LogConfig::new(".");
                let v = |d: u64| if default { Ok(d) } else { parse_u64(&name, &text, 0, u64::MAX) };
                match def.name {
                    "batch_flush_buffer_divisor" => {
                        divisor = v(defaults.batch_flush_buffer_divisor as u64)? as u32
                    }
                    "batch_flush_bytes" => bytes = v(defaults.batch_flush_bytes)?,
                    _ => timeout = v(defaults.batch_flush_timeout_ms)?,
                }
                log.set_batch_triggers(divisor, bytes, timeout).map_err(|e| match e {
                    redo::RedoError::Config(c) => invalid(&name, &c.value, &c.allowed),
                    other => DbError::Redo(other),
                })?;
            }
            other => unreachable!("parameter {other} is modifiable but has no setter"),
        }
        Ok(None)
    }

    /// This session's own parameter values (see [`SessionParameters`]).
    pub fn session_parameters(&self) -> SessionParameters {
        let (commit_wait, commit_logging) = self.redo.commit_settings();
        SessionParameters {
            commit_wait,
            commit_logging,
            call_commit_optimization: self.call_commit_optimization,
            timed_statistics: self.redo.timed_statistics_setting(),
            statement_timeout_ms: self.statement_timeout_ms,
        }
    }

    /// Puts back parameter values taken with `session_parameters`.
    pub fn restore_session_parameters(&mut self, parameters: SessionParameters) {
        self.redo.set_commit_wait(parameters.commit_wait);
        self.redo.set_commit_logging(parameters.commit_logging);
        self.call_commit_optimization = parameters.call_commit_optimization;
        self.redo.set_timed_statistics(parameters.timed_statistics);
        self.statement_timeout_ms = parameters.statement_timeout_ms;
    }

    /// PostgreSQL's `SET name = value` on the database's parameters: `synchronous_commit`,
    /// or a parameter of this session (as ALTER SESSION SET, with the value as a word).
    /// The warning of the deprecated commit_write becomes a notice.
    pub fn set_setting(&mut self, name: &str, value: &str) -> DbResult<()> {
        if name.eq_ignore_ascii_case("synchronous_commit") {
            return self.set_synchronous_commit(value);
        }
        if name.eq_ignore_ascii_case("timezone") {
            return self.set_time_zone(value);
        }
        if name.eq_ignore_ascii_case("search_path") {
            self.set_search_path(value)?;
            self.client_settings.insert("search_path".into(), value.to_string());
            return Ok(());
        }
        if let Some(warning) =
            self.set_parameter(Scope::Session, name, &ParamValue::Word(value.to_string()))?
        {
            self.notices.push(crate::error::Notice::deprecated(warning));
        }
        Ok(())
    }

    /// PostgreSQL's `RESET name` on the database's parameters: back to the system's value.
    pub fn reset_setting(&mut self, name: &str) -> DbResult<()> {
        if name.eq_ignore_ascii_case("synchronous_commit") {
            return self.set_synchronous_commit("default");
        }
        if name.eq_ignore_ascii_case("timezone") {
            return self.set_time_zone("UTC");
        }
        if name.eq_ignore_ascii_case("search_path") {
            return self.set_setting(name, crate::namespaces::DEFAULT_SEARCH_PATH);
        }
        self.set_parameter(Scope::Session, name, &ParamValue::Default).map(|_| ())
    }

    /// `current_setting(name)` and `SHOW name` as PostgreSQL answers them: a setting the
    /// layer above keeps (`set_client_setting`), `synchronous_commit`, a parameter as this
    /// session sees it, or the server version; 42704 for another name.
    pub fn current_setting(&self, name: &str) -> DbResult<String> {
        let name = name.to_ascii_lowercase();
        if let Some(value) = self.client_settings.get(&name) {
            return Ok(value.clone());
        }
        match name.as_str() {
            "synchronous_commit" => Ok(self.synchronous_commit().to_string()),
            "search_path" => Ok(crate::namespaces::DEFAULT_SEARCH_PATH.to_string()),
            "statement_timeout" => Ok(format_timeout_ms(self.statement_timeout_ms())),
            "server_version" => Ok(SERVER_VERSION.to_string()),
            "server_version_num" => Ok(SERVER_VERSION_NUM.to_string()),
            preset if PRESETS.iter().any(|(n, ..)| *n == preset) => {
                Ok(PRESETS.iter().find(|(n, ..)| *n == preset).map_or("", |(_, v, _)| v).to_string())
            }
            _ => self.parameter_value(&name),
        }
    }

    /// Every setting `current_setting()` knows, by lowercase name, with its value now:
    /// what a call with a name that is not a constant (`current_setting(s.name)` over
    /// pg_settings, psql's `\dconfig`) looks its names up in.
    pub(crate) fn all_settings(&self) -> std::collections::BTreeMap<String, String> {
        let fixed = [
            "synchronous_commit",
            "search_path",
            "statement_timeout",
            "server_version",
            "server_version_num",
        ];
        let names = PARAMETERS
            .iter()
            .map(|p| p.name)
            .chain(PRESETS.iter().map(|(name, ..)| *name))
            .chain(fixed)
            .map(str::to_string)
            .chain(self.client_settings.keys().cloned());
        names
            .filter_map(|name| Some((name.to_ascii_lowercase(), self.current_setting(&name).ok()?)))
            .collect()
    }

    /// Tells the session the value of a setting the layer above keeps for its client (a
    /// wire server's application_name, DateStyle, ...), so that `current_setting()` reads
    /// it. The database does not check or use it.
    pub fn set_client_setting(&mut self, name: &str, value: &str) {
        let name = name.to_ascii_lowercase();
        if name == "timezone" {
            // The layer above checked it (`datetime::ZoneId::named`); a zone that is no
            // longer known leaves the session's as it was.
            if let Ok(zone) = crate::datetime::ZoneId::named(value) {
                self.zone = zone;
                zone.make_current();
            }
        }
        if name == "search_path" && self.set_search_path(value).is_err() {
            // The layer above checked its syntax (`namespaces::parse_search_path`).
            return;
        }
        self.client_settings.insert(name, value.to_string());
    }

    /// Sets the session's time zone (`SET TIME ZONE`, the `TimeZone` setting): an IANA
    /// name or hours east of UTC; anything else is 22023.
    pub fn set_time_zone(&mut self, name: &str) -> DbResult<()> {
        crate::datetime::ZoneId::named(name)?;
        self.set_client_setting("timezone", name.trim());
        Ok(())
    }

    /// PostgreSQL's `SET synchronous_commit`: on (and local, remote_write, remote_apply)
    /// means commit_wait WAIT for this session, off means NOWAIT.
    pub fn set_synchronous_commit(&mut self, value: &str) -> DbResult<()> {
        let wait = match value.trim().to_ascii_lowercase().as_str() {
            "on" | "true" | "yes" | "1" | "local" | "remote_write" | "remote_apply" => CommitWait::Wait,
            "off" | "false" | "no" | "0" => CommitWait::NoWait,
            "default" => {
                self.redo.set_commit_wait(None);
                return Ok(());
            }
            _ => {
                return Err(invalid(
                    "synchronous_commit",
                    value,
                    "on, off, local, remote_write or remote_apply",
                ))
            }
        };
        self.redo.set_commit_wait(Some(wait));
        Ok(())
    }

    /// PostgreSQL's `SHOW synchronous_commit`.
    pub fn synchronous_commit(&self) -> &'static str {
        if self.effective_wait() == CommitWait::NoWait {
            "off"
        } else {
            "on"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_postgresql_reads_them() {
        let ms = |v: &str| parse_timeout_ms("statement_timeout", v);
        assert_eq!(ms("0").unwrap(), 0);
        assert_eq!(ms("250").unwrap(), 250);
        assert_eq!(ms(" 5s ").unwrap(), 5_000);
        assert_eq!(ms("1.5s").unwrap(), 1_500);
        assert_eq!(ms("2 min").unwrap(), 120_000);
        assert_eq!(ms("1h").unwrap(), 3_600_000);
        assert_eq!(ms("1d").unwrap(), 86_400_000);
        assert_eq!(ms("1500us").unwrap(), 2);
        assert_eq!(ms("2147483647").unwrap(), 2_147_483_647);
        for bad in ["", "-1", "5 seconds", "5S", "abc", "2147483648", "25d", "1..5s"] {
            let e = ms(bad).expect_err(bad);
            assert_eq!(e.sqlstate(), "22023", "{bad}: {e}");
        }
    }

    #[test]
    fn timeouts_show_in_the_largest_whole_unit() {
        assert_eq!(format_timeout_ms(0), "0");
        assert_eq!(format_timeout_ms(250), "250ms");
        assert_eq!(format_timeout_ms(1_500), "1500ms");
        assert_eq!(format_timeout_ms(5_000), "5s");
        assert_eq!(format_timeout_ms(120_000), "2min");
        assert_eq!(format_timeout_ms(7_200_000), "2h");
        assert_eq!(format_timeout_ms(86_400_000), "1d");
    }
}
