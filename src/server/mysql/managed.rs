//! A throwaway MariaDB/MySQL server: a fresh datadir in a private temporary directory, a unix
//! socket there, no TCP port unless asked. It is stopped by its pid and its directory removed
//! when the value is dropped: at normal exit, on error, and after Ctrl-C (the server runs in
//! its own process group, so the terminal's SIGINT reaches dbtax only, which then cleans up).
//! If dbtax itself is killed, PR_SET_PDEATHSIG stops the server too.

use crate::error::usage;
use crate::server::ManagedConfig;
use crate::server::local::{
    make_private_dir, remove_stale_dirs, running_as_root, spawn_server, stop_child, tail_of,
    wait_until_answers,
};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running throwaway server.
#[derive(Debug)]
pub struct ManagedServer {
    dir: PathBuf,
    bin: PathBuf,
    config: ManagedConfig,
    /// Options added by the experiment (restart-only settings), after the user's.
    extra_opts: Vec<String>,
    child: Option<Child>,
    /// The server's version line, e.g. "mariadbd  Ver 10.11.6-MariaDB".
    pub version_line: String,
}

const CANDIDATES: [&str; 2] = ["mariadbd", "mysqld"];

/// Find the server binary: `--server-bin`, then PATH, then /usr/sbin and /usr/libexec.
pub fn find_server_bin(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(p.to_path_buf());
        }
        return Err(usage(format!("--server-bin {}: no such file", p.display())));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(["/usr/sbin", "/usr/libexec", "/usr/local/sbin"].map(PathBuf::from));
    for name in CANDIDATES {
        for d in &dirs {
            let p = d.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err(usage(
        "no MariaDB or MySQL server is installed (looked for mariadbd and mysqld on PATH and in \
         /usr/sbin). Install one with `sudo apt-get install mariadb-server` (or run `make demo`, \
         which does), pass --server-bin PATH, or point --target at your own server with \
         mysql://user:pass@host:port/db",
    ))
}

fn find_install_db(server_bin: &Path) -> Option<PathBuf> {
    let mut dirs = vec![];
    if let Some(d) = server_bin.parent() {
        dirs.push(d.to_path_buf());
        if let Some(up) = d.parent() {
            dirs.push(up.join("bin"));
            dirs.push(up.join("scripts"));
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    dirs.extend(std::env::split_paths(&path));
    dirs.push(PathBuf::from("/usr/bin"));
    for name in ["mariadb-install-db", "mysql_install_db"] {
        for d in &dirs {
            let p = d.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

impl ManagedServer {
    /// Initialize a datadir and start the server; returns once it answers on its socket.
    pub fn start(config: &ManagedConfig) -> Result<ManagedServer> {
        let bin = find_server_bin(config.server_bin.as_deref())?;
        let version = Command::new(&bin)
            .arg("--version")
            .output()
            .with_context(|| format!("running {} --version", bin.display()))?;
        let version_line = String::from_utf8_lossy(&version.stdout).trim().to_string();
        if !version.status.success() || !version_line.contains("Ver") {
            return Err(usage(format!(
                "{} is not a MariaDB or MySQL server: `{} --version` {} and printed {:?}. \
                 Pass --server-bin the path of mariadbd or mysqld",
                bin.display(),
                bin.display(),
                version.status,
                format!("{version_line}{}", String::from_utf8_lossy(&version.stderr))
                    .lines()
                    .next()
                    .unwrap_or("")
            )));
        }
        remove_stale_dirs();
        let dir = make_private_dir()?;
        let mut server = ManagedServer {
            dir,
            bin,
            config: config.clone(),
            extra_opts: vec![],
            child: None,
            version_line,
        };
        // From here on, Drop removes the directory whatever fails.
        server.initialize()?;
        server.spawn_and_wait()?;
        Ok(server)
    }

    /// The unix socket clients connect to.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("mysqld.sock")
    }

    /// The data directory (log files live here).
    pub fn datadir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The server's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Driver options for root over the private socket.
    pub fn opts(&self) -> mysql::OptsBuilder {
        mysql::OptsBuilder::new()
            .user(Some("root"))
            .socket(Some(self.socket().to_string_lossy().into_owned()))
    }

    fn initialize(&self) -> Result<()> {
        let is_mariadb = self.version_line.contains("MariaDB");
        let log = self.dir.join("install.log");
        let out = std::fs::File::create(&log)?;
        let mut cmd;
        if is_mariadb {
            let script = find_install_db(&self.bin).ok_or_else(|| {
                usage("mariadb-install-db was not found next to the server binary or on PATH")
            })?;
            cmd = Command::new(script);
            cmd.arg("--no-defaults")
                .arg(format!("--datadir={}", self.datadir().display()))
                .arg("--auth-root-authentication-method=normal")
                .arg("--skip-test-db");
        } else {
            cmd = Command::new(&self.bin);
            cmd.arg("--no-defaults")
                .arg("--initialize-insecure")
                .arg(format!("--datadir={}", self.datadir().display()));
        }
        if running_as_root() {
            cmd.arg("--user=root");
        }
        let status = cmd
            .stdout(out.try_clone()?)
            .stderr(out)
            .stdin(Stdio::null())
            .status()
            .context("running the datadir initialization")?;
        if !status.success() {
            let tail = tail_of(&log, 15);
            bail!("initializing the managed server's datadir failed ({status}):\n{tail}");
        }
        Ok(())
    }

    fn server_args(&self) -> Vec<String> {
        let mut args = vec![
            "--no-defaults".to_string(),
            format!("--datadir={}", self.datadir().display()),
            format!("--socket={}", self.socket().display()),
            format!("--pid-file={}", self.dir.join("mysqld.pid").display()),
            format!("--log-error={}", self.dir.join("error.log").display()),
            "--max-connections=2000".to_string(),
            "--innodb-buffer-pool-size=256M".to_string(),
        ];
        match self.config.port {
            Some(p) => {
                args.push(format!("--port={p}"));
                args.push("--bind-address=127.0.0.1".into());
            }
            None => args.push("--skip-networking".into()),
        }
        if running_as_root() {
            args.push("--user=root".into());
        }
        for o in self.config.server_opts.iter().chain(&self.extra_opts) {
            args.push(format!("--{}", o.trim_start_matches("--")));
        }
        args
    }

    fn spawn_and_wait(&mut self) -> Result<()> {
        let mut cmd = Command::new(&self.bin);
        cmd.args(self.server_args());
        let child = spawn_server(cmd, libc::SIGTERM)
            .with_context(|| format!("starting {}", self.bin.display()))?;
        self.child = Some(child);
        let (socket, opts) = (self.socket(), self.opts());
        let log = self.dir.join("error.log");
        wait_until_answers(&mut self.child, "server", &log, || {
            socket.exists() && mysql::Conn::new(opts.clone()).is_ok()
        })
    }

    /// Restart with other options (restart-only settings). `extra` replaces the previous extra.
    pub fn restart(&mut self, extra: &[String]) -> Result<()> {
        self.stop_process();
        self.extra_opts = extra.to_vec();
        self.spawn_and_wait()
    }

    fn stop_process(&mut self) {
        if let Some(child) = self.child.take() {
            stop_child(child, libc::SIGTERM);
        }
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        self.stop_process();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
