//! PostgreSQL's admin connection: pg_settings, ALTER SYSTEM + pg_reload_conf(), the
//! privilege probes, an advisory lock as the run lock, the journal's server copy in a
//! `dbtax_journal` table of dbtax's database. Nothing here changes the server except the
//! statements the trait names as changes.

mod autoconf;
mod checks;
mod held;
mod logins;

use super::catalog::CURRENT_LOGFILE;
use super::{db_error, quote_literal};
use crate::server::admin::OTHER_SESSIONS;
use crate::server::catalog::Feature;
use crate::server::value::{self, Domain, same_value};
use crate::server::{Held, Plugins, Settings, Support, SupportContext};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// How long a reload may take to reach this session.
const RELOAD_PATIENCE: Duration = Duration::from_secs(5);

/// An admin connection to a PostgreSQL server.
pub struct PgAdmin {
    conn: postgres::Client,
    /// How to reach other databases (the journal's copy).
    base: postgres::Config,
    /// Over TLS when the URL asks.
    tls: Option<super::tls::Tls>,
    /// Libraries this session tried to LOAD (so that their settings are known).
    loaded: BTreeSet<String>,
    superuser: Option<bool>,
    /// When `status_counters` last read the server (its clock, as text).
    status_read_at: Option<String>,
    /// Databases in which this connection created dbtax's schema (dropped again when the
    /// journal's table leaves it empty).
    created_schema: BTreeSet<String>,
}

/// A statement's failure: `ServerLost` when the connection is gone, else the server's words
/// after the statement.
fn failed(sql: &str, e: postgres::Error) -> anyhow::Error {
    let lost = e.as_db_error().is_none();
    let err = db_error(e);
    if lost {
        err
    } else {
        err.context(sql.to_string())
    }
}

impl PgAdmin {
    /// Wrap a connection; `base` reaches the server's other databases.
    pub fn new(
        conn: postgres::Client,
        base: postgres::Config,
        tls: Option<super::tls::Tls>,
    ) -> Self {
        PgAdmin {
            conn,
            base,
            tls,
            loaded: BTreeSet::new(),
            superuser: None,
            status_read_at: None,
            created_schema: BTreeSet::new(),
        }
    }

    fn run(&mut self, sql: &str) -> Result<()> {
        self.conn.batch_execute(sql).map_err(|e| failed(sql, e))
    }

    fn is_superuser(&mut self) -> Result<bool> {
        if let Some(s) = self.superuser {
            return Ok(s);
        }
        let row = self
            .conn
            .query_one(
                "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
                &[],
            )
            .map_err(db_error)?;
        let s: bool = row.get(0);
        self.superuser = Some(s);
        Ok(s)
    }

    /// LOAD the library a dotted setting belongs to (`auto_explain.log_analyze`), once, so
    /// that pg_settings knows it. A library that must be preloaded (pgaudit) refuses; its
    /// settings stay unknown until a restart loads it.
    fn load_owner_libraries(&mut self, names: &[&str]) {
        for n in names {
            let Some((lib, _)) = n.split_once('.') else {
                continue;
            };
            if self.loaded.insert(lib.to_string()) {
                let _ = self
                    .conn
                    .batch_execute(&format!("LOAD {}", quote_literal(lib)));
            }
        }
    }

    /// (setting, context) from pg_settings.
    fn settings(&mut self, names: &[&str]) -> Result<BTreeMap<String, (String, String)>> {
        self.load_owner_libraries(names);
        let names: Vec<String> = names.iter().map(|s| s.to_ascii_lowercase()).collect();
        let rows = self
            .conn
            .query(
                "SELECT name, setting, context FROM pg_settings WHERE name = ANY($1)",
                &[&names],
            )
            .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|r| (r.get(0), (r.get(1), r.get(2))))
            .collect())
    }

    /// After ALTER SYSTEM: reload, and wait until this session sees `want` (the postmaster
    /// has re-read the files, so new connections get it).
    fn reload_and_wait(&mut self, name: &str, want: Option<&str>) -> Result<()> {
        self.run("SELECT pg_reload_conf()")?;
        let deadline = Instant::now() + RELOAD_PATIENCE;
        while let Some(want) = want {
            let now = self.settings(&[name])?.remove(name).map(|(v, _)| v);
            if now.as_deref().is_none_or(|v| same_value(v, want)) || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }
}

/// `ALTER SYSTEM SET name = 'value'`.
fn alter_sql(name: &str, value: &str) -> String {
    format!("ALTER SYSTEM SET {name} = {}", quote_literal(value))
}

