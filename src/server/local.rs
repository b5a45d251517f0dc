//! A managed server's process, whatever the engine: a short private folder (unix socket
//! paths are limited to 108 bytes), the clean-up of folders left by a killed dbtax, and a
//! server process in its own process group (the terminal's Ctrl-C reaches dbtax only, which
//! then stops the server by its pid) that the kernel stops if dbtax dies. `ManagedProcess`
//! starts, restarts, stops and removes it; an engine only says how (`Launch`).

use anyhow::{Context, Result, bail};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How an engine starts its server in a private folder; `ManagedProcess` does the rest.
pub trait Launch: Send {
    /// What messages call it ("server", "PostgreSQL").
    fn what(&self) -> &'static str;
    /// Make the folder's contents before the first start (initialize a datadir).
    fn init(&self, dir: &Path) -> Result<()>;
    /// The command that starts the server in `dir` with these options (`name=value`, the
    /// user's then the experiment's).
    fn command(&self, dir: &Path, opts: &[String]) -> Command;
    /// Its log, quoted when it fails to start.
    fn log(&self, dir: &Path) -> PathBuf;
    /// Whether it answers yet.
    fn answers(&self, dir: &Path) -> bool;
    /// The signal that stops it quickly and cleanly (and stops it when dbtax dies).
    fn stop_signal(&self) -> i32;
}

/// A server dbtax started, as the experiment restarts it (restart-only settings): both
/// engines' managed servers are a `ManagedProcess`.
pub trait Restart: Send {
    /// Restart with other options; `extra` replaces the previous extra.
    fn restart(&mut self, extra: &[String]) -> Result<()>;
}

impl<L: Launch> Restart for ManagedProcess<L> {
    fn restart(&mut self, extra: &[String]) -> Result<()> {
        ManagedProcess::restart(self, extra)
    }
}

/// A running throwaway server: its folder, its process, the options it runs with. Stopped by
/// its pid and its folder removed when dropped: at normal exit, on error, after Ctrl-C.
pub struct ManagedProcess<L: Launch> {
    /// The private folder (datadir, socket, logs).
    pub dir: PathBuf,
    /// The engine's way of starting it.
    pub launch: L,
    /// The user's options (`--server-opt`).
    user_opts: Vec<String>,
    /// Options added by the experiment (restart-only settings), after the user's.
    extra_opts: Vec<String>,
    /// The CPUs it runs on (None: any).
    cpus: Option<Vec<usize>>,
    child: Option<Child>,
}

impl<L: Launch> std::fmt::Debug for ManagedProcess<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedProcess")
            .field("what", &self.launch.what())
            .field("dir", &self.dir)
            .field("pid", &self.pid())
            .finish()
    }
}

impl<L: Launch> ManagedProcess<L> {
    /// Make a private folder, initialize it and start the server; returns once it answers.
    /// Whatever fails after the folder exists, it is removed.
    pub fn start(launch: L, config: &super::ManagedConfig) -> Result<ManagedProcess<L>> {
        remove_stale_dirs();
        let mut p = ManagedProcess {
            dir: make_private_dir()?,
            launch,
            user_opts: config.server_opts.clone(),
            extra_opts: vec![],
            cpus: config.cpus.clone(),
            child: None,
        };
        p.launch.init(&p.dir)?;
        p.spawn_and_wait()?;
        Ok(p)
    }

    /// The server's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    fn spawn_and_wait(&mut self) -> Result<()> {
        let opts: Vec<String> = self
            .user_opts
            .iter()
            .chain(&self.extra_opts)
            .map(|o| o.trim_start_matches("--").to_string())
            .collect();
        let cmd = self.launch.command(&self.dir, &opts);
        let what = self.launch.what();
        let child = spawn_server(cmd, self.launch.stop_signal(), self.cpus.clone())
            .with_context(|| format!("starting the managed {what}"))?;
        self.child = Some(child);
        let (launch, dir) = (&self.launch, &self.dir);
        wait_until_answers(&mut self.child, what, &launch.log(dir), || {
            launch.answers(dir)
        })
    }

    /// Restart with other options (restart-only settings); `extra` replaces the previous.
    pub fn restart(&mut self, extra: &[String]) -> Result<()> {
        self.stop();
        self.extra_opts = extra.to_vec();
        self.spawn_and_wait()
    }

    fn stop(&mut self) {
        if let Some(child) = self.child.take() {
            stop_child(child, self.launch.stop_signal());
        }
    }
}

impl<L: Launch> Drop for ManagedProcess<L> {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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
fn remove_stale_dirs() {
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
fn make_private_dir() -> Result<PathBuf> {
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

/// Start a server process in its own process group, output discarded, on `cpus` when given;
/// `death_signal` stops it when dbtax's thread that started it dies (kill -9 included).
fn spawn_server(
    mut cmd: Command,
    death_signal: i32,
    cpus: Option<Vec<usize>>,
) -> std::io::Result<Child> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec. It runs
    // after any uid change (which would reset the death signal).
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, death_signal);
            if let Some(c) = &cpus {
                crate::host::cpus::set_affinity(c)?;
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Wait until a server we just started answers (`answers`), for at most 120 s. When it
/// exits first, `child` is cleared and the error quotes the end of its `log`; on a timeout
/// it stays, for its owner to stop.
fn wait_until_answers(
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
fn stop_child(mut child: Child, signal: i32) {
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
