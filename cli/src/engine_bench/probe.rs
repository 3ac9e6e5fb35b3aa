//! The machine's limit ("raw disk"): 4 KiB writes at sequential aligned offsets of a
//! preallocated 64 MiB file, made durable one at a time with each sync method.
//!
//! The file is created and opened by the engine's own storage layer
//! ([`redo::storage::FileStorage`]), so it is preallocated exactly like the log files and
//! opened with exactly the flags the log writer uses: `fdatasync` is a plain open with
//! `pwrite` + `fdatasync`, `o_dsync` opens with `O_DSYNC`, `o_direct` with
//! `O_DIRECT | O_DSYNC`. Each write is one `pwritev` of one 4 KiB block-aligned buffer
//! (the same system call path as `pwrite`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use redo::storage::{AlignedBuf, FileMode, FileStorage, Storage, StorageFile};
use redo::SyncMethod;
use serde::Serialize;

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

impl RawDisk {
    fn unsupported(method: SyncMethod, why: String) -> RawDisk {
        RawDisk {
            method: method.name(),
            supported: false,
            note: Some(why),
            samples: 0,
            seconds: 0.0,
            median_us: None,
            p99_us: None,
            mean_us: None,
            max_us: None,
            ops_per_sec: None,
        }
    }
}

/// Measures every sync method for about `seconds` each, in `dir`.
pub fn run(dir: &Path, seconds: f64) -> Result<Vec<RawDisk>> {
    let path = dir.join(PROBE_FILE);
    if path.exists() {
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    }
    FileStorage
        .create_zeroed(&path, PROBE_BYTES)
        .with_context(|| format!("creating the probe file {}", path.display()))?;
    let result = SyncMethod::ALL
        .into_iter()
        .map(|method| {
            eprintln!("raw disk: 4 KiB write+sync, {}", method.name());
            probe_method(&path, method, seconds)
        })
        .collect::<Result<Vec<_>>>();
    let _ = std::fs::remove_file(&path);
    result
}

fn probe_method(path: &Path, method: SyncMethod, seconds: f64) -> Result<RawDisk> {
    let direct = method == SyncMethod::DirectDsync;
    let file = match FileStorage.open(path, FileMode::Log(method)) {
        Ok(f) => f,
        Err(e) if direct => return Ok(RawDisk::unsupported(method, format!("open: {e}"))),
        Err(e) => return Err(e).with_context(|| format!("opening {} for {}", path.display(), method.name())),
    };
    let mut buf = AlignedBuf::zeroed(WRITE_BYTES);
    let blocks = PROBE_BYTES / WRITE_BYTES as u64;
    let mut i = 0u64;
    let mut write_one = |file: &dyn StorageFile, i: u64| -> std::io::Result<()> {
        // Different bytes every time, so nothing below can skip or dedupe the write.
        buf.as_mut_slice()[..8].copy_from_slice(&(i + 1).to_le_bytes());
        file.write_at(&[buf.as_slice()], (i % blocks) * WRITE_BYTES as u64)?;
        file.sync()
    };
    while i < WARMUP_WRITES {
        match write_one(&*file, i) {
            Ok(()) => {}
            Err(e) if direct && i == 0 => return Ok(RawDisk::unsupported(method, format!("write: {e}"))),
            Err(e) => return Err(e).with_context(|| format!("{} write", method.name())),
        }
        i += 1;
    }
    let mut latencies_ns: Vec<u64> = Vec::with_capacity(1 << 16);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(seconds);
    loop {
        let t = Instant::now();
        write_one(&*file, i).with_context(|| format!("{} write", method.name()))?;
        let now = Instant::now();
        latencies_ns.push((now - t).as_nanos() as u64);
        i += 1;
        if now >= deadline {
            break;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    latencies_ns.sort_unstable();
    let n = latencies_ns.len();
    let us = |ns: u64| ns as f64 / 1000.0;
    Ok(RawDisk {
        method: method.name(),
        supported: true,
        note: None,
        samples: n as u64,
        seconds: elapsed,
        median_us: Some(us(percentile(&latencies_ns, 0.50))),
        p99_us: Some(us(percentile(&latencies_ns, 0.99))),
        mean_us: Some(latencies_ns.iter().sum::<u64>() as f64 / n as f64 / 1000.0),
        max_us: Some(us(latencies_ns[n - 1])),
        ops_per_sec: Some(n as f64 / elapsed),
    })
}

/// Nearest-rank percentile of sorted, non-empty `v`.
fn percentile(v: &[u64], q: f64) -> u64 {
    let rank = (q * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 1.0), 100);
        assert_eq!(percentile(&[7], 0.5), 7);
    }
}
