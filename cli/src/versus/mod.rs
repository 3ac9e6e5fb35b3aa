//! `redodb versus-postgres`: redodb's server against PostgreSQL 15 on the same machine in
//! the same run, both driven by the same pgbench scripts (`pgbench`): insert-commit and
//! update-commit on 30,000 rows, `-M prepared`, 1, 8 and 32 clients, PostgreSQL with
//! `synchronous_commit` on and off against redodb WAIT and NOWAIT (NOWAIT both with
//! IMMEDIATE logging, the target, and with BATCH: both asynchronous commits
//! leave the log write to a background writer, with different loss windows, see [`sync`]).
//!
//! It starts both servers itself: a throwaway PostgreSQL 15 cluster from the Debian
//! package and `redodb serve` from this binary, each in a temporary directory on a spare
//! port, stopped at the end. Runs alternate between the servers cell by cell, and which
//! server runs first alternates too, so neither always runs on a disk the other has just
//! worked (a drift of the machine, a busy neighbour, the disk's mood, touches both sides
//! of a ratio alike). The header states both servers' sync settings as they run, and
//! whether they are the same method; `--postgres-sync-method same` runs PostgreSQL with
//! the method closest to redodb's. The targets (redodb >= 2x PostgreSQL's TPS at 32
//! clients WAIT vs on, >= 1.5x NOWAIT vs off) are printed with a verdict, never asserted.

mod pgbench;
mod sync;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::common::machine::{self, MachineFacts};
use crate::common::postgres::{PostgresCluster, PostgresOptions, RedodbServer};
use crate::common::{bench_dir, thousands};
use pgbench::{Endpoint, Flavour, Pairing, RunFigures, Tools, Workload};
use redo::SyncMethod;
use sync::{LossWindows, PostgresSyncChoice, SyncSettings};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Seconds per pgbench run [default: 10; 1 with --quick]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=3600))]
    seconds: Option<u32>,
    /// Client counts, comma-separated [default: 1,8,32; 1,8 with --quick]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=150))]
    clients: Option<Vec<u32>>,
    /// Workloads, comma-separated: insert, update (one statement per transaction),
    /// tpcb-like, simple-update, select-only (pgbench's built-in scripts, scale 10)
    /// [default: all but simple-update]
    #[arg(long, value_delimiter = ',', value_parser = ["insert", "update", "tpcb-like", "simple-update", "select-only"])]
    workloads: Option<Vec<String>>,
    /// pgbench's scale for tpcb-like and select-only (`pgbench -i -s`)
    #[arg(long, default_value_t = pgbench::PGBENCH_SCALE, value_parser = clap::value_parser!(u32).range(1..=1000))]
    scale: u32,
    /// Short run for CI: 1 s runs, 1 and 8 clients
    #[arg(long)]
    quick: bool,
    /// Directory for both servers' data [default: a fresh temporary directory, removed
    /// at the end]
    #[arg(long)]
    data: Option<PathBuf>,
    /// Write the figures as JSON to this file
    #[arg(long)]
    json: Option<PathBuf>,
    /// redodb's sync method: fdatasync, o_dsync or o_direct [default: the server's]
    #[arg(long, value_parser = sync_method_parser())]
    sync_method: Option<SyncMethod>,
    /// PostgreSQL's wal_sync_method: `default` (PostgreSQL's own, fdatasync on Linux),
    /// `same` (the one closest to redodb's sync method; for o_direct, open_datasync with
    /// wal_level=minimal, with which PostgreSQL 15 opens WAL with O_DIRECT), or fdatasync,
    /// fsync, open_datasync, open_sync
    #[arg(long, default_value = "default", value_parser = PostgresSyncChoice::parse)]
    postgres_sync_method: PostgresSyncChoice,
}

fn sync_method_parser() -> impl clap::builder::TypedValueParser<Value = SyncMethod> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(SyncMethod::ALL.map(|m| m.name()))
        .map(|name| SyncMethod::parse(&name).expect("a possible value"))
}

/// One cell of the table: a workload, a client count, a commit mode, both servers.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub workload: Workload,
    pub clients: u32,
    /// The commit modes compared.
    pub pairing: Pairing,
    /// WAIT vs synchronous_commit=on (else NOWAIT vs off).
    pub wait: bool,
    /// The server that ran first in this cell (it alternates from cell to cell).
    pub first: Flavour,
    pub postgres: RunFigures,
    pub redodb: RunFigures,
    /// redodb TPS / PostgreSQL TPS.
    pub ratio: f64,
}

/// A target of the issue, with the cell it is judged on.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub what: String,
    pub ratio: f64,
    pub target: f64,
    pub pass: bool,
}

