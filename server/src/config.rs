//! The server's configuration: command-line flags over an optional TOML file over the
//! defaults, checked before anything is opened so that a bad value is reported by name.
//!
//! The file uses the flags' names with underscores:
//!
//! ```toml
//! data = "/var/lib/redodb"
//! listen = "127.0.0.1"
//! port = 5433
//! max_connections = 100
//! worker_threads = 2         # threads serving the connections [default: one per CPU]
//! client_send_timeout_ms = 60000 # a client that takes none of a reply's bytes for this
//!                             # long is disconnected, its transaction rolled back
//! log_level = "info"
//! log_buffer = "16M"          # bytes, or with a K, M or G suffix (powers of 1024)
//! log_parallelism = 1
//! log_file_size = "64M"       # fixed when the database is created
//! log_groups = 3              # fixed when the database is created
//! sync_method = "o_direct"    # fdatasync, o_dsync or o_direct
//! checkpoint_interval_ms = 60000
//! snapshot_interval_minutes = 15 # automatic AWR snapshots; 0 turns them off
//! snapshot_retention_days = 8    # older snapshots are removed; 0 keeps them all
//! tls_cert = "server.crt"     # PEM certificate chain; with tls_key, SSLRequest is accepted
//! tls_key = "server.key"      # PEM private key (paths relative to the working directory)
//! tls_required = false        # true: a client that does not ask for TLS is refused (28000)
//! tls_client_ca = "ca.crt"    # PEM CA certificates: clients must present a certificate
//!                             # they signed (TLS is then required: plain clients are refused)
//! metrics_port = 9187         # serve the wait interface at http://ADDR:PORT/metrics
//!                             # (Prometheus); 0: the system chooses [default: off]
//! metrics_listen = "0.0.0.0"  # address of the metrics endpoint [default: listen's]
//!
//! [auth]                      # see the `auth` module
//! method = "scram-sha-256"    # trust, md5 or scram-sha-256 (the default with users);
//!                             # without [auth], loopback clients are trusted, others refused
//! [auth.users]                # only in the file: never a password on the command line
//! alice = "a plain password"  # or a verifier as PostgreSQL stores it:
//! bob = "SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>"   # or "md5<hex>" (md5 only)
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use db::DbConfig;
use redo::{LogConfig, SyncMethod};
use serde::Deserialize;

use crate::auth::AuthConfig;
use crate::tls::TlsFiles;

pub const DEFAULT_LISTEN: &str = "127.0.0.1";
pub const DEFAULT_PORT: u16 = 5433;
pub const DEFAULT_MAX_CONNECTIONS: usize = 100;
/// A limit beyond any use this server has been measured for.
pub const MAX_MAX_CONNECTIONS: usize = 10_000;
/// The most worker threads `worker_threads` accepts.
pub const MAX_WORKER_THREADS: usize = 256;
/// The longest `client_send_timeout_ms` accepted: one day.
pub const MAX_CLIENT_SEND_TIMEOUT_MS: u64 = 86_400_000;
pub const DEFAULT_LOG_LEVEL: &str = "info";
const LOG_LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// A configuration value that is not allowed, named by its parameter.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid value {value:?} for parameter {parameter}: allowed {allowed}")]
    Invalid { parameter: &'static str, value: String, allowed: String },
    #[error("missing parameter {0}")]
    Missing(&'static str),
    #[error("reading the configuration file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("in the configuration file {path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("authentication settings ([auth]): {0}")]
    Auth(String),
}

/// A size in bytes, written as a number or with a K, M or G suffix (powers of 1024).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<ByteSize, String> {
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        let lower = lower.strip_suffix("ib").or_else(|| lower.strip_suffix('b')).unwrap_or(&lower);
        let (digits, unit) = match lower.char_indices().last() {
            Some((i, 'k')) => (&lower[..i], 1u64 << 10),
            Some((i, 'm')) => (&lower[..i], 1 << 20),
            Some((i, 'g')) => (&lower[..i], 1 << 30),
            _ => (lower, 1),
        };
        digits
            .trim()
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(unit))
            .map(ByteSize)
            .ok_or_else(|| format!("{text:?} is not a size (a number of bytes, or with a K, M or G suffix)"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<ByteSize, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => Ok(ByteSize(n)),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Every setting, each optional: one layer (the file, or the flags).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub data: Option<PathBuf>,
    pub listen: Option<String>,
    pub port: Option<u16>,
    pub max_connections: Option<usize>,
    pub worker_threads: Option<usize>,
    pub client_send_timeout_ms: Option<u64>,
    pub log_level: Option<String>,
    pub log_buffer: Option<ByteSize>,
    pub log_parallelism: Option<u32>,
    pub log_file_size: Option<ByteSize>,
    pub log_groups: Option<u32>,
    pub sync_method: Option<String>,
    pub checkpoint_interval_ms: Option<u64>,
    pub snapshot_interval_minutes: Option<u64>,
    pub snapshot_retention_days: Option<u64>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_required: Option<bool>,
    pub tls_client_ca: Option<PathBuf>,
    /// Signed, so that a negative or too large value is refused by name with the range
    /// allowed rather than by the TOML parser's type error.
    pub metrics_port: Option<i64>,
    pub metrics_listen: Option<String>,
    /// Only from the file: passwords do not belong on a command line.
    pub auth: Option<AuthSettings>,
}

/// The `[auth]` table of the configuration file.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    pub method: Option<String>,
    /// User name = secret (a password, or a verifier: see the `auth` module).
    #[serde(default)]
    pub users: BTreeMap<String, String>,
}

