//! The MySQL family's admin connection: SET GLOBAL, information_schema, SHOW GLOBAL STATUS,
//! INSTALL SONAME, and the support checks that read the server without changing it; the run
//! lock (GET_LOCK) and the journal's copy in dbtax's schema. Every driver error leaves here
//! through `db_error` or `failed`: lost connections as `ServerLost`; the temporary logins in
//! `logins`.

mod logins;

use crate::server::catalog::{Feature, Plugin};
use crate::server::mysql::{
    clean_error, db_error, global_status, global_vars, grants_text, set_global_sql,
};
use crate::server::value::{self, Domain};
use crate::server::{Held, Plugins, ServerLost, Settings, Support, SupportContext};
use anyhow::Result;
use mysql::prelude::Queryable;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// An admin connection to a MySQL-family server.
pub struct MysqlAdmin {
    conn: mysql::Conn,
    /// Whether performance_schema is on (asked once, by `traffic`).
    perf_schema: Option<bool>,
}

impl MysqlAdmin {
    /// Wrap a connection with no default database.
    pub fn new(conn: mysql::Conn) -> Self {
        MysqlAdmin {
            conn,
            perf_schema: None,
        }
    }

    /// Whether performance_schema is on (a server built without it has no such variable).
    fn perf_schema(&mut self) -> bool {
        if self.perf_schema.is_none() {
            let on: Option<i64> = self
                .conn
                .query_first("SELECT @@global.performance_schema")
                .ok()
                .flatten();
            self.perf_schema = Some(on == Some(1));
        }
        self.perf_schema == Some(true)
    }

    /// The connection itself (the replay's logins, `logins`).
    pub(super) fn conn(&mut self) -> &mut mysql::Conn {
        &mut self.conn
    }

    fn run(&mut self, sql: String) -> Result<String> {
        self.conn.query_drop(&sql).map_err(|e| failed(&sql, e))?;
        Ok(sql)
    }

    /// Can the plugin be installed (its library is in the plugin dir)?
    fn plugin_installable(&mut self, p: &Plugin, local: bool) -> bool {
        let in_all: Option<String> = self
            .conn
            .exec_first(
                "SELECT PLUGIN_NAME FROM information_schema.ALL_PLUGINS WHERE PLUGIN_NAME = ?",
                (p.name,),
            )
            .ok()
            .flatten();
        if in_all.is_some() {
            return true;
        }
        // MySQL has no ALL_PLUGINS: look for the library when the server is local.
        let dir: Option<String> = self.conn.query_first("SELECT @@plugin_dir").ok().flatten();
        local && dir.is_some_and(|d| PathBuf::from(d).join(format!("{}.so", p.soname)).exists())
    }
}

/// A statement's failure: `ServerLost` when the connection is gone, else the server's words.
fn failed(sql: &str, e: mysql::Error) -> anyhow::Error {
    match e {
        mysql::Error::MySqlError(_) => anyhow::anyhow!("{sql}: {}", clean_error(&e)),
        other => ServerLost(clean_error(&other)).into(),
    }
}

/// A journal table this login cannot read may hold another run's pending restore: working on
/// the server as if it were clean would measure (and journal) the settings that run left.
fn unreadable_journal(table: &str, e: mysql::Error) -> anyhow::Error {
    match e {
        mysql::Error::MySqlError(_) => crate::error::usage(format!(
            "the server keeps a dbtax journal in {table} that this user cannot read ({}): an \
             earlier run may have left settings to restore. Ask its owner to run `dbtax \
             restore`, or grant this user SELECT on it. Nothing was changed",
            clean_error(&e)
        )),
        other => db_error(other),
    }
}

/// May this login install plugins (INSERT on mysql.plugin)?
fn may_install_plugins(grants: &str) -> bool {
    grants.lines().any(|g| {
        (g.contains(" ON *.* ")
            || g.contains(" ON `MYSQL`.* ")
            || g.contains(" ON `MYSQL`.`PLUGIN` "))
            && (g.contains("ALL PRIVILEGES") || g.contains("INSERT"))
    })
}

impl Settings for MysqlAdmin {
    fn global_vars(&mut self, names: &[&str]) -> Result<BTreeMap<String, String>> {
        global_vars(&mut self.conn, names)
    }

    fn set_sql(&self, name: &str, value: &str) -> String {
        set_global_sql(name, value)
    }

    fn set_global(&mut self, name: &str, value: &str) -> Result<String> {
        self.run(set_global_sql(name, value))
    }

