//! A throwaway PostgreSQL cluster: `initdb` into a private folder, `postgres` listening on a
//! unix socket there (TCP on 127.0.0.1 only with `--port`), its log collected into
//! `data/log/` without rotation (log bytes are a file's growth). PostgreSQL refuses to run
//! as root: when dbtax is root, initdb and postgres run as the `postgres` system user (or
//! $DBTAX_PG_USER) and the folder is theirs. Stopped by its pid (fast shutdown) and removed
//! when dropped; the kernel stops it if dbtax is killed.

use crate::error::usage;
use crate::server::ManagedConfig;
use crate::server::local::{
    make_private_dir, remove_stale_dirs, running_as_root, spawn_server, stop_child, tail_of,
    wait_until_answers,
};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The superuser initdb creates; dbtax logs in as it over the private socket.
pub const SUPERUSER: &str = "postgres";
/// The port number that names the socket file (`.s.PGSQL.5432`) when no --port is given.
const DEFAULT_PORT: u16 = 5432;

/// A running throwaway cluster.
#[derive(Debug)]
pub struct PgManaged {
    dir: PathBuf,
    bin_dir: PathBuf,
    config: ManagedConfig,
    /// Who runs the server: (uid, gid) when dbtax is root.
    owner: Option<(u32, u32)>,
    /// Options added by the experiment (restart-only settings), after the user's.
    extra_opts: Vec<String>,
    child: Option<Child>,
}

/// The folder of `postgres` and `initdb`: `--server-bin`'s, else PATH's, else the highest
/// version under /usr/lib/postgresql.
pub fn find_bin_dir(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(p.parent().unwrap_or(Path::new("/")).to_path_buf());
        }
        return Err(usage(format!("--server-bin {}: no such file", p.display())));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for d in std::env::split_paths(&path) {
        if d.join("postgres").is_file() && d.join("initdb").is_file() {
            // The installation's own folder (PATH may hold links to it): PostgreSQL finds its
            // libraries and pgbench beside the real binary.
            let real = std::fs::canonicalize(d.join("postgres")).unwrap_or(d.join("postgres"));
            return Ok(real.parent().map(Path::to_path_buf).unwrap_or(d));
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, d)| d).ok_or_else(|| {
        usage(
            "no PostgreSQL server is installed (looked for postgres and initdb on PATH and in \
             /usr/lib/postgresql/*/bin). Install one with `sudo apt-get install postgresql-15` \
             (or run `make demo`, which does), pass --server-bin PATH/postgres, or point \
             --target at your own server with postgres://user:pass@host:port/db",
        )
    })
}

/// The uid and gid of the user the server runs as when dbtax is root.
fn server_owner() -> Result<Option<(u32, u32)>> {
    if !running_as_root() {
        return Ok(None);
    }
    let name = std::env::var("DBTAX_PG_USER").unwrap_or_else(|_| "postgres".into());
    let c = std::ffi::CString::new(name.clone())?;
    // SAFETY: getpwnam reads the passwd database; the pointer is used before any other call.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return Err(usage(format!(
            "PostgreSQL refuses to run as root, and there is no '{name}' user to run it as: \
             install the postgresql package (it creates one), or name another user in \
             $DBTAX_PG_USER"
        )));
    }
    // SAFETY: pw is a valid passwd entry.
    Ok(Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) }))
}

impl PgManaged {
    /// initdb, then start the server; returns once it answers on its socket.
    pub fn start(config: &ManagedConfig) -> Result<PgManaged> {
        let bin_dir = find_bin_dir(config.server_bin.as_deref())?;
        let owner = server_owner()?;
        remove_stale_dirs();
        let dir = make_private_dir()?;
        let mut server = PgManaged {
            dir,
            bin_dir,
            config: config.clone(),
            owner,
            extra_opts: vec![],
            child: None,
        };
        // From here on, Drop removes the directory whatever fails.
        if let Some((uid, gid)) = owner {
            // SAFETY: chown on a path we just created.
            let c = std::ffi::CString::new(server.dir.as_os_str().as_encoded_bytes())?;
            if unsafe { libc::chown(c.as_ptr(), uid, gid) } != 0 {
                bail!(
                    "chown {}: {}",
                    server.dir.display(),
                    std::io::Error::last_os_error()
                );
            }
        }
        server.initdb()?;
        server.spawn_and_wait()?;
        Ok(server)
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin_dir.join(program));
        if let Some((uid, gid)) = self.owner {
            std::os::unix::process::CommandExt::uid(&mut cmd, uid);
            std::os::unix::process::CommandExt::gid(&mut cmd, gid);
            cmd.env("HOME", &self.dir);
        }
        cmd.current_dir(&self.dir);
        cmd
    }

    /// The folder of the unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.clone()
    }

    /// The port (it names the socket file).
    pub fn port(&self) -> u16 {
        self.config.port.unwrap_or(DEFAULT_PORT)
    }

    /// The data directory.
    pub fn datadir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The postmaster's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Driver configuration for the superuser over the private socket.
    pub fn config(&self, db: &str) -> postgres::Config {
        let mut c = postgres::Config::new();
        c.user(SUPERUSER)
            .host_path(self.socket_dir())
            .port(self.port())
            .dbname(db);
        c
    }

    fn initdb(&self) -> Result<()> {
        let log = self.dir.join("initdb.log");
        let out = std::fs::File::create(&log)?;
        if let Some((uid, gid)) = self.owner {
            let c = std::ffi::CString::new(log.as_os_str().as_encoded_bytes())?;
            // SAFETY: chown on a file we just created.
            unsafe { libc::chown(c.as_ptr(), uid, gid) };
        }
        let status = self
            .command("initdb")
            .arg("-D")
            .arg(self.datadir())
            .args([
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .stdout(out.try_clone()?)
            .stderr(out)
            .stdin(Stdio::null())
            .status()
            .context("running initdb")?;
        if !status.success() {
            bail!("initdb failed ({status}):\n{}", tail_of(&log, 15));
        }
        Ok(())
    }

    fn server_args(&self) -> Vec<String> {
        let mut args = vec!["-D".to_string(), self.datadir().display().to_string()];
        let listen = if self.config.port.is_some() {
            "127.0.0.1"
        } else {
            ""
        };
        let own = [
            format!("listen_addresses={listen}"),
            format!("port={}", self.port()),
            format!("unix_socket_directories={}", self.socket_dir().display()),
            "max_connections=400".into(),
            "shared_buffers=256MB".into(),
            "logging_collector=on".into(),
            "log_directory=log".into(),
            "log_filename=postgresql.log".into(),
            "log_rotation_size=0".into(),
            "log_rotation_age=0".into(),
        ];
        let user = self.config.server_opts.iter().chain(&self.extra_opts);
        for o in own.iter().chain(user) {
            args.push("-c".into());
            args.push(o.trim_start_matches("--").to_string());
        }
        args
    }

    fn spawn_and_wait(&mut self) -> Result<()> {
        let mut cmd = self.command("postgres");
        cmd.args(self.server_args());
        let child = spawn_server(cmd, libc::SIGINT).context("starting postgres")?;
        self.child = Some(child);
        let config = self.config("postgres");
        let log = self.datadir().join("log/postgresql.log");
        wait_until_answers(&mut self.child, "PostgreSQL", &log, || {
            config.connect(postgres::NoTls).is_ok()
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
            // SIGINT: PostgreSQL's fast shutdown (SIGTERM would wait for clients).
            stop_child(child, libc::SIGINT);
        }
    }
}

impl Drop for PgManaged {
    fn drop(&mut self) {
        self.stop_process();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