/// Never prints the secrets.
impl fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthSettings")
            .field("method", &self.method)
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Settings {
    /// Reads a TOML configuration file.
    pub fn from_file(path: &Path) -> Result<Settings, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        toml::from_str(&text)
            .map_err(|e| ConfigError::File { path: path.to_path_buf(), message: e.to_string() })
    }

    /// These settings, with each one `over` sets replaced by its value.
    pub fn overridden_by(self, over: Settings) -> Settings {
        Settings {
            data: over.data.or(self.data),
            listen: over.listen.or(self.listen),
            port: over.port.or(self.port),
            max_connections: over.max_connections.or(self.max_connections),
            worker_threads: over.worker_threads.or(self.worker_threads),
            client_send_timeout_ms: over.client_send_timeout_ms.or(self.client_send_timeout_ms),
            log_level: over.log_level.or(self.log_level),
            log_buffer: over.log_buffer.or(self.log_buffer),
            log_parallelism: over.log_parallelism.or(self.log_parallelism),
            log_file_size: over.log_file_size.or(self.log_file_size),
            log_groups: over.log_groups.or(self.log_groups),
            sync_method: over.sync_method.or(self.sync_method),
            checkpoint_interval_ms: over.checkpoint_interval_ms.or(self.checkpoint_interval_ms),
            snapshot_interval_minutes: over.snapshot_interval_minutes.or(self.snapshot_interval_minutes),
            snapshot_retention_days: over.snapshot_retention_days.or(self.snapshot_retention_days),
            tls_cert: over.tls_cert.or(self.tls_cert),
            tls_key: over.tls_key.or(self.tls_key),
            tls_required: over.tls_required.or(self.tls_required),
            tls_client_ca: over.tls_client_ca.or(self.tls_client_ca),
            metrics_port: over.metrics_port.or(self.metrics_port),
            metrics_listen: over.metrics_listen.or(self.metrics_listen),
            auth: over.auth.or(self.auth),
        }
    }

    /// The configuration these settings give, with the defaults for the ones not set,
    /// validated (the engine's ranges included).
    pub fn resolve(self) -> Result<ServerConfig, ConfigError> {
        let data_dir = self.data.ok_or(ConfigError::Missing("data (--data DIR)"))?;
        let listen_text = self.listen.unwrap_or_else(|| DEFAULT_LISTEN.to_string());
        let listen: IpAddr = listen_text.parse().map_err(|_| ConfigError::Invalid {
            parameter: "listen",
            value: listen_text.clone(),
            allowed: "an IP address such as 127.0.0.1, 0.0.0.0 or ::1".into(),
        })?;
        let max_connections = self.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if !(1..=MAX_MAX_CONNECTIONS).contains(&max_connections) {
            return Err(ConfigError::Invalid {
                parameter: "max_connections",
                value: max_connections.to_string(),
                allowed: format!("1 to {MAX_MAX_CONNECTIONS}"),
            });
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let worker_threads = self.worker_threads.unwrap_or(cpus);
        if !(1..=MAX_WORKER_THREADS).contains(&worker_threads) {
            return Err(ConfigError::Invalid {
                parameter: "worker_threads",
                value: worker_threads.to_string(),
                allowed: format!("1 to {MAX_WORKER_THREADS}"),
            });
        }
        let client_send_timeout_ms = self
            .client_send_timeout_ms
            .unwrap_or(crate::connection::DEFAULT_CLIENT_SEND_TIMEOUT.as_millis() as u64);
        if !(1..=MAX_CLIENT_SEND_TIMEOUT_MS).contains(&client_send_timeout_ms) {
            return Err(ConfigError::Invalid {
                parameter: "client_send_timeout_ms",
                value: client_send_timeout_ms.to_string(),
                allowed: format!("1 to {MAX_CLIENT_SEND_TIMEOUT_MS}"),
            });
        }
        let log_level = self.log_level.unwrap_or_else(|| DEFAULT_LOG_LEVEL.to_string()).to_ascii_lowercase();
        if !LOG_LEVELS.contains(&log_level.as_str()) {
            return Err(ConfigError::Invalid {
                parameter: "log_level",
                value: log_level,
                allowed: LOG_LEVELS.join(", "),
            });
        }
        let mut log = LogConfig::new(&data_dir);
        if let Some(size) = self.log_buffer {
            log.log_buffer = size.0;
        }
        if let Some(n) = self.log_parallelism {
            log.log_parallelism = n;
        }
        if let Some(size) = self.log_file_size {
            log.log_file_size = size.0;
        }
        if let Some(n) = self.log_groups {
            log.log_groups = n;
        }
        if let Some(method) = self.sync_method {
            log.sync_method = SyncMethod::parse(&method).ok_or_else(|| ConfigError::Invalid {
                parameter: "sync_method",
                value: method.clone(),
                allowed: SyncMethod::ALL.map(|m| m.name()).join(", "),
            })?;
        }
        log.validate().map_err(|e| ConfigError::Invalid {
            parameter: e.parameter,
            value: e.value,
            allowed: e.allowed,
        })?;
        let mut db = DbConfig { log, ..DbConfig::default() };
        if let Some(ms) = self.checkpoint_interval_ms {
            db.checkpoint_interval_ms = ms;
        }
        if let Some(minutes) = self.snapshot_interval_minutes {
            if minutes > MAX_SNAPSHOT_INTERVAL_MINUTES {
                return Err(ConfigError::Invalid {
                    parameter: "snapshot_interval_minutes",
                    value: minutes.to_string(),
                    allowed: format!("0 (off) to {MAX_SNAPSHOT_INTERVAL_MINUTES}"),
                });
            }
            db.snapshot_interval_minutes = minutes;
        }
        if let Some(days) = self.snapshot_retention_days {
            if days > MAX_SNAPSHOT_RETENTION_DAYS {
                return Err(ConfigError::Invalid {
                    parameter: "snapshot_retention_days",
                    value: days.to_string(),
                    allowed: format!("0 (keep all) to {MAX_SNAPSHOT_RETENTION_DAYS}"),
                });
            }
            db.snapshot_retention_days = days;
        }
        let client_ca = self.tls_client_ca;
        let tls = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key, client_ca: client_ca.clone() }),
            (None, None) if client_ca.is_some() => {
                return Err(ConfigError::Missing("tls_cert and tls_key (tls_client_ca is set)"))
            }
            (None, None) => None,
            (Some(_), None) => return Err(ConfigError::Missing("tls_key (tls_cert is set)")),
            (None, Some(_)) => return Err(ConfigError::Missing("tls_cert (tls_key is set)")),
        };
        // A client certificate comes only over TLS: asking for one means refusing the
        // clients that do not use TLS.
        let tls_required = match (self.tls_required, &client_ca) {
            (Some(false), Some(_)) => {
                return Err(ConfigError::Invalid {
                    parameter: "tls_required",
                    value: "false".into(),
                    allowed: "true (or unset) with tls_client_ca: client certificates need TLS".into(),
                })
            }
            (required, client_ca) => required.unwrap_or(client_ca.is_some()),
        };
        if tls_required && tls.is_none() {
            return Err(ConfigError::Invalid {
                parameter: "tls_required",
                value: "true".into(),
                allowed: "true only with tls_cert and tls_key".into(),
            });
        }
        let port = self.port.unwrap_or(DEFAULT_PORT);
        let metrics = metrics_address(self.metrics_port, self.metrics_listen, listen, port)?;
        let auth_settings = self.auth.unwrap_or_default();
        let auth = AuthConfig::new(auth_settings.method.as_deref(), &auth_settings.users)
            .map_err(ConfigError::Auth)?;
        Ok(ServerConfig {
            tls,
            tls_required,
            auth,
            data_dir,
            listen,
            port,
            metrics,
            max_connections,
            worker_threads,
            client_send_timeout: std::time::Duration::from_millis(client_send_timeout_ms),
            log_level,
            db,
            faults: Vec::new(),
            faults_armed_while: None,
        })
    }
}

