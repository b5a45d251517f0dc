//! The MySQL family (MariaDB, MySQL, Percona) behind the engine seam: its row of the engine
//! table (`ENGINE`), `open` reaches or starts the server, `MysqlEngine` prepares tables and
//! makes connections, `admin::MysqlAdmin` reads and changes settings. Below: small helpers
//! over a driver connection, and the one place its driver errors become dbtax's (`db_error`).

pub mod admin;
pub mod catalog;
pub mod driver;
pub mod managed;
pub mod tables;
pub mod url;
pub mod wire;

use super::catalog::Feature;
use super::engines::{CpuScope, EngineDef, Opened};
use super::local::Restart;
use super::url::TargetSpec;
use super::{Admin, Engine, ManagedConfig, ServerLost};
use crate::client::connection::{DbError, Session};
use crate::client::dial::Dialer;
use crate::client::mode::QueryMode;
use crate::error::usage;
use crate::workload::{PreparedWorkload, Workload, WorkloadKind};
use managed::ManagedServer;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use url::MysqlUrl;

use ::mysql::prelude::Queryable;
use anyhow::Result;
use std::collections::BTreeMap;

/// The MySQL family's row of the engine table.
pub static ENGINE: EngineDef = EngineDef {
    name: "mysql",
    title: "MariaDB / MySQL",
    managed: &["managed:mariadb", "managed:mysql", "managed"],
    schemes: &["mysql", "mariadb"],
    examples: &[
        "mysql://user:pass@host:port/db",
        "mysql://user@localhost/db?socket=/path/mysqld.sock",
    ],
    parse_url: url::parse_url,
    open,
    feature_names: &catalog::NAMES,
    feature: |name| catalog::lookup(name, Flavor::Mariadb),
    cpu: CpuScope::Process,
    point_select: WorkloadKind::PointSelect,
    system_schemas: &["mysql", "information_schema", "performance_schema", "sys"],
};

/// Which server of the family answers (their catalogs differ in the audit plugin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// MariaDB.
    Mariadb,
    /// Oracle MySQL or Percona Server.
    Mysql,
}

/// Reach the user's server (or start a managed one); returns the engine, the server's version
/// and the URL's database. A refused login is a usage error.
fn open(spec: &TargetSpec, config: &ManagedConfig) -> Result<Opened> {
    let (managed, url, base_opts) = match spec.url() {
        None => {
            let server = ManagedServer::start(config)?;
            let opts = server.opts();
            (Some(server), None, opts)
        }
        Some(text) => {
            let u = MysqlUrl::parse(text)?;
            let opts = u.opts().db_name(None::<String>);
            (None, Some(u), opts)
        }
    };
    let mut conn = ::mysql::Conn::new(base_opts.clone()).map_err(|e| {
        usage(format!(
            "cannot connect to {}: {}. Check the URL, the user and password, and that the \
             server is running and reachable",
            spec.redacted(),
            clean_error(&e)
        ))
    })?;
    let version: String = conn
        .query_first("SELECT VERSION()")
        .map_err(db_error)?
        .unwrap_or_default();
    let flavor = if is_mariadb(&version) {
        Flavor::Mariadb
    } else {
        Flavor::Mysql
    };
    let db = url.as_ref().and_then(|u| u.db.clone());
    let engine = MysqlEngine {
        shown: spec.redacted(),
        managed,
        url,
        base_opts,
        flavor,
    };
    Ok(Opened {
        engine: Box::new(engine),
        version,
        database: db,
    })
}

/// A MySQL-family server: managed or reached by URL.
pub struct MysqlEngine {
    /// The target as printed.
    shown: String,
    managed: Option<ManagedServer>,
    /// The user's URL (None: managed).
    url: Option<MysqlUrl>,
    /// Connection options without a default database.
    base_opts: ::mysql::OptsBuilder,
    flavor: Flavor,
}

/// How long an admin statement may wait on a server that does not answer (a frozen or
/// half-dead server must not hang dbtax, or its Ctrl-C, forever).
const ADMIN_TIMEOUT: Duration = Duration::from_secs(20);
/// Run on every admin connection: its idle limit the longest the server allows (a year),
/// whatever the server's wait_timeout for others.
const KEEP_ADMIN_ALIVE: &str =
    "SET SESSION wait_timeout = 31536000, SESSION interactive_timeout = 31536000";
/// The same for a client's statement; longer, since a user's query may be slow.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

