//! The public face of the redo log: [`RedoLog`] (open, recover, checkpoint, parameters,
//! statistics, shutdown) and [`LogSession`] (a transaction's private redo, commit in any
//! mode, wait for durability).
//!
//! # The path of a commit
//! 1. `LogSession::log_change` appends a change record to the session's private redo
//!    (no shared state touched). A transaction's redo is limited to half a log file, so
//!    its unit always fits in the log files open for writing.
//! 2. `LogSession::commit` resolves the mode (statement > session > system, with
//!    FORCE_WAIT overriding from above), reserves the unit's place and SCN in the log
//!    buffer, and copies the private redo plus the commit record in ONE contiguous unit.
//! 3. IMMEDIATE posts the log writer; BATCH posts it only if a background trigger is
//!    reached. NOWAIT returns here: "commit complete" before the redo is durable.
//! 4. WAIT waits for the durable LSN to pass the unit's end (`log file sync`): it runs
//!    the write itself if no write is in flight, else sleeps until the write that covers
//!    it completes. A session waiting for durability always gets a write, in BATCH mode
//!    too, as Oracle's foreground in `log file sync` posts LGWR.
//!
//! # LSNs by guarantee (asserted: durable <= written <= complete <= reserved)
//! - `reserved`: handed out to units (in the buffer's allocation section).
//! - `complete`: every byte below it is copied into the buffer.
//! - `written`: every byte below it has been written and synced by the writer.
//! - `durable`: published after the sync; a WAIT commit returns once it passes its end.
//!   (The writer publishes written and durable together, after the sync; they are kept
//!   as separate names because they carry different guarantees.)

use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::*};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::buffer::{CommitBacklog, LogBuffer};
use crate::clock::Stamp;
use crate::config::{CommitLogging, CommitWait, LogConfig, OpenMode, Scheduling};
use crate::durable::DurableWait;
use crate::error::{LogFailure, RedoError, Result};
use crate::format::{
    block_floor, encode_commit_record, encode_record, ControlRecord, Geometry, LogFileHeader, RecordKind,
    BLOCK_BYTES, COMMIT_PAYLOAD_BYTES, CONTROL_SLOT_BYTES, RECORD_HEADER_BYTES, RECORD_PAYLOAD_MAX,
    WRITE_MAX_BYTES,
};
use crate::interrupt::Interrupt;
use crate::recovery::{recover, BlockSources, RecoveredTxn, RecoveryReport};
use crate::signal::Signal;
use crate::stats::{commit_mode_index, Stat, StatsSet, StatsSnapshot, WaitEvent};
use crate::storage::{
    control_path, creating_control_path, log_file_path, parent_dir, AlignedBuf, FileMode, FileStorage,
    Storage, StorageFile,
};
use crate::types::{LogSeq, Lsn, Scn, TxnId};
use crate::writer::{lgwr_main, DurableWaiters, MemberWriters, Writer};

pub(crate) fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// State of one member of one log group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MemberState {
    InService = 0,
    /// A write or sync failed; out of service until its group is next opened.
    WriteFailed = 1,
    /// Recovery found it behind another member; out of service until its group is next opened.
    Stale = 2,
    /// The file could not be opened.
    Missing = 3,
}

impl MemberState {
    fn from_u8(v: u8) -> MemberState {
        match v {
            0 => MemberState::InService,
            1 => MemberState::WriteFailed,
            2 => MemberState::Stale,
            _ => MemberState::Missing,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            MemberState::InService => "",
            MemberState::WriteFailed => "INVALID",
            MemberState::Stale => "STALE",
            MemberState::Missing => "MISSING",
        }
    }
}

/// A member file and its state, for views.
#[derive(Clone, Debug)]
pub struct MemberInfo {
    pub group: u32,
    pub member: u32,
    pub path: PathBuf,
    pub state: MemberState,
}

/// A consistent-enough snapshot of the log's positions, for views and diagnostics.
#[derive(Clone, Debug)]
pub struct LogStatus {
    pub reserved_end: Lsn,
    pub complete: Lsn,
    pub written: Lsn,
    pub durable: Lsn,
    pub requested: Lsn,
    pub durable_commit: (Scn, Lsn),
    /// Sequence holding the reserved end (being filled).
    pub current_seq: LogSeq,
    /// Highest sequence opened for writing, and the end of its file.
    pub activated_seq: LogSeq,
    pub activated_end: Lsn,
    pub checkpoint_scan_from: Lsn,
    pub checkpoint_scn: Scn,
    pub failed: bool,
}

/// Options of one commit: `None` takes the session's setting, then the system's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitOptions {
    pub wait: Option<CommitWait>,
    pub logging: Option<CommitLogging>,
}

impl CommitOptions {
    pub const DEFAULT: CommitOptions = CommitOptions { wait: None, logging: None };

    pub fn new(wait: CommitWait, logging: CommitLogging) -> CommitOptions {
        CommitOptions { wait: Some(wait), logging: Some(logging) }
    }
}

/// A position in a session's private redo; see [`LogSession::savepoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedoSavepoint {
    bytes: usize,
    records: u64,
}

/// What a commit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitReceipt {
    pub txn: TxnId,
    pub scn: Scn,
    /// End of the commit's unit: the commit is durable once the durable LSN reaches it.
    pub lsn: Lsn,
    /// Whether the commit waited for durability (WAIT or FORCE_WAIT in effect).
    pub waited: bool,
    pub logging: CommitLogging,
}

/// The outcome of opening: what recovery found.
#[derive(Debug)]
pub struct Recovered {
    /// Committed transactions not reflected in the last checkpoint, in SCN order.
    pub transactions: Vec<RecoveredTxn>,
    pub report: RecoveryReport,
}

struct DynamicParams {
    commit_wait: AtomicU8,
    commit_logging: AtomicU8,
    batch_flush_buffer_divisor: AtomicU64,
    batch_flush_bytes: AtomicU64,
    batch_flush_timeout_ms: AtomicU64,
    /// System `timed_statistics`: read with one relaxed load per commit (see `stats`).
    timed_statistics: AtomicBool,
}

fn wait_to_u8(w: CommitWait) -> u8 {
    w as u8
}
fn wait_from_u8(v: u8) -> CommitWait {
    match v {
        0 => CommitWait::Wait,
        1 => CommitWait::NoWait,
        _ => CommitWait::ForceWait,
    }
}
fn logging_from_u8(v: u8) -> CommitLogging {
    if v == 0 {
        CommitLogging::Immediate
    } else {
        CommitLogging::Batch
    }
}

struct ControlState {
    file: Box<dyn StorageFile>,
    path: PathBuf,
    record: ControlRecord,
    /// Slot holding `record`.
    slot: u64,
}

#[derive(Default)]
struct SessionRegistry {
    live: Vec<(u64, Arc<StatsSet>)>,
    retired: StatsSnapshot,
}

pub(crate) struct Shared {
    pub config: LogConfig,
    pub geometry: Geometry,
    pub db_id: u64,
    pub buffer: LogBuffer,
    pub writer: Mutex<Writer>,
    pub waiters: DurableWaiters,
    pub lsn_written: AtomicU64,
    pub lsn_durable: AtomicU64,
    /// The last durable commit: its SCN and the end of its unit (a unit boundary, so a
    /// valid checkpoint position; the durable LSN itself may fall inside a large unit).
    pub durable_commit: Mutex<(Scn, Lsn)>,
    /// Highest LSN someone asked to have written (a max).
    pub requested: AtomicU64,
    pub activated_end: AtomicU64,
    pub activated_seq: AtomicU64,
    pub switch_signal: Signal,
    member_states: Vec<AtomicU8>,
    failure: OnceLock<Arc<LogFailure>>,
    failed: AtomicBool,
    pub shutdown: AtomicBool,
    pub background: StatsSet,
    sessions: Mutex<SessionRegistry>,
    lgwr: OnceLock<Thread>,
    epoch: Instant,
    last_write_us: AtomicU64,
    dynamic: DynamicParams,
    control: Mutex<ControlState>,
    checkpoint_scan_from: AtomicU64,
    checkpoint_request: (Mutex<CheckpointSignal>, Condvar),
    /// Under `Scheduling::Driven`, what makes a checkpoint when the next log group still
    /// holds redo the last one needs (`RedoLog::set_checkpoint_hook`).
    checkpoint_hook: OnceLock<CheckpointHook>,
    next_txn: AtomicU64,
    next_session: AtomicU64,
    /// The most recent log switches, oldest first (`v$log_history`).
    switches: Mutex<std::collections::VecDeque<LogSwitch>>,
}

/// How many log switches `RedoLog::log_history` remembers.
pub const LOG_HISTORY_KEPT: usize = 1000;

/// The log's requests for a checkpoint, and the wake-ups of the checkpointer waiting for
/// them.
#[derive(Default)]
struct CheckpointSignal {
    /// A checkpoint is wanted (taken by the next wait).
    asked: bool,
    /// Bumped by `wake_checkpoint_waiters`: a wait that began before ends.
    wakes: u64,
}

/// One log switch: the writer began writing sequence `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSwitch {
    pub seq: LogSeq,
    /// Group (0-based) that holds the sequence.
    pub group: u32,
    /// Where the sequence starts in the redo stream.
    pub first_lsn: Lsn,
    /// When the switch happened, in microseconds since the Unix epoch.
    pub at_unix_us: u64,
}

impl Shared {
    /// Records that the writer has begun writing sequence `seq`.
    pub(crate) fn record_switch(&self, seq: LogSeq) {
        let switch = LogSwitch {
            seq,
            group: self.geometry.group_of(seq),
            first_lsn: self.geometry.start_of(seq),
            at_unix_us: unix_us(),
        };
        let mut switches = self.switches.lock().expect("switch history poisoned");
        if switches.len() == LOG_HISTORY_KEPT {
            switches.pop_front();
        }
        switches.push_back(switch);
    }

