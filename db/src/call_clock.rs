//! The time model of a session: `DB time` and `DB CPU`, and the rule they keep with the
//! wait interface, Oracle's: for every call, DB time >= DB CPU + the call's non-idle waits.
//!
//! # Calls: DB time
//! DB time is the time a session spends in calls, waits included. A call is open:
//! - for an embedded API call (`Session::user_call`): from its start to its return;
//! - for a wire client's request (`Session::client_call_begin` / `client_call_end`): from
//!   the moment the server takes up the messages that arrived to the moment it has sent
//!   the reply. Inside: the server's own work on them (parse, bind, describe, rows
//!   encoded), the SQL calls they make, the `log file sync` the server awaits for a
//!   commit, `SQL*Net message to client` (sending the reply), and `SQL*Net more data from
//!   client` (waiting for the rest of a request that came in parts: a pipeline up to its
//!   Sync, a COPY's data up to its end). Only `SQL*Net message from client` (Idle: waiting
//!   for the next request) lies between calls;
//! - for a durability wait a session left to its caller (`DurabilityWait`), until it ends.
//!
//! Calls nest (a request's SQL calls, a commit's durability wait that outlives its call),
//! and the session's DB time grows while at least one is open, from the outermost one's
//! start to its end: every wait recorded inside, and the CPU of every piece of work inside,
//! lies within that span. [`TimeModel`] holds it as one word that a reader turns into DB
//! time *now*, an open call counted up to the moment of reading: so whatever a reader sees
//! of the session's waits and CPU (read before), the DB time it reads covers.
//!
//! # Work: DB CPU
//! CPU is measured over *work*: a stretch of a call that runs on one thread (an embedded
//! call; the part of a wire request the server's worker runs between two awaits). It needs
//! the thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`), a system call: 0.3 to 0.7 us where
//! it was measured, against calls of 5 to 10 us in a commit loop. Reading it at both ends
//! of every call cost a commit loop a quarter of its throughput, so it is read around a
//! *sample* of the work. The probability of reading it is decided before the work starts,
//! from the CPU the session's measured work typically uses: 1 from [`EXACT_CALL_NS`] of
//! CPU up (such work is measured exactly, and two reads cost it under 0.6%), proportionally
//! less for shorter work, never under [`MIN_PROBABILITY_Q16`]/65536. (CPU, not elapsed
//! time: with more sessions than CPUs a short call's elapsed time is mostly waiting for a
//! CPU, and the read would cost as much as ever.)
//!
//! The estimate is Horvitz-Thompson's: measured work counts its CPU divided by the
//! probability it had of being measured, which is unbiased. But a 3 us call measured at a
//! probability of 1/64 counts 192 us, and over a few thousand short calls that overshoots
//! their DB time (issue 19: DB CPU at 536% of DB time). So the estimate is not added to DB
//! CPU as it is made: it goes into the session's *pending CPU*, and each piece of work,
//! measured or not, moves into DB CPU as much of it as its own *busy time* allows (its
//! elapsed time less the waits recorded during it: the session's `waited_us` before and
//! after). No piece of work ever adds more CPU than it had time for, so the rule holds for
//! every call and for any stretch of calls, not only on average; and since work uses less
//! CPU than its busy time, the pending CPU drains as fast as it fills: what reaches DB
//! CPU is the unbiased estimate, a few pieces of work late. Its error over N pieces of
//! short work is about sqrt(1/(p N)), 2% over the 2x10^5 calls of one second of a commit
//! loop (p at the floor, 1/64), and the session's first pieces of work are measured
//! exactly while it learns. (A ratio of the CPU to the busy time of the last few measured
//! pieces, applied to the others, was tried and left: a piece of work the scheduler
//! preempted has a long busy time and little CPU, such pieces are rare, and a ratio over a
//! few measurements mostly misses them: on a loaded machine it counted twice the CPU the
//! thread used.) Measured work counts at most its busy time as CPU: the CPU clock is read
//! inside the work's two stamps, and the cap takes off what a wait spent on CPU, which
//! the wait counts already.
//!
//! # Readers
//! The session's thread is the only writer of its [`TimeModel`] (and of its waits): plain
//! loads and stores, no locked instruction on the commit path. A reader reads the
//! session's waits first, then `TimeModel::read` (DB CPU, then the DB time word, then the
//! clock): each wait and each piece of work it saw ended before the DB time it then reads,
//! so DB time >= DB CPU + waits in every reading.
//!
//! Between two readings (two AWR snapshots) it holds too, for calls that run across
//! them: the DB time of a call open at a reading is counted up to the reading, so the
//! interval after it gets only the rest. Its waits and its CPU must follow: a wait in
//! progress at a sample is sampled with its time so far (`EventSample::in_progress_us`,
//! which the next interval takes off), and work running at a reading adds to DB CPU at
//! most the DB time after the reading, less its waits: each reader leaves the DB time it
//! reported in the session's [`TimeModel`] (its *read floor*), and the work's room starts
//! there; what it used before stays pending. A reader and the session's publishing of
//! CPU exclude each other without a lock: the reader marks its read in the CPU word, and
//! the session publishes with a compare-and-swap that fails when a read began (or ended)
//! since it loaded the floor; it then takes the new floor, or, with a read in progress,
//! leaves its CPU pending for its next piece of work. (A flag checked before a plain
//! store is not enough: a sample taken between the check and the store found the CPU
//! missing, and the next interval then got CPU from before the sample; seen once in CI,
//! 9 us over in a 250 ms interval.) Long work publishes its CPU every [`FOLD_NS`]
//! (`Session::fold_long_work`), so that little is left to hold back.
//! DB time read from an open call may run a little ahead of the time the call then
//! records at its end (the reader's clock read falls between the writer's last stamp and
//! its store); each session keeps the highest DB time read so far and never reports less,
//! so the figures never go backwards between snapshots.
//!
//! Never shared: each `Session` owns its [`CallClock`]; its [`TimeModel`] is in its
//! registry entry.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{fence, AtomicU32, AtomicU64};
use std::time::Duration;

