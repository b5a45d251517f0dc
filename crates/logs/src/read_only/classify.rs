//! Which recorded statements a replay may run: the first of the replay's three locks (the
//! others: every replaying session is read-only on the server, and logs in as a user that
//! may only read). A replay runs every trial over the same statements, so one that changes
//! data or schema would change what the next trial reads: such statements are skipped unless
//! the user says otherwise (`--replay-writes`). Statements that change the server itself
//! (its settings, users, replication, plugins, other sessions), that could lift the
//! session's read-only mode, sleep, take locks, move sequences, reach files or programs, or
//! call code dbtax cannot see (a stored function or procedure, a `DO` block, a compound
//! statement, a statement prepared by name) are never replayed.
//!
//! The rule is an allow-list, over tokens from a lexer that reads the statement every way
//! its server could (`lex::readings`): a statement is a read only if every reading is one
//! whose first word is a known read, none of whose words writes, and every function it
//! calls is a built-in known to only compute (or one the user allowed by name). Anything
//! else is skipped, and counted by its reason.

use crate::read_only::functions::{Call, calls, word};
use crate::read_only::lex::{Dialect, Tok, Unreadable, readings};

/// What a statement does, as far as a replay must tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Reads only (or controls the session: a transaction, a session setting).
    Read,
    /// Changes data or schema: replayed only with `--replay-writes`.
    Write,
    /// Changes the server, or cannot be shown safe: never replayed.
    Server,
}

/// Why a statement is not a plain read: its class, and the reason it is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// What it does.
    pub class: Class,
    /// Why (empty for a read): the words the counts are kept under.
    pub reason: &'static str,
}

const READ: Verdict = Verdict {
    class: Class::Read,
    reason: "",
};

const fn write(reason: &'static str) -> Verdict {
    Verdict {
        class: Class::Write,
        reason,
    }
}

const fn server(reason: &'static str) -> Verdict {
    Verdict {
        class: Class::Server,
        reason,
    }
}

/// The reasons, as counted (results.json `workload.replay.read.skipped`).
pub mod reason {
    /// Changes data or schema.
    pub const WRITES: &str = "changes data or schema";
    /// Changes the server's settings, users, replication or other sessions.
    pub const SERVER: &str = "changes the server";
    /// Several statements in one entry.
    pub const SEVERAL: &str = "several statements in one entry";
    /// A compound statement or code block.
    pub const CODE: &str = "a code block or compound statement";
    /// A stored function or procedure, or a function dbtax does not know.
    pub const FUNCTION: &str = "calls a function dbtax does not know to only read";
    /// Sleeps.
    pub const SLEEP: &str = "sleeps";
    /// Takes a lock (advisory, table or row).
    pub const LOCK: &str = "takes a lock";
    /// Moves a sequence.
    pub const SEQUENCE: &str = "moves a sequence";
    /// Signals or ends another session.
    pub const SIGNAL: &str = "signals another session";
    /// Reaches files, programs or large objects on the server's host.
    pub const FILES: &str = "reaches files or large objects";
    /// Could lift the session's read-only mode or its login.
    pub const LIFTS: &str = "could lift the session's read-only mode";
    /// A statement prepared by name (what it runs is not in the entry).
    pub const PREPARED: &str = "runs a statement prepared by name";
    /// SELECT … INTO (a table, a file, variables).
    pub const INTO: &str = "SELECT … INTO";
    /// The lexer could not read it.
    pub const UNREADABLE: &str = "cannot be read";
    /// Longer than a log statement may be (`replay::MAX_STATEMENT`).
    pub const TOO_LONG: &str = "longer than 16 MB";
    /// Names a view, function or policy on the server whose code runs with other rights
    /// and does more than read (`reach`).
    pub const REACHES: &str = "reaches code that runs with other rights";
}

