//! The HTML report: the text report's sections as one self-contained file (inline CSS,
//! inline SVG charts drawn here, no script, nothing fetched), so it can be mailed or
//! archived and still open anywhere. Every piece of text is escaped.

use std::fmt::Write;

use super::clock::format_utc;
use super::interval::{fmt_ms, EventDelta, Interval, ShareBasis};
use super::repository::Snapshot;
use super::sample::SQL_TEXT_CHARS;
use super::text::{
    bucket_label, count, histogram_span, interval_of, number, optional, sql_line, sql_note, sql_tables,
};
use crate::error::DbResult;

const STYLE: &str = "body{font-family:Arial,Helvetica,sans-serif;font-size:10pt;color:#000;margin:1.5em}\
h1{font-size:16pt;color:#336699}\
h2{font-size:13pt;color:#336699;border-bottom:1px solid #cccc99;margin-top:1.6em}\
h3{font-size:10pt;margin:1em 0 .2em}\
table{border-collapse:collapse;margin:.4em 0}\
th{background:#0066cc;color:#fff;padding:2px 8px;text-align:left;font-weight:bold}\
td{padding:2px 8px;border-bottom:1px solid #e0e0e0}\
td.n{text-align:right;font-family:monospace}\
tr:nth-child(even) td{background:#f4f6fa}\
p.note{color:#555;font-size:9pt;max-width:60em}\
ol.findings li{margin-bottom:.6em;max-width:60em}\
svg{display:block;margin:.3em 0 .8em}\
svg text{font-family:Arial,Helvetica,sans-serif;font-size:10px}";

/// Colours of the charts.
const BAR: &str = "#336699";
const COMMITS: &str = "#0066cc";
const SYNC: &str = "#d9534f";

/// Text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The HTML report from the first snapshot of `range` to its last; with more than two
/// snapshots it also charts commits/s and the average `log file sync` over each interval
/// between consecutive ones.
pub fn report_html(range: &[Snapshot]) -> DbResult<String> {
    let interval = interval_of(range)?;
    let steps = if range.len() > 2 {
        range.windows(2).map(|pair| Interval::between(&pair[0], &pair[1])).collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    Ok(render(&interval, &steps))
}

/// A table: `numeric[i]` right-aligns column i.
struct Table<'a> {
    headings: &'a [&'a str],
    numeric: &'a [bool],
    rows: Vec<Vec<String>>,
}

impl Table<'_> {
    fn write(&self, out: &mut String) {
        out.push_str("<table><thead><tr>");
        for h in self.headings {
            let _ = write!(out, "<th>{}</th>", escape(h));
        }
        out.push_str("</tr></thead><tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let class = if self.numeric.get(i).copied().unwrap_or(false) { " class=\"n\"" } else { "" };
                let _ = write!(out, "<td{class}>{}</td>", escape(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
    }
}

fn h2(out: &mut String, title: &str) {
    let id: String =
        title.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    let _ = writeln!(out, "<h2 id=\"{}\">{}</h2>", escape(&id), escape(title));
}

fn note(out: &mut String, text: &str) {
    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(text));
}

fn render(i: &Interval, steps: &[Interval]) -> String {
    let mut out = String::new();
    let title = format!("redodb workload repository report: snapshots {} to {}", i.begin_id, i.end_id);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&title)
    );
    let _ = writeln!(out, "<h1>WORKLOAD REPOSITORY report for REDODB</h1>");
    header(&mut out, i);
    load_profile(&mut out, i);
    top_events(&mut out, i);
    background_events(&mut out, i);
    commit_response(&mut out, i);
    histograms(&mut out, i);
    over_snapshots(&mut out, steps);
    time_model(&mut out, i);
    sql_sections(&mut out, i);
    unit_of_work(&mut out, i);
    activity(&mut out, i);
    findings(&mut out, i);
    out.push_str("</body>\n</html>\n");
    out
}

