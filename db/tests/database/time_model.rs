//! The time model adds up, through the embedded API: Oracle's rule, DB time >= DB CPU +
//! the non-idle waits, holds for every kind of call (no commit, read-only, failed, a
//! commit's `log file sync`, a durability wait left to the caller, a row lock wait, a
//! cancelled one, the row and DDL calls, cursors, array inserts, bulk loads, a long scan)
//! in the session's figures around each call, in `v$sys_time_model` against
//! `v$system_event`, and in the workload repository's report, where no share of DB time
//! is above 100%: also for intervals whose snapshots were taken while calls ran.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use db::awr::{load_range, report_text, take_snapshot, Interval};
use db::sql::QueryResult;
use db::{DbError, Session, Value};

fn run(s: &mut Session, sql: &str) -> QueryResult {
    s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn int(s: &mut Session, sql: &str) -> i64 {
    match run(s, sql).rows() {
        [row] => match row.as_slice() {
            [Value::Int(n)] => *n,
            other => panic!("{sql}: expected one integer, got {other:?}"),
        },
        other => panic!("{sql}: expected one row, got {other:?}"),
    }
}

/// The events of background work, which are not in any session's DB time.
const BACKGROUND: &str = "('log file parallel write', 'checkpoint write')";

/// A session's waits and time model as the views show them to `observer`: its non-idle
/// waits (`v$session_event`, read first), then its DB time and DB CPU
/// (`v$sess_time_model`).
#[derive(Clone, Copy, Debug)]
struct Times {
    waits_us: i64,
    db_time_us: i64,
    db_cpu_us: i64,
}

fn times_of(observer: &mut Session, sid: u64) -> Times {
    let waits_us = int(
        observer,
        &format!(
            "SELECT coalesce(sum(time_waited_micro), 0) FROM v$session_event WHERE sid = {sid} \
             AND wait_class <> 'Idle'"
        ),
    );
    let model = |observer: &mut Session, name: &str| {
        int(
            observer,
            &format!("SELECT value FROM v$sess_time_model WHERE sid = {sid} AND stat_name = '{name}'"),
        )
    };
    let db_time_us = model(observer, "DB time");
    let db_cpu_us = model(observer, "DB CPU");
    Times { waits_us, db_time_us, db_cpu_us }
}

/// What happened between two readings of a session, checked against the rule; returns it.
fn adds_up(before: Times, after: Times, what: &str) -> Times {
    let d = Times {
        waits_us: after.waits_us - before.waits_us,
        db_time_us: after.db_time_us - before.db_time_us,
        db_cpu_us: after.db_cpu_us - before.db_cpu_us,
    };
    assert!(d.waits_us >= 0 && d.db_cpu_us >= 0 && d.db_time_us >= 0, "{what}: {d:?}");
    assert!(
        d.db_time_us >= d.db_cpu_us + d.waits_us,
        "{what}: DB time {} us < DB CPU {} us + non-idle waits {} us ({before:?} -> {after:?})",
        d.db_time_us,
        d.db_cpu_us,
        d.waits_us
    );
    d
}

/// The system's figures through the views, the waits first: DB time >= DB CPU + the
/// non-idle foreground waits. Returns (DB time, DB CPU, waits).
fn system_adds_up(observer: &mut Session) -> (i64, i64, i64) {
    let waits = int(
        observer,
        &format!(
            "SELECT coalesce(sum(time_waited_micro), 0) FROM v$system_event WHERE wait_class <> 'Idle' \
             AND event NOT IN {BACKGROUND}"
        ),
    );
    let db_time = int(observer, "SELECT value FROM v$sys_time_model WHERE stat_name = 'DB time'");
    let db_cpu = int(observer, "SELECT value FROM v$sys_time_model WHERE stat_name = 'DB CPU'");
    assert!(
        db_time >= db_cpu + waits,
        "v$sys_time_model: DB time {db_time} us < DB CPU {db_cpu} us + v$system_event's non-idle \
         foreground waits {waits} us"
    );
    (db_time, db_cpu, waits)
}

/// The report between the newest two snapshots: every share of DB time in its Top 5
/// Timed Foreground Events is at most 100%, and so is their sum; the rendered text says
/// the same. Returns the interval.
fn report_adds_up(dir: &std::path::Path, begin: u64, end: u64) -> Interval {
    let range = load_range(dir, Some(begin), Some(end)).expect("snapshots");
    let interval = Interval::over(&range).expect("interval");
    let db_time = interval.db_time_us().expect("DB time is measured");
    let rows = interval.top_events(5);
    let mut total = 0.0;
    for row in &rows {
        let share = row.share_pct.expect("a share of DB time");
        assert!(share <= 100.0, "{} is {share}% of DB time: {rows:?}", row.name);
        total += share;
    }
    // The top 5 are a part of all: the whole rule, on the interval's own figures.
    let cpu = interval.time_model_us("DB CPU").unwrap_or(0);
    assert!(
        db_time >= cpu + interval.foreground_wait_us(),
        "interval {begin}..{end}: DB time {db_time} us < DB CPU {cpu} us + foreground waits {} us: {rows:?}",
        interval.foreground_wait_us()
    );
    assert!(total <= 100.0 + 1e-9, "the top events add up to {total}% of DB time: {rows:?}");
    let text = report_text(&range).expect("report");
    for share in top_event_shares(&text) {
        assert!(share <= 100.0, "the text report shows {share}% of DB time:\n{text}");
    }
    interval
}

/// The "% DB time" column of a text report's Top 5 Timed Foreground Events.
fn top_event_shares(report: &str) -> Vec<f64> {
    let section = report.split("Top 5 Timed Foreground Events").nth(1).expect("the section");
    let mut lines = section.lines().skip_while(|l| !l.starts_with("----"));
    let rule = lines.next().expect("the column rule");
    // The fifth column (Event, Waits, Time(s), Avg wait, % DB time, Wait Class).
    let columns: Vec<(usize, usize)> =
        rule.match_indices('-').fold(Vec::<(usize, usize)>::new(), |mut spans, (i, _)| {
            match spans.last_mut() {
                Some((_, end)) if *end == i => *end = i + 1,
                _ => spans.push((i, i + 1)),
            }
            spans
        });
    let (from, to) = columns[4];
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.get(from..to.min(l.len())).unwrap_or("").trim().parse::<f64>().expect("a share"))
        .collect()
}

