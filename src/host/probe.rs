//! What dbtax reads on the server's host: the server's CPU time, the feature logs' sizes,
//! their filesystems' room, and what every other process ran. One code for both places: in
//! this process when the server runs here, and in `dbtax agent --stdio` on the database's
//! host (`--server-host`), where the coordinator asks for a reading at each end of a trial's
//! measured window and a few times a second for the disk guard. It changes nothing and reads
//! only /proc, the files' metadata and statvfs.

use crate::host::{CpuSnapshot, OthersCpu};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How to find the server's process on its host, from what the server says of itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Find {
    /// Its pid file (the first line is the pid): @@pid_file, or PostgreSQL's postmaster.pid.
    pub pid_file: String,
    /// Names the process's command may have (`mariadbd`, `mysqld`; `postgres`).
    pub names: Vec<String>,
    /// The unix socket it must listen on, when the server has one.
    pub socket: Option<String>,
    /// The TCP port it must listen on, when it has one.
    pub port: Option<u16>,
}

/// The server's process, found and proved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Found {
    /// Its pid on its host.
    pub pid: u32,
    /// How it was found, in words ("pid file /var/run/mysqld/mysqld.pid, listening on
    /// /run/mysqld/mysqld.sock").
    pub found_by: String,
    /// The host's name.
    pub hostname: String,
    /// The host's online CPUs.
    pub cores: u32,
    /// Its kernel's boot id: the same as dbtax's when the "host" is a namespace or a
    /// container of dbtax's own machine (dbtax's pid then means the same there).
    #[serde(default)]
    pub boot_id: String,
}

/// This kernel's boot id.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// One reading's question.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    /// The server's pid (None: no CPU figure).
    pub pid: Option<u32>,
    /// Count its children too (PostgreSQL's postmaster and its backends).
    pub tree: bool,
    /// Files whose size (and filesystem) to read, as paths on the server's host.
    pub files: Vec<String>,
    /// Read what every other process ran, leaving out the server's tree and these pids
    /// (dbtax itself, when it runs there).
    pub others: Option<Vec<u32>>,
}

/// One reading.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// The server's CPU so far.
    pub server_cpu: Option<CpuSnapshot>,
    /// Each file's size (0 when it does not exist yet; None when it cannot be read).
    pub sizes: Vec<Option<u64>>,
    /// Each file's filesystem: (free, total) bytes.
    pub space: Vec<Option<(u64, u64)>>,
    /// Every other task's CPU so far.
    pub others: Option<OthersCpu>,
    /// When it was read, on the reading host's monotonic clock (ns; 0: not told): a
    /// trial's CPU and log growth are rates over the probe's own interval, not over the
    /// round trips' (a slow link's delays differ from one reading to the next).
    #[serde(default)]
    pub mono_ns: u64,
}

