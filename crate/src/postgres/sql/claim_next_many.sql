-- $1 owner, $2 until, $3 now, $4 how many, $5 queues (NULL: every queue), $6 how many candidates
-- of each (queue, priority) to consider (at least $4; more lets concurrent claimers pass over
-- each other's locked rows). claim_next is this statement with $4 = 1.
--
-- The first claimable jobs of those queues in the contract's order (priority, then until, then
-- insertion) that no other transaction is writing, locked (the MATERIALIZED list is computed
-- once, so each is locked once) and claimed in one statement. The outer WHERE repeats the
-- conditions, as claim_next's does; the rows are updated by key (= ANY of the list), so that
-- the plan looks each one up whatever the planner guesses of the list's length. Answers in
-- claim order, each with its payload and its insertion number (the order in which a claimer
-- may wait for rows).
-- The candidates, by index probes of leasefence_queued only: the queues (the named ones, or
-- every queue with an open job, found by skipping from one name to the next), for each its
-- priorities with an open job from the highest down, and for each (queue, priority) its first
-- claimable jobs by until, then insertion. A (queue, priority) pair costs one probe, so the cost
-- is logarithmic in the jobs times the pairs (docs/decisions/queues-priorities.md).
WITH RECURSIVE every_queue(q) AS (
    SELECT (SELECT queue FROM leasefence_order WHERE open AND $5::text[] IS NULL
            ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT queue FROM leasefence_order WHERE open AND queue > e.q ORDER BY queue LIMIT 1)
    FROM every_queue e WHERE e.q IS NOT NULL),
named(q) AS (
    SELECT q FROM every_queue WHERE q IS NOT NULL
    UNION SELECT unnest($5::text[])),
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
        WHERE o.open AND o.queue = b.q AND o.priority = b.p AND o.until <= $3
        ORDER BY o.until, o.seq LIMIT $6) c
    WHERE b.p IS NOT NULL)
,
picked AS MATERIALIZED (
    SELECT j.id, c.priority, c.until AS at, c.seq FROM candidates c JOIN jobs j ON j.id = c.id
    WHERE j.done = 0 AND j.until <= $3 AND j.fence < 9223372036854775807
    ORDER BY c.priority DESC, c.until, c.seq LIMIT $4
    FOR NO KEY UPDATE OF j SKIP LOCKED),
claimed AS (
    UPDATE jobs SET owner = $1, until = $2, fence = fence + 1
    WHERE id = ANY (ARRAY(SELECT id FROM picked))
    AND done = 0 AND until <= $3 AND fence < 9223372036854775807
    RETURNING id, fence)
SELECT c.id, c.fence, (SELECT payload FROM leasefence_payloads p WHERE p.job = c.id), k.seq
FROM claimed c JOIN picked k ON k.id = c.id
ORDER BY k.priority DESC, k.at, k.seq
