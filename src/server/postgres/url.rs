//! PostgreSQL URLs as libpq and psql take them: `postgres://user:pass@host:port/db` and
//! `postgresql://…`, an empty host (`postgres://user@/db?host=/socket/dir`), and libpq's URI
//! parameters `host` (a socket folder when it starts with '/', else a host name), `port`,
//! `user`, `password`, `dbname`, `sslmode`, `sslrootcert`, `connect_timeout` and
//! `application_name`, which override the parts before them. `sslmode=require`, `verify-ca`
//! and `verify-full` connect over TLS (`tls`); the others do not.

use super::tls::SslMode;
use crate::server::url::{ParsedUrl, decode, encode, text as url_text};
use anyhow::{Result, bail};
use std::path::PathBuf;
use std::time::Duration;

/// Where and how to reach a user's PostgreSQL server.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl {
    /// Login user.
    pub user: String,
    /// Password, never printed.
    pub password: Option<String>,
    /// Host name or address (ignored when `socket_dir` is set).
    pub host: String,
    /// TCP port (also names the unix socket file, `.s.PGSQL.<port>`).
    pub port: u16,
    /// Database named in the URL path (or `dbname=`), if any.
    pub db: Option<String>,
    /// The folder of the unix socket (`?host=/dir`, as libpq spells it).
    pub socket_dir: Option<PathBuf>,
    /// `connect_timeout=` (seconds; libpq treats under 2 as 2).
    pub connect_timeout: Option<Duration>,
    /// `application_name=`.
    pub application_name: Option<String>,
    /// `sslmode=` when it asks for TLS.
    pub ssl: Option<SslMode>,
    /// `sslrootcert=`: the root certificate that verify-ca and verify-full check against.
    pub sslrootcert: Option<PathBuf>,
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// libpq allows an empty host (`postgres://user@/db?host=/dir`, `postgres://user@:5433/db`):
/// the url crate does not, so such a URL gets `localhost` there (a socket folder wins).
fn with_host(s: &str) -> String {
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

impl PgUrl {
    /// Parse a `postgres://` or `postgresql://` URL with libpq's parameters.
    pub fn parse(s: &str) -> Result<PgUrl> {
        let parsed = url::Url::parse(&with_host(s))?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql") {
            bail!("unknown scheme '{}'", parsed.scheme());
        }
        let mut u = PgUrl {
            user: match parsed.username() {
                "" => "postgres".to_string(),
                u => decode(u),
            },
            password: parsed.password().map(decode),
            host: parsed.host_str().unwrap_or("localhost").to_string(),
            port: parsed.port().unwrap_or(5432),
            db: Some(parsed.path().trim_start_matches('/').to_string()).filter(|d| !d.is_empty()),
            socket_dir: None,
            connect_timeout: None,
            application_name: None,
            ssl: None,
            sslrootcert: None,
        };
        for (k, v) in parsed.query_pairs() {
            let v = v.into_owned();
            match k.as_ref() {
                "host" if v.starts_with('/') => u.socket_dir = Some(PathBuf::from(v)),
                "host" => {
                    u.host = v;
                    u.socket_dir = None;
                }
                "port" => {
                    u.port = v
                        .parse()
                        .map_err(|_| anyhow::anyhow!("port={v} is not a port number"))?;
                }
                "user" => u.user = v,
                "password" => u.password = Some(v),
                "dbname" => u.db = Some(v).filter(|d| !d.is_empty()),
                "sslmode" => u.ssl = SslMode::parse(&v)?,
                "sslrootcert" => u.sslrootcert = Some(PathBuf::from(v)),
                "connect_timeout" => {
                    let secs: u64 = v.parse().map_err(|_| {
                        anyhow::anyhow!("connect_timeout={v} is not a number of seconds")
                    })?;
                    u.connect_timeout = (secs > 0).then(|| Duration::from_secs(secs.max(2)));
                }
                "application_name" => u.application_name = Some(v),
                other => bail!(
                    "unknown parameter '{other}' (dbtax takes libpq's host, port, user, \
                     password, dbname, sslmode, sslrootcert, connect_timeout and \
                     application_name)"
                ),
            }
        }
        if u.host.is_empty() && u.socket_dir.is_none() {
            bail!("no host (write ?host=/socket/dir for a unix socket)");
        }
        Ok(u)
    }

    /// The URL as text; `reveal`: with the password (for the engine, never printed).
    pub fn text(&self, reveal: bool) -> String {
        let mut params = vec![];
        if let Some(dir) = &self.socket_dir {
            params.push(format!("host={}", dir.display()));
        }
        if let Some(t) = self.connect_timeout {
            params.push(format!("connect_timeout={}", t.as_secs()));
        }
        if let Some(a) = &self.application_name {
            params.push(format!("application_name={}", encode(a)));
        }
        if let Some(m) = self.ssl {
            params.push(format!("sslmode={}", m.name()));
        }
        if let Some(r) = &self.sslrootcert {
            params.push(format!("sslrootcert={}", encode(&r.to_string_lossy())));
        }
        let place = match self.socket_dir {
            Some(_) => format!(":{}", self.port),
            None => format!("{}:{}", self.host, self.port),
        };
        let login = (self.user.as_str(), self.password.as_deref());
        url_text(
            "postgres",
            login,
            &place,
            self.db.as_deref(),
            &params,
            reveal,
        )
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
        if let Some(t) = self.connect_timeout {
            c.connect_timeout(t);
        }
        if let Some(a) = &self.application_name {
            c.application_name(a);
        }
        if self.ssl.is_some() {
            c.ssl_mode(postgres::config::SslMode::Require);
        }
        c
    }
}

