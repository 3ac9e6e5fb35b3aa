//! `redodb bench` over the wire, in `--quick` mode: every scenario against redodb's own
//! server (`redodb serve`, started here), with the figures read through the `v$` views
//! over the connection (WAIT commits wait on `log file sync` once each, NOWAIT ones
//! never; the server's round trips and parses in client-practices), and `--with-postgres`
//! comparing the embedded target with a throwaway PostgreSQL 15 cluster. No timing is
//! asserted: machines are noisy.
//!
//! Needs the Debian package postgresql-15 (`/usr/lib/postgresql/15/bin`), which `.ci/run`
//! installs; without it the PostgreSQL test fails with that advice.

use std::os::unix::fs::PermissionsExt;

use crate::common::{redodb, succeeded};
use crate::server_common::Server;
use serde_json::Value;

fn num(v: &Value, field: &str) -> f64 {
    v[field].as_f64().unwrap_or_else(|| panic!("{field} is not a number in {}", short(v)))
}

fn short(v: &Value) -> String {
    let mut s = v.to_string();
    s.truncate(600);
    s
}

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("bench.json")).expect("JSON")
}

fn scenario<'a>(target: &'a Value, name: &str) -> &'a Value {
    target["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name} in {}", short(target)))
}

fn measurements<'a>(target: &'a Value, name: &str) -> &'a Vec<Value> {
    scenario(target, name)["measurements"].as_array().expect("measurements")
}

fn waits(m: &Value) -> bool {
    m["mode"].as_str().expect("mode").starts_with("WAIT/")
}

/// A measurement of a driver scenario on redodb: the v$ figures over the wire agree with
/// the driver's own counts.
fn check_v_views(m: &Value) {
    assert_eq!(m["server_figures"], "v_views", "{}", short(m));
    assert!(num(m, "commits") > 0.0, "no commits: {}", short(m));
    assert_eq!(num(m, "user_commits"), num(m, "commits"), "v$sysstat user commits == commits: {}", short(m));
    assert!(num(m, "redo_size_bytes") > 0.0, "{}", short(m));
    let sync_waits = num(m, "log_file_sync_waits");
    if waits(m) {
        assert!(sync_waits > 0.0 && sync_waits <= num(m, "user_commits"), "WAIT: {}", short(m));
    } else {
        assert_eq!(sync_waits, 0.0, "NOWAIT commits never wait: {}", short(m));
    }
}

#[test]
fn every_scenario_runs_quick_against_redodb_serve() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 4 MiB log files hold redo-size's largest --quick transaction (2 MiB, at most half).
    let server = Server::start(&dir.path().join("server"), &[]);
    let url = format!("postgres://bench@127.0.0.1:{}/redodb", server.port);
    let out = dir.path().join("out");
    let args = ["bench", "all", "--quick", "--target", &url, "--out", out.to_str().unwrap()];
    let stdout = succeeded(redodb(&args), "redodb bench all --quick --target redodb serve");
    assert!(stdout.contains("on the redodb server target"), "{stdout}");
    for needle in
        ["COMMIT TIME", "COMMIT MODES", "GROUP COMMIT", "STRANDS", "REDO SIZE", "BATCH DML", "BIND VARIABLES"]
    {
        assert!(stdout.contains(needle), "the output lacks {needle:?}:\n{stdout}");
    }
    let doc = read_json(&out.join("bench.json"));
    let targets = doc["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 1);
    let t = &targets[0];
    assert_eq!(t["flavour"], "redodb-server", "{}", short(t));
    assert_eq!(t["url"], url.as_str());

    let ct = measurements(t, "commit-time");
    assert_eq!(ct.len(), 4, "every commit mode runs on redodb's server");
    for m in ct {
        check_v_views(m);
        assert_eq!(num(m, "commits"), 300.0, "--quick runs 300 iterations");
        if waits(m) {
            assert_eq!(
                num(m, "log_file_sync_waits"),
                num(m, "commits"),
                "one log file sync per WAIT commit: {}",
                short(m)
            );
        }
    }
    for name in ["commit-modes", "group-commit", "batch-dml"] {
        for m in measurements(t, name) {
            check_v_views(m);
        }
    }
    assert_eq!(measurements(t, "commit-modes").len(), 8);

    // The server runs log_parallelism 1: the strands scenario runs 1 and marks 2.
    let st = measurements(t, "strands");
    assert_eq!(st.len(), 2);
    check_v_views(&st[0]);
    assert!(st[0]["not_applicable"].is_null());
    let why = st[1]["not_applicable"].as_str().expect("log_parallelism 2 is not applicable");
    assert!(why.contains("fixed when it starts"), "{why}");

    for m in measurements(t, "redo-size") {
        check_v_views(m);
        let target = num(m, "redo_bytes_target");
        let got = num(m, "redo_bytes_per_commit");
        assert!(got >= target * 0.5 && got <= target * 2.0, "redo per commit {got} for {target}");
    }

    let cp = measurements(t, "client-practices");
    assert_eq!(cp.len(), 12);
    let by = |variant: &str| {
        cp.iter()
            .find(|m| m["variant"] == variant)
            .unwrap_or_else(|| panic!("no {variant} in client-practices"))
    };
    // Literals parse every statement, a prepared statement once (+ BEGIN and COMMIT).
    assert!(num(by("UPDATE literal"), "parse_count_hard") >= 2000.0, "{}", short(by("UPDATE literal")));
    assert!(num(by("UPDATE bind"), "parse_count_hard") <= 3.0, "{}", short(by("UPDATE bind")));
    for m in cp {
        assert_eq!(num(m, "rows"), 2000.0, "{}", short(m));
        assert!(num(m, "server_round_trips") > 0.0, "{}", short(m));
    }
    // A fetch is a round trip on both sides; the server counts the same as the client.
    for size in [1.0f64, 10.0, 100.0, 1000.0] {
        let m = by(&format!("fetch size {size}"));
        assert_eq!(num(m, "calls"), (2000.0 / size).floor() + 1.0, "fetch calls: {}", short(m));
        assert_eq!(num(m, "server_round_trips"), num(m, "client_round_trips"), "{}", short(m));
    }
    assert_eq!(num(by("array insert 1"), "client_round_trips"), 2001.0);
    assert_eq!(num(by("array insert 1000"), "client_round_trips"), 3.0, "two pipelined calls and the COMMIT");
    assert_eq!(server.terminate().code(), Some(0), "the server outlives the bench and stops cleanly");
}

