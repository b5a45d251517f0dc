//! `dbtax capture`: the server's own traffic, logged for a while and written to a file ready
//! for `run --log`. What logs every statement of every session, those open before the
//! capture began included (every connection pool's), is the source: the general log on the
//! MySQL family (global: it reaches open sessions at once, where MariaDB copies the slow
//! log's switch and long_query_time into each session when it connects; its Prepare and
//! Execute lines replay prepared; it has no Rows_sent), log_min_duration_statement = 0 on
//! PostgreSQL (a reload reaches every session). It is switched exactly as a run switches a
//! variant: the run lock, the journal before the first change, a disk guard that watches
//! the log's rate, and the restore at the end, on error, on Ctrl-C and when the server comes
//! back after a restart (`dbtax restore` after a kill -9). The admin connection outlives the
//! server's idle limits (wait_timeout). Only the part the log gained while it was on is
//! written, to a file beside `--out` renamed into place at the end: nothing is opened
//! before every check has passed, and the server's own log is never an output. The log is
//! read where the server runs: on this machine, or, for a server elsewhere, through the
//! probe `--server-host` starts there (`Reader::read_file`, a megabyte at a time).

use crate::error::usage;
use crate::experiment::prepare::open::open;
use crate::experiment::run::disk::DiskGuard;
use crate::experiment::spec::{Experiment, variants_for_features};
use crate::feature::toggle::Switcher;
use crate::server::ServerConfig;
use crate::units::plural;
use crate::workload::{Workload, WorkloadKind};
use anyhow::{Context, Result};
use dbtax_logs::replay_spec::LogFormat;
use dbtax_logs::slice::count;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a restore keeps reconnecting to a server that went away (as a run's does).
const RESTORE_PATIENCE: Duration = Duration::from_secs(40);
/// How often the capture asks the server whether it still answers.
const PING: Duration = Duration::from_secs(2);

/// What a capture asks for.
#[derive(Debug, Clone)]
pub struct CaptureSpec {
    /// How long the log stays on.
    pub duration: Duration,
    /// The file the captured part goes to.
    pub out: PathBuf,
    /// Stop early once the log grew by this much.
    pub max_log_bytes: Option<u64>,
    /// The feature that logs (`--source`): None, the engine's default.
    pub source: Option<String>,
    /// The server's host, when it is not this machine: its log is read there by a probe
    /// (`--server-host`, `--agent-bin`).
    pub server_host: Option<(crate::agent::AgentSpec, crate::agent::AgentBin)>,
}

/// What a capture did.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The server, as results name it.
    pub label: String,
    /// The log file it was read from (on the server's host).
    pub log: PathBuf,
    /// The feature that logged, and what that source lacks.
    pub source: Source,
    /// Bytes written to the capture file.
    pub bytes: u64,
    /// How long the log was on.
    pub seconds: f64,
    /// Why the capture ended before its time (the disk guard, the server gone), if it did.
    pub stopped: Option<String>,
    /// What the restore did: the statements, and what it left as someone else set it.
    pub restored: Vec<String>,
    /// The format the file is in, as `--log-format` spells it.
    pub format: LogFormat,
    /// PostgreSQL's log_line_prefix, when the file's lines need it (`--log-line-prefix`).
    pub line_prefix: Option<String>,
    /// Statements and sessions the file holds, read as a replay reads it.
    pub statements: u64,
    /// Sessions that ran a statement in it.
    pub sessions: u64,
    /// What the user should know about what was logged.
    pub notes: Vec<String>,
}

/// The setting that logs every session's statements, by engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// The catalog's feature.
    pub feature: &'static str,
    /// What the log is, for the words.
    pub what: &'static str,
    /// What the log does not say, for the words.
    pub lacks: &'static str,
}

/// The source for an engine, as `--source` names it: by default the general log on the
/// MySQL family, every statement's duration logged on PostgreSQL.
fn source(engine: &str, asked: Option<&str>) -> Source {
    match (engine == "mysql", asked) {
        (true, None | Some("general-log")) => Source {
            feature: "general-log",
            what: "the general log (it reaches every session, those of a pool opened before \
                   too)",
            lacks: "a general log has no Rows_sent nor durations: a replay of it cannot \
                    check the rows each statement sent",
        },
        (true, Some(_)) => Source {
            feature: "slow-log",
            what: "the slow log at long_query_time = 0",
            lacks: "the slow log reaches only the sessions that connect while it is on \
                    (MariaDB copies its switch and long_query_time into a session when it \
                    connects): a pool's connections opened before the capture are not in it; \
                    --source general-log (the default) reaches them",
        },
        (false, Some("general-log")) => Source {
            feature: "general-log",
            what: "log_statement = all (a reload reaches every session)",
            lacks: "log_statement logs no durations",
        },
        (false, _) => Source {
            feature: "slow-log",
            what: "log_min_duration_statement = 0 (a reload reaches every session)",
            lacks: "",
        },
    }
}

