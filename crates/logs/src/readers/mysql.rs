//! MariaDB/MySQL statement logs read as a stream, line by line, in bounded memory: the general
//! log's FILE format (`Connect`, `Init DB`, `Query`, `Prepare`, `Execute`, `Quit`… lines, a
//! statement running on over the lines after it) and the slow log (`# Time`, `# User@Host`,
//! `# Thread_id`, `use db;`, `SET timestamp=N;`, then the statement). Bytes that are not
//! UTF-8 are read as U+FFFD; a line that belongs to nothing is counted with its number, never
//! a panic. A statement line that looks exactly like a log line (a literal holding a newline,
//! a tab, an id and a command word) cannot be told from one: the log format does not escape.

use crate::{Entry, LogReader, Malformed, MalformedLines, What};
use std::io::BufRead;

/// The general log's commands (MariaDB's and MySQL's command names).
const COMMANDS: [&str; 20] = [
    "Connect",
    "Query",
    "Init DB",
    "Quit",
    "Prepare",
    "Execute",
    "Close stmt",
    "Reset stmt",
    "Long Data",
    "Field List",
    "Refresh",
    "Shutdown",
    "Statistics",
    "Processlist",
    "Kill",
    "Ping",
    "Change user",
    "Set option",
    "Fetch",
    "Connect Out",
];

fn num(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// A log time as µs since the epoch (the server's clock, read as UTC): MariaDB's `YYMMDD
/// H:MM:SS` (the hour may be space-padded) or MySQL's `YYYY-MM-DDTHH:MM:SS[.ffffff](Z|±hh:mm)`.
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = if let Some((d, t)) = s.split_once('T') {
        let mut p = d.split('-');
        let (y, m, dd) = (num(p.next()?)?, num(p.next()?)?, num(p.next()?)?);
        let t = t.trim_end_matches('Z');
        let t = t.split(['+', '-']).next()?;
        ((y, m, dd), t.to_string())
    } else {
        let (d, t) = s.split_once(' ')?;
        if d.len() != 6 {
            return None;
        }
        let (y, m, dd) = (num(&d[..2])?, num(&d[2..4])?, num(&d[4..])?);
        ((2000 + y, m, dd), t.trim().to_string())
    };
    let mut hms = time.split(':');
    let (h, mi) = (num(hms.next()?.trim())?, num(hms.next()?)?);
    let sec = hms.next()?;
    let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
    let frac_us = if frac.is_empty() {
        0
    } else if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    } else {
        let f: String = frac.chars().chain(std::iter::repeat('0')).take(6).collect();
        num(&f)?
    };
    let whole = num(whole)?;
    // A date or time out of range is no time (and no arithmetic overflow).
    let (y, m, d) = date;
    if !(1..=9999).contains(&y)
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&d)
        || h > 23
        || mi > 59
        || whole > 60
    {
        return None;
    }
    let days = crate::time::days_from_civil(y, m, d);
    Some(((days * 24 + h) * 60 + mi) * 60_000_000 + whole * 1_000_000 + frac_us)
}

/// One general-log line taken apart: (time, thread id, command, argument).
fn general_line(line: &str) -> Option<(Option<i64>, u64, &str, &str)> {
    let (time, rest) = if line.starts_with(['\t', ' ']) {
        (None, line)
    } else {
        let (t, rest) = split_time(line)?;
        (Some(t), rest)
    };
    let rest = rest.trim_start_matches([' ', '\t']);
    let (id, rest) = rest.split_once(' ')?;
    let id = num(id)? as u64;
    // The command and a tab (MariaDB, MySQL 5.5 on), or the command padded with spaces to its
    // column (MySQL 5.0 and 5.1: "Query       SELECT 1", a bare "Quit"); the longest that
    // fits ("Connect Out" before "Connect").
    let (command, after) = COMMANDS
        .iter()
        .filter(|c| rest.starts_with(**c))
        .map(|c| (*c, &rest[c.len()..]))
        .filter(|(_, after)| after.is_empty() || after.starts_with(['\t', ' ']))
        .max_by_key(|(c, _)| c.len())?;
    let arg = match after.strip_prefix('\t') {
        Some(arg) => arg,
        None => after.trim_start_matches(' '),
    };
    Some((time, id, command, arg))
}

