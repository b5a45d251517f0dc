//! What a workload needs of a connection, and nothing more: prepare a statement, execute it
//! with parameters (its rows read and discarded), send text over the simple protocol, and
//! open or close a transaction the way the engine's own tools do. Each engine implements
//! `Session` over its driver (`server::mysql::driver`, `server::postgres::driver`) and the
//! lean client implements it over a protocol (`lean::Conn`); the
//! scripts (`oltp`, `pgbench`, `query`) are written once against it. Statements use `?`
//! placeholders; an engine that numbers them (`$1`) renumbers them itself.

/// A statement prepared on one session: its index there.
pub type Stmt = usize;

/// A parameter of a prepared statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// An integer (the engine sends it at the width the statement's parameter has).
    Int(i64),
    /// Text.
    Text(&'a str),
    /// SQL NULL (a replayed execution's value, as its log showed it).
    Null,
}

/// What kind of failure a statement met, as far as the load and the checks must tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The connection is gone (reconnect), as opposed to one statement failing.
    Lost,
    /// The statement is not valid SQL.
    Syntax,
    /// The statement may not be prepared (it still runs over the text protocol).
    NotPreparable,
    /// Any other refusal (a missing table, a constraint, a privilege).
    Refused,
}

/// A failed statement or connection, in the server's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DbError {
    /// The server's message, without driver prefixes (errors are counted by it).
    pub message: String,
    /// What kind of failure.
    pub kind: Kind,
}

impl DbError {
    /// The connection is gone (reconnect), as opposed to one statement failing.
    pub fn lost(&self) -> bool {
        self.kind == Kind::Lost
    }

    /// The same failure, its message after `what` ("preparing the workload's statements").
    pub fn during(self, what: &str) -> DbError {
        DbError {
            message: format!("{what}: {}", self.message),
            ..self
        }
    }

    /// As the rest of dbtax handles errors: `ServerLost` when the connection is gone.
    pub fn into_anyhow(self) -> anyhow::Error {
        if self.lost() {
            crate::error::ServerLost(self.message).into()
        } else {
            anyhow::anyhow!(self.message)
        }
    }
}

/// One connection to a server, as the scripts use it.
pub trait Session: Send {
    /// Prepare a statement (`?` placeholders); returns its handle on this session.
    fn prepare(&mut self, sql: &str) -> Result<Stmt, DbError>;
    /// Prepare a statement as its log wrote it, the engine's own placeholders unchanged (a
    /// replay's prepared statement). A session that cannot is refused with `NotPreparable`
    /// (the replay then sends the statement's text).
    fn prepare_as_is(&mut self, _sql: &str) -> Result<Stmt, DbError> {
        Err(DbError {
            message: "this connection prepares only the workload's own statements".into(),
            kind: Kind::NotPreparable,
        })
    }
    /// Execute a prepared statement; its rows are read and discarded.
    fn execute(&mut self, stmt: Stmt, params: &[Value<'_>]) -> Result<(), DbError>;
    /// Run one statement over the simple (text) protocol, rows discarded.
    fn simple(&mut self, sql: &str) -> Result<(), DbError>;
    /// Run one unprepared statement as a replay sends it: the server runs one statement
    /// only (PostgreSQL: the extended protocol; a string of several is refused).
    fn statement(&mut self, sql: &str) -> Result<(), DbError> {
        self.simple(sql)
    }
    /// Make every later transaction of this session read-only (the replay's second lock:
    /// what the classifier misses fails on the server).
    fn read_only(&mut self) -> Result<(), DbError>;
    /// Start a transaction, as the engine's own benchmark does.
    fn begin(&mut self) -> Result<(), DbError>;
    /// Commit it.
    fn commit(&mut self) -> Result<(), DbError>;
    /// Roll back after a failed statement (a failure here is not reported: the statement's
    /// own error is).
    fn rollback(&mut self);
}

/// Run a transaction: begin, `body`, commit (roll back when the body fails). Returns the
/// statements run, BEGIN and COMMIT included.
pub fn transaction(
    s: &mut dyn Session,
    body: impl FnOnce(&mut dyn Session) -> Result<u32, DbError>,
) -> Result<u32, DbError> {
    s.begin()?;
    match body(s) {
        Ok(n) => {
            s.commit()?;
            Ok(n + 2)
        }
        Err(e) => {
            s.rollback();
            Err(e)
        }
    }
}
