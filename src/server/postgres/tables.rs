//! The tables the workloads run on. pgbench's four tables as `pgbench -i` makes them
//! (reused as they are when present, their scale read from pgbench_branches), and sbtest
//! tables as sysbench's pgsql driver makes them. Each is created, filled with COPY and
//! indexed inside one transaction: a preparation killed half-way leaves nothing behind.

use super::clean_error;
use crate::error::usage;
use crate::rng::Rng;
use crate::workload::pgbench::{ACCOUNTS, TELLERS};
use anyhow::{Context, Result};
use std::io::Write;

const PGBENCH_TABLES: [&str; 4] = [
    "pgbench_branches",
    "pgbench_tellers",
    "pgbench_accounts",
    "pgbench_history",
];

fn exists(c: &mut postgres::Client, table: &str) -> Result<bool> {
    Ok(
        c.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])?
            .get(0),
    )
}

/// The tables a workload uses, and what it does on each (for the privilege check).
pub fn used(workload: &crate::workload::Workload) -> Vec<(String, &'static [&'static str])> {
    use crate::workload::WorkloadKind as K;
    match workload.kind {
        K::Query => vec![],
        K::SelectOnly => vec![("pgbench_accounts".into(), &["SELECT"])],
        K::SimpleUpdate | K::TpcbLike => vec![
            ("pgbench_accounts".into(), &["SELECT", "UPDATE"]),
            ("pgbench_tellers".into(), &["UPDATE"]),
            ("pgbench_branches".into(), &["UPDATE"]),
            ("pgbench_history".into(), &["INSERT"]),
        ],
        k => {
            let what: &'static [&'static str] = match k {
                K::ReadWrite => &["SELECT", "UPDATE", "DELETE", "INSERT"],
                K::Insert => &["INSERT"],
                _ => &["SELECT"],
            };
            (1..=workload.tables)
                .map(|t| (format!("sbtest{t}"), what))
                .collect()
        }
    }
}

/// Use the pgbench tables when present; else create them at `scale`. Returns the scale and
/// whether dbtax created them.
pub fn prepare_pgbench(
    c: &mut postgres::Client,
    scale: u32,
    say: &mut dyn FnMut(&str),
) -> Result<(u64, bool)> {
    let mut present = vec![];
    for t in PGBENCH_TABLES {
        present.push(exists(c, t)?);
    }
    if present.iter().all(|p| *p) {
        let n: i64 = c
            .query_one("SELECT count(*) FROM pgbench_branches", &[])?
            .get(0);
        if n == 0 {
            return Err(usage(
                "pgbench_branches is empty: run `pgbench -i` again, or drop the pgbench tables \
                 and let dbtax create them",
            ));
        }
        return Ok((n as u64, false));
    }
    if present.iter().any(|p| *p) {
        return Err(usage(
            "some pgbench tables exist and some do not: run `pgbench -i -s N` to make them \
             whole, or drop them and let dbtax create them. Nothing was changed",
        ));
    }
    say(&format!(
        "Creating the pgbench tables at scale {scale} (as pgbench -i -s {scale})..."
    ));
    let s = scale as u64;
    let mut tx = c.transaction()?;
    tx.batch_execute(
        "CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, \
         filler char(22)); \
         CREATE TABLE pgbench_tellers (tid int NOT NULL, bid int, tbalance int, filler char(84)) \
         WITH (fillfactor = 100); \
         CREATE TABLE pgbench_accounts (aid int NOT NULL, bid int, abalance int, filler char(84)) \
         WITH (fillfactor = 100); \
         CREATE TABLE pgbench_branches (bid int NOT NULL, bbalance int, filler char(88)) \
         WITH (fillfactor = 100)",
    )
    .map_err(|e| {
        usage(format!(
            "cannot create the pgbench tables: {}",
            clean_error(&e)
        ))
    })?;
    copy(&mut tx, "pgbench_branches", 1..=s, |i, w| {
        writeln!(w, "{i}\t0\t")
    })?;
    copy(&mut tx, "pgbench_tellers", 1..=TELLERS * s, |i, w| {
        writeln!(w, "{i}\t{}\t0\t", (i - 1) / TELLERS + 1)
    })?;
    copy(&mut tx, "pgbench_accounts", 1..=ACCOUNTS * s, |i, w| {
        writeln!(w, "{i}\t{}\t0\t", (i - 1) / ACCOUNTS + 1)
    })?;
    tx.batch_execute(
        "ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid); \
         ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid); \
         ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid)",
    )?;
    tx.commit()?;
    c.batch_execute(
        "VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history",
    )?;
    Ok((s, true))
}

/// COPY rows into a table, one `row(i, writer)` per i.
fn copy<W: postgres::GenericClient>(
    c: &mut W,
    table: &str,
    ids: std::ops::RangeInclusive<u64>,
    mut row: impl FnMut(u64, &mut Vec<u8>) -> std::io::Result<()>,
) -> Result<()> {
    let mut buf = Vec::with_capacity(1 << 20);
    for i in ids {
        row(i, &mut buf)?;
    }
    let mut w = c
        .copy_in(&format!("COPY {table} FROM STDIN"))
        .with_context(|| format!("COPY into {table}"))?;
    w.write_all(&buf)?;
    w.finish().with_context(|| format!("COPY into {table}"))?;
    Ok(())
}

/// Create sbtest1..N with `size` rows each when absent (in parallel, one transaction per
/// table); reuse existing ones (sysbench's) as they are. Returns each table's largest id and
/// whether dbtax created it.
pub fn prepare_sbtest(
    connect: &(dyn Fn() -> Result<postgres::Client> + Sync),
    db: &str,
    tables: u32,
    size: u64,
    say: &mut dyn FnMut(&str),
) -> Result<(Vec<u64>, Vec<bool>)> {
    let mut c = connect()?;
    let max_id = |t: u32| -> Result<Option<u64>> {
        if !exists(&mut c, &format!("sbtest{t}"))? {
            return Ok(None);
        }
        let max: Option<i32> = c
            .query_one(&format!("SELECT max(id) FROM sbtest{t}"), &[])?
            .get(0);
        Ok(Some(max.unwrap_or(0).max(0) as u64))
    };
    crate::workload::oltp::prepare_sbtest(
        (tables, size),
        (&format!("in database '{db}'"), ""),
        say,
        max_id,
        |t| create_sbtest(&mut connect()?, t, size),
    )
}

/// sbtestN as sysbench's pgsql driver makes it: SERIAL id, k, c, pad, an index on k.
fn create_sbtest(c: &mut postgres::Client, t: u32, size: u64) -> Result<()> {
    let mut tx = c.transaction()?;
    tx.batch_execute(&format!(
        "CREATE TABLE sbtest{t} (id SERIAL, k INTEGER DEFAULT '0' NOT NULL, \
         c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))"
    ))
    .map_err(|e| {
        usage(format!(
            "cannot create table sbtest{t}: {}",
            clean_error(&e)
        ))
    })?;
    let mut rng = Rng::from_time(t as u64);
    let (mut cv, mut pad) = (String::new(), String::new());
    copy(&mut tx, &format!("sbtest{t}"), 1..=size, |i, w| {
        rng.sysbench_string(10, &mut cv);
        rng.sysbench_string(5, &mut pad);
        writeln!(w, "{i}\t{}\t{cv}\t{pad}", rng.range(1, size))
    })?;
    tx.batch_execute(&format!(
        "CREATE INDEX k_{t} ON sbtest{t}(k); \
         SELECT setval(pg_get_serial_sequence('sbtest{t}', 'id'), {size})"
    ))?;
    tx.commit()?;
    Ok(())
}
