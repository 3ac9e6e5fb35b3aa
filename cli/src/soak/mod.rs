//! `redodb soak`: a mixed workload over the wire for a given time, with `kill -9` and
//! restart at random moments, checking after each restart that no acknowledged commit was
//! lost, and watching the server process and its directory for growth.
//!
//! The run, in lives (one `redodb serve` process each, all on the same directory):
//! 1. start the server from this binary (`server`), its log appended to `server.log`;
//! 2. from the second life on, verify what it recovered: each client's rows against its
//!    journal (`model`), the lock and scan tables against their invariants;
//! 3. run the clients (`client`) until the kill moment (a random one between half and
//!    1.5 times `--kill-every` into the life) or the end of the run;
//! 4. at the kill moment raise the kill flag, SIGKILL the server, collect the clients
//!    (each stops at the call the kill cut off), and go to 1;
//! 5. at the end of the run stop the clients, compare the server's commit statistics of
//!    the life with the clients' counts, SIGTERM it (exit 0 expected), and start one last
//!    life to verify exactly: after a clean shutdown every acknowledged commit must be
//!    there, NOWAIT ones too.
//!
//! Meanwhile a sampler (`sample`) records the server's RSS, open files and threads and the
//! directory's sizes, and the coordinator watches for hangs (a client without an answer
//! for `--hang-timeout`) and for a server that exits on its own. The verdict (`report`):
//! any error that was not injected (a kill, the calls it cut off, a cancel), a failed
//! verification, a panic or an ERROR line in the server's log, an unclean exit, or a
//! growth above `--max-rss-growth-pct` fails the run, which then exits non-zero.

mod client;
mod model;
mod report;
mod sample;
mod server;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use redo::sim::SimRng;

use crate::common::interrupt;
use client::{Client, ClientStats, Life, LifeEnd, ModeCounts, UnexpectedError, SCAN_ROWS};
use model::{Row, Rows};
use report::{Config, Directory, Errors, LifeRecord, SoakReport, Span, StatisticsCheck, Verification};
use sample::{DirSizes, Sampler, Target};
use server::{LogFindings, ServerProcess};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// How long to run (60s, 30m, 1h ...), restarts and checks included.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// The run's directory (new or empty): the database in db/, the server's log in
    /// server.log; kept. Without it a temporary directory is used, removed after a run
    /// that passed and kept after one that failed.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Client threads, each with two connections (its work and a lock holder).
    #[arg(long, default_value_t = 6)]
    clients: u32,
    /// Mean time between kill -9s, each at a random moment between half and 1.5 times
    /// it into the server's life; 0 never kills.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    kill_every: Duration,
    /// Time between samples of the server's RSS, open files, threads and directory.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    sample_every: Duration,
    /// Write the figures, every sample and every life as JSON to FILE.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Keys per client (half of them hold a row on average).
    #[arg(long, default_value_t = 1000)]
    keys_per_client: i64,
    /// Growth is judged after this warm-up [default: 20% of the duration].
    #[arg(long, value_parser = humantime::parse_duration)]
    warm_up: Option<Duration>,
    /// Fail the run if RSS grows more than this after the warm-up (within a life or
    /// across lives), in percent [default: only reported].
    #[arg(long)]
    max_rss_growth_pct: Option<f64>,
    /// A client without an answer for this long is hung, which fails the run.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    hang_timeout: Duration,
    /// Seed of the workload and kill moments [default: from the clock; printed].
    #[arg(long)]
    seed: Option<u64>,
    /// The server's log file size (small, so the log switches and reuses its groups).
    #[arg(long, default_value = "16M")]
    log_file_size: String,
    /// The server's checkpoint image interval.
    #[arg(long, default_value_t = 10_000)]
    checkpoint_interval_ms: u64,
    /// The server's AWR snapshot interval (0: none).
    #[arg(long, default_value_t = 1)]
    snapshot_interval_minutes: u64,
    /// The server's sync method [default: the server's].
    #[arg(long)]
    sync_method: Option<String>,
    /// The server's log level (its log goes to server.log in the run directory).
    #[arg(long, default_value = "info")]
    server_log_level: String,
    /// More `redodb serve` flags, one per use: --serve-arg=--log-parallelism=2.
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    serve_args: Vec<String>,
}

