-- $1 now. Every queue's jobs by state in one pass over `jobs`: queued, not yet due, of those
-- the leased ones, and closed. Closed jobs are done; the dead among them are counted apart
-- (dead_per_queue.sql); a job whose fence is exhausted is closed too.
SELECT queue,
       count(*) FILTER (WHERE done = 0 AND fence < 9223372036854775807 AND until <= $1),
       count(*) FILTER (WHERE done = 0 AND fence < 9223372036854775807 AND until > $1),
       count(*) FILTER (WHERE done = 0 AND fence < 9223372036854775807 AND until > $1
                        AND owner IS NOT NULL),
       count(*) FILTER (WHERE done <> 0 OR fence = 9223372036854775807)
FROM jobs
GROUP BY queue
