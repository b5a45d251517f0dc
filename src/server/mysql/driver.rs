//! A MySQL-family connection as the workloads use it ([`crate::client::connection::Session`]): prepared
//! statements over the binary protocol (COM_STMT_PREPARE once, COM_STMT_EXECUTE per query,
//! rows discarded), text for the simple protocol and for BEGIN/COMMIT, as sysbench sends
//! them. Driver errors become `DbError`s here.

use super::clean_error;
use crate::client::connection::{DbError, Kind, Session, Stmt, Value};
use mysql::prelude::Queryable;

/// Makes every later transaction of a session read-only (tx_read_only / transaction_read_only).
pub const READ_ONLY: &str = "SET SESSION TRANSACTION READ ONLY";

/// MariaDB/MySQL errors that mean "the statement is wrong", whatever the tables.
const SYNTAX_ERRORS: [u16; 2] = [
    1064, // ER_PARSE_ERROR
    1149, // ER_SYNTAX_ERROR
];
/// The statement may not be prepared (it still runs over the text protocol).
const NOT_PREPARABLE: u16 = 1295;

/// A driver error as the workloads see it.
pub fn db_error(e: mysql::Error) -> DbError {
    let kind = match &e {
        mysql::Error::MySqlError(m) if SYNTAX_ERRORS.contains(&m.code) => Kind::Syntax,
        mysql::Error::MySqlError(m) if m.code == NOT_PREPARABLE => Kind::NotPreparable,
        mysql::Error::MySqlError(_) => Kind::Refused,
        _ => Kind::Lost,
    };
    DbError {
        message: clean_error(&e),
        kind,
    }
}

/// One connection and the statements prepared on it.
pub struct MysqlSession {
    conn: mysql::Conn,
    statements: Vec<mysql::Statement>,
}

impl MysqlSession {
    /// Open a connection with these options.
    pub fn connect(opts: mysql::Opts) -> Result<MysqlSession, DbError> {
        Ok(MysqlSession {
            conn: mysql::Conn::new(opts).map_err(db_error)?,
            statements: vec![],
        })
    }
}

fn param(v: &Value<'_>) -> mysql::Value {
    match *v {
        Value::Int(i) => mysql::Value::Int(i),
        Value::Text(s) => mysql::Value::Bytes(s.as_bytes().to_vec()),
        Value::Null => mysql::Value::NULL,
    }
}

impl Session for MysqlSession {
    fn prepare(&mut self, sql: &str) -> Result<Stmt, DbError> {
        let stmt = self.conn.prep(sql).map_err(db_error)?;
        self.statements.push(stmt);
        Ok(self.statements.len() - 1)
    }

    fn execute(&mut self, stmt: Stmt, params: &[Value<'_>]) -> Result<(), DbError> {
        let params = mysql::Params::Positional(params.iter().map(param).collect());
        self.conn
            .exec_drop(&self.statements[stmt], params)
            .map_err(db_error)
    }

    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.query_drop(sql).map_err(db_error)
    }

    fn read_only(&mut self) -> Result<(), DbError> {
        self.simple(READ_ONLY)
    }

    fn begin(&mut self) -> Result<(), DbError> {
        self.simple("BEGIN")
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.simple("COMMIT")
    }

    fn rollback(&mut self) {
        let _ = self.conn.query_drop("ROLLBACK");
    }
}
