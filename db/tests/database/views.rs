//! The dynamic performance views (`v$...`), read with SQL the way a DBA reads Oracle's:
//! their figures agree with the work done and with each other, they follow parameter
//! changes and log switches, and they cannot be changed.

use crate::common;

use db::sql::QueryResult;
use db::{Session, Value};

fn run(s: &mut Session, sql: &str) -> QueryResult {
    s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    run(s, sql).rows().to_vec()
}

fn int(s: &mut Session, sql: &str) -> i64 {
    match rows(s, sql).as_slice() {
        [row] => match row.as_slice() {
            [Value::Int(n)] => *n,
            other => panic!("{sql}: expected one integer, got {other:?}"),
        },
        other => panic!("{sql}: expected one row, got {other:?}"),
    }
}

fn text(s: &mut Session, sql: &str) -> String {
    match rows(s, sql).as_slice() {
        [row] => match row.as_slice() {
            [Value::Text(t)] => t.clone(),
            other => panic!("{sql}: expected one text, got {other:?}"),
        },
        other => panic!("{sql}: expected one row, got {other:?}"),
    }
}

fn commit_rows(s: &mut Session, from: i64, n: i64, mode: &str) {
    for i in from..from + n {
        run(s, &format!("INSERT INTO t VALUES ({i}, 'x')"));
        run(s, &format!("COMMIT WRITE {mode}"));
    }
}

#[test]
fn statistics_and_wait_events_count_the_work_done() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    let commits_before = int(&mut s, "SELECT value FROM v$sysstat WHERE name = 'user commits'");
    let syncs_before = int(&mut s, "SELECT total_waits FROM v$system_event WHERE event = 'log file sync'");
    commit_rows(&mut s, 0, 20, "WAIT");
    commit_rows(&mut s, 100, 30, "NOWAIT");

    let commits = int(&mut s, "SELECT value FROM v$sysstat WHERE name = 'user commits'");
    assert_eq!(commits - commits_before, 50);
    let syncs = int(&mut s, "SELECT total_waits FROM v$system_event WHERE event = 'log file sync'");
    assert_eq!(syncs - syncs_before, 20, "one log file sync per WAIT commit, none for NOWAIT");
    assert_eq!(text(&mut s, "SELECT wait_class FROM v$system_event WHERE event = 'log file sync'"), "Commit");
    assert_eq!(
        text(&mut s, "SELECT wait_class FROM v$system_event WHERE event = 'log file parallel write'"),
        "System I/O"
    );
    let nowait = int(&mut s, "SELECT value FROM v$mystat WHERE name = 'commit nowait requested'");
    assert_eq!(nowait, 30, "v$mystat counts this session's own commits");

    // The histogram's buckets add up to the event's waits.
    let in_buckets =
        int(&mut s, "SELECT sum(wait_count) FROM v$event_histogram_micro WHERE event = 'log file sync'");
    assert_eq!(in_buckets, syncs);
    let bucket_limits = rows(
        &mut s,
        "SELECT wait_time_micro FROM v$event_histogram_micro WHERE event = 'log file sync' ORDER BY wait_time_micro",
    );
    assert!(!bucket_limits.is_empty());
    for limit in bucket_limits {
        let Value::Int(us) = limit[0] else { panic!("{limit:?}") };
        assert!(us > 0 && (us as u64).is_power_of_two(), "buckets are powers of two: {us}");
    }

    // Another session's own view starts from zero; the system view is shared.
    let mut other = db.session();
    assert_eq!(int(&mut other, "SELECT value FROM v$mystat WHERE name = 'user commits'"), 0);
    let other_sid = other.sid();
    let other_syncs = format!(
        "SELECT total_waits FROM v$session_event WHERE event = 'log file sync' AND sid = {other_sid}"
    );
    assert_eq!(int(&mut other, &other_syncs), 0);
    let mine = s.sid();
    let my_syncs =
        format!("SELECT total_waits FROM v$session_event WHERE event = 'log file sync' AND sid = {mine}");
    // Only `s` committed: its own waits are the system's.
    assert_eq!(int(&mut other, &my_syncs), syncs, "v$session_event shows every session's waits by SID");
    let my_commits = format!("SELECT value FROM v$sesstat WHERE name = 'user commits' AND sid = {mine}");
    assert_eq!(int(&mut other, &my_commits), commits);
    assert_eq!(int(&mut other, "SELECT value FROM v$sysstat WHERE name = 'user commits'"), commits);

    // The SQL layer's statistics are there too.
    assert!(int(&mut s, "SELECT value FROM v$sysstat WHERE name = 'execute count'") >= 100);
    assert!(int(&mut s, "SELECT value FROM v$sysstat WHERE name = 'parse count (hard)'") >= 50);
    // And every statistic has a name, numbered without gaps.
    let n = int(&mut s, "SELECT count(*) FROM v$statname");
    assert_eq!(int(&mut s, "SELECT max(statistic_no) FROM v$statname"), n - 1);
}

