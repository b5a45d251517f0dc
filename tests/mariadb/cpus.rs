//! Where server and load run when they share this machine: a server dbtax starts is bound to
//! its CPUs from its first instruction; a user's server is never moved: unbound, the results
//! say that server and load shared the cores and how to separate them; bound, dbtax takes the
//! CPUs it leaves.

use super::{Ctx, ok};
use dbtax::host::cpus;
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

/// Bind every thread of `pid` to `list`. `taskset -a` walks the process's threads one by one,
/// and a connection thread that ends during the walk makes it fail ("failed to get pid N's
/// affinity: No such process", N that thread: seen once in a CI run, after the test before
/// had closed its connections); the walk is run again, as binding is idempotent.
fn taskset(list: &str, pid: u32) {
    let mut tries = 0;
    loop {
        let o = Command::new("taskset")
            .args(["-acp", list, &pid.to_string()])
            .output()
            .expect("taskset (util-linux)");
        let said = String::from_utf8_lossy(&o.stderr);
        if o.status.success() {
            return;
        }
        tries += 1;
        let vanished = said.contains("No such process")
            && std::path::Path::new(&format!("/proc/{pid}")).exists();
        assert!(vanished && tries < 10, "{said}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Run `f` with the suite's server bound to the last CPU, and give it back every CPU before
/// anything `f` found is asserted. None (and a line saying so) on a machine of one CPU.
fn on_last_cpu<R>(ctx: &Ctx, f: impl FnOnce(usize) -> R) -> Option<R> {
    let all = cpus::allowed();
    if all.len() < 2 {
        eprintln!("one CPU: nothing to split, skipped");
        return None;
    }
    let pid = ctx._server.pid().unwrap();
    let last = *all.last().unwrap();
    taskset(&last.to_string(), pid);
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(last)));
    taskset(&cpus::format_list(&all), pid);
    Some(run.unwrap_or_else(|e| std::panic::resume_unwind(e)))
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
    // The distinct CPU lists of its threads (how many threads it runs changes with the load).
    let lists = || {
        let mut l = threads_cpus(pid);
        l.sort();
        l.dedup();
        l
    };
    let before = lists();
    let (o, v) = short_run(ctx, "cpus-shared", &[]);
    assert_eq!(lists(), before, "dbtax never moves a user's server");
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
    let Some((last, (_, v))) = on_last_cpu(ctx, |last| (last, short_run(ctx, "cpus-bound", &[])))
    else {
        return;
    };
    assert_eq!(v["pinned"], true, "{}", v["cpus"]);
    assert_eq!(list(&v["cpus"]["server"]), [last as u64]);
    let load = list(&v["cpus"]["load"]);
    assert!(
        !load.is_empty() && !load.contains(&(last as u64)),
        "{load:?}"
    );
    // --no-pin measures free, and says so, even with the server bound.
    let Some((o, v)) = on_last_cpu(ctx, |_| short_run(ctx, "cpus-free", &["--no-pin"])) else {
        return;
    };
    assert_eq!(v["pinned"], false);
    let words = String::from_utf8_lossy(&o.stdout);
    assert!(words.contains("shared this machine's cores"), "{words}");
}

/// 256 clients on a server bound to one CPU: SHOW GLOBAL STATUS then takes about a second to
/// answer, and the statements dbtax ran meanwhile were once counted as other clients'
/// (every such trial's server CPU withheld, and a warning on a server nobody else uses).
pub(crate) fn a_busy_server_slow_to_answer_its_status_is_not_taken_for_other_clients(ctx: &Ctx) {
    let out = ctx.out_dir("cpus-busy");
    let args = ctx.run_args("t_cpus", &["slow-log"], "256", "3", &out);
    let Some(o) = on_last_cpu(ctx, |_| ctx.run(&args)) else {
        return;
    };
    ok(&o);
    let v = super::common::validate_results(&out.join("results.json"));
    let warned = v["warnings"].to_string();
    assert!(!warned.contains("other clients"), "{warned}");
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert!(t["other_clients_pct"].is_null(), "{t}");
            assert!(t["server_cpu_us_per_query"].is_number(), "{t}");
        }
    }
    let c = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["variant"] == "slow-log")
        .unwrap();
    assert!(c["server_cpu_delta_us"].is_object(), "{c}");
}
