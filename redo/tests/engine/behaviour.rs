//! Behaviour tests of the redo log engine through its public API, on real files in
//! temporary directories: commit modes, background write triggers, recovery, checkpoints
//! and log switches, group commit, log buffer space, multiplexed members, configuration
//! and foreign files, corruption versus a torn tail.
//!
//! Sizes are small (1 MiB log files, 256 KiB log buffer, `fdatasync`) so that every test
//! runs in well under a second. Anything that could hang on an engine bug runs under
//! [`with_deadline`], so that a hang fails the test instead of the whole suite.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::common::*;
use redo::format::{encode_commit_record, Geometry, BLOCK_BYTES};
use redo::storage::control_path;
use redo::*;

/// Bytes of a record header.
const RECORD_HEADER: usize = 20;

// ---------------------------------------------------------------------------------------
// Helpers

/// A configuration whose background triggers never fire during a test.
fn quiet_config(dir: &Path) -> LogConfig {
    let mut c = config(dir);
    c.batch_flush_bytes = 1 << 30;
    c.batch_flush_timeout_ms = 600_000;
    c
}

fn open(c: &LogConfig) -> (RedoLog, Recovered) {
    RedoLog::open(c.clone()).unwrap_or_else(|e| panic!("open {}: {e}", c.dir.display()))
}

/// Opens, closes cleanly and returns what recovery found.
fn recover(c: &LogConfig) -> Recovered {
    let (log, rec) = open(c);
    drop(log);
    rec
}

/// Recovery returned exactly `expected` (in any order given), in SCN order, with the same
/// transaction ids, commit LSNs and change payloads.
fn assert_recovered_exactly(rec: &Recovered, expected: &[Committed]) {
    let mut exp: Vec<&Committed> = expected.iter().collect();
    exp.sort_by_key(|c| c.receipt.scn);
    let got: Vec<Scn> = rec.transactions.iter().map(|t| t.scn).collect();
    let want: Vec<Scn> = exp.iter().map(|c| c.receipt.scn).collect();
    assert_eq!(got, want, "recovered SCNs differ; report: {}", rec.report);
    for (t, e) in rec.transactions.iter().zip(exp) {
        assert_eq!(t.txn, e.receipt.txn, "txn id of {}", t.scn);
        assert_eq!(t.commit_lsn, e.receipt.lsn, "commit lsn of {}", t.scn);
        assert_eq!(t.changes.len(), e.changes.len(), "number of changes of {}", t.scn);
        for (k, (a, b)) in t.changes.iter().zip(&e.changes).enumerate() {
            assert!(a == b, "change {k} of {} differs", t.scn);
        }
    }
}

/// SCNs run densely from `first`.
fn assert_dense_from(txns: &[RecoveredTxn], first: u64) {
    for (i, t) in txns.iter().enumerate() {
        assert_eq!(t.scn, Scn(first + i as u64), "SCNs must be dense");
    }
}

fn xor_byte(path: &Path, offset: u64, mask: u8) {
    let f = OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, offset).unwrap();
    b[0] ^= mask;
    f.write_all_at(&b, offset).unwrap();
    f.sync_all().unwrap();
}

fn write_bytes(path: &Path, offset: u64, bytes: &[u8]) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, offset).unwrap();
    f.sync_all().unwrap();
}

fn open_err(c: &LogConfig) -> RedoError {
    match RedoLog::open(c.clone()) {
        Ok(_) => panic!("open of {} should have failed", c.dir.display()),
        Err(e) => e,
    }
}

/// The (path, detail) of a [`RedoError::Foreign`]; panics on any other error.
fn expect_foreign(e: RedoError) -> (PathBuf, String) {
    match e {
        RedoError::Foreign { path, detail } => (path, detail),
        e => panic!("expected Foreign, got {e}"),
    }
}

/// `e` is a [`RedoError::Foreign`] naming `path`, with `needle` in its detail.
fn assert_foreign(e: RedoError, path: &Path, needle: &str) {
    let (got, detail) = expect_foreign(e);
    assert_eq!(got, path);
    assert!(detail.contains(needle), "{detail}");
}

// ---------------------------------------------------------------------------------------
// 1. Commit modes

#[test]
fn a_wait_commit_returns_only_once_it_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    let mut s = log.session();
    for i in 0..20u64 {
        let opts = if i % 2 == 0 { WAIT } else { BATCH_WAIT };
        let c = commit_small(&mut s, 1, i, opts);
        let r = c.receipt;
        assert!(r.waited);
        assert_eq!(r.scn, Scn(i + 1));
        assert!(
            log.durable_lsn() >= r.lsn,
            "WAIT commit {} returned before durable ({} < {})",
            r.scn,
            log.durable_lsn(),
            r.lsn
        );
        let (scn, lsn) = log.durable_commit();
        assert_eq!((scn, lsn), (r.scn, r.lsn));
        assert_eq!(log.commit_backlog().commits, 0);
    }
}

#[test]
fn a_deferred_wait_commit_is_acknowledged_only_once_durable_and_counts_as_a_wait_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    let log = Arc::new(log);
    // Four sessions, each on its own thread, commit with the wait handed back and awaited
    // as a future: each is woken by the write that covers it (a missed wake-up hangs
    // `block_on`, and the deadline fails the test).
    let per_session = 150u64;
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let log = log.clone();
            thread::spawn(move || {
                with_deadline(Duration::from_secs(20), "deferred WAIT commits", move || {
                    let mut s = log.session();
                    for i in 0..per_session {
                        s.log_change(&payload(t, i, 100)).unwrap();
                        let opts = if i % 3 == 0 { BATCH_WAIT } else { WAIT };
                        let (receipt, wait) = s.commit_deferring_wait(opts, |_| {}).unwrap();
                        assert!(receipt.waited);
                        let wait = wait.expect("a WAIT commit hands back its wait");
                        assert_eq!((wait.lsn(), wait.commits()), (receipt.lsn, 1));
                        block_on(wait).unwrap();
                        assert!(log.durable_lsn() >= receipt.lsn, "resolved before durable");
                        // A NOWAIT commit has nothing to wait for.
                        s.log_change(&payload(t + 10, i, 50)).unwrap();
                        let (nowait, none) = s.commit_deferring_wait(NOWAIT, |_| {}).unwrap();
                        assert!(!nowait.waited && none.is_none());
                    }
                    s.stats()
                })
            })
        })
        .collect();
    for t in threads {
        let st = t.join().unwrap();
        assert_eq!(st.get(Stat::UserCommits), 2 * per_session);
        assert_eq!(st.get(Stat::CommitWaitRequested), per_session);
        assert_eq!(st.get(Stat::CommitWaitPerformed), per_session);
        assert_eq!(st.get(Stat::CommitNowaitPerformed), per_session);
        let syncs = st.event(WaitEvent::LogFileSync).waits;
        assert!((1..=per_session).contains(&syncs), "log file sync waits {syncs}");
        assert_eq!(st.get(Stat::RedoSynchWrites), syncs);
        let responses: u64 = st.commit_response.iter().map(|e| e.waits).sum();
        assert_eq!(responses, 2 * per_session, "every commit's response time, once");
        assert_eq!(st.commit_response[0].waits + st.commit_response[1].waits, per_session);
    }
    // A joined wait is one wait for the higher LSN, acknowledging both commits; a blocking
    // `wait` ends it as well as the future does.
    let mut s = log.session();
    s.log_change(&payload(9, 1, 100)).unwrap();
    let (_, first) = s.commit_deferring_wait(WAIT, |_| {}).unwrap();
    s.log_change(&payload(9, 2, 100)).unwrap();
    let (second, later) = s.commit_deferring_wait(WAIT, |_| {}).unwrap();
    let joined = first.unwrap().join(later.unwrap());
    assert_eq!((joined.lsn(), joined.commits()), (second.lsn, 2));
    let before = s.stats();
    joined.wait().unwrap();
    assert!(log.durable_lsn() >= second.lsn);
    let d = s.stats().since(&before);
    assert_eq!(d.get(Stat::CommitWaitPerformed), 2);
    assert!(d.event(WaitEvent::LogFileSync).waits <= 1, "one wait for both");
    // A wait for redo not handed out yet is an error, not a hang.
    let beyond = s.durable_wait(Lsn(log.reserved_end().0 + 4096));
    assert!(matches!(block_on(beyond), Err(RedoError::NotIssued(_))));
}

#[test]
fn a_deferred_wait_first_polled_after_its_write_still_counts_its_log_file_sync() {
    // A server's task may be polled late: the write its commit asked for can end before
    // the future is first polled. The commit still waited for that write, so the count
    // of `log file sync` must not depend on when the task ran (CI once saw 299 waits for
    // 300 WAIT commits through the wire server).
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    let mut s = log.session();
    for i in 0..20 {
        s.log_change(&payload(1, i, 100)).unwrap();
        let before = s.stats();
        let (receipt, wait) = s.commit_deferring_wait(WAIT, |_| {}).unwrap();
        let wait = wait.expect("a WAIT commit hands back its wait");
        // The write ends before the future is first polled.
        log.wait_durable(receipt.lsn).unwrap();
        block_on(wait).unwrap();
        let d = s.stats().since(&before);
        assert_eq!(d.event(WaitEvent::LogFileSync).waits, 1, "commit {i}");
        assert_eq!(d.get(Stat::RedoSynchWrites), 1, "commit {i}");
        assert_eq!(d.get(Stat::CommitWaitPerformed), 1, "commit {i}");
    }
    // A wait made for redo that is durable already asked for no write and counts none.
    let durable = log.durable_lsn();
    let before = s.stats();
    block_on(s.durable_wait(durable)).unwrap();
    let d = s.stats().since(&before);
    assert_eq!((d.event(WaitEvent::LogFileSync).waits, d.get(Stat::RedoSynchWrites)), (0, 0));
}

