-- $1 now, $2 owner, $3 until, $4 queues. claim_next of named queues in the common case, where
-- one (queue, priority) pair holds every open job of those queues: then, as in
-- claim_one_bucket.sql, the contract's order is that pair's order along leasefence_queued and the
-- claim is the plain queue statement. Two index probes per queue named prove it (its lowest and
-- its highest open priority): one queue has open jobs, and one priority. Otherwise, or when there
-- is no free claimable job, it answers no row and the general statement decides. Answers the
-- columns claim_next_many.sql answers.
WITH ends AS (
    SELECT q.queue,
           (SELECT j.priority FROM jobs j WHERE j.done = 0 AND j.queue = q.queue
            ORDER BY j.priority LIMIT 1) AS low,
           (SELECT j.priority FROM jobs j WHERE j.done = 0 AND j.queue = q.queue
            ORDER BY j.priority DESC LIMIT 1) AS high
    FROM (SELECT DISTINCT unnest($4::text[])) AS q(queue)),
only_bucket AS (
    SELECT min(queue) AS queue, min(low) AS priority FROM ends WHERE low IS NOT NULL
    HAVING count(*) = 1 AND min(low) = max(high))
UPDATE jobs SET owner = $2, until = $3, fence = fence + 1
WHERE id = (SELECT j.id FROM only_bucket b CROSS JOIN LATERAL (
                SELECT c.id FROM jobs c
                WHERE c.done = 0 AND c.queue = b.queue AND c.priority = b.priority
                  AND c.until <= $1 AND c.fence < 9223372036854775807
                ORDER BY c.until, c.seq LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) j)
  AND done = 0 AND until <= $1 AND fence < 9223372036854775807
RETURNING id, fence, (SELECT payload FROM leasefence_payloads p WHERE p.job = jobs.id), seq, base
