//! `--compare` and `--with-postgres`: the same scenario on several targets, side by side.
//! For each scenario, each of its tables with every target's rows together (a `Target`
//! column after the first), and its headline figure (commits/s, avg COMMIT us, rows/s,
//! elapsed ms) with the ratio of each target to the first.

use super::charts::{Chart, Kind, Series};
use super::output::{Comparison, ComparisonRow, ScenarioReport, Table};
use super::scenarios::{chart, Scenario};
use super::target::Flavour;
use crate::common::thousands;

/// The comparison of `reports` (one per target, the same scenario) on targets `labels`
/// of kinds `flavours`.
pub fn compare(
    scenario: Scenario,
    reports: &[&ScenarioReport],
    labels: &[String],
    flavours: &[Flavour],
) -> Comparison {
    assert_eq!(reports.len(), labels.len(), "a report per target");
    let headline = scenario.headline();
    let mut configurations: Vec<String> = Vec::new();
    for r in reports {
        for m in &r.measurements {
            let c = scenario.configuration(&m.figures);
            if !configurations.contains(&c) {
                configurations.push(c);
            }
        }
    }
    let mut rows = Vec::new();
    let mut cells = Vec::new();
    for c in &configurations {
        let measured: Vec<Option<&super::output::Measurement>> = reports
            .iter()
            .map(|r| r.measurements.iter().find(|m| &scenario.configuration(&m.figures) == c))
            .collect();
        let values: Vec<Option<f64>> = measured
            .iter()
            .map(|m| m.filter(|m| m.ran()).and_then(|m| (headline.value)(&m.figures)))
            .collect();
        let ratios: Vec<Option<f64>> = values
            .iter()
            .map(|v| match (v, values[0]) {
                (Some(v), Some(base)) if base > 0.0 => Some(v / base),
                _ => None,
            })
            .collect();
        let mut row = vec![c.clone()];
        for (m, v) in measured.iter().zip(&values) {
            row.push(match (m, v) {
                (Some(m), _) if !m.ran() => "n/a".into(),
                (_, Some(v)) => figure_text(headline.figure, *v),
                _ => "-".into(),
            });
        }
        for r in ratios.iter().skip(1) {
            row.push(r.map_or_else(|| "-".into(), |r| format!("{r:.2}x")));
        }
        cells.push(row);
        rows.push(ComparisonRow { configuration: c.clone(), values, ratios_to_first: ratios });
    }
    let mut columns: Vec<String> = vec!["Configuration".into()];
    columns.extend(labels.iter().cloned());
    columns.extend(labels.iter().skip(1).map(|l| format!("{l} / {}", labels[0])));
    let column_refs: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut table = Table::new(
        format!(
            "COMPARISON {}: {} ({} is better), ratios to {}",
            scenario.name(),
            headline.figure,
            if headline.higher_is_better { "higher" } else { "lower" },
            labels[0]
        ),
        &column_refs,
    );
    for row in cells {
        table.row(row);
    }
    table.note("n/a: the target cannot run the configuration (see its table); -: no figure");
    let in_process = flavours.iter().zip(reports).any(|(f, r)| *f == Flavour::Embedded && r.ran_on.is_none());
    if in_process && flavours.iter().any(|f| *f != Flavour::Embedded) {
        table.note(
            "embedded runs inside this process: its statements and commits pay no network round trip, a server's do; \
             for like with like, compare redodb's server (redodb serve, --target postgres://...) with the other server",
        );
    }
    let tables = (0..reports.iter().map(|r| r.tables.len()).max().unwrap_or(0))
        .map(|j| {
            let each: Vec<(&String, &Table)> =
                labels.iter().zip(reports).filter_map(|(l, r)| r.tables.get(j).map(|t| (l, t))).collect();
            side_by_side(&each)
        })
        .collect();
    let chart = comparison_chart(scenario, headline.figure, &rows, labels);
    Comparison {
        scenario: scenario.name(),
        targets: labels.to_vec(),
        figure: headline.figure,
        higher_is_better: headline.higher_is_better,
        rows,
        headline: table,
        tables,
        chart_file: Some(chart.file.clone()),
        chart: Some(chart),
    }
}

