//! What an experiment is, once validated: variants, thread counts, trial lengths, the stop
//! rule. Built by `config` from flags, files and presets; resolved against a server by
//! `preflight` into a `Plan`.

use crate::agent::AgentSpec;
use crate::error::usage;
use crate::server::{registry, validate_identifier};
use crate::workload::Workload;
use anyhow::Result;
pub use dbtax_stats::design::{
    DEFAULT_BLOCKS, Design, Focus, MAX_BLOCKS, MAX_DISTURBANCE, MAX_QUERIES_PER_TRIAL, MAX_TRIAL,
    MIN_BLOCKS, OpenLoop, Point, RateLevel, StopRule, VariantSpec, product, variants_for_features,
};
use std::time::Duration;

/// Parse a rate level: "2000" (events/s) or "50%" (of the measured capacity).
pub fn parse_rate(s: &str) -> Result<RateLevel> {
    let t = s.trim();
    let bad = || {
        usage(format!(
            "bad rate '{t}': write events per second (--rate 2000) or a share of the \
                 measured capacity (--rate 50%, or a list: --rate 25%,50%,80%)"
        ))
    };
    if let Some(p) = t.strip_suffix('%') {
        let p: f64 = p.trim().parse().map_err(|_| bad())?;
        if !(p > 0.0 && p <= 200.0) {
            return Err(usage(format!(
                "bad rate '{t}': a share of capacity between 0% and 200%"
            )));
        }
        Ok(RateLevel::Capacity(p / 100.0))
    } else {
        let r: f64 = t.trim_end_matches("/s").parse().map_err(|_| bad())?;
        if !(r.is_finite() && r > 0.0 && r <= 1e8) {
            return Err(usage(format!(
                "bad rate '{t}': events per second, more than 0 and at most 100000000"
            )));
        }
        Ok(RateLevel::PerSecond(r))
    }
}

/// Parse a comma-separated list of rate levels.
pub fn parse_rates(s: &str) -> Result<Vec<RateLevel>> {
    s.split(',').map(parse_rate).collect()
}

