//! The slice of a log a run replays: read once, streamed, before anything changes on a server
//! (a log that cannot be read is bad input). The log is read from `--from` until `--to`, until
//! the slice holds `max_statements`, or (recorded pace) until it spans what the longest trial
//! needs; only the slice is kept, so a log of any size replays in bounded memory. Statements
//! that would change the data (unless `--replay-writes`) or the server (always) are counted
//! and left out. Each statement keeps its session, its offset from the slice's first
//! statement, its session's default database at the time, and its fingerprint's tag (the
//! most frequent fingerprints are timed one by one).

use crate::bad_input as usage;
use crate::fingerprint::digest;
use crate::hash::Fx;
use crate::plural;
use crate::read_only::classify::{Class, Verdict, reason, worse};
use crate::read_only::lex::Dialect;
use crate::readers::mysql::{GeneralLog, SlowLog};
use crate::readers::pg_csv::PgCsvLog;
use crate::readers::pg_stderr::PgStderrLog;
use crate::replay_spec::{LogFormat, Mark, ReplaySpec};
use crate::{LogReader, MalformedLines, Param, What};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::Path;

/// How many fingerprints are timed one by one (the rest together, untold).
pub const TAGGED: usize = 32;
/// No database / no tag.
pub const NONE: u32 = u32::MAX;

/// One statement of the slice.
#[derive(Debug, Clone)]
pub struct Stmt {
    /// Its recorded offset from the slice's first statement, ns.
    pub at_ns: u64,
    /// Its session, numbered in the slice from 0 by first appearance.
    pub session: u32,
    /// Its session's default database then (an index into `Slice::uses`), or NONE.
    pub db: u32,
    /// Its fingerprint's tag (< TAGGED), or NONE.
    pub tag: u32,
    /// The rows the log says it sent (a slow log's `Rows_sent`), or NONE: not recorded.
    pub rows: u32,
    /// The text.
    pub sql: Box<str>,
    /// An execution of a prepared statement: the statement (an index into
    /// `Slice::templates`), or NONE: replayed as its text.
    pub prep: u32,
    /// Its values.
    pub params: Box<[Param]>,
}

/// A prepared statement the slice executes: replayed prepared on each connection that runs
/// it, in its session's default database then.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Template {
    /// The statement as prepared (`?` or `$n` placeholders).
    pub sql: Box<str>,
    /// The default database it was prepared in (an index into `Slice::uses`), or NONE.
    pub db: u32,
}

/// A fingerprint of the slice.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FingerprintInfo {
    /// Its digest.
    pub digest: String,
    /// The fingerprint.
    pub fingerprint: String,
    /// Its first statement (up to 200 characters).
    pub sample: String,
    /// Its statements in the slice.
    pub count: u64,
}

/// What reading the log found (results.json `workload.replay`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SliceStats {
    /// The format read.
    pub format: String,
    /// Log entries read (connects, statements, quits…).
    pub entries: u64,
    /// Statements in the slice.
    pub statements: u64,
    /// Sessions in the slice.
    pub sessions: u32,
    /// Sessions left out by `--sessions`, and their statements.
    pub sessions_left_out: u32,
    /// Statements left out with them.
    pub statements_left_out: u64,
    /// Statements left out because they change data or schema.
    pub skipped_writes: u64,
    /// Statements left out because they change the server (settings, users, sessions) or
    /// cannot be shown to only read.
    pub skipped_server: u64,
    /// Every statement left out by the classifier, counted by its reason.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub skipped: std::collections::BTreeMap<String, u64>,
    /// Lines that belonged to nothing.
    pub malformed_lines: u64,
    /// The first of them: (line, why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub malformed: Vec<(u64, String)>,
    /// The slice's recorded length, s.
    pub span_s: f64,
    /// Its statements per second as recorded.
    pub recorded_rate: f64,
    /// Why reading stopped: "end of log", "--to", "max statements", "span".
    pub ended_by: String,
    /// Statements that are executions of prepared statements the log shows with their
    /// values, replayed prepared.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prepared: u64,
    /// The prepared statements they execute.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prepared_statements: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The slice a run replays.
