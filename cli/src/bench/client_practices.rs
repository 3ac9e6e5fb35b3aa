//! `client-practices` (seed 004, "best practices for accessing Oracle from a client"): the
//! three habits a client pays for in round trips and parses, measured over the wire on
//! one session:
//!
//! 1. **Bind variables.** N point SELECTs and N UPDATEs by primary key, first as literal
//!    SQL text (each text new: a hard parse, one simple-query round trip each), then as
//!    one prepared statement executed N times with a bind value.
//! 2. **Fetch size.** One query of R rows read through a portal with 1, 10, 100 and 1000
//!    rows per Execute: a round trip per fetch (JDBC's default is 10; seed 004 found 100
//!    six times faster).
//! 3. **Array insert.** R rows inserted in one transaction, one row per round trip, then
//!    10, 100 and 1000 rows per call (the binds pipelined: every Bind/Execute sent before
//!    the first reply is read).
//!
//! Each test reports elapsed time, rows or statements per second, the client's own count
//! of round trips and, on redodb, the session's `SQL*Net roundtrips to/from client` from
//! `v$sesstat` and `parse count (total)` and `parse count (hard)` from `v$sysstat`
//! (redodb counts parses for the whole system only; nothing else parses meanwhile: the
//! reader's two queries are prepared once, and executing them parses nothing), all read
//! by a second connection so that the reads cost the measured session nothing.
//! PostgreSQL has no such counters: `-` there.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use db::Value;
use serde_json::json;

use super::charts::{Kind, Series};
use super::output::{Figures, Measurement, ScenarioReport, Table};
use super::scenarios::{chart, count, figure_rows, int, ran, report, sql, value, Ctx, Scenario};
use super::target::{Connection, Flavour, Stmt};
use super::vstats::{CpuTimes, Delta, Sample, StatsSource};
use super::wire::WireConnection;
use crate::common::{interrupt, opt, thousands};

/// The table the tests read and update.
pub const CUSTOMERS: &str = "bench_cp_customers";
/// The table the array-insert tests fill.
pub const INSERTED: &str = "bench_cp_inserted";

const FETCH_SIZES: [u32; 4] = [1, 10, 100, 1000];
const ARRAY_SIZES: [usize; 4] = [1, 10, 100, 1000];

/// The statistics of the measured session read for each test.
const ROUND_TRIPS: &str = "SQL*Net roundtrips to/from client";
const PARSES: &str = "parse count (total)";
const HARD_PARSES: &str = "parse count (hard)";

/// A key of the table for statement `i`: a stride through every key (7919 is prime, so
/// coprime with any row count it does not divide), one statement per key.
fn key(i: u64, rows: u64) -> u64 {
    1 + (i * 7919) % rows
}

/// A customer row: (cust_id, cust_valid, first name, last name, street).
fn customer(id: u64) -> Vec<Value> {
    vec![
        int(id),
        Value::Text("N".into()),
        Value::Text(value(id, 20)),
        Value::Text(value(id << 8, 25)),
        Value::Text(value(id << 16, 50)),
    ]
}

fn create_customers(conn: &mut dyn Connection, table: &str) -> Result<()> {
    sql(
        conn,
        &format!(
            "CREATE TABLE {table} (cust_id BIGINT PRIMARY KEY, cust_valid VARCHAR(1), \
             cust_first_name VARCHAR(30), cust_last_name VARCHAR(30), cust_street VARCHAR(60))"
        ),
    )
}

fn insert_sql(table: &str) -> String {
    format!(
        "INSERT INTO {table} (cust_id, cust_valid, cust_first_name, cust_last_name, cust_street) \
         VALUES ($1, $2, $3, $4, $5)"
    )
}

/// What one test did, before it becomes a [`Measurement`].
struct Outcome {
    /// Rows read or written, or statements run in the bind tests.
    rows: u64,
    /// Calls made: statements, fetches, array executions.
    calls: u64,
    commits: u64,
}

/// Reads the measured session's statistics from another connection, through two
/// prepared statements (so that reading parses nothing).
struct SessionStats {
    monitor: Box<dyn Connection>,
    /// The session's SID on redodb, and the two queries; None on PostgreSQL.
    queries: Option<(u64, Stmt, Stmt)>,
}