#[test]
fn with_postgres_compares_embedded_and_postgresql_side_by_side() {
    let dir = tempfile::tempdir().expect("tempdir");
    // PostgreSQL runs as the postgres user when the tests run as root: it must reach
    // the run's directory.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let data = dir.path().join("data");
    let out = dir.path().join("out");
    let args = [
        "bench",
        "commit-time",
        "--quick",
        "--with-postgres",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let stdout = succeeded(redodb(&args), "redodb bench commit-time --quick --with-postgres");
    let header = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Configuration"))
        .unwrap_or_else(|| panic!("no comparison table:\n{stdout}"));
    assert!(header.contains("embedded") && header.contains("PostgreSQL 15"), "{header}");
    assert!(header.contains("/ embedded"), "ratios to the first target: {header}");
    assert!(stdout.contains("COMPARISON commit-time: avg COMMIT us (lower is better)"), "{stdout}");
    assert!(
        !data.join("redodb-bench-postgres").exists() && !data.join("redodb-bench-db").exists(),
        "the cluster and the embedded database are removed at the end"
    );

    let doc = read_json(&out.join("bench.json"));
    let targets = doc["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0]["flavour"], "embedded");
    let pg = &targets[1];
    assert_eq!(pg["flavour"], "postgres");
    assert!(pg["server_version"].as_str().expect("version").starts_with("15."), "{}", short(pg));
    // Each target's commits are compared with the raw disk under its own sync method:
    // the embedded database's (the run's), PostgreSQL's default fdatasync.
    let raw_of = |t: &Value| {
        let s = t["scenarios"].as_array().unwrap().iter().find(|s| s["name"] == "commit-time").unwrap();
        s["settings"]["raw_sync"].clone()
    };
    assert_eq!(raw_of(&targets[0])["method"], doc["raw_sync"]["method"], "{}", short(&targets[0]));
    assert_eq!(raw_of(pg)["method"], "fdatasync", "{}", short(pg));
    let fdatasync = doc["raw_disk"].as_array().unwrap().iter().find(|r| r["method"] == "fdatasync").unwrap();
    assert_eq!(raw_of(pg)["p50_us"], fdatasync["median_us"]);
    let ms = measurements(pg, "commit-time");
    assert_eq!(ms.len(), 4, "every mode has a row");
    for m in ms {
        let batch = m["mode"].as_str().unwrap().ends_with("/BATCH");
        if batch {
            let why = m["not_applicable"].as_str().expect("BATCH is not applicable on PostgreSQL");
            assert!(why.contains("no batched commit logging"), "{why}");
            continue;
        }
        assert!(m["not_applicable"].is_null(), "{}", short(m));
        assert_eq!(num(m, "commits"), 300.0);
        assert!(num(m, "commit_avg_us") > 0.0);
        assert_eq!(m["server_figures"], "pg_stat_wal", "{}", short(m));
        assert!(m["log_file_sync_waits"].is_null(), "PostgreSQL has no wait events: {}", short(m));
        let wal_per_commit = num(m, "redo_bytes_per_commit");
        assert!(
            wal_per_commit > 50.0 && wal_per_commit < 5000.0,
            "WAL bytes per insert+commit: {}",
            short(m)
        );
        let per_sync = num(m, "commits_per_write");
        if waits(m) {
            // synchronous_commit = on: every commit flushes the WAL itself.
            assert!(per_sync > 0.2 && per_sync <= 1.5, "commits per WAL sync: {}", short(m));
        } else {
            // off: the WAL writer flushes many commits at a time.
            assert!(per_sync > 1.0, "commits per WAL sync: {}", short(m));
        }
    }
    let comparison = &doc["comparisons"].as_array().expect("comparisons")[0];
    assert_eq!(comparison["scenario"], "commit-time");
    let rows = comparison["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4);
    for r in rows {
        let values = r["values"].as_array().unwrap();
        assert!(values[0].as_f64().unwrap() > 0.0, "embedded ran every mode: {r}");
        let batch = r["configuration"].as_str().unwrap().ends_with("/BATCH");
        assert_eq!(values[1].is_null(), batch, "PostgreSQL has a figure but for BATCH: {r}");
    }
    let csv = std::fs::read_to_string(out.join("measurements.csv")).expect("measurements.csv");
    assert_eq!(csv.lines().filter(|l| l.starts_with("PostgreSQL 15")).count(), 4, "{csv}");
    assert!(out.join("compare-commit-time.svg").exists(), "the comparison chart");
}
