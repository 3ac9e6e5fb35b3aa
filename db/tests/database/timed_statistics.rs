//! `timed_statistics`: with it FALSE every wait, commit and call is still counted exactly,
//! but nothing is timed (Oracle: "the value of all time-related statistics is set to
//! zero"); with it TRUE (the default) the times grow again. System and session scope,
//! SHOW PARAMETER, v$parameter and a bad value.

use crate::common;

use db::sql::QueryResult;
use db::{Session, Value};

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

fn text(s: &mut Session, sql: &str) -> String {
    match run(s, sql).rows() {
        [row] => match row.as_slice() {
            [Value::Text(t)] => t.clone(),
            other => panic!("{sql}: expected one text, got {other:?}"),
        },
        other => panic!("{sql}: expected one row, got {other:?}"),
    }
}

/// What the test watches, read through the views by `observer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Figures {
    user_commits: i64,
    sync_waits: i64,
    sync_time_us: i64,
    sync_in_buckets: i64,
    redo_synch_writes: i64,
    redo_synch_time_us: i64,
    parallel_write_time_us: i64,
    db_time_us: i64,
    db_cpu_us: i64,
    user_calls: i64,
}

fn figures(observer: &mut Session) -> Figures {
    let stat =
        |s: &mut Session, name: &str| int(s, &format!("SELECT value FROM v$sysstat WHERE name = '{name}'"));
    let event = |s: &mut Session, column: &str, name: &str| {
        int(s, &format!("SELECT {column} FROM v$system_event WHERE event = '{name}'"))
    };
    let model = |s: &mut Session, name: &str| {
        int(s, &format!("SELECT value FROM v$sys_time_model WHERE stat_name = '{name}'"))
    };
    Figures {
        user_commits: stat(observer, "user commits"),
        sync_waits: event(observer, "total_waits", "log file sync"),
        sync_time_us: event(observer, "time_waited_micro", "log file sync"),
        sync_in_buckets: int(
            observer,
            "SELECT coalesce(sum(wait_count), 0) FROM v$event_histogram_micro WHERE event = 'log file sync'",
        ),
        redo_synch_writes: stat(observer, "redo synch writes"),
        redo_synch_time_us: stat(observer, "redo synch time (usec)"),
        parallel_write_time_us: event(observer, "time_waited_micro", "log file parallel write"),
        db_time_us: model(observer, "DB time"),
        db_cpu_us: model(observer, "DB CPU"),
        user_calls: stat(observer, "user calls"),
    }
}

/// `n` transactions of one INSERT each, committed with COMMIT WRITE WAIT.
fn wait_commits(s: &mut Session, from: i64, n: i64) {
    for i in from..from + n {
        run(s, &format!("INSERT INTO t VALUES ({i}, 'x')"));
        run(s, "COMMIT WRITE WAIT IMMEDIATE");
    }
}

