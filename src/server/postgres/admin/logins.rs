//! The replay's third lock on PostgreSQL: the role its clients log in as may only read. A
//! temporary role is created with LOGIN and nothing else (no superuser, CREATEROLE,
//! CREATEDB, REPLICATION, BYPASSRLS), a member of `pg_read_all_data` only, with
//! `default_transaction_read_only = on` set on the role itself; a role the user names is
//! checked for the attributes, memberships and write privileges that would let a replayed
//! statement do harm.

use super::super::{db_error, quote_ident, quote_literal};
use super::PgAdmin;
use anyhow::Result;
use dbtax_logs::read_only::reach::{CodeObject, ServerCode};

/// Roles whose members can reach beyond the database's data (signal sessions, run
/// programs, read or write the host's files, write every table).
const HARMFUL_ROLES: [&str; 5] = [
    "pg_signal_backend",
    "pg_execute_server_program",
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_write_all_data",
];

impl crate::server::Logins for PgAdmin {
    fn reader_spec(&mut self, name: &str) -> Result<String> {
        Ok(name.to_string())
    }

    fn create_reader(&mut self, spec: &str, password: &str) -> Result<Vec<String>> {
        let role = quote_ident(spec);
        let create = format!(
            "CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION \
             NOBYPASSRLS PASSWORD {}",
            quote_literal(password)
        );
        let grant = format!("GRANT pg_read_all_data TO {role}");
        let read_only = format!("ALTER ROLE {role} SET default_transaction_read_only = on");
        for sql in [&create, &grant, &read_only] {
            self.conn.batch_execute(sql).map_err(db_error)?;
        }
        Ok(vec![
            format!(
                "CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION \
                 NOBYPASSRLS PASSWORD '…'"
            ),
            grant,
            read_only,
        ])
    }

    /// Drop the temporary role, after what it owns (a replayed statement that reached code
    /// running with other rights may have made large objects or tables in its name): DROP
    /// OWNED BY in each database where it owns something or holds a privilege (pg_shdepend
    /// says which), then the role. A role that is gone already is no error.
    fn drop_reader(&mut self, spec: &str) -> Result<String> {
        let role = quote_ident(spec);
        let dbs: Vec<String> = self
            .conn
            .query(
                "SELECT DISTINCT d.datname FROM pg_shdepend s JOIN pg_roles r \
                 ON r.oid = s.refobjid JOIN pg_database d ON d.oid = s.dbid \
                 WHERE r.rolname = $1 AND s.deptype IN ('o', 'a', 'i')",
                &[&spec],
            )
            .map_err(db_error)?
            .into_iter()
            .map(|r| r.get(0))
            .collect();
        let mut done = vec![];
        for db in &dbs {
            let drop_owned = format!("DROP OWNED BY {role}");
            self.journal_conn(db)?
                .batch_execute(&drop_owned)
                .map_err(db_error)?;
            done.push(format!("{drop_owned} (in database {db})"));
        }
        let sql = format!("DROP ROLE IF EXISTS {role}");
        self.conn.batch_execute(&sql).map_err(db_error)?;
        done.push(sql);
        Ok(done.join("; "))
    }

    /// In the replay's database: every view (it runs with its owner's rights unless
    /// security_invoker), every SECURITY DEFINER function, every row-level policy (its
    /// expression runs on each read of its table).
    fn server_code(&mut self, schema: &str) -> Result<ServerCode> {
        const USER_SCHEMAS: &str = "n.nspname NOT IN ('pg_catalog', 'information_schema') \
             AND n.nspname NOT LIKE 'pg_toast%'";
        let mut c = self.journal_conn(schema)?;
        let rows = |c: &mut postgres::Client, sql: &str| -> Result<Vec<CodeObject>> {
            Ok(c.query(sql, &[])
                .map_err(db_error)?
                .into_iter()
                .map(|r| CodeObject {
                    schema: r.get(0),
                    name: r.get(1),
                    definition: r.get::<_, Option<String>>(2).unwrap_or_default(),
                })
                .collect())
        };
        Ok(ServerCode {
            views: rows(
                &mut c,
                &format!(
                    "SELECT n.nspname::text, c.relname::text, pg_get_viewdef(c.oid) FROM \
                     pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE \
                     c.relkind = 'v' AND {USER_SCHEMAS}"
                ),
            )?,
            definer_functions: rows(
                &mut c,
                &format!(
                    "SELECT n.nspname::text, p.proname::text, NULL::text FROM pg_proc p \
                     JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.prosecdef AND \
                     {USER_SCHEMAS}"
                ),
            )?,
            policies: rows(
                &mut c,
                "SELECT schemaname::text, tablename::text, 'SELECT ' || coalesce(qual, 'true') \
                 FROM pg_policies",
            )?,
        })
    }

    fn only_reads(&mut self) -> Result<Result<(), String>> {
        let row = self
            .conn
            .query_one(
                "SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls \
                 FROM pg_roles WHERE rolname = current_user",
                &[],
            )
            .map_err(db_error)?;
        let mut more = vec![];
        for (i, what) in [
            "SUPERUSER",
            "CREATEROLE",
            "CREATEDB",
            "REPLICATION",
            "BYPASSRLS",
        ]
        .iter()
        .enumerate()
        {
            if row.get::<_, bool>(i) {
                more.push(what.to_string());
            }
        }
        for r in HARMFUL_ROLES {
            let member: bool = self
                .conn
                .query_one(
                    "SELECT coalesce(pg_has_role(current_user, oid, 'USAGE'), false) \
                     FROM pg_roles WHERE rolname = $1 UNION ALL SELECT false LIMIT 1",
                    &[&r],
                )
                .map_err(db_error)?
                .get(0);
            if member {
                more.push(format!("membership of {r}"));
            }
        }
        let writable: Vec<String> = self
            .conn
            .query(
                "SELECT n.nspname || '.' || c.relname FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relkind IN ('r', 'p', 'S') \
                 AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
                 AND (has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE') \
                 OR (c.relkind = 'S' AND has_sequence_privilege(c.oid, 'USAGE, UPDATE'))) \
                 ORDER BY 1 LIMIT 4",
                &[],
            )
            .map_err(db_error)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if !writable.is_empty() {
            more.push(format!("writing {}", writable.join(", ")));
        }
        Ok(if more.is_empty() {
            Ok(())
        } else {
            Err(more.join(", "))
        })
    }
}
