//! Entry point: parse flags, run, print the error chain as one paragraph, map exit codes
//! (0 ok, 1 the run failed, 2 bad usage or input, 130 interrupted); a panic is a bug, said
//! in one paragraph after the guards it unwound through put the server back (exit 1).

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = dbtax::cli::Cli::parse();
    dbtax::interrupt::install();
    dbtax::crash::install_hook();
    // A panic unwinds through every guard (settings are put back) and is said as a bug.
    match std::panic::catch_unwind(|| dbtax::commands::dispatch(cli)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            dbtax::errln!("{}", dbtax::error::message(&e));
            ExitCode::from(dbtax::error::exit_code(&e))
        }
        Err(_) => {
            dbtax::errln!("Error: {}", dbtax::crash::paragraph());
            ExitCode::from(1)
        }
    }
}
