//! Real crash tests: a child process (`redodb crash-workload`) commits in all four modes
//! from several threads and records every acknowledgement outside the log directory; the
//! test kills it with SIGKILL at a random moment, reopens the log, and checks that
//!
//! - the recovered commits are a dense prefix of SCNs,
//! - every commit acknowledged under WAIT is there, with its own payload,
//! - NOWAIT commits are missing only as a suffix (implied by the prefix),
//!
//! then starts the next child on the same directory, so recovery after recovery is tested.
//! `REDO_CRASH_ITERATIONS` changes the number of kills (default 50).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use redo::sim::SimRng;
use redo::{LogConfig, RedoLog, Scn, SyncMethod};

fn config(dir: &Path, mirror: Option<&Path>, strands: u32, method: SyncMethod) -> LogConfig {
    crate::crash_configs::crash_config(dir.to_path_buf(), mirror.map(Path::to_path_buf), strands, method)
}

struct Ack {
    waited: bool,
    payload: String,
}

fn read_acks(path: &Path) -> BTreeMap<u64, Ack> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut acks = BTreeMap::new();
    // Only whole lines: the kill can tear the last one anywhere (a write crossing a page
    // of the file stops between the pages), even inside the payload's x's.
    for line in text.split_inclusive('\n').filter_map(|l| l.strip_suffix('\n')) {
        let mut parts = line.splitn(3, ' ');
        let (Some(scn), Some(kind), Some(payload)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Ok(scn) = scn.parse::<u64>() else { continue };
        if !matches!(kind, "W" | "N") || !payload.ends_with(['x', ':']) {
            continue;
        }
        acks.insert(scn, Ack { waited: kind == "W", payload: payload.to_string() });
    }
    acks
}

fn kill_and_recover(iterations: u64, strands: u32, method: SyncMethod, mirrored: bool) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("db");
    let mirror = mirrored.then(|| root.path().join("mirror"));
    let mut rng = SimRng::new(0x5EED ^ strands as u64 ^ (mirrored as u64) << 8);
    // Every commit known to be in the database, by SCN.
    let mut model: BTreeMap<u64, String> = BTreeMap::new();
    let mut total_waited = 0usize;
    let mut total_recovered = 0usize;
    for i in 0..iterations {
        let acks_path = root.path().join(format!("acks-{i}"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_redodb"));
        cmd.arg("crash-workload")
            .arg("--dir")
            .arg(&dir)
            .arg("--acks")
            .arg(&acks_path)
            .arg("--tag")
            .arg(format!("i{i}"))
            .arg("--seed")
            .arg(i.to_string())
            .arg("--strands")
            .arg(strands.to_string())
            .arg("--sync-method")
            .arg(method.name())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(m) = &mirror {
            cmd.arg("--mirror").arg(m);
        }
        let mut child = cmd.spawn().expect("spawn crash-workload");
        std::thread::sleep(Duration::from_millis(40 + rng.upto(300)));
        let still_running = child.try_wait().unwrap().is_none();
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            still_running,
            "iteration {i}: the workload exited by itself: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        let acks = read_acks(&acks_path);
        let (log, recovered) = RedoLog::open(config(&dir, mirror.as_deref(), strands, method))
            .unwrap_or_else(|e| panic!("iteration {i}: reopen failed: {e}"));
        let report = &recovered.report;
        for (expected, t) in (report.checkpoint_scn.0 + 1..).zip(&recovered.transactions) {
            assert_eq!(t.scn.0, expected, "iteration {i}: SCNs not dense: {report}");
            let payload = String::from_utf8(t.changes.concat()).unwrap();
            let known = acks.get(&t.scn.0).map(|a| &a.payload).or_else(|| model.get(&t.scn.0));
            if let Some(known) = known {
                assert_eq!(&payload, known, "iteration {i}: {} recovered with another payload", t.scn);
            } else {
                // Committed but killed before its acknowledgement was recorded: it must be
                // a commit of this run.
                assert!(payload.starts_with(&format!("i{i}:")), "iteration {i}: unknown commit {payload}");
            }
        }
        let last = report.last_scn.0;
        for (scn, ack) in &acks {
            if ack.waited {
                total_waited += 1;
                assert!(*scn <= last, "iteration {i}: WAIT commit {scn} acknowledged but lost (recovery ended at {last}): {report}");
            }
        }
        for t in &recovered.transactions {
            model.insert(t.scn.0, String::from_utf8(t.changes.concat()).unwrap());
        }
        total_recovered += recovered.transactions.len();
        // SCNs past the recovered end were lost (a NOWAIT suffix) and will be reused.
        model.retain(|s, _| *s <= last);
        assert_eq!(log.durable_commit().0, Scn(last));
        drop(log);
    }
    eprintln!(
        "{iterations} kills (strands {strands}, {}, mirrored {mirrored}): {total_waited} WAIT acknowledgements checked, {total_recovered} commits recovered",
        method.name()
    );
    assert!(
        total_waited > iterations as usize,
        "the workload acknowledged too few WAIT commits to test anything"
    );
}

fn iterations() -> u64 {
    std::env::var("REDO_CRASH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(50)
}

#[test]
fn kill_9_at_random_moments_never_loses_an_acknowledged_wait_commit() {
    kill_and_recover(iterations(), 1, SyncMethod::Fdatasync, false);
}

#[test]
fn kill_9_with_strands_mirrored_members_and_direct_io_recovers_a_prefix() {
    kill_and_recover(iterations() / 2, 4, SyncMethod::DirectDsync, true);
}
