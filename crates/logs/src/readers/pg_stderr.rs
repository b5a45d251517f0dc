//! PostgreSQL's statement logs read as a stream: the stderr format (`log_destination=stderr`,
//! one message per line, a statement's later lines indented by a tab) and csvlog (one record
//! per message, quoted fields that may hold newlines). What a replay needs is the session of
//! each message: csvlog has it (`session_id`); in the stderr format it is `%c` in
//! `log_line_prefix` when there, else the process id (`%p`, Debian's default prefix has it),
//! which names a session as long as it lives. Statements are `statement: …` and `execute
//! <name>: …` messages (log_statement, with or without `duration: … ms` in front from
//! log_min_duration_statement), their `$n` parameters filled in from the DETAIL that follows
//! (`parameters: $1 = '5', $2 = NULL`); `connection authorized: … database=D` starts a
//! session, `disconnection:` ends it. An ERROR's `STATEMENT:` line repeats a statement that
//! was logged already and is not replayed twice. csvlog's reader is `csvlog`.

use crate::readers::pg_prefix::{read_prefix, split_message};
use crate::{Entry, LogReader, Malformed, MalformedLines, Param, What};
use std::collections::VecDeque;
use std::io::BufRead;

/// What a LOG message means for a replay; None: nothing (a checkpoint, a duration alone).
pub(super) fn what_of(message: &str) -> Option<What> {
    let mut m = message;
    if let Some(rest) = m.strip_prefix("duration: ") {
        // "duration: 0.123 ms  statement: …" (or the duration alone; one space after "ms"
        // in a log some tool rewrote).
        m = rest.split_once(" ms ").map(|(_, r)| r.trim_start())?;
    }
    if let Some(sql) = m.strip_prefix("statement: ") {
        return Some(What::Query(sql.to_string()));
    }
    if let Some(rest) = m.strip_prefix("execute ") {
        let (_, sql) = rest.split_once(": ")?;
        return Some(What::Execute(sql.to_string()));
    }
    if let Some(rest) = m.strip_prefix("connection authorized: ") {
        let db = rest
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix("database="))
            .map(str::to_string);
        return Some(What::Connect { db });
    }
    if m.starts_with("disconnection: ") {
        return Some(What::Quit);
    }
    None
}

/// `$1 = '5', $2 = NULL` → [(1, "'5'"), (2, "NULL")].
pub(super) fn parse_parameters(s: &str) -> Vec<(usize, String)> {
    let b: Vec<char> = s.chars().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i] == ',' || b[i].is_whitespace()) {
            i += 1;
        }
        if i >= b.len() || b[i] != '$' {
            break;
        }
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let Ok(n) = b[start..i].iter().collect::<String>().parse::<usize>() else {
            break;
        };
        let rest: String = b[i..].iter().take(3).collect();
        if rest != " = " {
            break;
        }
        i += 3;
        let mut value = String::new();
        if b.get(i) == Some(&'\'') {
            value.push('\'');
            i += 1;
            while i < b.len() {
                if b[i] == '\'' && b.get(i + 1) == Some(&'\'') {
                    value.push_str("''");
                    i += 2;
                } else if b[i] == '\'' {
                    i += 1;
                    break;
                } else {
                    value.push(b[i]);
                    i += 1;
                }
            }
            value.push('\'');
        } else {
            while i < b.len() && b[i] != ',' {
                value.push(b[i]);
                i += 1;
            }
        }
        out.push((n, value.trim().to_string()));
    }
    out
}

/// An execute's statement (`sql`) given the values its DETAIL message lists, if any: filled
/// in (`substitute`), and returned as prepared with them (`bound`) when they fit. For every
/// reader of PostgreSQL's logs.
pub(super) fn with_values(sql: &mut String, detail: Option<&str>) -> Option<Box<crate::Bound>> {
    let params = detail
        .and_then(|d| d.strip_prefix("parameters: "))
        .map(parse_parameters)
        .unwrap_or_default();
    let prepared = bound(sql, &params);
    if !params.is_empty() {
        *sql = substitute(sql, &params);
    }
    prepared
}

/// An execute's statement and its DETAIL's values (`parse_parameters`) as a `Bound`, when
/// they fit: the values are numbered 1, 2… and every `$n` the statement uses has one. A value
/// is unquoted text (PostgreSQL's clients send text and the server types it); `NULL` is NULL.
fn bound(template: &str, params: &[(usize, String)]) -> Option<Box<crate::Bound>> {
    let numbered = params.iter().enumerate().all(|(i, (n, _))| *n == i + 1);
    if !numbered || highest_placeholder(template) > params.len() {
        return None;
    }
    let params = params
        .iter()
        .map(
            |(_, v)| match v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
                Some(inner) => Param::Text(inner.replace("''", "'")),
                None if v == "NULL" => Param::Null,
                None => Param::Text(v.clone()),
            },
        )
        .collect();
    Some(Box::new(crate::Bound {
        template: template.to_string(),
        params,
    }))
}