/// How long the clients may take to end after a kill or a stop.
const CLIENT_END_TIMEOUT: Duration = Duration::from_secs(90);

pub fn run(args: Args) -> Result<()> {
    if args.clients == 0 || args.clients > 45 {
        bail!("--clients {}: between 1 and 45 (each uses two of the server's 100 connections)", args.clients);
    }
    if args.keys_per_client < 10 {
        bail!("--keys-per-client {}: at least 10", args.keys_per_client);
    }
    if args.duration < Duration::from_secs(1) {
        bail!("--duration {:?}: at least 1 s", args.duration);
    }
    if args.sample_every < Duration::from_millis(100) {
        bail!("--sample-every {:?}: at least 100 ms", args.sample_every);
    }
    interrupt::install();
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    let (run_dir, temporary) = run_directory(args.data.as_deref())?;
    let mut serve_args = vec![
        "--log-level".to_string(),
        args.server_log_level.clone(),
        "--log-file-size".to_string(),
        args.log_file_size.clone(),
        "--checkpoint-interval-ms".to_string(),
        args.checkpoint_interval_ms.to_string(),
        "--snapshot-interval-minutes".to_string(),
        args.snapshot_interval_minutes.to_string(),
    ];
    if let Some(method) = &args.sync_method {
        serve_args.extend(["--sync-method".to_string(), method.clone()]);
    }
    serve_args.extend(args.serve_args.iter().cloned());
    let warm_up = args.warm_up.unwrap_or(args.duration / 5);
    let config = Config {
        duration_s: args.duration.as_secs_f64(),
        clients: args.clients,
        kill_every_s: args.kill_every.as_secs_f64(),
        keys_per_client: args.keys_per_client,
        seed,
        sample_every_s: args.sample_every.as_secs_f64(),
        warm_up_s: warm_up.as_secs_f64(),
        serve_args: serve_args.clone(),
        run_dir: run_dir.display().to_string(),
        build: if cfg!(debug_assertions) { "debug" } else { "release" },
    };
    println!(
        "redodb soak: {} clients for {:.0} s, kill -9 every {} ({} build), seed {seed}\nrun directory {} (server log: server.log)\nredodb serve {}",
        config.clients,
        config.duration_s,
        if args.kill_every.is_zero() { "never".to_string() } else { format!("~{:.0} s", config.kill_every_s) },
        config.build,
        run_dir.display(),
        serve_args.join(" ")
    );
    let mut soak = Soak::new(&args, config, &run_dir, seed);
    let report = soak.run();
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).context("encoding the JSON")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    print!("{}", report.summary());
    if let Some(dir) = temporary {
        if report.passed {
            drop(dir);
        } else {
            println!("kept the run directory for inspection: {}", dir.keep().display());
        }
    }
    if !report.passed {
        bail!("the soak failed: {}", report.failures.join("; "));
    }
    Ok(())
}

/// `dir` (created, must be new or empty), or a new temporary directory.
fn run_directory(dir: Option<&Path>) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    match dir {
        Some(d) => {
            if d.exists()
                && std::fs::read_dir(d).with_context(|| format!("reading {}", d.display()))?.next().is_some()
            {
                bail!("--data {}: not empty (the soak creates a new database there)", d.display());
            }
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            Ok((d.to_path_buf(), None))
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("redodb-soak-")
                .tempdir()
                .context("creating a temporary directory")?;
            Ok((t.path().to_path_buf(), Some(t)))
        }
    }
}

