//! A fault-injecting SQLite VFS for tests ("faulty"), wrapping the default unix VFS, in the manner
//! of SQLite's own crash and I/O-error tests (test6.c, test_devsym.c).
//!
//! Every call still reaches the real file system; the VFS only watches the files of one directory
//! (the *root*) and keeps, per file, what a disk would still hold after a power loss: the bytes as
//! of the file's last successful `xSync`, and the directory's entries as of its last directory
//! sync. It can
//!
//! - **cut the power** at the Nth mutating call (write, truncate, sync, delete), before that call
//!   runs: the root is rewritten to hold only the durable entries with their durable bytes
//!   ([`Loss::Forget`]), or those plus a random subset of the unsynced writes, some torn at a
//!   512-byte sector boundary, and a random subset of the unsynced entry changes ([`Loss::Torn`]);
//!   then the process is SIGKILLed, so nothing it did after that moment can be acknowledged;
//! - **fail** the Nth read, write, sync or truncate with an `SQLITE_IOERR_*` code, or a write with
//!   `SQLITE_FULL`, once or from then on until [`clear_faults`].
//!
//! Directory syncs happen inside the unix VFS (after a new journal's or WAL's first sync, and
//! after a delete with `syncDir`), where no VFS wrapper sees them; they all go through its
//! overridable `openDirectory` system call, so that is where this VFS learns of them. Only one
//! root per process; all I/O on it is serialized by one mutex, so a power cut never races a write.
//!
//! Test support only: it lives under `crate/tests/`, never in the library.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, MutexGuard, OnceLock};

use rusqlite::ffi;

/// The name to open connections with.
pub const VFS_NAME: &str = "faulty";

/// What a power cut leaves of the writes that were never synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Nothing: every file holds exactly its bytes as of its last sync, the directory its entries
    /// as of its last sync.
    Forget,
    /// A random subset (from `seed`) of the unsynced writes and truncates reaches the disk, in
    /// order, each kept write possibly torn at a 512-byte boundary; each unsynced entry change
    /// (a creation, a deletion) may or may not have reached it.
    Torn {
        /// Seed of the choices.
        seed: u64,
    },
}

/// The kinds of call a fault can hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Read,
    Write,
    Sync,
    Truncate,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Read, Kind::Write, Kind::Sync, Kind::Truncate];

    /// The SQLite error a failure of this kind reports (the unix VFS's own codes).
    pub fn io_error(self) -> c_int {
        match self {
            Kind::Read => ffi::SQLITE_IOERR_READ,
            Kind::Write => ffi::SQLITE_IOERR_WRITE,
            Kind::Sync => ffi::SQLITE_IOERR_FSYNC,
            Kind::Truncate => ffi::SQLITE_IOERR_TRUNCATE,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A planned failure: the `nth` call of `kind` (counted from when it was armed, from 1) fails
/// with `code`; with `persistent`, every later call of that kind fails too, until cleared.
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    pub kind: Kind,
    pub nth: u64,
    pub code: c_int,
    pub persistent: bool,
}

#[derive(Debug, Clone)]
enum Op {
    Write { offset: usize, data: Vec<u8> },
    Truncate { len: usize },
}

#[derive(Default)]
struct FileModel {
    /// The bytes as of the last successful sync.
    durable: Vec<u8>,
    /// The writes and truncates since then, in order.
    pending: Vec<Op>,
}

#[derive(Default)]
struct State {
    root: Option<PathBuf>,
    next_id: u64,
    /// Name in the root -> file id, as the running system sees the directory.
    entries: BTreeMap<String, u64>,
    /// Name -> file id, as the disk has it.
    durable_entries: BTreeMap<String, u64>,
    files: BTreeMap<u64, FileModel>,
    /// Mutating calls so far (writes, truncates, syncs, deletes) on the root's files.
    events: u64,
    cut: Option<(u64, Loss)>,
    fault: Option<Fault>,
    /// Calls of each kind since the fault was armed.
    since_armed: [u64; 4],
    /// Calls of each kind since registration.
    calls: [u64; 4],
    /// Every failure returned, in order.
    fired: Vec<(Kind, c_int)>,
    /// How long each sync of the root's files takes at least: a disk's flush, on a file system
    /// (tmpfs, a cache) whose syncs cost nothing.
    sync_delay: Option<std::time::Duration>,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::default()));

fn state() -> MutexGuard<'static, State> {
    // A test that panicked while holding the lock leaves the model as it was; keep going.
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