/// The ALTER SYSTEM that puts a setting's postgresql.auto.conf entry back.
fn restore_alter(name: &str, value: &str, persisted: Option<Option<&str>>) -> String {
    match persisted {
        Some(Some(v)) => alter_sql(name, v),
        Some(None) => format!("ALTER SYSTEM RESET {name}"),
        None => alter_sql(name, value),
    }
}

impl Settings for PgAdmin {
    /// Session settings of a superuser (others may not: then logged as any session is).
    /// The settings this session reads come from pg_settings, which shows its own values:
    /// only a connection that reads none of them is made quiet.
    fn quiet(&mut self) {
        let _ = self.conn.batch_execute(
            "SET log_min_duration_statement = -1; SET log_statement = 'none'; \
             SET log_min_duration_sample = -1",
        );
    }

    fn mark(&mut self, mark: &str) -> Result<bool> {
        self.conn
            .batch_execute(&format!("SELECT {}", quote_literal(mark)))
            .map_err(db_error)?;
        Ok(true)
    }

    fn global_vars(&mut self, names: &[&str]) -> Result<BTreeMap<String, String>> {
        let mut out: BTreeMap<String, String> = self
            .settings(names)?
            .into_iter()
            .map(|(k, (v, _))| (k, v))
            .collect();
        if names.contains(&CURRENT_LOGFILE) {
            let row = self.conn.query_one("SELECT pg_current_logfile()", &[]);
            if let Some(f) = row.ok().and_then(|r| r.get::<_, Option<String>>(0)) {
                out.insert(CURRENT_LOGFILE.into(), f);
            }
        }
        Ok(out)
    }

    fn set_sql(&self, name: &str, value: &str) -> String {
        format!("{}; SELECT pg_reload_conf()", alter_sql(name, value))
    }

    fn set_global(&mut self, name: &str, value: &str) -> Result<String> {
        self.run(&alter_sql(name, value))?;
        self.reload_and_wait(name, Some(value))?;
        Ok(self.set_sql(name, value))
    }

    /// Back to the entry postgresql.auto.conf had: the same value when there was one, else
    /// RESET (the line goes), so the file ends as it began.
    fn restore_global(
        &mut self,
        name: &str,
        value: &str,
        persisted: Option<Option<&str>>,
    ) -> Result<Option<String>> {
        let sql = restore_alter(name, value, persisted);
        match self.conn.batch_execute(&sql) {
            Ok(()) => {}
            Err(e) if e.code() == Some(&postgres::error::SqlState::UNDEFINED_OBJECT) => {
                return Ok(None);
            }
            Err(e) => return Err(failed(&sql, e)),
        }
        self.reload_and_wait(name, None)?;
        Ok(Some(format!("{sql}; SELECT pg_reload_conf()")))
    }

    fn restore_sql(&self, name: &str, value: &str, persisted: Option<Option<&str>>) -> String {
        format!(
            "{}; SELECT pg_reload_conf()",
            restore_alter(name, value, persisted)
        )
    }

    fn persisted(&mut self, names: &[&str]) -> Result<Option<BTreeMap<String, Option<String>>>> {
        let rows = self
            .conn
            .query(
                "SELECT name, setting FROM pg_file_settings \
                 WHERE sourcefile LIKE '%/postgresql.auto.conf' ORDER BY seqno",
                &[],
            )
            .map_err(|e| db_error(e).context("reading pg_file_settings"))?;
        let file: BTreeMap<String, String> = rows
            .into_iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
            .collect();
        Ok(Some(
            names
                .iter()
                .map(|n| (n.to_string(), file.get(*n).cloned()))
                .collect(),
        ))
    }

    fn persisted_text(&mut self) -> Result<Option<String>> {
        self.auto_conf()
    }

    fn restore_persisted_text(&mut self, original: &str) -> Result<Option<String>> {
        self.put_back_auto_conf(original)
    }

    fn restart_only(&mut self, settings: &[(String, String)]) -> Result<Vec<Option<String>>> {
        let names: Vec<&str> = settings.iter().map(|(k, _)| k.as_str()).collect();
        let known = self.settings(&names)?;
        let mut out = vec![];
        for (k, v) in settings {
            let option = match known.get(k) {
                Some((current, ctx)) if ctx == "postmaster" => {
                    // A library list keeps what the server preloads already.
                    let merged = if k.ends_with("_libraries")
                        && !current.is_empty()
                        && !current.split(',').any(|l| l.trim() == v)
                    {
                        format!("{current},{v}")
                    } else {
                        v.clone()
                    };
                    Some(format!("{k}={merged}"))
                }
                None if k.contains('.') => Some(format!("{k}={v}")),
                _ => None,
            };
            out.push(option);
        }
        Ok(out)
    }

