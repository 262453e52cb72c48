//! Which backend a target names, and how a PostgreSQL target is shown without its password:
//! the rules of opening that are not storage (a leaf, used by the error messages, by
//! [`open`](crate::open) and by the PostgreSQL backend alike).

/// Whether `target` names a PostgreSQL server (`postgres://...` or `postgresql://...`, scheme
/// case-insensitive) rather than an SQLite file. To use a file whose path starts like that,
/// write it as `./postgres://...`.
///
/// ```
/// assert!(leasefence::is_postgres_url("postgres://app@db.internal/queue"));
/// assert!(leasefence::is_postgres_url("postgresql://localhost"));
/// assert!(!leasefence::is_postgres_url("queue.db"));
/// ```
pub fn is_postgres_url(target: &str) -> bool {
    ["postgres://", "postgresql://"].iter().any(|scheme| {
        target
            .get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    })
}

/// `url` with any password replaced by `***` (in the user info and in a `password=` parameter),
/// so that errors and logs can name the server without leaking its secret.
///
/// Hand-written on purpose, not the `url` crate (2.5.8, measured on the URLs the PostgreSQL
/// client accepts): `Url::parse` refuses a multi-host URL (`postgres://app:pw@h1:5432,h2:5433/db`:
/// "invalid port number") and an empty host with `?host=/tmp` ("empty host"), so those would need
/// this code anyway as a fallback, which would leave their password unredacted if it were
/// missing; and it changes what it keeps: the scheme is lower-cased (`POSTGRES://` becomes
/// `postgres://`) and a space in the query becomes `%20`, so the label would no longer be the URL
/// as given. `percent-encoding` alone has nothing to offer here: nothing is decoded or encoded,
/// the password is only cut out. Splitting at the last `@` of the authority is what the `url`
/// crate does too (`postgres://a:p@ss@db` has the password `p@ss` in both).
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (userinfo, host) = authority.split_at(at);
            match userinfo.find(':') {
                Some(colon) => format!("{}:***{host}", &userinfo[..colon]),
                None => authority.to_string(),
            }
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => param.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db:5432/q?sslmode=disable"),
            "postgres://app:***@db:5432/q?sslmode=disable"
        );
        assert_eq!(
            redact_url("postgresql://db/q?user=a&password=x&x=1"),
            "postgresql://db/q?user=a&password=***&x=1"
        );
        assert_eq!(redact_url("postgres://app@db/q"), "postgres://app@db/q");
        assert_eq!(
            redact_url("postgres://a:p@ss@db/q"),
            "postgres://a:***@db/q"
        );
    }
}
