//! The prefix of PostgreSQL's stderr lines (`log_line_prefix`): the common prefixes are
//! recognised from a log's own lines (`read_prefix`: the session, the database, the time),
//! and the message split from them at its severity (`split_message`). With
//! `--log-line-prefix` the server's `log_line_prefix`, given by hand (as pgbadger's
//! `--prefix`), is read with PostgreSQL's own escapes (`Prefix`): a prefix that is not
//! recognised (a field that looks like another, an unusual order) is read exactly. Each escape takes the text up to the literal
//! that follows it (`%t [%p]: `: the time up to " [", the pid up to "]: "); `%p`, `%l`, `%x`
//! take digits, `%c` a session id. The session is `%c` when the prefix has it, else `%p`;
//! `%l` (a line number) never is.

use crate::bad_input as usage;
use anyhow::Result;

/// The severities a message line may carry.
pub(super) const SEVERITIES: [&str; 18] = [
    "LOG",
    "ERROR",
    "DETAIL",
    "STATEMENT",
    "HINT",
    "CONTEXT",
    "FATAL",
    "WARNING",
    "NOTICE",
    "INFO",
    "PANIC",
    "QUERY",
    "LOCATION",
    "DEBUG",
    "DEBUG1",
    "DEBUG2",
    "DEBUG3",
    "DEBUG4",
];

/// A `YYYY-MM-DD HH:MM:SS[.fff] [zone]` time at the start of `s` (csvlog's, `%m`, `%t`), µs
/// since the epoch, the zone ignored (only differences matter to a replay).
pub fn pg_time(s: &str) -> Option<i64> {
    let mut it = s.split_whitespace();
    let (date, time) = (it.next()?, it.next()?);
    if date.len() != 10 || date.as_bytes()[4] != b'-' {
        return None;
    }
    crate::readers::mysql::parse_time(&format!("{date}T{time}"))
}

/// A session key from `%c` ("hex.hex": start time, process id).
pub(super) fn session_of_c(token: &str) -> Option<u64> {
    let (a, b) = token.split_once('.')?;
    let hex = |s: &str| {
        (!s.is_empty() && s.len() <= 12 && s.bytes().all(|c| c.is_ascii_hexdigit()))
            .then(|| u64::from_str_radix(s, 16).ok())
            .flatten()
    };
    Some((hex(a)? << 24) ^ hex(b)?)
}

/// The session, database and time a stderr line's prefix tells, whatever separates its
/// escapes (spaces: the default `%m [%p] ` and Debian's; colons: RDS and Aurora's
/// `%t:%r:%u@%d:[%p]:`; bars: pgreplay's `%m|%u|%d|%c|`). The session is `%c` when there,
/// else the first bracketed process id (`[1234]`, `[1234]:`), never pgbadger's `[%l-1]` line
/// number after it.
pub(super) fn read_prefix(prefix: &str) -> (Option<u64>, Option<String>, Option<i64>) {
    let tokens: Vec<&str> = prefix
        .split(|c: char| c.is_whitespace() || c == '|' || c == ':')
        .filter(|t| !t.is_empty())
        .collect();
    // %c: the session's start time (8 hex digits since 1978) and process id, "674c3a10.19b"
    // (not a time's seconds, "00.123").
    let mut session = tokens.iter().find_map(|t| {
        let t = t.trim_matches(['[', ']']);
        t.split_once('.')
            .is_some_and(|(start, _)| start.len() >= 8)
            .then(|| session_of_c(t))
            .flatten()
    });
    if session.is_none() {
        // %p: "[1234]" (Debian's default prefix, RDS's "…:[1234]:").
        session = tokens.iter().skip(1).find_map(|t| {
            let t = t.strip_prefix('[').and_then(|t| t.strip_suffix(']'))?;
            let t = t.split('-').next()?;
            t.parse::<u64>().ok()
        });
    }
    // %u@%d ("app@shop"), or pgbadger's "user=app,db=shop".
    let db = tokens
        .iter()
        .rev()
        .find_map(|t| {
            t.split(',')
                .find_map(|kv| kv.strip_prefix("db="))
                .or_else(|| t.rsplit_once('@').map(|(_, d)| d))
        })
        .map(|d| d.to_string())
        .filter(|d| !d.is_empty() && d != "[unknown]");
    (session, db, pg_time(prefix))
}