#[test]
fn a_commit_writing_if_idle_writes_itself_when_the_writer_is_idle_and_defers_when_it_is_not() {
    use redo::fault::{Fault, FaultOp, FaultyStorage, STALL};
    let dir = tempfile::tempdir().unwrap();
    // Syncs of the log stall while this file exists (a disk that stopped answering).
    let trigger = dir.path().join("stall-syncs");
    let storage = FaultyStorage::new(vec![Fault {
        op: FaultOp::Sync,
        path_contains: ".log".into(),
        skip: 0,
        errno: STALL,
    }])
    .armed_while(&trigger);
    let log_dir = dir.path().join("log");
    fs::create_dir(&log_dir).unwrap();
    let (log, _) = RedoLog::open_with(quiet_config(&log_dir), Arc::new(storage)).unwrap();
    let log = Arc::new(log);
    settle(&log);
    with_deadline(Duration::from_secs(20), "commits writing if idle", {
        let log = log.clone();
        move || {
            let mut s = log.session();
            // Idle writer: each commit is its own foreground write, durable on return,
            // with one `log file sync` and nothing handed back.
            for i in 0..20 {
                s.log_change(&payload(1, i, 100)).unwrap();
                let (before, system_before) = (s.stats(), log.stats());
                let (receipt, wait) = s.commit_writing_if_idle(WAIT, |_| {}).unwrap();
                assert!(wait.is_none(), "commit {i}: the idle writer's token was free");
                assert!(log.durable_lsn() >= receipt.lsn, "commit {i} returned before durable");
                let d = s.stats().since(&before);
                let writes = log.stats().since(&system_before).get(Stat::RedoWritesForeground);
                assert_eq!(writes, 1, "commit {i}");
                assert_eq!(d.event(WaitEvent::LogFileSync).waits, 1, "commit {i}");
                assert_eq!(d.get(Stat::CommitWaitPerformed), 1, "commit {i}");
            }
            // A NOWAIT commit writes nothing here.
            s.log_change(&payload(2, 0, 100)).unwrap();
            let before = log.stats();
            let (receipt, wait) = s.commit_writing_if_idle(NOWAIT, |_| {}).unwrap();
            assert!(!receipt.waited && wait.is_none());
            assert_eq!(log.stats().since(&before).get(Stat::RedoWritesForeground), 0);
        }
    });
    // The writer busy (its sync stalled): the commit does not queue for the token, it
    // hands its wait back, and the wait ends once the write it joined is durable.
    fs::write(&trigger, b"").unwrap();
    let mut other = log.session();
    other.log_change(&payload(3, 0, 100)).unwrap();
    let (first, _) = other.commit_deferring_wait(WAIT, |_| {}).unwrap();
    let waited = with_deadline(Duration::from_secs(20), "a commit while the writer's sync stalls", {
        let log = log.clone();
        move || {
            // The log writer, posted by that commit, takes the token into its stalled sync.
            thread::sleep(Duration::from_millis(200));
            assert!(log.durable_lsn() < first.lsn);
            let mut s = log.session();
            s.log_change(&payload(4, 0, 100)).unwrap();
            let (receipt, wait) = s.commit_writing_if_idle(WAIT, |_| {}).unwrap();
            (receipt, wait.expect("the writer held the token: the wait is handed back"))
        }
    });
    let (receipt, wait) = waited;
    assert!(log.durable_lsn() < receipt.lsn, "nothing is durable while syncs stall");
    fs::remove_file(&trigger).unwrap();
    with_deadline(Duration::from_secs(20), "the handed-back wait", move || block_on(wait).unwrap());
    assert!(log.durable_lsn() >= receipt.lsn);
}

#[test]
fn commit_options_come_from_the_statement_then_the_session_then_the_system() {
    use CommitWait::*;
    let dir = tempfile::tempdir().unwrap();
    // BATCH and quiet triggers: a commit that does not wait stays buffered, so durability
    // shows which way each commit went.
    let mut c = quiet_config(dir.path());
    c.commit_logging = CommitLogging::Batch;
    let (log, _) = open(&c);
    settle(&log);
    let mut s = log.session();
    // (system, session, statement, waits)
    let cases: &[(CommitWait, Option<CommitWait>, Option<CommitWait>, bool)] = &[
        (Wait, None, None, true),
        (NoWait, None, None, false),
        (NoWait, Some(Wait), None, true),
        (Wait, Some(NoWait), None, false),
        (Wait, Some(NoWait), Some(Wait), true),
        (NoWait, Some(Wait), Some(NoWait), false),
        (NoWait, None, Some(Wait), true),
        (Wait, None, Some(NoWait), false),
        (NoWait, None, Some(ForceWait), true),
        (NoWait, Some(ForceWait), None, true),
        // FORCE_WAIT overrides NOWAIT asked for below it.
        (Wait, Some(ForceWait), Some(NoWait), true),
        (NoWait, Some(ForceWait), Some(NoWait), true),
        (ForceWait, None, Some(NoWait), true),
        (ForceWait, Some(NoWait), None, true),
        (ForceWait, Some(NoWait), Some(NoWait), true),
    ];
    for (i, &(system, session, statement, waits)) in cases.iter().enumerate() {
        log.set_commit_wait(system);
        assert_eq!(log.commit_wait(), system);
        s.set_commit_wait(session);
        assert_eq!(s.commit_settings().0, session);
        let opts = CommitOptions { wait: statement, logging: None };
        assert_eq!(s.resolve(opts).0, waits, "case {i}: resolve");
        let c = commit_small(&mut s, 2, i as u64, opts);
        let r = c.receipt;
        assert_eq!(r.waited, waits, "case {i}: {system:?}/{session:?}/{statement:?}");
        assert_eq!(r.logging, CommitLogging::Batch);
        if waits {
            assert!(log.durable_lsn() >= r.lsn, "case {i}: waited but not durable");
        } else {
            assert!(log.durable_lsn() < r.lsn, "case {i}: a BATCH NOWAIT commit was written at once");
        }
    }

    // commit_logging: statement > session > system.
    use CommitLogging::{Batch, Immediate};
    let cases: &[(CommitLogging, Option<CommitLogging>, Option<CommitLogging>, CommitLogging)] = &[
        (Immediate, None, None, Immediate),
        (Batch, None, None, Batch),
        (Batch, Some(Immediate), None, Immediate),
        (Immediate, Some(Batch), None, Batch),
        (Immediate, Some(Batch), Some(Immediate), Immediate),
        (Batch, Some(Immediate), Some(Batch), Batch),
    ];
    log.set_commit_wait(Wait);
    s.set_commit_wait(None);
    for (i, &(system, session, statement, expect)) in cases.iter().enumerate() {
        log.set_commit_logging(system);
        assert_eq!(log.commit_logging(), system);
        s.set_commit_logging(session);
        let opts = CommitOptions { wait: None, logging: statement };
        assert_eq!(s.resolve(opts), (true, expect), "logging case {i}");
        let r = commit_small(&mut s, 3, i as u64, opts).receipt;
        assert_eq!(r.logging, expect, "logging case {i}");
        assert!(r.waited && log.durable_lsn() >= r.lsn);
    }
}

#[test]
fn system_force_wait_makes_nowait_sessions_and_statements_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    settle(&log);
    log.set_commit_wait(CommitWait::ForceWait);
    let mut s = log.session();
    s.set_commit_wait(Some(CommitWait::NoWait));
    for (i, opts) in [BATCH_NOWAIT, NOWAIT, CommitOptions::DEFAULT].into_iter().enumerate() {
        let r = commit_small(&mut s, 4, i as u64, opts).receipt;
        assert!(r.waited, "system FORCE_WAIT must override {opts:?}");
        assert!(log.durable_lsn() >= r.lsn);
    }
    let st = s.stats();
    assert_eq!(st.get(Stat::CommitWaitRequested), 3);
    assert_eq!(st.get(Stat::CommitNowaitRequested), 0);
    assert_eq!(st.get(Stat::CommitWaitPerformed), 3);
}

#[test]
fn session_force_wait_overrides_statement_nowait_but_not_other_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    settle(&log);
    let mut forced = log.session();
    forced.set_commit_wait(Some(CommitWait::ForceWait));
    let r = commit_small(&mut forced, 5, 0, BATCH_NOWAIT).receipt;
    assert!(r.waited);
    assert!(log.durable_lsn() >= r.lsn);

    let mut other = log.session();
    let r = commit_small(&mut other, 5, 1, BATCH_NOWAIT).receipt;
    assert!(!r.waited, "another session's FORCE_WAIT must not apply here");
    assert!(log.durable_lsn() < r.lsn);

    // Back to the system default once the session setting is cleared.
    forced.set_commit_wait(None);
    let r = commit_small(&mut forced, 5, 2, BATCH_NOWAIT).receipt;
    assert!(!r.waited);
}

#[test]
fn system_commit_defaults_change_at_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    settle(&log);
    let mut s = log.session();
    assert_eq!(log.commit_wait(), CommitWait::Wait);
    assert_eq!(log.commit_logging(), CommitLogging::Immediate);
    let r = commit_small(&mut s, 6, 0, CommitOptions::DEFAULT).receipt;
    assert!(r.waited && r.logging == CommitLogging::Immediate);

    log.set_commit_wait(CommitWait::NoWait);
    log.set_commit_logging(CommitLogging::Batch);
    let r = commit_small(&mut s, 6, 1, CommitOptions::DEFAULT).receipt;
    assert!(!r.waited);
    assert_eq!(r.logging, CommitLogging::Batch);
    assert!(log.durable_lsn() < r.lsn);

    // A session that started before the change sees it too, and so does a new one.
    let mut t = log.session();
    let r = commit_small(&mut t, 6, 2, CommitOptions::DEFAULT).receipt;
    assert!(!r.waited && r.logging == CommitLogging::Batch);

    log.set_commit_wait(CommitWait::Wait);
    let r = commit_small(&mut s, 6, 3, CommitOptions::DEFAULT).receipt;
    assert!(r.waited && r.logging == CommitLogging::Batch);
    assert!(log.durable_lsn() >= r.lsn);
}

