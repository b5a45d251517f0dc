//! `--compare-target`: one experiment on two servers at once. Each block holds every variant
//! of both servers in one randomized order, so B/A pairs block by block as the variants do;
//! which variant runs where is `sides`' (A's variants first, then B's), and the cells are
//! split back per server at every block and at the end.

use crate::experiment::prepare::open::{Ready, open};
use crate::experiment::run::execute::{Executed, conclude, trial_plan};
use crate::experiment::run::real_server::LiveBench;
use crate::experiment::run::record::Recorder;
use crate::experiment::run::sides::{Side, Sides};
use crate::experiment::spec::{Experiment, RunOptions};
use crate::load::LocalLoad;
use crate::results::Trial;
use crate::server::ServerConfig;
use anyhow::Result;
use dbtax_stats::run::{self as runner, Bench, LoadPoint, Observer};

/// One experiment on two servers at once (`--compare-target`): every block runs every
/// variant on A and on B, in one randomized order, so B/A is paired block by block as the
/// variants are. Both servers are locked, journaled and restored as in `execute`; B's
/// results go to `compare-target/` inside A's folder. The load is this process's.
pub fn execute_pair(
    exp: &Experiment,
    configs: [&ServerConfig; 2],
    opts: &RunOptions,
    display: &mut dyn Observer,
) -> Result<[Executed; 2]> {
    crate::experiment::install_hooks();
    if !exp.slo.is_empty() {
        return Err(crate::error::usage(
            "--slo and --compare-target do not go together yet: find each server's capacity \
             in its own run, then `dbtax compare` the two results. Nothing was changed",
        ));
    }
    let restart_cmd = opts.restart_cmd.as_deref();
    let opened_a = open(exp, configs[0], restart_cmd)?;
    let opened_b = open(exp, configs[1], restart_cmd)?;
    if opened_a.0.identity == opened_b.0.identity {
        return Err(crate::error::usage(format!(
            "--compare-target names the same server as --target ({}); give two different \
             servers. Nothing was changed",
            opened_b.0.label()
        )));
    }
    let (mut load_a, mut load_b) = (LocalLoad, LocalLoad);
    let mut a = Ready::new(exp, opened_a, opts, &mut load_a, display)?;
    let opts_b = RunOptions {
        out: Some(a.dir.join("compare-target")),
        ..opts.clone()
    };
    let mut b = Ready::new(exp, opened_b, &opts_b, &mut load_b, display)?;
    a.results.paired_with = Some(b.results.target.url.clone());
    b.results.paired_with = Some(a.results.target.url.clone());
    let (both, sides) = Sides::of(exp);
    let (mut ra, mut rb) = (a.results, b.results);
    let (outcome, restored) = {
        let mut bench = PairBench {
            sides: &sides,
            a: LiveBench::new(
                (&mut a.server, &a.prepared, &a.plan),
                &mut load_a,
                a.switcher,
                trial_plan(exp, opts),
                exp.max_log_bytes,
            ),
            b: LiveBench::new(
                (&mut b.server, &b.prepared, &b.plan),
                &mut load_b,
                b.switcher,
                trial_plan(exp, opts),
                exp.max_log_bytes,
            ),
        };
        let mut recorder = Recorder {
            runs: vec![(&mut ra, &a.dir), (&mut rb, &b.dir)],
            sides: Some(&sides),
            display,
        };
        recorder.write()?;
        let outcome = runner::run(&both.design(), &mut bench, &mut recorder);
        let restored = [bench.a.finish(), bench.b.finish()];
        (outcome, restored)
    };
    let [restored_a, restored_b] = restored;
    let (oa, ob) = match outcome {
        Ok(o) => {
            let [oa, ob] = split_outcome(&sides, o);
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

/// The two servers of `--compare-target` behind one `Bench`.
struct PairBench<'a> {
    sides: &'a Sides,
    a: LiveBench<'a>,
    b: LiveBench<'a>,
}

impl<'a> PairBench<'a> {
    /// The server a variant runs on, and its index there.
    fn side(&mut self, variant: usize) -> (&mut LiveBench<'a>, usize) {
        match self.sides.side(variant) {
            (Side::A, v) => (&mut self.a, v),
            (Side::B, v) => (&mut self.b, v),
        }
    }
}

impl Bench for PairBench<'_> {
    fn apply(&mut self, variant: usize, observer: &mut dyn Observer) -> Result<()> {
        let (bench, v) = self.side(variant);
        bench.apply(v, observer)
    }

    fn trial(
        &mut self,
        variant: usize,
        load: &LoadPoint,
        observer: &mut dyn Observer,
    ) -> Result<Trial> {
        let (bench, v) = self.side(variant);
        bench.trial(v, load, observer)
    }

    fn after_late_reading(&mut self, observer: &mut dyn Observer) -> Result<()> {
        self.a.after_late_reading(observer)?;
        self.b.after_late_reading(observer)
    }

    fn calibrate(&mut self, _: u32, _: &mut dyn Observer) -> Result<Trial> {
        anyhow::bail!("--compare-target runs closed loop: a rate is not supported there yet")
    }
}

fn split_outcome(sides: &Sides, o: runner::Outcome) -> [runner::Outcome; 2] {
    let [ca, cb] = sides.split(&o.cells);
    let side = |cells| runner::Outcome {
        cells,
        analysis: o.analysis.clone(),
        warnings: o.warnings.clone(),
        calibration: o.calibration.clone(),
        capacity: vec![],
    };
    [side(ca), side(cb)]
}