impl SessionStats {
    fn new(mut monitor: Box<dyn Connection>, sid: Option<u64>) -> Result<SessionStats> {
        let queries = match sid {
            Some(sid) => Some((
                sid,
                monitor.prepare("SELECT name, value FROM v$sesstat WHERE sid = $1")?,
                monitor.prepare(&format!(
                    "SELECT name, value FROM v$sysstat WHERE name IN ('{PARSES}', '{HARD_PARSES}')"
                ))?,
            )),
            None => None,
        };
        Ok(SessionStats { monitor, queries })
    }

    fn sample(&mut self) -> Result<Sample> {
        let cpu = CpuTimes::now();
        let at = Instant::now();
        let (stats, source) = match self.queries {
            Some((sid, session, system)) => {
                let mut stats = BTreeMap::new();
                let rows = self.monitor.execute_prepared(session, &[int(sid)])?.rows;
                let rows = rows.into_iter().chain(self.monitor.execute_prepared(system, &[])?.rows);
                for row in rows {
                    if let [Value::Text(name), v] = row.as_slice() {
                        stats.insert(name.clone(), number(v));
                    }
                }
                if !stats.contains_key(ROUND_TRIPS) {
                    bail!("v$sesstat has no {ROUND_TRIPS:?} for SID {sid}");
                }
                (stats, StatsSource::VViews)
            }
            None => (BTreeMap::new(), StatsSource::Unavailable),
        };
        Ok(Sample::counters_only(at, stats, cpu, source))
    }
}

fn number(v: &Value) -> u64 {
    match v {
        Value::Int(n) => (*n).max(0) as u64,
        Value::Text(t) => t.trim().parse().unwrap_or(0),
        _ => 0,
    }
}

struct Tests<'a> {
    conn: WireConnection,
    stats: SessionStats,
    cpus: usize,
    rep: &'a mut ScenarioReport,
    progress: &'a super::progress::Progress,
}

impl Tests<'_> {
    /// Runs `body` on the measured session as test `variant` and records it.
    fn measure(
        &mut self,
        variant: String,
        batch_size: Option<u64>,
        body: impl FnOnce(&mut WireConnection) -> Result<Outcome>,
    ) -> Result<()> {
        interrupt::check()?;
        self.progress.start_config(&format!("client-practices {variant}"));
        let before = self.stats.sample()?;
        let trips_before = self.conn.round_trips().unwrap_or(0);
        let started = Instant::now();
        let outcome = body(&mut self.conn).with_context(|| variant.clone())?;
        let seconds = started.elapsed().as_secs_f64();
        let trips = self.conn.round_trips().unwrap_or(0) - trips_before;
        let after = self.stats.sample()?;
        let delta = Delta::between(&before, &after, self.cpus);
        let server = |name: &str| (delta.source == StatsSource::VViews).then(|| delta.stat(name));
        let figures = Figures {
            scenario: self.rep.name.to_string(),
            variant: variant.clone(),
            sessions: 1,
            strands: 1,
            seconds,
            transactions: outcome.commits,
            commits: outcome.commits,
            rows: outcome.rows,
            commits_per_sec: outcome.commits as f64 / seconds,
            rows_per_sec: outcome.rows as f64 / seconds,
            machine_cpu_pct: delta.machine_cpu_pct,
            process_cpu_pct: delta.process_cpu_pct,
            server_figures: delta.source,
            batch_size,
            calls: Some(outcome.calls),
            client_round_trips: Some(trips),
            server_round_trips: server(ROUND_TRIPS),
            parse_count_total: server(PARSES),
            parse_count_hard: server(HARD_PARSES),
            ..Figures::default()
        };
        self.progress.finish_config(&format!(
            "client-practices {variant}: {:.1} ms, {} rows/s, {trips} round trips",
            seconds * 1000.0,
            thousands(figures.rows_per_sec)
        ));
        self.rep.measurements.push(Measurement { figures, views: delta });
        Ok(())
    }
}

