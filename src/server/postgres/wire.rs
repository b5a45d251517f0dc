//! PostgreSQL's lean load client: the frontend/backend protocol over a plain socket, messages
//! encoded by `postgres-protocol` (the crate rust-postgres is built on), sending what libpq
//! sends for the same calls, in pgbench's three modes (`QueryMode`): text, one simple Query
//! with the values written in (pgbench -M simple, PQexec); prepared, each statement parsed
//! once per connection (BEGIN and COMMIT too) and then per query one write of Bind, Describe,
//! Execute and Sync with the parameters as text (the server infers their types), as
//! PQexecPrepared sends it (pgbench -M prepared); extended, the unnamed statement parsed with
//! each execution (PQexecParams, pgbench -M extended). Answers are read until ReadyForQuery;
//! rows skipped where they arrive. Login: trust, password, md5 and SCRAM-SHA-256; TLS when
//! the URL asks (`tls`).

use super::tls::Tls;
use crate::client::connection::{DbError, Kind, Stmt, Value};
use crate::client::lean::{Conn, Protocol, Request, Step, Stream, io_lost, lost, skip_on};
use crate::client::mode::{QueryMode, Template, write_int};
use bytes::BytesMut;
use postgres::config::Host;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::frontend;
use rustls::pki_types::ServerName;
use std::io::{Read, Write};
use std::time::Duration;

/// A statement of the session, by its handle.
#[derive(Debug)]
enum Statement {
    /// Parsed once on the server under this name (`s0`, `s1`…).
    Named(String),
    /// Parsed as the unnamed statement with every execution: its text, `$n` placeholders.
    Unnamed(String),
    /// The text mode's: written out with its values at each execution.
    Text(Template),
}

/// The lean client's protocol state.
pub struct PgWire {
    /// How the workload's statements are sent.
    mode: QueryMode,
    /// The session's statements, by handle.
    statements: Vec<Statement>,
    scratch: BytesMut,
    /// Bytes of the current message still to skip (a row larger than what has arrived).
    skip: usize,
    /// The answer's error, reported at ReadyForQuery.
    error: Option<DbError>,
}

/// BEGIN and COMMIT, prepared at login in the prepared mode.
const BEGIN: &str = "b";
const COMMIT: &str = "c";

impl PgWire {
    fn new(mode: QueryMode) -> PgWire {
        PgWire {
            mode,
            statements: vec![],
            scratch: BytesMut::with_capacity(256),
            skip: 0,
            error: None,
        }
    }
}

/// Move what `postgres-protocol` encoded into `buf` to `out`.
fn flush_into(buf: &mut BytesMut, out: &mut Vec<u8>) {
    out.extend_from_slice(buf);
    buf.clear();
}

