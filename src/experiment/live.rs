//! The real server behind the runner's `Bench`: switch with the journaled `Switcher`, guard the
//! disk, truncate the feature logs on managed targets, and run trials with the load generator.

use super::runner::Bench;
use crate::feature::toggle::{State, Switcher};
use crate::load::{TrialPlan, TrialProbes, run_trial};
use crate::results::Trial;
use crate::target::Target;
use crate::workload::PreparedWorkload;
use anyhow::{Result, bail};
use indicatif::ProgressBar;
use std::path::PathBuf;
use std::time::Duration;

/// Refuse to let the log's filesystem fall under this share of free space.
const MIN_FREE_FRACTION: f64 = 0.10;

/// A real server, switched between variants.
pub struct LiveBench<'a> {
    /// The server.
    pub target: &'a Target,
    /// Tables ready, statements known.
    pub workload: &'a PreparedWorkload,
    /// Journaled switching.
    pub switcher: Switcher,
    /// Each variant's full state.
    pub states: Vec<State>,
    /// Measured time per trial.
    pub trial: Duration,
    /// Settle time before measuring.
    pub warmup: Duration,
    /// Local paths of the feature logs (their growth is log bytes per query).
    pub log_files: Vec<PathBuf>,
    /// `--max-log-bytes`.
    pub max_log_bytes: Option<u64>,
    /// The progress display.
    pub bar: ProgressBar,
    log_growth: u64,
    log_rate: Vec<f64>,
}

impl<'a> LiveBench<'a> {
    /// A bench over a begun switcher.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        target: &'a Target,
        workload: &'a PreparedWorkload,
        switcher: Switcher,
        states: Vec<State>,
        trial: Duration,
        warmup: Duration,
        log_files: Vec<PathBuf>,
        max_log_bytes: Option<u64>,
        bar: ProgressBar,
    ) -> Self {
        let n = states.len();
        LiveBench {
            target,
            workload,
            switcher,
            states,
            trial,
            warmup,
            log_files,
            max_log_bytes,
            bar,
            log_growth: 0,
            log_rate: vec![0.0; n],
        }
    }

    /// Stop before a trial that would fill the log's disk or pass --max-log-bytes.
    fn guard_disk(&self, variant: usize) -> Result<()> {
        let expected = (self.log_rate[variant] * (self.trial + self.warmup).as_secs_f64()) as u64;
        if let Some(max) = self.max_log_bytes
            && self.log_growth + expected > max
        {
            bail!(
                "stopped before the next trial: the feature logs have grown by {} MB and the next \
                 trial would pass --max-log-bytes ({} MB)",
                self.log_growth / 1_000_000,
                max / 1_000_000
            );
        }
        for f in &self.log_files {
            let dir = f.parent().unwrap_or(f);
            if let Some((free, total)) = crate::host::fs_space(dir)
                && (free.saturating_sub(expected) as f64) < MIN_FREE_FRACTION * total as f64
            {
                bail!(
                    "stopped before the next trial: the filesystem of {} has {} MB free of {} MB, \
                     and a trial writes about {} MB of log; dbtax keeps at least 10% free",
                    dir.display(),
                    free / 1_000_000,
                    total / 1_000_000,
                    expected / 1_000_000
                );
            }
        }
        Ok(())
    }
}

impl Bench for LiveBench<'_> {
    fn apply(&mut self, variant: usize) -> Result<()> {
        self.switcher.apply(&self.states[variant])
    }

    fn trial(&mut self, variant: usize, threads: u32) -> Result<Trial> {
        self.guard_disk(variant)?;
        if self.target.is_managed() {
            // The server is ours and thrown away: keep its logs from filling the disk.
            for f in &self.log_files {
                if let Ok(file) = std::fs::OpenOptions::new().write(true).open(f) {
                    let _ = file.set_len(0);
                }
            }
        }
        let plan = TrialPlan {
            threads,
            duration: self.trial,
            warmup: self.warmup,
            queries: None,
        };
        let probes = TrialProbes {
            log_files: self.log_files.clone(),
            server_status: true,
        };
        let bar = self.bar.clone();
        let prefix = bar.message();
        let t = run_trial(self.target, self.workload, &plan, &probes, &mut |p| {
            let phase = if p.measuring { "measuring" } else { "settling" };
            let head = prefix.split(" | ").next().unwrap_or("").to_string();
            bar.set_message(format!("{head} | {phase} {:.0} q/s", p.events_per_s));
        })?;
        let rate = t.log_bytes_per_query.unwrap_or(0.0) * t.qps;
        self.log_rate[variant] = rate;
        self.log_growth += (rate * (self.trial + self.warmup).as_secs_f64()) as u64;
        Ok(t)
    }
}
