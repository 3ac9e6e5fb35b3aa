//! The text report, in the layout of Oracle's AWR report so that its readers find each
//! figure where they expect it.

use std::fmt::Write;

use super::clock::format_utc;
use super::interval::{fmt_ms, EventDelta, Interval, ShareBasis};
use super::repository::Snapshot;
use super::AwrError;
use crate::error::DbResult;

/// Width text is wrapped at.
const WIDTH: usize = 100;
/// Histogram buckets per line.
const BUCKETS_PER_LINE: usize = 10;

/// The section headings of both report formats, in order.
pub const REPORT_SECTIONS: [&str; 12] = [
    "Load Profile",
    "Top 5 Timed Foreground Events",
    "Background Wait Events",
    "Commit Response Time by Mode",
    "Wait Event Histogram",
    "Time Model Statistics",
    "SQL ordered by Elapsed Time",
    "SQL ordered by Executions",
    "SQL ordered by Parse Calls",
    "Unit of Work (seed 000)",
    "Instance Activity Stats",
    "Findings",
];

/// The interval a report covers: from the first snapshot of `range` to its last (every
/// one of the same instance, in id order).
pub(crate) fn interval_of(range: &[Snapshot]) -> Result<Interval, AwrError> {
    Interval::over(range)
}

/// The text report from the first snapshot of `range` to its last.
pub fn report_text(range: &[Snapshot]) -> DbResult<String> {
    let interval = interval_of(range)?;
    Ok(render(&interval))
}

/// An integer with thousands separators.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number with `decimals` decimals and thousands separators.
pub(crate) fn number(v: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, v.abs());
    let (whole, fraction) = text.split_once('.').map_or((text.as_str(), None), |(w, f)| (w, Some(f)));
    let whole = whole.parse::<u64>().map_or(whole.to_string(), count);
    let sign = if v < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') { "-" } else { "" };
    match fraction {
        Some(f) => format!("{sign}{whole}.{f}"),
        None => format!("{sign}{whole}"),
    }
}

pub(crate) fn optional(v: Option<f64>, decimals: usize) -> String {
    v.map_or("n/a".to_string(), |v| number(v, decimals))
}

/// The label of histogram bucket `i` (its exclusive upper limit), in binary units: the
/// buckets are powers of two microseconds, so "<1ms" is under 1024 us.
pub(crate) fn bucket_label(i: usize) -> String {
    let limit = redo::stats::histogram_bucket_limit_us(i);
    match limit {
        l if l < 1 << 10 => format!("<{l}us"),
        l if l < 1 << 20 => format!("<{}ms", l >> 10),
        l => format!("<{}s", l >> 20),
    }
}

/// The buckets from the first that counted a wait to the last, with their share of the
/// waits in percent.
pub(crate) fn histogram_span(e: &EventDelta) -> Vec<(usize, f64)> {
    let total: u64 = e.histogram.iter().sum();
    let first = e.histogram.iter().position(|&c| c > 0);
    let last = e.histogram.iter().rposition(|&c| c > 0);
    match (first, last) {
        (Some(first), Some(last)) if total > 0 => {
            (first..=last).map(|i| (i, 100.0 * e.histogram[i] as f64 / total as f64)).collect()
        }
        _ => Vec::new(),
    }
}

