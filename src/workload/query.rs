//! The `query` workload: the user's statements in a loop, over the simple (text) protocol as
//! mysqlslap and psql send them (so `select 1` measures what study 000 measured), or, with a
//! `--protocol` that prepares, prepared once per connection and executed; its setup
//! statements; and the check that the server takes the statements before anything changes.

use crate::client::connection::{DbError, Kind, Session, Stmt};
use crate::client::mode::QueryMode;
use crate::error::usage;
use anyhow::Result;

/// One of the list's statements, as this connection sends it.
enum Statement {
    /// Over the simple protocol.
    Text(String),
    /// Prepared on this connection.
    Prepared(Stmt),
}

/// Runs the statement list once per event.
pub struct QueryScript {
    statements: Vec<Statement>,
}

impl QueryScript {
    /// A script over these statements, sent as `mode` says: a statement the server will not
    /// prepare is sent as text.
    pub fn new(
        s: &mut dyn Session,
        statements: &[String],
        mode: QueryMode,
    ) -> Result<QueryScript, DbError> {
        let statements = statements
            .iter()
            .map(|q| {
                if !mode.server_side() {
                    return Ok(Statement::Text(q.clone()));
                }
                match s.prepare(q) {
                    Ok(h) => Ok(Statement::Prepared(h)),
                    Err(e) if e.kind == Kind::NotPreparable => Ok(Statement::Text(q.clone())),
                    Err(e) => Err(e),
                }
            })
            .collect::<Result<_, DbError>>()?;
        Ok(QueryScript { statements })
    }
}

impl super::Script for QueryScript {
    /// Every statement once.
    fn event(&mut self, s: &mut dyn Session, _rng: &mut crate::rng::Rng) -> Result<u32, DbError> {
        for q in &self.statements {
            match q {
                Statement::Text(sql) => s.simple(sql)?,
                Statement::Prepared(h) => s.execute(*h, &[])?,
            }
        }
        Ok(self.statements.len() as u32)
    }
}

/// Run the setup statements once, in dbtax's schema. A failing one is bad input.
pub fn run_setup(s: &mut dyn Session, setup: &[String]) -> Result<()> {
    for q in setup {
        s.simple(q).map_err(|e| match e.kind {
            Kind::Lost => e.into_anyhow(),
            _ => usage(format!("setup statement failed: {q}: {}", e.message)),
        })?;
    }
    Ok(())
}

/// Check each statement by preparing it: nothing runs. Before the tables exist
/// (`tables_ready` false) only syntax errors count; after, every error does, except a
/// statement the server will not prepare (it still runs over the text protocol).
pub fn check(s: &mut dyn Session, statements: &[String], tables_ready: bool) -> Result<()> {
    for q in statements {
        match s.prepare(q) {
            Ok(_) => {}
            Err(e) if e.kind == Kind::Lost => return Err(e.into_anyhow()),
            Err(e) if e.kind == Kind::NotPreparable => {}
            Err(e) if !tables_ready && e.kind != Kind::Syntax => {}
            Err(e) => {
                return Err(usage(format!(
                    "the query workload's statement `{q}` is refused by the server: {}. \
                     Nothing was changed",
                    e.message
                )));
            }
        }
    }
    Ok(())
}
