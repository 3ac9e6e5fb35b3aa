//! The sessions of a database as the wait interface sees them: each open [`Session`]
//! has an entry here with its SID, client, status, current SQL and wait, its redo
//! statistics and the wait events the database layer measures (`v$session`,
//! `v$sesstat`, `v$session_event`).
//!
//! The events measured above the redo log: `enq: TX - row lock contention`
//! (Application), and, for the wire server, `SQL*Net message from client` (Idle: the
//! session waits for its client's next call), `SQL*Net message to client` (Network:
//! sending a reply) and `SQL*Net more data from client` (Network: waiting for the rest of
//! a request that came in parts); and `checkpoint write` (System I/O: writing a
//! checkpoint image), counted as background work. Each entry counts its own; a closed
//! session's counts move to the registry's retired totals so system figures never go
//! backwards.
//!
//! Each entry also holds its session's time model ([`TimeModel`]: DB time, DB CPU, and
//! whether a call is open, which is what ACTIVE means), and the time of its non-idle
//! waits so far (`waited_us`, with the redo log's `StatsSet::waited_us`), which bounds
//! the CPU a piece of work may add (see `call_clock`). Readers read an entry's waits
//! before its time model (see `call_clock`).
//!
//! Cancel: each entry holds its session's [`CancelFlag`]; a [`CancelHandle`] (from
//! `Session::cancel_handle`, usable from any thread) raises it and wakes the session if it
//! is waiting for a lock or for a log switch. The session clears the flag when a user call
//! starts, so a cancel that arrives between calls cancels nothing, and looks at it in its
//! lock waits and every `CANCEL_CHECK_ROWS` rows of its row loops; the redo log looks at
//! it in a commit's wait for a log file (the flag is the session's `redo::Interrupt`).
//! The same flag carries the statement's deadline (`statement_timeout`), which ends the
//! same waits and loops with `DbError::StatementTimeout`.
//!
//! [`Session`]: crate::Session

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redo::clock::Stamp;
use redo::stats::{pack_current_wait, unpack_current_wait, EventCounters, EventSnapshot, StatsSet};
use redo::WaitEvent;

pub use crate::call_clock::TimeModel;

/// Wait events the database layer (and the server above it) measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DbEvent {
    RowLockContention,
    SqlNetMessageFromClient,
    SqlNetMessageToClient,
    /// Waiting for the rest of a request the client sent in parts (a pipeline before its
    /// Sync, a COPY's data before its end): inside the call, unlike `SQL*Net message from
    /// client`.
    SqlNetMoreDataFromClient,
    /// Writing a checkpoint image (the data files), temp file to rename, syncs included.
    CheckpointWrite,
}

pub const DB_EVENT_COUNT: usize = 5;

impl DbEvent {
    pub const ALL: [DbEvent; DB_EVENT_COUNT] = [
        DbEvent::RowLockContention,
        DbEvent::SqlNetMessageFromClient,
        DbEvent::SqlNetMessageToClient,
        DbEvent::SqlNetMoreDataFromClient,
        DbEvent::CheckpointWrite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DbEvent::RowLockContention => "enq: TX - row lock contention",
            DbEvent::SqlNetMessageFromClient => "SQL*Net message from client",
            DbEvent::SqlNetMessageToClient => "SQL*Net message to client",
            DbEvent::SqlNetMoreDataFromClient => "SQL*Net more data from client",
            DbEvent::CheckpointWrite => "checkpoint write",
        }
    }

    pub fn class(self) -> &'static str {
        match self {
            DbEvent::RowLockContention => "Application",
            DbEvent::SqlNetMessageFromClient => "Idle",
            DbEvent::SqlNetMessageToClient | DbEvent::SqlNetMoreDataFromClient => "Network",
            DbEvent::CheckpointWrite => "System I/O",
        }
    }

    /// Whether the event is idle (waiting for work, not in a call): not in DB time.
    pub fn is_idle(self) -> bool {
        self == DbEvent::SqlNetMessageFromClient
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What a wait in progress is on: an event of the redo log or of the database layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyEvent {
    Redo(WaitEvent),
    Db(DbEvent),
}

impl AnyEvent {
    pub fn name(self) -> &'static str {
        match self {
            AnyEvent::Redo(e) => e.name(),
            AnyEvent::Db(e) => e.name(),
        }
    }

    /// Oracle's wait class (`v$system_event.wait_class`).
    pub fn class(self) -> &'static str {
        match self {
            AnyEvent::Redo(e) => e.class().name(),
            AnyEvent::Db(e) => e.class(),
        }
    }
}

fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// One session as the views see it. Shared by the session (which updates it) and the
/// registry (which readers go through).
pub struct SessionEntry {
    pub sid: u64,
    pub logon_unix_us: u64,
    client: Mutex<ClientInfo>,
    /// The SQL of the current call, or of the last one.
    sql: Mutex<Arc<str>>,
    /// The session's redo statistics and waits (the redo log's own counters).
    pub redo: Arc<StatsSet>,
    events: [EventCounters; DB_EVENT_COUNT],
    /// A database-layer wait in progress: 0, or packed by `redo::stats::pack_current_wait`
    /// (the event's index + 1 in the low 8 bits, its start above, 0 when not timed).
    current_wait: AtomicU64,
    /// The time of the non-idle waits recorded in `events` (us; see the module docs).
    waited_us: AtomicU64,
    pub user_calls: AtomicU64,
    /// DB time and DB CPU, and whether a call is open (ACTIVE).
    pub time: TimeModel,
    /// Client traffic, counted by the server (see [`NetStat`]).
    net: [AtomicU64; NET_STAT_COUNT],
    /// The session's own parses and executions (see [`SqlStat`]); the system's executions
    /// are the sum over the sessions (`SessionRegistry::sql_totals`), its parses are
    /// counted by the statement cache.
    sql_stats: [AtomicU64; SQL_STAT_COUNT],
    /// Raised to interrupt the session's running or waiting statement.
    pub(crate) cancel: CancelFlag,
}

/// A request to interrupt a session's current statement, the statement's deadline
/// (`statement_timeout`), and the thread to wake if that statement is asleep in a lock
/// wait. The flag and the deadline are the session's `redo::Interrupt`, so the redo
/// log's interruptible waits (a commit's wait for a log file) see them too, and a
/// request wakes the session there as well.
pub struct CancelFlag {
    interrupt: Arc<redo::Interrupt>,
    /// What wakes the session while it waits for a lock: its thread asleep in the wait,
    /// or the signal of a wait it left to its caller (`lock_wait`).
    sleeper: Mutex<Option<crate::lock_wait::Sleeper>>,
}

/// A flag of its own, tied to no redo session (its request wakes only lock waits).
impl Default for CancelFlag {
    fn default() -> CancelFlag {
        CancelFlag::new(Arc::new(redo::Interrupt::default()))
    }
}

impl CancelFlag {
    pub(crate) fn new(interrupt: Arc<redo::Interrupt>) -> CancelFlag {
        CancelFlag { interrupt, sleeper: Mutex::new(None) }
    }

    /// Whether a cancel was requested since the current call started. One load: cheap
    /// enough for row loops (which still look only every `CANCEL_CHECK_ROWS` rows).
    #[inline]
    pub fn is_requested(&self) -> bool {
        self.interrupt.is_raised()
    }

    /// Ok while the statement may go on: neither cancelled nor past its deadline (a
    /// clock read only while a deadline is set).
    #[inline]
    pub fn check(&self) -> Result<(), crate::error::DbError> {
        self.interrupt.check().map_err(crate::error::DbError::from)
    }

    /// Raises the flag and wakes the session if it sleeps in a lock wait or in the redo
    /// log's wait for a log file.
    pub fn request(&self) {
        self.interrupt.raise();
        let sleeper = self.sleeper.lock().expect("cancel sleeper poisoned").clone();
        if let Some(sleeper) = sleeper {
            sleeper.wake();
        }
    }

    /// Sets (or clears) what a request wakes besides the flag: a deferred lock wait's
    /// signal, while the caller awaits it.
    pub(crate) fn set_sleeper(&self, sleeper: Option<crate::lock_wait::Sleeper>) {
        *self.sleeper.lock().expect("cancel sleeper poisoned") = sleeper;
    }

