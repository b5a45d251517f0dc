//! A statement's fingerprint, as pt-query-digest and pg_stat_statements group statements:
//! literals become `?` (strings, numbers, hex, `$n` parameters), comments go, whitespace
//! collapses to one space, keywords and names are lower-cased, and lists of values fold (`in
//! (?, ?, ?)` → `in (?+)`, `values (?, ?), (?, ?)` → `values (?+)`). Its digest is a stable
//! 64-bit FNV-1a hash of the fingerprint, in hex. A quoted name stays a name: a MySQL-family
//! backquoted one lower-cased without its quotes, a PostgreSQL double-quoted one as written
//! (its case is its own), so statements on two tables are never one fingerprint.

use crate::read_only::lex::Dialect;

/// The fingerprint of `sql`, as its server reads it (`"` quotes a name on PostgreSQL, a
/// string in the MySQL family). Walks the bytes: every character that means something here
/// is ASCII, and a multi-byte character is only copied (lower-cased) or, when it is a space,
/// taken as one.
pub fn fingerprint(sql: &str, dialect: Dialect) -> String {
    let mut out = String::new();
    Scratch::default().fingerprint(sql, dialect, &mut out);
    out
}

/// A reader's buffers for fingerprints, kept from one statement to the next (two
/// allocations a statement less on a log's millions).
#[derive(Default)]
pub struct Scratch {
    walked: String,
}

impl Scratch {
    /// `fingerprint(sql, dialect)` into `out` (emptied first).
    pub fn fingerprint(&mut self, sql: &str, dialect: Dialect, out: &mut String) {
        self.walked.clear();
        walk(sql, dialect, &mut self.walked);
        let trimmed = self.walked.trim().trim_end_matches(';').trim_end();
        out.clear();
        fold_lists(trimmed, out);
    }
}

/// The fingerprint before its lists fold, into `out`.
fn walk(sql: &str, dialect: Dialect, out: &mut String) {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match c {
            b'"' if dialect == Dialect::Postgres => {
                // A quoted name (a doubled quote is one quote in it): kept as written.
                let start = i;
                i += 1;
                while i < b.len() {
                    match b[i] {
                        b'"' if b.get(i + 1) == Some(&b'"') => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                i = (i + 1).min(b.len());
                out.push_str(&sql[start..i]);
            }
            b'\'' | b'"' => {
                // A quoted string (doubled quotes and backslashes escape): one `?`.
                i += 1;
                while i < b.len() {
                    match b[i] {
                        b'\\' => i += 2,
                        q if q == c && b.get(i + 1) == Some(&c) => i += 2,
                        q if q == c => break,
                        _ => i += 1,
                    }
                }
                out.push('?');
                i += 1;
            }
            b'-' if next == Some(b'-') => i = line_end(b, i),
            b'#' => i = line_end(b, i),
            b'/' if next == Some(b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
                space(out);
            }
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {
                space(out);
                i += 1;
            }
            b'$' if next.is_some_and(|n| n.is_ascii_digit()) => {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                out.push('?');
            }
            c if c.is_ascii_digit() && !out.chars().next_back().is_some_and(is_word) => {
                // A number (0x.., 1.5e3, -1 keeps its sign as an operator).
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
                out.push('?');
            }
            b'`' => {
                // A quoted name: kept, lower-cased, without its quotes.
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i = push_lower(out, sql, i);
                }
                i += 1;
            }
            c if c.is_ascii() => {
                out.push(c.to_ascii_lowercase() as char);
                i += 1;
            }
            _ => match sql.get(i..).and_then(|s| s.chars().next()) {
                Some(ch) if ch.is_whitespace() => {
                    space(out);
                    i += ch.len_utf8();
                }
                _ => i = push_lower(out, sql, i),
            },
        }
    }
}

/// One space, unless the fingerprint is empty or ends with one.
fn space(out: &mut String) {
    if !out.is_empty() && !out.ends_with(' ') {
        out.push(' ');
    }
}

/// Where the line that `at` is on ends (its newline, or the end).
fn line_end(b: &[u8], at: usize) -> usize {
    b[at..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| at + p)
}

