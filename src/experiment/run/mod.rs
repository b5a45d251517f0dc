//! The run itself: [`execute`] ties one server's run together (the design's loop,
//! `dbtax_stats::run`, over the [`real_server`] that switches, restarts and guards the
//! [`disk`]), [`pair`] runs two servers at once ([`sides`] says which variant runs where), and
//! [`record`] rewrites results.json after every block.

pub mod disk;
pub mod execute;
pub mod pair;
pub mod real_server;
pub mod record;
pub mod sides;
