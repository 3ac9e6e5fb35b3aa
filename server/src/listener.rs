//! The server's life: open the database (recovery runs before anyone can connect),
//! listen, serve connections until SIGTERM or SIGINT, then shut down: stop accepting,
//! let the calls in flight finish (for at most [`DRAIN_TIMEOUT`], then cancel those
//! still running), drop every session (rolling back open transactions), take a
//! checkpoint (which makes every commit durable first) and stop the log. A final
//! checkpoint that cannot be written (a full disk) ends the process with its error; the
//! redo holds every commit, and the next start recovers them.
//!
//! The TLS certificate and key are read before the database is opened: a bad file stops
//! the start at once, with its name. The metrics endpoint (`metrics`), when configured, is
//! bound before the server says it listens, so a port in use stops the start too.
//!
//! Fail-stop: when the database's instance terminates (its redo log failed, see
//! `Database::termination`), the server stops at once without a checkpoint: every
//! connection gets a FATAL error naming the failure (the answer of any call in flight is
//! dropped), and `run` returns [`ServerError::InstanceTerminated`] so that the process
//! exits non-zero and its supervisor restarts it; the restart's recovery decides from the
//! redo what survived.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use db::{Database, DbError};
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::auth::AuthMethod;
use crate::config::ServerConfig;
use crate::connection::{self, ServerContext};
use crate::metrics::MetricsEndpoint;

/// How long shutdown waits for the calls in flight, then for the sessions to end.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long shutdown waits for the calls it cancelled after `DRAIN_TIMEOUT`.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("creating the data directory {path}: {source}")]
    DataDir { path: std::path::PathBuf, source: std::io::Error },
    #[error("opening the database: {0}")]
    Open(DbError),
    #[error("listening on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("serving metrics on {addr} (metrics_port, metrics_listen): {source}")]
    MetricsBind { addr: SocketAddr, source: std::io::Error },
    #[error("final checkpoint: {0}")]
    Checkpoint(DbError),
    #[error("the instance terminated: {0}")]
    InstanceTerminated(db::Termination),
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Runs the server until a termination signal; returns once the database is closed.
/// How long a thread a sleeping session borrowed (`worker`) stays once idle. Tokio's
/// default, 10 s, keeps the pool at the peak of a burst of sleepers for as long as sleeps
/// keep coming: a waking sleep picks any idle thread, so under a steady trickle of lock
/// waits every thread is reused before 10 s pass and none ever exits. Each of those
/// threads runs sessions in its turn and keeps allocator pages of its own (about 3 MiB
/// each in the soak), so the server's RSS stayed at the burst's level for a whole
/// life (10 -> 13 threads, 80 -> 110 MiB). A new thread costs tens of microseconds,
/// nothing next to a lock wait.
const SPARE_THREAD_KEEP_ALIVE: Duration = Duration::from_secs(1);

pub fn run(config: ServerConfig) -> Result<(), ServerError> {
    let tls = config.tls.as_ref().map(crate::tls::load).transpose()?;
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|source| ServerError::DataDir { path: config.data_dir.clone(), source })?;
    let storage: Arc<dyn redo::storage::Storage> = if config.faults.is_empty() {
        Arc::new(redo::storage::FileStorage)
    } else {
        let storage = redo::fault::FaultyStorage::new(config.faults.clone());
        match &config.faults_armed_while {
            None => {
                log::warn!("injecting I/O faults into the database's files: {:?}", config.faults);
                Arc::new(storage)
            }
            Some(trigger) => {
                log::warn!(
                    "injecting I/O faults into the database's files while {} exists: {:?}",
                    trigger.display(),
                    config.faults
                );
                Arc::new(storage.armed_while(trigger))
            }
        }
    };
    let db = Arc::new(
        Database::open_with(&config.data_dir, config.db.clone(), storage).map_err(ServerError::Open)?,
    );
    let report = db.recovery_report();
    log::info!(
        "database {} open: recovered to commit {}, {} commits replayed after the checkpoint image",
        config.data_dir.display(),
        report.last_scn,
        db.replayed_commits()
    );
    // Every connection is a task on these workers (see `worker` for why, and for how a
    // session that must sleep gives its worker away first: each sleeper borrows a thread).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.worker_threads)
        .enable_all()
        .thread_name("redodb-net")
        .thread_keep_alive(SPARE_THREAD_KEEP_ALIVE)
        .build()?;
    let served = runtime.block_on(serve(&config, db.clone(), tls));
    runtime.shutdown_timeout(Duration::from_secs(1));
    // Automatic AWR snapshots (started by the open) end before the final checkpoint.
    db.stop_auto_snapshots();
    served?;
    if let Some(reason) = db.termination() {
        // Terminated while shutting down: no checkpoint of a state that may hold commits
        // whose durability is unknown.
        return Err(ServerError::InstanceTerminated(reason));
    }
    // Every commit durable, then an image, so that the next start replays nothing.
    db.checkpoint().map_err(ServerError::Checkpoint)?;
    db.log().shutdown().map_err(|e| ServerError::Checkpoint(e.into()))?;
    log::info!("database closed");
    Ok(())
}

