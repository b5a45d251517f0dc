//! What a worker dials: a lean client's connection (`lean::Conn`, which the event loop can
//! drive a request at a time as well as block on) or a driver's (a `Session` that only
//! blocks). Telling them apart is a match, so no layer has to hide the other's type.

use super::connection::{DbError, Session};
use super::lean::Conn;

/// A new connection, of either kind.
pub enum Connection {
    /// A lean client's: a socket and an engine's protocol.
    Lean(Conn),
    /// A driver's (the `mysql` crate's, rust-postgres'): blocking only.
    Driver(Box<dyn Session>),
}

impl Connection {
    /// The connection as the scripts use it, whichever kind it is.
    pub fn session(&mut self) -> &mut dyn Session {
        match self {
            Connection::Lean(c) => c,
            Connection::Driver(s) => s.as_mut(),
        }
    }

    /// A lean client's connection; None: a driver's, which only runs blocking.
    pub fn lean(&mut self) -> Option<&mut Conn> {
        match self {
            Connection::Lean(c) => Some(c),
            Connection::Driver(_) => None,
        }
    }
}

/// Opens connections to one database of one server, on any thread and as often as a worker
/// reconnects. It holds connection settings only (never the engine), so a worker that a
/// frozen server keeps waiting can be left behind.
pub trait Dialer: Send + Sync {
    /// A new connection.
    fn dial(&self) -> Result<Connection, DbError>;
}
