//! The embedded database: [`Database::open`] recovers the tables from the redo log, and
//! [`Session`]s change them in transactions committed in any commit write mode.
//!
//! # A transaction's path
//! 1. A statement (insert, update, delete) locks the row it changes (waiting for another
//!    transaction that holds it: `enq: TX - row lock contention`), reads the row as the
//!    transaction sees it (its own changes over the committed state), validates, logs the
//!    change to the session's private redo and records it in the transaction's overlay.
//!    A statement that fails is undone alone: the private redo, the overlay and the
//!    change list go back to where they were when it started.
//! 2. Commit hands the private redo to the engine. As soon as the commit record is in the
//!    log buffer (`LogSession::commit_then`), the session applies its changes to the
//!    committed state and releases its row locks (early lock release), then waits for
//!    durability if its mode says WAIT. Applies are not ordered by SCN (the commits in
//!    flight hold their locks, so they never conflict; see `state`).
//! 3. Rollback drops the private redo and the overlay and releases the locks; nothing is
//!    written.
//!
//! DDL (CREATE TABLE, DROP TABLE, TRUNCATE) commits the open transaction first and runs
//! as a transaction of its own, as in Oracle, holding the table exclusively.
//!
//! Checkpoints: a background thread writes an image of the committed state (see the
//! `checkpoint` module) when the log asks for one, while the log needs one, and at an
//! interval; recovery is the newest whole image plus the redo after it. A failed image
//! is retried with a growing delay, and counted and shown (`checkpointer`).
//!
//! Interrupts: a session's cancel flag and `statement_timeout` deadline are its redo
//! session's `redo::Interrupt`, set at each user call (and each statement of a call):
//! lock waits, row loops and a commit's wait for its log file end at them with 57014.
//!
//! One process at a time: `open` takes an exclusive advisory lock (flock) on
//! `<dir>/redodb.lock` and writes its pid there; a second open, from this process or
//! another, fails with [`DbError::DirectoryInUse`]. The lock goes when the last user of
//! the log lets go (the database, its sessions and threads), or when the process dies,
//! kill -9 included: the kernel releases it, so a crash never leaves a stale lock.
//!
//! Automatic workload repository snapshots: `open` starts the snapshotter of `awr` when
//! `DbConfig` asks for one (every 15 minutes by default); dropping the database stops it.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redo::clock::Stamp;
use redo::storage::{DirLock, DirLockError, FileStorage, Storage};
use redo::{
    CommitOptions, CommitReceipt, LogConfig, LogSession, Lsn, Recovered, RecoveryReport, RedoLog,
    RedoSavepoint, Scn, TxnId,
};

use crate::call_clock::{CallClock, Work, WorkTime};
use crate::change::Change;
use crate::sql::cache::StatementCache;
use crate::sql::exec::Prepared;

/// Statements the shared pool keeps.
const STATEMENT_CACHE_ENTRIES: usize = 1024;
/// Row loops look at the session's cancel flag once every this many rows (a power of
/// two): often enough to stop within a millisecond or so, rarely enough to cost nothing.
pub(crate) const CANCEL_CHECK_ROWS: u32 = 256;

use crate::checkpoint::{self, ImageInfo};
use crate::checkpointer::{CheckpointHealth, FailureLog, RetryPolicy};
use crate::error::{DbError, DbResult, Termination};
use crate::foreign_keys::RowChange;
use crate::locks::{HeldLocks, LockManager, OnBusy, OnConflict, RowLock};
use crate::schema::{Key, Row, TableSchema};
use crate::sessions::{CancelHandle, ClientInfo, DbEvent, SessionEntry, SessionRegistry};
use crate::state::{DbState, KeyShards, LiveState, Shard, ShardSet};
use crate::value::Value;

/// The `enq: TX - row lock contention` wait of a lock request that began at `started`
/// (None: not timed): its time if it slept, also when it then failed (cancelled, or a
/// deadlock found on a later look: the wait happened, and lies inside the call). An
/// untimed wait is counted with no time.
fn lock_waited(slept: bool, started: Option<Stamp>) -> Option<Duration> {
    slept.then(|| started.map_or(Duration::ZERO, Stamp::elapsed))
}

/// Configuration of a database: the redo log's (its directory is set by `open`), the
/// checkpoint interval and the automatic workload repository snapshots.
#[derive(Clone, Debug)]
pub struct DbConfig {
    pub log: LogConfig,
    /// A checkpoint image is written at least this often (and whenever the log asks for
    /// one to reuse a group); 0 writes them only when the log asks.
    pub checkpoint_interval_ms: u64,
    /// An automatic snapshot (`<dir>/awr/`) is taken when the database opens and then this
    /// often (Oracle's default, 15); 0 turns them off.
    pub snapshot_interval_minutes: u64,
    /// After each automatic snapshot, those older than this are removed (Oracle's
    /// default, 8); 0 keeps them all.
    pub snapshot_retention_days: u64,
    /// A finer interval than whole minutes, for tests and short experiments: when set, it
    /// replaces `snapshot_interval_minutes` (zero turns snapshots off).
    pub snapshot_interval_override: Option<Duration>,
    /// The delays between failed checkpoint attempts (100 ms doubling up to 5 s by
    /// default; see `checkpointer`).
    pub checkpoint_retry: RetryPolicy,
    /// The system's `statement_timeout` in milliseconds (0: none), which sessions follow
    /// unless they set their own.
    pub statement_timeout_ms: u64,
}

impl Default for DbConfig {
    fn default() -> DbConfig {
        DbConfig {
            log: LogConfig::new("."),
            checkpoint_interval_ms: 60_000,
            snapshot_interval_minutes: crate::awr::DEFAULT_INTERVAL.as_secs() / 60,
            snapshot_retention_days: crate::awr::DEFAULT_RETENTION.as_secs() / 86_400,
            snapshot_interval_override: None,
            checkpoint_retry: RetryPolicy::default(),
            statement_timeout_ms: 0,
        }
    }
}

impl DbConfig {
    /// The automatic snapshots this configuration asks for.
    pub fn snapshot_settings(&self) -> crate::awr::AwrSettings {
        let minutes = Duration::from_secs(self.snapshot_interval_minutes.saturating_mul(60));
        crate::awr::AwrSettings {
            interval: self.snapshot_interval_override.unwrap_or(minutes),
            retention: Duration::from_secs(self.snapshot_retention_days.saturating_mul(86_400)),
        }
    }
}

/// The lock file in a database directory (see the module's doc).
pub use redo::storage::LOCK_FILE;

/// Takes the exclusive lock on the database directory (`<dir>/redodb.lock` on the local
/// file system, holding this process's pid), for as long as the guard lives.
fn lock_directory(storage: &dyn Storage, dir: &Path) -> DbResult<DirLock> {
    storage.lock_dir(dir).map_err(|e| match e {
        DirLockError::Held { holder_pid } => DbError::DirectoryInUse { dir: dir.to_path_buf(), holder_pid },
        DirLockError::Io(e) => DbError::DirectoryLock { dir: dir.to_path_buf(), source: Arc::new(e) },
    })
}

pub(crate) struct DbShared {
    pub(crate) dir: PathBuf,
    /// Where every durable file of the database lives (the log has its own handle).
    pub(crate) storage: Arc<dyn Storage>,
    log: RedoLog,
    /// Images written, oldest first (the last two are kept).
    images: Mutex<Vec<ImageInfo>>,
    stopping: AtomicBool,
    /// The committed state, in shards by key (see `state`): a snapshot (for scans and
    /// checkpoint images) clones the shards' persistent maps (so a commit copies only the
    /// paths it changes, and only while a snapshot shares them); point reads read under
    /// one shard's lock (see `read_key`).
    state: LiveState,
    /// Bumped whenever a table is created or dropped (a new schema `Arc`): a compiled plan
    /// made at the current generation is still valid without a look at the state.
    pub(crate) schema_generation: AtomicU64,

    pub(crate) locks: LockManager,
    next_txn: std::sync::atomic::AtomicU64,
    /// System-level dynamic parameters of the database layer (see `params`).
    pub(crate) checkpoint_interval_ms: std::sync::atomic::AtomicU64,
    pub(crate) call_commit_optimization: AtomicBool,
    /// The system's `statement_timeout` in milliseconds (0: none).
    pub(crate) statement_timeout_ms: AtomicU64,
    /// Checkpoint attempts, failures and their retry delay (`v$checkpoint`).
    pub(crate) checkpoints: CheckpointHealth,
    /// The shared pool: parsed statements by text.
    pub(crate) statements: StatementCache<Prepared>,
    /// Held while a workload repository snapshot is sampled and written, so two (the
    /// automatic one and an `EXEC snapshot`) never interleave their statements' activity.
    pub(crate) snapshot_lock: Mutex<()>,
    pub(crate) sql_counters: SqlCounters,
    /// The open sessions (`v$session`) and the event totals of those closed.
    pub(crate) sessions: SessionRegistry,
    /// `rows fetched` and `fetch calls` of each open session, and of those closed.
    pub(crate) fetches: FetchRegistry,
    /// The next row id of each table without a primary key that has had an insert since
    /// the open: the first insert starts it above the highest committed one (every row id
    /// given out since then, committed or not, came from here, so none is given twice).
    /// (Here, away from the fields every statement reads and writes.)
    pub(crate) rowids: Mutex<std::collections::HashMap<String, i64>>,
    /// The sequences' values in memory and each session's last ones (`sequences`).
    pub(crate) sequences: crate::sequences::Sequences,
    /// Each table's CHECK constraints compiled, for the schema they were compiled from
    /// (held, so that its address names it while cached).
    pub(crate) compiled_checks: Mutex<std::collections::HashMap<String, CompiledChecks>>,
    /// Whether any table has a foreign key (see `foreign_keys`), and every foreign key by
    /// the table it references, made from the schemas of one generation.
    /// Whether the database has schemas other than `public` alone (or lacks public):
    /// while it has not, an unqualified name in a path naming public is public's, with
    /// no lookup (`namespaces`). Kept with `any_foreign_keys`, after each DDL's apply.
    pub(crate) has_schemas: AtomicBool,
    pub(crate) any_foreign_keys: AtomicBool,
    pub(crate) reference_graph: Mutex<crate::foreign_keys::ReferenceGraph>,
    /// Why the instance stopped serving, once it has (fail-stop, see `termination`).
    termination: std::sync::OnceLock<Termination>,
    /// The directory lock (`redodb.lock`), held while anything can still write the log:
    /// declared last, so it is released after the log has been dropped.
    _directory_lock: DirLock,
}

/// What a session has handed its caller: `rows fetched` (rows returned by queries) and
/// `fetch calls` (calls that returned rows: a statement's whole result, or one cursor
/// fetch; a wire portal Execute with a row limit is one cursor fetch).
#[derive(Default)]
pub(crate) struct FetchCounters {
    rows: std::sync::atomic::AtomicU64,
    calls: std::sync::atomic::AtomicU64,
}

impl FetchCounters {
    /// One fetch call that returned `rows` rows (none is still a call: the client asked).
    pub(crate) fn record(&self, rows: usize) {
        self.rows.fetch_add(rows as u64, Relaxed);
        self.calls.fetch_add(1, Relaxed);
    }

    /// (rows fetched, fetch calls).
    pub(crate) fn get(&self) -> (u64, u64) {
        (self.rows.load(Relaxed), self.calls.load(Relaxed))
    }
}

/// The fetch counters of the open sessions by SID, and the totals of those closed (so the
/// system's figures never go backwards).
#[derive(Default)]
pub(crate) struct FetchRegistry {
    live: Mutex<std::collections::BTreeMap<u64, Arc<FetchCounters>>>,
    retired: FetchCounters,
}

impl FetchRegistry {
    fn open(&self, sid: u64) -> Arc<FetchCounters> {
        let counters = Arc::new(FetchCounters::default());
        self.live.lock().expect("fetch registry poisoned").insert(sid, counters.clone());
        counters
    }

    fn close(&self, sid: u64) {
        if let Some(c) = self.live.lock().expect("fetch registry poisoned").remove(&sid) {
            let (rows, calls) = c.get();
            self.retired.rows.fetch_add(rows, Relaxed);
            self.retired.calls.fetch_add(calls, Relaxed);
        }
    }

    /// Session `sid`'s (rows fetched, fetch calls); zeros for a session gone.
    pub(crate) fn of(&self, sid: u64) -> (u64, u64) {
        self.live.lock().expect("fetch registry poisoned").get(&sid).map_or((0, 0), |c| c.get())
    }

    /// The system's (rows fetched, fetch calls): closed sessions and open ones.
    pub(crate) fn totals(&self) -> (u64, u64) {
        let live = self.live.lock().expect("fetch registry poisoned");
        let (mut rows, mut calls) = self.retired.get();
        for c in live.values() {
            let (r, n) = c.get();
            rows += r;
            calls += n;
        }
        (rows, calls)
    }
}

/// Counters of the SQL layer (the statement cache keeps its own).
#[derive(Default)]
pub(crate) struct SqlCounters {
    /// `enq: TX - row lock contention`: waits and their total time.
    pub row_lock_waits: std::sync::atomic::AtomicU64,
    pub row_lock_wait_us: std::sync::atomic::AtomicU64,
    /// The checkpointer's CPU and working time (background, like the log writer's).
    pub checkpoint_cpu_us: std::sync::atomic::AtomicU64,
    pub checkpoint_elapsed_us: std::sync::atomic::AtomicU64,
    /// `physical writes` and `physical write bytes`: the data files written, which are the
    /// checkpoint images, in blocks of `checkpoint::DATA_BLOCK_BYTES` (see there).
    pub physical_writes: std::sync::atomic::AtomicU64,
    pub physical_write_bytes: std::sync::atomic::AtomicU64,
}

impl SqlCounters {
    /// Counts a row lock wait, with its time if `timed` (`timed_statistics`).
    pub(crate) fn record_row_lock_wait(&self, waited: Option<Duration>, timed: bool) {
        if let Some(d) = waited {
            self.row_lock_waits.fetch_add(1, SeqCst);
            if timed {
                self.row_lock_wait_us.fetch_add(d.as_micros() as u64, SeqCst);
            }
        }
    }
}

/// SQL statistics with Oracle's names: `parse count (total)`, `parse count (hard)`,
/// `session cursor cache hits` (statement cache hits), `execute count`, and the commits
/// the call-level optimisation turned into NOWAIT.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SqlStats {
    pub parse_count_total: u64,
    pub parse_count_hard: u64,
    pub cache_hits: u64,
    pub cached_statements: u64,
    pub execute_count: u64,
    pub commits_deferred_by_call: u64,
    /// `enq: TX - row lock contention` waits and their total time in microseconds.
    pub row_lock_waits: u64,
    pub row_lock_wait_us: u64,
    /// `rows fetched` and `fetch calls` (see `FetchCounters`).
    pub rows_fetched: u64,
    pub fetch_calls: u64,
}

impl DbShared {
    pub(crate) fn log(&self) -> &RedoLog {
        &self.log
    }

    /// The system's time model: user calls, DB time, DB CPU (of every session, open or
    /// closed).
    pub(crate) fn call_times(&self) -> CallTimes {
        let [user_calls, db_time_us, db_cpu_us] = self.sessions.call_totals();
        CallTimes { user_calls, db_time_us, db_cpu_us }
    }

    pub(crate) fn sql_stats_now(&self) -> SqlStats {
        let c = self.statements.stats();
        let n = &self.sql_counters;
        let sessions = self.sessions.sql_totals();
        let (rows_fetched, fetch_calls) = self.fetches.totals();
        SqlStats {
            parse_count_total: c.parse_count_total,
            parse_count_hard: c.parse_count_hard,
            cache_hits: c.cache_hits,
            cached_statements: c.entries,
            execute_count: sessions[crate::sessions::SqlStat::Execute as usize],
            commits_deferred_by_call: sessions[crate::sessions::SqlStat::CommitsDeferred as usize],
            row_lock_waits: n.row_lock_waits.load(SeqCst),
            row_lock_wait_us: n.row_lock_wait_us.load(SeqCst),
            rows_fetched,
            fetch_calls,
        }
    }

