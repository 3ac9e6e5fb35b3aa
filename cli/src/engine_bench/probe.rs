//! The machine's limit ("raw disk"): 4 KiB writes at sequential aligned offsets of a
//! preallocated 64 MiB file, made durable one at a time with each sync method ([`run`]);
//! and the general cell `redodb probe` runs ([`measure`]): any write size from 512 B,
//! several concurrent writers (each with its own file), preallocated or appended files.
//!
//! The file is created and opened by the engine's own storage layer
//! ([`redo::storage::FileStorage`]), so it is preallocated exactly like the log files and
//! opened with exactly the flags the log writer uses: `fdatasync` is a plain open with
//! `pwrite` + `fdatasync`, `o_dsync` opens with `O_DSYNC`, `o_direct` with
//! `O_DIRECT | O_DSYNC`. Each write is one `pwritev` of one 4 KiB block-aligned buffer
//! (the same system call path as `pwrite`).

use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use redo::storage::{AlignedBuf, FileMode, FileStorage, Storage, StorageFile};
use redo::SyncMethod;
use serde::Serialize;

use crate::common::percentile;

pub const PROBE_FILE: &str = "engine-bench-probe.dat";
const PROBE_BYTES: u64 = 64 << 20;
const WRITE_BYTES: usize = 4096;
const WARMUP_WRITES: u64 = 16;

/// Raw-disk figures of one sync method.
#[derive(Clone, Debug, Serialize)]
pub struct RawDisk {
    pub method: &'static str,
    pub supported: bool,
    /// Why the method is unsupported here.
    pub note: Option<String>,
    pub samples: u64,
    pub seconds: f64,
    pub median_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub mean_us: Option<f64>,
    pub max_us: Option<f64>,
    pub ops_per_sec: Option<f64>,
}

/// Measures every sync method for about `seconds` each, in `dir`: 4 KiB writes, one
/// writer, a preallocated file.
pub fn run(dir: &Path, seconds: f64) -> Result<Vec<RawDisk>> {
    let spec = |method| ProbeSpec {
        method,
        write_bytes: WRITE_BYTES,
        writers: 1,
        file: FileKind::Preallocated,
        seconds,
    };
    // One preallocated file for the three methods, removed at the end.
    let result = SyncMethod::ALL
        .into_iter()
        .map(|method| {
            eprintln!("raw disk: 4 KiB write+sync, {}", method.name());
            measure(dir, &spec(method)).map(RawDisk::from)
        })
        .collect();
    for p in probe_paths(dir, &spec(SyncMethod::Fdatasync)) {
        let _ = std::fs::remove_file(p);
    }
    result
}

impl From<Probed> for RawDisk {
    fn from(p: Probed) -> RawDisk {
        RawDisk {
            method: p.method,
            supported: p.supported,
            note: p.note,
            samples: p.samples,
            seconds: p.seconds,
            median_us: p.p50_us,
            p99_us: p.p99_us,
            mean_us: p.mean_us,
            max_us: p.max_us,
            ops_per_sec: p.ops_per_sec,
        }
    }
}

/// How the probe's files are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// Zero-filled to its full size first (as the engine creates log files): a sync
    /// carries data only.
    Preallocated,
    /// Empty at the start, each write extends it: every sync also carries the new size.
    Appended,
}

impl FileKind {
    pub const ALL: [FileKind; 2] = [FileKind::Preallocated, FileKind::Appended];

    pub fn name(self) -> &'static str {
        match self {
            FileKind::Preallocated => "preallocated",
            FileKind::Appended => "appended",
        }
    }
}

/// One probe cell: `writers` threads, each writing `write_bytes` at sequential offsets of
/// its own file and making each write durable with `method`, for about `seconds`.
#[derive(Clone, Copy, Debug)]
pub struct ProbeSpec {
    pub method: SyncMethod,
    pub write_bytes: usize,
    pub writers: usize,
    pub file: FileKind,
    pub seconds: f64,
}

