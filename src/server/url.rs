//! `--target` values, engine-neutral: `managed:<kind>`, or a URL whose scheme names the engine
//! that parses it (`mysql://…` the MySQL family's `mysql/url.rs`, `postgres://…` PostgreSQL's
//! `postgres/url.rs`). A `TargetSpec` keeps the engine's canonical text (password included,
//! for the engine and the agents) and the text to show (password hidden). Nothing here ever
//! echoes a password.

use anyhow::Result;
use serde::{Deserialize, Serialize};

/// A parsed `--target`: which engine, managed or the user's own server, and the URL.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetSpec {
    /// The engine that owns it (`EngineDef::name`).
    engine: String,
    /// A throwaway server dbtax starts (`url` is then the managed kind, e.g. managed:mariadb).
    managed: bool,
    /// The engine's canonical text, password included (never printed).
    url: String,
    /// The same with the password hidden: the only form that is printed.
    shown: String,
}

impl std::fmt::Debug for TargetSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// What an engine's URL parser returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUrl {
    /// Canonical text, password included; parsing it again gives the same target.
    pub canonical: String,
    /// Password hidden.
    pub shown: String,
}

impl TargetSpec {
    /// A target of the engine named `engine` (`registry` makes them from an engine's row:
    /// `TargetSpec::managed`, `TargetSpec::from_parsed`).
    pub(super) fn of_parts(engine: &str, managed: bool, url: String, shown: String) -> TargetSpec {
        TargetSpec {
            engine: engine.to_string(),
            managed,
            url,
            shown,
        }
    }

    /// The name of the engine that owns this target (`registry` gives its row).
    pub fn engine_name(&self) -> &str {
        &self.engine
    }

    /// Whether dbtax starts (and throws away) this server.
    pub fn is_managed(&self) -> bool {
        self.managed
    }

    /// The URL with its password, for the engine that opens it (None: a managed server).
    pub fn url(&self) -> Option<&str> {
        (!self.managed).then_some(self.url.as_str())
    }

    /// What results.json calls the target's kind: `managed:mariadb`, `mysql`, `postgres`...
    pub fn kind(&self) -> String {
        if self.managed {
            self.url.clone()
        } else {
            self.engine().schemes[0].to_string()
        }
    }

    /// Printable form, password redacted.
    pub fn redacted(&self) -> String {
        self.shown.clone()
    }
}

/// A URL's text: `scheme://user[:password]@place/db[?params]`; the password only when
/// `reveal` (for the engine, never printed), `***` in its place otherwise. `place` is the
/// host and port as the engine writes them (empty host for a socket). Both engines' URLs
/// are written here.
pub fn text(
    scheme: &str,
    (user, password): (&str, Option<&str>),
    place: &str,
    db: Option<&str>,
    params: &[String],
    reveal: bool,
) -> String {
    let user = if reveal {
        encode(user)
    } else {
        user.to_string()
    };
    let pass = match password {
        Some(p) if reveal => format!(":{}", encode(p)),
        Some(_) => ":***".into(),
        None => String::new(),
    };
    let db = db.unwrap_or("");
    let query = if params.is_empty() {
        String::new()
    } else {
        format!("?{}", params.join("&"))
    };
    format!("{scheme}://{user}{pass}@{place}/{db}{query}")
}

/// Percent-decoding of a URL's user, password or parameter (`%40` is `@`).
pub fn decode(v: &str) -> String {
    url::form_urlencoded::parse(format!("x={v}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Percent-encoding for a canonical URL's user and password (decoded back by `decode`).
pub fn encode(v: &str) -> String {
    url::form_urlencoded::byte_serialize(v.as_bytes()).collect()
}

/// A `?name=value` parameter that only takes some values (`sslmode=disable|prefer`). The
/// values dbtax cannot honour yet (TLS) are refused in words, never silently weakened.
pub fn tls_mode(name: &str, value: &str, plain: &[&str], tls: &[&str]) -> Result<()> {
    let v = value.to_ascii_lowercase();
    if plain.iter().any(|p| p.eq_ignore_ascii_case(&v)) {
        return Ok(());
    }
    if tls.iter().any(|t| t.eq_ignore_ascii_case(&v)) {
        anyhow::bail!(
            "{name}={value} asks for TLS, which dbtax's connections do not speak yet: use \
             {name}={} over a trusted network or a unix socket",
            plain[0]
        );
    }
    anyhow::bail!(
        "{name}={value} is not one of {}",
        plain
            .iter()
            .chain(tls)
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Redact the password of anything that looks like `scheme://user:pass@...` (and of a
/// `password=` parameter), for errors about strings that did not parse and for the command
/// line stored in results.
pub fn redact_raw(s: &str) -> String {
    let mut out = s.to_string();
    if let Some(scheme_end) = s.find("://") {
        let rest = &s[scheme_end + 3..];
        // Up to the parameters: a password may hold an unencoded '/'.
        let query = rest.find('?').unwrap_or(rest.len());
        if let Some(at) = rest[..query].rfind('@') {
            let creds = &rest[..at];
            if let Some(colon) = creds.find(':') {
                out = format!(
                    "{}{}:***{}",
                    &s[..scheme_end + 3],
                    &creds[..colon],
                    &rest[at..]
                );
            }
        }
    }
    redact_password_param(&out)
}

/// `…password=secret&…` → `…password=***&…`.
fn redact_password_param(s: &str) -> String {
    let Some((head, query)) = s.split_once('?') else {
        return s.to_string();
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{head}?{}", parts.join("&"))
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
        assert_eq!(t.engine().name, "mysql");
        assert_eq!(t.redacted(), "mysql://bob:***@127.0.0.1:3307/app");
        assert!(!format!("{t:?}").contains("cret"));
        assert!(t.url().unwrap().contains("s%40cret"), "the engine keeps it");
        assert_eq!(t.kind(), "mysql");
    }

    #[test]
    fn managed_kinds_and_unknown_ones() {
        let t = TargetSpec::parse("managed").unwrap();
        assert!(t.is_managed());
        assert_eq!(t.kind(), "managed:mariadb");
        assert_eq!(
            TargetSpec::parse("managed:postgresql").unwrap(),
            TargetSpec::parse("managed:postgres").unwrap()
        );
        let e = TargetSpec::parse("managed:oracle").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(format!("{e:#}").contains("'managed:postgres'"), "{e:#}");
    }

    #[test]
    fn rejects_garbage_without_echoing_password() {
        let e = TargetSpec::parse("mysql://u:hunter2@host:notaport/db").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(!format!("{e:#}").contains("hunter2"), "{e:#}");
        assert!(TargetSpec::parse("http://x").is_err());
        assert!(TargetSpec::parse("nothing").is_err());
    }

    #[test]
    fn redact_raw_hides_passwords_in_argv() {
        assert_eq!(redact_raw("mysql://a:b@h/d"), "mysql://a:***@h/d");
        assert_eq!(redact_raw("mysql://a@h/d"), "mysql://a@h/d");
        assert_eq!(redact_raw("--threads"), "--threads");
        assert_eq!(
            redact_raw("postgres://u@/db?host=/x&password=hunter2"),
            "postgres://u@/db?host=/x&password=***"
        );
    }
}
