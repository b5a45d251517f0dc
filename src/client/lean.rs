//! The lean load clients' common half: a socket (unix or TCP), one reusable buffer each way,
//! and an engine's `Protocol` that encodes requests and tells where their answers end. Each
//! engine writes only its protocol (`server::postgres::wire`, `server::mysql::wire`); this module runs it two
//! ways: blocking, as a `Session` (one thread per connection), and as a set of requests
//! encoded ahead of time (`Encoder`) that the event loop (`load::evented`) sends on a
//! non-blocking socket. Rows are skipped where they arrive, never kept: a 1 GB row costs no
//! memory.

use super::connection::{DbError, Kind, Session, Stmt, Value};
pub use super::socket::Stream;
use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

/// What the answer to a request looks like (for the protocol's parser).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// A statement's preparation (its answer names the statement).
    Prepare,
    /// Anything that runs: an execution, a text statement, BEGIN, COMMIT, ROLLBACK.
    Run,
}

/// The outcome of reading part of an answer.
#[derive(Debug)]
pub enum Step {
    /// Needs more bytes.
    More,
    /// The answer is complete: the request succeeded or the server refused it.
    Done(Result<(), DbError>),
}

/// One engine's requests and answers.
pub trait Protocol: Send {
    /// Append a prepared statement's execution to `out`.
    fn execute(&mut self, stmt: Stmt, params: &[Value<'_>], out: &mut Vec<u8>);
    /// Append a statement over the text (simple) protocol.
    fn simple(&mut self, sql: &str, out: &mut Vec<u8>);
    /// Append one unprepared statement as a replay sends it: where the protocol can, in a
    /// form the server runs as one statement only (PostgreSQL's extended protocol refuses a
    /// string of several; the MySQL family's clients never ask for multi-statements).
    fn statement(&mut self, sql: &str, out: &mut Vec<u8>) {
        self.simple(sql, out)
    }
    /// The statement that makes this session read-only for every transaction after it.
    fn read_only_sql(&self) -> &'static str;
    /// Append the preparation of `sql` (`?` placeholders); its answer is read as `Prepare`.
    /// A mode that prepares nothing on the server (the text mode) keeps the statement and
    /// appends nothing: there is no answer to read.
    fn prepare(&mut self, sql: &str, out: &mut Vec<u8>);
    /// Append the preparation of `sql` with the engine's own placeholders as they are.
    fn prepare_as_is(&mut self, sql: &str, out: &mut Vec<u8>) {
        self.prepare(sql, out)
    }
    /// Append BEGIN as the engine's own benchmark sends it.
    fn begin(&mut self, out: &mut Vec<u8>);
    /// Append COMMIT.
    fn commit(&mut self, out: &mut Vec<u8>);
    /// An answer to `request` is next.
    fn expect(&mut self, request: Request);
    /// Read the answer from `input` (what has arrived and is not consumed yet): returns the
    /// bytes consumed and whether the answer is complete. A row may be consumed before all
    /// of it has arrived.
    fn feed(&mut self, input: &[u8]) -> (usize, Step);
    /// After a completed `Prepare` answer: the new statement's handle.
    fn prepared(&mut self) -> Stmt;
    /// The rows of the last answer's result sets, where the protocol counts them.
    fn rows(&self) -> Option<u64> {
        None
    }
}

/// Skip what is left of a message being passed over: advances `at` in `input` and lowers
/// `skip`; true while the message continues past what has arrived.
pub fn skip_on(skip: &mut usize, input: &[u8], at: &mut usize) -> bool {
    let n = (*skip).min(input.len() - *at);
    *skip -= n;
    *at += n;
    *skip > 0
}

/// The peer closed the connection: the words a worker counts it by.
pub fn closed() -> DbError {
    lost("the server closed the connection")
}

/// A connection's lost: the words a worker counts it by.
pub fn lost(what: impl std::fmt::Display) -> DbError {
    DbError {
        message: what.to_string(),
        kind: Kind::Lost,
    }
}

/// A received-bytes buffer: bytes in `[start, end)` are unread.
#[derive(Default)]
pub struct Inbox {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// Bytes read per call at least (a point select's answer is well under 1 KB).
const READ_CHUNK: usize = 16 * 1024;

impl Inbox {
    /// Read once from `r` (after making room); Ok(0) means the peer closed.
    pub fn fill(&mut self, r: &mut impl Read) -> std::io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.buf.len() - self.end < READ_CHUNK / 2 && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < READ_CHUNK / 2 {
            let want = (self.end + READ_CHUNK).max(self.buf.len() * 2);
            self.buf.resize(want, 0);
        }
        let n = r.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }

    /// Hand the unread bytes to `p`; consume what it used.
    pub fn feed(&mut self, p: &mut dyn Protocol) -> Step {
        let (used, step) = p.feed(&self.buf[self.start..self.end]);
        self.start += used;
        step
    }

    /// Unread bytes.
    pub fn pending(&self) -> usize {
        self.end - self.start
    }
}

/// A connection of a lean client: its socket, its protocol and buffers.
pub struct Conn {
    /// The socket.
    pub stream: Stream,
    /// The engine's half.
    pub protocol: Box<dyn Protocol>,
    /// What has arrived and is unread.
    pub inbox: Inbox,
    out: Vec<u8>,
    /// An answer being read when the connection broke is lost with it.
    broken: bool,
}

impl Conn {
    /// A connection whose login is done (the socket blocking, `timeout` on each read).
    pub fn new(mut stream: Stream, protocol: Box<dyn Protocol>, timeout: Duration) -> Conn {
        let _ = stream.set_timeouts(Some(timeout));
        Conn {
            stream,
            protocol,
            inbox: Inbox::default(),
            out: Vec::with_capacity(256),
            broken: false,
        }
    }

    /// Send these bytes (a request the protocol did not encode) and read their answer.
    pub fn request(&mut self, bytes: &[u8], request: Request) -> Result<(), DbError> {
        self.out.extend_from_slice(bytes);
        self.round_trip(request)
    }

    /// Send `out` and read its answer, blocking.
    fn round_trip(&mut self, request: Request) -> Result<(), DbError> {
        if self.broken {
            return Err(lost("the connection was lost"));
        }
        self.protocol.expect(request);
        let result = self.send_and_wait();
        self.out.clear();
        if result.as_ref().is_err_and(DbError::lost) {
            self.broken = true;
        }
        result
    }

    fn send_and_wait(&mut self) -> Result<(), DbError> {
        self.stream.write_all(&self.out).map_err(io_lost)?;
        self.stream.flush().map_err(io_lost)?;
        loop {
            if self.inbox.pending() > 0
                && let Step::Done(r) = self.inbox.feed(self.protocol.as_mut())
            {
                return r;
            }
            match self.inbox.fill(&mut self.stream) {
                Ok(0) => return Err(closed()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io_lost(e)),
            }
        }
    }
}

/// An I/O failure as a lost connection, in words.
pub fn io_lost(e: std::io::Error) -> DbError {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => lost("the server did not answer in time"),
        _ => lost(format!("connection lost: {e}")),
    }
}

impl Session for Conn {
    fn prepare(&mut self, sql: &str) -> Result<Stmt, DbError> {
        self.protocol.prepare(sql, &mut self.out);
        // The text mode keeps its statements here: nothing to send.
        if !self.out.is_empty() {
            self.round_trip(Request::Prepare)?;
        }
        Ok(self.protocol.prepared())
    }

