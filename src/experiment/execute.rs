//! One experiment on one server, start to end: open the server, resolve the Plan (and stop
//! there for a dry run), prepare the tables, journal, run, restore, and write results.json
//! after every block and the reports at the end. Presentation is the caller's: it passes the
//! live display in as an `Observer` and prints what `execute` returns.

use super::live::LiveBench;
use super::pair::split_cells;
use super::plan::Plan;
use super::preflight::{log_files, preflight};
use super::runner::{self, BlockDone, Observer};
use super::spec::Experiment;
use crate::feature::toggle::Switcher;
use crate::load::{TrialPlan, TrialProgress};
use crate::results::{RateRun, Results, SCHEMA, ToolInfo, VariantInfo};
use crate::server::{Server, ServerConfig};
use crate::workload::PreparedWorkload;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How to carry out a run (not what it measures).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Results folder (default: ./dbtax-results/<time>-<name>/).
    pub out: Option<PathBuf>,
    /// Print the plan, change nothing.
    pub dry_run: bool,
    /// results.json on stdout, nothing else there.
    pub json: bool,
    /// A command that restarts the user's server with $DBTAX_SERVER_OPTS.
    pub restart_cmd: Option<String>,
    /// `--agent-bin`: the agents' binary, or `copy`.
    pub agent_bin: Option<String>,
    /// `--agent-target`: the server's URL as the agents reach it.
    pub agent_target: Option<String>,
}

/// What a run left behind.
#[derive(Debug)]
pub struct Executed {
    /// The results, complete or not.
    pub results: Results,
    /// The folder results.json (and the reports) went to.
    pub dir: PathBuf,
    /// Whether report.html, results.csv and charts/ were written (not for a run with no
    /// completed block).
    pub reports_written: bool,
    /// Why the run stopped early (an error or an interrupt), after settings were restored
    /// and partial results written.
    pub error: Option<anyhow::Error>,
}

/// Open the server and resolve the experiment against it. Changes nothing on the server (a
/// managed one is started, with the options the features need).
pub fn open(exp: &Experiment, config: &ServerConfig, opts: &RunOptions) -> Result<(Server, Plan)> {
    let mut config = config.clone();
    config
        .managed
        .server_opts
        .extend(exp.managed_server_opts.iter().cloned());
    let features: Vec<&str> = exp
        .variants
        .iter()
        .flat_map(|v| &v.features)
        .map(String::as_str)
        .collect();
    let server = Server::open(&config, &features)?;
    let plan = preflight(exp, &server, opts.restart_cmd.as_deref())?;
    Ok((server, plan))
}

/// The dry run: the plan and its statements as text. Changes nothing.
pub fn dry_run(exp: &Experiment, config: &ServerConfig, opts: &RunOptions) -> Result<String> {
    let (server, plan) = open(exp, config, opts)?;
    super::dry_run::render(exp, &server.label(), &server.server_version, &plan)
}

/// A server made ready for trials: opened, resolved, locked, its tables prepared, its
/// journal begun, results.json's header filled in.
pub(super) struct Ready {
    pub(super) server: Server,
    pub(super) plan: Plan,
    pub(super) prepared: PreparedWorkload,
    pub(super) switcher: Switcher,
    pub(super) results: Results,
    pub(super) dir: PathBuf,
}

