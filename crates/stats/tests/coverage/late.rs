//! A late reading of the server's host costs its trial, not the run: the simulated server
//! with a wrapper that answers some trials with `run::hooks::TrialLost` (as dbtax's probe
//! does after 15 s of silence). The run completes; each lost block is recorded with its words and run
//! again; no kept block lacks a variant (a partial block would pair nothing); the features
//! are switched off (the bench is told) once per lost trial; a late reading in the warm-up
//! round loses only that trial. Without the runner's handling (the error passed up), the
//! run would end in Err: the first assertion.

use super::*;
use dbtax_stats::results::Trial;
use dbtax_stats::run::hooks::TrialLost;
use dbtax_stats::run::{Bench, LoadPoint, Observer};

/// The simulated server, with trials `lost` (by call number) answered late.
struct LateBench {
    sim: SimulatedServer,
    lost: Vec<usize>,
    calls: usize,
    waits: usize,
}

impl Bench for LateBench {
    fn apply(&mut self, v: usize, o: &mut dyn Observer) -> anyhow::Result<()> {
        self.sim.apply(v, o)
    }

    fn trial(&mut self, v: usize, l: &LoadPoint, o: &mut dyn Observer) -> anyhow::Result<Trial> {
        self.calls += 1;
        if self.lost.contains(&self.calls) {
            return Err(TrialLost(
                "a reading of ssh://db's host came 15 s late (the probe was silent 15 s of its 60 s)"
                    .into(),
            )
            .into());
        }
        self.sim.trial(v, l, o)
    }

    fn calibrate(&mut self, t: u32, o: &mut dyn Observer) -> anyhow::Result<Trial> {
        self.sim.calibrate(t, o)
    }

    fn after_late_reading(&mut self, _: &mut dyn Observer) -> anyhow::Result<()> {
        self.waits += 1;
        Ok(())
    }
}

#[test]
fn a_late_reading_costs_its_block_and_the_run_completes() {
    for (seed, lost, warmup) in [
        (91_000_001u64, vec![9usize], true),
        (91_000_002, vec![7, 8, 20], true),
        (91_000_003, vec![2], true),
        (91_000_004, vec![1, 5], false),
    ] {
        let mut exp = experiment(variants(3), vec![1, 4], StopRule::Repeats(4), seed);
        exp.warmup_round = warmup;
        let mut bench = LateBench {
            sim: SimulatedServer::new(seed, vec![0.0, 0.05, 0.1], 0.06, 0.04),
            lost: lost.clone(),
            calls: 0,
            waits: 0,
        };
        let out = runner::run(&exp, &mut bench, &mut Silent)
            .unwrap_or_else(|e| panic!("the run ended on a late reading: {e:#}"));
        assert_eq!(bench.waits, lost.len(), "features off once per lost trial");
        let warmup_trials = if warmup { 6 } else { 0 };
        let in_blocks = lost.iter().filter(|&&c| c > warmup_trials).count();
        let words = out
            .warnings
            .iter()
            .map(|w| w.to_string())
            .collect::<Vec<_>>();
        if in_blocks > 0 {
            assert!(
                words
                    .iter()
                    .any(|w| w
                        .contains(&format!("{in_blocks} block(s) set aside because a reading"))),
                "{words:?}"
            );
        }
        for c in &out.cells {
            // Four kept blocks at every point, each whole: the same blocks in every variant.
            assert_eq!(c.trials.len(), 4, "{} at {}", c.variant, c.threads);
            let blocks = |variant: &str| -> Vec<u32> {
                let cell = out
                    .cells
                    .iter()
                    .find(|d| d.variant == variant && d.threads == c.threads)
                    .unwrap();
                cell.trials.iter().map(|t| t.block).collect()
            };
            assert_eq!(blocks(&c.variant), blocks("v0"));
        }
        let late: Vec<_> = out
            .analysis
            .disturbed_blocks
            .iter()
            .filter(|b| b.late_reading.is_some())
            .collect();
        assert_eq!(late.len(), in_blocks, "{late:?}");
        for b in &late {
            assert!(b.late_reading.as_ref().unwrap().contains("ssh://db"));
            for c in out.cells.iter().filter(|c| c.threads == b.threads) {
                assert!(c.trials.iter().all(|t| t.block != b.block), "{b:?}");
            }
        }
    }
}