use redo::clock::Stamp;
use redo::stats::thread_cpu_time;

/// Work using this much CPU (typically) has its CPU read every time.
pub const EXACT_CALL_NS: u64 = 200_000;

/// The lowest probability of a piece of work having its CPU read, in 1/65536.
pub const MIN_PROBABILITY_Q16: u64 = 1 << 10;

/// Long work publishes the CPU it has used every this often (see the module docs).
pub const FOLD_NS: u64 = 10_000_000;

const ONE_Q16: u64 = 1 << 16;

/// A session's clock for the CPU of its work (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallClock {
    /// xorshift64 state (never 0).
    rng: u64,
    /// Moving average of the CPU of the session's measured work (ns); starts at
    /// [`EXACT_CALL_NS`] so the first pieces of work are measured exactly.
    typical_cpu_ns: u64,
    /// The estimated CPU not yet in DB CPU (ns; see the module docs).
    pending_cpu_ns: u64,
}

/// A piece of work in progress. Times are on the clock's nanosecond scale
/// (`Stamp::nanos`): each stamp is converted once, and differences need no conversion.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Work {
    /// Its start, and where the CPU it has published so far ends (`fold`).
    at_ns: u64,
    /// The session's waits (us) at `at_ns`.
    waited_us: u64,
    /// The thread's CPU clock at `at` and the work's probability of being measured (in
    /// 1/65536), if it is measured.
    cpu: Option<(Duration, u64)>,
}

/// What a piece of work adds to the time model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WorkTime {
    /// Its end, and the same on the nanosecond scale: what closes its call when it is
    /// the call's only work.
    pub end: Stamp,
    pub end_ns: u64,
    /// Its elapsed time, for its statement's `elapsed_time` (`v$sql`).
    pub elapsed_ns: u64,
    /// What it adds to DB CPU: at most `elapsed_ns` less its waits.
    pub cpu_ns: u64,
}

impl Work {
    /// When it started (or last published its CPU: `CallClock::fold`), on the nanosecond
    /// scale.
    pub fn started_ns(&self) -> u64 {
        self.at_ns
    }
}

impl CallClock {
    pub fn new(seed: u64) -> CallClock {
        CallClock {
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            typical_cpu_ns: EXACT_CALL_NS,
            pending_cpu_ns: 0,
        }
    }

    #[inline]
    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// The probability (in 1/65536) that the next piece of work has its CPU read.
    #[inline]
    fn probability_q16(&self) -> u64 {
        (self.typical_cpu_ns.saturating_mul(ONE_Q16) / EXACT_CALL_NS).clamp(MIN_PROBABILITY_Q16, ONE_Q16)
    }

