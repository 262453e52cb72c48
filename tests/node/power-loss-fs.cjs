// A simulated power loss for one directory, loaded with `node --require` before the package.
//
// Like LazyFS, it keeps what a disk would still have after the power went: a file's bytes as of
// its last fsync/fdatasync, and the directory's entries as of the directory's last fsync. Every
// call still goes to the real file system; the model only watches opens, links, unlinks and
// syncs under LEASEFENCE_PLFS_ROOT. At the LEASEFENCE_PLFS_CUT-th sync call (before it runs) the
// power goes: the directory is rewritten to hold only the durable entries with their durable
// bytes (an entry whose file never synced is an empty file), and the process is SIGKILLed.
// Nothing else in the process can run in between, so whatever it acknowledged before that sync is
// all it acknowledged.
//
// It also injects I/O faults, like SQLite's own I/O-error tests: `globalThis.leasefenceFaultFs`
// (set when LEASEFENCE_PLFS_ROOT is) arms a failure of the Nth read, write, sync or truncate of a
// file under the root (counted from arming), with Node's EIO or ENOSPC error, once or (persistent)
// from then on until cleared. A failed call does nothing: a failed write writes nothing, a failed
// sync makes nothing durable.
'use strict';
const fs = require('fs');
const path = require('path');

const root = process.env.LEASEFENCE_PLFS_ROOT && path.resolve(process.env.LEASEFENCE_PLFS_ROOT);
const cutAt = Number(process.env.LEASEFENCE_PLFS_CUT || 0);