/// A checked configuration.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    pub listen: IpAddr,
    /// 0 lets the system choose (the "listening" line tells which).
    pub port: u16,
    /// Where `/metrics` is served (`server::metrics`); None: not served (the default).
    /// Port 0 lets the system choose (the "metrics" line tells which).
    pub metrics: Option<SocketAddr>,
    pub max_connections: usize,
    /// Threads of the runtime that serves the connections (`server::worker`).
    pub worker_threads: usize,
    /// How long a reply waits for a client that takes none of its bytes.
    pub client_send_timeout: std::time::Duration,
    /// off, error, warn, info, debug or trace.
    pub log_level: String,
    /// The database's, automatic workload repository snapshots included.
    pub db: DbConfig,
    /// TLS certificate and key (None: SSLRequest is declined).
    pub tls: Option<TlsFiles>,
    /// Refuse clients that do not ask for TLS.
    pub tls_required: bool,
    pub auth: AuthConfig,
    /// I/O faults injected in front of the database's files, for tests of whole processes
    /// (`redodb serve` takes them from the `REDODB_FAULTS` environment variable; never
    /// from the configuration file). Empty: the real file system as it is.
    pub faults: Vec<redo::fault::Fault>,
    /// When set, `faults` apply only while this file exists (`REDODB_FAULTS_WHILE`): a
    /// test gives the space of a "full disk" back by removing it.
    pub faults_armed_while: Option<PathBuf>,
}

