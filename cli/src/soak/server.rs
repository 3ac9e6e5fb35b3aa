//! The soak's `redodb serve`: started from this very binary on the run's database
//! directory, again and again on the same one (unlike `common::postgres::RedodbServer`,
//! which owns and removes its directory). Its stderr (the server's log) and any stdout
//! after the listening line are appended to one log file for the whole run, each start
//! marked by a line of the soak's own, so an ERROR or a panic can be traced to its life.
//!
//! A server is ended only on purpose: `kill9` (the injected crash), or `terminate`
//! (SIGTERM, a clean shutdown that must exit 0); dropping one that still runs kills it,
//! so a failed run never leaves a server behind.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How long recovery and the start may take before the server is called stuck.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a clean shutdown may take.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

pub const LOOPBACK: &str = "127.0.0.1";

pub struct ServerProcess {
    child: Option<Child>,
    pub pid: u32,
    pub port: u16,
    /// From the spawn to the listening line: recovery and startup.
    pub startup: Duration,
}

impl ServerProcess {
    /// Starts `redodb serve --data db_dir` with `args`, appending its output to `log`
    /// after a line naming `label`; returns once it listens.
    pub fn start(db_dir: &Path, log: &Path, label: &str, args: &[String]) -> Result<ServerProcess> {
        let exe = std::env::current_exe().context("finding the redodb binary (current_exe)")?;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening {}", log.display()))?;
        writeln!(file, "---- redodb soak: {label} ----")
            .with_context(|| format!("writing {}", log.display()))?;
        let started = Instant::now();
        let mut child = Command::new(&exe)
            .arg("serve")
            .arg("--data")
            .arg(db_dir)
            .args(["--listen", LOOPBACK, "--port", "0"])
            .args(args)
            // A group of its own: a Ctrl-C in the terminal reaches only the soak, which
            // then stops its clients and the server in order (SIGTERM).
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(file.try_clone().context("duplicating the log file")?)
            .spawn()
            .with_context(|| format!("starting {} serve", exe.display()))?;
        let pid = child.id();
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut server = ServerProcess { child: Some(child), pid, port: 0, startup: Duration::ZERO };
        let (lines, listening) = mpsc::channel();
        std::thread::Builder::new()
            .name("soak-serve-stdout".into())
            .spawn(move || forward_stdout(stdout, file, lines))
            .context("spawning a thread to read the server's output")?;
        let deadline = started + START_TIMEOUT;
        loop {
            if let Some(status) = server.try_exited()? {
                bail!("redodb serve exited ({status}) before it listened; see {}", log.display());
            }
            match listening.recv_timeout(Duration::from_millis(50)) {
                Ok(port) => {
                    server.port = port;
                    server.startup = started.elapsed();
                    return Ok(server);
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(_) => bail!(
                    "redodb serve (pid {pid}) did not listen within {} s; see {}",
                    START_TIMEOUT.as_secs(),
                    log.display()
                ),
            }
        }
    }

    /// The exit status if the server has exited (on its own: a crash, a fail-stop).
    pub fn try_exited(&mut self) -> Result<Option<ExitStatus>> {
        let Some(child) = self.child.as_mut() else { return Ok(None) };
        let status = child.try_wait().context("waiting for redodb serve")?;
        if status.is_some() {
            self.child = None;
        }
        Ok(status)
    }

    /// SIGKILL, and waits for the process to be gone.
    pub fn kill9(mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        child.kill().context("sending SIGKILL to redodb serve")?;
        child.wait().context("waiting for the killed redodb serve")?;
        Ok(())
    }

    /// SIGTERM (roll back, make the log durable, checkpoint), waiting for the exit.
    pub fn terminate(mut self) -> Result<ExitStatus> {
        let Some(mut child) = self.child.take() else { bail!("redodb serve had already exited") };
        // SAFETY: kill(2) on our own child, not yet reaped, so its pid is still its own.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait().context("waiting for redodb serve")? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("redodb serve did not shut down within {} s of SIGTERM", STOP_TIMEOUT.as_secs());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Reads the server's stdout: the port from its listening line goes to `port`, every line
/// to the log.
fn forward_stdout(stdout: std::process::ChildStdout, mut log: File, port: mpsc::Sender<u16>) {
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        if let Some(address) = line.strip_prefix("redodb listening on ") {
            if let Some(p) = address.rsplit(':').next().and_then(|p| p.trim().parse().ok()) {
                let _ = port.send(p);
            }
        }
        let _ = writeln!(log, "{line}");
    }
}

const LEVELS: [&str; 5] = ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"];

/// Lines of the server's log that tell of a problem: ERROR, WARN and panics.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct LogFindings {
    pub error_lines: u64,
    pub warn_lines: u64,
    pub panic_lines: u64,
    /// The first few ERROR and panic lines, verbatim.
    pub examples: Vec<String>,
}

impl LogFindings {
    /// Reads the log from byte `from` on (what the lives since then wrote); returns the
    /// findings and the end offset.
    pub fn scan(log: &Path, from: u64) -> Result<(LogFindings, u64)> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = File::open(log).with_context(|| format!("opening {}", log.display()))?;
        let end = file.metadata()?.len();
        file.seek(SeekFrom::Start(from.min(end)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let mut findings = LogFindings::default();
        for line in String::from_utf8_lossy(&bytes).lines() {
            // env_logger's lines: `[ERROR server::x] message`, with a timestamp before the
            // level when it has one.
            let level = line
                .strip_prefix('[')
                .and_then(|l| l.split_whitespace().take(2).find(|w| LEVELS.contains(w)));
            let panic = line.contains("panicked at");
            match level {
                Some("ERROR") => findings.error_lines += 1,
                Some("WARN") => findings.warn_lines += 1,
                _ => {}
            }
            if panic {
                findings.panic_lines += 1;
            }
            if (panic || level == Some("ERROR")) && findings.examples.len() < 10 {
                findings.examples.push(line.to_string());
            }
        }
        Ok((findings, end))
    }
}

/// The server's threads and what each is doing (`/proc/PID/task/*/stat` state and
/// `wchan`): for the report of a hang.
pub fn thread_states(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return format!("(no /proc/{pid}/task)");
    };
    let mut lines = Vec::new();
    for task in tasks.filter_map(Result::ok) {
        let path: PathBuf = task.path();
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let name = stat.split_once('(').and_then(|(_, r)| r.rsplit_once(')')).map(|(n, _)| n).unwrap_or("?");
        let state = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next()).unwrap_or("?");
        let wchan = std::fs::read_to_string(path.join("wchan")).unwrap_or_default();
        lines.push(format!("{} {name} {state} {wchan}", task.file_name().to_string_lossy()));
    }
    lines.sort();
    lines.join("\n")
}

/// Whether `error` came from the server (an ErrorResponse with a SQLSTATE) rather than
/// from the connection (closed, reset, refused).
pub fn sqlstate(error: &tokio_postgres::Error) -> Option<&str> {
    error.as_db_error().map(|e| e.code().code())
}

/// Whether `error` is the connection's end (closed, reset, refused, cut off mid-message),
/// as a kill causes, rather than an answer or a mistake of the client.
pub fn connection_lost(error: &tokio_postgres::Error) -> bool {
    if error.as_db_error().is_some() {
        return false;
    }
    error.is_closed()
        || std::error::Error::source(error).is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
}

/// `error` with its source chain, on one line.
pub fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} {}", db.code().code(), db.message()),
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            text
        }
    }
}

/// A connection as `user` to the server on `port` of the loopback address.
pub fn client_config(port: u16, user: &str) -> tokio_postgres::Config {
    let mut config = tokio_postgres::Config::new();
    config
        .host(LOOPBACK)
        .port(port)
        .user(user)
        .dbname("redodb")
        .application_name("redodb soak")
        .connect_timeout(Duration::from_secs(10));
    config
}
