//! The load generator: one OS thread and one connection per client (`worker`), and the
//! coordinator that runs one trial and turns counters into a `Trial` (`trial`).

pub mod schedule;
pub mod summary;
pub mod trial;
pub mod worker;

pub use schedule::{Arrival, Rate};
pub use trial::{CALIBRATION, TrialPlan, TrialProbes, TrialProgress, Watch, run_trial};
