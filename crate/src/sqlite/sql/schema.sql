-- The table, exactly as docs/contract.md section 1 states it; then the index that keeps
-- claim_next logarithmic: only claimable-in-principle rows (not done) are indexed, in `until`
-- order; SQLite appends the rowid, which gives the insertion-order tie-break for free.
CREATE TABLE IF NOT EXISTS jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0,
    fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS leasefence_claimable ON jobs(until) WHERE done = 0;
