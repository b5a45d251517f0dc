//! Experiment + server → Plan, changing nothing. Every check that can be made without
//! changing the server is made here, so that bad input fails with exit 2 before the first
//! change: unknown or unsupported features, missing privileges, unknown variables, a
//! restart-only setting with no way to restart, a pending journal, a workload statement the
//! server refuses.

use crate::error::usage;
use crate::experiment::prepare::plan::{LogFiles, Plan, PlannedVariant, Restarter, Statements};
use crate::experiment::prepare::states::{feature_named, features, held, held_notes, states};
use crate::experiment::spec::Experiment;
use crate::feature::pending::ensure_no_pending_journal;
use crate::feature::toggle::{State, Switches};
use crate::server::catalog::{Feature, Plugin};
use crate::server::value::same_value;
use crate::server::{Admin, Server, Support, SupportContext};
use anyhow::Result;
use std::collections::BTreeMap;

/// What a replay's three locks hold against, and what they do not: said in every replay's
/// dry run.
const REPLAY_LOCKS: &str = "replay: its three locks (statements that may change anything \
    left out, read-only sessions, a login that may only read) hold against what a replayed \
    statement does itself; they do not cover code that runs with other rights (views, \
    functions and policies running as their definer or owner: those whose code does more \
    than read are found before the run and the statements that reach them left out), nor \
    what the server does on its own behalf (statistics, caches, its logs)";

/// Resolve `exp` for `server`. `restart_cmd`: the user's way to restart their server.
pub fn preflight(exp: &Experiment, server: &Server, restart_cmd: Option<&str>) -> Result<Plan> {
    let features = features(exp, |name| server.feature(name))?;
    let held = held(exp, &features)?;
    let (mut touched, states) = states(exp, &features, &held);

    let mut admin = server.admin()?;
    let restart = restart_only(admin.as_mut(), &states)?;
    let mut variants = planned_variants(exp, &features, states, &restart);
    touched.retain(|k| !restart.iter().any(|(n, _, _)| n == k));

    let restarter = restarter(&variants, server, restart_cmd)?;
    let ctx = SupportContext {
        can_restart: restarter != Restarter::None || server.is_managed(),
        managed: server.is_managed(),
        // The plugin library is looked for on this machine's disk.
        local: server.datadir.is_some() && server.host.0.here(),
    };
    // dbtax reads the server's host: here, or through the probe there (--server-host).
    let reachable = server.datadir.is_some();
    let mut notes = support_notes(admin.as_mut(), &features, ctx, server)?;

    check_plain_settings(admin.as_mut(), exp, server)?;
    let refused = connection_shortfall(admin.as_mut(), exp, server)?;
    ensure_no_pending_journal(server)?;
    server.check_statements(&exp.workload)?;
    if exp.workload.replay.is_some() {
        if let Some(reached) = server.replay_reach(&exp.workload)? {
            notes.push(format!("replay: {}", reached.words()));
        }
        notes.push(REPLAY_LOCKS.into());
    }

    let names: Vec<&str> = touched.iter().map(String::as_str).collect();
    let current = admin.global_vars(&names)?;
    notes.extend(held_notes(&held, &current));
    notes.extend(design_notes(exp, server));

    let log_file_vars: Vec<&'static str> = features
        .iter()
        .flat_map(|f| f.log_file_vars.iter().copied())
        .collect();
    let unguarded_logs = !reachable && unwatched_logs(exp, &features, server, &mut notes)?;
    if !server.host.0.here() {
        notes.push(format!(
            "the server's host is read through the probe on {}: server CPU per query, log \
             bytes per query, the disk guard and the other processes' CPU come from there",
            server.host.0.label()
        ));
    }
    let log_files = LogFiles::resolve(admin.as_mut(), server, log_file_vars)?;
    notes.extend(unreadable_logs(&log_files));

    let (plugins, switched_plugins) = plugins(admin.as_mut(), &features, &mut notes)?;
    let plugin_vars = with_plugins(&mut variants, &features, &switched_plugins);

    let persisted = admin.persisted(&names)?;
    let statements = statements(
        admin.as_ref(),
        &variants,
        &touched,
        (&current, persisted.as_ref()),
        (&plugins, &switched_plugins, &plugin_vars),
    );
    Ok(Plan {
        variants,
        statements,
        relevant: relevant_variables(admin.as_mut(), &touched)?,
        switches: Switches {
            touched,
            plugins,
            switched_plugins,
            plugin_vars,
        },
        current,
        log_files,
        restarter,
        notes,
        cpus: Default::default(),
        unguarded_logs,
        refused,
    })
}

