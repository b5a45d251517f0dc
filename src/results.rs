//! The one set of result types every output is derived from (table, JSON, CSV, HTML), as in
//! hyperfine's `BenchmarkResult`. Field names are the contract of DESIGN.md "Results".

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema tag written into every results.json.
pub const SCHEMA: &str = "dbtax/1";

/// Latency percentiles of one trial, per event (a query, or a transaction for OLTP mixes).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencyMs {
    /// Median event latency, ms.
    pub p50: f64,
    /// 95th percentile, ms.
    pub p95: f64,
    /// 99th percentile, ms.
    pub p99: f64,
    /// Slowest event, ms.
    pub max: f64,
}

/// One measured run of one variant at one thread count.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Trial {
    /// Statements per second over the measured window.
    pub qps: f64,
    /// Events (transactions for OLTP mixes, statement lists for `query`) per second.
    pub tps: f64,
    /// Statements completed in the measured window.
    pub queries: u64,
    /// Statements that failed in the measured window (the trial goes on).
    pub errors: u64,
    /// Failed statements counted by their error message.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_messages: BTreeMap<String, u64>,
    /// Length of the measured window, seconds.
    pub duration_s: f64,
    /// Event latency percentiles.
    pub latency_ms: LatencyMs,
    /// dbtax's own CPU (user + sys, all threads) per statement, µs.
    pub client_cpu_us_per_query: f64,
    /// The server process's CPU per statement, µs; null when the server is not local.
    pub server_cpu_us_per_query: Option<f64>,
    /// Growth of the feature's log files per statement, bytes; null when unknown.
    pub log_bytes_per_query: Option<f64>,
    /// Server status counters that matter (Com_*, Innodb_data_fsyncs, Binlog_bytes_written),
    /// as increments per statement over the measured window.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_counters_per_query: BTreeMap<String, f64>,
}

/// `dbtax bench --json`: one trial plus what was run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchOutput {
    /// The trial's fields, flattened.
    #[serde(flatten)]
    pub trial: Trial,
    /// The workload that was run.
    pub workload: serde_json::Value,
    /// Client threads (connections).
    pub threads: u32,
    /// The target, password redacted.
    pub target: TargetInfo,
}

/// What was measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TargetInfo {
    /// `managed:mariadb` or `mysql`.
    pub kind: String,
    /// `SELECT VERSION()`.
    pub server_version: String,
    /// The target URL, password redacted.
    pub url: String,
    /// Server variables relevant to the experiment, as found before any change.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, String>,
}

/// The machine dbtax ran on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostInfo {
    /// /proc/cpuinfo "model name".
    pub cpu_model: String,
    /// Logical CPUs.
    pub cores: u32,
    /// Physical memory.
    pub memory_bytes: u64,
    /// Kernel release.
    pub kernel: String,
}

/// dbtax itself.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ToolInfo {
    /// Cargo package version.
    pub version: String,
}

/// A variant as run: its name and the global settings it applies.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct VariantInfo {
    /// Variant name; the first is the baseline.
    pub name: String,
    /// Catalog feature switched on, if any (the first, in multi-factor experiments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<String>,
    /// The variant this one's overhead is computed against (its own name for a baseline).
    #[serde(default)]
    pub baseline: String,
    /// Restart-only server options of this variant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_opts: Vec<String>,
    /// Every global variable this variant sets, with its value.
    pub settings: BTreeMap<String, String>,
}

/// The overhead of a variant against the baseline at the same thread count.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Overhead {
    /// 100 × (1 − qps_variant / qps_baseline): positive means the feature costs throughput.
    pub pct: f64,
    /// 95% confidence interval of `pct`, [low, high].
    pub ci95_pct: [f64; 2],
    /// Whether the interval excludes 0 (otherwise: "within noise").
    pub significant: bool,
    /// Paired blocks the estimate is based on.
    pub blocks: u32,
}

/// All trials of one (variant, threads).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Cell {
    /// Variant name.
    pub variant: String,
    /// Client threads.
    pub threads: u32,
    /// Trials in block order.
    pub trials: Vec<Trial>,
    /// Median of the trials' qps.
    pub qps_median: f64,
    /// Median of the trials' p95 latency, ms.
    pub p95_ms_median: f64,
    /// Median server CPU per statement, µs (null when not local).
    pub server_cpu_us_per_query_median: Option<f64>,
    /// Median log bytes per statement (null when unknown).
    pub log_bytes_per_query_median: Option<f64>,
    /// Throughput overhead against the baseline; null for the baseline.
    pub overhead: Option<Overhead>,
    /// Extra server CPU per statement against the baseline, µs, with its 95% CI: a second,
    /// often steadier, estimate of the cost. Null for the baseline or when not local.
    pub server_cpu_delta_us: Option<Estimate>,
    /// Median measured time of a trial, s (with a fixed query count: the total time).
    #[serde(default)]
    pub duration_s_median: f64,
    /// Multi-factor experiments: this variant's overhead due to each factor alone, against
    /// the variant that differs from it only in that factor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<FactorEffect>,
}

/// One factor's overhead within the levels of the others.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FactorEffect {
    /// Factor name.
    pub factor: String,
    /// The variant compared against (this factor at its first level).
    pub against: String,
    /// The overhead; null when fewer than two paired blocks.
    pub overhead: Option<Overhead>,
}

/// A point estimate with a 95% interval.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Estimate {
    /// Point estimate.
    pub value: f64,
    /// 95% confidence interval.
    pub ci95: [f64; 2],
}

/// A whole experiment: results.json.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Results {
    /// Always "dbtax/1".
    pub schema: String,
    /// Experiment name.
    pub name: String,
    /// dbtax version.
    pub tool: ToolInfo,
    /// argv, passwords redacted.
    pub command: Vec<String>,
    /// RFC 3339 UTC start time.
    pub started_at: String,
    /// Whether every planned block ran (false after an interrupt or failure).
    pub complete: bool,
    /// The server measured.
    pub target: TargetInfo,
    /// The machine.
    pub host: HostInfo,
    /// The workload, as run.
    pub workload: serde_json::Value,
    /// Measured seconds per trial.
    pub trial_s: f64,
    /// Settle seconds after each switch.
    pub warmup_s: f64,
    /// Statements per trial when trials run a fixed count (mysqlslap style).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries_per_trial: Option<u64>,
    /// Variants; the first is the baseline.
    pub variants: Vec<VariantInfo>,
    /// One per (variant, threads).
    pub cells: Vec<Cell>,
    /// Things the reader should know (noisy client, cells short of the precision goal...).
    pub warnings: Vec<String>,
}
