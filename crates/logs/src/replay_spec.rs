//! What a replay is asked: the log and its format, the slice's bounds, the pace, whether
//! writes run. Parsed from flags and files, checked before anything is read.

use crate::bad_input as usage;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A log's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// MariaDB/MySQL general log (FILE).
    General,
    /// MariaDB/MySQL slow log.
    Slow,
    /// PostgreSQL's stderr format.
    Postgres,
    /// PostgreSQL's csvlog.
    Csvlog,
    /// PostgreSQL's jsonlog, CloudNativePG's JSON, a Cloud SQL export.
    Jsonlog,
}

impl LogFormat {
    /// The name in flags and results.
    pub fn name(self) -> &'static str {
        match self {
            LogFormat::General => "general",
            LogFormat::Slow => "slow",
            LogFormat::Postgres => "postgres",
            LogFormat::Csvlog => "csvlog",
            LogFormat::Jsonlog => "jsonlog",
        }
    }

    /// Parse `--log-format`.
    pub fn parse(s: &str) -> Result<LogFormat> {
        [
            LogFormat::General,
            LogFormat::Slow,
            LogFormat::Postgres,
            LogFormat::Csvlog,
            LogFormat::Jsonlog,
        ]
        .into_iter()
        .find(|f| f.name() == s.trim())
        .ok_or_else(|| {
            usage(format!(
                "unknown log format '{s}': use general, slow (MariaDB/MySQL), postgres \
                 (stderr), csvlog or jsonlog"
            ))
        })
    }

    /// The engine family whose server writes it: "mysql" or "postgres".
    pub fn family(self) -> &'static str {
        match self {
            LogFormat::General | LogFormat::Slow => "mysql",
            LogFormat::Postgres | LogFormat::Csvlog | LogFormat::Jsonlog => "postgres",
        }
    }

    /// Tell the format from a log's first lines.
    pub fn detect(head: &str) -> Option<LogFormat> {
        let mut general = false;
        if head.trim_start().starts_with('{') {
            return Some(LogFormat::Jsonlog);
        }
        let lines: Vec<&str> = head.lines().take(500).collect();
        for (i, &line) in lines.iter().enumerate() {
            // A csv record whose message spans lines: its fields counted over them all.
            let mut record = line.to_string();
            for next in lines.iter().skip(i + 1).take(50) {
                if record.matches('"').count() % 2 == 0 {
                    break;
                }
                record.push('\n');
                record.push_str(next);
            }
            if [
                "# User@Host: ",
                "# Time: ",
                "# Query_time: ",
                "# Thread_id: ",
            ]
            .iter()
            .any(|h| line.starts_with(h))
            {
                return Some(LogFormat::Slow);
            }
            let fields = record.split(',').count();
            // (log_time as PostgreSQL writes it, or quoted by a tool that rewrote the file.)
            let timed = line.strip_prefix('"').unwrap_or(line);
            if fields >= 23
                && timed.len() > 20
                && timed.as_bytes()[4] == b'-'
                && (line.contains(",LOG,") || line.contains(",ERROR,"))
            {
                return Some(LogFormat::Csvlog);
            }
            // The severity after a space (`%m [%p] `), a colon (RDS's `…:[%p]:`) or a bar
            // (pgreplay's `…|%c|`), on a line that starts with the date.
            let dated = line.len() > 10 && line.as_bytes()[4] == b'-' && line.as_bytes()[7] == b'-';
            let severity = ["LOG: ", "DETAIL: ", "ERROR: "].iter().any(|s| {
                line.match_indices(s)
                    .any(|(i, _)| i > 0 && matches!(line.as_bytes()[i - 1], b' ' | b':' | b'|'))
            });
            if line.contains(" LOG:  ") || line.contains(" DETAIL:  ") || dated && severity {
                return Some(LogFormat::Postgres);
            }
            let cmd = ["\tQuery\t", "\tConnect\t", "\tInit DB\t", "\tQuit"];
            general |= cmd.iter().any(|c| line.contains(c))
                || line.contains(" Query\t")
                || crate::readers::mysql::is_general_line(line);
        }
        general.then_some(LogFormat::General)
    }
}

