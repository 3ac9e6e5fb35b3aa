//! Dates, times and intervals: the values of DATE, TIME, TIMESTAMP, TIMESTAMP WITH TIME
//! ZONE and INTERVAL, read from and written as PostgreSQL's ISO text, converted between
//! each other in the session's time zone, and their arithmetic.
//!
//! The representation is PostgreSQL's own, so the binary wire format is the value as it
//! is: a DATE is days since 2000-01-01, a TIMESTAMP microseconds since 2000-01-01
//! 00:00:00 (a civil time, in no zone), a TIMESTAMPTZ microseconds since 2000-01-01
//! 00:00:00 UTC (an instant, shown in the session's zone), a TIME microseconds since
//! midnight, and an INTERVAL months, days and microseconds kept apart (a month has no
//! fixed number of days, nor a day of hours across a daylight-saving change). The
//! extremes of DATE and the timestamps are `infinity` and `-infinity`.
//!
//! The time-zone rules and the text parser are jiff's (the IANA database of the
//! system); what is PostgreSQL's (the text forms, the interval's, `extract` and
//! `date_trunc` fields, the range: 4714-11-24 BC to 294276 AD for timestamps, to 5874897
//! AD for dates) is here, with the calendar arithmetic (`add_interval`). jiff's years
//! stop at 9999: a later time is read, parsed and placed in a zone as the same time some
//! 400-year cycles earlier (`far_cycles`), after which the Gregorian calendar, its
//! weekdays and a zone's last rule repeat (`extract_at`, `trunc_at` move the fields that
//! count years back); `to_char` still takes jiff's civil times, so it refuses a time past
//! 9999 (22008).
//!
//! The session's time zone (`SET TIME ZONE`) is the current one of the thread while the
//! session runs a call (`ZoneId::make_current`), as PostgreSQL keeps it in a global of
//! its backend: conversions deep in the row checks read it without every caller passing
//! it down.

use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::RwLock;

use jiff::civil::{Date, DateTime, Time};
use jiff::fmt::temporal::{DateTimeParser, PiecesOffset};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp};

use crate::error::{DbError, DbResult};

pub const MICROS_PER_SECOND: i64 = 1_000_000;
pub const MICROS_PER_MINUTE: i64 = 60 * MICROS_PER_SECOND;
pub const MICROS_PER_HOUR: i64 = 60 * MICROS_PER_MINUTE;
pub const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;
/// Microseconds from 1970-01-01 (Unix's epoch) to 2000-01-01 (PostgreSQL's).
const UNIX_TO_POSTGRES_MICROS: i64 = 946_684_800 * MICROS_PER_SECOND;
/// Days from 1970-01-01 to 2000-01-01.
const UNIX_TO_POSTGRES_DAYS: i64 = 10_957;

/// A timestamp's `infinity` and `-infinity`, as PostgreSQL stores them.
pub const INFINITY: i64 = i64::MAX;
pub const NEG_INFINITY: i64 = i64::MIN;
/// A date's `infinity` and `-infinity`.
pub const DATE_INFINITY: i32 = i32::MAX;
pub const DATE_NEG_INFINITY: i32 = i32::MIN;

/// PostgreSQL's range of timestamps (of TIMESTAMP's civil times and TIMESTAMPTZ's
/// instants alike): from 4714-11-24 BC 00:00, the start of the Julian day count, up to
/// 294277-01-01 00:00, excluded (`MIN_TIMESTAMP`, `END_TIMESTAMP` of its datatype/timestamp.h).
pub const MIN_TIMESTAMP: i64 = -211_813_488_000_000_000;
pub const END_TIMESTAMP: i64 = 9_223_371_331_200_000_000;
/// PostgreSQL's range of dates, in days from 2000-01-01: from 4714-11-24 BC up to
/// 5874898-01-01, excluded (Julian days 0 to `DATE_END_JULIAN`).
pub const MIN_DATE: i32 = -2_451_545;
pub const END_DATE: i32 = 2_145_031_949;
/// The days of 400 Gregorian years, after which the calendar repeats.
const DAYS_PER_400_YEARS: i64 = 146_097;

static PARSER: DateTimeParser = DateTimeParser::new();

// ---------------------------------------------------------------------------------------
// Intervals
// ---------------------------------------------------------------------------------------

/// An INTERVAL: months, days and microseconds, each with its own sign, as PostgreSQL
/// keeps them (`1 mon -2 days 03:00:00` is a value).
#[derive(Clone, Copy, Debug, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    /// The span intervals are compared by, as PostgreSQL does: a month as 30 days, a day
    /// as 24 hours (so `1 mon` equals `30 days`).
    pub fn comparable(&self) -> i128 {
        (self.months as i128 * 30 + self.days as i128) * MICROS_PER_DAY as i128 + self.micros as i128
    }

    pub fn checked_neg(self) -> DbResult<Interval> {
        Ok(Interval {
            months: self.months.checked_neg().ok_or_else(interval_overflow)?,
            days: self.days.checked_neg().ok_or_else(interval_overflow)?,
            micros: self.micros.checked_neg().ok_or_else(interval_overflow)?,
        })
    }

    pub fn checked_add(self, other: Interval) -> DbResult<Interval> {
        Ok(Interval {
            months: self.months.checked_add(other.months).ok_or_else(interval_overflow)?,
            days: self.days.checked_add(other.days).ok_or_else(interval_overflow)?,
            micros: self.micros.checked_add(other.micros).ok_or_else(interval_overflow)?,
        })
    }

    /// The interval times `factor`, the fractions of months and days cascading down
    /// (PostgreSQL's `interval_mul`: `1 mon * 1.5` is `1 mon 15 days`).
    pub fn times(self, factor: f64) -> DbResult<Interval> {
        if !factor.is_finite() {
            return Err(interval_overflow());
        }
        let months = self.months as f64 * factor;
        let whole_months = months.trunc();
        let days = self.days as f64 * factor + (months - whole_months) * 30.0;
        let whole_days = days.trunc();
        let micros = self.micros as f64 * factor + (days - whole_days) * MICROS_PER_DAY as f64;
        let fits = |v: f64, max: f64| v.abs() <= max;
        if !fits(whole_months, i32::MAX as f64) || !fits(whole_days, i32::MAX as f64) || !fits(micros, 9.2e18)
        {
            return Err(interval_overflow());
        }
        Ok(Interval { months: whole_months as i32, days: whole_days as i32, micros: micros.round() as i64 })
    }
}

fn interval_overflow() -> DbError {
    DbError::DatetimeOverflow("interval out of range".into())
}

fn timestamp_overflow() -> DbError {
    DbError::DatetimeOverflow("timestamp out of range".into())
}

fn date_overflow() -> DbError {
    DbError::DatetimeOverflow("date out of range".into())
}

/// `micros` if it is a timestamp of PostgreSQL's range (`MIN_TIMESTAMP..END_TIMESTAMP`).
pub fn valid_timestamp(micros: i64) -> DbResult<i64> {
    match (MIN_TIMESTAMP..END_TIMESTAMP).contains(&micros) {
        true => Ok(micros),
        false => Err(timestamp_overflow()),
    }
}

/// `days` as a DATE if it is of PostgreSQL's range (`MIN_DATE..END_DATE`).
pub fn valid_date(days: i64) -> DbResult<i32> {
    match (MIN_DATE as i64..END_DATE as i64).contains(&days) {
        true => Ok(days as i32),
        false => Err(date_overflow()),
    }
}

fn invalid(ty: &str, text: &str) -> DbError {
    DbError::InvalidDatetime(format!("invalid input syntax for type {ty}: \"{text}\""))
}

// ---------------------------------------------------------------------------------------
// Time zones
// ---------------------------------------------------------------------------------------

/// A time zone a session named, interned so that making it current at every call is
/// one store, and a session's state is a number. `ZoneId::UTC` is the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneId(u32);

/// The zones named so far (`ZoneId(n)` is entry n - 1), with the names they were given
/// in lowercase. Few: a server's clients use a handful of zones.
static ZONES: RwLock<Vec<(String, TimeZone)>> = RwLock::new(Vec::new());

thread_local! {
    static CURRENT_ZONE: Cell<ZoneId> = const { Cell::new(ZoneId::UTC) };
}

impl ZoneId {
    pub const UTC: ZoneId = ZoneId(0);