/// Each variant as planned: its settings (those that need a restart moved to its server's
/// options) and its features' restart options.
fn planned_variants(
    exp: &Experiment,
    features: &[Feature],
    states: Vec<State>,
    restart: &[(String, String, String)],
) -> Vec<PlannedVariant> {
    exp.variants
        .iter()
        .zip(states)
        .map(|(v, state)| {
            let mut server_opts = v.server_opts.clone();
            for name in &v.features {
                server_opts.extend(
                    feature_named(features, name)
                        .restart_opts
                        .iter()
                        .map(|o| o.to_string()),
                );
            }
            let (state, opts) = split_restart_only(state, restart);
            server_opts.extend(opts);
            PlannedVariant {
                name: v.name.clone(),
                features: v.features.clone(),
                state,
                server_opts,
                plugins: vec![],
                baseline: v.baseline,
                effects: v.effects.clone(),
            }
        })
        .collect()
}

/// Whether the server supports each feature: the notes of those it supports with a remark;
/// Err (nothing changed) at the first it does not.
fn support_notes(
    admin: &mut dyn Admin,
    features: &[Feature],
    ctx: SupportContext,
    server: &Server,
) -> Result<Vec<String>> {
    let mut notes = vec![];
    for f in features {
        match admin.support(f, ctx)? {
            Support::Yes(note) if !note.is_empty() => notes.push(format!("{}: {note}", f.name)),
            Support::Yes(_) => {}
            Support::No(why) => {
                return Err(usage(format!(
                    "feature '{}' cannot run on {}: {why}. Nothing was changed",
                    f.name,
                    server.label()
                )));
            }
        }
    }
    Ok(notes)
}

/// What the design does, in words: the blocks of a two-variant run, the disturbance rule.
fn design_notes(exp: &Experiment, server: &Server) -> Vec<String> {
    let mut notes = vec![];
    // (A capacity search's blocks are its own: three rates of each variant.)
    if exp.variants.len() == 2 && exp.slo.is_empty() {
        let per = exp.repeats_per_block();
        notes.push(match (per, exp.open_loop.is_none()) {
            (1, _) => "blocks: one trial of each variant".into(),
            (_, true) => format!(
                "blocks: four trials, each variant twice (in the orders that keep the \
                 feature balanced against the trial before and the one before that), counted \
                 as {per} repeats: a carry-over from one trial into the next one or two is estimated and \
                 taken out of the cost, which blocks of one each cannot tell from it (an odd \
                 --repeats runs one more of each)"
            ),
            (_, false) => format!(
                "blocks: four trials, each variant twice, counted as {per} repeats (an odd --repeats runs one more of each)"
            ),
        });
    }
    notes.push(match (exp.max_disturbance, exp.agents.is_empty()) {
        (None, _) => "disturbance: off (--max-disturbance off): every block counts, whatever \
                      else ran on the machine"
            .into(),
        (Some(limit), false) => format!(
            "disturbance: a block in which other processes use more than {limit:.0}% of a core \
             on an agent's host or the server's (when dbtax reads it) is left out of every \
             figure and run again (--max-disturbance)"
        ),
        (Some(limit), true) => format!(
            "disturbance: a block in which other processes use more than {limit:.0}% of a core \
             on {} is left out of every figure and run again (--max-disturbance)",
            match (server.datadir.is_some(), server.host.0.here()) {
                (true, true) => "this machine (the server's)".to_string(),
                (true, false) => format!("the server's host ({})", server.host.0.label()),
                _ => "this machine (the client's; the server's host is not watched)".into(),
            }
        ),
    });
    notes
}

/// The feature logs whose folder dbtax cannot read: their bytes unknown, the disk guard blind.
fn unreadable_logs(log_files: &LogFiles) -> Vec<String> {
    let mut notes = vec![];
    for f in &log_files.paths {
        let dir = f.parent().unwrap_or(f);
        if std::fs::read_dir(dir).is_err() {
            notes.push(format!(
                "dbtax cannot read {} (run it as a user who can): log bytes per query will be \
                 unknown and the disk guard cannot watch that log",
                dir.display()
            ));
        }
    }
    notes
}

