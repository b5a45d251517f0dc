//! PostgreSQL logs as JSON lines: PostgreSQL 15's own `jsonlog` (`timestamp`, `pid`,
//! `session_id`, `dbname`, `error_severity`, `message`, `detail`), CloudNativePG's (the same
//! fields under `record`, named as csvlog's columns), and a Cloud SQL export (each line a
//! log entry whose `textPayload` is a stderr line without its time, the time in
//! `timestamp`). Each record is written back as the stderr lines it stands for (its message's
//! later lines indented by a tab, its DETAIL on a line of its own) and read by `pglog`'s
//! stderr reader, so the messages mean the same in every format. A JSON line of another
//! shape is refused in words that name what it holds.

use crate::bad_input as usage;
use crate::readers::pg_stderr::PgStderrLog;
use crate::{Entry, LogReader, MalformedLines};
use anyhow::Result;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};

/// Reads a JSON-lines PostgreSQL log.
pub struct PgJsonLog<R: BufRead> {
    stderr: PgStderrLog<BufReader<AsStderr<R>>>,
}

impl<R: BufRead> PgJsonLog<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> Self {
        let lines = AsStderr {
            input,
            line: Vec::with_capacity(4096),
            out: Vec::new(),
            at: 0,
        };
        PgJsonLog {
            stderr: PgStderrLog::new(BufReader::new(lines)),
        }
    }
}

impl<R: BufRead> Iterator for PgJsonLog<R> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        self.stderr.next()
    }
}

impl<R: BufRead> LogReader for PgJsonLog<R> {
    fn malformed(&self) -> &MalformedLines {
        &self.stderr.malformed
    }
}

/// Whether a JSON log's first lines (`head`) hold a server record dbtax reads; Err (bad
/// input) when none does, in words naming the first record's keys.
pub fn known(head: &str) -> Result<()> {
    let mut first: Option<Value> = None;
    for line in head.lines().filter(|l| !l.trim().is_empty()).take(500) {
        let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        if stderr_lines(&v).is_some_and(|l| !l.is_empty()) {
            return Ok(());
        }
        first.get_or_insert(v);
    }
    let keys: Vec<String> = first
        .as_ref()
        .and_then(Value::as_object)
        .map(|o| o.keys().take(12).cloned().collect())
        .unwrap_or_default();
    Err(usage(format!(
        "the log is JSON of a shape dbtax does not read (its first record's keys: {}): dbtax \
         reads PostgreSQL's jsonlog, CloudNativePG's and a Cloud SQL export; give PostgreSQL's \
         stderr or csv log instead",
        if keys.is_empty() {
            "none".to_string()
        } else {
            keys.join(", ")
        }
    )))
}

