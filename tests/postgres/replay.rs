//! A captured statement log replayed on PostgreSQL: three sessions run a known mix with
//! log_statement = all (prepared point selects, whose values the log gives in a DETAIL line,
//! a range count over the simple protocol, an update, a set_config), the lines they added to
//! the server's log (stderr format, Debian's default prefix: the process id names the
//! session) are the capture; replayed at `--pace asap` (every trial the same statements) and
//! at twice the recorded pace, against log-statement.

use super::*;

/// The mix, logged; returns the captured lines' file and the updates run.
fn capture(ctx: &Ctx, db: &str) -> (PathBuf, u64) {
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
    let from = std::fs::metadata(&log).unwrap().len();
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
    let mut text = String::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        let bytes = std::fs::read(&log).unwrap();
        text = String::from_utf8_lossy(&bytes[from as usize..]).into_owned();
        let statements =
            text.matches("LOG:  execute").count() + text.matches("LOG:  statement").count();
        if statements >= expected {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = ctx.work.join("pg-capture.log");
    std::fs::write(&out, text).unwrap();
    (out, updates.into_inner())
}

fn replay_args(ctx: &Ctx, db: &str, log: &Path, out: &str, extra: &[&str]) -> Vec<String> {
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
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

pub(crate) fn a_captured_statement_log_replays_with_its_cost_per_statement(ctx: &Ctx) {
    let db = "t_pgreplay";
    let (log, updates) = capture(ctx, db);
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
    let rate = v["workload"]["replay"]["read"]["recorded_rate"]
        .as_f64()
        .unwrap();
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            let asked = t["rate"]["asked"].as_f64().unwrap();
            assert!((asked - 2.0 * rate).abs() < 1e-6 * asked, "{t}");
            assert_eq!(t["errors"], 0, "{t}");
        }
    }

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
