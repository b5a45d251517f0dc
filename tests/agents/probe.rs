//! A server on another host, read through a probe there (`--server-host`). The "host" is
//! made here: a MariaDB started in a UTS namespace of its own (hostname dbtax-remote-db,
//! reached over TCP on 127.0.0.1, so dbtax does not take it for local) and an sshd in another
//! with the same hostname, through which dbtax starts `dbtax agent --stdio` as the probe.
//! With it the run has what a local server's has: server CPU, log bytes per query, the
//! other processes' CPU, the disk guard (a general log on an 8 MB tmpfs is stopped); a
//! probe killed mid-run stops the run with words naming the host, settings put back.

use super::*;
use dbtax::server::ManagedConfig;
use dbtax::server::mysql::managed::ManagedServer;
use mysql::prelude::Queryable;

/// The database host: its server, its sshd, and the URL dbtax reaches the server by.
struct DbHost {
    server: ManagedServer,
    sshd: Sshd,
    url_base: String,
}

impl DbHost {
    fn start(ctx: &Ctx) -> Option<DbHost> {
        if !common::can_unshare_uts() {
            eprintln!("unshare --uts is not allowed here (needs root): skipped");
            return None;
        }
        let port = common::free_port();
        let server = ManagedServer::start(&ManagedConfig {
            server_bin: Some(common::mariadbd_elsewhere(&ctx.work)),
            port: Some(port),
            ..Default::default()
        })
        .unwrap();
        let wrap = common::elsewhere_wrap();
        let wrap: Vec<&str> = wrap.iter().map(String::as_str).collect();
        let sshd = Sshd::start(
            &ctx.work.join("ssh-db"),
            "127.0.0.1",
            common::free_port(),
            &wrap,
        );
        Some(DbHost {
            server,
            sshd,
            url_base: format!("mysql://root@127.0.0.1:{port}"),
        })
    }

    fn conn(&self) -> mysql::Conn {
        common::root(&self.server.socket())
    }

    fn var(&self, name: &str) -> String {
        common::global_var(&self.server.socket(), name)
    }

    fn probe(&self) -> String {
        format!("ssh://127.0.0.1:{}", self.sshd.port)
    }

    /// `dbtax run` on this host's server with the probe.
    fn run_args(&self, ctx: &Ctx, feature: &str, repeats: &str, out: &str) -> Vec<String> {
        let mut a = common::run_args(
            &format!("{}/t_probe", self.url_base),
            &[feature],
            "2",
            repeats,
            &ctx.work.join(out),
        );
        a.extend([
            "--server-host".into(),
            self.probe(),
            "--agent-bin".into(),
            ctx.agent_bin.display().to_string(),
        ]);
        a
    }

    fn dbtax(&self, ctx: &Ctx) -> Command {
        let mut c = common::dbtax(&ctx.state_dir);
        c.env("DBTAX_SSH_COMMAND", &self.sshd.ssh_command);
        c
    }
}

pub(crate) fn a_server_elsewhere_is_read_through_its_probe(ctx: &Ctx) {
    let Some(db) = DbHost::start(ctx) else {
        return;
    };
    assert_eq!(db.var("hostname"), common::ELSEWHERE);
    let before = db.var("general_log");
    let o = db
        .dbtax(ctx)
        .args(db.run_args(ctx, "general-log", "3", "probe"))
        .output()
        .unwrap();
    ok(&o);
    let v = validate_results(&ctx.work.join("probe/results.json"));
    assert_eq!(db.var("general_log"), before);
    let h = &v["server_host"];
    assert_eq!(h["hostname"], common::ELSEWHERE, "{h}");
    assert_eq!(h["url"], db.probe(), "{h}");
    assert_eq!(h["pid"], db.server.pid().unwrap(), "{h}");
    assert!(
        h["found_by"].as_str().unwrap().contains("listening on"),
        "{h}"
    );
    assert!(v.get("unguarded_logs").is_none_or(|u| u == false), "{v}");
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert!(t["server_cpu_us_per_query"].as_f64().unwrap() > 0.0, "{t}");
            assert!(t["host_other_cpu_pct"].is_number(), "{t}");
            let bytes = t["log_bytes_per_query"].as_f64().unwrap();
            if c["variant"] == "general-log" {
                assert!(bytes > 20.0, "{t}");
            } else {
                assert_eq!(bytes, 0.0, "{t}");
            }
        }
    }
    let words = text(&o);
    assert!(words.contains("read through the probe on"), "{words}");
    assert!(words.contains("server CPU"), "{words}");

    // The disk guard there: a general log on an 8 MB tmpfs of that host stops the run
    // before it fills it, and the settings come back.
    let small = ctx.work.join("small-disk");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(&small)
        .status()
        .is_ok_and(|s| s.success());
    if mounted {
        // Most of it taken already: what is left is under 10% after a trial's log.
        let filler = small.join("filler");
        std::fs::write(&filler, vec![0u8; 7 * 1024 * 1024 + 300 * 1024]).unwrap();
        let log = small.join("general.log");
        let mut conn = db.conn();
        let old_file = db.var("general_log_file");
        conn.query_drop(format!("SET GLOBAL general_log_file = '{}'", log.display()))
            .unwrap();
        let o = db
            .dbtax(ctx)
            .args(db.run_args(ctx, "general-log", "20", "probe-disk"))
            .output()
            .unwrap();
        let said = text(&o);
        conn.query_drop(format!("SET GLOBAL general_log_file = '{old_file}'"))
            .unwrap();
        let _ = Command::new("umount").arg(&small).status();
        assert_eq!(o.status.code(), Some(1), "{said}");
        assert!(said.contains("dbtax keeps at least 10% free"), "{said}");
        assert_eq!(db.var("general_log"), before);
    } else {
        eprintln!("cannot mount a tmpfs here: the disk-guard part skipped");
    }

    // The probe killed mid-run: the run stops naming the host, settings put back, what was
    // measured kept.
    let mut args = db.run_args(ctx, "general-log", "40", "probe-killed");
    args.push("--no-warmup-round".into());
    let child = db
        .dbtax(ctx)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the general log to be on", Duration::from_secs(60), || {
        db.var("general_log") == "1"
    });
    let pids = ctx.agent_pids();
    assert_eq!(pids.len(), 1, "the probe: {pids:?}");
    unsafe {
        libc::kill(pids[0], libc::SIGKILL);
    }
    let o = child.wait_with_output().unwrap();
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("the probe on the server's host {}", db.probe())),
        "{said}"
    );
    assert_eq!(db.var("general_log"), before);
    assert_eq!(ctx.journals(), 0);
    let v = validate_results(&ctx.work.join("probe-killed/results.json"));
    assert_eq!(v["complete"], false);
}
