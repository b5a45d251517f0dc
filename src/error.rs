//! The two ways dbtax can fail that change the exit code, and the one failure every layer
//! must tell apart (`ServerLost`). Everything else is an ordinary `anyhow::Error` (exit 1:
//! the run failed).

use thiserror::Error;

/// A failure that is not "the run failed": main maps it to its own exit code.
#[derive(Debug, Error)]
pub enum Failure {
    /// Bad usage or bad input; nothing was changed on any server (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Ctrl-C or SIGTERM (exit 130). What was restored and kept is said by the context the
    /// caller adds, since only the caller knows.
    #[error("interrupted")]
    Interrupted,
}

/// The server stopped answering (its connection is gone), as opposed to refusing a
/// statement: a run restores what it can and says the server went away (the experiment's
/// loop, in the statistics crate, words it).
pub use dbtax_stats::ServerLost;

/// Shorthand for a usage error wrapped in anyhow.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Failure::Usage(msg.into()))
}

/// What to print for an error chain: one paragraph, "Error: ..." or "Interrupted: ...".
pub fn message(err: &anyhow::Error) -> String {
    if exit_code(err) != 130 {
        return format!("Error: {err:#}");
    }
    let said: Vec<String> = err
        .chain()
        .take_while(|c| !matches!(c.downcast_ref::<Failure>(), Some(Failure::Interrupted)))
        .map(|c| c.to_string())
        .collect();
    if said.is_empty() {
        "Interrupted.".into()
    } else {
        format!("Interrupted: {}", said.join(": "))
    }
}

/// Whether the server went away anywhere in this error's chain (its connection is gone), as
/// opposed to refusing a statement: the one answer to "is the server gone?".
pub fn server_gone(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|c| c.downcast_ref::<ServerLost>().is_some())
}

/// The exit code for an error chain: 2 for usage (and a log the reader says is bad input),
/// 130 for interrupt, 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        match cause.downcast_ref::<Failure>() {
            Some(Failure::Usage(_)) => return 2,
            Some(Failure::Interrupted) => return 130,
            None if cause.downcast_ref::<dbtax_logs::BadInput>().is_some() => return 2,
            None => {}
        }
    }
    1
}