impl Ready {
    /// Everything before the first trial. Err: nothing was changed (bad input, an
    /// unreachable server, another run holding it) or what was begun is restored.
    pub(super) fn new(
        exp: &Experiment,
        (server, mut plan): (Server, Plan),
        opts: &RunOptions,
        agents: Option<&crate::agent::Agents>,
        display: &mut dyn Observer,
    ) -> Result<Ready> {
        let rates = exp
            .open_loop
            .as_ref()
            .map(|o| {
                let l: Vec<String> = o.levels.iter().map(|l| l.label()).collect();
                format!(" × rates {}", l.join(","))
            })
            .unwrap_or_default();
        display.status(&format!(
            "dbtax run '{}' on {} ({}): {} variants × threads {:?}{rates}",
            exp.name,
            server.label(),
            server.server_version,
            exp.variants.len(),
            exp.threads
        ));
        for n in &plan.notes {
            display.status(&format!("  note: {n}"));
        }
        // A bad --out is bad input: fail on it before anything on the server changes.
        let dir = out_dir(opts.out.as_deref(), &exp.name)?;
        let started_at = crate::host::now_rfc3339();
        // One run per server: the lock is taken before the tables are prepared.
        let mut switcher = Switcher::lock(&server, &started_at)?;
        let prepared = server.prepare(&exp.workload, &mut |m| display.status(m))?;
        if let Some(agents) = agents {
            // Every agent reaches the server before any setting changes.
            display.status("checking that every agent reaches the server");
            crate::agent::lock(agents).check(&prepared)?;
        }
        if prepared.created.contains(&true) {
            wait_until_quiet(&server, display);
        }
        switcher.begin(
            &plan.plugins,
            &plan.switched_plugins,
            &plan.touched,
            &plan.plugin_vars,
        )?;
        let originals = switcher.originals();
        if plan.log_files.len() < plan.log_file_vars.len() {
            plan.log_files = log_files(server.admin()?.as_mut(), &server, &plan.log_file_vars)?;
        }
        let mut results = header(exp, &server, &plan, &originals, started_at);
        results.workload = prepared.to_json();
        if let Some(agents) = agents {
            results.agents = crate::agent::lock(agents).info();
        }
        Ok(Ready {
            server,
            plan,
            prepared,
            switcher,
            results,
            dir,
        })
    }
}

pub(super) fn trial_plan(exp: &Experiment) -> TrialPlan {
    TrialPlan {
        threads: 1,
        duration: exp.trial,
        warmup: exp.warmup,
        queries: exp.queries_per_trial,
        rate: None,
        agents: None,
    }
}

/// Run an experiment on the server. Err: nothing ran (bad input, unreachable server...);
/// Ok: results exist, with `error` set when the run stopped early.
pub fn execute(
    exp: &Experiment,
    config: &ServerConfig,
    opts: &RunOptions,
    display: &mut dyn Observer,
) -> Result<Executed> {
    let agents;
    let Ready {
        mut server,
        plan,
        prepared,
        switcher,
        mut results,
        dir,
    } = {
        let opened = open(exp, config, opts)?;
        agents = crate::agent::start(
            &crate::agent::AgentOptions::new(
                &exp.agents,
                opts.agent_bin.clone(),
                opts.agent_target.clone(),
            )?,
            &opened.0,
            &mut |m| display.status(m),
        )?;
        Ready::new(exp, opened, opts, agents.as_ref(), display)?
    };
    let mut trial = trial_plan(exp);
    trial.agents = agents.clone();
    let mut bench = LiveBench::new(
        &mut server,
        &prepared,
        &plan,
        switcher,
        trial,
        exp.max_log_bytes,
    );
    let mut recorder = Recorder {
        runs: vec![(&mut results, &dir)],
        display,
    };
    recorder.write()?;
    let outcome = runner::run(exp, &mut bench, &mut recorder);
    let restored = bench.finish();
    drop(bench);
    conclude(outcome, restored, results, dir)
}

/// After the loop: the results completed (or marked incomplete with the error), written
/// with their reports. A failed restore is the error, after the run's own.
pub(super) fn conclude(
    outcome: Result<runner::Outcome>,
    restored: Result<()>,
    mut results: Results,
    dir: PathBuf,
) -> Result<Executed> {
    let error = match outcome {
        Ok(o) => {
            results.cells = o.cells;
            results.carry_over_pct = o.carry_over_pct;
            if let Some(r) = results.rate.as_mut() {
                r.calibration = o.calibration;
            }
            results.intervals = o.intervals;
            results
                .warnings
                .extend(o.warnings.iter().map(|w| w.to_string()));
            results.complete = true;
            None
        }
        Err(e) => Some(e),
    };
    // Agents on this machine: `local`, or one whose host name is this one's.
    let here_name = crate::host::hostname();
    let here: Vec<String> = results
        .agents
        .iter()
        .filter(|a| a.host == "local" || a.hostname == here_name)
        .map(|a| a.host.clone())
        .collect();
    results.warnings.extend(
        super::warnings::client_cpu(&results.cells, results.host.cores, &here)
            .map(|w| w.to_string()),
    );
    write_results(&dir, &results)?;
    let reports_written = !results.cells.iter().all(|c| c.trials.is_empty());
    if reports_written {
        crate::report::write_all(&dir, &results)?;
    }
    if let Err(restore_error) = restored {
        // Say what happened first (the run's own error), then that the restore failed.
        return Err(match error {
            Some(e) => anyhow::anyhow!("{e:#}; then {restore_error:#}"),
            None => restore_error.context("restoring the server's settings"),
        });
    }
    Ok(Executed {
        results,
        dir,
        reports_written,
        error,
    })
}