/// Where a stderr line's message starts: (prefix, severity, message). PostgreSQL writes two
/// spaces after the severity; a line with one (a log rewritten by some tool) is read when
/// no line of two is there.
pub(super) fn split_message(line: &str) -> Option<(&str, &str, &str)> {
    split_at(line, ":  ").or_else(|| split_at(line, ": "))
}

fn split_at<'a>(line: &'a str, after: &str) -> Option<(&'a str, &'a str, &'a str)> {
    let mut from = 0;
    while let Some(i) = line[from..].find(after) {
        let at = from + i;
        // The severity follows a space (`%m [%p] `), a colon (RDS's `…:[%p]:`) or a bar
        // (pgreplay's `…|%c|`).
        let word_start = line[..at].rfind([' ', ':', '|']).map_or(0, |s| s + 1);
        let word = &line[word_start..at];
        if SEVERITIES.contains(&word) {
            return Some((&line[..word_start], word, &line[at + after.len()..]));
        }
        from = at + after.len();
    }
    None
}

/// A parsed `log_line_prefix`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prefix {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Escape(char),
}

/// What a line's prefix told.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Fields {
    pub session: Option<u64>,
    pub db: Option<String>,
    pub at_us: Option<i64>,
}

/// The escapes PostgreSQL 9.6–17 knows.
const ESCAPES: &str = "aubdhHrpPtmnisceqlvxQ%";

impl Prefix {
    /// Parse a `log_line_prefix` value; an unknown escape is a usage error.
    pub fn parse(s: &str) -> Result<Prefix> {
        let mut parts: Vec<Part> = vec![];
        let mut chars = s.chars().peekable();
        let mut lit = String::new();
        while let Some(c) = chars.next() {
            if c != '%' {
                lit.push(c);
                continue;
            }
            // A padding width (%-10u, %5p) is allowed and ignored.
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '-')
            {
                chars.next();
            }
            let Some(e) = chars.next() else {
                return Err(usage(format!(
                    "--log-line-prefix '{s}' ends with a lone %: give the server's \
                     log_line_prefix as it is set (SHOW log_line_prefix)"
                )));
            };
            if !ESCAPES.contains(e) {
                return Err(usage(format!(
                    "--log-line-prefix '{s}': %{e} is not one of PostgreSQL's escapes \
                     (%a %u %d %r %h %b %p %P %t %m %n %i %e %c %l %s %v %x %q %Q %%)"
                )));
            }
            if e == '%' {
                lit.push('%');
                continue;
            }
            if !lit.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut lit)));
            }
            parts.push(Part::Escape(e));
        }
        if !lit.is_empty() {
            parts.push(Part::Literal(lit));
        }
        if !parts.iter().any(|p| matches!(p, Part::Escape('c' | 'p'))) {
            return Err(usage(format!(
                "--log-line-prefix '{s}' has neither %c nor %p: a replay needs each \
                 statement's session (set log_line_prefix to include %c or %p)"
            )));
        }
        Ok(Prefix { parts })
    }

    /// Read `line`'s prefix: what it told, and the rest (the severity and message); None
    /// when the line does not start with this prefix.
    pub(super) fn read<'a>(&self, line: &'a str) -> Option<(Fields, &'a str)> {
        let mut rest = line;
        let mut f = Fields::default();
        let (mut pid, mut session) = (None, None);
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                // Non-session processes stop here.
                Part::Escape('q') => {
                    if starts_with_severity(rest) {
                        break;
                    }
                }
                Part::Escape(e) => {
                    let end = match *e {
                        'p' | 'l' | 'x' | 'P' => rest
                            .find(|c: char| !c.is_ascii_digit())
                            .unwrap_or(rest.len()),
                        'c' => rest
                            .find(|c: char| !(c.is_ascii_hexdigit() || c == '.'))
                            .unwrap_or(rest.len()),
                        // A time has spaces: its date, clock and zone, whatever follows.
                        't' | 'm' | 's' => time_len(rest)?,
                        _ => match self.parts.get(i + 1) {
                            Some(Part::Literal(next)) => rest.find(next.as_str())?,
                            // Up to the severity when nothing literal follows.
                            _ => severity_at(rest)?,
                        },
                    };
                    let value = &rest[..end];
                    rest = &rest[end..];
                    match *e {
                        'p' => pid = value.parse::<u64>().ok(),
                        'c' => session = session_of_c(value),
                        'd' => {
                            f.db = Some(value.trim().to_string())
                                .filter(|d| !d.is_empty() && d != "[unknown]")
                        }
                        'm' | 't' => f.at_us = pg_time(value),
                        'n' => f.at_us = value.parse::<f64>().ok().map(|s| (s * 1e6) as i64),
                        _ => {}
                    }
                }
            }
        }
        f.session = session.or(pid);
        Some((f, rest))
    }
}

