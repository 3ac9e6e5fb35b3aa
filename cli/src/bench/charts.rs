//! The scenarios' charts, drawn with plotters as SVG and PNG. Two kinds cover every
//! scenario: grouped bars (one group per configuration, one bar per series) and lines
//! (optionally on log axes). Every chart carries a caption with the machine's facts, the
//! raw sync latency measured in the same run and the redodb version.
//!
//! Text is laid out with DejaVu Sans, compiled into the binary (`cli/assets/`, with its
//! license), so no system font is needed. PNGs are drawn into an RGB buffer and encoded
//! with the `png` crate (lighter than plotters' `image`-based encoder).

use std::sync::Once;

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";
const WIDTH: u32 = 960;
const HEIGHT: u32 = 560;
/// Pixels below the plot for the caption.
const CAPTION_PX: u32 = 44;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// One named series.
#[derive(Clone, Debug)]
pub struct Series<T> {
    pub name: String,
    pub values: Vec<T>,
}

impl<T> Series<T> {
    pub fn new(name: impl Into<String>, values: Vec<T>) -> Series<T> {
        Series { name: name.into(), values }
    }
}

#[derive(Clone, Debug)]
pub enum Kind {
    /// One group of bars per category, one bar per series (values in category order).
    Bars { categories: Vec<String>, series: Vec<Series<f64>> },
    /// Lines through (x, y) points.
    Lines { series: Vec<Series<(f64, f64)>>, log_x: bool, log_y: bool },
}

#[derive(Clone, Debug)]
pub struct Chart {
    /// File name without extension.
    pub file: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub kind: Kind,
    /// A horizontal reference line (e.g. the raw disk's sync latency).
    pub reference: Option<(String, f64)>,
    /// The machine's facts, set for the whole run.
    pub caption: String,
}

impl Chart {
    /// Whether there is anything to draw: a target without a figure (PostgreSQL has no
    /// wait events) leaves a chart of nothing, which is dropped rather than drawn empty.
    pub fn has_data(&self) -> bool {
        match &self.kind {
            Kind::Bars { categories, series } => {
                !categories.is_empty() && series.iter().any(|s| s.values.iter().any(|v| v.is_finite()))
            }
            Kind::Lines { series, .. } => {
                series.iter().any(|s| s.values.iter().any(|(x, y)| x.is_finite() && y.is_finite()))
            }
        }
    }
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in: failing to read it is a build defect.
        plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans font does not load"));
    });
}

/// `12345.6` as `12.3k`, for axes and bar labels.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> Result<String> {
    register_font();
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(|e| anyhow!("drawing {}: {e:?}", chart.file))?;
    }
    Ok(text)
}

/// The chart as a PNG file's bytes.
pub fn png(chart: &Chart) -> Result<Vec<u8>> {
    register_font();
    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(|e| anyhow!("drawing {}: {e:?}", chart.file))?;
    }
    let mut out = Vec::new();
    let mut encoder = ::png::Encoder::new(&mut out, WIDTH, HEIGHT);
    encoder.set_color(::png::ColorType::Rgb);
    encoder.set_depth(::png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| anyhow!("encoding {}: {e}", chart.file))?;
    writer.write_image_data(&rgb).map_err(|e| anyhow!("encoding {}: {e}", chart.file))?;
    writer.finish().map_err(|e| anyhow!("encoding {}: {e}", chart.file))?;
    Ok(out)
}

fn err<E: std::fmt::Debug>(chart: &Chart) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow!("drawing {}: {e:?}", chart.file)
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<()> {
    root.fill(&WHITE).map_err(err(chart))?;
    let (plot, caption) = root.split_vertically(HEIGHT - CAPTION_PX);
    for (i, line) in chart.caption.lines().take(2).enumerate() {
        caption
            .draw(&Text::new(
                line.to_string(),
                (12, 6 + 18 * i as i32),
                (FAMILY, 13).into_font().color(&RGBColor(90, 90, 90)),
            ))
            .map_err(err(chart))?;
    }
    match &chart.kind {
        Kind::Bars { categories, series } => bars(&plot, chart, categories, series),
        Kind::Lines { series, log_x, log_y } => lines(&plot, chart, series, *log_x, *log_y),
    }
}

fn bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
    categories: &[String],
    series: &[Series<f64>],
) -> Result<()> {
    let n = categories.len().max(1);
    let top = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .chain(chart.reference.iter().map(|r| r.1))
        .filter(|v| v.is_finite())
        .fold(0f64, f64::max);
    let top = if top > 0.0 { top * 1.18 } else { 1.0 };
    let mut ctx = ChartBuilder::on(area)
        .caption(&chart.title, (FAMILY, 20))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top)
        .map_err(err(chart))?;
    ctx.configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .x_labels(0)
        .y_desc(&chart.y_label)
        .x_desc(&chart.x_label)
        .y_label_formatter(&|v| short(*v))
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14))
        .draw()
        .map_err(err(chart))?;
    let k = series.len().max(1) as f64;
    let group = 0.8;
    let width = group / k;
    for (si, s) in series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        let rects = s.values.iter().enumerate().filter(|(_, v)| v.is_finite()).map(move |(ci, v)| {
            let x0 = ci as f64 - group / 2.0 + si as f64 * width;
            Rectangle::new([(x0 + width * 0.05, 0.0), (x0 + width * 0.95, *v)], color.filled())
        });
        ctx.draw_series(rects)
            .map_err(err(chart))?
            .label(s.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        let labels = s.values.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(ci, v)| {
            let x = ci as f64 - group / 2.0 + (si as f64 + 0.5) * width;
            Text::new(
                short(*v),
                (x, *v),
                TextStyle::from((FAMILY, 12).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom)),
            )
        });
        ctx.draw_series(labels).map_err(err(chart))?;
    }
    if let Some((name, v)) = &chart.reference {
        ctx.draw_series(LineSeries::new([(-0.5, *v), (n as f64 - 0.5, *v)], BLACK.stroke_width(2)))
            .map_err(err(chart))?
            .label(name.clone())
            .legend(|(x, y)| PathElement::new([(x, y), (x + 12, y)], BLACK.stroke_width(2)));
    }
    // Category names under their groups.
    for (ci, name) in categories.iter().enumerate() {
        let (px, py) = ctx.backend_coord(&(ci as f64, 0.0));
        let style = TextStyle::from((FAMILY, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        area.draw(&Text::new(name.clone(), (px, py + 6), style)).map_err(err(chart))?;
    }
    legend(&mut ctx, SeriesLabelPosition::UpperRight, chart)?;
    Ok(())
}

/// The box naming the series (and the reference line), at `position`.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    ctx: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
    chart: &Chart,
) -> Result<()> {
    ctx.configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .label_font((FAMILY, 13))
        .draw()
        .map_err(err(chart))
}

