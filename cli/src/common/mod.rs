//! What the benchmarks and the disk probe share: the machine's facts, the directory a run
//! works in, percentiles and number formatting. `engine-bench`, `sql-bench`, `bench` and
//! `probe` all use these, so their figures are read and printed the same way. Beside
//! them: throwaway PostgreSQL-protocol servers to compare against ([`postgres`]), their
//! log sync methods beside redodb's ([`sync_method`]) and Ctrl-C as an orderly stop
//! ([`interrupt`]).

pub(crate) mod interrupt;
pub(crate) mod machine;
pub(crate) mod postgres;
pub(crate) mod sync_method;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The directory a benchmark runs in: `dir` (created if needed), or a new temporary one
/// whose guard removes it when dropped. A temporary one lets other users pass through it
/// (mode 0711, not listable): a PostgreSQL cluster inside it runs as the `postgres` user
/// when this process is root.
pub(crate) fn bench_dir(dir: Option<&Path>, prefix: &str) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    match dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            Ok((d.to_path_buf(), None))
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix(prefix)
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
                .tempdir_in(std::env::temp_dir())
                .context("creating a temporary directory")?;
            Ok((t.path().to_path_buf(), Some(t)))
        }
    }
}

/// Nearest-rank percentile of sorted, non-empty `v`.
pub(crate) fn percentile(v: &[u64], q: f64) -> u64 {
    assert!(!v.is_empty(), "percentile of an empty sample");
    let rank = (q * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// `1234567.8` as `1,234,568`.
pub fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An optional figure with `decimals` decimals, or `-`.
pub(crate) fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.decimals$}"))
}

/// A size as bytes, or with a K or M suffix (powers of 1024; `KiB`/`KB` too).
pub(crate) fn parse_bytes(text: &str) -> Option<usize> {
    let lower = text.trim().to_ascii_lowercase();
    let lower = lower.strip_suffix("ib").or_else(|| lower.strip_suffix('b')).unwrap_or(&lower);
    let (digits, unit) = if let Some(d) = lower.strip_suffix('k') {
        (d, 1usize << 10)
    } else if let Some(d) = lower.strip_suffix('m') {
        (d, 1 << 20)
    } else {
        (lower, 1)
    };
    digits.trim().parse::<usize>().ok().and_then(|n| n.checked_mul(unit))
}

/// A byte count as `512 B`, `4 KiB`, `1.5 MiB`.
pub(crate) fn bytes_text(n: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    if n >= MIB {
        if n.is_multiple_of(MIB) {
            format!("{} MiB", n / MIB)
        } else {
            format!("{:.1} MiB", n as f64 / MIB as f64)
        }
    } else if n >= KIB {
        if n.is_multiple_of(KIB) {
            format!("{} KiB", n / KIB)
        } else {
            format!("{:.1} KiB", n as f64 / KIB as f64)
        }
    } else {
        format!("{n} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 1.0), 100);
        assert_eq!(percentile(&[7], 0.5), 7);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(1234567.8), "1,234,568");
    }

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_bytes("512"), Some(512));
        assert_eq!(parse_bytes("4K"), Some(4096));
        assert_eq!(parse_bytes("16MiB"), Some(16 << 20));
        assert_eq!(parse_bytes("2m"), Some(2 << 20));
        assert_eq!(parse_bytes("lots"), None);
    }

    #[test]
    fn byte_counts_read_naturally() {
        assert_eq!(bytes_text(512), "512 B");
        assert_eq!(bytes_text(4096), "4 KiB");
        assert_eq!(bytes_text(1 << 20), "1 MiB");
        assert_eq!(bytes_text(1536 << 10), "1.5 MiB");
    }
}