#[derive(Debug, Default)]
pub struct Slice {
    /// Its statements in recorded order.
    pub stmts: Vec<Stmt>,
    /// Sessions in it.
    pub sessions: u32,
    /// `USE db` statements by database index (MySQL family).
    pub uses: Vec<String>,
    /// The tagged fingerprints, by tag.
    pub fingerprints: Vec<FingerprintInfo>,
    /// What reading found.
    pub stats: SliceStats,
    /// The prepared statements executed, by index.
    pub templates: Vec<Template>,
    /// Preparations a server refused while replaying (those executions ran as text).
    pub prepare_refused: std::sync::atomic::AtomicU64,
}

/// A log must be a regular file: a FIFO would block its open (no writer: for ever), a
/// device never ends (`/dev/zero`). Checked without opening it.
fn regular(path: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path)
        .map_err(|e| usage(format!("cannot read the log {}: {e}", path.display())))?;
    let t = meta.file_type();
    let what = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (a pipe)"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(usage(format!(
        "the log {} is {what}: --log reads a regular file (copy the log to one first). \
         Nothing was changed",
        path.display()
    )))
}

/// Open `spec`'s log as a reader of its format (with the user's `log_line_prefix`, if given).
fn open(path: &Path, format: LogFormat, prefix: Option<&str>) -> Result<Box<dyn LogReader>> {
    regular(path)?;
    let file = std::fs::File::open(path)
        .map_err(|e| usage(format!("cannot read the log {}: {e}", path.display())))?;
    let r = BufReader::with_capacity(1 << 16, file);
    Ok(match format {
        LogFormat::General => Box::new(GeneralLog::new(r)),
        LogFormat::Slow => Box::new(SlowLog::new(r)),
        LogFormat::Postgres => match prefix {
            Some(p) => Box::new(PgStderrLog::with_prefix(
                r,
                crate::readers::pg_prefix::Prefix::parse(p)?,
            )),
            None => Box::new(PgStderrLog::new(r)),
        },
        LogFormat::Csvlog => Box::new(PgCsvLog::new(r)),
        LogFormat::Jsonlog => Box::new(crate::readers::pg_json::PgJsonLog::new(r)),
    })
}

/// A log's first 256 KB, which its format is told from.
fn head_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = vec![];
    BufReader::new(std::fs::File::open(path)?)
        .take(256 * 1024)
        .read_to_end(&mut head)?;
    Ok(head)
}

/// A log's first 256 KB as text (`LogFormat::detect` reads it).
pub fn head_of(path: &Path) -> std::io::Result<String> {
    Ok(String::from_utf8_lossy(&head_bytes(path)?).into_owned())
}

/// The log's format: as given, or told from its first 256 KB.
pub fn format_of(spec: &ReplaySpec) -> Result<LogFormat> {
    regular(&spec.log)?;
    if let Some(f) = spec.format {
        return Ok(f);
    }
    let head = head_bytes(&spec.log)
        .map_err(|e| usage(format!("cannot read the log {}: {e}", spec.log.display())))?;
    let packed = [
        (&b"\x1f\x8b"[..], "gzip", "zcat"),
        (b"BZh", "bzip2", "bzcat"),
        (b"\xfd7zXZ\x00", "xz", "xzcat"),
        (b"\x28\xb5\x2f\xfd", "zstd", "zstdcat"),
    ];
    if let Some((_, name, cat)) = packed.iter().find(|(magic, ..)| head.starts_with(magic)) {
        return Err(usage(format!(
            "the log {} is compressed ({name}): decompress it first ({cat} {} > FILE.log) and \
             give --log the result. Nothing was changed",
            spec.log.display(),
            spec.log.display()
        )));
    }
    let head = String::from_utf8_lossy(&head);
    let format = LogFormat::detect(&head);
    if format == Some(LogFormat::Jsonlog) {
        // JSON of a shape not read is refused here, in words that say what it holds.
        crate::readers::pg_json::known(&head)?;
    }
    // A file of no format read: said what it is, when that can be told.
    if format.is_none() && head.trim().is_empty() {
        return Err(usage(format!(
            "the log {} is empty: there is nothing to replay. Nothing was changed",
            spec.log.display()
        )));
    }
    if format.is_none()
        && (head.contains(" LOG C-0x") || head.contains("LOG process up: pgbouncer"))
    {
        return Err(usage(format!(
            "{} is pgbouncer's log: it records connections, not statements. Replay the \
             PostgreSQL server's own log (log_statement = all, or log_min_duration_statement \
             = 0). Nothing was changed",
            spec.log.display()
        )));
    }
    format.ok_or_else(|| {
        usage(format!(
            "cannot tell the format of {}: its first lines are neither a MariaDB/MySQL general \
             or slow log nor a PostgreSQL stderr or csv log; give --log-format",
            spec.log.display()
        ))
    })
}

