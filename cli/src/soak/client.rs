//! One soak client: a thread that drives `redodb serve` over the wire (tokio-postgres on
//! a current-thread runtime of its own) with a mixed workload on its own keys, and keeps
//! the [`Model`] of what the server must show it and must keep.
//!
//! Each unit of work is one transaction shape, chosen at random:
//! - a DML statement in autocommit (INSERT, UPDATE, UPDATE v = v + n, DELETE, an UPDATE
//!   of a key that is not there, a range UPDATE), prepared, with bind variables;
//! - a transaction block of several, some inserts pipelined (binds sent before the first
//!   answer), ended by COMMIT WRITE in each of the four modes, a plain COMMIT (the
//!   session's mode), `SET LOCAL synchronous_commit = off` and COMMIT, or ROLLBACK;
//! - savepoints: ROLLBACK TO or RELEASE inside a block;
//! - COPY FROM STDIN in text or csv (escapes, quotes, NULLs, multi-byte text), in
//!   autocommit or in a block;
//! - two commits in one call (a simple query `BEGIN; ...; COMMIT ...; BEGIN; ...;
//!   COMMIT`): a plain COMMIT there is requested as NOWAIT and the call waits once at its
//!   end (Oracle's call-level commit optimisation);
//! - cursors: DECLARE / FETCH n / CLOSE in a block (also WITH HOLD, read after the
//!   commit), and protocol portals fetched n rows per Execute;
//! - reads (range, point, count and sum) compared with the model;
//! - session commit settings: ALTER SESSION SET commit_wait / commit_logging, SET and
//!   RESET synchronous_commit, checked back through SHOW and v$parameter;
//! - cancel requests: an UPDATE waiting for a row lock the client's second connection
//!   holds, and a long SELECT, each cancelled once `v$session` shows it waiting or
//!   running, so the cancel can only hit that statement; it must fail with 57014 and
//!   leave the session usable (ROLLBACK TO SAVEPOINT recovers the block).
//!
//! Every answer is checked: rows affected, rows read, the session's settings. A check
//! that fails, a server error, or a connection lost while no kill was under way is an
//! unexpected error; a connection lost after the coordinator raised its kill flag is the
//! injected crash. Either way the client stops for the rest of the life: the commit in
//! flight, if any, stays in doubt at the end of its journal.

use std::collections::BTreeMap;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::{select, try_join_all, Either};
use futures_util::SinkExt;
use redo::sim::SimRng;
use serde::Serialize;
use tokio_postgres::{CancelToken, Client as PgClient, NoTls, SimpleQueryMessage, Statement};

use super::model::{Key, Model, Row, Rows, Verified};
use super::server::{connection_lost, describe, sqlstate};

/// The table of the clients' rows: each client owns `client = its id`.
pub const ROWS_TABLE: &str = "soak_rows";
/// One row per client, locked by its second connection for the lock-wait cancels; its
/// `v` must stay 0 (every change to it is rolled back or cancelled).
pub const LOCKS_TABLE: &str = "soak_locks";
/// Rows the long SELECT scans; never changed.
pub const SCAN_TABLE: &str = "soak_scan";
pub const SCAN_ROWS: i64 = 4000;
/// Each scanned row builds a string 5000 times its 100-byte pad (500 KB): a scan of the
/// table takes a second or more, and the server looks for a cancel every 256 rows.
const SCAN_SQL: &str = "SELECT count(*) FROM soak_scan WHERE length(repeat(pad, 5000)) > 0";

/// The statements that create the soak's tables (one transaction, committed WAIT).
pub fn schema_sql(clients: u32) -> Vec<String> {
    let mut sql = vec![
        format!(
            "CREATE TABLE {ROWS_TABLE} (client BIGINT, k BIGINT, v BIGINT, note TEXT, PRIMARY KEY (client, k))"
        ),
        format!("CREATE TABLE {LOCKS_TABLE} (client BIGINT PRIMARY KEY, v BIGINT)"),
        format!("CREATE TABLE {SCAN_TABLE} (n BIGINT PRIMARY KEY, pad TEXT)"),
    ];
    let locks: Vec<String> = (0..clients).map(|c| format!("({c}, 0)")).collect();
    sql.push(format!("INSERT INTO {LOCKS_TABLE} (client, v) VALUES {}", locks.join(", ")));
    let pad = "soak scan pad ".repeat(8)[..100].to_string();
    for chunk in (0..SCAN_ROWS).collect::<Vec<_>>().chunks(500) {
        let values: Vec<String> = chunk.iter().map(|n| format!("({n}, '{pad}')")).collect();
        sql.push(format!("INSERT INTO {SCAN_TABLE} (n, pad) VALUES {}", values.join(", ")));
    }
    sql
}

/// A commit mode as the server counts it (`commit wait/nowait requested`, `commit
/// batch/immediate requested`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    pub wait: bool,
    pub batch: bool,
}

impl Mode {
    fn sql(self) -> String {
        format!(
            "WRITE {} {}",
            if self.wait { "WAIT" } else { "NOWAIT" },
            if self.batch { "BATCH" } else { "IMMEDIATE" }
        )
    }
}

/// Commits by mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ModeCounts {
    pub wait_immediate: u64,
    pub wait_batch: u64,
    pub nowait_immediate: u64,
    pub nowait_batch: u64,
}

impl ModeCounts {
    fn add(&mut self, mode: Mode) {
        *match (mode.wait, mode.batch) {
            (true, false) => &mut self.wait_immediate,
            (true, true) => &mut self.wait_batch,
            (false, false) => &mut self.nowait_immediate,
            (false, true) => &mut self.nowait_batch,
        } += 1;
    }

    pub fn total(&self) -> u64 {
        self.wait_immediate + self.wait_batch + self.nowait_immediate + self.nowait_batch
    }

    pub fn plus(&self, o: &ModeCounts) -> ModeCounts {
        ModeCounts {
            wait_immediate: self.wait_immediate + o.wait_immediate,
            wait_batch: self.wait_batch + o.wait_batch,
            nowait_immediate: self.nowait_immediate + o.nowait_immediate,
            nowait_batch: self.nowait_batch + o.nowait_batch,
        }
    }
}

/// An error that was not injected.
#[derive(Clone, Debug, Serialize)]
pub struct UnexpectedError {
    /// Seconds since the run started.
    pub t_s: f64,
    pub client: Option<i64>,
    /// `server error 57014`, `connection lost without a kill`, `wrong answer`, ...
    pub kind: String,
    pub doing: String,
    pub message: String,
}

