//! The experiment file format (TOML): what a user writes, read into a `Layer` (the settings
//! it gives; `config::merge` lays the flags over it). Unknown fields are errors that name the
//! field, so a typo never silently falls back to a default.

use crate::client::mode::QueryMode;
use crate::error::usage;
use crate::experiment::spec::{Layer, VariantSpec, product};
use crate::workload::{Workload, WorkloadKind};
use anyhow::Result;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FactorFile {
    name: String,
    level: Vec<VariantFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    kind: String,
    tables: Option<u32>,
    table_size: Option<u64>,
    scale: Option<u32>,
    protocol: Option<String>,
    query: Option<StringOrList>,
    setup: Option<StringOrList>,
    /// The replay workload's log, and how it is read.
    log: Option<std::path::PathBuf>,
    log_format: Option<String>,
    log_line_prefix: Option<String>,
    sessions: Option<u32>,
    from: Option<String>,
    to: Option<String>,
    pace: Option<String>,
    replay_writes: Option<bool>,
    max_statements: Option<u64>,
    replay_functions: Option<Vec<String>>,
    replay_user: Option<String>,
}

/// A file's replay: `log = "…"` and the keys that go with it (checked as the flags are).
fn replay_of(w: &WorkloadFile) -> Result<Option<dbtax_logs::replay_spec::ReplaySpec>> {
    use dbtax_logs::replay_spec::{ReplayOptions, ReplaySpec};
    let Some(log) = &w.log else {
        return Ok(None);
    };
    let mut spec = ReplaySpec::of(log);
    spec.apply(&ReplayOptions {
        log_format: w.log_format.as_deref(),
        line_prefix: w.log_line_prefix.as_deref(),
        sessions: w.sessions,
        from: w.from.as_deref(),
        to: w.to.as_deref(),
        pace: w.pace.as_deref(),
        writes: w.replay_writes.unwrap_or(false),
        i_understand_writes: false,
        max_statements: w.max_statements,
        functions: w.replay_functions.as_deref().unwrap_or(&[]),
        user: w.replay_user.as_deref(),
    })?;
    Ok(Some(spec))
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
    #[serde(default)]
    server_opts: Vec<String>,
}

