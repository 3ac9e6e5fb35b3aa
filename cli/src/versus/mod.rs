//! `redodb versus-postgres`: redodb's server against PostgreSQL 15 on the same machine in
//! the same run, both driven by the same pgbench scripts (`pgbench`): insert-commit and
//! update-commit on 30,000 rows, `-M prepared`, 1, 8 and 32 clients, PostgreSQL with
//! `synchronous_commit` on and off against redodb WAIT and NOWAIT (NOWAIT both with
//! IMMEDIATE logging, the target, and with BATCH, like for like: PostgreSQL's
//! `off` leaves the WAL sync to its WAL writer as BATCH leaves it to redodb's).
//!
//! It starts both servers itself: a throwaway PostgreSQL 15 cluster from the Debian
//! package and `redodb serve` from this binary, each in a temporary directory on a spare
//! port, stopped at the end. Runs alternate between the servers cell by cell, so a drift
//! of the machine (a busy neighbour, the disk's mood) touches both sides of a ratio alike.
//! The targets (redodb >= 2x PostgreSQL's TPS at 32 clients WAIT vs on, >= 1.5x NOWAIT vs
//! off) are printed with a verdict, never asserted.

mod pgbench;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::common::machine::{self, MachineFacts};
use crate::common::postgres::{PostgresCluster, RedodbServer};
use crate::common::{bench_dir, thousands};
use pgbench::{Endpoint, Flavour, Pairing, RunFigures, Tools, Workload};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Seconds per pgbench run [default: 10; 1 with --quick]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=3600))]
    seconds: Option<u32>,
    /// Client counts, comma-separated [default: 1,8,32; 1,8 with --quick]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=150))]
    clients: Option<Vec<u32>>,
    /// Workloads, comma-separated: insert, update [default: both]
    #[arg(long, value_delimiter = ',', value_parser = ["insert", "update"])]
    workloads: Option<Vec<String>>,
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
    cells: Vec<Cell>,
    verdicts: Vec<Verdict>,
    total_seconds: f64,
}

/// The targets: at 32 clients (or the most clients run), per workload.
const WAIT_TARGET: f64 = 2.0;
const NOWAIT_TARGET: f64 = 1.5;

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
        None => Workload::ALL.to_vec(),
        Some(names) => {
            names.iter().map(|n| if n == "insert" { Workload::Insert } else { Workload::Update }).collect()
        }
    };
    if clients.is_empty() || workloads.is_empty() {
        bail!("nothing to run: give at least one client count and one workload");
    }
    let tools = Tools::find()?;
    let (dir, _temp) = bench_dir(args.data.as_deref(), "redodb-versus-")?;
    let facts = machine::facts(&dir);

    let postgres = PostgresCluster::start(&dir.join("postgres")).context("starting PostgreSQL 15")?;
    let redodb = RedodbServer::start(&dir.join("redodb")).context("starting redodb serve")?;
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
    println!("redodb {} versus PostgreSQL {postgres_version}", env!("CARGO_PKG_VERSION"));
    println!(
        "  machine     {} CPUs ({}), {} on {}, data in {}",
        facts.cpus, facts.arch, facts.fs_type, facts.fs_device, facts.directory
    );
    println!(
        "  runs        pgbench -M prepared, {seconds} s each, one statement per transaction (autocommit); \
         servers alternate cell by cell"
    );
    println!("  PostgreSQL  {}:{} (fsync on, a throwaway cluster)", pg.host, pg.port);
    println!("  redodb      {}:{} (redodb serve, default engine settings)", rd.host, rd.port);
    println!();
    for e in [&pg, &rd] {
        tools.create_tables(e)?;
    }

    let scratch = dir.join("scripts");
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let mut cells = Vec::new();
    for &workload in &workloads {
        for pairing in Pairing::ALL {
            for &c in &clients {
                let postgres = tools.run(&pg, workload, pairing, c, seconds, &scratch)?;
                let redodb = tools.run(&rd, workload, pairing, c, seconds, &scratch)?;
                let ratio = if postgres.tps > 0.0 { redodb.tps / postgres.tps } else { 0.0 };
                eprintln!(
                    "{} {c} clients {}: PostgreSQL {} tps, redodb {} tps ({ratio:.2}x)",
                    workload.name(),
                    pairing.label(),
                    thousands(postgres.tps),
                    thousands(redodb.tps)
                );
                let wait = pairing == Pairing::Wait;
                cells.push(Cell { workload, clients: c, pairing, wait, postgres, redodb, ratio });
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

fn print_table(cells: &[Cell]) {
    println!("PGBENCH: transactions per second, average latency, commits per log sync (server's own counts)");
    println!(
        "  {:<8} {:<32} {:>7}   {:>10} {:>8} {:>7}   {:>10} {:>8} {:>7}   {:>6}",
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
            "  {:<8} {:<32} {:>7}   {:>10} {:>8.3} {:>7}   {:>10} {:>8.3} {:>7}   {:>5.2}x",
            c.workload.name(),
            c.pairing.label(),
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
    println!("  ratio = redodb tps / PostgreSQL tps; c/sync = commits per WAL sync (pg_stat_wal.wal_sync) or per redo write");
    println!();
}

/// The targets, judged at the most clients run (32 in a full run).
fn verdicts(cells: &[Cell]) -> Vec<Verdict> {
    let Some(most) = cells.iter().map(|c| c.clients).max() else { return Vec::new() };
    cells
        .iter()
        .filter(|c| c.clients == most)
        .map(|c| {
            let target = c.pairing.target();
            Verdict {
                what: format!("{} {} clients, {}", c.workload.name(), c.clients, c.pairing.verdict_label()),
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
