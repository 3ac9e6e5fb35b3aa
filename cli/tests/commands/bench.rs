//! `redodb bench` and `redodb probe` end to end, in `--quick` mode on the embedded target
//! (client-practices on the redodb server the run starts for it): every scenario's JSON
//! has its fields with sane values (WAIT commits each wait on `log file sync` once,
//! NOWAIT ones never), the charts decode as PNG and parse as SVG, the HTML page renders
//! in headless Chromium, and bad flags and targets fail with a clear message. No timing
//! is asserted: machines are noisy. The wire targets: `bench_wire.rs`.
//!
//! Needs the Debian package `chromium` (`apt-get install -y chromium`).

use std::path::Path;

use crate::common::{chromium_dom, redodb, succeeded};
use serde_json::Value;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command that must fail; returns its stderr.
fn failed(args: &[&str]) -> String {
    let out = redodb(args);
    assert!(!out.status.success(), "{args:?} should have failed:\n{}", text(&out.stdout));
    text(&out.stderr)
}

fn num(v: &Value, field: &str) -> f64 {
    v[field].as_f64().unwrap_or_else(|| panic!("{field} is not a number in {}", short(v)))
}

fn short(v: &Value) -> String {
    let mut s = v.to_string();
    s.truncate(600);
    s
}

/// The scenarios the (only) target ran.
fn scenarios(doc: &Value) -> &Vec<Value> {
    let targets = doc["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 1, "one target");
    targets[0]["scenarios"].as_array().expect("scenarios")
}

fn measurements<'a>(doc: &'a Value, scenario: &str) -> &'a Vec<Value> {
    let s = scenarios(doc)
        .iter()
        .find(|s| s["name"] == scenario)
        .unwrap_or_else(|| panic!("no scenario {scenario} in the JSON"));
    s["measurements"].as_array().expect("measurements")
}

fn waits(m: &Value) -> bool {
    m["mode"].as_str().expect("mode").starts_with("WAIT/")
}

/// The fields every measurement has, with sane values.
fn check_common(m: &Value) {
    for field in
        ["commits_per_sec", "rows_per_sec", "seconds", "txn_avg_us", "redo_size_bytes", "process_cpu_pct"]
    {
        assert!(num(m, field) >= 0.0, "{field}: {}", short(m));
    }
    assert!(num(m, "commits") > 0.0, "no commits: {}", short(m));
    assert_eq!(
        num(m, "user_commits"),
        num(m, "commits"),
        "v$sysstat user commits == the driver's commits: {}",
        short(m)
    );
    assert!(num(m, "redo_size_bytes") > 0.0, "{}", short(m));
    if let Some(cpu) = m["machine_cpu_pct"].as_f64() {
        assert!((0.0..=100.0).contains(&cpu), "machine CPU % {cpu}");
    }
    assert!(m["views"]["stats"]["user commits"].is_u64(), "the v$sysstat differences: {}", short(m));
    assert!(m["views"]["events"].is_object(), "the v$system_event differences: {}", short(m));
    let sync_waits = num(m, "log_file_sync_waits");
    if waits(m) {
        assert!(sync_waits > 0.0 && sync_waits <= num(m, "user_commits"), "WAIT: {}", short(m));
    } else {
        assert_eq!(sync_waits, 0.0, "NOWAIT commits never wait: {}", short(m));
    }
}

