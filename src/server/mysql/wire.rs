//! The MySQL family's lean load client: the client/server protocol over a plain socket, the
//! handshake's packets and password scrambles from `mysql_common` (the crate the mysql
//! driver is built on), sending what libmariadb sends for the same calls. In the text mode
//! (`QueryMode::Text`) each execution is one COM_QUERY with its values written in, as
//! mysql_query() after a connector's own escaping; prepared, each statement is prepared once
//! per connection (COM_STMT_PREPARE) and run with one COM_STMT_EXECUTE per query (integers as
//! BIGINT, text as strings, the parameter types with a statement's first execution only, as
//! libmariadb's mysql_stmt_execute sends them); BEGIN and COMMIT as text. The handshake
//! declares what libmariadb declares that the server feels per query (session tracking,
//! MariaDB's metadata cache unless `PreparedUncached`), never multi-statements or LOCAL
//! INFILE. Answers are read to their last EOF, rows skipped where they arrive. Login:
//! mysql_native_password and caching_sha2_password (fast path; the full path sends the
//! password over a unix socket, RSA-encrypted over TCP), with an auth switch when asked.

use crate::client::connection::{DbError, Kind, Stmt, Value};
use crate::client::lean::{Conn, Protocol, Request, Step, Stream, io_lost, lost, skip_on};
use crate::client::mode::{QueryMode, Template, write_int};
use mysql_common::constants::{CapabilityFlags, MariadbCapabilities};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;
use std::io::{Read, Write};
use std::time::Duration;

const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
/// A packet this long continues in the next one.
const MAX_PAYLOAD: usize = 0xFF_FFFF;
/// In an OK or EOF packet's status: another result set follows.
const MORE_RESULTS: u16 = 0x0008;

/// Where in an answer the parser is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// The answer's (or the next result's) first packet.
    First,
    /// Packets to pass over (column or parameter definitions, with their EOFs), then
    /// `then_rows`: rows follow, or the answer is done.
    Count { left: u64, then_rows: bool },
    /// Rows until an EOF or an error.
    Rows,
}

/// A statement of the session, by its handle.
#[derive(Debug)]
enum Statement {
    /// Prepared on the server.
    Server {
        /// The server's id for it.
        id: u32,
        /// Its placeholders.
        params: u16,
        /// Its parameters' types as last sent (empty: not sent yet). libmariadb and
        /// libmysqlclient send them with a statement's first execution and again only when
        /// the application binds other types; the server sets up its conversions again
        /// whenever they come.
        sent_types: Vec<u8>,
    },
    /// The text mode's: written out with its values at each execution.
    Text(Template),
}

/// The lean client's protocol state.
pub struct MyWire {
    /// How the workload's statements are sent.
    mode: QueryMode,
    /// The session's statements, by handle.
    statements: Vec<Statement>,

    request: Request,
    state: State,
    /// Bytes of the current packet still to skip.
    skip: usize,
    /// The packet being skipped has the maximum length: the next one continues it.
    continued: bool,
    /// MariaDB's MARIADB_CLIENT_CACHE_METADATA was agreed: a result's column count is
    /// followed by a byte saying whether its definitions follow (an executed statement's do
    /// not, unless they changed), as sysbench's libmariadb asks.
    cache_metadata: bool,
    /// Rows of the current answer so far (counted as they are skipped).
    rows: u64,
}

fn packet(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    body(out);
    let len = (out.len() - at - 4).min(MAX_PAYLOAD) as u32;
    out[at..at + 3].copy_from_slice(&len.to_le_bytes()[..3]);
}

fn lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// Read a length-encoded integer at `b[*at]`.
fn read_lenenc(b: &[u8], at: &mut usize) -> u64 {
    let first = b.get(*at).copied().unwrap_or(0);
    let width = match first {
        0xFC => 2,
        0xFD => 3,
        0xFE => 8,
        _ => {
            *at += 1;
            return u64::from(first);
        }
    };
    let mut v = [0u8; 8];
    let bytes = b.get(*at + 1..*at + 1 + width).unwrap_or_default();
    v[..bytes.len()].copy_from_slice(bytes);
    *at += 1 + width;
    u64::from_le_bytes(v)
}