/// The switched plugins each variant loads (those of its features); a variant without them
/// loses their variables, which do not exist then. The plugins' variables.
fn with_plugins(
    variants: &mut [PlannedVariant],
    features: &[Feature],
    switched_plugins: &[Plugin],
) -> Vec<String> {
    let plugin_vars: Vec<String> = features
        .iter()
        .filter(|f| f.plugin.is_some_and(|p| switched_plugins.contains(&p)))
        .flat_map(|f| f.on.iter().chain(f.off))
        .map(|(k, _)| k.to_string())
        .collect();
    for v in variants.iter_mut() {
        for name in &v.features {
            if let Some(p) = feature_named(features, name).plugin
                && switched_plugins.contains(&p)
                && !v.plugins.contains(&p)
            {
                v.plugins.push(p);
            }
        }
        if v.plugins.is_empty() {
            // It runs without the switched plugins: their variables do not exist then.
            v.state.retain(|(k, _)| !plugin_vars.contains(k));
        }
    }
    plugin_vars
}

/// On a server that is not on this machine dbtax cannot read its files or /proc: say which
/// figures will be missing, and refuse features that write a log file there (it would grow
/// unwatched: no disk guard) unless the user accepted that (`--unguarded-logs`). Whether such
/// logs will be written.
fn unwatched_logs(
    exp: &Experiment,
    features: &[Feature],
    server: &Server,
    notes: &mut Vec<String>,
) -> Result<bool> {
    notes.push(
        "dbtax cannot find the server's process and files on this machine (it is elsewhere, \
         or this login may not see where they are), so server CPU per query, log bytes per \
         query and the disk guard are not available (throughput and latency are); \
         --server-host ssh://[user@]host reads them through a probe on the database's host"
            .into(),
    );
    let logging: Vec<&str> = features
        .iter()
        .filter(|f| !f.log_file_vars.is_empty())
        .map(|f| f.name)
        .collect();
    if logging.is_empty() {
        return Ok(false);
    }
    if !exp.unguarded_logs {
        return Err(usage(format!(
            "{} write{} a log file on {}, whose files dbtax cannot reach (the server is not on \
             this machine, or this login may not see where its files are): dbtax could not \
             watch the log's size (the disk guard stops a run before a log fills its disk) nor \
             measure its bytes per query. Name the database's host with --server-host \
             ssh://[user@]host (dbtax reads it through a probe started there), or pass \
             --unguarded-logs (unguarded_logs = true in a file) to accept the log growing \
             unwatched. Nothing was changed",
            logging.join(", "),
            if logging.len() == 1 { "s" } else { "" },
            server.label()
        )));
    }
    notes.push(format!(
        "--unguarded-logs: {} will write a log file on the server that dbtax cannot watch; \
         keep an eye on its disk",
        logging.join(", ")
    ));
    Ok(true)
}

/// The settings the variants set that only a restart switches: (name, value, the server
/// option that sets it), as the server tells (`Admin::restart_only`).
fn restart_only(admin: &mut dyn Admin, states: &[State]) -> Result<Vec<(String, String, String)>> {
    let mut set: Vec<(String, String)> = vec![];
    for (k, v) in states.iter().flatten() {
        if let Some(v) = v
            && !set.iter().any(|(n, x)| n == k && x == v)
        {
            set.push((k.clone(), v.clone()));
        }
    }
    let options = admin.restart_only(&set)?;
    Ok(set
        .into_iter()
        .zip(options)
        .filter_map(|((k, v), o)| Some((k, v, o?)))
        .collect())
}

/// A variant's state without its restart-only settings, and the server options that set
/// them instead (a variant that leaves them at their original values starts without).
fn split_restart_only(state: State, restart: &[(String, String, String)]) -> (State, Vec<String>) {
    let mut opts = vec![];
    let kept = state
        .into_iter()
        .filter(|(k, v)| {
            let mine: Vec<&(String, String, String)> =
                restart.iter().filter(|(n, _, _)| n == k).collect();
            if mine.is_empty() {
                return true;
            }
            if let Some((_, _, o)) = mine.iter().find(|(_, x, _)| Some(x) == v.as_ref()) {
                opts.push(o.clone());
            }
            false
        })
        .collect();
    (kept, opts)
}

