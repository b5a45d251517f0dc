//! An experiment resolved against one server, before anything on it changes: every feature
//! looked up once in the server's catalog, one record per variant, the variables and plugins
//! the run will touch (`Switches`, what the switcher begins from), the log files (`LogFiles`,
//! what the disk guard and the trials read), the restart method, the notes. `preflight`
//! builds it; the dry run renders it; the runner, the switcher and results.json consume it.

use crate::feature::toggle::{State, Switches};
use crate::server::{Admin, Server};
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How restart-only settings are switched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restarter {
    /// The experiment has none.
    None,
    /// dbtax restarts its managed server.
    Managed,
    /// The user's command restarts their server (`--restart-cmd`), given the options in
    /// $DBTAX_SERVER_OPTS.
    Command(String),
}

/// One variant, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedVariant {
    /// Name shown in tables; the first variant is the baseline.
    pub name: String,
    /// Catalog features it switches on (the first names it in results).
    pub features: Vec<String>,
    /// Every touched variable with this variant's value (None: the server's original).
    pub state: State,
    /// Restart-only server options (its own and its features').
    pub server_opts: Vec<String>,
    /// Switched plugins this variant runs with (loaded on entering it, removed on leaving).
    pub plugins: Vec<crate::server::catalog::Plugin>,
    /// Index of the variant its overhead is computed against (itself for a baseline).
    pub baseline: usize,
    /// Multi-factor: (factor, index of the variant differing only in that factor).
    pub effects: Vec<(String, usize)>,
}

/// The exact statements a run would send, for the dry run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Statements {
    /// Before the first trial (journaled first; only for plugins that are not loaded and
    /// stay for the whole run).
    pub install: Vec<String>,
    /// What entering each variant changes, from the server's current settings.
    pub per_variant: Vec<Vec<String>>,
    /// At the end, on error and on Ctrl-C.
    pub restore: Vec<String>,
}

/// The files the features write, as local paths (log bytes per query, the disk guard). A
/// switched plugin names its file only once it is loaded: `refresh` resolves them again.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LogFiles {
    /// Variables naming the files the features write.
    pub vars: Vec<&'static str>,
    /// Their paths on the server's host, for the variables the server knows now.
    pub paths: Vec<PathBuf>,
    /// Where they are read: here, or through the probe on the server's host.
    pub host: crate::host::probe::Host,
}

impl LogFiles {
    /// The files `vars` name on `server`, as far as it names them now (a file that is not on
    /// this machine has no path).
    pub fn resolve(
        admin: &mut dyn Admin,
        server: &Server,
        vars: Vec<&'static str>,
    ) -> Result<LogFiles> {
        let found = admin.global_vars(&vars)?;
        let here = server.host.0.here();
        let paths = vars
            .iter()
            .filter_map(|v| found.get(*v))
            .filter_map(|p| server.local_file(p))
            // Links followed where they can be (the probe follows them on its host).
            .map(|p| {
                if here {
                    crate::host::probe::real_path(&p)
                } else {
                    p
                }
            })
            .collect();
        Ok(LogFiles {
            vars,
            paths,
            host: server.host.clone(),
        })
    }

    /// Resolve again when some variable had no file yet (its plugin was not loaded).
    pub fn refresh(&mut self, server: &Server) -> Result<()> {
        if self.paths.len() < self.vars.len() {
            *self = LogFiles::resolve(server.admin()?.as_mut(), server, self.vars.clone())?;
        }
        Ok(())
    }
}

/// Everything a run will do to a server, decided before it does any of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// One per variant, in the experiment's order.
    pub variants: Vec<PlannedVariant>,
    /// The statements, as the dry run prints them.
    pub statements: Statements,
    /// What the switcher journals and switches.
    pub switches: Switches,
    /// The touched variables' values now, before any change.
    pub current: BTreeMap<String, String>,
    /// Other server variables worth recording beside the results.
    pub relevant: BTreeMap<String, String>,
    /// The files the features write.
    pub log_files: LogFiles,
    /// How restart-only settings are switched.
    pub restarter: Restarter,
    /// What dbtax will do besides SET GLOBAL (install a plugin, restart...).
    pub notes: Vec<String>,
    /// Where server and load run (filled in by `open::open`, once the server is reached).
    pub cpus: crate::host::cpus::Placement,
    /// Feature logs will grow on a server not on this machine, unwatched (`--unguarded-logs`).
    pub unguarded_logs: bool,
    /// Why the run would be refused although its plan could be made (the server has too few
    /// connections for the thread count): the dry run shows the plan and says so; a run
    /// stops on it before anything changes.
    pub refused: Option<String>,
}

impl Plan {
    /// Whether any variant needs a restart.
    pub fn restarts(&self) -> bool {
        self.variants.iter().any(|v| !v.server_opts.is_empty())
    }
}
