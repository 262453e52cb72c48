//! The dot-file lock of a file shared between processes, Node and native alike: one protocol
//! ([`protocol`]) over a small file-system seam ([`LockFs`]), implemented by Node's `fs`
//! (wasm/node_vfs/dotlock.rs) and natively by std and libc ([`native_fs`]); natively an SQLite
//! VFS ([`sqlite_vfs`]) puts it under SQLite.
//!
//! The lock is the path `<db>.lock` (the name native SQLite's `unix-dotfile` VFS uses). Holding
//! it means "this connection owns the database": every SQLite lock level above NONE is mapped to
//! it, as unix-dotfile does.
//!
//! * Acquire: write an owner record (lock_record.rs) to a private temp file, then `link()` it to
//!   `<db>.lock`. link(2) is atomic and fails with EEXIST if *anything* (a record, or the lock
//!   *directory* of SQLite's own unix-dotfile) already exists, so while the machine runs the lock
//!   never exists without a complete owner record (every process reads the same page cache).
//!   The record is not synced: it only has to exclude processes of this boot, and after a power
//!   loss whatever reached the disk (nothing, an empty or torn file, or a whole record naming the
//!   boot that ended) is stale by the rules below (docs/decisions/node-syncs.md).
//! * Release: unlink `<db>.lock` (after checking it is still our record).
//! * Stale: the record names pid + /proc start time + hostname + boot id + a unique nonce. It is
//!   stale if it was written under another boot (the machine restarted: every process of that
//!   boot is gone), or if the host is ours and the pid is dead or was reused (start time
//!   differs). So a holder killed by a signal frees the file for the next opener by itself.
//! * After a power loss: the link can reach the disk while the record does not (an empty or torn
//!   file), and unix-dotfile's lock directory carries no record at all. A live holder always links
//!   a record it already wrote, so a lock without a readable record can only be a lost write:
//!   stale. A lock of either kind last modified before this boot (`btime` of `/proc/stat`)
//!   belongs to a process that no longer exists: stale too. A lock directory modified since the
//!   boot is never stale (its owner, an SQLite program on unix-dotfile, may be alive; `leasefence
//!   unlock` clears one left by a killed process, see stale_lock.rs).
//!   Why not also sync the directory after the link: a link lost with the power is the lock of a
//!   process that died with it, which nobody waits for.
//! * Breaking a stale instance `c` (named by its nonce, or by its inode when it has no record) is
//!   serialized by a per-instance mutex `<db>.lock.break-<id(c)>` acquired with the same link
//!   protocol. The only processes that may remove `<db>.lock` while it is `c` are c's owner
//!   (dead) and the live holder of that break mutex, so "re-inspect, still c, remove" cannot
//!   remove a live lock. A break mutex whose holder died is itself broken by the same rule
//!   (bounded depth).

pub(crate) mod protocol;

#[cfg(not(web))]
pub(crate) mod native_fs;
#[cfg(not(web))]
pub(crate) mod sqlite_vfs;

pub(crate) use protocol::{DotLock, LockStats};

/// What kind of failure a file-system call of the lock met: the protocol decides on these alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FsErrorKind {
    /// ENOENT: nothing at the path.
    NotFound,
    /// EEXIST: something is already at the path.
    Exists,
    /// Anything else: an I/O failure the caller reports.
    Other,
}

/// A failed file-system call: its kind, and the system's words for the report.
#[derive(Debug, Clone)]
pub(crate) struct FsError {
    pub kind: FsErrorKind,
    /// The errno name (`EACCES`, ...) and message, for the error SQLite or the caller shows.
    pub message: String,
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub(crate) type FsResult<T> = Result<T, FsError>;

/// What a lock path holds, read through one descriptor so that every field describes the same
/// file: a directory (SQLite's unix-dotfile lock) has no `text`.
pub(crate) struct LockFile {
    pub is_dir: bool,
    pub ino: u64,
    pub mtime_ms: f64,
    pub text: Option<String>,
}

/// Who this process (or wasm instance) is, as its lock records say it.
pub(crate) struct Identity {
    pub pid: u32,
    /// /proc start time of `pid` (clock ticks since boot), to tell a reused pid apart.
    pub start: Option<String>,
    pub host: String,
    /// Node's worker thread id; 0 natively (one record per process is enough there).
    pub thread: u32,
    /// Random bits that keep nonces unique across instances sharing a pid and across pid reuse.
    pub seed: u64,
    /// This boot's id (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: Option<String>,
    /// When this machine booted, in ms since the epoch (`btime` of `/proc/stat`).
    pub boot_ms: Option<f64>,
}

/// The file-system calls the lock protocol needs, one implementation per runtime.
pub(crate) trait LockFs {
    /// Who the caller is.
    fn identity(&self) -> &Identity;
    /// Creates `path` exclusively (O_EXCL) holding `content` (written, not synced: see the
    /// module's Acquire); `Exists` if something is there. Removes what it made if a later step
    /// fails.
    fn create_new(&self, path: &str, content: &str) -> FsResult<()>;
    /// link(2): `Exists` if anything is at `new_path`.
    fn link(&self, existing: &str, new_path: &str) -> FsResult<()>;
    fn unlink(&self, path: &str) -> FsResult<()>;
    fn rmdir(&self, path: &str) -> FsResult<()>;
    /// Opens `path` read-only and reads it whole (see [`LockFile`]).
    fn read_lock(&self, path: &str) -> FsResult<LockFile>;
    /// The names in directory `dir`.
    fn read_dir(&self, dir: &str) -> FsResult<Vec<String>>;
    /// Whether anything is at `path`.
    fn exists(&self, path: &str) -> bool;
    /// False only when process `pid` of this host is certainly gone: no such process, or the pid
    /// now names a process with another start time than `start`.
    fn pid_alive(&self, pid: u32, start: Option<&str>) -> bool;
}
