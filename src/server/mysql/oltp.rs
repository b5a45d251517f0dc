//! sysbench-compatible sbtest tables and the statements of oltp_point_select, oltp_read_only,
//! oltp_read_write and oltp_insert (sysbench 1.0 defaults: 10 point selects, one of each range
//! query over 100 ids, one index and one non-index update, a delete and an insert).

use super::clean_error;
use super::client::Script;
use crate::error::usage;
use crate::rng::Rng;
use crate::workload::WorkloadKind;
use anyhow::{Context, Result};
use mysql::prelude::Queryable;
use mysql::{Conn, Statement};

const RANGE_SIZE: u64 = 100;
const POINT_SELECTS: usize = 10;
const INSERT_BATCH: u64 = 1000;
/// Tables are filled under this suffix and renamed when complete.
const STAGING_SUFFIX: &str = "_dbtax_staging";

/// Create sbtest1..N with `size` rows each when absent; reuse existing tables (sysbench's) as
/// they are. Returns each table's largest id. Tables are filled in parallel, secondary index
/// built after the load, as sysbench does.
pub fn prepare_tables(
    connect: &(dyn Fn() -> Result<Conn> + Sync),
    schema: &str,
    tables: u32,
    size: u64,
    say: &mut dyn FnMut(&str),
) -> Result<(Vec<u64>, Vec<bool>)> {
    let mut conn = connect()?;
    let max_id = |t: u32| -> Result<Option<u64>> {
        let exists: Option<u32> = conn
            .exec_first(
                "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                (schema, format!("sbtest{t}")),
            )
            .context("looking for sbtest tables")?;
        if exists.is_none() {
            return Ok(None);
        }
        let max: Option<Option<u64>> =
            conn.query_first(format!("SELECT MAX(id) FROM sbtest{t}"))?;
        Ok(Some(max.flatten().unwrap_or(0)))
    };
    crate::workload::prepare_sbtest(
        (tables, size),
        (&format!("in schema '{schema}'"), &format!("{schema}.")),
        say,
        max_id,
        |t| create_table(connect, t, size),
    )
}

/// Build sbtestN under a staging name and rename it into place when it is complete: a
/// preparation killed half-way leaves only the staging table (dropped and rebuilt next
/// time), never a half-filled sbtestN that a later run would take as complete.
fn create_table(connect: &(dyn Fn() -> Result<Conn> + Sync), t: u32, size: u64) -> Result<()> {
    let mut conn = connect()?;
    let staging = format!("sbtest{t}{STAGING_SUFFIX}");
    conn.query_drop(format!("DROP TABLE IF EXISTS {staging}"))
        .map_err(|e| usage(format!("cannot drop {staging}: {}", clean_error(&e))))?;
    conn.query_drop(format!(
        "CREATE TABLE {staging} (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, \
         c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) \
         ENGINE=InnoDB"
    ))
    .map_err(|e| usage(format!("cannot create table {staging}: {}", clean_error(&e))))?;
    let mut rng = Rng::from_time(t as u64);
    let (mut c, mut pad) = (String::new(), String::new());
    let mut sql = String::with_capacity(200 * INSERT_BATCH as usize);
    let mut id = 1u64;
    while id <= size {
        sql.clear();
        sql.push_str(&format!("INSERT INTO {staging} (id, k, c, pad) VALUES "));
        let end = (id + INSERT_BATCH - 1).min(size);
        for i in id..=end {
            rng.sysbench_string(10, &mut c);
            rng.sysbench_string(5, &mut pad);
            let k = rng.range(1, size);
            if i > id {
                sql.push(',');
            }
            sql.push_str(&format!("({i},{k},'{c}','{pad}')"));
        }
        conn.query_drop(&sql)?;
        id = end + 1;
    }
    conn.query_drop(format!("CREATE INDEX k_{t} ON {staging}(k)"))?;
    conn.query_drop(format!("RENAME TABLE {staging} TO sbtest{t}"))?;
    Ok(())
}

/// Prepared statements of one sbtest table.
struct TableStatements {
    point: Statement,
    ranges: Option<[Statement; 4]>,
    writes: Option<[Statement; 4]>,
    insert: Option<Statement>,
}

/// One connection's OLTP script.
pub struct OltpScript {
    kind: WorkloadKind,
    tables: Vec<TableStatements>,
    max_ids: Vec<u64>,
    c: String,
    pad: String,
}

