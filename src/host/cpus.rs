//! Where the server and the load run when they share a machine. Free on the same cores, a
//! feature changes how the scheduler shares them (a server thread blocked on a log's mutex
//! hands its core to a client) and that is what gets measured: the general log "raised"
//! throughput at 16 threads free here, and cost 7.7% pinned. So a managed server starts on
//! one set of CPUs and dbtax's load runs on the rest. A user's server is never re-pinned
//! (that would be a setting to restore): when its threads are bound, the load takes the other
//! CPUs; when they are not, the run says that server and load share the cores, and how to
//! separate them.

use anyhow::{Result, bail};

/// What the user asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Choice {
    /// An even split of this process's CPUs when the server is managed; a user's server's
    /// binding respected.
    #[default]
    Auto,
    /// `--cpus server=1,load=0`.
    Given {
        /// The server's CPUs (a managed server is started on them).
        server: Vec<usize>,
        /// The load's CPUs.
        load: Vec<usize>,
    },
    /// `--no-pin`: measure free, and say so.
    Off,
}

/// Where server and load ran, as results.json records it (`cpus`).
pub use crate::results::Cpus;

/// Parse `server=1,load=0` (each a list such as `0-3,6`).
pub fn parse_choice(s: &str) -> Result<Choice> {
    // Comma-separated: a part with '=' starts a key, the parts after it without one continue
    // its list (server=0-1,4,load=2).
    let mut parts: Vec<(String, String)> = vec![];
    for token in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match (token.split_once('='), parts.last_mut()) {
            (Some((key, value)), _) => parts.push((key.trim().to_string(), value.to_string())),
            (None, Some((_, list))) => *list = format!("{list},{token}"),
            (None, None) => {
                bail!("--cpus: '{s}' is not server=LIST,load=LIST (e.g. --cpus server=1,load=0)")
            }
        }
    }
    let (mut server, mut load) = (None, None);
    for (key, value) in parts {
        let list = parse_list(&value).map_err(|e| anyhow::anyhow!("--cpus {key}=: {e}"))?;
        match key.as_str() {
            "server" => server = Some(list),
            "load" => load = Some(list),
            other => bail!("--cpus: unknown part '{other}' (expected server=LIST,load=LIST)"),
        }
    }
    let (Some(server), Some(load)) = (server, load) else {
        bail!("--cpus needs both parts, e.g. --cpus server=1,load=0");
    };
    if server.iter().any(|c| load.contains(c)) {
        bail!("--cpus: the server's and the load's CPUs overlap; give them separate CPUs");
    }
    let allowed = allowed();
    if let Some(c) = server.iter().chain(&load).find(|c| !allowed.contains(c)) {
        bail!(
            "--cpus: CPU {c} is not one this process may use ({})",
            format_list(&allowed)
        );
    }
    Ok(Choice::Given { server, load })
}

/// Parse a CPU list: `0-3,6`.
pub fn parse_list(s: &str) -> Result<Vec<usize>> {
    let mut out = vec![];
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || anyhow::anyhow!("'{part}' is not a CPU number or range (e.g. 0-3,6)");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    if out.is_empty() {
        bail!("an empty CPU list");
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// A CPU list as `taskset -c` takes it: `0-3,6`.
pub fn format_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = vec![];
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The CPUs this thread may run on.
pub fn allowed() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            return (0..n).collect();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Bind the calling thread (and the threads it starts from now on) to `cpus`:
/// sched_setaffinity(0, cpus), async-signal-safe, so a child may call it before exec.
pub fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: the set is built in place; sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs any thread of process `pid` may run on (their union), from /proc.
pub fn of_process(pid: u32) -> Option<Vec<usize>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut all: Vec<usize> = vec![];
    for t in tasks.flatten() {
        // A thread that ended since the folder was listed has no status left: skip it (a
        // server's pool starts and ends threads; so do the suite's).
        let Ok(status) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
        all.extend(parse_list(list.trim()).ok()?);
    }
    all.sort_unstable();
    all.dedup();
    (!all.is_empty()).then_some(all)
}

/// Where a run put server and load, and what it says about it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placement {
    /// The CPUs each may use (None: the server is not on this machine, or not found).
    pub cpus: Option<Cpus>,
    /// Server and load on disjoint CPUs.
    pub pinned: bool,
    /// For the plan: what was done.
    pub note: Option<String>,
    /// For the results: server and load share cores, and how to separate them.
    pub warning: Option<String>,
}

/// The CPUs a managed server is started on (None: unpinned).
pub fn managed_server_cpus(choice: &Choice) -> Option<Vec<usize>> {
    match choice {
        Choice::Off => None,
        Choice::Given { server, .. } => Some(server.clone()),
        Choice::Auto => split(&allowed()).map(|s| s.server),
    }
}