impl VariantFile {
    fn into_spec(self) -> Result<VariantSpec> {
        let set = self
            .set
            .iter()
            .map(|(k, val)| Ok((k.clone(), toml_scalar(k, val)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(VariantSpec {
            name: self.name,
            features: self.feature.into_iter().collect(),
            set,
            server_opts: self.server_opts,
            ..Default::default()
        })
    }
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

/// Read a TOML experiment file into its layer; the file's stem names the experiment when the
/// file does not.
pub fn from_file(path: &Path) -> Result<Layer> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        usage(format!(
            "cannot read experiment file {}: {e}",
            path.display()
        ))
    })?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    layer_of(&text, stem.as_deref().unwrap_or("experiment"))
        .map_err(|e| usage(format!("{}: {e:#}", path.display())))
}

/// TOML text's layer; `default_name` when the file has no `name`. A key that is no setting
/// is an error that names it, so a typo never silently falls back to a default.
pub fn layer_of(text: &str, default_name: &str) -> Result<Layer> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| {
        usage(format!(
            "not a valid experiment file: {}",
            e.to_string().trim()
        ))
    })?;
    let workload = match table.remove("workload") {
        Some(v) => Some(workload_of(file_section::<WorkloadFile>("workload", v)?)?),
        None => None,
    };
    let variants: Vec<VariantFile> = match table.remove("variant") {
        Some(v) => file_section("variant", v)?,
        None => vec![],
    };
    let factors: Vec<FactorFile> = match table.remove("factor") {
        Some(v) => file_section("factor", v)?,
        None => vec![],
    };
    let mut layer = Layer::from_table(&mut table)?;
    if let Some(key) = table.keys().next() {
        return Err(usage(format!(
            "not a valid experiment file: unknown field `{key}`, expected one of workload, \
             variant, factor, {}",
            Layer::KEYS
                .iter()
                .filter(|k| !["workload", "variants"].contains(k))
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    layer.name = layer.name.or_else(|| Some(default_name.to_string()));
    layer.workload = workload;
    layer.variants = variants_of(variants, factors)?;
    Ok(layer)
}

/// A section of the file as its own type: a usage error names it.
fn file_section<T: serde::de::DeserializeOwned>(key: &str, v: toml::Value) -> Result<T> {
    v.try_into().map_err(|e: toml::de::Error| {
        usage(format!(
            "not a valid experiment file: in {key}: {}",
            e.to_string().trim()
        ))
    })
}

/// The `workload = { kind = ... }` table.
fn workload_of(w: WorkloadFile) -> Result<Workload> {
    let mut workload = Workload {
        kind: WorkloadKind::parse(&w.kind)?,
        replay: replay_of(&w)?,
        ..Workload::default()
    };
    if let Some(t) = w.tables {
        workload.tables = t;
    }
    if let Some(s) = w.table_size {
        workload.table_size = s;
    }
    if let Some(s) = w.scale {
        workload.scale = s;
    }
    if let Some(m) = &w.protocol {
        workload.protocol = QueryMode::parse(m).map_err(|e| usage(format!("bad protocol: {e}")))?;
    }
    if let Some(q) = w.query {
        workload.queries = q.statements();
    }
    if let Some(s) = w.setup {
        workload.setup = s.statements();
    }
    Ok(workload)
}

/// `[[variant]]` sections, or `[[factor]]` sections and their product; None: neither.
fn variants_of(
    variants: Vec<VariantFile>,
    factors: Vec<FactorFile>,
) -> Result<Option<Vec<VariantSpec>>> {
    if !variants.is_empty() && !factors.is_empty() {
        return Err(usage("use [[variant]] or [[factor]] sections, not both"));
    }
    if !variants.is_empty() {
        return variants
            .into_iter()
            .map(VariantFile::into_spec)
            .collect::<Result<Vec<_>>>()
            .map(Some);
    }
    if factors.is_empty() {
        return Ok(None);
    }
    let mut levels_of = vec![];
    for fac in factors {
        if fac.level.len() < 2 {
            return Err(usage(format!(
                "factor '{}' needs at least two levels",
                fac.name
            )));
        }
        let levels = fac
            .level
            .into_iter()
            .map(VariantFile::into_spec)
            .collect::<Result<Vec<_>>>()?;
        levels_of.push((fac.name, levels));
    }
    Ok(Some(product(&levels_of)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TOML text as an experiment by itself (over the defaults, not validated).
    fn from_toml(text: &str, default_name: &str) -> Result<crate::experiment::spec::Experiment> {
        super::super::merge::merge(vec![layer_of(text, default_name)?])
    }
    use crate::experiment::spec::{RateLevel, StopRule};
    use std::time::Duration;

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
    fn agents_come_from_the_file_and_a_bad_one_is_bad_input() {
        let text = "agents = [\"ssh://bob@client1:2222*2\", \"local\"]\n\
                    [[variant]]\nname = \"off\"\n[[variant]]\nname = \"on\"\nset = { a = 1 }\n";
        let e = from_toml(text, "x").unwrap();
        let labels: Vec<String> = e.agents.iter().map(|a| a.label()).collect();
        assert_eq!(labels, vec!["ssh://bob@client1:2222", "local"]);
        assert_eq!(e.agents[0].weight, 2);
        let bad = text.replace("local", "ftp://client2");
        let err = from_toml(&bad, "x").and_then(|e| e.validate()).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), 2);
        assert!(format!("{err:#}").contains("ftp://client2"), "{err:#}");
        let counted = text.replace("agents", "queries_per_trial = 100\nagents");
        let err = from_toml(&counted, "x")
            .and_then(|e| e.validate())
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("not available with agents"),
            "{err:#}"
        );
    }

    #[test]
    fn a_rate_or_a_list_of_rates_makes_an_open_loop_experiment() {
        let text = "rate = [\"25%\", 2000]\narrival = \"uniform\"\nskip_late = \"50ms\"\n\
                    [[variant]]\nname = \"off\"\n[[variant]]\nname = \"on\"\nset = { a = 1 }\n";
        let e = from_toml(text, "x").unwrap();
        let o = e.open_loop.clone().unwrap();
        assert_eq!(
            o.levels,
            vec![RateLevel::Capacity(0.25), RateLevel::PerSecond(2000.0)]
        );
        assert_eq!(o.arrival, crate::load::Arrival::Uniform);
        assert_eq!(o.skip_late, Some(Duration::from_millis(50)));
        assert_eq!(e.points().len(), 2 * e.threads.len());
        let one = from_toml("rate = \"50%\"\n[[variant]]\nname = \"a\"\n", "x").unwrap();
        assert_eq!(
            one.open_loop.unwrap().levels,
            vec![RateLevel::Capacity(0.5)]
        );
        assert!(from_toml("arrival = \"uniform\"\n", "x").is_err());
    }

    #[test]
    fn the_design_example_parses() {
        let e = from_toml(EXAMPLE, "x").unwrap();
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
    fn bad_files_are_usage_errors_that_say_where() {
        let e = from_toml("threads = [1, 2", "x").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let e = from_toml("thread = [1]", "x").unwrap_err();
        assert!(format!("{e:#}").contains("thread"), "{e:#}");
        let mut e = from_toml(EXAMPLE, "x").unwrap();
        e.variants[1].features = vec!["turbo".into()];
        assert!(e.validate().is_err());
        let mut e = from_toml(EXAMPLE, "x").unwrap();
        e.threads = vec![0];
        assert!(e.validate().is_err());
        let e = from_toml("repeats = 1", "x").unwrap_err();
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
        let e = from_toml(text, "x").unwrap();
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