/// A general-log line's leading time and what follows it: the time ends at the first tab
/// or, in a file whose tabs became spaces on the way (an editor, a ticket), after MariaDB's
/// `YYMMDD H:MM:SS` or MySQL's ISO time.
fn split_time(line: &str) -> Option<(i64, &str)> {
    if let Some((t, rest)) = line.split_once('\t')
        && let Some(at) = parse_time(t)
    {
        return Some((at, rest));
    }
    let b = line.as_bytes();
    let end = if b.len() > 11 && b[10] == b'T' {
        line.find(' ')?
    } else if b.len() > 14 && b[6] == b' ' && b[..6].iter().all(u8::is_ascii_digit) {
        let clock = &line[7..];
        let padding = clock.len() - clock.trim_start_matches(' ').len();
        7 + padding + clock[padding..].find(' ')?
    } else {
        return None;
    };
    Some((parse_time(&line[..end])?, &line[end..]))
}

/// Whether `line` is a general-log line (any version's layout): for telling a log's format.
pub fn is_general_line(line: &str) -> bool {
    general_line(line).is_some()
}

/// The server's own lines at the top of a log (and after each restart or flush).
fn header(line: &str) -> bool {
    // (Every line passes here: the cheap tests first.)
    line.ends_with("started with:") && line.contains(", Version: ")
        || line.starts_with("Tcp port: ")
        || line.starts_with("Time") && line.contains("Id Command") && line.contains("Argument")
        || line.starts_with("Time                 Id Command")
}

/// A prepared statement's text without the `[1] ` MySQL 5.0 and 5.1 write before it (the
/// statement's id on its connection).
fn without_statement_id(arg: String) -> String {
    let id = arg
        .strip_prefix('[')
        .and_then(|r| r.split_once("] "))
        .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    match id {
        Some((_, rest)) => rest.to_string(),
        None => arg,
    }
}

/// What a general-log command means for a replay.
fn what(command: &str, arg: String) -> What {
    match command {
        "Connect" => {
            // "user@host on db using Socket"
            let db = arg
                .split_once(" on ")
                .map(|(_, r)| r.split(" using ").next().unwrap_or("").trim().to_string())
                .filter(|d| !d.is_empty());
            What::Connect { db }
        }
        "Init DB" => What::InitDb(arg.trim().to_string()),
        "Query" => What::Query(arg),
        "Prepare" => What::Prepare(without_statement_id(arg)),
        "Execute" => What::Execute(without_statement_id(arg)),
        "Quit" => What::Quit,
        _ => What::Other(command.to_string()),
    }
}

/// Reads a general log: each entry once its last line is known.
pub struct GeneralLog<R> {
    input: R,
    buf: Vec<u8>,
    line_no: u64,
    pending: Option<Entry>,
    /// The latest time seen: lines without one share it.
    clock: Option<i64>,
    /// Lines that belonged to nothing.
    pub malformed: MalformedLines,
    done: bool,
}

impl<R: BufRead> GeneralLog<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> Self {
        GeneralLog {
            input,
            buf: Vec::with_capacity(4096),
            line_no: 0,
            pending: None,
            clock: None,
            malformed: MalformedLines::default(),
            done: false,
        }
    }
}

impl<R: BufRead> Iterator for GeneralLog<R> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        while !self.done {
            if !crate::next_line(&mut self.input, &mut self.buf, &mut self.line_no) {
                self.done = true;
                break;
            }
            let text = crate::text(&self.buf);
            let line = text.trim_end_matches('\n').trim_end_matches('\r');
            if header(line) {
                if let Some(e) = self.pending.take() {
                    return Some(e);
                }
                continue;
            }
            if let Some((time, id, command, arg)) = general_line(line) {
                if time.is_some() {
                    self.clock = time;
                }
                let entry = Entry {
                    line: self.line_no,
                    session: id,
                    at_us: self.clock,
                    what: what(command, arg.to_string()),
                    rows: None,
                    bound: None,
                };
                if let Some(e) = self.pending.replace(entry) {
                    return Some(e);
                }
                continue;
            }
            // A statement's next line, or nothing's.
            match self.pending.as_mut().map(|e| &mut e.what) {
                Some(What::Query(s) | What::Prepare(s) | What::Execute(s)) => {
                    crate::append_line(s, line)
                }
                _ if line.trim().is_empty() => {}
                _ => self.malformed.push(Malformed {
                    line: self.line_no,
                    why: "not a general-log line, and no statement before it to continue",
                }),
            }
        }
        self.pending.take()
    }
}

/// The values a slow log writes before a statement for its replication (`SET timestamp=N;`,
/// `SET insert_id=5,timestamp=N;`, `last_insert_id`): Some(the timestamp, if given) when
/// `line` (in any case) is nothing else; None for any other line.
fn session_set(line: &str) -> Option<Option<i64>> {
    if !line.get(..4)?.eq_ignore_ascii_case("set ") {
        return None;
    }
    let list = line[4..].trim_end().strip_suffix(';')?;
    let mut timestamp = None;
    for part in list.split(',') {
        let (name, value) = part.split_once('=')?;
        let value = num(value.trim())?;
        let name = name.trim();
        if name.eq_ignore_ascii_case("timestamp") {
            timestamp = Some(value);
        } else if !name.eq_ignore_ascii_case("insert_id")
            && !name.eq_ignore_ascii_case("last_insert_id")
        {
            return None;
        }
    }
    Some(timestamp)
}

