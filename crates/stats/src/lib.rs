//! The numbers of a benchmark that compares server configurations, and the design that
//! makes them trustworthy, with no database, no I/O and no clock of its own: what dbtax
//! measures is handed in as trials, and what it reports comes out as results.
//!
//! - [`results`]: the results model (results.json): trials, cells, estimates, capacity,
//!   bills, warnings, as one flat serde model.
//! - [`intervals`] and [`stats`]: block-paired intervals with the carry-over from one trial
//!   into the next estimated and taken out, robust companions, Holm's adjustment over every
//!   interval reported, verdicts with their minimum detectable effect, the capacity at a
//!   latency objective, the bill at a rate.
//! - [`design`]: an experiment's design without its load: variants, load points, blocks in
//!   balanced random orders, stop rules (a number of blocks, or a precision goal in two
//!   stages), the rule that sets a disturbed block aside whole.
//! - [`run`]: the loop that drives a design over anything that implements [`run::Bench`]:
//!   a real server's load in dbtax, the simulated server here, a production server's own
//!   traffic switched in windows.
//! - [`live`]: a run on production's own traffic: windows switched in paired, randomized
//!   blocks, and the cost per statement read from the server's counters, honest under a
//!   rate and a mix that drift.
//! - [`sim`]: a simulated server with a known overhead, heavy tails, stalls, drift and
//!   carry-over, against which the intervals' coverage is checked (tests/).
//!
//! ```no_run
//! use dbtax_stats::design::{Design, StopRule, variants_for_features};
//! use dbtax_stats::run::{self, Silent};
//! use dbtax_stats::sim::SimulatedServer;
//!
//! let mut design = Design::defaults();
//! design.variants = variants_for_features(&["general-log".into()]);
//! design.threads = vec![8];
//! design.stop = StopRule::Repeats(10);
//! // A server whose feature costs 10% of throughput, with 5% noise between trials.
//! let mut sim = SimulatedServer::new(1, vec![0.0, 0.10], 0.05, 0.0);
//! let outcome = run::run(&design, &mut sim, &mut Silent)?;
//! let cell = outcome.cells.iter().find(|c| c.variant == "general-log").unwrap();
//! println!("{:?}", cell.overhead.as_ref().map(|o| (o.pct, o.ci95_pct)));
//! # Ok::<(), anyhow::Error>(())
//! ```

/// The server stopped answering (its connection is gone), as opposed to refusing a
/// statement: the loop says which trial it went away at, and a run restores what it can.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ServerLost(pub String);

pub mod design;
pub mod intervals;
pub mod live;
pub mod results;
pub mod rng;
pub mod run;
pub mod sim;
pub mod stats;
