//! Dates, times and intervals, and ALTER TABLE, through `Session::execute` (issue 20):
//! each as a user writes it, with PostgreSQL's results and errors, and what it stores
//! surviving a checkpoint image and the redo after it.

use crate::common::{cells, fails, one, open, run};

/// The rows of a query, each value as PostgreSQL's text would print it.
#[test]
fn date_time_values_compare_compute_and_print_as_postgres_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let cases = [
        ("SELECT DATE '2024-02-28' + 1", "2024-02-29"),
        ("SELECT DATE '2024-03-01' - 1", "2024-02-29"),
        ("SELECT DATE '2024-03-01' - DATE '2023-03-01'", "366"),
        ("SELECT TIMESTAMP '2024-01-31 10:00' + INTERVAL '1 month'", "2024-02-29 10:00:00"),
        ("SELECT TIMESTAMP '2024-01-01 00:00' - INTERVAL '1 second'", "2023-12-31 23:59:59"),
        ("SELECT TIMESTAMP '2024-01-03 06:00' - TIMESTAMP '2024-01-01'", "2 days 06:00:00"),
        ("SELECT DATE '2024-01-01' + TIME '12:30'", "2024-01-01 12:30:00"),
        ("SELECT DATE '2024-01-01' + INTERVAL '36 hours'", "2024-01-02 12:00:00"),
        ("SELECT TIME '23:00' + INTERVAL '2 hours'", "01:00:00"),
        ("SELECT INTERVAL '1 day' * 2.5", "2 days 12:00:00"),
        ("SELECT INTERVAL '1 hour' + INTERVAL '30 minutes'", "01:30:00"),
        ("SELECT - INTERVAL '1 day'", "-1 days"),
        ("SELECT INTERVAL '3' HOUR", "03:00:00"),
        ("SELECT '2024-06-15 07:30:00.250'::timestamp", "2024-06-15 07:30:00.25"),
        ("SELECT CAST('2024-06-15' AS DATE)", "2024-06-15"),
        ("SELECT TIMESTAMP '2024-06-15 07:30'::date", "2024-06-15"),
        ("SELECT TIMESTAMP '2024-06-15 07:30'::time", "07:30:00"),
        ("SELECT TIMESTAMPTZ '2024-06-15 07:30+02'", "2024-06-15 05:30:00+00"),
        ("SELECT extract(year FROM DATE '2024-06-15')", "2024"),
        ("SELECT extract(dow FROM DATE '2024-06-15')", "6"),
        ("SELECT extract(epoch FROM TIMESTAMPTZ '1970-01-02 00:00+00')", "86400"),
        ("SELECT extract(hour FROM INTERVAL '1 day 05:00')", "5"),
        ("SELECT date_part('month', TIMESTAMP '2024-06-15 07:30')", "6"),
        ("SELECT date_trunc('hour', TIMESTAMP '2024-06-15 07:31:09')", "2024-06-15 07:00:00"),
        ("SELECT date_trunc('year', DATE '2024-06-15')", "2024-01-01 00:00:00+00"),
        ("SELECT TIMESTAMPTZ '2024-06-15 12:00+00' AT TIME ZONE 'Asia/Tokyo'", "2024-06-15 21:00:00"),
        ("SELECT TIMESTAMP '2024-06-15 12:00' AT TIME ZONE 'America/New_York'", "2024-06-15 16:00:00+00"),
        ("SELECT make_date(2024, 2, 29)", "2024-02-29"),
        ("SELECT age(TIMESTAMP '2024-06-15', TIMESTAMP '2000-01-01')", "24 years 5 mons 14 days"),
        ("SELECT DATE '2024-01-01' < TIMESTAMP '2024-01-01 00:00:01'", "true"),
        ("SELECT DATE '2024-01-01' = TIMESTAMP '2024-01-01'", "true"),
        ("SELECT TIMESTAMP '2024-01-01 10:00' > '2024-01-01'", "true"),
        ("SELECT INTERVAL '1 mon' = INTERVAL '30 days'", "true"),
        ("SELECT 'infinity'::timestamp > TIMESTAMP '9999-01-01'", "true"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    let errors = [
        ("SELECT DATE '2024-02-30'", "22007"),
        ("SELECT '2024-13-01'::timestamp", "22007"),
        ("SELECT INTERVAL '1 fortnight'", "22007"),
        ("SELECT DATE '2024-01-01' + TRUE", "42804"),
        ("SELECT date_part('fortnight', DATE '2024-01-01')", "22023"),
        ("SELECT extract(hour FROM DATE '2024-01-01')", "22023"),
        ("SELECT CAST(DATE '2024-01-01' AS INTERVAL)", "42846"),
        ("SELECT TIMESTAMP '2024-01-01' AT TIME ZONE 'Mars/Olympus'", "22023"),
        ("SELECT make_date(2023, 2, 29)", "22008"),
    ];
    for (sql, sqlstate) in errors {
        assert_eq!(fails(&mut s, sql).sqlstate(), sqlstate, "{sql}");
    }
}

#[test]
fn now_is_the_transactions_time_and_the_session_zone_shows_instants() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE ev (id INTEGER PRIMARY KEY, at TIMESTAMPTZ DEFAULT now(), local TIMESTAMP)");
    run(&mut s, "INSERT INTO ev (id, local) VALUES (1, LOCALTIMESTAMP)");
    std::thread::sleep(std::time::Duration::from_millis(5));
    run(&mut s, "INSERT INTO ev (id, local) VALUES (2, LOCALTIMESTAMP)");
    // One transaction, one time: both rows have it, and so does a later now() in it.
    assert_eq!(one(&mut s, "SELECT count(DISTINCT at) FROM ev"), "1");
    assert_eq!(one(&mut s, "SELECT count(*) FROM ev WHERE at = now() AND local = LOCALTIMESTAMP"), "2");
    run(&mut s, "COMMIT");
    // The next transaction has a later time; clock_timestamp() moves within one.
    assert_eq!(one(&mut s, "SELECT now() > (SELECT max(at) FROM ev)"), "true");
    assert_eq!(one(&mut s, "SELECT clock_timestamp() >= now()"), "true");
    assert_eq!(one(&mut s, "SELECT CURRENT_DATE = now()::date"), "true");

    // An instant is shown in the session's zone; a civil time is not moved.
    run(&mut s, "INSERT INTO ev (id, at, local) VALUES (3, '2024-01-15 12:00:00+00', '2024-01-15 12:00:00')");
    run(&mut s, "COMMIT");
    run(&mut s, "SET TIME ZONE 'America/New_York'");
    assert_eq!(
        cells(&mut s, "SELECT at, local FROM ev WHERE id = 3"),
        [["2024-01-15 07:00:00-05", "2024-01-15 12:00:00"]]
    );
    // Text without an offset is read in the session's zone.
    assert_eq!(one(&mut s, "SELECT id FROM ev WHERE at = '2024-01-15 07:00'"), "3");
    assert_eq!(one(&mut s, "SELECT TIMESTAMP '2024-07-01 12:00'::timestamptz"), "2024-07-01 12:00:00-04");
    assert_eq!(fails(&mut s, "SET TIME ZONE 'Nowhere/Special'").sqlstate(), "22023");
    run(&mut s, "SET TIME ZONE 'UTC'");
    assert_eq!(one(&mut s, "SELECT at FROM ev WHERE id = 3"), "2024-01-15 12:00:00+00");
}