    /// Work starts at `at_ns` (a stamp just read, on the nanosecond scale), with the
    /// session's waits at `waited_us`. The CPU clock, when read, is read after the stamp.
    #[inline]
    pub fn begin(&mut self, at_ns: u64, waited_us: u64) -> Work {
        let p = self.probability_q16();
        let measured = p >= ONE_Q16 || self.next_random() % ONE_Q16 < p;
        Work { at_ns, waited_us, cpu: measured.then(|| (thread_cpu_time(), p)) }
    }

    /// The work `work` ends now, with the session's waits at `waited_us`: its CPU is
    /// published to `model` (as much as fits, see the module docs). The CPU clock, when
    /// read, is read before the stamp that ends the work.
    #[inline]
    pub fn end(&mut self, work: Work, waited_us: u64, model: &TimeModel) -> WorkTime {
        let used =
            work.cpu.map(|(before, p)| (thread_cpu_time().saturating_sub(before).as_nanos() as u64, p));
        let end = Stamp::now();
        let end_ns = end.nanos();
        let (elapsed_ns, cpu_ns) = self.account(&work, used, end_ns, waited_us, model);
        WorkTime { end, end_ns, elapsed_ns, cpu_ns }
    }

    /// Publishes what long work has used so far: returns the CPU it added now and moves
    /// the work's start to now (the part before is accounted), measuring it from here on
    /// if it was not (so its CPU from now is exact: a long piece of work is worth two
    /// reads).
    pub fn fold(&mut self, work: &mut Work, waited_us: u64, model: &TimeModel) -> u64 {
        let used =
            work.cpu.map(|(before, p)| (thread_cpu_time().saturating_sub(before).as_nanos() as u64, p));
        let now_ns = Stamp::now().nanos();
        let (_, cpu_ns) = self.account(work, used, now_ns, waited_us, model);
        // The rest is measured from a CPU reading after `now`, as `begin` does.
        *work = Work { at_ns: now_ns, waited_us, cpu: Some((thread_cpu_time(), ONE_Q16)) };
        cpu_ns
    }

    /// The elapsed time of `work` up to `end`, and the CPU it published to `model` (see
    /// the module docs): `used` is the CPU it used and its probability of being measured,
    /// if it was.
    #[inline]
    fn account(
        &mut self,
        work: &Work,
        used: Option<(u64, u64)>,
        end_ns: u64,
        waited_us: u64,
        model: &TimeModel,
    ) -> (u64, u64) {
        let elapsed_ns = end_ns.saturating_sub(work.at_ns);
        let waited_us = waited_us.saturating_sub(work.waited_us);
        let busy_ns = elapsed_ns.saturating_sub(waited_us.saturating_mul(1000));
        if let Some((used_ns, _)) = used {
            self.typical_cpu_ns = self.typical_cpu_ns - self.typical_cpu_ns / 8 + used_ns / 8;
        }
        // Outside a timed call there is no DB time for CPU to be part of.
        let Some(offset) = model.open_offset() else { return (elapsed_ns, 0) };
        if let Some((used_ns, p)) = used {
            // (Below 2^47 ns, four days, times 2^16: no overflow in 64 bits.)
            let estimate = used_ns.min(busy_ns).min(1 << 47) * ONE_Q16 / p;
            self.pending_cpu_ns = self.pending_cpu_ns.saturating_add(estimate);
        }
        // The room is counted on the DB time scale in whole microseconds, as the views show
        // DB time, DB CPU and waits: the microseconds DB time crosses while the work runs,
        // less those of its waits. Any two readings around the work then differ by at
        // least its CPU and its waits, whatever the rounding. If a reader read the time
        // model while the work ran, only the time after the DB time it reported counts (it
        // holds the DB time up to there; less every wait of the work, which may have ended
        // after it).
        let db_time_us = |ns: u64| (offset.wrapping_add(ns) & MASK_63) / 1000;
        let (start_us, end_us) = (db_time_us(work.at_ns), db_time_us(end_ns));
        let pending_us = self.pending_cpu_ns / 1000;
        let cpu_us = model.publish_cpu(|read_floor_us| {
            let crossed_us = end_us.saturating_sub(start_us.max(read_floor_us));
            crossed_us.saturating_sub(waited_us).min(busy_ns / 1000).min(pending_us)
        });
        self.pending_cpu_ns -= cpu_us * 1000;
        (elapsed_ns, cpu_us * 1000)
    }
}

