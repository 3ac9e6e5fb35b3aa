//! Smoke test of `redodb sql-bench --quick`: it runs to the end, prints its tables,
//! ratios, parse counts and checkpoint figures, and writes a JSON document with rows for
//! both SQL loops. No timing is asserted: machines are noisy.

use std::process::Command;

#[test]
fn quick_sql_bench_prints_the_tables_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_redodb"))
        .arg("sql-bench")
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
        "sql-bench failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );

    for needle in [
        "RAW DISK",
        "ENGINE BASELINE",
        "ENGINE BASELINE AGAIN",
        "SQL: embedded API, prepared statements",
        "  workload mode            sessions     per sec   p50 us   p99 us",
        "RATIOS",
        "SQL (a) insert 32 sessions NOWAIT/IMMEDIATE / engine",
        "SQL (a) insert 32 sessions WAIT/IMMEDIATE / engine",
        "SQL (b) update 32 sessions NOWAIT/IMMEDIATE / engine",
        "SQL (b) update 32 sessions WAIT/IMMEDIATE / engine",
        "PAIRED RATIOS: 32 sessions, 1 pair(s) of 0.25 s runs per line",
        "median of 1 pairs: ",
        "LITERAL SQL vs BIND VARIABLES",
        "variant                            statements/s",
        "CHECKPOINT STALL",
        "checkpoint durations ms:",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    let verdict = |l: &&str| l.contains("target ") && (l.contains("PASS") || l.contains("MISS"));
    let (before_overhead, overhead_section) =
        stdout.split_once("INSTRUMENTATION OVERHEAD").expect("an INSTRUMENTATION OVERHEAD section");
    assert_eq!(
        before_overhead.lines().filter(verdict).count(),
        9,
        "four ratio lines, four paired ratio lines and the checkpoint line with a verdict:\n{stdout}"
    );
    let (_, paired_section) = before_overhead.split_once("PAIRED RATIOS").expect("a PAIRED RATIOS section");
    let paired_section = paired_section.split("\n\n").next().unwrap();
    assert_eq!(paired_section.lines().filter(verdict).count(), 4, "{paired_section}");
    // Quick: the overhead of timing is measured on loop (b) only.
    let overhead_lines: Vec<&str> = overhead_section.lines().filter(verdict).collect();
    assert!(
        overhead_lines.len() == 1 && overhead_lines[0].trim_start().starts_with("SQL (b) update"),
        "one overhead verdict, for SQL (b):\n{stdout}"
    );

    let text = std::fs::read_to_string(&json_path).expect("the JSON file");
    let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert!(json["machine"]["cpus"].as_u64().unwrap() >= 1);
    assert!(json["machine"]["redodb_version"].is_string());
    assert!(json["raw_fdatasync_median_us"].as_f64().unwrap() > 0.0);
    for engine in ["engine", "engine_after"] {
        assert_eq!(json[engine].as_array().unwrap().len(), 2, "{engine}: WAIT and NOWAIT at 32 sessions");
    }
    assert_eq!(json["ratios"].as_array().unwrap().len(), 4);
    // Quick: one pair per line; each pair ran both sides.
    let paired = json["paired"].as_array().expect("paired ratios");
    assert_eq!(paired.len(), 4, "{paired:?}");
    assert_eq!(json["settings"]["ratio_pairs"].as_u64(), Some(1));
    for p in paired {
        let pairs = p["pairs"].as_array().unwrap();
        assert_eq!(pairs.len(), 1, "{p}");
        let (engine, sql) = (
            pairs[0]["engine_commits_per_sec"].as_f64().unwrap(),
            pairs[0]["sql_commits_per_sec"].as_f64().unwrap(),
        );
        assert!(engine > 0.0 && sql > 0.0, "{p}");
        // One pair: its ratio is the median (to the JSON's rounding of the figures).
        let median = p["median_ratio"].as_f64().expect("a median");
        assert!((median - sql / engine).abs() <= 1e-9 * median, "{p}");
    }
    let rows = json["rows"].as_array().expect("rows");
    for workload in ["insert", "update"] {
        let of: Vec<_> = rows.iter().filter(|r| r["workload"] == workload).collect();
        // Quick: 4 modes x sessions {1, 32}.
        assert_eq!(of.len(), 8, "rows of {workload}");
        for r in of {
            assert!(r["commits"].as_u64().unwrap() > 0, "{r}");
            assert!(r["sql"]["execute_count"].as_u64().unwrap() > 0, "{r}");
            assert!(r["redo_bytes_per_commit"].as_f64().unwrap() > 0.0, "{r}");
            if r["wait"] == "WAIT" {
                assert!(r["commits_per_write"].as_f64().unwrap() > 0.0, "{r}");
            }
        }
    }
    let parse = json["parse"].as_array().expect("parse rows");
    assert_eq!(parse.len(), 3);
    assert_eq!(
        parse[0]["sql"]["parse_count_hard"].as_u64(),
        Some(2_000),
        "every literal SELECT is a hard parse"
    );
    assert_eq!(
        parse[2]["sql"]["parse_count_hard"].as_u64(),
        Some(0),
        "the prepared SELECT is not parsed again"
    );
    for p in parse {
        assert_eq!(p["wrong_results"].as_u64(), Some(0), "{p}");
    }
    let overhead = json["overhead"].as_array().expect("overhead rows");
    assert_eq!(overhead.len(), 1, "{overhead:?}");
    let runs = overhead[0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * overhead[0]["pairs"].as_u64().unwrap() as usize);
    assert!(runs.iter().any(|r| r["timed_statistics"] == false), "{runs:?}");
    assert!(runs.iter().all(|r| r["commits_per_sec"].as_f64().unwrap() > 0.0), "{runs:?}");
    let checkpoint = &json["checkpoint"];
    assert_eq!(checkpoint["checkpoints"].as_array().unwrap().len(), 6);
    assert!(checkpoint["with"]["commits"].as_u64().unwrap() > 0);
    assert!(checkpoint["without"]["max_us"].as_f64().unwrap() > 0.0);
    assert!(json["problems"].as_array().unwrap().is_empty());

    // The run cleaned up after itself: only the JSON is left in the directory.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("out.json")]);
}