    fn restore_global(
        &mut self,
        name: &str,
        value: &str,
        _persisted: Option<Option<&str>>,
    ) -> Result<Option<String>> {
        let sql = set_global_sql(name, value);
        match self.conn.query_drop(&sql) {
            Ok(()) => Ok(Some(sql)),
            // 1193: unknown system variable (its plugin is already gone).
            Err(mysql::Error::MySqlError(e)) if e.code == 1193 => Ok(None),
            Err(e) => Err(failed(&sql, e)),
        }
    }

    fn restore_sql(&self, name: &str, value: &str, _persisted: Option<Option<&str>>) -> String {
        set_global_sql(name, value)
    }

    /// `SET GLOBAL v = <the value it has>`: refused without SUPER / SYSTEM_VARIABLES_ADMIN,
    /// a no-op with it.
    fn probe_set_privilege(&mut self, name: &str, current: &str) -> Result<(), String> {
        self.conn
            .query_drop(set_global_sql(name, current))
            .map_err(|e| format!("this user may not change {name}: {}", clean_error(&e)))
    }

    /// MariaDB describes every variable in information_schema.SYSTEM_VARIABLES; MySQL has no
    /// such table, and its values go unchecked here.
    fn check_value(&mut self, name: &str, value: &str) -> Result<(), String> {
        type Row = (String, Option<String>, Option<String>, Option<String>);
        let row: Option<Row> = self
            .conn
            .exec_first(
                "SELECT VARIABLE_TYPE, ENUM_VALUE_LIST, NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE \
                 FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = ?",
                (name.to_ascii_uppercase(),),
            )
            .ok()
            .flatten();
        let Some((kind, list, min, max)) = row else {
            return Ok(());
        };
        let words = || {
            list.as_deref()
                .unwrap_or("")
                .split(',')
                .map(str::to_string)
                .collect()
        };
        let number = |s: &Option<String>| s.as_deref().and_then(|x| x.parse::<f64>().ok());
        let domain = match kind.as_str() {
            "ENUM" => Domain::Enum(words()),
            "SET" => Domain::Set(words()),
            "BOOLEAN" => Domain::Bool,
            k if k.contains("INT") || k == "DOUBLE" => Domain::Number {
                min: number(&min),
                max: number(&max),
                units: false,
            },
            _ => Domain::Any,
        };
        value::check(&domain, value)
    }

    fn connection_room(&mut self) -> Result<Option<(u64, u64)>> {
        let max = self.global_vars(&["max_connections"])?;
        let used: Option<(String, String)> = self
            .conn
            .query_first("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
            .map_err(db_error)?;
        let max = max.get("max_connections").and_then(|v| v.parse().ok());
        let used = used.and_then(|(_, v)| v.parse().ok());
        Ok(max.zip(used))
    }

    fn status_counters(&mut self) -> Result<BTreeMap<String, f64>> {
        global_status(&mut self.conn)
    }

    fn traffic(&mut self) -> Result<crate::server::admin::Traffic> {
        let rows: Vec<(String, String)> = self
            .conn
            .query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Threads_running')")
            .map_err(db_error)?;
        let get = |name: &str| {
            rows.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .and_then(|(_, v)| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        // Statements that ended in an error, summed over every kind of statement: a table
        // of a few hundred rows, kept only with performance_schema on.
        let errors = if self.perf_schema() {
            let sum: Option<Option<f64>> = self
                .conn
                .query_first(
                    "SELECT CAST(SUM(SUM_ERRORS) AS DOUBLE) FROM \
                     performance_schema.events_statements_summary_global_by_event_name",
                )
                .map_err(db_error)?;
            Some(sum.flatten().unwrap_or(0.0))
        } else {
            None
        };
        Ok(crate::server::admin::Traffic {
            work: get("Questions"),
            // This session's SHOW is one of them.
            running: (get("Threads_running") - 1.0).max(0.0),
            errors,
            ran: if errors.is_some() { 2 } else { 1 },
        })
    }

    fn shapes_offered(&mut self) -> Result<Support> {
        if !self.perf_schema() {
            return Ok(Support::No(
                "performance_schema is off (it is read only at startup: \
                 performance_schema = ON in the server's configuration, then a restart)"
                    .into(),
            ));
        }
        let digests: Option<String> = self
            .conn
            .query_first(
                "SELECT ENABLED FROM performance_schema.setup_consumers \
                 WHERE NAME = 'statements_digest'",
            )
            .map_err(db_error)?;
        Ok(match digests.as_deref() {
            Some(e) if e.eq_ignore_ascii_case("YES") => {
                Support::Yes("performance_schema.events_statements_summary_by_digest".into())
            }
            _ => Support::No(
                "performance_schema's statements_digest consumer is off (UPDATE \
                 performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME = \
                 'statements_digest')"
                    .into(),
            ),
        })
    }

    fn shapes(&mut self) -> Result<Vec<crate::server::admin::Shape>> {
        // The timer counts picoseconds. dbtax's own polls (their text names
        // performance_schema, or is the SHOW of the traffic) are not production's.
        let rows: Vec<(String, f64, f64)> = self
            .conn
            .query(
                "SELECT CONCAT(IFNULL(SCHEMA_NAME, ''), '/', DIGEST), CAST(COUNT_STAR AS DOUBLE), \
                 CAST(SUM_TIMER_WAIT AS DOUBLE) / 1000000 \
                 FROM performance_schema.events_statements_summary_by_digest \
                 WHERE DIGEST IS NOT NULL \
                 AND LOCATE('performance_schema', IFNULL(DIGEST_TEXT, '')) = 0 \
                 AND LOCATE('SHOW GLOBAL STATUS', IFNULL(DIGEST_TEXT, '')) = 0",
            )
            .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(key, calls, time_us)| crate::server::admin::Shape {
                key,
                calls,
                time_us,
            })
            .collect())
    }

    fn own_task(&mut self) -> Result<Option<u32>> {
        if !self.perf_schema() {
            return Ok(None);
        }
        let id: Option<Option<u64>> = self
            .conn
            .query_first(
                "SELECT THREAD_OS_ID FROM performance_schema.threads \
                 WHERE PROCESSLIST_ID = CONNECTION_ID()",
            )
            .map_err(db_error)?;
        Ok(id.flatten().and_then(|v| u32::try_from(v).ok()))
    }

    fn relevant_names(&self) -> &'static [&'static str] {
        &[
            "version",
            "version_comment",
            "innodb_buffer_pool_size",
            "innodb_flush_log_at_trx_commit",
            "innodb_flush_method",
            "sync_binlog",
            "log_bin",
            "log_output",
            "max_connections",
            "thread_handling",
        ]
    }

