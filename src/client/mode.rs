//! How a client sends a workload's statements (`--protocol`, pgbench's word for it): the
//! values written into the statement's text, or the statement prepared on the server once
//! and executed with its values bound. The server does different work for each, so the cost
//! of a feature depends on it; an application's connector decides it, and dbtax does what
//! the connector the user names does. `Template` is the text mode's half: a statement split
//! at its `?` placeholders, filled with literals the engine writes.

use super::connection::Value;
use serde::{Deserialize, Serialize};

/// How statements reach the server (`--protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueryMode {
    /// The values written into the statement, sent as text: MySQL's COM_QUERY, PostgreSQL's
    /// simple Query. What most application connectors do by default (MySQL Connector/J,
    /// PHP's PDO, Python's mysqlclient, PyMySQL and psycopg2, Ruby's mysql2, node's mysql),
    /// `sysbench --db-ps-mode=disable` and `pgbench -M simple`.
    #[default]
    Text,
    /// Prepared once per connection on the server, then executed with the values bound:
    /// the MySQL family's binary protocol as libmariadb sends it (a statement's parameter
    /// types with its first execution only; on MariaDB, its column definitions cached by the
    /// client), PostgreSQL's named statement with Bind, Describe, Execute and Sync as libpq
    /// sends it. sysbench (its default) and `pgbench -M prepared`.
    Prepared,
    /// MySQL family: prepared as above, without MariaDB's metadata cache, so the server sends
    /// every execution's column definitions (libmysqlclient, MySQL Connector/J 8 with
    /// useServerPrepStmts).
    PreparedUncached,
    /// PostgreSQL: the unnamed statement parsed again for every execution (Parse, Bind,
    /// Describe, Execute, Sync): `pgbench -M extended`, node-postgres, Npgsql without
    /// Prepare(), JDBC's first executions of a statement.
    Extended,
}

impl QueryMode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [QueryMode; 4] = [
        QueryMode::Text,
        QueryMode::Prepared,
        QueryMode::PreparedUncached,
        QueryMode::Extended,
    ];

    /// The name on the command line, in files and in results.json.
    pub fn name(self) -> &'static str {
        match self {
            QueryMode::Text => "text",
            QueryMode::Prepared => "prepared",
            QueryMode::PreparedUncached => "prepared-uncached",
            QueryMode::Extended => "extended",
        }
    }

    /// Parse a name from a flag or a file.
    pub fn parse(s: &str) -> Result<QueryMode, String> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown protocol '{s}': choose text (values in the statement, as most \
                     connectors send them), prepared (prepared once, executed with bound \
                     values: sysbench, pgbench -M prepared), prepared-uncached (MySQL family: \
                     without MariaDB's metadata cache) or extended (PostgreSQL: parsed at \
                     every execution, pgbench -M extended)"
                )
            })
    }

    /// How a title says it ("point-select, values as text").
    pub fn words(self) -> &'static str {
        match self {
            QueryMode::Text => "values as text",
            QueryMode::Prepared => "prepared statements",
            QueryMode::PreparedUncached => "prepared statements, no metadata cache",
            QueryMode::Extended => "parsed at each execution",
        }
    }

    /// Statements are prepared on the server (once, or at every execution).
    pub fn server_side(self) -> bool {
        self != QueryMode::Text
    }
}

/// A statement split at its `?` placeholders (outside quotes), for the text mode: the
/// values are written in as literals where the placeholders were, as a connector that
/// emulates prepared statements does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The text between placeholders: one more piece than placeholders.
    pieces: Vec<String>,
}

impl Template {
    /// Split `sql` at every `?` outside a quoted string or name.
    pub fn new(sql: &str) -> Template {
        let mut pieces = vec![String::new()];
        let mut quote = None;
        for c in sql.chars() {
            match (quote, c) {
                (None, '\'' | '"' | '`') => quote = Some(c),
                (Some(q), _) if c == q => quote = None,
                (None, '?') => {
                    pieces.push(String::new());
                    continue;
                }
                _ => {}
            }
            pieces.last_mut().expect("one piece at least").push(c);
        }
        Template { pieces }
    }

    /// Placeholders in the statement.
    pub fn params(&self) -> usize {
        self.pieces.len() - 1
    }

    /// Append the statement with `params` written in by `literal` to `out`; a missing value
    /// is NULL.
    pub fn render(
        &self,
        params: &[Value<'_>],
        literal: fn(&Value<'_>, &mut Vec<u8>),
        out: &mut Vec<u8>,
    ) {
        for (i, piece) in self.pieces.iter().enumerate() {
            if i > 0 {
                literal(params.get(i - 1).unwrap_or(&Value::Null), out);
            }
            out.extend_from_slice(piece.as_bytes());
        }
    }
}

/// An integer's decimal digits, appended without allocating.
pub fn write_int(i: i64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut n = i.unsigned_abs();
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(v: &Value<'_>, out: &mut Vec<u8>) {
        match *v {
            Value::Int(i) => write_int(i, out),
            Value::Text(s) => {
                out.push(b'\'');
                out.extend_from_slice(s.as_bytes());
                out.push(b'\'');
            }
            Value::Null => out.extend_from_slice(b"NULL"),
        }
    }

    #[test]
    fn placeholders_inside_quotes_are_text() {
        let t = Template::new("SELECT '?', \"a?\", `b?` FROM t WHERE id BETWEEN ? AND ?");
        assert_eq!(t.params(), 2);
        let mut out = vec![];
        t.render(&[Value::Int(-12), Value::Text("x")], plain, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SELECT '?', \"a?\", `b?` FROM t WHERE id BETWEEN -12 AND 'x'"
        );
    }

    #[test]
    fn integers_are_written_in_full() {
        for i in [0, 7, -1, 1_000_000, i64::MAX, i64::MIN] {
            let mut out = vec![];
            write_int(i, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), i.to_string());
        }
    }

    #[test]
    fn every_name_parses_back() {
        for m in QueryMode::ALL {
            assert_eq!(QueryMode::parse(m.name()), Ok(m));
        }
        assert!(QueryMode::parse("binary").is_err());
    }
}
