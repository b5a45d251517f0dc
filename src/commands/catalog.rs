//! What dbtax can measure: `dbtax features` (the catalog, and whether the target supports each
//! feature) and `dbtax presets` (the four seed studies, reproduced).

use crate::cli::FeaturesArgs;
use crate::config::server_config;
use crate::server::{Server, Support, SupportContext, registry};
use anyhow::Result;

/// `dbtax features`: list the catalog, with each feature's support on the target.
pub fn features(args: FeaturesArgs) -> Result<()> {
    if args.offline {
        for engine in registry::all() {
            crate::outln!("{}:", engine.title);
            for n in engine.feature_names {
                if let Some(f) = (engine.feature)(n) {
                    crate::outln!("  {:<22} {}", f.name, f.description);
                }
            }
        }
        return Ok(());
    }
    let server = Server::open(&server_config(&args.target, None)?, &[])?;
    let mut admin = server.admin()?;
    crate::outln!(
        "Features on {} ({}):",
        server.label(),
        server.server_version
    );
    let ctx = SupportContext {
        can_restart: server.is_managed(),
        managed: server.is_managed(),
        local: server.datadir.is_some() && server.host.0.here(),
    };
    for n in server.engine().feature_names {
        let f = server.feature(n)?;
        let (mark, note) = match admin.support(&f, ctx)? {
            Support::Yes(note) if note.is_empty() => ("yes", String::new()),
            Support::Yes(note) => ("yes", format!(" ({note})")),
            Support::No(why) => ("no", format!(" ({why})")),
        };
        crate::outln!("  {:<22} {:<4} {}{}", f.name, mark, f.description, note);
    }
    Ok(())
}

/// `dbtax presets`: list the presets.
pub fn presets() -> Result<()> {
    crate::outln!("Presets (dbtax run --preset NAME [--quick | --full]):");
    for p in crate::config::presets::ALL {
        crate::outln!("  {:<17} {}\n  {:<17} {}", p.name, p.summary, "", p.study);
    }
    Ok(())
}
