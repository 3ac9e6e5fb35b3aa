//! `redodb db-crash-workload`: the child process of the database kill -9 tests.
//!
//! Opens (recovering) the database in `--dir` with small log files and frequent
//! checkpoints, then runs `--sessions` threads. Each session owns a key range in two tables
//! and runs transactions of 1-4 random SQL inserts, updates and deletes (bound
//! parameters) in its range, committing with `COMMIT WRITE <WAIT|NOWAIT> <IMMEDIATE|BATCH>`. Before each commit it appends an intent line to
//! `--journal` (`I <session> <seq> <ops>`), after it an acknowledgement
//! (`A <session> <seq> <W|N>`). Each line is one `write` call, so a kill leaves whole
//! lines and at most one torn last line. Table t0 has a secondary index on its values. A
//! transaction may also take a value of sequence `crash_seq` (journaled as `N <session>
//! <value>` once nextval returned it). The parent checks the recovered tables against the
//! journal, each index against a rebuild from its rows, and that the sequence goes on
//! above every value it handed out. Table t2's rows reference rows of t0 (a foreign key,
//! ON DELETE CASCADE): a transaction may add one referencing one of the session's t0
//! rows; they are not in the journal's model, the parent checks that none is an orphan.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread;

use crate::crash_configs::db_crash_config;
use anyhow::Context;
use db::{Database, Value};
use redo::sim::SimRng;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long)]
    pub journal: PathBuf,
    /// First key of this run: sessions use `base + session * 100_000 + n`.
    #[arg(long)]
    pub base: i64,
    #[arg(long, default_value_t = 4)]
    pub sessions: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub const TABLES: [&str; 2] = ["t0", "t1"];

pub fn run(args: Args) -> anyhow::Result<()> {
    let db = Database::open(&args.dir, db_crash_config()).context("open")?;
    {
        let mut s = db.session();
        for t in TABLES {
            s.execute(&format!("CREATE TABLE IF NOT EXISTS {t} (k BIGINT PRIMARY KEY, v TEXT)"), &[])
                .context("create table")?;
        }
        s.execute("CREATE INDEX IF NOT EXISTS t0_v ON t0 (v)", &[]).context("create index")?;
        s.execute("CREATE SEQUENCE IF NOT EXISTS crash_seq", &[]).context("create sequence")?;
        s.execute(
            "CREATE TABLE IF NOT EXISTS t2 (k BIGINT PRIMARY KEY, parent BIGINT REFERENCES t0 ON DELETE CASCADE)",
            &[],
        )
        .context("create the referencing table")?;
    }
    let journal = Arc::new(Mutex::new(OpenOptions::new().create(true).append(true).open(&args.journal)?));
    let write_line = |line: String| -> anyhow::Result<()> {
        journal.lock().expect("journal poisoned").write_all(line.as_bytes())?;
        Ok(())
    };
    thread::scope(|scope| {
        for session in 0..args.sessions {
            let (db, write_line) = (&db, &write_line);
            let base = args.base + session as i64 * 100_000;
            let seed = args.seed;
            scope.spawn(move || -> anyhow::Result<()> {
                let mut rng = SimRng::new(seed * 7919 + session);
                let mut s = db.session();
                let insert = TABLES.map(|t| format!("INSERT INTO {t} (k, v) VALUES ($1, $2)"));
                let update = TABLES.map(|t| format!("UPDATE {t} SET v = $1 WHERE k = $2"));
                let delete = TABLES.map(|t| format!("DELETE FROM {t} WHERE k = $1"));
                // This session's rows as it committed them: (table, key) -> value.
                let mut mine: BTreeMap<(usize, i64), String> = BTreeMap::new();
                let mut next_key = base;
                let mut next_child = base + 50_000;
                for seq in 1u64.. {
                    let mut ops = Vec::new();
                    let mut after = mine.clone();
                    for _ in 0..1 + rng.upto(3) {
                        let table = rng.upto(1) as usize;
                        let existing: Vec<i64> =
                            after.keys().filter(|(t, _)| *t == table).map(|(_, k)| *k).collect();
                        let value = format!("s{session}q{seq}r{}", rng.upto(1_000_000));
                        if existing.is_empty() || rng.upto(2) == 0 {
                            let key = next_key;
                            next_key += 1;
                            s.execute(&insert[table], &[Value::Int(key), Value::Text(value.clone())])?;
                            after.insert((table, key), value.clone());
                            ops.push(format!("{table},i,{key},{value}"));
                        } else {
                            let key = existing[rng.upto(existing.len() as u64 - 1) as usize];
                            if rng.upto(2) == 0 {
                                s.execute(&delete[table], &[Value::Int(key)])?;
                                after.remove(&(table, key));
                                ops.push(format!("{table},d,{key},-"));
                            } else {
                                s.execute(&update[table], &[Value::Text(value.clone()), Value::Int(key)])?;
                                after.insert((table, key), value.clone());
                                ops.push(format!("{table},u,{key},{value}"));
                            }
                        }
                    }
                    let parents: Vec<i64> = after.keys().filter(|(t, _)| *t == 0).map(|(_, k)| *k).collect();
                    if !parents.is_empty() && rng.upto(1) == 0 {
                        let parent = parents[rng.upto(parents.len() as u64 - 1) as usize];
                        s.execute(
                            "INSERT INTO t2 (k, parent) VALUES ($1, $2)",
                            &[Value::Int(next_child), Value::Int(parent)],
                        )?;
                        next_child += 1;
                    }
                    if rng.upto(1) == 0 {
                        let value = s.execute("SELECT nextval('crash_seq')", &[])?;
                        let Some(Value::Int(v)) = value.rows().first().map(|r| r[0].clone()) else {
                            anyhow::bail!("nextval gave {value:?}");
                        };
                        write_line(format!("N {session} {v}\n"))?;
                    }
                    write_line(format!("I {session} {seq} {}\n", ops.join(";")))?;
                    let wait = if rng.upto(1) == 0 { "WAIT" } else { "NOWAIT" };
                    let logging = if rng.upto(1) == 0 { "IMMEDIATE" } else { "BATCH" };
                    s.execute(&format!("COMMIT WRITE {wait} {logging}"), &[])?;
                    mine = after;
                    write_line(format!("A {session} {seq} {}\n", if wait == "WAIT" { 'W' } else { 'N' }))?;
                }
                Ok(())
            });
        }
    });
    Ok(())
}
