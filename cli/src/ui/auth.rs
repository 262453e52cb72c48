//! The dashboard's security rules: a random token required by every request (constant-time
//! compared; `?token=`, `Authorization: Bearer` or the page's cookie), and same-origin POSTs.

use std::io::Read as _;

/// The cookie the page keeps the token in (HttpOnly, SameSite=Strict).
pub(crate) const COOKIE: &str = "leasefence_token";

/// A fresh token: 24 bytes from the operating system's random source, as 48 hex digits.
pub(crate) fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares in time independent of where the strings differ (only of their lengths).
pub(crate) fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// The value of header `name` (case-insensitive), if sent.
pub(crate) fn header<'r>(request: &'r tiny_http::Request, name: &str) -> Option<&'r str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

/// Every token the request presents: `?token=`, `Authorization: Bearer`, the cookie.
fn presented(request: &tiny_http::Request, query: &[(String, String)]) -> Vec<String> {
    let mut tokens: Vec<String> = query
        .iter()
        .filter(|(k, _)| k == "token")
        .map(|(_, v)| v.clone())
        .collect();
    if let Some(value) = header(request, "Authorization") {
        if let Some(token) = value.strip_prefix("Bearer ") {
            tokens.push(token.trim().to_string());
        }
    }
    if let Some(cookies) = header(request, "Cookie") {
        for pair in cookies.split(';') {
            if let Some((name, value)) = pair.trim().split_once('=') {
                if name == COOKIE {
                    tokens.push(value.to_string());
                }
            }
        }
    }
    tokens
}

/// Whether the request carries the token: at least one presented, and every one presented right
/// (a wrong token is refused even beside a right one).
pub(crate) fn authorized(
    request: &tiny_http::Request,
    query: &[(String, String)],
    token: &str,
) -> bool {
    let tokens = presented(request, query);
    let mut all = !tokens.is_empty();
    for given in &tokens {
        all &= constant_time_eq(given, token);
    }
    all
}

/// A POST must come from the dashboard's own origin: `Origin` equal to `http://` + the `Host` it
/// was sent to, or (when a browser sends no `Origin`) `Sec-Fetch-Site: same-origin`. A request
/// with neither is refused too, so a script adds `Origin: http://HOST:PORT`. `Err` says why.
pub(crate) fn same_origin(request: &tiny_http::Request) -> Result<(), String> {
    let host = header(request, "Host").unwrap_or("");
    if let Some(site) = header(request, "Sec-Fetch-Site") {
        if site != "same-origin" {
            return Err(format!(
                "a cross-origin POST is refused (Sec-Fetch-Site: {site}): only the dashboard's own page (same Origin) may write"
            ));
        }
    }
    match header(request, "Origin") {
        Some(origin) if !host.is_empty() && origin == format!("http://{host}") => Ok(()),
        Some(origin) => Err(format!(
            "a cross-origin POST is refused (Origin {origin}, expected http://{host})"
        )),
        None if header(request, "Sec-Fetch-Site") == Some("same-origin") => Ok(()),
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
    }
}
