//! The two servers of a comparison, each started for the run and stopped when dropped:
//! a throwaway PostgreSQL 15 cluster from the Debian package, and `redodb serve` from this
//! very binary. Both listen on a spare port of 127.0.0.1 and keep their data in a
//! directory given by the caller.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Where the Debian package puts PostgreSQL 15's server programs.
const POSTGRES_BIN: &str = "/usr/lib/postgresql/15/bin";

/// How long a server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A port nobody listens on now (the system picks it; it may be taken again before the
/// server binds it, which the server then reports).
fn spare_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a spare port")?;
    Ok(listener.local_addr()?.port())
}

fn wait_for_port(port: u16, what: &str, child: &mut Child) -> Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            bail!("{what} exited ({status}) before accepting connections on port {port}");
        }
        if Instant::now() > deadline {
            bail!("{what} did not accept connections on port {port} within {START_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether this process runs as root (PostgreSQL refuses to).
fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A command for PostgreSQL's programs: as the `postgres` system user when we are root.
fn postgres_command(program: &str) -> Command {
    let path = Path::new(POSTGRES_BIN).join(program);
    if running_as_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(path);
        c
    } else {
        Command::new(path)
    }
}

/// A PostgreSQL 15 cluster made for one run: `initdb` into a directory, `postgres` on a
/// spare port (fsync on: the comparison is about durable commits), stopped and removed
/// on drop.
pub struct PostgresCluster {
    dir: PathBuf,
    port: u16,
    server: Option<Child>,
}

impl PostgresCluster {
    /// Creates the cluster in `dir` (which must not exist) and starts it.
    pub fn start(dir: &Path) -> Result<PostgresCluster> {
        let initdb = Path::new(POSTGRES_BIN).join("initdb");
        if !initdb.exists() {
            bail!("{} not found: install the Debian package postgresql-15", initdb.display());
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        if running_as_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir)
                .status()
                .context("running chown")?;
            if !status.success() {
                bail!("chown postgres {} failed ({status}): is there a `postgres` user?", dir.display());
            }
        }
        let data = dir.join("data");
        let out = postgres_command("initdb")
            .args(["-D"])
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"])
            .output()
            .context("running initdb")?;
        if !out.status.success() {
            bail!("initdb failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
        }
        let port = spare_port()?;
        let log = std::fs::File::create(dir.join("postgres.log")).context("creating postgres.log")?;
        let mut server = postgres_command("postgres")
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", dir.display()))
            .args(["-c", "max_connections=200", "-c", "shared_buffers=256MB"])
            .args(["-c", "fsync=on", "-c", "synchronous_commit=on"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting postgres")?;
        if let Err(e) = wait_for_port(port, "postgres", &mut server) {
            let _ = server.kill();
            let log = std::fs::read_to_string(dir.join("postgres.log")).unwrap_or_default();
            return Err(e.context(format!("postgres log:\n{log}")));
        }
        Ok(PostgresCluster { dir: dir.to_path_buf(), port, server: Some(server) })
    }

    pub fn host(&self) -> &str {
        "127.0.0.1"
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn user(&self) -> &str {
        "postgres"
    }
}

impl Drop for PostgresCluster {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // SIGINT is PostgreSQL's fast shutdown: no waiting for clients.
            // SAFETY: kill with a pid we started and still own (not yet reaped).
            unsafe { libc::kill(server.id() as i32, libc::SIGINT) };
            let deadline = Instant::now() + Duration::from_secs(20);
            while matches!(server.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = server.kill();
            let _ = server.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `redodb serve` (this binary) on a spare port with its data in a directory, stopped with
/// SIGTERM (a clean shutdown) on drop.
pub struct RedodbServer {
    port: u16,
    server: Option<Child>,
}

impl RedodbServer {
    pub fn start(data: &Path) -> Result<RedodbServer> {
        let exe = std::env::current_exe().context("finding this program")?;
        let mut server = Command::new(exe)
            .arg("serve")
            .arg("--data")
            .arg(data)
            .args(["--port", "0", "--log-level", "warn", "--snapshot-interval-minutes", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting redodb serve")?;
        let stdout = server.stdout.take().expect("piped stdout");
        // The server prints the address it listens on once recovery is done.
        let mut lines = BufReader::new(stdout).lines();
        let port = loop {
            let Some(line) = lines.next() else {
                let status = server.wait()?;
                bail!("redodb serve exited ({status}) before saying where it listens");
            };
            let line = line.context("reading redodb serve's output")?;
            if let Some(port) = line.rsplit(':').next().and_then(|p| p.trim().parse::<u16>().ok()) {
                if line.contains("listening") {
                    break port;
                }
            }
        };
        // Keep draining its stdout so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        wait_for_port(port, "redodb serve", &mut server)?;
        Ok(RedodbServer { port, server: Some(server) })
    }

    pub fn host(&self) -> &str {
        "127.0.0.1"
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for RedodbServer {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // SAFETY: kill with a pid we started and still own (not yet reaped).
            unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(30);
            while matches!(server.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}
