//! The real server behind the runner's `Bench`: switch with the journaled `Switcher`, restart
//! for restart-only settings, guard the disk, truncate the feature logs on managed targets,
//! and run trials with the load generator.

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
/// Settle at least this long after a restart (the buffer pool reloads, caches are cold).
const SETTLE_AFTER_RESTART: Duration = Duration::from_secs(3);

/// How restart-only settings are switched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restarter {
    /// The experiment has none.
    None,
    /// dbtax restarts its managed server.
    Managed,
    /// The user's command restarts their server (`--restart-cmd`), given the options in
    /// $DBTAX_SERVER_OPTS.
    Command(String),
}

/// A real server, switched between variants.
pub struct LiveBench<'a> {
    target: &'a mut Target,
    workload: &'a PreparedWorkload,
    /// Journaled switching.
    pub switcher: Switcher,
    states: Vec<State>,
    server_opts: Vec<Vec<String>>,
    current_opts: Vec<String>,
    restarter: Restarter,
    plan: TrialPlan,
    log_files: Vec<PathBuf>,
    max_log_bytes: Option<u64>,
    bar: ProgressBar,
    log_growth: u64,
    log_rate: Vec<f64>,
    cold: bool,
}

impl<'a> LiveBench<'a> {
    /// A bench over a begun switcher. `plan.threads` is set per trial.
    pub fn new(
        target: &'a mut Target,
        workload: &'a PreparedWorkload,
        switcher: Switcher,
        states: Vec<State>,
        server_opts: Vec<Vec<String>>,
        plan: TrialPlan,
    ) -> Self {
        let n = states.len();
        LiveBench {
            target,
            workload,
            switcher,
            states,
            server_opts,
            current_opts: vec![],
            restarter: Restarter::None,
            plan,
            log_files: vec![],
            max_log_bytes: None,
            bar: ProgressBar::hidden(),
            log_growth: 0,
            log_rate: vec![0.0; n],
            cold: false,
        }
    }

    /// How to restart for restart-only settings.
    pub fn with_restarter(mut self, r: Restarter) -> Self {
        self.restarter = r;
        self
    }

    /// Feature log files to measure and guard, and the `--max-log-bytes` limit.
    pub fn with_logs(mut self, files: Vec<PathBuf>, max_bytes: Option<u64>) -> Self {
        self.log_files = files;
        self.max_log_bytes = max_bytes;
        self
    }

    /// The progress display to update.
    pub fn with_bar(mut self, bar: ProgressBar) -> Self {
        self.bar = bar;
        self
    }

    fn restart(&mut self, opts: &[String]) -> Result<()> {
        self.bar
            .set_message(format!("restarting the server with {opts:?}"));
        match &self.restarter {
            Restarter::Managed => self.target.restart_managed(opts)?,
            Restarter::Command(cmd) => self.target.restart_with_command(cmd, opts)?,
            Restarter::None => bail!("a variant needs a restart, and no way to restart was given"),
        }
        self.current_opts = opts.to_vec();
        self.switcher.after_restart(self.target)?;
        self.cold = true;
        Ok(())
    }

    /// Put the server back as found: restart without the variants' options (when they were
    /// applied), then restore every setting.
    pub fn finish(&mut self) -> Result<()> {
        let restarted = if self.current_opts.is_empty() {
            Ok(())
        } else {
            self.restart(&[])
        };
        let restored = self.switcher.restore();
        restarted.and(restored)
    }

    /// Stop before a trial that would fill the log's disk or pass --max-log-bytes.
    fn guard_disk(&self, variant: usize) -> Result<()> {
        let span = self.plan.duration + self.plan.warmup;
        let expected = (self.log_rate[variant] * span.as_secs_f64()) as u64;
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
        if self.server_opts[variant] != self.current_opts {
            let opts = self.server_opts[variant].clone();
            self.restart(&opts)?;
        }
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
        let mut plan = self.plan.clone();
        plan.threads = threads;
        if std::mem::take(&mut self.cold) {
            if plan.queries.is_some() {
                // Fixed-count trials have no settle phase: settle here, with the load.
                // A plain timed run of the settle length; its numbers are discarded.
                let warm = TrialPlan {
                    threads,
                    duration: SETTLE_AFTER_RESTART,
                    warmup: Duration::ZERO,
                    queries: None,
                };
                run_trial(
                    self.target,
                    self.workload,
                    &warm,
                    &TrialProbes::default(),
                    &mut |_| {},
                )?;
            } else {
                plan.warmup = plan.warmup.max(SETTLE_AFTER_RESTART);
            }
        }
        let probes = TrialProbes {
            log_files: self.log_files.clone(),
            server_status: true,
        };
        let bar = self.bar.clone();
        let head = bar.message().split(" | ").next().unwrap_or("").to_string();
        let t = run_trial(self.target, self.workload, &plan, &probes, &mut |p| {
            let phase = if p.measuring { "measuring" } else { "settling" };
            bar.set_message(format!("{head} | {phase} {:.0} q/s", p.events_per_s));
        })?;
        let rate = t.log_bytes_per_query.unwrap_or(0.0) * t.qps;
        self.log_rate[variant] = rate;
        self.log_growth += (rate * (plan.duration + plan.warmup).as_secs_f64()) as u64;
        Ok(t)
    }
}