/// How a replay paces each session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Closed loop: each client's next statement as soon as the last one is answered.
    Asap,
    /// Open loop: each statement at its recorded time, the gaps divided by this (1 =
    /// recorded, 2 = twice as fast).
    Recorded(f64),
}

impl Pace {
    /// Parse `--pace`: asap, recorded, or a speed-up ("2x", "0.5x").
    pub fn parse(s: &str) -> Result<Pace> {
        let t = s.trim();
        let bad = || {
            usage(format!(
                "bad pace '{t}': use asap (closed loop), recorded (each statement at its \
                 recorded time), or a speed-up from 0.001x to 1000x, like 2x"
            ))
        };
        match t {
            "asap" => Ok(Pace::Asap),
            "recorded" => Ok(Pace::Recorded(1.0)),
            _ => {
                let x: f64 = t
                    .strip_suffix('x')
                    .ok_or_else(bad)?
                    .parse()
                    .map_err(|_| bad())?;
                if (0.001..=1000.0).contains(&x) {
                    Ok(Pace::Recorded(x))
                } else {
                    Err(bad())
                }
            }
        }
    }

    /// The name in results.
    pub fn name(self) -> String {
        match self {
            Pace::Asap => "asap".into(),
            Pace::Recorded(1.0) => "recorded".into(),
            Pace::Recorded(x) => format!("{x}x"),
        }
    }
}

impl Serialize for Pace {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Pace {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Pace, D::Error> {
        let s = String::deserialize(d)?;
        Pace::parse(&s).map_err(|e| serde::de::Error::custom(format!("{e:#}")))
    }
}

/// Where a slice starts or ends: an offset from the log's first statement, or a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mark {
    /// µs after the log's first timed entry.
    After(i64),
    /// µs since the epoch, in the log's clock.
    At(i64),
}

impl Mark {
    /// Parse `--from` / `--to`: "90s", "5m", "1h" after the log's start, or a time as the log
    /// writes it ("2026-12-01 10:00:00", "2026-12-01T10:00:00", "261201 10:00:00").
    pub fn parse(s: &str) -> Result<Mark> {
        let t = s.trim();
        if let Ok(d) = crate::time::duration(t) {
            return Ok(Mark::After(d.as_micros() as i64));
        }
        crate::readers::pg_prefix::pg_time(t)
            .or_else(|| crate::readers::mysql::parse_time(t))
            .map(Mark::At)
            .ok_or_else(|| {
                usage(format!(
                    "bad time '{t}': write an offset from the log's start (90s, 5m, 1h) or a \
                     time as the log writes it (2026-12-01 10:00:00)"
                ))
            })
    }

    pub(super) fn resolve(self, start: i64) -> i64 {
        match self {
            Mark::After(us) => start + us,
            Mark::At(us) => us,
        }
    }
}

/// What to replay, as the user asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplaySpec {
    /// The log file.
    pub log: std::path::PathBuf,
    /// Its format (None: told from its content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<LogFormat>,
    /// PostgreSQL's `log_line_prefix` as the user gave it (`--log-line-prefix`); None: the
    /// common prefixes are recognised from the lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_prefix: Option<String>,
    /// Keep only the busiest N sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<u32>,
    /// Where the slice starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Where it ends at the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// How sessions are paced.
    pub pace: Pace,
    /// Replay statements that change data or schema.
    #[serde(default)]
    pub writes: bool,
    /// The user accepted writes on a server dbtax did not start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub i_understand_writes: bool,
    /// At most this many statements in the slice.
    pub max_statements: u64,
    /// Functions and procedures the user allows a replayed statement to call, by name
    /// (lower-case; `schema.name` or `name`): every other call is skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<String>,
    /// `--replay-user`: the login the replaying clients use (`temporary`: one dbtax
    /// creates); None: temporary on a managed target, required elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// The word of `--replay-user` that asks dbtax for a temporary reading login.
pub const TEMPORARY: &str = "temporary";