/// What a client did over the whole run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ClientStats {
    /// Acknowledged commits, by the mode the server was asked for.
    pub commits: ModeCounts,
    /// Acknowledged commits by how their mode was chosen.
    pub commits_by_path: BTreeMap<&'static str, u64>,
    /// Acknowledged commits that promised durability (a WAIT, or a call that waited).
    pub durable_acks: u64,
    /// Operations by kind (rows for COPY, fetches for cursors).
    pub operations: BTreeMap<&'static str, u64>,
    pub cancels_lock_wait: u64,
    pub cancels_long_select: u64,
    /// Long SELECTs that ended before the cancel reached them (no error: counted apart).
    pub long_select_finished_first: u64,
    /// Calls cut off by the injected kill.
    pub connections_lost_at_kill: u64,
}

impl ClientStats {
    fn op(&mut self, kind: &'static str, n: u64) {
        *self.operations.entry(kind).or_default() += n;
    }

    pub fn merge(&mut self, o: &ClientStats) {
        self.commits = self.commits.plus(&o.commits);
        for (k, v) in &o.commits_by_path {
            *self.commits_by_path.entry(k).or_default() += v;
        }
        self.durable_acks += o.durable_acks;
        for (k, v) in &o.operations {
            *self.operations.entry(k).or_default() += v;
        }
        self.cancels_lock_wait += o.cancels_lock_wait;
        self.cancels_long_select += o.cancels_long_select;
        self.long_select_finished_first += o.long_select_finished_first;
        self.connections_lost_at_kill += o.connections_lost_at_kill;
    }
}

/// The coordinator's signals to the clients of one server life.
pub struct Life {
    /// Raised before the SIGKILL: a connection lost from now on is the injected crash.
    pub killing: AtomicBool,
    /// Finish the current unit and end the life.
    pub stop: AtomicBool,
    pub port: u16,
    /// The start of the run, for timestamps.
    pub run_start: Instant,
}

/// What the coordinator watches of a running client (for hangs and throughput).
#[derive(Default)]
pub struct Watch {
    /// Milliseconds since the run started, at the last answer the client received.
    pub progress_ms: AtomicU64,
    pub doing: Mutex<&'static str>,
    /// Acknowledged commits, the whole run.
    pub commits: AtomicU64,
}

/// How a client's life ended.
pub struct LifeEnd {
    /// Commits acknowledged in this life, by requested mode.
    pub commits: ModeCounts,
    pub unexpected: Vec<UnexpectedError>,
    /// Whether the life ended by the kill (else: stopped, or an unexpected error).
    pub killed: bool,
}

