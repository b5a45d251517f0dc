//! What each client does in a loop, described once for every engine: the kind, the tables,
//! the scripts ([`oltp`]: sysbench's, [`pgbench`]: pgbench's built-ins, [`query`]: the user's
//! statements), written against a [`Session`] (`client::connection`) that each engine implements. An
//! engine prepares the tables and executes statements; it never holds a script.

pub mod oltp;
pub mod pgbench;
pub mod query;
pub mod replay;

use crate::client::connection::{DbError, Kind, Session};
use crate::client::dial::Connection;
use crate::client::lean;
use crate::client::mode::QueryMode;
use crate::error::usage;
use crate::rng::Rng;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// The kinds of workload (`--workload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// One or more SQL statements in a loop (like mysqlslap -q).
    Query,
    /// sysbench oltp_point_select: `SELECT c FROM sbtestN WHERE id=?`.
    PointSelect,
    /// sysbench oltp_read_only: a transaction of 10 point selects and 4 range queries.
    ReadOnly,
    /// sysbench oltp_read_write: read-only plus 2 updates, a delete and an insert.
    ReadWrite,
    /// sysbench oltp_insert: one auto-increment insert per event.
    Insert,
    /// pgbench -S: one `SELECT abalance FROM pgbench_accounts WHERE aid = ?` per event.
    SelectOnly,
    /// pgbench -N: update an account, read it, insert a history row, in a transaction.
    SimpleUpdate,
    /// pgbench's default (TPC-B like): simple-update plus a teller and a branch update.
    TpcbLike,
    /// A captured statement log replayed, session by session (`--log FILE`).
    Replay,
}

impl WorkloadKind {
    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Query => "query",
            WorkloadKind::PointSelect => "point-select",
            WorkloadKind::ReadOnly => "read-only",
            WorkloadKind::ReadWrite => "read-write",
            WorkloadKind::Insert => "insert",
            WorkloadKind::SelectOnly => "select-only",
            WorkloadKind::SimpleUpdate => "simple-update",
            WorkloadKind::TpcbLike => "tpcb-like",
            WorkloadKind::Replay => "replay",
        }
    }

    /// pgbench's built-ins, on the pgbench_* tables.
    pub fn is_pgbench(self) -> bool {
        matches!(
            self,
            WorkloadKind::SelectOnly | WorkloadKind::SimpleUpdate | WorkloadKind::TpcbLike
        )
    }

    /// Every kind, in the order `--help` lists them.
    pub const ALL: [WorkloadKind; 9] = [
        WorkloadKind::Query,
        WorkloadKind::PointSelect,
        WorkloadKind::ReadOnly,
        WorkloadKind::ReadWrite,
        WorkloadKind::Insert,
        WorkloadKind::SelectOnly,
        WorkloadKind::SimpleUpdate,
        WorkloadKind::TpcbLike,
        WorkloadKind::Replay,
    ];

    /// Parse a name from a file or flag.
    pub fn parse(s: &str) -> Result<WorkloadKind> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                usage(format!(
                    "unknown workload '{s}': choose one of query, point-select, read-only, \
                 read-write, insert, select-only, simple-update, tpcb-like (these three on \
                 PostgreSQL), replay (a captured log: --log FILE)"
                ))
            })
    }
}

/// A validated workload description (what results.json records under `workload`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Which workload.
    pub kind: WorkloadKind,
    /// sbtest tables used (OLTP kinds).
    pub tables: u32,
    /// Rows per sbtest table when dbtax prepares them.
    pub table_size: u64,
    /// pgbench's scale factor when dbtax creates the pgbench tables (100,000 accounts each).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub scale: u32,
    /// How the clients send the statements (`--protocol`): their values written into the
    /// text, or prepared on the server and executed with the values bound. A replay sends
    /// each statement as its log recorded it. Results written before dbtax offered the
    /// choice ran prepared.
    #[serde(default = "prepared_before")]
    pub protocol: QueryMode,
    /// Statements of the `query` workload, run in order as one event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<String>,
    /// Statements run once before the `query` workload (create a table...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<String>,
    /// The `replay` workload: which log, which slice, at what pace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<dbtax_logs::replay_spec::ReplaySpec>,
    /// The replay's slice, once read (`load_replay`).
    #[serde(skip)]
    pub slice: dbtax_logs::slice::Loaded,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            kind: WorkloadKind::PointSelect,
            tables: 4,
            table_size: 100_000,
            scale: 1,
            protocol: QueryMode::default(),
            queries: vec![],
            setup: vec![],
            replay: None,
            slice: Default::default(),
        }
    }
}

/// A workload whose tables are ready, able to make scripts for connections.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreparedWorkload {
    /// The description.
    pub workload: Workload,
    /// Largest id per sbtest table, as found or created.
    pub max_ids: Vec<u64>,
    /// Per sbtest table: whether dbtax created it (false: found and reused as it was).
    /// pgbench workloads: one entry, for the four pgbench tables.
    pub created: Vec<bool>,
    /// pgbench workloads: the scale of the tables as found (rows of pgbench_branches).
    pub scale: Option<u64>,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// A workload read from results that do not say how its statements were sent: dbtax
