//! Target URLs: `managed:mariadb`, `mysql://user:pass@host:port/db`,
//! `mysql://user@localhost/db?socket=/path`. Parsing never echoes a password back.

use crate::error::usage;
use anyhow::Result;
use std::path::PathBuf;

/// Which managed server to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManagedKind {
    /// The installed mariadbd (or mysqld).
    Mariadb,
}

/// A parsed `--target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// A throwaway server dbtax starts and removes.
    Managed(ManagedKind),
    /// The user's own MySQL/MariaDB server.
    Mysql(MysqlUrl),
}

/// Where and how to reach a user's server.
#[derive(Clone, PartialEq, Eq)]
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
            _ => {}
        }
        if let Some(kind) = s.strip_prefix("managed:") {
            return Err(usage(format!(
                "unknown managed target 'managed:{kind}': dbtax can start 'managed:mariadb'"
            )));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Err(usage(
                "PostgreSQL targets are not supported yet: use a mysql:// URL or managed:mariadb",
            ));
        }
        let bad = |why: &str| {
            usage(format!(
                "bad --target '{}': {why}. Expected managed:mariadb, \
                 mysql://user:pass@host:port/db or mysql://user@localhost/db?socket=/path/mysqld.sock",
                redact_raw(s)
            ))
        };
        let parsed = url::Url::parse(s).map_err(|e| bad(&e.to_string()))?;
        if parsed.scheme() != "mysql" && parsed.scheme() != "mariadb" {
            return Err(bad(&format!("unknown scheme '{}'", parsed.scheme())));
        }
        let decode = |v: &str| {
            url::form_urlencoded::parse(format!("x={v}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let user = if parsed.username().is_empty() {
            "root".to_string()
        } else {
            decode(parsed.username())
        };
        let password = parsed.password().map(decode);
        let host = parsed.host_str().unwrap_or("localhost").to_string();
        let port = parsed.port().unwrap_or(3306);
        let db = parsed.path().trim_start_matches('/').to_string();
        let db = (!db.is_empty()).then_some(db);
        let mut socket = None;
        for (k, v) in parsed.query_pairs() {
            match k.as_ref() {
                "socket" => socket = Some(PathBuf::from(v.into_owned())),
                other => return Err(bad(&format!("unknown parameter '{other}'"))),
            }
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

    /// Printable form, password redacted.
    pub fn redacted(&self) -> String {
        match self {
            TargetSpec::Managed(ManagedKind::Mariadb) => "managed:mariadb".into(),
            TargetSpec::Mysql(u) => u.redacted(),
        }
    }
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
