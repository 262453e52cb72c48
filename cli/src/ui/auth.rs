//! The dashboard's security rules: a token required by every request (constant-time compared;
//! `?token=`, `Authorization: Bearer` or the page's cookie), and same-origin POSTs.

use std::io::Read as _;

use hyper::header::{HeaderMap, AUTHORIZATION, COOKIE, HOST, ORIGIN};

/// The shortest `--token` accepted: 32 characters, as the random one has 48 hex digits.
pub(crate) const MIN_TOKEN: usize = 32;

/// The cookie the page keeps the token in (HttpOnly, SameSite=Strict), named after the port:
/// browsers send a host's cookies to every port of it, so two dashboards on one host (or one
/// restarted on another port) each keep their own.
pub(crate) fn cookie_name(port: u16) -> String {
    format!("leasefence_token_{port}")
}

/// A fresh token: 24 bytes from the operating system's random source, as 48 hex digits.
pub(crate) fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Why a `--token` is refused, if it is.
pub(crate) fn weak_token(token: &str) -> Option<String> {
    if token.chars().any(|c| !c.is_ascii_graphic()) {
        return Some(
            "--token must be printable ASCII without spaces (e.g. 48 hex digits from a random \
             source)"
                .into(),
        );
    }
    let length = token.chars().count();
    (length < MIN_TOKEN).then(|| {
        format!(
            "--token is too short ({length} characters): use at least {MIN_TOKEN} random \
             characters (e.g. 48 hex digits from a random source), or leave it out on loopback \
             for a random one"
        )
    })
}

/// Compares in time independent of where the strings differ (only of their lengths).
pub(crate) fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// The value of header `name`, if sent once as text.
pub(crate) fn header<'r>(
    headers: &'r HeaderMap,
    name: &hyper::header::HeaderName,
) -> Option<&'r str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether the request carries the token. Tokens given with the request itself (`?token=`,
/// `Authorization: Bearer`) decide when there are any: all must be right (a wrong one is refused
/// even beside a right one), and a cookie left by an earlier run is then ignored, so the URL a
/// restarted dashboard prints opens it (and its answer replaces the cookie). Otherwise the
/// cookie of this dashboard's `cookie` name must be there and right; other ports' are ignored.
pub(crate) fn authorized(
    headers: &HeaderMap,
    query: &[(String, String)],
    token: &str,
    cookie: &str,
) -> bool {
    let mut explicit: Vec<&str> = query
        .iter()
        .filter(|(k, _)| k == "token")
        .map(|(_, v)| v.as_str())
        .collect();
    for value in headers.get_all(AUTHORIZATION) {
        if let Some(given) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")) {
            explicit.push(given.trim());
        }
    }
    let presented = if explicit.is_empty() {
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|cookies| cookies.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == cookie)
            .map(|(_, value)| value)
            .collect()
    } else {
        explicit
    };
    let mut all = !presented.is_empty();
    for given in &presented {
        all &= constant_time_eq(given, token);
    }
    all
}

/// A POST must come from the dashboard's own origin: `Origin` equal to `http://` + the `Host` it
/// was sent to, or (when a browser sends no `Origin`) `Sec-Fetch-Site: same-origin`. A request
/// with neither is refused too, so a script adds `Origin: http://HOST:PORT`. `Err` says why.
pub(crate) fn same_origin(headers: &HeaderMap) -> Result<(), String> {
    let host = header(headers, &HOST).unwrap_or("");
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if let Some(site) = site {
        if site != "same-origin" {
            return Err(format!(
                "a cross-origin POST is refused (Sec-Fetch-Site: {site}): only the dashboard's own page (same Origin) may write"
            ));
        }
    }
    match header(headers, &ORIGIN) {
        Some(origin) if !host.is_empty() && origin == format!("http://{host}") => Ok(()),
        Some(origin) => Err(format!(
            "a cross-origin POST is refused (Origin {origin}, expected http://{host})"
        )),
        None if site == Some("same-origin") => Ok(()),
        None => Err(format!(
            "a POST needs a same-origin header: send Origin: http://{host} (browsers do)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_tokens() {
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "ab"));
    }

    #[test]
    fn tokens_are_random_hex() {
        let (a, b) = (random_token().unwrap(), random_token().unwrap());
        assert_eq!(a.len(), 48);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(weak_token(&a), None);
    }

    #[test]
    fn weak_tokens_are_refused_with_the_reason() {
        assert!(weak_token(&"x".repeat(31)).unwrap().contains("at least 32"));
        assert_eq!(weak_token(&"x".repeat(32)), None);
        assert!(weak_token(&format!("{} ", "x".repeat(40))).is_some());
    }
}
