//! The agents' protocol: JSON lines over the SSH channel (the agent's stdin and stdout), one
//! request, then its answers. Versioned: the coordinator sends its protocol and dbtax version
//! in `hello`, the agent answers with its own, and the coordinator refuses any difference.
//!
//! A session: `hello`, `clock` ×5 (round trip and clock offset), then per trial `prepare`
//! (the agent connects every client, answers `ready`), `start` (the workers warm up at once,
//! the measured window opens and closes at the given instants of the agent's clock; `started`,
//! a `tick` a second, then `report` with the merged counters and histograms), and `bye`.
//! `stop` ends a trial early (the report that follows is discarded). Any failure: `error`.
//! In the probe role (`--server-host`) the same agent, after `hello`, answers `find` (the
//! server's process, proved) and `read` (a reading of its host): it changes nothing.
//! Every request carries an `id`, and every answer names the request it answers (`re`; a
//! tick and a report: their `start`): an answer to a request its asker gave up on (a probe
//! reading later than 15 s) is dropped when it comes, never taken for another's.

use crate::load::Rate;
use crate::load::worker::{OpenLoopReport, WorkerReport};
use crate::server::TargetSpec;
use crate::workload::PreparedWorkload;
use anyhow::{Context, Result};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped whenever a message changes shape (6: the workload says how its statements are sent).
pub const PROTOCOL: u32 = 6;

/// `bytes` as two lower-case hex digits each (a file's part in a JSON line).
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// The bytes of `to_hex`'s text; None when it is not such text.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

/// This build's version: an agent must run the same.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// From the coordinator to an agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// The first message: who is asking.
    Hello {
        /// The coordinator's protocol.
        protocol: u32,
        /// The coordinator's dbtax version.
        version: String,
    },
    /// Answer with the agent's clock now.
    Clock,
    /// Connect this trial's clients (all before answering `ready`).
    Prepare(Box<Prepare>),
    /// Start the prepared workers now; measure between the two instants (agent clock, ns
    /// since the Unix epoch).
    Start {
        /// The measured window opens.
        measure_at_ns: u64,
        /// ...and closes.
        end_at_ns: u64,
    },
    /// End the current trial now.
    Stop,
    /// The probe role (`--server-host`): find the server's process on this host.
    Find(crate::host::probe::Find),
    /// The probe role: read the server's CPU, the logs' sizes and room, the other processes.
    Read(crate::host::probe::Ask),
    /// The probe role: a part of a file (`dbtax capture`'s log), answered as `bytes`.
    ReadFile {
        /// The file, as a path on the probe's host.
        path: String,
        /// From this byte.
        from: u64,
        /// At most this many bytes (at most `probe::FILE_PART`).
        max: u32,
    },
    /// The session is over.
    Bye,
}

/// One trial's load, as this agent must run it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prepare {
    /// The server as this agent reaches it (with the password: the channel is SSH's).
    pub target: TargetSpec,
    /// dbtax's schema on it.
    pub schema: String,
    /// The workload, its tables already made by the coordinator (statements included).
    pub workload: PreparedWorkload,
    /// This agent's share of the threads.
    pub threads: u32,
    /// Rate mode: this agent's share of the rate.
    pub rate: Option<Rate>,
    /// Planned length of the measured window, ns (rate mode's lag quarters).
    pub duration_ns: u64,
    /// Seed of this agent's schedules.
    pub seed: u64,
    /// Pids on this agent's kernel that are dbtax's own or the server's (not other
    /// processes of its host).
    #[serde(default)]
    pub not_others: Vec<u32>,
}

