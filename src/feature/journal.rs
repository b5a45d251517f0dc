//! The journal: before dbtax changes a setting or installs a plugin on a server it does not
//! manage, it writes the original values to a file under the state directory (fsync'ed, then
//! renamed into place). A normal exit, an error or Ctrl-C restores and removes it; after a
//! kill -9 or a power loss, `dbtax restore` reads it back.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What must be put back on one server.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Journal {
    /// The target, password redacted.
    pub target: String,
    /// The server's identity (what the journal is keyed by, here and on the server).
    #[serde(default)]
    pub server: String,
    /// The machine the dbtax that wrote it ran on.
    #[serde(default)]
    pub host: String,
    /// The dbtax process that wrote it.
    pub pid: u32,
    /// When the run started.
    pub started_at: String,
    /// Original global values, in the order they were first changed.
    pub originals: Vec<(String, String)>,
    /// Plugins dbtax installed (sonames), to uninstall.
    pub installed_plugins: Vec<String>,
    /// Servers that persist changed settings in a file (PostgreSQL's postgresql.auto.conf):
    /// each journaled setting's entry there before the run (null: it had none, and is
    /// RESET at restore). Absent for servers that do not (SET GLOBAL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persisted: Option<BTreeMap<String, Option<String>>>,
    /// That file's own bytes before the run (comments, quoting), put back once its settings
    /// are as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persisted_text: Option<String>,
    /// A restart-only variant: the server options dbtax restarted the server with (written
    /// before the restart); empty once it runs without them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restarted_with: Vec<String>,
    /// The variables those options set, with their values before the first restart: the
    /// server runs as found again when it shows these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub restart_originals: BTreeMap<String, String>,
    /// The user's command that restarts the server (`--restart-cmd`), for the words that
    /// say how to finish a restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_cmd: Option<String>,
    /// Logins dbtax created for a replay's clients (as the engine names them), written
    /// before each exists: dropped at the end and by `dbtax restore`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_logins: Vec<String>,
    /// What the server was besides its identity when the run began (`Held::facts`): a
    /// server whose identity matches but whose facts differ is a copy, not this server.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub facts: BTreeMap<String, String>,
    /// Every value dbtax set each setting to (journaled before it is set): a restore puts
    /// back only a setting still at one of them (or at its original), never one that
    /// someone changed since.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set_values: BTreeMap<String, Vec<String>>,
}

impl Journal {
    /// What the journal still holds on its server, in words, and what to do with it: a
    /// journal that owns a login or a setting is never to be deleted before they are put
    /// back by hand ("It owns: …"); one that owns nothing may be.
    pub fn what_it_owns(&self) -> String {
        let mut owns: Vec<String> = self
            .created_logins
            .iter()
            .map(|l| format!("a temporary login {l} that may read every table"))
            .collect();
        owns.extend(self.originals.iter().map(|(k, v)| {
            match self.set_values.get(k).and_then(|s| s.last()) {
                Some(set) => format!("{k} (set to {set}; it was {v})"),
                None => format!("{k} (it was {v})"),
            }
        }));
        owns.extend(
            self.installed_plugins
                .iter()
                .map(|p| format!("the {p} plugin dbtax installed")),
        );
        owns.extend(
            self.restarted_with
                .iter()
                .map(|o| format!("the server option --{o}")),
        );
        if owns.is_empty() {
            "It owns nothing on its server: if that server is gone, delete the journal".into()
        } else {
            format!(
                "It owns, on its own server: {}. Restore it against that server; if that \
                 server is gone, put these back there by hand before deleting the journal \
                 (never delete it while they are left).",
                owns.join("; ")
            )
        }
    }

    /// What differs between the facts the journal recorded and `now` (a server's facts):
    /// "port 3307 (the journal's server: 3306)". Facts either side could not read are not
    /// compared.
    pub fn differs(&self, now: &BTreeMap<String, String>) -> Vec<String> {
        self.facts
            .iter()
            .filter_map(|(k, was)| {
                let is = now.get(k)?;
                (!was.is_empty() && !is.is_empty() && was != is)
                    .then(|| format!("{k} {is} (the journal's server: {was})"))
            })
            .collect()
    }
}

/// The state directory: $DBTAX_STATE_DIR, else $XDG_STATE_HOME/dbtax, else
/// ~/.local/state/dbtax.
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DBTAX_STATE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME") {
        return PathBuf::from(d).join("dbtax");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/tmp".into());
    home.join(".local/state/dbtax")
}

