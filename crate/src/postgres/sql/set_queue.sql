-- $1 jobs, $2 queues, $3 priorities: the queue and priority of jobs this transaction has just
-- inserted (the trigger made their rows with the defaults).
UPDATE leasefence_order o SET queue = i.queue, priority = i.priority
FROM unnest($1::text[], $2::text[], $3::int8[]) AS i(job, queue, priority)
WHERE o.id = i.job
