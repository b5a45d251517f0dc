//! Docs that cannot rot: every relative link in README.md and docs/ resolves (the file, and
//! the heading when it names one), and every `dbtax …` command shown in a code block parses
//! as the command line would (the same clap definitions). Commands are parsed, not run: most
//! need a server, and the suites that run them are the engines'.

use clap::Parser;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page in docs/.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A markdown file's lines with their numbers (from 1), outside fenced code blocks or inside
/// them (`code`), the fences themselves left out.
fn lines(text: &str, code: bool) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = vec![];
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if fenced == code {
            out.push((n + 1, line));
        }
    }
    out
}

/// The headings' anchors of a markdown file.
fn anchors(text: &str) -> Vec<String> {
    lines(text, false)
        .into_iter()
        .filter(|(_, l)| l.starts_with('#'))
        .map(|(_, l)| slug(l.trim_start_matches('#')))
        .collect()
}

/// Every `[text](target)` outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = vec![];
    for (_, line) in lines(text, false) {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else {
                break;
            };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = vec![];
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in links(&text) {
            if link.starts_with("http://") || link.starts_with("https://") {
                continue;
            }
            checked += 1;
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", page.display()));
                continue;
            }
            if !anchor.is_empty() {
                let t = std::fs::read_to_string(&target).unwrap_or_default();
                if !anchors(&t).iter().any(|a| a == anchor) {
                    broken.push(format!("{}: {link} (no such heading)", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 10,
        "the pages link to each other: {checked} links"
    );
}

/// Split a shell command line into words (single and double quotes, backslash escapes);
/// None at a pipe, a redirection or a `&&` (the command ends there).
fn words(line: &str) -> Vec<String> {
    let mut out = vec![];
    let mut word = String::new();
    let mut any = false;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, '\\') => word.extend(chars.next()),
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (None, '|' | '>' | '<' | '&' | ';') => break,
            (None, '#') if word.is_empty() && !any => break,
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

/// Every `dbtax …` command in a code block, with the page and line it is on. A command's
/// words end where two spaces or more start a comment-like description (as the --help
/// examples write it).
fn commands(page: &Path) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut out = vec![];
    let mut pending: Option<(usize, String)> = None;
    for (n, line) in lines(&text, true) {
        let line = line.trim_start().trim_start_matches("$ ");
        let (at, joined) = match pending.take() {
            Some((at, before)) => (at, format!("{before} {line}")),
            None if line.starts_with("dbtax ") || line.starts_with("./target/release/dbtax ") => {
                (n, line.to_string())
            }
            None => continue,
        };
        if let Some(stripped) = joined.strip_suffix('\\') {
            pending = Some((at, stripped.to_string()));
            continue;
        }
        // "dbtax demo --quick    what it does": the description after a run of spaces.
        let cmd = joined.split("   ").next().unwrap_or("").trim().to_string();
        let mut w = words(&cmd);
        if let Some(first) = w.first_mut() {
            *first = "dbtax".into();
        }
        out.push((format!("{}:{at}", page.display()), w));
    }
    out
}

#[test]
fn every_command_shown_parses() {
    let mut bad = vec![];
    let mut parsed = 0;
    for page in pages() {
        for (at, w) in commands(&page) {
            parsed += 1;
            if let Err(e) = dbtax::cli::Cli::try_parse_from(&w) {
                use clap::error::ErrorKind::*;
                if !matches!(e.kind(), DisplayHelp | DisplayVersion) {
                    bad.push(format!("{at}: {}\n  {}", w.join(" "), e.kind()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "commands that do not parse:\n{}",
        bad.join("\n")
    );
    assert!(parsed > 20, "the pages show commands: {parsed}");
}

#[test]
fn the_front_page_is_short() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 420,
        "README.md is {lines} lines: the depth goes in docs/"
    );
}
