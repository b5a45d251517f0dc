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
    /// dbtax's own clients took a large share of the machine the server runs on.
    ClientCpu {
        /// Share of all cores, 0..1.
        share: f64,
        /// At this thread count.
        threads: u32,
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
                write!(
                    f,
                    "the time budget ran out after {rounds} blocks before every interval reached \
                     ±{points} points: {}",
                    cells.join(", ")
                )
            }
            Warning::ClientCpu { share, threads } => write!(
                f,
                "dbtax's own clients used {:.0}% of this machine's CPU at {threads} threads: the \
                 server had that much less; compare variants, not absolute throughput",
                share * 100.0
            ),
        }
    }
}

/// The client-CPU warning for a set of cells, when the worst trial passed 30% of the machine.
pub fn client_cpu(cells: &[crate::results::Cell], cores: u32) -> Option<Warning> {
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
        Some((share, threads)) if share > 0.3 => Some(Warning::ClientCpu { share, threads }),
        _ => None,
    }
}