impl MysqlEngine {
    /// Client sessions' options: the client's timeouts (a user's query may be slow).
    fn client_opts(&self, schema: Option<&str>) -> mysql::Opts {
        let opts = self
            .base_opts
            .clone()
            .db_name(schema.map(str::to_string))
            .read_timeout(Some(CLIENT_TIMEOUT))
            .write_timeout(Some(CLIENT_TIMEOUT));
        opts.into()
    }

    fn conn(&self, schema: Option<&str>) -> Result<::mysql::Conn> {
        let opts = self
            .base_opts
            .clone()
            .db_name(schema.map(str::to_string))
            .read_timeout(Some(ADMIN_TIMEOUT))
            .write_timeout(Some(ADMIN_TIMEOUT))
            // An admin connection waits through whole trials and captures, longer than a
            // production server's wait_timeout (often a minute or a few): one the server
            // closed would take the run lock with it and leave the settings unwatched.
            .init(vec![KEEP_ADMIN_ALIVE]);
        let mut conn = ::mysql::Conn::new(opts).map_err(db_error)?;
        // dbtax's own statements stay out of the general log it may switch on (a capture's
        // file holds the application's statements only). A login without the privilege
        // logs them: no error.
        let _ = conn.query_drop("SET SESSION sql_log_off = 1");
        Ok(conn)
    }

    /// Create dbtax's schema when absent. The only DDL dbtax runs outside its tables.
    fn ensure_schema(&self, schema: &str) -> Result<()> {
        let mut conn = self.conn(None)?;
        conn.query_drop(format!(
            "CREATE DATABASE IF NOT EXISTS {}",
            quote_ident(schema)
        ))
        .map_err(|e| {
            usage(format!(
                "cannot create or use schema '{schema}' on {}: {}",
                self.shown,
                clean_error(&e)
            ))
        })
    }
}

