//! A throwaway MariaDB/MySQL server: a fresh datadir in a private temporary directory, a unix
//! socket there, no TCP port unless asked. What every managed server shares (its folder, its
//! process, restarts, the clean-up) is `local::ManagedProcess`'s; here is only how mariadbd
//! is found, initialized and started (`Mariadbd`).

use crate::error::usage;
use crate::server::ManagedConfig;
use crate::server::local::{Launch, ManagedProcess, Restart, running_as_root, tail_of};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A running throwaway server.
#[derive(Debug)]
pub struct ManagedServer {
    process: ManagedProcess<Mariadbd>,
}

/// How mariadbd (or mysqld) starts in a private folder.
#[derive(Debug)]
pub struct Mariadbd {
    bin: PathBuf,
    port: Option<u16>,
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
        let launch = Mariadbd {
            bin,
            port: config.port,
            version_line,
        };
        Ok(ManagedServer {
            process: ManagedProcess::start(launch, config)?,
        })
    }

    /// The unix socket clients connect to.
    pub fn socket(&self) -> PathBuf {
        socket(&self.process.dir)
    }

    /// The data directory (log files live here).
    pub fn datadir(&self) -> PathBuf {
        datadir(&self.process.dir)
    }

    /// The server's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// The server's version line.
    pub fn version_line(&self) -> &str {
        &self.process.launch.version_line
    }

    /// Driver options for root over the private socket.
    pub fn opts(&self) -> mysql::OptsBuilder {
        opts(&self.process.dir)
    }

    /// Its process, as the experiment restarts it.
    pub fn process(&mut self) -> &mut dyn Restart {
        &mut self.process
    }
}

fn socket(dir: &Path) -> PathBuf {
    dir.join("mysqld.sock")
}

fn datadir(dir: &Path) -> PathBuf {
    dir.join("data")
}

fn opts(dir: &Path) -> mysql::OptsBuilder {
    mysql::OptsBuilder::new()
        .user(Some("root"))
        .socket(Some(socket(dir).to_string_lossy().into_owned()))
}

impl Launch for Mariadbd {
    fn what(&self) -> &'static str {
        "server"
    }

    fn init(&self, dir: &Path) -> Result<()> {
        let is_mariadb = self.version_line.contains("MariaDB");
        let log = dir.join("install.log");
        let out = std::fs::File::create(&log)?;
        let mut cmd;
        if is_mariadb {
            let script = find_install_db(&self.bin).ok_or_else(|| {
                usage("mariadb-install-db was not found next to the server binary or on PATH")
            })?;
            cmd = Command::new(script);
            cmd.arg("--no-defaults")
                .arg(format!("--datadir={}", datadir(dir).display()))
                .arg("--auth-root-authentication-method=normal")
                .arg("--skip-test-db");
        } else {
            cmd = Command::new(&self.bin);
            cmd.arg("--no-defaults")
                .arg("--initialize-insecure")
                .arg(format!("--datadir={}", datadir(dir).display()));
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

    fn command(&self, dir: &Path, opts: &[String]) -> Command {
        let mut args = vec![
            "--no-defaults".to_string(),
            format!("--datadir={}", datadir(dir).display()),
            format!("--socket={}", socket(dir).display()),
            format!("--pid-file={}", dir.join("mysqld.pid").display()),
            format!("--log-error={}", dir.join("error.log").display()),
            "--max-connections=2000".to_string(),
            "--innodb-buffer-pool-size=256M".to_string(),
        ];
        match self.port {
            Some(p) => {
                args.push(format!("--port={p}"));
                args.push("--bind-address=127.0.0.1".into());
            }
            None => args.push("--skip-networking".into()),
        }
        if running_as_root() {
            args.push("--user=root".into());
        }
        args.extend(opts.iter().map(|o| format!("--{o}")));
        let mut cmd = Command::new(&self.bin);
        cmd.args(args);
        cmd
    }

    fn log(&self, dir: &Path) -> PathBuf {
        dir.join("error.log")
    }

    fn answers(&self, dir: &Path) -> bool {
        socket(dir).exists() && mysql::Conn::new(opts(dir)).is_ok()
    }

    fn stop_signal(&self) -> i32 {
        libc::SIGTERM
    }
}
