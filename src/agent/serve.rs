//! `dbtax agent --stdio`: the agent's side. Requests are read on a thread of their own (a
//! trial in progress must see `stop`, or the channel closing), answers written on stdout, one
//! JSON line each. The agent changes nothing on the server: it opens client connections,
//! loads on the coordinator's schedule, and reports. It exits when its stdin closes (the
//! coordinator, or the SSH session, is gone), stopping any load first.

use super::protocol::{self, AgentReport, Hello, PROTOCOL, Prepare, Reply, Request, VERSION};
use crate::load::TrialPlan;
use crate::load::summary::merge_reports;
use crate::load::trial::{begin_measure, connect_clients, with_workers};
use crate::load::worker::WorkerReport;
use crate::server::{Client, Server, ServerLost, TargetSpec};
use anyhow::{Result, anyhow};
use std::io::{BufRead, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How often a running trial sends a tick.
const TICK: Duration = Duration::from_secs(1);

/// Serve one coordinator on stdin/stdout until it says bye or goes away. `remove_binary`:
/// this binary is a temporary copy (`--agent-bin copy`): delete it now (Linux keeps a running
/// program's file until it exits), so nothing is left behind however the session ends.
pub fn serve_stdio(remove_binary: bool) -> Result<()> {
    if remove_binary {
        remove_own_copy();
    }
    let (tx, rx) = mpsc::channel::<Option<Request>>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Request>(&line) {
                Ok(r) => {
                    if tx.send(Some(r)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    eprintln!("dbtax agent: unreadable request ({e}): {line:.200}");
                    break;
                }
            }
        }
        let _ = tx.send(None);
    });
    let mut out = std::io::stdout().lock();
    let mut session = Session::default();
    while let Ok(Some(request)) = rx.recv() {
        let reply = match request {
            Request::Hello { .. } => Some(Reply::Hello(Box::new(hello()))),
            Request::Clock => Some(Reply::Clock {
                clock_ns: protocol::clock_ns(),
            }),
            Request::Prepare(p) => Some(session.prepare(*p).unwrap_or_else(|e| error_reply(&e))),
            Request::Start {
                measure_at_ns,
                end_at_ns,
            } => {
                let window = (measure_at_ns, end_at_ns);
                match session.start(window, &rx, &mut out) {
                    Ok(Some(report)) => Some(Reply::Report(Box::new(report))),
                    Ok(None) => return Ok(()),
                    Err(e) => Some(error_reply(&e)),
                }
            }
            Request::Stop => None,
            Request::Bye => return Ok(()),
        };
        if let Some(reply) = reply {
            send(&mut out, &reply)?;
        }
    }
    Ok(())
}

fn remove_own_copy() {
    if let Ok(exe) = std::env::current_exe() {
        let is_copy = exe
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("dbtax-agent."));
        if is_copy {
            let _ = std::fs::remove_file(&exe);
        }
    }
}

/// This host's facts.
fn hello() -> Hello {
    Hello {
        protocol: PROTOCOL,
        version: VERSION.to_string(),
        host: crate::host::hostname(),
        arch: std::env::consts::ARCH.to_string(),
        cores: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        clock_ns: protocol::clock_ns(),
    }
}

fn error_reply(e: &anyhow::Error) -> Reply {
    Reply::Error {
        message: format!("{e:#}"),
        lost: e.downcast_ref::<ServerLost>().is_some(),
    }
}

/// Write one reply line.
pub fn send(out: &mut dyn Write, reply: &Reply) -> Result<()> {
    let mut line = serde_json::to_string(reply)?;
    line.push('\n');
    out.write_all(line.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The agent's state between requests: the server it reaches, the trial it has prepared.
#[derive(Default)]
struct Session {
    server: Option<(TargetSpec, Server)>,
    prepared: Option<(Prepare, Vec<Box<dyn Client>>)>,
}

impl Session {
    fn prepare(&mut self, p: Prepare) -> Result<Reply> {
        self.prepared = None;
        let reuse = matches!(&self.server, Some((t, s)) if *t == p.target && s.schema == p.schema);
        if !reuse {
            self.server = Some((
                p.target.clone(),
                Server::open_for_clients(&p.target, &p.schema)?,
            ));
        }
        let server = &self.server.as_ref().expect("opened above").1;
        let connector = server.connector(&p.workload);
        let clients = connect_clients(connector.as_ref(), p.threads.max(1) as usize)?;
        drop(connector);
        let threads = clients.len() as u32;
        self.prepared = Some((p, clients));
        Ok(Reply::Ready { threads })
    }

    /// Run the prepared trial: warm up now, measure over `window` (this host's clock).
    /// Ok(None): the coordinator went away.
    fn start(
        &mut self,
        window: (u64, u64),
        rx: &Receiver<Option<Request>>,
        out: &mut impl Write,
    ) -> Result<Option<AgentReport>> {
        let (p, clients) = self
            .prepared
            .take()
            .ok_or_else(|| anyhow!("start without a prepared trial"))?;
        let server = &self.server.as_ref().expect("prepared on it").1;
        let connector = server.connector(&p.workload);
        let plan = TrialPlan {
            threads: p.threads,
            duration: Duration::from_nanos(p.duration_ns),
            warmup: Duration::ZERO,
            queries: None,
            rate: p.rate,
            agents: None,
        };
        send(
            out,
            &Reply::Started {
                clock_ns: protocol::clock_ns(),
            },
        )?;
        let (reports, outcome) =
            with_workers(clients, connector.as_ref(), &plan, p.seed, |shared, t0| {
                let mut last_tick = Instant::now();
                // Wait for an instant of this host's clock, ticking; false: stop now.
                let mut wait_until = |at_ns: u64, out: &mut dyn Write| -> Result<(), bool> {
                    loop {
                        let now = protocol::clock_ns();
                        if now >= at_ns {
                            return Ok(());
                        }
                        let nap = Duration::from_nanos(at_ns - now).min(Duration::from_millis(20));
                        match rx.recv_timeout(nap) {
                            Ok(Some(Request::Stop)) => return Err(true),
                            Ok(None) | Err(RecvTimeoutError::Disconnected) => return Err(false),
                            Ok(Some(_)) | Err(RecvTimeoutError::Timeout) => {}
                        }
                        if last_tick.elapsed() >= TICK {
                            last_tick = Instant::now();
                            let tick = Reply::Tick {
                                events: shared.total_events(),
                                lag_us: shared.max_lag_us(),
                            };
                            if send(out, &tick).is_err() {
                                return Err(false);
                            }
                        }
                    }
                };
                wait_until(window.0, &mut *out)?;
                let (cpu0, w0) = (crate::host::self_cpu_us(), protocol::clock_ns());
                begin_measure(shared, t0, Instant::now());
                wait_until(window.1, &mut *out)?;
                let (cpu1, w1) = (crate::host::self_cpu_us(), protocol::clock_ns());
                Ok((cpu1.saturating_sub(cpu0), (w0, w1)))
            });
        match outcome {
            Ok((cpu_us, w)) => Ok(Some(AgentReport::new(&merge_reports(reports)?, cpu_us, w)?)),
            // Stopped early: an empty report, which the coordinator discards.
            Err(true) => Ok(Some(AgentReport::new(
                &WorkerReport::empty(false),
                0,
                (0, 0),
            )?)),
            Err(false) => Ok(None),
        }
    }
}
