//! A full disk for checkpoint images over the wire: `redodb serve` with ENOSPC injected on
//! every image it creates (`REDODB_FAULTS`) while a file of the test's exists
//! (`REDODB_FAULTS_WHILE`). The log fills; psql sessions committing wait in `log file
//! switch (checkpoint incomplete)`, and `v$session` says why (the failed checkpoint, its
//! errno and SQLSTATE); psql's Ctrl-C and `statement_timeout` end such a wait with 57014;
//! `v$checkpoint` has the failure, the server's log has it a few times, not at every
//! retry. When the space returns (the test removes the file) the checkpoint completes and
//! the session still waiting goes on by itself. With the disk full again, SIGTERM does not
//! hang on a session still waiting (its call is cancelled) and the failed final checkpoint
//! is reported; a restart recovers every acknowledged commit.

use std::fs::File;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{piped_psql, require_tool, wait_for_session, Server};

const INCOMPLETE: &str = "log file switch (checkpoint incomplete)";
/// Each row is half a megabyte: a few commits fill a 4 MiB log file.
const ROW: &str = "repeat('x', 500000)";

/// Waits for `child` to exit (at most `limit`); returns its stdout and stderr.
fn finish(mut child: Child, limit: Duration) -> (String, String) {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("psql did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Sends `inserts` of keys `from..from + n`, one autocommit statement each.
fn send_inserts(stdin: &mut ChildStdin, from: i64, n: i64) {
    for k in from..from + n {
        writeln!(stdin, "INSERT INTO t VALUES ({k}, {ROW});").unwrap();
    }
    stdin.flush().unwrap();
}

#[test]
fn commits_blocked_by_a_full_disk_for_images_are_visible_cancellable_and_go_on_when_space_returns() {
    require_tool("psql");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let log_path = dir.path().join("server.log");
    let log = Stdio::from(File::create(&log_path).unwrap());
    // The disk is "full" for images while this file exists.
    let disk_full = dir.path().join("disk-full");
    File::create(&disk_full).unwrap();
    let faults =
        [("REDODB_FAULTS", "create:image-:0:ENOSPC"), ("REDODB_FAULTS_WHILE", disk_full.to_str().unwrap())];
    let server = Server::start_with_env(&data, &["--checkpoint-interval-ms", "0"], "warn", log, &faults);
    server.query("CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)");

    // A psql session commits until the log is full: its INSERT waits for the checkpoint.
    let (filler, mut filler_in) = piped_psql(&server, "filler", &[]);
    send_inserts(&mut filler_in, 1, 200);
    wait_for_session(&server, "filler", &format!("event = '{INCOMPLETE}'"));
    let detail = server.query("SELECT wait_class, wait_detail FROM v$session WHERE username = 'filler'");
    assert!(detail.starts_with("Configuration|checkpoint failed"), "{detail}");
    assert!(detail.contains("No space left on device (os error 28)"), "{detail}");
    assert!(detail.contains("SQLSTATE 53100"), "{detail}");
    let checkpoint = server.query(
        "SELECT status, last_error_sqlstate, consecutive_failures > 0, sessions_waiting FROM v$checkpoint",
    );
    assert_eq!(checkpoint, "FAILED|53100|t|1\n");
    let failed = server.query("SELECT value > 0 FROM v$sysstat WHERE name = 'checkpoints failed'");
    assert_eq!(failed, "t\n");

    // statement_timeout, from the startup options, ends another session's wait: 57014.
    let started = Instant::now();
    let out = server.psql_with_env(
        &[("PGOPTIONS", "-c statement_timeout=300")],
        &[
            "-At",
            "-v",
            "VERBOSITY=verbose",
            "-c",
            "SHOW statement_timeout",
            "-c",
            &format!("INSERT INTO t VALUES (100000, {ROW})"),
        ],
    );
    let waited = started.elapsed();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "the insert should time out: {stdout}");
    assert_eq!(stdout, "300ms\n");
    assert!(stderr.contains("57014: canceling statement due to statement timeout"), "{stderr}");
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(30), "{waited:?}");
    // SET in the session does the same.
    let out = server.psql(&[
        "-At",
        "-v",
        "VERBOSITY=verbose",
        "-c",
        "SET statement_timeout = '250ms'",
        "-c",
        &format!("INSERT INTO t VALUES (100001, {ROW})"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("57014: canceling statement due to statement timeout"), "{stderr}");

    // psql's Ctrl-C (a CancelRequest) ends the filler's wait: 57014.
    let status = Command::new("kill").args(["-INT", &filler.id().to_string()]).status().unwrap();
    assert!(status.success());
    let (stdout, stderr) = finish(filler, Duration::from_secs(30));
    assert!(stderr.contains("57014: canceling statement due to user request"), "{stderr}");
    let acknowledged = stdout.lines().filter(|l| *l == "INSERT 0 1").count() as i64;
    assert!(acknowledged > 3, "the log held a few rows before it filled: {stdout}");
    drop(filler_in);

    // A patient session waits too, with no timeout; the space returns and it goes on by
    // itself: the checkpointer's next retry writes the image, the log reuses its group.
    let (patient, mut patient_in) = piped_psql(&server, "patient", &[]);
    send_inserts(&mut patient_in, 300_000, 20);
    wait_for_session(&server, "patient", &format!("event = '{INCOMPLETE}'"));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(server.query("SELECT status, sessions_waiting FROM v$checkpoint"), "FAILED|1\n");
    let returned = Instant::now();
    std::fs::remove_file(&disk_full).unwrap();
    drop(patient_in);
    let (stdout, stderr) = finish(patient, Duration::from_secs(30));
    assert_eq!(stdout.lines().filter(|l| *l == "INSERT 0 1").count(), 20, "{stdout}{stderr}");
    // The retry delay is at most 5 s, so the wait ends within it (plus the commits' time).
    assert!(returned.elapsed() < Duration::from_secs(20), "{:?}", returned.elapsed());
    let checkpoint = server.query(
        "SELECT status <> 'FAILED', consecutive_failures, checkpoints_completed > 0, sessions_waiting, \
         last_error_sqlstate FROM v$checkpoint",
    );
    assert_eq!(checkpoint, "t|0|t|0|53100\n", "the last error stays on record");
    let waiting = server.query(&format!("SELECT count(*) FROM v$session WHERE event = '{INCOMPLETE}'"));
    assert_eq!(waiting, "0\n");
    let log = std::fs::read_to_string(&log_path).unwrap();
    let (episode, after) = log.split_once("checkpoint completed").expect("the recovery is logged");
    let failures = episode.lines().filter(|l| l.contains("checkpoint failed")).count();
    assert!(
        (1..=12).contains(&failures),
        "the failure is logged, but not at every retry: {failures} lines\n{log}"
    );
    assert!(episode.contains("No space left on device"), "{log}");
    assert!(after.starts_with(" (image at"), "{log}");
    assert!(after.lines().next().unwrap().contains("failed attempts"), "{log}");

    // The disk fills again; a session is still waiting when the server is told to stop:
    // its call is cancelled, and the server exits (the final checkpoint fails).
    File::create(&disk_full).unwrap();
    let (stuck, mut stuck_in) = piped_psql(&server, "stuck", &[]);
    send_inserts(&mut stuck_in, 200_000, 40);
    wait_for_session(&server, "stuck", &format!("event = '{INCOMPLETE}'"));
    let stopping = Instant::now();
    let status = server.terminate();
    assert!(!status.success(), "a failed final checkpoint is an error: {status:?}");
    assert!(stopping.elapsed() < Duration::from_secs(15), "{:?}", stopping.elapsed());
    let (stdout, stderr) = finish(stuck, Duration::from_secs(10));
    assert!(stderr.contains("57014") || stderr.contains("57P01"), "{stderr}");
    let stuck_acknowledged = stdout.lines().filter(|l| *l == "INSERT 0 1").count() as i64;
    drop(stuck_in);
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("final checkpoint"), "{log}");

    // Restarted with room for images: every acknowledged commit is there, the timed-out
    // and cancelled ones are not, and the log reuses its groups again.
    let server = Server::start(&data, &["--checkpoint-interval-ms", "0"]);
    let counted = server.query(&format!("SELECT count(*) FROM t WHERE k <= {acknowledged}"));
    assert_eq!(counted, format!("{acknowledged}\n"));
    assert_eq!(server.query("SELECT count(*) FROM t WHERE k IN (100000, 100001)"), "0\n");
    assert_eq!(server.query("SELECT count(*) FROM t WHERE k BETWEEN 300000 AND 300019"), "20\n");
    let stuck_rows = server.query("SELECT count(*) FROM t WHERE k >= 200000 AND k < 300000");
    assert_eq!(stuck_rows, format!("{stuck_acknowledged}\n"), "each acknowledged commit, and only those");
    let (more, mut more_in) = piped_psql(&server, "more", &[]);
    send_inserts(&mut more_in, 1_000, 40);
    drop(more_in);
    let (stdout, stderr) = finish(more, Duration::from_secs(60));
    assert_eq!(stdout.lines().filter(|l| *l == "INSERT 0 1").count(), 40, "{stderr}");
    let checkpoint = server.query("SELECT status <> 'FAILED', checkpoints_completed > 0 FROM v$checkpoint");
    assert_eq!(checkpoint, "t|t\n");
    assert_eq!(server.terminate().code(), Some(0));
}