#[derive(Serialize)]
struct Report {
    machine: MachineFacts,
    postgres_version: String,
    redodb_version: &'static str,
    seconds_per_run: u32,
    query_mode: &'static str,
    /// Both servers' sync settings as they ran, and whether they are the same method.
    sync: SyncSettings,
    /// What each server's asynchronous commit can lose in a crash.
    loss_windows: LossWindows,
    cells: Vec<Cell>,
    verdicts: Vec<Verdict>,
    total_seconds: f64,
}

/// The targets: at 32 clients (or the most clients run), per workload.
const WAIT_TARGET: f64 = 2.0;
const NOWAIT_TARGET: f64 = 1.5;
/// select-only: no commit, the read path against PostgreSQL's.
const SELECT_TARGET: f64 = 1.5;

impl Pairing {
    fn target(self) -> f64 {
        if self == Pairing::Wait {
            WAIT_TARGET
        } else {
            NOWAIT_TARGET
        }
    }

    fn verdict_label(self) -> &'static str {
        match self {
            Pairing::Wait => "redodb WAIT / PostgreSQL synchronous_commit=on",
            Pairing::NowaitImmediate => "redodb NOWAIT / PostgreSQL synchronous_commit=off",
            Pairing::NowaitBatch => "redodb NOWAIT BATCH / PostgreSQL synchronous_commit=off",
        }
    }
}

pub fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    let seconds = args.seconds.unwrap_or(if args.quick { 1 } else { 10 });
    let clients = args.clients.clone().unwrap_or(if args.quick { vec![1, 8] } else { vec![1, 8, 32] });
    let workloads: Vec<Workload> = match &args.workloads {
        None => Workload::DEFAULT.to_vec(),
        Some(names) => names.iter().map(|n| Workload::named(n).expect("a possible value")).collect(),
    };
    if clients.is_empty() || workloads.is_empty() {
        bail!("nothing to run: give at least one client count and one workload");
    }
    let tools = Tools::find()?;
    let (dir, _temp) = bench_dir(args.data.as_deref(), "redodb-versus-")?;
    let facts = machine::facts(&dir);

    // redodb's method first: PostgreSQL's "same" follows it. Log files of 256 MB: `pgbench
    // -i` loads its rows in one transaction (86 MB of redo at scale 10), and a
    // transaction's redo is limited to half a log file.
    let mut redodb_args: Vec<String> = vec!["--log-file-size".into(), "256M".into()];
    if let Some(m) = args.sync_method {
        redodb_args.extend(["--sync-method".into(), m.name().into()]);
    }
    let redodb =
        RedodbServer::start_with(&dir.join("redodb"), &redodb_args).context("starting redodb serve")?;
    let redodb_method = match args.sync_method {
        Some(m) => m,
        None => redodb_sync_method(&redodb)?,
    };
    let pg_options = PostgresOptions {
        extra_settings: args.postgres_sync_method.settings(redodb_method),
        ..PostgresOptions::default()
    };
    let postgres =
        PostgresCluster::start_with(&dir.join("postgres"), &pg_options).context("starting PostgreSQL 15")?;
    let pg = Endpoint {
        flavour: Flavour::Postgres,
        host: postgres.host().to_string(),
        port: postgres.port(),
        user: postgres.user().to_string(),
        dbname: postgres.dbname().to_string(),
    };
    let rd = Endpoint {
        flavour: Flavour::Redodb,
        host: redodb.host().to_string(),
        port: redodb.port(),
        user: redodb.user().to_string(),
        dbname: redodb.dbname().to_string(),
    };
    let postgres_version = tools.psql(&pg, "SHOW server_version", None)?;
    for e in [&pg, &rd] {
        tools.create_tables(e)?;
        if workloads.iter().any(|w| w.builtin().is_some()) {
            tools.init_pgbench(e, args.scale)?;
        }
    }
    let sync = SyncSettings::new(
        redodb_method,
        args.postgres_sync_method,
        &tools.psql(&pg, "SHOW wal_sync_method", None)?,
        &tools.psql(&pg, "SHOW wal_level", None)?,
        postgres_wal_flags(&tools, &pg, &postgres)?,
    );
    let loss_windows = loss_windows(&tools, &pg, &rd)?;
    println!("redodb {} versus PostgreSQL {postgres_version}", env!("CARGO_PKG_VERSION"));
    println!(
        "  machine     {} CPUs ({}), {} on {}, data in {}",
        facts.cpus, facts.arch, facts.fs_type, facts.fs_device, facts.directory
    );
    println!(
        "  runs        pgbench -M prepared, {seconds} s each; insert and update: one statement per transaction \
         (autocommit); tpcb-like and select-only: pgbench's built-in scripts, scale {}; servers alternate \
         cell by cell, and which runs first alternates too",
        args.scale
    );
    println!("  PostgreSQL  {}:{} (fsync on, a throwaway cluster)", pg.host, pg.port);
    println!(
        "  redodb      {}:{} (redodb serve, default engine settings but 256 MB log files{})",
        rd.host,
        rd.port,
        if args.sync_method.is_some() { " but --sync-method" } else { "" }
    );
    print_sync(&sync);
    for (i, line) in loss_windows.lines().iter().enumerate() {
        println!("  {:<10}  {line}", if i == 0 { "loss" } else { "" });
    }
    println!();

    let scratch = dir.join("scripts");
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let mut cells = Vec::new();
    for &workload in &workloads {
        // A read-only workload has no commit to make durable: one mode is all of it.
        let pairings: &[Pairing] = if workload.writes() { &Pairing::ALL } else { &[Pairing::Wait] };
        for &pairing in pairings {
            for &c in &clients {
                // Whoever runs second runs on a disk the first has just worked (its
                // write-back, a PostgreSQL checkpoint's tail): each server goes first in
                // every other cell.
                let first = if cells.len() % 2 == 0 { Flavour::Postgres } else { Flavour::Redodb };
                let (postgres, redodb) = if first == Flavour::Postgres {
                    let p = tools.run(&pg, workload, pairing, c, seconds, &scratch)?;
                    (p, tools.run(&rd, workload, pairing, c, seconds, &scratch)?)
                } else {
                    let r = tools.run(&rd, workload, pairing, c, seconds, &scratch)?;
                    (tools.run(&pg, workload, pairing, c, seconds, &scratch)?, r)
                };
                let ratio = if postgres.tps > 0.0 { redodb.tps / postgres.tps } else { 0.0 };
                eprintln!(
                    "{} {c} clients {}: PostgreSQL {} tps, redodb {} tps ({ratio:.2}x)",
                    workload.name(),
                    pairing.label(),
                    thousands(postgres.tps),
                    thousands(redodb.tps)
                );
                let wait = pairing == Pairing::Wait;
                cells.push(Cell { workload, clients: c, pairing, wait, first, postgres, redodb, ratio });
            }
        }
    }
    // Commit mode back to the default, for anyone who looks at the server afterwards.
    tools.psql(&rd, "ALTER SYSTEM SET commit_wait = WAIT", None)?;
    tools.psql(&rd, "ALTER SYSTEM SET commit_logging = IMMEDIATE", None)?;

    print_table(&cells);
    let verdicts = verdicts(&cells);
    print_verdicts(&verdicts);
    drop(redodb);
    drop(postgres);

    let report = Report {
        machine: facts,
        postgres_version,
        redodb_version: env!("CARGO_PKG_VERSION"),
        seconds_per_run: seconds,
        query_mode: "prepared",
        sync,
        loss_windows,
        cells,
        verdicts,
        total_seconds: started.elapsed().as_secs_f64(),
    };
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).context("encoding the JSON")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("JSON: {}", path.display());
    }
    println!("total time {:.1} s", report.total_seconds);
    Ok(())
}

