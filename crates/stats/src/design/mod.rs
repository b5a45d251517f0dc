//! The design of an experiment, without its load: which variants, at which load points, in
//! blocks of what, until which stop rule (`Design`), and the parts that make and read it:
//! the blocks' orders ([`order`]), the stop rules' choices ([`stop`]), the rule that sets a
//! disturbed block aside ([`disturbed`]), what the reader must be warned of ([`warnings`]), and
//! a rate's shape ([`rate`]). dbtax's `run` drives a server's load through it; a second kind
//! of run can drive anything else that takes turns (`crate::run::Bench`).

pub mod disturbed;
pub mod order;
pub mod rate;
pub mod stop;
pub mod warnings;

pub use rate::{Arrival, Rate};
use std::time::Duration;

/// One server configuration to measure.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VariantSpec {
    /// Name shown in tables; the first variant is the baseline.
    pub name: String,
    /// Catalog features switched on in this variant (one per factor at most).
    pub features: Vec<String>,
    /// Extra global variables, applied after the features'.
    pub set: Vec<(String, String)>,
    /// Restart-only server options (`log-bin=binlog`): the server is restarted with them.
    pub server_opts: Vec<String>,
    /// Index of the variant this one's overhead is computed against (itself: a baseline).
    pub baseline: usize,
    /// Multi-factor experiments: (factor, index of the variant with that factor at its
    /// first level and every other factor the same).
    pub effects: Vec<(String, usize)>,
    /// Multi-factor experiments: (factor, this variant's level of it), in factor order.
    pub levels: Vec<(String, String)>,
}

/// When to stop adding blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum StopRule {
    /// Exactly this many blocks per thread count.
    Repeats(u32),
    /// Until every CI half-width is ≤ `points`, or `budget` has passed. After the minimum
    /// blocks, a block runs only the variants still too wide and their baselines.
    Precision {
        /// Target half-width, percentage points.
        points: f64,
        /// Wall-time budget.
        budget: Duration,
        /// The goal is for this thread count alone; every other thread count gets this many
        /// blocks (the demo: its time goes where the headline is). None: every thread count.
        focus: Option<Focus>,
    },
}

/// One load level of rate mode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateLevel {
    /// Events per second, in total.
    PerSecond(f64),
    /// A fraction of the capacity measured at each thread count (0.5: half).
    Capacity(f64),
}

impl RateLevel {
    /// How the level is written: "50%" or "2000/s".
    pub fn label(&self) -> String {
        match self {
            RateLevel::PerSecond(r) => format!("{}/s", trim_float(*r)),
            RateLevel::Capacity(f) => format!("{}%", trim_float(f * 100.0)),
        }
    }
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Rate mode: the load levels and how arrivals are spaced.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenLoop {
    /// Load levels; every thread count runs each.
    pub levels: Vec<RateLevel>,
    /// How intended starts are spaced.
    pub arrival: Arrival,
    /// Skip (and count) events later than this.
    pub skip_late: Option<Duration>,
}

impl OpenLoop {
    /// Whether a calibration (closed-loop capacity at each thread count) must run first.
    pub fn needs_calibration(&self) -> bool {
        self.levels
            .iter()
            .any(|l| matches!(l, RateLevel::Capacity(_)))
    }
}

/// Where trials run: a thread count, and in rate mode one of the rate levels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Client threads.
    pub threads: u32,
    /// Index into `OpenLoop::levels`; None: closed loop.
    pub rate: Option<usize>,
}

/// Precision at one thread count, a fixed number of blocks at the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Focus {
    /// The thread count the precision goal is for.
    pub threads: u32,
    /// Blocks at every other thread count.
    pub others: u32,
}

/// What an experiment measures and in what order: its design, as `run::run` drives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    /// Name (results directory, report title).
    pub name: String,
    /// Variants; the first is the baseline.
    pub variants: Vec<VariantSpec>,
    /// Thread counts.
    pub threads: Vec<u32>,
    /// Measured time per trial.
    pub trial: Duration,
    /// The longest settle after each switch.
    pub warmup: Duration,
    /// How many blocks.
    pub stop: StopRule,
    /// Rate mode (open loop) instead of closed loop.
    pub open_loop: Option<OpenLoop>,
    /// Seed for the trial order.
    pub seed: u64,
    /// A block in which other processes used more CPU than this (percent of one core) is
    /// set aside whole and run again; None: never.
    pub max_disturbance: Option<f64>,
    /// Every variant once at every thread count before the first measured block.
    pub warmup_round: bool,
    /// With two variants, blocks of one each instead of the extra-period blocks.
    pub one_each_blocks: bool,
    /// The thread count the headline is about (None: the highest), fixed before the run.
    pub headline_threads: Option<u32>,
    /// The cost below which a feature is negligible, percent (None: 2%).
    pub negligible: Option<f64>,
    /// Latency objectives: each variant's capacity at each is found instead.
    pub slo: Vec<crate::results::Slo>,
}

impl Design {
    /// A design at the defaults (what `dbtax run` uses when nothing says otherwise).
    pub fn defaults() -> Design {
        Design {
            name: String::new(),
            variants: vec![],
            threads: vec![1, 4, 16, 64],
            trial: Duration::from_secs(1),
            warmup: Duration::from_secs(1),
            stop: StopRule::Repeats(DEFAULT_BLOCKS),
            open_loop: None,
            seed: 0,
            max_disturbance: Some(MAX_DISTURBANCE),
            warmup_round: true,
            one_each_blocks: false,
            headline_threads: None,
            negligible: None,
            slo: vec![],
        }
    }

