//! The TLS part of a PostgreSQL URL with libpq's meanings (the table is in `tls.rs`), for every
//! client: `sslmode`, `sslrootcert`, `sslcert` and `sslkey` taken out of the URL, and libpq's
//! rules on what is checked. Natively `tls.rs` builds rustls on them; in Node `pg`'s TLS options
//! are built from them (`node/pg-store.cjs`), so both clients treat a URL alike.

/// libpq's `sslmode` values that this client implements (`allow` is not one of them: it is
/// `prefer` with the order of the attempts reversed, and nobody should want it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub(crate) fn parse(value: &str) -> Result<SslMode, String> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other} is not supported; use disable, prefer, require, verify-ca \
                     or verify-full (verify-full checks that the server is the one named in the URL)"
                ))
            }
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The TLS part of a URL, taken out of it by [`split_url`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    pub(crate) mode: SslMode,
    /// `sslrootcert` as given: a file path, or `system`.
    pub(crate) root_cert: Option<String>,
    /// `sslcert` and `sslkey`: the client's certificate (chain) and private key files.
    pub(crate) client_cert: Option<String>,
    pub(crate) client_key: Option<String>,
}

/// Takes `sslmode`, `sslrootcert`, `sslcert` and `sslkey` out of the URL's query (the client
/// library rejects `verify-ca`, `verify-full` and the file parameters) and returns the URL
/// without them.
pub(crate) fn split_url(url: &str) -> Result<(String, TlsSettings), String> {
    let mut settings = TlsSettings {
        mode: SslMode::Prefer,
        root_cert: None,
        client_cert: None,
        client_key: None,
    };
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, query),
        None => return Ok((url.to_string(), settings)),
    };
    let mut kept = Vec::new();
    for param in query.split('&') {
        let (key, value) = param.split_once('=').unwrap_or((param, ""));
        match key {
            "sslmode" => settings.mode = SslMode::parse(&percent_decode(value)?)?,
            "sslrootcert" => settings.root_cert = Some(percent_decode(value)?),
            "sslcert" => settings.client_cert = Some(percent_decode(value)?),
            "sslkey" => settings.client_key = Some(percent_decode(value)?),
            _ => kept.push(param),
        }
    }
    let rest = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, settings))
}

fn percent_decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("{value:?} has a % not followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{value:?} does not decode to UTF-8"))
}

/// How the server's certificate is checked once the session is encrypted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ServerCheck {
    /// Not at all: encrypted, but to whoever answers (`prefer` and `require` without roots).
    EncryptOnly,
    /// Signed by a trusted root; its name is not compared (`verify-ca`, and libpq's `prefer`
    /// and `require` when a root certificate is at hand).
    Chain,
    /// Signed by a trusted root and naming the URL's host (`verify-full`).
    ChainAndName,
}

impl TlsSettings {
    /// libpq's rule for the server's certificate: `None` for `disable`; `roots` tells whether a
    /// root certificate is at hand (`sslrootcert`, or libpq's default file exists). Verifying
    /// without roots is an error saying what to add.
    pub(crate) fn server_check(&self, roots: bool) -> Result<Option<ServerCheck>, String> {
        Ok(Some(match (self.mode, roots) {
            (SslMode::Disable, _) => return Ok(None),
            (SslMode::VerifyCa | SslMode::VerifyFull, false) => {
                return Err(format!(
                    "sslmode={} needs the certificate of the authority that signed the \
                     server's: add sslrootcert=/path/to/ca.pem to the URL (or \
                     sslrootcert=system for the operating system's store)",
                    self.mode.name()
                ))
            }
            (SslMode::VerifyFull, true) => ServerCheck::ChainAndName,
            // libpq: with a root certificate at hand, `prefer` and `require` check the chain too.
            (_, true) => ServerCheck::Chain,
            (_, false) => ServerCheck::EncryptOnly,
        }))
    }

    /// The client certificate and key files to present: `sslcert` and `sslkey` (both or
    /// neither), else libpq's default files `defaults` when both exist, else none.
    pub(crate) fn client_identity(
        &self,
        defaults: Option<(String, String)>,
    ) -> Result<Option<(String, String)>, String> {
        match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => Ok(Some((cert.clone(), key.clone()))),
            (None, None) => Ok(defaults),
            _ => Err(
                "sslcert and sslkey go together: give both the client certificate and its \
                      private key"
                    .to_string(),
            ),
        }
    }
}
