//! Client connections for the worker loop: one rust-postgres connection plus its workload's
//! prepared statements. pgbench's three built-in scripts statement for statement (with its
//! `random()` ranges), sysbench's oltp scripts on sbtest tables as its pgsql driver lays them
//! out, and the user's statements for `query` (the simple query protocol, as psql sends them).

use super::clean_error;
use crate::error::usage;
use crate::rng::Rng;
use crate::server::{Client, ClientError, Connector};
use crate::workload::{PreparedWorkload, WorkloadKind};
use anyhow::Result;
use postgres::Statement;
use postgres::types::ToSql;

const RANGE_SIZE: u64 = 100;
const POINT_SELECTS: usize = 10;
/// pgbench: accounts, tellers and branches per unit of scale.
pub const ACCOUNTS: u64 = 100_000;
/// Tellers per branch.
pub const TELLERS: u64 = 10;

fn client_error(e: postgres::Error) -> ClientError {
    ClientError {
        lost: e.as_db_error().is_none(),
        message: clean_error(&e),
    }
}

/// One connection's statements; `event` runs one query or transaction.
trait Script: Send {
    fn event(&mut self, c: &mut postgres::Client, rng: &mut Rng) -> Result<u32, postgres::Error>;
}

struct PgClient {
    conn: postgres::Client,
    script: Box<dyn Script>,
}

impl Client for PgClient {
    fn event(&mut self, rng: &mut Rng) -> Result<u32, ClientError> {
        self.script.event(&mut self.conn, rng).map_err(client_error)
    }
}

/// Connects workers to dbtax's database with one workload.
pub struct PgConnector<'a> {
    /// Driver configuration, dbtax's database named.
    pub config: postgres::Config,
    /// What the clients run.
    pub workload: &'a PreparedWorkload,
}

impl Connector for PgConnector<'_> {
    fn connect(&self) -> Result<Box<dyn Client>, ClientError> {
        let mut conn = self.config.connect(postgres::NoTls).map_err(client_error)?;
        let w = self.workload;
        let script: Result<Box<dyn Script>, postgres::Error> = match w.workload.kind {
            WorkloadKind::Query => Ok(Box::new(QueryScript(w.workload.queries.clone()))),
            k if k.is_pgbench() => {
                PgbenchScript::new(&mut conn, k, w.scale.unwrap_or(1)).map(|s| Box::new(s) as _)
            }
            k => OltpScript::new(&mut conn, k, &w.max_ids).map(|s| Box::new(s) as _),
        };
        let script = script.map_err(|e| ClientError {
            message: format!("preparing the workload's statements: {}", clean_error(&e)),
            lost: false,
        })?;
        Ok(Box::new(PgClient { conn, script }))
    }
}

/// A random integer in [lo, hi] as pgbench's `random(lo, hi)`.
fn random(rng: &mut Rng, lo: i64, hi: i64) -> i32 {
    (lo + rng.range(0, (hi - lo) as u64) as i64) as i32
}

/// Run a transaction: BEGIN, the body, then COMMIT (ROLLBACK when the body fails).
fn transaction(
    c: &mut postgres::Client,
    begin: &Statement,
    commit: &Statement,
    body: impl FnOnce(&mut postgres::Client) -> Result<u32, postgres::Error>,
) -> Result<u32, postgres::Error> {
    c.execute(begin, &[])?;
    match body(c) {
        Ok(n) => {
            c.execute(commit, &[])?;
            Ok(n + 2)
        }
        Err(e) => {
            let _ = c.batch_execute("ROLLBACK");
            Err(e)
        }
    }
}

/// pgbench's select-only, simple-update and tpcb-like.
struct PgbenchScript {
    kind: WorkloadKind,
    scale: i64,
    select: Statement,
    /// begin, update account, update teller, update branch, insert history, end.
    writes: Option<[Statement; 6]>,
}

