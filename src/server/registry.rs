//! The table of engines, above them: every engine dbtax knows, looked up by name, URL scheme
//! or managed spelling, and what needs the whole table (a `--target` parsed to the engine that
//! owns it, a feature name checked against every catalog before a server answers).
//! Everything outside the engine folders asks this table; nothing else matches on an engine.

use super::catalog;
use super::engines::EngineDef;
use super::url::{TargetSpec, redact_raw};
use crate::error::usage;
use anyhow::Result;

/// Every engine dbtax knows. A new engine is one folder and one row here.
static ENGINES: [&EngineDef; 2] = [&super::mysql::ENGINE, &super::postgres::ENGINE];

/// Every engine, in the order listings show them.
pub fn all() -> &'static [&'static EngineDef] {
    &ENGINES
}

/// The engine of this name.
pub fn named(name: &str) -> Option<&'static EngineDef> {
    ENGINES.iter().copied().find(|e| e.name == name)
}

/// The engine that owns a URL scheme.
pub fn for_scheme(scheme: &str) -> Option<&'static EngineDef> {
    ENGINES
        .iter()
        .copied()
        .find(|e| e.schemes.contains(&scheme))
}

/// The engine whose managed server this spelling names.
pub fn for_managed(kind: &str) -> Option<&'static EngineDef> {
    ENGINES.iter().copied().find(|e| e.managed.contains(&kind))
}

impl TargetSpec {
    /// Parse a `--target` value: a managed kind, or a URL of an engine's scheme.
    pub fn parse(s: &str) -> Result<TargetSpec> {
        if s == "managed" || s.starts_with("managed:") {
            let engine = for_managed(s).ok_or_else(|| {
                let all: Vec<&str> = all().iter().map(|e| e.managed[0]).collect();
                usage(format!(
                    "unknown managed target '{s}': dbtax can start {}",
                    all.iter()
                        .map(|k| format!("'{k}'"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ))
            })?;
            return Ok(TargetSpec::managed(engine));
        }
        let bad = |why: &str| {
            let mut kinds: Vec<&str> = all().iter().map(|e| e.managed[0]).collect();
            kinds.extend(all().iter().flat_map(|e| e.examples.iter().copied()));
            usage(format!(
                "bad --target '{}': {why}. Expected {}",
                redact_raw(s),
                kinds.join(", ")
            ))
        };
        let scheme = s
            .split_once("://")
            .map(|(scheme, _)| scheme)
            .ok_or_else(|| bad("not a URL"))?;
        let engine =
            for_scheme(scheme).ok_or_else(|| bad(&format!("unknown scheme '{scheme}'")))?;
        let parsed = (engine.parse_url)(s).map_err(|e| bad(&format!("{e:#}")))?;
        Ok(TargetSpec::from_parsed(engine, parsed))
    }

    /// The engine that owns this target.
    pub fn engine(&self) -> &'static EngineDef {
        named(self.engine_name()).expect("a target names a known engine")
    }
}

/// Check a name before the server is known: it must be in some engine's catalog.
pub fn validate_feature_name(name: &str) -> Result<()> {
    if all().iter().any(|e| (e.feature)(name).is_some()) {
        return Ok(());
    }
    let mut names: Vec<&str> = vec![];
    for e in all() {
        for n in e.feature_names {
            if !names.contains(n) {
                names.push(n);
            }
        }
    }
    Err(catalog::unknown(name, &names))
}
