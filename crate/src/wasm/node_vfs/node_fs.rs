//! Thin bindings to Node's synchronous `fs`, `os` and `process` APIs.
//!
//! Every fallible call is imported with `catch`; the thrown Node error is
//! reduced to its `code` string (ENOENT, EEXIST, ...), which is all the VFS
//! needs to decide between "busy", "gone" and "I/O error".

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "fs")]
extern "C" {
    #[wasm_bindgen(js_name = openSync, catch)]
    fn open_sync(path: &str, flags: i32, mode: i32) -> Result<i32, JsValue>;
    #[wasm_bindgen(js_name = closeSync, catch)]
    fn close_sync(fd: i32) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = readSync, catch)]
    fn read_sync(fd: i32, buf: &mut [u8], off: u32, len: u32, pos: f64) -> Result<f64, JsValue>;
    #[wasm_bindgen(js_name = writeSync, catch)]
    fn write_sync(fd: i32, buf: &[u8], off: u32, len: u32, pos: JsValue) -> Result<f64, JsValue>;
    #[wasm_bindgen(js_name = fstatSync, catch)]
    fn fstat_sync(fd: i32) -> Result<Stats, JsValue>;
    #[wasm_bindgen(js_name = statSync, catch)]
    fn stat_sync(path: &str) -> Result<Stats, JsValue>;
    #[wasm_bindgen(js_name = ftruncateSync, catch)]
    fn ftruncate_sync(fd: i32, len: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = fsyncSync, catch)]
    fn fsync_sync(fd: i32) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = fdatasyncSync, catch)]
    fn fdatasync_sync(fd: i32) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = unlinkSync, catch)]
    fn unlink_sync(path: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = rmdirSync, catch)]
    fn rmdir_sync(path: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = linkSync, catch)]
    fn link_sync(existing: &str, new_path: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = accessSync, catch)]
    fn access_sync(path: &str, mode: i32) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = realpathSync, catch)]
    fn realpath_sync(path: &str) -> Result<String, JsValue>;
    #[wasm_bindgen(js_name = readdirSync, catch)]
    fn readdir_sync(path: &str) -> Result<js_sys::Array, JsValue>;
    #[wasm_bindgen(js_name = readFileSync, catch)]
    fn read_file_sync(path: &str, encoding: &str) -> Result<String, JsValue>;

    pub type Stats;
    #[wasm_bindgen(method, getter)]
    fn size(this: &Stats) -> f64;
    #[wasm_bindgen(method, js_name = isFile)]
    fn is_file(this: &Stats) -> bool;
    #[wasm_bindgen(method, getter)]
    fn mtimeMs(this: &Stats) -> f64;
    #[wasm_bindgen(method, getter)]
    fn ino(this: &Stats) -> f64;
    #[wasm_bindgen(method, getter, js_name = birthtimeMs)]
    fn birthtime_ms(this: &Stats) -> f64;
    #[wasm_bindgen(method, js_name = isDirectory)]
    fn is_directory(this: &Stats) -> bool;
    #[wasm_bindgen(method, js_name = isFIFO)]
    fn is_fifo(this: &Stats) -> bool;
    #[wasm_bindgen(method, js_name = isCharacterDevice)]
    fn is_character_device(this: &Stats) -> bool;
    #[wasm_bindgen(method, js_name = isBlockDevice)]
    fn is_block_device(this: &Stats) -> bool;
    #[wasm_bindgen(method, js_name = isSocket)]
    fn is_socket(this: &Stats) -> bool;
}

#[wasm_bindgen(module = "worker_threads")]
extern "C" {
    #[wasm_bindgen(thread_local_v2, js_name = threadId)]
    static THREAD_ID: f64;
}

/// worker_threads.threadId of the calling thread (0 = main thread).
pub fn thread_id() -> u32 {
    THREAD_ID.with(|t| *t as u32)
}

#[wasm_bindgen(module = "os")]
extern "C" {
    #[wasm_bindgen(js_name = hostname)]
    fn os_hostname() -> String;
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = process, js_name = kill, catch)]
    fn process_kill(pid: f64, sig: i32) -> Result<bool, JsValue>;
    #[wasm_bindgen(js_namespace = process, js_name = cwd)]
    fn process_cwd() -> String;
}

/// A failed Node call, reduced to its errno name.
#[derive(Debug, Clone)]
pub struct NodeErr {
    pub code: String,
    pub message: String,
}

impl NodeErr {
    fn from_js(err: JsValue) -> Self {
        let code = Reflect::get(&err, &JsValue::from_str("code"))
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_else(|| "EUNKNOWN".into());
        let message = Reflect::get(&err, &JsValue::from_str("message"))
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default();
        NodeErr { code, message }
    }
    pub fn is(&self, code: &str) -> bool {
        self.code == code
    }
}

