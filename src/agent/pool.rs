//! The coordinator's agents: started through `ssh` (or `$DBTAX_SSH_COMMAND`, or as a local
//! subprocess), greeted (versions compared, clocks measured), and stopped at the end. Each
//! agent's stdout is read by a thread of its own into one channel, tagged with the agent
//! (`launch`: how an agent process is started).

use super::protocol::{self, Hello, PROTOCOL, Reply, Request, VERSION};
use super::{AgentOptions, AgentSpec};
use crate::error::usage;
use crate::server::TargetSpec;
use anyhow::{Result, anyhow, bail};
use std::io::Write;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an agent may take to answer `hello` (an SSH login included).
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// Clock rounds at hello; the one with the shortest round trip gives the offset.
const CLOCK_ROUNDS: usize = 5;

/// What an agent's reader thread passes on: a reply, or why there will be no more.
pub(super) enum Event {
    Reply(Reply),
    Gone(String),
}

/// One running agent, greeted.
pub struct Agent {
    /// Where it runs.
    pub spec: AgentSpec,
    /// What it said of itself.
    pub hello: Hello,
    /// The shortest round trip measured at hello, ns.
    pub rtt_ns: u64,
    /// Its clock minus this host's, ns (at the shortest round trip).
    pub offset_ns: i64,
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stderr: Arc<Mutex<String>>,
    pub(super) traffic: Arc<Traffic>,
    /// Set once it is gone: why.
    pub(super) gone: Option<String>,
    /// The id the next request is sent with (every answer names the request it answers).
    pub(super) next_id: u64,
    /// Answers to requests up to this id are dropped as they come in: their asker gave up on
    /// them (a late answer is never taken for another request's). Shared with its reader.
    pub(super) floor: Arc<std::sync::atomic::AtomicU64>,
    /// Late answers dropped so far (shared with its reader).
    pub(super) dropped: Arc<std::sync::atomic::AtomicU64>,
}

/// Messages and bytes exchanged with the agents, both ways, since the start.
#[derive(Debug, Default)]
pub(super) struct Traffic {
    pub(super) messages: std::sync::atomic::AtomicU64,
    pub(super) bytes: std::sync::atomic::AtomicU64,
}

impl Traffic {
    pub(super) fn count(&self, bytes: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        self.messages.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes as u64, Relaxed);
    }

    /// Count a line read, and parse it: the id of the request it answers (`re`; 0: none
    /// named), and the reply.
    pub(super) fn parse(&self, bytes: usize, line: &str) -> serde_json::Result<(u64, Reply)> {
        self.count(bytes);
        protocol::parse_with_id(line, "re")
    }

    /// (messages, bytes) so far.
    pub(super) fn now(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.messages.load(Relaxed), self.bytes.load(Relaxed))
    }
}

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

impl Agent {
    /// How messages name it.
    pub fn label(&self) -> String {
        self.spec.label()
    }

    /// The last lines it wrote on stderr (ssh's errors, the agent's own).
    pub fn stderr_tail(&self) -> String {
        let s = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        s.trim().lines().collect::<Vec<_>>().join(" / ")
    }

    /// Send `request` under a new id, and return the id (its answers name it).
    pub(super) fn send(&mut self, request: &Request) -> Result<u64> {
        let label = self.label();
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow!("agent {label} is closed"))?;
        self.next_id += 1;
        let id = self.next_id;
        let line = protocol::line_with_id(request, "id", id)?;
        self.traffic.count(line.len());
        stdin
            .write_all(line.as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| anyhow!("agent {label} is gone: writing to it failed ({e})"))?;
        Ok(id)
    }

    /// Give up on the answers to every request up to `id`: when they come, they are dropped.
    pub(super) fn give_up(&self, id: u64) {
        self.floor
            .fetch_max(id, std::sync::atomic::Ordering::SeqCst);
    }

    /// Late answers dropped so far.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Why it is gone, as one sentence naming it.
    pub(super) fn gone_message(&mut self, why: &str) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(s)) => format!(" ({s})"),
            _ => String::new(),
        };
        let tail = self.stderr_tail();
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!(": {tail}")
        };
        format!("agent {} {why}{status}{tail}", self.label())
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
