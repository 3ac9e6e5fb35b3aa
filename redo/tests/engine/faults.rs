//! Fault tests of the redo log engine on the simulated disk ([`redo::sim::SimStorage`]):
//! failed syncs and writes (EIO, ENOSPC) on the only member or on one of two, failures
//! while sessions wait, a full disk at creation, a failed checkpoint, bit flips, and power
//! loss (`crash`) afterwards. What is checked after every crash: the reopened log holds
//! every commit acknowledged under WAIT, with its changes, and SCNs dense from the
//! checkpoint.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::common::*;
use redo::sim::{Fault, FaultOp, SimStorage};
use redo::*;

const FORCE_WAIT: CommitOptions =
    CommitOptions { wait: Some(CommitWait::ForceWait), logging: Some(CommitLogging::Immediate) };

// ---------------------------------------------------------------------------------------
// Helpers

/// One member in /db, 3 groups of 1 MiB, a 256 KiB buffer, fdatasync (so that what is
/// written and what is synced differ on the simulated disk).
fn sim_config() -> LogConfig {
    config(Path::new("/db"))
}

/// Two members: /db and /db2.
fn mirrored_config() -> LogConfig {
    let mut c = sim_config();
    c.mirror_dirs = vec![PathBuf::from("/db2")];
    c
}

fn open_on(disk: &SimStorage, c: &LogConfig) -> Result<(RedoLog, Recovered)> {
    RedoLog::open_with(c.clone(), Arc::new(disk.clone()))
}

fn open_ok(disk: &SimStorage, c: &LogConfig) -> (RedoLog, Recovered) {
    open_on(disk, c).unwrap_or_else(|e| panic!("open on the simulated disk: {e}"))
}

/// Opens `c` on `disk`, lets LGWR settle and runs `f` with the disk and the log, all on
/// a thread given 20 s (see [`with_deadline`]).
fn on_settled_log<T: Send + 'static>(
    disk: &SimStorage,
    c: &LogConfig,
    what: &str,
    f: impl FnOnce(&SimStorage, &RedoLog) -> T + Send + 'static,
) -> T {
    let (disk, c) = (disk.clone(), c.clone());
    with_deadline(Duration::from_secs(20), what, move || {
        let (log, _) = open_ok(&disk, &c);
        settle(&log);
        f(&disk, &log)
    })
}

fn fault(op: FaultOp, path_contains: &str, skip: u64, errno: i32) -> Fault {
    Fault { op, path_contains: path_contains.into(), skip, errno }
}

/// Every commit in `must` is recovered with its changes, and the recovered SCNs are dense
/// from the checkpoint.
fn assert_recovered_includes(rec: &Recovered, must: &[Committed]) {
    let first = rec.report.checkpoint_scn.0 + 1;
    for (i, t) in rec.transactions.iter().enumerate() {
        assert_eq!(t.scn, Scn(first + i as u64), "recovered SCNs must be dense; report: {}", rec.report);
    }
    let by_scn: BTreeMap<Scn, &RecoveredTxn> = rec.transactions.iter().map(|t| (t.scn, t)).collect();
    for c in must {
        let r = c.receipt;
        if r.scn.0 < first {
            continue;
        }
        let t = by_scn.get(&r.scn).unwrap_or_else(|| {
            panic!("acknowledged WAIT commit {} was not recovered; report: {}", r.scn, rec.report)
        });
        assert_eq!(t.txn, r.txn, "txn of {}", r.scn);
        assert_eq!(t.commit_lsn, r.lsn, "commit lsn of {}", r.scn);
        assert!(t.changes == c.changes, "changes of {} differ", r.scn);
    }
}

/// Exactly `expected` is recovered.
fn assert_recovered_exactly(rec: &Recovered, expected: &[Committed]) {
    assert_recovered_includes(rec, expected);
    let want: Vec<Scn> = expected.iter().map(|c| c.receipt.scn).collect();
    let got: Vec<Scn> = rec.transactions.iter().map(|t| t.scn).collect();
    assert_eq!(got, want, "report: {}", rec.report);
}

fn is_log_failed(e: &RedoError) -> bool {
    matches!(e, RedoError::LogFailed(_))
}

/// What failed the log, from a [`RedoError::LogFailed`]; panics on any other error.
fn expect_log_failed(e: &RedoError) -> &LogFailure {
    match e {
        RedoError::LogFailed(f) => f,
        e => panic!("expected LogFailed, got {e}"),
    }
}

/// (path of member 1, file offset) of each of the `n` stream bytes that end at `end`.
fn stream_file_bytes_before(c: &LogConfig, end: Lsn, n: usize) -> Vec<(PathBuf, u64)> {
    stream_bytes_before(c, end, n)
        .into_iter()
        .map(|(group, offset)| (member_file(c, group, 0), offset))
        .collect()
}

// ---------------------------------------------------------------------------------------
// 10. A failed write or sync of the only member fails the log

/// Commits WAIT until the injected fault fails the log; returns what was acknowledged
/// and the error.
fn commit_until_failure(disk: &SimStorage, c: &LogConfig, f: Fault) -> (RedoLog, Vec<Committed>, RedoError) {
    let (log, _) = open_ok(disk, c);
    settle(&log);
    let mut s = log.session();
    let mut acked: Vec<Committed> = (0..10).map(|i| commit_small(&mut s, 1, i, WAIT)).collect();
    disk.inject(f);
    let err = (10..200u64)
        .find_map(|i| match try_commit(&mut s, vec![payload(1, i, 3000)], WAIT) {
            Ok(c) => {
                acked.push(c);
                None
            }
            Err(e) => Some(e),
        })
        .expect("the fault never failed a commit");
    (log, acked, err)
}

