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
    for (const name of fs.readdirSync(root)) fs.rmSync(path.join(root, name), { recursive: true, force: true });
    for (const [name, id] of durableEntries) {
      fs.writeFileSync(path.join(root, name), durableData.get(id) ?? Buffer.alloc(0));
    }
    process.kill(process.pid, 'SIGKILL');
  }

  const sync = (realSync) =>
    function (fd) {
      syncs += 1;
      if (syncs === cutAt) powerCut();
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
