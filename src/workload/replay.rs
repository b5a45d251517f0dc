//! The script of a replaying client: its share of the slice's sessions (`Slice::lane`), one
//! statement per event over the text protocol, in recorded order, from the slice's start
//! every trial (the client is made anew for each), again from the start when its share runs
//! out. Before a statement whose session had another default database than the connection
//! has, the client sends `USE db` (the MySQL family's logs say it; in the same event). The
//! tag of the last event's statement tells which fingerprint it timed. An execution of a
//! prepared statement the log shows with its values runs prepared, as the application ran
//! it: each connection prepares its share's statements once (`connected`) and executes
//! them with their recorded values over the binary (MySQL family) or extended (PostgreSQL)
//! protocol.

use crate::client::connection::{DbError, Session, Value};
use dbtax_logs::Param;
use dbtax_logs::slice::{NONE, Slice};
use std::sync::Arc;

/// Make a new session a replaying one: read-only for every transaction after this (the
/// replay's second lock: what the classifier missed fails on the server, and is counted).
pub fn read_only(s: &mut dyn Session) -> Result<(), DbError> {
    s.read_only()
        .map_err(|e| e.during("making the replaying session read-only"))
}

/// One client's replay.
pub struct ReplayScript {
    slice: Arc<Slice>,
    lane: Vec<u32>,
    pos: usize,
    /// The connection's default database (an index into `Slice::uses`), NONE: unknown.
    db: u32,
    tag: u32,
    /// The rows the last statement's log entry recorded, or NONE.
    rows: u32,
    /// Each of the slice's prepared statements' handle on this connection, or NONE: not
    /// prepared here (its executions are sent as their text).
    handles: Vec<u32>,
}

/// The prepared statements a connection prepares at most (the rest run as their text): a
/// MySQL-family server allows `max_prepared_stmt_count` (16,382 by default) over all its
/// connections.
pub const PREPARED_PER_CONNECTION: usize = 256;

impl ReplayScript {
    /// A client of `slice`: its share is dealt by `set_lane` (the whole slice when its first
    /// statement comes before one).
    pub fn new(slice: Arc<Slice>) -> ReplayScript {
        ReplayScript {
            slice,
            lane: vec![],
            pos: 0,
            db: NONE,
            tag: NONE,
            rows: NONE,
            handles: vec![],
        }
    }

    /// Deal this client the whole slice when it was dealt no share (a dealt share is never
    /// empty, `Slice::lane`).
    fn deal(&mut self) {
        if self.lane.is_empty() {
            self.lane = self.slice.lane(0, 1);
        }
    }

    /// The next statement's index in the slice, and move on.
    fn advance(&mut self) -> Option<usize> {
        self.deal();
        let i = *self.lane.get(self.pos)?;
        self.pos = (self.pos + 1) % self.lane.len();
        Some(i as usize)
    }
}

impl crate::workload::Script for ReplayScript {
    /// Replay client `lane`'s share of `lanes`, from the start.
    fn set_lane(&mut self, lane: usize, lanes: usize) {
        self.lane = self.slice.lane(lane, lanes);
        self.pos = 0;
    }

    /// Prepare the statements this client's share executes prepared, each in its default
    /// database; one the server refuses is sent as its text, counted in
    /// `Slice::prepare_refused`.
    fn connected(&mut self, s: &mut dyn Session) {
        self.handles = vec![NONE; self.slice.templates.len()];
        if self.handles.is_empty() {
            return;
        }
        self.deal();
        let mut wanted: Vec<u32> = vec![];
        let mut seen = vec![false; self.handles.len()];
        for &i in &self.lane {
            let p = self.slice.stmts[i as usize].prep;
            if p != NONE && !seen[p as usize] && wanted.len() < PREPARED_PER_CONNECTION {
                seen[p as usize] = true;
                wanted.push(p);
            }
        }
        wanted.sort_by_key(|&p| self.slice.templates[p as usize].db);
        for p in wanted {
            let t = &self.slice.templates[p as usize];
            if t.db != NONE && t.db != self.db {
                if s.simple(&self.slice.uses[t.db as usize]).is_err() {
                    self.db = NONE;
                    continue;
                }
                self.db = t.db;
            }
            match s.prepare_as_is(&t.sql) {
                Ok(h) => self.handles[p as usize] = h as u32,
                Err(e) if e.lost() => return,
                Err(e) if e.kind == crate::client::connection::Kind::NotPreparable => {}
                Err(_) => {
                    self.slice
                        .prepare_refused
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    }

    /// Go on with the new connection where this client was; its database is unknown, and
    /// nothing is prepared on it yet.
    fn reconnected(&mut self) -> bool {
        self.db = NONE;
        self.handles.clear();
        true
    }

    /// Pass over the next statement (rate mode skipped its start).
    fn skip(&mut self) {
        self.advance();
    }

    /// Run the next statement; returns the statements sent (with a `USE`, two).
    fn event(&mut self, s: &mut dyn Session, _rng: &mut crate::rng::Rng) -> Result<u32, DbError> {
        let Some(i) = self.advance() else {
            return Ok(0);
        };
        let st = &self.slice.stmts[i];
        let mut n = 0;
        if st.db != NONE && st.db != self.db {
            s.simple(&self.slice.uses[st.db as usize])?;
            self.db = st.db;
            n += 1;
        }
        self.tag = st.tag;
        self.rows = st.rows;
        match self.handles.get(st.prep as usize) {
            Some(&h) if h != NONE => {
                let params: Vec<_> = st.params.iter().map(value).collect();
                s.execute(h as usize, &params)?;
            }
            _ => s.statement(&st.sql)?,
        }
        Ok(n + 1)
    }

    /// The rows the last statement's log entry recorded.
    fn expected_rows(&self) -> Option<u64> {
        (self.rows != NONE).then_some(u64::from(self.rows))
    }

    /// The tag of the last statement run (None: untagged).
    fn tag(&self) -> Option<u32> {
        Some(self.tag).filter(|t| *t != NONE)
    }

    /// The recorded offsets of this client's statements (ns from the slice's start, divided
    /// by `speed`), and the slice's span so divided: its schedule at a recorded pace.
    fn recorded_schedule(&mut self, speed: f64) -> Option<(Vec<u64>, u64)> {
        let scale = |ns: u64| (ns as f64 / speed) as u64;
        self.deal();
        let offsets = self
            .lane
            .iter()
            .map(|&i| scale(self.slice.stmts[i as usize].at_ns))
            .collect();
        // One gap more than the span, so a wrapped round does not start on the last one.
        let span = self.slice.span_ns() + self.slice.span_ns() / self.slice.stmts.len() as u64;
        Some((offsets, scale(span).max(1)))
    }
}

/// A recorded value as the clients send it.
fn value(p: &Param) -> Value<'_> {
    match p {
        Param::Null => Value::Null,
        Param::Int(i) => Value::Int(*i),
        Param::Text(s) => Value::Text(s),
    }
}