#[test]
fn date_time_columns_are_checked_indexed_and_recovered() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(
            &mut s,
            "CREATE TABLE trip (id INTEGER PRIMARY KEY, day DATE NOT NULL, starts TIME, at TIMESTAMP, \
             booked TIMESTAMP WITH TIME ZONE, length INTERVAL)",
        );
        run(&mut s, "CREATE INDEX trip_day ON trip (day)");
        run(
            &mut s,
            "INSERT INTO trip VALUES (1, '2024-06-15', '07:30', '2024-06-15 07:30', '2024-06-01 10:00+02', '2 hours'), \
             (2, '2024-06-16', '08:00', '2024-06-16 08:00:00.5', '2024-06-02 10:00Z', '1 day 3 hours')",
        );
        run(&mut s, "COMMIT");
        db.checkpoint().unwrap();
        run(&mut s, "INSERT INTO trip VALUES (3, DATE '2024-06-17', NULL, NULL, NULL, INTERVAL '-1 mon')");
        run(&mut s, "UPDATE trip SET length = length * 2 WHERE id = 1");
        run(&mut s, "COMMIT");
        assert_eq!(
            fails(&mut s, "INSERT INTO trip VALUES (4, 'not a date', NULL, NULL, NULL, NULL)").sqlstate(),
            "22007"
        );
        assert_eq!(fails(&mut s, "INSERT INTO trip (id, day) VALUES (5, 42)").sqlstate(), "42846");
    }
    let db = open(dir.path());
    // The rows of the image and of the redo after it are all in the index.
    db.snapshot().verify_indexes().unwrap();
    let mut s = db.session();
    assert_eq!(
        cells(&mut s, "SELECT id, day, starts, at, booked, length FROM trip ORDER BY id"),
        [
            ["1", "2024-06-15", "07:30:00", "2024-06-15 07:30:00", "2024-06-01 08:00:00+00", "04:00:00"],
            [
                "2",
                "2024-06-16",
                "08:00:00",
                "2024-06-16 08:00:00.5",
                "2024-06-02 10:00:00+00",
                "1 day 03:00:00"
            ],
            ["3", "2024-06-17", "NULL", "NULL", "NULL", "-1 mons"],
        ]
    );
    // The index on the date answers ranges and equality, as the plan says it does.
    assert_eq!(cells(&mut s, "SELECT id FROM trip WHERE day >= '2024-06-16' ORDER BY id"), [["2"], ["3"]]);
    let plan = cells(&mut s, "EXPLAIN SELECT id FROM trip WHERE day = DATE '2024-06-16'");
    assert!(plan.iter().flatten().any(|line| line.contains("trip_day")), "{plan:?}");
    assert_eq!(one(&mut s, "SELECT id FROM trip WHERE day = DATE '2024-06-16'"), "2");
}

