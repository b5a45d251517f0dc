//! Experiment files (TOML) and `dbtax run` flags → one validated `Experiment`. Every check on
//! user input happens here, before any server is touched.

use crate::cli::RunArgs;
use crate::config::{parse_bytes, parse_duration, validate_identifier, workload_from};
use crate::error::usage;
use crate::feature::catalog::{self, Feature, Flavor};
use crate::feature::toggle::State;
use crate::workload::Workload;
use anyhow::Result;
use std::collections::BTreeMap;
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
}

/// When to stop adding blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum StopRule {
    /// Exactly this many blocks per thread count.
    Repeats(u32),
    /// Until every CI half-width is ≤ `points`, or `budget` has passed.
    Precision {
        /// Target half-width, percentage points.
        points: f64,
        /// Wall-time budget.
        budget: Duration,
    },
}

/// A validated experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// Name (results directory, report title).
    pub name: String,
    /// `target` from the file, if any (flags override).
    pub target: Option<String>,
    /// What clients do.
    pub workload: Workload,
    /// Thread counts.
    pub threads: Vec<u32>,
    /// Measured time per trial.
    pub trial: Duration,
    /// Settle time after each switch.
    pub warmup: Duration,
    /// How many blocks.
    pub stop: StopRule,
    /// Variants; the first is the baseline.
    pub variants: Vec<VariantSpec>,
    /// Stop before the feature logs grow by more than this.
    pub max_log_bytes: Option<u64>,
    /// Seed for the trial order.
    pub seed: u64,
    /// Trials run this many statements each (mysqlslap style) instead of for `trial`.
    pub queries_per_trial: Option<u64>,
    /// Managed targets: server options for every variant (e.g. the binary log).
    pub managed_server_opts: Vec<String>,
}

