//! Throwaway servers that speak the PostgreSQL protocol, for benchmarks that compare
//! redodb with PostgreSQL on the same machine in the same run:
//!
//! - [`PostgresCluster`]: a PostgreSQL 15 cluster from the Debian package
//!   (`/usr/lib/postgresql/15/bin`), created with `initdb` in a directory of its own,
//!   listening on a spare TCP port of 127.0.0.1 (its unix socket in that directory).
//! - [`RedodbServer`]: `redodb serve` from this very binary, on a port the system chooses.
//!
//! Both start in a directory that must be new or empty, wait until they answer a query,
//! and on drop stop (PostgreSQL's fast shutdown, redodb's SIGTERM) and remove that
//! directory. They run as children of this process, in its process group: a Ctrl-C in the
//! terminal reaches them too, and each shuts down cleanly on SIGINT.
//!
//! PostgreSQL refuses to run as root. When this process is root (CI is), `initdb` and
//! `postgres` run as the `postgres` system user the Debian package creates, the cluster's
//! directory is given to that user, and every directory above it must let that user pass
//! (`--data /root/x` cannot work; a fresh temporary directory from `common::bench_dir`
//! can).
//!
//! ```text
//! let pg = PostgresCluster::start(&dir.join("postgres"))?;
//! let redodb = RedodbServer::start(&dir.join("redodb"))?;
//! println!("{} vs {}", pg.url(), redodb.url());
//! ```

// A shared API: `bench` uses part of it (the cluster for --with-postgres, the server for
// client-practices), the pgbench comparison the rest (psql_env, stop, ...).
#![allow(dead_code)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

/// Where the Debian package `postgresql-15` puts the server's programs.
pub const POSTGRES_BIN_DIR: &str = "/usr/lib/postgresql/15/bin";

/// The address both servers listen on.
const LOOPBACK: &str = "127.0.0.1";

/// How long a server may take to answer its first query (PostgreSQL on a slow disk
/// replays nothing, but `initdb`'s files may still be in the page cache's write-back).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a server may take to shut down before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// Settings of a [`PostgresCluster`], chosen for a fair commit benchmark: every commit
/// durable (fsync on, synchronous_commit on, the platform's default wal_sync_method),
/// buffers large enough that a benchmark's tables stay in memory.
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    pub shared_buffers: String,
    pub max_connections: u32,
    /// `synchronous_commit` for sessions that do not set their own.
    pub synchronous_commit: bool,
    /// `track_wal_io_timing`: pg_stat_wal's wal_write_time and wal_sync_time (two clock
    /// reads per WAL write, the price of seeing how long the syncs take).
    pub track_wal_io_timing: bool,
    /// More `name=value` settings, passed as `-c name=value`.
    pub extra_settings: Vec<(String, String)>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            shared_buffers: "256MB".into(),
            max_connections: 200,
            synchronous_commit: true,
            track_wal_io_timing: true,
            extra_settings: Vec::new(),
        }
    }
}

/// A PostgreSQL 15 cluster of its own: initdb'd, started, and on drop stopped (fast
/// shutdown) and removed.
pub struct PostgresCluster {
    process: Throwaway,
    port: u16,
    server_version: String,
}

/// The user the cluster is created for (`initdb -U`); trusted on 127.0.0.1 and the socket.
const POSTGRES_USER: &str = "postgres";
const POSTGRES_DATABASE: &str = "postgres";

impl PostgresCluster {
    /// Creates a cluster in `dir` (new or empty; removed when the cluster is dropped) with
    /// the default [`PostgresOptions`] and starts it.
    pub fn start(dir: &Path) -> Result<PostgresCluster> {
        PostgresCluster::start_with(dir, &PostgresOptions::default())
    }

