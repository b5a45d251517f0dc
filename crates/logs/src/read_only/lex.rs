//! SQL lexed as the server that will run it reads it, for the replay's classifier. A log's
//! statement can be read more than one way: MySQL-family servers run `/*!NNNNN … */` up to
//! their version and MariaDB runs `/*M!NNNNN … */` (MySQL ignores it), a backslash escapes a
//! quote unless `NO_BACKSLASH_ESCAPES` (MySQL) or `standard_conforming_strings` (PostgreSQL,
//! on by default) says it does not, and under MySQL's `ANSI_QUOTES` a double quote opens a
//! name, in which a backslash is a plain character, while single-quoted strings still escape
//! with one. Rather than guess the server's version and modes, the
//! classifier lexes every reading (`readings`) and a statement is a read only if it is one in
//! all of them. Comments, strings and quoted names never yield keywords.
//!
//! Written here rather than taken from `sqlparser`'s tokenizer: that tokenizer reads
//! `/*!…*/` as a comment (so `/*M!100000 DROP TABLE t */ SELECT 1` would look like a read)
//! and lexes strings one way per dialect; a classifier that must hold against every reading
//! needs both knobs.

/// Which server family's lexical rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// MariaDB and MySQL: `#` and `-- ` comments, executable comments, backticks.
    Mysql,
    /// PostgreSQL: nested block comments, dollar quoting, `E'…'` strings.
    Postgres,
}

/// One token. Words are lower-cased; a quoted name is a name, never a keyword.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// A keyword or an unquoted name (`@var` and `@@var` included).
    Word(compact_str::CompactString),
    /// A quoted name: `"x"`, `` `x` `` (lower-cased for comparisons).
    Name(compact_str::CompactString),
    /// A string literal (its contents do not matter here).
    Str,
    /// A number.
    Num,
    /// A placeholder: `?`, `$1`.
    Param,
    /// `;`.
    Semi,
    /// Any other character.
    Op(char),
}

/// How one reading lexes: which executable comments run, whether a backslash escapes.
#[derive(Debug, Clone, Copy)]
struct Reading {
    /// Bit i: the i-th executable comment met runs.
    exec_mask: u32,
    /// A backslash in a plain string escapes the next character.
    backslash: bool,
    /// MySQL's ANSI_QUOTES: a double quote opens a name, where a backslash escapes nothing.
    ansi_quotes: bool,
}

/// At most this many executable comments are read every way (2^N readings): a statement
/// with more is not shown to be a read.
pub const MAX_EXEC_COMMENTS: u32 = 6;

