//! Deterministic simulation of the whole database: every file (redo log members, control
//! file, checkpoint images, workload repository snapshots) on the simulated disk, which
//! on a power cut keeps any subset of the unsynced writes, tears writes by sector, and
//! keeps a name change only if its directory was synced (`redo::sim`). The database runs
//! under `Scheduling::Driven`: no background thread, the simulation does the log
//! writer's work and the checkpoints at the steps its seed chooses, so one seed gives one
//! schedule and one outcome, and a failing seed replays exactly
//! (`REDODB_SIM_SEEDS=N..N+1 cargo test -p redodb-db --test simulation`).
//!
//! Each seed picks a configuration (log groups, file size, mirrors, strands, sync method,
//! log buffer) and runs rounds: sessions interleave inserts, updates, deletes, range
//! updates, statements that fail (duplicate keys, lock conflicts), reads, commits in all
//! four COMMIT WRITE modes, rollbacks, log writes, checkpoints and snapshots, with faults
//! (failing syncs of a log member or of the whole log, full disk for images) and a disk
//! that may die at any operation; then the power goes. Every reopen is checked against a
//! model of the commits:
//!
//! - the recovered table is the model's after a prefix of the commits, in commit order,
//!   and that prefix holds every commit acknowledged under WAIT;
//! - while running, every statement affects the rows the model says, fails with the
//!   error it says, and every read shows the committed rows plus the session's own.
//!
//! CI runs the seeds `REDODB_SIM_SEEDS` gives (`0..1000` by default); `scripts/simulate.sh`
//! runs many more. `REDODB_SIM_TRACE=1` prints every step of every seed.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use db::{Database, DbConfig, DbError, Session, Value};
use redo::fault::{Fault, FaultOp};
use redo::sim::{SimRng, SimStorage};
use redo::{LogConfig, Scheduling, SyncMethod};

/// A row of the table: `(v, s)` by `id`.
type Row = (i64, String);
type Table = BTreeMap<i64, Row>;

#[derive(Clone, Debug)]
enum Op {
    Put(i64, Row),
    Delete(i64),
}

/// One commit of the model.
#[derive(Clone, Debug)]
enum Commit {
    CreateTable,
    Changes(Vec<Op>),
}

fn apply(table: &mut Table, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Put(id, row) => {
                table.insert(*id, row.clone());
            }
            Op::Delete(id) => {
                table.remove(id);
            }
        }
    }
}

/// The commits in commit order, and how many of them are known durable.
#[derive(Default)]
struct Model {
    commits: Vec<Commit>,
    /// Commits `0..durable` must survive any crash: acknowledged under WAIT, or recovered.
    durable: usize,
    /// The table after every commit (None: not created yet), kept as commits are added.
    committed: Option<Table>,
}

impl Model {
    fn push(&mut self, commit: Commit) {
        match &commit {
            Commit::CreateTable => self.committed = Some(Table::new()),
            Commit::Changes(ops) => apply(self.committed.as_mut().expect("created before it changes"), ops),
        }
        self.commits.push(commit);
    }

    /// The table after each of the first `durable..=len` commits, in that order.
    fn tables_from_durable(&self) -> Vec<Option<Table>> {
        let mut table: Option<Table> = None;
        let mut out = Vec::new();
        for (k, commit) in std::iter::once(None).chain(self.commits.iter().map(Some)).enumerate() {
            match commit {
                None => {}
                Some(Commit::CreateTable) => table = Some(Table::new()),
                Some(Commit::Changes(ops)) => apply(table.as_mut().expect("created before it changes"), ops),
            }
            if k >= self.durable {
                out.push(table.clone());
            }
        }
        out
    }

    /// Keeps only the first `k` commits.
    fn truncate(&mut self, k: usize) {
        self.commits.truncate(k);
        let commits = std::mem::take(&mut self.commits);
        self.committed = None;
        for commit in commits {
            self.push(commit);
        }
    }

    fn committed(&self) -> Option<Table> {
        self.committed.clone()
    }
}

