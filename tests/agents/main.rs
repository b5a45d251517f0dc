//! Agents over real OpenSSH: the suite starts its own MariaDB (dbtax's managed-server code,
//! reached by URL as a user's server) and its own sshd on a private 127.0.0.1 port with keys
//! it generates; dbtax reaches it through `$DBTAX_SSH_COMMAND`. One scenario puts the server
//! and an agent in two network namespaces of its own joined by a veth pair, so that client
//! and server are different hosts on the wire. Everything started here is stopped by its pid.

#[path = "../common/mod.rs"]
mod common;
mod netns;
mod probe;
mod relay;

use common::{text, validate_results};
use dbtax::server::ManagedConfig;
use dbtax::server::mysql::managed::ManagedServer;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// An sshd of the suite's own: its config, keys and pid in `dir`.
pub struct Sshd {
    child: Child,
    pub port: u16,
    /// `ssh` with the suite's key, for $DBTAX_SSH_COMMAND.
    pub ssh_command: String,
}

impl Sshd {
    /// Start `sshd -D` listening on `addr:port`, through `wrap` (e.g. `ip netns exec NS`).
    pub fn start(dir: &Path, addr: &str, port: u16, wrap: &[&str]) -> Sshd {
        std::fs::create_dir_all(dir).unwrap();
        let (host_key, user_key) = (dir.join("host_key"), dir.join("user_key"));
        for k in [&host_key, &user_key] {
            if !k.exists() {
                let ok = Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                    .arg(k)
                    .status()
                    .expect("ssh-keygen (make test installs openssh-server)")
                    .success();
                assert!(ok, "ssh-keygen failed");
            }
        }
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress {addr}\nHostKey {}\nPidFile {}\n\
                 AuthorizedKeysFile {}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
                 LogLevel ERROR\n",
                host_key.display(),
                dir.join("sshd.pid").display(),
                dir.join("authorized_keys").display()
            ),
        )
        .unwrap();
        // sshd's privilege separation needs this folder.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let mut cmd = match wrap.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg("/usr/sbin/sshd");
                c
            }
            None => Command::new("/usr/sbin/sshd"),
        };
        let child = cmd
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(dir.join("sshd.log")).unwrap())
            .spawn()
            .expect("starting /usr/sbin/sshd (make test installs openssh-server)");
        let ssh_command = format!(
            "ssh -i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
            user_key.display()
        );
        let sshd = Sshd {
            child,
            port,
            ssh_command,
        };
        // Up when a login runs a command.
        let start = Instant::now();
        loop {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!(
                "{} -o BatchMode=yes -p {port} {addr} true",
                sshd.ssh_command
            ));
            if let Some((first, rest)) = wrap.split_first() {
                c = Command::new(first);
                c.args(rest).arg("sh").arg("-c").arg(format!(
                    "{} -o BatchMode=yes -p {port} {addr} true",
                    sshd.ssh_command
                ));
            }
            if c.stderr(Stdio::null()).status().unwrap().success() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "sshd did not accept a login: {}",
                std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        sshd
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Ctx {
    _server: ManagedServer,
    socket: PathBuf,
    sshd: Sshd,
    state_dir: PathBuf,
    work: PathBuf,
    /// A copy of dbtax that the agents run (so the suite can find its agents' processes).
    agent_bin: PathBuf,
}

impl Ctx {
    fn url(&self, schema: &str) -> String {
        format!(
            "mysql://root@localhost/{schema}?socket={}",
            self.socket.display()
        )
    }

    fn agent(&self) -> String {
        format!("ssh://127.0.0.1:{}", self.sshd.port)
    }

    fn dbtax(&self) -> Command {
        let mut c = common::dbtax(&self.state_dir);
        c.env("DBTAX_SSH_COMMAND", &self.sshd.ssh_command);
        c
    }

    fn run<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Output {
        self.dbtax().args(args).output().expect("running dbtax")
    }

    fn var(&self, name: &str) -> String {
        common::global_var(&self.socket, name)
    }

