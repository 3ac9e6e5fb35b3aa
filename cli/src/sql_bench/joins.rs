//! The join part of `redodb sql-bench` (alone: `--joins-only`): the same join queries on
//! the same data in redodb and PostgreSQL 15, time per query.
//!
//! Both servers are started here, each a throwaway in the run's directory
//! ([`crate::common::postgres`]: `redodb serve` from this binary and a PostgreSQL 15
//! cluster from the Debian package), and both are driven by the same client code over
//! the wire: one connection each, the simple query protocol, the time from sending a
//! query to its last row received. The data is generated once, deterministically, and
//! loaded into both with `COPY ... FROM STDIN` in chunks (one transaction per chunk, so a
//! load never asks for more redo than a log file holds), the secondary index built on the
//! loaded table, then `ANALYZE` on both (a no-op in redodb, PostgreSQL's planner needs it).
//!
//! The queries:
//! - (a) select5's shape (`../shared/sqllogictest/select5.test`): eight tables `tN(aN
//!   INTEGER PRIMARY KEY, bN INTEGER, xN VARCHAR(40))` of 10 rows, `bN` a permutation of
//!   the keys, joined by a chain of equalities written in WHERE in a scrambled order with
//!   the FROM list scrambled too, and a constant at one end (one row out); then the same
//!   join over eight larger tables `cN` (10,000 rows each), for one row and for all rows
//!   (an aggregate over the whole chain).
//! - (b) an indexed two-table join: `orders` (1,000,000 rows, `customer_id` indexed)
//!   with `customers` (100,000 rows, primary key): one customer's orders (an index nested
//!   loop) and an aggregate over the whole join by region (a hash join).
//!
//! Each query runs once on each server unmeasured (it warms caches and gives the result,
//! which must be the same on both: the rows sorted and hashed), then `runs` times on each,
//! the servers alternating run by run (which goes first alternates too), so a drift of the
//! machine touches both sides alike. Printed: the median time of each side and the ratio
//! PostgreSQL / redodb (above 1: redodb is faster). No time is asserted anywhere.

use std::path::Path;
use std::pin::pin;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use futures_util::SinkExt;
use md5::{Digest, Md5};
use serde::Serialize;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use crate::common::postgres::{PostgresCluster, RedodbServer};

/// How much data, and how many measured runs of each query.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Plan {
    /// Rows of each of the eight select5-style tables t1..t8.
    pub small_rows: usize,
    /// Rows of each of the eight larger chain tables c1..c8.
    pub chain_rows: usize,
    pub customers: usize,
    pub orders: usize,
    /// Measured runs of each query on each server.
    pub runs: usize,
}

impl Plan {
    pub fn for_run(quick: bool) -> Plan {
        if quick {
            Plan { small_rows: 10, chain_rows: 500, customers: 1_000, orders: 10_000, runs: 3 }
        } else {
            Plan { small_rows: 10, chain_rows: 10_000, customers: 100_000, orders: 1_000_000, runs: 7 }
        }
    }

    /// The customer whose orders the selective query reads: one in the middle.
    fn chosen_customer(&self) -> usize {
        self.customers / 2 + 7
    }
}

/// Regions of the customers, the groups of the aggregate query.
const REGIONS: [&str; 10] =
    ["north", "south", "east", "west", "centre", "coast", "mountains", "islands", "plains", "valley"];

/// Rows per COPY (one transaction each).
const COPY_CHUNK_ROWS: usize = 50_000;

/// One query's figures on both servers.
#[derive(Clone, Debug, Serialize)]
pub struct QueryFigures {
    pub name: String,
    pub sql: String,
    /// Rows the query returns (the same on both servers, or `same_result` is false).
    pub rows: usize,
    /// Both servers returned the same rows (compared sorted, by MD5).
    pub same_result: bool,
    pub postgres_ms: Vec<f64>,
    pub redodb_ms: Vec<f64>,
    pub postgres_median_ms: f64,
    pub redodb_median_ms: f64,
    /// PostgreSQL's median time over redodb's: above 1, redodb is faster.
    pub ratio: f64,
}

/// The join part's JSON.
#[derive(Clone, Debug, Serialize)]
pub struct JoinReport {
    pub postgres_version: String,
    pub plan: Plan,
    /// Seconds to load and index all tables (COPY, CREATE INDEX, ANALYZE).
    pub postgres_load_seconds: f64,
    pub redodb_load_seconds: f64,
    pub queries: Vec<QueryFigures>,
}

