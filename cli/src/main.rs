//! `redodb`: the command-line tool. It runs the redo engine benchmark, the SQL benchmark and the
//! PostgreSQL wire server.

mod alloc;
mod awr_cmd;
mod bench;
mod common;
mod crash_configs;
mod crash_workload;
mod db_crash_workload;
mod engine_bench;
mod probe;
mod serve;
mod soak;
mod sql_bench;
mod sqllogictest;
mod versus;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: alloc::MiMalloc = alloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(name = "redodb", version, about = "redodb command-line tool")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the seeds' experiments (commit modes, group commit, strands, redo size, ...) as scenarios.
    Bench(bench::Args),
    /// Measure the redo log engine against the machine's own disk.
    EngineBench(engine_bench::Args),
    /// Measure commits through the embedded SQL API against the raw engine.
    SqlBench(sql_bench::Args),
    /// Measure the disk's write+sync latency and tell which sync method the engine should use.
    Probe(probe::Args),
    /// Serve the database over the PostgreSQL wire protocol.
    Serve(serve::Args),
    /// redodb's server against a throwaway PostgreSQL 15, both driven by the same pgbench scripts.
    VersusPostgres(versus::Args),
    /// A mixed workload over the wire for a given time with kill -9 and restarts: checks that no
    /// acknowledged commit is lost and reports the server's RSS, open files, threads and sizes.
    Soak(soak::Args),
    /// Run sqllogictest scripts (SQLite's corpus) against redodb serve, PostgreSQL or a running server.
    Sqllogictest(sqllogictest::Args),
    /// Take a workload repository snapshot of a database that is not open elsewhere; prints its id.
    Snapshot(awr_cmd::SnapshotArgs),
    /// AWR-style report between two snapshots (by default the newest two).
    Report(awr_cmd::ReportArgs),
    /// Commit workload for crash tests (internal).
    #[command(hide = true)]
    CrashWorkload(crash_workload::Args),
    /// Database workload for crash tests (internal).
    #[command(hide = true)]
    DbCrashWorkload(db_crash_workload::Args),
}

fn main() -> anyhow::Result<()> {
    alloc::configure();
    match Cli::parse().command {
        Command::Bench(args) => bench::run(args),
        Command::EngineBench(args) => engine_bench::run(args),
        Command::SqlBench(args) => sql_bench::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Serve(args) => serve::run(args),
        Command::VersusPostgres(args) => versus::run(args),
        Command::Soak(args) => soak::run(args),
        Command::Sqllogictest(args) => sqllogictest::run(args),
        Command::Snapshot(args) => awr_cmd::run_snapshot(args),
        Command::Report(args) => awr_cmd::run_report(args),
        Command::CrashWorkload(args) => crash_workload::run(args),
        Command::DbCrashWorkload(args) => db_crash_workload::run(args),
    }
}