/// The metrics endpoint's address from `metrics_port` and `metrics_listen` (which defaults
/// to the server's `listen` address): None unless a port is set. The port may not be the
/// wire port on an address that overlaps the server's (the second bind would fail later,
/// with a less helpful message).
fn metrics_address(
    port_setting: Option<i64>,
    listen_setting: Option<String>,
    listen: IpAddr,
    wire_port: u16,
) -> Result<Option<SocketAddr>, ConfigError> {
    let Some(port) = port_setting else {
        return match listen_setting {
            Some(_) => Err(ConfigError::Missing("metrics_port (metrics_listen is set)")),
            None => Ok(None),
        };
    };
    let port = u16::try_from(port).map_err(|_| ConfigError::Invalid {
        parameter: "metrics_port",
        value: port.to_string(),
        allowed: "0 (the system chooses) to 65535".into(),
    })?;
    let address = match listen_setting {
        Some(text) => text.parse::<IpAddr>().map_err(|_| ConfigError::Invalid {
            parameter: "metrics_listen",
            value: text.clone(),
            allowed: "an IP address such as 127.0.0.1, 0.0.0.0 or ::1".into(),
        })?,
        None => listen,
    };
    let overlaps = address == listen || address.is_unspecified() || listen.is_unspecified();
    if port != 0 && port == wire_port && overlaps {
        return Err(ConfigError::Invalid {
            parameter: "metrics_port",
            value: port.to_string(),
            allowed: format!("a port other than the server's own (port = {wire_port}) on {address}"),
        });
    }
    Ok(Some(SocketAddr::new(address, port)))
}