    /// The rows of `v$log`: one per group, with the sequence it holds and its status
    /// (CURRENT: being filled; ACTIVE: still needed by crash recovery; INACTIVE: reusable;
    /// UNUSED: never filled).
    pub(crate) fn log_groups(&self) -> Vec<Row> {
        let config = self.log.config();
        let status = self.log.status();
        let geometry = redo::format::Geometry::new(config.log_file_size, config.log_groups);
        let groups = config.log_groups as u64;
        (0..groups)
            .map(|g| {
                // The newest sequence at or before the current one that uses group g.
                let current = status.current_seq.0;
                let seq = if current > g { current - (current - 1 - g) % groups } else { 0 };
                let (state, first) = if seq == 0 {
                    ("UNUSED", 0)
                } else {
                    let s = redo::LogSeq(seq);
                    let state = if seq == current {
                        "CURRENT"
                    } else if geometry.end_of(s) > status.checkpoint_scan_from {
                        "ACTIVE"
                    } else {
                        "INACTIVE"
                    };
                    (state, geometry.start_of(s).0)
                };
                Row::from(vec![
                    Value::Int(g as i64 + 1),
                    Value::Int(1),
                    Value::Int(seq as i64),
                    Value::Int(config.log_file_size as i64),
                    Value::Int(config.members() as i64),
                    Value::Text("NO".into()),
                    Value::Text(state.into()),
                    Value::Int(first as i64),
                ])
            })
            .collect()
    }

    pub(crate) fn snapshot(&self) -> Arc<DbState> {
        Arc::new(self.state.snapshot())
    }

    /// A new row id for a row of `table` (a table without a primary key).
    pub(crate) fn next_rowid(&self, table: &str) -> DbResult<i64> {
        let mut rowids = self.rowids.lock().expect("row ids poisoned");
        let next = match rowids.get_mut(table) {
            Some(next) => next,
            None => {
                let snapshot = self.state.snapshot();
                let highest = match snapshot.table(table)?.rows.max_key().map(|k| k.as_slice()) {
                    Some([Value::Int(id)]) => *id,
                    _ => 0,
                };
                rowids.entry(table.to_string()).or_insert(highest + 1)
            }
        };
        let id = *next;
        *next = id
            .checked_add(1)
            .ok_or_else(|| DbError::Unsupported(format!("more rows in \"{table}\" than row ids")))?;
        Ok(id)
    }

    /// Runs `read` on the shard of `key` under its read lock, without taking a snapshot:
    /// for the short point reads of the commit path. Why not a snapshot: while one is
    /// held, the persistent maps share their nodes with it, so every commit applied
    /// meanwhile copies each B-tree node on its path (64 keys and row pointers a node)
    /// instead of changing it in place; with 32 sessions on 2 CPUs some session nearly
    /// always held one (reading this way instead cut the page faults of that copying from
    /// 6.3% to 0.3% of the commit_loop example's 32-session NOWAIT update samples, and
    /// took it from 218-264k to 264-267k commits/s). `read` must be short and must not
    /// lock a shard again (a queued writer would deadlock it).
    pub(crate) fn read_key<T>(&self, key: &Key, read: impl FnOnce(&Shard) -> T) -> T {
        self.state.read_key(key, read)
    }

    /// Runs `read` with the shards of all of `keys` read-locked together: one consistent
    /// view of those rows (see `LiveState::read_keys`).
    pub(crate) fn read_keys<T>(&self, keys: &[Key], read: impl FnOnce(&KeyShards<'_>) -> T) -> T {
        self.state.read_keys(keys, read)
    }

    /// The newest commit applied with every one before it.
    pub(crate) fn applied_scn(&self) -> Scn {
        self.state.applied_scn()
    }

    /// Runs `read` on one shard, for the tables' schemas (every shard holds them all).
    pub(crate) fn read_catalog<T>(&self, read: impl FnOnce(&Shard) -> T) -> T {
        self.state.read_catalog(read)
    }

    /// Why the instance has stopped serving, if it has: its redo log failed (a write or
    /// sync no member took), or a committed change did not apply. Fail-stop: from then on
    /// every call fails with [`DbError::InstanceTerminated`], nothing is read or written,
    /// no checkpoint is taken, and a restart's recovery decides from the redo what
    /// survived. Two loads when all is well.
    pub(crate) fn termination(&self) -> Option<&Termination> {
        if let Some(t) = self.termination.get() {
            return Some(t);
        }
        let failure = self.log.failure()?;
        Some(self.terminate(Termination::LogFailed(failure)))
    }

    /// Stops the instance serving (the first reason stays), with an alert in the log.
    ///
    /// The calls in flight are cancelled: a call that waits for something the terminated
    /// instance will never do would otherwise wait forever. (After a commit fails to
    /// apply, the watermark of applied commits stays below it and no checkpoint is taken
    /// again, so a commit waiting in `log file switch (checkpoint incomplete)` could never
    /// go on.) Each ends, and `user_call` turns its error into the termination's.
    pub(crate) fn terminate(&self, reason: Termination) -> &Termination {
        let mut first = false;
        let kept = self.termination.get_or_init(|| {
            first = true;
            reason
        });
        if first {
            log::error!(
                "ALERT: instance terminated: {kept}. Every session's next call fails; restart the \
                 database to recover from its redo log"
            );
            // After `termination` is set: a call that clears its flag after this raised
            // it sees the termination (see `user_call`).
            for entry in self.sessions.live() {
                entry.cancel.request();
            }
        }
        kept
    }

    /// Ok while the instance serves, else the error every call gets.
    pub(crate) fn check_serving(&self) -> DbResult<()> {
        match self.termination() {
            None => Ok(()),
            Some(t) => Err(DbError::InstanceTerminated(t.clone())),
        }
    }

    /// Writes a checkpoint image of the committed state and lets the log reuse what the
    /// previous image covers (the two-image rule, see `checkpoint`). Returns the image, or
    /// None if nothing was committed since the last one.
    fn checkpoint(&self) -> DbResult<Option<ImageInfo>> {
        self.check_serving()?;
        let mut images = self.images.lock().expect("images poisoned");
        let snap = self.snapshot();
        if self.state.is_broken() {
            // A half-applied commit may be in the snapshot: it must never become an image.
            self.check_serving()?;
            return Err(DbError::InstanceTerminated(Termination::ApplyFailed {
                scn: snap.scn.next(),
                detail: "a commit was applied only in part".into(),
            }));
        }
        let written = match images.last().cloned() {
            Some(newest) if newest.scn >= snap.scn => {
                // Nothing new to write. Usually that is all; but see `checkpoint_to_newest`.
                if !self.log.checkpoint_needed() || self.log.last_checkpoint().2 >= newest.scn {
                    return Ok(None);
                }
                self.checkpoints.begin();
                self.checkpoint_to_newest(&newest).map(|()| (newest, false))
            }
            _ => {
                self.checkpoints.begin();
                self.write_checkpoint(&mut images, &snap).map(|image| (image, true))
            }
        };
        drop(images);
        match written {
            Ok((image, new)) => {
                if let Some(recovery) = self.checkpoints.succeeded(image.scn) {
                    log::warn!(
                        "checkpoint completed (image at {}) after {} failed attempts over {:.1} s; the log \
                         can reuse its groups again",
                        image.scn,
                        recovery.failed_attempts,
                        recovery.failing_for.as_secs_f64()
                    );
                }
                Ok(new.then_some(image))
            }
            Err(e) => {
                self.checkpoint_failed(&e);
                Err(e)
            }
        }
    }

    /// The log waits for a checkpoint past the image before the newest (the two-image
    /// rule's checkpoint), yet nothing was committed since the newest image: with the log
    /// full no commit can come to make a newer one (after images could not be written for
    /// a while, the last good image before the failures may not cover a whole log file).
    /// So the newest image, read back whole, becomes the log's checkpoint by itself, as
    /// PostgreSQL since version 11 keeps only its latest checkpoint. The previous image
    /// stays on disk until the next image replaces it, and the next checkpoints are back
    /// to two images.
    fn checkpoint_to_newest(&self, newest: &ImageInfo) -> DbResult<()> {
        checkpoint::read_image(&*self.storage, &newest.path, self.log.db_id())?;
        self.log.checkpoint(newest.scn, newest.lsn)?;
        log::warn!(
            "the log waited for a checkpoint and nothing was committed since the newest image ({}): \
             that image, read back whole, is the log's checkpoint",
            newest.path.display()
        );
        Ok(())
    }

    /// Records a failed checkpoint and says so in the log, unless it said so already at
    /// this retry delay (see `checkpointer`).
    fn checkpoint_failed(&self, e: &DbError) {
        let note = self.checkpoints.failed(e);
        let waiting = self.sessions_waiting_for_checkpoint();
        let retry_ms = note.retry_in.as_millis();
        match note.log {
            FailureLog::Quiet => {}
            FailureLog::New => log::error!(
                "checkpoint failed: {e}. Sessions waiting in `log file switch (checkpoint incomplete)`: \
                 {waiting}; retrying in {retry_ms} ms, then less often (see v$checkpoint)"
            ),
            FailureLog::Slower => log::error!(
                "checkpoint failed again ({} attempts): {e}. Sessions waiting: {waiting}; next attempt in \
                 {retry_ms} ms",
                note.attempts
            ),
            FailureLog::Reminder => log::error!(
                "checkpoint still failing ({} attempts): {e}. Sessions waiting in `log file switch \
                 (checkpoint incomplete)`: {waiting}; next attempt in {retry_ms} ms",
                note.attempts
            ),
        }
    }

    /// How many sessions wait now for a checkpoint to free a log group.
    pub(crate) fn sessions_waiting_for_checkpoint(&self) -> usize {
        let incomplete = crate::sessions::AnyEvent::Redo(redo::WaitEvent::LogFileSwitchCheckpointIncomplete);
        self.sessions
            .live()
            .iter()
            .filter(|e| e.current_wait().is_some_and(|(event, _)| event == incomplete))
            .count()
    }

    /// Writes the image of `snap` (holding `images`, the list of images written), tells
    /// the log, and removes the images no longer needed.
    fn write_checkpoint(&self, images: &mut Vec<ImageInfo>, snap: &DbState) -> DbResult<ImageInfo> {
        // Write-ahead rule: the image may hold only durable commits.
        self.log.wait_durable(snap.newest_lsn())?;
        let writing = Instant::now();
        let image = checkpoint::write_image(&*self.storage, &self.dir, self.log.db_id(), snap);
        // A failed write took time too: it is part of the event.
        self.sessions.record_background(DbEvent::CheckpointWrite, writing.elapsed());
        let image = image?;
        let counters = &self.sql_counters;
        counters.physical_writes.fetch_add(checkpoint::data_blocks(image.bytes), Relaxed);
        counters.physical_write_bytes.fetch_add(image.bytes, Relaxed);
        if let Some(previous) = images.last() {
            self.log.checkpoint(previous.scn, previous.lsn)?;
        }
        images.push(image.clone());
        if images.len() > 2 {
            images.remove(0);
        }
        // Keep the two newest images on disk, whoever wrote the older ones.
        let keep_from = images[0].scn;
        let mut removed = false;
        for (scn, path) in checkpoint::list_images(&*self.storage, &self.dir).unwrap_or_default() {
            if scn < keep_from {
                match self.storage.remove_file(&path) {
                    Ok(()) => removed = true,
                    Err(e) => log::warn!("could not remove old checkpoint image {}: {e}", path.display()),
                }
            }
        }
        if removed {
            // Not needed for correctness (an old image left behind is only skipped), but a
            // removal made durable now is not found again after a crash.
            let data = checkpoint::data_dir(&self.dir);
            if let Err(e) = self.storage.sync_dir(&data) {
                log::warn!("could not sync {}: {e}", data.display());
            }
        }
        Ok(image)
    }

    /// The background checkpointer: writes an image when the log asks for one and at the
    /// configured interval; a failed attempt is tried again once its retry delay has
    /// passed (see `checkpointer`), whatever asked for it.
    fn checkpointer(self: Arc<DbShared>) {
        let mut last = std::time::Instant::now();
        // Asked for (by the log, or by a failed attempt) and not yet done.
        let mut wanted = false;
        while !self.stopping.load(SeqCst) {
            wanted |= self.log.wait_checkpoint_request(Duration::from_millis(50));
            // Sessions that wait for a group asked once, when they began to wait; an
            // image that did not free it (see `checkpoint_to_newest`) must not end that.
            wanted |= self.log.checkpoint_needed();
            let interval = Duration::from_millis(self.checkpoint_interval_ms.load(SeqCst));
            let due = !interval.is_zero() && last.elapsed() >= interval;
            if !(wanted || due) || !self.checkpoints.attempt_allowed(std::time::Instant::now()) {
                continue;
            }
            last = std::time::Instant::now();
            let cpu_before = redo::stats::thread_cpu_time();
            let result = self.checkpoint();
            let cpu = redo::stats::thread_cpu_time().saturating_sub(cpu_before);
            self.sql_counters.checkpoint_cpu_us.fetch_add(cpu.as_micros() as u64, Relaxed);
            self.sql_counters.checkpoint_elapsed_us.fetch_add(last.elapsed().as_micros() as u64, Relaxed);
            match result {
                Ok(_) => wanted = false,
                // Logged where it was recorded (`checkpoint_failed`).
                Err(_) if self.termination().is_some() => return,
                Err(_) => wanted = true,
            }
        }
    }

    /// Applies a committed transaction's changes and releases its locks, on the
    /// committing session's thread, as soon as its commit record is in the log buffer
    /// (early lock release): when this returns, every session sees the changes.
    ///
    /// Not in SCN order: commits not yet applied still hold their locks, so they never
    /// conflict and the order does not change the result (see `state`). No session waits
    /// for another's apply, so a committer descheduled between its copy and its apply
    /// holds up nobody. (Measured alternatives, slower with more sessions than CPUs: a
    /// queue applied in SCN order, where everyone waits for the descheduled; flat
    /// combining, where each commit costs a wake-up; a lock-free state pointer, whose
    /// store visits every reader thread.)
    fn apply_committed(&self, commit: CopiedCommit<'_>) {
        let ddl = commit.changes.iter().any(|c| {
            matches!(
                c,
                Change::CreateTable(_)
                    | Change::DropTable { .. }
                    | Change::AlterTable(_)
                    | Change::RewriteTable { .. }
                    | Change::RenameTable { .. }
                    | Change::CreateSchema(_)
                    | Change::DropSchema { .. }
            )
        });
        if ddl {
            // Before the change is visible: a plan compiled against the old schema fails
            // the generation check from now on.
            self.schema_generation.fetch_add(1, SeqCst);
        }
        // A panic while applying leaves the state holding part of a commit: the instance
        // stops serving before anyone can read it or write it as an image (the redo still
        // holds the commit).
        struct TerminateOnPanic<'a>(&'a DbShared, Scn);
        impl Drop for TerminateOnPanic<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.terminate(Termination::ApplyFailed {
                        scn: self.1,
                        detail: "the apply panicked".into(),
                    });
                }
            }
        }
        let _guard = TerminateOnPanic(self, commit.scn);
        if let Err(e) = self.state.apply(commit.shards, commit.changes, commit.scn, commit.lsn) {
            self.terminate(Termination::ApplyFailed { scn: commit.scn, detail: e.to_string() });
            panic!("a validated change of commit {} does not apply: {e}", commit.scn);
        }
        if ddl {
            // Before the DDL's table locks go: a row change after it sees its foreign keys.
            self.note_foreign_keys();
        }
        self.locks.release_all(commit.txn, commit.held);
    }
}

impl DbShared {
    /// Applies a transaction's changes that were never logged (a temporary table's, see
    /// `temp_tables`): as `apply_committed`, without a commit record or an SCN.
    pub(crate) fn apply_unlogged(&self, changes: &[Change], shards: ShardSet) -> DbResult<()> {
        let ddl = changes
            .iter()
            .any(|c| !matches!(c, Change::Insert { .. } | Change::Update { .. } | Change::Delete { .. }));
        if ddl {
            self.schema_generation.fetch_add(1, SeqCst);
        }
        let applied = self.state.apply_unlogged(shards, changes);
        if ddl {
            self.note_foreign_keys();
        }
        applied
    }
}

