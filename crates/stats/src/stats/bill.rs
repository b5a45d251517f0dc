//! Rate mode's bill: what a variant costs at a load point, in the units a DBA reports — server
//! cores, log and WAL a day, added latency — each the variant minus its baseline within each
//! block (the per-query figures times the statements per second of that trial), with a t
//! interval over blocks; and the reasons the lab's figure is a lower bound for production.

use crate::intervals::paired::by_block;
use crate::results::{Bill, Cell, Estimate, Results, Trial};

const DAY_S: f64 = 86_400.0;

fn scaled(e: &Estimate, k: f64) -> Estimate {
    Estimate {
        value: e.value * k,
        ci95: [e.ci95[0] * k, e.ci95[1] * k],
    }
}

/// The cores the server could use where it was measured: its host's, through the probe; the
/// CPUs it was bound to here; else this machine's.
fn server_cores(r: &Results) -> Option<u32> {
    if let Some(h) = &r.server_host {
        return (h.cores > 0).then_some(h.cores);
    }
    match &r.cpus {
        Some(c) if !c.server.is_empty() => Some(c.server.len() as u32),
        _ => (r.host.cores > 0).then_some(r.host.cores),
    }
}

/// A variant's server CPU per query grows with the load: its interval at the busiest load
/// point lies wholly above the one at the quietest (the mark of a contended lock, such as a
/// log mutex). In words, or None.
fn grows_with_load(r: &Results, variant: &str) -> Option<String> {
    let mut pts: Vec<(&Cell, &Estimate)> = r
        .cells
        .iter()
        .filter(|c| c.variant == variant)
        .filter_map(|c| Some((c, &c.server_cpu_delta_us.as_ref()?.estimate)))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    pts.sort_by(|a, b| a.0.qps_median.total_cmp(&b.0.qps_median));
    let ((lo_c, lo), (hi_c, hi)) = (pts[0], pts[pts.len() - 1]);
    (hi.ci95[0] > lo.ci95[1]).then(|| {
        format!(
            "the server CPU it adds per query grows with the load ({:.1} µs at {:.0} \
             queries/s, {:.1} µs at {:.0}): a busier server pays more per query than measured \
             here",
            lo.value, lo_c.qps_median, hi.value, hi_c.qps_median
        )
    })
}

fn cpu_cores(t: &Trial) -> Option<f64> {
    Some(t.server_cpu_us_per_query? * t.qps / 1e6)
}

fn log_per_day(t: &Trial) -> Option<f64> {
    Some(t.log_bytes_per_query? * t.qps * DAY_S)
}

fn wal_per_day(t: &Trial) -> Option<f64> {
    Some(t.wal_bytes_per_query? * t.qps * DAY_S)
}

/// Every variant's bill at every load point of a rate-mode run (none in closed loop).
pub fn bills(r: &Results) -> Vec<Bill> {
    let Some(rate) = &r.rate else {
        return vec![];
    };
    let cores = server_cores(r);
    let mut out = vec![];
    for c in &r.cells {
        let Some(cr) = &c.rate else { continue };
        if r.is_baseline(&c.variant) {
            continue;
        }
        let Some(info) = r.variants.iter().find(|v| v.name == c.variant) else {
            continue;
        };
        let Some(base) = r.cells.iter().find(|b| {
            b.variant == info.baseline
                && b.threads == c.threads
                && b.rate.as_ref().is_some_and(|br| br.level == cr.level)
        }) else {
            continue;
        };
        let cpu = by_block(&base.trials, &c.trials, cpu_cores);
        let mut lower_bound = vec![];
        if cr.saturated {
            lower_bound.push(format!(
                "it could not sustain this rate ({:.0} of {:.0} events/s): the bill is for \
                 the load it managed",
                cr.achieved_median, cr.asked
            ));
        }
        if let (Some(p), Some(m)) = (rate.production_cores, cores)
            && p > m
        {
            lower_bound.push(format!(
                "production has {p} cores where this server had {m}: more sessions at once \
                 contend for what the feature serialises"
            ));
        }
        lower_bound.extend(grows_with_load(r, &c.variant));
        out.push(Bill {
            variant: c.variant.clone(),
            threads: c.threads,
            level: cr.level.clone(),
            rate: c.qps_median,
            server_cores: cpu.as_ref().and(cores),
            cpu_share: cpu
                .as_ref()
                .zip(cores)
                .map(|(e, n)| scaled(e, 100.0 / f64::from(n))),
            cpu_cores: cpu,
            log_bytes_per_day: by_block(&base.trials, &c.trials, log_per_day),
            wal_bytes_per_day: by_block(&base.trials, &c.trials, wal_per_day),
            latency_delta_ms: c.latency_delta_ms.clone(),
            lower_bound,
        });
    }
    out
}
