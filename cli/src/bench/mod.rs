//! `redodb bench [SCENARIO]`: the seeds' experiments, one command each ([`scenarios`]).
//!
//! A run: the machine's facts and the raw disk (4 KiB write+sync with each sync method,
//! the engine benchmark's probe, in the directory the database lives in), then the
//! scenario(s) on the target, each printing its tables as it ends; with `--out DIR` the
//! JSON of every measurement (and every `v$` difference), a CSV of the figures, each
//! chart as SVG and PNG, and `index.html` tying them together.
//!
//! The scenarios talk to a [`target::Target`] only through SQL, and read the database's
//! figures through the `v$` views ([`vstats`]), so the wire-protocol target ([`wire`])
//! runs them unchanged against redodb's server, and against PostgreSQL with what
//! `pg_stat_wal` can tell. `client-practices` measures what a network client pays, so on
//! the embedded target it runs on redodb's own server, started for it.
//!
//! Several targets (`--compare A,B,...`, `--with-postgres`): each scenario runs on each
//! target in turn, then its tables are printed with every target's rows together and its
//! headline figure with the ratios to the first target ([`compare`]). The servers a run
//! starts (`--with-postgres`'s PostgreSQL 15 cluster, redodb's server for
//! client-practices) are stopped and removed at the end, on an error too, and on Ctrl-C
//! (`common::interrupt`).

mod charts;
mod client_practices;
mod compare;
mod driver;
mod html;
mod output;
mod progress;
mod scenarios;
mod target;
mod vstats;
mod wire;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use redo::config::DEFAULT_SYNC_METHOD;
use redo::SyncMethod;

use crate::common::postgres::{PostgresCluster, RedodbServer};
use crate::common::{bench_dir, interrupt, machine, thousands};
use crate::engine_bench::probe;
use output::{BenchReport, Comparison, RawSync, ScenarioReport, TargetReport};
use scenarios::{Ctx, Options, Scenario};
use target::{EngineSetup, Flavour, Target};
use wire::WireTarget;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Scenarios (redodb bench --list): commit-time, commit-modes (the default), group-commit, \
strands, redo-size, batch-dml, client-practices, all.\n\
A wire target (--target, --compare) gets tables named bench_* dropped and created."
)]
pub struct Args {
    /// The experiment to run [default: commit-modes]
    #[arg(value_enum)]
    scenario: Option<Scenario>,
    /// List the scenarios, one line each
    #[arg(long)]
    list: bool,
    /// Where to run: `embedded` (a database in this process) or a postgres://USER@HOST:PORT/DB
    /// URL of redodb's server or of PostgreSQL
    #[arg(long, default_value = "embedded")]
    target: String,
    /// Run each scenario on several targets and compare them, ratios to the first:
    /// comma-separated, each `embedded` or a postgres:// URL
    #[arg(long, value_delimiter = ',', conflicts_with = "target")]
    compare: Option<Vec<String>>,
    /// Also start a throwaway PostgreSQL 15 cluster (Debian package postgresql-15) in the
    /// run's directory and compare with it
    #[arg(long)]
    with_postgres: bool,
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
    /// client-practices: statements per bind test, rows per fetch and insert test
    /// [default: 10000; 2000 with --quick]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    client_rows: Option<u64>,
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

/// What `--target` or an item of `--compare` names, or `--with-postgres` adds.
enum TargetSpec {
    Embedded,
    Wire(String),
    /// The PostgreSQL cluster this run starts.
    StartedPostgres,
}

fn target_spec(text: &str) -> Result<TargetSpec> {
    let text = text.trim();
    if text == "embedded" {
        return Ok(TargetSpec::Embedded);
    }
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        return Ok(TargetSpec::Wire(text.to_string()));
    }
    bail!("target {text:?}: expected `embedded` or a postgres://USER@HOST:PORT/DB URL")
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
        client_rows: args.client_rows.unwrap_or(if q { 2000 } else { 10_000 }),
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
    interrupt::install();
    let result = run_bench(args);
    match result {
        Err(e) if interrupt::requested() => {
            Err(e.context("interrupted (Ctrl-C); the servers this run started are stopped"))
        }
        other => other,
    }
}