/// The header fields a slow log's every entry has, found with searchers built once (a
/// `str::split_once` builds its searcher at every call: 8% of a slow log's dry run).
struct Finders {
    user_host: memchr::memmem::Finder<'static>,
    id: memchr::memmem::Finder<'static>,
    rows_sent: memchr::memmem::Finder<'static>,
    thread_id: memchr::memmem::Finder<'static>,
    schema: memchr::memmem::Finder<'static>,
}

static FINDERS: std::sync::LazyLock<Finders> = std::sync::LazyLock::new(|| Finders {
    user_host: memchr::memmem::Finder::new(" # User@Host: "),
    id: memchr::memmem::Finder::new("Id:"),
    rows_sent: memchr::memmem::Finder::new("Rows_sent: "),
    thread_id: memchr::memmem::Finder::new("Thread_id: "),
    schema: memchr::memmem::Finder::new("Schema: "),
});

/// `hay.split_once(needle)` with a searcher built once.
fn after<'a>(hay: &'a str, f: &memchr::memmem::Finder<'_>) -> Option<(&'a str, &'a str)> {
    let at = f.find(hay.as_bytes())?;
    // The needles are ASCII: both ends fall on character boundaries.
    Some((&hay[..at], &hay[at + f.needle().len()..]))
}

/// Reads a slow log: one entry per `# User@Host` block, its statement the lines after the
/// `#` header lines (`use db;` and `SET timestamp=N;` taken as the entry's database and time).
pub struct SlowLog<R> {
    input: R,
    buf: Vec<u8>,
    line_no: u64,
    /// The block being read: (its first line, session, time, database, statement lines).
    block: Option<SlowBlock>,
    clock: Option<i64>,
    /// Lines that belonged to nothing.
    pub malformed: MalformedLines,
    /// Entries ready to hand out (a `use db;` yields an InitDb before its statement).
    ready: std::collections::VecDeque<Entry>,
    done: bool,
}

#[derive(Default)]
struct SlowBlock {
    line: u64,
    session: u64,
    at_us: Option<i64>,
    db: Option<String>,
    sql: String,
    /// `Rows_sent: N` from the entry's `# Query_time:` line.
    rows: Option<u64>,
    /// The entry has its `# Query_time:` line: every server writes one, so an entry
    /// without it is the tail of one cut at the log's start (pt-query-digest leaves such
    /// an entry out too).
    timed: bool,
}

