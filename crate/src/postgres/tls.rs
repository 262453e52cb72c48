//! TLS to the PostgreSQL server, with libpq's meanings of `sslmode` and `sslrootcert`, so a URL
//! that works with `psql` works here. rustls on ring: no OpenSSL to install.
//!
//! | `sslmode`            | encrypted              | server certificate checked                 |
//! |----------------------|------------------------|--------------------------------------------|
//! | `disable`            | never                  | -                                          |
//! | `prefer` (default)   | if the server offers it| only if a root certificate is configured   |
//! | `require`            | always                 | only if a root certificate is configured   |
//! | `verify-ca`          | always                 | signed by a root in `sslrootcert`          |
//! | `verify-full`        | always                 | as `verify-ca`, and it names the URL's host|
//!
//! The root certificates come from `sslrootcert=/path/to/ca.pem` (PEM, one or more), from the
//! operating system's store with `sslrootcert=system`, or else from `~/.postgresql/root.crt`
//! when that file exists, as in libpq. `prefer` and `require` without any of them encrypt
//! without knowing who they talk to: that stops eavesdroppers on the wire, not an impostor;
//! across machines use `verify-full`.
//!
//! A client certificate (for `pg_hba.conf`'s `cert` method or `clientcert=verify-full`) comes
//! from `sslcert` and `sslkey` (PEM; the key in PKCS#8, PKCS#1 or SEC1 form), or else from
//! `~/.postgresql/postgresql.crt` and `postgresql.key` when both exist, as in libpq.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WantsClientCert, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, ConfigBuilder, DigitallySignedStruct, RootCertStore,
    SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

pub(crate) use super::tls_settings::{split_url, ServerCheck, SslMode, TlsSettings};

/// The client library's own mode: it knows whether to ask for TLS, not how to check it.
pub(crate) fn client_mode(mode: SslMode) -> postgres::config::SslMode {
    match mode {
        SslMode::Disable => postgres::config::SslMode::Disable,
        SslMode::Prefer => postgres::config::SslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            postgres::config::SslMode::Require
        }
    }
}

/// The connector for `settings`, or `None` for `sslmode=disable`. Reads the root certificates
/// now, so a missing or unreadable file is an error at open time, not at the first call.
pub(crate) fn connector(settings: &TlsSettings) -> Result<Option<MakeRustlsConnect>, String> {
    if settings.mode == SslMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = match &settings.root_cert {
        Some(given) => Some(load_roots(given)?),
        None => match default_root_file() {
            Some(file) => Some(load_roots(&file.to_string_lossy())?),
            None => None,
        },
    };
    let check = settings.server_check(roots.is_some())?;
    let verifier: Arc<dyn ServerCertVerifier> = match (check, roots) {
        (None, _) => return Ok(None),
        (Some(ServerCheck::ChainAndName), Some(roots)) => webpki(roots, &provider)?,
        (Some(ServerCheck::Chain), Some(roots)) => Arc::new(ChainOnly(webpki(roots, &provider)?)),
        _ => Arc::new(EncryptOnly(provider.clone())),
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("TLS set-up failed: {err}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    Ok(Some(MakeRustlsConnect::new(with_client_identity(
        builder, settings,
    )?)))
}

/// Finishes the configuration with the client certificate chain and key: from
/// `sslcert`/`sslkey`, else libpq's default files when both exist, else none.
fn with_client_identity(
    builder: ConfigBuilder<ClientConfig, WantsClientCert>,
    settings: &TlsSettings,
) -> Result<ClientConfig, String> {
    let defaults = std::env::var_os("HOME").and_then(|home| {
        let dir = PathBuf::from(home).join(".postgresql");
        let (cert, key) = (dir.join("postgresql.crt"), dir.join("postgresql.key"));
        (cert.is_file() && key.is_file()).then(|| {
            (
                cert.to_string_lossy().into_owned(),
                key.to_string_lossy().into_owned(),
            )
        })
    });
    let Some((cert, key)) = settings.client_identity(defaults)? else {
        return Ok(builder.with_no_client_auth());
    };
    let pem = std::fs::read(&cert).map_err(|err| format!("cannot read sslcert {cert:?}: {err}"))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("sslcert {cert:?} is not valid PEM: {err:?}"))?;
    if certs.is_empty() {
        return Err(format!(
            "sslcert {cert:?} holds no certificate (expected -----BEGIN CERTIFICATE-----)"
        ));
    }
    let pem = std::fs::read(&key).map_err(|err| format!("cannot read sslkey {key:?}: {err}"))?;
    let private_key = PrivateKeyDer::from_pem_slice(&pem).map_err(|err| {
        format!(
            "sslkey {key:?} holds no usable private key ({err:?}); expected PEM in PKCS#8 \
             (BEGIN PRIVATE KEY), PKCS#1 (BEGIN RSA PRIVATE KEY) or SEC1 (BEGIN EC PRIVATE KEY) \
             form, unencrypted"
        )
    })?;
    builder
        .with_client_auth_cert(certs, private_key)
        .map_err(|err| format!("sslkey {key:?} is not the private key of sslcert {cert:?} ({err})"))
}