thread_local! {
    /// Set while this thread is inside a wrapped call on one of the root's files.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// Set by the `openDirectory` hook during such a call: SQLite is syncing the root.
    static DIR_SYNCED: Cell<bool> = const { Cell::new(false) };
}

/// Runs a real call on one of the root's files, noting whether it synced the directory.
fn inside<T>(call: impl FnOnce() -> T) -> (T, bool) {
    INSIDE.with(|flag| flag.set(true));
    DIR_SYNCED.with(|flag| flag.set(false));
    let answer = call();
    INSIDE.with(|flag| flag.set(false));
    (answer, DIR_SYNCED.with(|flag| flag.replace(false)))
}

struct Vfs {
    real: *mut ffi::sqlite3_vfs,
}
// SAFETY: the pointers are SQLite's static VFS objects, valid for the process's lifetime.
unsafe impl Send for Vfs {}
unsafe impl Sync for Vfs {}
static VFS: OnceLock<Vfs> = OnceLock::new();
/// The unix VFS's own openDirectory, set before the hook is installed: the hook is process-wide,
/// so another test thread's SQLite may call it while `VFS` is still being initialised.
static ORIGINAL_OPEN_DIRECTORY: OnceLock<OpenDirectory> = OnceLock::new();
type OpenDirectory = unsafe extern "C" fn(*const c_char, *mut c_int) -> c_int;

/// Registers the VFS (once per process) and makes `root` the watched directory: every file
/// already in it counts as durable, with its current bytes. Call it again to move to another
/// root (the model starts over).
pub fn register(root: &Path) {
    VFS.get_or_init(install);
    let root = root.canonicalize().expect("the root directory exists");
    let mut s = state();
    *s = State {
        root: Some(root.clone()),
        ..State::default()
    };
    for entry in std::fs::read_dir(&root).expect("read the root") {
        let entry = entry.unwrap();
        if !entry.file_type().unwrap().is_file() {
            continue;
        }
        s.next_id += 1;
        let id = s.next_id;
        let name = entry.file_name().to_string_lossy().into_owned();
        s.entries.insert(name, id);
        s.files.insert(
            id,
            FileModel {
                durable: std::fs::read(entry.path()).unwrap(),
                pending: Vec::new(),
            },
        );
    }
    s.durable_entries = s.entries.clone();
}

/// [`register`], and makes the VFS the process's default, so that code which opens its files by
/// path alone (the Node-API addon, `LeaseStore::open`) goes through it.
pub fn register_as_default(root: &Path) {
    register(root);
    let name = CString::new(VFS_NAME).unwrap();
    // SAFETY: SQLite's documented registration; registering a registered VFS again only moves it
    // to the head of the list, as the default.
    unsafe {
        let vfs = ffi::sqlite3_vfs_find(name.as_ptr());
        assert!(!vfs.is_null(), "the fault VFS is registered");
        assert_eq!(ffi::sqlite3_vfs_register(vfs, 1), ffi::SQLITE_OK);
    }
}

/// Opens a connection on the VFS (create if missing, no URI parsing, as the store opens files).
pub fn open_connection(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    use rusqlite::OpenFlags;
    rusqlite::Connection::open_with_flags_and_vfs(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        VFS_NAME,
    )
}

/// Arms one fault, replacing any other; counting starts now.
pub fn arm(fault: Fault) {
    let mut s = state();
    s.fault = Some(fault);
    s.since_armed = [0; 4];
}

/// Disarms the fault: the "disk" works again.
pub fn clear_faults() {
    state().fault = None;
}

/// The failures returned since the last call, in order.
pub fn take_fired() -> Vec<(Kind, c_int)> {
    std::mem::take(&mut state().fired)
}

/// Calls of each kind since registration: read, write, sync, truncate.
pub fn calls() -> [u64; 4] {
    state().calls
}

/// Makes every later sync of the root's files take at least `delay` (until the next
/// [`register`]): a disk's flush time, so that timing-dependent behaviour (commits grouped while
/// one syncs) does not depend on the machine's file system.
pub fn set_sync_delay(delay: std::time::Duration) {
    state().sync_delay = Some(delay);
}

/// Mutating calls since registration (the unit of [`cut_power_at`]).
pub fn events() -> u64 {
    state().events
}

/// Cuts the power before the `event`-th mutating call (counted since registration).
pub fn cut_power_at(event: u64, loss: Loss) {
    state().cut = Some((event, loss));
}

/// Cuts the power now.
pub fn cut_power_now(loss: Loss) -> ! {
    let s = state();
    power_cut(&s, loss)
}