    fn support(&mut self, f: &Feature, ctx: SupportContext) -> Result<Support> {
        let mut notes = vec![];
        if !f.restart_opts.is_empty() {
            let opts = f.restart_opts.join(" --");
            if !ctx.can_restart {
                return Ok(Support::No(format!(
                    "switching it takes a server restart (--{opts}), which dbtax does only on a \
                     managed target, or with --restart-cmd"
                )));
            }
            notes.push(format!("restarts the server with --{opts} for its trials"));
        }
        if let Some(p) = &f.plugin
            && let Some(status) = self.plugin_status(p)?
            && !status.eq_ignore_ascii_case("ACTIVE")
        {
            return Ok(Support::No(format!(
                "the {} plugin is installed on this server but {status}: it is yours, and \
                 dbtax leaves it as it is (it would have to load or remove it). Enable it \
                 (or uninstall it yourself) first",
                p.soname
            )));
        }
        if let Some(p) = &f.plugin
            && !self.plugin_active(p)?
        {
            if !self.plugin_installable(p, ctx.local) {
                return Ok(Support::No(format!(
                    "the {} plugin ({}.so) is not available on this server",
                    p.name.to_lowercase(),
                    p.soname
                )));
            }
            if !may_install_plugins(&grants_text(&mut self.conn)?) {
                return Ok(Support::No(format!(
                    "installing the {} plugin needs INSERT on mysql.plugin, which this user lacks",
                    p.soname
                )));
            }
            notes.push(if f.plugin_switched {
                format!(
                    "loads the {} plugin only in its variants (the baseline runs without it)",
                    p.soname
                )
            } else {
                format!("installs the {} plugin, removes it after", p.soname)
            });
        }
        if let Some(v) = f.requires_on {
            let vals = self.global_vars(&[v])?;
            let on = vals
                .get(v)
                .is_some_and(|x| x.eq_ignore_ascii_case("ON") || x == "1");
            if !on {
                if ctx.managed {
                    notes.push(format!(
                        "starts the managed server with {}",
                        f.managed_server_opts.join(" ")
                    ));
                } else {
                    return Ok(Support::No(format!(
                        "needs {v}=ON, which takes a server restart: enable it in the server's \
                         configuration, or use a managed target"
                    )));
                }
            }
        }
        let names: Vec<&str> = f.on.iter().chain(f.off).map(|(k, _)| *k).collect();
        let plugin_loaded = match &f.plugin {
            Some(p) => self.plugin_active(p)?,
            None => true,
        };
        let present = self.global_vars(&names)?;
        for n in &names {
            match present.get(*n) {
                Some(v) => {
                    if let Err(why) = self.probe_set_privilege(n, v) {
                        return Ok(Support::No(format!(
                            "{why} (needs SUPER or SYSTEM_VARIABLES_ADMIN)"
                        )));
                    }
                }
                None if !plugin_loaded => {}
                None => return Ok(Support::No(format!("the server has no variable {n}"))),
            }
        }
        Ok(Support::Yes(notes.join("; ")))
    }
}

