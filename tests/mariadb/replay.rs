//! A captured log replayed as the workload (`--workload replay`): this server's slow log,
//! captured by `dbtax capture` (long_query_time = 0, put back after) while three sessions ran
//! a known mix (point selects, a range count, an update, and the root session's SET
//! GLOBALs), then replayed against the general
//! log at `--pace asap` (a fixed count of statements: every trial the same ones) and at a
//! recorded pace (rate mode at the log's own rate), with the cost per fingerprint.

use super::*;

/// The shop's table (2,000 items), made once for the scenarios that log sessions using it.
fn shop_items(ctx: &Ctx) {
    let mut root = ctx.root();
    root.query_drop(
        "CREATE DATABASE IF NOT EXISTS t_shop; \
         CREATE TABLE IF NOT EXISTS t_shop.items (id INT PRIMARY KEY, name VARCHAR(40), \
         price INT, KEY (price)); \
         INSERT IGNORE INTO t_shop.items \
         SELECT seq, concat('item ', seq), seq % 97 FROM seq_1_to_2000",
    )
    .unwrap();
}

/// A root session in the shop's database.
fn shop_session(ctx: &Ctx) -> mysql::Conn {
    let opts = mysql::OptsBuilder::new()
        .socket(Some(ctx.socket.display().to_string()))
        .user(Some("root"))
        .db_name(Some("t_shop"));
    mysql::Conn::new(opts).unwrap()
}

/// Three sessions' mix, captured by `dbtax capture` into `path` (the server's slow log at
/// long_query_time=0 while they run, put back after); returns the updates run.
fn capture_slow_log(ctx: &Ctx, path: &Path) -> u64 {
    shop_items(ctx);
    let found = [
        "slow_query_log",
        "long_query_time",
        "slow_query_log_file",
        "log_output",
    ]
    .map(|v| ctx.var(v));
    // Long enough for the sessions on a busy machine; they are checked to end within it.
    // The slow log (`--source slow-log`): its Rows_sent are what the replay's rows are
    // checked against; the sessions connect after it is on.
    let capture = common::Capture::start_with(
        ctx.dbtax(),
        "8s",
        &ctx.url(""),
        path,
        &["--source".as_ref(), "slow-log".as_ref()],
    );
    let updates = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for session in 0..3u64 {
            let updates = &updates;
            s.spawn(move || {
                let mut c = shop_session(ctx);
                if session == 0 {
                    // Changes the server (to what it was): logged, never replayed.
                    c.query_drop("SET GLOBAL slow_launch_time = @@slow_launch_time")
                        .unwrap();
                }
                for i in 0..150u64 {
                    let id = 1 + (i * 37 + session * 11) % 2000;
                    c.query_drop(format!("SELECT name FROM items WHERE id = {id}"))
                        .unwrap();
                    if i % 5 == 0 {
                        c.query_drop(format!(
                            "SELECT COUNT(*) FROM items WHERE price BETWEEN {} AND {}",
                            i % 50,
                            i % 50 + 20
                        ))
                        .unwrap();
                    }
                    if i % 30 == 0 {
                        c.query_drop(format!("UPDATE items SET price = price WHERE id = {id}"))
                            .unwrap();
                        updates.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(4));
                }
            });
        }
    });
    let (code, said) = capture.finish();
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("statements in 3 sessions"), "{said}");
    assert!(said.contains("--log "), "{said}");
    // Put back exactly as found.
    let now = [
        "slow_query_log",
        "long_query_time",
        "slow_query_log_file",
        "log_output",
    ]
    .map(|v| ctx.var(v));
    assert_eq!(now, found, "{said}");
    assert_eq!(ctx.journals(), 0);
    updates.into_inner()
}

/// A slow log's text with `Rows_sent: N` made `rows` in the entries whose statement holds
/// `needle` (the `# Query_time:` line comes before the statement it times, MariaDB's
/// `# Rows_affected:` line between them).
fn with_rows_sent(log: &str, needle: &str, rows: u64) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let statement = lines[i + 1..]
            .iter()
            .take_while(|l| !l.starts_with("# User@Host") && !l.starts_with("# Time"))
            .any(|l| l.contains(needle));
        match line.split_once("Rows_sent: ") {
            Some((head, tail)) if line.starts_with("# Query_time:") && statement => {
                let rest = tail.split_once(' ').map_or("", |(_, r)| r);
                out += &format!("{head}Rows_sent: {rows} {rest}\n");
            }
            _ => out += &format!("{line}\n"),
        }
    }
    out
}

