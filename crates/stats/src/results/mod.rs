//! The one set of result types every output is derived from (table, JSON, CSV, HTML), as in
//! hyperfine's `BenchmarkResult`. Field names are a contract: users' scripts and the tests
//! read them, and `schema/results.schema.json` (every test that writes results checks it)
//! describes them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod agents;
mod analysis;
mod capacity;
mod estimate;
mod fingerprints;
pub mod live;
pub use agents::{AgentInfo, AgentTrial, Coordination, ServerHost};
pub use analysis::{Analysis, CarryOverTerm, DisturbedBlock, Interaction, Robust, Transient};
pub use capacity::{Capacity, CapacityStep, Quantile, Slo};
pub use estimate::{CpuDelta, Estimate};
pub use fingerprints::{FingerprintCost, FingerprintDelta, TrialFingerprint};

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
    /// 99.9th percentile, ms (absent in results written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999: Option<f64>,
    /// Slowest event, ms.
    pub max: f64,
}

/// One measured run of one variant at one thread count.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Trial {
    /// The block (round) it belongs to, from 0: trials of one block are paired.
    #[serde(default)]
    pub block: u32,
    /// Its place within the block, from 0.
    #[serde(default)]
    pub position: u32,
    /// When it started (RFC 3339 UTC, milliseconds).
    #[serde(default)]
    pub started_at: String,
    /// The variant of the trial run just before it (the warm-up round's included): what a
    /// carry-over would come from. Absent for the very first trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The variant of the trial two before it: what a carry-over lasting two trials would
    /// come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after2: Option<String>,
    /// How long the warm-up after the switch ran before the throughput was steady, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_s: Option<f64>,
    /// Statements per second in the first and the second half of the measured window: a
    /// transient the warm-up did not wait out shows as a slower first half.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halves_qps: Option<[f64; 2]>,
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
    /// The OS threads of this process that drove the connections: `threads` when each has its
    /// own, fewer under the event loop; absent when agents made the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_threads: Option<u32>,
    /// The server process's CPU per statement, µs; null when the server is not local.
    pub server_cpu_us_per_query: Option<f64>,
    /// Growth of the feature's log files per statement, bytes; null when unknown.
    pub log_bytes_per_query: Option<f64>,
    /// Write-ahead log per statement, bytes: PostgreSQL's WAL (pg_current_wal_insert_lsn()
    /// before and after), or the MySQL family's binary log (Binlog_bytes_written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_bytes_per_query: Option<f64>,
    /// Other clients' statements during the trial, in percent of dbtax's own (from the
    /// server's `Questions`), when above 5%: the server CPU per query is then withheld.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_clients_pct: Option<f64>,
    /// PostgreSQL: sessions of other clients that ran statements during the trial (the
    /// server CPU per query is then withheld).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_sessions: Option<u32>,
    /// CPU used on the server's host during the measured window by processes other than the
    /// server and dbtax, percent of one core (100: a whole core). Null when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_other_cpu_pct: Option<f64>,
    /// The same on the client's host, when the server runs elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_host_other_cpu_pct: Option<f64>,
    /// Server status counters that matter (Com_*, Innodb_data_fsyncs, Binlog_bytes_written),
    /// as increments per statement over the measured window.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_counters_per_query: BTreeMap<String, f64>,
    /// Rate mode: the asked and the achieved rate (`latency_ms` is then measured from each
    /// event's intended start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<TrialRate>,
    /// Rate mode: latency from each event's actual send (what a closed-loop tool reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_latency_ms: Option<LatencyMs>,
    /// Rate mode: how late sends were against their intended starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag_ms: Option<LagMs>,
    /// Load from agents: each agent's part of the trial (the fields above are the merge:
    /// counts summed, histograms added). Absent when this process made the load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentTrial>,
    /// Load from agents: the worst skew between an agent's measured window and the
    /// coordinator's (start or end, plus half the round trip the clock offset is known to), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_skew_ms: Option<f64>,
    /// The skew exceeded a tenth of the window: the agents did not measure the same time.
    #[serde(default, skip_serializing_if = "is_false")]
    pub skewed: bool,
    /// Load from agents: what coordinating them cost this process over the whole trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordination: Option<Coordination>,
    /// A replay: latency by fingerprint (the most frequent ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fingerprints: Vec<TrialFingerprint>,
}

/// Rate mode: what was asked of a trial and what it achieved.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TrialRate {
    /// Events per second asked, in total over the client threads.
    pub asked: f64,
    /// Events per second completed in the measured window.
    pub achieved: f64,
    /// Events skipped because they would have been sent too late (--skip-late).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: u64,
    /// Mean schedule lag in the last quarter of the measured window minus the first, ms.
    #[serde(default)]
    pub lag_growth_ms: f64,
    /// The server did not keep up: achieved below 95% of asked, or a growing lag.
    pub saturated: bool,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Schedule lag percentiles, ms.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LagMs {
    /// Median lag.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest lag.
    pub max: f64,
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
    /// `--rate N%`: the closed-loop capacity measured first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// The agents that made the load (`--agents`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_hosts: Vec<AgentInfo>,
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
    /// Plugins loaded only while this variant runs (the baseline runs without them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<String>,
}

