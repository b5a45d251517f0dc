//! The two ways dbtax can fail that change the exit code, and the one failure every layer
//! must tell apart (`ServerLost`). Everything else is an ordinary `anyhow::Error` (exit 1:
//! the run failed).

use thiserror::Error;

/// A failure that is not "the run failed": main maps it to its own exit code.
#[derive(Debug, Error)]
pub enum Failure {
    /// Bad usage or bad input; nothing was changed on any server (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Ctrl-C or SIGTERM (exit 130). What was restored and kept is said by the context the
    /// caller adds, since only the caller knows.
    #[error("interrupted")]
    Interrupted,
}

/// The server stopped answering (its connection is gone), as opposed to refusing a
/// statement: a run restores what it can and says the server went away.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct ServerLost(pub String);

/// Shorthand for a usage error wrapped in anyhow.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Failure::Usage(msg.into()))
}

/// What to print for an error chain: one paragraph, "Error: ..." or "Interrupted: ...".
pub fn message(err: &anyhow::Error) -> String {
    if exit_code(err) != 130 {
        return format!("Error: {err:#}");
    }
    let said: Vec<String> = err
        .chain()
        .take_while(|c| !matches!(c.downcast_ref::<Failure>(), Some(Failure::Interrupted)))
        .map(|c| c.to_string())
        .collect();
    if said.is_empty() {
        "Interrupted.".into()
    } else {
        format!("Interrupted: {}", said.join(": "))
    }
}

/// The exit code for an error chain: 2 for usage, 130 for interrupt, 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        match cause.downcast_ref::<Failure>() {
            Some(Failure::Usage(_)) => return 2,
            Some(Failure::Interrupted) => return 130,
            None => {}
        }
    }
    1
}

#[cfg(test)]
mod tests {
    /// Every string literal of a Rust source, with the line it starts on, its content as the
    /// program sees it (a `\`-newline continuation and the indentation after it removed), and
    /// whether it holds a raw newline (a block laid out by hand, like `--help` examples).
    fn literals(src: &str) -> Vec<(usize, String, bool)> {
        let chars: Vec<char> = src.chars().collect();
        let (mut out, mut i, mut line) = (vec![], 0, 1);
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            if c == '\n' {
                line += 1;
            }
            if c == '/' && next == '/' {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            if c == '/' && next == '*' {
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
                i += 2;
                continue;
            }
            if c == '\'' {
                // A char literal ('x', '\n', '"'), or a lifetime.
                if next == '\\' {
                    i += 2;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
                continue;
            }
            let raw = c == 'r'
                && (next == '"' || next == '#')
                && (i == 0 || !ident(chars[i - 1]) || chars[i - 1] == 'b');
            if raw {
                let mut j = i + 1;
                while chars.get(j) == Some(&'#') {
                    j += 1;
                }
                if chars.get(j) == Some(&'"') {
                    let hashes = j - i - 1;
                    let close: String = std::iter::once('"')
                        .chain(std::iter::repeat_n('#', hashes))
                        .collect();
                    let rest: String = chars[j + 1..].iter().collect();
                    let end = rest.find(&close).unwrap_or(rest.len());
                    let body = &rest[..end];
                    out.push((line, body.to_string(), body.contains('\n')));
                    line += body.matches('\n').count();
                    i = j + 1 + body.chars().count() + close.chars().count();
                    continue;
                }
            }
            if c == '"' {
                let (start, mut body, mut layout) = (line, String::new(), false);
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    match chars[i] {
                        '\\' if chars.get(i + 1) == Some(&'\n') => {
                            i += 1;
                            while i < chars.len() && chars[i].is_whitespace() {
                                line += usize::from(chars[i] == '\n');
                                i += 1;
                            }
                            continue;
                        }
                        '\\' => {
                            // An escaped newline is a line break the program asks for.
                            let e = chars.get(i + 1).copied().unwrap_or(' ');
                            body.push(if e == 'n' { BREAK } else { e });
                            i += 2;
                            continue;
                        }
                        '\n' => {
                            line += 1;
                            layout = true;
                            body.push('\n');
                        }
                        ch => body.push(ch),
                    }
                    i += 1;
                }
                out.push((start, body, layout));
            }
            i += 1;
        }
        out
    }

    /// A `\n` escape in a literal: a line break the program asks for.
    const BREAK: char = '\u{1}';

    /// Spaces between two words of a sentence that a string continuation without its `\`
    /// leaves in a message: a run of two or more on one line, or a raw newline and the
    /// source's indentation. A line laid out in columns (it starts with spaces: a table row,
    /// the dry run's labels) and a block laid out by hand (`layout`: raw newlines, like the
    /// `--help` examples) may align with spaces; neither may be broken mid-sentence by the
    /// source's indentation.
    fn broken_sentence(text: &str, layout: bool) -> Option<String> {
        let word = |ch: char| ch.is_ascii_lowercase() || ",;:.)'".contains(ch);
        for segment in text.split(BREAK) {
            let columns = layout || segment.starts_with(' ');
            let c: Vec<char> = segment.chars().collect();
            for i in 0..c.len() {
                let run = c[i..]
                    .iter()
                    .take_while(|ch| **ch == ' ' || **ch == '\n')
                    .count();
                if run < 2 || (i > 0 && (c[i - 1] == ' ' || c[i - 1] == '\n')) {
                    continue;
                }
                let gap: String = c[i..i + run].iter().collect();
                let (before, after) = (c[..i].last().copied(), c.get(i + run).copied());
                let between_words = before.is_some_and(word)
                    && after.is_some_and(|a| a.is_ascii_lowercase() || a == '(');
                let indented_break = gap.starts_with('\n') && gap.len() > 4;
                if between_words && (indented_break || (!columns && !gap.contains('\n'))) {
                    return Some(segment.replace('\n', "\\n"));
                }
            }
        }
        None
    }

    #[test]
    fn no_message_has_runs_of_spaces_inside_a_sentence() {
        fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    files(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs")
                    // A module of tests alone (`#[path = "…_tests.rs"]` under #[cfg(test)]).
                    && !p.to_string_lossy().ends_with("_tests.rs")
                {
                    out.push(p);
                }
            }
        }
        let mut all = vec![];
        files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut all,
        );
        let mut broken = vec![];
        for f in &all {
            let src = std::fs::read_to_string(f).unwrap();
            // The messages, not the tests' own strings (each file's tests come last).
            let src = src.split("#[cfg(test)]").next().unwrap_or_default();
            for (line, text, layout) in literals(src) {
                if let Some(s) = broken_sentence(&text, layout) {
                    broken.push(format!("{}:{line}: {s:?}", f.display()));
                }
            }
        }
        assert!(all.len() > 50, "the sources were found");
        assert!(broken.is_empty(), "{broken:#?}");
        // The scanner sees a continuation without its backslash, and only that.
        let bad = "x(\"one two\n                 three\");";
        let good = "x(\"one two \\\n                 three\");";
        let (b, g) = (&literals(bad)[0], &literals(good)[0]);
        assert!(b.2 && broken_sentence(&b.1, b.2).is_some(), "{b:?}");
        assert_eq!(g.1, "one two three");
        assert!(broken_sentence(&g.1, g.2).is_none());
        assert!(broken_sentence("another                      connection", false).is_some());
        assert!(broken_sentence("{:>6}  {:<46}", false).is_none());
        assert!(broken_sentence("Examples:\n  dbtax demo --quick     threads 1", true).is_none());
    }
}
