//! A replay must never change the server (issue 33), on PostgreSQL: a statement log made of
//! what an adversarial user replayed (several statements in one entry, DO blocks, SELECT …
//! INTO, EXPLAIN ANALYZE of a CREATE TABLE AS or of a prepared DELETE, a quoted setval, a
//! backslash that is no escape, a replication slot, a statistics reset, COPY TO PROGRAM,
//! the read-only mode lifted, a backend terminated) replayed against a table, a sequence,
//! the roles, the settings, the slots and the files, whose state must be the same after;
//! and, with the classifier out of the way, the session and the login refuse each of them.

use super::*;
use dbtax::server::Server;
use dbtax::server::url::TargetSpec;

const DB: &str = "t_pglocks";

fn harmful(file: &Path) -> Vec<String> {
    let f = file.display();
    vec![
        "SELECT 1; DELETE FROM victim".to_string(),
        "DO $$ BEGIN DELETE FROM victim; END $$".into(),
        "SELECT * INTO victim2 FROM victim".into(),
        "EXPLAIN ANALYZE CREATE TABLE victim3 AS SELECT 1".into(),
        "PREPARE p AS DELETE FROM victim".into(),
        "EXPLAIN ANALYZE EXECUTE p".into(),
        "SELECT \"setval\"('seq1', 100)".into(),
        "SELECT 'a\\', setval('seq1', 200), 'b'".into(),
        "SELECT nextval('seq1')".into(),
        "SELECT pg_create_physical_replication_slot('dbtax_pwn')".into(),
        "SELECT pg_stat_reset()".into(),
        format!("COPY victim TO PROGRAM 'touch {f}'"),
        format!("DO $$ BEGIN EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch {f}'''; END $$"),
        "SET default_transaction_read_only = off".into(),
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'".into(),
        "ALTER SYSTEM SET log_statement = 'none'".into(),
        "CREATE ROLE pwn SUPERUSER LOGIN".into(),
        "TRUNCATE victim".into(),
        "SELECT pg_sleep(3)".into(),
    ]
}

/// What a replay must leave as it found.
fn state(ctx: &Ctx, file: &Path) -> String {
    let mut c = ctx.sql(DB);
    let one = |c: &mut postgres::Client, q: &str| -> String { c.query_one(q, &[]).unwrap().get(0) };
    format!(
        "rows {}, sequence {}, roles {}, slots {}, tables {}, log_statement {}, stats reset {}, \
         file {}",
        one(&mut c, "SELECT count(*)::text FROM victim"),
        one(
            &mut c,
            "SELECT last_value::text || is_called::text FROM seq1"
        ),
        one(
            &mut c,
            "SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles \
             WHERE rolname NOT LIKE 'dbtax_replay%'"
        ),
        one(&mut c, "SELECT count(*)::text FROM pg_replication_slots"),
        one(
            &mut c,
            "SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class \
             WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'"
        ),
        ctx.show("log_statement"),
        one(
            &mut c,
            "SELECT coalesce(stats_reset::text, 'never') FROM pg_stat_database \
             WHERE datname = current_database()"
        ),
        file.exists()
    )
}

fn set_up(ctx: &Ctx) {
    let mut admin = ctx.sql("postgres");
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {DB}"))
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {DB}"))
        .unwrap();
    ctx.sql(DB)
        .batch_execute(
            "CREATE TABLE victim (id int PRIMARY KEY, name text); \
             INSERT INTO victim SELECT g, 'row ' || g FROM generate_series(1, 50) g; \
             CREATE SEQUENCE seq1",
        )
        .unwrap();
}

/// A stderr log (`%m [%p] `): two sessions, the harmful statements among reads.
fn write_log(path: &Path, file: &Path) {
    let mut log = String::new();
    for (i, sql) in harmful(file).iter().enumerate() {
        let pid = 4100 + i % 2;
        let at = |k: usize| format!("2026-12-01 10:00:{:02}.{:03} UTC [{pid}]", i, k);
        log.push_str(&format!(
            "{} LOG:  statement: SELECT name FROM victim WHERE id = {}\n",
            at(100),
            i + 1
        ));
        log.push_str(&format!("{} LOG:  statement: {sql}\n", at(200)));
    }
    log.push_str(
        "2026-12-01 10:00:59.000 UTC [4100] LOG:  statement: SELECT count(*) FROM victim\n",
    );
    std::fs::write(path, log).unwrap();
}