/// The overhead of a variant against the baseline at the same thread count.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Overhead {
    /// 100 × (1 − qps_variant / qps_baseline): positive means the feature costs throughput.
    pub pct: f64,
    /// 95% confidence interval of `pct`, [low, high] (per interval, not adjusted).
    pub ci95_pct: [f64; 2],
    /// Whether the overhead differs from 0 with Holm's adjustment over every interval the
    /// experiment reports (otherwise: "within noise").
    pub significant: bool,
    /// Paired blocks the estimate is based on.
    pub blocks: u32,
    /// Two-sided p-value of "no overhead" (t test on the paired log ratios), unadjusted.
    #[serde(default = "one")]
    pub p_value: f64,
    /// The robust companion of the same paired log ratios (`robust_method` says which), in
    /// percent, with its own test in the same Holm family; null when too few blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub robust: Option<Robust>,
    /// Blocks (numbers, from 0) whose paired ratio is an outlier (modified z-score > 3.5).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outlier_blocks: Vec<u32>,
    /// The minimum detectable effect: the cost, in percent, that this cell's own spread
    /// would detect 80% of the time at the 5% level ((t₀.₉₇₅ + t₀.₈₀) standard errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mde_pct: Option<f64>,
    /// What the interval lets a DBA say (decided after Holm's adjustment); absent in
    /// results written before verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// What an overhead's interval lets a DBA say, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A cost: the interval is clear of zero after Holm's adjustment over every figure of
    /// the run, and above it.
    Cost,
    /// A gain: as a cost, below zero.
    Gain,
    /// Clear of zero on its own but not once adjusted for every figure of the run: likely,
    /// not counted as measured.
    Likely,
    /// The whole interval lies within ± the negligible threshold (`--negligible`, 2%).
    Negligible,
    /// The interval spans zero: the cost is at most its upper end.
    AtMost,
    /// The interval spans zero and this run could not detect a cost below
    /// `verdicts::UNSTABLE_MDE_PCT`: the machine is too noisy for the budget.
    Unstable,
}

fn one() -> f64 {
    1.0
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
    /// Trials of blocks excluded as disturbed (`disturbed_blocks`): kept, in no figure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_trials: Vec<Trial>,
    /// Why a non-baseline cell has no interval when blocks of it were set aside as
    /// disturbed ("2 of 5 blocks were disturbed (…)"): never a bare null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_interval: Option<String>,
    /// Median of the trials' qps.
    pub qps_median: f64,
    /// Median of the trials' p95 latency, ms.
    pub p95_ms_median: f64,
    /// Median server CPU per statement, µs (null when not local).
    pub server_cpu_us_per_query_median: Option<f64>,
    /// Median log bytes per statement (null when unknown).
    pub log_bytes_per_query_median: Option<f64>,
    /// Median WAL (or binary log) bytes per statement, when the server tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_bytes_per_query_median: Option<f64>,
    /// Throughput overhead against the baseline; null for the baseline.
    pub overhead: Option<Overhead>,
    /// Extra server CPU per statement against the baseline, µs, with its 95% CI: a second,
    /// often steadier, estimate of the cost. Null for the baseline or when not local.
    pub server_cpu_delta_us: Option<CpuDelta>,
    /// Trials whose server CPU per query was withheld (other clients ran statements): their
    /// blocks drop out of `server_cpu_delta_us` and the median, the others keep them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub server_cpu_withheld_trials: u32,
    /// Median measured time of a trial, s (with a fixed query count: the total time).
    #[serde(default)]
    pub duration_s_median: f64,
    /// Multi-factor experiments: this variant's overhead due to each factor alone, against
    /// the variant that differs from it only in that factor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<FactorEffect>,
    /// Rate mode: the rate this cell ran at, and whether it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<CellRate>,
    /// Rate mode: what the variant adds to the latency percentiles (from each event's
    /// intended start) against its baseline at the same threads and rate: per block the
    /// difference of the two trials' percentiles, with a t interval over blocks. Null for the
    /// baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_delta_ms: Option<LatencyDelta>,
    /// A replay: what the variant added to each fingerprint's statements, the costliest
    /// first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fingerprints: Vec<FingerprintCost>,
}

/// Rate mode: a cell's rate.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CellRate {
    /// The level as asked: "50%" (of the calibrated capacity) or "2000/s".
    pub level: String,
    /// Events per second asked.
    pub asked: f64,
    /// Median of the trials' achieved events per second.
    pub achieved_median: f64,
    /// Trials that did not keep up (achieved below 95% of asked, or a growing lag).
    pub saturated_trials: u32,
    /// The variant cannot sustain this rate: most of its trials were saturated.
    pub saturated: bool,
    /// Median of the trials' p50 latency, ms (from the intended start).
    pub p50_ms_median: f64,
    /// Median of the trials' p99 latency, ms (from the intended start).
    pub p99_ms_median: f64,
    /// Median server CPU utilisation over the trials, in cores (server CPU per query ×
    /// queries per second); null when not local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cores_median: Option<f64>,
}

