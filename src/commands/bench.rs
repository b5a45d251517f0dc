//! `dbtax bench`: one trial, printed as a summary or as one JSON object.

use crate::cli::BenchArgs;
use crate::experiment::spec::RateLevel;
use crate::load::{Load, LocalLoad, Rate, Target, TrialPlan, TrialProbes};
use crate::results::{BenchOutput, Calibration, Trial};
use crate::server::Server;
use crate::workload::Workload;
use anyhow::Result;

/// Run `dbtax bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    let b = crate::config::bench::bench(&args)?;
    let json = args.json;
    let say = |m: &str| {
        if !json {
            crate::errln!("{m}")
        }
    };
    let server = Server::open(&b.server, &[])?;
    server.check_statements(&b.workload)?;
    let mut load: Box<dyn Load> = match crate::agent::start(&b.agents, &server, &mut { say })? {
        Some(pool) => Box::new(pool),
        None => Box::new(LocalLoad),
    };
    let prepared = server.prepare(&b.workload, &mut { say })?;
    let target = Target {
        server: &server,
        workload: &prepared,
    };
    load.check(&target)?;
    let mut plan = b.plan.clone();
    let probes = TrialProbes {
        server_status: true,
        ..Default::default()
    };
    let mut calibration = None;
    if let Some((level, o)) = &b.rate {
        let per_second = match *level {
            RateLevel::PerSecond(r) => r,
            RateLevel::Capacity(f) => {
                let c = calibrate(load.as_mut(), &target, &plan, json)?;
                let r = f * c.capacity_tps;
                say(&format!(
                    "calibration: {:.0} events/s in closed loop at {} threads; {} is {r:.0} \
                     events/s",
                    c.capacity_tps,
                    plan.threads,
                    level.label()
                ));
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
    let trial = load.run_trial(&target, &plan, &probes, &mut |p| {
        super::progress::show_trial(&bar, p)
    });
    bar.finish_and_clear();
    let trial = Trial {
        started_at,
        ..trial?
    };
    if json {
        let out = BenchOutput {
            trial,
            workload: prepared.to_json(),
            threads: plan.threads,
            target: server.info(),
            calibration,
            agent_hosts: load.hosts(),
        };
        crate::outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        crate::out!("{}", summary(&server, &b.workload, plan.threads, &trial));
    }
    Ok(())
}

/// `--rate N%`: the closed-loop capacity at the same threads, measured first.
fn calibrate(
    load: &mut dyn Load,
    target: &Target<'_>,
    plan: &TrialPlan,
    quiet: bool,
) -> Result<Calibration> {
    let bar = super::progress::trial_bar(quiet);
    let t = load.run_trial(
        target,
        &plan.calibration(),
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