/// From an agent to the coordinator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// Who answers.
    Hello(Box<Hello>),
    /// The agent's clock, ns since the Unix epoch.
    Clock {
        /// Now, on the agent.
        clock_ns: u64,
    },
    /// Every client of the trial is connected.
    Ready {
        /// Connections opened.
        threads: u32,
    },
    /// The workers run (warming up).
    Started {
        /// When, on the agent's clock.
        clock_ns: u64,
    },
    /// Progress, once a second.
    Tick {
        /// Events so far in this trial, any phase.
        events: u64,
        /// Rate mode: the largest current schedule lag, µs.
        lag_us: u64,
    },
    /// The trial's outcome.
    Report(Box<AgentReport>),
    /// The server's process, found.
    Found(crate::host::probe::Found),
    /// A reading.
    Reading(Box<crate::host::probe::Reading>),
    /// A part of a file, in hex (none: the file ends before it).
    Bytes {
        /// Its bytes, two hex digits each.
        hex: String,
    },
    /// Something failed; `lost`: the server stopped answering.
    Error {
        /// What, in one paragraph.
        message: String,
        /// The connection to the server was lost (as opposed to refused).
        lost: bool,
    },
}

impl Reply {
    /// What kind of message it is, for words (never its content: a report is large).
    pub fn kind(&self) -> &'static str {
        match self {
            Reply::Hello(_) => "hello",
            Reply::Clock { .. } => "clock",
            Reply::Ready { .. } => "ready",
            Reply::Started { .. } => "started",
            Reply::Tick { .. } => "tick",
            Reply::Report(_) => "report",
            Reply::Error { .. } => "error",
            Reply::Found(_) => "found",
            Reply::Reading(_) => "reading",
            Reply::Bytes { .. } => "bytes",
        }
    }
}

/// The agent's facts, answered to `hello`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Hello {
    /// Its protocol.
    pub protocol: u32,
    /// Its dbtax version.
    pub version: String,
    /// Its host name.
    pub host: String,
    /// Its architecture (x86_64, aarch64).
    pub arch: String,
    /// Its CPU cores.
    pub cores: u32,
    /// The CPUs its load may run on (its affinity).
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// Its clock, ns since the Unix epoch.
    pub clock_ns: u64,
    /// Its process id, and its kernel's boot id: agents (and the coordinator, and the
    /// server) on one kernel leave each other out of the other processes they count.
    #[serde(default)]
    pub pid: u32,
    /// See `pid`.
    #[serde(default)]
    pub boot_id: String,
}

/// One agent's trial: its workers' reports merged, histograms serialized (V2, base64).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentReport {
    /// Statements completed in the measured window.
    pub queries: u64,
    /// Events completed in the measured window.
    pub events: u64,
    /// Failed events by message.
    pub errors: BTreeMap<String, u64>,
    /// A worker that could not reconnect.
    pub fatal: Option<String>,
    /// Connections lost for good (older agents do not send it: none).
    #[serde(default)]
    pub lost: u32,
    /// Event latency, µs.
    pub latency: String,
    /// Rate mode: service latency, schedule lag, skipped events, lag quarters.
    pub open: Option<OpenReport>,
    /// The agent process's CPU in the measured window, µs.
    pub cpu_us: u64,
    /// When its window opened and closed, on its clock (ns since the Unix epoch).
    pub window_ns: (u64, u64),
    /// What other processes of its host ran in the window, percent of one core.
    #[serde(default)]
    pub other_cpu_pct: Option<f64>,
}

/// Rate mode's extra figures, serialized.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpenReport {
    /// Service latency, µs.
    pub service: String,
    /// Schedule lag, µs.
    pub lag: String,
    /// Skipped events.
    pub skipped: u64,
    /// (sum of lags µs, events) in the window's first and last quarter.
    pub lag_quarters: [(f64, u64); 2],
}

