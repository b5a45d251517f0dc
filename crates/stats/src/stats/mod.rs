//! The estimates over cells of trials: per-cell summaries derived from the trials, paired by
//! block ([`summary`]), carry-over between trials by preceding variant ([`carryover`]) and which
//! terms it has and what correcting costs (`correction`), residual transients
//! (`transient`), interactions of two factors (`interaction`), each statement's cost in a
//! replay ([`fingerprints`]), the capacity at a latency objective ([`capacity`]) and the bill at
//! a rate ([`bill`]). The intervals themselves are `crate::intervals`'.

pub mod bill;
pub mod capacity;
pub mod carryover;
mod cells;
mod correction;
pub mod fingerprints;
mod interaction;
pub mod summary;
mod transient;
