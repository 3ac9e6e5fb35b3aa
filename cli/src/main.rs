//! `redodb`: the command-line tool. It runs the redo engine benchmark and the SQL benchmark.

mod crash_configs;
mod crash_workload;
mod db_crash_workload;
mod engine_bench;
mod sql_bench;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "redodb", version, about = "redodb command-line tool")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Measure the redo log engine against the machine's own disk.
    EngineBench(engine_bench::Args),
    /// Measure commits through the embedded SQL API against the raw engine.
    SqlBench(sql_bench::Args),
    /// Commit workload for crash tests (internal).
    #[command(hide = true)]
    CrashWorkload(crash_workload::Args),
    /// Database workload for crash tests (internal).
    #[command(hide = true)]
    DbCrashWorkload(db_crash_workload::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::EngineBench(args) => engine_bench::run(args),
        Command::SqlBench(args) => sql_bench::run(args),
        Command::CrashWorkload(args) => crash_workload::run(args),
        Command::DbCrashWorkload(args) => db_crash_workload::run(args),
    }
}