/// A small deterministic generator for the torn choices (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

fn apply(image: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write { offset, data } => {
            if image.len() < offset + data.len() {
                image.resize(offset + data.len(), 0);
            }
            image[*offset..offset + data.len()].copy_from_slice(data);
        }
        Op::Truncate { len } => image.resize(*len, 0),
    }
}

/// The bytes a file has on the disk after the cut.
fn image_after_cut(model: &FileModel, rng: Option<&mut Rng>) -> Vec<u8> {
    let mut image = model.durable.clone();
    let Some(rng) = rng else {
        return image;
    };
    for op in &model.pending {
        if !rng.coin() {
            continue;
        }
        match op {
            Op::Write { offset, data } if rng.coin() => {
                // Torn: only the sectors up to a random 512-byte boundary inside the write.
                let end = offset + data.len();
                let boundaries: Vec<usize> = ((offset / 512 + 1) * 512..end).step_by(512).collect();
                if boundaries.is_empty() {
                    continue; // one sector: all or nothing, and this one is nothing
                }
                let cut = boundaries[(rng.next() as usize) % boundaries.len()];
                apply(
                    &mut image,
                    &Op::Write {
                        offset: *offset,
                        data: data[..cut - offset].to_vec(),
                    },
                );
            }
            _ => apply(&mut image, op),
        }
    }
    image
}

/// Rewrites the root as the disk holds it after a power loss, then dies at once.
fn power_cut(s: &State, loss: Loss) -> ! {
    let root = s.root.as_ref().expect("registered");
    let mut rng = match loss {
        Loss::Forget => None,
        Loss::Torn { seed } => Some(Rng(seed | 1)),
    };
    let mut surviving = s.durable_entries.clone();
    if let Some(rng) = rng.as_mut() {
        let names: BTreeSet<&String> = s.entries.keys().chain(s.durable_entries.keys()).collect();
        for name in names {
            if s.entries.get(name) != s.durable_entries.get(name) && rng.coin() {
                match s.entries.get(name) {
                    Some(id) => surviving.insert(name.clone(), *id),
                    None => surviving.remove(name),
                };
            }
        }
    }
    for entry in std::fs::read_dir(root).expect("read the root") {
        let entry = entry.unwrap();
        let _ = std::fs::remove_file(entry.path());
    }
    for (name, id) in &surviving {
        let image = s
            .files
            .get(id)
            .map(|model| image_after_cut(model, rng.as_mut()))
            .unwrap_or_default();
        std::fs::write(root.join(name), image).expect("write the image");
    }
    // SAFETY: plain signal to ourselves; nothing runs after it.
    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    unreachable!("SIGKILL did not stop the process");
}

impl State {
    /// Counts a call of `kind` and answers the failure to return, if any.
    fn fault_for(&mut self, kind: Kind) -> Option<c_int> {
        self.calls[kind.index()] += 1;
        let fault = self.fault?;
        if fault.kind != kind {
            return None;
        }
        self.since_armed[kind.index()] += 1;
        let n = self.since_armed[kind.index()];
        if n == fault.nth || (fault.persistent && n > fault.nth) {
            self.fired.push((kind, fault.code));
            return Some(fault.code);
        }
        None
    }

    /// Counts a mutating call; cuts the power when its turn has come.
    fn event(&mut self) {
        self.events += 1;
        if let Some((at, loss)) = self.cut {
            if self.events >= at {
                power_cut(self, loss);
            }
        }
    }

    fn name_in_root(&self, path: &Path) -> Option<String> {
        let root = self.root.as_ref()?;
        (path.parent()? == root).then(|| path.file_name().unwrap().to_string_lossy().into_owned())
    }

    fn directory_synced(&mut self, synced: bool) {
        if synced {
            self.durable_entries = self.entries.clone();
        }
    }
}

/// One open file: SQLite's header, then the real unix file in the space after this struct.
#[repr(C)]
struct FaultFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// The model's file id; 0 for a file outside the root (passed through untouched).
    id: u64,
}

fn real_vfs() -> *mut ffi::sqlite3_vfs {
    VFS.get().expect("registered").real
}

unsafe fn real_of(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    (*(file as *mut FaultFile)).real
}

unsafe fn id_of(file: *mut ffi::sqlite3_file) -> u64 {
    (*(file as *mut FaultFile)).id
}

unsafe fn methods(file: *mut ffi::sqlite3_file) -> &'static ffi::sqlite3_io_methods {
    &*(*file).pMethods
}

