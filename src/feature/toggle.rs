//! Safe switching. `Switcher::begin` refuses to start over a pending journal, journals every
//! original value (and every plugin it installs) before the first change, `apply` sets a
//! variant's state, `restore` puts everything back and removes the journal. Dropping a
//! Switcher that was not restored restores it (error paths, Ctrl-C).

use super::journal::Journal;
use super::pending::{ensure_no_pending_journal, restore_journal};
use crate::error::usage;
use crate::server::catalog::Plugin;
use crate::server::value::same_value;
use crate::server::{Admin, Server};
use anyhow::{Result, bail};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The longest an admin statement waits on a server that does not answer (the engines' admin
/// timeout): a restore attempt that could not end within its patience is not started.
const ATTEMPT: Duration = Duration::from_secs(20);
/// How long a switched plugin may take to load again after it was removed.
const PLUGIN_PATIENCE: Duration = Duration::from_secs(10);

/// The full state of one variant: every touched variable, with its value (None: original).
pub type State = Vec<(String, Option<String>)>;

/// What a run switches, as preflight resolved it: what `Switcher::begin` journals.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Switches {
    /// Variables any variant changes (journaled before the first change), first-seen order.
    pub touched: Vec<String>,
    /// Plugins loaded for the whole run (installed when absent, removed after).
    pub plugins: Vec<Plugin>,
    /// Plugins loaded only in the variants that use them (absent before the run): installed
    /// and uninstalled at each switch, so that the baseline runs without them.
    pub switched_plugins: Vec<Plugin>,
    /// Variables that exist only while a switched plugin is loaded.
    pub plugin_vars: Vec<String>,
}

/// Switches a server between variant states, journaled. Its admin connection holds the
/// server's run lock from `lock` until the switcher is dropped.
pub struct Switcher {
    admin: Box<dyn Admin>,
    journal: Journal,
    journal_path: Option<PathBuf>,
    /// Where the server keeps its copy of the journal (None: a managed server).
    server_schema: Option<String>,
    current: BTreeMap<String, String>,
    /// Plugins loaded only in some variants, and which of them are loaded now.
    switched: Vec<Plugin>,
    loaded: Vec<Plugin>,
    /// Every journaled or plugin-owned variable (re-read after a plugin comes or goes).
    vars: Vec<String>,
    /// Restored, or given up on (the journal kept): nothing left for Drop to do.
    done: bool,
    /// A journal was written (here or on the server): there is one to remove.
    saved: bool,
    /// Statements run so far, for the log.
    pub statements: Vec<String>,
    /// What the restore did: the statements that put things back, and what it left as
    /// someone else set it (with why).
    pub restored: Vec<String>,
}

impl Switcher {
    /// Take the server's run lock (one run per server, from any spelling of its address or
    /// any machine) and check that no interrupted run's journal is pending, here or on the
    /// server. Changes nothing. Fails with a usage error naming the lock's holder.
    pub fn lock(server: &Server, started_at: &str) -> Result<Switcher> {
        let mut admin = server.admin()?;
        if !admin.try_run_lock()? {
            let holder = admin
                .run_lock_holder()?
                .unwrap_or_else(|| "a connection that just closed".into());
            return Err(usage(format!(
                "another dbtax run is working on {} (it holds the run lock: {holder}); wait \
                 for it to finish. Nothing was changed",
                server.label()
            )));
        }
        let journal_path = ensure_no_pending_journal(server)?;
        let managed = server.is_managed();
        if !managed
            && let Some((schema, j)) = admin.load_server_journals(&server.journal_key())?.first()
        {
            let started = serde_json::from_str::<Journal>(j)
                .map(|j| format!(" started {} by pid {} on {}", j.started_at, j.pid, j.host))
                .unwrap_or_default();
            return Err(usage(format!(
                "an earlier dbtax run{started} on this server was interrupted before it could \
                 restore its settings (its journal is kept on the server, in {schema}.dbtax_journal). \
                 Run `dbtax restore --target '{}'` first. Nothing was changed",
                server.label()
            )));
        }
        let facts = if managed {
            BTreeMap::new()
        } else {
            admin.facts()?
        };
        Ok(Switcher {
            admin,
            journal: Journal {
                target: server.label(),
                server: server.identity.clone(),
                host: crate::host::hostname(),
                pid: std::process::id(),
                started_at: started_at.to_string(),
                facts,
                ..Default::default()
            },
            journal_path,
            server_schema: (!managed).then(|| server.schema.clone()),
            current: BTreeMap::new(),
            switched: vec![],
            loaded: vec![],
            vars: vec![],
            done: false,
            saved: false,
            statements: vec![],
            restored: vec![],
        })
    }