    fn journals(&self) -> usize {
        std::fs::read_dir(self.state_dir.join("journal"))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// `run --feature slow-log` with agents, short trials.
    fn run_args(&self, schema: &str, agents: &str, repeats: &str, out: &str) -> Vec<String> {
        let mut a = common::run_args(
            &self.url(schema),
            &["slow-log"],
            "2,4",
            repeats,
            &self.work.join(out),
        );
        a.extend([
            "--agents".into(),
            agents.into(),
            "--agent-bin".into(),
            self.agent_bin.display().to_string(),
        ]);
        a
    }

    /// Pids of the agents running the suite's copy of dbtax.
    fn agent_pids(&self) -> Vec<i32> {
        let want = self.agent_bin.to_string_lossy().into_owned();
        let mut pids = vec![];
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let args: Vec<String> = cmd
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if args.first() == Some(&want) && args.get(1).map(String::as_str) == Some("agent") {
                pids.push(pid);
            }
        }
        pids
    }
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every trial's merged counts are its agents' sums, and its threads their shares.
fn check_trials_are_their_agents_sums(v: &serde_json::Value, agents: usize) {
    let mut trials = 0;
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            let parts = t["agents"].as_array().expect("agents per trial");
            let active = (c["threads"].as_u64().unwrap() as usize).min(agents);
            assert_eq!(parts.len(), active, "{t}");
            let sum = |k: &str| parts.iter().map(|a| a[k].as_u64().unwrap()).sum::<u64>();
            assert_eq!(sum("queries"), t["queries"].as_u64().unwrap(), "{t}");
            assert_eq!(sum("threads"), c["threads"].as_u64().unwrap(), "{t}");
            let worst = parts
                .iter()
                .map(|a| a["skew_ms"].as_f64().unwrap())
                .fold(0.0, f64::max);
            assert_eq!(t["agent_skew_ms"].as_f64().unwrap(), worst);
            // No bound on the skew itself: it depends on how busy this machine is (a timing
            // threshold would be a flaky test); the flag must follow the stated rule.
            let tenth = 100.0 * t["duration_s"].as_f64().unwrap();
            assert_eq!(
                t.get("skewed").is_some_and(|s| s == true),
                worst > tenth,
                "{t}"
            );
            trials += 1;
        }
    }
    assert!(trials > 0);
}

fn two_ssh_agents_measure_the_slow_log_and_settings_come_back(ctx: &Ctx) {
    let (slow, long) = (ctx.var("slow_query_log"), ctx.var("long_query_time"));
    let agents = format!("{},{}", ctx.agent(), ctx.agent());
    // Three blocks: the fewest that give an interval.
    let o = ctx.run(&ctx.run_args("t_agents", &agents, "3", "two"));
    ok(&o);
    let v = validate_results(&ctx.work.join("two/results.json"));
    assert_eq!(v["complete"], true);
    let hosts = v["agents"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    for h in hosts {
        assert_eq!(h["host"], ctx.agent().as_str());
        assert_eq!(h["version"], env!("CARGO_PKG_VERSION"));
    }
    check_trials_are_their_agents_sums(&v, 2);
    // Other processes' CPU is read on the agents' host and the server's (both this machine):
    // the agents, the coordinator and the server, on this kernel, leave each other out. Two
    // agents loading at full speed on two cores would count most of a core of each other,
    // in every trial; a neighbour (the suite's busy mode) comes and goes, so the quietest
    // trial shows which it is.
    for k in ["host_other_cpu_pct", "client_host_other_cpu_pct"] {
        let quietest = v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["trials"].as_array().unwrap())
            .map(|t| t[k].as_f64().unwrap_or_else(|| panic!("{k}: {t}")))
            .fold(f64::INFINITY, f64::min);
        assert!(
            quietest < 40.0,
            "{k} counted dbtax's own processes: {quietest}% at the least"
        );
    }
    let slow_cell = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["variant"] == "slow-log" && c["threads"] == 4)
        .unwrap();
    assert!(slow_cell["log_bytes_per_query_median"].as_f64().unwrap() > 50.0);
    // An interval, or (a block set aside on a busy machine) the words that say why not.
    assert!(
        slow_cell["overhead"]["ci95_pct"].is_array() || slow_cell["no_interval"].is_string(),
        "{slow_cell}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Load from 2 agents"), "{out}");
    let html = std::fs::read_to_string(ctx.work.join("two/report.html")).unwrap();
    assert!(html.contains("<h2>Agents</h2>"));
    assert_eq!(ctx.var("slow_query_log"), slow);
    assert_eq!(ctx.var("long_query_time"), long);
    assert_eq!(ctx.journals(), 0);
    assert!(ctx.agent_pids().is_empty(), "agents left running");
}