#[test]
fn commit_statistics_count_the_modes_and_only_waiting_commits_wait_for_log_file_sync() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    let mut a = log.session();
    let mut b = log.session();
    // Session a waits: 3 WAIT IMMEDIATE, 2 WAIT BATCH.
    for i in 0..5u64 {
        commit_small(&mut a, 7, i, if i < 3 { WAIT } else { BATCH_WAIT });
    }
    // Session b does not: 4 NOWAIT IMMEDIATE, 1 NOWAIT BATCH.
    for i in 0..5u64 {
        commit_small(&mut b, 8, i, if i < 4 { NOWAIT } else { BATCH_NOWAIT });
    }
    let sa = a.stats();
    assert_eq!(sa.get(Stat::UserCommits), 5);
    assert_eq!(sa.get(Stat::CommitWaitRequested), 5);
    assert_eq!(sa.get(Stat::CommitNowaitRequested), 0);
    assert_eq!(sa.get(Stat::CommitImmediateRequested), 3);
    assert_eq!(sa.get(Stat::CommitBatchRequested), 2);
    assert_eq!(sa.get(Stat::CommitWaitPerformed), 5);
    let sync_a = sa.event(WaitEvent::LogFileSync).waits;
    assert!((1..=5).contains(&sync_a), "WAIT commits record log file sync waits: {sync_a}");
    assert_eq!(sa.get(Stat::RedoSynchWrites), sync_a);

    let sb = b.stats();
    assert_eq!(sb.get(Stat::UserCommits), 5);
    assert_eq!(sb.get(Stat::CommitWaitRequested), 0);
    assert_eq!(sb.get(Stat::CommitNowaitRequested), 5);
    assert_eq!(sb.get(Stat::CommitImmediateRequested), 4);
    assert_eq!(sb.get(Stat::CommitBatchRequested), 1);
    assert_eq!(sb.get(Stat::CommitNowaitPerformed), 5);
    assert_eq!(sb.event(WaitEvent::LogFileSync).waits, 0, "NOWAIT commits never wait for log file sync");
    assert_eq!(sb.get(Stat::RedoSynchWrites), 0);

    // The system totals once the log writer has written b's commits and stopped: a write
    // adds to two counters one after the other, and a read between them sees them differ.
    log.shutdown().unwrap();
    let sys = log.stats();
    assert_eq!(sys.get(Stat::UserCommits), 10);
    assert_eq!(sys.get(Stat::CommitWaitRequested), 5);
    assert_eq!(sys.get(Stat::CommitNowaitRequested), 5);
    assert_eq!(sys.get(Stat::CommitImmediateRequested), 7);
    assert_eq!(sys.get(Stat::CommitBatchRequested), 3);
    assert_eq!(sys.event(WaitEvent::LogFileSync).waits, sync_a);
    assert_eq!(sys.get(Stat::RedoEntries), 20, "one change and one commit each");
    assert!(sys.get(Stat::RedoWrites) >= 1);
    assert_eq!(sys.event(WaitEvent::LogFileParallelWrite).waits, sys.get(Stat::RedoWrites));

    // Commit response time, per mode: each commit counted once, in its own mode; the
    // waiting modes take at least one sync each.
    let counts: Vec<u64> = sys.commit_response.iter().map(|e| e.waits).collect();
    assert_eq!(counts, [3, 2, 4, 1], "modes in the order {:?}", redo::stats::COMMIT_MODES);
    assert_eq!(sa.commit_response[0].waits + sa.commit_response[1].waits, 5);
    assert_eq!(sb.commit_response[0].waits + sb.commit_response[1].waits, 0);
    let wait_avg = sys.commit_response[0].avg_us();
    let nowait_avg = sys.commit_response[2].avg_us();
    assert!(wait_avg > nowait_avg, "WAIT commits respond slower than NOWAIT: {wait_avg} vs {nowait_avg} us");

    // A gone session's work stays in the system totals.
    drop(a);
    drop(b);
    let after = log.stats();
    assert_eq!(after.get(Stat::UserCommits), 10);
    assert_eq!(after.event(WaitEvent::LogFileSync).waits, sync_a);
    let d = after.since(&sys);
    assert_eq!(d.get(Stat::UserCommits), 0);
}

// ---------------------------------------------------------------------------------------
// 2. Posting the writer, background triggers, riding along

#[test]
fn a_nowait_immediate_commit_posts_the_writer_and_soon_becomes_durable() {
    let dir = tempfile::tempdir().unwrap();
    // The background triggers are far away: only the post can write it.
    let (log, _) = open(&quiet_config(dir.path()));
    let mut s = log.session();
    for i in 0..3u64 {
        let r = commit_small(&mut s, 9, i, NOWAIT).receipt;
        assert!(!r.waited);
        assert!(
            wait_until(Duration::from_secs(5), || log.durable_lsn() >= r.lsn),
            "NOWAIT IMMEDIATE commit {} not durable after 5 s",
            r.scn
        );
    }
    assert_eq!(s.stats().event(WaitEvent::LogFileSync).waits, 0);
}

#[test]
fn a_nowait_batch_commit_stays_buffered_until_the_timeout_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = quiet_config(dir.path());
    c.batch_flush_timeout_ms = 300;
    let (log, _) = open(&c);
    settle(&log);
    let mut s = log.session();
    // A write restarts the "time since the last write" trigger.
    commit_small(&mut s, 10, 0, WAIT);
    let r = commit_small(&mut s, 10, 1, BATCH_NOWAIT).receipt;
    assert!(!r.waited);
    assert_eq!(r.logging, CommitLogging::Batch);
    assert!(log.durable_lsn() < r.lsn, "a BATCH NOWAIT commit must not post the writer");
    assert_eq!(log.commit_backlog().commits, 1);
    assert!(
        wait_until(Duration::from_secs(5), || log.durable_lsn() >= r.lsn),
        "a BATCH NOWAIT commit must become durable within 5 s of a 300 ms timeout"
    );
    assert_eq!(log.commit_backlog().commits, 0);
    assert_eq!(log.durable_commit().0, r.scn);
}

#[test]
fn the_batch_timeout_can_be_changed_at_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    settle(&log);
    let mut s = log.session();
    let r = commit_small(&mut s, 11, 0, BATCH_NOWAIT).receipt;
    thread::sleep(Duration::from_millis(300));
    assert!(log.durable_lsn() < r.lsn, "nothing should have written a BATCH NOWAIT commit");
    log.set_batch_triggers(3, 1 << 30, 200).unwrap();
    assert_eq!(log.batch_triggers(), (3, 1 << 30, 200));
    assert!(
        wait_until(Duration::from_secs(5), || log.durable_lsn() >= r.lsn),
        "the new 200 ms timeout did not write the commit within 5 s"
    );
}

#[test]
fn a_batch_commit_rides_along_with_another_sessions_write() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    settle(&log);
    let mut batch = log.session();
    let mut other = log.session();

    // With a WAIT commit.
    let rb = commit_small(&mut batch, 12, 0, BATCH_NOWAIT).receipt;
    assert!(log.durable_lsn() < rb.lsn);
    let ro = commit_small(&mut other, 13, 0, WAIT).receipt;
    assert!(ro.lsn > rb.lsn);
    assert!(log.durable_lsn() >= rb.lsn, "the WAIT commit's write must carry the earlier BATCH commit");

    // With a NOWAIT IMMEDIATE commit.
    let rb = commit_small(&mut batch, 12, 1, BATCH_NOWAIT).receipt;
    assert!(log.durable_lsn() < rb.lsn);
    let ro = commit_small(&mut other, 13, 1, NOWAIT).receipt;
    assert!(wait_until(Duration::from_secs(5), || log.durable_lsn() >= ro.lsn));
    assert!(log.durable_lsn() >= rb.lsn);
    assert_eq!(batch.stats().get(Stat::CommitImmediateRequested), 0);
}

#[test]
fn batch_commits_are_written_once_the_byte_trigger_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = quiet_config(dir.path());
    c.batch_flush_bytes = 8192;
    let (log, _) = open(&c);
    settle(&log);
    let mut s = log.session();
    // Below the trigger: about 1.6 KB, nothing is written.
    let mut last = None;
    for i in 0..10u64 {
        last = Some(commit_small(&mut s, 14, i, BATCH_NOWAIT).receipt);
    }
    thread::sleep(Duration::from_millis(300));
    assert!(log.durable_lsn() < last.unwrap().lsn, "below batch_flush_bytes nothing should be written");
    assert_eq!(log.stats().get(Stat::RedoWrites), 0);
    // Past it: about 16 KB. What crossed the trigger gets written; less than the
    // trigger's worth may stay buffered after that.
    let mut receipts = Vec::new();
    for i in 10..100u64 {
        receipts.push(commit_small(&mut s, 14, i, BATCH_NOWAIT).receipt);
    }
    let crossing = receipts.iter().find(|r| r.lsn.0 >= 8192).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || log.durable_lsn() >= crossing.lsn
            && log.reserved_end().0 - log.durable_lsn().0 < 8192),
        "BATCH commits past batch_flush_bytes were not written within 5 s: {:?}",
        log.status()
    );
    let st = log.stats();
    assert_eq!(st.get(Stat::CommitImmediateRequested), 0);
    assert_eq!(st.get(Stat::CommitWaitRequested), 0);
    assert!(st.get(Stat::RedoWrites) >= 1);
}

#[test]
fn batch_commits_are_written_once_a_fraction_of_the_log_buffer_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = quiet_config(dir.path());
    c.batch_flush_buffer_divisor = 16; // 256 KiB / 16 = 16 KiB
    let (log, _) = open(&c);
    settle(&log);
    let mut s = log.session();
    // About 31 KB: past the trigger once at least. Whatever was written when, what stays
    // unwritten in the end is less than the trigger's worth.
    for i in 0..200u64 {
        commit_small(&mut s, 15, i, BATCH_NOWAIT);
    }
    let threshold = c.log_buffer / 16;
    assert!(
        wait_until(Duration::from_secs(5), || log.durable_lsn() > Lsn(0)
            && log.reserved_end().0 - log.durable_lsn().0 < threshold),
        "BATCH commits past log_buffer / divisor were not written within 5 s: {:?}",
        log.status()
    );
}

#[test]
fn wait_durable_makes_earlier_nowait_commits_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    settle(&log);
    let mut s = log.session();
    let mut rs = Vec::new();
    for i in 0..5u64 {
        rs.push(commit_small(&mut s, 16, i, BATCH_NOWAIT).receipt);
    }
    assert!(log.durable_lsn() < rs[0].lsn);
    log.wait_durable(rs[2].lsn).unwrap();
    assert!(log.durable_lsn() >= rs[2].lsn);

    // Through the session: counted as its log file sync.
    let r = commit_small(&mut s, 16, 5, BATCH_NOWAIT).receipt;
    assert!(log.durable_lsn() < r.lsn);
    s.wait_durable(r.lsn).unwrap();
    assert!(log.durable_lsn() >= r.lsn);
    assert_eq!(s.stats().event(WaitEvent::LogFileSync).waits, 1);
    // Already durable: returns at once, no wait counted.
    s.wait_durable(r.lsn).unwrap();
    assert_eq!(s.stats().event(WaitEvent::LogFileSync).waits, 1);

    // By SCN.
    let r = commit_small(&mut s, 16, 6, BATCH_NOWAIT).receipt;
    assert!(log.durable_lsn() < r.lsn);
    log.wait_durable_scn(r.scn).unwrap();
    assert!(log.durable_lsn() >= r.lsn);
    assert_eq!(log.durable_commit(), (r.scn, r.lsn));
}

#[test]
fn a_waiting_batch_commit_still_gets_its_write() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    let mut s = log.session();
    s.set_commit_logging(Some(CommitLogging::Batch));
    for i in 0..5u64 {
        let r = commit_small(&mut s, 17, i, CommitOptions::DEFAULT).receipt;
        assert!(r.waited);
        assert_eq!(r.logging, CommitLogging::Batch);
        assert!(log.durable_lsn() >= r.lsn);
    }
    assert_eq!(s.stats().get(Stat::CommitBatchRequested), 5);
}

// ---------------------------------------------------------------------------------------
// 3. Recovery

