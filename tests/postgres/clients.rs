//! The lean client (`server::postgres::wire`) against the real cluster, in both execution
//! models: a row over 1 MB skipped, an error answered counted by its words, backends
//! terminated mid-query reconnected, and the logins a user's server asks for (password, md5,
//! SCRAM-SHA-256) over TCP. Clear errors, no panic, no hang.

use super::*;

use common::{CLIENT_MODELS as MODELS, json_of};

fn bench_query(ctx: &Ctx, url: &str, query: &str, secs: &str, model: &str) -> Output {
    ctx.run(&common::bench_query_args(url, query, secs, model))
}

pub(crate) fn the_lean_client_survives_big_rows_errors_and_terminated_backends(ctx: &Ctx) {
    let url = ctx.url("postgres");
    for model in MODELS {
        let v = json_of(&bench_query(
            ctx,
            &url,
            "SELECT repeat('x', 3000000)",
            "1s",
            model,
        ));
        assert!(v["queries"].as_u64().unwrap() > 0, "{model}: {v}");
        assert_eq!(v["errors"], 0, "{model}: {v}");
        // 3 connections: 3 threads of their own, or the event loop's 2.
        let threads = if model == "0" { 3 } else { 2 };
        assert_eq!(v["load_threads"], threads, "{model}: {v}");

        let v = json_of(&bench_query(
            ctx,
            &url,
            "SELECT 1 / (random() < 0.5)::int",
            "1s",
            model,
        ));
        let errors = v["errors"].as_u64().unwrap();
        assert!(
            errors > 0 && v["queries"].as_u64().unwrap() > 0,
            "{model}: {v}"
        );
        assert_eq!(
            v["error_messages"]["division by zero (SQLSTATE 22012)"], errors,
            "{model}: {v}"
        );

        let config = ctx.server.config("postgres");
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(900));
            let mut c = config.connect(postgres::NoTls).unwrap();
            let row = c
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE query LIKE 'SELECT pg_sleep%' AND pid <> pg_backend_pid()",
                    &[],
                )
                .unwrap();
            row.get::<_, i64>(0)
        });
        let started = Instant::now();
        let o = bench_query(ctx, &url, "SELECT pg_sleep(0.2)", "2s", model);
        let killed = killer.join().unwrap() as u64;
        assert!(killed > 0, "{model}: nothing to terminate");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{model}: too slow"
        );
        let v = json_of(&o);
        // 3 clients × 5 statements a second for 2 s: about 30 when they connect again, at
        // most 3 × 5 (the kill lands within the first second) when they do not.
        assert!(v["queries"].as_u64().unwrap() >= 20, "{model}: {v}");
        assert_eq!(v["errors"].as_u64(), Some(killed), "{model}: {v}");
        let messages = v["error_messages"].to_string();
        assert!(
            messages.contains("terminating connection due to administrator command"),
            "{model}: {v}"
        );
    }
}

pub(crate) fn the_lean_client_logs_in_with_password_md5_and_scram(ctx: &Ctx) {
    let hba = ctx.server.datadir().join("pg_hba.conf");
    let before = std::fs::read(&hba).unwrap();
    let mut lines = String::new();
    let mut c = ctx.sql("postgres");
    for (user, method) in [
        ("lean_pass", "password"),
        ("lean_md5", "md5"),
        ("lean_scram", "scram-sha-256"),
    ] {
        let encryption = if method == "md5" {
            "md5"
        } else {
            "scram-sha-256"
        };
        c.batch_execute(&format!(
            "SET password_encryption = '{encryption}'; \
             DROP ROLE IF EXISTS {user}; CREATE ROLE {user} LOGIN PASSWORD 'pw;{user}'"
        ))
        .unwrap();
        lines.push_str(&format!("host all {user} 127.0.0.1/32 {method}\n"));
    }
    // First match wins: these lines before the cluster's own.
    let mut text = lines.into_bytes();
    text.extend_from_slice(&before);
    std::fs::write(&hba, text).unwrap();
    c.batch_execute("SELECT pg_reload_conf()").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let port = ctx.server.port();
    for user in ["lean_pass", "lean_md5", "lean_scram"] {
        let url = format!("postgres://{user}:pw%3B{user}@127.0.0.1:{port}/postgres");
        for model in MODELS {
            let v = json_of(&bench_query(ctx, &url, "SELECT 1", "0.5s", model));
            assert!(v["queries"].as_u64().unwrap() > 0, "{user} {model}: {v}");
            assert_eq!(v["errors"], 0, "{user} {model}: {v}");
        }
    }
    std::fs::write(&hba, before).unwrap();
    c.batch_execute("SELECT pg_reload_conf(); DROP ROLE lean_pass, lean_md5, lean_scram")
        .unwrap();
}

