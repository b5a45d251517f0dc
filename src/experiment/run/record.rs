//! Nothing measured is lost: results.json is rewritten (atomically) after every block, of
//! each server of a two-server run, while every event goes on to the display.

use crate::experiment::run::sides::Sides;
use crate::load::TrialProgress;
use crate::results::{Capacity, Results};
use anyhow::{Context, Result};
use dbtax_stats::run::{BlockDone, Observer};
use std::path::{Path, PathBuf};

/// Write results.json atomically (a reader never sees half a file).
pub fn write_results(dir: &Path, results: &Results) -> Result<()> {
    let path = dir.join("results.json");
    let tmp = dir.join("results.json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(results)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

/// A run's record at its end (`run`'s and `live`'s): results.json, then the report page, the
/// CSV and the charts beside it when there is something to show (a live run, a measured
/// trial, a capacity search's steps: a search that found no capacity has its page too, which
/// says so). Whether the pages were written.
pub fn write_final(dir: &Path, results: &Results) -> Result<bool> {
    write_results(dir, results)?;
    let shown = results.live.is_some()
        || results.cells.iter().any(|c| !c.trials.is_empty())
        || results
            .capacity
            .iter()
            .any(|c| c.blocks > 0 || !c.steps.is_empty());
    if shown {
        crate::report::write_all(dir, results)?;
    }
    Ok(shown)
}

/// Keeps results.json current after every block (of each server, for a two-server run),
/// and passes every event on to the display.
pub(super) struct Recorder<'a> {
    /// Each server's results and folder (A's, then B's in a two-server run).
    pub(super) runs: Vec<(&'a mut Results, &'a PathBuf)>,
    /// A two-server run: which cells are whose.
    pub(super) sides: Option<&'a Sides>,
    pub(super) display: &'a mut dyn Observer,
}

impl Recorder<'_> {
    pub(super) fn write(&self) -> Result<()> {
        for (results, dir) in &self.runs {
            write_results(dir, results)?;
        }
        Ok(())
    }
}

impl Observer for Recorder<'_> {
    fn trial_starting(&mut self, index: usize, planned: usize, variant: &str, threads: u32) {
        self.display
            .trial_starting(index, planned, variant, threads);
    }

    fn trial_progress(&mut self, progress: &TrialProgress) {
        self.display.trial_progress(progress);
    }

    fn status(&mut self, message: &str) {
        self.display.status(message);
    }

    fn block_done(&mut self, block: &BlockDone<'_>) -> Result<()> {
        let cells = match self.sides {
            Some(sides) => sides.split(block.cells).to_vec(),
            None => vec![block.cells.to_vec()],
        };
        for ((results, _), cells) in self.runs.iter_mut().zip(cells) {
            results.cells = cells;
            if let Some(r) = results.rate.as_mut() {
                r.calibration = block.calibration.to_vec();
            }
        }
        self.write()?;
        self.display.block_done(block)
    }

    fn capacities(&mut self, so_far: &[Capacity]) -> Result<()> {
        for (results, _) in self.runs.iter_mut() {
            results.capacity = so_far.to_vec();
        }
        self.write()?;
        self.display.capacities(so_far)
    }
}
