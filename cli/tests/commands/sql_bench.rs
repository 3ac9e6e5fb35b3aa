//! Smoke test of `redodb sql-bench --quick`: it runs to the end, prints its tables,
//! ratios, parse counts, checkpoint figures and join timings, and writes a JSON document
//! with rows for both SQL loops; and of `--joins-only --quick`: both servers started,
//! every join query run on both with the same result. No timing is asserted: machines
//! are noisy.
//!
//! The join part needs the Debian package postgresql-15 (`/usr/lib/postgresql/15/bin`),
//! which `.ci/run` installs; without it these tests fail with that advice.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// A temporary directory PostgreSQL can reach: it runs as the postgres user when the
/// tests run as root.
fn reachable_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

#[test]
fn quick_sql_bench_prints_the_tables_and_writes_json() {
    let dir = reachable_tempdir();
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
        "JOINS: redodb serve vs PostgreSQL 15",
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
    assert_eq!(json["joins"]["queries"].as_array().unwrap().len(), JOIN_QUERIES.len());
    assert!(json["problems"].as_array().unwrap().is_empty());

    // The run cleaned up after itself: only the JSON is left in the directory.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("out.json")]);
}

/// The join part's queries, as printed (`--quick` sizes).
const JOIN_QUERIES: [&str; 5] = [
    "(a) select5 8 tables x 10, 1 row",
    "(a) chain 8 tables x 500, 1 row",
    "(a) chain 8 tables x 500, all rows",
    "(b) one customer's orders",
    "(b) orders by region (whole join)",
];

#[test]
fn quick_joins_run_on_both_servers_with_the_same_results() {
    let dir = reachable_tempdir();
    let json_path = dir.path().join("joins.json");
    let out = Command::new(env!("CARGO_BIN_EXE_redodb"))
        .args(["sql-bench", "--joins-only", "--quick", "--dir"])
        .arg(dir.path().join("run"))
        .arg("--json")
        .arg(&json_path)
        .output()
        .expect("run redodb");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "sql-bench --joins-only failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(stdout.contains("JOINS: redodb serve vs PostgreSQL 15"), "{stdout}");
    assert!(stdout.contains("ratio = PostgreSQL ms / redodb ms"), "{stdout}");
    // The disk and the commit loops are not part of it.
    assert!(!stdout.contains("RAW DISK") && !stdout.contains("ENGINE BASELINE"), "{stdout}");
    for name in JOIN_QUERIES {
        let line = stdout.lines().find(|l| l.trim_start().starts_with(name));
        let line = line.unwrap_or_else(|| panic!("no line for {name:?} in:\n{stdout}"));
        assert!(line.trim_end().ends_with("same"), "{line}");
    }

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("the JSON file"))
            .expect("valid JSON");
    let joins = &json["joins"];
    assert!(joins["postgres_version"].as_str().unwrap().starts_with("15."), "{joins}");
    let runs = joins["plan"]["runs"].as_u64().unwrap() as usize;
    assert_eq!(runs, 3, "quick: 3 runs of each query");
    let queries = joins["queries"].as_array().unwrap();
    let names: Vec<&str> = queries.iter().map(|q| q["name"].as_str().unwrap()).collect();
    assert_eq!(names, JOIN_QUERIES);
    for q in queries {
        assert_eq!(q["same_result"], true, "{q}");
        assert!(q["rows"].as_u64().unwrap() >= 1, "{q}");
        for side in ["postgres", "redodb"] {
            let times = q[format!("{side}_ms")].as_array().unwrap();
            assert_eq!(times.len(), runs, "{q}");
            assert!(times.iter().all(|t| t.as_f64().unwrap() > 0.0), "{q}");
        }
        let (pg, rd) = (q["postgres_median_ms"].as_f64().unwrap(), q["redodb_median_ms"].as_f64().unwrap());
        assert!((q["ratio"].as_f64().unwrap() - pg / rd).abs() <= 1e-9 * (pg / rd), "{q}");
    }
    // The chain's one-row queries find one row; the aggregate by region one per region.
    assert_eq!(queries[0]["rows"], 1);
    assert_eq!(queries[1]["rows"], 1);
    assert_eq!(queries[4]["rows"], 10);
    assert!(json["problems"].as_array().unwrap().is_empty(), "{json}");
    // Both servers stopped and their directories removed.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("run")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
