//! The lean clients (`workload::wire`, `server::mysql::wire`) against the real server, in
//! both execution models (one thread per connection; the event loop): a row over 1 MB read
//! and skipped, an error the server answers counted by its words while the run goes on,
//! connections killed in the middle of a query reconnected, a password login over TCP.
//! Clear errors, no panic, no hang.

use super::*;

use common::CLIENT_MODELS as MODELS;

/// `dbtax bench` of `query` for `secs` with 3 clients run as `model` says.
fn bench_query(ctx: &Ctx, url: &str, query: &str, secs: &str, model: &str) -> Output {
    ctx.run(&common::bench_query_args(url, query, secs, model))
}

/// The other sessions running a statement that starts with `like`.
fn running(root: &mut mysql::Conn, like: &str) -> Vec<u64> {
    root.query(format!(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '{like}%' \
         AND ID <> CONNECTION_ID()"
    ))
    .unwrap()
}

/// Kill every connection running `like` (as root) once, after `after`; then watch, for up
/// to `watch`, for as many new connections running it again (the killed clients, connected
/// again). Returns (killed, came back).
fn kill_running(
    socket: &Path,
    like: &str,
    after: Duration,
    watch: Duration,
) -> std::thread::JoinHandle<(u64, u64)> {
    let (socket, like) = (socket.to_path_buf(), like.to_string());
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let mut root = common::root(&socket);
        let ids = running(&mut root, &like);
        for id in &ids {
            let _ = root.query_drop(format!("KILL CONNECTION {id}"));
        }
        let deadline = Instant::now() + watch;
        let mut back = std::collections::BTreeSet::new();
        while Instant::now() < deadline && back.len() < ids.len() {
            back.extend(
                running(&mut root, &like)
                    .into_iter()
                    .filter(|id| !ids.contains(id)),
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        (ids.len() as u64, back.len().min(ids.len()) as u64)
    })
}

pub(crate) fn the_lean_clients_survive_big_rows_errors_and_killed_connections(ctx: &Ctx) {
    ctx.root()
        .query_drop("CREATE DATABASE IF NOT EXISTS t_clients")
        .unwrap();
    let url = ctx.url("t_clients");
    for model in MODELS {
        // A 3 MB row per statement: read, skipped, counted.
        let v = json_of(&bench_query(
            ctx,
            &url,
            "SELECT REPEAT('x', 3000000)",
            "1s",
            model,
        ));
        assert!(v["queries"].as_u64().unwrap() > 0, "{model}: {v}");
        assert_eq!(v["errors"], 0, "{model}: {v}");
        // 3 connections: 3 threads of their own, or the event loop's 2.
        let threads = if model == "0" { 3 } else { 2 };
        assert_eq!(v["load_threads"], threads, "{model}: {v}");

        // Half the statements answered with an error: counted by the server's words; the
        // connection goes on (no reconnect needed, the other half succeeds).
        let v = json_of(&bench_query(
            ctx,
            &url,
            "SELECT IF(RAND() < 0.5, 1, (SELECT 1 UNION SELECT 2))",
            "1s",
            model,
        ));
        let errors = v["errors"].as_u64().unwrap();
        let queries = v["queries"].as_u64().unwrap();
        assert!(errors > 0 && queries > 0, "{model}: {v}");
        assert_eq!(
            v["error_messages"]["Subquery returns more than 1 row (error 1242)"], errors,
            "{model}: {v}"
        );

        // A fixed number of statements that all fail ends (failures count), in words.
        let o = ctx.run(&[
            "bench",
            "--target",
            &url,
            "--query",
            "SELECT (SELECT 1 UNION SELECT 2)",
            "--queries",
            "20",
            "--threads",
            "3",
            "--client-threads",
            model,
        ]);
        assert_eq!(o.status.code(), Some(1), "{model}: {}", text(&o));
        assert!(
            text(&o).contains("every query of the trial failed: Subquery returns more than 1 row"),
            "{model}: {}",
            text(&o)
        );

        // Connections killed mid-query: the failures named, the clients connect again and
        // the trial completes.
        let killer = kill_running(
            &ctx.socket,
            "SELECT SLEEP",
            Duration::from_millis(900),
            Duration::from_secs(3),
        );
        let started = Instant::now();
        let o = bench_query(ctx, &url, "SELECT SLEEP(0.2)", "4s", model);
        let (killed, back) = killer.join().unwrap();
        assert!(killed > 0, "{model}: nothing to kill");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{model}: too slow"
        );
        let v = json_of(&o);
        // Each killed client connected again and ran its statement while the trial went on
        // (seen by the server, not inferred from a throughput a busy machine can halve), and
        // each kill is one failure; a client that did not come back fails the trial in words.
        assert_eq!(back, killed, "{model}: {v}");
        assert_eq!(v["errors"].as_u64(), Some(killed), "{model}: {v}");
        // MariaDB closes a killed connection without a word (MySQL sends error 1927 first).
        let messages = v["error_messages"].to_string();
        assert!(
            messages.contains("the server closed the connection")
                || messages.contains("Connection was killed"),
            "{model}: {v}"
        );
    }
}

