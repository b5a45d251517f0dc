//! Capacity at a latency objective (`--slo p99=5ms`): the objective, each search step as it
//! ran, and each variant's capacity with its interval and what a feature costs of it.

use super::{LatencyMs, TrialRate};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// A latency quantile an objective is set on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantile {
    /// The median.
    P50,
    /// The 95th percentile.
    P95,
    /// The 99th percentile.
    P99,
    /// The 99.9th percentile.
    P999,
}

impl Quantile {
    /// Its name as written (`p99.9`).
    pub fn label(self) -> &'static str {
        match self {
            Quantile::P50 => "p50",
            Quantile::P95 => "p95",
            Quantile::P99 => "p99",
            Quantile::P999 => "p99.9",
        }
    }

    /// The fraction of events at or under it.
    pub fn fraction(self) -> f64 {
        match self {
            Quantile::P50 => 0.5,
            Quantile::P95 => 0.95,
            Quantile::P99 => 0.99,
            Quantile::P999 => 0.999,
        }
    }

    /// This quantile of a trial's latency, ms (p99.9 falls back to p99 in results written
    /// before it was recorded).
    pub fn of(self, l: &LatencyMs) -> f64 {
        match self {
            Quantile::P50 => l.p50,
            Quantile::P95 => l.p95,
            Quantile::P99 => l.p99,
            Quantile::P999 => l.p999.unwrap_or(l.p99),
        }
    }
}

/// A latency objective: this quantile of the latency (from each event's intended start) at
/// most this many milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// The quantile.
    pub quantile: Quantile,
    /// Its bound, ms.
    pub ms: f64,
}

impl Slo {
    /// `p99=5ms`, `p99<=5ms`, `p99 <= 5 ms`, `p99.9=20ms`, `p50=800us`, `p95=0.5s`.
    pub fn parse(s: &str) -> Result<Slo> {
        let t: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        let t = t.to_ascii_lowercase();
        let Some((q, bound)) = t
            .split_once("<=")
            .or_else(|| t.split_once('≤'))
            .or_else(|| t.split_once('='))
        else {
            bail!(
                "cannot read the latency objective '{s}': write a quantile and its bound, as \
                 p99=5ms (p50, p95, p99 or p99.9; ms, us or s)"
            );
        };
        let quantile = match q {
            "p50" | "median" => Quantile::P50,
            "p95" => Quantile::P95,
            "p99" => Quantile::P99,
            "p99.9" | "p999" => Quantile::P999,
            _ => bail!(
                "the latency objective '{s}' names the quantile '{q}': dbtax measures p50, p95, \
                 p99 and p99.9"
            ),
        };
        let (num, scale) = if let Some(n) = bound.strip_suffix("ms") {
            (n, 1.0)
        } else if let Some(n) = bound
            .strip_suffix("us")
            .or_else(|| bound.strip_suffix("µs"))
        {
            (n, 0.001)
        } else if let Some(n) = bound.strip_suffix('s') {
            (n, 1000.0)
        } else {
            bail!(
                "the latency objective '{s}' has no unit on its bound: write it as 5ms, 800us or 0.5s"
            )
        };
        let ms = num.parse::<f64>().ok().map(|v| v * scale);
        match ms {
            // A bound past a minute is no latency objective: no trial would measure it.
            Some(ms) if ms.is_finite() && ms > 60_000.0 => bail!(
                "the latency objective '{s}' is past a minute: give a bound a trial can \
                 measure, as p99=5ms (at most 60s)"
            ),
            Some(ms) if ms.is_finite() && ms > 0.0 => Ok(Slo { quantile, ms }),
            _ => bail!("the latency objective '{s}' needs a bound above zero, as p99=5ms"),
        }
    }

    /// `p99 ≤ 5 ms`.
    pub fn label(&self) -> String {
        format!("{} ≤ {} ms", self.quantile.label(), trim(self.ms))
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One trial of the capacity search: a variant at a rate, and what its latency was.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CapacityStep {
    /// The block it ran in (search and measured blocks counted together, from 0).
    pub block: u32,
    /// "calibration" (closed loop, not counted), "search" (bisection, not counted), "measured"
    /// (the interval is taken over these), or "set aside" (a measured block disturbed by other
    /// processes, or with a stalled trial).
    pub phase: String,
    /// Events per second asked.
    pub rate: f64,
    /// The latency percentiles from each event's intended start, ms.
    pub latency_ms: LatencyMs,
    /// The rate held, and whether the server kept up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<TrialRate>,
}

/// A variant's capacity at one objective.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Capacity {
    /// The variant.
    pub variant: String,
    /// The objective, as a label (`p99 ≤ 5 ms`).
    pub slo: String,
    /// The objective's quantile and bound.
    pub objective: Option<Slo>,
    /// Client threads (connections) the rates were sent over.
    pub threads: u32,
    /// The highest rate, events per second, at which the quantile stays within the bound;
    /// None when it was not found (never met, or the latency did not rise).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Its 95% interval; None with fewer than three measured blocks, or no rate.
    #[serde(default)]
    pub ci95: Option<[f64; 2]>,
    /// Its closed-loop throughput at the same threads (the search's upper end), events/s.
    #[serde(default)]
    pub closed_loop: f64,
    /// The lowest and highest of the three rates the measured blocks ran at, around the
    /// capacity.
    #[serde(default)]
    pub bracket: Option<[f64; 2]>,
    /// Measured blocks the interval is taken over.
    #[serde(default)]
    pub blocks: u32,
    /// Every trial of this variant at this objective, in order.
    #[serde(default)]
    pub steps: Vec<CapacityStep>,
    /// Against the baseline: the capacity's change, %, and its 95% interval (None for the
    /// baseline, or without an interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_pct: Option<f64>,
    /// See `cost_pct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_ci95_pct: Option<[f64; 2]>,
    /// The cost's two-sided p-value (no change), before Holm's adjustment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_p: Option<f64>,
    /// The cost's interval excludes zero after Holm's adjustment over every cost reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub significant: Option<bool>,
    /// Why there is no rate or no interval, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_are_read_as_people_write_them() {
        for (text, q, ms) in [
            ("p99=5ms", Quantile::P99, 5.0),
            ("p99 <= 5ms", Quantile::P99, 5.0),
            ("P95 ≤ 800us", Quantile::P95, 0.8),
            ("p99.9=0.02s", Quantile::P999, 20.0),
            ("median=2 ms", Quantile::P50, 2.0),
        ] {
            let s = Slo::parse(text).unwrap();
            assert_eq!((s.quantile, s.ms), (q, ms), "{text}");
        }
        assert_eq!(Slo::parse("p99=5ms").unwrap().label(), "p99 ≤ 5 ms");
        for bad in ["p99", "p98=5ms", "p99=5", "p99=-1ms", "p99=0ms", "p99=fast"] {
            let e = Slo::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains(bad.split('=').next().unwrap()) || e.contains("objective"),
                "{e}"
            );
        }
    }
}
