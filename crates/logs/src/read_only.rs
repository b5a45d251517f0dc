//! Which statements only read: a lexer that reads a statement every way its server could
//! (`lex`), the classifier over its tokens (`classify`), the functions a statement calls and
//! what they do (`functions`), and what a statement reaches on the server beyond its own
//! text: views, functions and policies that run with other rights (`reach`).

pub mod classify;
pub(crate) mod functions;
pub mod lex;
pub mod reach;