fn bench_with_a_copied_agent_leaves_no_copy(ctx: &Ctx) {
    let copies = || -> Vec<PathBuf> {
        std::fs::read_dir("/tmp")
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().starts_with("/tmp/dbtax-agent."))
            .collect()
    };
    let before = copies();
    let agents = format!("{}*2,local", ctx.agent());
    let o = ctx.run(&[
        "bench",
        "--target",
        &ctx.url("t_agents"),
        "--agents",
        &agents,
        "--agent-bin",
        "copy",
        "--threads",
        "3",
        "--duration",
        "1s",
        "--warmup",
        "0.2s",
        "--table-size",
        "2000",
        "--json",
    ]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let parts = v["agents"].as_array().unwrap();
    // Weights 2 and 1: threads 2 and 1.
    assert_eq!(parts[0]["threads"], 2, "{v}");
    assert_eq!(parts[1]["threads"], 1, "{v}");
    assert_eq!(parts[1]["host"], "local");
    let sum: u64 = parts.iter().map(|a| a["queries"].as_u64().unwrap()).sum();
    assert_eq!(sum, v["queries"].as_u64().unwrap());
    assert_eq!(v["agent_hosts"].as_array().unwrap().len(), 2);
    assert_eq!(copies(), before, "a copy of dbtax was left in /tmp");
}

fn a_rate_is_split_across_agents_and_held(ctx: &Ctx) {
    let agents = format!("{},local", ctx.agent());
    let o = ctx.run(&[
        "bench",
        "--target",
        &ctx.url("t_agents"),
        "--agents",
        &agents,
        "--agent-bin",
        &ctx.agent_bin.display().to_string(),
        "--rate",
        "2000",
        "--arrival",
        "uniform",
        "--threads",
        "4",
        "--duration",
        "3s",
        "--warmup",
        "0.5s",
        "--table-size",
        "2000",
        "--json",
    ]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["rate"]["asked"], 2000.0, "{v}");
    let achieved = v["rate"]["achieved"].as_f64().unwrap();
    assert!(
        (achieved - 2000.0).abs() < 100.0,
        "achieved {achieved}: {v}"
    );
    // The rate held. A schedule that fell behind is called saturated; on a quiet machine it
    // does not at 2,000/s, and on a busy one the trial names what else ran on the clients'
    // host (a 550 ms stall under the suite's neighbour and a build: lag growth 95 ms, other
    // processes at 44% of a core).
    let others = v["client_host_other_cpu_pct"].as_f64().unwrap_or(0.0);
    assert!(
        v["rate"]["saturated"] == false || others >= 10.0,
        "saturated with no disturbance named: {v}"
    );
    assert!(v["service_latency_ms"]["p50"].as_f64().unwrap() > 0.0);
    // Each agent ran half of the events: the rate follows the threads.
    for a in v["agents"].as_array().unwrap() {
        let share = a["queries"].as_f64().unwrap() / v["queries"].as_f64().unwrap();
        assert!((share - 0.5).abs() < 0.05, "{v}");
    }
}

fn an_agent_of_another_version_is_refused(ctx: &Ctx) {
    let fake = ctx.work.join("old-dbtax");
    std::fs::write(
        &fake,
        "#!/bin/sh\nread line\necho '{\"type\":\"hello\",\"protocol\":1,\"version\":\"9.9.9\",\
         \"host\":\"old\",\"arch\":\"x86_64\",\"cores\":1,\"clock_ns\":0}'\ncat >/dev/null\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&fake)
        .status()
        .unwrap();
    let slow = ctx.var("slow_query_log");
    let mut args = ctx.run_args("t_agents", &ctx.agent(), "2", "old");
    let n = args.len();
    args[n - 1] = fake.display().to_string();
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("agent {} runs dbtax 9.9.9", ctx.agent())),
        "{err}"
    );
    assert!(err.contains(env!("CARGO_PKG_VERSION")), "{err}");
    assert_eq!(ctx.var("slow_query_log"), slow);
    assert_eq!(ctx.journals(), 0);
    assert!(!ctx.work.join("old/results.json").exists());
}

fn an_agent_that_cannot_reach_the_server_is_bad_input(ctx: &Ctx) {
    let slow = ctx.var("slow_query_log");
    let mut args = ctx.run_args("t_agents", &ctx.agent(), "2", "unreached");
    args.extend([
        "--agent-target".into(),
        format!(
            "mysql://root:hunter2@localhost/t_agents?socket={}",
            ctx.socket.display()
        ),
    ]);
    let o = ctx.run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("agent {}", ctx.agent())), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert_eq!(ctx.var("slow_query_log"), slow);
    assert_eq!(ctx.journals(), 0);
}

