//! Driving one server with pgbench and psql: the two workloads' tables and scripts, one
//! timed pgbench run, and the server's own count of commits and log syncs around it.
//!
//! Both servers are driven by the same unmodified PostgreSQL 15 tools, so the comparison
//! measures the servers, not two client libraries. Commit modes are set the way each
//! server's users set them: redodb with `ALTER SYSTEM SET commit_wait`, PostgreSQL with
//! `synchronous_commit` passed at connection start (`PGOPTIONS`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// Rows of the update workload's table (seed 000's 30,000).
pub const UPDATE_TABLE_ROWS: u64 = 30_000;

/// pgbench's scale for its built-in scripts (`pgbench -i -s`) unless told: 10 branches,
/// 100 tellers, 1,000,000 accounts.
pub const PGBENCH_SCALE: u32 = 10;

/// Which server a endpoint is: they set commit modes and count syncs differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavour {
    Redodb,
    Postgres,
}

impl Flavour {
    pub fn name(self) -> &'static str {
        match self {
            Flavour::Redodb => "redodb",
            Flavour::Postgres => "PostgreSQL 15",
        }
    }

    /// The commit mode of a run, in the server's own words.
    pub fn mode_name(self, pairing: Pairing) -> String {
        match self {
            Flavour::Redodb => {
                let (wait, logging) = pairing.redodb_mode();
                format!("commit_wait={wait}, commit_logging={logging}")
            }
            Flavour::Postgres => format!("synchronous_commit={}", pairing.synchronous_commit()),
        }
    }
}

/// The commit modes compared: redodb's COMMIT WRITE mode against PostgreSQL's
/// `synchronous_commit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pairing {
    /// WAIT/IMMEDIATE against `on`: both wait for the log sync.
    Wait,
    /// NOWAIT/IMMEDIATE against `off`: the NOWAIT target. redodb's commit posts
    /// the log writer at once, which writes and syncs for every post (thousands of
    /// syncs a second), while PostgreSQL leaves the sync to its WAL writer.
    NowaitImmediate,
    /// NOWAIT/BATCH against `off`: both leave the log write to a background writer's
    /// triggers (redodb: a third of the log buffer or `batch_flush_bytes` unwritten, or
    /// `batch_flush_timeout_ms`, 3 s, since the last write; PostgreSQL's WAL writer: every
    /// `wal_writer_delay`, 200 ms, or `wal_writer_flush_after`, 1 MB). Not the same loss
    /// window: a crash can take back up to 3 s of redodb's acknowledged commits, at most
    /// 3 x `wal_writer_delay` = 600 ms of PostgreSQL's (`sync::LossWindows`).
    NowaitBatch,
}

impl Pairing {
    pub const ALL: [Pairing; 3] = [Pairing::Wait, Pairing::NowaitImmediate, Pairing::NowaitBatch];

    /// redodb's `commit_wait` and `commit_logging`.
    pub fn redodb_mode(self) -> (&'static str, &'static str) {
        match self {
            Pairing::Wait => ("WAIT", "IMMEDIATE"),
            Pairing::NowaitImmediate => ("NOWAIT", "IMMEDIATE"),
            Pairing::NowaitBatch => ("NOWAIT", "BATCH"),
        }
    }

    pub fn synchronous_commit(self) -> &'static str {
        if self == Pairing::Wait {
            "on"
        } else {
            "off"
        }
    }

    /// The row label: PostgreSQL's setting / redodb's mode.
    pub fn label(self) -> &'static str {
        match self {
            Pairing::Wait => "sync_commit=on / WAIT",
            Pairing::NowaitImmediate => "sync_commit=off / NOWAIT",
            Pairing::NowaitBatch => "sync_commit=off / NOWAIT BATCH",
        }
    }
}

/// A server to drive: where it listens, as whom to connect.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub flavour: Flavour,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub dbname: String,
}

/// The workloads: the two of the peers' table (`../shared/notes/peers.md`) and two of
/// pgbench's own built-in scripts on its tables at scale `PGBENCH_SCALE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// W1: insert one row, commit.
    Insert,
    /// W2: update one random row of 30,000 to a fresh value, commit.
    Update,
    /// pgbench's `tpcb-like`: three updates, a select and an insert in one transaction.
    TpcbLike,
    /// pgbench's `simple-update` (`-N`): tpcb-like without the teller and branch updates,
    /// so without its few hot rows.
    SimpleUpdate,
    /// pgbench's `select-only`: one primary-key lookup (no commit to make durable).
    SelectOnly,
}

impl Workload {
    pub const ALL: [Workload; 5] = [
        Workload::Insert,
        Workload::Update,
        Workload::TpcbLike,
        Workload::SimpleUpdate,
        Workload::SelectOnly,
    ];

