//! Safe switching. `Switcher::begin` refuses to start over a pending journal, journals every
//! original value (and every plugin it installs) before the first change, `apply` sets a
//! variant's state, `restore` puts everything back and removes the journal. Dropping a
//! Switcher that was not restored restores it (error paths, Ctrl-C).

use super::catalog::{Feature, Flavor, Plugin};
use super::journal::{self, Journal};
use crate::error::usage;
use crate::target::Target;
use crate::target::mysql::{
    clean_error, global_vars, grants_text, probe_set_privilege, set_global_sql,
};
use anyhow::{Context, Result};
use mysql::prelude::Queryable;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Whether a target can run a feature, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Ready (the note says what dbtax will do first, e.g. install a plugin).
    Yes(String),
    /// Not possible on this target, with the reason.
    No(String),
}

/// The server family of a connected target.
pub fn flavor(target: &Target) -> Flavor {
    if crate::target::mysql::is_mariadb(&target.server_version) {
        Flavor::Mariadb
    } else {
        Flavor::Mysql
    }
}

/// Is a plugin loaded (ACTIVE)?
fn plugin_active(conn: &mut mysql::Conn, p: &Plugin) -> Result<bool> {
    let status: Option<String> = conn.exec_first(
        "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = ?",
        (p.name,),
    )?;
    Ok(status.is_some_and(|s| s.eq_ignore_ascii_case("ACTIVE")))
}

/// Can the plugin be installed (its library is in the plugin dir)?
fn plugin_installable(conn: &mut mysql::Conn, p: &Plugin, target: &Target) -> bool {
    let in_all: Option<String> = conn
        .exec_first(
            "SELECT PLUGIN_NAME FROM information_schema.ALL_PLUGINS WHERE PLUGIN_NAME = ?",
            (p.name,),
        )
        .ok()
        .flatten();
    if in_all.is_some() {
        return true;
    }
    // MySQL has no ALL_PLUGINS: look for the library when the server is local.
    let dir: Option<String> = conn.query_first("SELECT @@plugin_dir").ok().flatten();
    target.local_datadir.is_some()
        && dir.is_some_and(|d| PathBuf::from(d).join(format!("{}.so", p.soname)).exists())
}

/// May this login install plugins (INSERT on mysql.plugin)?
fn may_install_plugins(grants: &str) -> bool {
    grants.lines().any(|g| {
        (g.contains(" ON *.* ")
            || g.contains(" ON `MYSQL`.* ")
            || g.contains(" ON `MYSQL`.`PLUGIN` "))
            && (g.contains("ALL PRIVILEGES") || g.contains("INSERT"))
    })
}

/// Check one feature on a target without changing anything. `SET GLOBAL v = <its current
/// value>` is how privileges are probed: refused without the privilege, a no-op with it.
/// `can_restart`: dbtax may restart the server (managed, or `--restart-cmd`).
pub fn support(
    conn: &mut mysql::Conn,
    target: &Target,
    f: &Feature,
    can_restart: bool,
) -> Result<Support> {
    let mut notes = vec![];
    if !f.restart_opts.is_empty() {
        let opts = f.restart_opts.join(" --");
        if !can_restart {
            return Ok(Support::No(format!(
                "switching it takes a server restart (--{opts}), which dbtax does only on a \
                 managed target, or with --restart-cmd"
            )));
        }
        notes.push(format!("restarts the server with --{opts} for its trials"));
    }
    if let Some(p) = &f.plugin
        && !plugin_active(conn, p)?
    {
        if !plugin_installable(conn, p, target) {
            return Ok(Support::No(format!(
                "the {} plugin ({}.so) is not available on this server",
                p.name.to_lowercase(),
                p.soname
            )));
        }
        if !may_install_plugins(&grants_text(conn)?) {
            return Ok(Support::No(format!(
                "installing the {} plugin needs INSERT on mysql.plugin, which this user lacks",
                p.soname
            )));
        }
        notes.push(format!(
            "installs the {} plugin, removes it after",
            p.soname
        ));
    }
    if let Some(v) = f.requires_on {
        let vals = global_vars(conn, &[v])?;
        let on = vals
            .get(v)
            .is_some_and(|x| x.eq_ignore_ascii_case("ON") || x == "1");
        if !on {
            if target.is_managed() {
                notes.push(format!(
                    "starts the managed server with {}",
                    f.managed_server_opts.join(" ")
                ));
            } else {
                return Ok(Support::No(format!(
                    "needs {v}=ON, which takes a server restart: enable it in the server's \
                     configuration, or use a managed target"
                )));
            }
        }
    }
    let names: Vec<&str> = f.on.iter().chain(f.off).map(|(k, _)| *k).collect();
    let plugin_loaded = match &f.plugin {
        Some(p) => plugin_active(conn, p)?,
        None => true,
    };
    let present = global_vars(conn, &names)?;
    for n in &names {
        match present.get(*n) {
            Some(v) => {
                if let Err(why) = probe_set_privilege(conn, n, v) {
                    return Ok(Support::No(format!(
                        "{why} (needs SUPER or SYSTEM_VARIABLES_ADMIN)"
                    )));
                }
            }
            None if !plugin_loaded => {}
            None => return Ok(Support::No(format!("the server has no variable {n}"))),
        }
    }
    Ok(Support::Yes(notes.join("; ")))
}

