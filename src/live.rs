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
use crate::server::admin::Shape;
use crate::server::{Admin, Server, ServerConfig, Support};
use crate::workload::{Workload, WorkloadKind};
use anyhow::{Context, Result};
use dbtax_stats::design::variants_for_features;
use dbtax_stats::live::{LiveResults, Reading, Slot, Window, estimate, schedule};
use std::collections::HashMap;
use std::time::{Duration, Instant};

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

/// dbtax's own session on the server, and what watching has cost: the polls of the
/// traffic, the reads of the shapes' table, the statements (transactions) they ran, which
/// the server counts with production's.
struct Watch<'a> {
    admin: &'a mut dyn Admin,
    polls: u64,
    poll_us: f64,
    statements: f64,
    shape_reads: u64,
    shape_ms: f64,
    /// The shapes compared, in the order of each window's vectors (empty: none read).
    keys: Vec<String>,
}

/// A reading of the shapes' table: calls and time (µs) by key.
type Sums = HashMap<String, (f64, f64)>;

impl Watch<'_> {
    fn traffic(&mut self) -> Result<crate::server::admin::Traffic> {
        let t = Instant::now();
        let r = self.admin.traffic()?;
        self.polls += 1;
        self.poll_us += t.elapsed().as_secs_f64() * 1e6;
        self.statements += f64::from(r.ran);
        Ok(r)
    }

    fn shapes(&mut self) -> Result<Sums> {
        let t = Instant::now();
        let rows: Vec<Shape> = self.admin.shapes()?;
        self.shape_reads += 1;
        self.shape_ms += t.elapsed().as_secs_f64() * 1e3;
        self.statements += 1.0;
        let mut out = Sums::with_capacity(rows.len());
        for r in rows {
            // A key the server lists twice (a digest in two rows) is one shape.
            let e = out.entry(r.key).or_insert((0.0, 0.0));
            e.0 += r.calls;
            e.1 += r.time_us;
        }
        Ok(out)
    }

    /// The busiest shapes between two readings become the ones compared.
    fn choose(&mut self, a: &Sums, b: &Sums) {
        let mut grown: Vec<(&String, f64)> = b
            .iter()
            .map(|(k, (c, _))| (k, c - a.get(k).map_or(0.0, |x| x.0)))
            .filter(|(_, d)| *d > 0.0)
            .collect();
        grown.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| x.0.cmp(y.0)));
        self.keys = grown
            .into_iter()
            .take(MAX_SHAPES)
            .map(|(k, _)| k.clone())
            .collect();
    }

    /// Calls and time per compared shape between two readings. A shape the server dropped
    /// or reset in between (its sums went down) counts nothing.
    fn between(&self, a: &Sums, b: &Sums) -> (Vec<f64>, Vec<f64>) {
        self.keys
            .iter()
            .map(|k| {
                let (c0, t0) = a.get(k).copied().unwrap_or((0.0, 0.0));
                match b.get(k) {
                    Some(&(c1, t1)) if c1 >= c0 && t1 >= t0 => (c1 - c0, t1 - t0),
                    _ => (0.0, 0.0),
                }
            })
            .unzip()
    }
}

/// What the off windows showed so far, for the guards: sessions running (each poll), the
/// calls and time per shape, the errors per unit of work.
#[derive(Default)]
struct OffLevel {
    running: Vec<f64>,
    calls: Vec<f64>,
    time_us: Vec<f64>,
    errors: f64,
    work: f64,
}

impl OffLevel {
    fn add(&mut self, w: &Window) {
        if self.calls.len() < w.shapes.len() {
            self.calls.resize(w.shapes.len(), 0.0);
            self.time_us.resize(w.shapes.len(), 0.0);
        }
        for (s, (c, t)) in w.shapes.iter().zip(&w.shape_time_us).enumerate() {
            self.calls[s] += c;
            self.time_us[s] += t;
        }
        if let Some(e) = w.errors {
            self.errors += e;
            self.work += w.statements;
        }
    }

