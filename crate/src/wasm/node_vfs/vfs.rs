//! "nodefs": a SQLite VFS over Node's synchronous fs API, built on
//! sqlite-wasm-rs 0.6's `vfs` (= rsqlite-vfs 0.2) traits.
use super::dotlock::{DotLock, LockStats, NodeFs};
use super::node_fs::{self as node, NodeErr, OpenFlags};
use core::cell::RefCell;
use sqlite_wasm_rs::vfs::{
    register_vfs, registered_vfs, AccessMode, FileKind, LockLevel, MemChunksFile, OpenAccess,
    OpenOptions, OpenRequest, OpenedFile, SQLiteIoMethods, SQLiteVfs, SyncOptions, VfsError,
    VfsErrorCode, VfsFile, VfsResult, VfsStore,
};
use sqlite_wasm_rs::WasmOsCallback;
use std::collections::HashMap;

pub const VFS_NAME: &str = "nodefs";

fn err(code: VfsErrorCode, what: &str, e: NodeErr) -> VfsError {
    VfsError::new(code, format!("{what}: {} {}", e.code, e.message).into())
}

fn lock_err(code: VfsErrorCode, e: crate::dot_lock::FsError) -> VfsError {
    VfsError::new(code, e.message.into())
}

pub struct DiskFile {
    fd: i32,
    path: String,
    lock: Option<DotLock>, // main database only
    level: LockLevel,
    /// A journal (or WAL) whose directory entry may not be on the disk yet: its directory is synced with
    /// its first sync. Holds the file's identity, remembered once synced.
    dirsync_pending: Option<Option<(u64, u64)>>,
    read_only: bool,
}

pub enum NodeFile {
    Disk(DiskFile),
    Mem(MemChunksFile),
}

thread_local! {
    pub static STATS: LockStats = LockStats::default();
    static SYNCS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
    /// Journals (path -> identity) whose directory entry this thread has synced. A persistent
    /// journal is opened again by every transaction; the directory needs its sync only when the
    /// file at that path is one not seen synced before (created since, by us or anyone).
    static DURABLE_ENTRIES: RefCell<HashMap<String, (u64, u64)>> = RefCell::new(HashMap::new());
}

pub fn sync_count() -> u64 {
    SYNCS.with(|s| s.get())
}

fn dirname(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => ".",
    }
}

impl VfsFile for NodeFile {
    fn read(&mut self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        match self {
            NodeFile::Mem(m) => m.read(buf, offset),
            NodeFile::Disk(f) => {
                node::read_at(f.fd, buf, offset).map_err(|e| err(VfsErrorCode::IoRead, "read", e))
            }
        }
    }

    fn write(&mut self, buf: &[u8], offset: u64) -> VfsResult<()> {
        match self {
            NodeFile::Mem(m) => m.write(buf, offset),
            NodeFile::Disk(f) => {
                if f.read_only {
                    return Err(VfsError::new(VfsErrorCode::ReadOnly, "read-only".into()));
                }
                // As os_unix.c does: no space left is SQLITE_FULL ("database or disk is
                // full"), which the store's message explains, not a bare I/O error.
                node::write_at(f.fd, buf, Some(offset)).map_err(|e| {
                    let full = e.is("ENOSPC") || e.is("EDQUOT");
                    let code = if full {
                        VfsErrorCode::Full
                    } else {
                        VfsErrorCode::IoWrite
                    };
                    err(code, "write", e)
                })
            }
        }
    }

    fn truncate(&mut self, size: u64) -> VfsResult<()> {
        match self {
            NodeFile::Mem(m) => m.truncate(size),
            NodeFile::Disk(f) => {
                node::truncate(f.fd, size).map_err(|e| err(VfsErrorCode::IoTruncate, "truncate", e))
            }
        }
    }

    fn sync(&mut self, options: SyncOptions) -> VfsResult<()> {
        match self {
            NodeFile::Mem(_) => Ok(()),
            NodeFile::Disk(f) => {
                SYNCS.with(|s| s.set(s.get() + 1));
                node::fsync(f.fd, options.data_only)
                    .map_err(|e| err(VfsErrorCode::IoSync, "fsync", e))?;
                // After the first sync of a journal, make its directory entry durable too (a
                // journal lost with the power cannot roll back the database writes that follow).
                if let Some(identity) = f.dirsync_pending.take() {
                    node::fsync_dir(dirname(&f.path))
                        .map_err(|e| err(VfsErrorCode::IoDirectorySync, "fsync dir", e))?;
                    if let Some(identity) = identity {
                        DURABLE_ENTRIES.with(|d| d.borrow_mut().insert(f.path.clone(), identity));
                    }
                }
                Ok(())
            }
        }
    }