    /// Creates a cluster in `dir` (new or empty; removed when the cluster is dropped) and
    /// starts it with `options`.
    pub fn start_with(dir: &Path, options: &PostgresOptions) -> Result<PostgresCluster> {
        let bin = Path::new(POSTGRES_BIN_DIR);
        for program in ["initdb", "postgres"] {
            if !bin.join(program).is_file() {
                bail!(
                    "{} not found: install the Debian package postgresql-15 (apt-get install postgresql-15)",
                    bin.join(program).display()
                );
            }
        }
        let owner = ServerUser::for_postgres()?;
        prepare_throwaway_dir(dir)?;
        // From here on a failure removes the directory again.
        let mut cluster = PostgresCluster {
            process: Throwaway::new(dir, "postgres", &[libc::SIGINT, libc::SIGQUIT, libc::SIGKILL]),
            port: 0,
            server_version: String::new(),
        };
        if let Some(user) = &owner {
            user.check_reachable(dir)?;
            std::os::unix::fs::chown(dir, Some(user.uid), Some(user.gid))
                .with_context(|| format!("giving {} to the postgres user", dir.display()))?;
        }
        let data = cluster.data_dir();
        let initdb = run_as(&owner, Command::new(bin.join("initdb")))
            .arg("-D")
            .arg(&data)
            .args(["-U", POSTGRES_USER, "--auth=trust", "--encoding=UTF8", "--locale=C"])
            // The cluster is thrown away: syncing initdb's files buys nothing, and the
            // benchmark's own commits are fsync'd as usual.
            .arg("--no-sync")
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", bin.join("initdb").display()))?;
        if !initdb.status.success() {
            bail!(
                "initdb -D {} failed ({}):\n{}{}",
                data.display(),
                initdb.status,
                String::from_utf8_lossy(&initdb.stdout),
                String::from_utf8_lossy(&initdb.stderr)
            );
        }
        // A spare port can be taken by someone else between our look and the server's
        // bind; a few tries make that harmless.
        let mut last_error = None;
        for _ in 0..3 {
            let port = spare_port()?;
            match cluster.launch(&owner, port, options) {
                Ok(()) => return Ok(cluster),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.expect("three attempts"))
    }

    /// Starts `postgres` on `port` and waits until it answers.
    fn launch(&mut self, owner: &Option<ServerUser>, port: u16, options: &PostgresOptions) -> Result<()> {
        let log_path = self.log_path();
        // Each attempt starts the log afresh, so an error shows this attempt's lines.
        let log = File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let on_off = |b: bool| if b { "on" } else { "off" };
        let mut settings: Vec<(String, String)> = vec![
            ("listen_addresses".into(), LOOPBACK.into()),
            ("port".into(), port.to_string()),
            ("unix_socket_directories".into(), self.process.dir.display().to_string()),
            ("shared_buffers".into(), options.shared_buffers.clone()),
            ("max_connections".into(), options.max_connections.to_string()),
            ("fsync".into(), "on".into()),
            ("synchronous_commit".into(), on_off(options.synchronous_commit).into()),
            ("full_page_writes".into(), "on".into()),
            ("track_wal_io_timing".into(), on_off(options.track_wal_io_timing).into()),
            ("logging_collector".into(), "off".into()),
        ];
        settings.extend(options.extra_settings.iter().cloned());
        let mut command = run_as(owner, Command::new(Path::new(POSTGRES_BIN_DIR).join("postgres")));
        command.arg("-D").arg(self.data_dir());
        for (name, value) in &settings {
            command.arg("-c").arg(format!("{name}={value}"));
        }
        let child = command
            .current_dir(&self.process.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("duplicating the log file")?)
            .stderr(log)
            .spawn()
            .context("starting postgres")?;
        self.process.child = Some(child);
        self.port = port;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.process.child.as_mut().expect("just started").try_wait()? {
                self.process.child = None;
                bail!(
                    "postgres exited ({status}) before it accepted connections; its log:\n{}",
                    log_tail(&log_path)
                );
            }
            match query_once(&self.url(), "SHOW server_version") {
                Ok(version) => {
                    self.server_version = version;
                    return Ok(());
                }
                Err(e) if Instant::now() >= deadline => {
                    self.process.stop_child();
                    bail!(
                        "postgres did not accept connections within {} s ({e:#}); its log:\n{}",
                        READY_TIMEOUT.as_secs(),
                        log_tail(&log_path)
                    );
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// `127.0.0.1`.
    pub fn host(&self) -> &str {
        LOOPBACK
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The superuser to connect as (trusted, no password).
    pub fn user(&self) -> &str {
        POSTGRES_USER
    }

    /// The database to connect to.
    pub fn dbname(&self) -> &str {
        POSTGRES_DATABASE
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://{POSTGRES_USER}@{LOOPBACK}:{}/{POSTGRES_DATABASE}", self.port)
    }

    /// The environment for libpq clients (psql, pgbench): PGHOST, PGPORT, PGUSER,
    /// PGDATABASE.
    pub fn psql_env(&self) -> Vec<(String, String)> {
        libpq_env(LOOPBACK, self.port, POSTGRES_USER, POSTGRES_DATABASE)
    }

    /// `SHOW server_version`, e.g. `15.14 (Debian 15.14-0+deb12u1)`.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// The directory holding everything: `data/`, `postgres.log`, the unix socket.
    pub fn dir(&self) -> &Path {
        &self.process.dir
    }

    pub fn data_dir(&self) -> PathBuf {
        self.process.dir.join("data")
    }

    /// The server's log (stdout and stderr of `postgres`).
    pub fn log_path(&self) -> PathBuf {
        self.process.dir.join("postgres.log")
    }

    /// The postmaster's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.child.as_ref().map(Child::id)
    }

    /// The open flags (`/proc/PID/fdinfo`'s octal `flags`) of a WAL segment held open by
    /// one of the cluster's processes: the WAL writer keeps the segment it last wrote
    /// open, so after any commit there is one. None when no process has one open, or
    /// `/proc` cannot be read.
    pub fn wal_open_flags(&self) -> Option<u64> {
        let postmaster = self.pid()?;
        let children = std::fs::read_dir("/proc").ok()?.filter_map(|e| {
            let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            (parent_pid(pid)? == postmaster).then_some(pid)
        });
        children.into_iter().find_map(wal_fd_flags)
    }

    /// Stops the server (SIGINT, what `pg_ctl stop -m fast` sends: open transactions
    /// rolled back, a shutdown checkpoint; SIGQUIT and SIGKILL if it lingers) and removes
    /// the directory, reporting what went wrong.
    pub fn stop(mut self) -> Result<()> {
        self.process.stop()
    }
}

/// `redodb serve` from this binary, on a port the system chooses; on drop stopped with
/// SIGTERM (open transactions rolled back, the log made durable, a checkpoint) and its
/// directory removed.
pub struct RedodbServer {
    process: Throwaway,
    port: u16,
}

/// Any user name is trusted on loopback when the server has no `[auth]` users.
const REDODB_USER: &str = "redodb";
const REDODB_DATABASE: &str = "redodb";

impl RedodbServer {
    /// Starts `redodb serve` with its default settings on a new database in `dir` (new
    /// or empty; removed when the server is dropped).
    pub fn start(dir: &Path) -> Result<RedodbServer> {
        RedodbServer::start_with(dir, &[])
    }

    /// Starts `redodb serve` with more flags (`--sync-method fdatasync`,
    /// `--log-parallelism 2`, ...) on a new database in `dir` (new or empty; removed when
    /// the server is dropped).
    pub fn start_with(dir: &Path, extra_args: &[String]) -> Result<RedodbServer> {
        let exe = std::env::current_exe().context("finding the redodb binary (current_exe)")?;
        prepare_throwaway_dir(dir)?;
        let mut server = RedodbServer {
            process: Throwaway::new(dir, "redodb serve", &[libc::SIGTERM, libc::SIGKILL]),
            port: 0,
        };
        let log_path = server.log_path();
        let log = File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let mut child = Command::new(&exe)
            .arg("serve")
            .arg("--data")
            .arg(server.data_dir())
            .args(["--listen", LOOPBACK, "--port", "0", "--log-level", "warn"])
            // No AWR snapshots: a benchmark's server lives minutes and must not write
            // beside the measured commits.
            .args(["--snapshot-interval-minutes", "0"])
            .args(extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {} serve", exe.display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        server.process.child = Some(child);
        // The server prints one line when it listens; the rest of its stdout is drained
        // so that it can never block on a full pipe.
        let (lines, listening) = mpsc::channel();
        std::thread::Builder::new()
            .name("redodb-serve-stdout".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    let _ = lines.send(line);
                }
            })
            .context("spawning a thread to read the server's output")?;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = server.process.child.as_mut().expect("just started").try_wait()? {
                server.process.child = None;
                bail!("redodb serve exited ({status}) before it listened; its log:\n{}", log_tail(&log_path));
            }
            match listening.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    if let Some(address) = line.strip_prefix("redodb listening on ") {
                        server.port = address
                            .rsplit(':')
                            .next()
                            .and_then(|p| p.trim().parse().ok())
                            .ok_or_else(|| anyhow!("no port in the server's line {line:?}"))?;
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(_) => bail!(
                    "redodb serve did not print its listening line within {} s; its log:\n{}",
                    READY_TIMEOUT.as_secs(),
                    log_tail(&log_path)
                ),
            }
        }
        query_once(&server.url(), "SELECT 1").context("the first query on redodb serve")?;
        Ok(server)
    }

    /// `127.0.0.1`.
    pub fn host(&self) -> &str {
        LOOPBACK
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A user name to connect as (any is trusted on loopback without `[auth]` users).
    pub fn user(&self) -> &str {
        REDODB_USER
    }

    pub fn dbname(&self) -> &str {
        REDODB_DATABASE
    }

    /// `postgres://redodb@127.0.0.1:PORT/redodb`.
    pub fn url(&self) -> String {
        format!("postgres://{REDODB_USER}@{LOOPBACK}:{}/{REDODB_DATABASE}", self.port)
    }

    /// The environment for libpq clients (psql, pgbench): PGHOST, PGPORT, PGUSER,
    /// PGDATABASE.
    pub fn psql_env(&self) -> Vec<(String, String)> {
        libpq_env(LOOPBACK, self.port, REDODB_USER, REDODB_DATABASE)
    }

    pub fn dir(&self) -> &Path {
        &self.process.dir
    }

    /// The database directory (`--data`).
    pub fn data_dir(&self) -> PathBuf {
        self.process.dir.join("data")
    }

    /// The server's stderr (its log).
    pub fn log_path(&self) -> PathBuf {
        self.process.dir.join("redodb.log")
    }

    /// Stops the server (SIGTERM: a clean shutdown; SIGKILL if it lingers) and removes the
    /// directory, reporting what went wrong.
    pub fn stop(mut self) -> Result<()> {
        self.process.stop()
    }
}

/// A server process of ours and the directory it lives in: stopped with `signals` in turn
/// (each given a while to work) and the directory removed, by `stop` or on drop.
struct Throwaway {
    child: Option<Child>,
    /// Empty once removed.
    dir: PathBuf,
    what: &'static str,
    signals: &'static [i32],
}

impl Throwaway {
    fn new(dir: &Path, what: &'static str, signals: &'static [i32]) -> Throwaway {
        Throwaway { child: None, dir: dir.to_path_buf(), what, signals }
    }

    fn stop_child(&mut self) -> Option<Result<ExitStatus>> {
        let child = self.child.take()?;
        Some(stop_process(child, self.signals, self.what))
    }

    fn stop(&mut self) -> Result<()> {
        let status = self.stop_child();
        let removed = remove_dir(&self.dir);
        self.dir = PathBuf::new();
        match status {
            Some(Err(e)) => Err(e),
            Some(Ok(s)) if !s.success() => bail!("{} exited with {s} at shutdown", self.what),
            _ => removed,
        }
    }
}

impl Drop for Throwaway {
    fn drop(&mut self) {
        if let Some(Err(e)) = self.stop_child() {
            eprintln!("warning: stopping {} in {}: {e:#}", self.what, self.dir.display());
        }
        if !self.dir.as_os_str().is_empty() {
            if let Err(e) = remove_dir(&self.dir) {
                eprintln!("warning: {e:#}");
            }
        }
    }
}

/// The parent of process `pid` (the field after the state in `/proc/PID/stat`; the
/// command name before it is in parentheses and may hold spaces).
fn parent_pid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// The open flags of a WAL segment (`pg_wal/` and a 24-hex-digit name) among the open
/// files of process `pid`.
fn wal_fd_flags(pid: u32) -> Option<u64> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    fds.filter_map(Result::ok).find_map(|fd| {
        let target = std::fs::read_link(fd.path()).ok()?;
        let name = target.file_name()?.to_str()?;
        let in_pg_wal = target.parent().and_then(Path::file_name).is_some_and(|d| d == "pg_wal");
        if !(in_pg_wal && name.len() == 24 && name.bytes().all(|b| b.is_ascii_hexdigit())) {
            return None;
        }
        let info =
            std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_str()?)).ok()?;
        let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
        u64::from_str_radix(flags.trim(), 8).ok()
    })
}

