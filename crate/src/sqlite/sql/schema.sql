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

-- Queues and priorities (docs/contract.md section 11). `jobs` may hold no other column, so each
-- job's queue and priority live here, beside copies of its `until` and claimability (`open`: not
-- done and the fence not exhausted), so that one index yields the claim order of a queue:
-- priority, then until, then seq (insertion order). The triggers keep the copies right whoever
-- writes `jobs` (leasefence, the seed's module, any program following the contract); a job
-- inserted by a program that knows only `jobs` lands in queue 'default' with priority 0.
CREATE TABLE IF NOT EXISTS leasefence_order(seq INTEGER PRIMARY KEY, job TEXT NOT NULL UNIQUE,
    queue TEXT NOT NULL DEFAULT 'default', priority INTEGER NOT NULL DEFAULT 0,
    until REAL NOT NULL, open INTEGER NOT NULL, enqueued REAL, finished REAL,
    base INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS leasefence_next
    ON leasefence_order(queue, priority, until) WHERE open = 1;
-- `enqueued`: when the job was added, by the store's clock (Unix seconds), whoever added it: the
-- oldest waiting job's age (oldest_waiting) counts from it. julianday works in every SQLite.
-- `base`: the fence the job started at (the fence floor when it was inserted, below): its
-- attempts count from there, so a job enqueued after a prune is on its first attempt at its
-- first claim, whatever the floor.
-- `finished`: when the job finished (done), for prune (section 13). leasefence writes the `now`
-- of the complete / fail that finished it right after, in the same transaction; a job finished
-- by a program that knows only `jobs` gets the store's clock here. Not done: NULL.
CREATE TRIGGER IF NOT EXISTS leasefence_order_insert AFTER INSERT ON jobs WHEN NEW.id IS NOT NULL
BEGIN
    INSERT OR REPLACE INTO leasefence_order(job, until, open, enqueued, finished, base)
    VALUES (NEW.id, NEW.until, NEW.done = 0 AND NEW.fence < 9223372036854775807,
            (julianday('now') - 2440587.5) * 86400.0,
            CASE WHEN NEW.done = 0 THEN NULL ELSE (julianday('now') - 2440587.5) * 86400.0 END,
            max(NEW.fence, coalesce((SELECT floor FROM leasefence_floor WHERE id = 1), 0)));
END;
-- The copies follow `jobs`: `until`, claimability and `finished` on every claim, renewal and
-- completion; the job's id only when it changes (a rename, the second trigger). The first never
-- assigns `job`, since SQLite rewrites an index entry whose column an UPDATE assigns, even to
-- the same value: one index page fewer written per commit. Either order of the two is right for
-- an UPDATE that changes the id and the rest: before the rename the first matches no row, after
-- it the first writes the same copies again.
CREATE TRIGGER IF NOT EXISTS leasefence_order_update AFTER UPDATE OF until, done, fence ON jobs
BEGIN
    UPDATE leasefence_order
    SET until = NEW.until, open = (NEW.done = 0 AND NEW.fence < 9223372036854775807),
        finished = CASE WHEN NEW.done = 0 THEN NULL
                        WHEN OLD.done = 0 THEN (julianday('now') - 2440587.5) * 86400.0
                        ELSE finished END
    WHERE job = NEW.id;
END;
CREATE TRIGGER IF NOT EXISTS leasefence_order_rename AFTER UPDATE OF id ON jobs
WHEN OLD.id IS NOT NEW.id
BEGIN
    UPDATE leasefence_order
    SET job = NEW.id, until = NEW.until,
        open = (NEW.done = 0 AND NEW.fence < 9223372036854775807),
        finished = CASE WHEN NEW.done = 0 THEN NULL
                        WHEN OLD.done = 0 THEN (julianday('now') - 2440587.5) * 86400.0
                        ELSE finished END
    WHERE job = OLD.id;
END;
CREATE INDEX IF NOT EXISTS leasefence_finished ON leasefence_order(finished)
    WHERE finished IS NOT NULL;

-- The fence floor (section 13): the highest fence of any job prune ever deleted. A job inserted
-- by anyone starts at the floor, so an id enqueued again after its row was pruned is never
-- handed a fence it had before. One row, or none (floor 0: a store that never pruned behaves as
-- section 2 says, and this trigger's condition is false).
CREATE TABLE IF NOT EXISTS leasefence_floor(id INTEGER PRIMARY KEY CHECK (id = 1),
    floor INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS leasefence_fence_floor AFTER INSERT ON jobs
WHEN NEW.fence < (SELECT floor FROM leasefence_floor WHERE id = 1)
BEGIN
    UPDATE jobs SET fence = (SELECT floor FROM leasefence_floor WHERE id = 1)
    WHERE rowid = NEW.rowid;
END;
CREATE TRIGGER IF NOT EXISTS leasefence_order_delete AFTER DELETE ON jobs BEGIN
    DELETE FROM leasefence_order WHERE job = OLD.id;
END;
-- A file from before section 11 (or one whose triggers someone dropped): every job gets its
-- row, in insertion order, and the copies are brought back in line with `jobs`. Runs only when
-- something above was missing (schema.rs), so an up-to-date file is not read through.
DELETE FROM leasefence_order WHERE job NOT IN (SELECT id FROM jobs);
UPDATE leasefence_order SET until = j.until, open = (j.done = 0 AND j.fence < 9223372036854775807)
FROM jobs j WHERE j.id = leasefence_order.job
  AND (leasefence_order.until IS NOT j.until
       OR leasefence_order.open IS NOT (j.done = 0 AND j.fence < 9223372036854775807));
INSERT OR IGNORE INTO leasefence_order(job, until, open, finished)
SELECT id, until, done = 0 AND fence < 9223372036854775807,
       CASE WHEN done = 0 THEN NULL ELSE (julianday('now') - 2440587.5) * 86400.0 END
FROM jobs WHERE id IS NOT NULL ORDER BY rowid;

-- Recurring jobs (docs/contract.md section 11): one row per schedule, and `last`, the latest slot
-- enqueued (Unix seconds), so enqueue_due computes from there and does not probe `jobs` for
-- slots it handled already. The slots' jobs are ordinary jobs, enqueued if missing.
CREATE TABLE IF NOT EXISTS leasefence_schedules(name TEXT PRIMARY KEY, cron TEXT NOT NULL,
    tz TEXT, queue TEXT NOT NULL, priority INTEGER NOT NULL, payload TEXT,
    missed TEXT NOT NULL, last INTEGER);

-- The worker registry: one row per worker owner, written by its beats (with its renewals, in
-- their transaction): where it runs, when it was last seen and until when it counts as alive,
-- when it said it stopped, and its counters as it last reported them. Small: rows of workers
-- gone for an hour are deleted by the next beat.
CREATE TABLE IF NOT EXISTS leasefence_workers(owner TEXT PRIMARY KEY, host TEXT NOT NULL,
    pid INTEGER NOT NULL, started REAL NOT NULL, last_seen REAL NOT NULL, until REAL NOT NULL,
    stopped REAL, claimed INTEGER NOT NULL, completed INTEGER NOT NULL, failed INTEGER NOT NULL,
    dead INTEGER NOT NULL, leases_lost INTEGER NOT NULL, stale_writes_refused INTEGER NOT NULL,
    renewals INTEGER NOT NULL);