/// Make a CA, a server certificate it signs (for localhost and 127.0.0.1) and another CA,
/// with the openssl command, in `dir` (readable by the cluster's user).
fn make_certificates(dir: &Path) {
    let sh = |script: &str| {
        let o = Command::new("sh")
            .arg("-ec")
            .arg(script)
            .current_dir(dir)
            .output()
            .expect("openssl (make test installs it)");
        assert!(o.status.success(), "{}", text(&o));
    };
    sh(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=dbtax-test-ca \
        -keyout ca.key -out ca.crt 2>/dev/null
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=another-ca \
        -keyout other.key -out other.crt 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
        -keyout server.key -out server.csr 2>/dev/null
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -extfile san.ext -out server.crt 2>/dev/null
        chmod 600 server.key
        if [ \"$(id -u)\" = 0 ]; then chown postgres server.key server.crt; fi",
    );
}

pub(crate) fn a_tls_url_is_spoken_by_every_connection(ctx: &Ctx) {
    use std::os::unix::fs::PermissionsExt;
    let dir = ctx.work.join("tls");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&ctx.work, std::fs::Permissions::from_mode(0o755)).unwrap();
    make_certificates(&dir);
    let port = common::free_port();
    let server = PgManaged::start(&ManagedConfig {
        port: Some(port),
        server_opts: vec![
            "ssl=on".into(),
            format!("ssl_cert_file={}", dir.join("server.crt").display()),
            format!("ssl_key_file={}", dir.join("server.key").display()),
        ],
        ..Default::default()
    })
    .expect("starting a PostgreSQL with ssl=on");
    // Over TCP, TLS or nothing.
    let hba = server.datadir().join("pg_hba.conf");
    let mut rules =
        b"hostnossl all all 127.0.0.1/32 reject\nhostssl all all 127.0.0.1/32 trust\n".to_vec();
    rules.extend(std::fs::read(&hba).unwrap());
    std::fs::write(&hba, rules).unwrap();
    let mut c = server.config("postgres").connect(postgres::NoTls).unwrap();
    c.batch_execute("SELECT pg_reload_conf()").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let ca = dir.join("ca.crt").display().to_string();
    let url =
        |host: &str, params: &str| format!("postgres://postgres@{host}:{port}/postgres?{params}");
    for (host, params) in [
        ("127.0.0.1", "sslmode=require".to_string()),
        ("localhost", format!("sslmode=verify-full&sslrootcert={ca}")),
        ("127.0.0.1", format!("sslmode=verify-ca&sslrootcert={ca}")),
    ] {
        for model in MODELS {
            let v = json_of(&bench_query(
                ctx,
                &url(host, &params),
                "SELECT 1",
                "0.5s",
                model,
            ));
            assert!(v["queries"].as_u64().unwrap() > 0, "{params} {model}: {v}");
            assert_eq!(v["errors"], 0, "{params} {model}: {v}");
        }
    }
    // The same server without TLS is refused by the rule above; a certificate another CA
    // signed is refused by dbtax: bad input, in words, nothing run.
    let other = dir.join("other.crt").display().to_string();
    for (params, words) in [
        ("sslmode=disable".to_string(), "no encryption"),
        (
            format!("sslmode=verify-full&sslrootcert={other}"),
            "certificate",
        ),
        (
            "sslmode=verify-full&sslrootcert=/nonexistent/ca.crt".to_string(),
            "sslrootcert",
        ),
    ] {
        let o = bench_query(ctx, &url("localhost", &params), "SELECT 1", "0.5s", "0");
        assert_eq!(o.status.code(), Some(2), "{params}: {}", text(&o));
        assert!(text(&o).contains(words), "{params}: {}", text(&o));
    }
    drop(server);
}

/// The server sees what libpq sends in each of pgbench's modes (`--protocol`): the text mode's
/// simple Query with the value written in (pgbench -M simple), the prepared statement parsed
/// once and executed by name (-M prepared, its row description asked for each time as
/// libpq's Describe does), the unnamed statement parsed at every execution (-M extended). The
/// server's own log, at log_statement = all for this database only, says which it ran.
pub(crate) fn each_protocol_sends_what_libpq_sends(ctx: &Ctx) {
    let mut c = ctx.sql("postgres");
    c.batch_execute("CREATE DATABASE t_modes").unwrap();
    c.batch_execute("ALTER DATABASE t_modes SET log_statement = 'all'")
        .unwrap();
    let log = ctx.server.datadir().join("log/postgresql.log");
    let select = "SELECT abalance FROM pgbench_accounts WHERE aid = ";
    for (mode, ran) in [
        ("text", format!("statement: {select}")),
        ("prepared", format!("execute s0: {select}$1")),
        ("extended", format!("execute <unnamed>: {select}$1")),
    ] {
        let from = std::fs::metadata(&log).unwrap().len();
        let v = json_of(&ctx.run(&[
            "bench",
            "--target",
            &ctx.url("t_modes"),
            "-w",
            "select-only",
            "--threads",
            "2",
            "--queries",
            "500",
            "--warmup",
            "0s",
            "--protocol",
            mode,
            "--json",
        ]));
        assert_eq!(v["workload"]["protocol"], mode, "{v}");
        assert_eq!(v["errors"], 0, "{mode}: {v}");
        let bytes = std::fs::read(&log).unwrap();
        let logged = String::from_utf8_lossy(&bytes[from as usize..]);
        let lines: Vec<&str> = logged.lines().filter(|l| l.contains(select)).collect();
        let as_asked = lines.iter().filter(|l| l.contains(&ran)).count();
        assert!(
            as_asked >= 500,
            "{mode}: {as_asked} of {} lines",
            lines.len()
        );
        if mode == "text" {
            // The value is in the statement, a number where the placeholder was.
            assert!(
                lines.iter().all(|l| l
                    .split(select)
                    .nth(1)
                    .is_some_and(|v| v.trim().parse::<u64>().is_ok())),
                "{}",
                lines[0]
            );
        }
    }
    let o = ctx.run(&[
        "bench",
        "--target",
        &ctx.url("t_modes"),
        "--protocol",
        "prepared-uncached",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