/// Blocks run at least this many times in precision mode before the CI is trusted.
pub const MIN_BLOCKS: u32 = 3;
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
            for (l, (_, levels)) in c.iter().zip(factors) {
                let level = &levels[*l];
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

impl Experiment {
    /// Defaults for an experiment built from flags only.
    pub(super) fn defaults() -> Experiment {
        Experiment {
            name: String::new(),
            target: None,
            workload: Workload::default(),
            threads: vec![1, 4, 16, 64],
            trial: Duration::from_secs(3),
            warmup: Duration::from_secs(1),
            stop: StopRule::Repeats(5),
            variants: vec![],
            max_log_bytes: None,
            seed: 0,
            queries_per_trial: None,
            managed_server_opts: vec![],
        }
    }

    /// The experiment of `dbtax run`: the file (if any), then flags over it, validated.
    pub fn from_args(args: &RunArgs) -> Result<Experiment> {
        let mut exp = match (&args.file, &args.preset) {
            (Some(p), _) => Experiment::from_file(p)?,
            (None, Some(name)) => {
                let size = match (args.quick, args.full) {
                    (true, _) => super::presets::Size::Quick,
                    (_, true) => super::presets::Size::Full,
                    _ => super::presets::Size::Normal,
                };
                super::presets::build(name, size)?
            }
            (None, None) => Experiment::defaults(),
        };
        exp.workload = workload_from(&args.workload, exp.workload.clone())?;
        if let Some(t) = &args.threads {
            exp.threads = t.clone();
        }
        if let Some(t) = &args.trial {
            exp.trial = parse_duration("--trial", t)?;
        }
        if let Some(w) = &args.warmup {
            exp.warmup = parse_duration("--warmup", w)?;
        }
        if args.repeats.is_some() || args.precision.is_some() || args.budget.is_some() {
            exp.stop = stop_rule(
                args.repeats,
                args.precision,
                args.budget.as_deref(),
                &exp.stop,
            )?;
        }
        if let Some(m) = &args.max_log_bytes {
            exp.max_log_bytes = Some(parse_bytes("--max-log-bytes", m)?);
        }
        if !args.features.is_empty() {
            exp.variants = variants_for_features(&args.features);
        }
        if exp.name.is_empty() {
            exp.name = default_name(&exp.variants);
        }
        if let Some(s) = args.seed {
            exp.seed = s;
        } else if exp.seed == 0 {
            exp.seed = crate::rng::Rng::from_time(0).next_u64() % 1_000_000;
        }
        exp.validate()?;
        Ok(exp)
    }

    /// Check everything a server does not need to be asked about.
    pub fn validate(&self) -> Result<()> {
        validate_name("experiment name", &self.name)?;
        self.workload.validate()?;
        if self.variants.len() < 2 {
            return Err(usage(
                "nothing to compare: give --feature NAME (compared with off), or an experiment \
                 file with at least two [[variant]] sections (the first is the baseline)",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for v in &self.variants {
            validate_name("variant name", &v.name)?;
            if !seen.insert(v.name.as_str()) {
                return Err(usage(format!("two variants are named '{}'", v.name)));
            }
            for f in &v.features {
                catalog::validate_name(f)?;
            }
            for o in &v.server_opts {
                if !o.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
                    return Err(usage(format!(
                        "bad server option '{o}' in variant '{}': write name=value",
                        v.name
                    )));
                }
            }
            for (k, _) in &v.set {
                validate_identifier(&format!("variable in variant '{}'", v.name), k)?;
            }
        }
        if self.threads.is_empty() || self.threads.contains(&0) {
            return Err(usage(
                "--threads needs one or more thread counts, each at least 1",
            ));
        }
        if self.threads.iter().any(|&t| t > 4096) {
            return Err(usage("--threads: at most 4096 clients"));
        }
        if self.queries_per_trial == Some(0) {
            return Err(usage("queries per trial must be at least 1"));
        }
        if self.trial.is_zero() {
            return Err(usage("--trial must be longer than 0"));
        }
        Ok(())
    }

    /// Blocks per thread count that are planned (precision mode: the minimum).
    pub fn planned_blocks(&self) -> u32 {
        match self.stop {
            StopRule::Repeats(n) => n,
            StopRule::Precision { .. } => MIN_BLOCKS,
        }
    }

    /// The features used, resolved for a server flavor, in variant order, without repeats.
    pub fn features(&self, flavor: Flavor) -> Result<Vec<Feature>> {
        let mut out: Vec<Feature> = vec![];
        for name in self.variants.iter().flat_map(|v| &v.features) {
            let f = catalog::lookup(name, flavor)?;
            if !out.iter().any(|o| o.name == f.name) {
                out.push(f);
            }
        }
        Ok(out)
    }

    /// Restart-only server options of each variant: its own and its features'.
    pub fn server_opts(&self, flavor: Flavor) -> Result<Vec<Vec<String>>> {
        self.variants
            .iter()
            .map(|v| {
                let mut opts = v.server_opts.clone();
                for name in &v.features {
                    let f = catalog::lookup(name, flavor)?;
                    opts.extend(f.restart_opts.iter().map(|o| o.to_string()));
                }
                Ok(opts)
            })
            .collect()
    }

    /// Every variable any variant touches (first-seen order), and each variant's full state:
    /// its own settings, else the "off" settings of every feature in the experiment, else the
    /// server's original value (None).
    pub fn states(&self, flavor: Flavor) -> Result<(Vec<String>, Vec<State>)> {
        let features = self.features(flavor)?;
        let mut touched: Vec<String> = vec![];
        let mut add = |k: &str| {
            if !touched.iter().any(|t| t == k) {
                touched.push(k.to_string());
            }
        };
        let mut own: Vec<Vec<(String, String)>> = vec![];
        for v in &self.variants {
            let mut s: Vec<(String, String)> = vec![];
            for name in &v.features {
                let f = catalog::lookup(name, flavor)?;
                s.extend(f.on.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            }
            s.extend(v.set.iter().cloned());
            own.push(s);
        }
        for f in &features {
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
                        let mine = s.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                        (
                            k.clone(),
                            mine.or_else(|| off.get(k.as_str()).map(|v| v.to_string())),
                        )
                    })
                    .collect()
            })
            .collect();
        Ok((touched, states))
    }
}

pub(super) fn stop_rule(
    repeats: Option<u32>,
    precision: Option<f64>,
    budget: Option<&str>,
    current: &StopRule,
) -> Result<StopRule> {
    match (repeats, precision) {
        (None, None) if budget.is_none() => Ok(current.clone()),
        (Some(_), Some(_)) => Err(usage("give repeats or precision, not both")),
        (Some(n), None) => {
            if n < 2 {
                return Err(usage(
                    "--repeats must be at least 2: one block gives no interval",
                ));
            }
            if budget.is_some() {
                return Err(usage("--budget goes with --precision"));
            }
            Ok(StopRule::Repeats(n))
        }
        (None, p) => {
            let prior_budget = match current {
                StopRule::Precision { budget, .. } => Some(*budget),
                _ => None,
            };
            let points = match (p, current) {
                (Some(p), _) => p,
                (None, StopRule::Precision { points, .. }) => *points,
                (None, StopRule::Repeats(_)) => {
                    return Err(usage("--budget goes with --precision"));
                }
            };
            if !(points.is_finite() && points > 0.0) {
                return Err(usage(
                    "--precision must be a positive number of percentage points",
                ));
            }
            let budget = match budget {
                Some(b) => parse_duration("--budget", b)?,
                None => prior_budget.unwrap_or(Duration::from_secs(600)),
            };
            Ok(StopRule::Precision { points, budget })
        }
    }
}

fn validate_name(what: &str, s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+/=".contains(c));
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "bad {what} '{s}': use letters, digits and - _ . + / = (at most 64)"
        )))
    }
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