/// A session while reading.
#[derive(Default)]
struct Seen {
    db: Option<u32>,
    rank: Option<u32>,
    /// The statements it prepared (a MySQL-family general log), the latest last.
    prepared: Vec<String>,
}

/// The prepared statements a session's executions are matched against, at most.
const PREPARED_PER_SESSION: usize = 64;

/// Read the slice: `span`: with a recorded pace, the recorded time the longest trial replays
/// (reading stops past it). `keep_going` is asked every few thousand entries (a long read is
/// ended by its error: Ctrl-C, say).
pub fn load(
    spec: &ReplaySpec,
    span: Option<std::time::Duration>,
    keep_going: &dyn Fn() -> Result<()>,
) -> Result<Slice> {
    let format = format_of(spec)?;
    let from = spec.from.as_deref().map(Mark::parse).transpose()?;
    let to = spec.to.as_deref().map(Mark::parse).transpose()?;
    let mut reader = open(&spec.log, format, spec.line_prefix.as_deref())?;
    let mysql = format.family() == "mysql";
    let dialect = if mysql {
        Dialect::Mysql
    } else {
        Dialect::Postgres
    };
    // The slow log writes `use db;` when the database differs from the last one it wrote,
    // whichever session that was: there a database holds for every session after it.
    let shared_db = format == LogFormat::Slow;
    let mut last_use: Option<u32> = None;
    let mut slice = Slice::default();
    let mut seen: HashMap<u64, Seen, Fx> = HashMap::default();
    let mut dbs: HashMap<String, u32> = HashMap::new();
    let mut fps: HashMap<String, u32, Fx> = HashMap::default();
    let mut fp_list: Vec<FingerprintInfo> = vec![];
    let mut templates: HashMap<Template, u32, Fx> = HashMap::default();
    // Each shape's verdict, once (statements that differ only in their numbers).
    let mut verdicts = crate::read_only::classify::Verdicts::default();
    // The fingerprint's buffers, kept from one statement to the next.
    let (mut scratch, mut f) = (crate::fingerprint::Scratch::default(), String::new());
    let mut stmt_fp: Vec<u32> = vec![];
    let mut log_start: Option<i64> = None;
    let mut slice_start: Option<i64> = None;
    let mut clock = 0i64;
    let mut ended_by = "end of log";
    let span_us = span.map(|d| d.as_micros() as i64);
    let mut entries = 0u64;
    // Whether the log times statements to the second only.
    let mut whole_seconds = true;
    for e in reader.by_ref() {
        entries += 1;
        // Nothing has changed anywhere yet: Ctrl-C ends a long read at once.
        if entries.is_multiple_of(4096) {
            keep_going()?;
        }
        if let Some(t) = e.at_us {
            clock = t;
            log_start.get_or_insert(t);
        }
        let start = log_start.unwrap_or(0);
        // Before the slice a statement costs no more than its time check.
        let statement = matches!(e.what, What::Query(_) | What::Execute(_));
        if statement && from.is_some_and(|m| clock < m.resolve(start)) {
            continue;
        }
        let s = seen.entry(e.session).or_default();
        let mut bound = e.bound;
        let rows = e
            .rows
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n != NONE)
            .unwrap_or(NONE);
        let sql = match e.what {
            What::Connect { db } => {
                s.db = db.filter(|_| mysql).map(|d| intern(&mut dbs, d));
                continue;
            }
            What::InitDb(d) => {
                s.db = mysql.then(|| intern(&mut dbs, d));
                if shared_db {
                    last_use = s.db;
                }
                continue;
            }
            What::Quit => {
                seen.remove(&e.session);
                continue;
            }
            What::Prepare(t) => {
                if mysql && !s.prepared.contains(&t) {
                    if s.prepared.len() == PREPARED_PER_SESSION {
                        s.prepared.remove(0);
                    }
                    s.prepared.push(t);
                }
                continue;
            }
            What::Query(q) => q,
            What::Execute(q) => {
                if bound.is_none() && mysql {
                    bound = s.prepared.iter().rev().find_map(|t| {
                        let params = crate::prepared::bind(t, &q)?;
                        Some(Box::new(crate::Bound {
                            template: t.clone(),
                            params,
                        }))
                    });
                }
                q
            }
            What::Other(_) => continue,
        };
        if to.is_some_and(|m| clock >= m.resolve(start)) {
            ended_by = "--to";
            break;
        }
        let first = *slice_start.get_or_insert(clock);
        whole_seconds &= clock % 1_000_000 == 0;
        if span_us.is_some_and(|sp| clock - first > sp) {
            ended_by = "span";
            break;
        }
        let verdict = if sql.len() > crate::MAX_STATEMENT {
            Verdict {
                class: Class::Server,
                reason: reason::TOO_LONG,
            }
        } else {
            // A prepared execution runs its template with the values bound, which need not
            // read as the logged text does (a value can look like a quote or a comment
            // there): both must be reads. (Sent as text when the server refuses to prepare
            // it, the logged text runs.)
            let text = verdicts.classify(&sql, dialect, &spec.functions);
            match &bound {
                Some(b) if text.class != Class::Server => worse(
                    text,
                    verdicts.classify(&b.template, dialect, &spec.functions),
                ),
                _ => text,
            }
        };
        match verdict.class {
            Class::Server => slice.stats.skipped_server += 1,
            Class::Write if !spec.writes => slice.stats.skipped_writes += 1,
            _ => {}
        }
        if verdict.class == Class::Server || (verdict.class == Class::Write && !spec.writes) {
            *slice
                .stats
                .skipped
                .entry(verdict.reason.to_string())
                .or_default() += 1;
            continue;
        }
        let rank = *s.rank.get_or_insert_with(|| {
            slice.sessions += 1;
            slice.sessions - 1
        });
        scratch.fingerprint(&sql, dialect, &mut f);
        let fi = match fps.get(f.as_str()) {
            Some(&i) => i,
            None => {
                fp_list.push(FingerprintInfo {
                    digest: digest(&f),
                    fingerprint: f.chars().take(400).collect(),
                    sample: sql.chars().take(200).collect(),
                    count: 0,
                });
                fps.insert(f.clone(), fp_list.len() as u32 - 1);
                fp_list.len() as u32 - 1
            }
        };
        fp_list[fi as usize].count += 1;
        stmt_fp.push(fi);
        let db = if shared_db { last_use } else { s.db }.unwrap_or(NONE);
        let (prep, params) = match bound {
            Some(b) => {
                let t = Template {
                    sql: b.template.into_boxed_str(),
                    db,
                };
                let i = *templates.entry(t).or_insert_with_key(|t| {
                    slice.templates.push(t.clone());
                    slice.templates.len() as u32 - 1
                });
                (i, b.params.into_boxed_slice())
            }
            None => (NONE, Box::default()),
        };
        slice.stmts.push(Stmt {
            at_ns: (clock.saturating_sub(first).max(0) as u64).saturating_mul(1000),
            session: rank,
            db,
            tag: NONE,
            rows,
            sql: sql.into_boxed_str(),
            prep,
            params,
        });
        if slice.stmts.len() as u64 >= spec.max_statements {
            ended_by = "max statements";
            break;
        }
    }
    let malformed: &MalformedLines = reader.malformed();
    slice.stats.malformed_lines = malformed.count;
    slice.stats.malformed = malformed
        .first
        .iter()
        .map(|m| (m.line, m.why.to_string()))
        .collect();
    slice.stats.format = format.name().into();
    slice.stats.entries = entries;
    slice.stats.ended_by = ended_by.into();
    if let Some(n) = spec.sessions {
        keep_busiest(&mut slice, &mut stmt_fp, &mut fp_list, n);
    }
    // The most frequent fingerprints are tagged, in order of count.
    let mut order: Vec<usize> = (0..fp_list.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(fp_list[i].count));
    let mut tag_of = vec![NONE; fp_list.len()];
    for (tag, &i) in order.iter().take(TAGGED).enumerate() {
        tag_of[i] = tag as u32;
    }
    for (st, fi) in slice.stmts.iter_mut().zip(&stmt_fp) {
        st.tag = tag_of[*fi as usize];
    }
    slice.fingerprints = order
        .iter()
        .take(TAGGED)
        .map(|&i| fp_list[i].clone())
        .filter(|f| f.count > 0)
        .collect();
    let mut uses = vec![String::new(); dbs.len()];
    for (name, i) in dbs {
        uses[i as usize] = format!("USE `{}`", name.replace('`', "``"));
    }
    slice.uses = uses;
    let mut used = vec![false; slice.templates.len()];
    for st in slice.stmts.iter().filter(|st| st.prep != NONE) {
        slice.stats.prepared += 1;
        used[st.prep as usize] = true;
    }
    slice.stats.prepared_statements = used.iter().filter(|u| **u).count() as u64;
    spread_equal_times(&mut slice.stmts, whole_seconds);
    slice.stats.statements = slice.stmts.len() as u64;
    slice.stats.sessions = slice.sessions;
    let span_ns = slice.stmts.iter().map(|s| s.at_ns).max().unwrap_or(0);
    slice.stats.span_s = span_ns as f64 / 1e9;
    slice.stats.recorded_rate = if span_ns > 0 {
        slice.stmts.len() as f64 / slice.stats.span_s
    } else {
        0.0
    };
    if slice.stmts.is_empty() {
        let st = &slice.stats;
        return Err(usage(format!(
            "the log {} has no statement to replay in the slice asked ({} entries read, {} \
             statements that change data or schema skipped (--replay-writes replays them), {} \
             that change the server skipped, {} malformed lines)",
            spec.log.display(),
            st.entries,
            st.skipped_writes,
            st.skipped_server,
            st.malformed_lines
        )));
    }
    Ok(slice)
}

