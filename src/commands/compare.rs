//! `dbtax compare A B`: two results.json side by side.

use crate::cli::CompareArgs;
use crate::report;
use anyhow::{Context, Result};

/// Two results side by side.
pub fn run(args: CompareArgs) -> Result<()> {
    let a = report::load(&args.a)?;
    let b = report::load(&args.b)?;
    for (path, r) in [(&args.a, &a), (&args.b, &b)] {
        if r.rate.is_some() {
            return Err(crate::error::usage(format!(
                "{} is a rate-mode run (--rate): compare sets closed-loop throughput side by \
                 side, which a fixed rate does not have; read each run's added latency with \
                 `dbtax report`",
                path.display()
            )));
        }
    }
    crate::out!("{}", report::compare::render_text(&a, &b));
    if let Some(p) = &args.html {
        std::fs::write(p, report::compare::render_html(&a, &b))
            .with_context(|| format!("writing {}", p.display()))?;
        crate::errln!("Wrote {}", p.display());
    }
    Ok(())
}