#[test]
fn recovery_restores_exactly_the_committed_transactions_in_scn_order() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, rec) = open(&c);
        assert!(rec.transactions.is_empty());
        assert_eq!(rec.report.last_scn, Scn(0));
        let mut a = log.session();
        let mut b = log.session();
        for i in 0..30u64 {
            let (s, tag) = if i % 3 == 0 { (&mut b, 21) } else { (&mut a, 20) };
            let changes = (0..(i % 4)).map(|k| payload(tag, i * 10 + k, 50 + 37 * k as usize));
            let opts = [WAIT, NOWAIT, BATCH_NOWAIT, BATCH_WAIT][i as usize % 4];
            committed.push(commit_txn(s, changes.collect(), opts));
        }
        // An empty commit is a transaction too.
        committed.push(commit_txn(&mut a, Vec::new(), WAIT));
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
    assert_dense_from(&rec.transactions, 1);
    assert_eq!(rec.report.transactions, 31);
    assert_eq!(rec.report.last_scn, Scn(31));
    assert_eq!(rec.report.checkpoint_scn, Scn(0));
    assert_eq!(rec.report.stop, StopReason::Padding);
    assert_eq!(rec.report.uncommitted_discarded, 0);
    assert!(rec.transactions.last().unwrap().changes.is_empty());
    // Recovery is repeatable and sees the same.
    let again = recover(&c);
    assert_recovered_exactly(&again, &committed);
}

#[test]
fn rolled_back_transactions_are_not_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        let mut s = log.session();
        for i in 0..10u64 {
            if i % 2 == 0 {
                committed.push(commit_small(&mut s, 22, i, WAIT));
            } else {
                s.log_change(&payload(23, i, 200)).unwrap();
                assert!(s.transaction().is_some());
                s.rollback().unwrap();
                assert!(s.transaction().is_none());
            }
        }
        // Rollback without a transaction is harmless.
        s.rollback().unwrap();
        assert_eq!(s.stats().get(Stat::UserRollbacks), 5);
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
    assert_dense_from(&rec.transactions, 1);
}

#[test]
fn a_transaction_with_many_changes_is_recovered_whole() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        let mut s = log.session();
        let changes: Vec<Vec<u8>> = (0..200).map(|k| payload(24, k, 1000 + k as usize)).collect();
        committed.push(commit_txn(&mut s, changes, WAIT));
        // And a NOWAIT one, made durable by the clean shutdown.
        let changes: Vec<Vec<u8>> = (0..120).map(|k| payload(25, k, 900)).collect();
        committed.push(commit_txn(&mut s, changes, BATCH_NOWAIT));
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
}

#[test]
fn a_transaction_over_half_a_log_file_is_refused_and_keeps_what_it_had() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let half = (c.log_file_size - BLOCK_BYTES) / 2;
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        let mut s = log.session();
        // One change too big by itself (but under the record limit).
        match s.log_change(&vec![1u8; half as usize]) {
            Err(RedoError::TransactionTooLarge { bytes, max }) => {
                assert_eq!(max, half);
                assert!(bytes > max);
            }
            other => panic!("expected TransactionTooLarge, got {other:?}"),
        }
        // Changes that add up past the limit: the one that crosses it is refused, the
        // transaction keeps the others and can commit them.
        let mut kept = Vec::new();
        let err = loop {
            let p = payload(26, kept.len() as u64, 50_000);
            match s.log_change(&p) {
                Ok(_) => kept.push(p),
                Err(e) => break e,
            }
        };
        assert!(matches!(err, RedoError::TransactionTooLarge { .. }), "{err}");
        assert!(err.to_string().contains("log_file_size"), "the message says what to do: {err}");
        assert_eq!(kept.len() as u64, half / 50_020);
        let r = s.commit(WAIT).unwrap();
        committed.push(Committed { receipt: r, changes: kept });
        // The same again, rolled back.
        for k in 0..5 {
            s.log_change(&payload(27, k, 50_000)).unwrap();
        }
        s.rollback().unwrap();
        committed.push(commit_small(&mut s, 26, 99, WAIT));
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
}
#[test]
fn a_big_rolled_back_transaction_is_not_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        let mut s = log.session();
        committed.push(commit_small(&mut s, 26, 0, WAIT));
        for k in 0..40 {
            s.log_change(&payload(27, k, 10_000)).unwrap();
        }
        s.rollback().unwrap();
        committed.push(commit_small(&mut s, 26, 1, WAIT));
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
    assert_eq!(rec.report.uncommitted_discarded, 0);
}
#[test]
fn a_transaction_never_committed_is_not_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        let mut s = log.session();
        committed.push(commit_small(&mut s, 28, 0, WAIT));
        // Dropping a session rolls its transaction back.
        let mut gone = log.session();
        for k in 0..40 {
            gone.log_change(&payload(29, k, 10_000)).unwrap();
        }
        drop(gone);
        committed.push(commit_small(&mut s, 28, 1, WAIT));
        // A session still in a transaction when the log shuts down.
        let mut open_at_shutdown = log.session();
        for k in 0..40 {
            open_at_shutdown.log_change(&payload(30, k, 10_000)).unwrap();
        }
        drop(log);
        assert!(matches!(open_at_shutdown.commit(WAIT), Err(RedoError::Shutdown)));
        drop(open_at_shutdown);
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
}
#[test]
fn interleaved_transactions_recover_with_their_own_changes() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        let mut a = log.session();
        let mut b = log.session();
        let mut ca = Vec::new();
        let mut cb = Vec::new();
        for k in 0..16u64 {
            let pa = payload(31, k, 700 + k as usize);
            let pb = payload(32, k, 1100 - k as usize);
            a.log_change(&pa).unwrap();
            b.log_change(&pb).unwrap();
            ca.push(pa);
            cb.push(pb);
        }
        // B commits first, A second.
        committed.push(Committed { receipt: b.commit(NOWAIT).unwrap(), changes: cb });
        committed.push(Committed { receipt: a.commit(WAIT).unwrap(), changes: ca });
        assert!(committed[0].receipt.scn < committed[1].receipt.scn);
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
}
#[test]
fn a_clean_shutdown_makes_buffered_nowait_commits_durable() {
    let dir = tempfile::tempdir().unwrap();
    let c = quiet_config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        settle(&log);
        let mut s = log.session();
        for i in 0..10u64 {
            committed.push(commit_small(&mut s, 33, i, BATCH_NOWAIT));
        }
        assert!(log.durable_lsn() < committed[0].receipt.lsn);
        log.shutdown().unwrap();
        assert!(log.durable_lsn() >= committed[9].receipt.lsn);
        assert!(matches!(s.commit(WAIT), Err(RedoError::Shutdown)));
        assert!(matches!(s.log_change(b"x"), Err(RedoError::Shutdown)));
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
}

#[test]
fn commits_after_a_reopen_continue_the_scn_and_transaction_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        let mut s = log.session();
        for i in 0..10u64 {
            committed.push(commit_small(&mut s, 34, i, WAIT));
        }
    }
    let max_txn = committed.iter().map(|c| c.receipt.txn).max().unwrap();
    {
        let (log, rec) = open(&c);
        assert_recovered_exactly(&rec, &committed);
        let mut s = log.session();
        for i in 10..15u64 {
            let c = commit_small(&mut s, 34, i, WAIT);
            assert_eq!(c.receipt.scn, Scn(i + 1));
            assert!(c.receipt.txn > max_txn, "transaction ids are never reused");
            committed.push(c);
        }
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
    assert_dense_from(&rec.transactions, 1);
}

#[test]
fn transaction_ids_stay_unique_across_sessions_checkpoints_and_restarts() {
    // Sessions take their ids from the shared counter in blocks: ids are unique but not
    // ordered like the commits, and the highest one handed out may lie in redo a
    // checkpoint has put out of recovery's reach. The control file's high-water mark
    // keeps every id handed out before a restart from being handed out again.
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut seen = HashSet::new();
    let mut before_restart = Vec::new();
    {
        let (log, _) = open(&c);
        let mut a = log.session();
        let mut b = log.session();
        for i in 0..5u64 {
            for s in [&mut a, &mut b] {
                let id = commit_small(s, 41, i, WAIT).receipt.txn;
                assert!(seen.insert(id), "transaction id {id:?} handed out twice");
                before_restart.push(id);
            }
        }
        // The checkpoint covers every commit so far, b's (the higher ids) included; a
        // then commits on, so the redo recovery reads holds a's ids only.
        let (scn, lsn) = log.durable_commit();
        log.checkpoint(scn, lsn).unwrap();
        for i in 5..8u64 {
            let id = commit_small(&mut a, 41, i, WAIT).receipt.txn;
            assert!(seen.insert(id), "transaction id {id:?} handed out twice");
            before_restart.push(id);
        }
    }
    let highest = *before_restart.iter().max().unwrap();
    let (log, rec) = open(&c);
    assert!(rec.transactions.iter().all(|t| t.txn < highest), "the highest id is behind the checkpoint");
    for s in 0..3 {
        let mut session = log.session();
        let id = commit_small(&mut session, 42, s, WAIT).receipt.txn;
        assert!(id > highest, "after the restart, id {id:?} is above every id before it ({highest:?})");
        assert!(seen.insert(id), "transaction id {id:?} handed out twice");
    }
}

#[test]
fn an_oversized_change_is_refused_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        let mut s = log.session();
        let big = vec![0u8; format::RECORD_PAYLOAD_MAX + 1];
        match s.log_change(&big) {
            Err(RedoError::TooLarge(n)) => assert_eq!(n, big.len()),
            other => panic!("expected TooLarge, got {other:?}"),
        }
        committed.push(commit_small(&mut s, 35, 0, WAIT));
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
}

// ---------------------------------------------------------------------------------------
// 4. Checkpoints and log switches

#[test]
fn reopening_recovers_only_the_commits_after_the_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut after = Vec::new();
    let ckpt;
    {
        let (log, _) = open(&c);
        assert_eq!(log.last_checkpoint(), (Lsn(0), Lsn(0), Scn(0)));
        let mut s = log.session();
        let mut last = None;
        for i in 0..30u64 {
            last = Some(commit_small(&mut s, 40, i, WAIT).receipt);
        }
        let last = last.unwrap();
        let (scn, lsn) = log.durable_commit();
        assert_eq!((scn, lsn), (last.scn, last.lsn));
        log.checkpoint(scn, lsn).unwrap();
        ckpt = log.last_checkpoint();
        assert_eq!(ckpt, (lsn, lsn, scn), "recovery starts at the checkpoint");
        // An older checkpoint never moves it back.
        log.checkpoint(Scn(10), Lsn(lsn.0 / 2)).unwrap();
        assert_eq!(log.last_checkpoint(), ckpt);
        for i in 30..50u64 {
            after.push(commit_small(&mut s, 40, i, WAIT));
        }
    }
    let rec = recover(&c);
    assert_eq!(rec.report.checkpoint_scn, ckpt.2);
    assert_eq!(rec.report.scan_from, ckpt.0);
    assert_recovered_exactly(&rec, &after);
    assert_dense_from(&rec.transactions, 31);

    // The checkpoint survives the reopen, and later checkpoints move it on.
    let (log, _) = open(&c);
    assert_eq!(log.last_checkpoint(), ckpt);
    let (scn, lsn) = log.durable_commit();
    assert_eq!(scn, Scn(50));
    log.checkpoint(scn, lsn).unwrap();
    drop(log);
    let rec = recover(&c);
    assert!(rec.transactions.is_empty());
    assert_eq!(rec.report.last_scn, Scn(50));
}

