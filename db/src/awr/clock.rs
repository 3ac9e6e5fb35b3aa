//! Wall-clock times of snapshots: taken in microseconds since the Unix epoch, printed in
//! UTC (a report read on another machine must show the same times).

use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) fn now_unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// `YYYY-MM-DD HH:MM:SS` in UTC.
pub(crate) fn format_utc(unix_us: u64) -> String {
    let secs = unix_us / 1_000_000;
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`), so the crate needs no date library for one format.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting_matches_known_dates() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00");
        // 2014-09-17 10:31:31 UTC, the begin snapshot of seed 002's second report.
        assert_eq!(format_utc(1_410_949_891_000_000), "2014-09-17 10:31:31");
        // A leap day.
        assert_eq!(format_utc(951_782_400_000_000), "2000-02-29 00:00:00");
        assert_eq!(format_utc(1_709_251_199_999_999), "2024-02-29 23:59:59");
    }
}
