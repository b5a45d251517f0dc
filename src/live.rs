//! `dbtax live`: what a feature costs on production's own traffic. No load of dbtax's: the
//! server's own clients are the workload. The feature is switched on and off in windows laid
//! out by `dbtax_stats::live::schedule` (an off and an on window side by side in a random
//! order, pairs in blocks, the share of time on capped), each window read from the server
//! alone (its work counter, its CPU, the feature log's bytes, the sessions running), and the
//! estimates are `dbtax_stats::live::estimate`'s. Guards switch the feature off at once and
//! end the run: sessions running past `--guard` times what the off windows showed, the disk
//! guard, Ctrl-C. Journal, run lock and `dbtax restore` as for `run`.

use crate::error::usage;
use crate::experiment::prepare::open::open;
use crate::experiment::prepare::plan::Plan;
use crate::experiment::run::disk::DiskGuard;
use crate::experiment::spec::Experiment;
use crate::feature::toggle::Switcher;
use crate::server::{Server, ServerConfig};
use crate::workload::{Workload, WorkloadKind};
use anyhow::{Context, Result};
use dbtax_stats::design::variants_for_features;
use dbtax_stats::live::{LiveResults, Reading, Slot, Window, estimate, schedule};
use std::time::{Duration, Instant};

/// How often the sessions running and the disk are read inside a window.
const POLL: Duration = Duration::from_millis(500);
/// A guard on sessions running trips on the mean of this many polls (a second's spike from a
/// neighbour is not production slowing down).
const GUARD_POLLS: usize = 4;
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
}

