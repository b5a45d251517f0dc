//! Scratch: coverage of the method under the simulator's scenarios.
use dbtax::experiment::runner::{self, Silent};
use dbtax::experiment::sim::SimulatedServer;
use dbtax::experiment::spec::{Experiment, StopRule, VariantSpec};
use std::time::Duration;

fn exp(nv: usize, threads: Vec<u32>, stop: StopRule, seed: u64) -> Experiment {
    let mut e = Experiment::defaults();
    e.name = "sim".into();
    e.threads = threads;
    e.stop = stop;
    e.seed = seed;
    e.variants = (0..nv)
        .map(|i| VariantSpec {
            name: format!("v{i}"),
            ..Default::default()
        })
        .collect();
    e
}

fn run(name: &str, n: u64, truth: &[f64], blocks: u32, f: impl Fn(&mut SimulatedServer)) {
    let mut cov = vec![0usize; truth.len()];
    let mut carry = vec![];
    let mut sig = vec![0usize; truth.len()];
    for i in 0..n {
        let seed = 7_000_000 + i;
        let e = exp(truth.len(), vec![8], StopRule::Repeats(blocks), seed);
        let mut sim = SimulatedServer::new(seed, truth.to_vec(), 0.06, 0.04);
        f(&mut sim);
        let out = runner::run(&e, &mut sim, &mut Silent).unwrap();
        if let Some(c) = &out.carry_over_pct {
            carry.push(c.value);
        }
        for v in 1..truth.len() {
            let c = out
                .cells
                .iter()
                .find(|c| c.variant == format!("v{v}"))
                .unwrap();
            let o = c.overhead.as_ref().unwrap();
            let t = sim.truth_pct(v);
            if o.ci95_pct[0] <= t && t <= o.ci95_pct[1] {
                cov[v] += 1;
            }
            if o.significant {
                sig[v] += 1;
            }
        }
    }
    let mc = carry.iter().sum::<f64>() / carry.len().max(1) as f64;
    println!("{name:20} carry mean {mc:.2} (n={})", carry.len());
    println!(
        "{name:20} coverage {:?} significant {:?} of {n}",
        &cov[1..],
        &sig[1..]
    );
}

fn main() {
    let n = 400;
    run("normal", n, &[0.0, 0.12], 8, |_| {});
    run("a/a", n, &[0.0, 0.0], 8, |_| {});
    run("normal-5", n, &[0.0, 0.12], 5, |_| {});
    run("heavy t3", n, &[0.0, 0.12], 8, |s| s.tail_df = Some(3));
    run("stalls", n, &[0.0, 0.12], 8, |s| s.stall = Some((0.1, 0.5)));
    run("carry 5%", n, &[0.0, 0.12], 8, |s| s.carry_over = 0.05);
    run("carry 5% 4v", n, &[0.0, 0.05, 0.12, 0.2], 8, |s| {
        s.carry_over = 0.05
    });
    run("ar effect", n, &[0.0, 0.12], 8, |s| {
        s.effect_ar = Some((0.7, 0.03))
    });
    run("4 variants", n, &[0.0, 0.05, 0.12, 0.2], 8, |_| {});
    let _ = Duration::ZERO;
}
