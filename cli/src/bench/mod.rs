//! `redodb bench [SCENARIO]`: the seeds' experiments, one command each ([`scenarios`]).
//!
//! A run: the machine's facts and the raw disk (4 KiB write+sync with each sync method,
//! the engine benchmark's probe, in the directory the database lives in), then the
//! scenario(s) on the target, each printing its tables as it ends; with `--out DIR` the
//! JSON of every measurement (and every `v$` difference), a CSV of the figures, each
//! chart as SVG and PNG, and `index.html` tying them together.
//!
//! The scenarios talk to a [`target::Target`] only through SQL, and read the database's
//! figures through the `v$` views ([`vstats`]), so a wire-protocol target can run them
//! unchanged. This version has the embedded target; `client-practices` measures what a
//! network client pays and so needs the wire target.

mod charts;
mod driver;
mod html;
mod output;
mod progress;
mod scenarios;
mod target;
mod vstats;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use redo::config::DEFAULT_SYNC_METHOD;
use redo::SyncMethod;

use crate::common::{bench_dir, machine, thousands};
use crate::engine_bench::probe;
use output::{BenchReport, RawSync};
use scenarios::{Ctx, Options, Scenario};
use target::{EngineSetup, Target};

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Scenarios (redodb bench --list): commit-time, commit-modes (the default), group-commit, \
strands, redo-size, batch-dml, client-practices (wire protocol only), all"
)]
pub struct Args {
    /// The experiment to run [default: commit-modes]
    #[arg(value_enum)]
    scenario: Option<Scenario>,
    /// List the scenarios, one line each
    #[arg(long)]
    list: bool,
    /// Where to run: `embedded` (a database in this process) or a postgres:// URL
    #[arg(long, default_value = "embedded")]
    target: String,
    /// Directory for the embedded database (in a `redodb-bench-db` folder inside it) and
    /// the disk probe [default: a fresh temporary directory, removed at the end]
    #[arg(long)]
    data: Option<PathBuf>,
    /// Write JSON, CSV, charts (SVG and PNG) and index.html into this directory
    #[arg(long)]
    out: Option<PathBuf>,
    /// Short run for CI: 0.3 s per configuration, fewer configurations
    #[arg(long)]
    quick: bool,
    /// Measured seconds per configuration [default: commit-modes 5, group-commit and
    /// strands 3, batch-dml 2; 0.3 with --quick]
    #[arg(long)]
    seconds: Option<f64>,
    /// Warm-up seconds before each measured window [default: a fifth of it, at most 1]
    #[arg(long)]
    warmup: Option<f64>,
    /// Engine sync method [default: the engine's default where the file system supports it]
    #[arg(long, value_parser = sync_method_parser())]
    sync_method: Option<SyncMethod>,
    /// commit-time: insert+commit iterations per mode [default: 10000; 300 with --quick]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    iterations: Option<u64>,
    /// commit-modes: sessions [default: 6]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=256))]
    sessions: Option<u64>,
    /// commit-modes: rows the CPU-bound variant scans per transaction [default: 2000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=30_000))]
    scan_rows: Option<u64>,
    /// group-commit: session counts, comma-separated [default: 1,2,7,32,64; 1,7 with --quick]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=512))]
    session_counts: Option<Vec<u64>>,
    /// group-commit: characters of each inserted value [default: 2000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    value_bytes: Option<u64>,
    /// strands: log_parallelism values, comma-separated [default: 1,2,4,8; 1,2 with --quick]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=64))]
    strands: Option<Vec<u32>>,
    /// strands: sessions [default: 32; 8 with --quick]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=512))]
    strand_sessions: Option<u64>,
    /// redo-size: transaction redo sizes, comma-separated, bytes or with K/M
    /// [default: 1K,4K,16K,64K,256K,512K,1M,2M,4M,8M,16M; 1K,64K,1M,2M with --quick]
    #[arg(long, value_delimiter = ',', value_parser = parse_redo_size)]
    redo_sizes: Option<Vec<usize>>,
    /// redo-size: transactions per size [default: 10; 2 with --quick]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    repeats: Option<u64>,
    /// batch-dml: rows per commit, comma-separated [default: 1,2,10,100; 1,10 with --quick]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=100_000))]
    batch_rows: Option<Vec<u64>>,
    /// batch-dml: session counts, comma-separated [default: 1,6]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=512))]
    batch_sessions: Option<Vec<u64>>,
}

fn sync_method_parser() -> impl clap::builder::TypedValueParser<Value = SyncMethod> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(SyncMethod::ALL.map(|m| m.name()))
        .map(|name| SyncMethod::parse(&name).expect("a possible value"))
}

