//! `redodb serve --config FILE`: the file's settings apply, the flags override them, and a
//! bad file stops the server before it opens anything, with an error naming the setting.

use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{protocol, require_tool, Server};

#[test]
fn the_config_file_applies_and_flags_override_it() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("redodb.toml");
    std::fs::write(
        &config,
        "# the flags Server::start passes (--data, --log-buffer 1M) override these two\n\
         data = \"/nonexistent/redodb\"\n\
         log_buffer = \"8M\"\n\
         max_connections = 1\n\
         log_groups = 4\n\
         log_parallelism = 2\n\
         client_send_timeout_ms = 1000\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--config", config.to_str().unwrap()]);
    // max_connections = 1, so every check goes through one psql session: a session's slot
    // is freed only after its client has gone, so back-to-back clients could be refused.
    let answers = server.commands(&[
        "SELECT value FROM v$parameter WHERE name = 'log_parallelism'",
        "SELECT value FROM v$parameter WHERE name = 'log_buffer'",
        "SELECT count(*) FROM v$log",
    ]);
    assert_eq!(
        answers, "2\n1048576\n4\n",
        "log_parallelism and log_groups from the file; the --log-buffer flag wins"
    );
    assert!(std::fs::read_dir(&data).unwrap().next().is_some(), "the --data flag wins over the file");
    // max_connections = 1: while one client is connected, a second one is refused. The held
    // connection retries until psql's slot is free.
    let _held = connect_once_admitted(&server);
    let error = server.query_error("SELECT 1");
    assert!(error.contains("too many clients"), "{error}");
    drop(_held);
    assert_eq!(server.terminate().code(), Some(0));
}

/// A raw connection, retried until the server admits it (psql's session may still hold the
/// only slot for a moment after psql has exited).
fn connect_once_admitted(server: &Server) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).expect("connect to the server");
        protocol::send_startup(&mut stream, "test");
        let replies = protocol::read_until_ready_or_closed(&mut stream);
        if replies.last().map(|m| m.0) == Some(b'Z') {
            return stream;
        }
        let refusal = replies.iter().find(|m| m.0 == b'E').map(|m| protocol::sqlstate(&m.1));
        assert_eq!(refusal.as_deref(), Some("53300"), "only too many clients may refuse it");
        assert!(Instant::now() < deadline, "the slot of psql's session was never freed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_bad_config_file_is_refused_by_name_before_anything_opens() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for (text, named) in [
        ("log_groups = 1\n", "log_groups"),
        ("max_connections = 0\n", "max_connections"),
        ("sync_method = \"sometimes\"\n", "sync_method"),
        ("client_send_timeout_ms = 0\n", "client_send_timeout_ms"),
        ("no_such_setting = 3\n", "no_such_setting"),
        ("log_buffer = \"lots\"\n", "log_buffer"),
        ("port = \"not a number\n", "redodb.toml"),
    ] {
        let config = dir.path().join("redodb.toml");
        std::fs::write(&config, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_redodb"))
            .args(["serve", "--port", "0", "--data"])
            .arg(&data)
            .arg("--config")
            .arg(&config)
            .output()
            .expect("run redodb serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text:?} was accepted");
        assert!(stderr.contains(named), "{text:?}: the error does not name {named}: {stderr}");
        assert!(!data.exists(), "{text:?}: the data directory was created before the check");
    }
}
