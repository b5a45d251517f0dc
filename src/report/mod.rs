//! Renderers: results in, bytes out. Each is pure and snapshot-tested.

pub mod table;
