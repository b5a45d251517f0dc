//! What is read around a trial's measured window, whoever makes the load: this process's
//! CPU, the server's CPU, the feature logs' sizes and the server's status counters, at each
//! end of the window. `reports` turns two readings and the load's reports into a `Trial`.

use super::TrialProbes;
use crate::server::{Admin, Server};
use std::collections::BTreeMap;
use std::time::Instant;

/// The readings at one end of the measured window.
pub struct Snapshot {
    /// When they were taken.
    pub at: Instant,
    /// This process's CPU so far, µs.
    pub client_cpu_us: u64,
    /// The server's CPU so far (None: not local).
    pub server_cpu: Option<crate::host::CpuSnapshot>,
    /// What every other process of the server's host (or, when that host is not read,
    /// this one) has run so far (None: not read).
    pub others_cpu: Option<crate::host::OthersCpu>,
    /// `others_cpu` is the server's host's.
    pub others_on_server_host: bool,
    /// The feature logs' total size (None: a log dbtax may not read).
    pub log_bytes: Option<u64>,
    /// The server's status counters.
    pub status: BTreeMap<String, f64>,
    /// Events dbtax's own load completed while the status counters were being read: the
    /// server read them at some instant in between, so dbtax's count of its statements in
    /// the server's window is known only to within these (a busy server may take a second to
    /// answer SHOW GLOBAL STATUS). None: not counted (the agents' load), and estimated from
    /// `status_read_s` at the trial's rate.
    pub read_lag_events: Option<u64>,
    /// How long the status counters took to read, s.
    pub status_read_s: f64,
    /// When the server's host was read, on that host's monotonic clock (ns; 0: not told).
    pub host_mono_ns: u64,
}

/// Read everything now. `admin`: where the status counters come from (None: not read).
/// The server's CPU, the logs' sizes and the other processes are read where the server runs
/// (this machine, or through the probe on its host); Err when that probe is gone.
pub fn snapshot(
    server: &Server,
    probes: &TrialProbes,
    admin: Option<&mut Box<dyn Admin>>,
) -> anyhow::Result<Snapshot> {
    let read = Instant::now();
    let status = match admin {
        Some(a) => a.status_counters().unwrap_or_default(),
        None => BTreeMap::new(),
    };
    let status_read_s = read.elapsed().as_secs_f64();
    let on_server_host = server.server_pid.is_some();
    let mut ask = server.cpu_ask();
    ask.files = probes
        .log_files
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if probes.host_others && on_server_host {
        let mut skip = server.host.not_others();
        if server.host.0.same_kernel() {
            skip.extend(&probes.not_others);
        }
        ask.others = Some(skip);
    }
    let reading = server.host.read(&ask)?;
    // The server's host is not read: what else ran on this one, the client's.
    let others_cpu = match (probes.host_others, on_server_host) {
        (true, false) => {
            let roots: Vec<u32> = std::iter::once(std::process::id())
                .chain(server.neighbour_pid)
                .chain(probes.not_others.iter().copied())
                .collect();
            crate::host::others_cpu(&roots)
        }
        _ => reading.others,
    };
    // A file not created yet counts 0 bytes; one dbtax may not read makes the figure
    // unknown (null), never 0.
    let log_bytes = if probes.log_files.is_empty() {
        None
    } else {
        reading.sizes.iter().copied().sum::<Option<u64>>()
    };
    Ok(Snapshot {
        client_cpu_us: crate::host::self_cpu_us(),
        server_cpu: reading.server_cpu,
        others_cpu,
        others_on_server_host: on_server_host,
        log_bytes,
        status,
        at: Instant::now(),
        read_lag_events: None,
        status_read_s,
        host_mono_ns: reading.mono_ns,
    })
}

/// An admin connection for the status counters when the probes ask for them.
pub fn status_reader(
    server: &Server,
    probes: &TrialProbes,
) -> anyhow::Result<Option<Box<dyn Admin>>> {
    probes.server_status.then(|| server.admin()).transpose()
}
