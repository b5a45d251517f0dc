//! Before anything on the server changes: the experiment resolved against the server
//! ([`preflight`] makes the [`plan::Plan`], with the variants' full states), the run opened
//! ([`open`]: the server reached or started, made ready), what the dry run prints
//! ([`dry_run`]) and results.json's first lines ([`header`]).

pub mod dry_run;
pub mod header;
pub mod open;
pub mod plan;
pub mod preflight;
mod states;
