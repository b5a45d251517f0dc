//! A server on another host, as dbtax sees it: a MariaDB started in its own UTS namespace
//! (its own hostname) and reached over TCP on 127.0.0.1, so its @@hostname is not this
//! machine's. dbtax can read neither its files nor its /proc: a feature that writes a log file
//! there is refused (exit 2, nothing changed) unless the user accepts it with
//! --unguarded-logs, which results.json records.

use super::{Ctx, ok};
use dbtax::server::ManagedConfig;
use dbtax::server::mysql::managed::ManagedServer;

pub(crate) fn logs_on_a_server_elsewhere_are_refused_unless_accepted(ctx: &Ctx) {
    if !super::common::can_unshare_uts() {
        eprintln!("unshare --uts is not allowed here (needs root): skipped");
        return;
    }
    let port = super::common::free_port();
    let server = ManagedServer::start(&ManagedConfig {
        server_bin: Some(super::common::mariadbd_elsewhere(&ctx.work)),
        port: Some(port),
        ..Default::default()
    })
    .unwrap();
    let mut conn = super::common::root(&server.socket());
    let host: Option<String> =
        mysql::prelude::Queryable::query_first(&mut conn, "SELECT @@hostname").unwrap();
    assert_eq!(host.as_deref(), Some("dbtax-remote-db"));
    let general = |c: &mut mysql::Conn| -> Option<String> {
        mysql::prelude::Queryable::query_first(c, "SELECT @@general_log").unwrap()
    };
    let before = general(&mut conn);
    let url = format!("mysql://root@127.0.0.1:{port}/t_remote");
    let out = ctx.out_dir("remote");
    let args = super::common::run_args(&url, &["general-log"], "2", "3", &out);
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", super::common::text(&o));
    let said = super::common::text(&o);
    for words in [
        "not on this machine",
        "--unguarded-logs",
        "--server-host ssh://",
        "database's host",
        "Nothing was changed",
    ] {
        assert!(said.contains(words), "{words}: {said}");
    }
    assert_eq!(general(&mut conn), before);
    assert!(!out.join("results.json").exists());
    // The plan says which figures will be missing, for any feature.
    let o = ctx.run(&[
        "run",
        "--target",
        &url,
        "--feature",
        "audit",
        "--dry-run",
        "--unguarded-logs",
    ]);
    ok(&o);
    assert!(
        super::common::text(&o)
            .contains("log bytes per query and the disk guard are not available")
    );
    // Accepted: it runs, puts the setting back, and says so.
    let mut args = args;
    args.push("--unguarded-logs".into());
    let o = ctx.run(&args);
    ok(&o);
    let v = super::common::validate_results(&out.join("results.json"));
    assert_eq!(v["unguarded_logs"], true);
    assert_eq!(general(&mut conn), before);
    let c = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["variant"] == "general-log" && c["threads"] == 2)
        .unwrap();
    assert!(c["log_bytes_per_query_median"].is_null(), "{c}");
    assert!(c["server_cpu_us_per_query_median"].is_null(), "{c}");
}
