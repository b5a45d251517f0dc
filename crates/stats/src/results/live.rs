//! A live run's record (`dbtax live`, results.json's `live` section): the schedule's slots,
//! what each window measured, the estimates with their intervals, the pairs set aside. The
//! design and the estimator that make them are [`crate::live`].

use serde::{Deserialize, Serialize};

/// One window of the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// Its block (every feature's pair once).
    pub block: usize,
    /// Off (`None`) or the feature on (its index).
    pub feature: Option<usize>,
    /// The pair it belongs to (an off window and an on window of one feature, adjacent);
    /// `None` for an extra off window that keeps the share of time on under its cap.
    pub pair: Option<usize>,
}

/// What one window measured, from the server alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// The window's slot in the schedule.
    pub slot: usize,
    /// Seconds measured (after the settle time).
    pub seconds: f64,
    /// Statements the server counted.
    pub statements: f64,
    /// The server's CPU, seconds.
    pub cpu_s: f64,
    /// Bytes the feature's log grew by.
    pub log_bytes: f64,
    /// Statements per shape (a digest, a pg_stat_statements query id), in one order for
    /// every window; empty where the server keeps no such table.
    pub shapes: Vec<f64>,
    /// Total execution time per shape, µs (same order); empty where unreadable.
    pub shape_time_us: Vec<f64>,
    /// Failures the server counted (statements in error, or transactions rolled back on
    /// PostgreSQL); None where it does not count them cheaply.
    #[serde(default)]
    pub errors: Option<f64>,
    /// Sessions running, the mean of the window's polls.
    #[serde(default)]
    pub running: f64,
}

impl Window {
    pub(crate) fn rate(&self) -> f64 {
        self.statements / self.seconds.max(1e-9)
    }

    pub(crate) fn cpu_us_per_statement(&self) -> f64 {
        1e6 * self.cpu_s / self.statements.max(1.0)
    }

    /// Each shape's share of the window's statements.
    pub(crate) fn shares(&self) -> Vec<f64> {
        let n: f64 = self.shapes.iter().sum();
        self.shapes.iter().map(|c| c / n.max(1.0)).collect()
    }
}

/// A live run's record: results.json's `live` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveResults {
    /// The features, in the order of their estimates.
    pub features: Vec<String>,
    /// The schedule (window i is `slots[i]`).
    pub slots: Vec<Slot>,
    /// What each window measured, in the order run (a run a guard ended holds fewer).
    pub windows: Vec<Window>,
    /// Each window's start, seconds from the run's start.
    pub window_start_s: Vec<f64>,
    /// What the work counter counts: "statements" or "transactions".
    pub work: String,
    /// Whether the server's CPU was read (this host, or `--server-host`'s probe).
    pub cpu_read: bool,
    /// The estimates, one per feature.
    pub estimates: Vec<LiveEstimate>,
    /// The guard that ended the run, in words.
    pub guard_tripped: Option<String>,
    /// The sessions running in the window that read the server as found (its polls' mean).
    pub running_as_found: f64,
    /// dbtax's own polls: how many, and their mean round trip, µs (an upper bound of the
    /// server's CPU for each).
    pub polls: u64,
    /// Mean round trip of a poll, µs.
    pub poll_us: f64,
    /// The server's own CPU for each of dbtax's polls, µs, read from the server thread or
    /// backend that ran them; None where the server does not say which that is.
    #[serde(default)]
    pub poll_server_us: Option<f64>,
    /// Where the statement times per shape came from (a table's name), or why they were not
    /// read.
    #[serde(default)]
    pub shapes_source: String,
    /// Whether `shapes_source` names a table that was read.
    #[serde(default)]
    pub shapes_read: bool,
    /// How many shapes were compared (the busiest as the server was found).
    #[serde(default)]
    pub shapes: usize,
    /// Their calls per unit of `work` in the measured windows: the share of the statements
    /// the latency is of (MariaDB leaves out of its digests the statements executed through
    /// the binary protocol); on PostgreSQL, statements per transaction.
    #[serde(default)]
    pub shapes_share: f64,
    /// Reads of the shapes' table, and their mean round trip, ms (PostgreSQL's holds its
    /// lock in share mode for that long: a new shape waits to enter).
    #[serde(default)]
    pub shape_reads: u64,
    /// Mean round trip of a read of the shapes' table, ms.
    #[serde(default)]
    pub shape_read_ms: f64,
    /// What the reader must know.
    pub notes: Vec<String>,
}

/// An estimate with its 95% interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The point estimate.
    pub value: f64,
    /// The interval's ends.
    pub ci95: (f64, f64),
    /// Degrees of freedom of the t quantile.
    pub df: usize,
}

impl Interval {
    /// Whether the interval holds `x`.
    pub fn covers(&self, x: f64) -> bool {
        self.ci95.0 <= x && x <= self.ci95.1
    }
}

/// A pair left out of the estimates, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetAside {
    /// The pair.
    pub pair: usize,
    /// Why, in words.
    pub why: String,
}

/// What a live run found for one feature.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveEstimate {
    /// The feature's index.
    pub feature: usize,
    /// Server CPU added per statement, µs (at no difference in rate or mix between the
    /// sides: the baseline's traffic).
    pub cpu_us_per_statement: Option<Interval>,
    /// The same as a % of the off windows' CPU per statement.
    pub cpu_pct: Option<Interval>,
    /// Log bytes per statement in the on windows (less the off windows').
    pub log_bytes_per_statement: Option<Interval>,
    /// Latency added per statement, µs, each shape's difference weighed by the off windows'
    /// mix; `None` where the server gives no latencies per shape.
    pub latency_us: Option<Interval>,
    /// The off windows' statements per second (production's rate while measured).
    pub rate: f64,
    /// The bill at that rate: cores the feature takes (from the CPU interval).
    pub cores: Option<Interval>,
    /// And GB of log a day.
    pub log_gb_per_day: Option<Interval>,
    /// The minimum detectable effect of the CPU figure, % of the off windows' CPU per
    /// statement: the cost a two-sided 5% test on these pairs detects 80% of the time.
    #[serde(default)]
    pub mde_pct: Option<f64>,
    /// What the CPU figure's interval lets a DBA say, as `run`'s verdicts (Holm's
    /// adjustment over the run's features).
    #[serde(default)]
    pub verdict: Option<crate::results::Verdict>,
    /// Pairs used.
    pub pairs: usize,
    /// Pairs set aside, with why.
    pub set_aside: Vec<SetAside>,
}