fn libpq_env(host: &str, port: u16, user: &str, dbname: &str) -> Vec<(String, String)> {
    [
        ("PGHOST", host.to_string()),
        ("PGPORT", port.to_string()),
        ("PGUSER", user.into()),
        ("PGDATABASE", dbname.into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Creates `dir`, or accepts it empty: a throwaway server removes its directory when it
/// stops, so it must never be handed one that holds something else.
fn prepare_throwaway_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
        if entries.next().is_some() {
            bail!(
                "{} is not empty: a throwaway server needs a new or empty directory (it removes it when it stops)",
                dir.display()
            );
        }
    } else {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", dir.display())),
    }
}

/// A port of 127.0.0.1 that nobody listens on right now.
fn spare_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind((LOOPBACK, 0)).context("finding a spare TCP port")?;
    Ok(listener.local_addr()?.port())
}

/// Sends `signals` one after the other, each given [`STOP_TIMEOUT`] (the last, SIGKILL,
/// a few seconds), until the process exits.
fn stop_process(mut child: Child, signals: &[i32], what: &str) -> Result<ExitStatus> {
    for (i, &signal) in signals.iter().enumerate() {
        if let Some(status) = child.try_wait().with_context(|| format!("waiting for {what}"))? {
            return Ok(status);
        }
        // SAFETY: kill(2) on the pid of our own child, which has not been reaped (try_wait
        // above saw it running), so the pid cannot have been reused.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let patience = if i + 1 == signals.len() { Duration::from_secs(5) } else { STOP_TIMEOUT };
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait().with_context(|| format!("waiting for {what}"))? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    bail!("{what} (pid {}) did not exit after signals {signals:?}", child.id())
}

/// The end of a log file (at most its last 4 KiB).
fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let start = len.saturating_sub(4096);
        if f.seek(SeekFrom::Start(start)).is_ok() {
            let _ = f.read_to_string(&mut text);
        }
    }
    if text.trim().is_empty() {
        format!("({} is empty)", path.display())
    } else {
        text
    }
}

