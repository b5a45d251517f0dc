//! MySQL-family URLs as its clients write them: `mysql://user:pass@host:port/db` (TCP, really
//! TCP) and `mysql://user@localhost/db?socket=/path/mysqld.sock`, with the parameters
//! `socket`, `ssl-mode` (or `ssl_mode`), `require_ssl` and `connect_timeout` (seconds).
//! dbtax's connections do not speak TLS yet: a URL that asks for it is refused in words.

use crate::server::url::{ParsedUrl, decode, text as url_text, tls_mode};
use anyhow::{Result, bail};
use std::path::PathBuf;
use std::time::Duration;

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
    /// `?connect_timeout=` in seconds.
    pub connect_timeout: Option<Duration>,
}

impl std::fmt::Debug for MysqlUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text(false))
    }
}

impl MysqlUrl {
    /// Parse a `mysql://` (or `mariadb://`) URL.
    pub fn parse(s: &str) -> Result<MysqlUrl> {
        let parsed = url::Url::parse(s)?;
        if !matches!(parsed.scheme(), "mysql" | "mariadb") {
            bail!("unknown scheme '{}'", parsed.scheme());
        }
        let user = match parsed.username() {
            "" => "root".to_string(),
            u => decode(u),
        };
        let mut u = MysqlUrl {
            user,
            password: parsed.password().map(decode),
            host: parsed.host_str().unwrap_or("").to_string(),
            port: parsed.port().unwrap_or(3306),
            db: Some(parsed.path().trim_start_matches('/').to_string()).filter(|d| !d.is_empty()),
            socket: None,
            connect_timeout: None,
        };
        for (k, v) in parsed.query_pairs() {
            match k.as_ref() {
                "socket" => u.socket = Some(PathBuf::from(v.into_owned())),
                "ssl-mode" | "ssl_mode" => tls_mode(
                    &k,
                    &v,
                    &["DISABLED", "PREFERRED"],
                    &["REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"],
                )?,
                "require_ssl" => tls_mode(&k, &v, &["false"], &["true"])?,
                "connect_timeout" => {
                    let secs: u64 = v
                        .parse()
                        .map_err(|_| anyhow::anyhow!("connect_timeout is a number of seconds"))?;
                    u.connect_timeout = Some(Duration::from_secs(secs.max(1)));
                }
                other => bail!(
                    "unknown parameter '{other}' (the MySQL URL takes socket, ssl-mode, \
                     require_ssl and connect_timeout)"
                ),
            }
        }
        if u.host.is_empty() && u.socket.is_none() {
            bail!("no host");
        }
        if u.host.is_empty() {
            u.host = "localhost".into();
        }
        if u.socket.is_some() {
            // Through a socket the port means nothing (a server may even have none).
            u.port = 3306;
        }
        Ok(u)
    }

    /// The URL as text; `reveal`: with the password (for the engine, never printed).
    pub fn text(&self, reveal: bool) -> String {
        let mut params = vec![];
        if let Some(sock) = &self.socket {
            params.push(format!("socket={}", sock.display()));
        }
        if let Some(t) = self.connect_timeout {
            params.push(format!("connect_timeout={}", t.as_secs()));
        }
        let place = match self.socket {
            Some(_) => self.host.clone(),
            None => format!("{}:{}", self.host, self.port),
        };
        let login = (self.user.as_str(), self.password.as_deref());
        url_text("mysql", login, &place, self.db.as_deref(), &params, reveal)
    }

    /// The URL with the password replaced by `***`: the only form that is ever printed.
    pub fn redacted(&self) -> String {
        self.text(false)
    }

    /// The canonical and the printable text.
    pub fn parsed(&self) -> ParsedUrl {
        ParsedUrl {
            canonical: self.text(true),
            shown: self.text(false),
        }
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
                .prefer_socket(false)
                .tcp_connect_timeout(self.connect_timeout),
        }
    }
}

/// `EngineDef::parse_url` of the MySQL family.
pub fn parse_url(s: &str) -> Result<ParsedUrl> {
    Ok(MysqlUrl::parse(s)?.parsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tcp_url_and_redacts_password() {
        let u = MysqlUrl::parse("mysql://bob:s%40cret@127.0.0.1:3307/app").unwrap();
        assert_eq!(u.user, "bob");
        assert_eq!(u.password.as_deref(), Some("s@cret"));
        assert_eq!(u.port, 3307);
        assert_eq!(u.db.as_deref(), Some("app"));
        assert!(u.socket.is_none());
        assert_eq!(u.redacted(), "mysql://bob:***@127.0.0.1:3307/app");
        assert!(!format!("{u:?}").contains("cret"));
        // The canonical text parses back to the same URL.
        assert_eq!(MysqlUrl::parse(&u.text(true)).unwrap(), u);
    }

    #[test]
    fn parses_socket_url_and_its_parameters() {
        let u = MysqlUrl::parse(
            "mysql://root@localhost/?socket=/tmp/x.sock&ssl-mode=DISABLED&connect_timeout=5",
        )
        .unwrap();
        assert_eq!(
            u.socket.as_deref(),
            Some(std::path::Path::new("/tmp/x.sock"))
        );
        assert_eq!(u.db, None);
        assert_eq!(u.connect_timeout, Some(Duration::from_secs(5)));
        assert_eq!(MysqlUrl::parse(&u.text(true)).unwrap(), u);
        // Through a socket there is no port to show (a server may have none).
        assert_eq!(
            u.redacted(),
            "mysql://root@localhost/?socket=/tmp/x.sock&connect_timeout=5"
        );
        let e = MysqlUrl::parse("mysql://u:pw@h/?ssl-mode=REQUIRED").unwrap_err();
        assert!(format!("{e:#}").contains("TLS"), "{e:#}");
        let e = MysqlUrl::parse("mysql://u:hunter2@h/?bogus=1").unwrap_err();
        assert!(format!("{e:#}").contains("'bogus'"), "{e:#}");
        assert!(!format!("{e:#}").contains("hunter2"), "{e:#}");
    }
}
