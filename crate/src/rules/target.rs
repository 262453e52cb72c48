//! Which backend a target names, and how a PostgreSQL target is shown without its password: a
//! leaf (it imports nothing of the crate), used by the error messages, by
//! [`open`](crate::open) and by the PostgreSQL clients alike.

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

/// How a PostgreSQL target is shown in errors, `Debug`, logs and the dashboard: the connection
/// settings the client takes from it (user, hosts and ports, database), written again, never its
/// password nor any other parameter. `postgres://app:s3cret@db:5432/q?sslmode=require` shows as
/// `postgres://app@db:5432/q`.
///
/// The label is built from a parse that follows the PostgreSQL client's own (tokio-postgres's
/// URL rules: the user info runs to the first `@` of the whole string, so
/// `postgres://app:se/cret@db/q` has the password `se/cret`), never by cutting the password out
/// of the text: what is shown is only what was recognised as not secret. A URL the client would
/// not parse (a port that is no number: `postgres://app:s3cret` has no host, and `s3cret` would
/// be its port), or with an `@` in a host (`postgres://app:p@ss@db/q`: the rest of a password
/// that held an `@` not written `%40`), is shown as
/// `postgres://(a URL that does not parse; not shown)`.
#[cfg_attr(all(web, not(pg)), allow(dead_code))]
pub(crate) fn url_label(url: &str) -> String {
    parse_label(url).unwrap_or_else(|| {
        let scheme = if url.len() > 13 && url[..13].eq_ignore_ascii_case("postgresql://") {
            "postgresql://"
        } else {
            "postgres://"
        };
        format!("{scheme}(a URL that does not parse; not shown)")
    })
}

/// The settings of `url` that are shown, as a label; `None` where the client would refuse it.
#[cfg_attr(all(web, not(pg)), allow(dead_code))]
fn parse_label(url: &str) -> Option<String> {
    let (scheme, mut rest) = ["postgresql://", "postgres://"].iter().find_map(|scheme| {
        let head = url.get(..scheme.len())?;
        head.eq_ignore_ascii_case(scheme)
            .then(|| (*scheme, &url[scheme.len()..]))
    })?;
    let mut user = None;
    if let Some(at) = rest.find('@') {
        let credentials = &rest[..at];
        let name = credentials.split(':').next().unwrap_or_default();
        user = (!name.is_empty()).then(|| name.to_owned());
        rest = &rest[at + 1..];
    }
    let host_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let mut hosts: Vec<String> = Vec::new();
    let host_list = &rest[..host_end];
    if !host_list.is_empty() {
        for chunk in host_list.split(',') {
            // The client's split: `[v6]:port`, else the port after the first `:`.
            let port = if let Some(bracketed) = chunk.strip_prefix('[') {
                let close = bracketed.find(']')?;
                let after = &bracketed[close + 1..];
                if !(after.is_empty() || after.starts_with(':')) {
                    return None;
                }
                after.strip_prefix(':')
            } else {
                chunk.split_once(':').map(|(_, port)| port)
            };
            // A port the client refuses is most often a password without its host
            // (`postgres://app:s3cret`); an `@` in a host, the rest of a password that held one.
            if !port.is_none_or(is_port) || chunk.contains('@') {
                return None;
            }
            hosts.push(chunk.to_owned());
        }
    }
    rest = &rest[host_end..];
    let mut dbname = None;
    if let Some(path) = rest.strip_prefix('/') {
        let end = path.find('?').unwrap_or(path.len());
        dbname = (!path[..end].is_empty()).then(|| path[..end].to_owned());
        rest = &path[end..];
    }
    if let Some(query) = rest.strip_prefix('?') {
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = pair.split_once('=')?;
            match key {
                "host" if value.contains('@') => return None,
                "host" => hosts.push(value.to_owned()),
                "port" if !value.split(',').all(is_port) => return None,
                "port" if !hosts.is_empty() => {
                    let last = hosts.len() - 1;
                    hosts[last] = format!("{}:{value}", hosts[last]);
                }
                "user" => user = Some(value.to_owned()),
                "dbname" => dbname = Some(value.to_owned()),
                // Everything else (password, sslkey, options, ...) is left out of the label.
                _ => {}
            }
        }
    }
    let mut label = scheme.to_owned();
    if let Some(user) = user {
        label.push_str(&user);
        label.push('@');
    }
    label.push_str(&hosts.join(","));
    if let Some(dbname) = dbname {
        label.push('/');
        label.push_str(&dbname);
    }
    Some(label)
}

/// A port as the client reads one: empty (the default, 5432) or a number up to 65535.
#[cfg_attr(all(web, not(pg)), allow(dead_code))]
fn is_port(port: &str) -> bool {
    port.is_empty() || (port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::url_label;

    #[test]
    fn a_label_shows_the_settings_and_never_the_password() {
        for (url, label) in [
            (
                "postgres://app:s3cret@db:5432/q?sslmode=disable",
                "postgres://app@db:5432/q",
            ),
            // The client takes the password up to the first `@`, past a `/`.
            ("postgres://app:se/cret@db/q", "postgres://app@db/q"),
            ("postgres://app:se?cret@db/q", "postgres://app@db/q"),
            (
                "postgresql://app:pw@h1:5432,h2:5433/q?sslmode=require&password=x",
                "postgresql://app@h1:5432,h2:5433/q",
            ),
            (
                "postgresql://db/q?user=a&password=x&x=1",
                "postgresql://a@db/q",
            ),
            ("postgres://app@db/q", "postgres://app@db/q"),
            ("POSTGRES://app:pw@db", "postgres://app@db"),
            (
                "postgres:///q?host=/tmp&port=5433",
                "postgres:///tmp:5433/q",
            ),
            ("postgres://u:pw@[::1]:5432/q", "postgres://u@[::1]:5432/q"),
        ] {
            assert_eq!(url_label(url), label, "{url}");
        }
    }

    #[test]
    fn a_url_that_does_not_parse_shows_nothing_of_itself() {
        let mut wrong = Vec::new();
        for url in [
            "postgres://u:s3cret@[::1/q",
            "postgres://u:s3cret@db/q?password",
            // No `@`: the client reads `u` as the host and `s3cret` as its port, and refuses it.
            "postgres://u:s3cret",
            "postgres://u:s3cret/q",
            "postgres://u:s3cret@db:54x2/q",
            // An `@` in the password, not written %40: the client takes `ss3cret@db` as the host.
            "postgres://u:p@ss3cret@db/q",
            "postgres://u@db/q?port=s3cret",
        ] {
            let label = url_label(url);
            let shown = label.contains("s3cret") || label.contains('@');
            if shown || !label.contains("does not parse") {
                wrong.push(format!("{url} shown as {label}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}
