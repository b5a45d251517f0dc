//! PostgreSQL behind the engine seam: its row of the engine table (`ENGINE`), `open` reaches
//! the user's server or starts a managed cluster, `PgEngine` prepares the pgbench or sbtest
//! tables and makes connections (rust-postgres, sync, one thread per client, prepared
//! statements), `admin::PgAdmin` reads pg_settings and switches settings with ALTER SYSTEM
//! and a reload. dbtax's "schema" is a database here (`dbtax` unless the URL or --schema
//! names one). Its driver errors become dbtax's in one place (`db_error`).

pub mod admin;
pub mod catalog;
pub mod driver;
pub mod managed;
pub mod tables;
pub mod tls;
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
use anyhow::Result;
use managed::PgManaged;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tls::Tls;
use url::PgUrl;

/// PostgreSQL's row of the engine table.
pub static ENGINE: EngineDef = EngineDef {
    name: "postgres",
    title: "PostgreSQL",
    managed: &["managed:postgres", "managed:postgresql"],
    schemes: &["postgres", "postgresql"],
    examples: &[
        "postgres://user:pass@host:port/db",
        "postgres://user@/db?host=/socket/dir",
    ],
    parse_url: url::parse_url,
    open,
    feature_names: &catalog::NAMES,
    feature: catalog::lookup,
    cpu: CpuScope::ProcessTree,
    point_select: WorkloadKind::SelectOnly,
    system_schemas: &[
        "template0",
        "template1",
        "pg_catalog",
        "information_schema",
        "pg_toast",
    ],
};

/// The database admin connections use (the run lock lives there): PostgreSQL's maintenance
/// database, as its own tools use it.
pub const ADMIN_DB: &str = "postgres";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a client's statement may wait for its answer (a user's query may be slow; a
/// frozen server must not hang a worker for ever).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

/// Reach the user's server (or start a managed one); returns the engine, the server's
/// version and the URL's database. A refused login is a usage error.
fn open(spec: &TargetSpec, config: &ManagedConfig) -> Result<Opened> {
    let engine = match spec.url() {
        None => PgEngine {
            shown: spec.redacted(),
            managed: Some(PgManaged::start(config)?),
            url: None,
            tls: None,
        },
        Some(text) => {
            let url = PgUrl::parse(text)?;
            // libpq's rule: no TLS on a unix socket, whatever sslmode says.
            let tls = match (url.ssl, &url.socket_dir) {
                (Some(mode), None) => Some(Tls::new(mode, url.sslrootcert.as_deref())?),
                _ => None,
            };
            PgEngine {
                shown: spec.redacted(),
                managed: None,
                url: Some(url),
                tls,
            }
        }
    };
    let db = engine.url.as_ref().and_then(|u| u.db.clone());
    let mut conn = engine.connect_admin().map_err(|e| {
        usage(format!(
            "cannot connect to {}: {}. Check the URL, the user and password, and that the \
             server is running and reachable",
            spec.redacted(),
            clean_error(&e)
        ))
    })?;
    let version: String = conn
        .query_one("SHOW server_version", &[])
        .map(|r| r.get(0))
        .unwrap_or_default();
    Ok(Opened {
        engine: Box::new(engine),
        version: format!("PostgreSQL {version}"),
        database: db,
    })
}

/// A PostgreSQL server: managed or reached by URL.
pub struct PgEngine {
    /// The target as printed.
    shown: String,
    managed: Option<PgManaged>,
    /// The user's URL (None: managed).
    url: Option<PgUrl>,
    /// TLS, when the URL asks for it.
    tls: Option<Tls>,
}

/// Connect with rust-postgres, over TLS when `tls` says.
pub fn connect_with(
    config: &postgres::Config,
    tls: Option<&Tls>,
) -> Result<postgres::Client, postgres::Error> {
    match tls {
        Some(t) => config.connect(t.connector()),
        None => config.connect(postgres::NoTls),
    }
}

impl PgEngine {
    /// Driver configuration for a database (the URL's own timeout and name win).
    fn config(&self, db: &str) -> postgres::Config {
        let mut c = match (&self.managed, &self.url) {
            (Some(m), _) => m.config(db),
            (None, Some(u)) => {
                let mut c = u.config(Some(db));
                if u.connect_timeout.is_none() {
                    c.connect_timeout(CONNECT_TIMEOUT);
                }
                if u.application_name.is_none() {
                    c.application_name("dbtax");
                }
                return c;
            }
            (None, None) => unreachable!("a server is managed or has a URL"),
        };
        c.connect_timeout(CONNECT_TIMEOUT).application_name("dbtax");
        c
    }

    /// A connection to a database. Its idle limits are lifted for it (dbtax's connections
    /// wait through whole trials and captures, longer than a production server's
    /// idle_session_timeout may allow); a server older than the setting (before 14) has no
    /// such limit and refuses the name, which is no error.
    fn connect(&self, db: &str) -> Result<postgres::Client, postgres::Error> {
        let mut c = connect_with(&self.config(db), self.tls.as_ref())?;
        let _ = c.batch_execute("SET idle_session_timeout = 0");
        let _ = c.batch_execute("SET idle_in_transaction_session_timeout = 0");
        Ok(c)
    }

