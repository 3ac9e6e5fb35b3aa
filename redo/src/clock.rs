//! The wait interface's clock: the timestamps that time waits, commits and user calls.
//! It is read on every commit while `timed_statistics` is on, so it must be as cheap as the
//! machine allows.
//!
//! On x86-64 Linux whose kernel keeps time with the TSC (clocksource `tsc`: the kernel has
//! checked that it is invariant and synchronized across CPUs before choosing it), a
//! [`Stamp`] is one `rdtsc`: about half the cost of the vDSO `clock_gettime` behind
//! `Instant::now()` on the machines measured, and it does not serialize the pipeline the way
//! the vDSO's ordered read does. Its rate is calibrated once against `Instant` (5 ms, at the
//! first use; `RedoLog::open` makes that happen before any session commits). Elsewhere a
//! stamp is `Instant`'s nanoseconds since the clock's epoch.
//!
//! Stamps measure durations inside this process, for the statistics only. Nothing that
//! decides behaviour (batch timeouts, the log writer's sleep, checkpoint intervals) uses
//! them: those keep `Instant`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A point in time on the wait interface's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(u64);

/// How stamps are taken and converted.
#[derive(Debug)]
struct Calibration {
    /// Stamps are TSC ticks (else nanoseconds since `epoch_instant`).
    tsc: bool,
    /// The stamp of the clock's epoch.
    epoch: u64,
    epoch_instant: Instant,
    /// Nanoseconds per tick, as a 32.32 fixed-point number.
    ns_per_tick_q32: u64,
}

static CALIBRATION: OnceLock<Calibration> = OnceLock::new();

/// How long the TSC's rate is measured against `Instant`: the two clocks are read within
/// tens of nanoseconds of each other, so the rate is good to about 1e-5.
const CALIBRATION_TIME: Duration = Duration::from_millis(5);

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn read_tsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86-64 (it is used only where the kernel's
    // clocksource says the TSC is usable as a clock).
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[inline(always)]
fn read_tsc() -> u64 {
    unreachable!("the TSC is used only on x86-64 Linux")
}

/// Whether the kernel keeps time with the TSC.
fn tsc_is_the_clocksource() -> bool {
    cfg!(all(target_arch = "x86_64", target_os = "linux"))
        && std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc")
}

fn calibrate() -> Calibration {
    let epoch_instant = Instant::now();
    let instant_clock = Calibration { tsc: false, epoch: 0, epoch_instant, ns_per_tick_q32: 1 << 32 };
    if !tsc_is_the_clocksource() {
        return instant_clock;
    }
    // Each reading of `Instant` sits between two TSC reads; the midpoint is its tick.
    let pair = || {
        let before = read_tsc();
        let at = Instant::now();
        let after = read_tsc();
        (at, before / 2 + after / 2 + (before % 2 + after % 2) / 2)
    };
    let (i0, t0) = pair();
    std::thread::sleep(CALIBRATION_TIME);
    let (i1, t1) = pair();
    let ns = i1.duration_since(i0).as_nanos();
    let ticks = t1.saturating_sub(t0) as u128;
    if ticks == 0 || ns == 0 {
        return instant_clock;
    }
    let q32 = (ns << 32) / ticks;
    if q32 == 0 || q32 > u64::MAX as u128 {
        return instant_clock;
    }
    Calibration { tsc: true, epoch: t0, epoch_instant: i0, ns_per_tick_q32: q32 as u64 }
}

#[inline]
fn calibration() -> &'static Calibration {
    CALIBRATION.get_or_init(calibrate)
}

/// Nanoseconds in `ticks` of the clock.
#[inline]
fn ticks_to_ns(ticks: u64) -> u64 {
    ((ticks as u128 * calibration().ns_per_tick_q32 as u128) >> 32) as u64
}

/// Calibrates the clock now, so that no commit pays for it.
pub fn init() {
    calibration();
}

/// Whether stamps are TSC ticks (for diagnostics and tests).
pub fn uses_tsc() -> bool {
    calibration().tsc
}

impl Stamp {
    /// Now.
    #[inline]
    pub fn now() -> Stamp {
        let c = calibration();
        if c.tsc {
            Stamp(read_tsc())
        } else {
            Stamp(c.epoch_instant.elapsed().as_nanos() as u64)
        }
    }

