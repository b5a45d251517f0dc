//! What the summaries are computed from: a cell's identity and its trials.

use crate::results::Trial;

/// A cell's identity and its trials in block order.
#[derive(Debug, Clone)]
pub struct CellTrials {
    /// Variant name.
    pub variant: String,
    /// Index of the variant this one is compared with (itself for a baseline).
    pub baseline: usize,
    /// Variant index.
    pub variant_index: usize,
    /// Client threads.
    pub threads: u32,
    /// The load point (the runner's key): cells of one point are compared with each other.
    pub point: usize,
    /// Rate mode: the level's label and the events per second asked.
    pub rate: Option<(String, f64)>,
    /// Trials, one per block the variant ran in (`Trial::block` pairs them).
    pub trials: Vec<Trial>,
    /// Multi-factor: (factor, variant index differing only in that factor).
    pub effects: Vec<(String, usize)>,
    /// Multi-factor: (factor, the variant's level of it), in factor order.
    pub levels: Vec<(String, String)>,
}
