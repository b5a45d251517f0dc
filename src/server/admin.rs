//! An admin connection, by concern: `Settings` (read, change and put back global settings,
//! and what a feature needs), `Plugins` (load and remove a server plugin), `Held` (what a run
//! holds on a server while it works: the run lock and the journal's copy). `Admin` is all
//! three; each engine implements them over one connection. Every statement that changes
//! something is returned as text, for the log and the dry run. Driver errors are the engine's
//! to map: a lost connection is `ServerLost`, anything else a plain error.

use super::catalog::{Feature, Plugin};
use anyhow::Result;
use dbtax_logs::read_only::reach::ServerCode;
use std::collections::BTreeMap;

/// One reading of production's traffic (`Settings::traffic`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Traffic {
    /// The work done so far by every session, cumulative: statements on the MySQL family
    /// (`Questions`), transactions on PostgreSQL (`pg_stat_database`).
    pub work: f64,
    /// Sessions running a statement now, this one left out (`Threads_running`; active
    /// client backends).
    pub running: f64,
    /// Failures so far, cumulative, where the server counts them cheaply: statements that
    /// ended in an error (performance_schema's summary by statement kind), transactions
    /// rolled back on PostgreSQL (an error ends its transaction in one). None: not counted.
    pub errors: Option<f64>,
    /// Statements this reading ran itself (counted in `work` on the MySQL family).
    pub ran: u32,
}

/// One statement shape as the server sums it (a digest of performance_schema, a query id
/// of pg_stat_statements), cumulative.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// What tells it from the others (schema or database, and the digest or query id).
    pub key: String,
    /// Times it ran.
    pub calls: f64,
    /// Time spent running it in all, µs.
    pub time_us: f64,
}

/// Where a server counts no statements of all its clients (PostgreSQL has no `Questions`):
/// how many sessions of other clients (not dbtax's application name) ran a statement since
/// this admin connection's previous read of the counters, or are running one now.
pub const OTHER_SESSIONS: &str = "dbtax_other_sessions";

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