#[test]
fn the_row_lock_wait_is_in_the_system_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(common::open(dir.path()));
    let mut a = db.session();
    run(&mut a, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    run(&mut a, "INSERT INTO t VALUES (1, 'x')");
    run(&mut a, "COMMIT");
    run(&mut a, "UPDATE t SET v = 'a' WHERE id = 1");
    let db2 = db.clone();
    let waiter = std::thread::spawn(move || {
        let mut b = db2.session();
        run(&mut b, "UPDATE t SET v = 'b' WHERE id = 1");
        run(&mut b, "COMMIT");
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    run(&mut a, "COMMIT");
    waiter.join().unwrap();
    let waits = rows(
        &mut a,
        "SELECT wait_class, total_waits, time_waited_micro FROM v$system_event \
         WHERE event = 'enq: TX - row lock contention'",
    );
    let [row] = waits.as_slice() else { panic!("{waits:?}") };
    assert_eq!(row[0], Value::Text("Application".into()));
    assert_eq!(row[1], Value::Int(1));
    let Value::Int(us) = row[2] else { panic!("{row:?}") };
    assert!(us >= 40_000, "the wait lasted about 50 ms, got {us} us");
}

#[test]
fn parameters_logs_and_the_database_are_views() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    assert_eq!(text(&mut s, "SELECT value FROM v$parameter WHERE name = 'commit_wait'"), "WAIT");
    run(&mut s, "ALTER SYSTEM SET commit_wait = NOWAIT");
    assert_eq!(text(&mut s, "SELECT value FROM v$parameter WHERE name = 'commit_wait'"), "NOWAIT");
    assert_eq!(text(&mut s, "SELECT type FROM v$parameter WHERE name = 'log_buffer'"), "big integer");

    // Three groups of one member; the first is being filled.
    let groups = rows(&mut s, "SELECT group_no, sequence_no, status, members FROM v$log ORDER BY group_no");
    assert_eq!(groups.len(), 3, "{groups:?}");
    assert_eq!(groups[0][1..], [Value::Int(1), Value::Text("CURRENT".into()), Value::Int(1)]);
    assert_eq!(groups[1][1..3], [Value::Int(0), Value::Text("UNUSED".into())]);
    assert_eq!(int(&mut s, "SELECT count(*) FROM v$logfile"), 3);
    let member = text(&mut s, "SELECT member FROM v$logfile WHERE group_no = 2");
    assert!(std::path::Path::new(&member).exists(), "{member}");

    // Fill more than one 1 MiB log file: the current group moves on.
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    let big = "y".repeat(4000);
    for i in 0..400 {
        run(&mut s, &format!("INSERT INTO t VALUES ({i}, '{big}')"));
        run(&mut s, "COMMIT");
    }
    let current = rows(&mut s, "SELECT group_no, sequence_no FROM v$log WHERE status = 'CURRENT'");
    let [row] = current.as_slice() else { panic!("one CURRENT group: {current:?}") };
    let Value::Int(seq) = row[1] else { panic!() };
    assert!(seq >= 2, "{current:?}");
    let switches = int(&mut s, "SELECT value FROM v$sysstat WHERE name = 'redo log switches'");
    assert!(switches >= 1);
    // Each switch is in the history, sequences in order, the newest one the current's.
    let history =
        rows(&mut s, "SELECT sequence_no, group_no, first_time_us FROM v$log_history ORDER BY recid");
    assert_eq!(history.len() as i64, switches, "{history:?}");
    assert_eq!(history.last().unwrap()[0], Value::Int(seq), "{history:?}");
    for pair in history.windows(2) {
        let (Value::Int(a), Value::Int(b)) = (&pair[0][0], &pair[1][0]) else { panic!() };
        assert_eq!(b - a, 1, "{history:?}");
    }

    let scn = int(&mut s, "SELECT current_scn FROM v$database");
    assert_eq!(scn as u64, db.snapshot().scn.0);
    assert_eq!(text(&mut s, "SELECT open_mode FROM v$database"), "READ WRITE");

    // Checkpoint images are background writes with their own event: one image, one wait.
    // The log switches above also asked the background checkpointer for images, and one
    // may land between the two reads; so the count is checked on an attempt it leaves
    // alone (it only ever adds).
    for attempt in 0.. {
        run(&mut s, &format!("INSERT INTO t VALUES ({}, 'after the switches')", 1000 + attempt));
        run(&mut s, "COMMIT");
        let before = int(&mut s, "SELECT total_waits FROM v$system_event WHERE event = 'checkpoint write'");
        db.checkpoint().unwrap().expect("commits since the last image");
        let after = rows(
            &mut s,
            "SELECT total_waits, wait_class FROM v$system_event WHERE event = 'checkpoint write'",
        );
        let [row] = after.as_slice() else { panic!("one checkpoint write event: {after:?}") };
        assert_eq!(row[1], Value::Text("System I/O".into()));
        let Value::Int(waits) = row[0] else { panic!("{after:?}") };
        assert!(waits > before, "the image's write was counted: {before} then {waits}");
        if waits == before + 1 {
            break;
        }
        assert!(attempt < 10, "a background checkpoint came between the reads {attempt} times");
    }
}

#[test]
fn views_cannot_be_changed() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    for sql in [
        "INSERT INTO v$sysstat VALUES (1, 'x', 'y', 2)",
        "UPDATE v$parameter SET value = 'x' WHERE name = 'commit_wait'",
        "DELETE FROM v$log",
        "TRUNCATE v$logfile",
        "DROP TABLE v$database",
        "SELECT * FROM v$log FOR UPDATE",
    ] {
        let e = s.execute(sql, &[]).expect_err(sql);
        assert_eq!(e.sqlstate(), "42809", "{sql}: {e}");
        assert!(e.to_string().contains("read-only view"), "{sql}: {e}");
    }
    let e = s.execute("CREATE TABLE v$log (a BIGINT PRIMARY KEY)", &[]).expect_err("create");
    assert_eq!(e.sqlstate(), "42P07", "{e}");
    // The session is still usable.
    assert_eq!(int(&mut s, "SELECT count(*) FROM v$log"), 3);
}