    /// Run a statement found by `mark` in the server's statement log, in this switcher's
    /// session, where the engine writes its log a moment after a statement ran
    /// (`Settings::mark`). Whether one was run.
    pub fn mark(&mut self, mark: &str) -> Result<bool> {
        self.admin.mark(mark)
    }

    /// Install the run's plugins and read originals, journaling each before acting. Switched
    /// plugins (absent now) are loaded later, by `apply`, in the variants that use them;
    /// their variables exist only then and have no original. Journals only servers dbtax
    /// does not manage (a managed server is thrown away whatever happens).
    pub fn begin(&mut self, switches: &Switches) -> Result<()> {
        let Switches {
            touched: vars,
            plugins,
            switched_plugins,
            plugin_vars,
        } = switches;
        self.switched = switched_plugins.clone();
        self.vars = vars.clone();
        self.save()?;
        for p in plugins {
            if !self.admin.plugin_active(p)? {
                self.journal.installed_plugins.push(p.soname.to_string());
                self.save()?;
                let sql = self.admin.install_plugin(p)?;
                self.statements.push(sql);
            }
        }
        let names: Vec<&str> = vars.iter().map(String::as_str).collect();
        let found = self.admin.global_vars(&names)?;
        self.journal.persisted = self.admin.persisted(&names)?;
        self.journal.persisted_text = self.admin.persisted_text()?;
        for v in vars {
            let Some(value) = found.get(v) else {
                if plugin_vars.contains(v) {
                    continue;
                }
                return Err(usage(format!("the server has no global variable '{v}'")));
            };
            self.journal.originals.push((v.clone(), value.clone()));
            self.current.insert(v.clone(), value.clone());
        }
        self.save()
    }

