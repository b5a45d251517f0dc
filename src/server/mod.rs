//! The server under test, behind one seam. The rest of dbtax holds a `Server` and talks to it
//! through small traits: an `Engine` (reach, prepare tables, restart, find the local
//! process, its catalog), an `Admin` connection ([`admin`]: settings, plugins, the run lock and
//! the journal's copy) and `Client` connections (one per worker, its workload's statements
//! prepared). Each engine lives in its own folder (`mysql/`, `postgres/`) and describes
//! itself in one row of the engine table ([`engines`]); nothing outside those matches on an
//! engine.

pub mod admin;
pub mod catalog;
pub mod engines;
pub mod local;
pub mod mysql;
pub mod postgres;
pub mod registry;
pub mod url;
pub mod value;

use crate::client::connection::{DbError, Kind, Session};
use crate::client::dial::Dialer;
use crate::client::mode::QueryMode;
pub use crate::error::ServerLost;
use crate::error::usage;
use crate::results::TargetInfo;
use crate::workload::{Client, PreparedWorkload, Workload, WorkloadKind};
pub use admin::{Admin, Held, Logins, Plugins, Settings, Support, SupportContext};
use anyhow::{Context, Result};
use catalog::Feature;
use engines::{CpuScope, EngineDef};
use std::path::PathBuf;
use std::sync::Arc;
pub use url::TargetSpec;

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
    /// Start the server bound to these CPUs (None: wherever the scheduler puts it).
    pub cpus: Option<Vec<usize>>,
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
    /// Where server and load run when they share this machine.
    pub cpus: crate::host::cpus::Choice,
}

/// A replay's statements left out for what they reach on the server (`replay_reach`).
pub struct Reached {
    /// The slice without them.
    pub slice: Arc<dbtax_logs::slice::Slice>,
    /// How many.
    pub left_out: u64,
    /// The code they would have reached, and why it is left alone.
    pub objects: Vec<String>,
}

impl Reached {
    /// In words, for the dry run and the run's progress.
    pub fn words(&self) -> String {
        format!(
            "left out {} that {} code on the server running with other rights than the \
             replay's login (its read-only login and session do not hold there): {}",
            crate::units::plural(self.left_out, "statement"),
            if self.left_out == 1 {
                "reaches"
            } else {
                "reach"
            },
            self.objects.join("; ")
        )
    }
}

/// Makes client connections, their workload's statements prepared; workers keep one to
/// reconnect. It owns what it needs (no borrow of the server), so a worker stuck on a frozen
/// server can be left behind while the run restores.
#[derive(Clone)]
pub struct Connector {
    dialer: Arc<dyn Dialer>,
    workload: Arc<PreparedWorkload>,
}

impl Connector {
    /// A new client.
    pub fn connect(&self) -> Result<Client, DbError> {
        let session = self.dialer.dial()?;
        Client::new(session, &self.workload).map_err(|e| match e.kind {
            Kind::Lost => e,
            _ => DbError {
                kind: Kind::Refused,
                ..e.during("preparing the workload's statements")
            },
        })
    }
}