/// A row locked and read (`Session::lock_and_read`).
struct LockedRow {
    /// Whether the table's schema is still the one expected (a DDL may have replaced the
    /// table; the lock now keeps it from changing).
    schema_current: bool,
    /// The row as the transaction sees it.
    row: Option<Row>,
    /// Whether the lock was taken now (false: the transaction held it already).
    acquired: bool,
}

/// A transaction whose commit record is in the log buffer, to apply.
pub(crate) struct CopiedCommit<'a> {
    scn: Scn,
    lsn: Lsn,
    changes: &'a [Change],
    /// The shards `changes` touch.
    shards: ShardSet,
    txn: TxnId,
    held: &'a mut HeldLocks,
}

/// An open database. Cheap to share: clone the `Arc` it lives in, or open sessions.
pub struct Database {
    shared: Arc<DbShared>,
    recovery: RecoveryReport,
    replayed: u64,
    checkpointer: Option<std::thread::JoinHandle<()>>,
    /// The automatic snapshotter (None once stopped).
    snapshotter: Mutex<Option<crate::awr::SnapshotterHandle>>,
}

impl Drop for Database {
    fn drop(&mut self) {
        self.stop_auto_snapshots();
        self.shared.stopping.store(true, SeqCst);
        // The checkpointer sleeps in the log's wait for a request: end it now rather
        // than at its timeout, so a close takes no 50 ms.
        self.shared.log.wake_checkpoint_waiters();
        if let Some(h) = self.checkpointer.take() {
            let _ = h.join();
        }
    }
}

impl Database {
    /// Opens (creating if needed) the database in `dir`, recovering its tables from the
    /// redo log.
    ///
    /// Fails with [`DbError::DirectoryInUse`] while another `Database` (in this process or
    /// another) has `dir` open.
    pub fn open(dir: impl AsRef<Path>, config: DbConfig) -> DbResult<Database> {
        Database::open_with(dir, config, Arc::new(FileStorage))
    }

    /// As [`Database::open`], with every file (redo log, control file, checkpoint images,
    /// snapshots) on `storage`: the simulated disk of the tests, or faults injected in
    /// front of the real one.
    pub fn open_with(
        dir: impl AsRef<Path>,
        mut config: DbConfig,
        storage: Arc<dyn Storage>,
    ) -> DbResult<Database> {
        let dir = dir.as_ref().to_path_buf();
        config.log.dir = dir.clone();
        let driven = config.log.scheduling == redo::Scheduling::Driven;
        let mut snapshots = config.snapshot_settings();
        if driven {
            // Nobody to take them: the driver takes snapshots (EXEC snapshot) itself.
            snapshots.interval = Duration::ZERO;
        }
        if config.log.open_mode == redo::OpenMode::CreateIfMissing {
            storage
                .create_dir_all(&dir)
                .map_err(|e| DbError::DirectoryLock { dir: dir.clone(), source: Arc::new(e) })?;
        }
        // Before anything is read: recovery must not run beside a live instance. (A missing
        // directory, which must exist here, is refused by the log with its own error.)
        let directory_lock =
            if storage.exists(&dir).unwrap_or(false) { Some(lock_directory(&*storage, &dir)?) } else { None };
        let (log, recovered) = RedoLog::open_with(config.log, storage.clone())?;
        let Some(directory_lock) = directory_lock else {
            return Err(DbError::DirectoryLock {
                dir,
                source: Arc::new(std::io::Error::from(std::io::ErrorKind::NotFound)),
            });
        };
        // The newest whole image, then the redo after it.
        let (image, notes) = checkpoint::newest_valid_image(&*storage, &dir, log.db_id())?;
        let mut images = Vec::new();
        let mut state = match image {
            Some((state, info)) => {
                images.push(info);
                state
            }
            None => DbState::default(),
        };
        if recovered.report.checkpoint_scn > state.scn {
            return Err(DbError::CorruptChange(format!(
                "the redo log was checkpointed at {} but the newest readable image is at {} ({})",
                recovered.report.checkpoint_scn,
                state.scn,
                notes.join("; ")
            )));
        }
        let replayed = replay(&mut state, &recovered)?;
        log::info!(
            "database {} opened at {} ({} commits replayed after the image)",
            dir.display(),
            state.scn,
            replayed
        );
        let shared = Arc::new(DbShared {
            dir,
            storage,
            log,
            images: Mutex::new(images),
            stopping: AtomicBool::new(false),
            state: LiveState::new(state),
            schema_generation: AtomicU64::new(0),
            rowids: Mutex::default(),
            sequences: Default::default(),
            compiled_checks: Mutex::default(),
            any_foreign_keys: AtomicBool::new(false),
            has_schemas: AtomicBool::new(false),
            reference_graph: Mutex::default(),
            locks: LockManager::new(if driven { OnConflict::Fail } else { OnConflict::Wait }),
            next_txn: std::sync::atomic::AtomicU64::new(1),
            checkpoint_interval_ms: std::sync::atomic::AtomicU64::new(config.checkpoint_interval_ms),
            call_commit_optimization: AtomicBool::new(true),
            statement_timeout_ms: AtomicU64::new(config.statement_timeout_ms),
            checkpoints: CheckpointHealth::new(config.checkpoint_retry),
            statements: StatementCache::new(STATEMENT_CACHE_ENTRIES),
            snapshot_lock: Mutex::new(()),
            sql_counters: SqlCounters::default(),
            sessions: SessionRegistry::default(),
            fetches: FetchRegistry::default(),
            termination: std::sync::OnceLock::new(),
            _directory_lock: directory_lock,
        });
        shared.note_foreign_keys();
        let checkpointer = if driven {
            // The session that needs a log group freed makes the checkpoint itself. (A weak
            // reference: the log lives inside the database.)
            let weak = Arc::downgrade(&shared);
            shared.log.set_checkpoint_hook(Box::new(move || {
                if let Some(db) = weak.upgrade() {
                    // A failed write is recorded and logged by `checkpoint` itself (once
                    // per retry delay); the other errors are the termination, logged
                    // when it happened.
                    let _ = db.checkpoint();
                }
            }));
            None
        } else {
            let ckpt = shared.clone();
            let thread = std::thread::Builder::new()
                .name("db-checkpoint".into())
                .spawn(move || ckpt.checkpointer())
                .map_err(|e| DbError::CorruptChange(format!("spawning the checkpointer: {e}")))?;
            Some(thread)
        };
        let mut db = Database {
            shared,
            recovery: recovered.report,
            replayed,
            checkpointer,
            snapshotter: Mutex::new(None),
        };
        let snapshotter = crate::awr::start_auto_snapshots(db.shared.clone(), snapshots)?;
        *db.snapshotter.get_mut().expect("snapshotter poisoned") = Some(snapshotter);
        Ok(db)
    }

    /// Stops the automatic snapshots (dropping the database does it too): a snapshot being
    /// written is finished first. A server calls it before its final checkpoint.
    pub fn stop_auto_snapshots(&self) {
        let handle = self.snapshotter.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(handle);
    }

    /// Whether automatic snapshots are being taken.
    pub fn auto_snapshots_running(&self) -> bool {
        self.snapshotter.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|h| h.is_running())
    }

    /// Writes a checkpoint image now (see the `checkpoint` module). Returns it, or None if
    /// nothing was committed since the last image.
    pub fn checkpoint(&self) -> DbResult<Option<ImageInfo>> {
        self.shared.checkpoint()
    }

    /// Why the instance stopped serving, once it has (fail-stop): its redo log failed, or
    /// a committed change could not be applied. Every session's next call then fails with
    /// [`DbError::InstanceTerminated`]; the database must be dropped and opened again,
    /// which recovers every commit the redo holds. A server watches this to close its
    /// connections and exit.
    pub fn termination(&self) -> Option<Termination> {
        self.shared.termination().cloned()
    }

    /// Parse, cache and execute counters of the SQL layer.
    pub fn sql_stats(&self) -> SqlStats {
        self.shared.sql_stats_now()
    }

    pub(crate) fn shared(&self) -> &DbShared {
        &self.shared
    }

    /// The instance's counters now, as the `v$` views show them (see `counters`): for
    /// exporters that read them without SQL.
    pub fn counters(&self) -> crate::SystemCounters {
        crate::SystemCounters::of(&self.shared)
    }

    /// The system's time model: user calls, DB time, DB CPU.
    pub fn call_times(&self) -> CallTimes {
        self.shared.call_times()
    }

    /// Commits replayed from the redo log when the database was opened (after the image).
    pub fn replayed_commits(&self) -> u64 {
        self.replayed
    }

    pub fn session(&self) -> Session {
        self.shared.session()
    }

    /// A consistent snapshot of the committed state.
    pub fn snapshot(&self) -> Arc<DbState> {
        self.shared.snapshot()
    }

    /// What recovery did when the database was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// The redo log, for its statistics, parameters and status.
    pub fn log(&self) -> &RedoLog {
        &self.shared.log
    }
}

/// Rolls `state` (an image read back, or the empty state) forward with the redo recovery
/// found: every commit after the image's SCN except those the image lists as applied ahead
/// of it. Returns the commits replayed. Redo that does not decode or does not apply to the
/// state (a row of the wrong shape, a missing table, a duplicate key) is a
/// [`DbError::CorruptChange`] naming the commit: the database does not open on it.
pub fn replay(state: &mut DbState, recovered: &Recovered) -> DbResult<u64> {
    let mut replayed = 0u64;
    let image_scn = state.scn;
    let image_ahead = std::mem::take(&mut state.ahead);
    if let Some(&(newest, _)) = image_ahead.last() {
        if newest > recovered.report.last_scn {
            return Err(DbError::CorruptChange(format!(
                "the checkpoint image holds commit {newest} but the redo log ends at {}",
                recovered.report.last_scn
            )));
        }
    }
    let in_image = |scn: Scn| image_ahead.binary_search_by_key(&scn, |&(s, _)| s).is_ok();
    for txn in recovered.transactions.iter().filter(|t| t.scn > image_scn) {
        if in_image(txn.scn) {
            // Applied ahead of the image's watermark: already in the image.
            state.scn = txn.scn;
            state.lsn = txn.commit_lsn;
            continue;
        }
        for bytes in &txn.changes {
            let change = Change::decode(bytes)?;
            state.apply_recovered(&change).map_err(|e| {
                DbError::CorruptChange(format!("commit {} does not apply on recovery: {e}", txn.scn))
            })?;
        }
        state.scn = txn.scn;
        state.lsn = txn.commit_lsn;
        replayed += 1;
    }
    if state.scn < recovered.report.last_scn {
        return Err(DbError::CorruptChange(format!(
            "recovery ends at {} but the state reached only {}",
            recovered.report.last_scn, state.scn
        )));
    }
    Ok(replayed)
}

/// When rows were read: the applies so far (`LiveState::applies`) and this transaction's own changes
/// (`Session::read_point`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadPoint {
    applied: u64,
    own_changes: usize,
}

impl ReadPoint {
    /// Whether nothing was applied and `txn` changed nothing since this point.
    fn still_current(self, db: &DbShared, txn: &Txn) -> bool {
        db.state.applies() == self.applied && txn.overlay.mark() == self.own_changes
    }
}

/// A transaction in progress.
pub(crate) struct Txn {
    id: TxnId,
    changes: Vec<Change>,
    /// The shards of the committed state its changes touch (after a statement rolled
    /// back, maybe more: its apply then locks a shard it leaves unchanged).
    shards: ShardSet,
    /// The transaction's own view of the rows it changed: None where it deleted one.
    overlay: Overlay,
    held: HeldLocks,
    /// Its named savepoints, oldest first (a name may repeat: the newest counts).
    savepoints: Vec<Savepoint>,
}

/// A named point of a transaction (`SAVEPOINT name`) that `ROLLBACK TO` goes back to.
struct Savepoint {
    name: String,
    start: StatementStart,
}

/// A transaction's own rows, per table then key (None where it deleted one), looked up by
/// `&str` and `&Key` without building an owned key, with an undo log so that a failed
/// statement (or ROLLBACK TO) is taken back alone: a statement's start is the log's
/// length, and undoing puts back what each later change replaced.
///
/// Plain maps, not persistent ones: a persistent map's first node has room for 64
/// entries, and a one-row transaction allocated two such nodes (6 KiB) for its overlay.
#[derive(Default)]
pub(crate) struct Overlay {
    /// Few tables per transaction: a list.
    tables: Vec<(String, OwnRows)>,
    /// Every `set`, newest last: the table's index, the key, and the entry it replaced
    /// (None: there was none).
    undo: Vec<(usize, Key, Option<Option<Row>>)>,
}

/// Entries a table's own rows keep in a sorted list before they move to a B-tree.
const OWN_ROWS_LISTED: usize = 16;

/// One table's own rows in key order. Most transactions change a few rows: those are a
/// sorted list, which a session's next transaction reuses as it is. A B-tree map, which
/// allocates its first node at the first insert and frees it at `clear`, made a one-row
/// transaction pay an allocation and a free (and mimalloc's slow path, its size class
/// being empty each time).
#[derive(Clone)]
pub(crate) enum OwnRows {
    Listed(Vec<(Key, Option<Row>)>),
    Mapped(std::collections::BTreeMap<Key, Option<Row>>),
}

impl Default for OwnRows {
    fn default() -> OwnRows {
        OwnRows::Listed(Vec::new())
    }
}

impl OwnRows {
    fn get(&self, key: &Key) -> Option<&Option<Row>> {
        match self {
            OwnRows::Listed(list) => list.binary_search_by(|(k, _)| k.cmp(key)).ok().map(|i| &list[i].1),
            OwnRows::Mapped(map) => map.get(key),
        }
    }

    /// Sets `key`'s entry; returns the one it replaced.
    fn insert(&mut self, key: Key, row: Option<Row>) -> Option<Option<Row>> {
        match self {
            OwnRows::Listed(list) => match list.binary_search_by(|(k, _)| k.cmp(&key)) {
                Ok(i) => Some(std::mem::replace(&mut list[i].1, row)),
                Err(_) if list.len() == OWN_ROWS_LISTED => {
                    let mut map: std::collections::BTreeMap<Key, Option<Row>> = list.drain(..).collect();
                    let replaced = map.insert(key, row);
                    *self = OwnRows::Mapped(map);
                    replaced
                }
                Err(i) => {
                    list.insert(i, (key, row));
                    None
                }
            },
            OwnRows::Mapped(map) => map.insert(key, row),
        }
    }

    fn remove(&mut self, key: &Key) {
        match self {
            OwnRows::Listed(list) => {
                if let Ok(i) = list.binary_search_by(|(k, _)| k.cmp(key)) {
                    list.remove(i);
                }
            }
            OwnRows::Mapped(map) => {
                map.remove(key);
            }
        }
    }

    /// Forgets every entry; a list keeps its room.
    fn clear(&mut self) {
        match self {
            OwnRows::Listed(list) => list.clear(),
            OwnRows::Mapped(_) => *self = OwnRows::default(),
        }
    }

    /// The entries in key order.
    pub(crate) fn iter(&self) -> Box<dyn Iterator<Item = (&Key, &Option<Row>)> + '_> {
        match self {
            OwnRows::Listed(list) => Box::new(list.iter().map(|(k, r)| (k, r))),
            OwnRows::Mapped(map) => Box::new(map.iter()),
        }
    }
}

impl<'a> IntoIterator for &'a OwnRows {
    type Item = (&'a Key, &'a Option<Row>);
    type IntoIter = Box<dyn Iterator<Item = (&'a Key, &'a Option<Row>)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The transaction's own rows as a statement with data-modifying WITH queries found them
/// when it began: what every query of the statement reads (PostgreSQL runs all its parts
/// on one snapshot, so none sees another's changes but through its RETURNING rows), while
/// the changes themselves, their locks and the checks of unique and foreign keys go to
/// and read the overlay as it is.
#[derive(Default)]
pub(crate) struct OwnRowsAtStart {
    tables: Vec<(String, OwnRows)>,
}

impl OwnRowsAtStart {
    fn rows(&self, table: &str) -> Option<&OwnRows> {
        self.tables.iter().find(|(t, _)| t == table).map(|(_, rows)| rows)
    }
}

impl Overlay {
    fn rows(&self, table: &str) -> Option<&OwnRows> {
        self.tables.iter().find(|(t, _)| t == table).map(|(_, rows)| rows)
    }

