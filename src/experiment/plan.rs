//! An experiment resolved against one server, before anything on it changes: every feature
//! looked up once for the real server family, one record per variant, the variables and
//! plugins the run will touch, the log files, the restart method, the notes. `preflight`
//! builds it; the dry run renders it; the runner, the switcher and results.json consume it.

use crate::feature::toggle::State;
use crate::server::catalog::Plugin;
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
    pub plugins: Vec<Plugin>,
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

/// Everything a run will do to a server, decided before it does any of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// One per variant, in the experiment's order.
    pub variants: Vec<PlannedVariant>,
    /// The statements, as the dry run prints them.
    pub statements: Statements,
    /// Variables any variant changes (journaled before the first change), first-seen order.
    pub touched: Vec<String>,
    /// The touched variables' values now, before any change.
    pub current: BTreeMap<String, String>,
    /// Other server variables worth recording beside the results.
    pub relevant: BTreeMap<String, String>,
    /// Plugins loaded for the whole run (installed when absent, removed after).
    pub plugins: Vec<Plugin>,
    /// Plugins loaded only in the variants that use them (absent before the run): installed
    /// and uninstalled at each switch, so that the baseline runs without them.
    pub switched_plugins: Vec<Plugin>,
    /// Variables that exist only while a switched plugin is loaded.
    pub plugin_vars: Vec<String>,
    /// Variables naming the files the features write.
    pub log_file_vars: Vec<&'static str>,
    /// Their local paths (log bytes per query, disk guard); a plugin's appear once it is
    /// installed (`execute` resolves them again then).
    pub log_files: Vec<PathBuf>,
    /// How restart-only settings are switched.
    pub restarter: Restarter,
    /// What dbtax will do besides SET GLOBAL (install a plugin, restart...).
    pub notes: Vec<String>,
}

impl Plan {
    /// Whether any variant needs a restart.
    pub fn restarts(&self) -> bool {
        self.variants.iter().any(|v| !v.server_opts.is_empty())
    }
}
