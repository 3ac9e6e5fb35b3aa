//! `/metrics`: the wait interface for Prometheus, served over HTTP when `metrics_port` is
//! set (off by default). Each scrape takes one [`SystemCounters`] snapshot from the
//! database (the live counters the `v$` views read, never SQL text) and renders it in the
//! exposition format the scraper asks for: OpenMetrics when its `Accept` header names it
//! (Prometheus does), else the Prometheus text format 0.0.4 (curl, older scrapers).
//!
//! Nothing is counted for this endpoint and nothing is kept between scrapes: the commit
//! path pays only while a scrape reads the counters. The snapshot and its rendering run on
//! a blocking thread (reading the log's status waits for the control file's lock, which a
//! checkpoint holds across a sync), so a scrape never holds a worker that serves the wire
//! connections; at most [`MAX_SCRAPES_AT_ONCE`] run at a time, others wait their turn.
//! The endpoint has its own listener and task on the server's runtime, and stops with the
//! server.
//!
//! The families (all prefixed `redodb_`; Oracle's names in the labels and the help):
//!
//! | family | type | from |
//! |--------|------|------|
//! | one per statistic: `redodb_user_commits_total`, `redodb_redo_size_bytes_total`, `redodb_redo_synch_time_seconds_total`, ... ([`statistic_metric`]) | counter | v$sysstat |
//! | `redodb_wait_event_waits_total{event, wait_class}` | counter | v$system_event.total_waits |
//! | `redodb_wait_event_seconds{event, wait_class}` | histogram | v$event_histogram_micro, time_waited_micro |
//! | `redodb_wait_event_max_seconds{event, wait_class}` | gauge | v$system_event.max_wait_micro |
//! | `redodb_commit_response_seconds{commit_mode}` | histogram | v$commit_response(_histogram_micro) |
//! | `redodb_time_model_seconds_total{stat_name}` | counter | v$sys_time_model |
//! | `redodb_log_position_bytes{lsn}` | gauge | the log's LSNs: reserved, complete, written, durable, requested, checkpoint |
//! | `redodb_scn{scn}` | gauge | applied, durable, checkpoint (v$database) |
//! | `redodb_log_sequence{sequence}` | gauge | current, activated (v$log) |
//! | `redodb_log_failed` | gauge | 1 once the log has latched failed (v$database.open_mode) |
//! | `redodb_commits_not_durable`, `_bytes`, `_oldest_age_seconds` | gauge | v$commit_durability |
//! | `redodb_sessions{status}` | gauge | v$session (ACTIVE, INACTIVE) |
//! | `redodb_cached_statements` | gauge | v$sql (statements in the shared pool) |
//!
//! A wait event's histogram has the engine's own buckets, converted to seconds: bucket
//! `i` counts the waits under `2^i` microseconds (as time is truncated to whole
//! microseconds, a wait counted there took less than `2^i` us), so `le` is `2^i / 10^6`
//! for `i` in `0..31`, and the engine's last bucket, which also holds every longer wait,
//! is `+Inf`. The histogram counts the timed waits; `redodb_wait_event_waits_total`
//! counts them all, as v$system_event does: the two differ only while
//! `timed_statistics` is, or was, FALSE (an untimed wait has no time and no bucket).

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use db::counters::Statistic;
use db::views::DbStat;
use db::{Database, SystemCounters};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use redo::stats::{histogram_bucket_limit_us, EventSnapshot, HISTOGRAM_BUCKETS};
use redo::Stat;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

/// Scrapes rendered at once; more wait. Two lets a pair of Prometheus servers (the usual
/// high-availability setup) scrape together without letting a flood of them take the
/// machine's CPUs from the sessions.
pub const MAX_SCRAPES_AT_ONCE: usize = 2;

/// How long shutdown waits for a scrape in progress before closing its connection.
const STOP_TIMEOUT: Duration = Duration::from_secs(2);

const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The exposition format of a scrape's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format, version 0.0.4.
    PrometheusText,
    /// OpenMetrics 1.0 text.
    OpenMetrics,
}

