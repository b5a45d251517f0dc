//! results.json before the first trial: what is measured, on what, with which settings
//! (the variants as run, the server's relevant variables as found).

use crate::experiment::prepare::plan::Plan;
use crate::experiment::spec::Experiment;
use crate::results::{RateRun, Results, SCHEMA, ToolInfo, VariantInfo};
use crate::server::Server;
use std::collections::BTreeMap;

/// results.json before the first trial: what is measured, on what, with which settings.
pub(super) fn header(
    exp: &Experiment,
    server: &Server,
    plan: &Plan,
    originals: &BTreeMap<String, String>,
    started_at: String,
) -> Results {
    let mut target = server.info();
    target.variables = plan
        .relevant
        .clone()
        .into_iter()
        .chain(originals.clone())
        .collect();
    Results {
        schema: SCHEMA.into(),
        name: exp.name.clone(),
        tool: ToolInfo {
            version: env!("CARGO_PKG_VERSION").into(),
        },
        command: crate::server::url::redacted_argv(),
        started_at,
        complete: false,
        live: None,
        target,
        host: crate::host::host_info(),
        workload: exp.workload.to_json(),
        trial_s: exp.trial.as_secs_f64(),
        warmup_s: exp.warmup.as_secs_f64(),
        queries_per_trial: exp.queries_per_trial,
        seed: exp.seed,
        paired_with: None,
        headline_threads: exp.headline_threads(),
        variants: variant_infos(plan, originals),
        cells: vec![],
        warnings: plan.cpus.warning.iter().cloned().collect(),
        cpus: plan.cpus.cpus.clone(),
        pinned: plan.cpus.pinned,
        unguarded_logs: plan.unguarded_logs,
        server_host: server.host.0.server_host(),
        analysis: Default::default(),
        agents: vec![],
        rate: exp.open_loop.as_ref().map(|o| RateRun {
            levels: o.levels.iter().map(|l| l.label()).collect(),
            arrival: o.arrival.name().into(),
            skip_late_ms: o.skip_late.map(|d| d.as_secs_f64() * 1000.0),
            calibration: vec![],
            production_cores: exp.production_cores,
        }),
        bill: vec![],
        capacity: vec![],
    }
}

fn variant_infos(plan: &Plan, originals: &BTreeMap<String, String>) -> Vec<VariantInfo> {
    plan.variants
        .iter()
        .map(|v| VariantInfo {
            name: v.name.clone(),
            feature: v.features.first().cloned(),
            baseline: plan.variants[v.baseline].name.clone(),
            server_opts: v.server_opts.clone(),
            plugins: v.plugins.iter().map(|p| p.soname.to_string()).collect(),
            settings: v
                .state
                .iter()
                .map(|(k, val)| {
                    (
                        k.clone(),
                        val.clone()
                            .or_else(|| originals.get(k).cloned())
                            .unwrap_or_default(),
                    )
                })
                .collect(),
        })
        .collect()
}