if (root) {
  const real = {
    openSync: fs.openSync,
    closeSync: fs.closeSync,
    linkSync: fs.linkSync,
    unlinkSync: fs.unlinkSync,
    renameSync: fs.renameSync,
    fsyncSync: fs.fsyncSync,
    fdatasyncSync: fs.fdatasyncSync,
    readSync: fs.readSync,
    writeSync: fs.writeSync,
    ftruncateSync: fs.ftruncateSync,
  };
  let nextId = 1;
  const DIR = 'dir';
  /** name -> file id, as the running system sees the directory. */
  const entries = new Map();
  /** name -> file id, as the disk has it. */
  let durableEntries = new Map();
  /** file id -> Buffer, the bytes as of the file's last sync. */
  const durableData = new Map();
  /** fd -> file id (or DIR). */
  const fds = new Map();
  let syncs = 0;

  const inRoot = (p) => typeof p === 'string' && path.dirname(path.resolve(p)) === root;
  const isRoot = (p) => typeof p === 'string' && path.resolve(p) === root;

  for (const name of fs.readdirSync(root)) {
    const id = nextId++;
    entries.set(name, id);
    durableData.set(id, fs.readFileSync(path.join(root, name)));
  }
  durableEntries = new Map(entries);

  fs.openSync = function openSync(p, flags, mode) {
    const existed = inRoot(p) && fs.existsSync(p);
    const fd = real.openSync.call(fs, p, flags, mode);
    if (isRoot(p)) {
      fds.set(fd, DIR);
    } else if (inRoot(p)) {
      const name = path.basename(p);
      if (!existed || !entries.has(name)) entries.set(name, nextId++);
      fds.set(fd, entries.get(name));
    }
    return fd;
  };
  fs.closeSync = function closeSync(fd) {
    fds.delete(fd);
    return real.closeSync.call(fs, fd);
  };
  fs.linkSync = function linkSync(from, to) {
    const result = real.linkSync.call(fs, from, to);
    if (inRoot(to) && inRoot(from)) entries.set(path.basename(to), entries.get(path.basename(from)));
    return result;
  };
  fs.unlinkSync = function unlinkSync(p) {
    const result = real.unlinkSync.call(fs, p);
    if (inRoot(p)) entries.delete(path.basename(p));
    return result;
  };
  fs.renameSync = function renameSync(from, to) {
    const result = real.renameSync.call(fs, from, to);
    if (inRoot(from) && inRoot(to)) {
      entries.set(path.basename(to), entries.get(path.basename(from)));
      entries.delete(path.basename(from));
    }
    return result;
  };

  function powerCut() {
    paused = true; // the rewrite below must not hit an armed fault
    for (const name of fs.readdirSync(root)) fs.rmSync(path.join(root, name), { recursive: true, force: true });
    for (const [name, id] of durableEntries) {
      fs.writeFileSync(path.join(root, name), durableData.get(id) ?? Buffer.alloc(0));
    }
    process.kill(process.pid, 'SIGKILL');
  }

  // Faults: one armed at a time.
  const KINDS = ['read', 'write', 'sync', 'truncate'];
  let armed = null; // {kind, nth, code, persistent}
  let sinceArmed = 0;
  const calls = Object.fromEntries(KINDS.map((k) => [k, 0]));
  let fired = [];
  let paused = false;
  const SYSCALL = { read: 'read', write: 'write', sync: 'fsync', truncate: 'ftruncate' };
  const MESSAGE = { EIO: 'i/o error', ENOSPC: 'no space left on device' };
  const ERRNO = { EIO: -5, ENOSPC: -28 };
  function maybeFail(kind, fd) {
    if (paused || !fds.has(fd)) return;
    calls[kind] += 1;
    if (!armed || armed.kind !== kind) return;
    sinceArmed += 1;
    if (sinceArmed === armed.nth || (armed.persistent && sinceArmed > armed.nth)) {
      fired.push({ kind, code: armed.code });
      const error = new Error(`${armed.code}: ${MESSAGE[armed.code] ?? 'injected fault'}, ${SYSCALL[kind]}`);
      Object.assign(error, { code: armed.code, errno: ERRNO[armed.code], syscall: SYSCALL[kind] });
      throw error;
    }
  }
  globalThis.leasefenceFaultFs = {
    /** Fails the `nth` call of `kind` from now ('read' | 'write' | 'sync' | 'truncate') with `code` ('EIO' | 'ENOSPC'). */
    arm({ kind, nth, code, persistent = false }) {
      if (!KINDS.includes(kind)) throw new Error(`unknown fault kind ${kind}`);
      armed = { kind, nth, code, persistent };
      sinceArmed = 0;
    },
    clear() {
      armed = null;
    },
    /** The failures thrown since the last call. */
    takeFired() {
      const out = fired;
      fired = [];
      return out;
    },
    calls: () => ({ ...calls }),
    /** Runs `fn` with faults and counting off (a check that reads the same files). */
    paused(fn) {
      paused = true;
      try {
        return fn();
      } finally {
        paused = false;
      }
    },
  };
  fs.readSync = function readSync(fd, ...rest) {
    maybeFail('read', fd);
    return real.readSync.call(fs, fd, ...rest);
  };
  fs.writeSync = function writeSync(fd, ...rest) {
    maybeFail('write', fd);
    return real.writeSync.call(fs, fd, ...rest);
  };
  fs.ftruncateSync = function ftruncateSync(fd, ...rest) {
    maybeFail('truncate', fd);
    return real.ftruncateSync.call(fs, fd, ...rest);
  };

  const sync = (realSync) =>
    function (fd) {
      syncs += 1;
      if (syncs === cutAt) powerCut();
      maybeFail('sync', fd);
      const result = realSync.call(fs, fd);
      const id = fds.get(fd);
      if (id === DIR) {
        durableEntries = new Map(entries);
      } else if (id !== undefined) {
        // Through /proc: the descriptor itself may be write-only.
        durableData.set(id, fs.readFileSync(`/proc/self/fd/${fd}`));
      }
      return result;
    };
  fs.fsyncSync = sync(real.fsyncSync);
  fs.fdatasyncSync = sync(real.fdatasyncSync);
  process.on('exit', () => {
    if (process.env.LEASEFENCE_PLFS_REPORT) fs.writeSync(2, `plfs-syncs ${syncs}\n`);
  });
}