    /// The statement time of a stretch of an on window against what the same calls took
    /// in the off windows, shape by shape: None until enough calls of shapes the off
    /// windows ran.
    fn time_ratio(&self, calls: &[f64], time_us: &[f64]) -> Option<f64> {
        let (mut seen, mut expected, mut took) = (0.0, 0.0, 0.0);
        for (s, (&c, &t)) in calls.iter().zip(time_us).enumerate() {
            let (oc, ot) = (
                self.calls.get(s).copied().unwrap_or(0.0),
                self.time_us.get(s).copied().unwrap_or(0.0),
            );
            if c > 0.0 && oc > 0.0 {
                seen += c;
                expected += c * ot / oc;
                took += t;
            }
        }
        (seen >= GUARD_MIN_CALLS && expected > 0.0).then(|| took / expected)
    }

    /// The off windows' errors per unit of work (0 before any was read).
    fn error_rate(&self) -> f64 {
        self.errors / self.work.max(1.0)
    }
}

/// The windows as they run: what they share (the server, the switcher, the watching
/// session, what the off windows showed so far) and the variant switched on now.
struct Windows<'a> {
    server: &'a Server,
    switcher: &'a mut Switcher,
    plan: &'a Plan,
    disk: &'a DiskGuard,
    spec: &'a LiveSpec,
    watch: Watch<'a>,
    off: OffLevel,
    ask: crate::probe::Ask,
    /// The server's task that runs the watching session (where it says).
    own_task: Option<u32>,
    /// The feature logs' size before the first window.
    log_start: u64,
    /// The variant on now (0: off).
    current: usize,
    began: Instant,
}

/// A window's first readings, which its polls and its end are measured from.
struct Opening {
    traffic: crate::server::admin::Traffic,
    ours: f64,
    shapes: Option<Sums>,
    level: f64,
}

/// The windows, in the schedule's order, after one reading the server as found. Ok: every
/// window ran; Err: a guard tripped (its words are in `out.guard_tripped` too), Ctrl-C, or a
/// failure. The feature is off when it returns.
fn windows(
    server: &Server,
    (switcher, plan, disk): (&mut Switcher, &Plan, &DiskGuard),
    admin: &mut dyn Admin,
    spec: &LiveSpec,
    out: &mut LiveResults,
    status: &mut dyn FnMut(&str),
) -> Result<()> {
    let own_task = admin.own_task()?;
    let mut ask = server.cpu_ask();
    ask.files = disk
        .files
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut w = Windows {
        server,
        switcher,
        plan,
        disk,
        spec,
        watch: Watch {
            admin,
            polls: 0,
            poll_us: 0.0,
            statements: 0.0,
            shape_reads: 0,
            shape_ms: 0.0,
            keys: vec![],
        },
        off: OffLevel::default(),
        ask,
        own_task,
        log_start: 0,
        current: 0,
        began: Instant::now(),
    };
    let mut own = (None, None);
    let result = (|| -> Result<()> {
        own.0 = w.as_found(out, status)?;
        own.1 = own.0;
        for i in 0..out.slots.len() {
            own.1 = w.window(i, out, status)?.or(own.1);
        }
        Ok(())
    })();

    let calls: f64 = out.windows.iter().flat_map(|w| &w.shapes).sum();
    let work: f64 = out.windows.iter().map(|w| w.statements).sum();
    out.shapes_share = calls / work.max(1.0);
    out.polls = w.watch.polls;
    out.poll_us = w.watch.poll_us / w.watch.polls.max(1) as f64;
    out.shape_reads = w.watch.shape_reads;
    out.shape_read_ms = w.watch.shape_ms / w.watch.shape_reads.max(1) as f64;
    let reads = (w.watch.polls + w.watch.shape_reads).max(1) as f64;
    out.poll_server_us = match own {
        (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1e3 / reads),
        _ => None,
    };

    // Off at once, whatever ended the windows (the restore that follows puts back the rest).
    if w.current != 0 {
        let off = &plan.variants[0];
        let _ = w.switcher.apply(&off.state, &off.plugins);
    }
    result
}

