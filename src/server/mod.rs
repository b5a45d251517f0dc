//! The server under test, behind one seam. The rest of dbtax holds a `Server` and talks to it
//! through three small traits: an `Engine` (reach, prepare tables, restart, find the local
//! process), an `Admin` connection (read and change settings, probe privileges and feature
//! support, status counters, plugins) and `Client` connections (one per worker, its
//! workload's statements prepared). Everything of the MySQL family lives in `mysql/`; a
//! second family is a folder beside it and one arm in `Server::open`.

pub mod catalog;
pub mod local;
pub mod mysql;
pub mod postgres;
pub mod url;

use crate::error::usage;
use crate::results::TargetInfo;
use crate::rng::Rng;
use crate::workload::{PreparedWorkload, Workload};
use anyhow::{Context, Result};
use catalog::{Feature, Plugin};
use std::collections::BTreeMap;
use std::path::PathBuf;
pub use url::{ManagedKind, MysqlUrl, PgUrl, TargetSpec};

/// The server family, for the catalog entries and SQL that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// MariaDB.
    Mariadb,
    /// Oracle MySQL or Percona Server.
    Mysql,
    /// PostgreSQL.
    Postgres,
}

/// Reject identifiers (schema and variable names) that would need quoting tricks.
pub fn validate_identifier(what: &str, s: &str) -> Result<()> {
    if s.is_empty() || s.len() > 64 || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(usage(format!(
            "bad {what} '{s}': use letters, digits and '_' (at most 64)"
        )));
    }
    Ok(())
}

/// A server identity made file-safe: the key of its journals.
pub fn key_of(identity: &str) -> String {
    identity
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// How to start a managed server (flag-free; built by `config`).
#[derive(Debug, Clone, Default)]
pub struct ManagedConfig {
    /// The server binary; found on PATH or in the usual folders when absent.
    pub server_bin: Option<PathBuf>,
    /// Extra server options, `name=value`, passed as `--name=value` after dbtax's own.
    pub server_opts: Vec<String>,
    /// Listen on 127.0.0.1 at this port too (the unix socket is always there).
    pub port: Option<u16>,
}

/// Where the server is and how to reach or start it: everything `Server::open` needs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The target.
    pub spec: TargetSpec,
    /// The schema dbtax works in (default: the URL's database, else `dbtax`).
    pub schema: Option<String>,
    /// Managed targets: how to start it.
    pub managed: ManagedConfig,
}

/// A failed event, as the worker loop needs to see it.
#[derive(Debug, Clone)]
pub struct ClientError {
    /// The server's message, without driver prefixes (errors are counted by it).
    pub message: String,
    /// The connection is gone (reconnect), as opposed to one statement failing.
    pub lost: bool,
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// One client connection with its workload's statements prepared.
pub trait Client: Send {
    /// Run one event (a statement, or a transaction); returns the statements executed.
    fn event(&mut self, rng: &mut Rng) -> Result<u32, ClientError>;
}

/// Makes client connections; workers call it again to reconnect.
pub trait Connector: Sync {
    /// A new connection, statements prepared.
    fn connect(&self) -> Result<Box<dyn Client>, ClientError>;
}

/// What a support check may assume about the target.
#[derive(Debug, Clone, Copy)]
pub struct SupportContext {
    /// dbtax may restart the server (managed, or `--restart-cmd`).
    pub can_restart: bool,
    /// dbtax started the server.
    pub managed: bool,
    /// The server's files are on this machine.
    pub local: bool,
}

/// Whether a target can run a feature, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Ready (the note says what dbtax will do first, e.g. install a plugin).
    Yes(String),
    /// Not possible on this target, with the reason.
    No(String),
}

