//! SVG plots of the report (plotters' SVG backend; text is laid out with its built-in
//! approximate font metrics, so no system fonts are needed).

use plotters::prelude::*;
use std::path::Path;

/// One line of a plot: a name and its points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Axis scales.
#[derive(Clone, Copy)]
pub enum Scale {
    Linear,
    Log,
}

pub struct Plot<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x: Scale,
    pub y: Scale,
}

/// Draws `series` as lines with points into the SVG file `path`.
pub fn lines(
    path: &Path,
    plot: &Plot,
    series: &[Series],
) -> Result<(), Box<dyn std::error::Error>> {
    let pts = || series.iter().flat_map(|s| s.points.iter().copied());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in pts() {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        return Err("no points to plot".into());
    }
    let pad = |lo: f64, hi: f64, s: Scale| match s {
        Scale::Linear => {
            let m = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-12);
            ((lo - m).max(if lo >= 0.0 { 0.0 } else { f64::MIN }), hi + m)
        }
        Scale::Log => (lo / 1.5, hi * 1.5),
    };
    let (x0, x1) = pad(x0, x1, plot.x);
    let (y0, y1) = pad(y0, y1, plot.y);
    let root = SVGBackend::new(path, (820, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(plot.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    // The four scale combinations have different coordinate types.
    macro_rules! draw {
        ($xr:expr, $yr:expr) => {{
            let mut chart = builder.build_cartesian_2d($xr, $yr)?;
            chart
                .configure_mesh()
                .x_desc(plot.x_label)
                .y_desc(plot.y_label)
                .draw()?;
            for (i, s) in series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        color.stroke_width(2),
                    ))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                    });
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()?;
        }};
    }
    match (plot.x, plot.y) {
        (Scale::Linear, Scale::Linear) => draw!(x0..x1, y0..y1),
        (Scale::Linear, Scale::Log) => draw!(x0..x1, (y0..y1).log_scale()),
        (Scale::Log, Scale::Linear) => draw!((x0..x1).log_scale(), y0..y1),
        (Scale::Log, Scale::Log) => draw!((x0..x1).log_scale(), (y0..y1).log_scale()),
    }
    root.present()?;
    Ok(())
}
