//! `redodb sqllogictest FILE...`: runs sqllogictest scripts (SQLite's corpus, the format
//! in `script`) against a server over the PostgreSQL wire protocol, acting as the engine
//! `postgresql` (`skipif postgresql` records are left out, `onlyif postgresql` ones run).
//!
//! Each file starts on an empty database: by default on a `redodb serve` of its own (a
//! new database in a temporary directory); with `--with-postgres` on a throwaway
//! PostgreSQL 15 (to check a script, or the runner, against the reference); with `--url`
//! on a running server, where the tables and views a file created are dropped after it.
//!
//! Values are compared as the format prints them: NULL as `NULL`, the empty string as
//! `(empty)`, `I` columns as integers (a fraction truncated toward zero), `R` columns with
//! three decimals, characters outside printable ASCII as `@`; results of more values
//! than the file's `hash-threshold` by the MD5 of the values, each followed by a newline.

mod script;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use md5::{Digest, Md5};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use crate::common::postgres::{PostgresCluster, RedodbServer};
pub use script::{Expected, Kind, Record, Script, SortMode};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The scripts to run (`.test` files).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Run against this running server (`postgres://user@host:port/db`) instead of a
    /// `redodb serve` of each file's own.
    #[arg(long, conflicts_with = "with_postgres")]
    url: Option<String>,
    /// Run against a throwaway PostgreSQL 15 (Debian package postgresql-15) instead.
    #[arg(long)]
    with_postgres: bool,
    /// The engine to act as, for `skipif` / `onlyif`.
    #[arg(long, default_value = "postgresql")]
    engine: String,
    /// How many failed records of each file to print in full.
    #[arg(long, default_value_t = 10)]
    show_failures: usize,
    /// A record that runs longer than this (milliseconds) is cancelled and fails.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
}

/// What one file gave.
#[derive(Debug, Default)]
pub struct FileOutcome {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    /// The failures: line, SQL and what went wrong.
    pub failures: Vec<(usize, String, String)>,
}

pub fn run(args: Args) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let timeout = Duration::from_millis(args.timeout_ms);
    let mut any_failed = false;
    for file in &args.files {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let script = Script::parse(&text, &args.engine).with_context(|| format!("in {}", file.display()))?;
        let started = Instant::now();
        let outcome = match (&args.url, args.with_postgres) {
            (Some(url), _) => runtime.block_on(run_on(url, &script, timeout, true))?,
            (None, true) => {
                let (dir, _guard) = crate::common::bench_dir(None, "redodb-sqllogictest-pg-")?;
                let cluster = PostgresCluster::start(&dir.join("pg"))?;
                runtime.block_on(run_on(&cluster.url(), &script, timeout, false))?
            }
            (None, false) => {
                let (dir, _guard) = crate::common::bench_dir(None, "redodb-sqllogictest-")?;
                let server = RedodbServer::start(&dir.join("redodb"))?;
                runtime.block_on(run_on(&server.url(), &script, timeout, false))?
            }
        };
        print_outcome(file, &outcome, args.show_failures, started.elapsed());
        any_failed |= outcome.failed > 0;
    }
    if any_failed {
        bail!("some records failed");
    }
    Ok(())
}

fn print_outcome(file: &Path, outcome: &FileOutcome, show: usize, elapsed: Duration) {
    for (line, sql, problem) in outcome.failures.iter().take(show) {
        println!("{}:{line}: {problem}\n    {}", file.display(), sql.replace('\n', "\n    "));
    }
    if outcome.failures.len() > show {
        println!("{}: ... and {} more failures", file.display(), outcome.failures.len() - show);
    }
    println!(
        "{}: {} passed, {} failed, {} skipped of {} records ({:.1} s)",
        file.display(),
        outcome.passed,
        outcome.failed,
        outcome.skipped,
        outcome.passed + outcome.failed + outcome.skipped,
        elapsed.as_secs_f64()
    );
}