    /// The current statement's deadline, if it has one.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.interrupt.deadline()
    }

    /// Forgets a request: a new call starts.
    pub(crate) fn clear(&self) {
        self.interrupt.clear();
    }

    /// Sets the current statement's deadline (None: no statement timeout).
    #[inline]
    pub(crate) fn set_deadline(&self, deadline: Option<Instant>) {
        self.interrupt.set_deadline(deadline);
    }

    /// Sleeps for at most `timeout` on the calling thread (a lock wait), and not past the
    /// statement's deadline, or not at all if a cancel was requested: a request raised
    /// before the sleeper is registered is seen by the check after it; one raised after
    /// finds the sleeper and unparks it (the token makes the park return at once). The
    /// caller then looks at `check`.
    pub(crate) fn sleep(&self, timeout: Duration) {
        let timeout = match self.interrupt.deadline() {
            Some(deadline) => timeout.min(deadline.saturating_duration_since(Instant::now())),
            None => timeout,
        };
        self.set_sleeper(Some(crate::lock_wait::Sleeper::Thread(std::thread::current())));
        if !self.interrupt.is_raised() && !timeout.is_zero() {
            redo::blocking::region(|| std::thread::park_timeout(timeout));
        }
        self.set_sleeper(None);
    }
}

/// Cancels a session's current statement from another thread (the wire server's cancel
/// request). Cloneable; outliving the session is harmless.
#[derive(Clone)]
pub struct CancelHandle {
    entry: Arc<SessionEntry>,
}

impl CancelHandle {
    pub(crate) fn new(entry: Arc<SessionEntry>) -> CancelHandle {
        CancelHandle { entry }
    }

    /// Interrupts the statement the session is running or waiting in: it fails with
    /// `DbError::Canceled` (57014) and is rolled back alone. A commit waiting for a log
    /// switch (before its record is in the log buffer) fails and leaves its transaction
    /// open; a commit already in the log is not interrupted; and a cancel when no call is
    /// running does nothing.
    pub fn cancel(&self) {
        self.entry.cancel.request();
    }

    /// The session's SID.
    pub fn sid(&self) -> u64 {
        self.entry.sid
    }
}

/// Oracle's client traffic statistics, counted by the wire server per session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetStat {
    Roundtrips,
    BytesSent,
    BytesReceived,
}

pub const NET_STAT_COUNT: usize = 3;

/// A session's SQL work, for `v$sesstat` / `v$mystat` (the names are `views::DbStat`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlStat {
    /// `parse count (total)`: every statement text looked up in the statement cache.
    ParseTotal,
    /// `parse count (hard)`: those not found there (parsed, and failed parses).
    ParseHard,
    /// `session cursor cache hits`: those found there.
    CacheHits,
    /// `execute count`.
    Execute,
    /// `commits deferred by call`.
    CommitsDeferred,
}

pub const SQL_STAT_COUNT: usize = 5;

impl NetStat {
    pub const ALL: [NetStat; NET_STAT_COUNT] =
        [NetStat::Roundtrips, NetStat::BytesSent, NetStat::BytesReceived];

    pub fn name(self) -> &'static str {
        match self {
            NetStat::Roundtrips => "SQL*Net roundtrips to/from client",
            NetStat::BytesSent => "bytes sent via SQL*Net to client",
            NetStat::BytesReceived => "bytes received via SQL*Net from client",
        }
    }
}

/// Who is on the other end of a session.
#[derive(Clone, Debug)]
pub struct ClientInfo {
    pub username: String,
    pub program: String,
    pub machine: String,
}

impl SessionEntry {
    pub fn client(&self) -> ClientInfo {
        self.client.lock().expect("client info poisoned").clone()
    }

    pub fn set_client(&self, info: ClientInfo) {
        *self.client.lock().expect("client info poisoned") = info;
    }

    /// In a call (ACTIVE), or waiting for the client's next one (INACTIVE).
    pub fn is_active(&self) -> bool {
        self.time.is_active()
    }

    pub fn sql(&self) -> Arc<str> {
        self.sql.lock().expect("sql text poisoned").clone()
    }

    pub(crate) fn set_sql(&self, sql: &str) {
        let mut current = self.sql.lock().expect("sql text poisoned");
        if &**current != sql {
            *current = Arc::from(sql);
        }
    }

    /// As `set_sql`, for a prepared statement's text: shared, not copied (a session
    /// alternating two statements, an INSERT and a COMMIT, would copy each every call).
    pub(crate) fn set_sql_shared(&self, sql: &Arc<str>) {
        let mut current = self.sql.lock().expect("sql text poisoned");
        if !Arc::ptr_eq(&current, sql) {
            *current = sql.clone();
        }
    }