/// An admin connection: reads and changes global settings. Every statement it runs that
/// changes something is returned as text, for the log and the dry run.
pub trait Admin: Send {
    /// Global variables by name; names the server does not know are absent.
    fn global_vars(&mut self, names: &[&str]) -> Result<BTreeMap<String, String>>;
    /// The statement that sets one global variable (what `set_global` runs).
    fn set_sql(&self, name: &str, value: &str) -> String;
    /// Set one global variable; returns the statement run.
    fn set_global(&mut self, name: &str, value: &str) -> Result<String>;
    /// Put one original value back; Ok(None) when the variable no longer exists (its
    /// plugin is already gone). `persisted`: the setting's entry in the server's persisted
    /// settings file before the run, when the server has one (`persisted`).
    fn restore_global(
        &mut self,
        name: &str,
        value: &str,
        persisted: Option<Option<&str>>,
    ) -> Result<Option<String>>;
    /// The statement `restore_global` runs.
    fn restore_sql(&self, name: &str, value: &str, persisted: Option<Option<&str>>) -> String;
    /// The entries these settings have in the file where the server persists changed
    /// settings (PostgreSQL's postgresql.auto.conf, written by ALTER SYSTEM; None: absent
    /// from it). Ok(None) for servers whose changes are not persisted (SET GLOBAL).
    fn persisted(&mut self, _names: &[&str]) -> Result<Option<BTreeMap<String, Option<String>>>> {
        Ok(None)
    }
    /// For each setting (name, value): None when it switches live, else the server option
    /// that sets it at start-up (PostgreSQL's postmaster-context settings, and those of a
    /// library that exists only once the server loads it at start). The MySQL family
    /// switches every catalog setting live (its restart-only features say so in the catalog).
    fn restart_only(&mut self, settings: &[(String, String)]) -> Result<Vec<Option<String>>> {
        Ok(vec![None; settings.len()])
    }
    /// Server variables worth recording beside the results.
    fn relevant_names(&self) -> &'static [&'static str];
    /// Prove the privilege to change a variable without changing it. Err: the reason.
    fn probe_set_privilege(&mut self, name: &str, current: &str) -> Result<(), String>;
    /// Status counters worth reporting per query (cumulative values).
    fn status_counters(&mut self) -> Result<BTreeMap<String, f64>>;
    /// Can the server run this feature? Changes nothing.
    fn support(&mut self, feature: &Feature, ctx: SupportContext) -> Result<Support>;
    /// Whether a plugin is loaded.
    fn plugin_active(&mut self, plugin: &Plugin) -> Result<bool>;
    /// The statement that installs a plugin.
    fn install_sql(&self, plugin: &Plugin) -> String;
    /// The statement that removes a plugin dbtax installed.
    fn uninstall_sql(&self, soname: &str) -> String;
    /// Install a plugin; returns the statement run.
    fn install_plugin(&mut self, plugin: &Plugin) -> Result<String>;
    /// Remove a plugin; Ok(None) when it was not installed.
    fn uninstall_plugin(&mut self, soname: &str) -> Result<Option<String>>;
    /// What names this server however it is reached (socket or TCP, any host name, any
    /// client machine): its UUID, or host name + port + datadir.
    fn identity(&mut self) -> Result<String>;
    /// Take the server-wide run lock without waiting; held until this connection closes.
    /// Ok(false): another connection holds it.
    fn try_run_lock(&mut self) -> Result<bool>;
    /// Who holds the run lock (host and how long), when someone does.
    fn run_lock_holder(&mut self) -> Result<Option<String>>;
    /// Keep a copy of the journal on the server, in `schema` (replacing this server's).
    fn save_server_journal(&mut self, schema: &str, key: &str, journal: &str) -> Result<()>;
    /// Every copy of this server's journal kept on it: (schema, journal text).
    fn load_server_journals(&mut self, key: &str) -> Result<Vec<(String, String)>>;
    /// Remove the copy kept in `schema`.
    fn delete_server_journal(&mut self, schema: &str, key: &str) -> Result<()>;
}

/// The server stopped answering (its connection is gone), as opposed to refusing a statement.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ServerLost(pub String);