/// An ERR packet's payload as a `DbError` ("message (error N)").
fn error_of(p: &[u8]) -> DbError {
    let code = u16::from_le_bytes([
        p.get(1).copied().unwrap_or(0),
        p.get(2).copied().unwrap_or(0),
    ]);
    let text = p.get(3..).unwrap_or_default();
    let text = match text.first() {
        Some(b'#') => text.get(6..).unwrap_or_default(),
        _ => text,
    };
    let kind = match code {
        1064 | 1149 => Kind::Syntax,
        1295 => Kind::NotPreparable,
        // The connection was killed, the server shuts down, a client timeout: it closes.
        1927 | 1053 | 4031 => Kind::Lost,
        _ => Kind::Refused,
    };
    DbError {
        message: format!("{} (error {code})", String::from_utf8_lossy(text)),
        kind,
    }
}

impl MyWire {
    fn new(mode: QueryMode, cache_metadata: bool) -> MyWire {
        MyWire {
            mode,
            statements: vec![],
            request: Request::Run,
            state: State::First,
            skip: 0,
            continued: false,
            cache_metadata,
            rows: 0,
        }
    }

    /// One whole packet's payload (`p`) decided on: Some(outcome) ends the answer.
    fn on_packet(&mut self, p: &[u8]) -> Option<Result<(), DbError>> {
        let first = p.first().copied().unwrap_or(0);
        let status = |at: usize| u16::from_le_bytes([p[at], p[at + 1]]);
        match self.state {
            State::First if first == 0xFF => Some(Err(self.failed(p))),
            State::First if self.request == Request::Prepare && first == 0x00 && p.len() >= 12 => {
                let id = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
                let columns = u64::from(u16::from_le_bytes([p[5], p[6]]));
                let params = u16::from_le_bytes([p[7], p[8]]);
                self.statements.push(Statement::Server {
                    id,
                    params,
                    sent_types: vec![],
                });
                let defs = |n: u64| if n > 0 { n + 1 } else { 0 };
                let left = defs(u64::from(params)) + defs(columns);
                if left == 0 {
                    return Some(Ok(()));
                }
                self.state = State::Count {
                    left,
                    then_rows: false,
                };
                None
            }
            State::First if first == 0x00 => {
                // OK: affected rows, insert id, then the status.
                let mut at = 1;
                read_lenenc(p, &mut at);
                read_lenenc(p, &mut at);
                let more = p.len() >= at + 2 && status(at) & MORE_RESULTS != 0;
                (!more).then_some(Ok(()))
            }
            State::First if first == 0xFB => Some(Err(lost(
                "the server asks for a LOCAL INFILE, which dbtax's clients do not send",
            ))),
            State::First => {
                let mut at = 0;
                let columns = read_lenenc(p, &mut at);
                // Cached metadata: no definitions, only the EOF that ends them.
                let defs = if self.cache_metadata && p.get(at) == Some(&0) {
                    0
                } else {
                    columns
                };
                self.state = State::Count {
                    left: defs + 1,
                    then_rows: true,
                };
                None
            }
            State::Count { left, then_rows } => {
                self.state = match (left - 1, then_rows) {
                    (0, true) => State::Rows,
                    (0, false) => return Some(Ok(())),
                    (left, then_rows) => State::Count { left, then_rows },
                };
                None
            }
            State::Rows if first == 0xFF => Some(Err(self.failed(p))),
            State::Rows => {
                // The EOF after the rows (a row never starts with 0xFE below 9 bytes).
                let more = p.len() >= 5 && status(3) & MORE_RESULTS != 0;
                self.state = State::First;
                (!more).then_some(Ok(()))
            }
        }
    }

    /// An ERR packet ends the answer. Requests encoded ahead of this one and never sent
    /// (the rest of an event) may have been the ones to carry a statement's types: every
    /// statement sends them again with its next execution.
    fn failed(&mut self, p: &[u8]) -> DbError {
        for s in &mut self.statements {
            if let Statement::Server { sent_types, .. } = s {
                sent_types.clear();
            }
        }
        error_of(p)
    }