#[test]
fn commit_durability_and_response_per_mode_are_views() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    // BATCH NOWAIT commits wait in the log buffer for a background trigger (3 s, or a
    // third of the buffer): until then they are the backlog a crash would lose.
    run(&mut s, "ALTER SESSION SET commit_logging = BATCH");
    commit_rows(&mut s, 0, 5, "NOWAIT");
    let backlog = rows(&mut s, "SELECT commits_not_durable, oldest_age_micro FROM v$commit_durability");
    let [row] = backlog.as_slice() else { panic!("{backlog:?}") };
    assert_eq!(row[0], Value::Int(5), "{backlog:?}");
    assert!(matches!(row[1], Value::Int(age) if age > 0), "{backlog:?}");
    // A WAIT commit makes everything before it durable too.
    commit_rows(&mut s, 100, 1, "WAIT IMMEDIATE");
    assert_eq!(int(&mut s, "SELECT commits_not_durable FROM v$commit_durability"), 0);
    assert_eq!(rows(&mut s, "SELECT oldest_age_micro FROM v$commit_durability"), vec![vec![Value::Null]]);
    let durable = int(&mut s, "SELECT durable_scn FROM v$commit_durability");
    assert_eq!(durable, int(&mut s, "SELECT last_scn FROM v$commit_durability"));

    let per_mode = rows(&mut s, "SELECT commit_mode, commits FROM v$commit_response ORDER BY commit_mode");
    let count = |mode: &str| {
        per_mode.iter().find(|r| r[0] == Value::Text(mode.into())).map(|r| r[1].clone()).unwrap()
    };
    assert_eq!(count("NOWAIT/BATCH"), Value::Int(5), "{per_mode:?}");
    assert_eq!(count("WAIT/IMMEDIATE"), Value::Int(2), "the CREATE TABLE and one row: {per_mode:?}");
    let in_buckets = int(
        &mut s,
        "SELECT sum(commit_count) FROM v$commit_response_histogram_micro WHERE commit_mode = 'NOWAIT/BATCH'",
    );
    assert_eq!(in_buckets, 5);
}