pub type NResult<T> = Result<T, NodeErr>;

fn m<T>(r: Result<T, JsValue>) -> NResult<T> {
    r.map_err(NodeErr::from_js)
}

fn constant(name: &str) -> i32 {
    // fs.constants is platform specific; read it instead of hard-coding Linux values.
    let c = node_fs_constants();
    Reflect::get(&c, &JsValue::from_str(name))
        .ok()
        .and_then(|v| v.as_f64())
        .map(|v| v as i32)
        .unwrap_or(0)
}

#[wasm_bindgen(module = "fs")]
extern "C" {
    #[wasm_bindgen(thread_local_v2, js_name = constants)]
    static FS_CONSTANTS: JsValue;
}

fn node_fs_constants() -> JsValue {
    FS_CONSTANTS.with(|c| c.clone())
}

#[derive(Clone, Copy)]
pub struct OpenFlags {
    pub write: bool,
    pub create: bool,
    pub exclusive: bool,
}

pub fn open(path: &str, f: OpenFlags) -> NResult<i32> {
    let mut flags = if f.write {
        constant("O_RDWR")
    } else {
        constant("O_RDONLY")
    };
    if f.create {
        flags |= constant("O_CREAT");
    }
    if f.exclusive {
        flags |= constant("O_EXCL");
    }
    m(open_sync(path, flags, 0o644))
}

pub fn close(fd: i32) -> NResult<()> {
    m(close_sync(fd))
}