/// How a life's workload ended.
enum End {
    Kill,
    Deadline,
    Interrupted,
    Exited(std::process::ExitStatus),
    Hang(String),
}

struct Soak {
    config: Config,
    duration: Duration,
    kill_every: Duration,
    hang_timeout: Duration,
    sample_every: Duration,
    max_rss_growth_pct: Option<f64>,
    db_dir: PathBuf,
    log_path: PathBuf,
    serve_args: Vec<String>,
    rng: SimRng,
    clients: Vec<Option<Client>>,
    run_start: Instant,
    lives: Vec<LifeRecord>,
    unexpected: Vec<UnexpectedError>,
    failures: Vec<String>,
    kills: u64,
    recovery: Verification,
    restarts_verified: u64,
    verifications_failed: u64,
    statistics_check: Option<StatisticsCheck>,
    runtime: Option<tokio::runtime::Runtime>,
    /// Where the current life's part of the server's log starts.
    log_offset: u64,
    /// Each client's watch, by id (the clients themselves are in their threads during a life).
    watches: Vec<(i64, Arc<client::Watch>)>,
}

impl Soak {
    fn new(args: &Args, config: Config, run_dir: &Path, seed: u64) -> Soak {
        let clients: Vec<Option<Client>> =
            (0..args.clients).map(|c| Some(Client::new(i64::from(c), args.keys_per_client, seed))).collect();
        let watches = clients.iter().flatten().map(|c| (c.id, c.watch.clone())).collect();
        Soak {
            watches,
            log_offset: 0,
            duration: args.duration,
            kill_every: args.kill_every,
            hang_timeout: args.hang_timeout,
            sample_every: args.sample_every,
            max_rss_growth_pct: args.max_rss_growth_pct,
            db_dir: run_dir.join("db"),
            log_path: run_dir.join("server.log"),
            serve_args: config.serve_args.clone(),
            config,
            rng: SimRng::new(seed),
            clients,
            run_start: Instant::now(),
            lives: Vec::new(),
            unexpected: Vec::new(),
            failures: Vec::new(),
            kills: 0,
            recovery: Verification::default(),
            restarts_verified: 0,
            verifications_failed: 0,
            statistics_check: None,
            runtime: None,
        }
    }

    fn t(&self) -> f64 {
        self.run_start.elapsed().as_secs_f64()
    }

    fn error(&mut self, kind: &str, doing: &str, message: String) {
        let t_s = self.t();
        println!("   ERROR at {t_s:.1} s, {doing}: {kind}: {message}");
        self.unexpected.push(UnexpectedError {
            t_s,
            client: None,
            kind: kind.to_string(),
            doing: doing.to_string(),
            message,
        });
    }

    fn run(&mut self) -> SoakReport {
        self.run_start = Instant::now();
        let deadline = self.run_start + self.duration;
        let target: Target = Arc::new(Mutex::new(None));
        let watches = self.watches.iter().map(|(_, w)| w.clone()).collect();
        let sampler = match Sampler::start(
            self.run_start,
            self.sample_every,
            self.db_dir.clone(),
            target.clone(),
            watches,
        ) {
            Ok(s) => Some(s),
            Err(e) => {
                self.failures.push(format!("starting the sampler: {e}"));
                None
            }
        };
        if let Err(e) = self.lives_until(deadline, &target) {
            self.failures.push(format!("{e:#}"));
        }
        *target.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let samples = sampler.map(Sampler::finish).unwrap_or_default();
        self.report(samples)
    }

