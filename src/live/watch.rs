//! dbtax's own session on the server while `dbtax live` runs: the readings of the traffic
//! and of the shapes' table, and what they cost production.

use super::MAX_SHAPES;
use crate::server::Admin;
use crate::server::admin::{Shape, Traffic};
use anyhow::Result;
use std::collections::HashMap;
use std::time::Instant;

/// dbtax's own session on the server, and what watching has cost: the polls of the
/// traffic, the reads of the shapes' table, the statements (transactions) they ran, which
/// the server counts with production's.
pub(super) struct Watch<'a> {
    pub(super) admin: &'a mut dyn Admin,
    pub(super) polls: u64,
    pub(super) poll_us: f64,
    pub(super) statements: f64,
    pub(super) shape_reads: u64,
    pub(super) shape_ms: f64,
    /// The shapes compared, in the order of each window's vectors (empty: none read).
    pub(super) keys: Vec<String>,
}

/// A reading of the shapes' table: calls and time (µs) by key.
pub(super) type Sums = HashMap<String, (f64, f64)>;

impl Watch<'_> {
    pub(super) fn traffic(&mut self) -> Result<Traffic> {
        let t = Instant::now();
        let r = self.admin.traffic()?;
        self.polls += 1;
        self.poll_us += t.elapsed().as_secs_f64() * 1e6;
        self.statements += f64::from(r.ran);
        Ok(r)
    }

    pub(super) fn shapes(&mut self) -> Result<Sums> {
        let t = Instant::now();
        let rows: Vec<Shape> = self.admin.shapes()?;
        self.shape_reads += 1;
        self.shape_ms += t.elapsed().as_secs_f64() * 1e3;
        self.statements += 1.0;
        let mut out = Sums::with_capacity(rows.len());
        for r in rows {
            // A key the server lists twice (a digest in two rows) is one shape.
            let e = out.entry(r.key).or_insert((0.0, 0.0));
            e.0 += r.calls;
            e.1 += r.time_us;
        }
        Ok(out)
    }

    /// The busiest shapes between two readings become the ones compared.
    pub(super) fn choose(&mut self, a: &Sums, b: &Sums) {
        let mut grown: Vec<(&String, f64)> = b
            .iter()
            .map(|(k, (c, _))| (k, c - a.get(k).map_or(0.0, |x| x.0)))
            .filter(|(_, d)| *d > 0.0)
            .collect();
        grown.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| x.0.cmp(y.0)));
        self.keys = grown
            .into_iter()
            .take(MAX_SHAPES)
            .map(|(k, _)| k.clone())
            .collect();
    }

    /// Calls and time per compared shape between two readings. A shape the server dropped
    /// or reset in between (its sums went down) counts nothing.
    pub(super) fn between(&self, a: &Sums, b: &Sums) -> (Vec<f64>, Vec<f64>) {
        self.keys
            .iter()
            .map(|k| {
                let (c0, t0) = a.get(k).copied().unwrap_or((0.0, 0.0));
                match b.get(k) {
                    Some(&(c1, t1)) if c1 >= c0 && t1 >= t0 => (c1 - c0, t1 - t0),
                    _ => (0.0, 0.0),
                }
            })
            .unzip()
    }
}