fn install() -> Vfs {
    // SAFETY: SQLite's documented VFS registration; every struct lives for the whole process.
    unsafe {
        assert_eq!(ffi::sqlite3_initialize(), ffi::SQLITE_OK);
        let real = ffi::sqlite3_vfs_find(std::ptr::null());
        assert!(!real.is_null(), "no default VFS");
        let name = CString::new("openDirectory").unwrap();
        let original_open_directory = ((*real).xGetSystemCall.unwrap())(real, name.as_ptr())
            .expect("the unix VFS has no openDirectory");
        ORIGINAL_OPEN_DIRECTORY.get_or_init(|| {
            std::mem::transmute::<unsafe extern "C" fn(), OpenDirectory>(original_open_directory)
        });
        let hook: unsafe extern "C" fn(*const c_char, *mut c_int) -> c_int = open_directory_hook;
        let rc = ((*real).xSetSystemCall.unwrap())(
            real,
            name.as_ptr(),
            Some(std::mem::transmute::<
                unsafe extern "C" fn(*const c_char, *mut c_int) -> c_int,
                unsafe extern "C" fn(),
            >(hook)),
        );
        assert_eq!(rc, ffi::SQLITE_OK);
        let mut vfs: ffi::sqlite3_vfs = *real;
        vfs.szOsFile = std::mem::size_of::<FaultFile>() as c_int + (*real).szOsFile;
        vfs.pNext = std::ptr::null_mut();
        vfs.zName = CString::new(VFS_NAME).unwrap().into_raw();
        vfs.pAppData = std::ptr::null_mut();
        vfs.xOpen = Some(x_open);
        vfs.xDelete = Some(x_delete);
        vfs.xAccess = Some(x_access);
        vfs.xFullPathname = Some(x_full_pathname);
        let vfs = Box::into_raw(Box::new(vfs));
        assert_eq!(ffi::sqlite3_vfs_register(vfs, 0), ffi::SQLITE_OK);
        Vfs { real }
    }
}

unsafe extern "C" fn open_directory_hook(path: *const c_char, fd: *mut c_int) -> c_int {
    // Set before this hook was installed, so it is there on every call.
    let Some(original) = ORIGINAL_OPEN_DIRECTORY.get() else {
        return ffi::SQLITE_ERROR;
    };
    let rc = original(path, fd);
    // Only inside a wrapped call on the root's files (whose lock is held: not taken here).
    if rc == ffi::SQLITE_OK && INSIDE.with(|flag| flag.get()) {
        DIR_SYNCED.with(|flag| flag.set(true));
    }
    rc
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let fault_file = file as *mut FaultFile;
    let real = (file as *mut u8).add(std::mem::size_of::<FaultFile>()) as *mut ffi::sqlite3_file;
    (*fault_file).base.pMethods = std::ptr::null();
    (*fault_file).real = real;
    (*fault_file).id = 0;
    let path = (!name.is_null())
        .then(|| PathBuf::from(CStr::from_ptr(name).to_string_lossy().into_owned()));
    let mut s = state();
    let tracked = path.as_ref().and_then(|p| s.name_in_root(p));
    let existed = path.as_ref().is_some_and(|p| p.exists());
    let vfs = real_vfs();
    let rc = ((*vfs).xOpen.unwrap())(vfs, name, real, flags, out_flags);
    if rc != ffi::SQLITE_OK || (*real).pMethods.is_null() {
        return rc;
    }
    if let Some(entry) = tracked {
        let id = match s.entries.get(&entry) {
            Some(id) if existed => *id,
            _ => {
                s.next_id += 1;
                let id = s.next_id;
                // A file already there that the model never saw: its bytes count as durable.
                let durable = if existed {
                    std::fs::read(path.as_ref().unwrap()).unwrap_or_default()
                } else {
                    Vec::new()
                };
                s.files.insert(
                    id,
                    FileModel {
                        durable,
                        pending: Vec::new(),
                    },
                );
                s.entries.insert(entry, id);
                id
            }
        };
        (*fault_file).id = id;
    }
    (*fault_file).base.pMethods = &IO_METHODS;
    rc
}