    pub fn check_failed(&self) -> Result<()> {
        if self.failed.load(SeqCst) {
            return Err(self.failure_error());
        }
        Ok(())
    }

    fn check_open(&self) -> Result<()> {
        self.check_failed()?;
        if self.shutdown.load(SeqCst) {
            return Err(RedoError::Shutdown);
        }
        Ok(())
    }

    pub fn is_failed(&self) -> bool {
        self.failed.load(SeqCst)
    }

    pub fn latch_failure(&self, failure: LogFailure) {
        log::error!("redo log failed, no further commits will be acknowledged: {failure}");
        let _ = self.failure.set(Arc::new(failure));
        self.failed.store(true, SeqCst);
        self.switch_signal.notify_all();
        self.buffer.wake_space_waiters();
    }

    pub fn failure_error(&self) -> RedoError {
        match self.failure.get() {
            Some(f) => RedoError::LogFailed(f.clone()),
            None => RedoError::Shutdown,
        }
    }

    pub fn lsn_durable(&self) -> Lsn {
        Lsn(self.lsn_durable.load(SeqCst))
    }

    pub fn member_path(&self, group: u32, member: u32) -> PathBuf {
        log_file_path(self.config.member_dir(member), group, member)
    }

    pub fn member_state(&self, group: u32, member: u32) -> MemberState {
        let m = self.config.members();
        MemberState::from_u8(self.member_states[(group * m + member) as usize].load(SeqCst))
    }

    pub fn set_member_state(&self, group: u32, member: u32, state: MemberState) {
        let m = self.config.members();
        self.member_states[(group * m + member) as usize].store(state as u8, SeqCst);
    }

    /// The system's `timed_statistics`: whether background work (the log writer's writes
    /// and time model) is timed. Sessions resolve their own with
    /// [`LogSession::timed_statistics`].
    #[inline]
    pub fn timed_statistics(&self) -> bool {
        self.dynamic.timed_statistics.load(Relaxed)
    }

    pub fn touch_last_write(&self) {
        self.last_write_us.store(self.epoch.elapsed().as_micros() as u64, SeqCst);
    }

    pub(crate) fn post_lgwr(&self) {
        if let Some(t) = self.lgwr.get() {
            t.unpark();
        }
    }

    pub fn request_checkpoint(&self) {
        let (lock, cv) = &self.checkpoint_request;
        lock.lock().expect("checkpoint request poisoned").asked = true;
        cv.notify_all();
    }

    fn group_reusable(&self, seq: LogSeq) -> bool {
        let g = self.config.log_groups as u64;
        seq.0 <= g || self.checkpoint_scan_from.load(SeqCst) >= self.geometry.end_of(LogSeq(seq.0 - g)).0
    }

    /// The next log sequence LGWR should open, if it is wanted and allowed. LGWR keeps one
    /// file open ahead of the one being filled, so a switch rarely makes anyone wait.
    pub fn activation_wanted(&self) -> Option<LogSeq> {
        let activated = self.activated_seq.load(SeqCst);
        let filling = self.geometry.seq_of(self.buffer.reserved_end()).0;
        let next = LogSeq(activated + 1);
        (activated < filling + 1 && self.group_reusable(next)).then_some(next)
    }

    /// Largest private redo one transaction may hold: half a log file, so that its unit,
    /// wherever it starts in the file being filled, ends within the next file (which LGWR
    /// keeps open ahead).
    pub fn max_transaction_redo(&self) -> u64 {
        self.geometry.data_bytes_per_file / 2
    }

    fn file_ready(&self, end: Lsn) -> bool {
        end.0 <= self.activated_end.load(SeqCst)
    }

    /// Whether the caller drives the log's background work (`Scheduling::Driven`).
    pub(crate) fn driven(&self) -> bool {
        self.config.scheduling == Scheduling::Driven
    }

    /// LGWR's work, on the calling thread: opens the next log group if it is wanted and
    /// free, and writes everything complete. Returns whether it wrote.
    pub(crate) fn run_writer(&self) -> Result<bool> {
        let mut w = self.writer.lock().expect("writer poisoned");
        if let Some(seq) = self.activation_wanted() {
            if seq.0 == w.activated.0 + 1 {
                w.activate(self, seq)?;
            }
        }
        w.cycle(self, false)
    }

    /// Asks the log writer to write: wakes LGWR, or under `Scheduling::Driven` (where a
    /// waiter would wait for nobody) writes on this thread.
    fn post_or_write(&self) {
        if self.driven() {
            // A failed write latches the log, which the waiter sees.
            let _ = self.run_writer();
        } else {
            self.post_lgwr();
        }
    }

    /// `wait_for_file` under `Scheduling::Driven`: opens the next group on this thread,
    /// first making the checkpoint it needs through the hook. False if the log failed, is
    /// shutting down, or no checkpoint could free the group.
    fn switch_driven(&self, end: Lsn) -> bool {
        let mut checkpoints = 0;
        loop {
            if self.file_ready(end) {
                return true;
            }
            if self.is_failed() || self.shutdown.load(SeqCst) {
                return false;
            }
            if let Some(seq) = self.activation_wanted() {
                let mut w = self.writer.lock().expect("writer poisoned");
                if seq.0 == w.activated.0 + 1 && w.activate(self, seq).is_err() {
                    return false;
                }
                continue;
            }
            // The next group holds redo the last checkpoint needs. The database tells the
            // log the checkpoint of the image before the newest (see its checkpoint
            // images), so freeing a group may take two.
            let Some(hook) = self.checkpoint_hook.get() else { return false };
            if checkpoints == 3 {
                log::error!("no checkpoint freed the next log group for a unit ending at {end}");
                return false;
            }
            checkpoints += 1;
            hook();
        }
    }

    /// A session's unit ends past the open log files: wait for the switch (timed if
    /// `timed`). Returns false if the log failed or is shutting down instead, or if
    /// `interrupt` ended the wait (nothing is reserved yet, so the caller can give up).
    /// Under `Scheduling::Driven` nobody else would switch: the caller does
    /// (`switch_driven`), and never waits.
    fn wait_for_file(&self, end: Lsn, stats: &StatsSet, timed: bool, interrupt: &Interrupt) -> bool {
        if self.driven() {
            return self.switch_driven(end);
        }
        let needed = self.geometry.seq_of(Lsn(end.0 - 1));
        let event = if self.group_reusable(needed) {
            WaitEvent::LogFileSwitchCompletion
        } else {
            self.request_checkpoint();
            WaitEvent::LogFileSwitchCheckpointIncomplete
        };
        stats.add(Stat::RedoLogSpaceRequests, 1);
        let t0 = timed.then(Stamp::now);
        stats.begin_wait(event, t0);
        let ready = || {
            self.file_ready(end)
                || self.is_failed()
                || self.shutdown.load(SeqCst)
                || interrupt.check().is_err()
        };
        while !ready() {
            self.post_lgwr();
            self.switch_signal.wait_once_until(ready, interrupt.deadline());
        }
        stats.record_wait(event, t0.map(|t| t.elapsed()));
        self.file_ready(end)
    }

    fn flush_threshold(&self) -> u64 {
        let by_fraction = self.buffer.capacity() / self.dynamic.batch_flush_buffer_divisor.load(Relaxed);
        by_fraction.min(self.dynamic.batch_flush_bytes.load(Relaxed))
    }

    /// Whether LGWR has a write to do now.
    pub fn write_wanted(&self, shutting_down: bool) -> bool {
        let written = self.lsn_written.load(SeqCst);
        let complete = self.buffer.complete_point().0;
        if complete <= written {
            return false;
        }
        if shutting_down || self.requested.load(SeqCst) > written {
            return true;
        }
        if self.buffer.reserved_end().0 - written >= self.flush_threshold() {
            return true;
        }
        self.time_to_timeout() == Duration::ZERO
    }

    pub fn batch_flush_timeout(&self) -> Duration {
        Duration::from_millis(self.dynamic.batch_flush_timeout_ms.load(Relaxed))
    }

    /// Time left before the "N ms since the last write" trigger fires.
    pub fn time_to_timeout(&self) -> Duration {
        let timeout_us = self.dynamic.batch_flush_timeout_ms.load(Relaxed) * 1000;
        let since = (self.epoch.elapsed().as_micros() as u64).saturating_sub(self.last_write_us.load(SeqCst));
        Duration::from_micros(timeout_us.saturating_sub(since))
    }

    /// Blocks until the durable LSN reaches `lsn`. Returns whether it had to wait, and how
    /// often its sleep ended before `lsn` was durable.
    pub(crate) fn wait_durable(&self, lsn: Lsn) -> Result<DurableOutcome> {
        let mut outcome = DurableOutcome { waited: false, early_wakeups: 0 };
        if self.lsn_durable() >= lsn {
            return Ok(outcome);
        }
        let reserved = self.buffer.reserved_end();
        if lsn > reserved {
            return Err(RedoError::NotIssued(format!(
                "{lsn} lies beyond the redo handed out so far ({reserved})"
            )));
        }
        outcome.waited = true;
        self.requested.fetch_max(lsn.0, SeqCst);
        let mut slept = false;
        loop {
            // Durability first: a commit already durable when another write fails is
            // still durable, and saying so acknowledges nothing new.
            if self.lsn_durable() >= lsn {
                return Ok(outcome);
            }
            self.check_failed()?;
            if slept {
                outcome.early_wakeups += 1;
            }
            match self.writer.try_lock() {
                Ok(mut w) => {
                    let wrote = w.cycle(self, true)?;
                    drop(w);
                    if self.requested.load(SeqCst) > self.lsn_durable.load(SeqCst) {
                        self.post_lgwr();
                    }
                    if wrote {
                        slept = false;
                        continue;
                    }
                }
                Err(_) => self.post_lgwr(),
            }
            let ready = || self.lsn_durable() >= lsn || self.is_failed();
            self.waiters.sleep_for(lsn, ready);
            slept = true;
        }
    }
}