    /// The replay's third lock: a temporary login that may only read, journaled before it
    /// exists (dropped by `restore`, and by `dbtax restore` after a kill -9). Returns it
    /// and the statements that made it (the password elided).
    pub fn create_reader(&mut self) -> Result<(crate::server::Login, Vec<String>)> {
        // The kernel's randomness (the password guards a login on the user's server); the
        // clock's only where it cannot be read.
        let mut seed = [0u8; 8];
        let _ = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut seed));
        let mut rng =
            crate::rng::Rng::from_time(u64::from_le_bytes(seed) ^ u64::from(std::process::id()));
        let mut token = |n: usize| -> String {
            const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
            (0..n)
                .map(|_| ALPHABET[rng.range(0, ALPHABET.len() as u64 - 1) as usize] as char)
                .collect()
        };
        let user = format!("dbtax_replay_{}", token(8));
        let password = token(32);
        let spec = self.admin.reader_spec(&user)?;
        self.journal.created_logins.push(spec.clone());
        self.save()?;
        let sql = self.admin.create_reader(&spec, &password)?;
        self.statements.extend(sql.iter().cloned());
        Ok((crate::server::Login { user, password }, sql))
    }

    /// Before the first change: make sure the journal is keyed by an identity no other
    /// server shares (`Held::stamp_identity`; a managed server is not journaled).
    pub fn stamp(&mut self, server: &mut Server) -> Result<()> {
        if server.is_managed() {
            return Ok(());
        }
        let id = self.admin.stamp_identity(&server.schema)?;
        if id != server.identity {
            server.identity = id.clone();
            self.journal.server = id;
            self.journal_path = ensure_no_pending_journal(server)?;
        }
        Ok(())
    }

    /// Write the journal: the local file, then the server's copy.
    fn save(&mut self) -> Result<()> {
        self.saved = true;
        if let Some(p) = &self.journal_path {
            self.journal.save(p)?;
        }
        if let Some(schema) = &self.server_schema {
            let text = serde_json::to_string(&self.journal)?;
            self.admin
                .save_server_journal(schema, &self.journal.server_key(), &text)?;
        }
        Ok(())
    }

    /// Before a restart with a variant's restart-only options (`opts`; none: back as
    /// found): journal what the server will run with, and (before it first runs with them)
    /// the values of the variables they set, so that a restore after a kill -9 can tell
    /// whether the server still runs with them.
    pub fn note_restart(&mut self, opts: &[String], cmd: Option<&str>) -> Result<()> {
        let vars = Journal::option_vars(opts);
        let new: Vec<&str> = vars
            .iter()
            .map(String::as_str)
            .filter(|v| !self.journal.restart_originals.contains_key(*v))
            .collect();
        if !new.is_empty() {
            let found = self.admin.global_vars(&new)?;
            self.journal.restart_originals.extend(found);
        }
        self.journal.restarted_with = opts.to_vec();
        self.journal.restart_cmd = cmd.map(str::to_string);
        self.save()
    }

    /// After a server restart: a new connection (the lock again), and the variables read
    /// again.
    pub fn after_restart(&mut self, server: &Server) -> Result<()> {
        self.admin = server.admin()?;
        self.admin.try_run_lock()?;
        // Every variable is back at its start-up value; installed plugins stay installed.
        self.read_current()
    }

    /// The original values, as journaled.
    pub fn originals(&self) -> BTreeMap<String, String> {
        self.journal.original_map()
    }

    /// Put the server into a variant's state: its switched plugins loaded (the others
    /// removed), then its variables set; only changes are sent. A variant without a
    /// switched plugin has none of its variables in its state (the plan leaves them out: an
    /// uninstalled plugin can linger a moment, variables and all, while a statement still
    /// holds it, so the server's answer cannot decide).
    pub fn apply(&mut self, state: &State, plugins: &[Plugin]) -> Result<()> {
        self.switch_plugins(plugins)?;
        let originals = self.journal.original_map();
        for (var, want) in state {
            let value = match want {
                Some(v) => v.clone(),
                // A plugin's variable has no original: it keeps its default.
                None => match originals.get(var) {
                    Some(v) => v.clone(),
                    None => continue,
                },
            };
            if self
                .current
                .get(var)
                .is_some_and(|cur| same_value(cur, &value))
            {
                continue;
            }
            // Back to the original: as at the end (PostgreSQL: the auto.conf entry as found).
            // A value set for the first time is journaled first: a restore puts back
            // only what is still as dbtax left it.
            let known = self.journal.set_values.entry(var.clone()).or_default();
            if want.is_some() && !known.iter().any(|k| same_value(k, &value)) {
                known.push(value.clone());
                self.save()?;
            }
            let sql = if want.is_none() {
                let persisted = self.journal.persisted_entry(var);
                self.admin
                    .restore_global(var, &value, persisted.as_ref().map(|p| p.as_deref()))?
            } else {
                Some(self.admin.set_global(var, &value)?)
            };
            self.statements.extend(sql);
            self.current.insert(var.clone(), value);
        }
        Ok(())
    }

    /// Load the switched plugins `wanted` needs and remove the others, journaling each
    /// install before it happens; then read the variables again (a plugin's come and go
    /// with it, at their defaults).
    fn switch_plugins(&mut self, wanted: &[Plugin]) -> Result<()> {
        let mut changed = false;
        for p in self.switched.clone() {
            let want = wanted.contains(&p);
            if want == self.loaded.contains(&p) {
                continue;
            }
            changed = true;
            if want {
                if !self.journal.installed_plugins.iter().any(|s| s == p.soname) {
                    self.journal.installed_plugins.push(p.soname.to_string());
                    self.save()?;
                }
                let sql = self.load_plugin(&p)?;
                self.statements.push(sql);
                self.loaded.push(p);
            } else {
                if let Some(sql) = self.admin.uninstall_plugin(p.soname)? {
                    self.statements.push(sql);
                }
                self.loaded.retain(|l| *l != p);
            }
        }
        if changed {
            self.read_current()?;
        }
        Ok(())
    }

    /// The variables' values as the server has them now (a plugin's only while loaded).
    fn read_current(&mut self) -> Result<()> {
        let names: Vec<&str> = self.vars.iter().map(String::as_str).collect();
        self.current = self.admin.global_vars(&names)?;
        Ok(())
    }

    /// Install a plugin and wait until it is active. A plugin just uninstalled stays in the
    /// server, marked deleted, while a statement that began before still uses it; installing
    /// it again only works once that statement ends.
    fn load_plugin(&mut self, p: &Plugin) -> Result<String> {
        let deadline = Instant::now() + PLUGIN_PATIENCE;
        loop {
            let sql = self.admin.install_plugin(p)?;
            if self.admin.plugin_active(p)? {
                return Ok(sql);
            }
            if Instant::now() >= deadline {
                bail!(
                    "the {} plugin did not become active after {sql} (for {} s): another \
                     connection is still running a statement that uses it",
                    p.soname,
                    PLUGIN_PATIENCE.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Put every original value back, uninstall plugins dbtax installed, remove the journal.
    pub fn restore(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.restored = restore_journal(self.admin.as_mut(), &self.journal)?;
        if !self.saved {
            // Locked, but stopped before the first change (the tables failed to prepare).
            self.done = true;
            return Ok(());
        }
        if let Some(schema) = &self.server_schema {
            self.admin
                .delete_server_journal(schema, &self.journal.server_key())?;
        }
        if let Some(p) = &self.journal_path {
            let _ = std::fs::remove_file(p);
        }
        self.done = true;
        Ok(())
    }

    /// `restore`, reconnecting while the server does not answer, for at most `limit`: no
    /// attempt starts that could not end by then (an admin statement may wait `ATTEMPT`
    /// on a frozen server), and a broken connection is not used again. When the server still
    /// does not answer, the journal stays (here and on the server) and the error says what is
    /// left and how to finish.
    pub fn restore_with_retry(&mut self, server: &Server, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        let mut connected = true;
        let mut last: Option<anyhow::Error> = None;
        loop {
            if connected {
                match self.restore() {
                    Ok(()) => return Ok(()),
                    Err(e) => {
                        if !crate::error::server_gone(&e) {
                            return Err(self.give_up(e));
                        }
                        last = Some(e);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(500));
            if Instant::now() + ATTEMPT > deadline {
                let e = last.unwrap_or_else(|| anyhow::anyhow!("the server does not answer"));
                return Err(self.give_up(e));
            }
            match server.admin() {
                Ok(mut admin) => {
                    let _ = admin.try_run_lock();
                    self.admin = admin;
                    connected = true;
                }
                Err(e) => {
                    connected = false;
                    last = Some(e);
                }
            }
        }
    }

    /// The restore did not happen: the error, with what is left and how to finish.
    fn give_up(&mut self, err: anyhow::Error) -> anyhow::Error {
        self.done = true;
        let kept = match &self.journal_path {
            Some(p) => format!("the journal keeps their original values ({})", p.display()),
            None => "nothing is kept: the server is dbtax's own".into(),
        };
        if err.chain().any(|c| {
            c.downcast_ref::<super::pending::RestoreIncomplete>()
                .is_some()
        }) {
            // The server answers: it refused some steps. Waiting changes nothing.
            return err.context(format!(
                "{kept}; once what the server refused is dealt with, run `dbtax restore \
                 --target '{}'` to finish",
                self.journal.target
            ));
        }
        err.context(format!(
            "the server's settings were not restored (left as the run set them: {}); {kept}. \
             When the server answers again, run `dbtax restore --target '{}'`",
            self.left_changed(),
            self.journal.target
        ))
    }
}

impl Switcher {
    /// What a restore that did not happen leaves: the settings and plugins the run changed.
    fn left_changed(&self) -> String {
        let mut left: Vec<String> = self
            .journal
            .originals
            .iter()
            .filter(|(k, v)| self.current.get(k).is_none_or(|now| !same_value(now, v)))
            .map(|(k, v)| format!("{k}, originally {v}"))
            .collect();
        left.extend(
            self.journal
                .installed_plugins
                .iter()
                .map(|p| format!("the {p} plugin dbtax installed")),
        );
        left.extend(
            self.journal
                .restarted_with
                .iter()
                .map(|o| format!("the server runs with --{o}")),
        );
        if left.is_empty() {
            "nothing known".into()
        } else {
            left.join("; ")
        }
    }
}

impl Drop for Switcher {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        match self.restore() {
            Ok(()) => crate::crash::record_restore(&self.journal.target, None),
            Err(e) => {
                crate::crash::record_restore(&self.journal.target, Some(format!("{e:#}")));
                crate::errln!(
                    "Error: restoring the server's settings failed: {e:#}. Run `dbtax restore --target '{}'`",
                    self.journal.target
                );
            }
        }
    }
}
