//! The feature catalog's shape. A feature is a list of global settings to turn it on, a list
//! to turn it off, what it needs (a plugin, the binary log), and the variables that name the
//! log files it writes (for log bytes per query and the disk guard). Each engine holds its own
//! entries (`mysql/catalog.rs`, `postgres/catalog.rs`) and answers for them (`Server::feature`).

use crate::error::usage;

/// A plugin a feature loads when the server does not have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plugin {
    /// Name in information_schema.PLUGINS (upper case).
    pub name: &'static str,
    /// What `INSTALL SONAME` takes.
    pub soname: &'static str,
}

/// A feature dbtax knows how to switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feature {
    /// Catalog name (`--feature NAME`).
    pub name: &'static str,
    /// One line for `dbtax features`.
    pub description: &'static str,
    /// Global settings that switch it on, applied in this order.
    pub on: &'static [(&'static str, &'static str)],
    /// Global settings that switch it off (the baseline state).
    pub off: &'static [(&'static str, &'static str)],
    /// Settings it needs that govern more than the feature (log_output decides where the
    /// general and the slow log both write): held at one value in every variant of the run,
    /// the baseline too, so that variants differ only in their features.
    pub held: &'static [(&'static str, &'static str)],
    /// What else a held setting governs, for the plan's note.
    pub held_why: &'static str,
    /// A plugin to install first (and uninstall at the end) when absent.
    pub plugin: Option<Plugin>,
    /// The plugin is loaded only in the variants that have this feature (installed and
    /// uninstalled at each switch, journaled), so that the baseline is a server without it.
    /// When the server had it loaded before the run, every variant keeps it.
    pub plugin_switched: bool,
    /// Variables naming the files the feature writes.
    pub log_file_vars: &'static [&'static str],
    /// The server must already have this variable ON (e.g. log_bin for binlog-sync).
    pub requires_on: Option<&'static str>,
    /// Managed targets: server options that provide `requires_on` at start-up.
    pub managed_server_opts: &'static [&'static str],
    /// Restart-only features: the server options that switch it on (off: without them).
    pub restart_opts: &'static [&'static str],
}

/// The error for a name the server's catalog does not have.
pub fn unknown(name: &str, names: &[&str]) -> anyhow::Error {
    usage(format!(
        "unknown feature '{name}': the catalog has {} (see `dbtax features`)",
        names.join(", ")
    ))
}