#[test]
fn a_checkpoint_waits_for_the_redo_of_nowait_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    settle(&log);
    let mut s = log.session();
    let r = commit_small(&mut s, 41, 0, BATCH_NOWAIT).receipt;
    assert!(log.durable_lsn() < r.lsn);
    log.checkpoint(r.scn, r.lsn).unwrap();
    assert!(log.durable_lsn() >= r.lsn);
    assert_eq!(log.last_checkpoint().2, r.scn);
}

#[test]
fn a_transaction_running_across_a_checkpoint_is_recovered_whole() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut expected = Vec::new();
    {
        let (log, _) = open(&c);
        let mut long = log.session();
        let mut short = log.session();
        commit_small(&mut short, 42, 0, WAIT);
        // The long transaction logs changes before the checkpoint...
        let mut changes: Vec<Vec<u8>> = (0..8).map(|k| payload(43, k, 1000)).collect();
        for ch in &changes {
            long.log_change(ch).unwrap();
        }
        let ck = commit_small(&mut short, 42, 1, WAIT).receipt;
        log.checkpoint(ck.scn, ck.lsn).unwrap();
        assert_eq!(log.last_checkpoint(), (ck.lsn, ck.lsn, ck.scn));
        // ...and more after it, then commits.
        let more: Vec<Vec<u8>> = (8..12).map(|k| payload(43, k, 1000)).collect();
        for ch in &more {
            long.log_change(ch).unwrap();
        }
        changes.extend(more);
        expected.push(Committed { receipt: long.commit(WAIT).unwrap(), changes });
        expected.push(commit_small(&mut short, 42, 2, WAIT));
    }
    let rec = recover(&c);
    assert_eq!(rec.report.checkpoint_scn, Scn(2));
    assert_recovered_exactly(&rec, &expected);
    assert_dense_from(&rec.transactions, 3);
}
/// 3 groups of 256 KiB and a 64 KiB log buffer.
fn small_files_config(dir: &Path) -> LogConfig {
    small_files(config(dir))
}

#[test]
fn recovery_reads_across_log_switches() {
    let dir = tempfile::tempdir().unwrap();
    let c = small_files_config(dir.path());
    let c2 = c.clone();
    // About 600 KB of redo: into the third file.
    let committed = with_deadline(Duration::from_secs(10), "committing 600 KB", move || {
        let (log, _) = open(&c2);
        let mut s = log.session();
        let out: Vec<Committed> =
            (0..300u64).map(|i| commit_txn(&mut s, vec![payload(50, i, 2000)], WAIT)).collect();
        assert!(log.stats().get(Stat::RedoLogSwitches) >= 2);
        assert_eq!(log.current_seq().0, LogSeq(3));
        out
    });
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
}

#[test]
fn log_switches_cycle_through_the_groups_while_a_checkpointer_runs() {
    let dir = tempfile::tempdir().unwrap();
    let c = small_files_config(dir.path());
    let (log, _) = open(&c);
    let log = Arc::new(log);
    let stop = Arc::new(AtomicBool::new(false));
    let checkpointer = {
        let (log, stop) = (log.clone(), stop.clone());
        thread::spawn(move || {
            let mut taken = 0u64;
            while !stop.load(SeqCst) {
                if log.wait_checkpoint_request(Duration::from_millis(20)) {
                    let (scn, lsn) = log.durable_commit();
                    log.checkpoint(scn, lsn).unwrap();
                    taken += 1;
                }
            }
            taken
        })
    };
    // About 3 MiB of redo: the 3 groups are cycled through four times.
    let committed = {
        let log = log.clone();
        with_deadline(Duration::from_secs(20), "committing 3 MiB", move || {
            let mut s = log.session();
            let mut out = BTreeMap::new();
            for i in 0..1500u64 {
                let opts = if i % 5 == 0 { BATCH_NOWAIT } else { WAIT };
                let c = commit_txn(&mut s, vec![payload(51, i, 2000)], opts);
                out.insert(c.receipt.scn, c);
            }
            s.wait_durable(log.reserved_end()).unwrap();
            out
        })
    };
    stop.store(true, SeqCst);
    let taken = checkpointer.join().unwrap();
    let st = log.stats();
    assert!(st.get(Stat::RedoLogSwitches) >= 10, "{}", st.get(Stat::RedoLogSwitches));
    assert!(taken >= 1);
    assert!(log.current_seq().0 >= LogSeq(12));
    let (scan_from, ckpt_lsn, ckpt_scn) = log.last_checkpoint();
    assert!(ckpt_scn > Scn(0) && scan_from <= ckpt_lsn);
    let last_scn = *committed.keys().last().unwrap();
    drop(Arc::try_unwrap(log).ok().expect("the log has no other owner"));

    let rec = recover(&c);
    assert_eq!(rec.report.checkpoint_scn, ckpt_scn);
    let expected: Vec<Committed> = committed.range(ckpt_scn.next()..).map(|(_, c)| c.clone()).collect();
    assert_recovered_exactly(&rec, &expected);
    assert_dense_from(&rec.transactions, ckpt_scn.0 + 1);
    assert_eq!(rec.report.last_scn, last_scn);
}

/// A thread committing 2,000-byte changes of `tag` with WAIT until `stop` is set; `progress`
/// counts its commits. Returns (progress, stop, the thread).
fn spawn_committer(
    log: &Arc<RedoLog>,
    tag: u64,
) -> (Arc<AtomicU64>, Arc<AtomicBool>, thread::JoinHandle<Result<u64, RedoError>>) {
    let progress = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let committer = {
        let (log, progress, stop) = (log.clone(), progress.clone(), stop.clone());
        thread::spawn(move || {
            let mut s = log.session();
            let mut i = 0u64;
            while !stop.load(SeqCst) {
                s.log_change(&payload(tag, i, 2000))?;
                s.commit(WAIT)?;
                i += 1;
                progress.store(i, SeqCst);
            }
            Ok::<u64, RedoError>(i)
        })
    };
    (progress, stop, committer)
}

#[test]
fn without_a_checkpoint_commits_wait_for_checkpoint_incomplete_until_one_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let c = small_files_config(dir.path());
    let (log, _) = open(&c);
    let log = Arc::new(log);
    let (progress, stop, committer) = spawn_committer(&log, 52);
    // It stalls: no progress for 300 ms.
    assert!(wait_for_stall(&progress), "commits never stalled without a checkpoint");
    let data = c.log_file_size - BLOCK_BYTES;
    let (filling, _) = log.current_seq();
    assert!(
        log.reserved_end().0 > 2 * data && filling == LogSeq(3),
        "stalled at {} in {filling}: only the reuse of group 1 may wait for a checkpoint",
        log.reserved_end()
    );
    assert!(
        log.wait_checkpoint_request(Duration::from_secs(1)),
        "the stalled session must ask for a checkpoint"
    );
    let stalled_at = progress.load(SeqCst);
    let (scn, lsn) = log.durable_commit();
    log.checkpoint(scn, lsn).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || progress.load(SeqCst) > stalled_at + 10),
        "commits did not continue after the checkpoint"
    );
    stop.store(true, SeqCst);
    let done =
        with_deadline(Duration::from_secs(5), "stopping the committer", move || committer.join().unwrap());
    assert!(done.is_ok(), "{done:?}");
    let st = log.stats();
    assert!(st.event(WaitEvent::LogFileSwitchCheckpointIncomplete).waits >= 1);
    assert!(st.get(Stat::RedoLogSpaceRequests) >= 1);
    assert!(st.get(Stat::RedoLogSwitches) >= 3);
}

#[test]
fn commits_waiting_for_a_checkpoint_end_at_their_interrupt_or_deadline_and_keep_their_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = small_files_config(dir.path());
    // One strand: the waiting sessions must not queue on its latch behind the first.
    c.log_parallelism = 1;
    let (log, _) = open(&c);
    let log = Arc::new(log);
    let (progress, stop, committer) = spawn_committer(&log, 60);
    assert!(wait_for_stall(&progress), "commits never stalled without a checkpoint");

    // Two more sessions commit: one to be cancelled, one with a deadline 300 ms away.
    let waiter = |tag: u64, deadline: Option<Duration>| {
        let log = log.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = thread::spawn(move || {
            let mut s = log.session();
            tx.send((s.interrupt().clone(), s.stats_handle())).unwrap();
            s.log_change(&payload(tag, 0, 2000)).unwrap();
            s.interrupt().set_deadline(deadline.map(|d| std::time::Instant::now() + d));
            let started = std::time::Instant::now();
            let result = s.commit(WAIT);
            (s, result, started.elapsed())
        });
        let (interrupt, stats) = rx.recv().unwrap();
        (handle, interrupt, stats)
    };
    let (cancelled, interrupt, cancelled_stats) = waiter(61, None);
    let (timed, _, timed_stats) = waiter(62, Some(Duration::from_millis(300)));
    let waiting = |stats: &Arc<redo::stats::StatsSet>| {
        stats.current_wait().is_some_and(|(event, _)| event == WaitEvent::LogFileSwitchCheckpointIncomplete)
    };
    assert!(
        wait_until(Duration::from_secs(10), || waiting(&cancelled_stats)),
        "the second session does not wait in checkpoint incomplete"
    );
    interrupt.raise();
    let (mut cancelled, result, _) = cancelled.join().unwrap();
    assert!(matches!(result, Err(RedoError::Interrupted(InterruptCause::Cancelled))), "{result:?}");
    assert!(cancelled.transaction().is_some(), "the interrupted commit keeps its transaction");
    let (mut timed, result, waited) = timed.join().unwrap();
    assert!(matches!(result, Err(RedoError::Interrupted(InterruptCause::DeadlinePassed))), "{result:?}");
    assert!(timed.transaction().is_some());
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(timed_stats.current_wait(), None);
    // Both waits were waits of the event, counted.
    assert_eq!(cancelled.stats().event(WaitEvent::LogFileSwitchCheckpointIncomplete).waits, 1);
    assert_eq!(timed.stats().event(WaitEvent::LogFileSwitchCheckpointIncomplete).waits, 1);

    // A checkpoint frees the group: everyone goes on, the interrupted commits as they were.
    let (scn, lsn) = log.durable_commit();
    log.checkpoint(scn, lsn).unwrap();
    cancelled.interrupt().clear();
    timed.interrupt().set_deadline(None);
    let first = cancelled.commit(WAIT).expect("the cancelled transaction commits later");
    let second = timed.commit(WAIT).expect("so does the timed-out one");
    stop.store(true, SeqCst);
    let done =
        with_deadline(Duration::from_secs(5), "stopping the committer", move || committer.join().unwrap());
    assert!(done.is_ok(), "{done:?}");
    drop((cancelled, timed));
    drop(log);

    let rec = recover(&c);
    for (receipt, tag) in [(first, 61), (second, 62)] {
        let found: Vec<_> = rec.transactions.iter().filter(|t| t.txn == receipt.txn).collect();
        assert_eq!(found.len(), 1, "commit {} recovered once", receipt.scn);
        assert_eq!(found[0].changes, vec![payload(tag, 0, 2000)]);
    }
    assert_dense_from(&rec.transactions, rec.transactions[0].scn.0);
}

