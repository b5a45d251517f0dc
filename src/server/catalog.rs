//! The feature catalog's shape, and the lookup by server family. A feature is a list of
//! global settings to turn it on, a list to turn it off, what it needs (a plugin, the binary
//! log), and the variables that name the log files it writes (for log bytes per query and the
//! disk guard). Each engine holds its own entries (`mysql/catalog.rs`).

use super::Family;
use crate::error::usage;
use anyhow::Result;

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

/// Every feature name of a family, in catalog order.
pub fn names(family: Family) -> &'static [&'static str] {
    match family {
        Family::Mariadb | Family::Mysql => &super::mysql::catalog::NAMES,
        Family::Postgres => &super::postgres::catalog::NAMES,
    }
}

/// Look a feature up for a server family (the audit plugin differs between families).
pub fn lookup(name: &str, family: Family) -> Result<Feature> {
    let found = match family {
        Family::Mariadb | Family::Mysql => super::mysql::catalog::lookup(name, family),
        Family::Postgres => super::postgres::catalog::lookup(name),
    };
    found.ok_or_else(|| {
        usage(format!(
            "unknown feature '{name}': the catalog has {} (see `dbtax features`)",
            names(family).join(", ")
        ))
    })
}

/// Check a name before the server is known: it must be in some family's catalog.
pub fn validate_name(name: &str) -> Result<()> {
    if lookup(name, Family::Postgres).is_ok() {
        return Ok(());
    }
    lookup(name, Family::Mariadb).map(|_| ()).map_err(|_| {
        let mut all: Vec<&str> = names(Family::Mariadb).to_vec();
        all.extend(
            names(Family::Postgres)
                .iter()
                .filter(|n| !all.contains(n))
                .collect::<Vec<_>>(),
        );
        usage(format!(
            "unknown feature '{name}': the catalog has {} (see `dbtax features`)",
            all.join(", ")
        ))
    })
}

/// Server options a managed server of this family must start with for these features (the
/// binary log for binlog-sync). The same for every family of one engine, so known before
/// the server runs.
pub fn managed_start_opts<'a>(
    family: Family,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for n in names {
        if let Ok(f) = lookup(n, family)
            && f.requires_on.is_some()
        {
            for o in f.managed_server_opts {
                if !out.iter().any(|x| x == o) {
                    out.push(o.to_string());
                }
            }
        }
    }
    out
}