fn wrap(out: &mut String, indent: &str, text: &str) {
    let mut line = String::from(indent);
    for word in text.split_whitespace() {
        if line.len() > indent.len() && line.len() + 1 + word.len() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(indent);
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

fn heading(out: &mut String, title: &str) {
    let _ = write!(out, "\n{title}\n{}\n", "~".repeat(title.len()));
}

fn render(i: &Interval) -> String {
    let mut out = String::new();
    header(&mut out, i);
    load_profile(&mut out, i);
    top_events(&mut out, i);
    background_events(&mut out, i);
    commit_response(&mut out, i);
    histograms(&mut out, i);
    time_model(&mut out, i);
    sql_sections(&mut out, i);
    unit_of_work(&mut out, i);
    activity(&mut out, i);
    findings(&mut out, i);
    out.push_str("\nEnd of Report\n");
    out
}

fn header(out: &mut String, i: &Interval) {
    let platform = i.host.platform();
    let _ = writeln!(out, "WORKLOAD REPOSITORY report for\n");
    let _ = writeln!(
        out,
        "{:<8} {:<16} {:<10} {:<20} {:<32} {:>4}",
        "DB Name", "DB Id", "Release", "Host Name", "Platform", "CPUs"
    );
    let _ = writeln!(
        out,
        "{} {} {} {} {} {}",
        "-".repeat(8),
        "-".repeat(16),
        "-".repeat(10),
        "-".repeat(20),
        "-".repeat(32),
        "-".repeat(4)
    );
    let _ = writeln!(
        out,
        "{:<8} {:<16} {:<10} {:<20} {:<32} {:>4}\n",
        "REDODB", i.db_id, i.release, i.host.hostname, platform, i.host.cpus
    );
    let _ = writeln!(out, "{:12}{:>9} {:>19} {:>14}", "", "Snap Id", "Snap Time (UTC)", "SCN");
    let _ = writeln!(out, "{:12}{} {} {}", "", "-".repeat(9), "-".repeat(19), "-".repeat(14));
    let _ = writeln!(
        out,
        "{:>11} {:>9} {:>19} {:>14}",
        "Begin Snap:",
        i.begin_id,
        format_utc(i.begin_at_unix_us),
        count(i.begin_scn)
    );
    let _ = writeln!(
        out,
        "{:>11} {:>9} {:>19} {:>14}",
        "End Snap:",
        i.end_id,
        format_utc(i.end_at_unix_us),
        count(i.end_scn)
    );
    let _ = writeln!(out, "{:>11} {:>20} (mins)", "Elapsed:", number(i.elapsed_s() / 60.0, 2));
    match i.db_time_us() {
        Some(us) => {
            let _ = writeln!(out, "{:>11} {:>20} (mins)", "DB Time:", number(us as f64 / 60e6, 2));
        }
        None => {
            let _ = writeln!(out, "{:>11} {:>20}", "DB Time:", "not measured");
        }
    }
    let settings: Vec<String> = i.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if !settings.is_empty() {
        out.push('\n');
        wrap(out, "", &format!("Settings at the end snapshot: {}", settings.join(", ")));
    }
}

fn load_profile(out: &mut String, i: &Interval) {
    heading(out, "Load Profile");
    let _ = writeln!(out, "{:>24} {:>18} {:>18}", "", "Per Second", "Per Transaction");
    let _ = writeln!(out, "{:>24} {} {}", "", "-".repeat(18), "-".repeat(18));
    for row in i.load_profile() {
        let per_txn = row.per_transaction.map_or(String::new(), |v| number(v, 1));
        let _ = writeln!(
            out,
            "{:>24} {:>18} {:>18}",
            format!("{}:", row.name),
            number(row.per_second, 1),
            per_txn
        );
    }
}

fn top_events(out: &mut String, i: &Interval) {
    heading(out, "Top 5 Timed Foreground Events");
    let (basis, _) = i.share_basis();
    let rows = i.top_events(5);
    if rows.is_empty() {
        out.push_str("No foreground waits in this interval.\n");
        return;
    }
    let share_top = match basis {
        ShareBasis::DbTime => "% DB",
        ShareBasis::WaitTime => "% Wait",
    };
    let _ = writeln!(out, "{:<40} {:>12} {:>11} {:>9} {share_top:>7}", "", "", "", "Avg wait");
    let _ = writeln!(
        out,
        "{:<40} {:>12} {:>11} {:>9} {:>7} Wait Class",
        "Event", "Waits", "Time(s)", "(ms)", "time"
    );
    let _ = writeln!(
        out,
        "{} {} {} {} {} {}",
        "-".repeat(40),
        "-".repeat(12),
        "-".repeat(11),
        "-".repeat(9),
        "-".repeat(7),
        "-".repeat(13)
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<40} {:>12} {:>11} {:>9} {:>7} {}",
            r.name,
            r.waits.map_or(String::new(), count),
            number(r.time_us as f64 / 1e6, 2),
            r.avg_ms.map_or(String::new(), |ms| number(ms, 3)),
            optional(r.share_pct, 1),
            r.wait_class
        );
    }
    if basis == ShareBasis::WaitTime {
        out.push_str("DB time is not measured: shares are of the non-idle foreground wait time.\n");
    }
}