/// A reading that could not be lexed, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// A server reading it so would refuse it as a syntax error (an unterminated string,
    /// name or comment): nothing would run.
    Refused(&'static str),
    /// Beyond what this lexer reads (too many executable comments, one inside another, a
    /// version it cannot read): not shown to be a read.
    Beyond(&'static str),
}

/// Every reading of `sql` the servers of `dialect` could make: each a token list, or why it
/// cannot be read.
pub fn readings(sql: &str, dialect: Dialect) -> Vec<Result<Vec<Tok>, Unreadable>> {
    // Each executable comment a reading meets opens at one of these places.
    // (Most statements have no comment at all: a plain byte scan says so first.)
    let openers = match dialect {
        Dialect::Mysql if sql.as_bytes().windows(2).any(|w| w == b"/*") => {
            (sql.matches("/*!").count() + sql.matches("/*M!").count()) as u32
        }
        _ => 0,
    };
    if openers > MAX_EXEC_COMMENTS {
        return vec![Err(Unreadable::Beyond(
            "more executable comments than dbtax reads",
        ))];
    }
    let masks = 1u32 << openers;
    // (backslash escapes, ANSI_QUOTES): without a backslash every mode reads alike; with
    // one, the modes differ where a double quote is: escaping in both quotes, in single
    // quotes only (ANSI_QUOTES), in neither (NO_BACKSLASH_ESCAPES, either way).
    let modes: &[(bool, bool)] = match (sql.contains('\\'), sql.contains('"')) {
        (false, _) => &[(false, false)],
        (true, true) if dialect == Dialect::Mysql => &[(true, false), (true, true), (false, false)],
        (true, _) => &[(true, false), (false, false)],
    };
    let mut out = Vec::with_capacity(masks as usize * modes.len());
    for exec_mask in 0..masks {
        for &(backslash, ansi_quotes) in modes {
            out.push(lex(
                sql,
                dialect,
                Reading {
                    exec_mask,
                    backslash,
                    ansi_quotes,
                },
            ));
        }
    }
    out
}

/// The tokens of one reading.
fn lex(sql: &str, dialect: Dialect, r: Reading) -> Result<Vec<Tok>, Unreadable> {
    let b = sql.as_bytes();
    let my = dialect == Dialect::Mysql;
    // About a token per five bytes of SQL: one allocation for most statements.
    let mut toks = Vec::with_capacity(sql.len() / 5 + 4);
    let mut i = 0;
    let mut exec_seen = 0u32;
    let mut in_exec = false;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match c {
            _ if c.is_ascii_whitespace() => i += 1,
            b'#' if my => i = line_end(b, i),
            b'-' if next == Some(b'-')
                && (!my
                    || b.get(i + 2)
                        .is_none_or(|&n| n.is_ascii_whitespace() || n < 32)) =>
            {
                i = line_end(b, i)
            }
            b'*' if in_exec && next == Some(b'/') => {
                in_exec = false;
                i += 2;
            }
            b'/' if next == Some(b'*') => {
                let exec = my && matches!(b.get(i + 2), Some(b'!'))
                    || my && b.get(i + 2) == Some(&b'M') && b.get(i + 3) == Some(&b'!');
                if exec {
                    if in_exec {
                        return Err(Unreadable::Beyond("an executable comment inside another"));
                    }
                    if exec_seen >= MAX_EXEC_COMMENTS {
                        return Err(Unreadable::Beyond(
                            "more executable comments than dbtax reads",
                        ));
                    }
                    let runs = r.exec_mask & (1 << exec_seen) != 0;
                    exec_seen += 1;
                    if runs {
                        i += if b[i + 2] == b'M' { 4 } else { 3 };
                        let digits = b[i..].iter().take_while(|d| d.is_ascii_digit()).count();
                        if !matches!(digits, 0 | 5 | 6) {
                            return Err(Unreadable::Beyond("a version comment dbtax cannot read"));
                        }
                        i += digits;
                        in_exec = true;
                        continue;
                    }
                } else if in_exec {
                    return Err(Unreadable::Beyond("a comment inside an executable comment"));
                }
                i = comment_end(b, i, dialect == Dialect::Postgres)?;
            }
            b'\'' => {
                // PostgreSQL's E'…' escapes with backslashes whatever the settings.
                let escaped = dialect == Dialect::Postgres
                    && matches!(toks.last(), Some(Tok::Word(w)) if w == "e")
                    && i > 0
                    && matches!(b[i - 1], b'e' | b'E');
                if escaped {
                    toks.pop();
                }
                i = quoted_end(b, i, b'\'', escaped || r.backslash)?;
                toks.push(Tok::Str);
            }
            b'"' => {
                let end = quoted_end(b, i, b'"', my && r.backslash && !r.ansi_quotes)?;
                toks.push(Tok::Name(lower(&sql[i + 1..end - 1])));
                i = end;
            }
            b'`' if my => {
                let end = quoted_end(b, i, b'`', false)?;
                toks.push(Tok::Name(lower(&sql[i + 1..end - 1])));
                i = end;
            }
            b'$' if dialect == Dialect::Postgres => {
                let tag_len = b[i + 1..]
                    .iter()
                    .take_while(|d| d.is_ascii_alphanumeric() || **d == b'_' || **d >= 0x80)
                    .count();
                let digits = b[i + 1..].iter().take_while(|d| d.is_ascii_digit()).count();
                if digits > 0 {
                    toks.push(Tok::Param);
                    i += 1 + digits;
                } else if b.get(i + 1 + tag_len) == Some(&b'$') {
                    let tag = &sql[i..i + tag_len + 2];
                    let body = i + tag.len();
                    match sql[body..].find(tag) {
                        Some(at) => i = body + at + tag.len(),
                        None => {
                            return Err(Unreadable::Refused(
                                "an unterminated dollar-quoted string",
                            ));
                        }
                    }
                    toks.push(Tok::Str);
                } else {
                    toks.push(Tok::Op('$'));
                    i += 1;
                }
            }
            b'?' => {
                toks.push(Tok::Param);
                i += 1;
            }
            b';' => {
                toks.push(Tok::Semi);
                i += 1;
            }
            _ if c.is_ascii_alphanumeric() || c == b'_' || c == b'@' || c >= 0x80 => {
                let start = i;
                while i < b.len() && b[i] == b'@' {
                    i += 1;
                }
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'$'
                        || b[i] >= 0x80)
                {
                    i += 1;
                }
                let w = &sql[start..i];
                if w.bytes().all(|d| d.is_ascii_digit()) {
                    toks.push(Tok::Num);
                } else {
                    toks.push(Tok::Word(lower(w)));
                }
            }
            _ => {
                // (A character of several bytes is a word's; any other byte is one op.)
                toks.push(Tok::Op(c as char));
                i += 1;
            }
        }
    }
    if in_exec {
        return Err(Unreadable::Refused("an unterminated executable comment"));
    }
    Ok(toks)
}

fn lower(s: &str) -> compact_str::CompactString {
    // (ASCII, nearly every word: the same result without the Unicode tables.)
    // Short words (nearly all) lower-cased on the stack and stored inline: no allocation.
    const INLINE: usize = 24;
    if !s.is_ascii() {
        compact_str::CompactString::from(s.to_lowercase())
    } else if s.len() <= INLINE {
        let mut buf = [0u8; INLINE];
        let w = &mut buf[..s.len()];
        w.copy_from_slice(s.as_bytes());
        w.make_ascii_lowercase();
        compact_str::CompactString::from_utf8(w).unwrap_or_default()
    } else {
        compact_str::CompactString::from(s.to_ascii_lowercase())
    }
}

