-- $1 queues (NULL: every queue). The earliest `until` of an open job of those queues, due or
-- not; NULL when there is none: what an idle worker sleeps until (docs/contract.md section 11,
-- waking). Every queue: one probe of leasefence_next (until, seq WHERE done = 0). Named queues:
-- their priorities with an open job found as claim_next_many.sql finds them, then one probe of
-- leasefence_queued per (queue, priority), the smallest kept. Index probes only, no scan.
WITH RECURSIVE buckets(q, p) AS (
    SELECT n.q, (SELECT priority FROM jobs WHERE done = 0 AND queue = n.q
                 ORDER BY priority DESC LIMIT 1) FROM unnest($1::text[]) AS n(q)
    UNION ALL
    SELECT b.q, (SELECT priority FROM jobs WHERE done = 0 AND queue = b.q
                 AND priority < b.p ORDER BY priority DESC LIMIT 1)
    FROM buckets b WHERE b.p IS NOT NULL)
SELECT CASE WHEN $1::text[] IS NULL
    THEN (SELECT until FROM jobs WHERE done = 0 AND fence < 9223372036854775807
          ORDER BY until, seq LIMIT 1)
    ELSE (SELECT min((SELECT o.until FROM jobs o
                      WHERE o.done = 0 AND o.fence < 9223372036854775807
                        AND o.queue = b.q AND o.priority = b.p
                      ORDER BY o.until LIMIT 1))
          FROM buckets b WHERE b.p IS NOT NULL)
    END
