//! The coordinator's agents: started through `ssh` (or `$DBTAX_SSH_COMMAND`, or as a local
//! subprocess), greeted (versions compared, clocks measured), and stopped at the end. Each
//! agent's stdout is read by a thread of its own into one channel, tagged with the agent
//! (`launch`: how an agent process is started; `link`: one agent as it is held).

use super::AgentOptions;
use super::link::{Agent, Event, Traffic};
use super::protocol::{self, PROTOCOL, Reply, Request, VERSION};
use crate::error::usage;
use crate::server::TargetSpec;
use anyhow::{Result, bail};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long an agent may take to answer `hello` (an SSH login included).
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// Clock rounds at hello; the one with the shortest round trip gives the offset.
const CLOCK_ROUNDS: usize = 5;

/// Every agent of a run, and what they are sent.
pub struct Pool {
    /// The agents, in the order given.
    pub agents: Vec<Agent>,
    /// The server as the agents reach it, and dbtax's schema there.
    pub(super) target: Option<(TargetSpec, String)>,
    pub(super) events: Receiver<(usize, Event)>,
    pub(super) traffic: Arc<Traffic>,
    /// The agents of the trial under way that were told to start (a stop is theirs only).
    pub(super) running: Vec<usize>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let labels: Vec<String> = self.agents.iter().map(|a| a.spec.label()).collect();
        f.debug_struct("Pool").field("agents", &labels).finish()
    }
}

impl Pool {
    /// Start every agent and greet it: same protocol and version, clocks measured. Any
    /// failure is bad input (exit 2), naming the host, before anything on a server changes.
    pub fn start(opts: &AgentOptions, status: &mut dyn FnMut(&str)) -> Result<Pool> {
        let (tx, events) = mpsc::channel();
        let traffic = Arc::new(Traffic::default());
        let mut agents = Vec::with_capacity(opts.agents.len());
        for (i, spec) in opts.agents.iter().enumerate() {
            let bin = super::launch::agent_bin(spec, &opts.bin, status)?;
            agents.push(super::launch::spawn(
                i,
                spec,
                &bin,
                tx.clone(),
                traffic.clone(),
            )?);
        }
        drop(tx);
        let mut pool = Pool {
            agents,
            target: None,
            events,
            traffic,
            running: vec![],
        };
        for a in &mut pool.agents {
            a.send(&Request::Hello {
                protocol: PROTOCOL,
                version: VERSION.into(),
            })
            .map_err(|e| usage(format!("{e:#}")))?;
        }
        let mut greeted = vec![None; pool.agents.len()];
        let deadline = Instant::now() + HELLO_TIMEOUT;
        while greeted.iter().any(Option::is_none) {
            match pool.next_event(deadline) {
                Some((i, Event::Reply(Reply::Hello(h)))) => greeted[i] = Some(*h),
                Some((i, Event::Reply(other))) => {
                    let a = &mut pool.agents[i];
                    return Err(usage(a.gone_message(&format!(
                        "answered hello with a '{}' message: is it dbtax?",
                        other.kind()
                    ))));
                }
                Some((i, Event::Gone(why))) => {
                    let a = &mut pool.agents[i];
                    let msg = a.gone_message(&format!("did not start ({why})"));
                    return Err(usage(format!(
                        "{msg}. Check that `ssh` reaches the host without a password prompt \
                         (DBTAX_SSH_COMMAND for keys and options) and that dbtax is installed \
                         there (--agent-bin PATH names it, --agent-bin copy copies this one)"
                    )));
                }
                None => {
                    let late: Vec<String> = greeted
                        .iter()
                        .zip(&pool.agents)
                        .filter(|(g, _)| g.is_none())
                        .map(|(_, a)| a.label())
                        .collect();
                    return Err(usage(format!(
                        "agent {} did not answer within {} s",
                        late.join(", "),
                        HELLO_TIMEOUT.as_secs()
                    )));
                }
            }
        }
        for (a, h) in pool.agents.iter_mut().zip(greeted) {
            let h = h.expect("every agent greeted");
            if h.protocol != PROTOCOL || h.version != VERSION {
                return Err(usage(format!(
                    "agent {} runs dbtax {} (protocol {}); this is dbtax {VERSION} (protocol \
                     {PROTOCOL}). Run the same version on every host (--agent-bin copy copies \
                     this one there)",
                    a.label(),
                    h.version,
                    h.protocol
                )));
            }
            a.hello = h;
        }
        for i in 0..pool.agents.len() {
            pool.measure_clock(i).map_err(|e| usage(format!("{e:#}")))?;
        }
        Ok(pool)
    }

    /// The server the agents load, as they reach it.
    pub fn set_target(&mut self, target: TargetSpec, schema: &str) {
        self.target = Some((target, schema.to_string()));
    }

    /// The next reply from any agent, or None at the deadline.
    pub(super) fn next_event(&mut self, deadline: Instant) -> Option<(usize, Event)> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(wait) {
            Ok(e) => Some(e),
            Err(RecvTimeoutError::Timeout) => None,
            // Every reader has ended: each agent is gone (their Gone events came first).
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(wait);
                None
            }
        }
    }

    /// Round trips to agent `i`; the shortest gives its clock offset.
    fn measure_clock(&mut self, i: usize) -> Result<()> {
        let mut best: Option<(u64, i64)> = None;
        for _ in 0..CLOCK_ROUNDS {
            let t1 = protocol::clock_ns();
            self.agents[i].send(&Request::Clock)?;
            let deadline = Instant::now() + HELLO_TIMEOUT;
            let ta = loop {
                match self.next_event(deadline) {
                    Some((j, Event::Reply(Reply::Clock { clock_ns }))) if j == i => break clock_ns,
                    Some((j, Event::Gone(why))) if j == i => {
                        bail!(
                            "{}",
                            self.agents[i].gone_message(&format!("is gone ({why})"))
                        )
                    }
                    Some(_) => continue,
                    None => bail!(
                        "agent {} did not answer a clock request",
                        self.agents[i].label()
                    ),
                }
            };
            let t2 = protocol::clock_ns();
            let rtt = t2.saturating_sub(t1);
            let offset = ta as i64 - ((t1 as i128 + t2 as i128) / 2) as i64;
            if best.is_none_or(|(r, _)| rtt < r) {
                best = Some((rtt, offset));
            }
        }
        let (rtt, offset) = best.expect("at least one round");
        self.agents[i].rtt_ns = rtt;
        self.agents[i].offset_ns = offset;
        Ok(())
    }

    /// What results.json records of the agents.
    pub fn info(&self) -> Vec<crate::results::AgentInfo> {
        self.agents
            .iter()
            .map(|a| crate::results::AgentInfo {
                host: a.label(),
                hostname: a.hello.host.clone(),
                weight: a.spec.weight,
                arch: a.hello.arch.clone(),
                cores: a.hello.cores,
                cpus: a.hello.cpus.clone(),
                version: a.hello.version.clone(),
                rtt_ms: a.rtt_ns as f64 / 1e6,
                clock_offset_ms: a.offset_ns as f64 / 1e6,
            })
            .collect()
    }
}

impl Drop for Pool {
    /// Say bye, close every channel, and wait a little for each agent; kill the slow.
    fn drop(&mut self) {
        for a in &mut self.agents {
            let _ = a.send(&Request::Bye);
            a.stdin = None;
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for a in &mut self.agents {
            loop {
                match a.child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() >= deadline => {
                        let _ = a.child.kill();
                        let _ = a.child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
    }
}