/// How a wait for durability went (`Shared::wait_durable`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DurableOutcome {
    /// The redo was not durable when the wait began.
    pub waited: bool,
    /// Sleeps that ended before the redo was durable (`redo synch early wakeups`).
    pub early_wakeups: u64,
}

/// The redo log. Dropping it shuts it down (making everything copied durable).
pub struct RedoLog {
    sh: Arc<Shared>,
    lgwr: Mutex<Option<JoinHandle<()>>>,
}

fn new_db_id() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(unix_us());
    h.write_u32(std::process::id());
    h.finish() | 1
}

fn foreign(path: impl Into<PathBuf>, detail: impl Into<String>) -> RedoError {
    RedoError::Foreign { path: path.into(), detail: detail.into() }
}

fn read_control(storage: &dyn Storage, path: &PathBuf) -> Result<(Box<dyn StorageFile>, ControlRecord, u64)> {
    let file = storage.open(path, FileMode::Control).map_err(|e| RedoError::io("open", path, e))?;
    let len = file.size().map_err(|e| RedoError::io("stat", path, e))?;
    if len < 2 * CONTROL_SLOT_BYTES {
        return Err(foreign(
            path,
            format!("control file is {len} bytes, expected {}", 2 * CONTROL_SLOT_BYTES),
        ));
    }
    let mut best: Option<(ControlRecord, u64)> = None;
    let mut first_error = None;
    for slot in 0..2u64 {
        let mut buf = vec![0u8; CONTROL_SLOT_BYTES as usize];
        file.read_exact_at(&mut buf, slot * CONTROL_SLOT_BYTES)
            .map_err(|e| RedoError::io("read", path, e))?;
        match ControlRecord::decode(&buf) {
            Ok(r) if best.is_none_or(|(b, _)| r.generation > b.generation) => best = Some((r, slot)),
            // Each update writes the next generation into the other slot: two different
            // records of one generation were never both written by the engine, and
            // neither can be preferred.
            Ok(r) if best.is_some_and(|(b, _)| r.generation == b.generation && r != b) => {
                return Err(foreign(
                    path,
                    format!("both control slots hold generation {}, with different contents", r.generation),
                ));
            }
            Ok(_) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match best {
        // The newest record with a valid checksum is what the engine last wrote: one that
        // says something impossible is refused, never passed over for the older slot
        // (whose checkpoint may need redo that the log has since reused).
        Some((r, slot)) => match r.check() {
            Ok(()) => Ok((file, r, slot)),
            Err(e) => Err(foreign(path, e.to_string())),
        },
        None => Err(foreign(path, first_error.map(|e| e.to_string()).unwrap_or_default())),
    }
}

fn write_control_slot(
    file: &dyn StorageFile,
    path: &PathBuf,
    record: &ControlRecord,
    slot: u64,
) -> Result<()> {
    file.write_at(&[&record.encode()], slot * CONTROL_SLOT_BYTES)
        .map_err(|e| RedoError::io("write", path, e))?;
    file.sync().map_err(|e| RedoError::io("sync", path, e))
}

/// Removes what a database creation cut short by a crash left: its `control.ctl.creating`
/// and the log files it made. No commit can have happened (a commit needs `control.ctl`),
/// so nothing is lost. Without that marker, log files without a control file are not
/// ours to remove: `create_database` refuses them.
fn remove_interrupted_creation(storage: &dyn Storage, config: &LogConfig) -> Result<()> {
    let marker = creating_control_path(&config.dir);
    if !storage.exists(&marker).map_err(|e| RedoError::io("stat", &marker, e))? {
        return Ok(());
    }
    log::warn!(
        "the creation of the redo log in {} was interrupted ({} exists): starting it again",
        config.dir.display(),
        marker.display()
    );
    for m in 0..config.members() {
        let dir = config.member_dir(m);
        for g in 0..config.log_groups {
            let path = log_file_path(dir, g, m);
            if storage.exists(&path).map_err(|e| RedoError::io("stat", &path, e))? {
                storage.remove_file(&path).map_err(|e| RedoError::io("remove", &path, e))?;
            }
        }
        storage.sync_dir(dir).map_err(|e| RedoError::io("sync directory", dir, e))?;
    }
    // The marker last, once the removals are durable: until it is gone, a crash here is
    // again an interrupted creation.
    storage.remove_file(&marker).map_err(|e| RedoError::io("remove", &marker, e))?;
    storage.sync_dir(&config.dir).map_err(|e| RedoError::io("sync directory", &config.dir, e))
}

fn create_database(storage: &dyn Storage, config: &LogConfig) -> Result<()> {
    remove_interrupted_creation(storage, config)?;
    for m in 0..config.members() {
        let dir = config.member_dir(m);
        storage.create_dir_all(dir).map_err(|e| RedoError::io("create directory", dir, e))?;
        for g in 0..config.log_groups {
            let path = log_file_path(dir, g, m);
            if storage.exists(&path).map_err(|e| RedoError::io("stat", &path, e))? {
                return Err(foreign(
                    &path,
                    "redo log file exists but the control file does not; if creating a database was interrupted, remove the log files",
                ));
            }
        }
    }
    let db_id = new_db_id();
    let mut created = Vec::new();
    let result = create_files(storage, config, db_id, &mut created);
    if let Err(e) = result {
        // Leave nothing half made behind: the next open would have to refuse it.
        for path in created.iter().rev() {
            let removed = storage.remove_file(path).and_then(|()| storage.sync_dir(parent_dir(path)));
            if let Err(re) = removed {
                log::error!("could not remove {} after a failed creation: {re}", path.display());
            }
        }
        return Err(e);
    }
    log::info!(
        "created redo log in {} ({} groups x {} members of {} bytes)",
        config.dir.display(),
        config.log_groups,
        config.members(),
        config.log_file_size
    );
    Ok(())
}

/// Creates the database's files; `created` collects what exists. First the control file
/// under its creating name (durable before any log file exists), then the log files, then
/// the control record, synced, and last the rename to `control.ctl`: a crash at any point
/// leaves either a whole database or a creation `remove_interrupted_creation` recognises.
fn create_files(
    storage: &dyn Storage,
    config: &LogConfig,
    db_id: u64,
    created: &mut Vec<PathBuf>,
) -> Result<()> {
    let creating = creating_control_path(&config.dir);
    storage
        .create_zeroed(&creating, 2 * CONTROL_SLOT_BYTES)
        .map_err(|e| RedoError::io("create control file", &creating, e))?;
    created.push(creating.clone());
    for m in 0..config.members() {
        for g in 0..config.log_groups {
            let path = log_file_path(config.member_dir(m), g, m);
            storage
                .create_zeroed(&path, config.log_file_size)
                .map_err(|e| RedoError::io("create log file", &path, e))?;
            created.push(path);
        }
    }
    let record = ControlRecord {
        generation: 1,
        db_id,
        log_file_size: config.log_file_size,
        groups: config.log_groups,
        members: config.members(),
        checkpoint_scan_from: Lsn(0),
        checkpoint_lsn: Lsn(0),
        checkpoint_scn: Scn(0),
        created_unix_ms: unix_ms(),
        txn_id_hwm: TxnId(0),
    };
    let file = storage.open(&creating, FileMode::Control).map_err(|e| RedoError::io("open", &creating, e))?;
    write_control_slot(&*file, &creating, &record, 0)?;
    drop(file);
    // The control file's presence under its own name means the database exists.
    let path = control_path(&config.dir);
    storage.rename(&creating, &path).map_err(|e| RedoError::io("rename", &creating, e))?;
    storage.sync_dir(&config.dir).map_err(|e| RedoError::io("sync directory", &config.dir, e))
}

fn check_static(parameter: &'static str, current: u64, requested: u64) -> Result<()> {
    if current != requested {
        return Err(RedoError::StaticParameter {
            parameter,
            current: current.to_string(),
            requested: requested.to_string(),
        });
    }
    Ok(())
}

/// Brings every member of the log in line with the recovered stream after recovery.
struct MemberRepair<'a> {
    config: &'a LogConfig,
    geometry: Geometry,
    read: &'a [Vec<Option<Box<dyn StorageFile>>>],
    write: &'a [Vec<Option<Box<dyn StorageFile>>>],
    states: &'a [AtomicU8],
    block: AlignedBuf,
    notes: &'a mut Vec<String>,
}

impl MemberRepair<'_> {
    fn in_service(&self, group: u32, member: u32) -> bool {
        let m = self.config.members();
        self.write[group as usize][member as usize].is_some()
            && MemberState::from_u8(self.states[(group * m + member) as usize].load(SeqCst))
                == MemberState::InService
    }

    fn fail(&mut self, group: u32, member: u32, what: &str, e: std::io::Error) {
        let m = self.config.members();
        let path = log_file_path(self.config.member_dir(member), group, member);
        log::error!("redo log member {} taken out of service: {what} failed: {e}", path.display());
        self.notes.push(format!("{} out of service: {what} failed: {e}", path.display()));
        self.states[(group * m + member) as usize].store(MemberState::WriteFailed as u8, SeqCst);
    }

    fn read_block(&self, group: u32, member: u32, offset: u64) -> Option<Vec<u8>> {
        let f = self.read[group as usize][member as usize].as_ref()?;
        let mut buf = vec![0u8; BLOCK_BYTES as usize];
        f.read_exact_at(&mut buf, offset).ok()?;
        Some(buf)
    }

    /// The recovered content of one block: the copy of the member that served its latest
    /// record, with the parts of its records that other members served laid over it (a
    /// copy that holds the latest record may lack an earlier one, torn by its last write).
    fn assemble_block(&self, group: u32, offset: u64, sources: &BlockSources) -> Option<Vec<u8>> {
        let base = sources.latest();
        let mut block = self.read_block(group, base, offset)?;
        for &(from, to, m) in &sources.segments {
            if m != base {
                let other = self.read_block(group, m, offset)?;
                block[from as usize..to as usize].copy_from_slice(&other[from as usize..to as usize]);
            }
        }
        Some(block)
    }

    fn header_seq(&self, group: u32, member: u32) -> Option<LogSeq> {
        let head = self.read_block(group, member, 0)?;
        LogFileHeader::decode(&head).ok().filter(|h| h.db_id != 0).map(|h| h.seq)
    }

    /// Writes one block-sized buffer to a member; false (and out of service) on error.
    fn write_block(&mut self, group: u32, member: u32, offset: u64, bytes: &[u8]) -> bool {
        self.block.as_mut_slice().copy_from_slice(bytes);
        let f = self.write[group as usize][member as usize].as_ref().expect("in service");
        let result = f.write_at(&[self.block.as_slice()], offset);
        match result {
            Ok(()) => true,
            Err(e) => {
                self.fail(group, member, "repair write", e);
                false
            }
        }
    }

    /// Rewrites every recovered block (and the header of every file they lie in) to every
    /// member in service, from the member whose copy recovery used, and syncs.
    ///
    /// Two reasons. Mirrors that missed writes (out of service, or a different torn tail)
    /// are brought back in line. And recovery may have read bytes that were written but
    /// never synced (after a failed fdatasync Linux keeps them readable in the page cache
    /// yet never writes them): rewriting and syncing makes what was recovered durable
    /// before anything new is acknowledged on top of it.
    fn rewrite_recovered_range(&mut self, sources: &std::collections::BTreeMap<Lsn, BlockSources>) {
        let members = self.config.members();
        let mut run = AlignedBuf::zeroed(WRITE_MAX_BYTES as usize);
        let mut headers_done = std::collections::BTreeSet::new();
        let mut differing = vec![0u64; members as usize];
        let mut blocks = sources.iter().peekable();
        while let Some((&first, first_sources)) = blocks.next() {
            let seq = self.geometry.seq_of(first);
            let group = self.geometry.group_of(seq);
            if headers_done.insert(seq) {
                let src = first_sources.latest();
                if let Some(Ok(h)) = self.read_block(group, src, 0).map(|b| LogFileHeader::decode(&b)) {
                    for m in 0..members {
                        if self.in_service(group, m) {
                            let head = LogFileHeader { member: m, ..h }.encode();
                            self.write_block(group, m, 0, &head);
                        }
                    }
                }
            }
            // Gather a run of consecutive blocks of the same file, up to WRITE_MAX_BYTES.
            let mut len = 0usize;
            let mut next = first;
            let mut block_sources = first_sources;
            loop {
                let offset = self.geometry.file_offset(next);
                match self.assemble_block(group, offset, block_sources) {
                    Some(bytes) => {
                        run.as_mut_slice()[len..len + BLOCK_BYTES as usize].copy_from_slice(&bytes)
                    }
                    None => break,
                }
                len += BLOCK_BYTES as usize;
                next = Lsn(next.0 + BLOCK_BYTES);
                match blocks.peek() {
                    Some((&b, s)) if b == next && self.geometry.seq_of(b) == seq && len < run.len() => {
                        block_sources = s;
                        blocks.next();
                    }
                    _ => break,
                }
            }
            if len == 0 {
                continue;
            }
            let offset = self.geometry.file_offset(first);
            for m in 0..members {
                if !self.in_service(group, m) {
                    continue;
                }
                // Count the blocks this member held differently, for the report.
                if let Some(r) = self.read[group as usize][m as usize].as_ref() {
                    let mut mine = vec![0u8; len];
                    if r.read_exact_at(&mut mine, offset).is_ok() {
                        let want = &run.as_slice()[..len];
                        differing[m as usize] += mine
                            .chunks(BLOCK_BYTES as usize)
                            .zip(want.chunks(BLOCK_BYTES as usize))
                            .filter(|(a, b)| a != b)
                            .count() as u64;
                    }
                }
                let f = self.write[group as usize][m as usize].as_ref().expect("in service");
                if let Err(e) = f.write_at(&[&run.as_slice()[..len]], offset) {
                    self.fail(group, m, "rewrite of recovered redo", e);
                }
            }
        }
        if members > 1 {
            for (m, n) in differing.iter().enumerate() {
                if *n > 0 {
                    self.notes.push(format!(
                        "member {} repaired: {n} blocks differed from the recovered redo and were rewritten",
                        m + 1
                    ));
                }
            }
        }
        for g in 0..self.config.log_groups {
            for m in 0..members {
                if self.in_service(g, m) {
                    let f = self.write[g as usize][m as usize].as_ref().expect("in service");
                    if let Err(e) = f.sync() {
                        self.fail(g, m, "sync of recovered redo", e);
                    }
                }
            }
        }
    }

    /// Rewrites the partial last block (`tail`) and zeroes what a torn write may have left
    /// after it, on every member in service.
    fn zero_after_end(&mut self, end: Lsn, tail: &[u8]) -> Result<()> {
        let seq = self.geometry.seq_of(end);
        let group = self.geometry.group_of(seq);
        let mut chunk = AlignedBuf::zeroed(WRITE_MAX_BYTES as usize);
        chunk.as_mut_slice()[..tail.len()].copy_from_slice(tail);
        let floor = block_floor(end);
        // A torn write starts at or before the end's block and spans at most
        // WRITE_MAX_BYTES, so its leftovers lie within this window (each open zeroes its
        // own window, so no older leftovers exist beyond it).
        let file_end = self.geometry.end_of(seq).min(Lsn(floor.0 + WRITE_MAX_BYTES + BLOCK_BYTES));
        let members = self.config.members();
        // A member that missed the switch into this file gets its header too.
        let holder = (0..members).find(|&m| self.header_seq(group, m) == Some(seq));
        for m in 0..members {
            if self.in_service(group, m) && self.header_seq(group, m) != Some(seq) {
                if let Some(Ok(mut h)) =
                    holder.and_then(|h| self.read_block(group, h, 0)).map(|b| LogFileHeader::decode(&b))
                {
                    h.member = m;
                    let head = h.encode();
                    self.write_block(group, m, 0, &head);
                }
            }
        }
        let mut any = false;
        for m in 0..members {
            if !self.in_service(group, m) {
                continue;
            }
            let f = self.write[group as usize][m as usize].as_ref().expect("in service");
            let mut at = floor;
            let mut result = Ok(());
            let mut first = true;
            while at < file_end && result.is_ok() {
                let n = (file_end.0 - at.0).min(WRITE_MAX_BYTES) as usize;
                if !first {
                    chunk.as_mut_slice()[..tail.len()].fill(0);
                }
                result = f.write_at(&[&chunk.as_slice()[..n]], self.geometry.file_offset(at));
                if first {
                    first = false;
                }
                at = Lsn(at.0 + n as u64);
            }
            chunk.as_mut_slice()[..tail.len()].copy_from_slice(tail);
            match result.and_then(|_| f.sync()) {
                Ok(()) => any = true,
                Err(e) => self.fail(group, m, "write past the end", e),
            }
        }
        if !any {
            let path = log_file_path(self.config.member_dir(0), group, 0);
            return Err(RedoError::io(
                "write",
                path,
                std::io::Error::other("no member of the current log group is writable"),
            ));
        }
        Ok(())
    }

    /// Zeroes the start of log file `next` (as far as one write reaches) on every member
    /// whose header says it holds `next`: a record the log ends before was torn there, and
    /// the log now goes on in the file before. Its remains would otherwise read as valid
    /// redo after the end of the file before, which the next recovery calls damage. The
    /// file is not in use beyond them (that write was its first).
    fn zero_torn_start(&mut self, next: LogSeq) -> Result<()> {
        let group = self.geometry.group_of(next);
        let start = self.geometry.start_of(next);
        let len = (self.geometry.end_of(next).0 - start.0).min(WRITE_MAX_BYTES) as usize;
        let zeros = AlignedBuf::zeroed(len);
        let (mut holders, mut zeroed) = (0, 0);
        for m in 0..self.config.members() {
            if !self.in_service(group, m) || self.header_seq(group, m) != Some(next) {
                continue;
            }
            holders += 1;
            let f = self.write[group as usize][m as usize].as_ref().expect("in service");
            match f.write_at(&[zeros.as_slice()], self.geometry.file_offset(start)).and_then(|_| f.sync()) {
                Ok(()) => zeroed += 1,
                Err(e) => self.fail(group, m, "zeroing a torn write's remains", e),
            }
        }
        if holders > 0 && zeroed == 0 {
            let path = log_file_path(self.config.member_dir(0), group, 0);
            return Err(RedoError::io(
                "write",
                path,
                std::io::Error::other("no member of the next log group is writable"),
            ));
        }
        Ok(())
    }
}

