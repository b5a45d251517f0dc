//! One module per subcommand, and the only place that sees clap's argument types: each
//! turns its flags into validated values (through `config`), calls the library, and prints.
//! `dispatch` is all main.rs calls.

pub mod bench;
pub mod capture;
pub mod catalog;
pub mod demo;
pub mod docs;
pub mod fsync;
pub mod live;
pub mod progress;
pub mod report;
pub mod restore;
pub mod run;

use crate::cli::{Cli, Command};
use anyhow::Result;

/// Run the parsed command line.
pub fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Bench(args) => bench::run(*args),
        Command::Run(args) => run::run(*args),
        Command::Demo(args) => demo::run(args),
        Command::Features(args) => catalog::features(args),
        Command::Restore(args) => restore::run(args),
        Command::Capture(args) => capture::run(args),
        Command::Live(args) => live::run(*args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => report::compare(args),
        Command::Presets => catalog::presets(),
        Command::Agent(args) => crate::agent::serve::serve_stdio(args.remove_binary),
        Command::Fsync(args) => fsync::run(args),
        Command::Completions(args) => docs::completions(args.shell),
        Command::Man(args) => docs::man(args.command.as_deref(), args.dir.as_deref()),
    }
}
