//! The string, numeric and conditional functions, and `to_char` / `to_date` /
//! `to_timestamp`, through `Session::execute` (issue 20): every expected answer is what
//! PostgreSQL 15 returns for the same statement (Oracle's for NVL, NVL2, DECODE and
//! INSTR, which PostgreSQL lacks), NULL arguments included, and so are the errors'
//! SQLSTATEs: 42883 for arguments of a type the function has no variant for, 54000 for
//! a string too long to build, 22011, 22023, 2201F, 22007, 22008 and 42601.

use db::sql::QueryResult;
use db::{DataType, Session, Value};

use crate::common::{fails, open, run};

/// The one value `SELECT expr` gives, as text (None for NULL).
fn value(s: &mut Session, expr: &str) -> Option<String> {
    let sql = format!("SELECT {expr}");
    let result = run(s, &sql);
    let rows = result.rows();
    assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
    match &rows[0][0] {
        Value::Null => None,
        v => Some(v.to_string()),
    }
}

/// Checks each `(expr, expected)`; every mismatch is reported at once.
fn check(s: &mut Session, cases: &[(&str, Option<&str>)]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(expr, expected)| {
            let got = value(s, expr);
            (got.as_deref() != *expected)
                .then(|| format!("{expr}: got {got:?}, PostgreSQL gives {expected:?}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

/// Checks the SQLSTATE each statement fails with.
fn check_errors(s: &mut Session, cases: &[(&str, &str)]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(sql, state)| {
            let e = fails(s, sql);
            (e.sqlstate() != *state).then(|| format!("{sql}: {} ({e}), expected {state}", e.sqlstate()))
        })
        .collect();
    assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

#[test]
fn string_functions_answer_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    check(
        &mut s,
        &[
            ("lower('ÀBC')", Some("àbc")),
            ("upper('àbc')", Some("ÀBC")),
            ("initcap('hello wORLD-foo bar_baz 3abc')", Some("Hello World-Foo Bar_Baz 3abc")),
            ("length('héllo')", Some("5")),
            ("char_length('abc')", Some("3")),
            ("character_length('')", Some("0")),
            ("octet_length('héllo')", Some("6")),
            ("trim('  a b  ')", Some("a b")),
            ("ltrim('  a  ') || '|'", Some("a  |")),
            ("rtrim('  a  ') || '|'", Some("  a|")),
            ("trim(both 'x' from 'xxaxbxx')", Some("axb")),
            ("trim(leading 'xy' from 'yxaxy')", Some("axy")),
            ("trim(trailing 'xy' from 'yxaxy')", Some("yxa")),
            ("btrim('xyaxy', 'xy')", Some("a")),
            ("ltrim('xyaxy', 'xy')", Some("axy")),
            ("rtrim('xyaxy', 'yx')", Some("xya")),
            ("replace('abcabc', 'b', 'XY')", Some("aXYcaXYc")),
            ("replace('abc', '', 'Z')", Some("abc")),
            ("position('b' in 'abcb')", Some("2")),
            ("position('' in 'abc')", Some("1")),
            ("strpos('abc', 'z')", Some("0")),
            ("strpos('héllo', 'l')", Some("3")),
            ("lpad('hi', 5, 'xy')", Some("xyxhi")),
            ("rpad('hi', 5, 'xy')", Some("hixyx")),
            ("lpad('hello', 2)", Some("he")),
            ("lpad('hi', -1)", Some("")),
            ("lpad('hi', 5, '')", Some("hi")),
            ("concat('a', NULL, 1, true, 2.5)", Some("a1t2.5")),
            ("concat_ws(',', 'a', NULL, 'b', 3)", Some("a,b,3")),
            ("split_part('a,b,c', ',', 2)", Some("b")),
            ("split_part('a,b,c', ',', 4)", Some("")),
            ("split_part('a,b,c', ',', -1)", Some("c")),
            ("split_part('abc', '', 1)", Some("abc")),
            ("substr('hello', 2)", Some("ello")),
            ("substr('hello', 0, 3)", Some("he")),
            ("substr('hello', -1, 3)", Some("h")),
            ("substring('hello' from 2 for 3)", Some("ell")),
            ("substring('hello' for 2)", Some("he")),
            ("substring('hello' from 3)", Some("llo")),
            ("left('hello', 2)", Some("he")),
            ("left('hello', -2)", Some("hel")),
            ("right('hello', 2)", Some("lo")),
            ("right('hello', -2)", Some("llo")),
            ("left('hi', 0)", Some("")),
            ("repeat('ab', 3)", Some("ababab")),
            ("repeat('ab', -1)", Some("")),
            ("reverse('héllo')", Some("olléh")),
            ("'a' || 1 || true", Some("a1true")),
            // A quoted literal takes the type the function wants.
            ("repeat('ab', '2')", Some("abab")),
            // NULL in, NULL out.
            ("lower(NULL)", None),
            ("trim(NULL)", None),
            ("trim(both NULL from 'a')", None),
            ("ltrim('a', NULL)", None),
            ("replace('abc', 'b', NULL)", None),
            ("strpos(NULL, 'a')", None),
            ("split_part('a,b', NULL, 1)", None),
            ("left(NULL, 1)", None),
            ("initcap(NULL)", None),
            ("reverse(NULL)", None),
            ("octet_length(NULL)", None),
            ("repeat('a', NULL)", None),
            ("concat_ws(NULL, 'a')", None),
            ("'a' || NULL", None),
        ],
    );
}

#[test]
fn numeric_and_conditional_functions_answer_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    check(
        &mut s,
        &[
            ("abs(-5)", Some("5")),
            ("abs(-5.5)", Some("5.5")),
            ("abs('-5')", Some("5")),
            ("sign(-3)", Some("-1")),
            ("sign(0)", Some("0")),
            ("sign(2.5)", Some("1")),
            ("sign(-0.0)", Some("0")),
            ("mod(7, 3)", Some("1")),
            ("mod(-7, 3)", Some("-1")),
            ("mod(7, -3)", Some("1")),
            ("power(2, 3)", Some("8")),
            ("power(2, -1)", Some("0.5")),
            ("pow(4, 0.5)", Some("2")),
            ("sqrt(16)", Some("4")),
            ("round(2.5)", Some("3")),
            ("round(-2.5)", Some("-3")),
            ("round(1234.5678, 2)", Some("1234.57")),
            ("ceil(1.2)", Some("2")),
            ("ceiling(-1.2)", Some("-1")),
            ("floor(-1.2)", Some("-2")),
            ("ceil(5)", Some("5")),
            ("greatest(1, 3, 2)", Some("3")),
            ("least(1, 3, 2)", Some("1")),
            ("greatest(1, NULL, 3)", Some("3")),
            ("least(NULL, NULL)", None),
            ("greatest('a', 'b')", Some("b")),
            ("greatest(1, 2.5)", Some("2.5")),
            ("coalesce(NULL, 2, 3)", Some("2")),
            ("coalesce(NULL, NULL)", None),
            ("nullif(1, 1)", None),
            ("nullif(1, 2)", Some("1")),
            ("nullif('a', 'b')", Some("a")),
            ("abs(NULL)", None),
            ("sign(NULL)", None),
            ("power(NULL, 2)", None),
            ("mod(5, NULL)", None),
            // Oracle's: NVL is COALESCE of two, NVL2 picks by the first's nullness,
            // DECODE compares with NULL equal to NULL, INSTR searches either way.
            ("nvl(NULL, 'b')", Some("b")),
            ("nvl('a', 'b')", Some("a")),
            ("NVL(NULL, NULL)", None),
            ("nvl2(NULL, 'set', 'unset')", Some("unset")),
            ("nvl2(0, 'set', 'unset')", Some("set")),
            ("nvl2(1, NULL, 'unset')", None),
            ("decode(2, 1, 'one', 2, 'two', 'many')", Some("two")),
            ("decode(5, 1, 'one', 2, 'two', 'many')", Some("many")),
            ("decode(5, 1, 'one', 2, 'two')", None),
            ("decode(NULL, 1, 'one', NULL, 'null')", Some("null")),
            ("DECODE('b', 'a', 1, 'b', 2)", Some("2")),
            ("instr('CORPORATE FLOOR', 'OR')", Some("2")),
            ("instr('CORPORATE FLOOR', 'OR', 3, 2)", Some("14")),
            ("instr('CORPORATE FLOOR', 'OR', -3, 2)", Some("2")),
            ("instr('CORPORATE FLOOR', 'XY')", Some("0")),
            ("instr(NULL, 'a')", None),
        ],
    );
    // DECODE evaluates only the branch it takes, as Oracle's does.
    assert_eq!(value(&mut s, "decode(1, 1, 'one', 1 / 0)").as_deref(), Some("one"));
    // NVL2 too.
    assert_eq!(value(&mut s, "nvl2(1, 'x', 1 / 0)").as_deref(), Some("x"));
}

#[test]
fn to_char_formats_numbers_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    // Brackets show the padding.
    let cases: Vec<(String, Option<&str>)> = [
        ("1234.5", "9999.99", "[ 1234.50]"),
        ("-1234.5", "9999.99", "[-1234.50]"),
        ("1234.5", "FM9999.99", "[1234.5]"),
        ("1234.5", "FM9999.00", "[1234.50]"),
        ("1234.5", "FM999,999.00", "[1,234.50]"),
        ("12345", "999", "[ ###]"),
        ("0.5", "9.99", "[  .50]"),
        ("0.5", "0.99", "[ 0.50]"),
        ("5", "9999", "[    5]"),
        ("123", "0000", "[ 0123]"),
        ("5", "9099", "[  005]"),
        ("-5", "S999", "[  -5]"),
        ("5", "S999", "[  +5]"),
        ("-5", "999S", "[  5-]"),
        ("-5", "MI999", "[-  5]"),
        ("5", "MI999", "[   5]"),
        ("-5", "999MI", "[  5-]"),
        ("-5", "PL999", "[   -5]"),
        ("5", "PL999", "[+   5]"),
        ("-5", "SG999", "[-  5]"),
        ("5", "SG999", "[+  5]"),
        ("-5", "999PR", "[  <5>]"),
        ("5", "999PR", "[   5 ]"),
        ("-5", "FM999PR", "[<5>]"),
        ("1234567.891", "9G999G999D99", "[ 1,234,567.89]"),
        ("1234567.891", "9,999,999.99", "[ 1,234,567.89]"),
        ("-1234567.891", "FM9,999,999.99", "[-1,234,567.89]"),
        ("5", "9,999", "[     5]"),
        ("5", "FM9,999", "[5]"),
        ("123456789012", "999,999,999,999", "[ 123,456,789,012]"),
        ("1234.5", "9.99EEEE", "[ 1.23e+03]"),
        ("-0.00012", "9.9EEEE", "[-1.2e-04]"),
        ("0", "9.99EEEE", "[ 0.00e+00]"),
        ("5", "9EEEE", "[ 5e+00]"),
        ("485", "RN", "[        CDLXXXV]"),
        ("485", "FMRN", "[CDLXXXV]"),
        ("5", "FMrn", "[v]"),
        ("4000", "RN", "[###############]"),
        ("12", "99th", "[ 12th]"),
        ("3", "FM9TH", "[3RD]"),
        ("11", "99TH", "[ 11TH]"),
        ("-12", "99th", "[-12]"),
        ("12", "99V9", "[ 120]"),
        ("12.45", "99V99", "[ 1245]"),
        ("0", "9999", "[    0]"),
        ("0", "FM9999", "[0]"),
        ("0", "FM9990.00", "[0.00]"),
        ("0.1", "FM9.99", "[.1]"),
        ("0", "9999.99", "[     .00]"),
        ("0", "FM9999.99", "[0.]"),
        ("100", "FM999.99", "[100.]"),
        ("123.45", "FM999.900", "[123.450]"),
        ("-0.5", "9.99", "[ -.50]"),
        ("-0.5", "FM0.99", "[-0.5]"),
        ("1234", "L9999", "[  1234]"),
        ("42", "\"Total: \"999", "[Total:   42]"),
        ("5", "999D99", "[   5.00]"),
        ("123.456", "999.99", "[ 123.46]"),
        ("1.0 / 3", "0.99999999999999999999", "[ 0.33333333333333333333]"),
        ("1.0::float8 / 3", "0.99999999999999999999", "[ 0.33333333333333]"),
        ("-0.001", "9.99", "[  .00]"),
        ("-0.001::float8", "9.99", "[ -.00]"),
    ]
    .iter()
    .map(|(n, template, expected)| (format!("'[' || to_char({n}, '{template}') || ']'"), Some(*expected)))
    .collect();
    let cases: Vec<(&str, Option<&str>)> = cases.iter().map(|(e, x)| (e.as_str(), *x)).collect();
    check(&mut s, &cases);
    check(
        &mut s,
        &[
            ("to_char(5, '') || '|'", Some("|")),
            ("to_char(NULL::bigint, '9')", None),
            ("to_char(5, NULL)", None),
        ],
    );
    check_errors(
        &mut s,
        &[
            ("SELECT to_char(5, '99.9.9')", "42601"),
            ("SELECT to_char(5, '9V9.9')", "42601"),
            ("SELECT to_char(5, 'S9S9')", "42601"),
            ("SELECT to_char(5, 'S9MI')", "42601"),
            ("SELECT to_char(5, '9PR9')", "42601"),
            ("SELECT to_char(5, '9.99EEEEPR')", "42601"),
            ("SELECT to_char(1.5, 'FM9.9EEEE')", "42601"),
            ("SELECT to_char(9223372036854775807, '9999999999999999999V9')", "22003"),
        ],
    );
}

#[test]
fn to_char_formats_dates_times_and_timestamps_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "SET TIME ZONE 'UTC'");
    check(
        &mut s,
        &[
            ("to_char(TIMESTAMP '2024-03-05 14:07:09.123456', 'YYYY-MM-DD HH24:MI:SS')", Some("2024-03-05 14:07:09")),
            ("to_char(DATE '2024-03-05', 'DD Mon YYYY')", Some("05 Mar 2024")),
            (
                "to_char(TIMESTAMP '2024-03-05 14:07:09', 'Day, DD Month YYYY HH12:MI AM')",
                Some("Tuesday  , 05 March     2024 02:07 PM"),
            ),
            (
                "'[' || to_char(TIMESTAMP '2024-03-05 04:07:09.123456', 'FMDay FMMonth FMDD FMHH12 MS US FF3 SSSS am a.m. PM') || ']'",
                Some("[Tuesday March 5 4 123 123456 123 14829 am a.m. AM]"),
            ),
            ("to_char(TIMESTAMP '2024-03-05 00:07:09', 'HH HH12 HH24 am')", Some("12 12 00 am")),
            ("to_char(TIMESTAMP '2024-03-05 12:07:09', 'HH12 PM')", Some("12 PM")),
            ("to_char(DATE '2024-01-01', 'DDD D ID W WW IW IYYY Q CC J')", Some("001 2 1 1 01 01 2024 1 21 2460311")),
            ("to_char(DATE '2024-03-01', 'DDth DDTH FMDDth')", Some("01st 01ST 1st")),
            ("to_char(DATE '2024-03-02', 'FMDDth')", Some("2nd")),
            ("to_char(DATE '2024-03-03', 'FMDDth')", Some("3rd")),
            ("to_char(DATE '2024-03-11', 'FMDDth')", Some("11th")),
            ("to_char(DATE '2024-03-22', 'FMDDth')", Some("22nd")),
            ("to_char(DATE '0005-03-01', 'YYYY Y,YYY YYY YY Y')", Some("0005 0,005 005 05 5")),
            ("to_char(DATE '0044-03-15 BC', 'YYYY BC AD b.c.')", Some("0044 BC BC b.c.")),
            (
                "to_char(DATE '2024-03-05', 'MON mon Mon MONTH month DY dy Dy DAY day RM rm')",
                Some("MAR mar Mar MARCH     march     TUE tue Tue TUESDAY   tuesday   III  iii "),
            ),
            ("to_char(DATE '2024-03-05', 'TMMonth|TMDay')", Some("March|Tuesday")),
            (
                "to_char(TIMESTAMPTZ '2024-03-05 14:07:09+00', 'YYYY-MM-DD HH24:MI:SS TZ tz OF TZH:TZM')",
                Some("2024-03-05 14:07:09 UTC utc +00 +00:00"),
            ),
            ("to_char(TIMESTAMP '2024-03-05 14:07:09', 'YYYY \"year\" MM \"HH\" \\HH')", Some("2024 year 03 HH \\02")),
            ("to_char(TIMESTAMP '2024-03-05 14:07:09', 'TZ OF') || '|'", Some(" +00|")),
            ("to_char(TIME '14:07:09', 'HH24:MI')", Some("14:07")),
            ("to_char(INTERVAL '1 day 02:03:04', 'DD HH24:MI:SS')", Some("01 02:03:04")),
            ("to_char(NULL::date, 'YYYY')", None),
            ("to_char(DATE 'infinity', 'YYYY')", None),
        ],
    );
    run(&mut s, "SET TIME ZONE 'Asia/Kolkata'");
    check(
        &mut s,
        &[(
            "to_char(TIMESTAMPTZ '2024-03-05 14:07:09+00', 'YYYY-MM-DD HH24:MI:SS TZ OF TZH TZM')",
            Some("2024-03-05 19:37:09 IST +05:30 +05 30"),
        )],
    );
    run(&mut s, "SET TIME ZONE 'America/New_York'");
    check(&mut s, &[("to_char(TIMESTAMPTZ '2024-07-05 14:07:09+00', 'HH24 TZ OF')", Some("10 EDT -04"))]);
    check_errors(&mut s, &[("SELECT to_char(INTERVAL '1 day', 'Day')", "22007")]);
}