    /// What a run does unless told: all but simple-update (run with `--workloads`).
    pub const DEFAULT: [Workload; 4] =
        [Workload::Insert, Workload::Update, Workload::TpcbLike, Workload::SelectOnly];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Insert => "insert",
            Workload::Update => "update",
            Workload::TpcbLike => "tpcb-like",
            Workload::SimpleUpdate => "simple-update",
            Workload::SelectOnly => "select-only",
        }
    }

    pub fn named(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }

    /// pgbench's built-in script this workload is (`pgbench -b`), if it is one.
    pub fn builtin(self) -> Option<&'static str> {
        match self {
            Workload::TpcbLike | Workload::SimpleUpdate | Workload::SelectOnly => Some(self.name()),
            Workload::Insert | Workload::Update => None,
        }
    }

    /// Whether its transactions write (and so have a commit mode to compare).
    pub fn writes(self) -> bool {
        self != Workload::SelectOnly
    }

    /// The pgbench script: one statement, one transaction (autocommit), fresh values.
    fn script(self) -> &'static str {
        match self {
            // Keys drawn from 10^15: 300,000 inserts collide with probability ~5e-5, and
            // a collision would end the run with a failed transaction, not hide in it.
            Workload::Insert => {
                "\\set id random(1, 1000000000000000)\n\
                 INSERT INTO w1 VALUES (:id, :client_id, 'pgbench insert-commit: one row of about a hundred bytes, one transaction each');\n"
            }
            Workload::Update => {
                "\\set id random(1, 30000)\n\
                 \\set n random(1, 1000000000)\n\
                 UPDATE w2 SET n = :n WHERE id = :id;\n"
            }
            Workload::TpcbLike | Workload::SimpleUpdate | Workload::SelectOnly => {
                unreachable!("a built-in script")
            }
        }
    }
}

/// One pgbench run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct RunFigures {
    pub tps: f64,
    pub latency_avg_ms: f64,
    pub transactions: u64,
    /// Commits the server counted during the run, and the log syncs it made for them
    /// (redodb: `redo writes`; PostgreSQL: `pg_stat_wal.wal_sync`, or `wal_write` with an
    /// open_* `wal_sync_method`), when it can say.
    pub server_commits: Option<u64>,
    pub server_syncs: Option<u64>,
}

impl RunFigures {
    pub fn commits_per_sync(&self) -> Option<f64> {
        match (self.server_commits, self.server_syncs) {
            (Some(c), Some(s)) if s > 0 => Some(c as f64 / s as f64),
            _ => None,
        }
    }
}

/// The PostgreSQL 15 client tools, from the Debian packages.
pub struct Tools {
    pub psql: PathBuf,
    pub pgbench: PathBuf,
}

impl Tools {
    pub fn find() -> Result<Tools> {
        let bin = Path::new("/usr/lib/postgresql/15/bin");
        let psql = bin.join("psql");
        let pgbench = bin.join("pgbench");
        if !pgbench.exists() {
            bail!("pgbench not found at {}: install the Debian package postgresql-15", pgbench.display());
        }
        if !psql.exists() {
            bail!("psql not found at {}: install the Debian package postgresql-client-15", psql.display());
        }
        Ok(Tools { psql, pgbench })
    }

    fn connect_args(e: &Endpoint) -> Vec<String> {
        vec!["-h".into(), e.host.clone(), "-p".into(), e.port.to_string(), "-U".into(), e.user.clone()]
    }