    /// Marks the start of a wait on `event` (`started` None: not timed, see
    /// `timed_statistics`).
    pub fn begin_wait(&self, event: DbEvent, started: Option<Stamp>) {
        self.current_wait.store(pack_current_wait(event.index(), started), Relaxed);
    }

    /// Ends the wait in progress: counted when `waited` holds its length (with that time
    /// if `timed`, else with none), forgotten when None (it turned out not to be a wait).
    pub fn end_wait(&self, event: DbEvent, waited: Option<Duration>, timed: bool) {
        self.current_wait.store(0, Relaxed);
        if let Some(d) = waited {
            self.record_wait(event, timed.then_some(d));
        }
    }

    /// Counts a wait measured by the caller (the server's client round trips); `None`:
    /// not timed. Only the session's own thread records its waits (one writer).
    pub fn record_wait(&self, event: DbEvent, waited: Option<Duration>) {
        let us = waited.map(|d| d.as_micros() as u64);
        self.events[event.index()].record_us(us);
        if let (Some(us), false) = (us, event.is_idle()) {
            self.waited_us.store(self.waited_us.load(Relaxed) + us, Relaxed);
        }
    }

    /// The time of the session's non-idle waits so far (us): the redo log's and the
    /// database layer's.
    #[inline]
    pub(crate) fn waited_us(&self) -> u64 {
        self.redo.waited_us() + self.waited_us.load(Relaxed)
    }

    /// The wait in progress, if any, and how long it has lasted: the database layer's,
    /// else the redo log's.
    pub fn current_wait(&self) -> Option<(AnyEvent, Duration)> {
        if let Some((index, lasted)) = unpack_current_wait(self.current_wait.load(Relaxed)) {
            if let Some(event) = DbEvent::ALL.get(index) {
                return Some((AnyEvent::Db(*event), lasted));
            }
        }
        self.redo.current_wait().map(|(e, d)| (AnyEvent::Redo(e), d))
    }

    pub fn add_net(&self, stat: NetStat, n: u64) {
        self.net[stat as usize].fetch_add(n, Relaxed);
    }

    pub fn net(&self) -> [u64; NET_STAT_COUNT] {
        std::array::from_fn(|i| self.net[i].load(Relaxed))
    }

    /// Counts one of the session's parses or executions. Only the session's own thread
    /// calls it (one writer), so a load and a store do: no locked instruction per
    /// statement.
    pub(crate) fn count_sql(&self, stat: SqlStat) {
        let counter = &self.sql_stats[stat as usize];
        counter.store(counter.load(Relaxed) + 1, Relaxed);
    }

    fn sql_stats(&self) -> [u64; SQL_STAT_COUNT] {
        std::array::from_fn(|i| self.sql_stats[i].load(Relaxed))
    }

    /// User calls, DB time and DB CPU (microseconds), an open call counted up to now.
    pub(crate) fn call_counts(&self) -> [u64; 3] {
        let user_calls = self.user_calls.load(Relaxed);
        let (db_time_ns, db_cpu_ns) = self.time.read();
        [user_calls, db_time_ns / 1000, db_cpu_ns / 1000]
    }

    pub fn sql_stat(&self, stat: SqlStat) -> u64 {
        self.sql_stats[stat as usize].load(Relaxed)
    }

    pub fn events(&self) -> [EventSnapshot; DB_EVENT_COUNT] {
        std::array::from_fn(|i| self.events[i].snapshot())
    }
}

/// The open sessions, and the totals of those closed.
#[derive(Default)]
pub struct SessionRegistry {
    inner: Mutex<Registry>,
    /// Waits of background work (checkpoints).
    background: [EventCounters; DB_EVENT_COUNT],
}

#[derive(Default)]
struct Registry {
    next_sid: u64,
    live: BTreeMap<u64, Arc<SessionEntry>>,
    retired_events: [EventSnapshot; DB_EVENT_COUNT],
    retired_net: [u64; NET_STAT_COUNT],
    retired_sql: [u64; SQL_STAT_COUNT],
    /// User calls, DB time and DB CPU of the sessions closed.
    retired_calls: [u64; 3],
}

/// Adds `more` to `totals`, figure by figure.
fn add<const N: usize>(totals: &mut [u64; N], more: [u64; N]) {
    for (total, n) in totals.iter_mut().zip(more) {
        *total += n;
    }
}