impl PgbenchScript {
    fn new(
        c: &mut postgres::Client,
        kind: WorkloadKind,
        scale: u64,
    ) -> Result<Self, postgres::Error> {
        let select = c.prepare("SELECT abalance FROM pgbench_accounts WHERE aid = $1")?;
        let writes = if kind == WorkloadKind::SelectOnly {
            None
        } else {
            Some([
                c.prepare("BEGIN")?,
                c.prepare("UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2")?,
                c.prepare("UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2")?,
                c.prepare("UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2")?,
                c.prepare(
                    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) \
                     VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                )?,
                c.prepare("END")?,
            ])
        };
        Ok(PgbenchScript {
            kind,
            scale: scale as i64,
            select,
            writes,
        })
    }
}

impl Script for PgbenchScript {
    fn event(&mut self, c: &mut postgres::Client, rng: &mut Rng) -> Result<u32, postgres::Error> {
        let aid = random(rng, 1, ACCOUNTS as i64 * self.scale);
        let Some([begin, account, teller, branch, history, end]) = &self.writes else {
            c.execute(&self.select, &[&aid])?;
            return Ok(1);
        };
        let bid = random(rng, 1, self.scale);
        let tid = random(rng, 1, TELLERS as i64 * self.scale);
        let delta = random(rng, -5000, 5000);
        let tpcb = self.kind == WorkloadKind::TpcbLike;
        let select = &self.select;
        transaction(c, begin, end, |c| {
            c.execute(account, &[&delta, &aid])?;
            c.query(select, &[&aid])?;
            if tpcb {
                c.execute(teller, &[&delta, &tid])?;
                c.execute(branch, &[&delta, &bid])?;
            }
            c.execute(history, &[&tid, &bid, &aid, &delta])?;
            Ok(if tpcb { 5 } else { 3 })
        })
    }
}

/// Prepared statements of one sbtest table.
struct TableStatements {
    point: Statement,
    ranges: Vec<Statement>,
    writes: Vec<Statement>,
    insert: Option<Statement>,
}

/// sysbench's oltp scripts (1.0 defaults), as `server::mysql::oltp` runs them on MySQL.
struct OltpScript {
    kind: WorkloadKind,
    tables: Vec<TableStatements>,
    max_ids: Vec<u64>,
    begin: Statement,
    commit: Statement,
    c: String,
    pad: String,
}

impl OltpScript {
    fn new(
        c: &mut postgres::Client,
        kind: WorkloadKind,
        max_ids: &[u64],
    ) -> Result<Self, postgres::Error> {
        let reads = matches!(kind, WorkloadKind::ReadOnly | WorkloadKind::ReadWrite);
        let mut tables = vec![];
        for t in 1..=max_ids.len() {
            let mut prep = |sql: String| c.prepare(&sql);
            let ranges = if reads {
                vec![
                    prep(format!(
                        "SELECT c FROM sbtest{t} WHERE id BETWEEN $1 AND $2"
                    ))?,
                    prep(format!(
                        "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN $1 AND $2"
                    ))?,
                    prep(format!(
                        "SELECT c FROM sbtest{t} WHERE id BETWEEN $1 AND $2 ORDER BY c"
                    ))?,
                    prep(format!(
                        "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN $1 AND $2 ORDER BY c"
                    ))?,
                ]
            } else {
                vec![]
            };
            let writes = if kind == WorkloadKind::ReadWrite {
                vec![
                    prep(format!("UPDATE sbtest{t} SET k=k+1 WHERE id=$1"))?,
                    prep(format!("UPDATE sbtest{t} SET c=$1 WHERE id=$2"))?,
                    prep(format!("DELETE FROM sbtest{t} WHERE id=$1"))?,
                    prep(format!(
                        "INSERT INTO sbtest{t} (id, k, c, pad) VALUES ($1, $2, $3, $4)"
                    ))?,
                ]
            } else {
                vec![]
            };
            let insert = (kind == WorkloadKind::Insert)
                .then(|| {
                    prep(format!(
                        "INSERT INTO sbtest{t} (k, c, pad) VALUES ($1, $2, $3)"
                    ))
                })
                .transpose()?;
            let point = prep(format!("SELECT c FROM sbtest{t} WHERE id=$1"))?;
            tables.push(TableStatements {
                point,
                ranges,
                writes,
                insert,
            });
        }
        Ok(OltpScript {
            kind,
            tables,
            max_ids: max_ids.to_vec(),
            begin: c.prepare("BEGIN")?,
            commit: c.prepare("COMMIT")?,
            c: String::with_capacity(120),
            pad: String::with_capacity(60),
        })
    }
}

