-- ?1 job. The fence the job started at (the fence floor when it was inserted): its attempts
-- count from there. No row (its triggers were dropped meanwhile): 0.
SELECT coalesce((SELECT base FROM leasefence_order WHERE job = ?1), 0)
