//! The variants' full states: which features an experiment uses, the settings they hold in
//! every variant, the variants that would undo their own feature, and for each variant the
//! value of every variable any variant touches.

use crate::error::usage;
use crate::experiment::spec::Experiment;
use crate::feature::toggle::State;
use crate::server::catalog::Feature;
use crate::server::value::same_value;
use anyhow::Result;
use std::collections::BTreeMap;

/// The features used, looked up once in the server's catalog, in variant order, no repeats.
pub(super) fn features(
    exp: &Experiment,
    lookup: impl Fn(&str) -> Result<Feature>,
) -> Result<Vec<Feature>> {
    let mut out: Vec<Feature> = vec![];
    for name in exp.variants.iter().flat_map(|v| &v.features) {
        let f = lookup(name)?;
        if !out.iter().any(|o| o.name == f.name) {
            out.push(f);
        }
    }
    Ok(out)
}

pub(super) fn feature_named<'a>(features: &'a [Feature], name: &str) -> &'a Feature {
    features
        .iter()
        .find(|f| f.name == name)
        .expect("every feature of the experiment was looked up")
}

/// A setting held at one value in every variant, and the feature that needs it.
pub(super) struct HeldSetting<'f> {
    pub name: String,
    pub value: String,
    pub feature: &'f Feature,
}

/// The settings the features hold in every variant (`Feature::held`), the variants checked
/// first: a variant whose own settings undo its feature, two features that need different
/// values in one experiment, and a variant that changes a setting the run holds would not
/// measure what they say: refused.
pub(super) fn held<'f>(exp: &Experiment, features: &'f [Feature]) -> Result<Vec<HeldSetting<'f>>> {
    for v in &exp.variants {
        for (k, val) in &v.set {
            for name in &v.features {
                let f = feature_named(features, name);
                if let Some((_, want)) = f.on.iter().find(|(n, _)| n == k)
                    && !same_value(want, val)
                {
                    return Err(usage(format!(
                        "variant '{}' switches on feature '{name}' ({k} = {want}) and sets \
                         {k} = {val}, which undoes it: drop one of the two. Nothing was changed",
                        v.name
                    )));
                }
            }
        }
    }

    let mut out: Vec<HeldSetting> = vec![];
    for f in features {
        for (k, v) in f.held {
            match out.iter().find(|h| h.name == *k) {
                Some(h) if !same_value(&h.value, v) => {
                    return Err(usage(format!(
                        "features '{}' and '{}' need {k} = {} and {v}, and a setting that \
                         governs both cannot differ between variants: measure them in separate \
                         runs. Nothing was changed",
                        h.feature.name, f.name, h.value
                    )));
                }
                Some(_) => {}
                None => out.push(HeldSetting {
                    name: k.to_string(),
                    value: v.to_string(),
                    feature: f,
                }),
            }
        }
    }

    for v in &exp.variants {
        for (k, val) in &v.set {
            if let Some(h) = out.iter().find(|h| h.name == *k)
                && !same_value(&h.value, val)
            {
                return Err(usage(format!(
                    "variant '{}' sets {k} = {val}, but feature '{}' holds {k} = {} in every \
                     variant ({}): variants must differ only in their features. Nothing was \
                     changed",
                    v.name, h.feature.name, h.value, h.feature.held_why
                )));
            }
        }
    }
    Ok(out)
}

/// Every variable any variant touches (first-seen order), and each variant's full state:
/// the settings the run holds, then its own settings, else the "off" settings of every
/// feature in the experiment, else the server's original value (None).
pub(super) fn states(
    exp: &Experiment,
    features: &[Feature],
    held: &[HeldSetting],
) -> (Vec<String>, Vec<State>) {
    let mut touched: Vec<String> = vec![];
    let mut add = |k: &str| {
        if !touched.iter().any(|t| t == k) {
            touched.push(k.to_string());
        }
    };
    for h in held {
        add(&h.name);
    }
    let own: Vec<Vec<(String, String)>> = exp
        .variants
        .iter()
        .map(|v| {
            let mut s: Vec<(String, String)> = v
                .features
                .iter()
                .flat_map(|name| feature_named(features, name).on.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            s.extend(v.set.iter().cloned());
            s
        })
        .collect();
    for f in features {
        for (k, _) in f.off.iter().chain(f.on) {
            add(k);
        }
    }
    for s in &own {
        for (k, _) in s {
            add(k);
        }
    }
    let off: BTreeMap<&str, &str> = features
        .iter()
        .flat_map(|f| f.off.iter().copied())
        .collect();
    let states = own
        .iter()
        .map(|s| {
            touched
                .iter()
                .map(|k| {
                    let fixed = held.iter().find(|h| h.name == *k).map(|h| h.value.clone());
                    let mine = s.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                    let value = fixed
                        .or(mine)
                        .or_else(|| off.get(k.as_str()).map(|v| v.to_string()));
                    (k.clone(), value)
                })
                .collect()
        })
        .collect();
    (touched, states)
}

/// The plan's words on each held setting that differs from the server's value now.
pub(super) fn held_notes(held: &[HeldSetting], current: &BTreeMap<String, String>) -> Vec<String> {
    held.iter()
        .filter_map(|h| {
            let now = current.get(&h.name)?;
            (!same_value(now, &h.value)).then(|| {
                format!(
                    "{} = {} throughout the run, in every variant and the baseline too (it is \
                     {now} now): {}, so it is held at one value and the variants differ only \
                     in their features; put back at the end",
                    h.name, h.value, h.feature.held_why
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::spec::{VariantSpec, variants_for_features};

    fn general_log() -> Feature {
        (crate::server::mysql::ENGINE.feature)("general-log").unwrap()
    }

    fn with_set(set: &[(&str, &str)]) -> Experiment {
        let mut e = Experiment::defaults();
        e.variants = variants_for_features(&["general-log".into()]);
        e.variants[1].set = set
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        e
    }

    #[test]
    fn variants_that_would_not_measure_what_they_say_are_refused() {
        let features = [general_log()];
        let err = |e: &Experiment, fs: &[Feature]| held(e, fs).err().unwrap().to_string();

        // Another spelling of the same values is no contradiction.
        let same = with_set(&[("general_log", "1"), ("log_output", "file")]);
        let kept = held(&same, &features).unwrap();
        assert_eq!(
            (kept[0].name.as_str(), kept[0].value.as_str()),
            ("log_output", "FILE")
        );

        let undone = with_set(&[("general_log", "OFF")]);
        assert!(err(&undone, &features).contains("which undoes it"));

        let moved = with_set(&[("log_output", "TABLE")]);
        let e = err(&moved, &features);
        assert!(
            e.contains("holds log_output = FILE in every variant"),
            "{e}"
        );

        let mut other = general_log();
        other.name = "general-log-to-a-table";
        other.held = &[("log_output", "TABLE")];
        let mut two = with_set(&[]);
        two.variants.push(VariantSpec {
            name: "table".into(),
            features: vec![other.name.into()],
            ..Default::default()
        });
        let e = err(&two, &[general_log(), other]);
        assert!(e.contains("cannot differ between variants"), "{e}");
    }
}
