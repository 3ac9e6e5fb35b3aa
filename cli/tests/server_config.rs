//! `redodb serve --config FILE`: the file's settings apply, the flags override them, and a
//! bad file stops the server before it opens anything, with an error naming the setting.

mod server_common;

use std::process::Command;

use server_common::{require_tool, Server};

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
    let parameter =
        |name: &str| server.query(&format!("SELECT value FROM v$parameter WHERE name = '{name}'"));
    assert_eq!(parameter("log_parallelism"), "2\n");
    assert_eq!(parameter("log_buffer"), "1048576\n", "the flag wins over the file");
    assert_eq!(server.query("SELECT count(*) FROM v$log"), "4\n", "log_groups from the file");
    assert!(std::fs::read_dir(&data).unwrap().next().is_some(), "the --data flag wins over the file");
    // max_connections = 1: a second client is refused while one is connected.
    let _held = server.connect();
    let error = server.query_error("SELECT 1");
    assert!(error.contains("too many clients"), "{error}");
    drop(_held);
    assert_eq!(server.terminate().code(), Some(0));
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
