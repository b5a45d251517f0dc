//! `dbtax report` and `dbtax compare`: results.json files rendered again, one run (the table;
//! HTML, CSV and SVG on request) or two side by side.

use crate::cli::{CompareArgs, ReportArgs};
use crate::report;
use anyhow::{Context, Result};

/// Print the table; write HTML, CSV and SVG when asked.
pub fn run(args: ReportArgs) -> Result<()> {
    let r = report::load(&args.results)?;
    crate::out!("{}", report::table(&r));
    if let Some(p) = &args.html {
        std::fs::write(p, report::html(&r)).with_context(|| format!("writing {}", p.display()))?;
        crate::errln!("Wrote {}", p.display());
    }
    if let Some(p) = &args.csv {
        std::fs::write(p, report::csv::render(&r))
            .with_context(|| format!("writing {}", p.display()))?;
        crate::errln!("Wrote {}", p.display());
    }
    if let Some(d) = &args.svg {
        report::write_charts(d, &r)?;
        crate::errln!("Wrote the charts into {}", d.display());
    }
    Ok(())
}

/// `dbtax compare A B`: two results side by side (a live run beside a lab run of the same
/// feature too).
pub fn compare(args: CompareArgs) -> Result<()> {
    let a = report::load(&args.a)?;
    let b = report::load(&args.b)?;
    let live = a.live.is_some() || b.live.is_some();
    if !live && a.capacity.is_empty() != b.capacity.is_empty() {
        let (slo, other) = if a.capacity.is_empty() {
            (&args.b, &args.a)
        } else {
            (&args.a, &args.b)
        };
        return Err(crate::error::usage(format!(
            "{} is a capacity run (--slo) and {} is not: set capacities beside capacities; \
             compare two runs of the same kind",
            slo.display(),
            other.display()
        )));
    }
    if !live && a.rate.is_some() != b.rate.is_some() {
        let (rate, closed) = if a.rate.is_some() {
            (&args.a, &args.b)
        } else {
            (&args.b, &args.a)
        };
        return Err(crate::error::usage(format!(
            "{} is a rate-mode run (--rate) and {} a closed-loop one: a fixed rate has no \
             throughput to set beside the other's, nor the other a bill at a rate; compare two \
             runs of the same kind",
            rate.display(),
            closed.display()
        )));
    }
    crate::out!("{}", report::page::compare::render_text(&a, &b));
    if let Some(p) = &args.html {
        report::write_compare(p, &a, &b)?;
        crate::errln!("Wrote {}", p.display());
    }
    Ok(())
}