    fn get(&self, table: &str, key: &Key) -> Option<&Option<Row>> {
        self.rows(table).and_then(|rows| rows.get(key))
    }

    fn set(&mut self, table: &str, key: Key, row: Option<Row>) {
        let index = match self.tables.iter().position(|(t, _)| t == table) {
            Some(i) => i,
            None => {
                self.tables.push((table.to_string(), Default::default()));
                self.tables.len() - 1
            }
        };
        let replaced = self.tables[index].1.insert(key.clone(), row);
        self.undo.push((index, key, replaced));
    }

    /// Forgets every row, keeping each table's entry and the undo log's room, for the
    /// session's next transaction.
    fn clear(&mut self) {
        for (_, rows) in &mut self.tables {
            rows.clear();
        }
        self.undo.clear();
    }

    /// The point `undo_to` goes back to.
    fn mark(&self) -> usize {
        self.undo.len()
    }

    /// Takes back every `set` since `mark`, newest first.
    fn undo_to(&mut self, mark: usize) {
        assert!(mark <= self.undo.len(), "undo to {mark}, past the log's {} entries", self.undo.len());
        while self.undo.len() > mark {
            let (index, key, replaced) = self.undo.pop().expect("longer than mark");
            let rows = &mut self.tables[index].1;
            match replaced {
                Some(previous) => {
                    rows.insert(key, previous);
                }
                None => rows.remove(&key),
            };
        }
    }
}

/// A session's block of transaction ids, taken from the database's counter
/// `TXN_ID_BLOCK` at a time: a counter every transaction added to would move its cache
/// line between the CPUs on every commit. (Ids only name lock owners: unique, not ordered.)
#[derive(Default)]
pub(crate) struct TxnIds {
    next: u64,
    end: u64,
}

const TXN_ID_BLOCK: u64 = 1024;

impl TxnIds {
    fn take(&mut self, db: &DbShared) -> TxnId {
        if self.next == self.end {
            self.next = db.next_txn.fetch_add(TXN_ID_BLOCK, std::sync::atomic::Ordering::Relaxed);
            self.end = self.next + TXN_ID_BLOCK;
        }
        self.next += 1;
        TxnId(self.next - 1)
    }
}

impl Txn {
    /// A transaction `id`, in the allocations a previous one of the session left
    /// (`recycle`) if there are any.
    fn begin(id: TxnId, spare: &mut Option<Box<Txn>>) -> Box<Txn> {
        match spare.take() {
            Some(mut txn) => {
                txn.id = id;
                txn
            }
            None => Box::new(Txn::new(id)),
        }
    }

    /// Empties an ended transaction (its locks released) for the session's next one: the
    /// change list, overlay, lock list and savepoints keep their room, so a one-row
    /// transaction allocates none of them again.
    fn recycle(mut self: Box<Txn>) -> Box<Txn> {
        debug_assert!(self.held.is_empty(), "a transaction recycled with its locks held");
        self.changes.clear();
        self.shards = ShardSet::default();
        self.overlay.clear();
        self.savepoints.clear();
        self
    }

    fn new(id: TxnId) -> Txn {
        Txn {
            id,
            changes: Vec::new(),
            shards: ShardSet::default(),
            overlay: Overlay::default(),
            held: HeldLocks::default(),
            savepoints: Vec::new(),
        }
    }

    /// This transaction's own version of a row: Some(None) where it deleted it, None where
    /// it did not touch it.
    fn own(&self, table: &str, key: &Key) -> Option<&Option<Row>> {
        self.overlay.get(table, key)
    }

    fn set_own(&mut self, table: &str, key: Key, row: Option<Row>) {
        self.overlay.set(table, key, row);
    }
}

/// Where a statement started, to undo it alone if it fails (also where a savepoint
/// was set: the same undo serves ROLLBACK TO).
#[derive(Clone)]
pub(crate) struct StatementStart {
    redo: RedoSavepoint,
    changes: usize,
    overlay: usize,
    savepoints: usize,
}

impl DbShared {
    /// A new session on the database (`Database::session`; the sequences' recursive
    /// transactions make their own).
    pub(crate) fn session(self: &Arc<Self>) -> Session {
        let redo = self.log.session();
        let entry = self.sessions.open(redo.stats_handle(), redo.interrupt().clone());
        let fetches = self.fetches.open(entry.sid);
        Session {
            db: self.clone(),
            redo,
            txn: None,
            txn_ids: TxnIds::default(),
            spare_txn: None,
            call_commit_optimization: None,
            client_settings: std::collections::BTreeMap::new(),
            database_name: None,
            notices: Vec::new(),
            open_cursors: Vec::new(),
            ctes: Default::default(),
            own_rows_at_start: None,
            work_tables: Default::default(),
            statement_depth: 0,
            pending_foreign_keys: Vec::new(),
            call_depth: 0,
            last_call_ns: 0,
            call_clock: Cell::new(CallClock::new(entry.sid)),
            work: Cell::new(None),
            server_work: false,
            client_call_open: false,
            rows_locked: 0,
            entry,
            fetches,
            encoded: Vec::new(),
            defer_durability: false,
            foreground_log_write: false,
            row_locks_fail_when_taken: false,
            durability_wait: None,
            defer_lock_waits: false,
            lock_wait: None,
            carried_deadline: None,
            statement_timeout_ms: None,
            zone: crate::datetime::ZoneId::UTC,
            txn_timestamp: Cell::new(None),
            temp: Default::default(),
            search_path: Default::default(),
        }
    }
}

/// A table's CHECK constraints compiled: the schema they were compiled from, and each
/// constraint's name and condition.
pub(crate) type CompiledChecks = (Arc<TableSchema>, Arc<Vec<(String, crate::sql::expr::Expr)>>);

impl Session {
    /// Fails with 23514 if `row` makes a CHECK constraint of `schema` false (unknown
    /// passes, as in SQL). The conditions are compiled once per schema.
    pub(crate) fn check_constraints(&self, table: &str, schema: &TableSchema, row: &[Value]) -> DbResult<()> {
        let compiled = {
            let cache = self.db.compiled_checks.lock().expect("compiled checks poisoned");
            cache.get(table).filter(|(of, _)| std::ptr::eq(&**of, schema)).map(|(_, c)| c.clone())
        };
        let compiled = match compiled {
            Some(c) => c,
            None => {
                let of = Arc::new(schema.clone());
                let c = Arc::new(crate::sql::ddl::compile_checks(&of)?);
                // Cached under the schema the caller holds only if it is the current one.
                if self.schema_of(table).is_ok_and(|current| *current == *schema) {
                    let current = self.schema_of(table)?;
                    self.db
                        .compiled_checks
                        .lock()
                        .expect("compiled checks poisoned")
                        .insert(table.to_string(), (current, c.clone()));
                }
                c
            }
        };
        for (name, condition) in compiled.iter() {
            if crate::sql::expr::truth(&condition.eval(row, &[])?)? == Some(false) {
                return Err(DbError::CheckViolation { table: table.to_string(), constraint: name.clone() });
            }
        }
        Ok(())
    }
}

/// A session: at most one transaction at a time. Dropping it rolls back.
pub struct Session {
    pub(crate) db: Arc<DbShared>,
    pub(crate) redo: LogSession,
    /// Boxed: a transaction moves between `txn` and `spare_txn` at every commit, and as
    /// a value (over 200 bytes) each move was a copy (a prepared UPDATE + COMMIT: 10,304
    /// instructions unboxed, 10,095 boxed; callgrind).
    pub(crate) txn: Option<Box<Txn>>,
    txn_ids: TxnIds,
    /// The last transaction's allocations, emptied, for the next one (`Txn::recycle`).
    spare_txn: Option<Box<Txn>>,
    /// Session-level `call_commit_optimization` (None: the system's).
    pub(crate) call_commit_optimization: Option<bool>,
    /// Settings the layer above keeps for its client, by lowercase name, as it last told
    /// them (`set_client_setting`): what `current_setting()` reads of them.
    pub(crate) client_settings: std::collections::BTreeMap<String, String>,
    /// The name of the database its client connected to (`current_database()`,
    /// pg_database): a wire server's client names one; None for an embedded session.
    pub(crate) database_name: Option<String>,
    /// Warnings for the client (PostgreSQL NOTICE/WARNING), taken with `take_notices`.
    pub(crate) notices: Vec<crate::error::Notice>,
    /// The cursors the layer above keeps open for its client (pg_cursors).
    pub(crate) open_cursors: Vec<crate::catalog::OpenCursor>,
    /// The WITH queries in scope of the query being compiled, innermost last (see
    /// `query::plan_query_in`): a FROM name is looked up here before the catalog.
    /// (None: a data-modifying WITH query without RETURNING, which no FROM may read.)
    pub(crate) ctes: std::cell::RefCell<Vec<(String, Option<Arc<crate::sql::query::QueryPlan>>)>>,
    /// Set while a statement with data-modifying WITH queries runs: the own rows its
    /// queries read (see `OwnRowsAtStart`).
    own_rows_at_start: Option<Box<OwnRowsAtStart>>,
    /// The working tables of the recursive WITH queries being planned and run.
    pub(crate) work_tables: crate::sql::recursive::WorkTables,
    /// How many `statement` calls are open (they nest: an UPDATE's row changes, a
    /// foreign key's actions): the outermost one's end runs the checks left for it.
    pub(crate) statement_depth: u32,
    /// Foreign key checks left for the end of the outermost statement.
    pub(crate) pending_foreign_keys: Vec<crate::foreign_keys::PendingCheck>,
    /// How deep in a user call the session is (calls nest: an array insert runs its
    /// statement once per row); only the outermost one is timed.
    pub(crate) call_depth: u32,
    /// The elapsed time of the last outermost user call, in nanoseconds (0 if untimed):
    /// its statement's share of `v$sql.elapsed_time`.
    pub(crate) last_call_ns: u64,
    /// Measures the CPU of the session's work for the time model (`call_clock`). In a
    /// `Cell`, as is `work`: long work publishes its CPU from its row loops, which hold
    /// the session shared (`fold_long_work`).
    call_clock: Cell<CallClock>,
    /// The work in progress, when timed: an embedded call's, or the wire server's.
    work: Cell<Option<Work>>,
    /// The wire server's work on a request is in progress (`begin_server_work`): the
    /// user calls it makes time only themselves, for `v$sql`.
    server_work: bool,
    /// A wire client's request is open (`client_call_begin`).
    client_call_open: bool,
    /// Rows locked so far, to look at the cancel flag every `CANCEL_CHECK_ROWS` of them.
    rows_locked: u32,
    /// What the wait interface shows of this session (SID, status, SQL, waits, times).
    pub(crate) entry: Arc<SessionEntry>,
    /// Its `rows fetched` and `fetch calls` (shared with its cursors).
    pub(crate) fetches: Arc<FetchCounters>,
    /// The buffer each change record is encoded into, kept to save an allocation per row.
    encoded: Vec<u8>,
    /// Commits hand their durability wait to the caller instead of blocking
    /// (`set_deferred_durability`).
    pub(crate) defer_durability: bool,
    /// A deferred commit first tries to write the log itself (`set_foreground_log_write`).
    foreground_log_write: bool,
    /// Row locks taken now fail at once on a row another transaction holds, instead of
    /// waiting (`SELECT ... FOR UPDATE NOWAIT` or `SKIP LOCKED`, while it locks).
    pub(crate) row_locks_fail_when_taken: bool,
    /// The wait of the commits made since the caller last took it.
    durability_wait: Option<crate::durability::DurabilityWait>,
    /// Row lock waits are left to the caller (`set_lock_wait_deferral`).
    pub(crate) defer_lock_waits: bool,
    /// The row lock wait the last call left, until the caller ends it.
    pub(crate) lock_wait: Option<crate::lock_wait::PendingLockWait>,
    /// The deadline a statement run again after its deferred lock wait keeps (its first
    /// start's), taken by the next statement clock's start.
    pub(crate) carried_deadline: Option<Option<Instant>>,
    /// Session-level `statement_timeout` in milliseconds, 0 for none (None: the system's).
    pub(crate) statement_timeout_ms: Option<u64>,
    /// The session's time zone (`SET TIME ZONE`), current on the thread during its calls.
    pub(crate) zone: crate::datetime::ZoneId,
    /// What `now()` gives in the current transaction, once read
    /// (`transaction_timestamp`); forgotten when the transaction ends.
    txn_timestamp: Cell<Option<i64>>,
    /// The session's temporary tables' bookkeeping (`temp_tables`).
    pub(crate) temp: crate::temp_tables::TempTables,
    /// The session's `search_path`, parsed (`namespaces`).
    pub(crate) search_path: crate::namespaces::SearchPath,
}

/// The wire server's work on a request, begun with `Session::begin_server_work`: hand
/// it back to `end_server_work` before the server awaits anything.
#[must_use = "server work ends with Session::end_server_work"]
#[derive(Debug)]
pub struct ServerWork {
    _private: (),
}

/// The time model of a session or of the system: Oracle's `DB time` (elapsed time inside
/// user calls, waits included) and `DB CPU` (CPU time of the session's thread inside
/// them), and the number of `user calls`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallTimes {
    pub user_calls: u64,
    pub db_time_us: u64,
    pub db_cpu_us: u64,
}

impl Session {
    fn txn(&mut self) -> &mut Txn {
        let Session { db, txn, txn_ids, spare_txn, .. } = self;
        txn.get_or_insert_with(|| Txn::begin(txn_ids.take(db), spare_txn))
    }

    /// This transaction's own versions of rows of `table`, in key order: Some(row) where it
    /// inserted or updated one, None where it deleted one.
    pub(crate) fn own_rows(&self, table: &str) -> Vec<(Key, Option<Row>)> {
        let Some(rows) = self.txn.as_ref().and_then(|txn| txn.overlay.rows(table)) else {
            return Vec::new();
        };
        rows.iter().map(|(k, r)| (k.clone(), r.clone())).collect()
    }

    /// This transaction's own versions of rows of `table` as the statement's queries read
    /// them: as `own_rows`, or as they were when a statement with data-modifying WITH
    /// queries began, while one runs (`read_own_rows_at_start`).
    pub(crate) fn own_rows_read(&self, table: &str) -> Vec<(Key, Option<Row>)> {
        match &self.own_rows_at_start {
            Some(at_start) => at_start
                .rows(table)
                .map(|rows| rows.iter().map(|(k, r)| (k.clone(), r.clone())).collect())
                .unwrap_or_default(),
            None => self.own_rows(table),
        }
    }

    /// The row with primary key `key` as the statement's queries read it (see
    /// `own_rows_read`), the committed rows from `shard`.
    pub(crate) fn get_read_in(&self, shard: &Shard, table: &str, key: &Key) -> DbResult<Option<Row>> {
        let Some(at_start) = &self.own_rows_at_start else { return self.get_in(shard, table, key) };
        if let Some(own) = at_start.rows(table).and_then(|rows| rows.get(key)) {
            return Ok(own.clone());
        }
        Ok(shard.table(table)?.rows.get(key).cloned())
    }

    /// From now on, the statement's queries read the transaction's own rows as they are
    /// now (a copy: the statement's changes go on into the overlay). Returns the view
    /// that was read before, for `end_read_at_start`.
    pub(crate) fn read_own_rows_at_start(&mut self) -> Option<Box<OwnRowsAtStart>> {
        let tables = match &self.txn {
            Some(txn) => {
                txn.overlay.tables.iter().filter(|(_, rows)| rows.iter().next().is_some()).cloned().collect()
            }
            None => Vec::new(),
        };
        self.own_rows_at_start.replace(Box::new(OwnRowsAtStart { tables }))
    }

