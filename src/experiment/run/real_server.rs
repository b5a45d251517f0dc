//! The real server behind the runner's `Bench`: switch with the journaled `Switcher`, restart
//! for restart-only settings, guard the disk (`disk`), truncate the feature logs on managed
//! targets, and run trials with the run's `Load` (this process, or the agents).

use crate::experiment::prepare::plan::{Plan, Restarter};
use crate::experiment::run::disk::DiskGuard;
use crate::feature::toggle::Switcher;
use crate::load::{Load, Target, TrialPlan, TrialProbes};
use crate::results::Trial;
use crate::server::Server;
use crate::workload::PreparedWorkload;
use anyhow::{Result, bail};
use dbtax_stats::run::{Bench, LoadPoint, Observer};
use std::time::Duration;

/// The probe that measures a variant's log rate before its first trial.
const PROBE: Duration = Duration::from_millis(300);
/// How long a restore keeps reconnecting to a server that does not answer (an attempt
/// that could not end by then is not started: 20 s of it at most are spent on attempts).
const RESTORE_PATIENCE: Duration = Duration::from_secs(40);
/// Settle at least this long after a restart (the buffer pool reloads, caches are cold).
const SETTLE_AFTER_RESTART: Duration = Duration::from_secs(3);

/// A real server, switched between variants as its Plan says.
pub struct LiveBench<'a> {
    server: &'a mut Server,
    workload: &'a PreparedWorkload,
    plan: &'a Plan,
    load: &'a mut dyn Load,
    /// Journaled switching.
    pub switcher: Switcher,
    current_opts: Vec<String>,
    trial: TrialPlan,
    disk: DiskGuard,
    /// Log bytes the run has written so far.
    log_growth: u64,
    /// Per variant, from its last trial (or probe): (log bytes per query, queries per second).
    log_rate: Vec<Option<(f64, f64)>>,
    cold: bool,
}

