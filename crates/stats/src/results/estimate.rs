//! Estimates with their intervals: a plain one, and the server CPU a variant adds.

use serde::{Deserialize, Serialize};

/// A point estimate with a 95% interval.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Estimate {
    /// Point estimate.
    pub value: f64,
    /// 95% confidence interval.
    pub ci95: [f64; 2],
}

/// The server CPU a variant adds per statement against its baseline, paired by block.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CpuDelta {
    /// µs per statement, with its 95% interval.
    #[serde(flatten)]
    pub estimate: Estimate,
    /// The same as a share of the baseline's server CPU per statement in those blocks, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_baseline: Option<f64>,
    /// Two-sided p-value against no difference (paired t).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// Holm-adjusted over every test the experiment reports, as the overheads are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub significant: Option<bool>,
    /// Paired blocks it is computed from.
    #[serde(default)]
    pub blocks: u32,
}

impl CpuDelta {
    /// Whether it counts as measured: Holm's decision, or (results written before it was
    /// recorded) an interval that excludes 0.
    pub fn measured(&self) -> bool {
        self.significant
            .unwrap_or(self.estimate.ci95[0] > 0.0 || self.estimate.ci95[1] < 0.0)
    }
}