#[test]
fn to_date_and_to_timestamp_read_text_through_a_template() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "SET TIME ZONE 'UTC'");
    check(
        &mut s,
        &[
            ("to_date('2024-03-05', 'YYYY-MM-DD')", Some("2024-03-05")),
            ("to_date('05 Mar 2024', 'DD Mon YYYY')", Some("2024-03-05")),
            ("to_date('20240305', 'YYYYMMDD')", Some("2024-03-05")),
            ("to_date('5/3/24', 'DD/MM/YY')", Some("2024-03-05")),
            ("to_date('March 5, 2024', 'Month DD, YYYY')", Some("2024-03-05")),
            ("to_date('2024  -  03 05', 'YYYY-MM-DD')", Some("2024-03-05")),
            ("to_date('2024/03/05', 'YYYY-MM-DD')", Some("2024-03-05")),
            ("to_date('70-3-5', 'YY-MM-DD')", Some("1970-03-05")),
            ("to_date('2024-060', 'YYYY-DDD')", Some("2024-02-29")),
            ("to_date('2024-03-05 extra', 'YYYY-MM-DD')", Some("2024-03-05")),
            ("to_date('2024-03', 'YYYY-MM-DD')", Some("2024-03-01")),
            ("to_date('2024-3-5', 'YYYY-MM-DD')", Some("2024-03-05")),
            ("to_date('2024035', 'YYYYMMDD')", Some("2024-03-05")),
            ("to_date('2,024-03-05', 'Y,YYY-MM-DD')", Some("2024-03-05")),
            ("to_date('21 05', 'CC YY')", Some("2005-01-01")),
            ("to_date('2460311', 'J')", Some("2024-01-01")),
            ("to_date('44 BC', 'YYYY BC')", Some("0044-01-01 BC")),
            ("to_date('MAR 5 2024', 'MON DD YYYY')", Some("2024-03-05")),
            ("to_date('Tue 5 Mar 2024', 'Dy DD Mon YYYY')", Some("2024-03-05")),
            ("to_date('March 5th, 2024', 'Month DDth, YYYY')", Some("2024-03-05")),
            ("to_date('2024-03-05', 'YYYY-DD-MM')", Some("2024-05-03")),
            ("to_date('2024 03 05', 'FXYYYY-MM-DD')", Some("2024-03-05")),
            ("to_timestamp('2024-03-05 14:07:09', 'YYYY-MM-DD HH24:MI:SS')", Some("2024-03-05 14:07:09+00")),
            (
                "to_timestamp('2024-03-05 02:07:09 PM', 'YYYY-MM-DD HH12:MI:SS AM')",
                Some("2024-03-05 14:07:09+00"),
            ),
            (
                "to_timestamp('2024-03-05 14:07:09.123', 'YYYY-MM-DD HH24:MI:SS.MS')",
                Some("2024-03-05 14:07:09.123+00"),
            ),
            (
                "to_timestamp('2024-03-05 14:07:09.5', 'YYYY-MM-DD HH24:MI:SS.US')",
                Some("2024-03-05 14:07:09.5+00"),
            ),
            (
                "to_timestamp('2024-03-05 14:07:09 -05', 'YYYY-MM-DD HH24:MI:SS TZH')",
                Some("2024-03-05 19:07:09+00"),
            ),
            (
                "to_timestamp('2024-03-05 14:07:09-05:30', 'YYYY-MM-DD HH24:MI:SSTZH:TZM')",
                Some("2024-03-05 19:37:09+00"),
            ),
            ("to_timestamp(1700000000)", Some("2023-11-14 22:13:20+00")),
            ("to_timestamp(1700000000.5)", Some("2023-11-14 22:13:20.5+00")),
            ("to_date(NULL, 'YYYY')", None),
            ("to_date('2024', NULL)", None),
            ("to_timestamp(NULL)", None),
        ],
    );
    // In the session's zone unless the text says.
    run(&mut s, "SET TIME ZONE 'Europe/Paris'");
    check(
        &mut s,
        &[
            ("to_timestamp('2024-03-05 14:07:09', 'YYYY-MM-DD HH24:MI:SS')", Some("2024-03-05 14:07:09+01")),
            (
                "to_timestamp('2024-03-05 14:07:09 +05:30', 'YYYY-MM-DD HH24:MI:SS TZH:TZM')",
                Some("2024-03-05 09:37:09+01"),
            ),
        ],
    );
    check_errors(
        &mut s,
        &[
            ("SELECT to_date('2024-13-05', 'YYYY-MM-DD')", "22008"),
            ("SELECT to_date('2024-02-30', 'YYYY-MM-DD')", "22008"),
            ("SELECT to_date('2024--03-05', 'YYYY-MM-DD')", "22008"),
            ("SELECT to_date('2024-xx-05', 'YYYY-MM-DD')", "22007"),
            ("SELECT to_date('2024-Foo-05', 'YYYY-Mon-DD')", "22007"),
            ("SELECT to_timestamp('2024-03-05 25:00', 'YYYY-MM-DD HH24:MI')", "22008"),
            ("SELECT to_timestamp('2024 13', 'YYYY HH12')", "22007"),
            ("SELECT to_timestamp('2024-03-05 14:07:09.123456789', 'YYYY-MM-DD HH24:MI:SS.US')", "22008"),
            ("SELECT to_timestamp('2024-03-05 CET', 'YYYY-MM-DD TZ')", "0A000"),
        ],
    );
}

