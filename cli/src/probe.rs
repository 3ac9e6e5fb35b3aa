//! `redodb probe [DIR]`: the `pg_test_fsync` of redo. How long does the device in DIR
//! take to make a write durable, for each way the log writer can sync (fdatasync, O_DSYNC,
//! O_DIRECT + O_DSYNC), for write sizes from one sector to 1 MiB, with one and several
//! concurrent writers, on preallocated and on appended files? And what follows for redodb:
//! the single-session commit ceiling, how far group commit can go, and which sync method
//! to give the engine (printed as the exact setting, or written into a server config with
//! `--write-config`).
//!
//! Each cell is [`crate::engine_bench::probe::measure`]: the files are created and opened
//! by the engine's own storage layer, so the flags and the system calls are the log
//! writer's. The probe works in a temporary directory inside DIR, removed at the end.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use redo::config::DEFAULT_SYNC_METHOD;
use redo::SyncMethod;
use serde::Serialize;

use crate::common::machine::{self, MachineFacts};
use crate::common::{bytes_text, opt, parse_bytes, thousands};
use crate::engine_bench::probe::{measure, FileKind, ProbeSpec, Probed, MAX_WRITE_BYTES, MIN_WRITE_BYTES};

/// The write size a small commit's redo takes (one block): the commit latency's cell.
const COMMIT_WRITE_BYTES: usize = 4096;
/// A sync method within this fraction of the fastest counts as just as fast.
const SAME_SPEED: f64 = 0.10;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory on the device to probe (the probe files go in a temporary directory
    /// inside it) [default: the current directory]
    dir: Option<PathBuf>,
    /// Seconds per cell [default: 0.5, or 0.1 with --quick]
    #[arg(long)]
    seconds: Option<f64>,
    /// Write sizes, comma-separated, in bytes or with K/M (512 to 16M, multiples of 512)
    /// [default: 512,4K,16K,64K,256K,1M; 512,4K,64K,1M with --quick]
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    sizes: Option<Vec<usize>>,
    /// Concurrent writers, comma-separated (1 to 64), each with its own file [default: 1,4]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=64))]
    writers: Option<Vec<u32>>,
    /// Every size x method x writers x file kind (by default the larger writer counts and
    /// appended files are probed at 4 KiB and 64 KiB only)
    #[arg(long)]
    full: bool,
    /// Short run for CI: 0.1 s per cell, fewer sizes
    #[arg(long)]
    quick: bool,
    /// Redo bytes of one small commit, for the group-commit estimate
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(20..=1_048_576))]
    commit_bytes: u64,
    /// Write every cell and the verdict as JSON to this file
    #[arg(long)]
    json: Option<PathBuf>,
    /// Set `sync_method` to the recommended method in this `redodb serve --config` TOML
    /// file (created if missing; other settings are kept)
    #[arg(long)]
    write_config: Option<PathBuf>,
}

/// A size as bytes, or with a K or M suffix (powers of 1024).
pub(crate) fn parse_size(text: &str) -> Result<usize, String> {
    let n = parse_bytes(text)
        .ok_or_else(|| format!("{text:?} is not a size (bytes, or a number with K or M)"))?;
    if !(MIN_WRITE_BYTES..=MAX_WRITE_BYTES).contains(&n) || !n.is_multiple_of(MIN_WRITE_BYTES) {
        return Err(format!("{text:?}: write sizes must be multiples of 512 bytes from 512 to 16M"));
    }
    Ok(n)
}