/// Connects to `url`, runs one simple query and returns the first column of its first
/// row: the readiness check of both servers.
pub(crate) fn query_once(url: &str, sql: &str) -> Result<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a tokio runtime")?;
    runtime.block_on(async {
        let mut config: tokio_postgres::Config = url.parse().with_context(|| format!("parsing {url}"))?;
        config.connect_timeout(Duration::from_secs(5));
        let (client, connection) =
            config.connect(tokio_postgres::NoTls).await.with_context(|| format!("connecting to {url}"))?;
        let driver = tokio::spawn(connection);
        let messages = client.simple_query(sql).await.with_context(|| format!("{sql} on {url}"))?;
        drop(client);
        let _ = driver.await;
        messages
            .iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
                _ => None,
            })
            .ok_or_else(|| anyhow!("{sql} on {url} returned no row"))
    })
}

/// The system user a server runs as when this process is root.
struct ServerUser {
    uid: u32,
    gid: u32,
    name: String,
}

impl ServerUser {
    /// None when not root (the server runs as this process's user); the `postgres` user
    /// when root, since PostgreSQL refuses to run as root.
    fn for_postgres() -> Result<Option<ServerUser>> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(None);
        }
        let name = "postgres";
        let c_name = std::ffi::CString::new(name).expect("no NUL");
        // SAFETY: getpwnam with a valid C string; the record is copied out at once,
        // before any other call could reuse its static storage.
        let entry = unsafe { libc::getpwnam(c_name.as_ptr()) };
        if entry.is_null() {
            bail!(
                "PostgreSQL refuses to run as root, and there is no `{name}` system user to run it as: \
                 install the Debian package postgresql-15 (it creates the user)"
            );
        }
        // SAFETY: non-null entry returned by getpwnam.
        let (uid, gid) = unsafe { ((*entry).pw_uid, (*entry).pw_gid) };
        Ok(Some(ServerUser { uid, gid, name: name.into() }))
    }

    /// Every directory above `dir` must let this user pass (search permission), or the
    /// server cannot reach its data.
    fn check_reachable(&self, dir: &Path) -> Result<()> {
        let absolute = if dir.is_absolute() { dir.to_path_buf() } else { std::env::current_dir()?.join(dir) };
        for ancestor in absolute.ancestors().skip(1) {
            let meta =
                std::fs::metadata(ancestor).with_context(|| format!("reading {}", ancestor.display()))?;
            let mode = meta.permissions().mode();
            let passes = (meta.uid() == self.uid && mode & 0o100 != 0)
                || (meta.gid() == self.gid && mode & 0o010 != 0)
                || mode & 0o001 != 0;
            if !passes {
                bail!(
                    "PostgreSQL runs as the `{}` user (it refuses root), which cannot reach {}: {} has mode {:o}; \
                     choose a directory it can reach (e.g. under /tmp) or allow it through (chmod o+x {})",
                    self.name,
                    dir.display(),
                    ancestor.display(),
                    mode & 0o7777,
                    ancestor.display()
                );
            }
        }
        Ok(())
    }
}