    /// The zone a `TimeZone` setting names: an IANA name (`Europe/Paris`, `UTC`, any
    /// case) or hours east of UTC (`-7`, `+05:30`, as `SET TIME ZONE -7` gives them).
    pub fn named(name: &str) -> DbResult<ZoneId> {
        let key = name.trim().to_ascii_lowercase();
        if matches!(key.as_str(), "utc" | "etc/utc" | "gmt" | "z" | "zulu" | "universal") {
            return Ok(ZoneId::UTC);
        }
        if let Some(found) = ZONES.read().unwrap().iter().position(|(n, _)| *n == key) {
            return Ok(ZoneId(found as u32 + 1));
        }
        let zone = match fixed_offset_seconds(&key) {
            Some(seconds) => jiff::tz::Offset::from_seconds(seconds).map(TimeZone::fixed).ok(),
            None => TimeZone::get(name.trim()).ok(),
        };
        let zone = zone.ok_or_else(|| DbError::InvalidParameterValue {
            parameter: "TimeZone".into(),
            value: name.into(),
            allowed: "a time zone name of the IANA database, or hours east of UTC".into(),
        })?;
        let mut zones = ZONES.write().unwrap();
        if let Some(found) = zones.iter().position(|(n, _)| *n == key) {
            return Ok(ZoneId(found as u32 + 1));
        }
        zones.push((key, zone));
        Ok(ZoneId(zones.len() as u32))
    }

    pub fn zone(self) -> TimeZone {
        match self.0 {
            0 => TimeZone::UTC,
            n => ZONES.read().unwrap()[n as usize - 1].1.clone(),
        }
    }

    /// Makes this the zone of the calls this thread runs next (a session does at the
    /// start of each of its calls).
    pub fn make_current(self) {
        CURRENT_ZONE.with(|z| z.set(self));
    }

    /// The zone of the session whose call this thread runs.
    pub fn current() -> ZoneId {
        CURRENT_ZONE.with(|z| z.get())
    }
}

/// `-7`, `+5`, `+05:30`, `-3:30`: seconds east of UTC.
fn fixed_offset_seconds(text: &str) -> Option<i32> {
    let (sign, rest) = match text.as_bytes().first()? {
        b'-' => (-1, &text[1..]),
        b'+' => (1, &text[1..]),
        _ => (1, text),
    };
    let (hours, minutes) = match rest.split_once(':') {
        Some((h, m)) => (h.parse::<i32>().ok()?, m.parse::<i32>().ok()?),
        None => {
            let hours = rest.parse::<f64>().ok()?;
            return (hours.abs() <= 15.0).then(|| sign * (hours * 3600.0).round() as i32);
        }
    };
    (hours <= 15 && (0..60).contains(&minutes)).then_some(sign * (hours * 3600 + minutes * 60))
}

// ---------------------------------------------------------------------------------------
// Conversions between the representation and jiff's civil times
// ---------------------------------------------------------------------------------------

fn instant(micros: i64) -> DbResult<Timestamp> {
    micros
        .checked_add(UNIX_TO_POSTGRES_MICROS)
        .and_then(|unix| Timestamp::from_microsecond(unix).ok())
        .ok_or_else(timestamp_overflow)
}