fn default_name(variants: &[VariantSpec]) -> String {
    let names: Vec<&str> = variants.iter().skip(1).map(|v| v.name.as_str()).collect();
    if names.is_empty() {
        "experiment".into()
    } else {
        format!("{}-vs-{}", names.join("-"), variants[0].name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
name = "general-log-vs-off"
target = "managed:mariadb"
workload = { kind = "point-select", tables = 4, table_size = 100000 }
threads = [1, 4, 16, 64]
trial = "3s"
warmup = "1s"
repeats = 10
[[variant]]
name = "off"
[[variant]]
name = "general-log"
feature = "general-log"
[[variant]]
name = "flush-2"
set = { innodb_flush_log_at_trx_commit = "2" }
"#;

    #[test]
    fn the_design_example_parses() {
        let e = Experiment::from_toml(EXAMPLE, "x").unwrap();
        e.validate().unwrap();
        assert_eq!(e.name, "general-log-vs-off");
        assert_eq!(e.threads, vec![1, 4, 16, 64]);
        assert_eq!(e.trial, Duration::from_secs(3));
        assert_eq!(e.stop, StopRule::Repeats(10));
        assert_eq!(e.variants.len(), 3);
        assert_eq!(
            e.variants[2].set,
            vec![("innodb_flush_log_at_trx_commit".into(), "2".into())]
        );
    }

    #[test]
    fn states_switch_features_off_in_the_baseline() {
        let e = Experiment::from_toml(EXAMPLE, "x").unwrap();
        let (touched, states) = e.states(Flavor::Mariadb).unwrap();
        assert!(touched.contains(&"general_log".to_string()));
        let get = |s: &State, k: &str| s.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get(&states[0], "general_log").as_deref(), Some("OFF"));
        assert_eq!(get(&states[1], "general_log").as_deref(), Some("ON"));
        assert_eq!(get(&states[0], "innodb_flush_log_at_trx_commit"), None);
        assert_eq!(
            get(&states[2], "innodb_flush_log_at_trx_commit").as_deref(),
            Some("2")
        );
        assert_eq!(get(&states[2], "general_log").as_deref(), Some("OFF"));
        assert_eq!(
            get(&states[0], "log_output"),
            None,
            "log_output stays as found in the baseline"
        );
    }

    #[test]
    fn bad_files_are_usage_errors_that_say_where() {
        let e = Experiment::from_toml("threads = [1, 2", "x").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let e = Experiment::from_toml("thread = [1]", "x").unwrap_err();
        assert!(format!("{e:#}").contains("thread"), "{e:#}");
        let mut e = Experiment::from_toml(EXAMPLE, "x").unwrap();
        e.variants[1].features = vec!["turbo".into()];
        assert!(e.validate().is_err());
        let mut e = Experiment::from_toml(EXAMPLE, "x").unwrap();
        e.threads = vec![0];
        assert!(e.validate().is_err());
        let e = Experiment::from_toml("repeats = 1", "x").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
    }

    #[test]
    fn factors_make_the_product_with_effects_within_each_level() {
        let text = r#"
[[factor]]
name = "audit"
level = [ { name = "no-audit" }, { name = "audit", feature = "audit" } ]
[[factor]]
name = "durability"
level = [
  { name = "d0", set = { sync_binlog = 0 } },
  { name = "d1", set = { sync_binlog = 1 } },
  { name = "d2", set = { sync_binlog = 100 } },
]
"#;
        let e = Experiment::from_toml(text, "x").unwrap();
        e.validate().unwrap();
        let names: Vec<&str> = e.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "no-audit/d0",
                "no-audit/d1",
                "no-audit/d2",
                "audit/d0",
                "audit/d1",
                "audit/d2"
            ]
        );
        let audit_d1 = &e.variants[4];
        assert_eq!(audit_d1.features, vec!["audit".to_string()]);
        assert_eq!(
            audit_d1.baseline, 1,
            "audit's overhead within durability d1"
        );
        assert_eq!(
            audit_d1.effects,
            vec![("audit".to_string(), 1), ("durability".to_string(), 3)]
        );
        assert_eq!(
            e.variants[2].baseline, 0,
            "durability alone: against the all-first baseline"
        );
        assert_eq!(e.variants[0].baseline, 0);
    }
}
