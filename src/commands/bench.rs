//! `dbtax bench`: one trial, printed as a summary or as one JSON object.

use crate::cli::BenchArgs;
use crate::config::{server_config, workload_from};
use crate::error::usage;
use crate::experiment::spec::RateLevel;
use crate::load::{Rate, TrialPlan, TrialProbes, run_trial};
use crate::results::{BenchOutput, Calibration, Trial};
use crate::server::Server;
use crate::workload::Workload;
use anyhow::Result;

/// Run `dbtax bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    let config = server_config(&args.target, None)?;
    let workload = workload_from(&args.workload, Workload::default())?;
    let (duration, warmup) = (args.duration, args.warmup);
    if args.threads == 0 {
        return Err(usage("--threads must be at least 1"));
    }
    if args.queries == Some(0) {
        return Err(usage("--queries must be at least 1"));
    }
    if args.queries.is_none() && duration.is_zero() {
        return Err(usage("--duration must be longer than 0"));
    }
    let open = crate::config::run::open_loop(
        args.rate
            .rate
            .as_deref()
            .map(RateLevel::parse_list)
            .transpose()?,
        args.rate.arrival.as_deref(),
        args.rate.skip_late,
        None,
    )?;
    let level = match open.as_ref().map(|o| o.levels.as_slice()) {
        Some([one]) => Some(*one),
        Some(_) => {
            return Err(usage(
                "bench runs one rate: give --rate R or --rate 50% (a list is for `dbtax run`)",
            ));
        }
        None => None,
    };
    let agent_opts = crate::agent::AgentOptions::new(
        &args.agents.agents,
        args.agents.agent_bin.clone(),
        args.agents.agent_target.clone(),
    )?;
    if !agent_opts.agents.is_empty() && args.queries.is_some() {
        return Err(usage(
            "--queries is not available with --agents: give --duration",
        ));
    }
    let target = Server::open(&config, &[])?;
    target.check_statements(&workload)?;
    let agents = crate::agent::start(&agent_opts, &target, &mut |m| {
        if !args.json {
            eprintln!("{m}")
        }
    })?;
    let prepared = target.prepare(&workload, &mut |m| {
        if !args.json {
            eprintln!("{m}")
        }
    })?;
    if let Some(a) = &agents {
        crate::agent::lock(a).check(&prepared)?;
    }
    let mut plan = TrialPlan {
        threads: args.threads,
        duration,
        warmup,
        queries: args.queries,
        rate: None,
        agents: agents.clone(),
    };
    let probes = TrialProbes {
        server_status: true,
        ..Default::default()
    };
    let mut calibration = None;
    if let (Some(level), Some(o)) = (level, &open) {
        let per_second = match level {
            RateLevel::PerSecond(r) => r,
            RateLevel::Capacity(f) => {
                let c = calibrate(&target, &prepared, &plan, args.json)?;
                let r = f * c.capacity_tps;
                if !args.json {
                    eprintln!(
                        "calibration: {:.0} events/s in closed loop at {} threads; {} is {r:.0} \
                         events/s",
                        c.capacity_tps,
                        args.threads,
                        level.label()
                    );
                }
                calibration = Some(c);
                r
            }
        };
        plan.rate = Some(Rate {
            per_second: per_second.max(1.0),
            arrival: o.arrival,
            skip_late: o.skip_late,
        });
    }
    let bar = super::progress::trial_bar(false);
    let started_at = crate::host::now_rfc3339_ms();
    let trial = run_trial(&target, &prepared, &plan, &probes, &mut |p| {
        super::progress::show_trial(&bar, p)
    });
    bar.finish_and_clear();
    let trial = Trial {
        started_at,
        ..trial?
    };
    if args.json {
        let out = BenchOutput {
            trial,
            workload: prepared.to_json(),
            threads: args.threads,
            target: target.info(),
            calibration,
            agent_hosts: agents
                .as_ref()
                .map(|a| crate::agent::lock(a).info())
                .unwrap_or_default(),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", summary(&target, &workload, args.threads, &trial));
    }
    Ok(())
}

/// `--rate N%`: the closed-loop capacity at the same threads, measured first.
fn calibrate(
    target: &Server,
    prepared: &crate::workload::PreparedWorkload,
    plan: &TrialPlan,
    quiet: bool,
) -> Result<Calibration> {
    let closed = plan.calibration();
    let bar = super::progress::trial_bar(quiet);
    let t = run_trial(
        target,
        prepared,
        &closed,
        &TrialProbes::default(),
        &mut |p| super::progress::show_trial(&bar, p),
    );
    bar.finish_and_clear();
    Ok(Calibration::of(plan.threads, &t?))
}

/// The human summary of one trial.
pub fn summary(target: &Server, workload: &Workload, threads: u32, t: &Trial) -> String {
    let mut s = format!(
        "dbtax bench: {}, {threads} threads, {:.1} s on {} ({})\n",
        workload.kind.name(),
        t.duration_s,
        target.label(),
        target.server_version
    );
    s += &format!(
        "  throughput   {:>12.1} queries/s   {:>12.1} events/s\n",
        t.qps, t.tps
    );
    let latency = |l: &crate::results::LatencyMs| {
        format!(
            "p50 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}",
            l.p50, l.p95, l.p99, l.max
        )
    };
    match (&t.rate, &t.service_latency_ms, &t.schedule_lag_ms) {
        (Some(r), Some(service), Some(lag)) => {
            s += &format!(
                "  rate         asked {:.1}/s  achieved {:.1}/s{}{}\n",
                r.asked,
                r.achieved,
                if r.skipped > 0 {
                    format!("  skipped {} late", r.skipped)
                } else {
                    String::new()
                },
                if r.saturated {
                    "  SATURATED: the server did not keep up"
                } else {
                    ""
                }
            );
            s += &format!(
                "  latency ms   {}   (from each intended start)\n",
                latency(&t.latency_ms)
            );
            s += &format!(
                "  service ms   {}   (from the actual send)\n",
                latency(service)
            );
            s += &format!(
                "  lag ms       p50 {:.3}  p99 {:.3}  max {:.3}\n",
                lag.p50, lag.p99, lag.max
            );
        }
        _ => s += &format!("  latency ms   {}\n", latency(&t.latency_ms)),
    }
    s += &format!("  queries      {}   errors {}\n", t.queries, t.errors);
    for (msg, n) in &t.error_messages {
        s += &format!("    {n} × {msg}\n");
    }
    s += &format!("  client CPU   {:.2} µs/query\n", t.client_cpu_us_per_query);
    for a in &t.agents {
        s += &format!(
            "    agent {}: {} threads, {} queries, {:.2} µs/query, window skew ≤ {:.1} ms\n",
            a.host, a.threads, a.queries, a.client_cpu_us_per_query, a.skew_ms
        );
    }
    if t.skewed {
        s += "  SKEWED: the agents' windows differ by more than a tenth of the trial\n";
    }
    match t.server_cpu_us_per_query {
        Some(v) => s += &format!("  server CPU   {v:.2} µs/query\n"),
        None => s += "  server CPU   unknown (the server's process is not on this machine)\n",
    }
    s
}
