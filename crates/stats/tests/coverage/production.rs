//! `live` on production's own traffic (a rate that doubles over the run, bursts of a heavy
//! shape, a mix that shifts, CPU per statement that grows with the rate, and a feature that
//! slows the heavy shape's clients): the paired, covariate-adjusted interval of the CPU per
//! statement added covers the truth 92–98% of the time over 400 runs of 30 pairs; the two
//! plausible bugs (all on windows against all off windows, unpaired; the mix ignored) fall
//! outside. The latency per statement added, weighed by the baseline's mix, covers its truth
//! too, and the mix ignored does not.

use super::{COVERAGE, rate_within};
use dbtax_stats::live::{Reading, estimate, unpaired_cpu};
use dbtax_stats::sim::production::{Traffic, run};

const RUNS: u64 = 400;
const BLOCKS: usize = 30;

/// How often each reading's interval covers the truth, over `RUNS` seeds from `base`.
fn coverage(
    base: u64,
    t: &Traffic,
    read: impl Fn(
        &[dbtax_stats::live::Slot],
        &[dbtax_stats::live::Window],
    ) -> Option<dbtax_stats::live::Interval>,
    truth: f64,
) -> usize {
    (base..base + RUNS)
        .filter(|&seed| {
            let (slots, windows) = run(seed, t, BLOCKS);
            read(&slots, &windows).is_some_and(|i| i.covers(truth))
        })
        .count()
}

#[test]
fn live_cpu_per_statement_covers_the_truth_on_drifting_traffic() {
    let t = Traffic::default();
    let truth = t.feature_cpu_us;
    let paired = coverage(
        71_000_000,
        &t,
        |s, w| estimate(s, w, 0, Reading::default()).cpu_us_per_statement,
        truth,
    );
    rate_within(
        "live: CPU per statement added, paired, rate and mix as covariates",
        paired,
        RUNS as usize,
        COVERAGE,
    );
    let unpaired = coverage(71_000_000, &t, |s, w| unpaired_cpu(s, w, 0), truth);
    let mix_ignored = coverage(
        71_000_000,
        &t,
        |s, w| {
            estimate(
                s,
                w,
                0,
                Reading {
                    mix: false,
                    ..Reading::default()
                },
            )
            .cpu_us_per_statement
        },
        truth,
    );
    eprintln!(
        "live bugs: unpaired {:.1}%, the mix ignored {:.1}% (must fall outside 92-98%)",
        100.0 * unpaired as f64 / RUNS as f64,
        100.0 * mix_ignored as f64 / RUNS as f64
    );
    for (what, k) in [("unpaired", unpaired), ("the mix ignored", mix_ignored)] {
        let rate = k as f64 / RUNS as f64;
        assert!(
            !(COVERAGE.0..=COVERAGE.1).contains(&rate),
            "{what}: {rate} inside the window"
        );
    }
}

#[test]
fn live_latency_weighed_by_the_baselines_mix_covers_the_truth() {
    let t = Traffic::default();
    let truth = t.feature_latency_us;
    let weighed = coverage(
        72_000_000,
        &t,
        |s, w| estimate(s, w, 0, Reading::default()).latency_us,
        truth,
    );
    rate_within(
        "live: latency per statement added, weighed by the baseline's mix",
        weighed,
        RUNS as usize,
        COVERAGE,
    );
    let overall = coverage(
        72_000_000,
        &t,
        |s, w| {
            estimate(
                s,
                w,
                0,
                Reading {
                    mix: false,
                    ..Reading::default()
                },
            )
            .latency_us
        },
        truth,
    );
    let rate = overall as f64 / RUNS as f64;
    eprintln!(
        "live bug: latency with the mix ignored covers {:.1}%",
        100.0 * rate
    );
    assert!(rate < COVERAGE.0, "the mix ignored: {rate}");
}

#[test]
fn live_log_bytes_and_the_bill_follow_the_truth_and_a_jumpy_pair_is_set_aside() {
    let t = Traffic::default();
    let (slots, mut windows) = run(73_000_001, &t, BLOCKS);
    // One window whose traffic doubled (a batch job started inside it).
    let on = slots.iter().position(|s| s.feature.is_some()).unwrap();
    windows[on].statements *= 2.2;
    windows[on].cpu_s *= 2.2;
    let e = estimate(&slots, &windows, 0, Reading::default());
    assert_eq!(e.set_aside.len(), 1, "{:?}", e.set_aside);
    assert!(e.set_aside[0].why.contains("differs too much"));
    assert_eq!(e.pairs, BLOCKS - 1);
    let log = e.log_bytes_per_statement.unwrap();
    assert!(
        log.covers(t.feature_log_bytes) || (log.value - t.feature_log_bytes).abs() < 2.0,
        "{log:?}"
    );
    // The bill at production's rate: cores = µs per statement × statements/s.
    let cpu = e.cpu_us_per_statement.unwrap();
    let cores = e.cores.unwrap();
    assert!((cores.value - cpu.value * e.rate / 1e6).abs() < 1e-9);
    assert!(
        e.rate > t.rate && e.rate < t.rate * t.ramp * 1.5,
        "{}",
        e.rate
    );
}

#[test]
fn the_schedule_pairs_every_on_window_and_keeps_the_share_on_under_its_cap() {
    use dbtax_stats::live::schedule;
    for (features, cap) in [(1, 0.5), (1, 0.25), (3, 0.5), (2, 0.2)] {
        let slots = schedule(5, features, 20, cap);
        let on = slots.iter().filter(|s| s.feature.is_some()).count();
        assert!(
            on as f64 / slots.len() as f64 <= cap + 1e-9,
            "{features} at {cap}"
        );
        for f in 0..features {
            let mut first_on = 0;
            for (i, s) in slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.feature == Some(f))
            {
                let partner = slots
                    .iter()
                    .enumerate()
                    .find(|(j, o)| *j != i && o.pair == s.pair)
                    .unwrap();
                assert_eq!(partner.1.feature, None);
                assert_eq!(partner.0.abs_diff(i), 1, "a pair's windows are adjacent");
                first_on += usize::from(partner.0 > i);
            }
            // The order within pairs is random, not always on first or always off first.
            assert!((3..=17).contains(&first_on), "{first_on}");
        }
    }
}
