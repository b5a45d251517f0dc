//! `dbtax run` and `dbtax demo`: validate, check the server, print the plan (and stop there
//! with --dry-run), prepare, journal, run, restore, write results.json after every block.

use super::live::{LiveBench, Restarter};
use super::runner::{self, Observer};
use super::spec::{Experiment, StopRule, VariantSpec};
use crate::cli::{DemoArgs, RunArgs, TargetArgs};
use crate::config::target_from;
use crate::error::usage;
use crate::feature::catalog::Flavor;
use crate::feature::toggle::{self, Support, Switcher};
use crate::load::TrialPlan;
use crate::results::{Cell, Results, SCHEMA, ToolInfo, VariantInfo};
use crate::target::Target;
use crate::target::mysql::{global_vars, probe_set_privilege};
use crate::workload::{Workload, WorkloadKind};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How to present a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--out`.
    pub out: Option<PathBuf>,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--json`: results.json on stdout, nothing else there.
    pub json: bool,
    /// `--restart-cmd`.
    pub restart_cmd: Option<String>,
}

/// `dbtax run`.
pub fn run(args: RunArgs) -> Result<()> {
    let exp = Experiment::from_args(&args)?;
    let opts = RunOptions {
        out: args.out.clone(),
        dry_run: args.dry_run,
        json: args.json,
        restart_cmd: args.restart_cmd.clone(),
    };
    let Some(t2) = &args.compare_target else {
        return execute(&exp, &args.target, &opts).map(|_| ());
    };
    // Validate the second target before the first run starts.
    crate::target::TargetSpec::parse(t2)?;
    let first = execute(&exp, &args.target, &opts)?;
    let mut second_args = args.target.clone();
    second_args.target = Some(t2.clone());
    let dir = first_dir(&opts, &exp.name)?;
    let opts2 = RunOptions {
        out: Some(dir.join("compare-target")),
        ..opts.clone()
    };
    let second = execute(&exp, &second_args, &opts2)?;
    println!("\n{}", crate::report::compare::render_text(&first, &second));
    let page = dir.join("compare.html");
    std::fs::write(&page, crate::report::compare::render_html(&first, &second))?;
    println!("Comparison: {}", page.display());
    Ok(())
}

fn first_dir(opts: &RunOptions, name: &str) -> Result<PathBuf> {
    match &opts.out {
        Some(d) => Ok(d.clone()),
        None => latest_dir(name),
    }
}

/// The newest default results directory of an experiment (when --out was not given).
fn latest_dir(name: &str) -> Result<PathBuf> {
    let suffix = format!("-{name}");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("dbtax-results")?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(&suffix))
        })
        .collect();
    dirs.sort();
    dirs.pop().context("finding the results directory")
}

/// `dbtax presets`.
pub fn presets() {
    println!("Presets (dbtax run --preset NAME [--quick | --full]):");
    for p in super::presets::ALL {
        println!("  {:<17} {}\n  {:<17} {}", p.name, p.summary, "", p.study);
    }
}

/// The demo experiment: general log, slow log and audit against off, point selects.
pub fn demo_experiment(quick: bool) -> Experiment {
    let features = ["general-log", "slow-log", "audit"].map(String::from);
    Experiment {
        name: "demo".into(),
        target: None,
        workload: Workload {
            kind: WorkloadKind::PointSelect,
            tables: 4,
            table_size: 100_000,
            ..Default::default()
        },
        threads: if quick {
            vec![1, 16]
        } else {
            vec![1, 4, 16, 64]
        },
        trial: Duration::from_secs(2),
        warmup: Duration::from_millis(500),
        stop: StopRule::Repeats(if quick { 5 } else { 6 }),
        variants: super::spec::variants_for_features(&features),
        max_log_bytes: None,
        seed: crate::rng::Rng::from_time(0).next_u64() % 1_000_000,
        queries_per_trial: None,
        managed_server_opts: vec![],
    }
}

/// `dbtax demo`.
pub fn demo(args: DemoArgs) -> Result<()> {
    let exp = demo_experiment(args.quick);
    let target = TargetArgs {
        target: Some("managed:mariadb".into()),
        schema: None,
        server_bin: args.server_bin.clone(),
        server_opts: vec![],
        port: None,
    };
    let opts = RunOptions {
        out: args.out.clone(),
        ..Default::default()
    };
    execute(&exp, &target, &opts).map(|_| ())
}