fn micros_of_instant(t: Timestamp) -> i64 {
    // Sub-microsecond parts round to the nearest microsecond, as PostgreSQL's input does.
    let nanos = t.as_nanosecond();
    let micros = nanos.div_euclid(1000) + i128::from(nanos.rem_euclid(1000) >= 500);
    micros as i64 - UNIX_TO_POSTGRES_MICROS
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`):
/// plain arithmetic, so every date jiff holds converts, to 9999-12-31 (jiff's instants
/// stop a day short of it, and 9999-12-31 23:59:59.999999 is a common "forever").
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of `days_from_civil`: (year, month, day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// A TIMESTAMP's civil date and time.
pub fn civil(micros: i64) -> DbResult<DateTime> {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let of_day = micros.rem_euclid(MICROS_PER_DAY);
    let date = i32::try_from(days).map_err(|_| timestamp_overflow()).and_then(date_of_days)?;
    let time = Time::new(
        (of_day / MICROS_PER_HOUR) as i8,
        (of_day / MICROS_PER_MINUTE % 60) as i8,
        (of_day / MICROS_PER_SECOND % 60) as i8,
        (of_day % MICROS_PER_SECOND * 1000) as i32,
    )
    .map_err(|_| timestamp_overflow())?;
    Ok(date.to_datetime(time))
}

/// The TIMESTAMP of a civil date and time (sub-microsecond parts rounded to the nearest
/// microsecond, as PostgreSQL's input does).
pub fn timestamp_of(dt: DateTime) -> DbResult<i64> {
    let days = days_of_date(dt.date()).map_err(|_| timestamp_overflow())? as i64;
    let t = dt.time();
    let nanos = t.subsec_nanosecond() as i64;
    let of_day = t.hour() as i64 * MICROS_PER_HOUR
        + t.minute() as i64 * MICROS_PER_MINUTE
        + t.second() as i64 * MICROS_PER_SECOND
        + nanos / 1000
        + i64::from(nanos % 1000 >= 500);
    Ok(days * MICROS_PER_DAY + of_day)
}

/// A TIMESTAMPTZ's civil date and time in `zone`.
pub fn civil_in(micros: i64, zone: &TimeZone) -> DbResult<DateTime> {
    match instant(micros) {
        Ok(t) => Ok(zone.to_datetime(t)),
        Err(_) => civil(shifted_at_edge(micros, zone)?),
    }
}

/// The offset of `zone` (seconds east of UTC) at an instant past jiff's (whose
/// instants stop at 9999-12-30 22:00 UTC and -9999-01-02, so that every civil time of
/// theirs is one at any offset): its offset at jiff's nearest one, as a zone's last
/// rule goes on. PostgreSQL's instants go on to 294276 AD; 9999-12-31 23:59:59.999999
/// at -08:00, a common "forever" in a zone west of UTC, is one of them.
fn offset_at_edge(micros: i64, zone: &TimeZone) -> i64 {
    let cycles = far_cycles(micros);
    if cycles > 0 {
        if let Ok(t) = instant(micros - cycles * MICROS_PER_400_YEARS) {
            return i64::from(zone.to_offset(t).seconds());
        }
    }
    let edge = if micros > 0 { Timestamp::MAX } else { Timestamp::MIN };
    i64::from(zone.to_offset(edge).seconds())
}

/// 400 Gregorian years in microseconds: the calendar, its weekdays and a time zone's
/// last rule (which PostgreSQL, as jiff, applies to every year after the zone's listed
/// changes) repeat after them.
const MICROS_PER_400_YEARS: i64 = DAYS_PER_400_YEARS * MICROS_PER_DAY;
/// 9600-01-01 00:00, in microseconds from 2000-01-01: a time from here on is moved back
/// by whole 400-year cycles below it, into jiff's range, to be read in a zone.
const FAR_FROM_MICROS: i64 = 19 * MICROS_PER_400_YEARS;

/// How many 400-year cycles take the time `micros` below `FAR_FROM_MICROS`.
fn far_cycles(micros: i64) -> i64 {
    match micros < FAR_FROM_MICROS {
        true => 0,
        false => (micros - FAR_FROM_MICROS).div_euclid(MICROS_PER_400_YEARS) + 1,
    }
}

/// The offset of `zone` (seconds east of UTC) at the TIMESTAMPTZ `micros`, one past
/// jiff's instants included (`offset_at_edge`).
pub fn offset_at(micros: i64, zone: &TimeZone) -> i32 {
    match instant(micros) {
        Ok(t) => zone.to_offset(t).seconds(),
        Err(_) => offset_at_edge(micros, zone) as i32,
    }
}

/// An instant past jiff's as the TIMESTAMP of its civil time in `zone`.
fn shifted_at_edge(micros: i64, zone: &TimeZone) -> DbResult<i64> {
    micros.checked_add(offset_at_edge(micros, zone) * MICROS_PER_SECOND).ok_or_else(timestamp_overflow)
}

/// The civil time in `zone` of the TIMESTAMPTZ `micros`, as a TIMESTAMP's microseconds:
/// through jiff within its instants, at the zone's offset at their edge beyond them.
fn local_micros(micros: i64, zone: &TimeZone) -> DbResult<i64> {
    // A time past jiff's is read as the same time some 400-year cycles before it.
    let shift = far_cycles(micros) * MICROS_PER_400_YEARS;
    match instant(micros - shift) {
        Ok(t) => Ok(timestamp_of(zone.to_datetime(t))? + shift),
        Err(_) => shifted_at_edge(micros, zone),
    }
}

/// The TIMESTAMPTZ of the civil time `local` (a TIMESTAMP's microseconds) in `zone`, the
/// inverse of `local_micros`.
fn from_local_micros(local: i64, zone: &TimeZone) -> DbResult<i64> {
    let shift = far_cycles(local) * MICROS_PER_400_YEARS;
    match civil(local - shift) {
        Ok(dt) => Ok(timestamptz_of(dt, zone)? + shift),
        Err(_) => {
            local.checked_sub(offset_at_edge(local, zone) * MICROS_PER_SECOND).ok_or_else(timestamp_overflow)
        }
    }
}

/// A TIMESTAMPTZ's civil date and time in `zone`, with the zone's offset then (seconds
/// east of UTC) and its abbreviation (`CET`, `EDT`, `+05`), as `to_char` shows them.
pub fn zoned(micros: i64, zone: &TimeZone) -> DbResult<(DateTime, i32, String)> {
    let t = instant(micros)?;
    let info = zone.to_offset_info(t);
    Ok((zone.to_datetime(t), info.offset().seconds(), info.abbreviation().to_string()))
}

/// The civil date and time of the TIMESTAMP `micros`, one past jiff's year 9999 read
/// whole 400-year cycles earlier (its month, day, weekday and ISO week are the same
/// there): the civil time and the cycles taken off, whose years the caller adds back.
pub fn civil_cycles(micros: i64) -> DbResult<(DateTime, i64)> {
    let cycles = far_cycles(micros);
    Ok((civil(micros - cycles * MICROS_PER_400_YEARS)?, cycles))
}

/// `zoned`, for a TIMESTAMPTZ past jiff's year 9999 too (read 400-year cycles earlier,
/// under the zone's last rule, as `local_micros` reads it): also the cycles taken off.
pub fn zoned_cycles(micros: i64, zone: &TimeZone) -> DbResult<(DateTime, i32, String, i64)> {
    let cycles = far_cycles(micros);
    let (civil, offset, abbreviation) = zoned(micros - cycles * MICROS_PER_400_YEARS, zone)?;
    Ok((civil, offset, abbreviation, cycles))
}

/// The TIMESTAMPTZ `micros` microseconds after 1970-01-01 00:00 UTC.
pub fn timestamptz_of_unix_micros(micros: i64) -> DbResult<i64> {
    let t = Timestamp::from_microsecond(micros).map_err(|_| timestamp_overflow())?;
    Ok(micros_of_instant(t))
}

/// The TIMESTAMPTZ of a civil time in `zone` (a time skipped by a daylight-saving change
/// is read with the offset before it, a repeated one as the earlier: jiff's "compatible").
pub fn timestamptz_of(dt: DateTime, zone: &TimeZone) -> DbResult<i64> {
    match zone.to_ambiguous_timestamp(dt).compatible() {
        Ok(t) => Ok(micros_of_instant(t)),
        // An instant past jiff's (see `offset_at_edge`).
        Err(_) => {
            let local = timestamp_of(dt)?;
            local.checked_sub(offset_at_edge(local, zone) * MICROS_PER_SECOND).ok_or_else(timestamp_overflow)
        }
    }
}

pub fn date_of_days(days: i32) -> DbResult<Date> {
    let (year, month, day) = civil_from_days(days as i64 + UNIX_TO_POSTGRES_DAYS);
    let year = i16::try_from(year).map_err(|_| date_overflow())?;
    Date::new(year, month as i8, day as i8).map_err(|_| date_overflow())
}

pub fn days_of_date(date: Date) -> DbResult<i32> {
    let days = days_from_civil(date.year() as i64, date.month() as i64, date.day() as i64);
    Ok((days - UNIX_TO_POSTGRES_DAYS) as i32)
}

/// A DATE as the TIMESTAMP of its midnight, when it is one of PostgreSQL's range.
pub fn date_to_valid_timestamp(days: i32) -> DbResult<i64> {
    match days {
        DATE_INFINITY | DATE_NEG_INFINITY => Ok(date_to_timestamp(days)),
        d => i64::from(d)
            .checked_mul(MICROS_PER_DAY)
            .and_then(|micros| valid_timestamp(micros).ok())
            .ok_or_else(|| DbError::DatetimeOverflow("date out of range for timestamp".into())),
    }
}

pub fn date_to_timestamp(days: i32) -> i64 {
    match days {
        DATE_INFINITY => INFINITY,
        DATE_NEG_INFINITY => NEG_INFINITY,
        d => (d as i64).saturating_mul(MICROS_PER_DAY),
    }
}

pub fn timestamp_to_date(micros: i64) -> DbResult<i32> {
    match micros {
        INFINITY => Ok(DATE_INFINITY),
        NEG_INFINITY => Ok(DATE_NEG_INFINITY),
        m => i32::try_from(m.div_euclid(MICROS_PER_DAY)).map_err(|_| date_overflow()),
    }
}

/// A TIMESTAMP read as a civil time of `zone`.
pub fn timestamp_to_timestamptz(micros: i64, zone: &TimeZone) -> DbResult<i64> {
    match micros {
        INFINITY | NEG_INFINITY => Ok(micros),
        m => valid_timestamp(from_local_micros(m, zone)?),
    }
}

/// A TIMESTAMPTZ as the civil time it is in `zone`.
pub fn timestamptz_to_timestamp(micros: i64, zone: &TimeZone) -> DbResult<i64> {
    match micros {
        INFINITY | NEG_INFINITY => Ok(micros),
        m => valid_timestamp(local_micros(m, zone)?),
    }
}

/// The time of day of a civil time, in microseconds since midnight.
pub fn time_of_day(dt: DateTime) -> i64 {
    let t = dt.time();
    t.hour() as i64 * MICROS_PER_HOUR
        + t.minute() as i64 * MICROS_PER_MINUTE
        + t.second() as i64 * MICROS_PER_SECOND
        + t.subsec_nanosecond() as i64 / 1000
}

/// The TIMESTAMPTZ of this moment.
pub fn now() -> i64 {
    micros_of_instant(Timestamp::now())
}

// ---------------------------------------------------------------------------------------
// Text input
// ---------------------------------------------------------------------------------------

/// What a date/time text gave: a civil time, maybe with the zone or offset it is in.
struct ParsedText {
    civil: DateTime,
    zone: Option<TimeZone>,
    /// Days to move `civil` by: a year past jiff's (beyond 9999) is read as the year of
    /// jiff's at the same place of the 400-year cycle, the cycles taken off counted here.
    far_days: i64,
}

impl ParsedText {
    fn near(civil: DateTime, zone: Option<TimeZone>) -> ParsedText {
        ParsedText { civil, zone, far_days: 0 }
    }

    /// The civil time as a TIMESTAMP's microseconds, in PostgreSQL's range.
    fn local_micros(&self) -> DbResult<i64> {
        let days = self.far_days.checked_mul(MICROS_PER_DAY).ok_or_else(timestamp_overflow)?;
        valid_timestamp(timestamp_of(self.civil)?.checked_add(days).ok_or_else(timestamp_overflow)?)
    }
}

enum Special {
    Infinity,
    NegInfinity,
    Parsed(ParsedText),
}

/// Reads PostgreSQL's ISO forms (`2024-06-15`, `2024-06-15 07:30:00.25`, with `T` or a
/// space, an offset `+02`, `-05:30`, `Z` or a zone name after the time, ` BC`) and the
/// special words (`infinity`, `-infinity`, `epoch`, `now`, `today`, `tomorrow`,
/// `yesterday`, which read the clock in the session's zone).
fn parse_text(text: &str, ty: &str) -> DbResult<Special> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    let zone = ZoneId::current().zone();
    let today = || -> DbResult<DateTime> { Ok(civil_in(now(), &zone)?.date().to_datetime(Time::midnight())) };
    let day = |offset: i64| -> DbResult<ParsedText> {
        let civil = today()?.checked_add(Span::new().days(offset)).map_err(|_| timestamp_overflow())?;
        Ok(ParsedText::near(civil, Some(zone.clone())))
    };
    match lower.as_str() {
        "infinity" | "+infinity" => return Ok(Special::Infinity),
        "-infinity" => return Ok(Special::NegInfinity),
        "epoch" => {
            return Ok(Special::Parsed(ParsedText::near(
                DateTime::constant(1970, 1, 1, 0, 0, 0, 0),
                Some(TimeZone::UTC),
            )))
        }
        "now" => {
            let civil = civil_in(now(), &zone)?;
            return Ok(Special::Parsed(ParsedText::near(civil, Some(zone))));
        }
        "today" => return day(0).map(Special::Parsed),
        "tomorrow" => return day(1).map(Special::Parsed),
        "yesterday" => return day(-1).map(Special::Parsed),
        _ => {}
    }
    let (body, bc) = match lower.strip_suffix(" bc") {
        Some(_) => (trimmed[..trimmed.len() - 3].trim_end(), true),
        None => {
            (lower.strip_suffix(" ad").map_or(trimmed, |_| trimmed[..trimmed.len() - 3].trim_end()), false)
        }
    };
    // A zone name or a spaced offset after the time: `... 07:00 UTC`, `... 07:00 +02`.
    let mut named_zone = None;
    let mut body = body.to_string();
    if let Some((head, last)) = body.rsplit_once(' ') {
        if !head.contains(':') && !head.contains(' ') && last.starts_with(['+', '-']) && last.contains(':') {
            // A date and an offset, no time (PgJDBC's setDate sends `2024-02-29 +05:30`):
            // midnight at that offset.
            body = format!("{head}T00:00:00{last}");
        } else if head.contains(':') || head.len() > 10 {
            if last.starts_with(['+', '-']) {
                body = format!("{}{last}", head.trim_end());
            } else if last.starts_with(|c: char| c.is_ascii_alphabetic()) {
                let id = ZoneId::named(last).map_err(|_| invalid(ty, text))?;
                named_zone = Some(id.zone());
                body = head.trim_end().to_string();
            }
        }
    }
    // A year of five digits or more (PostgreSQL's go on to 294276 for timestamps and
    // 5874897 for dates; jiff's stop at 9999): the calendar repeats every 400 years, so
    // the text is read with the year of jiff's at the same place of the cycle, and the
    // date moved by the cycles taken off.
    let year_digits = body.bytes().take_while(u8::is_ascii_digit).count();
    let mut far_days = 0;
    if year_digits > 4 && body.as_bytes().get(year_digits) == Some(&b'-') {
        if bc {
            return Err(date_overflow());
        }
        let year: i64 = body[..year_digits].parse().map_err(|_| date_overflow())?;
        let cycles = (year - 2000).div_euclid(400);
        far_days = cycles * DAYS_PER_400_YEARS;
        body = format!("{}{}", year - cycles * 400, &body[year_digits..]);
    }
    let pieces = PARSER.parse_pieces(body.as_bytes()).map_err(|_| invalid(ty, text))?;
    let time = pieces.time();
    let mut date = pieces.date();
    if bc {
        date = Date::new(1 - date.year(), date.month(), date.day()).map_err(|_| date_overflow())?;
    }
    let offset_zone = match pieces.offset() {
        Some(PiecesOffset::Zulu) => Some(TimeZone::UTC),
        Some(PiecesOffset::Numeric(o)) => Some(TimeZone::fixed(o.offset())),
        Some(_) => Some(TimeZone::UTC),
        None => None,
    };
    let annotated = pieces.time_zone_annotation().and_then(|a| a.to_time_zone().ok());
    Ok(Special::Parsed(ParsedText {
        civil: date.to_datetime(time.unwrap_or(Time::midnight())),
        zone: offset_zone.or(annotated).or(named_zone),
        far_days,
    }))
}

/// A DATE from its text.
pub fn parse_date(text: &str) -> DbResult<i32> {
    match parse_text(text, "date")? {
        Special::Infinity => Ok(DATE_INFINITY),
        Special::NegInfinity => Ok(DATE_NEG_INFINITY),
        Special::Parsed(p) => valid_date(days_of_date(p.civil.date())? as i64 + p.far_days),
    }
}

/// A TIMESTAMP from its text (a zone or offset in it is ignored, as PostgreSQL does).
pub fn parse_timestamp(text: &str) -> DbResult<i64> {
    match parse_text(text, "timestamp")? {
        Special::Infinity => Ok(INFINITY),
        Special::NegInfinity => Ok(NEG_INFINITY),
        Special::Parsed(p) => p.local_micros(),
    }
}

/// A TIMESTAMPTZ from its text: in the zone or offset it gives, else the session's.
pub fn parse_timestamptz(text: &str) -> DbResult<i64> {
    match parse_text(text, "timestamp with time zone")? {
        Special::Infinity => Ok(INFINITY),
        Special::NegInfinity => Ok(NEG_INFINITY),
        Special::Parsed(p) => {
            let zone = p.zone.clone().unwrap_or_else(|| ZoneId::current().zone());
            let instant = match p.far_days {
                0 => timestamptz_of(p.civil, &zone)?,
                _ => from_local_micros(p.local_micros()?, &zone)?,
            };
            valid_timestamp(instant)
        }
    }
}

/// A TIME from its text (`07:30`, `07:30:15.5`, `24:00:00`, `allballs`); a date or an
/// offset before or after it is ignored.
pub fn parse_time(text: &str) -> DbResult<i64> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    if lower == "allballs" {
        return Ok(0);
    }
    if lower == "now" {
        return Ok(time_of_day(civil_in(now(), &ZoneId::current().zone())?));
    }
    let no_offset = trimmed.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let no_offset = match no_offset.rfind(['+', '-']) {
        Some(i) if no_offset[..i].contains(':') => &no_offset[..i],
        _ => no_offset,
    };
    let time_part = no_offset.rsplit([' ', 'T']).next().unwrap_or("").trim();
    if let Some(rest) = time_part.strip_prefix("24:00") {
        if rest.chars().all(|c| matches!(c, ':' | '.' | '0')) {
            return Ok(MICROS_PER_DAY);
        }
    }
    let time: Time = time_part.parse().map_err(|_| invalid("time", text))?;
    let micros = time_of_day(Date::constant(2000, 1, 1).to_datetime(time));
    let nanos_left = time.subsec_nanosecond() % 1000;
    Ok((micros + i64::from(nanos_left >= 500)).min(MICROS_PER_DAY))
}

/// An INTERVAL from its text: PostgreSQL's (`1 year 2 mons 3 days 04:05:06.5`, `2 hours
/// 30 minutes`, `-1 day`, `1.5 days`, `@ 3 days ago`, units abbreviated or plural, a
/// lone number of seconds) or ISO 8601's (`P1Y2M3DT4H5M6S`).
pub fn parse_interval(text: &str) -> DbResult<Interval> {
    let bad = || invalid("interval", text);
    let lower = text.trim().to_ascii_lowercase();
    let lower = lower.strip_prefix('@').unwrap_or(&lower).trim();
    if let Some(iso) = lower.strip_prefix('p') {
        return parse_iso_interval(iso).ok_or_else(bad);
    }
    let (body, ago) = match lower.strip_suffix("ago") {
        Some(b) => (b.trim_end(), true),
        None => (lower, false),
    };
    if body.is_empty() {
        return Err(bad());
    }
    let mut acc = IntervalBuilder::default();
    let tokens: Vec<&str> = body.split_whitespace().collect();
    let mut i = 0;
    while i < tokens.len() {
        let token = tokens[i];
        if token.contains(':') {
            acc.add_clock(token).ok_or_else(bad)?;
            i += 1;
            continue;
        }
        // A number, its unit either glued (`3days`, `10s`) or the next token.
        let split = token.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(token.len());
        let (number, mut unit) = token.split_at(split);
        let value: f64 = number.parse().map_err(|_| bad())?;
        if unit.is_empty() {
            match tokens.get(i + 1) {
                Some(next) if next.starts_with(|c: char| c.is_ascii_alphabetic()) => {
                    unit = next;
                    i += 1;
                }
                _ => unit = "second",
            }
        }
        acc.add(value, unit).ok_or_else(bad)?;
        i += 1;
    }
    let interval = acc.finish().ok_or_else(interval_overflow)?;
    if ago {
        interval.checked_neg()
    } else {
        Ok(interval)
    }
}

/// Accumulates an interval's parts in floating point, with fractions cascading down as
/// PostgreSQL's (`1.5 years` is `1 year 6 mons`, `1.5 days` `1 day 12:00:00`).
#[derive(Default)]
struct IntervalBuilder {
    months: f64,
    days: f64,
    micros: f64,
}

impl IntervalBuilder {
    fn add(&mut self, value: f64, unit: &str) -> Option<()> {
        let unit = unit.trim_end_matches(',');
        match unit {
            "millennium" | "millennia" | "millenniums" | "mil" | "mils" => self.months += value * 12_000.0,
            "century" | "centuries" | "c" | "cent" => self.months += value * 1_200.0,
            "decade" | "decades" | "dec" | "decs" => self.months += value * 120.0,
            "year" | "years" | "y" | "yr" | "yrs" => self.months += value * 12.0,
            "month" | "months" | "mon" | "mons" => self.months += value,
            "week" | "weeks" | "w" => self.days += value * 7.0,
            "day" | "days" | "d" => self.days += value,
            "hour" | "hours" | "h" | "hr" | "hrs" => self.micros += value * MICROS_PER_HOUR as f64,
            "minute" | "minutes" | "m" | "min" | "mins" => self.micros += value * MICROS_PER_MINUTE as f64,
            "second" | "seconds" | "s" | "sec" | "secs" => self.micros += value * MICROS_PER_SECOND as f64,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => self.micros += value * 1000.0,
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => self.micros += value,
            _ => return None,
        }
        Some(())
    }

    /// `hh:mm`, `hh:mm:ss[.f]`, with an optional sign.
    fn add_clock(&mut self, token: &str) -> Option<()> {
        let (sign, rest) = match token.as_bytes().first()? {
            b'-' => (-1.0, &token[1..]),
            b'+' => (1.0, &token[1..]),
            _ => (1.0, token),
        };
        let mut parts = rest.split(':');
        let hours: f64 = parts.next()?.parse().ok()?;
        let minutes: f64 = parts.next()?.parse().ok()?;
        let seconds: f64 = match parts.next() {
            Some(s) => s.parse().ok()?,
            None => 0.0,
        };
        if parts.next().is_some() || minutes >= 60.0 || seconds >= 60.0 {
            return None;
        }
        self.micros += sign * (hours * 3600.0 + minutes * 60.0 + seconds) * MICROS_PER_SECOND as f64;
        Some(())
    }

    fn finish(self) -> Option<Interval> {
        let months = self.months.trunc();
        let days = self.days + (self.months - months) * 30.0;
        let whole_days = days.trunc();
        let micros = (self.micros + (days - whole_days) * MICROS_PER_DAY as f64).round();
        let fits32 = |v: f64| v.abs() <= i32::MAX as f64;
        (fits32(months) && fits32(whole_days) && micros.abs() < 9.2e18).then_some(Interval {
            months: months as i32,
            days: whole_days as i32,
            micros: micros as i64,
        })
    }
}

/// The part of an ISO 8601 duration after its `P`: `1Y2M3DT4H5M6.5S`, `2W`.
fn parse_iso_interval(rest: &str) -> Option<Interval> {
    let mut acc = IntervalBuilder::default();
    let mut in_time = false;
    let mut number = String::new();
    for c in rest.chars() {
        match c {
            't' => in_time = true,
            '0'..='9' | '.' | '-' | '+' => number.push(c),
            unit => {
                let value: f64 = number.parse().ok()?;
                number.clear();
                let unit = match (unit, in_time) {
                    ('y', false) => "year",
                    ('m', false) => "month",
                    ('w', false) => "week",
                    ('d', false) => "day",
                    ('h', true) => "hour",
                    ('m', true) => "minute",
                    ('s', true) => "second",
                    _ => return None,
                };
                acc.add(value, unit)?;
            }
        }
    }
    number.is_empty().then_some(())?;
    acc.finish()
}

// ---------------------------------------------------------------------------------------
// Text output
// ---------------------------------------------------------------------------------------

/// `yyyy-mm-dd`, then (for a timestamp) ` hh:mm:ss[.f]` and the zone's offset, then ` BC`
/// for a year before 1 (jiff's year 0 is 1 BC), as PostgreSQL prints them.
fn write_civil(date: Date, time_and_offset: Option<(i64, Option<i32>)>, out: &mut String) {
    write_ymd(date.year().into(), date.month().into(), date.day().into(), time_and_offset, out);
}

/// A date past jiff's (years beyond 9999: PostgreSQL's timestamps go on to 294276 AD,
/// its dates further), from the proleptic Gregorian calendar's own arithmetic, as
/// `write_civil` writes one of jiff's. `days` counts from 2000-01-01.
fn write_far_civil(days: i64, time_and_offset: Option<(i64, Option<i32>)>, out: &mut String) {
    let (year, month, day) = civil_from_days(days + UNIX_TO_POSTGRES_DAYS);
    write_ymd(year, month, day, time_and_offset, out);
}

fn write_ymd(year: i64, month: i64, day: i64, time_and_offset: Option<(i64, Option<i32>)>, out: &mut String) {
    let bc = year <= 0;
    let year = if bc { 1 - year } else { year };
    let _ = write!(out, "{year:04}-{month:02}-{day:02}");
    if let Some((micros_of_day, offset)) = time_and_offset {
        out.push(' ');
        write_clock(micros_of_day, out);
        if let Some(offset) = offset {
            write_offset(offset, out);
        }
    }
    if bc {
        out.push_str(" BC");
    }
}

/// A zone's offset: `+00`, `-05`, `+05:30`, `+00:09:21`.
fn write_offset(seconds: i32, out: &mut String) {
    let (sign, abs) = if seconds < 0 { ('-', -seconds) } else { ('+', seconds) };
    let _ = write!(out, "{sign}{:02}", abs / 3600);
    if abs % 3600 != 0 {
        let _ = write!(out, ":{:02}", abs / 60 % 60);
        if abs % 60 != 0 {
            let _ = write!(out, ":{:02}", abs % 60);
        }
    }
}

/// `hh:mm:ss` and the fraction of a second, trailing zeros dropped.
fn write_clock(micros_of_day: i64, out: &mut String) {
    let seconds = micros_of_day / MICROS_PER_SECOND;
    let fraction = micros_of_day % MICROS_PER_SECOND;
    let _ = write!(out, "{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
    write_fraction(fraction, out);
}

fn write_fraction(fraction: i64, out: &mut String) {
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

pub fn write_date(days: i32, out: &mut String) {
    match days {
        DATE_INFINITY => out.push_str("infinity"),
        DATE_NEG_INFINITY => out.push_str("-infinity"),
        d => match date_of_days(d) {
            Ok(date) => write_civil(date, None, out),
            Err(_) => write_far_civil(d.into(), None, out),
        },
    }
}

pub fn write_timestamp(micros: i64, out: &mut String) {
    match micros {
        INFINITY => out.push_str("infinity"),
        NEG_INFINITY => out.push_str("-infinity"),
        m => match civil(m) {
            Ok(dt) => write_civil(dt.date(), Some((time_of_day(dt), None)), out),
            Err(_) => {
                write_far_civil(m.div_euclid(MICROS_PER_DAY), Some((m.rem_euclid(MICROS_PER_DAY), None)), out)
            }
        },
    }
}

/// The instant as a civil time of `zone`, with the zone's offset then.
pub fn write_timestamptz(micros: i64, zone: &TimeZone, out: &mut String) {
    let t = match micros {
        INFINITY => return out.push_str("infinity"),
        NEG_INFINITY => return out.push_str("-infinity"),
        m => match instant(m) {
            Ok(t) => t,
            // Past jiff's instants (`offset_at_edge`), at the zone's offset at its edge.
            Err(_) => {
                let offset = offset_at_edge(m, zone) as i32;
                return match shifted_at_edge(m, zone) {
                    Ok(local) => write_far_civil(
                        local.div_euclid(MICROS_PER_DAY),
                        Some((local.rem_euclid(MICROS_PER_DAY), Some(offset))),
                        out,
                    ),
                    Err(_) => out.push_str("(timestamp out of range)"),
                };
            }
        },
    };
    let dt = zone.to_datetime(t);
    write_civil(dt.date(), Some((time_of_day(dt), Some(zone.to_offset(t).seconds()))), out);
}

pub fn write_time(micros: i64, out: &mut String) {
    write_clock(micros, out);
}

/// PostgreSQL's default interval style: `1 year 2 mons -3 days +04:05:06.5`, `00:00:00`.
pub fn write_interval(iv: &Interval, out: &mut String) {
    let start = out.len();
    let mut previous_negative = false;
    let mut part = |out: &mut String, value: i64, unit: &str| {
        if value == 0 {
            return;
        }
        if out.len() > start {
            out.push(' ');
        }
        if previous_negative && value > 0 {
            out.push('+');
        }
        let _ = write!(out, "{value} {unit}{}", if value != 1 { "s" } else { "" });
        previous_negative = value < 0;
    };
    part(out, (iv.months / 12) as i64, "year");
    part(out, (iv.months % 12) as i64, "mon");
    part(out, iv.days as i64, "day");
    if iv.micros != 0 || out.len() == start {
        if out.len() > start {
            out.push(' ');
        }
        if iv.micros < 0 {
            out.push('-');
        } else if previous_negative {
            out.push('+');
        }
        let abs = iv.micros.unsigned_abs();
        let seconds = abs / MICROS_PER_SECOND as u64;
        let _ = write!(out, "{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
        write_fraction((abs % MICROS_PER_SECOND as u64) as i64, out);
    }
}

// ---------------------------------------------------------------------------------------
// Arithmetic
// ---------------------------------------------------------------------------------------

/// A TIMESTAMP (in `zone` None) or TIMESTAMPTZ (in `zone`) plus an interval: its months
/// and days move the civil date (the day of the month kept, or the month's last), its
/// microseconds the time.
pub fn add_interval(micros: i64, iv: Interval, zone: Option<&TimeZone>) -> DbResult<i64> {
    if micros == INFINITY || micros == NEG_INFINITY {
        return Ok(micros);
    }
    let mut result = micros;
    if iv.months != 0 || iv.days != 0 {
        // The calendar's own arithmetic (not jiff's, whose years stop at 9999), on the
        // civil time: in `zone` for a TIMESTAMPTZ, as PostgreSQL's timestamptz_pl_interval.
        let local = match zone {
            None => micros,
            Some(zone) => local_micros(micros, zone)?,
        };
        let (mut year, mut month, mut day) =
            civil_from_days(local.div_euclid(MICROS_PER_DAY) + UNIX_TO_POSTGRES_DAYS);
        if iv.months != 0 {
            let months = year * 12 + month - 1 + i64::from(iv.months);
            (year, month) = (months.div_euclid(12), months.rem_euclid(12) + 1);
            day = day.min(days_in_month(year, month));
        }
        let days = days_from_civil(year, month, day) - UNIX_TO_POSTGRES_DAYS + i64::from(iv.days);
        let local = days
            .checked_mul(MICROS_PER_DAY)
            .and_then(|m| m.checked_add(local.rem_euclid(MICROS_PER_DAY)))
            .ok_or_else(timestamp_overflow)?;
        result = match zone {
            None => valid_timestamp(local)?,
            Some(zone) => valid_timestamp(from_local_micros(local, zone)?)?,
        };
    }
    valid_timestamp(result.checked_add(iv.micros).ok_or_else(timestamp_overflow)?)
}

/// The days of a month of the proleptic Gregorian calendar.
fn days_in_month(year: i64, month: i64) -> i64 {
    days_from_civil(year + i64::from(month == 12), month % 12 + 1, 1) - days_from_civil(year, month, 1)
}

/// The difference of two timestamps as PostgreSQL gives it: whole days and the rest
/// (`timestamp - timestamp`, no months).
pub fn difference(a: i64, b: i64) -> DbResult<Interval> {
    if [a, b].iter().any(|&m| m == INFINITY || m == NEG_INFINITY) {
        return Err(DbError::DatetimeOverflow("cannot subtract infinite timestamps".into()));
    }
    let diff = a.checked_sub(b).ok_or_else(interval_overflow)?;
    Ok(Interval { months: 0, days: (diff / MICROS_PER_DAY) as i32, micros: diff % MICROS_PER_DAY })
}

// ---------------------------------------------------------------------------------------
// Fields: extract / date_part and date_trunc
// ---------------------------------------------------------------------------------------

/// A field of `extract(field FROM ...)`, `date_part` and `date_trunc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    DayOfWeek,
    IsoDayOfWeek,
    DayOfYear,
    IsoYear,
    Epoch,
    Julian,
    Timezone,
}

impl Field {
    pub fn named(name: &str) -> DbResult<Field> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "microseconds" | "microsecond" | "us" | "usec" | "usecs" => Field::Microseconds,
            "milliseconds" | "millisecond" | "ms" | "msec" | "msecs" => Field::Milliseconds,
            "second" | "seconds" | "sec" | "secs" | "s" => Field::Second,
            "minute" | "minutes" | "min" | "mins" | "m" => Field::Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Field::Hour,
            "day" | "days" | "d" => Field::Day,
            "week" | "weeks" | "w" => Field::Week,
            "month" | "months" | "mon" | "mons" => Field::Month,
            "quarter" | "qtr" => Field::Quarter,
            "year" | "years" | "y" | "yr" | "yrs" => Field::Year,
            "decade" | "decades" => Field::Decade,
            "century" | "centuries" => Field::Century,
            "millennium" | "millennia" | "millenniums" => Field::Millennium,
            "dow" => Field::DayOfWeek,
            "isodow" => Field::IsoDayOfWeek,
            "doy" => Field::DayOfYear,
            "isoyear" => Field::IsoYear,
            "epoch" => Field::Epoch,
            "julian" => Field::Julian,
            "timezone" => Field::Timezone,
            other => {
                return Err(DbError::InvalidParameterValue {
                    parameter: "date/time field".into(),
                    value: other.into(),
                    allowed: "microseconds, milliseconds, second, minute, hour, day, week, month, quarter, year, decade, century, millennium, dow, isodow, doy, isoyear, epoch".into(),
                })
            }
        })
    }
}

