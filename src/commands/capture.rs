//! `dbtax capture`: log every statement a while, put the setting back, write the file.

use crate::capture::{CaptureSpec, capture};
use crate::cli::CaptureArgs;
use crate::config::server_config;
use crate::units::plural;
use anyhow::Result;
use std::path::PathBuf;

/// Run `dbtax capture`.
pub fn run(args: CaptureArgs) -> Result<()> {
    if args.duration.is_zero() {
        return Err(crate::error::usage("--for must be longer than 0 s"));
    }
    let config = server_config(&args.target, None)?;
    let out = args.out.unwrap_or_else(|| {
        let stamp: String = crate::host::now_rfc3339()
            .chars()
            .filter(|c| c.is_ascii_digit())
            .take(14)
            .collect();
        PathBuf::from(format!("dbtax-capture-{}-{}.log", &stamp[..8], &stamp[8..]))
    });
    if args.agent_bin.is_some() && args.server_host.is_none() {
        return Err(crate::error::usage(
            "--agent-bin names the dbtax that reads the log on the database's host: it goes \
             with --server-host",
        ));
    }
    let server_host = match &args.server_host {
        Some(h) => Some((
            crate::agent::server_host(h)?,
            crate::agent::AgentBin::parse(args.agent_bin.as_deref()),
        )),
        None => None,
    };
    let spec = CaptureSpec {
        duration: args.duration,
        out: out.clone(),
        max_log_bytes: args.max_log_bytes,
        source: args.source.clone(),
        server_host,
    };
    let c = capture(&config, &spec, &mut |m| crate::errln!("{m}"))?;
    crate::outln!(
        "Captured {:.1} s of {} ({} bytes of {}, through {}) into {}",
        c.seconds,
        c.label,
        c.bytes,
        c.log.display(),
        c.source.what,
        out.display(),
    );
    if c.restored.is_empty() {
        crate::outln!("Put back: nothing was left to put back");
    } else {
        crate::outln!("Put back: {}", c.restored.join("; "));
    }
    if let Some(why) = &c.stopped {
        crate::outln!("Ended early: {why}");
    }
    if !c.source.lacks.is_empty() {
        crate::outln!("Note: {}", c.source.lacks);
    }
    for n in &c.notes {
        crate::outln!("Note: {n}");
    }
    let flag = match &c.line_prefix {
        Some(p) => format!(" --log-line-prefix '{}'", p.replace('\'', "'\\''")),
        None => String::new(),
    };
    crate::outln!(
        "It holds {} in {}. Replay it with:\n  dbtax run --log {}{flag} --feature {} \
         --replay-user temporary --target '{}'",
        plural(c.statements, "statement"),
        plural(c.sessions, "session"),
        out.display(),
        if c.format.family() == "mysql" {
            "general-log"
        } else {
            "log-statement"
        },
        c.label
    );
    Ok(())
}
