//! What every test binary shares: the dbtax binary, the committed fixtures, validation
//! against the committed results.json schema, and the arguments of a short `dbtax run`.
//! Each binary uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The dbtax binary under test, with its own state directory and no DBTAX_TARGET.
pub fn dbtax(state_dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dbtax"));
    c.env("DBTAX_STATE_DIR", state_dir)
        .env_remove("DBTAX_TARGET");
    c
}

/// A committed results.json fixture (real runs).
pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fixture, loaded as `dbtax report` loads it.
pub fn fixture(name: &str) -> dbtax::results::Results {
    dbtax::report::load(&fixture_path(name)).unwrap()
}

/// Where `v` breaks the committed schema (empty: it matches).
pub fn schema_errors(v: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schema/results.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

/// Read a results.json and assert it matches the schema.
pub fn validate_results(path: &Path) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let errors = schema_errors(&v);
    assert!(
        errors.is_empty(),
        "{} does not match the schema: {errors:?}",
        path.display()
    );
    v
}

/// Short trials on small tables: the suite's runs take seconds.
pub const SHORT_TRIALS: [&str; 6] = [
    "--trial",
    "0.6s",
    "--warmup",
    "0.2s",
    "--table-size",
    "2000",
];

/// `dbtax run` on `target`: `features` against off, short trials, no warm-up round, results
/// in `out`.
pub fn run_args(
    target: &str,
    features: &[&str],
    threads: &str,
    repeats: &str,
    out: &Path,
) -> Vec<String> {
    let mut a = vec!["run".to_string(), "--target".into(), target.to_string()];
    for f in features {
        a.extend(["--feature".to_string(), f.to_string()]);
    }
    a.extend(["--threads", threads, "--repeats", repeats, "--out"].map(String::from));
    a.push(out.display().to_string());
    a.extend(SHORT_TRIALS.map(String::from));
    // The warm-up round (a whole block, not counted) guards the first block's figures;
    // the suite's runs assert what dbtax promises, not those figures, and skip it (a test
    // of the round itself removes this).
    a.push(NO_WARMUP_ROUND.into());
    a
}

/// The flag `run_args` adds.
pub const NO_WARMUP_ROUND: &str = "--no-warmup-round";

/// A named scenario of a custom-harness test binary (one real server for all of them).
pub type Scenario<C> = (&'static str, fn(&C));

/// `path, ...` → (name, function) pairs: the name is the function's path as written.
#[macro_export]
macro_rules! scenarios {
    ($ctx:ty; $($f:path),* $(,)?) => {
        &[$((stringify!($f), $f as fn(&$ctx))),*]
    };
}

/// The harness of a test binary whose scenarios share one server: apply `cargo test`'s
/// filters first (a filter that matches none starts no server), make the context, run each
/// scenario catching its panic, print libtest's summary line, exit 101 on a failure.
pub fn harness<C>(scenarios: &[Scenario<C>], make_ctx: impl FnOnce() -> C) {
    if std::env::args().any(|a| a == "--list") {
        for (name, _) in scenarios {
            println!("{name}: test");
        }
        return;
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected: Vec<&Scenario<C>> = scenarios
        .iter()
        .filter(|(n, _)| filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str())))
        .collect();
    let started = std::time::Instant::now();
    let mut failed = vec![];
    if !selected.is_empty() {
        let ctx = make_ctx();
        println!("\nrunning {} tests", selected.len());
        for (name, f) in &selected {
            let t = std::time::Instant::now();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&ctx)));
            let verdict = if result.is_ok() { "ok" } else { "FAILED" };
            println!(
                "test {name} ... {verdict} ({:.1}s)",
                t.elapsed().as_secs_f64()
            );
            if result.is_err() {
                failed.push(*name);
            }
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        selected.len() - failed.len(),
        failed.len(),
        scenarios.len() - selected.len(),
        started.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        eprintln!("failures: {failed:?}");
        std::process::exit(101);
    }
}

/// A free TCP port on 127.0.0.1 for a test server.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A root connection to a test server over its unix socket.
pub fn root(socket: &Path) -> mysql::Conn {
    let opts = mysql::OptsBuilder::new()
        .user(Some("root"))
        .socket(Some(socket.to_string_lossy().into_owned()));
    mysql::Conn::new(opts).expect("root connection to the test server")
}

/// `SELECT @@GLOBAL.name` on a test server, as text.
pub fn global_var(socket: &Path, name: &str) -> String {
    use mysql::prelude::Queryable;
    let v: Option<String> = root(socket)
        .query_first(format!("SELECT @@GLOBAL.{name}"))
        .unwrap();
    v.unwrap_or_default()
}

/// The JSON a command printed, after checking it exited 0.
pub fn json_of(o: &std::process::Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)))
}