/// Run an experiment on the target and return its results (also written to the out dir).
pub fn execute(exp: &Experiment, target_args: &TargetArgs, opts: &RunOptions) -> Result<Results> {
    let (spec, mut managed) = target_from(target_args, exp.target.as_deref())?;
    managed
        .server_opts
        .extend(exp.managed_server_opts.iter().cloned());
    for f in exp.features(Flavor::Mariadb)? {
        if f.requires_on.is_some() {
            managed
                .server_opts
                .extend(f.managed_server_opts.iter().map(|s| s.to_string()));
        }
    }
    let quiet = opts.json;
    let mut target = Target::open(&spec, &managed, target_args.schema.as_deref())?;
    let flavor = toggle::flavor(&target);
    let features = exp.features(flavor)?;
    let (touched, states) = exp.states(flavor)?;
    let server_opts = exp.server_opts(flavor)?;
    let restarter = match (&opts.restart_cmd, target.is_managed()) {
        _ if server_opts.iter().all(Vec::is_empty) => Restarter::None,
        (_, true) => Restarter::Managed,
        (Some(cmd), false) => Restarter::Command(cmd.clone()),
        (None, false) => {
            let v = exp
                .variants
                .iter()
                .zip(&server_opts)
                .find(|(_, o)| !o.is_empty());
            return Err(usage(format!(
                "variant '{}' needs a server restart (server options {:?}), which dbtax does only \
                 on a managed target; give --restart-cmd 'CMD' (a command that restarts {} with \
                 the options in $DBTAX_SERVER_OPTS), or use --target managed:mariadb. Nothing was \
                 changed",
                v.map(|(v, _)| v.name.as_str()).unwrap_or("?"),
                v.map(|(_, o)| o.clone()).unwrap_or_default(),
                target.label()
            )));
        }
    };
    let can_restart = restarter != Restarter::None || target.is_managed();
    let mut admin = target.admin()?;
    let mut notes = vec![];
    for f in &features {
        match toggle::support(&mut admin, &target, f, can_restart)? {
            Support::Yes(note) if !note.is_empty() => notes.push(format!("{}: {note}", f.name)),
            Support::Yes(_) => {}
            Support::No(why) => {
                return Err(usage(format!(
                    "feature '{}' cannot run on {}: {why}. Nothing was changed",
                    f.name,
                    target.label()
                )));
            }
        }
    }
    check_plain_settings(&mut admin, exp, &target)?;
    toggle::ensure_no_pending_journal(&target)?;
    let plugins: Vec<_> = features.iter().filter_map(|f| f.plugin).collect();
    if opts.dry_run {
        print!(
            "{}",
            super::dry_run::plan(
                exp, &target, &mut admin, &touched, &states, &plugins, &notes
            )?
        );
        return Ok(Results::default());
    }
    if !quiet {
        eprintln!(
            "dbtax run '{}' on {} ({}): {} variants × threads {:?}",
            exp.name,
            target.label(),
            target.server_version,
            exp.variants.len(),
            exp.threads
        );
        for n in &notes {
            eprintln!("  note: {n}");
        }
    }
    // A bad --out is bad input: fail on it before anything on the server changes.
    let out_dir = out_dir(opts.out.as_deref(), &exp.name)?;
    let prepared = exp.workload.prepare(&target, quiet)?;
    let started_at = crate::host::now_rfc3339();
    let relevant = relevant_variables(&mut admin, &touched)?;
    let switcher = Switcher::begin(&target, &plugins, &touched, &started_at)?;
    let originals = switcher.originals();
    let log_files = log_files(&mut admin, &target, &features)?;
    let mut target_info = target.info();
    target_info.variables = relevant.into_iter().chain(originals.clone()).collect();
    let mut results = Results {
        schema: SCHEMA.into(),
        name: exp.name.clone(),
        tool: ToolInfo {
            version: env!("CARGO_PKG_VERSION").into(),
        },
        command: crate::commands::redacted_argv(),
        started_at,
        complete: false,
        target: target_info,
        host: crate::host::host_info(),
        workload: exp.workload.to_json(),
        trial_s: exp.trial.as_secs_f64(),
        warmup_s: exp.warmup.as_secs_f64(),
        queries_per_trial: exp.queries_per_trial,
        variants: variant_infos(&exp.variants, &states, &server_opts, &originals),
        cells: vec![],
        warnings: vec![],
    };
    let bar = run_bar(quiet);
    let plan = TrialPlan {
        threads: 1,
        duration: exp.trial,
        warmup: exp.warmup,
        queries: exp.queries_per_trial,
    };
    let mut bench = LiveBench::new(&mut target, &prepared, switcher, states, server_opts, plan)
        .with_restarter(restarter)
        .with_logs(log_files, exp.max_log_bytes)
        .with_bar(bar.clone());
    let mut recorder = Recorder {
        results: &mut results,
        dir: out_dir.clone(),
        bar: bar.clone(),
    };
    recorder.write()?;
    let outcome = runner::run(exp, &mut bench, &mut recorder);
    let restored = bench.finish();
    bar.finish_and_clear();
    let failed = match outcome {
        Ok(o) => {
            results.cells = o.cells;
            results.warnings.extend(o.warnings);
            results.complete = true;
            None
        }
        Err(e) => Some(e),
    };
    results
        .warnings
        .extend(client_cpu_warnings(&results.cells, results.host.cores));
    write_results(&out_dir, &results)?;
    if !results.cells.is_empty() {
        crate::report::write_all(&out_dir, &results)?;
    }
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        print!("{}", crate::report::table::render(&results));
        println!(
            "Results: {} (report.html, results.csv, charts/ beside it)",
            out_dir.join("results.json").display()
        );
    }
    restored.context("restoring the server's settings")?;
    match failed {
        Some(e) => Err(e),
        None => Ok(results),
    }
}