    fn size(&self) -> VfsResult<u64> {
        match self {
            NodeFile::Mem(m) => m.size(),
            NodeFile::Disk(f) => {
                node::fsize(f.fd).map_err(|e| err(VfsErrorCode::IoStat, "fstat", e))
            }
        }
    }

    fn lock(&mut self, level: LockLevel) -> VfsResult<()> {
        let NodeFile::Disk(f) = self else {
            return Ok(());
        };
        let Some(lock) = f.lock.as_mut() else {
            return Ok(());
        };
        if f.level == LockLevel::None {
            let ok = STATS
                .with(|s| lock.acquire(s))
                .map_err(|e| lock_err(VfsErrorCode::IoLock, e))?;
            if !ok {
                return Err(VfsError::new(
                    VfsErrorCode::Busy,
                    "database is locked".into(),
                ));
            }
        }
        // Every level above NONE is the same exclusive dot-lock.
        f.level = level;
        Ok(())
    }

    fn unlock(&mut self, level: LockLevel) -> VfsResult<()> {
        let NodeFile::Disk(f) = self else {
            return Ok(());
        };
        let Some(lock) = f.lock.as_mut() else {
            return Ok(());
        };
        if level == LockLevel::None && lock.is_held() {
            STATS
                .with(|s| lock.release(s))
                .map_err(|e| lock_err(VfsErrorCode::IoUnlock, e))?;
        }
        f.level = level.min(f.level);
        Ok(())
    }

    fn check_reserved_lock(&self) -> VfsResult<bool> {
        let NodeFile::Disk(f) = self else {
            return Ok(false);
        };
        let Some(lock) = f.lock.as_ref() else {
            return Ok(false);
        };
        Ok(match f.level {
            // We hold the only lock; at SHARED nobody (incl. us) has RESERVED.
            LockLevel::Shared => false,
            LockLevel::None => lock.exists(),
            _ => true,
        })
    }
}

#[derive(Default)]
pub struct AppData {
    last_error: RefCell<Option<VfsError>>,
}

pub struct Store;

impl VfsStore for Store {
    type File = NodeFile;
    type AppData = AppData;

    fn record_error(data: &AppData, error: VfsError) {
        data.last_error.replace(Some(error));
    }

    fn last_error(data: &AppData) -> Option<VfsError> {
        data.last_error.borrow().clone()
    }

    fn open_file(_data: &AppData, req: OpenRequest<'_>) -> VfsResult<OpenedFile<NodeFile>> {
        let opts = req.options;
        let Some(name) = req.filename else {
            // Anonymous temp files (TEMP_STORE=2 makes these rare): keep in memory.
            return Ok(OpenedFile {
                file: NodeFile::Mem(MemChunksFile::default()),
                access: OpenAccess::ReadWrite,
            });
        };
        let path = name.path().to_string();
        let write = opts.access() == OpenAccess::ReadWrite;
        let mut fl = OpenFlags {
            write,
            create: opts.create(),
            exclusive: opts.exclusive(),
        };
        let mut access = opts.access();
        let fd = match node::open(&path, fl) {
            Ok(fd) => fd,
            Err(e)
                if write
                    && !opts.create()
                    && (e.is("EACCES") || e.is("EROFS") || e.is("EPERM")) =>
            {
                fl.write = false;
                access = OpenAccess::ReadOnly;
                node::open(&path, fl).map_err(|e| err(VfsErrorCode::CantOpen, "open", e))?
            }
            Err(e) => return Err(err(VfsErrorCode::CantOpen, &format!("open {path}"), e)),
        };
        let kind = opts.kind();
        let lock = matches!(kind, Some(FileKind::MainDb)).then(|| DotLock::new(NodeFs, &path));
        // The WAL of an exclusive connection too: a WAL whose entry is lost with the power takes
        // every commit since the last checkpoint with it (SQLite's unix VFS syncs the directory
        // of a new WAL for the same reason).
        let journal = matches!(
            kind,
            Some(FileKind::MainJournal | FileKind::SuperJournal | FileKind::Wal)
        );
        let dirsync_pending = if opts.create() && journal {
            // Unknown identity (no birth time): sync every time, and remember nothing.
            let identity = node::identity(fd).ok().flatten();
            let durable = identity
                .is_some_and(|id| DURABLE_ENTRIES.with(|d| d.borrow().get(&path) == Some(&id)));
            (!durable).then_some(identity)
        } else {
            None
        };
        Ok(OpenedFile {
            file: NodeFile::Disk(DiskFile {
                fd,
                path,
                lock,
                level: LockLevel::None,
                dirsync_pending,
                read_only: access == OpenAccess::ReadOnly,
            }),
            access,
        })
    }

