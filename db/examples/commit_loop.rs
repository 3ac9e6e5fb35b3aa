//! One configuration of the SQL commit loops, for profiling the SQL layer by hand:
//! `cargo run --release -p redodb-db --example commit_loop -- update 32 nowait 2`
//! (work insert|update|select|engine, sessions, wait|nowait, seconds; `select` is
//! pgbench's select-only statement, a prepared point SELECT by primary key). `redodb sql-bench` is the
//! benchmark; this is its smallest piece, run alone under `perf`. `engine` is sql-bench's
//! baseline: ~100-byte changes straight through redo sessions, no SQL.
//! With `COMMIT_LOOP_ITERATIONS=N` each session runs exactly N iterations instead of
//! running for a time: run it under `valgrind --tool=callgrind` with N and with 0, and the
//! difference in instructions divided by N is the cost of one statement plus commit,
//! repeatable on a noisy machine.
//! With `COMMIT_LOOP_LOGGING=BATCH` the sessions commit with `commit_logging = BATCH`
//! (default IMMEDIATE).
//! With `COMMIT_LOOP_TIMED=FALSE` the sessions run with `timed_statistics` off; the line
//! printed at the end gives the sessions' own CPU per iteration (their threads' CPU
//! clocks), to compare the two settings by the best of many short runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use db::{Database, DbConfig, Value};

/// The `redodb` binary's allocator, so the profile is the binary's.
#[path = "../../cli/src/alloc.rs"]
mod alloc;
#[global_allocator]
static ALLOCATOR: alloc::MiMalloc = alloc::MiMalloc;
use redo::LogConfig;

fn main() {
    alloc::configure();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let work = args.first().map(String::as_str).unwrap_or("update").to_string();
    let sessions: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(32);
    let wait = args.get(2).map(String::as_str).unwrap_or("nowait").to_uppercase();
    let seconds: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let dir = tempfile::tempdir_in(std::env::var("TMPDIR").unwrap_or_else(|_| "/tmp".into())).unwrap();
    if work == "engine" {
        return engine_loop(dir.path(), sessions, wait == "WAIT", seconds);
    }
    let db = Arc::new(
        Database::open(
            dir.path(),
            DbConfig {
                log: LogConfig::new("."),
                checkpoint_interval_ms: 0,
                snapshot_interval_minutes: 0,
                ..DbConfig::default()
            },
        )
        .unwrap(),
    );
    let rows = 30_000i64;
    let v = "x".repeat(84);
    {
        let mut s = db.session();
        s.execute("CREATE TABLE w1 (id BIGINT PRIMARY KEY, session BIGINT, v VARCHAR(200))", &[]).unwrap();
        s.execute("CREATE TABLE w2 (id BIGINT PRIMARY KEY, n BIGINT, v VARCHAR(200))", &[]).unwrap();
        let ins = s.prepare("INSERT INTO w2 (id, n, v) VALUES ($1, $2, $3)").unwrap();
        let batch: Vec<Vec<Value>> =
            (1..=rows).map(|i| vec![Value::Int(i), Value::Int(0), Value::Text(v.clone())]).collect();
        s.execute_many(&ins, &batch).unwrap();
        s.execute("COMMIT", &[]).unwrap();
    }
    let iterations: Option<u64> = std::env::var("COMMIT_LOOP_ITERATIONS").ok().map(|n| n.parse().unwrap());
    let timed = std::env::var("COMMIT_LOOP_TIMED").unwrap_or_else(|_| "TRUE".into());
    let logging = std::env::var("COMMIT_LOOP_LOGGING").unwrap_or_else(|_| "IMMEDIATE".into());
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let threads: Vec<_> = (0..sessions)
        .map(|index| {
            let (db, work, wait, v, timed, logging) =
                (db.clone(), work.clone(), wait.clone(), v.clone(), timed.clone(), logging.clone());
            std::thread::spawn(move || {
                let mut s = db.session();
                s.execute(&format!("ALTER SESSION SET commit_wait = {wait}"), &[]).unwrap();
                s.execute(&format!("ALTER SESSION SET commit_logging = {logging}"), &[]).unwrap();
                s.execute(&format!("ALTER SESSION SET timed_statistics = {timed}"), &[]).unwrap();
                let cpu_before = redo::stats::thread_cpu_time();
                let sql = match work.as_str() {
                    "insert" => "INSERT INTO w1 (id, session, v) VALUES ($1, $2, $3)",
                    "select" => "SELECT n FROM w2 WHERE id = $1",
                    _ => "UPDATE w2 SET n = n + 1, v = $2 WHERE id = $1",
                };
                let statement = s.prepare(sql).unwrap();
                let commit = s.prepare("COMMIT").unwrap();
                let mut n = 0u64;
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ index as u64;
                while match iterations {
                    Some(limit) => n < limit,
                    None => Instant::now() < deadline,
                } {
                    n += 1;
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let params = if work == "insert" {
                        vec![
                            Value::Int(((index as i64) << 32) + n as i64),
                            Value::Int(index as i64),
                            Value::Text(v.clone()),
                        ]
                    } else if work == "select" {
                        vec![Value::Int(1 + (x % rows as u64) as i64)]
                    } else {
                        vec![Value::Int(1 + (x % rows as u64) as i64), Value::Text(v.clone())]
                    };
                    statement_then_commit(&mut s, &statement, &commit, &params);
                }
                (n, redo::stats::thread_cpu_time() - cpu_before)
            })
        })
        .collect();
    let done: Vec<(u64, Duration)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let total: u64 = done.iter().map(|d| d.0).sum();
    let cpu: Duration = done.iter().map(|d| d.1).sum();
    let stats = db.sql_stats();
    println!(
        "{work} {sessions} sessions {wait}/{logging} timed_statistics {timed}: {:.0} commits/s; sessions' CPU {:.3} us per \
         iteration; row lock waits {} ({} us in all)",
        total as f64 / seconds,
        cpu.as_secs_f64() * 1e6 / total.max(1) as f64,
        stats.row_lock_waits,
        stats.row_lock_wait_us
    );
    // The log writer's side, as a DBA reads it: writes, who wrote, and the two waits.
    let mut s = db.session();
    let figures = s
        .execute(
            "SELECT name, value FROM v$sysstat WHERE name IN ('redo writes', 'redo writes by foreground', 'user commits')",
            &[],
        )
        .unwrap();
    let events = s
        .execute(
            "SELECT event, total_waits, time_waited_micro FROM v$system_event \
             WHERE event IN ('log file sync', 'log file parallel write')",
            &[],
        )
        .unwrap();
    let line: Vec<String> = figures.rows().iter().map(|r| format!("{} {}", r[0], r[1])).collect();
    let waits: Vec<String> = events
        .rows()
        .iter()
        .map(|r| {
            let (Value::Int(n), Value::Int(us)) = (&r[1], &r[2]) else { return String::new() };
            format!("{} avg {:.1} us", r[0], *us as f64 / (*n).max(1) as f64)
        })
        .collect();
    println!("{}; {}", line.join(", "), waits.join(", "));
    // `COMMIT_LOOP_CHECKPOINTS=N`: then N checkpoints of what the loop left, timed (their
    // CPU is the image writer's: serializing, checksumming, writing, syncing).
    let checkpoints: u32 = std::env::var("COMMIT_LOOP_CHECKPOINTS").map_or(0, |n| n.parse().unwrap());
    if checkpoints > 0 {
        let (wall, cpu) = (Instant::now(), redo::stats::thread_cpu_time());
        let mut bytes = 0;
        for _ in 0..checkpoints {
            bytes = bytes.max(db.checkpoint().unwrap().map_or(0, |image| image.bytes));
        }
        println!(
            "checkpoint of {} MB: {:.1} ms wall, {:.1} ms CPU each ({checkpoints} taken)",
            bytes >> 20,
            wall.elapsed().as_secs_f64() * 1e3 / checkpoints as f64,
            (redo::stats::thread_cpu_time() - cpu).as_secs_f64() * 1e3 / checkpoints as f64
        );
    }
}