#[test]
fn arguments_of_a_type_the_function_does_not_take_fail_with_42883() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, price DOUBLE PRECISION, day DATE)");
    run(&mut s, "INSERT INTO t VALUES (1, 'Widget', 2.5, DATE '2024-03-05')");
    check_errors(
        &mut s,
        &[
            ("SELECT lower(1)", "42883"),
            ("SELECT length(5)", "42883"),
            ("SELECT upper(now())", "42883"),
            ("SELECT repeat('x', 2.5)", "42883"),
            ("SELECT substr('abc', 1.5)", "42883"),
            ("SELECT lower(id) FROM t", "42883"),
            ("SELECT abs(name) FROM t", "42883"),
            ("SELECT sqrt(day) FROM t", "42883"),
            ("SELECT strpos(price, 'x') FROM t", "42883"),
            ("SELECT to_date(id, 'YYYY') FROM t", "42883"),
            ("SELECT to_char(name, '999') FROM t", "42883"),
            ("SELECT split_part(name, ',', price) FROM t", "42883"),
            ("SELECT trim(both 'x' from id) FROM t", "42883"),
            ("SELECT position(id in name) FROM t", "42883"),
        ],
    );
    let e = fails(&mut s, "SELECT lower(id) FROM t");
    assert_eq!(e.to_string(), "function lower(bigint) does not exist");
    // The columns of the types they take, literals and casts are fine.
    check(
        &mut s,
        &[
            ("upper(name) FROM t", Some("WIDGET")),
            ("lpad(id::text, 4, '0') FROM t", Some("0001")),
            ("round(price) FROM t", Some("2")), // rint: half to even (this read "3", not what PostgreSQL 15 gives)
            ("to_char(day, 'DD/MM/YYYY') FROM t", Some("05/03/2024")),
            ("to_char(price, '0.00') FROM t", Some(" 2.50")),
        ],
    );
}

