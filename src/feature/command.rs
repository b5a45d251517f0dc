//! `dbtax features` and `dbtax restore`.

use super::catalog::{self, NAMES};
use super::journal::{self, Journal};
use super::toggle::{self, Support};
use crate::cli::{FeaturesArgs, RestoreArgs};
use crate::config::target_from;
use crate::error::usage;
use crate::target::{Target, TargetSpec};
use anyhow::Result;

/// List the catalog, with each feature's support on the target.
pub fn features(args: FeaturesArgs) -> Result<()> {
    if args.offline {
        for n in NAMES {
            let f = catalog::lookup(n, catalog::Flavor::Mariadb)?;
            println!("{:<12} {}", f.name, f.description);
        }
        return Ok(());
    }
    let (spec, managed) = target_from(&args.target, None)?;
    let target = Target::open(&spec, &managed, args.target.schema.as_deref())?;
    let mut conn = target.admin()?;
    println!(
        "Features on {} ({}):",
        target.label(),
        target.server_version
    );
    let flavor = toggle::flavor(&target);
    for n in NAMES {
        let f = catalog::lookup(n, flavor)?;
        let (mark, note) = match toggle::support(&mut conn, &target, &f, target.is_managed())? {
            Support::Yes(note) if note.is_empty() => ("yes", String::new()),
            Support::Yes(note) => ("yes", format!(" ({note})")),
            Support::No(why) => ("no", format!(" ({why})")),
        };
        println!("  {:<12} {:<4} {}{}", f.name, mark, f.description, note);
    }
    Ok(())
}

/// Put back what an interrupted run changed.
pub fn restore(args: RestoreArgs) -> Result<()> {
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
    let (spec, managed) = target_from(&args.target, None)?;
    if matches!(spec, TargetSpec::Managed(_)) {
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
    let target = Target::open(&spec, &managed, args.target.schema.as_deref())?;
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
    let mut conn = target.admin()?;
    let done = toggle::restore_journal(&mut conn, &j)?;
    std::fs::remove_file(&path)?;
    println!("Restored {} on {}:", j.started_at, target.label());
    for s in done {
        println!("  {s}");
    }
    Ok(())
}