impl Format {
    /// The format a scraper's `Accept` header asks for: OpenMetrics if it names it (and
    /// does not refuse it with `q=0`), else the Prometheus text format.
    pub fn from_accept(accept: Option<&str>) -> Format {
        let wants_openmetrics = accept.is_some_and(|accept| {
            accept.split(',').any(|part| {
                let mut params = part.split(';').map(str::trim);
                let media = params.next().unwrap_or("");
                let refused = params.any(|p| {
                    p.strip_prefix("q=").and_then(|q| q.trim().parse::<f64>().ok()).is_some_and(|q| q <= 0.0)
                });
                media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
            })
        });
        if wants_openmetrics {
            Format::OpenMetrics
        } else {
            Format::PrometheusText
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::PrometheusText => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Format::OpenMetrics => OPENMETRICS_CONTENT_TYPE,
        }
    }
}

/// The running endpoint.
pub struct MetricsEndpoint {
    task: JoinHandle<()>,
    stop: watch::Sender<bool>,
}

impl MetricsEndpoint {
    /// Serves `/metrics` of `db` on `listener` (bound by the caller, so that a port in
    /// use stops the start before the server says it listens).
    pub fn start(listener: TcpListener, db: Arc<Database>) -> MetricsEndpoint {
        let state = Arc::new(Scrapes { db, at_once: Semaphore::new(MAX_SCRAPES_AT_ONCE) });
        let app = Router::new()
            .route("/metrics", get(scrape))
            .route("/", get(|| async { "redodb: the wait interface for Prometheus is at /metrics\n" }))
            .with_state(state);
        let (stop, mut stopping) = watch::channel(false);
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopping.wait_for(|stop| *stop).await;
                })
                .await;
            if let Err(e) = served {
                log::warn!("the metrics endpoint stopped: {e}");
            }
        });
        MetricsEndpoint { task, stop }
    }

    /// Stops accepting scrapes, lets one in progress finish (for at most a moment), and
    /// closes the endpoint.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let mut task = self.task;
        if tokio::time::timeout(STOP_TIMEOUT, &mut task).await.is_err() {
            task.abort();
        }
    }
}

/// What the scrape handler shares.
struct Scrapes {
    db: Arc<Database>,
    at_once: Semaphore,
}