#[test]
fn bad_arguments_fail_with_postgresql_s_sqlstates_and_no_runaway_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let started = std::time::Instant::now();
    check_errors(
        &mut s,
        &[
            // Refused before a byte is allocated: 54000, as PostgreSQL's "requested
            // length too large".
            ("SELECT repeat('x', 2000000000)", "54000"),
            ("SELECT repeat('abc', 9223372036854775807)", "54000"),
            ("SELECT lpad('x', 2000000000)", "54000"),
            ("SELECT split_part('a,b', ',', 0)", "22023"),
            ("SELECT substr('hello', 2, -1)", "22011"),
            ("SELECT power(0, -1)", "2201F"),
            ("SELECT power(-8, 1.0 / 3)", "2201F"),
            ("SELECT sqrt(-1)", "2201F"),
            ("SELECT mod(7, 0)", "22012"),
            ("SELECT instr('abc', 'a', 1, 0)", "22023"),
            ("SELECT decode(1, 2)", "42883"),
            ("SELECT nvl2(1, 2)", "42883"),
        ],
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the refusals took {:?}",
        started.elapsed()
    );
}

#[test]
fn function_results_describe_their_types_for_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let result = run(
        &mut s,
        "SELECT lower('A'), initcap('a'), replace('a', 'a', 'b'), split_part('a', ',', 1), trim(' a '), \
         to_char(1, '9'), strpos('a', 'a'), instr('a', 'a'), octet_length('a'), to_date('2024', 'YYYY'), \
         to_timestamp('2024', 'YYYY'), to_timestamp(0), sign(1), sign(1.5), nvl2(1, 'a', 'b'), \
         decode(1, 1, 2, 3), nvl(NULL, 2.5)",
    );
    let QueryResult::Rows { columns, .. } = result else { panic!("rows") };
    let types: Vec<Option<DataType>> = columns.iter().map(|c| c.ty).collect();
    let text = Some(DataType::Text { max_chars: None });
    assert_eq!(
        types,
        vec![
            text,
            text,
            text,
            text,
            text,
            text,
            Some(DataType::Int),
            Some(DataType::Int),
            Some(DataType::Int),
            Some(DataType::Date),
            Some(DataType::TimestampTz),
            Some(DataType::TimestampTz),
            Some(DataType::Int),
            Some(DataType::Numeric(None)),
            text,
            Some(DataType::Int),
            Some(DataType::Numeric(None)),
        ]
    );
}

