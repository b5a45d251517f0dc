//! Target URLs: `managed:mariadb`, `managed:postgres`, `mysql://user:pass@host:port/db`,
//! `mysql://user@localhost/db?socket=/path`, `postgres://user:pass@host:port/db` and
//! `postgres://user@/db?host=/socket/dir` (libpq's spelling). Parsing never echoes a password
//! back.

use crate::error::usage;
use anyhow::Result;
use std::path::PathBuf;

/// Which managed server to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ManagedKind {
    /// The installed mariadbd (or mysqld).
    Mariadb,
    /// The installed PostgreSQL (initdb + postgres).
    Postgres,
}

/// A parsed `--target`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TargetSpec {
    /// A throwaway server dbtax starts and removes.
    Managed(ManagedKind),
    /// The user's own MySQL/MariaDB server.
    Mysql(MysqlUrl),
    /// The user's own PostgreSQL server.
    Postgres(PgUrl),
}

/// Where and how to reach a user's PostgreSQL server.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PgUrl {
    /// Login user.
    pub user: String,
    /// Password, never printed.
    pub password: Option<String>,
    /// Host name or address (ignored when `socket_dir` is set).
    pub host: String,
    /// TCP port (also names the unix socket file, `.s.PGSQL.<port>`).
    pub port: u16,
    /// Database named in the URL path, if any.
    pub db: Option<String>,
    /// The folder of the unix socket (`?host=/dir`, as libpq spells it).
    pub socket_dir: Option<PathBuf>,
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl PgUrl {
    /// The URL with the password replaced by `***`: the only form that is ever printed.
    pub fn redacted(&self) -> String {
        let pass = if self.password.is_some() { ":***" } else { "" };
        let db = self.db.as_deref().unwrap_or("");
        match &self.socket_dir {
            Some(dir) => format!(
                "postgres://{}{pass}@:{}/{db}?host={}",
                self.user,
                self.port,
                dir.display()
            ),
            None => format!(
                "postgres://{}{pass}@{}:{}/{db}",
                self.user, self.host, self.port
            ),
        }
    }

    /// Driver configuration for database `db` (the URL's when None).
    pub fn config(&self, db: Option<&str>) -> postgres::Config {
        let mut c = postgres::Config::new();
        c.user(&self.user).port(self.port);
        if let Some(p) = &self.password {
            c.password(p);
        }
        match &self.socket_dir {
            Some(dir) => c.host_path(dir),
            None => c.host(&self.host),
        };
        if let Some(db) = db.or(self.db.as_deref()) {
            c.dbname(db);
        }
        c
    }
}

/// Where and how to reach a user's server.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MysqlUrl {
    /// Login user.
    pub user: String,
    /// Password, never printed.
    pub password: Option<String>,
    /// Host name or address (ignored when `socket` is set).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Database named in the URL path, if any.
    pub db: Option<String>,
    /// Unix socket path (`?socket=`): connect through it instead of TCP.
    pub socket: Option<PathBuf>,
}

impl std::fmt::Debug for MysqlUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl MysqlUrl {
    /// The URL with the password replaced by `***`: the only form that is ever printed.
    pub fn redacted(&self) -> String {
        let pass = if self.password.is_some() { ":***" } else { "" };
        let db = self.db.as_deref().unwrap_or("");
        let mut s = format!(
            "mysql://{}{}@{}:{}/{}",
            self.user, pass, self.host, self.port, db
        );
        if let Some(sock) = &self.socket {
            s.push_str(&format!("?socket={}", sock.display()));
        }
        s
    }

    /// Driver options. TCP stays TCP: the crate would otherwise switch a loopback
    /// connection to the unix socket behind the user's back.
    pub fn opts(&self) -> mysql::OptsBuilder {
        let b = mysql::OptsBuilder::new()
            .user(Some(self.user.clone()))
            .pass(self.password.clone())
            .db_name(self.db.clone());
        match &self.socket {
            Some(sock) => b.socket(Some(sock.to_string_lossy().into_owned())),
            None => b
                .ip_or_hostname(Some(self.host.clone()))
                .tcp_port(self.port)
                .prefer_socket(false),
        }
    }
}