fn replay_args(ctx: &Ctx, log: &Path, out: &str, extra: &[&str]) -> Vec<String> {
    let mut a = common::run_args(
        &ctx.url("t_replay"),
        &["general-log"],
        "3",
        "3",
        &ctx.work.join(out),
    );
    a.extend(["--log".into(), log.display().to_string()]);
    // The suite's server is not dbtax's own: the clients need a login that may only read.
    a.extend(["--replay-user".into(), "temporary".into()]);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// The trial's statements the server counted (Questions), less dbtax's status reads.
fn questions(t: &serde_json::Value) -> f64 {
    t["server_counters_per_query"]["Questions"]
        .as_f64()
        .unwrap()
        * t["queries"].as_f64().unwrap()
}

pub(crate) fn a_captured_slow_log_replays_with_its_cost_per_statement(ctx: &Ctx) {
    let log = ctx.work.join("shop-slow.log");
    let updates = capture_slow_log(ctx, &log);
    let before = ctx.var("general_log");

    // What would be replayed, said before anything changes.
    let o = ctx.run(&replay_args(ctx, &log, "replay-dry", &["--dry-run"]));
    ok(&o);
    let said = text(&o);
    assert!(
        said.contains("statements of 3 sessions (slow log"),
        "{said}"
    );
    assert!(
        said.contains(&format!("left out   {updates} statements that change data")),
        "{said}"
    );
    assert!(
        said.contains("× select name from items where id = ?"),
        "{said}"
    );

    // As fast as the sessions go, 1,200 statements per trial: every trial the same ones.
    let o = ctx.run(&replay_args(
        ctx,
        &log,
        "replay-asap",
        &["--queries-per-trial", "1200"],
    ));
    ok(&o);
    let v = validate_results(&ctx.work.join("replay-asap/results.json"));
    assert_eq!(ctx.var("general_log"), before);
    let w = &v["workload"];
    assert_eq!(w["kind"], "replay", "{w}");
    let read = &w["replay"]["read"];
    assert_eq!(read["format"], "slow", "{read}");
    assert_eq!(read["sessions"].as_u64().unwrap(), 3, "{read}");
    assert_eq!(read["skipped_writes"].as_u64().unwrap(), updates, "{read}");
    // Session 0's SET GLOBAL is logged, and never replayed.
    assert!(read["skipped_server"].as_u64().unwrap() >= 1, "{read}");
    assert_eq!(read["malformed_lines"], 0, "{read}");
    let fps = w["replay"]["fingerprints"].as_array().unwrap();
    let sample = |needle: &str| {
        fps.iter()
            .find(|f| f["fingerprint"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {fps:?}"))
    };
    assert_eq!(
        sample("select name from items where id = ?")["count"],
        450,
        "{fps:?}"
    );
    assert_eq!(sample("between ? and ?")["count"], 90, "{fps:?}");
    let mut seen = vec![];
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert_eq!(t["errors"], 0, "{t}");
            assert_eq!(t["queries"], 1200, "{t}");
            seen.push(questions(t));
            let tf = t["fingerprints"].as_array().unwrap();
            let count: u64 = tf.iter().map(|f| f["count"].as_u64().unwrap()).sum();
            // Every statement is a tagged fingerprint's (the USE before a session's first is
            // in its event).
            assert!(count > 1100 && count <= 1200, "{t}");
        }
    }
    // The server counted the same statements in every trial (its status reads aside).
    let (lo, hi) = (
        seen.iter().copied().fold(f64::MAX, f64::min),
        seen.iter().copied().fold(0.0, f64::max),
    );
    assert!(hi - lo <= 12.0, "Questions per trial: {seen:?}");
    let gl = cell(&v, "general-log", 3);
    let costs = gl["fingerprints"].as_array().unwrap();
    assert!(costs.len() >= 2, "{gl}");
    let shares: f64 = costs
        .iter()
        .filter_map(|f| f["added_share_pct"].as_f64())
        .sum();
    assert!(shares == 0.0 || (shares - 100.0).abs() < 0.01, "{costs:?}");
    for f in costs {
        assert!(f["sample"].as_str().unwrap().starts_with("SELECT"), "{f}");
        let d = &f["latency_delta_ms"]["p50"]["ci95"];
        assert!(d[0].as_f64().unwrap() <= d[1].as_f64().unwrap(), "{f}");
    }
    let words = text(&o);
    assert!(words.contains("statements that pay"), "{words}");
    assert!(words.contains("Replayed "), "{words}");
    // Replayed on the data it was captured from, every statement sent the rows its entry
    // recorded (`Rows_sent`): nothing diverged.
    for c in v["cells"].as_array().unwrap() {
        for f in c["fingerprints"].as_array().unwrap() {
            assert!(f["diverged"].is_null() && f["rows_off"].is_null(), "{f}");
        }
    }

    // The same log with the range counts' entries saying 7 rows where they sent 1: those
    // statements are marked as not replayed as recorded, the point selects are not (a thread
    // per connection this time: the run above had the event loop's clients, as has the
    // recorded pace's below, which reads this log too).
    let edited = ctx.work.join("shop-slow-rows.log");
    std::fs::write(
        &edited,
        with_rows_sent(&std::fs::read_to_string(&log).unwrap(), "COUNT(*)", 7),
    )
    .unwrap();
    let o = ctx.run(&replay_args(
        ctx,
        &edited,
        "replay-rows",
        &["--queries-per-trial", "600", "--client-threads", "0"],
    ));
    ok(&o);
    let v = validate_results(&ctx.work.join("replay-rows/results.json"));
    assert_eq!(ctx.var("general_log"), before);
    let words = text(&o);
    assert!(
        words.contains("sent other rows than the log recorded"),
        "{words}"
    );
    only_counts_diverged(&v);

    // At the recorded pace, four times as fast: rate mode at the log's own rate.
    let o = ctx.run(&replay_args(
        ctx,
        &edited,
        "replay-recorded",
        &["--pace", "4x"],
    ));
    ok(&o);
    let v = validate_results(&ctx.work.join("replay-recorded/results.json"));
    assert_eq!(ctx.var("general_log"), before);
    let gl = cell(&v, "general-log", 3);
    assert!(gl["latency_delta_ms"]["p50"]["ci95"].is_array(), "{gl}");
    assert!(!gl["fingerprints"].as_array().unwrap().is_empty(), "{gl}");
    common::assert_recorded_pace(&v, 4.0);
    only_counts_diverged(&v);
    assert_eq!(ctx.journals(), 0);
}

/// In a replay of the log whose range counts' `Rows_sent` were made 7, they and only they
/// are marked as not replayed as recorded.
fn only_counts_diverged(v: &serde_json::Value) {
    let mut counts = 0;
    for c in v["cells"].as_array().unwrap() {
        for f in c["fingerprints"].as_array().unwrap() {
            let sample = f["sample"].as_str().unwrap();
            if sample.contains("COUNT(*)") {
                counts += 1;
                assert!(f["rows_off"].as_u64().unwrap() > 0, "{f}");
                assert!(
                    f["diverged"].as_str().unwrap().contains("sent other rows"),
                    "{f}"
                );
            } else {
                assert!(f["diverged"].is_null(), "{f}");
            }
        }
    }
    assert!(counts >= 2, "the range counts in both cells: {v}");
}

pub(crate) fn a_log_that_cannot_be_replayed_here_is_bad_input(ctx: &Ctx) {
    let before = ctx.var("general_log");
    let pg = ctx.work.join("pg.log");
    std::fs::write(
        &pg,
        "2026-12-01 10:00:00.100 UTC [411] LOG:  statement: SELECT 1\n",
    )
    .unwrap();
    // Without a login that may only read, a user's server is not replayed on.
    let mut no_reader = replay_args(ctx, &ctx.work.join("shop-slow.log"), "bad6", &[]);
    let at = no_reader.iter().position(|a| a == "--replay-user").unwrap();
    no_reader.drain(at..at + 2);
    // root may do anything: not a login a replay's clients may use.
    let mut as_root = replay_args(ctx, &ctx.work.join("shop-slow.log"), "bad7", &[]);
    as_root[at + 1] = "root".into();
    let cases: [(Vec<String>, &str); 7] = [
        (no_reader, "--replay-user USER"),
        (as_root, "may do more than read"),
        (
            replay_args(ctx, &ctx.work.join("nope.log"), "bad1", &[]),
            "cannot read the log",
        ),
        (
            replay_args(ctx, &pg, "bad2", &[]),
            "replay a log on the kind of server that wrote it",
        ),
        (
            replay_args(ctx, &pg, "bad3", &["--pace", "fast"]),
            "bad pace",
        ),
        (
            replay_args(
                ctx,
                &ctx.work.join("shop-slow.log"),
                "bad4",
                &["--replay-writes"],
            ),
            "--i-understand-writes",
        ),
        (
            replay_args(
                ctx,
                &ctx.work.join("shop-slow.log"),
                "bad5",
                &["--to", "0s"],
            ),
            "no statement to replay",
        ),
    ];
    for (args, words) in cases {
        let o = ctx.run(&args);
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(words), "{words}: {said}");
        assert!(!said.contains("panicked"), "{said}");
    }
    assert_eq!(ctx.var("general_log"), before);
    assert_eq!(ctx.journals(), 0);
}

