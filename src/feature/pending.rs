//! A journal's life outside a run: refusing to start over a pending one, and applying one
//! (by a run's own restore, or by `dbtax restore` after a kill -9).

use super::journal::{self, Journal};
use crate::error::usage;
use crate::server::value::same_value;
use crate::server::{Admin, Server};
use anyhow::{Context, Result};
use std::path::PathBuf;

/// Refuse to work on a server with a pending journal (an interrupted run, or another dbtax
/// at work). Returns where this run's journal goes (None: a managed server, not journaled).
pub fn ensure_no_pending_journal(server: &Server) -> Result<Option<PathBuf>> {
    if server.is_managed() {
        return Ok(None);
    }
    let p = journal::path_for(&server.journal_key());
    if let Some(j) = Journal::load(&p).map_err(|e| usage(format!("{e:#}")))? {
        if j.writer_alive() {
            return Err(usage(format!(
                "another dbtax (pid {}) is running an experiment on {}; wait for it to finish. \
                 Nothing was changed",
                j.pid,
                server.label()
            )));
        }
        return Err(usage(format!(
            "an earlier dbtax run on {} was interrupted before it could restore {} setting(s) \
             (journal {}). Run `dbtax restore --target '{}'` first. Nothing was changed",
            server.label(),
            j.originals.len() + j.installed_plugins.len(),
            p.display(),
            server.label()
        )));
    }
    Ok(Some(p))
}

/// What a journal's restarts left running: each variable a restart-only option set whose
/// value is not the one it had before ("shared_preload_libraries = pgaudit (was '')").
pub fn restart_left(admin: &mut dyn Admin, j: &Journal) -> Result<Vec<String>> {
    if j.restart_originals.is_empty() {
        return Ok(vec![]);
    }
    let names: Vec<&str> = j.restart_originals.keys().map(String::as_str).collect();
    let now = admin.global_vars(&names)?;
    Ok(j.restart_originals
        .iter()
        .filter_map(|(k, was)| {
            let v = now.get(k)?;
            (!same_value(v, was)).then(|| format!("{k} = {v} (was '{was}')"))
        })
        .collect())
}

/// Apply a journal: the logins it created dropped, originals back in reverse order
/// (variables that vanished with a plugin are skipped), then uninstall the plugins it lists.
pub fn restore_journal(admin: &mut dyn Admin, j: &Journal) -> Result<Vec<String>> {
    let mut done = vec![];
    // The replay's reader first: nothing it could still do outlives the restore.
    for spec in &j.created_logins {
        done.push(admin.drop_reader(spec).context("restoring")?);
    }
    let names: Vec<&str> = j.originals.iter().map(|(k, _)| k.as_str()).collect();
    let now = admin.global_vars(&names).context("restoring")?;
    for (var, value) in j.originals.iter().rev() {
        // Only what is still as dbtax left it: a value someone set since is theirs.
        if let (Some(is), Some(set)) = (now.get(var), j.set_values.get(var))
            && !same_value(is, value)
            && !set.iter().any(|s| same_value(s, is))
        {
            done.push(format!(
                "left {var} = {is} as it is: changed since the run set it ({}); its value \
                 before the run was {value}",
                set.join(", ")
            ));
            continue;
        }
        let persisted = j.persisted_entry(var);
        if let Some(sql) = admin
            .restore_global(var, value, persisted.as_ref().map(|p| p.as_deref()))
            .context("restoring")?
        {
            done.push(sql);
        }
    }
    for soname in &j.installed_plugins {
        if let Some(sql) = admin.uninstall_plugin(soname).context("restoring")? {
            done.push(sql);
        }
    }
    if let Some(text) = &j.persisted_text
        && let Some(note) = admin.restore_persisted_text(text).context("restoring")?
    {
        done.push(note);
    }
    Ok(done)
}