/// A week of minutes, and ten years of days: beyond that a value is a mistake.
const MAX_SNAPSHOT_INTERVAL_MINUTES: u64 = 7 * 24 * 60;
const MAX_SNAPSHOT_RETENTION_DAYS: u64 = 3650;

#[cfg(test)]
mod tests {
    use super::*;

    fn with_data() -> Settings {
        Settings { data: Some("/tmp/redodb-test".into()), ..Settings::default() }
    }

    #[test]
    fn sizes_take_suffixes() {
        assert_eq!("65536".parse(), Ok(ByteSize(65536)));
        assert_eq!("64k".parse(), Ok(ByteSize(64 << 10)));
        assert_eq!("16M".parse(), Ok(ByteSize(16 << 20)));
        assert_eq!("1GiB".parse(), Ok(ByteSize(1 << 30)));
        assert!("lots".parse::<ByteSize>().is_err());
        assert!("99999999999999G".parse::<ByteSize>().is_err());
    }

    #[test]
    fn defaults_resolve() {
        let c = with_data().resolve().unwrap();
        assert_eq!(c.port, DEFAULT_PORT);
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.max_connections, DEFAULT_MAX_CONNECTIONS);
        assert_eq!(c.db.log.dir, PathBuf::from("/tmp/redodb-test"));
        assert_eq!(c.metrics, None, "no metrics endpoint unless a port is set");
    }

    #[test]
    fn the_metrics_endpoint_takes_its_port_and_address_from_the_settings() {
        let file: Settings = toml::from_str("metrics_port = 9187").unwrap();
        let c = file.overridden_by(with_data()).resolve().unwrap();
        assert_eq!(c.metrics, Some("127.0.0.1:9187".parse().unwrap()), "listen's address by default");
        let file: Settings = toml::from_str("listen = \"0.0.0.0\"\nmetrics_port = 0").unwrap();
        let c = file.overridden_by(with_data()).resolve().unwrap();
        assert_eq!(c.metrics, Some("0.0.0.0:0".parse().unwrap()));
        let file: Settings = toml::from_str("metrics_port = 5433\nmetrics_listen = \"::1\"").unwrap();
        let c = file.overridden_by(with_data()).resolve().unwrap();
        assert_eq!(c.metrics, Some("[::1]:5433".parse().unwrap()), "the wire port on another address");
    }

    #[test]
    fn a_bad_metrics_setting_is_refused_with_what_is_allowed() {
        let message = |s: Settings| s.resolve().unwrap_err().to_string();
        let too_large = message(Settings { metrics_port: Some(70_000), ..with_data() });
        assert!(too_large.contains("metrics_port") && too_large.contains("0 (the system chooses) to 65535"));
        assert!(message(Settings { metrics_port: Some(-1), ..with_data() }).contains("metrics_port"));
        let same = message(Settings { metrics_port: Some(5433), ..with_data() });
        assert!(same.contains("metrics_port") && same.contains("port = 5433"), "{same}");
        let without_port = message(Settings { metrics_listen: Some("0.0.0.0".into()), ..with_data() });
        assert!(without_port.contains("metrics_port (metrics_listen is set)"), "{without_port}");
        let bad_address =
            Settings { metrics_port: Some(9187), metrics_listen: Some("localhost".into()), ..with_data() };
        assert!(message(bad_address).contains("metrics_listen"));
    }

    #[test]
    fn flags_override_the_file() {
        let file: Settings =
            toml::from_str("port = 7000\nlog_buffer = \"1M\"\nlog_groups = 4\ndata = \"/a\"").unwrap();
        let flags = Settings { port: Some(7001), ..with_data() };
        let c = file.overridden_by(flags).resolve().unwrap();
        assert_eq!(c.port, 7001);
        assert_eq!(c.db.log.log_buffer, 1 << 20);
        assert_eq!(c.db.log.log_groups, 4);
        assert_eq!(c.data_dir, PathBuf::from("/tmp/redodb-test"));
        assert_eq!(c.client_send_timeout, crate::connection::DEFAULT_CLIENT_SEND_TIMEOUT);
        let file: Settings = toml::from_str("client_send_timeout_ms = 250").unwrap();
        let c = file.overridden_by(with_data()).resolve().unwrap();
        assert_eq!(c.client_send_timeout, std::time::Duration::from_millis(250));
    }

    #[test]
    fn bad_values_name_their_parameter() {
        let message = |s: Settings| s.resolve().unwrap_err().to_string();
        assert!(message(Settings { log_groups: Some(1), ..with_data() }).contains("log_groups"));
        assert!(message(Settings { log_buffer: Some(ByteSize(1000)), ..with_data() }).contains("log_buffer"));
        assert!(message(Settings { sync_method: Some("sometimes".into()), ..with_data() })
            .contains("sync_method"));
        assert!(message(Settings { max_connections: Some(0), ..with_data() }).contains("max_connections"));
        assert!(message(Settings { worker_threads: Some(0), ..with_data() }).contains("worker_threads"));
        assert!(message(Settings { worker_threads: Some(100_000), ..with_data() }).contains("1 to 256"));
        assert!(message(Settings { client_send_timeout_ms: Some(0), ..with_data() })
            .contains("client_send_timeout_ms"));
        assert!(message(Settings { listen: Some("localhost:1".into()), ..with_data() }).contains("listen"));
        assert!(message(Settings { log_level: Some("loud".into()), ..with_data() }).contains("log_level"));
        assert!(message(Settings::default()).contains("data"));
        assert!(message(Settings { tls_cert: Some("c.pem".into()), ..with_data() }).contains("tls_key"));
        assert!(message(Settings { tls_required: Some(true), ..with_data() }).contains("tls_required"));
        assert!(
            message(Settings { tls_client_ca: Some("ca.pem".into()), ..with_data() }).contains("tls_cert")
        );
        let with_tls = || Settings {
            tls_cert: Some("c.pem".into()),
            tls_key: Some("k.pem".into()),
            tls_client_ca: Some("ca.pem".into()),
            ..with_data()
        };
        assert!(with_tls().resolve().unwrap().tls_required, "client certificates require TLS");
        assert!(message(Settings { tls_required: Some(false), ..with_tls() }).contains("tls_client_ca"));
        let unknown = toml::from_str::<Settings>("prot = 1").unwrap_err().to_string();
        assert!(unknown.contains("prot"), "{unknown}");
    }
}

#[cfg(test)]
mod auth_tests {
    use super::*;
    use crate::auth::AuthMethod;

    #[test]
    fn auth_and_tls_come_from_the_file() {
        let file: Settings = toml::from_str(
            "data = \"/a\"\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\ntls_required = true\n\
             [auth]\nmethod = \"md5\"\n[auth.users]\nalice = \"secret\"\n",
        )
        .unwrap();
        assert!(!format!("{file:?}").contains("secret"), "secrets stay out of debug output");
        let c = file.resolve().unwrap();
        assert_eq!(c.auth.method, AuthMethod::Md5);
        assert!(c.tls_required);
        assert_eq!(c.tls, Some(TlsFiles { cert: "c.pem".into(), key: "k.pem".into(), client_ca: None }));
        let bad: Settings = toml::from_str("data = \"/a\"\n[auth]\nmethod = \"password\"\n").unwrap();
        assert!(bad.resolve().unwrap_err().to_string().contains("auth"));
        assert!(toml::from_str::<Settings>("[auth]\npasswords = 1").is_err(), "unknown keys in [auth]");
    }
}
