//! `leasefence-dotlock`: the native SQLite VFS of files shared with Node. All file I/O is SQLite's
//! own unix VFS without locking (`unix-none`); locking is the dot-file lock protocol of this
//! module's parent, the one the Node package speaks, with owner records, so a lock left by a
//! killed process is broken by the next opener. As in unix-dotfile, every lock level above NONE
//! is the one dot lock, and the file has no shared memory (no WAL; leasefence uses the rollback
//! journal here).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

use super::native_fs::NativeFs;
use super::{DotLock, LockStats};

/// The name to open a connection with.
pub(crate) const VFS_NAME: &str = "leasefence-dotlock";
const VFS_NAME_C: &CStr = c"leasefence-dotlock";
const INNER_VFS: &CStr = c"unix-none";

/// The lock of a main database file, and the level SQLite believes it holds.
struct MainDbLock {
    lock: DotLock<NativeFs>,
    level: c_int,
    stats: LockStats,
}

/// The file SQLite allocates for this VFS (`szOsFile` bytes): this header, then the inner
/// unix-none file at [`INNER_OFFSET`].
#[repr(C)]
struct DotLockFile {
    base: ffi::sqlite3_file,
    /// Null for journals and temporary files (they take no lock).
    main: *mut MainDbLock,
}

const INNER_OFFSET: usize = std::mem::size_of::<DotLockFile>();

/// SAFETY (for all below): `file` is a file SQLite allocated with this VFS's `szOsFile`.
unsafe fn inner(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    file.cast::<u8>().add(INNER_OFFSET).cast()
}

unsafe fn inner_methods(file: *mut ffi::sqlite3_file) -> &'static ffi::sqlite3_io_methods {
    &*(*inner(file)).pMethods
}

unsafe fn main_lock<'a>(file: *mut ffi::sqlite3_file) -> Option<&'a mut MainDbLock> {
    (*file.cast::<DotLockFile>()).main.as_mut()
}

unsafe fn base_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    (*vfs).pAppData.cast()
}

static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    // Version 1: no shared memory, so SQLite never puts such a file in WAL mode by itself.
    iVersion: 1,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let header = file.cast::<DotLockFile>();
    (*header).base.pMethods = ptr::null();
    (*header).main = ptr::null_mut();
    let base = base_vfs(vfs);
    let inner_file = inner(file);
    (*inner_file).pMethods = ptr::null();
    let Some(open) = (*base).xOpen else {
        return ffi::SQLITE_CANTOPEN;
    };
    let rc = open(base, name, inner_file, flags, out_flags);
    let inner_open = !(*inner_file).pMethods.is_null();
    if rc != ffi::SQLITE_OK || !inner_open {
        if inner_open {
            if let Some(close) = (*(*inner_file).pMethods).xClose {
                close(inner_file);
            }
        }
        return if rc == ffi::SQLITE_OK {
            ffi::SQLITE_CANTOPEN
        } else {
            rc
        };
    }
    if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
        // The name SQLite passes is the full path (xFullPathname), as unix-dotfile's and Node's.
        let path = (!name.is_null())
            .then(|| CStr::from_ptr(name).to_str().ok())
            .flatten();
        let Some(path) = path else {
            // A lock path must be text to be the same path for every runtime.
            if let Some(close) = (*(*inner_file).pMethods).xClose {
                close(inner_file);
            }
            return ffi::SQLITE_CANTOPEN;
        };
        (*header).main = Box::into_raw(Box::new(MainDbLock {
            lock: DotLock::new(NativeFs, path),
            level: ffi::SQLITE_LOCK_NONE,
            stats: LockStats::default(),
        }));
    }
    (*header).base.pMethods = &IO_METHODS;
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    let header = file.cast::<DotLockFile>();
    if !(*header).main.is_null() {
        let mut main = Box::from_raw((*header).main);
        (*header).main = ptr::null_mut();
        let _ = main.lock.release(&main.stats);
    }
    match inner_methods(file).xClose {
        Some(close) => close(inner(file)),
        None => ffi::SQLITE_OK,
    }
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let Some(main) = main_lock(file) else {
        return ffi::SQLITE_OK;
    };
    if main.level == ffi::SQLITE_LOCK_NONE && level > ffi::SQLITE_LOCK_NONE {
        match main.lock.acquire(&main.stats) {
            Ok(true) => {}
            Ok(false) => return ffi::SQLITE_BUSY,
            Err(_) => return ffi::SQLITE_IOERR_LOCK,
        }
    }
    // Every level above NONE is the same exclusive dot lock.
    main.level = level;
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let Some(main) = main_lock(file) else {
        return ffi::SQLITE_OK;
    };
    if level == ffi::SQLITE_LOCK_NONE
        && main.lock.is_held()
        && main.lock.release(&main.stats).is_err()
    {
        return ffi::SQLITE_IOERR_UNLOCK;
    }
    main.level = main.level.min(level);
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    let reserved = match main_lock(file) {
        None => false,
        Some(main) => match main.level {
            // Holding the only lock at SHARED: nobody (this connection included) has RESERVED.
            ffi::SQLITE_LOCK_SHARED => false,
            ffi::SQLITE_LOCK_NONE => main.lock.exists(),
            _ => true,
        },
    };
    *out = c_int::from(reserved);
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    match inner_methods(file).xRead {
        Some(read) => read(inner(file), buf, amount, offset),
        None => ffi::SQLITE_IOERR_READ,
    }
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    match inner_methods(file).xWrite {
        Some(write) => write(inner(file), buf, amount, offset),
        None => ffi::SQLITE_IOERR_WRITE,
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    match inner_methods(file).xTruncate {
        Some(truncate) => truncate(inner(file), size),
        None => ffi::SQLITE_IOERR_TRUNCATE,
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    match inner_methods(file).xSync {
        Some(sync) => sync(inner(file), flags),
        None => ffi::SQLITE_IOERR_FSYNC,
    }
}

unsafe extern "C" fn x_file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    match inner_methods(file).xFileSize {
        Some(file_size) => file_size(inner(file), size),
        None => ffi::SQLITE_IOERR_FSTAT,
    }
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    match inner_methods(file).xFileControl {
        Some(control) => control(inner(file), op, arg),
        None => ffi::SQLITE_NOTFOUND,
    }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    match inner_methods(file).xSectorSize {
        Some(sector_size) => sector_size(inner(file)),
        None => 4096,
    }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    match inner_methods(file).xDeviceCharacteristics {
        Some(characteristics) => characteristics(inner(file)),
        None => 0,
    }
}

