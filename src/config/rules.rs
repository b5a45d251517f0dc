//! The rules the three ways into an experiment share (`dbtax run`'s flags, an experiment
//! file, a preset; `dbtax bench` for its rate): rate mode over a current setting, the stop
//! rule over the current one with its bounds, a new seed, and the name an experiment gets
//! from its variants. Beside the merges that use them, above none of them.

use crate::error::usage;
use crate::experiment::spec::{OpenLoop, RateLevel, StopRule, VariantSpec};
use crate::load::Arrival;
use anyhow::Result;
use std::time::Duration;

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
        o.arrival = Arrival::parse(a)?;
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