fn table(s: &mut Session, rows: i64) {
    run(s, "CREATE TABLE t (k BIGINT PRIMARY KEY, n BIGINT NOT NULL, v TEXT)");
    let insert = s.prepare("INSERT INTO t VALUES ($1, 0, 'abcdefghij')").unwrap();
    for chunk in (0..rows).collect::<Vec<_>>().chunks(2000) {
        let values: Vec<Vec<Value>> = chunk.iter().map(|&k| vec![Value::Int(k)]).collect();
        s.execute_many(&insert, &values).unwrap();
        run(s, "COMMIT");
    }
}

#[test]
fn every_kind_of_call_keeps_db_time_above_db_cpu_and_waits() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut observer = db.session();
    let mut s = db.session();
    let sid = s.sid();
    table(&mut s, 1000);
    run(&mut s, "CREATE TABLE u (k BIGINT PRIMARY KEY)");
    let first = take_snapshot(&db).unwrap().id;

    // Each kind of call, many times where the calls are short (their CPU is sampled, and
    // an estimate scaled from the samples must not overshoot), with the session's figures
    // read around each batch of calls.
    let no_row = s.prepare("UPDATE t SET n = n + 1 WHERE k = $1").unwrap();
    let read = s.prepare("SELECT n, v FROM t WHERE k = $1").unwrap();
    type Kind<'a> = (&'a str, Box<dyn Fn(&mut Session, i64) + 'a>);
    let kinds: Vec<Kind> = vec![
        (
            "a prepared UPDATE matching no row (no commit)",
            Box::new(|s: &mut Session, i| {
                let r = s.execute_prepared(&no_row, &[Value::Int(1_000_000 + i)]).unwrap();
                assert_eq!(r.rows_affected(), 0);
                run(s, "COMMIT");
            }),
        ),
        (
            "a read-only SELECT",
            Box::new(|s: &mut Session, i| {
                s.execute_prepared(&read, &[Value::Int(i % 1000)]).unwrap();
            }),
        ),
        (
            "failed calls (a syntax error, a duplicate key, a division by zero)",
            Box::new(|s: &mut Session, i| {
                assert!(s.execute("SELEC 1", &[]).is_err());
                let dup = s.execute("INSERT INTO t VALUES ($1, 0, 'x')", &[Value::Int(i % 1000)]);
                assert!(matches!(dup, Err(DbError::DuplicateKey { .. })), "{dup:?}");
                assert!(s.execute("SELECT 1 / 0", &[]).is_err());
            }),
        ),
        (
            "WAIT commits (log file sync inside the call)",
            Box::new(|s: &mut Session, i| {
                if i % 10 == 0 {
                    run(s, &format!("UPDATE t SET n = n + 1 WHERE k = {}", i % 1000));
                    run(s, "COMMIT WRITE WAIT");
                }
            }),
        ),
        (
            "a query's cursor fetched in arrays",
            Box::new(|s: &mut Session, i| {
                if i % 10 == 0 {
                    let all = s.prepare("SELECT k FROM t WHERE k < $1").unwrap();
                    let mut cursor = s.query(&all, &[Value::Int(100)]).unwrap();
                    while !cursor.fetch(7).is_empty() {}
                }
            }),
        ),
        (
            "the row and DDL calls, an array insert and a bulk load",
            Box::new(|s: &mut Session, i| {
                if i % 50 == 0 {
                    let key = db::Key::from(vec![Value::Int(i % 1000)]);
                    s.update("t", &key, vec![Value::Int(i % 1000), Value::Int(i), Value::Text("u".into())])
                        .unwrap();
                    s.select_for_update("t", &key).unwrap();
                    s.insert("t", vec![Value::Int(10_000 + i), Value::Int(0), Value::Text("i".into())])
                        .unwrap();
                    s.delete("t", &db::Key::from(vec![Value::Int(10_000 + i)])).unwrap();
                    s.commit(redo::CommitOptions::DEFAULT).unwrap();
                    let insert = s.prepare("INSERT INTO u VALUES ($1)").unwrap();
                    s.execute_many(&insert, &[vec![Value::Int(i)], vec![Value::Int(i + 1)]]).unwrap();
                    let mut load = s.begin_bulk_load("u").unwrap();
                    s.bulk_load(&mut load, vec![vec![Value::Int(i + 2)]]).unwrap();
                    s.finish_bulk_load(load);
                    s.truncate("u").unwrap();
                }
            }),
        ),
    ];
    for (what, call) in &kinds {
        let mut before = times_of(&mut observer, sid);
        for round in 0..20 {
            for i in 0..100 {
                call(&mut s, round * 100 + i);
            }
            let after = times_of(&mut observer, sid);
            adds_up(before, after, what);
            before = after;
        }
    }
    let total =
        adds_up(Times { waits_us: 0, db_time_us: 0, db_cpu_us: 0 }, times_of(&mut observer, sid), "all");
    assert!(total.db_cpu_us > 0 && total.waits_us > 0, "the calls were timed: {total:?}");
    let (db_time, db_cpu, waits) = system_adds_up(&mut observer);
    assert!(db_time > 0 && db_cpu > 0 && waits > 0, "{db_time} {db_cpu} {waits}");

    let last = take_snapshot(&db).unwrap().id;
    let interval = report_adds_up(dir.path(), first, last);
    assert!(interval.event("log file sync").is_some_and(|e| e.waits > 0), "the commits waited");
}