fn background_events(out: &mut String, i: &Interval) {
    heading(out, "Background Wait Events");
    let events = i.background_events();
    if events.is_empty() {
        out.push_str("No background waits in this interval.\n");
        return;
    }
    let bg_elapsed = i.time_model_us("background elapsed time").filter(|&us| us > 0);
    let _ = writeln!(
        out,
        "{:<40} {:>12} {:>14} {:>9} {:>10} {:>7}",
        "", "", "Total Wait", "Avg wait", "Waits", "% bg"
    );
    let _ = writeln!(
        out,
        "{:<40} {:>12} {:>14} {:>9} {:>10} {:>7}",
        "Event", "Waits", "Time (s)", "(ms)", "/txn", "time"
    );
    let _ = writeln!(
        out,
        "{} {} {} {} {} {}",
        "-".repeat(40),
        "-".repeat(12),
        "-".repeat(14),
        "-".repeat(9),
        "-".repeat(10),
        "-".repeat(7)
    );
    for (name, e) in events {
        let per_txn = i.per_transaction(e.waits as f64);
        let share = bg_elapsed.map(|bg| 100.0 * e.time_us as f64 / bg as f64);
        let _ = writeln!(
            out,
            "{:<40} {:>12} {:>14} {:>9} {:>10} {:>7}",
            name,
            count(e.waits),
            number(e.time_us as f64 / 1e6, 2),
            fmt_ms(e.avg_ms()),
            optional(per_txn, 2),
            optional(share, 1)
        );
    }
}

fn commit_response(out: &mut String, i: &Interval) {
    heading(out, "Commit Response Time by Mode");
    let rows: Vec<_> = i.commit_response.iter().filter(|(_, e)| e.waits > 0).collect();
    if rows.is_empty() {
        out.push_str("No commits timed in this interval.\n");
        return;
    }
    let _ = writeln!(out, "{:<20} {:>12} {:>11} {:>12}", "Commit Mode", "Commits", "Time(s)", "Avg (ms)");
    let _ = writeln!(out, "{} {} {} {}", "-".repeat(20), "-".repeat(12), "-".repeat(11), "-".repeat(12));
    for (mode, e) in rows {
        let _ = writeln!(
            out,
            "{:<20} {:>12} {:>11} {:>12}",
            mode,
            count(e.waits),
            number(e.time_us as f64 / 1e6, 2),
            fmt_ms(e.avg_ms())
        );
    }
}

fn histograms(out: &mut String, i: &Interval) {
    heading(out, "Wait Event Histogram");
    out.push_str("% of waits per power-of-two bucket (binary units: 1ms = 1024us, 1s = 1024ms)\n");
    let mut any = false;
    for (name, e) in &i.events {
        let span = histogram_span(e);
        if span.is_empty() {
            continue;
        }
        any = true;
        let _ = writeln!(out, "\n{name} ({} waits, {})", count(e.waits), e.wait_class);
        for chunk in span.chunks(BUCKETS_PER_LINE) {
            let labels: Vec<String> = chunk.iter().map(|&(b, _)| format!("{:>7}", bucket_label(b))).collect();
            let shares: Vec<String> =
                chunk.iter().map(|&(_, pct)| format!("{:>7}", number(pct, 1))).collect();
            let _ = writeln!(out, "  {}\n  {}", labels.join(""), shares.join(""));
        }
    }
    if !any {
        out.push_str("No waits in this interval.\n");
    }
}

