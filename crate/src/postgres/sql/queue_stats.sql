-- $1 now. stats_queue.sql for every queue at once, in one pass: each queue's jobs by state,
-- with dead jobs still among `done` (dead_per_queue.sql counts those apart).
SELECT o.queue,
       count(*) FILTER (WHERE j.done = 0 AND j.until <= $1),
       count(*) FILTER (WHERE j.done = 0 AND j.until > $1 AND j.owner IS NULL),
       count(*) FILTER (WHERE j.done = 0 AND j.until > $1 AND j.owner IS NOT NULL),
       count(*) FILTER (WHERE j.done = 1)
FROM leasefence_order o JOIN jobs j ON j.id = o.id
GROUP BY o.queue
ORDER BY o.queue