/// Redo sizes from 1 KiB to 16 MiB (a transaction's redo may be at most half a log file).
fn parse_redo_size(text: &str) -> Result<usize, String> {
    let n = crate::common::parse_bytes(text)
        .ok_or_else(|| format!("{text:?} is not a size (bytes, or a number with K or M)"))?;
    if !(1024..=16 << 20).contains(&n) {
        return Err(format!("{text:?}: redo sizes must be from 1K to 16M"));
    }
    Ok(n)
}

/// What `--target` names.
enum TargetSpec {
    Embedded,
    Wire(String),
}

fn target_spec(text: &str) -> Result<TargetSpec> {
    if text == "embedded" {
        return Ok(TargetSpec::Embedded);
    }
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        return Ok(TargetSpec::Wire(text.to_string()));
    }
    bail!("--target {text:?}: expected `embedded` or a postgres://HOST:PORT/DB URL")
}

fn options(args: &Args) -> Result<Options> {
    let q = args.quick;
    for (name, v) in [("--seconds", args.seconds), ("--warmup", args.warmup)] {
        if let Some(v) = v {
            let lowest = if name == "--warmup" { 0.0 } else { 0.01 };
            if !(v.is_finite() && v >= lowest && v <= 3600.0) {
                bail!("{name} must be from {lowest} to 3600 seconds, got {v}");
            }
        }
    }
    let usizes = |v: &Option<Vec<u64>>, default: Vec<usize>| -> Vec<usize> {
        v.as_ref().map(|v| v.iter().map(|n| *n as usize).collect()).unwrap_or(default)
    };
    let o = Options {
        quick: q,
        seconds: args.seconds,
        warmup: args.warmup,
        iterations: args.iterations.unwrap_or(if q { 300 } else { 10_000 }),
        sessions: args.sessions.unwrap_or(6) as usize,
        table_rows: 30_000,
        scan_rows: args.scan_rows.unwrap_or(2000),
        session_counts: usizes(&args.session_counts, if q { vec![1, 7] } else { vec![1, 2, 7, 32, 64] }),
        value_bytes: args.value_bytes.unwrap_or(2000) as usize,
        strands: args.strands.clone().unwrap_or(if q { vec![1, 2] } else { vec![1, 2, 4, 8] }),
        strand_sessions: args.strand_sessions.unwrap_or(if q { 8 } else { 32 }) as usize,
        redo_sizes: args.redo_sizes.clone().unwrap_or_else(|| {
            let sizes: &[usize] = if q {
                &[1 << 10, 64 << 10, 1 << 20, 2 << 20]
            } else {
                &[
                    1 << 10,
                    4 << 10,
                    16 << 10,
                    64 << 10,
                    256 << 10,
                    512 << 10,
                    1 << 20,
                    2 << 20,
                    4 << 20,
                    8 << 20,
                    16 << 20,
                ]
            };
            sizes.to_vec()
        }),
        repeats: args.repeats.unwrap_or(if q { 2 } else { 10 }),
        batch_rows: args.batch_rows.clone().unwrap_or(if q { vec![1, 10] } else { vec![1, 2, 10, 100] }),
        batch_sessions: usizes(&args.batch_sessions, vec![1, 6]),
    };
    if o.sessions as u64 > o.table_rows / 2 {
        bail!("--sessions {} is too many for a {}-row table", o.sessions, o.table_rows);
    }
    Ok(o)
}

fn print_list() {
    println!("redodb bench scenarios (redodb bench SCENARIO; the default is commit-modes):");
    for s in Scenario::LISTED {
        println!("  {:<17} {} ({})", s.name(), s.summary(), s.seed());
    }
    println!("  {:<17} {}", Scenario::All.name(), Scenario::All.summary());
}

