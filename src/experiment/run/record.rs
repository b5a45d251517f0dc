//! Nothing measured is lost: results.json is rewritten (atomically) after every block, of
//! each server of a two-server run, while every event goes on to the display.

use crate::experiment::run::sides::Sides;
use crate::load::TrialProgress;
use crate::results::Results;
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
}