/// Logs that time statements to the second (MariaDB's general and slow logs) give a whole
/// second's statements one time: spread each run of equal times evenly over the gap to the
/// next time (the last run over the gap before it, or over its second when the log's times
/// are `seconds`), so a recorded pace does not send a second's statements in one burst.
fn spread_equal_times(stmts: &mut [Stmt], seconds: bool) {
    let mut start = 0;
    let mut last_gap = if seconds { 1_000_000_000 } else { 0 };
    while start < stmts.len() {
        let t = stmts[start].at_ns;
        let end = start + stmts[start..].iter().take_while(|s| s.at_ns == t).count();
        let gap = match stmts.get(end) {
            // (A log's times need not rise: PostgreSQL's backends stamp their own lines.)
            Some(next) => next.at_ns.saturating_sub(t),
            None if seconds => 1_000_000_000,
            None => last_gap,
        };
        // A second's statements ran within it, however far the next time is (a session
        // may set its own @@timestamp).
        let gap = if seconds { gap.min(1_000_000_000) } else { gap };
        let n = (end - start) as u128;
        for (k, s) in stmts[start..end].iter_mut().enumerate() {
            s.at_ns = t + (u128::from(gap) * k as u128 / n) as u64;
        }
        last_gap = gap;
        start = end;
    }
}

