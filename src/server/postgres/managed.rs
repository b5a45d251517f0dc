//! A throwaway PostgreSQL cluster: `initdb` into a private folder, `postgres` listening on a
//! unix socket there (TCP on 127.0.0.1 only with `--port`), its log collected into
//! `data/log/` without rotation (log bytes are a file's growth). PostgreSQL refuses to run
//! as root: when dbtax is root, initdb and postgres run as the `postgres` system user (or
//! $DBTAX_PG_USER) and the folder is theirs. The folder, the process, restarts and the
//! clean-up are `local::ManagedProcess`'s (stopped with SIGINT: a fast shutdown).

use crate::error::usage;
use crate::server::ManagedConfig;
use crate::server::local::{Launch, ManagedProcess, Restart, running_as_root, tail_of};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The superuser initdb creates; dbtax logs in as it over the private socket.
pub const SUPERUSER: &str = "postgres";
/// The port number that names the socket file (`.s.PGSQL.5432`) when no --port is given.
const DEFAULT_PORT: u16 = 5432;

/// A running throwaway cluster.
#[derive(Debug)]
pub struct PgManaged {
    process: ManagedProcess<Postgres>,
}

/// How initdb and postgres run in a private folder.
#[derive(Debug)]
pub struct Postgres {
    bin_dir: PathBuf,
    port: Option<u16>,
    /// Who runs the server: (uid, gid) when dbtax is root.
    owner: Option<(u32, u32)>,
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
        let launch = Postgres {
            bin_dir: find_bin_dir(config.server_bin.as_deref())?,
            port: config.port,
            owner: server_owner()?,
        };
        Ok(PgManaged {
            process: ManagedProcess::start(launch, config)?,
        })
    }

    /// The folder of the unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.process.dir.clone()
    }

    /// The port (it names the socket file).
    pub fn port(&self) -> u16 {
        self.process.launch.port()
    }

    /// The data directory.
    pub fn datadir(&self) -> PathBuf {
        datadir(&self.process.dir)
    }

    /// The postmaster's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// Driver configuration for the superuser over the private socket.
    pub fn config(&self, db: &str) -> postgres::Config {
        self.process.launch.config(&self.process.dir, db)
    }

    /// Its process, as the experiment restarts it.
    pub fn process(&mut self) -> &mut dyn Restart {
        &mut self.process
    }
}

fn datadir(dir: &Path) -> PathBuf {
    dir.join("data")
}

impl Postgres {
    fn port(&self) -> u16 {
        self.port.unwrap_or(DEFAULT_PORT)
    }

    fn config(&self, dir: &Path, db: &str) -> postgres::Config {
        let mut c = postgres::Config::new();
        c.user(SUPERUSER)
            .host_path(dir)
            .port(self.port())
            .dbname(db);
        c
    }

    fn program(&self, dir: &Path, program: &str) -> Command {
        let mut cmd = Command::new(self.bin_dir.join(program));
        if let Some((uid, gid)) = self.owner {
            std::os::unix::process::CommandExt::uid(&mut cmd, uid);
            std::os::unix::process::CommandExt::gid(&mut cmd, gid);
            cmd.env("HOME", dir);
        }
        cmd.current_dir(dir);
        cmd
    }
}

/// chown a path to the server's owner (dbtax is root).
fn chown(path: &Path, (uid, gid): (u32, u32)) -> Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: chown on a path we just created.
    if unsafe { libc::chown(c.as_ptr(), uid, gid) } != 0 {
        bail!(
            "chown {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

impl Launch for Postgres {
    fn what(&self) -> &'static str {
        "PostgreSQL"
    }

    fn init(&self, dir: &Path) -> Result<()> {
        let log = dir.join("initdb.log");
        if let Some(owner) = self.owner {
            chown(dir, owner)?;
        }
        let out = std::fs::File::create(&log)?;
        if let Some(owner) = self.owner {
            chown(&log, owner)?;
        }
        let status = self
            .program(dir, "initdb")
            .arg("-D")
            .arg(datadir(dir))
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

    fn command(&self, dir: &Path, opts: &[String]) -> Command {
        let mut args = vec!["-D".to_string(), datadir(dir).display().to_string()];
        let listen = if self.port.is_some() { "127.0.0.1" } else { "" };
        let own = [
            format!("listen_addresses={listen}"),
            format!("port={}", self.port()),
            format!("unix_socket_directories={}", dir.display()),
            "max_connections=400".into(),
            "shared_buffers=256MB".into(),
            "logging_collector=on".into(),
            "log_directory=log".into(),
            "log_filename=postgresql.log".into(),
            "log_rotation_size=0".into(),
            "log_rotation_age=0".into(),
        ];
        for o in own.iter().chain(opts) {
            args.push("-c".into());
            args.push(o.clone());
        }
        let mut cmd = self.program(dir, "postgres");
        cmd.args(args);
        cmd
    }

    fn log(&self, dir: &Path) -> PathBuf {
        datadir(dir).join("log/postgresql.log")
    }

    fn answers(&self, dir: &Path) -> bool {
        self.config(dir, "postgres")
            .connect(postgres::NoTls)
            .is_ok()
    }

    fn stop_signal(&self) -> i32 {
        // SIGINT: PostgreSQL's fast shutdown (SIGTERM would wait for clients).
        libc::SIGINT
    }
}