// The VFS's own methods: the inner VFS's, called with the inner VFS (which its code expects).

unsafe extern "C" fn x_delete(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync: c_int,
) -> c_int {
    let base = base_vfs(vfs);
    match (*base).xDelete {
        Some(delete) => delete(base, name, sync),
        None => ffi::SQLITE_IOERR_DELETE,
    }
}

unsafe extern "C" fn x_access(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    let base = base_vfs(vfs);
    match (*base).xAccess {
        Some(access) => access(base, name, flags, out),
        None => ffi::SQLITE_IOERR_ACCESS,
    }
}

unsafe extern "C" fn x_full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    size: c_int,
    out: *mut c_char,
) -> c_int {
    let base = base_vfs(vfs);
    match (*base).xFullPathname {
        Some(full_pathname) => full_pathname(base, name, size, out),
        None => ffi::SQLITE_CANTOPEN,
    }
}

unsafe extern "C" fn x_randomness(
    vfs: *mut ffi::sqlite3_vfs,
    size: c_int,
    out: *mut c_char,
) -> c_int {
    let base = base_vfs(vfs);
    match (*base).xRandomness {
        Some(randomness) => randomness(base, size, out),
        None => 0,
    }
}

unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    let base = base_vfs(vfs);
    match (*base).xSleep {
        Some(sleep) => sleep(base, micros),
        None => 0,
    }
}

unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    let base = base_vfs(vfs);
    match (*base).xCurrentTime {
        Some(current_time) => current_time(base, out),
        None => ffi::SQLITE_ERROR,
    }
}

unsafe extern "C" fn x_get_last_error(
    vfs: *mut ffi::sqlite3_vfs,
    size: c_int,
    out: *mut c_char,
) -> c_int {
    let base = base_vfs(vfs);
    match (*base).xGetLastError {
        Some(get_last_error) => get_last_error(base, size, out),
        None => 0,
    }
}

unsafe extern "C" fn x_current_time_int64(
    vfs: *mut ffi::sqlite3_vfs,
    out: *mut ffi::sqlite3_int64,
) -> c_int {
    let base = base_vfs(vfs);
    match (*base).xCurrentTimeInt64 {
        Some(current_time) => current_time(base, out),
        None => ffi::SQLITE_ERROR,
    }
}

/// Registers the VFS with SQLite once per process (not as the default); the error says why not.
pub(crate) fn register() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            // SAFETY: sqlite3_vfs_find initializes SQLite if needed; the VFS built here lives for
            // the rest of the process (leaked), as SQLite requires of a registered VFS.
            unsafe {
                let base = ffi::sqlite3_vfs_find(INNER_VFS.as_ptr());
                if base.is_null() {
                    return Err("this SQLite has no unix-none VFS to build on".into());
                }
                let inner_size = usize::try_from((*base).szOsFile).unwrap_or(0);
                let vfs = Box::into_raw(Box::new(ffi::sqlite3_vfs {
                    iVersion: 2,
                    szOsFile: c_int::try_from(INNER_OFFSET + inner_size)
                        .map_err(|_| "the unix VFS's file is too large".to_string())?,
                    mxPathname: (*base).mxPathname,
                    pNext: ptr::null_mut(),
                    zName: VFS_NAME_C.as_ptr(),
                    pAppData: base.cast(),
                    xOpen: Some(x_open),
                    xDelete: Some(x_delete),
                    xAccess: Some(x_access),
                    xFullPathname: Some(x_full_pathname),
                    // Extension loading ignores the VFS argument: the inner VFS's own functions.
                    xDlOpen: (*base).xDlOpen,
                    xDlError: (*base).xDlError,
                    xDlSym: (*base).xDlSym,
                    xDlClose: (*base).xDlClose,
                    xRandomness: Some(x_randomness),
                    xSleep: Some(x_sleep),
                    xCurrentTime: Some(x_current_time),
                    xGetLastError: Some(x_get_last_error),
                    xCurrentTimeInt64: Some(x_current_time_int64),
                    xSetSystemCall: None,
                    xGetSystemCall: None,
                    xNextSystemCall: None,
                }));
                let rc = ffi::sqlite3_vfs_register(vfs, 0);
                if rc != ffi::SQLITE_OK {
                    drop(Box::from_raw(vfs));
                    return Err(format!("sqlite3_vfs_register failed with code {rc}"));
                }
                Ok(())
            }
        })
        .clone()
}
