//! What both managed servers need from this machine: a short private folder (unix socket
//! paths are limited to 108 bytes), the clean-up of folders left by a killed dbtax, and a
//! server process in its own process group (the terminal's Ctrl-C reaches dbtax only, which
//! then stops the server by its pid) that the kernel stops if dbtax dies.

use anyhow::{Context, Result, bail};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether dbtax runs as root.
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Where managed servers live: the temporary directory, unless its path is too long for a
/// unix socket (the kernel allows 108 bytes).
pub fn base_dir() -> PathBuf {
    let base = std::env::temp_dir();
    if base.as_os_str().len() > 40 {
        PathBuf::from("/tmp")
    } else {
        base
    }
}

/// Remove the folders of managed servers whose dbtax is gone (killed with -9: nothing ran to
/// clean up). A folder is `dbtax-<pid>-<n>`; its owner is gone when no process has that pid.
pub fn remove_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(base_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("dbtax-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() && e.path().join("data").is_dir() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A short, private directory: the socket path must stay under the kernel's 108 bytes.
pub fn make_private_dir() -> Result<PathBuf> {
    let base = base_dir();
    for n in 0..1000u32 {
        let d = base.join(format!("dbtax-{}-{n}", std::process::id()));
        match std::fs::create_dir(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", d.display())),
        }
    }
    bail!(
        "could not create a private directory under {}",
        base.display()
    )
}

/// Start a server process in its own process group, output discarded; `death_signal` stops
/// it when dbtax's thread that started it dies (kill -9 included).
pub fn spawn_server(mut cmd: Command, death_signal: i32) -> std::io::Result<Child> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec. It runs
    // after any uid change (which would reset the death signal).
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, death_signal);
            Ok(())
        });
    }
    cmd.spawn()
}

/// Wait until a server we just started answers (`answers`), for at most 120 s. When it
/// exits first, `child` is cleared and the error quotes the end of its `log`; on a timeout
/// it stays, for its owner to stop.
pub fn wait_until_answers(
    child: &mut Option<Child>,
    what: &str,
    log: &Path,
    answers: impl Fn() -> bool,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
            *child = None;
            let tail = tail_of(log, 20);
            bail!("the managed {what} exited during start-up ({status}):\n{tail}");
        }
        if answers() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the managed {what} did not answer within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stop a server we started, by its pid: `signal`, then up to 60 s, then SIGKILL.
pub fn stop_child(mut child: Child, signal: i32) {
    // SAFETY: kill with a pid we spawned and have not reaped.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The last lines of a log file, for errors.
pub fn tail_of(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