    fn relevant_names(&self) -> &'static [&'static str] {
        &[
            "server_version",
            "shared_buffers",
            "max_connections",
            "synchronous_commit",
            "fsync",
            "full_page_writes",
            "wal_level",
            "wal_compression",
            "logging_collector",
            "log_destination",
            "shared_preload_libraries",
        ]
    }

    /// Superusers may; others need ALTER SYSTEM on the parameter, pg_reload_conf() and
    /// pg_file_settings (to restore postgresql.auto.conf exactly).
    fn probe_set_privilege(&mut self, name: &str, _current: &str) -> Result<(), String> {
        self.probe_privilege(name)
    }

    /// pg_settings describes every setting: its type, its enum values, its range.
    fn check_value(&mut self, name: &str, value: &str) -> Result<(), String> {
        self.load_owner_libraries(&[name]);
        let row = self
            .conn
            .query_opt(
                "SELECT vartype, enumvals, min_val, max_val FROM pg_settings WHERE name = $1",
                &[&name.to_ascii_lowercase()],
            )
            .ok()
            .flatten();
        let Some(row) = row else {
            return Ok(());
        };
        let (kind, list, min, max): (String, Option<Vec<String>>, Option<String>, Option<String>) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let number = |s: &Option<String>| s.as_deref().and_then(|x| x.parse::<f64>().ok());
        let domain = match kind.as_str() {
            "enum" => Domain::Enum(list.unwrap_or_default()),
            "bool" => Domain::Bool,
            "integer" | "real" => Domain::Number {
                min: number(&min),
                max: number(&max),
                units: true,
            },
            _ => Domain::Any,
        };
        value::check(&domain, value)
    }

    /// max_connections less the slots kept for superusers, and the backends now.
    fn connection_room(&mut self) -> Result<Option<(u64, u64)>> {
        let row = self
            .conn
            .query_one(
                "SELECT current_setting('max_connections')::int8 \
                 - current_setting('superuser_reserved_connections')::int8, \
                 (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')",
                &[],
            )
            .map_err(db_error)?;
        let (max, used): (i64, i64) = (row.get(0), row.get(1));
        Ok(Some((max.max(0) as u64, used.max(0) as u64)))
    }

    fn traffic(&mut self) -> Result<crate::server::admin::Traffic> {
        let row = self
            .conn
            .query_one(
                // The functions under the views, without their joins: the views cost the
                // server 1.0 ms a read, these 0.2 (pgbench -f of each, 3,000 times).
                "SELECT sum(pg_stat_get_db_xact_commit(oid) \
                 + pg_stat_get_db_xact_rollback(oid))::float8, \
                 (SELECT count(*) FROM pg_stat_get_activity(NULL) s \
                  WHERE s.backend_type = 'client backend' AND s.state = 'active' \
                  AND s.pid <> pg_backend_pid())::float8, \
                 sum(pg_stat_get_db_xact_rollback(oid))::float8 FROM pg_database",
                &[],
            )
            .map_err(db_error)?;
        Ok(crate::server::admin::Traffic {
            work: row.get::<_, Option<f64>>(0).unwrap_or(0.0),
            running: row.get(1),
            errors: Some(row.get::<_, Option<f64>>(2).unwrap_or(0.0)),
            ran: 1,
        })
    }

    fn shapes_offered(&mut self) -> Result<Support> {
        let row = self
            .conn
            .query_one(
                "SELECT current_setting('server_version_num')::int, \
                 EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'), \
                 coalesce(current_setting('pg_stat_statements.track', true), ''), \
                 pg_has_role('pg_read_all_stats', 'USAGE'), current_database()",
                &[],
            )
            .map_err(db_error)?;
        let (version, created, track, all, db): (i32, bool, String, bool, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        Ok(if version < 130_000 {
            Support::No("pg_stat_statements' execution time is read from PostgreSQL 13 on".into())
        } else if track.is_empty() {
            Support::No(
                "pg_stat_statements is not loaded (shared_preload_libraries, then a restart)"
                    .into(),
            )
        } else if !created {
            Support::No(format!(
                "pg_stat_statements is loaded but not created in database {db} (CREATE \
                 EXTENSION pg_stat_statements there)"
            ))
        } else if track == "none" {
            Support::No("pg_stat_statements.track is none".into())
        } else if !all {
            Support::No(
                "this login sees only its own statements in pg_stat_statements (GRANT \
                 pg_read_all_stats)"
                    .into(),
            )
        } else {
            Support::Yes("pg_stat_statements".into())
        })
    }

    fn shapes(&mut self) -> Result<Vec<crate::server::admin::Shape>> {
        // Without the statements' text, which lives in a file the read would go through.
        let rows = self
            .conn
            .query(
                "SELECT dbid::text || '/' || userid::text || '/' || queryid::text, \
                 calls::float8, total_exec_time * 1000 FROM pg_stat_statements(false) \
                 WHERE queryid IS NOT NULL",
                &[],
            )
            .map_err(db_error)?;
        Ok(rows
            .iter()
            .map(|r| crate::server::admin::Shape {
                key: r.get(0),
                calls: r.get(1),
                time_us: r.get(2),
            })
            .collect())
    }

    fn own_task(&mut self) -> Result<Option<u32>> {
        let row = self
            .conn
            .query_one("SELECT pg_backend_pid()", &[])
            .map_err(db_error)?;
        Ok(u32::try_from(row.get::<_, i32>(0)).ok())
    }

    /// The WAL's position, and the sessions of other clients that ran a statement since the
    /// previous read (their `state_change`) or run one now: every client backend but this
    /// one whose application name is not the one dbtax's own connections carry. Sessions
    /// this login may not see (no pg_read_all_stats) are not counted.
    fn status_counters(&mut self) -> Result<BTreeMap<String, f64>> {
        let ours = self
            .base
            .get_application_name()
            .unwrap_or("dbtax")
            .to_string();
        let since = self
            .status_read_at
            .clone()
            .unwrap_or_else(|| "infinity".into());
        let row = self
            .conn
            .query_one(
                "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8, \
                 (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
                  AND pid <> pg_backend_pid() AND application_name IS DISTINCT FROM $1 \
                  AND (state = 'active' OR state_change >= $2::text::timestamptz))::float8, \
                 clock_timestamp()::text",
                &[&ours, &since],
            )
            .map_err(db_error)?;
        self.status_read_at = Some(row.get(2));
        Ok(BTreeMap::from([
            ("wal_bytes".to_string(), row.get(0)),
            (OTHER_SESSIONS.to_string(), row.get(1)),
        ]))
    }

    fn support(&mut self, f: &Feature, ctx: SupportContext) -> Result<Support> {
        self.support_of(f, ctx)
    }
}

