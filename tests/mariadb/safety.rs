//! The server is left as it was found: bad input changes nothing, Ctrl-C and kill -9 are
//! recovered from, the disk guard stops a run in time.

use super::*;

pub(crate) fn a_bad_out_directory_fails_before_anything_changes(ctx: &Ctx) {
    let blocker = ctx.file("not-a-dir", "a file where --out wants a directory");
    let out = blocker.join("results");
    let o = ctx.run(&ctx.run_args("t_badout", &["audit"], "1", "2", &out));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot create --out"),
        "{}",
        text(&o)
    );
    assert_eq!(
        ctx.count(
            "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'SERVER_AUDIT'"
        ),
        0,
        "the audit plugin was never installed"
    );
    assert_eq!(
        ctx.count(
            "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 't_badout'"
        ),
        0,
        "no schema was created"
    );
}

fn spawn_run(ctx: &Ctx, feature: &str, schema: &str, out: &Path) -> std::process::Child {
    ctx.dbtax()
        .args(ctx.run_args(schema, &[feature], "2", "50", out))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub(crate) fn ctrl_c_restores_settings_and_keeps_partial_results(ctx: &Ctx) {
    let out = ctx.out_dir("sigint");
    let mut child = spawn_run(ctx, "general-log", "t_sigint", &out);
    wait_for(
        "general_log to be switched on",
        Duration::from_secs(60),
        || ctx.var("general_log") == "1",
    );
    wait_for(
        "a first block in results.json",
        Duration::from_secs(60),
        || {
            std::fs::read_to_string(out.join("results.json"))
                .is_ok_and(|s| s.contains("\"trials\": [\n"))
        },
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_child(&mut child, Duration::from_secs(30));
    let o = child.wait_with_output().unwrap();
    assert_eq!(status, Some(130), "{}", text(&o));
    assert_eq!(
        ctx.var("general_log"),
        "0",
        "general_log restored after Ctrl-C"
    );
    let v = validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], false);
    assert!(!cell(&v, "off", 2)["trials"].as_array().unwrap().is_empty());
    assert_eq!(ctx.journals(), 0);
}

fn wait_child(child: &mut std::process::Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("dbtax did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn kill_9_then_restore_puts_settings_back(ctx: &Ctx) {
    ctx.set("long_query_time", "3");
    let out = ctx.out_dir("kill9");
    let mut child = spawn_run(ctx, "slow-log", "t_kill", &out);
    wait_for(
        "slow_query_log to be switched on",
        Duration::from_secs(60),
        || ctx.var("slow_query_log") == "1",
    );
    child.kill().unwrap(); // SIGKILL: no chance to restore
    child.wait().unwrap();
    assert_eq!(ctx.var("slow_query_log"), "1", "left on by the killed run");
    assert_eq!(ctx.journals(), 1);
    // A new run refuses to start over the pending journal, and changes nothing.
    let o = ctx.run(&[
        "run",
        "--target",
        &ctx.url("t_kill2"),
        "--feature",
        "general-log",
        "--threads",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("dbtax restore"),
        "{}",
        text(&o)
    );
    assert_eq!(ctx.var("general_log"), "0");
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 't_kill2'"),
        0,
        "refused before preparing any table"
    );
    let o = ctx.run(&["restore", "--target", &ctx.url("t_kill")]);
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("SET GLOBAL slow_query_log = OFF"),
        "{}",
        text(&o)
    );
    assert_eq!(ctx.var("slow_query_log"), "0");
    assert_eq!(ctx.var("long_query_time").parse::<f64>().unwrap(), 3.0);
    assert_eq!(ctx.journals(), 0);
    let o = ctx.run(&["restore", "--target", &ctx.url("t_kill")]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Nothing to restore"));
    ctx.set("long_query_time", "10");
}

pub(crate) fn a_user_without_privileges_gets_exit_2_and_nothing_changes(ctx: &Ctx) {
    let mut root = ctx.root();
    root.query_drop("CREATE USER IF NOT EXISTS 'weak'@'localhost' IDENTIFIED BY 'Pw-weak-1'")
        .unwrap();
    root.query_drop("CREATE DATABASE IF NOT EXISTS t_weak")
        .unwrap();
    root.query_drop("GRANT ALL ON t_weak.* TO 'weak'@'localhost'")
        .unwrap();
    let url = ctx.url_as("weak", "Pw-weak-1", "t_weak");
    for feature in ["general-log", "audit"] {
        let o = ctx.run(&[
            "run",
            "--target",
            &url,
            "--feature",
            feature,
            "--threads",
            "1",
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(stderr.contains("Nothing was changed"), "{stderr}");
        assert!(!stderr.contains("Pw-weak-1"), "password printed: {stderr}");
    }
    assert_eq!(ctx.var("general_log"), "0");
    assert_eq!(
        ctx.count("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 't_weak'"),
        0,
        "no tables prepared before the privilege check"
    );
}

pub(crate) fn a_wrong_password_gets_exit_2_without_echoing_it(ctx: &Ctx) {
    let o = ctx.run(&[
        "bench",
        "--target",
        &ctx.url_as("weak", "Xyzzy-wrong", "t_weak"),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr.contains("Access denied"), "{stderr}");
    assert!(!stderr.contains("Xyzzy-wrong"), "{stderr}");
}

pub(crate) fn the_disk_guard_stops_a_run_before_the_log_passes_its_limit(ctx: &Ctx) {
    let out = ctx.out_dir("guard");
    let mut args = ctx.run_args("t_guard", &["general-log"], "2", "20", &out);
    args.extend(["--max-log-bytes".to_string(), "20k".to_string()]);
    let o = ctx.run(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(stderr.contains("--max-log-bytes"), "{stderr}");
    assert_eq!(
        ctx.var("general_log"),
        "0",
        "restored after the guard stopped the run"
    );
    let v = validate_results(&out.join("results.json"));
    assert_eq!(v["complete"], false);
}
