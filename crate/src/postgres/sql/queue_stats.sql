-- $1 now. Every queue's jobs by state in one pass over leasefence_order's copies (`until`,
-- `open`): queued, not yet due, of those the leased ones (`jobs` is read for these rows only, to
-- see whether an owner holds them), and closed. Closed jobs are done; the dead among them are
-- counted apart (dead_per_queue.sql); a job whose fence is exhausted is closed too.
SELECT o.queue,
       count(*) FILTER (WHERE o.open AND o.until <= $1),
       count(*) FILTER (WHERE o.open AND o.until > $1),
       count(*) FILTER (WHERE o.open AND o.until > $1
                        AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = o.id AND j.owner IS NOT NULL)),
       count(*) FILTER (WHERE NOT o.open)
FROM leasefence_order o
GROUP BY o.queue
