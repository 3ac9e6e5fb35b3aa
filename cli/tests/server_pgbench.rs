//! `redodb serve` under pgbench in its three protocol modes (simple, extended, prepared),
//! four clients each: every transaction must succeed and every row must be there.

mod server_common;

use std::process::Command;

use server_common::{require_tool, Server};

const CLIENTS: u32 = 4;
const TRANSACTIONS: u32 = 200;

#[test]
fn pgbench_in_every_protocol_mode() {
    require_tool("psql");
    require_tool("pgbench");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE bench (id BIGINT PRIMARY KEY, n INTEGER NOT NULL, note TEXT)");
    let script = dir.path().join("script.sql");
    for (round, mode) in ["simple", "extended", "prepared"].into_iter().enumerate() {
        // Random keys from a range wide enough that 800 never collide in practice
        // (pgbench has no transaction counter); the last digit keeps the rounds apart.
        std::fs::write(
            &script,
            format!(
                "\\set id random(1, 1000000000000)\n\
                 INSERT INTO bench VALUES (:id * 10 + {round}, :client_id, '{mode}');\n\
                 SELECT n FROM bench WHERE id = :id * 10 + {round};\n"
            ),
        )
        .unwrap();
        let out = Command::new("pgbench")
            .args(["-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "test", "-n"])
            .args(["-M", mode, "-c", &CLIENTS.to_string(), "-t", &TRANSACTIONS.to_string(), "-f"])
            .arg(&script)
            .arg("redodb")
            .output()
            .expect("run pgbench");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "pgbench -M {mode}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let total = CLIENTS * TRANSACTIONS;
        assert!(
            stdout.contains(&format!("number of transactions actually processed: {total}/{total}")),
            "pgbench -M {mode}: {stdout}"
        );
        assert_eq!(
            server.query(&format!("SELECT count(*) FROM bench WHERE note = '{mode}'")),
            format!("{total}\n")
        );
    }
    assert_eq!(server.terminate().code(), Some(0));
}