impl TargetSpec {
    /// Parse a `--target` value.
    pub fn parse(s: &str) -> Result<TargetSpec> {
        match s {
            "managed:mariadb" | "managed:mysql" | "managed" => {
                return Ok(TargetSpec::Managed(ManagedKind::Mariadb));
            }
            "managed:postgres" | "managed:postgresql" => {
                return Ok(TargetSpec::Managed(ManagedKind::Postgres));
            }
            _ => {}
        }
        if let Some(kind) = s.strip_prefix("managed:") {
            return Err(usage(format!(
                "unknown managed target 'managed:{kind}': dbtax can start 'managed:mariadb' \
                 and 'managed:postgres'"
            )));
        }
        let bad = |why: &str| {
            usage(format!(
                "bad --target '{}': {why}. Expected managed:mariadb, managed:postgres, \
                 mysql://user:pass@host:port/db, mysql://user@localhost/db?socket=/path/mysqld.sock, \
                 postgres://user:pass@host:port/db or postgres://user@/db?host=/socket/dir",
                redact_raw(s)
            ))
        };
        let with_host = libpq_empty_host(s);
        let parsed = url::Url::parse(&with_host).map_err(|e| bad(&e.to_string()))?;
        let postgres = matches!(parsed.scheme(), "postgres" | "postgresql");
        if !postgres && parsed.scheme() != "mysql" && parsed.scheme() != "mariadb" {
            return Err(bad(&format!("unknown scheme '{}'", parsed.scheme())));
        }
        let decode = |v: &str| {
            url::form_urlencoded::parse(format!("x={v}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let user = if !parsed.username().is_empty() {
            decode(parsed.username())
        } else if postgres {
            "postgres".to_string()
        } else {
            "root".to_string()
        };
        let password = parsed.password().map(decode);
        let host = parsed.host_str().unwrap_or("localhost").to_string();
        let port = parsed.port().unwrap_or(if postgres { 5432 } else { 3306 });
        let db = parsed.path().trim_start_matches('/').to_string();
        let db = (!db.is_empty()).then_some(db);
        let mut socket = None;
        for (k, v) in parsed.query_pairs() {
            match (k.as_ref(), postgres) {
                ("socket", false) | ("host", true) => socket = Some(PathBuf::from(v.into_owned())),
                (other, _) => return Err(bad(&format!("unknown parameter '{other}'"))),
            }
        }
        if postgres {
            if host.is_empty() && socket.is_none() {
                return Err(bad("no host (write ?host=/socket/dir for a unix socket)"));
            }
            return Ok(TargetSpec::Postgres(PgUrl {
                user,
                password,
                host: if host.is_empty() {
                    "localhost".into()
                } else {
                    host
                },
                port,
                db,
                socket_dir: socket,
            }));
        }
        if host.is_empty() && socket.is_none() {
            return Err(bad("no host"));
        }
        Ok(TargetSpec::Mysql(MysqlUrl {
            user,
            password,
            host,
            port,
            db,
            socket,
        }))
    }

    /// The engine's family as far as the target tells before the server answers (MariaDB
    /// for the MySQL engine: its families share the managed start options).
    pub fn engine_family(&self) -> super::Family {
        match self {
            TargetSpec::Managed(ManagedKind::Mariadb) | TargetSpec::Mysql(_) => {
                super::Family::Mariadb
            }
            TargetSpec::Managed(ManagedKind::Postgres) | TargetSpec::Postgres(_) => {
                super::Family::Postgres
            }
        }
    }

    /// Printable form, password redacted.
    pub fn redacted(&self) -> String {
        match self {
            TargetSpec::Managed(ManagedKind::Mariadb) => "managed:mariadb".into(),
            TargetSpec::Managed(ManagedKind::Postgres) => "managed:postgres".into(),
            TargetSpec::Mysql(u) => u.redacted(),
            TargetSpec::Postgres(u) => u.redacted(),
        }
    }
}

/// libpq allows an empty host (`postgres://user@/db?host=/dir`, `postgres://user@:5433/db`):
/// the url crate does not, so such a URL gets `localhost` there (the socket folder wins).
fn libpq_empty_host(s: &str) -> String {
    let Some(rest) = s
        .strip_prefix("postgres://")
        .or_else(|| s.strip_prefix("postgresql://"))
    else {
        return s.to_string();
    };
    let scheme_len = s.len() - rest.len();
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@').map_or(0, |i| i + 1);
    if rest[at..authority_end].starts_with(':') || at == authority_end {
        let split = scheme_len + at;
        return format!("{}localhost{}", &s[..split], &s[split..]);
    }
    s.to_string()
}

/// Redact the password of anything that looks like `scheme://user:pass@...`, for errors
/// about strings that did not parse and for the command line stored in results.
pub fn redact_raw(s: &str) -> String {
    let Some(scheme_end) = s.find("://") else {
        return s.to_string();
    };
    let rest = &s[scheme_end + 3..];
    let Some(at) = rest.rfind('@') else {
        return s.to_string();
    };
    let creds = &rest[..at];
    match creds.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &s[..scheme_end + 3],
            &creds[..colon],
            &rest[at..]
        ),
        None => s.to_string(),
    }
}

