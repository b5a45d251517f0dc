//! The replay's third lock on PostgreSQL: the role its clients log in as may only read. A
//! temporary role is created with LOGIN and nothing else (no superuser, CREATEROLE,
//! CREATEDB, REPLICATION, BYPASSRLS), a member of `pg_read_all_data` only, with
//! `default_transaction_read_only = on` set on the role itself; a role the user names is
//! checked for the attributes, memberships and write privileges that would let a replayed
//! statement do harm.

use super::super::{db_error, quote_ident, quote_literal};
use super::PgAdmin;
use anyhow::Result;

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

    fn drop_reader(&mut self, spec: &str) -> Result<String> {
        let sql = format!("DROP ROLE IF EXISTS {}", quote_ident(spec));
        self.conn.batch_execute(&sql).map_err(db_error)?;
        Ok(sql)
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