/// Connections killed while the server cannot be reached for a moment (its socket renamed
/// away for 600 ms, as a busy server's full accept queue or a restarting proxy refuses a
/// connection): every client connects again once it can, in both execution models, and the
/// trial runs at its thread count to the end. (Before the clients tried a few times, one
/// refused reconnect left that client out for the rest of the trial without a word: the
/// second half of such a trial ran nothing.)
pub(crate) fn connections_killed_while_the_server_refuses_new_ones_come_back(ctx: &Ctx) {
    ctx.root()
        .query_drop("CREATE DATABASE IF NOT EXISTS t_clients")
        .unwrap();
    let url = ctx.url("t_clients");
    for model in MODELS {
        // The sessions of an earlier bench still finish their SLEEP on the server after it
        // left: none may be taken for this bench's.
        wait_for("the earlier sleeps to end", Duration::from_secs(30), || {
            ctx.count(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE \
                 'SELECT SLEEP%'",
            ) == 0
        });
        let socket = ctx.socket.clone();
        let killer = std::thread::spawn(move || {
            let mut root = common::root(&socket);
            let start = Instant::now();
            while running(&mut root, "SELECT SLEEP").len() < 3 {
                assert!(start.elapsed() < Duration::from_secs(60), "no load came");
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(700));
            let ids = running(&mut root, "SELECT SLEEP");
            // One session per kill, opened while the socket is there: the kills go in at once
            // (one KILL can take seconds on a crowded machine).
            let killers: Vec<mysql::Conn> = ids.iter().map(|_| common::root(&socket)).collect();
            // The server listens on, but no new connection finds it by its path, for 600 ms
            // however long the kills take (well inside the clients' 2.35 s of tries).
            let away = socket.with_extension("away");
            let gone = Instant::now();
            std::fs::rename(&socket, &away).unwrap();
            let back = {
                let (away, socket) = (away.clone(), socket.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(600));
                    std::fs::rename(&away, &socket).unwrap();
                    gone.elapsed()
                })
            };
            let kills: Vec<_> = ids
                .iter()
                .zip(killers)
                .map(|(id, mut c)| {
                    let id = *id;
                    std::thread::spawn(move || {
                        let _ = c.query_drop(format!("KILL CONNECTION {id}"));
                    })
                })
                .collect();
            for k in kills {
                k.join().unwrap();
            }
            let killed_in = gone.elapsed();
            let back = back.join().unwrap();
            (
                ids.len() as u64,
                format!("killed {ids:?} in {killed_in:?}, back after {back:?}"),
            )
        });
        let o = bench_query(ctx, &url, "SELECT SLEEP(0.2)", "4s", model);
        let (killed, how) = killer.join().unwrap();
        assert!(killed > 0, "{model}: nothing to kill");
        assert_eq!(o.status.code(), Some(0), "{model}: {how}\n{}", text(&o));
        let v = json_of(&o);
        assert_eq!(v["errors"].as_u64(), Some(killed), "{model}: {v}");
        // The clients came back: the second half of the trial ran (all left out, it runs
        // nothing, as issue 34's red suite saw), and more ran than the 15 or so that 3 clients
        // manage before a kill about 1 s in (a neighbour on the CPU slows what ran, not this).
        let queries = v["queries"].as_u64().unwrap();
        assert!(queries >= 20, "{model}: {queries} queries: {how}\n{v}");
        let halves = v["halves_qps"].as_array().expect("halves");
        assert!(halves[1].as_f64().unwrap() > 3.0, "{model}: {how}\n{v}");
    }
}

