//! The disk guard: a busy server's general, slow or audit log grows by megabytes per second.
//! Before every trial — the first of each variant too, from a short probe with its settings
//! on — the expected growth is checked against the log's filesystem (at least 10% must stay
//! free) and `--max-log-bytes`; while a trial runs, a watch stops it before either limit
//! is reached: from the log's growth rate since its last readings it stops when the room
//! left would be gone within `HORIZON` (the next readings, and the switch back that stops
//! the log), not once it is already gone.

use crate::experiment::prepare::plan::LogFiles;
use crate::load::Watch;
use std::path::PathBuf;
use std::sync::Arc;

/// Never let the log's filesystem fall under this share of free space.
pub const MIN_FREE_FRACTION: f64 = 0.10;
/// Expected growth is multiplied by this before it is compared with the room left: a trial
/// can run faster than the one it is estimated from.
pub const SAFETY_FACTOR: f64 = 2.0;
/// How far ahead a watch looks at the log's rate: a few readings, and the time it takes to
/// switch the feature off after one says stop (on a small filesystem a log at tens of MB a
/// second fills what is left between two readings).
pub const HORIZON: std::time::Duration = std::time::Duration::from_secs(3);

/// The limits of one run.
#[derive(Debug, Clone)]
pub struct DiskGuard {
    /// The feature log files.
    pub files: LogFiles,
    /// `--max-log-bytes`.
    pub max_bytes: Option<u64>,
}

/// The log files' total size in a reading (a file that cannot be read counts 0).
fn size_of(r: &crate::host::probe::Reading) -> u64 {
    r.sizes.iter().map(|s| s.unwrap_or(0)).sum()
}

fn mb(b: u64) -> u64 {
    b / 1_000_000
}

impl DiskGuard {
    /// The log files' sizes and their filesystems' room, read where they are.
    fn reading(&self) -> anyhow::Result<crate::host::probe::Reading> {
        self.files.host.read(&crate::host::probe::Ask {
            files: self
                .files
                .paths
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            ..Default::default()
        })
    }

    /// Current total size of the log files (a file that cannot be read counts 0).
    pub fn size(&self) -> anyhow::Result<u64> {
        Ok(size_of(&self.reading()?))
    }

    /// Why a trial expected to write `expected` bytes must not start, after `grown` bytes
    /// so far in this run. None: it may. Err: the reading came late (`probe::LateReading`:
    /// the trial is lost, not the run).
    pub fn check(&self, grown: u64, expected: u64) -> anyhow::Result<Option<String>> {
        let expected = (expected as f64 * SAFETY_FACTOR) as u64;
        if let Some(max) = self.max_bytes
            && grown + expected > max
        {
            return Ok(Some(format!(
                "stopped before the next trial: the feature logs have grown by {} MB and the \
                 next trial would write about {} MB more, past --max-log-bytes ({} MB)",
                mb(grown),
                mb(expected),
                mb(max)
            )));
        }
        let r = match self.reading() {
            Ok(r) => r,
            Err(e) if crate::host::probe::is_late(&e) => return Err(e),
            Err(e) => return Ok(Some(format!("stopped before the next trial: {e:#}"))),
        };
        let Some((dir, free, total)) = self.short_of_room(&r, expected) else {
            return Ok(None);
        };
        Ok(Some(format!(
            "stopped before the next trial: the filesystem of {} has {} MB free of {} MB, and a \
             trial writes about {} MB of log; dbtax keeps at least 10% free",
            dir.display(),
            mb(free),
            mb(total),
            mb(expected)
        )))
    }

    /// In reading `r`, the first log folder whose filesystem would keep less than 10% free
    /// after `extra` more bytes: (folder, free, total).
    fn short_of_room(
        &self,
        r: &crate::host::probe::Reading,
        extra: u64,
    ) -> Option<(PathBuf, u64, u64)> {
        self.files
            .paths
            .iter()
            .zip(&r.space)
            .find_map(|(f, space)| {
                let dir = f.parent().unwrap_or(f);
                let (free, total) = (*space)?;
                ((free.saturating_sub(extra) as f64) < MIN_FREE_FRACTION * total as f64)
                    .then(|| (dir.to_path_buf(), free, total))
            })
    }