/// A 2 GB general log (about 4,500 s of 50 sessions' point selects; lines that are no log
/// lines at the top, bytes that are not UTF-8 in the middle, a cut last line) read by
/// its end for a slice of its last 10 s, which is replayed against the general log: peak
/// memory stays bounded (printed).
pub(crate) fn a_2_gb_log_replays_in_bounded_memory(ctx: &Ctx) {
    use std::io::Write;
    let path = ctx.work.join("big-general.log");
    let mut block = String::new();
    for i in 0..10_000u64 {
        let session = 1 + i % 50;
        block += &format!(
            "\t\t{session:>6} Query\tSELECT c FROM sbtest1 WHERE id = {}\n",
            (i * 7919) % 100_000
        );
    }
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).unwrap());
    // Lines that belong to nothing (before any entry): counted, with their numbers.
    f.write_all(b"this line is no log line\n\xff\xfe binary \x00 bytes\n")
        .unwrap();
    let mut written = 0u64;
    let mut second = 0u64;
    while written < 2 << 30 {
        let (h, m, s) = (second / 3600, second / 60 % 60, second % 60);
        let head = format!("261201 {h:>2}:{m:02}:{s:02}\t     1 Query\tSELECT 1\n");
        f.write_all(head.as_bytes()).unwrap();
        f.write_all(block.as_bytes()).unwrap();
        if second == 1000 {
            f.write_all(b"\t\t     3 Query\tSELECT '\xff\xfe'\n")
                .unwrap();
        }
        written += (head.len() + block.len()) as u64;
        second += 1;
    }
    f.write_all(b"\t\t     7 Query\tSELECT c FROM sbtest1 WHERE id = ")
        .unwrap();
    f.flush().unwrap();
    drop(f);
    let last = second - 1;
    let from = format!("{}s", last - 9);
    // The statements' table, in dbtax's schema (the log names no database).
    ctx.root()
        .query_drop(
            "CREATE TABLE IF NOT EXISTS t_replay.sbtest1 (id INT PRIMARY KEY, c CHAR(120)); \
             INSERT IGNORE INTO t_replay.sbtest1 SELECT seq, repeat('x', 120) \
             FROM seq_1_to_100000",
        )
        .unwrap();
    let args = replay_args(
        ctx,
        &path,
        "big",
        &["--from", &from, "--queries-per-trial", "3000"],
    );
    let out = std::fs::File::create(ctx.work.join("big-run.txt")).unwrap();
    let mut child = ctx
        .dbtax()
        .args(&args)
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    // Its own peak (VmHWM), read while it runs: most of the run is the reading.
    let status = format!("/proc/{}/status", child.id());
    let started = Instant::now();
    let mut peak_kb = 0u64;
    let exit = loop {
        if let Ok(s) = std::fs::read_to_string(&status)
            && let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let said = std::fs::read_to_string(ctx.work.join("big-run.txt")).unwrap();
    assert!(exit.success(), "{said}");
    let peak_mb = peak_kb as f64 / 1024.0;
    eprintln!(
        "a {:.2} GB general log read to its end and replayed in {:.1} s, peak RSS {peak_mb:.0} MB",
        written as f64 / (1u64 << 30) as f64,
        started.elapsed().as_secs_f64()
    );
    let v = validate_results(&ctx.work.join("big/results.json"));
    let read = &v["workload"]["replay"]["read"];
    // The slice: 10 s of 10,001 statements each (the cut last line is one more).
    assert_eq!(read["statements"], 100_011, "{read}");
    assert_eq!(read["sessions"], 50, "{read}");
    assert_eq!(read["ended_by"], "end of log", "{read}");
    assert_eq!(read["malformed_lines"], 2, "{read}");
    assert_eq!(read["malformed"][0][0], 1, "{read}");
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            // The cut last statement (`id = ` and nothing) is not in the first 3,000.
            assert_eq!(t["errors"], 0, "{t}");
        }
    }
    assert!(
        said.contains("Replayed 100011 statements of 50 sessions"),
        "{said}"
    );
    assert!(peak_mb < 256.0, "peak RSS {peak_mb:.0} MB: {said}");
    std::fs::remove_file(&path).unwrap();
}

