//! What is estimated over a whole experiment rather than one cell: carry-over between trials,
//! interactions between factors, residual transients, the robust companion of each overhead,
//! and the family of intervals Holm's adjustment is made over.

use serde::{Deserialize, Serialize};

/// What was estimated over every cell (flattened into results.json's top level).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Analysis {
    /// How many tests the Holm adjustment of `significant` was made over: every overhead,
    /// its robust companion, every factor effect and every interaction.
    #[serde(default)]
    pub intervals: u32,
    /// The robust companion's method: "trimmed-mean-20" (Yuen's 20% trimmed mean of the
    /// paired log ratios, winsorized variance).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub robust_method: String,
    /// Carry-over by preceding variant: how much slower a trial ran right after (lag 1) or
    /// two after (lag 2) a trial of `after` than after the baseline. Paired ratios are
    /// corrected for these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carry_over: Vec<CarryOverTerm>,
    /// What the carry-over model left out, and why (a lag-2 term the design cannot tell
    /// from the others).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carry_over_notes: Vec<String>,
    /// Factorial experiments: how much one factor's cost changes with another factor's
    /// level.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interactions: Vec<Interaction>,
    /// Per preceding variant: how much slower the first half of a trial ran than its second
    /// half after that variant, against after the baseline (a transient the warm-up did not
    /// wait out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transients: Vec<Transient>,
    /// Other processes' CPU (percent of one core, on either host) above which a block was
    /// excluded as disturbed; absent when the rule was off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_disturbance_pct: Option<f64>,
    /// The user's negligible threshold (`--negligible`), percent; absent: the default 2%.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negligible_pct: Option<f64>,
    /// Blocks excluded from every figure because other processes took the CPU during one of
    /// their trials (their trials are kept, in each cell's `disturbed_trials`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_blocks: Vec<DisturbedBlock>,
}

/// A block excluded as disturbed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DisturbedBlock {
    /// Its block number.
    pub block: u32,
    /// Its thread count.
    pub threads: u32,
    /// Rate mode: its rate level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// The most CPU other processes used in one of its trials, percent of one core.
    pub worst_pct: f64,
    /// The run's typical level when it was judged (the lower quartile of the trials so far):
    /// a block is disturbed above this plus the threshold.
    #[serde(default)]
    pub typical_pct: f64,
    /// Where: "server" (the server's host, this machine when the server is local) or
    /// "client".
    pub host: String,
    /// Set aside because a reading of the server's host came late (its probe did not
    /// answer in time): the words. Its trials are dropped (the block lacks one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_reading: Option<String>,
}

/// One term of the carry-over model.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CarryOverTerm {
    /// The preceding variant ("any feature" for a pooled term).
    pub after: String,
    /// 1: the trial right after; 2: the one after that.
    pub lag: u32,
    /// Percent slower than after the baseline.
    pub pct: f64,
    /// Its 95% interval.
    pub ci95_pct: [f64; 2],
    /// The interval excludes 0.
    pub significant: bool,
}

/// How much a factor's cost changes between two levels of another factor, paired within
/// blocks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Interaction {
    /// The factor whose cost is compared, and the factor whose level changes.
    pub factors: [String; 2],
    /// The first factor's level, and the second factor's level it is compared at.
    pub levels: [String; 2],
    /// The second factor's first level, which it is compared against.
    pub against: String,
    /// The cell the comparison ends at (both factors at these levels).
    pub variant: String,
    /// Client threads.
    pub threads: u32,
    /// The first factor's overhead at the second factor's level minus its overhead at that
    /// factor's first level, in percentage points.
    pub pct: f64,
    /// Its 95% interval (t over the blocks).
    pub ci95_pct: [f64; 2],
    /// Holm-adjusted, in the same family as the overheads.
    pub significant: bool,
    /// Unadjusted two-sided p-value.
    pub p_value: f64,
    /// Blocks in which all four cells ran.
    pub blocks: u32,
}

/// A residual transient: the first halves of trials after `after` ran slower, relative to
/// their second halves, than after the baseline.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Transient {
    /// The preceding variant.
    pub after: String,
    /// How much slower the first half ran, percent (beyond what it does after the baseline).
    pub pct: f64,
    /// Its 95% interval (Welch).
    pub ci95_pct: [f64; 2],
    /// The interval excludes 0.
    pub significant: bool,
}

/// The robust companion of an overhead.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Robust {
    /// Point estimate, percent.
    pub value: f64,
    /// 95% interval, percent.
    pub ci95: [f64; 2],
    /// Unadjusted two-sided p-value of "no overhead".
    #[serde(default = "one")]
    pub p_value: f64,
    /// Holm-adjusted, in the same family as the means: the words use the robust estimate
    /// only when this holds.
    #[serde(default)]
    pub significant: bool,
}

fn one() -> f64 {
    1.0
}