fn header(out: &mut String, i: &Interval) {
    let platform = i.host.platform();
    Table {
        headings: &["DB Name", "DB Id", "Release", "Host Name", "Platform", "CPUs"],
        numeric: &[false, false, false, false, false, true],
        rows: vec![vec![
            "REDODB".into(),
            i.db_id.clone(),
            i.release.clone(),
            i.host.hostname.clone(),
            platform,
            i.host.cpus.to_string(),
        ]],
    }
    .write(out);
    let db_time = i
        .db_time_us()
        .map_or("not measured".to_string(), |us| format!("{} (mins)", number(us as f64 / 60e6, 2)));
    Table {
        headings: &["", "Snap Id", "Snap Time (UTC)", "SCN"],
        numeric: &[false, true, false, true],
        rows: vec![
            vec![
                "Begin Snap:".into(),
                i.begin_id.to_string(),
                format_utc(i.begin_at_unix_us),
                count(i.begin_scn),
            ],
            vec!["End Snap:".into(), i.end_id.to_string(), format_utc(i.end_at_unix_us), count(i.end_scn)],
            vec![
                "Elapsed:".into(),
                String::new(),
                format!("{} (mins)", number(i.elapsed_s() / 60.0, 2)),
                String::new(),
            ],
            vec!["DB Time:".into(), String::new(), db_time, String::new()],
        ],
    }
    .write(out);
    if !i.settings.is_empty() {
        let settings: Vec<String> = i.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        note(out, &format!("Settings at the end snapshot: {}", settings.join(", ")));
    }
}

fn load_profile(out: &mut String, i: &Interval) {
    h2(out, "Load Profile");
    Table {
        headings: &["", "Per Second", "Per Transaction"],
        numeric: &[false, true, true],
        rows: i
            .load_profile()
            .into_iter()
            .map(|r| {
                vec![
                    r.name.to_string(),
                    number(r.per_second, 1),
                    r.per_transaction.map_or(String::new(), |v| number(v, 1)),
                ]
            })
            .collect(),
    }
    .write(out);
}

fn top_events(out: &mut String, i: &Interval) {
    h2(out, "Top 5 Timed Foreground Events");
    let rows = i.top_events(5);
    if rows.is_empty() {
        note(out, "No foreground waits in this interval.");
        return;
    }
    let basis = i.share_basis().0;
    Table {
        headings: &["Event", "Waits", "Time(s)", "Avg wait (ms)", basis.heading(), "Wait Class"],
        numeric: &[false, true, true, true, true, false],
        rows: rows
            .into_iter()
            .map(|r| {
                vec![
                    r.name,
                    r.waits.map_or(String::new(), count),
                    number(r.time_us as f64 / 1e6, 2),
                    r.avg_ms.map_or(String::new(), |ms| number(ms, 3)),
                    optional(r.share_pct, 1),
                    r.wait_class,
                ]
            })
            .collect(),
    }
    .write(out);
    if basis == ShareBasis::WaitTime {
        note(out, "DB time is not measured: shares are of the non-idle foreground wait time.");
    }
}

fn background_events(out: &mut String, i: &Interval) {
    h2(out, "Background Wait Events");
    let events = i.background_events();
    if events.is_empty() {
        note(out, "No background waits in this interval.");
        return;
    }
    let bg_elapsed = i.time_model_us("background elapsed time").filter(|&us| us > 0);
    Table {
        headings: &["Event", "Waits", "Total Wait Time (s)", "Avg wait (ms)", "Waits /txn", "% bg time"],
        numeric: &[false, true, true, true, true, true],
        rows: events
            .into_iter()
            .map(|(name, e)| {
                vec![
                    name.to_string(),
                    count(e.waits),
                    number(e.time_us as f64 / 1e6, 2),
                    fmt_ms(e.avg_ms()),
                    optional(i.per_transaction(e.waits as f64), 2),
                    optional(bg_elapsed.map(|bg| 100.0 * e.time_us as f64 / bg as f64), 1),
                ]
            })
            .collect(),
    }
    .write(out);
}

fn commit_response(out: &mut String, i: &Interval) {
    h2(out, "Commit Response Time by Mode");
    let rows: Vec<Vec<String>> = i
        .commit_response
        .iter()
        .filter(|(_, e)| e.waits > 0)
        .map(|(mode, e)| {
            vec![mode.clone(), count(e.waits), number(e.time_us as f64 / 1e6, 2), fmt_ms(e.avg_ms())]
        })
        .collect();
    if rows.is_empty() {
        note(out, "No commits timed in this interval.");
        return;
    }
    Table {
        headings: &["Commit Mode", "Commits", "Time(s)", "Avg (ms)"],
        numeric: &[false, true, true, true],
        rows,
    }
    .write(out);
}

fn histograms(out: &mut String, i: &Interval) {
    h2(out, "Wait Event Histogram");
    note(out, "Percent of waits per power-of-two bucket (binary units: 1ms = 1024us, 1s = 1024ms).");
    let mut any = false;
    for (name, e) in &i.events {
        let span = histogram_span(e);
        if span.is_empty() {
            continue;
        }
        any = true;
        let _ =
            writeln!(out, "<h3>{} ({} waits, {})</h3>", escape(name), count(e.waits), escape(&e.wait_class));
        histogram_chart(out, name, e, &span);
    }
    if !any {
        note(out, "No waits in this interval.");
    }
}