/// What the probe concludes.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// The sync method to use on this device.
    pub recommended_sync_method: &'static str,
    pub engine_default_sync_method: &'static str,
    /// p50 of a 4 KiB write+sync with the recommended method, one writer, preallocated.
    pub commit_write_p50_us: Option<f64>,
    /// One WAIT session can commit at most once per write+sync.
    pub single_session_commits_per_sec: Option<f64>,
    /// The most commits of `commit_bytes` that one write+sync at a time can carry per
    /// second, and the write size that gets there.
    pub group_commit_commits_per_sec: Option<f64>,
    pub group_commit_write_bytes: Option<usize>,
    pub commit_bytes: u64,
    /// Syncs/s of the most writers / syncs/s of one writer, at 4 KiB.
    pub concurrency_speedup: Option<f64>,
    pub concurrency_writers: Option<usize>,
    /// p50 appended / p50 preallocated, fdatasync at 4 KiB.
    pub append_penalty: Option<f64>,
    /// The line for `redodb serve --config FILE`.
    pub config_line: String,
    /// The verdict in plain language, one sentence per line.
    pub lines: Vec<String>,
}

#[derive(Serialize)]
struct Report<'a> {
    machine: &'a MachineFacts,
    seconds_per_cell: f64,
    cells: &'a [Probed],
    verdict: &'a Verdict,
    total_seconds: f64,
}

