//! `dbtax capture`: log every statement a while, put the setting back, write the file.

use crate::cli::CaptureArgs;
use crate::config::server_config;
use crate::experiment::capture::{CaptureSpec, capture};
use crate::workload::replay::slice::count;
use crate::workload::replay::spec::LogFormat;
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
        server_host,
    };
    let c = capture(&config, &spec, &mut |m| crate::errln!("{m}"))?;
    let restored: Vec<String> = c.restored.iter().map(|(k, v)| format!("{k}={v}")).collect();
    crate::outln!(
        "Captured {:.1} s of {} ({} bytes of {}) into {}; put back: {}",
        c.seconds,
        c.label,
        c.bytes,
        c.log.display(),
        out.display(),
        restored.join(", ")
    );
    if let Some(why) = &c.stopped {
        crate::outln!("Ended early: {why}");
    }
    for n in &c.notes {
        crate::outln!("Note: {n}");
    }
    let format = LogFormat::parse(c.format)?;
    // Read back as a replay reads it: the server's own prefix when its lines are not one
    // of those recognised.
    let (plain, prefixed) = (
        count(&out, format, None).unwrap_or((0, 0)),
        match &c.line_prefix {
            Some(p) => count(&out, format, Some(p)).unwrap_or((0, 0)),
            None => (0, 0),
        },
    );
    let (flag, (statements, sessions)) = if prefixed.0 > plain.0 {
        let p = c.line_prefix.as_deref().unwrap_or_default();
        (
            format!(" --log-line-prefix '{}'", p.replace('\'', "'\\''")),
            prefixed,
        )
    } else {
        (String::new(), plain)
    };
    crate::outln!(
        "It holds {statements} statements in {sessions} sessions. Replay it with:\n  dbtax run \
         --log {}{flag} --feature {} --replay-user temporary --target '{}'",
        out.display(),
        if c.format == "slow" {
            "general-log"
        } else {
            "log-statement"
        },
        c.label
    );
    Ok(())
}
