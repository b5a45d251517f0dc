//! `dbtax demo`: general log, slow log and audit against off, on a throwaway server: MariaDB
//! (general log, slow log, server_audit) or PostgreSQL (log_statement, log_min_duration_statement,
//! pgaudit).

use crate::cli::DemoArgs;
use crate::error::usage;
use crate::experiment::spec::RunOptions;
use crate::server::{ManagedConfig, ServerConfig, TargetSpec};
use anyhow::Result;

/// Run `dbtax demo`.
pub fn run(args: DemoArgs) -> Result<()> {
    let spec = TargetSpec::parse(&args.target)?;
    if !spec.is_managed() {
        return Err(usage(format!(
            "the demo runs on a throwaway server: --target managed:mariadb or managed:postgres, \
             not {}. For your own server use `dbtax run --target URL --feature general-log \
             --feature slow-log --feature audit`",
            spec.redacted()
        )));
    }
    let mut exp = crate::config::presets::demo(args.quick, spec.engine().point_select)?;
    if let (Some(b), crate::experiment::spec::StopRule::Precision { budget, .. }) =
        (args.budget, &mut exp.stop)
    {
        *budget = b;
    }
    let config = ServerConfig {
        spec,
        schema: None,
        managed: ManagedConfig {
            server_bin: args.server_bin.clone(),
            ..Default::default()
        },
        cpus: if args.no_pin {
            crate::host::cpus::Choice::Off
        } else {
            crate::host::cpus::Choice::Auto
        },
    };
    let opts = RunOptions {
        out: args.out.clone(),
        ..Default::default()
    };
    super::run::run_and_print(&exp, &config, &opts, false).map(|_| ())
}
