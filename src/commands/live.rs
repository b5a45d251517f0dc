//! `dbtax live`: check and lay out the run, say what it will do, ask on a terminal, run it,
//! write results.json and print what it found (`report::view::live`).

use crate::cli::LiveArgs;
use crate::config::server_config;
use crate::error::usage;
use crate::live::{LiveSpec, prepare, run as run_live};
use crate::results::{Results, SCHEMA, ToolInfo};
use anyhow::Result;
use std::io::{BufRead, IsTerminal, Write};

/// Run `dbtax live`.
pub fn run(args: LiveArgs) -> Result<()> {
    let max_on = share(&args.max_on)?;
    if !(args.guard.is_finite() && args.guard > 0.0) {
        return Err(usage("--guard is a factor above 0, such as 2"));
    }
    if !(args.latency_guard.is_finite() && args.latency_guard > 0.0) {
        return Err(usage("--latency-guard is a factor above 0, such as 2"));
    }
    let error_guard = match fraction(&args.error_guard) {
        Some(v) if (0.0..=1.0).contains(&v) => v,
        _ => {
            return Err(usage(format!(
                "--error-guard '{}': a share of the statements, such as 1% or 0.01",
                args.error_guard
            )));
        }
    };
    if args.agent_bin.is_some() && args.server_host.is_none() {
        return Err(usage(
            "--agent-bin names the dbtax that reads the server's host: it goes with \
             --server-host",
        ));
    }
    let server_host = match &args.server_host {
        Some(h) => Some((
            crate::agent::server_host(h)?,
            crate::agent::AgentBin::parse(args.agent_bin.as_deref()),
        )),
        None => None,
    };
    let spec = LiveSpec {
        features: args.features.clone(),
        duration: args.duration,
        window: args.window,
        settle: args.settle,
        max_on,
        guard: args.guard,
        latency_guard: args.latency_guard,
        error_guard,
        seed: args
            .seed
            .unwrap_or_else(|| dbtax_stats::rng::Rng::from_time(7).next_u64()),
        max_log_bytes: args.max_log_bytes,
        server_host,
    };
    let config = server_config(&args.target, None)?;
    let prepared = prepare(&config, &spec)?;
    let said = prepared.describe(&spec);
    if args.dry_run {
        crate::out!("{said}");
        return Ok(());
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(usage(
                "live switches a feature on a running server: say --yes when not on a \
                 terminal (after a --dry-run). Nothing was changed",
            ));
        }
        crate::errln!("{said}");
        eprint!("Switch the feature(s) on this server as above? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            return Err(usage("not confirmed. Nothing was changed"));
        }
    }
    let dir = crate::experiment::prepare::open::out_dir(args.out.as_deref(), "live")?;
    let started_at = crate::host::now_rfc3339();
    let target = prepared.target();
    let (live, ended) = run_live(prepared, &spec, &mut |m| crate::errln!("{m}"))?;
    let results = Results {
        schema: SCHEMA.into(),
        name: "live".into(),
        tool: ToolInfo {
            version: env!("CARGO_PKG_VERSION").into(),
        },
        command: crate::server::url::redacted_argv(),
        started_at,
        complete: ended.is_none(),
        host: crate::host::host_info(),
        seed: spec.seed,
        // A window stands where a run has its trial, the settle time where it warms up.
        trial_s: spec.window.as_secs_f64(),
        warmup_s: spec.settle.as_secs_f64(),
        variants: std::iter::once("off".to_string())
            .chain(spec.features.iter().cloned())
            .map(|name| crate::results::VariantInfo {
                name,
                baseline: "off".into(),
                ..Default::default()
            })
            .collect(),
        workload: serde_json::json!({ "kind": "production", "work": live.work }),
        target,
        live: Some(live),
        ..Default::default()
    };
    crate::experiment::run::record::write_final(&dir, &results)?;
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        crate::out!("{}", crate::report::table(&results));
        crate::outln!(
            "Results: {} (report.html, results.csv, charts/ beside it)",
            dir.join("results.json").display()
        );
    }
    match ended {
        None => Ok(()),
        Some(e) => {
            Err(e.context("every setting was put back; the windows measured are in results.json"))
        }
    }
}

/// `--max-on`: "50%", "25%" or a fraction ("0.25").
fn share(s: &str) -> Result<f64> {
    match fraction(s) {
        Some(v) if v > 0.0 && v <= 0.5 => Ok(v),
        _ => Err(usage(format!(
            "--max-on '{s}': the share of the time a feature may be on, above 0 and at most \
             50% (every on window has an off partner)"
        ))),
    }
}

/// A share written "25%" or as a fraction, "0.25" (not `units::percent`, where "0.5" is
/// half a percent).
fn fraction(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|v| v / 100.0),
        None => t.parse::<f64>().ok(),
    }
    .filter(|v| v.is_finite())
}
