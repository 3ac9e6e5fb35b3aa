//! One self-contained HTML page for a bench run: the machine's facts and the targets, then
//! each scenario's findings, tables and charts (SVG inline, each linking its PNG), and
//! links to the JSON and CSV beside it. With several targets a scenario shows its tables
//! with every target's rows together, the headline comparison and its chart, then each
//! target's charts. No script, no external style or font.

use std::collections::BTreeMap;
use std::fmt::Write;

use db::awr::html::escape;

use super::output::{BenchReport, Table};

fn table(t: &Table) -> String {
    let mut s = format!("<table>\n<caption>{}</caption>\n<thead><tr>", escape(&t.title));
    for c in &t.columns {
        let _ = write!(s, "<th>{}</th>", escape(c));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for r in &t.rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", escape(c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n");
    for n in &t.notes {
        let _ = writeln!(s, "<p class=\"note\">{}</p>", escape(n));
    }
    s
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1000px;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:1em 0}caption{text-align:left;font-weight:bold;padding:.3em 0}\
th,td{border:1px solid #ccc;padding:.2em .6em}td{text-align:right}td:first-child{text-align:left}\
th{background:#f3f3f3}.note{color:#555;font-size:.9em;margin:.2em 0}\
.facts td{text-align:left}figure{margin:1em 0}figure svg{max-width:100%;height:auto}\
figcaption{font-size:.9em}";

/// The chart `file` inline (its SVG from `svgs`), with links to its PNG and SVG.
fn figure(file: &str, svgs: &BTreeMap<String, String>) -> String {
    let svg = svgs.get(file).map(String::as_str).unwrap_or("");
    let svg = match svg.find("<svg") {
        Some(k) => &svg[k..],
        None => svg,
    };
    format!(
        "<figure>\n{svg}\n<figcaption><a href=\"{f}.png\">{f}.png</a> · <a href=\"{f}.svg\">{f}.svg</a></figcaption>\n</figure>\n",
        f = escape(file)
    )
}

fn findings(s: &mut String, items: &[String]) {
    if !items.is_empty() {
        s.push_str("<ul class=\"findings\">\n");
        for f in items {
            let _ = writeln!(s, "<li>{}</li>", escape(f));
        }
        s.push_str("</ul>\n");
    }
}

/// The page; `svgs` holds every chart's SVG by file name.
pub fn page(
    report: &BenchReport,
    svgs: &BTreeMap<String, String>,
    json_file: &str,
    csv_file: &str,
) -> String {
    let m = report.machine;
    let first = match report.targets.first() {
        Some(t) => t,
        None => {
            return "<!DOCTYPE html>\n<html lang=\"en\"><body><p>No target ran.</p></body></html>\n".into()
        }
    };
    let names: Vec<&str> = first.scenarios.iter().map(|s| s.name).collect();
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>redodb bench: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&names.join(", "))
    );
    let _ =
        writeln!(s, "<h1>redodb {} bench: {}</h1>", escape(report.redodb_version), escape(&names.join(", ")));
    s.push_str("<table class=\"facts\" id=\"machine\">\n<caption>Machine and targets</caption>\n");
    let load = m.load_average.map(|[a, b, c]| format!("{a:.2} {b:.2} {c:.2}")).unwrap_or_else(|| "-".into());
    let mut facts: Vec<(String, String)> = vec![("redodb version".into(), report.redodb_version.to_string())];
    for t in report.targets {
        let name =
            if report.targets.len() == 1 { "target".to_string() } else { format!("target: {}", t.label) };
        facts.push((name, t.description.clone()));
    }
    facts.extend([
        ("CPUs".into(), format!("{} ({})", m.cpus, m.arch)),
        ("kernel".into(), m.kernel.clone()),
        ("load average at the start".into(), load),
        ("directory".into(), m.directory.clone()),
        ("file system".into(), format!("{} on {}, mounted at {}", m.fs_type, m.fs_device, m.mount_point)),
        (
            "raw sync (this run)".into(),
            format!(
                "4 KiB write+sync with {}: p50 {:.1} us, mean {:.1} us, p99 {:.1} us",
                report.raw_sync.method,
                report.raw_sync.p50_us,
                report.raw_sync.mean_us,
                report.raw_sync.p99_us
            ),
        ),
        (
            "run".into(),
            format!("{:.1} s{}", report.total_seconds, if report.quick { " (--quick)" } else { "" }),
        ),
    ]);
    for (k, v) in facts {
        let _ = writeln!(s, "<tr><th>{}</th><td>{}</td></tr>", escape(&k), escape(&v));
    }
    s.push_str("</table>\n");
    let _ = writeln!(
        s,
        "<p>Every measurement: <a href=\"{}\">{}</a> (with every server-side difference), <a href=\"{}\">{}</a>.</p>",
        escape(json_file),
        escape(json_file),
        escape(csv_file),
        escape(csv_file)
    );
    for (i, sc) in first.scenarios.iter().enumerate() {
        let _ = writeln!(s, "<section id=\"{}\">", escape(sc.name));
        let _ = writeln!(s, "<h2>{} ({}): {}</h2>", escape(sc.name), escape(sc.seed), escape(sc.title));
        let comparison = report.comparisons.get(i).filter(|c| c.scenario == sc.name);
        for t in report.targets {
            if let Some(on) = t.scenarios.get(i).and_then(|r| r.ran_on.as_ref()) {
                let _ =
                    writeln!(s, "<p class=\"note\">On {}: ran on the {}.</p>", escape(&t.label), escape(on));
            }
        }
        match comparison {
            Some(c) => {
                let all: Vec<String> = report
                    .targets
                    .iter()
                    .flat_map(|t| {
                        t.scenarios
                            .get(i)
                            .into_iter()
                            .flat_map(move |r| r.findings.iter().map(move |f| format!("[{}] {f}", t.label)))
                    })
                    .collect();
                findings(&mut s, &all);
                s.push_str(&table(&c.headline));
                if let Some(file) = &c.chart_file {
                    s.push_str(&figure(file, svgs));
                }
                for t in &c.tables {
                    s.push_str(&table(t));
                }
                for t in report.targets {
                    for file in t.scenarios.get(i).map(|r| r.chart_files.as_slice()).unwrap_or(&[]) {
                        s.push_str(&figure(file, svgs));
                    }
                }
            }
            None => {
                findings(&mut s, &sc.findings);
                for t in &sc.tables {
                    s.push_str(&table(t));
                }
                for file in &sc.chart_files {
                    s.push_str(&figure(file, svgs));
                }
            }
        }
        s.push_str("</section>\n");
    }
    s.push_str("</body>\n</html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn tables_become_html_rows() {
        let mut t = Table::new("T <1>", &["a", "b"]);
        t.row(vec!["x".into(), "1".into()]);
        t.note("n");
        let h = table(&t);
        assert!(h.contains("<caption>T &lt;1&gt;</caption>"));
        assert!(h.contains("<tr><td>x</td><td>1</td></tr>"));
        assert!(h.contains("<p class=\"note\">n</p>"));
    }
}
