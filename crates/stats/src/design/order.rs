//! The order of trials. A round is one block per thread count, the thread counts in a fresh
//! random order; a block is every variant once. The variant orders of successive blocks at a
//! thread count are the rows of a Williams design (with the variants' labels shuffled by the
//! seed): over its rows every variant comes right after every other equally often, so a
//! carry-over from one trial into the next is balanced across variants, and estimable. Rounds
//! repeat, so slow drift of a shared machine spreads over every variant and thread count alike.
//!
//! Two variants are the exception. A block of one each leaves the trial two after a switch in
//! the same place in every block, so a carry-over lasting two trials would be the feature's
//! cost (`stats::carryover`). With two variants a block is four trials, each variant twice
//! (any of the six orders: AABB, ABAB, ABBA, BAAB, BABA, BBAA), so that which trial follows
//! which varies, and the lag-1 and lag-2 carry-overs and the cost separate. A block is then
//! two repeats of each variant. Which order a block gets is chosen so that, at each load
//! point, the feature's contrast stays as nearly uncorrelated with "right after the feature",
//! "two after the feature" and the trial's place in its block as the run allows (`Balance`):
//! then fitting both carry-overs costs the cost's interval almost nothing when there is none.
//! ABBA and BAAB alone (the design before) could not do that: after every switch between
//! them the feature's contrast leans the same way against the lags, and at one thread count
//! the interval came out ×1.36 as wide as blocks of one each.

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

/// The two-variant blocks: each variant twice, in every order.
pub fn two_of_each() -> Vec<Vec<usize>> {
    vec![
        vec![0, 0, 1, 1],
        vec![0, 1, 0, 1],
        vec![0, 1, 1, 0],
        vec![1, 0, 0, 1],
        vec![1, 0, 1, 0],
        vec![1, 1, 0, 0],
    ]
}

/// How much a block's exposure to a drift within it (`walk`) weighs against the balance of
/// the lags. AABB and BBAA are what balance "right after the feature" (a feature trial after
/// a feature trial), and also what a wandering throughput moves most (and the two pairs of
/// such a block share a step of it). At 0 the simulated A/A rate of p under 5% was 6.8% over
/// 1,600 runs (four sets of seeds), at 0.5 5.9%, the interval at one thread count ×1.08 as
/// wide as blocks of one each (×1.12 at 1 with the place weighed too, ×1.19 at 1).
const WALK_WEIGHT: f64 = 0.5;

/// How far from the best balance an order may be and still be drawn: the choice stays a
/// random one (2–3 orders to draw from on average), at a few percent of width.
const SLACK: f64 = 0.5;

/// A trial's share of the feature's contrast in its block: +½ the feature's, −½ the
/// baseline's (variant 0).
fn contrast(v: usize) -> f64 {
    if v != 0 { 0.5 } else { -0.5 }
}

/// How much a random walk of the throughput within a block moves the feature's contrast in
/// `order`, in steps' variances: Σ over the steps of (the contrast's sum after it)². ½ for
/// ABBA, BAAB, ABAB and BABA, 1½ for AABB and BBAA.
fn walk(order: &[usize]) -> f64 {
    (1..order.len())
        .map(|s| order[s..].iter().map(|&v| contrast(v)).sum::<f64>().powi(2))
        .sum()
}

/// Two variants: per load point, the sums over its blocks of the feature's contrast (±½ per
/// trial) times "right after a feature trial" and times "two after one". Zero sums make the
/// cost's column orthogonal to the carry-over terms, so fitting them costs it nothing.
#[derive(Debug, Clone, Default)]
struct Balance {
    sums: BTreeMap<u32, [f64; 2]>,
    /// What the last block handed out at each point added (taken back when it is set aside).
    last: BTreeMap<u32, [f64; 2]>,
    /// Whether each of the last two trials handed out (at any point) was the feature's,
    /// the most recent last.
    tail: [bool; 2],
}

impl Balance {
    /// What a block in `order` adds to its point's sums after the current tail.
    fn adds(&self, order: &[usize]) -> [f64; 2] {
        let mut seq: Vec<bool> = self.tail.to_vec();
        seq.extend(order.iter().map(|&v| v != 0));
        let mut out = [0.0; 2];
        for (i, &v) in order.iter().enumerate() {
            out[0] += contrast(v) * f64::from(u8::from(seq[i + 1]));
            out[1] += contrast(v) * f64::from(u8::from(seq[i]));
        }
        out
    }

    /// The imbalance at `point` if a block in `order` ran next there, and the block's
    /// exposure to a drift.
    fn score(&self, point: u32, order: &[usize]) -> f64 {
        let s = self.sums.get(&point).copied().unwrap_or_default();
        let a = self.adds(order);
        (s[0] + a[0]).powi(2) + (s[1] + a[1]).powi(2) + WALK_WEIGHT * walk(order)
    }

    /// Account for a block in `order` handed out at `point`.
    fn hand_out(&mut self, point: u32, order: &[usize]) {
        let a = self.adds(order);
        let s = self.sums.entry(point).or_default();
        for (x, y) in s.iter_mut().zip(a) {
            *x += y;
        }
        self.last.insert(point, a);
        for &v in order {
            self.tail = [self.tail[1], v != 0];
        }
    }
}

/// Hands out blocks: Williams rows per thread count, labels shuffled once by the seed, each
/// thread count starting at its own random row; with two variants each block's order drawn
/// from those that keep its point's balance (`Balance`).
#[derive(Debug, Clone)]
pub struct Orders {
    rows: Vec<Vec<usize>>,
    next: BTreeMap<u32, usize>,
    /// Two variants: the balance the orders are chosen by.
    balance: Option<Balance>,
}

