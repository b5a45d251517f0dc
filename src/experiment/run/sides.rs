//! Which variant of a two-server run (`--compare-target`) runs on which server: the
//! experiment's variants on A, then the same on B under names of their own, and the cells
//! split back per server. The pair run and its recording both read it.

use crate::experiment::spec::Experiment;
use crate::results::Cell;

/// One of the two servers of a two-server run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `--target`.
    A,
    /// `--compare-target`.
    B,
}

/// The variants of a two-server run: the experiment's on A (`0..n`), then the same on B
/// (`n..2n`), under names of their own in the runner's cells.
#[derive(Debug, Clone)]
pub struct Sides {
    /// The runner's names of the variants, A's then B's.
    names: Vec<String>,
    /// Each variant's own name, as the experiment has it.
    own: Vec<String>,
}

impl Sides {
    /// The experiment on two servers, and which of its variants runs where.
    pub fn of(exp: &Experiment) -> (Experiment, Sides) {
        let both = exp.on_two_servers();
        let sides = Sides {
            names: both.variants.iter().map(|v| v.name.clone()).collect(),
            own: exp.variants.iter().map(|v| v.name.clone()).collect(),
        };
        (both, sides)
    }

    /// The server a variant runs on, and its index there.
    pub fn side(&self, variant: usize) -> (Side, usize) {
        let n = self.own.len();
        if variant < n {
            (Side::A, variant)
        } else {
            (Side::B, variant - n)
        }
    }

    /// The cells of a two-server run, A's and B's, under their own variant names (a trial's
    /// `after` keeps the runner's name: "B:audit" ran on the other server).
    pub fn split(&self, cells: &[Cell]) -> [Vec<Cell>; 2] {
        let mut out = [vec![], vec![]];
        for c in cells {
            let Some(index) = self.names.iter().position(|n| *n == c.variant) else {
                continue;
            };
            let (side, own) = self.side(index);
            let mut c = c.clone();
            c.variant = self.own[own].clone();
            out[side as usize].push(c);
        }
        out
    }
}