/// A session's published time model: its DB time and DB CPU, and whether it is in a call.
/// Written only by the session's own thread (see the module docs); read by anyone.
#[derive(Debug, Default)]
pub struct TimeModel {
    /// How many calls are open: the session is ACTIVE while this is above 0.
    open_calls: AtomicU32,
    /// DB time as one word, so that a reader never sees a call half counted: with bit 0
    /// clear the rest is the DB time (ns); with it set (a timed call is open) the rest is
    /// the DB time before the call less the call's start on the clock's nanosecond scale
    /// (wrapping, 63 bits), and DB time now is the rest plus now.
    db_time: AtomicU64,
    /// DB CPU (us) and the readers' marks, one word (see [`CpuWord`]): the session
    /// publishes CPU into it only while no read is in progress and none began or ended
    /// since it loaded the read floor.
    db_cpu: AtomicU64,
    /// The highest DB time (ns) a reader has returned, the read floor (written by readers
    /// only).
    db_time_read_ns: AtomicU64,
}

/// The layout of `TimeModel::db_cpu`: DB CPU in microseconds above bit 16 (2^48 us, eight
/// years of CPU), the generation of reads (bumped as each read ends, wrapping in its 8
/// bits) and, in the low 8 bits, the reads in progress.
struct CpuWord;

impl CpuWord {
    const READERS: u64 = 0xFF;
    const GENERATION: u64 = 0xFF00;
    const GENERATION_ONE: u64 = 0x100;
    const CPU_SHIFT: u32 = 16;

    fn cpu_us(word: u64) -> u64 {
        word >> Self::CPU_SHIFT
    }

    /// `word` after a read ended: one reader fewer, the next generation.
    fn read_ended(word: u64) -> u64 {
        debug_assert!(word & Self::READERS > 0, "a read ends that did not begin");
        let generation = word.wrapping_add(Self::GENERATION_ONE) & Self::GENERATION;
        ((word & !Self::GENERATION) | generation) - 1
    }
}

const OPEN: u64 = 1;
const MASK_63: u64 = u64::MAX >> 1;

