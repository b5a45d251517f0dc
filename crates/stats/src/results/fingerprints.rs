//! A replay's costs per statement: each trial's latency by fingerprint, and per cell what the
//! variant added to each fingerprint's statements (paired over blocks) and its share of all
//! the time the variant added.

use super::estimate::Estimate;
use serde::{Deserialize, Serialize};

/// One fingerprint's statements in one trial.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TrialFingerprint {
    /// The fingerprint's digest.
    pub digest: String,
    /// A statement of it (not stored per trial: the cell has it).
    #[serde(skip)]
    pub sample: String,
    /// Its statements measured.
    pub count: u64,
    /// Their mean latency, ms.
    pub mean_ms: f64,
    /// Their median latency, ms.
    pub p50_ms: f64,
    /// Their 99th percentile, ms.
    pub p99_ms: f64,
    /// Its statements that failed (the server answered with an error), not timed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u64,
    /// Its statements that sent other rows than the log recorded (a slow log's `Rows_sent`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rows_off: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a variant added to one fingerprint's statements.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FingerprintCost {
    /// The fingerprint's digest.
    pub digest: String,
    /// A statement of it.
    #[serde(default)]
    pub sample: String,
    /// Its statements per trial (median).
    pub count: u64,
    /// Median over trials of its median latency, ms.
    pub p50_ms: f64,
    /// Median over trials of its 99th percentile, ms.
    pub p99_ms: f64,
    /// Against the baseline, paired over blocks: the added latency per statement, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_delta_ms: Option<FingerprintDelta>,
    /// Its share of all the latency the variant added over the tagged fingerprints (mean
    /// added latency × statements), percent; absent for the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_share_pct: Option<f64>,
    /// Its statements that failed per trial (median), in this cell.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u64,
    /// Its statements per trial (median) that sent other rows than the log recorded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rows_off: u64,
    /// Why the replay of this fingerprint was not faithful (its statements failed, or sent
    /// other rows than the log recorded, here or in the baseline): its added latency is then
    /// not that statement's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diverged: Option<String>,
}

/// Added latency per statement.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FingerprintDelta {
    /// To the median.
    pub p50: Estimate,
    /// To the 99th percentile.
    pub p99: Estimate,
    /// To the mean.
    pub mean: Estimate,
}