/// A session with what the model knows of its open transaction.
struct SimSession {
    session: Session,
    pending: Vec<Op>,
    /// Keys its successful statements locked: another session's statement on them fails.
    locked: BTreeSet<i64>,
    /// Keys it may hold a lock on (a failed statement's locks stay to the transaction's
    /// end): others stay away from them, except to fail on `locked` ones.
    maybe_locked: BTreeSet<i64>,
}

impl SimSession {
    fn end_transaction(&mut self) {
        self.pending.clear();
        self.locked.clear();
        self.maybe_locked.clear();
    }
}

/// Why a seed failed.
type Failure = String;

/// What the seeds exercised, summed over all of them and printed at the end, so a run
/// shows it did more than pass.
#[derive(Default)]
struct Coverage {
    power_cuts: AtomicU64,
    disk_deaths: AtomicU64,
    terminations: AtomicU64,
    wait_commits: AtomicU64,
    nowait_commits: AtomicU64,
    /// Commits acknowledged but not durable that a power cut took (a suffix).
    commits_lost: AtomicU64,
    /// Log switches (the sequence being filled at the end of a round, less at its start).
    log_switches: AtomicU64,
    failed_statements: AtomicU64,
    reads_checked: AtomicU64,
}

impl Coverage {
    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, SeqCst);
    }

    fn summary(&self) -> String {
        let get = |c: &AtomicU64| c.load(SeqCst);
        format!(
            "{} power cuts ({} with the disk dead before), {} instance terminations, {} WAIT and {} NOWAIT \
             commits, {} acknowledged NOWAIT commits lost, {} log switches, {} statements failed as \
             expected, {} reads checked",
            get(&self.power_cuts),
            get(&self.disk_deaths),
            get(&self.terminations),
            get(&self.wait_commits),
            get(&self.nowait_commits),
            get(&self.commits_lost),
            get(&self.log_switches),
            get(&self.failed_statements),
            get(&self.reads_checked)
        )
    }
}

static COVERAGE: std::sync::LazyLock<Coverage> = std::sync::LazyLock::new(Coverage::default);

fn config(rng: &mut SimRng) -> (DbConfig, String) {
    let mut log = LogConfig::new("/db");
    log.scheduling = Scheduling::Driven;
    log.log_groups = 2 + rng.upto(2) as u32;
    // Small files: log switches, and the checkpoints they need, every few dozen commits.
    log.log_file_size = (64 + 32 * rng.upto(2)) << 10;
    log.log_buffer = 64 << 10;
    log.log_parallelism = 1 + rng.upto(1) as u32;
    log.sync_method =
        [SyncMethod::Fdatasync, SyncMethod::Dsync, SyncMethod::DirectDsync][rng.upto(2) as usize];
    if rng.chance(1, 3) {
        log.mirror_dirs = vec![PathBuf::from("/mirror")];
    }
    let described = format!(
        "{} groups x {} members of {} KiB, log buffer {} KiB, {} strands, {:?}",
        log.log_groups,
        log.members(),
        log.log_file_size >> 10,
        log.log_buffer >> 10,
        log.log_parallelism,
        log.sync_method
    );
    let config =
        DbConfig { log, checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..DbConfig::default() };
    (config, described)
}

