//! A journal's life outside a run: refusing to start over a pending one, and applying one
//! (by a run's own restore, or by `dbtax restore` after a kill -9).

use super::journal::{self, Journal};
use crate::error::usage;
use crate::server::value::same_value;
use crate::server::{Admin, Server};
use anyhow::Result;
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

/// A restore that did what it could and could not do the rest (the server answers: it
/// refused some steps). The journal stays.
#[derive(Debug, thiserror::Error)]
#[error("{}", self.words())]
pub struct RestoreIncomplete {
    /// What was put back (statements, or what was left as someone else set it).
    pub done: Vec<String>,
    /// What could not be, each with the server's reason.
    pub failed: Vec<String>,
}

impl RestoreIncomplete {
    fn words(&self) -> String {
        let done = if self.done.is_empty() {
            "nothing else".to_string()
        } else {
            self.done.join("; ")
        };
        format!(
            "the restore did every step it could ({done}) and could not: {}",
            self.failed.join("; ")
        )
    }
}

/// Apply a journal: the logins it created dropped, originals back in reverse order
/// (variables that vanished with a plugin are skipped), then uninstall the plugins it lists.
/// Every step is tried: one the server refuses does not keep the others from happening
/// (a login that cannot be dropped must not leave a setting changed); the refusals come
/// back together as `RestoreIncomplete`, with what was done. A server that stopped
/// answering stops the restore at once (`ServerLost`: the caller reconnects and tries
/// again; every step can run twice).
pub fn restore_journal(admin: &mut dyn Admin, j: &Journal) -> Result<Vec<String>> {
    let mut done = vec![];
    let mut failed = vec![];
    let mut step = |what: String, r: Result<Option<String>>| -> Result<()> {
        match r {
            Ok(sql) => done.extend(sql),
            Err(e) if crate::error::server_gone(&e) => return Err(e.context("restoring")),
            Err(e) => failed.push(format!("{what} ({e:#})")),
        }
        Ok(())
    };
    // The replay's reader first: nothing it could still do outlives the restore.
    for spec in &j.created_logins {
        step(
            format!("drop the temporary login {spec}"),
            admin.drop_reader(spec).map(Some),
        )?;
    }
    let names: Vec<&str> = j.originals.iter().map(|(k, _)| k.as_str()).collect();
    let now = match admin.global_vars(&names) {
        Ok(now) => now,
        Err(e) => return Err(e.context("restoring")),
    };
    for (var, value) in j.originals.iter().rev() {
        // Only what is still as dbtax left it: a value someone set since is theirs.
        if let (Some(is), Some(set)) = (now.get(var), j.set_values.get(var))
            && !same_value(is, value)
            && !set.iter().any(|s| same_value(s, is))
        {
            step(
                String::new(),
                Ok(Some(format!(
                    "left {var} = {is} as it is: someone changed it after the run set it \
                     ({}); before the run it was {value}",
                    set.join(", ")
                ))),
            )?;
            continue;
        }
        let persisted = j.persisted_entry(var);
        step(
            format!("put {var} back to {value}"),
            admin.restore_global(var, value, persisted.as_ref().map(|p| p.as_deref())),
        )?;
    }
    for soname in &j.installed_plugins {
        step(
            format!("uninstall the {soname} plugin"),
            admin.uninstall_plugin(soname),
        )?;
    }
    if let Some(text) = &j.persisted_text {
        step(
            "put the settings file back as it was".into(),
            admin.restore_persisted_text(text),
        )?;
    }
    if !failed.is_empty() {
        return Err(RestoreIncomplete { done, failed }.into());
    }
    Ok(done)
}
