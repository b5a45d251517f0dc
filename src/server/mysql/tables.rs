//! sysbench-compatible sbtest tables on the MySQL family, as sysbench's mysql driver makes
//! them (InnoDB, the index on k built after the load). The statements that run on them are
//! `workload::oltp`'s.

use super::{clean_error, db_error};
use crate::error::usage;
use crate::rng::Rng;
use anyhow::Result;
use mysql::Conn;
use mysql::prelude::Queryable;

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
            .map_err(|e| db_error(e).context("looking for sbtest tables"))?;
        if exists.is_none() {
            return Ok(None);
        }
        let max: Option<Option<u64>> = conn
            .query_first(format!("SELECT MAX(id) FROM sbtest{t}"))
            .map_err(db_error)?;
        Ok(Some(max.flatten().unwrap_or(0)))
    };
    crate::workload::oltp::prepare_sbtest(
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
        conn.query_drop(&sql).map_err(db_error)?;
        id = end + 1;
    }
    conn.query_drop(format!("CREATE INDEX k_{t} ON {staging}(k)"))
        .map_err(db_error)?;
    conn.query_drop(format!("RENAME TABLE {staging} TO sbtest{t}"))
        .map_err(db_error)?;
    Ok(())
}
