//! The soak's samples: every few seconds, the server process as the kernel sees it
//! (`/proc/PID/status` VmRSS, the entries of `/proc/PID/fd` and `/proc/PID/task`) and the
//! database directory's sizes by kind (redo log files, checkpoint images, workload
//! repository snapshots, the rest), with the clients' commits so far. A sampler thread
//! takes them while the run goes on and prints each as a line of the run's table.
//!
//! Reading `/proc` of a process that has just been killed fails: that sample is skipped
//! (the process's figures are absent), never invented.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::client::Watch;

/// One sample.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Seconds since the run started.
    pub t_s: f64,
    /// The server life (1 for the first process, +1 at each restart).
    pub life: u32,
    pub pid: u32,
    pub rss_kib: u64,
    pub fds: u64,
    pub threads: u64,
    #[serde(flatten)]
    pub dir: DirSizes,
    /// Acknowledged commits of all clients since the run started.
    pub commits: u64,
    /// Commits per second since the previous sample.
    pub commits_per_s: f64,
}

/// The database directory's bytes by kind.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct DirSizes {
    /// Redo log files (`*.log`).
    pub log_bytes: u64,
    /// Checkpoint images (`data/`).
    pub data_bytes: u64,
    /// Workload repository snapshots (`awr/`).
    pub awr_bytes: u64,
    /// The control file and the rest.
    pub other_bytes: u64,
}

impl DirSizes {
    pub fn total(&self) -> u64 {
        self.log_bytes + self.data_bytes + self.awr_bytes + self.other_bytes
    }

    /// Sizes of the files under `db_dir`.
    pub fn of(db_dir: &Path) -> DirSizes {
        let mut sizes = DirSizes::default();
        let mut stack = vec![(db_dir.to_path_buf(), Kind::Top)];
        while let Some((dir, kind)) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.filter_map(Result::ok) {
                let Ok(meta) = entry.metadata() else { continue };
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if meta.is_dir() {
                    let sub = match (kind, name.as_ref()) {
                        (Kind::Top, "data") => Kind::Data,
                        (Kind::Top, "awr") => Kind::Awr,
                        (Kind::Top, _) => Kind::Other,
                        (k, _) => k,
                    };
                    stack.push((entry.path(), sub));
                    continue;
                }
                let bytes = meta.len();
                match kind {
                    Kind::Data => sizes.data_bytes += bytes,
                    Kind::Awr => sizes.awr_bytes += bytes,
                    _ if name.ends_with(".log") => sizes.log_bytes += bytes,
                    _ => sizes.other_bytes += bytes,
                }
            }
        }
        sizes
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Top,
    Data,
    Awr,
    Other,
}

/// What `/proc` says of process `pid`: (VmRSS in KiB, open files, threads).
pub fn process(pid: u32) -> Option<(u64, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())?;
    let count = |what: &str| std::fs::read_dir(format!("/proc/{pid}/{what}")).ok().map(|d| d.count() as u64);
    Some((rss_kib, count("fd")?, count("task")?))
}

/// The server process the sampler watches: (life, pid).
pub type Target = Arc<Mutex<Option<(u32, u32)>>>;

/// A thread taking a sample every `every`.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Sample>>>,
}

impl Sampler {
    pub fn start(
        run_start: Instant,
        every: Duration,
        db_dir: PathBuf,
        target: Target,
        watches: Vec<Arc<Watch>>,
    ) -> std::io::Result<Sampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new().name("soak-sampler".into()).spawn(move || {
            let mut samples: Vec<Sample> = Vec::new();
            let mut next = Instant::now() + every;
            println!("{}", header());
            while !stopping.load(Ordering::SeqCst) {
                if Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                next += every;
                let Some((life, pid)) = *target.lock().unwrap_or_else(|p| p.into_inner()) else { continue };
                let Some((rss_kib, fds, threads)) = process(pid) else { continue };
                let t_s = run_start.elapsed().as_secs_f64();
                let commits: u64 = watches.iter().map(|w| w.commits.load(Ordering::Relaxed)).sum();
                let commits_per_s = match samples.last() {
                    Some(prev) if t_s > prev.t_s => {
                        commits.saturating_sub(prev.commits) as f64 / (t_s - prev.t_s)
                    }
                    _ => commits as f64 / t_s.max(1e-3),
                };
                let sample = Sample {
                    t_s,
                    life,
                    pid,
                    rss_kib,
                    fds,
                    threads,
                    dir: DirSizes::of(&db_dir),
                    commits,
                    commits_per_s,
                };
                println!("{}", line(&sample));
                samples.push(sample);
            }
            samples
        })?;
        Ok(Sampler { stop, thread: Some(thread) })
    }

    /// Stops the thread; returns its samples.
    pub fn finish(mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

pub fn header() -> String {
    format!(
        "{:>8} {:>4} {:>8} {:>9} {:>5} {:>7} {:>10} {:>9} {:>9} {:>9}",
        "t (s)", "life", "pid", "RSS MiB", "fds", "threads", "commits/s", "log MiB", "data MiB", "awr KiB"
    )
}

pub fn line(s: &Sample) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    format!(
        "{:>8.1} {:>4} {:>8} {:>9.1} {:>5} {:>7} {:>10.0} {:>9.1} {:>9.2} {:>9.1}",
        s.t_s,
        s.life,
        s.pid,
        s.rss_kib as f64 / 1024.0,
        s.fds,
        s.threads,
        s.commits_per_s,
        s.dir.log_bytes as f64 / MIB,
        s.dir.data_bytes as f64 / MIB,
        s.dir.awr_bytes as f64 / 1024.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_resident_size_open_files_and_threads() {
        let (rss_kib, fds, threads) = process(std::process::id()).expect("/proc of this process");
        assert!(rss_kib > 0);
        assert!(fds >= 3, "stdin, stdout, stderr at least: {fds}");
        assert!(threads >= 1);
    }

    #[test]
    fn directory_sizes_are_split_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("redo01_1.log"), vec![0u8; 100]).unwrap();
        std::fs::write(dir.path().join("control.ctl"), vec![0u8; 10]).unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data/image-1.img"), vec![0u8; 20]).unwrap();
        std::fs::create_dir(dir.path().join("awr")).unwrap();
        std::fs::write(dir.path().join("awr/snap-1.json"), vec![0u8; 30]).unwrap();
        let sizes = DirSizes::of(dir.path());
        assert_eq!(
            (sizes.log_bytes, sizes.data_bytes, sizes.awr_bytes, sizes.other_bytes),
            (100, 20, 30, 10)
        );
        assert_eq!(sizes.total(), 160);
    }
}