fn check_json(doc: &Value) {
    assert!(doc["redodb_version"].is_string());
    assert!(num(&doc["machine"], "cpus") >= 1.0);
    assert!(doc["machine"]["fs_type"].is_string());
    let raw = &doc["raw_sync"];
    for field in ["p50_us", "mean_us", "p99_us", "ops_per_sec"] {
        assert!(num(raw, field) > 0.0, "the raw sync of the same run: {field} in {raw}");
    }

    let ct = measurements(doc, "commit-time");
    assert_eq!(ct.len(), 4, "four commit modes");
    // The ratios to the raw sync divide like by like: the commit's p50 by the raw p50, its
    // mean by the raw mean, each shown with two decimals.
    let table =
        &scenarios(doc).iter().find(|s| s["name"] == "commit-time").expect("commit-time")["tables"][0];
    let columns: Vec<&str> =
        table["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let column = |name: &str| {
        columns.iter().position(|c| *c == name).unwrap_or_else(|| panic!("no {name:?} in {columns:?}"))
    };
    let (p50_ratio, mean_ratio) = (column("p50 / raw p50"), column("Avg / raw avg"));
    let (p50_col, mean_col) = (column("p50 commit us"), column("Avg commit us"));
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{table}");
    for (m, row) in ct.iter().zip(rows) {
        check_common(m);
        assert_eq!(num(m, "commits"), 300.0, "--quick runs 300 iterations");
        let (p50, mean) = (num(m, "commit_p50_us"), num(m, "commit_avg_us"));
        assert!(p50 > 0.0 && mean > 0.0, "{}", short(m));
        let cell = |i: usize| row[i].as_str().unwrap().to_string();
        assert_eq!(cell(p50_col), format!("{p50:.1}"), "{row}");
        assert_eq!(cell(mean_col), format!("{mean:.1}"), "{row}");
        assert_eq!(cell(p50_ratio), format!("{:.2}", p50 / num(raw, "p50_us")), "{row}");
        assert_eq!(cell(mean_ratio), format!("{:.2}", mean / num(raw, "mean_us")), "{row}");
        if waits(m) {
            assert_eq!(
                num(m, "log_file_sync_waits"),
                num(m, "commits"),
                "one log file sync per WAIT commit: {}",
                short(m)
            );
        }
    }

    let cm = measurements(doc, "commit-modes");
    assert_eq!(cm.len(), 8, "two variants x four modes");
    for m in cm {
        check_common(m);
        assert_eq!(num(m, "sessions"), 6.0);
        assert!(["io-bound", "cpu-bound"].contains(&m["variant"].as_str().expect("variant")));
        let (cpu_t, w_t, r_t) = (num(m, "cpu_t_ms"), num(m, "w_t_ms"), num(m, "r_t_ms"));
        assert!(cpu_t > 0.0 && w_t >= 0.0, "{}", short(m));
        assert!((r_t - cpu_t - w_t).abs() < 1e-9, "Rt = CPUt + Wt: {}", short(m));
        if waits(m) {
            let pct = num(m, "log_file_sync_pct");
            assert!(pct > 0.0 && pct <= 100.0, "{}", short(m));
        }
    }

    let gc = measurements(doc, "group-commit");
    assert_eq!(gc.iter().map(|m| num(m, "sessions")).collect::<Vec<_>>(), [1.0, 7.0]);
    for m in gc {
        check_common(m);
        assert!(num(m, "redo_mb_per_sec") > 0.0);
        assert!(num(m, "commits_per_write") > 0.0);
        assert!(num(m, "avg_write_bytes") >= 2000.0, "a ~2,000-byte row per commit: {}", short(m));
    }

    let st = measurements(doc, "strands");
    assert_eq!(st.iter().map(|m| num(m, "strands")).collect::<Vec<_>>(), [1.0, 2.0]);
    for m in st {
        check_common(m);
        assert_eq!(num(m, "requests_per_write"), 1.0, "one write request per member at any strand count");
    }

    let rs = measurements(doc, "redo-size");
    assert_eq!(rs.len(), 4);
    for m in rs {
        check_common(m);
        let target = num(m, "redo_bytes_target");
        let got = num(m, "redo_bytes_per_commit");
        assert!(got >= target * 0.5 && got <= target * 2.0, "redo per commit {got} for {target}");
        assert!(num(m, "commit_avg_us") > 0.0);
    }

    let bd = measurements(doc, "batch-dml");
    assert_eq!(bd.len(), 4, "rows 1 and 10 x sessions 1 and 6");
    for m in bd {
        check_common(m);
        assert_eq!(num(m, "rows"), num(m, "commits") * num(m, "rows_per_commit"), "{}", short(m));
    }

    let cp = scenarios(doc).iter().find(|s| s["name"] == "client-practices").expect("client-practices");
    let ran_on = cp["ran_on"].as_str().expect("client-practices says where it ran");
    assert!(ran_on.contains("redodb server started for it"), "{ran_on}");
    let ms = cp["measurements"].as_array().expect("measurements");
    assert_eq!(ms.len(), 12, "4 bind tests, 4 fetch sizes, 4 array sizes");
    for m in ms {
        assert_eq!(num(m, "rows"), 2000.0, "--quick: 2,000 rows or statements: {}", short(m));
        assert!(num(m, "server_round_trips") > 0.0, "the server counts round trips: {}", short(m));
    }
}