/// Global settings: read, change, put back, and whether a feature can run.
pub trait Settings: Send {
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
    /// The text of the file where the server persists changed settings
    /// (postgresql.auto.conf), when it has one and this login may read it.
    fn persisted_text(&mut self) -> Result<Option<String>> {
        Ok(None)
    }
    /// Put that file's own bytes back (its comments, its quoting) once the settings in it
    /// are the ones `original` holds; Some(what was done, or why it could not be).
    fn restore_persisted_text(&mut self, _original: &str) -> Result<Option<String>> {
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
    /// Whether the server would take this value for the variable (its type, its list of
    /// values, its range), asked without changing anything. Err: why not.
    fn check_value(&mut self, name: &str, value: &str) -> Result<(), String>;
    /// The connections the server allows and those in use now (None: it does not say).
    fn connection_room(&mut self) -> Result<Option<(u64, u64)>>;
    /// Keep this session's own statements out of the server's statement logs, as far as
    /// its login may (a capture watches the server through such a session: its statements
    /// are not the application's). Never fails: a login that may not still works.
    fn quiet(&mut self) {}
    /// Run a statement whose only use is to be found in the server's statement log (its
    /// text holds `mark`), where the log is written a moment after a statement ran
    /// (PostgreSQL's collector): a capture begins past it. Whether one was run.
    fn mark(&mut self, _mark: &str) -> Result<bool> {
        Ok(false)
    }
    /// Whether the server still answers this connection: Err (`ServerLost`) when not.
    fn ping(&mut self) -> Result<()> {
        self.global_vars(&["version", "server_version"]).map(|_| ())
    }
    /// Status counters worth reporting per query (cumulative values), and where the engine
    /// has no statement counter, `OTHER_SESSIONS` (not a counter).
    fn status_counters(&mut self) -> Result<BTreeMap<String, f64>>;
    /// What a live run reads of production's traffic, cheaply (one short statement, no
    /// lock a client waits on): the work every session has done so far, and the sessions
    /// running a statement now (this one left out).
    fn traffic(&mut self) -> Result<Traffic>;
    /// Whether the server sums its statements per shape with their time, and where
    /// (`Support::Yes`: the table's name), or why not, in words. Changes nothing.
    fn shapes_offered(&mut self) -> Result<Support> {
        Ok(Support::No(
            "this server keeps no statement times per shape".into(),
        ))
    }
    /// Every statement shape the server sums, with its calls and time so far (see
    /// `shapes_offered`); dbtax's own polls left out where the server says which they are.
    fn shapes(&mut self) -> Result<Vec<Shape>> {
        Ok(vec![])
    }
    /// The server's thread (MySQL family, where performance_schema says) or process
    /// (PostgreSQL's backend) that runs this session: what watching costs the server is
    /// read from it. None: the server does not say.
    fn own_task(&mut self) -> Result<Option<u32>> {
        Ok(None)
    }
    /// Can the server run this feature? Changes nothing.
    fn support(&mut self, feature: &Feature, ctx: SupportContext) -> Result<Support>;
}

/// Server plugins. The defaults are an engine without plugins (PostgreSQL loads libraries
/// through settings instead).
pub trait Plugins: Send {
    /// Whether a plugin is loaded.
    fn plugin_active(&mut self, plugin: &Plugin) -> Result<bool> {
        Ok(self.plugin_status(plugin)?.is_some())
    }
    /// A plugin's status when the server has it in any state (loaded, disabled,
    /// registered): then it is the user's, and dbtax neither installs nor removes it.
    fn plugin_status(&mut self, _plugin: &Plugin) -> Result<Option<String>> {
        Ok(None)
    }
    /// The statement that installs a plugin.
    fn install_sql(&self, plugin: &Plugin) -> String {
        format!("-- no plugin {} on this server", plugin.soname)
    }
    /// The statement that removes a plugin dbtax installed.
    fn uninstall_sql(&self, soname: &str) -> String {
        format!("-- no plugin {soname} on this server")
    }
    /// Install a plugin; returns the statement run.
    fn install_plugin(&mut self, plugin: &Plugin) -> Result<String> {
        anyhow::bail!("this server has no plugins to install ({})", plugin.soname)
    }
    /// Remove a plugin; Ok(None) when it was not installed.
    fn uninstall_plugin(&mut self, _soname: &str) -> Result<Option<String>> {
        Ok(None)
    }
}

/// What a run holds on a server: its identity, the run lock, the journal's server copy.
pub trait Held: Send {
    /// What names this server however it is reached (socket or TCP, any host name, any
    /// client machine): its own UUID where it has one, else the id dbtax stamped on it
    /// (`stamp_identity`), else (never stamped: no journal of dbtax's can exist for it) host
    /// name, port and datadir. Reads only.
    fn identity(&mut self) -> Result<String>;
    /// Make sure the server has an identity no other server shares: where it has no UUID of
    /// its own (MariaDB has no server_uuid; two servers with one host name, port and datadir
    /// path in two mount namespaces look alike), a random id kept in a `dbtax_identity` table
    /// of dbtax's `schema` (which exists), made the first time a run changes anything.
    /// Returns the identity from now on.
    fn stamp_identity(&mut self, schema: &str) -> Result<String>;
    /// What a copy of this server does not share with it (a backup, a copied datadir or a
    /// replica carries the stamp): MySQL family host name, port, socket, datadir and
    /// server_id; PostgreSQL its system identifier, data directory and port (empty where
    /// this login may not read one). A journal is applied only where they all match.
    fn facts(&mut self) -> Result<BTreeMap<String, String>>;
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

/// The replay's logins (its third lock): a login that may only read.
pub trait Logins {
    /// How the server names a login `name` for dbtax's clients (MySQL family: the account
    /// for the host this connection comes from): what the journal keeps to drop it.
    fn reader_spec(&mut self, name: &str) -> Result<String>;
    /// Create the login `spec` with `password`, allowed to read and nothing else; returns
    /// the statements run (the password elided).
    fn create_reader(&mut self, spec: &str, password: &str) -> Result<Vec<String>>;
    /// Drop a login `create_reader` made (gone already is fine); returns the statement.
    fn drop_reader(&mut self, spec: &str) -> Result<String>;
    /// Whether this connection's own login may only read: Err(words) names what else it
    /// may do.
    fn only_reads(&mut self) -> Result<Result<(), String>>;
    /// The code that statements in `schema` can reach and that runs with other rights than
    /// the replay's login (views, definer functions, row-level policies): what the replay's
    /// locks do not cover, read before it runs.
    fn server_code(&mut self, _schema: &str) -> Result<ServerCode> {
        Ok(ServerCode::default())
    }
}

/// An admin connection: settings, plugins, logins and what a run holds, over one connection.
pub trait Admin: Settings + Plugins + Held + Logins {}

impl<T: Settings + Plugins + Held + Logins> Admin for T {}