/// md5, regexp_replace (groups, `\&`, flags g and i), format (`%s`, `%I`, `%L`, `%%`,
/// positions, widths) and the session's user, with PostgreSQL 15's answers and errors.
#[test]
fn md5_regexp_replace_format_and_current_user_answer_as_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let one = |s: &mut Session, sql: &str| -> String {
        crate::common::cells(s, sql).into_iter().map(|r| r.join("|")).collect::<Vec<_>>().join("\n")
    };
    let cases: &[(&str, &str)] = &[
        ("SELECT md5('a'), md5('')", "0cc175b9c0f1b6a831c399e269772661|d41d8cd98f00b204e9800998ecf8427e"),
        ("SELECT regexp_replace('Thomas', '.[mN]a.', 'M')", "ThM"),
        ("SELECT regexp_replace('foobarbaz', 'b(..)', 'X\\1Y', 'g')", "fooXarYXazY"),
        ("SELECT regexp_replace('ABC abc', 'b', 'x', 'gi')", "AxC axc"),
        ("SELECT regexp_replace('a$b', '\\$', '\\&\\&')", "a$$b"),
        ("SELECT regexp_replace(NULL, 'a', 'b') IS NULL", "true"),
        ("SELECT format('Hello %s, %1$s', 'World')", "Hello World, World"),
        (
            "SELECT format('INSERT INTO %I VALUES(%L)', 'My Table', E'O''Re\\\\illy')",
            "INSERT INTO \"My Table\" VALUES(E'O''Re\\\\illy')",
        ),
        ("SELECT format('|%10s|%-10s|', 'foo', 'bar')", "|       foo|bar       |"),
        (
            "SELECT format('%s %s', 'a', NULL) || '|', format('%L', NULL), format(NULL) IS NULL",
            "a ||NULL|true",
        ),
        ("SELECT format('%%x%s', 1)", "%x1"),
        ("SELECT current_user = session_user, user = current_user", "true|true"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), *expected, "{sql}");
    }
    for (sql, state, message) in [
        ("SELECT format('%s %s', 1)", "22023", "too few arguments for format()"),
        ("SELECT format('%I', NULL)", "22004", "null values cannot be formatted as an SQL identifier"),
        ("SELECT regexp_replace('a', 'a', 'b', 'x')", "22023", "invalid regular expression option: \"x\""),
        ("SELECT format('%z', 1)", "22023", "unrecognized format() type specifier \"z\""),
    ] {
        let error = fails(&mut s, sql);
        assert_eq!(error.sqlstate(), state, "{sql}: {error}");
        assert!(error.to_string().contains(message), "{sql}: {error}");
    }
}

