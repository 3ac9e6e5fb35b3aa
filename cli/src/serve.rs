//! `redodb serve`: the PostgreSQL wire protocol server (the `server` crate). Flags
//! override the TOML file given with `--config`, which overrides the defaults.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args as ClapArgs;
use server::config::{ByteSize, Settings};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// TOML configuration file (keys as the flags, with underscores).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Database directory (created if missing).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1].
    #[arg(long)]
    listen: Option<String>,
    /// Port to listen on; 0 lets the system choose [default: 5433].
    #[arg(long)]
    port: Option<u16>,
    /// Connections served at once; more are refused with SQLSTATE 53300 [default: 100].
    #[arg(long)]
    max_connections: Option<usize>,
    /// Threads serving the connections (each serves many; a WAIT commit or a lock wait
    /// holds none) [default: one per CPU].
    #[arg(long)]
    worker_threads: Option<usize>,
    /// Milliseconds a reply waits for a client that takes none of its bytes; then the
    /// connection ends and its transaction rolls back [default: 60000].
    #[arg(long)]
    client_send_timeout_ms: Option<u64>,
    /// Log level on stderr: off, error, warn, info, debug, trace [default: info].
    #[arg(long)]
    log_level: Option<String>,
    /// Log buffer size (bytes, or with K/M/G) [default: 16M].
    #[arg(long)]
    log_buffer: Option<ByteSize>,
    /// Redo strands [default: 1].
    #[arg(long)]
    log_parallelism: Option<u32>,
    /// Size of each log file, fixed when the database is created [default: 64M].
    #[arg(long)]
    log_file_size: Option<ByteSize>,
    /// Number of log groups, fixed when the database is created [default: 3].
    #[arg(long)]
    log_groups: Option<u32>,
    /// fdatasync, o_dsync or o_direct [default: o_direct].
    #[arg(long)]
    sync_method: Option<String>,
    /// Checkpoint image interval in milliseconds; 0 only when the log needs one [default: 60000].
    #[arg(long)]
    checkpoint_interval_ms: Option<u64>,
    /// Minutes between automatic AWR snapshots; 0 turns them off [default: 15].
    #[arg(long)]
    snapshot_interval_minutes: Option<u64>,
    /// Days AWR snapshots are kept; 0 keeps them all [default: 8].
    #[arg(long)]
    snapshot_retention_days: Option<u64>,
    /// PEM certificate chain for TLS (with --tls-key); without, SSLRequest is declined.
    #[arg(long)]
    tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (with --tls-cert).
    #[arg(long)]
    tls_key: Option<PathBuf>,
    /// Refuse clients that do not use TLS [default: false]. Users and passwords
    /// (`[auth]`) are set in the --config file only.
    #[arg(long)]
    tls_required: Option<bool>,
    /// PEM CA certificates: every client must present a certificate signed by one of them
    /// (PostgreSQL's clientcert=verify-ca); TLS is then required.
    #[arg(long)]
    tls_client_ca: Option<PathBuf>,
    /// Serve the wait interface for Prometheus at http://ADDRESS:PORT/metrics; 0 lets the
    /// system choose [default: off].
    #[arg(long, allow_negative_numbers = true)]
    metrics_port: Option<i64>,
    /// Address of the metrics endpoint [default: the --listen address].
    #[arg(long)]
    metrics_listen: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let file = match &args.config {
        Some(path) => Settings::from_file(path)?,
        None => Settings::default(),
    };
    let flags = Settings {
        data: args.data,
        listen: args.listen,
        port: args.port,
        max_connections: args.max_connections,
        worker_threads: args.worker_threads,
        client_send_timeout_ms: args.client_send_timeout_ms,
        log_level: args.log_level,
        log_buffer: args.log_buffer,
        log_parallelism: args.log_parallelism,
        log_file_size: args.log_file_size,
        log_groups: args.log_groups,
        sync_method: args.sync_method,
        checkpoint_interval_ms: args.checkpoint_interval_ms,
        snapshot_interval_minutes: args.snapshot_interval_minutes,
        snapshot_retention_days: args.snapshot_retention_days,
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        tls_required: args.tls_required,
        tls_client_ca: args.tls_client_ca,
        metrics_port: args.metrics_port,
        metrics_listen: args.metrics_listen,
        auth: None,
    };
    let mut config = file.overridden_by(flags).resolve()?;
    // Faults for tests of the whole process (a failing sync, a full disk): never from the
    // configuration file, so no deployment turns them on by accident.
    if let Ok(spec) = std::env::var(FAULTS_VARIABLE) {
        config.faults = redo::fault::parse_faults(&spec).context(FAULTS_VARIABLE)?;
    }
    if let Some(trigger) = std::env::var_os(FAULTS_WHILE_VARIABLE).filter(|t| !t.is_empty()) {
        if config.faults.is_empty() {
            anyhow::bail!("{FAULTS_WHILE_VARIABLE} is set but {FAULTS_VARIABLE} names no fault to arm");
        }
        config.faults_armed_while = Some(trigger.into());
    }
    env_logger::Builder::new()
        .parse_filters(&config.log_level)
        .format_timestamp_millis()
        .target(env_logger::Target::Stderr)
        .init();
    match server::run(config) {
        Err(server::ServerError::InstanceTerminated(reason)) => {
            // Fail-stop: a supervisor restarts the server, and recovery decides from the
            // redo what survived. The exit code tells this apart from a failed start.
            eprintln!("redodb serve: the instance terminated: {reason}");
            std::process::exit(EXIT_INSTANCE_TERMINATED);
        }
        other => other.context("redodb serve"),
    }
}

/// The environment variable with the I/O faults to inject (`redo::fault` spec syntax).
pub const FAULTS_VARIABLE: &str = "REDODB_FAULTS";

/// The environment variable naming a file: while it exists the faults apply, once it is
/// removed they are lifted (a full disk that gets its space back).
pub const FAULTS_WHILE_VARIABLE: &str = "REDODB_FAULTS_WHILE";

/// The exit code of a server whose instance terminated (its redo log failed).
pub const EXIT_INSTANCE_TERMINATED: i32 = 3;
