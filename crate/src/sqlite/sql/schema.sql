-- The table, exactly as docs/contract.md section 1 states it; then the index that keeps
-- claim_next logarithmic: only claimable-in-principle rows (not done) are indexed, in `until`
-- order; SQLite appends the rowid, which gives the insertion-order tie-break for free.
CREATE TABLE IF NOT EXISTS jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0,
    fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS leasefence_claimable ON jobs(until) WHERE done = 0;

-- What `jobs` cannot hold (docs/contract.md section 7), keyed by job id: the payload given at
-- enqueue, every failure in order (rowid), and the mark of a dead job (done = 1 in `jobs`, so a
-- program that knows only `jobs` never claims it).
CREATE TABLE IF NOT EXISTS leasefence_payloads(job TEXT PRIMARY KEY, payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leasefence_failures(job TEXT NOT NULL, fence INTEGER NOT NULL,
    at REAL NOT NULL, error TEXT);
CREATE INDEX IF NOT EXISTS leasefence_failures_of_job ON leasefence_failures(job);
CREATE TABLE IF NOT EXISTS leasefence_dead(job TEXT PRIMARY KEY, fence INTEGER NOT NULL,
    at REAL NOT NULL);
