//! What results.json says of the load agents: each one, its part of a trial, and what
//! coordinating them cost.

use serde::{Deserialize, Serialize};

/// What coordinating the agents cost in one trial (prepare to the last report).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Coordination {
    /// The coordinator's own CPU (user + sys, every thread: its reader threads included), µs.
    pub cpu_us: f64,
    /// Messages exchanged with the agents, both ways.
    pub messages: u64,
    /// Bytes exchanged with the agents, both ways (JSON lines).
    pub bytes: u64,
}

/// One agent's part of a trial.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AgentTrial {
    /// The agent, as given (`ssh://host`, `local`).
    pub host: String,
    /// Its share of the threads.
    pub threads: u32,
    /// Statements it completed in the measured window.
    pub queries: u64,
    /// Its own CPU per statement it ran, µs.
    pub client_cpu_us_per_query: f64,
    /// How far its window was from the coordinator's, at most, ms.
    pub skew_ms: f64,
}

/// An agent of the run, as it introduced itself.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AgentInfo {
    /// The agent, as given (`ssh://host`, `local`).
    pub host: String,
    /// Its host name, as it says.
    pub hostname: String,
    /// Its weight in the split of threads.
    pub weight: u32,
    /// Its architecture.
    pub arch: String,
    /// Its CPU cores.
    pub cores: u32,
    /// The CPUs its load ran on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// Its dbtax version.
    pub version: String,
    /// The shortest round trip measured at hello, ms.
    pub rtt_ms: f64,
    /// Its clock minus the coordinator's, ms.
    pub clock_offset_ms: f64,
}

/// The database's host, when a probe ran there (`--server-host`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerHost {
    /// As given, without a password (`ssh://user@db:22`).
    pub url: String,
    /// Its host name, as it says.
    pub hostname: String,
    /// Its online CPUs.
    pub cores: u32,
    /// How the server's process was found and proved the one dbtax talks to.
    pub found_by: String,
    /// The server's pid there.
    pub pid: u32,
}
