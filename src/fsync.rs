//! `dbtax fsync`: the log-device probe behind study 004 (binlog preallocation). For 1–16
//! writer threads it measures durable small appends four ways:
//! - append: write at the end of a growing file, then fdatasync (the size changes, so the
//!   filesystem must also commit metadata: the binlog's default behaviour);
//! - prealloc: overwrite in a file already filled with zeros, then fdatasync (no metadata);
//! - dsync: overwrite in a preallocated file opened with O_DSYNC (what InnoDB's
//!   innodb_flush_method=O_DSYNC and pg_test_fsync's open_datasync do);
//! - group: writers queue their record; one leader writes every waiting record at once and
//!   calls fdatasync once for all of them (group commit).
//!
//! Each writer counts its own commits and records its latency in its own histogram.

use crate::error::usage;
use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes per commit record (a small binlog event).
pub const RECORD: usize = 512;
/// Size of the preallocated files.
const PREALLOC_BYTES: u64 = 64 << 20;

/// The ways of making a small append durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Append to a growing file + fdatasync.
    Append,
    /// Overwrite in a preallocated, zero-filled file + fdatasync.
    Prealloc,
    /// O_DSYNC overwrite in a preallocated file.
    Dsync,
    /// One fdatasync for every waiting writer.
    Group,
}

impl Method {
    /// All methods, in report order.
    pub const ALL: [Method; 4] = [
        Method::Append,
        Method::Prealloc,
        Method::Dsync,
        Method::Group,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Append => "append+fdatasync",
            Method::Prealloc => "prealloc+fdatasync",
            Method::Dsync => "O_DSYNC",
            Method::Group => "group commit",
        }
    }
}

/// One (method, threads) measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// How commits were made durable.
    pub method: Method,
    /// Writer threads.
    pub threads: u32,
    /// Durable commits per second, all writers.
    pub commits_per_s: f64,
    /// Median commit latency, ms.
    pub p50_ms: f64,
    /// 99th percentile commit latency, ms.
    pub p99_ms: f64,
    /// fdatasync (or O_DSYNC write) calls per second.
    pub syncs_per_s: f64,
}

/// The whole probe.
#[derive(Debug, Clone, Serialize)]
pub struct FsyncReport {
    /// Where the files were written.
    pub dir: String,
    /// Record size, bytes.
    pub record_bytes: usize,
    /// Seconds per measurement.
    pub duration_s: f64,
    /// Every measurement.
    pub probes: Vec<Probe>,
    /// The answer in words.
    pub summary: Vec<String>,
}

struct Shared {
    stop: AtomicBool,
    offset: AtomicU64,
    syncs: AtomicU64,
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds")
}

fn open_file(path: &Path, dsync: bool, append: bool) -> Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true);
    if append {
        o.append(true);
    }
    if dsync {
        o.custom_flags(libc::O_DSYNC);
    }
    o.open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// Fill a file with zeros and make it durable, so overwrites change no metadata.
fn preallocate(path: &Path) -> Result<()> {
    let mut f = open_file(path, false, false)?;
    f.set_len(0)?;
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..(PREALLOC_BYTES >> 20) {
        f.write_all(&chunk)?;
    }
    f.sync_all()?;
    Ok(())
}

fn fdatasync(f: &File) -> std::io::Result<()> {
    f.sync_data()
}

