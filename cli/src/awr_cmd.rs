//! `redodb snapshot` and `redodb report`: the workload repository from the command line.
//!
//! `snapshot` opens the database embedded, takes a snapshot and prints its id. The
//! database directory is locked by whoever has it open, so beside a running server it
//! fails with an error that says so (the server takes snapshots with `EXEC snapshot`).
//! `report` only reads the stored snapshots (`<dir>/awr/`), never the database, so it
//! needs no lock and works beside a running server.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args as ClapArgs, ValueEnum};
use db::{awr, Database, DbConfig, DbError};
use redo::format::{ControlRecord, CONTROL_SLOT_BYTES};
use redo::{LogConfig, OpenMode, SyncMethod};

#[derive(ClapArgs, Debug)]
pub struct SnapshotArgs {
    /// Database directory (an existing database).
    #[arg(long)]
    data: PathBuf,
    /// Directory of a mirrored member, for a database created with mirrors (repeat in
    /// member order).
    #[arg(long = "mirror-dir")]
    mirror_dirs: Vec<PathBuf>,
    /// fdatasync, o_dsync or o_direct (for file systems without O_DIRECT) [default: o_direct].
    #[arg(long)]
    sync_method: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Html,
}

#[derive(ClapArgs, Debug)]
pub struct ReportArgs {
    /// Database directory.
    #[arg(long)]
    data: PathBuf,
    /// First snapshot of the report [default: the one before --end].
    #[arg(long)]
    begin: Option<u64>,
    /// Last snapshot of the report [default: the newest].
    #[arg(long)]
    end: Option<u64>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The log geometry the database in `dir` was created with, read from its control file:
/// the static parameters must match it to open the database.
fn existing_log_config(dir: &Path, mirror_dirs: Vec<PathBuf>) -> anyhow::Result<LogConfig> {
    let path = redo::storage::control_path(dir);
    let bytes = std::fs::read(&path)
        .with_context(|| format!("{} is not a redodb database: reading {}", dir.display(), path.display()))?;
    let newest = bytes
        .chunks_exact(CONTROL_SLOT_BYTES as usize)
        .take(2)
        .filter_map(|slot| ControlRecord::decode(slot).ok())
        .max_by_key(|record| record.generation)
        .with_context(|| format!("{}: neither control file slot is readable", path.display()))?;
    if newest.members as usize != 1 + mirror_dirs.len() {
        bail!(
            "the database in {} has {} member(s) per log group: give the directories of the other {} with --mirror-dir",
            dir.display(),
            newest.members,
            newest.members - 1
        );
    }
    let mut config = LogConfig::new(dir);
    config.open_mode = OpenMode::MustExist;
    config.log_file_size = newest.log_file_size;
    config.log_groups = newest.groups;
    config.mirror_dirs = mirror_dirs;
    // The default log buffer does not fit in small log files.
    config.log_buffer = config.log_buffer.min(newest.log_file_size / 2).max(64 << 10);
    Ok(config)
}

pub fn run_snapshot(args: SnapshotArgs) -> anyhow::Result<()> {
    let mut log = existing_log_config(&args.data, args.mirror_dirs)?;
    if let Some(method) = &args.sync_method {
        log.sync_method = SyncMethod::parse(method)
            .with_context(|| format!("--sync-method {method:?}: expected fdatasync, o_dsync or o_direct"))?;
    }
    // No automatic snapshots: the one asked for is taken below.
    let config =
        DbConfig { log, checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..DbConfig::default() };
    let db = match Database::open(&args.data, config) {
        Ok(db) => db,
        // Says which directory, who holds it and what to do instead.
        Err(e @ DbError::DirectoryInUse { .. }) => return Err(e.into()),
        Err(e) => return Err(e).with_context(|| format!("opening the database in {}", args.data.display())),
    };
    let info = awr::take_snapshot(&db).context("taking a snapshot")?;
    println!("{}", info.id);
    Ok(())
}

pub fn run_report(args: ReportArgs) -> anyhow::Result<()> {
    if !args.data.is_dir() {
        bail!("the database directory {} does not exist", args.data.display());
    }
    let listing = awr::list_snapshots(&args.data)?;
    for damaged in &listing.damaged {
        eprintln!(
            "warning: skipping snapshot {} ({}): {}",
            damaged.id,
            damaged.path.display(),
            damaged.reason
        );
    }
    let range = awr::load_range(&args.data, args.begin, args.end)?;
    let report = match args.format {
        ReportFormat::Text => awr::report_text(&range)?,
        ReportFormat::Html => awr::report_html(&range)?,
    };
    match &args.out {
        Some(path) => std::fs::write(path, report).with_context(|| format!("writing {}", path.display()))?,
        None => std::io::stdout().lock().write_all(report.as_bytes()).context("writing the report")?,
    }
    Ok(())
}
