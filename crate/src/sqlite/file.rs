//! Opening a database file natively, with the bundled SQLite, tuned for many workers on one
//! file: the path checks, POSIX or dot-file locking (a file shared with Node: the `leasefence-dotlock`
//! VFS of crate/src/dot_lock), then the common set-up ([`LeaseStore::set_up`]).

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};
use crate::options::{mark_shared_with_node, Journal, Locking, OpenOptions, SHARED_WITH_NODE};
use crate::sqlite::{exclusive, LeaseStore};

impl OpenOptions {
    /// Opens (creating if missing) the database file at `path`.
    ///
    /// A file that is not SQLite, or whose `jobs` table has another shape, is refused with
    /// [`Error::NotLeasefenceDatabase`] before anything is written to it.
    ///
    /// ```
    /// use leasefence::Leases;
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = leasefence::OpenOptions::new().open(dir.path().join("queue.db"))?;
    /// assert!(store.enqueue("job")?);
    /// // Not SQLite: refused, and left as it was.
    /// std::fs::write(dir.path().join("notes.txt"), "not a database").unwrap();
    /// let err = leasefence::OpenOptions::new().open(dir.path().join("notes.txt")).unwrap_err();
    /// assert!(matches!(err, leasefence::Error::NotLeasefenceDatabase { .. }), "{err}");
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn open(&self, path: impl AsRef<Path>) -> Result<LeaseStore> {
        let path = path.as_ref();
        let label = path.display().to_string();
        let open_err = |problem: String| Error::Open {
            path: label.clone(),
            problem,
        };
        if path.as_os_str().is_empty() {
            return Err(Error::invalid(
                "path",
                "is empty; give a file path for the database",
            ));
        }
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(Error::invalid(
                "path",
                "contains a NUL byte, which no file name can hold; give a file path without NUL",
            ));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(open_err(format!(
                    "directory {} does not exist; create it first",
                    dir.display()
                )));
            }
        }
        let missing = matches!(
            std::fs::metadata(path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound
        );
        if !self.create && missing {
            return Err(open_err(
                "the file does not exist, and these options create none (create(false)); check \
                 the path, or create the database first (`leasefence --db PATH init`)"
                    .into(),
            ));
        }
        refuse_foreign_header(path, &label)?;
        // No URI parsing: a path is a path, never `file:...?mode=` options. Without CREATE, a
        // file deleted since the check above is an error too, never a new one.
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if self.create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let open = |locking: Locking| {
            let conn = match locking {
                Locking::Posix => Connection::open_with_flags(path, flags),
                // WASI: SQLite's own VFS there is unix-dotfile (no file locks in wasi:filesystem).
                #[cfg(target_os = "wasi")]
                Locking::Dotfile => Connection::open_with_flags(path, flags),
                #[cfg(not(target_os = "wasi"))]
                Locking::Dotfile => {
                    crate::dot_lock::sqlite_vfs::register().map_err(|problem| {
                        open_err(format!("cannot set up dot-file locking: {problem}"))
                    })?;
                    Connection::open_with_flags_and_vfs(
                        path,
                        flags,
                        crate::dot_lock::sqlite_vfs::VFS_NAME,
                    )
                }
            }
            .map_err(|err| open_err(format!("{err}; check the path and its permissions")))?;
            if conn.is_readonly("main").unwrap_or(false) {
                return Err(open_err(
                    "SQLite could only open it read-only; make the file and its directory \
                     writable"
                        .into(),
                ));
            }
            Ok(conn)
        };
        // A file that Node processes share is locked with dot files, which POSIX locks do not
        // see: follow the file's own protocol, read from its header before taking any lock.
        #[cfg(not(target_os = "wasi"))]
        let locking = match self.locking {
            Locking::Posix if shared_with_node(path) => Locking::Dotfile,
            chosen => chosen,
        };
        // WASI has no POSIX locks: always dot files, the lock directory SQLite's unix-dotfile
        // makes, which the native and Node dot-file protocol also sees (docs/contract.md
        // section 14). No need to read the header for the mark first.
        #[cfg(target_os = "wasi")]
        let locking = Locking::Dotfile;
        let conn = open(locking)?;
        #[cfg(native)]
        if locking == Locking::Dotfile {
            if let Some(full) = conn.path() {
                // Leftovers of processes that died while taking or breaking the lock.
                crate::dot_lock::protocol::gc(
                    &crate::dot_lock::native_fs::NativeFs,
                    &format!("{full}.lock"),
                );
                // A Node process owns the file in exclusive (WAL) mode, or did until it died.
                if left_in_exclusive_wal(path) {
                    let owner = crate::dot_lock::protocol::live_owner(
                        &crate::dot_lock::native_fs::NativeFs,
                        full,
                    )
                    .map_err(|e| open_err(format!("cannot read its lock: {e}")))?;
                    if let Some(owner) = owner {
                        return Err(exclusive::owned_exclusively(&label, &owner));
                    }
                    exclusive::recover_wal(&conn, &label, "DELETE", self.busy_timeout)?;
                } else if hot_journal_of_node_file(path) {
                    exclusive::recover_wal(&conn, &label, "DELETE", self.busy_timeout)?;
                }
            }
        }
        let options = match locking {
            Locking::Posix => self.clone(),
            Locking::Dotfile => self.clone().locking(locking).journal(Journal::Rollback),
        };
        let mut store = LeaseStore::set_up(conn, &label, &options)?;
        if locking == Locking::Dotfile {
            mark_shared_with_node(store.connection())?;
        }
        // The write gate (gate.rs) only in front of WAL with SQLite's POSIX locks: with dot-file
        // locking the file is the rollback journal's, shared with Node processes that never take
        // the gate and hold the dot-file lock across whole transactions, readers included, so
        // the gate would order only a part of the waiters. Created only now, once the file is
        // known to be ours: a refused file gets no side file.
        #[cfg(target_os = "linux")]
        if options.write_gate && locking == Locking::Posix && options.journal == Journal::Wal {
            if let Some(db) = store.conn.path().filter(|p| !p.is_empty()).map(Path::new) {
                let db = db.to_path_buf();
                if let Some(start) = super::gate::attach(&store.conn, &db, options.busy_timeout) {
                    super::setup::set_gated_busy_handler(
                        &mut store.conn,
                        options.busy_timeout,
                        start,
                    )?;
                }
            }
        }
        store.path = Some(path.to_path_buf());
        Ok(store)
    }
}
/// Whether the file's header carries the "shared with Node" mark.
///
/// Read through an `immutable` connection: it takes no lock and never looks for a hot journal, so
/// it cannot roll back a transaction that a Node process (invisible to POSIX locks) is writing.
/// Going through SQLite (not `std::fs`) matters too: SQLite defers closing descriptors while this
/// process holds locks on the file, where a plain close would drop those locks.
fn shared_with_node(path: &Path) -> bool {
    let Some(text) = path.to_str() else {
        return false;
    };
    if !path.is_file() {
        return false;
    }
    let mut uri = String::from("file:");
    for c in text.chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3F"),
            '#' => uri.push_str("%23"),
            _ => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(uri, flags)
        .and_then(|conn| conn.query_row("PRAGMA application_id", [], |row| row.get::<_, i32>(0)))
        .map(|id| id == SHARED_WITH_NODE)
        .unwrap_or(false)
}

