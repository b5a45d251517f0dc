//! pgbench's three built-in scripts, statement for statement, with pgbench's `random()`
//! ranges: select-only (-S), simple-update (-N) and tpcb-like (the default), on the
//! pgbench_* tables (100,000 accounts, 10 tellers and one branch per unit of scale).

use super::WorkloadKind;
use crate::client::connection::{DbError, Session, Stmt, Value, transaction};
use crate::rng::Rng;

/// Accounts per unit of scale.
pub const ACCOUNTS: u64 = 100_000;
/// Tellers per branch.
pub const TELLERS: u64 = 10;

/// A random integer in [lo, hi] as pgbench's `random(lo, hi)`.
fn random(rng: &mut Rng, lo: i64, hi: i64) -> Value<'static> {
    Value::Int(lo + rng.range(0, (hi - lo) as u64) as i64)
}

/// One connection's pgbench script.
pub struct PgbenchScript {
    kind: WorkloadKind,
    scale: i64,
    select: Stmt,
    /// update account, update teller, update branch, insert history.
    writes: Option<[Stmt; 4]>,
}

impl PgbenchScript {
    /// Prepare the statements of this kind, for tables at `scale`.
    pub fn new(
        s: &mut dyn Session,
        kind: WorkloadKind,
        scale: u64,
    ) -> Result<PgbenchScript, DbError> {
        let select = s.prepare("SELECT abalance FROM pgbench_accounts WHERE aid = ?")?;
        let writes = if kind == WorkloadKind::SelectOnly {
            None
        } else {
            Some([
                s.prepare("UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?")?,
                s.prepare("UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?")?,
                s.prepare("UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?")?,
                s.prepare(
                    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) \
                     VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)",
                )?,
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

impl super::Script for PgbenchScript {
    /// One event: a transaction, or select-only's one select.
    fn event(&mut self, s: &mut dyn Session, rng: &mut Rng) -> Result<u32, DbError> {
        let aid = random(rng, 1, ACCOUNTS as i64 * self.scale);
        let Some([account, teller, branch, history]) = self.writes else {
            s.execute(self.select, &[aid])?;
            return Ok(1);
        };
        let bid = random(rng, 1, self.scale);
        let tid = random(rng, 1, TELLERS as i64 * self.scale);
        let delta = random(rng, -5000, 5000);
        let tpcb = self.kind == WorkloadKind::TpcbLike;
        let select = self.select;
        transaction(s, |s| {
            s.execute(account, &[delta, aid])?;
            s.execute(select, &[aid])?;
            if tpcb {
                s.execute(teller, &[delta, tid])?;
                s.execute(branch, &[delta, bid])?;
            }
            s.execute(history, &[tid, bid, aid, delta])?;
            Ok(if tpcb { 5 } else { 3 })
        })
    }
}