impl Engine for MysqlEngine {
    fn def(&self) -> &'static EngineDef {
        &ENGINE
    }

    fn feature(&self, name: &str) -> Option<Feature> {
        catalog::lookup(name, self.flavor)
    }

    fn admin(&self) -> Result<Box<dyn Admin>> {
        Ok(Box::new(admin::MysqlAdmin::new(self.conn(None)?)))
    }

    fn session(&self, schema: Option<&str>) -> Result<Box<dyn Session>, DbError> {
        Ok(Box::new(driver::MysqlSession::connect(
            self.client_opts(schema),
        )?))
    }

    /// The workers' clients: the lean protocol client (`wire`).
    fn dialer(
        &self,
        schema: &str,
        login: Option<&super::Login>,
        mode: QueryMode,
    ) -> Arc<dyn Dialer> {
        let mut opts = self.client_opts(Some(schema));
        if let Some(l) = login {
            opts = ::mysql::OptsBuilder::from_opts(opts)
                .user(Some(&l.user))
                .pass(Some(&l.password))
                .into();
        }
        Arc::new(wire::MyWireDialer {
            opts,
            mode,
            timeout: CLIENT_TIMEOUT,
        })
    }

    fn admin_as(&self, schema: &str, login: &super::Login) -> Result<Box<dyn Admin>> {
        let opts = self
            .base_opts
            .clone()
            .user(Some(&login.user))
            .pass(Some(&login.password))
            .db_name(Some(schema))
            .read_timeout(Some(ADMIN_TIMEOUT))
            .write_timeout(Some(ADMIN_TIMEOUT));
        let conn = ::mysql::Conn::new(opts).map_err(|e| {
            usage(format!(
                "cannot log in as the replay's user '{}': {}. Nothing was changed",
                login.user,
                clean_error(&e)
            ))
        })?;
        Ok(Box::new(admin::MysqlAdmin::new(conn)))
    }

    /// pgbench's scripts are PostgreSQL's: refused here with what to use instead.
    fn accepts(&self, workload: &Workload) -> Result<()> {
        if workload.kind.is_pgbench() {
            return Err(usage(format!(
                "the {} workload is pgbench's and runs on PostgreSQL targets only; on \
                 MariaDB/MySQL use point-select, read-only, read-write, insert or query. \
                 Nothing was changed",
                workload.kind.name()
            )));
        }
        if workload.protocol == QueryMode::Extended {
            return Err(usage(
                "--protocol extended is PostgreSQL's (the unnamed statement parsed at every \
                 execution); on MariaDB/MySQL choose text, prepared or prepared-uncached. \
                 Nothing was changed",
            ));
        }
        Ok(())
    }

    fn prepare(
        &self,
        schema: &str,
        workload: &Workload,
        say: &mut dyn FnMut(&str),
    ) -> Result<PreparedWorkload> {
        self.ensure_schema(schema)?;
        let conn = || self.conn(Some(schema));
        let (max_ids, created) = match workload.kind {
            WorkloadKind::Query | WorkloadKind::Replay => {
                let mut s = self.session(Some(schema)).map_err(DbError::into_anyhow)?;
                crate::workload::query::run_setup(s.as_mut(), &workload.setup)?;
                (vec![], vec![])
            }
            _ => tables::prepare_tables(&conn, schema, workload.tables, workload.table_size, say)?,
        };
        Ok(PreparedWorkload {
            workload: workload.clone(),
            max_ids,
            created,
            scale: None,
        })
    }

    fn locate(&self) -> (Option<u32>, Option<PathBuf>) {
        match (&self.managed, &self.url) {
            (Some(m), _) => (m.pid(), Some(m.datadir())),
            (None, Some(u)) => match self.conn(None) {
                Ok(mut conn) => find_local_server(&mut conn, u),
                Err(_) => (None, None),
            },
            (None, None) => (None, None),
        }
    }

    fn probe_find(&self) -> Option<(crate::host::probe::Find, PathBuf, Option<String>)> {
        let mut conn = self.conn(None).ok()?;
        let (pid_file, datadir, hostname, socket, port): (
            String,
            String,
            String,
            Option<String>,
            u16,
        ) = conn
            .query_first("SELECT @@pid_file, @@datadir, @@hostname, @@socket, @@port")
            .ok()
            .flatten()?;
        let datadir = PathBuf::from(datadir);
        let pid_file = if PathBuf::from(&pid_file).is_absolute() {
            PathBuf::from(&pid_file)
        } else {
            datadir.join(&pid_file)
        };
        let find = crate::host::probe::Find {
            pid_file: pid_file.display().to_string(),
            names: vec!["mariadbd".into(), "mysqld".into()],
            socket: socket.filter(|s| !s.is_empty()),
            port: (port != 0).then_some(port),
        };
        Some((find, datadir, Some(hostname)))
    }

    fn managed(&mut self) -> Option<&mut dyn Restart> {
        self.managed.as_mut().map(|m| m.process())
    }

    fn is_managed(&self) -> bool {
        self.managed.is_some()
    }

    fn client_target(&self) -> TargetSpec {
        match (&self.managed, &self.url) {
            (Some(m), _) => {
                let u = MysqlUrl {
                    user: "root".into(),
                    password: None,
                    host: "localhost".into(),
                    port: 3306,
                    db: None,
                    socket: Some(m.socket()),
                    connect_timeout: None,
                };
                TargetSpec::from_parsed(&ENGINE, u.parsed())
            }
            (None, Some(u)) => TargetSpec::from_parsed(&ENGINE, u.parsed()),
            (None, None) => unreachable!("a server is managed or has a URL"),
        }
    }
}