#[test]
fn alter_table_reshapes_a_table_and_the_shape_survives_recovery() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        // pgbench's way: a table without a key, filled, then given its primary key.
        run(
            &mut s,
            "CREATE TABLE acct (aid INTEGER NOT NULL, bal INTEGER, filler CHAR(20)) WITH (fillfactor = 100)",
        );
        run(&mut s, "INSERT INTO acct (aid, bal) VALUES (1, 10), (2, 20), (3, 30)");
        run(&mut s, "COMMIT");
        run(&mut s, "VACUUM ANALYZE acct");
        run(&mut s, "ALTER TABLE acct ADD PRIMARY KEY (aid)");
        assert_eq!(fails(&mut s, "INSERT INTO acct (aid) VALUES (2)").sqlstate(), "23505");
        s.execute("ROLLBACK", &[]).unwrap();
        assert_eq!(fails(&mut s, "ALTER TABLE acct ADD PRIMARY KEY (bal)").sqlstate(), "42P16");
        let plan = cells(&mut s, "EXPLAIN SELECT bal FROM acct WHERE aid = 2");
        assert!(
            plan.iter().flatten().any(|line| line.contains("acct_pkey") || line.contains("Key")),
            "{plan:?}"
        );
        db.checkpoint().unwrap();
        // Columns added (with a default for the rows there), renamed, retyped, dropped.
        run(&mut s, "ALTER TABLE acct ADD COLUMN opened DATE DEFAULT '2024-01-01' NOT NULL");
        run(&mut s, "ALTER TABLE acct ADD COLUMN note TEXT, ADD COLUMN code TEXT UNIQUE");
        run(&mut s, "ALTER TABLE acct RENAME COLUMN bal TO balance");
        run(&mut s, "ALTER TABLE acct ALTER COLUMN balance TYPE DOUBLE PRECISION");
        run(&mut s, "ALTER TABLE acct DROP COLUMN filler");
        run(&mut s, "ALTER TABLE acct ALTER COLUMN note SET DEFAULT 'new'");
        run(&mut s, "INSERT INTO acct (aid, balance, code) VALUES (4, 40.5, 'x')");
        run(&mut s, "COMMIT");
        assert_eq!(fails(&mut s, "INSERT INTO acct (aid, code) VALUES (5, 'x')").sqlstate(), "23505");
        s.execute("ROLLBACK", &[]).unwrap();
        assert_eq!(fails(&mut s, "ALTER TABLE acct ALTER COLUMN note SET NOT NULL").sqlstate(), "23502");
        assert_eq!(fails(&mut s, "ALTER TABLE acct ADD COLUMN aid INTEGER").sqlstate(), "42701");
        assert_eq!(fails(&mut s, "ALTER TABLE acct DROP COLUMN nothing").sqlstate(), "42703");
        assert_eq!(fails(&mut s, "ALTER TABLE acct ALTER COLUMN code TYPE INTEGER").sqlstate(), "22P02");
        assert_eq!(
            fails(
                &mut s,
                "ALTER TABLE acct ADD CONSTRAINT c FOREIGN KEY (aid) REFERENCES acct (aid) MATCH FULL"
            )
            .sqlstate(),
            "0A000"
        );
        assert_eq!(fails(&mut s, "CREATE TABLE bad (a INTEGER) WITH (fillfactor = 5)").sqlstate(), "22023");
        assert_eq!(fails(&mut s, "CREATE TABLE bad (a INTEGER) WITH (colour = 'red')").sqlstate(), "22023");
        assert_eq!(fails(&mut s, "VACUUM nothing_here").sqlstate(), "42P01");
        run(&mut s, "ALTER TABLE acct RENAME TO account");
        run(&mut s, "ALTER TABLE IF EXISTS acct RENAME TO other");
    }
    let db = open(dir.path());
    db.snapshot().verify_indexes().unwrap();
    let mut s = db.session();
    assert_eq!(
        cells(&mut s, "SELECT aid, balance, opened, note, code FROM account ORDER BY aid"),
        [
            ["1", "10", "2024-01-01", "NULL", "NULL"],
            ["2", "20", "2024-01-01", "NULL", "NULL"],
            ["3", "30", "2024-01-01", "NULL", "NULL"],
            ["4", "40.5", "2024-01-01", "new", "x"],
        ]
    );
    assert_eq!(fails(&mut s, "SELECT * FROM acct").sqlstate(), "42P01");
    assert_eq!(fails(&mut s, "INSERT INTO account (aid, code) VALUES (9, 'x')").sqlstate(), "23505");
    s.execute("ROLLBACK", &[]).unwrap();
    // An index keeps its name when its table is renamed, as in PostgreSQL.
    run(&mut s, "ALTER TABLE account DROP CONSTRAINT acct_code_key");
    run(&mut s, "INSERT INTO account (aid, code) VALUES (9, 'x')");
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT count(*) FROM account WHERE code = 'x'"), "2");
}

