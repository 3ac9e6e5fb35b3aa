//! Wait events and statistics counted by the redo log, always on and cheap: each session
//! writes its own [`StatsSet`] (single writer, no contended cache lines on the commit
//! path) and the log writer writes the background set; system totals are sums taken when
//! someone reads them.
//!
//! Names are Oracle's where the concept is the same, so DBAs read them as they know them.
//! Times are microseconds. Histograms have power-of-two microsecond buckets: bucket 0
//! counts waits under 1 us, bucket `i` waits in `[2^(i-1), 2^i)` us.
//!
//! # timed_statistics
//! Counting is always on; timing follows Oracle's `timed_statistics` parameter (default
//! TRUE). With it FALSE the clock is never read for the wait interface: a wait is still
//! counted (its waits, and every statistic's count, stay exact) but has no time: it adds 0
//! to the event's time, leaves its maximum alone and goes in no histogram bucket (a bucket
//! is a time). That is Oracle's behaviour: "the value of all time-related statistics is
//! set to zero", while TOTAL_WAITS keeps counting. A wait in progress shows as lasting 0.
//! Callers pass the time as an `Option`: `None` means "not timed". Times come from the
//! wait interface's own clock ([`crate::clock::Stamp`], one `rdtsc` where the kernel
//! trusts the TSC). Clock reads that steer behaviour (batch timeouts, LGWR's sleep) are not
//! instrumentation: they keep `Instant` and stay whatever `timed_statistics` says.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::clock::Stamp;
use crate::config::CommitLogging;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitClass {
    Commit,
    SystemIo,
    Configuration,
}

impl WaitClass {
    pub fn name(self) -> &'static str {
        match self {
            WaitClass::Commit => "Commit",
            WaitClass::SystemIo => "System I/O",
            WaitClass::Configuration => "Configuration",
        }
    }
}

/// The wait events the redo log measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitEvent {
    /// A session waiting for its commit (and all earlier ones) to become durable.
    LogFileSync,
    /// One write+sync of the log on all members (Oracle's P3: requests, kept in
    /// `redo write requests`).
    LogFileParallelWrite,
    /// A session waiting for room in the log buffer.
    LogBufferSpace,
    /// A session waiting for the next log group to be opened.
    LogFileSwitchCompletion,
    /// A session waiting because the next log group still holds redo a checkpoint needs.
    LogFileSwitchCheckpointIncomplete,
}

pub const EVENT_COUNT: usize = 5;

