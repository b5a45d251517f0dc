//! Flags, experiment files and presets → validated, flag-free values: an `Experiment` (what to
//! measure) and a `ServerConfig` (where). Every check that can fail on bad input without
//! asking a server happens here and fails with a usage error (exit 2). Nothing below this
//! module sees a clap type.

pub mod bench;
pub mod file;
pub mod presets;
pub mod run;

use crate::cli::{TargetArgs, WorkloadArgs};
use crate::error::usage;
use crate::server::{ManagedConfig, ServerConfig, TargetSpec, validate_identifier};
use crate::workload::{Workload, WorkloadKind, split_sql};
use anyhow::Result;

/// The server to use. The flag wins over `file_target` (an experiment file's), which wins
/// over managed:mariadb.
pub fn server_config(args: &TargetArgs, file_target: Option<&str>) -> Result<ServerConfig> {
    let text = args
        .target
        .as_deref()
        .or(file_target)
        .unwrap_or("managed:mariadb");
    let spec = TargetSpec::parse(text)?;
    for o in &args.server_opts {
        if !o
            .trim_start_matches("--")
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        {
            return Err(usage(format!(
                "bad --server-opt '{o}': write NAME=VALUE or NAME"
            )));
        }
    }
    if !spec.is_managed()
        && (args.server_bin.is_some() || !args.server_opts.is_empty() || args.port.is_some())
    {
        return Err(usage(
            "--server-bin, --server-opt and --port apply to managed targets only",
        ));
    }
    if let Some(s) = &args.schema {
        validate_identifier("--schema", s)?;
    }
    let cpus = match (&args.cpus, args.no_pin) {
        (_, true) => crate::cpus::Choice::Off,
        (Some(c), false) => crate::cpus::parse_choice(c).map_err(|e| usage(format!("{e:#}")))?,
        (None, false) => crate::cpus::Choice::Auto,
    };
    Ok(ServerConfig {
        spec,
        schema: args.schema.clone(),
        managed: ManagedConfig {
            server_bin: args.server_bin.clone(),
            server_opts: args.server_opts.clone(),
            port: args.port,
            cpus: None,
        },
        cpus,
    })
}

/// Apply workload flags over a base workload (from a file, or the default).
pub fn workload_from(args: &WorkloadArgs, mut base: Workload) -> Result<Workload> {
    if let Some(k) = args.workload {
        base.kind = k;
    }
    if let Some(t) = args.tables {
        base.tables = t;
    }
    if let Some(s) = args.table_size {
        base.table_size = s;
    }
    if let Some(s) = args.scale {
        base.scale = s;
    }
    let mut queries = vec![];
    if let Some(q) = &args.query {
        queries.extend(split_sql(q));
    }
    if let Some(f) = &args.query_file {
        let text = std::fs::read_to_string(f)
            .map_err(|e| usage(format!("cannot read --query-file {}: {e}", f.display())))?;
        queries.extend(split_sql(&text));
    }
    if !queries.is_empty() {
        if args.workload.is_some_and(|k| k != WorkloadKind::Query) {
            return Err(usage("--query and --query-file go with --workload query"));
        }
        base.kind = WorkloadKind::Query;
        base.queries = queries;
    }
    if let Some(s) = &args.setup {
        base.setup = split_sql(s);
    }
    base.validate()?;
    Ok(base)
}
