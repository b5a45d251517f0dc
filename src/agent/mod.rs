//! Load from several client hosts. The coordinator (the `run` or `bench` process) starts
//! `dbtax agent --stdio` on each host through OpenSSH (or as a subprocess for `local`), alone
//! changes the server's settings and decides the trials, and per trial tells every agent its
//! share of the threads (and of the rate) and the instants, on that agent's clock, at which the
//! measured window opens and closes. Agents only load: they answer with their counters, their
//! own CPU and their histograms (V2-serialized), which the coordinator adds exactly.
//!
//! [`protocol`]: the messages; [`serve`]: the agent's side; [`launch`]: starting an agent's
//! process; [`pool`]: the agents, hello and clocks; [`trial`]: the pool as a `load::Load`, one
//! trial over every agent.

pub mod launch;
pub mod link;
pub mod pool;
pub mod probe;
pub mod protocol;
pub mod serve;
pub mod trial;

use crate::error::usage;
use crate::server::TargetSpec;
use anyhow::Result;

pub use pool::Pool;

/// Where one agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A subprocess on this machine.
    Local,
    /// Through `ssh [-p port] [user@]host`.
    Ssh {
        /// Login user, when given.
        user: Option<String>,
        /// Host name or address.
        host: String,
        /// SSH port, when given.
        port: Option<u16>,
    },
}

/// One entry of `--agents`: where, and its weight in the split of threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSpec {
    /// Where it runs.
    pub place: Place,
    /// Its share of the threads, relative to the others' (`host*3`; default 1).
    pub weight: u32,
}

impl AgentSpec {
    /// `local`, `ssh://[user@]host[:port]`, either followed by `*N` (a weight).
    pub fn parse(text: &str) -> Result<AgentSpec> {
        let text = text.trim();
        let bad = |why: &str| {
            usage(format!(
                "bad agent '{text}': {why}. Write ssh://[user@]host[:port] or local, \
                 optionally with a weight: ssh://client1*2"
            ))
        };
        let (place, weight) = match text.rsplit_once('*') {
            Some((p, w)) => (
                p,
                w.parse::<u32>()
                    .ok()
                    .filter(|w| *w > 0)
                    .ok_or_else(|| bad("the weight after '*' must be a whole number above 0"))?,
            ),
            None => (text, 1),
        };
        let place = if place == "local" {
            Place::Local
        } else if let Some(rest) = place.strip_prefix("ssh://") {
            let rest = rest.trim_end_matches('/');
            let (user, hostport) = match rest.rsplit_once('@') {
                Some((u, h)) if !u.is_empty() => (Some(u.to_string()), h),
                Some(_) => return Err(bad("an empty user before '@'")),
                None => (None, rest),
            };
            let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
                // [::1]:22
                let (h, after) = inner
                    .split_once(']')
                    .ok_or_else(|| bad("an unclosed '['"))?;
                let port = match after.strip_prefix(':') {
                    Some(p) => Some(p.parse().map_err(|_| bad("a port that is not a number"))?),
                    None if after.is_empty() => None,
                    None => return Err(bad("text after ']'")),
                };
                (h.to_string(), port)
            } else {
                match hostport.split_once(':') {
                    Some((h, p)) => (
                        h.to_string(),
                        Some(p.parse().map_err(|_| bad("a port that is not a number"))?),
                    ),
                    None => (hostport.to_string(), None),
                }
            };
            if host.is_empty() || host.contains('/') || host.starts_with('-') {
                return Err(bad("no host name"));
            }
            Place::Ssh { user, host, port }
        } else {
            return Err(bad("not an ssh:// URL"));
        };
        Ok(AgentSpec { place, weight })
    }

    /// How it is named in messages and results: `local` or `ssh://user@host:port`.
    pub fn label(&self) -> String {
        match &self.place {
            Place::Local => "local".into(),
            Place::Ssh { user, host, port } => {
                let user = user.as_ref().map(|u| format!("{u}@")).unwrap_or_default();
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                let port = port.map(|p| format!(":{p}")).unwrap_or_default();
                format!("ssh://{user}{host}{port}")
            }
        }
    }
}

/// Parse a list of agents (`--agents a,b` or the file's `agents = [...]`).
pub fn parse_list(items: &[String]) -> Result<Vec<AgentSpec>> {
    items
        .iter()
        .flat_map(|i| i.split(','))
        .filter(|s| !s.trim().is_empty())
        .map(AgentSpec::parse)
        .collect()
}

/// The stated rule: `total` threads split in proportion to the weights (evenly by default),
/// by largest remainder, ties to the earlier agent. The shares add up to `total`; an agent
/// may get 0 (fewer threads than agents) and then sits the trial out.
pub fn split(total: u32, weights: &[u32]) -> Vec<u32> {
    let sum: u64 = weights.iter().map(|w| *w as u64).sum::<u64>().max(1);
    let exact: Vec<(u32, u64)> = weights
        .iter()
        .map(|w| {
            let num = total as u64 * *w as u64;
            ((num / sum) as u32, num % sum)
        })
        .collect();
    let mut shares: Vec<u32> = exact.iter().map(|e| e.0).collect();
    let left = total - shares.iter().sum::<u32>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    // Largest remainder first; the stable sort keeps ties in list order.
    order.sort_by(|a, b| exact[*b].1.cmp(&exact[*a].1));
    for i in order.into_iter().take(left as usize) {
        shares[i] += 1;
    }
    shares
}

