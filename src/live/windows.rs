//! The windows of `dbtax live` as they run: the feature switched on and off in the schedule's
//! order, each window read from the server, the guards judged at each poll.

use super::guards::{OffLevel, error_guard, fmt1, guard_level, latency_guard, mean, tripped};
use super::watch::{Sums, Watch};
use super::{GUARD_POLLS, LiveSpec, POLL, SHAPES_EVERY};
use crate::experiment::prepare::plan::Plan;
use crate::experiment::run::disk::DiskGuard;
use crate::feature::toggle::Switcher;
use crate::server::{Admin, Server};
use anyhow::Result;
use dbtax_stats::live::{LiveResults, Window};
use std::time::Instant;

/// One reading of the server.
#[derive(Clone, Copy)]
struct Snap {
    at: Instant,
    work: f64,
    cpu_us: Option<u64>,
    log: u64,
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
    ask: crate::host::probe::Ask,
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
pub(super) fn windows(
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
