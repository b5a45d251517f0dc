//! `dbtax presets`: the four seed studies, reproduced.

use anyhow::Result;

/// List the presets.
pub fn run() -> Result<()> {
    println!("Presets (dbtax run --preset NAME [--quick | --full]):");
    for p in crate::config::presets::ALL {
        println!("  {:<17} {}\n  {:<17} {}", p.name, p.summary, "", p.study);
    }
    Ok(())
}