/// Sessions waiting for a row lock, released by its holder, cancelled, and a DDL waiting
/// for a table's rows: each wait lies inside its call, also when the call fails.
#[test]
fn lock_waits_cancelled_or_not_are_inside_their_calls_db_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(common::open(dir.path()));
    let mut observer = db.session();
    let mut holder = db.session();
    let mut s = db.session();
    table(&mut s, 10);
    let sid = s.sid();
    let lock_wait_us = |observer: &mut Session| {
        int(
            observer,
            &format!(
                "SELECT time_waited_micro FROM v$session_event WHERE sid = {sid} \
                 AND event = 'enq: TX - row lock contention'"
            ),
        )
    };

    // Waiting until the holder commits: an UPDATE, then the row call `update`, then a DDL.
    type Call = Box<dyn Fn(&mut Session) -> Result<(), DbError> + Send>;
    let calls: [(&str, Call); 3] = [
        ("UPDATE", Box::new(|s: &mut Session| s.execute("UPDATE t SET n = 1 WHERE k = 1", &[]).map(|_| ()))),
        (
            "Session::update",
            Box::new(|s: &mut Session| {
                let key = db::Key::from(vec![Value::Int(1)]);
                s.update("t", &key, vec![Value::Int(1), Value::Int(2), Value::Text("x".into())]).map(|_| ())
            }),
        ),
        ("TRUNCATE", Box::new(|s: &mut Session| s.execute("TRUNCATE TABLE t", &[]).map(|_| ()))),
    ];
    for (what, call) in calls {
        run(&mut holder, "UPDATE t SET n = 9 WHERE k = 1");
        let before = times_of(&mut observer, sid);
        let waiting = std::thread::spawn(move || {
            let result = call(&mut s);
            (s, result)
        });
        std::thread::sleep(Duration::from_millis(150));
        run(&mut holder, "COMMIT");
        let (back, result) = waiting.join().unwrap();
        s = back;
        result.unwrap_or_else(|e| panic!("{what}: {e}"));
        run(&mut s, "COMMIT");
        let after = times_of(&mut observer, sid);
        let d = adds_up(before, after, what);
        assert!(d.waits_us >= 100_000, "{what} waited for the lock: {d:?}");
    }

    // A wait that is cancelled: the statement fails, and its wait is still counted, in
    // its call's DB time.
    run(&mut s, "INSERT INTO t VALUES (1, 0, 'again')");
    run(&mut s, "COMMIT");
    run(&mut holder, "UPDATE t SET n = 9 WHERE k = 1");
    let before = times_of(&mut observer, sid);
    let waited_before = lock_wait_us(&mut observer);
    let cancel = s.cancel_handle();
    let waiting = std::thread::spawn(move || {
        let result = s.execute("UPDATE t SET n = 1 WHERE k = 1", &[]);
        (s, result)
    });
    std::thread::sleep(Duration::from_millis(150));
    cancel.cancel();
    let (mut s, result) = waiting.join().unwrap();
    assert!(matches!(result, Err(DbError::Canceled)), "{result:?}");
    let after = times_of(&mut observer, sid);
    let d = adds_up(before, after, "a cancelled lock wait");
    assert!(lock_wait_us(&mut observer) - waited_before >= 100_000, "the cancelled wait is counted: {d:?}");
    run(&mut holder, "ROLLBACK");
    assert_eq!(int(&mut s, "SELECT n FROM t WHERE k = 1"), 0, "the session goes on; the update was undone");
    system_adds_up(&mut observer);
    drop(db);
}