/// The experiment a capture resolves: the source against off, one connection, a workload
/// that prepares nothing (no trial runs).
fn experiment(spec: &CaptureSpec, source: Source) -> Experiment {
    let mut exp = Experiment::defaults();
    exp.server_host = spec.server_host.clone();
    exp.name = "capture".into();
    exp.variants = variants_for_features(&[source.feature.to_string()]);
    exp.threads = vec![1];
    exp.workload = Workload {
        kind: WorkloadKind::Query,
        queries: vec!["SELECT 1".into()],
        ..Workload::default()
    };
    exp.max_log_bytes = spec.max_log_bytes;
    exp
}

/// Where the capture is written, checked before anything changes and opened only at the
/// end: a temporary file beside it, renamed into place once complete (a capture that fails
/// leaves an existing file as it was).
struct Output {
    path: PathBuf,
    dir: PathBuf,
}

impl Output {
    fn check(path: &Path) -> Result<Output> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let bad = |why: String| {
            usage(format!(
                "cannot write the capture to {}: {why}. Nothing was changed",
                path.display()
            ))
        };
        if path.is_dir() {
            return Err(bad("it is a folder".into()));
        }
        let meta = std::fs::metadata(&dir).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
        if !meta.is_dir() {
            return Err(bad(format!("{} is not a folder", dir.display())));
        }
        // Writable: a file made and removed at once (the output is not touched yet).
        let probe = dir.join(format!(".dbtax-capture-check-{}", std::process::id()));
        std::fs::File::create(&probe).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
        let _ = std::fs::remove_file(&probe);
        Ok(Output {
            path: path.to_path_buf(),
            dir,
        })
    }

    /// Refuse an output that is the server's log itself (any spelling of its path): the
    /// capture would replace the log's history with a copy of its own tail.
    fn is_not(&self, log: &Path) -> Result<()> {
        use std::os::unix::fs::MetadataExt;
        let same = match (std::fs::metadata(&self.path), std::fs::metadata(log)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => match (self.path.canonicalize(), log.canonicalize()) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            },
        };
        if same {
            return Err(usage(format!(
                "--out {} is the server's own log: the capture copies a part of that file, and \
                 writing it there would destroy the log's history. Name another file. \
                 Nothing was changed",
                self.path.display()
            )));
        }
        Ok(())
    }

    fn temporary(&self) -> PathBuf {
        self.dir.join(format!(
            ".{}.dbtax-{}",
            self.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "capture".into()),
            std::process::id()
        ))
    }
}

