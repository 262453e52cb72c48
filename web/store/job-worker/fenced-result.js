// What a handler returns: its result as the store records it, and fenced results (statements on
// the application's own tables committed with the completion).
import { invalidArgument } from './errors.js';

/** A result for the store: a string as is, undefined or null as no result, anything else as JSON. */
function resultText(value) {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  const text = JSON.stringify(value);
  if (typeof text !== 'string') throw new TypeError(`the handler returned ${typeof value}, which has no JSON form`);
  return text;
}

/**
 * What a handler returns to have its own writes commit in the same transaction as the job's
 * completion, or not at all (contract section 8): the runtime calls `fenced(..., {complete: true,
 * result})` instead of `complete`. A stale worker's statements are refused with its completion; a
 * statement that fails (a broken constraint, a write to the library's tables) fails the job, with
 * nothing of it applied. Make one with `fencedResult`.
 */
class FencedResult {
  constructor(statements, result) {
    this.statements = statements;
    this.result = result;
    Object.freeze(this);
  }
}

/**
 * Statements on your own tables (`[{sql, params}]`, bound parameters) to commit with the
 * completion, and the job's result (as a handler's return value: a string, JSON, or none).
 *
 *   await worker.run(async (job, { payload }) => {
 *     const total = await sum(payload);
 *     return fencedResult([{ sql: 'INSERT INTO totals(job, total) VALUES (?, ?)', params: [job, total] }], String(total));
 *   });
 */
function fencedResult(statements, result = null) {
  if (!Array.isArray(statements)) {
    throw invalidArgument('fencedResult(): `statements` must be a list of {sql, params}');
  }
  statements.forEach((statement, i) => {
    if (statement === null || typeof statement !== 'object' || typeof statement.sql !== 'string') {
      throw invalidArgument(`fencedResult(): statement ${i} must be {sql: string, params?: [...]}`);
    }
    if (statement.params !== undefined && !Array.isArray(statement.params)) {
      throw invalidArgument(`fencedResult(): the params of statement ${i} must be a list`);
    }
  });
  return new FencedResult(statements.map((st) => ({ ...st })), result);
}

/**
 * Whether a fenced completion failed because of the handler's statements (the store names the
 * statement that broke a constraint in `statement`, or refused one as `invalid_argument`): the
 * handler's failure, retried with backoff like a throw. Any other error is the store's.
 */
const isStatementError = (error) =>
  error !== null && typeof error === 'object' && (typeof error.statement === 'number' || error.code === 'invalid_argument');

export { FencedResult, fencedResult, resultText, isStatementError };