/// A WAIT commit whose `log file sync` the caller ends later (deferred durability, what
/// the wire server does): the wait keeps the commit's call open, so the session is ACTIVE
/// and its DB time runs on until the wait ends, however late the caller gets to it.
#[test]
fn a_durability_wait_left_to_the_caller_stays_inside_the_commits_call() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut observer = db.session();
    let mut s = db.session();
    table(&mut s, 10);
    let sid = s.sid();
    s.set_deferred_durability(true);
    let before = times_of(&mut observer, sid);
    run(&mut s, "UPDATE t SET n = 5 WHERE k = 3");
    run(&mut s, "COMMIT");
    let wait = s.take_durability_wait().expect("a WAIT commit leaves its wait");
    let active = int(
        &mut observer,
        &format!("SELECT count(*) FROM v$session WHERE sid = {sid} AND status = 'ACTIVE'"),
    );
    assert_eq!(active, 1, "the commit's call is open until its durability wait ends");
    std::thread::sleep(Duration::from_millis(50));
    wait.wait().unwrap();
    let after = times_of(&mut observer, sid);
    let d = adds_up(before, after, "a deferred durability wait");
    assert!(d.db_time_us >= 50_000, "DB time runs on until the wait ends: {d:?}");
    let idle = int(
        &mut observer,
        &format!("SELECT count(*) FROM v$session WHERE sid = {sid} AND status = 'INACTIVE'"),
    );
    assert_eq!(idle, 1);

    // A wait dropped unfinished ends the call too.
    run(&mut s, "UPDATE t SET n = 6 WHERE k = 3");
    run(&mut s, "COMMIT");
    drop(s.take_durability_wait().expect("a WAIT commit leaves its wait"));
    let idle = int(
        &mut observer,
        &format!("SELECT count(*) FROM v$session WHERE sid = {sid} AND status = 'INACTIVE'"),
    );
    assert_eq!(idle, 1, "a dropped wait ends its call");
    system_adds_up(&mut observer);
}