impl RedoLog {
    /// Opens (creating if allowed) the redo log in `config.dir` on the local file system,
    /// running recovery.
    pub fn open(config: LogConfig) -> Result<(RedoLog, Recovered)> {
        RedoLog::open_with(config, Arc::new(FileStorage))
    }

    /// As [`RedoLog::open`] on any storage (tests use the simulated disk).
    pub fn open_with(config: LogConfig, storage: Arc<dyn Storage>) -> Result<(RedoLog, Recovered)> {
        config.validate()?;
        // Calibrate the wait interface's clock now, not in the first commit.
        crate::clock::init();
        let cpath = control_path(&config.dir);
        if !storage.exists(&cpath).map_err(|e| RedoError::io("stat", &cpath, e))? {
            if config.open_mode == OpenMode::MustExist {
                return Err(foreign(&config.dir, "no redodb database here (control.ctl is missing)"));
            }
            create_database(&*storage, &config)?;
        }
        let (cfile, control, slot) = read_control(&*storage, &cpath)?;
        check_static("log_file_size", control.log_file_size, config.log_file_size)?;
        check_static("log_groups", control.groups as u64, config.log_groups as u64)?;
        check_static("log_members", control.members as u64, config.members() as u64)?;
        let geometry = Geometry::new(config.log_file_size, config.log_groups);
        let members = config.members();

        // Open every member for reading and check that it is ours.
        let mut notes = Vec::new();
        let mut read_files: Vec<Vec<Option<Box<dyn StorageFile>>>> = Vec::new();
        for g in 0..config.log_groups {
            let mut row = Vec::new();
            for m in 0..members {
                let path = log_file_path(config.member_dir(m), g, m);
                let file = match storage.open(&path, FileMode::Read) {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && members > 1 => {
                        notes.push(format!("{} is missing", path.display()));
                        row.push(None);
                        continue;
                    }
                    Err(e) => return Err(RedoError::io("open", &path, e)),
                };
                let len = file.size().map_err(|e| RedoError::io("stat", &path, e))?;
                if len != config.log_file_size {
                    return Err(foreign(
                        &path,
                        format!("log file is {len} bytes, expected {}", config.log_file_size),
                    ));
                }
                let mut head = vec![0u8; BLOCK_BYTES as usize];
                file.read_exact_at(&mut head, 0).map_err(|e| RedoError::io("read", &path, e))?;
                if head.iter().any(|&b| b != 0) {
                    let h = LogFileHeader::decode(&head).map_err(|e| foreign(&path, e.to_string()))?;
                    if h.db_id != control.db_id {
                        return Err(foreign(&path, "log file belongs to another database"));
                    }
                    if h.group != g || h.member != m {
                        return Err(foreign(
                            &path,
                            format!(
                                "log file is group {} member {}, expected group {} member {}",
                                h.group + 1,
                                h.member + 1,
                                g + 1,
                                m + 1
                            ),
                        ));
                    }
                }
                row.push(Some(file));
            }
            read_files.push(row);
        }
        let config_for_paths = config.clone();
        let paths = move |g: u32, m: u32| log_file_path(config_for_paths.member_dir(m), g, m);
        let outcome = recover(&read_files, &paths, geometry, &control)?;
        let end = outcome.report.end;
        let seq_end = geometry.seq_of(end);
        let group_end = geometry.group_of(seq_end);

        // Open for writing.
        let mut write_files: Vec<Vec<Option<Box<dyn StorageFile>>>> = Vec::new();
        let member_states: Vec<AtomicU8> =
            (0..config.log_groups * members).map(|_| AtomicU8::new(MemberState::InService as u8)).collect();
        for g in 0..config.log_groups {
            let mut row = Vec::new();
            for m in 0..members {
                let path = log_file_path(config.member_dir(m), g, m);
                match storage.open(&path, FileMode::Log(config.sync_method)) {
                    Ok(f) => row.push(Some(f)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && members > 1 => {
                        member_states[(g * members + m) as usize].store(MemberState::Missing as u8, SeqCst);
                        row.push(None);
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                        return Err(RedoError::io(
                            "open (the file system refuses this sync_method; use fdatasync or o_dsync)",
                            &path,
                            e,
                        ))
                    }
                    Err(e) => return Err(RedoError::io("open", &path, e)),
                }
            }
            write_files.push(row);
        }
        let mut repair = MemberRepair {
            config: &config,
            geometry,
            read: &read_files,
            write: &write_files,
            states: &member_states,
            block: AlignedBuf::zeroed(BLOCK_BYTES as usize),
            notes: &mut notes,
        };
        repair.rewrite_recovered_range(&outcome.block_sources);

        // Is the file that holds the end open for writing (does it carry its sequence)?
        let end_file_in_use = (0..members).any(|m| repair.header_seq(group_end, m) == Some(seq_end));
        let activated = if end_file_in_use { seq_end } else { LogSeq(seq_end.0 - 1) };

        // Overwrite whatever a torn last write may have left past the end, on every
        // member, so that a later recovery cannot mistake it for redo.
        if end_file_in_use {
            repair.zero_after_end(end, &outcome.tail)?;
            if outcome.torn_into_next {
                repair.zero_torn_start(LogSeq(seq_end.0 + 1))?;
            }
        }
        drop(repair);
        drop(read_files);
        let mut outcome = outcome;
        outcome.report.member_notes.extend(notes);
        for n in &outcome.report.member_notes {
            log::warn!("redo log: {n}");
        }

        // Driven: no member writer threads; the mirrors are written one after the other.
        let writer_threads = if config.scheduling == Scheduling::Driven { 1 } else { members };
        let member_writers = MemberWriters::new(writer_threads)
            .map_err(|e| RedoError::io("spawn member writers", &config.dir, e))?;
        let next_scn = outcome.report.last_scn.next();
        let buffer = LogBuffer::new(
            config.log_buffer,
            config.log_parallelism,
            control.db_id,
            geometry,
            end,
            next_scn,
            &outcome.tail,
        );
        let activated_end = if activated.0 == 0 { Lsn(0) } else { geometry.end_of(activated) };
        let next_txn = outcome.max_txn.0.max(control.txn_id_hwm.0) + 1;
        let sh = Arc::new(Shared {
            geometry,
            db_id: control.db_id,
            buffer,
            writer: Mutex::new(Writer::new(end, write_files, activated, seq_end, member_writers)),
            waiters: DurableWaiters::default(),
            lsn_written: AtomicU64::new(end.0),
            lsn_durable: AtomicU64::new(end.0),
            durable_commit: Mutex::new((outcome.report.last_scn, end)),
            switches: Mutex::new(std::collections::VecDeque::new()),
            requested: AtomicU64::new(end.0),
            activated_end: AtomicU64::new(activated_end.0),
            activated_seq: AtomicU64::new(activated.0),
            switch_signal: Signal::default(),
            member_states,
            failure: OnceLock::new(),
            failed: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            background: StatsSet::default(),
            sessions: Mutex::new(SessionRegistry::default()),
            lgwr: OnceLock::new(),
            epoch: Instant::now(),
            last_write_us: AtomicU64::new(0),
            dynamic: DynamicParams {
                commit_wait: AtomicU8::new(wait_to_u8(config.commit_wait)),
                commit_logging: AtomicU8::new(config.commit_logging as u8),
                batch_flush_buffer_divisor: AtomicU64::new(config.batch_flush_buffer_divisor as u64),
                batch_flush_bytes: AtomicU64::new(config.batch_flush_bytes),
                batch_flush_timeout_ms: AtomicU64::new(config.batch_flush_timeout_ms),
                timed_statistics: AtomicBool::new(config.timed_statistics),
            },
            checkpoint_scan_from: AtomicU64::new(control.checkpoint_scan_from.0),
            control: Mutex::new(ControlState { file: cfile, path: cpath, record: control, slot }),
            checkpoint_request: (Mutex::new(CheckpointSignal::default()), Condvar::new()),
            checkpoint_hook: OnceLock::new(),
            next_txn: AtomicU64::new(next_txn),
            next_session: AtomicU64::new(1),
            config,
        });
        let lgwr = if sh.driven() {
            None
        } else {
            let lgwr_sh = sh.clone();
            let handle = thread::Builder::new()
                .name("redo-lgwr".into())
                .spawn(move || lgwr_main(lgwr_sh))
                .map_err(|e| RedoError::io("spawn log writer", "redo-lgwr", e))?;
            let _ = sh.lgwr.set(handle.thread().clone());
            sh.post_lgwr();
            Some(handle)
        };
        let log = RedoLog { sh, lgwr: Mutex::new(lgwr) };
        log::info!("redo log opened: {}", outcome.report);
        Ok((log, Recovered { transactions: outcome.transactions, report: outcome.report }))
    }

    /// A new session: a source of transactions and commits.
    pub fn session(&self) -> LogSession {
        let id = self.sh.next_session.fetch_add(1, Relaxed);
        let stats = Arc::new(StatsSet::default());
        self.sh.sessions.lock().expect("registry poisoned").live.push((id, stats.clone()));
        LogSession {
            sh: self.sh.clone(),
            id,
            strand_hint: (id as usize) % self.sh.buffer.strands(),
            stats,
            txn: None,
            txn_ids: TxnIdBlock::default(),
            private: Vec::new(),
            private_records: 0,
            commit_wait: None,
            commit_logging: None,
            timed_statistics: None,
            interrupt: Arc::new(Interrupt::new(Arc::downgrade(&self.sh))),
        }
    }

    /// Blocks until everything up to `lsn` is durable (making earlier NOWAIT commits
    /// durable, for instance).
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        self.sh.wait_durable(lsn).map(|_| ())
    }

