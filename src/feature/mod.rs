//! Server features: what they are (`catalog`), how dbtax switches them safely (`toggle`,
//! with a `journal` of original values written before any change), and the `features` and
//! `restore` commands.

pub mod catalog;
pub mod command;
pub mod journal;
pub mod toggle;