/// The JSON of `--joins-only`.
#[derive(Serialize)]
pub struct Alone {
    pub machine: crate::common::machine::MachineFacts,
    pub joins: JoinReport,
    pub problems: Vec<String>,
    pub total_seconds: f64,
}

/// Runs the join part in `dir` (both servers' data go there and are removed after).
/// A query whose results differ between the servers is added to `problems`.
pub fn run_part(dir: &Path, quick: bool, problems: &mut Vec<String>) -> Result<JoinReport> {
    let plan = Plan::for_run(quick);
    eprintln!(
        "joins: starting redodb serve and PostgreSQL 15; {} orders, {} customers, 8 x {} and 8 x {} chain rows",
        plan.orders, plan.customers, plan.chain_rows, plan.small_rows
    );
    let redodb = RedodbServer::start(&dir.join("joins-redodb")).context("starting redodb serve")?;
    let postgres = PostgresCluster::start(&dir.join("joins-postgres")).context("starting PostgreSQL 15")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a tokio runtime")?;
    let report = runtime.block_on(async {
        let pg = connect(&postgres.url()).await?;
        let rd = connect(&redodb.url()).await?;
        let postgres_version = postgres.server_version().to_string();
        let tables = generate(&plan);
        let postgres_load_seconds = load(&pg, &tables).await.context("loading PostgreSQL")?;
        eprintln!("joins: PostgreSQL loaded in {postgres_load_seconds:.2} s");
        let redodb_load_seconds = load(&rd, &tables).await.context("loading redodb")?;
        eprintln!("joins: redodb loaded in {redodb_load_seconds:.2} s");
        let mut queries = Vec::new();
        for (i, (name, sql)) in queries_of(&plan).into_iter().enumerate() {
            let figures = measure(&pg, &rd, &name, &sql, plan.runs, i % 2 == 1).await?;
            eprintln!(
                "joins: {name}: PostgreSQL {:.2} ms, redodb {:.2} ms ({:.2}x)",
                figures.postgres_median_ms, figures.redodb_median_ms, figures.ratio
            );
            if !figures.same_result {
                problems.push(format!("joins: {name}: redodb's result differs from PostgreSQL's"));
            }
            queries.push(figures);
        }
        anyhow::Ok(JoinReport { postgres_version, plan, postgres_load_seconds, redodb_load_seconds, queries })
    })?;
    postgres.stop().context("stopping PostgreSQL")?;
    redodb.stop().context("stopping redodb serve")?;
    Ok(report)
}

pub fn print(report: &JoinReport) {
    let p = &report.plan;
    println!(
        "JOINS: redodb serve vs PostgreSQL {}, the same queries and data over the wire (simple protocol), \
         median of {} runs each",
        report.postgres_version, p.runs
    );
    println!(
        "  data        t1..t8 {} rows each, c1..c8 {} rows each, customers {} rows (primary key), \
         orders {} rows (customer_id indexed)",
        p.small_rows, p.chain_rows, p.customers, p.orders
    );
    println!(
        "  load        PostgreSQL {:.2} s, redodb {:.2} s (COPY, CREATE INDEX, ANALYZE)",
        report.postgres_load_seconds, report.redodb_load_seconds
    );
    println!("  {:<34} {:>9} {:>11} {:>11} {:>8}  result", "query", "rows", "PG ms", "redodb ms", "ratio");
    for q in &report.queries {
        println!(
            "  {:<34} {:>9} {:>11.2} {:>11.2} {:>7.2}x  {}",
            q.name,
            q.rows,
            q.postgres_median_ms,
            q.redodb_median_ms,
            q.ratio,
            if q.same_result { "same" } else { "DIFFERENT" }
        );
    }
    println!("  ratio = PostgreSQL ms / redodb ms (above 1: redodb is faster)");
    println!();
}

async fn connect(url: &str) -> Result<Client> {
    let config: tokio_postgres::Config = url.parse().with_context(|| format!("parsing {url}"))?;
    let (client, connection) = config.connect(NoTls).await.with_context(|| format!("connecting to {url}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("joins: connection error: {e}");
        }
    });
    Ok(client)
}

/// A table to create and fill: its DDL, its rows as COPY text lines, and what to run
/// after the load (CREATE INDEX).
struct Table {
    name: String,
    create: String,
    lines: Vec<String>,
    after_load: Vec<String>,
}