fn intern(dbs: &mut HashMap<String, u32>, name: String) -> u32 {
    let n = dbs.len() as u32;
    *dbs.entry(name).or_insert(n)
}

/// Keep the `n` sessions with the most statements (renumbered in order of appearance).
fn keep_busiest(slice: &mut Slice, stmt_fp: &mut Vec<u32>, fps: &mut [FingerprintInfo], n: u32) {
    if slice.sessions <= n {
        return;
    }
    let mut counts = vec![0u64; slice.sessions as usize];
    for s in &slice.stmts {
        counts[s.session as usize] += 1;
    }
    let mut order: Vec<u32> = (0..slice.sessions).collect();
    order.sort_by_key(|&s| std::cmp::Reverse(counts[s as usize]));
    let mut keep = vec![false; counts.len()];
    for &s in order.iter().take(n as usize) {
        keep[s as usize] = true;
    }
    let mut renumber = vec![NONE; counts.len()];
    let mut next = 0;
    let before = slice.stmts.len();
    let (mut stmts, mut fpi) = (vec![], vec![]);
    for (mut st, fi) in std::mem::take(&mut slice.stmts)
        .into_iter()
        .zip(stmt_fp.drain(..))
    {
        if !keep[st.session as usize] {
            fps[fi as usize].count -= 1;
            continue;
        }
        if renumber[st.session as usize] == NONE {
            renumber[st.session as usize] = next;
            next += 1;
        }
        st.session = renumber[st.session as usize];
        stmts.push(st);
        fpi.push(fi);
    }
    slice.stats.sessions_left_out = slice.sessions - n;
    slice.stats.statements_left_out = (before - stmts.len()) as u64;
    slice.sessions = n;
    // Offsets from the kept statements' first.
    let first = stmts.iter().map(|s| s.at_ns).min().unwrap_or(0);
    for s in &mut stmts {
        s.at_ns -= first;
    }
    slice.stmts = stmts;
    *stmt_fp = fpi;
}

