//! One module per subcommand: each turns validated config into calls on the library and
//! prints. `dispatch` is all main.rs calls.

pub mod bench;
pub mod progress;

use crate::cli::{Cli, Command};
use anyhow::Result;

/// Run the parsed command line.
pub fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Run(args) => crate::experiment::command::run(args),
        Command::Demo(args) => crate::experiment::command::demo(args),
        Command::Features(args) => crate::feature::command::features(args),
        Command::Restore(args) => crate::feature::command::restore(args),
    }
}

/// argv with passwords redacted, for results and reports.
pub fn redacted_argv() -> Vec<String> {
    std::env::args()
        .map(|a| crate::target::url::redact_raw(&a))
        .collect()
}