/// The replay options as flags or a file give them (None / false: not given).
#[derive(Debug, Default)]
pub struct ReplayOptions<'a> {
    /// `--log-format`.
    pub log_format: Option<&'a str>,
    /// `--log-line-prefix`.
    pub line_prefix: Option<&'a str>,
    /// `--sessions`.
    pub sessions: Option<u32>,
    /// `--from`.
    pub from: Option<&'a str>,
    /// `--to`.
    pub to: Option<&'a str>,
    /// `--pace`.
    pub pace: Option<&'a str>,
    /// `--replay-writes`.
    pub writes: bool,
    /// `--i-understand-writes`.
    pub i_understand_writes: bool,
    /// `--max-statements`.
    pub max_statements: Option<u64>,
    /// `--replay-functions`.
    pub functions: &'a [String],
    /// `--replay-user`.
    pub user: Option<&'a str>,
}

impl ReplayOptions<'_> {
    /// Whether any option is given.
    pub fn any(&self) -> bool {
        self.log_format.is_some()
            || self.line_prefix.is_some()
            || self.sessions.is_some()
            || self.from.is_some()
            || self.to.is_some()
            || self.pace.is_some()
            || self.writes
            || self.i_understand_writes
            || self.max_statements.is_some()
            || !self.functions.is_empty()
            || self.user.is_some()
    }
}

impl ReplaySpec {
    /// Apply the given options over this spec, each checked (bad input is a usage error).
    pub fn apply(&mut self, o: &ReplayOptions<'_>) -> Result<()> {
        if let Some(f) = o.log_format {
            self.format = Some(LogFormat::parse(f)?);
        }
        if let Some(p) = o.line_prefix {
            crate::readers::pg_prefix::Prefix::parse(p)?;
            match self.format {
                None | Some(LogFormat::Postgres) => self.format = Some(LogFormat::Postgres),
                Some(other) => {
                    return Err(usage(format!(
                        "--log-line-prefix is PostgreSQL's stderr (or syslog) format's, not \
                         --log-format {}'s",
                        other.name()
                    )));
                }
            }
            self.line_prefix = Some(p.to_string());
        }
        if let Some(n) = o.sessions {
            if n == 0 {
                return Err(usage("--sessions must be at least 1"));
            }
            self.sessions = Some(n);
        }
        for (mark, to) in [(o.from, &mut self.from), (o.to, &mut self.to)] {
            if let Some(m) = mark {
                Mark::parse(m)?;
                *to = Some(m.to_string());
            }
        }
        if let Some(p) = o.pace {
            self.pace = Pace::parse(p)?;
        }
        self.writes |= o.writes;
        self.i_understand_writes |= o.i_understand_writes;
        if let Some(n) = o.max_statements {
            if n == 0 {
                return Err(usage("--max-statements must be at least 1"));
            }
            self.max_statements = n;
        }
        if let Some(u) = o.user {
            if u.trim().is_empty() {
                return Err(usage("--replay-user takes a user name, or temporary"));
            }
            self.user = Some(u.trim().to_string());
        }
        for f in o.functions {
            let f = f.trim().to_lowercase();
            if f.is_empty() {
                return Err(usage(
                    "--replay-functions takes names: --replay-functions price_of,app.tax",
                ));
            }
            let bare = f.rsplit('.').next().unwrap_or(&f);
            if let Some(does) = crate::read_only::functions::builtin(bare) {
                return Err(usage(format!(
                    "--replay-functions names the user's stored functions that only read; \
                     {f} is the server's own ({does}), and dbtax never lets it through"
                )));
            }
            if !self.functions.contains(&f) {
                self.functions.push(f);
            }
        }
        Ok(())
    }

    /// A replay of `log` with the defaults: asap, read-only, up to 200,000 statements.
    pub fn of(log: &Path) -> ReplaySpec {
        ReplaySpec {
            log: log.to_path_buf(),
            format: None,
            line_prefix: None,
            sessions: None,
            from: None,
            to: None,
            pace: Pace::Asap,
            writes: false,
            i_understand_writes: false,
            max_statements: 200_000,
            functions: vec![],
            user: None,
        }
    }
}