impl Slice {
    /// The statements client `lane` of `lanes` replays, by index: the sessions numbered
    /// `lane` modulo `lanes`; with more clients than sessions, a client past the last
    /// session replays session `lane` modulo the sessions.
    pub fn lane(&self, lane: usize, lanes: usize) -> Vec<u32> {
        let lanes = lanes.max(1) as u32;
        let sessions = self.sessions.max(1);
        let (of, lanes) = if (lane as u32) < sessions {
            (lane as u32, lanes)
        } else {
            (lane as u32 % sessions, sessions)
        };
        self.stmts
            .iter()
            .enumerate()
            .filter(|(_, s)| s.session % lanes == of)
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// The recorded span of the slice, ns (at least 1).
    pub fn span_ns(&self) -> u64 {
        self.stmts.iter().map(|s| s.at_ns).max().unwrap_or(0).max(1)
    }
}

impl Slice {
    /// The slice without the statements that name an object of `unsafe_` (code that runs
    /// with other rights than the replay's: `reach`), counted as left out under
    /// `reason::REACHES`; None when no statement does.
    pub fn leave_out(&self, unsafe_: &crate::read_only::reach::Unsafe) -> Option<Slice> {
        if unsafe_.is_empty() {
            return None;
        }
        let dialect = match LogFormat::parse(&self.stats.format).map(LogFormat::family) {
            Ok("mysql") => Dialect::Mysql,
            _ => Dialect::Postgres,
        };
        // Each shape once (most of a log's statements are a few shapes).
        let mut known: HashMap<String, bool, Fx> = HashMap::default();
        let mut shape = String::new();
        let mut reaches = |sql: &str| -> bool {
            crate::read_only::classify::number_shape(sql, &mut shape);
            if let Some(&r) = known.get(shape.as_str()) {
                return r;
            }
            let r = crate::read_only::reach::reaches(sql, dialect, unsafe_).is_some();
            known.insert(shape.clone(), r);
            r
        };
        let bad_templates: Vec<bool> = self.templates.iter().map(|t| reaches(&t.sql)).collect();
        let keep: Vec<bool> = self
            .stmts
            .iter()
            .map(|st| {
                !(reaches(&st.sql)
                    || bad_templates
                        .get(st.prep as usize)
                        .copied()
                        .unwrap_or(false))
            })
            .collect();
        let left = keep.iter().filter(|k| !**k).count() as u64;
        if left == 0 {
            return None;
        }
        let mut stats = self.stats.clone();
        stats.statements -= left;
        stats.skipped_server += left;
        *stats
            .skipped
            .entry(crate::read_only::classify::reason::REACHES.to_string())
            .or_default() += left;
        let mut fingerprints = self.fingerprints.clone();
        for (st, k) in self.stmts.iter().zip(&keep) {
            if !k && let Some(f) = fingerprints.get_mut(st.tag as usize) {
                f.count = f.count.saturating_sub(1);
            }
        }
        // (Kept at zero: a statement's tag is its fingerprint's index.)
        Some(Slice {
            stmts: self
                .stmts
                .iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(st, _)| st.clone())
                .collect(),
            sessions: self.sessions,
            uses: self.uses.clone(),
            fingerprints,
            stats,
            templates: self.templates.clone(),
            prepare_refused: Default::default(),
        })
    }
}