pub(crate) fn a_replay_of_harmful_statements_changes_nothing(ctx: &Ctx) {
    set_up(ctx);
    let file = ctx.work.join("pwned-by-replay");
    let log = ctx.work.join("locks-postgresql.log");
    write_log(&log, &file);
    let before = state(ctx, &file);
    let out = ctx.work.join("pg-locks-replay");
    let args = super::replay::replay_args(ctx, DB, &log, "pg-locks-replay", &[]);
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(state(ctx, &file), before, "{}", text(&o));
    let v = validate_results(&out.join("results.json"));
    let read = &v["workload"]["replay"]["read"];
    let skipped = common::skipped_by_classifier(&v);
    assert_eq!(skipped, harmful(&file).len() as u64, "{read}");
    let readers: i64 = ctx
        .sql("postgres")
        .query_one(
            "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'dbtax_replay%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(readers, 0, "the temporary reader is left");
    assert_eq!(ctx.journals(), 0);
    println!(
        "harmful replay: {skipped} statements skipped by reason {}, state as found",
        read["skipped"]
    );
}

pub(crate) fn the_session_and_the_login_refuse_what_the_classifier_would_miss(ctx: &Ctx) {
    set_up(ctx);
    let file = ctx.work.join("pwned-by-session");
    let before = state(ctx, &file);
    let server = Server::open_for_clients(&TargetSpec::parse(&ctx.url(DB)).unwrap(), DB).unwrap();
    let (spec, reader) = common::test_reader(&server);
    // A backend the reader would like to end (as dbtax's admin connection is).
    let mut bystander = ctx.sql(DB);
    let mut refused = 0;
    for login in [Some(&reader), None] {
        let mut connection = server.client_dialer(login).dial().unwrap();
        let s = connection.session();
        dbtax::workload::replay::read_only(s).unwrap();
        if login.is_some() {
            // The login holds on its own: the session may even lift its read-only mode.
            s.statement("SET default_transaction_read_only = off")
                .unwrap();
        }
        for sql in harmful(&file) {
            let server_level = [
                "pg_sleep",
                "SET default_transaction",
                "pg_terminate_backend",
                "pg_create_physical",
                "pg_stat_reset",
                "ALTER SYSTEM",
                "CREATE ROLE",
                "TO PROGRAM",
                // PostgreSQL 15 runs a CREATE TABLE AS under EXPLAIN ANALYZE even in a
                // read-only transaction: only the login stops it.
                "EXPLAIN ANALYZE CREATE",
            ];
            // What only a superuser may do is the login's to refuse: the superuser in a
            // read-only session could, which is why a replay never logs in as one.
            if login.is_none() && server_level.iter().any(|w| sql.contains(w)) {
                continue;
            }
            if sql.contains("pg_sleep") || sql.starts_with("SET default") {
                continue;
            }
            if sql.starts_with("PREPARE p") {
                // Preparing changes nothing; executing it (next) must fail.
                s.statement(&sql).unwrap();
                continue;
            }
            match s.statement(&sql) {
                Err(e) => {
                    refused += 1;
                    assert!(!e.lost(), "{sql}: the session was lost: {e}");
                }
                Ok(()) if sql.contains("pg_terminate_backend") => {
                    // Ran, and ended nobody it may not signal.
                }
                Ok(()) => panic!("{sql} ran as {:?}", login.map(|l| &l.user)),
            }
        }
        assert_eq!(state(ctx, &file), before);
    }
    let alive: i32 = bystander.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(alive, 1, "a backend was terminated");
    server.admin().unwrap().drop_reader(&spec).unwrap();
    println!(
        "locks without the classifier: {refused} statements refused by the server, state as found"
    );
}

/// Issue 50, on PostgreSQL: a view owned by the DBA whose body calls a SECURITY DEFINER
/// function that creates a persistent replication slot, and the read-only mode lifted
/// through a quoted name. The replay leaves both out (counted by why), no slot is made, and
/// the dry run says what the locks do not cover.
pub(crate) fn definer_code_and_quoted_settings_do_not_get_past_the_locks(ctx: &Ctx) {
    let db = "t_pgprod";
    let _ = ctx
        .sql("postgres")
        .batch_execute(&format!("CREATE DATABASE {db}"));
    ctx.sql(db)
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, name text); \
             INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 20) g \
             ON CONFLICT DO NOTHING; \
             CREATE OR REPLACE FUNCTION make_slot() RETURNS int SECURITY DEFINER \
             LANGUAGE plpgsql AS $$ BEGIN \
             PERFORM pg_create_physical_replication_slot('dbtax_definer_slot'); \
             RETURN 1; EXCEPTION WHEN duplicate_object THEN RETURN 0; END $$; \
             CREATE OR REPLACE VIEW v_slot AS SELECT id, make_slot() AS s FROM items; \
             CREATE OR REPLACE VIEW v_plain AS SELECT id, name FROM items",
        )
        .unwrap();
    let mut log = String::new();
    let lines = [
        "SELECT name FROM items WHERE id = 3",
        "SELECT * FROM v_slot WHERE id = 1",
        "SELECT * FROM v_plain WHERE id = 4",
        "SET \"default_transaction_read_only\" = off",
    ];
    for (i, sql) in lines.iter().enumerate() {
        log.push_str(&format!(
            "2026-12-01 10:00:{i:02}.100 UTC [4200] LOG:  statement: {sql}\n"
        ));
    }
    let path = ctx.work.join("prod-postgresql.log");
    std::fs::write(&path, log).unwrap();
    let mut dry = super::replay::replay_args(ctx, db, &path, "pg-prod-dry", &[]);
    dry.push("--dry-run".into());
    let d = ctx.run(&dry);
    assert_eq!(d.status.code(), Some(0), "{}", text(&d));
    assert!(text(&d).contains("public.v_slot"), "{}", text(&d));
    assert!(text(&d).contains("do not cover"), "{}", text(&d));
    let o = ctx.run(&super::replay::replay_args(
        ctx,
        db,
        &path,
        "pg-prod-replay",
        &[],
    ));
    let slots: i64 = ctx
        .sql("postgres")
        .query_one(
            "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'dbtax_definer_slot'",
            &[],
        )
        .unwrap()
        .get(0);
    if slots > 0 {
        let _ = ctx
            .sql("postgres")
            .batch_execute("SELECT pg_drop_replication_slot('dbtax_definer_slot')");
    }
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(slots, 0, "the definer's code made a replication slot");
    let v = validate_results(&ctx.work.join("pg-prod-replay/results.json"));
    let skipped = &v["workload"]["replay"]["read"]["skipped"];
    assert_eq!(
        skipped["reaches code that runs with other rights"], 1,
        "{skipped}"
    );
    assert_eq!(
        skipped["could lift the session's read-only mode"], 1,
        "{skipped}"
    );
    assert_eq!(
        v["workload"]["replay"]["read"]["statements"], 2,
        "{skipped}"
    );
    println!("definer code on PostgreSQL: the view and the quoted setting left out, no slot made");
}

