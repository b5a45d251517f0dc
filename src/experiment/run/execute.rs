//! One experiment on one server, start to end: open and make ready
//! ([`crate::experiment::prepare::open`]), choose the load (this process, or the agents), run
//! the blocks (`dbtax_stats::run` over [`super::real_server`]), restore, and write results.json
//! after every block ([`super::record`]) and the reports at the end. Presentation
//! is the caller's: it passes the live display in as an `Observer` and prints what `execute`
//! returns.

use crate::experiment::prepare::open::{Ready, open};
use crate::experiment::run::real_server::LiveBench;
use crate::experiment::run::record::{Recorder, write_final};
use crate::experiment::spec::{Experiment, RunOptions};
use crate::load::{Load, LocalLoad, TrialPlan};
use crate::results::Results;
use crate::server::ServerConfig;
use anyhow::Result;
use dbtax_stats::run::{self as runner, Observer};
use std::path::PathBuf;

/// What a run left behind.
#[derive(Debug)]
pub struct Executed {
    /// The results, complete or not.
    pub results: Results,
    /// The folder results.json (and the reports) went to.
    pub dir: PathBuf,
    /// Whether report.html, results.csv and charts/ were written (not for a run with no
    /// completed trial).
    pub reports_written: bool,
    /// Why the run stopped early (an error or an interrupt), after settings were restored
    /// and partial results written.
    pub error: Option<anyhow::Error>,
}

/// The trial every block runs, before its thread count and rate are set.
pub(super) fn trial_plan(exp: &Experiment, opts: &RunOptions) -> TrialPlan {
    TrialPlan {
        warmup: exp.warmup,
        queries: exp.queries_per_trial,
        client_threads: opts.client_threads,
        ..TrialPlan::timed(1, exp.trial)
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
    crate::experiment::install_hooks();
    let opened = open(exp, config, opts.restart_cmd.as_deref())?;
    let agents = crate::agent::start(&opts.agents, &opened.0, &mut |m| display.status(m))?;
    let mut load: Box<dyn Load> = match agents {
        Some(pool) => Box::new(pool),
        None => Box::new(LocalLoad),
    };
    let Ready {
        mut server,
        plan,
        prepared,
        switcher,
        mut results,
        dir,
    } = Ready::new(exp, opened, opts, load.as_mut(), display)?;
    let mut bench = LiveBench::new(
        (&mut server, &prepared, &plan),
        load.as_mut(),
        switcher,
        trial_plan(exp, opts),
        exp.max_log_bytes,
    );
    let mut recorder = Recorder {
        runs: vec![(&mut results, &dir)],
        sides: None,
        display,
    };
    recorder.write()?;
    let outcome = if exp.slo.is_empty() {
        runner::run(&exp.design(), &mut bench, &mut recorder)
    } else {
        // results.json rewritten after every measured block (the recorder's `capacities`).
        dbtax_stats::run::capacity::search(&exp.design(), &mut bench, &mut recorder).map(|c| {
            runner::Outcome {
                capacity: c,
                ..Default::default()
            }
        })
    };
    let restored = bench.finish();
    drop(bench);
    results.warnings.extend(prepare_refused(&prepared));
    conclude(outcome, restored, results, dir)
}

/// A replay whose prepared statements the server refused to prepare (they ran as text),
/// in words.
fn prepare_refused(prepared: &crate::workload::PreparedWorkload) -> Option<String> {
    let slice = prepared.workload.slice.0.as_ref()?;
    let n = slice
        .prepare_refused
        .load(std::sync::atomic::Ordering::Relaxed);
    (n > 0).then(|| {
        format!(
            "the server refused {n} preparations of the log's prepared statements on the \
             replay's connections (max_prepared_stmt_count, or a statement it cannot prepare): \
             those executions were sent as their text"
        )
    })
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
            results.capacity = o.capacity;
            if let Some(r) = results.rate.as_mut() {
                r.calibration = o.calibration;
            }
            results.analysis = o.analysis;
            results
                .warnings
                .extend(o.warnings.iter().map(|w| w.to_string()));
            results.complete = true;
            None
        }
        Err(e) => Some(e),
    };
    results.bill = crate::stats::bill::bills(&results);
    // Agents on this machine: `local`, or one whose host name is this one's.
    let here_name = crate::host::hostname();
    let here: Vec<String> = results
        .agents
        .iter()
        .filter(|a| a.host == "local" || a.hostname == here_name)
        .map(|a| a.host.clone())
        .collect();
    results.warnings.extend(
        dbtax_stats::design::warnings::refused_as_writes(&results.cells).map(|w| w.to_string()),
    );
    // Pinned, the clients' CPU is not the server's: nothing to warn of.
    if !results.pinned {
        results.warnings.extend(
            dbtax_stats::design::warnings::client_cpu(&results.cells, results.host.cores, &here)
                .map(|w| w.to_string()),
        );
    }
    let reports_written = write_final(&dir, &results)?;
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