/// Bind + Execute + Sync of a statement (`name`; "" the unnamed one), text parameters, into
/// `buf`, then `out`. `describe`: as libpq, Bind asks for the results as text in one format
/// code and a Describe of the portal follows it (the server then sends the row description
/// with every execution).
fn run(buf: &mut BytesMut, name: &str, params: &[Value<'_>], describe: bool, out: &mut Vec<u8>) {
    let bound = frontend::bind(
        "",
        name,
        std::iter::empty(),
        params.iter(),
        |v, buf| {
            match *v {
                Value::Int(i) => std::fmt::Write::write_fmt(buf, format_args!("{i}"))?,
                Value::Text(s) => buf.extend_from_slice(s.as_bytes()),
                Value::Null => return Ok(postgres_protocol::IsNull::Yes),
            }
            Ok(postgres_protocol::IsNull::No)
        },
        describe.then_some(0i16),
        buf,
    );
    debug_assert!(bound.is_ok(), "text parameters always encode");
    if describe {
        let _ = frontend::describe(b'P', "", buf);
    }
    let _ = frontend::execute("", 0, buf);
    frontend::sync(buf);
    flush_into(buf, out);
}

/// A value as a literal in a statement's text, as libpq's PQescapeLiteral writes it: in
/// single quotes (doubled inside), as an escape string (E'...', backslashes doubled) when it
/// holds a backslash, whatever standard_conforming_strings says.
fn literal(v: &Value<'_>, out: &mut Vec<u8>) {
    match *v {
        Value::Int(i) => write_int(i, out),
        Value::Null => out.extend_from_slice(b"NULL"),
        Value::Text(s) => {
            let escape = s.contains('\\');
            if escape {
                out.push(b'E');
            }
            out.push(b'\'');
            for b in s.bytes() {
                if b == b'\'' || (escape && b == b'\\') {
                    out.push(b);
                }
                out.push(b);
            }
            out.push(b'\'');
        }
    }
}

/// An ErrorResponse's fields as a `DbError` ("message (SQLSTATE code)"); FATAL and PANIC
/// end the connection: lost.
fn error_of(body: &[u8]) -> DbError {
    let (mut message, mut code, mut severity) = ("", "", "");
    for field in body.split(|&b| b == 0) {
        if let Some((&t, v)) = field.split_first() {
            let v = std::str::from_utf8(v).unwrap_or("?");
            match t {
                b'M' => message = v,
                b'C' => code = v,
                b'V' => severity = v,
                b'S' if severity.is_empty() => severity = v,
                _ => {}
            }
        }
    }
    let kind = match (severity, code) {
        ("FATAL" | "PANIC", _) => Kind::Lost,
        (_, "42601") => Kind::Syntax,
        _ => Kind::Refused,
    };
    DbError {
        message: format!("{message} (SQLSTATE {code})"),
        kind,
    }
}

impl PgWire {
    /// A statement's text sent as one simple Query, into `out`.
    fn query(&mut self, sql: &[u8], out: &mut Vec<u8>) {
        let _ = frontend::query(&String::from_utf8_lossy(sql), &mut self.scratch);
        flush_into(&mut self.scratch, out);
    }

    /// BEGIN or COMMIT (`name`: its statement parsed at login) as this mode sends it.
    fn control(&mut self, name: &str, sql: &str, out: &mut Vec<u8>) {
        match self.mode {
            QueryMode::Text | QueryMode::PreparedUncached => self.query(sql.as_bytes(), out),
            QueryMode::Prepared => run(&mut self.scratch, name, &[], true, out),
            QueryMode::Extended => {
                let _ = frontend::parse("", sql, std::iter::empty(), &mut self.scratch);
                run(&mut self.scratch, "", &[], true, out);
            }
        }
    }
}

impl Protocol for PgWire {
    fn execute(&mut self, stmt: Stmt, params: &[Value<'_>], out: &mut Vec<u8>) {
        match &self.statements[stmt] {
            Statement::Named(name) => run(&mut self.scratch, name, params, true, out),
            Statement::Unnamed(sql) => {
                let _ = frontend::parse("", sql, std::iter::empty(), &mut self.scratch);
                run(&mut self.scratch, "", params, true, out);
            }
            Statement::Text(t) => {
                let mut sql = Vec::with_capacity(128);
                t.render(params, literal, &mut sql);
                self.query(&sql, out);
            }
        }
    }

    fn simple(&mut self, sql: &str, out: &mut Vec<u8>) {
        self.query(sql.as_bytes(), out);
    }

    fn statement(&mut self, sql: &str, out: &mut Vec<u8>) {
        // The unnamed statement: Parse + Bind + Execute + Sync, one statement or an error.
        let _ = frontend::parse("", sql, std::iter::empty(), &mut self.scratch);
        run(&mut self.scratch, "", &[], false, out);
    }

    fn read_only_sql(&self) -> &'static str {
        super::driver::READ_ONLY
    }

    fn prepare(&mut self, sql: &str, out: &mut Vec<u8>) {
        match self.mode {
            QueryMode::Text | QueryMode::PreparedUncached => {
                self.statements.push(Statement::Text(Template::new(sql)));
            }
            QueryMode::Extended => {
                let numbered = super::driver::number_placeholders(sql);
                self.statements.push(Statement::Unnamed(numbered));
            }
            QueryMode::Prepared => {
                self.prepare_as_is(&super::driver::number_placeholders(sql), out);
            }
        }
    }

    fn prepare_as_is(&mut self, sql: &str, out: &mut Vec<u8>) {
        let name = format!("s{}", self.statements.len());
        let _ = frontend::parse(&name, sql, std::iter::empty(), &mut self.scratch);
        frontend::sync(&mut self.scratch);
        flush_into(&mut self.scratch, out);
        self.statements.push(Statement::Named(name));
    }

    fn begin(&mut self, out: &mut Vec<u8>) {
        self.control(BEGIN, "BEGIN", out);
    }

    fn commit(&mut self, out: &mut Vec<u8>) {
        self.control(COMMIT, "COMMIT", out);
    }

    fn expect(&mut self, _request: Request) {
        self.skip = 0;
        self.error = None;
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
            let tag = rest[0];
            let total = 1 + u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
            match tag {
                b'Z' | b'E' if rest.len() < total => return (at, Step::More),
                b'Z' => {
                    let outcome = self.error.take().map_or(Ok(()), Err);
                    return (at + total, Step::Done(outcome));
                }
                b'E' => {
                    let e = error_of(&rest[5..total]);
                    at += total;
                    if e.lost() {
                        return (at, Step::Done(Err(e)));
                    }
                    self.error.get_or_insert(e);
                }
                b'G' | b'W' => {
                    let e = lost("COPY FROM STDIN is not something dbtax's clients send data for");
                    return (input.len(), Step::Done(Err(e)));
                }
                // Rows, descriptions, completions, notices: skipped, even half-arrived.
                _ => self.skip = total,
            }
        }
    }

    fn prepared(&mut self) -> Stmt {
        self.statements.len() - 1
    }
}

