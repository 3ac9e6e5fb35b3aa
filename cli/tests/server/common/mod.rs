//! Shared by the server's tests (and by `bench_wire` in the `commands` binary): start the
//! real `redodb serve` binary on a port the system chooses, with a small log in a
//! temporary directory, and drive it with the real PostgreSQL clients (psql, pgbench).

// The `commands` test binary includes this module too, for `Server` alone.
#![allow(dead_code)]

pub mod protocol;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Fails (never skips) when a client tool is missing.
pub fn require_tool(tool: &str) {
    let found = Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    assert!(
        found.is_ok_and(|s| s.success()),
        "`{tool}` is needed by the server tests (scripts/test.sh installs them): the Debian \
         packages postgresql-client-15 (psql), postgresql-15 (pgbench) and prometheus \
         (prometheus, promtool)"
    );
}

pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    /// The metrics endpoint's URL, from the server's "metrics" line (None: not served).
    pub metrics_url: Option<String>,
}

impl Server {
    /// Starts `redodb serve` on `dir` and waits for its "listening" line; its log (level
    /// warn) goes to the test's stderr.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        Server::start_logging(dir, extra, "warn", Stdio::inherit())
    }

    /// As `start`, logging at `level` to `log` (a file, to read what the server said).
    pub fn start_logging(dir: &Path, extra: &[&str], level: &str, log: Stdio) -> Server {
        Server::start_with_env(dir, extra, level, log, &[])
    }

    /// As `start_logging`, with the environment variables `env` (`REDODB_FAULTS`, ...).
    pub fn start_with_env(
        dir: &Path,
        extra: &[&str],
        level: &str,
        log: Stdio,
        env: &[(&str, &str)],
    ) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_redodb"))
            .envs(env.iter().copied())
            .args(["serve", "--data"])
            .arg(dir)
            .args(["--port", "0", "--sync-method", "fdatasync"])
            // Small log files and buffer unless the test sets its own.
            .args(["--log-file-size", "4M"].iter().filter(|_| !extra.contains(&"--log-file-size")))
            .args(["--log-buffer", "1M"].iter().filter(|_| !extra.contains(&"--log-buffer")))
            .args(["--log-level", level])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start redodb serve");
        let stdout = child.stdout.take().expect("stdout piped");
        let (lines, listening) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut metrics_url = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match listening.recv_timeout(left) {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("redodb metrics on ") {
                        metrics_url = Some(url.to_string());
                    }
                    if let Some(addr) = line.strip_prefix("redodb listening on ") {
                        let port =
                            addr.rsplit(':').next().unwrap().parse().expect("port in the listening line");
                        return Server { child: Some(child), port, dir: dir.to_path_buf(), metrics_url };
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("redodb serve did not print its listening line: {:?}", child.wait());
                }
            }
        }
    }

    /// A raw protocol connection, started up as user "test" (`protocol::startup`).
    pub fn connect(&self) -> std::net::TcpStream {
        let mut stream =
            std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect to the server");
        protocol::startup(&mut stream);
        stream
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Runs psql with `args` (after the connection options).
    pub fn psql(&self, args: &[&str]) -> Output {
        self.psql_with_env(&[], args)
    }

    /// Runs psql with `args` and the environment variables `env` (`PGOPTIONS`, ...).
    pub fn psql_with_env(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        Command::new("psql")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "test", "-d", "redodb", "-X"])
            .args(["-v", "ON_ERROR_STOP=1"])
            .args(args)
            .env("PGCONNECT_TIMEOUT", "10")
            .envs(env.iter().copied())
            .output()
            .expect("run psql")
    }

    /// Runs `sql` with `psql -At -c`, expecting success; returns stdout.
    pub fn query(&self, sql: &str) -> String {
        let out = self.psql(&["-At", "-c", sql]);
        assert!(out.status.success(), "psql -c {sql:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `commands` in one psql session (`psql -At`, a `-c` each), expecting success;
    /// returns stdout.
    pub fn commands(&self, commands: &[&str]) -> String {
        let mut args = vec!["-At"];
        args.extend(commands.iter().flat_map(|c| ["-c", c]));
        let out = self.psql(&args);
        assert!(out.status.success(), "psql {commands:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `commands` in one psql session that goes on after an error, with verbose
    /// messages (the SQLSTATE in stderr); returns psql's output.
    pub fn commands_past_errors(&self, commands: &[&str]) -> Output {
        let mut args = vec!["-At", "-v", "ON_ERROR_STOP=0", "-c", "\\set VERBOSITY verbose"];
        args.extend(commands.iter().flat_map(|c| ["-c", c]));
        self.psql(&args)
    }

    /// Runs `sql` expecting an error; returns psql's stderr (verbose: with the SQLSTATE).
    pub fn query_error(&self, sql: &str) -> String {
        let out = self.psql(&["-At", "-c", "\\set VERBOSITY verbose", "-c", sql]);
        assert!(
            !out.status.success(),
            "psql -c {sql:?} should have failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).unwrap()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill").args([signal, &self.pid().to_string()]).status().expect("run kill");
        assert!(status.success());
    }

    /// SIGTERM, then waits for the exit (at most 20 s).
    pub fn terminate(self) -> ExitStatus {
        self.stop_with("-TERM")
    }

    /// SIGINT (Ctrl-C), then waits for the exit (at most 20 s).
    pub fn interrupt(self) -> ExitStatus {
        self.stop_with("-INT")
    }

    fn stop_with(mut self, signal: &str) -> ExitStatus {
        self.signal(signal);
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("redodb serve did not exit within 20 s of {signal}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the server to exit on its own (at most `limit`); None if it did not.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut().expect("running");
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// SIGKILL: no shutdown at all.
    pub fn kill9(mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs a client program (a driver's test script) to its end, at most `limit`, and returns
/// its output. One still running then is killed, and the test fails with what it printed.
pub fn run_client(command: &mut Command, limit: Duration) -> Output {
    use std::io::Read;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    let mut stdout = child.stdout.take().expect("stdout piped");
    let mut stderr = child.stderr.take().expect("stderr piped");
    // Read both pipes while it runs, so that a chatty client never blocks on a full pipe.
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the client") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stdout = String::from_utf8_lossy(&out.join().unwrap()).into_owned();
            let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
            panic!("{command:?} did not end within {limit:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

/// A client test script's checks, from its last line `N checks run of M: P passed, F
/// failed`: fails with the client's output unless it succeeded, ran at least one check and
/// every check it ran passed. Returns (run, defined): a script whose checks silently
/// stopped running (a filter matching nothing, a loop cut short) passes no test.
pub fn assert_client_checks_passed(what: &str, output: &Output) -> (u64, u64) {
    assert_client_passed(what, output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or("");
    let parsed = (|| {
        let (run, rest) = last.split_once(" checks run of ")?;
        let (defined, rest) = rest.split_once(": ")?;
        let (passed, rest) = rest.split_once(" passed, ")?;
        let failed = rest.strip_suffix(" failed")?;
        let n = |s: &str| s.trim().parse::<u64>().ok();
        Some((n(run)?, n(defined)?, n(passed)?, n(failed)?))
    })();
    let Some((run, defined, passed, failed)) = parsed else {
        panic!(
            "{what}: no `N checks run of M: P passed, F failed` summary at the end of:
{stdout}"
        );
    };
    assert!(
        run > 0,
        "{what} ran no checks:
{stdout}"
    );
    assert_eq!(
        (passed, failed),
        (run, 0),
        "{what}: every check it ran passes:
{stdout}"
    );
    (run, defined)
}

/// Fails with the client's output unless it succeeded.
pub fn assert_client_passed(what: &str, output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{what} failed ({})\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    // The clients' own summary line, for `cargo test -- --nocapture`.
    println!("{what}: {}", stdout.lines().last().unwrap_or(""));
}

/// psql as `user` on `server`, reading its commands from a pipe (verbose errors, so the
/// SQLSTATE shows), with `env` added to its environment.
pub fn piped_psql(server: &Server, user: &str, env: &[(&str, &str)]) -> (Child, ChildStdin) {
    let mut child = Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", user, "-d", "redodb", "-X", "-At"])
        .args(["-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"])
        .env("PGCONNECT_TIMEOUT", "10")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start psql");
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

/// Polls `v$session` until `user`'s session shows `condition` (a SQL predicate).
pub fn wait_for_session(server: &Server, user: &str, condition: &str) {
    let sql = format!("SELECT count(*) FROM v$session WHERE username = '{user}' AND {condition}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.query(&sql) != "1\n" {
        assert!(
            Instant::now() < deadline,
            "no session of {user} with {condition}: {}",
            server.query("SELECT username, status, event, wait_detail, sql_text FROM v$session")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