fn unsupported_field(field: Field, of: &str) -> DbError {
    DbError::InvalidParameterValue {
        parameter: format!("unit of {of}"),
        value: format!("{field:?}").to_lowercase(),
        allowed: "a unit the type has".into(),
    }
}

/// A field of a civil date and time. `epoch_micros` is the instant's microseconds since
/// 2000-01-01 UTC (for `epoch`), `offset_seconds` the zone's offset (for `timezone`).
pub fn extract(field: Field, dt: DateTime, epoch_micros: i64, offset_seconds: i32) -> DbResult<f64> {
    let date = dt.date();
    let year = date.year() as f64;
    let second_micros = dt.second() as i64 * MICROS_PER_SECOND + dt.subsec_nanosecond() as i64 / 1000;
    Ok(match field {
        Field::Microseconds => second_micros as f64,
        Field::Milliseconds => second_micros as f64 / 1000.0,
        Field::Second => second_micros as f64 / 1e6,
        Field::Minute => dt.minute() as f64,
        Field::Hour => dt.hour() as f64,
        Field::Day => date.day() as f64,
        Field::Week => date.iso_week_date().week() as f64,
        Field::Month => date.month() as f64,
        Field::Quarter => ((date.month() - 1) / 3 + 1) as f64,
        Field::Year => {
            if year <= 0.0 {
                year - 1.0
            } else {
                year
            }
        }
        Field::Decade => (year / 10.0).floor(),
        Field::Century => {
            if year > 0.0 {
                ((year + 99.0) / 100.0).floor()
            } else {
                -((99.0 - (year - 1.0)) / 100.0).floor()
            }
        }
        Field::Millennium => {
            if year > 0.0 {
                ((year + 999.0) / 1000.0).floor()
            } else {
                -((999.0 - (year - 1.0)) / 1000.0).floor()
            }
        }
        Field::DayOfWeek => date.weekday().to_sunday_zero_offset() as f64,
        Field::IsoDayOfWeek => date.weekday().to_monday_one_offset() as f64,
        Field::DayOfYear => date.day_of_year() as f64,
        Field::IsoYear => date.iso_week_date().year() as f64,
        Field::Epoch => (epoch_micros as f64 + UNIX_TO_POSTGRES_MICROS as f64) / 1e6,
        Field::Julian => {
            (days_of_date(date)? as i64 + 2_451_545) as f64 + time_of_day(dt) as f64 / MICROS_PER_DAY as f64
        }
        Field::Timezone => offset_seconds as f64,
    })
}