/// Read one whole backend message while logging in: (tag, body).
fn message(s: &mut Stream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    s.read_exact(&mut head)?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut body = vec![0; len.saturating_sub(4)];
    s.read_exact(&mut body)?;
    Ok((head[0], body))
}

fn refused(message: impl Into<String>) -> DbError {
    DbError {
        message: message.into(),
        kind: Kind::Refused,
    }
}

/// Open a lean connection as `config` says (unix socket, TCP, or TLS over TCP when `tls` is
/// given), log in, prepare BEGIN and COMMIT. `timeout`: how long a statement's answer may
/// take.
pub fn connect(
    config: &postgres::Config,
    tls: Option<&Tls>,
    mode: QueryMode,
    timeout: Duration,
) -> Result<Conn, DbError> {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let wait = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(Duration::from_secs(20));
    let mut stream = match config.get_hosts().first() {
        Some(Host::Unix(dir)) => Stream::unix(&dir.join(format!(".s.PGSQL.{port}")), wait),
        Some(Host::Tcp(h)) => Stream::tcp(h, port, wait),
        None => Stream::unix(
            &std::path::Path::new("/var/run/postgresql").join(format!(".s.PGSQL.{port}")),
            wait,
        ),
    }
    .map_err(|e| lost(format!("error connecting to server: {e}")))?;
    if let (Some(tls), Some(Host::Tcp(host))) = (tls, config.get_hosts().first()) {
        stream = start_tls(stream, tls, host)?;
    }
    let user = config.get_user().unwrap_or("postgres");
    let mut params = vec![("user", user), ("client_encoding", "UTF8")];
    if let Some(db) = config.get_dbname() {
        params.push(("database", db));
    }
    if let Some(app) = config.get_application_name() {
        params.push(("application_name", app));
    }
    let mut buf = BytesMut::new();
    let _ = frontend::startup_message(params.iter().copied(), &mut buf);
    login(&mut stream, config, user, buf).map_err(|e| match e.kind {
        Kind::Lost => e,
        _ => DbError {
            kind: Kind::Refused,
            ..e
        },
    })?;
    let mut conn = Conn::new(stream, Box::new(PgWire::new(mode)), timeout);
    if mode == QueryMode::Prepared {
        // pgbench -M prepared parses its BEGIN and END too.
        let mut first = BytesMut::new();
        let _ = frontend::parse(BEGIN, "BEGIN", std::iter::empty(), &mut first);
        let _ = frontend::parse(COMMIT, "COMMIT", std::iter::empty(), &mut first);
        frontend::sync(&mut first);
        conn.request(&first, Request::Run)?;
    }
    Ok(conn)
}

/// Ask for TLS (SSLRequest) and, when the server agrees, shake hands for `host`.
fn start_tls(mut stream: Stream, tls: &Tls, host: &str) -> Result<Stream, DbError> {
    let mut req = BytesMut::new();
    frontend::ssl_request(&mut req);
    stream.write_all(&req).map_err(io_lost)?;
    let mut answer = [0u8; 1];
    stream.read_exact(&mut answer).map_err(io_lost)?;
    if answer[0] != b'S' {
        return Err(refused(format!(
            "the server does not accept TLS connections (sslmode={}): it runs with ssl = off",
            tls.mode.name()
        )));
    }
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| refused(format!("{host} is not a name TLS can check: {e}")))?;
    stream
        .into_tls(tls.config.clone(), name)
        .map_err(|e| refused(format!("TLS with the server failed: {e}")))
}