#[test]
fn sha2_digests_of_bytea_answer_as_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    check(
        &mut s,
        &[
            ("sha224('abc')", Some("\\x23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7")),
            ("sha256('abc')", Some("\\xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")),
            (
                "sha384(''::bytea)",
                Some(
                    "\\x38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da274edebfe76f65fbd51ad2f14898b95b",
                ),
            ),
            (
                "sha512('\\x00ff'::bytea)",
                Some(
                    "\\xfb9c0429487655082fe197f64eb8f045a706a4a5de8817478ee3ab47e208c27fd87502458026613794e69b0d1b3fc6916456754bd08088422144503682db5986",
                ),
            ),
            ("sha256(NULL)", None),
            ("pg_typeof(sha256('a'))", Some("bytea")),
            ("sha256('abc'::bytea) = sha256('\\x616263')", Some("true")),
        ],
    );
    run(&mut s, "CREATE TABLE blobs (id INT PRIMARY KEY, b BYTEA)");
    run(&mut s, "INSERT INTO blobs VALUES (1, '\\x616263'), (2, NULL)");
    run(&mut s, "COMMIT");
    let rows = run(&mut s, "SELECT encode(sha256(b), 'hex') FROM blobs ORDER BY id").rows().to_vec();
    assert_eq!(
        rows,
        [
            vec![Value::Text("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into())],
            vec![Value::Null]
        ]
    );
    let e = fails(&mut s, "SELECT sha256('abc'::text)");
    assert_eq!((e.sqlstate(), e.to_string().as_str()), ("42883", "function sha256(text) does not exist"));
    check_errors(&mut s, &[("SELECT sha256(1)", "42883"), ("SELECT sha512(id) FROM blobs", "42883")]);
}

#[test]
fn width_bucket_answers_and_fails_as_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    check(
        &mut s,
        &[
            ("width_bucket(5.35, 0.024, 10.06, 5)", Some("3")),
            ("width_bucket(5.35::float8, 0.024, 10.06, 5)", Some("3")),
            ("width_bucket(-1, 0, 10, 5)", Some("0")),
            ("width_bucket(10, 0, 10, 5)", Some("6")),
            ("width_bucket(11, 10, 0, 5)", Some("0")),
            ("width_bucket(0, 10, 0, 5)", Some("6")),
            ("width_bucket(10, 10, 0, 5)", Some("1")),
            ("width_bucket(5, 0, 10, 5)", Some("3")),
            ("width_bucket(5.5, 10, 0, 4)", Some("2")),
            ("width_bucket(5.5::float8, 10, 0, 4)", Some("2")),
            ("width_bucket(10.0, 0, 10, 4)", Some("5")),
            ("width_bucket(0.0, 0, 10, 4)", Some("1")),
            // NUMERIC's division rounds at its result scale first, as PostgreSQL 15's.
            ("width_bucket(9.999999999999999999, 0, 10, 4)", Some("5")),
            ("width_bucket(0.1::float8, 0, 0.3, 3)", Some("2")),
            ("width_bucket(0.1, 0, 0.3, 3)", Some("2")),
            ("width_bucket('inf'::float8, 0, 10, 3)", Some("4")),
            ("width_bucket('-inf'::float8, 0, 10, 3)", Some("0")),
            ("width_bucket(NULL, 0, 10, 3)", None),
            ("width_bucket(5, NULL, 10, 3)", None),
            // The thresholds form: a binary search of the (unchecked) sorted thresholds.
            ("width_bucket(5, ARRAY[1, 3, 5, 7])", Some("3")),
            ("width_bucket(0, ARRAY[1, 3, 5, 7])", Some("0")),
            ("width_bucket(8, ARRAY[1, 3, 5, 7])", Some("4")),
            ("width_bucket(5.5, ARRAY[1, 3, 5, 7])", Some("3")),
            ("width_bucket(2, ARRAY[1, 2, 2, 2, 3])", Some("4")),
            ("width_bucket('c', ARRAY['a', 'b', 'd'])", Some("2")),
            ("width_bucket(5, ARRAY[3, 1])", Some("2")),
            ("width_bucket(DATE '2020-01-01', ARRAY[DATE '2019-01-01', DATE '2021-01-01'])", Some("1")),
        ],
    );
    let cases = [
        ("SELECT width_bucket(5, 0, 10, 0)", "2201G", "count must be greater than zero"),
        ("SELECT width_bucket(5::float8, 0, 10, -1)", "2201G", "count must be greater than zero"),
        ("SELECT width_bucket(5, 0, 0, 3)", "2201G", "lower bound cannot equal upper bound"),
        ("SELECT width_bucket(5.0, 1.0, 1, 3)", "2201G", "lower bound cannot equal upper bound"),
        (
            "SELECT width_bucket('nan'::float8, 0, 10, 3)",
            "2201G",
            "operand, lower bound, and upper bound cannot be NaN",
        ),
        ("SELECT width_bucket(5::float8, '-inf', 10, 3)", "2201G", "lower and upper bounds must be finite"),
        ("SELECT width_bucket(5, ARRAY[1, NULL, 3])", "22004", "thresholds array must not contain NULLs"),
        ("SELECT width_bucket(5, 0, 10, 3.7)", "42883", "does not exist"),
        ("SELECT width_bucket('a'::text, 0, 10, 3)", "42883", "does not exist"),
    ];
    for (sql, state, message) in cases {
        let e = fails(&mut s, sql);
        assert_eq!(e.sqlstate(), state, "{sql}: {e}");
        assert!(e.to_string().contains(message), "{sql}: {e}");
    }
}

