//! SIGINT and SIGTERM set one flag. Nothing is done in the signal handler: the trial loop and
//! the runner poll the flag, stop measuring, restore settings and write partial results.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Install the handler once; later calls are no-ops.
pub fn install() {
    // An error here means a handler is already installed (tests call this repeatedly).
    let _ = ctrlc::set_handler(|| REQUESTED.store(true, Ordering::SeqCst));
}

/// Whether the user asked to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Returns `Err(Failure::Interrupted)` when the user asked to stop.
pub fn check() -> anyhow::Result<()> {
    if requested() {
        Err(crate::error::Failure::Interrupted.into())
    } else {
        Ok(())
    }
}

/// Sleep up to `d`, waking early when interrupted. Returns false when interrupted.
pub fn sleep(d: std::time::Duration) -> bool {
    let end = std::time::Instant::now() + d;
    loop {
        if requested() {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(std::time::Duration::from_millis(50)));
    }
}