/// Which dbtax the agent hosts run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AgentBin {
    /// `dbtax` on each host's PATH.
    #[default]
    OnPath,
    /// This path on each host.
    Path(String),
    /// This binary, copied to a temporary file on each host (its architecture checked
    /// first) and deleted by the agent as it starts.
    Copy,
}

impl AgentBin {
    /// `--agent-bin PATH`, or the word `copy`; absent: `dbtax` on the hosts' PATH.
    pub fn parse(flag: Option<&str>) -> AgentBin {
        match flag {
            None => AgentBin::OnPath,
            Some("copy") => AgentBin::Copy,
            Some(path) => AgentBin::Path(path.to_string()),
        }
    }
}

/// How to start the agents: checked before anything starts.
#[derive(Debug, Clone, Default)]
pub struct AgentOptions {
    /// The agents.
    pub agents: Vec<AgentSpec>,
    /// The binary they run.
    pub bin: AgentBin,
    /// The server's URL as the agents must reach it (default: the coordinator's).
    pub target: Option<TargetSpec>,
}

impl AgentOptions {
    /// The agents (flags or the file) with `--agent-bin` and `--agent-target`, checked
    /// before anything starts (bad input is exit 2).
    pub fn new(
        agents: Vec<AgentSpec>,
        agent_bin: Option<&str>,
        agent_target: Option<&str>,
    ) -> Result<AgentOptions> {
        if agents.is_empty() {
            if agent_target.is_some() {
                return Err(usage("--agent-target needs --agents"));
            }
            if agent_bin.is_some() {
                return Err(usage("--agent-bin needs --agents"));
            }
        }
        Ok(AgentOptions {
            agents,
            bin: AgentBin::parse(agent_bin),
            target: agent_target.map(TargetSpec::parse).transpose()?,
        })
    }
}

/// `--server-host`: an ssh:// place (no weight: it makes no load).
pub fn server_host(text: &str) -> Result<AgentSpec> {
    let bad = || {
        usage(format!(
            "bad --server-host '{text}': write ssh://[user@]host[:port], the database's host \
             as ssh reaches it"
        ))
    };
    let spec = AgentSpec::parse(text).map_err(|_| bad())?;
    if spec.weight != 1 || spec.place == Place::Local || text.contains('*') {
        return Err(bad());
    }
    Ok(spec)
}

/// Start the agents of a run (none: Ok(None)) and aim them at `server`: `--agent-target`,
/// else the URL this process reaches it by. Failures are bad input (exit 2), before any change.
pub fn start(
    opts: &AgentOptions,
    server: &crate::server::Server,
    status: &mut dyn FnMut(&str),
) -> Result<Option<Pool>> {
    if opts.agents.is_empty() {
        return Ok(None);
    }
    let target = opts
        .target
        .clone()
        .unwrap_or_else(|| server.client_target());
    if target.is_managed() || target.engine().name != server.engine().name {
        return Err(usage(format!(
            "--agent-target {} is not a URL of the target's kind ({}): give the same server \
             as the agents reach it, e.g. {}",
            target.redacted(),
            server.engine().title,
            server.engine().examples[0]
        )));
    }
    status(&format!(
        "starting {} agent{}",
        opts.agents.len(),
        if opts.agents.len() == 1 { "" } else { "s" }
    ));
    let mut pool = Pool::start(opts, status)?;
    pool.set_target(target, &server.schema);
    Ok(Some(pool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_host_is_one_ssh_place() {
        let h = server_host("ssh://admin@db:2200").unwrap();
        assert_eq!(
            h.place,
            Place::Ssh {
                user: Some("admin".into()),
                host: "db".into(),
                port: Some(2200),
            }
        );
        for bad in ["local", "ssh://db*2", "http://db", "db"] {
            let e = format!("{:#}", server_host(bad).unwrap_err());
            assert!(
                e.contains("bad --server-host") && e.contains("ssh://[user@]host[:port]"),
                "{e}"
            );
            assert!(!e.contains("weight"), "{e}");
            assert_eq!(crate::error::exit_code(&server_host(bad).unwrap_err()), 2);
        }
    }

    #[test]
    fn agents_parse_with_users_ports_and_weights() {
        let a = parse_list(&[
            "ssh://bob@db-client:2222*3,local".into(),
            "ssh://[::1]".into(),
        ])
        .unwrap();
        assert_eq!(
            a[0],
            AgentSpec {
                place: Place::Ssh {
                    user: Some("bob".into()),
                    host: "db-client".into(),
                    port: Some(2222)
                },
                weight: 3
            }
        );
        assert_eq!(a[0].label(), "ssh://bob@db-client:2222");
        assert_eq!(a[1].place, Place::Local);
        assert_eq!(a[2].label(), "ssh://[::1]");
        for bad in [
            "host",
            "ssh://",
            "ssh://h:x",
            "local*0",
            "ssh://-oProxyCommand=x",
            "ssh://@h",
        ] {
            let e = AgentSpec::parse(bad).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
        }
    }

    #[test]
    fn threads_split_evenly_or_by_weight_and_add_up() {
        assert_eq!(split(8, &[1, 1]), vec![4, 4]);
        assert_eq!(split(9, &[1, 1]), vec![5, 4]);
        assert_eq!(split(1, &[1, 1, 1]), vec![1, 0, 0]);
        assert_eq!(split(8, &[3, 1]), vec![6, 2]);
        assert_eq!(split(10, &[1, 2, 2]), vec![2, 4, 4]);
        for total in 0..200 {
            for w in [&[1u32, 1, 1][..], &[5, 3, 1, 1], &[7]] {
                let s = split(total, w);
                assert_eq!(s.iter().sum::<u32>(), total);
            }
        }
    }
}