impl Plugins for MysqlAdmin {
    fn plugin_active(&mut self, p: &Plugin) -> Result<bool> {
        Ok(self
            .plugin_status(p)?
            .is_some_and(|s| s.eq_ignore_ascii_case("ACTIVE")))
    }

    /// Its status in information_schema.PLUGINS (ACTIVE, DISABLED, INACTIVE...), or a row in
    /// mysql.plugin for one registered but not loaded: either way it is the user's.
    fn plugin_status(&mut self, p: &Plugin) -> Result<Option<String>> {
        let status: Option<String> = self
            .conn
            .exec_first(
                "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = ?",
                (p.name,),
            )
            .map_err(db_error)?;
        if status.is_some() {
            return Ok(status);
        }
        let registered: Option<String> = self
            .conn
            .exec_first(
                "SELECT dl FROM mysql.plugin WHERE UPPER(name) = ?",
                (p.name,),
            )
            .unwrap_or(None);
        Ok(registered.map(|_| "REGISTERED (in mysql.plugin, not loaded)".to_string()))
    }

    fn install_sql(&self, p: &Plugin) -> String {
        format!("INSTALL SONAME '{}'", p.soname)
    }

    fn uninstall_sql(&self, soname: &str) -> String {
        format!("UNINSTALL SONAME '{soname}'")
    }

    fn install_plugin(&mut self, p: &Plugin) -> Result<String> {
        let sql = self.install_sql(p);
        self.run(sql)
    }

    fn uninstall_plugin(&mut self, soname: &str) -> Result<Option<String>> {
        let sql = self.uninstall_sql(soname);
        match self.conn.query_drop(&sql) {
            Ok(()) => Ok(Some(sql)),
            // 1305: does not exist (never installed, or already removed).
            Err(mysql::Error::MySqlError(e)) if e.code == 1305 => Ok(None),
            Err(e) => Err(failed(&sql, e)),
        }
    }
}

impl Held for MysqlAdmin {
    fn identity(&mut self) -> Result<String> {
        self.identity_of()
    }

    fn stamp_identity(&mut self, schema: &str) -> Result<String> {
        self.stamp(schema)
    }

    fn facts(&mut self) -> Result<BTreeMap<String, String>> {
        global_vars(
            &mut self.conn,
            &["hostname", "port", "socket", "datadir", "server_id"],
        )
    }

    fn try_run_lock(&mut self) -> Result<bool> {
        let got: Option<Option<i64>> = self
            .conn
            .exec_first("SELECT GET_LOCK(?, 0)", (RUN_LOCK,))
            .map_err(db_error)?;
        Ok(got.flatten() == Some(1))
    }

    fn run_lock_holder(&mut self) -> Result<Option<String>> {
        let id: Option<Option<u64>> = self
            .conn
            .exec_first("SELECT IS_USED_LOCK(?)", (RUN_LOCK,))
            .map_err(db_error)?;
        let Some(id) = id.flatten() else {
            return Ok(None);
        };
        let row: Option<(Option<String>, Option<String>, Option<u64>)> = self
            .conn
            .exec_first(
                "SELECT USER, HOST, TIME FROM information_schema.PROCESSLIST WHERE ID = ?",
                (id,),
            )
            .map_err(db_error)?;
        // PROCESSLIST's TIME is the time in the connection's current state, not its age.
        Ok(Some(match row {
            Some((user, host, secs)) => format!(
                "connection {id} of {}@{}, in its current state for {} s",
                user.unwrap_or_default(),
                host.unwrap_or_default(),
                secs.unwrap_or(0)
            ),
            None => format!("connection {id}"),
        }))
    }

    fn save_server_journal(&mut self, schema: &str, key: &str, journal: &str) -> Result<()> {
        let table = format!(
            "{}.{JOURNAL_TABLE}",
            crate::server::mysql::quote_ident(schema)
        );
        self.run(format!(
            "CREATE TABLE IF NOT EXISTS {table} (server VARCHAR(255) NOT NULL PRIMARY KEY, \
             journal LONGTEXT NOT NULL, saved_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)"
        ))?;
        self.conn
            .exec_drop(
                format!("REPLACE INTO {table} (server, journal) VALUES (?, ?)"),
                (key, journal),
            )
            .map_err(|e| db_error(e).context("saving the journal on the server"))
    }

