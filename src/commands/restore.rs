//! `dbtax restore`: put back what an interrupted run changed (after a kill -9 or a crash).

use crate::cli::RestoreArgs;
use crate::config::server_config;
use crate::error::usage;
use crate::feature::journal::{self, Journal};
use crate::feature::toggle;
use crate::server::{Server, TargetSpec};
use anyhow::Result;

/// Put back what an interrupted run changed.
pub fn run(args: RestoreArgs) -> Result<()> {
    let pending = journal::pending();
    if args.list {
        if pending.is_empty() {
            println!(
                "No pending journals under {}.",
                journal::state_dir().display()
            );
        }
        for (path, j) in pending {
            println!(
                "{}: {} setting(s), {} plugin(s), run started {} by pid {} ({})",
                j.target,
                j.originals.len(),
                j.installed_plugins.len(),
                j.started_at,
                j.pid,
                path.display()
            );
        }
        return Ok(());
    }
    let config = server_config(&args.target, None)?;
    if matches!(config.spec, TargetSpec::Managed(_)) {
        let hint = match pending.first() {
            Some((_, j)) => format!(
                " Pending: `dbtax restore --target '{}'` (with its password).",
                j.target
            ),
            None => String::new(),
        };
        return Err(usage(format!(
            "managed servers are thrown away, there is nothing to restore on them: pass the \
             --target of your own server.{hint}"
        )));
    }
    let target = Server::open(&config)?;
    let path = journal::path_for(&target.journal_key());
    let Some(j) = Journal::load(&path)? else {
        println!(
            "Nothing to restore on {}: no pending journal.",
            target.label()
        );
        return Ok(());
    };
    if j.writer_alive() {
        return Err(usage(format!(
            "the dbtax that wrote this journal (pid {}) is still running; it restores by itself",
            j.pid
        )));
    }
    let mut admin = target.admin()?;
    let done = toggle::restore_journal(admin.as_mut(), &j)?;
    std::fs::remove_file(&path)?;
    println!("Restored {} on {}:", j.started_at, target.label());
    for s in done {
        println!("  {s}");
    }
    Ok(())
}
