//! Where the scenarios run: a [`Target`] opens [`Connection`]s that run SQL with `$n`
//! bind values, prepared statements and array inserts, and set their commit mode. The
//! scenarios know nothing else about the target, and read every figure of the database
//! through the `v$` views over a connection (see `vstats`), exactly as a client of the
//! wire protocol would; so a wire target only has to implement these two traits.
//!
//! Built here: [`Embedded`], a database opened in this process (a fresh temporary
//! directory unless `--data DIR`). Each scenario starts it over ([`Target::reset`]) with
//! the engine settings it needs. The wire-protocol target, for redodb's server or
//! PostgreSQL, is in `wire.rs`.
//!
//! The scenarios keep Oracle's transaction model on every target: a transaction begins
//! with the first DML after a COMMIT or ROLLBACK and lasts until the next one (the
//! embedded session works this way; the wire connection sends BEGIN with the first DML,
//! as a JDBC driver with autocommit off does).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use db::sql::PreparedStatement;
use db::{Database, DbConfig, Session, Value};
use redo::{LogConfig, SyncMethod};
use serde::Serialize;

use crate::engine_bench::workload::Mode;

/// Engine settings a scenario asks for when it starts the target over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EngineSetup {
    pub log_parallelism: u32,
    #[serde(serialize_with = "method_name")]
    pub sync_method: SyncMethod,
}

fn method_name<S: serde::Serializer>(m: &SyncMethod, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.name())
}

/// A prepared statement of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stmt(pub(super) usize);

/// What kind of database a target is: it decides how the commit mode is set and where
/// the figures come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flavour {
    /// redodb in this process: every figure from the `v$` views.
    Embedded,
    /// redodb's server over the wire: every figure from the `v$` views.
    RedodbServer,
    /// PostgreSQL over the wire: commit modes map to `synchronous_commit`; only the
    /// figures `pg_stat_wal` can give.
    Postgres,
}

impl Flavour {
    /// Whether the `v$` views are there.
    pub fn has_v_views(self) -> bool {
        self != Flavour::Postgres
    }
}

/// What a statement returned: a query's rows, or the rows a command changed.
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub rows: Vec<Vec<Value>>,
    pub rows_affected: u64,
}

/// A database the scenarios run on.
pub trait Target: Send + Sync {
    fn flavour(&self) -> Flavour;
    /// One line for the reports: what and where.
    fn describe(&self) -> String;
    /// A short name for table columns: "embedded", "redodb server", "PostgreSQL 15.14".
    fn label(&self) -> String;
    /// The server's own version string, when it is a server.
    fn server_version(&self) -> Option<String> {
        None
    }
    /// The URL of a wire-protocol target.
    fn url(&self) -> Option<String> {
        None
    }
    /// Why this target cannot run a configuration in `mode` with `setup`, or None when it
    /// can (a server's engine settings are fixed when it starts; PostgreSQL has no
    /// batched commit logging and no redo strands).
    fn not_applicable(&self, mode: Mode, setup: EngineSetup) -> Option<String>;
    /// Starts over with these engine settings: the embedded target creates a fresh
    /// database; a server target drops the scenarios' tables (it cannot be restarted, so
    /// a setup it does not run is refused: see [`Target::not_applicable`]).
    fn reset(&mut self, setup: EngineSetup) -> Result<()>;
    /// A new session.
    fn connect(&self) -> Result<Box<dyn Connection>>;
    /// Makes every commit so far durable (after a NOWAIT configuration, so the next one
    /// starts with an empty log buffer). A server target commits a WAIT transaction.
    fn settle(&self) -> Result<()>;
    /// log_parallelism of the database (PostgreSQL's single WAL stream counts as 1).
    fn log_parallelism(&self) -> u32;
    /// The redodb sync method whose raw disk figure matches how this target syncs its
    /// log (PostgreSQL's `wal_sync_method` mapped by what it does), None when none does.
    fn raw_sync_method(&self) -> Option<SyncMethod>;
    /// The wire-protocol target behind this one, for what only a network client has
    /// (portal fetches, round trips).
    fn as_wire(&self) -> Option<&super::wire::WireTarget> {
        None
    }
}

/// One session of a target.
pub trait Connection: Send {
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<Reply>;
    fn prepare(&mut self, sql: &str) -> Result<Stmt>;
    fn execute_prepared(&mut self, stmt: Stmt, params: &[Value]) -> Result<Reply>;
    /// Runs `stmt` once per row of bind values in one call (an array insert); returns the
    /// rows changed.
    fn execute_many(&mut self, stmt: Stmt, rows: &[Vec<Value>]) -> Result<u64>;

    /// This session's commit mode, the way the seeds set it.
    fn set_commit_mode(&mut self, mode: Mode) -> Result<()> {
        self.execute(&format!("ALTER SESSION SET commit_wait = {}", mode.wait.name()), &[])?;
        self.execute(&format!("ALTER SESSION SET commit_logging = {}", mode.logging.name()), &[])?;
        Ok(())
    }

    /// The rows of a query without bind values.
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Value>>> {
        Ok(self.execute(sql, &[])?.rows)
    }