/// `EngineDef::parse_url` of PostgreSQL.
pub fn parse_url(s: &str) -> Result<ParsedUrl> {
    Ok(PgUrl::parse(s)?.parsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_postgres_urls_tcp_and_socket() {
        let u = PgUrl::parse("postgresql://app:pw%21@127.0.0.1:5433/shop").unwrap();
        assert_eq!((u.user.as_str(), u.port), ("app", 5433));
        assert_eq!(u.password.as_deref(), Some("pw!"));
        assert_eq!(u.db.as_deref(), Some("shop"));
        assert_eq!(u.redacted(), "postgres://app:***@127.0.0.1:5433/shop");
        let u = PgUrl::parse("postgres://postgres@/bench?host=/run/postgresql").unwrap();
        assert_eq!(
            u.socket_dir.as_deref(),
            Some(std::path::Path::new("/run/postgresql"))
        );
        assert_eq!(u.port, 5432);
        // Its redacted form (no password) parses back to the same target.
        assert_eq!(PgUrl::parse(&u.redacted()).unwrap(), u);
        let e = PgUrl::parse("postgres://u:hunter2@h/db?socket=/x").unwrap_err();
        assert!(!format!("{e:#}").contains("hunter2"), "{e:#}");
    }

    #[test]
    fn libpq_parameters_as_psql_takes_them() {
        let u = PgUrl::parse(
            "postgres://u@/db?host=/dir&port=55432&sslmode=prefer&connect_timeout=7\
             &application_name=my%20app",
        )
        .unwrap();
        assert_eq!(u.port, 55432);
        assert_eq!(u.socket_dir.as_deref(), Some(std::path::Path::new("/dir")));
        assert_eq!(u.connect_timeout, Some(Duration::from_secs(7)));
        assert_eq!(u.application_name.as_deref(), Some("my app"));
        assert_eq!(PgUrl::parse(&u.text(true)).unwrap(), u);
        let u = PgUrl::parse("postgres://h/?user=bob&password=s%26c&dbname=shop&host=db1").unwrap();
        assert_eq!(
            (u.user.as_str(), u.host.as_str(), u.db.as_deref()),
            ("bob", "db1", Some("shop"))
        );
        assert_eq!(u.password.as_deref(), Some("s&c"));
        assert!(!u.redacted().contains("s&c"));
        assert_eq!(PgUrl::parse(&u.text(true)).unwrap(), u);
        let u = PgUrl::parse("postgres://u:pw@h/db?sslmode=verify-full&sslrootcert=/etc/ca.crt")
            .unwrap();
        assert_eq!(u.ssl, Some(SslMode::VerifyFull));
        assert_eq!(PgUrl::parse(&u.text(true)).unwrap(), u);
        assert!(PgUrl::parse("postgres://u@h/db?sslmode=sometimes").is_err());
        assert!(PgUrl::parse("postgres://u@h/db?port=x").is_err());
    }
}
