//! The wire-protocol target: `--target postgres://USER@HOST:PORT/DB`, a server that speaks
//! the PostgreSQL protocol, which is redodb's own server (`redodb serve`) or PostgreSQL.
//! Which one is told at the first connection: where the `v$` views answer it is redodb,
//! else PostgreSQL (its `SELECT version()` and `SHOW server_version` name it).
//!
//! Each [`WireConnection`] is a tokio-postgres client on a current-thread runtime of its
//! own (what the sync `postgres` crate does inside), so every session thread of the
//! driver blocks on its own calls and nothing is shared between them. Parameters are
//! sent as text, as libpq does, so the server's types decide (a `BIGINT` column takes
//! `Value::Int`, a `NUMERIC` one too); results are read in binary and turned into
//! [`Value`]s.
//!
//! Transactions follow Oracle's model, as the scenarios expect (see `target.rs`): BEGIN
//! goes out in the same round trip as the first DML after a COMMIT or ROLLBACK; a COMMIT
//! with no transaction open is not sent at all (as a JDBC driver with autocommit off
//! does). An array insert ([`Connection::execute_many`]) pipelines its binds: every
//! Bind/Execute/Sync is sent before the first reply is read, one round trip in all.
//!
//! The commit mode: on redodb `ALTER SESSION SET commit_wait/commit_logging`, as the seeds
//! do; on PostgreSQL WAIT and NOWAIT are `SET synchronous_commit = on/off`, and the BATCH
//! modes are not applicable (PostgreSQL has no batched commit logging).

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::BytesMut;
use db::Value;
use futures_util::future::{try_join, try_join_all};
use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage, Statement};

use super::target::{Connection, EngineSetup, Flavour, Reply, Stmt, Target};
use crate::engine_bench::workload::Mode;
use redo::{CommitLogging, SyncMethod};

/// The application_name of every bench connection: the PostgreSQL statistics sampler
/// waits for the other connections of that name to end before it reads (see `vstats`).
pub const APPLICATION_NAME: &str = "redodb bench";

/// How long connecting may take before the target is called unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The table a [`Target::settle`] commit updates.
const SETTLE_TABLE: &str = "bench_settle";

/// A server reached over the PostgreSQL protocol.
pub struct WireTarget {
    url: String,
    config: tokio_postgres::Config,
    flavour: Flavour,
    server_version: String,
    /// log_parallelism of a redodb server (fixed when it started).
    server_strands: Option<u32>,
    /// The server's log sync method: redodb's log_sync_method, PostgreSQL's
    /// wal_sync_method.
    sync_method: String,
    /// PostgreSQL's wal_level (with open_datasync, `minimal` adds O_DIRECT).
    wal_level: Option<String>,
    /// The tables a reset drops: every table the scenarios create.
    tables: &'static [&'static str],
}

impl WireTarget {
    /// Connects to `url` once to learn what it is. `tables` are the scenarios' tables,
    /// dropped by each reset.
    pub fn connect_to(url: &str, tables: &'static [&'static str]) -> Result<WireTarget> {
        let mut config: tokio_postgres::Config =
            url.parse().with_context(|| format!("--target {url}: not a PostgreSQL connection URL"))?;
        if config.get_application_name().is_none() {
            config.application_name(APPLICATION_NAME);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let mut conn = WireConnection::open(&config, Flavour::Postgres)
            .with_context(|| format!("connecting to {url}"))?;
        // What the scenarios need is the v$ views: where they answer, it is redodb.
        let has_v_views = conn.first_text("SELECT count(*) FROM v$database").is_ok();
        let version = conn.first_text("SELECT version()");
        let flavour = match &version {
            _ if has_v_views => Flavour::RedodbServer,
            Ok(_) => Flavour::Postgres,
            Err(e) => bail!(
                "{url} answers neither as redodb (no v$database) nor as PostgreSQL (SELECT version(): {e:#})"
            ),
        };
        conn.flavour = flavour;
        let (server_version, server_strands, sync_method) = match flavour {
            Flavour::Postgres => {
                (conn.first_text("SHOW server_version")?, None, conn.first_text("SHOW wal_sync_method")?)
            }
            _ => {
                let parameter = |conn: &mut WireConnection, name: &str| {
                    conn.first_text(&format!("SELECT value FROM v$parameter WHERE name = '{name}'"))
                        .with_context(|| format!("reading {name} from v$parameter"))
                };
                let strands = parameter(&mut conn, "log_parallelism")?;
                let strands =
                    strands.trim().parse::<u32>().with_context(|| format!("log_parallelism {strands:?}"))?;
                let method = parameter(&mut conn, "log_sync_method")?;
                (version.unwrap_or_else(|_| "redodb".into()), Some(strands), method)
            }
        };
        let wal_level = match flavour {
            Flavour::Postgres => Some(conn.first_text("SHOW wal_level")?),
            _ => None,
        };
        Ok(WireTarget {
            url: url.to_string(),
            config,
            flavour,
            server_version,
            server_strands,
            sync_method,
            wal_level,
            tables,
        })
    }

    /// A new connection, with the wire-only operations (portal fetches, round trips).
    pub fn open(&self) -> Result<WireConnection> {
        WireConnection::open(&self.config, self.flavour)
            .with_context(|| format!("connecting to {}", self.url))
    }
}

