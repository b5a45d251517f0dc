//! Renderers: results in, text or bytes out. Each is pure and snapshot-tested; `write_all`
//! puts every artefact of a run into its directory.

pub mod agents;
pub mod analysis;
pub mod charts;
pub mod compare;
pub mod csv;
pub mod html;
pub mod interval;
pub mod rate;
pub mod statements;
pub mod svg;
pub mod table;
pub mod view;
pub mod words;

use crate::results::Results;
use anyhow::{Context, Result};
use std::path::Path;

/// Whether a variant is compared with nothing (its own baseline; in results written before
/// `baseline` was recorded, the first variant).
pub fn is_baseline(r: &Results, variant: &str) -> bool {
    r.variants
        .iter()
        .enumerate()
        .find(|(_, v)| v.name == variant)
        .is_some_and(|(i, v)| v.baseline == v.name || (v.baseline.is_empty() && i == 0))
}

/// Write report.html, results.csv and charts/*.svg into `dir`.
pub fn write_all(dir: &Path, r: &Results) -> Result<()> {
    let write = |name: &str, body: String| {
        let p = dir.join(name);
        std::fs::write(&p, body).with_context(|| format!("writing {}", p.display()))
    };
    write("report.html", html::render(r))?;
    write("results.csv", csv::render(r))?;
    write_charts(&dir.join("charts"), r)
}

/// Write each chart as its own SVG file.
pub fn write_charts(dir: &Path, r: &Results) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for c in charts::all(r) {
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