/// `extract` of the civil time `local` (a TIMESTAMP's microseconds, any of PostgreSQL's
/// range): one past jiff's years is read some 400-year cycles earlier, where the month,
/// the day, the week and the weekday are the same, and the fields that count years are
/// moved forward again.
pub fn extract_at(field: Field, local: i64, epoch_micros: i64, offset_seconds: i32) -> DbResult<f64> {
    let cycles = far_cycles(valid_timestamp(local)?);
    let near = civil(local - cycles * MICROS_PER_400_YEARS)?;
    let value = extract(field, near, epoch_micros, offset_seconds)?;
    far_field(field, value, cycles, near)
}

/// `extract` of a DATE of PostgreSQL's range, which goes on past the timestamps' (to
/// 5874897 AD), read as `extract_at` reads a timestamp.
pub fn extract_date(field: Field, days: i32) -> DbResult<f64> {
    let days = i64::from(valid_date(days.into())?);
    let far_from_days = FAR_FROM_MICROS / MICROS_PER_DAY;
    let cycles = match days < far_from_days {
        true => 0,
        false => (days - far_from_days).div_euclid(DAYS_PER_400_YEARS) + 1,
    };
    let near_micros = (days - cycles * DAYS_PER_400_YEARS) * MICROS_PER_DAY;
    let near = civil(near_micros)?;
    if field == Field::Epoch {
        return Ok(days as f64 * (MICROS_PER_DAY / MICROS_PER_SECOND) as f64
            + (UNIX_TO_POSTGRES_MICROS / MICROS_PER_SECOND) as f64);
    }
    let value = extract(field, near, near_micros, 0)?;
    far_field(field, value, cycles, near)
}

