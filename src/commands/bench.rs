//! `dbtax bench`: one trial, printed as a summary or as one JSON object.

use crate::cli::BenchArgs;
use crate::config::{server_config, workload_from};
use crate::error::usage;
use crate::load::{TrialPlan, TrialProbes, run_trial};
use crate::results::{BenchOutput, Trial};
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
    let plan = TrialPlan {
        threads: args.threads,
        duration,
        warmup,
        queries: args.queries,
    };
    let target = Server::open(&config)?;
    target.check_statements(&workload)?;
    let prepared = target.prepare(&workload, args.json)?;
    let bar = super::progress::trial_bar(false);
    let probes = TrialProbes {
        server_status: true,
        ..Default::default()
    };
    let trial = run_trial(&target, &prepared, &plan, &probes, &mut |p| {
        super::progress::show_trial(&bar, p)
    });
    bar.finish_and_clear();
    let trial = trial?;
    if args.json {
        let out = BenchOutput {
            trial,
            workload: prepared.to_json(),
            threads: args.threads,
            target: target.info(),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", summary(&target, &workload, args.threads, &trial));
    }
    Ok(())
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
    s += &format!(
        "  latency ms   p50 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}\n",
        t.latency_ms.p50, t.latency_ms.p95, t.latency_ms.p99, t.latency_ms.max
    );
    s += &format!("  queries      {}   errors {}\n", t.queries, t.errors);
    for (msg, n) in &t.error_messages {
        s += &format!("    {n} × {msg}\n");
    }
    s += &format!("  client CPU   {:.2} µs/query\n", t.client_cpu_us_per_query);
    match t.server_cpu_us_per_query {
        Some(v) => s += &format!("  server CPU   {v:.2} µs/query\n"),
        None => s += "  server CPU   unknown (the server's process is not on this machine)\n",
    }
    s
}