/// What one probe cell measured. Latencies are of one write+sync; rates count every
/// writer's.
#[derive(Clone, Debug, Serialize)]
pub struct Probed {
    pub method: &'static str,
    pub write_bytes: usize,
    pub writers: usize,
    pub file: FileKind,
    pub supported: bool,
    /// Why the cell could not run here.
    pub note: Option<String>,
    pub samples: u64,
    pub seconds: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub mean_us: Option<f64>,
    pub max_us: Option<f64>,
    pub ops_per_sec: Option<f64>,
    /// Bytes made durable per second, in MB (10^6 bytes).
    pub mb_per_sec: Option<f64>,
}

/// Largest write a probe cell may use.
pub const MAX_WRITE_BYTES: usize = 16 << 20;
/// Smallest write: one 512-byte sector.
pub const MIN_WRITE_BYTES: usize = 512;
/// An appended file is cut back to empty (outside the timed writes) when it reaches this.
const APPEND_CAP_BYTES: u64 = 64 << 20;

/// Runs one probe cell in `dir`, leaving its preallocated files for the next cell (a
/// freshly zero-filled file is still being settled by the file system and the device for
/// a while, which would show as noise in the first cells). The caller removes `dir`.
pub fn measure(dir: &Path, spec: &ProbeSpec) -> Result<Probed> {
    assert!(spec.writers >= 1 && spec.writers <= 64, "probe writers {}", spec.writers);
    assert!(
        (MIN_WRITE_BYTES..=MAX_WRITE_BYTES).contains(&spec.write_bytes)
            && spec.write_bytes.is_multiple_of(MIN_WRITE_BYTES),
        "probe write size {}",
        spec.write_bytes
    );
    measure_in(&probe_paths(dir, spec), spec)
}

/// Writer `w`'s file: one per writer and file kind.
fn probe_paths(dir: &Path, spec: &ProbeSpec) -> Vec<PathBuf> {
    (0..spec.writers).map(|w| dir.join(format!("{PROBE_FILE}.{}.{w}", spec.file.name()))).collect()
}

