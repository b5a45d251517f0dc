//! How a run is shown: closed loop (the throughput overhead, by thread count: `closed`) or
//! at a rate (added latency and server CPU, by load point: `rate`), each a `View`. The table,
//! the words, the HTML and the charts are handed the run's view (`report::view` chooses it)
//! and ask it for their part; none of them forks on the mode itself.

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