fn time_model(out: &mut String, i: &Interval) {
    heading(out, "Time Model Statistics");
    let rows = i.time_model_rows();
    if rows.is_empty() {
        out.push_str("The time model is not measured in these snapshots.\n");
        return;
    }
    let _ = writeln!(out, "{:<40} {:>14} {:>13}", "Statistic Name", "Time (s)", "% of DB Time");
    let _ = writeln!(out, "{} {} {}", "-".repeat(40), "-".repeat(14), "-".repeat(13));
    for (name, us, pct) in rows {
        let _ = writeln!(
            out,
            "{:<40} {:>14} {:>13}",
            name,
            number(us as f64 / 1e6, 2),
            pct.map_or(String::new(), |p| number(p, 1))
        );
    }
}

fn unit_of_work(out: &mut String, i: &Interval) {
    heading(out, "Unit of Work (seed 000)");
    let u = i.unit_of_work();
    let _ = writeln!(out, "{:>16} {:>12} {:>12} {:>12}", "L (commits/s)", "CPUt (ms)", "Wt (ms)", "Rt (ms)");
    let _ = writeln!(out, "{} {} {} {}", "-".repeat(16), "-".repeat(12), "-".repeat(12), "-".repeat(12));
    let _ = writeln!(
        out,
        "{:>16} {:>12} {:>12} {:>12}",
        number(u.commits_per_second, 2),
        optional(u.cpu_ms_per_commit, 3),
        optional(u.wait_ms_per_commit, 3),
        optional(u.response_ms_per_commit, 3)
    );
    let cpu = if u.cpu_includes_background { "DB CPU + background cpu time" } else { "DB CPU" };
    let mut note = format!(
        "A commit is the unit of work. CPUt: {cpu} per commit (the service time); Wt: non-idle foreground \
         wait time per commit (the queue time); Rt = CPUt + Wt."
    );
    if u.cpu_ms_per_commit.is_none() {
        note.push_str(" CPUt and Rt need DB CPU, which these snapshots do not measure.");
    }
    wrap(out, "", &note);
}

/// Statements listed in each SQL section.
pub(crate) const SQL_ROWS: usize = 10;

/// Characters of a statement's text a text report shows.
const SQL_TEXT_SHOWN: usize = 60;

/// A statement's text on one line: whitespace runs made one space, cut at `chars`.
pub(crate) fn sql_line(text: &str, chars: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > chars {
        format!("{}...", line.chars().take(chars.saturating_sub(3)).collect::<String>())
    } else {
        line
    }
}