/// Capture: log every statement on `config`'s server for `spec.duration`, put the setting
/// back, write the part logged to `spec.out`. Bad input (a managed target, a log dbtax cannot
/// read here, an unwritable file, the server's own log as the output) fails before anything
/// changes. `status`: progress lines. Ctrl-C ends it early: the setting is put back, the part
/// so far written, and the interruption returned after it. A capture that holds no
/// statement is an error that says why.
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
    let output = Output::check(&spec.out)?;
    let source = source(config.spec.engine_name(), spec.source.as_deref());
    let exp = experiment(spec, source);
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
    if reader.here() {
        output.is_not(&log)?;
    }
    let size = |reader: &dyn crate::host::probe::Reader| -> Result<u64> {
        let ask = crate::host::probe::Ask {
            files: vec![log.display().to_string()],
            ..Default::default()
        };
        Ok(read_patiently(|| reader.read(&ask))?.sizes[0].unwrap_or(0))
    };
    let mut admin = server.admin()?;
    let vars = admin.global_vars(&["log_line_prefix"])?;
    let sessions_before = admin.connection_room().ok().flatten().map(|(_, used)| used);
    drop(admin);
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
    // The server is watched through a session of its own whose statements the log leaves
    // out (they are not the application's).
    let mut watch = server.admin()?;
    watch.quiet();
    let on = &plan.variants[1];
    switcher.apply(&on.state, &on.plugins)?;
    // The capture begins once the setting is in force, past dbtax's own check that it is.
    let from = match beginning(&mut switcher, reader.as_ref(), &log, &size) {
        Ok(n) => n,
        Err(e) => {
            switcher.restore()?;
            return Err(e.context("reading the log's size as the capture began"));
        }
    };
    let began = Instant::now();
    status(&format!(
        "capturing every statement on {label} for {} s through {} (log: {})",
        spec.duration.as_secs_f64(),
        source.what,
        log.display()
    ));
    let (stopped, interrupted) = wait(watch.as_mut(), &guard, spec, &reader, &size, from, status)?;
    let seconds = began.elapsed().as_secs_f64();
    // The log's end before the restore's own statements reach it (a server that went away
    // has none to say: its end is read after).
    let end_before = size(reader.as_ref()).ok();
    // After a restart or a lost connection too: reconnect and put back what the journal holds.
    switcher
        .restore_with_retry(&server, RESTORE_PATIENCE)
        .context("the capture ended; putting the setting back")?;
    let restored = switcher.restored.clone();
    let end = match end_before {
        Some(end) => end,
        None => {
            size(reader.as_ref()).context("the setting was put back; reading the log's size")?
        }
    };
    let mut notes = vec![];
    if end < from {
        notes.push(format!(
            "{} is shorter than when the capture began: it was rotated or truncated, and \
             nothing was copied",
            log.display()
        ));
    }
    let bytes = write_output(&output, reader.as_ref(), &log, from..end)?;
    let (format, line_prefix, statements, sessions) = read_back(
        &output.path,
        vars.get("log_line_prefix").map(String::as_str),
        config.spec.engine_name(),
    );
    let mut captured = Captured {
        label,
        log,
        source,
        bytes,
        seconds,
        stopped,
        restored,
        format,
        line_prefix,
        statements,
        sessions,
        notes,
    };
    if let Some(before) = sessions_before {
        // dbtax's own: this capture's admin and lock connections.
        let others = before.saturating_sub(2);
        if others > 0 && sessions * 2 < others {
            captured.notes.push(format!(
                "the server had about {others} client sessions when the capture began and {} \
                 of them ran a statement while it was on: the others stayed idle (a pool's \
                 spare connections), or ran nothing in {seconds:.0} s",
                plural(sessions, "session")
            ));
        }
    }
    if interrupted {
        return Err(
            anyhow::Error::from(crate::error::Failure::Interrupted).context(format!(
                "the setting was put back; the {} bytes captured until then are in {}",
                captured.bytes,
                spec.out.display()
            )),
        );
    }
    if captured.statements == 0 {
        let why = captured
            .stopped
            .clone()
            .unwrap_or_else(|| "no session ran a statement while it was on".into());
        return Err(anyhow::anyhow!(
            "the capture holds no statement ({why}); {}. {} bytes are in {}",
            if captured.restored.is_empty() {
                "the setting was put back".to_string()
            } else {
                format!("put back: {}", captured.restored.join("; "))
            },
            captured.bytes,
            spec.out.display()
        ));
    }
    Ok(captured)
}