impl Target for WireTarget {
    fn flavour(&self) -> Flavour {
        self.flavour
    }

    fn describe(&self) -> String {
        match self.flavour {
            Flavour::Postgres => {
                format!(
                    "PostgreSQL {} at {} (wal_sync_method {})",
                    self.server_version, self.url, self.sync_method
                )
            }
            _ => format!(
                "redodb server at {} (log_sync_method {}, log_parallelism {})",
                self.url,
                self.sync_method,
                self.server_strands.unwrap_or(1)
            ),
        }
    }

    fn label(&self) -> String {
        match self.flavour {
            Flavour::Postgres => {
                let number = self.server_version.split_whitespace().next().unwrap_or("");
                format!("PostgreSQL {number}").trim().to_string()
            }
            _ => "redodb server".into(),
        }
    }

    fn server_version(&self) -> Option<String> {
        Some(self.server_version.clone())
    }

    fn raw_sync_method(&self) -> Option<SyncMethod> {
        match &self.wal_level {
            Some(level) => crate::common::sync_method::redodb_equivalent(&self.sync_method, level),
            None => SyncMethod::parse(&self.sync_method),
        }
    }

    fn url(&self) -> Option<String> {
        Some(self.url.clone())
    }

    fn not_applicable(&self, mode: Mode, setup: EngineSetup) -> Option<String> {
        match self.flavour {
            Flavour::Postgres if mode.logging == CommitLogging::Batch => {
                Some("PostgreSQL has no batched commit logging (COMMIT WRITE BATCH)".into())
            }
            Flavour::Postgres if setup.log_parallelism != 1 => {
                Some("PostgreSQL has no redo strands (log_parallelism)".into())
            }
            Flavour::RedodbServer | Flavour::Embedded => match self.server_strands {
                Some(n) if n != setup.log_parallelism => Some(format!(
                    "this server runs log_parallelism {n}, fixed when it starts (redodb serve --log-parallelism {})",
                    setup.log_parallelism
                )),
                _ => None,
            },
            Flavour::Postgres => None,
        }
    }

    fn reset(&mut self, setup: EngineSetup) -> Result<()> {
        if let Some(why) = self.not_applicable(Mode::WAIT_IMMEDIATE, setup) {
            bail!("{}: {why}", self.url);
        }
        let mut conn = self.open()?;
        for table in self.tables.iter().chain([&SETTLE_TABLE]) {
            conn.execute(&format!("DROP TABLE IF EXISTS {table}"), &[])?;
        }
        conn.execute(&format!("CREATE TABLE {SETTLE_TABLE} (id BIGINT PRIMARY KEY, n BIGINT)"), &[])?;
        conn.execute(&format!("INSERT INTO {SETTLE_TABLE} (id, n) VALUES (1, 0)"), &[])?;
        conn.execute("COMMIT", &[])?;
        Ok(())
    }

    fn connect(&self) -> Result<Box<dyn Connection>> {
        Ok(Box::new(self.open()?))
    }

    fn settle(&self) -> Result<()> {
        // A WAIT commit returns once the log is durable up to its own record, which
        // covers every commit before it.
        let mut conn = self.open()?;
        conn.set_commit_mode(Mode::WAIT_IMMEDIATE)?;
        conn.execute(&format!("UPDATE {SETTLE_TABLE} SET n = n + 1 WHERE id = 1"), &[])?;
        conn.execute("COMMIT", &[]).context("the settling WAIT commit")?;
        Ok(())
    }

