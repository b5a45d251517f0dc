//! PostgreSQL's features. Each is a list of settings, switched with ALTER SYSTEM and a
//! reload; which of them take a restart instead (shared_preload_libraries, and a library's
//! own settings until it is loaded) the server tells through pg_settings' `context`, so
//! nothing here says so. Every logging feature writes to the server's log
//! (`pg_current_logfile()`, named here by the pseudo-variable `current_logfile`).

use crate::server::catalog::Feature;

/// The pseudo-variable the PostgreSQL admin resolves to `pg_current_logfile()`.
pub const CURRENT_LOGFILE: &str = "current_logfile";

const NONE: Feature = Feature {
    name: "",
    description: "",
    on: &[],
    off: &[],
    held: &[],
    held_why: "",
    plugin: None,
    plugin_switched: false,
    log_file_vars: &[CURRENT_LOGFILE],
    requires_on: None,
    managed_server_opts: &[],
    restart_opts: &[],
};

const LOG_STATEMENT: Feature = Feature {
    name: "log-statement",
    description: "every statement to the server log (log_statement = 'all')",
    on: &[("log_statement", "all")],
    off: &[("log_statement", "none")],
    ..NONE
};

const LOG_MIN_DURATION: Feature = Feature {
    name: "log-min-duration",
    description: "every statement with its duration (log_min_duration_statement = 0)",
    on: &[("log_min_duration_statement", "0")],
    off: &[("log_min_duration_statement", "-1")],
    ..NONE
};

const PGAUDIT: Feature = Feature {
    name: "pgaudit",
    description: "pgaudit logging every statement (shared_preload_libraries, pgaudit.log = 'all'; \
                  baseline: not loaded; takes a restart)",
    on: &[
        ("shared_preload_libraries", "pgaudit"),
        ("pgaudit.log", "all"),
    ],
    off: &[],
    ..NONE
};

const AUTO_EXPLAIN: Feature = Feature {
    name: "auto-explain",
    description: "auto_explain of every statement, with EXPLAIN ANALYZE and timing \
                  (session_preload_libraries = auto_explain, log_min_duration = 0)",
    on: &[
        ("session_preload_libraries", "auto_explain"),
        ("auto_explain.log_min_duration", "0"),
        ("auto_explain.log_analyze", "on"),
        ("auto_explain.log_timing", "on"),
    ],
    // Baseline: session_preload_libraries as found (an empty value would name a library "").
    off: &[],
    ..NONE
};

const AUTO_EXPLAIN_NO_TIMING: Feature = Feature {
    name: "auto-explain-no-timing",
    description: "auto-explain with log_timing off (row counts without the per-node clock)",
    on: &[
        ("session_preload_libraries", "auto_explain"),
        ("auto_explain.log_min_duration", "0"),
        ("auto_explain.log_analyze", "on"),
        ("auto_explain.log_timing", "off"),
    ],
    ..AUTO_EXPLAIN
};

/// The library must be preloaded in every variant: a managed cluster starts with it, a
/// user's server must have it already; then `track` switches by reload.
const PG_STAT_STATEMENTS: Feature = Feature {
    name: "pg-stat-statements",
    description: "pg_stat_statements tracking top-level statements (track = top vs none, by \
                  reload; the library preloaded in both)",
    on: &[("pg_stat_statements.track", "top")],
    off: &[("pg_stat_statements.track", "none")],
    log_file_vars: &[],
    requires_on: Some("shared_preload_libraries"),
    managed_server_opts: &["shared_preload_libraries=pg_stat_statements"],
    ..NONE
};

const TRACK_IO_TIMING: Feature = Feature {
    name: "track-io-timing",
    description: "timing of every block read and write (track_io_timing = on)",
    on: &[("track_io_timing", "on")],
    off: &[("track_io_timing", "off")],
    log_file_vars: &[],
    ..NONE
};

const SYNC_COMMIT: Feature = Feature {
    name: "sync-commit",
    description: "commits wait for the WAL flush (synchronous_commit = on; baseline: off)",
    on: &[("synchronous_commit", "on")],
    off: &[("synchronous_commit", "off")],
    log_file_vars: &[],
    ..NONE
};

const FULL_PAGE_WRITES: Feature = Feature {
    name: "full-page-writes",
    description: "whole pages into the WAL after each checkpoint (full_page_writes = on)",
    on: &[("full_page_writes", "on")],
    off: &[("full_page_writes", "off")],
    log_file_vars: &[],
    ..NONE
};

const WAL_COMPRESSION: Feature = Feature {
    name: "wal-compression",
    description: "full-page images compressed in the WAL (wal_compression = pglz)",
    on: &[("wal_compression", "pglz")],
    off: &[("wal_compression", "off")],
    log_file_vars: &[],
    ..NONE
};

const LOG_CONNECTIONS: Feature = Feature {
    name: "log-connections",
    description: "a log line per connection and authentication (log_connections = on)",
    on: &[("log_connections", "on")],
    off: &[("log_connections", "off")],
    ..NONE
};

/// Every feature name, in catalog order (the generic names last).
pub const NAMES: [&str; 14] = [
    "log-statement",
    "log-min-duration",
    "pgaudit",
    "auto-explain",
    "auto-explain-no-timing",
    "pg-stat-statements",
    "track-io-timing",
    "sync-commit",
    "full-page-writes",
    "wal-compression",
    "log-connections",
    "general-log",
    "slow-log",
    "audit",
];

/// A feature by name; `general-log`, `slow-log` and `audit` are PostgreSQL's counterparts of
/// the MySQL family's (log-statement, log-min-duration, pgaudit), under the generic name.
pub fn lookup(name: &str) -> Option<Feature> {
    let alias = |f: Feature, name: &'static str, of: &'static str| Feature {
        name,
        description: of,
        ..f
    };
    Some(match name {
        "log-statement" => LOG_STATEMENT,
        "log-min-duration" => LOG_MIN_DURATION,
        "pgaudit" => PGAUDIT,
        "auto-explain" => AUTO_EXPLAIN,
        "auto-explain-no-timing" => AUTO_EXPLAIN_NO_TIMING,
        "pg-stat-statements" => PG_STAT_STATEMENTS,
        "track-io-timing" => TRACK_IO_TIMING,
        "sync-commit" => SYNC_COMMIT,
        "full-page-writes" => FULL_PAGE_WRITES,
        "wal-compression" => WAL_COMPRESSION,
        "log-connections" => LOG_CONNECTIONS,
        "general-log" => alias(
            LOG_STATEMENT,
            "general-log",
            "PostgreSQL's general log: log-statement (log_statement = 'all')",
        ),
        "slow-log" => alias(
            LOG_MIN_DURATION,
            "slow-log",
            "PostgreSQL's slow log of every query: log-min-duration (= 0)",
        ),
        "audit" => alias(
            PGAUDIT,
            "audit",
            "PostgreSQL's audit: pgaudit logging every statement (takes a restart)",
        ),
        _ => return None,
    })
}
