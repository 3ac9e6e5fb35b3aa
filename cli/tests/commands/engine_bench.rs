//! Smoke test of `redodb engine-bench --quick`: it runs to the end, prints its tables and
//! ratios, and writes a JSON document with rows for both strand counts; the ratios to the
//! disk divide by the raw figures of the main table's own sync method. No timing is
//! asserted: machines are noisy.

use std::process::Command;

#[test]
fn quick_engine_bench_prints_the_table_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_redodb"))
        .arg("engine-bench")
        .arg("--quick")
        .arg("--dir")
        .arg(dir.path())
        .arg("--json")
        .arg(&json_path)
        .output()
        .expect("run redodb");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "engine-bench failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );

    // The tables and the ratio lines.
    for needle in [
        "RAW DISK",
        "SYNC METHOD",
        "strands  mode            sessions     per sec   p50 us   p99 us",
        "RATIOS",
        "machine limit: raw 4 KiB write+sync with ",
        "2 sessions NOWAIT/IMMEDIATE commits/s, 1 strand",
        "2 sessions NOWAIT/BATCH commits/s, 2 strands",
        "WAIT p50, 2 strands / 1 strand",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    let verdict = |l: &&str| l.contains("target ") && (l.contains("PASS") || l.contains("MISS"));
    let ratios_section = stdout.split("RATIOS").nth(1).expect("a RATIOS section");
    assert_eq!(
        ratios_section.lines().filter(verdict).count(),
        7,
        "seven ratio lines with a verdict:\n{stdout}"
    );
    // The instrumentation overhead: timed_statistics TRUE vs FALSE, with its own verdict.
    let overhead_section = stdout
        .split("INSTRUMENTATION OVERHEAD")
        .nth(1)
        .and_then(|s| s.split("RATIOS").next())
        .expect("an INSTRUMENTATION OVERHEAD section");
    let overhead_lines: Vec<&str> = overhead_section.lines().filter(verdict).collect();
    assert!(
        overhead_lines.len() == 1 && overhead_lines[0].trim_start().starts_with("engine"),
        "one overhead verdict, for the engine:\n{stdout}"
    );

    // The JSON document.
    let text = std::fs::read_to_string(&json_path).expect("the JSON file");
    let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert!(json["machine"]["cpus"].as_u64().unwrap() >= 1);
    assert_eq!(json["ratios"].as_array().unwrap().len(), 7);

    // The ratios to the disk divide by the raw figures of the main table's own sync method,
    // the same statistic on both sides: p50 by the raw median, commits/s by the writes/s
    // the probe counted (not 1 / median).
    let method = json["settings"]["sync_method"].as_str().expect("the main table's sync method");
    let limit = &json["raw_limit"];
    assert_eq!(limit["method"], method, "{limit}");
    let raw_row =
        json["raw_disk"].as_array().unwrap().iter().find(|r| r["method"] == method).expect("its raw row");
    for (a, b) in [("median_us", "median_us"), ("ops_per_sec", "ops_per_sec"), ("mean_us", "mean_us")] {
        assert_eq!(limit[a], raw_row[b], "raw_limit.{a} is the raw row's {b}: {limit} / {raw_row}");
    }
    let counted = raw_row["samples"].as_f64().unwrap() / raw_row["seconds"].as_f64().unwrap();
    assert!((limit["ops_per_sec"].as_f64().unwrap() - counted).abs() < 1e-6 * counted, "{raw_row}");
    let ratio = |name: &str| {
        json["ratios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no ratio {name:?} in {}", json["ratios"]))["value"]
            .as_f64()
            .expect("measured")
    };
    let main_row = |sessions: u64| {
        rows_of(&json).into_iter().find(|r| {
            r["strands"] == 1 && r["mode"] == "WAIT/IMMEDIATE" && r["sessions"].as_u64() == Some(sessions)
        })
    };
    let one = main_row(1).expect("1 session WAIT/IMMEDIATE");
    let p50_name = format!("1 session WAIT/IMMEDIATE p50 / raw {method} p50");
    let expected = one["p50_us"].as_f64().unwrap() / limit["median_us"].as_f64().unwrap();
    assert!((ratio(&p50_name) - expected).abs() < 1e-9, "{p50_name}");
    let many = main_row(32).expect("32 sessions WAIT/IMMEDIATE");
    let rate_name = format!("32 sessions WAIT/IMMEDIATE commits/s / raw {method} writes/s");
    let expected = many["commits_per_sec"].as_f64().unwrap() / limit["ops_per_sec"].as_f64().unwrap();
    assert!((ratio(&rate_name) - expected).abs() < 1e-9, "{rate_name}");
    for name in [&p50_name, &rate_name] {
        assert!(stdout.contains(name.as_str()), "missing {name:?} in:\n{stdout}");
    }
    let overhead = &json["overhead"];
    assert_eq!(overhead["workload"], "engine", "{overhead}");
    let runs = overhead["runs"].as_array().expect("overhead runs");
    assert_eq!(runs.len(), 2 * overhead["pairs"].as_u64().unwrap() as usize, "{overhead}");
    assert_eq!(runs.iter().filter(|r| r["timed_statistics"] == true).count() * 2, runs.len());
    assert!(runs.iter().all(|r| r["commits_per_sec"].as_f64().unwrap() > 0.0), "{overhead}");
    assert!(overhead["overhead_pct"].as_f64().is_some() && overhead["pass"].is_boolean(), "{overhead}");
    let rows = rows_of(&json);
    for strands in [1, 2] {
        let of_strands: Vec<_> = rows.iter().filter(|r| r["strands"].as_u64() == Some(strands)).collect();
        // Quick: WAIT x {1, 32} sessions, NOWAIT x {1, 2, 32}, for 2 modes each.
        assert_eq!(of_strands.len(), 10, "rows for {strands} strand(s)");
        for r in of_strands {
            assert!(r["commits"].as_u64().unwrap() > 0, "{r}");
            if r["wait"] == "WAIT" {
                // Every WAIT commit gets a write in the window.
                let cpw = r["commits_per_write"].as_f64().expect("commits_per_write");
                assert!(cpw > 0.0, "{r}");
                // A write wakes only the waiters it made durable: a waiting session is
                // woken early (by a write short of its commit) far less than once a wait.
                let early = r["early_wakeups_per_sync"].as_f64().expect("early_wakeups_per_sync");
                assert!((0.0..0.5).contains(&early), "{r}");
            } else if let Some(cpw) = r["commits_per_write"].as_f64() {
                assert!(cpw > 0.0, "{r}");
            }
        }
    }
    // The run cleaned up after itself: only the JSON is left in the directory.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("out.json")]);
}

fn rows_of(json: &serde_json::Value) -> Vec<&serde_json::Value> {
    json["rows"].as_array().expect("rows").iter().collect()
}