/// After filling tables the server still works (purge, flushing dirty pages): wait until its
/// CPU stays under a tenth of a core for two half-second windows (at most 30 s), so the
/// first trials do not meet a busy server. Only when its process is on this machine.
fn wait_until_quiet(server: &Server, display: &mut dyn Observer) {
    let Some(mut last) = server.server_cpu_us() else {
        return;
    };
    display.status("waiting for the server to go quiet after preparing the tables");
    let window = std::time::Duration::from_millis(500);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut quiet = 0;
    while quiet < 2 && std::time::Instant::now() < deadline && crate::interrupt::sleep(window) {
        let Some(now) = server.server_cpu_us() else {
            return;
        };
        let busy = now.saturating_sub(last) as f64 / window.as_micros() as f64;
        quiet = if busy < 0.1 { quiet + 1 } else { 0 };
        last = now;
    }
}

/// results.json before the first trial: what is measured, on what, with which settings.
fn header(
    exp: &Experiment,
    server: &Server,
    plan: &Plan,
    originals: &BTreeMap<String, String>,
    started_at: String,
) -> Results {
    let mut target = server.info();
    target.variables = plan
        .relevant
        .clone()
        .into_iter()
        .chain(originals.clone())
        .collect();
    Results {
        schema: SCHEMA.into(),
        name: exp.name.clone(),
        tool: ToolInfo {
            version: env!("CARGO_PKG_VERSION").into(),
        },
        command: crate::server::url::redacted_argv(),
        started_at,
        complete: false,
        target,
        host: crate::host::host_info(),
        workload: exp.workload.to_json(),
        trial_s: exp.trial.as_secs_f64(),
        warmup_s: exp.warmup.as_secs_f64(),
        queries_per_trial: exp.queries_per_trial,
        seed: exp.seed,
        paired_with: None,
        headline_threads: exp.headline_threads(),
        variants: variant_infos(plan, originals),
        cells: vec![],
        warnings: vec![],
        carry_over_pct: None,
        intervals: 0,
        agents: vec![],
        rate: exp.open_loop.as_ref().map(|o| RateRun {
            levels: o.levels.iter().map(|l| l.label()).collect(),
            arrival: o.arrival.name().into(),
            skip_late_ms: o.skip_late.map(|d| d.as_secs_f64() * 1000.0),
            calibration: vec![],
        }),
    }
}

fn variant_infos(plan: &Plan, originals: &BTreeMap<String, String>) -> Vec<VariantInfo> {
    plan.variants
        .iter()
        .map(|v| VariantInfo {
            name: v.name.clone(),
            feature: v.features.first().cloned(),
            baseline: plan.variants[v.baseline].name.clone(),
            server_opts: v.server_opts.clone(),
            plugins: v.plugins.iter().map(|p| p.soname.to_string()).collect(),
            settings: v
                .state
                .iter()
                .map(|(k, val)| {
                    (
                        k.clone(),
                        val.clone()
                            .or_else(|| originals.get(k).cloned())
                            .unwrap_or_default(),
                    )
                })
                .collect(),
        })
        .collect()
}

fn out_dir(explicit: Option<&Path>, name: &str) -> Result<PathBuf> {
    let dir = match explicit {
        Some(d) => d.to_path_buf(),
        None => {
            let stamp: String = crate::host::now_rfc3339()
                .chars()
                .filter(|c| c.is_ascii_digit())
                .take(14)
                .collect();
            PathBuf::from("dbtax-results").join(format!("{}-{}-{name}", &stamp[..8], &stamp[8..]))
        }
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| crate::error::usage(format!("cannot create --out {}: {e}", dir.display())))?;
    Ok(dir)
}

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
    pub(super) runs: Vec<(&'a mut Results, &'a PathBuf)>,
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
        // One run: every cell is side A's (variant names have no ':'), under its own name.
        for ((results, _), cells) in self.runs.iter_mut().zip(split_cells(block.cells)) {
            results.cells = cells;
            if let Some(r) = results.rate.as_mut() {
                r.calibration = block.calibration.to_vec();
            }
        }
        self.write()?;
        self.display.block_done(block)
    }
}