/// A bar chart of one event's histogram: percent of waits per bucket.
fn histogram_chart(out: &mut String, name: &str, e: &EventDelta, span: &[(usize, f64)]) {
    let (left, top, plot_h, bottom) = (40.0, 16.0, 120.0, 34.0);
    let slot = if span.len() > 16 { 26.0 } else { 44.0 };
    let plot_w = slot * span.len() as f64;
    let (width, height) = (left + plot_w + 10.0, top + plot_h + bottom);
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"{}\">",
        escape(&format!("histogram of {name}"))
    );
    for pct in [0.0, 25.0, 50.0, 75.0, 100.0] {
        let y = top + plot_h * (1.0 - pct / 100.0);
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#dddddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{pct:.0}%</text>",
            left + plot_w,
            left - 4.0,
            y + 3.0
        );
    }
    for (n, &(bucket, pct)) in span.iter().enumerate() {
        let x = left + slot * n as f64;
        let h = plot_h * pct / 100.0;
        let label = bucket_label(bucket);
        let waits = e.histogram[bucket];
        let _ = writeln!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{BAR}\"><title>{}</title></rect>",
            x + 3.0,
            top + plot_h - h,
            slot - 6.0,
            escape(&format!("{label}: {} waits ({}%)", count(waits), number(pct, 1)))
        );
        if span.len() <= 16 && pct > 0.0 {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                x + slot / 2.0,
                top + plot_h - h - 3.0,
                number(pct, 1)
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x + slot / 2.0,
            top + plot_h + 14.0,
            escape(&label)
        );
    }
    let _ = writeln!(
        out,
        "<line x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#000000\"/>",
        top + plot_h,
        left + plot_w,
        top + plot_h
    );
    out.push_str("</svg>\n");
}

fn over_snapshots(out: &mut String, steps: &[Interval]) {
    h2(out, "Events over Snapshots");
    if steps.len() < 2 {
        note(out, "This chart needs more than two snapshots in the range.");
        return;
    }
    note(out, "Commits per second (left axis) and average log file sync in ms (right axis) in each interval between consecutive snapshots.");
    let commits: Vec<f64> = steps.iter().map(|s| s.per_second(s.statistic("user commits") as f64)).collect();
    let sync: Vec<f64> =
        steps.iter().map(|s| s.event("log file sync").and_then(EventDelta::avg_ms).unwrap_or(0.0)).collect();
    let (left, right, top, plot_w, plot_h, bottom) = (60.0, 60.0, 24.0, 560.0, 180.0, 40.0);
    let (width, height) = (left + plot_w + right, top + plot_h + bottom);
    let axis_max = |values: &[f64]| nice_ceiling(values.iter().copied().fold(0.0, f64::max));
    let (commits_max, sync_max) = (axis_max(&commits), axis_max(&sync));
    let x_of = |n: usize| left + plot_w * n as f64 / (steps.len() - 1) as f64;
    let y_of = |v: f64, max: f64| top + plot_h * (1.0 - v / max);
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"commits per second and average log file sync per interval\">"
    );
    for k in 0..=4 {
        let f = k as f64 / 4.0;
        let y = top + plot_h * (1.0 - f);
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#dddddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"{COMMITS}\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" fill=\"{SYNC}\">{}</text>",
            left + plot_w,
            left - 4.0,
            y + 3.0,
            number(commits_max * f, 0),
            left + plot_w + 4.0,
            y + 3.0,
            number(sync_max * f, 3)
        );
    }
    for (n, step) in steps.iter().enumerate() {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}-{}</text>",
            x_of(n),
            top + plot_h + 14.0,
            step.begin_id,
            step.end_id
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">snapshot interval</text>",
        left + plot_w / 2.0,
        top + plot_h + 30.0
    );
    for (values, max, colour, label) in
        [(&commits, commits_max, COMMITS, "commits/s"), (&sync, sync_max, SYNC, "avg log file sync (ms)")]
    {
        let points: Vec<String> =
            values.iter().enumerate().map(|(n, &v)| format!("{:.1},{:.1}", x_of(n), y_of(v, max))).collect();
        let _ = writeln!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"/>",
            points.join(" ")
        );
        for (n, &v) in values.iter().enumerate() {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"><title>{}</title></circle>",
                x_of(n),
                y_of(v, max),
                escape(&format!("{label} in {}-{}: {}", steps[n].begin_id, steps[n].end_id, number(v, 3)))
            );
        }
    }
    let _ = writeln!(
        out,
        "<text x=\"{left}\" y=\"14\" fill=\"{COMMITS}\">commits/s</text><text x=\"{:.1}\" y=\"14\" text-anchor=\"end\" fill=\"{SYNC}\">avg log file sync (ms)</text>",
        left + plot_w
    );
    out.push_str("</svg>\n");
}