/// At a low rate the event loop's connections are idle most of the time: a server that closes
/// one between events (here: KILL) is noticed at once and the connection made again, with no
/// statement failed and no thread spinning on the closed socket.
pub(crate) fn idle_connections_the_server_closes_are_made_again(ctx: &Ctx) {
    ctx.root()
        .query_drop("CREATE DATABASE IF NOT EXISTS t_clients")
        .unwrap();
    let url = ctx.url("t_clients");
    let socket = ctx.socket.clone();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1200));
        let mut root = common::root(&socket);
        let ids: Vec<u64> = root
            .query(
                "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = 't_clients' \
                 AND COMMAND = 'Sleep' AND ID <> CONNECTION_ID()",
            )
            .unwrap();
        for id in &ids {
            let _ = root.query_drop(format!("KILL CONNECTION {id}"));
        }
        ids.len()
    });
    let o = ctx.run(&[
        "bench",
        "--target",
        &url,
        "--query",
        "SELECT 1",
        "--threads",
        "3",
        "--rate",
        "30",
        "--duration",
        "2.5s",
        "--warmup",
        "0s",
        "--client-threads",
        "2",
        "--json",
    ]);
    let killed = killer.join().unwrap();
    assert!(killed >= 3, "killed {killed}");
    let v = json_of(&o);
    assert_eq!(v["errors"], 0, "{v}");
    assert!(v["queries"].as_u64().unwrap() >= 50, "{v}");
    // Not spinning: a few hundred µs of CPU per statement at most, not a core.
    assert!(
        v["client_cpu_us_per_query"].as_f64().unwrap() < 5_000.0,
        "{v}"
    );
}

pub(crate) fn the_lean_client_logs_in_with_a_password_over_tcp(ctx: &Ctx) {
    let mut root = ctx.root();
    root.query_drop("CREATE DATABASE IF NOT EXISTS t_clients")
        .unwrap();
    root.query_drop("CREATE USER IF NOT EXISTS 'lean'@'127.0.0.1' IDENTIFIED BY 's3cret;pw'")
        .unwrap();
    root.query_drop("GRANT ALL ON t_clients.* TO 'lean'@'127.0.0.1'")
        .unwrap();
    let url = format!("mysql://lean:s3cret%3Bpw@127.0.0.1:{}/t_clients", ctx.port);
    for model in MODELS {
        let v = json_of(&bench_query(ctx, &url, "SELECT 1", "0.5s", model));
        assert!(v["queries"].as_u64().unwrap() > 0, "{model}: {v}");
        assert_eq!(v["errors"], 0, "{model}: {v}");
    }
    root.query_drop("DROP USER 'lean'@'127.0.0.1'").unwrap();
}

/// The general and slow logs this server writes, read back by the replay's readers: a known
/// mix (a multi-line statement, one holding a tab and a quote, a database change) comes out
/// as the sessions ran it. (Issue 25's groundwork: the readers, not yet the replay.)
pub(crate) fn the_servers_own_logs_read_back_as_the_sessions_ran_them(ctx: &Ctx) {
    use dbtax_logs::What;
    use dbtax_logs::readers::mysql as mylog;
    let general = ctx.work.join("replay-general.log");
    let slow = ctx.work.join("replay-slow.log");
    let mut root = ctx.root();
    for q in [
        "CREATE DATABASE IF NOT EXISTS t_replay".to_string(),
        format!("SET GLOBAL general_log_file = '{}'", general.display()),
        format!("SET GLOBAL slow_query_log_file = '{}'", slow.display()),
        "SET GLOBAL long_query_time = 0".into(),
        "SET GLOBAL general_log = ON".into(),
        "SET GLOBAL slow_query_log = ON".into(),
    ] {
        root.query_drop(q).unwrap();
    }
    let mut c = common::root(&ctx.socket);
    c.query_drop("USE t_replay").unwrap();
    c.query_drop("SELECT 1").unwrap();
    c.query_drop("SELECT 'a\tb', 'it''s'\nFROM DUAL\nWHERE 1 = 1")
        .unwrap();
    let session = c.connection_id() as u64;
    drop(c);
    // The server logs the session's Quit when its thread gets to it: on a busy machine after
    // the logs would be switched off here, unless the session is waited out.
    wait_for("the session to end", Duration::from_secs(30), || {
        ctx.count(&format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {session}"
        )) == 0
    });
    for q in [
        "SET GLOBAL general_log = OFF",
        "SET GLOBAL slow_query_log = OFF",
        "SET GLOBAL long_query_time = 10",
        "SET GLOBAL general_log_file = DEFAULT",
        "SET GLOBAL slow_query_log_file = DEFAULT",
    ] {
        root.query_drop(q).unwrap();
    }
    let open = |p: &Path| std::io::BufReader::new(std::fs::File::open(p).unwrap());
    const MULTI: &str = "SELECT 'a\tb', 'it''s'\nFROM DUAL\nWHERE 1 = 1";
    // The statements both logs must hold for this session, besides its database.
    let ran = |whats: &[&What]| {
        for q in ["SELECT 1", MULTI] {
            assert!(whats.contains(&&What::Query(q.into())), "{q}: {whats:?}");
        }
    };
    let mut g = mylog::GeneralLog::new(open(&general));
    let mine: Vec<_> = g.by_ref().filter(|e| e.session == session).collect();
    assert!(g.malformed.is_empty(), "{:?}", g.malformed);
    let whats: Vec<&What> = mine.iter().map(|e| &e.what).collect();
    assert!(matches!(whats[0], What::Connect { .. }), "{whats:?}");
    assert!(
        whats.contains(&&What::Query("USE t_replay".into()))
            || whats.contains(&&What::InitDb("t_replay".into())),
        "{whats:?}"
    );
    ran(&whats);
    assert_eq!(whats.last(), Some(&&What::Quit), "{whats:?}");
    assert!(mine.iter().all(|e| e.at_us.is_some()));
    let mut s = mylog::SlowLog::new(open(&slow));
    let mine: Vec<_> = s.by_ref().filter(|e| e.session == session).collect();
    assert!(s.malformed.is_empty(), "{:?}", s.malformed);
    let whats: Vec<&What> = mine.iter().map(|e| &e.what).collect();
    ran(&whats);
    assert!(
        whats.contains(&&What::InitDb("t_replay".into())),
        "{whats:?}"
    );
}

