//! The server under test: a managed throwaway server or the user's own, behind one type that
//! hands out connections and knows whether the server's process and files are local.

pub mod managed;
pub mod mysql;
pub mod url;

use crate::error::usage;
use crate::results::TargetInfo;
use ::mysql::prelude::Queryable;
use anyhow::{Context, Result};
use managed::{ManagedConfig, ManagedServer};
use std::path::PathBuf;
pub use url::{ManagedKind, MysqlUrl, TargetSpec};

/// A reachable server, with what dbtax knows about it.
#[derive(Debug)]
pub struct Target {
    /// What the user asked for.
    pub spec: TargetSpec,
    managed: Option<ManagedServer>,
    /// Connection options without a default database.
    base_opts: ::mysql::OptsBuilder,
    /// The schema dbtax works in (its own `dbtax`, or the URL's database, or `--schema`).
    pub schema: String,
    /// `SELECT VERSION()`.
    pub server_version: String,
    /// The server's pid when it runs on this machine and can be found.
    pub server_pid: Option<u32>,
    /// The server's datadir when it is on this machine (log files are resolved against it).
    pub local_datadir: Option<PathBuf>,
}

impl Target {
    /// Start (managed) or reach (URL) the server; fails with a usage error (exit 2) when it
    /// cannot be reached or the login is refused. Changes nothing on the server.
    pub fn open(
        spec: &TargetSpec,
        managed: &ManagedConfig,
        schema: Option<&str>,
    ) -> Result<Target> {
        let (managed_server, base_opts) = match spec {
            TargetSpec::Managed(ManagedKind::Mariadb) => {
                let server = ManagedServer::start(managed)?;
                let opts = server.opts();
                (Some(server), opts)
            }
            TargetSpec::Mysql(u) => {
                let mut opts = u.opts();
                opts = opts.db_name(None::<String>);
                (None, opts)
            }
        };
        let schema = schema
            .map(str::to_string)
            .or_else(|| match spec {
                TargetSpec::Mysql(u) => u.db.clone(),
                _ => None,
            })
            .unwrap_or_else(|| "dbtax".to_string());
        let mut conn = ::mysql::Conn::new(base_opts.clone()).map_err(|e| {
            usage(format!(
                "cannot connect to {}: {}. Check the URL, the user and password, and that the \
                 server is running and reachable",
                spec.redacted(),
                mysql::clean_error(&e)
            ))
        })?;
        let server_version: String = conn.query_first("SELECT VERSION()")?.unwrap_or_default();
        let (server_pid, local_datadir) = match &managed_server {
            Some(m) => (m.pid(), Some(m.datadir())),
            None => find_local_server(&mut conn, spec),
        };
        Ok(Target {
            spec: spec.clone(),
            managed: managed_server,
            base_opts,
            schema,
            server_version,
            server_pid,
            local_datadir,
        })
    }

    /// Whether dbtax started this server (and may restart it or truncate its logs).
    pub fn is_managed(&self) -> bool {
        self.managed.is_some()
    }

    /// The URL, password redacted.
    pub fn label(&self) -> String {
        self.spec.redacted()
    }

    /// A key naming this server in the journal directory: its socket, or host and port, made
    /// file-safe. Not the user or database: one server has one journal, however it is reached.
    pub fn journal_key(&self) -> String {
        let id = match &self.spec {
            TargetSpec::Mysql(u) => match &u.socket {
                Some(sock) => format!("socket-{}", sock.display()),
                None => format!("tcp-{}-{}", u.host, u.port),
            },
            TargetSpec::Managed(_) => self.label(),
        };
        id.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect()
    }

    /// A new connection with no default database (for admin statements).
    pub fn admin(&self) -> Result<::mysql::Conn> {
        ::mysql::Conn::new(self.base_opts.clone())
            .with_context(|| format!("connecting to {}", self.label()))
    }

