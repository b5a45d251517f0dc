//! The two ways dbtax can fail that change the exit code. Everything else is an ordinary
//! `anyhow::Error` (exit 1: the run failed).

use thiserror::Error;

/// A failure that is not "the run failed": main maps it to its own exit code.
#[derive(Debug, Error)]
pub enum Failure {
    /// Bad usage or bad input; nothing was changed on any server (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Ctrl-C or SIGTERM: settings were restored, partial results written (exit 130).
    #[error("interrupted: settings were restored")]
    Interrupted,
}

/// Shorthand for a usage error wrapped in anyhow.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Failure::Usage(msg.into()))
}

/// The exit code for an error chain: 2 for usage, 130 for interrupt, 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        match cause.downcast_ref::<Failure>() {
            Some(Failure::Usage(_)) => return 2,
            Some(Failure::Interrupted) => return 130,
            None => {}
        }
    }
    1
}