    /// Runs `sql` with psql (stdin `input` if given); returns its unaligned, tuples-only
    /// output.
    pub fn psql(&self, e: &Endpoint, sql: &str, input: Option<&[u8]>) -> Result<String> {
        let mut cmd = Command::new(&self.psql);
        cmd.args(Self::connect_args(e))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql, &e.dbname])
            .env_remove("PGOPTIONS")
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().with_context(|| format!("starting {}", self.psql.display()))?;
        if let Some(bytes) = input {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("piped stdin");
            stdin.write_all(bytes).context("writing to psql")?;
        }
        let out = child.wait_with_output().context("waiting for psql")?;
        if !out.status.success() {
            bail!(
                "psql on {} ({}:{}) failed for {sql:?}: {}",
                e.flavour.name(),
                e.host,
                e.port,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Creates both workloads' tables afresh and loads the update table.
    pub fn create_tables(&self, e: &Endpoint) -> Result<()> {
        self.psql(e, "DROP TABLE IF EXISTS w1", None)?;
        self.psql(e, "DROP TABLE IF EXISTS w2", None)?;
        self.psql(e, "CREATE TABLE w1 (id BIGINT PRIMARY KEY, client INTEGER NOT NULL, note TEXT)", None)?;
        self.psql(e, "CREATE TABLE w2 (id BIGINT PRIMARY KEY, n BIGINT NOT NULL, note TEXT)", None)?;
        let mut rows = String::with_capacity(UPDATE_TABLE_ROWS as usize * 40);
        for id in 1..=UPDATE_TABLE_ROWS {
            rows.push_str(&format!("{id}\t0\trow {id} of the update workload\n"));
        }
        self.psql(e, "COPY w2 FROM STDIN", Some(rows.as_bytes()))?;
        let loaded = self.psql(e, "SELECT count(*) FROM w2", None)?;
        if loaded != UPDATE_TABLE_ROWS.to_string() {
            bail!("{}: loaded {loaded} rows into w2, expected {UPDATE_TABLE_ROWS}", e.flavour.name());
        }
        Ok(())
    }

    /// Creates pgbench's tables with pgbench itself: `pgbench -i -s scale` with every step
    /// (drop, create, client-side generate, vacuum, primary keys).
    pub fn init_pgbench(&self, e: &Endpoint, scale: u32) -> Result<()> {
        let out = Command::new(&self.pgbench)
            .args(Self::connect_args(e))
            .args(["-i", "-q", "-I", "dtgvp", "-s", &scale.to_string()])
            .arg(&e.dbname)
            .env_remove("PGOPTIONS")
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", self.pgbench.display()))?;
        if !out.status.success() {
            bail!(
                "pgbench -i on {} failed:\n{}{}",
                e.flavour.name(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let accounts = self.psql(e, "SELECT count(*) FROM pgbench_accounts", None)?;
        if accounts != (u64::from(scale) * 100_000).to_string() {
            bail!("{}: pgbench -i made {accounts} accounts", e.flavour.name());
        }
        Ok(())
    }

    /// Readies the server for a run of `workload` in the commit mode of `pairing`: the insert table
    /// emptied, redodb's commit mode set, the server's dirty state written out (a
    /// PostgreSQL checkpoint, so no run pays for the one before it).
    fn prepare_run(&self, e: &Endpoint, workload: Workload, pairing: Pairing) -> Result<()> {
        if workload == Workload::Insert {
            self.psql(e, "TRUNCATE w1", None)?;
        }
        match e.flavour {
            Flavour::Redodb => {
                let (wait, logging) = pairing.redodb_mode();
                self.psql(e, &format!("ALTER SYSTEM SET commit_wait = {wait}"), None)?;
                self.psql(e, &format!("ALTER SYSTEM SET commit_logging = {logging}"), None)?;
            }
            Flavour::Postgres => {
                self.psql(e, "CHECKPOINT", None)?;
            }
        }
        Ok(())
    }

    /// The server's count of commits and log syncs, when it keeps them.
    fn server_counts(&self, e: &Endpoint) -> Result<(Option<u64>, Option<u64>)> {
        let sql = match e.flavour {
            Flavour::Redodb => {
                "SELECT name, value FROM v$sysstat WHERE name IN ('user commits', 'redo writes')"
            }
            // pg_stat_wal counts no sync for the open_* methods (each WAL write is its own
            // sync, O_DSYNC or O_SYNC): their writes are their syncs.
            Flavour::Postgres => {
                "SELECT 'user commits', sum(xact_commit) FROM pg_stat_database \
                 UNION ALL SELECT 'redo writes', \
                 CASE WHEN current_setting('wal_sync_method') LIKE 'open%' THEN wal_write ELSE wal_sync END \
                 FROM pg_stat_wal"
            }
        };
        let text = self.psql(e, sql, None)?;
        let value = |name: &str| {
            text.lines()
                .filter_map(|l| l.split_once('|'))
                .find(|(n, _)| n.trim() == name)
                .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        };
        Ok((value("user commits"), value("redo writes")))
    }

    /// One pgbench run: `clients` clients for `seconds`, `-M prepared`, the workload's
    /// script, in the commit mode of `pairing`.
    pub fn run(
        &self,
        e: &Endpoint,
        workload: Workload,
        pairing: Pairing,
        clients: u32,
        seconds: u32,
        scratch: &Path,
    ) -> Result<RunFigures> {
        self.prepare_run(e, workload, pairing)?;
        let script_args: Vec<std::ffi::OsString> = match workload.builtin() {
            Some(builtin) => vec!["-b".into(), builtin.into()],
            None => {
                let script = scratch.join(format!("{}.sql", workload.name()));
                std::fs::write(&script, workload.script())
                    .with_context(|| format!("writing {}", script.display()))?;
                vec!["-f".into(), script.into()]
            }
        };
        // PostgreSQL's statistics are flushed by each backend when it goes idle; the psql
        // sessions reading them are backends too, so their reads bracket the run's.
        let before = self.server_counts(e)?;
        let threads = clients.min(2);
        let mut cmd = Command::new(&self.pgbench);
        cmd.args(Self::connect_args(e))
            .args(["-n", "-M", "prepared", "-c", &clients.to_string(), "-j", &threads.to_string()])
            .args(["-T", &seconds.to_string()])
            .args(&script_args)
            .arg(&e.dbname)
            .stdin(Stdio::null());
        match e.flavour {
            Flavour::Postgres => {
                cmd.env("PGOPTIONS", format!("-c synchronous_commit={}", pairing.synchronous_commit()));
            }
            Flavour::Redodb => {
                cmd.env_remove("PGOPTIONS");
            }
        }
        let out = cmd.output().with_context(|| format!("running {}", self.pgbench.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let label = format!(
            "pgbench {} {} clients on {} ({})",
            workload.name(),
            clients,
            e.flavour.name(),
            e.flavour.mode_name(pairing)
        );
        if !out.status.success() {
            bail!("{label} failed ({}):\n{stdout}\n{stderr}", out.status);
        }
        let mut figures =
            parse_pgbench(&stdout).with_context(|| format!("{label}: reading its output:\n{stdout}"))?;
        // Let PostgreSQL's backends report their counts before reading them.
        std::thread::sleep(Duration::from_millis(if e.flavour == Flavour::Postgres { 600 } else { 0 }));
        let after = self.server_counts(e)?;
        let delta = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| b.saturating_sub(a));
        figures.server_commits = delta(before.0, after.0);
        figures.server_syncs = delta(before.1, after.1);
        Ok(figures)
    }
}

/// Reads pgbench's summary: tps, average latency and the transactions processed, and
/// refuses a run with failed transactions.
pub fn parse_pgbench(stdout: &str) -> Result<RunFigures> {
    let mut tps = None;
    let mut latency = None;
    let mut transactions = None;
    for line in stdout.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("tps = ") {
            tps = rest.split_whitespace().next().and_then(|v| v.parse::<f64>().ok());
        } else if let Some(rest) = line.strip_prefix("latency average = ") {
            latency = rest.split_whitespace().next().and_then(|v| v.parse::<f64>().ok());
        } else if let Some(rest) = line.strip_prefix("number of transactions actually processed: ") {
            transactions = rest.split('/').next().and_then(|v| v.trim().parse::<u64>().ok());
        } else if let Some(rest) = line.strip_prefix("number of failed transactions: ") {
            let failed = rest.split_whitespace().next().and_then(|v| v.parse::<u64>().ok());
            if failed != Some(0) {
                bail!("pgbench reports failed transactions: {line}");
            }
        }
    }
    match (tps, latency, transactions) {
        (Some(tps), Some(latency_avg_ms), Some(transactions)) if transactions > 0 => {
            Ok(RunFigures { tps, latency_avg_ms, transactions, server_commits: None, server_syncs: None })
        }
        (_, _, Some(0)) => bail!("pgbench processed no transactions"),
        _ => bail!("no tps, latency average or transaction count in pgbench's output"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "pgbench (15.14 (Debian 15.14-0+deb12u1))
transaction type: /tmp/insert.sql
scaling factor: 1
query mode: prepared
number of clients: 8
number of threads: 2
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 114523
number of failed transactions: 0 (0.000%)
latency average = 0.698 ms
initial connection time = 12.345 ms
tps = 11452.301234 (without initial connection time)
";

    #[test]
    fn reads_tps_latency_and_transactions() {
        let f = parse_pgbench(SAMPLE).unwrap();
        assert_eq!(f.transactions, 114_523);
        assert!((f.tps - 11_452.301234).abs() < 1e-6);
        assert!((f.latency_avg_ms - 0.698).abs() < 1e-9);
    }

    #[test]
    fn refuses_failed_transactions_and_missing_figures() {
        let failed = SAMPLE.replace("failed transactions: 0 (0.000%)", "failed transactions: 3 (0.010%)");
        assert!(parse_pgbench(&failed).unwrap_err().to_string().contains("failed transactions"));
        let no_tps: String = SAMPLE.lines().filter(|l| !l.starts_with("tps")).collect::<Vec<_>>().join("\n");
        assert!(parse_pgbench(&no_tps).is_err());
    }

    #[test]
    fn commits_per_sync_needs_both_counts() {
        let mut f = parse_pgbench(SAMPLE).unwrap();
        assert_eq!(f.commits_per_sync(), None);
        f.server_commits = Some(100);
        f.server_syncs = Some(8);
        assert_eq!(f.commits_per_sync(), Some(12.5));
        f.server_syncs = Some(0);
        assert_eq!(f.commits_per_sync(), None);
    }
}