/// A statement's shape for `Verdicts`: `sql` with each number that stands alone as `0`. A
/// number stands alone when no letter, digit, `_`, `$`, `@`, `!` or non-ASCII byte comes
/// just before it and no letter, `_`, `$` or non-ASCII byte just after it: a literal (`id =
/// 5003`, `BETWEEN 4 AND 103`, the digits of a string or a `$1`), never part of a name
/// (`sbtest1`, `sha2(`, `` `t 1` `` aside: a name with a space holds no built-in), of a hex
/// or exponent literal (`0x1F`, `1e5`), or an executable comment's version (`/*!50000`). Its
/// value decides no verdict (nor does its length: a statement's length is checked before),
/// and no digit is a quote, an escape or a comment mark, so two statements of one shape lex
/// into the same tokens in every reading, numbers aside, and have one verdict.
pub fn number_shape(sql: &str, out: &mut String) {
    let b = sql.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
    out.clear();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i].is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let before = start.checked_sub(1).map(|k| b[k]);
            let alone = !before.is_some_and(|c| word(c) || c == b'@' || c == b'!')
                && !b.get(i).is_some_and(|&c| word(c));
            if alone {
                out.push('0');
            } else {
                out.push_str(&sql[start..i]);
            }
        } else {
            while i < b.len() && !b[i].is_ascii_digit() {
                i += 1;
            }
            out.push_str(&sql[start..i]);
        }
    }
}

/// The verdicts of the shapes met so far while reading a log (most of a log's statements are
/// a few shapes with other numbers): `classify` once per shape, up to `SHAPES` of them.
#[derive(Default)]
pub struct Verdicts {
    known: std::collections::HashMap<String, Verdict, crate::hash::Fx>,
    shape: String,
}

/// The shapes `Verdicts` keeps at most (those past it are classified every time).
const SHAPES: usize = 1 << 16;

impl Verdicts {
    /// `classify(sql, dialect, allowed)`, from the shape's verdict when it is known.
    pub fn classify(&mut self, sql: &str, dialect: Dialect, allowed: &[String]) -> Verdict {
        number_shape(sql, &mut self.shape);
        if let Some(v) = self.known.get(self.shape.as_str()) {
            return *v;
        }
        let v = classify(sql, dialect, allowed);
        if self.known.len() < SHAPES {
            self.known.insert(self.shape.clone(), v);
        }
        v
    }
}

/// The verdict that does more of two: a write over a read, the server over a write.
pub fn worse(a: Verdict, b: Verdict) -> Verdict {
    if rank(b.class) > rank(a.class) { b } else { a }
}

fn rank(c: Class) -> u8 {
    match c {
        Class::Read => 0,
        Class::Write => 1,
        Class::Server => 2,
    }
}

/// What `sql` (from a log of `dialect`'s servers) does: the worst of every way it can be
/// read. `allowed`: functions and procedures the user allowed by name (lower-case).
pub fn classify(sql: &str, dialect: Dialect, allowed: &[String]) -> Verdict {
    let mut worst = READ;
    let mut read_some = false;
    for reading in readings(sql, dialect) {
        let v = match reading {
            Ok(toks) => {
                read_some = true;
                of_tokens(&toks, dialect, allowed)
            }
            // A server that reads it so refuses it: nothing runs (`'C:\'` under
            // backslash escapes), as long as some reading is whole.
            Err(Unreadable::Refused(_)) => continue,
            Err(Unreadable::Beyond(_)) => server(reason::UNREADABLE),
        };
        worst = worse(worst, v);
        if worst.class == Class::Server {
            break;
        }
    }
    if !read_some {
        return server(reason::UNREADABLE);
    }
    worst
}

/// One reading's verdict.
fn of_tokens(toks: &[Tok], dialect: Dialect, allowed: &[String]) -> Verdict {
    // One statement per entry (a trailing `;` is allowed).
    let end = toks
        .iter()
        .position(|t| *t == Tok::Semi)
        .unwrap_or(toks.len());
    if toks[end..].iter().any(|t| *t != Tok::Semi) {
        return server(reason::SEVERAL);
    }
    let toks = &toks[..end];
    let form = statement(toks, dialect);
    let call = calls(toks, allowed).map(|c| {
        server(match c {
            Call::Sleep => reason::SLEEP,
            Call::Lock => reason::LOCK,
            Call::Sequence => reason::SEQUENCE,
            Call::Signal => reason::SIGNAL,
            Call::Files => reason::FILES,
            Call::Server => reason::SERVER,
            Call::Unknown => reason::FUNCTION,
        })
    });
    match (form.class, call) {
        (Class::Read, Some(call)) => call,
        // A write's parentheses are often names (`INSERT INTO t (a)`): only the calls
        // said to sleep, signal, reach files or change the server count there.
        (Class::Write, Some(call))
            if matches!(
                call.reason,
                reason::SLEEP | reason::SIGNAL | reason::FILES | reason::SERVER
            ) =>
        {
            call
        }
        _ => form,
    }
}

