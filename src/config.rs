//! Flags and TOML → validated values. Every check that can fail on bad input happens here,
//! before any server is touched, and fails with a usage error (exit 2).

use crate::cli::{TargetArgs, WorkloadArgs};
use crate::error::usage;
use crate::target::TargetSpec;
use crate::target::managed::ManagedConfig;
use crate::workload::{Workload, WorkloadKind, split_sql};
use anyhow::Result;
use std::time::Duration;

/// "500ms" → ("500", "ms"); a bare number has an empty unit.
fn split_unit(s: &str) -> (&str, &str) {
    let t = s.trim();
    match t.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    }
}

/// Parse "10s", "500ms", "2m", "1h", "1.5s" or a bare number of seconds.
pub fn parse_duration(what: &str, s: &str) -> Result<Duration> {
    let (num, unit) = split_unit(s);
    let factor = match unit.trim() {
        "ms" => 0.001,
        "" | "s" | "sec" | "secs" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    let value: f64 = num.parse().unwrap_or(f64::NAN);
    let secs = value * factor;
    if !secs.is_finite() || secs < 0.0 {
        return Err(usage(format!(
            "bad {what} '{s}': write a duration such as 500ms, 10s, 2m or 1h"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parse a byte size: "500M", "2G", "1024", "10k".
pub fn parse_bytes(what: &str, s: &str) -> Result<u64> {
    let (num, unit) = split_unit(s);
    let factor: f64 = match unit.trim().to_ascii_uppercase().trim_end_matches('B') {
        "" => 1.0,
        "K" | "KI" => 1024.0,
        "M" | "MI" => 1024.0 * 1024.0,
        "G" | "GI" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TI" => 1024f64.powi(4),
        _ => f64::NAN,
    };
    let v = num.parse::<f64>().unwrap_or(f64::NAN) * factor;
    if !v.is_finite() || v < 0.0 {
        return Err(usage(format!(
            "bad {what} '{s}': write a size such as 500M or 2G"
        )));
    }
    Ok(v as u64)
}

/// The target, and how to start it when managed.
/// The flag wins over `file_target` (an experiment file's), which wins over managed:mariadb.
pub fn target_from(
    args: &TargetArgs,
    file_target: Option<&str>,
) -> Result<(TargetSpec, ManagedConfig)> {
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
    if !matches!(spec, TargetSpec::Managed(_))
        && (args.server_bin.is_some() || !args.server_opts.is_empty() || args.port.is_some())
    {
        return Err(usage(
            "--server-bin, --server-opt and --port apply to managed targets only",
        ));
    }
    if let Some(s) = &args.schema {
        validate_identifier("--schema", s)?;
    }
    Ok((
        spec,
        ManagedConfig {
            server_bin: args.server_bin.clone(),
            server_opts: args.server_opts.clone(),
            port: args.port,
        },
    ))
}

/// Reject identifiers that would need quoting tricks.
pub fn validate_identifier(what: &str, s: &str) -> Result<()> {
    if s.is_empty() || s.len() > 64 || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(usage(format!(
            "bad {what} '{s}': use letters, digits and '_' (at most 64)"
        )));
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_all_units() {
        assert_eq!(parse_duration("d", "10s").unwrap(), Duration::from_secs(10));
        assert_eq!(
            parse_duration("d", "500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(parse_duration("d", "2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("d", "3").unwrap(), Duration::from_secs(3));
        assert_eq!(
            parse_duration("d", "1.5s").unwrap(),
            Duration::from_millis(1500)
        );
        for bad in ["", "ten", "5 parsecs", "-1s", "s"] {
            let e = parse_duration("--duration", bad).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
        }
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("x", "2G").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("x", "500M").unwrap(), 500 << 20);
        assert_eq!(parse_bytes("x", "10").unwrap(), 10);
        assert!(parse_bytes("x", "lots").is_err());
    }
}
