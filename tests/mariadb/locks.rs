//! A replay must never change the server (issue 33): a log made of what an adversarial user
//! replayed (a statement wrapped in SET STATEMENT, a compound statement, a stored function
//! that deletes, sequences, executable comments read backwards, sleeps, a file written, a
//! grant, a shutdown, the read-only mode lifted, the run lock's connection killed) replayed
//! against a table, a sequence, the users, the settings and the files, whose state must be
//! the same after; and, with the classifier out of the way, the session and the login
//! refuse each of them on their own.

use super::*;
use dbtax::server::Server;
use dbtax::server::url::TargetSpec;

const DB: &str = "t_locks";

/// The statements that must not run, with what each would do.
fn harmful(file: &Path) -> Vec<String> {
    let f = file.display();
    [
        "SET STATEMENT max_statement_time=10 FOR DELETE FROM t_locks.victim".to_string(),
        "BEGIN NOT ATOMIC DELETE FROM t_locks.victim; END".into(),
        "SELECT t_locks.f_del()".into(),
        "DO t_locks.f_del()".into(),
        "DO NEXTVAL(t_locks.seq1)".into(),
        "SELECT NEXT VALUE FOR t_locks.seq1".into(),
        "/*!99999 SELECT */ DROP TABLE t_locks.victim".into(),
        "/*!99999 SELECT */ SET GLOBAL max_connections=77".into(),
        "/*!99999 SELECT */ GRANT ALL ON *.* TO 'pwn2'@'localhost' IDENTIFIED BY 'x'".into(),
        "SELECT 1 /*M!100000 , t_locks.f_del() */".into(),
        "DO SLEEP(3)".into(),
        format!("SELECT * FROM t_locks.victim INTO OUTFILE '{f}'"),
        "SET SESSION TRANSACTION READ WRITE".into(),
        "SELECT 1; DELETE FROM t_locks.victim".into(),
        "CALL t_locks.p_del()".into(),
        "BEGIN NOT ATOMIC DECLARE c BIGINT DEFAULT IS_USED_LOCK('dbtax.run'); IF c IS NOT NULL THEN KILL c; END IF; END".into(),
        "SET GLOBAL long_query_time = 1".into(),
        "/*!99999 SHOW */ SHUTDOWN".into(),
    ]
    .to_vec()
}

/// The state a replay must leave as it found: rows, the sequence, users, settings, files.
fn state(ctx: &Ctx, file: &Path) -> String {
    let mut root = ctx.root();
    let rows: Option<u64> = root
        .query_first("SELECT COUNT(*) FROM t_locks.victim")
        .unwrap();
    let seq: Option<u64> = root
        .query_first("SELECT next_not_cached_value FROM t_locks.seq1")
        .unwrap();
    let users: Vec<String> = root
        .query("SELECT CONCAT(User, '@', Host) FROM mysql.user WHERE User NOT LIKE 'dbtax_replay%' ORDER BY 1")
        .unwrap();
    let settings: Vec<String> = root
        .query("SELECT CONCAT(@@max_connections, ' ', @@long_query_time, ' ', @@general_log)")
        .unwrap();
    format!(
        "rows {rows:?}, sequence {seq:?}, users {users:?}, settings {settings:?}, file {}",
        file.exists()
    )
}

fn set_up(ctx: &Ctx) {
    let mut root = ctx.root();
    for sql in [
        "DROP DATABASE IF EXISTS t_locks",
        "CREATE DATABASE t_locks",
        "USE t_locks",
        "CREATE TABLE t_locks.victim (id INT PRIMARY KEY, name VARCHAR(20))",
        "INSERT INTO t_locks.victim SELECT seq, CONCAT('row ', seq) FROM seq_1_to_50",
        "CREATE SEQUENCE t_locks.seq1",
        "CREATE FUNCTION t_locks.f_del() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM t_locks.victim; RETURN 1; END",
        "CREATE PROCEDURE t_locks.p_del() BEGIN DELETE FROM t_locks.victim; END",
    ] {
        root.query_drop(sql).unwrap();
    }
}

/// A general log: two sessions, the harmful statements among reads.
fn write_log(path: &Path, file: &Path) {
    let mut log = String::from(
        "/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-0+deb12u1-log (Debian 12). started with:\n\
         Tcp port: 0  Unix socket: /tmp/x/mysqld.sock\n\
         Time\t\t    Id Command\tArgument\n\
         261201 10:00:00\t    5 Connect\troot@localhost on t_locks using Socket\n\
         \t\t    6 Connect\troot@localhost on t_locks using Socket\n",
    );
    for (i, sql) in harmful(file).iter().enumerate() {
        let id = 5 + i % 2;
        log.push_str(&format!(
            "\t\t    {id} Query\tSELECT name FROM victim WHERE id = {}\n",
            i + 1
        ));
        log.push_str(&format!("\t\t    {id} Query\t{sql}\n"));
    }
    log.push_str("\t\t    5 Query\tSELECT COUNT(*) FROM victim\n");
    std::fs::write(path, log).unwrap();
}

