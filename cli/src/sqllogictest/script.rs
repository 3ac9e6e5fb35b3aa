//! The sqllogictest format (SQLite's corpus; `../shared/sqllogictest/README.md`): a file
//! read into records, the conditions (`skipif` / `onlyif`) already applied for the engine
//! the runner acts as.

use anyhow::{bail, Result};

/// How a query's values are ordered before they are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortMode {
    /// As they came.
    AsReturned,
    /// The rows sorted as lists of strings.
    Rows,
    /// Every value sorted as one list.
    Values,
}

/// A query's expected result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    /// The values, one per line (a line of several, space-separated, also counts as
    /// several).
    Values(Vec<String>),
    /// `N values hashing to H`: H the MD5 of every value followed by a newline.
    Hash { count: usize, md5: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Statement { ok: bool },
    Query { types: Vec<char>, sort: SortMode, label: Option<String>, expected: Expected },
}

/// One record to run: its SQL and what it must give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The 1-based line of its first line (`statement ...` / `query ...`).
    pub line: usize,
    pub sql: String,
    pub kind: Kind,
}

/// A file's records, for the engine `engine`: a record under `skipif engine` or under an
/// `onlyif` naming another is left out (`skipped` counts them); `halt` ends the file (for
/// this engine). `hash-threshold N` makes results of more than N values compare by hash.
pub struct Script {
    pub records: Vec<Record>,
    pub skipped: usize,
    pub hash_threshold: usize,
}

impl Script {
    pub fn parse(text: &str, engine: &str) -> Result<Script> {
        let lines: Vec<&str> = text.lines().collect();
        let mut script = Script { records: Vec::new(), skipped: 0, hash_threshold: 0 };
        let mut i = 0;
        while i < lines.len() {
            // A record: the lines up to the next blank line.
            while i < lines.len() && (lines[i].trim().is_empty() || lines[i].starts_with('#')) {
                i += 1;
            }
            if i >= lines.len() {
                break;
            }
            let start = i;
            let mut block = Vec::new();
            while i < lines.len() && !lines[i].trim().is_empty() {
                if !lines[i].starts_with('#') {
                    block.push(lines[i]);
                }
                i += 1;
            }
            let mut skip = false;
            let mut halt = false;
            let mut head = 0;
            while head < block.len() {
                let words: Vec<&str> = block[head].split_whitespace().collect();
                match words.as_slice() {
                    ["skipif", name, ..] => skip |= *name == engine,
                    ["onlyif", name, ..] => skip |= *name != engine,
                    _ => break,
                }
                head += 1;
            }
            let Some(first) = block.get(head) else { continue };
            let line = start + 1 + head;
            let words: Vec<&str> = first.split_whitespace().collect();
            match words.as_slice() {
                ["halt"] => halt = true,
                ["hash-threshold", n] => {
                    if !skip {
                        script.hash_threshold = n.parse().map_err(|_| {
                            anyhow::anyhow!("line {line}: hash-threshold {n:?} is not a number")
                        })?;
                    }
                    continue;
                }
                ["statement", outcome, ..] => {
                    let ok = match *outcome {
                        "ok" => true,
                        "error" => false,
                        other => bail!("line {line}: statement {other:?} (ok or error)"),
                    };
                    let sql = block[head + 1..].join("\n");
                    if skip {
                        script.skipped += 1;
                    } else {
                        script.records.push(Record { line, sql, kind: Kind::Statement { ok } });
                    }
                }
                ["query", types, rest @ ..] => {
                    let types: Vec<char> = types.chars().collect();
                    if let Some(t) = types.iter().find(|t| !matches!(t, 'T' | 'I' | 'R')) {
                        bail!("line {line}: column type {t:?} (T, I or R)");
                    }
                    let sort = match rest.first().copied() {
                        None | Some("nosort") => SortMode::AsReturned,
                        Some("rowsort") => SortMode::Rows,
                        Some("valuesort") => SortMode::Values,
                        Some(other) => bail!("line {line}: sort mode {other:?}"),
                    };
                    let label = rest.get(1).map(|s| s.to_string());
                    let body = &block[head + 1..];
                    let rule = body.iter().position(|l| *l == "----");
                    let (sql, results) = match rule {
                        Some(r) => (body[..r].join("\n"), &body[r + 1..]),
                        None => (body.join("\n"), &body[body.len()..]),
                    };
                    let expected = match results {
                        [one] if one.contains(" values hashing to ") => {
                            let (count, md5) = one.split_once(" values hashing to ").expect("checked");
                            Expected::Hash {
                                count: count.trim().parse().map_err(|_| {
                                    anyhow::anyhow!("line {line}: {one:?} has no count of values")
                                })?,
                                md5: md5.trim().to_string(),
                            }
                        }
                        _ => Expected::Values(
                            results.iter().flat_map(|l| l.split_whitespace()).map(str::to_string).collect(),
                        ),
                    };
                    if skip {
                        script.skipped += 1;
                    } else {
                        script.records.push(Record {
                            line,
                            sql,
                            kind: Kind::Query { types, sort, label, expected },
                        });
                    }
                }
                _ => bail!("line {line}: not a record: {first:?}"),
            }
            if halt && !skip {
                break;
            }
        }
        Ok(script)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_conditions_and_results() {
        let text = "\
# a comment
statement ok
CREATE TABLE t1(a INTEGER, b INTEGER)

skipif postgresql
statement ok
SELECT nothing

onlyif mysql
query I nosort
SELECT 1
----
1

hash-threshold 8

query II rowsort label-1
SELECT a,
  b FROM t1
----
1 2
3
4

query I valuesort
SELECT a FROM t1
----
30 values hashing to 3c13dee48d9356ae19af2515e05e6b54

statement error
SELECT * FROM nowhere

onlyif postgresql
halt

statement ok
SELECT 'never reached'
";
        let script = Script::parse(text, "postgresql").unwrap();
        assert_eq!(script.skipped, 2);
        assert_eq!(script.hash_threshold, 8);
        assert_eq!(script.records.len(), 4);
        assert_eq!(script.records[0].kind, Kind::Statement { ok: true });
        assert_eq!(script.records[0].line, 2);
        assert_eq!(
            script.records[1],
            Record {
                line: 17,
                sql: "SELECT a,\n  b FROM t1".into(),
                kind: Kind::Query {
                    types: vec!['I', 'I'],
                    sort: SortMode::Rows,
                    label: Some("label-1".into()),
                    expected: Expected::Values(vec!["1".into(), "2".into(), "3".into(), "4".into()]),
                },
            }
        );
        let Kind::Query { expected, .. } = &script.records[2].kind else { panic!() };
        assert_eq!(*expected, Expected::Hash { count: 30, md5: "3c13dee48d9356ae19af2515e05e6b54".into() });
        assert_eq!(script.records[3].kind, Kind::Statement { ok: false });
        assert!(Script::parse("query X\nSELECT 1\n", "postgresql").is_err());
        assert!(Script::parse("frobnicate\n", "postgresql").is_err());
    }
}
