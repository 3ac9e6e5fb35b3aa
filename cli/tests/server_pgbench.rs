//! `redodb serve` under pgbench in its three protocol modes (simple, extended, prepared),
//! with 1 and 8 clients, running insert-commit and update-commit scripts with `\set`
//! random values, each committing with a plain COMMIT (WAIT) and with COMMIT WRITE NOWAIT
//! (IMMEDIATE, and BATCH): no transaction may fail, and the rows are counted afterwards.

mod server_common;

use std::process::Command;

use server_common::{require_tool, Server};

const TRANSACTIONS: u32 = 150;
/// Rows of the table the update scripts change.
const COUNTERS: u32 = 1000;

/// A script's commit, and the name it is reported under.
const COMMITS: [(&str, &str); 3] =
    [("wait", "COMMIT"), ("nowait", "COMMIT WRITE NOWAIT"), ("batch-nowait", "COMMIT WRITE BATCH NOWAIT")];

#[test]
fn pgbench_in_every_protocol_mode_client_count_and_commit_mode() {
    require_tool("psql");
    require_tool("pgbench");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.query("CREATE TABLE bench (id BIGINT PRIMARY KEY, n INTEGER NOT NULL, note TEXT)");
    server.query("CREATE TABLE counters (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)");
    server.query(&format!(
        "INSERT INTO counters VALUES {}",
        (1..=COUNTERS).map(|i| format!("({i}, 0)")).collect::<Vec<_>>().join(", ")
    ));
    let script = dir.path().join("script.sql");
    let mut updates = 0u64;
    let mut run = 0u32;
    for mode in ["simple", "extended", "prepared"] {
        for clients in [1u32, 8] {
            for (commit_name, commit) in COMMITS {
                for work in ["insert", "update"] {
                    run += 1;
                    let note = format!("{mode}-{clients}-{commit_name}");
                    // Random keys from a range wide enough that 1,200 never collide in
                    // practice (pgbench has no transaction counter); the run number in the
                    // last digits keeps the runs apart.
                    let statement = match work {
                        "insert" => format!(
                            "\\set id random(1, 1000000000000)\n\
                             BEGIN;\n\
                             INSERT INTO bench VALUES (:id * 100 + {run}, :client_id, '{note}');\n\
                             SELECT n FROM bench WHERE id = :id * 100 + {run};\n"
                        ),
                        _ => format!(
                            "\\set id random(1, {COUNTERS})\n\
                             BEGIN;\n\
                             UPDATE counters SET n = n + 1 WHERE id = :id;\n"
                        ),
                    };
                    std::fs::write(&script, format!("{statement}{commit};\n")).unwrap();
                    let out = Command::new("pgbench")
                        .args(["-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "test", "-n"])
                        .args(["-M", mode, "-c", &clients.to_string(), "-j", &clients.min(2).to_string()])
                        .args(["-t", &TRANSACTIONS.to_string(), "-f"])
                        .arg(&script)
                        .arg("redodb")
                        .output()
                        .expect("run pgbench");
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    let what = format!("pgbench -M {mode} -c {clients}, {work} then {commit}");
                    assert!(
                        out.status.success(),
                        "{what}: {stdout}\n{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    let total = clients * TRANSACTIONS;
                    assert!(
                        stdout
                            .contains(&format!("number of transactions actually processed: {total}/{total}")),
                        "{what}: {stdout}"
                    );
                    assert!(stdout.contains("number of failed transactions: 0 "), "{what}: {stdout}");
                    if work == "insert" {
                        assert_eq!(
                            server.query(&format!("SELECT count(*) FROM bench WHERE note = '{note}'")),
                            format!("{total}\n"),
                            "{what}"
                        );
                    } else {
                        updates += u64::from(total);
                        assert_eq!(
                            server.query("SELECT sum(n) FROM counters"),
                            format!("{updates}\n"),
                            "{what}: every update counted once"
                        );
                    }
                }
            }
        }
    }
    assert_eq!(server.terminate().code(), Some(0));
}