/// Runs the scenario on a wire target (the caller gives the embedded target a server).
pub fn run(ctx: &mut Ctx) -> Result<ScenarioReport> {
    let rows = ctx.options.client_rows;
    let mut rep = report(
        Scenario::ClientPractices,
        json!({ "rows": rows, "statements_per_bind_test": rows, "fetch_sizes": FETCH_SIZES, "array_sizes": ARRAY_SIZES,
                "select": format!("SELECT cust_first_name FROM {CUSTOMERS} WHERE cust_id = <key>"),
                "update": format!("UPDATE {CUSTOMERS} SET cust_valid = 'Y' WHERE cust_id = <key>"),
                "fetch": format!("SELECT cust_id, cust_first_name, cust_last_name, cust_street FROM {CUSTOMERS} WHERE cust_id BETWEEN $1 AND $2"),
                "insert": insert_sql(INSERTED) }),
    );
    ctx.progress.scenario(rep.name, (4 + FETCH_SIZES.len() + ARRAY_SIZES.len()) as u64);
    let mut monitor = ctx.fresh(1)?;
    let flavour = ctx.target.flavour();
    let wire = ctx.target.as_wire().ok_or_else(|| {
        anyhow!("client-practices measures a network client: it needs a wire-protocol target")
    })?;
    ctx.progress.start_config(&format!("client-practices: loading {} rows", thousands(rows as f64)));
    create_customers(&mut *monitor, CUSTOMERS)?;
    create_customers(&mut *monitor, INSERTED)?;
    let load = monitor.prepare(&insert_sql(CUSTOMERS))?;
    let all: Vec<Vec<Value>> = (1..=rows).map(customer).collect();
    for chunk in all.chunks(1000) {
        interrupt::check()?;
        monitor.execute_many(load, chunk)?;
    }
    sql(&mut *monitor, "COMMIT")?;

    let mut conn = wire.open()?;
    let sid = match flavour {
        Flavour::Postgres => None,
        _ => Some(conn.sid()?),
    };
    let stats_reader = wire.open()?;
    let mut tests = Tests {
        conn,
        stats: SessionStats::new(Box::new(stats_reader), sid)?,
        cpus: ctx.cpus,
        rep: &mut rep,
        progress: ctx.progress,
    };
    // Literal texts must be new to the server's statement cache even when this server ran
    // the test before: a mark unique to this run goes into each.
    let run_mark =
        format!("{:x}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_micros());

    // 1. Bind variables.
    tests.measure("SELECT literal".into(), None, |c| {
        for i in 0..rows {
            let sql = format!(
                "SELECT cust_first_name FROM {CUSTOMERS} WHERE cust_id = {} /* {run_mark} */",
                key(i, rows)
            );
            expect_rows(c.execute(&sql, &[])?.rows.len(), 1, &sql)?;
        }
        Ok(Outcome { rows, calls: rows, commits: 0 })
    })?;
    tests.measure("SELECT bind".into(), None, |c| {
        let select = c.prepare(&format!("SELECT cust_first_name FROM {CUSTOMERS} WHERE cust_id = $1"))?;
        for i in 0..rows {
            expect_rows(c.execute_prepared(select, &[int(key(i, rows))])?.rows.len(), 1, "SELECT bind")?;
        }
        Ok(Outcome { rows, calls: rows + 1, commits: 0 })
    })?;
    tests.measure("UPDATE literal".into(), None, |c| {
        for i in 0..rows {
            let sql = format!(
                "UPDATE {CUSTOMERS} SET cust_valid = 'Y' WHERE cust_id = {} /* {run_mark} */",
                key(i, rows)
            );
            expect_rows(c.execute(&sql, &[])?.rows_affected as usize, 1, &sql)?;
        }
        c.execute("COMMIT", &[])?;
        Ok(Outcome { rows, calls: rows + 1, commits: 1 })
    })?;
    tests.measure("UPDATE bind".into(), None, |c| {
        let update = c.prepare(&format!("UPDATE {CUSTOMERS} SET cust_valid = $2 WHERE cust_id = $1"))?;
        for i in 0..rows {
            let r = c.execute_prepared(update, &[int(key(i, rows)), Value::Text("N".into())])?;
            expect_rows(r.rows_affected as usize, 1, "UPDATE bind")?;
        }
        c.execute("COMMIT", &[])?;
        Ok(Outcome { rows, calls: rows + 2, commits: 1 })
    })?;

    // 2. Fetch size.
    let query = tests.conn.prepare(&format!(
        "SELECT cust_id, cust_first_name, cust_last_name, cust_street FROM {CUSTOMERS} WHERE cust_id BETWEEN $1 AND $2"
    ))?;
    for size in FETCH_SIZES {
        tests.measure(format!("fetch size {size}"), Some(size as u64), |c| {
            let fetched = c.fetch(query, &[int(1), int(rows)], size)?;
            expect_rows(fetched.rows as usize, rows as usize, "the portal fetch")?;
            Ok(Outcome { rows, calls: fetched.fetch_calls, commits: 0 })
        })?;
    }

    // 3. Array insert.
    let insert = tests.conn.prepare(&insert_sql(INSERTED))?;
    for size in ARRAY_SIZES {
        sql(&mut *monitor, &format!("TRUNCATE {INSERTED}"))?;
        tests.measure(format!("array insert {size}"), Some(size as u64), |c| {
            let mut inserted = 0u64;
            let mut calls = 0u64;
            for chunk in all.chunks(size) {
                inserted += if size == 1 {
                    c.execute_prepared(insert, &chunk[0])?.rows_affected
                } else {
                    c.execute_many(insert, chunk)?
                };
                calls += 1;
            }
            c.execute("COMMIT", &[])?;
            expect_rows(inserted as usize, rows as usize, "the inserts")?;
            Ok(Outcome { rows, calls: calls + 1, commits: 1 })
        })?;
    }
    drop(tests);
    tables_findings_charts(&mut rep, rows);
    Ok(rep)
}

fn expect_rows(got: usize, want: usize, what: &str) -> Result<()> {
    if got != want {
        bail!("{what}: {got} rows, expected {want}");
    }
    Ok(())
}

fn elapsed_ms(f: &Figures) -> String {
    format!("{:.1}", f.seconds * 1000.0)
}

/// The table of one batch-size test (`variant` prefix "fetch" or "array"): per batch
/// size, elapsed time, rows/s, calls, round trips and the speed-up over a batch of 1.
fn batch_table(
    rep: &ScenarioReport,
    variant: &str,
    title: String,
    headers: [&str; 2],
    notes: &[&str],
) -> Table {
    let batches: Vec<&Measurement> =
        rep.measurements.iter().filter(|m| m.figures.variant.starts_with(variant)).collect();
    let base = batches.first().map(|m| m.figures.seconds);
    let [size, calls] = headers;
    let mut t = Table::new(
        title,
        &[size, "Elapsed ms", "Rows/s", calls, "Round trips (client)", "Round trips (v$)", "Speed-up vs 1"],
    );
    figure_rows(&mut t, &batches, |f| {
        vec![
            opt(f.batch_size.map(|b| b as f64), 0),
            elapsed_ms(f),
            thousands(f.rows_per_sec),
            count(f.calls),
            count(f.client_round_trips),
            count(f.server_round_trips),
            opt(base.map(|b| b / f.seconds), 1),
        ]
    });
    for n in notes {
        t.note(*n);
    }
    t
}

fn tables_findings_charts(rep: &mut ScenarioReport, rows: u64) {
    let find =
        |variant: &str| rep.measurements.iter().find(|m| m.figures.variant == variant).map(|m| &m.figures);
    let speedup = |slow: &str, fast: &str| Some(find(slow)?.seconds / find(fast)?.seconds);

    let binds: Vec<&Measurement> = rep
        .measurements
        .iter()
        .filter(|m| m.figures.variant.contains("literal") || m.figures.variant.contains("bind"))
        .collect();
    let mut t = Table::new(
        format!("BIND VARIABLES: {} statements each, one session", thousands(rows as f64)),
        &[
            "Test",
            "Calls",
            "Elapsed ms",
            "Statements/s",
            "Round trips (client)",
            "Round trips (v$)",
            "Parses",
            "Hard parses",
        ],
    );
    figure_rows(&mut t, &binds, |f| {
        vec![
            f.variant.clone(),
            count(f.calls),
            elapsed_ms(f),
            thousands(f.rows_per_sec),
            count(f.client_round_trips),
            count(f.server_round_trips),
            count(f.parse_count_total),
            count(f.parse_count_hard),
        ]
    });
    t.note("literal: a new SQL text per statement (simple query); bind: one prepared statement, executed with a bind value (the UPDATEs then COMMIT once)");
    t.note("seed 004: each literal statement \"requires parsing, optimization and caching in the shared pool\"; bind variables reduce execution time");
    t.note("Round trips (v$) = the session's SQL*Net roundtrips to/from client in v$sesstat; parses from v$sysstat; - where the server has no such counter (PostgreSQL)");
    rep.tables.push(t);

    rep.tables.push(batch_table(
        rep,
        "fetch",
        format!("FETCH SIZE: one query of {} rows through a portal, N rows per fetch", thousands(rows as f64)),
        ["Fetch size", "Fetch calls"],
        &["seed 004: JDBC's default fetch size of 10 was more than 6 times slower than 100 or 200; returns diminish, never turn negative"],
    ));
    rep.tables.push(batch_table(
        rep,
        "array",
        format!("ARRAY INSERT: {} rows in one transaction, N rows per call", thousands(rows as f64)),
        ["Rows per call", "Calls"],
        &[
            "1 row per call: one Bind/Execute/Sync round trip per row; more: the call's binds pipelined, sent before the first reply is read (JDBC's addBatch/executeBatch)",
            "the server counts a round trip per reply it sends: a pipelined call whose messages arrive in several reads is answered in several sends",
            "seed 004: \"Array insert gives about the same performance improvements as array fetch\"",
        ],
    ));

    let hard = |v: &str| find(v).and_then(|f| f.parse_count_hard);
    if let (Some(select), Some(update)) =
        (speedup("SELECT literal", "SELECT bind"), speedup("UPDATE literal", "UPDATE bind"))
    {
        let parses = match (hard("UPDATE literal"), hard("UPDATE bind")) {
            (Some(literal), Some(bind)) => {
                format!(
                    " ({} vs {} hard parses for the UPDATEs)",
                    thousands(literal as f64),
                    thousands(bind as f64)
                )
            }
            _ => String::new(),
        };
        rep.findings.push(format!(
            "Bind variables: SELECT {select:.1}x and UPDATE {update:.1}x as fast as literal SQL{parses}."
        ));
    }
    if let (Some(ten), Some(hundred)) =
        (speedup("fetch size 1", "fetch size 10"), speedup("fetch size 1", "fetch size 100"))
    {
        rep.findings.push(format!(
            "Fetch size: 10 rows per fetch {ten:.1}x and 100 rows {hundred:.1}x as fast as 1; 100 is {:.1}x as fast as JDBC's default of 10 (seed 004: about 6x).",
            hundred / ten
        ));
    }
    let largest = format!("array insert {}", ARRAY_SIZES[ARRAY_SIZES.len() - 1]);
    if let Some(array) = speedup("array insert 1", &largest) {
        let trips = |v: &str| {
            find(v)
                .and_then(|f| f.client_round_trips)
                .map_or_else(|| "-".to_string(), |n| thousands(n as f64))
        };
        rep.findings.push(format!(
            "Array insert: {} rows per call {array:.1}x as fast as a row per call ({} vs {} round trips).",
            ARRAY_SIZES[ARRAY_SIZES.len() - 1],
            trips(&largest),
            trips("array insert 1")
        ));
    }

    let done = ran(&rep.measurements);
    let bind_tests: Vec<&&Measurement> = done.iter().filter(|m| m.figures.batch_size.is_none()).collect();
    rep.charts.push(chart(
        "client-practices-binds",
        "Bind variables: elapsed ms, literal SQL vs one prepared statement",
        "test",
        "milliseconds",
        Kind::Bars {
            categories: bind_tests.iter().map(|m| m.figures.variant.clone()).collect(),
            series: vec![Series::new(
                "elapsed ms",
                bind_tests.iter().map(|m| m.figures.seconds * 1000.0).collect(),
            )],
        },
    ));
    for (prefix, file, title, x) in [
        ("fetch", "client-practices-fetch", "Fetch size: rows/s by rows per fetch", "rows per fetch"),
        ("array", "client-practices-array", "Array insert: rows/s by rows per call", "rows per call"),
    ] {
        let points: Vec<(f64, f64)> = done
            .iter()
            .filter(|m| m.figures.variant.starts_with(prefix))
            .filter_map(|m| Some((m.figures.batch_size? as f64, m.figures.rows_per_sec)))
            .collect();
        rep.charts.push(chart(
            file,
            title,
            x,
            "rows/s",
            Kind::Lines { series: vec![Series::new("rows/s", points)], log_x: true, log_y: true },
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_visit_every_row_once() {
        for rows in [2000u64, 10_000, 999] {
            let mut seen: Vec<u64> = (0..rows).map(|i| key(i, rows)).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len() as u64, rows, "{rows} rows");
            assert_eq!((seen[0], seen[seen.len() - 1]), (1, rows));
        }
    }
}