pub fn run(args: Args) -> Result<()> {
    if args.list {
        print_list();
        return Ok(());
    }
    let started = Instant::now();
    let scenario = args.scenario.unwrap_or(Scenario::CommitModes);
    let spec = target_spec(&args.target)?;
    if scenario == Scenario::ClientPractices {
        bail!(
            "client-practices needs --target postgres://HOST:PORT/DB: it measures what a network client pays \
             (round trips, parses, fetch and array sizes), which an embedded database does not have; \
             the wire-protocol target is not in this version yet"
        );
    }
    if let TargetSpec::Wire(url) = &spec {
        bail!(
            "--target {url}: the wire-protocol target is not in this version yet; \
             run the scenarios on the embedded database (--target embedded, the default)"
        );
    }
    let options = options(&args)?;
    let scenarios: Vec<Scenario> = if scenario == Scenario::All {
        Scenario::LISTED.into_iter().filter(|s| s.embedded()).collect()
    } else {
        vec![scenario]
    };
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)
            .with_context(|| format!("creating the output directory {}", out.display()))?;
    }

    let (dir, _temp) = bench_dir(args.data.as_deref(), "redodb-bench-")?;
    let facts = machine::facts(&dir);
    let cpus = facts.cpus;
    let progress = progress::Progress::new();
    progress.start_config("raw disk: 4 KiB write+sync with each sync method");
    let raw_disk = progress.suspend(|| probe::run(&dir, if args.quick { 0.2 } else { 0.5 }))?;
    let supported = |m: SyncMethod| raw_disk.iter().any(|r| r.method == m.name() && r.supported);
    let method = match args.sync_method {
        Some(m) if !supported(m) => {
            bail!("--sync-method {} is not supported in {} ({})", m.name(), dir.display(), facts.fs_type)
        }
        Some(m) => m,
        None if supported(DEFAULT_SYNC_METHOD) => DEFAULT_SYNC_METHOD,
        None => SyncMethod::Fdatasync,
    };
    let r =
        raw_disk.iter().find(|r| r.method == method.name()).context("no raw figure for the sync method")?;
    let raw = RawSync {
        method: method.name(),
        p50_us: r.median_us.unwrap_or(0.0),
        p99_us: r.p99_us.unwrap_or(0.0),
    };
    let mut target = target::Embedded::new(&dir.join("redodb-bench-db"), method);

    let names: Vec<&str> = scenarios.iter().map(|s| s.name()).collect();
    let kind = target.kind();
    progress.suspend(|| {
        println!("redodb {} bench {} on the {kind} target", facts.redodb_version, names.join(", "));
        crate::engine_bench::report::print_machine(&facts);
        println!(
            "  raw sync      4 KiB write+sync with {}: p50 {:.1} us, p99 {:.1} us ({} syncs/s)",
            raw.method,
            raw.p50_us,
            raw.p99_us,
            thousands(1e6 / raw.p50_us.max(1e-3))
        );
        println!();
    });

    let mut reports = Vec::new();
    for s in &scenarios {
        let mut ctx = Ctx {
            target: &mut target,
            options: &options,
            progress: &progress,
            cpus,
            raw: &raw,
            base: EngineSetup { log_parallelism: 1, sync_method: method },
        };
        let result = scenarios::run(&mut ctx, *s);
        let report = match result {
            Ok(r) => r,
            Err(e) => {
                progress.done();
                return Err(e);
            }
        };
        progress.suspend(|| {
            for t in &report.tables {
                println!("{}", t.render());
            }
            for f in &report.findings {
                println!("  * {f}");
            }
            println!();
        });
        reports.push(report);
    }
    progress.done();
    // The database goes before its directory does: it is scratch, also inside --data.
    let target_text = target.describe();
    drop(target);
    let db_dir = dir.join("redodb-bench-db");
    if db_dir.exists() {
        std::fs::remove_dir_all(&db_dir).with_context(|| format!("removing {}", db_dir.display()))?;
    }

    let caption = format!(
        "redodb {} · {} CPUs · {} on {} · raw 4 KiB sync ({}) p50 {:.0} us, p99 {:.0} us\n{} · {}",
        facts.redodb_version,
        facts.cpus,
        facts.fs_type,
        facts.fs_device,
        raw.method,
        raw.p50_us,
        raw.p99_us,
        facts.kernel,
        if args.quick { "--quick run" } else { "full run" }
    );
    for r in &mut reports {
        for c in &mut r.charts {
            c.caption = caption.clone();
        }
        r.chart_files = r.charts.iter().map(|c| c.file.clone()).collect();
    }
    let report = BenchReport {
        redodb_version: facts.redodb_version,
        target: target_text,
        target_kind: "embedded",
        quick: args.quick,
        machine: &facts,
        raw_sync: &raw,
        raw_disk: &raw_disk,
        scenarios: &reports,
        total_seconds: started.elapsed().as_secs_f64(),
    };
    if let Some(out) = &args.out {
        write_out(out, &report)?;
    }
    println!("total time {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Writes everything into `out`.
fn write_out(out: &Path, report: &BenchReport) -> Result<()> {
    let json_file = "bench.json";
    let csv_file = "measurements.csv";
    output::write_json(&out.join(json_file), report)?;
    output::write_csv(&out.join(csv_file), report.scenarios)?;
    let mut svgs = Vec::new();
    for s in report.scenarios {
        let mut mine = Vec::new();
        for c in &s.charts {
            let svg = charts::svg(c)?;
            std::fs::write(out.join(format!("{}.svg", c.file)), &svg)
                .with_context(|| format!("writing {}.svg", c.file))?;
            let png = charts::png(c)?;
            std::fs::write(out.join(format!("{}.png", c.file)), png)
                .with_context(|| format!("writing {}.png", c.file))?;
            mine.push(svg);
        }
        svgs.push(mine);
    }
    let page = html::page(report, &svgs, json_file, csv_file);
    std::fs::write(out.join("index.html"), page).context("writing index.html")?;
    println!(
        "wrote {}: {json_file}, {csv_file}, {} charts (SVG + PNG), index.html",
        out.display(),
        report.scenarios.iter().map(|s| s.charts.len()).sum::<usize>()
    );
    Ok(())
}
