//! `dbtax run`: an experiment from a file, a preset or flags; `--dry-run` prints its plan;
//! `--compare-target` runs it on a second server at the same time, interleaved block by
//! block, and compares them with a paired B/A interval.

use super::progress::RunDisplay;
use crate::cli::RunArgs;
use crate::config::run::{experiment, run_options};
use crate::config::server_config;
use crate::experiment::prepare::open::dry_run;
use crate::experiment::run::execute::{Executed, execute};
use crate::experiment::run::pair::execute_pair;
use crate::experiment::spec::Experiment;
use crate::experiment::spec::RunOptions;
use crate::server::{ServerConfig, TargetSpec};
use anyhow::Result;

/// Run `dbtax run`.
pub fn run(args: RunArgs) -> Result<()> {
    let exp = experiment(&args)?;
    let opts = run_options(&args, &exp)?;
    let config = server_config(&args.target, exp.target.as_deref())?;
    if args.dry_run {
        crate::out!("{}", dry_run(&exp, &config, opts.restart_cmd.as_deref())?);
        return Ok(());
    }
    let json = args.json;
    let Some(t2) = &args.compare_target else {
        return run_and_print(&exp, &config, &opts, json).map(|_| ());
    };
    let config2 = ServerConfig {
        spec: TargetSpec::parse(t2)?,
        ..config.clone()
    };
    let mut display = RunDisplay::new(json);
    let executed = execute_pair(&exp, [&config, &config2], &opts, &mut display);
    display.finish();
    let [a, b] = executed?;
    let (a, b) = (print_executed(a, json), print_executed(b, json));
    let (a, b) = (a?, b?);
    if json {
        return Ok(());
    }
    crate::outln!(
        "\n{}",
        crate::report::page::compare::render_text(&a.results, &b.results)
    );
    let page = a.dir.join("compare.html");
    crate::report::write_compare(&page, &a.results, &b.results)?;
    crate::outln!("Comparison: {}", page.display());
    Ok(())
}

/// Execute with the live display, print the table (or results.json with `json`), and
/// return what was run; the run's own error (after printing what it measured) comes last.
pub fn run_and_print(
    exp: &Experiment,
    config: &ServerConfig,
    opts: &RunOptions,
    json: bool,
) -> Result<Executed> {
    let mut display = RunDisplay::new(json);
    let executed = execute(exp, config, opts, &mut display);
    display.finish();
    print_executed(executed?, json)
}

/// Print what a run measured (the table, or results.json with `json`) and where it went;
/// then its error, if it stopped early.
fn print_executed(mut executed: Executed, json: bool) -> Result<Executed> {
    let r = &executed.results;
    if json {
        crate::outln!("{}", serde_json::to_string_pretty(r)?);
    } else {
        crate::out!("{}", crate::report::table(r));
        let beside = if executed.reports_written {
            " (report.html, results.csv, charts/ beside it)"
        } else {
            " (no block completed: no report was written)"
        };
        crate::outln!(
            "Results: {}{beside}",
            executed.dir.join("results.json").display()
        );
    }
    let kept = format!(
        "the server's settings were restored; the results so far are in {}",
        executed.dir.display()
    );
    match executed.error.take() {
        // "Interrupted: <kept>"; any other failure says what happened first.
        Some(e) if crate::error::exit_code(&e) == 130 => Err(e.context(kept)),
        Some(e) => Err(anyhow::anyhow!("{e:#}. {}", capitalized(&kept))),
        None => Ok(executed),
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}
