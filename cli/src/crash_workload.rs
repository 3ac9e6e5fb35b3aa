//! `redodb crash-workload`: the child process of the kill -9 crash tests.
//!
//! Opens (recovering) the redo log in `--dir`, then runs `--sessions` threads that commit
//! forever in all four commit modes, chosen at random per commit. After each commit
//! returns it appends one line to `--acks` (outside the log directory):
//! `<scn> <W|N> <payload>`, W for a commit acknowledged under WAIT (durable), N under
//! NOWAIT. Each line is one `write` call, so a kill leaves whole lines plus at most one
//! torn last line. The parent kills this process at random moments and checks recovery
//! against the acknowledgements.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::crash_configs::crash_config;
use anyhow::Context;
use redo::sim::SimRng;
use redo::{CommitLogging, CommitOptions, CommitWait, RedoLog, SyncMethod};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Database directory.
    #[arg(long)]
    pub dir: PathBuf,
    /// File to append acknowledgements to.
    #[arg(long)]
    pub acks: PathBuf,
    /// Prefix making every payload of this run unique.
    #[arg(long, default_value = "run")]
    pub tag: String,
    #[arg(long, default_value_t = 4)]
    pub sessions: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 1)]
    pub strands: u32,
    #[arg(long, default_value = "fdatasync")]
    pub sync_method: String,
    /// Directory of a second member of every group (multiplexing).
    #[arg(long)]
    pub mirror: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let method = SyncMethod::parse(&args.sync_method).context("unknown sync method")?;
    let config = crash_config(args.dir.clone(), args.mirror.clone(), args.strands, method);
    let (log, _recovered) = RedoLog::open(config).context("open")?;
    let acks = Arc::new(Mutex::new(OpenOptions::new().create(true).append(true).open(&args.acks)?));
    thread::scope(|scope| {
        for session in 0..args.sessions {
            let (log, acks, tag) = (&log, acks.clone(), &args.tag);
            let seed = args.seed;
            scope.spawn(move || -> anyhow::Result<()> {
                let mut rng = SimRng::new(seed * 977 + session);
                let mut s = log.session();
                for n in 0.. {
                    let payload = format!("{tag}:s{session}:n{n}:{}", "x".repeat(rng.upto(300) as usize));
                    s.log_change(payload.as_bytes())?;
                    let wait = if rng.upto(1) == 0 { CommitWait::Wait } else { CommitWait::NoWait };
                    let logging =
                        if rng.upto(1) == 0 { CommitLogging::Immediate } else { CommitLogging::Batch };
                    let r = s.commit(CommitOptions::new(wait, logging))?;
                    let line = format!("{} {} {}\n", r.scn.0, if r.waited { 'W' } else { 'N' }, payload);
                    acks.lock().expect("acks poisoned").write_all(line.as_bytes())?;
                }
                Ok(())
            });
        }
        scope.spawn(|| loop {
            if log.wait_checkpoint_request(Duration::from_millis(20)) {
                let (scn, lsn) = log.durable_commit();
                if log.checkpoint(scn, lsn).is_err() {
                    return;
                }
            }
        });
    });
    Ok(())
}
