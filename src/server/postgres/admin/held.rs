//! What dbtax keeps on a PostgreSQL server while it works: the run lock (an advisory lock,
//! held by the admin connection) and the copy of the journal (a `dbtax_journal` table in a
//! `dbtax` schema of dbtax's database, found again in any database after a kill -9, and
//! gone after a clean run: the table once empty, the schema when dbtax made it). Tables of
//! runs before the schema existed are read where they are (`public`).

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
/// dbtax's own schema in a database; earlier runs kept their tables in `public`.
const SCHEMAS: [&str; 2] = ["dbtax", "public"];

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

    /// dbtax's schema in the database of `c`, made when absent (and remembered as made).
    fn own_schema(&mut self, db: &str, c: &mut postgres::Client) -> Result<()> {
        let exists: bool = c
            .query_one("SELECT to_regnamespace($1) IS NOT NULL", &[&SCHEMAS[0]])
            .map_err(db_error)?
            .get(0);
        if !exists {
            c.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {0}; GRANT USAGE ON SCHEMA {0} TO PUBLIC",
                SCHEMAS[0]
            ))
            .map_err(|e| db_error(e).context("making dbtax's schema for the journal"))?;
            self.created_schema.insert(db.to_string());
        }
        Ok(())
    }

    /// `Admin::save_server_journal`: upsert this server's row in dbtax's database.
    pub(super) fn save_journal(&mut self, schema: &str, key: &str, journal: &str) -> Result<()> {
        let mut c = self.journal_conn(schema)?;
        self.own_schema(schema, &mut c)?;
        let table = format!("{}.{JOURNAL_TABLE}", SCHEMAS[0]);
        c.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {table} (server text PRIMARY KEY, \
             journal text NOT NULL, saved_at timestamptz NOT NULL DEFAULT now())"
        ))
        .map_err(db_error)?;
        // Every login may see that a run left something to restore (the journal holds
        // setting values, no secret); the owner alone may grant it.
        let _ = c.batch_execute(&format!("GRANT SELECT ON {table} TO PUBLIC"));
        c.execute(
            &format!(
                "INSERT INTO {table} (server, journal) VALUES ($1, $2) ON CONFLICT \
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
        for (db, tables, mut c) in self.databases_with(JOURNAL_TABLE)? {
            for table in tables {
                let rows = c
                .query(
                    &format!("SELECT journal FROM {table} WHERE server = $1"),
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
        }
        Ok(out)
    }

    /// A connection to each database (that this user may enter) holding dbtax's `table`,
    /// and where it is there (`dbtax.table`, or an earlier run's `public.table`).
    fn databases_with(
        &mut self,
        table: &str,
    ) -> Result<Vec<(String, Vec<String>, postgres::Client)>> {
        let mut out = vec![];
        for db in self.databases()? {
            let Ok(mut c) = self.journal_conn(&db) else {
                continue;
            };
            let tables = located(&mut c, table);
            if !tables.is_empty() {
                out.push((db, tables, c));
            }
        }
        Ok(out)
    }

    /// `Admin::delete_server_journal`: this server's row gone; the table with it when it
    /// is left empty, and dbtax's schema when this connection made it and it is empty.
    pub(super) fn delete_journal(&mut self, schema: &str, key: &str) -> Result<()> {
        let mut c = self.journal_conn(schema)?;
        for table in located(&mut c, JOURNAL_TABLE) {
            c.execute(&format!("DELETE FROM {table} WHERE server = $1"), &[&key])
                .map_err(|e| db_error(e).context("removing the journal on the server"))?;
            let left: i64 = c
                .query_one(&format!("SELECT count(*) FROM {table}"), &[])
                .map_err(db_error)?
                .get(0);
            if left == 0 {
                // Another login's run may have made it: then it is theirs to drop.
                let _ = c.batch_execute(&format!("DROP TABLE IF EXISTS {table}"));
            }
        }
        if self.created_schema.contains(schema) {
            // RESTRICT: only an empty schema goes.
            if c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} RESTRICT", SCHEMAS[0]))
                .is_ok()
            {
                self.created_schema.remove(schema);
            }
        }
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
        for (_, tables, mut c) in self.databases_with(IDENTITY_TABLE)? {
            let table = &tables[0];
            if let Ok(Some(r)) = c.query_opt(&format!("SELECT id FROM {table} LIMIT 1"), &[]) {
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
        self.own_schema(schema, &mut c)?;
        // The identity stays (a server keeps its name): so does the schema that holds it.
        self.created_schema.remove(schema);
        let table = format!("{}.{IDENTITY_TABLE}", SCHEMAS[0]);
        c.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {table} (id text PRIMARY KEY); \
             INSERT INTO {table} (id) VALUES ('{id}'); \
             GRANT SELECT ON {table} TO PUBLIC"
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

    pub(super) fn journal_conn(&self, db: &str) -> Result<postgres::Client> {
        let mut c = self.base.clone();
        c.dbname(db);
        super::super::connect_with(&c, self.tls.as_ref()).map_err(db_error)
    }
}

/// Where `table` is in the database of `c`: `dbtax.table`, an earlier run's `public.table`.
fn located(c: &mut postgres::Client, table: &str) -> Vec<String> {
    SCHEMAS
        .iter()
        .map(|schema| format!("{schema}.{table}"))
        .filter(|q| {
            c.query_one("SELECT to_regclass($1) IS NOT NULL", &[q])
                .is_ok_and(|r| r.get::<_, bool>(0))
        })
        .collect()
}
