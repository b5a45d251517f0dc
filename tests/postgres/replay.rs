//! A captured statement log replayed on PostgreSQL: three sessions run a known mix with
//! log_statement = all (prepared point selects, whose values the log gives in a DETAIL line,
//! a range count over the simple protocol, an update, a set_config), the lines they added to
//! the server's log (stderr format, Debian's default prefix: the process id names the
//! session; and csvlog, switched on for the capture) are the capture; replayed at `--pace
//! asap` (every trial the same statements) and at twice the recorded pace, against
//! log-statement.

use super::*;

/// Wait until `cond` holds (at most 20 s).
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The mix, logged in both formats (stderr, and csvlog for the capture's length); returns
/// the captured lines of each and the updates run.
fn capture(ctx: &Ctx, db: &str) -> (PathBuf, PathBuf, u64) {
    let mut admin = ctx.sql("postgres");
    let _ = admin.batch_execute(&format!("CREATE DATABASE {db}"));
    ctx.sql(db)
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, name text, price int); \
             CREATE INDEX IF NOT EXISTS items_price ON items (price); \
             INSERT INTO items SELECT g, 'item ' || g, g % 97 FROM generate_series(1, 2000) g \
             ON CONFLICT DO NOTHING",
        )
        .unwrap();
    let log = ctx.server.datadir().join("log/postgresql.log");
    let csv = ctx.server.datadir().join("log/postgresql.csv");
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len()) as usize;
    let conf = ctx.auto_conf();
    for q in [
        "ALTER SYSTEM SET log_destination = 'stderr,csvlog'",
        "SELECT pg_reload_conf()",
    ] {
        admin.batch_execute(q).unwrap();
    }
    wait_until("the csv log", || csv.exists());
    let (from, csv_from) = (size(&log), size(&csv));
    let updates = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for session in 0..3i32 {
            let updates = &updates;
            s.spawn(move || {
                let mut c = ctx.sql(db);
                c.batch_execute("SET log_statement = 'all'").unwrap();
                if session == 0 {
                    c.simple_query("SELECT set_config('work_mem', '8MB', false)")
                        .unwrap();
                }
                for i in 0..120i32 {
                    let id = 1 + (i * 37 + session * 11) % 2000;
                    c.query("SELECT name FROM items WHERE id = $1", &[&id])
                        .unwrap();
                    if i % 5 == 0 {
                        c.simple_query(&format!(
                            "SELECT count(*) FROM items WHERE price BETWEEN {} AND {}",
                            i % 50,
                            i % 50 + 20
                        ))
                        .unwrap();
                    }
                    if i % 30 == 0 {
                        c.execute("UPDATE items SET price = price WHERE id = $1", &[&id])
                            .unwrap();
                        updates.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(4));
                }
            });
        }
    });
    // The logging collector writes behind: wait until every session's last lines are in.
    let expected = 3 * (120 + 24 + 4);
    let since = |p: &Path, at: usize| {
        let bytes = std::fs::read(p).unwrap();
        String::from_utf8_lossy(&bytes[at..]).into_owned()
    };
    wait_until("the statements in both logs", || {
        let (t, c) = (since(&log, from), since(&csv, csv_from));
        t.matches("LOG:  execute").count() + t.matches("LOG:  statement").count() >= expected
            && c.matches(",LOG,00000,\"execute").count()
                + c.matches(",LOG,00000,\"statement").count()
                >= expected
    });
    // Back as it was, byte for byte (ALTER SYSTEM rewrites the whole file: an earlier
    // scenario's hand edits would not survive a RESET).
    std::fs::write(ctx.server.datadir().join("postgresql.auto.conf"), &conf).unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    let (out, out_csv) = (
        ctx.work.join("pg-capture.log"),
        ctx.work.join("pg-capture.csv"),
    );
    std::fs::write(&out, since(&log, from)).unwrap();
    std::fs::write(&out_csv, since(&csv, csv_from)).unwrap();
    (out, out_csv, updates.into_inner())
}

