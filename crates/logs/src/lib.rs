//! Statement logs of MySQL-family and PostgreSQL servers, read as the servers wrote them:
//! the MySQL family's general and slow logs of every version (`readers::mysql`), and
//! PostgreSQL's stderr log under any `log_line_prefix`, syslog, csvlog and jsonlog
//! (`readers::pg_stderr`, `pg_syslog`, `pg_csv`, `pg_json`), each a stream of [`Entry`]s
//! in bounded memory: who connected, which statements each session ran and when, the rows a
//! slow log says each sent, a prepared statement's template and its values
//! ([`prepared`]). On top of the readers: a slice of a log read once with its sessions,
//! fingerprints and what was left out and why ([`mod@slice`]); statements' fingerprints, the
//! shape pt-query-digest and pgbadger group them by ([`fingerprint`]); and a classifier
//! that tells which statements only read, read every way the server could read them
//! ([`read_only`]). No database, no network: a log file in, statements out.
//!
//! dbtax replays a log's reads to measure what a server feature costs on them; this crate
//! is the reading half, usable by anything that wants a MySQL or PostgreSQL log in Rust.
//!
//! ```no_run
//! use dbtax_logs::replay_spec::ReplaySpec;
//! use dbtax_logs::slice::load;
//!
//! let slice = load(&ReplaySpec::of("slow.log".as_ref()), None, &|| Ok(()))?;
//! println!("{} statements of {} sessions", slice.stats.statements, slice.sessions);
//! for f in slice.fingerprints.iter().take(3) {
//!     println!("{:>8} × {}", f.count, f.fingerprint);
//! }
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod fingerprint;
mod hash;
pub mod prepared;
pub mod read_only;
pub mod readers;
pub mod replay_spec;
pub mod slice;
pub mod time;

/// A log reader: entries in the log's order, and the lines it could not read.
pub trait LogReader: Iterator<Item = Entry> {
    /// The lines that belonged to nothing, so far.
    fn malformed(&self) -> &MalformedLines;
}

/// The longest line or statement a log may hold: longer ones are counted and skipped, read
/// past in bounded memory (a log of one endless line, `/dev/zero` behind a link, costs this
/// much at most).
pub const MAX_STATEMENT: usize = 16 << 20;

/// A line's bytes as text: borrowed when they are UTF-8 (the common case, checked by the
/// standard library's fast validation), else with U+FFFD for what is not.
pub(crate) fn text(buf: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(buf) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(buf),
    }
}

/// Read the next line of `input` into `buf` (emptied first) and count it in `line_no`; false
/// at the end of the input (a read error ends it too: what was read stands). A longer line
/// than `MAX_STATEMENT` keeps its first `MAX_STATEMENT` + 64 KB bytes (so its statement,
/// after any log prefix, still shows as too long) and the rest is passed over unread.
fn next_line(input: &mut impl std::io::BufRead, buf: &mut Vec<u8>, line_no: &mut u64) -> bool {
    buf.clear();
    let mut any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (take, ended) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = (MAX_STATEMENT + (64 << 10)).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        input.consume(take);
        if ended {
            break;
        }
    }
    if any {
        *line_no += 1;
    }
    any
}

/// A reader that reads its input a line at a time and hands out the entries those lines
/// complete (the slow log's, PostgreSQL's stderr log's): its `Iterator::next` is
/// [`next_entry`], written once.
pub(crate) trait LineByLine {
    /// The entries completed and not yet handed out, and whether the input has ended.
    fn queue(&mut self) -> (&mut std::collections::VecDeque<Entry>, &mut bool);
    /// Read the next line and what it completes; false at the end of the input.
    fn step(&mut self) -> bool;
    /// The input has ended: what is still open becomes entries.
    fn finish(&mut self);
}

/// The next entry of a [`LineByLine`] reader: one already completed, else lines read until
/// one is, or the input ends.
pub(crate) fn next_entry(r: &mut impl LineByLine) -> Option<Entry> {
    loop {
        let (ready, done) = r.queue();
        if let Some(e) = ready.pop_front() {
            return Some(e);
        }
        if *done {
            return None;
        }
        if !r.step() {
            *r.queue().1 = true;
            r.finish();
        }
    }
}

/// Append a continuation line to a statement, up to just past `MAX_STATEMENT` (past that it
/// is too long to replay whatever follows, and grows no more).
fn append_line(s: &mut String, line: &str) {
    if s.len() <= MAX_STATEMENT {
        s.push('\n');
        s.push_str(line);
    }
}

/// How many malformed lines are kept with their numbers (the rest only counted).
const KEEP_MALFORMED: usize = 20;

/// Lines that belonged to nothing: how many, and the first few with their numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MalformedLines {
    /// How many.
    pub count: u64,
    /// The first ones.
    pub first: Vec<Malformed>,
}

impl MalformedLines {
    /// Count one; keep it when it is among the first.
    pub fn push(&mut self, m: Malformed) {
        self.count += 1;
        if self.first.len() < KEEP_MALFORMED {
            self.first.push(m);
        }
    }

    /// None.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

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
    /// The rows a statement sent, as the log recorded them (a slow log's `Rows_sent`).
    pub rows: Option<u64>,
    /// An execution of a prepared statement whose log names the statement and its values
    /// (PostgreSQL's `execute` with its DETAIL): replayed prepared.
    pub bound: Option<Box<Bound>>,
}

/// A prepared statement's execution as a log shows it: the statement as it was prepared
/// (the engine's own placeholders, `?` or `$n`) and the values it ran with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The statement as prepared.
    pub template: String,
    /// Its values in order.
    pub params: Vec<Param>,
}

/// Bad input: a log, a prefix, a time or an option that cannot be read as given. The words
/// say what is wrong and what to write; a caller that treats bad input apart (dbtax's exit
/// code 2) finds it in the error's chain.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// A `BadInput` error.
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

/// Whether an error is bad input, anywhere in its chain.
pub fn is_bad_input(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.downcast_ref::<BadInput>().is_some())
}

/// `1 statement`, `2 statements`: a count with its noun, in the singular for one (regular
/// plurals only: "session", "statement", "kind", "block").
pub fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A value a prepared statement was executed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    /// NULL.
    Null,
    /// An integer literal (sent as one: a quoted '5' is text, as the application sent it).
    Int(i64),
    /// Any other value, as text.
    Text(String),
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