/// The PNG decodes to an image of the chart's size; the SVG parses as XML with text.
fn check_charts(out: &Path, doc: &Value) -> usize {
    let mut n = 0;
    for s in scenarios(doc) {
        let files = s["chart_files"].as_array().expect("chart_files");
        assert!(!files.is_empty(), "{} has no charts", s["name"]);
        for f in files {
            let f = f.as_str().expect("a file name");
            let png = std::fs::read(out.join(format!("{f}.png"))).expect("the PNG");
            let decoder = png::Decoder::new(std::io::Cursor::new(png));
            let mut reader = decoder.read_info().unwrap_or_else(|e| panic!("{f}.png: {e}"));
            let mut buf = vec![0; reader.output_buffer_size()];
            let info = reader.next_frame(&mut buf).unwrap_or_else(|e| panic!("{f}.png: {e}"));
            assert!(info.width >= 600 && info.height >= 400, "{f}.png is {}x{}", info.width, info.height);
            assert!(buf.iter().any(|b| *b != 255), "{f}.png is blank");
            let svg = std::fs::read_to_string(out.join(format!("{f}.svg"))).expect("the SVG");
            let xml = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{f}.svg: {e}"));
            assert_eq!(xml.root_element().tag_name().name(), "svg");
            let texts: String = xml.descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect();
            assert!(texts.contains("redodb"), "{f}.svg lacks the caption with the version: {texts}");
            assert!(texts.contains("CPUs"), "{f}.svg lacks the machine facts: {texts}");
            n += 1;
        }
    }
    n
}

/// Every scenario `redodb bench --list` names (besides `all`).
const SCENARIOS: [&str; 7] =
    ["commit-time", "commit-modes", "group-commit", "strands", "redo-size", "batch-dml", "client-practices"];

#[test]
fn every_scenario_runs_quick_on_the_embedded_target_and_writes_json_csv_charts_and_html() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let data = dir.path().join("data");
    let args = ["bench", "all", "--quick", "--out", out.to_str().unwrap(), "--data", data.to_str().unwrap()];
    let stdout = succeeded(redodb(&args), "redodb bench all --quick");
    for needle in [
        "COMMIT TIME: 1 session",
        "COMMIT MODES, IO-bound: 6 sessions",
        "COMMIT MODES, CPU-bound: unit of work per commit",
        "GROUP COMMIT",
        "STRANDS",
        "REDO SIZE",
        "BATCH DML",
        "BIND VARIABLES",
        "FETCH SIZE",
        "ARRAY INSERT",
        "raw sync      4 KiB write+sync",
    ] {
        assert!(stdout.contains(needle), "the output lacks {needle:?}:\n{stdout}");
    }

    assert!(
        stdout.lines().any(|l| l.starts_with("  Setting ")
            && ["Commit/s", "CPU %", "log file sync %", "log file parallel write %"]
                .iter()
                .all(|c| l.contains(c))),
        "seed 000's first table:\n{stdout}"
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).expect("bench.json"))
            .expect("JSON");
    check_json(&doc);

    let csv = std::fs::read_to_string(out.join("measurements.csv")).expect("measurements.csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("target,scenario,variant,mode,not_applicable,sessions,strands,"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("embedded,commit-time,"), "{}", lines[1]);
    let total: usize = scenarios(&doc).iter().map(|s| s["measurements"].as_array().unwrap().len()).sum();
    assert_eq!(lines.len(), total + 1, "a CSV row per measurement");

    let charts = check_charts(&out, &doc);
    let dom = chromium_dom(&out.join("index.html"), &dir.path().join("chromium-profile"), "the HTML page");
    for name in SCENARIOS {
        assert!(dom.contains(&format!("<section id=\"{name}\">")), "the page lacks {name}");
    }
    assert_eq!(dom.matches("<svg").count(), charts, "every chart inline");
    assert!(dom.contains("raw sync (this run)"), "the page carries the machine facts");
    assert!(dom.contains("href=\"bench.json\""));
}

