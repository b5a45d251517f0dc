//! What is read around a trial's measured window, whoever makes the load: this process's
//! CPU, the server's CPU, the feature logs' sizes and the server's status counters, at each
//! end of the window. `summary` turns two readings and the load's reports into a `Trial`.

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
    /// What every other process of this host has run so far (None: not read).
    pub others_cpu: Option<crate::host::OthersCpu>,
    /// The feature logs' total size (None: a log dbtax may not read).
    pub log_bytes: Option<u64>,
    /// The server's status counters.
    pub status: BTreeMap<String, f64>,
    /// Events dbtax's own load completed while the status counters were being read: the
    /// server read them at some instant in between, so dbtax's count of its statements in
    /// the server's window is known only to within these (a busy server may take a second to
    /// answer SHOW GLOBAL STATUS).
    pub read_lag_events: u64,
}

/// Read everything now. `admin`: where the status counters come from (None: not read).
pub fn snapshot(
    server: &Server,
    probes: &TrialProbes,
    admin: Option<&mut Box<dyn Admin>>,
) -> Snapshot {
    let status = match admin {
        Some(a) => a.status_counters().unwrap_or_default(),
        None => BTreeMap::new(),
    };
    // A file not created yet counts 0 bytes; one dbtax may not read makes the figure
    // unknown (null), never 0.
    let log_bytes = if probes.log_files.is_empty() {
        None
    } else {
        probes
            .log_files
            .iter()
            .map(|p| match std::fs::metadata(p) {
                Ok(m) => Some(m.len()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(0),
                Err(_) => None,
            })
            .sum::<Option<u64>>()
    };
    let others_cpu = probes.host_others.then(|| {
        let roots: Vec<u32> = std::iter::once(std::process::id())
            .chain(server.server_pid)
            .collect();
        crate::host::others_cpu(&roots)
    });
    Snapshot {
        client_cpu_us: crate::host::self_cpu_us(),
        server_cpu: server.server_cpu(),
        others_cpu: others_cpu.flatten(),
        log_bytes,
        status,
        at: Instant::now(),
        read_lag_events: 0,
    }
}

/// An admin connection for the status counters when the probes ask for them.
pub fn status_reader(
    server: &Server,
    probes: &TrialProbes,
) -> anyhow::Result<Option<Box<dyn Admin>>> {
    probes.server_status.then(|| server.admin()).transpose()
}
