-- ?1 now. Every queue's jobs by state in one pass over leasefence_order's copies (`until`,
-- `open`): queued, not yet due, of those the leased ones (`jobs` is read for these rows only, to
-- see whether an owner holds them), and closed. Closed jobs are done; the dead among them are
-- counted apart (dead_per_queue.sql); a job whose fence is exhausted is closed too.
SELECT queue,
       coalesce(sum(open = 1 AND until <= ?1), 0),
       coalesce(sum(open = 1 AND until > ?1), 0),
       coalesce(sum(CASE WHEN open = 1 AND until > ?1
                         THEN (SELECT owner IS NOT NULL FROM jobs WHERE id = job) END), 0),
       coalesce(sum(open = 0), 0)
FROM leasefence_order
GROUP BY queue
