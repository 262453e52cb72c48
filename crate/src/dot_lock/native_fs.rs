//! The lock's file-system seam natively: std and libc (link(2), kill(2)), the process's identity
//! from `/proc`. Where `/proc` tells nothing (not Linux), the start time and boot are unknown and
//! the rules that need them do not apply; a dead pid is still seen by kill(2).

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;

use super::{FsError, FsErrorKind, FsResult, Identity, LockFile, LockFs};

/// The native [`LockFs`]: one identity for the whole process.
#[derive(Clone, Copy, Default)]
pub(crate) struct NativeFs;

fn fs_error(what: &str, path: &str, err: std::io::Error) -> FsError {
    let kind = match err.raw_os_error() {
        Some(libc::ENOENT) => FsErrorKind::NotFound,
        Some(libc::EEXIST) => FsErrorKind::Exists,
        _ => FsErrorKind::Other,
    };
    FsError {
        kind,
        message: format!("{what} {path}: {err}"),
    }
}

impl LockFs for NativeFs {
    fn identity(&self) -> &Identity {
        static IDENTITY: OnceLock<Identity> = OnceLock::new();
        IDENTITY.get_or_init(|| {
            let pid = std::process::id();
            Identity {
                pid,
                start: proc_start_time(pid),
                host: hostname(),
                thread: 0,
                seed: random_seed(),
                boot_id: boot_id(),
                boot_ms: boot_time_ms(),
            }
        })
    }

    fn create_new(&self, path: &str, content: &str) -> FsResult<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| fs_error("create", path, e))?;
        if let Err(e) = file.write_all(content.as_bytes()) {
            let _ = std::fs::remove_file(path);
            return Err(fs_error("write", path, e));
        }
        Ok(())
    }

    fn link(&self, existing: &str, new_path: &str) -> FsResult<()> {
        std::fs::hard_link(existing, new_path).map_err(|e| fs_error("link", new_path, e))
    }

    fn unlink(&self, path: &str) -> FsResult<()> {
        std::fs::remove_file(path).map_err(|e| fs_error("unlink", path, e))
    }

    fn rmdir(&self, path: &str) -> FsResult<()> {
        std::fs::remove_dir(path).map_err(|e| fs_error("rmdir", path, e))
    }

    fn read_lock(&self, path: &str) -> FsResult<LockFile> {
        let failed = |e| fs_error("read", path, e);
        let mut file = std::fs::File::open(path).map_err(failed)?;
        let meta = file.metadata().map_err(failed)?;
        let mut lock = LockFile {
            is_dir: meta.is_dir(),
            ino: meta.ino(),
            mtime_ms: (meta.mtime() * 1000) as f64 + (meta.mtime_nsec() / 1_000_000) as f64,
            text: None,
        };
        if !lock.is_dir {
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            file.read_to_end(&mut bytes).map_err(failed)?;
            lock.text = Some(String::from_utf8_lossy(&bytes).into_owned());
        }
        Ok(lock)
    }

    fn read_dir(&self, dir: &str) -> FsResult<Vec<String>> {
        let entries = std::fs::read_dir(dir).map_err(|e| fs_error("list", dir, e))?;
        Ok(entries
            .flatten()
            .filter_map(|entry| entry.file_name().into_string().ok())
            .collect())
    }

    fn exists(&self, path: &str) -> bool {
        std::fs::symlink_metadata(path).is_ok()
    }

    fn pid_alive(&self, pid: u32, start: Option<&str>) -> bool {
        let Ok(signed) = libc::pid_t::try_from(pid) else {
            return true; // not a pid this system can have: unknown, so alive
        };
        if signed == 0 {
            return true;
        }
        // SAFETY: signal 0 only checks that the process exists; nothing is delivered.
        if unsafe { libc::kill(signed, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        {
            return false;
        }
        // Exists (or EPERM: another user's process, alive). The same process, or a reused pid?
        match (start, proc_start_time(pid)) {
            (Some(want), Some(have)) => want == have,
            _ => true,
        }
    }
}

/// Field 22 of `/proc/<pid>/stat`: the process's start time in clock ticks since boot.
fn proc_start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses; fields resume after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19).map(str::to_string)
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into a buffer this function owns.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if ok {
        String::from_utf8_lossy(&buf[..len]).into_owned()
    } else {
        String::new()
    }
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty() && !id.contains('\n')).then(|| id.to_string())
}

fn boot_time_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let secs: f64 = stat
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(secs * 1000.0)
}

/// 64 random bits from the kernel; the clock and pid when it cannot be read.
fn random_seed() -> u64 {
    let mut bytes = [0u8; 8];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_ok() {
        return u64::from_le_bytes(bytes);
    }
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    clock ^ (u64::from(std::process::id()) << 40)
}
