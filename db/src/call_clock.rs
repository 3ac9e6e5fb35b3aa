//! The time model's clock for user calls: each session's `DB time` and `DB CPU`.
//!
//! `DB time` is exact: every user call's elapsed time, from two reads of the wait
//! interface's clock (`redo::clock::Stamp`), summed in nanoseconds so that no call loses
//! its fraction of a microsecond.
//!
//! `DB CPU` needs the thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`), which is a system
//! call: 0.3 to 0.7 us each where it was measured, against calls of 5 to 10 us in a commit
//! loop. Reading it at both ends of every call cost a commit loop a quarter of its
//! throughput, so it is read at both ends of a *sample* of the calls and `DB CPU` is the
//! Horvitz-Thompson estimate: each measured call counts its CPU divided by the probability
//! it had of being measured. That probability is decided before the call, from the CPU
//! the session's measured calls typically use: 1 for calls of [`EXACT_CALL_NS`] of CPU or
//! more (their CPU is exact, and two reads cost them under 0.6%), proportionally less for
//! shorter ones, never under [`MIN_PROBABILITY_Q16`]/65536. (CPU, not elapsed time: with
//! more sessions than CPUs a short call's elapsed time is mostly waiting for a CPU, and
//! the read would cost as much as ever.) The estimate is unbiased; its relative error
//! over N short calls is about sqrt(1/(p N)), 2% over the 2x10^5 calls of one second of a
//! commit loop (where p is the floor, 1/64: the sample then costs a 3 us call about 0.6%),
//! and a session's first calls are measured exactly while it learns its
//! calls' CPU. Over a few short calls the estimate may stray above `DB time`: it is a
//! measurement of the total, not of each call.
//!
//! Never shared: each `Session` owns one.

use std::time::Duration;

use redo::clock::Stamp;
use redo::stats::thread_cpu_time;

/// Calls using this much CPU (typically) have their CPU read every time.
pub const EXACT_CALL_NS: u64 = 200_000;

/// The lowest probability of a call having its CPU read, in 1/65536.
pub const MIN_PROBABILITY_Q16: u64 = 1 << 10;

const ONE_Q16: u64 = 1 << 16;

/// A session's call clock.
#[derive(Debug)]
pub(crate) struct CallClock {
    /// xorshift64 state (never 0).
    rng: u64,
    /// Moving average of the CPU of the session's measured calls (ns); starts at
    /// [`EXACT_CALL_NS`] so the first calls are measured exactly.
    typical_cpu_ns: u64,
    /// Nanoseconds of time and CPU not yet added as whole microseconds.
    time_carry_ns: u64,
    cpu_carry_ns: u64,
}

/// A call in progress.
#[derive(Debug)]
pub(crate) struct CallStart {
    at: Stamp,
    /// The thread's CPU clock at the start and the call's probability of being measured,
    /// if it is measured.
    cpu: Option<(Duration, u64)>,
}

/// What one call adds to the time model, in whole microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallTime {
    pub db_time_us: u64,
    pub db_cpu_us: u64,
    /// The call's own elapsed time (no carry), for its statement's `elapsed_time`.
    pub elapsed_ns: u64,
}

impl CallClock {
    pub fn new(seed: u64) -> CallClock {
        CallClock {
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            typical_cpu_ns: EXACT_CALL_NS,
            time_carry_ns: 0,
            cpu_carry_ns: 0,
        }
    }

    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// The probability (in 1/65536) that the next call has its CPU read.
    fn probability_q16(&self) -> u64 {
        (self.typical_cpu_ns.saturating_mul(ONE_Q16) / EXACT_CALL_NS).clamp(MIN_PROBABILITY_Q16, ONE_Q16)
    }

    /// A call starts.
    pub fn start(&mut self) -> CallStart {
        let p = self.probability_q16();
        let measured = p >= ONE_Q16 || self.next_random() % ONE_Q16 < p;
        let cpu = measured.then(|| (thread_cpu_time(), p));
        CallStart { at: Stamp::now(), cpu }
    }

    /// The call that `start` began has ended.
    pub fn finish(&mut self, start: CallStart) -> CallTime {
        let elapsed_ns = start.at.elapsed().as_nanos() as u64;
        let cpu_ns = start.cpu.map_or(0, |(before, p)| {
            let used = thread_cpu_time().saturating_sub(before).as_nanos() as u64;
            self.typical_cpu_ns = self.typical_cpu_ns - self.typical_cpu_ns / 8 + used / 8;
            (used as u128 * ONE_Q16 as u128 / p as u128) as u64
        });
        let time = self.time_carry_ns + elapsed_ns;
        let cpu = self.cpu_carry_ns + cpu_ns;
        self.time_carry_ns = time % 1000;
        self.cpu_carry_ns = cpu % 1000;
        CallTime { db_time_us: time / 1000, db_cpu_us: cpu / 1000, elapsed_ns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(d: Duration) {
        let t = std::time::Instant::now();
        while t.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn long_calls_are_measured_exactly() {
        let mut clock = CallClock::new(1);
        let (mut time, mut cpu) = (0, 0);
        for _ in 0..20 {
            let start = clock.start();
            assert!(start.cpu.is_some(), "a session of long calls reads the CPU clock every time");
            spin(Duration::from_micros(300));
            let t = clock.finish(start);
            assert!(t.db_time_us >= 299, "{t:?}");
            (time, cpu) = (time + t.db_time_us, cpu + t.db_cpu_us);
        }
        // The CPU clock is read outside the two stamps, so it may see a few us more.
        assert!(cpu <= time + 20 * 5, "DB CPU {cpu} us vs DB time {time} us");
    }

    #[test]
    fn short_calls_are_sampled_and_the_estimate_adds_up() {
        let mut clock = CallClock::new(7);
        let (mut time, mut cpu, mut measured) = (0u64, 0u64, 0u64);
        let n = 20_000;
        for _ in 0..n {
            let start = clock.start();
            measured += start.cpu.is_some() as u64;
            spin(Duration::from_micros(10));
            let t = clock.finish(start);
            time += t.db_time_us;
            cpu += t.db_cpu_us;
        }
        assert!(measured < n / 3, "short calls are sampled: {measured} of {n} measured");
        assert!(measured > n / 50, "but not too rarely: {measured} of {n}");
        // Spinning is all CPU: the estimate should be close to the elapsed time (allow for
        // the machine taking the CPU away now and then).
        let ratio = cpu as f64 / time as f64;
        assert!((0.6..1.25).contains(&ratio), "DB CPU {cpu} us vs DB time {time} us");
        assert!(time >= 10 * n, "no call loses its fraction of a microsecond: {time}");
    }

    #[test]
    fn the_probability_follows_the_typical_call_length() {
        let mut clock = CallClock::new(3);
        assert_eq!(clock.probability_q16(), ONE_Q16);
        clock.typical_cpu_ns = EXACT_CALL_NS / 4;
        assert_eq!(clock.probability_q16(), ONE_Q16 / 4);
        clock.typical_cpu_ns = 1;
        assert_eq!(clock.probability_q16(), MIN_PROBABILITY_Q16);
    }
}
