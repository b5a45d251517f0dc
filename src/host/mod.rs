//! The machines: facts about this one for results.json and small /proc readers here; where the
//! server and the load run when they share it ([`cpus`]); what dbtax reads on the server's host,
//! here or through `--server-host`'s probe ([`probe`]).

pub mod cpus;
pub mod probe;

use crate::results::HostInfo;

/// Read the host's CPU model, cores, memory and kernel; unknown fields stay empty.
pub fn host_info() -> HostInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let cores = online_cores();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_bytes = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    HostInfo {
        cpu_model,
        cores,
        memory_bytes,
        kernel,
    }
}

/// The machine's online CPUs, whatever this process is bound to (`available_parallelism`
/// counts only the CPUs this thread may use: one, once the load is pinned).
pub fn online_cores() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 { n as u32 } else { 1 }
}

/// 128 random bits as hex, from the kernel (a server's identity stamp: no two servers may
/// ever share one).
pub fn random_id() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if read.is_err() {
        let mut r = crate::rng::Rng::from_time(std::process::id() as u64);
        b[..8].copy_from_slice(&r.next_u64().to_le_bytes());
        b[8..].copy_from_slice(&r.next_u64().to_le_bytes());
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// This machine's host name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// CPU time (user + system) of a process so far, µs, from /proc/PID/stat.
pub fn process_cpu_us(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some((utime + stime) * 1_000_000 / hz)
}

/// A process's CPU time at one moment: the kernel's tick-counted total (µs, every thread
/// that ever ran, at 10 ms resolution) and, where the kernel offers it, each live thread's
/// time in nanoseconds (/proc/PID/task/TID/schedstat).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuSnapshot {
    /// utime + stime from /proc/PID/stat, µs.
    pub ticks_us: u64,
    /// Live threads' CPU time, ns, by thread id.
    #[serde(with = "pairs_opt")]
    pub threads_ns: Option<std::collections::BTreeMap<u32, u64>>,
    /// A process tree: the time of the children its root has reaped, ticks. When it grows,
    /// a child ended in between, and its time is only in the ticks.
    pub reaped_ticks: u64,
}

impl CpuSnapshot {
    /// CPU time used between `self` and `later`, µs: summed over threads in nanoseconds
    /// when every thread of `self` is still alive (a thread's time dies with it), else
    /// from the ticks.
    pub fn used_until(&self, later: &CpuSnapshot) -> f64 {
        if let (Some(a), Some(b)) = (&self.threads_ns, &later.threads_ns)
            && a.keys().all(|tid| b.contains_key(tid))
            && self.reaped_ticks == later.reaped_ticks
        {
            let ns: u64 = b
                .iter()
                .map(|(tid, t)| t.saturating_sub(a.get(tid).copied().unwrap_or(0)))
                .sum();
            return ns as f64 / 1000.0;
        }
        later.ticks_us.saturating_sub(self.ticks_us) as f64
    }
}

/// A process's CPU time now (None when it cannot be read).
pub fn process_cpu(pid: u32) -> Option<CpuSnapshot> {
    let ticks_us = process_cpu_us(pid)?;
    let threads_ns = std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()
        .and_then(|dir| {
            dir.filter_map(|e| {
                let Ok(e) = e else { return Some(None) };
                let tid: Option<u32> = e.file_name().to_str().and_then(|s| s.parse().ok());
                let ns: Option<u64> = std::fs::read_to_string(e.path().join("schedstat"))
                    .ok()
                    .and_then(|t| t.split_whitespace().next()?.parse().ok());
                match (tid, ns) {
                    (Some(tid), Some(ns)) => Some(Some((tid, ns))),
                    // A thread that ended since the listing (a connection's, a test's): it
                    // has no time left to read, and `used_until` sees it gone.
                    _ if !e.path().exists() => None,
                    // One that is there and cannot be read: the figures are incomplete.
                    _ => Some(None),
                }
            })
            .collect::<Option<std::collections::BTreeMap<u32, u64>>>()
        });
    Some(CpuSnapshot {
        ticks_us,
        threads_ns,
        reaped_ticks: 0,
    })
}

/// The fields of /proc/PID/stat after the command name (field 3 onwards).
fn stat_fields(pid: u32) -> Option<Vec<u64>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // The state letter is not a number: keep the positions, with 0 in its place.
    Some(
        rest.split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect(),
    )
}