/// After the log failed: every later commit, in every mode, is refused.
fn assert_everything_refused(log: &RedoLog) {
    let failure = log.failure().expect("log.failure() after a failed write");
    assert!(log.status().failed);
    let mut s = log.session();
    for opts in [WAIT, NOWAIT, BATCH_NOWAIT, BATCH_WAIT, FORCE_WAIT, CommitOptions::DEFAULT] {
        match s.commit(opts) {
            Err(RedoError::LogFailed(f)) => assert!(Arc::ptr_eq(&f, &failure), "the same failure each time"),
            other => panic!("a {opts:?} commit after the failure returned {other:?}"),
        }
    }
    assert!(is_log_failed(&s.log_change(b"after").unwrap_err()));
    let (_, durable) = (log.durable_commit(), log.durable_lsn());
    if log.reserved_end() > durable {
        assert!(is_log_failed(&log.wait_durable(log.reserved_end()).unwrap_err()));
    }
    assert!(is_log_failed(&log.shutdown().unwrap_err()), "shutdown reports the failure");
}

fn crash_and_check(disk: &SimStorage, c: &LogConfig, acked: &[Committed]) {
    for seed in 0..4 {
        let survivor = disk.crash(seed);
        let (log, rec) = open_ok(&survivor, c);
        // The failed write never became durable, so exactly the acknowledged commits
        // come back: nothing acknowledged (or refused) after the failure.
        assert_recovered_exactly(&rec, acked);
        // And the log goes on.
        let mut s = log.session();
        let next = commit_small(&mut s, 2, seed, WAIT);
        assert_eq!(next.receipt.scn, Scn(acked.len() as u64 + 1));
    }
}

#[test]
fn a_failed_log_sync_fails_every_later_commit_in_every_mode() {
    let disk = SimStorage::new();
    let c = sim_config();
    let (log, acked, err) = commit_until_failure(&disk, &c, fault(FaultOp::Sync, "redo", 5, libc::EIO));
    assert_eq!(acked.len(), 15, "the sixth sync after the fault fails");
    let f = expect_log_failed(&err);
    assert_eq!(f.op, "sync");
    assert_eq!(f.path, member_file(&c, 0, 0));
    assert_eq!(f.source.raw_os_error(), Some(libc::EIO));
    let text = err.to_string();
    assert!(text.contains("sync") && text.contains("/db/redo01_1.log"), "{text}");
    assert_everything_refused(&log);
    drop(log);
    crash_and_check(&disk, &c, &acked);
}

#[test]
fn a_failed_log_write_fails_the_log_and_names_the_write() {
    let disk = SimStorage::new();
    let c = sim_config();
    let (log, acked, err) = commit_until_failure(&disk, &c, fault(FaultOp::Write, "redo", 3, libc::EIO));
    assert_eq!(acked.len(), 13);
    let f = expect_log_failed(&err);
    assert_eq!(f.op, "write");
    assert_eq!(f.path, member_file(&c, 0, 0));
    assert!(err.to_string().contains("write of /db/redo01_1.log failed"), "{err}");
    assert_everything_refused(&log);
    drop(log);
    crash_and_check(&disk, &c, &acked);
}