    fn log_parallelism(&self) -> u32 {
        self.server_strands.unwrap_or(1)
    }

    fn as_wire(&self) -> Option<&WireTarget> {
        Some(self)
    }
}

/// What a statement does to the transaction (Oracle's model, see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StatementKind {
    /// INSERT, UPDATE, DELETE, MERGE, SELECT ... FOR UPDATE: begins a transaction.
    Dml,
    /// BEGIN, START TRANSACTION.
    Begin,
    /// COMMIT, ROLLBACK (not ROLLBACK TO SAVEPOINT), END.
    End,
    /// Everything else runs as it comes.
    Other,
}

fn classify(sql: &str) -> StatementKind {
    let upper = sql.trim_start().to_ascii_uppercase();
    let mut words =
        upper.split(|c: char| c.is_whitespace() || c == ';' || c == '(').filter(|w| !w.is_empty());
    match (words.next().unwrap_or(""), words.next().unwrap_or("")) {
        ("INSERT" | "UPDATE" | "DELETE" | "MERGE", _) => StatementKind::Dml,
        ("SELECT", _) if upper.contains(" FOR UPDATE") => StatementKind::Dml,
        ("BEGIN", _) | ("START", "TRANSACTION") => StatementKind::Begin,
        ("ROLLBACK", "TO") => StatementKind::Other,
        ("COMMIT" | "ROLLBACK" | "END" | "ABORT", _) => StatementKind::End,
        _ => StatementKind::Other,
    }
}

struct Prepared {
    sql: String,
    kind: StatementKind,
    /// None for BEGIN/COMMIT/ROLLBACK, which are sent as simple queries.
    statement: Option<Statement>,
}

/// One session on a wire target.
pub struct WireConnection {
    runtime: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Option<tokio::task::JoinHandle<()>>,
    flavour: Flavour,
    statements: Vec<Prepared>,
    in_transaction: bool,
    round_trips: u64,
}

/// What a portal fetch did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fetched {
    pub rows: u64,
    /// Execute messages sent (each one round trip).
    pub fetch_calls: u64,
    /// Bytes of the values read (text as UTF-8, numbers 8).
    pub value_bytes: u64,
}