#[test]
fn check_constraints_keep_rows_true_or_unknown_through_every_change() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = db.session();
        run(
            &mut s,
            "CREATE TABLE price (id INTEGER PRIMARY KEY, amount INTEGER CHECK (amount >= 0), \
             low INTEGER, high INTEGER, CONSTRAINT ordered CHECK (low <= high))",
        );
        run(&mut s, "INSERT INTO price VALUES (1, 10, 1, 2), (2, NULL, NULL, 5)");
        run(&mut s, "COMMIT");
        let e = fails(&mut s, "INSERT INTO price VALUES (3, -1, 1, 2)");
        assert_eq!((e.sqlstate(), e.to_string().contains("price_amount_check")), ("23514", true), "{e}");
        s.execute("ROLLBACK", &[]).unwrap();
        let e = fails(&mut s, "UPDATE price SET high = 0 WHERE id = 1");
        assert_eq!((e.sqlstate(), e.to_string().contains("\"ordered\"")), ("23514", true), "{e}");
        s.execute("ROLLBACK", &[]).unwrap();
        assert_eq!(
            fails(&mut s, "INSERT INTO price VALUES (4, 1, 9, 1) ON CONFLICT DO NOTHING").sqlstate(),
            "23514"
        );
        s.execute("ROLLBACK", &[]).unwrap();
        // Added to a table with rows: checked against them first.
        assert_eq!(
            fails(&mut s, "ALTER TABLE price ADD CONSTRAINT small CHECK (amount < 5)").sqlstate(),
            "23514"
        );
        run(&mut s, "ALTER TABLE price ADD CONSTRAINT small CHECK (amount < 100)");
        assert_eq!(fails(&mut s, "INSERT INTO price VALUES (5, 100, 1, 1)").sqlstate(), "23514");
        s.execute("ROLLBACK", &[]).unwrap();
        assert_eq!(fails(&mut s, "CREATE TABLE bad (a INTEGER CHECK (count(*) > 0))").sqlstate(), "42803");
    }
    // The constraints are part of the schema the log and images keep.
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(fails(&mut s, "INSERT INTO price VALUES (6, 200, 1, 1)").sqlstate(), "23514");
    s.execute("ROLLBACK", &[]).unwrap();
    run(&mut s, "ALTER TABLE price DROP CONSTRAINT small");
    run(&mut s, "INSERT INTO price VALUES (6, 200, 1, 1)");
    run(&mut s, "COMMIT");
    assert_eq!(one(&mut s, "SELECT count(*) FROM price"), "3");
}