/// The whole of one seed: rounds of work, each ended by a power cut, each reopen checked.
fn run_seed(seed: u64, trace: &mut Vec<String>) -> Result<(), Failure> {
    // What an earlier seed on this thread left unlogged is not this seed's.
    take_logged(&mut Vec::new());
    let mut rng = SimRng::new(seed);
    let (config, described) = config(&mut rng);
    trace.push(format!("seed {seed}: {described}"));
    let mut disk = SimStorage::new();
    let recording = std::env::var_os("REDODB_SIM_IO").is_some();
    if recording {
        disk.record();
    }
    let mut model = Model::default();
    let rounds = 2 + rng.upto(2);
    for round in 0..rounds {
        trace.push(format!("round {round}"));
        dump_log_blocks(&disk, trace);
        let db = match Database::open_with("/db", config.clone(), Arc::new(disk.clone())) {
            Ok(db) => db,
            Err(e) => {
                take_logged(trace);
                return Err(format!("open after the power cut failed: {e}"));
            }
        };
        check_recovered(&db, &mut model, trace)?;
        if rng.chance(1, 2) {
            let ops = rng.upto(600);
            trace.push(format!("the disk dies after {ops} more operations"));
            disk.die_after(ops);
        }
        let first_seq = db.log().status().current_seq.0;
        run_round(&db, &disk, &mut model, &mut rng, trace)?;
        Coverage::add(&COVERAGE.log_switches, db.log().status().current_seq.0 - first_seq);
        Coverage::add(&COVERAGE.power_cuts, 1);
        Coverage::add(&COVERAGE.disk_deaths, disk.is_dead() as u64);
        Coverage::add(&COVERAGE.terminations, db.termination().is_some() as u64);
        let cut = rng.next_u64();
        trace.push(format!("power cut (crash seed {cut})"));
        let survivor = disk.crash(cut);
        drop(db);
        disk = survivor;
        if recording {
            disk.record();
        }
    }
    dump_log_blocks(&disk, trace);
    let db = Database::open_with("/db", config, Arc::new(disk.clone())).map_err(|e| {
        take_logged(trace);
        format!("the last open failed: {e}")
    })?;
    check_recovered(&db, &mut model, trace)
}

/// The database's log messages (members taken out of service, failed checkpoints, ...),
/// kept per thread so that they go into the seed's trace in order with its steps.
struct TraceLogger;

thread_local! {
    static LOGGED: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl log::Log for TraceLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            LOGGED.with(|l| l.borrow_mut().push(format!("[{}] {}", record.level(), record.args())));
        }
    }
    fn flush(&self) {}
}

/// Moves what the database logged since the last call into the trace.
fn take_logged(trace: &mut Vec<String>) {
    LOGGED.with(|l| trace.append(&mut l.borrow_mut()));
}

/// With `REDODB_SIM_IO=1`, the disk's operations go into the trace too.
fn take_io(disk: &SimStorage, trace: &mut Vec<String>) {
    trace.extend(disk.take_recorded().into_iter().map(|op| format!("    io: {op}")));
}

/// With `REDODB_SIM_DUMP=1`, each log file's blocks in the trace before an open: the
/// sequence and LSN of each block header (what recovery will read), runs of equal
/// sequence shown as one range.
fn dump_log_blocks(disk: &SimStorage, trace: &mut Vec<String>) {
    if std::env::var_os("REDODB_SIM_DUMP").is_none() {
        return;
    }
    for path in disk.paths().into_iter().filter(|p| p.extension().is_some_and(|e| e == "log")) {
        let bytes = disk.durable_bytes(&path).unwrap_or_default();
        let mut runs: Vec<(u32, u64, u64)> = Vec::new();
        for block in bytes.chunks(4096).skip(1) {
            let seq = u32::from_le_bytes(block[0..4].try_into().unwrap());
            let lsn = u64::from_le_bytes(block[8..16].try_into().unwrap());
            match runs.last_mut() {
                Some((s, _, last)) if *s == seq && lsn == *last + 4096 => *last = lsn,
                _ => runs.push((seq, lsn, lsn)),
            }
        }
        let shown: Vec<String> = runs.iter().map(|(s, a, b)| format!("seq {s} {a}..={b}")).collect();
        trace.push(format!("{}: {}", path.display(), shown.join(", ")));
    }
}