    /// The lives of the run; an error ends the run early (a server that does not start,
    /// clients that do not end).
    fn lives_until(&mut self, deadline: Instant, target: &Target) -> Result<()> {
        self.runtime = Some(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("starting a tokio runtime")?,
        );
        let mut previous_clean = false;
        let mut final_check = false;
        let mut previous_end = String::new();
        for life in 1u32.. {
            let label = match (life, final_check) {
                (1, _) => "life 1: a new database".to_string(),
                (_, true) => format!("life {life}: the check after the clean shutdown"),
                _ => format!("life {life}: restart after {previous_end}"),
            };
            self.log_offset = std::fs::metadata(&self.log_path).map_or(0, |m| m.len());
            let started_s = self.t();
            let server = ServerProcess::start(&self.db_dir, &self.log_path, &label, &self.serve_args)
                .with_context(|| format!("starting the server for life {life}"))?;
            *target.lock().unwrap_or_else(|p| p.into_inner()) = Some((life, server.pid));
            let mut record = LifeRecord {
                life,
                pid: server.pid,
                started_s,
                startup_ms: server.startup.as_secs_f64() * 1000.0,
                ended_s: started_s,
                workload_ended_s: None,
                ended_by: String::new(),
                verification: None,
                commits: ModeCounts::default(),
            };
            if life == 1 {
                self.create_schema(server.port)?;
            } else {
                let v = self.verify(server.port, previous_clean);
                println!(
                    "   life {life} (pid {}): recovery and start {:.0} ms; {} {}: {} rows, {} commits recovered, \
                     {} NOWAIT lost, in doubt {} found / {} not",
                    server.pid,
                    record.startup_ms,
                    if v.exact { "exact check after the clean shutdown".to_string() } else { format!("check after {previous_end}") },
                    if v.passed() { "passed" } else { "FAILED" },
                    v.rows,
                    v.commits_recovered,
                    v.nowait_lost,
                    v.in_doubt_committed,
                    v.in_doubt_lost
                );
                record.verification = Some(v);
            }
            if final_check {
                let status = server.terminate()?;
                if !status.success() {
                    self.error(
                        "unclean shutdown",
                        "the final SIGTERM",
                        format!("redodb serve exited with {status}"),
                    );
                }
                record.ended_by = format!("SIGTERM after the check ({status})");
                record.ended_s = self.t();
                self.lives.push(record);
                return Ok(());
            }
            let (end, commits, clean, workload_ended_s) = self.workload(life, server, deadline)?;
            record.commits = commits;
            record.workload_ended_s = Some(workload_ended_s);
            record.ended_s = self.t();
            record.ended_by = end.clone();
            previous_end = end;
            self.lives.push(record);
            previous_clean = clean;
            if clean {
                final_check = true;
            }
            if interrupt::requested() {
                self.failures.push("interrupted (Ctrl-C) before the end of the run".to_string());
                return Ok(());
            }
        }
        Ok(())
    }