    /// A new connection in dbtax's schema (for the workload).
    pub fn connect(&self) -> Result<::mysql::Conn> {
        ::mysql::Conn::new(self.base_opts.clone().db_name(Some(self.schema.clone())))
            .with_context(|| format!("connecting to {}", self.label()))
    }

    /// Connection options in dbtax's schema, for workers that reconnect by themselves.
    pub fn client_opts(&self) -> ::mysql::Opts {
        self.base_opts
            .clone()
            .db_name(Some(self.schema.clone()))
            .into()
    }

    /// Create dbtax's schema when absent. The only DDL dbtax runs outside its tables.
    pub fn ensure_schema(&self) -> Result<()> {
        let mut conn = self.admin()?;
        conn.query_drop(format!(
            "CREATE DATABASE IF NOT EXISTS {}",
            mysql::quote_ident(&self.schema)
        ))
        .map_err(|e| {
            usage(format!(
                "cannot create or use schema '{}' on {}: {}",
                self.schema,
                self.label(),
                mysql::clean_error(&e)
            ))
        })
    }

    /// Server CPU time so far (µs) when the server's process is local.
    pub fn server_cpu_us(&self) -> Option<u64> {
        self.server_pid.and_then(crate::host::process_cpu_us)
    }

    /// A server file path (as in @@general_log_file) resolved to a local path, when local.
    pub fn local_file(&self, server_path: &str) -> Option<PathBuf> {
        let p = PathBuf::from(server_path);
        let p = if p.is_absolute() {
            p
        } else {
            self.local_datadir.as_ref()?.join(p)
        };
        self.local_datadir.as_ref()?;
        Some(p)
    }

    /// Restart a managed server with extra options (restart-only settings).
    pub fn restart_managed(&mut self, extra_opts: &[String]) -> Result<()> {
        let server = self
            .managed
            .as_mut()
            .ok_or_else(|| usage("only a managed target can be restarted by dbtax"))?;
        server.restart(extra_opts)?;
        self.server_pid = server.pid();
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
        loop {
            if let Ok(mut conn) = self.admin() {
                let (pid, dir) = find_local_server(&mut conn, &self.spec);
                self.server_pid = pid;
                self.local_datadir = dir;
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                anyhow::bail!("the server did not answer within 120 s of --restart-cmd");
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// What results.json says of the target.
    pub fn info(&self) -> TargetInfo {
        TargetInfo {
            kind: match self.spec {
                TargetSpec::Managed(_) => "managed:mariadb".into(),
                TargetSpec::Mysql(_) => "mysql".into(),
            },
            server_version: self.server_version.clone(),
            url: self.label(),
            variables: Default::default(),
        }
    }
}

/// For a user's server: is its process on this machine? Read @@pid_file and check that the
/// pid is a mysqld/mariadbd we can see. Only trusted for sockets and loopback hosts.
fn find_local_server(
    conn: &mut ::mysql::Conn,
    spec: &TargetSpec,
) -> (Option<u32>, Option<PathBuf>) {
    let TargetSpec::Mysql(u) = spec else {
        return (None, None);
    };
    let loopback = u.socket.is_some()
        || matches!(u.host.as_str(), "localhost" | "127.0.0.1" | "::1" | "[::1]");
    if !loopback {
        return (None, None);
    }
    let row: Option<(String, String)> = conn
        .query_first("SELECT @@pid_file, @@datadir")
        .ok()
        .flatten();
    let Some((pid_file, datadir)) = row else {
        return (None, None);
    };
    let datadir = PathBuf::from(datadir);
    let pid_path = if PathBuf::from(&pid_file).is_absolute() {
        PathBuf::from(&pid_file)
    } else {
        datadir.join(&pid_file)
    };
    let pid = std::fs::read_to_string(pid_path)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .filter(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            comm.contains("mysqld") || comm.contains("mariadbd")
        });
    let local_dir = (pid.is_some() && datadir.is_dir()).then_some(datadir);
    (pid, local_dir)
}