fn measure_in(paths: &[PathBuf], spec: &ProbeSpec) -> Result<Probed> {
    let file_bytes = PROBE_BYTES.max(16 * spec.write_bytes as u64);
    let mut files = Vec::with_capacity(paths.len());
    for path in paths {
        let reusable = spec.file == FileKind::Preallocated
            && std::fs::metadata(path).is_ok_and(|m| m.len() >= file_bytes);
        if path.exists() && !reusable {
            std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        }
        match spec.file {
            FileKind::Preallocated if reusable => {}
            FileKind::Preallocated => FileStorage
                .create_zeroed(path, file_bytes)
                .with_context(|| format!("creating the probe file {}", path.display()))?,
            FileKind::Appended => {
                std::fs::File::create(path)
                    .with_context(|| format!("creating the probe file {}", path.display()))?;
            }
        }
        let direct = spec.method == SyncMethod::DirectDsync;
        match FileStorage.open(path, FileMode::Log(spec.method)) {
            Ok(f) => files.push(f),
            Err(e) if direct => return Ok(Probed::unsupported(spec, format!("open: {e}"))),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("opening {} for {}", path.display(), spec.method.name()))
            }
        }
    }
    let limit = match spec.file {
        FileKind::Preallocated => file_bytes,
        FileKind::Appended => APPEND_CAP_BYTES.max(16 * spec.write_bytes as u64),
    };
    let barrier = Barrier::new(spec.writers);
    let outcomes: Vec<Result<Writer, String>> = thread::scope(|scope| {
        let handles: Vec<_> = files
            .iter()
            .zip(paths)
            .enumerate()
            .map(|(w, (file, path))| {
                let barrier = &barrier;
                scope.spawn(move || write_loop(&**file, path, w, spec, limit, barrier))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a probe writer panicked".into())))
            .collect()
    });
    let mut latencies_ns = Vec::new();
    let mut elapsed = 0f64;
    for outcome in outcomes {
        match outcome {
            Ok(w) => {
                latencies_ns.extend(w.latencies_ns);
                elapsed = elapsed.max(w.seconds);
            }
            Err(e) if spec.method == SyncMethod::DirectDsync && e.starts_with(FIRST_WRITE) => {
                return Ok(Probed::unsupported(spec, e));
            }
            Err(e) => anyhow::bail!("{} {} B: {e}", spec.method.name(), spec.write_bytes),
        }
    }
    latencies_ns.sort_unstable();
    let n = latencies_ns.len();
    let us = |ns: u64| ns as f64 / 1000.0;
    let ops = n as f64 / elapsed;
    Ok(Probed {
        method: spec.method.name(),
        write_bytes: spec.write_bytes,
        writers: spec.writers,
        file: spec.file,
        supported: true,
        note: None,
        samples: n as u64,
        seconds: elapsed,
        p50_us: Some(us(percentile(&latencies_ns, 0.50))),
        p99_us: Some(us(percentile(&latencies_ns, 0.99))),
        mean_us: Some(latencies_ns.iter().sum::<u64>() as f64 / n as f64 / 1000.0),
        max_us: Some(us(latencies_ns[n - 1])),
        ops_per_sec: Some(ops),
        mb_per_sec: Some(ops * spec.write_bytes as f64 / 1e6),
    })
}

impl Probed {
    fn unsupported(spec: &ProbeSpec, why: String) -> Probed {
        Probed {
            method: spec.method.name(),
            write_bytes: spec.write_bytes,
            writers: spec.writers,
            file: spec.file,
            supported: false,
            note: Some(why),
            samples: 0,
            seconds: 0.0,
            p50_us: None,
            p99_us: None,
            mean_us: None,
            max_us: None,
            ops_per_sec: None,
            mb_per_sec: None,
        }
    }
}

/// The start of a writer's error when its very first write failed (an `O_DIRECT` size or
/// alignment the device refuses: the cell is unsupported, not a failure).
const FIRST_WRITE: &str = "first write";

struct Writer {
    latencies_ns: Vec<u64>,
    seconds: f64,
}

fn write_loop(
    file: &dyn StorageFile,
    path: &Path,
    writer: usize,
    spec: &ProbeSpec,
    limit: u64,
    barrier: &Barrier,
) -> Result<Writer, String> {
    // O_DIRECT needs an aligned buffer; a 512-byte write uses the head of a 4 KiB one.
    let mut buf = AlignedBuf::zeroed(spec.write_bytes.next_multiple_of(WRITE_BYTES));
    let size = spec.write_bytes as u64;
    let mut offset = 0u64;
    // Called before each write, outside its timing: at the end of the file, start again
    // at its beginning (an appended file is first cut back to empty).
    let wrap = |offset: &mut u64| -> Result<(), String> {
        if *offset + size > limit {
            if spec.file == FileKind::Appended {
                let cut = std::fs::OpenOptions::new().write(true).open(path).and_then(|f| f.set_len(0));
                cut.map_err(|e| format!("emptying {}: {e}", path.display()))?;
            }
            *offset = 0;
        }
        Ok(())
    };
    let mut write_one = |i: u64, offset: u64| -> std::io::Result<()> {
        // Different bytes every time, so nothing below can skip or dedupe the write.
        let head = buf.as_mut_slice();
        head[..8].copy_from_slice(&(i + 1).to_le_bytes());
        head[8..16].copy_from_slice(&(writer as u64).to_le_bytes());
        file.write_at(&[&buf.as_slice()[..spec.write_bytes]], offset)?;
        file.sync()
    };
    let mut i = 0u64;
    let mut ready = Ok(());
    while i < WARMUP_WRITES && ready.is_ok() {
        ready = wrap(&mut offset).and_then(|()| {
            write_one(i, offset).map_err(|e| {
                if i == 0 {
                    format!("{FIRST_WRITE}: {e}")
                } else {
                    format!("write: {e}")
                }
            })
        });
        offset += size;
        i += 1;
    }
    // Everyone meets at the barrier, failed or not, so no writer waits for ever.
    barrier.wait();
    ready?;
    let mut latencies_ns: Vec<u64> = Vec::with_capacity(1 << 14);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(spec.seconds);
    loop {
        wrap(&mut offset)?;
        let t = Instant::now();
        write_one(i, offset).map_err(|e| format!("write: {e}"))?;
        let now = Instant::now();
        latencies_ns.push((now - t).as_nanos() as u64);
        offset += size;
        i += 1;
        if now >= deadline {
            break;
        }
    }
    Ok(Writer { latencies_ns, seconds: start.elapsed().as_secs_f64() })
}