/// Declares the experiment once: its fields made by rules from several settings (with their
/// defaults), its plain settings (each a field of `Experiment` and of `Layer`, with its
/// default and how an experiment file writes it), and the raw settings the rules read (in
/// `Layer` only). One list, so a setting is declared here and nowhere else but its flag.
macro_rules! experiment {
    (
        made {
            $( $(#[$mm:meta])* $made:ident: $mty:ty = $mdefault:expr; )*
        }
        settings {
            $( $(#[$sm:meta])* $name:ident: $ty:ty = $default:expr, file $parse:expr; )*
        }
        raw {
            $( $(#[$rm:meta])* $raw:ident: $rty:ty, file $rparse:expr; )*
        }
    ) => {
        /// A validated experiment.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Experiment {
            $( $(#[$mm])* pub $made: $mty, )*
            $( $(#[$sm])* pub $name: $ty, )*
        }

        /// What one way into an experiment says (the flags of `dbtax run`, an experiment file,
        /// a preset): every setting optional. `config::merge` lays them over the defaults.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct Layer {
            $( $(#[$sm])* pub $name: Option<$ty>, )*
            $( $(#[$rm])* pub $raw: Option<$rty>, )*
        }

        impl Experiment {
            /// Every field at its default: what an experiment is before any layer.
            pub fn defaults() -> Experiment {
                Experiment {
                    $( $made: $mdefault, )*
                    $( $name: $default, )*
                }
            }

            /// Take the plain settings `layer` gives (each replaces the current value); the raw
            /// ones stay in `layer` for the rules.
            pub fn take_settings(&mut self, layer: &mut Layer) {
                $( if let Some(v) = layer.$name.take() { self.$name = v; } )*
            }
        }

        impl Layer {
            /// The keys an experiment file may give (besides its sections).
            pub const KEYS: &'static [&'static str] =
                &[$( stringify!($name), )* $( stringify!($raw), )*];

            /// An experiment file's keys, each read by its own parser (the file's errors
            /// name the key); what is left of `table` is not a setting.
            pub fn from_table(table: &mut toml::Table) -> Result<Layer> {
                Ok(Layer {
                    $( $name: match table.remove(stringify!($name)) {
                        Some(v) => Some(($parse)(stringify!($name), v)?),
                        None => None,
                    }, )*
                    $( $raw: match table.remove(stringify!($raw)) {
                        Some(v) => Some(($rparse)(stringify!($raw), v)?),
                        None => None,
                    }, )*
                })
            }
        }
    };
}

experiment! {
    made {
        /// What clients do.
        workload: Workload = Workload::default();
        /// How many blocks (from `repeats`, `precision`, `budget`).
        stop: StopRule = StopRule::Repeats(DEFAULT_BLOCKS);
        /// Variants; the first is the baseline.
        variants: Vec<VariantSpec> = vec![];
        /// Rate mode (open loop) instead of closed loop (from `rate`, `arrival`, `skip_late`).
        open_loop: Option<OpenLoop> = None;
        /// Client hosts that make the load (`--agents`, the file's `agents = [...]`); empty:
        /// this process makes it.
        agents: Vec<AgentSpec> = vec![];
        /// The database's host, read through a probe started there (`--server-host`), and
        /// the binary it runs.
        server_host: Option<(AgentSpec, crate::agent::AgentBin)> = None;
        /// With two variants, blocks of one each instead of the extra-period blocks
        /// (`order::extra_period`): the design before it, kept so that the statistics suite
        /// can show what it gets wrong. No flag sets it.
        one_each_blocks: bool = false;
    }
    settings {
        /// Name (results directory, report title); empty: made from the variants.
        name: String = String::new(), file file_value::plain;
        /// `target` from the file, if any (flags override).
        target: Option<String> = None, file file_value::some;
        /// Thread counts.
        threads: Vec<u32> = vec![1, 4, 16, 64], file file_value::plain;
        /// Measured time per trial. Short adjacent trials pair better than long ones on a
        /// drifting machine (bench/precision.sh; docs/method.md, "How precise can it be here?").
        trial: Duration = Duration::from_secs(1), file file_value::duration;
        /// The longest settle after each switch (it ends sooner once the throughput of
        /// successive 100 ms windows shows no trend: load::settle).
        warmup: Duration = Duration::from_secs(1), file file_value::duration;
        /// Stop before the feature logs grow by more than this.
        max_log_bytes: Option<u64> = None, file file_value::bytes;
        /// Latency objectives (`--slo p99=5ms`): the run finds each variant's capacity at
        /// each instead of measuring at fixed loads (`experiment::capacity`).
        slo: Vec<crate::results::Slo> = vec![], file file_value::slos;
        /// Rate mode's bill: the production server's cores, when it has more than the one
        /// measured (`--production-cores`): the figures are then a lower bound.
        production_cores: Option<u32> = None, file file_value::some;
        /// On a server not on this machine, switch features that write a log file although
        /// dbtax cannot watch it (`--unguarded-logs`): otherwise such a run is refused.
        unguarded_logs: bool = false, file file_value::plain;
        /// Seed for the trial order (0: one is drawn from the clock).
        seed: u64 = 0, file file_value::plain;
        /// Trials run this many statements each (mysqlslap style) instead of for `trial`.
        queries_per_trial: Option<u64> = None, file file_value::some;
        /// Managed targets: server options for every variant (e.g. the binary log).
        server_opts: Vec<String> = vec![], file file_value::plain;
        /// The thread count the headline is about (None: the highest), fixed before the run.
        headline_threads: Option<u32> = None, file file_value::some;
        /// The cost below which a feature is negligible to the user, percent
        /// (`--negligible`): the words then say whether "at most" is below it. None: 2%, and
        /// "negligible" only when the whole interval lies within ±2%.
        negligible: Option<f64> = None, file file_value::negligible;
        /// Run every variant once at every thread count before the first measured block (not
        /// counted): the first measured trials then meet a warm server and warm caches.
        warmup_round: bool = true, file file_value::plain;
        /// A block in which other processes used more CPU than this (percent of one core) on
        /// the server's or the client's host is excluded as a whole and run again
        /// (`--max-disturbance`); None: never.
        max_disturbance: Option<f64> = Some(MAX_DISTURBANCE), file file_value::disturbance;
        /// How long the probe on the server's host may stay silent before the run stops
        /// (`--probe-silence`); a reading later than 15 s (or this, when shorter) costs only
        /// its trial.
        probe_silence: Duration = crate::agent::probe::SILENCE, file file_value::duration;
    }
    raw {
        /// Blocks per thread count (the stop rule).
        repeats: u32, file file_value::plain;
        /// The precision goal, in percentage points (the stop rule).
        precision: f64, file file_value::plain;
        /// The precision goal's time budget (the stop rule).
        budget: Duration, file file_value::duration;
        /// Rate mode's load levels.
        rate: Vec<RateLevel>, file file_value::rates;
        /// How rate mode spaces arrivals.
        arrival: String, file file_value::plain;
        /// Rate mode skips (and counts) events later than this.
        skip_late: Duration, file file_value::duration;
        /// The agents, as written (`ssh://host*2`, `local`).
        agents: Vec<String>, file file_value::plain;
        /// The database's host, as written (`ssh://host`).
        server_host: String, file file_value::plain;
        /// The workload, whole (a file's table, a preset's).
        workload: Workload, file file_value::not_a_key;
        /// The variants, whole (a file's sections, `--feature`, a preset's).
        variants: Vec<VariantSpec>, file file_value::not_a_key;
    }
}

/// How an experiment file writes each setting's value: a usage error names the key.
mod file_value {
    use crate::error::usage;
    use anyhow::Result;
    use serde::de::DeserializeOwned;
    use std::time::Duration;

    /// The value as its own type (a number, a string, a list...).
    pub fn plain<T: DeserializeOwned>(key: &str, v: toml::Value) -> Result<T> {
        v.try_into()
            .map_err(|e| usage(format!("bad {key}: {}", e.to_string().trim())))
    }

    /// A setting whose absence has a meaning of its own: given, it is `Some`.
    pub fn some<T: DeserializeOwned>(key: &str, v: toml::Value) -> Result<Option<T>> {
        plain(key, v).map(Some)
    }

    /// "3s", "500ms", "2m".
    pub fn duration(key: &str, v: toml::Value) -> Result<Duration> {
        crate::units::parse_duration(key, &plain::<String>(key, v)?)
    }

    /// "2G", "500M", or a number of bytes.
    pub fn bytes(key: &str, v: toml::Value) -> Result<Option<u64>> {
        let text = match v {
            toml::Value::Integer(i) => i.to_string(),
            v => plain::<String>(key, v)?,
        };
        crate::units::parse_bytes(key, &text).map(Some)
    }

    /// A string, or a number written as one ("10%", 10, 2.5).
    fn as_text(v: &toml::Value) -> String {
        match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(x) => x.to_string(),
            other => other.to_string(),
        }
    }

    /// A cost in percent ("2%", 2, 0.5).
    pub fn negligible(key: &str, v: toml::Value) -> Result<Option<f64>> {
        crate::units::percent(&as_text(&v))
            .map(Some)
            .map_err(|e| usage(format!("bad {key}: {e}")))
    }

    /// A percentage of one core, or "off".
    pub fn disturbance(key: &str, v: toml::Value) -> Result<Option<f64>> {
        crate::units::disturbance(&as_text(&v))
            .map(|l| l.0)
            .map_err(|e| usage(format!("bad {key}: {e}")))
    }

    /// `rate = "50%"`, `rate = 2000`, or a list of either.
    pub fn rates(key: &str, v: toml::Value) -> Result<Vec<super::RateLevel>> {
        match v {
            toml::Value::Array(items) => Ok(items
                .into_iter()
                .map(|i| rates(key, i))
                .collect::<Result<Vec<_>>>()?
                .concat()),
            toml::Value::Integer(i) => super::parse_rates(&i.to_string()),
            toml::Value::Float(x) => super::parse_rates(&x.to_string()),
            toml::Value::String(s) => super::parse_rates(&s),
            other => Err(usage(format!(
                "bad {key}: give events per second or a share of capacity, not {other}"
            ))),
        }
    }

    /// `slo = ["p99 <= 5ms"]` or `slo = "p99=5ms"`.
    pub fn slos(key: &str, v: toml::Value) -> Result<Vec<crate::results::Slo>> {
        match v {
            toml::Value::Array(items) => Ok(items
                .into_iter()
                .map(|i| slos(key, i))
                .collect::<Result<Vec<_>>>()?
                .concat()),
            toml::Value::String(s) => s
                .split(',')
                .map(|one| crate::results::Slo::parse(one).map_err(|e| usage(format!("{e:#}"))))
                .collect(),
            other => Err(usage(format!(
                "bad {key}: give latency objectives as strings, as slo = [\"p99 <= 5ms\"], not {other}"
            ))),
        }
    }

    /// Settings a file writes in sections of their own (`workload = {...}`, `[[variant]]`,
    /// `[[factor]]`), read before the plain keys: met here, the key is misspelled.
    pub fn not_a_key<T>(key: &str, _: toml::Value) -> Result<T> {
        Err(usage(format!(
            "unknown field `{key}`: write a `workload = {{ kind = ... }}` table, and \
             [[variant]] or [[factor]] sections"
        )))
    }
}

impl Experiment {
    /// The experiment's design: what `run::run` drives (the load is this crate's).
    pub fn design(&self) -> Design {
        Design {
            name: self.name.clone(),
            variants: self.variants.clone(),
            threads: self.threads.clone(),
            trial: self.trial,
            warmup: self.warmup,
            stop: self.stop.clone(),
            open_loop: self.open_loop.clone(),
            seed: self.seed,
            max_disturbance: self.max_disturbance,
            warmup_round: self.warmup_round,
            one_each_blocks: self.one_each_blocks,
            headline_threads: self.headline_threads,
            negligible: self.negligible,
            slo: self.slo.clone(),
        }
    }

    /// Every load point: each thread count, and in rate mode each rate level at it.
    pub fn points(&self) -> Vec<Point> {
        self.design().points()
    }

    /// The thread count the headline reports: the declared one, else the highest.
    pub fn headline_threads(&self) -> u32 {
        self.design().headline_threads()
    }

    /// Blocks per thread count that are planned (precision mode: the minimum).
    pub fn planned_blocks(&self) -> u32 {
        self.design().planned_blocks()
    }

    /// Blocks planned at one thread count before any precision extension.
    pub fn planned_blocks_at(&self, threads: u32) -> u32 {
        self.design().planned_blocks_at(threads)
    }

    /// Each variant's trials in one block: two with two variants (`order::extra_period`).
    pub fn repeats_per_block(&self) -> u32 {
        self.design().repeats_per_block()
    }

    /// Measured trials planned before any precision extension.
    pub fn planned_trials(&self) -> usize {
        self.design().planned_trials()
    }

    /// The same experiment on two servers at once (`--compare-target`): A's variants
    /// ("A:off", "A:general-log"...) then B's, each compared with its own server's baseline,
    /// all in the same blocks.
    pub fn on_two_servers(&self) -> Experiment {
        let nv = self.variants.len();
        let side = |prefix: &'static str, shift: usize| {
            self.variants.iter().map(move |v| VariantSpec {
                name: format!("{prefix}:{}", v.name),
                baseline: v.baseline + shift,
                effects: v
                    .effects
                    .iter()
                    .map(|(f, i)| (f.clone(), i + shift))
                    .collect(),
                ..v.clone()
            })
        };
        Experiment {
            variants: side("A", 0).chain(side("B", nv)).collect(),
            ..self.clone()
        }
    }

    /// Check everything a server does not need to be asked about.
    pub fn validate(&self) -> Result<()> {
        validate_name("experiment name", &self.name)?;
        self.workload.validate()?;
        agents_time_their_trials(&self.agents, self.queries_per_trial)?;
        if self.variants.len() < 2 {
            return Err(usage(
                "nothing to compare: give --feature NAME (compared with off), or an experiment \
                 file with at least two [[variant]] sections (the first is the baseline)",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for v in &self.variants {
            validate_name("variant name", &v.name)?;
            if !seen.insert(v.name.as_str()) {
                return Err(usage(format!("two variants are named '{}'", v.name)));
            }
            for f in &v.features {
                registry::validate_feature_name(f)?;
            }
            for o in &v.server_opts {
                if !o.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
                    return Err(usage(format!(
                        "bad server option '{o}' in variant '{}': write name=value",
                        v.name
                    )));
                }
            }
            for (k, _) in &v.set {
                validate_identifier(&format!("variable in variant '{}'", v.name), k)?;
            }
        }
        if self.threads.is_empty() || self.threads.contains(&0) {
            return Err(usage(
                "--threads needs one or more thread counts, each at least 1",
            ));
        }
        if self.threads.iter().any(|&t| t > 4096) {
            return Err(usage("--threads: at most 4096 clients"));
        }
        if self.queries_per_trial == Some(0) {
            return Err(usage("queries per trial must be at least 1"));
        }
        if self
            .queries_per_trial
            .is_some_and(|n| n > MAX_QUERIES_PER_TRIAL)
        {
            return Err(usage(format!(
                "--queries-per-trial: at most {MAX_QUERIES_PER_TRIAL} statements a trial (a \
                 trial runs in minutes at most: at a million statements a second that one \
                 takes {} minutes)",
                MAX_QUERIES_PER_TRIAL / 60_000_000
            )));
        }
        if self.trial.is_zero() {
            return Err(usage("--trial must be longer than 0"));
        }
        if self.trial > MAX_TRIAL || self.warmup > MAX_TRIAL {
            return Err(usage(format!(
                "--trial and --warmup: at most {} s each (short adjacent trials pair better)",
                MAX_TRIAL.as_secs()
            )));
        }
        if self.production_cores == Some(0) {
            return Err(usage("--production-cores must be at least 1"));
        }
        if self.max_log_bytes == Some(0) {
            return Err(usage(
                "--max-log-bytes must be more than 0: a feature's log grows from the first query",
            ));
        }
        if self.probe_silence < std::time::Duration::from_secs(1) {
            return Err(usage(
                "--probe-silence must be at least 1s: it is how long the probe on the \
                 server's host may stay silent before the run stops (a reading later than \
                 15 s, or than this bound when shorter, costs only its trial)",
            ));
        }
        if !self.slo.is_empty() {
            if self
                .open_loop
                .as_ref()
                .is_some_and(|o| !o.levels.is_empty())
            {
                return Err(usage(
                    "--slo finds the rate itself (each variant's highest rate within the \
                     objective); --rate/--at-rate measures at rates you choose (the bill): \
                     run them apart",
                ));
            }
            if self.queries_per_trial.is_some() || !self.agents.is_empty() {
                return Err(usage(
                    "--slo runs timed trials from this host: a fixed query count per trial \
                     or --agents do not go with it",
                ));
            }
            if self.slo.len() > 4 {
                return Err(usage("--slo: at most four objectives in one run"));
            }
            if matches!(self.stop, StopRule::Precision { .. }) {
                return Err(usage(
                    "--precision works on the throughput overhead of closed-loop trials; \
                     --slo searches for rates and stops by its own rule: give --repeats with \
                     --slo",
                ));
            }
        }
        if let Some(o) = &self.open_loop {
            if o.levels.is_empty() {
                return Err(usage("--rate needs at least one rate"));
            }
            if self.queries_per_trial.is_some() {
                return Err(usage(
                    "--rate and a fixed query count per trial do not go together: a rate \
                     runs for the trial's time",
                ));
            }
            if matches!(self.stop, StopRule::Precision { .. }) {
                return Err(usage(
                    "--precision works on the throughput overhead, which a fixed rate does \
                     not have: give --repeats N with --rate",
                ));
            }
        }
        if let Some(t) = self.headline_threads
            && !self.threads.contains(&t)
        {
            return Err(usage(format!(
                "headline_threads = {t} is not one of the thread counts {:?}",
                self.threads
            )));
        }
        Ok(())
    }
}

/// Agents run trials of a duration: a fixed count of statements per trial (`--queries`,
/// `queries_per_trial`) is not split across hosts.
pub fn agents_time_their_trials(agents: &[AgentSpec], queries: Option<u64>) -> Result<()> {
    if !agents.is_empty() && queries.is_some() {
        return Err(usage(
            "a fixed number of queries per trial (--queries, queries_per_trial) is not \
             available with agents: give trials a duration",
        ));
    }
    Ok(())
}

fn validate_name(what: &str, s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+/=".contains(c));
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "bad {what} '{s}': use letters, digits and - _ . + / = (at most 64)"
        )))
    }
}

/// How to carry out a run (not what it measures, nor how it is shown).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Results folder (default: `./dbtax-results/<time>-<name>/`).
    pub out: Option<std::path::PathBuf>,
    /// A command that restarts the user's server with $DBTAX_SERVER_OPTS.
    pub restart_cmd: Option<String>,
    /// The agents that make the load, and how to start them (none: this process).
    pub agents: crate::agent::AgentOptions,
    /// How this process's clients run (`--client-threads`; None: by the connection count).
    pub client_threads: Option<u32>,
}