#[test]
fn transactions_of_almost_half_a_log_file_commit_across_log_switches() {
    let dir = tempfile::tempdir().unwrap();
    let c = small_files_config(dir.path());
    let half = (c.log_file_size - BLOCK_BYTES) / 2;
    let c2 = c.clone();
    let committed = with_deadline(Duration::from_secs(10), "big transactions", move || {
        let (log, _) = open(&c2);
        let log = Arc::new(log);
        let stop = Arc::new(AtomicBool::new(false));
        let checkpointer = {
            let (log, stop) = (log.clone(), stop.clone());
            thread::spawn(move || {
                while !stop.load(SeqCst) {
                    if log.wait_checkpoint_request(Duration::from_millis(20)) {
                        let (scn, lsn) = log.durable_commit();
                        log.checkpoint(scn, lsn).unwrap();
                    }
                }
            })
        };
        let mut s = log.session();
        let mut out = Vec::new();
        // Units of just under half a file, starting at every kind of place in a file,
        // with small commits in between to shift them.
        for i in 0..12u64 {
            let n = (half as usize - 20 * 4) / 4 - 20;
            let changes = (0..4).map(|k| payload(53, i * 4 + k, n)).collect();
            out.push(commit_txn(&mut s, changes, if i % 2 == 0 { WAIT } else { BATCH_NOWAIT }));
            for k in 0..(i * 7) {
                out.push(commit_small(&mut s, 54, i * 100 + k, NOWAIT));
            }
        }
        s.wait_durable(log.reserved_end()).unwrap();
        stop.store(true, SeqCst);
        checkpointer.join().unwrap();
        drop(s);
        let ckpt = log.last_checkpoint().2;
        assert!(log.stats().get(Stat::RedoLogSwitches) >= 4);
        drop(Arc::try_unwrap(log).ok().expect("the log has no other owner"));
        out.retain(|c| c.receipt.scn > ckpt);
        out
    });
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
}
// ---------------------------------------------------------------------------------------
// 5. Group commit