/// The server's count of prepared statements executed (every client's).
fn stmt_executes(ctx: &Ctx) -> u64 {
    let row: Option<(String, u64)> = ctx
        .root()
        .query_first("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'")
        .unwrap();
    row.unwrap().1
}

/// A general log of two sessions that prepare two statements each and execute them over the
/// binary protocol (the log writes `Prepare` with the `?`s, `Execute` with the values in
/// place) is replayed prepared: the dry run says so, and the server counts the replay's
/// statements as prepared executions (its own count, `Com_stmt_execute`).
pub(crate) fn a_general_logs_prepared_statements_replay_prepared(ctx: &Ctx) {
    shop_items(ctx);
    let mut root = ctx.root();
    let vars = ["general_log", "general_log_file", "log_output"];
    let found = vars.map(|v| ctx.var(v));
    let datadir: String = root.query_first("SELECT @@datadir").unwrap().unwrap();
    let log = Path::new(&datadir).join("t-prepared-general.log");
    let _ = std::fs::remove_file(&log);
    root.query_drop(format!(
        "SET GLOBAL log_output = 'FILE', general_log_file = '{}', general_log = 1",
        log.display()
    ))
    .unwrap();
    for session in 0..2u64 {
        let mut c = shop_session(ctx);
        let point = c.prep("SELECT name FROM items WHERE id = ?").unwrap();
        let range = c
            .prep("SELECT COUNT(*) FROM items WHERE price BETWEEN ? AND ? AND name <> ?")
            .unwrap();
        for i in 0..100u64 {
            c.exec_drop(&point, (1 + (i * 37 + session * 11) % 2000,))
                .unwrap();
            if i % 10 == 0 {
                // A value with a quote in it, and a NULL.
                let name = (i % 20 == 0).then_some("it's");
                c.exec_drop(&range, (i % 50, i % 50 + 20, name)).unwrap();
            }
        }
        c.query_drop("SELECT COUNT(*) FROM items").unwrap();
    }
    root.query_drop(format!(
        "SET GLOBAL general_log = {}, general_log_file = '{}', log_output = '{}'",
        found[0], found[1], found[2]
    ))
    .unwrap();
    assert_eq!(vars.map(|v| ctx.var(v)), found);
    let copy = ctx.work.join("prepared-general.log");
    std::fs::copy(&log, &copy).unwrap();
    let _ = std::fs::remove_file(&log);
    let captured = std::fs::read_to_string(&copy).unwrap();
    assert!(
        captured.contains("Execute\tSELECT name FROM items WHERE id = "),
        "{captured}"
    );

    let o = ctx.run(&replay_args(ctx, &copy, "prepared-dry", &["--dry-run"]));
    ok(&o);
    let said = text(&o);
    assert!(
        said.contains("220 of them executions of 2 prepared statements"),
        "{said}"
    );

    let before = stmt_executes(ctx);
    let o = ctx.run(&replay_args(
        ctx,
        &copy,
        "prepared-asap",
        &["--queries-per-trial", "300"],
    ));
    ok(&o);
    let executed = stmt_executes(ctx) - before;
    let v = validate_results(&ctx.work.join("prepared-asap/results.json"));
    let read = &v["workload"]["replay"]["read"];
    // The driver's own two reads per session run as text.
    assert_eq!(read["statements"], 226, "{read}");
    assert_eq!(
        (
            read["prepared"].as_u64(),
            read["prepared_statements"].as_u64()
        ),
        (Some(220), Some(2)),
        "{read}"
    );
    let mut measured = 0;
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert_eq!(t["errors"], 0, "{t}");
            measured += t["queries"].as_u64().unwrap();
        }
    }
    // Six statements in 226 go as text; warm-ups execute more. Sent as text, the replay
    // would execute none.
    assert!(
        executed as f64 >= 0.95 * measured as f64,
        "{executed} prepared executions for {measured} statements measured"
    );
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| !w.as_str().unwrap().contains("refused")),
        "{}",
        v["warnings"]
    );
    assert!(
        text(&o).contains("were executions of 2 prepared statements"),
        "{}",
        text(&o)
    );
}