    /// Blocks until every commit up to `scn` is durable.
    pub fn wait_durable_scn(&self, scn: Scn) -> Result<()> {
        let next = self.sh.buffer.next_scn();
        if scn >= next {
            return Err(RedoError::NotIssued(format!("{scn} has not been handed out (the next is {next})")));
        }
        // Everything reserved now includes `scn`'s unit.
        let upto = self.sh.buffer.reserved_end();
        self.sh.wait_durable(upto).map(|_| ())
    }

    /// The durable LSN: every byte of redo below it is on stable storage.
    pub fn durable_lsn(&self) -> Lsn {
        self.sh.lsn_durable()
    }

    /// The last durable commit: its SCN and the end of its unit, which is what
    /// [`RedoLog::checkpoint`] takes.
    pub fn durable_commit(&self) -> (Scn, Lsn) {
        *self.sh.durable_commit.lock().expect("durable commit poisoned")
    }

    /// End of the redo handed out so far.
    pub fn reserved_end(&self) -> Lsn {
        self.sh.buffer.reserved_end()
    }

    /// The log switches since the log was opened (the newest [`LOG_HISTORY_KEPT`]),
    /// oldest first.
    pub fn log_history(&self) -> Vec<LogSwitch> {
        self.sh.switches.lock().expect("switch history poisoned").iter().copied().collect()
    }