/// libpq's default root certificate file, when it exists.
fn default_root_file() -> Option<PathBuf> {
    let file = PathBuf::from(std::env::var_os("HOME")?).join(".postgresql/root.crt");
    file.is_file().then_some(file)
}

fn load_roots(given: &str) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    if given == "system" {
        let found = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(
                "sslrootcert=system: no certificate found in the operating system's store \
                 (install ca-certificates, or give the CA's file: sslrootcert=/path/to/ca.pem)"
                    .to_string(),
            );
        }
        return Ok(roots);
    }
    let pem =
        std::fs::read(given).map_err(|err| format!("cannot read sslrootcert {given:?}: {err}"))?;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert =
            cert.map_err(|err| format!("sslrootcert {given:?} is not valid PEM: {err:?}"))?;
        roots
            .add(cert)
            .map_err(|err| format!("sslrootcert {given:?} holds an unusable certificate: {err}"))?;
    }
    if roots.is_empty() {
        return Err(format!(
            "sslrootcert {given:?} holds no certificate (expected PEM blocks \
             -----BEGIN CERTIFICATE-----)"
        ));
    }
    Ok(roots)
}

fn webpki(
    roots: RootCertStore,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, String> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|err| format!("cannot use the root certificates: {err}"))
}

/// When a client error came from the TLS layer (we refused the server's certificate, or the
/// server refused us), which connecting again cannot fix: what happened and what to check.
pub(crate) fn refused_by_tls(err: &postgres::Error, mode: SslMode) -> Option<String> {
    let explain = |tls: &rustls::Error| match tls {
        rustls::Error::AlertReceived(alert) => format!(
            "the server ended the TLS handshake ({alert:?}); if it asks for a client \
             certificate, check that sslcert and sslkey hold one it trusts"
        ),
        other => format!(
            "the server's TLS certificate was refused: {other} (sslmode={}); check that \
             sslrootcert holds the authority that signed it and that the URL's host is a name \
             it lists",
            mode.name()
        ),
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(inner) = cause {
        if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
            return Some(explain(tls));
        }
        // tokio-rustls wraps it in an io::Error, whose `source()` skips the wrapped error.
        if let Some(tls) = inner
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|wrapped| wrapped.downcast_ref::<rustls::Error>())
        {
            return Some(explain(tls));
        }
        cause = inner.source();
    }
    None
}

/// `verify-ca`: the chain must lead to a trusted root; the name in it is not compared with
/// the host (the server may be reached by an address its certificate does not list).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // webpki checks the chain (and expiry) before the name, so a name error means the
        // chain was good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` / `require` with no root certificate: libpq's behaviour, encryption without
/// identity. The handshake signatures are still checked, so the session key really belongs to
/// whoever holds the certificate's private key.
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_leave_the_url_and_the_rest_stays() {
        let (rest, settings) = split_url(
            "postgres://a@h/q?sslmode=verify-full&application_name=x&sslrootcert=%2Fetc%2Fca%20x.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://a@h/q?application_name=x");
        assert_eq!(settings.mode, SslMode::VerifyFull);
        assert_eq!(settings.root_cert.as_deref(), Some("/etc/ca x.pem"));

        let (rest, settings) = split_url("postgres://a@h/q?sslmode=disable").unwrap();
        assert_eq!(rest, "postgres://a@h/q");
        assert_eq!(settings.mode, SslMode::Disable);

        let (rest, settings) = split_url("postgres://a@h/q").unwrap();
        assert_eq!(rest, "postgres://a@h/q");
        assert_eq!(settings.mode, SslMode::Prefer, "libpq's default");
        assert_eq!(settings.root_cert, None);
    }

    #[test]
    fn unknown_modes_and_bad_escapes_are_named() {
        let err = split_url("postgres://h/q?sslmode=allow").unwrap_err();
        assert!(
            err.contains("sslmode=allow") && err.contains("verify-full"),
            "{err}"
        );
        let err = split_url("postgres://h/q?sslrootcert=%zz").unwrap_err();
        assert!(err.contains("two hex digits"), "{err}");
    }

    #[test]
    fn verification_without_roots_says_what_to_add() {
        if default_root_file().is_some() {
            return; // this machine has libpq's default root file: the case cannot arise
        }
        for mode in ["verify-ca", "verify-full"] {
            let (_, settings) = split_url(&format!("postgres://h/q?sslmode={mode}")).unwrap();
            let err = connector(&settings)
                .err()
                .expect("no roots must be an error");
            assert!(err.contains("sslrootcert=/path/to/ca.pem"), "{err}");
            assert!(err.contains(mode), "{err}");
        }
    }

    #[test]
    fn root_files_that_hold_no_certificate_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let missing = dir.path().join("missing.pem");
        for (file, expected) in [(&empty, "holds no certificate"), (&missing, "cannot read")] {
            let settings = TlsSettings {
                mode: SslMode::VerifyFull,
                root_cert: Some(file.to_string_lossy().into_owned()),
                client_cert: None,
                client_key: None,
            };
            let err = connector(&settings).err().expect("must be refused");
            assert!(err.contains(expected), "{err}");
        }
        let disabled = TlsSettings {
            mode: SslMode::Disable,
            root_cert: None,
            client_cert: None,
            client_key: None,
        };
        assert!(connector(&disabled).unwrap().is_none());
    }
}
