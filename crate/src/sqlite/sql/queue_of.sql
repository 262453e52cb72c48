-- ?1 job. The job's queue and priority, and the fence it started at (its attempts count from
-- there).
SELECT queue, priority, base FROM leasefence_order WHERE job = ?1
