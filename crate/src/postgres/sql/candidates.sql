-- The claim order's candidates (docs/contract.md section 11), the first part of both
-- claim_next_many.sql and peek_next.sql (session.rs puts them together). $1 now, $2 queues
-- (NULL: every queue), $3 how many candidates of each (queue, priority) to consider.
--
-- By index probes of leasefence_queued only: the queues (the named ones, or every queue with an
-- open job, found by skipping from one name to the next), for each its priorities with an open
-- job from the highest down, and for each (queue, priority) its first claimable jobs by until,
-- then insertion. A (queue, priority) pair costs one probe, so the cost is logarithmic in the
-- jobs times the pairs (docs/decisions/queues-priorities.md).
WITH RECURSIVE every_queue(q) AS (
    SELECT (SELECT queue FROM leasefence_order WHERE open AND $2::text[] IS NULL
            ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT queue FROM leasefence_order WHERE open AND queue > e.q ORDER BY queue LIMIT 1)
    FROM every_queue e WHERE e.q IS NOT NULL),
named(q) AS (
    SELECT q FROM every_queue WHERE q IS NOT NULL
    UNION SELECT unnest($2::text[])),
buckets(q, p) AS (
    SELECT n.q, (SELECT priority FROM leasefence_order WHERE open AND queue = n.q
                 ORDER BY priority DESC LIMIT 1) FROM named n
    UNION ALL
    SELECT b.q, (SELECT priority FROM leasefence_order WHERE open AND queue = b.q
                 AND priority < b.p ORDER BY priority DESC LIMIT 1)
    FROM buckets b WHERE b.p IS NOT NULL),
candidates AS (
    SELECT c.id, c.priority, c.until, c.seq FROM buckets b CROSS JOIN LATERAL (
        SELECT o.id, o.priority, o.until, o.seq FROM leasefence_order o
        WHERE o.open AND o.queue = b.q AND o.priority = b.p AND o.until <= $1
        ORDER BY o.until, o.seq LIMIT $3) c
    WHERE b.p IS NOT NULL)
