//! The MySQL family's features: MariaDB and MySQL/Percona share all but the audit plugin.

use super::Flavor;
use crate::server::catalog::{Feature, Plugin};

/// log_output decides where the general log and the slow log both write.
const LOG_OUTPUT: &[(&str, &str)] = &[("log_output", "FILE")];
const LOG_OUTPUT_WHY: &str = "it decides where the general log and the slow log both write";

const GENERAL_LOG: Feature = Feature {
    name: "general-log",
    description: "general query log to a file (general_log=ON, log_output=FILE)",
    on: &[("general_log", "ON")],
    off: &[("general_log", "OFF")],
    held: LOG_OUTPUT,
    held_why: LOG_OUTPUT_WHY,
    plugin: None,
    plugin_switched: false,
    log_file_vars: &["general_log_file"],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

const SLOW_LOG: Feature = Feature {
    name: "slow-log",
    description: "slow query log of every query (slow_query_log=ON, long_query_time=0)",
    on: &[("long_query_time", "0"), ("slow_query_log", "ON")],
    off: &[("slow_query_log", "OFF")],
    held: LOG_OUTPUT,
    held_why: LOG_OUTPUT_WHY,
    plugin: None,
    plugin_switched: false,
    log_file_vars: &["slow_query_log_file"],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

const AUDIT_MARIADB: Feature = Feature {
    name: "audit",
    description: "MariaDB server_audit plugin logging every query to a file (baseline: no plugin)",
    on: &[
        ("server_audit_output_type", "file"),
        ("server_audit_events", "QUERY"),
        // Rotation would hide the log's growth from the byte count; the plugin is ours.
        ("server_audit_file_rotate_size", "1000000000000"),
        ("server_audit_logging", "ON"),
    ],
    off: &[("server_audit_logging", "OFF")],
    held: &[],
    held_why: "",
    plugin: Some(Plugin {
        name: "SERVER_AUDIT",
        soname: "server_audit",
    }),
    plugin_switched: true,
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
    held: &[],
    held_why: "",
    plugin: Some(Plugin {
        name: "AUDIT_LOG",
        soname: "audit_log",
    }),
    plugin_switched: true,
    log_file_vars: &["audit_log_file"],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

/// The audit plugin loaded with its logging off: what the plugin's hooks cost by themselves.
const AUDIT_IDLE_MARIADB: Feature = Feature {
    name: "audit-idle",
    description: "MariaDB server_audit plugin loaded, logging off (its idle cost; audit = logging on)",
    on: &[("server_audit_logging", "OFF")],
    off: &[("server_audit_logging", "OFF")],
    ..AUDIT_MARIADB
};

const AUDIT_IDLE_PERCONA: Feature = Feature {
    name: "audit-idle",
    description: "Percona audit_log plugin loaded, logging nothing (audit_log_policy=NONE)",
    on: &[("audit_log_policy", "NONE")],
    off: &[("audit_log_policy", "NONE")],
    ..AUDIT_PERCONA
};

const BINLOG_SYNC: Feature = Feature {
    name: "binlog-sync",
    description: "fsync the binary log at every commit (sync_binlog=1 vs 0)",
    on: &[("sync_binlog", "1")],
    off: &[("sync_binlog", "0")],
    held: &[],
    held_why: "",
    plugin: None,
    plugin_switched: false,
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
        held: &[],
        held_why: "",
        plugin: None,
        plugin_switched: false,
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
    held: &[],
    held_why: "",
    plugin: None,
    plugin_switched: false,
    log_file_vars: &[],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

/// Every feature name, in catalog order.
pub const NAMES: [&str; 8] = [
    "general-log",
    "slow-log",
    "audit",
    "audit-idle",
    "binlog-sync",
    "redo-flush",
    "binlog",
    "performance-schema",
];

/// The entry for a name (the audit plugin differs between MariaDB and MySQL/Percona).
pub fn lookup(name: &str, flavor: Flavor) -> Option<Feature> {
    Some(match (name, flavor) {
        ("general-log", _) => GENERAL_LOG,
        ("slow-log", _) => SLOW_LOG,
        ("audit", Flavor::Mariadb) => AUDIT_MARIADB,
        ("audit", Flavor::Mysql) => AUDIT_PERCONA,
        ("audit-idle", Flavor::Mariadb) => AUDIT_IDLE_MARIADB,
        ("audit-idle", Flavor::Mysql) => AUDIT_IDLE_PERCONA,
        ("binlog-sync", _) => BINLOG_SYNC,
        ("redo-flush", _) => REDO_FLUSH,
        ("binlog", _) => BINLOG,
        ("performance-schema", _) => PERFORMANCE_SCHEMA,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_name_resolves_on_both_families() {
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
        let e = crate::server::registry::validate_feature_name("turbo").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("general-log"));
    }
}
