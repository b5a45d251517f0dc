//! sysbench's OLTP scripts, once for every engine: oltp_point_select, oltp_read_only,
//! oltp_read_write and oltp_insert on sbtest1..N (sysbench 1.0 defaults: 10 point selects,
//! one of each range query over 100 ids, one index and one non-index update, a delete and an
//! insert), statement for statement and random draw for random draw, ids uniform (sysbench's
//! `--rand-type=uniform`, its default from 1.1; 1.0's default, `special`, puts 75% of the
//! draws on 1% of the rows), and how every engine finds or makes the sbtest tables. An engine
//! only prepares and executes the statements.

use super::WorkloadKind;
use crate::client::connection::{DbError, Session, Stmt, Value, transaction};
use crate::error::usage;
use crate::rng::Rng;
use anyhow::Result;

/// Rows read by each range query.
const RANGE_SIZE: u64 = 100;
/// Point selects per read-only transaction.
const POINT_SELECTS: usize = 10;

/// Prepared statements of one sbtest table.
struct TableStatements {
    point: Stmt,
    ranges: Vec<Stmt>,
    /// index update, non-index update, delete, insert (read-write).
    writes: Vec<Stmt>,
    insert: Option<Stmt>,
}

/// One connection's sysbench script.
pub struct OltpScript {
    kind: WorkloadKind,
    tables: Vec<TableStatements>,
    max_ids: Vec<u64>,
    c: String,
    pad: String,
}

impl OltpScript {
    /// Prepare the statements this kind needs on every table.
    pub fn new(
        s: &mut dyn Session,
        kind: WorkloadKind,
        max_ids: &[u64],
    ) -> Result<OltpScript, DbError> {
        let reads = matches!(kind, WorkloadKind::ReadOnly | WorkloadKind::ReadWrite);
        let mut tables = vec![];
        for t in 1..=max_ids.len() {
            let mut prep = |sql: String| s.prepare(&sql);
            let ranges = if reads {
                vec![
                    prep(format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?"))?,
                    prep(format!(
                        "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?"
                    ))?,
                    prep(format!(
                        "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"
                    ))?,
                    prep(format!(
                        "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"
                    ))?,
                ]
            } else {
                vec![]
            };
            let writes = if kind == WorkloadKind::ReadWrite {
                vec![
                    prep(format!("UPDATE sbtest{t} SET k=k+1 WHERE id=?"))?,
                    prep(format!("UPDATE sbtest{t} SET c=? WHERE id=?"))?,
                    prep(format!("DELETE FROM sbtest{t} WHERE id=?"))?,
                    prep(format!(
                        "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)"
                    ))?,
                ]
            } else {
                vec![]
            };
            let insert = (kind == WorkloadKind::Insert)
                .then(|| {
                    prep(format!(
                        "INSERT INTO sbtest{t} (k, c, pad) VALUES (?, ?, ?)"
                    ))
                })
                .transpose()?;
            let point = prep(format!("SELECT c FROM sbtest{t} WHERE id=?"))?;
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
}

impl super::Script for OltpScript {
    fn event(&mut self, s: &mut dyn Session, rng: &mut Rng) -> Result<u32, DbError> {
        let t = rng.range(0, self.tables.len() as u64 - 1) as usize;
        let max = self.max_ids[t];
        let id = |rng: &mut Rng| Value::Int(rng.range(1, max) as i64);
        let ts = &self.tables[t];
        match self.kind {
            WorkloadKind::PointSelect => {
                s.execute(ts.point, &[id(rng)])?;
                Ok(1)
            }
            WorkloadKind::Insert => {
                let k = id(rng);
                rng.sysbench_string(10, &mut self.c);
                rng.sysbench_string(5, &mut self.pad);
                let stmt = ts.insert.expect("prepared for insert");
                s.execute(stmt, &[k, Value::Text(&self.c), Value::Text(&self.pad)])?;
                Ok(1)
            }
            _ => {
                let (c, pad) = (&mut self.c, &mut self.pad);
                transaction(s, |s| {
                    for _ in 0..POINT_SELECTS {
                        s.execute(ts.point, &[id(rng)])?;
                    }
                    for q in &ts.ranges {
                        let start = rng.range(1, max.saturating_sub(RANGE_SIZE).max(1));
                        let end = start + RANGE_SIZE - 1;
                        s.execute(*q, &[Value::Int(start as i64), Value::Int(end as i64)])?;
                    }
                    let mut n = (POINT_SELECTS + ts.ranges.len()) as u32;
                    if let [index_update, non_index_update, delete, insert] = ts.writes[..] {
                        s.execute(index_update, &[id(rng)])?;
                        rng.sysbench_string(10, c);
                        s.execute(non_index_update, &[Value::Text(c), id(rng)])?;
                        let row = id(rng);
                        s.execute(delete, &[row])?;
                        rng.sysbench_string(10, c);
                        rng.sysbench_string(5, pad);
                        let k = id(rng);
                        s.execute(insert, &[row, k, Value::Text(c), Value::Text(pad)])?;
                        n += 4;
                    }
                    Ok(n)
                })
            }
        }
    }
}

/// sbtest1..N as every engine prepares them: `max_id(t)` reads table t's largest id (None:
/// the table is absent); the absent ones are made by `create(t)`, in parallel, with `size`
/// rows each; an existing empty table is refused. `schema` names where they are, for the
/// messages (`in schema 'dbtax'`), `prefix` a table's qualifier (`dbtax.`); progress goes to
/// `say`. Returns each table's largest id and whether dbtax made it.
pub fn prepare_sbtest(
    (tables, size): (u32, u64),
    (schema, prefix): (&str, &str),
    say: &mut dyn FnMut(&str),
    mut max_id: impl FnMut(u32) -> Result<Option<u64>>,
    create: impl Fn(u32) -> Result<()> + Sync,
) -> Result<(Vec<u64>, Vec<bool>)> {
    let mut max_ids = vec![0u64; tables as usize];
    let mut missing = vec![];
    for t in 1..=tables {
        match max_id(t)? {
            Some(m) => max_ids[t as usize - 1] = m,
            None => missing.push(t),
        }
    }
    if !missing.is_empty() {
        say(&format!(
            "Preparing {} sbtest table(s) of {size} rows {schema}...",
            missing.len()
        ));
    }
    let create = &create;
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = missing
            .iter()
            .map(|&t| s.spawn(move || create(t)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("prepare thread panicked")))
            })
            .collect()
    });
    for r in results {
        r?;
    }
    for &t in &missing {
        max_ids[t as usize - 1] = size;
    }
    if let Some(t) = max_ids.iter().position(|&m| m == 0) {
        return Err(usage(format!(
            "table {prefix}sbtest{} exists but is empty: drop it or run `sysbench ... prepare` again",
            t + 1
        )));
    }
    let created = (1..=tables).map(|t| missing.contains(&t)).collect();
    Ok((max_ids, created))
}
