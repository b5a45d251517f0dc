//! report.html: one self-contained page (inline CSS and SVG, nothing fetched): the answer in
//! words, the tables, the charts, the environment and the warnings.

use super::svg::esc;
use crate::report::view::View;
use crate::results::Results;
use std::fmt::Write;

/// The page's CSS (shared with the compare page).
pub const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.answer{background:#f3f7fb;border-left:4px solid #0072B2;padding:.6em 1em;font-size:1.08em}
.answer li{margin:.3em 0}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}th,td{padding:.25em .7em;border-bottom:1px solid #e5e5e5;text-align:right}
th{background:#fafafa}td:first-child,th:first-child{text-align:left}
.noise{color:#777}.sig{font-weight:600}.warn{background:#fff6e5;border-left:4px solid #E69F00;padding:.4em 1em}
.charts{display:flex;flex-wrap:wrap;gap:1em}.charts figure{margin:0;flex:1 1 480px;max-width:540px}.charts svg{width:100%;height:auto}
code,pre{background:#f5f5f5;padding:.1em .3em;border-radius:3px;white-space:pre-wrap}
.meta td{text-align:left}";

/// Render the report page, as the run's view shows it.
pub fn render(r: &Results, view: &dyn View) -> String {
    let mut s = String::new();
    let kind = crate::report::workload_title(r);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dbtax: {n}</title>\n<style>{STYLE}</style></head><body>\n<h1>dbtax: {n}</h1>\n<p>{kind} on <b>{srv}</b> ({url}), started {at}{inc}.</p>\n",
        n = esc(&r.name),
        kind = esc(&kind),
        srv = esc(&r.target.server_version),
        url = esc(&r.target.url),
        at = esc(&r.started_at),
        inc = if r.complete {
            ""
        } else {
            " — <b>incomplete: the run was interrupted or failed</b>"
        }
    );
    s += "<div class=\"answer\"><ul>\n";
    for h in crate::report::words::headlines(r, view) {
        let _ = writeln!(s, "<li>{}</li>", esc(&h));
    }
    s += "</ul></div>\n";
    if let Some(m) = view.method() {
        let _ = writeln!(s, "<p>{}</p>", esc(&m));
    }
    if !r.warnings.is_empty() {
        s += "<h2>Warnings</h2>\n";
        for w in &r.warnings {
            let _ = writeln!(s, "<p class=\"warn\">{}</p>", esc(w));
        }
    }
    s += &view.html();
    s += &crate::report::statements::html(r);
    s += "<h2>Charts</h2>\n<div class=\"charts\">\n";
    for c in view.charts() {
        let _ = writeln!(s, "<figure id=\"chart-{}\">{}</figure>", c.name, c.svg);
    }
    s += "</div>\n<h2>Variants</h2>\n<table><tr><th>variant</th><th>settings</th></tr>\n";
    for v in &r.variants {
        let settings: Vec<String> = v
            .settings
            .iter()
            .map(|(k, val)| format!("{k}={val}"))
            .collect();
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td style=\"text-align:left\"><code>{}</code></td></tr>",
            esc(&v.name),
            esc(&settings.join(" "))
        );
    }
    s += "</table>\n";
    let agents = crate::report::agents::rows(r);
    if !agents.is_empty() {
        s += "<h2>Agents</h2>\n<p>The load came from these hosts; this page's figures are their trials merged (counts summed, latency histograms added).</p>\n<table><tr><th>agent</th><th>queries</th><th>client CPU µs/query</th><th>worst window skew ms</th><th>host</th></tr>\n";
        for a in agents {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.1}</td><td style=\"text-align:left\">{}</td></tr>",
                esc(&a.host),
                a.queries,
                a.client_cpu_us_per_query,
                a.worst_skew_ms,
                esc(&a.about)
            );
        }
        s += "</table>\n";
    }
    s += "<h2>Environment</h2>\n<table class=\"meta\">\n";
    let rows = [
        (
            "server",
            format!("{} ({})", r.target.server_version, r.target.kind),
        ),
        ("target", r.target.url.clone()),
        (
            "host CPU",
            format!("{} × {}", r.host.cores, r.host.cpu_model),
        ),
        (
            "memory",
            format!(
                "{:.1} GiB",
                r.host.memory_bytes as f64 / (1u64 << 30) as f64
            ),
        ),
        ("kernel", r.host.kernel.clone()),
        ("dbtax", r.tool.version.clone()),
        ("workload", r.workload.to_string()),
        (
            "trials",
            format!("{} s measured after {} s settle", r.trial_s, r.warmup_s),
        ),
        ("command", r.command.join(" ")),
    ];
    for (k, v) in rows {
        let _ = writeln!(s, "<tr><td>{k}</td><td><code>{}</code></td></tr>", esc(&v));
    }
    s += "</table>\n<h3>Server variables (before any change)</h3>\n<table class=\"meta\">\n";
    for (k, v) in &r.target.variables {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td><code>{}</code></td></tr>",
            esc(k),
            esc(v)
        );
    }
    s += "</table>\n<details><summary>Every trial</summary>\n<pre>";
    s += &esc(&crate::report::csv::render(r));
    s += "</pre></details>\n<p style=\"color:#888\">Made by dbtax. This page loads nothing from the network.</p>\n</body></html>\n";
    s
}