fn group_commit(c: &LogConfig) {
    let (log, _) = open(c);
    let per_thread: Vec<Vec<Committed>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..8u64)
            .map(|t| {
                let log = &log;
                scope.spawn(move || {
                    let mut s = log.session();
                    (0..200u64)
                        .map(|i| {
                            let c = commit_txn(&mut s, vec![payload(60 + t, i, 40)], WAIT);
                            assert!(c.receipt.waited && log.durable_lsn() >= c.receipt.lsn);
                            c
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let st = log.stats();
    let commits = st.get(Stat::UserCommits);
    let writes = st.get(Stat::RedoWrites);
    assert_eq!(commits, 1600);
    assert!(commits > writes, "8 committing sessions must share syncs: {commits} commits, {writes} writes");
    assert_eq!(
        st.get(Stat::RedoWriteRequests),
        writes * c.members() as u64,
        "every write is one request per member"
    );
    assert_eq!(st.event(WaitEvent::LogFileParallelWrite).waits, writes);
    assert!(st.get(Stat::RedoWritesForeground) <= writes);
    assert!(st.event(WaitEvent::LogFileSync).waits <= 1600);
    drop(log);

    let rec = recover(c);
    assert_dense_from(&rec.transactions, 1);
    let all: Vec<Committed> = per_thread.iter().flatten().cloned().collect();
    assert_recovered_exactly(&rec, &all);
    // Each session's commits are in its order.
    for t in &per_thread {
        assert!(t.windows(2).all(|w| w[0].receipt.scn < w[1].receipt.scn));
    }
}

#[test]
fn concurrent_wait_commits_share_syncs_with_one_strand() {
    let dir = tempfile::tempdir().unwrap();
    group_commit(&config(dir.path()));
}

#[test]
fn concurrent_wait_commits_share_syncs_with_four_strands() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.log_parallelism = 4;
    group_commit(&c);
}

#[test]
fn concurrent_wait_commits_share_syncs_with_two_members() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&dir.path().join("a"));
    c.mirror_dirs = vec![dir.path().join("b")];
    c.log_parallelism = 2;
    group_commit(&c);
}

// ---------------------------------------------------------------------------------------
// 6. Log buffer space

#[test]
fn big_transactions_through_the_smallest_log_buffer_all_commit_and_recover() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.log_buffer = 64 * KIB;
    c.log_parallelism = 2;
    let c2 = c.clone();
    let (committed, st) = with_deadline(Duration::from_secs(20), "big transactions", move || {
        let (log, _) = open(&c2);
        let committed: Vec<Committed> = thread::scope(|scope| {
            let hs: Vec<_> = (0..4u64)
                .map(|t| {
                    let log = &log;
                    scope.spawn(move || {
                        let mut s = log.session();
                        (0..10u64)
                            .map(|i| {
                                let changes = (0..4).map(|k| payload(70 + t, i * 4 + k, 5000)).collect();
                                let opts = [WAIT, BATCH_NOWAIT, NOWAIT][(i % 3) as usize];
                                commit_txn(&mut s, changes, opts)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        (committed, log.stats())
    });
    assert_eq!(st.get(Stat::UserCommits), 40);
    // `log buffer space` waits may appear; they are counted consistently.
    assert!(st.event(WaitEvent::LogBufferSpace).waits <= st.get(Stat::RedoBufferAllocationRetries));
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
    assert_dense_from(&rec.transactions, 1);
}

#[test]
fn a_transaction_bigger_than_the_log_buffer_commits_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = quiet_config(dir.path());
    c.log_buffer = 64 * KIB;
    let c2 = c.clone();
    let committed = with_deadline(Duration::from_secs(10), "200 KB transactions", move || {
        let (log, _) = open(&c2);
        let mut s = log.session();
        let a = commit_txn(&mut s, (0..10).map(|k| payload(80, k, 20_000)).collect(), WAIT);
        assert!(log.durable_lsn() >= a.receipt.lsn);
        // Not waiting and not posting: the space waits themselves must get it written.
        let b = commit_txn(&mut s, (0..10).map(|k| payload(81, k, 20_000)).collect(), BATCH_NOWAIT);
        assert!(s.stats().event(WaitEvent::LogBufferSpace).waits >= 1);
        log.wait_durable(b.receipt.lsn).unwrap();
        vec![a, b]
    });
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
}

// ---------------------------------------------------------------------------------------
// 7. Multiplexed members

fn two_member_config(root: &Path) -> LogConfig {
    let mut c = config(&root.join("m1"));
    c.mirror_dirs = vec![root.join("m2")];
    c
}

#[test]
fn members_view_lists_every_member_of_every_group() {
    let dir = tempfile::tempdir().unwrap();
    let c = two_member_config(dir.path());
    let (log, _) = open(&c);
    let members = log.members();
    assert_eq!(members.len(), 6);
    for m in &members {
        assert_eq!(m.path, member_file(&c, m.group, m.member));
        assert_eq!(m.state, MemberState::InService);
        assert!(m.path.exists());
    }
    assert!(member_file(&c, 2, 1).starts_with(dir.path().join("m2")));
    assert!(member_file(&c, 2, 1).ends_with("redo03_2.log"));
}

#[test]
fn a_deleted_member_file_is_replaced_by_its_mirror_at_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let c = two_member_config(dir.path());
    let mut committed = Vec::new();
    {
        let (log, _) = open(&c);
        let mut s = log.session();
        for i in 0..50u64 {
            committed.push(commit_txn(&mut s, vec![payload(90, i, 3000)], WAIT));
        }
    }
    let gone = member_file(&c, 0, 0);
    fs::remove_file(&gone).unwrap();
    {
        let (log, rec) = open(&c);
        assert_recovered_exactly(&rec, &committed);
        assert_eq!(rec.report.member_used, 1);
        let notes = rec.report.member_notes.join("\n");
        assert!(notes.contains("member 1"), "member notes must name the bad member: {notes:?}");
        let state = log.members().into_iter().find(|m| m.group == 0 && m.member == 0).unwrap().state;
        assert_ne!(state, MemberState::InService);
        // The log goes on with the remaining member.
        let mut s = log.session();
        for i in 50..60u64 {
            committed.push(commit_txn(&mut s, vec![payload(90, i, 3000)], WAIT));
        }
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
    assert_dense_from(&rec.transactions, 1);
}

fn garbage_over_the_middle(c: &LogConfig, member: u32) {
    let path = member_file(c, 0, member);
    let mut x = 0x1234_5678_9abc_def0u64;
    let junk: Vec<u8> = (0..16 * KIB)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    write_bytes(&path, c.log_file_size / 2, &junk);
}

#[test]
fn a_member_overwritten_with_garbage_is_replaced_by_its_mirror_at_recovery() {
    for bad in [0u32, 1] {
        let dir = tempfile::tempdir().unwrap();
        let c = two_member_config(dir.path());
        let mut committed = Vec::new();
        {
            let (log, _) = open(&c);
            let mut s = log.session();
            // About 700 KB: past the middle of the first file.
            for i in 0..100u64 {
                committed.push(commit_txn(&mut s, vec![payload(91, i, 7000)], WAIT));
            }
        }
        garbage_over_the_middle(&c, bad);
        {
            let (log, rec) = open(&c);
            assert_recovered_exactly(&rec, &committed);
            assert_eq!(rec.report.member_used, 1 - bad);
            // The damaged copy was repaired from the other member.
            let read = |m: u32| {
                let mut b = vec![0u8; 16 * KIB as usize];
                fs::File::open(member_file(&c, 0, m))
                    .unwrap()
                    .read_exact_at(&mut b, c.log_file_size / 2)
                    .unwrap();
                b
            };
            assert!(read(0) == read(1), "member {} was not repaired", bad + 1);
            let mut s = log.session();
            for i in 100..110u64 {
                committed.push(commit_txn(&mut s, vec![payload(91, i, 7000)], WAIT));
            }
        }
        let rec = recover(&c);
        assert_recovered_exactly(&rec, &committed);
    }
}

#[test]
fn recovery_notes_name_a_damaged_member() {
    for bad in [0u32, 1] {
        let dir = tempfile::tempdir().unwrap();
        let c = two_member_config(dir.path());
        {
            let (log, _) = open(&c);
            let mut s = log.session();
            for i in 0..100u64 {
                commit_txn(&mut s, vec![payload(92, i, 7000)], WAIT);
            }
        }
        garbage_over_the_middle(&c, bad);
        let rec = recover(&c);
        assert_eq!(rec.transactions.len(), 100);
        let notes = rec.report.member_notes.join("\n");
        assert!(
            notes.contains(&format!("member {}", bad + 1)),
            "member notes must name member {}: {notes:?}",
            bad + 1
        );
    }
}

// ---------------------------------------------------------------------------------------
// 8. Configuration and foreign files

#[test]
fn invalid_configuration_values_are_refused_naming_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    type Change = fn(&mut LogConfig);
    let cases: Vec<(&str, Change)> = vec![
        ("log_groups", |c| c.log_groups = 1),
        ("log_groups", |c| c.log_groups = 65),
        ("log_file_size", |c| c.log_file_size = 32 * KIB),
        ("log_file_size", |c| c.log_file_size = MIB + 100),
        ("log_buffer", |c| c.log_buffer = 32 * KIB),
        ("log_buffer", |c| c.log_buffer = 100_000),
        ("log_buffer", |c| c.log_buffer = 2 * MIB),
        ("log_parallelism", |c| c.log_parallelism = 0),
        ("log_parallelism", |c| c.log_parallelism = 65),
        ("batch_flush_buffer_divisor", |c| c.batch_flush_buffer_divisor = 1),
        ("batch_flush_bytes", |c| c.batch_flush_bytes = 100),
        ("batch_flush_timeout_ms", |c| c.batch_flush_timeout_ms = 0),
        ("mirror_dirs", |c| c.mirror_dirs = vec![c.dir.clone()]),
        ("log_members", |c| c.mirror_dirs = (0..8).map(|i| c.dir.join(format!("m{i}"))).collect()),
    ];
    for (parameter, change) in cases {
        let mut c = config(&dir.path().join("db"));
        change(&mut c);
        match RedoLog::open(c) {
            Err(RedoError::Config(e)) => {
                assert_eq!(e.parameter, parameter);
                let text = RedoError::Config(e.clone()).to_string();
                assert!(text.contains(parameter), "{text}");
            }
            Err(e) => panic!("{parameter}: expected a Config error, got {e}"),
            Ok(_) => panic!("{parameter}: an invalid value was accepted"),
        }
    }
    // Nothing was created by the refused opens.
    assert!(!dir.path().join("db").exists());
}

#[test]
fn dynamic_triggers_are_validated_like_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&config(dir.path()));
    let before = log.batch_triggers();
    for (args, parameter) in [
        ((1u32, MIB, 100u64), "batch_flush_buffer_divisor"),
        ((3, 10, 100), "batch_flush_bytes"),
        ((3, MIB, 0), "batch_flush_timeout_ms"),
    ] {
        match log.set_batch_triggers(args.0, args.1, args.2) {
            Err(RedoError::Config(e)) => assert_eq!(e.parameter, parameter),
            other => panic!("{parameter}: {other:?}"),
        }
        assert_eq!(log.batch_triggers(), before, "a refused change changes nothing");
    }
}

#[test]
fn static_parameters_cannot_change_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(&dir.path().join("db"));
    recover(&c);
    let mut other = c.clone();
    other.log_file_size = 512 * KIB;
    other.log_buffer = 256 * KIB;
    match open_err(&other) {
        RedoError::StaticParameter { parameter, current, requested } => {
            assert_eq!(parameter, "log_file_size");
            assert_eq!(current, MIB.to_string());
            assert_eq!(requested, (512 * KIB).to_string());
        }
        e => panic!("{e}"),
    }
    let mut other = c.clone();
    other.log_groups = 4;
    assert!(matches!(open_err(&other), RedoError::StaticParameter { parameter: "log_groups", .. }));
    let mut other = c.clone();
    other.mirror_dirs = vec![dir.path().join("mirror")];
    assert!(matches!(open_err(&other), RedoError::StaticParameter { parameter: "log_members", .. }));
    // Parameters not fixed at creation may change.
    let mut other = c.clone();
    other.log_buffer = 128 * KIB;
    other.log_parallelism = 4;
    other.sync_method = SyncMethod::Dsync;
    other.commit_wait = CommitWait::NoWait;
    let (log, _) = open(&other);
    let mut s = log.session();
    let r = commit_small(&mut s, 100, 0, WAIT);
    drop(s);
    drop(log);
    assert_recovered_exactly(&recover(&c), &[r]);
}

#[test]
fn a_garbage_control_file_is_refused_as_foreign() {
    for len in [2 * BLOCK_BYTES as usize, 100] {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path());
        recover(&c);
        let ctl = control_path(dir.path());
        fs::write(&ctl, vec![0xA5u8; len]).unwrap();
        let (path, detail) = expect_foreign(open_err(&c));
        assert_eq!(path, ctl);
        assert!(!detail.is_empty());
        let text = open_err(&c).to_string();
        assert!(text.contains("control.ctl"), "{text}");
    }
}

/// Found by the `control_file` fuzz target: a control record with a valid checksum whose
/// checkpoint lay 64 KiB short of 2^64 was used, and the log buffer's arithmetic
/// overflowed at the first commit. A record that says the impossible is refused at open,
/// and the older slot is not used instead (its checkpoint may need reused redo).
#[test]
fn a_control_record_naming_an_impossible_checkpoint_is_refused_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    {
        let (log, _) = open(&c);
        commit_small(&mut log.session(), 105, 0, WAIT);
    }
    let ctl = control_path(dir.path());
    let bytes = fs::read(&ctl).unwrap();
    let slot = BLOCK_BYTES as usize;
    let record = redo::format::ControlRecord::decode(&bytes[..slot]).unwrap();
    let cases = [
        (
            "checkpoint scan start 18446744073709486080 is beyond the limit",
            Lsn(u64::MAX - 0xffff),
            record.checkpoint_lsn,
        ),
        ("lies inside a block header", Lsn(BLOCK_BYTES + 3), Lsn(BLOCK_BYTES + 3)),
        ("is before the checkpoint position", Lsn(0), Lsn(BLOCK_BYTES + 100)),
    ];
    for (needle, scan_from, lsn) in cases {
        let newer = redo::format::ControlRecord {
            generation: record.generation + 1,
            checkpoint_scan_from: scan_from,
            checkpoint_lsn: lsn,
            ..record
        };
        let mut file = bytes.clone();
        file[slot..].copy_from_slice(&newer.encode());
        fs::write(&ctl, &file).unwrap();
        assert_foreign(open_err(&c), &ctl, needle);
    }
    // Found by the `control_file` fuzz target: two different records of one generation
    // (which the engine never writes) opened with the first slot's.
    let twin = redo::format::ControlRecord { checkpoint_scn: Scn(0), ..record };
    let mut file = bytes.clone();
    file[slot..].copy_from_slice(&redo::format::ControlRecord { checkpoint_scn: Scn(1), ..twin }.encode());
    file[..slot].copy_from_slice(&twin.encode());
    fs::write(&ctl, &file).unwrap();
    assert_foreign(open_err(&c), &ctl, "both control slots hold generation");
    fs::write(&ctl, &bytes).unwrap();
    assert_eq!(recover(&c).transactions.len(), 1, "the database opens again with its own control file");
}

#[test]
fn another_databases_control_file_is_refused_as_foreign() {
    let root = tempfile::tempdir().unwrap();
    let a = config(&root.path().join("a"));
    let b = config(&root.path().join("b"));
    for c in [&a, &b] {
        let (log, _) = open(c);
        commit_small(&mut log.session(), 101, 0, WAIT);
    }
    fs::copy(control_path(&b.dir), control_path(&a.dir)).unwrap();
    let (path, detail) = expect_foreign(open_err(&a));
    assert!(path.starts_with(&a.dir), "{}", path.display());
    assert!(detail.contains("another database"), "{detail}");
    assert!(open_err(&a).to_string().contains("redo01_1.log"));
}

#[test]
fn a_log_file_from_another_database_is_refused_as_foreign() {
    let root = tempfile::tempdir().unwrap();
    let a = config(&root.path().join("a"));
    let b = config(&root.path().join("b"));
    for c in [&a, &b] {
        let (log, _) = open(c);
        commit_small(&mut log.session(), 102, 0, WAIT);
    }
    let target = member_file(&a, 0, 0);
    fs::copy(member_file(&b, 0, 0), &target).unwrap();
    assert_foreign(open_err(&a), &target, "another database");
}

#[test]
fn a_log_file_in_the_wrong_place_is_refused_as_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    {
        let (log, _) = open(&c);
        commit_small(&mut log.session(), 103, 0, WAIT);
    }
    // Group 1's file copied over group 2's.
    fs::copy(member_file(&c, 0, 0), member_file(&c, 1, 0)).unwrap();
    assert_foreign(open_err(&c), &member_file(&c, 1, 0), "group 1");
}

#[test]
fn a_truncated_log_file_is_refused_as_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    recover(&c);
    let f = OpenOptions::new().write(true).open(member_file(&c, 2, 0)).unwrap();
    f.set_len(c.log_file_size / 2).unwrap();
    drop(f);
    assert_foreign(open_err(&c), &member_file(&c, 2, 0), "bytes");
}

#[test]
fn a_missing_log_file_of_a_single_member_log_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    recover(&c);
    fs::remove_file(member_file(&c, 1, 0)).unwrap();
    let e = open_err(&c);
    assert!(matches!(e, RedoError::Io { .. }), "{e}");
    assert!(e.to_string().contains("redo02_1.log"), "{e}");
}

#[test]
fn must_exist_refuses_a_directory_without_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.open_mode = OpenMode::MustExist;
    let e = open_err(&c);
    assert!(matches!(e, RedoError::Foreign { .. }), "{e}");
    assert!(e.to_string().contains("control.ctl"), "{e}");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "nothing created");
    // Nor a directory that does not exist.
    let mut c = config(&dir.path().join("nowhere"));
    c.open_mode = OpenMode::MustExist;
    open_err(&c);
    // It opens one that exists.
    let mut c = config(dir.path());
    recover(&c);
    c.open_mode = OpenMode::MustExist;
    recover(&c);
}

#[test]
fn log_files_without_a_control_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    {
        let (log, _) = open(&c);
        commit_small(&mut log.session(), 104, 0, WAIT);
    }
    fs::remove_file(control_path(dir.path())).unwrap();
    let e = open_err(&c);
    assert!(matches!(e, RedoError::Foreign { .. }), "{e}");
    assert!(e.to_string().contains("redo01_1.log"), "{e}");
    // The log files were left alone.
    assert!(fs::metadata(member_file(&c, 0, 0)).unwrap().len() == c.log_file_size);
}