/// The full state of one variant: every touched variable, with its value (None: original).
pub type State = Vec<(String, Option<String>)>;

/// Switches a server between variant states, journaled.
pub struct Switcher {
    conn: mysql::Conn,
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
        target: &Target,
        plugins: &[Plugin],
        vars: &[String],
        started_at: &str,
    ) -> Result<Switcher> {
        let journal_path = ensure_no_pending_journal(target)?;
        let mut s = Switcher {
            conn: target.admin()?,
            journal: Journal {
                target: target.label(),
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
            if !plugin_active(&mut s.conn, p)? {
                s.journal.installed_plugins.push(p.soname.to_string());
                s.save()?;
                let sql = format!("INSTALL SONAME '{}'", p.soname);
                s.conn
                    .query_drop(&sql)
                    .map_err(|e| anyhow::anyhow!("{sql}: {}", clean_error(&e)))?;
                s.statements.push(sql);
            }
        }
        let names: Vec<&str> = vars.iter().map(String::as_str).collect();
        let found = global_vars(&mut s.conn, &names)?;
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
    pub fn after_restart(&mut self, target: &Target) -> Result<()> {
        self.conn = target.admin()?;
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
            let sql = set_global_sql(var, &value);
            self.conn
                .query_drop(&sql)
                .map_err(|e| anyhow::anyhow!("{sql}: {}", clean_error(&e)))?;
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
        restore_journal(&mut self.conn, &self.journal)?;
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
pub fn ensure_no_pending_journal(target: &Target) -> Result<Option<PathBuf>> {
    if target.is_managed() {
        return Ok(None);
    }
    let p = journal::path_for(&target.journal_key());
    if let Some(j) = Journal::load(&p)? {
        if j.writer_alive() {
            return Err(usage(format!(
                "another dbtax (pid {}) is running an experiment on {}; wait for it to finish",
                j.pid,
                target.label()
            )));
        }
        return Err(usage(format!(
            "an earlier dbtax run on {} was interrupted before it could restore {} setting(s) \
             (journal {}). Run `dbtax restore --target '{}'` first. Nothing was changed",
            target.label(),
            j.originals.len() + j.installed_plugins.len(),
            p.display(),
            target.label()
        )));
    }
    Ok(Some(p))
}

/// Apply a journal: originals back in reverse order (variables that vanished with a plugin
/// are skipped), then uninstall the plugins it lists.
pub fn restore_journal(conn: &mut mysql::Conn, j: &Journal) -> Result<Vec<String>> {
    let mut done = vec![];
    for (var, value) in j.originals.iter().rev() {
        let sql = set_global_sql(var, value);
        match conn.query_drop(&sql) {
            Ok(()) => done.push(sql),
            // 1193: unknown system variable (its plugin is already gone).
            Err(mysql::Error::MySqlError(e)) if e.code == 1193 => {}
            Err(e) => {
                return Err(anyhow::anyhow!("{sql}: {}", clean_error(&e))).context("restoring");
            }
        }
    }
    for soname in &j.installed_plugins {
        let sql = format!("UNINSTALL SONAME '{soname}'");
        match conn.query_drop(&sql) {
            Ok(()) => done.push(sql),
            // 1305: does not exist (never installed, or already removed).
            Err(mysql::Error::MySqlError(e)) if e.code == 1305 => {}
            Err(e) => {
                return Err(anyhow::anyhow!("{sql}: {}", clean_error(&e))).context("restoring");
            }
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

    #[test]
    fn plugin_grants_are_recognised() {
        assert!(may_install_plugins(
            "GRANT ALL PRIVILEGES ON *.* TO `ROOT`@`LOCALHOST`"
        ));
        assert!(may_install_plugins("GRANT INSERT ON `MYSQL`.* TO `U`@`%`"));
        assert!(!may_install_plugins("GRANT SELECT ON *.* TO `U`@`%`"));
    }
}