unsafe extern "C" fn x_delete(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    let path = PathBuf::from(CStr::from_ptr(name).to_string_lossy().into_owned());
    let mut s = state();
    let tracked = s.name_in_root(&path);
    if tracked.is_some() {
        s.event();
    }
    let vfs = real_vfs();
    // The unlink happens before the directory sync inside the real call: forget the entry first.
    let removed = tracked
        .as_ref()
        .and_then(|entry| s.entries.remove(entry).map(|id| (entry.clone(), id)));
    let (rc, synced) = inside(|| ((*vfs).xDelete.unwrap())(vfs, name, sync_dir));
    if rc != ffi::SQLITE_OK && path.exists() {
        if let Some((entry, id)) = removed {
            s.entries.insert(entry, id);
        }
    }
    s.directory_synced(synced && tracked.is_some());
    rc
}

unsafe extern "C" fn x_access(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    let vfs = real_vfs();
    ((*vfs).xAccess.unwrap())(vfs, name, flags, out)
}

unsafe extern "C" fn x_full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    let vfs = real_vfs();
    ((*vfs).xFullPathname.unwrap())(vfs, name, n, out)
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    let real = real_of(file);
    let _s = state();
    (methods(real).xClose.unwrap())(real)
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let real = real_of(file);
    let mut s = state();
    if id_of(file) != 0 {
        if let Some(code) = s.fault_for(Kind::Read) {
            return code;
        }
    }
    (methods(real).xRead.unwrap())(real, buf, amount, offset)
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let real = real_of(file);
    let id = id_of(file);
    let mut s = state();
    if id != 0 {
        s.event();
        if let Some(code) = s.fault_for(Kind::Write) {
            return code;
        }
    }
    let rc = (methods(real).xWrite.unwrap())(real, buf, amount, offset);
    if rc == ffi::SQLITE_OK && id != 0 {
        let data = std::slice::from_raw_parts(buf as *const u8, amount as usize).to_vec();
        s.files.entry(id).or_default().pending.push(Op::Write {
            offset: offset as usize,
            data,
        });
    }
    rc
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    let real = real_of(file);
    let id = id_of(file);
    let mut s = state();
    if id != 0 {
        s.event();
        if let Some(code) = s.fault_for(Kind::Truncate) {
            return code;
        }
    }
    let rc = (methods(real).xTruncate.unwrap())(real, size);
    if rc == ffi::SQLITE_OK && id != 0 {
        s.files
            .entry(id)
            .or_default()
            .pending
            .push(Op::Truncate { len: size as usize });
    }
    rc
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let real = real_of(file);
    let id = id_of(file);
    if id != 0 {
        // Outside the model's lock: other files' calls go on, as on a disk.
        let delay = state().sync_delay;
        if let Some(delay) = delay {
            std::thread::sleep(delay);
        }
    }
    let mut s = state();
    if id != 0 {
        s.event();
        if let Some(code) = s.fault_for(Kind::Sync) {
            return code;
        }
    }
    let (rc, synced) = inside(|| (methods(real).xSync.unwrap())(real, flags));
    if rc == ffi::SQLITE_OK && id != 0 {
        let model = s.files.entry(id).or_default();
        let pending = std::mem::take(&mut model.pending);
        for op in &pending {
            apply(&mut model.durable, op);
        }
    }
    s.directory_synced(synced && id != 0);
    rc
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    let real = real_of(file);
    let _s = state();
    (methods(real).xFileSize.unwrap())(real, size)
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let real = real_of(file);
    (methods(real).xLock.unwrap())(real, level)
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let real = real_of(file);
    (methods(real).xUnlock.unwrap())(real, level)
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    let real = real_of(file);
    (methods(real).xCheckReservedLock.unwrap())(real, out)
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    let real = real_of(file);
    (methods(real).xFileControl.unwrap())(real, op, arg)
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    let real = real_of(file);
    (methods(real).xSectorSize.unwrap())(real)
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    let real = real_of(file);
    (methods(real).xDeviceCharacteristics.unwrap())(real)
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    let real = real_of(file);
    (methods(real).xShmMap.unwrap())(real, page, size, extend, out)
}

unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    let real = real_of(file);
    (methods(real).xShmLock.unwrap())(real, offset, n, flags)
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    let real = real_of(file);
    (methods(real).xShmBarrier.unwrap())(real)
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    let real = real_of(file);
    (methods(real).xShmUnmap.unwrap())(real, delete)
}

unsafe extern "C" fn x_fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // No memory-mapped reads: every read goes through xRead, where faults are injected.
    let _ = (file, offset, amount);
    *out = std::ptr::null_mut();
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_unfetch(
    _file: *mut ffi::sqlite3_file,
    _offset: i64,
    _p: *mut c_void,
) -> c_int {
    ffi::SQLITE_OK
}

static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
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
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};
