-- $1 job. What inspect adds to the row: whether the job has a dead mark (inspect counts it only
-- while the row it has just read is done) and the payload, each one lookup by its key; the
-- failures are read by failures.sql in the same snapshot; and the queue, the priority and the
-- fence the job started at (its attempts count from there).
SELECT EXISTS (SELECT 1 FROM leasefence_dead WHERE job = $1),
       (SELECT payload FROM leasefence_payloads WHERE job = $1),
       (SELECT queue FROM jobs WHERE id = $1),
       (SELECT priority FROM jobs WHERE id = $1),
       (SELECT base FROM jobs WHERE id = $1)
