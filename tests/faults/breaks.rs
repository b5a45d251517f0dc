//! What an adversarial user broke (issue 21), one scenario each, against the suite's own
//! MariaDB: a false claim from a setting that governs more than its feature, contradictory
//! or refused values caught before any change, journals that must fall back or refuse, a
//! plugin of the user's left alone, the disk guard through a link, output to a closed pipe,
//! Ctrl-C on a frozen server.

use super::*;

/// A toml experiment file in the work folder.
fn experiment_file(ctx: &Ctx, name: &str, text: &str) -> String {
    let p = ctx.work.join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The user's general log is on and writes to a table; the slow log needs log_output =
/// FILE. Held in every variant (the baseline too), the general log writes to its file in
/// all of them alike, and the plan says so: the slow log's variant does not also move the
/// general log (which made it look 49% faster than its baseline).
pub fn slow_log_holds_log_output_in_every_variant(ctx: &Ctx) {
    let mut root = ctx.root();
    root.query_drop("SET GLOBAL general_log = ON").unwrap();
    let originals = ctx.originals();
    assert_eq!(ctx.var("log_output"), "TABLE");
    let out = ctx.work.join("held");
    let mut args = common::run_args(&ctx.socket_url("f_held"), &["slow-log"], "2", "3", &out);
    args.push("--dry-run".into());
    let dry = ctx.run(&args);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry));
    let plan = String::from_utf8_lossy(&dry.stdout);
    assert!(
        plan.contains("log_output = FILE throughout the run"),
        "{plan}"
    );
    let baseline = plan
        .split("Variant off (baseline):")
        .nth(1)
        .and_then(|s| s.split("Variant ").next())
        .unwrap_or("");
    assert!(
        baseline.contains("SET GLOBAL log_output = 'FILE'"),
        "{plan}"
    );
    args.pop();
    let o = ctx.run(&args);
    root.query_drop("SET GLOBAL general_log = OFF").unwrap();
    root.query_drop("TRUNCATE mysql.general_log").unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = common::validate_results(&out.join("results.json"));
    for variant in v["variants"].as_array().unwrap() {
        assert_eq!(variant["settings"]["log_output"], "FILE", "{variant}");
    }
    let mut restored = originals.clone();
    for (k, val) in restored.iter_mut() {
        if k == "general_log" {
            *val = "0".into();
        }
    }
    ctx.as_found(&restored).unwrap();
    println!("held setting: log_output = FILE in every variant, the plan says so, put back");
}