// ---------------------------------------------------------------------------------------
// 9. Corruption versus a torn tail

/// 4 MiB files: more than WRITE_MAX_BYTES (1 MiB) of redo can follow damage in one file.
fn big_file_config(dir: &Path) -> LogConfig {
    let mut c = config(dir);
    c.log_file_size = 4 * MIB;
    c
}

/// About 1.6 MB of redo in 200 transactions of one 8 KB change each.
fn commit_lots(c: &LogConfig) -> Vec<Committed> {
    let (log, _) = open(c);
    let mut s = log.session();
    (0..200u64).map(|i| commit_txn(&mut s, vec![payload(110, i, 8000)], WAIT)).collect()
}

#[test]
fn damage_to_a_record_far_before_the_end_of_the_log_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let c = big_file_config(dir.path());
    let committed = commit_lots(&c);
    // A byte in the middle of the third transaction's change payload.
    let r3 = committed[2].receipt;
    let bytes = stream_bytes_before(&c, r3.lsn, COMMIT_RECORD + 8000);
    let (group, offset) = bytes[4000];
    assert_eq!(group, 0);
    xor_byte(&member_file(&c, 0, 0), offset, 0x10);
    let (lsn, path, detail) = expect_corruption(open_err(&c));
    assert_eq!(lsn, committed[1].receipt.lsn, "the damaged record's start");
    assert_eq!(path, member_file(&c, 0, 0));
    assert!(detail.contains("valid redo follows"), "{detail}");
}

#[test]
fn damage_to_a_block_header_far_before_the_end_of_the_log_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let c = big_file_config(dir.path());
    commit_lots(&c);
    let g = Geometry::new(c.log_file_size, c.log_groups);
    let block = Lsn(10 * BLOCK_BYTES);
    // The block_lsn field of block 10's header.
    xor_byte(&member_file(&c, 0, 0), g.file_offset(block) + 9, 0x01);
    let (lsn, path, _) = expect_corruption(open_err(&c));
    // The scan stops at the start of the record that runs into the block.
    assert!(lsn <= block && block.0 - lsn.0 < 8100, "{lsn}");
    assert_eq!(path, member_file(&c, 0, 0));
}

#[test]
fn a_gap_in_the_scns_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let committed: Vec<Committed> = {
        let (log, _) = open(&c);
        let mut s = log.session();
        (0..10u64).map(|i| commit_small(&mut s, 111, i, WAIT)).collect()
    };
    // Rewrite the last commit record, validly, with the SCN after its own.
    let last = committed[9].receipt;
    let record = encode_commit_record(last.txn, last.scn.next(), 1);
    let path = member_file(&c, 0, 0);
    for ((_, offset), byte) in stream_bytes_before(&c, last.lsn, COMMIT_RECORD).into_iter().zip(record) {
        write_bytes(&path, offset, &[byte]);
    }
    let (_, _, detail) = expect_corruption(open_err(&c));
    assert!(detail.contains("dense"), "{detail}");
}

#[test]
fn damage_in_the_last_record_is_a_torn_tail_that_loses_only_that_commit() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut committed: Vec<Committed> = {
        let (log, _) = open(&c);
        let mut s = log.session();
        (0..30u64).map(|i| commit_small(&mut s, 112, i, WAIT)).collect()
    };
    let last = committed.pop().unwrap().receipt;
    // The SCN in the last commit record.
    let bytes = stream_bytes_before(&c, last.lsn, COMMIT_RECORD);
    xor_byte(&member_file(&c, 0, 0), bytes[RECORD_HEADER].1, 0x04);
    {
        let (log, rec) = open(&c);
        assert_recovered_exactly(&rec, &committed);
        assert!(matches!(rec.report.stop, StopReason::TornRecord { .. }), "{:?}", rec.report.stop);
        assert!(rec.report.end > committed[28].receipt.lsn && rec.report.end < last.lsn);
        assert!(rec.report.to_string().contains("torn"), "{}", rec.report);
        // Its change record, now without a commit, is discarded.
        assert_eq!(rec.report.uncommitted_discarded, 1);
        // The log goes on from there: the lost commit's SCN is handed out again.
        let mut s = log.session();
        let again = commit_small(&mut s, 113, 0, WAIT);
        assert_eq!(again.receipt.scn, last.scn);
        committed.push(again);
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
    assert_eq!(rec.report.stop, StopReason::Padding);
}

#[test]
fn after_a_torn_tail_the_log_grows_past_the_damage_without_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let c = big_file_config(dir.path());
    let mut committed = commit_lots(&c);
    // Damage the last record, as a torn write would.
    let last = committed.pop().unwrap().receipt;
    let bytes = stream_bytes_before(&c, last.lsn, COMMIT_RECORD + 8000);
    xor_byte(&member_file(&c, 0, 0), bytes[100].1, 0x80);
    {
        let (log, rec) = open(&c);
        assert_recovered_exactly(&rec, &committed);
        // More than WRITE_MAX_BYTES of new redo after the damage point.
        let mut s = log.session();
        for i in 0..160u64 {
            committed.push(commit_txn(&mut s, vec![payload(114, i, 8000)], WAIT));
        }
    }
    let rec = recover(&c);
    assert_recovered_exactly(&rec, &committed);
    assert_dense_from(&rec.transactions, 1);
}

#[test]
fn damage_followed_by_redo_in_the_next_log_file_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let c = small_files_config(dir.path());
    let c2 = c.clone();
    // About 400 KB: into the second file, less than 1 MiB past the damage.
    let committed = with_deadline(Duration::from_secs(10), "committing 400 KB", move || {
        let (log, _) = open(&c2);
        let mut s = log.session();
        (0..200u64).map(|i| commit_txn(&mut s, vec![payload(115, i, 2000)], WAIT)).collect::<Vec<_>>()
    });
    let r = committed[2].receipt;
    let bytes = stream_bytes_before(&c, r.lsn, COMMIT_RECORD + 2000);
    xor_byte(&member_file(&c, 0, 0), bytes[1000].1, 0x10);
    let (lsn, _, _) = expect_corruption(open_err(&c));
    assert_eq!(lsn, committed[1].receipt.lsn);
}

// ---------------------------------------------------------------------------------------
// The log writer at rest

/// Thread ids of this process's threads named `redo-lgwr`.
fn lgwr_threads() -> HashSet<u64> {
    fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let comm = fs::read_to_string(e.path().join("comm")).ok()?;
            (comm.trim() == "redo-lgwr").then(|| e.file_name().to_string_lossy().parse().ok())?
        })
        .collect()
}

/// User plus system CPU time of a thread of this process, in clock ticks.
fn thread_cpu_ticks(tid: u64) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `after` starts at field 3.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

#[test]
fn an_idle_log_writer_does_not_spin() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.batch_flush_timeout_ms = 50;
    // Find this log's LGWR: the one thread of that name that appeared while it opened
    // (other tests may open logs at the same time: try again until exactly one appeared).
    let (log, lgwr) = (0..50)
        .find_map(|_| {
            let before = lgwr_threads();
            let (log, _) = open(&c);
            // The thread names itself once it runs.
            let new = || -> Vec<u64> { lgwr_threads().difference(&before).copied().collect() };
            wait_until(Duration::from_secs(1), || !new().is_empty());
            thread::sleep(Duration::from_millis(20));
            let new = new();
            (new.len() == 1).then(|| (log, new[0]))
        })
        .expect("could not tell this log's writer thread from the others");
    commit_small(&mut log.session(), 120, 0, WAIT);
    // Idle for much longer than the timeout.
    thread::sleep(Duration::from_millis(200));
    let t0 = thread_cpu_ticks(lgwr).unwrap();
    thread::sleep(Duration::from_secs(1));
    let used = thread_cpu_ticks(lgwr).unwrap() - t0;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    // A parked writer wakes a few times a second at most; a polling one (even one that
    // sleeps ~50 us of timer slack per turn) burns 10% and more of a CPU.
    assert!(used * 20 < hz, "an idle LGWR used {used} ticks of CPU (at {hz} per second) in one idle second");
    drop(log);
}

// ---------------------------------------------------------------------------------------
// Hooks for the database layer

#[test]
fn rolling_back_to_a_savepoint_drops_only_the_changes_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    {
        let (log, _) = open(&c);
        let mut s = log.session();
        s.log_change(b"kept before").unwrap();
        let sp = s.savepoint();
        s.log_change(b"dropped 1").unwrap();
        s.log_change(b"dropped 2").unwrap();
        s.rollback_to(sp);
        assert!(s.transaction().is_some(), "the transaction stays open");
        s.log_change(b"kept after").unwrap();
        s.commit(WAIT).unwrap();
        assert_eq!(s.stats().get(Stat::RedoEntries), 3, "two changes and the commit record");
    }
    let rec = recover(&c);
    assert_eq!(rec.transactions.len(), 1);
    assert_eq!(rec.transactions[0].changes, vec![b"kept before".to_vec(), b"kept after".to_vec()]);
}

#[test]
fn commit_then_runs_once_the_commit_is_in_the_buffer_and_before_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let (log, _) = open(&c);
    settle(&log);
    let mut s = log.session();
    s.log_change(b"x").unwrap();
    let mut seen = None;
    let r = s
        .commit_then(WAIT, |receipt| {
            // The unit is in the buffer (reserved) but the session has not waited yet.
            assert!(log.reserved_end() >= receipt.lsn);
            seen = Some((*receipt, log.durable_lsn()));
        })
        .unwrap();
    let (receipt, durable_then) = seen.expect("hook ran");
    assert_eq!(receipt, r);
    assert!(durable_then < r.lsn, "the hook ran before the commit was durable");
    assert!(log.durable_lsn() >= r.lsn, "a WAIT commit returns durable");
}

#[test]
fn the_commit_backlog_shows_what_a_crash_would_lose_of_nowait_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&quiet_config(dir.path()));
    let mut s = log.session();
    assert_eq!(log.commit_backlog(), CommitBacklog::default(), "nothing committed yet");
    // BATCH NOWAIT with the background triggers far away: the commits stay in the buffer.
    let mut last = None;
    for i in 0..4u64 {
        last = Some(commit_small(&mut s, 9, i, BATCH_NOWAIT).receipt);
    }
    thread::sleep(Duration::from_millis(20));
    let backlog = log.commit_backlog();
    assert_eq!(backlog.commits, 4, "{backlog:?}");
    assert!(backlog.bytes >= 4 * 100, "{backlog:?}");
    let age = backlog.oldest.expect("an oldest commit");
    assert!(age >= Duration::from_millis(20), "{backlog:?}");
    log.wait_durable(last.unwrap().lsn).unwrap();
    let after = log.commit_backlog();
    assert_eq!((after.commits, after.bytes, after.oldest), (0, 0, None), "{after:?}");
}
