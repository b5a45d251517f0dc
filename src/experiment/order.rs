//! The order of trials. A round is one block per thread count; a block is every variant once
//! in a fresh random order. Rounds repeat, so slow drift of a shared machine (and of the
//! server: buffer pool, log files) spreads over every variant and every thread count alike.

use crate::rng::Rng;

/// Every variant once, at one thread count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Client threads.
    pub threads: u32,
    /// Variant indices in the order they run.
    pub order: Vec<usize>,
}

/// One round: a block for each thread count in `threads`, each in its own random order.
pub fn round(threads: &[u32], variants: usize, rng: &mut Rng) -> Vec<Block> {
    threads
        .iter()
        .map(|&t| {
            let mut order: Vec<usize> = (0..variants).collect();
            rng.shuffle(&mut order);
            Block { threads: t, order }
        })
        .collect()
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

    #[test]
    fn blocks_hold_every_variant_once_and_orders_vary() {
        let mut rng = Rng::new(5);
        let mut orders = std::collections::HashSet::new();
        for _ in 0..20 {
            for b in round(&[1, 8], 4, &mut rng) {
                let mut o = b.order.clone();
                orders.insert(b.order);
                o.sort();
                assert_eq!(o, vec![0, 1, 2, 3]);
            }
        }
        assert!(orders.len() > 5, "orders must be randomized: {orders:?}");
    }
}
