//! The `query` workload: the user's statements in a loop over the text protocol, as mysqlslap
//! sends them (so `select 1` measures what study 000 measured).

use super::clean_error;
use super::client::Script;
use crate::error::usage;
use crate::rng::Rng;
use anyhow::Result;
use mysql::prelude::Queryable;

/// Runs the statement list once per event.
pub struct QueryScript {
    statements: Vec<String>,
}

impl QueryScript {
    /// A script over these statements.
    pub fn new(statements: &[String]) -> QueryScript {
        QueryScript {
            statements: statements.to_vec(),
        }
    }
}

impl Script for QueryScript {
    fn event(&mut self, conn: &mut mysql::Conn, _rng: &mut Rng) -> Result<u32, mysql::Error> {
        for s in &self.statements {
            conn.query_drop(s)?;
        }
        Ok(self.statements.len() as u32)
    }
}

/// Run the setup statements once, in dbtax's schema.
pub fn run_setup(conn: &mut mysql::Conn, setup: &[String]) -> Result<()> {
    for s in setup {
        conn.query_drop(s)
            .map_err(|e| usage(format!("setup statement failed: {s}: {}", clean_error(&e))))?;
    }
    Ok(())
}

/// MariaDB/MySQL errors that mean "the statement is wrong", whatever the tables.
const SYNTAX_ERRORS: [u16; 2] = [
    1064, // ER_PARSE_ERROR
    1149, // ER_SYNTAX_ERROR
];
/// The statement may not be prepared (it still runs over the text protocol).
const NOT_PREPARABLE: u16 = 1295;

/// Check each statement by preparing it (and closing it): nothing runs. Before the tables
/// exist (`tables_ready` false) only syntax errors count; after, every error does.
pub fn check(conn: &mut mysql::Conn, statements: &[String], tables_ready: bool) -> Result<()> {
    for s in statements {
        match conn.prep(s) {
            Ok(stmt) => {
                let _ = conn.close(stmt);
            }
            Err(mysql::Error::MySqlError(e))
                if e.code == NOT_PREPARABLE
                    || (!tables_ready && !SYNTAX_ERRORS.contains(&e.code)) => {}
            Err(e) => {
                return Err(usage(format!(
                    "the query workload's statement `{s}` is refused by the server: {}. \
                     Nothing was changed",
                    clean_error(&e)
                )));
            }
        }
    }
    Ok(())
}