impl WireConnection {
    fn open(config: &tokio_postgres::Config, flavour: Flavour) -> Result<WireConnection> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting a tokio runtime for the connection")?;
        let (client, connection) = runtime.block_on(config.connect(NoTls)).map_err(pg_error)?;
        // The connection's I/O runs as a task of this runtime, driven whenever a call
        // blocks on it; its end (the server closing) surfaces as errors of the calls.
        let driver = runtime.spawn(async move {
            let _ = connection.await;
        });
        Ok(WireConnection {
            runtime,
            client: Some(client),
            driver: Some(driver),
            flavour,
            statements: Vec::new(),
            in_transaction: false,
            round_trips: 0,
        })
    }

    fn client(&self) -> &Client {
        self.client.as_ref().expect("the client lives as long as the connection")
    }

    /// The first column of the first row of a simple query, as text.
    pub fn first_text(&mut self, sql: &str) -> Result<String> {
        let rows = self.execute(sql, &[])?.rows;
        match rows.first().and_then(|r| r.first()) {
            Some(Value::Text(t)) => Ok(t.clone()),
            Some(Value::Null) | None => bail!("{sql}: no value"),
            Some(other) => Ok(value_text(other)),
        }
    }

    /// This session's SID on a redodb server (from `v$mystat`).
    pub fn sid(&mut self) -> Result<u64> {
        let text = self.first_text("SELECT sid FROM v$mystat")?;
        text.trim().parse().with_context(|| format!("v$mystat sid {text:?}"))
    }

    /// Runs `stmt` with `params` through a portal, `rows_per_fetch` rows per Execute, in a
    /// transaction of its own; reads every value. Round trips: BEGIN, Bind, one per
    /// fetch, COMMIT.
    pub fn fetch(&mut self, stmt: Stmt, params: &[Value], rows_per_fetch: u32) -> Result<Fetched> {
        if self.in_transaction {
            bail!("a portal fetch needs no transaction open (COMMIT first)");
        }
        let prepared =
            self.statements.get(stmt.0).ok_or_else(|| anyhow!("no prepared statement {}", stmt.0))?;
        let statement =
            prepared.statement.clone().ok_or_else(|| anyhow!("{} returns no rows", prepared.sql))?;
        let sql = prepared.sql.clone();
        let max_rows = i32::try_from(rows_per_fetch.max(1)).unwrap_or(i32::MAX);
        let texts: Vec<TextParam> = params.iter().map(TextParam).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = texts.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let client = self.client.as_mut().expect("the client lives as long as the connection");
        let result: Result<(Fetched, u64), tokio_postgres::Error> = self.runtime.block_on(async {
            let mut exchanges = 0u64;
            let transaction = client.transaction().await?;
            exchanges += 1;
            let portal = transaction.bind(&statement, &refs).await?;
            exchanges += 1;
            let mut fetched = Fetched::default();
            loop {
                let rows = transaction.query_portal(&portal, max_rows).await?;
                exchanges += 1;
                fetched.fetch_calls += 1;
                for row in &rows {
                    for i in 0..row.len() {
                        let AnyValue(v) = row.try_get::<_, AnyValue>(i)?;
                        fetched.value_bytes += match &v {
                            Value::Text(t) => t.len() as u64,
                            _ => 8,
                        };
                    }
                }
                fetched.rows += rows.len() as u64;
                if rows.len() < max_rows as usize {
                    break;
                }
            }
            drop(portal);
            transaction.commit().await?;
            exchanges += 1;
            Ok((fetched, exchanges))
        });
        let (fetched, exchanges) = result.map_err(pg_error).with_context(|| format!("fetching {sql}"))?;
        self.round_trips += exchanges;
        Ok(fetched)
    }

    /// Sends ROLLBACK after a failed statement in a transaction, so the connection is
    /// usable again (PostgreSQL refuses everything in an aborted transaction).
    fn recover(&mut self) {
        if self.in_transaction {
            self.in_transaction = false;
            let client = self.client();
            let _ = self.runtime.block_on(client.batch_execute("ROLLBACK"));
        }
    }

    /// A simple query of `kind`, with BEGIN in the same round trip when it opens a
    /// transaction.
    fn simple(&mut self, sql: &str, kind: StatementKind) -> Result<Reply> {
        if kind == StatementKind::End && !self.in_transaction {
            return Ok(Reply::default());
        }
        let begin = kind == StatementKind::Dml && !self.in_transaction;
        let client = self.client.as_ref().expect("the client lives as long as the connection");
        let result = if begin {
            self.round_trips += 1;
            self.runtime
                .block_on(try_join(client.batch_execute("BEGIN"), client.simple_query(sql)))
                .map(|(_, messages)| messages)
                .map_err(pg_error)
        } else {
            self.exchange_simple(sql)
        };
        self.after(kind, result.map(simple_reply), sql)
    }

    fn exchange_simple(&mut self, sql: &str) -> Result<Vec<SimpleQueryMessage>> {
        self.round_trips += 1;
        let client = self.client.as_ref().expect("the client lives as long as the connection");
        self.runtime.block_on(client.simple_query(sql)).map_err(pg_error)
    }

    /// The transaction state after a statement of `kind` ran (or failed).
    fn after<T>(&mut self, kind: StatementKind, result: Result<T>, sql: &str) -> Result<T> {
        match result {
            Ok(v) => {
                match kind {
                    StatementKind::Dml | StatementKind::Begin => self.in_transaction = true,
                    StatementKind::End => self.in_transaction = false,
                    StatementKind::Other => {}
                }
                Ok(v)
            }
            Err(e) => {
                // BEGIN may have gone through in the same round trip as the failed DML.
                if kind == StatementKind::Dml {
                    self.in_transaction = true;
                }
                self.recover();
                Err(e.context(short_sql(sql)))
            }
        }
    }
}

impl Drop for WireConnection {
    fn drop(&mut self) {
        // Dropping the client asks the connection task to send Terminate; the runtime
        // must run that task once more, or the server only sees the socket close.
        drop(self.client.take());
        if let Some(driver) = self.driver.take() {
            let _ =
                self.runtime.block_on(async { tokio::time::timeout(Duration::from_secs(2), driver).await });
        }
    }
}

impl Connection for WireConnection {
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<Reply> {
        let kind = classify(sql);
        if params.is_empty() || matches!(kind, StatementKind::Begin | StatementKind::End) {
            return self.simple(sql, kind);
        }
        let stmt = self.prepare(sql)?;
        let reply = self.execute_prepared(stmt, params);
        // An unnamed one-off: forget it (the server side closes when the Statement drops).
        self.statements.pop();
        reply
    }