/// One server family's way of reaching, preparing and restarting a server.
pub trait Engine: Send + Sync {
    /// MariaDB or MySQL (and later others).
    fn family(&self) -> Family;
    /// A new admin connection (no default database).
    fn admin(&self) -> Result<Box<dyn Admin>>;
    /// Client connections in `schema` running `workload`.
    fn connector<'a>(
        &'a self,
        schema: &str,
        workload: &'a PreparedWorkload,
    ) -> Box<dyn Connector + 'a>;
    /// Create the schema and the workload's tables when absent (reuse sysbench's), run
    /// setup SQL. Bad input (a failing setup statement) is a usage error.
    fn prepare(&self, schema: &str, workload: &Workload, quiet: bool) -> Result<PreparedWorkload>;
    /// Check the workload's own statements without running them (syntax errors are usage
    /// errors). `tables_ready`: the tables they use exist (after `prepare`).
    fn check_statements(&self, schema: &str, workload: &Workload, tables_ready: bool)
    -> Result<()>;
    /// The server's pid and datadir when it runs on this machine and can be found.
    fn locate(&self) -> (Option<u32>, Option<PathBuf>);
    /// Managed targets: restart with these extra options.
    fn restart_managed(&mut self, extra_opts: &[String]) -> Result<()>;
    /// Whether dbtax started this server.
    fn is_managed(&self) -> bool;
    /// The server as a URL a client on this machine reaches it by (a managed server's
    /// private socket), password included: what agents are sent unless told otherwise.
    fn client_target(&self) -> TargetSpec;
}

/// A reachable server, with what dbtax knows about it.
pub struct Server {
    /// What the user asked for.
    pub spec: TargetSpec,
    /// The schema dbtax works in (its own `dbtax`, or the URL's database, or `--schema`).
    pub schema: String,
    /// The server's version string.
    pub server_version: String,
    /// The server's pid when it runs on this machine and can be found.
    pub server_pid: Option<u32>,
    /// The server's datadir when it is on this machine (log files are resolved against it).
    pub local_datadir: Option<PathBuf>,
    /// What names this server however it is reached (`Admin::identity`).
    pub identity: String,
    engine: Box<dyn Engine>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("target", &self.label())
            .field("version", &self.server_version)
            .finish()
    }
}

impl Server {
    /// Start (managed) or reach (URL) the server; fails with a usage error (exit 2) when it
    /// cannot be reached or the login is refused. Changes nothing on the server.
    pub fn open(config: &ServerConfig) -> Result<Server> {
        let (engine, server_version, default_schema) = match &config.spec {
            TargetSpec::Managed(ManagedKind::Mariadb) | TargetSpec::Mysql(_) => {
                mysql::open(&config.spec, &config.managed)?
            }
            TargetSpec::Managed(ManagedKind::Postgres) | TargetSpec::Postgres(_) => {
                postgres::open(&config.spec, &config.managed)?
            }
        };
        let (server_pid, local_datadir) = engine.locate();
        let identity = engine.admin()?.identity()?;
        let schema = config
            .schema
            .clone()
            .or(default_schema)
            .unwrap_or_else(|| "dbtax".to_string());
        Ok(Server {
            spec: config.spec.clone(),
            schema,
            server_version,
            server_pid,
            local_datadir,
            identity,
            engine,
        })
    }

    /// The server as a URL a client on this machine reaches it by (password included).
    pub fn client_target(&self) -> TargetSpec {
        self.engine.client_target()
    }

    /// Reach a user's server only to open client connections (an agent): no managed start,
    /// no question about its identity or process, nothing changed. A refused login is a
    /// usage error.
    pub fn open_for_clients(spec: &TargetSpec, schema: &str) -> Result<Server> {
        let (engine, server_version, _) = match spec {
            TargetSpec::Managed(_) => {
                return Err(usage(
                    "an agent cannot start a managed server: it is sent the coordinator's URL",
                ));
            }
            TargetSpec::Mysql(_) => mysql::open(spec, &ManagedConfig::default())?,
            TargetSpec::Postgres(_) => postgres::open(spec, &ManagedConfig::default())?,
        };
        Ok(Server {
            spec: spec.clone(),
            schema: schema.to_string(),
            server_version,
            server_pid: None,
            local_datadir: None,
            identity: String::new(),
            engine,
        })
    }

    /// The server family.
    pub fn family(&self) -> Family {
        self.engine.family()
    }

    /// Whether dbtax started this server (and may restart it or truncate its logs).
    pub fn is_managed(&self) -> bool {
        self.engine.is_managed()
    }

    /// The URL, password redacted.
    pub fn label(&self) -> String {
        self.spec.redacted()
    }