/// An axis maximum: 1, 2 or 5 times a power of ten, at or above `v` (1 for nothing).
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|&c| c >= v).unwrap_or(10.0 * magnitude)
}

fn time_model(out: &mut String, i: &Interval) {
    h2(out, "Time Model Statistics");
    let rows = i.time_model_rows();
    if rows.is_empty() {
        note(out, "The time model is not measured in these snapshots.");
        return;
    }
    Table {
        headings: &["Statistic Name", "Time (s)", "% of DB Time"],
        numeric: &[false, true, true],
        rows: rows
            .into_iter()
            .map(|(name, us, pct)| {
                vec![
                    name.to_string(),
                    number(us as f64 / 1e6, 2),
                    pct.map_or(String::new(), |p| number(p, 1)),
                ]
            })
            .collect(),
    }
    .write(out);
}

fn sql_sections(out: &mut String, i: &Interval) {
    for (title, table) in sql_tables(i, |t| sql_line(t, SQL_TEXT_CHARS)) {
        h2(out, title);
        let rows = table.rows.len();
        if rows > 0 {
            let numeric: Vec<bool> = table.headings.iter().map(|h| *h != "SQL Text").collect();
            Table { headings: &table.headings, numeric: &numeric, rows: table.rows }.write(out);
        }
        if let Some(text) = sql_note(i, rows) {
            note(out, &text);
        }
    }
}

fn unit_of_work(out: &mut String, i: &Interval) {
    h2(out, "Unit of Work (seed 000)");
    let u = i.unit_of_work();
    Table {
        headings: &["L (commits/s)", "CPUt (ms)", "Wt (ms)", "Rt (ms)"],
        numeric: &[true, true, true, true],
        rows: vec![vec![
            number(u.commits_per_second, 2),
            optional(u.cpu_ms_per_commit, 3),
            optional(u.wait_ms_per_commit, 3),
            optional(u.response_ms_per_commit, 3),
        ]],
    }
    .write(out);
    let cpu = if u.cpu_includes_background { "DB CPU + background cpu time" } else { "DB CPU" };
    let mut text = format!(
        "A commit is the unit of work. CPUt: {cpu} per commit (the service time); Wt: non-idle foreground wait \
         time per commit (the queue time); Rt = CPUt + Wt."
    );
    if u.cpu_ms_per_commit.is_none() {
        text.push_str(" CPUt and Rt need DB CPU, which these snapshots do not measure.");
    }
    note(out, &text);
}

fn activity(out: &mut String, i: &Interval) {
    h2(out, "Instance Activity Stats");
    Table {
        headings: &["Statistic", "Total", "per Second", "per Trans"],
        numeric: &[false, true, true, true],
        rows: i
            .statistics
            .iter()
            .map(|(name, &v)| {
                vec![
                    name.clone(),
                    count(v),
                    number(i.per_second(v as f64), 1),
                    optional(i.per_transaction(v as f64), 1),
                ]
            })
            .collect(),
    }
    .write(out);
}

fn findings(out: &mut String, i: &Interval) {
    h2(out, "Findings");
    let findings = i.findings();
    if findings.is_empty() {
        note(
            out,
            "No findings: none of the checked signatures (checkpoints failed or incomplete, log file sync \
             dominating, log file sync far above log file parallel write, log buffer space, hard parses, few \
             rows per fetch) is present.",
        );
        return;
    }
    out.push_str("<ol class=\"findings\">\n");
    for f in findings {
        let _ = writeln!(
            out,
            "<li><b>{}</b>: {}.<br>{}.</li>",
            escape(f.title),
            escape(&f.evidence),
            escape(&f.advice)
        );
    }
    out.push_str("</ol>\n");
}

#[cfg(test)]
mod tests {
    use super::super::interval::tests::{crafted, snap, sync_and_write};
    use super::super::text::REPORT_SECTIONS;
    use super::*;