#[test]
fn the_default_scenario_is_commit_modes_and_list_names_every_scenario() {
    let list = succeeded(redodb(&["bench", "--list"]), "redodb bench --list");
    for name in SCENARIOS {
        assert!(list.lines().any(|l| l.trim_start().starts_with(name)), "--list lacks {name}:\n{list}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let args =
        ["bench", "--quick", "--seconds", "0.1", "--warmup", "0", "--data", dir.path().to_str().unwrap()];
    let stdout = succeeded(redodb(&args), "redodb bench --quick");
    assert!(stdout.contains("bench commit-modes on the embedded target"), "{stdout}");
    assert!(stdout.contains("COMMIT MODES, CPU-bound"), "{stdout}");
    assert!(!dir.path().join("redodb-bench-db").exists(), "--data keeps only what the user had");
}

#[test]
fn bad_flags_and_targets_fail_with_a_clear_message() {
    let cases: [(&[&str], &str); 10] = [
        (&["bench", "no-such-scenario"], "invalid value 'no-such-scenario'"),
        (&["bench", "--seconds", "0"], "--seconds must be from"),
        (&["bench", "--target", "mysql://x"], "expected `embedded` or a postgres://USER@HOST:PORT/DB URL"),
        (
            &["bench", "--compare", "embedded,localhost:5432"],
            "target \"localhost:5432\": expected `embedded`",
        ),
        (
            &["bench", "--target", "postgres://127.0.0.1:5433/db", "--compare", "embedded"],
            "cannot be used with",
        ),
        // Port 1 of the loopback: nothing listens there, the connection is refused at once.
        (
            &["bench", "--quick", "--target", "postgres://bench@127.0.0.1:1/db"],
            "connecting to postgres://bench@127.0.0.1:1/db",
        ),
        (&["bench", "--target", "postgres://127.0.0.1:notaport/db"], "not a PostgreSQL connection URL"),
        (&["bench", "redo-size", "--redo-sizes", "64M"], "redo sizes must be from 1K to 16M"),
        (&["bench", "strands", "--strands", "0"], "--strands"),
        (&["probe", "--sizes", "100"], "write sizes must be multiples of 512"),
    ];
    for (args, needle) in cases {
        let err = failed(args);
        assert!(err.contains(needle), "{args:?}: expected {needle:?} in:\n{err}");
    }
    let err = failed(&["probe", "/no/such/directory"]);
    assert!(err.contains("is not a directory"), "{err}");
}

#[test]
fn probe_measures_the_cells_and_writes_the_verdict_and_the_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("probe.json");
    let config = dir.path().join("redodb.toml");
    std::fs::write(&config, "port = 5544\n").unwrap();
    let args = [
        "probe",
        dir.path().to_str().unwrap(),
        "--quick",
        "--sizes",
        "512,4K,64K",
        "--writers",
        "1,2",
        "--json",
        json.to_str().unwrap(),
        "--write-config",
        config.to_str().unwrap(),
    ];
    let stdout = succeeded(redodb(&args), "redodb probe");
    for needle in ["WRITE + SYNC", "VERDICT", "Single-session commit ceiling", "Group commit:", "To use it:"]
    {
        assert!(stdout.contains(needle), "the output lacks {needle:?}:\n{stdout}");
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cells = doc["cells"].as_array().expect("cells");
    for method in ["fdatasync", "o_dsync", "o_direct"] {
        for size in [512.0, 4096.0, 65536.0] {
            assert!(
                cells.iter().any(|c| c["method"] == method
                    && num(c, "write_bytes") == size
                    && num(c, "writers") == 1.0),
                "no {method} {size} cell"
            );
        }
    }
    for c in cells.iter().filter(|c| c["supported"] == true) {
        assert!(num(c, "p50_us") > 0.0 && num(c, "p99_us") >= num(c, "p50_us"), "{c}");
        assert!(num(c, "mb_per_sec") > 0.0, "{c}");
    }
    assert!(cells.iter().any(|c| c["file"] == "appended"), "appended files are probed");
    assert!(cells.iter().any(|c| num(c, "writers") == 2.0), "2 writers are probed");
    let verdict = &doc["verdict"];
    let method = verdict["recommended_sync_method"].as_str().expect("a method");
    assert!(num(verdict, "single_session_commits_per_sec") > 0.0);
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(written.contains("port = 5544"), "{written}");
    assert!(written.contains(&format!("sync_method = \"{method}\"")), "{written}");
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".redodb-probe")));
}
