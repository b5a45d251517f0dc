//! The experiment: a validated description (`spec`, read from TOML by `file` or built by
//! `presets`), its order of trials (`plan`, shown by `dry_run`), the loop
//! that runs blocks against anything that can run a trial (`runner`), the real server behind
//! that interface (`live`) and the simulated one used to validate the statistics (`sim`).

pub mod command;
pub mod dry_run;
pub mod file;
pub mod live;
pub mod plan;
pub mod presets;
pub mod runner;
pub mod sim;
pub mod spec;