/// This host's monotonic clock, ns (CLOCK_MONOTONIC: never set back, not the wall clock).
pub fn mono_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec on the stack.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) } != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Read what `ask` asks, here.
pub fn read(ask: &Ask) -> Reading {
    let mono_ns = mono_ns();
    let server_cpu = ask.pid.and_then(|pid| {
        if ask.tree {
            crate::host::process_tree_cpu(pid)
        } else {
            crate::host::process_cpu(pid)
        }
    });
    let sizes = ask
        .files
        .iter()
        .map(|f| match std::fs::metadata(f) {
            Ok(m) => Some(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(0),
            Err(_) => None,
        })
        .collect();
    let space = ask
        .files
        .iter()
        .map(|f| {
            // Where the bytes land: a link into a small filesystem fills that one.
            let p = real_path(Path::new(f));
            crate::host::fs_space(p.parent().unwrap_or(&p))
        })
        .collect();
    let others = ask.others.as_ref().and_then(|skip| {
        // The reader itself (dbtax here, or the probe there) is not another process.
        let roots: Vec<u32> = ask
            .pid
            .into_iter()
            .chain(skip.iter().copied())
            .chain([std::process::id()])
            .collect();
        crate::host::others_cpu(&roots)
    });
    Reading {
        server_cpu,
        sizes,
        space,
        others,
        mono_ns,
    }
}

/// Find the server's process: the pid its pid file names, running a program of one of the
/// expected names, and listening on the socket or the port the server says it listens on
/// (another server's stale pid file, or a port forwarded elsewhere, fails this).
pub fn find_server(f: &Find) -> Result<Found, String> {
    let text = std::fs::read_to_string(&f.pid_file)
        .map_err(|e| format!("cannot read the pid file {} ({e})", f.pid_file))?;
    let pid: u32 = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| format!("{} does not start with a pid", f.pid_file))?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map_err(|_| format!("process {pid} (from {}) is not running", f.pid_file))?;
    let comm = comm.trim();
    if !f.names.iter().any(|n| comm.contains(n.as_str())) {
        return Err(format!(
            "process {pid} (from {}) is '{comm}', not {}",
            f.pid_file,
            f.names.join(" or ")
        ));
    }
    let inodes = socket_inodes(pid);
    if inodes.is_empty() {
        return Err(format!(
            "cannot see the sockets of process {pid} (run the probe as the server's user or \
             root)"
        ));
    }
    let on_socket = f
        .socket
        .as_deref()
        .filter(|s| unix_listeners(s).iter().any(|i| inodes.contains(i)));
    let on_port = f
        .port
        .filter(|p| tcp_listeners(*p).iter().any(|i| inodes.contains(i)));
    let place = match (on_socket, on_port) {
        (Some(s), _) => s.to_string(),
        (None, Some(p)) => format!("port {p}"),
        (None, None) => {
            return Err(format!(
                "process {pid} (from {}) does not listen on {}",
                f.pid_file,
                [f.socket.clone(), f.port.map(|p| format!("port {p}"))]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
        }
    };
    Ok(Found {
        pid,
        found_by: format!("pid file {}, listening on {place}", f.pid_file),
        hostname: crate::host::hostname(),
        cores: crate::host::online_cores(),
        boot_id: boot_id(),
    })
}

/// A path on this host with its links followed (a log file that is a link into a small
/// filesystem fills that filesystem), its folder's when the file does not exist yet.
pub fn real_path(p: &Path) -> PathBuf {
    let mut p = p.to_path_buf();
    // A link to a file not written yet: follow it by hand (canonicalize wants the target).
    for _ in 0..16 {
        let Ok(target) = std::fs::read_link(&p) else {
            break;
        };
        let dir = p.parent().map(PathBuf::from).unwrap_or_else(|| "/".into());
        p = if target.is_absolute() {
            target
        } else {
            dir.join(target)
        };
    }
    if let Ok(real) = std::fs::canonicalize(&p) {
        return real;
    }
    match (
        p.parent().and_then(|d| std::fs::canonicalize(d).ok()),
        p.file_name(),
    ) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => p,
    }
}

/// The socket inodes a process holds open.
fn socket_inodes(pid: u32) -> Vec<u64> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let l = std::fs::read_link(e.path()).ok()?;
                    let l = l.to_str()?;
                    l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Inodes of the unix sockets bound to `path` (/proc/net/unix: ... Inode Path).
fn unix_listeners(path: &str) -> Vec<u64> {
    let want = real_path(Path::new(path));
    std::fs::read_to_string("/proc/net/unix")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let p = f.get(7)?;
            (real_path(Path::new(p)) == want).then(|| f.get(6)?.parse().ok())?
        })
        .collect()
}

/// Inodes of the TCP sockets listening on `port` (/proc/net/tcp and tcp6, state 0A).
fn tcp_listeners(port: u16) -> Vec<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .skip(1)
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let local_port = u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()?;
                    (local_port == port && *f.get(3)? == "0A").then(|| f.get(9)?.parse().ok())?
                })
                .collect::<Vec<u64>>()
        })
        .collect()
}

/// A reading of the server's host that did not come in time (a slow link, a busy host): it
/// costs the trial it was for (the block is set aside and run again), not the run, while
/// the probe has been silent for less than its bound (`--probe-silence`).
#[derive(Debug, thiserror::Error)]
#[error(
    "the probe on the server's host {host} did not answer a reading within {waited_s} s \
     (silent for {silent_s} s; the run stops after {bound_s} s)"
)]
pub struct LateReading {
    /// The probe's host, in words.
    pub host: String,
    /// How long this reading was waited for, s.
    pub waited_s: u64,
    /// How long the probe has been silent, s.
    pub silent_s: u64,
    /// Its bound, s.
    pub bound_s: u64,
}

/// A trial whose two readings of the server's host were taken too far apart from its window
/// (one of them delayed by a busy host or a slow link): the CPU and the log bytes they saw
/// grew over another interval than the one the trial's queries were counted in, so they are
/// not that trial's. Like a late reading, it costs the trial (the block is run again).
#[derive(Debug, thiserror::Error)]
#[error(
    "the server's host was read {host_s:.1} s apart for a trial window of {window_s:.1} s (a \
     reading was delayed): its server CPU and log bytes are not that window's"
)]
pub struct ReadingsApart {
    /// Between the host's two readings, by its own clock, s.
    pub host_s: f64,
    /// The trial's measured window, s.
    pub window_s: f64,
}

/// Why a trial's readings of the server's host cannot be used, in words, when that is what
/// `e` is (or was caused by): a reading that did not come in time, or two that came too far
/// apart. Such a trial is lost, not the run.
pub fn reading_lost(e: &anyhow::Error) -> Option<String> {
    e.chain().find_map(|c| {
        c.downcast_ref::<LateReading>()
            .map(|l| l.to_string())
            .or_else(|| c.downcast_ref::<ReadingsApart>().map(|a| a.to_string()))
            .or_else(|| {
                c.downcast_ref::<dbtax_stats::run::hooks::TrialLost>()
                    .map(|t| t.0.clone())
            })
    })
}

/// Whether `e` is (or was caused by) a late reading.
pub fn is_late(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<LateReading>())
}

/// The most a part of a file read through a reader holds (`Reader::read_file`).
pub const FILE_PART: u32 = 1 << 20;

