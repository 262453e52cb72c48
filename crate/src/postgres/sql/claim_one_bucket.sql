-- $1 now, $2 owner, $3 until, $4 the queues served (NULL: every queue). claim_next in the common
-- case, where one (queue, priority) pair holds every open job of the queues served: then the
-- contract's order (priority, until, insertion) is that pair's order along leasefence_queued, and
-- the claim is the plain queue statement, the first claimable job no other transaction is
-- writing, locked and claimed. Index probes prove there is one pair: over every queue, the first
-- and the last open job's pair (one probe from each end of the index); over named queues, each
-- one's lowest and highest open priority, and one queue of them with open jobs. (Each branch is cut off by a one-time filter
-- on $4, so the other costs nothing.) When there are several pairs, or no free claimable job, it
-- answers no row and the general statement (candidates.sql + claim_next_many.sql) decides
-- (docs/decisions/postgres-jobs-columns.md). Answers the columns claim_next_many.sql answers.
WITH every_queue AS (
    SELECT f.queue, f.priority
    FROM (SELECT queue, priority FROM jobs WHERE done = 0
          ORDER BY queue, priority LIMIT 1) f,
         (SELECT queue, priority FROM jobs WHERE done = 0
          ORDER BY queue DESC, priority DESC LIMIT 1) l
    WHERE $4::text[] IS NULL AND (f.queue, f.priority) = (l.queue, l.priority)),
ends AS (
    SELECT q.queue, low.priority AS low, high.priority AS high
    FROM (SELECT DISTINCT unnest($4::text[])) AS q(queue)
    CROSS JOIN LATERAL (SELECT j.priority FROM jobs j WHERE j.done = 0 AND j.queue = q.queue
                        ORDER BY j.priority LIMIT 1) low
    CROSS JOIN LATERAL (SELECT j.priority FROM jobs j WHERE j.done = 0 AND j.queue = q.queue
                        ORDER BY j.priority DESC LIMIT 1) high),
named AS (
    SELECT min(queue) AS queue, min(low) AS priority FROM ends
    HAVING count(*) = 1 AND min(low) = max(high)),
only_bucket AS (SELECT * FROM every_queue UNION ALL SELECT * FROM named)
UPDATE jobs SET owner = $2, until = $3, fence = fence + 1
WHERE id = (SELECT j.id FROM only_bucket b CROSS JOIN LATERAL (
                SELECT c.id FROM jobs c
                WHERE c.done = 0 AND c.queue = b.queue AND c.priority = b.priority
                  AND c.until <= $1 AND c.fence < 9223372036854775807
                ORDER BY c.until, c.seq LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) j)
  AND done = 0 AND until <= $1 AND fence < 9223372036854775807
RETURNING id, fence, (SELECT payload FROM leasefence_payloads p WHERE p.job = jobs.id), seq, base