/// A target of the run, and what it needs kept alive.
struct RunTarget {
    target: Box<dyn Target>,
    label: String,
    /// client-practices on the embedded target: redodb's server started for it (the
    /// server first, then its wire target, made on first use).
    own_server: Option<(RedodbServer, WireTarget)>,
}

fn run_bench(args: Args) -> Result<()> {
    let started = Instant::now();
    let scenario = args.scenario.unwrap_or(Scenario::CommitModes);
    let mut specs = match &args.compare {
        Some(list) => list.iter().map(|t| target_spec(t)).collect::<Result<Vec<_>>>()?,
        None => vec![target_spec(&args.target)?],
    };
    if specs.is_empty() {
        bail!("--compare needs at least one target");
    }
    if args.with_postgres {
        specs.push(TargetSpec::StartedPostgres);
    }
    let options = options(&args)?;
    let scenarios: Vec<Scenario> =
        if scenario == Scenario::All { Scenario::LISTED.to_vec() } else { vec![scenario] };
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)
            .with_context(|| format!("creating the output directory {}", out.display()))?;
    }

    let (dir, _temp) = bench_dir(args.data.as_deref(), "redodb-bench-")?;
    let facts = machine::facts(&dir);
    let cpus = facts.cpus;
    let progress = progress::Progress::new();
    let result = (|| -> Result<()> {
        // The cluster lives as long as this closure: dropped (stopped, removed) on the
        // way out, an error's too.
        let cluster = if args.with_postgres {
            progress.start_config("starting a throwaway PostgreSQL 15 cluster");
            let c = PostgresCluster::start(&dir.join("redodb-bench-postgres"))
                .context("--with-postgres: starting PostgreSQL 15")?;
            Some(c)
        } else {
            None
        };
        // Wire targets are reached before anything is measured: a wrong URL fails at once.
        let mut wire_targets: Vec<Option<WireTarget>> = Vec::new();
        for spec in &specs {
            let url = match spec {
                TargetSpec::Embedded => None,
                TargetSpec::Wire(url) => Some(url.clone()),
                TargetSpec::StartedPostgres => cluster.as_ref().map(|c| c.url()),
            };
            wire_targets.push(match url {
                Some(url) => Some(WireTarget::connect_to(&url, scenarios::TABLES)?),
                None => None,
            });
        }

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
        let raw = RawSync::of(&raw_disk, method).context("no raw figure for the sync method")?;
        let base = EngineSetup { log_parallelism: 1, sync_method: method };

        let mut targets: Vec<RunTarget> = Vec::new();
        let mut embedded_count = 0;
        for wire in wire_targets {
            let target: Box<dyn Target> = match wire {
                Some(w) => Box::new(w),
                None => {
                    let name = if embedded_count == 0 {
                        "redodb-bench-db".to_string()
                    } else {
                        format!("redodb-bench-db-{embedded_count}")
                    };
                    embedded_count += 1;
                    Box::new(target::Embedded::new(&dir.join(name), method))
                }
            };
            targets.push(RunTarget { label: target.label(), target, own_server: None });
        }
        unique_labels(&mut targets);

        let names: Vec<&str> = scenarios.iter().map(|s| s.name()).collect();
        let labels: Vec<String> = targets.iter().map(|t| t.label.clone()).collect();
        let flavours: Vec<Flavour> = targets.iter().map(|t| t.target.flavour()).collect();
        progress.suspend(|| {
            if targets.len() == 1 {
                println!(
                    "redodb {} bench {} on the {} target",
                    facts.redodb_version,
                    names.join(", "),
                    labels[0]
                );
            } else {
                println!(
                    "redodb {} bench {} compared on {} (ratios to {})",
                    facts.redodb_version,
                    names.join(", "),
                    labels.join(", "),
                    labels[0]
                );
            }
            crate::engine_bench::report::print_machine(&facts);
            println!(
                "  raw sync      4 KiB write+sync with {}: p50 {:.1} us, mean {:.1} us, p99 {:.1} us ({} writes/s, one writer)",
                raw.method,
                raw.p50_us,
                raw.mean_us,
                raw.p99_us,
                thousands(raw.ops_per_sec)
            );
            for t in &targets {
                println!("  target        {}: {}", t.label, t.target.describe());
            }
            println!();
        });

        let mut reports: Vec<Vec<ScenarioReport>> = targets.iter().map(|_| Vec::new()).collect();
        let mut comparisons: Vec<Comparison> = Vec::new();
        for s in &scenarios {
            for (i, t) in targets.iter_mut().enumerate() {
                let report = run_one(t, *s, &dir, &options, &progress, cpus, &raw_disk, base)
                    .with_context(|| format!("on {}", t.label))?;
                if labels.len() == 1 {
                    progress.suspend(|| print_report(&report, None));
                }
                reports[i].push(report);
            }
            if labels.len() > 1 {
                let each: Vec<&ScenarioReport> =
                    reports.iter().map(|r| r.last().expect("just run")).collect();
                let comparison = compare::compare(*s, &each, &labels, &flavours);
                progress.suspend(|| print_comparison(&comparison, &each, &labels));
                comparisons.push(comparison);
            }
        }
        progress.done();

        let mut target_reports: Vec<TargetReport> = Vec::new();
        for (t, scenario_reports) in targets.into_iter().zip(reports) {
            target_reports.push(TargetReport {
                label: t.label.clone(),
                flavour: t.target.flavour(),
                description: t.target.describe(),
                url: t.target.url(),
                server_version: t.target.server_version(),
                scenarios: scenario_reports,
            });
            // The embedded database and its directory go here (Embedded's drop), a
            // server started for client-practices too.
            drop(t);
        }
        drop(cluster);

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
        let several = target_reports.len() > 1;
        for t in &mut target_reports {
            let slug = slug(&t.label);
            for r in &mut t.scenarios {
                for c in &mut r.charts {
                    c.caption = caption.clone();
                    if several {
                        c.file = format!("{slug}-{}", c.file);
                        c.title = format!("{} ({})", c.title, t.label);
                    }
                }
                r.chart_files = r.charts.iter().map(|c| c.file.clone()).collect();
            }
        }
        for c in &mut comparisons {
            if let Some(chart) = &mut c.chart {
                chart.caption = caption.clone();
            }
        }
        let report = BenchReport {
            redodb_version: facts.redodb_version,
            quick: args.quick,
            machine: &facts,
            raw_sync: &raw,
            raw_disk: &raw_disk,
            targets: &target_reports,
            comparisons: &comparisons,
            total_seconds: started.elapsed().as_secs_f64(),
        };
        if let Some(out) = &args.out {
            write_out(out, &report)?;
        }
        println!("total time {:.1} s", started.elapsed().as_secs_f64());
        Ok(())
    })();
    if result.is_err() {
        progress.done();
    }
    result
}