/// The verdict of one statement's tokens by its form (calls already checked).
fn statement(toks: &[Tok], dialect: Dialect) -> Verdict {
    // Leading parentheses: `(SELECT …) UNION (SELECT …)`.
    let start = toks.iter().take_while(|t| **t == Tok::Op('(')).count();
    let toks = &toks[start..];
    let w = |i: usize| word(toks.get(i));
    let has = |k: &str| toks.iter().any(|t| matches!(t, Tok::Word(x) if x == k));
    let has_pair = |a: &str, b: &str| {
        toks.windows(2)
            .any(|p| word(Some(&p[0])) == a && word(Some(&p[1])) == b)
    };
    let my = dialect == Dialect::Mysql;
    match w(0) {
        "" => READ,
        "select" | "with" | "values" | "table" => select(toks),
        "show" | "help" => READ,
        "use" if my => READ,
        "describe" | "desc" | "explain" => explain(&toks[1..], dialect),
        "analyze" | "analyse" => {
            // MariaDB's ANALYZE SELECT runs the query and shows its plan; ANALYZE TABLE and
            // PostgreSQL's ANALYZE update statistics.
            let rest = skip_options(&toks[1..]);
            match word(rest.first()) {
                "select" | "with" | "values" | "insert" | "update" | "delete" | "replace"
                | "merge" => statement(rest, dialect),
                // ANALYZE TABLE t, ANALYZE [VERBOSE] t.
                _ => write(reason::WRITES),
            }
        }
        "begin" if has_pair("not", "atomic") => server(reason::CODE),
        "begin" | "start" | "commit" | "rollback" | "end" | "abort" => {
            if w(0) == "start" && !matches!(w(1), "transaction") {
                return server(reason::SERVER);
            }
            if has_pair("read", "write") {
                server(reason::LIFTS)
            } else if has("prepared") {
                server(reason::SERVER)
            } else {
                READ
            }
        }
        "savepoint" | "release" => READ,
        "set" => set(toks, dialect),
        "reset" if !my => {
            // RESET ALL and the read-only settings would lift the session's mode (a
            // setting's name may be quoted).
            match setting(toks.get(1)) {
                "all"
                | "default_transaction_read_only"
                | "transaction_read_only"
                | "session"
                | "role" => server(reason::LIFTS),
                _ => READ,
            }
        }
        "discard" if !my => match w(1) {
            "all" => server(reason::LIFTS),
            _ => READ,
        },
        "declare" if !my => {
            // DECLARE c … CURSOR … FOR query: the query decides.
            match toks.iter().position(|t| word(Some(t)) == "for") {
                Some(at) => statement(&toks[at + 1..], dialect),
                None => server(reason::CODE),
            }
        }
        "fetch" | "move" | "close" if !my => READ,
        "prepare" | "execute" | "deallocate" => server(reason::PREPARED),
        "do" | "if" | "while" | "loop" | "repeat" | "case" | "declare" | "signal" | "resignal"
        | "get" => server(reason::CODE),
        "call" => server(reason::FUNCTION),
        "lock" | "unlock" | "handler" => server(reason::LOCK),
        "kill" => server(reason::SIGNAL),
        "copy" | "load" | "import" => server(reason::FILES),
        "insert" | "update" | "delete" | "replace" | "merge" | "upsert" | "truncate"
        | "comment" | "refresh" | "optimize" | "repair" => write(reason::WRITES),
        "create" | "drop" | "rename" | "alter"
            if matches!(
                w(1),
                "user"
                    | "role"
                    | "server"
                    | "system"
                    | "instance"
                    | "event"
                    | "trigger"
                    | "function"
                    | "procedure"
                    | "extension"
                    | "subscription"
                    | "publication"
                    | "database"
                    | "schema"
                    | "tablespace"
                    | "logfile"
                    | "aggregate"
                    | "language"
                    | "policy"
                    | "rule"
                    | "definer"
                    | "or"
            ) =>
        {
            server(reason::SERVER)
        }
        "create" | "drop" | "rename" | "alter" => write(reason::WRITES),
        // Anything not known to only read is not shown to be a read.
        _ => server(reason::SERVER),
    }
}

