//! The order of trials. A round is one block per thread count, the thread counts in a fresh
//! random order; a block is every variant once. The variant orders of successive blocks at a
//! thread count are the rows of a Williams design (with the variants' labels shuffled by the
//! seed): over its rows every variant comes right after every other equally often, so a
//! carry-over from one trial into the next is balanced across variants, and estimable. Rounds
//! repeat, so slow drift of a shared machine spreads over every variant and thread count alike.

use crate::rng::Rng;
use std::collections::BTreeMap;

/// Every variant once, at one load point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The load point (the runner's key: a thread count, or a thread count and a rate).
    pub point: u32,
    /// Variant indices in the order they run.
    pub order: Vec<usize>,
}

/// The rows of a Williams design for `n` treatments: n rows for even n, 2n for odd n. Each
/// ordered pair (i, j), i ≠ j, appears as neighbours (i right before j) equally often.
pub fn williams(n: usize) -> Vec<Vec<usize>> {
    if n <= 1 {
        return vec![(0..n).collect()];
    }
    // The first row 0, 1, n−1, 2, n−2, …; the others add 1, 2, … modulo n.
    let mut first = vec![0usize];
    let (mut lo, mut hi) = (1usize, n - 1);
    while first.len() < n {
        first.push(lo);
        lo += 1;
        if first.len() < n {
            first.push(hi);
            hi -= 1;
        }
    }
    let mut rows: Vec<Vec<usize>> = (0..n)
        .map(|r| first.iter().map(|x| (x + r) % n).collect())
        .collect();
    if n % 2 == 1 {
        let mirrored: Vec<Vec<usize>> = rows
            .iter()
            .map(|r| r.iter().rev().copied().collect())
            .collect();
        rows.extend(mirrored);
    }
    rows
}

/// Hands out blocks: Williams rows per thread count, labels shuffled once by the seed, each
/// thread count starting at its own random row.
#[derive(Debug, Clone)]
pub struct Orders {
    rows: Vec<Vec<usize>>,
    next: BTreeMap<u32, usize>,
}

impl Orders {
    /// The design for `variants` variants at these thread counts.
    pub fn new(variants: usize, threads: &[u32], rng: &mut Rng) -> Orders {
        let mut labels: Vec<usize> = (0..variants).collect();
        rng.shuffle(&mut labels);
        let rows: Vec<Vec<usize>> = williams(variants)
            .into_iter()
            .map(|r| r.into_iter().map(|x| labels[x]).collect())
            .collect();
        let next = threads
            .iter()
            .map(|&t| (t, rng.range(0, rows.len() as u64 - 1) as usize))
            .collect();
        Orders { rows, next }
    }

    /// One round: a block for each of `threads`, in a random order of thread counts.
    pub fn round(&mut self, threads: &[u32], rng: &mut Rng) -> Vec<Block> {
        let mut threads = threads.to_vec();
        rng.shuffle(&mut threads);
        threads
            .into_iter()
            .map(|t| {
                let i = self.next.entry(t).or_insert(0);
                let order = self.rows[*i % self.rows.len()].clone();
                *i += 1;
                Block { point: t, order }
            })
            .collect()
    }
}

/// Wall time one trial is expected to take: settle + measure + connecting and switching.
pub fn trial_estimate(
    trial: std::time::Duration,
    warmup: std::time::Duration,
) -> std::time::Duration {
    trial + warmup + std::time::Duration::from_millis(300)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How often i comes right before j, over the rows.
    fn neighbours(rows: &[Vec<usize>], n: usize) -> Vec<Vec<usize>> {
        let mut m = vec![vec![0; n]; n];
        for r in rows {
            for w in r.windows(2) {
                m[w[0]][w[1]] += 1;
            }
        }
        m
    }

    #[test]
    fn williams_rows_balance_every_ordered_pair() {
        for n in 2..=7 {
            let rows = williams(n);
            assert_eq!(rows.len(), if n % 2 == 0 { n } else { 2 * n });
            for r in &rows {
                let mut s = r.clone();
                s.sort();
                assert_eq!(s, (0..n).collect::<Vec<_>>(), "a row is a permutation");
            }
            let m = neighbours(&rows, n);
            let want = if n % 2 == 0 { 1 } else { 2 };
            for (i, row) in m.iter().enumerate() {
                for (j, &count) in row.iter().enumerate() {
                    if i != j {
                        assert_eq!(count, want, "n={n}: {i} before {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn rounds_vary_the_thread_order_and_walk_the_rows() {
        let mut rng = Rng::new(5);
        let mut orders = Orders::new(4, &[1, 8, 64], &mut rng);
        let mut thread_orders = std::collections::HashSet::new();
        let mut rows_at_8 = vec![];
        for _ in 0..8 {
            let round = orders.round(&[1, 8, 64], &mut rng);
            thread_orders.insert(round.iter().map(|b| b.point).collect::<Vec<_>>());
            rows_at_8.push(round.into_iter().find(|b| b.point == 8).unwrap().order);
        }
        assert!(thread_orders.len() > 2, "{thread_orders:?}");
        let m = neighbours(&rows_at_8, 4);
        for (i, row) in m.iter().enumerate() {
            for (j, &count) in row.iter().enumerate() {
                assert!(i == j || count == 2, "two passes over the square: {m:?}");
            }
        }
    }
}