    fn load_server_journals(&mut self, key: &str) -> Result<Vec<(String, String)>> {
        let schemas: Vec<String> = self
            .conn
            .exec(
                "SELECT TABLE_SCHEMA FROM information_schema.TABLES WHERE TABLE_NAME = ?",
                (JOURNAL_TABLE,),
            )
            .map_err(db_error)?;
        let mut out = vec![];
        for schema in schemas {
            let table = format!(
                "{}.{JOURNAL_TABLE}",
                crate::server::mysql::quote_ident(&schema)
            );
            let rows: Vec<String> = self
                .conn
                .exec(
                    format!("SELECT journal FROM {table} WHERE server = ?"),
                    (key,),
                )
                .map_err(|e| unreadable_journal(&format!("{schema}.{JOURNAL_TABLE}"), e))?;
            out.extend(rows.into_iter().map(|j| (schema.clone(), j)));
        }
        Ok(out)
    }

    fn delete_server_journal(&mut self, schema: &str, key: &str) -> Result<()> {
        let table = format!(
            "{}.{JOURNAL_TABLE}",
            crate::server::mysql::quote_ident(schema)
        );
        self.conn
            .exec_drop(format!("DELETE FROM {table} WHERE server = ?"), (key,))
            .map_err(|e| db_error(e).context("removing the journal on the server"))
    }
}

/// The server-wide name of dbtax's run lock (GET_LOCK names are per server, not per schema).
const RUN_LOCK: &str = "dbtax.run";
/// The table that keeps the journal on the server, in dbtax's schema.
const JOURNAL_TABLE: &str = "dbtax_journal";

/// The table that keeps the identity dbtax stamped on a server without a UUID.
const IDENTITY_TABLE: &str = "dbtax_identity";

impl MysqlAdmin {
    /// The server's UUID (MySQL), or the id dbtax stamped on it (any schema), if any.
    fn own_identity(&mut self) -> Result<Option<String>> {
        let v = global_vars(&mut self.conn, &["server_uuid"])?;
        if let Some(uuid) = v.get("server_uuid").filter(|u| !u.is_empty()) {
            return Ok(Some(format!("mysql-{uuid}")));
        }
        let schemas: Vec<String> = self
            .conn
            .exec(
                "SELECT TABLE_SCHEMA FROM information_schema.TABLES WHERE TABLE_NAME = ? \
                 ORDER BY CREATE_TIME, TABLE_SCHEMA",
                (IDENTITY_TABLE,),
            )
            .map_err(db_error)?;
        for schema in schemas {
            let table = format!(
                "{}.{IDENTITY_TABLE}",
                crate::server::mysql::quote_ident(&schema)
            );
            let id: Option<String> = self
                .conn
                .query_first(format!("SELECT id FROM {table} LIMIT 1"))
                .unwrap_or(None);
            if let Some(id) = id {
                return Ok(Some(format!("mysql-dbtax-{id}")));
            }
        }
        Ok(None)
    }

    fn identity_of(&mut self) -> Result<String> {
        if let Some(id) = self.own_identity()? {
            return Ok(id);
        }
        let v = global_vars(&mut self.conn, &["hostname", "port", "datadir"])?;
        let get = |k: &str| v.get(k).cloned().unwrap_or_default();
        Ok(format!(
            "mysql-{}-{}-{}",
            get("hostname"),
            get("port"),
            get("datadir")
        ))
    }

    fn stamp(&mut self, schema: &str) -> Result<String> {
        if let Some(id) = self.own_identity()? {
            return Ok(id);
        }
        let id = crate::host::random_id();
        let table = format!(
            "{}.{IDENTITY_TABLE}",
            crate::server::mysql::quote_ident(schema)
        );
        self.run(format!(
            "CREATE TABLE IF NOT EXISTS {table} (id VARCHAR(64) NOT NULL PRIMARY KEY)"
        ))?;
        self.run(format!("INSERT INTO {table} (id) VALUES ('{id}')"))?;
        Ok(format!("mysql-dbtax-{id}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_grants_are_recognised() {
        assert!(may_install_plugins(
            "GRANT ALL PRIVILEGES ON *.* TO `ROOT`@`LOCALHOST`"
        ));
        assert!(may_install_plugins("GRANT INSERT ON `MYSQL`.* TO `U`@`%`"));
        assert!(!may_install_plugins("GRANT SELECT ON *.* TO `U`@`%`"));
    }
}
