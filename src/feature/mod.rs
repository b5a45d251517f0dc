//! Switching server features safely: [`toggle`] applies a variant's settings and restores the
//! originals, with a [`journal`] of original values written before any change; [`pending`] deals
//! with a journal left by a run that did not finish, and [`recover`] is `dbtax restore`'s work. What a feature is lives with the engines
//! (`server::catalog`).

pub mod journal;
pub mod pending;
pub mod recover;
pub mod toggle;