impl TimeModel {
    /// Whether a call is open.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.open_calls.load(Relaxed) > 0
    }

    /// The DB time scale of the open timed call: DB time at a stamp `t` is this plus
    /// `t.nanos()` (mod 2^63). None when no timed call is open. (The writer's own read.)
    #[inline]
    pub(crate) fn open_offset(&self) -> Option<u64> {
        let word = self.db_time.load(Relaxed);
        (word & OPEN != 0).then_some(word >> 1)
    }

    /// A call opens at `at_ns` (`Stamp::nanos`; None: not timed). DB time grows from the
    /// outermost timed one.
    #[inline]
    pub(crate) fn open(&self, at_ns: Option<u64>) {
        let open = self.open_calls.load(Relaxed);
        if open == 0 {
            if let Some(at_ns) = at_ns {
                let db_time = self.db_time.load(Relaxed);
                debug_assert_eq!(db_time & OPEN, 0, "no call is open");
                let since = (db_time >> 1).wrapping_sub(at_ns) & MASK_63;
                self.db_time.store((since << 1) | OPEN, Release);
            }
        }
        self.open_calls.store(open + 1, Relaxed);
    }

    /// A call ends; if it was the outermost and timed, its DB time is counted up to the
    /// time `end_ns` returns (`Stamp::nanos`, read only then).
    #[inline]
    pub(crate) fn close(&self, end_ns: impl FnOnce() -> u64) {
        let open = self.open_calls.load(Relaxed);
        assert!(open > 0, "a call ends that was not open");
        if open == 1 {
            let db_time = self.db_time.load(Relaxed);
            if db_time & OPEN != 0 {
                let total = (db_time >> 1).wrapping_add(end_ns()) & MASK_63;
                self.db_time.store(total << 1, Release);
            }
        }
        self.open_calls.store(open - 1, Relaxed);
    }

    /// Adds CPU of work that has ended (or folded) inside an open timed call: `fits` says
    /// how many microseconds fit above a read floor (the DB time, in us, that readers
    /// have reported so far). Returns the microseconds added: 0 while a read is in
    /// progress (the work's CPU then waits for later work). Only the session's thread
    /// calls it. Outside a timed call (work timed inside a call that is not, after
    /// `timed_statistics` was turned on in the middle of it) nothing is added: there is
    /// no DB time for it to be part of.
    #[inline]
    pub(crate) fn publish_cpu(&self, fits: impl Fn(u64) -> u64) -> u64 {
        if self.db_time.load(Relaxed) & OPEN == 0 {
            return 0;
        }
        let mut word = self.db_cpu.load(Acquire);
        loop {
            if word & CpuWord::READERS != 0 {
                return 0;
            }
            // Loaded after the word: a read that ended before the word was loaded left
            // its floor before its end (Release), so it is seen here.
            let floor_us = self.db_time_read_ns.load(Acquire) / 1000;
            let us = fits(floor_us);
            if us == 0 {
                return 0;
            }
            debug_assert!(CpuWord::cpu_us(word) + us < 1 << 48, "DB CPU overflows its word");
            let published = word + (us << CpuWord::CPU_SHIFT);
            match self.db_cpu.compare_exchange_weak(word, published, AcqRel, Acquire) {
                Ok(_) => return us,
                // A read began or ended (or the CAS failed spuriously): again, with its floor.
                Err(now) => word = now,
            }
        }
    }

    /// DB time and DB CPU now, in nanoseconds, an open call counted up to now. Read the
    /// session's waits before this (see the module docs).
    pub fn read(&self) -> (u64, u64) {
        // The waits the caller read before must not be read after the time model.
        fence(Acquire);
        // The read begins: the session publishes no CPU until it ends, so none is added
        // between the CPU read here and the floor left below.
        let word = self
            .db_cpu
            .fetch_update(AcqRel, Acquire, |w| (w & CpuWord::READERS != CpuWord::READERS).then_some(w + 1))
            .unwrap_or_else(|_| self.wait_for_a_reader_slot());
        let cpu = CpuWord::cpu_us(word) * 1000;
        let db_time_word = self.db_time.load(Acquire);
        let db_time = if db_time_word & OPEN != 0 {
            (db_time_word >> 1).wrapping_add(Stamp::now_ordered().nanos()) & MASK_63
        } else {
            db_time_word >> 1
        };
        let reported = self.db_time_read_ns.fetch_max(db_time, Release).max(db_time);
        self.db_cpu.fetch_update(AcqRel, Acquire, |w| Some(CpuWord::read_ended(w))).expect("always updates");
        (reported, cpu)
    }

    /// 255 reads of this session are in progress: the read begins when one of them ends.
    #[cold]
    fn wait_for_a_reader_slot(&self) -> u64 {
        loop {
            std::thread::yield_now();
            let w = self.db_cpu.load(Acquire);
            if w & CpuWord::READERS != CpuWord::READERS
                && self.db_cpu.compare_exchange(w, w + 1, AcqRel, Acquire).is_ok()
            {
                return w;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The time model of a session in a timed call that opened at the clock's epoch,
    /// never read.
    fn in_a_call() -> TimeModel {
        let model = TimeModel::default();
        model.open(Some(0));
        model
    }

    fn spin(d: Duration) {
        let t = std::time::Instant::now();
        while t.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn long_work_is_measured_exactly_and_never_over_its_time() {
        let mut clock = CallClock::new(1);
        let model = in_a_call();
        let (mut time, mut cpu) = (0, 0);
        let cpu_before = thread_cpu_time();
        for _ in 0..20 {
            let work = clock.begin(Stamp::now().nanos(), 0);
            assert!(work.cpu.is_some(), "a session of long calls reads the CPU clock every time");
            spin(Duration::from_micros(300));
            let t = clock.end(work, 0, &model);
            assert!(t.elapsed_ns >= 299_000, "{t:?}");
            assert!(t.cpu_ns <= t.elapsed_ns, "{t:?}");
            (time, cpu) = (time + t.elapsed_ns, cpu + t.cpu_ns);
        }
        // The truth: the CPU the thread used around all of it (the machine may have taken
        // the CPU away now and then, so it is not the elapsed time).
        let used = thread_cpu_time().saturating_sub(cpu_before).as_nanos() as u64;
        // (The thread's CPU clock is not exactly monotonic across CPUs on every machine:
        // a few us of slack.)
        let ratio = cpu as f64 / used as f64;
        assert!((0.9..1.01).contains(&ratio), "DB CPU {cpu} ns, the thread used {used} ns");
        assert!(cpu <= time, "DB CPU {cpu} ns vs DB time {time} ns");
    }

    #[test]
    fn short_work_is_sampled_and_the_estimate_adds_up() {
        let mut clock = CallClock::new(7);
        let model = in_a_call();
        let (mut time, mut cpu, mut measured) = (0u64, 0u64, 0u64);
        let n = 20_000;
        let cpu_before = thread_cpu_time();
        for _ in 0..n {
            let work = clock.begin(Stamp::now().nanos(), 0);
            measured += work.cpu.is_some() as u64;
            spin(Duration::from_micros(10));
            let t = clock.end(work, 0, &model);
            assert!(t.cpu_ns <= t.elapsed_ns, "no piece of work adds more CPU than its time: {t:?}");
            time += t.elapsed_ns;
            cpu += t.cpu_ns;
        }
        assert!(measured < n / 3, "short work is sampled: {measured} of {n} measured");
        assert!(measured > n / 50, "but not too rarely: {measured} of {n}");
        // The estimate against the truth: the CPU the thread used around all of it (which
        // also holds the loop's own work and the sampled clock reads, a few percent).
        let used = thread_cpu_time().saturating_sub(cpu_before).as_nanos() as u64;
        let ratio = cpu as f64 / used as f64;
        assert!((0.75..=1.1).contains(&ratio), "DB CPU {cpu} ns, the thread used {used} ns");
        assert!(cpu <= time, "DB CPU {cpu} ns vs DB time {time} ns");
        assert!(time >= 10_000 * n, "no call loses its fraction of a microsecond: {time}");
    }

    #[test]
    fn waits_inside_work_are_not_cpu() {
        let mut clock = CallClock::new(5);
        let model = in_a_call();
        // A measured piece of work that spins 200 us, of which the session records 150 us
        // as a wait (as a wait that spins before it sleeps would): 50 us of CPU at most.
        let work = clock.begin(Stamp::now().nanos(), 1_000);
        assert!(work.cpu.is_some());
        spin(Duration::from_micros(200));
        let t = clock.end(work, 1_150, &model);
        assert!(t.cpu_ns <= t.elapsed_ns - 150_000, "{t:?}");
        assert!(clock.pending_cpu_ns < 1000, "exact measurements leave less than a microsecond pending");
        assert_eq!(t.cpu_ns % 1000, 0, "DB CPU grows by whole microseconds");
        // Estimated CPU beyond a piece of work's busy time waits for later work.
        clock.pending_cpu_ns = 1_000_000_000;
        let work = Work { at_ns: Stamp::now().nanos(), waited_us: 0, cpu: None };
        spin(Duration::from_micros(100));
        let t = clock.end(work, 1_000_000, &model);
        assert_eq!(t.cpu_ns, 0, "work that waited all its time has no CPU: {t:?}");
        let work = Work { at_ns: Stamp::now().nanos(), waited_us: 0, cpu: None };
        spin(Duration::from_micros(100));
        let t = clock.end(work, 0, &model);
        assert!(
            t.cpu_ns <= t.elapsed_ns && t.cpu_ns + 2_000 >= t.elapsed_ns,
            "pending CPU fills the busy time: {t:?}"
        );
        assert!(clock.pending_cpu_ns + t.cpu_ns <= 1_000_000_000 + 1000);
    }

    #[test]
    fn folding_long_work_publishes_its_cpu_as_it_goes() {
        let mut clock = CallClock::new(9);
        let model = in_a_call();
        clock.typical_cpu_ns = 1;
        let mut work = loop {
            let work = clock.begin(Stamp::now().nanos(), 0);
            if work.cpu.is_none() {
                break work;
            }
            clock.end(work, 0, &model);
        };
        clock.pending_cpu_ns = 0;
        let started = Stamp::now();
        spin(Duration::from_millis(2));
        let first = clock.fold(&mut work, 0, &model);
        assert_eq!(first, 0, "not measured, nothing pending: nothing to publish yet");
        assert!(work.cpu.is_some(), "measured from the first fold on");
        spin(Duration::from_millis(2));
        let second = clock.fold(&mut work, 0, &model);
        let rest = clock.end(work, 0, &model).cpu_ns;
        let elapsed = started.elapsed().as_nanos() as u64;
        assert!(second > 0, "the measured part's CPU is published at the fold: {second}");
        assert!(second + rest <= elapsed, "{second} + {rest} vs {elapsed}");
    }

    #[test]
    fn the_probability_follows_the_typical_work_length() {
        let mut clock = CallClock::new(3);
        assert_eq!(clock.probability_q16(), ONE_Q16);
        clock.typical_cpu_ns = EXACT_CALL_NS / 4;
        assert_eq!(clock.probability_q16(), ONE_Q16 / 4);
        clock.typical_cpu_ns = 1;
        assert_eq!(clock.probability_q16(), MIN_PROBABILITY_Q16);
    }

    #[test]
    fn db_time_grows_while_a_call_is_open_and_stops_at_its_end() {
        redo::clock::init();
        let model = TimeModel::default();
        assert_eq!(model.read(), (0, 0));
        let start = Stamp::now();
        model.open(Some(start.nanos()));
        model.open(None);
        assert!(model.is_active());
        spin(Duration::from_millis(2));
        let (during, _) = model.read();
        assert!(during >= 2_000_000, "an open call counts up to now: {during}");
        model.close(|| panic!("a nested call reads no clock"));
        assert_eq!(model.publish_cpu(|_| 500), 500);
        let end = Stamp::now();
        model.close(|| end.nanos());
        assert!(!model.is_active());
        let (after, cpu) = model.read();
        assert_eq!(cpu, 500_000);
        assert!(after >= during && after >= end.since(start).as_nanos() as u64, "{after} vs {during}");
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(model.read().0, after, "no call open: DB time stands still");
        // An untimed call counts no time.
        model.open(None);
        model.close(|| panic!("an untimed call reads no clock"));
        assert_eq!(model.read().0, after);
    }

    #[test]
    fn cpu_waits_while_a_read_is_in_progress_and_then_fits_above_what_it_reported() {
        redo::clock::init();
        let model = TimeModel::default();
        let start = Stamp::now();
        model.open(Some(start.nanos()));
        spin(Duration::from_millis(1));
        // A read in progress (as another thread's would be, between its marks).
        model.db_cpu.fetch_add(1, AcqRel);
        assert_eq!(model.publish_cpu(|_| 100), 0, "no CPU is published under a read");
        model.db_cpu.fetch_update(AcqRel, Acquire, |w| Some(CpuWord::read_ended(w))).unwrap();
        assert_eq!(model.publish_cpu(|_| 100), 100);
        // A finished read leaves the DB time it reported as the floor the next CPU
        // must fit above.
        let (reported, cpu) = model.read();
        assert_eq!(cpu, 100_000);
        let seen = std::cell::Cell::new(0);
        model.publish_cpu(|floor_us| {
            seen.set(floor_us);
            0
        });
        assert_eq!(seen.get(), reported / 1000);
        assert_eq!(model.db_cpu.load(Relaxed) & CpuWord::READERS, 0, "no read is left in progress");
    }

    #[test]
    fn reads_and_publishing_from_two_threads_never_show_cpu_above_db_time_between_reads() {
        redo::clock::init();
        let model = std::sync::Arc::new(TimeModel::default());
        let start = Stamp::now();
        model.open(Some(start.nanos()));
        let writer = {
            let model = model.clone();
            std::thread::spawn(move || {
                let mut clock = CallClock::new(11);
                let deadline = std::time::Instant::now() + Duration::from_millis(300);
                while std::time::Instant::now() < deadline {
                    let mut work = clock.begin(Stamp::now().nanos(), 0);
                    spin(Duration::from_micros(50));
                    clock.fold(&mut work, 0, &model);
                    spin(Duration::from_micros(50));
                    clock.end(work, 0, &model);
                }
            })
        };
        let mut last = model.read();
        while !writer.is_finished() {
            let now = model.read();
            let (db_time_us, cpu_us) = (now.0 / 1000 - last.0 / 1000, now.1 / 1000 - last.1 / 1000);
            assert!(cpu_us <= db_time_us, "between two reads: DB CPU {cpu_us} us > DB time {db_time_us} us");
            last = now;
        }
        writer.join().unwrap();
    }
}