#[test]
fn to_char_formats_years_past_9999_as_postgresql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "SET TIME ZONE 'UTC'");
    check(
        &mut s,
        &[
            ("to_char(timestamp '12000-01-01', 'YYYY-MM-DD')", Some("12000-01-01")),
            ("to_char(timestamp '12000-01-01', 'YYY')", Some("000")),
            ("to_char(timestamp '12000-01-01', 'Y,YYY')", Some("12,000")),
            ("to_char(timestamp '12000-01-01', 'CC')", Some("120")),
            ("to_char(timestamp '12000-01-01', 'YY Y')", Some("00 0")),
            (
                "to_char(date '123456-03-04', 'YYYY-MM-DD CC Y,YYY YYY YY Y Day DDD WW IYYY IW D J Q')",
                Some("123456-03-04 1235 123,456 456 56 6 Tuesday   064 10 123456 10 3 46812501 1"),
            ),
            (
                "to_char(timestamp '294276-12-31 23:59:59', 'YYYY-MM-DD HH24:MI:SS Dy Month')",
                Some("294276-12-31 23:59:59 Sun December "),
            ),
            (
                "to_char(timestamptz '12000-06-15 10:00:00+00', 'YYYY-MM-DD HH24 TZ')",
                Some("12000-06-15 10 UTC"),
            ),
            ("to_char(timestamp '10000-01-01', 'FMYYYY CC FMCC')", Some("10000 100 100")),
            ("to_char(timestamp '99999-12-31', 'YYYY')", Some("99999")),
            ("to_char(date '12000-01-01', 'YYYY')", Some("12000")),
            (
                "to_char(timestamp '10000-12-31 12:00', 'YYYY-MM-DD HH12:MI AM DDD IYYY IW')",
                Some("10000-12-31 12:00 PM 366 10000 52"),
            ),
            ("to_char(timestamp '9999-12-31 23:59:59', 'YYYY Y,YYY CC')", Some("9999 9,999 100")),
            ("to_char(timestamp '20000-02-29', 'YYYY-MM-DD IYYY-IW-ID')", Some("20000-02-29 20000-09-2")),
        ],
    );
}
