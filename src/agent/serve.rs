//! `dbtax agent --stdio`: the agent's side. Requests are read on a thread of their own (a
//! trial in progress must see `stop`, or the channel closing), answers written on stdout, one
//! JSON line each. The agent changes nothing on the server: it opens client connections,
//! loads on the coordinator's schedule, and reports. It exits when its stdin closes (the
//! coordinator, or the SSH session, is gone), stopping any load first.

use super::protocol::{self, AgentReport, Hello, PROTOCOL, Prepare, Reply, Request, VERSION};
use crate::load::TrialPlan;
use crate::load::reports::merge_reports;
use crate::load::trial::{begin_measure, connect_clients, with_workers};
use crate::load::window::{Phase, instant_of, run_phase};
use crate::load::worker::{Shared, WorkerReport};
use crate::server::{Server, TargetSpec};
use crate::workload::Client;
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
    let (tx, rx) = mpsc::channel::<Option<(u64, Request)>>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            match protocol::parse_with_id::<Request>(&line, "id") {
                Ok(r) => {
                    if tx.send(Some(r)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    crate::errln!("dbtax agent: unreadable request ({e}): {line:.200}");
                    break;
                }
            }
        }
        let _ = tx.send(None);
    });
    let mut out = Answers {
        out: std::io::stdout().lock(),
        re: 0,
    };
    let mut session = Session::default();
    while let Ok(Some((id, request))) = rx.recv() {
        // Every answer names the request it answers (a tick and a report: their `start`).
        out.re = id;
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
            Request::Find(f) => Some(match crate::host::probe::find_server(&f) {
                Ok(found) => Reply::Found(found),
                Err(message) => Reply::Error {
                    message,
                    lost: false,
                },
            }),
            Request::Read(ask) => Some(Reply::Reading(Box::new(crate::host::probe::read(&ask)))),
            Request::ReadFile { path, from, max } => {
                Some(match crate::host::probe::read_file(&path, from, max) {
                    Ok(bytes) => Reply::Bytes {
                        hex: protocol::to_hex(&bytes),
                    },
                    Err(message) => Reply::Error {
                        message,
                        lost: false,
                    },
                })
            }
            Request::Bye => return Ok(()),
        };
        if let Some(reply) = reply {
            send(&mut out, &reply)?;
        }
    }
    Ok(())
}

/// The agent's stdout, and the id of the request its answers are for now.
struct Answers<W: Write> {
    out: W,
    re: u64,
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
        cores: crate::host::online_cores(),
        cpus: crate::host::cpus::allowed(),
        clock_ns: protocol::clock_ns(),
        pid: std::process::id(),
        boot_id: crate::host::probe::boot_id(),
    }
}

fn error_reply(e: &anyhow::Error) -> Reply {
    Reply::Error {
        message: format!("{e:#}"),
        // (The whole chain: one that reads only the outer error misses a lost server
        // under a context.)
        lost: crate::error::server_gone(e),
    }
}

/// Write one reply line, naming the request it answers.
fn send<W: Write>(out: &mut Answers<W>, reply: &Reply) -> Result<()> {
    let line = protocol::line_with_id(reply, "re", out.re)?;
    out.out.write_all(line.as_bytes())?;
    out.out.flush()?;
    Ok(())
}