    /// A key naming this server in journals: its identity, made file-safe. Not the URL: one
    /// server has one journal, however and from wherever it is reached.
    pub fn journal_key(&self) -> String {
        key_of(&self.identity)
    }

    /// A new admin connection.
    pub fn admin(&self) -> Result<Box<dyn Admin>> {
        self.engine
            .admin()
            .with_context(|| format!("connecting to {}", self.label()))
    }

    /// Client connections for a prepared workload, in dbtax's schema.
    pub fn connector<'a>(&'a self, workload: &'a PreparedWorkload) -> Box<dyn Connector + 'a> {
        self.engine.connector(&self.schema, workload)
    }

    /// Create the workload's tables when absent, run its setup.
    pub fn prepare(&self, workload: &Workload, quiet: bool) -> Result<PreparedWorkload> {
        workload.validate()?;
        let prepared = self.engine.prepare(&self.schema, workload, quiet)?;
        self.engine.check_statements(&self.schema, workload, true)?;
        Ok(prepared)
    }

    /// Check the workload's statements before anything is created (preflight).
    pub fn check_statements(&self, workload: &Workload) -> Result<()> {
        self.engine.check_statements(&self.schema, workload, false)
    }

    /// Server CPU time so far (µs) when the server's process is local.
    pub fn server_cpu_us(&self) -> Option<u64> {
        self.server_cpu().map(|c| c.ticks_us)
    }

    /// The server process's CPU time now, per thread in ns where the kernel tells it.
    /// PostgreSQL: the postmaster and every process it started (a backend per connection,
    /// the WAL writer, the logger...), with the children it has reaped.
    pub fn server_cpu(&self) -> Option<crate::host::CpuSnapshot> {
        match self.family() {
            Family::Postgres => self.server_pid.and_then(crate::host::process_tree_cpu),
            Family::Mariadb | Family::Mysql => self.server_pid.and_then(crate::host::process_cpu),
        }
    }

    /// A server file path (as in @@general_log_file) resolved to a local path, when local.
    pub fn local_file(&self, server_path: &str) -> Option<PathBuf> {
        let datadir = self.local_datadir.as_ref()?;
        let p = PathBuf::from(server_path);
        Some(if p.is_absolute() { p } else { datadir.join(p) })
    }

    /// Restart a managed server with extra options (restart-only settings).
    pub fn restart_managed(&mut self, extra_opts: &[String]) -> Result<()> {
        if !self.engine.is_managed() {
            return Err(usage("only a managed target can be restarted by dbtax"));
        }
        self.engine.restart_managed(extra_opts)?;
        (self.server_pid, self.local_datadir) = self.engine.locate();
        Ok(())
    }

    /// Restart the user's server with their command: the options are passed in
    /// $DBTAX_SERVER_OPTS (`--log-bin=binlog --server-id=1`); wait until it answers again.
    pub fn restart_with_command(&mut self, cmd: &str, opts: &[String]) -> Result<()> {
        let joined: Vec<String> = opts
            .iter()
            .map(|o| format!("--{}", o.trim_start_matches("--")))
            .collect();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .env("DBTAX_SERVER_OPTS", joined.join(" "))
            .status()
            .with_context(|| format!("running --restart-cmd '{cmd}'"))?;
        if !status.success() {
            anyhow::bail!("--restart-cmd '{cmd}' failed ({status})");
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while self.engine.admin().is_err() {
            if std::time::Instant::now() > deadline {
                anyhow::bail!("the server did not answer within 120 s of --restart-cmd");
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        (self.server_pid, self.local_datadir) = self.engine.locate();
        Ok(())
    }

    /// What results.json says of the target.
    pub fn info(&self) -> TargetInfo {
        TargetInfo {
            kind: match self.spec {
                TargetSpec::Managed(ManagedKind::Mariadb) => "managed:mariadb".into(),
                TargetSpec::Managed(ManagedKind::Postgres) => "managed:postgres".into(),
                TargetSpec::Mysql(_) => "mysql".into(),
                TargetSpec::Postgres(_) => "postgres".into(),
            },
            server_version: self.server_version.clone(),
            url: self.label(),
            variables: Default::default(),
        }
    }
}
