//! The real server behind the runner's `Bench`: switch with the journaled `Switcher`, restart
//! for restart-only settings, guard the disk, truncate the feature logs on managed targets,
//! and run trials with the load generator.

use super::plan::{Plan, Restarter};
use super::runner::{Bench, Observer};
use crate::feature::toggle::Switcher;
use crate::load::{TrialPlan, TrialProbes, run_trial};
use crate::results::Trial;
use crate::server::Server;
use crate::workload::PreparedWorkload;
use anyhow::{Result, bail};
use std::time::Duration;

/// Refuse to let the log's filesystem fall under this share of free space.
const MIN_FREE_FRACTION: f64 = 0.10;
/// Settle at least this long after a restart (the buffer pool reloads, caches are cold).
const SETTLE_AFTER_RESTART: Duration = Duration::from_secs(3);

/// A real server, switched between variants as its Plan says.
pub struct LiveBench<'a> {
    server: &'a mut Server,
    workload: &'a PreparedWorkload,
    plan: &'a Plan,
    /// Journaled switching.
    pub switcher: Switcher,
    current_opts: Vec<String>,
    trial: TrialPlan,
    max_log_bytes: Option<u64>,
    log_growth: u64,
    log_rate: Vec<f64>,
    cold: bool,
}

impl<'a> LiveBench<'a> {
    /// A bench over a begun switcher. `trial.threads` is set per trial.
    pub fn new(
        server: &'a mut Server,
        workload: &'a PreparedWorkload,
        plan: &'a Plan,
        switcher: Switcher,
        trial: TrialPlan,
        max_log_bytes: Option<u64>,
    ) -> Self {
        LiveBench {
            server,
            workload,
            plan,
            switcher,
            current_opts: vec![],
            trial,
            max_log_bytes,
            log_growth: 0,
            log_rate: vec![0.0; plan.variants.len()],
            cold: false,
        }
    }

    fn restart(&mut self, opts: &[String]) -> Result<()> {
        match &self.plan.restarter {
            Restarter::Managed => self.server.restart_managed(opts)?,
            Restarter::Command(cmd) => self.server.restart_with_command(cmd, opts)?,
            Restarter::None => bail!("a variant needs a restart, and no way to restart was given"),
        }
        self.current_opts = opts.to_vec();
        self.switcher.after_restart(self.server)?;
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
        let span = self.trial.duration + self.trial.warmup;
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
        for f in &self.plan.log_files {
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
    fn apply(&mut self, variant: usize, observer: &mut dyn Observer) -> Result<()> {
        let v = &self.plan.variants[variant];
        if v.server_opts != self.current_opts {
            let opts = v.server_opts.clone();
            observer.status(&format!("restarting the server with {opts:?}"));
            self.restart(&opts)?;
        }
        self.switcher.apply(&self.plan.variants[variant].state)
    }

    fn trial(
        &mut self,
        variant: usize,
        threads: u32,
        observer: &mut dyn Observer,
    ) -> Result<Trial> {
        self.guard_disk(variant)?;
        if self.server.is_managed() {
            // The server is ours and thrown away: keep its logs from filling the disk.
            for f in &self.plan.log_files {
                if let Ok(file) = std::fs::OpenOptions::new().write(true).open(f) {
                    let _ = file.set_len(0);
                }
            }
        }
        let mut plan = self.trial.clone();
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
                    self.server,
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
            log_files: self.plan.log_files.clone(),
            server_status: true,
        };
        let t = run_trial(self.server, self.workload, &plan, &probes, &mut |p| {
            observer.trial_progress(p)
        })?;
        let rate = t.log_bytes_per_query.unwrap_or(0.0) * t.qps;
        self.log_rate[variant] = rate;
        self.log_growth += (rate * (plan.duration + plan.warmup).as_secs_f64()) as u64;
        Ok(t)
    }
}
