//! What dbtax keeps on a PostgreSQL server while it works: the run lock (an advisory lock,
//! held by the admin connection) and the copy of the journal (a `dbtax_journal` table in
//! dbtax's database, found again in any database after a kill -9).

use super::super::db_error;
use super::PgAdmin;
use anyhow::Result;

/// The advisory lock key of dbtax's run lock ("dbtx"; below 2^32, so pg_locks shows it as
/// objid with classid 0).
const RUN_LOCK: i64 = 0x6462_7478;
/// The table that keeps the journal on the server, in dbtax's database.
const JOURNAL_TABLE: &str = "dbtax_journal";
/// The table that keeps the identity dbtax stamped on a cluster whose system identifier this
/// login may not read.
const IDENTITY_TABLE: &str = "dbtax_identity";

impl PgAdmin {
    /// `Admin::try_run_lock`: the advisory lock, without waiting.
    pub(super) fn try_lock(&mut self) -> Result<bool> {
        let row = self
            .conn
            .query_one("SELECT pg_try_advisory_lock($1)", &[&RUN_LOCK])
            .map_err(db_error)?;
        Ok(row.get(0))
    }

    /// `Admin::run_lock_holder`: the backend holding the lock, from pg_locks.
    pub(super) fn lock_holder(&mut self) -> Result<Option<String>> {
        let row = self
            .conn
            .query_opt(
                "SELECT a.pid, coalesce(a.usename::text, ''), \
                 coalesce(a.client_addr::text, 'local'), \
                 extract(epoch FROM now() - a.backend_start)::int8 \
                 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                 WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 \
                 AND l.objid = $1::int8::oid AND l.objsubid = 1",
                &[&RUN_LOCK],
            )
            .map_err(db_error)?;
        Ok(row.map(|r| {
            let (pid, user, addr, secs): (i32, String, String, i64) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            format!("backend {pid} of {user} from {addr}, connected {secs} s ago")
        }))
    }

    /// `Admin::save_server_journal`: upsert this server's row in dbtax's database.
    pub(super) fn save_journal(&mut self, schema: &str, key: &str, journal: &str) -> Result<()> {
        let mut c = self.journal_conn(schema)?;
        c.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {JOURNAL_TABLE} (server text PRIMARY KEY, \
             journal text NOT NULL, saved_at timestamptz NOT NULL DEFAULT now())"
        ))
        .map_err(db_error)?;
        // Every login may see that a run left something to restore (the journal holds
        // setting values, no secret); the owner alone may grant it.
        let _ = c.batch_execute(&format!("GRANT SELECT ON {JOURNAL_TABLE} TO PUBLIC"));
        c.execute(
            &format!(
                "INSERT INTO {JOURNAL_TABLE} (server, journal) VALUES ($1, $2) ON CONFLICT \
                 (server) DO UPDATE SET journal = excluded.journal, saved_at = now()"
            ),
            &[&key, &journal],
        )
        .map_err(|e| db_error(e).context("saving the journal on the server"))?;
        Ok(())
    }

    /// `Admin::load_server_journals`: every database that has the table, searched.
    pub(super) fn load_journals(&mut self, key: &str) -> Result<Vec<(String, String)>> {
        let mut out = vec![];
        for (db, mut c) in self.databases_with(JOURNAL_TABLE)? {
            let rows = c
                .query(
                    &format!("SELECT journal FROM {JOURNAL_TABLE} WHERE server = $1"),
                    &[&key],
                )
                .map_err(|e| {
                    if e.as_db_error().is_some() {
                        crate::error::usage(format!(
                            "the server keeps a dbtax journal in {db}.{JOURNAL_TABLE} that this \
                             user cannot read ({}): an earlier run may have left settings to \
                             restore. Ask its owner to run `dbtax restore`, or grant this user \
                             SELECT on it. Nothing was changed",
                            super::super::clean_error(&e)
                        ))
                    } else {
                        db_error(e)
                    }
                })?;
            out.extend(rows.into_iter().map(|r| (db.clone(), r.get(0))));
        }
        Ok(out)
    }

    /// A connection to each database (that this user may enter) holding dbtax's `table`.
    fn databases_with(&mut self, table: &str) -> Result<Vec<(String, postgres::Client)>> {
        let mut out = vec![];
        for db in self.databases()? {
            let Ok(mut c) = self.journal_conn(&db) else {
                continue;
            };
            let has = c
                .query_one(
                    "SELECT to_regclass($1) IS NOT NULL",
                    &[&format!("public.{table}")],
                )
                .is_ok_and(|r| r.get::<_, bool>(0));
            if has {
                out.push((db, c));
            }
        }
        Ok(out)
    }

    /// `Admin::delete_server_journal`.
    pub(super) fn delete_journal(&mut self, schema: &str, key: &str) -> Result<()> {
        let mut c = self.journal_conn(schema)?;
        c.execute(
            &format!("DELETE FROM {JOURNAL_TABLE} WHERE server = $1"),
            &[&key],
        )
        .map_err(|e| db_error(e).context("removing the journal on the server"))?;
        Ok(())
    }

    /// The cluster's system identifier, or the id dbtax stamped on it (any database).
    pub(super) fn own_identity(&mut self) -> Result<Option<String>> {
        if let Ok(r) = self
            .conn
            .query_one("SELECT system_identifier FROM pg_control_system()", &[])
        {
            return Ok(Some(format!("postgres-{}", r.get::<_, i64>(0))));
        }
        for (_, mut c) in self.databases_with(IDENTITY_TABLE)? {
            if let Ok(Some(r)) =
                c.query_opt(&format!("SELECT id FROM {IDENTITY_TABLE} LIMIT 1"), &[])
            {
                return Ok(Some(format!("postgres-dbtax-{}", r.get::<_, String>(0))));
            }
        }
        Ok(None)
    }

    /// `Held::stamp_identity`.
    pub(super) fn stamp(&mut self, schema: &str) -> Result<String> {
        if let Some(id) = self.own_identity()? {
            return Ok(id);
        }
        let id = crate::host::random_id();
        let mut c = self.journal_conn(schema)?;
        c.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {IDENTITY_TABLE} (id text PRIMARY KEY); \
             INSERT INTO {IDENTITY_TABLE} (id) VALUES ('{id}'); \
             GRANT SELECT ON {IDENTITY_TABLE} TO PUBLIC"
        ))
        .map_err(|e| db_error(e).context("stamping the server's identity"))?;
        Ok(format!("postgres-dbtax-{id}"))
    }

    /// Every database a run's tables could be in.
    fn databases(&mut self) -> Result<Vec<String>> {
        Ok(self
            .conn
            .query(
                "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate",
                &[],
            )
            .map_err(db_error)?
            .into_iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn journal_conn(&self, db: &str) -> Result<postgres::Client> {
        let mut c = self.base.clone();
        c.dbname(db);
        super::super::connect_with(&c, self.tls.as_ref()).map_err(db_error)
    }
}
