//! The four studies that started dbtax (../shared/seeds), each as one command, answered with
//! intervals instead of one run per side. `--quick` fits each in about two minutes on a
//! 2-core machine; `--full` uses the study's whole thread range.

use super::merge::{merge, new_seed};
use crate::client::mode::QueryMode;
use crate::error::usage;
use crate::experiment::spec::{
    Experiment, Focus, Layer, StopRule, VariantSpec, product, variants_for_features,
};
use crate::workload::{Workload, WorkloadKind};
use anyhow::Result;
use std::time::Duration;

/// A preset: a study reproduced.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// `--preset NAME`.
    pub name: &'static str,
    /// The study it reproduces.
    pub study: &'static str,
    /// One line for `dbtax presets`.
    pub summary: &'static str,
}

/// Every preset.
pub const ALL: [Preset; 6] = [
    Preset {
        name: "seed-slow-log",
        study: "000: impact of the slow query log (mysqlslap, select 1, 64 clients)",
        summary: "slow log with long_query_time=0 vs off; `select 1` from 64 clients, a fixed number of queries per trial, total time as mysqlslap reports it",
    },
    Preset {
        name: "seed-general-log",
        study: "001: cost of enabling the general log (sysbench oltp simple, 4 to 25 threads)",
        summary: "general log vs off; point selects; overhead against threads",
    },
    Preset {
        name: "seed-audit",
        study: "003: audit plugin loss × durability settings (sysbench nontrx select, 16 to 256 threads)",
        summary: "audit plugin on/off × three durability levels (sync_binlog + innodb_flush_log_at_trx_commit: 0+0, 1+1, 100+2); audit overhead within each",
    },
    Preset {
        name: "seed-binlog",
        study: "004: binlog preallocation (mysqlslap inserts, sync_binlog=1, 10 to 150 threads)",
        summary: "binary log on vs off (a restart between blocks) for auto-increment inserts with sync_binlog=1; total time for N inserts",
    },
    Preset {
        name: "pg-logging",
        study: "PostgreSQL's counterpart of 000-003: statement logging and audit (pgbench -S)",
        summary: "log_statement = 'all', log_min_duration_statement = 0 and pgaudit vs off; pgbench's select-only at 1, 4, 16, 64 clients (default target managed:postgres)",
    },
    Preset {
        name: "pg-durability",
        study: "PostgreSQL's counterpart of 003 and 004: commit durability × full-page writes (pgbench -N)",
        summary: "synchronous_commit on/off × full_page_writes on/off on pgbench's simple-update; each factor's cost within the other (default target managed:postgres)",
    },
];

/// How big a preset run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// About two minutes.
    Quick,
    /// A sensible subset of the study's thread range.
    Normal,
    /// The study's whole thread range.
    Full,
}

/// What every preset says: its name, workload, thread counts, blocks, and 2 s trials.
fn base(name: &str, workload: Workload, threads: Vec<u32>, repeats: u32) -> Layer {
    Layer {
        name: Some(name.into()),
        workload: Some(workload),
        threads: Some(threads),
        trial: Some(Duration::from_secs(2)),
        // The longest settle: the warm-up ends once the throughput is steady.
        warmup: Some(Duration::from_secs(1)),
        repeats: Some(repeats),
        ..Layer::default()
    }
}

fn level(name: &str, feature: Option<&str>, set: &[(&str, &str)]) -> VariantSpec {
    VariantSpec {
        name: name.into(),
        features: feature.into_iter().map(String::from).collect(),
        set: set
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    }
}

