//! TLS for PostgreSQL as libpq's `sslmode` says, with rustls (ring): `require` encrypts and
//! checks no certificate (as libpq does without a root certificate), `verify-ca` checks the
//! chain against `sslrootcert` (libpq's default `~/.postgresql/root.crt`), `verify-full`
//! checks the host name too. Over TCP only (libpq ignores sslmode on a unix socket). The admin
//! connections (rust-postgres, through tokio-postgres-rustls) and the load clients (the lean
//! client's socket) share one client configuration.

use crate::error::usage;
use anyhow::Result;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The sslmode values that ask for TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Encrypted; the certificate not checked.
    Require,
    /// Signed by the root certificate.
    VerifyCa,
    /// Signed, and naming the host.
    VerifyFull,
}

impl SslMode {
    /// From a URL's `sslmode` (None: a mode without TLS; an unknown one is refused).
    pub fn parse(v: &str) -> Result<Option<SslMode>> {
        Ok(match v.to_ascii_lowercase().as_str() {
            "disable" | "allow" | "prefer" => None,
            "require" => Some(SslMode::Require),
            "verify-ca" => Some(SslMode::VerifyCa),
            "verify-full" => Some(SslMode::VerifyFull),
            _ => anyhow::bail!(
                "sslmode={v} is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ),
        })
    }

    /// As the URL spells it.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// A TLS client configuration for one target.
#[derive(Clone)]
pub struct Tls {
    /// What is checked.
    pub mode: SslMode,
    /// rustls's configuration.
    pub config: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls({})", self.mode.name())
    }
}

/// libpq's default root certificate.
fn default_root() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".postgresql/root.crt"))
}

impl Tls {
    /// The configuration `mode` asks for; `root`: `sslrootcert` (needed to verify). A root
    /// certificate that cannot be read is bad input.
    pub fn new(mode: SslMode, root: Option<&Path>) -> Result<Tls> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let chain = match mode {
            SslMode::Require => None,
            _ => {
                if let Some(r) = root.filter(|r| !r.exists()) {
                    return Err(usage(format!("sslrootcert={}: no such file", r.display())));
                }
                let path = root.map(Path::to_path_buf).or_else(default_root);
                let path = path.filter(|p| p.exists()).ok_or_else(|| {
                    usage(format!(
                        "sslmode={} checks the server's certificate against a root \
                         certificate: give it as sslrootcert=/path/to/ca.crt (libpq's default, \
                         ~/.postgresql/root.crt, is absent)",
                        mode.name()
                    ))
                })?;
                let mut roots = rustls::RootCertStore::empty();
                let certs = CertificateDer::pem_file_iter(&path)
                    .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| {
                        usage(format!(
                            "sslrootcert={}: not readable as PEM: {e}",
                            path.display()
                        ))
                    })?;
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(usage(format!(
                        "sslrootcert={}: no certificate in it",
                        path.display()
                    )));
                }
                Some(
                    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                        .build()
                        .map_err(|e| usage(format!("sslrootcert={}: {e}", path.display())))?,
                )
            }
        };
        let verifier = Verifier {
            mode,
            chain,
            provider: provider.clone(),
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| anyhow::anyhow!("TLS: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        Ok(Tls {
            mode,
            config: Arc::new(config),
        })
    }

    /// What rust-postgres connects through.
    pub fn connector(&self) -> tokio_postgres_rustls::MakeRustlsConnect {
        tokio_postgres_rustls::MakeRustlsConnect::new((*self.config).clone())
    }
}

/// Checks as the mode says: nothing, the chain, or the chain and the name.
#[derive(Debug)]
struct Verifier {
    mode: SslMode,
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if self.mode == SslMode::VerifyCa => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