impl Windows<'_> {
    /// Read the server's CPU and the feature logs' size now, and the server's time for the
    /// watching session so far, ns (where it says which task runs it).
    fn snap(&self, work: f64) -> Result<(Snap, Option<u64>)> {
        let r = self.server.host.read(&self.ask)?;
        let own = self
            .own_task
            .and_then(|t| r.server_cpu.as_ref()?.threads_ns.as_ref()?.get(&t).copied());
        Ok((
            Snap {
                at: Instant::now(),
                work,
                cpu_us: r.server_cpu.as_ref().map(|c| c.ticks_us),
                log: r.sizes.iter().map(|s| s.unwrap_or(0)).sum(),
            },
            own,
        ))
    }

    /// One window's length reading the server as found, before anything is switched: the
    /// sessions running, and its busiest shapes, which become the ones compared. Returns the
    /// server's time for the watching session at the start.
    fn as_found(
        &mut self,
        out: &mut LiveResults,
        status: &mut dyn FnMut(&str),
    ) -> Result<Option<u64>> {
        status(&format!(
            "reading {} as found for {} s",
            self.server.label(),
            self.spec.window.as_secs_f64()
        ));
        let first_own = self.snap(0.0)?.1;
        let found = if out.shapes_read {
            Some(self.watch.shapes()?)
        } else {
            None
        };
        let mut running = vec![];
        let end = Instant::now() + self.spec.window;
        while Instant::now() < end {
            running.push(self.watch.traffic()?.running);
            if !crate::interrupt::sleep(POLL) {
                crate::interrupt::check()?;
            }
        }
        if let Some(a) = &found {
            let b = self.watch.shapes()?;
            self.watch.choose(a, &b);
            out.shapes = self.watch.keys.len();
        }
        out.running_as_found = mean(&running);
        self.off.running = running;
        self.log_start = self.disk.size()?;
        Ok(first_own)
    }

    /// Window `i` of the schedule: switch to its variant, let it settle, measure it while
    /// the guards watch, and record it. Returns the server's time for the watching session
    /// at its end.
    fn window(
        &mut self,
        i: usize,
        out: &mut LiveResults,
        status: &mut dyn FnMut(&str),
    ) -> Result<Option<u64>> {
        let slot = out.slots[i];
        let v = slot.feature.map_or(0, |f| f + 1);
        let plan = self.plan;
        if v != self.current {
            let state = &plan.variants[v];
            self.switcher.apply(&state.state, &state.plugins)?;
            self.current = v;
        }
        let name = plan.variants[v].name.as_str();
        status(&format!("window {}/{}: {name}", i + 1, out.slots.len()));
        if !crate::interrupt::sleep(self.spec.settle) {
            crate::interrupt::check()?;
        }

        let traffic = self.watch.traffic()?;
        let opening = Opening {
            traffic,
            ours: self.watch.statements,
            shapes: if self.watch.keys.is_empty() {
                None
            } else {
                Some(self.watch.shapes()?)
            },
            level: guard_level(&self.off.running),
        };
        let (start, _) = self.snap(traffic.work)?;
        out.window_start_s.push(self.began.elapsed().as_secs_f64());
        let until = start.at + (self.spec.window - self.spec.settle);
        let mut running: Vec<f64> = vec![];
        let mut strikes = 0;
        let mut last = traffic;
        while Instant::now() < until {
            if !crate::interrupt::sleep(POLL.min(until.saturating_duration_since(Instant::now()))) {
                crate::interrupt::check()?;
            }
            let t = self.watch.traffic()?;
            running.push(t.running);
            last = t;
            if slot.feature.is_none() {
                self.off.running.push(t.running);
            } else {
                self.guards(&opening, &t, &running, &mut strikes, name, &out.work)?
                    .or_else(|why| tripped(out, why))?;
            }
            let grown = self.disk.size()?.saturating_sub(self.log_start);
            if let Some(why) = self.disk.check(grown, 0)? {
                out.guard_tripped = Some(why.clone());
                anyhow::bail!("the disk guard tripped: {why}");
            }
        }

        let (shapes, shape_time_us) = match &opening.shapes {
            Some(a) => {
                let b = self.watch.shapes()?;
                self.watch.between(a, &b)
            }
            None => (vec![], vec![]),
        };
        if slot.feature.is_some() && !shapes.is_empty() {
            // The whole window, judged as the reads inside it were.
            let ratio = self.off.time_ratio(&shapes, &shape_time_us);
            latency_guard(&mut strikes, ratio, self.spec, name).or_else(|why| tripped(out, why))?;
        }
        let (end, own) = self.snap(last.work)?;
        // dbtax's own statements in between are not production's.
        let statements = (end.work - start.work - (self.watch.statements - opening.ours)).max(0.0);
        let window = Window {
            slot: i,
            seconds: end.at.duration_since(start.at).as_secs_f64(),
            statements,
            cpu_s: match (start.cpu_us, end.cpu_us) {
                (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e6,
                _ => 0.0,
            },
            log_bytes: end.log.saturating_sub(start.log) as f64,
            shapes,
            shape_time_us,
            errors: match (traffic.errors, last.errors) {
                (Some(a), Some(b)) => Some((b - a).max(0.0)),
                _ => None,
            },
            running: mean(&running),
        };
        if slot.feature.is_none() {
            self.off.add(&window);
        }
        out.windows.push(window);
        Ok(own)
    }

    /// The guards of an on window at one poll (`t`; `running`: the window's polls so far):
    /// sessions running, the error rate, and every `SHAPES_EVERY` polls the statement time.
    /// Err: why the feature must be switched off.
    fn guards(
        &mut self,
        opening: &Opening,
        t: &crate::server::admin::Traffic,
        running: &[f64],
        strikes: &mut u32,
        name: &str,
        work_name: &str,
    ) -> Result<std::result::Result<(), String>> {
        let spec = self.spec;
        if running.len() >= GUARD_POLLS {
            let recent = mean(&running[running.len() - GUARD_POLLS..]);
            if recent > spec.guard * opening.level {
                return Ok(Err(format!(
                    "{} sessions running on average over the last {} polls with {name} on, \
                     above {}x the off windows' level ({:.1}): switched off at once",
                    fmt1(recent),
                    GUARD_POLLS,
                    spec.guard,
                    opening.level
                )));
            }
        }
        if let (Some(e0), Some(e1)) = (opening.traffic.errors, t.errors) {
            let work = t.work - opening.traffic.work - (self.watch.statements - opening.ours);
            let judged = error_guard(e1 - e0, work, self.off.error_rate(), spec, name, work_name);
            if judged.is_err() {
                return Ok(judged);
            }
        }
        if let Some(a) = &opening.shapes
            && running.len().is_multiple_of(SHAPES_EVERY)
        {
            let b = self.watch.shapes()?;
            let (calls, time) = self.watch.between(a, &b);
            return Ok(latency_guard(
                strikes,
                self.off.time_ratio(&calls, &time),
                spec,
                name,
            ));
        }
        Ok(Ok(()))
    }
}