/// prepared them before `--protocol`.
fn prepared_before() -> QueryMode {
    QueryMode::Prepared
}

impl PreparedWorkload {
    /// The JSON results record: the description, plus the tables as found.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = self.workload.to_json();
        if let Some(scale) = self.scale {
            v["tables_found"] = serde_json::json!([{
                "table": "pgbench_accounts",
                "max_id": scale * 100_000,
                "created": self.created.first().copied().unwrap_or(false),
            }]);
            v["scale_found"] = scale.into();
        } else if let Some(slice) = &self.workload.slice.0 {
            v["replay"]["read"] = serde_json::to_value(&slice.stats).unwrap_or_default();
            v["replay"]["fingerprints"] =
                serde_json::to_value(&slice.fingerprints).unwrap_or_default();
        } else if !self.max_ids.is_empty() {
            v["tables_found"] = self
                .max_ids
                .iter()
                .zip(&self.created)
                .enumerate()
                .map(|(i, (max_id, created))| {
                    serde_json::json!({
                        "table": format!("sbtest{}", i + 1),
                        "max_id": max_id,
                        "created": created,
                    })
                })
                .collect();
        }
        v
    }
}

impl Workload {
    /// Check the description before anything touches a server.
    pub fn validate(&self) -> Result<()> {
        if self.kind == WorkloadKind::Replay {
            if self.replay.is_none() {
                return Err(usage(
                    "the replay workload needs a log: --log FILE (a MariaDB/MySQL general or \
                     slow log, a PostgreSQL stderr or csv log)",
                ));
            }
        } else if self.replay.is_some() {
            return Err(usage("--log goes with --workload replay"));
        } else if self.kind == WorkloadKind::Query {
            if self.queries.iter().all(|q| q.trim().is_empty()) {
                return Err(usage(
                    "the query workload needs at least one statement: --query 'SELECT 1'",
                ));
            }
        } else {
            if self.tables == 0 {
                return Err(usage("--tables must be at least 1"));
            }
            if self.table_size == 0 {
                return Err(usage("--table-size must be at least 1"));
            }
            if self.scale == 0 {
                return Err(usage("--scale must be at least 1"));
            }
        }
        Ok(())
    }

    /// How the clients send this workload's statements: as `protocol` says, but a replay
    /// prepares what its log shows prepared (and sends the rest one statement at a time).
    pub fn query_mode(&self) -> QueryMode {
        if self.kind == WorkloadKind::Replay {
            QueryMode::Prepared
        } else {
            self.protocol
        }
    }

    /// Read the replay's slice (once): `span`, with a recorded pace, the recorded time the
    /// longest trial replays. A log that cannot be read is bad input.
    pub fn load_replay(&mut self, span: Option<std::time::Duration>) -> Result<()> {
        if let (Some(spec), None) = (&self.replay, &self.slice.0) {
            self.slice = dbtax_logs::slice::Loaded(Some(std::sync::Arc::new(
                dbtax_logs::slice::load(spec, span, &crate::interrupt::check)?,
            )));
        }
        Ok(())
    }

    /// The JSON object results record.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// One client: a connection with its workload's statements prepared.
pub struct Client {
    connection: Connection,
    script: Box<dyn Script>,
    /// A replay at a recorded pace: its speed-up.
    pace: Option<f64>,
}

/// What a client runs, event by event: one script per kind of workload. A replay's
/// per-client behaviour is its script's (its share of the sessions, its place kept over a
/// reconnect, a skipped start passed over, the fingerprint it last timed, its recorded
/// schedule); the other scripts keep the defaults, and `Client` knows no kind.
pub trait Script: Send {
    /// Run one event (a statement, or a transaction); returns the statements executed.
    fn event(&mut self, s: &mut dyn Session, rng: &mut Rng) -> Result<u32, DbError>;
    /// Run share `lane` of `lanes` (a replay: of the slice's sessions).
    fn set_lane(&mut self, _lane: usize, _lanes: usize) {}
    /// Its share is dealt, on a connection that is new to it (after `set_lane`, or a
    /// reconnect): prepare what the share executes prepared (a replay of a log's prepared
    /// statements). Blocking, before the connection joins an event loop.
    fn connected(&mut self, _s: &mut dyn Session) {}
    /// The rows the last event's statement should send (a replay of a log that recorded
    /// them), None when nothing says.
    fn expected_rows(&self) -> Option<u64> {
        None
    }
    /// Its connection was lost: true when the script goes on with the next connection from
    /// where it was (a replay, which prepares nothing); false: it is made anew with it.
    fn reconnected(&mut self) -> bool {
        false
    }
    /// Rate mode skipped an event (a replay passes over its statement).
    fn skip(&mut self) {}
    /// The fingerprint tag of the last event's statement, if tagged.
    fn tag(&self) -> Option<u32> {
        None
    }
    /// At a recorded pace `speed`: this client's intended starts (ns from the trial's
    /// start) and the period after which they repeat.
    fn recorded_schedule(&mut self, _speed: f64) -> Option<(Vec<u64>, u64)> {
        None
    }
}

impl Client {
    /// Prepare the workload's statements on `connection`.
    pub fn new(mut connection: Connection, w: &PreparedWorkload) -> Result<Client, DbError> {
        let s = connection.session();
        let script: Box<dyn Script> = match w.workload.kind {
            WorkloadKind::Query => Box::new(query::QueryScript::new(
                s,
                &w.workload.queries,
                w.workload.protocol,
            )?),
            WorkloadKind::Replay => match &w.workload.slice.0 {
                Some(slice) => {
                    // The second lock: what the classifier missed fails on the server.
                    if !w.workload.replay.as_ref().is_some_and(|r| r.writes) {
                        replay::read_only(s)?;
                    }
                    Box::new(replay::ReplayScript::new(slice.clone()))
                }
                None => {
                    return Err(DbError {
                        message: "the replay's log was not read".into(),
                        kind: Kind::Refused,
                    });
                }
            },
            k if k.is_pgbench() => {
                Box::new(pgbench::PgbenchScript::new(s, k, w.scale.unwrap_or(1))?)
            }
            k => Box::new(oltp::OltpScript::new(s, k, &w.max_ids)?),
        };
        let pace = match w.workload.replay.as_ref().map(|r| r.pace) {
            Some(dbtax_logs::replay_spec::Pace::Recorded(x)) => Some(x),
            _ => None,
        };
        Ok(Client {
            connection,
            script,
            pace,
        })
    }

