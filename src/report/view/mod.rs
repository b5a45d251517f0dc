//! How a run is shown: closed loop (the throughput overhead, by thread count: [`closed`]), at
//! a rate (added latency and server CPU, by load point: [`rate`]), capacity at an objective
//! ([`capacity`]) or production's own traffic (`dbtax live`: [`live`]), each a [`View`]. The table,
//! the words, the HTML and the charts are handed the run's view (`report::view` chooses it)
//! and ask it for their part; none of them forks on the mode itself.

pub mod capacity;
pub mod closed;
pub mod live;
pub mod rate;

use super::page::charts::Chart;

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
