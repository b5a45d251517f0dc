//! `dbtax capture`: the server's own traffic, logged for a while and written to a file ready
//! for `run --log`. The setting that logs every statement is the `slow-log` feature (the slow
//! log at long_query_time=0 on the MySQL family, log_min_duration_statement=0 on PostgreSQL),
//! switched exactly as a run switches a variant: the run lock, the journal before the first
//! change, the disk guard while it is on, and the restore at the end, on error and on Ctrl-C
//! (`dbtax restore` after a kill -9). Only the part the log gained while it was on is written.
//! The log is read where the server runs: on this machine, or, for a server elsewhere, through
//! the probe `--server-host` starts there (`Reader::read_file`, a megabyte at a time).

use super::disk::DiskGuard;
use super::open::open;
use super::spec::{Experiment, variants_for_features};
use crate::error::usage;
use crate::feature::toggle::Switcher;
use crate::server::ServerConfig;
use crate::workload::{Workload, WorkloadKind};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The feature that logs every statement, on every engine (PostgreSQL's catalog spells it
/// log-min-duration and knows this name).
const FEATURE: &str = "slow-log";

/// What a capture asks for.
#[derive(Debug, Clone)]
pub struct CaptureSpec {
    /// How long the log stays on.
    pub duration: Duration,
    /// The file the captured part goes to.
    pub out: PathBuf,
    /// Stop early once the log grew by this much.
    pub max_log_bytes: Option<u64>,
    /// The server's host, when it is not this machine: its log is read there by a probe
    /// (`--server-host`, `--agent-bin`).
    pub server_host: Option<(crate::agent::AgentSpec, crate::agent::AgentBin)>,
}

/// What a capture did.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The server, as results name it.
    pub label: String,
    /// The log file it was read from (on this machine).
    pub log: PathBuf,
    /// Bytes written to the capture file.
    pub bytes: u64,
    /// How long the log was on.
    pub seconds: f64,
    /// Why the capture ended before its time (the disk guard, Ctrl-C), if it did.
    pub stopped: Option<String>,
    /// The settings as they were put back.
    pub restored: Vec<(String, String)>,
    /// The format the file is in, as `--log-format` spells it.
    pub format: &'static str,
    /// PostgreSQL: the server's log_line_prefix (for `--log-line-prefix` when its lines are
    /// not recognised).
    pub line_prefix: Option<String>,
    /// What the user should know about what was logged.
    pub notes: Vec<String>,
}

/// The experiment a capture resolves: the feature against off, one connection, a workload
/// that prepares nothing (no trial runs).
fn experiment(spec: &CaptureSpec) -> Experiment {
    let mut exp = Experiment::defaults();
    exp.server_host = spec.server_host.clone();
    exp.name = "capture".into();
    exp.variants = variants_for_features(&[FEATURE.to_string()]);
    exp.threads = vec![1];
    exp.workload = Workload {
        kind: WorkloadKind::Query,
        queries: vec!["SELECT 1".into()],
        ..Workload::default()
    };
    exp.max_log_bytes = spec.max_log_bytes;
    exp
}

