//! An engine's row: each engine (a folder beside this file) describes itself in an
//! `EngineDef`: the `--target` spellings it owns, how it parses its URLs, how it opens or
//! starts a server, its catalog's names, and how its server's CPU is counted. The table of
//! rows is `registry`'s, above the engines; the engines import this shape, never the table.

use super::catalog::Feature;
use super::url::{ParsedUrl, TargetSpec};
use super::{Engine, ManagedConfig};
use crate::workload::WorkloadKind;
use anyhow::Result;

/// What an engine's `open` hands back.
pub struct Opened {
    /// The engine, reaching this server.
    pub engine: Box<dyn Engine>,
    /// The server's version, as results.json records it.
    pub version: String,
    /// The URL's database, if it names one.
    pub database: Option<String>,
}

/// How a server's CPU time is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuScope {
    /// The server is one process (its threads summed).
    Process,
    /// The server is a process tree (a postmaster and the backends it started).
    ProcessTree,
}

/// One engine, as the rest of dbtax sees it before a server answers.
pub struct EngineDef {
    /// Its key in target specs (`mysql`, `postgres`).
    pub name: &'static str,
    /// How `dbtax features` titles its catalog.
    pub title: &'static str,
    /// `--target` spellings of its managed server; the first is the canonical one.
    pub managed: &'static [&'static str],
    /// The URL schemes it owns; the first names a user's server in results (`kind`).
    pub schemes: &'static [&'static str],
    /// URL forms for error messages.
    pub examples: &'static [&'static str],
    /// Parse a URL of its schemes (usage errors that never echo a password).
    pub parse_url: fn(&str) -> Result<ParsedUrl>,
    /// Start (managed) or reach (URL) a server. A refused login is a usage error.
    pub open: fn(&TargetSpec, &ManagedConfig) -> Result<Opened>,
    /// Its catalog's feature names, in order (every flavour of the engine).
    pub feature_names: &'static [&'static str],
    /// A feature as the engine's first flavour has it, before a server answers (validation,
    /// offline listing, managed start options).
    pub feature: fn(&str) -> Option<Feature>,
    /// How its server's CPU is counted.
    pub cpu: CpuScope,
    /// Schemas (databases) that belong to the server itself: dbtax never works in them.
    pub system_schemas: &'static [&'static str],
    /// Its own single-row read benchmark, the demo's workload (sysbench's point select on
    /// the MySQL family, pgbench's select-only on PostgreSQL).
    pub point_select: WorkloadKind,
}

impl EngineDef {
    /// Refuse a schema of the server's own (mysql, pg_catalog...): dbtax creates its tables
    /// and its journal there.
    pub fn check_schema(&self, schema: &str) -> Result<()> {
        if self
            .system_schemas
            .iter()
            .any(|s| s.eq_ignore_ascii_case(schema))
        {
            return Err(crate::error::usage(format!(
                "'{schema}' is the server's own schema: dbtax creates tables (sbtest, \
                 dbtax_journal) in the schema it works in, so give it one of its own with \
                 --schema NAME (the default is dbtax). Nothing was changed"
            )));
        }
        Ok(())
    }

    /// Server options a managed server must start with for these features (the binary log
    /// for binlog-sync, a preloaded library): known before the server runs.
    pub fn managed_start_opts<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut out: Vec<String> = vec![];
        for n in names {
            if let Some(f) = (self.feature)(n)
                && f.requires_on.is_some()
            {
                for o in f.managed_server_opts {
                    if !out.iter().any(|x| x == o) {
                        out.push(o.to_string());
                    }
                }
            }
        }
        out
    }
}

/// A target of one engine, made from its row.
impl TargetSpec {
    /// The managed server of an engine.
    pub fn managed(engine: &EngineDef) -> TargetSpec {
        TargetSpec::of_parts(
            engine.name,
            true,
            engine.managed[0].to_string(),
            engine.managed[0].to_string(),
        )
    }

    /// A URL an engine made itself (a managed server's address for the agents).
    pub fn from_parsed(engine: &EngineDef, parsed: ParsedUrl) -> TargetSpec {
        TargetSpec::of_parts(engine.name, false, parsed.canonical, parsed.shown)
    }
}

impl std::fmt::Debug for EngineDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}