    /// Checks that every element is closed in order (void and self-closed ones aside) and
    /// that no raw `<`, `>` or `&` appears outside markup and entities: what broken
    /// escaping or a forgotten closing tag would produce.
    pub(crate) fn assert_well_formed(html: &str) {
        const VOID: [&str; 3] = ["meta", "br", "!doctype"];
        let mut open: Vec<String> = Vec::new();
        let mut rest = html;
        while let Some(start) = rest.find(['<', '>', '&']) {
            let at = &rest[start..];
            assert!(
                !at.starts_with('>'),
                "a raw '>' outside a tag before {:?}",
                at.chars().take(40).collect::<String>()
            );
            if let Some(after) = at.strip_prefix('&') {
                let entity_ok = after.find(';').is_some_and(|end| {
                    let name = &after[..end];
                    end < 7 && !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '#')
                });
                assert!(entity_ok, "a raw '&' before {:?}", after.chars().take(20).collect::<String>());
                rest = after;
                continue;
            }
            let end = at.find('>').expect("an unclosed tag");
            let tag = &at[1..end];
            assert!(!tag.contains('<'), "a '<' inside a tag: {tag:?}");
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in {tag:?}");
            let name: String =
                tag.trim_start_matches('/').chars().take_while(|c| !c.is_whitespace() && *c != '/').collect();
            let name = name.to_ascii_lowercase();
            if let Some(closing) = tag.strip_prefix('/') {
                let closing = closing.trim().to_ascii_lowercase();
                assert_eq!(
                    open.pop().as_deref(),
                    Some(closing.as_str()),
                    "</{closing}> closes the wrong element"
                );
            } else if !tag.ends_with('/') && !VOID.contains(&name.as_str()) {
                open.push(name);
            }
            rest = &at[end + 1..];
        }
        assert!(open.is_empty(), "elements left open: {open:?}");
    }

    #[test]
    fn escaping_covers_markup_characters() {
        assert_eq!(escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn the_html_report_has_every_section_charts_and_escaped_names() {
        let (b, mut e) = sync_and_write(4_000, 1_000);
        // An event whose name needs escaping.
        let mut histogram = vec![0; 32];
        histogram[5] = 3;
        let odd = crate::awr::EventSample {
            wait_class: "Other".into(),
            background: false,
            waits: 3,
            time_us: 60,
            max_us: None,
            histogram,
            in_progress_us: 0,
        };
        e.sample.events.insert("<script>alert('x')</script> & co".into(), odd);
        let html = report_html(&[b, e]).expect("report");
        assert_well_formed(&html);
        for section in REPORT_SECTIONS {
            assert!(html.contains(&format!(">{}</h2>", escape(section))), "missing {section}");
        }
        assert!(!html.contains("<script>"), "an event name was not escaped");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co"));
        // One bar chart per event that waited: log file sync, log file parallel write and the odd one.
        assert_eq!(html.matches("<svg ").count(), 3);
        assert!(html.contains("This chart needs more than two snapshots"));
        assert!(html.contains(
            "<b>log file sync far above log file parallel write</b>: avg log file sync 4.000 ms is 4.0x"
        ));
        // Self-contained: the only URLs are the SVG namespace.
        assert_eq!(
            html.matches("http").count(),
            html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
    }

    #[test]
    fn three_snapshots_add_a_line_chart_of_commits_and_log_file_sync() {
        let stats = |commits: u64| [("user commits", commits)];
        let sync = |waits: u64, us: u64| [("log file sync", "Commit", waits, us, false)];
        let range = [
            snap(1, crafted(0, &stats(0), &sync(0, 0))),
            snap(2, crafted(10, &stats(1_000), &sync(1_000, 2_000_000))),
            snap(3, crafted(20, &stats(3_000), &sync(3_000, 4_000_000))),
        ];
        let html = report_html(&range).expect("report");
        assert_well_formed(&html);
        assert!(html.contains(">Events over Snapshots</h2>"));
        assert_eq!(html.matches("<polyline ").count(), 2);
        // 100 then 200 commits/s; log file sync 2 ms then 1 ms.
        assert!(html.contains("<title>commits/s in 1-2: 100.000</title>"), "{html}");
        assert!(html.contains("<title>commits/s in 2-3: 200.000</title>"));
        assert!(html.contains("<title>avg log file sync (ms) in 1-2: 2.000</title>"));
        assert!(html.contains("<title>avg log file sync (ms) in 2-3: 1.000</title>"));
        // The header covers the whole range.
        assert!(html.contains("snapshots 1 to 3"));
    }

    #[test]
    fn axis_ceilings_are_round() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(1.0), 1.0);
        assert_eq!(nice_ceiling(1.3), 2.0);
        assert_eq!(nice_ceiling(420.0), 500.0);
        assert_eq!(nice_ceiling(0.07), 0.1);
    }
}
