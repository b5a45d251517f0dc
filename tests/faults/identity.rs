//! Two MariaDB servers that look alike: same host name, no TCP port (`--skip-networking`),
//! the same datadir path, each in a mount namespace of its own with a tmpfs at that path.
//! Their host name + port + datadir is the same, so a journal keyed by it would be applied to
//! the wrong one. dbtax stamps each with an id of its own before its first change: a run
//! killed on A leaves nothing to restore on B, and a journal file of A's put where B's would
//! be is refused, naming both.

use super::*;

/// A server started in its own mount namespace: `unshare -m` mounts a tmpfs at `shared`,
/// initializes a datadir there and execs mariadbd (the pid is the server's).
struct Twin {
    child: Child,
    socket: PathBuf,
}

impl Twin {
    fn start(shared: &Path, socket: PathBuf, log: &Path) -> Twin {
        let script = format!(
            "mount -t tmpfs -o size=400m tmpfs {dir} && \
             mariadb-install-db --no-defaults --datadir={dir}/data --user=root \
             --auth-root-authentication-method=normal --skip-test-db >{log} 2>&1 && \
             exec mariadbd --no-defaults --datadir={dir}/data --socket={sock} \
             --skip-networking --user=root --innodb-buffer-pool-size=64M \
             --log-error={dir}/error.log",
            dir = shared.display(),
            log = log.display(),
            sock = socket.display()
        );
        let child = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare (util-linux)");
        let twin = Twin { child, socket };
        wait_for("a twin server to answer", Duration::from_secs(90), || {
            twin.socket.exists() && mysql::Conn::new(twin.opts()).is_ok()
        });
        twin
    }

    fn opts(&self) -> mysql::OptsBuilder {
        mysql::OptsBuilder::new()
            .user(Some("root"))
            .socket(Some(self.socket.to_string_lossy().into_owned()))
    }

    fn url(&self, schema: &str) -> String {
        format!(
            "mysql://root@localhost/{schema}?socket={}",
            self.socket.display()
        )
    }

    fn var(&self, name: &str) -> String {
        let v: Option<String> = mysql::Conn::new(self.opts())
            .unwrap()
            .query_first(format!("SELECT @@GLOBAL.{name}"))
            .unwrap();
        v.unwrap_or_default()
    }

    fn set(&self, sql: &str) {
        mysql::Conn::new(self.opts())
            .unwrap()
            .query_drop(sql)
            .unwrap();
    }
}

impl Drop for Twin {
    fn drop(&mut self) {
        // By its pid: mariadbd (exec'd by the namespace's shell); its tmpfs goes with it.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

pub fn a_journal_is_never_applied_to_another_server(ctx: &Ctx) {
    let shared = ctx.work.join("same-datadir");
    std::fs::create_dir_all(&shared).unwrap();
    let probe = Command::new("unshare").args(["-m", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        println!("identity: SKIPPED, no mount namespaces here");
        return;
    }
    let a = Twin::start(
        &shared,
        ctx.work.join("twin-a.sock"),
        &ctx.work.join("twin-a.log"),
    );
    let b = Twin::start(
        &shared,
        ctx.work.join("twin-b.sock"),
        &ctx.work.join("twin-b.log"),
    );
    let same = |name: &str| a.var(name) == b.var(name);
    assert!(
        same("hostname") && same("port") && same("datadir"),
        "the twins look alike"
    );
    a.set("SET GLOBAL long_query_time = 4");
    b.set("SET GLOBAL long_query_time = 7");
    let state = ctx.work.join("twin-state");
    let dbtax = || common::dbtax(&state);
    // Killed -9 on A, with the slow log on.
    let mut args = common::run_args(
        &a.url("t_twin"),
        &["slow-log"],
        "2",
        "30",
        &ctx.work.join("twin-a"),
    );
    // The twins' files are in their own mount namespaces: dbtax cannot watch the slow log
    // there, and must be told that this is accepted.
    args.push("--unguarded-logs".into());
    let mut child = dbtax()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the slow log on A", Duration::from_secs(90), || {
        a.var("slow_query_log") == "1"
    });
    child.kill().unwrap();
    child.wait().unwrap();
    // B has nothing to restore: A's journal is not B's.
    let r = dbtax()
        .args(["restore", "--target", &b.url("")])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("Nothing to restore"),
        "{}",
        text(&r)
    );
    assert_eq!(b.var("long_query_time"), "7.000000", "B got A's journal");
    // B stamped by a short run of its own; A's journal copied where B's would be: refused.
    let o = dbtax()
        .args(common::run_args(
            &b.url("t_twin"),
            &["general-log"],
            "1",
            "2",
            &ctx.work.join("twin-b"),
        ))
        .arg("--unguarded-logs")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let id: Option<String> = mysql::Conn::new(b.opts())
        .unwrap()
        .query_first("SELECT id FROM t_twin.dbtax_identity")
        .unwrap();
    let key: String = format!("mysql-dbtax-{}", id.expect("B's stamp"))
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let journals = state.join("journal");
    let a_journal = std::fs::read_dir(&journals)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("A's journal");
    let b_path = journals.join(format!("{key}.json"));
    std::fs::copy(&a_journal, &b_path).unwrap();
    let r = dbtax()
        .args(["restore", "--target", &b.url("")])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("was written for server"), "{err}");
    assert_eq!(b.var("long_query_time"), "7.000000");
    std::fs::remove_file(&b_path).unwrap();
    // A's own restore puts A back.
    let r = dbtax()
        .args(["restore", "--target", &a.url("")])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    assert_eq!(a.var("slow_query_log"), "0");
    assert_eq!(a.var("long_query_time"), "4.000000");
    println!("identity: twins told apart; A's journal never applied to B");
}