/// The lean clients' tests run each client model: `--client-threads` 0 (one thread per
/// connection), then the event loop on two threads.
pub const CLIENT_MODELS: [&str; 2] = ["0", "2"];

/// `dbtax bench` arguments: `query` against `url` for `secs`, 3 clients run as `model` says
/// (`--client-threads`), one JSON object out.
pub fn bench_query_args(url: &str, query: &str, secs: &str, model: &str) -> Vec<String> {
    [
        "bench",
        "--target",
        url,
        "--query",
        query,
        "--threads",
        "3",
        "--duration",
        secs,
        "--warmup",
        "0s",
        "--client-threads",
        model,
        "--json",
    ]
    .map(String::from)
    .to_vec()
}

/// A finished command's exit code, stdout and stderr, for assertion messages.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The hostname of the "database host" the suite makes with `unshare --uts`.
pub const ELSEWHERE: &str = "dbtax-remote-db";

/// Whether this machine lets the suite make a UTS namespace (root).
pub fn can_unshare_uts() -> bool {
    let can = Command::new("unshare").args(["--uts", "true"]).status();
    can.is_ok_and(|s| s.success())
}

/// The words that run `cmd args…` under another hostname (`ELSEWHERE`), in a UTS namespace
/// of its own: for a server, or an sshd, that must look like another host's.
pub fn elsewhere_wrap() -> Vec<String> {
    vec![
        "unshare".into(),
        "--uts".into(),
        "sh".into(),
        "-c".into(),
        format!("hostname {ELSEWHERE} && exec \"$@\""),
        "sh".into(),
    ]
}

/// A server binary (for `ManagedConfig::server_bin`) that starts mariadbd under another
/// hostname, written into `dir`.
pub fn mariadbd_elsewhere(dir: &Path) -> PathBuf {
    let real = dbtax::server::mysql::managed::find_server_bin(None).unwrap();
    let path = dir.join("mariadbd-elsewhere");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nexec unshare --uts sh -c 'hostname {ELSEWHERE} && exec {} \"$@\"' \
             mariadbd \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    path
}

/// A replay at a recorded pace `speed`: every trial asked `speed` × the slice's recorded rate,
/// ran without errors, and ran about what its schedule held for its window (the same
/// schedule every trial, from the slice's start).
pub fn assert_recorded_pace(v: &serde_json::Value, speed: f64) {
    let rate = v["workload"]["replay"]["read"]["recorded_rate"]
        .as_f64()
        .unwrap();
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            let asked = t["rate"]["asked"].as_f64().unwrap();
            assert!((asked - speed * rate).abs() < 1e-6 * asked, "{t}");
            assert_eq!(t["errors"], 0, "{t}");
            let q = t["queries"].as_f64().unwrap();
            let expect = asked * t["duration_s"].as_f64().unwrap();
            assert!((q - expect).abs() < 0.25 * expect, "{t}");
        }
    }
}

/// The replay's locks tests: a reading login made on `server` as a run makes its temporary
/// one (its account as the server names it, and the login to dial with).
pub fn test_reader(server: &dbtax::server::Server) -> (String, dbtax::server::Login) {
    let mut admin = server.admin().unwrap();
    let user = "dbtax_replay_locks";
    let spec = admin.reader_spec(user).unwrap();
    admin.create_reader(&spec, "pw-of-the-test").unwrap();
    let login = dbtax::server::Login {
        user: user.into(),
        password: "pw-of-the-test".into(),
    };
    (spec, login)
}

/// How many statements a replay's classifier skipped (results.json's counts by reason).
pub fn skipped_by_classifier(v: &serde_json::Value) -> u64 {
    v["workload"]["replay"]["read"]["skipped"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(|n| n.as_u64()).sum())
}

/// How many blocks a run with `repeats` blocks per load point ran, read back from its words:
/// each point runs rounds until `repeats` of them are kept, and a disturbed block is run
/// again for at most as many more rounds as were planned (`2 × repeats` in all). The count a
/// busy machine cannot make lie: it follows whatever the neighbour did to this run.
pub fn block_runs_from_words(stderr: &str, threads: &[u32], repeats: u32) -> usize {
    threads
        .iter()
        .map(|t| {
            let marker = format!(" at {t} threads set aside: ");
            let set_aside: Vec<u32> = stderr
                .lines()
                .filter(|l| l.contains(&marker))
                .filter_map(|l| l.strip_prefix("block ")?.split(' ').next()?.parse().ok())
                .collect();
            let mut kept = 0;
            let mut ran = 0;
            while kept < repeats && ran < 2 * repeats {
                ran += 1;
                if !set_aside.contains(&ran) {
                    kept += 1;
                }
            }
            ran as usize
        })
        .sum()
}