    /// A prepared statement's execution (COM_STMT_EXECUTE) into `b`, a packet's payload.
    fn execute_prepared(&mut self, stmt: Stmt, params: &[Value<'_>], b: &mut Vec<u8>) {
        let Statement::Server {
            id,
            params: n,
            sent_types,
        } = &mut self.statements[stmt]
        else {
            return;
        };
        b.push(COM_STMT_EXECUTE);
        b.extend_from_slice(&id.to_le_bytes());
        b.push(0); // no cursor
        b.extend_from_slice(&1u32.to_le_bytes());
        if *n == 0 {
            return;
        }
        let nulls = b.len();
        b.extend(std::iter::repeat_n(0u8, params.len().div_ceil(8)));
        for (i, p) in params.iter().enumerate() {
            if *p == Value::Null {
                b[nulls + i / 8] |= 1 << (i % 8);
            }
        }
        let types = params.iter().map(|p| match p {
            Value::Int(_) => 0x08,  // LONGLONG
            Value::Text(_) => 0xFD, // VAR_STRING
            Value::Null => 0x06,    // NULL
        });
        if sent_types.iter().copied().eq(types.clone()) {
            b.push(0); // the types sent before still hold
        } else {
            sent_types.clear();
            sent_types.extend(types);
            b.push(1); // types follow: type and flags (signed) per parameter
            for &ty in sent_types.iter() {
                b.extend_from_slice(&[ty, 0]);
            }
        }
        for p in params {
            match *p {
                Value::Int(i) => b.extend_from_slice(&i.to_le_bytes()),
                Value::Text(s) => {
                    lenenc(b, s.len() as u64);
                    b.extend_from_slice(s.as_bytes());
                }
                Value::Null => {}
            }
        }
    }

    /// A packet whose payload starts with `first` and runs `len` bytes can be skipped
    /// before it has all arrived (a row, a definition).
    fn skippable(&self, first: u8, len: usize) -> bool {
        match self.state {
            State::Count { .. } => len >= 16,
            State::Rows => first != 0xFF && !(first == 0xFE && len < 9),
            State::First => false,
        }
    }
}

impl Protocol for MyWire {
    fn read_only_sql(&self) -> &'static str {
        super::driver::READ_ONLY
    }

    fn execute(&mut self, stmt: Stmt, params: &[Value<'_>], out: &mut Vec<u8>) {
        packet(out, |b| match &self.statements[stmt] {
            Statement::Text(t) => {
                b.push(COM_QUERY);
                t.render(params, literal, b);
            }
            Statement::Server { .. } => self.execute_prepared(stmt, params, b),
        });
    }

    fn simple(&mut self, sql: &str, out: &mut Vec<u8>) {
        packet(out, |b| {
            b.push(COM_QUERY);
            b.extend_from_slice(sql.as_bytes());
        });
    }

    fn prepare(&mut self, sql: &str, out: &mut Vec<u8>) {
        if self.mode == QueryMode::Text {
            self.statements.push(Statement::Text(Template::new(sql)));
        } else {
            self.prepare_as_is(sql, out);
        }
    }

    fn prepare_as_is(&mut self, sql: &str, out: &mut Vec<u8>) {
        packet(out, |b| {
            b.push(COM_STMT_PREPARE);
            b.extend_from_slice(sql.as_bytes());
        });
    }

    fn begin(&mut self, out: &mut Vec<u8>) {
        self.simple("BEGIN", out);
    }

    fn commit(&mut self, out: &mut Vec<u8>) {
        self.simple("COMMIT", out);
    }

    fn expect(&mut self, request: Request) {
        self.request = request;
        self.state = State::First;
        self.skip = 0;
        self.continued = false;
        self.rows = 0;
    }

    fn feed(&mut self, input: &[u8]) -> (usize, Step) {
        let mut at = 0;
        loop {
            if skip_on(&mut self.skip, input, &mut at) {
                return (at, Step::More);
            }
            let rest = &input[at..];
            if rest.len() < 5 {
                return (at, Step::More);
            }
            let len = u32::from_le_bytes([rest[0], rest[1], rest[2], 0]) as usize;
            let was_continued = self.continued;
            if was_continued || self.skippable(rest[4], len) {
                // A row, or a definition that is not the last (that one is an EOF).
                self.continued = len == MAX_PAYLOAD;
                if !was_continued && matches!(self.state, State::Count { .. }) {
                    self.on_packet(&[]);
                } else if !was_continued && self.state == State::Rows {
                    self.rows += 1;
                }
                self.skip = 4 + len;
                continue;
            }
            if rest.len() < 4 + len {
                return (at, Step::More);
            }
            at += 4 + len;
            if let Some(outcome) = self.on_packet(&rest[4..4 + len]) {
                return (at, Step::Done(outcome));
            }
        }
    }

    fn prepared(&mut self) -> Stmt {
        self.statements.len() - 1
    }

    fn rows(&self) -> Option<u64> {
        Some(self.rows)
    }
}

/// A value as a literal in a statement's text, as a connector that emulates prepared
/// statements writes it: a string in single quotes (doubled inside), or, when it holds a
/// backslash or a NUL, in hexadecimal, whose meaning no SQL mode changes (a backslash escapes
/// in single quotes unless NO_BACKSLASH_ESCAPES is set).
fn literal(v: &Value<'_>, out: &mut Vec<u8>) {
    match *v {
        Value::Int(i) => write_int(i, out),
        Value::Null => out.extend_from_slice(b"NULL"),
        Value::Text(s) if s.bytes().any(|b| b == b'\\' || b == 0) => {
            out.extend_from_slice(b"X'");
            for b in s.bytes() {
                out.extend_from_slice(format!("{b:02x}").as_bytes());
            }
            out.push(b'\'');
        }
        Value::Text(s) => {
            out.push(b'\'');
            for b in s.bytes() {
                if b == b'\'' {
                    out.push(b'\'');
                }
                out.push(b);
            }
            out.push(b'\'');
        }
    }
}

/// Read one packet while logging in: (sequence id, payload).
fn read_packet(s: &mut Stream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 4];
    s.read_exact(&mut head)?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
    let mut body = vec![0; len];
    s.read_exact(&mut body)?;
    Ok((head[3], body))
}

