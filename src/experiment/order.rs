//! The order of trials. A round is one block per thread count, the thread counts in a fresh
//! random order; a block is every variant once. The variant orders of successive blocks at a
//! thread count are the rows of a Williams design (with the variants' labels shuffled by the
//! seed): over its rows every variant comes right after every other equally often, so a
//! carry-over from one trial into the next is balanced across variants, and estimable. Rounds
//! repeat, so slow drift of a shared machine spreads over every variant and thread count alike.
//!
//! Two variants are the exception. A block of one each leaves the trial two after a switch in
//! the same place in every block, so a carry-over lasting two trials would be the feature's
//! cost (`stats::carryover`). With two variants a block is four trials, each variant twice,
//! ABBA or BAAB (extra-period sequences), each pass over the two in a fresh random order:
//! which trial follows which now varies, and the lag-1 and lag-2 carry-overs and the cost
//! separate. A block is then two repeats of each variant.

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

/// The two-variant blocks: each variant twice, ABBA and BAAB. Each is also blind to a
/// linear drift within it (its contrast −1, 1, 1, −1 sums to zero against 0, 1, 2, 3), which
/// AABB and BBAA are not: with those two as well the intervals were 5% narrower and covered
/// 92.2–95.8% on the simulated server's drift instead of 94.5–96.8% (tests/statistics/round3.rs).
pub fn extra_period() -> Vec<Vec<usize>> {
    vec![vec![0, 1, 1, 0], vec![1, 0, 0, 1]]
}

/// Hands out blocks: Williams rows per thread count, labels shuffled once by the seed, each
/// thread count starting at its own random row; with two variants the extra-period rows, in
/// a fresh random order on each pass at each thread count.
#[derive(Debug, Clone)]
pub struct Orders {
    rows: Vec<Vec<usize>>,
    next: BTreeMap<u32, usize>,
    /// Two variants: each thread count's rows still to run in this pass.
    passes: Option<BTreeMap<u32, Vec<usize>>>,
}

impl Orders {
    /// The design for `variants` variants at these thread counts; `one_each`: with two
    /// variants too, blocks of one each (the design before `extra_period`).
    pub fn new(variants: usize, threads: &[u32], one_each: bool, rng: &mut Rng) -> Orders {
        let mut labels: Vec<usize> = (0..variants).collect();
        rng.shuffle(&mut labels);
        let two = variants == 2 && !one_each;
        let design = if two {
            extra_period()
        } else {
            williams(variants)
        };
        let rows: Vec<Vec<usize>> = design
            .into_iter()
            .map(|r| r.into_iter().map(|x| labels[x]).collect())
            .collect();
        let next = threads
            .iter()
            .map(|&t| (t, rng.range(0, rows.len() as u64 - 1) as usize))
            .collect();
        Orders {
            rows,
            next,
            passes: two.then(BTreeMap::new),
        }
    }

    /// Trials in a whole block.
    pub fn block_len(&self) -> usize {
        self.rows.first().map_or(0, Vec::len)
    }

    /// The row of the next block at `t`.
    fn next_row(&mut self, t: u32, rng: &mut Rng) -> usize {
        let n = self.rows.len();
        if let Some(passes) = &mut self.passes {
            let pass = passes.entry(t).or_default();
            if pass.is_empty() {
                *pass = (0..n).collect();
                rng.shuffle(pass);
            }
            return pass.pop().expect("refilled");
        }
        let i = self.next.entry(t).or_insert(0);
        *i += 1;
        (*i - 1) % n
    }

    /// One round: a block for each of `threads`, in a random order of thread counts.
    pub fn round(&mut self, threads: &[u32], rng: &mut Rng) -> Vec<Block> {
        let mut threads = threads.to_vec();
        rng.shuffle(&mut threads);
        threads
            .into_iter()
            .map(|t| {
                let row = self.next_row(t, rng);
                Block {
                    point: t,
                    order: self.rows[row].clone(),
                }
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
    fn two_variants_run_every_extra_period_sequence_in_each_pass() {
        let mut rng = Rng::new(9);
        let mut orders = Orders::new(2, &[8], false, &mut rng);
        assert_eq!(orders.block_len(), 4);
        let mut firsts = std::collections::HashSet::new();
        for _ in 0..6 {
            let mut pass: Vec<Vec<usize>> = (0..2)
                .map(|_| orders.round(&[8], &mut rng).remove(0).order)
                .collect();
            for row in &pass {
                assert_eq!(row.iter().filter(|&&v| v == 0).count(), 2, "{row:?}");
            }
            firsts.insert(pass[0].clone());
            pass.sort();
            pass.dedup();
            assert_eq!(pass.len(), 2, "every sequence once a pass: {pass:?}");
        }
        assert_eq!(firsts.len(), 2, "passes in a random order");
        assert_eq!(Orders::new(2, &[8], true, &mut rng).block_len(), 2);
        assert_eq!(Orders::new(3, &[8], false, &mut rng).block_len(), 3);
    }

    #[test]
    fn rounds_vary_the_thread_order_and_walk_the_rows() {
        let mut rng = Rng::new(5);
        let mut orders = Orders::new(4, &[1, 8, 64], false, &mut rng);
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