async fn serve(
    config: &ServerConfig,
    db: Arc<Database>,
    tls: Option<crate::tls::Tls>,
) -> Result<(), ServerError> {
    let addr = SocketAddr::new(config.listen, config.port);
    let listener = TcpListener::bind(addr).await.map_err(|source| ServerError::Bind { addr, source })?;
    // Bound before the "listening" line, so that a metrics port in use stops the start.
    let metrics_listener = match config.metrics {
        Some(addr) => {
            Some(TcpListener::bind(addr).await.map_err(|source| ServerError::MetricsBind { addr, source })?)
        }
        None => None,
    };
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    log_security(config);
    let context = Arc::new(
        ServerContext::new(db, config.max_connections)
            .with_security(config.auth.clone(), tls, config.tls_required)
            .with_client_send_timeout(config.client_send_timeout)
            .with_foreground_log_writes(config.worker_threads >= 2),
    );
    let (shutdown_sender, shutdown) = watch::channel(false);
    let mut stdout = std::io::stdout().lock();
    let metrics = match metrics_listener {
        Some(metrics_listener) => {
            // Before the "listening" line, so that whoever waits for that one has this too.
            writeln!(stdout, "redodb metrics on {}", crate::metrics::url(metrics_listener.local_addr()?))?;
            Some(MetricsEndpoint::start(metrics_listener, context.db.clone()))
        }
        None => None,
    };
    // The line scripts and tests wait for.
    writeln!(stdout, "redodb listening on {}", listener.local_addr()?)?;
    stdout.flush()?;
    drop(stdout);

    let mut connections = JoinSet::new();
    // How often the instance is checked for termination (two atomic loads).
    let mut watch_instance = tokio::time::interval(Duration::from_millis(20));
    let mut terminated = None;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let (context, shutdown) = (context.clone(), shutdown.clone());
                    connections.spawn(async move {
                        if let Err(e) = connection::serve(stream, context, shutdown).await {
                            log::warn!("connection from {peer}: {e}");
                        }
                    });
                }
                Err(e) => {
                    // Out of file descriptors, for example: try again shortly.
                    log::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = watch_instance.tick() => {
                terminated = context.db.termination();
                if terminated.is_some() {
                    break;
                }
            }
        }
    }
    if let Some(reason) = terminated {
        log::error!(
            "stopping the server without a checkpoint: {} connections get a FATAL error",
            connections.len()
        );
        drop(listener);
        let _ = shutdown_sender.send(true);
        // The connections send their FATAL error and end; none waits for a client long.
        let closed =
            tokio::time::timeout(DRAIN_TIMEOUT, async { while connections.join_next().await.is_some() {} });
        if closed.await.is_err() {
            connections.abort_all();
        }
        return Err(ServerError::InstanceTerminated(reason));
    }
    log::info!("shutting down: {} connections open", connections.len());
    drop(listener);
    if let Some(metrics) = metrics {
        metrics.stop().await;
    }
    let _ = shutdown_sender.send(true);
    let drained =
        tokio::time::timeout(DRAIN_TIMEOUT, async { while connections.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        // A call can be stuck for good (a commit waiting for a checkpoint that cannot be
        // written): cancel the calls, which ends such waits, then close what is left.
        let open = context.cancel_all_calls();
        log::warn!("calls still running after {DRAIN_TIMEOUT:?}: cancelled the calls of {open} connections");
        let cancelled =
            tokio::time::timeout(CANCEL_GRACE, async { while connections.join_next().await.is_some() {} })
                .await;
        if cancelled.is_err() {
            log::warn!("calls still running {CANCEL_GRACE:?} after their cancel: closing their connections");
            connections.abort_all();
            while connections.join_next().await.is_some() {}
        }
    }
    // Each session is dropped, rolling back, when its connection's task ends.
    let live = context.live_sessions.clone();
    if tokio::time::timeout(DRAIN_TIMEOUT, live.wait_all_gone()).await.is_err() {
        log::warn!(
            "{} sessions still busy after {DRAIN_TIMEOUT:?}; closing the database anyway",
            live.count()
        );
    }
    Ok(())
}

/// Says how clients will be authenticated and whether TLS is on, with a warning for a
/// server that trusts everyone beyond this host.
fn log_security(config: &ServerConfig) {
    let tls = match (&config.tls, config.tls_required) {
        (None, _) => "off".to_string(),
        (Some(files), required) => {
            format!("on ({}){}", files.cert.display(), if required { ", required" } else { "" })
        }
    };
    log::info!("authentication {}, TLS {tls}", config.auth.method.name());
    if config.auth.method == AuthMethod::Trust && !config.listen.is_loopback() {
        log::warn!(
            "auth.method = \"trust\" on {}: anyone who can reach the port can log in as anyone",
            config.listen
        );
    }
}