/// `feature = "general-log"` with `set = { general_log = "OFF" }` would measure nothing and
/// be worded as "no measurable cost": refused, exit 2, nothing changed.
pub fn a_variant_that_undoes_its_feature_is_refused(ctx: &Ctx) {
    let originals = ctx.originals();
    let f = experiment_file(
        ctx,
        "undo",
        "[[variant]]\nname = \"off\"\n[[variant]]\nname = \"on\"\nfeature = \"general-log\"\n\
         set = { general_log = \"OFF\" }\n",
    );
    let o = ctx.run(&[
        "run".into(),
        f,
        "--target".into(),
        ctx.socket_url("f_undo"),
        "--threads".into(),
        "2".into(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("undoes it"), "{err}");
    ctx.as_found(&originals).unwrap();
    println!("contradictory variant: refused, exit 2");
}

/// Values and limits the server would refuse mid-run are refused before the first change:
/// a value outside a setting's list, more threads than the server has connections left, an
/// output folder that cannot be written, a schema of the server's own.
pub fn values_the_server_would_refuse_are_bad_input(ctx: &Ctx) {
    let originals = ctx.originals();
    let run = |args: Vec<String>| {
        let o = ctx.run(&args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        ctx.as_found(&originals).unwrap();
        assert_eq!(ctx.journals(), 0);
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let f = experiment_file(
        ctx,
        "nowhere",
        "[[variant]]\nname = \"off\"\n[[variant]]\nname = \"nowhere\"\n\
         set = { log_output = \"NOWHERE\" }\n",
    );
    let err = run(vec![
        "run".into(),
        f,
        "--target".into(),
        ctx.socket_url("f_bad"),
        "--threads".into(),
        "2".into(),
    ]);
    assert!(err.contains("NONE, FILE, TABLE"), "{err}");
    // 300 threads on a server that allows 151 connections.
    let mut root = ctx.root();
    let max: Option<u64> = root.query_first("SELECT @@max_connections").unwrap();
    root.query_drop("SET GLOBAL max_connections = 151").unwrap();
    let out = ctx.work.join("many");
    let err = run(common::run_args(
        &ctx.socket_url("f_bad"),
        &["slow-log"],
        "300",
        "2",
        &out,
    ));
    root.query_drop(format!("SET GLOBAL max_connections = {}", max.unwrap()))
        .unwrap();
    assert!(err.contains("allows 151"), "{err}");
    // dbtax's tables in the server's own schema.
    let err = run([
        common::run_args(&ctx.socket_url(""), &["slow-log"], "2", "2", &out),
        vec!["--schema".into(), "mysql".into()],
    ]
    .concat());
    assert!(err.contains("the server's own schema"), "{err}");
    let in_mysql: Option<u64> = root
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mysql' \
             AND TABLE_NAME IN ('sbtest1', 'dbtax_journal')",
        )
        .unwrap();
    assert_eq!(in_mysql, Some(0));
    // An --out folder that exists and cannot be written (root writes through 0555: a
    // read-only mount).
    let ro = ctx.work.join("read-only");
    match mount_tmpfs(&ro, "ro,size=1m") {
        Ok(()) => {
            let err = run(common::run_args(
                &ctx.socket_url("f_bad"),
                &["slow-log"],
                "2",
                "2",
                &ro,
            ));
            let _ = Command::new("umount").arg(&ro).status();
            assert!(err.contains("cannot write results"), "{err}");
        }
        Err(why) => println!("  read-only --out: SKIPPED, {why}"),
    }
    println!("bad values, too many threads, a system schema, a read-only --out: exit 2, unchanged");
}

/// Killed -9 with its journal written; then the local journal file is damaged. `restore`
/// uses the copy kept on the server and says so; `restore --list` names the damaged file
/// and tells an interrupted run from a live one.
pub fn a_damaged_local_journal_falls_back_to_the_servers_copy(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("damaged");
    let args = common::run_args(&ctx.socket_url("f_damaged"), &["slow-log"], "2", "30", &out);
    let mut child = ctx.spawn(&args);
    wait_for("the slow log to be on", Duration::from_secs(60), || {
        ctx.var("slow_query_log") == "1"
    });
    let live = ctx.run(&["restore".into(), "--list".into()]);
    let live = String::from_utf8_lossy(&live.stdout).into_owned();
    assert!(live.contains("a run in progress"), "{live}");
    child.kill().unwrap();
    child.wait().unwrap();
    let list = ctx.run(&["restore".into(), "--list".into()]);
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(list.contains("interrupted: `dbtax restore"), "{list}");
    let file = std::fs::read_dir(ctx.state_dir.join("journal"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the killed run's journal");
    std::fs::write(&file, "{\"target\": \"mysql://").unwrap();
    let list = ctx.run(&["restore".into(), "--list".into()]);
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(list.contains("damaged"), "{list}");
    let r = ctx.restore();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let said = String::from_utf8_lossy(&r.stdout);
    assert!(
        said.contains("is damaged") && said.contains("copy kept on the server"),
        "{said}"
    );
    ctx.as_found(&originals).unwrap();
    println!("damaged local journal: restored from the server's copy, and said so");
}

/// Root's run in its schema is killed -9; user `half` can see that schema's journal table
/// but not read it, and would have run (and journaled) on a server with root's settings
/// left: refused, naming the table. (A user with no privilege at all on that schema cannot
/// even see it on MySQL-family servers; docs/safety.md says so.)
pub fn a_journal_table_the_user_cannot_read_is_refused(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("half-root");
    let args = common::run_args(&ctx.socket_url("f_prep1"), &["slow-log"], "2", "30", &out);
    let mut child = ctx.spawn(&args);
    wait_for("the slow log to be on", Duration::from_secs(60), || {
        ctx.var("slow_query_log") == "1"
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let mut root = ctx.root();
    for sql in [
        "DROP USER IF EXISTS 'half'@'localhost'",
        "CREATE USER 'half'@'localhost'",
        "GRANT SUPER ON *.* TO 'half'@'localhost'",
        "GRANT ALL ON f_half.* TO 'half'@'localhost'",
        "GRANT INSERT ON f_prep1.* TO 'half'@'localhost'",
    ] {
        root.query_drop(sql).unwrap();
    }
    let other_state = ctx.work.join("half-state");
    let target = format!(
        "mysql://half@localhost/f_half?socket={}",
        ctx.socket.display()
    );
    let o = common::dbtax(&other_state)
        .args(common::run_args(
            &target,
            &["general-log"],
            "2",
            "2",
            &ctx.work.join("half"),
        ))
        .output()
        .unwrap();
    root.query_drop("DROP USER 'half'@'localhost'").unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("f_prep1.dbtax_journal"), "{err}");
    assert_eq!(ctx.var("general_log"), "0", "half changed nothing");
    let r = ctx.restore();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    ctx.as_found(&originals).unwrap();
    println!("an unreadable journal table: refused, naming it");
}

/// The user's server_audit plugin is installed but disabled (`--server-audit=OFF` at
/// start): it is theirs. `run --feature audit` is refused, and the plugin's row in
/// mysql.plugin is still there.
pub fn a_disabled_plugin_of_the_user_is_left_alone(ctx: &Ctx) {
    let originals = ctx.originals();
    let registered = || -> u64 {
        ctx.root()
            .query_first("SELECT COUNT(*) FROM mysql.plugin WHERE name = 'SERVER_AUDIT'")
            .unwrap()
            .unwrap_or(0)
    };
    ctx.root()
        .query_drop("INSTALL SONAME 'server_audit'")
        .unwrap();
    ctx.server
        .lock()
        .unwrap()
        .process()
        .restart(&["server-audit=OFF".into()])
        .unwrap();
    assert_eq!(registered(), 1);
    let out = ctx.work.join("disabled");
    let o = ctx.run(&common::run_args(
        &ctx.socket_url("f_plugin"),
        &["audit"],
        "2",
        "2",
        &out,
    ));
    let still = registered();
    ctx.server.lock().unwrap().process().restart(&[]).unwrap();
    ctx.root()
        .query_drop("UNINSTALL SONAME 'server_audit'")
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("installed on this server but"), "{err}");
    assert_eq!(still, 1, "the user's plugin was removed");
    ctx.as_found(&originals).unwrap();
    println!("a disabled plugin of the user's: refused, left installed");
}

/// general_log_file is a link into an 8 MB tmpfs: the guard watches the filesystem the
/// bytes land on, not the link's.
pub fn the_disk_guard_follows_a_symlinked_log(ctx: &Ctx) {
    let mnt = ctx.work.join("small-linked");
    if let Err(why) = mount_tmpfs(&mnt, "size=8m") {
        println!("linked disk guard: SKIPPED, {why}");
        return;
    }
    let links = ctx.work.join("links");
    std::fs::create_dir_all(&links).unwrap();
    let link = links.join("general.log");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(mnt.join("general.log"), &link).unwrap();
    let out = ctx.work.join("linked-disk");
    let peak = guarded_run(ctx, &link, &mnt, &out, "f_link");
    println!("linked log: stopped at {peak:.1}% of the 8 MB filesystem it lands on");
}

/// `dbtax run … 2>&1 | head -2`: stdout and stderr closed under a run. No panic (exit 101):
/// the run finishes, restores and writes its results as if someone were reading.
pub fn a_closed_output_never_panics(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("closed");
    let mut child = ctx.spawn(&common::run_args(
        &ctx.socket_url("f_closed"),
        &["slow-log"],
        "2",
        "2",
        &out,
    ));
    // Read two lines of stderr, as `head -2` would, then close both pipes.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    for _ in 0..2 {
        let _ = std::io::BufRead::read_line(&mut err, &mut line);
    }
    drop(err);
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "exit {status:?} after: {line}");
    let v = common::validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], true);
    ctx.as_found(&originals).unwrap();
    println!("closed stdout and stderr: no panic, complete results, settings back");
}

/// The server is frozen (SIGSTOP) mid-run and Ctrl-C comes 2 s later: dbtax does not wait
/// for its workers or for the frozen server without bound; it says what it could not put
/// back and how to finish. Once the server runs again, `dbtax restore` does.
pub fn ctrl_c_on_a_frozen_server_ends_in_bounded_time(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("frozen");
    let args = common::run_args(&ctx.socket_url("f_frozen"), &["slow-log"], "2", "30", &out);
    let child = ctx.spawn(&args);
    wait_for("the slow log to be on", Duration::from_secs(60), || {
        ctx.var("slow_query_log") == "1"
    });
    let pid = ctx.server.lock().unwrap().pid().unwrap() as i32;
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(2));
    let start = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = wait_child(child, Duration::from_secs(120));
    let took = start.elapsed();
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        took < Duration::from_secs(75),
        "Ctrl-C took {took:?}: {stderr}"
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(stderr.contains("were not restored"), "{stderr}");
    assert!(stderr.contains("slow_query_log"), "{stderr}");
    assert!(stderr.contains("dbtax restore --target"), "{stderr}");
    let r = ctx.restore();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    ctx.as_found(&originals).unwrap();
    println!(
        "Ctrl-C on a frozen server: ended after {:.1} s, said what was left, restored later",
        took.as_secs_f64()
    );
}