/// A histogram as text: V2 (uncompressed) serialization, base64.
pub fn encode_histogram(h: &Histogram<u64>) -> Result<String> {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| anyhow::anyhow!("serializing a histogram: {e:?}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The inverse of `encode_histogram`.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .context("a histogram that is not base64")?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow::anyhow!("a histogram that does not deserialize: {e:?}"))
}

impl AgentReport {
    /// The merged report of an agent's workers, ready to send.
    pub fn new(r: &WorkerReport, cpu_us: u64, window_ns: (u64, u64)) -> Result<AgentReport> {
        Ok(AgentReport {
            queries: r.queries,
            events: r.events,
            errors: r.errors.clone(),
            fatal: r.fatal.clone(),
            lost: r.lost,
            latency: encode_histogram(&r.latency_us)?,
            open: r
                .open
                .as_ref()
                .map(|o| -> Result<OpenReport> {
                    Ok(OpenReport {
                        service: encode_histogram(&o.service_us)?,
                        lag: encode_histogram(&o.lag_us)?,
                        skipped: o.skipped,
                        lag_quarters: o.lag_quarters,
                    })
                })
                .transpose()?,
            cpu_us,
            window_ns,
            other_cpu_pct: None,
        })
    }

    /// Back to a worker report, for the coordinator's merge.
    pub fn to_worker_report(&self) -> Result<WorkerReport> {
        Ok(WorkerReport {
            latency_us: decode_histogram(&self.latency)?,
            queries: self.queries,
            events: self.events,
            errors: self.errors.clone(),
            fatal: self.fatal.clone(),
            lost: self.lost,
            by_tag: vec![],
            errors_by_tag: vec![],
            rows_off_by_tag: vec![],
            open: self
                .open
                .as_ref()
                .map(|o| -> Result<OpenLoopReport> {
                    Ok(OpenLoopReport {
                        service_us: decode_histogram(&o.service)?,
                        lag_us: decode_histogram(&o.lag)?,
                        skipped: o.skipped,
                        lag_quarters: o.lag_quarters,
                    })
                })
                .transpose()?,
        })
    }
}

/// A message as one JSON line, with the id under `key` ("id" for a request, "re" for the
/// request an answer answers; 0: none is named).
pub fn line_with_id<T: Serialize>(message: &T, key: &str, id: u64) -> Result<String> {
    let mut v = serde_json::to_value(message)?;
    if let Some(o) = v.as_object_mut()
        && id != 0
    {
        o.insert(key.into(), id.into());
    }
    let mut line = serde_json::to_string(&v)?;
    line.push('\n');
    Ok(line)
}

/// A JSON line back: the id under `key` (0 when none is named), and the message.
pub fn parse_with_id<T: serde::de::DeserializeOwned>(
    line: &str,
    key: &str,
) -> serde_json::Result<(u64, T)> {
    let mut v: serde_json::Value = serde_json::from_str(line.trim())?;
    let id = v
        .as_object_mut()
        .and_then(|o| o.remove(key))
        .and_then(|i| i.as_u64())
        .unwrap_or(0);
    Ok((id, serde_json::from_value(v)?))
}

/// Now, ns since the Unix epoch (the clock agents and coordinator compare).
pub fn clock_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_files_part_goes_as_hex_and_comes_back_whole() {
        let bytes: Vec<u8> = (0..=255u8).chain([0, 10, 13, 255]).collect();
        let hex = to_hex(&bytes);
        assert_eq!(&hex[..8], "00010203");
        assert_eq!(from_hex(&hex), Some(bytes));
        assert_eq!(from_hex(""), Some(vec![]));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
        let reply = Reply::Bytes {
            hex: to_hex(b"SELECT 1;\n"),
        };
        let line = serde_json::to_string(&reply).unwrap();
        match serde_json::from_str::<Reply>(&line).unwrap() {
            Reply::Bytes { hex } => assert_eq!(from_hex(&hex).unwrap(), b"SELECT 1;\n"),
            other => panic!("{}", other.kind()),
        }
    }

    use super::*;

    #[test]
    fn every_message_names_its_request_and_parses_back() {
        let line = line_with_id(&Request::Read(Default::default()), "id", 41).unwrap();
        assert!(line.ends_with('\n') && line.contains("\"id\":41"), "{line}");
        let (id, r): (u64, Request) = parse_with_id(&line, "id").unwrap();
        assert_eq!(id, 41);
        assert!(matches!(r, Request::Read(_)));
        let tick = Reply::Tick {
            events: 3,
            lag_us: 0,
        };
        let (re, back): (u64, Reply) =
            parse_with_id(&line_with_id(&tick, "re", 7).unwrap(), "re").unwrap();
        assert_eq!((re, back.kind()), (7, "tick"));
        // No id named (0): none written, and 0 read back.
        let plain = line_with_id(&Request::Clock, "id", 0).unwrap();
        assert_eq!(plain.trim(), r#"{"type":"clock"}"#);
        assert_eq!(parse_with_id::<Request>(&plain, "id").unwrap().0, 0);
    }

    #[test]
    fn a_histogram_survives_the_wire_exactly() {
        let mut h = crate::load::worker::new_histogram();
        for v in [1u64, 7, 250, 251, 9_999, 1_000_000, 3_600_000_000] {
            h.record_n(v, v % 13 + 1).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h).unwrap()).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.len(), h.len());
        for q in [0.5, 0.99, 0.999, 1.0] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
        assert!(decode_histogram("not base64!").is_err());
    }

    /// Three agents' reports, sent as JSON lines and merged, equal one report of every
    /// sample: the merged percentiles are the exact ones. Averaging the agents' p99s instead
    /// (a fast agent and a slow one) would be far off: checked too.
    #[test]
    fn agents_histograms_merge_to_the_histogram_of_all_samples() {
        let mut rng = crate::rng::Rng::new(7);
        let mut all = crate::load::worker::new_histogram();
        let mut reports = vec![];
        for agent in 0..3u64 {
            let mut h = crate::load::worker::new_histogram();
            // Agent 2 is slow: its latencies are ten times the others'.
            let scale = if agent == 2 { 10.0 } else { 1.0 };
            for _ in 0..20_000 {
                let us = (scale * 100.0 * (1.0 + 20.0 * rng.unit().powi(8))) as u64;
                h.record(us).unwrap();
                all.record(us).unwrap();
            }
            let r = WorkerReport {
                latency_us: h,
                queries: 20_000,
                events: 20_000,
                errors: BTreeMap::new(),
                fatal: None,
                lost: u32::from(agent == 2),
                open: None,
                by_tag: vec![],
                errors_by_tag: vec![],
                rows_off_by_tag: vec![],
            };
            let line = serde_json::to_string(&Reply::Report(Box::new(
                AgentReport::new(&r, 1000, (1, 2)).unwrap(),
            )))
            .unwrap();
            let Reply::Report(back) = serde_json::from_str(&line).unwrap() else {
                panic!("not a report: {line}")
            };
            reports.push(back.to_worker_report().unwrap());
        }
        let p99s: Vec<u64> = reports
            .iter()
            .map(|r| r.latency_us.value_at_quantile(0.99))
            .collect();
        let merged = crate::load::reports::merge_reports(reports).unwrap();
        assert_eq!(merged.latency_us, all);
        assert_eq!(merged.queries, 60_000);
        // An agent's connections lost for good cross the wire and are counted in the merge.
        assert_eq!(merged.lost, 1);
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(
                merged.latency_us.value_at_quantile(q),
                all.value_at_quantile(q)
            );
        }
        // What one agent's histogram costs on the wire (docs/guide.md, "Scale": the bytes a histogram costs).
        let wire = encode_histogram(&all).unwrap().len();
        println!("a histogram of 60,000 latencies spread over 2 decades: {wire} bytes as sent");
        assert!(wire < 20_000, "{wire}");
        let averaged = p99s.iter().sum::<u64>() as f64 / 3.0;
        let exact = all.value_at_quantile(0.99) as f64;
        assert!(
            (averaged - exact).abs() / exact > 0.2,
            "{averaged} vs {exact}"
        );
    }
}