/// A guard tripped: its words kept in the run's record, and the error that ends the run.
fn tripped(out: &mut LiveResults, why: String) -> Result<()> {
    out.guard_tripped = Some(why.clone());
    anyhow::bail!("the guard tripped: {why}")
}

/// The latency guard's judgement of one read of an on window (the statement time since the
/// window's start against the off windows' for the same shapes, `ratio`): Err (the words)
/// at the second read in a row above the guard. One read above it is a stretch of seconds in
/// which statements of microseconds met a busy CPU; two in a row are production slowing
/// down.
fn latency_guard(
    strikes: &mut u32,
    ratio: Option<f64>,
    spec: &LiveSpec,
    name: &str,
) -> std::result::Result<(), String> {
    let Some(r) = ratio else { return Ok(()) };
    if r <= spec.latency_guard {
        *strikes = 0;
        return Ok(());
    }
    *strikes += 1;
    if *strikes < 2 {
        return Ok(());
    }
    Err(format!(
        "statements took {}x what the same statements took in the off windows with {name} on \
         (the guard: {}x, twice in a row): switched off at once",
        fmt1(r),
        spec.latency_guard
    ))
}

/// The error guard's judgement of a stretch of an on window (`errors` in `work` statements
/// or transactions since the window's start) against the off windows' error rate: Err (the
/// words) past it by more than `--error-guard`, once the stretch holds enough work to say.
fn error_guard(
    errors: f64,
    work: f64,
    off_rate: f64,
    spec: &LiveSpec,
    name: &str,
    what: &str,
) -> std::result::Result<(), String> {
    let rate = errors / work.max(1.0);
    if work < GUARD_MIN_WORK || rate <= off_rate + spec.error_guard {
        return Ok(());
    }
    Err(format!(
        "{}% of the {what} in error with {name} on, against {}% in the off windows (the \
         guard: {} points more): switched off at once",
        fmt1(100.0 * rate),
        fmt1(100.0 * off_rate),
        fmt1(100.0 * spec.error_guard)
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> LiveSpec {
        LiveSpec {
            features: vec!["general-log".into()],
            duration: Duration::from_secs(60),
            window: Duration::from_secs(10),
            settle: Duration::from_secs(1),
            max_on: 0.5,
            guard: 2.0,
            latency_guard: 2.0,
            error_guard: 0.01,
            seed: 1,
            max_log_bytes: None,
            server_host: None,
        }
    }

    #[test]
    fn the_latency_guard_trips_at_the_second_read_in_a_row_above_it() {
        let spec = spec();
        let mut strikes = 0;
        // Not enough calls yet, then one read above, one below (reset), two above.
        for (ratio, trips) in [
            (None, false),
            (Some(3.0), false),
            (Some(1.1), false),
            (Some(2.5), false),
            (Some(2.2), true),
        ] {
            let r = latency_guard(&mut strikes, ratio, &spec, "general-log");
            assert_eq!(r.is_err(), trips, "{ratio:?}: {r:?}");
        }
        assert!(
            latency_guard(&mut strikes, Some(9.0), &spec, "general-log")
                .unwrap_err()
                .contains("twice in a row")
        );
    }

    #[test]
    fn statement_time_is_judged_shape_by_shape_so_a_change_of_mix_is_not_a_slowdown() {
        let mut off = OffLevel::default();
        // Off: a light shape of 10 µs and a heavy one of 1,000 µs, mostly light.
        off.add(&Window {
            shapes: vec![900.0, 100.0],
            shape_time_us: vec![9_000.0, 100_000.0],
            ..Default::default()
        });
        // On: the same times per shape, the mix turned to mostly heavy. The mean per
        // statement rose ninefold; the guard's ratio stays 1.
        let r = off
            .time_ratio(&[100.0, 900.0], &[1_000.0, 900_000.0])
            .unwrap();
        assert!((r - 1.0).abs() < 1e-9, "{r}");
        // Each shape twice as slow: 2.
        let r = off
            .time_ratio(&[100.0, 900.0], &[2_000.0, 1_800_000.0])
            .unwrap();
        assert!((r - 2.0).abs() < 1e-9, "{r}");
        // Too few calls of shapes the off windows ran: no judgement.
        assert_eq!(off.time_ratio(&[10.0, 0.0], &[100.0, 0.0]), None);
    }

    #[test]
    fn the_error_guard_trips_past_the_off_windows_rate_by_its_margin() {
        let spec = spec();
        // 0.5% in the off windows, the guard 1 point above.
        assert!(error_guard(10.0, 1_000.0, 0.005, &spec, "f", "statements").is_ok());
        assert!(error_guard(20.0, 1_000.0, 0.005, &spec, "f", "statements").is_err());
        // Too little work to say.
        assert!(error_guard(50.0, 50.0, 0.005, &spec, "f", "statements").is_ok());
        let why = error_guard(100.0, 1_000.0, 0.0, &spec, "f", "transactions").unwrap_err();
        assert!(why.contains("10.0% of the transactions in error"), "{why}");
    }
}
