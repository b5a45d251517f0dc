//! What the reader of a result should know, as an enum whose text says what to do about it
//! (after hyperfine's `output/warnings.rs`). results.json stores the text.

use std::fmt;

/// One warning about a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// Precision mode ran out of time (or blocks) before every interval was narrow enough.
    PrecisionShortfall {
        /// Blocks run per thread count.
        rounds: u32,
        /// The goal, ± percentage points.
        points: f64,
        /// (variant, threads, half-width) of each cell still too wide.
        wide: Vec<(String, u32, f64)>,
    },
    /// Trials right after (or two after) a variant's trial ran measurably slower (or
    /// faster).
    CarryOver {
        /// The preceding variant ("any feature" for the lag-2 term).
        after: String,
        /// 1: right after; 2: two after.
        lag: u32,
        /// The estimate, percent slower.
        pct: f64,
        /// Its 95% interval.
        ci: [f64; 2],
    },
    /// The first half of trials after a variant's trial ran slower than their second half,
    /// more than after the baseline: the warm-up did not wait the transient out.
    Transient {
        /// The preceding variant.
        after: String,
        /// Percent slower.
        pct: f64,
        /// Its 95% interval.
        ci: [f64; 2],
    },
    /// Some blocks of a cell disagree wildly with the others.
    Outliers {
        /// The variant.
        variant: String,
        /// The thread count.
        threads: u32,
        /// The blocks (from 0).
        blocks: Vec<u32>,
        /// The robust estimate differs from the mean in what it says.
        disagree: bool,
    },
    /// Other clients used the server during some trials.
    OtherClients {
        /// Trials affected.
        trials: usize,
        /// The largest share, percent of dbtax's statements (0: not counted).
        worst_pct: f64,
        /// PostgreSQL: the most other sessions seen in a trial.
        sessions: u32,
        /// By cell: variant, threads, trials withheld.
        cells: Vec<(String, u32, usize)>,
    },
    /// dbtax's own clients took a large share of the machine the server runs on.
    ClientCpu {
        /// Share of all cores, 0..1.
        share: f64,
        /// At this thread count.
        threads: u32,
    },
    /// Blocks excluded because other processes took the CPU during them.
    Disturbed {
        /// Blocks excluded.
        blocks: usize,
        /// The most CPU other processes used in a trial, percent of one core.
        worst_pct: f64,
        /// The threshold, percent of one core.
        limit: f64,
        /// The run's typical level of other processes' CPU (the largest of the levels the
        /// blocks were judged against), percent of one core.
        typical: f64,
        /// On which host(s): "server", "client".
        hosts: Vec<String>,
        /// Thread counts left with fewer blocks than planned (re-runs ran out).
        short: Vec<u32>,
    },
    /// Most blocks met other processes' CPU: the machine was busy throughout, every block
    /// was kept.
    BusyThroughout {
        /// Blocks that would have been set aside, kept.
        blocks: usize,
        /// Other processes' CPU in the median trial, percent of one core.
        median_pct: f64,
        /// The most in one trial.
        max_pct: f64,
        /// On which host(s).
        hosts: Vec<String>,
    },
    /// Blocks that lost a trial to a late reading of the server's host.
    LateReadings {
        /// Blocks set aside.
        blocks: usize,
        /// The first one's words.
        first: String,
    },
    /// Replayed statements the server refused because the session is read-only: the
    /// classifier took them for reads, and the second lock held.
    RefusedAsWrites {
        /// How many times, in every trial.
        statements: u64,
        /// The server's words, the most frequent first.
        messages: Vec<String>,
    },
    /// Agents' measured windows were apart by more than a tenth of a trial.
    Skewed {
        /// Trials flagged.
        trials: usize,
        /// The worst skew, ms.
        worst_ms: f64,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::PrecisionShortfall {
                rounds,
                points,
                wide,
            } => {
                let cells: Vec<String> = wide
                    .iter()
                    .map(|(v, t, h)| format!("{v} at {t} threads (±{h:.1})"))
                    .collect();
                if cells.is_empty() {
                    // Every interval is narrow enough, but the two-stage rule had asked for
                    // more blocks than the budget allowed.
                    return write!(
                        f,
                        "the time budget ran out after {rounds} blocks, before the blocks the \
                         first stage asked for (two-stage rule): every interval is within \
                         ±{points} points, from fewer blocks than planned"
                    );
                }
                write!(
                    f,
                    "the time budget ran out after {rounds} blocks before every interval reached \
                     ±{points} points: {}",
                    cells.join(", ")
                )
            }
            Warning::CarryOver {
                after,
                lag,
                pct,
                ci,
            } => {
                let when = match (*lag, after.as_str()) {
                    (1, a) => format!("right after a trial of '{a}'"),
                    (_, "any feature") => "two after a feature's trial".to_string(),
                    (_, a) => format!("two after a trial of '{a}'"),
                };
                let (how, shown) = if *pct >= 0.0 {
                    ("slower", [ci[0], ci[1], *pct])
                } else {
                    ("faster", [-ci[1], -ci[0], -*pct])
                };
                write!(
                    f,
                    "a trial {when} ran {:.1}% [{:.1}, {:.1}] {how} than one after the baseline \
                     (carry-over); the overheads are corrected for it, and a longer --warmup \
                     may remove it",
                    shown[2], shown[0], shown[1]
                )
            }
            Warning::Transient { after, pct, ci } => write!(
                f,
                "after a trial of '{after}' the first half of the next trial ran {pct:.1}% \
                 [{:.1}, {:.1}] slower than its second half, more than after the baseline: the \
                 switch's transient outlasted the warm-up; raise --warmup (its maximum)",
                ci[0], ci[1]
            ),
            Warning::Outliers {
                variant,
                threads,
                blocks,
                disagree,
            } => {
                let list: Vec<String> = blocks.iter().map(|b| b.to_string()).collect();
                let unit = if *threads == 1 { "thread" } else { "threads" };
                write!(
                    f,
                    "{variant} at {threads} {unit}: block(s) {} stand out from the others (a \
                     stall, or a disturbance of the machine)",
                    list.join(", ")
                )?;
                if *disagree {
                    f.write_str(
                        "; the robust estimate and the mean disagree, and the words use the \
                         robust one",
                    )?;
                }
                Ok(())
            }
            Warning::OtherClients {
                trials,
                worst_pct,
                sessions,
                cells,
            } => {
                let how_much = if *sessions > 0 {
                    format!("up to {sessions} session(s) of other clients")
                } else {
                    format!("up to {worst_pct:.0}% of dbtax's own")
                };
                let by_cell: Vec<String> = cells
                    .iter()
                    .map(|(v, t, n)| format!("{v} at {t} threads: {n}"))
                    .collect();
                write!(
                    f,
                    "other clients ran statements on the server during {trials} trial(s) \
                     ({how_much}): their server CPU per query is withheld \
                     ({}; each cell's server-CPU figures come from its other blocks), and \
                     throughput may be disturbed; run on a quiet server",
                    by_cell.join(", ")
                )
            }
            Warning::Disturbed {
                blocks,
                worst_pct,
                limit,
                typical,
                hosts,
                short,
            } => {
                let hosts: Vec<String> = hosts.iter().map(|h| format!("the {h}'s host")).collect();
                write!(
                    f,
                    "{blocks} block(s) excluded as disturbed: other processes used up to \
                     {worst_pct:.0}% of a core on {} during them (the limit is {limit:.0}% \
                     above the run's typical {typical:.0}%, --max-disturbance); their trials are kept in results.json but in no \
                     figure, and the blocks were run again",
                    hosts.join(" and ")
                )?;
                if !short.is_empty() {
                    let t: Vec<String> = short.iter().map(u32::to_string).collect();
                    write!(
                        f,
                        ", though not all: fewer blocks than planned at {} threads; run on a \
                         quieter machine",
                        t.join(", ")
                    )?;
                }
                Ok(())
            }
            Warning::LateReadings { blocks, first } => write!(
                f,
                "{blocks} block(s) set aside because a reading of the server's host came late \
                 (a slow link or a busy host; the first: {first}): the features were switched \
                 off until the probe answered, the blocks' trials are in no figure, and the \
                 blocks were run again"
            ),
            Warning::BusyThroughout {
                blocks,
                median_pct,
                max_pct,
                hosts,
            } => {
                let hosts: Vec<String> = hosts.iter().map(|h| format!("the {h}'s host")).collect();
                write!(
                    f,
                    "the machine was busy throughout: other processes used {median_pct:.0}% of \
                     a core in the median trial (up to {max_pct:.0}%) on {}, so most blocks \
                     met them; all were kept ({blocks} that would have been set aside \
                     included), and the figures are this busy machine's: for a quieter \
                     measurement run when it is idle or pin the server to a core of its own",
                    hosts.join(" and ")
                )
            }
            Warning::ClientCpu { share, threads } => write!(
                f,
                "dbtax's own clients used {:.0}% of this machine's CPU at {threads} threads: the \
                 server had that much less; compare variants, not absolute throughput",
                share * 100.0
            ),
            Warning::RefusedAsWrites {
                statements,
                messages,
            } => write!(
                f,
                "the server refused {statements} replayed statement(s) because the replay's \
                 sessions are read-only ({}): dbtax's classifier took them for reads and \
                 the server's read-only session held. They changed nothing; they are counted \
                 as errors, and their kinds marked diverged. Please report them: the \
                 classifier should have left them out",
                messages.join("; ")
            ),
            Warning::Skewed { trials, worst_ms } => write!(
                f,
                "the agents' measured windows were apart by more than a tenth of the trial in \
                 {trials} trial(s) (worst {worst_ms:.1} ms): their counts and the server's cover \
                 different times; lengthen --trial, or check the agents' clocks and round trips"
            ),
        }
    }
}

