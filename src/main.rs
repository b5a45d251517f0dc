//! Entry point: parse flags, run, print the error chain as one paragraph, map exit codes
//! (0 ok, 1 the run failed, 2 bad usage or input, 130 interrupted).

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = dbtax::cli::Cli::parse();
    dbtax::interrupt::install();
    match dbtax::commands::dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            dbtax::errln!("{}", dbtax::error::message(&e));
            ExitCode::from(dbtax::error::exit_code(&e))
        }
    }
}