pub fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    let seconds = args.seconds.unwrap_or(if args.quick { 0.1 } else { 0.5 });
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 600.0) {
        bail!("--seconds must be more than 0 and at most 600, got {seconds}");
    }
    let sizes = args.sizes.clone().unwrap_or_else(|| {
        if args.quick {
            vec![512, 4 << 10, 64 << 10, 1 << 20]
        } else {
            vec![512, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
        }
    });
    let mut writers: Vec<usize> =
        args.writers.clone().unwrap_or_else(|| vec![1, 4]).into_iter().map(|w| w as usize).collect();
    writers.sort_unstable();
    writers.dedup();
    let parent = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    if !parent.is_dir() {
        bail!("{} is not a directory (redodb probe [DIR] probes the device holding DIR)", parent.display());
    }
    let work = tempfile::Builder::new()
        .prefix(".redodb-probe-")
        .tempdir_in(&parent)
        .with_context(|| format!("creating a probe directory in {}", parent.display()))?;
    let facts = machine::facts(work.path());
    let plan = plan(&sizes, &writers, args.full);

    println!(
        "redodb {} probe: write+sync latency of the device holding {}",
        facts.redodb_version,
        parent.display()
    );
    crate::engine_bench::report::print_machine(&facts);
    println!("  run           {seconds:.2} s per cell, {} cells", plan.len());
    println!();

    let mut cells = Vec::with_capacity(plan.len());
    for (k, spec) in plan.iter().enumerate() {
        let spec = ProbeSpec { seconds, ..*spec };
        eprintln!(
            "[{:>2}/{}] {} {} x{} {}",
            k + 1,
            plan.len(),
            spec.method.name(),
            bytes_text(spec.write_bytes as u64),
            spec.writers,
            spec.file.name()
        );
        cells.push(measure(work.path(), &spec)?);
    }
    print_cells(&cells);
    let verdict = verdict(&cells, args.commit_bytes);
    println!("VERDICT");
    for line in &verdict.lines {
        println!("  {line}");
    }
    println!();
    if let Some(path) = &args.write_config {
        write_config(path, verdict.recommended_sync_method)?;
        println!("wrote {} to {}", verdict.config_line, path.display());
    }
    if let Some(path) = &args.json {
        let report = Report {
            machine: &facts,
            seconds_per_cell: seconds,
            cells: &cells,
            verdict: &verdict,
            total_seconds: started.elapsed().as_secs_f64(),
        };
        let mut text = serde_json::to_string_pretty(&report).context("encoding the JSON report")?;
        text.push('\n');
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("JSON: {}", path.display());
    }
    println!("total time {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The cells to run: every size with every method (1 writer, preallocated); then at 4 KiB
/// and 64 KiB the appended files and the other writer counts; `full` runs everything.
fn plan(sizes: &[usize], writers: &[usize], full: bool) -> Vec<ProbeSpec> {
    let mut plan = Vec::new();
    let spec =
        |method, write_bytes, writers, file| ProbeSpec { method, write_bytes, writers, file, seconds: 0.0 };
    for file in FileKind::ALL {
        for &w in writers {
            for &size in sizes {
                let base = file == FileKind::Preallocated && w == writers[0];
                let side = size == COMMIT_WRITE_BYTES
                    || (size == 64 << 10 && file == FileKind::Appended && w == writers[0]);
                if full || base || side {
                    for method in SyncMethod::ALL {
                        plan.push(spec(method, size, w, file));
                    }
                }
            }
        }
    }
    if !sizes.contains(&COMMIT_WRITE_BYTES) {
        // The verdict needs the commit-sized cell.
        for method in SyncMethod::ALL {
            plan.push(spec(method, COMMIT_WRITE_BYTES, writers[0], FileKind::Preallocated));
        }
    }
    plan
}

fn print_cells(cells: &[Probed]) {
    println!("WRITE + SYNC: sequential writes, each made durable before the next (per writer)");
    println!(
        "  {:<10} {:<13} {:>7} {:>8} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "method", "file", "writers", "size", "p50 us", "p99 us", "mean us", "syncs/s", "MB/s"
    );
    let mut previous = None;
    for c in cells {
        let group = (c.file, c.writers);
        if previous.is_some_and(|p| p != group) {
            println!();
        }
        previous = Some(group);
        let head = format!(
            "  {:<10} {:<13} {:>7} {:>8}",
            c.method,
            c.file.name(),
            c.writers,
            bytes_text(c.write_bytes as u64)
        );
        if c.supported {
            println!(
                "{head} {:>9} {:>9} {:>9} {:>10} {:>9}",
                opt(c.p50_us, 1),
                opt(c.p99_us, 1),
                opt(c.mean_us, 1),
                thousands(c.ops_per_sec.unwrap_or(0.0)),
                opt(c.mb_per_sec, 1)
            );
        } else {
            println!("{head}  unsupported here: {}", c.note.as_deref().unwrap_or(""));
        }
    }
    println!("  (latency of one write+sync; syncs/s and MB/s count all writers together)");
    println!();
}

fn cell(
    cells: &[Probed],
    method: SyncMethod,
    size: usize,
    writers: usize,
    file: FileKind,
) -> Option<&Probed> {
    cells.iter().find(|c| {
        c.supported
            && c.method == method.name()
            && c.write_bytes == size
            && c.writers == writers
            && c.file == file
    })
}

/// Reads the cells into the verdict.
pub fn verdict(cells: &[Probed], commit_bytes: u64) -> Verdict {
    let one = cells.iter().map(|c| c.writers).min().unwrap_or(1);
    let commit_p50 = |m: SyncMethod| {
        cell(cells, m, COMMIT_WRITE_BYTES, one, FileKind::Preallocated).and_then(|c| c.p50_us)
    };
    let measured: Vec<(SyncMethod, f64)> =
        SyncMethod::ALL.into_iter().filter_map(|m| commit_p50(m).map(|p| (m, p))).collect();
    let fastest = measured.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
    // The engine's default stays unless another method is clearly faster here.
    let recommended = match (fastest, commit_p50(DEFAULT_SYNC_METHOD)) {
        (Some((_, best)), Some(default)) if default <= best * (1.0 + SAME_SPEED) => DEFAULT_SYNC_METHOD,
        (Some((m, _)), _) => m,
        (None, _) => SyncMethod::Fdatasync,
    };
    let mut lines = Vec::new();
    let others: Vec<String> = measured
        .iter()
        .filter(|(m, _)| *m != recommended)
        .map(|(m, p)| format!("{} {p:.0} us", m.name()))
        .collect();
    let p50 = commit_p50(recommended);
    match p50 {
        Some(p) => lines.push(format!(
            "Sync method: use {} on this device (4 KiB write+sync p50 {p:.0} us{}{}).",
            recommended.name(),
            if others.is_empty() { String::new() } else { format!("; {}", others.join(", ")) },
            if recommended == DEFAULT_SYNC_METHOD {
                "; it is the engine's default, nothing to change".to_string()
            } else {
                format!("; the engine's default {} is slower here", DEFAULT_SYNC_METHOD.name())
            }
        )),
        None => lines.push("Sync method: no 4 KiB cell could run; fdatasync is the safe choice.".into()),
    }
    for m in SyncMethod::ALL {
        if let Some(c) = cells.iter().find(|c| c.method == m.name() && !c.supported) {
            lines.push(format!("{} does not work here: {}.", m.name(), c.note.as_deref().unwrap_or("?")));
        }
    }
    let single = p50.map(|p| 1e6 / p);
    if let Some(rate) = single {
        lines.push(format!(
            "Single-session commit ceiling: about {} commits/s: a WAIT commit of one session waits for one \
             write+sync, nobody shares it.",
            thousands(rate)
        ));
    }
    // Group commit: one write in flight at a time, each carrying size / commit_bytes commits.
    let group = cells
        .iter()
        .filter(|c| {
            c.supported
                && c.writers == one
                && c.file == FileKind::Preallocated
                && c.method == recommended.name()
        })
        .filter(|c| c.write_bytes <= 1 << 20)
        .filter_map(|c| {
            c.p50_us.map(|p| (c.write_bytes, (c.write_bytes as f64 / commit_bytes as f64).max(1.0) * 1e6 / p))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((size, rate)) = group {
        lines.push(format!(
            "Group commit: one {} write+sync carries about {} commits of {commit_bytes} bytes, so the disk \
             alone allows some {} commits/s with one write in flight; CPU per commit will cap it long before \
             (the bench's group-commit scenario shows where).",
            bytes_text(size as u64),
            thousands((size as f64 / commit_bytes as f64).max(1.0)),
            thousands(rate)
        ));
    }
    let many = cells.iter().map(|c| c.writers).max().filter(|&w| w > one);
    let speedup = many.and_then(|w| {
        let ops = |n| {
            cell(cells, recommended, COMMIT_WRITE_BYTES, n, FileKind::Preallocated)
                .and_then(|c| c.ops_per_sec)
        };
        ops(w).zip(ops(one)).map(|(a, b)| a / b)
    });
    if let (Some(w), Some(x)) = (many, speedup) {
        lines.push(format!(
            "Concurrent writers: {w} writers make {x:.1}x the syncs/s of one{}. redodb keeps one write in flight \
             per log member and gets its concurrency from group commit instead.",
            if x >= 1.5 { " (the device serves syncs in parallel)" } else { " (the device serialises syncs)" }
        ));
    }
    let append = cell(cells, SyncMethod::Fdatasync, COMMIT_WRITE_BYTES, one, FileKind::Appended)
        .and_then(|c| c.p50_us)
        .zip(
            cell(cells, SyncMethod::Fdatasync, COMMIT_WRITE_BYTES, one, FileKind::Preallocated)
                .and_then(|c| c.p50_us),
        )
        .map(|(a, p)| a / p);
    if let Some(x) = append {
        lines.push(format!(
            "Appending: an fdatasync that also extends the file costs {x:.1}x a preallocated one; redodb \
             preallocates its log files, so it pays the preallocated figure."
        ));
    }
    let config_line = format!("sync_method = \"{}\"", recommended.name());
    lines.push(format!(
        "To use it: `redodb serve --sync-method {}`, or the line `{config_line}` in the file given to \
         `redodb serve --config` (`redodb probe --write-config FILE` writes it there).",
        recommended.name()
    ));
    Verdict {
        recommended_sync_method: recommended.name(),
        engine_default_sync_method: DEFAULT_SYNC_METHOD.name(),
        commit_write_p50_us: p50,
        single_session_commits_per_sec: single,
        group_commit_commits_per_sec: group.map(|g| g.1),
        group_commit_write_bytes: group.map(|g| g.0),
        commit_bytes,
        concurrency_speedup: speedup,
        concurrency_writers: many,
        append_penalty: append,
        config_line,
        lines,
    }
}

/// Sets `sync_method` in the server configuration file at `path` (other lines kept), then
/// checks that the server reads the file back with that method.
fn write_config(path: &Path, method: &str) -> Result<()> {
    let line = format!("sync_method = \"{method}\"    # chosen by redodb probe");
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "# redodb serve --config\n".into(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut replaced = false;
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| {
            let key = l.trim_start().split(['=', ' ', '\t']).next().unwrap_or("");
            if key == "sync_method" && !replaced {
                replaced = true;
                line.clone()
            } else {
                l.to_string()
            }
        })
        .collect();
    if !replaced {
        lines.push(line);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))?;
    let back = server::config::Settings::from_file(path)?;
    if back.sync_method.as_deref() != Some(method) {
        bail!("{} does not read back with sync_method {method}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(method: SyncMethod, size: usize, writers: usize, file: FileKind, p50: f64) -> Probed {
        Probed {
            method: method.name(),
            write_bytes: size,
            writers,
            file,
            supported: true,
            note: None,
            samples: 100,
            seconds: 1.0,
            p50_us: Some(p50),
            p99_us: Some(p50 * 2.0),
            mean_us: Some(p50),
            max_us: Some(p50 * 3.0),
            ops_per_sec: Some(writers as f64 * 1e6 / p50),
            mb_per_sec: Some(size as f64 / p50),
        }
    }

    #[test]
    fn sizes_parse_with_suffixes_and_are_checked() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert!(parse_size("100").is_err());
        assert!(parse_size("32M").is_err());
        assert!(parse_size("four").is_err());
    }

    #[test]
    fn the_default_stays_unless_another_method_is_clearly_faster() {
        let pre = FileKind::Preallocated;
        let near = [
            cell(SyncMethod::Fdatasync, 4096, 1, pre, 60.0),
            cell(SyncMethod::Dsync, 4096, 1, pre, 70.0),
            cell(SyncMethod::DirectDsync, 4096, 1, pre, 64.0),
        ];
        assert_eq!(verdict(&near, 256).recommended_sync_method, DEFAULT_SYNC_METHOD.name());
        let far = [
            cell(SyncMethod::Fdatasync, 4096, 1, pre, 40.0),
            cell(SyncMethod::DirectDsync, 4096, 1, pre, 100.0),
            cell(SyncMethod::Fdatasync, 65536, 1, pre, 80.0),
            cell(SyncMethod::Fdatasync, 4096, 4, pre, 50.0),
            cell(SyncMethod::Fdatasync, 4096, 1, FileKind::Appended, 120.0),
        ];
        let v = verdict(&far, 256);
        assert_eq!(v.recommended_sync_method, "fdatasync");
        assert_eq!(v.single_session_commits_per_sec, Some(25_000.0));
        // 64 KiB carries 256 commits in 80 us: 3.2M/s beats 4 KiB's 16 in 40 us.
        assert_eq!(v.group_commit_write_bytes, Some(65536));
        assert_eq!(v.concurrency_speedup, Some(3.2));
        assert_eq!(v.append_penalty, Some(3.0));
        assert_eq!(v.config_line, "sync_method = \"fdatasync\"");
    }

    #[test]
    fn write_config_keeps_other_settings_and_replaces_the_method() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("redodb.toml");
        std::fs::write(&path, "port = 5433\nsync_method = \"o_dsync\"\n").unwrap();
        write_config(&path, "fdatasync").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("port = 5433"), "{text}");
        assert_eq!(text.matches("sync_method").count(), 1, "{text}");
        let fresh = dir.path().join("new.toml");
        write_config(&fresh, "o_direct").unwrap();
        assert_eq!(
            server::config::Settings::from_file(&fresh).unwrap().sync_method.as_deref(),
            Some("o_direct")
        );
    }
}
