//! One way in: the flags of `dbtax run`, an experiment file and a preset each make a `Layer`
//! (every setting optional, declared once in `experiment::spec`), and `merge` lays them over
//! the defaults in one function, the lowest first. Beside it, the rules the layers share:
//! rate mode over a current setting, the stop rule over the current one with its bounds, a
//! new seed, and the name an experiment gets from its variants. The whole experiment is
//! checked once, by `Experiment::validate`, after the last layer.
//!
//! Neither ripgrep's way (the file read by the flags' parser) nor latte's (the parsed command
//! is the configuration) fits whole: a file here has tables no flag spells (variants,
//! factors, the workload) and a preset is built in code. So the three are alike one level
//! down: each makes the same typed layer, and the layer's fields are generated from the one
//! list that also makes the `Experiment`'s, so a setting is named in that list and its flag.

use crate::error::usage;
use crate::experiment::spec::{Experiment, Layer, OpenLoop, RateLevel, StopRule, VariantSpec};
use crate::load::Arrival;
use anyhow::Result;
use std::time::Duration;

/// defaults ⊕ `layers` (the lowest first) → one experiment, not yet validated. Each layer's
/// plain settings replace the current values; its raw settings go through the rules over
/// what the layers below made (a file's precision goal and a flag's `--repeats`: the flag's
/// rule; a file's rate and a flag's `--arrival`: both).
pub fn merge(layers: Vec<Layer>) -> Result<Experiment> {
    let mut exp = Experiment::defaults();
    for mut layer in layers {
        exp.take_settings(&mut layer);
        if let Some(w) = layer.workload {
            exp.workload = w;
        }
        if let Some(v) = layer.variants {
            exp.variants = v;
        }
        exp.stop = stop_rule(layer.repeats, layer.precision, layer.budget, &exp.stop)?;
        exp.open_loop = open_loop(
            layer.rate,
            layer.arrival.as_deref(),
            layer.skip_late,
            exp.open_loop.take(),
        )?;
        if let Some(a) = &layer.agents {
            exp.agents = crate::agent::parse_list(a)?;
        }
        if let Some(h) = &layer.server_host {
            exp.server_host = Some((crate::agent::server_host(h)?, Default::default()));
        }
    }
    Ok(exp)
}

/// Rate mode from `rate` / `arrival` / `skip_late` over the current setting (a file's).
/// Arrival or skip-late without a rate is an error, not silently ignored.
pub fn open_loop(
    levels: Option<Vec<RateLevel>>,
    arrival: Option<&str>,
    skip_late: Option<Duration>,
    current: Option<OpenLoop>,
) -> Result<Option<OpenLoop>> {
    let mut o = match (levels, current) {
        (Some(levels), c) => OpenLoop {
            levels,
            ..c.unwrap_or(OpenLoop {
                levels: vec![],
                arrival: Arrival::default(),
                skip_late: None,
            })
        },
        (None, Some(c)) => c,
        (None, None) => {
            if arrival.is_some() || skip_late.is_some() {
                return Err(usage(
                    "--arrival and --skip-late go with --rate (open loop): give --rate R or \
                     --rate 50%",
                ));
            }
            return Ok(None);
        }
    };
    if let Some(a) = arrival {
        o.arrival = crate::load::schedule::parse_arrival(a)?;
    }
    if skip_late.is_some() {
        o.skip_late = skip_late;
    }
    Ok(Some(o))
}

/// More blocks per thread count than this are refused (`--repeats`).
pub const MAX_REPEATS: u32 = 1000;
/// The longest precision budget (`--budget`).
const MAX_BUDGET: Duration = Duration::from_secs(7 * 24 * 3600);

/// A seed for the trial order, from the clock (recorded, so a run can be replayed).
pub fn new_seed() -> u64 {
    crate::rng::Rng::from_time(0).next_u64() % 1_000_000
}

/// The stop rule from `repeats` / `precision` / `budget`, over the current one.
pub fn stop_rule(
    repeats: Option<u32>,
    precision: Option<f64>,
    budget: Option<Duration>,
    current: &StopRule,
) -> Result<StopRule> {
    match (repeats, precision) {
        (None, None) if budget.is_none() => Ok(current.clone()),
        (Some(_), Some(_)) => Err(usage("give repeats or precision, not both")),
        (Some(n), None) => {
            if n < 2 {
                return Err(usage(
                    "--repeats must be at least 2: one block gives no interval (and fewer than \
                     3 give none that the words will quote)",
                ));
            }
            if n > MAX_REPEATS {
                return Err(usage(format!(
                    "--repeats {n} is more blocks than any run needs (at most {MAX_REPEATS}): \
                     for a precision goal, give --precision P --budget TIME"
                )));
            }
            if budget.is_some() {
                return Err(usage("--budget goes with --precision"));
            }
            Ok(StopRule::Repeats(n))
        }
        (None, p) => {
            let prior_budget = match current {
                StopRule::Precision { budget, .. } => Some(*budget),
                _ => None,
            };
            let points = match (p, current) {
                (Some(p), _) => p,
                (None, StopRule::Precision { points, .. }) => *points,
                (None, StopRule::Repeats(_)) => {
                    return Err(usage("--budget goes with --precision"));
                }
            };
            if !(points.is_finite() && points > 0.0 && points <= 100.0) {
                return Err(usage(
                    "--precision must be a number of percentage points above 0 (and at most 100)",
                ));
            }
            let budget = budget.or(prior_budget).unwrap_or(Duration::from_secs(600));
            if budget < Duration::from_secs(1) || budget > MAX_BUDGET {
                return Err(usage(format!(
                    "--budget must be between 1 s and {} h",
                    MAX_BUDGET.as_secs() / 3600
                )));
            }
            Ok(StopRule::Precision {
                points,
                budget,
                focus: None,
            })
        }
    }
}

/// `general-log-slow-log-vs-off`; past the 64 characters a name may have, the first
/// variant and how many more (`general-log-and-5-more-vs-off`).
pub fn default_name(variants: &[VariantSpec]) -> String {
    let names: Vec<&str> = variants.iter().skip(1).map(|v| v.name.as_str()).collect();
    let Some(first) = names.first() else {
        return "experiment".into();
    };
    let base = &variants[0].name;
    let all = format!("{}-vs-{base}", names.join("-"));
    if all.len() <= 64 {
        return all;
    }
    let short = format!("{first}-and-{}-more-vs-{base}", names.len() - 1);
    if short.len() <= 64 {
        short
    } else {
        format!("{}-variants", names.len() + 1)
    }
}