/// Where server and load run, once the server is reached: `started_on` the CPUs a managed
/// server was started on, `pid` the server's process when it is on this machine. Nothing is
/// bound here (`set_affinity` with the load's CPUs, on the thread that starts the workers, does that).
pub fn place(
    choice: &Choice,
    started_on: Option<&[usize]>,
    managed: bool,
    pid: Option<u32>,
) -> Placement {
    let all = allowed();
    let shared = |server: Vec<usize>, why: String| Placement {
        cpus: Some(Cpus {
            server,
            load: all.clone(),
        }),
        pinned: false,
        note: Some(format!("server and load share the cores ({why})")),
        warning: Some(format!(
            "the server and dbtax's load shared this machine's cores ({why}): how the scheduler \
             shared them is part of these numbers (a feature that blocks a server thread hands \
             its core to a client)"
        )),
    };
    let pinned = |server: Vec<usize>, load: Vec<usize>, how: &str| Placement {
        note: Some(format!(
            "server on CPU {}, load on CPU {} ({how})",
            format_list(&server),
            format_list(&load)
        )),
        cpus: Some(Cpus { server, load }),
        pinned: true,
        warning: None,
    };
    let load_of = |choice: &Choice, server: &[usize]| match choice {
        Choice::Given { load, .. } => load.clone(),
        _ => all
            .iter()
            .copied()
            .filter(|c| !server.contains(c))
            .collect(),
    };
    if managed {
        return match started_on {
            Some(server) => {
                let load = load_of(choice, server);
                pinned(server.to_vec(), load, "--cpus, or an even split")
            }
            None if *choice == Choice::Off => shared(all.clone(), "--no-pin".into()),
            None => shared(all.clone(), "a single CPU: nothing to split".into()),
        };
    }
    let Some(pid) = pid else {
        return Placement::default();
    };
    let Some(server) = of_process(pid) else {
        return Placement::default();
    };
    if *choice == Choice::Off {
        return shared(server, "--no-pin".into());
    }
    let load = load_of(choice, &server);
    if server.iter().all(|c| !load.contains(c)) && !load.is_empty() {
        return pinned(server, load, "the server's own binding, respected");
    }
    let hint = match split(&all) {
        Some(s) => format!(
            "not bound; to separate them bind the server with `taskset -acp {} {pid}` and dbtax \
             takes the other CPUs",
            format_list(&s.server)
        ),
        None => "a single CPU".into(),
    };
    let mut p = shared(server, hint);
    if let Choice::Given { server: want, .. } = choice {
        p.warning = p.warning.map(|w| {
            format!(
                "{w}; --cpus asked for the server on CPU {}, but dbtax does not move a server \
                 it did not start",
                format_list(want)
            )
        });
    }
    p
}

/// An even split of `cpus`: the server gets the upper half, the load the lower. None with
/// fewer than two.
pub fn split(cpus: &[usize]) -> Option<Cpus> {
    if cpus.len() < 2 {
        return None;
    }
    let half = cpus.len() / 2;
    Some(Cpus {
        server: cpus[half..].to_vec(),
        load: cpus[..half].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_print_as_taskset_writes_them() {
        assert_eq!(parse_list("0-3,6").unwrap(), [0, 1, 2, 3, 6]);
        assert_eq!(format_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert!(parse_list("3-1").is_err() && parse_list("a").is_err() && parse_list("").is_err());
        let all = allowed();
        assert!(!all.is_empty());
        let one = all[0].to_string();
        let two = format!("server={},load={}", all[all.len() - 1], all[0]);
        if all.len() >= 2 {
            assert_eq!(
                parse_choice(&two).unwrap(),
                Choice::Given {
                    server: vec![all[all.len() - 1]],
                    load: vec![all[0]]
                }
            );
        }
        let overlap = format!("server={one},load={one}");
        assert!(
            parse_choice(&overlap)
                .unwrap_err()
                .to_string()
                .contains("overlap")
        );
        assert!(parse_choice("server=0").is_err());
        let said = |s: &str| parse_choice(s).unwrap_err().to_string();
        assert!(
            said("garbage").contains("server=LIST,load=LIST"),
            "{}",
            said("garbage")
        );
        assert!(
            said("load=0,server=x").contains("--cpus server=: 'x'"),
            "{}",
            said("load=0,server=x")
        );
        assert!(
            said("server=,load=0").contains("empty"),
            "{}",
            said("server=,load=0")
        );
        assert!(parse_choice("server=0,load=9999").is_err());
    }

    #[test]
    fn an_even_split_gives_the_server_the_upper_half() {
        let s = split(&[0, 1]).unwrap();
        assert_eq!((s.server, s.load), (vec![1], vec![0]));
        assert!(split(&[0]).is_none());
        assert!(!split(&[0, 1, 2, 3]).unwrap().shared());
    }

    #[test]
    fn this_process_reads_its_own_threads() {
        let mine = of_process(std::process::id()).unwrap();
        assert!(allowed().iter().all(|c| mine.contains(c)));
    }
}