/// A field `extract` gave of `near`, the time `cycles` 400-year cycles before the one
/// asked about: the fields that count years moved forward again (the month, the day,
/// the week and the weekday are the same).
fn far_field(field: Field, value: f64, cycles: i64, near: DateTime) -> DbResult<f64> {
    if cycles == 0 {
        return Ok(value);
    }
    let years = (cycles * 400) as f64;
    Ok(match field {
        Field::Year | Field::IsoYear => value + years,
        Field::Decade => value + years / 10.0,
        Field::Century => value + years / 100.0,
        // A millennium is no whole number of cycles: from the year itself (past 9999,
        // so after 1 AD).
        Field::Millennium => ((f64::from(near.year()) + years + 999.0) / 1000.0).floor(),
        Field::Julian => value + (cycles * DAYS_PER_400_YEARS) as f64,
        _ => value,
    })
}

/// `date_trunc` of the civil time `local` (a TIMESTAMP's microseconds, any of
/// PostgreSQL's range), read as `extract_at` reads it.
pub fn trunc_at(field: Field, local: i64) -> DbResult<i64> {
    let shift = far_cycles(valid_timestamp(local)?) * MICROS_PER_400_YEARS;
    if shift != 0 && field == Field::Millennium {
        let (year, _, _) = civil_from_days(local.div_euclid(MICROS_PER_DAY) + UNIX_TO_POSTGRES_DAYS);
        let first = (year - 1) / 1000 * 1000 + 1;
        return Ok((days_from_civil(first, 1, 1) - UNIX_TO_POSTGRES_DAYS) * MICROS_PER_DAY);
    }
    Ok(timestamp_of(trunc(field, civil(local - shift)?)?)? + shift)
}