/// A figure as its table shows it: rates with thousands separators, times with a decimal.
fn figure_text(figure: &str, v: f64) -> String {
    if figure.ends_with("/s") {
        thousands(v)
    } else {
        format!("{v:.1}")
    }
}

/// One table of every target: a Target column after the first; the targets' rows
/// interleaved when they have the same rows (the same configurations), else one target's
/// after the other's.
fn side_by_side(tables: &[(&String, &Table)]) -> Table {
    let (_, first) = tables[0];
    let mut columns: Vec<&str> = vec![first.columns[0].as_str(), "Target"];
    columns.extend(first.columns.iter().skip(1).map(String::as_str));
    let mut merged = Table::new(first.title.clone(), &columns);
    let width = first.columns.len();
    let with_target = |label: &String, row: &Vec<String>| {
        let mut cells: Vec<String> = row.iter().take(width).cloned().collect();
        cells.resize(width, String::new());
        cells.insert(1, label.clone());
        cells
    };
    let same_rows = tables.iter().all(|(_, t)| {
        t.rows.len() == first.rows.len()
            && t.rows.iter().zip(&first.rows).all(|(a, b)| a.first() == b.first())
    });
    if same_rows {
        for i in 0..first.rows.len() {
            for (label, t) in tables {
                merged.row(with_target(label, &t.rows[i]));
            }
        }
    } else {
        for (label, t) in tables {
            for row in &t.rows {
                merged.row(with_target(label, row));
            }
        }
    }
    for (label, t) in tables {
        for note in &t.notes {
            let note = if note.starts_with("n/a:") { format!("{label}: {note}") } else { note.clone() };
            if !merged.notes.contains(&note) {
                merged.note(note);
            }
        }
    }
    merged
}

fn comparison_chart(scenario: Scenario, figure: &str, rows: &[ComparisonRow], labels: &[String]) -> Chart {
    chart(
        &format!("compare-{}", scenario.name()),
        &format!("{}: {figure} on each target", scenario.name()),
        "configuration",
        figure,
        Kind::Bars {
            categories: rows.iter().map(|r| r.configuration.clone()).collect(),
            series: labels
                .iter()
                .enumerate()
                .map(|(t, l)| {
                    Series::new(l.clone(), rows.iter().map(|r| r.values[t].unwrap_or(f64::NAN)).collect())
                })
                .collect(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_of_the_same_rows_interleave_by_target() {
        let mut a = Table::new("T", &["Setting", "Commit/s"]);
        a.row(vec!["WAIT".into(), "10".into()]);
        a.row(vec!["NOWAIT".into(), "20".into()]);
        let mut b = Table::new("T", &["Setting", "Commit/s"]);
        b.row(vec!["WAIT".into(), "1".into()]);
        b.row(vec!["NOWAIT".into(), "n/a".into()]);
        b.note("n/a: no such mode");
        let (x, y) = ("x".to_string(), "y".to_string());
        let t = side_by_side(&[(&x, &a), (&y, &b)]);
        assert_eq!(t.columns, ["Setting", "Target", "Commit/s"]);
        let firsts: Vec<(&str, &str)> = t.rows.iter().map(|r| (r[0].as_str(), r[1].as_str())).collect();
        assert_eq!(firsts, [("WAIT", "x"), ("WAIT", "y"), ("NOWAIT", "x"), ("NOWAIT", "y")]);
        assert_eq!(t.notes, ["y: n/a: no such mode"]);
    }

    #[test]
    fn figures_read_like_their_tables() {
        assert_eq!(figure_text("commits/s", 12345.6), "12,346");
        assert_eq!(figure_text("avg COMMIT us", 812.34), "812.3");
    }
}
