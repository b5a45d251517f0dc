//! The probe on the server's host (`--server-host`): `dbtax agent --stdio` started there the
//! way load agents are, asked to find the server's process and, at each end of a trial's
//! measured window and a few times a second for the disk guard, to read that host. It only
//! reads. When it goes away the reading fails with words naming the host, and the run stops
//! (settings put back, results kept).

use super::pool::Event;
use super::protocol::{Reply, Request};
use super::{AgentBin, AgentOptions, AgentSpec, Pool};
use crate::probe::{Ask, Find, Found, Reader, Reading};
use anyhow::{Result, anyhow, bail};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one reading may take (an SSH round trip, a scan of /proc).
const READ_TIMEOUT: Duration = Duration::from_secs(15);

/// The probe's session.
pub struct RemoteProbe {
    pool: Mutex<Pool>,
    label: String,
    found: Mutex<Option<Found>>,
}

impl RemoteProbe {
    /// Start the probe on `spec`'s host and greet it (same protocol and version). Bad input
    /// (ssh refused, no dbtax there) is a usage error naming the host.
    pub fn start(spec: &AgentSpec, bin: &AgentBin, status: &mut dyn FnMut(&str)) -> Result<Self> {
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
        })
    }

    /// Send `request` and wait for its answer.
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
        pool.agents[0].send(request).map_err(|e| {
            anyhow!("{e:#}").context(format!("the probe on the server's host {}", self.label))
        })?;
        let deadline = Instant::now() + READ_TIMEOUT;
        match pool.next_event(deadline) {
            Some((_, Event::Reply(Reply::Error { message, .. }))) => bail!("{message}"),
            Some((_, Event::Reply(r))) => Ok(r),
            Some((_, Event::Gone(why))) => {
                let why = format!("is gone ({why})");
                pool.agents[0].gone = Some(why.clone());
                Err(gone(&mut pool, &why))
            }
            None => {
                // A late answer would be taken for the next question's: no more questions.
                let why = format!("did not answer within {} s", READ_TIMEOUT.as_secs());
                pool.agents[0].gone = Some(why.clone());
                Err(gone(&mut pool, &why))
            }
        }
    }
}

impl Reader for RemoteProbe {
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

    fn find(&self, f: &Find) -> Result<Found> {
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
            .is_some_and(|f| !f.boot_id.is_empty() && f.boot_id == crate::probe::boot_id())
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
