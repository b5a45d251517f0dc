//! The measuring window's one loop. A trial's load settles, is measured, and stops; every
//! phase of that is the same wait whoever makes the load: this process's workers (`trial`),
//! the agents seen from the coordinator (`agent::trial`), or one agent's workers seen from
//! inside it (`agent::serve`). The loop checks Ctrl-C and the watch, ends the phase at its
//! instant (or when the load ends by itself), and between naps lets the load report progress.
//! What differs — what a nap waits on, what ends the load early, where progress goes — is the
//! `Phase` the caller passes.

use super::Watch;
use crate::error::Failure;
use anyhow::Result;
use std::time::{Duration, Instant};

/// What one kind of load does while a phase of its window runs.
pub trait Phase {
    /// The longest nap between two looks at the clock, the watch and Ctrl-C.
    fn nap(&self) -> Duration;
    /// Wait up to `nap` for what the load has to say (an agent's message, a request);
    /// Err ends the trial with that error.
    fn wait(&mut self, nap: Duration) -> Result<()>;
    /// The load ended by itself (every worker met its query quota).
    fn finished(&self) -> bool {
        false
    }
    /// Pass progress on, when a sample is due (`elapsed` in this phase, of `planned`).
    fn tick(&mut self, measuring: bool, elapsed: Duration, planned: Duration) -> Result<()>;
}

/// Wait out one phase: until `end` (None: until the load ends by itself), checking Ctrl-C
/// and `watch` (a reason from it ends the trial with that error) before every nap.
pub fn run_phase(
    load: &mut dyn Phase,
    end: Option<Instant>,
    measuring: bool,
    watch: Option<&Watch>,
) -> Result<()> {
    let start = Instant::now();
    let planned = end.map_or(Duration::ZERO, |e| e.saturating_duration_since(start));
    loop {
        if crate::interrupt::requested() {
            return Err(Failure::Interrupted.into());
        }
        if let Some(e) = watch.and_then(|w| w()) {
            return Err(e);
        }
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) || load.finished() {
            return Ok(());
        }
        let nap = match end {
            Some(e) => (e - now).min(load.nap()).max(Duration::from_micros(100)),
            None => load.nap(),
        };
        load.wait(nap)?;
        load.tick(measuring, start.elapsed(), planned)?;
    }
}

/// The instant a clock reading in nanoseconds since the Unix epoch (`agent::protocol`'s
/// clock) comes to on this process's monotonic clock.
pub fn instant_of(clock_ns: u64, now_ns: u64) -> Instant {
    let now = Instant::now();
    match clock_ns.checked_sub(now_ns) {
        Some(ahead) => now + Duration::from_nanos(ahead),
        None => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A load that counts its naps and can end by itself after some.
    struct Counted {
        naps: u32,
        ticks: u32,
        finish_after: Option<u32>,
        fail_at: Option<u32>,
    }

    impl Phase for Counted {
        fn nap(&self) -> Duration {
            Duration::from_millis(5)
        }
        fn wait(&mut self, nap: Duration) -> Result<()> {
            std::thread::sleep(nap);
            self.naps += 1;
            if self.fail_at == Some(self.naps) {
                anyhow::bail!("the load failed");
            }
            Ok(())
        }
        fn finished(&self) -> bool {
            self.finish_after.is_some_and(|n| self.naps >= n)
        }
        fn tick(&mut self, _: bool, _: Duration, _: Duration) -> Result<()> {
            self.ticks += 1;
            Ok(())
        }
    }

    fn counted() -> Counted {
        Counted {
            naps: 0,
            ticks: 0,
            finish_after: None,
            fail_at: None,
        }
    }

    #[test]
    fn a_phase_ends_at_its_instant_or_when_the_load_ends_or_fails() {
        let mut l = counted();
        let t = Instant::now();
        run_phase(&mut l, Some(t + Duration::from_millis(60)), true, None).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(60));
        assert!(l.naps >= 2 && l.ticks == l.naps, "{} {}", l.naps, l.ticks);
        let mut l = Counted {
            finish_after: Some(3),
            ..counted()
        };
        run_phase(&mut l, None, true, None).unwrap();
        assert_eq!(l.naps, 3);
        let mut l = Counted {
            fail_at: Some(2),
            ..counted()
        };
        let e = run_phase(&mut l, None, false, None).unwrap_err();
        assert_eq!(e.to_string(), "the load failed");
    }

    #[test]
    fn the_watch_stops_a_phase_with_its_reason() {
        let mut l = counted();
        let watch: Watch = std::sync::Arc::new(|| Some(anyhow::anyhow!("the disk is full")));
        let e = run_phase(&mut l, None, true, Some(&watch)).unwrap_err();
        assert_eq!(e.to_string(), "the disk is full");
        assert_eq!(l.naps, 0);
    }
}
