//! `dbtax fsync`: the log-device probe.

use crate::cli::FsyncArgs;
use crate::error::usage;
use anyhow::Result;

/// Run `dbtax fsync`.
pub fn run(args: FsyncArgs) -> Result<()> {
    if args.threads.is_empty() || args.threads.contains(&0) {
        return Err(usage("--threads: one or more counts, each at least 1"));
    }
    let bar = super::progress::trial_bar(args.json);
    let report = crate::fsync::probe(&args.dir, &args.threads, args.duration, &mut |step| {
        bar.set_message(step.to_string())
    });
    bar.finish_and_clear();
    let report = report?;
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        crate::out!("{}", crate::fsync::render(&report));
    }
    Ok(())
}