/// A process tree's CPU time now: `root`, its live children (a PostgreSQL postmaster and its
/// backends and background processes), and the children it has already reaped (its
/// cutime + cstime). Per-process nanoseconds where the kernel tells them.
pub fn process_tree_cpu(root: u32) -> Option<CpuSnapshot> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let own = stat_fields(root)?;
    // After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    let reaped_ticks = own.get(13)? + own.get(14)?;
    let mut ticks = own.get(11)? + own.get(12)? + reaped_ticks;
    let mut pids = vec![root];
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(f) = stat_fields(pid)
            && f.get(1) == Some(&(root as u64))
        {
            ticks += f.get(11).unwrap_or(&0) + f.get(12).unwrap_or(&0);
            pids.push(pid);
        }
    }
    let mut threads = std::collections::BTreeMap::new();
    let mut complete = true;
    for pid in pids {
        match process_cpu(pid).and_then(|s| s.threads_ns) {
            Some(t) => threads.extend(t),
            // A child that exited since the scan (a backend that closed, a short-lived
            // helper) has no threads to count: its time comes back through the ticks once it
            // is reaped, and `used_until` sees its threads gone. Only one that is there and
            // cannot be read leaves the figures incomplete.
            None if !std::path::Path::new(&format!("/proc/{pid}")).exists() => {}
            None => complete = false,
        }
    }
    Some(CpuSnapshot {
        ticks_us: ticks * 1_000_000 / hz,
        threads_ns: complete.then_some(threads),
        reaped_ticks,
    })
}

/// Every task's CPU time on this host at one moment, ns by thread id, leaving out some
/// process trees (the server, dbtax itself): what the rest of the machine ran.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OthersCpu(#[serde(with = "pairs")] std::collections::BTreeMap<u32, u64>);

/// A map of thread ids as [id, value] pairs: the probe's messages are an internally tagged
/// enum, through which serde cannot read a map's number keys back from JSON's strings.
mod pairs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(m: &BTreeMap<u32, u64>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u32, u64>, D::Error> {
        Ok(Vec::<(u32, u64)>::deserialize(d)?.into_iter().collect())
    }
}

/// `pairs` for an optional map.
mod pairs_opt {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(
        m: &Option<BTreeMap<u32, u64>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match m {
            Some(m) => s.collect_seq(m.iter()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<BTreeMap<u32, u64>>, D::Error> {
        Ok(Option::<Vec<(u32, u64)>>::deserialize(d)?.map(|v| v.into_iter().collect()))
    }
}

impl OthersCpu {
    /// The CPU the other tasks used between `self` and `later`, ns. A task that began in
    /// between counts from its start; one that ended in between is lost (its time dies
    /// with it), so the figure never overstates.
    pub fn used_until(&self, later: &OthersCpu) -> u64 {
        later
            .0
            .iter()
            .map(|(tid, ns)| ns.saturating_sub(self.0.get(tid).copied().unwrap_or(0)))
            .sum()
    }
}

/// The CPU time of every task on this host but those of the processes `roots` and their
/// children (from /proc/PID/task/TID/schedstat, ns). None when /proc cannot be listed.
pub fn others_cpu(roots: &[u32]) -> Option<OthersCpu> {
    let mut times = std::collections::BTreeMap::new();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if roots.contains(&pid) {
            continue;
        }
        match stat_fields(pid).and_then(|f| f.get(1).copied()) {
            Some(ppid) if roots.iter().any(|r| u64::from(*r) == ppid) => continue,
            Some(_) => {}
            None => continue,
        }
        let Ok(tasks) = std::fs::read_dir(e.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(ns) = std::fs::read_to_string(t.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            {
                times.insert(tid, ns);
            }
        }
    }
    Some(OthersCpu(times))
}

/// This process's CPU time (user + system, all threads) so far, µs.
pub fn self_cpu_us() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

/// Free and total bytes of the filesystem holding `path`.
pub fn fs_space(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct; c is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let frsize = st.f_frsize as u64;
    Some((st.f_bavail as u64 * frsize, st.f_blocks as u64 * frsize))
}

/// Current UTC time as RFC 3339, without a date crate.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs, None)
}

/// The current UTC time with milliseconds, e.g. 2026-11-30T10:15:00.123Z.
pub fn now_rfc3339_ms() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now.as_secs(), Some(now.subsec_millis()))
}

