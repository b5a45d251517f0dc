//! Opening a run: the server reached (or started, with the options its features need) and
//! the experiment resolved against it (`open`, where the dry run stops), then made ready for
//! trials (`Ready`): locked, its tables prepared, every agent checked, its journal begun,
//! results.json's header filled in. Until the journal is begun nothing on the server has
//! changed; an error before then is bad input or an unreachable server.

use crate::experiment::prepare::header::header;
use crate::experiment::prepare::plan::Plan;
use crate::experiment::prepare::preflight::preflight;
use crate::experiment::spec::Experiment;
use crate::experiment::spec::RunOptions;
use crate::feature::toggle::Switcher;
use crate::load::{Load, Target};
use crate::results::Results;
use crate::server::{Server, ServerConfig};
use crate::workload::PreparedWorkload;
use anyhow::Result;
use dbtax_stats::run::Observer;
use std::path::{Path, PathBuf};

/// Open the server and resolve the experiment against it, refusing what the plan says would
/// be refused (bad input: nothing has changed). Changes nothing on the server (a managed one
/// is started, with the options the features need). `restart_cmd`: the user's way to restart
/// their server.
pub fn open(
    exp: &Experiment,
    config: &ServerConfig,
    restart_cmd: Option<&str>,
) -> Result<(Server, Plan)> {
    let (server, plan) = resolve(exp, config, restart_cmd)?;
    match &plan.refused {
        Some(why) => Err(crate::error::usage(why.clone())),
        None => Ok((server, plan)),
    }
}

/// `open` without the refusal: the plan as it would run, for the dry run to show.
fn resolve(
    exp: &Experiment,
    config: &ServerConfig,
    restart_cmd: Option<&str>,
) -> Result<(Server, Plan)> {
    let mut config = config.clone();
    config
        .managed
        .server_opts
        .extend(exp.server_opts.iter().cloned());
    if config.spec.is_managed() {
        config.managed.cpus = crate::host::cpus::managed_server_cpus(&config.cpus);
    }
    let features: Vec<&str> = exp
        .variants
        .iter()
        .flat_map(|v| &v.features)
        .map(String::as_str)
        .collect();
    let mut server = Server::open(&config, &features)?;
    if let Some((spec, bin)) = &exp.server_host {
        attach_probe(&mut server, spec, bin, exp.probe_silence)?;
    }
    let mut plan = preflight(exp, &server, restart_cmd)?;
    plan.cpus = crate::host::cpus::place(
        &config.cpus,
        config.managed.cpus.as_deref(),
        server.is_managed(),
        // A server on another host shares no CPU with the load.
        server.server_pid.filter(|_| server.host.0.here()),
    );
    // From here on every thread this one starts (the workers) runs on the load's CPUs.
    if let Some(c) = plan.cpus.cpus.as_ref().filter(|_| plan.cpus.pinned) {
        crate::host::cpus::set_affinity(&c.load).map_err(|e| {
            crate::error::usage(format!(
                "cannot bind dbtax's load to CPU {}: {e}",
                crate::host::cpus::format_list(&c.load)
            ))
        })?;
    }
    plan.notes.extend(plan.cpus.note.clone());
    Ok((server, plan))
}

/// `--server-host`: read the server's host through a probe started there, unless the server
/// runs on this machine (then this process reads it, and the probe is not needed).
fn attach_probe(
    server: &mut Server,
    spec: &crate::agent::AgentSpec,
    bin: &crate::agent::AgentBin,
    silence: std::time::Duration,
) -> Result<()> {
    if server.datadir.is_some() {
        crate::errln!(
            "note: the server runs on this machine: it is read here, and --server-host {} is \
             not used",
            spec.label()
        );
        return Ok(());
    }
    let probe = crate::agent::probe::RemoteProbe::start(spec, bin, silence, &mut |m| {
        crate::errln!("{m}");
    })?;
    server.attach_host(crate::host::probe::Host(std::sync::Arc::new(probe)))
}

/// The dry run: the plan and its statements as text. Changes nothing.
pub fn dry_run(
    exp: &Experiment,
    config: &ServerConfig,
    restart_cmd: Option<&str>,
) -> Result<String> {
    let (server, plan) = resolve(exp, config, restart_cmd)?;
    crate::experiment::prepare::dry_run::render(exp, &server.label(), &server.server_version, &plan)
}

/// A server made ready for trials: opened, resolved, locked, its tables prepared, its
/// journal begun, results.json's header filled in.
pub(crate) struct Ready {
    pub(crate) server: Server,
    pub(crate) plan: Plan,
    pub(crate) prepared: PreparedWorkload,
    pub(crate) switcher: Switcher,
    pub(crate) results: Results,
    pub(crate) dir: PathBuf,
}

impl Ready {
    /// Everything before the first trial. Err: nothing was changed (bad input, an
    /// unreachable server, another run holding it) or what was begun is restored.
    pub(crate) fn new(
        exp: &Experiment,
        (mut server, mut plan): (Server, Plan),
        opts: &RunOptions,
        load: &mut dyn Load,
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
        let hosts = load.hosts();
        if !hosts.is_empty() {
            // Every agent reaches the server before any setting changes.
            display.status("checking that every agent reaches the server");
        }
        load.check(&Target {
            server: &server,
            workload: &prepared,
        })?;
        if prepared.created.contains(&true) {
            wait_until_quiet(&server, display);
        }
        switcher.stamp(&mut server)?;
        switcher.begin(&plan.switches)?;
        match server.replay_reader(&exp.workload)? {
            crate::server::Reader::Own => {}
            crate::server::Reader::Named(login) => {
                display.status(&format!(
                    "replaying clients log in as {} (it may only read), in read-only sessions",
                    login.user
                ));
                server.replay_login = Some(login);
            }
            crate::server::Reader::Temporary => {
                let (login, _) = switcher.create_reader()?;
                display.status(&format!(
                    "replaying clients log in as {}, a temporary user that may only read \
                     (dropped at the end), in read-only sessions",
                    login.user
                ));
                server.replay_login = Some(login);
            }
        }
        // A plugin the run installs names its log file now.
        plan.log_files.refresh(&server)?;
        let mut results = header(exp, &server, &plan, &switcher.originals(), started_at);
        results.workload = prepared.to_json();
        results.agents = hosts;
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

/// The results folder: `--out`, else ./dbtax-results/<time>-<name>/, created now.
pub(crate) fn out_dir(explicit: Option<&Path>, name: &str) -> Result<PathBuf> {
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
    // A folder that exists but cannot be written (read-only, full) fails here, not after
    // the first block.
    let probe = dir.join(".dbtax-write-check");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| {
            crate::error::usage(format!(
                "cannot write results into --out {}: {e}. Nothing was changed",
                dir.display()
            ))
        })?;
    Ok(dir)
}
