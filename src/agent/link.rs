//! One running agent as the coordinator holds it: its process and pipes, what it said at
//! hello, the id of its next request and the answers given up on, and the messages and bytes
//! exchanged. `launch` makes one, the pool greets and drives them, the remote probe asks one.

use super::AgentSpec;
use super::protocol::{self, Hello, Reply, Request};
use anyhow::{Result, anyhow};
use std::io::Write;
use std::process::{Child, ChildStdin};
use std::sync::{Arc, Mutex};

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