impl Script for OltpScript {
    fn event(
        &mut self,
        conn: &mut postgres::Client,
        rng: &mut Rng,
    ) -> Result<u32, postgres::Error> {
        let t = rng.range(0, self.tables.len() as u64 - 1) as usize;
        let max = self.max_ids[t];
        let id = |rng: &mut Rng| rng.range(1, max) as i32;
        let ts = &self.tables[t];
        match self.kind {
            WorkloadKind::PointSelect => {
                conn.query(&ts.point, &[&id(rng)])?;
                Ok(1)
            }
            WorkloadKind::Insert => {
                let k = id(rng);
                rng.sysbench_string(10, &mut self.c);
                rng.sysbench_string(5, &mut self.pad);
                let stmt = ts.insert.as_ref().expect("prepared for insert");
                let params: [&(dyn ToSql + Sync); 3] = [&k, &self.c, &self.pad];
                conn.execute(stmt, &params)?;
                Ok(1)
            }
            _ => {
                let (c, pad) = (&mut self.c, &mut self.pad);
                transaction(conn, &self.begin, &self.commit, |conn| {
                    for _ in 0..POINT_SELECTS {
                        conn.query(&ts.point, &[&id(rng)])?;
                    }
                    for q in &ts.ranges {
                        let start = rng.range(1, max.saturating_sub(RANGE_SIZE).max(1)) as i32;
                        conn.query(q, &[&start, &(start + RANGE_SIZE as i32 - 1)])?;
                    }
                    let mut n = (POINT_SELECTS + ts.ranges.len()) as u32;
                    if let [index_update, non_index_update, delete, insert] = &ts.writes[..] {
                        conn.execute(index_update, &[&id(rng)])?;
                        rng.sysbench_string(10, c);
                        conn.execute(non_index_update, &[&*c, &id(rng)])?;
                        let row = id(rng);
                        conn.execute(delete, &[&row])?;
                        rng.sysbench_string(10, c);
                        rng.sysbench_string(5, pad);
                        conn.execute(insert, &[&row, &id(rng), &*c, &*pad])?;
                        n += 4;
                    }
                    Ok(n)
                })
            }
        }
    }
}

/// The `query` workload: the user's statements, over the simple query protocol.
struct QueryScript(Vec<String>);

impl Script for QueryScript {
    fn event(&mut self, c: &mut postgres::Client, _rng: &mut Rng) -> Result<u32, postgres::Error> {
        for s in &self.0 {
            c.simple_query(s)?;
        }
        Ok(self.0.len() as u32)
    }
}

/// Run the setup statements once, in dbtax's database.
pub fn run_setup(c: &mut postgres::Client, setup: &[String]) -> Result<()> {
    for s in setup {
        c.batch_execute(s)
            .map_err(|e| usage(format!("setup statement failed: {s}: {}", clean_error(&e))))?;
    }
    Ok(())
}

/// Check each statement by preparing it: nothing runs. Before the tables exist
/// (`tables_ready` false) only syntax errors count; after, every error does.
pub fn check(c: &mut postgres::Client, statements: &[String], tables_ready: bool) -> Result<()> {
    for s in statements {
        match c.prepare(s) {
            Ok(_) => {}
            Err(e)
                if !tables_ready && e.code() != Some(&postgres::error::SqlState::SYNTAX_ERROR) => {}
            Err(e) => {
                return Err(usage(format!(
                    "the query workload's statement `{s}` is refused by the server: {}. \
                     Nothing was changed",
                    clean_error(&e)
                )));
            }
        }
    }
    Ok(())
}
