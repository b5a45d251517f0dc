//! `--dry-run`: the plan (blocks, order, estimated time) and the exact statements each
//! variant would run, and those that would restore the server. Reads, changes nothing.

use super::spec::{Experiment, StopRule};
use crate::feature::catalog::Plugin;
use crate::feature::toggle;
use crate::target::Target;
use crate::target::mysql::{global_vars, set_global_sql};
use anyhow::Result;

/// The dry-run text.
pub fn plan(
    exp: &Experiment,
    target: &Target,
    admin: &mut mysql::Conn,
    touched: &[String],
    states: &[toggle::State],
    plugins: &[Plugin],
    notes: &[String],
) -> Result<String> {
    let names: Vec<&str> = touched.iter().map(String::as_str).collect();
    let now = global_vars(admin, &names)?;
    let current = |k: &str| {
        now.get(k)
            .cloned()
            .unwrap_or_else(|| "<its value after the plugin loads>".into())
    };
    let blocks = exp.planned_blocks() as usize;
    let trials = blocks * exp.threads.len() * exp.variants.len();
    let secs = super::plan::trial_estimate(exp.trial, exp.warmup).as_secs_f64() * trials as f64;
    let mut s = format!(
        "Experiment '{}' on {} ({})\n",
        exp.name,
        target.label(),
        target.server_version
    );
    s += &format!("  workload   {}\n", serde_json::to_string(&exp.workload)?);
    s += &format!("  threads    {:?}\n", exp.threads);
    s += &format!(
        "  trials     {:.1} s measured after {:.1} s settle; {} per thread count → {trials} trials, about {:.0} s\n",
        exp.trial.as_secs_f64(),
        exp.warmup.as_secs_f64(),
        match &exp.stop {
            StopRule::Repeats(n) => format!("{n} blocks"),
            StopRule::Precision { points, budget } => format!(
                "at least {blocks} blocks, more until ±{points} points or {} s",
                budget.as_secs()
            ),
        },
        secs
    );
    s += &format!(
        "  order      blocks of every variant in random order (seed {})\n",
        exp.seed
    );
    for n in notes {
        s += &format!("  note       {n}\n");
    }
    if !plugins.is_empty() {
        s += "Before the first trial (journaled first):\n";
        for p in plugins {
            s += &format!("  INSTALL SONAME '{}'   (only if not loaded)\n", p.soname);
        }
    }
    for (v, st) in exp.variants.iter().zip(states) {
        s += &format!(
            "Variant {}{}:\n",
            v.name,
            if std::ptr::eq(v, &exp.variants[0]) {
                " (baseline)"
            } else {
                ""
            }
        );
        let mut any = false;
        for (k, val) in st {
            let value = val.clone().unwrap_or_else(|| current(k));
            if now
                .get(k)
                .is_none_or(|cur| !toggle::same_value(cur, &value))
            {
                s += &format!("  {}\n", set_global_sql(k, &value));
                any = true;
            }
        }
        if !any {
            s += "  (the server's current settings)\n";
        }
    }
    s += "At the end, on error and on Ctrl-C (restore what was changed):\n";
    for k in touched.iter().rev() {
        let changed = states.iter().any(|st| {
            st.iter().any(|(n, v)| {
                n == k
                    && v.as_ref()
                        .is_some_and(|v| now.get(k).is_none_or(|c| !toggle::same_value(c, v)))
            })
        });
        if changed {
            s += &format!("  {}\n", set_global_sql(k, &current(k)));
        }
    }
    for p in plugins {
        s += &format!(
            "  UNINSTALL SONAME '{}'   (only if dbtax installed it)\n",
            p.soname
        );
    }
    s += "Nothing was changed (--dry-run).\n";
    Ok(s)
}
