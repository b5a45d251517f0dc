//! `dbtax demo`: general log, slow log and audit plugin against off, on a throwaway MariaDB.

use crate::cli::DemoArgs;
use crate::experiment::execute::RunOptions;
use crate::server::{ManagedConfig, ManagedKind, ServerConfig, TargetSpec};
use anyhow::Result;

/// Run `dbtax demo`.
pub fn run(args: DemoArgs) -> Result<()> {
    let exp = crate::config::presets::demo(args.quick);
    let config = ServerConfig {
        spec: TargetSpec::Managed(ManagedKind::Mariadb),
        schema: None,
        managed: ManagedConfig {
            server_bin: args.server_bin.clone(),
            ..Default::default()
        },
    };
    let opts = RunOptions {
        out: args.out.clone(),
        ..Default::default()
    };
    super::run::run_and_print(&exp, &config, &opts).map(|_| ())
}
