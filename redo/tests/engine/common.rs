//! Helpers shared by the integration tests (`behaviour.rs` on real files, `faults.rs` on
//! the simulated disk): commit options, test configurations, deterministic payloads,
//! committing, waiting with deadlines, and locating redo bytes in the log files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use redo::format::{Geometry, BLOCK_BYTES, BLOCK_HEADER_BYTES};
use redo::storage::log_file_path;
use redo::*;

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;

pub const WAIT: CommitOptions =
    CommitOptions { wait: Some(CommitWait::Wait), logging: Some(CommitLogging::Immediate) };
pub const NOWAIT: CommitOptions =
    CommitOptions { wait: Some(CommitWait::NoWait), logging: Some(CommitLogging::Immediate) };
pub const BATCH_NOWAIT: CommitOptions =
    CommitOptions { wait: Some(CommitWait::NoWait), logging: Some(CommitLogging::Batch) };
pub const BATCH_WAIT: CommitOptions =
    CommitOptions { wait: Some(CommitWait::Wait), logging: Some(CommitLogging::Batch) };

/// Bytes of a commit record (header and payload).
pub const COMMIT_RECORD: usize = 36;

// ---------------------------------------------------------------------------------------
// Configurations

/// One member in `dir`, 3 groups of 1 MiB, a 256 KiB log buffer, `fdatasync`.
pub fn config(dir: &Path) -> LogConfig {
    let mut c = LogConfig::new(dir);
    c.log_file_size = MIB;
    c.log_buffer = 256 * KIB;
    c.sync_method = SyncMethod::Fdatasync;
    c
}

/// 3 groups of 256 KiB and a 64 KiB log buffer: switches come quickly.
pub fn small_files(mut c: LogConfig) -> LogConfig {
    c.log_file_size = 256 * KIB;
    c.log_buffer = 64 * KIB;
    c
}

// ---------------------------------------------------------------------------------------
// Committing

/// Deterministic change payload: `tag` and `i` first, then a pattern.
pub fn payload(tag: u64, i: u64, len: usize) -> Vec<u8> {
    let len = len.max(16);
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&tag.to_le_bytes());
    v.extend_from_slice(&i.to_le_bytes());
    let mut x = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i;
    while v.len() < len {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        v.push((x >> 56) as u8);
    }
    v
}

/// A commit as the client saw it.
#[derive(Clone, Debug)]
pub struct Committed {
    pub receipt: CommitReceipt,
    pub changes: Vec<Vec<u8>>,
}

/// Logs `changes` and commits them; returns the first error.
pub fn try_commit(s: &mut LogSession, changes: Vec<Vec<u8>>, opts: CommitOptions) -> Result<Committed> {
    for c in &changes {
        s.log_change(c)?;
    }
    let receipt = s.commit(opts)?;
    Ok(Committed { receipt, changes })
}

/// Logs `changes` and commits them; panics on an error.
pub fn commit_txn(s: &mut LogSession, changes: Vec<Vec<u8>>, opts: CommitOptions) -> Committed {
    for c in &changes {
        s.log_change(c).expect("log_change");
    }
    let receipt = s.commit(opts).expect("commit");
    Committed { receipt, changes }
}

/// One small transaction with one change.
pub fn commit_small(s: &mut LogSession, tag: u64, i: u64, opts: CommitOptions) -> Committed {
    commit_txn(s, vec![payload(tag, i, 100)], opts)
}

// ---------------------------------------------------------------------------------------
// Waiting

/// Polls `cond` until it holds (true) or `limit` has passed (false).
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// Runs `f` on its own thread and waits at most `limit` for it, so that an engine hang
/// fails the test instead of hanging the suite (the stuck thread is left behind).
pub fn with_deadline<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not finish within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

/// Waits (briefly) for LGWR to finish opening the log files it prepares at startup: an
/// activation may write whatever is in the buffer, which would blur checks that a
/// BATCH NOWAIT commit stays buffered, and a fault injected before it could hit the
/// opening instead of the operation the test means.
pub fn settle(log: &RedoLog) {
    wait_until(Duration::from_secs(2), || {
        let (filling, activated) = log.current_seq();
        activated > filling
    });
    thread::sleep(Duration::from_millis(20));
}

/// Waits (at most 10 s) until `progress` has not moved for 300 ms.
pub fn wait_for_stall(progress: &AtomicU64) -> bool {
    let mut last = (u64::MAX, Instant::now());
    wait_until(Duration::from_secs(10), || {
        let p = progress.load(SeqCst);
        if p != last.0 {
            last = (p, Instant::now());
        }
        last.1.elapsed() > Duration::from_millis(300)
    })
}

// ---------------------------------------------------------------------------------------
// Log files and errors

pub fn member_file(c: &LogConfig, group: u32, member: u32) -> PathBuf {
    log_file_path(c.member_dir(member), group, member)
}

/// (group, file offset) of each of the `n` redo stream bytes that end at `end`, in stream
/// order, skipping block headers.
pub fn stream_bytes_before(c: &LogConfig, end: Lsn, n: usize) -> Vec<(u32, u64)> {
    let g = Geometry::new(c.log_file_size, c.log_groups);
    let mut out = Vec::with_capacity(n);
    let mut lsn = end.0;
    while out.len() < n {
        lsn -= 1;
        if lsn % BLOCK_BYTES < BLOCK_HEADER_BYTES {
            continue;
        }
        out.push((g.group_of(g.seq_of(Lsn(lsn))), g.file_offset(Lsn(lsn))));
    }
    out.reverse();
    out
}

/// The (lsn, path, detail) of a [`RedoError::Corruption`]; panics on any other error.
pub fn expect_corruption(e: RedoError) -> (Lsn, PathBuf, String) {
    match e {
        RedoError::Corruption { lsn, path, detail } => (lsn, path, detail),
        e => panic!("expected Corruption, got {e}"),
    }
}

/// Runs a future to its end on this thread, sleeping until its waker is called: a future
/// whose waker is never called hangs here (so run it under [`with_deadline`]).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park();
    }
}