    /// Commits in the log buffer not durable yet: how many, their bytes, and the age of
    /// the oldest (what a crash now would lose of the NOWAIT commits acknowledged).
    pub fn commit_backlog(&self) -> CommitBacklog {
        self.sh.buffer.undurable(self.sh.lsn_durable())
    }

    /// Records that every commit up to `scn` (whose unit ends at `lsn`) is reflected in
    /// the caller's durable state, so redo before that is no longer needed for recovery
    /// and log groups holding only such redo may be reused. The caller must have made its
    /// state durable AFTER the redo up to `lsn` was durable (write-ahead rule); this call
    /// waits for that durability first, so state built from NOWAIT commits is safe too.
    pub fn checkpoint(&self, scn: Scn, lsn: Lsn) -> Result<()> {
        self.sh.wait_durable(lsn)?;
        let mut c = self.sh.control.lock().expect("control poisoned");
        if scn <= c.record.checkpoint_scn {
            return Ok(());
        }
        // Units reach the stream whole at commit, so the end of the unit of `scn` is a
        // point before which no redo of a later commit lies.
        let scan_from = lsn.max(c.record.checkpoint_scan_from);
        let record = ControlRecord {
            generation: c.record.generation + 1,
            checkpoint_scan_from: scan_from,
            checkpoint_lsn: lsn,
            checkpoint_scn: scn,
            txn_id_hwm: TxnId(self.sh.next_txn.load(SeqCst)),
            ..c.record
        };
        let slot = 1 - c.slot;
        // The log cannot reuse a group without checkpoints, so a control file that cannot
        // be written stops the log: latch the failure so that every waiting session gets
        // an error instead of waiting for a checkpoint that can never be recorded.
        let written = c
            .file
            .write_at(&[&record.encode()], slot * CONTROL_SLOT_BYTES)
            .map_err(|e| ("control file write", e));
        if let Err((op, e)) = written.and_then(|_| c.file.sync().map_err(|e| ("control file sync", e))) {
            let path = c.path.clone();
            drop(c);
            self.sh.latch_failure(LogFailure { op, path, source: e });
            self.sh.waiters.wake_all();
            return Err(self.sh.failure_error());
        }
        c.record = record;
        c.slot = slot;
        drop(c);
        self.sh.checkpoint_scan_from.store(scan_from.0, SeqCst);
        self.sh.post_lgwr();
        self.sh.switch_signal.notify_all();
        Ok(())
    }

    /// Whether the log waits for a checkpoint: the group its next file needs still holds
    /// redo the last checkpoint needs, and the files open for writing are the last ones
    /// (sessions wait in `log file switch (checkpoint incomplete)` once they are full).
    pub fn checkpoint_needed(&self) -> bool {
        let activated = self.sh.activated_seq.load(SeqCst);
        let filling = self.sh.geometry.seq_of(self.sh.buffer.reserved_end()).0;
        filling >= activated && !self.sh.group_reusable(LogSeq(activated + 1))
    }

    /// The last checkpoint recorded: (scan_from, lsn, scn).
    pub fn last_checkpoint(&self) -> (Lsn, Lsn, Scn) {
        let c = self.sh.control.lock().expect("control poisoned");
        (c.record.checkpoint_scan_from, c.record.checkpoint_lsn, c.record.checkpoint_scn)
    }

    /// Waits up to `timeout` for the log to ask for a checkpoint (at a log switch, or when
    /// sessions wait for a group to be reusable). Returns whether one was asked for.
    /// Also returns (false) at [`RedoLog::wake_checkpoint_waiters`].
    pub fn wait_checkpoint_request(&self, timeout: Duration) -> bool {
        let (lock, cv) = &self.sh.checkpoint_request;
        let guard = lock.lock().expect("checkpoint request poisoned");
        let wakes = guard.wakes;
        let (mut guard, _) = cv
            .wait_timeout_while(guard, timeout, |signal| !signal.asked && signal.wakes == wakes)
            .expect("checkpoint request poisoned");
        std::mem::replace(&mut guard.asked, false)
    }

    /// Ends every [`RedoLog::wait_checkpoint_request`] in progress now, without a
    /// request: a checkpointer being stopped looks at its stop flag at once instead of at
    /// the end of its timeout.
    pub fn wake_checkpoint_waiters(&self) {
        let (lock, cv) = &self.sh.checkpoint_request;
        lock.lock().expect("checkpoint request poisoned").wakes += 1;
        cv.notify_all();
    }

    pub fn set_commit_wait(&self, wait: CommitWait) {
        self.sh.dynamic.commit_wait.store(wait_to_u8(wait), SeqCst);
    }

    pub fn commit_wait(&self) -> CommitWait {
        wait_from_u8(self.sh.dynamic.commit_wait.load(SeqCst))
    }

    pub fn set_commit_logging(&self, logging: CommitLogging) {
        self.sh.dynamic.commit_logging.store(logging as u8, SeqCst);
    }

    pub fn commit_logging(&self) -> CommitLogging {
        logging_from_u8(self.sh.dynamic.commit_logging.load(SeqCst))
    }

    /// Sets the system's `timed_statistics`: sessions without their own setting, and the
    /// log writer, time their waits from their next one on.
    pub fn set_timed_statistics(&self, on: bool) {
        self.sh.dynamic.timed_statistics.store(on, SeqCst);
    }

    pub fn timed_statistics(&self) -> bool {
        self.sh.timed_statistics()
    }

    /// Changes the background write triggers (validated like the configuration).
    pub fn set_batch_triggers(&self, buffer_divisor: u32, bytes: u64, timeout_ms: u64) -> Result<()> {
        let mut c = self.sh.config.clone();
        c.batch_flush_buffer_divisor = buffer_divisor;
        c.batch_flush_bytes = bytes;
        c.batch_flush_timeout_ms = timeout_ms;
        c.validate()?;
        let d = &self.sh.dynamic;
        d.batch_flush_buffer_divisor.store(buffer_divisor as u64, SeqCst);
        d.batch_flush_bytes.store(bytes, SeqCst);
        d.batch_flush_timeout_ms.store(timeout_ms, SeqCst);
        self.sh.post_lgwr();
        Ok(())
    }

    pub fn batch_triggers(&self) -> (u32, u64, u64) {
        let d = &self.sh.dynamic;
        (
            d.batch_flush_buffer_divisor.load(SeqCst) as u32,
            d.batch_flush_bytes.load(SeqCst),
            d.batch_flush_timeout_ms.load(SeqCst),
        )
    }

    pub fn config(&self) -> &LogConfig {
        &self.sh.config
    }

    pub fn db_id(&self) -> u64 {
        self.sh.db_id
    }

    /// System-wide statistics: the background's plus every session's, live or gone.
    pub fn stats(&self) -> StatsSnapshot {
        let mut total = self.sh.background.snapshot();
        let reg = self.sh.sessions.lock().expect("registry poisoned");
        total.merge(&reg.retired);
        for (_, s) in &reg.live {
            total.merge(&s.snapshot());
        }
        total
    }

    pub fn members(&self) -> Vec<MemberInfo> {
        let mut out = Vec::new();
        for g in 0..self.sh.config.log_groups {
            for m in 0..self.sh.config.members() {
                out.push(MemberInfo {
                    group: g,
                    member: m,
                    path: self.sh.member_path(g, m),
                    state: self.sh.member_state(g, m),
                });
            }
        }
        out
    }

    /// The log sequence being filled and the highest one opened.
    pub fn current_seq(&self) -> (LogSeq, LogSeq) {
        (self.sh.geometry.seq_of(self.sh.buffer.reserved_end()), LogSeq(self.sh.activated_seq.load(SeqCst)))
    }

    /// Positions of the log, for views and diagnostics.
    pub fn status(&self) -> LogStatus {
        let sh = &self.sh;
        let c = sh.control.lock().expect("control poisoned");
        LogStatus {
            reserved_end: sh.buffer.reserved_end(),
            complete: sh.buffer.complete_point(),
            written: Lsn(sh.lsn_written.load(SeqCst)),
            durable: sh.lsn_durable(),
            requested: Lsn(sh.requested.load(SeqCst)),
            durable_commit: *sh.durable_commit.lock().expect("durable commit poisoned"),
            current_seq: sh.geometry.seq_of(sh.buffer.reserved_end()),
            activated_seq: LogSeq(sh.activated_seq.load(SeqCst)),
            activated_end: Lsn(sh.activated_end.load(SeqCst)),
            checkpoint_scan_from: c.record.checkpoint_scan_from,
            checkpoint_scn: c.record.checkpoint_scn,
            failed: sh.is_failed(),
        }
    }

    /// The failure that latched the log, if any.
    pub fn failure(&self) -> Option<Arc<LogFailure>> {
        self.sh.failure.get().cloned()
    }

