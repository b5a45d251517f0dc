//! What a PostgreSQL login may do and what a feature needs, read without changing anything:
//! the privileges to switch a setting and put it back exactly, the libraries a feature loads
//! (present on the server?), and which settings take a restart.

use super::super::{clean_error, quote_literal};
use super::PgAdmin;
use crate::server::catalog::Feature;
use crate::server::{Settings, Support, SupportContext};
use anyhow::Result;

/// What a setting's change needs that this login may lack, as GRANT statements.
const GRANTS: &str = "GRANT ALTER SYSTEM ON PARAMETER <name> TO <user>; GRANT EXECUTE ON \
                      FUNCTION pg_reload_conf() TO <user>; GRANT SELECT ON pg_file_settings TO \
                      <user>; GRANT EXECUTE ON FUNCTION pg_show_all_file_settings() TO <user> \
                      (PostgreSQL 15+), or make it a superuser";

impl PgAdmin {
    /// Superusers may; others need ALTER SYSTEM on the parameter, pg_reload_conf() and
    /// pg_file_settings (to restore postgresql.auto.conf exactly).
    pub(super) fn probe_privilege(&mut self, name: &str) -> Result<(), String> {
        let why = |e: postgres::Error| format!("cannot check the privileges: {}", clean_error(&e));
        if self.is_superuser().map_err(|e| e.to_string())? {
            return Ok(());
        }
        let row = self
            .conn
            .query_one(
                "SELECT has_parameter_privilege($1, 'ALTER SYSTEM'), \
                 has_function_privilege('pg_reload_conf()', 'EXECUTE'), \
                 has_table_privilege('pg_file_settings', 'SELECT') \
                 AND has_function_privilege('pg_show_all_file_settings()', 'EXECUTE')",
                &[&name],
            )
            .map_err(why)?;
        let (alter, reload, read): (bool, bool, bool) = (row.get(0), row.get(1), row.get(2));
        if alter && reload && read {
            return Ok(());
        }
        Err(format!(
            "this user may not change {name} with ALTER SYSTEM and put it back exactly \
             (needs: {GRANTS})"
        ))
    }

    /// `Admin::support`: the feature's libraries present, the list a library must be
    /// preloaded in, each setting known and switchable by this login, restarts possible.
    pub(super) fn support_of(&mut self, f: &Feature, ctx: SupportContext) -> Result<Support> {
        let settings: Vec<(String, String)> =
            f.on.iter()
                .chain(f.off)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        for (k, v) in &settings {
            if k.ends_with("_preload_libraries") {
                for lib in v.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                    if let Some(why) = self.library_missing(lib)? {
                        return Ok(Support::No(why));
                    }
                }
            }
        }
        let mut notes = vec![];
        // A library every variant needs preloaded (`requires_on` names the list setting,
        // `managed_server_opts` the library): a managed cluster starts with it.
        if let (Some(list), Some(opt)) = (f.requires_on, f.managed_server_opts.first()) {
            let lib = opt.split_once('=').map_or(*opt, |(_, l)| l);
            if let Some(why) = self.library_missing(lib)? {
                return Ok(Support::No(why));
            }
            let now = self.global_vars(&[list])?.remove(list).unwrap_or_default();
            if !now.split(',').any(|l| l.trim() == lib) {
                if !ctx.managed {
                    return Ok(Support::No(format!(
                        "needs {lib} in {list}, which takes a server restart: add it in the \
                         server's configuration, or use a managed target"
                    )));
                }
                notes.push(format!("starts the managed server with {opt}"));
            }
        }
        let names: Vec<&str> = settings.iter().map(|(k, _)| k.as_str()).collect();
        let known = self.settings(&names)?;
        for (k, _) in &settings {
            if !k.contains('.') && !known.contains_key(k) {
                return Ok(Support::No(format!("the server has no setting {k}")));
            }
            if let Err(why) = self.probe_set_privilege(k, "") {
                return Ok(Support::No(why));
            }
        }
        let restart = self.restart_only(&settings)?;
        let mut opts: Vec<&str> = vec![];
        for o in restart.iter().flatten() {
            if !opts.contains(&o.as_str()) {
                opts.push(o);
            }
        }
        if opts.is_empty() {
            return Ok(Support::Yes(notes.join("; ")));
        }
        if !ctx.can_restart {
            return Ok(Support::No(format!(
                "switching it takes a server restart ({}: pg_settings says so), which dbtax \
                 does only on a managed target, or with --restart-cmd",
                opts.join(" ")
            )));
        }
        Ok(Support::Yes(format!(
            "restarts the server with {} for its trials (pg_settings: context postmaster)",
            opts.join(" ")
        )))
    }

    /// Is the library on the server? LOAD it in this session (superusers only): a missing
    /// file says "could not access file"; one that must be preloaded refuses otherwise.
    pub(super) fn library_missing(&mut self, lib: &str) -> Result<Option<String>> {
        if !self.is_superuser()? {
            return Ok(None);
        }
        match self
            .conn
            .batch_execute(&format!("LOAD {}", quote_literal(lib)))
        {
            Err(e) if clean_error(&e).contains("could not access file") => {
                let major = self.major_version().unwrap_or(15);
                let package = match lib {
                    "pgaudit" => format!("postgresql-{major}-pgaudit"),
                    _ => format!("postgresql-contrib (or postgresql-{major})"),
                };
                Ok(Some(format!(
                    "the {lib} library is not installed on the server: install the {package} \
                     package (e.g. `sudo apt-get install {}`)",
                    package.split_whitespace().next().unwrap_or(&package)
                )))
            }
            _ => Ok(None),
        }
    }

    fn major_version(&mut self) -> Option<u32> {
        let row = self.conn.query_one("SHOW server_version_num", &[]).ok()?;
        row.get::<_, String>(0)
            .parse::<u32>()
            .ok()
            .map(|n| n / 10000)
    }
}
