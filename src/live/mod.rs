//! `dbtax live`: what a feature costs on production's own traffic. No load of dbtax's: the
//! server's own clients are the workload. The feature is switched on and off in windows laid
//! out by `dbtax_stats::live::schedule` (an off and an on window side by side in a random
//! order, pairs in blocks, the share of time on capped), each window read from the server
//! alone (its work counter, its CPU, the feature log's bytes, the sessions running), and the
//! estimates are `dbtax_stats::live::estimate`'s. Where the server sums its statements per
//! shape with their time (performance_schema's digests, pg_stat_statements), each window
//! reads them too, for the latency added. Guards switch the feature off at once and end the
//! run: sessions running past `--guard` times what the off windows showed, statement time
//! past `--latency-guard` times the off windows' for the same shapes, an error rate past the
//! off windows' by `--error-guard`, the disk guard, Ctrl-C. Journal, run lock and
//! `dbtax restore` as for `run`.

use crate::error::usage;
use crate::experiment::prepare::open::open;
use crate::experiment::prepare::plan::Plan;
use crate::experiment::run::disk::DiskGuard;
use crate::experiment::spec::Experiment;
use crate::feature::toggle::Switcher;
use crate::server::{Server, ServerConfig, Support};
use crate::workload::{Workload, WorkloadKind};
use anyhow::{Context, Result};
use dbtax_stats::design::variants_for_features;
use dbtax_stats::live::{LiveResults, Reading, Slot, estimate, schedule};
use std::time::Duration;

mod guards;
mod watch;
mod windows;

use guards::fmt1;
use windows::windows;

/// How often the sessions running and the disk are read inside a window.
const POLL: Duration = Duration::from_millis(500);
/// A guard on sessions running trips on the mean of this many polls (a second's spike from a
/// neighbour is not production slowing down).
const GUARD_POLLS: usize = 4;
/// In an on window, the shapes' table is read every this many polls for the latency guard
/// (besides each window's start and end).
const SHAPES_EVERY: usize = 4;
/// The shapes compared: the busiest this many as the server was found.
const MAX_SHAPES: usize = 50;
/// The latency guard judges a stretch of an on window from this many statements on.
const GUARD_MIN_CALLS: f64 = 50.0;
/// The error guard judges a stretch of an on window from this many statements on.
const GUARD_MIN_WORK: f64 = 100.0;
/// How long a restore keeps reconnecting to a server that does not answer.
const RESTORE_PATIENCE: Duration = Duration::from_secs(40);

/// What `dbtax live` was asked.
#[derive(Debug, Clone)]
pub struct LiveSpec {
    /// The features, each switched alone against off.
    pub features: Vec<String>,
    /// The whole run (the windows it holds; the first window reading the server as found
    /// comes before).
    pub duration: Duration,
    /// One window, settle time included.
    pub window: Duration,
    /// Not measured after each switch.
    pub settle: Duration,
    /// The share of windows a feature may be on (all features together).
    pub max_on: f64,
    /// Sessions running during an on window past this many times the off windows' level
    /// switch the feature off and end the run.
    pub guard: f64,
    /// Statement time during an on window past this many times the off windows' for the
    /// same shapes does too.
    pub latency_guard: f64,
    /// And an error rate above the off windows' by more than this share.
    pub error_guard: f64,
    /// The schedule's seed.
    pub seed: u64,
    /// `--max-log-bytes`: the feature logs may grow by this much in all.
    pub max_log_bytes: Option<u64>,
    /// `--server-host`: the server's host read through a probe there.
    pub server_host: Option<(crate::agent::AgentSpec, crate::agent::AgentBin)>,
}

/// Everything decided before anything changes.
pub struct Prepared {
    server: Server,
    plan: Plan,
    slots: Vec<Slot>,
    notes: Vec<String>,
    cpu_read: bool,
    work: &'static str,
    /// Where statement times per shape are read, or why not.
    shapes: Support,
    /// Whether the server counts errors cheaply.
    errors_read: bool,
    /// Whether the server says which of its threads runs dbtax's session.
    own_task: bool,
}

impl Prepared {
    /// What results.json says of the server.
    pub fn target(&self) -> crate::results::TargetInfo {
        self.server.info()
    }