impl OltpScript {
    /// Prepare the statements this kind needs on every table.
    pub fn new(conn: &mut Conn, kind: WorkloadKind, max_ids: &[u64]) -> Result<Self, mysql::Error> {
        let mut tables = vec![];
        for t in 1..=max_ids.len() {
            let reads = matches!(kind, WorkloadKind::ReadOnly | WorkloadKind::ReadWrite);
            let ranges = if reads {
                Some([
                    conn.prep(format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?"))?,
                    conn.prep(format!(
                        "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?"
                    ))?,
                    conn.prep(format!(
                        "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"
                    ))?,
                    conn.prep(format!(
                        "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"
                    ))?,
                ])
            } else {
                None
            };
            let writes = if kind == WorkloadKind::ReadWrite {
                Some([
                    conn.prep(format!("UPDATE sbtest{t} SET k=k+1 WHERE id=?"))?,
                    conn.prep(format!("UPDATE sbtest{t} SET c=? WHERE id=?"))?,
                    conn.prep(format!("DELETE FROM sbtest{t} WHERE id=?"))?,
                    conn.prep(format!(
                        "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)"
                    ))?,
                ])
            } else {
                None
            };
            let insert = if kind == WorkloadKind::Insert {
                Some(conn.prep(format!(
                    "INSERT INTO sbtest{t} (k, c, pad) VALUES (?, ?, ?)"
                ))?)
            } else {
                None
            };
            let point = conn.prep(format!("SELECT c FROM sbtest{t} WHERE id=?"))?;
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
            c: String::with_capacity(120),
            pad: String::with_capacity(60),
        })
    }

    fn pick(&self, rng: &mut Rng) -> usize {
        rng.range(0, self.tables.len() as u64 - 1) as usize
    }
}

impl Script for OltpScript {
    fn event(&mut self, conn: &mut Conn, rng: &mut Rng) -> Result<u32, mysql::Error> {
        match self.kind {
            WorkloadKind::PointSelect => {
                let t = self.pick(rng);
                let id = rng.range(1, self.max_ids[t]);
                conn.exec_drop(&self.tables[t].point, (id,))?;
                Ok(1)
            }
            WorkloadKind::Insert => {
                let t = self.pick(rng);
                let k = rng.range(1, self.max_ids[t]);
                rng.sysbench_string(10, &mut self.c);
                rng.sysbench_string(5, &mut self.pad);
                let stmt = self.tables[t].insert.as_ref().expect("prepared for insert");
                conn.exec_drop(stmt, (k, self.c.as_str(), self.pad.as_str()))?;
                Ok(1)
            }
            WorkloadKind::ReadOnly | WorkloadKind::ReadWrite => self.transaction(conn, rng),
            _ => unreachable!("query and pgbench workloads do not use OltpScript"),
        }
    }
}

impl OltpScript {
    fn transaction(&mut self, conn: &mut Conn, rng: &mut Rng) -> Result<u32, mysql::Error> {
        let mut n = 2;
        conn.query_drop("BEGIN")?;
        let result = self.transaction_body(conn, rng, &mut n);
        if result.is_err() {
            let _ = conn.query_drop("ROLLBACK");
            return result.map(|_| n);
        }
        conn.query_drop("COMMIT")?;
        Ok(n)
    }

    fn transaction_body(
        &mut self,
        conn: &mut Conn,
        rng: &mut Rng,
        n: &mut u32,
    ) -> Result<(), mysql::Error> {
        let t = self.pick(rng);
        let max = self.max_ids[t];
        for _ in 0..POINT_SELECTS {
            conn.exec_drop(&self.tables[t].point, (rng.range(1, max),))?;
            *n += 1;
        }
        for q in self.tables[t].ranges.as_ref().expect("prepared for reads") {
            let start = rng.range(1, max.saturating_sub(RANGE_SIZE).max(1));
            conn.exec_drop(q, (start, start + RANGE_SIZE - 1))?;
            *n += 1;
        }
        if let Some([index_update, non_index_update, delete, insert]) = &self.tables[t].writes {
            conn.exec_drop(index_update, (rng.range(1, max),))?;
            rng.sysbench_string(10, &mut self.c);
            conn.exec_drop(non_index_update, (self.c.as_str(), rng.range(1, max)))?;
            let id = rng.range(1, max);
            conn.exec_drop(delete, (id,))?;
            rng.sysbench_string(10, &mut self.c);
            rng.sysbench_string(5, &mut self.pad);
            let k = rng.range(1, max);
            conn.exec_drop(insert, (id, k, self.c.as_str(), self.pad.as_str()))?;
            *n += 4;
        }
        Ok(())
    }
}