/// A field of an interval (`extract(hour FROM interval '1 day 02:00')` is 2).
pub fn extract_interval(field: Field, iv: &Interval) -> DbResult<f64> {
    let seconds_micros = iv.micros % MICROS_PER_MINUTE;
    Ok(match field {
        Field::Microseconds => seconds_micros as f64,
        Field::Milliseconds => seconds_micros as f64 / 1000.0,
        Field::Second => seconds_micros as f64 / 1e6,
        Field::Minute => (iv.micros / MICROS_PER_MINUTE % 60) as f64,
        Field::Hour => (iv.micros / MICROS_PER_HOUR) as f64,
        Field::Day => iv.days as f64,
        Field::Month => (iv.months % 12) as f64,
        Field::Quarter => ((iv.months % 12) / 3 + 1) as f64,
        Field::Year => (iv.months / 12) as f64,
        Field::Decade => (iv.months / 120) as f64,
        Field::Century => (iv.months / 1200) as f64,
        Field::Millennium => (iv.months / 12000) as f64,
        Field::Epoch => {
            // PostgreSQL's: a year as 365.25 days, a month as 30.
            let years = (iv.months / 12) as f64;
            let months = (iv.months % 12) as f64;
            years * 365.25 * 86_400.0
                + months * 30.0 * 86_400.0
                + iv.days as f64 * 86_400.0
                + iv.micros as f64 / 1e6
        }
        other => return Err(unsupported_field(other, "interval")),
    })
}

/// A civil time truncated to `field` (`date_trunc`).
pub fn trunc(field: Field, dt: DateTime) -> DbResult<DateTime> {
    let date = dt.date();
    let at = |date: Date, time: Time| -> DateTime { date.to_datetime(time) };
    let ymd = |year: i32, month: i8| -> DbResult<Date> {
        Date::new(year as i16, month, 1).map_err(|_| timestamp_overflow())
    };
    let t = dt.time();
    Ok(match field {
        Field::Microseconds => at(
            date,
            Time::new(t.hour(), t.minute(), t.second(), t.subsec_nanosecond() / 1000 * 1000).unwrap(),
        ),
        Field::Milliseconds => at(
            date,
            Time::new(t.hour(), t.minute(), t.second(), t.subsec_nanosecond() / 1_000_000 * 1_000_000)
                .unwrap(),
        ),
        Field::Second => at(date, Time::new(t.hour(), t.minute(), t.second(), 0).unwrap()),
        Field::Minute => at(date, Time::new(t.hour(), t.minute(), 0, 0).unwrap()),
        Field::Hour => at(date, Time::new(t.hour(), 0, 0, 0).unwrap()),
        Field::Day => at(date, Time::midnight()),
        Field::Week => {
            let back = date.weekday().to_monday_zero_offset() as i64;
            at(date.checked_sub(Span::new().days(back)).map_err(|_| timestamp_overflow())?, Time::midnight())
        }
        Field::Month => at(ymd(date.year() as i32, date.month())?, Time::midnight()),
        Field::Quarter => at(ymd(date.year() as i32, (date.month() - 1) / 3 * 3 + 1)?, Time::midnight()),
        Field::Year => at(ymd(date.year() as i32, 1)?, Time::midnight()),
        Field::Decade => at(ymd((date.year() as i32).div_euclid(10) * 10, 1)?, Time::midnight()),
        Field::Century => {
            let y = date.year() as i32;
            let first = if y > 0 { (y - 1) / 100 * 100 + 1 } else { -((-y) / 100 * 100) - 99 };
            at(ymd(first, 1)?, Time::midnight())
        }
        Field::Millennium => {
            let y = date.year() as i32;
            let first = if y > 0 { (y - 1) / 1000 * 1000 + 1 } else { -((-y) / 1000 * 1000) - 999 };
            at(ymd(first, 1)?, Time::midnight())
        }
        other => return Err(unsupported_field(other, "date_trunc")),
    })
}