pub(crate) fn replay_args(
    ctx: &Ctx,
    db: &str,
    log: &Path,
    out: &str,
    extra: &[&str],
) -> Vec<String> {
    let mut a: Vec<String> = [
        "run",
        "--target",
        &ctx.url(db),
        "--feature",
        "log-statement",
        "--threads",
        "3",
        "--repeats",
        "3",
        "--trial",
        "0.6s",
        "--warmup",
        "0.2s",
        "--no-warmup-round",
        "--log",
    ]
    .map(String::from)
    .to_vec();
    a.push(log.display().to_string());
    a.push("--out".into());
    a.push(ctx.work.join(out).display().to_string());
    // The suite's server is not dbtax's own: the clients need a login that may only read.
    a.extend(["--replay-user".into(), "temporary".into()]);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

pub(crate) fn a_captured_statement_log_replays_with_its_cost_per_statement(ctx: &Ctx) {
    let db = "t_pgreplay";
    let (log, csv, updates) = capture(ctx, db);
    assert_eq!(ctx.show("log_destination"), "stderr");
    let server_log = ctx.server.datadir().join("log/postgresql.log");
    let replay_from = std::fs::metadata(&server_log).unwrap().len() as usize;
    let o = ctx.run(&replay_args(
        ctx,
        db,
        &log,
        "pg-replay-asap",
        &["--queries-per-trial", "900"],
    ));
    ok(&o);
    assert_eq!(ctx.show("log_statement"), "none");
    let v = validate_results(&ctx.work.join("pg-replay-asap/results.json"));
    let read = &v["workload"]["replay"]["read"];
    assert_eq!(read["format"], "postgres", "{read}");
    assert_eq!(read["sessions"], 3, "{read}");
    assert_eq!(read["skipped_writes"].as_u64().unwrap(), updates, "{read}");
    assert_eq!(read["skipped_server"], 1, "set_config: {read}");
    assert_eq!(read["malformed_lines"], 0, "{read}");
    // The point selects were executions of one prepared statement: replayed prepared. The
    // server's own log (log_statement = all in log-statement's trials) shows the replay's
    // named statement executed with its values, and never the value in the text.
    assert_eq!(
        (
            read["prepared"].as_u64(),
            read["prepared_statements"].as_u64()
        ),
        (Some(360), Some(1)),
        "{read}"
    );
    let bytes = std::fs::read(&server_log).unwrap();
    let during = String::from_utf8_lossy(&bytes[replay_from..]);
    let prepared = during
        .lines()
        .filter(|l| l.contains("execute s") && l.contains(": SELECT name FROM items WHERE id = $1"))
        .count();
    assert!(prepared >= 900, "{prepared} prepared executions logged");
    assert!(
        !during.contains("SELECT name FROM items WHERE id = '"),
        "a point select sent as text"
    );
    let fps = v["workload"]["replay"]["fingerprints"].as_array().unwrap();
    let point = fps
        .iter()
        .find(|f| f["fingerprint"] == "select name from items where id = ?")
        .unwrap_or_else(|| panic!("{fps:?}"));
    assert_eq!(point["count"], 360, "{fps:?}");
    // The prepared statement's value, filled in from its DETAIL line.
    assert!(
        point["sample"]
            .as_str()
            .unwrap()
            .starts_with("SELECT name FROM items WHERE id = '"),
        "{point}"
    );
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert_eq!(t["errors"], 0, "{t}");
            assert_eq!(t["queries"], 900, "{t}");
            assert!(!t["fingerprints"].as_array().unwrap().is_empty(), "{t}");
        }
    }
    let cell = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["variant"] == "log-statement")
        .unwrap();
    let costs = cell["fingerprints"].as_array().unwrap();
    assert!(
        costs
            .iter()
            .any(|f| f["latency_delta_ms"]["mean"]["ci95"].is_array()),
        "{cell}"
    );
    assert!(text(&o).contains("statements that pay"), "{}", text(&o));

    // The same capture as csvlog reads the same.
    let o = ctx.run(&replay_args(
        ctx,
        db,
        &csv,
        "pg-replay-csv",
        &["--queries-per-trial", "300"],
    ));
    ok(&o);
    let v = validate_results(&ctx.work.join("pg-replay-csv/results.json"));
    let read_csv = &v["workload"]["replay"]["read"];
    assert_eq!(read_csv["format"], "csvlog", "{read_csv}");
    for k in ["statements", "sessions", "skipped_writes", "skipped_server"] {
        assert_eq!(read_csv[k], read[k], "{k}: {read_csv} / {read}");
    }
    assert_eq!(read_csv["malformed_lines"], 0, "{read_csv}");

    // Twice the recorded pace: rate mode at twice the log's rate.
    let o = ctx.run(&replay_args(
        ctx,
        db,
        &log,
        "pg-replay-2x",
        &["--pace", "2x"],
    ));
    ok(&o);
    assert_eq!(ctx.show("log_statement"), "none");
    let v = validate_results(&ctx.work.join("pg-replay-2x/results.json"));
    common::assert_recorded_pace(&v, 2.0);

    // A MariaDB log is not replayed here.
    let general = ctx.work.join("general.log");
    std::fs::write(
        &general,
        "261201 10:00:00\t    5 Query\tSELECT 1\n\t\t    5 Query\tSELECT 2\n",
    )
    .unwrap();
    let o = ctx.run(&replay_args(ctx, db, &general, "pg-replay-bad", &[]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("kind of server that wrote it"),
        "{}",
        text(&o)
    );
    assert_eq!(ctx.show("log_statement"), "none");
}