/// The options of EXPLAIN / ANALYZE before the statement they show: `(ANALYZE, BUFFERS)`,
/// `ANALYZE VERBOSE`, `FORMAT=JSON`, `EXTENDED`.
fn skip_options(toks: &[Tok]) -> &[Tok] {
    let mut i = 0;
    if toks.first() == Some(&Tok::Op('(')) {
        let mut depth = 0;
        while i < toks.len() {
            match toks[i] {
                Tok::Op('(') => depth += 1,
                Tok::Op(')') => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    while i < toks.len() {
        match &toks[i] {
            Tok::Word(w)
                if matches!(
                    w.as_str(),
                    "analyze"
                        | "analyse"
                        | "verbose"
                        | "extended"
                        | "partitions"
                        | "format"
                        | "json"
                        | "tree"
                        | "traditional"
                        | "costs"
                        | "buffers"
                        | "timing"
                        | "summary"
                        | "settings"
                        | "wal"
                ) =>
            {
                i += 1
            }
            Tok::Op('=') => i += 1,
            _ => break,
        }
    }
    &toks[i..]
}

/// EXPLAIN / DESCRIBE: a table's columns, or the plan of a statement — which runs it under
/// ANALYZE, so the statement shown decides.
fn explain(toks: &[Tok], dialect: Dialect) -> Verdict {
    let rest = skip_options(toks);
    match word(rest.first()) {
        "for" => server(reason::SIGNAL),
        "select" | "with" | "values" | "table" | "insert" | "update" | "delete" | "replace"
        | "merge" | "execute" | "create" | "declare" | "do" | "call" => statement(rest, dialect),
        // DESCRIBE t / EXPLAIN t [column]: a table's columns.
        _ => READ,
    }
}

/// A query: a read unless it writes through a CTE, stores its result, or locks rows.
fn select(toks: &[Tok]) -> Verdict {
    for (i, t) in toks.iter().enumerate() {
        let Tok::Word(w) = t else { continue };
        let next = word(toks.get(i + 1));
        match w.as_str() {
            // (`FOR [NO KEY] UPDATE` is met at its FOR first: a locking read.)
            "insert" | "update" | "delete" | "merge" => return write(reason::WRITES),
            "into" => return write(reason::INTO),
            "procedure" => return server(reason::FUNCTION),
            "for" if matches!(next, "update" | "share" | "no" | "key") => {
                return server(reason::LOCK);
            }
            "lock" if next == "in" => return server(reason::LOCK),
            "next" | "previous" if next == "value" => return server(reason::SEQUENCE),
            _ => {}
        }
    }
    READ
}

/// SET: a session's setting is a read; the server's, a password, a role, the read-only mode
/// or (MariaDB's SET STATEMENT … FOR) the statement it wraps decide otherwise.
fn set(toks: &[Tok], dialect: Dialect) -> Verdict {
    if word(toks.get(1)) == "statement" {
        let at = toks.iter().position(|t| word(Some(t)) == "for");
        let Some(at) = at else {
            return server(reason::SERVER);
        };
        let head = assignments(&toks[2..at]);
        if head.class != Class::Read {
            return head;
        }
        return statement(&toks[at + 1..], dialect);
    }
    assignments(toks)
}

/// A word or a name as a setting is spelled: lower-case, quoted or not, without MySQL's
/// `@@` (`@@tx_read_only`, `@@SESSION.x`, `` `tx_read_only` ``, PostgreSQL's
/// `"default_transaction_read_only"` all name what their bare word names).
fn setting(t: Option<&Tok>) -> &str {
    match t {
        Some(Tok::Word(w)) => w.strip_prefix("@@").unwrap_or(w),
        Some(Tok::Name(n)) => n,
        _ => "",
    }
}

/// The words of a SET that make it more than a session's setting.
fn assignments(toks: &[Tok]) -> Verdict {
    for (i, t) in toks.iter().enumerate() {
        if !matches!(t, Tok::Word(_) | Tok::Name(_)) {
            continue;
        }
        let x = setting(Some(t));
        let next = word(toks.get(i + 1));
        match x {
            "global"
            | "persist"
            | "persist_only"
            | "password"
            | "role"
            | "authorization"
            | "sql_log_bin"
            | "session_replication_role"
            | "pseudo_slave_mode"
            | "pseudo_thread_id"
            | "gtid_next"
            | "gtid_seq_no"
            | "gtid_domain_id"
            | "server_id"
            | "wsrep_on" => return server(reason::SERVER),
            "default" if i == 1 && next == "role" => return server(reason::SERVER),
            "tx_read_only" | "transaction_read_only" | "default_transaction_read_only" => {
                return server(reason::LIFTS);
            }
            "read" if next == "write" => return server(reason::LIFTS),
            _ => {}
        }
    }
    READ
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
