//! The experiment: a validated description (`spec`), its order of trials (`plan`), the loop
//! that runs blocks against anything that can run a trial (`runner`), the real server behind
//! that interface (`live`) and the simulated one used to validate the statistics (`sim`).

pub mod command;
pub mod live;
pub mod plan;
pub mod presets;
pub mod runner;
pub mod sim;
pub mod spec;