/// Capture: log every statement on `config`'s server for `spec.duration`, put the setting
/// back, write the part logged to `spec.out`. Bad input (a managed target, a log dbtax cannot
/// read here, an unwritable file) fails before anything changes. `status`: progress lines.
/// Ctrl-C ends it early: the setting is put back, the part so far written, and the
/// interruption returned after it.
pub fn capture(
    config: &ServerConfig,
    spec: &CaptureSpec,
    status: &mut dyn FnMut(&str),
) -> Result<Captured> {
    if config.spec.is_managed() {
        return Err(usage(
            "capture records the traffic of a server you run: give its --target (a throwaway \
             managed server has none of its own). Nothing was changed",
        ));
    }
    let exp = experiment(spec);
    let (mut server, plan) = open(&exp, config, None)?;
    let label = server.label();
    // The log is read where the server runs: here, or through the probe there.
    let reader = server.host.0.clone();
    let readable = server.datadir.is_some() || !reader.here();
    let log = match plan.log_files.paths.first() {
        Some(p) if readable => p.clone(),
        _ => {
            return Err(usage(format!(
                "{label} writes its log where dbtax cannot read it ({}). Nothing was changed",
                if readable {
                    "the server names no log file: on PostgreSQL logging_collector must be on"
                } else {
                    "the server runs elsewhere: give --server-host ssh://its-host, where dbtax \
                     reads the log through a probe, or run dbtax there"
                }
            )));
        }
    };
    let size = |reader: &dyn crate::probe::Reader| -> Result<u64> {
        let ask = crate::probe::Ask {
            files: vec![log.display().to_string()],
            ..Default::default()
        };
        Ok(read_patiently(|| reader.read(&ask))?.sizes[0].unwrap_or(0))
    };
    let mut file = std::fs::File::create(&spec.out).map_err(|e| {
        usage(format!(
            "cannot write the capture to {}: {e}. Nothing was changed",
            spec.out.display()
        ))
    })?;
    let mysql = server.engine().name == "mysql";
    let mut admin = server.admin()?;
    let vars = admin.global_vars(&["log_line_prefix", "long_query_time"])?;
    drop(admin);
    let mut notes = vec![];
    if let Some(t) = vars.get("long_query_time").filter(|_| mysql) {
        notes.push(format!(
            "the server applies long_query_time=0 to connections made from now on: a \
             connection already open is logged only past its own long_query_time ({t} s), \
             so a pool that keeps its connections shows little (reconnect it, or capture longer)"
        ));
    }
    let started_at = crate::host::now_rfc3339();
    let mut switcher = Switcher::lock(&server, &started_at)?;
    // dbtax's schema, where the server keeps its copy of the journal (made as a run makes
    // it; the workload prepares nothing else).
    server.prepare(&exp.workload, &mut |_| {})?;
    switcher.stamp(&mut server)?;
    switcher.begin(&plan.switches)?;
    let guard = DiskGuard {
        files: plan.log_files.clone(),
        max_bytes: spec.max_log_bytes,
    };
    if let Some(why) = guard.check(0, 0)? {
        switcher.restore()?;
        return Err(usage(format!(
            "{}. Nothing was changed",
            why.replace(
                "stopped before the next trial: ",
                "the capture cannot start: "
            )
        )));
    }
    let from = match size(reader.as_ref()) {
        Ok(n) => n,
        Err(e) => {
            switcher.restore()?;
            return Err(e.context("reading the log's size before the capture. Nothing was changed"));
        }
    };
    let on = &plan.variants[1];
    switcher.apply(&on.state, &on.plugins)?;
    let began = Instant::now();
    status(&format!(
        "capturing every statement on {label} for {} s (log: {})",
        spec.duration.as_secs_f64(),
        log.display()
    ));
    let watch = guard.watch(0)?;
    let mut stopped = None;
    let mut last_said = Instant::now();
    while began.elapsed() < spec.duration {
        let left = spec.duration.saturating_sub(began.elapsed());
        if !crate::interrupt::sleep(left.min(Duration::from_millis(500))) {
            stopped = Some("interrupted".to_string());
            break;
        }
        if let Some(e) = watch.as_ref().and_then(|w| w()) {
            stopped = Some(format!("{e:#}").replace("during a trial", "the capture"));
            break;
        }
        if last_said.elapsed() >= Duration::from_secs(10) {
            last_said = Instant::now();
            let now = size(reader.as_ref()).unwrap_or(from);
            status(&format!(
                "  {:.0} s of {:.0} s, {:.1} MB logged",
                began.elapsed().as_secs_f64(),
                spec.duration.as_secs_f64(),
                now.saturating_sub(from) as f64 / 1e6
            ));
        }
    }
    let seconds = began.elapsed().as_secs_f64();
    switcher.restore()?;
    let restored: Vec<(String, String)> = switcher.originals().into_iter().collect();
    let end = size(reader.as_ref()).context("the setting was put back; reading the log's size")?;
    let bytes = copy_from(reader.as_ref(), &log, from..end, &mut file)
        .with_context(|| format!("writing the capture to {}", spec.out.display()))?;
    if end < from {
        notes.push(format!(
            "{} is shorter than when the capture began: it was rotated or truncated, and \
             nothing was copied",
            log.display()
        ));
    }
    let captured = Captured {
        label,
        log,
        bytes,
        seconds,
        stopped: stopped.clone(),
        restored,
        format: if mysql { "slow" } else { "postgres" },
        line_prefix: vars.get("log_line_prefix").filter(|_| !mysql).cloned(),
        notes,
    };
    if stopped.as_deref() == Some("interrupted") {
        return Err(
            anyhow::Error::from(crate::error::Failure::Interrupted).context(format!(
                "the setting was put back; the {} bytes captured until then are in {}",
                captured.bytes,
                spec.out.display()
            )),
        );
    }
    Ok(captured)
}

/// Copy bytes `range` of `log` (on the server's host, read by `reader`) into `out`, a part
/// at a time; the bytes copied (none when the range is empty: the file shrank).
fn copy_from(
    reader: &dyn crate::probe::Reader,
    log: &Path,
    range: std::ops::Range<u64>,
    out: &mut std::fs::File,
) -> Result<u64> {
    let path = log.display().to_string();
    let mut at = range.start;
    while at < range.end {
        let max = (range.end - at).min(u64::from(crate::probe::FILE_PART)) as u32;
        let part = read_patiently(|| reader.read_file(&path, at, max))?;
        if part.is_empty() {
            break;
        }
        out.write_all(&part)?;
        at += part.len() as u64;
    }
    out.flush()?;
    out.sync_all()?;
    Ok(at - range.start)
}

/// `read`, asked again while the probe's answer is late (a slow link); a probe gone past its
/// silence bound, or any other failure, is the error.
fn read_patiently<T>(mut read: impl FnMut() -> Result<T>) -> Result<T> {
    loop {
        match read() {
            Err(e) if crate::probe::is_late(&e) => continue,
            r => return r,
        }
    }
}