/// Past the end of the line that starts a comment at `i`.
fn line_end(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| i + p + 1)
}

/// Past the `*/` that closes the comment opened at `i` (PostgreSQL's nest).
fn comment_end(b: &[u8], i: usize, nests: bool) -> Result<usize, Unreadable> {
    let mut depth = 0usize;
    let mut j = i;
    while j + 1 < b.len() {
        if b[j] == b'/' && b[j + 1] == b'*' {
            if depth == 0 || nests {
                depth += 1;
            }
            j += 2;
        } else if b[j] == b'*' && b[j + 1] == b'/' {
            depth -= 1;
            j += 2;
            if depth == 0 {
                return Ok(j);
            }
        } else {
            j += 1;
        }
    }
    Err(Unreadable::Refused("an unterminated comment"))
}

/// Past the quote that closes the one at `i` (a doubled quote stays inside; with
/// `backslash`, so does the character after a backslash).
fn quoted_end(b: &[u8], i: usize, q: u8, backslash: bool) -> Result<usize, Unreadable> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' if backslash => j += 2,
            c if c == q && b.get(j + 1) == Some(&q) => j += 2,
            c if c == q => return Ok(j + 1),
            _ => j += 1,
        }
    }
    Err(Unreadable::Refused("an unterminated quoted string or name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(sql: &str, d: Dialect) -> Vec<Vec<String>> {
        readings(sql, d)
            .into_iter()
            .filter_map(Result::ok)
            .map(|r| {
                r.into_iter()
                    .filter_map(|t| match t {
                        Tok::Word(w) => Some(w.to_string()),
                        _ => None,
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn executable_comments_are_read_both_ways() {
        let all = words("/*!99999 SELECT */ DROP TABLE t", Dialect::Mysql);
        assert!(all.contains(&vec!["drop".into(), "table".into(), "t".into()]));
        assert!(all.contains(&vec![
            "select".into(),
            "drop".into(),
            "table".into(),
            "t".into()
        ]));
        let all = words("/*M!100000 DROP TABLE t */ SELECT 1", Dialect::Mysql);
        assert!(all.contains(&vec![
            "drop".into(),
            "table".into(),
            "t".into(),
            "select".into()
        ]));
        // PostgreSQL has no executable comments, and its comments nest.
        let all = words("/* a /* b */ DROP */ SELECT 1", Dialect::Postgres);
        assert_eq!(all, vec![vec!["select".to_string()]]);
    }

    #[test]
    fn a_backslash_is_read_both_ways_and_e_strings_always_escape() {
        // Under standard_conforming_strings 'a\' is a whole string and setval is code.
        let all = words("SELECT 'a\\', setval('s', 1), 'b'", Dialect::Postgres);
        assert_eq!(all.len(), 1);
        assert!(all[0].contains(&"setval".to_string()));
        // Read with backslash escapes the same text is unterminated: a server that reads it
        // so refuses it.
        let r = readings("SELECT 'a\\', setval('s', 1), 'b'", Dialect::Postgres);
        assert!(matches!(
            r[..],
            [Err(Unreadable::Refused(_)), Ok(_)] | [Ok(_), Err(Unreadable::Refused(_))]
        ));
        let all = words("SELECT E'a\\', setval', 1", Dialect::Postgres);
        assert!(all.iter().all(|w| !w.contains(&"setval".to_string())));
    }

    #[test]
    fn comments_strings_and_quoted_names_hide_no_keyword() {
        let r = readings(
            "SELECT \"setval\"(1) -- DROP\n, `x`, 'delete', $q$ drop $q$",
            Dialect::Postgres,
        );
        assert_eq!(
            r[0].clone().unwrap(),
            vec![
                Tok::Word("select".into()),
                Tok::Name("setval".into()),
                Tok::Op('('),
                Tok::Num,
                Tok::Op(')'),
                Tok::Op(','),
                Tok::Op('`'),
                Tok::Word("x".into()),
                Tok::Op('`'),
                Tok::Op(','),
                Tok::Str,
                Tok::Op(','),
                Tok::Str,
            ]
        );
        // MySQL: `--x` is not a comment; `#` is.
        assert_eq!(
            words("SELECT 1 --1, sleep(1)", Dialect::Mysql)[0],
            ["select", "sleep"]
        );
        assert_eq!(words("SELECT 1 # sleep(1)", Dialect::Mysql)[0], ["select"]);
    }

    #[test]
    fn what_cannot_be_lexed_is_said() {
        for sql in [
            "SELECT 'x",
            "SELECT /* x",
            "SELECT $a$ x",
            "/*!12 SELECT 1 */",
            "SELECT 'a\\'",
        ] {
            let d = if sql.contains('$') {
                Dialect::Postgres
            } else {
                Dialect::Mysql
            };
            assert!(readings(sql, d).iter().any(|r| r.is_err()), "{sql}");
        }
    }
}