/// Reads the recovered table and checks it is the model's after a prefix of the commits
/// holding every durable one; the model keeps that prefix (it is durable now: recovery
/// rewrote and synced it).
fn check_recovered(db: &Database, model: &mut Model, trace: &mut Vec<String>) -> Result<(), Failure> {
    let recovered = read_table(&mut db.session()).map_err(|e| format!("reading after recovery: {e}"))?;
    let candidates = model.tables_from_durable();
    let found = (0..candidates.len()).rev().find(|&i| candidates[i] == recovered).map(|i| model.durable + i);
    let Some(k) = found else {
        return Err(format!(
            "recovered {} rows matching no commit-order prefix of {} commits holding the {} durable ones\nrecovered: {recovered:?}\nafter every commit: {:?}",
            recovered.as_ref().map_or(0, |t| t.len()),
            model.commits.len(),
            model.durable,
            model.committed()
        ));
    };
    trace.push(format!("recovered {k} of {} commits ({} durable)", model.commits.len(), model.durable));
    Coverage::add(&COVERAGE.commits_lost, (model.commits.len() - k) as u64);
    model.truncate(k);
    model.durable = k;
    Ok(())
}

/// The table as a session sees it (None: it does not exist).
fn read_table(session: &mut Session) -> Result<Option<Table>, DbError> {
    match session.execute("SELECT id, v, s FROM t ORDER BY id", &[]) {
        Ok(result) => {
            let mut table = Table::new();
            for row in result.rows() {
                let (Value::Int(id), Value::Int(v), Value::Text(s)) = (&row[0], &row[1], &row[2]) else {
                    panic!("a row of unexpected types: {row:?}")
                };
                table.insert(*id, (*v, s.clone()));
            }
            Ok(Some(table))
        }
        // `kind`: the error carries its place in the statement (`DbError::At`).
        Err(e) if matches!(e.kind(), DbError::UnknownTable(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

const KEYS: u64 = 24;

fn text(rng: &mut SimRng) -> String {
    // Up to 3 KiB: units of a few hundred bytes to several blocks.
    let len = if rng.chance(1, 2) { rng.upto(3000) } else { rng.upto(40) } as usize;
    let c = (b'a' + rng.upto(25) as u8) as char;
    std::iter::repeat_n(c, len).collect()
}

/// What a statement did, against what the model expected.
enum Outcome {
    Rows(u64),
    Error(&'static str),
}

fn run_round(
    db: &Database,
    disk: &SimStorage,
    model: &mut Model,
    rng: &mut SimRng,
    trace: &mut Vec<String>,
) -> Result<(), Failure> {
    let mut sessions: Vec<SimSession> = (0..1 + rng.upto(3))
        .map(|_| SimSession {
            session: db.session(),
            pending: Vec::new(),
            locked: BTreeSet::new(),
            maybe_locked: BTreeSet::new(),
        })
        .collect();
    if model.committed().is_none() {
        let s = &mut sessions[0].session;
        match s.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL, s TEXT NOT NULL)", &[]) {
            Ok(_) => {
                model.push(Commit::CreateTable);
                model.durable = model.commits.len();
                trace.push("created t".into());
            }
            Err(e) if db.termination().is_some() || disk.is_dead() => {
                // The table's commit may or may not have made it.
                trace.push(format!("CREATE TABLE failed with the disk: {e}"));
                model.push(Commit::CreateTable);
                return Ok(());
            }
            Err(e) => return Err(format!("CREATE TABLE failed: {e}")),
        }
    }
    let steps = 20 + rng.upto(800);
    for step in 0..steps {
        if db.termination().is_some() {
            trace.push(format!("step {step}: the instance terminated: {:?}", db.termination()));
            return Ok(());
        }
        let who = rng.upto(sessions.len() as u64 - 1) as usize;
        let action = rng.upto(99);
        take_logged(trace);
        take_io(disk, trace);
        let result = match action {
            0..=54 => statement(db, &mut sessions, who, model, rng, trace),
            55..=62 => read_check(&mut sessions, who, model, trace),
            63..=79 => commit(db, &mut sessions[who], who, model, rng, trace),
            80..=83 => {
                trace.push(format!("s{who}: ROLLBACK"));
                sessions[who].session.execute("ROLLBACK", &[]).map(|_| ()).or_else(|e| unless_down(db, e))?;
                sessions[who].end_transaction();
                Ok(())
            }
            84..=91 => {
                let wrote = db.log().run_writer();
                trace.push(format!("log writer: {wrote:?}"));
                Ok(())
            }
            92..=95 => {
                let image = db.checkpoint();
                trace.push(format!("checkpoint: {:?}", image.map(|i| i.map(|i| i.scn))));
                Ok(())
            }
            96 => {
                let snapshot = db::awr::take_snapshot(db);
                trace.push(format!("snapshot: {:?}", snapshot.map(|s| s.id)));
                Ok(())
            }
            97 => {
                let fault = random_fault(rng);
                trace.push(format!("inject {fault:?}"));
                disk.inject(fault);
                Ok(())
            }
            _ => {
                trace.push("faults cleared".into());
                disk.clear_faults();
                Ok(())
            }
        };
        take_logged(trace);
        take_io(disk, trace);
        result?;
    }
    Ok(())
}

fn random_fault(rng: &mut SimRng) -> Fault {
    let skip = rng.upto(20);
    match rng.upto(4) {
        // One mirror's member: the log goes on with the other.
        0 => Fault { op: FaultOp::Sync, path_contains: "/mirror/".into(), skip, errno: libc::EIO },
        // Every log file: the log fails, the instance terminates.
        1 => Fault { op: FaultOp::Sync, path_contains: ".log".into(), skip, errno: libc::EIO },
        2 => Fault { op: FaultOp::Write, path_contains: "image".into(), skip, errno: libc::ENOSPC },
        3 => Fault { op: FaultOp::Rename, path_contains: "/db/".into(), skip, errno: libc::EIO },
        _ => Fault { op: FaultOp::SyncDir, path_contains: "/db".into(), skip, errno: libc::EIO },
    }
}

/// An error that is fine only because the instance or its disk went down.
fn unless_down(db: &Database, e: DbError) -> Result<(), Failure> {
    if db.termination().is_some() {
        Ok(())
    } else {
        Err(format!("unexpected error: {e}"))
    }
}

/// The table `who` sees: the committed rows and its own changes.
fn view(model: &Model, session: &SimSession) -> Table {
    let mut table = model.committed.clone().expect("the table exists while running");
    apply(&mut table, &session.pending);
    table
}

/// Keys another session may hold locks on.
fn taken_by_others(sessions: &[SimSession], who: usize) -> BTreeSet<i64> {
    sessions
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != who)
        .flat_map(|(_, s)| s.maybe_locked.iter().copied())
        .collect()
}

fn statement(
    db: &Database,
    sessions: &mut [SimSession],
    who: usize,
    model: &Model,
    rng: &mut SimRng,
    trace: &mut Vec<String>,
) -> Result<(), Failure> {
    let seen = view(model, &sessions[who]);
    let others = taken_by_others(sessions, who);
    let free: Vec<i64> = (0..KEYS as i64).filter(|k| !others.contains(k)).collect();
    let definitely_taken: Vec<i64> = sessions
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != who)
        .flat_map(|(_, s)| s.locked.iter().copied())
        .collect();
    let pick = |rng: &mut SimRng, from: &[i64]| from[rng.upto(from.len() as u64 - 1) as usize];
    let me = &mut sessions[who];
    let (sql, params, expected, ops, locks): (String, Vec<Value>, Outcome, Vec<Op>, Vec<i64>) =
        match rng.upto(9) {
            // An insert of a key the session does not see, or a duplicate.
            0..=2 if !free.is_empty() => {
                let id = pick(rng, &free);
                let row = (rng.upto(1000) as i64, text(rng));
                let params = vec![Value::Int(id), Value::Int(row.0), Value::Text(row.1.clone())];
                if seen.contains_key(&id) {
                    (
                        "INSERT INTO t VALUES ($1, $2, $3)".into(),
                        params,
                        Outcome::Error("23505"),
                        vec![],
                        vec![id],
                    )
                } else {
                    (
                        "INSERT INTO t VALUES ($1, $2, $3)".into(),
                        params,
                        Outcome::Rows(1),
                        vec![Op::Put(id, row)],
                        vec![id],
                    )
                }
            }
            3..=4 if !free.is_empty() => {
                let id = pick(rng, &free);
                let v = rng.upto(1000) as i64;
                let s = text(rng);
                let params = vec![Value::Int(id), Value::Int(v), Value::Text(s.clone())];
                let found = seen.contains_key(&id);
                let ops = if found { vec![Op::Put(id, (v, s))] } else { vec![] };
                (
                    "UPDATE t SET v = $2, s = $3 WHERE id = $1".into(),
                    params,
                    Outcome::Rows(found as u64),
                    ops,
                    vec![id],
                )
            }
            5 if !free.is_empty() => {
                let id = pick(rng, &free);
                let found = seen.contains_key(&id);
                let ops = if found { vec![Op::Delete(id)] } else { vec![] };
                (
                    "DELETE FROM t WHERE id = $1".into(),
                    vec![Value::Int(id)],
                    Outcome::Rows(found as u64),
                    ops,
                    vec![id],
                )
            }
            // A range update, when no row it would lock is another session's.
            6 => {
                let a = rng.upto(KEYS - 1) as i64;
                let b = a + rng.upto(6) as i64;
                let rows: Vec<(i64, Row)> = seen.range(a..=b).map(|(k, r)| (*k, r.clone())).collect();
                if rows.iter().any(|(k, _)| others.contains(k)) {
                    return Ok(());
                }
                let keys: Vec<i64> = rows.iter().map(|(k, _)| *k).collect();
                let ops = rows.into_iter().map(|(k, (v, s))| Op::Put(k, (v + 1, s))).collect();
                (
                    "UPDATE t SET v = v + 1 WHERE id BETWEEN $1 AND $2".into(),
                    vec![Value::Int(a), Value::Int(b)],
                    Outcome::Rows(keys.len() as u64),
                    ops,
                    keys,
                )
            }
            // A statement that fails part way: it takes back all it did.
            7 if free.len() >= 2 => {
                let new: Vec<i64> = free.iter().copied().filter(|k| !seen.contains_key(k)).collect();
                let old: Vec<i64> = free.iter().copied().filter(|k| seen.contains_key(k)).collect();
                if new.is_empty() || old.is_empty() {
                    return Ok(());
                }
                let (a, b) = (pick(rng, &new), pick(rng, &old));
                (
                    "INSERT INTO t VALUES ($1, 0, 'x'), ($2, 0, 'y')".into(),
                    vec![Value::Int(a), Value::Int(b)],
                    Outcome::Error("23505"),
                    vec![],
                    vec![a, b],
                )
            }
            // A row another session has changed: the lock is not available (a driven
            // database never waits).
            8 if !definitely_taken.is_empty() => {
                let id = pick(rng, &definitely_taken);
                (
                    "UPDATE t SET v = v - 1 WHERE id = $1".into(),
                    vec![Value::Int(id)],
                    Outcome::Error("55P03"),
                    vec![],
                    vec![],
                )
            }
            _ => return Ok(()),
        };
    trace.push(format!("s{who}: {sql} {}", shown(&params)));
    let result = me.session.execute(&sql, &params);
    match (result, expected) {
        (Ok(r), Outcome::Rows(n)) if r.rows_affected() == n => {
            me.locked.extend(ops.iter().map(|op| match op {
                Op::Put(k, _) | Op::Delete(k) => *k,
            }));
            me.maybe_locked.extend(locks);
            me.pending.extend(ops);
            Ok(())
        }
        (Ok(r), expected) => Err(format!(
            "s{who}: {sql} affected {} rows where the model expected {}",
            r.rows_affected(),
            match expected {
                Outcome::Rows(n) => n.to_string(),
                Outcome::Error(code) => format!("error {code}"),
            }
        )),
        (Err(e), Outcome::Error(code)) if e.sqlstate() == code => {
            Coverage::add(&COVERAGE.failed_statements, 1);
            me.maybe_locked.extend(locks);
            Ok(())
        }
        // The transaction's redo would pass half a log file: the statement is refused
        // and takes back what it did (the locks it took stay).
        (Err(e), _) if e.sqlstate() == "54000" => {
            trace.push(format!("s{who}: refused: {e}"));
            me.maybe_locked.extend(locks);
            Ok(())
        }
        (Err(e), _) => unless_down(db, e),
    }
}

/// Bind values as the trace shows them: long texts by their length.
fn shown(params: &[Value]) -> String {
    let one = |v: &Value| match v {
        Value::Text(t) if t.len() > 12 => format!("'{}'x{}", &t[..1], t.len()),
        other => format!("{other:?}"),
    };
    params.iter().map(one).collect::<Vec<_>>().join(", ")
}

fn read_check(
    sessions: &mut [SimSession],
    who: usize,
    model: &Model,
    trace: &mut Vec<String>,
) -> Result<(), Failure> {
    let expected = view(model, &sessions[who]);
    trace.push(format!("s{who}: read"));
    match read_table(&mut sessions[who].session) {
        Ok(Some(seen)) if seen == expected => {
            Coverage::add(&COVERAGE.reads_checked, 1);
            Ok(())
        }
        Ok(seen) => Err(format!("s{who} read {seen:?} where the model has {expected:?}")),
        Err(DbError::InstanceTerminated(_)) => Ok(()),
        Err(e) => Err(format!("s{who}: read failed: {e}")),
    }
}

fn commit(
    db: &Database,
    me: &mut SimSession,
    who: usize,
    model: &mut Model,
    rng: &mut SimRng,
    trace: &mut Vec<String>,
) -> Result<(), Failure> {
    let mode = ["WAIT IMMEDIATE", "WAIT BATCH", "NOWAIT IMMEDIATE", "NOWAIT BATCH"][rng.upto(3) as usize];
    let sql = format!("COMMIT WRITE {mode}");
    trace.push(format!("s{who}: {sql} of {} changes", me.pending.len()));
    let changes = std::mem::take(&mut me.pending);
    me.end_transaction();
    match me.session.execute(&sql, &[]) {
        Ok(_) => {
            if !changes.is_empty() {
                model.push(Commit::Changes(changes));
                if mode.starts_with("WAIT") {
                    model.durable = model.commits.len();
                    Coverage::add(&COVERAGE.wait_commits, 1);
                } else {
                    Coverage::add(&COVERAGE.nowait_commits, 1);
                }
            }
            Ok(())
        }
        Err(e) if db.termination().is_some() => {
            // Its commit record may have reached the log before the failure: the commit
            // may survive, as the last one.
            trace.push(format!("commit failed as the instance terminated: {e}"));
            if !changes.is_empty() {
                model.push(Commit::Changes(changes));
            }
            Ok(())
        }
        // No checkpoint could free the next log group (its image could not be written):
        // the commit did not happen.
        Err(e) if e.sqlstate() == "53000" => {
            trace.push(format!("commit refused: {e}"));
            Ok(())
        }
        Err(e) => Err(format!("COMMIT failed: {e}")),
    }
}

/// The seeds to run: `REDODB_SIM_SEEDS=a..b`, else `0..1000`.
fn seeds() -> Range<u64> {
    match std::env::var("REDODB_SIM_SEEDS") {
        Ok(text) => {
            let (a, b) = text.split_once("..").expect("REDODB_SIM_SEEDS=a..b");
            a.parse().expect("a number")..b.parse().expect("a number")
        }
        Err(_) => 0..1000,
    }
}

#[test]
fn a_seed_replays_exactly() {
    let _ = log::set_logger(&TraceLogger);
    log::set_max_level(log::LevelFilter::Warn);
    for seed in [3, 1185, 2954] {
        let (mut first, mut second) = (Vec::new(), Vec::new());
        let a = run_seed(seed, &mut first);
        let b = run_seed(seed, &mut second);
        assert_eq!(a, b, "seed {seed}: two outcomes");
        assert!(first.len() > 100, "seed {seed} did little: {} steps", first.len());
        if let Some(i) = (0..first.len().min(second.len())).find(|&i| first[i] != second[i]) {
            panic!("seed {seed}: the runs part at step {i}: {:?} against {:?}", first[i], second[i]);
        }
        assert_eq!(first.len(), second.len(), "seed {seed}");
    }
}

/// A long run prints how far it got every this many seeds.
const PROGRESS_EVERY: u64 = 5_000;

/// How long one seed may run before the simulation is declared hung.
const SEED_LIMIT: Duration = Duration::from_secs(60);

#[test]
fn seeded_power_cuts_of_the_whole_database_recover_a_prefix_holding_every_acknowledged_commit() {
    let seeds = seeds();
    let _ = log::set_logger(&TraceLogger);
    log::set_max_level(log::LevelFilter::Warn);
    let next = AtomicU64::new(seeds.start);
    // Seeds finished, for a progress line every PROGRESS_EVERY: a long run stopped early
    // still says how far it got with no failure.
    let finished = AtomicU64::new(0);
    let failures: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4);
    let current: Vec<Mutex<Option<(u64, Instant)>>> = (0..workers).map(|_| Mutex::new(None)).collect();
    let started = Instant::now();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // A seed that runs this long is hung: say which, and stop the whole test.
            while !done.load(SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                for slot in &current {
                    if let Some((seed, since)) = *slot.lock().unwrap() {
                        if since.elapsed() > SEED_LIMIT {
                            eprintln!(
                                "seed {seed} ran over {SEED_LIMIT:?}: replay with REDODB_SIM_SEEDS={seed}..{}",
                                seed + 1
                            );
                            std::process::exit(101);
                        }
                    }
                }
            }
        });
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (next, failures, current, finished) = (&next, &failures, &current, &finished);
                let end = seeds.end;
                scope.spawn(move || loop {
                    let seed = next.fetch_add(1, SeqCst);
                    if seed >= end {
                        *current[w].lock().unwrap() = None;
                        return;
                    }
                    *current[w].lock().unwrap() = Some((seed, Instant::now()));
                    let mut trace = Vec::new();
                    let outcome =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_seed(seed, &mut trace)));
                    let failure = match outcome {
                        Ok(Ok(())) => None,
                        Ok(Err(failure)) => Some(failure),
                        Err(panic) => Some(format!(
                            "panicked: {}",
                            panic
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default()
                        )),
                    };
                    if std::env::var_os("REDODB_SIM_TRACE").is_some() {
                        eprintln!("seed {seed}:\n  {}", trace.join("\n  "));
                    }
                    if let Some(failure) = failure {
                        let tail = trace.len().saturating_sub(60);
                        eprintln!(
                            "seed {seed} FAILED: {failure}\nreplay with REDODB_SIM_SEEDS={seed}..{}\nlast steps:\n  {}",
                            seed + 1,
                            trace[tail..].join("\n  ")
                        );
                        failures.lock().unwrap().push((seed, failure));
                    }
                    let count = finished.fetch_add(1, SeqCst) + 1;
                    if count % PROGRESS_EVERY == 0 {
                        eprintln!(
                            "{count} seeds finished in {:.1} s, {} failed",
                            started.elapsed().as_secs_f64(),
                            failures.lock().unwrap().len()
                        );
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("a simulation worker");
        }
        done.store(true, SeqCst);
    });
    let failures = failures.into_inner().unwrap();
    eprintln!(
        "{} seeds ({}..{}) in {:.1} s on {workers} threads, {} failed: {}",
        seeds.end - seeds.start,
        seeds.start,
        seeds.end,
        started.elapsed().as_secs_f64(),
        failures.len(),
        COVERAGE.summary()
    );
    assert!(failures.is_empty(), "failing seeds: {:?}", failures.iter().map(|f| f.0).collect::<Vec<_>>());
}