    fn prepare_as_is(&mut self, sql: &str) -> Result<Stmt, DbError> {
        self.protocol.prepare_as_is(sql, &mut self.out);
        self.round_trip(Request::Prepare)?;
        Ok(self.protocol.prepared())
    }

    fn execute(&mut self, stmt: Stmt, params: &[Value<'_>]) -> Result<(), DbError> {
        self.protocol.execute(stmt, params, &mut self.out);
        self.round_trip(Request::Run)
    }

    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        self.protocol.simple(sql, &mut self.out);
        self.round_trip(Request::Run)
    }

    fn statement(&mut self, sql: &str) -> Result<(), DbError> {
        self.protocol.statement(sql, &mut self.out);
        self.round_trip(Request::Run)
    }

    fn read_only(&mut self) -> Result<(), DbError> {
        let sql = self.protocol.read_only_sql();
        self.simple(sql)
    }

    fn begin(&mut self) -> Result<(), DbError> {
        self.protocol.begin(&mut self.out);
        self.round_trip(Request::Run)
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.protocol.commit(&mut self.out);
        self.round_trip(Request::Run)
    }

    fn rollback(&mut self) {
        self.protocol.simple("ROLLBACK", &mut self.out);
        let _ = self.round_trip(Request::Run);
    }
}

/// One event's requests, encoded ahead of time by running the script against a `Encoder`;
/// the event loop sends them one at a time, each after the previous one's answer.
#[derive(Default)]
pub struct Requests {
    /// The encoded requests, back to back.
    pub bytes: Vec<u8>,
    /// Where each request ends in `bytes`.
    pub ends: Vec<usize>,
    /// A transaction was opened: a failure inside it is followed by ROLLBACK.
    pub transaction: bool,
}

impl Requests {
    /// Empty, keeping the buffers.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.transaction = false;
    }