/// PostgreSQL has no plugins: libraries are settings (shared_preload_libraries).
impl Plugins for PgAdmin {}

impl Held for PgAdmin {
    /// The cluster's system identifier (set by initdb, the same however it is reached);
    /// for a login that may not read it, the id dbtax stamped on the cluster.
    fn identity(&mut self) -> Result<String> {
        if let Some(id) = self.own_identity()? {
            return Ok(id);
        }
        let row = self
            .conn
            .query_one(
                "SELECT coalesce(inet_server_addr()::text, 'socket'), \
                 current_setting('port'), current_setting('cluster_name')",
                &[],
            )
            .map_err(db_error)?;
        let (a, p, c): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        Ok(format!("postgres-{}-{a}-{p}-{c}", crate::host::hostname()))
    }

    fn stamp_identity(&mut self, schema: &str) -> Result<String> {
        self.stamp(schema)
    }

    fn facts(&mut self) -> Result<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        let id = self
            .conn
            .query_one(
                "SELECT system_identifier::text FROM pg_control_system()",
                &[],
            )
            .map(|r| r.get::<_, String>(0))
            .unwrap_or_default();
        out.insert("system_identifier".into(), id);
        for name in ["data_directory", "port"] {
            // (data_directory is for superusers and pg_read_all_settings only.)
            let v = self
                .conn
                .query_one("SELECT coalesce(current_setting($1, true), '')", &[&name])
                .map(|r| r.get::<_, String>(0))
                .unwrap_or_default();
            out.insert(name.into(), v);
        }
        Ok(out)
    }

    fn try_run_lock(&mut self) -> Result<bool> {
        self.try_lock()
    }

    fn run_lock_holder(&mut self) -> Result<Option<String>> {
        self.lock_holder()
    }

    fn save_server_journal(&mut self, schema: &str, key: &str, journal: &str) -> Result<()> {
        self.save_journal(schema, key, journal)
    }

    fn load_server_journals(&mut self, key: &str) -> Result<Vec<(String, String)>> {
        self.load_journals(key)
    }

    fn delete_server_journal(&mut self, schema: &str, key: &str) -> Result<()> {
        self.delete_journal(schema, key)
    }
}