/// `command`, run as `user` when one is given (root dropping to the server's user).
fn run_as(user: &Option<ServerUser>, mut command: Command) -> Command {
    if let Some(u) = user {
        // std drops the supplementary groups when root sets a uid.
        command.uid(u.uid).gid(u.gid);
        command.env("HOME", "/var/lib/postgresql").env("USER", &u.name).env("LOGNAME", &u.name);
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throwaway_directory_must_be_new_or_empty() {
        let t = tempfile::tempdir().unwrap();
        let fresh = t.path().join("fresh");
        prepare_throwaway_dir(&fresh).unwrap();
        assert!(fresh.is_dir());
        prepare_throwaway_dir(&fresh).unwrap();
        std::fs::write(fresh.join("precious"), b"x").unwrap();
        let err = prepare_throwaway_dir(&fresh).unwrap_err().to_string();
        assert!(err.contains("is not empty"), "{err}");
    }

    #[test]
    fn spare_ports_are_bindable() {
        let port = spare_port().unwrap();
        assert_ne!(port, 0);
        std::net::TcpListener::bind((LOOPBACK, port)).unwrap();
    }

    #[test]
    fn libpq_environment_names_the_server() {
        let env = libpq_env("127.0.0.1", 5999, "u", "d");
        assert!(env.contains(&("PGPORT".to_string(), "5999".to_string())));
        assert!(env.contains(&("PGUSER".to_string(), "u".to_string())));
    }
}