/// Up to `max` bytes of the file at `path` from byte `from` (none at or past its end).
pub fn read_file(path: &str, from: u64, max: u32) -> Result<Vec<u8>, String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    f.seek(SeekFrom::Start(from))
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut out = Vec::with_capacity(max.min(FILE_PART) as usize);
    f.take(u64::from(max.min(FILE_PART)))
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    Ok(out)
}

/// Where readings come from: this process, or the probe on the server's host.
pub trait Reader: Send + Sync {
    /// One reading; Err when the probe is gone (its words name the host), or a
    /// `LateReading` when it did not answer in time.
    fn read(&self, ask: &Ask) -> anyhow::Result<Reading>;
    /// Wait until the probe answers again (Ok), or until it has been silent past its bound
    /// (Err: it is taken for gone, and the run stops). Here: at once.
    fn answering(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// The server's host as results.json records it, when it is another machine.
    fn server_host(&self) -> Option<crate::results::ServerHost> {
        None
    }
    /// Whether this process's own pid is on that host (it is left out of `others`).
    fn here(&self) -> bool {
        true
    }
    /// The host in words.
    fn label(&self) -> String {
        "this machine".into()
    }
    /// Whether that host runs this process's kernel (a namespace or a container of this
    /// machine): this process's pid means the same there.
    fn same_kernel(&self) -> bool {
        self.here()
    }
    /// Find the server's process there.
    fn find_server(&self, f: &Find) -> anyhow::Result<Found> {
        find_server(f).map_err(|e| anyhow::anyhow!(e))
    }
    /// Up to `max` bytes of a file there from byte `from` (`dbtax capture`'s log).
    fn read_file(&self, path: &str, from: u64, max: u32) -> anyhow::Result<Vec<u8>> {
        read_file(path, from, max).map_err(|e| anyhow::anyhow!(e))
    }
}

/// Readings made in this process.
pub struct Here;

impl Reader for Here {
    fn read(&self, ask: &Ask) -> anyhow::Result<Reading> {
        Ok(read(ask))
    }
}

/// The reader of a server's host, shared by everything that reads there (the trial's
/// snapshots, the disk guard's watch).
#[derive(Clone)]
pub struct Host(pub std::sync::Arc<dyn Reader>);

impl Default for Host {
    fn default() -> Self {
        Host(std::sync::Arc::new(Here))
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Host({})", self.0.label())
    }
}

impl PartialEq for Host {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Host {
    /// Read `ask` there.
    pub fn read(&self, ask: &Ask) -> anyhow::Result<Reading> {
        self.0.read(ask)
    }

    /// The pids to leave out of what other processes ran there, besides the server's tree
    /// and the reader: this process, when it runs on that host's kernel.
    pub fn not_others(&self) -> Vec<u32> {
        if self.0.same_kernel() {
            vec![std::process::id()]
        } else {
            vec![]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process listening on a unix socket is found through its pid file and that socket;
    /// the same pid file naming a socket it does not hold, or another program's name, is not.
    #[test]
    fn a_server_is_found_by_its_pid_file_and_its_socket() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let pid_file = dir.path().join("x.pid");
        std::fs::write(&pid_file, format!("{}\n", std::process::id())).unwrap();
        let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
        let mut f = Find {
            pid_file: pid_file.display().to_string(),
            names: vec![comm.trim().chars().take(6).collect()],
            socket: Some(sock.display().to_string()),
            port: None,
        };
        let found = find_server(&f).unwrap();
        assert_eq!(found.pid, std::process::id());
        assert!(found.found_by.contains("s.sock"), "{found:?}");
        f.socket = Some(dir.path().join("other.sock").display().to_string());
        assert!(find_server(&f).unwrap_err().contains("does not listen"));
        f.socket = Some(sock.display().to_string());
        f.names = vec!["mariadbd".into()];
        assert!(find_server(&f).unwrap_err().contains("not mariadbd"));
    }

    /// A reading goes through the agents' protocol and comes back the same (thread ids are
    /// map keys: once they did not).
    #[test]
    fn a_reading_survives_the_protocol() {
        let r = read(&Ask {
            pid: Some(std::process::id()),
            others: Some(vec![]),
            ..Default::default()
        });
        let line =
            serde_json::to_string(&crate::agent::protocol::Reply::Reading(Box::new(r.clone())))
                .unwrap();
        match serde_json::from_str(&line).unwrap() {
            crate::agent::protocol::Reply::Reading(back) => assert_eq!(*back, r),
            other => panic!("{}", other.kind()),
        }
    }

    #[test]
    fn a_reading_has_the_sizes_and_room_of_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("general.log");
        std::fs::write(&log, b"12345").unwrap();
        let r = read(&Ask {
            pid: Some(std::process::id()),
            files: vec![
                log.display().to_string(),
                dir.path().join("not-yet.log").display().to_string(),
            ],
            others: Some(vec![]),
            ..Default::default()
        });
        assert_eq!(r.sizes, [Some(5), Some(0)]);
        assert!(
            r.space
                .iter()
                .all(|s| s.is_some_and(|(free, total)| free <= total))
        );
        assert!(r.server_cpu.is_some() && r.others.is_some());
    }
}