/// Snapshots taken while calls run (a long scan on CPU, a session waiting for a row lock):
/// each interval gets the part of their DB time, CPU and wait that fell in it, so no
/// interval shows more than 100% of its DB time.
#[test]
fn snapshots_taken_while_calls_run_split_them_and_every_interval_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(common::open(dir.path()));
    let mut observer = db.session();
    let mut holder = db.session();
    let mut scanner = db.session();
    table(&mut scanner, 20_000);
    let mut waiter = db.session();
    run(&mut holder, "UPDATE t SET n = 9 WHERE k = 7");

    let mut ids = vec![take_snapshot(&db).unwrap().id];
    let waiting = std::thread::spawn(move || {
        run(&mut waiter, "UPDATE t SET n = 1 WHERE k = 7");
        run(&mut waiter, "COMMIT");
        waiter
    });
    let scanning = std::thread::spawn(move || {
        let started = Instant::now();
        let mut scans = 0;
        // Long calls on CPU: each scan runs many milliseconds.
        while started.elapsed() < Duration::from_millis(900) {
            let n = int(&mut scanner, "SELECT count(*) FROM t WHERE length(repeat(v, 200)) > 0");
            assert_eq!(n, 20_000);
            scans += 1;
        }
        (scanner, scans)
    });
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(110));
        ids.push(take_snapshot(&db).unwrap().id);
    }
    run(&mut holder, "COMMIT");
    let waiter = waiting.join().unwrap();
    let (scanner, scans) = scanning.join().unwrap();
    assert!(scans > 0);
    ids.push(take_snapshot(&db).unwrap().id);
    for pair in ids.windows(2) {
        report_adds_up(dir.path(), pair[0], pair[1]);
    }
    // The whole range: the lock wait is all there, once.
    let whole = report_adds_up(dir.path(), ids[0], *ids.last().unwrap());
    let lock = whole.event("enq: TX - row lock contention").expect("the lock wait");
    assert!(lock.waits == 1 && lock.time_us >= 600_000, "{lock:?}");
    drop((waiter, scanner));
    system_adds_up(&mut observer);
}
