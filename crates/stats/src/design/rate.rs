//! A rate's shape: how many events a second and how their starts are spaced.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How intended starts are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Exponential gaps (independent arrivals, as users make them).
    #[default]
    Poisson,
    /// Evenly spaced.
    Uniform,
}

impl Arrival {
    /// The name used in flags, files and results.
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Poisson => "poisson",
            Arrival::Uniform => "uniform",
        }
    }
}

/// An open-loop rate for one trial.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Events per second, in total over every worker.
    pub per_second: f64,
    /// How the starts are spaced.
    pub arrival: Arrival,
    /// Skip (and count) an event whose send would be later than this after its intended
    /// start, like pgbench's --latency-limit; None: every event is sent, late or not.
    pub skip_late: Option<Duration>,
}