    /// Time from `earlier` to this stamp (zero if `earlier` is later).
    #[inline]
    pub fn since(self, earlier: Stamp) -> Duration {
        Duration::from_nanos(self.nanos_since(earlier))
    }

    /// As `since`, in nanoseconds, with no `Duration` on the way (whose construction
    /// divides by 10^9: the time model converts a few stamps per call).
    #[inline]
    pub fn nanos_since(self, earlier: Stamp) -> u64 {
        ticks_to_ns(self.0.saturating_sub(earlier.0))
    }

    /// Time since this stamp.
    #[inline]
    pub fn elapsed(self) -> Duration {
        Stamp::now().since(self)
    }

    /// Whole microseconds since this stamp, with no `Duration` on the way (the commit
    /// path times every commit).
    #[inline]
    pub fn elapsed_us(self) -> u64 {
        let ticks = Stamp::now().0.saturating_sub(self.0);
        ((ticks as u128 * calibration().ns_per_tick_q32 as u128) >> 32) as u64 / 1000
    }

    /// Microseconds since the clock's epoch, plus 1: never 0, so a stored 0 can mean "no
    /// stamp" (an untimed wait).
    pub fn micros(self) -> u64 {
        self.since(Stamp(calibration().epoch)).as_micros() as u64 + 1
    }

    /// Nanoseconds since the clock's epoch: a point in time as one number, for a counter
    /// that grows with the clock while a call is open (the time model's DB time). The
    /// time between two stamps is never less than the sum of the times of stamps taken
    /// between them (each conversion rounds down, so `b.nanos() - a.nanos()` is at least
    /// `b.since(a)`), so a wait measured inside a call never outlasts the call.
    #[inline]
    pub fn nanos(self) -> u64 {
        self.nanos_since(Stamp(calibration().epoch))
    }

    /// Now, read only after every earlier load of this thread has completed: for a reader
    /// that has just loaded counters and must not stamp a moment before the one they
    /// show (`rdtsc` alone may run ahead of earlier loads; `lfence` first keeps it in
    /// order, as Intel's manual prescribes). `Instant`'s clock is read in order already.
    pub fn now_ordered() -> Stamp {
        let c = calibration();
        if c.tsc {
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            // SAFETY: lfence has no preconditions on x86-64.
            unsafe {
                core::arch::x86_64::_mm_lfence();
            }
            Stamp(read_tsc())
        } else {
            Stamp(c.epoch_instant.elapsed().as_nanos() as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_measure_what_instant_measures() {
        init();
        let (s0, i0) = (Stamp::now(), Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        let (s1, i1) = (Stamp::now(), Instant::now());
        let by_stamp = s1.since(s0).as_secs_f64();
        let by_instant = i1.duration_since(i0).as_secs_f64();
        assert!(
            (by_stamp - by_instant).abs() < 0.001 + by_instant * 0.01,
            "{by_stamp} vs {by_instant} (tsc {})",
            uses_tsc()
        );
        assert!(s1 >= s0);
        assert_eq!(s0.since(s1), Duration::ZERO, "an earlier stamp minus a later one is zero");
        assert!(s1.micros() > s0.micros() && s0.micros() > 0);
        let us = s0.elapsed_us();
        assert!(us >= 19_000 && us as u128 >= s1.since(s0).as_micros(), "{us} us");
        let ordered = Stamp::now_ordered();
        assert!(ordered >= s1 && ordered.nanos() >= s1.nanos());
    }

    #[test]
    fn a_span_in_nanoseconds_covers_the_spans_measured_inside_it() {
        init();
        let outer = Stamp::now();
        let mut inner = Duration::ZERO;
        for _ in 0..1000 {
            let (a, b) = (Stamp::now(), Stamp::now());
            inner += b.since(a);
        }
        let end = Stamp::now();
        assert!(
            end.nanos() - outer.nanos() >= inner.as_nanos() as u64,
            "{:?} vs {inner:?}",
            end.since(outer)
        );
    }

    #[test]
    fn stamps_never_go_backwards_on_one_thread() {
        let mut last = Stamp::now();
        for _ in 0..100_000 {
            let now = Stamp::now();
            assert!(now >= last, "{now:?} < {last:?}");
            last = now;
        }
    }
}