/// The smallest and largest of `values` (finite, and positive on a log axis), widened
/// when they are equal.
fn bounds(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return (if log { 1.0 } else { 0.0 }, 10.0);
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else if lo == hi {
        (0.0, hi.max(1.0) * 1.2)
    } else {
        (lo.min(0.0), hi * 1.12)
    }
}

macro_rules! draw_lines {
    ($area:expr, $chart:expr, $series:expr, $x:expr, $y:expr) => {{
        let chart = $chart;
        let mut ctx = ChartBuilder::on($area)
            .caption(&chart.title, (FAMILY, 20))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d($x, $y)
            .map_err(err(chart))?;
        ctx.configure_mesh()
            .light_line_style(TRANSPARENT)
            .y_desc(&chart.y_label)
            .x_desc(&chart.x_label)
            .x_label_formatter(&|v| short(*v))
            .y_label_formatter(&|v| short(*v))
            .label_style((FAMILY, 13))
            .axis_desc_style((FAMILY, 14))
            .draw()
            .map_err(err(chart))?;
        for (si, s) in $series.iter().enumerate() {
            let color = COLORS[si % COLORS.len()];
            let points: Vec<(f64, f64)> =
                s.values.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
            ctx.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(err(chart))?
                .label(s.name.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 12, y)], color.stroke_width(2)));
            ctx.draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled()))).map_err(err(chart))?;
        }
        if let Some((name, v)) = &chart.reference {
            let xs: Vec<f64> = $series.iter().flat_map(|s| s.values.iter().map(|p| p.0)).collect();
            let (x0, x1) =
                xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(*x), b.max(*x)));
            if x0.is_finite() {
                ctx.draw_series(LineSeries::new([(x0, *v), (x1, *v)], BLACK.stroke_width(2)))
                    .map_err(err(chart))?
                    .label(name.clone())
                    .legend(|(x, y)| PathElement::new([(x, y), (x + 12, y)], BLACK.stroke_width(2)));
            }
        }
        legend(&mut ctx, SeriesLabelPosition::UpperLeft, chart)?;
        Ok(())
    }};
}

fn lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
    series: &[Series<(f64, f64)>],
    log_x: bool,
    log_y: bool,
) -> Result<()> {
    let (x0, x1) = bounds(series.iter().flat_map(|s| s.values.iter().map(|p| p.0)), log_x);
    let ys =
        series.iter().flat_map(|s| s.values.iter().map(|p| p.1)).chain(chart.reference.iter().map(|r| r.1));
    let (y0, y1) = bounds(ys, log_y);
    let (x0, x1) = if log_x { (x0, x1) } else { (x0.min(0.0), x1) };
    match (log_x, log_y) {
        (false, false) => draw_lines!(area, chart, series, x0..x1, y0..y1),
        (true, false) => draw_lines!(area, chart, series, (x0..x1).log_scale(), y0..y1),
        (false, true) => draw_lines!(area, chart, series, x0..x1, (y0..y1).log_scale()),
        (true, true) => draw_lines!(area, chart, series, (x0..x1).log_scale(), (y0..y1).log_scale()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(kind: Kind) -> Chart {
        Chart {
            file: "t".into(),
            title: "A chart".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            kind,
            reference: Some(("raw sync".into(), 50.0)),
            caption: "redodb test\nmachine".into(),
        }
    }

    #[test]
    fn bars_and_lines_draw_as_svg_and_png() {
        let bars = chart(Kind::Bars {
            categories: vec!["WAIT/IMMEDIATE".into(), "NOWAIT/BATCH".into()],
            series: vec![Series::new("io", vec![100.0, 2500.0]), Series::new("cpu", vec![90.0, f64::NAN])],
        });
        let lines = chart(Kind::Lines {
            series: vec![Series::new("commit", vec![(1024.0, 80.0), (1048576.0, 900.0), (16e6, 12000.0)])],
            log_x: true,
            log_y: true,
        });
        for c in [bars, lines] {
            let s = svg(&c).unwrap();
            assert!(s.starts_with("<svg"), "{}", &s[..40]);
            assert!(s.contains("A chart"));
            let p = png(&c).unwrap();
            assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
        }
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(12345.0), "12k");
        assert_eq!(short(1234.0), "1.2k");
        assert_eq!(short(2_500_000.0), "2.5M");
        assert_eq!(short(12.34), "12.3");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(40.0), "40");
    }
}
