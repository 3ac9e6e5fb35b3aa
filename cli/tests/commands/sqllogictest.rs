//! SQLite's sqllogictest corpus (`../shared/sqllogictest/select1-5.test`, read from there)
//! through `redodb sqllogictest`: each file on a `redodb serve` of its own, over the wire.
//! Every record of the five passes (issue 20's judge); `PASSING` holds the counts, so a
//! file that gains records (or a runner that skips some) is noticed too.
//! The runner itself is checked against the reference: PostgreSQL 15 passes every record
//! of select1 through it.

use std::path::PathBuf;
use std::process::Command;

/// The records of each file (every one of them passes).
const PASSING: [(&str, usize); 5] =
    [("select1", 1031), ("select2", 1031), ("select3", 3351), ("select4", 3857), ("select5", 1436)];

fn corpus(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/sqllogictest")
        .join(format!("{name}.test"));
    assert!(path.is_file(), "{} is missing: the tests read SQLite's corpus from ../shared", path.display());
    path
}

/// Runs the runner on `file` with `extra` flags: (passed, failed, its output).
fn run(file: &PathBuf, extra: &[&str]) -> (usize, usize, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_redodb"))
        .args(["sqllogictest", "--show-failures", "5"])
        .args(extra)
        .arg(file)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run redodb sqllogictest");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let summary = stdout
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .unwrap_or_else(|| panic!("no summary line: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    let number = |word: &str| -> usize {
        let before = summary.split(word).next().expect("the word");
        before.split_whitespace().last().and_then(|n| n.trim_end_matches(',').parse().ok()).expect("a count")
    };
    let (passed, failed) = (number(" passed"), number(" failed"));
    assert_eq!(out.status.success(), failed == 0, "the exit status says whether a record failed: {stdout}");
    (passed, failed, stdout)
}

#[test]
fn every_record_of_select1_to_5_passes() {
    let mut report = Vec::new();
    for (name, floor) in PASSING {
        let (passed, failed, output) = run(&corpus(name), &[]);
        assert!(
            failed == 0 && passed == floor,
            "{name}: {passed} records passed, {failed} failed (of {floor}):\n{output}"
        );
        report.push(format!("{name}: {passed} passed, {failed} failed"));
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn the_runner_passes_every_record_of_select1_on_postgresql() {
    let (passed, failed, output) = run(&corpus("select1"), &["--with-postgres"]);
    assert_eq!((passed, failed), (1031, 0), "{output}");
}
