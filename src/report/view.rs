//! How a run is shown, chosen once: closed loop (the throughput overhead, by thread count) or
//! at a rate (added latency and server CPU, by load point: `rate`). The table, the words, the
//! HTML and the charts each ask the run's `View` for their part; none of them forks on the
//! mode itself.

use super::charts::Chart;
use crate::results::Results;

/// One way of showing a run's cells.
pub trait View {
    /// One sentence per variant, about the headline's thread count.
    fn headlines(&self) -> Vec<String>;
    /// How the intervals were made and what "within noise" means, for the reader.
    fn method(&self) -> Option<String>;
    /// The terminal table's sections (`width`: the variant column's).
    fn table(&self, width: usize) -> String;
    /// The HTML report's results: a sentence on what is shown, then the tables.
    fn html(&self) -> String;
    /// Every chart of the report.
    fn charts(&self) -> Vec<Chart>;
}

/// The view of a run: at a rate when it ran open loop, else closed loop.
pub fn of(r: &Results) -> Box<dyn View + '_> {
    if r.rate.is_some() {
        Box::new(super::rate::RateView(r))
    } else {
        Box::new(ClosedLoop(r))
    }
}

/// Closed loop: each variant's throughput overhead against its baseline, by thread count.
struct ClosedLoop<'a>(&'a Results);

impl View for ClosedLoop<'_> {
    fn headlines(&self) -> Vec<String> {
        let mut h = super::words::closed_loop_headlines(self.0);
        h.extend(super::analysis::headlines(self.0));
        h
    }

    fn method(&self) -> Option<String> {
        super::words::closed_loop_method(self.0)
    }

    fn table(&self, width: usize) -> String {
        super::table::by_threads(self.0, width)
    }

    fn html(&self) -> String {
        super::html::by_threads(self.0)
    }

    fn charts(&self) -> Vec<Chart> {
        super::charts::by_threads(self.0)
    }
}