/// Warnings the statistics raise: a carry-over whose interval excludes 0, outlier blocks.
pub fn from_summary(s: &crate::stats::summary::Summary) -> Vec<Warning> {
    let mut out = vec![];
    for c in s.analysis.carry_over.iter().filter(|c| c.significant) {
        out.push(Warning::CarryOver {
            after: c.after.clone(),
            lag: c.lag,
            pct: c.pct,
            ci: c.ci95_pct,
        });
    }
    for t in s
        .analysis
        .transients
        .iter()
        .filter(|t| t.significant && t.pct > 0.0)
    {
        out.push(Warning::Transient {
            after: t.after.clone(),
            pct: t.pct,
            ci: t.ci95_pct,
        });
    }
    let others: Vec<&crate::results::Trial> = s
        .cells
        .iter()
        .flat_map(|c| c.trials.iter())
        .filter(|t| t.other_clients_pct.is_some() || t.other_sessions.is_some())
        .collect();
    if !others.is_empty() {
        out.push(Warning::OtherClients {
            trials: others.len(),
            worst_pct: others
                .iter()
                .filter_map(|t| t.other_clients_pct)
                .fold(0.0, f64::max),
            sessions: others
                .iter()
                .filter_map(|t| t.other_sessions)
                .max()
                .unwrap_or(0),
            cells: s
                .cells
                .iter()
                .filter(|c| c.server_cpu_withheld_trials > 0)
                .map(|c| {
                    (
                        c.variant.clone(),
                        c.threads,
                        c.server_cpu_withheld_trials as usize,
                    )
                })
                .collect(),
        });
    }
    for cell in &s.cells {
        if let Some(o) = &cell.overhead
            && !o.outlier_blocks.is_empty()
        {
            out.push(Warning::Outliers {
                variant: cell.variant.clone(),
                threads: cell.threads,
                blocks: o.outlier_blocks.clone(),
                disagree: crate::intervals::overhead::robust_to_tell(o).is_some(),
            });
        }
    }
    let skewed: Vec<f64> = s
        .cells
        .iter()
        .flat_map(|c| c.trials.iter().filter(|t| t.skewed))
        .filter_map(|t| t.agent_skew_ms)
        .collect();
    if !skewed.is_empty() {
        out.push(Warning::Skewed {
            trials: skewed.len(),
            worst_ms: skewed.iter().copied().fold(0.0, f64::max),
        });
    }
    out
}