/// A preset's layer: what it says of the experiment.
pub fn layer(name: &str, size: Size) -> Result<Layer> {
    let pick = |quick: Vec<u32>, normal: Vec<u32>, full: Vec<u32>| match size {
        Size::Quick => quick,
        Size::Normal => normal,
        Size::Full => full,
    };
    let quick = size == Size::Quick;
    let exp = match name {
        "seed-slow-log" => {
            let w = Workload {
                kind: WorkloadKind::Query,
                queries: vec!["select 1".into()],
                tables: 0,
                table_size: 0,
                scale: 1,
                setup: vec![],
                ..Default::default()
            };
            let mut e = base(name, w, vec![64], 5);
            e.queries_per_trial = Some(Some(if quick { 300_000 } else { 1_000_000 }));
            e.variants = Some(variants_for_features(&["slow-log".to_string()]));
            e
        }
        "seed-general-log" => {
            let w = Workload {
                kind: WorkloadKind::PointSelect,
                // sysbench prepares its statements (the study's sysbench 0.4 too).
                protocol: QueryMode::Prepared,
                ..Default::default()
            };
            let threads = pick(
                vec![4, 25],
                vec![4, 8, 16, 25],
                vec![4, 7, 10, 13, 16, 19, 22, 25],
            );
            let mut e = base(name, w, threads, 8);
            e.variants = Some(variants_for_features(&["general-log".to_string()]));
            e
        }
        "seed-audit" => {
            let w = Workload {
                kind: WorkloadKind::PointSelect,
                // sysbench prepares its statements (the study's sysbench 0.4 too).
                protocol: QueryMode::Prepared,
                ..Default::default()
            };
            let threads = pick(vec![64], vec![16, 64, 256], vec![16, 32, 64, 128, 256]);
            let mut e = base(name, w, threads, if quick { 6 } else { 5 });
            e.trial = Some(Duration::from_millis(if quick { 1500 } else { 2000 }));
            // sync_binlog only matters with the binary log on, as in the study.
            e.server_opts = Some(vec!["log-bin=binlog".into(), "server-id=1".into()]);
            e.variants = Some(product(&[
                (
                    "audit".into(),
                    vec![
                        level("no-audit", None, &[]),
                        level("audit", Some("audit"), &[]),
                    ],
                ),
                (
                    "durability".into(),
                    vec![
                        level(
                            "sync0-trx0",
                            None,
                            &[
                                ("sync_binlog", "0"),
                                ("innodb_flush_log_at_trx_commit", "0"),
                            ],
                        ),
                        level(
                            "sync1-trx1",
                            None,
                            &[
                                ("sync_binlog", "1"),
                                ("innodb_flush_log_at_trx_commit", "1"),
                            ],
                        ),
                        level(
                            "sync100-trx2",
                            None,
                            &[
                                ("sync_binlog", "100"),
                                ("innodb_flush_log_at_trx_commit", "2"),
                            ],
                        ),
                    ],
                ),
            ]));
            e
        }
        "pg-logging" => {
            let w = Workload {
                kind: WorkloadKind::SelectOnly,
                ..Default::default()
            };
            let threads = pick(vec![1, 16], vec![1, 4, 16, 64], vec![1, 4, 16, 64, 128]);
            let mut e = base(name, w, threads, if quick { 4 } else { 8 });
            e.trial = Some(Duration::from_secs(1));
            e.warmup = Some(Duration::from_secs(1));
            e.target = Some(Some("managed:postgres".into()));
            e.variants = Some(variants_for_features(
                &["log-statement", "log-min-duration", "pgaudit"].map(String::from),
            ));
            e
        }
        "pg-durability" => {
            let w = Workload {
                kind: WorkloadKind::SimpleUpdate,
                ..Default::default()
            };
            let threads = pick(vec![4, 16], vec![1, 4, 16, 64], vec![1, 4, 16, 64, 128]);
            let mut e = base(name, w, threads, if quick { 4 } else { 8 });
            e.trial = Some(Duration::from_secs(1));
            e.warmup = Some(Duration::from_secs(1));
            e.target = Some(Some("managed:postgres".into()));
            e.variants = Some(product(&[
                (
                    "commit".into(),
                    vec![
                        level("async", None, &[]),
                        level("sync", Some("sync-commit"), &[]),
                    ],
                ),
                (
                    "pages".into(),
                    vec![
                        level("fpw-off", None, &[]),
                        level("fpw-on", Some("full-page-writes"), &[]),
                    ],
                ),
            ]));
            e
        }
        "seed-binlog" => {
            let w = Workload {
                kind: WorkloadKind::Insert,
                tables: 1,
                table_size: 1000,
                ..Default::default()
            };
            let threads = pick(
                vec![10, 50],
                vec![10, 50, 150],
                vec![10, 30, 50, 70, 90, 110, 130, 150],
            );
            let mut e = base(name, w, threads, 5);
            e.queries_per_trial = Some(Some(if quick { 20_000 } else { 100_000 }));
            let sync = [("sync_binlog", "1")];
            e.variants = Some(vec![
                level("no-binlog", None, &sync),
                VariantSpec {
                    baseline: 0,
                    ..level("binlog", Some("binlog"), &sync)
                },
            ]);
            e
        }
        other => {
            let names: Vec<&str> = ALL.iter().map(|p| p.name).collect();
            return Err(usage(format!(
                "unknown preset '{other}': choose one of {} (see `dbtax presets`)",
                names.join(", ")
            )));
        }
    };
    Ok(exp)
}

/// The demo: general log, slow log and audit plugin against off, point selects. A budgeted
/// precision run: a few blocks at the other thread counts, the rest of the time at the
/// headline's (16 threads), on the variants whose interval is still widest, until ±5 points
/// (`--quick`, about 2 minutes) or ±3 (about 5 minutes).
/// On PostgreSQL the same three names mean log_statement, log_min_duration_statement and
/// pgaudit; `workload` is the engine's own point select (pgbench's select-only there).
pub fn demo(quick: bool, workload: WorkloadKind) -> Result<Experiment> {
    let features = ["general-log", "slow-log", "audit"].map(String::from);
    let (threads, points, budget, others) = if quick {
        (vec![1, 16], 5.0, 100, 3)
    } else {
        (vec![1, 4, 16, 64], 3.0, 270, 4)
    };
    let demo = Layer {
        threads: Some(threads),
        trial: Some(Duration::from_millis(500)),
        headline_threads: Some(Some(DEMO_HEADLINE)),
        variants: Some(variants_for_features(&features)),
        // The stop rule is the precision goal below.
        repeats: None,
        ..base(
            "demo",
            Workload {
                kind: workload,
                tables: 4,
                table_size: 100_000,
                ..Default::default()
            },
            vec![],
            0,
        )
    };
    let mut e = merge(vec![demo])?;
    e.seed = new_seed();
    e.stop = StopRule::Precision {
        points,
        budget: Duration::from_secs(budget),
        focus: Some(Focus {
            threads: DEMO_HEADLINE,
            others,
        }),
    };
    Ok(e)
}

/// The thread count the demo's words are about.
const DEMO_HEADLINE: u32 = 16;

#[cfg(test)]
mod tests {
    use super::*;

    /// A preset's experiment by itself (over the defaults), validated.
    fn build(name: &str, size: Size) -> Result<Experiment> {
        let exp = merge(vec![layer(name, size)?])?;
        exp.validate()?;
        Ok(exp)
    }

    #[test]
    fn every_preset_builds_in_every_size() {
        for p in ALL {
            for size in [Size::Quick, Size::Normal, Size::Full] {
                let e = build(p.name, size).unwrap();
                assert!(e.variants.len() >= 2, "{}", p.name);
            }
        }
        assert_eq!(build("seed-audit", Size::Normal).unwrap().variants.len(), 6);
        assert!(build("seed-nothing", Size::Quick).is_err());
    }
}
