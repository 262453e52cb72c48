-- ?1 job. The job's queue and priority.
SELECT queue, priority FROM leasefence_order WHERE job = ?1