pub(crate) fn a_replay_of_harmful_statements_changes_nothing(ctx: &Ctx) {
    set_up(ctx);
    let file = ctx.work.join("locks-outfile.txt");
    let log = ctx.work.join("locks-general.log");
    write_log(&log, &file);
    let before = state(ctx, &file);
    let out = ctx.work.join("locks-replay");
    let mut args = ctx.run_args(DB, &["general-log"], "2", "3", &out);
    args.extend(
        [
            "--log",
            &log.display().to_string(),
            "--replay-user",
            "temporary",
        ]
        .map(String::from),
    );
    let o = ctx.run(&args);
    ok(&o);
    assert_eq!(state(ctx, &file), before, "{}", text(&o));
    let v = validate_results(&out.join("results.json"));
    let read = &v["workload"]["replay"]["read"];
    let skipped = common::skipped_by_classifier(&v);
    assert_eq!(skipped, harmful(&file).len() as u64, "{read}");
    assert_eq!(
        read["statements"],
        harmful(&file).len() as u64 + 1,
        "{read}"
    );
    // The temporary reader is gone, and nothing is journaled.
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'dbtax_replay%'"),
        0
    );
    assert_eq!(ctx.journals(), 0);
    println!(
        "harmful replay: {skipped} statements skipped by reason {}, the table, sequence, users, \
         settings and files as found",
        read["skipped"]
    );
}

/// With the classifier out of the way (each statement sent as a replaying client sends
/// one), the session's read-only mode and the reading login each refuse what would change
/// something: first the login alone (after the session lifted its own read-only mode), then
/// the session alone (as root, who may do anything).
pub(crate) fn the_session_and_the_login_refuse_what_the_classifier_would_miss(ctx: &Ctx) {
    set_up(ctx);
    let file = ctx.work.join("locks-outfile-2.txt");
    let before = state(ctx, &file);
    let server = Server::open_for_clients(&TargetSpec::parse(&ctx.url(DB)).unwrap(), DB).unwrap();
    let (spec, reader) = common::test_reader(&server);
    let changing: Vec<String> = harmful(&file)
        .into_iter()
        .filter(|s| !s.contains("SLEEP") && !s.starts_with("SET SESSION TRANSACTION"))
        .collect();
    // A run holds the lock, as dbtax's admin connection does: the reader cannot kill it.
    let mut run_lock = ctx.root();
    let got: Option<i64> = run_lock
        .query_first("SELECT GET_LOCK('dbtax.run', 0)")
        .unwrap();
    assert_eq!(got, Some(1));
    let mut refused = 0;
    for login in [Some(&reader), None] {
        let mut connection = server.client_dialer(login).dial().unwrap();
        let s = connection.session();
        dbtax::workload::replay::read_only(s).unwrap();
        if login.is_some() {
            // The login holds on its own: the session may even lift its read-only mode.
            s.statement("SET SESSION TRANSACTION READ WRITE").unwrap();
        }
        for sql in &changing {
            let server_level = ["SHUTDOWN", "GLOBAL", "GRANT", "KILL", "OUTFILE"];
            if login.is_none() && server_level.iter().any(|w| sql.contains(w)) {
                // Server statements are the login's to refuse: root in a read-only
                // session could run them, which is why a replay never logs in as root.
                continue;
            }
            match s.statement(sql) {
                Err(e) => {
                    refused += 1;
                    assert!(!e.lost(), "{sql}: the session was lost: {e}");
                }
                Ok(()) => panic!("{sql} ran as {:?}", login.map(|l| &l.user)),
            }
        }
        assert_eq!(state(ctx, &file), before);
    }
    let held: Option<i64> = run_lock
        .query_first("SELECT IS_USED_LOCK('dbtax.run') = CONNECTION_ID()")
        .unwrap();
    assert_eq!(held, Some(1), "the run lock's connection was killed");
    drop(run_lock);
    server.admin().unwrap().drop_reader(&spec).unwrap();
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'dbtax_replay%'"),
        0
    );
    println!(
        "locks without the classifier: {refused} statements refused by the server, state as found"
    );
}