/// Measure one (method, threads) for `duration`.
pub fn measure(dir: &Path, method: Method, threads: u32, duration: Duration) -> Result<Probe> {
    let path = dir.join(format!(
        ".dbtax-fsync-{}-{}.dat",
        std::process::id(),
        method.name().len()
    ));
    let _cleanup = Cleanup(path.clone());
    match method {
        Method::Append | Method::Group => {
            let f = open_file(&path, false, false)?;
            f.set_len(0)?;
            f.sync_all()?;
        }
        Method::Prealloc | Method::Dsync => preallocate(&path)?,
    }
    let file = open_file(&path, method == Method::Dsync, method == Method::Append)?;
    let shared = Shared {
        stop: AtomicBool::new(false),
        offset: AtomicU64::new(0),
        syncs: AtomicU64::new(0),
    };
    let group = Group::default();
    let record = [b'x'; RECORD];
    let start = Instant::now();
    let results: Vec<Result<(u64, Histogram<u64>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (file, shared, group, record) = (&file, &shared, &group, &record);
                s.spawn(move || writer(method, file, shared, group, record))
            })
            .collect();
        while start.elapsed() < duration && !crate::interrupt::requested() {
            std::thread::sleep(Duration::from_millis(20));
        }
        shared.stop.store(true, Ordering::SeqCst);
        group.wake_all();
        handles
            .into_iter()
            .map(|h| h.join().expect("writer thread panicked"))
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    crate::interrupt::check()?;
    let mut total = 0;
    let mut h = hist();
    for r in results {
        let (n, hh) = r?;
        total += n;
        h.add(&hh).ok();
    }
    Ok(Probe {
        method,
        threads,
        commits_per_s: total as f64 / secs,
        p50_ms: h.value_at_quantile(0.5) as f64 / 1000.0,
        p99_ms: h.value_at_quantile(0.99) as f64 / 1000.0,
        syncs_per_s: shared.syncs.load(Ordering::Relaxed) as f64 / secs,
    })
}

struct Cleanup(PathBuf);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn writer(
    method: Method,
    file: &File,
    shared: &Shared,
    group: &Group,
    record: &[u8],
) -> Result<(u64, Histogram<u64>)> {
    let mut h = hist();
    let mut n = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        match method {
            Method::Append => {
                (&*file).write_all(record)?;
                fdatasync(file)?;
                shared.syncs.fetch_add(1, Ordering::Relaxed);
            }
            Method::Prealloc | Method::Dsync => {
                let off =
                    shared.offset.fetch_add(RECORD as u64, Ordering::Relaxed) % PREALLOC_BYTES;
                file.write_all_at(record, off)?;
                if method == Method::Prealloc {
                    fdatasync(file)?;
                }
                shared.syncs.fetch_add(1, Ordering::Relaxed);
            }
            Method::Group => {
                if !group.commit(file, record, shared)? {
                    break;
                }
            }
        }
        h.saturating_record((t.elapsed().as_micros() as u64).max(1));
        n += 1;
    }
    Ok((n, h))
}

/// Group commit: a queue of pending records; whoever finds no flush in progress becomes the
/// leader, writes the whole queue with one write and one fdatasync, and wakes the others.
#[derive(Default)]
struct Group {
    state: Mutex<GroupState>,
    done: Condvar,
}

#[derive(Default)]
struct GroupState {
    pending: Vec<u8>,
    /// Records queued so far (ticket numbers).
    queued: u64,
    /// Records durable so far.
    durable: u64,
    flushing: bool,
    stopped: bool,
}

impl Group {
    fn wake_all(&self) {
        self.state.lock().expect("group lock").stopped = true;
        self.done.notify_all();
    }

    /// Queue a record and return once it is durable (false when stopped first).
    fn commit(&self, file: &File, record: &[u8], shared: &Shared) -> Result<bool> {
        let mut st = self.state.lock().expect("group lock");
        st.pending.extend_from_slice(record);
        st.queued += 1;
        let ticket = st.queued;
        loop {
            if st.durable >= ticket {
                return Ok(true);
            }
            if st.stopped && !st.flushing {
                return Ok(false);
            }
            if !st.flushing {
                st.flushing = true;
                let batch = std::mem::take(&mut st.pending);
                let upto = st.queued;
                drop(st);
                let r = (&*file).write_all(&batch).and_then(|_| fdatasync(file));
                shared.syncs.fetch_add(1, Ordering::Relaxed);
                st = self.state.lock().expect("group lock");
                st.flushing = false;
                st.durable = upto;
                self.done.notify_all();
                r?;
            } else {
                st = self.done.wait(st).expect("group lock");
            }
        }
    }
}