impl WaitEvent {
    pub const ALL: [WaitEvent; EVENT_COUNT] = [
        WaitEvent::LogFileSync,
        WaitEvent::LogFileParallelWrite,
        WaitEvent::LogBufferSpace,
        WaitEvent::LogFileSwitchCompletion,
        WaitEvent::LogFileSwitchCheckpointIncomplete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WaitEvent::LogFileSync => "log file sync",
            WaitEvent::LogFileParallelWrite => "log file parallel write",
            WaitEvent::LogBufferSpace => "log buffer space",
            WaitEvent::LogFileSwitchCompletion => "log file switch completion",
            WaitEvent::LogFileSwitchCheckpointIncomplete => "log file switch (checkpoint incomplete)",
        }
    }

    pub fn class(self) -> WaitClass {
        match self {
            WaitEvent::LogFileSync => WaitClass::Commit,
            WaitEvent::LogFileParallelWrite => WaitClass::SystemIo,
            _ => WaitClass::Configuration,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Counters kept by the redo log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stat {
    UserCommits,
    UserRollbacks,
    RedoEntries,
    RedoSize,
    RedoWrites,
    RedoBlocksWritten,
    RedoWastage,
    RedoWriteRequests,
    RedoWriteBytes,
    RedoWriteTimeUs,
    RedoSynchWrites,
    RedoSynchTimeUs,
    /// A session sleeping in `log file sync` woken before its redo was durable: by a
    /// write that did not reach it, or spuriously. A write wakes only the waiters it made
    /// durable, so this stays near zero (engine-bench prints it per WAIT commit).
    RedoSynchEarlyWakeups,
    RedoWritesForeground,
    RedoLogSwitches,
    RedoBufferAllocationRetries,
    RedoLogSpaceRequests,
    CommitWaitRequested,
    CommitNowaitRequested,
    CommitBatchRequested,
    CommitImmediateRequested,
    CommitWaitPerformed,
    CommitNowaitPerformed,
    /// Time model: CPU used by the log writer (and other background work of the log).
    BackgroundCpuTimeUs,
    /// Time model: time the log writer spent working (not idle).
    BackgroundElapsedTimeUs,
}

pub const STAT_COUNT: usize = 25;

impl Stat {
    pub const ALL: [Stat; STAT_COUNT] = [
        Stat::UserCommits,
        Stat::UserRollbacks,
        Stat::RedoEntries,
        Stat::RedoSize,
        Stat::RedoWrites,
        Stat::RedoBlocksWritten,
        Stat::RedoWastage,
        Stat::RedoWriteRequests,
        Stat::RedoWriteBytes,
        Stat::RedoWriteTimeUs,
        Stat::RedoSynchWrites,
        Stat::RedoSynchTimeUs,
        Stat::RedoSynchEarlyWakeups,
        Stat::RedoWritesForeground,
        Stat::RedoLogSwitches,
        Stat::RedoBufferAllocationRetries,
        Stat::RedoLogSpaceRequests,
        Stat::CommitWaitRequested,
        Stat::CommitNowaitRequested,
        Stat::CommitBatchRequested,
        Stat::CommitImmediateRequested,
        Stat::CommitWaitPerformed,
        Stat::CommitNowaitPerformed,
        Stat::BackgroundCpuTimeUs,
        Stat::BackgroundElapsedTimeUs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stat::UserCommits => "user commits",
            Stat::UserRollbacks => "user rollbacks",
            Stat::RedoEntries => "redo entries",
            Stat::RedoSize => "redo size",
            Stat::RedoWrites => "redo writes",
            Stat::RedoBlocksWritten => "redo blocks written",
            Stat::RedoWastage => "redo wastage",
            Stat::RedoWriteRequests => "redo write requests",
            Stat::RedoWriteBytes => "redo write bytes",
            Stat::RedoWriteTimeUs => "redo write time (usec)",
            Stat::RedoSynchWrites => "redo synch writes",
            Stat::RedoSynchTimeUs => "redo synch time (usec)",
            Stat::RedoSynchEarlyWakeups => "redo synch early wakeups",
            Stat::RedoWritesForeground => "redo writes by foreground",
            Stat::RedoLogSwitches => "redo log switches",
            Stat::RedoBufferAllocationRetries => "redo buffer allocation retries",
            Stat::RedoLogSpaceRequests => "redo log space requests",
            Stat::CommitWaitRequested => "commit wait requested",
            Stat::CommitNowaitRequested => "commit nowait requested",
            Stat::CommitBatchRequested => "commit batch requested",
            Stat::CommitImmediateRequested => "commit immediate requested",
            Stat::CommitWaitPerformed => "commit wait performed",
            Stat::CommitNowaitPerformed => "commit nowait performed",
            Stat::BackgroundCpuTimeUs => "background cpu time (usec)",
            Stat::BackgroundElapsedTimeUs => "background elapsed time (usec)",
        }
    }
}

/// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID): what the time model's
/// `DB CPU` and `background cpu time` are made of. A system call (about 0.25 us here), so
/// it is read around a call or a write cycle, never per record.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the kernel to fill; the clock always exists.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

pub const HISTOGRAM_BUCKETS: usize = 32;

/// Bucket of a wait of `us` microseconds.
pub fn histogram_bucket(us: u64) -> usize {
    ((64 - us.leading_zeros()) as usize).min(HISTOGRAM_BUCKETS - 1)
}

/// Upper bound (exclusive) in microseconds of bucket `i`.
pub fn histogram_bucket_limit_us(i: usize) -> u64 {
    1u64 << i
}

/// Counters of one wait event (or of any timed thing): waits, total and maximum time, and
/// a power-of-two microsecond histogram. Public so the layers above count their own
/// events (row locks, client round trips) the same way.
///
/// One writer at a time: a session's own counters are written by the thread running the
/// session, the background's by whoever holds the log's write token (the database layer's
/// by its checkpoint, under the images lock); readers read at any time. So `record` uses
/// plain atomic loads and stores, no read-modify-write: on the commit path a locked
/// instruction per counter was a measurable part of what timing costs.
#[derive(Default)]
pub struct EventCounters {
    waits: AtomicU64,
    time_us: AtomicU64,
    max_us: AtomicU64,
    histogram: [AtomicU64; HISTOGRAM_BUCKETS],
}

impl EventCounters {
    /// Counts one wait of `elapsed`, or one wait with no time when `None` (not timed: see
    /// the module docs).
    /// Only the counters' one writer may call it (see the type's docs).
    pub fn record(&self, elapsed: Option<Duration>) {
        self.record_us(elapsed.map(|e| e.as_micros() as u64));
    }

    /// As `record`, the time in microseconds (the commit path's form: no `Duration`).
    pub fn record_us(&self, elapsed_us: Option<u64>) {
        // A reader that sees this wait and then, after an acquire fence, reads the time
        // model sees the call it happened in as open at least (see `db`'s call_clock):
        // everything the writer did before, opening the call included, is ordered before
        // these stores. (A compiler barrier only on x86-64.)
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        let bump = |counter: &AtomicU64, by: u64| counter.store(counter.load(Relaxed) + by, Relaxed);
        bump(&self.waits, 1);
        let Some(us) = elapsed_us else { return };
        bump(&self.time_us, us);
        if us > self.max_us.load(Relaxed) {
            self.max_us.store(us, Relaxed);
        }
        bump(&self.histogram[histogram_bucket(us)], 1);
    }

    pub fn snapshot(&self) -> EventSnapshot {
        let mut out = EventSnapshot {
            waits: self.waits.load(Relaxed),
            time_us: self.time_us.load(Relaxed),
            max_us: self.max_us.load(Relaxed),
            ..EventSnapshot::default()
        };
        for (b, h) in self.histogram.iter().enumerate() {
            out.histogram[b] = h.load(Relaxed);
        }
        out
    }
}

/// The four commit modes, in the order of [`commit_mode_index`].
pub const COMMIT_MODES: [&str; 4] = ["WAIT/IMMEDIATE", "WAIT/BATCH", "NOWAIT/IMMEDIATE", "NOWAIT/BATCH"];

/// Index in [`COMMIT_MODES`] of a commit's resolved mode.
pub fn commit_mode_index(wait: bool, logging: CommitLogging) -> usize {
    match (wait, logging) {
        (true, CommitLogging::Immediate) => 0,
        (true, CommitLogging::Batch) => 1,
        (false, CommitLogging::Immediate) => 2,
        (false, CommitLogging::Batch) => 3,
    }
}

/// One set of events and counters: a session's, or the background's.
#[derive(Default)]
pub struct StatsSet {
    events: [EventCounters; EVENT_COUNT],
    stats: [AtomicU64; STAT_COUNT],
    /// Commit response time (from the call to commit to its return) per commit mode.
    commit_response: [EventCounters; 4],
    /// The wait in progress, for `v$session`: 0 when none, else packed by
    /// [`pack_current_wait`].
    current_wait: AtomicU64,
    /// The time of every wait recorded here (us): a session's time not spent waiting
    /// inside a call is its call time less the growth of this (the time model bounds the
    /// call's CPU estimate with it).
    waited_us: AtomicU64,
}

/// The packed form of a wait in progress (`current_wait` of [`StatsSet`] and of the
/// database layer's sessions): the event's index + 1 in the low 8 bits, its start
/// ([`Stamp::micros`], never 0; 0 when not timed) above.
pub fn pack_current_wait(event_index: usize, started: Option<Stamp>) -> u64 {
    debug_assert!(event_index < 255, "event index {event_index} does not fit in 8 bits");
    (started.map_or(0, Stamp::micros) << 8) | (event_index as u64 + 1)
}

/// The event index and duration so far of a wait packed by [`pack_current_wait`], if one
/// is in progress; an untimed wait has lasted 0.
pub fn unpack_current_wait(packed: u64) -> Option<(usize, Duration)> {
    let index = (packed & 0xff) as usize;
    if index == 0 {
        return None;
    }
    let started = packed >> 8;
    let lasted = if started == 0 {
        Duration::ZERO
    } else {
        Duration::from_micros(Stamp::now().micros().saturating_sub(started))
    };
    Some((index - 1, lasted))
}

impl StatsSet {
    pub fn add(&self, stat: Stat, n: u64) {
        self.stats[stat as usize].fetch_add(n, Relaxed);
    }

    /// Marks the start of a wait on `event` at `started` (None: not timed), ended by
    /// `record_wait`.
    pub fn begin_wait(&self, event: WaitEvent, started: Option<Stamp>) {
        self.current_wait.store(pack_current_wait(event.index(), started), Relaxed);
    }

    /// Counts a wait on `event` that lasted `elapsed` (None: not timed).
    pub fn record_wait(&self, event: WaitEvent, elapsed: Option<Duration>) {
        self.current_wait.store(0, Relaxed);
        let us = elapsed.map(|e| e.as_micros() as u64);
        self.events[event.index()].record_us(us);
        if let Some(us) = us {
            // One writer (see `EventCounters`): a load and a store.
            self.waited_us.store(self.waited_us.load(Relaxed) + us, Relaxed);
        }
    }

    /// The time of all the waits recorded in this set so far, in microseconds (the same
    /// whole microseconds the events add up).
    #[inline]
    pub fn waited_us(&self) -> u64 {
        self.waited_us.load(Relaxed)
    }

    /// Ends a wait begun with `begin_wait` that turned out not to be one.
    pub fn cancel_wait(&self) {
        self.current_wait.store(0, Relaxed);
    }

    /// The wait in progress and how long it has lasted.
    pub fn current_wait(&self) -> Option<(WaitEvent, Duration)> {
        let (index, lasted) = unpack_current_wait(self.current_wait.load(Relaxed))?;
        WaitEvent::ALL.get(index).map(|e| (*e, lasted))
    }

    /// A commit in mode `mode` (see [`commit_mode_index`]) took `elapsed` (None: not
    /// timed, counted only).
    pub fn record_commit_response(&self, mode: usize, elapsed_us: Option<u64>) {
        self.commit_response[mode].record_us(elapsed_us);
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        let mut s = StatsSnapshot::default();
        for (out, e) in s.events.iter_mut().zip(&self.events) {
            *out = e.snapshot();
        }
        for (out, e) in s.commit_response.iter_mut().zip(&self.commit_response) {
            *out = e.snapshot();
        }
        for (i, v) in self.stats.iter().enumerate() {
            s.stats[i] = v.load(Relaxed);
        }
        s
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventSnapshot {
    pub waits: u64,
    pub time_us: u64,
    pub max_us: u64,
    pub histogram: [u64; HISTOGRAM_BUCKETS],
}

impl EventSnapshot {
    /// Adds `other`'s waits to these (the maximum is the larger one).
    pub fn merge(&mut self, other: &EventSnapshot) {
        self.waits += other.waits;
        self.time_us += other.time_us;
        self.max_us = self.max_us.max(other.max_us);
        for (x, y) in self.histogram.iter_mut().zip(&other.histogram) {
            *x += y;
        }
    }

    pub fn avg_us(&self) -> f64 {
        if self.waits == 0 {
            0.0
        } else {
            self.time_us as f64 / self.waits as f64
        }
    }
}

/// A point-in-time copy of counters; subtract two to get the activity in between.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub events: [EventSnapshot; EVENT_COUNT],
    pub stats: [u64; STAT_COUNT],
    /// Commit response time per commit mode, in the order of [`COMMIT_MODES`].
    pub commit_response: [EventSnapshot; 4],
}

impl StatsSnapshot {
    pub fn event(&self, event: WaitEvent) -> &EventSnapshot {
        &self.events[event.index()]
    }

    pub fn get(&self, stat: Stat) -> u64 {
        self.stats[stat as usize]
    }

    pub fn merge(&mut self, other: &StatsSnapshot) {
        let events = self.events.iter_mut().zip(&other.events);
        for (a, b) in events.chain(self.commit_response.iter_mut().zip(&other.commit_response)) {
            a.merge(b);
        }
        for (a, b) in self.stats.iter_mut().zip(&other.stats) {
            *a += b;
        }
    }

    /// Activity between `earlier` and `self` (max is kept from `self`).
    pub fn since(&self, earlier: &StatsSnapshot) -> StatsSnapshot {
        let mut d = *self;
        let events = d.events.iter_mut().zip(&earlier.events);
        for (a, b) in events.chain(d.commit_response.iter_mut().zip(&earlier.commit_response)) {
            a.waits -= b.waits;
            a.time_us -= b.time_us;
            for (x, y) in a.histogram.iter_mut().zip(&b.histogram) {
                *x -= y;
            }
        }
        for (a, b) in d.stats.iter_mut().zip(&earlier.stats) {
            *a -= b;
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_powers_of_two() {
        assert_eq!(histogram_bucket(0), 0);
        assert_eq!(histogram_bucket(1), 1);
        assert_eq!(histogram_bucket(2), 2);
        assert_eq!(histogram_bucket(3), 2);
        assert_eq!(histogram_bucket(4), 3);
        assert_eq!(histogram_bucket(u64::MAX), HISTOGRAM_BUCKETS - 1);
        for us in [0u64, 1, 5, 64, 1000, 123_456] {
            let b = histogram_bucket(us);
            assert!(us < histogram_bucket_limit_us(b));
            assert!(b == 0 || us >= histogram_bucket_limit_us(b - 1));
        }
    }

    #[test]
    fn events_and_stats_accumulate_and_subtract() {
        let set = StatsSet::default();
        let before = set.snapshot();
        set.record_wait(WaitEvent::LogFileSync, Some(Duration::from_micros(70)));
        set.record_wait(WaitEvent::LogFileSync, Some(Duration::from_micros(130)));
        set.add(Stat::UserCommits, 2);
        let d = set.snapshot().since(&before);
        let e = d.event(WaitEvent::LogFileSync);
        assert_eq!((e.waits, e.time_us, e.max_us), (2, 200, 130));
        assert_eq!(e.avg_us(), 100.0);
        assert_eq!(e.histogram[histogram_bucket(70)] + e.histogram[histogram_bucket(130)], 2);
        assert_eq!(d.get(Stat::UserCommits), 2);
        assert_eq!(Stat::ALL.len(), STAT_COUNT);
        assert!(Stat::ALL.iter().enumerate().all(|(i, s)| *s as usize == i));
        assert!(WaitEvent::ALL.iter().enumerate().all(|(i, e)| e.index() == i));
    }

    #[test]
    fn untimed_waits_are_counted_with_no_time_and_no_bucket() {
        let set = StatsSet::default();
        set.record_wait(WaitEvent::LogFileSync, Some(Duration::from_micros(70)));
        set.record_wait(WaitEvent::LogFileSync, None);
        set.record_wait(WaitEvent::LogFileSync, None);
        set.record_commit_response(0, None);
        let s = set.snapshot();
        let e = s.event(WaitEvent::LogFileSync);
        assert_eq!((e.waits, e.time_us, e.max_us), (3, 70, 70));
        assert_eq!(e.histogram.iter().sum::<u64>(), 1, "only the timed wait has a bucket");
        assert_eq!((s.commit_response[0].waits, s.commit_response[0].time_us), (1, 0));
        assert_eq!(s.commit_response[0].histogram.iter().sum::<u64>(), 0);
    }

    #[test]
    fn a_wait_in_progress_shows_its_event_and_an_untimed_one_lasts_zero() {
        let set = StatsSet::default();
        assert_eq!(set.current_wait(), None);
        set.begin_wait(WaitEvent::LogBufferSpace, None);
        assert_eq!(set.current_wait(), Some((WaitEvent::LogBufferSpace, Duration::ZERO)));
        set.begin_wait(WaitEvent::LogFileSync, Some(Stamp::now()));
        std::thread::sleep(Duration::from_millis(5));
        let (event, lasted) = set.current_wait().expect("a wait in progress");
        assert_eq!(event, WaitEvent::LogFileSync);
        assert!(lasted >= Duration::from_millis(5), "{lasted:?}");
        set.cancel_wait();
        assert_eq!(set.current_wait(), None);
    }
}
