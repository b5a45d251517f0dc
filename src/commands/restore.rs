//! `dbtax restore`: put back what an interrupted run changed (after a kill -9 or a crash).

use crate::cli::RestoreArgs;
use crate::config::server_config;
use crate::error::usage;
use crate::feature::journal::{self, Journal};
use crate::feature::toggle;
use crate::server::Server;
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
    if config.spec.is_managed() {
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
    let target = Server::open(&config, &[])?;
    let mut admin = target.admin()?;
    // The run lock: never restore under a run that is still working (it restores itself).
    // A run killed a moment ago may hold it until the server notices its connection closed.
    let mut locked = admin.try_run_lock()?;
    for _ in 0..30 {
        if locked {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        locked = admin.try_run_lock()?;
    }
    if !locked {
        let holder = admin.run_lock_holder()?.unwrap_or_default();
        return Err(usage(format!(
            "a dbtax run is working on {} ({holder}); it restores by itself when it ends",
            target.label()
        )));
    }
    let key = target.journal_key();
    let path = journal::path_for(&key);
    let local = Journal::load(&path).map_err(|e| usage(format!("{e:#}")))?;
    let on_server = admin.load_server_journals(&key)?;
    let from_server = on_server
        .first()
        .and_then(|(_, text)| serde_json::from_str::<Journal>(text).ok());
    // The local file first (it is written first); else the copy kept on the server, which
    // a run from another machine left.
    let Some(j) = local.or(from_server) else {
        println!(
            "Nothing to restore on {}: no pending journal.",
            target.label()
        );
        return Ok(());
    };
    let done = toggle::restore_journal(admin.as_mut(), &j)?;
    for (schema, _) in &on_server {
        admin.delete_server_journal(schema, &key)?;
    }
    if path.exists() {
        std::fs::remove_file(&path)?;
    }
    println!(
        "Restored the run started {} (pid {} on {}) on {}:",
        j.started_at,
        j.pid,
        if j.host.is_empty() { "?" } else { &j.host },
        target.label()
    );
    for s in done {
        println!("  {s}");
    }
    Ok(())
}
