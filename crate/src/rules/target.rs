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
/// Hand-written, not a general URL parser: the PostgreSQL client accepts URLs such a parser
/// refuses (several hosts, `postgres://app:pw@h1:5432,h2:5433/db`; an empty host with
/// `?host=/tmp`), whose passwords must be cut out too, and the label must stay the URL as given
/// (no lower-cased scheme, no re-encoded query). Nothing is decoded or encoded: the password is
/// only cut out, splitting at the last `@` of the authority (`postgres://a:p@ss@db` has the
/// password `p@ss`). Why not the `url` crate, measured: `docs/decisions/redact-url-by-hand.md`.
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

/// What a path holds when it is not a regular file, in the words an error shows: the file type
/// as each target's `stat` tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(all(target_arch = "wasm32", not(feature = "node")), allow(dead_code))]
pub(crate) enum PathKind {
    Directory,
    Fifo,
    CharacterDevice,
    BlockDevice,
    Socket,
    Other,
}

#[cfg_attr(all(target_arch = "wasm32", not(feature = "node")), allow(dead_code))]
impl PathKind {
    fn words(self) -> &'static str {
        match self {
            PathKind::Directory => "a directory",
            PathKind::Fifo => "a named pipe (FIFO)",
            PathKind::CharacterDevice => "a character device",
            PathKind::BlockDevice => "a block device",
            PathKind::Socket => "a socket",
            PathKind::Other => "not a regular file",
        }
    }
}

/// The refusal of a database path that exists and is not a regular file, made before SQLite opens
/// it: a FIFO would block the opener for ever, and a device (`/dev/zero`) would fail later with
/// advice meant for a failed commit.
#[cfg_attr(all(target_arch = "wasm32", not(feature = "node")), allow(dead_code))]
pub(crate) fn not_a_regular_file(path: &str, kind: PathKind) -> crate::error::Error {
    crate::error::Error::Open {
        path: path.to_string(),
        problem: format!(
            "it is {}, not a regular file: give the path of an SQLite database file (or of one \
             to create); nothing was opened",
            kind.words()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{not_a_regular_file, redact_url, PathKind};

    #[test]
    fn a_path_that_is_not_a_file_is_refused_naming_what_it_is() {
        let err = not_a_regular_file("/tmp/q.fifo", PathKind::Fifo);
        assert_eq!(err.code(), "storage");
        let text = err.to_string();
        assert!(
            text.contains("/tmp/q.fifo") && text.contains("named pipe"),
            "{text}"
        );
        assert!(!err.is_retryable());
    }

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
