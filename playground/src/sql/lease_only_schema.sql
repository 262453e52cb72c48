-- The counterfactual: the same jobs, in a store without fencing. Leases, but no fence column:
-- a completion is checked by job id alone, as goqite's Delete and graphile-worker's completeJobs
-- do (pg-boss's complete checks the state only). A failure keeps its last error, and a job that
-- failed for good is marked dead.
CREATE TABLE IF NOT EXISTS lease_only_jobs(id TEXT PRIMARY KEY, owner TEXT,
    until REAL NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0,
    error TEXT, dead INTEGER NOT NULL DEFAULT 0)
