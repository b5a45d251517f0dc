//! Switching server features safely: `toggle` applies a variant's settings and restores the
//! originals, with a `journal` of original values written before any change. What a feature
//! is lives with the engines (`server::catalog`).

pub mod journal;
pub mod toggle;