    fn prepare(&mut self, sql: &str) -> Result<Stmt> {
        let kind = classify(sql);
        let statement = match kind {
            StatementKind::Begin | StatementKind::End => None,
            _ => {
                let client = self.client.as_ref().expect("the client lives as long as the connection");
                self.round_trips += 1;
                let statement = self.runtime.block_on(client.prepare(sql)).map_err(pg_error);
                Some(statement.with_context(|| format!("preparing {}", short_sql(sql)))?)
            }
        };
        self.statements.push(Prepared { sql: sql.to_string(), kind, statement });
        Ok(Stmt(self.statements.len() - 1))
    }

    fn execute_prepared(&mut self, stmt: Stmt, params: &[Value]) -> Result<Reply> {
        let prepared =
            self.statements.get(stmt.0).ok_or_else(|| anyhow!("no prepared statement {}", stmt.0))?;
        let (kind, sql) = (prepared.kind, prepared.sql.clone());
        let Some(statement) = prepared.statement.clone() else {
            return self.simple(&sql, kind);
        };
        let texts: Vec<TextParam> = params.iter().map(TextParam).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = texts.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let begin = kind == StatementKind::Dml && !self.in_transaction;
        let client = self.client.as_ref().expect("the client lives as long as the connection");
        self.round_trips += 1;
        let returns_rows = !statement.columns().is_empty();
        let result: Result<Reply, tokio_postgres::Error> = self.runtime.block_on(async {
            let run = async {
                if returns_rows {
                    let rows = client.query(&statement, &refs).await?;
                    let rows_affected = rows.len() as u64;
                    let rows = rows.iter().map(row_values).collect::<Result<Vec<_>, _>>()?;
                    Ok(Reply { rows, rows_affected })
                } else {
                    let rows_affected = client.execute(&statement, &refs).await?;
                    Ok(Reply { rows: Vec::new(), rows_affected })
                }
            };
            if begin {
                try_join(client.batch_execute("BEGIN"), run).await.map(|(_, reply)| reply)
            } else {
                run.await
            }
        });
        self.after(kind, result.map_err(pg_error), &sql)
    }

    fn execute_many(&mut self, stmt: Stmt, rows: &[Vec<Value>]) -> Result<u64> {
        let prepared =
            self.statements.get(stmt.0).ok_or_else(|| anyhow!("no prepared statement {}", stmt.0))?;
        let (kind, sql) = (prepared.kind, prepared.sql.clone());
        let statement =
            prepared.statement.clone().ok_or_else(|| anyhow!("{sql} cannot be run as an array"))?;
        let texts: Vec<Vec<TextParam>> = rows.iter().map(|r| r.iter().map(TextParam).collect()).collect();
        let refs: Vec<Vec<&(dyn ToSql + Sync)>> =
            texts.iter().map(|r| r.iter().map(|p| p as &(dyn ToSql + Sync)).collect()).collect();
        let begin = kind == StatementKind::Dml && !self.in_transaction;
        let client = self.client.as_ref().expect("the client lives as long as the connection");
        self.round_trips += 1;
        let result: Result<u64, tokio_postgres::Error> = self.runtime.block_on(async {
            // Every execute is sent as it is first polled, before any reply is awaited.
            let all = try_join_all(refs.iter().map(|params| client.execute(&statement, params)));
            let counts =
                if begin { try_join(client.batch_execute("BEGIN"), all).await?.1 } else { all.await? };
            Ok(counts.iter().sum())
        });
        self.after(kind, result.map_err(pg_error), &format!("{sql} ({} rows)", rows.len()))
    }

    fn set_commit_mode(&mut self, mode: Mode) -> Result<()> {
        match self.flavour {
            Flavour::Postgres => {
                if mode.logging == CommitLogging::Batch {
                    bail!("PostgreSQL has no batched commit logging ({})", mode.name());
                }
                let on = if mode.waits() { "on" } else { "off" };
                self.execute(&format!("SET synchronous_commit = {on}"), &[])?;
            }
            Flavour::RedodbServer | Flavour::Embedded => {
                self.execute(&format!("ALTER SESSION SET commit_wait = {}", mode.wait.name()), &[])?;
                self.execute(&format!("ALTER SESSION SET commit_logging = {}", mode.logging.name()), &[])?;
            }
        }
        Ok(())
    }