/// The plugins the features need: (loaded for the whole run, switched with the variants).
/// A switched plugin the server already has loaded stays loaded throughout: dbtax does not
/// remove what it did not install.
fn plugins(
    admin: &mut dyn Admin,
    features: &[Feature],
    notes: &mut Vec<String>,
) -> Result<(Vec<Plugin>, Vec<Plugin>)> {
    let (mut run, mut switched) = (vec![], vec![]);
    for f in features {
        let Some(p) = f.plugin else { continue };
        if run.contains(&p) || switched.contains(&p) {
            continue;
        }
        if !f.plugin_switched {
            run.push(p);
        } else if admin.plugin_active(&p)? {
            notes.push(format!(
                "{}: the {} plugin was loaded before this run and stays loaded in every \
                 variant (the baseline has it idle), so its idle cost is not in the overhead; \
                 uninstall it first to measure that too",
                f.name, p.soname
            ));
        } else {
            switched.push(p);
        }
    }
    Ok((run, switched))
}

/// Settings' entries in the server's persisted settings file (`Admin::persisted`).
type Persisted = BTreeMap<String, Option<String>>;

/// The exact statements of the plan, from the current values: what the dry run shows.
fn statements(
    admin: &dyn Admin,
    variants: &[PlannedVariant],
    touched: &[String],
    (current, persisted): (&BTreeMap<String, String>, Option<&Persisted>),
    (plugins, switched, plugin_vars): (&[Plugin], &[Plugin], &[String]),
) -> Statements {
    let now = |k: &str| current.get(k).cloned();
    let differs = |k: &str, v: &str| now(k).is_none_or(|c| !same_value(&c, v));
    let of_plugin = |k: &str| plugin_vars.iter().any(|p| p == k);
    let per_variant = variants
        .iter()
        .map(|v| {
            let loads = v.plugins.iter().map(|p| admin.install_sql(p));
            let sets = v.state.iter().filter_map(|(k, val)| {
                let value = val.clone().or_else(|| now(k))?;
                differs(k, &value).then(|| admin.set_sql(k, &value))
            });
            loads.chain(sets).collect()
        })
        .collect();
    let mut restore: Vec<String> = touched
        .iter()
        .rev()
        .filter(|k| !of_plugin(k))
        .filter(|k| {
            variants.iter().any(|v| {
                v.state
                    .iter()
                    .any(|(n, val)| n == *k && val.as_ref().is_some_and(|val| differs(k, val)))
            })
        })
        .map(|k| {
            let entry = persisted.map(|p| p.get(k).cloned().flatten());
            admin.restore_sql(
                k,
                &now(k).unwrap_or_else(|| "<its value after the plugin loads>".into()),
                entry.as_ref().map(|e| e.as_deref()),
            )
        })
        .collect();
    restore.extend(
        plugins
            .iter()
            .chain(switched)
            .map(|p| admin.uninstall_sql(p.soname)),
    );
    Statements {
        install: plugins.iter().map(|p| admin.install_sql(p)).collect(),
        per_variant,
        restore,
    }
}

/// How restart-only settings will be switched; a usage error when they cannot be.
fn restarter(
    variants: &[PlannedVariant],
    server: &Server,
    restart_cmd: Option<&str>,
) -> Result<Restarter> {
    let Some(v) = variants.iter().find(|v| !v.server_opts.is_empty()) else {
        return Ok(Restarter::None);
    };
    match restart_cmd {
        _ if server.is_managed() => Ok(Restarter::Managed),
        Some(cmd) => Ok(Restarter::Command(cmd.to_string())),
        None => Err(usage(format!(
            "variant '{}' needs a server restart (server options {}), which dbtax does only \
             on a managed target; give --restart-cmd 'CMD' (a command that restarts {} with \
             the options in $DBTAX_SERVER_OPTS), or use --target {}. Nothing was changed",
            v.name,
            v.server_opts.join(" "),
            server.label(),
            server.engine().managed[0]
        ))),
    }
}

