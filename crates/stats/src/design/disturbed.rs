//! The disturbance rule's parts: other processes' CPU in a trial, whether a block was
//! disturbed (above the run's typical level by more than `--max-disturbance`), and the
//! summary with the blocks set aside recorded.

use crate::design::Design;
use crate::results::{DisturbedBlock, Trial};
use crate::stats::summary::CellTrials;

/// Other processes' CPU in a trial, on each host read ("server", "client").
pub(crate) fn others_of(t: &Trial) -> impl Iterator<Item = (f64, &'static str)> {
    [
        t.host_other_cpu_pct.map(|p| (p, "server")),
        t.client_host_other_cpu_pct.map(|p| (p, "client")),
    ]
    .into_iter()
    .flatten()
}

/// The run's typical level of other processes' CPU: the lower quartile of every trial's so
/// far. A steady load is in every trial and sets it; disturbances, which come and go, move it
/// little: with disturbances in a quarter of the trials, 11 of 6334 kept trials were disturbed
/// ones in simulation (the median: 110 of 6368; tests/statistics/disturbance.rs).
pub(crate) fn typical(seen: &[f64]) -> f64 {
    let mut v: Vec<f64> = seen.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[(v.len() - 1) / 4]
}

/// Whether the block whose trials are `ran` (indices into `cells`, one per trial the block
/// ran: a cell named twice had its last two) was disturbed: the most CPU other processes used in one of its trials, and on which host,
/// when over the experiment's threshold above the run's `typical` level (a steady load of
/// other processes is the machine's, and hits every variant alike; one that comes and goes
/// is a disturbance).
pub(crate) fn disturbance(
    exp: &Design,
    cells: &[CellTrials],
    ran: &[usize],
    typical: f64,
) -> Option<(f64, &'static str)> {
    let limit = exp.max_disturbance?;
    let mut cells_ran = ran.to_vec();
    cells_ran.sort_unstable();
    cells_ran.dedup();
    worst(
        cells_ran.into_iter().flat_map(|c| {
            let n = ran.iter().filter(|&&r| r == c).count();
            let trials = &cells[c].trials;
            &trials[trials.len().saturating_sub(n)..]
        }),
        typical,
        limit,
    )
}

/// The most CPU other processes used in one of `trials`, and on which host, when over
/// `limit` above the run's `typical` level.
pub(crate) fn worst<'t>(
    trials: impl Iterator<Item = &'t Trial>,
    typical: f64,
    limit: f64,
) -> Option<(f64, &'static str)> {
    trials
        .flat_map(others_of)
        .filter(|(p, _)| *p > typical + limit)
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// The summary with the disturbed blocks' trials and the rule's record added (the cells are
/// in `cells`' order, as `set_aside` is).
pub(crate) fn with_set_aside(
    mut summary: crate::stats::summary::Summary,
    set_aside: &[Vec<Trial>],
    disturbed: &[DisturbedBlock],
    exp: &Design,
) -> crate::stats::summary::Summary {
    for (cell, trials) in summary.cells.iter_mut().zip(set_aside) {
        cell.disturbed_trials = trials.clone();
        let compared = exp
            .variants
            .iter()
            .find(|v| v.name == cell.variant)
            .is_some_and(|v| exp.variants[v.baseline].name != v.name);
        // (Rate mode has no overhead: its interval is the added latency's.)
        if !compared || cell.overhead.is_some() || cell.latency_delta_ms.is_some() {
            continue;
        }
        let level = cell.rate.as_ref().map(|r| r.level.as_str());
        let here: Vec<&DisturbedBlock> = disturbed
            .iter()
            .filter(|d| d.threads == cell.threads && d.rate.as_deref() == level)
            .collect();
        if here.is_empty() {
            continue;
        }
        let mut kept: Vec<u32> = cell.trials.iter().map(|t| t.block).collect();
        kept.sort_unstable();
        kept.dedup();
        let late = here.iter().filter(|d| d.late_reading.is_some()).count();
        let busy: Vec<&&DisturbedBlock> =
            here.iter().filter(|d| d.late_reading.is_none()).collect();
        let mut why = vec![];
        if let Some(worst) = busy
            .iter()
            .max_by(|a, b| a.worst_pct.total_cmp(&b.worst_pct))
        {
            why.push(format!(
                "{} disturbed: other processes up to {:.0}% of a core on the {}'s host",
                busy.len(),
                worst.worst_pct,
                worst.host
            ));
        }
        if late > 0 {
            why.push(format!(
                "{late} lost to a late reading of the server's host"
            ));
        }
        cell.no_interval = Some(format!(
            "{} of {} blocks were set aside ({}); too few are left for an interval",
            here.len(),
            here.len() + kept.len(),
            why.join("; ")
        ));
    }
    summary.analysis.max_disturbance_pct = exp.max_disturbance;
    summary.analysis.disturbed_blocks = disturbed.to_vec();
    summary
}