    /// An admin connection: to the maintenance database, else the URL's.
    fn connect_admin(&self) -> Result<postgres::Client, postgres::Error> {
        match self.connect(ADMIN_DB) {
            Ok(c) => Ok(c),
            Err(e) => match self.url.as_ref().and_then(|u| u.db.as_deref()) {
                Some(db) if db != ADMIN_DB => self.connect(db),
                _ => Err(e),
            },
        }
    }

    /// Create dbtax's database when absent (CREATE DATABASE cannot be undone by a rollback,
    /// and is the only change dbtax makes outside its tables).
    fn ensure_database(&self, db: &str) -> Result<()> {
        let mut conn = self.connect_admin().map_err(db_error)?;
        let exists = conn
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])
            .map_err(db_error)?
            .is_some();
        if !exists {
            conn.batch_execute(&format!("CREATE DATABASE {}", quote_ident(db)))
                .map_err(|e| {
                    usage(format!(
                        "cannot create database '{db}' on {}: {}",
                        self.shown,
                        clean_error(&e)
                    ))
                })?;
        }
        Ok(())
    }
}

impl Engine for PgEngine {
    fn def(&self) -> &'static EngineDef {
        &ENGINE
    }

    fn feature(&self, name: &str) -> Option<Feature> {
        catalog::lookup(name)
    }

    fn accepts(&self, workload: &Workload) -> Result<()> {
        if workload.protocol == QueryMode::PreparedUncached {
            return Err(usage(
                "--protocol prepared-uncached is the MySQL family's (prepared statements \
                 without MariaDB's metadata cache); on PostgreSQL choose text, prepared or \
                 extended. Nothing was changed",
            ));
        }
        Ok(())
    }

    fn admin_as(&self, schema: &str, login: &super::Login) -> Result<Box<dyn Admin>> {
        let mut config = self.config(schema);
        config.user(&login.user).password(&login.password);
        let conn = connect_with(&config, self.tls.as_ref()).map_err(|e| {
            usage(format!(
                "cannot log in as the replay's role '{}': {}. Nothing was changed",
                login.user,
                clean_error(&e)
            ))
        })?;
        Ok(Box::new(admin::PgAdmin::new(
            conn,
            config,
            self.tls.clone(),
        )))
    }

    fn admin(&self) -> Result<Box<dyn Admin>> {
        let conn = self
            .connect_admin()
            .map_err(|e| anyhow::Error::from(ServerLost(clean_error(&e))))?;
        let base = self.config(ADMIN_DB);
        Ok(Box::new(admin::PgAdmin::new(conn, base, self.tls.clone())))
    }

    /// In dbtax's database; without one, where admin connections go (the maintenance
    /// database, else the URL's).
    fn session(&self, schema: Option<&str>) -> Result<Box<dyn Session>, DbError> {
        let first =
            driver::PgSession::connect(self.tls.as_ref(), &self.config(schema.unwrap_or(ADMIN_DB)));
        let url_db = self.url.as_ref().and_then(|u| u.db.as_deref());
        let s = match (first, schema, url_db) {
            (Err(_), None, Some(db)) if db != ADMIN_DB => {
                driver::PgSession::connect(self.tls.as_ref(), &self.config(db))?
            }
            (first, _, _) => first?,
        };
        Ok(Box::new(s))
    }

    /// The workers' clients: the lean protocol client (`wire`).
    fn dialer(
        &self,
        schema: &str,
        login: Option<&super::Login>,
        mode: QueryMode,
    ) -> Arc<dyn Dialer> {
        let mut config = self.config(schema);
        if let Some(l) = login {
            config.user(&l.user).password(&l.password);
        }
        Arc::new(wire::PgWireDialer {
            config,
            mode,
            timeout: CLIENT_TIMEOUT,
            tls: self.tls.clone(),
        })
    }

    /// Privileges are checked when a statement runs, not when it is prepared: ask for them
    /// on every table the workload uses that exists already.
    fn check_access(&self, schema: &str, workload: &Workload) -> Result<()> {
        let Ok(mut conn) = self.connect(schema) else {
            // No database yet: dbtax will create it and own its tables.
            return Ok(());
        };
        for (table, privileges) in tables::used(workload) {
            let exists: bool = conn
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
                .map_err(db_error)?
                .get(0);
            if !exists {
                continue;
            }
            for p in privileges {
                let ok: bool = conn
                    .query_one("SELECT has_table_privilege($1, $2)", &[&table, p])
                    .map_err(db_error)?
                    .get(0);
                if !ok {
                    return Err(usage(format!(
                        "this user may not {p} {table} in database '{schema}' on {}, which the \
                         {} workload does: GRANT {p} ON {table} TO <user> (or run as its \
                         owner). Nothing was changed",
                        self.shown,
                        workload.kind.name()
                    )));
                }
            }
        }
        Ok(())
    }

    fn prepare(
        &self,
        schema: &str,
        workload: &Workload,
        say: &mut dyn FnMut(&str),
    ) -> Result<PreparedWorkload> {
        self.ensure_database(schema)?;
        let mut conn = self.connect(schema).map_err(db_error)?;
        let (max_ids, created, scale) = match workload.kind {
            WorkloadKind::Query | WorkloadKind::Replay => {
                let mut s = self.session(Some(schema)).map_err(DbError::into_anyhow)?;
                crate::workload::query::run_setup(s.as_mut(), &workload.setup)?;
                (vec![], vec![], None)
            }
            k if k.is_pgbench() => {
                let (scale, created) = tables::prepare_pgbench(&mut conn, workload.scale, say)?;
                (vec![], vec![created], Some(scale))
            }
            _ => {
                let (ids, created) = tables::prepare_sbtest(
                    &|| self.connect(schema).map_err(db_error),
                    schema,
                    workload.tables,
                    workload.table_size,
                    say,
                )?;
                (ids, created, None)
            }
        };
        Ok(PreparedWorkload {
            workload: workload.clone(),
            max_ids,
            created,
            scale,
        })
    }

    fn locate(&self) -> (Option<u32>, Option<PathBuf>) {
        match (&self.managed, &self.url) {
            (Some(m), _) => (m.pid(), Some(m.datadir())),
            (None, Some(u)) => match self.connect_admin() {
                Ok(mut conn) => find_local_server(&mut conn, u),
                Err(_) => (None, None),
            },
            (None, None) => (None, None),
        }
    }

    fn probe_find(&self) -> Option<(crate::host::probe::Find, PathBuf, Option<String>)> {
        let mut conn = self.connect_admin().ok()?;
        let row = conn
            .query_one(
                "SELECT current_setting('data_directory'), current_setting('port'), \
                 current_setting('unix_socket_directories')",
                &[],
            )
            .ok()?;
        let datadir = PathBuf::from(row.get::<_, String>(0));
        let port: u16 = row.get::<_, String>(1).parse().ok()?;
        let dirs: String = row.get(2);
        let socket = dirs
            .split(',')
            .map(str::trim)
            .find(|d| d.starts_with('/'))
            .map(|d| format!("{d}/.s.PGSQL.{port}"));
        let find = crate::host::probe::Find {
            pid_file: datadir.join("postmaster.pid").display().to_string(),
            names: vec!["postgres".into()],
            socket,
            port: Some(port),
        };
        // PostgreSQL does not say its host's name.
        Some((find, datadir, None))
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
                let u = PgUrl {
                    user: managed::SUPERUSER.into(),
                    password: None,
                    host: "localhost".into(),
                    port: m.port(),
                    db: None,
                    socket_dir: Some(m.socket_dir()),
                    connect_timeout: None,
                    application_name: None,
                    ssl: None,
                    sslrootcert: None,
                };
                TargetSpec::from_parsed(&ENGINE, u.parsed())
            }
            (None, Some(u)) => TargetSpec::from_parsed(&ENGINE, u.parsed()),
            (None, None) => unreachable!("a server is managed or has a URL"),
        }
    }
}