fn rfc3339(secs: u64, millis: Option<u32>) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let frac = millis.map(|ms| format!(".{ms:03}")).unwrap_or_default();
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{frac}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Seconds since the epoch of a time as `now_rfc3339_ms` writes it
/// ("2026-12-03T09:38:58.123Z"); None for anything else.
pub fn rfc3339_seconds(s: &str) -> Option<f64> {
    let (date, time) = s.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|x| x.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.splitn(3, ':');
    let (h, min) = (
        t.next()?.parse::<f64>().ok()?,
        t.next()?.parse::<f64>().ok()?,
    );
    let sec = t.next()?.parse::<f64>().ok()?;
    let days = dbtax_logs::time::days_from_civil(y, m, day);
    Some(days as f64 * 86_400.0 + h * 3600.0 + min * 60.0 + sec)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_times_read_back() {
        for secs in [0u64, 951_782_400, 1_764_754_738, 4_102_444_799] {
            let text = super::rfc3339(secs, Some(250));
            assert_eq!(
                super::rfc3339_seconds(&text),
                Some(secs as f64 + 0.25),
                "{text}"
            );
        }
        assert_eq!(super::rfc3339_seconds("yesterday"), None);
    }

    #[test]
    fn civil_dates_are_right() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(super::civil_from_days(11_017), (2000, 3, 1));
    }

    #[test]
    fn own_cpu_time_grows() {
        let a = super::self_cpu_us();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(super::self_cpu_us() > a);
    }

    #[test]
    fn cpu_between_snapshots_is_counted_in_nanoseconds_while_threads_live() {
        use super::CpuSnapshot;
        let at = |ticks_us, threads: &[(u32, u64)]| CpuSnapshot {
            ticks_us,
            threads_ns: Some(threads.iter().copied().collect()),
            reaped_ticks: 0,
        };
        let a = at(10_000, &[(1, 5_000_000), (2, 1_000_000)]);
        // Thread 1 ran 1.5 ms, thread 2 0.25 ms, thread 3 (new) 0.1 ms: 1.85 ms, though the
        // ticks moved by 10 ms.
        let b = at(20_000, &[(1, 6_500_000), (2, 1_250_000), (3, 100_000)]);
        assert!((a.used_until(&b) - 1850.0).abs() < 1e-9);
        // Thread 2 exited: its time since `a` is lost, so the ticks are used.
        let c = at(30_000, &[(1, 6_500_000)]);
        assert_eq!(a.used_until(&c), 20_000.0);
        // No per-thread figures: the ticks.
        let d = CpuSnapshot {
            ticks_us: 40_000,
            threads_ns: None,
            reaped_ticks: 0,
        };
        assert_eq!(a.used_until(&d), 30_000.0);
    }

    #[test]
    fn a_process_tree_counts_its_children_live_and_reaped() {
        let me = std::process::id();
        let before = super::process_tree_cpu(me).unwrap();
        // A child that burns CPU while alive is counted through its own stat, then (once
        // reaped) through this process's cutime: the tree's total never drops.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(150));
        let during = super::process_tree_cpu(me).unwrap();
        let child_ns = during
            .threads_ns
            .as_ref()
            .unwrap()
            .get(&child.id())
            .copied();
        assert!(
            child_ns.is_some_and(|ns| ns > 0),
            "the live child is in the tree"
        );
        child.wait().unwrap();
        let after = super::process_tree_cpu(me).unwrap();
        assert!(after.ticks_us >= during.ticks_us);
        assert!(after.ticks_us > before.ticks_us);
        // The child is gone: its time comes from the ticks (cutime), not lost.
        assert!(
            before.used_until(&after) >= 10_000.0,
            "{before:?} {after:?}"
        );
    }

    /// A process burning CPU outside the left-out trees is seen, at about the CPU it used;
    /// this process's own burning is not.
    #[test]
    fn other_processes_cpu_is_seen_and_our_own_is_not() {
        let me = std::process::id();
        // Every process's CPU and every other's, read back to back: a neighbour on the
        // machine is in both, our own 300 ms of spinning CPU only in the first.
        let (all0, others0) = (
            super::others_cpu(&[]).unwrap(),
            super::others_cpu(&[me]).unwrap(),
        );
        // 300 ms of our own CPU, however long a crowded machine takes to give it (a neighbour
        // on the cores: 300 ms of the clock can be half that of CPU).
        let mut x = 0u64;
        let (t, own0) = (std::time::Instant::now(), super::self_cpu_us());
        while super::self_cpu_us().saturating_sub(own0) < 300_000
            && t.elapsed() < std::time::Duration::from_secs(20)
        {
            for _ in 0..10_000 {
                x = x.wrapping_add(x ^ 7);
            }
        }
        std::hint::black_box(x);
        let others1 = super::others_cpu(&[me]).unwrap();
        let all1 = super::others_cpu(&[]).unwrap();
        let ours = all0
            .used_until(&all1)
            .saturating_sub(others0.used_until(&others1));
        // A hog outside: not our child (`setsid` would still be our child; a shell that
        // backgrounds the loop and exits makes it the init's).
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("timeout 0.6 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!")
            .output()
            .unwrap();
        let hog: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let a = super::others_cpu(&[me]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(400));
        let b = super::others_cpu(&[me]).unwrap();
        let busy = a.used_until(&b);
        let _ = std::process::Command::new("kill")
            .arg(hog.to_string())
            .status();
        // 400 ms of a spinning shell: at least a quarter of it even on a crowded machine
        // (two cores); our own 300 ms of spinning counted nothing like that.
        assert!(busy > 100_000_000, "the hog: {busy} ns");
        // (Ours is what every process used less what the others did, each read in turn while
        // neighbours spin: a third of our 300 ms of CPU is lost to that at worst; counted
        // among the others, ours would be about 0.)
        assert!(
            ours > 100_000_000,
            "our own spin was counted among the others: {ours} ns"
        );
    }

    #[test]
    fn this_process_has_per_thread_cpu_times() {
        let s = super::process_cpu(std::process::id()).unwrap();
        let threads = s.threads_ns.expect("/proc/self/task/*/schedstat");
        assert!(threads.contains_key(&std::process::id()));
    }
}