/// Rate mode: added latency at two percentiles, ms.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencyDelta {
    /// Added median latency.
    pub p50: Estimate,
    /// Added 99th-percentile latency.
    pub p99: Estimate,
}

/// Rate mode: the baseline's capacity in closed loop at one thread count, measured before
/// the first trial; a rate level such as "50%" is a share of it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// Client threads.
    pub threads: u32,
    /// Events per second in closed loop.
    pub capacity_tps: f64,
    /// Statements per second in closed loop.
    pub capacity_qps: f64,
    /// Measured seconds.
    pub duration_s: f64,
}

impl Calibration {
    /// The capacity a closed-loop trial at `threads` measured.
    pub fn of(threads: u32, t: &Trial) -> Calibration {
        Calibration {
            threads,
            capacity_tps: t.tps,
            capacity_qps: t.qps,
            duration_s: t.duration_s,
        }
    }
}

/// Rate mode: how the run's load was set.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RateRun {
    /// The rate levels as asked ("50%", "2000/s").
    pub levels: Vec<String>,
    /// "poisson" or "uniform".
    pub arrival: String,
    /// Events later than this were skipped and counted (ms); null: none skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_late_ms: Option<f64>,
    /// The capacity measured at each thread count (empty when every level is absolute).
    #[serde(default)]
    pub calibration: Vec<Calibration>,
    /// The production server's cores, as the user gave them (`--production-cores`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub production_cores: Option<u32>,
}

/// Rate mode: what a variant costs at one load point, as a production bill (the per-query
/// figures measured there, times the rate), each difference paired by block against the
/// baseline with its 95% interval.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Bill {
    /// The variant billed.
    pub variant: String,
    /// Client threads.
    pub threads: u32,
    /// The rate level as asked ("2000/s", "50%").
    pub level: String,
    /// Statements per second the variant ran there (median of its trials).
    pub rate: f64,
    /// Server CPU added, in cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_cores: Option<Estimate>,
    /// The cores the server could use where it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<u32>,
    /// `cpu_cores` as a share of `server_cores`, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<Estimate>,
    /// Feature log written, bytes a day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes_per_day: Option<Estimate>,
    /// WAL (or binary log) added, bytes a day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_bytes_per_day: Option<Estimate>,
    /// Added latency at p50 and p99, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_delta_ms: Option<LatencyDelta>,
    /// Why these figures are a lower bound for production, in words (none: no reason seen).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lower_bound: Vec<String>,
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
    /// The seed of the trial order: the same seed replays the same order.
    #[serde(default)]
    pub seed: u64,
    /// `--compare-target`: the other server of the comparison (its address, password
    /// hidden). Both ran in the same blocks, so B/A is paired block by block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_with: Option<String>,
    /// The thread count the headline is about, fixed before the run.
    #[serde(default)]
    pub headline_threads: u32,
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
    /// Where the server and dbtax's load ran when they shared this machine (null: the server
    /// is elsewhere, or its process was not found).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Cpus>,
    /// Server and load ran on disjoint CPUs.
    #[serde(default)]
    pub pinned: bool,
    /// The user accepted feature logs growing unwatched on a server not on this machine.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unguarded_logs: bool,
    /// The database's host, when a probe read it (`--server-host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host: Option<ServerHost>,
    /// What was estimated over every cell: carry-over, interactions, residual transients,
    /// and the family of intervals Holm's adjustment was made over.
    #[serde(flatten)]
    pub analysis: Analysis,
    /// Rate mode (open loop): the levels, the arrivals and the calibration. Null: closed
    /// loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateRun>,
    /// Rate mode: each variant's bill at each load point (`stats::bill`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bill: Vec<Bill>,
    /// `--slo`: each variant's capacity at each latency objective, with the search's steps
    /// (`experiment::capacity`, `stats::capacity`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity: Vec<Capacity>,
    /// The hosts that made the load (`--agents`), as they introduced themselves; absent when
    /// this process made it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentInfo>,
    /// A live run's record (`dbtax live`): its windows, estimates and guards. Absent from
    /// every other run's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<live::LiveResults>,
}

impl Results {
    /// Whether a variant is compared with nothing: its own baseline (in results written
    /// before `baseline` was recorded, the first variant). The one rule every view uses.
    pub fn is_baseline(&self, variant: &str) -> bool {
        self.variants
            .iter()
            .enumerate()
            .find(|(_, v)| v.name == variant)
            .is_some_and(|(i, v)| v.baseline == v.name || (v.baseline.is_empty() && i == 0))
    }
}

/// Where server and load ran, as results.json records it (`cpus`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Cpus {
    /// The CPUs the server's threads may run on.
    pub server: Vec<usize>,
    /// The CPUs dbtax's load threads may run on.
    pub load: Vec<usize>,
}

impl Cpus {
    /// Whether some CPU is in both sets.
    pub fn shared(&self) -> bool {
        self.server.iter().any(|c| self.load.contains(c))
    }
}
