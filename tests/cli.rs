//! The command line: help, and bad input that must fail with one clear message and exit 2
//! before any server is touched. No database needed here.

mod common;

use assert_cmd::Command;
use predicates::prelude::*;

fn dbtax() -> Command {
    Command::from_std(common::dbtax(
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-state"),
    ))
}

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-files");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn help_lists_commands_with_examples() {
    dbtax()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("bench"))
        .stdout(predicate::str::contains("run"))
        .stdout(predicate::str::contains("restore"))
        .stdout(predicate::str::contains("Examples:"));
    dbtax()
        .args(["run", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--precision"))
        .stdout(predicate::str::contains("dbtax run --feature general-log"));
}

/// Runs dbtax, expects exit 2 and a one-paragraph "Error:" message containing `needle`.
fn fails_with_usage(args: &[&str], needle: &str) {
    let out = dbtax().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "args {args:?}: stderr {stderr}");
    assert!(
        stderr.contains(needle),
        "args {args:?}: expected '{needle}' in: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_durations_workloads_and_threads_are_usage_errors() {
    // Durations and sizes are typed by clap's value parsers: its message names the flag.
    fails_with_usage(
        &["bench", "--duration", "ten"],
        "invalid value 'ten' for '--duration",
    );
    fails_with_usage(&["bench", "--warmup=-3s"], "for '--warmup");
    fails_with_usage(&["bench", "--workload", "tpcc"], "tpcc");
    fails_with_usage(&["bench", "--threads", "0"], "--threads must be at least 1");
    fails_with_usage(
        &["run", "--feature", "general-log", "--threads", "0"],
        "at least 1",
    );
    fails_with_usage(
        &["run", "--feature", "general-log", "--trial", "soon"],
        "for '--trial",
    );
    fails_with_usage(
        &[
            "run",
            "--feature",
            "general-log",
            "--max-log-bytes",
            "99999999999999999999999",
        ],
        "more than 1 PiB",
    );
    fails_with_usage(
        &["run", "--feature", "general-log", "--repeats", "1"],
        "at least 2",
    );
}

#[test]
fn bad_urls_are_usage_errors_that_never_print_the_password() {
    let out = dbtax()
        .args([
            "bench",
            "--target",
            "mysql://bob:hunter2@127.0.0.1:notaport/db",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad --target"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "password leaked: {stderr}");
    fails_with_usage(
        &["bench", "--target", "managed:oracle"],
        "unknown managed target",
    );
    fails_with_usage(&["bench", "--target", "ftp://x/"], "unknown scheme");
}

#[test]
fn a_server_that_is_down_is_a_usage_error() {
    let out = dbtax()
        .args([
            "bench",
            "--target",
            "mysql://root:sekret@localhost/db?socket=/nonexistent/mysqld.sock",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot connect to mysql://root:***@"),
        "{stderr}"
    );
    assert!(!stderr.contains("sekret"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one paragraph: {stderr}");
}

#[test]
fn unknown_features_and_empty_experiments_are_usage_errors() {
    fails_with_usage(
        &["run", "--feature", "turbo-mode"],
        "unknown feature 'turbo-mode'",
    );
    fails_with_usage(&["run"], "nothing to compare");
}

#[test]
fn broken_experiment_files_say_what_is_wrong() {
    let p = write("broken.toml", "name = \"x\"\nthreads = [1, 4\n");
    fails_with_usage(&["run", p.to_str().unwrap()], "not a valid experiment file");
    let p = write(
        "typo.toml",
        "name = \"x\"\nthread = [1]\n[[variant]]\nname = \"off\"\n",
    );
    fails_with_usage(&["run", p.to_str().unwrap()], "unknown field `thread`");
    let p = write(
        "feature.toml",
        "name = \"x\"\n[[variant]]\nname = \"off\"\n[[variant]]\nname = \"on\"\nfeature = \"nope\"\n",
    );
    fails_with_usage(&["run", p.to_str().unwrap()], "unknown feature 'nope'");
    let p = write(
        "dup.toml",
        "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"a\"\n",
    );
    fails_with_usage(&["run", p.to_str().unwrap()], "two variants are named 'a'");
    // A workload that contradicts itself is said as such, before its log is read.
    let p = write(
        "log-without-replay.toml",
        "[workload]\nkind = \"point-select\"\nlog = \"/nonexistent/general.log\"\n\
         [[variant]]\nname = \"off\"\n[[variant]]\nname = \"on\"\nfeature = \"general-log\"\n",
    );
    fails_with_usage(
        &["run", p.to_str().unwrap(), "--dry-run"],
        "--log goes with --workload replay",
    );
    fails_with_usage(
        &["run", "/nonexistent/exp.toml"],
        "cannot read experiment file",
    );
}

#[test]
fn features_offline_lists_the_catalog() {
    dbtax()
        .args(["features", "--offline"])
        .assert()
        .success()
        .stdout(predicate::str::contains("general-log"))
        .stdout(predicate::str::contains("slow-log"))
        .stdout(predicate::str::contains("audit"))
        .stdout(predicate::str::contains("binlog-sync"));
}

#[test]
fn restore_refuses_managed_targets() {
    fails_with_usage(&["restore"], "nothing to restore");
}

#[test]
fn presets_are_listed_and_unknown_presets_are_usage_errors() {
    dbtax()
        .arg("presets")
        .assert()
        .success()
        .stdout(predicate::str::contains("seed-slow-log"))
        .stdout(predicate::str::contains("seed-general-log"))
        .stdout(predicate::str::contains("seed-audit"))
        .stdout(predicate::str::contains("seed-binlog"));
    fails_with_usage(
        &["run", "--preset", "seed-nothing"],
        "unknown preset 'seed-nothing'",
    );
}

#[test]
fn fsync_probe_reports_every_method_with_the_preallocated_case() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fsync");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dbtax()
        .args([
            "fsync",
            "--duration",
            "0.2s",
            "--threads",
            "1,2",
            "--json",
            "--dir",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let probes = v["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 8, "4 methods × 2 thread counts");
    for m in ["append", "prealloc", "dsync", "group"] {
        assert!(
            probes
                .iter()
                .any(|p| p["method"] == m && p["commits_per_s"].as_f64().unwrap() > 0.0),
            "{m}"
        );
    }
    assert!(
        v["summary"][0]
            .as_str()
            .unwrap()
            .contains("preallocated log gives"),
        "{v}"
    );
    fails_with_usage(&["fsync", "--dir", "/nonexistent-dir"], "not a directory");
}

#[test]
fn bad_rates_are_usage_errors_before_any_server() {
    // A target that does not exist: these must fail on the input, before connecting.
    let t = "mysql://root@localhost/?socket=/nonexistent/dbtax.sock";
    let run = |extra: &[&str], needle: &str| {
        let mut args = vec!["run", "-t", t, "-f", "slow-log"];
        args.extend_from_slice(extra);
        fails_with_usage(&args, needle);
    };
    run(&["--rate", "0%"], "bad rate '0%'");
    let log = write(
        "pg.log",
        "2026-12-01 10:00:00 UTC 7 LOG:  statement: SELECT 1\n",
    );
    let log = log.to_str().unwrap();
    run(
        &["--log", log, "--log-line-prefix", "%t %z "],
        "%z is not one of PostgreSQL's escapes",
    );
    run(
        &["--log", log, "--log-line-prefix", "%t [%l] "],
        "has neither %c nor %p",
    );
    run(
        &[
            "--log",
            log,
            "--log-line-prefix",
            "%t %p ",
            "--log-format",
            "slow",
        ],
        "not --log-format slow's",
    );
    run(&["--log-line-prefix", "%t %p "], "go with a replay");
    run(&["--rate", "fast"], "bad rate 'fast'");
    run(&["--arrival", "uniform"], "go with --rate");
    run(
        &["--rate", "50%", "--arrival", "bursty"],
        "unknown arrival process 'bursty'",
    );
    run(
        &["--rate", "50%", "--precision", "3"],
        "give --repeats N with --rate",
    );
    fails_with_usage(
        &["bench", "-t", t, "--rate", "10%,20%"],
        "bench runs one rate",
    );
    let f = write(
        "rate.toml",
        "threads = [2]\nrate = [\"25%\", 2000]\narrival = \"uniform\"\nskip_late = \"50ms\"\n\
         [[variant]]\nname = \"off\"\n[[variant]]\nname = \"slow-log\"\nfeature = \"slow-log\"\n",
    );
    // The file parses (the error is the missing server, not the file).
    let out = dbtax()
        .args(["run", f.to_str().unwrap(), "-t", t])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("rate"), "{stderr}");
    let bad = write("badrate.toml", "rate = \"lots\"\n");
    fails_with_usage(&["run", bad.to_str().unwrap(), "-t", t], "bad rate 'lots'");
}

#[test]
fn bounds_that_make_no_sense_are_usage_errors() {
    let t = "mysql://root@localhost/?socket=/nonexistent/dbtax.sock";
    let run = |extra: &[&str], needle: &str| {
        let mut args = vec!["run", "-t", t, "-f", "slow-log"];
        args.extend_from_slice(extra);
        fails_with_usage(&args, needle);
    };
    run(&["--repeats", "4294967295"], "at most 1000");
    run(&["--precision", "3", "--budget", "0s"], "--budget must be");
    run(&["--precision", "0"], "--precision must be");
    run(
        &["--max-log-bytes", "0"],
        "--max-log-bytes must be more than 0",
    );
    run(&["--trial", "2h"], "at most 3600 s");
    run(
        &["--probe-silence", "0s"],
        "--probe-silence must be at least 1s",
    );
    // clap's tip about `-- -1` is not what a user needs to read.
    let out = dbtax().args(["run", "--threads", "-1"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("whole number"), "{stderr}");
    assert!(!stderr.contains("-- -1"), "{stderr}");
}

#[test]
fn many_features_get_a_name_that_fits_and_name_sets_one() {
    // Six features made a name over 64 characters ("bad experiment name"); the run must get
    // as far as the (absent) server.
    let t = "mysql://root@localhost/?socket=/nonexistent/dbtax.sock";
    let mut args = vec!["run", "-t", t];
    for f in [
        "general-log",
        "slow-log",
        "audit",
        "audit-idle",
        "binlog-sync",
        "redo-flush",
    ] {
        args.extend(["--feature", f]);
    }
    let out = dbtax().args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("bad experiment name"), "{stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
    args.extend(["--name", "my study"]);
    fails_with_usage(&args, "bad experiment name 'my study'");
}

#[test]
fn no_error_shows_a_password() {
    let secret = "hunter2";
    for args in [
        vec!["bench", "--target", "mysql://u:hunter2@h:notaport/"],
        vec!["bench", "--target", "ftp://u:hunter2@h/"],
        vec![
            "bench",
            "--target",
            "postgres://u@h/db?password=hunter2&bogus=1",
        ],
        vec!["bench", "--target", "mysql://u@h/db?password=hunter2"],
        vec![
            "bench",
            "--target",
            "postgres://u@/db?host=/nonexistent&password=hunter2",
        ],
        vec!["bench", "--target", "postgres://u:hunter2@127.0.0.1:1/db"],
        vec!["bench", "--target", "mysql://u:hunter2@127.0.0.1:1/"],
        vec!["restore", "--target", "mysql://u:hunter2@127.0.0.1:1/"],
        vec![
            "features",
            "--target",
            "postgres://u:hunter2@127.0.0.1:1/db",
        ],
        vec![
            "run",
            "-f",
            "slow-log",
            "--agent-target",
            "mysql://u:hunter2@h/",
        ],
        vec![
            "run",
            "-f",
            "slow-log",
            "--compare-target",
            "mysql://u:hunter2@h:x/",
            "-t",
            "mysql://v:hunter2@127.0.0.1:1/",
        ],
        vec![
            "bench",
            "--target",
            "postgres://u:hunter2@h/db?sslmode=require",
        ],
    ] {
        let out = dbtax().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(
            !stderr.contains(secret),
            "{args:?} printed the password: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

// What every message of dbtax reads like: a sentence is never broken by a run of spaces (a
// string continued on the next line without its backslash). A scan of the sources.

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

/// Every source file of src/ but the modules of tests alone (`#[path = "…_tests.rs"]`).
fn sources() -> Vec<std::path::PathBuf> {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs")
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
    all
}

#[test]
fn no_message_has_runs_of_spaces_inside_a_sentence() {
    let all = sources();
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

/// Issue 35's measure of one way in: a setting of `dbtax run` is declared once (the list in
/// experiment/spec.rs that makes both the `Experiment`'s field and the `Layer`'s) besides its
/// clap flag. A field or a merge of it anywhere else (a file struct's `warmup_round:
/// Option<bool>`, a preset's literal, a flag merge `exp.warmup_round = false`) is a second
/// way in. (On the code before the layer, warmup_round was in five places.)
#[test]
fn each_setting_is_declared_once_besides_its_flag() {
    let settings = ["warmup_round", "max_disturbance", "probe_silence"];
    for key in settings {
        assert!(
            dbtax::experiment::spec::Layer::KEYS.contains(&key),
            "{key} is a setting of the layer"
        );
        let mut places = vec![];
        for f in sources() {
            let name = f.to_string_lossy().into_owned();
            if name.ends_with("src/cli.rs") {
                continue;
            }
            let src = std::fs::read_to_string(&f).unwrap();
            for (i, line) in src.lines().enumerate() {
                let t = line.trim_start();
                let t = t.strip_prefix("pub ").unwrap_or(t);
                // A declaration (`name: Type`), a struct literal's or a layer's field
                // (`name: value,`), or an assignment (`x.name = …`): every way a setting
                // is spelled or set, but reading it.
                let declared = t.starts_with(&format!("{key}:"));
                let assigned =
                    t.contains(&format!(".{key} = ")) || t.contains(&format!(".{key} |= "));
                // The flag itself, given to the flags' layer (`key: args.…`), is its flag.
                let the_flag =
                    name.ends_with("src/config/run.rs") && t.starts_with(&format!("{key}: args."));
                // The experiment handed to the statistics crate as its design
                // (`Experiment::design`: `key: self.key,`) reads the setting; it sets nothing.
                let the_design = name.ends_with("src/experiment/spec.rs")
                    && t.starts_with(&format!("{key}: self.{key},"));
                if (declared || assigned) && !the_flag && !the_design {
                    places.push(format!("{name}:{}: {}", i + 1, line.trim()));
                }
            }
        }
        assert_eq!(places.len(), 1, "{key} is declared or set in {places:#?}");
        assert!(places[0].contains("experiment/spec.rs"), "{places:?}");
    }
}

#[test]
fn help_is_grouped_and_completions_and_man_pages_come_from_the_same_definitions() {
    let help = dbtax().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let headings: Vec<&str> = help
        .lines()
        .filter(|l| l.ends_with(':') && !l.starts_with(' '))
        .collect();
    assert_eq!(
        headings,
        [
            "Options:",
            "Target:",
            "Workload:",
            "Replay:",
            "Experiment:",
            "Statistics:",
            "Safety:",
            "Load:",
            "Output:",
            "Examples:"
        ],
        "{help}"
    );
    let bash = dbtax().args(["completions", "bash"]).output().unwrap();
    assert!(bash.status.success());
    let script = write("dbtax.bash", &String::from_utf8_lossy(&bash.stdout));
    let checked = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(checked.success(), "bash -n accepts the completion script");
    assert!(String::from_utf8_lossy(&bash.stdout).contains("--log-line-prefix"));
    let pages = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("man");
    let made = dbtax()
        .args(["man", "--dir", pages.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let run = std::fs::read_to_string(pages.join("dbtax-run.1")).unwrap();
    assert!(run.contains(".TH dbtax-run 1"), "{run}");
    assert!(
        run.contains("log\\-line\\-prefix"),
        "every flag is on the page"
    );
    assert!(pages.join("dbtax.1").exists());
    fails_with_usage(&["man", "nope"], "no subcommand 'nope'");
}

#[test]
fn capture_refuses_what_it_cannot_do_before_any_change() {
    fails_with_usage(
        &["capture", "--for", "10s", "-t", "managed:mariadb"],
        "capture records the traffic of a server you run",
    );
    fails_with_usage(
        &[
            "capture",
            "--for",
            "0s",
            "-t",
            "mysql://root@localhost/?socket=/x.sock",
        ],
        "--for must be longer than 0 s",
    );
    fails_with_usage(
        &[
            "capture",
            "--for",
            "10s",
            "-t",
            "mysql://root@localhost/?socket=/nonexistent/x.sock",
        ],
        "/nonexistent/x.sock",
    );
}

/// Issue 50: bounds and combinations that were accepted and then misbehaved (a first trial
/// that never ends, an objective no trial measures, a flag silently ignored, built-ins let
/// through a flag meant for stored functions) are bad input, before any server.
#[test]
fn flags_that_would_be_ignored_or_never_end_are_usage_errors() {
    let t = "mysql://root@localhost/?socket=/nonexistent/dbtax.sock";
    let run = |extra: &[&str], needle: &str| {
        let mut args = vec!["run", "-t", t, "-f", "slow-log"];
        args.extend_from_slice(extra);
        fails_with_usage(&args, needle);
    };
    run(
        &["--queries-per-trial", "18446744073709551615"],
        "at most 1000000000 statements a trial",
    );
    run(&["--slo", "p99=1e305s"], "past a minute");
    run(
        &["--slo", "p99=5ms", "--precision", "3"],
        "give --repeats with --slo",
    );
    run(&["--agent-bin", "/usr/bin/dbtax"], "--agent-bin names");
    fails_with_usage(
        &["bench", "-t", t, "--agent-bin", "copy"],
        "--agent-bin names",
    );
    fails_with_usage(
        &["capture", "--for", "5s", "-t", t, "--agent-bin", "copy"],
        "it goes with --server-host",
    );
    let log = write("functions.log", "SELECT 1;\n");
    for f in ["sleep", "get_lock", "app.pg_advisory_lock"] {
        fails_with_usage(
            &[
                "run",
                "-t",
                t,
                "-f",
                "general-log",
                "--log",
                log.to_str().unwrap(),
                "--log-format",
                "general",
                "--replay-functions",
                f,
            ],
            "never lets it through",
        );
    }
}