#[test]
fn a_full_disk_fails_the_log_with_enospc_naming_the_file() {
    let disk = SimStorage::new();
    let c = sim_config();
    let (log, acked, err) = commit_until_failure(&disk, &c, fault(FaultOp::Write, "redo", 0, libc::ENOSPC));
    assert_eq!(acked.len(), 10);
    assert_eq!(expect_log_failed(&err).source.raw_os_error(), Some(libc::ENOSPC));
    let text = err.to_string();
    assert!(text.contains("write") && text.contains("/db/redo01_1.log"), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    assert_everything_refused(&log);
    drop(log);
    crash_and_check(&disk, &c, &acked);
}

#[test]
fn a_failure_wakes_every_waiting_session_with_an_error() {
    let disk = SimStorage::new();
    let c = sim_config();
    let (log, _) = open_ok(&disk, &c);
    settle(&log);
    let log = Arc::new(log);
    let started = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (log, started) = (log.clone(), started.clone());
            thread::spawn(move || {
                let mut s = log.session();
                let mut attempts = Vec::new();
                for i in 0.. {
                    let opts = [WAIT, NOWAIT, BATCH_WAIT, BATCH_NOWAIT][((t + i) % 4) as usize];
                    let changes = vec![payload(10 + t, i, 200 + (i as usize % 7) * 300)];
                    let result = try_commit(&mut s, changes.clone(), opts);
                    started.fetch_add(1, SeqCst);
                    match result {
                        Ok(c) => attempts.push((changes, Some(c))),
                        Err(e) => {
                            attempts.push((changes, None));
                            return (attempts, e);
                        }
                    }
                }
                unreachable!()
            })
        })
        .collect();
    assert!(wait_until(Duration::from_secs(5), || started.load(SeqCst) >= 200));
    disk.inject(fault(FaultOp::Sync, "redo", 0, libc::EIO));
    let results = with_deadline(Duration::from_secs(10), "sessions noticing the failure", move || {
        threads.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    let mut waited = Vec::new();
    for (attempts, err) in &results {
        assert!(is_log_failed(err), "every session ends with LogFailed, got {err}");
        waited.extend(attempts.iter().filter_map(|(_, c)| c.clone()).filter(|c| c.receipt.waited));
    }
    drop(Arc::try_unwrap(log).ok().expect("the log has no other owner"));
    for seed in 0..4 {
        let (_log, rec) = open_ok(&disk.crash(seed), &c);
        assert_recovered_includes(&rec, &waited);
        // Each session's recovered commits are a prefix of what it attempted, with the
        // changes it logged.
        for (t, (attempts, _)) in results.iter().enumerate() {
            let tag = 10 + t as u64;
            let mine: Vec<&RecoveredTxn> =
                rec.transactions.iter().filter(|r| r.changes[0][..8] == tag.to_le_bytes()).collect();
            for (k, r) in mine.iter().enumerate() {
                assert!(
                    r.changes == attempts[k].0,
                    "session {t}: recovered commit {k} is not its attempt {k}"
                );
            }
        }
    }
}

#[test]
fn a_failed_sync_ends_pending_durable_futures_with_the_failure_never_success() {
    let disk = SimStorage::new();
    let c = sim_config();
    on_settled_log(&disk, &c, "durable futures across a failed sync", |disk, log| {
        let mut s = log.session();
        s.log_change(&payload(3, 0, 100)).unwrap();
        let (ok, wait) = s.commit_deferring_wait(WAIT, |_| {}).unwrap();
        block_on(wait.unwrap()).unwrap();
        assert!(log.durable_lsn() >= ok.lsn);
        disk.inject(fault(FaultOp::Sync, "redo", 0, libc::EIO));
        let mut failed = 0;
        for i in 1..50u64 {
            let logged = s.log_change(&payload(3, i, 100));
            let committed = logged.and_then(|_| s.commit_deferring_wait(WAIT, |_| {}));
            match committed {
                Ok((receipt, wait)) => match block_on(wait.unwrap()) {
                    Ok(()) => panic!("commit {} acknowledged after the failed sync", receipt.scn),
                    Err(e) => {
                        assert!(is_log_failed(&e), "{e}");
                        failed += 1;
                    }
                },
                Err(e) => {
                    assert!(is_log_failed(&e), "{e}");
                    break;
                }
            }
        }
        assert_eq!(failed, 1, "the first commit's wait sees the failure; later commits are refused");
        assert_eq!(s.stats().get(Stat::CommitWaitPerformed), 1, "a failed wait counts nothing");
    });
}

#[test]
fn a_crash_at_any_moment_keeps_every_waited_commit() {
    for seed in 0..6u64 {
        let disk = SimStorage::new();
        let mut c = sim_config();
        c.log_file_size = 2 * MIB;
        c.log_parallelism = 1 + (seed % 2) as u32;
        c.batch_flush_timeout_ms = 20;
        let mut waited = Vec::new();
        let mut round_disk = disk.clone();
        // Two rounds: crash, recover, commit more, crash again.
        for round in 0..2u64 {
            let (log, rec) = open_ok(&round_disk, &c);
            assert_recovered_includes(&rec, &waited);
            waited.retain(|w: &Committed| rec.transactions.iter().any(|t| t.scn == w.receipt.scn));
            let log = Arc::new(log);
            let stop = Arc::new(AtomicBool::new(false));
            let threads: Vec<_> = (0..3u64)
                .map(|t| {
                    let (log, stop) = (log.clone(), stop.clone());
                    thread::spawn(move || {
                        let mut s = log.session();
                        let mut acked = Vec::new();
                        // Bounded, so that two rounds stay within the log files (this test
                        // takes no checkpoints).
                        for i in 0..300 {
                            if stop.load(SeqCst) {
                                break;
                            }
                            let opts = [WAIT, BATCH_NOWAIT, NOWAIT][((t + i) % 3) as usize];
                            let tag = round * 100 + t;
                            match try_commit(
                                &mut s,
                                vec![payload(tag, i, 64 + (i as usize * 97) % 2000)],
                                opts,
                            ) {
                                Ok(c) if c.receipt.waited => acked.push(c),
                                Ok(_) => {}
                                Err(_) => break,
                            }
                        }
                        acked
                    })
                })
                .collect();
            thread::sleep(Duration::from_millis(30 + seed * 7));
            let survivor = round_disk.crash(seed * 10 + round);
            stop.store(true, SeqCst);
            for h in threads {
                waited.extend(h.join().unwrap());
            }
            drop(Arc::try_unwrap(log).ok().expect("the log has no other owner"));
            round_disk = survivor;
        }
        let (_log, rec) = open_ok(&round_disk, &c);
        assert_recovered_includes(&rec, &waited);
    }
}

// ---------------------------------------------------------------------------------------
// 10. With two members, a failed member is taken out of service

fn member_state(log: &RedoLog, group: u32, member: u32) -> MemberState {
    log.members().into_iter().find(|m| m.group == group && m.member == member).unwrap().state
}

/// A fault on one member's file of group 1: commits go on; recovery is complete.
fn one_member_fails(f: Fault, bad_member: u32) {
    let disk = SimStorage::new();
    let c = mirrored_config();
    let mut committed = Vec::new();
    {
        let (log, _) = open_ok(&disk, &c);
        settle(&log);
        let mut s = log.session();
        for i in 0..10 {
            committed.push(commit_small(&mut s, 20, i, WAIT));
        }
        disk.inject(f);
        // The write that meets the fault still succeeds on the other member.
        committed.push(commit_small(&mut s, 20, 10, WAIT));
        assert_eq!(member_state(&log, 0, bad_member), MemberState::WriteFailed);
        assert_eq!(member_state(&log, 0, 1 - bad_member), MemberState::InService);
        assert!(log.failure().is_none());
        let before = log.stats();
        for i in 11..40 {
            let opts = [WAIT, NOWAIT, BATCH_WAIT][i as usize % 3];
            committed.push(commit_small(&mut s, 20, i, opts));
        }
        s.wait_durable(log.reserved_end()).unwrap();
        let d = log.stats().since(&before);
        assert!(d.get(Stat::RedoWrites) >= 1);
        assert_eq!(
            d.get(Stat::RedoWriteRequests),
            d.get(Stat::RedoWrites),
            "one request per write once a member is out of service"
        );
    }
    // A clean restart with the member's disk still failing: recovery reads the other
    // member, and the failing one stays out of service.
    {
        let (log, rec) = open_ok(&disk, &c);
        assert_recovered_exactly(&rec, &committed);
        assert_eq!(rec.report.member_used, 1 - bad_member);
        assert_ne!(member_state(&log, 0, bad_member), MemberState::InService);
        assert!(log.failure().is_none());
    }
    // The disk is fixed: the member is repaired and back in service.
    disk.clear_faults();
    {
        let (log, rec) = open_ok(&disk, &c);
        assert_recovered_exactly(&rec, &committed);
        assert_eq!(member_state(&log, 0, bad_member), MemberState::InService);
    }
    // A power loss after it all.
    for seed in 0..3 {
        let (_log, rec) = open_ok(&disk.crash(seed), &c);
        assert_recovered_exactly(&rec, &committed);
    }
}

#[test]
fn a_sync_failure_on_the_second_member_takes_only_it_out_of_service() {
    one_member_fails(fault(FaultOp::Sync, "redo01_2", 0, libc::EIO), 1);
}

#[test]
fn a_write_failure_on_the_second_member_takes_only_it_out_of_service() {
    one_member_fails(fault(FaultOp::Write, "redo01_2", 0, libc::EIO), 1);
}

#[test]
fn a_full_disk_under_the_first_member_leaves_the_log_to_the_second() {
    one_member_fails(fault(FaultOp::Write, "/db/redo01_1", 0, libc::ENOSPC), 0);
}

#[test]
fn recovery_notes_name_a_member_that_fell_behind() {
    for bad in [0u32, 1] {
        let disk = SimStorage::new();
        let c = mirrored_config();
        {
            let (log, _) = open_ok(&disk, &c);
            settle(&log);
            let mut s = log.session();
            commit_small(&mut s, 23, 0, WAIT);
            disk.inject(fault(FaultOp::Sync, &format!("redo01_{}", bad + 1), 0, libc::EIO));
            for i in 1..20 {
                commit_small(&mut s, 23, i, WAIT);
            }
            assert_eq!(member_state(&log, 0, bad), MemberState::WriteFailed);
        }
        disk.clear_faults();
        let (_log, rec) = open_ok(&disk.crash(0), &c);
        assert_eq!(rec.transactions.len(), 20);
        let notes = rec.report.member_notes.join("\n");
        assert!(
            notes.contains(&format!("member {}", bad + 1)),
            "member {} missed 19 commits; the notes should say so: {notes:?}",
            bad + 1
        );
    }
}

#[test]
fn a_checkpoint_at_the_end_of_the_log_recovers_when_the_first_member_fell_behind() {
    // The scan starts at the checkpoint, in the middle of a block, and finds no record
    // after it. The block holding that point must then be read from a member that has
    // it: the first member stopped taking writes before it. (The crash simulation once
    // found recovery taking it from the first member and panicking.)
    let disk = SimStorage::new();
    let c = mirrored_config();
    {
        let (log, _) = open_ok(&disk, &c);
        settle(&log);
        let mut s = log.session();
        // The first member's first sync fails: it never holds the block the log ends in.
        disk.inject(fault(FaultOp::Sync, "redo01_1", 0, libc::EIO));
        for i in 0..5 {
            commit_small(&mut s, 24, i, WAIT);
        }
        assert_eq!(member_state(&log, 0, 0), MemberState::WriteFailed);
        let (scn, lsn) = log.durable_commit();
        assert_ne!(lsn.0 % 4096, 0, "the checkpoint falls inside a block");
        log.checkpoint(scn, lsn).unwrap();
    }
    disk.clear_faults();
    let survivor = disk.crash(0);
    let (log, rec) = open_ok(&survivor, &c);
    assert!(rec.transactions.is_empty(), "everything is behind the checkpoint");
    // The log goes on from there: a commit after recovery is recovered in turn.
    let mut s = log.session();
    let after = commit_small(&mut s, 24, 5, WAIT);
    let (_log, rec) = open_ok(&survivor.crash(1), &c);
    assert_recovered_includes(&rec, &[after]);
}

#[test]
fn a_failed_member_gets_another_chance_when_its_group_is_reused() {
    let disk = SimStorage::new();
    let c = small_files(mirrored_config());
    let committed = on_settled_log(&disk, &c, "cycling the groups", |disk2, log| {
        let mut s = log.session();
        let mut out = Vec::new();
        out.push(commit_small(&mut s, 21, 0, WAIT));
        disk2.inject(fault(FaultOp::Sync, "redo01_2", 0, libc::EIO));
        out.push(commit_small(&mut s, 21, 1, WAIT));
        assert_eq!(member_state(log, 0, 1), MemberState::WriteFailed);
        disk2.clear_faults();
        // Through groups 2 and 3 and back to group 1 (about 600 KB).
        let mut i = 2;
        while log.current_seq().0 < LogSeq(4) {
            out.push(try_commit(&mut s, vec![payload(21, i, 3000)], WAIT).unwrap());
            let (scn, lsn) = log.durable_commit();
            log.checkpoint(scn, lsn).unwrap();
            i += 1;
        }
        assert_eq!(member_state(log, 0, 1), MemberState::InService, "back in service at its group's reuse");
        for k in 0..20 {
            out.push(try_commit(&mut s, vec![payload(21, i + k, 3000)], WAIT).unwrap());
        }
        let ckpt = log.last_checkpoint().2;
        out.retain(|c| c.receipt.scn > ckpt);
        out
    });
    let (_log, rec) = open_ok(&disk.crash(1), &c);
    assert_recovered_exactly(&rec, &committed);
    assert!(rec.report.member_notes.is_empty(), "{:?}", rec.report.member_notes);
}

#[test]
fn failures_on_different_members_of_different_groups_still_recover() {
    let disk = SimStorage::new();
    let c = small_files(mirrored_config());
    let committed = on_settled_log(&disk, &c, "committing", |disk2, log| {
        let mut s = log.session();
        let mut out = Vec::new();
        let mut i = 0;
        let mut commit = |s: &mut LogSession, out: &mut Vec<Committed>| {
            out.push(try_commit(s, vec![payload(22, i, 3000)], WAIT).unwrap());
            i += 1;
        };
        for _ in 0..10 {
            commit(&mut s, &mut out);
        }
        // Member 1 fails in group 1...
        disk2.inject(fault(FaultOp::Sync, "/db/redo01_1", 0, libc::EIO));
        while log.current_seq().0 < LogSeq(2) {
            commit(&mut s, &mut out);
        }
        for _ in 0..10 {
            commit(&mut s, &mut out);
        }
        // ...member 2 fails in group 2...
        disk2.inject(fault(FaultOp::Sync, "/db2/redo02_2", 0, libc::EIO));
        while log.current_seq().0 < LogSeq(3) {
            commit(&mut s, &mut out);
        }
        // ...and both write group 3.
        for _ in 0..10 {
            commit(&mut s, &mut out);
        }
        assert_eq!(member_state(log, 0, 0), MemberState::WriteFailed);
        assert_eq!(member_state(log, 1, 1), MemberState::WriteFailed);
        assert!(log.failure().is_none());
        out
    });
    disk.clear_faults();
    let rec = match open_on(&disk, &c) {
        Ok((_log, rec)) => rec,
        Err(e) => panic!("every commit reached one member of its group, yet the open failed: {e}"),
    };
    assert_recovered_exactly(&rec, &committed);
}

// ---------------------------------------------------------------------------------------
// Failures at log switches

/// Commits WAIT on its own thread until stopped or refused; publishes its progress.
fn spawn_committer(
    log: Arc<RedoLog>,
    progress: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<(Vec<Committed>, Option<RedoError>)> {
    thread::spawn(move || {
        let mut s = log.session();
        let mut acked = Vec::new();
        let mut i = 0u64;
        while !stop.load(SeqCst) {
            match try_commit(&mut s, vec![payload(30, i, 2000)], WAIT) {
                Ok(c) => acked.push(c),
                Err(e) => return (acked, Some(e)),
            }
            i += 1;
            progress.store(i, SeqCst);
        }
        (acked, None)
    })
}

#[test]
fn a_failed_log_file_header_write_at_a_switch_fails_the_log() {
    let disk = SimStorage::new();
    let c = small_files(sim_config());
    let (log, _) = open_ok(&disk, &c);
    settle(&log);
    // Group 3 is opened (its header written) while group 2 fills.
    disk.inject(fault(FaultOp::Write, "redo03_1", 0, libc::EIO));
    let log = Arc::new(log);
    let committer = spawn_committer(log.clone(), Arc::default(), Arc::default());
    let (acked, err) =
        with_deadline(Duration::from_secs(10), "committing into group 3", move || committer.join().unwrap());
    match err {
        Some(RedoError::LogFailed(f)) => {
            assert_eq!(f.op, "header write");
            assert_eq!(f.path, member_file(&c, 2, 0));
        }
        other => panic!("expected LogFailed, got {other:?}"),
    }
    drop(Arc::try_unwrap(log).ok().expect("the log has no other owner"));
    let (_log, rec) = open_ok(&disk.crash(3), &c);
    assert_recovered_includes(&rec, &acked);
    // The refused commit may be there too: its own write could have been synced before
    // the header write in another file failed (it is in doubt, like any refused commit).
    assert!(rec.transactions.len() <= acked.len() + 1, "{}", rec.report);
}

#[test]
fn a_failed_header_write_on_one_of_two_members_does_not_stop_the_log() {
    let disk = SimStorage::new();
    let c = small_files(mirrored_config());
    let (log, _) = open_ok(&disk, &c);
    settle(&log);
    disk.inject(fault(FaultOp::Write, "redo03_2", 0, libc::EIO));
    let log = Arc::new(log);
    let mut s = log.session();
    let committed = with_deadline(Duration::from_secs(10), "committing into group 3", {
        let log = log.clone();
        move || {
            let mut out = Vec::new();
            let mut i = 0;
            while log.current_seq().0 < LogSeq(3) || i % 10 != 0 {
                out.push(try_commit(&mut s, vec![payload(31, i, 2000)], WAIT).unwrap());
                i += 1;
            }
            out
        }
    });
    assert_eq!(member_state(&log, 2, 1), MemberState::WriteFailed);
    assert_eq!(member_state(&log, 2, 0), MemberState::InService);
    assert!(log.failure().is_none());
    drop(Arc::try_unwrap(log).ok().expect("the log has no other owner"));
    let (_log, rec) = open_ok(&disk.crash(4), &c);
    assert_recovered_exactly(&rec, &committed);
}

#[test]
fn a_session_waiting_for_a_log_switch_gets_the_failure() {
    let disk = SimStorage::new();
    let c = small_files(sim_config());
    let (log, _) = open_ok(&disk, &c);
    settle(&log);
    let log = Arc::new(log);
    let progress = Arc::new(AtomicU64::new(0));
    let committer = spawn_committer(log.clone(), progress.clone(), Arc::default());
    // No checkpoint: the committer stalls when group 1 is needed again.
    assert!(wait_for_stall(&progress), "commits never stalled without a checkpoint");
    assert_eq!(log.current_seq().0, LogSeq(3));
    // Group 1's header write will fail when the checkpoint lets LGWR reopen it.
    disk.inject(fault(FaultOp::Write, "redo01_1", 0, libc::EIO));
    let (scn, lsn) = log.durable_commit();
    log.checkpoint(scn, lsn).unwrap();
    assert!(wait_until(Duration::from_secs(5), || log.failure().is_some()));
    let (_acked, err) =
        with_deadline(Duration::from_secs(5), "the waiting session", move || committer.join().unwrap());
    assert!(matches!(err, Some(RedoError::LogFailed(_))), "{err:?}");
}

#[test]
fn a_session_waiting_for_a_log_switch_gets_shutdown() {
    let disk = SimStorage::new();
    let c = small_files(sim_config());
    let (log, _) = open_ok(&disk, &c);
    let log = Arc::new(log);
    let progress = Arc::new(AtomicU64::new(0));
    let committer = spawn_committer(log.clone(), progress.clone(), Arc::default());
    assert!(wait_for_stall(&progress), "commits never stalled without a checkpoint");
    log.shutdown().unwrap();
    let (_acked, err) =
        with_deadline(Duration::from_secs(5), "the waiting session", move || committer.join().unwrap());
    assert!(matches!(err, Some(RedoError::Shutdown)), "{err:?}");
}

// ---------------------------------------------------------------------------------------
// Creation, checkpoints and restarts under faults

#[test]
fn creating_a_database_on_a_full_disk_is_a_clear_io_error() {
    let disk = SimStorage::new();
    let c = sim_config();
    disk.inject(fault(FaultOp::Write, "", 0, libc::ENOSPC));
    let e = open_on(&disk, &c).err().expect("created a database on a full disk");
    match &e {
        RedoError::Io { op, path, source } => {
            // The control file is created first, under its creating name.
            assert_eq!(*op, "create control file");
            assert_eq!(path, Path::new("/db/control.ctl.creating"));
            assert_eq!(source.raw_os_error(), Some(libc::ENOSPC));
        }
        e => panic!("expected Io, got {e}"),
    }
    let text = e.to_string();
    assert!(text.contains("/db/control.ctl.creating") && text.contains("No space left on device"), "{text}");
    // Nothing half made is left to be mistaken for a database.
    assert!(disk.paths().is_empty(), "{:?}", disk.paths());
    disk.clear_faults();
    open_ok(&disk, &c);
}

#[test]
fn a_database_whose_creation_failed_half_way_leaves_nothing_behind() {
    let disk = SimStorage::new();
    let c = sim_config();
    // The second log file does not fit.
    disk.inject(fault(FaultOp::Write, "redo02", 0, libc::ENOSPC));
    let e = open_on(&disk, &c).err().expect("created a database on a full disk");
    assert!(matches!(e, RedoError::Io { .. }), "{e}");
    assert!(e.to_string().contains("redo02_1.log"), "{e}");
    assert!(disk.paths().is_empty(), "files left behind: {:?}", disk.paths());
    disk.clear_faults();
    let (log, recovered) = open_ok(&disk, &c);
    assert!(recovered.transactions.is_empty());
    let mut s = log.session();
    commit_small(&mut s, 41, 0, WAIT);
}

/// A process killed at any point of a database's creation (every file created, written,
/// synced, renamed, in turn) leaves a directory that the next open makes into a database,
/// never one it refuses (a control file of zeros, log files without a control file).
#[test]
fn a_creation_cut_short_by_a_crash_at_any_step_is_started_again_at_the_next_open() {
    for c in [sim_config(), mirrored_config()] {
        let mut steps = 0;
        loop {
            let disk = SimStorage::new();
            disk.die_after(steps);
            let completed = open_on(&disk, &c).map(drop).is_ok();
            let survivor = disk.crash(steps);
            let (log, recovered) = open_on(&survivor, &c).unwrap_or_else(|e| {
                panic!("killed after {steps} steps of creating {:?}, the next open failed: {e}", c.dir)
            });
            assert!(recovered.transactions.is_empty());
            let mut s = log.session();
            commit_small(&mut s, 42, steps, WAIT);
            drop(s);
            drop(log);
            assert!(
                !survivor.paths().iter().any(|p| p.to_string_lossy().ends_with(".creating")),
                "{:?}",
                survivor.paths()
            );
            if completed {
                break;
            }
            steps += 1;
        }
        assert!(steps >= 6, "the creation took {steps} steps: the kill points were not reached");
    }
}

#[test]
fn log_files_without_a_control_file_or_a_creation_marker_are_refused() {
    let disk = SimStorage::new();
    let c = sim_config();
    drop(open_ok(&disk, &c));
    redo::storage::Storage::remove_file(&disk, Path::new("/db/control.ctl")).unwrap();
    let e = open_on(&disk, &c).err().expect("a database without its control file was opened");
    assert!(e.to_string().contains("control file does not"), "{e}");
    assert!(disk.paths().iter().any(|p| p.ends_with("redo01_1.log")), "the log files were kept");
}

#[test]
fn a_failed_checkpoint_fails_the_log_and_leaves_the_previous_checkpoint_in_force() {
    let disk = SimStorage::new();
    let c = sim_config();
    let mut after = Vec::new();
    {
        let (log, _) = open_ok(&disk, &c);
        let mut s = log.session();
        let mut first: Vec<Committed> = (0..10).map(|i| commit_small(&mut s, 40, i, WAIT)).collect();
        let r = first.pop().unwrap().receipt;
        log.checkpoint(r.scn, r.lsn).unwrap();
        for i in 10..20 {
            after.push(commit_small(&mut s, 40, i, WAIT));
        }
        disk.inject(fault(FaultOp::Sync, "control", 0, libc::EIO));
        let r2 = after.last().unwrap().receipt;
        // The log cannot reuse a group without checkpoints: it latches as failed.
        match log.checkpoint(r2.scn, r2.lsn) {
            Err(RedoError::LogFailed(f)) => {
                assert_eq!(f.op, "control file sync");
                assert_eq!(f.path, Path::new("/db/control.ctl"));
            }
            other => panic!("expected LogFailed, got {other:?}"),
        }
        assert_eq!(log.last_checkpoint().2, r.scn, "the failed checkpoint is not in force");
        assert!(log.failure().is_some());
        assert!(is_log_failed(&s.commit(WAIT).unwrap_err()));
    }
    for seed in 0..3 {
        let (_log, rec) = open_ok(&disk.crash(seed), &c);
        assert_eq!(rec.report.checkpoint_scn, Scn(10));
        assert_recovered_exactly(&rec, &after);
    }
}

#[test]
fn commits_after_reopening_from_a_failed_sync_survive_a_later_crash() {
    let disk = SimStorage::new();
    let c = sim_config();
    let mut acked = Vec::new();
    {
        let (log, _) = open_ok(&disk, &c);
        settle(&log);
        let mut s = log.session();
        for i in 0..10 {
            acked.push(commit_small(&mut s, 50, i, WAIT));
        }
        // A commit of several blocks whose sync fails: the kernel drops its dirty pages
        // from the writeback but reads still return them.
        disk.inject(fault(FaultOp::Sync, "redo", 0, libc::EIO));
        let e = try_commit(&mut s, vec![payload(51, 0, 20_000)], WAIT).unwrap_err();
        assert!(is_log_failed(&e));
    }
    disk.clear_faults();
    {
        // The process restarts (no power loss): recovery reads what the page cache has.
        let (log, rec) = open_ok(&disk, &c);
        assert_recovered_includes(&rec, &acked);
        let mut s = log.session();
        for i in 10..20 {
            acked.push(commit_small(&mut s, 50, i, WAIT));
        }
    }
    // Then the power fails: every commit acknowledged after the restart must survive.
    for seed in 0..3 {
        let (_log, rec) = open_ok(&disk.crash(seed), &c);
        assert_recovered_includes(&rec, &acked);
    }
}

// ---------------------------------------------------------------------------------------
// 9. Corruption versus a torn tail, on the simulated disk

/// 4 MiB files: more than WRITE_MAX_BYTES of redo can follow damage in one file.
fn commit_lots(disk: &SimStorage, c: &LogConfig) -> Vec<Committed> {
    let (log, _) = open_ok(disk, c);
    let mut s = log.session();
    (0..200u64).map(|i| try_commit(&mut s, vec![payload(60, i, 8000)], WAIT).unwrap()).collect()
}

#[test]
fn a_flipped_bit_far_before_the_end_of_the_log_is_corruption() {
    let disk = SimStorage::new();
    let mut c = sim_config();
    c.log_file_size = 4 * MIB;
    let committed = commit_lots(&disk, &c);
    let (path, offset) =
        stream_file_bytes_before(&c, committed[4].receipt.lsn, COMMIT_RECORD + 8000)[10].clone();
    disk.flip_bit(&path, offset, 3);
    let survivor = disk.crash(0);
    let (lsn, path, detail) = expect_corruption(open_on(&survivor, &c).err().expect("opened a corrupt log"));
    assert_eq!(lsn, committed[3].receipt.lsn, "the damaged record's start");
    assert_eq!(path, member_file(&c, 0, 0));
    assert!(detail.contains("not a torn tail"), "{detail}");
}

#[test]
fn a_damaged_block_under_a_checkpoint_at_the_end_of_the_log_is_corruption_not_a_panic() {
    // The log ends at its checkpoint, inside a block that was durable, and that block is
    // damaged on the only member: recovery names it instead of panicking.
    let disk = SimStorage::new();
    let c = sim_config();
    {
        let (log, _) = open_ok(&disk, &c);
        let mut s = log.session();
        for i in 0..5 {
            commit_small(&mut s, 25, i, WAIT);
        }
        let (scn, lsn) = log.durable_commit();
        assert_ne!(lsn.0 % 4096, 0, "the checkpoint falls inside a block");
        log.checkpoint(scn, lsn).unwrap();
    }
    let path = member_file(&c, 0, 0);
    disk.flip_bit(&path, 4096 + 2, 1);
    let survivor = disk.crash(0);
    let (_, named, detail) = expect_corruption(open_on(&survivor, &c).err().expect("opened a damaged log"));
    assert_eq!(named, path);
    assert!(detail.contains("no member holds the block the redo ends in"), "{detail}");
}

#[test]
fn a_flipped_bit_in_the_last_record_is_a_torn_tail() {
    let disk = SimStorage::new();
    let mut c = sim_config();
    c.log_file_size = 4 * MIB;
    let mut committed = commit_lots(&disk, &c);
    let last = committed.pop().unwrap().receipt;
    let (path, offset) = stream_file_bytes_before(&c, last.lsn, COMMIT_RECORD)[30].clone();
    disk.flip_bit(&path, offset, 0);
    let survivor = disk.crash(0);
    let (log, rec) = open_ok(&survivor, &c);
    assert_recovered_exactly(&rec, &committed);
    assert!(matches!(rec.report.stop, StopReason::TornRecord { .. }), "{:?}", rec.report.stop);
    assert!(rec.report.stop.to_string().contains("torn"), "{}", rec.report.stop);
    // The log continues after the damage, and a later recovery sees one clean log.
    let mut s = log.session();
    for i in 0..150 {
        committed.push(try_commit(&mut s, vec![payload(61, i, 8000)], WAIT).unwrap());
    }
    drop(s);
    drop(log);
    let (_log, rec) = open_ok(&survivor.crash(1), &c);
    assert_recovered_exactly(&rec, &committed);
}

// ---------------------------------------------------------------------------------------
// Records that span two log files (found by the deterministic simulation of the database)

/// Driven scheduling (no LGWR: `run_writer` writes), 2 groups of 64 KiB files, so that a
/// unit soon spans the end of a file.
fn driven_small(c: LogConfig) -> LogConfig {
    let mut c = c;
    c.scheduling = Scheduling::Driven;
    c.log_groups = 2;
    c.log_file_size = 64 * KIB;
    c.log_buffer = 64 * KIB;
    c
}

/// NOWAIT commits of 3 KiB until the last one's unit runs from the file being filled into
/// the next; returns them. Nothing is written yet past what the log wrote on its own.
fn commit_until_a_unit_straddles(log: &RedoLog, s: &mut LogSession, tag: u64) -> Vec<Committed> {
    // Each file holds this many bytes of the stream (the file header is not in it).
    let data = log.config().log_file_size - 4096;
    let mut out = Vec::new();
    for i in 0..100 {
        let before = log.reserved_end();
        out.push(try_commit(s, vec![payload(tag, i, 3000)], NOWAIT).unwrap());
        let after = log.reserved_end();
        if before.0 / data != after.0 / data && !after.0.is_multiple_of(data) {
            return out;
        }
    }
    panic!("no unit spanned two files");
}

#[test]
fn a_power_cut_in_the_first_write_of_a_log_file_is_a_torn_tail_when_the_last_record_straddles_into_it() {
    // The last record runs from one log file into the next; its part in the first file is
    // written and synced, and the power fails during the write of its part in the next
    // file, leaving any of that write's sectors. That is a torn tail, not corruption:
    // recovery ends before the record, whatever survived of the write.
    let c = driven_small(sim_config());
    for crash_seed in 0..40 {
        let disk = SimStorage::new();
        let (log, _) = open_ok(&disk, &c);
        let mut s = log.session();
        let mut committed = commit_until_a_unit_straddles(&log, &mut s, 80);
        let straddling = committed.pop().expect("a straddling commit");
        // The first file's part, synced.
        assert!(log.run_writer().unwrap());
        assert!(log.durable_lsn() < straddling.receipt.lsn);
        // The next file's part: the disk dies in that write.
        disk.die_after(0);
        assert!(log.run_writer().is_err());
        let survivor = disk.crash(crash_seed);
        drop(s);
        drop(log);
        let (_log, rec) = open_on(&survivor, &c)
            .unwrap_or_else(|e| panic!("crash seed {crash_seed}: a torn write taken for corruption: {e}"));
        // The write may also have survived whole: then the record is there.
        if rec.transactions.len() > committed.len() {
            committed.push(straddling);
        }
        assert_recovered_exactly(&rec, &committed);
    }
}

/// Found by the `redo_log` fuzz target: after the recovery above, the log went on in the
/// first file, and the blocks the torn write had left at the start of the next file were
/// still there; the next open, even after a clean shutdown, took them for valid redo
/// after the end ("the damage is inside the log") and refused to open.
#[test]
fn what_a_torn_write_left_in_the_next_log_file_is_never_taken_for_redo_once_the_log_goes_on() {
    let c = driven_small(sim_config());
    let mut left_remains = 0;
    // The disk dies in the write of the next file's part, in its sync, or after them.
    for (ops, crash_seed) in (0..3).flat_map(|ops| (0..20).map(move |seed| (ops, seed))) {
        let disk = SimStorage::new();
        let (log, _) = open_ok(&disk, &c);
        let mut s = log.session();
        // 3 KiB commits until the next would reach the end of the file, then one that runs
        // about 2 KiB into the next file (several sectors of its first block).
        let data = c.log_file_size - 4096;
        let mut committed = Vec::new();
        while data - log.reserved_end().0 % data > 3200 {
            committed
                .push(try_commit(&mut s, vec![payload(83, committed.len() as u64, 3000)], NOWAIT).unwrap());
        }
        let rest = (data - log.reserved_end().0 % data) as usize;
        let straddling = try_commit(&mut s, vec![payload(83, 999, rest + 2000)], NOWAIT).unwrap();
        assert_eq!(log.reserved_end().0 / data, 1, "the last commit runs into the next file");
        assert!(log.run_writer().unwrap());
        disk.die_after(ops);
        while log.run_writer().unwrap_or(false) {}
        let survivor = disk.crash(crash_seed);
        drop(s);
        drop(log);
        let (log, rec) = open_ok(&survivor, &c);
        if rec.transactions.len() > committed.len() {
            committed.push(straddling);
        } else {
            left_remains += 1;
        }
        // A small commit, made durable: the log now ends inside the first file again.
        let mut s = log.session();
        committed.push(try_commit(&mut s, vec![payload(84, crash_seed, 100)], NOWAIT).unwrap());
        while log.run_writer().unwrap() {}
        assert!(log.durable_lsn() >= committed.last().unwrap().receipt.lsn);
        drop(s);
        drop(log);
        let (_log, rec) = open_on(&survivor, &c).unwrap_or_else(|e| {
            panic!("death after {ops}, crash seed {crash_seed}: remains taken for redo: {e}")
        });
        assert_recovered_exactly(&rec, &committed);
    }
    assert!(left_remains > 0, "some crash left the straddling record torn");
}

#[test]
fn a_record_whose_parts_are_durable_on_different_members_is_recovered() {
    // Two members. The mirror fails during one log file (taken out of service, so the file
    // is complete only on the first member), gets another chance when the next file is
    // opened, and then the first member fails in the next file: a WAIT commit whose unit
    // spans the two files is durable, its first part on one member and its second on the
    // other. Recovery must put it together, not call it corruption.
    let c = driven_small(mirrored_config());
    let disk = SimStorage::new();
    let (log, _) = open_ok(&disk, &c);
    let mut s = log.session();
    // The mirror's first log file fails its syncs from now on.
    disk.inject(fault(FaultOp::Sync, "/db2/redo01_2", 0, libc::EIO));
    let mut committed = commit_until_a_unit_straddles(&log, &mut s, 81);
    let straddling = committed.pop().expect("a straddling commit");
    // Writes the first file's part: the mirror is taken out of service.
    assert!(log.run_writer().unwrap());
    assert_eq!(log.members().iter().filter(|m| m.state == MemberState::WriteFailed).count(), 1);
    // The first member's second file fails; the mirror's takes the write.
    disk.clear_faults();
    disk.inject(fault(FaultOp::Sync, "/db/redo02_1", 0, libc::EIO));
    log.wait_durable(straddling.receipt.lsn).expect("the mirror made the second part durable");
    committed.push(straddling);
    let survivor = disk.crash(0);
    drop(s);
    drop(log);
    let (_log, rec) =
        open_on(&survivor, &c).unwrap_or_else(|e| panic!("a durable commit taken for corruption: {e}"));
    assert_recovered_exactly(&rec, &committed);
}

// ---------------------------------------------------------------------------------------
// Direct I/O alignment

#[test]
fn direct_io_writes_are_block_aligned() {
    let disk = SimStorage::new();
    let mut c = small_files(sim_config());
    c.sync_method = SyncMethod::DirectDsync;
    let committed = {
        let (log, _) = open_ok(&disk, &c);
        let mut s = log.session();
        let mut out = Vec::new();
        // Odd sizes, so writes end anywhere in a block; past a log switch.
        for i in 0..300u64 {
            let opts = [WAIT, NOWAIT, BATCH_WAIT][i as usize % 3];
            out.push(try_commit(&mut s, vec![payload(70, i, 1 + (i as usize * 131) % 3000)], opts).unwrap());
            if i % 50 == 49 {
                let (scn, lsn) = log.durable_commit();
                log.checkpoint(scn, lsn).unwrap();
            }
        }
        assert!(log.failure().is_none(), "{:?}", log.failure());
        assert!(log.stats().get(Stat::RedoLogSwitches) >= 1);
        let ckpt = log.last_checkpoint().2;
        out.retain(|c| c.receipt.scn > ckpt);
        out
    };
    let (_log, rec) = open_ok(&disk.crash(0), &c);
    assert_recovered_exactly(&rec, &committed);
}
