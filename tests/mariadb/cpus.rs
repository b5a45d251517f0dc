//! Where server and load run when they share this machine: a server dbtax starts is bound to
//! its CPUs from its first instruction; a user's server is never moved: unbound, the results
//! say that server and load shared the cores and how to separate them; bound, dbtax takes the
//! CPUs it leaves.

use super::{Ctx, ok};
use dbtax::cpus;
use dbtax::server::ManagedConfig;
use dbtax::server::mysql::managed::ManagedServer;
use std::process::Command;

/// The CPUs each thread of `pid` may run on, thread by thread.
fn threads_cpus(pid: u32) -> Vec<Vec<usize>> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .filter_map(|s| {
            let l = s
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
            cpus::parse_list(l.trim()).ok()
        })
        .collect()
}

fn taskset(list: &str, pid: u32) {
    let o = Command::new("taskset")
        .args(["-acp", list, &pid.to_string()])
        .output()
        .expect("taskset (util-linux)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn short_run(ctx: &Ctx, name: &str, extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let out = ctx.out_dir(name);
    let mut args = ctx.run_args("t_cpus", &["slow-log"], "2", "3", &out);
    args.extend(extra.iter().map(|s| s.to_string()));
    let o = ctx.run(&args);
    ok(&o);
    let v = super::common::validate_results(&out.join("results.json"));
    (o, v)
}

fn list(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("a CPU list: {v}"))
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect()
}

pub(crate) fn a_managed_server_starts_on_its_own_cpus(_: &Ctx) {
    let all = cpus::allowed();
    if all.len() < 2 {
        eprintln!("one CPU: nothing to split, skipped");
        return;
    }
    let last = *all.last().unwrap();
    let server = ManagedServer::start(&ManagedConfig {
        cpus: Some(vec![last]),
        ..Default::default()
    })
    .unwrap();
    let pid = server.pid().unwrap();
    let seen = threads_cpus(pid);
    assert!(seen.len() > 3, "mariadbd runs several threads: {seen:?}");
    assert!(seen.iter().all(|c| c == &[last]), "{seen:?}");
    // This process (the test) is not moved by the server's start.
    assert_eq!(cpus::allowed(), all);
}

pub(crate) fn a_users_unbound_server_is_not_moved_and_the_results_say_they_shared(ctx: &Ctx) {
    let pid = ctx._server.pid().unwrap();
    let before = threads_cpus(pid);
    let (o, v) = short_run(ctx, "cpus-shared", &[]);
    assert_eq!(
        threads_cpus(pid),
        before,
        "dbtax never moves a user's server"
    );
    assert_eq!(v["pinned"], false, "{}", v["cpus"]);
    let words = String::from_utf8_lossy(&o.stdout);
    assert!(words.contains("shared this machine's cores"), "{words}");
    let warned = v["warnings"].to_string();
    assert!(
        warned.contains("taskset -acp") && warned.contains(&pid.to_string()),
        "the command that would separate them: {warned}"
    );
}

pub(crate) fn a_users_bound_server_keeps_its_cpus_and_the_load_takes_the_rest(ctx: &Ctx) {
    let all = cpus::allowed();
    if all.len() < 2 {
        eprintln!("one CPU: nothing to split, skipped");
        return;
    }
    let pid = ctx._server.pid().unwrap();
    let last = *all.last().unwrap();
    taskset(&last.to_string(), pid);
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        short_run(ctx, "cpus-bound", &[])
    }));
    // The suite's server goes back to every CPU before anything is asserted.
    taskset(&cpus::format_list(&all), pid);
    let (_, v) = run.unwrap();
    assert_eq!(v["pinned"], true, "{}", v["cpus"]);
    assert_eq!(list(&v["cpus"]["server"]), [last as u64]);
    let load = list(&v["cpus"]["load"]);
    assert!(
        !load.is_empty() && !load.contains(&(last as u64)),
        "{load:?}"
    );
    // --no-pin measures free, and says so, even with the server bound.
    taskset(&last.to_string(), pid);
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        short_run(ctx, "cpus-free", &["--no-pin"])
    }));
    taskset(&cpus::format_list(&all), pid);
    let (o, v) = run.unwrap();
    assert_eq!(v["pinned"], false);
    let words = String::from_utf8_lossy(&o.stdout);
    assert!(words.contains("shared this machine's cores"), "{words}");
}