/// Wait out the capture: Ctrl-C, the disk guard (on the log's rate), a server that stops
/// answering end it early. Returns why it ended early and whether it was interrupted.
fn wait(
    watch: &mut dyn crate::server::Admin,
    guard: &DiskGuard,
    spec: &CaptureSpec,
    reader: &std::sync::Arc<dyn crate::host::probe::Reader>,
    size: &dyn Fn(&dyn crate::host::probe::Reader) -> Result<u64>,
    from: u64,
    status: &mut dyn FnMut(&str),
) -> Result<(Option<String>, bool)> {
    let began = Instant::now();
    let disk = guard.watch(0)?;
    let mut last_said = Instant::now();
    let mut last_ping = Instant::now();
    while began.elapsed() < spec.duration {
        let left = spec.duration.saturating_sub(began.elapsed());
        // (The disk is read ten times a second: on a small filesystem a busy log fills the
        // room left in a few of them.)
        if !crate::interrupt::sleep(left.min(Duration::from_millis(100))) {
            return Ok((Some("interrupted".into()), true));
        }
        if let Some(e) = disk.as_ref().and_then(|w| w()) {
            return Ok((
                Some(format!("{e:#}").replace("during a trial", "the capture")),
                false,
            ));
        }
        if last_ping.elapsed() >= PING {
            last_ping = Instant::now();
            if watch.ping().is_err() {
                return Ok((
                    Some(format!(
                        "the server stopped answering after {:.0} s (a restart, or it went \
                         away); dbtax waited for it to come back and put the setting back",
                        began.elapsed().as_secs_f64()
                    )),
                    false,
                ));
            }
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
    Ok((None, false))
}

/// Where a capture begins: the log's end once the setting is in force. PostgreSQL's
/// collector writes a statement's line a moment after the statement ran, so the switch's own
/// check (a statement of dbtax's, logged at the new setting) could land past a size read at
/// once, and be captured as an application's. A statement of dbtax's own, a mark, is logged
/// after it, and the capture begins past the mark's line; when the mark does not show within
/// `MARK_PATIENCE`, at the log's end then. Engines whose log is written as the statement
/// ends run no mark.
fn beginning(
    switcher: &mut Switcher,
    reader: &dyn crate::host::probe::Reader,
    log: &Path,
    size: &dyn Fn(&dyn crate::host::probe::Reader) -> Result<u64>,
) -> Result<u64> {
    let at = size(reader)?;
    let mark = format!(
        "dbtax: the capture begins after this line ({} {})",
        std::process::id(),
        crate::host::now_rfc3339()
    );
    // (In the switcher's own session, already open: a new one's first statements would be
    // logged where the log is written as they run.)
    if !switcher.mark(&mark)? {
        return Ok(at);
    }

    let path = log.display().to_string();
    let needle = mark.as_bytes();
    let deadline = Instant::now() + MARK_PATIENCE;
    // Scanned up to `scanned` (less the mark's length, in case it straddles two reads).
    let mut scanned = at;
    while Instant::now() < deadline {
        let end = size(reader)?;
        while scanned < end {
            let max = (end - scanned).min(u64::from(crate::host::probe::FILE_PART)) as u32;
            let part = read_patiently(|| reader.read_file(&path, scanned, max))?;
            if part.is_empty() {
                break;
            }
            if let Some(i) = memchr::memmem::find(&part, needle) {
                // The line's end: the mark's record is one line in every format.
                if let Some(j) = memchr::memchr(b'\n', &part[i..]) {
                    return Ok(scanned + (i + j + 1) as u64);
                }
                if i == 0 {
                    // Not written to its end yet.
                    break;
                }
                scanned += i as u64;
                continue;
            }
            let step = part.len().saturating_sub(needle.len()).max(1);
            scanned += step as u64;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    size(reader)
}

/// How long a capture waits for its mark in PostgreSQL's log.
const MARK_PATIENCE: Duration = Duration::from_secs(3);

/// Copy bytes `range` of `log` into a temporary file beside the output, then rename it
/// into place: the bytes written. Refused before anything is written when the output's
/// filesystem would keep less than 10% free with them.
fn write_output(
    output: &Output,
    reader: &dyn crate::host::probe::Reader,
    log: &Path,
    range: std::ops::Range<u64>,
) -> Result<u64> {
    let want = range.end.saturating_sub(range.start);
    if let Some((free, total)) = crate::host::fs_space(&output.dir) {
        let keep = (crate::experiment::run::disk::MIN_FREE_FRACTION * total as f64) as u64;
        if free.saturating_sub(want) < keep {
            anyhow::bail!(
                "the setting was put back, but the {} MB captured would leave the filesystem of \
                 {} with less than 10% free ({} MB free of {} MB): nothing was written. Give \
                 --out on another filesystem, or a shorter --for",
                want / 1_000_000,
                output.dir.display(),
                free / 1_000_000,
                total / 1_000_000
            );
        }
    }
    let tmp = output.temporary();
    let written = (|| -> Result<u64> {
        let mut file = std::fs::File::create(&tmp)?;
        let n = copy_from(reader, log, range, &mut file)?;
        std::fs::rename(&tmp, &output.path)?;
        Ok(n)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| {
        format!(
            "the setting was put back; writing {}",
            output.path.display()
        )
    })
}

/// The captured file read back as a replay reads it: its format (told from its first
/// lines, as a dry run tells it: a PostgreSQL writing csvlog or jsonlog gives that), the
/// line prefix its lines need when they are not recognised, its statements and sessions.
fn read_back(
    path: &Path,
    server_prefix: Option<&str>,
    engine: &str,
) -> (LogFormat, Option<String>, u64, u64) {
    let head = dbtax_logs::slice::head_of(path).unwrap_or_default();
    let format = LogFormat::detect(&head).unwrap_or(if engine == "mysql" {
        LogFormat::General
    } else {
        LogFormat::Postgres
    });
    let plain = count(path, format, None).unwrap_or((0, 0));
    let prefixed = match server_prefix.filter(|_| format == LogFormat::Postgres) {
        Some(p) => count(path, format, Some(p)).unwrap_or((0, 0)),
        None => (0, 0),
    };
    if prefixed.0 > plain.0 {
        (
            format,
            server_prefix.map(str::to_string),
            prefixed.0,
            prefixed.1,
        )
    } else {
        (format, None, plain.0, plain.1)
    }
}

/// Copy bytes `range` of `log` (on the server's host, read by `reader`) into `out`, a part
/// at a time; the bytes copied (none when the range is empty: the file shrank).
fn copy_from(
    reader: &dyn crate::host::probe::Reader,
    log: &Path,
    range: std::ops::Range<u64>,
    out: &mut std::fs::File,
) -> Result<u64> {
    let path = log.display().to_string();
    let mut at = range.start;
    while at < range.end {
        let max = (range.end - at).min(u64::from(crate::host::probe::FILE_PART)) as u32;
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
            Err(e) if crate::host::probe::is_late(&e) => continue,
            r => return r,
        }
    }
}
