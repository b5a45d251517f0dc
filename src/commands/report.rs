//! `dbtax report`: re-render a results.json (the table; HTML, CSV and SVG on request).

use crate::cli::ReportArgs;
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
