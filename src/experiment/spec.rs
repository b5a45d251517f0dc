//! Experiment files (TOML) and `dbtax run` flags → one validated `Experiment`. Every check on
//! user input happens here, before any server is touched.

use crate::cli::RunArgs;
use crate::config::{parse_bytes, parse_duration, validate_identifier, workload_from};
use crate::error::usage;
use crate::feature::catalog::{self, Feature, Flavor};
use crate::feature::toggle::State;
use crate::workload::{Workload, WorkloadKind};
use anyhow::Result;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// One server configuration to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantSpec {
    /// Name shown in tables; the first variant is the baseline.
    pub name: String,
    /// Catalog feature switched on in this variant.
    pub feature: Option<String>,
    /// Extra global variables, applied after the feature's.
    pub set: Vec<(String, String)>,
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
}

/// Blocks run at least this many times in precision mode before the CI is trusted.
pub const MIN_BLOCKS: u32 = 3;
/// Precision mode never runs more blocks than this per thread count.
pub const MAX_BLOCKS: u32 = 200;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExperimentFile {
    name: Option<String>,
    target: Option<String>,
    workload: Option<WorkloadFile>,
    threads: Option<Vec<u32>>,
    trial: Option<String>,
    warmup: Option<String>,
    repeats: Option<u32>,
    precision: Option<f64>,
    budget: Option<String>,
    max_log_bytes: Option<String>,
    seed: Option<u64>,
    #[serde(default)]
    variant: Vec<VariantFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    kind: String,
    tables: Option<u32>,
    table_size: Option<u64>,
    query: Option<StringOrList>,
    setup: Option<StringOrList>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum StringOrList {
    One(String),
    Many(Vec<String>),
}

impl StringOrList {
    fn statements(self) -> Vec<String> {
        match self {
            StringOrList::One(s) => crate::workload::split_sql(&s),
            StringOrList::Many(v) => v
                .iter()
                .flat_map(|s| crate::workload::split_sql(s))
                .collect(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantFile {
    name: String,
    feature: Option<String>,
    #[serde(default)]
    set: BTreeMap<String, toml::Value>,
}

fn toml_scalar(name: &str, v: &toml::Value) -> Result<String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(if *b { "ON" } else { "OFF" }.into()),
        _ => Err(usage(format!(
            "variable '{name}': give a string, number or boolean"
        ))),
    }
}

impl Experiment {
    /// Defaults for an experiment built from flags only.
    fn defaults() -> Experiment {
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
        }
    }

    /// Parse a TOML experiment file.
    pub fn from_file(path: &Path) -> Result<Experiment> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            usage(format!(
                "cannot read experiment file {}: {e}",
                path.display()
            ))
        })?;
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        Self::from_toml(&text, stem.as_deref().unwrap_or("experiment"))
            .map_err(|e| usage(format!("{}: {e:#}", path.display())))
    }

    /// Parse TOML text; `default_name` when the file has no `name`.
    pub fn from_toml(text: &str, default_name: &str) -> Result<Experiment> {
        let f: ExperimentFile = toml::from_str(text).map_err(|e| {
            usage(format!(
                "not a valid experiment file: {}",
                e.to_string().trim()
            ))
        })?;
        let mut exp = Experiment::defaults();
        exp.name = f.name.unwrap_or_else(|| default_name.to_string());
        exp.target = f.target;
        if let Some(w) = f.workload {
            exp.workload.kind = WorkloadKind::parse(&w.kind)?;
            if let Some(t) = w.tables {
                exp.workload.tables = t;
            }
            if let Some(s) = w.table_size {
                exp.workload.table_size = s;
            }
            if let Some(q) = w.query {
                exp.workload.queries = q.statements();
            }
            if let Some(s) = w.setup {
                exp.workload.setup = s.statements();
            }
        }
        if let Some(t) = f.threads {
            exp.threads = t;
        }
        if let Some(t) = f.trial {
            exp.trial = parse_duration("trial", &t)?;
        }
        if let Some(w) = f.warmup {
            exp.warmup = parse_duration("warmup", &w)?;
        }
        exp.stop = stop_rule(f.repeats, f.precision, f.budget.as_deref(), &exp.stop)?;
        if let Some(m) = f.max_log_bytes {
            exp.max_log_bytes = Some(parse_bytes("max_log_bytes", &m)?);
        }
        if let Some(s) = f.seed {
            exp.seed = s;
        }
        for v in f.variant {
            let set = v
                .set
                .iter()
                .map(|(k, val)| Ok((k.clone(), toml_scalar(k, val)?)))
                .collect::<Result<Vec<_>>>()?;
            exp.variants.push(VariantSpec {
                name: v.name,
                feature: v.feature,
                set,
            });
        }
        Ok(exp)
    }

    /// The experiment of `dbtax run`: the file (if any), then flags over it, validated.
    pub fn from_args(args: &RunArgs) -> Result<Experiment> {
        let mut exp = match &args.file {
            Some(p) => Experiment::from_file(p)?,
            None => Experiment::defaults(),
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
            if let Some(f) = &v.feature {
                catalog::validate_name(f)?;
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
        for v in &self.variants {
            if let Some(name) = &v.feature {
                let f = catalog::lookup(name, flavor)?;
                if !out.iter().any(|o| o.name == f.name) {
                    out.push(f);
                }
            }
        }
        Ok(out)
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
            if let Some(name) = &v.feature {
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

fn stop_rule(
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
            .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c));
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "bad {what} '{s}': use letters, digits and - _ . + (at most 64)"
        )))
    }
}

/// "off" plus one variant per feature.
pub fn variants_for_features(features: &[String]) -> Vec<VariantSpec> {
    let mut v = vec![VariantSpec {
        name: "off".into(),
        feature: None,
        set: vec![],
    }];
    for f in features {
        v.push(VariantSpec {
            name: f.clone(),
            feature: Some(f.clone()),
            set: vec![],
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
        e.variants[1].feature = Some("turbo".into());
        assert!(e.validate().is_err());
        let mut e = Experiment::from_toml(EXAMPLE, "x").unwrap();
        e.threads = vec![0];
        assert!(e.validate().is_err());
        let e = Experiment::from_toml("repeats = 1", "x").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
    }
}
