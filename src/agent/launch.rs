//! Starting an agent: the `ssh` command (or `$DBTAX_SSH_COMMAND`, or a local subprocess), the
//! binary it runs (a path, or a copy of this one), and the threads that read its stdout into
//! the pool's channel and keep the tail of its stderr.

use super::link::{Agent, Event, Traffic};
use super::protocol::Hello;
use super::{AgentBin, AgentSpec, Place};
use crate::error::usage;
use anyhow::{Context, Result};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

/// What is kept of an agent's stderr for messages.
const STDERR_TAIL: usize = 2000;

/// Quote a word for a POSIX shell (the remote command goes through the login shell).
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,=@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `ssh` (or $DBTAX_SSH_COMMAND, through sh as git does) to the agent's host, running
/// `remote` there. No password prompt: BatchMode.
fn ssh_command(spec: &AgentSpec, remote: &str) -> Command {
    let Place::Ssh { user, host, port } = &spec.place else {
        unreachable!("only ssh agents are reached through ssh")
    };
    let mut args: Vec<String> = vec!["-T".into(), "-o".into(), "BatchMode=yes".into()];
    if let Some(p) = port {
        args.extend(["-p".into(), p.to_string()]);
    }
    if let Some(u) = user {
        args.extend(["-l".into(), u.clone()]);
    }
    args.push(host.clone());
    args.push(remote.to_string());
    match std::env::var("DBTAX_SSH_COMMAND") {
        Ok(cmd) if !cmd.trim().is_empty() => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("{cmd} \"$@\""))
                .arg("dbtax-ssh")
                .args(args);
            c
        }
        _ => {
            let mut c = Command::new("ssh");
            c.args(args);
            c
        }
    }
}

/// The agent program to start: a path, or a temporary copy of this one (`copy`).
/// Returns (program, whether it is a copy that removes itself).
pub(super) fn agent_bin(
    spec: &AgentSpec,
    asked: &AgentBin,
    status: &mut dyn FnMut(&str),
) -> Result<(String, bool)> {
    let own = || -> Result<String> {
        Ok(std::env::current_exe()
            .context("finding dbtax's own binary")?
            .to_string_lossy()
            .into_owned())
    };
    match (&spec.place, asked) {
        (Place::Local, AgentBin::OnPath | AgentBin::Copy) => Ok((own()?, false)),
        (Place::Local, AgentBin::Path(path)) => Ok((path.clone(), false)),
        (Place::Ssh { .. }, AgentBin::OnPath) => Ok(("dbtax".into(), false)),
        (Place::Ssh { .. }, AgentBin::Copy) => {
            status(&format!("copying dbtax to {}", spec.label()));
            copy_to(spec, &own()?).map(|p| (p, true))
        }
        (Place::Ssh { .. }, AgentBin::Path(path)) => Ok((path.clone(), false)),
    }
}

/// Copy this binary to a temporary file on the agent's host, after checking that the host
/// runs the same architecture. Returns the remote path.
fn copy_to(spec: &AgentSpec, own: &str) -> Result<String> {
    let label = spec.label();
    let out = ssh_command(spec, "uname -m")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running ssh for agent {label}"))?;
    if !out.status.success() {
        return Err(usage(format!(
            "agent {label}: ssh failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let arch = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let here = std::env::consts::ARCH;
    let same = arch == here || (here == "aarch64" && arch == "arm64");
    if !same {
        return Err(usage(format!(
            "agent {label} is a {arch} machine and this dbtax is built for {here}: install \
             dbtax there and name it with --agent-bin PATH"
        )));
    }
    let mut child = ssh_command(
        spec,
        "f=$(mktemp /tmp/dbtax-agent.XXXXXX) && cat > \"$f\" && chmod 700 \"$f\" && echo \"$f\"",
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .with_context(|| format!("running ssh for agent {label}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut file = std::fs::File::open(own).with_context(|| format!("reading {own}"))?;
    let copied = std::io::copy(&mut file, &mut stdin);
    drop(stdin);
    let out = child.wait_with_output()?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if copied.is_err() || !out.status.success() || !path.starts_with("/tmp/dbtax-agent.") {
        return Err(usage(format!(
            "agent {label}: copying dbtax there failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(path)
}

/// Start one agent; its stdout and stderr are read by threads of their own.
pub(super) fn spawn(
    index: usize,
    spec: &AgentSpec,
    bin: &(String, bool),
    tx: Sender<(usize, Event)>,
    traffic: Arc<Traffic>,
) -> Result<Agent> {
    let (program, copy) = bin;
    let mut cmd = match spec.place {
        Place::Local => {
            let mut c = Command::new(program);
            c.args(["agent", "--stdio"]);
            c
        }
        Place::Ssh { .. } => {
            let remove = if *copy { " --remove-binary" } else { "" };
            ssh_command(
                spec,
                &format!("{} agent --stdio{remove}", shell_quote(program)),
            )
        }
    };
    // Its own process group: the terminal's Ctrl-C is the coordinator's to handle (it stops
    // the trial, restores settings, then closes the agents).
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| usage(format!("cannot start agent {}: {e}", spec.label())))?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let counted = traffic.clone();
    let floor = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let dropped = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (floor_r, dropped_r) = (floor.clone(), dropped.clone());
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) => {
                    let _ = tx.send((index, Event::Gone("its channel closed".into())));
                    return;
                }
                Ok(n) => match counted.parse(n, &line) {
                    // An answer to a request its asker gave up on: late, dropped.
                    Ok((re, _))
                        if re != 0 && re <= floor_r.load(std::sync::atomic::Ordering::SeqCst) =>
                    {
                        dropped_r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    Ok((_, r)) => {
                        if tx.send((index, Event::Reply(r))).is_err() {
                            return;
                        }
                    }
                    Err(_) => {
                        let shown: String = line.trim().chars().take(120).collect();
                        let _ = tx.send((index, Event::Gone(format!("said '{shown}'"))));
                        return;
                    }
                },
                Err(e) => {
                    let _ = tx.send((index, Event::Gone(format!("reading from it failed: {e}"))));
                    return;
                }
            }
        }
    });
    let tail = Arc::new(Mutex::new(String::new()));
    let keep = tail.clone();
    std::thread::spawn(move || {
        let mut stderr = stderr;
        let mut buf = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut t = keep.lock().unwrap_or_else(|e| e.into_inner());
            t.push_str(&String::from_utf8_lossy(&buf[..n]));
            if t.len() > STDERR_TAIL {
                let cut = t.len() - STDERR_TAIL;
                let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(0);
                t.drain(..cut);
            }
        }
    });
    Ok(Agent {
        spec: spec.clone(),
        hello: Hello::default(),
        rtt_ns: 0,
        offset_ns: 0,
        stdin: child.stdin.take(),
        child,
        stderr: tail,
        traffic,
        gone: None,
        next_id: 0,
        floor,
        dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_the_remote_shell() {
        assert_eq!(shell_quote("/usr/local/bin/dbtax"), "/usr/local/bin/dbtax");
        assert_eq!(shell_quote("/opt/my dbtax"), "'/opt/my dbtax'");
        assert_eq!(shell_quote("a'b;rm -rf x"), r"'a'\''b;rm -rf x'");
        assert_eq!(shell_quote(""), "''");
    }
}