#[test]
fn the_time_model_counts_user_calls_db_time_and_background_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    commit_rows(&mut s, 0, 50, "WAIT");
    // NOWAIT IMMEDIATE commits are written by the log writer (background work).
    commit_rows(&mut s, 100, 50, "NOWAIT");
    let mut wait_for_background = 0;
    while int(&mut s, "SELECT commits_not_durable FROM v$commit_durability") > 0 && wait_for_background < 200
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
        wait_for_background += 1;
    }

    let mine = rows(
        &mut s,
        "SELECT stat_name, value FROM v$sess_time_model WHERE sid = pg_backend_pid() ORDER BY stat_name",
    );
    let value = |rows: &[Vec<Value>], name: &str| -> i64 {
        match rows.iter().find(|r| r[0] == Value::Text(name.into())).map(|r| &r[1]) {
            Some(Value::Int(v)) => *v,
            other => panic!("{name}: {other:?} in {rows:?}"),
        }
    };
    let (db_time, db_cpu) = (value(&mine, "DB time"), value(&mine, "DB CPU"));
    assert!(db_time > 0 && db_cpu > 0, "{mine:?}");
    assert!(db_cpu <= db_time + 1_000, "CPU inside the calls cannot exceed their elapsed time: {mine:?}");
    // 50 WAIT commits each waited for a sync: DB time holds those waits, DB CPU does not.
    let sid = s.sid();
    let my_sync_time = format!(
        "SELECT time_waited_micro FROM v$session_event WHERE event = 'log file sync' AND sid = {sid}"
    );
    let sync_us = int(&mut s, &my_sync_time);
    assert!(db_time >= sync_us, "DB time {db_time} includes the log file sync waits {sync_us}");
    // One user call per execute: the CREATE, 200 INSERT/COMMIT statements and the views read so far.
    let calls = int(&mut s, "SELECT value FROM v$mystat WHERE name = 'user calls'");
    assert!((201..=205 + wait_for_background as i64).contains(&calls), "user calls {calls}");

    let system = rows(&mut s, "SELECT stat_name, value FROM v$sys_time_model");
    assert!(value(&system, "DB time") >= db_time, "{system:?}");
    assert!(value(&system, "background elapsed time") > 0, "{system:?}");
    assert!(value(&system, "background cpu time") >= 0, "{system:?}");
}

#[test]
fn v_session_shows_each_session_its_status_its_wait_and_its_sql() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(common::open(dir.path()));
    let mut holder = db.session();
    holder.set_client_info(db::sessions::ClientInfo {
        username: "scott".into(),
        program: "views-test".into(),
        machine: "here".into(),
    });
    run(&mut holder, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    run(&mut holder, "INSERT INTO t VALUES (1, 'x')");
    run(&mut holder, "COMMIT");
    run(&mut holder, "UPDATE t SET v = 'a' WHERE id = 1");
    let db2 = db.clone();
    let (sid_tx, sid_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let mut b = db2.session();
        sid_tx.send(b.sid()).unwrap();
        run(&mut b, "UPDATE t SET v = 'b' WHERE id = 1");
        run(&mut b, "COMMIT");
    });
    let waiter_sid = sid_rx.recv().unwrap();
    let mut observer = db.session();
    let mut seen = Vec::new();
    for _ in 0..200 {
        seen = rows(
            &mut observer,
            &format!(
                "SELECT status, event, seconds_in_wait, sql_text FROM v$session WHERE sid = {waiter_sid}"
            ),
        );
        if seen.first().is_some_and(|r| r[1] != Value::Null) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let [row] = seen.as_slice() else { panic!("{seen:?}") };
    assert_eq!(row[0], Value::Text("ACTIVE".into()), "{row:?}");
    assert_eq!(row[1], Value::Text("enq: TX - row lock contention".into()), "{row:?}");
    assert!(matches!(row[2], Value::Float(s) if s >= 0.0), "{row:?}");
    assert_eq!(row[3], Value::Text("UPDATE t SET v = 'b' WHERE id = 1".into()), "{row:?}");

    let holder_sid = holder.sid();
    let me = rows(
        &mut observer,
        &format!("SELECT username, program, status, event, sql_text FROM v$session WHERE sid = {holder_sid}"),
    );
    assert_eq!(
        me,
        vec![vec![
            Value::Text("scott".into()),
            Value::Text("views-test".into()),
            Value::Text("INACTIVE".into()),
            Value::Null,
            Value::Text("UPDATE t SET v = 'a' WHERE id = 1".into()),
        ]]
    );
    run(&mut holder, "COMMIT");
    waiter.join().unwrap();
    // The waiter is gone: its session left v$session, its wait stayed in the totals.
    assert_eq!(int(&mut observer, &format!("SELECT count(*) FROM v$session WHERE sid = {waiter_sid}")), 0);
    let row_lock_waits =
        "SELECT total_waits FROM v$system_event WHERE event = 'enq: TX - row lock contention'";
    assert_eq!(int(&mut observer, row_lock_waits), 1);
    assert_eq!(int(&mut observer, "SELECT count(*) FROM v$session"), 2);
}