/// Variables set by `set` (not by a catalog feature) must exist and be settable.
fn check_plain_settings(admin: &mut mysql::Conn, exp: &Experiment, target: &Target) -> Result<()> {
    let names: Vec<&str> = exp
        .variants
        .iter()
        .flat_map(|v| v.set.iter().map(|(k, _)| k.as_str()))
        .collect();
    let found = global_vars(admin, &names)?;
    for n in names {
        let Some(v) = found.get(n) else {
            return Err(usage(format!(
                "the server {} has no global variable '{n}'",
                target.label()
            )));
        };
        if let Err(why) = probe_set_privilege(admin, n, v) {
            return Err(usage(format!(
                "{why} (on {}). Nothing was changed",
                target.label()
            )));
        }
    }
    Ok(())
}

/// Server variables worth recording beside the results.
fn relevant_variables(
    admin: &mut mysql::Conn,
    touched: &[String],
) -> Result<BTreeMap<String, String>> {
    let mut names = vec![
        "version",
        "version_comment",
        "innodb_buffer_pool_size",
        "innodb_flush_log_at_trx_commit",
        "innodb_flush_method",
        "sync_binlog",
        "log_bin",
        "log_output",
        "max_connections",
        "thread_handling",
    ];
    names.retain(|n| !touched.iter().any(|t| t == n));
    global_vars(admin, &names)
}

/// Local paths of the files the features write.
fn log_files(
    admin: &mut mysql::Conn,
    target: &Target,
    features: &[crate::feature::catalog::Feature],
) -> Result<Vec<PathBuf>> {
    let vars: Vec<&str> = features
        .iter()
        .flat_map(|f| f.log_file_vars.iter().copied())
        .collect();
    let found = global_vars(admin, &vars)?;
    Ok(vars
        .iter()
        .filter_map(|v| found.get(*v))
        .filter_map(|p| target.local_file(p))
        .collect())
}

fn variant_infos(
    variants: &[VariantSpec],
    states: &[toggle::State],
    server_opts: &[Vec<String>],
    originals: &BTreeMap<String, String>,
) -> Vec<VariantInfo> {
    variants
        .iter()
        .zip(states)
        .zip(server_opts)
        .map(|((v, s), opts)| VariantInfo {
            name: v.name.clone(),
            feature: v.features.first().cloned(),
            baseline: variants[v.baseline].name.clone(),
            server_opts: opts.clone(),
            settings: s
                .iter()
                .map(|(k, val)| {
                    (
                        k.clone(),
                        val.clone()
                            .or_else(|| originals.get(k).cloned())
                            .unwrap_or_default(),
                    )
                })
                .collect(),
        })
        .collect()
}

fn out_dir(explicit: Option<&std::path::Path>, name: &str) -> Result<PathBuf> {
    let dir = match explicit {
        Some(d) => d.to_path_buf(),
        None => {
            let stamp: String = crate::host::now_rfc3339()
                .chars()
                .filter(|c| c.is_ascii_digit())
                .take(14)
                .collect();
            PathBuf::from("dbtax-results").join(format!("{}-{}-{name}", &stamp[..8], &stamp[8..]))
        }
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage(format!("cannot create --out {}: {e}", dir.display())))?;
    Ok(dir)
}

/// Write results.json atomically (a reader never sees half a file).
pub fn write_results(dir: &std::path::Path, results: &Results) -> Result<()> {
    let path = dir.join("results.json");
    let tmp = dir.join("results.json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(results)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

fn run_bar(quiet: bool) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(1)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] [{bar:25}] {pos}/{len} trials, ETA {eta}  {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Keeps results.json current and the bar moving.
struct Recorder<'a> {
    results: &'a mut Results,
    dir: PathBuf,
    bar: ProgressBar,
}

impl Recorder<'_> {
    fn write(&self) -> Result<()> {
        write_results(&self.dir, self.results)
    }
}

impl Observer for Recorder<'_> {
    fn trial_starting(&mut self, index: usize, planned: usize, variant: &str, threads: u32) {
        self.bar.set_length(planned as u64);
        self.bar.set_position(index as u64);
        self.bar
            .set_message(format!("{variant} @ {threads} threads"));
    }

    fn block_done(&mut self, cells: &[Cell]) -> Result<()> {
        self.results.cells = cells.to_vec();
        self.write()
    }
}

/// Warn when the load generator took a large share of the machine (it biases the result).
fn client_cpu_warnings(cells: &[Cell], cores: u32) -> Vec<String> {
    let mut worst: Option<(f64, u32)> = None;
    for c in cells {
        for t in &c.trials {
            let share = t.client_cpu_us_per_query * t.qps / 1e6 / cores.max(1) as f64;
            if worst.is_none_or(|(w, _)| share > w) {
                worst = Some((share, c.threads));
            }
        }
    }
    match worst {
        Some((share, threads)) if share > 0.3 => vec![format!(
            "dbtax's own clients used {:.0}% of this machine's CPU at {threads} threads: the \
             server had that much less; compare variants, not absolute throughput",
            share * 100.0
        )],
        _ => vec![],
    }
}