impl Prepared {
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
        t += "  not read by this version: statement latencies per shape (performance_schema's \
              digests, pg_stat_statements) and the error rate: no latency estimate and no \
              latency guard\n";
        t += &format!(
            "  guards: sessions running in an on window above {}x the off windows' level \
             (the mean of {} polls {} ms apart), the disk guard{}, Ctrl-C: each switches the \
             feature off at once and ends the run\n",
            spec.guard,
            GUARD_POLLS,
            POLL.as_millis(),
            spec.max_log_bytes
                .map(|b| format!(" (and --max-log-bytes {} MB)", b / 1_000_000))
                .unwrap_or_default()
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
    let mut notes = plan.notes.clone();
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
    Ok(Prepared {
        server,
        plan,
        slots,
        notes,
        cpu_read,
        work,
    })
}

/// One reading of the server.
#[derive(Clone, Copy)]
struct Snap {
    at: Instant,
    work: f64,
    cpu_us: Option<u64>,
    log: u64,
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
    Ok((out, ended))
}

/// The windows, in the schedule's order, after one reading the server as found. Ok: every
/// window ran; Err: a guard tripped (its words are in `out.guard_tripped` too), Ctrl-C, or a
/// failure. The feature is off when it returns.
fn windows(
    server: &Server,
    (switcher, plan, disk): (&mut Switcher, &Plan, &DiskGuard),
    watch: &mut dyn crate::server::Admin,
    spec: &LiveSpec,
    out: &mut LiveResults,
    status: &mut dyn FnMut(&str),
) -> Result<()> {
    let began = Instant::now();
    // dbtax's own polls: how many, and their round trips in all, µs.
    let polls = std::cell::Cell::new((0u64, 0f64));
    let read_running =
        |watch: &mut dyn crate::server::Admin| -> Result<crate::server::admin::Traffic> {
            let t = Instant::now();
            let r = watch.traffic()?;
            let (n, us) = polls.get();
            polls.set((n + 1, us + t.elapsed().as_secs_f64() * 1e6));
            Ok(r)
        };
    let mut ask = server.cpu_ask();
    ask.files = disk
        .files
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let snap = |work: f64| -> Result<Snap> {
        let r = server.host.read(&ask)?;
        Ok(Snap {
            at: Instant::now(),
            work,
            cpu_us: r.server_cpu.map(|c| c.ticks_us),
            log: r.sizes.iter().map(|s| s.unwrap_or(0)).sum(),
        })
    };
    // The server as found: the sessions running before anything is switched.
    status(&format!(
        "reading {} as found for {} s",
        server.label(),
        spec.window.as_secs_f64()
    ));
    let mut as_found = vec![];
    let end = Instant::now() + spec.window;
    while Instant::now() < end {
        as_found.push(read_running(watch)?.running);
        if !crate::interrupt::sleep(POLL) {
            crate::interrupt::check()?;
        }
    }
    out.running_as_found = mean(&as_found);
    let mut off_running: Vec<f64> = as_found;
    let log_start = disk.size()?;
    let mut current = 0usize;
    let n = out.slots.len();
    let result = (|| -> Result<()> {
        for i in 0..n {
            let slot = out.slots[i];
            let v = slot.feature.map_or(0, |f| f + 1);
            if v != current {
                let state = &plan.variants[v];
                switcher.apply(&state.state, &state.plugins)?;
                current = v;
            }
            status(&format!("window {}/{n}: {}", i + 1, plan.variants[v].name));
            if !crate::interrupt::sleep(spec.settle) {
                crate::interrupt::check()?;
            }
            let start = snap(read_running(watch)?.work)?;
            out.window_start_s.push(began.elapsed().as_secs_f64());
            let polls_before = polls.get().0;
            let until = start.at + (spec.window - spec.settle);
            let level = guard_level(&off_running);
            let mut recent: Vec<f64> = vec![];
            while Instant::now() < until {
                if !crate::interrupt::sleep(
                    POLL.min(until.saturating_duration_since(Instant::now())),
                ) {
                    crate::interrupt::check()?;
                }
                let t = read_running(watch)?;
                recent.push(t.running);
                if slot.feature.is_none() {
                    off_running.push(t.running);
                } else if recent.len() >= GUARD_POLLS {
                    let last = mean(&recent[recent.len() - GUARD_POLLS..]);
                    if last > spec.guard * level {
                        let why = format!(
                            "{} sessions running on average over the last {} polls with {} on, \
                             above {}x the off windows' level ({:.1}): switched off at once",
                            fmt1(last),
                            GUARD_POLLS,
                            plan.variants[v].name,
                            spec.guard,
                            level
                        );
                        out.guard_tripped = Some(why.clone());
                        anyhow::bail!("the guard tripped: {why}");
                    }
                }
                let grown = disk.size()?.saturating_sub(log_start);
                if let Some(why) = disk.check(grown, 0)? {
                    out.guard_tripped = Some(why.clone());
                    anyhow::bail!("the disk guard tripped: {why}");
                }
            }
            let end = snap(read_running(watch)?.work)?;
            // dbtax's own polls in between (a statement, a transaction each) are not
            // production's.
            let ours = (polls.get().0 - polls_before) as f64;
            let statements = (end.work - start.work - ours).max(0.0);
            let cpu_s = match (start.cpu_us, end.cpu_us) {
                (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e6,
                _ => 0.0,
            };
            out.windows.push(Window {
                slot: i,
                seconds: end.at.duration_since(start.at).as_secs_f64(),
                statements,
                cpu_s,
                log_bytes: end.log.saturating_sub(start.log) as f64,
                shapes: vec![],
                shape_time_us: vec![],
            });
        }
        Ok(())
    })();
    let (n, us) = polls.get();
    out.polls = n;
    out.poll_us = us / n.max(1) as f64;
    // Off at once, whatever ended the windows (the restore that follows puts back the rest).
    if current != 0 {
        let off = &plan.variants[0];
        let _ = switcher.apply(&off.state, &off.plugins);
    }
    result
}

/// The off windows' level of sessions running that the guard multiplies: their 95th
/// percentile, at least one session.
fn guard_level(off: &[f64]) -> f64 {
    let mut v = off.to_vec();
    v.sort_by(f64::total_cmp);
    let p95 = v
        .get(((v.len() as f64 * 0.95) as usize).min(v.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);
    p95.max(1.0)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn fmt1(x: f64) -> String {
    format!("{x:.1}")
}