/// One iteration, a function of its own so `--toggle-collect=*statement_then_commit*`
/// counts the loop without the set-up.
#[inline(never)]
fn statement_then_commit(
    session: &mut db::Session,
    statement: &db::sql::PreparedStatement,
    commit: &db::sql::PreparedStatement,
    params: &[Value],
) {
    session.execute_prepared(statement, params).unwrap();
    session.execute_prepared(commit, &[]).unwrap();
}

/// The raw engine under the same loop: one ~100-byte change, then a commit. A checkpointer
/// thread does what the database's would (a log group is reused only after a checkpoint):
/// here it only records the durable commit, as engine-bench's does.
fn engine_loop(dir: &std::path::Path, sessions: usize, wait: bool, seconds: f64) {
    use redo::{CommitLogging, CommitOptions, CommitWait, RedoLog};
    let (log, _) = RedoLog::open(LogConfig::new(dir)).unwrap();
    let log = Arc::new(log);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let checkpointer = {
        let (log, stop) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                if log.wait_checkpoint_request(Duration::from_millis(20)) {
                    let (scn, lsn) = log.durable_commit();
                    log.checkpoint(scn, lsn).unwrap();
                }
            }
        })
    };
    let options = CommitOptions::new(
        if wait { CommitWait::Wait } else { CommitWait::NoWait },
        CommitLogging::Immediate,
    );
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let threads: Vec<_> = (0..sessions)
        .map(|_| {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut s = log.session();
                let change = [7u8; 100];
                let cpu_before = redo::stats::thread_cpu_time();
                let mut n = 0u64;
                while Instant::now() < deadline {
                    s.log_change(&change).unwrap();
                    s.commit(options).unwrap();
                    n += 1;
                }
                (n, redo::stats::thread_cpu_time() - cpu_before)
            })
        })
        .collect();
    let done: Vec<(u64, Duration)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    checkpointer.join().unwrap();
    let total: u64 = done.iter().map(|d| d.0).sum();
    let cpu: Duration = done.iter().map(|d| d.1).sum();
    println!(
        "engine {sessions} sessions {}: {:.0} commits/s; sessions' CPU {:.3} us per iteration",
        if wait { "WAIT" } else { "NOWAIT" },
        total as f64 / seconds,
        cpu.as_secs_f64() * 1e6 / total.max(1) as f64,
    );
}