/// Runs scenario `s` on `t`; client-practices on the embedded target runs on redodb's
/// server, started in `dir` on first use.
#[allow(clippy::too_many_arguments)]
fn run_one(
    t: &mut RunTarget,
    s: Scenario,
    dir: &Path,
    options: &Options,
    progress: &progress::Progress,
    cpus: usize,
    raw_disk: &[probe::RawDisk],
    base: EngineSetup,
) -> Result<ScenarioReport> {
    let on_own_server = s.needs_wire() && t.target.flavour() == Flavour::Embedded;
    if on_own_server && t.own_server.is_none() {
        progress.start_config("starting redodb serve for client-practices (it measures a network client)");
        let server = RedodbServer::start_with(
            &dir.join("redodb-bench-server"),
            &["--sync-method".to_string(), base.sync_method.name().to_string()],
        )
        .context("starting redodb serve for client-practices")?;
        let wire = WireTarget::connect_to(&server.url(), scenarios::TABLES)?;
        t.own_server = Some((server, wire));
    }
    let (target, ran_on): (&mut dyn Target, Option<String>) = match &mut t.own_server {
        Some((server, wire)) if on_own_server => (
            wire,
            Some(format!(
                "redodb server started for it at {} (client-practices needs a network client)",
                server.url()
            )),
        ),
        _ => (&mut *t.target, None),
    };
    // The target's commits are compared with the raw disk under its own sync method
    // (PostgreSQL's wal_sync_method mapped to redodb's), never another's.
    let raw = target.raw_sync_method().and_then(|m| RawSync::of(raw_disk, m));
    let mut ctx = Ctx { target, options, progress, cpus, raw: raw.as_ref(), base };
    let mut report = scenarios::run(&mut ctx, s)?;
    report.ran_on = ran_on;
    for m in &mut report.measurements {
        m.figures.target = t.label.clone();
    }
    Ok(report)
}