/// The startup message in `buf`, then authentication until ReadyForQuery.
fn login(
    s: &mut Stream,
    config: &postgres::Config,
    user: &str,
    mut buf: BytesMut,
) -> Result<(), DbError> {
    let password = || {
        config.get_password().ok_or_else(|| {
            refused(format!(
                "password authentication failed: the server asks user \"{user}\" for a password \
                 and the target gives none"
            ))
        })
    };
    let mut scram: Option<sasl::ScramSha256> = None;
    loop {
        if !buf.is_empty() {
            s.write_all(&buf).map_err(io_lost)?;
            buf.clear();
        }
        let (tag, body) = message(s).map_err(io_lost)?;
        match tag {
            b'R' => {
                let code = body
                    .get(..4)
                    .map_or(-1, |c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                let data = body.get(4..).unwrap_or_default();
                match code {
                    0 => {}
                    3 => frontend::password_message(password()?, &mut buf).map_err(io_lost)?,
                    5 if data.len() >= 4 => {
                        let salt = [data[0], data[1], data[2], data[3]];
                        let hash = md5_hash(user.as_bytes(), password()?, salt);
                        frontend::password_message(hash.as_bytes(), &mut buf).map_err(io_lost)?;
                    }
                    10 => {
                        let offered = data.split(|&b| b == 0).any(|m| m == b"SCRAM-SHA-256");
                        if !offered {
                            return Err(refused("the server offers no SASL mechanism dbtax knows"));
                        }
                        let sc = sasl::ScramSha256::new(
                            password()?,
                            sasl::ChannelBinding::unsupported(),
                        );
                        frontend::sasl_initial_response("SCRAM-SHA-256", sc.message(), &mut buf)
                            .map_err(io_lost)?;
                        scram = Some(sc);
                    }
                    11 | 12 => {
                        let sc = scram
                            .as_mut()
                            .ok_or_else(|| refused("unexpected SASL message from the server"))?;
                        let step = if code == 11 {
                            sc.update(data)
                        } else {
                            sc.finish(data)
                        };
                        step.map_err(|e| refused(format!("SCRAM authentication failed: {e}")))?;
                        if code == 11 {
                            frontend::sasl_response(sc.message(), &mut buf).map_err(io_lost)?;
                        }
                    }
                    other => {
                        return Err(refused(format!(
                            "the server asks for an authentication method dbtax's clients do \
                             not speak (code {other})"
                        )));
                    }
                }
            }
            b'E' => return Err(error_of(&body)),
            b'Z' => return Ok(()),
            _ => {}
        }
    }
}

/// Lean sessions with this configuration (the workers' clients).
pub struct PgWireDialer {
    /// Where and who.
    pub config: postgres::Config,
    /// How long an answer may take.
    pub timeout: Duration,
    /// TLS, when the URL asks for it.
    pub tls: Option<Tls>,
    /// How the workload's statements are sent.
    pub mode: QueryMode,
}

impl crate::client::dial::Dialer for PgWireDialer {
    fn dial(&self) -> Result<crate::client::dial::Connection, DbError> {
        Ok(crate::client::dial::Connection::Lean(connect(
            &self.config,
            self.tls.as_ref(),
            self.mode,
            self.timeout,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::lean::drive;

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn row(len: usize) -> Vec<u8> {
        let mut body = 1u16.to_be_bytes().to_vec();
        body.extend_from_slice(&(len as u32).to_be_bytes());
        body.resize(body.len() + len, b'x');
        msg(b'D', &body)
    }

    fn error(severity: &str, code: &str, text: &str) -> Vec<u8> {
        let body = format!("S{severity}\0V{severity}\0C{code}\0M{text}\0\0");
        msg(b'E', body.as_bytes())
    }

    #[test]
    fn an_answer_completes_at_ready_for_query_however_it_arrives() {
        let mut answer = msg(b'2', b"");
        answer.extend(row(3_000_000));
        answer.extend(row(5));
        answer.extend(msg(b'C', b"SELECT 2\0"));
        answer.extend(msg(b'Z', b"I"));
        // A second answer behind it must be left alone.
        let mut both = answer.clone();
        both.extend(msg(b'Z', b"I"));
        for chunk in [1, 3, 4096, both.len()] {
            let bytes = if chunk == 1 { &answer[..] } else { &both[..] };
            let mut p = PgWire::new(QueryMode::Prepared);
            p.expect(Request::Run);
            let (outcome, used) = drive(&mut p, bytes, chunk).expect("completes");
            assert!(outcome.is_ok(), "{chunk}");
            assert_eq!(used, answer.len(), "{chunk}");
        }
    }

    #[test]
    fn errors_are_reported_at_ready_for_query_and_fatal_ones_at_once() {
        let mut answer = msg(b'2', b"");
        answer.extend(error("ERROR", "22012", "division by zero"));
        answer.extend(msg(b'Z', b"I"));
        for chunk in [1, 2, answer.len()] {
            let mut p = PgWire::new(QueryMode::Prepared);
            p.expect(Request::Run);
            let (outcome, used) = drive(&mut p, &answer, chunk).unwrap();
            let e = outcome.unwrap_err();
            assert_eq!(e.message, "division by zero (SQLSTATE 22012)");
            assert_eq!(e.kind, Kind::Refused);
            assert_eq!(used, answer.len());
        }
        let fatal = error(
            "FATAL",
            "57P01",
            "terminating connection due to administrator command",
        );
        let mut p = PgWire::new(QueryMode::Prepared);
        p.expect(Request::Run);
        let (outcome, _) = drive(&mut p, &fatal, 1).unwrap();
        assert!(outcome.unwrap_err().lost());
        let syntax = [error("ERROR", "42601", "syntax error"), msg(b'Z', b"I")].concat();
        let (outcome, _) = drive(&mut p, &syntax, 7).unwrap();
        assert_eq!(outcome.unwrap_err().kind, Kind::Syntax);
    }

    /// The message tags of a frontend stream.
    fn tags(out: &[u8]) -> Vec<u8> {
        let (mut at, mut tags) = (0, vec![]);
        while at < out.len() {
            tags.push(out[at]);
            at += 1 + u32::from_be_bytes(out[at + 1..at + 5].try_into().unwrap()) as usize;
        }
        tags
    }

    #[test]
    fn prepared_one_query_is_bind_describe_execute_sync_as_libpq_sends_it() {
        let mut p = PgWire::new(QueryMode::Prepared);
        let mut out = vec![];
        p.prepare("SELECT c FROM t WHERE id = ? AND k = ?", &mut out);
        assert!(String::from_utf8_lossy(&out).contains("SELECT c FROM t WHERE id = $1 AND k = $2"));
        out.clear();
        p.execute(0, &[Value::Int(-42), Value::Text("abc")], &mut out);
        // PQexecPrepared: Bind (results in one format code, text), Describe the portal
        // (the server sends the row description every time), Execute, Sync.
        assert_eq!(tags(&out), b"BDES");
        let bind_len = u32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
        assert_eq!(&out[1 + bind_len - 4..1 + bind_len], &[0, 1, 0, 0]);
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("-42") && text.contains("abc"), "{text}");
        out.clear();
        p.begin(&mut out);
        assert_eq!(tags(&out), b"BDES");
    }

    #[test]
    fn extended_parses_the_unnamed_statement_with_every_execution() {
        let mut p = PgWire::new(QueryMode::Extended);
        let mut out = vec![];
        p.prepare("SELECT c FROM t WHERE id = ?", &mut out);
        assert!(out.is_empty(), "nothing is prepared ahead");
        for _ in 0..2 {
            p.execute(0, &[Value::Int(7)], &mut out);
            assert_eq!(tags(&out), b"PBDES");
            assert!(String::from_utf8_lossy(&out).contains("WHERE id = $1"));
            out.clear();
        }
    }

    #[test]
    fn text_sends_one_simple_query_with_the_values_written_in() {
        let mut p = PgWire::new(QueryMode::Text);
        let mut out = vec![];
        p.prepare(
            "SELECT c FROM t WHERE id = ? AND c = ? AND d = ? AND e = ?",
            &mut out,
        );
        assert!(out.is_empty());
        let values = [
            Value::Int(5),
            Value::Text("it's"),
            Value::Text("a\\b"),
            Value::Null,
        ];
        p.execute(0, &values, &mut out);
        assert_eq!(tags(&out), b"Q");
        assert_eq!(
            String::from_utf8_lossy(&out[5..out.len() - 1]),
            "SELECT c FROM t WHERE id = 5 AND c = 'it''s' AND d = E'a\\\\b' AND e = NULL"
        );
        out.clear();
        p.commit(&mut out);
        assert_eq!(&out[5..out.len() - 1], b"COMMIT");
    }
}