#[test]
fn the_millisecond_histogram_regroups_the_microsecond_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    commit_rows(&mut s, 0, 30, "WAIT");

    let syncs = int(&mut s, "SELECT total_waits FROM v$system_event WHERE event = 'log file sync'");
    let in_buckets =
        int(&mut s, "SELECT sum(wait_count) FROM v$event_histogram WHERE event = 'log file sync'");
    assert_eq!(in_buckets, syncs, "the millisecond buckets hold every wait");
    let buckets = rows(
        &mut s,
        "SELECT event_no, wait_time_milli, wait_count, wait_class FROM v$event_histogram \
         WHERE event = 'log file sync' ORDER BY wait_time_milli",
    );
    assert!(!buckets.is_empty());
    for b in &buckets {
        let (Value::Int(ms), Value::Int(count)) = (&b[1], &b[2]) else { panic!("{b:?}") };
        assert!(*ms >= 1 && (*ms as u64).is_power_of_two() && *count > 0, "{b:?}");
        assert_eq!(b[0], buckets[0][0], "one event number per event");
        assert_eq!(b[3], Value::Text("Commit".into()));
    }

    // Each millisecond bucket b is the sum of the microsecond buckets from 512 b us (all
    // those under 1024 us for b = 1) up to 1024 b us: binary milliseconds.
    let micro = rows(
        &mut s,
        "SELECT wait_time_micro, wait_count FROM v$event_histogram_micro WHERE event = 'log file sync'",
    );
    let mut expected = std::collections::BTreeMap::<i64, i64>::new();
    for m in &micro {
        let (Value::Int(us), Value::Int(count)) = (&m[0], &m[1]) else { panic!("{m:?}") };
        *expected.entry((us / 1024).max(1)).or_default() += count;
    }
    let got: std::collections::BTreeMap<i64, i64> = buckets
        .iter()
        .map(|b| match (&b[1], &b[2]) {
            (Value::Int(ms), Value::Int(count)) => (*ms, *count),
            _ => panic!("{b:?}"),
        })
        .collect();
    assert_eq!(got, expected);

    // One number per event, one event per number.
    let numbered = rows(&mut s, "SELECT DISTINCT event_no, event FROM v$event_histogram");
    let numbers: std::collections::BTreeSet<_> = numbered.iter().map(|n| n[0].clone()).collect();
    let names: std::collections::BTreeSet<_> = numbered.iter().map(|n| n[1].clone()).collect();
    assert_eq!((numbers.len(), names.len()), (numbered.len(), numbered.len()), "{numbered:?}");
}

/// (rows fetched, fetch calls) of session `sid`, read by `observer`.
fn fetch_stats(observer: &mut Session, sid: u64) -> (i64, i64) {
    let stats = rows(
        observer,
        &format!(
            "SELECT name, value FROM v$sesstat WHERE sid = {sid} \
             AND name IN ('rows fetched', 'fetch calls') ORDER BY name"
        ),
    );
    match stats.as_slice() {
        [calls, fetched] => match (&calls[1], &fetched[1]) {
            (Value::Int(c), Value::Int(r)) => (*r, *c),
            _ => panic!("{stats:?}"),
        },
        _ => panic!("{stats:?}"),
    }
}

