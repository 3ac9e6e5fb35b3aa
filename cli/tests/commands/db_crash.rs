//! Database crash tests: a child (`redodb db-crash-workload`) runs random SQL transactions
//! (inserts, updates, deletes in two tables, every COMMIT WRITE mode) with frequent checkpoint
//! images, journaling each commit's intent before it and its acknowledgement after it; the
//! test kills it with SIGKILL at random moments (30 times by default,
//! `REDO_DB_CRASH_ITERATIONS`), reopens the database and checks that
//!
//! - for every session, the recovered rows equal its rows after k of its commits, for some
//!   k at or after its last commit acknowledged under WAIT (nothing acknowledged as durable
//!   is lost; what is lost is a suffix of NOWAIT or unacknowledged commits);
//! - rows written by earlier runs are exactly as they were after the previous reopen;
//! - every secondary index equals a rebuild from its table's rows;
//! - sequence `crash_seq` goes on above every value it handed out before the kill (no
//!   value twice, however many it skips);
//! - no row of t2 references a row of t0 that is not there (foreign key, ON DELETE
//!   CASCADE), and the constraint still holds after the reopen.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use db::{Database, DbConfig, Value};
use redo::sim::SimRng;

const TABLES: [&str; 2] = ["t0", "t1"];

fn config() -> DbConfig {
    crate::crash_configs::db_crash_config()
}

type Rows = BTreeMap<(usize, i64), String>;

fn all_rows(db: &Database) -> Rows {
    let snap = db.snapshot();
    let mut out = Rows::new();
    for (t, name) in TABLES.iter().enumerate() {
        let Ok(table) = snap.table(name) else { continue };
        for row in table.rows.values() {
            let (Value::Int(k), Value::Text(v)) = (&row[0], &row[1]) else {
                panic!("unexpected row {row:?}")
            };
            out.insert((t, *k), v.clone());
        }
    }
    out
}

/// One session's journal: ops of each commit in order, and its last WAIT-acknowledged seq.
#[derive(Default)]
struct SessionJournal {
    commits: BTreeMap<u64, Vec<(usize, char, i64, String)>>,
    last_waited: u64,
    acked: u64,
    /// The highest sequence value nextval gave the session.
    highest_value: i64,
}

fn read_journal(path: &Path) -> BTreeMap<u64, SessionJournal> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut sessions: BTreeMap<u64, SessionJournal> = BTreeMap::new();
    // Only whole lines: the kill can tear the last one anywhere (a write crossing a page
    // of the file stops between the pages), even inside a value.
    for line in text.split_inclusive('\n').filter_map(|l| l.strip_suffix('\n')) {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts.as_slice() {
            ["I", session, seq, ops] => {
                let (Ok(session), Ok(seq)) = (session.parse(), seq.parse()) else { continue };
                let parsed: Option<Vec<_>> = ops
                    .split(';')
                    .map(|op| {
                        let f: Vec<&str> = op.split(',').collect();
                        match f.as_slice() {
                            [t, kind, key, value] => Some((
                                t.parse().ok()?,
                                kind.chars().next()?,
                                key.parse().ok()?,
                                value.to_string(),
                            )),
                            _ => None,
                        }
                    })
                    .collect();
                if let Some(ops) = parsed {
                    sessions.entry(session).or_default().commits.insert(seq, ops);
                }
            }
            ["N", session, value] => {
                let (Ok(session), Ok(value)) = (session.parse::<u64>(), value.parse::<i64>()) else {
                    continue;
                };
                let j = sessions.entry(session).or_default();
                j.highest_value = j.highest_value.max(value);
            }
            ["A", session, seq, kind] => {
                let (Ok(session), Ok(seq)) = (session.parse::<u64>(), seq.parse::<u64>()) else { continue };
                let j = sessions.entry(session).or_default();
                j.acked = j.acked.max(seq);
                if *kind == "W" {
                    j.last_waited = j.last_waited.max(seq);
                }
            }
            _ => panic!("a whole journal line in no known form: {line:?}"),
        }
    }
    sessions
}