/// For a user's server: is its process on this machine? Only for sockets and loopback hosts,
/// and only when the server says it is this machine (@@hostname) listening where we connect
/// (@@socket for a socket, @@port for TCP: a port-forward or a tunnel to another mysqld
/// fails this). Then read @@pid_file and check that the pid is a mysqld/mariadbd we can see.
fn find_local_server(conn: &mut ::mysql::Conn, u: &MysqlUrl) -> (Option<u32>, Option<PathBuf>) {
    let loopback = u.socket.is_some()
        || matches!(u.host.as_str(), "localhost" | "127.0.0.1" | "::1" | "[::1]");
    if !loopback {
        return (None, None);
    }
    let row: Option<(String, String, String, Option<String>, u16)> = conn
        .query_first("SELECT @@pid_file, @@datadir, @@hostname, @@socket, @@port")
        .ok()
        .flatten();
    let Some((pid_file, datadir, hostname, socket, port)) = row else {
        return (None, None);
    };
    let same_place = match &u.socket {
        Some(sock) => socket.is_some_and(|s| {
            let canon = |p: &std::path::Path| std::fs::canonicalize(p).ok();
            canon(sock) == canon(std::path::Path::new(&s))
        }),
        None => port == u.port,
    };
    if hostname != crate::host::hostname() || !same_place {
        return (None, None);
    }
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

/// A driver error as the rest of dbtax sees it: the server refusing a statement (its words),
/// or `ServerLost` when the connection is gone.
pub fn db_error(e: ::mysql::Error) -> anyhow::Error {
    match e {
        ::mysql::Error::MySqlError(_) => anyhow::anyhow!("{}", clean_error(&e)),
        other => ServerLost(clean_error(&other)).into(),
    }
}

/// The server's message without the crate's prefixes (`CodecError { … }`, `DriverError
/// { … }`), for one-paragraph errors.
pub fn clean_error(e: &::mysql::Error) -> String {
    match e {
        ::mysql::Error::MySqlError(m) => format!("{} (error {})", m.message, m.code),
        ::mysql::Error::IoError(io) => format!("{io}"),
        // "IO error: `Broken pipe (os error 32)'": the crate's codec quotes the I/O error.
        ::mysql::Error::CodecError(c) => {
            let text = c.to_string();
            text.strip_prefix("IO error: `")
                .and_then(|t| t.strip_suffix('\''))
                .map(str::to_string)
                .unwrap_or(text)
        }
        ::mysql::Error::DriverError(d) => format!("{d}"),
        ::mysql::Error::UrlError(u) => format!("{u}"),
        other => other.to_string(),
    }
}

/// Backtick-quote an identifier.
pub fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// Quote a value for `SET GLOBAL`: numbers and ON/OFF bare, everything else as a string.
pub fn quote_value(v: &str) -> String {
    let bare = v.parse::<f64>().is_ok()
        || ["ON", "OFF", "DEFAULT"].contains(&v.to_ascii_uppercase().as_str());
    if bare {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// The statement that sets one global variable.
pub fn set_global_sql(name: &str, value: &str) -> String {
    format!("SET GLOBAL {name} = {}", quote_value(value))
}

/// `SELECT @@GLOBAL.name` for each name; names the server does not know are absent.
pub fn global_vars(conn: &mut ::mysql::Conn, names: &[&str]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if names.is_empty() {
        return Ok(out);
    }
    let list = names
        .iter()
        .map(|n| format!("'{}'", n.replace('\'', "")))
        .collect::<Vec<_>>()
        .join(",");
    let rows: Vec<(String, Option<String>)> = conn
        .query(format!(
            "SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES \
             WHERE LOWER(VARIABLE_NAME) IN ({})",
            list.to_lowercase()
        ))
        .map_err(|e| db_error(e).context("reading global variables"))?;
    for (k, v) in rows {
        out.insert(k, v.unwrap_or_default());
    }
    Ok(out)
}

/// `SHOW GLOBAL STATUS` as numbers, for the counters dbtax reports per query.
pub fn global_status(conn: &mut ::mysql::Conn) -> Result<BTreeMap<String, f64>> {
    let rows: Vec<(String, String)> = conn.query("SHOW GLOBAL STATUS").map_err(db_error)?;
    Ok(rows
        .into_iter()
        .filter(|(k, _)| is_reported_counter(k))
        .filter_map(|(k, v)| v.parse::<f64>().ok().map(|v| (k, v)))
        .collect())
}

fn is_reported_counter(name: &str) -> bool {
    matches!(
        name,
        "Com_select"
            | "Com_insert"
            | "Com_update"
            | "Com_delete"
            | "Com_begin"
            | "Com_commit"
            | "Com_stmt_execute"
            | "Questions"
            | "Innodb_data_fsyncs"
            | "Innodb_os_log_fsyncs"
            | "Innodb_os_log_written"
            | "Innodb_data_written"
            | "Binlog_bytes_written"
            | "Binlog_commits"
            | "Binlog_group_commits"
            | "Slow_queries"
    )
}

/// Whether the server is a MariaDB.
pub fn is_mariadb(version: &str) -> bool {
    version.to_ascii_lowercase().contains("mariadb")
}

/// The grants of the current user, as one upper-case text (for privilege checks).
pub fn grants_text(conn: &mut ::mysql::Conn) -> Result<String> {
    let rows: Vec<String> = conn.query("SHOW GRANTS").map_err(db_error)?;
    Ok(rows.join("\n").to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_only_when_needed() {
        assert_eq!(
            set_global_sql("general_log", "ON"),
            "SET GLOBAL general_log = ON"
        );
        assert_eq!(
            set_global_sql("long_query_time", "0"),
            "SET GLOBAL long_query_time = 0"
        );
        assert_eq!(
            set_global_sql("log_output", "FILE"),
            "SET GLOBAL log_output = 'FILE'"
        );
        assert_eq!(set_global_sql("x", "a'b"), "SET GLOBAL x = 'a\\'b'");
    }
}