    /// Exchanges with the server so far (a wire connection counts each message group it
    /// sends and waits for); None when there is no server to talk to.
    fn round_trips(&self) -> Option<u64> {
        None
    }
}

/// A database opened in this process.
pub struct Embedded {
    dir: PathBuf,
    setup: EngineSetup,
    db: Option<Arc<Database>>,
}

impl Embedded {
    /// A target whose database lives in `dir` (removed and created again by each reset).
    pub fn new(dir: &Path, sync_method: SyncMethod) -> Embedded {
        Embedded { dir: dir.to_path_buf(), setup: EngineSetup { log_parallelism: 1, sync_method }, db: None }
    }

    fn db(&self) -> Result<&Arc<Database>> {
        self.db.as_ref().ok_or_else(|| anyhow!("the embedded database is not open (reset it first)"))
    }
}

impl Target for Embedded {
    fn flavour(&self) -> Flavour {
        Flavour::Embedded
    }

    fn label(&self) -> String {
        "embedded".into()
    }

    fn not_applicable(&self, _mode: Mode, _setup: EngineSetup) -> Option<String> {
        None
    }

    fn raw_sync_method(&self) -> Option<SyncMethod> {
        Some(self.setup.sync_method)
    }

    fn describe(&self) -> String {
        format!(
            "embedded database in {} (sync method {}, log_parallelism {})",
            self.dir.display(),
            self.setup.sync_method.name(),
            self.setup.log_parallelism
        )
    }

    fn reset(&mut self, setup: EngineSetup) -> Result<()> {
        if let Some(db) = self.db.take() {
            if Arc::strong_count(&db) > 1 {
                bail!("the embedded database is still in use by a session that did not end");
            }
            drop(db);
        }
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir).with_context(|| format!("removing {}", self.dir.display()))?;
        }
        let mut log = LogConfig::new(".");
        log.sync_method = setup.sync_method;
        log.log_parallelism = setup.log_parallelism;
        let db = Database::open(
            &self.dir,
            DbConfig { log, checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..DbConfig::default() },
        )
        .with_context(|| {
            format!("opening a new database in {} ({})", self.dir.display(), setup.sync_method.name())
        })?;
        self.db = Some(Arc::new(db));
        self.setup = setup;
        Ok(())
    }

    fn connect(&self) -> Result<Box<dyn Connection>> {
        let db = self.db()?.clone();
        let session = db.session();
        Ok(Box::new(EmbeddedConnection { session, statements: Vec::new(), _db: db }))
    }

    fn settle(&self) -> Result<()> {
        let log = self.db()?.log();
        log.wait_durable(log.reserved_end()).context("making the log durable")
    }

    fn log_parallelism(&self) -> u32 {
        self.setup.log_parallelism
    }
}

impl Drop for Embedded {
    /// The database is scratch (also inside `--data`): closed, then its directory removed.
    fn drop(&mut self) {
        drop(self.db.take());
        match std::fs::remove_dir_all(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => eprintln!("warning: removing {}: {e}", self.dir.display()),
        }
    }
}

struct EmbeddedConnection {
    session: Session,
    statements: Vec<PreparedStatement>,
    /// Keeps the database open as long as the session.
    _db: Arc<Database>,
}

impl EmbeddedConnection {
    fn statement(&self, stmt: Stmt) -> Result<&PreparedStatement> {
        self.statements.get(stmt.0).ok_or_else(|| anyhow!("no prepared statement {}", stmt.0))
    }
}

fn reply(result: db::sql::QueryResult) -> Reply {
    let rows_affected = result.rows_affected();
    match result {
        db::sql::QueryResult::Rows { rows, .. } => Reply { rows, rows_affected },
        db::sql::QueryResult::Command { .. } => Reply { rows: Vec::new(), rows_affected },
    }
}

impl Connection for EmbeddedConnection {
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<Reply> {
        let result = self.session.execute(sql, params).with_context(|| sql.to_string())?;
        Ok(reply(result))
    }

    fn prepare(&mut self, sql: &str) -> Result<Stmt> {
        let p = self.session.prepare(sql).with_context(|| format!("preparing {sql}"))?;
        self.statements.push(p);
        Ok(Stmt(self.statements.len() - 1))
    }

    fn execute_prepared(&mut self, stmt: Stmt, params: &[Value]) -> Result<Reply> {
        let statement =
            self.statements.get(stmt.0).ok_or_else(|| anyhow!("no prepared statement {}", stmt.0))?;
        match self.session.execute_prepared(statement, params) {
            Ok(r) => Ok(reply(r)),
            Err(e) => Err(anyhow!("{}: {e}", statement.sql())),
        }
    }

    fn execute_many(&mut self, stmt: Stmt, rows: &[Vec<Value>]) -> Result<u64> {
        let statement = self.statement(stmt)?;
        let sql = statement.sql().to_string();
        let statement = &self.statements[stmt.0];
        self.session.execute_many(statement, rows).map_err(|e| anyhow!("{sql} ({} rows): {e}", rows.len()))
    }
}
