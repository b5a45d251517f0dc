//! Renderers: results in, text or bytes out. Each is pure and snapshot-tested. A run is shown
//! through its view, chosen here once ([`mod@view`]: [`view::closed`], [`view::rate`], [`view::capacity`] or
//! [`view::live`]) and handed to the table,
//! the page and the words; `write_all` puts every artefact of a run into its directory.

pub mod agents;
pub mod analysis;
pub mod csv;
pub mod interval;
pub mod page;
pub mod statements;
pub mod table;
pub mod view;
pub mod words;

use crate::client::mode::QueryMode;
use crate::results::Results;
use anyhow::{Context, Result};
use std::path::Path;
use view::{View, capacity, closed, live, rate};

/// The view of a run, chosen once: production's own traffic (`dbtax live`: `live`), capacity
/// at an objective (`--slo`: `capacity`), at a rate when it ran open loop (`rate`), else
/// closed loop (`closed`). Every renderer is handed it.
pub fn view(r: &Results) -> Box<dyn View + '_> {
    if let Some(l) = &r.live {
        Box::new(live::LiveView(l))
    } else if !r.capacity.is_empty() {
        Box::new(capacity::CapacityView(r))
    } else if r.rate.is_some() {
        Box::new(rate::RateView(r))
    } else {
        Box::new(closed::ClosedLoop(r))
    }
}

/// The terminal table of a run.
pub fn table(r: &Results) -> String {
    table::render(r, &*view(r))
}

/// The report page of a run.
pub fn html(r: &Results) -> String {
    page::html::render(r, &*view(r))
}

/// The answer in words, one sentence per variant, and what the reader must know to take them.
pub fn headlines(r: &Results) -> Vec<String> {
    words::headlines(r, &*view(r))
}

/// Every chart of a run's report.
pub fn charts(r: &Results) -> Vec<page::charts::Chart> {
    view(r).charts()
}

/// Write report.html, results.csv and charts/*.svg into `dir`.
pub fn write_all(dir: &Path, r: &Results) -> Result<()> {
    let write = |name: &str, body: String| {
        let p = dir.join(name);
        std::fs::write(&p, body).with_context(|| format!("writing {}", p.display()))
    };
    write("report.html", html(r))?;
    write("results.csv", csv::render(r))?;
    write_charts(&dir.join("charts"), r)
}

/// Write the page that sets two runs side by side at `path` (the one door for it: `dbtax
/// compare --html` and a two-server run both come here).
pub fn write_compare(path: &Path, a: &Results, b: &Results) -> Result<()> {
    std::fs::write(path, page::compare::render_html(a, b))
        .with_context(|| format!("writing {}", path.display()))
}

/// Write each chart as its own SVG file.
pub fn write_charts(dir: &Path, r: &Results) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for c in charts(r) {
        let p = dir.join(format!("{}.svg", c.name));
        std::fs::write(&p, c.svg).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

/// Read a results.json, with a usage error when it is not one.
pub fn load(path: &Path) -> Result<Results> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::error::usage(format!("cannot read {}: {e}", path.display())))?;
    let r: Results = serde_json::from_str(&text).map_err(|e| {
        crate::error::usage(format!(
            "{} is not a dbtax results.json: {e}",
            path.display()
        ))
    })?;
    if r.schema != crate::results::SCHEMA {
        return Err(crate::error::usage(format!(
            "{} has schema '{}'; this dbtax reads '{}'",
            path.display(),
            r.schema,
            crate::results::SCHEMA
        )));
    }
    Ok(r)
}

/// The workload as a title says it: its kind, and how its statements were sent
/// ("point-select, prepared statements"); a replay sends them as its log recorded them.
pub fn workload_title(r: &Results) -> String {
    let kind = r
        .workload
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or("?");
    if kind == "replay" {
        return kind.to_string();
    }
    if kind == "production" {
        return "production's own traffic".into();
    }
    // Results from before the choice existed ran prepared.
    let mode = r
        .workload
        .get("protocol")
        .and_then(|p| p.as_str())
        .and_then(|p| QueryMode::parse(p).ok())
        .unwrap_or(QueryMode::Prepared);
    format!("{kind}, {}", mode.words())
}
