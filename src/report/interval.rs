//! One value with its 95% interval, printed one way everywhere (after latte's `Quantity`): the
//! table, the words, the HTML, compare and the progress lines all format intervals through it.

use crate::results::{Estimate, Overhead, Verdict};

/// An overhead's verdict: the one results.json holds, or for results written before
/// verdicts the same rule at the default threshold.
pub fn verdict_of(o: &Overhead) -> Verdict {
    o.verdict.unwrap_or_else(|| {
        dbtax_stats::intervals::verdict::of(o, dbtax_stats::intervals::verdict::NEGLIGIBLE_PCT)
    })
}
use std::fmt;

/// A point estimate and its 95% interval, with how to print them.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// Point estimate.
    pub value: f64,
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    unit: &'static str,
    signed: bool,
    decimals: usize,
    /// Printed after the interval when it is no measured cost or gain: the verdict's word
    /// (None: measured, or the caller words the verdict itself).
    noise: Option<String>,
}

impl Interval {
    /// A throughput overhead: "+12.3% [+4.1, +20.0]" when it is measured, else followed by
    /// its verdict's words: " at most 4.8%", " negligible", " unstable here", or " likely,
    /// not counted" (clear of zero, but not once adjusted for every figure of the run).
    pub fn overhead(o: &Overhead) -> Interval {
        Interval {
            value: o.pct,
            lo: o.ci95_pct[0],
            hi: o.ci95_pct[1],
            unit: "%",
            signed: true,
            decimals: 1,
            noise: match verdict_of(o) {
                Verdict::Cost | Verdict::Gain => None,
                Verdict::Likely => Some(" likely, not counted".into()),
                Verdict::Negligible => Some(" negligible".into()),
                Verdict::AtMost => Some(format!(" at most {:.1}%", o.ci95_pct[1].max(0.0))),
                Verdict::Unstable => Some(" unstable here".into()),
            },
        }
    }

    /// A difference in some unit (µs of server CPU per query): "+1.2 [+0.5, +2.0]".
    pub fn estimate(e: &Estimate) -> Interval {
        Interval {
            value: e.value,
            lo: e.ci95[0],
            hi: e.ci95[1],
            unit: "",
            signed: true,
            decimals: 1,
            noise: None,
        }
    }

    /// Any figure in `unit` (" µs", "%", " B": a live run's estimates) with `decimals`.
    pub fn of(value: f64, (lo, hi): (f64, f64), unit: &'static str, decimals: usize) -> Interval {
        Interval {
            value,
            lo,
            hi,
            unit,
            signed: true,
            decimals,
            noise: None,
        }
    }

    /// With this many decimals (latency deltas in ms need three).
    pub fn decimals(mut self, n: usize) -> Interval {
        self.decimals = n;
        self
    }

    /// Whether the interval spans 0.
    pub fn spans_zero(&self) -> bool {
        self.lo <= 0.0 && self.hi >= 0.0
    }

    /// Without "+" signs, for sentences: "12.3% [4.1, 20.0]".
    pub fn unsigned(mut self) -> Interval {
        self.signed = false;
        self
    }

    /// Without the noise label (the sentence around it says so).
    pub fn plain(mut self) -> Interval {
        self.noise = None;
        self
    }

    /// Another label for what is not measured (compare's narrow columns say "(noise)").
    pub fn noise_label(mut self, label: &'static str) -> Interval {
        if self.noise.is_some() {
            self.noise = Some(label.into());
        }
        self
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (v, lo, hi, u, d) = (self.value, self.lo, self.hi, self.unit, self.decimals);
        if self.signed {
            write!(f, "{v:+.d$}{u} [{lo:+.d$}, {hi:+.d$}]")?;
        } else {
            write!(f, "{v:.d$}{u} [{lo:.d$}, {hi:.d$}]")?;
        }
        f.write_str(self.noise.as_deref().unwrap_or(""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_print_one_way() {
        let o = Overhead {
            pct: 12.34,
            ci95_pct: [-1.0, 25.0],
            significant: false,
            blocks: 5,
            ..Default::default()
        };
        assert_eq!(
            Interval::overhead(&o).to_string(),
            "+12.3% [-1.0, +25.0] unstable here",
            "no minimum detectable effect: nothing this run could tell"
        );
        let o = Overhead {
            mde_pct: Some(6.0),
            ..o
        };
        assert_eq!(
            Interval::overhead(&o).to_string(),
            "+12.3% [-1.0, +25.0] at most 25.0%"
        );
        assert_eq!(
            Interval::overhead(&o).unsigned().plain().to_string(),
            "12.3% [-1.0, 25.0]"
        );
        assert_eq!(
            Interval::overhead(&o).noise_label(" (noise)").to_string(),
            "+12.3% [-1.0, +25.0] (noise)"
        );
        let e = Estimate {
            value: 1.25,
            ci95: [0.5, 2.0],
        };
        assert_eq!(Interval::estimate(&e).to_string(), "+1.2 [+0.5, +2.0]");
        assert_eq!(
            Interval::estimate(&e).decimals(3).to_string(),
            "+1.250 [+0.500, +2.000]"
        );
    }
}
