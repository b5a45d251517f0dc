//! `dbtax presets`: the four seed studies, reproduced.

use anyhow::Result;

/// List the presets.
pub fn run() -> Result<()> {
    crate::outln!("Presets (dbtax run --preset NAME [--quick | --full]):");
    for p in crate::config::presets::ALL {
        crate::outln!("  {:<17} {}\n  {:<17} {}", p.name, p.summary, "", p.study);
    }
    Ok(())
}
