//! `dbtax completions` and `dbtax man`: a shell's completion script and the man page, both
//! made from the command line's own definitions (clap_complete, clap_mangen), so neither can
//! fall behind a flag. `make install` writes them where a Debian user expects them.

use crate::cli::Cli;
use anyhow::{Context, Result};
use clap::CommandFactory;
use std::io::Write;

/// Print `shell`'s completion script.
pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut cmd, "dbtax", &mut out);
    out.flush().context("writing the completion script")
}

/// Print the man page of dbtax, or of one subcommand (`dbtax-run(1)`); with `dir`, write
/// every page there instead (dbtax.1, dbtax-run.1, …: what `make install` does).
pub fn man(command: Option<&str>, dir: Option<&std::path::Path>) -> Result<()> {
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| crate::error::usage(format!("cannot make {}: {e}", dir.display())))?;
        let names = std::iter::once(None).chain(pages().into_iter().map(Some));
        for name in names {
            let file = match &name {
                None => dir.join("dbtax.1"),
                Some(n) => dir.join(format!("dbtax-{n}.1")),
            };
            let mut out = std::fs::File::create(&file).map_err(|e| {
                crate::error::usage(format!("cannot write {}: {e}", file.display()))
            })?;
            render(name.as_deref(), &mut out)?;
        }
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    render(command, &mut out)?;
    out.flush().context("writing the man page")
}

fn render(command: Option<&str>, out: &mut dyn Write) -> Result<()> {
    let cmd = Cli::command();
    let page = match command {
        None => cmd,
        Some(name) => {
            let sub = cmd.find_subcommand(name).cloned().ok_or_else(|| {
                crate::error::usage(format!(
                    "no subcommand '{name}': dbtax man [{}]",
                    pages().join("|")
                ))
            })?;
            // (A page's name is static text to clap: one per page, leaked on purpose.)
            let title: &'static str = Box::leak(format!("dbtax-{name}").into_boxed_str());
            sub.name(title)
        }
    };
    clap_mangen::Man::new(page)
        .render(out)
        .context("writing the man page")
}

/// The subcommands that have a page of their own.
fn pages() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| s.get_name().to_string())
        .collect()
}