    /// The schedule, the signals and the guards, as the dry run and the confirmation say.
    pub fn describe(&self, spec: &LiveSpec) -> String {
        let on = self.slots.iter().filter(|s| s.feature.is_some()).count();
        let mut t = format!(
            "dbtax live on {} ({}): {} windows of {} s ({} s settle after each switch, not \
             measured), {} of them on ({} s on in all, at most {} s at a stretch), after one \
             window reading the server as found\n",
            self.server.label(),
            self.server.server_version,
            self.slots.len(),
            spec.window.as_secs_f64(),
            spec.settle.as_secs_f64(),
            on,
            on as f64 * spec.window.as_secs_f64(),
            spec.window.as_secs_f64()
        );
        let order: Vec<String> = self
            .slots
            .iter()
            .map(|s| match s.feature {
                None => "off".to_string(),
                Some(f) => spec.features[f].clone(),
            })
            .collect();
        t += &format!("  order: {}\n", order.join(" "));
        for (v, statements) in self
            .plan
            .variants
            .iter()
            .zip(&self.plan.statements.per_variant)
        {
            if v.features.is_empty() {
                continue;
            }
            t += &format!("  {} switches: {}\n", v.name, statements.join("; "));
        }
        t += &format!(
            "  signals: {} ({}), server CPU ({}), log bytes ({}), sessions running\n",
            self.work,
            if self.work == "statements" {
                "Questions"
            } else {
                "pg_stat_database's commits and rollbacks"
            },
            if self.cpu_read {
                "read where the server runs"
            } else {
                "not read: the server runs elsewhere; give --server-host"
            },
            if self.plan.log_files.paths.is_empty() {
                "no log file".to_string()
            } else {
                self.plan
                    .log_files
                    .paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        t += &match &self.shapes {
            Support::Yes(table) => format!(
                "  statement times per shape: {table}, read at each window's start and end \
                 (every {} s in an on window too, for the latency guard); the {MAX_SHAPES} \
                 busiest shapes as found are compared\n",
                SHAPES_EVERY as f64 * POLL.as_secs_f64()
            ),
            Support::No(why) => format!(
                "  statement times per shape: not read ({why}): no latency estimate and no \
                 latency guard\n"
            ),
        };
        t += &if self.errors_read {
            format!(
                "  errors: {}\n",
                if self.work == "statements" {
                    "statements in error (performance_schema's summary by statement kind)"
                } else {
                    "transactions rolled back (pg_stat_database)"
                }
            )
        } else {
            "  errors: not counted (performance_schema is off): no error guard\n".into()
        };
        t += &format!(
            "  what watching costs the server: {}\n",
            match (self.own_task, self.cpu_read) {
                (true, true) => "read from the server thread that runs dbtax's session",
                (false, true) => {
                    "not told which server thread runs dbtax's session (performance_schema \
                     is off): the polls' round trip is given as its bound"
                }
                _ => "the polls' round trip is given as its bound (the server's CPU is not read)",
            }
        );
        let mut guards = vec![format!(
            "sessions running in an on window above {}x the off windows' level (the mean of \
             {} polls {} ms apart)",
            spec.guard,
            GUARD_POLLS,
            POLL.as_millis()
        )];
        if matches!(self.shapes, Support::Yes(_)) {
            guards.push(format!(
                "statement time above {}x the off windows' for the same shapes (two reads in \
                 a row, {} s apart)",
                spec.latency_guard,
                SHAPES_EVERY as f64 * POLL.as_secs_f64()
            ));
        }
        if self.errors_read {
            guards.push(format!(
                "an error rate above the off windows' by more than {} points",
                fmt1(100.0 * spec.error_guard)
            ));
        }
        guards.push(format!(
            "the disk guard{}",
            spec.max_log_bytes
                .map(|b| format!(" (and --max-log-bytes {} MB)", b / 1_000_000))
                .unwrap_or_default()
        ));
        guards.push("Ctrl-C".into());
        t += &format!(
            "  guards: {}: each switches the feature off at once and ends the run\n",
            guards.join(", ")
        );
        for n in &self.notes {
            t += &format!("  note: {n}\n");
        }
        t
    }
}

/// Resolve the run against the server, changing nothing: the features checked as `run`
/// checks them, the schedule laid out, what only new sessions would see found out.
pub fn prepare(config: &ServerConfig, spec: &LiveSpec) -> Result<Prepared> {
    if config.spec.is_managed() {
        return Err(usage(
            "live measures a server you run, on its own traffic: give its --target (a \
             throwaway managed server has no traffic of its own; `dbtax run` brings a load). \
             Nothing was changed",
        ));
    }
    if spec.features.is_empty() {
        return Err(usage("live needs at least one --feature"));
    }
    if !(0.0..=0.5).contains(&spec.max_on) || spec.max_on <= 0.0 {
        return Err(usage(
            "--max-on is the share of the time a feature may be on: above 0 and at most 50% \
             (every on window has an off partner)",
        ));
    }
    if spec.settle >= spec.window {
        return Err(usage("--settle must be shorter than --window"));
    }
    let mut exp = Experiment::defaults();
    exp.name = "live".into();
    exp.variants = variants_for_features(&spec.features);
    exp.threads = vec![1];
    exp.server_host = spec.server_host.clone();
    exp.max_log_bytes = spec.max_log_bytes;
    exp.workload = Workload {
        kind: WorkloadKind::Query,
        queries: vec!["SELECT 1".into()],
        ..Workload::default()
    };
    let (server, plan) = open(&exp, config, None)?;
    if plan.restarts() {
        return Err(usage(
            "a feature here needs a server restart to switch: live never restarts production. \
             Nothing was changed",
        ));
    }
    let k = spec.features.len();
    let per_block = ((k as f64 / spec.max_on).ceil() as usize).max(2 * k);
    let windows = (spec.duration.as_secs_f64() / spec.window.as_secs_f64()).floor() as usize;
    let blocks = windows / per_block;
    if blocks < 3 {
        return Err(usage(format!(
            "--for {} s holds {windows} windows of {} s: at least {} are needed (3 blocks of \
             {per_block}: an off and an on window per feature{}). Give a longer --for or a \
             shorter --window",
            spec.duration.as_secs_f64(),
            spec.window.as_secs_f64(),
            3 * per_block,
            if per_block > 2 * k {
                ", and off windows for --max-on"
            } else {
                ""
            }
        )));
    }
    let slots = schedule(spec.seed, k, blocks, spec.max_on);
    // The plan's notes on the features and the server; not those of a run's load (its
    // blocks of trials, disturbances, where server and load run).
    let mut notes: Vec<String> = plan
        .notes
        .iter()
        .filter(|n| {
            !["blocks:", "disturbance:", "server and load"]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .cloned()
        .collect();
    let engine = server.engine().name;
    if engine == "mysql" && spec.features.iter().any(|f| f == "slow-log") {
        notes.push(
            "slow-log needs long_query_time = 0, which reaches only sessions opened after it \
             is set: a pool that never reconnects never pays it, and the figure is what the \
             sessions that reconnect during the run pay"
                .into(),
        );
    }
    let work = if engine == "postgres" {
        notes.push(
            "PostgreSQL counts transactions, not statements, across every database: the \
             costs are per transaction"
                .into(),
        );
        "transactions"
    } else {
        "statements"
    };
    let cpu_read = server.server_pid.is_some();
    let mut admin = server.admin()?;
    let shapes = admin.shapes_offered()?;
    if engine == "postgres" && matches!(shapes, Support::Yes(_)) {
        notes.push(
            "pg_stat_statements times a statement's execution: a line a feature writes to \
             the log as the statement arrives (log_statement) or ends \
             (log_min_duration_statement) is outside it, so the latency added is what the \
             feature does to execution, not all that a client waits; the server CPU added \
             counts the writing"
                .into(),
        );
    }
    let errors_read = admin.traffic()?.errors.is_some();
    let own_task = admin.own_task()?.is_some();
    drop(admin);
    Ok(Prepared {
        server,
        plan,
        slots,
        notes,
        cpu_read,
        work,
        shapes,
        errors_read,
        own_task,
    })
}

/// The run: switch, watch, estimate, put back. `status`: progress lines. Ctrl-C ends it
/// early: the feature switched off and every setting put back, then the interruption is
/// returned after what was measured.
pub fn run(
    prepared: Prepared,
    spec: &LiveSpec,
    status: &mut dyn FnMut(&str),
) -> Result<(LiveResults, Option<anyhow::Error>)> {
    let Prepared {
        mut server,
        plan,
        slots,
        notes,
        cpu_read,
        work,
        shapes,
        ..
    } = prepared;
    let started_at = crate::host::now_rfc3339();
    let mut switcher = Switcher::lock(&server, &started_at)?;
    // dbtax's schema, where the server keeps its copy of the journal.
    server.prepare(
        &Workload {
            kind: WorkloadKind::Query,
            queries: vec!["SELECT 1".into()],
            ..Workload::default()
        },
        &mut |_| {},
    )?;
    switcher.stamp(&mut server)?;
    switcher.begin(&plan.switches)?;
    let mut watch = server.admin()?;
    watch.quiet();
    let disk = DiskGuard {
        files: plan.log_files.clone(),
        max_bytes: spec.max_log_bytes,
    };
    let mut out = LiveResults {
        features: spec.features.clone(),
        slots: slots.clone(),
        work: work.into(),
        cpu_read,
        notes,
        shapes_read: matches!(shapes, Support::Yes(_)),
        shapes_source: match shapes {
            Support::Yes(t) | Support::No(t) => t,
        },
        ..Default::default()
    };
    let outcome = windows(
        &server,
        (&mut switcher, &plan, &disk),
        watch.as_mut(),
        spec,
        &mut out,
        status,
    );
    drop(watch);
    let restored = switcher
        .restore_with_retry(&server, RESTORE_PATIENCE)
        .context("the live run ended; putting the settings back");
    let ended = match (outcome, restored) {
        (Ok(()), Ok(())) => None,
        (Err(e), Ok(())) => Some(e),
        (_, Err(e)) => return Err(e),
    };
    let reading = Reading::default();
    out.estimates = (0..spec.features.len())
        .map(|f| {
            let mut e = estimate(&out.slots, &out.windows, f, reading);
            if !cpu_read {
                e.cpu_us_per_statement = None;
                e.cpu_pct = None;
                e.cores = None;
            }
            e
        })
        .collect();
    dbtax_stats::live::judge(
        &mut out.estimates,
        dbtax_stats::intervals::verdict::NEGLIGIBLE_PCT,
    );
    Ok((out, ended))
}
