//! Round 3: two variants with a carry-over lasting two trials. Blocks of one each put the
//! trial two after a switch in the same place in every block, so such a carry-over is taken
//! for the feature's cost; blocks of two of each, in the orders that keep the feature's
//! contrast balanced against both lags (`experiment::order`), separate it, at little cost in
//! width when there is none.

use super::*;

/// Two variants at `threads` (8 among them), `repeats` of each; `one_each`: the design
/// before.
fn two(threads: &[u32], repeats: u32, one_each: bool, seed: u64) -> Design {
    let mut e = experiment(
        variants(2),
        threads.to_vec(),
        StopRule::Repeats(repeats),
        seed,
    );
    e.one_each_blocks = one_each;
    e
}

/// A 5% slowdown of the next two trials after every trial of the feature.
fn lasting(sim: &mut SimulatedServer) {
    sim.carry_after = vec![0.0, 0.05];
    sim.carry_lag2 = vec![0.0, 0.05];
}

#[test]
fn two_variants_with_a_carry_over_lasting_two_trials_are_covered_by_the_new_blocks_only() {
    let truth = [0.0, 0.05];
    for (threads, base) in [(&[8][..], 31_000_000), (&[1, 4, 8, 64][..], 31_500_000)] {
        let new = simulate(base, &truth, |s| two(threads, 8, false, s), lasting);
        let k = coverage_of(&new, 1, |r| r.sim.truth_pct(1));
        rate_within(
            &format!(
                "coverage at 8 threads of {threads:?}, two variants, 5% carry-over over two \
                 trials, two-of-each blocks"
            ),
            k,
            new.len(),
            COVERAGE,
        );
        let old = simulate(base, &truth, |s| two(threads, 8, true, s), lasting);
        let k = coverage_of(&old, 1, |r| r.sim.truth_pct(1));
        rate_within(
            "  the same with blocks of one each (the design before)",
            k,
            old.len(),
            (0.0, 0.90),
        );
    }
}

#[test]
fn with_no_carry_over_the_new_blocks_cost_little_width_in_a_sweep() {
    // The old blocks at a single thread count correct for nothing (AB and BA alternate, and
    // a lag-1 carry-over is balanced); the new ones fit both lags, and pay for it only as far
    // as the orders leave the feature's contrast leaning on them. ABBA and BAAB drawn at
    // random (the design before the balance) came out ×1.36 at one thread count: this test
    // failed with them.
    let truth = [0.0, 0.05];
    for (threads, base) in [(&[1, 4, 8, 64][..], 32_000_000), (&[8][..], 32_500_000)] {
        for repeats in [8, 16] {
            let new = simulate(base, &truth, |s| two(threads, repeats, false, s), |_| {});
            let old = simulate(base, &truth, |s| two(threads, repeats, true, s), |_| {});
            let (wn, wo) = (mean_half_width(&new), mean_half_width(&old));
            let k = coverage_of(&new, 1, |r| r.sim.truth_pct(1));
            rate_within(
                &format!(
                    "coverage at 8 threads of {threads:?}, no carry-over, {repeats} repeats, \
                     two-of-each blocks"
                ),
                k,
                new.len(),
                COVERAGE,
            );
            eprintln!(
                "  mean half-width: {wn:.2} points (blocks of one each {wo:.2}): ×{:.3}",
                wn / wo
            );
            assert!(wn / wo <= 1.10, "{wn} against {wo}");
        }
    }
}