/// Issue 50: a temporary replay role that owns something when the run is killed (what
/// reached definer code could have made it) is dropped by `dbtax restore` after what it
/// owns, and every other step of the restore is done: it used to stop at DROP ROLE,
/// leaving the login and postgresql.auto.conf's entry, and to wait for "the server to
/// answer again".
pub(crate) fn a_restore_drops_what_the_temporary_role_owns(ctx: &Ctx) {
    let db = "t_pgprod";
    let conf = preset_auto_conf(ctx);
    let path = ctx.work.join("owned-postgresql.log");
    let mut log = String::new();
    for i in 0..40 {
        log.push_str(&format!(
            "2026-12-01 10:00:{:02}.{:03} UTC [4300] LOG:  statement: SELECT name FROM items \
             WHERE id = {}\n",
            i / 10,
            i % 10 * 100,
            i % 20 + 1
        ));
    }
    std::fs::write(&path, log).unwrap();
    let mut args = super::replay::replay_args(ctx, db, &path, "pg-owned", &[]);
    let at = args.iter().position(|a| a == "--repeats").unwrap();
    args[at + 1] = "30".into();
    let mut child = ctx
        .dbtax()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let role = || -> Option<String> {
        ctx.sql("postgres")
            .query_opt(
                "SELECT rolname::text FROM pg_roles WHERE rolname LIKE 'dbtax_replay%'",
                &[],
            )
            .unwrap()
            .map(|r| r.get(0))
    };
    let start = Instant::now();
    let name = loop {
        if let Some(r) = role().filter(|_| ctx.show("log_statement") == "all") {
            break r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "no temporary role"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    ctx.sql(db)
        .batch_execute(&format!(
            "CREATE TABLE owned_by_reader (x int); ALTER TABLE owned_by_reader OWNER TO \
             \"{name}\""
        ))
        .unwrap();
    let r = ctx.run(&["restore", "--target", &ctx.url(db)]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    assert!(text(&r).contains("DROP OWNED BY"), "{}", text(&r));
    assert_eq!(role(), None, "the temporary role is left");
    assert_eq!(ctx.show("log_statement"), "none");
    assert_eq!(ctx.auto_conf(), conf, "postgresql.auto.conf");
    assert_eq!(ctx.journals(), 0);
    println!("a temporary role that owned a table: dropped after what it owned, the rest restored");
}