    /// Runs the clients against `server` until its kill or the end of the run; returns
    /// how the life ended, its commits, whether the server shut down cleanly and when
    /// the workload ended (before the kill or the stop).
    fn workload(
        &mut self,
        life: u32,
        mut server: ServerProcess,
        deadline: Instant,
    ) -> Result<(String, ModeCounts, bool, f64)> {
        let baseline = self.sysstat(server.port);
        let signals = Arc::new(Life {
            killing: Default::default(),
            stop: Default::default(),
            port: server.port,
            run_start: self.run_start,
        });
        let mut handles: Vec<JoinHandle<(Client, LifeEnd)>> = Vec::new();
        let now_ms = self.run_start.elapsed().as_millis() as u64;
        for (_, watch) in &self.watches {
            // The hang watch counts from the life's start, not from the previous life.
            watch.progress_ms.store(now_ms, Ordering::Relaxed);
        }
        for slot in &mut self.clients {
            let mut client = slot.take().expect("every client is back between lives");
            let signals = signals.clone();
            let id = client.id;
            let handle = std::thread::Builder::new()
                .name(format!("soak-client-{id}"))
                .spawn(move || {
                    let end = client.run_life(&signals);
                    (client, end)
                })
                .context("spawning a client thread")?;
            handles.push(handle);
        }
        let kill_at = (!self.kill_every.is_zero())
            .then(|| {
                let factor = 0.5 + self.rng.upto(1_000_000) as f64 / 1_000_000.0;
                Instant::now() + self.kill_every.mul_f64(factor)
            })
            .filter(|at| *at < deadline);
        let watches = self.watches.clone();
        let end = loop {
            std::thread::sleep(Duration::from_millis(50));
            if interrupt::requested() {
                break End::Interrupted;
            }
            if let Some(status) = server.try_exited()? {
                break End::Exited(status);
            }
            let now_ms = self.run_start.elapsed().as_millis() as u64;
            let hung = handles.iter().zip(&watches).find_map(|(h, (id, w))| {
                let idle_ms = now_ms.saturating_sub(w.progress_ms.load(Ordering::Relaxed));
                (!h.is_finished() && idle_ms > self.hang_timeout.as_millis() as u64).then(|| {
                    let doing = *w.doing.lock().unwrap_or_else(|p| p.into_inner());
                    format!(
                        "client {id} got no answer for {:.0} s while doing: {doing}",
                        idle_ms as f64 / 1000.0
                    )
                })
            });
            if let Some(h) = hung {
                break End::Hang(h);
            }
            if kill_at.is_some_and(|at| Instant::now() >= at) {
                break End::Kill;
            }
            if Instant::now() >= deadline {
                break End::Deadline;
            }
        };
        let ended_s = self.t();
        let (ended_by, clean) = match end {
            End::Kill => {
                signals.killing.store(true, Ordering::SeqCst);
                let t = self.t();
                server.kill9()?;
                self.kills += 1;
                println!("   life {life}: kill -9 at {t:.1} s");
                ("kill -9".to_string(), false)
            }
            End::Deadline | End::Interrupted => {
                signals.stop.store(true, Ordering::SeqCst);
                let commits = self.collect(life, handles)?;
                self.check_statistics(life, server.port, baseline, &commits);
                let status = server.terminate()?;
                if !status.success() {
                    self.error(
                        "unclean shutdown",
                        "SIGTERM at the end of the run",
                        format!("exited with {status}"),
                    );
                }
                println!("   life {life}: stopped with SIGTERM at {:.1} s ({status})", self.t());
                return Ok((format!("SIGTERM ({status})"), commits, status.success(), ended_s));
            }
            End::Exited(status) => {
                // The clients' lost connections follow from the exit, the error recorded here.
                signals.killing.store(true, Ordering::SeqCst);
                let tail = log_tail(&self.log_path, self.log_offset);
                self.error(
                    "server exited",
                    "running the workload",
                    format!("redodb serve exited on its own ({status}); its log ends:\n{tail}"),
                );
                (format!("exited on its own ({status})"), false)
            }
            End::Hang(what) => {
                let threads = server::thread_states(server.pid);
                self.error(
                    "hang",
                    "running the workload",
                    format!("{what}; the server's threads (tid name state wchan):\n{threads}"),
                );
                signals.killing.store(true, Ordering::SeqCst);
                server.kill9()?;
                ("kill -9 after a hang".to_string(), false)
            }
        };
        let commits = self.collect(life, handles)?;
        Ok((ended_by, commits, clean, ended_s))
    }
}

