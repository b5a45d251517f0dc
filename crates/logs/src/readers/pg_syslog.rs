//! PostgreSQL's messages as a syslog daemon or a log shipper wrote them: the server's own
//! line (its `log_line_prefix`, severity and message) behind a header of the shipper's.
//! Two headers are read:
//!
//! - syslog (`log_destination=syslog`, through rsyslog or journald's forwarding):
//!   `Feb 11 13:15:39 host postgres[10819]: [7-1] db=…,user=… LOG:  statement: …`;
//! - Heroku's logplex: `2019-03-14T00:22:56+00:00 app[postgres.4882]: [GREEN] [15-1] …`.
//!
//! `[N-M]` is the message's number and its line: a message's later lines (a statement over
//! several lines, a line the server split at 900 bytes) come as `[N-2]`, `[N-3]`… with no
//! prefix of their own, a leading tab written `#011` by rsyslog. The session is the process
//! id in the header (a prefix may have none), the time the header's when the prefix has
//! none (syslog's has no year: only differences matter to a replay, and a log that crosses
//! a new year is read as the same year).

/// A shipper's header, read.
#[derive(Debug, PartialEq)]
pub(super) struct Header {
    /// The server process's id.
    pub pid: u64,
    /// The header's time, µs (syslog's in the year 2000).
    pub at_us: Option<i64>,
    /// The message's line within it (`M` of `[N-M]`).
    pub part: u32,
    /// What the server wrote: its prefix, severity and message, or a later line.
    pub rest: String,
}

/// The header of a syslog or logplex line; None: the line is not one.
pub(super) fn header(line: &str) -> Option<Header> {
    // The ident's bracket: `postgres[123]: ` (syslog_ident, any name) or logplex's
    // `app[postgres.123]: ` (some drains write it without the colon).
    for (open, _) in line.match_indices('[') {
        let Some(len) = line[open..].find(']') else {
            break;
        };
        let close = open + len;
        let Ok(pid) = line[open + 1..close].rsplit('.').next()?.parse::<u64>() else {
            continue;
        };
        let ident = &line[..open];
        let ident_start = ident.rfind(' ').map_or(0, |s| s + 1);
        if ident_start == open {
            continue;
        }
        let after = &line[close + 1..];
        let Some(mut rest) = after.strip_prefix(": ").or_else(|| after.strip_prefix(' ')) else {
            continue;
        };
        // logplex's `[GREEN] ` (the database's colour name).
        if let Some(inner) = rest.strip_prefix('[')
            && let Some((word, tail)) = inner.split_once("] ")
            && !word.is_empty()
            && word.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
        {
            rest = tail;
        }
        let Some((number, tail)) = rest.strip_prefix('[').and_then(|r| r.split_once(']')) else {
            continue;
        };
        let Some((n, m)) = number.split_once('-') else {
            continue;
        };
        let (Ok(_), Ok(part)) = (n.parse::<u64>(), m.parse::<u32>()) else {
            continue;
        };
        let tail = tail.strip_prefix(' ').unwrap_or(tail);
        return Some(Header {
            pid,
            at_us: time_of(ident[..ident_start].trim_end()),
            part,
            rest: tail.replace("#011", "\t"),
        });
    }
    None
}

/// A header's time: syslog's `Feb 11 13:15:39` (host after it) or an RFC 3339 time
/// (logplex's, rsyslog's high-precision format).
fn time_of(when: &str) -> Option<i64> {
    let first = when.split_whitespace().next()?;
    if first.len() >= 19 && first.as_bytes()[4] == b'-' {
        let plain = first.get(..19)?;
        let frac = first[19..]
            .strip_prefix('.')
            .map(|f| f.split(|c: char| !c.is_ascii_digit()).next().unwrap_or(""))
            .filter(|f| !f.is_empty());
        let t = match frac {
            Some(f) => format!("{plain}.{f}"),
            None => plain.to_string(),
        };
        return crate::readers::mysql::parse_time(&t);
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mut it = when.split_whitespace();
    let name = it.next()?;
    let month = MONTHS.iter().position(|m| *m == name)? + 1;
    let day: u32 = it.next()?.parse().ok()?;
    let clock = it.next()?;
    crate::readers::mysql::parse_time(&format!("2000-{month:02}-{day:02}T{clock}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syslog_and_logplex_headers_are_read() {
        let h = header(
            "Feb 11 13:15:40 test-pc postgres[10819]: [7-1] db=postgres,user=postgres LOG:  \
             statement: SELECT 1",
        )
        .unwrap();
        assert_eq!((h.pid, h.part), (10819, 1));
        assert!(
            h.rest
                .starts_with("db=postgres,user=postgres LOG:  statement")
        );
        let next =
            header("Feb 11 13:15:41 test-pc postgres[10819]: [7-2] #011       FROM t").unwrap();
        assert_eq!(next.part, 2);
        assert_eq!(next.rest, "\t       FROM t");
        assert_eq!(next.at_us.unwrap() - h.at_us.unwrap(), 1_000_000);
        let p = header(
            "2019-03-14T00:22:56+00:00 app[postgres.4882]: [GREEN] [15-1]  sql_error_code = \
             00000 LOG:  statement: SELECT 2",
        )
        .unwrap();
        assert_eq!((p.pid, p.part), (4882, 1));
        assert!(p.rest.contains("LOG:  statement: SELECT 2"), "{p:?}");
        assert!(p.at_us.is_some());
        let d = header(
            "2021-09-07T04:01:27+00:00 d.af28b93f app[postgres.5925] [AQUA] [921320-2]        (",
        )
        .unwrap();
        assert_eq!((d.pid, d.part, d.rest.as_str()), (5925, 2, "       ("));
        // A stderr line, a general log's, a slow log's: not a shipper's.
        for line in [
            "2026-12-01 10:00:00.123 UTC [4242] LOG:  statement: SELECT 1",
            "2026-12-01T10:00:00.123456Z\t   12 Query\tSELECT 1",
            "# User@Host: app[app] @ localhost []  Id:    12",
            "2026-12-01 10:00:00 UTC:10.0.0.1(5432):app@shop:[77]:LOG:  statement: SELECT 1",
        ] {
            assert_eq!(header(line), None, "{line}");
        }
    }
}