/// One engine's way of reaching, preparing and restarting a server it has opened.
pub trait Engine: Send + Sync {
    /// Its row of the engine table.
    fn def(&self) -> &'static EngineDef;
    /// A feature of its catalog as this server has it (MariaDB and MySQL differ).
    fn feature(&self, name: &str) -> Option<Feature>;
    /// A new admin connection (no default database).
    fn admin(&self) -> Result<Box<dyn Admin>>;
    /// A client connection in `schema` (None: no default database, for checks before dbtax's
    /// schema exists).
    fn session(&self, schema: Option<&str>) -> Result<Box<dyn Session>, DbError>;
    /// What opens client sessions in `schema`, for the workers, as `login` when given,
    /// sending statements as `mode` says.
    fn dialer(&self, schema: &str, login: Option<&Login>, mode: QueryMode) -> Arc<dyn Dialer>;
    /// An admin connection as `login`, in `schema` (to ask what that login may do there).
    fn admin_as(&self, schema: &str, login: &Login) -> Result<Box<dyn Admin>>;
    /// Refuse a workload this engine cannot run (bad input, before anything changes).
    fn accepts(&self, _workload: &Workload) -> Result<()> {
        Ok(())
    }
    /// Refuse, before anything changes, a workload whose existing tables in `schema` this
    /// login may not use as the workload does (a usage error naming the GRANT).
    fn check_access(&self, _schema: &str, _workload: &Workload) -> Result<()> {
        Ok(())
    }
    /// Create the schema and the workload's tables when absent (reuse sysbench's), run
    /// setup SQL; progress goes to `say`. Bad input (a failing setup statement) is a usage
    /// error.
    fn prepare(
        &self,
        schema: &str,
        workload: &Workload,
        say: &mut dyn FnMut(&str),
    ) -> Result<PreparedWorkload>;
    /// The server's pid and datadir when it runs on this machine and can be found.
    fn locate(&self) -> (Option<u32>, Option<PathBuf>);
    /// How a probe on the server's host finds its process (from what the server says of
    /// itself), the datadir there, and the host name the server gives (None: it does not
    /// say). None when the server will not tell.
    fn probe_find(&self) -> Option<(crate::host::probe::Find, PathBuf, Option<String>)>;
    /// The server's process when dbtax started it (it may restart it).
    fn managed(&mut self) -> Option<&mut dyn local::Restart>;
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
    /// The server's pid on its host, when dbtax reads that host (it runs on this machine,
    /// or a probe runs on its own: `host`).
    pub server_pid: Option<u32>,
    /// The server's datadir on its host, when dbtax reads that host (log files are
    /// resolved against it).
    pub datadir: Option<PathBuf>,
    /// Where the server's CPU, its files and the other processes of its host are read:
    /// here, or through the probe on its host.
    pub host: crate::host::probe::Host,
    /// The server's pid when it runs on this machine's kernel under another host name (a
    /// container, a namespace) and dbtax does not read it: not another process of this
    /// machine's either.
    pub neighbour_pid: Option<u32>,
    /// What names this server however it is reached (`Admin::identity`).
    pub identity: String,
    /// The login a replay's clients use (its third lock: one that may only read), once the
    /// run has one; None: the target's own login.
    pub replay_login: Option<Login>,
    engine: Box<dyn Engine>,
}

/// How a replay's clients log in (`Server::replay_reader`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reader {
    /// The target's own login (no replay, or writes replayed as the user asked).
    Own,
    /// A temporary login dbtax creates, with read privileges only.
    Temporary,
    /// A login the user named, checked to only read.
    Named(Login),
}

