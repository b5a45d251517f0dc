//! Client and server as different hosts on the wire: two network namespaces made here,
//! joined by a veth pair on private test addresses (10.251.N.1 and .2). The server (a managed
//! MariaDB started through `ip netns exec`) listens in one, an sshd in the other; the agent
//! starts through that sshd and reaches the server over the veth. The coordinator stays
//! outside both and talks to the server on its unix socket.

use super::*;
use mysql::prelude::Queryable;

/// The two namespaces (and the veth pair with them); deleted on drop.
struct Namespaces {
    server: String,
    agent: String,
}

pub(crate) fn ip(args: &[&str]) {
    let o = Command::new("ip")
        .args(args)
        .output()
        .expect("ip (iproute2)");
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

impl Namespaces {
    fn make(n: u32, server_addr: &str, agent_addr: &str) -> Namespaces {
        let ns = Namespaces {
            server: format!("dbtax-s{n}"),
            agent: format!("dbtax-a{n}"),
        };
        let (vs, va) = (format!("dbxs{n}"), format!("dbxa{n}"));
        ip(&["netns", "add", &ns.server]);
        ip(&["netns", "add", &ns.agent]);
        ip(&[
            "link", "add", "name", &vs, "netns", &ns.server, "type", "veth", "peer", "name", &va,
            "netns", &ns.agent,
        ]);
        for (space, dev, addr) in [(&ns.server, &vs, server_addr), (&ns.agent, &va, agent_addr)] {
            ip(&[
                "-n",
                space,
                "addr",
                "add",
                &format!("{addr}/30"),
                "dev",
                dev,
            ]);
            ip(&["-n", space, "link", "set", dev, "up"]);
            ip(&["-n", space, "link", "set", "lo", "up"]);
        }
        ns
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the veth pair, and so the pair.
        for n in [&self.server, &self.agent] {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// A MariaDB of dbtax's managed-server code started in network namespace `ns` through a
/// wrapper written into `dir` (`prefix`: shell words run between `ip netns exec` and
/// mariadbd, e.g. a UTS namespace of its own), listening on `addr` at port 3306.
pub(crate) fn mariadb_in(dir: &Path, ns: &str, prefix: &str, addr: &str) -> ManagedServer {
    let mariadbd = dbtax::server::mysql::managed::find_server_bin(None).expect("mariadbd");
    let wrapper = dir.join(format!("mariadbd-in-{ns}"));
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec ip netns exec {ns} {prefix}{} \"$@\"\n",
            mariadbd.display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&wrapper)
        .status()
        .unwrap();
    ManagedServer::start(&ManagedConfig {
        server_bin: Some(wrapper),
        port: Some(3306),
        server_opts: vec![format!("bind-address={addr}")],
        cpus: None,
    })
    .expect("starting MariaDB in a network namespace")
}

pub(crate) fn an_agent_in_another_network_namespace_loads_over_the_wire(ctx: &Ctx) {
    let n = std::process::id() % 100_000;
    let octet = 1 + n % 250;
    let (server_addr, agent_addr) = (format!("10.251.{octet}.1"), format!("10.251.{octet}.2"));
    let dir = ctx.work.join("netns");
    std::fs::create_dir_all(&dir).unwrap();
    // Declared first, dropped last: the server and sshd stop before their namespaces go.
    let spaces = Namespaces::make(n, &server_addr, &agent_addr);
    let server = mariadb_in(&dir, &spaces.server, "", &server_addr);
    let mut root = common::root(&server.socket());
    root.query_drop(format!(
        "CREATE USER 'agent'@'{agent_addr}' IDENTIFIED BY 'agentpw'"
    ))
    .unwrap();
    root.query_drop(format!("GRANT ALL ON t_ns.* TO 'agent'@'{agent_addr}'"))
        .unwrap();
    let sshd = Sshd::start(
        &dir.join("ssh"),
        &agent_addr,
        2222,
        &["ip", "netns", "exec", &spaces.agent],
    );
    // Fails (a subquery of two rows) unless the session comes from the agent's address.
    let q = format!(
        "SELECT IF(SUBSTRING_INDEX(USER(), '@', -1) = '{agent_addr}', 1, (SELECT 1 UNION SELECT 2))"
    );
    let target = format!(
        "mysql://root@localhost/t_ns?socket={}",
        server.socket().display()
    );
    let agent = format!("ssh://{agent_addr}:2222");
    let o = common::dbtax(&ctx.state_dir)
        .env(
            "DBTAX_SSH_COMMAND",
            format!("ip netns exec {} {}", spaces.agent, sshd.ssh_command),
        )
        .args([
            "bench",
            "--target",
            &target,
            "--agents",
            &agent,
            "--agent-bin",
            &ctx.agent_bin.display().to_string(),
            "--agent-target",
            &format!("mysql://agent:agentpw@{server_addr}:3306/t_ns"),
            "--query",
            &q,
            "--threads",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0.2s",
            "--json",
        ])
        .output()
        .unwrap();
    ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["errors"], 0, "{v}");
    assert!(v["queries"].as_u64().unwrap() > 100, "{v}");
    assert_eq!(v["agents"][0]["host"], agent.as_str());
    assert_eq!(v["agents"][0]["queries"], v["queries"]);
    drop(sshd);
    drop(server);
    drop(spaces);
}
