//! One module per subcommand: each turns validated config into calls on the library and
//! prints. `dispatch` is all main.rs calls.

pub mod bench;
pub mod progress;
pub mod report;

use crate::cli::{Cli, Command};
use anyhow::Result;

/// Run the parsed command line.
pub fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Run(args) => crate::experiment::command::run(*args),
        Command::Demo(args) => crate::experiment::command::demo(args),
        Command::Features(args) => crate::feature::command::features(args),
        Command::Restore(args) => crate::feature::command::restore(args),
        Command::Report(args) => report::report(args),
        Command::Presets => {
            crate::experiment::command::presets();
            Ok(())
        }
        Command::Fsync(args) => fsync(args),
        Command::Compare(args) => report::compare(args),
    }
}

/// `dbtax fsync`.
fn fsync(args: crate::cli::FsyncArgs) -> Result<()> {
    let duration = crate::config::parse_duration("--duration", &args.duration)?;
    if args.threads.is_empty() || args.threads.contains(&0) {
        return Err(crate::error::usage(
            "--threads: one or more counts, each at least 1",
        ));
    }
    let bar = progress::trial_bar(args.json);
    let report = crate::fsync::probe(&args.dir, &args.threads, duration, &mut |step| {
        bar.set_message(step.to_string())
    });
    bar.finish_and_clear();
    let report = report?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", crate::fsync::render(&report));
    }
    Ok(())
}

/// argv with passwords redacted, for results and reports.
pub fn redacted_argv() -> Vec<String> {
    std::env::args()
        .map(|a| crate::target::url::redact_raw(&a))
        .collect()
}
