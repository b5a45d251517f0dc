//! The `query` workload: the user's statements in a loop over the text protocol, as mysqlslap
//! sends them (so `select 1` measures what study 000 measured).

use super::Script;
use crate::error::usage;
use crate::rng::Rng;
use crate::target::Target;
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
pub fn run_setup(target: &Target, setup: &[String]) -> Result<()> {
    if setup.is_empty() {
        return Ok(());
    }
    let mut conn = target.connect()?;
    for s in setup {
        conn.query_drop(s).map_err(|e| {
            usage(format!(
                "setup statement failed: {s}: {}",
                crate::target::mysql::clean_error(&e)
            ))
        })?;
    }
    Ok(())
}
