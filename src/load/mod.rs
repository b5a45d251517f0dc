//! The load generator, behind one seam: a `Load` runs a trial's load and measures the server
//! around its window. `LocalLoad` is this process's own workers: one blocking thread per
//! connection ([`worker`]) or a few threads each multiplexing many connections through epoll
//! ([`evented`]), chosen by `execution`; [`trial`] runs either. The agents' pool (`agent::Pool`) is another
//! `Load`, on other hosts. A trial plan is plain data. What every `Load` shares: the measuring
//! window's loop ([`window`]), the readings around it ([`measure`]) and the merge of reports into
//! a `Trial` ([`reports`]). Nothing here knows the agents.

pub mod evented;
pub mod measure;
pub mod reports;
pub mod schedule;
pub mod settle;
pub mod trial;
pub mod window;
pub mod worker;

use crate::results::{AgentInfo, Trial};
use crate::server::Server;
use crate::workload::PreparedWorkload;
use anyhow::Result;
use std::path::PathBuf;
use std::time::Duration;

pub use dbtax_stats::run::TrialProgress;
pub use schedule::{Arrival, Rate};

/// How the clients of a trial run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Execution {
    /// One OS thread per connection, blocking.
    ThreadPerConnection,
    /// This many threads, each driving its share of the connections through epoll.
    EventLoop(usize),
}

/// How `connections` clients run here, as `asked` (`--client-threads`: None or Some(0) one
/// thread per connection; Some(n) the event loop on n threads).
///
/// One thread per connection, waiting for each answer in poll() as libmariadb and libpq do,
/// is what an application's connections look like to the server: each answer wakes the
/// thread that waits for it. The event loop spends less of the load's CPU (one thread
/// drives many connections, so an answer often finds it awake), and the server feels that:
/// at 32 connections MariaDB spent 10% less CPU per point select on the event loop's
/// connections than on sysbench's in the same windows, where one thread per connection was
/// within 1.5% of sysbench's at 8 and 32 (docs/benchmarks.md, "What the server pays"). A
/// feature's cost is a share of the server's work per query, so the default is the
/// application's model; the event loop is there for loads whose own CPU is short.
pub fn execution(connections: usize, asked: Option<u32>) -> Execution {
    match asked {
        None | Some(0) => Execution::ThreadPerConnection,
        Some(n) => Execution::EventLoop((n as usize).clamp(1, connections)),
    }
}

/// How to run one trial: plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialPlan {
    /// Client threads, one connection each.
    pub threads: u32,
    /// Measured time (ignored when `queries` is set).
    pub duration: Duration,
    /// Settle time before measuring.
    pub warmup: Duration,
    /// Stop after this many statements in total, split over the threads (mysqlslap style).
    pub queries: Option<u64>,
    /// Open loop: events start on a schedule at this rate (None: closed loop).
    pub rate: Option<Rate>,
    /// How this process's clients run (`--client-threads`; `execution`): None decides by
    /// the connection count.
    pub client_threads: Option<u32>,
}

/// Rate mode's calibration measures closed-loop capacity for at least this long.
pub const CALIBRATION: Duration = Duration::from_secs(2);

impl TrialPlan {
    /// `threads` clients in closed loop for `duration`, measured from the start.
    pub fn timed(threads: u32, duration: Duration) -> TrialPlan {
        TrialPlan {
            threads,
            duration,
            warmup: Duration::ZERO,
            queries: None,
            rate: None,
            client_threads: None,
        }
    }

    /// The calibration before a share-of-capacity rate: this plan in closed loop, for at
    /// least `CALIBRATION`.
    pub fn calibration(&self) -> TrialPlan {
        TrialPlan {
            duration: self.duration.max(CALIBRATION),
            rate: None,
            ..self.clone()
        }
    }
}

/// A check made a few times a second while a trial runs; Some(error) stops the trial with
/// that error (the disk guard: a log must not fill its filesystem mid-trial; a reading of
/// the server's host that came late is a `probe::LateReading`, which costs the trial only).
pub type Watch = std::sync::Arc<dyn Fn() -> Option<anyhow::Error> + Send + Sync>;

/// What to read around the measured window besides the counters.
#[derive(Clone, Default)]
pub struct TrialProbes {
    /// Log files whose growth is the feature's log bytes (local paths).
    pub log_files: Vec<PathBuf>,
    /// Read the server's status counters before and after.
    pub server_status: bool,
    /// Stop the trial when this says so.
    pub watch: Option<Watch>,
    /// Read what the rest of this host ran (every process but the server and dbtax): the
    /// trial's `host_other_cpu_pct`, or `client_host_other_cpu_pct` when the server is
    /// elsewhere.
    pub host_others: bool,
    /// Pids of this run on this machine's kernel besides this process (its agents): not
    /// other processes when the server's host is this one.
    pub not_others: Vec<u32>,
}

/// What one trial runs against: the server, measured around the window, and its workload.
pub struct Target<'a> {
    /// The server (its counters, CPU and log files are read around the window).
    pub server: &'a Server,
    /// The workload, its tables ready.
    pub workload: &'a PreparedWorkload,
}

/// Something that makes a trial's load and measures the server around its window.
pub trait Load {
    /// Before any setting changes: every client can reach the server and prepare the
    /// workload's statements (a failure is bad input, naming where it failed).
    fn check(&mut self, _target: &Target<'_>) -> Result<()> {
        Ok(())
    }
    /// Run one trial as `plan` says; progress samples go to `on_tick`.
    fn run_trial(
        &mut self,
        target: &Target<'_>,
        plan: &TrialPlan,
        probes: &TrialProbes,
        on_tick: &mut dyn FnMut(&TrialProgress),
    ) -> Result<Trial>;
    /// The hosts that make the load, as results.json records them (none: this process).
    fn hosts(&self) -> Vec<AgentInfo> {
        vec![]
    }
}

/// This process's own workers (one connection per client; threads as `execution` says).
#[derive(Debug, Default)]
pub struct LocalLoad;

impl Load for LocalLoad {
    fn run_trial(
        &mut self,
        target: &Target<'_>,
        plan: &TrialPlan,
        probes: &TrialProbes,
        on_tick: &mut dyn FnMut(&TrialProgress),
    ) -> Result<Trial> {
        trial::run_local(target, plan, probes, on_tick)
    }
}
