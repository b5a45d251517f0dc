//! Three verdicts a DBA can act on, after ClickHouse's performance tests: a cost (or a gain),
//! measured; "at most X%" when the interval spans zero (negligible when all of it lies
//! within ± the threshold); and "unstable here" when the run could not have seen a cost a
//! DBA would care about. An interval clear of zero that Holm's adjustment over every figure
//! of the run does not let count is "likely", and the words say why. Decided once, after
//! Holm, on the interval the words quote (the robust one when it is the one told).

use crate::intervals::overhead::{mde_of, robust_to_tell};
use crate::results::{Cell, Overhead, Verdict};

/// The negligible threshold when the user gives none (`--negligible`), percent.
pub const NEGLIGIBLE_PCT: f64 = 2.0;

/// An interval spanning zero from a run whose minimum detectable effect is this large or
/// larger is "unstable here": the run could not have seen a cost of this size, so "at most"
/// its upper end says little.
pub const UNSTABLE_MDE_PCT: f64 = 10.0;

/// The verdict on `o` with the negligible threshold `negligible` (percent).
pub fn of(o: &Overhead, negligible: f64) -> Verdict {
    let told = robust_to_tell(o);
    let (value, [lo, hi]) = match told {
        Some(r) => (r.value, r.ci95),
        None => (o.pct, o.ci95_pct),
    };
    let measured = o.significant || told.is_some();
    let spans_zero = lo <= 0.0 && hi >= 0.0;
    if measured && value >= 0.0 {
        Verdict::Cost
    } else if measured {
        Verdict::Gain
    } else if !spans_zero && o.p_value < 0.05 {
        Verdict::Likely
    } else if lo > -negligible && hi < negligible {
        Verdict::Negligible
    } else if mde_of(o).is_none_or(|m| m >= UNSTABLE_MDE_PCT) {
        Verdict::Unstable
    } else {
        Verdict::AtMost
    }
}

/// Give every overhead of `cells` (each cell's and each factor effect's) its verdict.
pub fn assign(cells: &mut [Cell], negligible: f64) {
    for c in cells {
        let effects = c.effects.iter_mut().filter_map(|e| e.overhead.as_mut());
        for o in c.overhead.iter_mut().chain(effects) {
            o.verdict = Some(of(o, negligible));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(pct: f64, ci: [f64; 2], significant: bool, mde: f64) -> Overhead {
        Overhead {
            pct,
            ci95_pct: ci,
            significant,
            blocks: 10,
            p_value: if significant { 0.001 } else { 0.2 },
            mde_pct: Some(mde),
            ..Overhead::default()
        }
    }

    #[test]
    fn each_interval_gets_the_verdict_its_words_need() {
        assert_eq!(of(&o(8.0, [4.0, 12.0], true, 5.0), 2.0), Verdict::Cost);
        assert_eq!(of(&o(-8.0, [-12.0, -4.0], true, 5.0), 2.0), Verdict::Gain);
        // The demo's "+18.0% [+4.6, +29.6] not significant (Holm)".
        // Clear of zero on its own (p = 0.01), not once adjusted.
        let likely = Overhead {
            p_value: 0.01,
            ..o(18.0, [4.6, 29.6], false, 20.0)
        };
        assert_eq!(of(&likely, 2.0), Verdict::Likely);
        assert_eq!(
            of(&o(0.3, [-1.5, 1.9], false, 2.5), 2.0),
            Verdict::Negligible
        );
        assert_eq!(of(&o(0.3, [-1.5, 1.9], false, 2.5), 1.0), Verdict::AtMost);
        assert_eq!(of(&o(1.0, [-2.8, 4.8], false, 6.0), 2.0), Verdict::AtMost);
        assert_eq!(
            of(&o(11.0, [-20.6, 34.3], false, 38.0), 2.0),
            Verdict::Unstable
        );
        // No spread, no evidence: never a cost, and nothing to detect with.
        let flat = Overhead {
            mde_pct: None,
            p_value: 1.0,
            ..o(20.0, [20.0, 20.0], false, 0.0)
        };
        assert_eq!(of(&flat, 2.0), Verdict::Unstable);
    }
}