/// Start a `dbtax run` of `features` on `url` in the background and kill it -9 once `var`
/// reads `want` on the suite's server (a setting the run changed is in force).
fn kill_mid_run(ctx: &Ctx, url: &str, features: &[&str], var: &str, want: &str, out: &str) {
    let args = common::run_args(url, features, "2", "30", &ctx.work.join(out));
    let mut child = ctx
        .dbtax()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&format!("{var} = {want}"), Duration::from_secs(90), || {
        ctx.var(var) == want
    });
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A second server that carries the suite server's stamp (as a copy of its datadir, a
/// backup or a replica would): `dbtax restore` on it after a run on the suite's server was
/// killed refuses, naming what differs (it set the copy's settings to the original's).
pub fn a_copy_that_carries_the_stamp_is_not_taken_for_its_server(ctx: &Ctx) {
    let originals = ctx.originals();
    kill_mid_run(
        ctx,
        &ctx.socket_url("f_copy"),
        &["slow-log"],
        "slow_query_log",
        "1",
        "copy",
    );
    // The stamp is in the schema of the first run that changed anything on this server.
    let schema: Option<String> = ctx
        .root()
        .query_first(
            "SELECT TABLE_SCHEMA FROM information_schema.TABLES \
             WHERE TABLE_NAME = 'dbtax_identity' LIMIT 1",
        )
        .unwrap();
    let schema = schema.expect("the run stamped the server");
    let id: Option<String> = ctx
        .root()
        .query_first(format!("SELECT id FROM `{schema}`.dbtax_identity"))
        .unwrap();
    let id = id.expect("a stamp");
    let port = common::free_port();
    let copy = ManagedServer::start(&ManagedConfig {
        port: Some(port),
        server_opts: vec!["long-query-time=7".into()],
        ..Default::default()
    })
    .expect("a second MariaDB");
    let mut c = common::root(&copy.socket());
    c.query_drop(format!(
        "CREATE DATABASE IF NOT EXISTS `{schema}`; CREATE TABLE `{schema}`.dbtax_identity \
         (id VARCHAR(64) NOT NULL PRIMARY KEY); INSERT INTO `{schema}`.dbtax_identity \
         VALUES ('{id}')"
    ))
    .unwrap();
    let copy_url = format!("mysql://root@localhost/?socket={}", copy.socket().display());
    let r = ctx.run(&["restore".into(), "--target".into(), copy_url]);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("another server with that identity"), "{err}");
    assert!(err.contains("socket"), "{err}");
    // It says what the journal owns and never advises deleting it while it owns a setting.
    assert!(err.contains("It owns, on its own server:"), "{err}");
    assert!(
        err.contains("slow_query_log (set to ON; it was OFF)"),
        "{err}"
    );
    assert!(err.contains("never delete it while they are left"), "{err}");
    assert_eq!(
        common::global_var(&copy.socket(), "long_query_time"),
        "7.000000"
    );
    assert_eq!(common::global_var(&copy.socket(), "slow_query_log"), "0");
    drop(copy);
    let r = ctx.restore();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    ctx.as_found(&originals).unwrap();
    println!("copied stamp: the copy refused, naming what differs; the original restored");
}

