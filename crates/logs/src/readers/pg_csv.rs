//! PostgreSQL's csvlog read as a stream: one record per message, its quoted fields holding
//! newlines and doubled quotes; the session is `session_id`, an execute's values are in the
//! same record's `detail`. The messages mean what they mean in the stderr format (`pglog`).

use crate::readers::pg_prefix::{pg_time, session_of_c};
use crate::readers::pg_stderr::{what_of, with_values};
use crate::{Entry, LogReader, Malformed, MalformedLines, What};
use std::io::BufRead;

/// csvlog's columns dbtax reads.
const CSV_TIME: usize = 0;
const CSV_DB: usize = 2;
const CSV_SESSION: usize = 5;
const CSV_SEVERITY: usize = 11;
const CSV_MESSAGE: usize = 13;
const CSV_DETAIL: usize = 14;

/// Reads a csvlog file.
pub struct PgCsvLog<R> {
    input: R,
    buf: Vec<u8>,
    line_no: u64,
    /// Lines that belonged to nothing.
    pub malformed: MalformedLines,
    done: bool,
}

impl<R: BufRead> PgCsvLog<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> Self {
        PgCsvLog {
            input,
            buf: Vec::with_capacity(4096),
            line_no: 0,
            malformed: MalformedLines::default(),
            done: false,
        }
    }

    /// The next record's fields and its first line; None at the end (a record cut by the
    /// end of the file is counted malformed).
    fn record(&mut self) -> Option<(u64, Vec<String>)> {
        let mut fields = vec![];
        let mut cur = String::new();
        let mut quoted = false;
        let mut first = 0;
        loop {
            if !crate::next_line(&mut self.input, &mut self.buf, &mut self.line_no) {
                self.done = true;
                if first != 0 {
                    self.malformed.push(Malformed {
                        line: first,
                        why: "a csv record cut by the end of the file",
                    });
                }
                return None;
            }
            if first == 0 {
                first = self.line_no;
            }
            let text = crate::text(&self.buf);
            let mut chars = text.chars().peekable();
            while let Some(c) = chars.next() {
                if quoted {
                    if c == '"' {
                        if chars.peek() == Some(&'"') {
                            chars.next();
                            cur.push('"');
                        } else {
                            quoted = false;
                        }
                    } else if cur.len() <= crate::MAX_STATEMENT {
                        // (An unclosed quote would otherwise take in the rest of the file.)
                        cur.push(c);
                    }
                } else {
                    match c {
                        '"' => quoted = true,
                        ',' => fields.push(std::mem::take(&mut cur)),
                        '\n' | '\r' => {}
                        _ if cur.len() > crate::MAX_STATEMENT => {}
                        _ => cur.push(c),
                    }
                }
            }
            if !quoted {
                fields.push(cur);
                return Some((first, fields));
            }
        }
    }
}

impl<R: BufRead> Iterator for PgCsvLog<R> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        while !self.done {
            let (line, f) = self.record()?;
            if f.len() <= CSV_DETAIL {
                if f.iter().any(|x| !x.trim().is_empty()) {
                    self.malformed.push(Malformed {
                        line,
                        why: "a csv record with fewer columns than csvlog's",
                    });
                }
                continue;
            }
            if f[CSV_SEVERITY] != "LOG" {
                continue;
            }
            let Some(mut what) = what_of(&f[CSV_MESSAGE]) else {
                continue;
            };
            let Some(session) = session_of_c(&f[CSV_SESSION]) else {
                self.malformed.push(Malformed {
                    line,
                    why: "a statement whose session_id is not PostgreSQL's",
                });
                continue;
            };
            let mut bound = None;
            match &mut what {
                What::Execute(sql) => bound = with_values(sql, Some(&f[CSV_DETAIL])),
                What::Connect { db } if db.is_none() => {
                    *db = Some(f[CSV_DB].clone()).filter(|d| !d.is_empty());
                }
                _ => {}
            }
            return Some(Entry {
                line,
                session,
                at_us: pg_time(&f[CSV_TIME]),
                what,
                rows: None,
                bound,
            });
        }
        None
    }
}

impl<R: BufRead> LogReader for PgCsvLog<R> {
    fn malformed(&self) -> &MalformedLines {
        &self.malformed
    }
}