/// The client-CPU warning for a set of cells, when the worst trial passed 30% of the machine.
/// With agents, only those on this machine (`here`: their labels) count.
pub fn client_cpu(cells: &[crate::results::Cell], cores: u32, here: &[String]) -> Option<Warning> {
    let mut worst: Option<(f64, u32)> = None;
    for c in cells {
        for t in &c.trials {
            let cpu_us_per_s = if t.agents.is_empty() {
                t.client_cpu_us_per_query * t.qps
            } else {
                t.agents
                    .iter()
                    .filter(|a| here.contains(&a.host))
                    .map(|a| a.client_cpu_us_per_query * a.queries as f64)
                    .sum::<f64>()
                    / t.duration_s.max(1e-9)
            };
            let share = cpu_us_per_s / 1e6 / cores.max(1) as f64;
            if worst.is_none_or(|(w, _)| share > w) {
                worst = Some((share, c.threads));
            }
        }
    }
    match worst {
        Some((share, threads)) if share > 0.3 => Some(Warning::ClientCpu { share, threads }),
        _ => None,
    }
}

/// The server's words for a statement it refused in a read-only session (MariaDB/MySQL error
/// 1792, PostgreSQL SQLSTATE 25006).
fn refused_as_write(message: &str) -> bool {
    message.contains("(error 1792)")
        || message.contains("(SQLSTATE 25006)")
        || message.contains("READ ONLY transaction")
        || message.contains("read-only transaction")
}

/// Replayed statements the server refused as writes in its read-only sessions: evidence the
/// classifier missed them (None: there were none).
pub fn refused_as_writes(cells: &[crate::results::Cell]) -> Option<Warning> {
    let mut by: std::collections::BTreeMap<&str, u64> = Default::default();
    for t in cells.iter().flat_map(|c| &c.trials) {
        for (m, n) in &t.error_messages {
            if refused_as_write(m) {
                *by.entry(m.as_str()).or_default() += n;
            }
        }
    }
    let statements = by.values().sum();
    if statements == 0 {
        return None;
    }
    let mut messages: Vec<(&str, u64)> = by.into_iter().collect();
    messages.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    Some(Warning::RefusedAsWrites {
        statements,
        messages: messages
            .into_iter()
            .take(3)
            .map(|(m, _)| m.to_string())
            .collect(),
    })
}

/// The words for blocks set aside by late readings (None: there were none).
pub(crate) fn late_readings(late: &[crate::results::DisturbedBlock]) -> Option<Warning> {
    let first = late.first()?;
    Some(Warning::LateReadings {
        blocks: late.len(),
        first: first.late_reading.clone().unwrap_or_default(),
    })
}