impl<R: BufRead> SlowLog<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> Self {
        SlowLog {
            input,
            buf: Vec::with_capacity(4096),
            line_no: 0,
            block: None,
            clock: None,
            malformed: MalformedLines::default(),
            ready: Default::default(),
            done: false,
        }
    }

    /// The block read so far, as entries.
    fn close(&mut self) {
        let Some(b) = self.block.take() else { return };
        if let Some(db) = b.db {
            self.ready.push_back(Entry {
                line: b.line,
                session: b.session,
                at_us: b.at_us,
                what: What::InitDb(db),
                rows: None,
                bound: None,
            });
        }
        // Trimmed in place (the statement's own buffer becomes the entry's).
        let mut sql = b.sql;
        let end = sql.trim_end().trim_end_matches(';').trim_end().len();
        sql.truncate(end);
        let start = sql.len() - sql.trim_start().len();
        sql.drain(..start);
        if !sql.is_empty() && !b.timed {
            self.malformed.push(Malformed {
                line: b.line,
                why: "an entry without its # Query_time line (the log begins inside it): \
                      left out",
            });
        } else if !sql.is_empty() {
            self.ready.push_back(Entry {
                line: b.line,
                session: b.session,
                at_us: b.at_us,
                what: What::Query(sql),
                rows: b.rows,
                bound: None,
            });
        }
    }

    fn read_line(&mut self) {
        // The line read in place (no copy when it is UTF-8), its buffer lent back after.
        let buf = std::mem::take(&mut self.buf);
        let text = crate::text(&buf);
        let line = text.trim_end_matches('\n').trim_end_matches('\r');
        self.read(line);
        drop(text);
        self.buf = buf;
    }

    fn read(&mut self, line: &str) {
        if header(line) {
            self.close();
        } else if line == "#" || line.starts_with("# explain: ") {
            // MariaDB's log_slow_verbosity=explain: the plan, between `#` lines, in the
            // header (before `SET timestamp`).
        } else if let Some(t) = line.strip_prefix("# Time: ") {
            self.close();
            // MySQL 5.0/5.1 and Percona write the block's first header on the same line:
            // "# Time: 071218 11:48:27 # User@Host: [SQL_SLAVE] @  []".
            let (t, who) = match after(t, &FINDERS.user_host) {
                Some((t, who)) => (t, Some(who)),
                None => (t, None),
            };
            self.clock = parse_time(t).or(self.clock);
            if let Some(who) = who {
                self.read(&format!("# User@Host: {who}"));
            }
        } else if let Some(who) = line.strip_prefix("# User@Host: ") {
            self.close();
            // MySQL puts the session here ("Id: 5"); MariaDB on the next line.
            let session = after(who, &FINDERS.id)
                .and_then(|(_, id)| num(id.trim()))
                .unwrap_or(0) as u64;
            self.block = Some(SlowBlock {
                line: self.line_no,
                session,
                at_us: self.clock,
                ..Default::default()
            });
        } else if let Some(rest) = line.strip_prefix("# ") {
            // An entry without `# User@Host` (a log some tool wrote, a Percona build's
            // `# Thread_id` first): its first header line starts it, as a header line after
            // a statement starts the next.
            if self.block.as_ref().is_none_or(|b| !b.sql.is_empty()) {
                self.close();
                self.block = Some(SlowBlock {
                    line: self.line_no,
                    at_us: self.clock,
                    ..Default::default()
                });
            }
            // The lines every entry has (the cheap test first): of them only the rows sent
            // are read, what the replay's are compared with.
            if rest.starts_with("Query_time: ") {
                if let Some(b) = self.block.as_mut() {
                    b.timed = true;
                    b.rows = after(rest, &FINDERS.rows_sent)
                        .and_then(|(_, n)| num(n.split_whitespace().next().unwrap_or("")))
                        .map(|n| n as u64);
                }
                return;
            }
            if rest.starts_with("Rows_affected: ") {
                return;
            }
            let thread = rest
                .strip_prefix("Thread_id: ")
                .or_else(|| after(rest, &FINDERS.thread_id).map(|(_, id)| id));
            if let (Some(b), Some(id)) = (self.block.as_mut(), thread) {
                b.session = num(id.split_whitespace().next().unwrap_or("")).unwrap_or(0) as u64;
                // Percona Server names the statement's database there ("Schema: shop").
                if let Some((_, db)) = after(rest, &FINDERS.schema)
                    && let Some(db) = db.split_whitespace().next()
                {
                    b.db = Some(db.trim_matches('`').to_string());
                }
            }
        } else if let Some(b) = self.block.as_mut() {
            let starts = |p: &str| {
                line.get(..p.len())
                    .is_some_and(|h| h.eq_ignore_ascii_case(p))
            };
            if b.sql.is_empty() && starts("use ") && line.ends_with(';') {
                b.db = Some(line[4..line.len() - 1].trim().trim_matches('`').to_string());
            } else if b.sql.is_empty()
                && starts("set ")
                && let Some(at) = session_set(line)
            {
                // `SET timestamp=N;`, or with the replication values the server logs before a
                // statement (`SET insert_id=5,timestamp=N;`): the entry's facts, no statement.
                b.at_us = at.and_then(|s| s.checked_mul(1_000_000)).or(b.at_us);
            } else {
                if b.sql.is_empty() {
                    b.sql.push_str(line);
                } else {
                    crate::append_line(&mut b.sql, line);
                }
            }
        } else if !line.trim().is_empty() {
            self.malformed.push(Malformed {
                line: self.line_no,
                why: "not a slow-log line, and no entry before it",
            });
        }
    }
}

impl<R: BufRead> crate::LineByLine for SlowLog<R> {
    fn queue(&mut self) -> (&mut std::collections::VecDeque<Entry>, &mut bool) {
        (&mut self.ready, &mut self.done)
    }

    fn step(&mut self) -> bool {
        let read = crate::next_line(&mut self.input, &mut self.buf, &mut self.line_no);
        if read {
            self.read_line();
        }
        read
    }

    fn finish(&mut self) {
        self.close();
    }
}

impl<R: BufRead> Iterator for SlowLog<R> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        crate::next_entry(self)
    }
}

impl<R: BufRead> LogReader for GeneralLog<R> {
    fn malformed(&self) -> &MalformedLines {
        &self.malformed
    }
}

impl<R: BufRead> LogReader for SlowLog<R> {
    fn malformed(&self) -> &MalformedLines {
        &self.malformed
    }
}

#[cfg(test)]
#[path = "mysql_tests.rs"]
mod tests;
