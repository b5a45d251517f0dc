//! `dbtax restore`'s work: put back what an interrupted run changed on `target` (after a
//! kill -9 or a crash), from the local journal, or from the copy kept on the server when the
//! local one is gone or damaged; never a journal written for another server, nor under a
//! run that is still working. `commands::restore` opens the server and prints what it says.

use crate::error::usage;
use crate::feature::journal::{self, Journal};
use crate::feature::pending;
use crate::server::Server;
use anyhow::Result;

/// Put back what an interrupted run changed on `target`, restarting it with `restart_cmd`
/// when the run had restarted it with options of its own; what was done and found goes to
/// `say` as it happens, a line each.
pub fn restore_interrupted(
    target: &mut Server,
    restart_cmd: Option<&str>,
    say: &mut dyn FnMut(String),
) -> Result<()> {
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
    let (local, damaged) = match Journal::load(&path) {
        Ok(j) => (j, None),
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    let on_server = admin.load_server_journals(&key)?;
    let from_server = on_server
        .first()
        .and_then(|(schema, text)| Some((schema, serde_json::from_str::<Journal>(text).ok()?)));
    // The local file first (it is written first); else the copy kept on the server, which
    // a run from another machine left, or which stands in for a damaged local file.
    let j = match (local, &from_server, &damaged) {
        (Some(j), _, _) => j,
        (None, Some((schema, j)), Some(why)) => {
            say(format!(
                "The local journal {} is damaged ({why}); restoring from the copy kept on the \
                 server in {schema}.dbtax_journal.",
                path.display()
            ));
            j.clone()
        }
        (None, Some((_, j)), None) => j.clone(),
        (None, None, Some(why)) => {
            return Err(usage(format!(
                "the journal {} is damaged ({why}) and the server keeps no copy of it: check \
                 the server's settings by hand (the file may still show the original values), \
                 then delete the file",
                path.display()
            )));
        }
        (None, None, None) => {
            say(format!(
                "Nothing to restore on {}: no pending journal.",
                target.label()
            ));
            return Ok(());
        }
    };
    if !j.server.is_empty() && j.server != target.identity {
        return Err(usage(format!(
            "the journal {} was written for server {} ({}), but {} is server {}: it is not \
             applied here. {} Nothing was changed",
            path.display(),
            j.server,
            j.target,
            target.label(),
            target.identity,
            j.what_it_owns()
        )));
    }
    let differs = j.differs(&admin.facts()?);
    // The same identity, other facts: a copy (a backup, a copied datadir, a replica carry the
    // identity) or this very server moved (another port, socket or host name). A copy made
    // before the run cannot hold the run's own row of the journal on the server: where the
    // server holds it, this is the journal's server, moved.
    let moved = !differs.is_empty()
        && from_server
            .as_ref()
            .is_some_and(|(_, on)| on.started_at == j.started_at && on.pid == j.pid);
    if !differs.is_empty() && !moved {
        return Err(usage(format!(
            "the journal {} was written for {} and carries the identity of {}, but {} is \
             another server with that identity (a copy: a backup, a copied datadir or a \
             replica carries it; it holds no copy of this run's journal, so it is not the \
             journal's server moved to another port): {}. It is not applied here. {} Nothing \
             was changed",
            path.display(),
            j.target,
            target.identity,
            target.label(),
            differs.join(", "),
            j.what_it_owns()
        )));
    }
    if moved {
        say(format!(
            "{} is the journal's server, moved ({}): it holds this run's own journal, which a \
             copy made before the run could not. Restoring it here.",
            target.label(),
            differs.join(", ")
        ));
    }
    // A local journal whose copy on the server is gone was restored from elsewhere (another
    // state folder, another machine), or its run stopped before its first change (the copy
    // is written before any): nothing is left to put back, and applying it again would undo
    // whatever was changed since. Retired, not applied.
    if from_server.is_none() && damaged.is_none() && path.exists() {
        std::fs::remove_file(&path)?;
        say(format!(
            "Nothing to restore on {}: the journal {} of the run started {} (pid {}) is \
             already restored (the server keeps no copy of it any more); retired it.",
            target.label(),
            path.display(),
            j.started_at,
            j.pid
        ));
        return Ok(());
    }
    let done = pending::restore_journal(admin.as_mut(), &j)?;
    let mut left = pending::restart_left(admin.as_mut(), &j)?;
    if !left.is_empty()
        && let Some(cmd) = restart_cmd
    {
        say(format!(
            "Restarting {} without the run's options: {cmd}",
            target.label()
        ));
        target.restart_with_command(cmd, &[])?;
        admin = target.admin()?;
        left = pending::restart_left(admin.as_mut(), &j)?;
    }
    if !left.is_empty() {
        // The journal stays (here and on the server) until the server runs as found.
        let cmd = restart_cmd
            .or(j.restart_cmd.as_deref())
            .unwrap_or("<a command that restarts the server>");
        anyhow::bail!(
            "the settings are back, but {} still runs with what the interrupted run restarted \
             it with: {}. Restart it without those options to finish: `dbtax restore --target \
             '{}' --restart-cmd '{cmd}'` (or restart it yourself, then run `dbtax restore` \
             again); the journal is kept until then",
            target.label(),
            left.join(", "),
            target.label()
        );
    }
    for (schema, _) in &on_server {
        admin.delete_server_journal(schema, &key)?;
    }
    if path.exists() {
        std::fs::remove_file(&path)?;
    }
    say(format!(
        "Restored the run started {} (pid {} on {}) on {}:",
        j.started_at,
        j.pid,
        if j.host.is_empty() { "?" } else { &j.host },
        target.label()
    ));
    for s in done {
        say(format!("  {s}"));
    }
    Ok(())
}