/// The sync method redodb's server runs with (its `log_sync_method` parameter).
fn redodb_sync_method(server: &RedodbServer) -> Result<SyncMethod> {
    let name = crate::common::postgres::query_once(
        &server.url(),
        "SELECT value FROM v$parameter WHERE name = 'log_sync_method'",
    )?;
    SyncMethod::parse(&name).with_context(|| format!("redodb reports an unknown log_sync_method {name:?}"))
}

/// The flags PostgreSQL's WAL segment is open with, as `/proc` shows them. A process keeps
/// the segment it last wrote open; a CHECKPOINT makes the checkpointer write (and so open)
/// the current one, with the flags the sync method asks for. None if none is seen within
/// a few seconds.
fn postgres_wal_flags(tools: &Tools, pg: &Endpoint, cluster: &PostgresCluster) -> Result<Option<String>> {
    tools.psql(pg, "CHECKPOINT", None)?;
    for _ in 0..30 {
        if let Some(flags) = cluster.wal_open_flags() {
            return Ok(Some(sync::proc_flags_text(flags)));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(None)
}

/// Both servers' background writers' settings, as they run.
fn loss_windows(tools: &Tools, pg: &Endpoint, rd: &Endpoint) -> Result<LossWindows> {
    let text = tools.psql(
        rd,
        "SELECT name, value FROM v$parameter WHERE name IN \
         ('log_buffer', 'batch_flush_buffer_divisor', 'batch_flush_bytes', 'batch_flush_timeout_ms')",
        None,
    )?;
    let value = |name: &str| -> Result<u64> {
        text.lines()
            .filter_map(|l| l.split_once('|'))
            .find(|(n, _)| n.trim() == name)
            .and_then(|(_, v)| v.trim().parse().ok())
            .with_context(|| format!("no {name} in redodb's v$parameter: {text:?}"))
    };
    let divisor = value("batch_flush_buffer_divisor")?.max(1);
    let trigger = (value("log_buffer")? / divisor).min(value("batch_flush_bytes")?);
    // pg_settings gives the delay in its unit (ms), whatever the text form.
    let delay = tools.psql(
        pg,
        "SELECT setting FROM pg_settings WHERE name = 'wal_writer_delay' AND unit = 'ms'",
        None,
    )?;
    let delay_ms: u64 =
        delay.trim().parse().with_context(|| format!("PostgreSQL's wal_writer_delay in ms: {delay:?}"))?;
    Ok(LossWindows {
        redodb_batch_flush_trigger_bytes: trigger,
        redodb_batch_flush_timeout_ms: value("batch_flush_timeout_ms")?,
        postgres_wal_writer_delay_ms: delay_ms,
        postgres_wal_writer_flush_after: tools.psql(pg, "SHOW wal_writer_flush_after", None)?,
        postgres_max_loss_ms: 3 * delay_ms,
    })
}

fn print_sync(s: &SyncSettings) {
    println!("  redodb log  sync_method={}: {}", s.redodb_sync_method, s.redodb_does);
    let observed = match (&s.postgres_wal_open_flags, s.postgres_expected_flags()) {
        (Some(seen), Some(expected)) if *seen == expected => {
            format!("; /proc shows its WAL open with flags {seen}")
        }
        (Some(seen), _) => format!("; /proc shows its WAL open with flags {seen}, NOT what its settings say"),
        (None, _) => "; no WAL file of it was open in /proc to check".into(),
    };
    println!(
        "  PG WAL      wal_sync_method={}, wal_level={} ({}): {}{observed}",
        s.postgres_wal_sync_method,
        s.postgres_wal_level,
        match s.postgres_choice.as_str() {
            "default" => "PostgreSQL's default".to_string(),
            choice => format!("--postgres-sync-method {choice}"),
        },
        s.postgres_does
    );
    println!("  sync        {}", s.note);
}

fn print_table(cells: &[Cell]) {
    println!("PGBENCH: transactions per second, average latency, commits per log sync (server's own counts)");
    println!(
        "  {:<11} {:<32} {:>7}   {:>10} {:>8} {:>7}   {:>10} {:>8} {:>7}   {:>6}",
        "workload",
        "mode (PostgreSQL / redodb)",
        "clients",
        "PG tps",
        "lat ms",
        "c/sync",
        "redodb tps",
        "lat ms",
        "c/sync",
        "ratio"
    );
    let per_sync = |f: &RunFigures| f.commits_per_sync().map_or("-".into(), |v| format!("{v:.1}"));
    let mut last = None;
    for c in cells {
        if last.is_some() && last != Some((c.workload, c.pairing)) {
            println!();
        }
        last = Some((c.workload, c.pairing));
        println!(
            "  {:<11} {:<32} {:>7}   {:>10} {:>8.3} {:>7}   {:>10} {:>8.3} {:>7}   {:>5.2}x",
            c.workload.name(),
            if c.workload.writes() { c.pairing.label() } else { "(no commit: read only)" },
            c.clients,
            thousands(c.postgres.tps),
            c.postgres.latency_avg_ms,
            per_sync(&c.postgres),
            thousands(c.redodb.tps),
            c.redodb.latency_avg_ms,
            per_sync(&c.redodb),
            c.ratio
        );
    }
    println!("  ratio = redodb tps / PostgreSQL tps");
    println!(
        "  c/sync = commits per log sync: PostgreSQL's pg_stat_wal.wal_sync (wal_write with an open_* method), \
         redodb's redo writes"
    );
    println!(
        "  NOWAIT BATCH and sync_commit=off risk different windows of commits (the \"loss\" lines above)"
    );
    println!();
}

/// The targets, judged at the most clients run (32 in a full run).
fn verdicts(cells: &[Cell]) -> Vec<Verdict> {
    let Some(most) = cells.iter().map(|c| c.clients).max() else { return Vec::new() };
    cells
        .iter()
        .filter(|c| c.clients == most)
        .map(|c| {
            let (target, label) = if c.workload.writes() {
                (c.pairing.target(), c.pairing.verdict_label())
            } else {
                (SELECT_TARGET, "redodb / PostgreSQL")
            };
            Verdict {
                what: format!("{} {} clients, {label}", c.workload.name(), c.clients),
                ratio: c.ratio,
                target,
                pass: c.ratio >= target,
            }
        })
        .collect()
}

fn print_verdicts(verdicts: &[Verdict]) {
    println!("TARGETS (printed, never asserted: machines are noisy)");
    for v in verdicts {
        println!(
            "  {:<78} {:>6.2}x  target >= {:.1}x  {}",
            v.what,
            v.ratio,
            v.target,
            if v.pass { "PASS" } else { "MISS" }
        );
    }
    println!();
}