/// After a kill -9, a restore through another state folder (it uses and removes the
/// server's copy), then a DBA's change: the default folder's journal is retired, not
/// applied again over the DBA's value.
pub fn a_stale_local_journal_is_retired_not_applied_again(ctx: &Ctx) {
    let originals = ctx.originals();
    kill_mid_run(
        ctx,
        &ctx.socket_url("f_stale"),
        &["slow-log"],
        "slow_query_log",
        "1",
        "stale",
    );
    assert_eq!(ctx.journals(), 1);
    let other = ctx.work.join("other-state");
    let r = common::dbtax(&other)
        .args(["restore", "--target", &ctx.socket_url("")])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    ctx.as_found(&originals).map(|_| ()).unwrap_or_else(|e| {
        // The default folder's journal is still there: that is the point.
        assert!(e.contains("local journal"), "{e}");
    });
    ctx.root()
        .query_drop("SET GLOBAL long_query_time = 1")
        .unwrap();
    let r = ctx.restore();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("already restored"),
        "{}",
        text(&r)
    );
    assert_eq!(
        ctx.var("long_query_time"),
        "1.000000",
        "the stale journal was applied"
    );
    assert_eq!(ctx.journals(), 0);
    ctx.root()
        .query_drop("SET GLOBAL long_query_time = 2.5")
        .unwrap();
    ctx.as_found(&originals).unwrap();
    println!("stale journal: retired, the DBA's later value kept");
}

/// A kill -9 with the slow log on, then a DBA sets long_query_time: `dbtax restore` puts
/// back what is still as the run left it (slow_query_log) and leaves the DBA's value,
/// naming it.
pub fn a_setting_someone_changed_since_is_left_alone(ctx: &Ctx) {
    let originals = ctx.originals();
    kill_mid_run(
        ctx,
        &ctx.socket_url("f_since"),
        &["slow-log"],
        "slow_query_log",
        "1",
        "since",
    );
    ctx.root()
        .query_drop("SET GLOBAL long_query_time = 1")
        .unwrap();
    let r = ctx.restore();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let said = String::from_utf8_lossy(&r.stdout);
    assert!(said.contains("left long_query_time = 1"), "{said}");
    assert_eq!(ctx.var("slow_query_log"), "0");
    assert_eq!(ctx.var("long_query_time"), "1.000000");
    ctx.root()
        .query_drop("SET GLOBAL long_query_time = 2.5")
        .unwrap();
    ctx.as_found(&originals).unwrap();
    println!("changed since: the DBA's long_query_time left and named, the rest restored");
}

/// Issue 50: a server whose port changed (the same data directory) is not a copy: after a
/// kill -9 the restore through its new port puts everything back (it used to refuse it as
/// "another server with that identity" and advise deleting the journal that still owned
/// the settings). What tells it from a copy is the run's own journal row on the server. A
/// refusal names what the journal owns and never advises deleting it while it owns any.
pub fn a_server_moved_to_another_port_is_restored_where_it_is(ctx: &Ctx) {
    let originals = ctx.originals();
    kill_mid_run(
        ctx,
        &ctx.tcp_url("f_moved"),
        &["slow-log"],
        "slow_query_log",
        "1",
        "moved",
    );
    let moved = common::free_port();
    {
        let mut server = ctx.server.lock().unwrap();
        server
            .process()
            .restart(&[format!("port={moved}")])
            .expect("restarting the test server on another port");
    }
    // A restart lost the SET GLOBAL values; the run set them again to show the restore's
    // work after the move (the journal and its row on the server are as the kill left them).
    ctx.root()
        .query_drop("SET GLOBAL slow_query_log = 1, GLOBAL long_query_time = 0")
        .unwrap();
    let r = ctx.run(&[
        "restore".into(),
        "--target".into(),
        format!("mysql://root@127.0.0.1:{moved}/"),
    ]);
    let said = text(&r);
    {
        let mut server = ctx.server.lock().unwrap();
        server
            .process()
            .restart(&[])
            .expect("restarting the test server where it was");
    }
    assert_eq!(r.status.code(), Some(0), "{said}");
    assert!(said.contains("moved (port"), "{said}");
    assert!(!said.contains("delete"), "{said}");
    ctx.as_found(&originals).unwrap();
    println!("a moved port: restored through the new one, naming the move");
}
