//! A chart as the report holds it, and the series of one figure per variant over the
//! positions of an axis, which each view's charts draw (`closed`: against client threads;
//! `rate`: against load points).

use super::svg::Series;
use crate::results::{Cell, Results};

/// A named SVG chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// File stem (`throughput` → charts/throughput.svg).
    pub name: &'static str,
    /// The SVG document.
    pub svg: String,
}

/// One series per variant (the baselines skipped when asked: `Results::is_baseline`), a value and an optional
/// interval at each x position; `at` finds a variant's cell at a position.
pub fn series_over<'r, X>(
    r: &'r Results,
    xs: &[X],
    at: impl Fn(&str, &X) -> Option<&'r Cell>,
    skip_baseline: bool,
    value: impl Fn(&Cell) -> Option<f64>,
    ci: impl Fn(&Cell) -> Option<(f64, f64)>,
) -> Vec<Series> {
    r.variants
        .iter()
        .enumerate()
        .filter(|(_, v)| !(skip_baseline && r.is_baseline(&v.name)))
        .map(|(i, v)| Series {
            name: v.name.clone(),
            values: xs.iter().map(|x| at(&v.name, x).and_then(&value)).collect(),
            ci: xs.iter().map(|x| at(&v.name, x).and_then(&ci)).collect(),
            color: i,
        })
        .collect()
}