/// The state directory is a full filesystem: the first journal write fails before any
/// change, names the journal and leaves no temporary file.
pub fn a_full_state_directory_names_the_journal(ctx: &Ctx) {
    let originals = ctx.originals();
    let full = ctx.work.join("full-state");
    if let Err(why) = mount_tmpfs(&full, "size=64k") {
        println!("full state directory: SKIPPED, {why}");
        return;
    }
    std::fs::create_dir_all(full.join("journal")).unwrap();
    // Fill it: a file as large as the filesystem lets it be.
    let filler = vec![0u8; 4096];
    if let Ok(mut f) = std::fs::File::create(full.join("filler")) {
        use std::io::Write;
        while f.write_all(&filler).is_ok() {}
    }
    let o = common::dbtax(&full)
        .args(common::run_args(
            &ctx.socket_url("f_full"),
            &["slow-log"],
            "2",
            "2",
            &ctx.work.join("full"),
        ))
        .output()
        .unwrap();
    let tmp_left = std::fs::read_dir(full.join("journal"))
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"));
    let _ = Command::new("umount").arg(&full).status();
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("writing the journal"), "{err}");
    assert!(!tmp_left, "a temporary journal file was left");
    ctx.as_found(&originals).unwrap();
    println!("full state directory: refused before any change, the journal named");
}