/// Variables set by `set` (not by a catalog feature) must exist and be settable.
/// ...and take the values they are given (a value the server would refuse mid-run, after
/// the first change, is bad input now).
fn check_plain_settings(admin: &mut dyn Admin, exp: &Experiment, server: &Server) -> Result<()> {
    let settings: Vec<(&str, &str)> = exp
        .variants
        .iter()
        .flat_map(|v| v.set.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .collect();
    let names: Vec<&str> = settings.iter().map(|(k, _)| *k).collect();
    let found = admin.global_vars(&names)?;
    for (n, value) in settings {
        let Some(v) = found.get(n) else {
            return Err(usage(format!(
                "the server {} has no global variable '{n}'",
                server.label()
            )));
        };
        if let Err(why) = admin.probe_set_privilege(n, v) {
            return Err(usage(format!(
                "{why} (on {}). Nothing was changed",
                server.label()
            )));
        }
        if let Err(why) = admin.check_value(n, value) {
            return Err(usage(format!(
                "{n} = {value} would be refused by {}: {why}. Nothing was changed",
                server.label()
            )));
        }
    }
    Ok(())
}

/// Connections dbtax opens besides its clients: the switcher's (which holds the run lock),
/// the status reader's, and one to reconnect with.
const OWN_CONNECTIONS: u64 = 3;

/// The most threads must fit in the connections the server has left, with room to spare for
/// its other clients: a run that takes them all locks everyone else out.
/// Whether the server has the connections the thread count needs: None, or why not (bad
/// input for a run; the dry run says it beside the plan).
fn connection_shortfall(
    admin: &mut dyn Admin,
    exp: &Experiment,
    server: &Server,
) -> Result<Option<String>> {
    let Some((max, used)) = admin.connection_room()? else {
        return Ok(None);
    };
    let threads = exp.threads.iter().copied().max().unwrap_or(1) as u64;
    let spare = 2 + max / 20;
    let room = max.saturating_sub(used + spare);
    if threads + OWN_CONNECTIONS > room {
        return Ok(Some(format!(
            "--threads {threads} needs {threads} client connections and {OWN_CONNECTIONS} of \
             dbtax's own, but {} allows {max} and {used} are in use (dbtax leaves {spare} for \
             others): at most {} threads there. Lower --threads, or raise max_connections. \
             Nothing was changed",
            server.label(),
            room.saturating_sub(OWN_CONNECTIONS)
        )));
    }
    Ok(None)
}

/// Server variables worth recording beside the results.
fn relevant_variables(
    admin: &mut dyn Admin,
    touched: &[String],
) -> Result<BTreeMap<String, String>> {
    let mut names = admin.relevant_names().to_vec();
    names.retain(|n| !touched.iter().any(|t| t == n));
    admin.global_vars(&names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_switch_features_off_in_the_baseline() {
        let mut e = Experiment::defaults();
        e.variants = crate::experiment::spec::variants_for_features(&["general-log".into()]);
        e.variants.push(crate::experiment::spec::VariantSpec {
            name: "flush-2".into(),
            set: vec![("innodb_flush_log_at_trx_commit".into(), "2".into())],
            ..Default::default()
        });
        let mysql = &crate::server::mysql::ENGINE;
        let fs = features(&e, |n| {
            (mysql.feature)(n).ok_or_else(|| anyhow::anyhow!("{n}"))
        })
        .unwrap();
        let held = held(&e, &fs).unwrap();
        let (touched, states) = states(&e, &fs, &held);
        assert!(touched.contains(&"general_log".to_string()));
        let get = |s: &State, k: &str| s.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get(&states[0], "general_log").as_deref(), Some("OFF"));
        assert_eq!(get(&states[1], "general_log").as_deref(), Some("ON"));
        assert_eq!(get(&states[0], "innodb_flush_log_at_trx_commit"), None);
        assert_eq!(
            get(&states[2], "innodb_flush_log_at_trx_commit").as_deref(),
            Some("2")
        );
        assert_eq!(get(&states[2], "general_log").as_deref(), Some("OFF"));
        assert_eq!(
            get(&states[0], "log_output").as_deref(),
            Some("FILE"),
            "log_output is held at FILE in the baseline too: it governs more than the feature"
        );
        assert_eq!(get(&states[2], "log_output").as_deref(), Some("FILE"));
    }
}