/// The highest `$n` outside quotes in `sql` (0: none).
fn highest_placeholder(sql: &str) -> usize {
    let b = sql.as_bytes();
    let (mut quote, mut high, mut i) = (None, 0, 0);
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                high = high.max(sql[start..i].parse().unwrap_or(usize::MAX));
                continue;
            }
            None => {}
        }
        i += 1;
    }
    high
}

/// `sql` with each `$n` outside quotes replaced by its value.
pub(super) fn substitute(sql: &str, params: &[(usize, String)]) -> String {
    let b: Vec<char> = sql.chars().collect();
    let mut out = String::with_capacity(sql.len() + 16);
    let mut quoted = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '\'' {
            quoted = !quoted;
        }
        if c == '$' && !quoted && b.get(i + 1).is_some_and(char::is_ascii_digit) {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let n: usize = b[start..j].iter().collect::<String>().parse().unwrap_or(0);
            if let Some((_, v)) = params.iter().find(|(k, _)| *k == n) {
                out.push_str(v);
                i = j;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Entries waiting for what may still belong to them: the DETAIL with an execute's values,
/// a statement's later lines. In the stderr format a message's later lines follow it, so one
/// entry waits at a time; behind a syslog header (`pgsyslog`) another process's lines may
/// come between, and each session's last entry waits until that session's next message (or
/// until `STALE` lines have passed).
#[derive(Default)]
struct Assembler {
    /// (entry, its DETAIL), oldest first.
    pending: VecDeque<(Entry, Option<String>)>,
    ready: VecDeque<Entry>,
}

/// Lines after which an entry waiting for its later lines is taken as complete.
const STALE: u64 = 1000;

impl Assembler {
    /// Every waiting entry is complete.
    fn flush(&mut self) {
        while let Some(p) = self.pending.pop_front() {
            self.complete(p);
        }
    }

    /// `session`'s waiting entry is complete (and any that waited too long).
    fn flush_session(&mut self, session: u64, line: u64) {
        let mut keep = VecDeque::new();
        while let Some(p) = self.pending.pop_front() {
            if p.0.session == session || p.0.line + STALE < line {
                self.complete(p);
            } else {
                keep.push_back(p);
            }
        }
        self.pending = keep;
    }

    fn complete(&mut self, (mut e, detail): (Entry, Option<String>)) {
        if let What::Execute(sql) = &mut e.what {
            e.bound = with_values(sql, detail.as_deref());
        }
        self.ready.push_back(e);
    }

    /// One message, which waits for its later lines.
    fn message(&mut self, e: Entry) {
        self.pending.push_back((e, None));
    }

    /// A DETAIL message of `session`: its waiting execute's values.
    fn detail(&mut self, session: u64, text: &str) {
        if let Some(p) = self
            .pending
            .iter_mut()
            .rev()
            .find(|p| p.0.session == session)
        {
            p.1 = Some(text.to_string());
        }
    }

    /// A line continuing the message before it (`session`'s, when the line says whose).
    fn more(&mut self, session: Option<u64>, text: &str) {
        let waiting = match session {
            Some(s) => self.pending.iter_mut().rev().find(|p| p.0.session == s),
            None => self.pending.back_mut(),
        };
        match waiting {
            Some((_, Some(d))) => crate::append_line(d, text),
            Some((
                Entry {
                    what: What::Query(s) | What::Execute(s),
                    ..
                },
                None,
            )) => crate::append_line(s, text),
            _ => {}
        }
    }
}

/// Reads a stderr-format log.
pub struct PgStderrLog<R> {
    input: R,
    buf: Vec<u8>,
    line_no: u64,
    /// Whether the message being read is one whose later lines matter.
    in_message: bool,
    out: Assembler,
    /// Lines that belonged to nothing.
    pub malformed: MalformedLines,
    done: bool,
    /// The server's `log_line_prefix` as the user gave it (`--log-line-prefix`).
    prefix: Option<crate::readers::pg_prefix::Prefix>,
    /// Each session key's generation (a new one at each connection on a process id seen
    /// before) and whether a message of it was seen since.
    sessions: std::collections::HashMap<u64, (u32, bool)>,
}

impl<R: BufRead> PgStderrLog<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> Self {
        PgStderrLog {
            input,
            buf: Vec::with_capacity(4096),
            line_no: 0,
            in_message: false,
            out: Assembler::default(),
            malformed: MalformedLines::default(),
            done: false,
            sessions: Default::default(),
            prefix: None,
        }
    }

    /// A reader of `input` whose lines start with `prefix` (`--log-line-prefix`).
    pub fn with_prefix(input: R, prefix: crate::readers::pg_prefix::Prefix) -> Self {
        PgStderrLog {
            prefix: Some(prefix),
            ..Self::new(input)
        }
    }

    fn read_line(&mut self) {
        // The line read in place (no copy when it is UTF-8), its buffer lent back after.
        let buf = std::mem::take(&mut self.buf);
        self.read_text(&crate::text(&buf));
        self.buf = buf;
    }

    fn read_text(&mut self, text: &str) {
        let line = text.trim_end_matches('\n').trim_end_matches('\r');
        if let Some(h) = crate::readers::pg_syslog::header(line) {
            return self.read_shipped(h);
        }
        if let Some(more) = line.strip_prefix('\t') {
            if self.in_message {
                self.out.more(None, more);
            }
            return;
        }
        let Some((told, severity, message)) = self.split(line) else {
            self.not_a_line(line);
            return;
        };
        self.message(told, (severity, message), false);
    }

    /// A line's session, database and time, severity and message: by the prefix the user
    /// gave (`--log-line-prefix`), else as `read_prefix` recognises it.
    #[allow(clippy::type_complexity)]
    fn split<'a>(
        &self,
        line: &'a str,
    ) -> Option<((Option<u64>, Option<String>, Option<i64>), &'a str, &'a str)> {
        match &self.prefix {
            Some(p) => {
                let (f, rest) = p.read(line)?;
                let (before, severity, message) = split_message(rest)?;
                before
                    .trim()
                    .is_empty()
                    .then_some(((f.session, f.db, f.at_us), severity, message))
            }
            None => {
                let (prefix, severity, message) = split_message(line)?;
                Some((read_prefix(prefix), severity, message))
            }
        }
    }

    fn not_a_line(&mut self, line: &str) {
        if !line.trim().is_empty() {
            self.malformed.push(Malformed {
                line: self.line_no,
                why: "not a log line (no LOG:, DETAIL:… after a prefix), and not a \
                      statement's next line",
            });
        }
    }

    /// A line behind a syslog or logplex header (`pgsyslog`): a message with its own prefix,
    /// or a later line of the process's message before it.
    fn read_shipped(&mut self, h: crate::readers::pg_syslog::Header) {
        match self.split(&h.rest) {
            Some(((_, db, at_us), severity, message)) => {
                self.message(
                    (Some(h.pid), db, at_us.or(h.at_us)),
                    (severity, message),
                    true,
                );
            }
            // (Whatever came between: the process's waiting entry, if any, is found.)
            None if h.part > 1 => {
                let more = h.rest.strip_prefix('\t').unwrap_or(&h.rest);
                let key = self.key(h.pid);
                self.out.more(Some(key), more);
            }
            None => self.not_a_line(&h.rest),
        }
    }

    /// A message line: its session, database and time (from the prefix or a header), its
    /// severity and text.
    fn message(
        &mut self,
        (session, db, at_us): (Option<u64>, Option<String>, Option<i64>),
        (severity, message): (&str, &str),
        shipped: bool,
    ) {
        self.in_message = false;
        let Some(session) = session else {
            if severity == "LOG" && what_of(message).is_some() {
                self.malformed.push(Malformed {
                    line: self.line_no,
                    why: "a statement without its session: log_line_prefix needs %c or %p",
                });
            }
            return;
        };
        // A process id names one session at a time: a new connection on a pid seen before
        // (the old session's end not logged, or the pid reused) starts another.
        let (generation, used) = self.sessions.entry(session).or_insert((0, false));
        if severity == "LOG" && message.starts_with("connection authorized") && *used {
            *generation += 1;
        }
        *used |= !message.starts_with("connection received");
        let session = session ^ (u64::from(*generation) << 48);
        // Behind a shipper's header another process's lines may come between a message's:
        // only this session's waiting entry is complete.
        let done = |out: &mut Assembler, line| match shipped {
            true => out.flush_session(session, line),
            false => out.flush(),
        };
        match severity {
            "LOG" => {
                done(&mut self.out, self.line_no);
                if let Some(mut what) = what_of(message) {
                    if let What::Connect { db: d @ None } = &mut what {
                        *d = db;
                    }
                    self.in_message = true;
                    self.out.message(Entry {
                        line: self.line_no,
                        session,
                        at_us,
                        what,
                        rows: None,
                        bound: None,
                    });
                }
            }
            "DETAIL" => {
                self.out.detail(session, message);
                self.in_message = true;
            }
            _ => done(&mut self.out, self.line_no),
        }
    }

    /// The session key of process `pid` now (its generation: `message`).
    fn key(&self, pid: u64) -> u64 {
        pid ^ (u64::from(self.sessions.get(&pid).map_or(0, |g| g.0)) << 48)
    }
}

impl<R: BufRead> crate::LineByLine for PgStderrLog<R> {
    fn queue(&mut self) -> (&mut VecDeque<Entry>, &mut bool) {
        (&mut self.out.ready, &mut self.done)
    }

    fn step(&mut self) -> bool {
        let read = crate::next_line(&mut self.input, &mut self.buf, &mut self.line_no);
        if read {
            self.read_line();
        }
        read
    }

    fn finish(&mut self) {
        self.out.flush();
    }
}

impl<R: BufRead> Iterator for PgStderrLog<R> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        crate::next_entry(self)
    }
}

impl<R: BufRead> LogReader for PgStderrLog<R> {
    fn malformed(&self) -> &MalformedLines {
        &self.malformed
    }
}

#[cfg(test)]
#[path = "pg_stderr_tests.rs"]
mod tests;
