//! `redodb serve` under pgbench in its three protocol modes (simple, extended, prepared),
//! with 1 and 8 clients, running insert-commit and update-commit scripts with `\set`
//! random values, each committing with a plain COMMIT (WAIT) and with COMMIT WRITE NOWAIT
//! (IMMEDIATE, and BATCH): no transaction may fail, and the rows are counted afterwards.

use std::process::Command;

use crate::common::{require_tool, Server};

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

/// pgbench's own benchmark, as a user runs it: `pgbench -i` with every initialisation
/// step (drop, create, client-side COPY, VACUUM, primary keys added by ALTER TABLE), then
/// the built-in scripts in simple and prepared modes at 1 and 8 clients, without vacuum
/// between runs (`-n`, so pgbench_history keeps every transaction's row): no transaction
/// fails, and TPC-B's invariant holds before and after a restart (the account, teller and
/// branch balances each sum to the history's deltas).
#[test]
fn pgbench_initialises_its_tables_and_runs_its_builtin_scripts_keeping_the_tpcb_invariant() {
    require_tool("psql");
    require_tool("pgbench");
    const SCALE: u32 = 10;
    const PER_CLIENT: u32 = 40;
    let dir = tempfile::tempdir().unwrap();
    // `pgbench -i` loads its rows in one transaction (86 MB of redo at scale 10), and a
    // transaction's redo is limited to half a log file: log files of 256 MB hold it.
    let config = ["--log-file-size", "256M", "--log-buffer", "16M"];
    let mut server = Server::start(dir.path(), &config);
    let pgbench = |server: &Server, args: &[&str]| {
        let out = Command::new("pgbench")
            .args(["-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "test"])
            .args(args)
            .arg("redodb")
            .output()
            .expect("run pgbench");
        let text =
            format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "pgbench {args:?}: {text}");
        text
    };
    let init = pgbench(&server, &["-i", "-I", "dtgvp", "-s", &SCALE.to_string()]);
    assert!(init.contains("creating primary keys"), "{init}");
    assert_eq!(
        server.query(
            "SELECT (SELECT count(*) FROM pgbench_branches), (SELECT count(*) FROM pgbench_tellers), \
             (SELECT count(*) FROM pgbench_accounts), (SELECT count(*) FROM pgbench_history)"
        ),
        format!("{}|{}|{}|0\n", SCALE, SCALE * 10, SCALE * 100_000)
    );
    // The keys ALTER TABLE added are keys: a duplicate is refused.
    let duplicate = server.query_error("INSERT INTO pgbench_accounts (aid, bid, abalance) VALUES (7, 1, 0)");
    assert!(duplicate.contains("23505") || duplicate.contains("duplicate key"), "{duplicate}");

    let balances =
        "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), \
                    (SELECT sum(bbalance) FROM pgbench_branches), (SELECT sum(delta) FROM pgbench_history), \
                    (SELECT count(*) FROM pgbench_history)";
    let mut history_rows = 0u32;
    for mode in ["simple", "prepared"] {
        for clients in [1u32, 8] {
            for builtin in ["tpcb-like", "simple-update", "select-only"] {
                let text = pgbench(
                    &server,
                    &[
                        "-n",
                        "-b",
                        builtin,
                        "-M",
                        mode,
                        "-c",
                        &clients.to_string(),
                        "-j",
                        &clients.min(2).to_string(),
                    ]
                    .into_iter()
                    .chain(["-t", &PER_CLIENT.to_string()])
                    .collect::<Vec<_>>(),
                );
                let total = clients * PER_CLIENT;
                let what = format!("pgbench -b {builtin} -M {mode} -c {clients}");
                assert!(text.contains(&format!("actually processed: {total}/{total}")), "{what}: {text}");
                assert!(text.contains("number of failed transactions: 0 "), "{what}: {text}");
                if builtin != "select-only" {
                    history_rows += total;
                }
                if builtin == "tpcb-like" {
                    // Only tpcb-like moves the teller and branch balances with the account's.
                    let sums = server.query(balances);
                    let parts: Vec<&str> = sums.trim().split('|').collect();
                    assert_eq!(parts[0], parts[3], "{what}: accounts against history: {sums}");
                    assert_eq!(parts[1], parts[2], "{what}: tellers against branches: {sums}");
                    if history_rows == total {
                        assert_eq!(parts[0], parts[1], "{what}: accounts against tellers: {sums}");
                    }
                    assert_eq!(parts[4], history_rows.to_string(), "{what}: {sums}");
                }
            }
        }
    }
    let before = server.query(balances);
    let parts: Vec<&str> = before.trim().split('|').collect();
    assert_eq!(parts[0], parts[3], "accounts against history: {before}");
    // Recovery keeps all of it.
    assert_eq!(server.terminate().code(), Some(0));
    server = Server::start(dir.path(), &config);
    assert_eq!(server.query(balances), before);
    assert_eq!(server.terminate().code(), Some(0));
}
