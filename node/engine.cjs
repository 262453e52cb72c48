'use strict';
// Which engine runs this process's SQLite stores (docs/contract.md section 13), chosen once per
// process so that one file is never opened through two SQLite copies in one process:
//
//   native  the Node-API addon built from the crate (prebuilds/<platform>/leasefence.node in the
//           package): the library's own SQLite, WAL with synchronous = FULL, POSIX locks, the
//           write gate; it shares its file with native processes and the Python seed.
//   wasm    the crate compiled to wasm (wasm/leasefence.js): its own file format (rollback journal,
//           dot-file locks), for platforms without an addon.
//
// Unset, the package runs the native engine wherever its addon loads, and falls back to the wasm
// engine elsewhere (a platform without a prebuilt addon), saying so once with a process warning
// (code LEASEFENCE_WASM_FALLBACK). LEASEFENCE_ENGINE=native or =wasm asks for one: native fails
// loudly where the addon cannot load, wasm is the fallback on purpose (tests run both). Both engines answer the same calls:
// the stores' `call(op, args)`, `callGroup(calls)`, the fenced callback's three calls, `close()`,
// and the guard's `write`, so node/ holds no engine-specific code beyond this file.
const path = require('node:path');
const { toLeaseError } = require('../web/store/core.js');
const { invalidArgument } = require('./errors.cjs');
const { platformName } = require('./platform.cjs');

const ENGINES = ['native', 'wasm'];

/** The addon's exports, or the reason it cannot load. */
function loadAddon() {
  const file = path.join(__dirname, 'prebuilds', platformName(), 'leasefence.node');
  const module = { exports: {} };
  try {
    // dlopen by path: no resolution through the registry, nothing for a bundler to follow.
    process.dlopen(module, file);
    return { addon: module.exports };
  } catch (error) {
    return { reason: `${file}: ${error.message}` };
  }
}

/** An engine's answer `{value, reason}` as it is, or its `{error}` thrown as a LeaseError. */
function unwrap(answer) {
  if (answer !== null && typeof answer === 'object' && answer.error !== undefined) {
    throw toLeaseError(answer.error);
  }
  return answer;
}

/**
 * A native store with the wasm store's surface: answers, or throws the LeaseError its `{error}`
 * says. `callGroup` answers a Promise (the group runs on libuv's thread pool).
 */
class NativeStoreHandle {
  #store;
  constructor(store) {
    this.#store = store;
  }
  call(op, args) {
    return unwrap(this.#store.call(op, args));
  }
  callGroup(calls) {
    return this.#store.callGroup(calls);
  }
  fencedWith(job, owner, fence, now, options, work) {
    return unwrap(this.#store.fencedWith(job, owner, fence, now, options, work));
  }
  fencedRun(sql, params) {
    return unwrap(this.#store.fencedRun(sql, params)).changes;
  }
  fencedAll(sql, params) {
    return unwrap(this.#store.fencedAll(sql, params)).rows;
  }
  close() {
    this.#store.close();
  }
  free() {}
}

class NativeGuardHandle {
  #guard;
  constructor(guard) {
    this.#guard = guard;
  }
  write(key, fence, statements) {
    return unwrap(this.#guard.write(key, fence, statements));
  }
  /** `[key, fence, statements]` each: a Promise of one answer (or `{error}`) each, one transaction, on libuv's thread pool. */
  writeGroup(writes) {
    return this.#guard.writeGroup(writes);
  }
  close() {
    this.#guard.close();
  }
  free() {}
}

/**
 * The wasm engine's guard with the native one's surface. Its writes are synchronous (the wasm's
 * file I/O is), so a group is its writes one after the other, each its own transaction.
 */
class WasmGuardHandle {
  #guard;
  constructor(guard) {
    this.#guard = guard;
  }
  write(key, fence, statements) {
    return this.#guard.write(key, fence, statements);
  }
  writeGroup(writes) {
    return writes.map(([key, fence, statements]) => {
      try {
        return this.#guard.write(key, fence, statements);
      } catch (error) {
        return { error };
      }
    });
  }
  close() {
    this.#guard.close();
  }
  free() {
    this.#guard.free();
  }
}

function nativeEngine(addon) {
  return {
    name: 'native',
    openStore(file, busyTimeoutMs, exclusive, limits = {}, writeGate = true) {
      if (exclusive) {
        throw invalidArgument(
          'LeaseStore.open(): `exclusive` is the wasm engine\'s mode (one process owning a file in WAL mode); the native engine shares WAL files between processes without it: leave it out',
        );
      }
      return new NativeStoreHandle(unwrapOpened(addon.NativeStore.open(file, busyTimeoutMs, limits.payload, limits.result, limits.error, writeGate)));
    },
    openGuard(file, busyTimeoutMs) {
      return new NativeGuardHandle(unwrapOpened(addon.NativeGuard.open(file, busyTimeoutMs)));
    },
    checkArguments(op, args) {
      unwrap(addon.checkArguments(op, args));
    },
    rule(name, args) {
      return addon[name](...args);
    },
    // POSIX locks die with their connection: a terminated thread leaves no lock file behind.
    breakDeadThreadLock() {
      return false;
    },
  };
}

/** `open` answers the handle, or `{error}`: a plain object, never a class instance. */
function unwrapOpened(opened) {
  if (opened !== null && typeof opened === 'object' && Object.getPrototypeOf(opened) === Object.prototype) {
    unwrap(opened);
  }
  return opened;
}

function wasmEngine() {
  const wasm = require('./wasm/leasefence.js');
  const { leaseErrors } = require('../web/store/core.js');
  return {
    name: 'wasm',
    // No `writeGate` here: the wasm engine's writers already queue on its dot-file lock.
    openStore: (file, busyTimeoutMs, exclusive, limits = {}) => leaseErrors(() => wasm.WasmStore.openFile(file, busyTimeoutMs, exclusive, limits.payload, limits.result, limits.error)),
    openGuard: (file, busyTimeoutMs) => new WasmGuardHandle(leaseErrors(() => wasm.WasmGuard.openFile(file, busyTimeoutMs))),
    checkArguments: (op, args) => leaseErrors(() => wasm.checkArguments(op, args)),
    rule: (name, args) => wasm[name](...args),
    breakDeadThreadLock: (file, threadId) => leaseErrors(() => wasm.breakDeadThreadLock(file, threadId)),
  };
}

function chooseEngine() {
  const asked = process.env.LEASEFENCE_ENGINE;
  if (asked !== undefined && asked !== '' && !ENGINES.includes(asked)) {
    throw invalidArgument(`LEASEFENCE_ENGINE=${asked}: use one of ${ENGINES.join(', ')} (or leave it unset)`);
  }
  if (asked === 'wasm') return wasmEngine();
  const { addon, reason } = loadAddon();
  if (addon) return nativeEngine(addon);
  if (asked === 'native') {
    throw invalidArgument(`LEASEFENCE_ENGINE=native: the native addon does not load here (${reason}); unset it to run the wasm engine`);
  }
  process.emitWarning(
    `leasefence: the native engine does not load here (${reason}), so this process runs the wasm engine: its files use a rollback journal and dot-file locks, and a WAL file made by native leasefence is refused. Set LEASEFENCE_ENGINE=wasm to choose it without this warning.`,
    { code: 'LEASEFENCE_WASM_FALLBACK' },
  );
  return wasmEngine();
}

let chosen;
/** The process's engine, chosen on first use. */
function engine() {
  chosen ??= chooseEngine();
  return chosen;
}

module.exports = { engine };
