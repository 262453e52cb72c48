//! What a database path holds when it is not a regular file, and the refusal to open it: made
//! before SQLite opens it, on every target that has files (native, Node's wasm engine).

/// What a path holds when it is not a regular file, in the words an error shows: the file type
/// as each target's `stat` tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(all(web, not(feature = "node")), allow(dead_code))]
pub(crate) enum PathKind {
    Directory,
    Fifo,
    CharacterDevice,
    BlockDevice,
    Socket,
    Other,
}

#[cfg_attr(all(web, not(feature = "node")), allow(dead_code))]
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
#[cfg_attr(all(web, not(feature = "node")), allow(dead_code))]
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
    use super::{not_a_regular_file, PathKind};

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
}