    fn round_trips(&self) -> Option<u64> {
        Some(self.round_trips)
    }
}

/// The start of a statement, for error messages.
fn short_sql(sql: &str) -> String {
    let mut s: String = sql.chars().take(120).collect();
    if s.len() < sql.len() {
        s.push_str("...");
    }
    s
}

/// A tokio-postgres error as the server said it: message, SQLSTATE, detail.
fn pg_error(e: tokio_postgres::Error) -> anyhow::Error {
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            text.push_str(&format!("; {detail}"));
        }
        return anyhow!(text);
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    anyhow!(text)
}

fn simple_reply(messages: Vec<SimpleQueryMessage>) -> Reply {
    let mut reply = Reply::default();
    for m in messages {
        match m {
            SimpleQueryMessage::Row(row) => {
                reply.rows.push(
                    (0..row.len())
                        .map(|i| row.get(i).map_or(Value::Null, |t| Value::Text(t.to_string())))
                        .collect(),
                );
            }
            SimpleQueryMessage::CommandComplete(n) => reply.rows_affected = n,
            _ => {}
        }
    }
    reply
}

fn row_values(row: &tokio_postgres::Row) -> Result<Vec<Value>, tokio_postgres::Error> {
    (0..row.len()).map(|i| row.try_get::<_, AnyValue>(i).map(|AnyValue(v)| v)).collect()
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Int(n) => n.to_string(),
        Value::Float(f) => db::value::float_text(*f),
        Value::Text(t) => t.clone(),
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        other => other.to_string(),
    }
}

/// A bind value sent in text format: the server parses it for the parameter's type.
#[derive(Debug)]
struct TextParam<'a>(&'a Value);

impl ToSql for TextParam<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        if self.0.is_null() {
            return Ok(IsNull::Yes);
        }
        out.extend_from_slice(value_text(self.0).as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> tokio_postgres::types::Format {
        tokio_postgres::types::Format::Text
    }

    to_sql_checked!();
}

/// A result column read into a [`Value`] from its binary format.
struct AnyValue(Value);