/// A small deterministic generator (splitmix64): the same data on both servers and in
/// every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// 0..n.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A permutation of 1..=n (Fisher-Yates).
    fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (1..=n).collect();
        for i in (1..n).rev() {
            v.swap(i, self.below(i + 1));
        }
        v
    }
}

/// Eight select5-style tables `{prefix}1..8` of `rows` rows: `aN` the key, `bN` a
/// permutation of the keys, `xN` a label.
fn chain_tables(prefix: &str, rows: usize, rng: &mut Rng) -> Vec<Table> {
    (1..=8)
        .map(|n| {
            let name = format!("{prefix}{n}");
            let lines = rng
                .permutation(rows)
                .into_iter()
                .enumerate()
                .map(|(i, b)| format!("{}\t{b}\ttable {name} row {}", i + 1, i + 1))
                .collect();
            Table {
                create: format!(
                    "CREATE TABLE {name} (a{n} INTEGER PRIMARY KEY, b{n} INTEGER, x{n} VARCHAR(40))"
                ),
                name,
                lines,
                after_load: Vec::new(),
            }
        })
        .collect()
}

fn generate(plan: &Plan) -> Vec<Table> {
    let mut rng = Rng(20);
    let mut tables = chain_tables("t", plan.small_rows, &mut rng);
    tables.extend(chain_tables("c", plan.chain_rows, &mut rng));
    tables.push(Table {
        name: "customers".into(),
        create: "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL, \
                 region VARCHAR(20) NOT NULL)"
            .into(),
        lines: (1..=plan.customers)
            .map(|id| format!("{id}\tcustomer {id}\t{}", REGIONS[rng.below(REGIONS.len())]))
            .collect(),
        after_load: Vec::new(),
    });
    tables.push(Table {
        name: "orders".into(),
        create: "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, \
                 amount INTEGER NOT NULL)"
            .into(),
        lines: (1..=plan.orders)
            .map(|id| format!("{id}\t{}\t{}", 1 + rng.below(plan.customers), 1 + rng.below(10_000)))
            .collect(),
        after_load: vec!["CREATE INDEX orders_customer_id ON orders (customer_id)".into()],
    });
    tables
}

/// Creates and fills every table, then ANALYZE; returns the seconds it took.
async fn load(client: &Client, tables: &[Table]) -> Result<f64> {
    let started = Instant::now();
    for t in tables {
        client.batch_execute(&format!("DROP TABLE IF EXISTS {}", t.name)).await?;
        client.batch_execute(&t.create).await.with_context(|| t.create.clone())?;
        for chunk in t.lines.chunks(COPY_CHUNK_ROWS) {
            let mut text = String::with_capacity(chunk.iter().map(|l| l.len() + 1).sum());
            for line in chunk {
                text.push_str(line);
                text.push('\n');
            }
            let statement = format!("COPY {} FROM STDIN", t.name);
            let sink = client.copy_in::<_, Bytes>(&statement).await.with_context(|| statement.clone())?;
            let mut sink = pin!(sink);
            sink.send(Bytes::from(text)).await.with_context(|| statement.clone())?;
            let copied = sink.as_mut().finish().await.with_context(|| statement.clone())?;
            if copied != chunk.len() as u64 {
                bail!("{statement}: {} rows sent, COPY {copied} answered", chunk.len());
            }
        }
        for sql in &t.after_load {
            client.batch_execute(sql).await.with_context(|| sql.clone())?;
        }
    }
    client.batch_execute("ANALYZE").await.context("ANALYZE")?;
    Ok(started.elapsed().as_secs_f64())
}

/// The FROM list and WHERE chain of select5's `join-8-1`, on tables `{p}1..8`: the
/// equalities link 1-7-3-2-6-4-5-8, written in a scrambled order.
fn chain_from_where(p: &str) -> String {
    format!(
        "FROM {p}5, {p}8, {p}3, {p}1, {p}6, {p}4, {p}7, {p}2 \
         WHERE b4 = a5 AND b7 = a3 AND a2 = b3 AND b2 = a6 AND b5 = a8 AND a4 = b6 AND a7 = b1"
    )
}