#[test]
fn untimed_commits_are_counted_exactly_and_db_time_stands_still() {
    const N: i64 = 25;
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    let mut observer = db.session();
    run(&mut s, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");

    run(&mut s, "ALTER SYSTEM SET timed_statistics = FALSE");
    assert_eq!(text(&mut observer, "SELECT value FROM v$parameter WHERE name = 'timed_statistics'"), "FALSE");
    // A log write that started before the switch was timed when it started and records its
    // time when it ends: one WAIT commit after the switch waits for its own write, which
    // comes after any such write (writes are serial) and starts untimed.
    wait_commits(&mut s, 10_000, 1);
    let before = figures(&mut observer);
    wait_commits(&mut s, 0, N);
    let after = figures(&mut observer);
    assert_eq!(after.user_commits - before.user_commits, N, "{before:?} {after:?}");
    assert_eq!(after.sync_waits - before.sync_waits, N, "one log file sync per WAIT commit: {after:?}");
    assert_eq!(after.redo_synch_writes - before.redo_synch_writes, N, "{after:?}");
    // The times stand still: no clock was read for them.
    assert_eq!(after.sync_time_us, before.sync_time_us, "{before:?} {after:?}");
    assert_eq!(after.sync_in_buckets, before.sync_in_buckets, "an untimed wait has no bucket");
    assert_eq!(after.redo_synch_time_us, before.redo_synch_time_us);
    assert_eq!(after.parallel_write_time_us, before.parallel_write_time_us);
    assert_eq!(after.db_time_us, before.db_time_us, "DB time does not grow: {before:?} {after:?}");
    assert_eq!(after.db_cpu_us, before.db_cpu_us, "DB CPU does not grow: {before:?} {after:?}");
    // The calls are counted: 2 per commit, plus the observer's reads of the views.
    assert!(after.user_calls - before.user_calls >= 2 * N, "{before:?} {after:?}");
    // The commit response per mode counts its commits with no time.
    let response = "SELECT commits, time_micro FROM v$commit_response WHERE commit_mode = 'WAIT/IMMEDIATE'";
    let response_before = run(&mut observer, response).rows().to_vec();
    wait_commits(&mut s, 500, 3);
    let response_after = run(&mut observer, response).rows().to_vec();
    let [Value::Int(c0), Value::Int(t0)] = response_before[0][..] else { panic!("{response_before:?}") };
    let [Value::Int(c1), Value::Int(t1)] = response_after[0][..] else { panic!("{response_after:?}") };
    assert_eq!((c1 - c0, t1 - t0), (3, 0), "commit response: counted, not timed");

    // Timing back on: the same work grows the times again.
    run(&mut s, "ALTER SYSTEM SET timed_statistics = TRUE");
    let before = figures(&mut observer);
    wait_commits(&mut s, 1000, N);
    let after = figures(&mut observer);
    assert_eq!(after.user_commits - before.user_commits, N);
    assert_eq!(after.sync_waits - before.sync_waits, N);
    assert!(after.sync_time_us > before.sync_time_us, "{before:?} {after:?}");
    assert_eq!(after.sync_in_buckets - before.sync_in_buckets, N, "each timed wait has its bucket");
    assert!(after.redo_synch_time_us > before.redo_synch_time_us);
    assert!(after.db_time_us > before.db_time_us, "DB time grows: {before:?} {after:?}");
    assert!(
        after.db_time_us - before.db_time_us >= after.sync_time_us - before.sync_time_us,
        "DB time holds the log file sync waits: {before:?} {after:?}"
    );
}

#[test]
fn a_session_can_turn_timing_off_for_itself_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut quiet = db.session();
    let mut timed = db.session();
    run(&mut quiet, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    run(&mut quiet, "ALTER SESSION SET timed_statistics = FALSE");
    let show = run(&mut quiet, "SHOW PARAMETER timed_statistics");
    assert_eq!(
        show.rows(),
        [vec![
            Value::Text("timed_statistics".into()),
            Value::Text("boolean".into()),
            Value::Text("FALSE".into())
        ]]
    );
    assert_eq!(text(&mut timed, "SELECT value FROM v$parameter WHERE name = 'timed_statistics'"), "TRUE");

    let my_time = |s: &mut Session| {
        int(s, "SELECT value FROM v$sess_time_model WHERE stat_name = 'DB time' AND sid = pg_backend_pid()")
    };
    let my_syncs = |s: &mut Session, sid: u64| {
        let row = run(
            s,
            &format!(
                "SELECT total_waits, time_waited_micro FROM v$session_event \
                 WHERE event = 'log file sync' AND sid = {sid}"
            ),
        );
        row.rows().first().map_or((0, 0), |r| match r.as_slice() {
            [Value::Int(w), Value::Int(t)] => (*w, *t),
            other => panic!("{other:?}"),
        })
    };
    let quiet_before = my_time(&mut quiet);
    let syncs_before = my_syncs(&mut timed, quiet.sid());
    wait_commits(&mut quiet, 0, 10);
    assert_eq!(my_time(&mut quiet), quiet_before, "the quiet session's DB time stands still");
    let syncs_after = my_syncs(&mut timed, quiet.sid());
    assert_eq!(
        (syncs_after.0 - syncs_before.0, syncs_after.1 - syncs_before.1),
        (10, 0),
        "counted, not timed"
    );

    let timed_before = my_time(&mut timed);
    let syncs_before = my_syncs(&mut quiet, timed.sid());
    wait_commits(&mut timed, 100, 10);
    assert!(my_time(&mut timed) > timed_before, "the other session is still timed");
    let syncs_after = my_syncs(&mut quiet, timed.sid());
    assert_eq!(syncs_after.0 - syncs_before.0, 10);
    assert!(syncs_after.1 > syncs_before.1);

    // DEFAULT takes the session back to the system's value.
    run(&mut quiet, "ALTER SESSION SET timed_statistics = DEFAULT");
    assert_eq!(text(&mut quiet, "SELECT value FROM v$parameter WHERE name = 'timed_statistics'"), "TRUE");
    let before = my_time(&mut quiet);
    wait_commits(&mut quiet, 200, 5);
    assert!(my_time(&mut quiet) > before);
}

#[test]
fn timed_statistics_is_a_boolean_of_both_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let mut s = db.session();
    let row = run(&mut s, "SELECT type, value FROM v$parameter WHERE name = 'timed_statistics'");
    assert_eq!(row.rows(), [vec![Value::Text("boolean".into()), Value::Text("TRUE".into())]]);
    let e = s.execute("ALTER SYSTEM SET timed_statistics = sometimes", &[]).unwrap_err();
    assert_eq!(e.sqlstate(), "22023", "{e}");
    assert!(e.to_string().contains("timed_statistics") && e.to_string().contains("TRUE or FALSE"), "{e}");
    let e = s.execute("ALTER SESSION SET timed_statistics = 2", &[]).unwrap_err();
    assert_eq!(e.sqlstate(), "22023", "{e}");
    // A failed ALTER changes nothing; the engine follows the accepted ones.
    assert!(db.log().timed_statistics());
    run(&mut s, "ALTER SYSTEM SET timed_statistics = off");
    assert!(!db.log().timed_statistics());
    run(&mut s, "ALTER SYSTEM SET timed_statistics = DEFAULT");
    assert!(db.log().timed_statistics());
}
