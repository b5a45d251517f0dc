//! dbtax: what does turning on a server feature cost? The library holds the whole pipeline
//! (config → server → workload → load → experiment → stats → report); `main.rs` only wires the CLI to it.

pub mod agent;
pub mod capture;
pub mod cli;
pub mod client;
pub mod commands;
pub mod config;
pub mod crash;
pub mod error;
pub mod experiment;
pub mod feature;
pub mod fsync;
pub mod host;
pub mod interrupt;
pub mod live;
pub mod load;
pub mod out;
pub mod report;
pub mod server;
pub mod units;
pub mod workload;

// The statistics crate's modules, where the rest of dbtax names them.
pub use dbtax_stats::{results, rng, stats};
