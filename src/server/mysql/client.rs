//! Client connections for the worker loop: one driver connection plus its workload's
//! prepared statements (`Script`), behind the engine-neutral `Client` trait.

use super::clean_error;
use super::oltp::OltpScript;
use super::query::QueryScript;
use crate::rng::Rng;
use crate::server::{Client, ClientError, Connector};
use crate::workload::{PreparedWorkload, WorkloadKind};

/// One connection's statements; `event` runs one query or transaction.
pub trait Script: Send {
    /// Run one event; returns the number of statements executed.
    fn event(&mut self, conn: &mut mysql::Conn, rng: &mut Rng) -> Result<u32, mysql::Error>;
}

/// Prepare a workload's statements on a connection.
pub fn script(
    workload: &PreparedWorkload,
    conn: &mut mysql::Conn,
) -> Result<Box<dyn Script>, mysql::Error> {
    match workload.workload.kind {
        WorkloadKind::Query => Ok(Box::new(QueryScript::new(&workload.workload.queries))),
        kind => Ok(Box::new(OltpScript::new(conn, kind, &workload.max_ids)?)),
    }
}

fn client_error(e: mysql::Error) -> ClientError {
    ClientError {
        lost: !matches!(e, mysql::Error::MySqlError(_)),
        message: clean_error(&e),
    }
}

struct MysqlClient {
    conn: mysql::Conn,
    script: Box<dyn Script>,
}

impl Client for MysqlClient {
    fn event(&mut self, rng: &mut Rng) -> Result<u32, ClientError> {
        self.script.event(&mut self.conn, rng).map_err(client_error)
    }
}

/// Connects workers to one schema with one workload.
pub struct MysqlConnector<'a> {
    /// Driver options, the schema as default database.
    pub opts: mysql::Opts,
    /// What the clients run.
    pub workload: &'a PreparedWorkload,
}

impl Connector for MysqlConnector<'_> {
    fn connect(&self) -> Result<Box<dyn Client>, ClientError> {
        let mut conn = mysql::Conn::new(self.opts.clone()).map_err(client_error)?;
        let script = script(self.workload, &mut conn).map_err(|e| ClientError {
            message: format!("preparing the workload's statements: {}", clean_error(&e)),
            lost: false,
        })?;
        Ok(Box::new(MysqlClient { conn, script }))
    }
}
