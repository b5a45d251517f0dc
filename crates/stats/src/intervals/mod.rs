//! Intervals and verdicts, on Student's t and the median ([`sample`]): block-paired overhead
//! with t intervals ([`overhead`]), a robust companion ([`robust`]), a paired difference of any
//! figure ([`paired`]), B/A of two servers ([`ratio`]), Holm's adjustment over every test
//! ([`holm`]), and the verdict a DBA can act on ([`verdict`]).

pub mod holm;
pub mod overhead;
pub mod paired;
pub mod ratio;
pub mod robust;
pub mod sample;
pub mod verdict;
