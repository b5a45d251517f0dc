//! The probe on the server's host (`--server-host`): `dbtax agent --stdio` started there the
//! way load agents are, asked to find the server's process and, at each end of a trial's
//! measured window and a few times a second for the disk guard, to read that host. It only
//! reads. A reading that does not come within 15 s is late (`probe::LateReading`): it costs
//! its trial (the block is set aside and run again, the features switched off while the
//! probe is waited for), not the run. When it goes away, or stays silent past its bound
//! (`--probe-silence`, 60 s), the reading fails with words naming the host, and the run
//! stops (settings put back, results kept).

use super::link::Event;
use super::protocol::{Reply, Request};
use super::{AgentBin, AgentOptions, AgentSpec, Pool};
use crate::host::probe::{Ask, Find, Found, Reader, Reading};
use anyhow::{Result, anyhow, bail};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one reading may take (an SSH round trip, a scan of /proc): a reading later than
/// this costs its trial, not the run.
const READ_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the probe may stay silent before it is taken for gone and the run stops
/// (`--probe-silence`).
pub const SILENCE: Duration = Duration::from_secs(60);

/// The probe's session.
pub struct RemoteProbe {
    pool: Mutex<Pool>,
    label: String,
    found: Mutex<Option<Found>>,
    /// Since when it has not answered (None: its last request was answered).
    silent_since: Mutex<Option<Instant>>,
    /// How long it may stay silent.
    silence: Duration,
    /// How long one reading is waited for.
    read_timeout: Duration,
}

impl RemoteProbe {
    /// Start the probe on `spec`'s host and greet it (same protocol and version). Bad input
    /// (ssh refused, no dbtax there) is a usage error naming the host.
    pub fn start(
        spec: &AgentSpec,
        bin: &AgentBin,
        silence: Duration,
        status: &mut dyn FnMut(&str),
    ) -> Result<Self> {
        let opts = AgentOptions {
            agents: vec![spec.clone()],
            bin: bin.clone(),
            target: None,
        };
        let pool = Pool::start(&opts, status).map_err(|e| {
            crate::error::usage(format!("{e:#}").replacen(
                "agent ",
                "the probe on the server's host ",
                1,
            ))
        })?;
        Ok(RemoteProbe {
            pool: Mutex::new(pool),
            label: spec.label(),
            found: Mutex::new(None),
            silent_since: Mutex::new(None),
            silence,
            read_timeout: READ_TIMEOUT.min(silence),
        })
    }

    /// Late answers dropped so far (answers to readings given up on).
    pub fn late_answers(&self) -> u64 {
        let pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        pool.agents[0].dropped()
    }

    /// Send `request` and wait for its answer. One that does not come within the read
    /// timeout is given up on (when it comes, it is dropped: never taken for the next
    /// request's) and is a `LateReading`; once the probe has been silent past its bound, it
    /// is gone.
    fn ask(&self, request: &Request) -> Result<Reply> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let gone = |pool: &mut Pool, why: &str| {
            let msg = pool.agents[0].gone_message(why);
            anyhow!(
                "{}",
                msg.replacen("agent ", "the probe on the server's host ", 1)
            )
        };
        if let Some(why) = pool.agents[0].gone.clone() {
            return Err(gone(&mut pool, &why));
        }
        // Whatever is queued now answers a request given up on: only one is asked at a time.
        while let Ok((_, event)) = pool.events.try_recv() {
            if let Event::Gone(why) = event {
                let why = format!("is gone ({why})");
                pool.agents[0].gone = Some(why.clone());
                return Err(gone(&mut pool, &why));
            }
        }
        let asked = Instant::now();
        let id = pool.agents[0].send(request).map_err(|e| {
            anyhow!("{e:#}").context(format!("the probe on the server's host {}", self.label))
        })?;
        let mut silent = self.silent_since.lock().unwrap_or_else(|e| e.into_inner());
        let left = silent.map_or(self.silence, |s| self.silence.saturating_sub(s.elapsed()));
        let wait = self.read_timeout.min(left).max(Duration::from_millis(100));
        match pool.next_event(asked + wait) {
            Some((_, Event::Reply(r))) => {
                *silent = None;
                match r {
                    Reply::Error { message, .. } => bail!("{message}"),
                    r => Ok(r),
                }
            }
            Some((_, Event::Gone(why))) => {
                let why = format!("is gone ({why})");
                pool.agents[0].gone = Some(why.clone());
                Err(gone(&mut pool, &why))
            }
            None => {
                pool.agents[0].give_up(id);
                let since = *silent.get_or_insert(asked);
                if since.elapsed() >= self.silence {
                    let why = format!(
                        "has been silent for {} s (--probe-silence {})",
                        since.elapsed().as_secs(),
                        self.silence.as_secs()
                    );
                    pool.agents[0].gone = Some(why.clone());
                    return Err(gone(&mut pool, &why));
                }
                Err(crate::host::probe::LateReading {
                    host: self.label.clone(),
                    waited_s: wait.as_secs(),
                    silent_s: since.elapsed().as_secs(),
                    bound_s: self.silence.as_secs(),
                }
                .into())
            }
        }
    }
}

impl Reader for RemoteProbe {
    fn answering(&self) -> Result<()> {
        loop {
            match self.read(&Ask::default()) {
                Ok(_) => return Ok(()),
                Err(e) if crate::host::probe::is_late(&e) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn read(&self, ask: &Ask) -> Result<Reading> {
        match self.ask(&Request::Read(ask.clone()))? {
            Reply::Reading(r) => Ok(*r),
            other => bail!(
                "the probe on the server's host {} answered a reading with a '{}' message",
                self.label,
                other.kind()
            ),
        }
    }

    fn find_server(&self, f: &Find) -> Result<Found> {
        match self.ask(&Request::Find(f.clone()))? {
            Reply::Found(found) => {
                *self.found.lock().unwrap_or_else(|e| e.into_inner()) = Some(found.clone());
                Ok(found)
            }
            other => bail!(
                "the probe on the server's host {} answered with a '{}' message",
                self.label,
                other.kind()
            ),
        }
    }

    fn read_file(&self, path: &str, from: u64, max: u32) -> Result<Vec<u8>> {
        let request = Request::ReadFile {
            path: path.to_string(),
            from,
            max,
        };
        match self.ask(&request)? {
            Reply::Bytes { hex } => super::protocol::from_hex(&hex).ok_or_else(|| {
                anyhow!(
                    "the probe on the server's host {} sent a part of {path} that is not hex",
                    self.label
                )
            }),
            other => bail!(
                "the probe on the server's host {} answered a file's part with a '{}' message",
                self.label,
                other.kind()
            ),
        }
    }

    fn here(&self) -> bool {
        false
    }

    fn label(&self) -> String {
        self.label.clone()
    }

    fn same_kernel(&self) -> bool {
        let found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        found
            .as_ref()
            .is_some_and(|f| !f.boot_id.is_empty() && f.boot_id == crate::host::probe::boot_id())
    }

    fn server_host(&self) -> Option<crate::results::ServerHost> {
        let pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        Some(crate::results::ServerHost {
            url: self.label.clone(),
            hostname: pool.agents[0].hello.host.clone(),
            cores: pool.agents[0].hello.cores,
            found_by: found
                .as_ref()
                .map(|f| f.found_by.clone())
                .unwrap_or_default(),
            pid: found.as_ref().map_or(0, |f| f.pid),
        })
    }
}