/// For a user's server reached over a socket or loopback: its postmaster's pid (from
/// postmaster.pid in its data directory, which must name the same port and be a `postgres`
/// process here) and the data directory. Needs the right to read both.
fn find_local_server(conn: &mut postgres::Client, u: &PgUrl) -> (Option<u32>, Option<PathBuf>) {
    let loopback = u.socket_dir.is_some()
        || matches!(u.host.as_str(), "localhost" | "127.0.0.1" | "::1" | "[::1]");
    if !loopback {
        return (None, None);
    }
    let Some(datadir) = conn
        .query_one("SELECT current_setting('data_directory')", &[])
        .ok()
        .map(|r| PathBuf::from(r.get::<_, String>(0)))
    else {
        return (None, None);
    };
    let text = std::fs::read_to_string(datadir.join("postmaster.pid")).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let pid = lines
        .first()
        .and_then(|l| l.trim().parse::<u32>().ok())
        .filter(|_| lines.get(3).and_then(|p| p.trim().parse::<u16>().ok()) == Some(u.port))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "postgres")
        });
    let dir = pid.is_some().then_some(datadir);
    (pid, dir)
}

/// A driver error as the rest of dbtax sees it: the server refusing a statement (its words),
/// or `ServerLost` when the connection is gone.
pub fn db_error(e: postgres::Error) -> anyhow::Error {
    if e.as_db_error().is_some() {
        anyhow::anyhow!("{}", clean_error(&e))
    } else {
        ServerLost(clean_error(&e)).into()
    }
}

/// The server's message without the driver's prefixes, for one-paragraph errors.
pub fn clean_error(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                s = format!("{s}: {inner}");
                src = inner.source();
            }
            s
        }
    }
}

/// Double-quote an identifier.
pub fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Single-quote a literal.
pub fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