/// An interval truncated to `field` (`date_trunc('hour', interval ...)`).
pub fn trunc_interval(field: Field, iv: Interval) -> DbResult<Interval> {
    let keep_micros = |unit: i64| Interval { micros: iv.micros / unit * unit, ..iv };
    Ok(match field {
        Field::Microseconds => iv,
        Field::Milliseconds => keep_micros(1000),
        Field::Second => keep_micros(MICROS_PER_SECOND),
        Field::Minute => keep_micros(MICROS_PER_MINUTE),
        Field::Hour => keep_micros(MICROS_PER_HOUR),
        Field::Day => Interval { micros: 0, ..iv },
        Field::Month => Interval { months: iv.months, days: 0, micros: 0 },
        Field::Quarter => Interval { months: iv.months / 3 * 3, days: 0, micros: 0 },
        Field::Year => Interval { months: iv.months / 12 * 12, days: 0, micros: 0 },
        Field::Decade => Interval { months: iv.months / 120 * 120, days: 0, micros: 0 },
        Field::Century => Interval { months: iv.months / 1200 * 1200, days: 0, micros: 0 },
        Field::Millennium => Interval { months: iv.months / 12000 * 12000, days: 0, micros: 0 },
        other => return Err(unsupported_field(other, "interval")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_arithmetic_agrees_with_jiff_over_its_whole_range() {
        let first = days_of_date(Date::new(-9999, 1, 1).unwrap()).unwrap();
        let last = days_of_date(Date::new(9999, 12, 31).unwrap()).unwrap();
        for days in (first..=last).step_by(97).chain([first, last, 0, -1, 1]) {
            let date = date_of_days(days).unwrap();
            assert_eq!(days_of_date(date).unwrap(), days, "{date}");
            let jiff_days = Date::new(2000, 1, 1).unwrap().until((jiff::Unit::Day, date)).unwrap().get_days();
            assert_eq!(jiff_days, days, "{date}");
        }
        assert!(date_of_days(last + 1).is_err() && date_of_days(first - 1).is_err());
    }

    fn ts(text: &str) -> String {
        let mut out = String::new();
        write_timestamp(parse_timestamp(text).unwrap(), &mut out);
        out
    }

    fn iv(text: &str) -> String {
        let mut out = String::new();
        write_interval(&parse_interval(text).unwrap(), &mut out);
        out
    }

    #[test]
    fn timestamps_read_and_print_as_postgres_does() {
        assert_eq!(parse_timestamp("2000-01-01 00:00:00").unwrap(), 0);
        assert_eq!(parse_timestamp("2000-01-02").unwrap(), MICROS_PER_DAY);
        assert_eq!(ts("2024-06-15 07:30:00"), "2024-06-15 07:30:00");
        assert_eq!(ts("2024-06-15T07:30:00.250"), "2024-06-15 07:30:00.25");
        assert_eq!(ts(" 2024-06-15 07:30:00.0000005 "), "2024-06-15 07:30:00.000001");
        assert_eq!(ts("2024-06-15 07:30:00+02"), "2024-06-15 07:30:00", "a timestamp ignores the offset");
        assert_eq!(ts("1999-12-31 23:59:59.999999"), "1999-12-31 23:59:59.999999");
        // The last microsecond jiff's calendar holds (its instants stop a day before).
        assert_eq!(ts("9999-12-31 23:59:59.999999"), "9999-12-31 23:59:59.999999");
        assert_eq!(ts("0001-01-01 00:00:00 BC"), "0001-01-01 00:00:00 BC");
        // A date with an offset and no time, as PgJDBC's setDate sends it.
        assert_eq!(ts("2024-02-29 +05:30"), "2024-02-29 00:00:00");
        assert_eq!(parse_date("2024-02-29 +05:30").unwrap(), parse_date("2024-02-29").unwrap());
        assert_eq!(ts("0044-03-15 BC"), "0044-03-15 00:00:00 BC");
        assert_eq!(ts("infinity"), "infinity");
        assert_eq!(ts("-Infinity"), "-infinity");
        assert_eq!(ts("epoch"), "1970-01-01 00:00:00");
        for bad in ["", "2024-13-01", "2024-02-30", "yesterday-ish", "12:00", "2024-06-15 25:00"] {
            let e = parse_timestamp(bad).unwrap_err();
            assert_eq!(e.sqlstate(), "22007", "{bad}: {e}");
        }
    }

    #[test]
    fn timestamptz_reads_offsets_and_zones_and_prints_in_the_zone_given() {
        let paris = ZoneId::named("Europe/Paris").unwrap().zone();
        let t = parse_timestamptz("2024-06-15 07:30:00+02").unwrap();
        assert_eq!(t, parse_timestamptz("2024-06-15 05:30:00Z").unwrap());
        assert_eq!(t, parse_timestamptz("2024-06-15 05:30:00 UTC").unwrap());
        assert_eq!(t, parse_timestamptz("2024-06-15 01:30:00-04").unwrap());
        assert_eq!(t, parse_timestamptz("2024-06-15 07:30:00 Europe/Paris").unwrap());
        let mut out = String::new();
        write_timestamptz(t, &TimeZone::UTC, &mut out);
        assert_eq!(out, "2024-06-15 05:30:00+00");
        out.clear();
        write_timestamptz(t, &paris, &mut out);
        assert_eq!(out, "2024-06-15 07:30:00+02");
        out.clear();
        let kolkata = ZoneId::named("asia/kolkata").unwrap().zone();
        write_timestamptz(t, &kolkata, &mut out);
        assert_eq!(out, "2024-06-15 11:00:00+05:30");
        // Without an offset, the session's zone.
        ZoneId::named("Europe/Paris").unwrap().make_current();
        assert_eq!(parse_timestamptz("2024-06-15 07:30:00").unwrap(), t);
        ZoneId::UTC.make_current();
        assert_eq!(parse_timestamptz("2024-06-15 05:30:00").unwrap(), t);
    }

    #[test]
    fn zones_are_interned_and_checked() {
        assert_eq!(ZoneId::named("UTC").unwrap(), ZoneId::UTC);
        assert_eq!(ZoneId::named("America/New_York").unwrap(), ZoneId::named("america/new_york").unwrap());
        let minus7 = ZoneId::named("-7").unwrap().zone();
        assert_eq!(minus7.to_offset(Timestamp::UNIX_EPOCH).seconds(), -7 * 3600);
        assert_eq!(ZoneId::named("Mars/Olympus").unwrap_err().sqlstate(), "22023");
    }

    #[test]
    fn dates_times_and_their_conversions() {
        assert_eq!(parse_date("2000-01-01").unwrap(), 0);
        assert_eq!(parse_date("1999-12-31").unwrap(), -1);
        assert_eq!(
            parse_date("2024-02-29 13:00").unwrap(),
            days_of_date(Date::constant(2024, 2, 29)).unwrap()
        );
        let mut out = String::new();
        write_date(parse_date("1970-01-01").unwrap(), &mut out);
        assert_eq!(out, "1970-01-01");
        assert_eq!(parse_date("2023-02-29").unwrap_err().sqlstate(), "22007");
        assert_eq!(timestamp_to_date(-1).unwrap(), -1, "a time before 2000 is on the day before");
        assert_eq!(date_to_timestamp(2), 2 * MICROS_PER_DAY);
        assert_eq!(parse_time("07:30").unwrap(), 7 * MICROS_PER_HOUR + 30 * MICROS_PER_MINUTE);
        assert_eq!(parse_time("24:00:00").unwrap(), MICROS_PER_DAY);
        assert_eq!(parse_time("12:00:01.5+02").unwrap(), 12 * MICROS_PER_HOUR + 1_500_000);
        out.clear();
        write_time(parse_time("13:05:09.120").unwrap(), &mut out);
        assert_eq!(out, "13:05:09.12");
        assert_eq!(parse_time("25:00").unwrap_err().sqlstate(), "22007");
        let ny = ZoneId::named("America/New_York").unwrap().zone();
        let t = parse_timestamp("2024-01-15 12:00").unwrap();
        let tz = timestamp_to_timestamptz(t, &ny).unwrap();
        assert_eq!(tz - t, 5 * MICROS_PER_HOUR);
        assert_eq!(timestamptz_to_timestamp(tz, &ny).unwrap(), t);
    }

    #[test]
    fn intervals_read_print_and_compare_as_postgres_does() {
        assert_eq!(iv("1 year 2 mons 3 days 04:05:06.5"), "1 year 2 mons 3 days 04:05:06.5");
        assert_eq!(iv("2 hours 30 minutes"), "02:30:00");
        assert_eq!(iv("-1 day"), "-1 days");
        assert_eq!(iv("1 day -01:00"), "1 day -01:00:00");
        assert_eq!(iv("-1 day 1 hour"), "-1 days +01:00:00");
        assert_eq!(iv("1.5 days"), "1 day 12:00:00");
        assert_eq!(iv("1.5 years"), "1 year 6 mons");
        assert_eq!(iv("@ 3 days ago"), "-3 days");
        assert_eq!(iv("10"), "00:00:10");
        assert_eq!(iv("3days 10s"), "3 days 00:00:10");
        assert_eq!(iv("P1Y2M3DT4H5M6S"), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(iv("0"), "00:00:00");
        for bad in ["", "1 fortnight", "abc", "1:99"] {
            assert_eq!(parse_interval(bad).unwrap_err().sqlstate(), "22007", "{bad}");
        }
        let month = parse_interval("1 mon").unwrap();
        assert_eq!(month.comparable(), parse_interval("30 days").unwrap().comparable());
        assert!(month.comparable() < parse_interval("31 days").unwrap().comparable());
        let mut out = String::new();
        write_interval(&month.times(1.5).unwrap(), &mut out);
        assert_eq!(out, "1 mon 15 days");
    }

    #[test]
    fn interval_arithmetic_keeps_the_calendar() {
        let jan31 = parse_timestamp("2024-01-31 10:00").unwrap();
        let month = parse_interval("1 month").unwrap();
        let mut out = String::new();
        write_timestamp(add_interval(jan31, month, None).unwrap(), &mut out);
        assert_eq!(out, "2024-02-29 10:00:00");
        // A day across a daylight-saving change is 23 hours of a zone's clock.
        let paris = ZoneId::named("Europe/Paris").unwrap().zone();
        let before = parse_timestamptz("2024-03-30 12:00+01").unwrap();
        let next = add_interval(before, parse_interval("1 day").unwrap(), Some(&paris)).unwrap();
        assert_eq!(next - before, 23 * MICROS_PER_HOUR);
        let d =
            difference(parse_timestamp("2024-01-03 06:00").unwrap(), parse_timestamp("2024-01-01").unwrap())
                .unwrap();
        out.clear();
        write_interval(&d, &mut out);
        assert_eq!(out, "2 days 06:00:00");
    }

    #[test]
    fn fields_and_truncation() {
        let dt = civil(parse_timestamp("2024-06-15 07:30:15.25").unwrap()).unwrap();
        assert_eq!(extract(Field::Year, dt, 0, 0).unwrap(), 2024.0);
        assert_eq!(extract(Field::Quarter, dt, 0, 0).unwrap(), 2.0);
        assert_eq!(extract(Field::Second, dt, 0, 0).unwrap(), 15.25);
        assert_eq!(extract(Field::DayOfWeek, dt, 0, 0).unwrap(), 6.0);
        assert_eq!(extract(Field::Century, dt, 0, 0).unwrap(), 21.0);
        let epoch = parse_timestamptz("1970-01-02 00:00Z").unwrap();
        assert_eq!(extract(Field::Epoch, dt, epoch, 0).unwrap(), 86_400.0);
        let mut out = String::new();
        write_timestamp(timestamp_of(trunc(Field::Month, dt).unwrap()).unwrap(), &mut out);
        assert_eq!(out, "2024-06-01 00:00:00");
        out.clear();
        write_timestamp(timestamp_of(trunc(Field::Week, dt).unwrap()).unwrap(), &mut out);
        assert_eq!(out, "2024-06-10 00:00:00");
        let i = parse_interval("1 day 02:03:04").unwrap();
        assert_eq!(extract_interval(Field::Hour, &i).unwrap(), 2.0);
        assert_eq!(extract_interval(Field::Epoch, &i).unwrap(), 93_784.0);
        assert_eq!(Field::named("fortnight").unwrap_err().sqlstate(), "22023");
    }
}
