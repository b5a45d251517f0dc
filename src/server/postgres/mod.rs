//! PostgreSQL behind the engine seam: `open` reaches the user's server or starts a managed
//! cluster, `PgEngine` prepares the pgbench or sbtest tables and makes connections
//! (rust-postgres, sync, one thread per client, prepared statements), `admin::PgAdmin` reads
//! pg_settings and switches settings with ALTER SYSTEM and a reload. dbtax's "schema" is a
//! database here (`dbtax` unless the URL or --schema names one).

pub mod admin;
pub mod catalog;
pub mod client;
pub mod managed;
pub mod tables;

use super::{Admin, Connector, Engine, Family, ManagedConfig, TargetSpec};
use crate::error::usage;
use crate::workload::{PreparedWorkload, Workload, WorkloadKind};
use anyhow::Result;
use managed::PgManaged;
use std::path::PathBuf;
use std::time::Duration;

/// The database admin connections use (the run lock lives there): PostgreSQL's maintenance
/// database, as its own tools use it.
pub const ADMIN_DB: &str = "postgres";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Reach the user's server (or start a managed one); returns the engine, the server's
/// version and the URL's database. A refused login is a usage error.
pub fn open(
    spec: &TargetSpec,
    config: &ManagedConfig,
) -> Result<(Box<dyn Engine>, String, Option<String>)> {
    let (managed, db) = match spec {
        TargetSpec::Managed(_) => (Some(PgManaged::start(config)?), None),
        TargetSpec::Postgres(u) => (None, u.db.clone()),
        TargetSpec::Mysql(_) => unreachable!("a mysql:// target opens the MySQL engine"),
    };
    let engine = PgEngine {
        spec: spec.clone(),
        managed,
    };
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
    Ok((Box::new(engine), format!("PostgreSQL {version}"), db))
}

/// A PostgreSQL server: managed or reached by URL.
pub struct PgEngine {
    spec: TargetSpec,
    managed: Option<PgManaged>,
}

impl PgEngine {
    /// Driver configuration for a database.
    fn config(&self, db: &str) -> postgres::Config {
        let mut c = match (&self.managed, &self.spec) {
            (Some(m), _) => m.config(db),
            (None, TargetSpec::Postgres(u)) => u.config(Some(db)),
            _ => unreachable!("a PostgreSQL engine has a managed cluster or a URL"),
        };
        c.connect_timeout(CONNECT_TIMEOUT).application_name("dbtax");
        c
    }

    /// A connection to a database.
    fn connect(&self, db: &str) -> Result<postgres::Client, postgres::Error> {
        self.config(db).connect(postgres::NoTls)
    }

    /// An admin connection: to the maintenance database, else the URL's.
    fn connect_admin(&self) -> Result<postgres::Client, postgres::Error> {
        match self.connect(ADMIN_DB) {
            Ok(c) => Ok(c),
            Err(e) => match &self.spec {
                TargetSpec::Postgres(u) if u.db.as_deref().is_some_and(|d| d != ADMIN_DB) => {
                    self.connect(u.db.as_deref().unwrap_or(ADMIN_DB))
                }
                _ => Err(e),
            },
        }
    }

    /// Create dbtax's database when absent (CREATE DATABASE cannot be undone by a rollback,
    /// and is the only change dbtax makes outside its tables).
    fn ensure_database(&self, db: &str) -> Result<()> {
        let mut conn = self.connect_admin()?;
        let exists = conn
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])?
            .is_some();
        if !exists {
            conn.batch_execute(&format!("CREATE DATABASE {}", quote_ident(db)))
                .map_err(|e| {
                    usage(format!(
                        "cannot create database '{db}' on {}: {}",
                        self.spec.redacted(),
                        clean_error(&e)
                    ))
                })?;
        }
        Ok(())
    }
}

impl Engine for PgEngine {
    fn family(&self) -> Family {
        Family::Postgres
    }

    fn admin(&self) -> Result<Box<dyn Admin>> {
        let conn = self
            .connect_admin()
            .map_err(|e| anyhow::Error::from(super::ServerLost(clean_error(&e))))?;
        let base = self.config(ADMIN_DB);
        Ok(Box::new(admin::PgAdmin::new(conn, base)))
    }

    fn connector<'a>(
        &'a self,
        schema: &str,
        workload: &'a PreparedWorkload,
    ) -> Box<dyn Connector + 'a> {
        Box::new(client::PgConnector {
            config: self.config(schema),
            workload,
        })
    }

    fn prepare(&self, schema: &str, workload: &Workload, quiet: bool) -> Result<PreparedWorkload> {
        self.ensure_database(schema)?;
        let mut conn = self.connect(schema)?;
        let (max_ids, created, scale) = match workload.kind {
            WorkloadKind::Query => {
                client::run_setup(&mut conn, &workload.setup)?;
                (vec![], vec![], None)
            }
            k if k.is_pgbench() => {
                let (scale, created) = tables::prepare_pgbench(&mut conn, workload.scale, quiet)?;
                (vec![], vec![created], Some(scale))
            }
            _ => {
                let (ids, created) = tables::prepare_sbtest(
                    &|| Ok(self.connect(schema)?),
                    schema,
                    workload.tables,
                    workload.table_size,
                    quiet,
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

    fn check_statements(
        &self,
        schema: &str,
        workload: &Workload,
        tables_ready: bool,
    ) -> Result<()> {
        if workload.kind != WorkloadKind::Query {
            return Ok(());
        }
        let mut conn = if tables_ready {
            self.connect(schema)?
        } else {
            self.connect_admin()?
        };
        client::check(&mut conn, &workload.queries, tables_ready)
    }

    fn locate(&self) -> (Option<u32>, Option<PathBuf>) {
        match &self.managed {
            Some(m) => (m.pid(), Some(m.datadir())),
            None => match (&self.spec, self.connect_admin()) {
                (TargetSpec::Postgres(u), Ok(mut conn)) => find_local_server(&mut conn, u),
                _ => (None, None),
            },
        }
    }

    fn restart_managed(&mut self, extra_opts: &[String]) -> Result<()> {
        match &mut self.managed {
            Some(m) => m.restart(extra_opts),
            None => Err(usage("only a managed target can be restarted by dbtax")),
        }
    }

    fn is_managed(&self) -> bool {
        self.managed.is_some()
    }

    fn client_target(&self) -> TargetSpec {
        match &self.managed {
            Some(m) => TargetSpec::Postgres(super::url::PgUrl {
                user: managed::SUPERUSER.into(),
                password: None,
                host: String::new(),
                port: m.port(),
                db: None,
                socket_dir: Some(m.socket_dir()),
            }),
            None => self.spec.clone(),
        }
    }
}

/// For a user's server reached over a socket or loopback: its postmaster's pid (from
/// postmaster.pid in its data directory, which must name the same port and be a `postgres`
/// process here) and the data directory. Needs the right to read both.
fn find_local_server(
    conn: &mut postgres::Client,
    u: &super::PgUrl,
) -> (Option<u32>, Option<PathBuf>) {
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
