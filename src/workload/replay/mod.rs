//! Captured statement logs as a workload (issue 25). Built so far: the readers of the MySQL
//! family's general and slow logs (`mylog`) and statements' fingerprints (`fingerprint`).
//! Not built yet, and not reachable from the command line: PostgreSQL's logs, sessions
//! replayed as clients, pace, the same slice each trial, per-fingerprint costs.

pub mod fingerprint;
pub mod mylog;

/// One thing a log says a session did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The log line it starts on (1-based).
    pub line: u64,
    /// The session (connection id, thread id).
    pub session: u64,
    /// When, µs since the epoch, as far as the log says.
    pub at_us: Option<i64>,
    /// What.
    pub what: What,
}

/// What a session did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// Connected, with this default database.
    Connect {
        /// The database, when the log names one.
        db: Option<String>,
    },
    /// Changed its default database.
    InitDb(String),
    /// Ran a statement over the text protocol.
    Query(String),
    /// Prepared a statement.
    Prepare(String),
    /// Executed a prepared statement (the log shows it with its values).
    Execute(String),
    /// Disconnected.
    Quit,
    /// Another command (ping, statistics…): nothing to replay.
    Other(String),
}

/// A line that belonged to nothing, counted and skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// Its number (1-based).
    pub line: u64,
    /// Why.
    pub why: &'static str,
}
