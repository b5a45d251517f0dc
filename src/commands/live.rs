//! `dbtax live`: check and lay out the run, say what it will do, ask on a terminal, run it,
//! write results.json and print what it found.

use crate::cli::LiveArgs;
use crate::config::server_config;
use crate::error::usage;
use crate::live::{LiveSpec, prepare, run as run_live};
use crate::results::{Results, SCHEMA, ToolInfo};
use anyhow::Result;
use dbtax_stats::live::{Interval, LiveResults};
use std::io::{BufRead, IsTerminal, Write};

/// Run `dbtax live`.
pub fn run(args: LiveArgs) -> Result<()> {
    let max_on = share(&args.max_on)?;
    if !(args.guard.is_finite() && args.guard > 0.0) {
        return Err(usage("--guard is a factor above 0, such as 2"));
    }
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
        live: Some(live),
        ..Default::default()
    };
    crate::experiment::run::record::write_results(&dir, &results)?;
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&results)?);
    } else if let Some(live) = &results.live {
        crate::out!("{}", table(live));
        crate::outln!("Results: {}", dir.join("results.json").display());
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
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(v) if v > 0.0 && v <= 0.5 => Ok(v),
        _ => Err(usage(format!(
            "--max-on '{s}': the share of the time a feature may be on, above 0 and at most \
             50% (every on window has an off partner)"
        ))),
    }
}

fn interval(i: Option<Interval>, unit: &str, digits: usize) -> String {
    match i {
        Some(i) => format!(
            "{:+.d$}{unit} [{:+.d$}, {:+.d$}]",
            i.value,
            i.ci95.0,
            i.ci95.1,
            d = digits
        ),
        None => "-".into(),
    }
}

/// What a live run found, as the terminal shows it.
pub fn table(l: &LiveResults) -> String {
    let per = if l.work == "transactions" {
        "transaction"
    } else {
        "statement"
    };
    let mut t = format!(
        "{} windows measured; production ran {} {}s/s in the off windows\n",
        l.windows.len(),
        l.estimates.first().map_or(0.0, |e| e.rate).round(),
        per
    );
    for e in &l.estimates {
        let name = &l.features[e.feature];
        t += &format!("{name}:\n");
        t += &format!(
            "  server CPU per {per} added  {}  ({} of the off windows')\n",
            if l.cpu_read {
                interval(e.cpu_us_per_statement, " µs", 2)
            } else {
                "not read (the server runs elsewhere: --server-host)".into()
            },
            interval(e.cpu_pct, "%", 1)
        );
        t += &format!(
            "  log per {per}               {}\n",
            interval(e.log_bytes_per_statement, " B", 0)
        );
        t += &format!(
            "  the bill at this rate       {} cores, {} GB of log a day\n",
            interval(e.cores, "", 4),
            interval(e.log_gb_per_day, "", 2)
        );
        t += &format!("  pairs used                  {}\n", e.pairs);
        for s in &e.set_aside {
            t += &format!("  pair {} set aside: {}\n", s.pair, s.why);
        }
        if e.cpu_us_per_statement.is_none() && l.cpu_read {
            t += "  too few pairs for an interval (3 at least)\n";
        }
    }
    match &l.guard_tripped {
        Some(g) => t += &format!("guard tripped: {g}\n"),
        None => t += "guards: none tripped\n",
    }
    t += &format!(
        "watching cost: {} polls of {:.0} µs each at most (their round trip), {:.3}% of a core\n",
        l.polls,
        l.poll_us,
        100.0 * l.polls as f64 * l.poll_us
            / 1e6
            / l.window_start_s.last().copied().unwrap_or(1.0).max(1.0)
    );
    for n in &l.notes {
        t += &format!("note: {n}\n");
    }
    t
}