    /// Puts back the view `read_own_rows_at_start` replaced.
    pub(crate) fn end_read_at_start(&mut self, previous: Option<Box<OwnRowsAtStart>>) {
        self.own_rows_at_start = previous;
    }

    /// Whether the statement with data-modifying WITH queries that is running has changed
    /// the row `key` of `table` since it began (false when none runs): PostgreSQL's
    /// UPDATE and DELETE leave such a row alone (the row "was already modified by the
    /// current command").
    pub(crate) fn changed_since_statement_start(&self, table: &str, key: &Key) -> bool {
        let Some(at_start) = &self.own_rows_at_start else { return false };
        let now = self.txn.as_ref().and_then(|txn| txn.own(table, key));
        let then = at_start.rows(table).and_then(|rows| rows.get(key));
        match (now, then) {
            (None, None) => false,
            (Some(Some(a)), Some(Some(b))) => !Arc::ptr_eq(a, b),
            (Some(None), Some(None)) => false,
            _ => true,
        }
    }

    /// Whether the statement's queries read own rows as a statement's start left them.
    pub(crate) fn reads_at_start(&self) -> bool {
        self.own_rows_at_start.is_some()
    }

    /// Warnings raised by the statements run since the last call (for example the
    /// deprecation of commit_write), for the client.
    pub fn take_notices(&mut self) -> Vec<crate::error::Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Whether the open transaction has changed anything (logged or not).
    pub(crate) fn has_changes(&self) -> bool {
        self.txn.as_ref().is_some_and(|txn| !txn.changes.is_empty())
    }

    /// Whether a transaction is open (it has locked or changed something).
    pub fn in_transaction(&self) -> bool {
        self.txn.is_some()
    }

    /// The redo log session, for commit settings and statistics.
    pub fn redo(&mut self) -> &mut LogSession {
        &mut self.redo
    }

    /// Runs `body` as one user call, counted in `user calls`. Outside a wire request
    /// (`client_call_begin`), it is a call of its own in the time model: its elapsed time is
    /// added to `DB time` and the CPU of its work to `DB CPU` (measured for long work,
    /// estimated from a sample for short work, never more than its time not waiting: see
    /// `call_clock`). Inside the server's work on a request, the request holds that time
    /// and CPU, and the call times only itself for its statement (`last_call_ns`). Nested
    /// calls count once. With `timed_statistics` off (as the call starts) the call is
    /// counted but not timed: no clock is read, DB time and DB CPU do not grow.
    pub(crate) fn user_call<T: CallResult>(&mut self, body: impl FnOnce(&mut Session) -> T) -> T {
        if self.call_depth > 0 {
            return body(self);
        }
        debug_assert!(self.lock_wait.is_none(), "a deferred lock wait is ended before the next call");
        // A cancel that came while no call was running is for no statement. Cleared
        // before the check: a termination's cancel of the calls in flight (`terminate`)
        // either comes after the clear, or was preceded by the termination seen here.
        self.entry.cancel.clear();
        if let Err(e) = self.db.check_serving() {
            return T::terminated(e);
        }
        self.call_depth = 1;
        self.zone.make_current();
        crate::sequences::set_current_session(self.entry.sid);
        self.start_statement_clock();
        let timed = self.redo.timed_statistics();
        let result;
        if self.server_work {
            let started = timed.then(Stamp::now);
            result = body(self);
            self.last_call_ns = started.map_or(0, |t| Stamp::now().nanos_since(t));
        } else {
            let started_ns = timed.then(|| Stamp::now().nanos());
            self.entry.time.open(started_ns);
            if let Some(at_ns) = started_ns {
                self.begin_work(at_ns);
            }
            result = body(self);
            let end_ns = started_ns.map(|at_ns| (at_ns, self.end_work().end_ns));
            self.entry.time.close(|| end_ns.map_or_else(|| Stamp::now().nanos(), |(_, end_ns)| end_ns));
            self.last_call_ns = end_ns.map_or(0, |(at_ns, end_ns)| end_ns.saturating_sub(at_ns));
        }
        self.call_depth = 0;
        debug_assert!(
            self.lock_wait.is_none() || result.lock_wait_deferred(),
            "a call that left a lock wait failed with LockWaitDeferred (nothing swallowed it)"
        );
        // Only the session's own thread writes its counters: a load and a store, no locked
        // instruction. The system's figures are the sum over the sessions
        // (`SessionRegistry::call_totals`), not counters every call would share.
        if !result.lock_wait_deferred() {
            let calls = &self.entry.user_calls;
            calls.store(calls.load(Relaxed) + 1, Relaxed);
        }
        // What the call read may hold commits whose durability the failure made unknown.
        if let Err(e) = self.db.check_serving() {
            return T::terminated(e);
        }
        result
    }

    /// Work starts at `at_ns` (a stamp just read, `Stamp::nanos`), inside an open timed
    /// call.
    #[inline]
    fn begin_work(&mut self, at_ns: u64) {
        let waited_us = self.entry.waited_us();
        let work = self.call_clock.get_mut().begin(at_ns, waited_us);
        let previous = self.work.get_mut().replace(work);
        debug_assert!(previous.is_none(), "work does not nest");
    }

    /// The work in progress ends: its CPU is added to DB CPU. Returns its end (now). A
    /// durability wait its commits left (deferred durability) is timed from here: until
    /// now the session worked, and that time is the work's, not the wait's.
    #[inline]
    fn end_work(&mut self) -> WorkTime {
        let work = self.work.get_mut().take().expect("work in progress");
        let time = self.call_clock.get_mut().end(work, self.entry.waited_us(), &self.entry.time);
        if let Some(wait) = self.durability_wait.as_mut() {
            wait.waiting_from(time.end);
        }
        if let Some(wait) = self.lock_wait.as_mut() {
            // Likewise a row lock wait left to the caller (the stopped run's undo was work).
            wait.waiting_from(time.end);
        }
        time
    }

    /// Long work publishes the CPU it has used so far, every `call_clock::FOLD_NS`: its
    /// row loops call this (through `check_cancel`), so that a snapshot taken while it
    /// runs finds its CPU up to then, beside its DB time (see `call_clock`).
    fn fold_long_work(&self) {
        let Some(mut work) = self.work.get() else { return };
        if Stamp::now().nanos().saturating_sub(work.started_ns()) < crate::call_clock::FOLD_NS {
            return;
        }
        let mut clock = self.call_clock.get();
        clock.fold(&mut work, self.entry.waited_us(), &self.entry.time);
        self.call_clock.set(clock);
        self.work.set(Some(work));
    }

    /// A wire client's request: the messages that arrived at `arrived` (the end of the
    /// wait for them, on the wait interface's clock; None when the session does not time
    /// its calls) are taken up. The request is one call in the time model until
    /// `client_call_end`: its DB time runs from `arrived` to the reply sent, and holds the
    /// server's work on it (`begin_server_work`), the user calls that work makes, the
    /// durability wait the server awaits, and the network waits the server records
    /// meanwhile (`begin_wait` / `end_wait`): sending the reply, waiting for the rest of
    /// the request.
    /// Calling it while the request is open does nothing (its rest has arrived).
    pub fn client_call_begin(&mut self, arrived: Option<Stamp>) {
        if !self.client_call_open {
            self.client_call_open = true;
            self.entry.time.open(arrived.map(Stamp::nanos));
        }
    }

    /// The request's reply has been sent (or there was none to send), at `at`: its call
    /// ends. None when the session does not time its calls (a clock is read if the call
    /// was timed as it began).
    pub fn client_call_end(&mut self, at: Option<Stamp>) {
        assert!(self.client_call_open, "a client call ends that was not open");
        assert!(!self.server_work, "the server's work on the request has ended first");
        self.client_call_open = false;
        self.entry.time.close(|| at.unwrap_or_else(Stamp::now).nanos());
    }

    /// The server works on the open request on this thread, until `end_server_work`:
    /// the CPU of the work is measured (a sample of it, see `call_clock`) and added to DB
    /// CPU, as an embedded call's is. The returned token ends it.
    pub fn begin_server_work(&mut self) -> ServerWork {
        assert!(self.client_call_open, "server work is done for an open client call");
        assert!(!self.server_work, "server work does not nest");
        self.server_work = true;
        if self.timed_statistics() {
            self.begin_work(Stamp::now().nanos());
        }
        ServerWork { _private: () }
    }

    /// The server's work on the request stops (it awaits something, or it is done).
    pub fn end_server_work(&mut self, work: ServerWork) {
        let ServerWork { _private: () } = work;
        assert!(self.server_work, "server work in progress");
        if self.work.get().is_some() {
            self.end_work();
        }
        self.server_work = false;
    }

    /// Whether this session times its waits and calls (`timed_statistics`: the session's
    /// setting, else the system's).
    pub fn timed_statistics(&self) -> bool {
        self.redo.timed_statistics()
    }

    /// As `user_call`, showing `sql` as the session's current SQL meanwhile, and counting
    /// the rows the call hands its caller (`rows fetched`, `fetch calls`; see
    /// [`ReturnedRows`]). Nested calls count nothing: their results stay inside.
    ///
    /// A call of one prepared statement (`SqlText::Prepared`) is one execution of it, with
    /// the rows it processed and the call's elapsed time (`v$sql`); a call of SQL text
    /// counts each statement where it runs (`Session::run_counted`).
    pub(crate) fn user_call_sql<T: ReturnedRows + CallResult>(
        &mut self,
        sql: SqlText<'_>,
        body: impl FnOnce(&mut Session) -> T,
    ) -> T {
        let outermost = self.call_depth == 0;
        if outermost {
            match sql {
                SqlText::Borrowed(sql) => self.entry.set_sql(sql),
                SqlText::Prepared(sql, _) => self.entry.set_sql_shared(sql),
            }
        }
        let result = self.user_call(body);
        if outermost && !result.lock_wait_deferred() {
            result.returned_rows(&mut |rows| self.fetches.record(rows));
            if let SqlText::Prepared(_, stats) = sql {
                stats.record(self.entry.sid, result.processed_rows(), self.last_call_ns);
            }
        }
        result
    }

    /// This session's time model so far (its open call counted up to now).
    pub fn call_times(&self) -> CallTimes {
        let [user_calls, db_time_us, db_cpu_us] = self.entry.call_counts();
        CallTimes { user_calls, db_time_us, db_cpu_us }
    }

    /// What `now()`, `CURRENT_TIMESTAMP` and `CURRENT_DATE` read: the same instant for a
    /// whole transaction, as in PostgreSQL. The clock is read at the transaction's first
    /// use of it (not at its start, so that a transaction that uses none reads no
    /// clock, and the commit path stays as it was).
    pub(crate) fn transaction_timestamp(&self) -> i64 {
        match self.txn_timestamp.get() {
            Some(t) => t,
            None => {
                let t = crate::datetime::now();
                self.txn_timestamp.set(Some(t));
                t
            }
        }
    }

    /// The transaction ended (a commit or rollback here, or the end of a statement the
    /// layer above ran as a transaction of its own without changing anything): the next
    /// one reads the clock afresh.
    pub fn transaction_ended(&self) {
        self.txn_timestamp.set(None);
    }

    /// The session's time zone.
    pub fn time_zone(&self) -> crate::datetime::ZoneId {
        self.zone
    }

    /// The session's identifier in the `v$` views (`v$session.sid`).
    pub fn sid(&self) -> u64 {
        self.entry.sid
    }