fn write_packet(s: &mut Stream, seq: u8, payload: &[u8]) -> Result<(), DbError> {
    let mut out = Vec::with_capacity(payload.len() + 4);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
    out.push(seq);
    out.extend_from_slice(payload);
    s.write_all(&out).map_err(io_lost)
}

fn refused(message: impl Into<String>) -> DbError {
    DbError {
        message: message.into(),
        kind: Kind::Refused,
    }
}

/// Open a lean connection as `opts` say (socket, else TCP; no TLS) and log in; its
/// statements are sent as `mode` says.
pub fn connect(opts: &mysql::Opts, mode: QueryMode, timeout: Duration) -> Result<Conn, DbError> {
    let wait = opts
        .get_tcp_connect_timeout()
        .unwrap_or(Duration::from_secs(20));
    let unix = opts.get_socket().is_some();
    let mut s = match opts.get_socket() {
        Some(path) => Stream::unix(std::path::Path::new(path), wait),
        None => Stream::tcp(&opts.get_ip_or_hostname(), opts.get_tcp_port(), wait),
    }
    .map_err(|e| lost(format!("error connecting to server: {e}")))?;
    let (_, hello) = read_packet(&mut s).map_err(io_lost)?;
    if hello.first() == Some(&0xFF) {
        return Err(error_of(&hello));
    }
    let hs: HandshakePacket<'_> = ParseBuf(&hello)
        .parse(())
        .map_err(|e| lost(format!("unreadable handshake from the server: {e}")))?;
    let nonce = hs.nonce();
    let pass = opts.get_pass();
    let db = opts.get_db_name();
    let wanted = CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_SESSION_TRACK
        | CapabilityFlags::CLIENT_CONNECT_ATTRS
        | if db.is_some() {
            CapabilityFlags::CLIENT_CONNECT_WITH_DB
        } else {
            CapabilityFlags::empty()
        };
    let caps = wanted & hs.capabilities();
    // A MariaDB server (it clears CLIENT_MYSQL, the long-password bit) keeps an executed
    // statement's column definitions to itself once the client has them: less work per query
    // for it, as for sysbench's libmariadb (not for libmysqlclient: `PreparedUncached`).
    let cache = if mode == QueryMode::PreparedUncached
        || hs
            .capabilities()
            .contains(CapabilityFlags::CLIENT_LONG_PASSWORD)
    {
        MariadbCapabilities::empty()
    } else {
        hs.mariadb_ext_capabilities() & MariadbCapabilities::MARIADB_CLIENT_CACHE_METADATA
    };
    let mut plugin = hs
        .auth_plugin_name_ref()
        .map(AuthPlugin::from_bytes)
        .unwrap_or(AuthPlugin::MysqlNativePassword)
        .into_owned();
    let data = plugin.gen_data(pass, &nonce);
    let mut scramble = vec![];
    if let Some(d) = &data {
        d.serialize(&mut scramble);
    }
    let response = HandshakeResponse::new(
        Some(scramble),
        hs.server_version_parsed().unwrap_or((5, 5, 5)),
        opts.get_user().map(str::as_bytes),
        db.map(str::as_bytes),
        Some(plugin.clone()),
        caps,
        Some(connect_attributes()),
        16 * 1024 * 1024,
    )
    .with_mariadb_ext_capabilities(cache);
    let mut payload = vec![];
    response.serialize(&mut payload);
    write_packet(&mut s, 1, &payload)?;
    let mut nonce = nonce;
    loop {
        let (seq, p) = read_packet(&mut s).map_err(io_lost)?;
        let next = seq.wrapping_add(1);
        match p.first() {
            Some(0x00) => break,
            Some(0xFF) => {
                let e = error_of(&p);
                return Err(refused(e.message));
            }
            Some(0xFE) => {
                // Auth switch: plugin name, then the new nonce.
                let body = &p[1..];
                let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
                plugin = AuthPlugin::from_bytes(&body[..end]).into_owned();
                let rest = body.get(end + 1..).unwrap_or_default();
                nonce = rest.strip_suffix(&[0]).unwrap_or(rest).to_vec();
                let mut answer = vec![];
                if let Some(d) = plugin.gen_data(pass, &nonce) {
                    d.serialize(&mut answer);
                }
                write_packet(&mut s, next, &answer)?;
            }
            Some(0x01) if plugin == AuthPlugin::CachingSha2Password => match p.get(1) {
                Some(3) => {} // fast auth done; OK follows
                Some(4) if unix => {
                    let mut clear = pass.unwrap_or("").as_bytes().to_vec();
                    clear.push(0);
                    write_packet(&mut s, next, &clear)?;
                }
                Some(4) => write_packet(&mut s, next, &[2])?, // the server's public key
                _ => {
                    // The public key, PEM.
                    let mut clear = pass.unwrap_or("").as_bytes().to_vec();
                    clear.push(0);
                    for (i, b) in clear.iter_mut().enumerate() {
                        *b ^= nonce[i % nonce.len().max(1)];
                    }
                    let sealed = mysql_common::crypto::encrypt(&clear, &p[1..]);
                    write_packet(&mut s, next, &sealed)?;
                }
            },
            _ => {
                return Err(refused(format!(
                    "the server asks for an authentication method dbtax's clients do not \
                     speak ({})",
                    String::from_utf8_lossy(plugin.as_bytes())
                )));
            }
        }
    }
    Ok(Conn::new(
        s,
        Box::new(MyWire::new(mode, !cache.is_empty())),
        timeout,
    ))
}

/// What the session tells the server about its client (performance_schema's
/// session_connect_attrs shows it): dbtax's sessions can be told from an application's.
fn connect_attributes() -> std::collections::HashMap<String, String> {
    [
        ("_client_name", "dbtax"),
        ("_client_version", env!("CARGO_PKG_VERSION")),
        ("program_name", "dbtax"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Lean sessions with these options (the workers' clients).
pub struct MyWireDialer {
    /// Where, who, which database.
    pub opts: mysql::Opts,
    /// How the workload's statements are sent.
    pub mode: QueryMode,
    /// How long an answer may take.
    pub timeout: Duration,
}

impl crate::client::dial::Dialer for MyWireDialer {
    fn dial(&self) -> Result<crate::client::dial::Connection, DbError> {
        Ok(crate::client::dial::Connection::Lean(connect(
            &self.opts,
            self.mode,
            self.timeout,
        )?))
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