    /// Run one event (a statement, or a transaction); returns the statements executed.
    pub fn event(&mut self, rng: &mut Rng) -> Result<u32, DbError> {
        self.script.event(self.connection.session(), rng)
    }

    /// A lean client's connection (None: a driver's, which only runs blocking).
    pub fn conn(&mut self) -> Option<&mut lean::Conn> {
        self.connection.lean()
    }

    /// A lean client's next event, its requests encoded into `requests` without running
    /// them (the event loop sends them one by one); returns the statements it will run.
    /// None for a driver's client.
    pub fn plan(&mut self, rng: &mut Rng, requests: &mut lean::Requests) -> Option<u32> {
        requests.clear();
        let conn = self.connection.lean()?;
        let mut encoder = lean::Encoder {
            protocol: conn.protocol.as_mut(),
            requests,
        };
        self.script.event(&mut encoder, rng).ok()
    }

    /// Run share `lane` of `lanes` (a replay's sessions).
    pub fn set_lane(&mut self, lane: usize, lanes: usize) {
        self.script.set_lane(lane, lanes);
        self.script.connected(self.connection.session());
    }

    /// This new client takes over from `old`, whose connection was lost: a script that goes
    /// on where it was (a replay's) comes over, any other starts anew here.
    pub fn resume(mut self, old: &mut Client) -> Client {
        if old.script.reconnected() {
            std::mem::swap(&mut self.script, &mut old.script);
            self.script.connected(self.connection.session());
        }
        self
    }

    /// Rate mode skipped an event.
    pub fn skip(&mut self) {
        self.script.skip();
    }

    /// The fingerprint tag of the last event's statement, if tagged.
    pub fn tag(&self) -> Option<u32> {
        self.script.tag()
    }

    /// Whether the last event's answer sent other rows than its log recorded (a replay of
    /// a slow log; false where either is not known).
    pub fn rows_differ(&mut self) -> bool {
        let want = self.script.expected_rows();
        match (want, self.connection.lean().and_then(|c| c.protocol.rows())) {
            (Some(w), Some(got)) => w != got,
            _ => false,
        }
    }

    /// A replay at a recorded pace: this client's intended starts (ns from the trial's
    /// start) and the period after which they repeat.
    pub fn recorded_schedule(&mut self) -> Option<(Vec<u64>, u64)> {
        let speed = self.pace?;
        self.script.recorded_schedule(speed)
    }
}

/// Split a SQL text into statements on `;` outside quotes (for `--query` and files).
pub fn split_sql(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut prev = '\0';
    for ch in text.chars() {
        match quote {
            Some(q) if ch == q && prev != '\\' => quote = None,
            Some(_) => {}
            None if ch == '\'' || ch == '"' || ch == '`' => quote = Some(ch),
            None if ch == ';' => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
                prev = ch;
                continue;
            }
            None => {}
        }
        cur.push(ch);
        prev = ch;
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_sql_respects_quotes() {
        assert_eq!(split_sql("select 1;"), vec!["select 1"]);
        assert_eq!(
            split_sql("insert into t values ('a;b'); select 2 ;;"),
            vec!["insert into t values ('a;b')", "select 2"]
        );
    }

    #[test]
    fn unknown_workload_is_a_usage_error() {
        let e = WorkloadKind::parse("tpcc").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert_eq!(
            WorkloadKind::parse("read-write").unwrap(),
            WorkloadKind::ReadWrite
        );
    }
}