#[test]
fn rows_fetched_and_fetch_calls_count_results_and_cursor_fetches() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    let mut observer = db.session();
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    commit_rows(&mut s, 0, 10, "WAIT");
    let sid = s.sid();
    assert_eq!(fetch_stats(&mut observer, sid), (0, 0), "DDL, DML and COMMIT fetch nothing");

    // A query's whole result is one fetch call, even an empty one.
    assert_eq!(rows(&mut s, "SELECT id FROM t WHERE id < 3").len(), 3);
    assert_eq!(fetch_stats(&mut observer, sid), (3, 1));
    assert!(rows(&mut s, "SELECT id FROM t WHERE id > 100").is_empty());
    assert_eq!(fetch_stats(&mut observer, sid), (3, 2));

    // A batch returns each query's result: one fetch call each.
    let results = s.execute_batch("SELECT id FROM t WHERE id < 2; SELECT v FROM t WHERE id = 5").unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(fetch_stats(&mut observer, sid), (6, 4));

    // A cursor: opening it fetches nothing, each fetch is a call (the last one, finding
    // the end, too), as a wire portal's Execute with a row limit is.
    let query = s.prepare("SELECT id FROM t ORDER BY id").unwrap();
    let mut cursor = s.query(&query, &[]).unwrap();
    assert_eq!(fetch_stats(&mut observer, sid), (6, 4));
    let mut fetched = 0;
    while !cursor.is_exhausted() {
        fetched += cursor.fetch(4).len();
    }
    assert_eq!(fetched, 10);
    assert_eq!(fetch_stats(&mut observer, sid), (16, 7), "10 rows in 3 fetches of 4");

    // execute_prepared hands the whole result over: one call. An array insert none.
    let one = s.prepare("SELECT v FROM t WHERE id = $1").unwrap();
    assert_eq!(s.execute_prepared(&one, &[Value::Int(1)]).unwrap().rows().len(), 1);
    let insert = s.prepare("INSERT INTO t VALUES ($1, 'y')").unwrap();
    s.execute_many(&insert, &[vec![Value::Int(50)], vec![Value::Int(51)]]).unwrap();
    assert_eq!(fetch_stats(&mut observer, sid), (17, 8));

    // v$mystat shows the same (as of before the statement reading it), and v$sysstat the
    // sum over sessions, closed ones included.
    let mine = rows(
        &mut s,
        "SELECT value FROM v$mystat WHERE name IN ('rows fetched', 'fetch calls') ORDER BY name",
    );
    assert_eq!(mine, vec![vec![Value::Int(8)], vec![Value::Int(17)]]);
    let observer_sid = observer.sid();
    let (observer_rows, observer_calls) = fetch_stats(&mut observer, observer_sid);
    drop(s);
    let system = rows(
        &mut observer,
        "SELECT value FROM v$sysstat WHERE name IN ('rows fetched', 'fetch calls') ORDER BY name",
    );
    // s: 17 + 2 rows in 9 calls (with the v$mystat read); the observer's reads so far,
    // plus the one just made (2 rows).
    assert_eq!(
        system,
        vec![vec![Value::Int(9 + observer_calls + 1)], vec![Value::Int(19 + observer_rows + 2)]]
    );
    let sample = db::awr::sample(&db);
    assert!(sample.statistic("rows fetched") >= 19 && sample.statistic("fetch calls") >= 9, "{sample:?}");
}

#[test]
fn physical_writes_count_the_checkpoint_images_in_8k_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    let stat =
        |s: &mut Session, name: &str| int(s, &format!("SELECT value FROM v$sysstat WHERE name = '{name}'"));
    assert_eq!((stat(&mut s, "physical writes"), stat(&mut s, "physical write bytes")), (0, 0));
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    for i in 0..200 {
        run(&mut s, &format!("INSERT INTO t VALUES ({i}, '{}')", "x".repeat(100)));
    }
    run(&mut s, "COMMIT");
    let first = db.checkpoint().unwrap().expect("an image");
    run(&mut s, "INSERT INTO t VALUES (1000, 'y')");
    run(&mut s, "COMMIT");
    let second = db.checkpoint().unwrap().expect("an image");
    let bytes = first.bytes + second.bytes;
    assert!(first.bytes > 8192, "{first:?}");
    assert_eq!(stat(&mut s, "physical write bytes"), bytes as i64);
    let blocks = first.bytes.div_ceil(8192) + second.bytes.div_ceil(8192);
    assert_eq!(stat(&mut s, "physical writes"), blocks as i64);
    assert_eq!(text(&mut s, "SELECT class FROM v$statname WHERE name = 'physical writes'"), "Cache");
    let sample = db::awr::sample(&db);
    assert_eq!(sample.statistic("physical write bytes"), bytes);
    assert_eq!(sample.statistic("physical writes"), blocks);
}

