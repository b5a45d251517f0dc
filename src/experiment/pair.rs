//! `--compare-target`: one experiment on two servers at once. Each block holds every variant
//! of both servers in one randomized order (the variants named "A:…" and "B:…"), so B/A
//! pairs block by block as the variants do; the cells are split back per server at every
//! block and at the end.

use super::execute::{Executed, Ready, Recorder, RunOptions, conclude, open, trial_plan};
use super::live::LiveBench;
use super::runner::{self, Bench, Load, Observer};
use super::spec::Experiment;
use crate::results::{Cell, Trial};
use crate::server::ServerConfig;
use anyhow::Result;

/// One experiment on two servers at once (`--compare-target`): every block runs every
/// variant on A and on B, in one randomized order, so B/A is paired block by block as the
/// variants are. Both servers are locked, journaled and restored as in `execute`; B's
/// results go to `compare-target/` inside A's folder.
pub fn execute_pair(
    exp: &Experiment,
    configs: [&ServerConfig; 2],
    opts: &RunOptions,
    display: &mut dyn Observer,
) -> Result<[Executed; 2]> {
    let opened_a = open(exp, configs[0], opts)?;
    let opened_b = open(exp, configs[1], opts)?;
    if opened_a.0.identity == opened_b.0.identity {
        return Err(crate::error::usage(format!(
            "--compare-target names the same server as --target ({}); give two different \
             servers. Nothing was changed",
            opened_b.0.label()
        )));
    }
    let mut a = Ready::new(exp, opened_a, opts, None, display)?;
    let opts_b = RunOptions {
        out: Some(a.dir.join("compare-target")),
        ..opts.clone()
    };
    let mut b = Ready::new(exp, opened_b, &opts_b, None, display)?;
    a.results.paired_with = Some(b.results.target.url.clone());
    b.results.paired_with = Some(a.results.target.url.clone());
    let nv = exp.variants.len();
    let both = exp.on_two_servers();
    let (mut ra, mut rb) = (a.results, b.results);
    let (outcome, restored) = {
        let mut bench = PairBench {
            nv,
            a: LiveBench::new(
                &mut a.server,
                &a.prepared,
                &a.plan,
                a.switcher,
                trial_plan(exp),
                exp.max_log_bytes,
            ),
            b: LiveBench::new(
                &mut b.server,
                &b.prepared,
                &b.plan,
                b.switcher,
                trial_plan(exp),
                exp.max_log_bytes,
            ),
        };
        let mut recorder = Recorder {
            runs: vec![(&mut ra, &a.dir), (&mut rb, &b.dir)],
            display,
        };
        recorder.write()?;
        let outcome = runner::run(&both, &mut bench, &mut recorder);
        let restored = [bench.a.finish(), bench.b.finish()];
        (outcome, restored)
    };
    let [restored_a, restored_b] = restored;
    let (oa, ob) = match outcome {
        Ok(o) => {
            let [oa, ob] = split_outcome(o);
            (Ok(oa), Ok(ob))
        }
        Err(e) => {
            let again = anyhow::anyhow!("{e:#}");
            (Err(e), Err(again))
        }
    };
    Ok([
        conclude(oa, restored_a, ra, a.dir)?,
        conclude(ob, restored_b, rb, b.dir)?,
    ])
}

/// The two servers of `--compare-target` behind one `Bench`: variants `0..nv` are A's,
/// `nv..2nv` B's.
struct PairBench<'a> {
    nv: usize,
    a: LiveBench<'a>,
    b: LiveBench<'a>,
}

impl<'a> PairBench<'a> {
    /// The server a variant runs on, and its index there.
    fn side(&mut self, variant: usize) -> (&mut LiveBench<'a>, usize) {
        match variant.checked_sub(self.nv) {
            None => (&mut self.a, variant),
            Some(v) => (&mut self.b, v),
        }
    }
}

impl Bench for PairBench<'_> {
    fn apply(&mut self, variant: usize, observer: &mut dyn Observer) -> Result<()> {
        let (bench, v) = self.side(variant);
        bench.apply(v, observer)
    }

    fn trial(&mut self, variant: usize, load: &Load, observer: &mut dyn Observer) -> Result<Trial> {
        let (bench, v) = self.side(variant);
        bench.trial(v, load, observer)
    }

    fn calibrate(&mut self, _: u32, _: &mut dyn Observer) -> Result<Trial> {
        anyhow::bail!("--compare-target runs closed loop: a rate is not supported there yet")
    }
}

/// A two-server run's variant name ("A:off", "B:audit") as (side, the variant's own name).
fn side_of(name: &str) -> (usize, &str) {
    match name.split_once(':') {
        Some(("A", own)) => (0, own),
        Some(("B", own)) => (1, own),
        _ => (0, name),
    }
}

/// The cells of a two-server run, A's and B's, under their own variant names (a trial's
/// `after` keeps its side: "B:audit" ran on the other server).
pub(super) fn split_cells(cells: &[Cell]) -> [Vec<Cell>; 2] {
    let mut out = [vec![], vec![]];
    for c in cells {
        let (side, own) = side_of(&c.variant);
        let mut c = c.clone();
        c.variant = own.to_string();
        out[side].push(c);
    }
    out
}

fn split_outcome(o: runner::Outcome) -> [runner::Outcome; 2] {
    let [ca, cb] = split_cells(&o.cells);
    let side = |cells| runner::Outcome {
        cells,
        carry_over_pct: o.carry_over_pct.clone(),
        intervals: o.intervals,
        warnings: o.warnings.clone(),
        calibration: o.calibration.clone(),
    };
    [side(ca), side(cb)]
}
