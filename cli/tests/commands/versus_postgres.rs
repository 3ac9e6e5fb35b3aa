//! `redodb versus-postgres`: starts a throwaway PostgreSQL 15 and `redodb serve`, drives
//! both with the same pgbench scripts, and prints and writes the comparison. Checked here:
//! it runs end to end on a fresh machine, every cell has both servers' figures, each
//! server's own count of commits agrees with pgbench's count of transactions, the server
//! that runs first alternates from cell to cell, and with `--postgres-sync-method same`
//! PostgreSQL runs the sync method of redodb's (its WAL file seen open with the same flags
//! in `/proc`), both stated in the header with the loss windows of the asynchronous
//! commits. No speed is asserted: machines are noisy.

use std::process::Command;

#[test]
fn versus_postgres_runs_both_servers_and_counts_agree() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("versus.json");
    let out = Command::new(env!("CARGO_BIN_EXE_redodb"))
        .args([
            "versus-postgres",
            "--quick",
            "--clients",
            "2",
            "--seconds",
            "1",
            "--postgres-sync-method",
            "same",
            "--scale",
            "1",
        ])
        .arg("--data")
        .arg(dir.path().join("data"))
        .arg("--json")
        .arg(&json_path)
        .output()
        .expect("run redodb versus-postgres");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "versus-postgres failed ({}):\n{stdout}\n{stderr}", out.status);
    for needle in [
        "versus PostgreSQL 15",
        "PGBENCH:",
        "sync_commit=on / WAIT",
        "sync_commit=off / NOWAIT",
        "sync_commit=off / NOWAIT BATCH",
        "tpcb-like",
        "select-only",
        "(no commit: read only)",
        "TARGETS",
        "  redodb log  sync_method=",
        "  PG WAL      wal_sync_method=",
        "(--postgres-sync-method same)",
        "  sync        the same method: both make each log write durable with ",
        "  loss        NOWAIT BATCH vs sync_commit=off: both acknowledge a commit before its log is durable",
        "redodb writes BATCH redo once ",
        "PostgreSQL's WAL writer flushes every wal_writer_delay = 200 ms",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    let verdicts =
        stdout.lines().filter(|l| l.contains("target >=") && (l.contains("PASS") || l.contains("MISS")));
    assert_eq!(verdicts.count(), 10, "a verdict per workload and mode:\n{stdout}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert!(json["postgres_version"].as_str().unwrap().starts_with("15."), "{}", json["postgres_version"]);

    // The same sync method on both sides, as asked, and as PostgreSQL really opened its WAL.
    let sync = &json["sync"];
    assert_eq!(sync["postgres_choice"], "same", "{sync}");
    assert_eq!(sync["same_method"], true, "{sync}");
    assert_eq!(sync["redodb_does"], sync["postgres_does"], "{sync}");
    let (method, wal_sync_method, wal_level) = (
        sync["redodb_sync_method"].as_str().unwrap(),
        sync["postgres_wal_sync_method"].as_str().unwrap(),
        sync["postgres_wal_level"].as_str().unwrap(),
    );
    let (expected_method, expected_level, expected_flags) = match method {
        "fdatasync" => ("fdatasync", "replica", "none"),
        "o_dsync" => ("open_datasync", "replica", "O_DSYNC"),
        "o_direct" => ("open_datasync", "minimal", "O_DIRECT|O_DSYNC"),
        other => panic!("unknown redodb sync method {other}"),
    };
    assert_eq!((wal_sync_method, wal_level), (expected_method, expected_level), "{sync}");
    assert_eq!(sync["postgres_wal_open_flags"], expected_flags, "PostgreSQL's WAL as /proc shows it: {sync}");
    let loss = &json["loss_windows"];
    assert_eq!(loss["redodb_batch_flush_timeout_ms"], 3000, "{loss}");
    let delay = loss["postgres_wal_writer_delay_ms"].as_u64().unwrap();
    assert_eq!(delay, 200, "{loss}");
    assert_eq!(loss["postgres_max_loss_ms"].as_u64().unwrap(), 3 * delay, "{loss}");
    assert!(loss["redodb_batch_flush_trigger_bytes"].as_u64().unwrap() > 0, "{loss}");

    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 10, "3 writing workloads x 3 modes, select-only once, 1 client count");
    // Which server runs first alternates from cell to cell.
    let firsts: Vec<&str> = cells.iter().map(|c| c["first"].as_str().unwrap()).collect();
    assert_eq!(firsts, ["postgres", "redodb"].repeat(5), "{firsts:?}");
    let pairings: Vec<&str> = cells.iter().map(|c| c["pairing"].as_str().unwrap()).collect();
    let mut expected = ["wait", "nowait_immediate", "nowait_batch"].repeat(3);
    expected.push("wait");
    assert_eq!(pairings, expected, "{pairings:?}");
    let workloads: Vec<&str> = cells.iter().map(|c| c["workload"].as_str().unwrap()).collect();
    assert_eq!(workloads[6..], ["tpcb-like", "tpcb-like", "tpcb-like", "select-only"], "{workloads:?}");
    for c in cells {
        if c["workload"] == "select-only" {
            // No commit to count or sync: the figures are there.
            for server in ["postgres", "redodb"] {
                assert!(c[server]["tps"].as_f64().unwrap() > 0.0, "{c}");
            }
            continue;
        }
        for server in ["postgres", "redodb"] {
            let f = &c[server];
            assert!(f["tps"].as_f64().unwrap() > 0.0 && f["latency_avg_ms"].as_f64().unwrap() > 0.0, "{c}");
            let transactions = f["transactions"].as_u64().unwrap();
            let commits = f["server_commits"].as_u64().expect("the server's commit count");
            if server == "redodb" {
                // One commit per pgbench transaction, nothing else committed meanwhile.
                assert_eq!(commits, transactions, "{c}");
                let syncs = f["server_syncs"].as_u64().expect("redo writes");
                // BATCH may leave a short run's redo to the 3 s trigger: no write at all.
                assert!(syncs > 0 || c["pairing"] == "nowait_batch", "redo writes: {c}");
            } else {
                // PostgreSQL also counts the transactions of psql and pgbench's own queries.
                assert!(commits >= transactions && commits <= transactions + 50, "{c}");
                // Its WAL syncs, counted as writes under an open_* method (O_DSYNC).
                let syncs = f["server_syncs"].as_u64().expect("WAL syncs");
                assert!(syncs > 0 || c["pairing"] != "wait", "a WAIT run syncs its WAL: {c}");
            }
        }
        let ratio = c["ratio"].as_f64().unwrap();
        let expected = c["redodb"]["tps"].as_f64().unwrap() / c["postgres"]["tps"].as_f64().unwrap();
        assert!((ratio - expected).abs() < 1e-9, "{c}");
    }
    // Both servers were stopped and their data removed with the run's directory contents.
    assert!(!dir.path().join("data").join("postgres").exists(), "the PostgreSQL cluster was removed");
}