    /// Request `i`'s bytes.
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// A `Session` that records what the script asks instead of running it (every request
/// succeeds; the event loop learns the real outcomes one by one).
pub struct Encoder<'a> {
    /// The connection's protocol, encoding.
    pub protocol: &'a mut dyn Protocol,
    /// Where the requests go.
    pub requests: &'a mut Requests,
}

impl Encoder<'_> {
    fn push(&mut self) -> Result<(), DbError> {
        self.requests.ends.push(self.requests.bytes.len());
        Ok(())
    }
}

impl Session for Encoder<'_> {
    fn prepare(&mut self, _sql: &str) -> Result<Stmt, DbError> {
        Err(DbError {
            message: "statements are prepared when a client connects".into(),
            kind: Kind::Refused,
        })
    }

    fn execute(&mut self, stmt: Stmt, params: &[Value<'_>]) -> Result<(), DbError> {
        self.protocol
            .execute(stmt, params, &mut self.requests.bytes);
        self.push()
    }

    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        self.protocol.simple(sql, &mut self.requests.bytes);
        self.push()
    }

    fn statement(&mut self, sql: &str) -> Result<(), DbError> {
        self.protocol.statement(sql, &mut self.requests.bytes);
        self.push()
    }

    fn read_only(&mut self) -> Result<(), DbError> {
        Err(DbError {
            message: "a session is made read-only when a client connects".into(),
            kind: Kind::Refused,
        })
    }

    fn begin(&mut self) -> Result<(), DbError> {
        self.requests.transaction = true;
        self.protocol.begin(&mut self.requests.bytes);
        self.push()
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.protocol.commit(&mut self.requests.bytes);
        self.push()
    }

    fn rollback(&mut self) {}
}

/// Feed an answer to a protocol `chunk` bytes at a time, as a socket might deliver it:
/// the outcome and the bytes consumed when it completed (None: never completed).
#[cfg(test)]
pub fn drive(
    p: &mut dyn Protocol,
    bytes: &[u8],
    chunk: usize,
) -> Option<(Result<(), DbError>, usize)> {
    let (mut consumed, mut arrived) = (0, 0);
    while arrived < bytes.len() {
        arrived = (arrived + chunk).min(bytes.len());
        loop {
            let (used, step) = p.feed(&bytes[consumed..arrived]);
            consumed += used;
            match step {
                Step::Done(r) => return Some((r, consumed)),
                Step::More if used == 0 || consumed == arrived => break,
                Step::More => {}
            }
        }
    }
    None
}
