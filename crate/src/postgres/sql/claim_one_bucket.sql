-- $1 now, $2 owner, $3 until. claim_next of every queue in the common case, where one (queue,
-- priority) pair holds every open job: then the contract's order (priority, until, insertion)
-- is that pair's order along leasefence_queued, and the claim is the plain queue statement,
-- the first claimable job no other transaction is writing, locked and claimed. Two index probes
-- prove there is one pair: the first open job's pair, and no open job after it. When there are
-- several pairs, or no free claimable job, it answers no row and the general statement
-- (candidates.sql + claim_next_many.sql) decides (docs/decisions/postgres-jobs-columns.md).
-- claim_one_bucket_of.sql is the same for named queues.
-- Answers the columns claim_next_many.sql answers.
WITH only_bucket AS (
    SELECT f.queue, f.priority FROM (
        SELECT queue, priority FROM jobs WHERE done = 0 ORDER BY queue, priority LIMIT 1) f
    WHERE NOT EXISTS (
        SELECT 1 FROM jobs x WHERE x.done = 0 AND (x.queue, x.priority) > (f.queue, f.priority)))
UPDATE jobs SET owner = $2, until = $3, fence = fence + 1
WHERE id = (SELECT j.id FROM only_bucket b CROSS JOIN LATERAL (
                SELECT c.id FROM jobs c
                WHERE c.done = 0 AND c.queue = b.queue AND c.priority = b.priority
                  AND c.until <= $1 AND c.fence < 9223372036854775807
                ORDER BY c.until, c.seq LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) j)
  AND done = 0 AND until <= $1 AND fence < 9223372036854775807
RETURNING id, fence, (SELECT payload FROM leasefence_payloads p WHERE p.job = jobs.id), seq, base