#[test]
fn dates_and_timestamps_go_past_the_year_9999_to_postgresqls_limits() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    run(&mut s, "SET TIME ZONE 'UTC'");
    // PostgreSQL 15's answers: arithmetic across 9999, input and output of five-digit
    // and longer years, up to 294276-12-31 (timestamps) and 5874897-12-31 (dates).
    let cases = [
        ("SELECT TIMESTAMP '9999-12-31' + INTERVAL '2 days'", "10000-01-02 00:00:00"),
        ("SELECT DATE '9999-12-31' + 400", "10001-02-03"),
        ("SELECT TIMESTAMPTZ '9999-12-31 00:00+00' + INTERVAL '1 year'", "10000-12-31 00:00:00+00"),
        ("SELECT TIMESTAMP '10000-01-05 10:00'", "10000-01-05 10:00:00"),
        ("SELECT DATE '12000-01-01'", "12000-01-01"),
        ("SELECT '294276-12-31 23:59:59.999999'::timestamp", "294276-12-31 23:59:59.999999"),
        ("SELECT DATE '5874897-12-31' - 1", "5874897-12-30"),
        ("SELECT TIMESTAMP '10000-02-29' - INTERVAL '1 month'", "10000-01-29 00:00:00"),
        ("SELECT TIMESTAMP '12000-01-31 05:00' + INTERVAL '1 mon 1 day 1 hour'", "12000-03-01 06:00:00"),
        (
            "SELECT '294276-12-31 23:59:59.999999'::timestamptz + INTERVAL '-1 month'",
            "294276-11-30 23:59:59.999999+00",
        ),
        ("SELECT DATE '20000-01-01' - DATE '2000-01-01'", "6574365"),
        ("SELECT TIMESTAMP '20000-01-01' - TIMESTAMP '2000-01-01'", "6574365 days"),
        ("SELECT DATE '20000-01-01' + INTERVAL '1 day'", "20000-01-02 00:00:00"),
        ("SELECT DATE '4714-11-24 BC'", "4714-11-24 BC"),
        ("SELECT TIMESTAMP '10000-01-01' > TIMESTAMP '9999-12-31 23:59:59'", "true"),
    ];
    for (sql, expected) in cases {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    // A zone's last rule goes on past 9999, daylight saving time included.
    run(&mut s, "SET TIME ZONE 'America/New_York'");
    let zoned = [
        ("SELECT TIMESTAMPTZ '20000-07-01 12:00'", "20000-07-01 12:00:00-04"),
        ("SELECT TIMESTAMPTZ '20000-07-01 12:00+02'", "20000-07-01 06:00:00-04"),
        ("SELECT TIMESTAMPTZ '9999-12-31 12:00' + INTERVAL '6 months'", "10000-06-30 12:00:00-04"),
        ("SELECT TIMESTAMP '20000-07-01 12:00'::timestamptz", "20000-07-01 12:00:00-04"),
        ("SELECT TIMESTAMPTZ '20000-07-01 12:00'::timestamp", "20000-07-01 12:00:00"),
        ("SELECT TIMESTAMPTZ '9999-12-31 23:59:59.999999-08'", "10000-01-01 02:59:59.999999-05"),
        // 02:30 is skipped that March morning: read at the offset before the change.
        ("SELECT TIMESTAMPTZ '20000-03-12 02:30'", "20000-03-12 03:30:00-04"),
        ("SELECT TIMESTAMPTZ '294276-12-31 23:59:59.999999+00'", "294276-12-31 18:59:59.999999-05"),
    ];
    for (sql, expected) in zoned {
        assert_eq!(one(&mut s, sql), expected, "{sql}");
    }
    // extract and date_trunc of them: the fields that count years as they are, the rest
    // as they repeat every 400 years (the time zone's last rule included).
    assert_eq!(
        cells(
            &mut s,
            "SELECT extract(year from timestamptz '20000-07-01 12:00'), extract(timezone from timestamptz              '20000-07-01 12:00'), date_trunc('day', timestamptz '20000-07-01 12:00'),              date_trunc('month', date '30000-05-05')"
        ),
        [["20000", "-14400", "20000-07-01 00:00:00-04", "30000-05-01 00:00:00-04"]]
    );
    run(&mut s, "SET TIME ZONE 'UTC'");
    let far = "timestamp '123456-07-15 13:45:12.5'";
    assert_eq!(
        cells(
            &mut s,
            &format!(
                "SELECT extract(year from {far}), extract(decade from {far}), extract(century from {far}),                  extract(millennium from {far}), extract(isoyear from {far}), extract(week from {far}),                  extract(dow from {far}), extract(doy from {far}), extract(epoch from {far}),                  extract(quarter from {far}), extract(second from {far})"
            )
        ),
        [["123456", "12345", "1235", "124", "123456", "29", "2", "197", "3833744823912.5", "3", "12.5"]]
    );
    assert_eq!(
        cells(
            &mut s,
            &format!(
                "SELECT date_trunc('millennium', {far}), date_trunc('century', {far}), date_trunc('decade', {far}),                  date_trunc('week', {far}), date_trunc('month', {far}), date_trunc('hour', {far})"
            )
        ),
        [[
            "123001-01-01 00:00:00",
            "123401-01-01 00:00:00",
            "123450-01-01 00:00:00",
            "123456-07-14 00:00:00",
            "123456-07-01 00:00:00",
            "123456-07-15 13:00:00"
        ]]
    );
    let last = "date '5874897-12-31'";
    assert_eq!(
        cells(
            &mut s,
            &format!(
                "SELECT extract(year from {last}), extract(millennium from {last}), extract(julian from {last}),                  extract(epoch from {last}), extract(dow from {last}), extract(week from {last}),                  extract(doy from {last})"
            )
        ),
        [["5874897", "5875", "2147483493", "185331706992000", "2", "1", "365"]]
    );
    // Past the limits: 22008, as PostgreSQL's "timestamp out of range", "date out of
    // range" and "date out of range for timestamp".
    for sql in [
        "SELECT TIMESTAMP '294277-01-01'",
        "SELECT TIMESTAMP '294276-12-31 23:59:59.999999' + INTERVAL '1 microsecond'",
        "SELECT DATE '5874898-01-01'",
        "SELECT DATE '5874897-12-31' + 1",
        "SELECT DATE '4714-11-23 BC'",
        "SELECT TIMESTAMP '4714-11-23 23:00 BC'",
        "SELECT DATE '10000-01-01 BC'",
        "SELECT DATE '300000-01-01' + INTERVAL '1 day'",
        "SELECT DATE '300000-01-01'::timestamp",
    ] {
        assert_eq!(fails(&mut s, sql).sqlstate(), "22008", "{sql}");
    }
    // Stored, read back and recovered.
    run(&mut s, "CREATE TABLE far (k INT PRIMARY KEY, d DATE, ts TIMESTAMP)");
    run(&mut s, "INSERT INTO far VALUES (1, DATE '5874897-12-31', TIMESTAMP '294276-12-31 23:59:59.999999')");
    run(&mut s, "INSERT INTO far SELECT 2, d - 5000000, ts - INTERVAL '100000 years' FROM far WHERE k = 1");
    run(&mut s, "COMMIT");
    let expected = [
        ["1", "5874897-12-31", "294276-12-31 23:59:59.999999"],
        ["2", "5861208-06-19", "194276-12-31 23:59:59.999999"],
    ];
    assert_eq!(cells(&mut s, "SELECT k, d, ts FROM far ORDER BY k"), expected);
    drop(s);
    drop(db);
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(cells(&mut s, "SELECT k, d, ts FROM far ORDER BY k"), expected);
}