/// Why a unit stopped.
enum Failure {
    Pg { doing: &'static str, error: tokio_postgres::Error },
    Wrong { doing: &'static str, message: String },
}

type Step<T> = Result<T, Failure>;

fn pg(doing: &'static str) -> impl FnOnce(tokio_postgres::Error) -> Failure {
    move |error| Failure::Pg { doing, error }
}

fn wrong(doing: &'static str, message: String) -> Failure {
    Failure::Wrong { doing, message }
}

/// One change a DML statement makes, predicted from the model.
#[derive(Clone, Debug)]
enum Dml {
    Insert(Key, Row),
    Update(Key, Row),
    Add(Key, i64),
    Delete(Key),
    /// An UPDATE of a key the client does not have: 0 rows.
    UpdateMissing(Key),
    /// `UPDATE ... SET v = v + n WHERE k >= lo AND k < hi`.
    AddRange(Key, Key, i64),
}

/// The prepared statements of a connection.
struct Statements {
    insert: Statement,
    update: Statement,
    add: Statement,
    delete: Statement,
    add_range: Statement,
    range: Statement,
    point: Statement,
    lock_row: Statement,
}

struct Conns {
    main: PgClient,
    helper: PgClient,
    main_sid: i64,
    cancel: CancelToken,
    st: Statements,
    helper_session_of: Statement,
    helper_lock_row: Statement,
}

/// The session's commit settings as the client set them.
#[derive(Clone, Copy, Debug)]
struct Session {
    mode: Mode,
    /// The system's (what RESET and DEFAULT go back to).
    system: Mode,
}

pub struct Client {
    pub id: i64,
    keys: i64,
    model: Model,
    rng: SimRng,
    pub stats: ClientStats,
    pub watch: Arc<Watch>,
    session: Session,
    /// Commits of the current life.
    life_commits: ModeCounts,
}

impl Client {
    pub fn new(id: i64, keys: i64, seed: u64) -> Client {
        let default = Mode { wait: true, batch: false };
        Client {
            id,
            keys,
            model: Model::new(),
            rng: SimRng::new(seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            stats: ClientStats::default(),
            watch: Arc::new(Watch::default()),
            session: Session { mode: default, system: default },
            life_commits: ModeCounts::default(),
        }
    }

    /// Checks the rows the restarted server has for this client against the journal, and
    /// continues from them.
    pub fn verify(&mut self, recovered: Rows, exact: bool) -> Result<Verified, String> {
        self.model.verify(recovered, exact).map_err(|m| m.message)
    }

    /// Runs units against the server of `life` until it is stopped or killed, or an
    /// unexpected error ends it.
    pub fn run_life(&mut self, life: &Life) -> LifeEnd {
        self.life_commits = ModeCounts::default();
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(r) => r,
            Err(e) => {
                return LifeEnd {
                    commits: ModeCounts::default(),
                    unexpected: vec![self.unexpected(
                        life,
                        "tokio runtime",
                        "starting the runtime",
                        e.to_string(),
                    )],
                    killed: false,
                }
            }
        };
        let outcome = runtime.block_on(self.life(life));
        let mut end = LifeEnd { commits: self.life_commits, unexpected: Vec::new(), killed: false };
        if let Err(failure) = outcome {
            // The open transaction is gone with the session (rolled back, or never
            // committed by the dead server); a commit in flight stays in doubt.
            self.model.rollback();
            match failure {
                Failure::Pg { error, .. }
                    if sqlstate(&error).is_none() && life.killing.load(Ordering::SeqCst) =>
                {
                    self.stats.connections_lost_at_kill += 1;
                    end.killed = true;
                }
                Failure::Pg { doing, error } => {
                    let kind = match sqlstate(&error) {
                        Some(code) => format!("server error {code}"),
                        None if connection_lost(&error) => "connection lost without a kill".to_string(),
                        None => "client error".to_string(),
                    };
                    end.unexpected.push(self.unexpected(life, &kind, doing, describe(&error)));
                }
                Failure::Wrong { doing, message } => {
                    end.unexpected.push(self.unexpected(life, "wrong answer", doing, message));
                }
            }
        }
        // The connections' tasks end with the runtime.
        drop(runtime);
        end
    }

    fn unexpected(&self, life: &Life, kind: &str, doing: &str, message: String) -> UnexpectedError {
        UnexpectedError {
            t_s: life.run_start.elapsed().as_secs_f64(),
            client: Some(self.id),
            kind: kind.to_string(),
            doing: doing.to_string(),
            message,
        }
    }

    async fn life(&mut self, life: &Life) -> Step<()> {
        self.doing(life, "connecting");
        let mut c = self.connect(life.port).await?;
        self.session.system = self.system_mode(&c).await?;
        self.session.mode = self.session.system;
        while !life.stop.load(Ordering::SeqCst) {
            self.unit(&mut c, life).await?;
            self.progress(life);
        }
        Ok(())
    }

    fn doing(&self, life: &Life, what: &'static str) {
        *self.watch.doing.lock().unwrap_or_else(|p| p.into_inner()) = what;
        self.progress(life);
    }

    fn progress(&self, life: &Life) {
        self.watch.progress_ms.store(life.run_start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    async fn connect(&mut self, port: u16) -> Step<Conns> {
        let main = open(port, &format!("soak{}", self.id)).await?;
        let helper = open(port, &format!("soak{}_helper", self.id)).await?;
        let st = Statements {
            insert: prep(&main, "INSERT INTO soak_rows (client, k, v, note) VALUES ($1, $2, $3, $4)").await?,
            update: prep(&main, "UPDATE soak_rows SET v = $3, note = $4 WHERE client = $1 AND k = $2")
                .await?,
            add: prep(&main, "UPDATE soak_rows SET v = v + $3 WHERE client = $1 AND k = $2").await?,
            delete: prep(&main, "DELETE FROM soak_rows WHERE client = $1 AND k = $2").await?,
            add_range: prep(
                &main,
                "UPDATE soak_rows SET v = v + $4 WHERE client = $1 AND k >= $2 AND k < $3",
            )
            .await?,
            range: prep(
                &main,
                "SELECT k, v, note FROM soak_rows WHERE client = $1 AND k >= $2 AND k < $3 ORDER BY k",
            )
            .await?,
            point: prep(&main, "SELECT v, note FROM soak_rows WHERE client = $1 AND k = $2").await?,
            lock_row: prep(&main, "UPDATE soak_locks SET v = v + 1 WHERE client = $1").await?,
        };
        let main_sid = first_text(&main, "SELECT pg_backend_pid()", "connecting").await?;
        let main_sid = main_sid
            .parse::<i64>()
            .map_err(|_| wrong("connecting", format!("pg_backend_pid() returned {main_sid:?}")))?;
        let helper_session_of =
            prep(&helper, "SELECT status, event, sql_text FROM v$session WHERE sid = $1::BIGINT").await?;
        let helper_lock_row = prep(&helper, "UPDATE soak_locks SET v = v + 1 WHERE client = $1").await?;
        let cancel = main.cancel_token();
        Ok(Conns { main, helper, main_sid, cancel, st, helper_session_of, helper_lock_row })
    }

    /// The system's commit settings (what a new session starts with).
    async fn system_mode(&self, c: &Conns) -> Step<Mode> {
        let (wait, logging) = session_settings(c, "reading the commit settings").await?;
        match (wait.as_str(), logging.as_str()) {
            ("WAIT" | "NOWAIT", "IMMEDIATE" | "BATCH") => Ok(Mode { wait: wait == "WAIT", batch: logging == "BATCH" }),
            _ => Err(wrong(
                "reading the commit settings",
                format!("commit_wait {wait}, commit_logging {logging}: the soak models WAIT/NOWAIT and IMMEDIATE/BATCH"),
            )),
        }
    }

    /// One unit of work, chosen at random (the shares are per thousand units).
    async fn unit(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        match self.rng.upto(999) {
            0..=279 => self.autocommit_dml(c, life).await,
            280..=519 => self.block(c, life).await,
            520..=569 => self.savepoints(c, life).await,
            570..=639 => self.copy(c, life).await,
            640..=689 => self.two_commits_one_call(c, life).await,
            690..=739 => self.cursor(c, life).await,
            740..=759 => self.portal(c, life).await,
            760..=949 => self.read(c, life).await,
            950..=969 => self.set_mode(c, life).await,
            970..=995 => self.autocommit_dml(c, life).await,
            996..=998 => self.cancel_lock_wait(c, life).await,
            _ => self.cancel_long_select(c, life).await,
        }
    }

    // ---------------------------------------------------------------------------------
    // Choosing changes
    // ---------------------------------------------------------------------------------

    fn random_key(&mut self) -> Key {
        self.rng.upto(self.keys as u64 - 1) as Key
    }

    fn absent_key(&mut self) -> Option<Key> {
        for _ in 0..16 {
            let k = self.random_key();
            if self.model.get(k).is_none() {
                return Some(k);
            }
        }
        (0..self.keys).find(|k| self.model.get(*k).is_none())
    }

    fn present_key(&mut self) -> Option<Key> {
        let from = self.random_key();
        let view = self.model.view();
        view.range(from..).next().or_else(|| view.iter().next()).map(|(k, _)| *k)
    }

    /// A note: NULL, or text with what escaping must get right (quotes, backslashes,
    /// tabs, newlines, delimiters, multi-byte characters).
    fn note(&mut self) -> Option<String> {
        const PIECES: &[&str] = &[
            "a", "b", "c", "x", "y", "z", "0", "7", " ", " ", "'", "\"", "\\", "\t", "\n", "\r\n", ",", ";",
            "|", "é", "ß", "€", "日本", "\\N", "NULL", "--", "/*", "$1",
        ];
        if self.rng.chance(1, 10) {
            return None;
        }
        let len = self.rng.upto(60);
        Some((0..len).map(|_| PIECES[self.rng.upto(PIECES.len() as u64 - 1) as usize]).collect())
    }

    fn new_row(&mut self) -> Row {
        Row { v: self.rng.upto(1_000_000) as i64, note: self.note() }
    }

    /// A change to make, kept near half of the key space full.
    fn choose_dml(&mut self) -> Dml {
        let fill = self.model.len() as f64 / self.keys as f64;
        let mut kind = self.rng.upto(99);
        if kind < 35 && fill > 0.6 {
            kind = 80;
        } else if (75..90).contains(&kind) && fill < 0.4 {
            kind = 0;
        }
        let insert = |s: &mut Client| s.absent_key().map(|k| Dml::Insert(k, s.new_row()));
        let update = |s: &mut Client| s.present_key().map(|k| Dml::Update(k, s.new_row()));
        let chosen = match kind {
            0..=34 => insert(self).or_else(|| update(self)),
            35..=59 => update(self).or_else(|| insert(self)),
            60..=74 => self.present_key().map(|k| Dml::Add(k, 1 + self.rng.upto(9) as i64)),
            75..=89 => self.present_key().map(Dml::Delete),
            90..=94 => self.absent_key().map(Dml::UpdateMissing),
            _ => {
                let lo = self.random_key();
                Some(Dml::AddRange(lo, lo + 1 + self.rng.upto(40) as Key, 1))
            }
        };
        chosen.or_else(|| insert(self)).or_else(|| update(self)).expect("a key is either present or absent")
    }

    /// Applies `dml` to the model's open transaction; returns the rows it must affect.
    fn apply(&mut self, dml: &Dml) -> u64 {
        match dml {
            Dml::Insert(k, row) | Dml::Update(k, row) => {
                self.model.set(*k, Some(row.clone()));
                1
            }
            Dml::Add(k, n) => {
                let mut row = self.model.get(*k).cloned().expect("an added-to key is present");
                row.v += n;
                self.model.set(*k, Some(row));
                1
            }
            Dml::Delete(k) => {
                self.model.set(*k, None);
                1
            }
            Dml::UpdateMissing(_) => 0,
            Dml::AddRange(lo, hi, n) => {
                let rows: Vec<(Key, Row)> =
                    self.model.view().range(*lo..*hi).map(|(k, r)| (*k, r.clone())).collect();
                for (k, mut row) in rows.iter().cloned() {
                    row.v += n;
                    self.model.set(k, Some(row));
                }
                rows.len() as u64
            }
        }
    }

    /// Applies `dml` to the model, runs it with bind variables and checks its row count.
    async fn dml(&mut self, c: &Conns, doing: &'static str) -> Step<()> {
        let dml = self.choose_dml();
        let expected = self.apply(&dml);
        let n = send(c, self.id, &dml).await.map_err(pg(doing))?;
        self.check_count(doing, &dml, n, expected)
    }

    fn check_count(&mut self, doing: &'static str, dml: &Dml, n: u64, expected: u64) -> Step<()> {
        if n != expected {
            return Err(wrong(doing, format!("{dml:?} affected {n} rows, the model says {expected}")));
        }
        self.stats.op(dml_kind(dml), 1);
        Ok(())
    }

    fn acked(&mut self, seq: Option<u64>, requested: Mode, durable: bool, path: &'static str) {
        let Some(seq) = seq else { return };
        self.model.acknowledge(seq, durable);
        self.stats.commits.add(requested);
        self.life_commits.add(requested);
        *self.stats.commits_by_path.entry(path).or_default() += 1;
        if durable {
            self.stats.durable_acks += 1;
        }
        self.watch.commits.fetch_add(1, Ordering::Relaxed);
    }

    // ---------------------------------------------------------------------------------
    // Units
    // ---------------------------------------------------------------------------------

    async fn autocommit_dml(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "DML in autocommit";
        self.doing(life, DOING);
        self.model.begin();
        let dml = self.choose_dml();
        let expected = self.apply(&dml);
        let seq = self.model.commit_requested();
        let n = send(c, self.id, &dml).await.map_err(pg(DOING))?;
        self.check_count(DOING, &dml, n, expected)?;
        let mode = self.session.mode;
        self.acked(seq, mode, mode.wait, "autocommit (session mode)");
        Ok(())
    }

    async fn block(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "transaction block";
        self.doing(life, DOING);
        exec(&c.main, "BEGIN", DOING).await?;
        self.model.begin();
        for _ in 0..=self.rng.upto(5) {
            if self.rng.chance(1, 5) {
                self.pipelined_inserts(c).await?;
            } else {
                self.dml(c, DOING).await?;
            }
        }
        if self.rng.chance(1, 4) {
            self.check_range(c, "SELECT in a block").await?;
        }
        self.end_block(c).await
    }

    /// Inserts sent as one pipeline: every Bind/Execute/Sync before the first answer.
    async fn pipelined_inserts(&mut self, c: &Conns) -> Step<()> {
        const DOING: &str = "pipelined INSERTs";
        let mut inserts = Vec::new();
        for _ in 0..2 + self.rng.upto(8) {
            let Some(k) = self.absent_key() else { break };
            let dml = Dml::Insert(k, self.new_row());
            self.apply(&dml);
            inserts.push(dml);
        }
        let counts = try_join_all(inserts.iter().map(|d| send(c, self.id, d))).await.map_err(pg(DOING))?;
        for (dml, n) in inserts.iter().zip(counts) {
            self.check_count(DOING, dml, n, 1)?;
        }
        self.stats.op("pipelines", 1);
        Ok(())
    }

    /// Ends the open block: ROLLBACK, or COMMIT in one of its forms.
    async fn end_block(&mut self, c: &Conns) -> Step<()> {
        const DOING: &str = "ending a block";
        match self.rng.upto(9) {
            0 => {
                exec(&c.main, "ROLLBACK", DOING).await?;
                self.model.rollback();
                self.stats.op("rollbacks", 1);
                Ok(())
            }
            1..=4 => {
                let mode = Mode { wait: self.rng.chance(1, 2), batch: self.rng.chance(1, 2) };
                self.commit(
                    c,
                    &format!("COMMIT {}", mode.sql()),
                    mode,
                    mode.wait,
                    "COMMIT WRITE <wait> <logging>",
                )
                .await
            }
            5 => {
                // One option given, the other from the session.
                let session = self.session.mode;
                let (sql, mode) = if self.rng.chance(1, 2) {
                    let wait = self.rng.chance(1, 2);
                    (
                        format!("COMMIT WRITE {}", if wait { "WAIT" } else { "NOWAIT" }),
                        Mode { wait, ..session },
                    )
                } else {
                    let batch = self.rng.chance(1, 2);
                    (
                        format!("COMMIT WRITE {}", if batch { "BATCH" } else { "IMMEDIATE" }),
                        Mode { batch, ..session },
                    )
                };
                self.commit(c, &sql, mode, mode.wait, "COMMIT WRITE <one option>").await
            }
            6..=7 => {
                let mode = self.session.mode;
                self.commit(c, "COMMIT", mode, mode.wait, "COMMIT (session mode)").await
            }
            _ => {
                exec(&c.main, "SET LOCAL synchronous_commit = off", DOING).await?;
                let mode = Mode { wait: false, ..self.session.mode };
                self.commit(c, "COMMIT", mode, false, "SET LOCAL synchronous_commit = off; COMMIT").await
            }
        }
    }

    async fn commit(
        &mut self,
        c: &Conns,
        sql: &str,
        mode: Mode,
        durable: bool,
        path: &'static str,
    ) -> Step<()> {
        let seq = self.model.commit_requested();
        exec(&c.main, sql, "COMMIT").await?;
        self.acked(seq, mode, durable, path);
        Ok(())
    }

    async fn savepoints(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "savepoints";
        self.doing(life, DOING);
        exec(&c.main, "BEGIN", DOING).await?;
        self.model.begin();
        self.dml(c, DOING).await?;
        exec(&c.main, "SAVEPOINT soak_a", DOING).await?;
        self.model.savepoint("soak_a");
        self.dml(c, DOING).await?;
        self.dml(c, DOING).await?;
        if self.rng.chance(2, 3) {
            exec(&c.main, "ROLLBACK TO SAVEPOINT soak_a", DOING).await?;
            self.model.rollback_to("soak_a");
            self.stats.op("rollbacks to savepoint", 1);
        } else {
            exec(&c.main, "RELEASE SAVEPOINT soak_a", DOING).await?;
        }
        self.dml(c, DOING).await?;
        self.end_block(c).await
    }

    async fn copy(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "COPY FROM STDIN";
        self.doing(life, DOING);
        let csv = self.rng.chance(1, 2);
        let in_block = self.rng.chance(2, 5);
        if in_block {
            exec(&c.main, "BEGIN", DOING).await?;
        }
        self.model.begin();
        let mut data = String::new();
        let mut rows = 0u64;
        for _ in 0..1 + self.rng.upto(39) {
            let Some(k) = self.absent_key() else { break };
            let row = self.new_row();
            data.push_str(&copy_line(self.id, k, &row, csv));
            self.model.set(k, Some(row));
            rows += 1;
        }
        let seq = if in_block { None } else { self.model.commit_requested() };
        let statement = if csv {
            "COPY soak_rows (client, k, v, note) FROM STDIN WITH (FORMAT csv)"
        } else {
            "COPY soak_rows (client, k, v, note) FROM STDIN"
        };
        // The data in up to three CopyData messages, cut anywhere (inside a line, an
        // escape or a multi-byte character).
        let bytes = data.into_bytes();
        let mut cuts = vec![0, bytes.len()];
        for _ in 0..self.rng.upto(2) {
            cuts.push(self.rng.upto(bytes.len() as u64) as usize);
        }
        cuts.sort_unstable();
        let copied = async {
            let sink = c.main.copy_in::<_, Bytes>(statement).await?;
            let mut sink = pin!(sink);
            for w in cuts.windows(2) {
                sink.send(Bytes::copy_from_slice(&bytes[w[0]..w[1]])).await?;
            }
            sink.as_mut().finish().await
        }
        .await
        .map_err(pg(DOING))?;
        if copied != rows {
            return Err(wrong(DOING, format!("COPY of {rows} rows answered COPY {copied}")));
        }
        self.stats.op(if csv { "COPY rows (csv)" } else { "COPY rows (text)" }, rows);
        if in_block {
            if self.rng.chance(1, 2) {
                self.dml(c, DOING).await?;
            }
            self.end_block(c).await
        } else {
            let mode = self.session.mode;
            self.acked(seq, mode, mode.wait, "COPY in autocommit (session mode)");
            Ok(())
        }
    }

    /// Two transactions in one Query message. A COMMIT WRITE there is honoured as
    /// written; a plain COMMIT is requested as NOWAIT and the call waits once, at its
    /// end, if the session's mode is WAIT (the call-level commit optimisation).
    async fn two_commits_one_call(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "two commits in one call";
        self.doing(life, DOING);
        let mut sql = Vec::new();
        let mut expected_counts = Vec::new();
        let mut commits = Vec::new();
        let mut dmls = Vec::new();
        for _ in 0..2 {
            sql.push("BEGIN".to_string());
            expected_counts.push(0);
            self.model.begin();
            for _ in 0..=self.rng.upto(1) {
                let dml = self.choose_dml();
                expected_counts.push(self.apply(&dml));
                sql.push(literal_sql(self.id, &dml));
                dmls.push(dml);
            }
            let session = self.session.mode;
            let (text, requested, durable, path) = if self.rng.chance(1, 2) {
                let mode = Mode { wait: self.rng.chance(1, 2), batch: self.rng.chance(1, 2) };
                (format!("COMMIT {}", mode.sql()), mode, mode.wait, "COMMIT WRITE in a call of two commits")
            } else {
                (
                    "COMMIT".to_string(),
                    Mode { wait: false, ..session },
                    session.wait,
                    "COMMIT in a call of two commits",
                )
            };
            sql.push(text);
            expected_counts.push(0);
            commits.push((self.model.commit_requested(), requested, durable, path));
        }
        let messages = c.main.simple_query(&sql.join("; ")).await.map_err(pg(DOING))?;
        let counts: Vec<u64> = messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::CommandComplete(n) => Some(n.to_owned()),
                _ => None,
            })
            .collect();
        if counts != expected_counts {
            return Err(wrong(
                DOING,
                format!(
                    "{:?} answered row counts {counts:?}, the model says {expected_counts:?}",
                    sql.join("; ")
                ),
            ));
        }
        for dml in &dmls {
            self.stats.op(dml_kind(dml), 1);
        }
        for (seq, requested, durable, path) in commits {
            self.acked(seq, requested, durable, path);
        }
        self.stats.op("calls of two commits", 1);
        Ok(())
    }

    /// DECLARE, FETCH n until the end, CLOSE; the rows must be the model's.
    async fn cursor(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "cursor";
        self.doing(life, DOING);
        let hold = self.rng.chance(1, 3);
        exec(&c.main, "BEGIN", DOING).await?;
        self.model.begin();
        if !hold && self.rng.chance(1, 2) {
            // The cursor must see the transaction's own change.
            self.dml(c, DOING).await?;
        }
        let lo = self.random_key();
        let expected: Vec<(Key, Row)> = self.model.view().range(lo..).map(|(k, r)| (*k, r.clone())).collect();
        exec(
            &c.main,
            &format!(
                "DECLARE soak_cursor CURSOR {} FOR SELECT k, v, note FROM soak_rows WHERE client = {} AND k >= {lo} \
                 ORDER BY k",
                if hold { "WITH HOLD" } else { "WITHOUT HOLD" },
                self.id
            ),
            DOING,
        )
        .await?;
        if hold {
            // Read after its transaction commits (nothing to commit: no change).
            exec(&c.main, "COMMIT", DOING).await?;
            self.model.rollback();
        }
        let per_fetch = 1 + self.rng.upto(200) as usize;
        let mut got = Vec::new();
        loop {
            let rows = simple_rows(&c.main, &format!("FETCH {per_fetch} FROM soak_cursor"), DOING).await?;
            self.stats.op("cursor fetches", 1);
            let n = rows.len();
            for row in rows {
                got.push(text_row(&row, DOING)?);
            }
            if n < per_fetch {
                break;
            }
        }
        exec(&c.main, "CLOSE soak_cursor", DOING).await?;
        compare_rows(DOING, &got, &expected)?;
        if hold {
            Ok(())
        } else {
            self.end_block(c).await
        }
    }

    /// The range statement through a protocol portal, n rows per Execute.
    async fn portal(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "portal";
        self.doing(life, DOING);
        let lo = self.random_key();
        let hi = lo + 1 + self.rng.upto(300) as Key;
        let expected: Vec<(Key, Row)> =
            self.model.view().range(lo..hi).map(|(k, r)| (*k, r.clone())).collect();
        let per_fetch = 1 + self.rng.upto(40) as i32;
        let Conns { main, st, .. } = c;
        let transaction = main.transaction().await.map_err(pg(DOING))?;
        let portal = transaction.bind(&st.range, &[&self.id, &lo, &hi]).await.map_err(pg(DOING))?;
        let mut got = Vec::new();
        loop {
            let rows = transaction.query_portal(&portal, per_fetch).await.map_err(pg(DOING))?;
            self.stats.op("portal fetches", 1);
            let n = rows.len();
            for row in &rows {
                got.push(typed_row(row, DOING)?);
            }
            if n < per_fetch as usize {
                break;
            }
        }
        drop(portal);
        transaction.commit().await.map_err(pg(DOING))?;
        compare_rows(DOING, &got, &expected)
    }

    async fn read(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        self.doing(life, "SELECT");
        match self.rng.upto(2) {
            0 => self.check_range(c, "range SELECT").await,
            1 => {
                const DOING: &str = "point SELECT";
                let k = self.random_key();
                let rows = c.main.query(&c.st.point, &[&self.id, &k]).await.map_err(pg(DOING))?;
                let mut got = Vec::new();
                for row in &rows {
                    got.push((k, Row { v: column(row, 0, DOING)?, note: column(row, 1, DOING)? }));
                }
                let expected: Vec<(Key, Row)> =
                    self.model.get(k).map(|r| (k, r.clone())).into_iter().collect();
                self.stats.op("selects", 1);
                compare_rows(DOING, &got, &expected)
            }
            _ => {
                const DOING: &str = "count and sum";
                let row = simple_rows(
                    &c.main,
                    &format!("SELECT count(*), sum(v) FROM soak_rows WHERE client = {}", self.id),
                    DOING,
                )
                .await?;
                let got = row.first().map(|r| (r[0].clone(), r[1].clone()));
                let view = self.model.view();
                let sum: i64 = view.values().map(|r| r.v).sum();
                let expected = (Some(view.len().to_string()), (!view.is_empty()).then(|| sum.to_string()));
                self.stats.op("selects", 1);
                if got.as_ref() != Some(&expected) {
                    return Err(wrong(DOING, format!("count and sum {got:?}, the model says {expected:?}")));
                }
                Ok(())
            }
        }
    }

    async fn check_range(&mut self, c: &Conns, doing: &'static str) -> Step<()> {
        let lo = self.random_key();
        let hi = lo + 1 + self.rng.upto(100) as Key;
        let rows = c.main.query(&c.st.range, &[&self.id, &lo, &hi]).await.map_err(pg(doing))?;
        let got = rows.iter().map(|r| typed_row(r, doing)).collect::<Step<Vec<_>>>()?;
        let expected: Vec<(Key, Row)> =
            self.model.view().range(lo..hi).map(|(k, r)| (*k, r.clone())).collect();
        self.stats.op("selects", 1);
        compare_rows(doing, &got, &expected)
    }

    /// Changes the session's commit settings one of the ways a client can, then checks
    /// them through SHOW and v$parameter.
    async fn set_mode(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "session commit settings";
        self.doing(life, DOING);
        let system = self.session.system;
        let mode = &mut self.session.mode;
        let sql = match self.rng.upto(99) {
            0..=19 => {
                mode.wait = self.rng.chance(1, 2);
                format!("ALTER SESSION SET commit_wait = {}", if mode.wait { "WAIT" } else { "NOWAIT" })
            }
            20..=39 => {
                mode.batch = self.rng.chance(1, 2);
                format!(
                    "ALTER SESSION SET commit_logging = '{}'",
                    if mode.batch { "BATCH" } else { "IMMEDIATE" }
                )
            }
            40..=59 => {
                mode.wait = self.rng.chance(1, 2);
                format!("SET synchronous_commit = {}", if mode.wait { "on" } else { "off" })
            }
            60..=69 => {
                mode.wait = system.wait;
                "RESET synchronous_commit".to_string()
            }
            70..=79 => {
                *mode = system;
                "ALTER SESSION SET commit_wait = DEFAULT commit_logging = DEFAULT".to_string()
            }
            80..=98 => {
                *mode = Mode { wait: self.rng.chance(1, 2), batch: self.rng.chance(1, 2) };
                format!(
                    "ALTER SESSION SET commit_logging = {} commit_wait = {}",
                    if mode.batch { "BATCH" } else { "IMMEDIATE" },
                    if mode.wait { "WAIT" } else { "NOWAIT" }
                )
            }
            _ => {
                // Deprecated (the server logs a warning each time): rarely.
                *mode = Mode { wait: self.rng.chance(1, 2), batch: self.rng.chance(1, 2) };
                format!(
                    "ALTER SESSION SET commit_write = '{},{}'",
                    if mode.wait { "wait" } else { "nowait" },
                    if mode.batch { "batch" } else { "immediate" }
                )
            }
        };
        exec(&c.main, &sql, DOING).await?;
        self.stats.op("commit setting changes", 1);
        let expected = self.session.mode;
        let show = first_text(&c.main, "SHOW synchronous_commit", DOING).await?;
        let (wait, logging) = session_settings(c, DOING).await?;
        let expected_show = if expected.wait { "on" } else { "off" };
        let expected_wait = if expected.wait { "WAIT" } else { "NOWAIT" };
        let expected_logging = if expected.batch { "BATCH" } else { "IMMEDIATE" };
        if show != expected_show || wait != expected_wait || logging != expected_logging {
            return Err(wrong(
                DOING,
                format!(
                    "after {sql:?}: synchronous_commit {show}, commit_wait {wait}, commit_logging {logging}; \
                     expected {expected_show}, {expected_wait}, {expected_logging}"
                ),
            ));
        }
        Ok(())
    }

    /// An UPDATE waits for the row lock the client's second connection holds; once
    /// v$session shows it waiting, a cancel request must end it with 57014. In a block,
    /// ROLLBACK TO SAVEPOINT then makes the block usable and it commits.
    async fn cancel_lock_wait(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "cancel of a lock wait";
        self.doing(life, DOING);
        exec(&c.helper, "BEGIN", DOING).await?;
        let locked = c.helper.execute(&c.helper_lock_row, &[&self.id]).await.map_err(pg(DOING))?;
        if locked != 1 {
            return Err(wrong(DOING, format!("the lock row of client {} updated {locked} rows", self.id)));
        }
        let in_block = self.rng.chance(1, 2);
        if in_block {
            exec(&c.main, "BEGIN", DOING).await?;
            self.model.begin();
            self.dml(c, DOING).await?;
            exec(&c.main, "SAVEPOINT soak_before_lock", DOING).await?;
            self.model.savepoint("soak_before_lock");
        }
        let id = self.id;
        let conns: &Conns = c;
        let answer = {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&id];
            let waiter = pin!(conns.main.execute(&conns.st.lock_row, &params));
            let canceller = pin!(async {
                wait_for_session(conns, DOING, |_, event, _| event == "enq: TX - row lock contention")
                    .await?;
                conns.cancel.cancel_query(NoTls).await.map_err(pg(DOING))
            });
            match select(waiter, canceller).await {
                Either::Left((answer, canceller)) => {
                    if answer.as_ref().is_err_and(is_cancel) {
                        // Cancelled while the request's own connection was still closing.
                        let _ = tokio::time::timeout(Duration::from_secs(10), canceller).await;
                    }
                    answer
                }
                Either::Right((sent, waiter)) => {
                    sent?;
                    tokio::time::timeout(Duration::from_secs(10), waiter).await.map_err(|_| {
                        wrong(
                            DOING,
                            "the UPDATE still waited for the row lock 10 s after the cancel request".into(),
                        )
                    })?
                }
            }
        };
        match answer {
            Err(e) if is_cancel(&e) => self.stats.cancels_lock_wait += 1,
            Err(e) => return Err(pg(DOING)(e)),
            Ok(n) => {
                return Err(wrong(
                    DOING,
                    format!("the UPDATE of a row locked by another transaction updated {n} rows"),
                ))
            }
        }
        if in_block {
            exec(&c.main, "ROLLBACK TO SAVEPOINT soak_before_lock", DOING).await?;
            self.model.rollback_to("soak_before_lock");
            self.dml(c, DOING).await?;
            self.end_block(c).await?;
        }
        exec(&c.helper, "ROLLBACK", DOING).await
    }

    /// A SELECT that runs for seconds is cancelled once v$session shows it running.
    async fn cancel_long_select(&mut self, c: &mut Conns, life: &Life) -> Step<()> {
        const DOING: &str = "cancel of a long SELECT";
        self.doing(life, DOING);
        let delay_ms = self.rng.upto(30);
        let conns: &Conns = c;
        let query = pin!(conns.main.simple_query(SCAN_SQL));
        let canceller = pin!(async {
            wait_for_session(conns, DOING, |status, _, sql| status == "ACTIVE" && sql.contains("repeat(pad"))
                .await?;
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            conns.cancel.cancel_query(NoTls).await.map_err(pg(DOING))
        });
        let answer = match select(query, canceller).await {
            Either::Left((answer, canceller)) => {
                if answer.as_ref().is_err_and(is_cancel) {
                    let _ = tokio::time::timeout(Duration::from_secs(10), canceller).await;
                }
                answer
            }
            Either::Right((sent, query)) => {
                sent?;
                tokio::time::timeout(Duration::from_secs(30), query)
                    .await
                    .map_err(|_| wrong(DOING, "the SELECT still ran 30 s after the cancel request".into()))?
            }
        };
        match answer {
            Err(e) if is_cancel(&e) => self.stats.cancels_long_select += 1,
            Err(e) => return Err(pg(DOING)(e)),
            Ok(messages) => {
                let count = messages.iter().find_map(|m| match m {
                    SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                    _ => None,
                });
                if count != Some(SCAN_ROWS.to_string()) {
                    return Err(wrong(DOING, format!("the scan counted {count:?} rows of {SCAN_ROWS}")));
                }
                // A cancel may still be on its way: it must land while the session is
                // idle, where it is dropped, not on the next statement.
                self.stats.long_select_finished_first += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        Ok(())
    }
}

// -------------------------------------------------------------------------------------
// Wire helpers
// -------------------------------------------------------------------------------------

async fn open(port: u16, user: &str) -> Step<PgClient> {
    let (client, connection) =
        super::server::client_config(port, user).connect(NoTls).await.map_err(pg("connecting"))?;
    // The connection's I/O runs as a task of this thread's runtime; its end (the server
    // gone) surfaces as errors of the calls.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

async fn prep(client: &PgClient, sql: &str) -> Step<Statement> {
    client.prepare(sql).await.map_err(pg("preparing the statements"))
}

async fn exec(client: &PgClient, sql: &str, doing: &'static str) -> Step<()> {
    client.simple_query(sql).await.map(|_| ()).map_err(pg(doing))
}

/// The rows of a simple query, as text (None for NULL).
async fn simple_rows(client: &PgClient, sql: &str, doing: &'static str) -> Step<Vec<Vec<Option<String>>>> {
    let messages = client.simple_query(sql).await.map_err(pg(doing))?;
    Ok(messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect())
}

async fn first_text(client: &PgClient, sql: &str, doing: &'static str) -> Step<String> {
    let rows = simple_rows(client, sql, doing).await?;
    rows.first()
        .and_then(|r| r.first().cloned().flatten())
        .ok_or_else(|| wrong(doing, format!("{sql} returned no value")))
}

/// The session's commit_wait and commit_logging, as v$parameter shows them.
async fn session_settings(c: &Conns, doing: &'static str) -> Step<(String, String)> {
    let wait = first_text(&c.main, "SELECT value FROM v$parameter WHERE name = 'commit_wait'", doing).await?;
    let logging =
        first_text(&c.main, "SELECT value FROM v$parameter WHERE name = 'commit_logging'", doing).await?;
    Ok((wait.to_ascii_uppercase(), logging.to_ascii_uppercase()))
}

/// Polls v$session (on the second connection) until the main session's status, event
/// and SQL satisfy `seen`.
async fn wait_for_session(
    c: &Conns,
    doing: &'static str,
    seen: impl Fn(&str, &str, &str) -> bool,
) -> Step<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rows = c.helper.query(&c.helper_session_of, &[&c.main_sid]).await.map_err(pg(doing))?;
        if let Some(row) = rows.first() {
            let status: Option<String> = column(row, 0, doing)?;
            let event: Option<String> = column(row, 1, doing)?;
            let sql: Option<String> = column(row, 2, doing)?;
            if seen(
                status.as_deref().unwrap_or(""),
                event.as_deref().unwrap_or(""),
                sql.as_deref().unwrap_or(""),
            ) {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Err(wrong(
                doing,
                format!("v$session never showed session {} as expected within 30 s", c.main_sid),
            ));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn is_cancel(e: &tokio_postgres::Error) -> bool {
    sqlstate(e) == Some("57014")
}

fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a tokio_postgres::Row,
    i: usize,
    doing: &'static str,
) -> Step<T> {
    row.try_get(i).map_err(|e| wrong(doing, format!("column {i}: {e}")))
}

fn typed_row(row: &tokio_postgres::Row, doing: &'static str) -> Step<(Key, Row)> {
    Ok((column(row, 0, doing)?, Row { v: column(row, 1, doing)?, note: column(row, 2, doing)? }))
}

fn text_row(row: &[Option<String>], doing: &'static str) -> Step<(Key, Row)> {
    let int = |i: usize| -> Step<i64> {
        row.get(i)
            .cloned()
            .flatten()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| wrong(doing, format!("column {i} of {row:?} is not a number")))
    };
    Ok((int(0)?, Row { v: int(1)?, note: row.get(2).cloned().flatten() }))
}

fn compare_rows(doing: &'static str, got: &[(Key, Row)], expected: &[(Key, Row)]) -> Step<()> {
    if got == expected {
        return Ok(());
    }
    let first = got.iter().zip(expected).position(|(g, e)| g != e).unwrap_or(got.len().min(expected.len()));
    Err(wrong(
        doing,
        format!(
            "read {} rows, the model has {}; first difference at row {first}: read {:?}, model {:?}",
            got.len(),
            expected.len(),
            got.get(first),
            expected.get(first)
        ),
    ))
}

/// Runs `dml` with bind variables; returns the rows affected.
async fn send(c: &Conns, id: i64, dml: &Dml) -> Result<u64, tokio_postgres::Error> {
    let st = &c.st;
    match dml {
        Dml::Insert(k, row) => c.main.execute(&st.insert, &[&id, k, &row.v, &row.note]).await,
        Dml::Update(k, row) => c.main.execute(&st.update, &[&id, k, &row.v, &row.note]).await,
        Dml::Add(k, n) => c.main.execute(&st.add, &[&id, k, n]).await,
        Dml::Delete(k) => c.main.execute(&st.delete, &[&id, k]).await,
        Dml::UpdateMissing(k) => c.main.execute(&st.add, &[&id, k, &1i64]).await,
        Dml::AddRange(lo, hi, n) => c.main.execute(&st.add_range, &[&id, lo, hi, n]).await,
    }
}

fn dml_kind(dml: &Dml) -> &'static str {
    match dml {
        Dml::Insert(..) => "INSERT",
        Dml::Update(..) => "UPDATE",
        Dml::Add(..) => "UPDATE v = v + n",
        Dml::Delete(_) => "DELETE",
        Dml::UpdateMissing(_) => "UPDATE of a missing key",
        Dml::AddRange(..) => "UPDATE of a range",
    }
}

/// `dml` as SQL with literals (a note's quotes doubled).
fn literal_sql(id: i64, dml: &Dml) -> String {
    let text = |note: &Option<String>| match note {
        Some(n) => format!("'{}'", n.replace('\'', "''")),
        None => "NULL".into(),
    };
    match dml {
        Dml::Insert(k, r) => {
            format!(
                "INSERT INTO soak_rows (client, k, v, note) VALUES ({id}, {k}, {}, {})",
                r.v,
                text(&r.note)
            )
        }
        Dml::Update(k, r) => {
            format!(
                "UPDATE soak_rows SET v = {}, note = {} WHERE client = {id} AND k = {k}",
                r.v,
                text(&r.note)
            )
        }
        Dml::Add(k, n) => format!("UPDATE soak_rows SET v = v + {n} WHERE client = {id} AND k = {k}"),
        Dml::Delete(k) => format!("DELETE FROM soak_rows WHERE client = {id} AND k = {k}"),
        Dml::UpdateMissing(k) => format!("UPDATE soak_rows SET v = v + 1 WHERE client = {id} AND k = {k}"),
        Dml::AddRange(lo, hi, n) => {
            format!("UPDATE soak_rows SET v = v + {n} WHERE client = {id} AND k >= {lo} AND k < {hi}")
        }
    }
}

/// One line of COPY data: text format (tab-separated, backslash escapes, `\N` for NULL)
/// or csv (every value quoted, NULL an unquoted empty field).
fn copy_line(id: i64, k: Key, row: &Row, csv: bool) -> String {
    let note = match (&row.note, csv) {
        (None, false) => "\\N".to_string(),
        (None, true) => String::new(),
        (Some(n), false) => {
            let mut out = String::with_capacity(n.len());
            for ch in n.chars() {
                match ch {
                    '\\' => out.push_str("\\\\"),
                    '\t' => out.push_str("\\t"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    other => out.push(other),
                }
            }
            out
        }
        (Some(n), true) => format!("\"{}\"", n.replace('"', "\"\"")),
    };
    let sep = if csv { ',' } else { '\t' };
    format!("{id}{sep}{k}{sep}{}{sep}{note}\n", row.v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_lines_escape_what_each_format_needs() {
        let row = Row { v: 5, note: Some("a\tb\\c\nd\"e".into()) };
        assert_eq!(copy_line(1, 2, &row, false), "1\t2\t5\ta\\tb\\\\c\\nd\"e\n");
        assert_eq!(copy_line(1, 2, &row, true), "1,2,5,\"a\tb\\c\nd\"\"e\"\n");
        let null = Row { v: 5, note: None };
        assert_eq!(copy_line(1, 2, &null, false), "1\t2\t5\t\\N\n");
        assert_eq!(copy_line(1, 2, &null, true), "1,2,5,\n");
        let empty = Row { v: 5, note: Some(String::new()) };
        assert_eq!(copy_line(1, 2, &empty, true), "1,2,5,\"\"\n", "an empty string is not NULL");
    }

    #[test]
    fn literal_sql_doubles_quotes() {
        let sql = literal_sql(3, &Dml::Insert(4, Row { v: 1, note: Some("it's".into()) }));
        assert_eq!(sql, "INSERT INTO soak_rows (client, k, v, note) VALUES (3, 4, 1, 'it''s')");
    }
}