/// Runs `script` on the server at `url`; with `clean_up`, drops what it created after.
pub async fn run_on(url: &str, script: &Script, timeout: Duration, clean_up: bool) -> Result<FileOutcome> {
    let client = connect(url).await?;
    let mut outcome = FileOutcome { skipped: script.skipped, ..FileOutcome::default() };
    let mut created: Vec<(&'static str, String)> = Vec::new();
    for record in &script.records {
        if let Some(object) = created_object(&record.sql) {
            created.push(object);
        }
        match run_record(&client, record, script.hash_threshold, timeout).await {
            Ok(()) => outcome.passed += 1,
            Err(problem) => {
                outcome.failed += 1;
                outcome.failures.push((record.line, record.sql.clone(), problem));
            }
        }
        if client.is_closed() {
            bail!("the server closed the connection at line {}: {}", record.line, record.sql);
        }
    }
    if clean_up {
        for (kind, name) in created.iter().rev() {
            let _ = client.simple_query(&format!("DROP {kind} IF EXISTS {name}")).await;
        }
    }
    Ok(outcome)
}

async fn connect(url: &str) -> Result<Client> {
    let (client, connection) =
        tokio_postgres::connect(url, NoTls).await.with_context(|| format!("connecting to {url}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// `CREATE TABLE name` / `CREATE VIEW name` / `CREATE INDEX name`: what to drop after.
fn created_object(sql: &str) -> Option<(&'static str, String)> {
    let words: Vec<String> = sql
        .split(|c: char| c.is_whitespace() || c == '(')
        .filter(|w| !w.is_empty())
        .take(6)
        .map(|w| w.to_ascii_uppercase())
        .collect();
    let name_at = |i: usize| {
        let mut i = i;
        if words.get(i).map(String::as_str) == Some("IF") {
            i += 3;
        }
        words.get(i).map(|w| w.to_ascii_lowercase())
    };
    match words.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["CREATE", "TABLE", ..] => name_at(2).map(|n| ("TABLE", n)),
        ["CREATE", "TEMP" | "TEMPORARY", "TABLE", ..] => name_at(3).map(|n| ("TABLE", n)),
        ["CREATE", "VIEW", ..] => name_at(2).map(|n| ("VIEW", n)),
        ["CREATE", "UNIQUE", "INDEX", ..] => name_at(3).map(|n| ("INDEX", n)),
        ["CREATE", "INDEX", ..] => name_at(2).map(|n| ("INDEX", n)),
        _ => None,
    }
}

/// Runs one record: Ok when it gave what it must, else what went wrong.
async fn run_record(
    client: &Client,
    record: &Record,
    hash_threshold: usize,
    timeout: Duration,
) -> std::result::Result<(), String> {
    let result = match tokio::time::timeout(timeout, client.simple_query(&record.sql)).await {
        Ok(result) => result,
        Err(_) => {
            let _ = client.cancel_token().cancel_query(NoTls).await;
            // The cancelled query's error comes back on the connection: take it.
            let _ = client.simple_query("SELECT 1").await;
            return Err(format!("did not finish within {} ms", timeout.as_millis()));
        }
    };
    match (&record.kind, result) {
        (Kind::Statement { ok: true }, Ok(_)) => Ok(()),
        (Kind::Statement { ok: false }, Err(_)) => Ok(()),
        (Kind::Statement { ok: false }, Ok(_)) => Err("succeeded; an error was expected".into()),
        (_, Err(e)) => Err(format!("error: {}", describe_error(&e))),
        (Kind::Query { types, sort, expected, .. }, Ok(messages)) => {
            let mut rows: Vec<Vec<String>> = Vec::new();
            for message in messages {
                if let SimpleQueryMessage::Row(row) = message {
                    if row.len() != types.len() {
                        return Err(format!("{} columns; the record expects {}", row.len(), types.len()));
                    }
                    rows.push((0..row.len()).map(|i| format_value(row.get(i), types[i])).collect());
                }
            }
            let values = sorted_values(rows, *sort);
            compare(&values, expected, hash_threshold)
        }
    }
}

fn describe_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// A value as the format prints it, for a column of type `ty` (`T`, `I` or `R`).
pub fn format_value(value: Option<&str>, ty: char) -> String {
    let Some(text) = value else { return "NULL".into() };
    match ty {
        'I' => match text.parse::<i64>() {
            Ok(i) => i.to_string(),
            Err(_) => match text.parse::<f64>() {
                Ok(f) if f.is_finite() => format!("{}", f.trunc() as i64),
                _ => printable(text),
            },
        },
        'R' => match text.parse::<f64>() {
            Ok(f) => format!("{f:.3}"),
            Err(_) => printable(text),
        },
        _ => printable(text),
    }
}

fn printable(text: &str) -> String {
    if text.is_empty() {
        return "(empty)".into();
    }
    text.chars().map(|c| if (' '..='~').contains(&c) { c } else { '@' }).collect()
}

/// The values in the order they are compared in.
pub fn sorted_values(mut rows: Vec<Vec<String>>, sort: SortMode) -> Vec<String> {
    match sort {
        SortMode::AsReturned => rows.into_iter().flatten().collect(),
        SortMode::Rows => {
            rows.sort();
            rows.into_iter().flatten().collect()
        }
        SortMode::Values => {
            let mut values: Vec<String> = rows.into_iter().flatten().collect();
            values.sort();
            values
        }
    }
}

/// The MD5 of the values, each followed by a newline, in hex.
pub fn values_hash(values: &[String]) -> String {
    let mut md5 = Md5::new();
    for v in values {
        md5.update(v.as_bytes());
        md5.update(b"\n");
    }
    md5.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn compare(values: &[String], expected: &Expected, hash_threshold: usize) -> std::result::Result<(), String> {
    match expected {
        Expected::Hash { count, md5 } => {
            let got = values_hash(values);
            if values.len() == *count && got == *md5 {
                Ok(())
            } else {
                let shown: Vec<&str> = values.iter().take(12).map(String::as_str).collect();
                Err(format!(
                    "{} values hashing to {got}; expected {count} values hashing to {md5} (got {}{})",
                    values.len(),
                    shown.join(" "),
                    if values.len() > 12 { " ..." } else { "" }
                ))
            }
        }
        // The expected values are read as words (a line may hold a row), and a text value
        // may hold spaces: compare word by word.
        Expected::Values(want)
            if want.iter().map(String::as_str).eq(values.iter().flat_map(|v| v.split_whitespace())) =>
        {
            Ok(())
        }
        Expected::Values(want) => {
            let got = if hash_threshold > 0 && values.len() > hash_threshold {
                format!("{} values hashing to {}", values.len(), values_hash(values))
            } else {
                values.join(" ")
            };
            Err(format!("got [{got}]; expected [{}]", want.join(" ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_the_format_says() {
        assert_eq!(format_value(None, 'I'), "NULL");
        assert_eq!(format_value(Some(""), 'T'), "(empty)");
        assert_eq!(format_value(Some("-7.9"), 'I'), "-7");
        assert_eq!(format_value(Some("12"), 'I'), "12");
        assert_eq!(format_value(Some("2"), 'R'), "2.000");
        assert_eq!(format_value(Some("0.33333"), 'R'), "0.333");
        assert_eq!(format_value(Some("caf\u{e9}"), 'T'), "caf@");
    }

    #[test]
    fn sorting_and_hashing() {
        let rows = vec![vec!["2".to_string(), "a".into()], vec!["10".into(), "b".into()]];
        assert_eq!(sorted_values(rows.clone(), SortMode::AsReturned), ["2", "a", "10", "b"]);
        assert_eq!(sorted_values(rows.clone(), SortMode::Rows), ["10", "b", "2", "a"]);
        assert_eq!(sorted_values(rows, SortMode::Values), ["10", "2", "a", "b"]);
        // md5("1\n2\n")
        assert_eq!(values_hash(&["1".into(), "2".into()]), "6ddb4095eb719e2a9f0a3f95677d24e0");
        assert!(compare(&["1".into()], &Expected::Values(vec!["1".into()]), 0).is_ok());
        assert!(compare(&["1".into()], &Expected::Values(vec!["2".into()]), 0).is_err());
        let words = Expected::Values(vec!["table".into(), "t1".into(), "row".into(), "6".into()]);
        assert!(compare(&["table t1 row 6".into()], &words, 0).is_ok());
    }

    #[test]
    fn objects_a_script_creates() {
        assert_eq!(created_object("CREATE TABLE t1(a INTEGER)"), Some(("TABLE", "t1".into())));
        assert_eq!(created_object("create view v1 AS SELECT 1"), Some(("VIEW", "v1".into())));
        assert_eq!(created_object("CREATE UNIQUE INDEX t1i0 ON t1(a)"), Some(("INDEX", "t1i0".into())));
        assert_eq!(created_object("CREATE TABLE IF NOT EXISTS t2 (a INT)"), Some(("TABLE", "t2".into())));
        assert_eq!(created_object("INSERT INTO t1 VALUES(1)"), None);
    }
}