    /// Every load point: each thread count, and in rate mode each rate level at it.
    pub fn points(&self) -> Vec<Point> {
        let levels: Vec<Option<usize>> = match &self.open_loop {
            Some(o) => (0..o.levels.len()).map(Some).collect(),
            None => vec![None],
        };
        self.threads
            .iter()
            .flat_map(|&threads| levels.iter().map(move |&rate| Point { threads, rate }))
            .collect()
    }

    /// The thread count the headline reports: the declared one, else the highest.
    pub fn headline_threads(&self) -> u32 {
        self.headline_threads
            .unwrap_or_else(|| self.threads.iter().copied().max().unwrap_or(1))
    }

    /// Blocks per thread count that are planned (precision mode: the minimum).
    pub fn planned_blocks(&self) -> u32 {
        match self.stop {
            StopRule::Repeats(n) => n,
            StopRule::Precision { .. } => MIN_BLOCKS,
        }
    }

    /// Blocks planned at one thread count before any precision extension.
    pub fn planned_blocks_at(&self, threads: u32) -> u32 {
        match self.stop {
            StopRule::Precision { focus: Some(f), .. } if f.threads != threads => f.others,
            _ => self.planned_blocks(),
        }
    }

    /// Each variant's trials in one block: two with two variants (`order::extra_period`).
    pub fn repeats_per_block(&self) -> u32 {
        match self.variants.len() {
            2 if !self.one_each_blocks => 2,
            _ => 1,
        }
    }

    /// Measured trials planned before any precision extension.
    pub fn planned_trials(&self) -> usize {
        self.points()
            .iter()
            .map(|p| {
                // A two-variant block runs each twice: an odd count is rounded up.
                let per = self.repeats_per_block();
                self.planned_blocks_at(p.threads).div_ceil(per) as usize
                    * per as usize
                    * self.variants.len()
            })
            .sum()
    }
}

/// Other processes' CPU above which a block counts as disturbed, percent of one core.
pub const MAX_DISTURBANCE: f64 = 10.0;

/// Precision mode's first stage: every variant runs this many blocks before the rule looks
/// at a width, and the width then fixes how many blocks each variant needs (Stein's
/// two-stage rule). Stopping as soon as a small sample happens to look narrow covers the
/// truth less often than 95% (after 3 blocks, about 91% in simulation); with a first stage
/// of 10 the focused rule covered about 92.5%, with 15 about 94% (tests/statistics.rs).
pub const MIN_BLOCKS: u32 = 15;
/// The most statements a fixed-count trial may run (`--queries-per-trial`).
pub const MAX_QUERIES_PER_TRIAL: u64 = 1_000_000_000;
/// The longest trial (or settle) dbtax runs.
pub const MAX_TRIAL: Duration = Duration::from_secs(3600);
/// Blocks per thread count of a run that names no stop rule.
pub const DEFAULT_BLOCKS: u32 = 10;
/// Precision mode never runs more blocks than this per thread count.
pub const MAX_BLOCKS: u32 = 200;

/// The cartesian product of factor levels (the last factor varies fastest). Each variant's
/// overhead is against the variant with the first factor at its first level (the first
/// factor's effect within each level of the others); a variant whose first factor is at its
/// first level is compared with the all-first-levels baseline. `effects` lists, per factor,
/// the variant it differs from in that factor alone.
pub fn product(factors: &[(String, Vec<VariantSpec>)]) -> Vec<VariantSpec> {
    let mut combos: Vec<Vec<usize>> = vec![vec![]];
    for (_, levels) in factors.iter().rev() {
        combos = (0..levels.len())
            .flat_map(|l| combos.iter().map(move |c| [vec![l], c.clone()].concat()))
            .collect();
    }
    let index = |c: &[usize]| {
        c.iter()
            .zip(factors)
            .fold(0usize, |acc, (l, (_, levels))| acc * levels.len() + l)
    };
    combos
        .iter()
        .map(|c| {
            let names: Vec<&str> = c
                .iter()
                .zip(factors)
                .map(|(l, (_, levels))| levels[*l].name.as_str())
                .collect();
            let mut v = VariantSpec {
                name: names.join("/"),
                ..Default::default()
            };
            for (l, (factor, levels)) in c.iter().zip(factors) {
                let level = &levels[*l];
                v.levels.push((factor.clone(), level.name.clone()));
                v.features.extend(level.features.iter().cloned());
                v.set.extend(level.set.iter().cloned());
                v.server_opts.extend(level.server_opts.iter().cloned());
            }
            for (f, (fname, _)) in factors.iter().enumerate() {
                if c[f] != 0 {
                    let mut other = c.clone();
                    other[f] = 0;
                    v.effects.push((fname.clone(), index(&other)));
                }
            }
            v.baseline = match v.effects.first() {
                Some((_, i)) if c[0] != 0 => *i,
                _ => 0,
            };
            v
        })
        .collect()
}

/// "off" plus one variant per feature.
pub fn variants_for_features(features: &[String]) -> Vec<VariantSpec> {
    let mut v = vec![VariantSpec {
        name: "off".into(),
        ..Default::default()
    }];
    for f in features {
        v.push(VariantSpec {
            name: f.clone(),
            features: vec![f.clone()],
            ..Default::default()
        });
    }
    v
}
