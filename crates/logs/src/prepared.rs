//! A MySQL-family general log writes a prepared statement twice over: `Prepare` with its `?`
//! placeholders, then each `Execute` with the values in their places, as literals. To replay
//! an execution prepared, `bind` finds its values: the two texts are walked side by side,
//! where the prepared one has a `?` (outside quotes and comments) the executed one has a
//! literal (a number, a quoted string, NULL, a string behind a `_charset` introducer), and
//! every other character is the same in both. Anything else: not this statement (the
//! execution is then replayed as its text).

use crate::Param;

/// The values `executed` gives `template`'s placeholders, in order; None when `executed` is
/// not `template` with literals in its placeholders' places.
pub fn bind(template: &str, executed: &str) -> Option<Vec<Param>> {
    let (t, x) = (template.as_bytes(), executed.as_bytes());
    let (mut i, mut j) = (0, 0);
    let mut params = vec![];
    let mut state = State::Code;
    while i < t.len() {
        let c = t[i];
        if state == State::Code && c == b'?' {
            let (p, used) = literal(&x[j..])?;
            params.push(p);
            i += 1;
            j += used;
            continue;
        }
        if x.get(j) != Some(&c) {
            return None;
        }
        state = state.after(t, i);
        i += 1;
        j += 1;
    }
    (j == x.len()).then_some(params)
}

/// Where the walk is in the prepared text: a `?` is a placeholder in code only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    /// In a quoted string or name (its quote); `Escaped`: after a backslash in one.
    Quoted(u8),
    Escaped(u8),
    /// In a `/* */` comment, or a line comment.
    Block,
    Line,
}

impl State {
    /// The state after the character at `t[i]`.
    fn after(self, t: &[u8], i: usize) -> State {
        let c = t[i];
        let next = t.get(i + 1).copied();
        match self {
            State::Code => match c {
                b'\'' | b'"' | b'`' => State::Quoted(c),
                b'/' if next == Some(b'*') => State::Block,
                b'#' => State::Line,
                b'-' if next == Some(b'-')
                    && t.get(i + 2).is_none_or(|b| b.is_ascii_whitespace()) =>
                {
                    State::Line
                }
                _ => State::Code,
            },
            State::Quoted(q) if c == b'\\' && q != b'`' => State::Escaped(q),
            State::Quoted(q) if c == q => State::Code,
            State::Escaped(q) => State::Quoted(q),
            State::Block if c == b'/' && i > 0 && t[i - 1] == b'*' => State::Code,
            State::Line if c == b'\n' => State::Code,
            s => s,
        }
    }
}

/// The literal at the start of `x` and the bytes it takes.
fn literal(x: &[u8]) -> Option<(Param, usize)> {
    let word_end = |from: usize| {
        from + x[from..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count()
    };
    match *x.first()? {
        b'\'' => string(x),
        b'_' => {
            // An introducer: `_binary'…'`, `_utf8mb4 '…'`.
            let end = word_end(1);
            let gap = x[end..].iter().take_while(|b| **b == b' ').count();
            let (p, used) = string(&x[end + gap..])?;
            Some((p, end + gap + used))
        }
        b'N' | b'n' if word_end(0) == 4 && x[..4].eq_ignore_ascii_case(b"null") => {
            Some((Param::Null, 4))
        }
        b'-' | b'+' | b'0'..=b'9' | b'.' => number(x),
        _ => None,
    }
}

/// A quoted string at the start of `x` (backslash escapes and doubled quotes), unescaped.
fn string(x: &[u8]) -> Option<(Param, usize)> {
    if x.first() != Some(&b'\'') {
        return None;
    }
    let mut out = Vec::with_capacity(x.len().min(64));
    let mut k = 1;
    while k < x.len() {
        match x[k] {
            b'\\' => {
                let e = *x.get(k + 1)?;
                out.push(match e {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'0' => 0,
                    b'Z' => 0x1A,
                    b'b' => 0x08,
                    other => other,
                });
                k += 2;
            }
            b'\'' if x.get(k + 1) == Some(&b'\'') => {
                out.push(b'\'');
                k += 2;
            }
            b'\'' => {
                let text = String::from_utf8(out).ok()?;
                return Some((Param::Text(text), k + 1));
            }
            b => {
                out.push(b);
                k += 1;
            }
        }
    }
    None
}

/// A number at the start of `x`: an integer as one, any other (a decimal, an exponent) as
/// its text.
fn number(x: &[u8]) -> Option<(Param, usize)> {
    let mut k = usize::from(matches!(x[0], b'-' | b'+'));
    let digits = |k: &mut usize| {
        let from = *k;
        while x.get(*k).is_some_and(u8::is_ascii_digit) {
            *k += 1;
        }
        *k > from
    };
    let whole = digits(&mut k);
    let mut integer = true;
    if x.get(k) == Some(&b'.') {
        k += 1;
        integer = false;
        if !digits(&mut k) && !whole {
            return None;
        }
    } else if !whole {
        return None;
    }
    if matches!(x.get(k), Some(b'e' | b'E')) {
        let mut e = k + 1;
        if matches!(x.get(e), Some(b'-' | b'+')) {
            e += 1;
        }
        if digits(&mut e) {
            k = e;
            integer = false;
        }
    }
    if x.get(k)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    {
        return None;
    }
    let text = std::str::from_utf8(&x[..k]).ok()?;
    let p = match text.parse::<i64>() {
        Ok(n) if integer => Param::Int(n),
        _ => Param::Text(text.to_string()),
    };
    Some((p, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Param {
        Param::Text(s.into())
    }

    #[test]
    fn values_are_read_where_the_placeholders_were() {
        assert_eq!(
            bind(
                "SELECT c FROM sbtest1 WHERE id=? AND k BETWEEN ? AND ?",
                "SELECT c FROM sbtest1 WHERE id=5003 AND k BETWEEN -2 AND 1.5e3",
            ),
            Some(vec![Param::Int(5003), Param::Int(-2), t("1.5e3")])
        );
        assert_eq!(
            bind(
                "INSERT INTO t (a, b, c, d) VALUES (?, ?, ?, ?)",
                r"INSERT INTO t (a, b, c, d) VALUES ('it''s', 'a\'b\nc', NULL, _binary'\0x')",
            ),
            Some(vec![t("it's"), t("a'b\nc"), Param::Null, t("\0x")])
        );
        assert_eq!(bind("SELECT 1", "SELECT 1"), Some(vec![]));
    }

    #[test]
    fn a_question_mark_in_quotes_or_comments_is_no_placeholder() {
        assert_eq!(
            bind(
                "SELECT '?', `a?` /* ? */ FROM t WHERE x = ? -- ?\n",
                "SELECT '?', `a?` /* ? */ FROM t WHERE x = 'v' -- ?\n",
            ),
            Some(vec![t("v")])
        );
    }

    #[test]
    fn another_statement_is_not_bound() {
        let tpl = "SELECT c FROM sbtest1 WHERE id=?";
        assert_eq!(bind(tpl, "SELECT c FROM sbtest2 WHERE id=5"), None);
        assert_eq!(bind(tpl, "SELECT c FROM sbtest1 WHERE id=5 LIMIT 1"), None);
        assert_eq!(bind(tpl, "SELECT c FROM sbtest1 WHERE id=id"), None);
        assert_eq!(
            bind(tpl, "SELECT c FROM sbtest1 WHERE id='unterminated"),
            None
        );
        assert_eq!(bind(tpl, "SELECT c FROM sbtest1 WHERE id=5x"), None);
        assert_eq!(bind(tpl, "SELECT c FROM sbtest1 WHERE id="), None);
    }
}