/// The stderr lines a JSON record stands for; None for a record of no known shape.
fn stderr_lines(v: &Value) -> Option<String> {
    let text = |v: &Value, key: &str| -> Option<String> {
        match v.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    // Cloud SQL: a stderr line without its time ("[24667]: [1-1] db=…,user=… LOG:  …"); a
    // message's later lines come as entries of their own, each starting with a tab.
    if let Some(payload) = text(v, "textPayload") {
        if payload.starts_with('\t') {
            return Some(tabbed(&payload));
        }
        let time = text(v, "timestamp")
            .unwrap_or_default()
            .replacen('T', " ", 1);
        return Some(tabbed(&format!("{time} {payload}")));
    }
    // CloudNativePG: the operator's own messages beside the server's records: nothing to
    // replay, and nothing wrong.
    if v.get("logger").is_some_and(|l| l != "postgres") {
        return Some(String::new());
    }
    // CloudNativePG: what the server wrote to stderr before its csvlog began, whole in `msg`
    // (a dated line); any other `msg` is the operator's (a readiness probe), not the server's.
    if v.get("record").is_none()
        && let Some(line) = text(v, "msg")
    {
        let dated = line.len() > 10 && line.as_bytes()[4] == b'-';
        return Some(if dated { tabbed(&line) } else { String::new() });
    }
    // jsonlog's field names, or CloudNativePG's record (csvlog's column names).
    let (r, names) = match v.get("record") {
        Some(r) => (
            r,
            [
                "log_time",
                "process_id",
                "session_id",
                "database_name",
                "error_severity",
                "message",
            ],
        ),
        None => (
            v,
            [
                "timestamp",
                "pid",
                "session_id",
                "dbname",
                "error_severity",
                "message",
            ],
        ),
    };
    let [time, pid, session, db, severity, message] = names.map(|n| text(r, n));
    let (severity, message) = (severity?, message?);
    let prefix = format!(
        "{} [{}] {} @{}",
        time.unwrap_or_default(),
        pid.unwrap_or_default(),
        session.unwrap_or_default(),
        db.unwrap_or_default()
    );
    let mut lines = tabbed(&format!("{prefix} {severity}:  {message}"));
    if let Some(detail) = text(r, "detail") {
        lines += &tabbed(&format!("{prefix} DETAIL:  {detail}"));
    }
    Some(lines)
}

/// A message as stderr writes it: its later lines indented by a tab, a newline at the end.
fn tabbed(message: &str) -> String {
    let mut s = message.replace('\n', "\n\t");
    s.push('\n');
    s
}

/// JSON lines in, stderr lines out. A line that is no JSON record of a known shape passes
/// as it is (the stderr reader counts it malformed, with its own line number).
struct AsStderr<R> {
    input: R,
    line: Vec<u8>,
    out: Vec<u8>,
    at: usize,
}

impl<R: BufRead> Read for AsStderr<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at >= self.out.len() {
            self.out.clear();
            self.at = 0;
            self.line.clear();
            let limit = crate::MAX_STATEMENT as u64 + 1;
            if (&mut self.input)
                .take(limit)
                .read_until(b'\n', &mut self.line)?
                == 0
            {
                return Ok(0);
            }
            let text = crate::text(&self.line);
            match serde_json::from_str::<Value>(text.trim())
                .ok()
                .as_ref()
                .and_then(stderr_lines)
            {
                Some(lines) => self.out.extend_from_slice(lines.as_bytes()),
                None if text.trim().is_empty() => {}
                None => {
                    self.out.extend_from_slice(b"not a JSON log record: ");
                    self.out.extend_from_slice(text.trim_end().as_bytes());
                    self.out.push(b'\n');
                }
            }
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::What;
    use crate::readers::pg_prefix::session_of_c;

    fn read(log: &str) -> (Vec<Entry>, usize) {
        let mut r = PgJsonLog::new(log.as_bytes());
        let e: Vec<Entry> = r.by_ref().collect();
        (e, r.malformed().count as usize)
    }

    fn sql(e: &Entry) -> &str {
        match &e.what {
            What::Query(s) | What::Execute(s) => s,
            other => panic!("not a statement: {other:?}"),
        }
    }

    /// PostgreSQL 15's jsonlog, made here with the fields its documentation lists.
    #[test]
    fn jsonlog_records_read_as_stderr_messages_with_their_values() {
        let log = r#"{"timestamp":"2026-12-01 10:00:00.100 UTC","user":"app","dbname":"shop","pid":411,"session_id":"674c3a10.19b","error_severity":"LOG","message":"connection authorized: user=app database=shop"}
{"timestamp":"2026-12-01 10:00:00.200 UTC","user":"app","dbname":"shop","pid":411,"session_id":"674c3a10.19b","error_severity":"LOG","message":"statement: SELECT *\nFROM t\nWHERE a = 1"}
{"timestamp":"2026-12-01 10:00:00.300 UTC","user":"app","dbname":"shop","pid":411,"session_id":"674c3a10.19b","error_severity":"LOG","message":"execute <unnamed>: SELECT v FROM t WHERE id = $1","detail":"parameters: $1 = '5'"}
{"timestamp":"2026-12-01 10:00:00.400 UTC","pid":77,"session_id":"674c3a00.4d","error_severity":"LOG","message":"checkpoint starting: time"}
this line is no JSON
"#;
        let (e, malformed) = read(log);
        let s = session_of_c("674c3a10.19b").unwrap();
        let statements: Vec<(u64, &str)> = e
            .iter()
            .filter(|e| matches!(e.what, What::Query(_) | What::Execute(_)))
            .map(|e| (e.session, sql(e)))
            .collect();
        assert_eq!(
            statements,
            [
                (s, "SELECT *\nFROM t\nWHERE a = 1"),
                (s, "SELECT v FROM t WHERE id = '5'")
            ]
        );
        assert_eq!(
            e[0].what,
            What::Connect {
                db: Some("shop".into())
            }
        );
        assert_eq!(malformed, 1, "the line that is no JSON");
    }

    /// A Cloud SQL export (made here after the shape pgbadger's fixture shows) and
    /// CloudNativePG's records.
    #[test]
    fn cloud_sql_and_cloudnativepg_records_read() {
        let cloud = r#"{"insertId":"x","logName":"projects/p/logs/cloudsql.googleapis.com%2Fpostgres.log","severity":"INFO","textPayload":"[24667]: [2-1] db=shop,user=app LOG:  statement: SELECT *  FROM t1","timestamp":"2020-05-02T13:00:20.382318Z"}
"#;
        let more = r#"{"textPayload":"\tpages: 0 removed, 1 remain","timestamp":"2020-05-02T13:00:21Z"}
"#;
        let vacuum = r#"{"textPayload":"[24660]: [1-1] db=,user= LOG:  automatic vacuum of table \"shop.public.t1\": index scans: 0","timestamp":"2020-05-02T13:00:19Z"}
"#;
        let (e, malformed) = read(&format!("{vacuum}{more}{cloud}"));
        assert_eq!(malformed, 0);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!((e[0].session, sql(&e[0])), (24667, "SELECT *  FROM t1"));
        assert!(e[0].at_us.is_some());
        let cnpg = r#"{"level":"info","ts":1669575482.0,"logger":"postgres","msg":"record","record":{"log_time":"2022-11-27 18:58:02.004 UTC","user_name":"app","database_name":"shop","process_id":"599","session_id":"6383b339.257","error_severity":"LOG","message":"duration: 0.097 ms  statement: SELECT 1"}}
"#;
        let operator = r#"{"level":"info","ts":1669575244.9,"logger":"wal-archive","msg":"Backup not configured, skip WAL archiving"}
{"level":"info","ts":1669574901.9,"msg":"Readiness probe failing","err":"instance is not ready yet"}
"#;
        let (e, malformed) = read(&format!("{cnpg}{operator}"));
        assert_eq!(
            malformed, 0,
            "the operator's messages are not the server's, nor wrong"
        );
        assert_eq!(
            (e[0].session, sql(&e[0])),
            (session_of_c("6383b339.257").unwrap(), "SELECT 1")
        );
        assert!(known(&format!("{operator}{cnpg}")).is_ok());
        // JSON of another shape is refused, its keys named.
        let other = known(r#"{"msg":"hello","level":"info"}"#).unwrap_err();
        assert!(crate::is_bad_input(&other));
        assert!(
            format!("{other:#}").contains("msg, level")
                || format!("{other:#}").contains("level, msg")
        );
    }
}