/// Reads until `buf` is full or EOF; returns the byte count.
pub fn read_at(fd: i32, buf: &mut [u8], pos: u64) -> NResult<usize> {
    let mut done = 0usize;
    while done < buf.len() {
        let want = (buf.len() - done) as u32;
        let n = m(read_sync(
            fd,
            &mut buf[done..],
            0,
            want,
            (pos + done as u64) as f64,
        ))? as usize;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

pub fn write_at(fd: i32, buf: &[u8], pos: Option<u64>) -> NResult<()> {
    let mut done = 0usize;
    while done < buf.len() {
        let p = match pos {
            Some(p) => JsValue::from_f64((p + done as u64) as f64),
            None => JsValue::NULL,
        };
        let n = m(write_sync(
            fd,
            &buf[done..],
            0,
            (buf.len() - done) as u32,
            p,
        ))? as usize;
        done += n;
    }
    Ok(())
}

pub fn fsize(fd: i32) -> NResult<u64> {
    Ok(m(fstat_sync(fd))?.size() as u64)
}

/// (is regular file, size, mtime ms)
/// What tells one file apart from a later one at the same path: its inode and its birth time
/// (statx). `None` where the file system keeps no birth time (an inode number alone can be reused).
pub fn identity(fd: i32) -> NResult<Option<(u64, u64)>> {
    let stats = m(fstat_sync(fd))?;
    let born = stats.birthtime_ms();
    Ok((born > 0.0).then(|| (stats.ino() as u64, born.to_bits())))
}

pub fn stat(path: &str) -> NResult<(bool, u64, f64)> {
    let s = m(stat_sync(path))?;
    Ok((s.is_file(), s.size() as u64, s.mtimeMs()))
}

/// What `path` holds when it exists and is not a regular file (`stat` follows symbolic links);
/// `Ok(None)` for a regular file, ENOENT when there is nothing there.
pub fn not_a_file(path: &str) -> NResult<Option<crate::rules::path_kind::PathKind>> {
    use crate::rules::path_kind::PathKind;
    let s = m(stat_sync(path))?;
    Ok(if s.is_file() {
        None
    } else if s.is_directory() {
        Some(PathKind::Directory)
    } else if s.is_fifo() {
        Some(PathKind::Fifo)
    } else if s.is_character_device() {
        Some(PathKind::CharacterDevice)
    } else if s.is_block_device() {
        Some(PathKind::BlockDevice)
    } else if s.is_socket() {
        Some(PathKind::Socket)
    } else {
        Some(PathKind::Other)
    })
}

/// What a lock path holds, read through one descriptor so that every field describes the same
/// file: a directory (native SQLite's lock) has no `text`.
pub struct LockFile {
    pub is_dir: bool,
    pub ino: u64,
    pub mtime_ms: f64,
    pub text: Option<String>,
}

/// Opens `path` read-only and reads it whole; ENOENT when there is nothing there.
pub fn read_lock(path: &str) -> NResult<LockFile> {
    let fd = m(open_sync(path, constant("O_RDONLY"), 0))?;
    let result = (|| {
        let stats = m(fstat_sync(fd))?;
        let mut lock = LockFile {
            is_dir: stats.is_directory(),
            ino: stats.ino() as u64,
            mtime_ms: stats.mtimeMs(),
            text: None,
        };
        if !lock.is_dir {
            let mut bytes = vec![0u8; stats.size() as usize];
            let read = read_at(fd, &mut bytes, 0)?;
            bytes.truncate(read);
            lock.text = Some(String::from_utf8_lossy(&bytes).into_owned());
        }
        Ok(lock)
    })();
    let _ = close_sync(fd);
    result
}

pub fn rmdir(path: &str) -> NResult<()> {
    m(rmdir_sync(path))
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): a lock recorded under another boot id
/// belongs to a process that died with the machine.
pub fn boot_id() -> Option<String> {
    let id = read_text("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty() && !id.contains('\n')).then(|| id.to_string())
}

/// When this machine booted, in ms since the epoch (`btime` of `/proc/stat`).
pub fn boot_time_ms() -> Option<f64> {
    let stat = read_text("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("btime "))?;
    let secs: f64 = line[6..].trim().parse().ok()?;
    Some(secs * 1000.0)
}

pub fn truncate(fd: i32, len: u64) -> NResult<()> {
    m(ftruncate_sync(fd, len as f64))
}

pub fn fsync(fd: i32, data_only: bool) -> NResult<()> {
    if data_only {
        m(fdatasync_sync(fd))
    } else {
        m(fsync_sync(fd))
    }
}

/// fsync a directory (Linux allows opening a directory read-only and fsyncing it).
pub fn fsync_dir(dir: &str) -> NResult<()> {
    let fd = m(open_sync(dir, constant("O_RDONLY"), 0))?;
    let r = m(fsync_sync(fd));
    let _ = close_sync(fd);
    r
}

pub fn unlink(path: &str) -> NResult<()> {
    m(unlink_sync(path))
}

pub fn link(existing: &str, new_path: &str) -> NResult<()> {
    m(link_sync(existing, new_path))
}

pub fn access(path: &str, read: bool, write: bool) -> NResult<()> {
    let mut mode = constant("F_OK");
    if read {
        mode |= constant("R_OK");
    }
    if write {
        mode |= constant("W_OK");
    }
    m(access_sync(path, mode))
}

pub fn realpath(path: &str) -> NResult<String> {
    m(realpath_sync(path))
}

pub fn read_text(path: &str) -> NResult<String> {
    m(read_file_sync(path, "utf8"))
}

pub fn readdir(path: &str) -> NResult<Vec<String>> {
    Ok(m(readdir_sync(path))?
        .iter()
        .filter_map(|v| v.as_string())
        .collect())
}

/// Creates `path` exclusively (O_EXCL) with `content` (not synced: a lock record needs no
/// durability, see crate/src/dot_lock); fails with EEXIST if present.
pub fn create_new_with(path: &str, content: &str) -> NResult<()> {
    let fd = m(open_sync(
        path,
        constant("O_WRONLY") | constant("O_CREAT") | constant("O_EXCL"),
        0o644,
    ))?;
    let r = write_at(fd, content.as_bytes(), Some(0));
    let _ = close_sync(fd);
    if r.is_err() {
        let _ = unlink_sync(path);
    }
    r
}

pub fn hostname() -> String {
    os_hostname()
}

pub fn cwd() -> String {
    process_cwd()
}

pub fn pid() -> u32 {
    let p = Reflect::get(&js_sys::global(), &"process".into()).unwrap_or(JsValue::UNDEFINED);
    Reflect::get(&p, &"pid".into())
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0) as u32
}

/// Linux process start time (field 22 of /proc/<pid>/stat, clock ticks since boot).
/// Distinguishes a dead owner from an unrelated process that reused its pid.
pub fn proc_start_time(pid: u32) -> Option<String> {
    let s = read_text(&format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 1..];
    // after ")" the fields start at field 3 (state); field 22 is index 19.
    after.split_whitespace().nth(19).map(|x| x.to_string())
}

/// Liveness of a process on this host.
///  Some(true)  = certainly alive (or exists but not signalable: EPERM)
///  Some(false) = certainly dead (ESRCH), or pid reused by a different process
pub fn pid_alive(pid: u32, start_time: Option<&str>) -> bool {
    if pid == 0 {
        return true; // unknown owner: conservative
    }
    match process_kill(pid as f64, 0) {
        Ok(_) => {}
        Err(e) => {
            let e = NodeErr::from_js(e);
            if e.is("ESRCH") {
                return false;
            }
            // EPERM: exists but owned by another user -> alive.
        }
    }
    match (start_time, proc_start_time(pid)) {
        (Some(want), Some(have)) => want == have,
        _ => true,
    }
}