/// A login for the load's clients other than the target's own (the replay's reader).
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    /// The user (PostgreSQL: the role).
    pub user: String,
    /// Its password (never printed).
    pub password: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login").field("user", &self.user).finish()
    }
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
    /// cannot be reached or the login is refused. Changes nothing on the server (a managed
    /// one starts with the options `features` need).
    pub fn open(config: &ServerConfig, features: &[&str]) -> Result<Server> {
        let def = config.spec.engine();
        let mut managed = config.managed.clone();
        managed
            .server_opts
            .extend(def.managed_start_opts(features.iter().copied()));
        let engines::Opened {
            engine,
            version: server_version,
            database: default_schema,
        } = (def.open)(&config.spec, &managed)?;
        let (server_pid, datadir) = engine.locate();
        let neighbour_pid = match server_pid {
            Some(_) => None,
            None => engine
                .probe_find()
                .and_then(|(f, _, _)| crate::host::probe::find_server(&f).ok())
                .map(|f| f.pid),
        };
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
            datadir,
            host: Default::default(),
            neighbour_pid,
            identity,
            replay_login: None,
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
        if spec.is_managed() {
            return Err(usage(
                "an agent cannot start a managed server: it is sent the coordinator's URL",
            ));
        }
        let engines::Opened {
            engine,
            version: server_version,
            ..
        } = (spec.engine().open)(spec, &ManagedConfig::default())?;
        Ok(Server {
            spec: spec.clone(),
            schema: schema.to_string(),
            server_version,
            server_pid: None,
            datadir: None,
            host: Default::default(),
            neighbour_pid: None,
            identity: String::new(),
            replay_login: None,
            engine,
        })
    }

    /// The engine's row of the table (its name, its catalog's names).
    pub fn engine(&self) -> &'static EngineDef {
        self.engine.def()
    }

    /// A feature of the catalog as this server has it; unknown names are usage errors that
    /// list the catalog.
    pub fn feature(&self, name: &str) -> Result<Feature> {
        self.engine
            .feature(name)
            .ok_or_else(|| catalog::unknown(name, self.engine().feature_names))
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

    /// Client sessions in dbtax's schema, as `login` when given (the load's way in, without
    /// a workload: the replay's locks are tested through it).
    pub fn client_dialer(&self, login: Option<&Login>) -> Arc<dyn Dialer> {
        self.engine.dialer(&self.schema, login, QueryMode::Prepared)
    }

    /// Client connections for a prepared workload, in dbtax's schema.
    pub fn connector(&self, workload: &PreparedWorkload) -> Connector {
        let mode = workload.workload.query_mode();
        Connector {
            dialer: self
                .engine
                .dialer(&self.schema, self.replay_login.as_ref(), mode),
            workload: Arc::new(workload.clone()),
        }
    }

    /// Create the workload's tables when absent, run its setup; progress goes to `say`. A
    /// replay's statements that reach code running with other rights are left out here
    /// (`replay_reach`).
    pub fn prepare(
        &self,
        workload: &Workload,
        say: &mut dyn FnMut(&str),
    ) -> Result<PreparedWorkload> {
        workload.validate()?;
        self.check_statements(workload)?;
        let mut prepared = self.engine.prepare(&self.schema, workload, say)?;
        self.check_queries(workload, true)?;
        if let Some(reached) = self.replay_reach(workload)? {
            say(&reached.words());
            prepared.workload.slice = dbtax_logs::slice::Loaded(Some(reached.slice));
        }
        Ok(prepared)
    }

    /// A replay's statements that name a view, function or policy of this server whose code
    /// runs with other rights than the replay's login and does more than read (the three
    /// locks do not hold there): the slice without them, and what they reach. None: not a
    /// replay, or no statement does.
    pub fn replay_reach(&self, workload: &Workload) -> Result<Option<Reached>> {
        let (Some(spec), Some(slice)) = (&workload.replay, &workload.slice.0) else {
            return Ok(None);
        };
        let dialect = if self.engine().name == "mysql" {
            dbtax_logs::read_only::lex::Dialect::Mysql
        } else {
            dbtax_logs::read_only::lex::Dialect::Postgres
        };
        let code = self.admin()?.server_code(&self.schema)?;
        let objects = dbtax_logs::read_only::reach::unsafe_objects(&code, dialect, &spec.functions);
        let Some(left) = slice.leave_out(&objects) else {
            return Ok(None);
        };
        Ok(Some(Reached {
            left_out: slice.stats.statements - left.stats.statements,
            slice: Arc::new(left),
            objects: objects.into_values().collect(),
        }))
    }

    /// Check the workload before anything is created (preflight): a schema of dbtax's own,
    /// a workload the engine runs, statements the server takes.
    pub fn check_statements(&self, workload: &Workload) -> Result<()> {
        self.engine().check_schema(&self.schema)?;
        self.engine.accepts(workload)?;
        self.check_replay(workload)?;
        self.engine.check_access(&self.schema, workload)?;
        self.check_queries(workload, false)
    }

    /// A replay's log is this engine's, and its writes are replayed only where they may be.
    fn check_replay(&self, workload: &Workload) -> Result<()> {
        let (Some(spec), Some(slice)) = (&workload.replay, &workload.slice.0) else {
            return Ok(());
        };
        let format = dbtax_logs::replay_spec::LogFormat::parse(&slice.stats.format)?;
        let engine = self.engine();
        if format.family() != engine.name {
            return Err(crate::error::usage(format!(
                "{} is a {} log ({}), and the target is {}: replay a log on the kind of \
                 server that wrote it. Nothing was changed",
                spec.log.display(),
                format.name(),
                registry::named(format.family()).map_or("", |e| e.title),
                engine.title
            )));
        }
        if spec.writes && !self.is_managed() && !spec.i_understand_writes {
            return Err(crate::error::usage(
                "--replay-writes changes the data every trial reads (each trial replays the \
                 same statements again): it runs on a managed target (--target managed), or \
                 on this server with --i-understand-writes. Nothing was changed",
            ));
        }
        self.replay_reader(workload).map(|_| ())
    }

    /// How a replay's clients log in (its third lock), decided before anything changes: a
    /// login the user named (checked to only read), a temporary one dbtax will create (on
    /// a managed target unless told otherwise), or, when writes are replayed, the target's
    /// own. A user's server with neither is refused.
    pub fn replay_reader(&self, workload: &Workload) -> Result<Reader> {
        let Some(spec) = &workload.replay else {
            return Ok(Reader::Own);
        };
        let temporary = dbtax_logs::replay_spec::TEMPORARY;
        match spec.user.as_deref() {
            Some(_) if spec.writes => Err(usage(
                "--replay-user goes with a read-only replay: --replay-writes replays as the \
                 target's own login, in sessions that may write. Nothing was changed",
            )),
            Some(u) if u == temporary => Ok(Reader::Temporary),
            Some(user) => {
                let login = Login {
                    user: user.to_string(),
                    password: std::env::var("DBTAX_REPLAY_PASSWORD").unwrap_or_default(),
                };
                let mut admin = self.engine.admin_as(&self.schema, &login)?;
                if let Err(more) = admin.only_reads()? {
                    return Err(usage(format!(
                        "--replay-user {user} may do more than read on {} ({more}): the \
                         replay's clients log in as a user that may only read (SELECT), so \
                         that no replayed statement can change the server. Name such a user, \
                         or let dbtax create a temporary one with --replay-user {temporary}. \
                         Nothing was changed",
                        self.label()
                    )));
                }
                Ok(Reader::Named(login))
            }
            None if spec.writes => Ok(Reader::Own),
            None if self.is_managed() => Ok(Reader::Temporary),
            None => Err(usage(format!(
                "a replay on a server dbtax did not start logs its clients in as a user that \
                 may only read: name one with --replay-user USER (its password in \
                 $DBTAX_REPLAY_PASSWORD), or let dbtax create a temporary one with \
                 --replay-user {temporary} (journaled, dropped at the end and by `dbtax \
                 restore`). Nothing was changed"
            ))),
        }
    }

    /// The query workload's statements, prepared and not run: before the tables exist (no
    /// schema yet: only syntax counts), or after.
    fn check_queries(&self, workload: &Workload, tables_ready: bool) -> Result<()> {
        if workload.kind != WorkloadKind::Query {
            return Ok(());
        }
        let schema = tables_ready.then_some(self.schema.as_str());
        let mut session = self.engine.session(schema).map_err(DbError::into_anyhow)?;
        crate::workload::query::check(session.as_mut(), &workload.queries, tables_ready)
    }

    /// Server CPU time so far (µs) when dbtax reads the server's host.
    pub fn server_cpu_us(&self) -> Option<u64> {
        self.host
            .read(&self.cpu_ask())
            .ok()?
            .server_cpu
            .map(|c| c.ticks_us)
    }

    /// A reading of the server's CPU: per thread in ns where the kernel tells it, over the
    /// process or the process tree as its engine says (PostgreSQL: the postmaster and every
    /// process it started, with the children it has reaped).
    pub fn cpu_ask(&self) -> crate::host::probe::Ask {
        crate::host::probe::Ask {
            pid: self.server_pid,
            tree: self.engine().cpu == CpuScope::ProcessTree,
            ..Default::default()
        }
    }

    /// Read the server's host through a probe there (`--server-host`): find the server's
    /// process by what the server says of itself. A usage error when it cannot be found or
    /// the host is not the server's.
    pub fn attach_host(&mut self, host: crate::host::probe::Host) -> Result<()> {
        let label = host.0.label();
        let Some((find, datadir, hostname)) = self.engine.probe_find() else {
            return Err(usage(format!(
                "the server does not say where its pid file is, so the probe on {label} \
                 cannot find its process"
            )));
        };
        let found = host.0.find_server(&find).map_err(|e| {
            usage(format!(
                "the probe on {label} did not find the server's process: {e}. Is {label} the \
                 database's host?"
            ))
        })?;
        if let Some(h) = hostname.filter(|h| *h != found.hostname) {
            return Err(usage(format!(
                "the server says its host is '{h}', and {label} is '{}': --server-host must \
                 name the database's host",
                found.hostname
            )));
        }
        self.server_pid = Some(found.pid);
        self.datadir = Some(datadir);
        self.host = host;
        Ok(())
    }

    /// Find the server's process again (after a restart).
    fn relocate(&mut self) -> Result<()> {
        if self.host.0.here() {
            (self.server_pid, self.datadir) = self.engine.locate();
            return Ok(());
        }
        self.attach_host(self.host.clone())
    }

    /// A server file path (as in @@general_log_file) resolved against its datadir, when
    /// dbtax reads the server's host: a path on that host.
    pub fn local_file(&self, server_path: &str) -> Option<PathBuf> {
        let datadir = self.datadir.as_ref()?;
        let p = PathBuf::from(server_path);
        Some(if p.is_absolute() { p } else { datadir.join(p) })
    }

    /// Restart a managed server with extra options (restart-only settings).
    pub fn restart_managed(&mut self, extra_opts: &[String]) -> Result<()> {
        match self.engine.managed() {
            Some(process) => process.restart(extra_opts)?,
            None => return Err(usage("only a managed target can be restarted by dbtax")),
        }
        self.relocate()
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
        self.relocate()
    }

    /// What results.json says of the target.
    pub fn info(&self) -> TargetInfo {
        TargetInfo {
            kind: self.spec.kind(),
            server_version: self.server_version.clone(),
            url: self.label(),
            variables: Default::default(),
        }
    }
}