    /// A handle another thread can use to cancel this session's running or waiting
    /// statement (a wire server's cancel request). The statement fails with
    /// `DbError::Canceled` and is rolled back alone; the session goes on.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle::new(self.entry.clone())
    }

    /// Fails with `DbError::Canceled` if this call was cancelled, or with
    /// `DbError::StatementTimeout` once the statement has run for `statement_timeout`. Row
    /// loops call it every `CANCEL_CHECK_ROWS` rows (and so tell `redo::blocking::lengthy`
    /// the call is long); lock waits and the redo log's wait for a log file look at the
    /// flag themselves.
    #[inline]
    pub(crate) fn check_cancel(&self) -> DbResult<()> {
        // The same rhythm tells a server's worker that this call is a long one, and lets
        // long work publish its CPU.
        redo::blocking::lengthy();
        self.fold_long_work();
        self.entry.cancel.check()
    }

    /// This session's `statement_timeout` in milliseconds (0: none): its own, else the
    /// system's.
    pub fn statement_timeout_ms(&self) -> u64 {
        self.statement_timeout_ms.unwrap_or_else(|| self.db.statement_timeout_ms.load(Relaxed))
    }

    /// Starts the statement's `statement_timeout` from now: at each user call, and at each
    /// statement of a call of several (PostgreSQL's rule since version 13). No clock is
    /// read when there is no timeout.
    pub(crate) fn start_statement_clock(&mut self) {
        if let Some(deadline) = self.carried_deadline.take() {
            self.entry.cancel.set_deadline(deadline);
            return;
        }
        let ms = self.statement_timeout_ms();
        self.entry.cancel.set_deadline((ms > 0).then(|| Instant::now() + Duration::from_millis(ms)));
    }

    /// Who the client is, for `v$session` (the server sets it from the startup message).
    pub fn set_client_info(&self, info: ClientInfo) {
        self.entry.set_client(info);
    }

    /// Counts a wait the caller measured (the server's `SQL*Net message from client`
    /// and `SQL*Net message to client`), without its time when `timed_statistics` is off
    /// (the caller may skip measuring then: see [`Session::timed_statistics`]).
    pub fn record_wait(&self, event: DbEvent, waited: Duration) {
        self.entry.record_wait(event, self.timed_statistics().then_some(waited));
    }

    /// Counts client traffic (the server's round trips and bytes).
    pub fn add_net(&self, stat: crate::sessions::NetStat, n: u64) {
        self.entry.add_net(stat, n);
    }

    /// Marks the session as waiting on `event` from `at` (for `v$session`, and for an AWR
    /// snapshot taken meanwhile), until `end_wait`. `at` is a stamp the caller has just
    /// read to time the wait itself; None when it does not time it (the wait shows as
    /// lasting 0).
    pub fn begin_wait(&self, event: DbEvent, at: Option<Stamp>) {
        self.entry.begin_wait(event, at.filter(|_| self.timed_statistics()));
    }

    pub fn end_wait(&self, event: DbEvent, waited: Option<Duration>) {
        self.entry.end_wait(event, waited, self.timed_statistics());
    }

    /// Runs one statement with statement-level atomicity.
    pub(crate) fn statement<T>(&mut self, body: impl FnOnce(&mut Session) -> DbResult<T>) -> DbResult<T> {
        let start = self.statement_start();
        let pending = self.pending_foreign_keys.len();
        self.statement_depth += 1;
        let mut result = body(self);
        self.statement_depth -= 1;
        if result.is_err() {
            // The checks of what is undone go with it (an inner statement's error may be
            // taken by its caller: ON CONFLICT).
            self.pending_foreign_keys.truncate(pending);
        }
        if self.statement_depth == 0 && !self.pending_foreign_keys.is_empty() {
            // The outermost statement's end: its foreign key checks (see `foreign_keys`).
            if let Ok(value) = result {
                result = self.check_pending_foreign_keys().map(|()| value);
            }
        }
        if result.is_err() {
            self.undo_statement(start);
        }
        result
    }

    /// Marks the start of a statement (opening the transaction if none is open), for a
    /// statement that spans calls (a bulk load); `undo_statement` takes it back.
    pub(crate) fn statement_start(&mut self) -> StatementStart {
        let redo = self.redo.savepoint();
        let txn = self.txn();
        StatementStart {
            redo,
            changes: txn.changes.len(),
            overlay: txn.overlay.mark(),
            savepoints: txn.savepoints.len(),
        }
    }

    /// Undoes everything since `start`, which must have been taken in the transaction
    /// still open. The row locks taken since stay held until the transaction ends (see
    /// `rollback_to_savepoint`).
    pub(crate) fn undo_statement(&mut self, start: StatementStart) {
        self.redo.rollback_to(start.redo);
        let txn = self.txn.as_mut().expect("statement inside a transaction");
        txn.changes.truncate(start.changes);
        txn.overlay.undo_to(start.overlay);
        txn.savepoints.truncate(start.savepoints);
    }

    /// `SAVEPOINT name`: marks the current point of the transaction (opening one if none
    /// is open), which `rollback_to_savepoint` goes back to. A name given again names the
    /// new point; the older one comes back once the newer is released (PostgreSQL's rule).
    /// A savepoint costs what a statement's start does: a redo position and two counts.
    pub fn savepoint(&mut self, name: &str) {
        let start = self.statement_start();
        self.txn().savepoints.push(Savepoint { name: name.to_string(), start });
    }

    /// `ROLLBACK TO SAVEPOINT name`: undoes every change made since the savepoint (private
    /// redo, overlay, change list: statement-level atomicity's undo), drops the savepoints
    /// set after it and keeps it, so that it can be rolled back to again.
    ///
    /// The row locks taken after the savepoint stay held until the transaction ends.
    /// PostgreSQL releases them; keeping them is safe (a lock held longer only makes
    /// another transaction wait longer, and the undone rows' locks guard nothing the
    /// transaction will commit) and keeps the lock manager free of per-savepoint lists.
    pub fn rollback_to_savepoint(&mut self, name: &str) -> DbResult<()> {
        let index = self.savepoint_index(name)?;
        let txn = self.txn.as_mut().expect("a savepoint was found, so a transaction is open");
        let mut start = txn.savepoints[index].start.clone();
        // Back to the point it marks, keeping it (and the older ones).
        start.savepoints = index + 1;
        self.undo_statement(start);
        Ok(())
    }

    /// `RELEASE SAVEPOINT name`: forgets the savepoint and every one set after it; their
    /// changes stay in the transaction.
    pub fn release_savepoint(&mut self, name: &str) -> DbResult<()> {
        let index = self.savepoint_index(name)?;
        self.txn().savepoints.truncate(index);
        Ok(())
    }

    /// The position of the newest savepoint called `name` (3B001 if there is none).
    fn savepoint_index(&self, name: &str) -> DbResult<usize> {
        self.txn
            .as_ref()
            .and_then(|txn| txn.savepoints.iter().rposition(|s| s.name == name))
            .ok_or_else(|| DbError::NoSuchSavepoint(name.to_string()))
    }

    /// The id of the open transaction, if any.
    pub(crate) fn transaction_id(&self) -> Option<TxnId> {
        self.txn.as_ref().map(|txn| txn.id)
    }

    /// The schemas of every table (the `v$` views excluded), by name: what a client's
    /// catalog queries (psql's `\d`) are answered from.
    pub fn table_schemas(&self) -> Vec<Arc<TableSchema>> {
        self.db.read_catalog(|st| st.schemas().cloned().collect())
    }

    /// The schema of `table`.
    pub fn schema_of(&self, table: &str) -> DbResult<Arc<TableSchema>> {
        self.db.read_catalog(|st| Ok(st.table(table)?.schema.clone()))
    }

    /// Locks a row, then reads it as this transaction sees it (see `LockedRow`).
    ///
    /// No shared `Arc` is cloned here (the database's, the schema's): with sessions on
    /// both CPUs every clone and drop moves the counter's cache line between them.
    ///
    /// With `known`, a read of the row made at a `ReadPoint` before the lock: if no commit
    /// was applied and this transaction changed nothing since, the row is still that one
    /// and is not read again (a row changes only under its lock, and its changer applies
    /// the change before it lets go), and the schema is not checked.
    fn lock_and_read(
        &mut self,
        table: &str,
        key: &Key,
        expected: Option<&Arc<TableSchema>>,
        known: Option<(&Option<Row>, ReadPoint)>,
    ) -> DbResult<LockedRow> {
        // Every row an INSERT, UPDATE or DELETE changes comes through here.
        self.rows_locked = self.rows_locked.wrapping_add(1);
        if self.rows_locked.is_multiple_of(CANCEL_CHECK_ROWS) {
            self.check_cancel()?;
        }
        let RowLock { acquired, .. } = self.lock_in_txn(table, key)?;
        let Session { db, txn, own_rows_at_start, .. } = self;
        let txn = txn.as_mut().expect("the lock began the transaction");
        if let Some((row, since)) = known {
            // A row read as a statement's start showed it (`dml_with`) may be one the
            // statement has changed since: read again.
            if since.still_current(db, txn) && own_rows_at_start.is_none() {
                return Ok(LockedRow { schema_current: true, row: row.clone(), acquired });
            }
        }
        // Read after the lock: a transaction we waited for may have changed the row.
        let own = txn.own(table, key);
        db.read_key(key, |st| {
            let t = st.table(table)?;
            let row = match own {
                Some(own) => own.clone(),
                None => t.rows.get(key).cloned(),
            };
            Ok(LockedRow {
                schema_current: expected.is_none_or(|e| Arc::ptr_eq(e, &t.schema)),
                row,
                acquired,
            })
        })
    }

    /// Checks that `row` (primary key `key`, being inserted or replacing the row of that
    /// key) repeats no other row's values in a unique index of `schema`, as this
    /// transaction sees the rows. Each unique value is locked first (a lock of its own,
    /// named after the index, held to the transaction's end): two transactions giving
    /// rows the same value meet on it, the second waits for the first to end and then
    /// finds its row (or not, if it rolled back).
    fn check_unique(&mut self, table: &str, schema: &TableSchema, key: &Key, row: &[Value]) -> DbResult<()> {
        for (position, index) in schema.indexes.iter().enumerate().filter(|(_, i)| i.unique) {
            let values: Key = index.columns.iter().map(|&c| row[c].clone()).collect();
            if values.iter().any(Value::is_null) {
                continue; // NULLs are distinct
            }
            self.lock_in_txn(&format!("{table}\u{0}{}", index.name), &values)?;
            let clash =
                |other: &[Value]| index.columns.iter().zip(values.iter()).all(|(&c, v)| other[c] == *v);
            let own = self.own_rows(table);
            let mine_clash = own.iter().any(|(k, r)| k != key && r.as_deref().is_some_and(clash));
            let committed = self.db.snapshot().index_rows(table, position, &values)?;
            let committed_clash = committed.iter().any(|r| {
                let k = schema.key_of(r);
                // As this transaction sees it: its own version, if it changed the row.
                k != *key
                    && own
                        .iter()
                        .find(|(o, _)| *o == k)
                        .is_none_or(|(_, mine)| mine.as_deref().is_some_and(clash))
            });
            if mine_clash || committed_clash {
                let names: Vec<&str> =
                    index.columns.iter().map(|&c| schema.columns[c].name.as_str()).collect();
                return Err(DbError::DuplicateValue {
                    index: index.name.clone(),
                    values: format!("{})=({}", names.join(", "), format_key(&values)),
                });
            }
        }
        Ok(())
    }

    /// Locks `key` of `table` (a row, or a name with no row behind it: a unique index's
    /// value) for the transaction, beginning it if needed, the wait timed as the
    /// session's `enq: TX - row lock contention`.
    #[inline]
    fn lock_in_txn(&mut self, table: &str, key: &Key) -> DbResult<RowLock> {
        let timed = self.redo.timed_statistics();
        let mut signal = None;
        let on_busy = if self.row_locks_fail_when_taken {
            OnBusy::Fail
        } else if self.defer_lock_waits {
            OnBusy::Defer(&mut signal)
        } else {
            OnBusy::Sleep
        };
        let Session { db, entry, txn, txn_ids, spare_txn, .. } = self;
        let txn = txn.get_or_insert_with(|| Txn::begin(txn_ids.take(db), spare_txn));
        // Shown as the session's wait while it lasts; forgotten if the lock was free.
        let started = timed.then(Stamp::now);
        entry.begin_wait(DbEvent::RowLockContention, started);
        let mut slept = false;
        let lock = db.locks.lock_row(txn.id, &mut txn.held, table, key, &entry.cancel, &mut slept, on_busy);
        self.lock_attempted(lock, started, slept, signal)
    }

    /// Ends a lock attempt's wait (`lock_in_txn`'s and `lock_key_shared`'s), or keeps it
    /// for the caller when it was deferred (it goes on, shown as the session's).
    fn lock_attempted(
        &mut self,
        lock: DbResult<RowLock>,
        started: Option<Stamp>,
        slept: bool,
        signal: Option<Arc<crate::lock_wait::LockWaitSignal>>,
    ) -> DbResult<RowLock> {
        if let (Err(DbError::LockWaitDeferred), Some(signal)) = (&lock, signal) {
            let txn = self.txn.as_ref().expect("a lock wait inside a transaction").id;
            self.keep_lock_wait(crate::lock_wait::PendingLockWait::new(txn, signal, started));
            return lock;
        }
        let timed = self.redo.timed_statistics();
        let waited = lock_waited(slept, started);
        self.entry.end_wait(DbEvent::RowLockContention, waited, timed);
        self.db.sql_counters.record_row_lock_wait(waited, timed);
        lock
    }

    /// Locks `key` of the lock namespace `name` in share mode for the transaction (a
    /// foreign key's parent key: see `foreign_keys`), timed as `lock_in_txn` is.
    pub(crate) fn lock_key_shared(&mut self, name: &str, key: &Key) -> DbResult<()> {
        let timed = self.redo.timed_statistics();
        let mut signal = None;
        let on_busy = if self.defer_lock_waits { OnBusy::Defer(&mut signal) } else { OnBusy::Sleep };
        let Session { db, entry, txn, txn_ids, spare_txn, .. } = self;
        let txn = txn.get_or_insert_with(|| Txn::begin(txn_ids.take(db), spare_txn));
        let started = timed.then(Stamp::now);
        entry.begin_wait(DbEvent::RowLockContention, started);
        let mut slept = false;
        let lock =
            db.locks.lock_row_shared(txn.id, &mut txn.held, name, key, &entry.cancel, &mut slept, on_busy);
        self.lock_attempted(lock, started, slept, signal).map(|_| ())
    }

    /// Locks `key` of the lock namespace `name` exclusively for the transaction.
    pub(crate) fn lock_key_exclusive(&mut self, name: &str, key: &Key) -> DbResult<()> {
        self.lock_in_txn(name, key).map(|_| ())
    }

    /// Locks the row with primary key `key`, then reads it as this transaction sees it:
    /// the row loop of an UPDATE or DELETE by exact keys, which reads each row once, under
    /// its lock. Returns the row, and whether the lock was taken now (so that a caller
    /// finding nothing to change can let it go: `unlock_row`).
    pub(crate) fn lock_then_read(&mut self, table: &str, key: &Key) -> DbResult<(Option<Row>, bool)> {
        self.statement(|s| {
            s.lock_and_read(table, key, None, None).map(|locked| (locked.row, locked.acquired))
        })
    }

    /// Releases a row lock `lock_then_read` took now, for a row the statement did not
    /// change.
    pub(crate) fn unlock_row(&mut self, table: &str, key: &Key) {
        let Session { db, txn, .. } = self;
        let txn = txn.as_mut().expect("a row lock is held inside a transaction");
        db.locks.unlock_row(txn.id, &mut txn.held, table, key);
    }

    fn log(&mut self, change: Change, table: &str, key: Key, row: Option<Row>) -> DbResult<()> {
        // A temporary table's change is kept in the transaction but never logged (see
        // `temp_tables`); the name is looked at only once the session has made one.
        if !(self.temp.made_any && crate::temp_tables::is_temporary(table)) {
            let mut bytes = std::mem::take(&mut self.encoded);
            bytes.clear();
            change.encode(&mut bytes);
            let logged = self.redo.log_change(&bytes);
            self.encoded = bytes;
            logged?;
        }
        let txn = self.txn.as_mut().expect("logging inside a transaction");
        txn.shards.add_key(&key);
        if let Change::Update { key: old_key, .. } | Change::Delete { key: old_key, .. } = &change {
            txn.shards.add_key(old_key);
        }
        txn.set_own(table, key, row);
        txn.changes.push(change);
        Ok(())
    }

    /// Inserts one row (values in column order). One user call (as the row calls below
    /// are: they may wait for a row lock, and a wait belongs to a call's DB time).
    pub fn insert(&mut self, table: &str, row: Vec<crate::Value>) -> DbResult<()> {
        self.user_call(|s| {
            let schema = s.schema_of(table)?;
            let mut row = row;
            if schema.rowid && row.len() == schema.visible_columns().len() {
                // The values of the columns a user sees: the row id is the table's to give.
                row.push(crate::Value::Null);
            }
            s.insert_with_schema(table, &schema, Row::from(row)).map(|_| ())
        })
    }

    /// As `insert`, with the table's schema already looked up (by a compiled INSERT).
    /// Its row lock keeps a DDL from changing the table until the transaction ends.
    /// `row` is new (not shared yet): it is checked in place and stored as it is.
    /// Returns the row as stored (its values converted to the column types), for
    /// RETURNING.
    pub(crate) fn insert_with_schema(
        &mut self,
        table: &str,
        schema: &Arc<TableSchema>,
        mut row: Row,
    ) -> DbResult<Row> {
        self.statement(move |s| {
            let values = Arc::get_mut(&mut row).expect("a row being built is not shared yet");
            if let Some(rowid) = schema.rowid_index() {
                if let Some(slot) = values.get_mut(rowid) {
                    *slot = crate::Value::Int(s.db.next_rowid(table)?);
                }
            }
            schema.check_row(values)?;
            if !schema.checks.is_empty() {
                s.check_constraints(table, schema, &row)?;
            }
            let key = schema.key_of(&row);
            if schema.indexes.iter().any(|i| i.unique) {
                s.check_unique(table, schema, &key, &row)?;
            }
            let LockedRow { schema_current: current, row: existing, .. } =
                s.lock_and_read(table, &key, Some(schema), None)?;
            if !current {
                // A DDL replaced the table between the schema's lookup and the lock (which
                // now keeps it from changing): the row was built for the old one.
                return Err(DbError::Unsupported(format!(
                    "inserting into \"{table}\" while another session replaced it; run the statement again"
                )));
            }
            if existing.is_some() {
                return Err(DbError::DuplicateKey {
                    constraint: schema.primary_key_name(),
                    key: format_key(&key),
                });
            }
            let stored = row;
            s.log(
                Change::Insert { table: table.to_string(), row: stored.clone() },
                table,
                key,
                Some(stored.clone()),
            )?;
            if !schema.foreign_keys.is_empty() {
                s.enforce_foreign_keys(RowChange::new(table, schema.clone(), None, Some(stored.clone())))?;
            }
            Ok(stored)
        })
    }

    /// Replaces the row with primary key `key` by `row`. Returns whether the row existed.
    pub fn update(&mut self, table: &str, key: &Key, row: Vec<crate::Value>) -> DbResult<bool> {
        self.user_call(|s| s.update_call(table, key, row))
    }

    fn update_call(&mut self, table: &str, key: &Key, row: Vec<crate::Value>) -> DbResult<bool> {
        self.statement(|s| {
            let existing = s.lock_and_read(table, key, None, None)?.row;
            let schema = s.schema_of(table)?;
            if existing.is_none() {
                return Ok(false);
            }
            s.update_locked(table, &schema, key, Row::from(row))?;
            Ok(true)
        })
    }

    /// Replaces a row this transaction has locked and read (UPDATE's row loop, after
    /// `select_for_update`): no second lock or read. Inside the caller's statement.
    /// `row` is new (not shared yet): it is checked in place and stored as it is.
    /// Returns the new row as stored, for RETURNING.
    pub(crate) fn update_locked(
        &mut self,
        table: &str,
        schema: &TableSchema,
        key: &Key,
        row: Row,
    ) -> DbResult<Row> {
        if schema.foreign_keys.is_empty() && !self.db.has_foreign_keys() {
            return self.update_row(table, schema, key, row);
        }
        self.statement(|s| {
            let old = s.get(table, key)?;
            let stored = s.update_row(table, schema, key, row)?;
            s.enforce_foreign_keys(RowChange::new(
                table,
                Arc::new(schema.clone()),
                old,
                Some(stored.clone()),
            ))?;
            Ok(stored)
        })
    }

    /// `update_locked` without the foreign keys: the row checked, then logged.
    pub(crate) fn update_row(
        &mut self,
        table: &str,
        schema: &TableSchema,
        key: &Key,
        mut row: Row,
    ) -> DbResult<Row> {
        schema.check_row(Arc::get_mut(&mut row).expect("a row being built is not shared yet"))?;
        if !schema.checks.is_empty() {
            self.check_constraints(table, schema, &row)?;
        }
        let new_key = schema.key_of(&row);
        if schema.indexes.iter().any(|i| i.unique) {
            self.check_unique(table, schema, key, &row)?;
        }
        if &new_key != key {
            let clash = self.lock_and_read(table, &new_key, None, None)?.row;
            if clash.is_some() {
                return Err(DbError::DuplicateKey {
                    constraint: schema.primary_key_name(),
                    key: format_key(&new_key),
                });
            }
            self.txn().set_own(table, key.clone(), None);
        }
        let stored = row;
        self.log(
            Change::Update { table: table.to_string(), key: key.clone(), row: stored.clone() },
            table,
            new_key,
            Some(stored.clone()),
        )?;
        Ok(stored)
    }

    /// Deletes the row with primary key `key`. Returns whether it existed.
    pub fn delete(&mut self, table: &str, key: &Key) -> DbResult<bool> {
        self.user_call(|s| s.delete_call(table, key))
    }

    fn delete_call(&mut self, table: &str, key: &Key) -> DbResult<bool> {
        self.statement(|s| {
            let existing = s.lock_and_read(table, key, None, None)?.row;
            if existing.is_none() {
                return Ok(false);
            }
            s.delete_locked(table, key)?;
            Ok(true)
        })
    }

    /// Deletes a row this transaction has locked and read (DELETE's row loop).
    pub(crate) fn delete_locked(&mut self, table: &str, key: &Key) -> DbResult<()> {
        if !self.db.has_foreign_keys() {
            return self.log_delete(table, key);
        }
        self.statement(|s| {
            let old = s.get(table, key)?;
            s.log_delete(table, key)?;
            let schema = s.schema_of(table)?;
            s.enforce_foreign_keys(RowChange::new(table, schema, old, None))
        })
    }

    /// `delete_locked` without the foreign keys.
    pub(crate) fn log_delete(&mut self, table: &str, key: &Key) -> DbResult<()> {
        self.log(Change::Delete { table: table.to_string(), key: key.clone() }, table, key.clone(), None)
    }

    /// Locks the row with primary key `key` and returns it as this transaction sees it
    /// (SELECT ... FOR UPDATE): a read-modify-write under the lock loses no update.
    pub fn select_for_update(&mut self, table: &str, key: &Key) -> DbResult<Option<Row>> {
        self.user_call(|s| s.statement(|s| s.lock_and_read(table, key, None, None).map(|locked| locked.row)))
    }

    /// As `select_for_update`, for a row read as `read` at `point` (UPDATE's and DELETE's
    /// row loop): not read again if nothing can have changed it since.
    pub(crate) fn select_for_update_read_at(
        &mut self,
        table: &str,
        key: &Key,
        read: &Row,
        point: ReadPoint,
    ) -> DbResult<Option<Row>> {
        let known = Some(read.clone());
        self.statement(|s| s.lock_and_read(table, key, None, Some((&known, point))).map(|locked| locked.row))
    }

    /// The point from which rows read now stay current while nothing is applied and this
    /// transaction changes nothing (see `lock_and_read`). Take it before the reads.
    pub(crate) fn read_point(&self) -> ReadPoint {
        ReadPoint {
            applied: self.db.state.applies(),
            own_changes: self.txn.as_ref().map_or(0, |txn| txn.overlay.mark()),
        }
    }

    /// The row with primary key `key` as this session sees it.
    pub fn get(&self, table: &str, key: &Key) -> DbResult<Option<Row>> {
        self.db.read_key(key, |st| self.get_in(st, table, key))
    }

    /// As `get`, reading the committed rows from `snap`, so that all the lookups of one
    /// statement see the same committed state.
    pub(crate) fn get_in(&self, shard: &Shard, table: &str, key: &Key) -> DbResult<Option<Row>> {
        let t = shard.table(table)?;
        if let Some(own) = self.txn.as_ref().and_then(|txn| txn.own(table, key)) {
            return Ok(own.clone());
        }
        Ok(t.rows.get(key).cloned())
    }

    /// Every row of `table` as this session sees it, in primary-key order.
    pub fn scan(&self, table: &str) -> DbResult<Vec<Row>> {
        let snap = self.db.snapshot();
        let t = snap.table(table)?;
        let mut rows: std::collections::BTreeMap<Key, Row> =
            t.rows.iter().map(|(k, r)| (k.clone(), r.clone())).collect();
        if let Some(txn) = &self.txn {
            for (key, own) in txn.overlay.rows(table).into_iter().flatten() {
                match own {
                    Some(r) => rows.insert(key.clone(), r.clone()),
                    None => rows.remove(key),
                };
            }
        }
        Ok(rows.into_values().collect())
    }

    /// Runs a DDL change as its own transaction, after committing the open one: one user
    /// call (it may wait for the table's lock).
    pub(crate) fn ddl(
        &mut self,
        table: &str,
        check: impl FnOnce(&DbState) -> DbResult<Change>,
    ) -> DbResult<()> {
        self.user_call(|s| s.ddl_call(&[table], |st| check(st).map(|c| vec![c])))
    }

    /// A DDL statement that changes several tables (a foreign key's child and parent):
    /// each is locked, in the order given, and `check` gives the changes of all of them,
    /// logged as one transaction.
    pub(crate) fn ddl_tables(
        &mut self,
        tables: &[&str],
        check: impl FnOnce(&DbState) -> DbResult<Vec<Change>>,
    ) -> DbResult<()> {
        self.user_call(|s| s.ddl_call(tables, check))
    }

    /// A DDL statement on `tables`, a transaction of its own: under the tables' locks,
    /// `check` reads the state (all of it, with the locks held nothing of the tables
    /// changes) and gives the changes to log.
    fn ddl_call(
        &mut self,
        tables: &[&str],
        check: impl FnOnce(&DbState) -> DbResult<Vec<Change>>,
    ) -> DbResult<()> {
        if let Some(view) = tables.iter().find(|t| crate::views::is_view(t)) {
            return Err(crate::views::read_only(view));
        }
        // The open transaction is committed first (as Oracle's DDL does); the temporary
        // tables' ON COMMIT actions wait for the end of the user's transaction
        // (PostgreSQL's DDL commits nothing: `CREATE TEMP TABLE t ... ON COMMIT DROP;
        // CREATE INDEX ON t ...` in one transaction block must find t).
        let defer = self.defer_durability;
        self.user_call(|s| s.commit_call(CommitOptions::DEFAULT, defer))?;
        let result = self.statement(|s| {
            let db = s.db.clone();
            let entry = s.entry.clone();
            let timed = s.redo.timed_statistics();
            for (i, table) in tables.iter().enumerate() {
                if tables[..i].contains(table) {
                    continue;
                }
                let txn = s.txn();
                let started = timed.then(Stamp::now);
                entry.begin_wait(DbEvent::RowLockContention, started);
                let mut slept = false;
                let lock = db.locks.lock_table(txn.id, &mut txn.held, table, &entry.cancel, &mut slept);
                let waited = lock_waited(slept, started);
                entry.end_wait(DbEvent::RowLockContention, waited, timed);
                db.sql_counters.record_row_lock_wait(waited, timed);
                lock?;
            }
            let changes = check(&db.state.snapshot())?;
            for change in changes {
                // A temporary relation's DDL is not logged (see `temp_tables`).
                if !crate::temp_tables::is_temporary(change.table()) {
                    let mut bytes = Vec::new();
                    change.encode(&mut bytes);
                    s.redo.log_change(&bytes)?;
                }
                let txn = s.txn();
                txn.shards = ShardSet::ALL;
                txn.changes.push(change);
            }
            Ok(())
        });
        // DDL is a transaction of its own: if its commit fails (an interrupted wait for a
        // log file leaves the transaction open), it is undone whole. Its commit is not
        // the end of a user's transaction: no ON COMMIT action runs at it.
        let defer = self.defer_durability;
        match result.and_then(|()| self.user_call(|s| s.commit_call(CommitOptions::DEFAULT, defer))) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.rollback();
                Err(e)
            }
        }
    }

    pub fn create_table(&mut self, schema: TableSchema) -> DbResult<()> {
        let name = schema.name.clone();
        if crate::views::is_view(&name) {
            return Err(DbError::TableExists(name));
        }
        // The tables its foreign keys reference are locked too: none is dropped, or
        // changes its keys, until the table exists.
        let parents: Vec<String> = schema.foreign_keys.iter().map(|f| f.parent.clone()).collect();
        let mut tables: Vec<&str> = vec![&name];
        tables.extend(parents.iter().map(String::as_str));
        self.ddl_tables(&tables, |st| {
            // Tables and indexes share one namespace, as PostgreSQL's relations do.
            let taken = |n: &str| st.has_table(n) || index_named(st, n).is_some();
            if taken(&name) {
                return Err(DbError::TableExists(name.clone()));
            }
            if let Some(index) = schema.indexes.iter().find(|i| taken(&i.name) || i.name == name) {
                return Err(DbError::TableExists(index.name.clone()));
            }
            // Checked against the parent when the statement was read; still there?
            for fk in schema.foreign_keys.iter().filter(|f| f.parent != name) {
                crate::foreign_keys::column_positions(st.table(&fk.parent)?.schema, &fk.parent_columns)?;
            }
            Ok(vec![Change::CreateTable(schema)])
        })
    }

    /// Adds index `index` to `table`, built from its rows; a unique one fails with
    /// 23505 on rows that already repeat a value.
    pub fn create_index(&mut self, table: &str, index: crate::schema::IndexDef) -> DbResult<()> {
        self.ddl(table, |st| {
            if st.has_table(&index.name) || index_named(st, &index.name).is_some() {
                return Err(DbError::TableExists(index.name));
            }
            let t = st.table(table)?;
            let schema = t.schema.with_index(index.clone())?;
            if index.unique {
                let mut seen = std::collections::BTreeSet::new();
                for (_, row) in t.rows.iter() {
                    let values: Vec<Value> = index.columns.iter().map(|&c| row[c].clone()).collect();
                    if !values.iter().any(Value::is_null) && !seen.insert(values.clone()) {
                        return Err(DbError::DuplicateValue {
                            index: index.name.clone(),
                            values: format_key(&values),
                        });
                    }
                }
            }
            Ok(Change::AlterTable(schema))
        })
    }

    /// Drops the index `name` (of whichever table has it).
    pub fn drop_index(&mut self, name: &str) -> DbResult<()> {
        let table = self
            .db
            .read_catalog(|st| {
                st.schemas().find(|s| s.indexes.iter().any(|i| i.name == name)).map(|s| s.name.clone())
            })
            .ok_or_else(|| DbError::UnknownIndex(name.to_string()))?;
        self.ddl(&table, |st| {
            let mut schema = TableSchema::clone(st.table(&table)?.schema);
            let before = schema.indexes.len();
            schema.indexes.retain(|i| i.name != name);
            if schema.indexes.len() == before {
                return Err(DbError::UnknownIndex(name.to_string()));
            }
            Ok(Change::AlterTable(schema))
        })
    }

    /// Drops `table` (refused while another table's foreign key references it).
    pub fn drop_table(&mut self, table: &str) -> DbResult<()> {
        self.drop_table_checked(table, &[table.to_string()], false)
    }

    /// Empties `table` (refused while another table's foreign key references it).
    pub fn truncate(&mut self, table: &str) -> DbResult<()> {
        self.truncate_tables(&[table.to_string()], false)
    }

    /// Commits the open transaction in the mode `options`, the session and the system
    /// give. Returns None if there was nothing to commit. In deferred-durability mode a
    /// commit that must wait leaves its wait on the session instead
    /// (`take_durability_wait`).
    pub fn commit(&mut self, options: CommitOptions) -> DbResult<Option<CommitReceipt>> {
        let defer = self.defer_durability;
        let receipt = self.user_call(|s| s.commit_call(options, defer))?;
        if self.temp.has_on_commit() {
            self.temp_tables_at_commit();
        }
        Ok(receipt)
    }

    /// Deferred-durability mode, for a caller whose thread serves many clients (an async
    /// server): a commit that must wait for `log file sync` does everything else (its
    /// changes are visible, its locks released), then leaves the wait on the session, and
    /// the caller takes it with [`Session::take_durability_wait`] and ends it (awaits it)
    /// before it acknowledges anything. The statements of a multi-statement call still
    /// wait inside the call where Oracle's rules say so (an explicit COMMIT WRITE WAIT),
    /// blocking through the thread's blocking hook (`redo::blocking`).
    pub fn set_deferred_durability(&mut self, on: bool) {
        self.defer_durability = on;
    }

    /// In deferred-durability mode: whether a commit that must wait first tries to write
    /// the log itself when the log writer is idle (a foreground write; then it leaves no
    /// wait). The write holds the calling thread for one write and sync, so a server
    /// turns it on only while no other client has a request in progress (a quiet system,
    /// where it saves the two thread hand-offs of a deferred wait).
    pub fn set_foreground_log_write(&mut self, on: bool) {
        self.foreground_log_write = on;
    }

    /// Whether a commit left a durability wait for the caller to take.
    pub fn has_durability_wait(&self) -> bool {
        self.durability_wait.is_some()
    }

    /// The wait for the durability of the commits made since the last take, in
    /// deferred-durability mode; None if none of them has to wait.
    pub fn take_durability_wait(&mut self) -> Option<crate::durability::DurabilityWait> {
        self.durability_wait.take()
    }

    /// Keeps `wait` for the caller to take, joined with any it has not taken yet.
    pub(crate) fn defer_wait(&mut self, wait: redo::DurableWait) {
        let wait = crate::durability::DurabilityWait::new(wait, self.entry.clone());
        self.durability_wait = Some(match self.durability_wait.take() {
            Some(earlier) => earlier.join(wait),
            None => wait,
        });
    }

    pub(crate) fn commit_call(
        &mut self,
        options: CommitOptions,
        defer: bool,
    ) -> DbResult<Option<CommitReceipt>> {
        self.txn_timestamp.set(None);
        let Some(mut txn) = self.txn.take() else { return Ok(None) };
        if txn.changes.is_empty() {
            self.db.locks.release_all(txn.id, &mut txn.held);
            self.spare_txn = Some(txn.recycle());
            self.redo.rollback()?;
            return Ok(None);
        }
        if !self.redo.has_private_redo() {
            // Changes of temporary tables only: committed without the log (`temp_tables`).
            if let Err(e) = self.db.apply_unlogged(&txn.changes, txn.shards) {
                // Validated changes of the session's own tables: a bug, as in
                // `apply_committed`.
                panic!("a validated change of a temporary table does not apply: {e}");
            }
            self.db.locks.release_all(txn.id, &mut txn.held);
            self.spare_txn = Some(txn.recycle());
            self.redo.rollback()?;
            return Ok(None);
        }
        let db = &self.db;
        let Txn { id, ref changes, shards, ref mut held, .. } = *txn;
        // Not cancellable: once the commit record is in the log buffer the commit has
        // happened, so its wait for `log file sync` runs to its end whatever the cancel
        // flag says (PostgreSQL, too, only warns when a commit's wait is interrupted).
        let apply = |receipt: &CommitReceipt| {
            db.apply_committed(CopiedCommit {
                scn: receipt.scn,
                lsn: receipt.lsn,
                changes,
                shards,
                txn: id,
                held,
            });
        };
        let result = if defer && self.foreground_log_write {
            self.redo.commit_writing_if_idle(options, apply)
        } else if defer {
            self.redo.commit_deferring_wait(options, apply)
        } else {
            self.redo.commit_then(options, apply).map(|receipt| (receipt, None))
        };
        if let Err(e @ redo::RedoError::Interrupted(_)) = result {
            // Cancelled or timed out while waiting for a log file, before anything reached
            // the log buffer: the redo session kept the transaction, so does this one
            // (locks, changes, savepoints), to be committed again or rolled back.
            debug_assert!(self.redo.transaction().is_some(), "an interrupted commit keeps its redo");
            self.txn = Some(txn);
            return Err(e.into());
        }
        // If the commit failed otherwise before its record reached the buffer, the locks
        // are still ours (the hook did not run): the transaction is gone either way.
        db.locks.release_all(txn.id, &mut txn.held);
        self.spare_txn = Some(txn.recycle());
        let (receipt, wait) = result?;
        if let Some(wait) = wait {
            self.defer_wait(wait);
        }
        Ok(Some(receipt))
    }

    /// Ends the session: rolls back its open transaction (as dropping it does).
    pub fn close(mut self) {
        self.rollback();
    }

    /// Rolls back the open transaction: nothing is written. The temporary tables made
    /// ON COMMIT DROP go too (in PostgreSQL they live only in their transaction).
    pub fn rollback(&mut self) {
        self.rollback_txn();
        if self.temp.has_on_commit() {
            self.temp_tables_at_rollback();
        }
    }

    pub(crate) fn rollback_txn(&mut self) {
        self.txn_timestamp.set(None);
        if let Some(mut txn) = self.txn.take() {
            self.db.locks.release_all(txn.id, &mut txn.held);
            self.spare_txn = Some(txn.recycle());
            let _ = self.redo.rollback();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.has_lock_wait() {
            // Its statement failed (it is not run again): the transaction waits no more.
            let _ = self.end_lock_wait();
        }
        self.rollback_txn();
        if self.temp.made_any {
            self.drop_temp_tables();
        }
        self.db.sessions.close(self.entry.sid);
        self.db.fetches.close(self.entry.sid);
        self.db.sequences.close_session(self.entry.sid);
    }
}