/// A panic in the middle of a run (the suite's injected one, after the warm-up round, with
/// the general and slow logs switched on and off by then): the settings come back, the
/// journal is closed, and the user reads one paragraph saying it is a bug and that the
/// server was put back, exit 1, no backtrace.
pub fn a_panic_mid_run_restores_the_server_and_says_it_is_a_bug(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("panic");
    let args = common::run_args(
        &ctx.socket_url("f_panic"),
        &["general-log", "slow-log"],
        "2",
        "3",
        &out,
    );
    let o = ctx
        .dbtax()
        .args(&args)
        .env("DBTAX_TEST_PANIC_AT_TRIAL", "4")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(err.contains("stopped on a bug"), "{err}");
    assert!(err.contains("injected panic before trial 5"), "{err}");
    assert!(
        err.contains("were put back and its journal closed"),
        "{err}"
    );
    assert!(
        !err.contains("panicked at") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    ctx.as_found(&originals).unwrap();
    println!("panic mid-run: exit 1, one paragraph, settings as found");
}

/// The run lock's connection killed mid-run (as a replayed `KILL IS_USED_LOCK('dbtax.run')`
/// would have): the words say the admin connection was killed, not that the server went
/// away; the run stops, exit 1, and the settings come back.
pub fn a_killed_admin_connection_is_said_as_killed(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("killed-admin");
    let args = common::run_args(&ctx.socket_url("f_killed"), &["slow-log"], "2", "30", &out);
    let child = ctx.spawn(&args);
    wait_for("the slow log on", Duration::from_secs(90), || {
        ctx.var("slow_query_log") == "1"
    });
    let id: Option<u64> = ctx
        .root()
        .query_first("SELECT IS_USED_LOCK('dbtax.run')")
        .unwrap();
    ctx.root()
        .query_drop(format!(
            "KILL CONNECTION {}",
            id.expect("the run holds its lock")
        ))
        .unwrap();
    let o = wait_child(child, Duration::from_secs(90));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(err.contains("admin connection"), "{err}");
    assert!(err.contains("was killed"), "{err}");
    assert!(!err.contains("the server went away"), "{err}");
    ctx.as_found(&originals).unwrap();
    println!("killed admin connection: said as killed, exit 1, settings as found");
}
