//! A replay's cost per statement: for each fingerprint the cell's trials timed, its medians,
//! and against the baseline the latency the variant added to one such statement (median, 99th
//! percentile and mean, each paired over blocks with a t interval), and its share of all the
//! latency the variant added (mean added × statements, over the fingerprints that added any).

use crate::intervals::paired::by_block;
use crate::intervals::sample::median;
use crate::results::{FingerprintCost, FingerprintDelta, Trial, TrialFingerprint};

fn of<'a>(t: &'a Trial, digest: &str) -> Option<&'a TrialFingerprint> {
    t.fingerprints.iter().find(|f| f.digest == digest)
}

/// The fingerprints of `trials`, with what they cost against `baseline`'s trials (None: the
/// cell is the baseline); the costliest first.
pub fn costs(baseline: Option<&[Trial]>, trials: &[Trial]) -> Vec<FingerprintCost> {
    let mut digests: Vec<(String, String)> = vec![];
    for f in trials.iter().flat_map(|t| &t.fingerprints) {
        match digests.iter_mut().find(|(d, _)| *d == f.digest) {
            Some((_, s)) if s.is_empty() => s.clone_from(&f.sample),
            Some(_) => {}
            None => digests.push((f.digest.clone(), f.sample.clone())),
        }
    }
    let mut out: Vec<(f64, FingerprintCost)> = digests
        .into_iter()
        .map(|(digest, sample)| {
            let med = |g: fn(&TrialFingerprint) -> f64| {
                let xs: Vec<f64> = trials
                    .iter()
                    .filter_map(|t| of(t, &digest))
                    .map(g)
                    .collect();
                median(&xs).unwrap_or(0.0)
            };
            let count = med(|f| f.count as f64);
            let errors = med(|f| f.errors as f64).round() as u64;
            // Rows against the log's: any trial's mismatch counts (the mean per trial, rounded
            // up): a statement that sent other rows once is not replayed as recorded.
            let rows_per_trial = |ts: &[Trial]| {
                let xs: Vec<u64> = ts
                    .iter()
                    .filter_map(|t| of(t, &digest))
                    .map(|f| f.rows_off)
                    .collect();
                xs.iter().sum::<u64>().div_ceil(xs.len().max(1) as u64)
            };
            let rows_off = rows_per_trial(trials);
            let base_rows = baseline.map_or(0, rows_per_trial);
            let base_errors = baseline.map_or(0, |b| {
                let xs: Vec<f64> = b
                    .iter()
                    .filter_map(|t| of(t, &digest))
                    .map(|f| f.errors as f64)
                    .collect();
                median(&xs).unwrap_or(0.0).round() as u64
            });
            let mut why = vec![];
            if errors > 0 || base_errors > 0 {
                why.push(match baseline {
                    Some(_) => format!(
                        "{errors} of its statements failed per trial here, {base_errors} in the \
                         baseline"
                    ),
                    None => format!("{errors} of its statements failed per trial"),
                });
            }
            if rows_off > 0 || base_rows > 0 {
                why.push(match baseline {
                    Some(_) => format!(
                        "{rows_off} of its statements per trial sent other rows than the log \
                         recorded here, {base_rows} in the baseline"
                    ),
                    None => format!(
                        "{rows_off} of its statements per trial sent other rows than the log \
                         recorded"
                    ),
                });
            }
            let diverged = (!why.is_empty()).then(|| match baseline {
                Some(_) => format!(
                    "{}: its added latency is not that statement's cost",
                    why.join("; ")
                ),
                None => why.join("; "),
            });
            let delta = baseline.and_then(|b| {
                let d = |g: fn(&TrialFingerprint) -> f64| {
                    by_block(b, trials, |t| of(t, &digest).map(g))
                };
                Some(FingerprintDelta {
                    p50: d(|f| f.p50_ms)?,
                    p99: d(|f| f.p99_ms)?,
                    mean: d(|f| f.mean_ms)?,
                })
            });
            let weight = match &delta {
                Some(d) => d.mean.value.max(0.0) * count,
                None => med(|f| f.mean_ms) * count,
            };
            let cost = FingerprintCost {
                count: count.round() as u64,
                p50_ms: med(|f| f.p50_ms),
                p99_ms: med(|f| f.p99_ms),
                latency_delta_ms: delta,
                added_share_pct: None,
                errors,
                rows_off,
                diverged,
                digest,
                sample,
            };
            (weight, cost)
        })
        .collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    let added: f64 = out.iter().map(|(w, _)| w).sum();
    out.into_iter()
        .map(|(w, mut c)| {
            if c.latency_delta_ms.is_some() && added > 0.0 {
                c.added_share_pct = Some(100.0 * w / added);
            }
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(block: u32, fps: &[(&str, f64)]) -> Trial {
        Trial {
            block,
            fingerprints: fps
                .iter()
                .map(|(d, ms)| TrialFingerprint {
                    digest: d.to_string(),
                    sample: format!("select {d}"),
                    count: 100,
                    mean_ms: *ms,
                    p50_ms: *ms,
                    p99_ms: 2.0 * ms,
                    errors: 0,
                    rows_off: 0,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_statement_that_pays_most_comes_first_with_its_share() {
        // "b" gains 0.3 ms in every block, "a" 0.1 ms ± noise: b holds 75% of the added time.
        let base: Vec<Trial> = (0..6)
            .map(|i| trial(i, &[("a", 1.0), ("b", 2.0)]))
            .collect();
        let var: Vec<Trial> = (0..6)
            .map(|i| {
                let noise = if i % 2 == 0 { 0.01 } else { -0.01 };
                trial(i, &[("a", 1.1 + noise), ("b", 2.3)])
            })
            .collect();
        let c = costs(Some(&base), &var);
        assert_eq!(c[0].digest, "b");
        assert_eq!(c[0].sample, "select b");
        let d = c[0].latency_delta_ms.as_ref().unwrap();
        assert!((d.p50.value - 0.3).abs() < 1e-9, "{d:?}");
        assert!((c[0].added_share_pct.unwrap() - 75.0).abs() < 0.5, "{c:?}");
        let a = c[1].latency_delta_ms.as_ref().unwrap();
        assert!(a.mean.ci95[0] < 0.1 && 0.1 < a.mean.ci95[1], "{a:?}");
        // The baseline: no delta, ordered by total time.
        let b = costs(None, &base);
        assert_eq!(b[0].digest, "b");
        assert!(b[0].latency_delta_ms.is_none() && b[0].added_share_pct.is_none());
    }

    #[test]
    fn a_fingerprint_whose_statements_failed_is_marked_diverged() {
        // "c" fails 40 times a trial with the feature on (a statement the feature's log makes
        // fail, or rows the replay did not find), never in the baseline.
        let base: Vec<Trial> = (0..4)
            .map(|i| trial(i, &[("a", 1.0), ("c", 1.0)]))
            .collect();
        let var: Vec<Trial> = (0..4)
            .map(|i| {
                let mut t = trial(i, &[("a", 1.1), ("c", 1.0)]);
                t.fingerprints[1].errors = 40;
                t
            })
            .collect();
        let c = costs(Some(&base), &var);
        let failed = c.iter().find(|f| f.digest == "c").unwrap();
        assert_eq!(failed.errors, 40);
        let why = failed.diverged.as_deref().unwrap();
        assert!(why.contains("40 of its statements failed per trial here, 0 in the baseline"));
        assert!(
            c.iter()
                .find(|f| f.digest == "a")
                .unwrap()
                .diverged
                .is_none()
        );
    }

    #[test]
    fn a_fingerprint_that_sent_other_rows_than_the_log_is_marked_diverged() {
        // "d" sent other rows than its log entries in one trial of four, in the baseline:
        // once is enough to say the replay was not the recorded one.
        let base: Vec<Trial> = (0..4)
            .map(|i| {
                let mut t = trial(i, &[("a", 1.0), ("d", 1.0)]);
                if i == 2 {
                    t.fingerprints[1].rows_off = 3;
                }
                t
            })
            .collect();
        let var: Vec<Trial> = (0..4)
            .map(|i| trial(i, &[("a", 1.1), ("d", 1.0)]))
            .collect();
        let c = costs(Some(&base), &var);
        let d = c.iter().find(|f| f.digest == "d").unwrap();
        assert_eq!(d.rows_off, 0);
        let why = d.diverged.as_deref().unwrap();
        assert!(
            why.contains("0 of its statements per trial sent other rows than the log recorded here, 1 in the baseline: its added latency"),
            "{why}"
        );
        assert!(!why.contains("failed"), "{why}");
        let a = c.iter().find(|f| f.digest == "a").unwrap();
        assert!(a.diverged.is_none());
        // The baseline's own cell counts it, rounded up.
        assert_eq!(
            costs(None, &base)
                .iter()
                .find(|f| f.digest == "d")
                .unwrap()
                .rows_off,
            1
        );
    }
}
