//! The numbers: block-paired overhead with t intervals (`overhead`), a robust companion
//! (`robust`), carry-over between trials (`carryover`), Holm's adjustment over every interval
//! (`holm`), per-cell summaries derived from the trials (`summary`), and B/A of two servers
//! (`ratio`).

pub mod carryover;
pub mod holm;
pub mod overhead;
pub mod ratio;
pub mod robust;
pub mod summary;
