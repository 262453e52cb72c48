-- The claim order's candidates (docs/contract.md section 11), the first part of both
-- claim_next_many.sql and peek_next.sql (session.rs puts them together). $1 now, $2 queues
-- (NULL: every queue), $3 how many candidates of each (queue, priority) to consider.
--
-- By index probes of leasefence_queued only: the (queue, priority) pairs with an open job, found
-- by skipping from one to the next in the index's order (every queue: from the first pair on;
-- named queues: each one's priorities from the lowest up), and for each pair its first claimable
-- jobs by until, then insertion. A pair costs one probe, so the cost is logarithmic in the jobs
-- times the pairs (docs/decisions/queues-priorities.md). The walk goes forward only: the first
-- probe of a queue reads the head of its index range, the part the candidates' probe reads next,
-- so the dead entries completed jobs leave there until vacuum are read twice, not three times
-- (docs/bench/postgres.md, "Profile").
WITH RECURSIVE every_bucket(q, p) AS (
    SELECT f.queue, f.priority FROM (
        SELECT queue, priority FROM jobs WHERE done = 0 AND $2::text[] IS NULL
        ORDER BY queue, priority LIMIT 1) f
    UNION ALL
    SELECT x.queue, x.priority FROM every_bucket e CROSS JOIN LATERAL (
        SELECT queue, priority FROM jobs
        WHERE done = 0 AND (queue, priority) > (e.q, e.p)
        ORDER BY queue, priority LIMIT 1) x),
named_bucket(q, p) AS (
    SELECT n.q, x.priority FROM (SELECT DISTINCT unnest($2::text[])) AS n(q)
    CROSS JOIN LATERAL (
        SELECT priority FROM jobs WHERE done = 0 AND queue = n.q
        ORDER BY priority LIMIT 1) x
    UNION ALL
    SELECT b.q, x.priority FROM named_bucket b CROSS JOIN LATERAL (
        SELECT priority FROM jobs WHERE done = 0 AND queue = b.q AND priority > b.p
        ORDER BY priority LIMIT 1) x),
buckets(q, p) AS (
    SELECT q, p FROM every_bucket UNION ALL SELECT q, p FROM named_bucket),
candidates AS (
    SELECT c.id, c.priority, c.until, c.seq FROM buckets b CROSS JOIN LATERAL (
        SELECT o.id, o.priority, o.until, o.seq FROM jobs o
        WHERE o.done = 0 AND o.queue = b.q AND o.priority = b.p AND o.until <= $1
          AND o.fence < 9223372036854775807
        ORDER BY o.until, o.seq LIMIT $3) c)