/// `dbtax capture` on PostgreSQL: log_min_duration_statement = 0 while two sessions run
/// prepared point selects, postgresql.auto.conf put back byte for byte after, and the file
/// it wrote replayed against log-statement.
pub(crate) fn a_capture_by_dbtax_replays_and_leaves_the_conf_as_found(ctx: &Ctx) {
    let db = "t_pgcapture";
    let _ = ctx
        .sql("postgres")
        .batch_execute(&format!("CREATE DATABASE {db}"));
    ctx.sql(db)
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, name text); \
             INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 500) g \
             ON CONFLICT DO NOTHING",
        )
        .unwrap();
    let conf = ctx.auto_conf();
    let before = ctx.show("log_min_duration_statement");
    let path = ctx.work.join("pg-dbtax-capture.log");
    // Long enough for the sessions on a busy machine; they are checked to end within it.
    let capture = common::Capture::start(ctx.dbtax(), "8s", &ctx.url(db), &path);
    std::thread::scope(|s| {
        for session in 0..2i32 {
            s.spawn(move || {
                let mut c = ctx.sql(db);
                for i in 0..100i32 {
                    let id = 1 + (i * 37 + session * 11) % 500;
                    c.query("SELECT name FROM items WHERE id = $1", &[&id])
                        .unwrap();
                    std::thread::sleep(Duration::from_millis(4));
                }
            });
        }
    });
    let (code, said) = capture.finish();
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(ctx.auto_conf(), conf, "{said}");
    assert_eq!(ctx.show("log_min_duration_statement"), before, "{said}");
    assert_eq!(ctx.journals(), 0);
    assert!(said.contains("Replay it with"), "{said}");
    println!("{said}");

    let o = ctx.run(&replay_args(
        ctx,
        db,
        &path,
        "pg-capture-replay",
        &["--queries-per-trial", "200"],
    ));
    ok(&o);
    let v = validate_results(&ctx.work.join("pg-capture-replay/results.json"));
    let fps = v["workload"]["replay"]["fingerprints"].as_array().unwrap();
    let point = fps
        .iter()
        .find(|f| f["fingerprint"] == "select name from items where id = ?")
        .unwrap_or_else(|| panic!("{fps:?}"));
    assert_eq!(point["count"], 200, "{fps:?}");
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert_eq!(t["errors"], 0, "{t}");
        }
    }
    assert_eq!(ctx.auto_conf(), conf);
}

/// Issue 50: a capture on a PostgreSQL that writes csvlog, of a pool connected before it
/// began, with an idle_session_timeout shorter than the capture: the pool's statements are
/// captured (a reload reaches open sessions) and read back as csvlog (the capture used to
/// say "0 statements" of a file a dry run reads), dbtax's admin connection outlives the
/// timeout, and postgresql.auto.conf comes back as it was.
pub(crate) fn a_capture_of_a_pool_in_csvlog_past_idle_session_timeout(ctx: &Ctx) {
    let db = "t_pgpool";
    let _ = ctx
        .sql("postgres")
        .batch_execute(&format!("CREATE DATABASE {db}"));
    ctx.sql(db)
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, name text); \
             INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 100) g \
             ON CONFLICT DO NOTHING",
        )
        .unwrap();
    let set = |sql: &str| {
        let mut c = ctx.sql("postgres");
        // (ALTER SYSTEM runs alone: not in the implicit transaction of a batch.)
        for one in sql.split("; ") {
            c.batch_execute(one).unwrap();
        }
        c.batch_execute("SELECT pg_reload_conf()").unwrap();
        std::thread::sleep(Duration::from_millis(300));
    };
    set(
        "ALTER SYSTEM SET log_destination = 'csvlog'; ALTER SYSTEM SET idle_session_timeout = '2s'",
    );
    let conf = ctx.auto_conf();
    // The pool's own sessions are kept from the timeout (a pool pings its connections); it
    // is dbtax's admin connection that must outlive it while dbtax starts and captures.
    let mut pool: Vec<postgres::Client> = (0..3)
        .map(|_| {
            let mut c = ctx.sql(db);
            c.batch_execute("SET idle_session_timeout = 0").unwrap();
            c
        })
        .collect();
    let path = ctx.work.join("pg-pool-capture.csv");
    let capture = common::Capture::start(ctx.dbtax(), "6s", &ctx.url(db), &path);
    for round in 0..6 {
        for (i, c) in pool.iter_mut().enumerate() {
            c.query(
                "SELECT name FROM items WHERE id = $1",
                &[&(round * 3 + i as i32 + 1)],
            )
            .unwrap();
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (code, said) = capture.finish();
    let conf_after = ctx.auto_conf();
    set("ALTER SYSTEM RESET log_destination; ALTER SYSTEM RESET idle_session_timeout");
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(conf_after, conf, "{said}");
    assert!(said.contains("18 statements in 3 sessions"), "{said}");
    assert!(said.contains("log_min_duration_statement = 0"), "{said}");
    let head = std::fs::read_to_string(&path).unwrap();
    assert!(head.contains("SELECT name FROM items"), "{head}");
    println!("a pool in csvlog past idle_session_timeout: 18 statements in 3 sessions captured");
}
