//! The experiment: a validated description (`spec`, built by `config`), resolved against a
//! server into a `plan` by `preflight` (the variants' full `states`; shown by `dry_run`), its
//! order of trials (`order`), the loop that runs blocks against anything that can run a trial
//! (`runner`, with the stop rules' choices in `stop` and the disturbance rule's in
//! `disturbed`), the real server behind that interface (`live`), the simulated one used to
//! validate the statistics (`sim`), and `execute`, which ties them together for one run:
//! `session` opens and readies the server, `header` and `record` write results.json (`pair`:
//! two servers at once, `sides` saying which variant runs where). `spec` also holds the
//! options of a run (`RunOptions`: where results go, how to restart, the agents), which
//! `config` makes.

pub mod capacity;
pub mod capture;
pub mod disk;
mod disturbed;
pub mod dry_run;
pub mod execute;
pub mod header;
pub mod live;
pub mod open;
pub mod order;
pub mod pair;
pub mod plan;
pub mod preflight;
pub mod record;
pub mod runner;
pub mod sides;
pub mod sim;
pub mod spec;
mod states;
mod stop;
pub mod warnings;
