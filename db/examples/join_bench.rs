//! The large join of `redodb sql-bench --joins-only` run embedded, for profiling the join
//! and aggregate path by hand: `cargo run --release -p redodb-db --example join_bench --
//! [orders] [customers] [runs]` (default 1,000,000 orders, 100,000 customers, 5 runs).
//! It loads `orders` and `customers` as the benchmark does (the same shapes, an index
//! on `orders.customer_id`), then runs each query `runs` times and prints its time per
//! run. `sql-bench` is the benchmark (over the wire, against PostgreSQL); this is its
//! slow query alone, to run under `perf record` or `valgrind --tool=callgrind` (with
//! smaller tables). `JOIN_BENCH_QUERY=N` runs only the N-th query (from 0). The CPU
//! time printed is the session thread's own (steadier than the wall clock on a shared
//! machine).

use std::time::Instant;

use db::{Database, DbConfig, Value};

/// The `redodb` binary's allocator, so the profile is the binary's.
#[path = "../../cli/src/alloc.rs"]
mod alloc;
#[global_allocator]
static ALLOCATOR: alloc::MiMalloc = alloc::MiMalloc;
use redo::LogConfig;

const REGIONS: [&str; 10] =
    ["north", "south", "east", "west", "centre", "coast", "mountains", "islands", "plains", "valley"];

/// Rows per transaction while loading (a transaction's redo is limited to half a log file).
const LOAD_CHUNK_ROWS: usize = 50_000;

/// The queries timed: the benchmark's whole join by region, and its pieces, then its
/// eight-table chain over all rows (select5's shape on `c1..c8`).
const QUERIES: [&str; 5] = [
    "SELECT c.region, count(*), sum(o.amount) FROM orders o JOIN customers c \
     ON o.customer_id = c.id GROUP BY c.region",
    "SELECT count(*), sum(o.amount) FROM orders o JOIN customers c ON o.customer_id = c.id",
    "SELECT count(*), sum(amount) FROM orders",
    "SELECT customer_id % 10, count(*), sum(amount) FROM orders GROUP BY customer_id % 10",
    "SELECT count(*), min(x1), max(x8), sum(a5) FROM c5, c8, c3, c1, c6, c4, c7, c2 \
     WHERE b4 = a5 AND b7 = a3 AND a2 = b3 AND b2 = a6 AND b5 = a8 AND a4 = b6 AND a7 = b1",
];

/// Rows of each chain table `c1..c8` (`JOIN_BENCH_CHAIN_ROWS`, as the benchmark's 10,000).
fn chain_rows() -> i64 {
    std::env::var("JOIN_BENCH_CHAIN_ROWS").map_or(10_000, |n| n.parse().expect("a row count"))
}

fn main() {
    alloc::configure();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let orders: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let customers: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let runs: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let only: Option<usize> =
        std::env::var("JOIN_BENCH_QUERY").ok().map(|n| n.parse().expect("a query number"));
    let dir = tempfile::tempdir_in(std::env::var("TMPDIR").unwrap_or_else(|_| "/tmp".into())).unwrap();
    let db = Database::open(
        dir.path(),
        DbConfig {
            log: LogConfig::new("."),
            checkpoint_interval_ms: 0,
            snapshot_interval_minutes: 0,
            ..DbConfig::default()
        },
    )
    .unwrap();
    let mut s = db.session();
    let loading = Instant::now();
    s.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL, region VARCHAR(20) NOT NULL)", &[])
        .unwrap();
    s.execute(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, amount INTEGER NOT NULL)",
        &[],
    )
    .unwrap();
    let mut x = 20u64;
    let mut below = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as i64
    };
    let insert = s.prepare("INSERT INTO customers VALUES ($1, $2, $3)").unwrap();
    let rows: Vec<Vec<Value>> = (1..=customers as i64)
        .map(|id| {
            vec![
                Value::Int(id),
                Value::Text(format!("customer {id}")),
                Value::Text(REGIONS[below(REGIONS.len()) as usize].into()),
            ]
        })
        .collect();
    for chunk in rows.chunks(LOAD_CHUNK_ROWS) {
        s.execute_many(&insert, chunk).unwrap();
        s.execute("COMMIT", &[]).unwrap();
    }
    let insert = s.prepare("INSERT INTO orders VALUES ($1, $2, $3)").unwrap();
    let rows: Vec<Vec<Value>> = (1..=orders as i64)
        .map(|id| vec![Value::Int(id), Value::Int(1 + below(customers)), Value::Int(1 + below(10_000))])
        .collect();
    for chunk in rows.chunks(LOAD_CHUNK_ROWS) {
        s.execute_many(&insert, chunk).unwrap();
        s.execute("COMMIT", &[]).unwrap();
    }
    drop(rows);
    s.execute("CREATE INDEX orders_customer_id ON orders (customer_id)", &[]).unwrap();
    // The chain tables: aN the key, bN a permutation of the keys (a multiplier prime to
    // the row count), as the benchmark's.
    let chain = chain_rows();
    for n in 1..=8i64 {
        s.execute(
            &format!("CREATE TABLE c{n} (a{n} INTEGER PRIMARY KEY, b{n} INTEGER, x{n} VARCHAR(40))"),
            &[],
        )
        .unwrap();
        let insert = s.prepare(&format!("INSERT INTO c{n} VALUES ($1, $2, $3)")).unwrap();
        let rows: Vec<Vec<Value>> = (1..=chain)
            .map(|i| {
                vec![
                    Value::Int(i),
                    Value::Int((i * 7919 + n * 13) % chain + 1),
                    Value::Text(format!("table c{n} row {i}")),
                ]
            })
            .collect();
        s.execute_many(&insert, &rows).unwrap();
        s.execute("COMMIT", &[]).unwrap();
    }
    println!("loaded {orders} orders, {customers} customers in {:.2} s", loading.elapsed().as_secs_f64());
    for (n, sql) in QUERIES.iter().enumerate() {
        if only.is_some_and(|only| only != n) {
            continue;
        }
        let mut times_ms = Vec::with_capacity(runs);
        let mut cpu_ms = Vec::with_capacity(runs);
        let mut answer = String::new();
        for _ in 0..runs {
            let (started, cpu_before) = (Instant::now(), redo::stats::thread_cpu_time());
            let result = s.execute(sql, &[]).unwrap();
            times_ms.push(started.elapsed().as_secs_f64() * 1e3);
            cpu_ms.push((redo::stats::thread_cpu_time() - cpu_before).as_secs_f64() * 1e3);
            let mut rows: Vec<String> = result.rows().iter().map(|r| format!("{r:?}")).collect();
            rows.sort();
            answer = format!("{} rows, first {}", rows.len(), rows.first().map_or("-", String::as_str));
        }
        s.execute("COMMIT", &[]).unwrap();
        times_ms.sort_by(f64::total_cmp);
        cpu_ms.sort_by(f64::total_cmp);
        println!(
            "query {n}: median {:.1} ms, best {:.1} ms; CPU median {:.1} ms, best {:.1} ms ({answer})\n  {sql}",
            times_ms[times_ms.len() / 2],
            times_ms[0],
            cpu_ms[cpu_ms.len() / 2],
            cpu_ms[0]
        );
    }
}