/// An agent whose measured window closes before the coordinator's (its clock moved after
/// hello, or the coordinator is late on busy cores) reports while the coordinator still
/// waits: the report is kept and used, not taken for a protocol error.
fn an_agent_that_reports_before_the_window_ends_is_kept(ctx: &Ctx) {
    let early = ctx.work.join("early-dbtax");
    std::fs::write(
        &early,
        format!(
            "#!/bin/sh\nDBTAX_TEST_AGENT_EARLY_MS=250 exec {} \"$@\"\n",
            ctx.agent_bin.display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&early)
        .status()
        .unwrap();
    let slow = ctx.var("slow_query_log");
    let agents = format!("{},{}", ctx.agent(), ctx.agent());
    let mut args = ctx.run_args("t_agents", &agents, "3", "early");
    let n = args.len();
    args[n - 1] = early.display().to_string();
    let o = ctx.run(&args);
    ok(&o);
    let v = validate_results(&ctx.work.join("early/results.json"));
    assert_eq!(v["complete"], true);
    check_trials_are_their_agents_sums(&v, 2);
    // Each agent closed its window a quarter of a second early: the skew says so.
    for c in v["cells"].as_array().unwrap() {
        for t in c["trials"].as_array().unwrap() {
            assert!(t["agent_skew_ms"].as_f64().unwrap() >= 200.0, "{t}");
            assert_eq!(t["skewed"], true, "{t}");
        }
    }
    assert_eq!(ctx.var("slow_query_log"), slow);
    assert_eq!(ctx.journals(), 0);
    assert!(ctx.agent_pids().is_empty(), "agents left running");
}

fn a_killed_agent_stops_the_run_and_settings_come_back(ctx: &Ctx) {
    let slow = ctx.var("slow_query_log");
    assert_eq!(slow, "0");
    let agents = format!("{},{}", ctx.agent(), ctx.agent());
    let args = ctx.run_args("t_agents", &agents, "30", "killed");
    let child = ctx
        .dbtax()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the slow log to be on", Duration::from_secs(60), || {
        ctx.var("slow_query_log") == "1"
    });
    std::thread::sleep(Duration::from_millis(200));
    let pids = ctx.agent_pids();
    assert_eq!(pids.len(), 2, "{pids:?}");
    unsafe {
        libc::kill(pids[0], libc::SIGKILL);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("agent {} was lost", ctx.agent())),
        "{err}"
    );
    assert_eq!(ctx.var("slow_query_log"), slow);
    assert_eq!(ctx.journals(), 0);
    let v = validate_results(&ctx.work.join("killed/results.json"));
    assert_eq!(v["complete"], false);
    wait_for("the other agent to end", Duration::from_secs(10), || {
        ctx.agent_pids().is_empty()
    });
}

fn main() {
    // Started as ssh's ProxyCommand: the slow link's relay, not the suite.
    relay::run_if_asked();
    let work = tempfile::tempdir().unwrap();
    common::harness(
        crate::scenarios![Ctx;
            two_ssh_agents_measure_the_slow_log_and_settings_come_back,
            bench_with_a_copied_agent_leaves_no_copy,
            a_rate_is_split_across_agents_and_held,
            an_agent_of_another_version_is_refused,
            an_agent_that_cannot_reach_the_server_is_bad_input,
            an_agent_that_reports_before_the_window_ends_is_kept,
            a_killed_agent_stops_the_run_and_settings_come_back,
            netns::an_agent_in_another_network_namespace_loads_over_the_wire,
            probe::a_server_elsewhere_is_read_through_its_probe,
            probe::a_postgresql_elsewhere_is_read_through_its_probe,
            probe::a_slow_or_stalled_link_to_the_probe_costs_trials_not_the_run,
            probe::a_probe_silent_past_its_bound_stops_the_run_with_the_log_off,
        ],
        || {
            let server = ManagedServer::start(&ManagedConfig::default())
                .expect("starting the test MariaDB (make test installs mariadb-server)");
            let bin = work.path().join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            let agent_bin = bin.join("dbtax");
            std::fs::copy(env!("CARGO_BIN_EXE_dbtax"), &agent_bin).unwrap();
            let sshd = Sshd::start(
                &work.path().join("ssh"),
                "127.0.0.1",
                common::free_port(),
                &[],
            );
            Ctx {
                socket: server.socket(),
                _server: server,
                sshd,
                state_dir: work.path().join("state"),
                work: work.path().to_path_buf(),
                agent_bin,
            }
        },
    );
}