    fn close_file(
        data: &AppData,
        name: Option<&str>,
        file: NodeFile,
        options: OpenOptions,
    ) -> VfsResult<()> {
        let NodeFile::Disk(mut f) = file else {
            return Ok(());
        };
        if let Some(lock) = f.lock.as_mut() {
            let _ = STATS.with(|s| lock.release(s));
        }
        let r = node::close(f.fd).map_err(|e| err(VfsErrorCode::IoClose, "close", e));
        if options.delete_on_close() {
            if let Some(n) = name {
                let _ = Self::delete_file(data, n, false);
            }
        }
        r
    }

    fn access(_data: &AppData, name: &str, mode: AccessMode) -> VfsResult<bool> {
        Ok(match mode {
            // Mirror unixAccess(): an empty regular file "does not exist" (an
            // empty journal is not hot).
            AccessMode::Exists => match node::stat(name) {
                Ok((is_file, size, _)) => !is_file || size > 0,
                Err(_) => false,
            },
            AccessMode::Read => node::access(name, true, false).is_ok(),
            AccessMode::ReadWrite => node::access(name, true, true).is_ok(),
        })
    }

    fn full_pathname(_data: &AppData, name: &str) -> VfsResult<String> {
        // Canonicalize like native unixFullPathname (absolute, symlinks
        // resolved) so `<db>.lock` is the same path native unix-dotfile uses.
        let abs = if name.starts_with('/') {
            name.to_string()
        } else {
            format!("{}/{}", node::cwd(), name)
        };
        if let Ok(p) = node::realpath(&abs) {
            return Ok(p);
        }
        let (dir, base) = match abs.rfind('/') {
            Some(i) => (&abs[..i.max(1)], &abs[i + 1..]),
            None => (".", abs.as_str()),
        };
        match node::realpath(dir) {
            Ok(d) if d == "/" => Ok(format!("/{base}")),
            Ok(d) => Ok(format!("{d}/{base}")),
            Err(_) => Ok(abs),
        }
    }

    fn delete_file(_data: &AppData, name: &str, sync_dir: bool) -> VfsResult<()> {
        match node::unlink(name) {
            Ok(()) => {}
            Err(e) if e.is("ENOENT") => {
                return Err(VfsError::new(
                    VfsErrorCode::IoDeleteNoEntry,
                    "no such file".into(),
                ))
            }
            Err(e) => return Err(err(VfsErrorCode::IoDelete, "unlink", e)),
        }
        if sync_dir {
            node::fsync_dir(dirname(name))
                .map_err(|e| err(VfsErrorCode::IoDirectorySync, "fsync dir", e))?;
        }
        Ok(())
    }
}

pub struct Io;
impl SQLiteIoMethods for Io {
    type Store = Store;
}

pub struct NodeVfs;
static OS: WasmOsCallback = WasmOsCallback;
impl SQLiteVfs<Io> for NodeVfs {
    type Os = WasmOsCallback;
    fn os(_: &AppData) -> &WasmOsCallback {
        &OS
    }
}

pub fn register() -> Result<(), String> {
    unsafe {
        if registered_vfs(VFS_NAME)
            .map_err(|e| e.to_string())?
            .is_some()
        {
            return Ok(());
        }
        let reg = register_vfs::<Io, NodeVfs>(VFS_NAME, AppData::default(), false)
            .map_err(|e| e.to_string())?;
        let _ = reg.into_raw();
    }
    Ok(())
}