/// The text of the statement a user call runs, as `v$session` shows it.
pub(crate) enum SqlText<'a> {
    Borrowed(&'a str),
    /// A prepared statement's text, kept without a copy, and the counters its executions
    /// add to.
    Prepared(&'a Arc<str>, &'a crate::sql::cache::StatementStats),
}

/// What a user call returns, so that a terminated instance can answer every call with
/// its error (see `DbShared::termination`).
pub(crate) trait CallResult {
    fn terminated(error: DbError) -> Self;

    /// Whether the call stopped at a row lock to be run again (`lock_wait`): it counts
    /// as no user call and no execution.
    fn lock_wait_deferred(&self) -> bool {
        false
    }
}

impl<T> CallResult for DbResult<T> {
    fn terminated(error: DbError) -> Self {
        Err(error)
    }

    #[inline]
    fn lock_wait_deferred(&self) -> bool {
        matches!(self, Err(e) if matches!(e.kind(), DbError::LockWaitDeferred))
    }
}

impl CallResult for (Vec<crate::sql::QueryResult>, Option<DbError>) {
    fn terminated(error: DbError) -> Self {
        (Vec::new(), Some(error))
    }

    fn lock_wait_deferred(&self) -> bool {
        matches!(&self.1, Some(e) if matches!(e.kind(), DbError::LockWaitDeferred))
    }
}