impl<'a> LiveBench<'a> {
    /// A bench over a begun switcher, its trials made by `load`. `trial.threads` is set per
    /// trial.
    pub fn new(
        (server, workload, plan): (&'a mut Server, &'a PreparedWorkload, &'a Plan),
        load: &'a mut dyn Load,
        switcher: Switcher,
        trial: TrialPlan,
        max_log_bytes: Option<u64>,
    ) -> Self {
        LiveBench {
            server,
            workload,
            plan,
            load,
            switcher,
            current_opts: vec![],
            trial,
            disk: DiskGuard {
                files: plan.log_files.clone(),
                max_bytes: max_log_bytes,
            },
            log_growth: 0,
            log_rate: vec![None; plan.variants.len()],
            cold: false,
        }
    }

    /// The admin connection failed: when the server still answers a new connection, it
    /// was that connection that was killed (by a session with the privilege to), not the
    /// server that went away; the words say so. The run stops either way (the run lock went
    /// with it) and its settings are put back.
    fn killed_or_lost(&self, e: anyhow::Error) -> anyhow::Error {
        if crate::error::server_gone(&e) && self.server.admin().is_ok() {
            return anyhow::anyhow!(
                "dbtax's admin connection to {} was killed (the server still answers): a \
                 session with the privilege to end other sessions did it, and the run lock \
                 went with it, so the run stops ({e:#})",
                self.server.label()
            );
        }
        e
    }

    fn restart(&mut self, opts: &[String]) -> Result<()> {
        let cmd = match &self.plan.restarter {
            Restarter::Command(cmd) => Some(cmd.as_str()),
            _ => None,
        };
        self.switcher.note_restart(opts, cmd)?;
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
        if self.server.is_managed() {
            // dbtax's own server is thrown away: nothing to put back if it died.
            let _ = self.switcher.restore();
            return Ok(());
        }
        let restored = self
            .switcher
            .restore_with_retry(self.server, RESTORE_PATIENCE);
        restarted.and(restored)
    }

    /// One trial of the run's load, as `plan` says.
    fn load_trial(
        &mut self,
        plan: &TrialPlan,
        probes: &TrialProbes,
        on_tick: &mut dyn FnMut(&crate::load::TrialProgress),
    ) -> Result<Trial> {
        let target = Target {
            server: self.server,
            workload: self.workload,
        };
        self.load.run_trial(&target, plan, probes, on_tick)
    }

    /// Stop before a trial that would fill the log's disk or pass --max-log-bytes. A variant
    /// not measured yet is probed first, with its settings on.
    fn guard_disk(&mut self, variant: usize, threads: u32) -> Result<()> {
        if self.disk.files.paths.is_empty() {
            return Ok(());
        }
        if self.log_rate[variant].is_none() {
            let probes = TrialProbes {
                log_files: self.disk.files.paths.clone(),
                watch: self.disk.watch(self.log_growth)?,
                ..Default::default()
            };
            let t = self.load_trial(&TrialPlan::timed(threads, PROBE), &probes, &mut |_| {})?;
            self.account(variant, &t);
        }
        let (bytes_per_query, qps) = self.log_rate[variant].unwrap_or_default();
        let queries = match self.trial.queries {
            Some(n) => n as f64,
            None => qps * (self.trial.duration + self.trial.warmup).as_secs_f64(),
        };
        match self
            .disk
            .check(self.log_growth, (bytes_per_query * queries) as u64)?
        {
            Some(why) => bail!("{why}"),
            None => Ok(()),
        }
    }

    /// Record a trial's log rate and add its log to the run's growth.
    fn account(&mut self, variant: usize, t: &Trial) {
        let bytes_per_query = t.log_bytes_per_query.unwrap_or(0.0);
        self.log_rate[variant] = Some((bytes_per_query, t.qps));
        let queries = t.qps * (t.duration_s + self.trial.warmup.as_secs_f64());
        self.log_growth += (bytes_per_query * queries) as u64;
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
        if let Err(e) = self.switcher.apply(&v.state, &v.plugins) {
            return Err(self.killed_or_lost(e));
        }
        if !v.plugins.is_empty() {
            // A switched plugin's log file is known once it is loaded.
            self.disk.files.refresh(self.server)?;
        }
        Ok(())
    }

    fn trial(
        &mut self,
        variant: usize,
        load: &LoadPoint,
        observer: &mut dyn Observer,
    ) -> Result<Trial> {
        let mut plan = self.trial.clone();
        plan.threads = load.threads;
        plan.rate = load.rate;
        self.run(variant, plan, observer)
    }

    fn after_late_reading(&mut self, observer: &mut dyn Observer) -> Result<()> {
        // The first variant is the baseline: every feature off, the logs no longer written.
        self.apply(0, observer)?;
        observer.status(&format!(
            "the features are off; waiting for the probe on {} to answer",
            self.server.host.0.label()
        ));
        self.server.host.0.answering()
    }

    fn calibrate(&mut self, threads: u32, observer: &mut dyn Observer) -> Result<Trial> {
        let plan = TrialPlan {
            threads,
            ..self.trial.calibration()
        };
        self.run(0, plan, observer)
    }
}

impl LiveBench<'_> {
    /// One trial of the current variant (`variant`, for the disk guard's accounting).
    fn run(
        &mut self,
        variant: usize,
        mut plan: TrialPlan,
        observer: &mut dyn Observer,
    ) -> Result<Trial> {
        let threads = plan.threads;
        self.guard_disk(variant, threads)?;
        if self.server.is_managed() {
            // The server is ours and thrown away: keep its logs from filling the disk.
            for f in &self.disk.files.paths {
                if let Ok(file) = std::fs::OpenOptions::new().write(true).open(f) {
                    let _ = file.set_len(0);
                }
            }
        }
        if std::mem::take(&mut self.cold) {
            if plan.queries.is_some() {
                // Fixed-count trials have no settle phase: settle here, with the load.
                // A plain timed run of the settle length; its numbers are discarded.
                let warm = TrialPlan::timed(threads, SETTLE_AFTER_RESTART);
                self.load_trial(&warm, &TrialProbes::default(), &mut |_| {})?;
            } else {
                plan.warmup = plan.warmup.max(SETTLE_AFTER_RESTART);
            }
        }
        let probes = TrialProbes {
            log_files: self.disk.files.paths.clone(),
            server_status: true,
            watch: self.disk.watch(self.log_growth)?,
            host_others: true,
            ..Default::default()
        };
        let t = self.load_trial(&plan, &probes, &mut |p| observer.trial_progress(p))?;
        self.account(variant, &t);
        Ok(t)
    }
}