/// argv with passwords redacted, for results and reports.
pub fn redacted_argv() -> Vec<String> {
    std::env::args().map(|a| redact_raw(&a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tcp_url_and_redacts_password() {
        let t = TargetSpec::parse("mysql://bob:s%40cret@127.0.0.1:3307/app").unwrap();
        let TargetSpec::Mysql(u) = &t else { panic!() };
        assert_eq!(u.user, "bob");
        assert_eq!(u.password.as_deref(), Some("s@cret"));
        assert_eq!(u.port, 3307);
        assert_eq!(u.db.as_deref(), Some("app"));
        assert!(u.socket.is_none());
        assert_eq!(t.redacted(), "mysql://bob:***@127.0.0.1:3307/app");
        assert!(!format!("{t:?}").contains("cret"));
    }

    #[test]
    fn parses_socket_url() {
        let t = TargetSpec::parse("mysql://root@localhost/?socket=/tmp/x.sock").unwrap();
        let TargetSpec::Mysql(u) = t else { panic!() };
        assert_eq!(
            u.socket.as_deref(),
            Some(std::path::Path::new("/tmp/x.sock"))
        );
        assert_eq!(u.db, None);
    }

    #[test]
    fn parses_postgres_urls_tcp_and_socket() {
        let t = TargetSpec::parse("postgresql://app:pw%21@127.0.0.1:5433/shop").unwrap();
        let TargetSpec::Postgres(u) = &t else {
            panic!()
        };
        assert_eq!((u.user.as_str(), u.port), ("app", 5433));
        assert_eq!(u.password.as_deref(), Some("pw!"));
        assert_eq!(u.db.as_deref(), Some("shop"));
        assert_eq!(t.redacted(), "postgres://app:***@127.0.0.1:5433/shop");
        let t = TargetSpec::parse("postgres://postgres@/bench?host=/run/postgresql").unwrap();
        let TargetSpec::Postgres(u) = &t else {
            panic!()
        };
        assert_eq!(
            u.socket_dir.as_deref(),
            Some(std::path::Path::new("/run/postgresql"))
        );
        assert_eq!(u.port, 5432);
        assert_eq!(
            TargetSpec::parse("managed:postgres").unwrap(),
            TargetSpec::Managed(ManagedKind::Postgres)
        );
        // Its redacted form (no password) parses back to the same target.
        let again = TargetSpec::parse(&t.redacted()).unwrap();
        assert_eq!(again, t);
        let e = TargetSpec::parse("postgres://u:hunter2@h/db?socket=/x").unwrap_err();
        assert!(!format!("{e:#}").contains("hunter2"), "{e:#}");
    }

    #[test]
    fn rejects_garbage_without_echoing_password() {
        let e = TargetSpec::parse("mysql://u:hunter2@host:notaport/db").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(!format!("{e:#}").contains("hunter2"), "{e:#}");
        assert!(TargetSpec::parse("managed:oracle").is_err());
        assert!(TargetSpec::parse("http://x").is_err());
    }

    #[test]
    fn redact_raw_hides_passwords_in_argv() {
        assert_eq!(redact_raw("mysql://a:b@h/d"), "mysql://a:***@h/d");
        assert_eq!(redact_raw("mysql://a@h/d"), "mysql://a@h/d");
        assert_eq!(redact_raw("--threads"), "--threads");
    }
}
