// The library's browser store is the contract's store and nothing more (issue 21): its LeaseStore
// (web/store/lease-store.js), its worker and its wasm (web/pkg, built from crate/) offer none of
// the playground's calls, and the wasm carries none of the playground's SQL. The playground's own
// store (web/app/playground-store.js, on the playground crate's wasm) extends it with them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser, inStorePage } from './harness.mjs';

const env = serverAndBrowser();

// What only the playground asks of a store: its JavaScript names, and the worker requests its
// page store sends for them.
const PLAYGROUND_CALLS = ['setTracing', 'callTraced', 'leaseOnly', 'eraseEverything', 'appGet', 'appSet'];
const PLAYGROUND_REQUESTS = ['tracing', 'callTraced', 'leaseOnly', 'erase', 'appGet', 'appSet'];

test("the library's browser store, worker and wasm offer none of the playground's calls", async () => {
  const out = await inStorePage(env.browser, env.server, async () => {
    const calls = ['setTracing', 'callTraced', 'leaseOnly', 'eraseEverything', 'appGet', 'appSet'];
    const requests = ['tracing', 'callTraced', 'leaseOnly', 'erase', 'appGet', 'appSet'];
    const { LeaseStore } = await import('/store/lease-store.js');
    const wasm = await import('/pkg/leasefence.js');
    const got = {};
    got.storeMethods = calls.filter((name) => name in LeaseStore.prototype);
    got.wasmExports = calls.filter((name) => name in wasm);
    got.wasmStoreMethods = calls.filter((name) => name in wasm.WasmStore.prototype);
    // The playground's SQL (its lease-only table, its saved data) is not compiled into the library.
    const bytes = new Uint8Array(await (await fetch('/pkg/leasefence_bg.wasm')).arrayBuffer());
    const text = new TextDecoder('latin1').decode(bytes);
    got.wasmBytes = bytes.length;
    got.wasmSql = ['lease_only_jobs', 'leasefence_app_data'].filter((name) => text.includes(name));
    got.hasContractSql = text.includes('leasefence_claimable');
    // The store works, and its worker refuses the playground's requests by name.
    const store = await LeaseStore.open('surface.db');
    try {
      got.enqueued = await store.enqueue('j');
      const fence = await store.claim('j', 'A', 0, 30);
      got.completed = await store.complete('j', 'A', fence, 1, 'done');
      got.result = (await store.state('j')).result;
      got.refused = {};
      for (const name of requests) {
        try {
          await store.request(name, []);
          got.refused[name] = 'answered';
        } catch (error) {
          got.refused[name] = { code: error.code, message: error.message };
        }
      }
    } finally {
      await store.close();
    }
    return got;
  });
  assert.deepEqual(out.storeMethods, [], 'LeaseStore.prototype');
  assert.deepEqual(out.wasmExports, [], 'the exports of web/pkg/leasefence.js');
  assert.deepEqual(out.wasmStoreMethods, [], 'WasmStore.prototype');
  assert.deepEqual(out.wasmSql, [], `the playground's tables in web/pkg/leasefence_bg.wasm (${out.wasmBytes} bytes)`);
  assert.equal(out.hasContractSql, true, "the search finds the library's own SQL in the same bytes");
  assert.deepEqual([out.enqueued, out.completed, out.result], [true, true, 'done']);
  assert.deepEqual(out.refused, Object.fromEntries(PLAYGROUND_REQUESTS.map((name) => [name,
    { code: 'invalid_argument', message: `unknown method ${name}` }])));
});

test("the playground's store is the library's LeaseStore with the playground's calls, on its own wasm", async () => {
  const out = await inStorePage(env.browser, env.server, async () => {
    const calls = ['setTracing', 'callTraced', 'leaseOnly', 'eraseEverything', 'appGet', 'appSet'];
    const { LeaseStore } = await import('/store/lease-store.js');
    const { PlaygroundStore } = await import('/app/playground-store.js');
    const bytes = new Uint8Array(await (await fetch('/app/pkg/leasefence_playground_bg.wasm')).arrayBuffer());
    const text = new TextDecoder('latin1').decode(bytes);
    const got = {
      extends: PlaygroundStore.prototype instanceof LeaseStore,
      methods: calls.filter((name) => typeof PlaygroundStore.prototype[name] === 'function'),
      wasmSql: ['lease_only_jobs', 'leasefence_app_data'].filter((name) => text.includes(name)),
    };
    const store = await PlaygroundStore.open('surface-playground.db');
    try {
      got.instance = store instanceof LeaseStore;
      await store.setTracing(true);
      await store.enqueue('j');
      const traced = await store.callTraced('claim', ['j', 'A', 0, 30]);
      got.traced = { value: traced.value, ran: traced.statements.some((s) => /^UPDATE jobs/m.test(s.sql)) };
      got.leaseOnly = (await store.leaseOnly('enqueue', ['j'])).value;
      // The lease-only store refuses what the real one refuses, with the real one's checks.
      const refusal = (f) => f().then(() => 'answered', (error) => `${error.code}: ${error.message}`);
      got.sameChecks = [await refusal(() => store.claim('j', 'B', 0, -1)),
        await refusal(() => store.leaseOnly('claim', ['j', 'B', 0, -1]))];
      await store.appSet('k', 'v');
      got.app = await store.appGet('k');
      await store.eraseEverything();
      got.afterErase = [await store.state('j'), await store.appGet('k'), (await store.leaseOnly('state', ['j'])).row];
    } finally {
      await store.close();
    }
    return got;
  });
  assert.match(out.sameChecks[0], /^invalid_argument: .*ttl/);
  assert.equal(out.sameChecks[1], out.sameChecks[0], 'leaseOnly refuses a bad ttl as claim does');
  delete out.sameChecks;
  assert.deepEqual(out, {
    extends: true,
    methods: PLAYGROUND_CALLS,
    wasmSql: ['lease_only_jobs', 'leasefence_app_data'],
    instance: true,
    traced: { value: 1, ran: true },
    leaseOnly: true,
    app: 'v',
    afterErase: [null, null, null],
  });
});