/// The queries, named as printed.
fn queries_of(plan: &Plan) -> Vec<(String, String)> {
    let one_row =
        |p: &str| format!("SELECT x2, x4, x6, x8, x1, x3, x5, x7 {} AND a8 = 7", chain_from_where(p));
    vec![
        (format!("(a) select5 8 tables x {}, 1 row", plan.small_rows), one_row("t")),
        (format!("(a) chain 8 tables x {}, 1 row", plan.chain_rows), one_row("c")),
        (
            format!("(a) chain 8 tables x {}, all rows", plan.chain_rows),
            format!("SELECT count(*), min(x1), max(x8), sum(a5) {}", chain_from_where("c")),
        ),
        (
            "(b) one customer's orders".into(),
            format!(
                "SELECT o.id, o.amount, c.name FROM orders o JOIN customers c ON o.customer_id = c.id \
                 WHERE c.id = {}",
                plan.chosen_customer()
            ),
        ),
        (
            "(b) orders by region (whole join)".into(),
            "SELECT c.region, count(*), sum(o.amount) FROM orders o JOIN customers c \
             ON o.customer_id = c.id GROUP BY c.region"
                .into(),
        ),
    ]
}

/// What one execution gave: the rows, sorted and hashed, and how many.
#[derive(PartialEq, Eq, Debug)]
struct Answer {
    rows: usize,
    digest: [u8; 16],
}

/// Runs `sql` once: the time from sending it to its last row, and its answer.
async fn timed(client: &Client, sql: &str) -> Result<(Duration, Answer)> {
    let started = Instant::now();
    let messages = client.simple_query(sql).await.with_context(|| sql.to_string())?;
    let elapsed = started.elapsed();
    let mut rows: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => {
                Some((0..row.len()).map(|i| row.get(i).unwrap_or("NULL")).collect::<Vec<_>>().join("|"))
            }
            _ => None,
        })
        .collect();
    rows.sort_unstable();
    let mut hasher = Md5::new();
    for r in &rows {
        hasher.update(r.as_bytes());
        hasher.update(b"\n");
    }
    Ok((elapsed, Answer { rows: rows.len(), digest: hasher.finalize().into() }))
}

/// One query on both servers: a warm-up run each (their answers compared), then `runs`
/// measured runs each, alternating; `redodb_first` says who starts.
async fn measure(
    pg: &Client,
    rd: &Client,
    name: &str,
    sql: &str,
    runs: usize,
    redodb_first: bool,
) -> Result<QueryFigures> {
    let (_, pg_answer) = timed(pg, sql).await.context("on PostgreSQL")?;
    let (_, rd_answer) = timed(rd, sql).await.context("on redodb")?;
    let mut postgres_ms = Vec::with_capacity(runs);
    let mut redodb_ms = Vec::with_capacity(runs);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for run in 0..runs {
        if (run % 2 == 0) == redodb_first {
            redodb_ms.push(ms(timed(rd, sql).await.context("on redodb")?.0));
            postgres_ms.push(ms(timed(pg, sql).await.context("on PostgreSQL")?.0));
        } else {
            postgres_ms.push(ms(timed(pg, sql).await.context("on PostgreSQL")?.0));
            redodb_ms.push(ms(timed(rd, sql).await.context("on redodb")?.0));
        }
    }
    let postgres_median_ms = median(&postgres_ms);
    let redodb_median_ms = median(&redodb_ms);
    Ok(QueryFigures {
        name: name.to_string(),
        sql: sql.to_string(),
        rows: pg_answer.rows,
        same_result: pg_answer == rd_answer,
        postgres_ms,
        redodb_ms,
        postgres_median_ms,
        redodb_median_ms,
        ratio: if redodb_median_ms > 0.0 { postgres_median_ms / redodb_median_ms } else { 0.0 },
    })
}

/// The median of non-empty `v` (the mean of the middle two for an even count).
fn median(v: &[f64]) -> f64 {
    assert!(!v.is_empty(), "median of no runs");
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }

    #[test]
    fn chain_columns_are_permutations_of_the_keys() {
        let mut rng = Rng(1);
        for t in chain_tables("t", 10, &mut rng) {
            let mut b: Vec<usize> =
                t.lines.iter().map(|l| l.split('\t').nth(1).unwrap().parse().unwrap()).collect();
            b.sort_unstable();
            assert_eq!(b, (1..=10).collect::<Vec<_>>(), "{}", t.name);
        }
    }

    #[test]
    fn the_same_data_every_time() {
        let plan = Plan::for_run(true);
        let first: Vec<Vec<String>> = generate(&plan).into_iter().map(|t| t.lines).collect();
        let second: Vec<Vec<String>> = generate(&plan).into_iter().map(|t| t.lines).collect();
        assert_eq!(first, second);
        assert_eq!(first.last().unwrap().len(), plan.orders);
    }
}