    /// Makes everything copied durable and stops the log writer. Sessions get
    /// [`RedoError::Shutdown`] afterwards.
    pub fn shutdown(&self) -> Result<()> {
        self.sh.shutdown.store(true, SeqCst);
        // Sessions waiting for a log switch or for buffer space give up with an error.
        self.sh.switch_signal.notify_all();
        self.sh.buffer.wake_space_waiters();
        self.sh.post_lgwr();
        let handle = self.lgwr.lock().expect("lgwr handle poisoned").take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        if self.sh.driven() {
            // What LGWR does before it stops: everything copied becomes durable.
            while !self.sh.is_failed() && self.sh.run_writer().unwrap_or(false) {}
        }
        self.sh.check_failed()
    }

    /// LGWR's work on the calling thread, for a log under `Scheduling::Driven`: opens the
    /// next log group if it is wanted and free, and writes everything complete. Returns
    /// whether it wrote. (Under `Scheduling::Background` it is a foreground write.)
    pub fn run_writer(&self) -> Result<bool> {
        self.sh.run_writer()
    }

    /// Under `Scheduling::Driven`, what a session runs when the next log group still holds
    /// redo the last checkpoint needs (the database's checkpoint: with nobody else to make
    /// it, the session would wait forever). Set once; later calls are ignored.
    pub fn set_checkpoint_hook(&self, hook: CheckpointHook) {
        let _ = self.sh.checkpoint_hook.set(hook);
    }
}

/// A checkpoint made on demand (`RedoLog::set_checkpoint_hook`).
pub type CheckpointHook = Box<dyn Fn() + Send + Sync>;

impl Drop for RedoLog {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

struct ActiveTxn {
    id: TxnId,
}

/// How a commit that must wait for durability waits (`LogSession::commit_inner`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum WaitBy {
    /// On this thread, writing itself if the token is free (`commit_then`).
    Blocking,
    /// Not here: the wait goes back to the caller (`commit_deferring_wait`).
    Deferring,
    /// A foreground write if the token is free, else deferred (`commit_writing_if_idle`).
    WritingIfIdle,
}

/// How many transaction ids a session takes from the shared counter at once: a counter
/// every transaction added to would move its cache line between the CPUs on every commit.
const TXN_ID_BLOCK: u64 = 1024;

/// A session's block of transaction ids, `[next, end)`, taken `TXN_ID_BLOCK` at a time
/// from `Shared::next_txn`. Ids only tell one transaction's records from another's: they
/// are unique, not ordered like the commits. They stay unique across restarts: the
/// control file's high-water mark is the shared counter, past every block handed out,
/// and recovery starts the counter above both it and every id in the redo it read.
#[derive(Default)]
struct TxnIdBlock {
    next: u64,
    end: u64,
}

impl TxnIdBlock {
    fn take(&mut self, shared: &AtomicU64) -> TxnId {
        if self.next == self.end {
            self.next = shared.fetch_add(TXN_ID_BLOCK, Relaxed);
            self.end = self.next + TXN_ID_BLOCK;
        }
        let id = self.next;
        self.next += 1;
        assert!(id != 0 && id < self.end, "transaction id {id} outside its block ending at {}", self.end);
        TxnId(id)
    }
}

/// A session of the redo log: at most one transaction at a time. Not shared between
/// threads; each thread that commits has its own.
pub struct LogSession {
    sh: Arc<Shared>,
    id: u64,
    strand_hint: usize,
    stats: Arc<StatsSet>,
    txn: Option<ActiveTxn>,
    txn_ids: TxnIdBlock,
    private: Vec<u8>,
    private_records: u64,
    commit_wait: Option<CommitWait>,
    commit_logging: Option<CommitLogging>,
    timed_statistics: Option<bool>,
    /// Ends this session's interruptible waits early (see `interrupt`).
    interrupt: Arc<Interrupt>,
}

impl LogSession {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The session's interrupt, for the layer above to cancel its wait for a log file or
    /// give it a deadline (see `interrupt`).
    pub fn interrupt(&self) -> &Arc<Interrupt> {
        &self.interrupt
    }

    /// The open transaction, if any.
    /// Whether the open transaction has change records in its private redo (a layer
    /// above may keep changes it does not log, and then commits them without the log).
    pub fn has_private_redo(&self) -> bool {
        self.private_records > 0
    }

    pub fn transaction(&self) -> Option<TxnId> {
        self.txn.as_ref().map(|t| t.id)
    }

    /// Session-level `commit_wait` (None: the system's).
    pub fn set_commit_wait(&mut self, wait: Option<CommitWait>) {
        self.commit_wait = wait;
    }

    pub fn set_commit_logging(&mut self, logging: Option<CommitLogging>) {
        self.commit_logging = logging;
    }

    pub fn commit_settings(&self) -> (Option<CommitWait>, Option<CommitLogging>) {
        (self.commit_wait, self.commit_logging)
    }

    /// Session-level `timed_statistics` (None: the system's).
    pub fn set_timed_statistics(&mut self, on: Option<bool>) {
        self.timed_statistics = on;
    }

    /// The session's own `timed_statistics` setting, if it has one.
    pub fn timed_statistics_setting(&self) -> Option<bool> {
        self.timed_statistics
    }

    /// Whether this session times its waits and commits: its own setting, else the
    /// system's (one relaxed load, cheap enough for every commit and call).
    #[inline]
    pub fn timed_statistics(&self) -> bool {
        self.timed_statistics.unwrap_or_else(|| self.sh.timed_statistics())
    }

    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// This session's live counters, to read while it works (for `v$session` and
    /// `v$sesstat` from other sessions).
    pub fn stats_handle(&self) -> Arc<StatsSet> {
        self.stats.clone()
    }

    /// The effective (wait?, logging) for a commit with `options`.
    pub fn resolve(&self, options: CommitOptions) -> (bool, CommitLogging) {
        let system_wait = wait_from_u8(self.sh.dynamic.commit_wait.load(Relaxed));
        let forced = system_wait == CommitWait::ForceWait || self.commit_wait == Some(CommitWait::ForceWait);
        let wait = forced || options.wait.or(self.commit_wait).unwrap_or(system_wait) != CommitWait::NoWait;
        let system_logging = logging_from_u8(self.sh.dynamic.commit_logging.load(Relaxed));
        (wait, options.logging.or(self.commit_logging).unwrap_or(system_logging))
    }

    fn begin_if_needed(&mut self) -> TxnId {
        match &self.txn {
            Some(t) => t.id,
            None => {
                let id = self.txn_ids.take(&self.sh.next_txn);
                self.txn = Some(ActiveTxn { id });
                id
            }
        }
    }

    /// Logs one change of the current transaction (starting one if none is open). The
    /// change stays in the session's private redo until commit.
    pub fn log_change(&mut self, payload: &[u8]) -> Result<TxnId> {
        self.sh.check_open()?;
        if payload.len() > RECORD_PAYLOAD_MAX {
            return Err(RedoError::TooLarge(payload.len()));
        }
        let max = self.sh.max_transaction_redo();
        let after = self.private.len() as u64 + (RECORD_HEADER_BYTES + payload.len()) as u64;
        if after > max {
            return Err(RedoError::TransactionTooLarge { bytes: after, max });
        }
        let txn = self.begin_if_needed();
        encode_record(&mut self.private, RecordKind::Change, txn, payload);
        self.private_records += 1;
        Ok(txn)
    }

    fn post_if_someone_waits(&self, start: Lsn) {
        // A waiter beyond this unit may have been held up by this copy.
        if self.sh.requested.load(SeqCst) > start.0 {
            self.sh.post_lgwr();
        }
    }

    /// Commits the current transaction (an empty one if none is open) in the mode that
    /// `options`, the session and the system give.
    pub fn commit(&mut self, options: CommitOptions) -> Result<CommitReceipt> {
        self.commit_then(options, |_| {})
    }

    /// As [`LogSession::commit`], calling `on_copied` once the commit record is in the log
    /// buffer and before waiting for durability. That is the moment Oracle makes a
    /// transaction's changes visible and releases its row locks (early lock release): the
    /// commit now has its place in commit order, so prefix recovery keeps any later commit
    /// that saw the change only together with it. `on_copied` is called at most once, and
    /// not if the copy failed.
    pub fn commit_then(
        &mut self,
        options: CommitOptions,
        on_copied: impl FnOnce(&CommitReceipt),
    ) -> Result<CommitReceipt> {
        let (receipt, deferred) = self.commit_inner(options, on_copied, WaitBy::Blocking)?;
        debug_assert!(deferred.is_none(), "a commit not deferring waits here");
        Ok(receipt)
    }

    /// As [`LogSession::commit_then`], except that a commit that must wait for durability
    /// does not wait: it hands its wait back as a [`DurableWait`], which its caller awaits
    /// (a future, for a thread that serves many clients) or calls `wait` on before telling
    /// anyone the commit happened. The commit is counted as a WAIT commit, its `log file
    /// sync` and response time when the wait ends. None for a commit that need not wait.
    pub fn commit_deferring_wait(
        &mut self,
        options: CommitOptions,
        on_copied: impl FnOnce(&CommitReceipt),
    ) -> Result<(CommitReceipt, Option<DurableWait>)> {
        self.commit_inner(options, on_copied, WaitBy::Deferring)
    }

    /// As [`LogSession::commit_deferring_wait`], except that a commit that must wait and
    /// finds the write token free (the log writer idle) writes the log itself, a foreground
    /// write, and returns durable, with no wait to hand back: on a quiet system that saves
    /// the two thread hand-offs of a deferred wait (posting the log writer, and its waking
    /// the waiter's thread). The write blocks the calling thread for one write and sync:
    /// a thread serving many clients calls this only while the others are idle. With the
    /// token taken, the wait is deferred as `commit_deferring_wait` defers it.
    pub fn commit_writing_if_idle(
        &mut self,
        options: CommitOptions,
        on_copied: impl FnOnce(&CommitReceipt),
    ) -> Result<(CommitReceipt, Option<DurableWait>)> {
        self.commit_inner(options, on_copied, WaitBy::WritingIfIdle)
    }

