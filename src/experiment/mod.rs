//! The experiment: what it is once validated ([`spec`], built by `config`; it also holds the
//! options of a run, [`spec::RunOptions`]), what is settled before anything changes
//! ([`prepare`]: the plan, its states, the dry run, opening the server, results.json's
//! header), and the run ([`run`]: the real server behind the design's loop, two servers at
//! once, results written after every block). The design itself (orders, blocks, stop rules,
//! set-aside, the loop over anything that can run a trial) is `dbtax_stats::design` and
//! `dbtax_stats::run`, usable without a load.

pub mod prepare;
pub mod run;
pub mod spec;

/// The loop's answers from this program (`dbtax_stats::run::hooks`): Ctrl-C, the fault
/// suite's crash points, the clock, and the failures that cost a trial only (a late reading
/// of the server's host). Every run installs them before its first trial (once).
pub fn install_hooks() {
    dbtax_stats::run::hooks::install(dbtax_stats::run::hooks::Hooks {
        check_interrupt: crate::interrupt::check,
        interrupted: |e| crate::error::exit_code(e) == 130,
        test_point: crate::crash::test_point,
        now: crate::host::now_rfc3339_ms,
        trial_lost: crate::host::probe::reading_lost,
    });
}