/// Whether the file's header says a Node process left it in exclusive WAL mode. Only for files
/// locked with dot files: reading through `std::fs` closes a descriptor, which would drop this
/// process's POSIX locks on the file, and such a file has none.
fn left_in_exclusive_wal(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 100];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut header))
        .is_ok()
        && exclusive::left_in_exclusive_wal(&header)
}

/// Whether the file is shared with Node and has a hot journal (see
/// [`exclusive::hot_journal_of_node_file`]); read like [`left_in_exclusive_wal`].
fn hot_journal_of_node_file(path: &Path) -> bool {
    use std::io::Read;
    let read = |path: &Path, buf: &mut [u8]| {
        std::fs::File::open(path).and_then(|mut file| file.read_exact(buf))
    };
    let mut header = [0u8; 100];
    let mut journal = [0u8; 8];
    let mut journal_path = path.as_os_str().to_owned();
    journal_path.push("-journal");
    read(path, &mut header).is_ok()
        && read(Path::new(&journal_path), &mut journal).is_ok()
        && exclusive::hot_journal_of_node_file(&header, &journal)
}

/// Refuses a non-empty file too short to be SQLite, before SQLite opens it: SQLite itself treats
/// a 1-byte file as empty and would overwrite it with a new database. Longer foreign files are
/// caught by SQLite's own header check on the first read.
///
/// Only `stat` here, never open+close: closing any descriptor of a file drops every POSIX lock
/// this process holds on it, which would silently unlock other connections to the same database.
fn refuse_foreign_header(path: &Path, label: &str) -> Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // missing: it will be created
    };
    refuse_non_file(&meta, label)?;
    // The smallest SQLite database is one 512-byte page.
    if meta.is_file() && meta.len() > 0 && meta.len() < 512 {
        return Err(Error::NotLeasefenceDatabase {
            path: label.to_string(),
            problem: format!(
                "not an SQLite database: {} bytes, less than one 512-byte page",
                meta.len()
            ),
        });
    }
    Ok(())
}

/// Refuses a path that exists and is not a regular file (`stat` follows symbolic links): SQLite
/// would block on a FIFO for ever, and fail on a device only at the first commit.
pub(crate) fn refuse_non_file(meta: &std::fs::Metadata, label: &str) -> Result<()> {
    use crate::rules::path_kind::{not_a_regular_file, PathKind};
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        PathKind::Directory
    } else {
        special_kind(kind)
    };
    Err(not_a_regular_file(label, what))
}

/// What a path that is neither a file nor a directory is.
#[cfg(unix)]
fn special_kind(kind: std::fs::FileType) -> crate::rules::path_kind::PathKind {
    use crate::rules::path_kind::PathKind;
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        PathKind::Fifo
    } else if kind.is_char_device() {
        PathKind::CharacterDevice
    } else if kind.is_block_device() {
        PathKind::BlockDevice
    } else if kind.is_socket() {
        PathKind::Socket
    } else {
        PathKind::Other
    }
}

/// What a path that is neither a file nor a directory is: WASI tells no more kinds in stable std.
#[cfg(not(unix))]
fn special_kind(_kind: std::fs::FileType) -> crate::rules::path_kind::PathKind {
    crate::rules::path_kind::PathKind::Other
}

impl LeaseStore {
    /// Opens (creating if missing) the database file at `path` with the default
    /// [`OpenOptions`].
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = leasefence::LeaseStore::open(dir.path().join("queue.db"))?;
    /// assert!(store.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        OpenOptions::new().open(path)
    }

    /// The file this store was opened on; `None` in memory.
    ///
    /// ```
    /// assert_eq!(leasefence::LeaseStore::open_in_memory()?.path(), None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}
