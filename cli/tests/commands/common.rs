//! Shared by the tests that run the `redodb` binary's commands end to end and check the
//! HTML pages they write in headless Chromium (`bench`, `report`).
//!
//! Chromium comes from the Debian package `chromium` (`apt-get install -y chromium`);
//! without it a test fails with that advice rather than skipping the check.

use std::path::Path;
use std::process::{Command, Output};

/// Runs the `redodb` binary built with the tests.
pub fn redodb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redodb")).args(args).output().expect("run redodb")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts that `out` (of the command `what`) succeeded, showing both streams if not;
/// returns its stdout.
pub fn succeeded(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The DOM headless Chromium builds from `html_file`, with its profile in `profile`;
/// `what` names the page in the message when Chromium is missing.
pub fn chromium_dom(html_file: &Path, profile: &Path, what: &str) -> String {
    let version = Command::new("chromium").arg("--version").output();
    if !matches!(&version, Ok(out) if out.status.success()) {
        panic!("headless Chromium is needed to check {what}: install the Debian package chromium (apt-get install -y chromium); running `chromium --version` gave {version:?}");
    }
    let url = format!("file://{}", html_file.canonicalize().expect("absolute path").display());
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .output()
        .expect("run chromium");
    succeeded(out, "chromium --dump-dom")
}
