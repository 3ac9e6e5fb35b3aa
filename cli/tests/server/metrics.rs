//! `redodb serve`'s `/metrics` scraped by a real Prometheus (Debian package `prometheus`)
//! while pgbench puts WAIT-commit load on the server: Prometheus's PromQL answers for the
//! `log file sync` rate and p99 must be sane, and what it stored must equal the `v$` views
//! once the load has stopped. And: the endpoint is off unless configured, and a bad
//! metrics setting stops the start with an error naming it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{require_tool, Server};

const SYNC: &str = "log file sync";
/// Rows of the table the load updates.
const ROWS: u32 = 1000;
/// How long pgbench runs.
const LOAD_SECONDS: u32 = 6;

/// An HTTP/1.0 GET (one request a connection, no chunked replies): status, headers
/// (names lowercased) and body.
fn http_get(host_port: &str, path_and_query: &str, accept: &str) -> (u16, BTreeMap<String, String>, String) {
    let mut stream = TcpStream::connect(host_port).unwrap_or_else(|e| panic!("connect to {host_port}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(stream, "GET {path_and_query} HTTP/1.0\r\nHost: {host_port}\r\nAccept: {accept}\r\n\r\n").unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read the HTTP reply");
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP header end: {reply}"));
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

/// `host:port` of a URL such as `http://127.0.0.1:9187/metrics`.
fn host_port(url: &str) -> &str {
    url.strip_prefix("http://").unwrap().split('/').next().unwrap()
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// A Prometheus server on a spare loopback port, scraping `target` every second, with its
/// storage in `dir`; killed when dropped.
struct Prometheus {
    child: Child,
    address: String,
}

impl Prometheus {
    fn start(dir: &Path, target: &str) -> Prometheus {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: redodb\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        // A spare port can be taken between our look and Prometheus's bind: a few tries.
        let mut failures = Vec::new();
        for attempt in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let address = format!("127.0.0.1:{port}");
            let log = std::fs::File::create(dir.join(format!("prometheus-{attempt}.log"))).unwrap();
            let child = Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", dir.join(format!("tsdb-{attempt}")).display()))
                .arg(format!("--web.listen-address={address}"))
                .arg("--log.level=warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start prometheus");
            let mut prometheus = Prometheus { child, address };
            if prometheus.wait_ready() {
                return prometheus;
            }
            let log = std::fs::read_to_string(dir.join(format!("prometheus-{attempt}.log"))).unwrap();
            failures.push(format!("on {}: {log}", prometheus.address));
        }
        panic!("prometheus did not start:\n{}", failures.join("\n"));
    }

    /// Waits for `/-/ready`; false if Prometheus exits (its port was taken) or takes over
    /// 30 s.
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            if TcpStream::connect(&self.address).is_ok()
                && http_get(&self.address, "/-/ready", "*/*").0 == 200
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// The instant vector of `query` at `time` (unix seconds; None: now), as (labels,
    /// value) pairs.
    fn query(&self, query: &str, time: Option<f64>) -> Vec<(BTreeMap<String, String>, f64)> {
        let mut path = format!("/api/v1/query?query={}", percent_encode(query));
        if let Some(t) = time {
            path.push_str(&format!("&time={t:.3}"));
        }
        let (status, _, body) = http_get(&self.address, &path, "application/json");
        assert_eq!(status, 200, "{query}: {body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["status"], "success", "{query}: {body}");
        assert_eq!(answer["data"]["resultType"], "vector", "{query}: {body}");
        answer["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|sample| {
                let labels = sample["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect();
                let value = sample["value"][1].as_str().unwrap();
                (labels, value.parse::<f64>().unwrap_or_else(|e| panic!("{query}: {value}: {e}")))
            })
            .collect()
    }

    /// The one value `query` answers at `time`.
    fn value(&self, query: &str, time: Option<f64>) -> f64 {
        let answer = self.query(query, time);
        assert_eq!(answer.len(), 1, "{query} at {time:?}: one series expected: {answer:?}");
        answer[0].1
    }

    /// Waits until `query` (of one series) is at least `at_least`.
    fn wait_for(&self, query: &str, at_least: f64) -> f64 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let answer = self.query(query, None);
            if let Some(&(_, value)) = answer.first() {
                if value >= at_least {
                    return value;
                }
            }
            assert!(Instant::now() < deadline, "{query} never reached {at_least}: {answer:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `log file sync` as `v$system_event` and `v$event_histogram_micro` show it: (waits,
/// time waited in us, longest wait in us, waits per bucket upper bound in us).
struct SyncFigures {
    waits: u64,
    time_us: u64,
    max_us: u64,
    histogram: BTreeMap<u64, u64>,
}

fn sync_figures(server: &Server) -> SyncFigures {
    let out = server.commands(&[
        &format!(
            "SELECT total_waits, time_waited_micro, max_wait_micro FROM v$system_event WHERE event = '{SYNC}'"
        ),
        &format!("SELECT wait_time_micro, wait_count FROM v$event_histogram_micro WHERE event = '{SYNC}'"),
    ]);
    let mut lines = out.lines();
    let totals: Vec<u64> = lines.next().unwrap().split('|').map(|v| v.parse().unwrap()).collect();
    let histogram = lines
        .map(|l| {
            let (limit, count) = l.split_once('|').unwrap();
            (limit.parse().unwrap(), count.parse().unwrap())
        })
        .collect();
    SyncFigures { waits: totals[0], time_us: totals[1], max_us: totals[2], histogram }
}

/// Prometheus's `histogram_quantile` (bucketQuantile) over cumulative (upper bound, count)
/// buckets in ascending order, the last `+Inf`.
fn bucket_quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    assert!(buckets.len() >= 2 && buckets.last().unwrap().0.is_infinite(), "{buckets:?}");
    let observations = buckets.last().unwrap().1;
    assert!(observations > 0.0);
    let mut rank = q * observations;
    let b = buckets.iter().position(|&(_, count)| count >= rank).unwrap();
    if b == buckets.len() - 1 {
        return buckets[b - 1].0;
    }
    let (mut start, end, mut count) = (0.0, buckets[b].0, buckets[b].1);
    if b > 0 {
        start = buckets[b - 1].0;
        count -= buckets[b - 1].1;
        rank -= buckets[b - 1].1;
    }
    start + (end - start) * (rank / count)
}

/// The cumulative buckets, in seconds, of the waits between two readings of the views.
fn delta_buckets(before: &SyncFigures, after: &SyncFigures) -> Vec<(f64, f64)> {
    let mut cumulative = 0.0;
    let mut buckets: Vec<(f64, f64)> = (0..31)
        .map(|i| {
            let limit = 1u64 << i;
            let now = after.histogram.get(&limit).copied().unwrap_or(0);
            cumulative += (now - before.histogram.get(&limit).copied().unwrap_or(0)) as f64;
            (limit as f64 / 1e6, cumulative)
        })
        .collect();
    let last = 1u64 << 31;
    let beyond =
        after.histogram.get(&last).copied().unwrap_or(0) - before.histogram.get(&last).copied().unwrap_or(0);
    buckets.push((f64::INFINITY, cumulative + beyond as f64));
    buckets
}

/// The buckets of an answer with `le` labels, as (upper bound, count) in ascending order.
fn sorted_buckets(answer: Vec<(BTreeMap<String, String>, f64)>) -> Vec<(f64, f64)> {
    let mut buckets: Vec<(f64, f64)> = answer
        .into_iter()
        .map(|(labels, count)| {
            let le = &labels["le"];
            (if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap() }, count)
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    buckets
}

fn assert_close(what: &str, got: f64, expected: f64) {
    assert!((got - expected).abs() <= 1e-9 * expected.abs().max(1.0), "{what}: {got}, expected {expected}");
}

#[test]
fn prometheus_scrapes_the_wait_interface_under_wait_commit_load() {
    require_tool("psql");
    require_tool("pgbench");
    require_tool("prometheus");
    require_tool("promtool");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("redodb.toml");
    std::fs::write(&config, "metrics_port = 0  # the system chooses; the server prints the URL\n").unwrap();
    let server = Server::start(&dir.path().join("data"), &["--config", config.to_str().unwrap()]);
    let url = server.metrics_url.clone().expect("the server prints its metrics URL");
    let target = host_port(&url).to_string();

    // Plain scrapers get the Prometheus text format, and promtool finds nothing to lint.
    let (status, headers, text) = http_get(&target, "/metrics", "*/*");
    assert_eq!(status, 200, "{text}");
    assert_eq!(headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    assert!(text.contains("# TYPE redodb_wait_event_seconds histogram\n"), "{text}");
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    promtool.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let linted = promtool.wait_with_output().unwrap();
    assert!(
        linted.status.success() && linted.stdout.is_empty() && linted.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&linted.stdout),
        String::from_utf8_lossy(&linted.stderr)
    );
    let (_, headers, open) = http_get(&target, "/metrics", "application/openmetrics-text; version=1.0.0");
    assert!(headers["content-type"].starts_with("application/openmetrics-text"), "{headers:?}");
    assert!(open.ends_with("# EOF\n"));
    assert_eq!(http_get(&target, "/nothing", "*/*").0, 404);

    server.query("CREATE TABLE counters (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)");
    server.query(&format!(
        "INSERT INTO counters VALUES {}",
        (1..=ROWS).map(|i| format!("({i}, 0)")).collect::<Vec<_>>().join(", ")
    ));
    let setup_done = unix_now();

    let prometheus = Prometheus::start(dir.path(), &target);
    prometheus.wait_for("up{job=\"redodb\"}", 1.0);
    let count = format!("redodb_wait_event_seconds_count{{event=\"{SYNC}\"}}");
    // A scrape after the setup: the counters' starting point is in Prometheus.
    let first_scrape = prometheus.wait_for(&format!("timestamp({count})"), setup_done + 0.01);
    let before = sync_figures(&server);
    let load_start = unix_now();

    let script = dir.path().join("update.sql");
    std::fs::write(
        &script,
        format!(
            "\\set id random(1, {ROWS})\nBEGIN;\nUPDATE counters SET n = n + 1 WHERE id = :id;\nCOMMIT;\n"
        ),
    )
    .unwrap();
    let out = Command::new("pgbench")
        .args(["-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "test", "-n", "-M", "prepared"])
        .args(["-c", "4", "-j", "2", "-T", &LOAD_SECONDS.to_string(), "-f"])
        .arg(&script)
        .arg("redodb")
        .output()
        .expect("run pgbench");
    let load_end = unix_now();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "pgbench: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("number of failed transactions: 0 "), "{stdout}");
    let after = sync_figures(&server);
    let commits = after.waits - before.waits;
    assert!(commits > 0, "the WAIT commits waited on {SYNC}");
    let views_rate = commits as f64 / (load_end - load_start);

    // The two questions, asked in the middle of the load: the rate and the p99.
    let mid_load = load_start + f64::from(LOAD_SECONDS) * 0.75;
    let rate = prometheus.value(&format!("rate({count}[4s])"), Some(mid_load));
    assert!(
        rate > views_rate / 4.0 && rate < views_rate * 4.0,
        "rate of {SYNC} {rate}/s mid-load, {views_rate}/s over the load by the views"
    );
    let buckets = format!("redodb_wait_event_seconds_bucket{{event=\"{SYNC}\"}}");
    let p99 = prometheus.value(&format!("histogram_quantile(0.99, rate({buckets}[4s]))"), Some(mid_load));
    let p50 = prometheus.value(&format!("histogram_quantile(0.5, rate({buckets}[4s]))"), Some(mid_load));
    let longest = after.max_us as f64 / 1e6;
    assert!(p99.is_finite() && p99 > 0.0, "p99 {p99}");
    assert!(p99 >= p50, "p99 {p99} below the median {p50}");
    // A quantile lies inside a bucket, whose bound is at most twice the longest wait.
    assert!(p99 <= 2.0 * longest, "p99 {p99} s, the longest wait {longest} s");
    println!(
        "{SYNC}: {rate:.0}/s mid-load ({views_rate:.0}/s over the load), p50 {:.3} ms, p99 {:.3} ms",
        p50 * 1e3,
        p99 * 1e3
    );

    // At rest, what Prometheus stored is what the views show: a scrape after the load...
    let last_scrape = prometheus.wait_for(&format!("timestamp({count})"), load_end + 0.01);
    let at = Some(last_scrape);
    let rest = sync_figures(&server);
    assert_eq!(rest.waits, after.waits, "reading the views waits on no {SYNC}");
    assert_eq!(prometheus.value(&count, at), after.waits as f64, "the histogram's count");
    let waits = format!("redodb_wait_event_waits_total{{event=\"{SYNC}\"}}");
    assert_eq!(prometheus.value(&waits, at), after.waits as f64, "total_waits");
    let sum = format!("redodb_wait_event_seconds_sum{{event=\"{SYNC}\"}}");
    assert_close("the histogram's sum", prometheus.value(&sum, at), after.time_us as f64 / 1e6);
    let stored = sorted_buckets(prometheus.query(&buckets, at));
    let no_waits = SyncFigures { waits: 0, time_us: 0, max_us: 0, histogram: BTreeMap::new() };
    assert_eq!(stored, delta_buckets(&no_waits, &after), "every bucket, cumulative");
    // ... and over the load, the samples' span holds exactly the waits the views counted,
    // in the same buckets: the quantile from Prometheus's buckets is the views' one.
    let span = format!("{}ms", ((last_scrape - first_scrape) * 1000.0).round() as u64 + 1);
    let grown = |series: &str| format!("max_over_time({series}[{span}]) - min_over_time({series}[{span}])");
    assert_eq!(prometheus.value(&grown(&count), at), commits as f64);
    let p99_load = prometheus.value(&format!("histogram_quantile(0.99, {})", grown(&buckets)), at);
    assert_close("p99 over the load", p99_load, bucket_quantile(0.99, &delta_buckets(&before, &after)));
    assert!(prometheus.value("redodb_user_commits_total", at) >= commits as f64);
    assert_eq!(prometheus.value("redodb_log_failed", at), 0.0);
    assert_eq!(server.terminate().code(), Some(0));
}

/// Inodes of the TCP sockets listening on this machine, and their ports.
fn listening_sockets() -> BTreeMap<u64, u16> {
    let mut sockets = BTreeMap::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // st 0A: LISTEN.
            if fields[3] == "0A" {
                let port = u16::from_str_radix(fields[1].rsplit(':').next().unwrap(), 16).unwrap();
                sockets.insert(fields[9].parse().unwrap(), port);
            }
        }
    }
    sockets
}

/// The ports process `pid` listens on.
fn listening_ports(pid: u32) -> Vec<u16> {
    let listening = listening_sockets();
    let mut ports: Vec<u16> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let inode = target.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()?;
            listening.get(&inode).copied()
        })
        .collect();
    ports.sort_unstable();
    ports
}

/// Runs `redodb serve --port PORT` with the config file `text`, expecting it to refuse to
/// start; returns its stdout and stderr.
fn refused_start(dir: &Path, port: u16, text: &str) -> (String, String) {
    let config = dir.join("refused.toml");
    std::fs::write(&config, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_redodb"))
        .args(["serve", "--port", &port.to_string(), "--sync-method", "fdatasync", "--data"])
        .arg(dir.join("refused"))
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run redodb serve");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{text:?} was accepted: {stdout}");
    assert!(!stdout.contains("redodb listening on"), "{text:?}: the server listened: {stdout}");
    (stdout, stderr)
}

#[test]
fn metrics_are_off_unless_configured_and_a_bad_setting_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"), &[]);
    assert_eq!(server.metrics_url, None, "no metrics line without metrics_port");
    assert_eq!(listening_ports(server.pid()), vec![server.port], "the wire port is the only one listening");
    assert_eq!(server.terminate().code(), Some(0));

    let out_of_range =
        "invalid value \"70000\" for parameter metrics_port: allowed 0 (the system chooses) to 65535";
    for (port, text, named) in [
        (0, "metrics_port = 70000\n", out_of_range),
        (0, "metrics_port = -1\n", "parameter metrics_port"),
        (0, "metrics_port = \"9187\"\n", "metrics_port"),
        (9187, "metrics_port = 9187\n", "a port other than the server's own (port = 9187)"),
        (0, "metrics_listen = \"0.0.0.0\"\n", "missing parameter metrics_port (metrics_listen is set)"),
        (0, "metrics_port = 9187\nmetrics_listen = \"localhost\"\n", "parameter metrics_listen"),
    ] {
        let (_, stderr) = refused_start(dir.path(), port, text);
        assert!(stderr.contains(named), "{text:?}: the error does not say {named:?}: {stderr}");
        assert!(!dir.path().join("refused").exists(), "{text:?}: the data directory was created first");
    }

    // A port in use: the start stops, naming the metrics address, before the server listens.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let (_, stderr) = refused_start(dir.path(), 0, &format!("metrics_port = {port}\n"));
    assert!(
        stderr.contains(&format!("serving metrics on 127.0.0.1:{port} (metrics_port, metrics_listen)")),
        "{stderr}"
    );
}