/// The length of the time `s` starts with, as `%t`, `%m` and `%s` write it: "2026-12-01
/// 10:00:00[.123] UTC" (the zone always there: an abbreviation or an offset).
fn time_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b' ' {
        return None;
    }
    let clock = 11 + s[11..].find(' ').unwrap_or(s.len() - 11);
    let zone = s[clock..]
        .strip_prefix(' ')
        .map(|z| z.find([' ', ':', ']', '|', ',']).unwrap_or(z.len()))
        .filter(|&n| n > 0);
    Some(zone.map_or(clock, |n| clock + 1 + n))
}

/// Whether `s` starts with a severity and its colon.
fn starts_with_severity(s: &str) -> bool {
    SEVERITIES
        .iter()
        .any(|sev| s.strip_prefix(sev).is_some_and(|r| r.starts_with(':')))
}

/// Where the first severity word (followed by its colon) starts in `s`.
fn severity_at(s: &str) -> Option<usize> {
    (0..=s.len())
        .filter(|&i| s.is_char_boundary(i))
        .find(|&i| starts_with_severity(&s[i..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_read_with_postgresqls_escapes() {
        let p = Prefix::parse("%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ").unwrap();
        let (f, rest) = p
            .read(
                "2026-12-01 10:00:00 UTC [4242]: [17-1] user=app,db=shop,app=psql,\
                 client=[local] LOG:  statement: SELECT 1",
            )
            .unwrap();
        assert_eq!(f.session, Some(4242), "the pid, not the line number");
        assert_eq!(f.db.as_deref(), Some("shop"));
        assert!(f.at_us.is_some());
        assert_eq!(rest, "LOG:  statement: SELECT 1");
        // %c over %p; a trailing escape ends at the severity.
        let c = Prefix::parse("%m %p %c %d").unwrap();
        let (f, rest) = c
            .read("2026-12-01 10:00:00.5 UTC 77 674c3a10.4d shopLOG:  statement: SELECT 2")
            .unwrap();
        assert_eq!(f.session, session_of_c("674c3a10.4d"));
        assert_eq!(
            (f.db.as_deref(), rest),
            (Some("shop"), "LOG:  statement: SELECT 2")
        );
        // A line of another prefix is not read as this one.
        assert_eq!(p.read("2026-12-01 10:00:00 UTC:[1]: LOG:  x"), None);
        // Bad prefixes are usage errors.
        for bad in ["%t %z ", "%t [%l] ", "%p %"] {
            let e = Prefix::parse(bad).unwrap_err();
            assert!(crate::is_bad_input(&e), "{bad}");
        }
    }
}
