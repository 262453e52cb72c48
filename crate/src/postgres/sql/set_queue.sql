-- $1 jobs, $2 queues, $3 priorities: the queue and priority of jobs this transaction has just
-- inserted (with the defaults).
UPDATE jobs j SET queue = i.queue, priority = i.priority
FROM unnest($1::text[], $2::text[], $3::int8[]) AS i(job, queue, priority)
WHERE j.id = i.job
