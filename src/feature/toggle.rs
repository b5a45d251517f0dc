//! Safe switching. `Switcher::begin` refuses to start over a pending journal, journals every
//! original value (and every plugin it installs) before the first change, `apply` sets a
//! variant's state, `restore` puts everything back and removes the journal. Dropping a
//! Switcher that was not restored restores it (error paths, Ctrl-C).

use super::journal::{self, Journal};
use crate::error::usage;
use crate::server::catalog::Plugin;
use crate::server::{Admin, Server};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The full state of one variant: every touched variable, with its value (None: original).
pub type State = Vec<(String, Option<String>)>;

/// Switches a server between variant states, journaled.
pub struct Switcher {
    admin: Box<dyn Admin>,
    journal: Journal,
    journal_path: Option<PathBuf>,
    current: BTreeMap<String, String>,
    restored: bool,
    /// Statements run so far, for the log.
    pub statements: Vec<String>,
}

/// Whether two spellings of a server value mean the same (`10.000000` = `10`, `ON` = `1`).
pub fn same_value(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => {
            let norm = |s: &str| match s.to_ascii_uppercase().as_str() {
                "1" | "ON" | "TRUE" => "ON".to_string(),
                "0" | "OFF" | "FALSE" => "OFF".to_string(),
                other => other.to_string(),
            };
            norm(a) == norm(b)
        }
    }
}

impl Switcher {
    /// Refuse to start over a pending journal; install plugins and read originals, journaling
    /// each before acting. Journals only servers dbtax does not manage (a managed server is
    /// thrown away whatever happens).
    pub fn begin(
        server: &Server,
        plugins: &[Plugin],
        vars: &[String],
        started_at: &str,
    ) -> Result<Switcher> {
        let journal_path = ensure_no_pending_journal(server)?;
        let mut s = Switcher {
            admin: server.admin()?,
            journal: Journal {
                target: server.label(),
                pid: std::process::id(),
                started_at: started_at.to_string(),
                ..Default::default()
            },
            journal_path,
            current: BTreeMap::new(),
            restored: false,
            statements: vec![],
        };
        for p in plugins {
            if !s.admin.plugin_active(p)? {
                s.journal.installed_plugins.push(p.soname.to_string());
                s.save()?;
                let sql = s.admin.install_plugin(p)?;
                s.statements.push(sql);
            }
        }
        let names: Vec<&str> = vars.iter().map(String::as_str).collect();
        let found = s.admin.global_vars(&names)?;
        for v in vars {
            let value = found
                .get(v)
                .ok_or_else(|| usage(format!("the server has no global variable '{v}'")))?;
            s.journal.originals.push((v.clone(), value.clone()));
            s.current.insert(v.clone(), value.clone());
        }
        s.save()?;
        Ok(s)
    }

    fn save(&self) -> Result<()> {
        match &self.journal_path {
            Some(p) => self.journal.save(p),
            None => Ok(()),
        }
    }

    /// After a server restart: a new connection, and every variable back at its original.
    pub fn after_restart(&mut self, server: &Server) -> Result<()> {
        self.admin = server.admin()?;
        self.current = self.journal.original_map();
        Ok(())
    }

    /// The original values, as journaled.
    pub fn originals(&self) -> BTreeMap<String, String> {
        self.journal.original_map()
    }

    /// Put the server into a variant's state; only changed variables are set.
    pub fn apply(&mut self, state: &State) -> Result<()> {
        let originals = self.journal.original_map();
        for (var, want) in state {
            let value = match want {
                Some(v) => v.clone(),
                None => originals.get(var).cloned().unwrap_or_default(),
            };
            if self
                .current
                .get(var)
                .is_some_and(|cur| same_value(cur, &value))
            {
                continue;
            }
            let sql = self.admin.set_global(var, &value)?;
            self.statements.push(sql);
            self.current.insert(var.clone(), value);
        }
        Ok(())
    }

    /// Put every original value back, uninstall plugins dbtax installed, remove the journal.
    pub fn restore(&mut self) -> Result<()> {
        if self.restored {
            return Ok(());
        }
        restore_journal(self.admin.as_mut(), &self.journal)?;
        if let Some(p) = &self.journal_path {
            let _ = std::fs::remove_file(p);
        }
        self.restored = true;
        Ok(())
    }
}

impl Drop for Switcher {
    fn drop(&mut self) {
        if !self.restored
            && let Err(e) = self.restore()
        {
            eprintln!(
                "Error: restoring the server's settings failed: {e:#}. Run `dbtax restore --target '{}'`",
                self.journal.target
            );
        }
    }
}

/// Refuse to work on a server with a pending journal (an interrupted run, or another dbtax
/// at work). Returns where this run's journal goes (None: a managed server, not journaled).
pub fn ensure_no_pending_journal(server: &Server) -> Result<Option<PathBuf>> {
    if server.is_managed() {
        return Ok(None);
    }
    let p = journal::path_for(&server.journal_key());
    if let Some(j) = Journal::load(&p)? {
        if j.writer_alive() {
            return Err(usage(format!(
                "another dbtax (pid {}) is running an experiment on {}; wait for it to finish",
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

/// Apply a journal: originals back in reverse order (variables that vanished with a plugin
/// are skipped), then uninstall the plugins it lists.
pub fn restore_journal(admin: &mut dyn Admin, j: &Journal) -> Result<Vec<String>> {
    let mut done = vec![];
    for (var, value) in j.originals.iter().rev() {
        if let Some(sql) = admin.restore_global(var, value).context("restoring")? {
            done.push(sql);
        }
    }
    for soname in &j.installed_plugins {
        if let Some(sql) = admin.uninstall_plugin(soname).context("restoring")? {
            done.push(sql);
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_compare_like_the_server_reports_them() {
        assert!(same_value("10.000000", "10"));
        assert!(same_value("ON", "1"));
        assert!(same_value("off", "OFF"));
        assert!(!same_value("FILE", "TABLE"));
        assert!(!same_value("0", "1"));
    }
}
