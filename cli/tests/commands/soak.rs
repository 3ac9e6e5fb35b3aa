//! `redodb soak` end to end: a minute of the mixed workload over the wire with kill -9 about
//! every 15 s, judged from its JSON (no unexpected error, every restart verified, commits
//! in every mode and by every path, the injected errors counted, samples of the server
//! process and its directory); and a soak whose server's log fails (an injected EIO on
//! sync) must say so and fail.

use std::process::Command;

use serde_json::Value;

fn soak(args: &[&str], env: &[(&str, &str)]) -> (std::process::Output, Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("soak.json");
    let out = Command::new(env!("CARGO_BIN_EXE_redodb"))
        .arg("soak")
        .args(args)
        .arg("--data")
        .arg(dir.path().join("run"))
        .arg("--json")
        .arg(&json)
        .envs(env.iter().copied())
        .output()
        .expect("run redodb soak");
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "no JSON from redodb soak ({e}):\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, serde_json::from_str(&text).expect("the soak's JSON parses"))
}

fn u(v: &Value, path: &str) -> u64 {
    v.pointer(path).and_then(Value::as_u64).unwrap_or_else(|| panic!("{path} is not a number in the JSON"))
}

#[test]
fn a_minute_of_soak_with_kills_loses_no_acknowledged_commit() {
    let (out, report) =
        soak(&["--duration", "60s", "--kill-every", "15s", "--sample-every", "2s", "--clients", "4"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "redodb soak failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report["passed"], true, "{stdout}");
    assert_eq!(report["errors"]["unexpected"].as_array().map(Vec::len), Some(0), "{stdout}");

    // Kills at random moments between 7.5 and 22.5 s into each life: at least two in a
    // minute, each followed by a verified restart, and a last exact check after the clean
    // shutdown.
    let kills = u(&report, "/kills");
    assert!(kills >= 2, "{kills} kills");
    assert_eq!(u(&report, "/errors/kills"), kills);
    assert!(u(&report, "/restarts_verified") > kills, "{stdout}");
    assert_eq!(u(&report, "/verifications_failed"), 0);
    let lives = report["lives"].as_array().unwrap();
    let last = lives.last().unwrap();
    assert_eq!(last["verification"]["exact"], true, "the last life checks after a clean shutdown");
    assert_eq!(last["verification"]["clients_failed"], 0);
    assert!(lives.iter().filter(|l| l["ended_by"] == "kill -9").count() as u64 == kills);
    // Each kill cut off every client's call in flight.
    assert!(u(&report, "/errors/connections_lost_at_kill") >= kills, "{stdout}");
    // Every commit is accounted for: the restarts recovered the acknowledged ones, less the
    // NOWAIT ones a kill took, plus the in-doubt ones that had committed.
    assert!(u(&report, "/recovery/commits_recovered") > 0);
    assert_eq!(
        u(&report, "/recovery/commits_recovered"),
        u(&report, "/commits_total") - u(&report, "/recovery/nowait_lost")
            + u(&report, "/recovery/in_doubt_committed"),
        "{stdout}"
    );

    // Commits in every mode, and by every way of choosing it.
    for mode in ["wait_immediate", "wait_batch", "nowait_immediate", "nowait_batch"] {
        assert!(u(&report, &format!("/commits/{mode}")) > 0, "no {mode} commit: {stdout}");
    }
    let paths = report["clients"]["commits_by_path"].as_object().unwrap();
    for path in [
        "autocommit (session mode)",
        "COMMIT (session mode)",
        "COMMIT WRITE <wait> <logging>",
        "COMMIT WRITE <one option>",
        "SET LOCAL synchronous_commit = off; COMMIT",
        "COPY in autocommit (session mode)",
        "COMMIT WRITE in a call of two commits",
        "COMMIT in a call of two commits",
    ] {
        assert!(paths.get(path).and_then(Value::as_u64).unwrap_or(0) > 0, "no commit by {path}: {paths:?}");
    }
    let operations = report["clients"]["operations"].as_object().unwrap();
    for op in [
        "INSERT",
        "UPDATE",
        "DELETE",
        "COPY rows (text)",
        "COPY rows (csv)",
        "cursor fetches",
        "portal fetches",
        "selects",
    ] {
        assert!(operations.get(op).and_then(Value::as_u64).unwrap_or(0) > 0, "no {op}: {operations:?}");
    }
    // Cancels of both kinds, counted as injected.
    assert!(u(&report, "/clients/cancels_lock_wait") > 0, "{stdout}");
    assert!(
        u(&report, "/clients/cancels_long_select") + u(&report, "/clients/long_select_finished_first") > 0
    );
    assert_eq!(
        u(&report, "/errors/cancels"),
        u(&report, "/clients/cancels_lock_wait") + u(&report, "/clients/cancels_long_select")
    );
    // The server counted the last life's commits in the modes the clients asked for.
    assert_eq!(report["statistics_check"]["equal"], true, "{}", report["statistics_check"]);
    assert_eq!(u(&report, "/server_log/panic_lines"), 0);
    assert_eq!(u(&report, "/server_log/error_lines"), 0);

    // Samples of the server process and its directory, in more than one life.
    let samples = report["samples"].as_array().unwrap();
    assert!(samples.len() >= 15, "{} samples", samples.len());
    for s in samples {
        assert!(s["rss_kib"].as_u64().unwrap() > 1024, "{s}");
        assert!(s["fds"].as_u64().unwrap() > 0 && s["threads"].as_u64().unwrap() > 0, "{s}");
        assert!(s["log_bytes"].as_u64().unwrap() > 0, "{s}");
    }
    let sampled_lives: std::collections::BTreeSet<u64> =
        samples.iter().map(|s| s["life"].as_u64().unwrap()).collect();
    assert!(sampled_lives.len() >= 3, "{sampled_lives:?}");
    assert!(report["rss_kib"]["lives"].as_array().is_some_and(|l| !l.is_empty()));
    assert!(u(&report, "/directory/max/data_bytes") > 0, "a checkpoint image was written");
    assert!(stdout.contains("PASSED"), "{stdout}");
}

#[test]
fn a_soak_whose_server_log_fails_reports_it_and_fails() {
    // From the 200th sync of a redo log file on, every sync fails with EIO: the server
    // stops (fail-stop, exit 3) in each life, and the soak must not call that a pass.
    let (out, report) = soak(
        &[
            "--duration",
            "6s",
            "--kill-every",
            "0",
            "--sample-every",
            "1s",
            "--clients",
            "2",
            "--sync-method",
            "fdatasync",
        ],
        &[("REDODB_FAULTS", "sync:.log:200:EIO")],
    );
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(report["passed"], false);
    let kinds = report["errors"]["unexpected_by_kind"].as_object().unwrap();
    assert!(kinds.contains_key("server exited"), "{kinds:?}");
    let failures = report["failures"].to_string();
    assert!(failures.contains("unexpected errors"), "{failures}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("the soak failed"));
}