/// The agent's state between requests: the server it reaches, the trial it has prepared.
#[derive(Default)]
struct Session {
    server: Option<(TargetSpec, Server)>,
    prepared: Option<(Prepare, Vec<Client>)>,
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
        let clients = connect_clients(&connector, p.threads.max(1) as usize)?;
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
        rx: &Receiver<Option<(u64, Request)>>,
        out: &mut Answers<impl Write>,
    ) -> Result<Option<AgentReport>> {
        let (p, clients) = self
            .prepared
            .take()
            .ok_or_else(|| anyhow!("start without a prepared trial"))?;
        let server = &self.server.as_ref().expect("prepared on it").1;
        let connector = server.connector(&p.workload);
        // This agent, and what the coordinator said is dbtax's or the server's here.
        let not_others: Vec<u32> = std::iter::once(std::process::id())
            .chain(p.not_others.iter().copied())
            .collect();
        let plan = TrialPlan {
            rate: p.rate,
            ..TrialPlan::timed(p.threads, Duration::from_nanos(p.duration_ns))
        };
        send(
            out,
            &Reply::Started {
                clock_ns: protocol::clock_ns(),
            },
        )?;
        let early = early_close();
        let (reports, outcome) = with_workers(clients, &connector, &plan, p.seed, |shared, t0| {
            let mut coordinator = Coordinator {
                rx,
                out: &mut *out,
                shared,
                last_tick: Instant::now(),
            };
            let at = |ns: u64| instant_of(ns, protocol::clock_ns());
            run_phase(&mut coordinator, Some(at(window.0)), false, None)?;
            let others0 = crate::host::others_cpu(&not_others);
            let (cpu0, w0) = (crate::host::self_cpu_us(), protocol::clock_ns());
            begin_measure(shared, t0, Instant::now());
            let end = at(window.1);
            let end = end.checked_sub(early).unwrap_or(end);
            run_phase(&mut coordinator, Some(end), true, None)?;
            let (cpu1, w1) = (crate::host::self_cpu_us(), protocol::clock_ns());
            let others = match (others0, crate::host::others_cpu(&not_others)) {
                (Some(a), Some(b)) if w1 > w0 => {
                    Some(a.used_until(&b) as f64 * 100.0 / (w1 - w0) as f64)
                }
                _ => None,
            };
            Ok::<_, anyhow::Error>((cpu1.saturating_sub(cpu0), (w0, w1), others))
        });
        match outcome {
            Ok((cpu_us, w, others)) => {
                let mut r = AgentReport::new(&merge_reports(reports)?, cpu_us, w)?;
                r.other_cpu_pct = others;
                Ok(Some(r))
            }
            Err(e) => match e.downcast_ref::<Ended>() {
                // Stopped early: an empty report, which the coordinator discards.
                Some(Ended::Stopped) => Ok(Some(AgentReport::new(
                    &WorkerReport::empty(false),
                    0,
                    (0, 0),
                )?)),
                Some(Ended::Gone) => Ok(None),
                None => Err(e),
            },
        }
    }
}

/// Why an agent's trial ended before its window did.
#[derive(Debug, thiserror::Error)]
enum Ended {
    /// The coordinator said `stop`.
    #[error("stopped by the coordinator")]
    Stopped,
    /// The coordinator (or the SSH channel) is gone.
    #[error("the coordinator went away")]
    Gone,
}

/// The coordinator as a phase of the agent's window sees it: a nap waits for a request
/// (`stop`, or the channel closing), and a tick a second goes back to it.
struct Coordinator<'a, W: Write> {
    rx: &'a Receiver<Option<(u64, Request)>>,
    out: &'a mut Answers<W>,
    shared: &'a Shared,
    last_tick: Instant,
}

impl<W: Write> Phase for Coordinator<'_, W> {
    fn nap(&self) -> Duration {
        Duration::from_millis(20)
    }

    fn wait(&mut self, nap: Duration) -> Result<()> {
        match self.rx.recv_timeout(nap) {
            Ok(Some((_, Request::Stop))) => Err(Ended::Stopped.into()),
            Ok(None) | Err(RecvTimeoutError::Disconnected) => Err(Ended::Gone.into()),
            Ok(Some(_)) | Err(RecvTimeoutError::Timeout) => Ok(()),
        }
    }

    fn tick(&mut self, _: bool, _: Duration, _: Duration) -> Result<()> {
        if self.last_tick.elapsed() < TICK {
            return Ok(());
        }
        self.last_tick = Instant::now();
        let tick = Reply::Tick {
            events: self.shared.total_events(),
            lag_us: self.shared.max_lag_us(),
        };
        send(&mut *self.out, &tick).map_err(|_| Ended::Gone.into())
    }
}

/// A test hook: `DBTAX_TEST_AGENT_EARLY_MS` closes this agent's measured window that many
/// milliseconds before the instant it was sent, as an agent whose clock moved after hello
/// would (its report then reaches the coordinator before the coordinator's window ends).
fn early_close() -> Duration {
    std::env::var("DBTAX_TEST_AGENT_EARLY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or_default()
}