/// The figures of the three SQL sections, shared by both formats: headings, which columns
/// are numbers, and rows (the text last). None when no statement did that in the interval.
pub(crate) fn sql_tables(i: &Interval, text: impl Fn(&str) -> String) -> [(&'static str, SqlTable); 3] {
    let per_exec_ms =
        |us: u64, n: u64| if n == 0 { String::new() } else { number(us as f64 / n as f64 / 1e3, 3) };
    let sql_elapsed: u64 = i.sql.iter().map(|s| s.elapsed_us).sum();
    let (total_time, time_heading) = match i.db_time_us().filter(|&us| us > 0) {
        Some(us) => (us, "%DB time"),
        None => (sql_elapsed, "%SQL time"),
    };
    let parses = i.statistic("parse count (total)");
    let elapsed = SqlTable {
        headings: vec!["Elapsed (s)", "Executions", "per Exec (ms)", time_heading, "SQL Text"],
        rows: i
            .top_sql(SQL_ROWS, |s| s.elapsed_us)
            .into_iter()
            .map(|s| {
                vec![
                    number(s.elapsed_us as f64 / 1e6, 3),
                    count(s.executions),
                    per_exec_ms(s.elapsed_us, s.executions),
                    optional((total_time > 0).then(|| 100.0 * s.elapsed_us as f64 / total_time as f64), 1),
                    text(&s.text),
                ]
            })
            .collect(),
    };
    let executions = SqlTable {
        headings: vec!["Executions", "Rows Processed", "Rows per Exec", "per Exec (ms)", "SQL Text"],
        rows: i
            .top_sql(SQL_ROWS, |s| s.executions)
            .into_iter()
            .map(|s| {
                vec![
                    count(s.executions),
                    count(s.rows_processed),
                    number(s.rows_processed as f64 / s.executions as f64, 1),
                    per_exec_ms(s.elapsed_us, s.executions),
                    text(&s.text),
                ]
            })
            .collect(),
    };
    let parse_calls = SqlTable {
        headings: vec!["Parse Calls", "Executions", "% Total Parses", "SQL Text"],
        rows: i
            .top_sql(SQL_ROWS, |s| s.parse_calls)
            .into_iter()
            .map(|s| {
                vec![
                    count(s.parse_calls),
                    count(s.executions),
                    optional((parses > 0).then(|| 100.0 * s.parse_calls as f64 / parses as f64), 1),
                    text(&s.text),
                ]
            })
            .collect(),
    };
    [
        ("SQL ordered by Elapsed Time", elapsed),
        ("SQL ordered by Executions", executions),
        ("SQL ordered by Parse Calls", parse_calls),
    ]
}

/// One SQL section's table.
pub(crate) struct SqlTable {
    pub headings: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

/// What a SQL section says under its table (or instead of it).
pub(crate) fn sql_note(i: &Interval, rows: usize) -> Option<String> {
    let mut notes = Vec::new();
    if rows == 0 {
        notes.push(if i.sql.is_empty() {
            "No statement was captured in this interval (statements are captured by snapshots taken by this release).".to_string()
        } else {
            "No statement did this in the interval.".to_string()
        });
    }
    if i.sql_not_kept > 0 {
        notes.push(format!(
            "The snapshots left out {} statement activities (each keeps its {} statements with the most elapsed time).",
            count(i.sql_not_kept),
            super::sample::TOP_SQL
        ));
    }
    if !i.sql_missing_snapshots.is_empty() {
        let ids: Vec<String> = i.sql_missing_snapshots.iter().map(u64::to_string).collect();
        notes.push(format!(
            "Snapshots {} are missing (damaged or removed): the statements' activity they held is not counted.",
            ids.join(", ")
        ));
    }
    (!notes.is_empty()).then(|| notes.join(" "))
}

fn sql_sections(out: &mut String, i: &Interval) {
    for (title, table) in sql_tables(i, |t| sql_line(t, SQL_TEXT_SHOWN)) {
        heading(out, title);
        if !table.rows.is_empty() {
            let numbers = table.headings.len() - 1;
            let line: Vec<String> = table.headings[..numbers]
                .iter()
                .map(|h| format!("{h:>14}"))
                .chain(["SQL Text".to_string()])
                .collect();
            let _ = writeln!(out, "{}", line.join(" "));
            let rule: Vec<String> = (0..numbers).map(|_| "-".repeat(14)).chain(["-".repeat(30)]).collect();
            let _ = writeln!(out, "{}", rule.join(" "));
            for row in &table.rows {
                let line: Vec<String> =
                    row[..numbers].iter().map(|c| format!("{c:>14}")).chain([row[numbers].clone()]).collect();
                let _ = writeln!(out, "{}", line.join(" "));
            }
        }
        if let Some(note) = sql_note(i, table.rows.len()) {
            wrap(out, "", &note);
        }
    }
}

fn activity(out: &mut String, i: &Interval) {
    heading(out, "Instance Activity Stats");
    let _ = writeln!(out, "{:<44} {:>16} {:>16} {:>16}", "Statistic", "Total", "per Second", "per Trans");
    let _ = writeln!(out, "{} {} {} {}", "-".repeat(44), "-".repeat(16), "-".repeat(16), "-".repeat(16));
    for (name, &value) in &i.statistics {
        let _ = writeln!(
            out,
            "{:<44} {:>16} {:>16} {:>16}",
            name,
            count(value),
            number(i.per_second(value as f64), 1),
            optional(i.per_transaction(value as f64), 1)
        );
    }
}

fn findings(out: &mut String, i: &Interval) {
    heading(out, "Findings");
    let findings = i.findings();
    if findings.is_empty() {
        out.push_str(
            "No findings: none of the checked signatures (checkpoints failed or incomplete, log file sync\n",
        );
        out.push_str(
            "dominating, log file sync far above log file parallel write, log buffer space, hard parses, few\n",
        );
        out.push_str("rows per fetch) is present.\n");
        return;
    }
    for (n, f) in findings.iter().enumerate() {
        wrap(out, "", &format!("{}. {}: {}.", n + 1, f.title, f.evidence));
        wrap(out, "   ", &format!("{}.", f.advice));
    }
}

#[cfg(test)]
mod tests {
    use super::super::interval::tests::{crafted, snap, sync_and_write};
    use super::*;

    #[test]
    fn numbers_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(number(6_660_802.04, 1), "6,660,802.0");
        assert_eq!(number(0.25, 2), "0.25");
        assert_eq!(number(-1234.5, 1), "-1,234.5");
        assert_eq!(number(-0.0001, 1), "0.0");
        assert_eq!(bucket_label(0), "<1us");
        assert_eq!(bucket_label(9), "<512us");
        assert_eq!(bucket_label(10), "<1ms");
        assert_eq!(bucket_label(21), "<2s");
    }

    #[test]
    fn the_text_report_has_every_section_and_the_figures() {
        let (b, e) = sync_and_write(4_000, 1_000);
        let text = report_text(&[b, e]).expect("report");
        for section in REPORT_SECTIONS {
            assert!(
                text.contains(&format!("\n{section}\n{}\n", "~".repeat(section.len()))),
                "missing {section}:\n{text}"
            );
        }
        assert!(text.starts_with("WORKLOAD REPOSITORY report for"));
        assert!(text.contains("testhost"));
        assert!(text.contains(" 0.1.0 "), "release:\n{text}");
        assert!(text.contains("Begin Snap:         1"), "{text}");
        assert!(text.contains("Elapsed:                 1.67 (mins)"), "{text}");
        assert!(text.contains("DB Time:         not measured"), "{text}");
        // Top 5: log file sync with its waits, time, average and share of the wait time.
        let top = text.lines().find(|l| l.starts_with("log file sync ")).expect("top event line");
        assert!(
            top.contains("10,000")
                && top.contains("40.00")
                && top.contains("4.000")
                && top.contains("100.0 Commit"),
            "{top}"
        );
        assert!(text.contains("% Wait"), "share of wait time when DB time is absent");
        // Background: log file parallel write, 0.4 waits per transaction.
        let bg = text.lines().find(|l| l.starts_with("log file parallel write ")).expect("background line");
        assert!(bg.contains("4,000") && bg.contains("4.00") && bg.contains("0.40"), "{bg}");
        // Histogram: every sync in the bucket of 4000 us (<4ms), every write in <1ms.
        assert!(text.contains("log file sync (10,000 waits, Commit)\n     <4ms\n    100.0\n"), "{text}");
        // Unit of work: 100 commits/s, 4 ms of waiting per commit, CPU not measured.
        assert!(text.contains("          100.00          n/a        4.000          n/a"), "{text}");
        // Activity stats: total, per second, per transaction.
        let redo_writes = text.lines().find(|l| l.starts_with("redo writes ")).expect("redo writes line");
        assert!(
            redo_writes.split_whitespace().collect::<Vec<_>>().ends_with(&["4,000", "40.0", "0.4"]),
            "{redo_writes}"
        );
        // Findings with their figures.
        assert!(
            text.contains(
                "log file sync far above log file parallel write: avg log file sync 4.000 ms is 4.0x"
            ),
            "{text}"
        );
        assert!(text.trim_end().ends_with("End of Report"));
        // No statement in these crafted samples: the SQL sections say so.
        assert!(
            text.contains("SQL ordered by Executions\n~~~~~~~~~~~~~~~~~~~~~~~~~\nNo statement was captured")
        );
    }

    /// The three SQL sections rank the interval's statements by their own figure, with
    /// the per-execution figures and shares a reader compares.
    #[test]
    fn the_sql_sections_rank_statements_with_their_figures() {
        use super::super::interval::tests::statement;
        let (b, mut e) = sync_and_write(4_000, 1_000);
        e.sample
            .statistics
            .insert("parse count (total)".into(), 1_000 + b.sample.statistic("parse count (total)"));
        e.sample.sql = vec![
            statement("UPDATE t SET n = n + 1\n   WHERE id = $1", 10_000, 1, 10_000, 2_000_000),
            statement("COMMIT", 10_000, 1, 0, 30_000_000),
            statement(&format!("SELECT * FROM t WHERE id = {}", "9".repeat(80)), 1, 998, 1, 500),
        ];
        e.sample.sql_not_kept = 7;
        let text = report_text(&[b, e]).expect("report");
        let section = |title: &str| -> Vec<String> {
            let start = text.find(&format!("\n{title}\n")).unwrap_or_else(|| panic!("{title}:\n{text}"));
            // Past the title, its underline, the headings and their rule.
            text[start..].lines().skip(5).take_while(|l| !l.is_empty()).map(str::to_string).collect()
        };
        let elapsed = section("SQL ordered by Elapsed Time");
        assert_eq!(elapsed.len(), 3 + 2, "three statements, the note on two lines: {elapsed:?}");
        let cells = |line: &str| line.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
        // 30 s of 32.0005 s of SQL time (DB time is not measured in these samples).
        assert_eq!(cells(&elapsed[0]), "30.000 10,000 3.000 93.7", "{elapsed:?}");
        assert!(elapsed[0].ends_with(" COMMIT"), "{elapsed:?}");
        assert!(elapsed[1].ends_with(" UPDATE t SET n = n + 1 WHERE id = $1"), "one line: {elapsed:?}");
        assert!(elapsed[2].ends_with("999..."), "cut: {elapsed:?}");
        assert!(elapsed[3].starts_with("The snapshots left out 7 statement activities"), "{elapsed:?}");
        let executions = section("SQL ordered by Executions");
        assert_eq!(
            cells(&executions[0]),
            "10,000 0 0.0 3.000",
            "COMMIT first: the most time: {executions:?}"
        );
        assert_eq!(cells(&executions[1]), "10,000 10,000 1.0 0.200", "{executions:?}");
        let parses = section("SQL ordered by Parse Calls");
        assert_eq!(cells(&parses[0]), "998 1 99.8 SELECT", "the literal statement's parses: {parses:?}");
        let html = super::super::report_html(&[
            snap(1, crafted(0, &[], &[])),
            snap(2, {
                let mut s = crafted(60, &[], &[]);
                s.sql = vec![statement("SELECT '<b>'", 3, 3, 3, 30)];
                s
            }),
        ])
        .expect("html");
        assert!(html.contains("<td>SELECT &#39;&lt;b&gt;&#39;</td>"), "the text, escaped");
    }

    #[test]
    fn the_text_report_prints_the_time_model_when_measured() {
        let (b, mut e) = sync_and_write(1_000, 900);
        e.sample.time_model.insert("DB time".into(), 120_000_000);
        e.sample.time_model.insert("DB CPU".into(), 90_000_000);
        e.sample.statistics.insert("background cpu time (usec)".into(), 5_000_000);
        let text = report_text(&[b, e]).expect("report");
        assert!(text.contains("DB Time:                 2.00 (mins)"), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("DB CPU") && l.contains("90.00") && l.contains("75.0")),
            "{text}"
        );
        assert!(text.contains("% DB"));
        assert!(text.contains("background cpu time                                5.00"), "{text}");
        // CPUt = (90 + 5) s / 10,000 commits = 9.5 ms; Wt = 1 ms; Rt = 10.5 ms.
        assert!(text.contains("          100.00        9.500        1.000       10.500"), "{text}");
        assert!(text.contains("CPUt: DB CPU + background cpu time per commit"));
    }

    #[test]
    fn a_report_without_findings_says_so_and_one_snapshot_is_refused() {
        let b = crafted(0, &[("user commits", 0)], &[]);
        let e = crafted(60, &[("user commits", 10)], &[]);
        let text = report_text(&[snap(1, b.clone()), snap(2, e)]).expect("report");
        assert!(text.contains("No findings: none of the checked signatures"), "{text}");
        assert!(text.contains("No foreground waits in this interval."));
        let refused = report_text(&[snap(1, b)]).unwrap_err();
        assert_eq!(refused.to_string(), "a report needs two snapshots, 1 given");
    }
}
