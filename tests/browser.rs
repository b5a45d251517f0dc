//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `make test`) opens the page from a file with networking off, and a probe script appended to
//! a copy of the page measures what the browser laid out: every chart must have a size, its
//! lines a length and its points a box.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in ["/usr/bin", "/usr/local/bin", "/snap/bin"] {
            let p = Path::new(dir).join(name);
            if p.exists() {
                return p;
            }
        }
    }
    panic!("Chromium is not installed: `make test` installs it (apt-get install chromium)");
}

const PROBE: &str = r#"<script>
const figs = [...document.querySelectorAll('figure svg')].map(svg => {
  const r = svg.getBoundingClientRect();
  const lines = [...svg.querySelectorAll('polyline')].map(p => p.getTotalLength());
  const points = [...svg.querySelectorAll('circle, rect.bar')].filter(c => { const b = c.getBBox(); return b.width > 0 && b.height > 0; }).length;
  const texts = [...svg.querySelectorAll('text')].filter(t => t.getComputedTextLength() > 0).length;
  const laid = sel => [...svg.querySelectorAll(sel)].filter(l => { const b = l.getBBox(); return b.width > 0 || b.height > 0; }).length;
  return {w: r.width, h: r.height, lines, points, texts, objective: laid('line.objective'), capacity: laid('line.capacity')};
});
document.body.setAttribute('data-probe', JSON.stringify(figs));
</script>"#;

/// What the browser laid out of each chart of the page of `results`.
fn probe(results: &dbtax::results::Results) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let page = dbtax::report::html(results).replace("</body>", &format!("{PROBE}</body>"));
    let file = dir.path().join("report.html");
    std::fs::write(&file, page).unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("running chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("data-probe=\"").unwrap_or_else(|| {
        panic!(
            "no probe in the DOM; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let rest = &dom[start + 12..];
    let json = rest[..rest.find('"').unwrap()].replace("&quot;", "\"");
    let figs: serde_json::Value = serde_json::from_str(&json).unwrap();
    eprintln!("probe: {json}");
    figs.as_array().unwrap().clone()
}

#[test]
fn the_report_renders_its_charts_in_headless_chromium() {
    let figs = probe(&common::fixture("general-log.json"));
    let json = serde_json::Value::from(figs.clone());
    assert_eq!(figs.len(), 5, "five charts: {json}");
    for (i, f) in figs.iter().enumerate() {
        assert!(
            f["w"].as_f64().unwrap() > 300.0 && f["h"].as_f64().unwrap() > 200.0,
            "chart {i} has no size: {f}"
        );
        assert!(
            f["points"].as_u64().unwrap() >= 2,
            "chart {i} draws no points or bars: {f}"
        );
        assert!(
            f["texts"].as_u64().unwrap() >= 5,
            "chart {i} shows no text (axis labels, legend): {f}"
        );
        for l in f["lines"].as_array().unwrap() {
            assert!(
                l.as_f64().unwrap() > 10.0,
                "chart {i} has a line of no length: {f}"
            );
        }
    }
}

/// A `--slo` run's page (a run on the managed MariaDB: `dbtax run --feature general-log
/// --slo p99=5ms`): one chart, the quantile against the rate, with every trial a point, the
/// objective's line across it and each variant's capacity marked.
#[test]
fn the_capacity_chart_shows_the_objective_and_each_capacity_in_headless_chromium() {
    let results = common::fixture("capacity.json");
    let figs = probe(&results);
    assert_eq!(figs.len(), 1, "one chart: {figs:?}");
    let f = &figs[0];
    assert!(
        f["w"].as_f64().unwrap() > 300.0 && f["h"].as_f64().unwrap() > 200.0,
        "no size: {f}"
    );
    let trials: usize = results
        .capacity
        .iter()
        .map(|c| {
            c.steps
                .iter()
                .filter(|s| s.phase == "search" || s.phase == "measured")
                .count()
        })
        .sum();
    assert!(
        f["points"].as_u64().unwrap() as usize >= trials,
        "{trials} trials, fewer points: {f}"
    );
    assert_eq!(f["objective"], 1, "the objective's line: {f}");
    let found = results.capacity.iter().filter(|c| c.rate.is_some()).count();
    assert_eq!(f["capacity"].as_u64().unwrap() as usize, found, "{f}");
}