/// Issue 50: what production's code and settings bypassed, each on this real server. A
/// view with its definer's rights whose body calls a function that sets a global variable;
/// a lock taken inside what the lexer took for a string, which ANSI_QUOTES makes code; the
/// read-only mode lifted through `@@` spellings. The replay leaves each out, counted by why,
/// and the server is as found: the global variable, no lock ever taken (watched while the
/// replay runs), the dry run says what the locks do not cover.
pub(crate) fn production_code_and_sql_modes_do_not_get_past_the_locks(ctx: &Ctx) {
    let mut root = ctx.root();
    for sql in [
        "DROP DATABASE IF EXISTS t_prod",
        "CREATE DATABASE t_prod",
        "USE t_prod",
        "CREATE TABLE t_prod.items (id INT PRIMARY KEY, name VARCHAR(20))",
        "INSERT INTO t_prod.items SELECT seq, CONCAT('item ', seq) FROM seq_1_to_20",
        "CREATE DEFINER = root@localhost FUNCTION t_prod.f_bump() RETURNS INT SQL SECURITY \
         DEFINER BEGIN SET GLOBAL max_connections = 91; RETURN 1; END",
        "CREATE DEFINER = root@localhost SQL SECURITY DEFINER VIEW t_prod.v_bump AS \
         SELECT id, t_prod.f_bump() AS b FROM t_prod.items",
        "CREATE VIEW t_prod.v_plain AS SELECT id, name FROM t_prod.items",
    ] {
        root.query_drop(sql).unwrap();
    }
    let max_before: String = common::global_var(&ctx.socket, "max_connections");
    let mode_before: String = common::global_var(&ctx.socket, "sql_mode");
    root.query_drop("SET GLOBAL sql_mode = 'ANSI_QUOTES'")
        .unwrap();
    let reads = [
        "SELECT name FROM t_prod.items WHERE id = 3",
        "SELECT * FROM t_prod.v_plain WHERE id = 4",
    ];
    let harmful = [
        "SELECT * FROM t_prod.v_bump WHERE id = 1",
        "SELECT 1 AS \"\\\", GET_LOCK('t_prod_lock', 0), '\\'' -- \" FROM t_prod.items",
        "SET @@tx_read_only = 0",
        "SET @@SESSION.`transaction_read_only` = 0",
    ];
    let mut log = String::from(
        "/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-0+deb12u1-log (Debian 12). started with:\n\
         Tcp port: 0  Unix socket: /tmp/x/mysqld.sock\n\
         Time\t\t    Id Command\tArgument\n\
         261201 10:00:00\t    5 Connect\troot@localhost on t_prod using Socket\n",
    );
    for (i, sql) in harmful.iter().enumerate() {
        log.push_str(&format!("\t\t    5 Query\t{}\n", reads[i % 2]));
        log.push_str(&format!("\t\t    5 Query\t{sql}\n"));
    }
    let path = ctx.work.join("prod-general.log");
    std::fs::write(&path, log).unwrap();
    let out = ctx.work.join("prod-replay");
    let mut args = ctx.run_args(DB, &["general-log"], "2", "3", &out);
    args.extend(
        [
            "--log",
            &path.display().to_string(),
            "--replay-user",
            "temporary",
        ]
        .map(String::from),
    );
    let mut dry = args.clone();
    dry.push("--dry-run".into());
    let d = ctx.run(&dry);
    // A watcher: the named lock must never be taken, by any session.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (stop, socket) = (stop.clone(), ctx.socket.clone());
        std::thread::spawn(move || {
            let mut c = common::root(&socket);
            let mut taken = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let held: Option<Option<u64>> =
                    c.query_first("SELECT IS_USED_LOCK('t_prod_lock')").unwrap();
                if held.flatten().is_some() {
                    taken += 1;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            taken
        })
    };
    let o = ctx.run(&args);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let taken = watcher.join().unwrap();
    let max_after: String = common::global_var(&ctx.socket, "max_connections");
    root.query_drop(format!("SET GLOBAL sql_mode = '{mode_before}'"))
        .unwrap();
    root.query_drop(format!("SET GLOBAL max_connections = {max_before}"))
        .unwrap();
    ok(&d);
    let dry_text = text(&d);
    assert!(
        dry_text.contains("that reaches code on the server"),
        "{dry_text}"
    );
    assert!(dry_text.contains("t_prod.v_bump"), "{dry_text}");
    assert!(dry_text.contains("do not cover"), "{dry_text}");
    ok(&o);
    assert_eq!(max_after, max_before, "the view's definer code ran");
    assert_eq!(taken, 0, "the named lock was taken {taken} times");
    let v = validate_results(&out.join("results.json"));
    let skipped = &v["workload"]["replay"]["read"]["skipped"];
    assert_eq!(
        skipped["reaches code that runs with other rights"], 1,
        "{skipped}"
    );
    assert_eq!(skipped["takes a lock"], 1, "{skipped}");
    assert_eq!(
        skipped["could lift the session's read-only mode"], 2,
        "{skipped}"
    );
    assert_eq!(
        v["workload"]["replay"]["read"]["statements"], 4,
        "{skipped}"
    );
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'dbtax_replay%'"),
        0
    );
    println!(
        "production's code: a definer view, ANSI_QUOTES, @@ spellings all left out: {skipped}"
    );
}
