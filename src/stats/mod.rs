//! The numbers, on Student's t and the median (`sample`): block-paired overhead with t intervals (`overhead`), a robust companion
//! (`robust`), carry-over between trials by preceding variant (`carryover`), interactions of
//! two factors (`interaction`), residual transients (`transient`), Holm's adjustment over
//! every test (`holm`), per-cell summaries derived from the trials (`summary`), and B/A of
//! two servers (`ratio`), and the verdict a DBA can act on (`verdict`).

pub mod bill;
pub mod capacity;
pub mod carryover;
mod cells;
mod correction;
pub mod fingerprints;
pub mod holm;
mod interaction;
pub mod overhead;
pub mod paired;
pub mod ratio;
pub mod robust;
pub mod sample;
pub mod summary;
mod transient;
pub mod verdict;
