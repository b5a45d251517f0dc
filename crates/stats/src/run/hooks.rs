//! What the loop asks of the program that runs it, set once at its start (`install`): the
//! process's own concerns, which this crate has none of. Unset, the loop runs as the
//! simulated server needs: no interruption, no fault points, no clock.

use std::sync::OnceLock;

/// The program's answers.
#[derive(Clone, Copy)]
pub struct Hooks {
    /// Err when the user asked to stop (Ctrl-C): checked before every trial.
    pub check_interrupt: fn() -> anyhow::Result<()>,
    /// Whether an error is that interruption (passed through untouched).
    pub interrupted: fn(&anyhow::Error) -> bool,
    /// A fault-injection point before trial `index` (a test suite's).
    pub test_point: fn(usize),
    /// The time now, as results record a trial's start.
    pub now: fn() -> String,
    /// The words of a failure that costs its trial only (a late reading of the server's
    /// host), None for any other failure.
    pub trial_lost: fn(&anyhow::Error) -> Option<String>,
}

static HOOKS: OnceLock<Hooks> = OnceLock::new();

/// Set the program's answers (the first call wins).
pub fn install(hooks: Hooks) {
    let _ = HOOKS.set(hooks);
}

/// A failure that costs its trial and not the run: the block is set aside and run again.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TrialLost(pub String);

/// The program's answers, or the simulated server's.
pub(crate) fn get() -> Hooks {
    HOOKS.get().copied().unwrap_or(Hooks {
        check_interrupt: || Ok(()),
        interrupted: |_| false,
        test_point: |_| {},
        now: String::new,
        trial_lost: |e| {
            e.chain()
                .find_map(|c| c.downcast_ref::<TrialLost>())
                .map(|t| t.0.clone())
        },
    })
}