/// What a SQL call (`Session::user_call_sql`) hands its caller, as the fetch statistics
/// count it: each result with rows is one fetch call of all its rows, since the embedded
/// API and the simple query protocol hand a whole result over at once. An opened cursor
/// hands nothing over: its fetches count themselves (`Cursor::fetch`). A new kind of call
/// result says here what it returns.
pub(crate) trait ReturnedRows {
    /// Calls `fetch` once per fetch call, with its number of rows.
    fn returned_rows(&self, fetch: &mut dyn FnMut(usize));

    /// The rows the call processed, as `v$sql.rows_processed` counts them: a query's rows,
    /// a DML statement's rows changed.
    fn processed_rows(&self) -> u64;
}

impl ReturnedRows for crate::sql::QueryResult {
    fn returned_rows(&self, fetch: &mut dyn FnMut(usize)) {
        if let crate::sql::QueryResult::Rows { rows, .. } = self {
            fetch(rows.len());
        }
    }

    fn processed_rows(&self) -> u64 {
        match self {
            crate::sql::QueryResult::Rows { rows, .. } => rows.len() as u64,
            crate::sql::QueryResult::Command { rows_affected, .. } => *rows_affected,
        }
    }
}

impl<T: ReturnedRows> ReturnedRows for DbResult<T> {
    fn returned_rows(&self, fetch: &mut dyn FnMut(usize)) {
        if let Ok(result) = self {
            result.returned_rows(fetch);
        }
    }

    fn processed_rows(&self) -> u64 {
        self.as_ref().map_or(0, ReturnedRows::processed_rows)
    }
}

impl ReturnedRows for Vec<crate::sql::QueryResult> {
    fn returned_rows(&self, fetch: &mut dyn FnMut(usize)) {
        for result in self {
            result.returned_rows(fetch);
        }
    }

    fn processed_rows(&self) -> u64 {
        self.iter().map(ReturnedRows::processed_rows).sum()
    }
}

/// A batch's results before its error (`execute_batch_until_error`): all were returned.
impl ReturnedRows for (Vec<crate::sql::QueryResult>, Option<DbError>) {
    fn returned_rows(&self, fetch: &mut dyn FnMut(usize)) {
        self.0.returned_rows(fetch);
    }

    fn processed_rows(&self) -> u64 {
        self.0.processed_rows()
    }
}

/// Rows affected (an array insert): no rows returned.
impl ReturnedRows for u64 {
    fn returned_rows(&self, _fetch: &mut dyn FnMut(usize)) {}

    fn processed_rows(&self) -> u64 {
        *self
    }
}

pub(crate) fn format_key(key: &[Value]) -> String {
    key.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

/// The table that has an index named `name`, if one has.
pub(crate) fn index_named<'a>(st: &'a DbState, name: &str) -> Option<&'a Arc<TableSchema>> {
    st.schemas().find(|s| s.indexes.iter().any(|i| i.name == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: i64) -> Key {
        Key::from_elem(Value::Int(i), 1)
    }

    fn row(i: i64) -> Option<Row> {
        Some(Row::from(vec![Value::Int(i)]))
    }

    /// What the overlay shows of `table`, in key order.
    fn shown(overlay: &Overlay, table: &str) -> Vec<(i64, Option<i64>)> {
        let int = |v: &Value| if let Value::Int(i) = v { *i } else { panic!("{v:?}") };
        overlay
            .rows(table)
            .into_iter()
            .flatten()
            .map(|(k, r)| (int(&k[0]), r.as_ref().map(|r| int(&r[0]))))
            .collect()
    }

    /// A commit that does not apply (a bug) leaves part of it in the committed state: the
    /// instance stops serving at once (no session reads it, no image is written of it),
    /// and a restart recovers the commit whole from the redo.
    #[test]
    fn a_commit_that_fails_to_apply_terminates_the_instance_and_recovery_restores_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let db = Arc::new(crate::awr::open_test_database(dir.path()));
            let mut s = db.session();
            s.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", &[]).expect("create");
            s.execute("INSERT INTO t VALUES (1, 1)", &[]).expect("row 1");
            s.execute("COMMIT", &[]).expect("commit 1");
            let mut reader = db.session();
            db.shared.state.fail_next_apply.store(true, SeqCst);
            let committer = {
                let db = db.clone();
                std::thread::spawn(move || {
                    let mut s = db.session();
                    s.execute("INSERT INTO t VALUES (2, 2)", &[]).expect("row 2");
                    s.execute("INSERT INTO t VALUES (3, 3)", &[]).expect("row 3");
                    let _ = s.execute("COMMIT", &[]);
                })
            };
            assert!(committer.join().is_err(), "the session whose apply failed panics (a bug)");
            assert!(
                matches!(db.termination(), Some(Termination::ApplyFailed { .. })),
                "{:?}",
                db.termination()
            );
            let e = reader.execute("SELECT * FROM t", &[]).expect_err("no read after the failure");
            assert!(matches!(e, DbError::InstanceTerminated(_)), "{e}");
            assert_eq!(e.sqlstate(), "XX000");
            let e = db.checkpoint().expect_err("no image of a half-applied state");
            assert!(matches!(e, DbError::InstanceTerminated(_)), "{e}");
            assert!(checkpoint::list_images(&FileStorage, dir.path()).unwrap().is_empty());
        }
        let db = crate::awr::open_test_database(dir.path());
        let result = db.session().execute("SELECT id FROM t ORDER BY id", &[]).expect("read");
        let rows = result.rows();
        assert_eq!(rows.len(), 3, "the commit that failed to apply is recovered whole: {rows:?}");
        assert!(db.termination().is_none());
    }

    /// After a commit fails to apply, the watermark of applied commits stays below it and
    /// no checkpoint is ever taken again: a commit already waiting for one (`log file
    /// switch (checkpoint incomplete)`, here because images cannot be written) must not
    /// wait forever. The termination ends its call with the termination's error, and its
    /// transaction never happened; a restart recovers every acknowledged commit.
    #[test]
    fn a_commit_that_fails_to_apply_ends_the_calls_waiting_for_a_checkpoint_that_can_no_longer_come() {
        use redo::fault::{Fault, FaultOp, FaultyStorage};
        const INCOMPLETE: &str = "log file switch (checkpoint incomplete)";
        let dir = tempfile::tempdir().expect("tempdir");
        let storage = FaultyStorage::default();
        storage.inject(Fault {
            op: FaultOp::Create,
            path_contains: "image-".into(),
            skip: 0,
            errno: libc::ENOSPC,
        });
        let mut log = redo::LogConfig::new(".");
        log.log_file_size = 64 << 10;
        log.log_buffer = 64 << 10;
        log.sync_method = redo::SyncMethod::Fdatasync;
        let config =
            DbConfig { log, checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..DbConfig::default() };
        let db = Arc::new(Database::open_with(dir.path(), config.clone(), Arc::new(storage)).expect("open"));
        let mut s = db.session();
        s.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, pad TEXT)", &[]).expect("create");
        let insert = |s: &mut Session, id: i64, pad: usize| {
            s.execute("INSERT INTO t VALUES ($1, $2)", &[Value::Int(id), Value::Text("x".repeat(pad))])
                .unwrap_or_else(|e| panic!("insert {id}: {e}"));
        };
        // Commit until the log writes into the last group it may use, with less than 20 KB
        // left in it: room for a small commit, not for one of 24 KB.
        let left = || {
            let status = db.shared.log.status();
            status.activated_end.0.saturating_sub(status.reserved_end.0)
        };
        let mut acknowledged = 0;
        while !db.shared.log.checkpoint_needed() || left() > 20 << 10 {
            acknowledged += 1;
            assert!(acknowledged < 500, "the log never filled");
            insert(&mut s, acknowledged, 2000);
            s.execute("COMMIT", &[]).expect("commit");
        }
        let (done, finished) = std::sync::mpsc::channel();
        let waiter = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut w = db.session();
                for id in 10_000..10_012 {
                    insert(&mut w, id, 2000);
                }
                let _ = done.send(w.execute("COMMIT", &[]).map(|_| ()));
            })
        };
        let waiting = format!("SELECT count(*) FROM v$session WHERE event = '{INCOMPLETE}'");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while s.execute(&waiting, &[]).expect("v$session").rows()[0][0] != Value::Int(1) {
            assert!(std::time::Instant::now() < deadline, "the large commit never waited for the checkpoint");
            std::thread::sleep(Duration::from_millis(5));
        }
        // A small commit fits, and fails to apply.
        db.shared.state.fail_next_apply.store(true, SeqCst);
        let failing = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut f = db.session();
                f.execute("INSERT INTO t VALUES (20000, 'small')", &[]).expect("small row");
                let _ = f.execute("COMMIT", &[]);
            })
        };
        assert!(failing.join().is_err(), "the session whose apply failed panics (a bug)");
        let Some(Termination::ApplyFailed { scn, .. }) = db.termination() else {
            panic!("{:?}", db.termination())
        };
        assert!(db.shared.state.applied_scn() < scn, "the watermark stays below the failed commit");
        // The waiting commit ends, with the termination's error: nothing hangs.
        let result = finished.recv_timeout(Duration::from_secs(10)).expect("the waiting commit ended");
        let e = result.expect_err("the waiting commit cannot have happened");
        assert!(matches!(e, DbError::InstanceTerminated(_)), "{e}");
        assert_eq!(e.sqlstate(), "XX000");
        waiter.join().expect("waiter");
        let e = db.checkpoint().expect_err("no checkpoint of a state with a stuck watermark");
        assert!(matches!(e, DbError::InstanceTerminated(_)), "{e}");
        drop(s);
        drop(db);
        // Restarted (room for images again): every acknowledged commit and the one that
        // failed to apply are there, the interrupted one is not.
        let db = Database::open_with(dir.path(), config, Arc::new(FileStorage)).expect("reopen");
        let count = |sql: &str| db.session().execute(sql, &[]).expect(sql).rows()[0][0].clone();
        assert_eq!(count("SELECT count(*) FROM t WHERE id < 10000"), Value::Int(acknowledged));
        assert_eq!(count("SELECT count(*) FROM t WHERE id = 20000"), Value::Int(1));
        assert_eq!(count("SELECT count(*) FROM t WHERE id BETWEEN 10000 AND 19999"), Value::Int(0));
    }

    #[test]
    fn undoing_to_a_mark_puts_back_what_each_later_change_replaced() {
        let mut o = Overlay::default();
        o.set("a", key(1), row(10));
        o.set("a", key(2), row(20));
        let first = o.mark();
        o.set("a", key(1), row(11)); // replaces an entry
        o.set("a", key(3), None); // a delete, new
        o.set("b", key(1), row(100)); // a new table
        let second = o.mark();
        o.set("a", key(1), None); // replaced twice
        o.set("a", key(1), row(12));
        assert_eq!(shown(&o, "a"), [(1, Some(12)), (2, Some(20)), (3, None)]);
        assert_eq!(o.get("b", &key(1)), Some(&row(100)));

        o.undo_to(second);
        assert_eq!(shown(&o, "a"), [(1, Some(11)), (2, Some(20)), (3, None)]);
        o.undo_to(first);
        assert_eq!(shown(&o, "a"), [(1, Some(10)), (2, Some(20))]);
        assert_eq!(shown(&o, "b"), [], "the table's entries are gone");
        assert_eq!(o.get("a", &key(3)), None);
        o.undo_to(0);
        assert!(shown(&o, "a").is_empty() && o.mark() == 0);
    }

    /// Past `OWN_ROWS_LISTED` rows a table's list becomes a map: the same answers, in key
    /// order, and undo and clear work across the change (random keys against a model).
    #[test]
    fn own_rows_answer_the_same_listed_or_mapped() {
        let mut o = Overlay::default();
        let mut model: std::collections::BTreeMap<i64, Option<i64>> = Default::default();
        let mut x = 7u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..3 {
            let mut marks = Vec::new();
            for step in 0..(OWN_ROWS_LISTED as u64 * 3) {
                if step % 7 == 0 {
                    marks.push((o.mark(), model.clone()));
                }
                let k = (next() % 40) as i64;
                let v = if next() % 4 == 0 { None } else { Some(round * 1000 + step as i64) };
                o.set("t", key(k), v.map(|v| Row::from(vec![Value::Int(v)])));
                model.insert(k, v);
                assert_eq!(shown(&o, "t"), model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>());
                for probe in [k, (next() % 40) as i64] {
                    let want = model.get(&probe).map(|v| v.map(|v| Row::from(vec![Value::Int(v)])));
                    assert_eq!(o.get("t", &key(probe)), want.as_ref());
                }
            }
            // Back through the marks, newest first.
            while let Some((mark, then)) = marks.pop() {
                o.undo_to(mark);
                model = then;
                assert_eq!(shown(&o, "t"), model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>());
            }
            o.clear();
            model.clear();
            assert!(shown(&o, "t").is_empty());
        }
    }

    #[test]
    #[should_panic(expected = "past the log")]
    fn undoing_to_a_mark_past_the_log_is_a_bug() {
        let mut o = Overlay::default();
        o.set("a", key(1), row(1));
        let mark = o.mark();
        o.undo_to(0);
        o.undo_to(mark);
    }
}