async fn scrape(State(scrapes): State<Arc<Scrapes>>, headers: HeaderMap) -> Response {
    let format = Format::from_accept(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let Ok(_turn) = scrapes.at_once.acquire().await else {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    };
    let db = scrapes.db.clone();
    match tokio::task::spawn_blocking(move || render(db.counters(), format)).await {
        Ok(Ok(body)) => ([(header::CONTENT_TYPE, format.content_type())], body).into_response(),
        Ok(Err(fmt::Error)) => {
            log::error!("rendering the metrics failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "rendering the metrics failed\n").into_response()
        }
        Err(e) => {
            log::error!("the metrics scrape failed: {e}");
            (StatusCode::INTERNAL_SERVER_ERROR, "the metrics scrape failed\n").into_response()
        }
    }
}

/// `counters` in `format`.
pub fn render(counters: SystemCounters, format: Format) -> Result<String, fmt::Error> {
    let mut registry = Registry::with_prefix("redodb");
    registry.register_collector(Box::new(Families(counters)));
    let mut out = String::new();
    match format {
        Format::PrometheusText => prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?,
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry)?,
    }
    Ok(out)
}

/// How a statistic is exported: its metric name (before the `redodb_` prefix, the unit
/// and `_total`) and its unit. A statistic in seconds is kept in microseconds by the
/// engine and exported in seconds, Prometheus's base unit; the others as they are kept.
#[derive(Clone, Debug, PartialEq)]
pub struct StatisticMetric {
    pub name: &'static str,
    pub unit: Option<Unit>,
}

/// The metric of each statistic: Oracle's name in snake case, with the unit moved to the
/// end (`redo size` is `redodb_redo_size_bytes_total`, `redo synch time (usec)` is
/// `redodb_redo_synch_time_seconds_total`). A match, not a rule on the names, so that a
/// statistic added to the engine must be given its metric here.
pub fn statistic_metric(statistic: Statistic) -> StatisticMetric {
    let count = |name| StatisticMetric { name, unit: None };
    let bytes = |name| StatisticMetric { name, unit: Some(Unit::Bytes) };
    let micros = |name| StatisticMetric { name, unit: Some(Unit::Seconds) };
    match statistic {
        Statistic::Redo(stat) => match stat {
            Stat::UserCommits => count("user_commits"),
            Stat::UserRollbacks => count("user_rollbacks"),
            Stat::RedoEntries => count("redo_entries"),
            Stat::RedoSize => bytes("redo_size"),
            Stat::RedoWrites => count("redo_writes"),
            Stat::RedoBlocksWritten => count("redo_blocks_written"),
            Stat::RedoWastage => bytes("redo_wastage"),
            Stat::RedoWriteRequests => count("redo_write_requests"),
            Stat::RedoWriteBytes => bytes("redo_write"),
            Stat::RedoWriteTimeUs => micros("redo_write_time"),
            Stat::RedoSynchWrites => count("redo_synch_writes"),
            Stat::RedoSynchTimeUs => micros("redo_synch_time"),
            Stat::RedoSynchEarlyWakeups => count("redo_synch_early_wakeups"),
            Stat::RedoWritesForeground => count("redo_writes_by_foreground"),
            Stat::RedoLogSwitches => count("redo_log_switches"),
            Stat::RedoBufferAllocationRetries => count("redo_buffer_allocation_retries"),
            Stat::RedoLogSpaceRequests => count("redo_log_space_requests"),
            Stat::CommitWaitRequested => count("commit_wait_requested"),
            Stat::CommitNowaitRequested => count("commit_nowait_requested"),
            Stat::CommitBatchRequested => count("commit_batch_requested"),
            Stat::CommitImmediateRequested => count("commit_immediate_requested"),
            Stat::CommitWaitPerformed => count("commit_wait_performed"),
            Stat::CommitNowaitPerformed => count("commit_nowait_performed"),
            Stat::BackgroundCpuTimeUs => micros("background_cpu_time"),
            Stat::BackgroundElapsedTimeUs => micros("background_elapsed_time"),
        },
        Statistic::Db(stat) => match stat {
            // Not `parse_count_total`: the counter's own `_total` would follow it.
            DbStat::ParseCountTotal => count("parse_count"),
            DbStat::ParseCountHard => count("parse_count_hard"),
            DbStat::SessionCursorCacheHits => count("session_cursor_cache_hits"),
            DbStat::ExecuteCount => count("execute_count"),
            DbStat::CommitsDeferredByCall => count("commits_deferred_by_call"),
            DbStat::SqlNetRoundtrips => count("sql_net_roundtrips"),
            DbStat::BytesSentViaSqlNet => bytes("sql_net_sent"),
            DbStat::BytesReceivedViaSqlNet => bytes("sql_net_received"),
            DbStat::UserCalls => count("user_calls"),
            DbStat::RowsFetched => count("rows_fetched"),
            DbStat::FetchCalls => count("fetch_calls"),
            DbStat::PhysicalWrites => count("physical_writes"),
            DbStat::PhysicalWriteBytes => bytes("physical_write"),
            DbStat::CheckpointsStarted => count("checkpoints_started"),
            DbStat::CheckpointsCompleted => count("checkpoints_completed"),
            DbStat::CheckpointsFailed => count("checkpoints_failed"),
        },
    }
}

/// The histogram buckets of an engine histogram in seconds, each with its own count (the
/// encoder makes them cumulative): `2^i` us for the engine's buckets but the last, and
/// `+Inf` for the last, which also holds every longer wait.
pub fn buckets_seconds(e: &EventSnapshot) -> Vec<(f64, u64)> {
    e.histogram
        .iter()
        .enumerate()
        .map(|(i, &count)| {
            let upper = if i + 1 == HISTOGRAM_BUCKETS {
                f64::INFINITY
            } else {
                histogram_bucket_limit_us(i) as f64 / 1e6
            };
            (upper, count)
        })
        .collect()
}

fn seconds(us: u64) -> f64 {
    us as f64 / 1e6
}

/// The families of one snapshot, encoded when the registry is.
#[derive(Debug)]
struct Families(SystemCounters);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let c = &self.0;
        for &(statistic, value) in &c.statistics {
            let m = statistic_metric(statistic);
            let help = format!("v$sysstat \"{}\"", statistic.name());
            let metric = encoder.encode_descriptor(m.name, &help, m.unit.as_ref(), MetricType::Counter)?;
            match m.unit {
                Some(Unit::Seconds) => ConstCounter::new(seconds(value)).encode(metric)?,
                _ => ConstCounter::new(value).encode(metric)?,
            }
        }

        let mut waits = encoder.encode_descriptor(
            "wait_event_waits",
            "Waits on each wait event, timed or not (v$system_event.total_waits)",
            None,
            MetricType::Counter,
        )?;
        for (event, e) in &c.events {
            let labels = [("event", event.name()), ("wait_class", event.class())];
            ConstCounter::new(e.waits).encode(waits.encode_family(&labels)?)?;
        }
        let mut times = encoder.encode_descriptor(
            "wait_event",
            "Timed waits on each wait event by duration, in the engine's power-of-two microsecond \
             buckets (v$event_histogram_micro; sum: v$system_event.time_waited_micro)",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (event, e) in &c.events {
            let labels = [("event", event.name()), ("wait_class", event.class())];
            encode_histogram(&mut times, &labels, e)?;
        }
        let mut longest = encoder.encode_descriptor(
            "wait_event_max",
            "Longest wait on each wait event since the database opened (v$system_event.max_wait_micro)",
            Some(&Unit::Seconds),
            MetricType::Gauge,
        )?;
        for (event, e) in &c.events {
            let labels = [("event", event.name()), ("wait_class", event.class())];
            ConstGauge::new(seconds(e.max_us)).encode(longest.encode_family(&labels)?)?;
        }

        let mut response = encoder.encode_descriptor(
            "commit_response",
            "Commit response time, from the call to commit to its return, per commit mode \
             (v$commit_response)",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (mode, e) in &c.commit_response {
            encode_histogram(&mut response, &[("commit_mode", *mode)], e)?;
        }

        let mut time_model = encoder.encode_descriptor(
            "time_model",
            "The time model (v$sys_time_model): DB time, DB CPU, background cpu time, \
             background elapsed time",
            Some(&Unit::Seconds),
            MetricType::Counter,
        )?;
        for (name, us) in c.time_model.entries() {
            ConstCounter::new(seconds(us)).encode(time_model.encode_family(&[("stat_name", name)])?)?;
        }

        let log = &c.log;
        let mut positions = encoder.encode_descriptor(
            "log_position",
            "Positions in the redo stream (LSNs): reserved >= complete >= written >= durable; \
             requested: what waiting commits asked to be durable; checkpoint: where recovery \
             would begin",
            Some(&Unit::Bytes),
            MetricType::Gauge,
        )?;
        for (lsn, at) in [
            ("reserved", log.reserved_end),
            ("complete", log.complete),
            ("written", log.written),
            ("durable", log.durable),
            ("requested", log.requested),
            ("checkpoint", log.checkpoint_scan_from),
        ] {
            ConstGauge::new(at.0).encode(positions.encode_family(&[("lsn", lsn)])?)?;
        }
        let mut scns = encoder.encode_descriptor(
            "scn",
            "Commit numbers (v$database): applied (current_scn), durable, checkpoint",
            None,
            MetricType::Gauge,
        )?;
        for (scn, at) in [
            ("applied", c.applied_scn),
            ("durable", c.durability.durable_scn),
            ("checkpoint", log.checkpoint_scn),
        ] {
            ConstGauge::new(at.0).encode(scns.encode_family(&[("scn", scn)])?)?;
        }
        let mut sequences = encoder.encode_descriptor(
            "log_sequence",
            "Log sequences (v$log): current (being filled), activated (highest opened)",
            None,
            MetricType::Gauge,
        )?;
        for (sequence, seq) in [("current", log.current_seq), ("activated", log.activated_seq)] {
            ConstGauge::new(seq.0).encode(sequences.encode_family(&[("sequence", sequence)])?)?;
        }
        gauge(
            &mut encoder,
            "log_failed",
            "1 once a log write or sync has failed: no commit is acknowledged until a restart recovers",
            None,
            u64::from(log.failed),
        )?;

        let d = &c.durability;
        gauge(
            &mut encoder,
            "commits_not_durable",
            "Commits in the log buffer not yet durable (v$commit_durability.commits_not_durable)",
            None,
            d.commits_not_durable,
        )?;
        gauge(
            &mut encoder,
            "commits_not_durable",
            "Redo reserved but not yet durable (v$commit_durability.bytes_not_durable)",
            Some(&Unit::Bytes),
            d.bytes_not_durable,
        )?;
        let oldest = encoder.encode_descriptor(
            "commits_not_durable_oldest_age",
            "Age of the oldest commit not yet durable, 0 when none is (v$commit_durability.oldest_age_micro)",
            Some(&Unit::Seconds),
            MetricType::Gauge,
        )?;
        ConstGauge::new(d.oldest_age.map_or(0.0, |age| age.as_secs_f64())).encode(oldest)?;

        let mut sessions = encoder.encode_descriptor(
            "sessions",
            "Open sessions by status (v$session): ACTIVE inside a call, INACTIVE waiting for their client",
            None,
            MetricType::Gauge,
        )?;
        for (status, n) in [("ACTIVE", c.sessions.active), ("INACTIVE", c.sessions.inactive)] {
            ConstGauge::new(n).encode(sessions.encode_family(&[("status", status)])?)?;
        }
        gauge(
            &mut encoder,
            "cached_statements",
            "Statements in the shared pool (v$sql)",
            None,
            c.cached_statements,
        )
    }
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &'static str,
    help: &str,
    unit: Option<&'static Unit>,
    value: u64,
) -> Result<(), fmt::Error> {
    ConstGauge::new(value).encode(encoder.encode_descriptor(name, help, unit, MetricType::Gauge)?)
}

/// One labelled histogram of a family: the engine's buckets in seconds, the timed waits'
/// time as the sum, and the timed waits (every bucket's) as the count.
fn encode_histogram(
    family: &mut prometheus_client::encoding::MetricEncoder,
    labels: &[(&str, &str)],
    e: &EventSnapshot,
) -> Result<(), fmt::Error> {
    let buckets = buckets_seconds(e);
    let count = buckets.iter().map(|&(_, n)| n).sum();
    family.encode_family(&labels)?.encode_histogram::<NoLabelSet>(seconds(e.time_us), count, &buckets, None)
}

/// The address the endpoint will be reached at, for the line the server prints.
pub fn url(addr: SocketAddr) -> String {
    format!("http://{addr}/metrics")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statistic_has_its_own_valid_metric_name() {
        let mut names = std::collections::BTreeSet::new();
        for statistic in Statistic::all() {
            let m = statistic_metric(statistic);
            let full = match &m.unit {
                Some(unit) => format!("redodb_{}_{}_total", m.name, unit.as_str()),
                None => format!("redodb_{}_total", m.name),
            };
            assert!(
                full.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{full}"
            );
            assert!(!m.name.ends_with("_total") && !full.contains("__"), "{full}");
            assert!(names.insert(full.clone()), "{full} is given to two statistics");
            let micros = statistic.name().ends_with("(usec)");
            assert_eq!(micros, m.unit == Some(Unit::Seconds), "{}", statistic.name());
        }
    }

    #[test]
    fn histogram_buckets_are_the_engines_in_seconds_with_the_last_open() {
        let mut e = EventSnapshot::default();
        e.histogram[0] = 1; // under 1 us
        e.histogram[10] = 5; // [512, 1024) us
        e.histogram[HISTOGRAM_BUCKETS - 1] = 2; // 2^30 us or more
        let buckets = buckets_seconds(&e);
        assert_eq!(buckets.len(), HISTOGRAM_BUCKETS);
        assert_eq!(buckets[0], (1e-6, 1));
        assert_eq!(buckets[10], (1024e-6, 5));
        assert_eq!(buckets[HISTOGRAM_BUCKETS - 1], (f64::INFINITY, 2));
        assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0), "bounds ascend");
    }

    /// The value of the sample `line_start` (name and labels, as rendered) in `text`.
    fn sample(text: &str, line_start: &str) -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(line_start) && l[line_start.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no sample {line_start} in\n{text}"));
        line[line_start.len()..].trim().parse().unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn a_databases_counters_render_as_the_views_show_them_in_both_formats() {
        let dir = tempfile::tempdir().unwrap();
        let mut config =
            db::DbConfig { checkpoint_interval_ms: 0, snapshot_interval_minutes: 0, ..Default::default() };
        config.log.log_file_size = 1 << 20;
        config.log.log_buffer = 256 << 10;
        config.log.sync_method = redo::SyncMethod::Fdatasync;
        let db = Database::open(dir.path(), config).unwrap();
        let mut session = db.session();
        session.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)", &[]).unwrap();
        for i in 0..20 {
            session.execute(&format!("INSERT INTO t VALUES ({i})"), &[]).unwrap();
            session.execute("COMMIT", &[]).unwrap();
        }
        let counters = db.counters();
        let sync = *counters.event("log file sync").unwrap();
        assert!(sync.waits >= 20, "every committed insert waited: {sync:?}");
        let commits = counters.statistic("user commits").unwrap();
        let redo_size = counters.statistic("redo size").unwrap();
        let synch_time_us = counters.statistic("redo synch time (usec)").unwrap();

        let text = render(counters.clone(), Format::PrometheusText).unwrap();
        assert_eq!(sample(&text, "redodb_user_commits_total"), commits as f64);
        assert_eq!(sample(&text, "redodb_redo_size_bytes_total"), redo_size as f64);
        assert_eq!(sample(&text, "redodb_redo_synch_time_seconds_total"), synch_time_us as f64 / 1e6);
        assert!(text.contains("# TYPE redodb_wait_event_seconds histogram\n"), "{text}");
        let labels = "event=\"log file sync\",wait_class=\"Commit\"";
        assert_eq!(sample(&text, &format!("redodb_wait_event_waits_total{{{labels}}}")), sync.waits as f64);
        assert_eq!(sample(&text, &format!("redodb_wait_event_seconds_count{{{labels}}}")), sync.waits as f64);
        assert_eq!(
            sample(&text, &format!("redodb_wait_event_seconds_sum{{{labels}}}")),
            sync.time_us as f64 / 1e6
        );
        // Cumulative buckets: each `le` counts the waits of the engine's buckets up to it.
        let mut below = 0;
        for (i, &n) in sync.histogram.iter().enumerate().take(HISTOGRAM_BUCKETS - 1) {
            below += n;
            let le = histogram_bucket_limit_us(i) as f64 / 1e6;
            let bucket = text
                .lines()
                .filter(|l| l.starts_with(&format!("redodb_wait_event_seconds_bucket{{{labels},le=")))
                .find(|l| {
                    let quoted = l.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
                    quoted.parse::<f64>().unwrap() == le
                })
                .unwrap_or_else(|| panic!("no bucket le={le}"));
            assert_eq!(bucket.rsplit(' ').next().unwrap().parse::<u64>().unwrap(), below, "{bucket}");
        }
        assert_eq!(
            sample(&text, &format!("redodb_wait_event_seconds_bucket{{{labels},le=\"+Inf\"}}")),
            sync.waits as f64
        );
        assert_eq!(sample(&text, "redodb_log_failed"), 0.0);
        assert_eq!(sample(&text, "redodb_sessions{status=\"INACTIVE\"}"), 1.0);
        assert!(sample(&text, "redodb_log_position_bytes{lsn=\"durable\"}") > 0.0);
        assert!(sample(&text, "redodb_scn{scn=\"applied\"}") >= 21.0);

        let open = render(counters, Format::OpenMetrics).unwrap();
        assert!(open.ends_with("# EOF\n"), "OpenMetrics ends with its EOF line");
        assert!(open.contains("# UNIT redodb_redo_size_bytes bytes\n"), "{open}");
        assert_eq!(sample(&open, "redodb_user_commits_total"), commits as f64);
        assert_eq!(sample(&open, &format!("redodb_wait_event_seconds_count{{{labels}}}")), sync.waits as f64);
    }

    #[test]
    fn openmetrics_is_served_when_the_scraper_asks_for_it() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::from_accept(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::from_accept(Some("text/plain")), Format::PrometheusText);
        assert_eq!(Format::from_accept(Some("*/*")), Format::PrometheusText);
        assert_eq!(Format::from_accept(None), Format::PrometheusText);
        assert_eq!(
            Format::from_accept(Some("application/openmetrics-text; q=0.0, text/plain")),
            Format::PrometheusText
        );
    }
}