    /// A wait for everything up to `lsn` to be durable, as a [`DurableWait`]: counted as
    /// `log file sync` for this session if it has to wait. Asks the log writer for the
    /// write now.
    pub fn durable_wait(&self, lsn: Lsn) -> DurableWait {
        DurableWait::new(
            self.sh.clone(),
            self.stats.clone(),
            lsn,
            self.timed_statistics().then(Stamp::now),
            None,
        )
    }

    fn commit_inner(
        &mut self,
        options: CommitOptions,
        on_copied: impl FnOnce(&CommitReceipt),
        wait_by: WaitBy,
    ) -> Result<(CommitReceipt, Option<DurableWait>)> {
        self.sh.check_open()?;
        // The clock reads below exist only for the wait interface: skipped when untimed.
        let timed = self.timed_statistics();
        let called_at = timed.then(Stamp::now);
        let (wait, logging) = self.resolve(options);
        let stats = self.stats.clone();
        stats.add(if wait { Stat::CommitWaitRequested } else { Stat::CommitNowaitRequested }, 1);
        stats.add(
            if logging == CommitLogging::Batch {
                Stat::CommitBatchRequested
            } else {
                Stat::CommitImmediateRequested
            },
            1,
        );
        let txn_id = self.begin_if_needed();
        // Borrowed, not cloned: every session shares this `Arc`, so a clone and its drop
        // per commit moved the counter's cache line between the CPUs twice.
        let sh = &*self.sh;
        let len = (self.private.len() + RECORD_HEADER_BYTES + COMMIT_PAYLOAD_BYTES) as u64;
        let r = sh.buffer.reserve(
            self.strand_hint,
            len,
            true,
            called_at,
            |end| sh.file_ready(end),
            |end| sh.wait_for_file(end, &stats, timed, &self.interrupt),
        );
        let Some(mut r) = r else {
            if !sh.is_failed() {
                if let Err(cause) = self.interrupt.check() {
                    // Nothing reached the buffer: the transaction stays whole, to be
                    // committed again or rolled back.
                    return Err(RedoError::Interrupted(cause));
                }
            }
            self.txn = None;
            self.private.clear();
            self.private_records = 0;
            sh.check_failed()?;
            if sh.driven() && !sh.shutdown.load(SeqCst) {
                return Err(RedoError::CheckpointIncomplete);
            }
            return Err(RedoError::Shutdown);
        };
        let scn = r.scn.expect("commit reservations carry an SCN");
        let start = r.start;
        let end = r.end;
        let commit_record = encode_commit_record(txn_id, scn, unix_us());
        let post = || sh.post_or_write();
        let gave_up = || sh.is_failed();
        if !sh.buffer.copy(&mut r, &self.private, &stats, timed, &post, &gave_up)
            || !sh.buffer.copy(&mut r, &commit_record, &stats, timed, &post, &gave_up)
        {
            sh.buffer.abandon(r);
            self.txn = None;
            self.private.clear();
            self.private_records = 0;
            return Err(sh.failure_error());
        }
        sh.buffer.finish(r);
        stats.add(Stat::UserCommits, 1);
        stats.add(Stat::RedoEntries, self.private_records + 1);
        stats.add(Stat::RedoSize, len);
        self.private.clear();
        self.private_records = 0;
        self.txn = None;
        let receipt = CommitReceipt { txn: txn_id, scn, lsn: end, waited: wait, logging };
        if wait {
            // Ask for the write before the hook runs: a write in flight now is then
            // followed at once by one that carries this commit, while the hook (the
            // database applying the transaction) runs; raised only after the hook, a
            // writer finishing meanwhile finds nothing asked. (Measured on the SQL
            // commit loop, 32 sessions WAIT: 101-107k commits/s against 102-103k before,
            // within the noise; kept because the writer learns of the commit sooner.)
            sh.requested.fetch_max(end.0, SeqCst);
        }
        on_copied(&receipt);
        let mode = commit_mode_index(wait, logging);
        if wait && wait_by == WaitBy::WritingIfIdle && self.write_if_idle(end, timed)? {
            stats.add(Stat::CommitWaitPerformed, 1);
            stats.record_commit_response(mode, called_at.map(Stamp::elapsed_us));
            return Ok((receipt, None));
        }
        if wait && wait_by != WaitBy::Blocking {
            // Counted (wait performed, response time) when the wait ends.
            let t0 = timed.then(Stamp::now);
            let deferred = DurableWait::new(self.sh.clone(), stats, end, t0, Some((mode, called_at)));
            return Ok((receipt, Some(deferred)));
        }
        if wait {
            self.wait_durable_timed(end, timed)?;
            stats.add(Stat::CommitWaitPerformed, 1);
        } else {
            match logging {
                CommitLogging::Immediate => {
                    sh.requested.fetch_max(end.0, SeqCst);
                    sh.post_lgwr();
                }
                CommitLogging::Batch => {
                    let unwritten = end.0.saturating_sub(sh.lsn_written.load(SeqCst));
                    if unwritten >= sh.flush_threshold() {
                        sh.post_lgwr();
                    } else {
                        self.post_if_someone_waits(start);
                    }
                }
            }
            stats.add(Stat::CommitNowaitPerformed, 1);
        }
        stats.record_commit_response(mode, called_at.map(Stamp::elapsed_us));
        Ok((receipt, None))
    }

    /// A point in the current transaction's private redo to roll back to (statement-level
    /// atomicity: a failed statement takes back only its own changes).
    pub fn savepoint(&self) -> RedoSavepoint {
        RedoSavepoint { bytes: self.private.len(), records: self.private_records }
    }

    /// Drops the changes logged since `savepoint`; the transaction stays open.
    pub fn rollback_to(&mut self, savepoint: RedoSavepoint) {
        assert!(
            savepoint.bytes <= self.private.len() && savepoint.records <= self.private_records,
            "savepoint {savepoint:?} is not in this transaction ({} bytes, {} records)",
            self.private.len(),
            self.private_records
        );
        self.private.truncate(savepoint.bytes);
        self.private_records = savepoint.records;
    }

    /// Rolls back the current transaction: its private redo is dropped. Nothing reached
    /// the log buffer, so nothing is written.
    pub fn rollback(&mut self) -> Result<()> {
        if self.txn.take().is_some() {
            self.private.clear();
            self.private_records = 0;
            self.stats.add(Stat::UserRollbacks, 1);
        }
        Ok(())
    }

    /// If the write token is free, runs one write cycle on this thread (a foreground
    /// write) and returns whether everything up to `lsn` is durable after it; never
    /// sleeps. The cycle is this session's `log file sync`, timed if `timed`. False with
    /// the token taken, or when the cycle could not reach `lsn` (a commit before it in
    /// another strand was still being copied): the caller then waits as usual.
    fn write_if_idle(&self, lsn: Lsn, timed: bool) -> Result<bool> {
        let sh = &*self.sh;
        let Ok(mut writer) = sh.writer.try_lock() else { return Ok(false) };
        let t0 = timed.then(Stamp::now);
        self.stats.begin_wait(WaitEvent::LogFileSync, t0);
        let cycle = writer.cycle(sh, true);
        drop(writer);
        // Commits that arrived during the write are the log writer's.
        if sh.requested.load(SeqCst) > sh.lsn_durable.load(SeqCst) {
            sh.post_lgwr();
        }
        if let Err(e) = cycle {
            self.stats.cancel_wait();
            return Err(e);
        }
        if sh.lsn_durable() < lsn {
            self.stats.cancel_wait();
            return Ok(false);
        }
        let elapsed = t0.map(|t| t.elapsed());
        self.stats.record_wait(WaitEvent::LogFileSync, elapsed);
        self.stats.add(Stat::RedoSynchWrites, 1);
        self.stats.add(Stat::RedoSynchTimeUs, elapsed.map_or(0, |e| e.as_micros() as u64));
        Ok(true)
    }

    /// Waits until everything up to `lsn` is durable, counted as `log file sync` for this
    /// session when it has to wait.
    pub fn wait_durable(&mut self, lsn: Lsn) -> Result<()> {
        self.wait_durable_timed(lsn, self.timed_statistics())
    }

    /// As `wait_durable`, timing the wait only if `timed`.
    fn wait_durable_timed(&self, lsn: Lsn, timed: bool) -> Result<()> {
        let t0 = timed.then(Stamp::now);
        self.stats.begin_wait(WaitEvent::LogFileSync, t0);
        let outcome = match self.sh.wait_durable(lsn) {
            Ok(outcome) => outcome,
            Err(e) => {
                self.stats.cancel_wait();
                return Err(e);
            }
        };
        if outcome.early_wakeups > 0 {
            self.stats.add(Stat::RedoSynchEarlyWakeups, outcome.early_wakeups);
        }
        if !outcome.waited {
            self.stats.cancel_wait();
        } else {
            let elapsed = t0.map(|t| t.elapsed());
            self.stats.record_wait(WaitEvent::LogFileSync, elapsed);
            self.stats.add(Stat::RedoSynchWrites, 1);
            self.stats.add(Stat::RedoSynchTimeUs, elapsed.map_or(0, |e| e.as_micros() as u64));
        }
        Ok(())
    }
}

impl Drop for LogSession {
    fn drop(&mut self) {
        let _ = self.rollback();
        let mut reg = self.sh.sessions.lock().expect("registry poisoned");
        if let Some(i) = reg.live.iter().position(|(id, _)| *id == self.id) {
            let (_, s) = reg.live.swap_remove(i);
            let snap = s.snapshot();
            reg.retired.merge(&snap);
        }
    }
}