/// The journal file of a target key.
pub fn path_for(key: &str) -> PathBuf {
    state_dir().join("journal").join(format!("{key}.json"))
}

impl Journal {
    /// Write atomically: a temporary file, fsync, rename, fsync of the directory. Any
    /// failure (a full disk, a read-only state directory) names the journal and leaves no
    /// temporary file behind.
    pub fn save(&self, path: &Path) -> Result<()> {
        let dir = path.parent().context("journal path has no directory")?;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the state directory {}", dir.display()))?;
        // A name of this process's own: two writers never share a temporary file.
        let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
        let written = (|| -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(serde_json::to_string_pretty(self)?.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(anyhow::anyhow!(
                "writing the journal {} failed: {e} (it keeps the original settings: free \
                 room in {}, or point DBTAX_STATE_DIR elsewhere)",
                path.display(),
                dir.display()
            ));
        }
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Read a journal; Ok(None) when there is none. A damaged one is an error that names the
    /// file and the way forward.
    pub fn load(path: &Path) -> Result<Option<Journal>> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(serde_json::from_str(&text).map_err(|e| {
                anyhow::anyhow!(
                    "the journal {} is damaged ({e}): dbtax cannot tell what to restore from \
                     it. Check the server's settings by hand (the file may still show the \
                     original values), then delete the file",
                    path.display()
                )
            })?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading the journal {}", path.display())),
        }
    }

    /// The server key, file-safe (as `Server::journal_key`).
    pub fn server_key(&self) -> String {
        crate::server::key_of(&self.server)
    }

    /// A setting's entry in the server's persisted settings file before the run: None when
    /// the server keeps no such file, Some(None) when the setting had no entry.
    pub fn persisted_entry(&self, name: &str) -> Option<Option<String>> {
        self.persisted
            .as_ref()
            .map(|p| p.get(name).cloned().flatten())
    }

    /// The original values by name.
    pub fn original_map(&self) -> BTreeMap<String, String> {
        self.originals.iter().cloned().collect()
    }

    /// The variables a server option sets (`log-bin=binlog` → `log_bin`).
    pub fn option_vars(opts: &[String]) -> Vec<String> {
        opts.iter()
            .map(|o| {
                let name = o.trim_start_matches("--");
                let name = name.split_once('=').map_or(name, |(n, _)| n);
                name.replace('-', "_")
            })
            .collect()
    }

    /// Whether the process that wrote it still runs (another dbtax working on the server).
    pub fn writer_alive(&self) -> bool {
        self.pid != std::process::id()
            && Path::new(&format!("/proc/{}", self.pid)).exists()
            && std::fs::read_to_string(format!("/proc/{}/comm", self.pid))
                .is_ok_and(|c| c.trim() == "dbtax")
    }
}

/// A journal file under the state directory.
#[derive(Debug)]
pub enum Pending {
    /// Readable.
    Found(PathBuf, Box<Journal>),
    /// Not readable as a journal: why.
    Damaged(PathBuf, String),
}

/// Every journal file under the state directory, readable or not.
pub fn pending() -> Vec<Pending> {
    let dir = state_dir().join("journal");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return vec![];
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| match Journal::load(&p) {
            Ok(Some(j)) => Some(Pending::Found(p, Box::new(j))),
            Ok(None) => None,
            Err(e) => Some(Pending::Damaged(p, format!("{e:#}"))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j/x.json");
        let j = Journal {
            target: "mysql://u:***@h:1/".into(),
            server: "mysql-h-3306-/var/lib/mysql/".into(),
            host: "here".into(),
            pid: 7,
            started_at: "now".into(),
            originals: vec![("general_log".into(), "OFF".into())],
            installed_plugins: vec!["server_audit".into()],
            persisted: Some(BTreeMap::from([("log_statement".into(), None)])),
            restarted_with: vec!["shared_preload_libraries=pgaudit".into()],
            restart_originals: BTreeMap::from([("shared_preload_libraries".into(), "".into())]),
            restart_cmd: Some("systemctl restart postgresql".into()),
            persisted_text: Some("# Do not edit this file manually!\n".into()),
            created_logins: vec!["'dbtax_replay_x'@'localhost'".into()],
            facts: BTreeMap::from([("port".into(), "3306".into())]),
            set_values: BTreeMap::from([("general_log".into(), vec!["ON".into()])]),
        };
        j.save(&p).unwrap();
        assert_eq!(Journal::load(&p).unwrap(), Some(j));
        assert_eq!(Journal::load(&dir.path().join("none.json")).unwrap(), None);
    }
}