impl SessionRegistry {
    /// Registers a new session with its redo statistics and interrupt.
    pub(crate) fn open(&self, redo: Arc<StatsSet>, interrupt: Arc<redo::Interrupt>) -> Arc<SessionEntry> {
        let mut r = self.inner.lock().expect("session registry poisoned");
        r.next_sid += 1;
        let entry = Arc::new(SessionEntry {
            sid: r.next_sid,
            logon_unix_us: unix_us(),
            client: Mutex::new(ClientInfo {
                username: "embedded".into(),
                program: std::env::args().next().unwrap_or_default(),
                machine: String::new(),
            }),
            sql: Mutex::new(Arc::from("")),
            redo,
            events: Default::default(),
            current_wait: AtomicU64::new(0),
            waited_us: AtomicU64::new(0),
            user_calls: AtomicU64::new(0),
            time: TimeModel::default(),
            net: Default::default(),
            sql_stats: Default::default(),
            cancel: CancelFlag::new(interrupt),
        });
        r.live.insert(entry.sid, entry.clone());
        entry
    }

    /// Removes a closed session, keeping its counts in the totals.
    pub(crate) fn close(&self, sid: u64) {
        let mut r = self.inner.lock().expect("session registry poisoned");
        if let Some(entry) = r.live.remove(&sid) {
            for (total, e) in r.retired_events.iter_mut().zip(entry.events()) {
                total.merge(&e);
            }
            add(&mut r.retired_net, entry.net());
            add(&mut r.retired_sql, entry.sql_stats());
            add(&mut r.retired_calls, entry.call_counts());
        }
    }

    /// System totals of the sessions' SQL statistics (see [`SqlStat`]), closed sessions
    /// and open ones: each session counts only its own (a counter every session added to
    /// would move its cache line between the CPUs on every call).
    pub fn sql_totals(&self) -> [u64; SQL_STAT_COUNT] {
        self.totals(|r| r.retired_sql, SessionEntry::sql_stats)
    }

    /// System totals of user calls, DB time and DB CPU (microseconds), closed sessions and
    /// open ones.
    pub fn call_totals(&self) -> [u64; 3] {
        self.totals(|r| r.retired_calls, SessionEntry::call_counts)
    }

    /// A figure's totals: the closed sessions' (`retired`) plus each open one's.
    fn totals<const N: usize>(
        &self,
        retired: impl Fn(&Registry) -> [u64; N],
        of: impl Fn(&SessionEntry) -> [u64; N],
    ) -> [u64; N] {
        let r = self.inner.lock().expect("session registry poisoned");
        let mut totals = retired(&r);
        for entry in r.live.values() {
            add(&mut totals, of(entry));
        }
        totals
    }

    /// System totals of the client traffic statistics.
    pub fn net_totals(&self) -> [u64; NET_STAT_COUNT] {
        self.totals(|r| r.retired_net, SessionEntry::net)
    }

    /// The open sessions, by SID.
    pub fn live(&self) -> Vec<Arc<SessionEntry>> {
        self.inner.lock().expect("session registry poisoned").live.values().cloned().collect()
    }

    /// Counts a wait of background work.
    pub(crate) fn record_background(&self, event: DbEvent, waited: Duration) {
        self.background[event.index()].record(Some(waited));
    }

    /// The waits in progress in the open sessions, by event name: how long each has lasted
    /// so far (us), summed. A sample keeps them beside the events' totals, which count a
    /// wait only once it ends (see `call_clock`).
    pub fn waits_in_progress(&self) -> BTreeMap<&'static str, u64> {
        let mut waits = BTreeMap::new();
        for entry in self.live() {
            if let Some((event, lasted)) = entry.current_wait() {
                *waits.entry(event.name()).or_insert(0) += lasted.as_micros() as u64;
            }
        }
        waits
    }

    /// System totals of the database-layer events: background work, closed sessions and
    /// open ones.
    pub fn event_totals(&self) -> [EventSnapshot; DB_EVENT_COUNT] {
        let r = self.inner.lock().expect("session registry poisoned");
        let mut totals = r.retired_events;
        for (total, e) in totals.iter_mut().zip(&self.background) {
            total.merge(&e.snapshot());
        }
        for entry in r.live.values() {
            for (total, e) in totals.iter_mut().zip(entry.events()) {
                total.merge(&e);
            }
        }
        totals
    }
}