/// Push the character at byte `i` of `sql` lower-cased; the byte after it.
fn push_lower(out: &mut String, sql: &str, i: usize) -> usize {
    let c = sql.as_bytes()[i];
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase() as char);
        return i + 1;
    }
    match sql.get(i..).and_then(|s| s.chars().next()) {
        Some(ch) => {
            out.extend(ch.to_lowercase());
            i + ch.len_utf8()
        }
        // (Not at a character's start: a byte skipped by an escape; step over it.)
        None => i + 1,
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `(?, ?, ?)` → `(?+)`, and `(?+), (?+)` after VALUES → one `(?+)`.
fn fold_lists(s: &str, out: &mut String) {
    let mut rest = s;
    while let Some(open) = rest.find('(') {
        out.push_str(&rest[..open]);
        let inner_end = rest[open..].find(')').map(|e| open + e);
        match inner_end {
            Some(close)
                if rest[open + 1..close]
                    .split(',')
                    .all(|part| part.trim() == "?" || part.trim() == "?+") =>
            {
                if out.ends_with("(?+), ") || out.ends_with("(?+),") {
                    // Another row of VALUES: dropped.
                    let cut = out.trim_end_matches(' ').trim_end_matches(',').len();
                    out.truncate(cut);
                } else {
                    out.push_str("(?+)");
                }
                rest = &rest[close + 1..];
            }
            _ => {
                out.push('(');
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
}

/// The fingerprint's stable digest (FNV-1a, 64 bits), 16 hex digits.
pub fn digest(fingerprint: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in fingerprint.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk over characters the byte walk replaced, kept as its reference.
    fn by_chars(sql: &str, dialect: Dialect) -> String {
        let mut out = String::with_capacity(sql.len());
        let chars: Vec<char> = sql.chars().collect();
        let mut i = 0;
        let space = |out: &mut String| {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
        };
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match c {
                '"' if dialect == Dialect::Postgres => {
                    // A quoted name (a doubled quote is one quote in it): kept as written.
                    let start = i;
                    i += 1;
                    while i < chars.len() {
                        match chars[i] {
                            '"' if chars.get(i + 1) == Some(&'"') => i += 2,
                            '"' => break,
                            _ => i += 1,
                        }
                    }
                    i = (i + 1).min(chars.len());
                    out.extend(&chars[start..i]);
                }
                '\'' | '"' => {
                    // A quoted string (doubled quotes and backslashes escape): one `?`.
                    i += 1;
                    while i < chars.len() {
                        match chars[i] {
                            '\\' => i += 2,
                            q if q == c && chars.get(i + 1) == Some(&c) => i += 2,
                            q if q == c => break,
                            _ => i += 1,
                        }
                    }
                    out.push('?');
                    i += 1;
                }
                '-' if next == Some('-') => {
                    while i < chars.len() && chars[i] != '\n' {
                        i += 1;
                    }
                }
                '#' => {
                    while i < chars.len() && chars[i] != '\n' {
                        i += 1;
                    }
                }
                '/' if next == Some('*') => {
                    i += 2;
                    while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                        i += 1;
                    }
                    i += 2;
                    space(&mut out);
                }
                c if c.is_whitespace() => {
                    space(&mut out);
                    i += 1;
                }
                '$' if next.is_some_and(|n| n.is_ascii_digit()) => {
                    i += 1;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                    out.push('?');
                }
                c if c.is_ascii_digit() && !out.chars().last().is_some_and(is_word) => {
                    // A number (0x.., 1.5e3, -1 keeps its sign as an operator).
                    i += 1;
                    while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                        i += 1;
                    }
                    out.push('?');
                }
                '`' => {
                    // A quoted name: kept, lower-cased, without its quotes.
                    i += 1;
                    while i < chars.len() && chars[i] != '`' {
                        out.extend(chars[i].to_lowercase());
                        i += 1;
                    }
                    i += 1;
                }
                c => {
                    out.extend(c.to_lowercase());
                    i += 1;
                }
            }
        }
        let trimmed = out.trim().trim_end_matches(';').trim_end();
        let mut folded = String::new();
        fold_lists(trimmed, &mut folded);
        folded
    }

    #[test]
    fn the_byte_walk_agrees_with_the_character_walk() {
        // Pieces that mean something (quotes, escapes, comments, numbers, names, spaces of
        // every kind, letters that lower-case to more than one byte), glued at random.
        let pieces = [
            "SELECT", " ", "\t", "\n", "\u{a0}", "\u{2003}", "x", "É", "İ", "ß", "日本", "'", "\"",
            "`", "\\", "''", "\"\"", "--", "#", "/*", "*/", "$1", "$", "12", "0x1F", "1.5e3", "-",
            "(", ")", ",", "?", ";", "in", "VALUES", "_a9", "Ω", "\u{85}", "\u{b}",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // One reader's buffers, kept over every statement as a log's read keeps them.
        let (mut scratch, mut kept) = (super::Scratch::default(), String::new());
        for _ in 0..20_000 {
            let n = 1 + next() % 24;
            let sql: String = (0..n)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect();
            for d in [Dialect::Mysql, Dialect::Postgres] {
                assert_eq!(
                    crate::fingerprint::fingerprint(&sql, d),
                    by_chars(&sql, d),
                    "{sql:?} {d:?}"
                );
                scratch.fingerprint(&sql, d, &mut kept);
                assert_eq!(kept, by_chars(&sql, d), "{sql:?} {d:?}");
            }
        }
    }

    fn fingerprint(sql: &str) -> String {
        crate::fingerprint::fingerprint(sql, Dialect::Mysql)
    }

    #[test]
    fn postgresql_quoted_names_stay_names() {
        let pg = |s: &str| crate::fingerprint::fingerprint(s, Dialect::Postgres);
        let users = pg(r#"SELECT "users".* FROM "users" WHERE "users"."id" = $1 LIMIT $2"#);
        assert_eq!(
            users,
            r#"select "users".* from "users" where "users"."id" = ? limit ?"#
        );
        let orders = pg(r#"SELECT "orders".* FROM "orders" WHERE "orders"."id" = 7 LIMIT 1"#);
        assert_ne!(users, orders, "two tables, two fingerprints");
        assert_eq!(
            pg(r#"select "a""b" from t where x = 'y'"#),
            r#"select "a""b" from t where x = ?"#
        );
        // A name never closed ends the statement, without a panic.
        assert_eq!(pg(r#"select "open"#), r#"select "open"#);
        // In the MySQL family a double-quoted text is a string.
        assert_eq!(
            fingerprint(r#"select * from t where a = "x""#),
            "select * from t where a = ?"
        );
    }

    #[test]
    fn literals_comments_and_case_go_names_stay() {
        assert_eq!(
            fingerprint("SELECT c FROM sbtest1 WHERE id=42 AND pad = 'it''s; -- x'  ;"),
            "select c from sbtest1 where id=? and pad = ?"
        );
        assert_eq!(
            fingerprint("select /* app=shop */ `Col` from t2 -- trailing\nwhere x = $1 # c"),
            "select col from t2 where x = ?"
        );
        assert_eq!(fingerprint("SELECT 0x1F, 1.5e3, -7"), "select ?, ?, -?");
        assert_eq!(
            fingerprint("select * from t where a = \"x\\\"y\""),
            "select * from t where a = ?"
        );
    }

    #[test]
    fn lists_fold_whatever_their_length() {
        let a = fingerprint("SELECT * FROM t WHERE id IN (1, 2, 3)");
        let b = fingerprint("select * from t where id in (7)");
        assert_eq!(a, "select * from t where id in (?+)");
        assert_eq!(a, b);
        assert_eq!(
            fingerprint("INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y'), (3, 'z')"),
            "insert into t (a, b) values (?+)"
        );
        assert_eq!(
            fingerprint("insert into t (a, b) values (1, 'x')"),
            fingerprint("INSERT INTO t (a, b) VALUES (9, 'q'), (8, 'r')")
        );
    }

    #[test]
    fn digests_are_stable_and_tell_fingerprints_apart() {
        assert_eq!(digest("select ?"), digest("select ?"));
        assert_ne!(digest("select ?"), digest("select ?, ?"));
        assert_eq!(digest("").len(), 16);
    }
}
