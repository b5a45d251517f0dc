//! The numbers: block-paired overhead with t intervals (`overhead`), and per-cell summaries
//! derived from the trials (`summary`).

pub mod overhead;
pub mod summary;