/// The server's counters that tell how statements reached it.
fn counters(ctx: &Ctx) -> std::collections::BTreeMap<String, f64> {
    ctx.root()
        .query::<(String, String), _>(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_select', 'Com_stmt_execute', \
             'Com_stmt_prepare', 'Bytes_received', 'Bytes_sent')",
        )
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, v.parse().unwrap()))
        .collect()
}

/// The server sees what an application's connector sends, in each `--protocol`: the text
/// mode's statements arrive as COM_QUERY with their values (as Connector/J's and PDO's do),
/// the prepared ones as executions carrying their parameter types only the first time (as
/// libmariadb's, 24 bytes a point select, not 26: the server set the conversions up again at
/// every execution when they came each time), and without the metadata cache the server
/// sends every execution's column definition again.
pub(crate) fn each_protocol_sends_what_its_connector_sends(ctx: &Ctx) {
    // dbtax's own checks before the load (a few statements, some prepared) are a rounding
    // error beside this many.
    const N: f64 = 20000.0;
    let url = ctx.url("dbtax");
    let mut sent = std::collections::BTreeMap::new();
    for mode in ["text", "prepared", "prepared-uncached"] {
        let before = counters(ctx);
        let v = json_of(&ctx.run(&[
            "bench",
            "--target",
            &url,
            "-w",
            "point-select",
            "--tables",
            "2",
            "--table-size",
            "1000",
            "--threads",
            "2",
            "--queries",
            "20000",
            "--warmup",
            "0s",
            "--protocol",
            mode,
            "--json",
        ]));
        let after = counters(ctx);
        let d = |k: &str| after[k] - before[k];
        assert_eq!(v["workload"]["protocol"], mode, "{v}");
        assert_eq!(v["errors"], 0, "{mode}: {v}");
        if mode == "text" {
            assert!(d("Com_select") >= N, "{mode}: {}", d("Com_select"));
            assert!(
                d("Com_stmt_execute") < 100.0,
                "{mode}: {}",
                d("Com_stmt_execute")
            );
        } else {
            assert!(
                d("Com_stmt_execute") >= N,
                "{mode}: {}",
                d("Com_stmt_execute")
            );
            assert!(
                d("Com_stmt_prepare") < 100.0,
                "{mode}: {}",
                d("Com_stmt_prepare")
            );
            let received = d("Bytes_received") / N;
            assert!(
                (24.0..25.0).contains(&received),
                "{mode}: {received} bytes a query"
            );
        }
        sent.insert(mode, d("Bytes_sent") / N);
    }
    // The cached definitions are the difference: a column definition, some 40 bytes.
    let saved = sent["prepared-uncached"] - sent["prepared"];
    assert!((30.0..80.0).contains(&saved), "{sent:?}");
    // PostgreSQL's mode is bad input here, before anything happens.
    let o = ctx.run(&["bench", "--target", &url, "--protocol", "extended"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("PostgreSQL's"), "{}", text(&o));
}
