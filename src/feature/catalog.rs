//! The feature catalog, MySQL family. A feature is a list of global settings to turn it on,
//! a list to turn it off, what it needs (a plugin, the binary log), and the variables that
//! name the log files it writes (for log bytes per query and the disk guard).

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
    /// Variables naming the files the feature writes.
    pub log_file_vars: &'static [&'static str],
    /// The server must already have this variable ON (e.g. log_bin for binlog-sync).
    pub requires_on: Option<&'static str>,
    /// Managed targets: server options that provide `requires_on` at start-up.
    pub managed_server_opts: &'static [&'static str],
    /// Restart-only features: the server options that switch it on (off: without them).
    pub restart_opts: &'static [&'static str],
}

/// Which server family a target is, for the features that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// MariaDB.
    Mariadb,
    /// Oracle MySQL or Percona Server.
    Mysql,
}

const GENERAL_LOG: Feature = Feature {
    name: "general-log",
    description: "general query log to a file (general_log=ON, log_output=FILE)",
    on: &[("log_output", "FILE"), ("general_log", "ON")],
    off: &[("general_log", "OFF")],
    plugin: None,
    log_file_vars: &["general_log_file"],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

const SLOW_LOG: Feature = Feature {
    name: "slow-log",
    description: "slow query log of every query (slow_query_log=ON, long_query_time=0)",
    on: &[
        ("log_output", "FILE"),
        ("long_query_time", "0"),
        ("slow_query_log", "ON"),
    ],
    off: &[("slow_query_log", "OFF")],
    plugin: None,
    log_file_vars: &["slow_query_log_file"],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

const AUDIT_MARIADB: Feature = Feature {
    name: "audit",
    description: "MariaDB server_audit plugin logging every query to a file",
    on: &[
        ("server_audit_output_type", "file"),
        ("server_audit_events", "QUERY"),
        // Rotation would hide the log's growth from the byte count; the plugin is ours.
        ("server_audit_file_rotate_size", "1000000000000"),
        ("server_audit_logging", "ON"),
    ],
    off: &[("server_audit_logging", "OFF")],
    plugin: Some(Plugin {
        name: "SERVER_AUDIT",
        soname: "server_audit",
    }),
    log_file_vars: &["server_audit_file_path"],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

const AUDIT_PERCONA: Feature = Feature {
    name: "audit",
    description: "Percona audit_log plugin logging every query (audit_log_policy=QUERIES)",
    on: &[("audit_log_policy", "QUERIES")],
    off: &[("audit_log_policy", "NONE")],
    plugin: Some(Plugin {
        name: "AUDIT_LOG",
        soname: "audit_log",
    }),
    log_file_vars: &["audit_log_file"],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

const BINLOG_SYNC: Feature = Feature {
    name: "binlog-sync",
    description: "fsync the binary log at every commit (sync_binlog=1 vs 0)",
    on: &[("sync_binlog", "1")],
    off: &[("sync_binlog", "0")],
    plugin: None,
    log_file_vars: &[],
    requires_on: Some("log_bin"),
    managed_server_opts: &["log-bin=binlog", "server-id=1"],
    restart_opts: &[],
};

/// A feature switched by restarting the server with options, not by SET GLOBAL.
const fn restart_only(
    name: &'static str,
    description: &'static str,
    restart_opts: &'static [&'static str],
) -> Feature {
    Feature {
        name,
        description,
        on: &[],
        off: &[],
        plugin: None,
        log_file_vars: &[],
        requires_on: None,
        managed_server_opts: &[],
        restart_opts,
    }
}

const BINLOG: Feature = restart_only(
    "binlog",
    "the binary log (log_bin; a restart: managed targets or --restart-cmd)",
    &["log-bin=binlog", "server-id=1"],
);

const PERFORMANCE_SCHEMA: Feature = restart_only(
    "performance-schema",
    "the performance schema (a restart: managed targets or --restart-cmd)",
    &["performance-schema=ON"],
);

const REDO_FLUSH: Feature = Feature {
    name: "redo-flush",
    description: "flush the InnoDB redo log at every commit (innodb_flush_log_at_trx_commit=1 vs 0)",
    on: &[("innodb_flush_log_at_trx_commit", "1")],
    off: &[("innodb_flush_log_at_trx_commit", "0")],
    plugin: None,
    log_file_vars: &[],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

/// Every feature name, in catalog order.
pub const NAMES: [&str; 7] = [
    "general-log",
    "slow-log",
    "audit",
    "binlog-sync",
    "redo-flush",
    "binlog",
    "performance-schema",
];

/// Look a feature up for a server flavor (the audit plugin differs between families).
pub fn lookup(name: &str, flavor: Flavor) -> Result<Feature> {
    Ok(match (name, flavor) {
        ("general-log", _) => GENERAL_LOG,
        ("slow-log", _) => SLOW_LOG,
        ("audit", Flavor::Mariadb) => AUDIT_MARIADB,
        ("audit", Flavor::Mysql) => AUDIT_PERCONA,
        ("binlog-sync", _) => BINLOG_SYNC,
        ("redo-flush", _) => REDO_FLUSH,
        ("binlog", _) => BINLOG,
        ("performance-schema", _) => PERFORMANCE_SCHEMA,
        _ => {
            return Err(usage(format!(
                "unknown feature '{name}': the catalog has {} (see `dbtax features`)",
                NAMES.join(", ")
            )));
        }
    })
}

/// Check a name without knowing the server yet.
pub fn validate_name(name: &str) -> Result<()> {
    lookup(name, Flavor::Mariadb).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_name_resolves_on_both_flavors() {
        for n in NAMES {
            for f in [Flavor::Mariadb, Flavor::Mysql] {
                let feat = lookup(n, f).unwrap();
                assert_eq!(feat.name, n);
                let switched = !feat.on.is_empty() && !feat.off.is_empty();
                assert!(
                    switched == feat.restart_opts.is_empty(),
                    "{n}: SET GLOBAL or restart"
                );
            }
        }
    }

    #[test]
    fn unknown_feature_names_the_catalog() {
        let e = lookup("turbo", Flavor::Mariadb).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("general-log"));
    }
}