/// One session's figure from `v$sesstat`, read by another session.
fn session_stat(observer: &mut Session, sid: u64, name: &str) -> i64 {
    int(observer, &format!("SELECT value FROM v$sesstat WHERE sid = {sid} AND name = '{name}'"))
}

#[test]
fn each_session_counts_its_own_parses_and_executions() {
    const PARSES: [&str; 4] =
        ["parse count (total)", "parse count (hard)", "session cursor cache hits", "execute count"];
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut worker = db.session();
    let bystander = db.session();
    let mut observer = db.session();
    run(&mut worker, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    let (w, b) = (worker.sid(), bystander.sid());
    let of = |o: &mut Session, sid| PARSES.map(|name| session_stat(o, sid, name));
    let (worker_before, bystander_before) = (of(&mut observer, w), of(&mut observer, b));

    // 5 literal inserts (new texts: hard parses), the same SELECT 3 times (1 hard parse,
    // then 2 found in the cache), and a prepared statement run 4 times (parsed once).
    for i in 0..5 {
        run(&mut worker, &format!("INSERT INTO t VALUES ({i}, 'literal')"));
    }
    for _ in 0..3 {
        run(&mut worker, "SELECT count(*) FROM t WHERE id >= 0");
    }
    let prepared = worker.prepare("SELECT v FROM t WHERE id = $1").unwrap();
    for i in 0..4 {
        worker.execute_prepared(&prepared, &[Value::Int(i)]).unwrap();
    }
    run(&mut worker, "COMMIT");

    let worker_after = of(&mut observer, w);
    let delta: Vec<i64> = worker_after.iter().zip(worker_before).map(|(a, b)| a - b).collect();
    // Parses: 5 + 3 + 1 (the prepare) + 1 (COMMIT) = 10. Hard: the 5 inserts, the first
    // SELECT, the prepare, and COMMIT unless the database parsed it before.
    assert_eq!(delta[0], 10, "parse count (total) {delta:?}");
    assert_eq!(delta[1] + delta[2], delta[0], "every parse is hard or a cache hit: {delta:?}");
    assert!(delta[1] >= 7 && delta[2] >= 2, "hard parses and cache hits: {delta:?}");
    assert_eq!(delta[3], 5 + 3 + 4 + 1, "execute count: {delta:?}");
    assert_eq!(of(&mut observer, b), bystander_before, "the other session did nothing");
    // The system counts the same work (and the observer's reads of the view).
    let system = int(&mut observer, "SELECT value FROM v$sysstat WHERE name = 'execute count'");
    assert!(system >= worker_after[3], "system {system} vs session {}", worker_after[3]);
}

/// The system's user calls, execute count and DB time are the sums over the sessions:
/// a session's work stays in them after it closes, and they never go backwards.
#[test]
fn system_call_and_execute_totals_keep_the_work_of_closed_sessions() {
    const TOTALS: [&str; 3] = ["user calls", "execute count", "DB time"];
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut observer = db.session();
    let sys = |o: &mut Session| {
        TOTALS.map(|name| {
            let (view, column) =
                if name == "DB time" { ("v$sys_time_model", "stat_name") } else { ("v$sysstat", "name") };
            int(o, &format!("SELECT value FROM {view} WHERE {column} = '{name}'"))
        })
    };
    let before = sys(&mut observer);
    let mut worker = db.session();
    run(&mut worker, "CREATE TABLE t (id BIGINT PRIMARY KEY)");
    for i in 0..50 {
        run(&mut worker, &format!("INSERT INTO t VALUES ({i})"));
    }
    run(&mut worker, "COMMIT");
    let open = sys(&mut observer);
    worker.close();
    let closed = sys(&mut observer);
    assert!(
        open[0] >= before[0] + 52 && open[1] >= before[1] + 52,
        "the worker's calls counted: {before:?} -> {open:?}"
    );
    for i in 0..3 {
        assert!(
            closed[i] >= open[i],
            "{} went backwards when its session closed: {open:?} -> {closed:?}",
            TOTALS[i]
        );
    }
}
