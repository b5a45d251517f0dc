//! `dbtax report` and `dbtax compare`: everything from results.json files alone.

use crate::cli::{CompareArgs, ReportArgs};
use crate::report;
use anyhow::{Context, Result};

/// Print the table; write HTML, CSV and SVG when asked.
pub fn report(args: ReportArgs) -> Result<()> {
    let r = report::load(&args.results)?;
    print!("{}", report::table::render(&r));
    if let Some(p) = &args.html {
        std::fs::write(p, report::html::render(&r))
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!("Wrote {}", p.display());
    }
    if let Some(p) = &args.csv {
        std::fs::write(p, report::csv::render(&r))
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!("Wrote {}", p.display());
    }
    if let Some(d) = &args.svg {
        report::write_charts(d, &r)?;
        eprintln!("Wrote the charts into {}", d.display());
    }
    Ok(())
}

/// Two results side by side.
pub fn compare(args: CompareArgs) -> Result<()> {
    let a = report::load(&args.a)?;
    let b = report::load(&args.b)?;
    print!("{}", report::compare::render_text(&a, &b));
    if let Some(p) = &args.html {
        std::fs::write(p, report::compare::render_html(&a, &b))
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!("Wrote {}", p.display());
    }
    Ok(())
}