impl Orders {
    /// The design for `variants` variants at these thread counts; `one_each`: with two
    /// variants too, blocks of one each (the design before `two_of_each`).
    pub fn new(variants: usize, threads: &[u32], one_each: bool, rng: &mut Rng) -> Orders {
        let mut labels: Vec<usize> = (0..variants).collect();
        rng.shuffle(&mut labels);
        let two = variants == 2 && !one_each;
        let design = if two {
            two_of_each()
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
            balance: two.then(Balance::default),
        }
    }

    /// Forget the balance's sums (not the last trials): after the warm-up round, whose
    /// blocks are not counted.
    pub fn start_counting(&mut self) {
        if let Some(b) = &mut self.balance {
            b.sums.clear();
            b.last.clear();
        }
    }

    /// The last block handed out at `point` was set aside: its share of the balance goes.
    pub fn set_aside(&mut self, point: u32) {
        let Some(b) = &mut self.balance else { return };
        if let (Some(a), Some(s)) = (b.last.remove(&point), b.sums.get_mut(&point)) {
            for (x, y) in s.iter_mut().zip(a) {
                *x -= y;
            }
        }
    }

    /// Trials in a whole block.
    pub fn block_len(&self) -> usize {
        self.rows.first().map_or(0, Vec::len)
    }

    /// The row of the next block at `t`.
    fn next_row(&mut self, t: u32, rng: &mut Rng) -> usize {
        let n = self.rows.len();
        if let Some(balance) = &mut self.balance {
            let scores: Vec<f64> = self.rows.iter().map(|r| balance.score(t, r)).collect();
            let best = scores.iter().copied().fold(f64::INFINITY, f64::min);
            let near: Vec<usize> = (0..n).filter(|&i| scores[i] <= best + SLACK).collect();
            let row = near[rng.range(0, near.len() as u64 - 1) as usize];
            balance.hand_out(t, &self.rows[row]);
            return row;
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

    /// The sums `Balance` keeps, recomputed from a whole sequence of blocks at one point.
    fn sums(blocks: &[Vec<usize>]) -> [f64; 2] {
        let seq: Vec<bool> = blocks.iter().flatten().map(|&v| v != 0).collect();
        let mut out = [0.0; 2];
        for (at, &on) in seq.iter().enumerate() {
            let c = if on { 0.5 } else { -0.5 };
            let lag = |k: usize| at >= k && seq[at - k];
            out[0] += c * f64::from(u8::from(lag(1)));
            out[1] += c * f64::from(u8::from(lag(2)));
        }
        out
    }

    #[test]
    fn a_drift_within_a_block_moves_aabb_most() {
        let w: Vec<f64> = two_of_each().iter().map(|o| walk(o)).collect();
        assert_eq!(w, [1.5, 0.5, 0.5, 0.5, 0.5, 1.5]);
    }

    #[test]
    fn two_variants_get_two_of_each_in_orders_that_keep_the_lags_balanced() {
        let mut rng = Rng::new(9);
        assert_eq!(Orders::new(2, &[8], false, &mut rng).block_len(), 4);
        let (mut seen, mut worst) = (std::collections::HashSet::new(), 0.0f64);
        for run in 0..50 {
            let mut orders = Orders::new(2, &[8], false, &mut Rng::new(run));
            let blocks: Vec<Vec<usize>> = (0..8)
                .map(|_| orders.round(&[8], &mut rng).remove(0).order)
                .collect();
            for b in &blocks {
                assert_eq!(b.iter().filter(|&&v| v == 0).count(), 2, "{b:?}");
                seen.insert(b.clone());
            }
            let s = sums(&blocks);
            assert_eq!(
                s,
                orders.balance.as_ref().unwrap().sums[&8],
                "kept as it ran"
            );
            worst = worst.max(s[0].abs()).max(s[1].abs());
        }
        assert_eq!(seen.len(), 6, "every order is drawn: {seen:?}");
        // ABBA and BAAB drawn at random (the design before) reach −2 or less in 8 blocks.
        assert!(worst <= 1.0, "the lags stay balanced: {worst}");
        // Orders drawn without the balance drift away from it.
        let mut loose = 0.0f64;
        for run in 0..50 {
            let mut r = Rng::new(1000 + run);
            let rows = two_of_each();
            let blocks: Vec<Vec<usize>> = (0..8)
                .map(|_| rows[r.range(0, 5) as usize].clone())
                .collect();
            let s = sums(&blocks);
            loose = loose.max(s[0].abs()).max(s[1].abs());
        }
        assert!(loose > 1.0, "{loose}");
        assert_eq!(Orders::new(2, &[8], true, &mut rng).block_len(), 2);
        assert_eq!(Orders::new(3, &[8], false, &mut rng).block_len(), 3);
    }

    #[test]
    fn a_block_set_aside_gives_back_its_share_of_the_balance() {
        let mut rng = Rng::new(4);
        let mut orders = Orders::new(2, &[1, 8], false, &mut rng);
        orders.round(&[1, 8], &mut rng);
        orders.start_counting();
        assert!(orders.balance.as_ref().unwrap().sums.is_empty());
        orders.round(&[8], &mut rng);
        let kept = orders.balance.as_ref().unwrap().sums[&8];
        orders.round(&[8], &mut rng);
        orders.set_aside(8);
        assert_eq!(orders.balance.as_ref().unwrap().sums[&8], kept);
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
