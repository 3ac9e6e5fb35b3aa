//! `redodb snapshot` and `redodb report` end to end: a workload with snapshots taken in
//! one instance (the test process opens the database embedded), a snapshot from the
//! command line (a new instance), text and HTML reports, the HTML rendered by headless
//! Chromium, and the errors for bad ranges.
//!
//! Needs the Debian package `chromium` (`apt-get install -y chromium`).

use std::path::Path;
use std::process::Output;

use crate::common::{chromium_dom, redodb, succeeded};
use db::{awr, Database, DbConfig, Value};
use redo::{LogConfig, SyncMethod};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn failed(out: Output, what: &str) -> String {
    assert!(!out.status.success(), "{what} should have failed:\n{}", stdout(&out));
    stderr(&out)
}

fn open(dir: &Path) -> Database {
    let mut log = LogConfig::new(".");
    log.log_file_size = 1 << 20;
    log.log_buffer = 256 << 10;
    log.sync_method = SyncMethod::Fdatasync;
    Database::open(
        dir,
        DbConfig { log, checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..DbConfig::default() },
    )
    .expect("open the database")
}

/// Three snapshots of one instance: 1, then 40 bound inserts committed, 2, then 150
/// inserts with literals (each a hard parse), 3.
fn workload_with_snapshots(dir: &Path) {
    let db = open(dir);
    let mut s = db.session();
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", &[]).expect("create");
    assert_eq!(awr::take_snapshot(&db).expect("snapshot 1").id, 1);
    for i in 0..40 {
        s.execute("INSERT INTO t VALUES ($1, 'bound')", &[Value::Int(i)]).expect("insert");
        s.execute("COMMIT", &[]).expect("commit");
    }
    assert_eq!(awr::take_snapshot(&db).expect("snapshot 2").id, 2);
    for i in 40..190 {
        s.execute(&format!("INSERT INTO t VALUES ({i}, 'literal')"), &[]).expect("insert");
        s.execute("COMMIT", &[]).expect("commit");
    }
    assert_eq!(awr::take_snapshot(&db).expect("snapshot 3").id, 3);
}

#[test]
fn reports_between_snapshots_of_one_instance_in_text_and_html() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("db");
    workload_with_snapshots(&data);
    let data_arg = data.to_str().expect("utf-8 path");

    // A snapshot from the command line: a new instance of the database.
    assert_eq!(succeeded(redodb(&["snapshot", "--data", data_arg]), "redodb snapshot"), "4\n");

    let text =
        succeeded(redodb(&["report", "--data", data_arg, "--begin", "1", "--end", "3"]), "text report");
    for section in awr::REPORT_SECTIONS {
        assert!(text.contains(&format!("\n{section}\n")), "the text report lacks {section}:\n{text}");
    }
    assert!(text.contains("Begin Snap:         1"), "{text}");
    assert!(text.contains("  End Snap:         3"), "{text}");
    let commits = text.lines().find(|l| l.starts_with("user commits ")).expect("user commits line");
    assert_eq!(commits.split_whitespace().nth(2), Some("190"), "40 + 150 commits: {commits}");
    let hard = text.lines().find(|l| l.starts_with("parse count (hard) ")).expect("hard parses line");
    let hard_parses: u64 =
        hard.split_whitespace().nth(3).and_then(|n| n.replace(',', "").parse().ok()).expect("a count");
    assert!(hard_parses >= 150, "each literal insert is a hard parse: {hard}");
    assert!(text.contains("hard parses: "), "the literal inserts are a finding:\n{text}");

    // The same range as HTML, through Chromium.
    let html_path = dir.path().join("report.html");
    let html_arg = html_path.to_str().expect("utf-8 path");
    let args =
        ["report", "--data", data_arg, "--begin", "1", "--end", "3", "--format", "html", "--out", html_arg];
    assert_eq!(succeeded(redodb(&args), "html report"), "", "--out writes the file, not standard output");
    let dom = chromium_dom(&html_path, &dir.path().join("chromium-profile"), "the HTML report");
    for section in awr::REPORT_SECTIONS.iter().chain(&["Events over Snapshots"]) {
        assert!(dom.contains(&format!(">{section}</h2>")), "the rendered DOM lacks {section}:\n{dom}");
    }
    // A histogram chart for log file sync and log file parallel write at least, and the
    // line chart of the two intervals.
    assert!(dom.matches("<svg").count() >= 3, "too few charts rendered:\n{dom}");
    assert_eq!(dom.matches("<polyline").count(), 2, "{dom}");

    // The newest two snapshots (3, taken here, and 4, from the command line) are of two
    // instances: no report spans a reopen.
    let restart = failed(redodb(&["report", "--data", data_arg]), "a report across a restart");
    assert!(restart.contains("snapshots 3 and 4 belong to different instances"), "{restart}");

    let unknown =
        failed(redodb(&["report", "--data", data_arg, "--begin", "1", "--end", "9"]), "an unknown id");
    assert!(
        unknown.contains("snapshot 9 does not exist")
            && unknown.contains("(snapshots available: 1, 2, 3, 4)"),
        "{unknown}"
    );
    let backwards =
        failed(redodb(&["report", "--data", data_arg, "--begin", "3", "--end", "2"]), "a backward range");
    assert!(
        backwards.contains("the begin snapshot (3) must be older than the end snapshot (2)"),
        "{backwards}"
    );
}

#[test]
fn the_commands_refuse_missing_databases_and_single_snapshots() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nothing-here");
    let missing_arg = missing.to_str().expect("utf-8 path");
    let error = failed(redodb(&["snapshot", "--data", missing_arg]), "a snapshot of no database");
    assert!(error.contains("is not a redodb database"), "{error}");
    assert!(!missing.exists(), "a snapshot must not create a database");
    let error = failed(redodb(&["report", "--data", missing_arg]), "a report of no database");
    assert!(error.contains("does not exist"), "{error}");

    let data = dir.path().join("db");
    drop(open(&data));
    let data_arg = data.to_str().expect("utf-8 path");
    assert_eq!(succeeded(redodb(&["snapshot", "--data", data_arg]), "redodb snapshot"), "1\n");
    let error = failed(redodb(&["report", "--data", data_arg]), "a report with one snapshot");
    assert!(error.contains("a report needs two snapshots, and") && error.contains("holds 1"), "{error}");
    let args = ["snapshot", "--data", data_arg, "--sync-method", "fdatasync"];
    assert_eq!(succeeded(redodb(&args), "redodb snapshot --sync-method"), "2\n");
    let error =
        failed(redodb(&["snapshot", "--data", data_arg, "--sync-method", "fsync"]), "a bad sync method");
    assert!(error.contains("--sync-method \"fsync\": expected fdatasync, o_dsync or o_direct"), "{error}");
    let error = failed(redodb(&["report", "--data", data_arg]), "a report across two instances");
    assert!(error.contains("snapshots 1 and 2 belong to different instances"), "{error}");
}