/// Run every method at every thread count.
pub fn probe(
    dir: &Path,
    threads: &[u32],
    duration: Duration,
    on_step: &mut dyn FnMut(&str),
) -> Result<FsyncReport> {
    if !dir.is_dir() {
        return Err(usage(format!("--dir {}: not a directory", dir.display())));
    }
    if let Some((free, _)) = crate::host::fs_space(dir)
        && free < 2 * PREALLOC_BYTES
    {
        return Err(usage(format!(
            "--dir {}: needs {} MB free",
            dir.display(),
            (2 * PREALLOC_BYTES) >> 20
        )));
    }
    let mut probes = vec![];
    for &m in &Method::ALL {
        for &t in threads {
            on_step(&format!(
                "{} with {t} writer{}",
                m.name(),
                if t == 1 { "" } else { "s" }
            ));
            probes.push(measure(dir, m, t, duration)?);
        }
    }
    let summary = summarize(&probes);
    Ok(FsyncReport {
        dir: dir.display().to_string(),
        record_bytes: RECORD,
        duration_s: duration.as_secs_f64(),
        probes,
        summary,
    })
}

fn rate(probes: &[Probe], m: Method, t: u32) -> Option<f64> {
    probes
        .iter()
        .find(|p| p.method == m && p.threads == t)
        .map(|p| p.commits_per_s)
}

/// The answer in words.
pub fn summarize(probes: &[Probe]) -> Vec<String> {
    let mut out = vec![];
    let one = probes.iter().map(|p| p.threads).min().unwrap_or(1);
    let most = probes.iter().map(|p| p.threads).max().unwrap_or(1);
    if let (Some(a), Some(p)) = (
        rate(probes, Method::Append, one),
        rate(probes, Method::Prealloc, one),
    ) {
        out.push(format!(
            "With {one} writer, a preallocated log gives {:.1}× the durable commits per second of \
             appending to a growing file on this disk ({p:.0} vs {a:.0}/s).",
            p / a.max(1e-9)
        ));
    }
    if let (Some(a), Some(d)) = (
        rate(probes, Method::Append, one),
        rate(probes, Method::Dsync, one),
    ) {
        out.push(format!(
            "O_DSYNC overwrites give {:.1}× appending ({d:.0}/s).",
            d / a.max(1e-9)
        ));
    }
    if let (Some(a), Some(g)) = (
        rate(probes, Method::Append, most),
        rate(probes, Method::Group, most),
    ) {
        out.push(format!(
            "With {most} writers, group commit gives {:.1}× appending with one fdatasync each ({g:.0} vs {a:.0}/s).",
            g / a.max(1e-9)
        ));
    }
    out
}

/// The terminal table.
pub fn render(r: &FsyncReport) -> String {
    let mut s = format!(
        "Durable {}-byte commits in {} ({:.1} s per measurement)\n\n{:<20} {:>7} {:>12} {:>10} {:>10} {:>10}\n",
        r.record_bytes,
        r.dir,
        r.duration_s,
        "method",
        "threads",
        "commits/s",
        "p50 ms",
        "p99 ms",
        "syncs/s"
    );
    for p in &r.probes {
        s += &format!(
            "{:<20} {:>7} {:>12.0} {:>10.3} {:>10.3} {:>10.0}\n",
            p.method.name(),
            p.threads,
            p.commits_per_s,
            p.p50_ms,
            p.p99_ms,
            p.syncs_per_s
        );
    }
    s += "\n";
    for line in &r.summary {
        s += line;
        s += "\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_commits_durably_and_group_commit_batches() {
        let dir = tempfile::tempdir().unwrap();
        for m in Method::ALL {
            let p = measure(dir.path(), m, 4, Duration::from_millis(150)).unwrap();
            assert!(p.commits_per_s > 0.0, "{p:?}");
            assert!(p.p99_ms >= p.p50_ms, "{p:?}");
            if m == Method::Group {
                assert!(p.syncs_per_s <= p.commits_per_s * 1.001, "{p:?}");
            }
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "probe files are removed"
        );
    }
}