/// What a replay would replay, for `--dry-run`: the slice, what was left out and why, and
/// the most frequent fingerprints.
pub fn describe(slice: &Slice) -> String {
    let st = &slice.stats;
    let mut s = format!(
        "  replay     {} of {} ({} log, {} entries read, slice ended by {}), {:.1} s \
         recorded ({:.0} statements/s)\n",
        plural(st.statements, "statement"),
        plural(u64::from(st.sessions), "session"),
        st.format,
        st.entries,
        st.ended_by,
        st.span_s,
        st.recorded_rate
    );
    s += &format!(
        "  left out   {} statements that change data or schema, {} that change the server, {} \
         sessions ({} statements) past --sessions, {} malformed lines{}\n",
        st.skipped_writes,
        st.skipped_server,
        st.sessions_left_out,
        st.statements_left_out,
        st.malformed_lines,
        st.malformed
            .iter()
            .take(3)
            .map(|(line, why)| format!("; line {line}: {why}"))
            .collect::<String>()
    );
    if st.prepared > 0 {
        s += &format!(
            "  prepared   {} of them executions of {}, replayed prepared with their \
             recorded values\n",
            st.prepared,
            plural(st.prepared_statements, "prepared statement")
        );
    }
    for f in slice.fingerprints.iter().take(5) {
        s += &format!("  statement  {:>8} × {}\n", f.count, f.fingerprint);
    }
    s
}

/// A slice read for a run, compared by identity (a workload holds it; two workloads are the
/// same when they hold the same slice).
#[derive(Debug, Clone, Default)]
pub struct Loaded(pub Option<std::sync::Arc<Slice>>);

impl PartialEq for Loaded {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
#[path = "slice_tests.rs"]
mod tests;

/// What a log holds, read as a replay would read it: (statements, sessions). For `dbtax
/// capture` to say what it wrote.
pub fn count(path: &Path, format: LogFormat, prefix: Option<&str>) -> Result<(u64, u64)> {
    let mut sessions = std::collections::HashSet::new();
    let mut statements = 0u64;
    for e in open(path, format, prefix)? {
        if matches!(e.what, What::Query(_) | What::Execute(_)) {
            statements += 1;
            sessions.insert(e.session);
        }
    }
    Ok((statements, sessions.len() as u64))
}