impl Soak {
    /// Waits for the client threads to end; puts the clients back and records their
    /// errors. Returns the life's commits.
    fn collect(&mut self, life: u32, handles: Vec<JoinHandle<(Client, LifeEnd)>>) -> Result<ModeCounts> {
        let deadline = Instant::now() + CLIENT_END_TIMEOUT;
        while handles.iter().any(|h| !h.is_finished()) {
            if Instant::now() >= deadline {
                let stuck: Vec<String> = handles
                    .iter()
                    .zip(&self.watches)
                    .filter(|(h, _)| !h.is_finished())
                    .map(|(_, (id, w))| {
                        format!("client {id} ({})", w.doing.lock().unwrap_or_else(|p| p.into_inner()))
                    })
                    .collect();
                let message = format!(
                    "{} did not end within {} s of the end of life {life}",
                    stuck.join(", "),
                    CLIENT_END_TIMEOUT.as_secs()
                );
                self.error("hang", "ending a life", message.clone());
                bail!("{message}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut commits = ModeCounts::default();
        for handle in handles {
            let (client, end) = match handle.join() {
                Ok(r) => r,
                Err(_) => bail!("a client thread panicked (a bug of the soak)"),
            };
            for e in &end.unexpected {
                println!(
                    "   ERROR at {:.1} s, client {}, {}: {}: {}",
                    e.t_s, client.id, e.doing, e.kind, e.message
                );
            }
            self.unexpected.extend(end.unexpected);
            commits = commits.plus(&end.commits);
            let id = client.id as usize;
            self.clients[id] = Some(client);
        }
        Ok(commits)
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.runtime.as_ref().expect("the runtime starts with the run").block_on(f)
    }

    /// A connection of the soak's own to the server on `port`.
    fn connect(&self, port: u16) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
        self.block_on(async {
            let (client, connection) =
                server::client_config(port, "soak").connect(tokio_postgres::NoTls).await?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok(client)
        })
    }

    fn create_schema(&mut self, port: u16) -> Result<()> {
        let client = self.connect(port).context("connecting to create the tables")?;
        for sql in client::schema_sql(self.config.clients) {
            self.block_on(client.batch_execute(&sql))
                .map_err(|e| anyhow::anyhow!("{}", server::describe(&e)))
                .with_context(|| format!("creating the tables: {sql:.80}"))?;
        }
        Ok(())
    }

    /// v$sysstat's commit counters.
    fn sysstat(&mut self, port: u16) -> Option<BTreeMap<String, u64>> {
        let names = StatisticsCheck::client_counts(&ModeCounts::default());
        let list: Vec<String> = names.keys().map(|n| format!("'{n}'")).collect();
        let sql = format!("SELECT name, value FROM v$sysstat WHERE name IN ({})", list.join(", "));
        let result = self.connect(port).and_then(|c| self.block_on(c.simple_query(&sql)));
        match result {
            Ok(messages) => {
                let mut values = BTreeMap::new();
                for m in messages {
                    if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                        if let (Some(name), Some(value)) =
                            (r.get(0), r.get(1).and_then(|v| v.parse::<u64>().ok()))
                        {
                            values.insert(name.to_string(), value);
                        }
                    }
                }
                Some(values)
            }
            Err(e) => {
                self.error("statistics", "reading v$sysstat", server::describe(&e));
                None
            }
        }
    }

    /// The server's commit counters over the life must equal the clients' counts: every
    /// commit was asked for in the mode the clients believe.
    fn check_statistics(
        &mut self,
        life: u32,
        port: u16,
        baseline: Option<BTreeMap<String, u64>>,
        commits: &ModeCounts,
    ) {
        let (Some(before), Some(after)) = (baseline, self.sysstat(port)) else { return };
        let server: BTreeMap<String, u64> = after
            .iter()
            .map(|(name, v)| (name.clone(), v.saturating_sub(before.get(name).copied().unwrap_or(0))))
            .collect();
        let clients = StatisticsCheck::client_counts(commits);
        let equal = server == clients;
        if !equal {
            self.error(
                "statistics",
                "comparing v$sysstat with the clients' commits",
                format!("over life {life} the server counted {server:?}, the clients {clients:?}"),
            );
        }
        self.statistics_check = Some(StatisticsCheck { life, server, clients, equal });
    }

    /// Checks what the server on `port` recovered: every client's rows against its
    /// journal (`exact` after a clean shutdown), the lock rows all 0, the scan table whole.
    fn verify(&mut self, port: u16, exact: bool) -> Verification {
        let started = Instant::now();
        let mut v = Verification { exact, ..Verification::default() };
        let fetched = self.connect(port).and_then(|c| {
            self.block_on(async {
                let rows =
                    c.query("SELECT client, k, v, note FROM soak_rows ORDER BY client, k", &[]).await?;
                let locks = c.simple_query("SELECT client, v FROM soak_locks ORDER BY client").await?;
                let scan = c.simple_query("SELECT count(*), sum(n) FROM soak_scan").await?;
                Ok((rows, locks, scan))
            })
        });
        let (rows, locks, scan) = match fetched {
            Ok(r) => r,
            Err(e) => {
                self.error("recovery check", "reading the recovered rows", server::describe(&e));
                v.clients_failed = self.config.clients;
                self.verifications_failed += 1;
                return v;
            }
        };
        let mut by_client: BTreeMap<i64, Rows> = BTreeMap::new();
        for row in &rows {
            let parsed = (|| -> Result<(i64, i64, Row), tokio_postgres::Error> {
                Ok((row.try_get(0)?, row.try_get(1)?, Row { v: row.try_get(2)?, note: row.try_get(3)? }))
            })();
            match parsed {
                Ok((client, k, r)) => {
                    by_client.entry(client).or_default().insert(k, r);
                }
                Err(e) => {
                    self.error("recovery check", "reading the recovered rows", e.to_string());
                    break;
                }
            }
        }
        for slot in &mut self.clients {
            let client = slot.as_mut().expect("every client is back between lives");
            let recovered = by_client.remove(&client.id).unwrap_or_default();
            v.rows += recovered.len() as u64;
            match client.verify(recovered, exact) {
                Ok(found) => {
                    v.clients_passed += 1;
                    v.commits_recovered += found.commits_recovered;
                    v.nowait_lost += found.nowait_lost;
                    v.in_doubt_committed += found.in_doubt_committed;
                    v.in_doubt_lost += found.in_doubt_lost;
                }
                Err(message) => {
                    v.clients_failed += 1;
                    let t_s = self.run_start.elapsed().as_secs_f64();
                    println!("   ERROR at {t_s:.1} s, client {}: recovery check: {message}", client.id);
                    self.unexpected.push(UnexpectedError {
                        t_s,
                        client: Some(client.id),
                        kind: "recovery check".into(),
                        doing: if exact {
                            "verifying after a clean shutdown"
                        } else {
                            "verifying after kill -9"
                        }
                        .into(),
                        message,
                    });
                }
            }
        }
        if !by_client.is_empty() {
            let ids: Vec<i64> = by_client.keys().copied().collect();
            self.error("recovery check", "verifying", format!("rows of clients that do not exist: {ids:?}"));
        }
        let text_rows = |messages: &[tokio_postgres::SimpleQueryMessage]| -> Vec<Vec<String>> {
            messages
                .iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        Some((0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect())
                    }
                    _ => None,
                })
                .collect()
        };
        let expected_locks: Vec<Vec<String>> =
            (0..self.config.clients).map(|c| vec![c.to_string(), "0".to_string()]).collect();
        let expected_scan = vec![vec![SCAN_ROWS.to_string(), (SCAN_ROWS * (SCAN_ROWS - 1) / 2).to_string()]];
        let (locks, scan) = (text_rows(&locks), text_rows(&scan));
        v.other_tables_ok = locks == expected_locks && scan == expected_scan;
        if locks != expected_locks {
            self.error("recovery check", "verifying soak_locks", format!("{locks:?}, expected every v 0"));
        }
        if scan != expected_scan {
            self.error(
                "recovery check",
                "verifying soak_scan",
                format!("count and sum {scan:?}, expected {expected_scan:?}"),
            );
        }
        v.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.restarts_verified += 1;
        if !v.passed() {
            self.verifications_failed += 1;
        }
        self.recovery.rows = v.rows;
        self.recovery.commits_recovered += v.commits_recovered;
        self.recovery.nowait_lost += v.nowait_lost;
        self.recovery.in_doubt_committed += v.in_doubt_committed;
        self.recovery.in_doubt_lost += v.in_doubt_lost;
        v
    }

    fn report(&mut self, samples: Vec<sample::Sample>) -> SoakReport {
        let (server_log, _) = match LogFindings::scan(&self.log_path, 0) {
            Ok(found) => found,
            Err(e) => {
                self.failures.push(format!("reading the server's log: {e:#}"));
                (LogFindings::default(), 0)
            }
        };
        let mut stats = ClientStats::default();
        for client in self.clients.iter().flatten() {
            stats.merge(&client.stats);
        }
        let spans: Vec<Span> = self
            .lives
            .iter()
            .filter_map(|l| Some(Span { life: l.life, start_s: l.started_s, end_s: l.workload_ended_s? }))
            .collect();
        let warm_up_s = self.config.warm_up_s;
        let rss_kib = report::growth(&samples, &spans, warm_up_s, |s| s.rss_kib);
        let fds = report::growth(&samples, &spans, warm_up_s, |s| s.fds);
        let threads = report::growth(&samples, &spans, warm_up_s, |s| s.threads);
        let directory = samples.last().map(|last| {
            let mut max = DirSizes::default();
            for s in &samples {
                max.log_bytes = max.log_bytes.max(s.dir.log_bytes);
                max.data_bytes = max.data_bytes.max(s.dir.data_bytes);
                max.awr_bytes = max.awr_bytes.max(s.dir.awr_bytes);
                max.other_bytes = max.other_bytes.max(s.dir.other_bytes);
            }
            Directory { last: last.dir, max }
        });
        let mut errors = Errors {
            kills: self.kills,
            connections_lost_at_kill: stats.connections_lost_at_kill,
            cancels: stats.cancels_lock_wait + stats.cancels_long_select,
            ..Errors::default()
        };
        for e in &self.unexpected {
            *errors.unexpected_by_kind.entry(e.kind.clone()).or_default() += 1;
        }
        errors.unexpected = self.unexpected.clone();
        let mut failures = self.failures.clone();
        if !errors.unexpected.is_empty() {
            let kinds: Vec<String> =
                errors.unexpected_by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
            failures.push(format!("unexpected errors: {}", kinds.join(", ")));
        }
        if server_log.panic_lines > 0 {
            failures.push(format!("the server panicked ({} lines in server.log)", server_log.panic_lines));
        }
        if server_log.error_lines > 0 {
            failures.push(format!("{} ERROR lines in server.log", server_log.error_lines));
        }
        if let (Some(max), Some(growth)) = (self.max_rss_growth_pct, rss_kib.growth_pct) {
            if growth > max {
                failures.push(format!("RSS grew {growth:.1}% after the warm-up (at most {max}% allowed)"));
            }
        }
        if samples.is_empty() {
            failures.push("no sample of the server process was taken".to_string());
        }
        let commits = stats.commits;
        SoakReport {
            passed: failures.is_empty(),
            failures,
            config: self.config.clone(),
            elapsed_s: self.t(),
            kills: self.kills,
            restarts_verified: self.restarts_verified,
            verifications_failed: self.verifications_failed,
            commits,
            commits_total: commits.total(),
            clients: stats,
            recovery: self.recovery.clone(),
            statistics_check: self.statistics_check.clone(),
            errors,
            server_log,
            rss_kib,
            fds,
            threads,
            directory,
            lives: self.lives.clone(),
            samples,
        }
    }
}

/// What the server's log says from byte `from` on (the current life's part; at most its
/// last 4 KiB).
fn log_tail(path: &Path, from: u64) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let start = text.len().saturating_sub(4096).max(from.min(text.len() as u64) as usize);
    String::from_utf8_lossy(&text[start..]).into_owned()
}
