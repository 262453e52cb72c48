'use strict';
// Every error this package throws is a LeaseError (web/store/core.js): these two for the checks
// made in node/, and `leaseErrors(() => wasm...)` for what the wasm throws (the store's operations
// are wrapped by the core).
const { LeaseError } = require('../web/store/core.js');

function invalidArgument(message) {
  return new LeaseError(message, { code: 'invalid_argument', retryable: false });
}

function storageError(message) {
  return new LeaseError(message, { code: 'storage', retryable: false });
}

module.exports = { invalidArgument, storageError };
