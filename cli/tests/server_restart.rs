//! `redodb serve` restarts: after SIGTERM (exit 0, clean shutdown with a checkpoint) and
//! after kill -9 (recovery from the redo log), the committed rows are there.

mod server_common;

use server_common::{require_tool, Server};

#[test]
fn committed_rows_survive_sigterm_and_kill_9() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE r (k BIGINT PRIMARY KEY, v TEXT)");
    server.query("INSERT INTO r VALUES (1, 'a'), (2, 'b')");
    // An open transaction at shutdown is rolled back.
    let mut open = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    server_common::protocol::startup(&mut open);
    server_common::protocol::send(
        &mut open,
        b'Q',
        &server_common::protocol::cstring("BEGIN; INSERT INTO r VALUES (99, 'open')"),
    );
    assert_eq!(server_common::protocol::kinds(&server_common::protocol::read_until_ready(&mut open)), "CCZ");
    assert_eq!(server.terminate().code(), Some(0), "SIGTERM is a clean exit");

    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.query("SELECT k, v FROM r ORDER BY k"), "1|a\n2|b\n");
    server.query("INSERT INTO r VALUES (3, 'c')");
    server.query("BEGIN; INSERT INTO r VALUES (4, 'd'); COMMIT");
    server.kill9();

    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.query("SELECT k FROM r ORDER BY k"), "1\n2\n3\n4\n");
    assert_eq!(server.terminate().code(), Some(0));
}