/// An RFC 3339 UTC time as dbtax writes it ("2026-12-02T12:52:29.802Z"), in ms since the
/// Unix epoch.
pub fn epoch_ms(t: &str) -> i64 {
    let n = |a: usize, b: usize| -> i64 { t[a..b].parse().unwrap_or_else(|_| panic!("{t}")) };
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    // Days from the civil date (H. Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ms = if t.len() > 20 { n(20, 23) } else { 0 };
    ((days * 24 + n(11, 13)) * 60 + n(14, 16)) * 60_000 + n(17, 19) * 1000 + ms
}

/// A `dbtax capture` under way: started by `Capture::start`, ended by `finish`.
pub struct Capture {
    pub child: std::process::Child,
    /// Its words so far.
    pub said: String,
    /// The rest of its stderr.
    pub err: std::io::BufReader<std::process::ChildStderr>,
}

impl Capture {
    /// `dbtax capture --for SECS --target TARGET --out OUT` started with `dbtax` (the binary's
    /// command), once it says the log is on.
    pub fn start(dbtax: Command, secs: &str, target: &str, out: &Path) -> Capture {
        Capture::start_with(dbtax, secs, target, out, &[])
    }

    /// `start` with more arguments after the others (`--server-host …`).
    pub fn start_with(
        mut dbtax: Command,
        secs: &str,
        target: &str,
        out: &Path,
        more: &[&std::ffi::OsStr],
    ) -> Capture {
        use std::process::Stdio;
        let mut child = dbtax
            .args(["capture", "--for", secs, "--target", target])
            .arg("--out")
            .arg(out)
            .args(more)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        while !said.contains("capturing every statement") {
            let mut line = String::new();
            let n = std::io::BufRead::read_line(&mut err, &mut line).unwrap();
            assert!(n > 0, "capture ended before it began: {said}");
            said += &line;
        }
        Capture { child, said, err }
    }

    /// Let it end by itself (checked to be still running: what the test did fell within its
    /// time); its exit code and every word it said.
    pub fn finish(mut self) -> (Option<i32>, String) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "the capture ended before the sessions did: {}",
            self.said
        );
        std::io::Read::read_to_string(&mut self.err, &mut self.said).unwrap();
        let o = self.child.wait_with_output().unwrap();
        self.said += &String::from_utf8_lossy(&o.stdout);
        (o.status.code(), self.said)
    }
}

/// `dbtax run` with `--slo p99=10ms` on `target`: the general log against off, `query` (a
/// statement of about a millisecond of the server's CPU: the rates stay in the hundreds,
/// which dbtax's own clients hold easily beside a busy neighbour), 4 threads, 3 measured
/// blocks of short trials, results in `out`.
#[allow(dead_code)]
pub fn slo_args(target: &str, query: &str, out: &Path) -> Vec<String> {
    let mut a: Vec<String> = [
        "run",
        "--target",
        target,
        "--feature",
        "general-log",
        "--slo",
        "p99=10ms",
        "--threads",
        "4",
        "--repeats",
        "3",
        "--trial",
        "0.4s",
        "--warmup",
        "0.1s",
        "--query",
        query,
        "--out",
    ]
    .map(String::from)
    .to_vec();
    a.push(out.display().to_string());
    a
}

/// What a `--slo` run promises, whatever the machine: two capacities at the objective, each
/// a rate within its interval, or the words why there is no rate or no interval; every
/// trial's latency measured. Returns them.
#[allow(dead_code)]
pub fn capacities_as_promised(v: &serde_json::Value) -> Vec<serde_json::Value> {
    let caps = v["capacity"].as_array().unwrap().clone();
    assert_eq!(caps.len(), 2, "{v}");
    for c in &caps {
        assert_eq!(c["slo"], "p99 ≤ 10 ms", "{c}");
        assert!(c["closed_loop"].as_f64().unwrap() > 0.0, "{c}");
        let steps = c["steps"].as_array().unwrap();
        assert!(steps.iter().any(|s| s["phase"] == "search"), "{c}");
        for s in steps.iter().filter(|s| s["phase"] != "calibration") {
            assert!(s["rate"].as_f64().unwrap() > 0.0, "{s}");
            assert!(s["latency_ms"]["p99"].as_f64().unwrap() > 0.0, "{s}");
        }
        match c["rate"].as_f64() {
            Some(rate) => {
                let measured = steps.iter().filter(|s| s["phase"] == "measured").count();
                assert_eq!(measured, 3 * c["blocks"].as_u64().unwrap() as usize, "{c}");
                match c["ci95"].as_array() {
                    Some(ci) => {
                        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
                        assert!(lo <= rate && rate <= hi, "{c}");
                    }
                    None => assert!(c["note"].is_string(), "no interval and no words: {c}"),
                }
            }
            None => assert!(c["note"].is_string(), "no capacity and no words: {c}"),
        }
    }
    caps
}