#[test]
fn kill_9_during_transactions_and_checkpoints_recovers_every_acknowledged_wait_commit() {
    let iterations: u64 =
        std::env::var("REDO_DB_CRASH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("db");
    let mut rng = SimRng::new(0xDB);
    let mut previous = Rows::new();
    let (mut checked_waits, mut images_seen) = (0u64, 0usize);
    let mut highest_sequence_value = 0i64;
    let mut children = 0i64;
    for i in 0..iterations {
        let base = (i as i64 + 1) * 10_000_000;
        let journal = root.path().join(format!("journal-{i}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_redodb"))
            .arg("db-crash-workload")
            .arg("--dir")
            .arg(&dir)
            .arg("--journal")
            .arg(&journal)
            .arg("--base")
            .arg(base.to_string())
            .arg("--seed")
            .arg(i.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn db-crash-workload");
        std::thread::sleep(Duration::from_millis(60 + rng.upto(340)));
        let running = child.try_wait().unwrap().is_none();
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            running,
            "iteration {i}: the workload exited by itself: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        let db =
            Database::open(&dir, config()).unwrap_or_else(|e| panic!("iteration {i}: reopen failed: {e}"));
        let rows = all_rows(&db);
        db.snapshot().verify_indexes().unwrap_or_else(|e| panic!("iteration {i}: {e}"));
        let journals = read_journal(&journal);
        let handed_out = journals.values().map(|j| j.highest_value).max().unwrap_or(0);
        let mut s = db.session();
        let next = match s.execute("SELECT nextval('crash_seq')", &[]) {
            Ok(r) => match r.rows().first().map(|row| row[0].clone()) {
                Some(Value::Int(v)) => v,
                other => panic!("iteration {i}: nextval gave {other:?}"),
            },
            // Killed before the workload created it.
            Err(e) if e.sqlstate() == "42P01" => i64::MAX,
            Err(e) => panic!("iteration {i}: nextval: {e}"),
        };
        assert!(next > handed_out, "iteration {i}: nextval gave {next} after {handed_out} was handed out");
        let count = |s: &mut db::Session, sql: &str| match s.execute(sql, &[]).map(|r| r.rows()[0][0].clone())
        {
            Ok(Value::Int(n)) => Some(n),
            Err(e) if e.sqlstate() == "42P01" => None, // killed before the workload made it
            other => panic!("iteration {i}: {sql}: {other:?}"),
        };
        if let Some(n) = count(&mut s, "SELECT count(*) FROM t2") {
            children = children.max(n);
            let orphans = count(&mut s, "SELECT count(*) FROM t2 WHERE parent NOT IN (SELECT k FROM t0)");
            assert_eq!(orphans, Some(0), "iteration {i}: orphans in t2");
            let e = s.execute("INSERT INTO t2 VALUES (1, -1)", &[]).expect_err("an orphan is refused");
            assert_eq!(e.sqlstate(), "23503", "iteration {i}: {e}");
        }
        let _ = s.execute("ROLLBACK", &[]);
        highest_sequence_value = highest_sequence_value.max(handed_out);
        drop(s);
        images_seen =
            images_seen.max(db::checkpoint::list_images(&redo::storage::FileStorage, &dir).unwrap().len());
        // Rows of earlier runs are untouched.
        let old: Rows = rows.iter().filter(|((_, k), _)| *k < base).map(|(a, b)| (*a, b.clone())).collect();
        assert_eq!(old, previous, "iteration {i}: rows of earlier runs changed");
        // Each session's rows are its rows after some k commits, k >= its last WAIT ack.
        for (session, j) in journals {
            let lo = base + session as i64 * 100_000;
            let actual: Rows = rows
                .iter()
                .filter(|((_, k), _)| (lo..lo + 100_000).contains(k))
                .map(|(a, b)| (*a, b.clone()))
                .collect();
            let mut model = Rows::new();
            let mut matches = (j.last_waited == 0 && actual.is_empty()).then_some(0);
            for (&seq, ops) in &j.commits {
                for (t, kind, key, value) in ops {
                    match kind {
                        'd' => {
                            model.remove(&(*t, *key));
                        }
                        _ => {
                            model.insert((*t, *key), value.clone());
                        }
                    }
                }
                if seq >= j.last_waited && model == actual {
                    matches = Some(seq);
                }
            }
            let k = matches.unwrap_or_else(|| {
                panic!(
                    "iteration {i} session {session}: recovered rows match no commit at or after the last WAIT-acknowledged one ({}); {} rows recovered",
                    j.last_waited,
                    actual.len()
                )
            });
            assert!(k >= j.last_waited);
            checked_waits += j.last_waited;
        }
        previous = rows;
        drop(db);
    }
    eprintln!("{iterations} kills: {} rows at the end, WAIT acknowledgements up to {checked_waits} checked, up to {images_seen} images on disk", previous.len());
    assert!(checked_waits > iterations, "too few WAIT commits acknowledged to test anything");
    assert!(highest_sequence_value > 0, "no sequence value was handed out to test");
    assert!(children > 0, "no referencing row was committed to test");
}