impl<'a> FromSql<'a> for AnyValue {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let fixed = |n: usize| -> Result<&[u8], Box<dyn std::error::Error + Sync + Send>> {
            if raw.len() == n {
                Ok(raw)
            } else {
                Err(format!("{} value of {} bytes", ty.name(), raw.len()).into())
            }
        };
        let v = match *ty {
            Type::BOOL => Value::Bool(fixed(1)?[0] != 0),
            Type::INT2 => Value::Int(i16::from_be_bytes(fixed(2)?.try_into()?) as i64),
            Type::INT4 => Value::Int(i32::from_be_bytes(fixed(4)?.try_into()?) as i64),
            Type::OID => Value::Int(u32::from_be_bytes(fixed(4)?.try_into()?) as i64),
            Type::INT8 => Value::Int(i64::from_be_bytes(fixed(8)?.try_into()?)),
            Type::FLOAT4 => Value::Float(f32::from_be_bytes(fixed(4)?.try_into()?) as f64),
            Type::FLOAT8 => Value::Float(f64::from_be_bytes(fixed(8)?.try_into()?)),
            Type::NUMERIC => numeric(raw)?,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::CHAR => {
                Value::Text(std::str::from_utf8(raw)?.to_string())
            }
            _ => return Err(format!("the bench does not read columns of type {}", ty.name()).into()),
        };
        Ok(AnyValue(v))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(AnyValue(Value::Null))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// PostgreSQL's binary NUMERIC (`sum(bigint)` returns one): digits of base 10,000, the
/// first one weighted 10,000^weight. A whole number that fits is an Int, else a Float.
fn numeric(raw: &[u8]) -> Result<Value, Box<dyn std::error::Error + Sync + Send>> {
    let word = |i: usize| -> Result<u16, Box<dyn std::error::Error + Sync + Send>> {
        raw.get(i * 2..i * 2 + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a truncated NUMERIC".into())
    };
    let ndigits = word(0)? as usize;
    let weight = word(1)? as i16 as i32;
    let sign = word(2)?;
    let dscale = word(3)?;
    const NAN: u16 = 0xC000;
    if sign == NAN {
        return Ok(Value::Float(f64::NAN));
    }
    let mut value = 0f64;
    let mut whole: Option<i128> = Some(0);
    for i in 0..ndigits {
        let digit = word(4 + i)? as i32;
        let power = weight - i as i32;
        value += digit as f64 * 10_000f64.powi(power);
        whole = match (whole, power >= 0) {
            (Some(w), true) => 10_000i128
                .checked_pow(power as u32)
                .and_then(|scale| (digit as i128).checked_mul(scale))
                .and_then(|d| w.checked_add(d)),
            (Some(w), false) if digit == 0 => Some(w),
            _ => None,
        };
    }
    let negative = sign == 0x4000;
    Ok(match whole.filter(|_| dscale == 0).and_then(|w| i64::try_from(w).ok()) {
        Some(w) => Value::Int(if negative { -w } else { w }),
        None => Value::Float(if negative { -value } else { value }),
    })
}

/// How long it takes a PostgreSQL backend to leave once its client closed: the
/// statistics sampler waits at most this long for the bench's other connections to end.
pub const BACKEND_EXIT_WAIT: Duration = Duration::from_secs(10);

/// Waits until no connection named [`APPLICATION_NAME`] other than `monitor`'s own is
/// left on the PostgreSQL server (a backend flushes its statistics as it exits).
pub fn wait_for_other_sessions(monitor: &mut dyn Connection) -> Result<()> {
    let sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{APPLICATION_NAME}' AND pid <> pg_backend_pid()"
    );
    let deadline = Instant::now() + BACKEND_EXIT_WAIT;
    loop {
        let rows = monitor.query(&sql)?;
        let left = rows.first().and_then(|r| r.first()).map(value_text).unwrap_or_default();
        if left.trim() == "0" || Instant::now() >= deadline {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_classified_by_their_first_words() {
        assert_eq!(classify("INSERT INTO t VALUES ($1)"), StatementKind::Dml);
        assert_eq!(classify("  update t set n = 1"), StatementKind::Dml);
        assert_eq!(classify("SELECT * FROM t WHERE id = 1 FOR UPDATE"), StatementKind::Dml);
        assert_eq!(classify("SELECT * FROM t"), StatementKind::Other);
        assert_eq!(classify("COMMIT"), StatementKind::End);
        assert_eq!(classify("commit write batch nowait"), StatementKind::End);
        assert_eq!(classify("ROLLBACK"), StatementKind::End);
        assert_eq!(classify("ROLLBACK TO SAVEPOINT a"), StatementKind::Other);
        assert_eq!(classify("BEGIN"), StatementKind::Begin);
        assert_eq!(classify("START TRANSACTION"), StatementKind::Begin);
        assert_eq!(classify("ALTER SESSION SET commit_wait = NOWAIT"), StatementKind::Other);
        assert_eq!(classify("TRUNCATE t"), StatementKind::Other);
    }

    /// NUMERIC in PostgreSQL's binary layout: ndigits, weight, sign, dscale, digits.
    fn encoded(weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        for w in [digits.len() as u16, weight as u16, sign, dscale].iter().chain(digits) {
            out.extend_from_slice(&w.to_be_bytes());
        }
        out
    }

    #[test]
    fn numerics_decode_to_ints_and_floats() {
        // 123456789 = 1|2345|6789 in base 10,000.
        assert_eq!(numeric(&encoded(2, 0, 0, &[1, 2345, 6789])).unwrap(), Value::Int(123_456_789));
        assert_eq!(numeric(&encoded(0, 0x4000, 0, &[7])).unwrap(), Value::Int(-7));
        assert_eq!(numeric(&encoded(0, 0, 0, &[])).unwrap(), Value::Int(0));
        // 1.5 = 1 . 5000, scale 1.
        assert_eq!(numeric(&encoded(0, 0, 1, &[1, 5000])).unwrap(), Value::Float(1.5));
        assert!(numeric(&[0, 3]).is_err(), "truncated input is an error, not a panic");
    }

    #[test]
    fn bind_values_are_text_the_server_parses() {
        assert_eq!(value_text(&Value::Int(-42)), "-42");
        assert_eq!(value_text(&Value::Float(0.1)), "0.1");
        assert_eq!(value_text(&Value::Float(f64::INFINITY)), "Infinity");
        assert_eq!(value_text(&Value::Float(1e20)), "1e+20");
        assert_eq!(value_text(&Value::Bool(true)), "true");
        assert_eq!(value_text(&Value::Text("a'b".into())), "a'b");
    }
}
