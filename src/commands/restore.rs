//! `dbtax restore`: put back what an interrupted run changed (after a kill -9 or a crash),
//! from the local journal, or from the copy kept on the server when the local one is gone
//! or damaged; never a journal written for another server.

use crate::cli::RestoreArgs;
use crate::config::server_config;
use crate::error::usage;
use crate::feature::journal::{self, Pending};
use crate::server::Server;
use anyhow::Result;

/// `restore --list`: every journal under the state directory, a live run told from an
/// interrupted one, a damaged file named.
fn list() {
    let pending = journal::pending();
    if pending.is_empty() {
        crate::outln!(
            "No pending journals under {}.",
            journal::state_dir().display()
        );
    }
    for p in pending {
        match p {
            Pending::Found(path, j) => {
                let state = if j.writer_alive() {
                    format!("a run in progress (pid {}): it restores by itself", j.pid)
                } else {
                    format!(
                        "interrupted: `dbtax restore --target '{}'` puts it back",
                        j.target
                    )
                };
                crate::outln!(
                    "{}: {} setting(s), {} plugin(s), run started {} by pid {} on {} ({}); {state}",
                    j.target,
                    j.originals.len(),
                    j.installed_plugins.len(),
                    j.started_at,
                    j.pid,
                    if j.host.is_empty() { "?" } else { &j.host },
                    path.display()
                );
            }
            Pending::Damaged(path, why) => crate::outln!(
                "{}: damaged ({why}); `dbtax restore --target URL` uses the copy kept on the \
                 server",
                path.display()
            ),
        }
    }
}

/// Put back what an interrupted run changed.
pub fn run(args: RestoreArgs) -> Result<()> {
    if args.list {
        list();
        return Ok(());
    }
    let config = server_config(&args.target, None)?;
    if config.spec.is_managed() {
        let hint = journal::pending()
            .into_iter()
            .find_map(|p| match p {
                Pending::Found(_, j) => Some(format!(
                    " Pending: `dbtax restore --target '{}'` (with its password).",
                    j.target
                )),
                Pending::Damaged(..) => None,
            })
            .unwrap_or_default();
        return Err(usage(format!(
            "managed servers are thrown away, there is nothing to restore on them: pass the \
             --target of your own server.{hint}"
        )));
    }
    let mut target = Server::open(&config, &[])?;
    crate::feature::recover::restore_interrupted(
        &mut target,
        args.restart_cmd.as_deref(),
        &mut |line| crate::outln!("{line}"),
    )
}