    /// A watch for one trial: stops it when, at the log's rate, the filesystem would pass
    /// 90% or the run's growth (`grown` before the trial, plus the files' growth since now)
    /// would pass the limit within `HORIZON`. Err: the first reading came late
    /// (`probe::LateReading`: the trial is lost).
    pub fn watch(&self, grown: u64) -> anyhow::Result<Option<Watch>> {
        if self.files.paths.is_empty() {
            return Ok(None);
        }
        let guard = self.clone();
        let start = match self.size() {
            Ok(s) => s,
            Err(e) if crate::host::probe::is_late(&e) => return Err(e),
            Err(_) => 0,
        };
        let rate = std::sync::Mutex::new(Rate::new(start));
        Ok(Some(Arc::new(move || {
            // One reading a tick: sizes and room together (through a probe, one round trip).
            let r = match guard.reading() {
                Ok(r) => r,
                Err(e) => return Some(e.context("stopped during a trial")),
            };
            let now = size_of(&r);
            let ahead = rate
                .lock()
                .map(|mut rate| rate.ahead(now, HORIZON))
                .unwrap_or(0);
            let total_growth = grown + now.saturating_sub(start);
            if let Some(max) = guard.max_bytes
                && total_growth + ahead > max
            {
                return Some(anyhow::anyhow!(
                    "stopped during a trial: the feature logs grew by {} MB, and at {} MB/s \
                     would pass --max-log-bytes ({} MB) within {} s",
                    mb(total_growth),
                    mb(ahead) / HORIZON.as_secs().max(1),
                    mb(max),
                    HORIZON.as_secs()
                ));
            }
            let (dir, free, total) = guard.short_of_room(&r, ahead)?;
            Some(anyhow::anyhow!(
                "stopped during a trial: the filesystem of {} has {} MB free of {} MB, and the \
                 log, at {} MB/s, would take it under 10% free within {} s (dbtax keeps at \
                 least 10% free)",
                dir.display(),
                mb(free),
                mb(total),
                mb(ahead) / HORIZON.as_secs().max(1),
                HORIZON.as_secs()
            ))
        })))
    }
}

/// A log's growth rate between a watch's readings, the fastest of the recent ones.
struct Rate {
    last: (u64, std::time::Instant),
    /// Bytes per second: the latest step, or the decayed fastest before it.
    per_second: f64,
}

impl Rate {
    fn new(size: u64) -> Rate {
        Rate {
            last: (size, std::time::Instant::now()),
            per_second: 0.0,
        }
    }

    /// After a reading of `size` bytes: how much the log may grow within `horizon`.
    fn ahead(&mut self, size: u64, horizon: std::time::Duration) -> u64 {
        let now = std::time::Instant::now();
        let dt = now.duration_since(self.last.1).as_secs_f64();
        if dt > 0.0 {
            let step = size.saturating_sub(self.last.0) as f64 / dt;
            // A burst is remembered for a few readings: a log that grew fast a moment ago
            // can again before the next one.
            self.per_second = step.max(self.per_second * 0.7);
            self.last = (size, now);
        }
        (self.per_second * horizon.as_secs_f64()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_limit_counts_what_a_trial_would_add() {
        let g = DiskGuard {
            files: LogFiles::default(),
            max_bytes: Some(10_000_000),
        };
        assert!(g.check(0, 1_000_000).unwrap().is_none());
        // 8 MB grown + 2 × 1.5 MB expected > 10 MB.
        assert!(g.check(8_000_000, 1_500_000).unwrap().is_some());
        assert!(g.watch(0).unwrap().is_none(), "no files, nothing to watch");
    }
}
