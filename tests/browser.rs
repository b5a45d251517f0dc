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
  return {w: r.width, h: r.height, lines, points, texts};
});
document.body.setAttribute('data-probe', JSON.stringify(figs));
</script>"#;

#[test]
fn the_report_renders_its_charts_in_headless_chromium() {
    let results = common::fixture("general-log.json");
    let dir = tempfile::tempdir().unwrap();
    let page = dbtax::report::html(&results).replace("</body>", &format!("{PROBE}</body>"));
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
    let figs = figs.as_array().unwrap();
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