/// Labels that tell the targets apart: a second "embedded" becomes "embedded (2)".
fn unique_labels(targets: &mut [RunTarget]) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for t in targets.iter_mut() {
        let n = seen.entry(t.label.clone()).or_default();
        *n += 1;
        if *n > 1 {
            t.label = format!("{} ({n})", t.label);
        }
    }
}

/// A label as a file name prefix: `PostgreSQL 15.14` -> `postgresql-15-14`.
fn slug(label: &str) -> String {
    let mut out = String::new();
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// A scenario's tables and findings; `label` prefixes the findings of one target of a
/// comparison.
fn print_report(report: &ScenarioReport, label: Option<&str>) {
    if label.is_none() {
        if let Some(on) = &report.ran_on {
            println!("{} ran on the {on}", report.name);
        }
        for t in &report.tables {
            println!("{}", t.render());
        }
    }
    for f in &report.findings {
        match label {
            Some(l) => println!("  * [{l}] {f}"),
            None => println!("  * {f}"),
        }
    }
    if label.is_none() {
        println!();
    }
}

fn print_comparison(comparison: &Comparison, reports: &[&ScenarioReport], labels: &[String]) {
    for (r, l) in reports.iter().zip(labels) {
        if let Some(on) = &r.ran_on {
            println!("{} on {l}: ran on the {on}", r.name);
        }
    }
    for t in &comparison.tables {
        println!("{}", t.render());
    }
    for (r, l) in reports.iter().zip(labels) {
        print_report(r, Some(l));
    }
    println!();
    println!("{}", comparison.headline.render());
}

/// Writes everything into `out`.
fn write_out(out: &Path, report: &BenchReport) -> Result<()> {
    let json_file = "bench.json";
    let csv_file = "measurements.csv";
    output::write_json(&out.join(json_file), report)?;
    output::write_csv(&out.join(csv_file), report.targets)?;
    let mut svgs: BTreeMap<String, String> = BTreeMap::new();
    let charts = report
        .targets
        .iter()
        .flat_map(|t| t.scenarios.iter().flat_map(|s| s.charts.iter()))
        .chain(report.comparisons.iter().filter_map(|c| c.chart.as_ref()));
    for c in charts {
        let svg = charts::svg(c)?;
        std::fs::write(out.join(format!("{}.svg", c.file)), &svg)
            .with_context(|| format!("writing {}.svg", c.file))?;
        let png = charts::png(c)?;
        std::fs::write(out.join(format!("{}.png", c.file)), png)
            .with_context(|| format!("writing {}.png", c.file))?;
        svgs.insert(c.file.clone(), svg);
    }
    let page = html::page(report, &svgs, json_file, csv_file);
    std::fs::write(out.join("index.html"), page).context("writing index.html")?;
    println!(
        "wrote {}: {json_file}, {csv_file}, {} charts (SVG + PNG), index.html",
        out.display(),
        svgs.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_become_file_name_prefixes() {
        assert_eq!(slug("PostgreSQL 15.14"), "postgresql-15-14");
        assert_eq!(slug("redodb server (2)"), "redodb-server-2");
    }

    #[test]
    fn targets_are_embedded_or_postgres_urls() {
        assert!(matches!(target_spec("embedded"), Ok(TargetSpec::Embedded)));
        assert!(matches!(target_spec(" postgresql://u@h:1/d"), Ok(TargetSpec::Wire(_))));
        assert!(target_spec("mysql://x").is_err());
    }
}
